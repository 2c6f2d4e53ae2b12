//! The etcd backend: the storage contract over an etcd v3 cluster, as kube-apiserver uses it.
//!
//! Keys and values are kube's (`keys`): the object's JSON as persisted, the revision being the
//! key's `mod_revision`. Every write is one single-key transaction comparing the key's
//! `mod_revision` (kube's `OptimisticPut`: `If ModRevision==rev Then Put|Delete Else Get`; a
//! create compares 0), so each change has a revision of its own and the Else branch tells
//! `Conflict` from `NotFound` without another round trip. Values are handed on as etcd has them;
//! one another writer put with whitespace (kube-apiserver's trailing newline, an indented file)
//! is encoded anew where every backend's values enter the shared layer (`served::serve`).
//!
//! **The feed.** At open, a paged Range of the whole root at one revision R loads the cache;
//! then ONE etcd watch on the root from R+1 reports every commit, this process's and any other's,
//! to the `Feed`, one revision at a time, in order. A writer whose transaction succeeded hands
//! its ticket over by revision (`Pending`); when the watch overtakes the transaction's answer,
//! the writer answers itself, the cache being there already. So, as on SQLite, a writer is
//! answered only once the cache holds its commit. Deletes take the last state from the cache
//! (the watch asks for no previous values). The watch is reopened from the last revision applied
//! after a failure; when that revision is compacted, the feed relists (kube's reflector restart):
//! the root is loaded anew and replaces the shared state (`Feed::reload`), open watches end,
//! internal consumers re-scan, and parked writers whose commits were skipped are answered.
//!
//! **Consistent reads** (`fresh`): a read that must reflect every write acknowledged anywhere
//! waits until the feed has applied etcd's current revision, closed by a barrier write under
//! `_virt/replicas/` when that revision is another prefix's. `/readyz`'s `etcd-feed` check is
//! the same wait, bounded, while the watch is up.
//!
//! **History** is etcd's: reads at a revision are Ranges at it, `events_after` an etcd watch of
//! the root from `rev + 1` with previous values until the revision the feed has applied (every
//! applied revision came from an event of the root, so it ends without trusting progress
//! notifications, which etcd 3.4.23 cannot be trusted with). Compaction is kube's: the winner of
//! a compare-and-swap on `_virt/compacted` (kube's `compact_rev_key`) compacts etcd, so replicas
//! need no leader for it, and everyone learns the compacted revision from that key.
//!
//! Everything runs on the backend's own tokio runtime (tonic's channel needs one; actix's
//! per-worker runtimes would each need their own): answers are its tasks' join handles.

mod client;
mod election;
mod fresh;
pub mod harness;
mod keys;
#[allow(clippy::all, clippy::pedantic)]
mod pb;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::Notify;
use tokio::task::JoinHandle;

pub use client::EtcdConfig;
use client::{is_compacted, is_future, store_error, Client, Retry};
use keys::{range_end, Keys};
use pb::compare::{CompareResult, CompareTarget, TargetUnion};
use pb::request_op::Request;
use pb::response_op::Response;
use pb::{
    event, CompactionRequest, Compare, DeleteRangeRequest, Event as PbEvent, KeyValue as PbKv,
    PutRequest, RangeRequest, RequestOp, TxnRequest, TxnResponse, WatchCreateRequest, WatchRequest,
};

use super::backend::{
    Answer, Backend, BackendFacts, Change, Commit, Feed, Fence, KeyValue, MetricKind, MetricSample,
    Op, Range, Snapshot, Ticket, Write,
};
use super::retention::{Retention, RetentionConfig};
use super::{EventType, ListRequest, StoreError};

// Holds the implementation to the contract.
const _: fn(EtcdBackend) -> Box<dyn Backend> = |b| Box::new(b);

/// Keys per Range page when loading the cache at start.
const LOAD_PAGE: i64 = 1000;
/// Between attempts to reopen a failed feed watch: doubled after each failure in a row.
const REWATCH_DELAY: Duration = Duration::from_millis(200);
const MAX_REWATCH_DELAY: Duration = Duration::from_secs(5);
/// How long a committed write waits for the feed to report it before its writer is told the
/// store is unavailable (the write stays committed).
const FEED_DEADLINE: Duration = Duration::from_secs(30);

pub const WRITES_TOTAL: &str = "virt_apiserver_etcd_writes_total";
pub const CONFLICTS_TOTAL: &str = "virt_apiserver_etcd_failed_writes_total";
pub const REVISION_READS_TOTAL: &str = "virt_apiserver_etcd_revision_reads_total";
pub const BARRIERS_TOTAL: &str = "virt_apiserver_etcd_barriers_total";

