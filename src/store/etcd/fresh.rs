//! Consistent reads across replicas (ETCD-BACKEND 7.4, kube's `waitUntilFreshAndBlock`): read
//! etcd's current revision R (a linearizable Range), then wait until the feed has applied R.
//!
//! R may belong to a key outside our root (another prefix on a shared etcd), which no event of
//! our watch will ever report; etcd 3.4.23 cannot be trusted with progress requests (T3). So a
//! wait that does not close within `GRACE` writes a barrier, `_virt/replicas/<id>`, under our
//! root: its revision is above R, and its own event proves the feed got there (option (c)).
//!
//! Both round trips are coalesced: a caller joins the next call, never one already under way
//! (that one may have read etcd before the caller's writes were acknowledged), so one call
//! serves everyone who asked while the previous one ran.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::{stopped, store_error, PutRequest, Shared};
use crate::store::StoreError;

/// How long a consistent read waits for the feed to reach R before it writes a barrier: longer
/// than the feed usually takes, so a busy but dedicated etcd rarely needs one.
const GRACE: Duration = Duration::from_millis(10);

/// How long `/readyz` gives the feed to show it has caught up.
const READY_DEADLINE: Duration = Duration::from_secs(1);

/// The feed's progress, and the coalesced round trips of consistent reads.
pub(super) struct Freshness {
    /// The newest revision of the root the feed has applied (sent once the cache holds it).
    applied: watch::Sender<u64>,
    /// The feed's etcd watch is open.
    up: AtomicBool,
    revision: Coalesced,
    barrier: Coalesced,
    /// This process's barrier key (`_virt/replicas/<id>`).
    key: Vec<u8>,
    /// The backend's runtime, where round trips run.
    runtime: tokio::runtime::Handle,
    /// Round trips made, for `/metrics`: revision reads and barrier writes.
    pub(super) revision_reads: AtomicU64,
    pub(super) barriers: AtomicU64,
}

impl Freshness {
    pub(super) fn new(at: u64, key: String, runtime: tokio::runtime::Handle) -> Freshness {
        Freshness {
            applied: watch::channel(at).0,
            up: AtomicBool::new(false),
            revision: Coalesced::default(),
            barrier: Coalesced::default(),
            key: key.into_bytes(),
            runtime,
            revision_reads: AtomicU64::new(0),
            barriers: AtomicU64::new(0),
        }
    }

    /// The feed has applied every revision up to `rev` (the cache holds them).
    pub(super) fn applied(&self, rev: u64) {
        self.applied.send_if_modified(|at| {
            let newer = rev > *at;
            *at = (*at).max(rev);
            newer
        });
    }

    /// The feed's watch opened (`true`) or failed (`false`).
    pub(super) fn set_up(&self, up: bool) {
        self.up.store(up, Ordering::Release);
    }
}

/// A random replica id for the barrier key: unique per process, whatever the host.
pub(super) fn replica_id() -> String {
    let mut id = [0u8; 8];
    let _ = getrandom::getrandom(&mut id);
    id.iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Clone, Copy)]
enum Call {
    Revision,
    Barrier,
}

/// One round trip shared by its callers; see the module documentation.
#[derive(Default)]
struct Coalesced {
    round: Mutex<Round>,
}

type Outcome = Option<Result<u64, StoreError>>;

#[derive(Default)]
struct Round {
    /// A call is under way.
    running: bool,
    /// The answer of the next call, which everyone arriving now shares.
    next: Option<watch::Sender<Outcome>>,
}

impl Shared {
    /// Resolves once the feed has applied every revision etcd had committed when it was called.
    pub(super) async fn fresh(self: Arc<Self>) -> Result<(), StoreError> {
        let mut applied = self.fresh.applied.subscribe();
        let target = self.coalesced(Call::Revision).await?;
        let wait = applied.wait_for(|&at| at >= target);
        if tokio::time::timeout(GRACE, wait).await.is_ok_and(|reached| reached.is_ok()) {
            return Ok(());
        }
        let barrier = self.coalesced(Call::Barrier).await?;
        let reached = applied.wait_for(|&at| at >= target.max(barrier)).await.is_ok();
        if reached {
            Ok(())
        } else {
            Err(stopped())
        }
    }

    /// `/readyz`'s feed check: the watch is open and catches up with etcd within a second.
    pub(super) async fn feed_ready(self: Arc<Self>) -> Result<(), StoreError> {
        if !self.fresh.up.load(Ordering::Acquire) {
            return Err(StoreError::Unavailable("the etcd watch is down".into()));
        }
        let at = *self.fresh.applied.borrow();
        match tokio::time::timeout(READY_DEADLINE, self.fresh()).await {
            Ok(done) => done,
            Err(_) => Err(StoreError::Unavailable(format!(
                "the etcd feed is behind: at revision {at} after {READY_DEADLINE:?}"
            ))),
        }
    }

