//! The SQLite backend: a revision log on one embedded database file, written by one thread.
//!
//! kine's design cut down for one node (`sql`): an append-only log whose primary key is the
//! revision, and a `current` index answering reads without grouping over history. One engine
//! thread owns the connection (`engine`): it assigns gap-free revisions, commits queued writes
//! together (group commit, one fsync each) and reports each commit to the feed before its next
//! command. `conn` opens the connection (WAL, `synchronous=FULL`, the query planner stability
//! guarantee, the schema's version and upgrades) and translates rusqlite's errors; `preflight` turns
//! a bad file into one clear line; `files` holds the operator's `check`, `backup` and `restore`.
//! rusqlite never runs on an async worker thread.

mod conn;
mod engine;
pub mod files;
mod preflight;
mod sql;

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use super::backend::{
    Answer, Backend, BackendFacts, Change, Feed, Fence, KeyValue, MetricKind, MetricSample, Range,
    Write,
};
use super::retention::RetentionConfig;
use super::{ListRequest, StoreError};
use engine::{Command, Counters, Engine, Reply};

#[cfg(test)]
pub use conn::MEMORY;

// Holds the implementation to the contract, as kine's `var _ server.Dialect = (*Generic)(nil)`.
const _: fn(SqliteBackend) -> Box<dyn Backend> = |b| Box::new(b);

/// The handle to the engine thread; dropping it stops the thread and closes the database.
pub struct SqliteBackend {
    commands: mpsc::Sender<Command>,
    counters: Arc<Counters>,
    thread: Option<JoinHandle<()>>,
    /// Always leading (the file is this process's); kept so the channel never closes.
    leader: tokio::sync::watch::Sender<Option<Fence>>,
}

impl SqliteBackend {
    /// Opens (or creates) the database at `path` (`MEMORY`: a private in-memory one), loads its
    /// live state into `feed` and starts the engine thread; blocks until it is ready.
    ///
    /// History is not compacted by `retention` until `start_compaction`.
    pub fn open(
        path: &str,
        retention: RetentionConfig,
        feed: Feed,
    ) -> Result<SqliteBackend, StoreError> {
        let (commands, inbox) = mpsc::channel();
        let (ready, opened) = mpsc::sync_channel(1);
        let counters = Arc::new(Counters::default());
        let counting = counters.clone();
        let path = path.to_owned();
        let thread = std::thread::Builder::new()
            .name("virt-store".into())
            .spawn(move || match Engine::open(&path, retention, feed, counting) {
                Ok(engine) => {
                    let _ = ready.send(Ok(()));
                    engine.run(inbox);
                }
                Err(e) => {
                    let _ = ready.send(Err(e));
                }
            })
            .map_err(|e| StoreError::Unavailable(format!("cannot start the store thread: {e}")))?;
        opened.recv().map_err(|_| stopped())??;
        let (leader, _) = tokio::sync::watch::channel(Some(Fence::default()));
        Ok(SqliteBackend { commands, counters, thread: Some(thread), leader })
    }

    /// `(journal_mode, synchronous)` as the connection reports them.
    #[cfg(test)]
    pub(crate) async fn pragmas(&self) -> Result<(String, i64), StoreError> {
        self.call(|reply| Command::Pragmas { reply }).await
    }

    /// Sends one command; the answer comes on the engine thread's time.
    fn call<T: Send + 'static>(&self, command: impl FnOnce(Reply<T>) -> Command) -> Answer<T> {
        let (reply, answer) = oneshot::channel();
        let sent = self.commands.send(command(reply));
        Box::pin(async move {
            sent.map_err(|_| stopped())?;
            answer.await.map_err(|_| stopped())?
        })
    }

    fn ready<T: Send + 'static>(value: T) -> Answer<T> {
        Box::pin(std::future::ready(Ok(value)))
    }
}

impl Backend for SqliteBackend {
    fn facts(&self) -> BackendFacts {
        // The database is one process's (SQLite's own lock keeps a second writer out).
        BackendFacts {
            name: "sqlite",
            needs_leader_election: false,
            external_commits: false,
            request_limit: false,
        }
    }

    fn leadership(&self) -> tokio::sync::watch::Receiver<Option<Fence>> {
        self.leader.subscribe()
    }

    fn append(&self, write: Write) {
        if let Err(mpsc::SendError(Command::Write(write))) =
            self.commands.send(Command::Write(write))
        {
            write.ticket.fail(stopped());
        }
    }

    fn get(&self, key: &str, rev: Option<u64>) -> Answer<Option<KeyValue>> {
        let key = key.to_owned();
        self.call(|reply| Command::Get { key, rev, reply })
    }

    fn range(&self, req: ListRequest) -> Answer<Range> {
        self.call(|reply| Command::List { req, reply })
    }

    fn count_after(&self, prefix: &str, after: &str, rev: u64) -> Answer<u64> {
        let (prefix, after) = (prefix.to_owned(), after.to_owned());
        self.call(|reply| Command::CountAfter { prefix, after, rev, reply })
    }

    fn events_after(&self, prefix: &str, rev: u64) -> Answer<Vec<Change>> {
        let prefix = prefix.to_owned();
        self.call(|reply| Command::EventsAfter { prefix, rev, reply })
    }

    fn compact(&self, rev: u64) -> Answer<u64> {
        self.call(|reply| Command::Compact { rev, reply })
    }

    fn start_compaction(&self) {
        // Fails only when the thread has stopped, which every later call reports anyway.
        let _ = self.commands.send(Command::StartCompaction);
    }

    fn current_revision(&self) -> Answer<u64> {
        // The one writer publishes it after each commit: nothing newer exists anywhere.
        Self::ready(self.counters.revision.load(Ordering::Relaxed))
    }

    fn compacted_revision(&self) -> Answer<u64> {
        Self::ready(self.counters.compacted.load(Ordering::Relaxed))
    }

    fn probe(&self) -> Answer<()> {
        self.call(|reply| Command::Probe { reply })
    }

    fn secret(&self, name: &str) -> Answer<Vec<u8>> {
        let name = name.to_owned();
        self.call(|reply| Command::Secret { name, reply })
    }

    fn close(&self) -> Answer<()> {
        self.call(|reply| Command::Close { reply })
    }

    fn metrics(&self) -> Vec<MetricSample> {
        let c = &self.counters;
        vec![
            MetricSample {
                name: COMMITS_TOTAL,
                help: "Store transactions that committed writes.",
                kind: MetricKind::Counter,
                value: c.commits.load(Ordering::Relaxed),
            },
            MetricSample {
                name: WRITES_TOTAL,
                help: "Writes committed by the store.",
                kind: MetricKind::Counter,
                value: c.writes.load(Ordering::Relaxed),
            },
        ]
    }
}

/// Group commit's transactions; its ratio to `WRITES_TOTAL` is the batch size.
pub const COMMITS_TOTAL: &str = "virt_apiserver_store_commits_total";
pub const WRITES_TOTAL: &str = "virt_apiserver_store_writes_total";

impl Drop for SqliteBackend {
    /// Closes the command channel and waits for the thread, so the database is closed (and
    /// its WAL checkpointed) before the backend is gone, e.g. before reopening the file.
    fn drop(&mut self) {
        // Swapping in a dead sender drops the live one: the thread sees the channel close.
        drop(std::mem::replace(&mut self.commands, mpsc::channel().0));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn stopped() -> StoreError {
    StoreError::Unavailable("the store thread has stopped".into())
}

#[cfg(test)]
mod tests;
