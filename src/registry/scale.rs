//! Writes through `…/scale` (AX registry/customresource/etcd.go): the Scale a client gives, or
//! the current Scale patched, becomes a main-endpoint write of the one field
//! `x-virt-resource.scale` names, owned under the `scale` subresource. Conditional only when the
//! Scale carries a resourceVersion the client chose.

use serde_json::Value;

use super::strategy::{prepare_update, Ownership};
use super::update::Shed;
use super::{Outcome, Registry, Target};
use crate::object::error::ApiError;
use crate::object::meta_str;
use crate::object::patch::NonApplyPatch;
use crate::object::subresource::{
    scale_info, set_nested, spec_replicas_of, to_scale, Part, UNSET_REPLICAS,
};
use crate::registry::keys::object_key;
use crate::resource::ResourceInfo;

/// The Scale a write asks for: given whole, or as a patch to the current one.
pub enum ScaleChange {
    Replace(Value),
    Patch(NonApplyPatch),
}

impl Registry {
    /// The Scale view of the object `target` names.
    pub async fn get_scale(
        &self,
        res: &'static ResourceInfo,
        target: &Target,
    ) -> Result<Value, ApiError> {
        let info = scale_info(res)?;
        self.consistent().await?;
        let obj = self.get(res, target.ns(), target.name()).await?;
        Ok(to_scale(info, &obj)?.0)
    }

    /// Writes the replica count `change` asks for into the object `target` names; answers the
    /// object (its Scale view is `subresource::to_scale`).
    pub async fn write_scale(
        &self,
        res: &'static ResourceInfo,
        target: &Target,
        change: &ScaleChange,
        dry_run: bool,
        manager: &str,
    ) -> Result<Outcome, ApiError> {
        let info = scale_info(res)?;
        let name = target.name();
        let key = object_key(res, target.ns(), name);
        self.guaranteed_update(res, &key, name, dry_run, Shed::ManagedFields, |current| {
            let current = current.ok_or_else(|| ApiError::not_found(res, name))?;
            let current_rv = meta_str(current, "resourceVersion");
            let (mut scale, spec_replicas) = to_scale(info, current)?;
            let patching = matches!(change, ScaleChange::Patch(_));
            match change {
                ScaleChange::Replace(body) => scale = body.clone(),
                ScaleChange::Patch(patch) => {
                    if spec_replicas.is_none() {
                        scale["spec"]["replicas"] = Value::from(UNSET_REPLICAS);
                    }
                    // kube's Scale declares no patch strategies: a strategic merge patch
                    // of it merges maps and replaces lists, as it does without a schema.
                    patch.apply(&mut scale, None)?;
                    if !scale.is_object() {
                        return Err(ApiError::PatchRejected);
                    }
                }
            }
            let replicas = spec_replicas_of(&scale, patching)?;
            if replicas == UNSET_REPLICAS {
                return Err(ApiError::bad_request(format!(
                    "the spec replicas field {:?} cannot be empty",
                    info.spec_replicas_path
                )));
            }
            // A resourceVersion in the Scale is a precondition; one a patch left alone is the
            // current one, so a lost race is decided again.
            let rv = meta_str(&scale, "resourceVersion");
            if !rv.is_empty() && rv != current_rv {
                return Err(ApiError::optimistic_lock(res, name));
            }
            let mut obj = (**current).clone();
            set_nested(&mut obj, info.spec_replicas_path, Value::from(replicas))?;
            let owner = Ownership::Update { manager, subresource: "scale" };
            prepare_update(res, current, obj, Part::Main, owner)
        })
        .await
    }
}
