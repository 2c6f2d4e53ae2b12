//! Reset: the store put back to a state it held before (a server's fixtures), at a new revision,
//! with older history compacted, as a harness does between tests.
//!
//! `Store::reset` runs it over what is planned here. It needs nothing of a backend beyond the
//! contract: the difference between the live state and
//! the one to restore is written as ordinary compare-and-swap writes (handed over together, so
//! SQLite commits them in one group commit; etcd takes one transaction each), repeated while
//! another writer races it, then history is compacted to the revision reached, so a list or a
//! watch from any older resourceVersion is 410 Expired. Before the first write and after the
//! compaction the hub restarts as it does when the cache relists past a compaction (kube's
//! cacher `terminateAllWatchers`, AS pkg/storage/cacher/cacher.go `startCaching`): every open
//! watch ends after what it was sent before the reset, clients re-watch from their last
//! resourceVersion, get 410 and relist; the controllers and the simulation are told of the
//! loss and re-scan.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use bytes::Bytes;
use serde_json::Value;

use super::cache::Entry;
use super::{served, StoreError};

/// A state to restore: every live key's served bytes, shared with the cache's entries, decoded
/// only where a reset finds the key changed. Every start saves its state (the fixtures'), so
/// saving must not decode: with 100 000 stored objects, keeping each decoded and a copy of it
/// cost 7 GB and 5 s of start-up.
#[derive(Debug, Default)]
pub struct Saved {
    objects: BTreeMap<String, Bytes>,
    /// Per key, the revision whose state is known to equal the saved one (saved there, or put
    /// back there by a reset): a key still at it needs no comparison, so a reset of a few
    /// hundred unchanged objects reads no JSON.
    known: Mutex<HashMap<String, u64>>,
}

/// The same keys holding the same objects as persisted (their resourceVersions aside).
impl PartialEq for Saved {
    fn eq(&self, other: &Saved) -> bool {
        self.objects.len() == other.objects.len()
            && self
                .objects
                .iter()
                .zip(&other.objects)
                .all(|((k, a), (l, b))| k == l && (a == b || decoded(a).ok() == decoded(b).ok()))
    }
}

impl Saved {
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

/// What one reset did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResetStats {
    /// The revision the store was put back at; history below it is compacted.
    pub revision: u64,
    pub created: usize,
    pub updated: usize,
    pub deleted: usize,
}

/// Passes over the difference before a reset gives up on a writer that keeps racing it.
pub const PASSES: usize = 16;

/// One write of a reset, on the key's live revision.
#[derive(Debug)]
pub enum Step {
    Delete { key: String, rev: u64 },
    Update { key: String, rev: u64, value: Value },
    Create { key: String, value: Value },
}

impl Saved {
    /// The live `entries`, to reset to later.
    pub fn of(entries: Vec<(String, Entry)>) -> Result<Saved, StoreError> {
        let (mut objects, mut known) = (BTreeMap::new(), HashMap::new());
        for (key, entry) in entries {
            objects.insert(key.clone(), entry.value.clone());
            known.insert(key, entry.rev);
        }
        Ok(Saved { objects, known: Mutex::new(known) })
    }

    /// The revisions known to hold the saved state, for one reset to use and give back.
    pub fn known(&self) -> HashMap<String, u64> {
        self.known.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn set_known(&self, known: HashMap<String, u64>) {
        *self.known.lock().unwrap_or_else(|e| e.into_inner()) = known;
    }

    /// The writes that take `live` back to the saved state, counted into `stats`; a key found
    /// equal is noted in `known`.
    pub fn plan(
        &self,
        live: &[(String, Entry)],
        known: &mut HashMap<String, u64>,
        stats: &mut ResetStats,
    ) -> Result<Vec<Step>, StoreError> {
        let mut steps = Vec::new();
        for (key, entry) in live {
            match self.objects.get(key) {
                None => {
                    stats.deleted += 1;
                    steps.push(Step::Delete { key: key.clone(), rev: entry.rev });
                }
                Some(_) if known.get(key) == Some(&entry.rev) => {}
                Some(want) => {
                    let want = decoded(want)?;
                    if persisted(&*entry.object()?)? == want {
                        known.insert(key.clone(), entry.rev);
                    } else {
                        stats.updated += 1;
                        steps.push(Step::Update { key: key.clone(), rev: entry.rev, value: want });
                    }
                }
            }
        }
        let live: BTreeSet<&str> = live.iter().map(|(k, _)| k.as_str()).collect();
        for (key, want) in &self.objects {
            if !live.contains(key.as_str()) {
                stats.created += 1;
                steps.push(Step::Create { key: key.clone(), value: decoded(want)? });
            }
        }
        Ok(steps)
    }
}

/// Saved served bytes as the object persisted.
fn decoded(bytes: &Bytes) -> Result<Value, StoreError> {
    let mut obj: Value = serde_json::from_slice(bytes)?;
    served::clear(&mut obj)?;
    Ok(obj)
}

/// An object as persisted: without its resourceVersion.
fn persisted(obj: &Value) -> Result<Value, StoreError> {
    let mut obj = obj.clone();
    served::clear(&mut obj)?;
    Ok(obj)
}
