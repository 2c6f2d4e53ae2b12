//! The one optimistic-concurrency loop (kube's `GuaranteedUpdate`): read the current state, let
//! the caller decide what to write from it, write it on the condition that the object is still
//! at the revision read, and on a lost race read again and decide again. A caller's own
//! precondition (a resourceVersion, a UID) fails inside its decision, so it ends the loop with
//! its error instead of being retried.

use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use super::{Change, Object, Outcome, Registry};
use crate::object::error::ApiError;
use crate::object::stored_revision;
use crate::object::subresource::Part;
use crate::object::At;
use crate::resource::ResourceInfo;
use crate::store::{StoreError, Written};

/// How often a write is decided again after losing a race (kube retries without bound; a
/// bound keeps a hot key from holding a request forever).
const RETRIES: usize = 16;

/// How long a retry waits for the cache to hear of the write that won (kube's wait for a
/// resourceVersion the cache lacks).
const CATCH_UP: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether a write refused by the backend as too large is tried again without its
/// managedFields (`Registry::shedding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Shed {
    /// A client's create, update or non-apply patch, as kube's handlers.
    ManagedFields,
    /// Apply (its managedFields are what it works on), deletes and the like.
    Never,
}

/// What a write decided to do with the state it read.
#[derive(Debug)]
pub(crate) enum Next {
    /// Replace the object (conditional on the revision read).
    Update(Value),
    /// Create it (the key was absent; a lost race means someone else created it).
    Create(Value),
    /// Remove it (conditional on the revision read). The caller is told `answer`, or else the
    /// object's last state (with the delete's revision).
    Delete { answer: Option<Value> },
    /// Write nothing and answer this (a no-op, a repeated delete).
    Keep(Value),
    /// Write nothing and answer the current object (which must exist).
    Same,
}

impl Registry {
    /// Writes `obj` with `write`. kube's create, update and patch handlers (not apply) write an
    /// object etcd refused as too large once more without its managedFields, which can be
    /// large; only a backend with a request limit of its own can refuse one, so only there is
    /// the object kept for a second try.
    pub(crate) async fn shedding<F, Fut>(
        &self,
        shed: Shed,
        obj: Value,
        write: F,
    ) -> Result<Written, StoreError>
    where
        F: Fn(Value) -> Fut,
        Fut: Future<Output = Result<Written, StoreError>>,
    {
        let sheddable = shed == Shed::ManagedFields
            && self.store.facts().request_limit
            && obj.at("/metadata/managedFields").is_some();
        if !sheddable {
            return write(obj).await;
        }
        match write(obj.clone()).await {
            Err(StoreError::TooLarge(_)) => {
                let mut obj = obj;
                if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("managedFields");
                }
                write(obj).await
            }
            written => written,
        }
    }

    /// Runs `decide` on the current state of `key` (`None`: absent) and commits its decision,
    /// again on the new state whenever a concurrent write got in first. `dry_run` decides but
    /// writes nothing. `name` names the object in errors.
    pub(crate) async fn guaranteed_update(
        &self,
        res: &ResourceInfo,
        key: &str,
        name: &str,
        dry_run: bool,
        shed: Shed,
        mut decide: impl FnMut(Option<&Arc<Value>>) -> Result<Next, ApiError>,
    ) -> Result<Outcome, ApiError> {
        // On a shared engine the cache may not yet hold a write another replica acknowledged:
        // a decision that writes nothing (an error, a no-op, a dry run) is made again on a state
        // known to be current, as kube re-reads etcd when the cached state it decided on was
        // not current. A write needs no such care: its compare-and-swap tells.
        let mut current_known = !self.store.facts().external_commits;
        // An allocating kind decides with the addresses in use read under the lock, held until
        // the decision is committed (`registry::allocating`).
        let held = self.hold_addresses(res).await;
        for _ in 0..RETRIES {
            let current = self.store.get(key).await?;
            let rev = current.as_deref().map_or(0, stored_revision);
            let in_use = match &held {
                Some(_) => Some(self.addresses_in_use(res, Some(key)).await?),
                None => None,
            };
            let decided = decide(current.as_ref()).and_then(|next| match &in_use {
                Some(in_use) => self.allocate_next(res, current.as_deref(), next, in_use, dry_run),
                None => Ok(next),
            });
            let next = match decided {
                Ok(next) => next,
                Err(e) if current_known => return Err(e),
                Err(e) => {
                    // Should the wait fail, the decision's own answer stands.
                    if self.consistent().await.is_err() {
                        return Err(e);
                    }
                    current_known = true;
                    continue;
                }
            };
            if !current_known && (dry_run || matches!(next, Next::Keep(_) | Next::Same)) {
                self.consistent().await?;
                current_known = true;
                continue;
            }
            let (change, written) = match next {
                Next::Keep(v) => (Change::Unchanged, Ok(Object::Computed(v))),
                Next::Same => match &current {
                    Some(c) => (Change::Unchanged, Ok(Object::Current(c.clone()))),
                    None => (Change::Unchanged, Err(StoreError::NotFound)),
                },
                Next::Update(v) if dry_run => (Change::Updated, Ok(Object::Computed(v))),
                Next::Create(v) if dry_run => (Change::Created, Ok(Object::Computed(v))),
                Next::Delete { answer } if dry_run => {
                    let last = answer.or_else(|| current.as_deref().cloned()).unwrap_or_default();
                    (Change::Deleted, Ok(Object::Computed(last)))
                }
                Next::Update(v) => {
                    let written = self.shedding(shed, v, |v| self.store.update(key, rev, v));
                    (Change::Updated, written.await.map(Object::Stored))
                }
                Next::Create(v) => {
                    let written = self.shedding(shed, v, |v| self.store.create(key, v));
                    (Change::Created, written.await.map(Object::Stored))
                }
                Next::Delete { answer } => {
                    let gone = self.store.delete(key, rev).await;
                    let answer = |last| answer.map_or(Object::Stored(last), Object::Computed);
                    (Change::Deleted, gone.map(answer))
                }
            };
            match written {
                Ok(object) => return Ok(Outcome { change, object, warnings: Vec::new() }),
                // Someone wrote the key since it was read: decide again on what is there now.
                // On a shared engine the winner may be another process's write the cache has
                // not heard of yet: wait for it, or every retry would read the same stale state
                // (kube retries with the state etcd's failed transaction returned). On SQLite the
                // cache holds it already.
                Err(StoreError::Conflict { current_rev }) => {
                    let caught_up = self.store.wait_for_revision(current_rev);
                    let _ = tokio::time::timeout(CATCH_UP, caught_up).await;
                    continue;
                }
                Err(StoreError::AlreadyExists | StoreError::NotFound) => {
                    if self.store.facts().external_commits {
                        self.consistent().await?;
                    }
                    continue;
                }
                Err(e) => return Err(ApiError::from_store(e, res, name)),
            }
        }
        Err(ApiError::optimistic_lock(res, name))
    }
}

impl Registry {
    /// The webhooks' validation of what an update decided to write through `part` (a create
    /// when the key was absent), if any are registered.
    pub(crate) fn validated(
        &self,
        res: &ResourceInfo,
        part: Part,
        next: Result<Next, ApiError>,
    ) -> Result<Next, ApiError> {
        let next = next?;
        match &next {
            Next::Update(v) => self.admission_validate(res, part, v, true)?,
            Next::Create(v) => self.admission_validate(res, part, v, false)?,
            Next::Delete { .. } | Next::Keep(_) | Next::Same => {}
        }
        Ok(next)
    }
}