/// The handle to the backend's runtime; dropping it stops every task.
pub struct EtcdBackend {
    shared: Arc<Shared>,
    runtime: Option<tokio::runtime::Runtime>,
}

struct Shared {
    client: Client,
    keys: Keys,
    feed: Feed,
    pending: Mutex<Pending>,
    /// The compacted revision, as `_virt/compacted` last said.
    compacted: AtomicU64,
    retention: RetentionConfig,
    closed: AtomicBool,
    /// Writes handed over and not yet answered, for `close`.
    inflight: AtomicU64,
    drained: Notify,
    writes: AtomicU64,
    failed_writes: AtomicU64,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    /// Leadership among the processes serving the prefix (`election`).
    election: election::Election,
    /// The feed's progress, for consistent reads and readiness.
    fresh: fresh::Freshness,
}

/// Where the feed is, and the tickets of writes it has not reached yet.
struct Pending {
    /// The newest revision of the root the feed has applied.
    applied: u64,
    /// The newest revision of an object the cache holds (the cache's revision).
    objects: u64,
    /// Committed writes of this process the feed has not reached, with what they persisted.
    tickets: HashMap<u64, (Ticket, Bytes)>,
}

impl EtcdBackend {
    /// Connects to `cfg.servers`, loads the live state under `cfg.prefix` into `feed` and starts
    /// following etcd from there; blocks until loaded.
    pub fn open(
        cfg: EtcdConfig,
        retention: RetentionConfig,
        feed: Feed,
    ) -> Result<EtcdBackend, StoreError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("virt-etcd")
            .enable_all()
            .build()
            .map_err(|e| StoreError::Unavailable(format!("cannot start the etcd runtime: {e}")))?;
        let (opened, answer) = std::sync::mpsc::channel();
        runtime.spawn(async move {
            let _ = opened.send(Shared::start(cfg, retention, feed).await);
        });
        let shared = answer.recv().map_err(|_| stopped())??;
        let follow = runtime.spawn(shared.clone().follow());
        shared.tasks.lock().unwrap().push(follow);
        Ok(EtcdBackend { shared, runtime: Some(runtime) })
    }

    fn spawn<T: Send + 'static>(
        &self,
        work: impl std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Answer<T> {
        let Some(runtime) = &self.runtime else { return Box::pin(async { Err(stopped()) }) };
        if self.shared.closed.load(Ordering::Acquire) {
            return Box::pin(async { Err(stopped()) });
        }
        let task = runtime.spawn(work);
        Box::pin(async move { task.await.map_err(|_| stopped())? })
    }
}

impl Shared {
    async fn start(
        cfg: EtcdConfig,
        retention: RetentionConfig,
        feed: Feed,
    ) -> Result<Arc<Shared>, StoreError> {
        let client = Client::new(&cfg)?;
        let keys = Keys::new(&cfg.prefix);
        let (snapshot, rev) = load(&client, &keys).await.map_err(|e| {
            let servers = cfg.servers.join(",");
            StoreError::Unavailable(format!("loading from etcd {servers}: {}", e.message()))
        })?;
        let barrier = keys.meta(&format!("replicas/{}", fresh::replica_id()));
        let shared = Arc::new(Shared {
            client,
            keys,
            feed,
            pending: Mutex::new(Pending { applied: rev, objects: rev, tickets: HashMap::new() }),
            compacted: AtomicU64::new(0),
            retention,
            closed: AtomicBool::new(false),
            inflight: AtomicU64::new(0),
            drained: Notify::new(),
            writes: AtomicU64::new(0),
            failed_writes: AtomicU64::new(0),
            tasks: Mutex::new(Vec::new()),
            election: election::Election::new(),
            fresh: fresh::Freshness::new(rev, barrier, tokio::runtime::Handle::current()),
        });
        let (compacted, _) = shared.compaction_key().await?;
        shared.compacted.store(compacted, Ordering::Release);
        shared.feed.load(rev, snapshot);
        Ok(shared)
    }

    /// The feed: one watch of the root, reopened from the last applied revision when it fails.
    async fn follow(self: Arc<Self>) {
        let mut delay = REWATCH_DELAY;
        loop {
            let from = self.pending.lock().unwrap().applied + 1;
            let ended = self.watch_root(from).await;
            if self.pending.lock().unwrap().applied >= from {
                // It made progress: the next failure is a new one.
                delay = REWATCH_DELAY;
            }
            match ended {
                Ok(()) => return,
                Err(WatchEnd::Compacted(c)) => {
                    log::warn!(
                        "the etcd feed fell behind compaction (revision {from} < {c}): relisting"
                    );
                    match self.relist().await {
                        Ok(rev) => {
                            log::info!("relisted etcd at revision {rev}");
                            delay = REWATCH_DELAY;
                        }
                        Err(e) => {
                            log::warn!(
                                "relisting etcd failed: {}; again in {delay:?}",
                                e.message()
                            );
                            tokio::time::sleep(delay).await;
                            delay = (delay * 2).min(MAX_REWATCH_DELAY);
                        }
                    }
                }
                Err(WatchEnd::Failed(e)) => {
                    log::warn!(
                        "the etcd watch failed at revision {from}: {e}; reopening in {delay:?}"
                    );
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(MAX_REWATCH_DELAY);
                }
            }
        }
    }

