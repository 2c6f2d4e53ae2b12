//! Where allocating writes meet the store: the kind marked `x-virt-resource.serviceAddresses`
//! is written under one lock per process, held from reading the addresses the stored objects
//! hold to committing the write, so two concurrent writes never take the same address
//! (kube's allocators serialize the same way, in memory, K8S
//! pkg/registry/core/service/allocator/bitmap.go). Deletes need no lock: the stored state
//! releases what a deleted object held.

use serde_json::Value;
use tokio::sync::MutexGuard;

use super::addresses::{self, Allocation, InUse};
use super::update::Next;
use super::Registry;
use crate::object::error::ApiError;
use crate::object::managed_fields::same_ignoring_times;
use crate::registry::keys::collection_prefix;
use crate::resource::ResourceInfo;
use crate::store::ListRequest;

impl Registry {
    /// The lock an allocating write holds until its commit is answered; `None` for other kinds.
    pub(crate) async fn hold_addresses(&self, res: &ResourceInfo) -> Option<MutexGuard<'_, ()>> {
        if !res.service_addresses {
            return None;
        }
        Some(self.addresses.lock.lock().await)
    }

    /// The addresses the stored objects of `res` hold, but for the one at `own` (whose own
    /// addresses an update keeps), read at the current revision.
    pub(crate) async fn addresses_in_use(
        &self,
        res: &ResourceInfo,
        own: Option<&str>,
    ) -> Result<InUse, ApiError> {
        // Another replica's commits (etcd) are waited for; multi-replica allocation still races
        // between the read and the commit.
        if self.store.facts().external_commits {
            self.consistent().await?;
        }
        let prefix = collection_prefix(res, None);
        let all = self.store.list(ListRequest { prefix, ..Default::default() }).await?;
        let mut in_use = InUse::default();
        for (key, obj) in &all.items {
            if Some(key.as_str()) != own {
                in_use.hold(obj);
            }
        }
        Ok(in_use)
    }

    /// A new object's addresses (`beginCreate`), taken from the free ones.
    pub(crate) fn allocate_create(
        &self,
        res: &ResourceInfo,
        obj: &mut Value,
        in_use: &InUse,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let ranges = &self.addresses.ranges;
        let rng = &mut addresses::random;
        Allocation { res, ranges, in_use, dry_run, rng }.create(obj)
    }

    /// What a decided write becomes once its addresses are allocated (`beginUpdate`): a create
    /// as above, an update that touches the spec with kube's update rules for them; a write
    /// the allocation made a no-op writes nothing.
    pub(crate) fn allocate_next(
        &self,
        res: &ResourceInfo,
        current: Option<&Value>,
        next: Next,
        in_use: &InUse,
        dry_run: bool,
    ) -> Result<Next, ApiError> {
        match (next, current) {
            (Next::Create(mut obj), _) => {
                self.allocate_create(res, &mut obj, in_use, dry_run)?;
                Ok(Next::Create(obj))
            }
            (Next::Update(mut obj), Some(current)) if obj.get("spec") != current.get("spec") => {
                let ranges = &self.addresses.ranges;
                let rng = &mut addresses::random;
                Allocation { res, ranges, in_use, dry_run, rng }.update(current, &mut obj)?;
                if same_ignoring_times(&obj, current) {
                    return Ok(Next::Keep(current.clone()));
                }
                Ok(Next::Update(obj))
            }
            (next, _) => Ok(next),
        }
    }
}
