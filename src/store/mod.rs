//! The object store: the shared layer over a storage backend; the only module that knows one.
//!
//! Keys are `"<group>/<plural>/<namespace>/<name>"` (empty namespace for cluster kinds); values are
//! JSON objects. Every write takes a new, greater revision (SQLite's are gap-free, from 1), which
//! readers see as the object's `metadata.resourceVersion`. The bytes a backend persists carry no
//! resourceVersion (a distributed engine assigns the revision at commit); it is set once per
//! commit into the bytes the cache keeps and events carry (`served`), so every get, list and
//! watch sends cached bytes as they are.
//!
//! Layout: `Store` is the async handle, shared by every backend: `cache` (the current state in
//! memory, serving reads at the current revision without the backend), `hub` (the fan-out of
//! committed events), the revision waiters, and an `Arc<dyn Backend>`. `backend` is the storage
//! contract, `feed` where a backend reports its commits, `sqlite` the SQLite revision log,
//! `etcd` the etcd backend, `records` the lists, events and written objects they all pass
//! around (re-exported here), `retention` the history retention policy, `contract_tests` the
//! suite every backend passes. The store knows nothing of HTTP: callers map `StoreError` to a
//! `Status` once.

pub mod backend;
mod cache;
#[cfg(test)]
mod contract_tests;
mod error;
pub mod etcd;
mod feed;
mod hub;
mod records;
mod reset;
mod retention;
mod served;
pub mod sqlite;
pub mod watch;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

pub use bytes::Bytes;
use serde_json::Value;
use tokio::sync::watch as revisions;

use backend::{Backend, Change, Feed, Op, Ticket, Write};
pub use backend::{BackendFacts, Fence, MetricSample};
use cache::Cache;
pub use cache::Entry;
pub use error::StoreError;
use etcd::EtcdBackend;
pub use etcd::EtcdConfig;
use hub::{Hub, Lag};
pub use hub::{HubStats, QueueLimits, Subscription};
pub use records::{Decoded, Event, EventType, ListRequest, ListResult, Prev, RawList, Written};
use reset::Step;
pub use reset::{ResetStats, Saved};
pub use retention::RetentionConfig;
/// The scanner served bytes are spliced with, for the HTTP layer's splices into the same bytes.
pub use served::value_end as json_value_end;
use sqlite::SqliteBackend;

/// Where the data lives (a SQLite file, or etcd), how long history is kept, and how far a
/// watcher may fall behind.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// A file path, or `":memory:"` for a private in-memory database with the same semantics.
    pub path: String,
    /// Serve from etcd instead of the SQLite file (`--etcd-servers`).
    pub etcd: Option<EtcdConfig>,
    pub retention: RetentionConfig,
    /// Per subscriber: a watcher whose unread events exceed this is ended (410).
    pub watch_queue: QueueLimits,
}

impl StoreConfig {
    /// The defaults of A.6: 5 minutes and at least 1000 revisions of history.
    pub fn new(path: impl Into<String>) -> StoreConfig {
        StoreConfig {
            path: path.into(),
            etcd: None,
            retention: RetentionConfig::default(),
            watch_queue: QueueLimits::default(),
        }
    }
}

/// Cheap clone handle to the store: its cache, hub and backend.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
    /// Carried by every write through this handle (`fenced`).
    fence: Option<Fence>,
}

struct Inner {
    /// Dropped first (fields drop in order), which stops the backend; its feed's end then closes
    /// the hub, ending every watch.
    backend: Arc<dyn Backend>,
    hub: Arc<Hub>,
    cache: Arc<Cache>,
    /// The cache's revision, for waiters; the feed sends it after each commit.
    revision: revisions::Receiver<u64>,
}

/// Committed writes and the transactions that committed them: their ratio is the group commit's
/// batch size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    pub commits: u64,
    pub writes: u64,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").field("backend", &self.inner.backend.facts().name).finish()
    }
}

impl Store {
    /// Opens (or creates) the SQLite database `cfg.path` and starts its thread, or with
    /// `cfg.etcd` connects to etcd and loads its state; blocks until it is ready.
    ///
    /// History is not compacted automatically until `start_compaction` is called, so a server
    /// can start answering before the first compaction runs.
    pub fn open(cfg: StoreConfig) -> Result<Store, StoreError> {
        Store::with_backend(cfg.watch_queue, |feed| match cfg.etcd {
            Some(etcd) => Ok(Arc::new(EtcdBackend::open(etcd, cfg.retention, feed)?)),
            None => Ok(Arc::new(SqliteBackend::open(&cfg.path, cfg.retention, feed)?)),
        })
    }