    /// kube's reflector restart: the state is loaded anew at etcd's newest revision and replaces
    /// the shared one (`Feed::reload`: watches end, internal consumers re-scan). Writes of this
    /// process whose commits fell in the lost stretch are answered: they did commit.
    async fn relist(&self) -> Result<u64, tonic::Status> {
        let (snapshot, rev) = load(&self.client, &self.keys).await?;
        let (compacted, _) = self.compaction_key().await.unwrap_or((0, 0));
        self.compacted.fetch_max(compacted, Ordering::AcqRel);
        let mut pending = self.pending.lock().unwrap();
        self.feed.reload(rev, snapshot);
        pending.applied = rev;
        pending.objects = rev;
        let reached: Vec<u64> = pending.tickets.keys().copied().filter(|r| *r <= rev).collect();
        for r in reached {
            if let Some((ticket, persisted)) = pending.tickets.remove(&r) {
                ticket.succeed(r, &persisted);
            }
        }
        drop(pending);
        self.fresh.applied(rev);
        Ok(rev)
    }

    async fn watch_root(&self, from: u64) -> Result<(), WatchEnd> {
        let root = self.keys.root().as_bytes().to_vec();
        let mut watch = self.open_watch(root, from, false).await?;
        self.fresh.set_up(true);
        let ended = loop {
            let resp = match watch.message().await {
                Ok(Some(resp)) => resp,
                Ok(None) => break WatchEnd::Failed("etcd closed the watch".into()),
                Err(e) => break WatchEnd::Failed(e.to_string()),
            };
            if resp.canceled {
                break canceled(&resp);
            }
            self.apply(resp.events);
        };
        self.fresh.set_up(false);
        Err(ended)
    }

    /// Opens one watch of `key`'s prefix from `from`, on a live member (kube's
    /// `WithRequireLeader`: a member cut off from its cluster ends the watch rather than leave it
    /// silent, and the caller reopens it on another).
    async fn open_watch(
        &self,
        key: Vec<u8>,
        from: u64,
        prev_kv: bool,
    ) -> Result<client::Stream<WatchRequest, pb::WatchResponse>, WatchEnd> {
        let create = WatchCreateRequest {
            range_end: range_end(&key),
            key,
            start_revision: from as i64,
            prev_kv,
            ..Default::default()
        };
        self.client.watch(create).await.map_err(|e| WatchEnd::Failed(e.to_string()))
    }

