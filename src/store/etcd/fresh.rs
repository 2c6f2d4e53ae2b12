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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::client::store_error;
use super::engine::{stopped, Shared};
use super::messages::header_revision;
use super::pb::PutRequest;
use crate::store::StoreError;

/// How long a consistent read waits for the feed to reach R before it writes a barrier: longer
/// than the feed usually takes, so a busy but dedicated etcd rarely needs one.
const GRACE: Duration = Duration::from_millis(10);

/// How long `/readyz` gives the feed to show it has caught up.
const READY_DEADLINE: Duration = Duration::from_secs(1);

/// The coalesced round trips of consistent reads; the feed's progress they wait on is the
/// engine's (`Shared::progress`).
pub(super) struct Freshness {
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
    pub(super) fn new(key: String, runtime: tokio::runtime::Handle) -> Freshness {
        Freshness {
            revision: Coalesced::default(),
            barrier: Coalesced::default(),
            key: key.into_bytes(),
            runtime,
            revision_reads: AtomicU64::new(0),
            barriers: AtomicU64::new(0),
        }
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

impl Freshness {
    /// Resolves once `shared`'s feed has applied every revision etcd had committed when it was
    /// called.
    pub(super) async fn fresh(self: Arc<Self>, shared: Arc<Shared>) -> Result<(), StoreError> {
        let mut applied = shared.progress.applied.subscribe();
        let target = self.coalesced(&shared, Call::Revision).await?;
        let wait = applied.wait_for(|&at| at >= target);
        if tokio::time::timeout(GRACE, wait).await.is_ok_and(|reached| reached.is_ok()) {
            return Ok(());
        }
        let barrier = self.coalesced(&shared, Call::Barrier).await?;
        let reached = applied.wait_for(|&at| at >= target.max(barrier)).await.is_ok();
        if reached {
            Ok(())
        } else {
            Err(stopped())
        }
    }

    /// `/readyz`'s feed check: the watch is open and catches up with etcd within a second.
    pub(super) async fn feed_ready(self: Arc<Self>, shared: Arc<Shared>) -> Result<(), StoreError> {
        if !shared.progress.up.load(Ordering::Acquire) {
            return Err(StoreError::Unavailable("the etcd watch is down".into()));
        }
        let at = *shared.progress.applied.borrow();
        match tokio::time::timeout(READY_DEADLINE, self.fresh(shared)).await {
            Ok(done) => done,
            Err(_) => Err(StoreError::Unavailable(format!(
                "the etcd feed is behind: at revision {at} after {READY_DEADLINE:?}"
            ))),
        }
    }

    /// Joins the next `call`; see the module documentation.
    fn coalesced(
        self: &Arc<Self>,
        shared: &Arc<Shared>,
        call: Call,
    ) -> impl std::future::Future<Output = Result<u64, StoreError>> + Send + 'static {
        let coalesced = match call {
            Call::Revision => &self.revision,
            Call::Barrier => &self.barrier,
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
                self.runtime.spawn(self.clone().run(shared.clone(), call));
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
    async fn run(self: Arc<Self>, shared: Arc<Shared>, call: Call) {
        let coalesced = match call {
            Call::Revision => &self.revision,
            Call::Barrier => &self.barrier,
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
                    self.revision_reads.fetch_add(1, Ordering::Relaxed);
                    shared.current_revision().await
                }
                Call::Barrier => {
                    self.barriers.fetch_add(1, Ordering::Relaxed);
                    self.put_barrier(&shared).await
                }
            };
            next.send_replace(Some(answer));
        }
    }

    /// Writes this process's barrier key; answers its revision.
    async fn put_barrier(&self, shared: &Shared) -> Result<u64, StoreError> {
        let req =
            PutRequest { key: self.key.clone(), value: b"barrier".to_vec(), ..Default::default() };
        let resp = shared.client.put(req).await.map_err(|e| store_error(&e))?;
        Ok(header_revision(resp.header.as_ref()))
    }
}
