//! Watch fan-out: a store snapshot or replay plus its live events, as one gap-free stream, the
//! same over every backend.
//!
//! The protocol: subscribe to live events first, then read the starting point (the current state
//! from the cache, or the backend's events after a revision), then follow the live events,
//! dropping those at or below what was read. The feed moves the cache to each commit before
//! publishing it, and publishes it before the backend commits again, so every event is either in
//! what was read or in the subscription: no gap, no duplicate. A watcher that falls behind its
//! queue limits is cut off by the hub and ends with `Expired`, never resumed past the loss; the
//! client re-lists (kube: 410).
//!
//! A `Watch` is a plain value polled by the response body: no task is spawned per watch, so a
//! watch whose client is gone is simply dropped, unsubscribing as it goes.

use std::collections::VecDeque;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use crate::store::{Bytes, Event, EventType, ListRequest, Store, StoreError, Subscription};

/// Objects read per store call for a watch's initial state.
const START_PAGE: usize = 1000;

/// Where a watch starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// A synthetic `Added` for every matching object at one consistent revision, then changes.
    Current,
    /// Changes after the current revision only (`sendInitialEvents=false`).
    Now,
    /// Every change with a revision above this one (`Expired` if compacted), then live ones.
    After(u64),
}

/// One event as the client sees it, after the selector was applied.
#[derive(Debug, Clone)]
pub struct WatchEvent {
    pub kind: EventType,
    /// The revision of the change (for synthetic `Added`, the object's own revision).
    #[cfg_attr(not(test), allow(dead_code))] // the stream sends `object`, which carries it
    pub rev: u64,
    /// The object to send; its `metadata.resourceVersion` is `rev`.
    pub object: Arc<Value>,
    /// `object` as stored, when it is exactly that (not for a selector's synthetic delete):
    /// every watcher of an event sends the same bytes instead of encoding it again.
    pub value: Option<Bytes>,
}

/// What a watch yields.
#[derive(Debug, Clone)]
pub enum Item {
    Event(WatchEvent),
    /// Everything of the starting point has been yielded; it covers history up to this
    /// revision. Comes once, before any live event (the end of a watch-list's initial events).
    Synced(u64),
}

/// Why a watch ended early; either way the client must re-list (410).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchError {
    /// Reading the starting point failed, e.g. `Expired` for a compacted revision.
    Store(StoreError),
    /// Cut off for falling too far behind; every change up to `reached` was delivered.
    TooSlow { reached: u64 },
}

impl From<StoreError> for WatchError {
    fn from(e: StoreError) -> WatchError {
        WatchError::Store(e)
    }
}

/// Label and field selectors, judged on a whole object.
pub type Predicate = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

/// A watch of the keys under one collection prefix, with kube's selector transitions (B.5).
pub struct Watch {
    live: Subscription,
    /// Dropped once the starting point is read: a running watch must not keep the store open.
    store: Option<Store>,
    prefix: String,
    /// `None` selects every object, and a change is then judged without its old state.
    predicate: Option<Predicate>,
    /// Cleared once the starting point has been read.
    start: Option<Start>,
    /// Items read from the starting point, not yet handed out.
    backlog: VecDeque<Item>,
    /// Live events at or below this revision were already covered.
    seen: u64,
    done: bool,
}

impl Watch {
    /// Watches the keys under `prefix` from `start`, applying `predicate`.
    ///
    /// `prefix` is a collection prefix ending in `/`; a watch of one object passes its
    /// collection and matches the name in `predicate` (a full key would also match longer
    /// names). Subscribes at once, before the starting point is read, which is what makes the
    /// hand-over gap-free.
    pub fn new(store: &Store, prefix: String, start: Start, predicate: Option<Predicate>) -> Watch {
        Watch {
            live: store.watch_events(&prefix),
            store: Some(store.clone()),
            prefix,
            predicate,
            start: Some(start),
            backlog: VecDeque::new(),
            seen: 0,
            done: false,
        }
    }