    /// Reports one watch response's events to the feed, a revision at a time, handing over the
    /// tickets of this process's writes.
    fn apply(&self, events: Vec<PbEvent>) {
        let mut pending = self.pending.lock().unwrap();
        let mut batch: Vec<Commit> = Vec::new();
        for ev in events {
            let Some(kv) = ev.kv else { continue };
            let rev = kv.mod_revision as u64;
            if batch.last().is_some_and(|c| c.rev != rev) {
                self.feed.commit(std::mem::take(&mut batch));
            }
            pending.applied = pending.applied.max(rev);
            if kv.key == self.keys.meta(COMPACTED).as_bytes() {
                self.compacted.fetch_max(parse_revision(&kv.value), Ordering::AcqRel);
                continue;
            }
            let Some(key) = self.keys.store_key(&kv.key) else { continue };
            let ticket = pending.tickets.remove(&rev).map(|(ticket, _)| ticket);
            let commit = if ev.r#type == event::EventType::Delete as i32 {
                let Some(last) = self.feed.live(&key) else {
                    // A delete of a key the cache never held: nothing to report.
                    if let Some(t) = ticket {
                        t.fail(StoreError::Internal(format!("deleted {key} was not loaded")));
                    }
                    continue;
                };
                Commit {
                    rev,
                    key,
                    kind: EventType::Deleted,
                    create_rev: last.create_rev,
                    value: last.value,
                    ticket,
                }
            } else {
                let kind = if kv.create_revision == kv.mod_revision {
                    EventType::Added
                } else {
                    EventType::Modified
                };
                let create_rev = kv.create_revision as u64;
                Commit { rev, key, kind, create_rev, value: Bytes::from(kv.value), ticket }
            };
            pending.objects = rev;
            batch.push(commit);
        }
        self.feed.commit(batch);
        self.fresh.applied(pending.applied);
    }

    /// One write: the single-key transaction, then the ticket handed to the feed (or answered
    /// here when the feed was first).
    async fn write(self: &Arc<Self>, write: Write) {
        let Write { key, op, ticket, fence } = write;
        let ekey = self.keys.object(&key).into_bytes();
        let creating = matches!(op, Op::Create { .. });
        let (expected, success, value) = match op {
            Op::Create { value } => (0, put(&ekey, &value), Some(value)),
            Op::Update { expected, value } => (expected, put(&ekey, &value), Some(value)),
            Op::Delete { expected } => {
                let delete =
                    DeleteRangeRequest { key: ekey.clone(), prev_kv: true, ..Default::default() };
                (expected, RequestOp { request: Some(Request::RequestDeleteRange(delete)) }, None)
            }
        };
        let mut txn = TxnRequest {
            compare: vec![Compare {
                result: CompareResult::Equal as i32,
                target: CompareTarget::Mod as i32,
                key: ekey.clone(),
                target_union: Some(TargetUnion::ModRevision(expected as i64)),
                ..Default::default()
            }],
            success: vec![success],
            failure: vec![get(&ekey)],
        };
        if let Some(fence) = &fence {
            txn.compare.push(election::fence_compare(fence));
            txn.failure.push(get(fence.key.as_bytes()));
        }
        let resp = match self.client.txn(txn, Retry::IfNotSent).await {
            Ok(resp) => resp,
            Err(e) => {
                self.failed_writes.fetch_add(1, Ordering::Relaxed);
                return ticket.fail(store_error(&e));
            }
        };
        if !resp.succeeded {
            self.failed_writes.fetch_add(1, Ordering::Relaxed);
            let err = match (creating, first_kv(&resp)) {
                _ if fence.as_ref().is_some_and(|f| election::fenced_out(&resp, f)) => {
                    StoreError::NotLeader
                }
                (true, _) => StoreError::AlreadyExists,
                (false, None) => StoreError::NotFound,
                (false, Some(kv)) => StoreError::Conflict { current_rev: kv.mod_revision as u64 },
            };
            return ticket.fail(err);
        }
        self.writes.fetch_add(1, Ordering::Relaxed);
        let rev = header_revision(resp.header.as_ref());
        let persisted = match value {
            Some(value) => value,
            None => match resp.responses.into_iter().next().and_then(|r| r.response) {
                Some(Response::ResponseDeleteRange(d)) => d
                    .prev_kvs
                    .into_iter()
                    .next()
                    .map(|kv| Bytes::from(kv.value))
                    .unwrap_or_default(),
                _ => Bytes::new(),
            },
        };
        let mut pending = self.pending.lock().unwrap();
        if pending.applied >= rev {
            drop(pending);
            ticket.succeed(rev, &persisted);
        } else {
            // Kept with the persisted bytes, for a relist that skips over its commit.
            pending.tickets.insert(rev, (ticket, persisted));
            drop(pending);
            // A feed that never gets there (a stalled watch) must not hold the writer forever.
            let shared = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(FEED_DEADLINE).await;
                let mut pending = shared.pending.lock().unwrap();
                if let Some((ticket, _)) = pending.tickets.remove(&rev) {
                    let applied = pending.applied;
                    drop(pending);
                    log::warn!(
                        "the etcd feed has not reached committed revision {rev} in \
                         {FEED_DEADLINE:?} (it is at {applied})"
                    );
                    ticket.fail(StoreError::Unavailable(format!(
                        "committed at revision {rev}, but the feed is behind (at {applied})"
                    )));
                }
            });
        }
    }

    /// The failure of a read at a revision.
    async fn read_error(&self, e: tonic::Status) -> StoreError {
        if is_compacted(&e) {
            if let Ok((c, _)) = self.compaction_key().await {
                self.compacted.fetch_max(c, Ordering::AcqRel);
            }
            return StoreError::Expired { compacted: self.compacted.load(Ordering::Acquire) };
        }
        if is_future(&e) {
            return match self.current_revision().await {
                Ok(current) => StoreError::FutureRevision { current },
                Err(e) => e,
            };
        }
        store_error(&e)
    }

    async fn range(&self, req: RangeRequest) -> Result<pb::RangeResponse, StoreError> {
        match self.client.range(req).await {
            Ok(resp) => Ok(resp),
            Err(e) => Err(self.read_error(e).await),
        }
    }

    /// The newest revision, read from etcd (linearizable).
    async fn current_revision(&self) -> Result<u64, StoreError> {
        let req = RangeRequest {
            key: self.keys.meta(HEALTH).into_bytes(),
            count_only: true,
            ..Default::default()
        };
        let resp = self.client.range(req).await.map_err(|e| store_error(&e))?;
        Ok(header_revision(resp.header.as_ref()))
    }

    /// `_virt/compacted`'s revision and the key's version (0: never compacted through it).
    async fn compaction_key(&self) -> Result<(u64, i64), StoreError> {
        let req =
            RangeRequest { key: self.keys.meta(COMPACTED).into_bytes(), ..Default::default() };
        let resp = self.client.range(req).await.map_err(|e| store_error(&e))?;
        Ok(resp.kvs.first().map_or((0, 0), |kv| (parse_revision(&kv.value), kv.version)))
    }

    /// kube's compactor step: whoever swaps `_virt/compacted` from the version it read compacts
    /// etcd; the others adopt the revision the key holds.
    async fn compact(&self, rev: u64) -> Result<u64, StoreError> {
        let rev = rev.min(self.current_revision().await?);
        let (known, version) = self.compaction_key().await?;
        self.compacted.fetch_max(known, Ordering::AcqRel);
        if rev <= known {
            return Ok(known);
        }
        let key = self.keys.meta(COMPACTED).into_bytes();
        let txn = TxnRequest {
            compare: vec![Compare {
                result: CompareResult::Equal as i32,
                target: CompareTarget::Version as i32,
                key: key.clone(),
                target_union: Some(TargetUnion::Version(version)),
                ..Default::default()
            }],
            success: vec![put(&key, rev.to_string().as_bytes())],
            failure: vec![get(&key)],
        };
        // A retry after an unknown outcome would lose to itself: adopted as another's below.
        let resp = self.client.txn(txn, Retry::IfNotSent).await.map_err(|e| store_error(&e))?;
        if !resp.succeeded {
            let theirs = first_kv(&resp).map_or(0, |kv| parse_revision(&kv.value));
            self.compacted.fetch_max(theirs, Ordering::AcqRel);
            return Ok(self.compacted.load(Ordering::Acquire));
        }
        let req = CompactionRequest { revision: rev as i64, physical: false };
        match self.client.compact(req).await {
            // Someone compacted further through etcd itself: etcd's history is gone up to there.
            Err(e) if !is_compacted(&e) => return Err(store_error(&e)),
            _ => {}
        }
        self.compacted.fetch_max(rev, Ordering::AcqRel);
        Ok(self.compacted.load(Ordering::Acquire))
    }

    /// The retention policy's compactor: marks the cache's revision each interval and compacts
    /// to the policy's target. Object revisions are what it counts: its own key's writes must not
    /// move the target.
    async fn compactor(self: Arc<Self>) {
        let mut retention = Retention::new(self.retention);
        let mut tick = tokio::time::interval(retention.interval());
        loop {
            tick.tick().await;
            let rev = self.pending.lock().unwrap().objects;
            let now = Instant::now();
            retention.record(now, rev);
            let target = retention.target(now, rev);
            if target > self.compacted.load(Ordering::Acquire) {
                if let Err(e) = self.compact(target).await {
                    log::warn!("compacting etcd to {target}: {e}");
                }
            }
        }
    }

    async fn events_after(&self, prefix: &str, rev: u64) -> Result<Vec<Change>, StoreError> {
        let target = self.pending.lock().unwrap().applied;
        if rev >= target {
            return Ok(Vec::new());
        }
        let compacted = self.compacted.load(Ordering::Acquire);
        if rev < compacted {
            return Err(StoreError::Expired { compacted });
        }
        let root = self.keys.root().as_bytes().to_vec();
        let mut changes = Vec::new();
        // Whole revisions come in one response, so a replay cut off with its member goes on from
        // the revision after the last response, on the next member.
        let mut from = rev + 1;
        let replay = async {
            loop {
                let started = from;
                let mut watch = match self.open_watch(root.clone(), from, true).await {
                    Ok(open) => open,
                    Err(WatchEnd::Compacted(compacted)) => {
                        return Err(StoreError::Expired { compacted })
                    }
                    Err(WatchEnd::Failed(e)) => return Err(StoreError::Unavailable(e)),
                };
                loop {
                    let resp = match watch.message().await {
                        Ok(Some(resp)) => resp,
                        Ok(None) => break,
                        Err(e) if client::member_failed(&e) => break,
                        Err(e) => return Err(store_error(&e)),
                    };
                    if resp.canceled {
                        return Err(match canceled(&resp) {
                            WatchEnd::Compacted(compacted) => StoreError::Expired { compacted },
                            WatchEnd::Failed(e) => StoreError::Unavailable(e),
                        });
                    }
                    for ev in resp.events {
                        let Some(kv) = ev.kv else { continue };
                        let at = kv.mod_revision as u64;
                        if let Some(change) = self.change(prefix, ev.r#type, kv, ev.prev_kv)? {
                            changes.push(change);
                        }
                        if at >= target {
                            return Ok(());
                        }
                        from = at + 1;
                    }
                }
                log::debug!("etcd: the replay's watch ended at revision {from}; reopening it");
                if from == started {
                    // Nothing came on that one: do not spin on a member that keeps closing.
                    tokio::time::sleep(REWATCH_DELAY).await;
                }
            }
        };
        let replayed = tokio::time::timeout(client::REQUEST_TIMEOUT, replay).await;
        match replayed {
            Ok(done) => done.map(|()| changes),
            Err(_) => Err(StoreError::Unavailable("etcd: the replay did not end in time".into())),
        }
    }

    /// A replayed event under `prefix` as a change; `None` outside it.
    fn change(
        &self,
        prefix: &str,
        kind: i32,
        kv: PbKv,
        prev: Option<PbKv>,
    ) -> Result<Option<Change>, StoreError> {
        let Some(key) = self.keys.store_key(&kv.key) else { return Ok(None) };
        if !key.starts_with(prefix) {
            return Ok(None);
        }
        let rev = kv.mod_revision as u64;
        let prev = prev.map(|p| (p.mod_revision as u64, Bytes::from(p.value)));
        let change = if kind == event::EventType::Delete as i32 {
            // kube's parseEvent: a delete without its previous state lost it to compaction.
            let Some((_, last)) = prev.clone() else {
                return Err(StoreError::Expired {
                    compacted: self.compacted.load(Ordering::Acquire),
                });
            };
            Change { rev, key, kind: EventType::Deleted, value: last, prev }
        } else if kv.create_revision == kv.mod_revision {
            Change { rev, key, kind: EventType::Added, value: Bytes::from(kv.value), prev: None }
        } else {
            Change { rev, key, kind: EventType::Modified, value: Bytes::from(kv.value), prev }
        };
        Ok(Some(change))
    }
}

