//! The object store: a revisioned key-value log on embedded SQLite; the only module speaking SQL.
//!
//! Keys are `"<group>/<plural>/<namespace>/<name>"` (empty namespace for cluster kinds); values are
//! JSON objects. Every write takes the next global revision (gap-free, from 1), which the store
//! writes into the object as `metadata.resourceVersion` before storing, so stored bytes are final.
//!
//! Layout: `Store` is the async handle; `engine` is the one thread that owns the connection and
//! runs commands in order; `cache` the current state in memory, which serves reads at the current
//! revision without that thread; `sql` holds the schema and statements; `compact` the retention
//! policy.
//! The store knows nothing of HTTP: callers map `StoreError` to a `Status` once.

mod cache;
mod compact;
mod engine;
mod error;
mod hub;
mod sql;
pub mod watch;

use std::fmt;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

pub use bytes::Bytes;
use serde_json::Value;
use tokio::sync::oneshot;

use cache::Cache;
pub use cache::Entry;
pub use compact::RetentionConfig;
use engine::{Command, Engine, Reply, WriteCounters, WriteOp};
pub use error::StoreError;
pub use hub::{Filter, HubStats, QueueLimits, Subscription};
use hub::{Hub, Lag};

/// Where the database lives, how long history is kept, and how far a watcher may fall behind.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// A file path, or `":memory:"` for a private in-memory database with the same semantics.
    pub path: String,
    pub retention: RetentionConfig,
    /// Per subscriber: a watcher whose unread events exceed this is ended (410).
    pub watch_queue: QueueLimits,
}

impl StoreConfig {
    /// The defaults of A.6: 5 minutes and at least 1000 revisions of history.
    pub fn new(path: impl Into<String>) -> StoreConfig {
        StoreConfig {
            path: path.into(),
            retention: RetentionConfig::default(),
            watch_queue: QueueLimits::default(),
        }
    }
}

/// One page of a list.
#[derive(Debug, Clone, Default)]
pub struct ListRequest {
    /// Collection prefix, e.g. `"<group>/<plural>/"` or `"<group>/<plural>/<ns>/"`.
    pub prefix: String,
    /// Read the state at this revision; `None` reads the current state.
    pub revision: Option<u64>,
    /// Continue after this full key (exclusive).
    pub start_after: Option<String>,
    /// At most this many items; `None` or `Some(0)` means all.
    pub limit: Option<usize>,
}

/// A page of objects in bytewise key order.
#[derive(Debug, Clone)]
pub struct ListResult {
    /// The revision the page was read at (the list's `metadata.resourceVersion`).
    pub revision: u64,
    /// `(key, object)` pairs.
    pub items: Vec<(String, Arc<Value>)>,
    /// Whether another item exists after the last one (a continue token is due).
    pub more: bool,
}

/// A page as stored: `(key, JSON bytes)` pairs, shared with the cache when read from it.
#[derive(Debug, Clone)]
pub struct RawList {
    pub revision: u64,
    pub items: Vec<(String, Bytes)>,
    pub more: bool,
}

/// What a committed write did to its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One committed write, published in revision order.
#[derive(Debug, Clone)]
pub struct Event {
    /// The write's revision.
    pub rev: u64,
    pub key: String,
    pub kind: EventType,
    /// The new state; for `Deleted`, the last state with the delete's revision.
    pub object: Arc<Value>,
    /// `object` as stored: watches send these bytes rather than encoding `object` again each.
    pub value: Bytes,
    /// The state before the write (`None` for `Added`), for selector transitions.
    pub prev: Option<Prev>,
    /// Stored bytes of `object` and `prev`: what a queued event costs, for queue limits.
    pub size: usize,
}

impl Event {
    /// The state before the write, decoded on first use.
    pub fn prev(&self) -> Option<&Value> {
        self.prev.as_ref().map(Prev::value)
    }
}

/// An event's previous state as stored, decoded only when asked (a watcher with a selector
/// judging a transition) and then once for every watcher: the store thread never decodes it.
#[derive(Debug, Clone)]
pub struct Prev {
    bytes: Bytes,
    decoded: Arc<std::sync::OnceLock<Value>>,
}