    /// A store over the backend `open` makes from the feed it is given. `open` must load the
    /// backend's live state into the feed (`Feed::load`) before it returns.
    pub fn with_backend(
        watch_queue: QueueLimits,
        open: impl FnOnce(Feed) -> Result<Arc<dyn Backend>, StoreError>,
    ) -> Result<Store, StoreError> {
        let hub = Arc::new(Hub::new(watch_queue));
        let cache = Arc::new(Cache::default());
        let (sender, revision) = revisions::channel(0);
        let backend = open(Feed::new(cache.clone(), hub.clone(), sender))?;
        Ok(Store { inner: Arc::new(Inner { backend, hub, cache, revision }), fence: None })
    }

    /// Whether this process leads the servers of the data, with the fence that proves it
    /// (`Backend::leadership`); the first call enters the election.
    pub fn leadership(&self) -> revisions::Receiver<Option<Fence>> {
        self.inner.backend.leadership()
    }

    /// This store with every write fenced by `fence`: they fail with `NotLeader` once the
    /// leadership it proves is lost, so a deposed leader's work cannot write.
    pub fn fenced(&self, fence: Fence) -> Store {
        Store { inner: self.inner.clone(), fence: Some(fence) }
    }

    /// Lets the backend compact history on its own from now on, by its retention policy (A.6).
    pub fn start_compaction(&self) {
        self.inner.backend.start_compaction();
    }

    /// What deployments must know about the backend, e.g. whether singletons need leader
    /// election.
    pub fn facts(&self) -> BackendFacts {
        self.inner.backend.facts()
    }

    /// The backend's own metric samples (SQLite: its group commit's counters).
    pub fn metrics(&self) -> Vec<MetricSample> {
        self.inner.backend.metrics()
    }

    /// The current state of `key`, from memory.
    pub async fn get(&self, key: &str) -> Result<Option<Arc<Value>>, StoreError> {
        match self.inner.cache.get(key) {
            Some(entry) => Ok(Some(entry.object()?)),
            None => Ok(None),
        }
    }

    /// The current state of `key` as served, from memory: a consistent read.
    pub fn get_raw(&self, key: &str) -> Option<Entry> {
        self.inner.cache.get(key)
    }

    /// Waits until the cache holds every write acknowledged before the call, by this process or
    /// another serving the same data (a consistent read); at once when the backend's facts say
    /// no commit comes from elsewhere. Answers the cache's revision then. The caller bounds it
    /// in time (kube: 3 s, then 504).
    pub async fn sync(&self) -> Result<u64, StoreError> {
        if self.inner.backend.facts().external_commits {
            self.inner.backend.barrier().await?;
        }
        Ok(self.inner.cache.revision())
    }

    /// Whether the feed is up and caught up with the data, for a readiness check: `None` when
    /// the backend has no feed from elsewhere to check.
    pub async fn feed_ready(&self) -> Option<Result<(), StoreError>> {
        let facts = self.inner.backend.facts();
        if !facts.external_commits {
            return None;
        }
        Some(self.inner.backend.feed_ready().await)
    }

    /// The state of `key` at revision `rev` as served then; `Expired` and `FutureRevision` as
    /// for `list`. The current revision is read from memory.
    pub async fn get_at(&self, key: &str, rev: u64) -> Result<Option<Entry>, StoreError> {
        if rev == self.inner.cache.revision() {
            return Ok(self.inner.cache.get(key));
        }
        let kv = self.inner.backend.get(key, Some(rev)).await?;
        Ok(kv.map(|kv| Entry::new(kv.rev, kv.create_rev, served::serve(&kv.value, kv.rev))))
    }

    /// One page of a collection, at the current or a past revision (keyset paging, never OFFSET).
    ///
    /// A past revision below the compacted one is `Expired`; one above the current is
    /// `FutureRevision`.
    pub async fn list(&self, req: ListRequest) -> Result<ListResult, StoreError> {
        let raw = self.list_raw(req).await?;
        let items = raw
            .items
            .into_iter()
            .zip(&raw.decoded)
            .map(|((key, value), cell)| Ok((key, cell.object(&value)?)))
            .collect::<Result<_, StoreError>>()?;
        Ok(ListResult { revision: raw.revision, items, more: raw.more })
    }

    /// `list` with the objects as served. The current revision is read from memory; any other
    /// from the backend.
    pub async fn list_raw(&self, req: ListRequest) -> Result<RawList, StoreError> {
        if let Some(page) = self.inner.cache.list(&req) {
            return Ok(page);
        }
        let range = self.inner.backend.range(req).await?;
        let items: Vec<_> = range
            .items
            .into_iter()
            .map(|kv| {
                let value = served::serve(&kv.value, kv.rev);
                (kv.key, value)
            })
            .collect();
        // A cell each: a clone of one would share it.
        let decoded = items.iter().map(|_| Decoded::default()).collect();
        Ok(RawList { revision: range.revision, items, more: range.more, decoded })
    }