impl Backend for EtcdBackend {
    fn facts(&self) -> BackendFacts {
        BackendFacts {
            name: "etcd",
            needs_leader_election: true,
            external_commits: true,
            request_limit: true,
        }
    }

    fn leadership(&self) -> tokio::sync::watch::Receiver<Option<Fence>> {
        let election = &self.shared.election;
        if let (Some(runtime), true) = (&self.runtime, election.start()) {
            let task = runtime.spawn(election::campaign(self.shared.clone()));
            self.shared.tasks.lock().unwrap().push(task);
        }
        election.subscribe()
    }

    fn append(&self, write: Write) {
        let (Some(runtime), false) = (&self.runtime, self.shared.closed.load(Ordering::Acquire))
        else {
            return write.ticket.fail(stopped());
        };
        let shared = self.shared.clone();
        shared.inflight.fetch_add(1, Ordering::AcqRel);
        runtime.spawn(async move {
            shared.write(write).await;
            if shared.inflight.fetch_sub(1, Ordering::AcqRel) == 1 {
                shared.drained.notify_waiters();
            }
        });
    }

    fn get(&self, key: &str, rev: Option<u64>) -> Answer<Option<KeyValue>> {
        let shared = self.shared.clone();
        let key = key.to_owned();
        self.spawn(async move {
            let req = RangeRequest {
                key: shared.keys.object(&key).into_bytes(),
                revision: rev.unwrap_or(0) as i64,
                ..Default::default()
            };
            let resp = shared.range(req).await?;
            Ok(resp.kvs.into_iter().next().map(|kv| KeyValue {
                key,
                rev: kv.mod_revision as u64,
                create_rev: kv.create_revision as u64,
                value: Bytes::from(kv.value),
            }))
        })
    }