    /// The next item; `None` once the watch has ended (after its one error, or when the store
    /// closed). The caller bounds it in time (timeoutSeconds, client gone).
    ///
    /// Cancel-safe: dropping the future loses nothing (a start read is redone, an event is
    /// taken from the subscription only by a call that returns it), so callers may race it
    /// against timers.
    pub async fn next(&mut self) -> Option<Result<Item, WatchError>> {
        loop {
            if let Some(item) = self.backlog.pop_front() {
                return Some(Ok(item));
            }
            if self.done {
                return None;
            }
            if let Some(start) = self.start {
                if let Err(e) = self.read_start(start).await {
                    return self.fail(e);
                }
                continue;
            }
            match self.live.recv().await {
                Ok(event) => {
                    if event.rev <= self.seen {
                        continue;
                    }
                    self.seen = event.rev;
                    if let Some(out) = self.transform(&event) {
                        return Some(Ok(Item::Event(out)));
                    }
                }
                // The hub cut this watcher off: events it had not seen are lost.
                Err(RecvError::Lagged(_)) => {
                    return self.fail(WatchError::TooSlow { reached: self.seen })
                }
                // The store is gone: nothing more will ever happen.
                Err(RecvError::Closed) => {
                    self.done = true;
                    return None;
                }
            }
        }
    }

    /// A revision this watch has fully delivered: every matching change up to it has been
    /// yielded. `None` until the starting point has been handed out, and after the end.
    pub fn progress(&self) -> Option<u64> {
        if self.start.is_some() || !self.backlog.is_empty() || self.done {
            return None;
        }
        // Events the subscription has not handed over yet are all newer than this.
        Some(self.seen.max(self.live.taken_through().unwrap_or(0)))
    }

    fn fail(&mut self, e: impl Into<WatchError>) -> Option<Result<Item, WatchError>> {
        self.done = true;
        Some(Err(e.into()))
    }

    /// Fills the backlog from the starting point and sets `seen` to the revision it covers.
    /// Changes nothing until the read is complete, so a cancelled read is simply redone.
    async fn read_start(&mut self, start: Start) -> Result<(), StoreError> {
        let Some(store) = self.store.clone() else {
            return Err(StoreError::Internal("watch started twice".into()));
        };
        let mut backlog = VecDeque::new();
        let seen = match start {
            Start::Current => {
                // In pages at the first page's revision, so a large collection never holds up
                // the backend (and the writers queued behind it) for one long read.
                let mut req = ListRequest {
                    prefix: self.prefix.clone(),
                    limit: Some(START_PAGE),
                    ..Default::default()
                };
                loop {
                    let page = store.list_raw(req.clone()).await?;
                    req.revision = Some(page.revision);
                    req.start_after = page.items.last().map(|(k, _)| k.clone());
                    for (_, value) in page.items {
                        let object: Value = serde_json::from_slice(&value)?;
                        if self.selects(&object) {
                            let rev = resource_version(&object)?;
                            let (object, value) = (Arc::new(object), Some(value));
                            let event = WatchEvent { kind: EventType::Added, rev, object, value };
                            backlog.push_back(Item::Event(event));
                        }
                    }
                    if !page.more {
                        break page.revision;
                    }
                }
            }
            Start::Now => store.current_revision().await?,
            Start::After(rev) => {
                let events = store.events_after(&self.prefix, rev).await?;
                for event in &events {
                    if let Some(out) = self.transform(event) {
                        backlog.push_back(Item::Event(out));
                    }
                }
                // Live events up to the last replayed one are either replayed or outside the
                // prefix; with nothing replayed (`rev` may be in the future), none up to `rev`
                // may be sent.
                events.last().map_or(rev, |e| e.rev)
            }
        };
        backlog.push_back(Item::Synced(seen));
        self.seen = seen;
        self.backlog = backlog;
        self.start = None;
        self.store = None;
        Ok(())
    }

    fn selects(&self, object: &Value) -> bool {
        self.predicate.as_ref().is_none_or(|p| p(object))
    }

    /// Applies the prefix and kube's selector transitions, judged on the old and new object.
    fn transform(&self, event: &Event) -> Option<WatchEvent> {
        if !event.key.starts_with(&self.prefix) {
            return None;
        }
        let matches = |v: &Value| self.selects(v);
        let stored = Some(event.value.clone());
        let (kind, object, value) = match event.kind {
            EventType::Added => {
                (matches(&event.object).then_some(EventType::Added)?, event.object.clone(), stored)
            }
            // The tombstone holds the last content, so judging it judges the old object.
            EventType::Deleted => (
                matches(&event.object).then_some(EventType::Deleted)?,
                event.object.clone(),
                stored,
            ),
            // Without a selector nothing enters or leaves: the old state is not decoded.
            EventType::Modified if self.predicate.is_none() => {
                (EventType::Modified, event.object.clone(), stored)
            }
            EventType::Modified => {
                let old = event.prev().is_some_and(matches);
                match (old, matches(&event.object)) {
                    (false, true) => (EventType::Added, event.object.clone(), stored),
                    (true, true) => (EventType::Modified, event.object.clone(), stored),
                    // The object left the selection: the client sees it deleted, with the
                    // previous content at the new revision.
                    (true, false) => {
                        let mut last = event.prev()?.clone();
                        if let Some(meta) = last.get_mut("metadata").and_then(Value::as_object_mut)
                        {
                            meta.insert("resourceVersion".into(), event.rev.to_string().into());
                        }
                        (EventType::Deleted, Arc::new(last), None)
                    }
                    (false, false) => return None,
                }
            }
        };
        Some(WatchEvent { kind, rev: event.rev, object, value })
    }
}

