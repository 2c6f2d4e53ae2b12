//! The current state in memory, as kube-apiserver's watch cache: every live key with its
//! revision, create revision and stored JSON bytes, at exactly the committed revision.
//!
//! Only the feed writes it (on the backend's committing thread), right after each commit and
//! before that commit's events are published or its writers answered, under one lock with the
//! revision. So a reader sees either
//! the state before a commit or after it, never a torn one; a write's answer implies the cache
//! holds it (read-your-writes for consistent reads); and a watch that subscribes and then reads
//! the cache gets every event after what it read (see `watch`). Reads at any other revision go to
//! the backend.
//!
//! Values stay encoded (`Bytes`, shared with the pages that list them): memory is the objects'
//! JSON plus a key and four words each, and a list copies nothing. An entry keeps its decoded
//! form once something asks for it (`Entry::object`), until its key's next write: the
//! controllers and the simulation read the same few objects many times per revision.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard};

use bytes::Bytes;
use serde_json::Value;

use super::{Decoded, ListRequest, RawList};

/// One live object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub rev: u64,
    pub create_rev: u64,
    /// The object's JSON as served: as persisted, with its resourceVersion set (`served`).
    pub value: Bytes,
    decoded: Decoded,
}

impl Entry {
    pub fn new(rev: u64, create_rev: u64, value: Bytes) -> Entry {
        Entry { rev, create_rev, value, decoded: Decoded::default() }
    }

    /// An entry whose object is already decoded (the writer's): `object` is what `value` holds,
    /// taken by a reader while its event still holds it.
    pub fn decoded(rev: u64, create_rev: u64, value: Bytes, object: &Arc<Value>) -> Entry {
        Entry { rev, create_rev, value, decoded: Decoded::hinted(object) }
    }

    /// The object, decoded once for every copy of this entry.
    pub fn object(&self) -> Result<Arc<Value>, serde_json::Error> {
        self.decoded.object(&self.value)
    }
}

#[derive(Default)]
pub struct Cache {
    state: RwLock<State>,
    /// Recent `count_after` answers: a paged list asks once per page, each time after a later
    /// key at the same revision, so the next answer is the last one less the keys in between
    /// (one page), instead of a walk to the end of the collection on every page.
    counts: Mutex<Vec<Counted>>,
}

/// `count_after(prefix, after, rev) == count`.
struct Counted {
    prefix: Box<str>,
    after: Box<str>,
    rev: u64,
    count: u64,
}

/// How many `count_after` answers are remembered (one per concurrent paged list).
const REMEMBERED_COUNTS: usize = 32;

#[derive(Default)]
struct State {
    /// The revision the state is at: the store's committed revision.
    rev: u64,
    objects: BTreeMap<Box<str>, Entry>,
}

impl Cache {
    fn read(&self) -> RwLockReadGuard<'_, State> {
        // Writers never panic half-way through an update (plain map inserts), so a poisoned
        // lock still guards a whole state.
        self.state.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn revision(&self) -> u64 {
        self.read().rev
    }

    /// The live object at `key`.
    pub fn get(&self, key: &str) -> Option<Entry> {
        self.read().objects.get(key).cloned()
    }

    /// One page of the current state, or `None` when the request is for another revision (the
    /// backend answers it). Same semantics as `Backend::range`.
    pub fn list(&self, req: &ListRequest) -> Option<RawList> {
        let st = self.read();
        if req.revision.is_some_and(|r| r != st.rev) {
            return None;
        }
        let want = req.limit.filter(|&n| n > 0).unwrap_or(usize::MAX);
        let (mut items, mut decoded) = (Vec::new(), Vec::new());
        let mut more = false;
        for (key, entry) in range(&st.objects, &req.prefix, req.start_after.as_deref()) {
            if items.len() == want {
                more = true;
                break;
            }
            items.push((key.to_string(), entry.value.clone()));
            decoded.push(entry.decoded.clone());
        }
        Some(RawList { revision: st.rev, items, more, decoded })
    }

    /// Every live key under `prefix` with its entry, in key order, at one revision.
    pub fn entries(&self, prefix: &str) -> Vec<(String, Entry)> {
        let st = self.read();
        range(&st.objects, prefix, None).map(|(k, e)| (k.to_string(), e.clone())).collect()
    }

    /// How many objects under `prefix` follow `after`, or `None` when `rev` is not the cached
    /// revision.
    pub fn count_after(&self, prefix: &str, after: &str, rev: u64) -> Option<u64> {
        let st = self.read();
        if st.rev != rev {
            return None;
        }
        let mut counts = self.counts.lock().unwrap_or_else(|e| e.into_inner());
        counts.retain(|c| c.rev == rev);
        let known = counts
            .iter()
            .filter(|c| &*c.prefix == prefix && &*c.after <= after)
            .max_by(|a, b| a.after.cmp(&b.after));
        let count = match known {
            Some(c) => {
                let between = range(&st.objects, prefix, Some(&c.after))
                    .take_while(|(k, _)| &***k <= after)
                    .count() as u64;
                c.count - between
            }
            None => range(&st.objects, prefix, Some(after)).count() as u64,
        };
        if counts.len() >= REMEMBERED_COUNTS {
            counts.remove(0);
        }
        counts.push(Counted { prefix: prefix.into(), after: after.into(), rev, count });
        Some(count)
    }