    fn range(&self, req: ListRequest) -> Answer<Range> {
        let shared = self.shared.clone();
        self.spawn(async move {
            let prefix = shared.keys.prefix(&req.prefix).into_bytes();
            let start = match &req.start_after {
                Some(key) => after(shared.keys.object(key).as_bytes()),
                None => prefix.clone(),
            };
            let range = RangeRequest {
                key: start,
                range_end: range_end(&prefix),
                limit: req.limit.unwrap_or(0) as i64,
                revision: req.revision.unwrap_or(0) as i64,
                ..Default::default()
            };
            let resp = shared.range(range).await?;
            let revision = req.revision.unwrap_or_else(|| header_revision(resp.header.as_ref()));
            let items = resp
                .kvs
                .into_iter()
                .filter_map(|kv| {
                    Some(KeyValue {
                        key: shared.keys.store_key(&kv.key)?,
                        rev: kv.mod_revision as u64,
                        create_rev: kv.create_revision as u64,
                        value: Bytes::from(kv.value),
                    })
                })
                .collect();
            Ok(Range { revision, items, more: resp.more })
        })
    }

    fn count_after(&self, prefix: &str, after_key: &str, rev: u64) -> Answer<u64> {
        let shared = self.shared.clone();
        let (prefix, after_key) = (prefix.to_owned(), after_key.to_owned());
        self.spawn(async move {
            let start = if after_key.ends_with('/') {
                shared.keys.prefix(&after_key).into_bytes()
            } else {
                after(shared.keys.object(&after_key).as_bytes())
            };
            let req = RangeRequest {
                key: start,
                range_end: range_end(shared.keys.prefix(&prefix).as_bytes()),
                revision: rev as i64,
                count_only: true,
                ..Default::default()
            };
            Ok(shared.range(req).await?.count as u64)
        })
    }

