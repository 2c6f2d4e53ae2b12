//! Reset: the store put back to a state it held before (a server's fixtures), at a new revision,
//! with older history compacted, as a harness does between tests.
//!
//! It needs nothing of a backend beyond the contract: the difference between the live state and
//! the one to restore is written as ordinary compare-and-swap writes (handed over together, so
//! SQLite commits them in one group commit; etcd takes one transaction each), repeated while
//! another writer races it, then history is compacted to the revision reached, so a list or a
//! watch from any older resourceVersion is 410 Expired. Last, the hub restarts as it does when
//! the cache relists past a compaction (kube's cacher `terminateAllWatchers`, AS
//! pkg/storage/cacher/cacher.go `startCaching`): every open watch ends after what it was
//! already sent, clients re-watch from their last resourceVersion, get 410 and relist; the
//! controllers and the simulation are told of the loss and re-scan.

use std::collections::{BTreeMap, BTreeSet};

use futures_util::future::join_all;
use futures_util::FutureExt as _;
use serde_json::Value;

use super::{served, Store, StoreError};

/// A state to restore: every live key's object as persisted (no resourceVersion).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Saved {
    objects: BTreeMap<String, Value>,
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
        let mut objects = BTreeMap::new();
        for (key, entry) in self.inner.cache.entries("") {
            objects.insert(key, persisted(&*entry.object()?)?);
        }
        Ok(Saved { objects })
    }

    /// Puts the store back to `saved` at a new revision: keys not in it deleted, the others
    /// written back where they differ; then history up to that revision compacted and every
    /// watch ended (see the module documentation).
    pub async fn reset(&self, saved: &Saved) -> Result<ResetStats, StoreError> {
        let mut stats = ResetStats::default();
        for _ in 0..PASSES {
            let live = self.inner.cache.entries("");
            let mut writes = Vec::new();
            for (key, entry) in &live {
                match saved.objects.get(key) {
                    None => {
                        stats.deleted += 1;
                        writes.push(self.delete(key, entry.rev).boxed());
                    }
                    Some(want) if persisted(&*entry.object()?)? != *want => {
                        stats.updated += 1;
                        writes.push(self.update(key, entry.rev, want.clone()).boxed());
                    }
                    Some(_) => {}
                }
            }
            let live: BTreeSet<&str> = live.iter().map(|(k, _)| k.as_str()).collect();
            for (key, want) in &saved.objects {
                if !live.contains(key.as_str()) {
                    stats.created += 1;
                    writes.push(self.create(key, want.clone()).boxed());
                }
            }
            if writes.is_empty() {
                break;
            }
            for result in join_all(writes).await {
                match result {
                    // Another writer got there first: the next pass reads what it left.
                    Ok(_)
                    | Err(
                        StoreError::Conflict { .. }
                        | StoreError::AlreadyExists
                        | StoreError::NotFound,
                    ) => {}
                    Err(e) => return Err(e),
                }
            }
        }
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
