//! The one executor of the lifecycle file's writes (`lifecycle::Write`), shared by the
//! simulated controllers' stages and virt-api's actions: it finds the object a write is to (the
//! object's own, or the related object `of` names), renders the write and makes it through the
//! registry's verbs as its field manager. The two callers differ only in how a write is guarded:
//!
//! - a controller's (`Guard::Revision`) writes only while its target is still at the revision
//!   its plan read (else `Written::Stale`: the plan is decided again), validates strictly and
//!   leaves an object that exists alone;
//! - virt-api's (`Guard::Request`) writes as a client request: dry-run as asked, unknown fields
//!   ignored, errors returned as they come (the action words them).

use std::cell::Cell;

use lifecycle::{Ctx, Kind, Write};
use serde_json::Value;

use super::related::served;
use crate::controllers::recorder::{ObjectRef, Recorder, Severity};
use crate::object::error::ApiError;
use crate::object::meta::{self, metadata_mut};
use crate::object::patch::NonApplyPatch;
use crate::object::subresource::Part;
use crate::object::validation::{FieldValidation, Via};
use crate::object::{meta_str, stored_revision};
use crate::registry::keys::object_key;
use crate::registry::{Change, DeleteOptions, Registry, Target, WriteOptions};
use crate::resource::ResourceInfo;

/// How a write is guarded (see the module's doc).
#[derive(Debug, Clone, Copy)]
pub enum Guard {
    /// A controller's: only while the target is at this revision.
    Revision(u64),
    /// virt-api's: as a request, a dry run or not.
    Request { dry_run: bool },
}

/// What one write did to its target.
#[derive(Debug, PartialEq, Eq)]
pub enum Written {
    /// Wrote it: its new revision.
    Rev(u64),
    /// Nothing to write, or a write to another object (a create, an Event).
    Nothing,
    /// The target moved on since the plan read it.
    Stale,
}

/// Who writes: the registry, as which field manager, recording Events with which recorder.
pub struct Writer<'a> {
    pub registry: &'a Registry,
    pub manager: &'a str,
    pub recorder: &'a Recorder,
}

/// The object `write` is to, of `kind` (served as `res`) whose object is `obj`, with its served
/// kind: `obj` itself, or the related object `of` names (a list's first element); `None` when
/// that is not there (nothing to do to it).
pub fn target<'v>(
    kind: &Kind,
    res: &'static ResourceInfo,
    obj: &'v Value,
    write: &Write,
    ctx: &'v Ctx<'_>,
) -> Option<(&'v Value, &'static ResourceInfo)> {
    let Some(name) = write.of() else { return Some((obj, res)) };
    let rel = kind.related.get(name).and_then(|r| served(&r.resource))?;
    match ctx.named.get(name) {
        Some(Value::Array(items)) => items.first().map(|o| (o, rel)),
        Some(o) => Some((o, rel)),
        None => None,
    }
}

