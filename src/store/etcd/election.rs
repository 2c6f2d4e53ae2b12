//! Leader election among the processes serving one prefix: etcd's `concurrency.Election`.
//!
//! A campaign grants a lease (`LEASE_TTL`, kept alive every third of it), puts
//! `_virt/leader/<lease hex>` with it if absent, and leads once no key under `_virt/leader/` has
//! an earlier create revision: a Range of the prefix, then a watch of it from the Range's
//! revision, checked again at each change, so a predecessor's delete (its resign or its lease's
//! expiry) is never missed. Leading ends the moment the keepalive answers that the lease is
//! gone, when two renewals in a row go unanswered (etcd's clock cannot have expired the lease
//! before this process's), or when the key is gone; the campaign then revokes its lease and
//! starts again. A keepalive stream or leader watch whose etcd member went away is opened again
//! on another member within that deadline: the lease is the cluster's, not the member's.
//!
//! **Fencing.** The leadership's `Fence` is the key and its create revision. A fenced write's
//! transaction also compares `CreateRevision(key) == rev` (`messages::fence_compare`): a deposed
//! leader's key is deleted (its lease revoked or expired), so its writes fail whatever it
//! believes, and a new key of the same lease would have another revision.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::{timeout_at, Instant};

use super::client::{store_error, Retry};
use super::engine::Shared;
use super::keys;
use super::messages::{first_kv, header_revision, if_absent, WatchEnd};
use super::pb::request_op::Request;
use super::pb::{
    LeaseGrantRequest, LeaseKeepAliveRequest, LeaseRevokeRequest, PutRequest, RangeRequest,
    RequestOp,
};
use crate::store::backend::Fence;
use crate::store::StoreError;

/// How long a leader outlives its last renewal: kube's leases are 15 s; etcd's sessions 60 s.
pub const LEASE_TTL: Duration = Duration::from_secs(10);
/// Before campaigning again after a term ended or a campaign failed.
const RETRY: Duration = Duration::from_secs(1);
/// A revoke at close must not hold the shutdown.
const REVOKE_TIMEOUT: Duration = Duration::from_secs(2);

/// This process's standing, shared by the campaign and `leadership`'s callers.
pub struct Election {
    leader: watch::Sender<Option<Fence>>,
    started: AtomicBool,
    /// The lease the campaign holds (0: none), revoked at close.
    lease: AtomicI64,
}

impl Election {
    pub fn new() -> Election {
        let (leader, _) = watch::channel(None);
        Election { leader, started: AtomicBool::new(false), lease: AtomicI64::new(0) }
    }

    pub fn subscribe(&self) -> watch::Receiver<Option<Fence>> {
        self.leader.subscribe()
    }

    /// True for the first caller only, who starts the campaign.
    pub fn start(&self) -> bool {
        !self.started.swap(true, Ordering::AcqRel)
    }

    fn set(&self, now: Option<Fence>) {
        self.leader.send_if_modified(|held| {
            let changed = *held != now;
            *held = now;
            changed
        });
    }

    /// Stops leading and gives the lease back, so another process leads at once rather than
    /// after the TTL (a clean shutdown).
    pub async fn resign(&self, shared: &Shared) {
        self.set(None);
        let lease = self.lease.swap(0, Ordering::AcqRel);
        if lease != 0 {
            revoke(shared, lease).await;
        }
    }
}

/// `election`'s campaign, for as long as the backend runs: a term, then after it ends another.
pub async fn campaign(shared: Arc<Shared>, election: Arc<Election>) {
    loop {
        let ended = term(&shared, &election).await;
        let was_leading = election.leader.borrow().is_some();
        election.set(None);
        let closed = shared.closed.load(Ordering::Acquire);
        match ended {
            // A closed backend (`close` resigned) runs no other term.
            _ if closed => {}
            Err(e) if was_leading => log::warn!("this server no longer leads: {e}"),
            Err(e) => log::warn!("leader election: {e}; campaigning again"),
            Ok(()) => {}
        }
        let lease = election.lease.swap(0, Ordering::AcqRel);
        if lease != 0 {
            revoke(&shared, lease).await;
        }
        if closed {
            return;
        }
        tokio::time::sleep(RETRY).await;
    }
}

