//! virt-api's admission webhooks, as data of a kind in the lifecycle file: its mutating
//! webhooks on create (`mutations`: what the migration-create mutator adds, say), and the
//! `warnings` its validating webhooks answer beside `allowed: true` on a create or update of the
//! object itself, which kube-apiserver passes on as `Warning` headers (apiserver
//! `admission/plugin/webhook/validating/dispatcher.go`, `warning.AddWarning`; the VM admitter,
//! `pkg/virt-api/webhooks/validating-webhook/admitters/vms-admitter.go`, is an example).

use std::sync::Arc;

use lifecycle::{Ctx, Kind, Lifecycles, Rng};
use serde_json::Value;

use crate::object::error::ApiError;
use crate::object::meta::{self, metadata_mut, now_rfc3339};
use crate::object::patch::apply_merge_patch;
use crate::object::subresource::Part;
use crate::registry::Admission;
use crate::resource::ResourceInfo;

/// virt-api's webhooks, as the registry's admission calls them.
#[derive(Debug)]
pub struct Webhooks {
    program: Arc<Lifecycles>,
    /// Whether KubeVirt's controllers run to remove the finalizers the mutations add.
    controllers: bool,
}

impl Webhooks {
    /// The webhooks of `program`; `controllers`: whether KubeVirt's controllers run.
    pub fn new(program: Arc<Lifecycles>, controllers: bool) -> Webhooks {
        Webhooks { program, controllers }
    }

    /// The lifecycle kind of `res`, when it has admission data.
    fn admitted_kind(&self, res: &ResourceInfo) -> Option<&Kind> {
        // On every write: found without allocating.
        self.program.kinds.iter().find(|k| {
            k.resource.group == res.group
                && k.resource.kind == res.kind
                && (!k.warnings.is_empty() || !k.mutations.is_empty())
        })
    }
}

impl Admission for Webhooks {
    /// virt-api's mutating webhooks on a create of `obj` (decoded, in its namespace, not yet
    /// validated): kube calls them before the strategy validates the object. Their finalizers
    /// are the controllers' to remove, so they are added only while the controllers run.
    fn mutate_on_create(&self, res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
        let Some(kind) = self.admitted_kind(res).filter(|k| !k.mutations.is_empty()) else {
            return Ok(());
        };
        for m in &kind.mutations {
            let snapshot = obj.clone();
            let ctx = Ctx::new(kind, &snapshot, now_rfc3339(), 1, Rng::new(0));
            if m.when.as_ref().is_some_and(|w| !ctx.matches(w)) {
                continue;
            }
            if let Some(merge) = &m.merge {
                apply_merge_patch(obj, &ctx.render(merge));
            }
            if !m.finalizers.is_empty() && self.controllers {
                meta::edit_finalizers(metadata_mut(obj)?, &m.finalizers, &[]);
            }
        }
        Ok(())
    }

    /// The warnings virt-api's webhook gives a write of `obj` through `part` of `res`: none
    /// for a status write, which KubeVirt admits separately and without them.
    fn warnings(&self, res: &ResourceInfo, part: Part, obj: &Value) -> Vec<String> {
        if part != Part::Main {
            return Vec::new();
        }
        let Some(kind) = self.admitted_kind(res).filter(|k| !k.warnings.is_empty()) else {
            return Vec::new();
        };
        // The webhook reads the object it is sent, nothing related.
        let ctx = Ctx::new(kind, obj, now_rfc3339(), 1, Rng::new(0));
        kind.warnings
            .iter()
            .filter(|w| ctx.matches(&w.when))
            .map(|w| ctx.text(&w.message))
            .collect()
    }
}