impl Writer<'_> {
    /// Makes `write` to `target` (of `res`; from `target()`), rendered in `ctx`.
    pub async fn write(
        &self,
        write: &Write,
        ctx: &Ctx<'_>,
        (target, res): (&Value, &'static ResourceInfo),
        guard: Guard,
    ) -> Result<Written, ApiError> {
        let (ns, name) = (meta_str(target, "namespace"), meta_str(target, "name"));
        let part = match write.subresource() {
            Some("status") if res.status_subresource => Part::Status,
            _ => Part::Main,
        };
        match write {
            Write::Patch { merge, .. } => {
                let patch = ctx.render(merge);
                match guard {
                    Guard::Revision(rev) => {
                        self.update(res, (ns, name, part), rev, |obj| {
                            json_patch::merge(obj, &patch)
                        })
                        .await
                    }
                    Guard::Request { .. } => {
                        let bytes = to_vec(&patch)?;
                        let patch = NonApplyPatch::Merge(patch);
                        self.request(res, (ns, name, part), &patch, &bytes, guard).await
                    }
                }
            }
            Write::JsonPatch { ops, .. } => {
                let mut ops = ctx.render(ops);
                lifecycle::eval::strip_nulls(&mut ops);
                let bytes = to_vec(&ops)?;
                let patch: json_patch::Patch =
                    serde_json::from_value(ops).map_err(|e| ApiError::Internal(e.to_string()))?;
                match guard {
                    Guard::Revision(rev) => {
                        let failed = Cell::new(false);
                        let written = self
                            .update(res, (ns, name, part), rev, |obj| {
                                failed.set(json_patch::patch(obj, &patch).is_err());
                            })
                            .await?;
                        if failed.get() {
                            return Err(ApiError::PatchRejected);
                        }
                        Ok(written)
                    }
                    Guard::Request { .. } => {
                        let patch = NonApplyPatch::Json(patch);
                        self.request(res, (ns, name, part), &patch, &bytes, guard).await
                    }
                }
            }
            Write::Finalizers { add, remove, .. } => {
                let rev = match guard {
                    Guard::Revision(rev) => Some(rev),
                    Guard::Request { .. } => None,
                };
                self.update_at(res, (ns, name, Part::Main), rev, |obj| {
                    if let Ok(meta) = metadata_mut(obj) {
                        meta::edit_finalizers(meta, add, remove);
                    }
                })
                .await
            }
            Write::Create { resource, template } => {
                let Some(new_res) = served(resource) else { return Ok(Written::Nothing) };
                // A controller creates only while the object its plan read is still as read.
                if let Guard::Revision(rev) = guard {
                    let current = self.registry.store().get(&object_key(res, ns, name)).await?;
                    if current.is_none_or(|c| stored_revision(&c) != rev) {
                        return Ok(Written::Stale);
                    }
                }
                let mut obj = ctx.render(template);
                lifecycle::eval::strip_nulls(&mut obj);
                let new_ns = meta_str(&obj, "namespace").to_string();
                let at = Target::new((!new_ns.is_empty()).then_some(new_ns), None);
                let opts = self.options(guard);
                match self.registry.create(new_res, &at, obj, Via::Body(&[]), &opts).await {
                    Ok(_) => Ok(Written::Nothing),
                    Err(ApiError::AlreadyExists { .. }) if matches!(guard, Guard::Revision(_)) => {
                        Ok(Written::Nothing)
                    }
                    Err(e) => Err(e),
                }
            }
            Write::Event { type_, reason, message, .. } => {
                let message = ctx.text(message);
                let severity =
                    if type_ == "Warning" { Severity::Warning } else { Severity::Normal };
                let about = ObjectRef::to(res, target);
                if let Err(e) = self.recorder.record(&about, severity, reason, &message).await {
                    log::warn!("{}: recording {reason} failed: {e}", self.manager);
                }
                Ok(Written::Nothing)
            }
            Write::Delete { .. } => {
                let opts = DeleteOptions {
                    precondition_uid: Some(meta_str(target, "uid").to_string()),
                    ..DeleteOptions::default()
                };
                match self.registry.delete(res, ns, name, &opts).await {
                    Ok(_) | Err(ApiError::NotFound { .. }) => Ok(Written::Nothing),
                    Err(ApiError::Conflict { .. }) => Ok(Written::Stale),
                    Err(e) => Err(e),
                }
            }
        }
    }

    fn options(&self, guard: Guard) -> WriteOptions {
        let (dry_run, field_validation) = match guard {
            Guard::Revision(_) => (false, FieldValidation::Strict),
            Guard::Request { dry_run } => (dry_run, FieldValidation::Ignore),
        };
        WriteOptions { dry_run, field_validation, manager: self.manager.to_string() }
    }

    /// A patch as a client request makes it.
    async fn request(
        &self,
        res: &'static ResourceInfo,
        (ns, name, part): (&str, &str, Part),
        patch: &NonApplyPatch,
        bytes: &[u8],
        guard: Guard,
    ) -> Result<Written, ApiError> {
        let target = Target { namespace: Some(ns.to_string()), name: Some(name.to_string()), part };
        let outcome = self.registry.patch(res, &target, patch, bytes, &self.options(guard)).await?;
        Ok(match outcome.change {
            Change::Unchanged => Written::Nothing,
            _ => Written::Rev(stored_revision(outcome.object.value())),
        })
    }

    /// One update of `target`, only while it is at revision `expected`.
    async fn update(
        &self,
        res: &'static ResourceInfo,
        target: (&str, &str, Part),
        expected: u64,
        edit: impl FnMut(&mut Value),
    ) -> Result<Written, ApiError> {
        self.update_at(res, target, Some(expected), edit).await
    }

    /// One update of `target` (only while it is at revision `expected`, if given).
    async fn update_at(
        &self,
        res: &'static ResourceInfo,
        target: (&str, &str, Part),
        expected: Option<u64>,
        mut edit: impl FnMut(&mut Value),
    ) -> Result<Written, ApiError> {
        let stale = Cell::new(false);
        let outcome = self
            .registry
            .update_with(res, target, self.manager, |obj| {
                if expected.is_some_and(|rev| stored_revision(obj) != rev) {
                    stale.set(true);
                    return None;
                }
                let before = obj.clone();
                edit(obj);
                (*obj != before).then_some(())
            })
            .await;
        match outcome {
            _ if stale.get() => Ok(Written::Stale),
            Ok(o) if o.change == Change::Unchanged => Ok(Written::Nothing),
            Ok(o) => Ok(Written::Rev(stored_revision(o.object.value()))),
            Err(ApiError::NotFound { .. }) if expected.is_some() => Ok(Written::Stale),
            Err(e) => Err(e),
        }
    }
}

fn to_vec(v: &Value) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(v).map_err(|e| ApiError::Internal(e.to_string()))
}