/// One lease's campaign and, once it leads, its term; ends with why it stopped.
///
/// The keepalive stream and the leader watch live on one etcd member each; when that member
/// goes away they are opened again on another (the lease and the key are the cluster's), as
/// long as the lease is surely still alive: every wait is bounded by the renewal deadline.
async fn term(shared: &Shared, election: &Election) -> Result<(), String> {
    let client = &shared.client;
    let grant = LeaseGrantRequest { ttl: LEASE_TTL.as_secs() as i64, id: 0 };
    let asked = Instant::now();
    let lease = client.lease_grant(grant).await.map_err(|e| e.message().to_owned())?.id;
    election.lease.store(lease, Ordering::Release);
    let prefix = shared.keys.meta("leader/");
    let key = format!("{prefix}{lease:x}");
    let rev = put_if_absent(shared, &key, lease).await.map_err(|e| e.to_string())?;
    let fence = Fence { key: key.clone(), rev };

    // When each unanswered renewal was sent; etcd's expiry is at least TTL after the send of
    // the last one answered.
    let mut sent: VecDeque<Instant> = VecDeque::from([Instant::now()]);
    let mut renewed = asked;
    // Two renewals in a row unanswered: stop before etcd's clock can end the lease.
    let deadline = |renewed: Instant| renewed + LEASE_TTL * 2 / 3;
    let late =
        |renewed: Instant| format!("lease {lease:x} not renewed since {:?}", renewed.elapsed());
    let mut renewals = timeout_at(deadline(renewed), client.keep_alive(lease))
        .await
        .map_err(|_| late(renewed))?
        .map_err(|e| format!("keepalive: {}", e.message()))?;
    let period = LEASE_TTL / 3;
    let mut tick = tokio::time::interval_at(Instant::now() + period, period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let watched = async {
            let (leads, from) = standing(shared, &prefix, &key).await?;
            let changes = shared.open_watch(prefix.clone().into_bytes(), from + 1, false).await;
            let changes = changes.map_err(|e| match e {
                WatchEnd::Compacted(c) => format!("the leader watch is compacted at {c}"),
                WatchEnd::Failed(e) => e,
            })?;
            Ok::<_, String>((leads, changes))
        };
        let (leads, mut changes) =
            timeout_at(deadline(renewed), watched).await.map_err(|_| late(renewed))??;
        election.set(leads.then(|| fence.clone()));
        loop {
            // The keepalive's member went away: renew through another.
            let mut broken = None;
            tokio::select! {
                _ = tick.tick() => {
                    // Never wait here: the deadline below must keep running. A renewal still
                    // queued is as good as this one.
                    match renewals.requests.try_send(LeaseKeepAliveRequest { id: lease }) {
                        Ok(()) => sent.push_back(Instant::now()),
                        Err(mpsc::error::TrySendError::Full(_)) => {}
                        Err(mpsc::error::TrySendError::Closed(_)) => {
                            broken = Some("closed".to_owned());
                        }
                    }
                }
                answer = renewals.message() => match answer {
                    Ok(Some(answer)) if answer.ttl > 0 => {
                        renewed = sent.pop_front().unwrap_or(renewed);
                    }
                    Ok(Some(_)) => return Err(format!("lease {lease:x} expired")),
                    Ok(None) => broken = Some("closed by etcd".to_owned()),
                    Err(e) => broken = Some(e.message().to_owned()),
                },
                change = changes.message() => match change {
                    Ok(Some(resp)) if resp.canceled => {
                        return Err(format!("etcd canceled the leader watch: {}", resp.cancel_reason));
                    }
                    Ok(Some(resp)) if !resp.events.is_empty() => break,
                    Ok(Some(_)) => {}
                    // The member went away: read the standing again and watch from there.
                    Ok(None) | Err(_) => break,
                },
                _ = tokio::time::sleep_until(deadline(renewed)) => return Err(late(renewed)),
            }
            if let Some(why) = broken {
                log::info!("the lease keepalive stream ended ({why}); reopening it");
                // The renewals sent on it are lost; the reopened stream sends one.
                sent.clear();
                sent.push_back(Instant::now());
                renewals = timeout_at(deadline(renewed), client.keep_alive(lease))
                    .await
                    .map_err(|_| late(renewed))?
                    .map_err(|e| format!("keepalive: {}", e.message()))?;
            }
        }
    }
}

/// Puts the campaign key with the lease unless it exists; answers its create revision.
async fn put_if_absent(shared: &Shared, key: &str, lease: i64) -> Result<u64, StoreError> {
    let k = key.as_bytes().to_vec();
    let value = format!("pid {}", std::process::id()).into_bytes();
    let put = PutRequest { key: k.clone(), value, lease, ..Default::default() };
    let txn = if_absent(&k, RequestOp { request: Some(Request::RequestPut(put)) });
    // Repeating it after an unknown outcome finds the key the first attempt put.
    let resp = shared.client.txn(txn, Retry::Always).await.map_err(|e| store_error(&e))?;
    if resp.succeeded {
        return Ok(header_revision(resp.header.as_ref()));
    }
    first_kv(&resp)
        .map(|kv| kv.create_revision as u64)
        .ok_or_else(|| StoreError::Internal(format!("campaign key {key} vanished")))
}

/// Whether `key` is the earliest campaign key under `prefix`, and the revision read at; an
/// error when it is gone (its lease ended).
async fn standing(shared: &Shared, prefix: &str, key: &str) -> Result<(bool, u64), String> {
    let req = RangeRequest {
        key: prefix.as_bytes().to_vec(),
        range_end: keys::range_end(prefix.as_bytes()),
        keys_only: true,
        ..Default::default()
    };
    let resp = shared.client.range(req).await.map_err(|e| e.message().to_owned())?;
    let from = header_revision(resp.header.as_ref());
    if !resp.kvs.iter().any(|kv| kv.key == key.as_bytes()) {
        return Err(format!("the campaign key {key} is gone"));
    }
    let first = resp.kvs.iter().min_by_key(|kv| kv.create_revision);
    Ok((first.is_some_and(|kv| kv.key == key.as_bytes()), from))
}

async fn revoke(shared: &Shared, lease: i64) {
    let req = LeaseRevokeRequest { id: lease };
    if let Ok(Err(e)) = tokio::time::timeout(REVOKE_TIMEOUT, shared.client.lease_revoke(req)).await
    {
        log::debug!("revoking lease {lease:x}: {}", e.message());
    }
}