    fn events_after(&self, prefix: &str, rev: u64) -> Answer<Vec<Change>> {
        let shared = self.shared.clone();
        let prefix = prefix.to_owned();
        self.spawn(async move { shared.events_after(&prefix, rev).await })
    }

    fn compact(&self, rev: u64) -> Answer<u64> {
        let shared = self.shared.clone();
        self.spawn(async move { shared.compact(rev).await })
    }

    fn start_compaction(&self) {
        if let Some(runtime) = &self.runtime {
            let task = runtime.spawn(self.shared.clone().compactor());
            self.shared.tasks.lock().unwrap().push(task);
        }
    }

    fn current_revision(&self) -> Answer<u64> {
        let shared = self.shared.clone();
        self.spawn(async move { shared.current_revision().await })
    }

    fn compacted_revision(&self) -> Answer<u64> {
        let compacted = self.shared.compacted.load(Ordering::Acquire);
        Box::pin(std::future::ready(Ok(compacted)))
    }

    fn probe(&self) -> Answer<()> {
        let shared = self.shared.clone();
        self.spawn(async move {
            let req = PutRequest {
                key: shared.keys.meta(HEALTH).into_bytes(),
                value: b"ok".to_vec(),
                ..Default::default()
            };
            shared.client.put(req).await.map_err(|e| store_error(&e))?;
            Ok(())
        })
    }

    fn secret(&self, name: &str) -> Answer<Vec<u8>> {
        let shared = self.shared.clone();
        let key = shared.keys.meta(&format!("secret/{name}")).into_bytes();
        let name = name.to_owned();
        self.spawn(async move {
            let mut fresh = [0u8; 32];
            getrandom::getrandom(&mut fresh)
                .map_err(|e| StoreError::Internal(format!("no randomness: {e}")))?;
            // Made once for every replica: the first create wins, the others read it.
            let txn = if_absent(&key, put(&key, &fresh));
            // Repeating it reads what the first attempt made.
            let resp = shared.client.txn(txn, Retry::Always).await.map_err(|e| store_error(&e))?;
            if resp.succeeded {
                return Ok(fresh.to_vec());
            }
            first_kv(&resp)
                .map(|kv| kv.value.clone())
                .ok_or_else(|| StoreError::Internal(format!("secret {name} vanished")))
        })
    }

    fn barrier(&self) -> Answer<()> {
        // Waits on the caller's task, so a caller that gives up stops waiting; the round trips
        // run on the backend's runtime.
        if self.runtime.is_none() || self.shared.closed.load(Ordering::Acquire) {
            return Box::pin(async { Err(stopped()) });
        }
        Box::pin(self.shared.clone().fresh())
    }

    fn feed_ready(&self) -> Answer<()> {
        if self.runtime.is_none() || self.shared.closed.load(Ordering::Acquire) {
            return Box::pin(async { Err(stopped()) });
        }
        Box::pin(self.shared.clone().feed_ready())
    }

    fn metrics(&self) -> Vec<MetricSample> {
        let s = &self.shared;
        vec![
            MetricSample {
                name: WRITES_TOTAL,
                help: "Writes committed to etcd by this process.",
                kind: MetricKind::Counter,
                value: s.writes.load(Ordering::Relaxed),
            },
            MetricSample {
                name: CONFLICTS_TOTAL,
                help: "Writes etcd did not commit (failed comparisons and errors).",
                kind: MetricKind::Counter,
                value: s.failed_writes.load(Ordering::Relaxed),
            },
            MetricSample {
                name: REVISION_READS_TOTAL,
                help: "Reads of etcd's current revision for consistent reads (coalesced).",
                kind: MetricKind::Counter,
                value: s.fresh.revision_reads.load(Ordering::Relaxed),
            },
            MetricSample {
                name: BARRIERS_TOTAL,
                help: "Barrier writes closing a consistent read's wait (coalesced).",
                kind: MetricKind::Counter,
                value: s.fresh.barriers.load(Ordering::Relaxed),
            },
        ]
    }