/// The revision an object was served with (its `metadata.resourceVersion`).
fn resource_version(object: &Value) -> Result<u64, StoreError> {
    object["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| StoreError::Internal("stored object without a resourceVersion".into()))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::store::{QueueLimits, StoreConfig};

    type Events = Watch;

    fn memory() -> Store {
        Store::open(StoreConfig::new(":memory:")).unwrap()
    }

    fn all() -> Option<Predicate> {
        None
    }

    fn labelled(v: &str) -> Value {
        json!({"metadata": {"name": "a", "labels": {"app": v}}})
    }

    fn start(s: &Store, prefix: &str, from: Start, p: Option<Predicate>) -> Events {
        Watch::new(s, prefix.into(), from, p)
    }

    /// The next event, skipping the end-of-start marker.
    async fn next(w: &mut Events) -> Option<Result<WatchEvent, WatchError>> {
        loop {
            let item = tokio::time::timeout(Duration::from_secs(10), w.next())
                .await
                .expect("watch stalled");
            match item {
                Some(Ok(Item::Synced(_))) => continue,
                Some(Ok(Item::Event(e))) => return Some(Ok(e)),
                Some(Err(e)) => return Some(Err(e)),
                None => return None,
            }
        }
    }

    /// Polls with nothing to deliver: the watch reads its starting point and waits.
    async fn idle(w: &mut Events) {
        assert!(tokio::time::timeout(Duration::from_millis(50), next(w)).await.is_err());
    }

    fn summary(e: &WatchEvent) -> (EventType, u64, String) {
        (e.kind, e.rev, e.object["metadata"]["resourceVersion"].as_str().unwrap().to_owned())
    }

    /// Writes under `g/p/ns/` (and noise under `g/p/ns0/`), ending with the key `g/p/ns/zz-end`.
    async fn churn(s: Store, ops: u64) {
        let mut revs: BTreeMap<String, u64> = BTreeMap::new();
        for i in 0..ops {
            let key = format!("g/p/ns/k{}", i % 7);
            let o = json!({"metadata": {"name": key}, "spec": {"i": i}});
            let rev = match revs.get(&key) {
                None => s.create(&key, o).await.unwrap(),
                Some(&r) if i % 5 == 0 => {
                    s.delete(&key, r).await.unwrap();
                    revs.remove(&key);
                    continue;
                }
                Some(&r) => s.update(&key, r, o).await.unwrap(),
            };
            revs.insert(key, rev["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap());
            if i % 3 == 0 {
                let noise = format!("g/p/ns0/n{i}");
                s.create(&noise, json!({"metadata": {"name": noise}})).await.unwrap();
            }
            tokio::task::yield_now().await;
        }
        s.create("g/p/ns/zz-end", json!({"metadata": {"name": "zz-end"}})).await.unwrap();
    }

    async fn until_end(w: &mut Events) -> Vec<WatchEvent> {
        let mut out = Vec::new();
        loop {
            let e = next(w).await.unwrap().unwrap();
            let end = e.object["metadata"]["name"] == "zz-end";
            out.push(e);
            if end {
                return out;
            }
        }
    }

    async fn wait_for_rev(s: &Store, rev: u64) {
        while s.current_revision().await.unwrap() < rev {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn current_then_live_has_no_gap_or_duplicate_under_concurrent_writes() {
        let s = memory();
        let writer = tokio::spawn(churn(s.clone(), 400));
        wait_for_rev(&s, 60).await;
        let mut w = start(&s, "g/p/ns/", Start::Current, all());
        // Writes between the subscription and the snapshot must not be sent twice.
        wait_for_rev(&s, 90).await;
        let events = until_end(&mut w).await;
        writer.await.unwrap();

        // Synthetic ADDED first (the snapshot), then live events.
        let synthetic = events.iter().take_while(|e| e.kind == EventType::Added).count();
        let newest_in_snapshot = events[..synthetic].iter().map(|e| e.rev).max().unwrap();
        let live: Vec<u64> = events[synthetic..].iter().map(|e| e.rev).collect();
        // The log after the newest snapshot object holds, first, deletes the snapshot already
        // reflects (absent keys), then exactly the live events: nothing missed, nothing twice.
        let log = s.events_after("g/p/ns/", newest_in_snapshot).await.unwrap();
        let covered = log.len() - live.len();
        assert_eq!(log[covered..].iter().map(|e| e.rev).collect::<Vec<_>>(), live);
        let in_snapshot =
            |k: &str| events[..synthetic].iter().any(|e| e.object["metadata"]["name"] == k);
        assert!(log[..covered]
            .iter()
            .all(|e| e.kind == EventType::Deleted && !in_snapshot(&e.key)));

        // Replaying the stream reproduces the final state exactly.
        let mut state = BTreeMap::new();
        for e in &events {
            let key = e.object["metadata"]["name"].as_str().unwrap().to_owned();
            assert!(!key.starts_with("g/p/ns0/"), "a key outside the prefix leaked");
            match e.kind {
                EventType::Added => assert!(state.insert(key, e.object.clone()).is_none()),
                EventType::Modified => assert!(state.insert(key, e.object.clone()).is_some()),
                EventType::Deleted => assert!(state.remove(&key).is_some()),
            }
        }
        let now = s.list(ListRequest { prefix: "g/p/ns/".into(), ..Default::default() }).await;
        let now: BTreeMap<_, _> = now
            .unwrap()
            .items
            .into_iter()
            .map(|(_, v)| (v["metadata"]["name"].as_str().unwrap().to_owned(), v))
            .collect();
        assert_eq!(state, now);
    }

    #[tokio::test]
    async fn after_a_revision_replays_then_follows_live() {
        let s = memory();
        let writer = tokio::spawn(churn(s.clone(), 400));
        wait_for_rev(&s, 80).await;
        let from = 40;
        let mut w = start(&s, "g/p/ns/", Start::After(from), all());
        wait_for_rev(&s, 110).await;
        let events = until_end(&mut w).await;
        writer.await.unwrap();
        let got: Vec<(EventType, u64)> = events.iter().map(|e| (e.kind, e.rev)).collect();
        let want: Vec<(EventType, u64)> = s
            .events_after("g/p/ns/", from)
            .await
            .unwrap()
            .iter()
            .map(|e| (e.kind, e.rev))
            .collect();
        assert_eq!(got, want);
        assert!(events.iter().all(|e| summary(e).2 == e.rev.to_string()));
    }

    #[tokio::test]
    async fn after_a_future_revision_skips_up_to_it_and_compacted_is_expired() {
        let s = memory();
        s.create("g/p/ns/a", labelled("x")).await.unwrap(); // 1
        let mut w = start(&s, "g/p/ns/", Start::After(3), all());
        s.update("g/p/ns/a", 1, labelled("y")).await.unwrap(); // 2
        s.update("g/p/ns/a", 2, labelled("z")).await.unwrap(); // 3
        s.update("g/p/ns/a", 3, labelled("w")).await.unwrap(); // 4
        let e = next(&mut w).await.unwrap().unwrap();
        assert_eq!(summary(&e), (EventType::Modified, 4, "4".into()));

        s.compact(3).await.unwrap();
        let mut old = start(&s, "g/p/ns/", Start::After(2), all());
        assert_eq!(
            next(&mut old).await.unwrap().unwrap_err(),
            WatchError::Store(StoreError::Expired { compacted: 3 })
        );
        assert!(next(&mut old).await.is_none());
    }

    #[tokio::test]
    async fn selector_transitions_follow_old_and_new_objects() {
        let s = memory();
        let web: Predicate = Arc::new(|v| v["metadata"]["labels"]["app"] == "web");
        let mut w = start(&s, "g/p/", Start::Current, Some(web.clone()));
        idle(&mut w).await; // reads the (empty) snapshot
        let k = "g/p/ns/a";
        s.create(k, labelled("db")).await.unwrap(); // 1: no, nothing
        s.update(k, 1, labelled("web")).await.unwrap(); // 2: no -> yes, ADDED
        s.update(k, 2, labelled("web")).await.unwrap(); // 3: yes -> yes, MODIFIED
        s.update(k, 3, labelled("db")).await.unwrap(); // 4: yes -> no, DELETED (old content)
        s.update(k, 4, labelled("cache")).await.unwrap(); // 5: no -> no, nothing
        s.update(k, 5, labelled("web")).await.unwrap(); // 6: ADDED
        s.delete(k, 6).await.unwrap(); // 7: DELETED
        s.create(k, labelled("db")).await.unwrap(); // 8: nothing
        s.delete(k, 8).await.unwrap(); // 9: nothing
        let end = json!({"metadata": {"name": "zz-end", "labels": {"app": "web"}}});
        s.create("g/p/ns/zz-end", end).await.unwrap(); // 10

        let want = [
            (EventType::Added, 2, "2".to_owned()),
            (EventType::Modified, 3, "3".into()),
            (EventType::Deleted, 4, "4".into()),
            (EventType::Added, 6, "6".into()),
            (EventType::Deleted, 7, "7".into()),
            (EventType::Added, 10, "10".into()),
        ];
        let live = until_end(&mut w).await;
        assert_eq!(live.iter().map(summary).collect::<Vec<_>>(), want);
        // The object that left the selection is reported with its previous content.
        assert_eq!(live[2].object["metadata"]["labels"]["app"], "web");
        assert_eq!(live[4].object["metadata"]["labels"]["app"], "web");

        // A replay applies the same transitions.
        let mut replay = start(&s, "g/p/", Start::After(0), Some(web.clone()));
        let replayed = until_end(&mut replay).await;
        assert_eq!(replayed.iter().map(summary).collect::<Vec<_>>(), want);

        // The synthetic ADDED of a snapshot is filtered too.
        s.create("g/p/ns/b", labelled("db")).await.unwrap();
        let mut snap = start(&s, "g/p/", Start::Current, Some(web));
        let e = next(&mut snap).await.unwrap().unwrap();
        assert_eq!(summary(&e), (EventType::Added, 10, "10".into()));
    }

    fn rv(v: &Value) -> u64 {
        v["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
    }

    #[tokio::test]
    async fn a_lagging_watcher_is_cut_off_and_others_go_on() {
        let mut cfg = StoreConfig::new(":memory:");
        cfg.watch_queue = QueueLimits { events: 16, bytes: 1 << 20 };
        let s = Store::open(cfg).unwrap();
        let mut slow = start(&s, "g/p/ns/", Start::Current, all());
        let mut fast = start(&s, "g/p/ns/", Start::Current, all());
        // Another collection's watcher never sees these writes queued, so it is never behind.
        let mut other = start(&s, "g/q/", Start::Current, all());
        idle(&mut slow).await;
        idle(&mut fast).await;
        idle(&mut other).await;
        assert_eq!(s.watch_stats().watchers, 3);
        let key = "g/p/ns/a";
        let o = json!({"metadata": {"name": "a"}});
        let mut rev = rv(&s.create(key, o.clone()).await.unwrap());
        for _ in 0..40 {
            // The fast watcher keeps up; the slow one never reads.
            assert_eq!(next(&mut fast).await.unwrap().unwrap().rev, rev);
            rev = rv(&s.update(key, rev, o.clone()).await.unwrap());
        }
        assert_eq!(next(&mut fast).await.unwrap().unwrap().rev, rev);
        // Cut off as soon as it overflowed, before it is ever polled again.
        let stats = s.watch_stats();
        assert_eq!((stats.watchers, stats.terminated), (2, 1));
        // It had seen nothing but the (empty) snapshot.
        let err = next(&mut slow).await.unwrap().unwrap_err();
        assert_eq!(err, WatchError::TooSlow { reached: 0 });
        assert!(next(&mut slow).await.is_none());
        assert_eq!(other.progress(), Some(rev));

        // A single event larger than the byte budget still reaches a watcher with nothing queued.
        let mut cfg = StoreConfig::new(":memory:");
        cfg.watch_queue = QueueLimits { events: 16, bytes: 100 };
        let s = Store::open(cfg).unwrap();
        let mut w = start(&s, "g/p/", Start::Current, all());
        idle(&mut w).await;
        s.create("g/p/ns/big", json!({"metadata": {"name": "big"}, "pad": "x".repeat(500)}))
            .await
            .unwrap();
        assert_eq!(next(&mut w).await.unwrap().unwrap().rev, 1);
    }

    #[tokio::test]
    async fn progress_covers_every_published_revision_once_idle() {
        let s = memory();
        s.create("g/p/ns/a", labelled("x")).await.unwrap(); // 1
        let mut w = start(&s, "g/p/ns/", Start::Current, all());
        assert_eq!(w.progress(), None, "nothing read yet");
        let first = w.next().await.unwrap().unwrap();
        assert!(matches!(first, Item::Event(WatchEvent { rev: 1, .. })));
        assert_eq!(w.progress(), None, "the start is not fully handed out");
        assert!(matches!(w.next().await.unwrap().unwrap(), Item::Synced(1)));
        assert_eq!(w.progress(), Some(1));
        // Writes elsewhere advance it without any event for this watch.
        s.create("g/q/ns/b", labelled("x")).await.unwrap(); // 2
        s.create("g/p/ns0/c", labelled("x")).await.unwrap(); // 3
        assert_eq!(w.progress(), Some(3));
        // A queued event holds it back until it is taken.
        s.update("g/p/ns/a", 1, labelled("y")).await.unwrap(); // 4
        s.create("g/q/ns/d", labelled("x")).await.unwrap(); // 5
        assert_eq!(w.progress(), Some(3));
        assert_eq!(next(&mut w).await.unwrap().unwrap().rev, 4);
        assert_eq!(w.progress(), Some(5));

        // A watch that only wants changes from now on starts at the current revision.
        let mut now = start(&s, "g/p/", Start::Now, all());
        assert!(matches!(now.next().await.unwrap().unwrap(), Item::Synced(5)));
        s.update("g/p/ns/a", 4, labelled("z")).await.unwrap(); // 6
        assert_eq!(next(&mut now).await.unwrap().unwrap().rev, 6);
    }

    #[tokio::test]
    async fn a_large_initial_state_is_one_snapshot() {
        let s = memory();
        let n = START_PAGE * 2 + 500;
        for i in 0..n {
            s.create(&format!("g/p/ns/k{i:05}"), labelled("x")).await.unwrap();
        }
        let mut w = start(&s, "g/p/ns/", Start::Current, all());
        // Writes race the paged read; none may show in the snapshot or be lost after it.
        let writer = {
            let s = s.clone();
            tokio::spawn(async move {
                for i in 0..200u64 {
                    let key = format!("g/p/ns/k{:05}", (i * 13) % n as u64);
                    let cur = s.get(&key).await.unwrap().unwrap();
                    s.update(&key, rv(&cur), labelled(&i.to_string())).await.unwrap();
                }
            })
        };
        let mut added = 0;
        let synced = loop {
            match w.next().await.unwrap().unwrap() {
                Item::Event(e) => {
                    assert_eq!(e.kind, EventType::Added);
                    added += 1;
                }
                Item::Synced(rev) => break rev,
            }
        };
        assert_eq!(added, n);
        writer.await.unwrap();
        let last = s.current_revision().await.unwrap();
        let mut live = Vec::new();
        while live.last().is_none_or(|&r| r < last) {
            live.push(next(&mut w).await.unwrap().unwrap().rev);
        }
        assert_eq!(live, (synced + 1..=last).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_cancelled_start_is_read_again() {
        let s = memory();
        s.create("g/p/ns/a", labelled("x")).await.unwrap();
        let mut w = start(&s, "g/p/", Start::Current, all());
        // Dropped (most likely) before the store answered: nothing may be lost.
        match futures_util::FutureExt::now_or_never(w.next()) {
            None => assert_eq!(next(&mut w).await.unwrap().unwrap().rev, 1),
            Some(first) => assert!(matches!(first, Some(Ok(Item::Event(e))) if e.rev == 1)),
        }
    }

    #[tokio::test]
    async fn dropped_watches_unsubscribe() {
        let s = memory();
        let watches: Vec<Watch> =
            (0..10).map(|_| start(&s, "g/p/", Start::Current, all())).collect();
        assert_eq!(s.watch_stats().watchers, 10);
        drop(watches);
        assert_eq!(s.watch_stats(), crate::store::HubStats::default());
    }

    #[tokio::test]
    async fn the_stream_ends_when_the_store_is_closed() {
        let s = memory();
        let mut w = start(&s, "g/p/", Start::After(0), all());
        idle(&mut w).await;
        // A started watch holds no handle, so it does not keep the database open.
        drop(s);
        assert!(next(&mut w).await.is_none());
    }
}
