//! virt-api's admission webhooks, as data of a kind in the lifecycle file: its mutating
//! webhooks on create (`mutations`: what the migration-create mutator adds, say), and the
//! `warnings` its validating webhooks answer beside `allowed: true` on a create or update of the
//! object itself, which kube-apiserver passes on as `Warning` headers (apiserver
//! `admission/plugin/webhook/validating/dispatcher.go`, `warning.AddWarning`; the VM admitter,
//! `pkg/virt-api/webhooks/validating-webhook/admitters/vms-admitter.go`, is an example); and its
//! validating webhooks on a create through a subresource (`admission`: the pod eviction
//! admitter, `…/admitters/pod-eviction-admitter.go`), which read the related objects and may
//! write as virt-api before they answer.

use std::sync::Arc;

use lifecycle::{Ctx, Denial, Kind, Lifecycles, Operation, ResourceRef, Rng};
use serde_json::Value;

use super::related::related;
use super::validations;
use super::write::{self, Guard, Writer};
use crate::controllers::recorder::Recorder;
use crate::object::error::ApiError;
use crate::object::meta::{self, metadata_mut, now_rfc3339};
use crate::object::patch::apply_merge_patch;
use crate::object::subresource::Part;
use crate::registry::admission::Admitted;
use crate::registry::{Admission, Registry};
use crate::resource::ResourceInfo;

/// virt-api's webhooks, as the registry's admission calls them.
#[derive(Debug, Clone)]
pub struct Webhooks {
    program: Arc<Lifecycles>,
    /// Whether KubeVirt's controllers run to remove the finalizers the mutations add.
    controllers: bool,
    /// What the subresource webhooks read and write through (virt-api's clients).
    registry: Registry,
    recorder: Recorder,
}

/// The field manager of the webhooks' writes (virt-api's).
const MANAGER: &str = "virt-api";

impl Webhooks {
    /// The webhooks of `program` over `registry`; `controllers`: whether KubeVirt's
    /// controllers run.
    pub fn new(program: Arc<Lifecycles>, controllers: bool, registry: Registry) -> Webhooks {
        let recorder = Recorder::new(registry.clone(), MANAGER, MANAGER, "");
        Webhooks { program, controllers, registry, recorder }
    }

    /// The webhook on a create through `subresource` of `obj` (of `res`): its checks, its
    /// writes, its answer (KUBE-WORLD §9).
    async fn admit(
        &self,
        res: &'static ResourceInfo,
        subresource: &str,
        obj: &Value,
        body: &Value,
    ) -> Result<(), ApiError> {
        let r = ResourceRef { group: res.group.to_string(), kind: res.kind.to_string() };
        let Some((kind, admit)) =
            self.program.kind(&r).and_then(|k| Some((k, k.admission.get(subresource)?)))
        else {
            return Ok(());
        };
        let mut ctx = Ctx::new(kind, obj, now_rfc3339(), 1, Rng::new(0));
        ctx.named = related(&self.registry, (kind, None), res, obj, &ctx).await;
        ctx.named.insert("body".into(), Arc::new(body.clone()));
        ctx.bind(&admit.lets);
        let denied = |ctx: &Ctx<'_>, d: &Denial| {
            ApiError::webhook_denied(&admit.webhook, d.code, &ctx.text(&d.message))
        };
        for check in &admit.checks {
            if ctx.matches(&check.when) {
                return match &check.deny {
                    Some(d) if !check.allow => Err(denied(&ctx, d)),
                    _ => Ok(()),
                };
            }
        }
        // isDryRun: the request's (kube merged it into the options) or the options' own.
        let dry_run = lifecycle::action::dry_run(&body["deleteOptions"]);
        let writer =
            Writer { registry: &self.registry, manager: MANAGER, recorder: &self.recorder };
        for step in &admit.steps {
            let Some(planned) = write::plan(kind, res, obj, step, &ctx) else { continue };
            if let Err(e) = writer.apply(&planned, Guard::Request { dry_run }).await {
                let Some(on_error) = &admit.on_error else { return Err(e) };
                let message = e.to_status().message.unwrap_or_default();
                ctx.named.insert("error".into(), Arc::new(Value::String(message)));
                return Err(denied(&ctx, on_error));
            }
        }
        match &admit.deny {
            Some(d) => Err(denied(&ctx, d)),
            None => Ok(()),
        }
    }

    /// The lifecycle kind of `res`, when it has admission data.
    fn admitted_kind(&self, res: &ResourceInfo) -> Option<&Kind> {
        // On every write: found without allocating.
        self.program.kinds.iter().find(|k| {
            k.resource.group == res.group
                && k.resource.kind == res.kind
                && (!k.warnings.is_empty() || !k.mutations.is_empty() || !k.validations.is_empty())
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

    /// virt-api's validating webhooks on a create or update of the object itself: the first
    /// whose rule finds causes refuses, as kube stops at the first webhook that denies. None
    /// for a status write (KubeVirt's status admitters check other things).
    fn validate(
        &self,
        res: &ResourceInfo,
        part: Part,
        obj: &Value,
        update: bool,
    ) -> Result<(), ApiError> {
        if part != Part::Main {
            return Ok(());
        }
        let Some(kind) = self.admitted_kind(res) else { return Ok(()) };
        let op = if update { Operation::Update } else { Operation::Create };
        for v in kind.validations.iter().filter(|v| v.operations.contains(&op)) {
            let spec = v.at.split('.').fold(obj, |o, k| &o[k]);
            let causes = validations::causes(v.rule, spec, &v.at);
            if !causes.is_empty() {
                return Err(ApiError::webhook_invalid(&v.webhook, causes));
            }
        }
        Ok(())
    }

    fn admit_subresource_create<'a>(
        &'a self,
        res: &'static ResourceInfo,
        subresource: &'a str,
        obj: &'a Value,
        body: &'a Value,
    ) -> Admitted<'a> {
        // An evaluation context is not `Send`, an admission must be: the webhook runs on a
        // blocking thread of the runtime, as a webhook server runs beside kube-apiserver.
        let (me, sub, obj, body) =
            (self.clone(), subresource.to_string(), obj.clone(), body.clone());
        let handle = tokio::runtime::Handle::current();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || handle.block_on(me.admit(res, &sub, &obj, &body)))
                .await
                .map_err(|e| ApiError::Internal(format!("the admission webhook failed: {e}")))?
        })
    }
}
