//! The storage contract: what a backend (the SQLite revision log today, etcd next) provides to
//! the shared layer above it (cache, watch hub, watch replay, `Store`).
//!
//! A backend is a revisioned key-value log in the manner of kine's `Log`/`Backend`: every
//! committed write takes a revision greater than any before it, values are JSON objects as
//! persisted (never holding a resourceVersion: the revision is known only at commit), and history
//! is kept until compacted. The shared layer owns everything served from memory; a backend only
//! persists, answers reads at past revisions, and reports each commit through the `Feed` it was
//! opened with.
//!
//! **Commits.** `append` hands over one write; a backend may commit writes handed over together
//! in one transaction (SQLite's group commit), each judged alone: a write whose compare-and-swap
//! fails takes no revision and leaves the others in. Once a commit is durable, and before any of
//! its writers is answered, the backend calls `Feed::commit` with its writes in revision order;
//! that moves the cache to the commit, publishes the events and answers the writers, so nobody
//! hears of a write before it is durable, and the cache is never older than an answer or event a
//! client already has. Failed writes are answered with `Ticket::fail`, after the commit they were
//! batched with. A backend whose commits come from elsewhere too (other replicas on one etcd)
//! reports those through the same feed, without a ticket.
//!
//! **Revisions.** The SQLite backend's are gap-free from 1; the contract promises only that
//! they increase (etcd's are shared with every key in the cluster).
//!
//! **Errors.** `Conflict { current_rev }`, `AlreadyExists` and `NotFound` for a failed
//! compare-and-swap; `Expired { compacted }` for a read below the compacted revision (a read
//! *at* it is served); `FutureRevision { current }` above the current one; `Unavailable` for what
//! goes away with time or an operator, `Internal` for the rest.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;
use tokio::sync::watch;

// A commit is the feed's input; the contract hands both to backends.
pub use super::feed::{Commit, Feed, Snapshot, Ticket};
use super::{EventType, ListRequest, StoreError};

/// An answer to come: backends are called from async workers and never block them.
pub type Answer<T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'static>>;

/// The storage contract; see the module documentation for what holds across operations.
pub trait Backend: Send + Sync + 'static {
    /// What deployments must know about this backend.
    fn facts(&self) -> BackendFacts;

    /// Commits `write` if its compare-and-swap holds, reporting it through the feed; else answers
    /// its ticket with the failure. Returns at once.
    fn append(&self, write: Write);

    /// The state of `key` at `rev` (`None`: the current revision), with the revision that wrote it.
    fn get(&self, key: &str, rev: Option<u64>) -> Answer<Option<KeyValue>>;

    /// Live keys under `req.prefix` after `req.start_after` in bytewise order, at
    /// `req.revision` (`None`: the current one), at most `req.limit` of them (keyset paging:
    /// `more` says whether another follows). The page's revision is the one read at.
    fn range(&self, req: ListRequest) -> Answer<Range>;

    /// How many live keys under `prefix` follow `after` at `rev`: what remains of a range after
    /// a page ending at `after`.
    fn count_after(&self, prefix: &str, after: &str, rev: u64) -> Answer<u64>;

    /// Every change under `prefix` with a revision above `rev`, in revision order.
    fn events_after(&self, prefix: &str, rev: u64) -> Answer<Vec<Change>>;

    /// Drops history up to `rev` (capped at the current revision); answers the compacted revision.
    fn compact(&self, rev: u64) -> Answer<u64>;

    /// Compact by the retention policy the backend was opened with from now on. A backend whose
    /// facts say `needs_leader_election` compacts only while this process leads.
    fn start_compaction(&self);

    /// The newest committed revision (on a shared engine, read from it: linearizable).
    fn current_revision(&self) -> Answer<u64>;

    /// History at or below this revision is gone.
    fn compacted_revision(&self) -> Answer<u64>;

    /// A real, durable write that touches no key: the health probe.
    fn probe(&self) -> Answer<()>;

    /// 32 random bytes under `name`, made on first use and kept with the data, the same for every
    /// process serving it.
    fn secret(&self, name: &str) -> Answer<Vec<u8>>;

    /// The backend's own metric samples, for `/metrics`.
    fn metrics(&self) -> Vec<MetricSample>;

    /// Whether this process leads the processes serving the data: `Some(fence)` while it does,
    /// `None` while another does or none is known to. The first call enters the election (etcd:
    /// a lease and a campaign key); a backend that is one process's (facts:
    /// `needs_leader_election` false) always leads. Singletons run while it says `Some`, and
    /// their writes carry the fence, so a deposed leader's writes fail with `NotLeader`.
    fn leadership(&self) -> watch::Receiver<Option<Fence>>;

    /// Resolves once the feed has reported every commit acknowledged before the call, by this
    /// process or another: what a consistent read waits for (the caller bounds it in time).
    /// Called only when the facts say `external_commits`.
    fn barrier(&self) -> Answer<()> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// Whether the feed is up and has caught up with the data: a readiness check, answered
    /// within about a second. Called only when the facts say `external_commits`.
    fn feed_ready(&self) -> Answer<()> {
        Box::pin(std::future::ready(Ok(())))
    }

    /// Finishes what was handed over before it (queued writes commit and are answered), leaves
    /// the data tidy for the next start (SQLite: the WAL checkpointed into the database) and
    /// stops: every later operation fails. The clean end of a shutdown.
    fn close(&self) -> Answer<()>;
}

