//! The backend's engine: the state its tasks share on the backend's runtime (`Shared`) and what
//! they do with it: load the root and follow it into the feed, relisting after compaction, one
//! transaction per write with its ticket handed to the feed, reads and replays at a revision, and
//! kube's compaction. The module documentation of `etcd` says how each works.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;

use super::client::{self, is_compacted, is_future, store_error, Client, EtcdConfig, Retry};
use super::keys::{after, range_end, Keys, COMPACTED, HEALTH};
use super::messages::{
    canceled, fence_compare, fenced_out, first_kv, get, header_revision, parse_revision, put,
    WatchEnd,
};
use super::pb::compare::{CompareResult, CompareTarget, TargetUnion};
use super::pb::request_op::Request;
use super::pb::response_op::Response;
use super::pb::{
    self, event, CompactionRequest, Compare, DeleteRangeRequest, Event as PbEvent,
    KeyValue as PbKv, RangeRequest, RequestOp, TxnRequest, WatchCreateRequest, WatchRequest,
};
use crate::store::backend::{Change, Commit, Feed, Op, Snapshot, Ticket, Write};
use crate::store::retention::{Retention, RetentionConfig};
use crate::store::{EventType, StoreError};

/// Keys per Range page when loading the cache at start.
const LOAD_PAGE: i64 = 1000;
/// Between attempts to reopen a failed feed watch: doubled after each failure in a row.
const REWATCH_DELAY: Duration = Duration::from_millis(200);
const MAX_REWATCH_DELAY: Duration = Duration::from_secs(5);
/// How long a committed write waits for the feed to report it before its writer is told the
/// store is unavailable (the write stays committed).
const FEED_DEADLINE: Duration = Duration::from_secs(30);

/// What the backend's tasks share on its runtime: the connection and the key layout, the feed and
/// how far it has got, the compacted revision, the counters, and the tasks to stop at close.
pub struct Shared {
    pub client: Client,
    pub keys: Keys,
    feed: Feed,
    pending: Mutex<Pending>,
    /// The compacted revision, as `_virt/compacted` last said.
    pub compacted: AtomicU64,
    retention: RetentionConfig,
    pub closed: AtomicBool,
    /// Writes handed over and not yet answered, for `close`.
    pub inflight: AtomicU64,
    pub drained: Notify,
    pub writes: AtomicU64,
    pub failed_writes: AtomicU64,
    pub tasks: Mutex<Vec<JoinHandle<()>>>,
    /// The feed's progress, for consistent reads and readiness (`fresh`).
    pub progress: Progress,
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

/// How far the feed has got, for consistent reads and readiness (`fresh`).
pub struct Progress {
    /// The newest revision of the root the feed has applied (sent once the cache holds it).
    pub applied: watch::Sender<u64>,
    /// The feed's etcd watch is open.
    pub up: AtomicBool,
}

impl Progress {
    fn new(at: u64) -> Progress {
        Progress { applied: watch::channel(at).0, up: AtomicBool::new(false) }
    }

    /// The feed has applied every revision up to `rev` (the cache holds them).
    fn applied(&self, rev: u64) {
        self.applied.send_if_modified(|at| {
            let newer = rev > *at;
            *at = (*at).max(rev);
            newer
        });
    }

    /// The feed's watch opened (`true`) or failed (`false`).
    fn set_up(&self, up: bool) {
        self.up.store(up, Ordering::Release);
    }
}

impl Shared {
    /// Connects, loads the live state under the root into `feed` and reads the compacted
    /// revision; `follow` then keeps the feed going.
    pub async fn start(
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
            progress: Progress::new(rev),
        });
        let (compacted, _) = shared.compaction_key().await?;
        shared.compacted.store(compacted, Ordering::Release);
        shared.feed.load(rev, snapshot);
        Ok(shared)
    }

    /// The feed: one watch of the root, reopened from the last applied revision when it fails.
    pub async fn follow(self: Arc<Self>) {
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
        self.progress.applied(rev);
        Ok(rev)
    }

    async fn watch_root(&self, from: u64) -> Result<(), WatchEnd> {
        let root = self.keys.root().as_bytes().to_vec();
        let mut watch = self.open_watch(root, from, false).await?;
        self.progress.set_up(true);
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
        self.progress.set_up(false);
        Err(ended)
    }

    /// Opens one watch of `key`'s prefix from `from`, on a live member (kube's
    /// `WithRequireLeader`: a member cut off from its cluster ends the watch rather than leave it
    /// silent, and the caller reopens it on another).
    pub async fn open_watch(
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
        self.progress.applied(pending.applied);
    }

    /// One write: the single-key transaction, then the ticket handed to the feed (or answered
    /// here when the feed was first).
    pub async fn write(self: &Arc<Self>, write: Write) {
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
            txn.compare.push(fence_compare(fence));
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
                _ if fence.as_ref().is_some_and(|f| fenced_out(&resp, f)) => StoreError::NotLeader,
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

    pub async fn range(&self, req: RangeRequest) -> Result<pb::RangeResponse, StoreError> {
        match self.client.range(req).await {
            Ok(resp) => Ok(resp),
            Err(e) => Err(self.read_error(e).await),
        }
    }

    /// The newest revision, read from etcd (linearizable).
    pub async fn current_revision(&self) -> Result<u64, StoreError> {
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
    pub async fn compact(&self, rev: u64) -> Result<u64, StoreError> {
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
    pub async fn compactor(self: Arc<Self>) {
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

    pub async fn events_after(&self, prefix: &str, rev: u64) -> Result<Vec<Change>, StoreError> {
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

/// What every call answers once the backend's runtime has stopped.
pub fn stopped() -> StoreError {
    StoreError::Unavailable("the etcd backend has stopped".into())
}
