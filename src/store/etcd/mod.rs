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
//!
//! Layout: `EtcdBackend` here is the handle the store holds. Under it, `engine` is the state the
//! tasks share and the feed, writes, reads and compaction over it; `election` and `fresh` work
//! over the engine's state; `client` is the connection with its failover, `keys` the key layout,
//! `messages` the requests and answers every part builds and reads, `pb` etcd's API.

mod client;
mod election;
mod engine;
mod fresh;
pub mod harness;
mod keys;
mod messages;
#[allow(clippy::all, clippy::pedantic)]
mod pb;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;

pub use client::EtcdConfig;
use client::{store_error, Retry};
use election::Election;
use engine::{stopped, Shared};
use fresh::Freshness;
use keys::{after, range_end, HEALTH};
use messages::{first_kv, header_revision, if_absent, put};
use pb::{PutRequest, RangeRequest};

use super::backend::{
    Answer, Backend, BackendFacts, Change, Feed, Fence, KeyValue, MetricKind, MetricSample, Range,
    Write,
};
use super::retention::RetentionConfig;
use super::{ListRequest, StoreError};

// Holds the implementation to the contract.
const _: fn(EtcdBackend) -> Box<dyn Backend> = |b| Box::new(b);

pub const WRITES_TOTAL: &str = "virt_apiserver_etcd_writes_total";
pub const CONFLICTS_TOTAL: &str = "virt_apiserver_etcd_failed_writes_total";
pub const REVISION_READS_TOTAL: &str = "virt_apiserver_etcd_revision_reads_total";
pub const BARRIERS_TOTAL: &str = "virt_apiserver_etcd_barriers_total";

/// The handle to the backend's runtime; dropping it stops every task.
pub struct EtcdBackend {
    shared: Arc<Shared>,
    /// Leadership among the processes serving the prefix (`election`).
    election: Arc<Election>,
    /// The coalesced round trips of consistent reads and readiness (`fresh`).
    fresh: Arc<Freshness>,
    runtime: Option<tokio::runtime::Runtime>,
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
        let barrier = shared.keys.meta(&format!("replicas/{}", fresh::replica_id()));
        let fresh = Arc::new(Freshness::new(barrier, runtime.handle().clone()));
        let election = Arc::new(Election::new());
        Ok(EtcdBackend { shared, election, fresh, runtime: Some(runtime) })
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
        let election = &self.election;
        if let (Some(runtime), true) = (&self.runtime, election.start()) {
            let task = runtime.spawn(election::campaign(self.shared.clone(), election.clone()));
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
        Box::pin(self.fresh.clone().fresh(self.shared.clone()))
    }

    fn feed_ready(&self) -> Answer<()> {
        if self.runtime.is_none() || self.shared.closed.load(Ordering::Acquire) {
            return Box::pin(async { Err(stopped()) });
        }
        Box::pin(self.fresh.clone().feed_ready(self.shared.clone()))
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
                value: self.fresh.revision_reads.load(Ordering::Relaxed),
            },
            MetricSample {
                name: BARRIERS_TOTAL,
                help: "Barrier writes closing a consistent read's wait (coalesced).",
                kind: MetricKind::Counter,
                value: self.fresh.barriers.load(Ordering::Relaxed),
            },
        ]
    }

    fn close(&self) -> Answer<()> {
        let (shared, election) = (self.shared.clone(), self.election.clone());
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
            election.resign(&shared).await;
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

#[cfg(test)]
mod tests;