/// What a deployment must know about a backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackendFacts {
    /// Short and stable, e.g. for logs and a `--storage` flag: `"sqlite"`.
    pub name: &'static str,
    /// Whether several processes may serve the same data at once. Singletons (the garbage
    /// collector, the compactor, future controllers) must then run only in the process that
    /// holds the backend's leadership, and stop the moment it is lost; when false (SQLite: the
    /// file is one process's), they simply run, as kine sets `leaderElect` only off SQLite.
    pub needs_leader_election: bool,
    /// Whether commits also come from elsewhere (other processes serving the same data), the
    /// feed reporting them after they were acknowledged: a read that must reflect every
    /// acknowledged write then waits for the feed (`barrier`), and readiness includes the feed's
    /// health. When false (SQLite) the cache moves before any writer is answered: reads at the
    /// current revision need no wait.
    pub external_commits: bool,
    /// Whether the backend refuses a write over a request size of its own (etcd's
    /// `--max-request-bytes`) with `TooLarge`, past the object limit every backend shares.
    pub request_limit: bool,
}

/// One write handed to `append`.
#[derive(Debug)]
pub struct Write {
    pub key: String,
    pub op: Op,
    /// The shared layer's end of the write, handed back through the feed or failed.
    pub ticket: Ticket,
    /// Made on behalf of the leader: commits only while the leadership this fence proves holds
    /// (`NotLeader` otherwise).
    pub fence: Option<Fence>,
}

/// Proof of one term of leadership, as the backend that granted it can check at commit (etcd:
/// the campaign key and its create revision, compared in the write's transaction; a backend
/// that always leads gives the default and checks nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fence {
    pub key: String,
    pub rev: u64,
}

/// A write's change and the compare-and-swap guarding it, on the key's last revision.
#[derive(Debug)]
pub enum Op {
    /// Stores `value` if the key is absent (`AlreadyExists` otherwise).
    Create { value: Bytes },
    /// Replaces the value if the key's revision is `expected` (`NotFound`, `Conflict`).
    Update { expected: u64, value: Bytes },
    /// Deletes the key if its revision is `expected` (`NotFound`, `Conflict`).
    Delete { expected: u64 },
}

/// One change from history, for `events_after`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub rev: u64,
    pub key: String,
    pub kind: EventType,
    /// The new value as persisted; for `Deleted`, the deleted state.
    pub value: Bytes,
    /// The state before (`None` for `Added`) as persisted, and the revision that wrote it.
    pub prev: Option<(u64, Bytes)>,
}

/// One key's state as persisted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    /// The revision that wrote this state.
    pub rev: u64,
    pub create_rev: u64,
    pub value: Bytes,
}

/// One page of `range`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Range {
    /// The revision the page was read at.
    pub revision: u64,
    pub items: Vec<KeyValue>,
    pub more: bool,
}

/// One metric sample in Prometheus' text format terms.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricSample {
    pub name: &'static str,
    pub help: &'static str,
    pub kind: MetricKind,
    pub value: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    Counter,
    Gauge,
}

impl MetricKind {
    /// The word Prometheus' `# TYPE` line uses.
    pub fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
        }
    }
}