    /// Moves the state to `rev` by the committed changes (`None`: the key was deleted), in
    /// order, and answers each key's entry before its change (what the change replaced).
    pub fn apply<'a>(
        &self,
        rev: u64,
        changes: impl IntoIterator<Item = (&'a str, Option<Entry>)>,
    ) -> Vec<Option<Entry>> {
        let changes = changes.into_iter();
        let mut replaced = Vec::with_capacity(changes.size_hint().0);
        let mut st = self.state.write().unwrap_or_else(|e| e.into_inner());
        let objects = &mut st.objects;
        for (key, entry) in changes {
            replaced.push(match entry {
                Some(entry) => match objects.get_mut(key) {
                    // An update keeps the map's key: no new key is made for it.
                    Some(live) => Some(std::mem::replace(live, entry)),
                    None => objects.insert(key.into(), entry),
                },
                None => objects.remove(key),
            });
        }
        st.rev = rev;
        replaced
    }

    /// Replaces the whole state: what a backend holds live at `rev` when it opens.
    pub fn reset(&self, rev: u64, objects: BTreeMap<Box<str>, Entry>) {
        *self.state.write().unwrap_or_else(|e| e.into_inner()) = State { rev, objects };
    }
}

/// The keys under `prefix` after `after` (exclusive), in bytewise order.
fn range<'a>(
    objects: &'a BTreeMap<Box<str>, Entry>,
    prefix: &'a str,
    after: Option<&'a str>,
) -> impl Iterator<Item = (&'a Box<str>, &'a Entry)> + 'a {
    let lower = match after {
        Some(after) if after >= prefix => Bound::Excluded(after),
        _ => Bound::Included(prefix),
    };
    objects
        .range::<str, _>((lower, Bound::Unbounded))
        .take_while(move |(k, _)| k.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(rev: u64) -> Option<Entry> {
        Some(Entry::new(rev, rev, Bytes::from(format!("{{\"r\":{rev}}}"))))
    }

    fn keys(l: &RawList) -> Vec<&str> {
        l.items.iter().map(|(k, _)| k.as_str()).collect()
    }

    #[test]
    fn an_entry_is_decoded_once_for_all_its_copies_and_afresh_after_a_write() {
        let cache = Cache::default();
        cache.apply(1, [("k", entry(1))]);
        let (a, b) = (cache.get("k").unwrap(), cache.get("k").unwrap());
        let first = a.object().unwrap();
        assert!(Arc::ptr_eq(&first, &b.object().unwrap()));
        assert_eq!(*first, serde_json::json!({"r": 1}));
        cache.apply(2, [("k", entry(2))]);
        let after = cache.get("k").unwrap().object().unwrap();
        assert_eq!(*after, serde_json::json!({"r": 2}));
        assert_eq!(*first, serde_json::json!({"r": 1}), "a reader keeps what it read");
    }

    #[test]
    fn pages_by_prefix_and_key_at_its_revision_only() {
        let c = Cache::default();
        c.apply(3, [("g/p/a/x", entry(1)), ("g/p/b/y", entry(2)), ("g/p0", entry(3))]);
        c.apply(4, [("g/p/c/z", entry(4)), ("g/p0", None)]);
        let req = |prefix: &str, after: Option<&str>, limit, revision| ListRequest {
            prefix: prefix.into(),
            revision,
            start_after: after.map(Into::into),
            limit,
        };
        let all = c.list(&req("g/p/", None, None, None)).unwrap();
        assert_eq!(
            (all.revision, keys(&all), all.more),
            (4, vec!["g/p/a/x", "g/p/b/y", "g/p/c/z"], false)
        );
        let first = c.list(&req("g/p/", None, Some(2), Some(4))).unwrap();
        assert_eq!((keys(&first), first.more), (vec!["g/p/a/x", "g/p/b/y"], true));
        let next = c.list(&req("g/p/", Some("g/p/b/y"), Some(2), Some(4))).unwrap();
        assert_eq!((keys(&next), next.more), (vec!["g/p/c/z"], false));
        assert_eq!(keys(&c.list(&req("g/p/b/", None, Some(0), None)).unwrap()), ["g/p/b/y"]);
        // Another revision is the backend's to answer.
        assert!(c.list(&req("g/p/", None, None, Some(3))).is_none());
        assert_eq!(c.count_after("g/p/", "g/p/a/x", 4), Some(2));
        assert_eq!(c.count_after("g/p/", "", 4), Some(3));
        assert_eq!(c.count_after("g/p/", "g/p/a/x", 3), None);
        assert_eq!(c.get("g/p0"), None);
        assert_eq!(c.get("g/p/c/z"), entry(4));
    }

    #[test]
    fn counts_after_consecutive_keys_match_a_full_walk() {
        let c = Cache::default();
        let keys: Vec<String> = (0..50).map(|i| format!("g/p/ns/o{i:03}")).collect();
        c.apply(1, keys.iter().map(|k| (k.as_str(), entry(1))).chain([("g/q/x", entry(1))]));
        for page in keys.chunks(7) {
            let last = page.last().unwrap();
            let want = keys.iter().filter(|k| k.as_str() > last.as_str()).count() as u64;
            assert_eq!(c.count_after("g/p/", last, 1), Some(want));
        }
        // Back to an earlier key, another prefix, and a new revision: each still exact.
        assert_eq!(c.count_after("g/p/", &keys[3], 1), Some(46));
        assert_eq!(c.count_after("g/", &keys[48], 1), Some(2));
        c.apply(2, [("g/p/ns/o000", None)]);
        assert_eq!(c.count_after("g/p/", "", 2), Some(49));
    }
}