    /// How many objects under `prefix` follow the key `after` at revision `rev`: what remains
    /// of a list after a page ending at `after`. `Expired` and `FutureRevision` as for `list`.
    pub async fn count_after(
        &self,
        prefix: &str,
        after: &str,
        rev: u64,
    ) -> Result<u64, StoreError> {
        if let Some(n) = self.inner.cache.count_after(prefix, after, rev) {
            return Ok(n);
        }
        self.inner.backend.count_after(prefix, after, rev).await
    }

    /// Stores a new object; `AlreadyExists` if the key is live.
    pub async fn create(&self, key: &str, obj: Value) -> Result<Written, StoreError> {
        self.write(key, Some(obj), |value| Op::Create { value }).await
    }

    /// Replaces the object if its revision is still `expected_rev` (`NotFound`, `Conflict`).
    pub async fn update(
        &self,
        key: &str,
        expected_rev: u64,
        obj: Value,
    ) -> Result<Written, StoreError> {
        self.write(key, Some(obj), |value| Op::Update { expected: expected_rev, value }).await
    }

    /// Deletes the object if its revision is still `expected_rev`; answers its last state with
    /// the delete's revision as `resourceVersion`.
    pub async fn delete(&self, key: &str, expected_rev: u64) -> Result<Written, StoreError> {
        self.write(key, None, |_| Op::Delete { expected: expected_rev }).await
    }

    /// Hands one write to the backend and awaits its answer. The object is encoded here, on the
    /// caller's thread, as persisted: without a resourceVersion, whatever the caller's held.
    async fn write(
        &self,
        key: &str,
        obj: Option<Value>,
        op: impl FnOnce(Bytes) -> Op,
    ) -> Result<Written, StoreError> {
        let (value, obj) = match obj {
            Some(mut obj) => {
                served::clear(&mut obj)?;
                (Bytes::from(serde_json::to_vec(&obj)?), Some(obj))
            }
            None => (Bytes::new(), None),
        };
        let (ticket, answer) = Ticket::new(obj);
        let fence = self.fence.clone();
        self.inner.backend.append(Write { key: key.to_owned(), op: op(value), ticket, fence });
        answer.await.map_err(|_| stopped())?
    }

    /// The live events that pass `filter` from now on, in revision order, for internal
    /// consumers that re-scan when they fall behind (`recv` reports `Lagged` once, then
    /// delivery resumes). `filter` runs on the backend's committing thread as each commit is
    /// published: keep it cheap.
    pub fn subscribe(
        &self,
        filter: impl Fn(&Event) -> bool + Send + Sync + 'static,
    ) -> Subscription {
        self.inner.hub.subscribe("", Box::new(filter), Lag::Resume)
    }

    /// Live events under `prefix` from now on, in revision order, for a watch: a subscriber
    /// that falls behind its queue limits is cut off for good (see `watch` for the protocol).
    pub fn watch_events(&self, prefix: &str) -> Subscription {
        self.inner.hub.subscribe(prefix, Box::new(|_| true), Lag::End)
    }

    /// Open watches and watches ended for being too slow.
    pub fn watch_stats(&self) -> HubStats {
        self.inner.hub.stats()
    }

    /// Writes committed and the transactions that committed them, since start: the backend's
    /// group-commit counters (`sqlite::COMMITS_TOTAL`, `sqlite::WRITES_TOTAL`), zero for a
    /// backend that reports none.
    pub fn write_stats(&self) -> WriteStats {
        let mut stats = WriteStats::default();
        for sample in self.inner.backend.metrics() {
            match sample.name {
                sqlite::COMMITS_TOTAL => stats.commits = sample.value,
                sqlite::WRITES_TOTAL => stats.writes = sample.value,
                _ => {}
            }
        }
        stats
    }

    /// The newest revision written, as the cache holds it.
    pub async fn current_revision(&self) -> Result<u64, StoreError> {
        Ok(self.inner.cache.revision())
    }

    /// History at or below this revision is gone.
    pub async fn compacted_revision(&self) -> Result<u64, StoreError> {
        self.inner.backend.compacted_revision().await
    }

    /// Resolves once the current revision (the cache's) is at least `rev`, with that revision:
    /// woken by the commit that reaches it, never polling. The caller bounds it in time (kube
    /// answers a too-new resourceVersion with 504 after 3 s). `Unavailable` if the backend
    /// stops first.
    pub fn wait_for_revision(
        &self,
        rev: u64,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send + 'static {
        let mut revision = self.inner.revision.clone();
        async move {
            let reached =
                revision.wait_for(|&current| current >= rev).await.map_err(|_| stopped())?;
            Ok(*reached)
        }
    }