impl Prev {
    pub fn new(bytes: Bytes) -> Prev {
        Prev { bytes, decoded: Arc::default() }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn value(&self) -> &Value {
        // The store wrote these bytes from a Value; should they not decode, nothing matches.
        self.decoded.get_or_init(|| serde_json::from_slice(&self.bytes).unwrap_or(Value::Null))
    }
}

/// What a write left in the store: the object and its stored bytes (a JSON answer can send
/// them as they are, as a get does).
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub object: Arc<Value>,
    pub value: Bytes,
}

// Tests read a written object's fields directly; the server goes through `object`.
#[cfg(test)]
impl std::ops::Deref for Written {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.object
    }
}

/// Cheap clone handle to the store thread.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

struct Inner {
    commands: mpsc::Sender<Command>,
    hub: Arc<Hub>,
    cache: Arc<Cache>,
    counters: Arc<WriteCounters>,
    thread: Option<JoinHandle<()>>,
}

/// Committed writes and the transactions that held them: their ratio is the group commit's
/// batch size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WriteStats {
    pub commits: u64,
    pub writes: u64,
}

impl Drop for Inner {
    /// Closes the command channel and waits for the thread, so the database is closed (and
    /// its WAL checkpointed) before the last handle is gone, e.g. before reopening the file.
    fn drop(&mut self) {
        // Swapping in a dead sender drops the live one: the thread sees the channel close.
        drop(std::mem::replace(&mut self.commands, mpsc::channel().0));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        // Watches end once the store is gone: nothing more will ever happen.
        self.hub.close();
    }
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store").finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (or creates) the database and starts the store thread; blocks until it is ready.
    ///
    /// History is not compacted automatically until `start_compaction` is called, so a server
    /// can start answering before the first compaction runs.
    pub fn open(cfg: StoreConfig) -> Result<Store, StoreError> {
        let (commands, inbox) = mpsc::channel();
        let (ready, opened) = mpsc::sync_channel(1);
        let hub = Arc::new(Hub::new(cfg.watch_queue));
        let publisher = hub.clone();
        let counters = Arc::new(WriteCounters::default());
        let counting = counters.clone();
        let thread = std::thread::Builder::new()
            .name("virt-store".into())
            .spawn(move || match Engine::open(&cfg.path, cfg.retention, publisher, counting) {
                Ok((engine, cache)) => {
                    let _ = ready.send(Ok(cache));
                    engine.run(inbox);
                }
                Err(e) => {
                    let _ = ready.send(Err(e));
                }
            })
            .map_err(|e| StoreError::Unavailable(format!("cannot start the store thread: {e}")))?;
        let cache = opened.recv().map_err(|_| stopped())??;
        let inner = Inner { commands, hub, cache, counters, thread: Some(thread) };
        Ok(Store { inner: Arc::new(inner) })
    }

    /// Lets the store thread compact history on its own from now on (A.6), a batch at a time
    /// between commands.
    pub fn start_compaction(&self) {
        // Fails only when the thread has stopped, which every later call reports anyway.
        let _ = self.inner.commands.send(Command::StartCompaction);
    }

    /// The current state of `key`, from memory.
    pub async fn get(&self, key: &str) -> Result<Option<Arc<Value>>, StoreError> {
        match self.inner.cache.get(key) {
            Some(entry) => Ok(Some(Arc::new(serde_json::from_slice(&entry.value)?))),
            None => Ok(None),
        }
    }

    /// The current state of `key` as stored, from memory: a consistent read.
    pub fn get_raw(&self, key: &str) -> Option<Entry> {
        self.inner.cache.get(key)
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
            .map(|(key, value)| Ok((key, Arc::new(serde_json::from_slice(&value)?))))
            .collect::<Result<_, StoreError>>()?;
        Ok(ListResult { revision: raw.revision, items, more: raw.more })
    }

    /// `list` with the objects as stored. The current revision is read from memory; any other
    /// from the log on the store thread.
    pub async fn list_raw(&self, req: ListRequest) -> Result<RawList, StoreError> {
        if let Some(page) = self.inner.cache.list(&req) {
            return Ok(page);
        }
        self.call(|reply| Command::List { req, reply }).await
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
        let (prefix, after) = (prefix.to_owned(), after.to_owned());
        self.call(|reply| Command::CountAfter { prefix, after, rev, reply }).await
    }

