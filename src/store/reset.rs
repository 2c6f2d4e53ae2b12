//! Reset: the store put back to a state it held before (a server's fixtures), at a new revision,
//! with older history compacted, as a harness does between tests.
//!
//! It needs nothing of a backend beyond the contract: the difference between the live state and
//! the one to restore is written as ordinary compare-and-swap writes (handed over together, so
//! SQLite commits them in one group commit; etcd takes one transaction each), repeated while
//! another writer races it, then history is compacted to the revision reached, so a list or a
//! watch from any older resourceVersion is 410 Expired. Before the first write and after the
//! compaction the hub restarts as it does when the cache relists past a compaction (kube's
//! cacher `terminateAllWatchers`, AS pkg/storage/cacher/cacher.go `startCaching`): every open
//! watch ends after what it was sent before the reset, clients re-watch from their last
//! resourceVersion, get 410 and relist; the controllers and the simulation are told of the
//! loss and re-scan.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;

use futures_util::future::join_all;
use futures_util::FutureExt as _;
use serde_json::Value;

use super::{served, Store, StoreError};

/// A state to restore: every live key's object as persisted (no resourceVersion).
#[derive(Debug, Default)]
pub struct Saved {
    objects: BTreeMap<String, Value>,
    /// Per key, the revision whose state is known to equal the saved one (saved there, or put
    /// back there by a reset): a key still at it needs no comparison, so a reset of a few
    /// hundred unchanged objects reads no JSON.
    known: Mutex<HashMap<String, u64>>,
}

impl PartialEq for Saved {
    fn eq(&self, other: &Saved) -> bool {
        self.objects == other.objects
    }
}

impl Saved {
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }
}

/// What one reset did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResetStats {
    /// The revision the store was put back at; history below it is compacted.
    pub revision: u64,
    pub created: usize,
    pub updated: usize,
    pub deleted: usize,
}

/// Passes over the difference before a reset gives up on a writer that keeps racing it.
const PASSES: usize = 16;

impl Store {
    /// The live state, to `reset` to later.
    pub fn save(&self) -> Result<Saved, StoreError> {
        let (mut objects, mut known) = (BTreeMap::new(), HashMap::new());
        for (key, entry) in self.inner.cache.entries("") {
            objects.insert(key.clone(), persisted(&*entry.object()?)?);
            known.insert(key, entry.rev);
        }
        Ok(Saved { objects, known: Mutex::new(known) })
    }

    /// Puts the store back to `saved` at a new revision: keys not in it deleted, the others
    /// written back where they differ; then history up to that revision compacted and every
    /// watch ended (see the module documentation).
    pub async fn reset(&self, saved: &Saved) -> Result<ResetStats, StoreError> {
        let mut stats = ResetStats::default();
        // Watches end before the first write, so none is sent the reset's events: a client
        // re-watches from a resourceVersion older than the reset, which the compaction below
        // expires, and relists. The end is repeated once the reset is done, for watches opened
        // meanwhile.
        self.inner.hub.restart(self.inner.cache.revision());
        let mut known = saved.known.lock().unwrap_or_else(|e| e.into_inner()).clone();
        for _ in 0..PASSES {
            let live = self.inner.cache.entries("");
            let mut writes = Vec::new();
            for (key, entry) in &live {
                match saved.objects.get(key) {
                    None => {
                        stats.deleted += 1;
                        writes.push(self.delete(key, entry.rev).map(|r| (None, r)).boxed());
                    }
                    Some(_) if known.get(key) == Some(&entry.rev) => {}
                    Some(want) if persisted(&*entry.object()?)? != *want => {
                        stats.updated += 1;
                        let update = self.update(key, entry.rev, want.clone());
                        writes.push(update.map(move |r| (Some(key), r)).boxed());
                    }
                    Some(_) => {
                        known.insert(key.clone(), entry.rev);
                    }
                }
            }
            let live: BTreeSet<&str> = live.iter().map(|(k, _)| k.as_str()).collect();
            for (key, want) in &saved.objects {
                if !live.contains(key.as_str()) {
                    stats.created += 1;
                    writes
                        .push(self.create(key, want.clone()).map(move |r| (Some(key), r)).boxed());
                }
            }
            if writes.is_empty() {
                break;
            }
            for (key, result) in join_all(writes).await {
                match result {
                    Ok(written) => {
                        let rev = written.object.pointer("/metadata/resourceVersion");
                        let rev = rev.and_then(Value::as_str).and_then(|r| r.parse().ok());
                        if let (Some(key), Some(rev)) = (key, rev) {
                            known.insert(key.clone(), rev);
                        }
                    }
                    // Another writer got there first: the next pass reads what it left.
                    Err(
                        StoreError::Conflict { .. }
                        | StoreError::AlreadyExists
                        | StoreError::NotFound,
                    ) => {}
                    Err(e) => return Err(e),
                }
            }
        }
        *saved.known.lock().unwrap_or_else(|e| e.into_inner()) = known;
        let rev = self.inner.cache.revision();
        self.inner.backend.compact(rev).await?;
        self.inner.hub.restart(self.inner.cache.revision());
        stats.revision = rev;
        Ok(stats)
    }
}

/// An object as persisted: without its resourceVersion.
fn persisted(obj: &Value) -> Result<Value, StoreError> {
    let mut obj = obj.clone();
    served::clear(&mut obj)?;
    Ok(obj)
}