    /// Finishes the queued writes, checkpoints and stops the backend (the end of a shutdown).
    pub async fn close(&self) -> Result<(), StoreError> {
        self.inner.backend.close().await
    }

    /// A real, durable write through the backend; the caller applies its own deadline.
    pub async fn probe(&self) -> Result<(), StoreError> {
        self.inner.backend.probe().await
    }

    /// 32 random bytes, made on first use and kept with the data across restarts.
    pub async fn secret(&self, name: &str) -> Result<Vec<u8>, StoreError> {
        self.inner.backend.secret(name).await
    }

    /// Every change under `prefix` with a revision above `rev`, in revision order: the replay
    /// for a watch from a revision. `Expired` if `rev` is below the compacted revision.
    pub async fn events_after(
        &self,
        prefix: &str,
        rev: u64,
    ) -> Result<Vec<Arc<Event>>, StoreError> {
        // Nothing follows the current revision (and it is never compacted).
        if rev == self.inner.cache.revision() {
            return Ok(Vec::new());
        }
        let changes = self.inner.backend.events_after(prefix, rev).await?;
        changes.into_iter().map(|change| event(change).map(Arc::new)).collect()
    }

    /// The live state, to `reset` to later.
    pub fn save(&self) -> Result<Saved, StoreError> {
        Saved::of(self.inner.cache.entries(""))
    }

    /// Puts the store back to `saved` at a new revision: keys not in it deleted, the others
    /// written back where they differ; then history up to that revision compacted and every
    /// watch ended (`reset`).
    pub async fn reset(&self, saved: &Saved) -> Result<ResetStats, StoreError> {
        let mut stats = ResetStats::default();
        // Watches end before the first write, so none is sent the reset's events: a client
        // re-watches from a resourceVersion older than the reset, which the compaction below
        // expires, and relists. The end is repeated once the reset is done, for watches opened
        // meanwhile.
        self.inner.hub.restart(self.inner.cache.revision());
        let mut known = saved.known();
        for _ in 0..reset::PASSES {
            let live = self.inner.cache.entries("");
            let steps = saved.plan(&live, &mut known, &mut stats)?;
            if steps.is_empty() {
                break;
            }
            // Handed over together: SQLite commits them in one group commit.
            let writes = steps.into_iter().map(|step| async move {
                match step {
                    Step::Delete { key, rev } => (None, self.delete(&key, rev).await),
                    Step::Update { key, rev, value } => {
                        let r = self.update(&key, rev, value).await;
                        (Some(key), r)
                    }
                    Step::Create { key, value } => {
                        let r = self.create(&key, value).await;
                        (Some(key), r)
                    }
                }
            });
            for (key, result) in futures_util::future::join_all(writes).await {
                match result {
                    Ok(written) => {
                        let rev = written.object.pointer("/metadata/resourceVersion");
                        let rev = rev.and_then(Value::as_str).and_then(|r| r.parse().ok());
                        if let (Some(key), Some(rev)) = (key, rev) {
                            known.insert(key, rev);
                        }
                    }
                    // Another writer got there first: the next pass reads what it left.
                    Err(
                        StoreError::Conflict { .. }
                        | StoreError::AlreadyExists
                        | StoreError::NotFound,
                    ) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        saved.set_known(known);
        let rev = self.inner.cache.revision();
        self.inner.backend.compact(rev).await?;
        self.inner.hub.restart(self.inner.cache.revision());
        stats.revision = rev;
        Ok(stats)
    }

    /// Drops history up to `rev` (capped at the current revision) now and answers the compacted
    /// revision. Once `start_compaction` was called the store also compacts on its own, as its
    /// `RetentionConfig` says (A.6); this is for tests and operators.
    pub async fn compact(&self, rev: u64) -> Result<u64, StoreError> {
        self.inner.backend.compact(rev).await
    }
}

/// A change from history as an event: its bytes and its previous state's served at their
/// revisions (as a live event has them), its object decoded.
fn event(change: Change) -> Result<Event, StoreError> {
    let Change { rev, key, kind, value, prev } = change;
    let value = served::serve(&value, rev);
    let object = Arc::new(serde_json::from_slice(&value)?);
    let prev = prev.map(|(prev_rev, prev)| served::serve(&prev, prev_rev));
    let size = value.len() + prev.as_ref().map_or(0, Bytes::len);
    Ok(Event { rev, key, kind, object, value, prev: prev.map(Prev::new), size })
}

fn stopped() -> StoreError {
    StoreError::Unavailable("the store thread has stopped".into())
}

#[cfg(test)]
mod tests;