    /// Joins the next `call`; see the module documentation.
    fn coalesced(
        self: &Arc<Self>,
        call: Call,
    ) -> impl std::future::Future<Output = Result<u64, StoreError>> + Send + 'static {
        let coalesced = match call {
            Call::Revision => &self.fresh.revision,
            Call::Barrier => &self.fresh.barrier,
        };
        let mut answer = {
            let mut round = coalesced.round.lock().unwrap();
            let answer = match &round.next {
                Some(next) => next.subscribe(),
                None => {
                    let (next, answer) = watch::channel(None);
                    round.next = Some(next);
                    answer
                }
            };
            if !round.running {
                round.running = true;
                self.fresh.runtime.spawn(self.clone().run(call));
            }
            answer
        };
        async move {
            // The runner gone without an answer: the runtime stopped.
            let got = answer.wait_for(Option::is_some).await.map_err(|_| stopped())?.clone();
            got.unwrap_or_else(|| Err(stopped()))
        }
    }

    /// Runs `call` for each round of callers until none is waiting.
    async fn run(self: Arc<Self>, call: Call) {
        let coalesced = match call {
            Call::Revision => &self.fresh.revision,
            Call::Barrier => &self.fresh.barrier,
        };
        loop {
            let next = {
                let mut round = coalesced.round.lock().unwrap();
                match round.next.take() {
                    Some(next) => next,
                    None => {
                        round.running = false;
                        return;
                    }
                }
            };
            let answer = match call {
                Call::Revision => {
                    self.fresh.revision_reads.fetch_add(1, Ordering::Relaxed);
                    self.current_revision().await
                }
                Call::Barrier => {
                    self.fresh.barriers.fetch_add(1, Ordering::Relaxed);
                    self.put_barrier().await
                }
            };
            next.send_replace(Some(answer));
        }
    }

    /// Writes this process's barrier key; answers its revision.
    async fn put_barrier(&self) -> Result<u64, StoreError> {
        let req = PutRequest {
            key: self.fresh.key.clone(),
            value: b"barrier".to_vec(),
            ..Default::default()
        };
        let resp = self.client.put(req).await.map_err(|e| store_error(&e))?;
        Ok(super::header_revision(resp.header.as_ref()))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::{BARRIERS_TOTAL, REVISION_READS_TOTAL};
    use crate::store::contract_tests::{Backing, EtcdPrefix};
    use crate::store::etcd::harness::TestEtcd;
    use crate::store::{EtcdConfig, Store, StoreConfig};

    fn count(s: &Store, name: &str) -> u64 {
        s.metrics().iter().find(|m| m.name == name).map_or(0, |m| m.value)
    }

    #[tokio::test]
    async fn a_replica_syncs_past_foreign_revisions_in_coalesced_round_trips() {
        let backing = EtcdPrefix::new();
        let (a, b) = (backing.store(), backing.store());
        let written = a.create("g/p/ns/x", json!({"metadata": {"name": "x"}})).await.unwrap();
        // Another prefix's write: etcd's revision moves past anything under ours.
        let etcd = TestEtcd::shared();
        let other = Store::open(StoreConfig {
            etcd: Some(EtcdConfig {
                servers: vec![etcd.url.clone()],
                prefix: etcd.unique_prefix(),
                ..Default::default()
            }),
            ..StoreConfig::new("")
        })
        .unwrap();
        other.create("g/p/ns/y", json!({"metadata": {"name": "y"}})).await.unwrap();

        let callers = 20;
        let synced = futures_util::future::join_all((0..callers).map(|_| b.sync())).await;
        for rev in synced {
            assert!(
                rev.unwrap()
                    >= written.object["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap()
                        .parse()
                        .unwrap()
            );
        }
        assert_eq!(b.get_raw("g/p/ns/x").map(|e| e.value), Some(written.value));
        let (reads, barriers) = (count(&b, REVISION_READS_TOTAL), count(&b, BARRIERS_TOTAL));
        assert!((1..callers).contains(&reads), "{reads} revision reads for {callers} callers");
        // The foreign revision is closed by a barrier, never left to time out; callers that ask
        // while one is under way join the next, so a loaded machine may see a few rounds.
        assert!((1..callers).contains(&barriers), "{barriers} barriers for {callers} callers");
    }
}