    /// Stores a new object; `AlreadyExists` if the key is live.
    pub async fn create(&self, key: &str, obj: Value) -> Result<Written, StoreError> {
        let op = WriteOp::Create { key: key.to_owned(), obj };
        self.call(|reply| Command::Write { op, reply }).await
    }

    /// Replaces the object if its revision is still `expected_rev` (`NotFound`, `Conflict`).
    pub async fn update(
        &self,
        key: &str,
        expected_rev: u64,
        obj: Value,
    ) -> Result<Written, StoreError> {
        let op = WriteOp::Update { key: key.to_owned(), expected: expected_rev, obj };
        self.call(|reply| Command::Write { op, reply }).await
    }

    /// Deletes the object if its revision is still `expected_rev`; answers its last state with
    /// the delete's revision as `resourceVersion`.
    pub async fn delete(&self, key: &str, expected_rev: u64) -> Result<Written, StoreError> {
        let op = WriteOp::Delete { key: key.to_owned(), expected: expected_rev };
        self.call(|reply| Command::Write { op, reply }).await
    }

    /// The live events that pass `filter` from now on, in revision order, for internal
    /// consumers that re-scan when they fall behind (`recv` reports `Lagged` once, then
    /// delivery resumes). `filter` runs on the store thread as each commit is published: keep
    /// it cheap.
    pub fn subscribe(&self, filter: Filter) -> Subscription {
        self.inner.hub.subscribe("", filter, Lag::Resume)
    }

    /// Live events under `prefix` from now on, in revision order, for a watch: a subscriber
    /// that falls behind its queue limits is cut off for good (see `watch` for the protocol).
    pub fn watch_events(&self, prefix: &str) -> Subscription {
        self.inner.hub.subscribe(prefix, |_| true, Lag::End)
    }

    /// Open watches and watches ended for being too slow.
    pub fn watch_stats(&self) -> HubStats {
        self.inner.hub.stats()
    }

    /// Writes committed and the transactions that committed them, since start.
    pub fn write_stats(&self) -> WriteStats {
        let c = &self.inner.counters;
        WriteStats {
            commits: c.commits.load(std::sync::atomic::Ordering::Relaxed),
            writes: c.writes.load(std::sync::atomic::Ordering::Relaxed),
        }
    }

    /// The newest revision written.
    pub async fn current_revision(&self) -> Result<u64, StoreError> {
        Ok(self.inner.cache.revision())
    }

    /// A real, fsync'd write through the store thread; the caller applies its own deadline.
    pub async fn probe(&self) -> Result<(), StoreError> {
        self.call(|reply| Command::Probe { reply }).await
    }

    /// 32 random bytes, made on first use and kept in the database across restarts.
    pub async fn secret(&self, name: &str) -> Result<Vec<u8>, StoreError> {
        self.call(|reply| Command::Secret { name: name.to_owned(), reply }).await
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
        self.call(|reply| Command::EventsAfter { prefix: prefix.to_owned(), rev, reply }).await
    }

    /// Drops history up to `rev` (capped at the current revision) now and answers the compacted
    /// revision. Once `start_compaction` was called the store also compacts on its own, as its
    /// `RetentionConfig` says (A.6); this is for tests and operators.
    pub async fn compact(&self, rev: u64) -> Result<u64, StoreError> {
        self.call(|reply| Command::Compact { rev, reply }).await
    }

    /// `(journal_mode, synchronous)` as the connection reports them.
    #[cfg(test)]
    async fn pragmas(&self) -> Result<(String, i64), StoreError> {
        self.call(|reply| Command::Pragmas { reply }).await
    }

    /// Sends one command and awaits its answer; the thread never runs on an async worker.
    async fn call<T>(&self, command: impl FnOnce(Reply<T>) -> Command) -> Result<T, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.inner.commands.send(command(reply)).map_err(|_| stopped())?;
        answer.await.map_err(|_| stopped())?
    }
}

fn stopped() -> StoreError {
    StoreError::Unavailable("the store thread has stopped".into())
}

#[cfg(test)]
mod tests;