    fn close(&self) -> Answer<()> {
        let shared = self.shared.clone();
        shared.closed.store(true, Ordering::Release);
        let Some(runtime) = &self.runtime else { return Box::pin(async { Ok(()) }) };
        let task = runtime.spawn(async move {
            // The writes handed over before finish and are answered; then the tasks stop.
            loop {
                let drained = shared.drained.notified();
                if shared.inflight.load(Ordering::Acquire) == 0 {
                    break;
                }
                drained.await;
            }
            // Another replica leads at once, not after the lease's TTL.
            shared.election.resign(&shared).await;
            for task in shared.tasks.lock().unwrap().drain(..) {
                task.abort();
            }
        });
        Box::pin(async move { task.await.map_err(|_| stopped()) })
    }
}

impl Drop for EtcdBackend {
    /// Stops the runtime without waiting (this may run on an async worker); its tasks, and with
    /// them the feed, are dropped, which ends every watch.
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Why a watch stream ended.
/// The live keys under the root at one revision (the newest), read in pages at it.
async fn load(client: &Client, keys: &Keys) -> Result<(Snapshot, u64), tonic::Status> {
    let root = keys.root().as_bytes().to_vec();
    let end = range_end(&root);
    let (mut snapshot, mut rev, mut start) = (Snapshot::default(), 0, root);
    loop {
        let req = RangeRequest {
            key: start,
            range_end: end.clone(),
            limit: LOAD_PAGE,
            revision: rev as i64,
            ..Default::default()
        };
        let page = client.range(req).await?;
        if rev == 0 {
            rev = header_revision(page.header.as_ref());
        }
        for kv in &page.kvs {
            if let Some(key) = keys.store_key(&kv.key) {
                snapshot.insert(&key, kv.mod_revision as u64, kv.create_revision as u64, &kv.value);
            }
        }
        match page.kvs.last() {
            Some(last) if page.more => start = after(&last.key),
            _ => return Ok((snapshot, rev)),
        }
    }
}

enum WatchEnd {
    /// Its start is below etcd's compacted revision.
    Compacted(u64),
    Failed(String),
}

fn canceled(resp: &pb::WatchResponse) -> WatchEnd {
    if resp.compact_revision > 0 {
        WatchEnd::Compacted(resp.compact_revision as u64)
    } else {
        WatchEnd::Failed(format!("etcd canceled the watch: {}", resp.cancel_reason))
    }
}

const HEALTH: &str = "health";
const COMPACTED: &str = "compacted";

fn put(key: &[u8], value: &[u8]) -> RequestOp {
    let put = PutRequest { key: key.to_vec(), value: value.to_vec(), ..Default::default() };
    RequestOp { request: Some(Request::RequestPut(put)) }
}

fn get(key: &[u8]) -> RequestOp {
    let range = RangeRequest { key: key.to_vec(), ..Default::default() };
    RequestOp { request: Some(Request::RequestRange(range)) }
}

/// A transaction that does `put` if `key` does not exist, else reads it.
fn if_absent(key: &[u8], put: RequestOp) -> TxnRequest {
    TxnRequest {
        compare: vec![Compare {
            result: CompareResult::Equal as i32,
            target: CompareTarget::Create as i32,
            key: key.to_vec(),
            target_union: Some(TargetUnion::CreateRevision(0)),
            ..Default::default()
        }],
        success: vec![put],
        failure: vec![get(key)],
    }
}

/// The key the Else branch's Get found, if any.
fn first_kv(resp: &TxnResponse) -> Option<&PbKv> {
    match resp.responses.first()?.response.as_ref()? {
        Response::ResponseRange(r) => r.kvs.first(),
        _ => None,
    }
}

/// The first key after `key` (kube's `key + "\x00"`).
fn after(key: &[u8]) -> Vec<u8> {
    let mut next = key.to_vec();
    next.push(0);
    next
}

fn header_revision(header: Option<&pb::ResponseHeader>) -> u64 {
    header.map_or(0, |h| h.revision.max(0) as u64)
}

fn parse_revision(value: &[u8]) -> u64 {
    std::str::from_utf8(value).ok().and_then(|v| v.trim().parse().ok()).unwrap_or(0)
}

fn stopped() -> StoreError {
    StoreError::Unavailable("the etcd backend has stopped".into())
}

#[cfg(test)]
mod tests;
