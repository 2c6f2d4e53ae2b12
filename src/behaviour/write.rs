//! The one executor of the lifecycle file's writes (`lifecycle::Write`), shared by the
//! simulated controllers' stages and virt-api's actions, in two halves:
//!
//! - `plan` is pure: from the object and what was read with it (a `Ctx`), a step's write
//!   decided and rendered, with the object it is to (the object's own, or the related object
//!   `of` names), as a `Planned` value a test can compare, the way KWOK tests its stages;
//! - `Writer::apply` makes a planned write through the registry's verbs as its field manager.
//!
//! The two callers differ only in how a write is guarded:
//! - a controller's (`Guard::Revision`) writes only while its target is still at the revision
//!   its plan read (else `Applied::Stale`: the plan is decided again), validates strictly and
//!   leaves an object that exists alone;
//! - virt-api's (`Guard::Request`) writes as a client request: dry-run as asked, unknown fields
//!   ignored, errors returned as they come (the action words them).

use std::cell::Cell;

use lifecycle::{Ctx, Kind, Step, Write};
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
use crate::registry::{Change, DeleteOptions, Outcome, Registry, Target, WriteOptions};
use crate::resource::ResourceInfo;

/// A write decided and rendered, not yet made.
#[derive(Debug, Clone)]
pub struct Planned {
    /// The object written to (for a create: the object whose plan creates), its served kind
    /// and the revision its plan read.
    pub res: &'static ResourceInfo,
    pub namespace: String,
    pub name: String,
    pub revision: u64,
    pub edit: Edit,
}

/// What a planned write does.
#[derive(Debug, Clone)]
pub enum Edit {
    /// A JSON merge patch of `part`.
    Merge {
        part: Part,
        patch: Value,
    },
    /// A JSON patch (its operations) of `part`.
    JsonPatch {
        part: Part,
        ops: Value,
    },
    Finalizers {
        add: Vec<String>,
        remove: Vec<String>,
    },
    /// A new object of `res`.
    Create {
        res: &'static ResourceInfo,
        object: Value,
    },
    /// An Event about the object.
    Event {
        about: ObjectRef,
        severity: Severity,
        reason: String,
        message: String,
    },
    /// A delete, on the condition that the object is still the one of `uid`, with the step's
    /// grace period (the kind's default without one).
    Delete {
        uid: String,
        grace: Option<i64>,
    },
}

impl Planned {
    /// The key of the object written to.
    pub fn key(&self) -> String {
        object_key(self.res, &self.namespace, &self.name)
    }
}

/// `step` of `kind` (served as `res`) for `obj`, decided and rendered in `ctx` (whose object is
/// `obj`); `None` when its `when` does not hold, or the object it is to is not there (nothing
/// to do to it). Pure: it reads only its arguments.
pub fn plan(
    kind: &Kind,
    res: &'static ResourceInfo,
    obj: &Value,
    step: &Step,
    ctx: &Ctx<'_>,
) -> Option<Planned> {
    if step.when.as_ref().is_some_and(|w| !ctx.matches(w)) {
        return None;
    }
    let (target, target_res) = target(kind, res, obj, &step.write, ctx)?;
    let part = match step.write.subresource() {
        Some("status") if target_res.status_subresource => Part::Status,
        _ => Part::Main,
    };
    let edit = match &step.write {
        Write::Patch { merge, .. } => Edit::Merge { part, patch: ctx.render(merge) },
        Write::JsonPatch { ops, .. } => {
            let mut ops = ctx.render(ops);
            lifecycle::eval::strip_nulls(&mut ops);
            Edit::JsonPatch { part, ops }
        }
        Write::Call { procedure, with, .. } => {
            // Go's omitempty: an argument's unset fields are left out.
            let mut with = ctx.render(with);
            lifecycle::eval::strip_nulls(&mut with);
            let ops = super::procedures::call(*procedure, target, &with);
            Edit::JsonPatch { part, ops }
        }
        Write::Finalizers { add, remove, .. } => {
            Edit::Finalizers { add: add.clone(), remove: remove.clone() }
        }
        Write::Create { resource, template } => {
            let new_res = served(resource)?;
            let mut object = ctx.render(template);
            lifecycle::eval::strip_nulls(&mut object);
            Edit::Create { res: new_res, object }
        }
        Write::Event { type_, reason, message, .. } => Edit::Event {
            about: ObjectRef::to(target_res, target),
            severity: if type_ == "Warning" { Severity::Warning } else { Severity::Normal },
            reason: reason.clone(),
            message: ctx.text(message),
        },
        Write::Delete { grace_period_seconds, .. } => {
            Edit::Delete { uid: meta_str(target, "uid").to_string(), grace: *grace_period_seconds }
        }
    };
    Some(Planned {
        res: target_res,
        namespace: meta_str(target, "namespace").to_string(),
        name: meta_str(target, "name").to_string(),
        revision: stored_revision(target),
        edit,
    })
}

/// The object `write` is to: `obj` itself, or the related object `of` names (a list's first
/// element), with its served kind.
fn target<'v>(
    kind: &Kind,
    res: &'static ResourceInfo,
    obj: &'v Value,
    write: &Write,
    ctx: &'v Ctx<'_>,
) -> Option<(&'v Value, &'static ResourceInfo)> {
    let Some(name) = write.of() else { return Some((obj, res)) };
    let rel = kind.related.get(name).and_then(|r| served(&r.resource))?;
    match ctx.named.get(name).map(|v| &**v) {
        Some(Value::Array(items)) => items.first().map(|o| (o, rel)),
        Some(o) => Some((o, rel)),
        None => None,
    }
}

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
pub enum Applied {
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

impl Writer<'_> {
    /// Makes the planned write `p`.
    pub async fn apply(&self, p: &Planned, guard: Guard) -> Result<Applied, ApiError> {
        let (res, ns, name) = (p.res, p.namespace.as_str(), p.name.as_str());
        let expected = match guard {
            Guard::Revision(rev) => Some(rev),
            Guard::Request { .. } => None,
        };
        match &p.edit {
            Edit::Merge { part, patch } => match guard {
                Guard::Revision(rev) => {
                    let target = (ns, name, *part);
                    let changes = |obj: &Value| merge_changes(obj, patch);
                    let edit = |obj: &mut Value| json_patch::merge(obj, patch);
                    self.update_when(res, target, Some(rev), changes, edit).await
                }
                Guard::Request { .. } => {
                    let bytes = to_vec(patch)?;
                    let patch = NonApplyPatch::Merge(patch.clone());
                    self.request(res, (ns, name, *part), &patch, &bytes, guard).await
                }
            },
            Edit::JsonPatch { part, ops } => {
                let bytes = to_vec(ops)?;
                let patch: json_patch::Patch = serde_json::from_value(ops.clone())
                    .map_err(|e| ApiError::Internal(e.to_string()))?;
                match guard {
                    Guard::Revision(rev) => {
                        let failed = Cell::new(false);
                        let applied = self
                            .update(res, (ns, name, *part), Some(rev), |obj| {
                                let before = obj.clone();
                                failed.set(json_patch::patch(obj, &patch).is_err());
                                *obj != before
                            })
                            .await?;
                        if failed.get() {
                            return Err(ApiError::PatchRejected);
                        }
                        Ok(applied)
                    }
                    Guard::Request { .. } => {
                        let patch = NonApplyPatch::Json(patch);
                        self.request(res, (ns, name, *part), &patch, &bytes, guard).await
                    }
                }
            }
            Edit::Finalizers { add, remove } => {
                let changes = |obj: &Value| {
                    obj.get("metadata")
                        .and_then(Value::as_object)
                        .is_some_and(|m| meta::edited_finalizers(m, add, remove).is_some())
                };
                let edit = |obj: &mut Value| {
                    if let Ok(meta) = metadata_mut(obj) {
                        meta::edit_finalizers(meta, add, remove);
                    }
                };
                let target = (ns, name, Part::Main);
                self.update_when(res, target, expected, changes, edit).await
            }
            Edit::Create { res: new_res, object } => {
                // A controller creates only while the object its plan read is still as read.
                if let Guard::Revision(rev) = guard {
                    let current = self.registry.store().get(&p.key()).await?;
                    if current.is_none_or(|c| stored_revision(&c) != rev) {
                        return Ok(Applied::Stale);
                    }
                }
                let new_ns = meta_str(object, "namespace").to_string();
                let at = Target::new((!new_ns.is_empty()).then_some(new_ns), None);
                let opts = self.options(guard);
                let created =
                    self.registry.create(new_res, &at, object.clone(), Via::Body(&[]), &opts);
                match created.await {
                    Ok(_) => Ok(Applied::Nothing),
                    Err(ApiError::AlreadyExists { .. }) if expected.is_some() => {
                        Ok(Applied::Nothing)
                    }
                    Err(e) => Err(e),
                }
            }
            Edit::Event { about, severity, reason, message } => {
                if let Err(e) = self.recorder.record(about, *severity, reason, message).await {
                    log::warn!("{}: recording {reason} failed: {e}", self.manager);
                }
                Ok(Applied::Nothing)
            }
            Edit::Delete { uid, grace } => {
                let opts = DeleteOptions {
                    precondition_uid: Some(uid.clone()),
                    grace_period_seconds: *grace,
                    ..DeleteOptions::default()
                };
                match self.registry.delete(res, ns, name, &opts).await {
                    Ok(_) | Err(ApiError::NotFound { .. }) => Ok(Applied::Nothing),
                    Err(ApiError::Conflict { .. }) => Ok(Applied::Stale),
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
    ) -> Result<Applied, ApiError> {
        let target = Target { namespace: Some(ns.to_string()), name: Some(name.to_string()), part };
        let outcome = self.registry.patch(res, &target, patch, bytes, &self.options(guard)).await?;
        Ok(match outcome.change {
            Change::Unchanged => Applied::Nothing,
            _ => Applied::Rev(stored_revision(outcome.object.value())),
        })
    }

    /// One update of `target` (only while it is at revision `expected`, if given).
    /// `update` for an edit that tells from the object as it is whether it changes it, so that
    /// a stale plan or a no-op copies nothing.
    async fn update_when(
        &self,
        res: &'static ResourceInfo,
        target: (&str, &str, Part),
        expected: Option<u64>,
        changes: impl Fn(&Value) -> bool,
        edit: impl FnMut(&mut Value),
    ) -> Result<Applied, ApiError> {
        let stale = Cell::new(false);
        let outcome = self
            .registry
            .update_when(
                res,
                target,
                self.manager,
                |obj| {
                    stale.set(expected.is_some_and(|rev| stored_revision(obj) != rev));
                    !stale.get() && changes(obj)
                },
                edit,
            )
            .await;
        applied(outcome, stale.get(), expected)
    }

    async fn update(
        &self,
        res: &'static ResourceInfo,
        target: (&str, &str, Part),
        expected: Option<u64>,
        mut edit: impl FnMut(&mut Value) -> bool,
    ) -> Result<Applied, ApiError> {
        let stale = Cell::new(false);
        let outcome = self
            .registry
            .update_with(res, target, self.manager, |obj| {
                if expected.is_some_and(|rev| stored_revision(obj) != rev) {
                    stale.set(true);
                    return None;
                }
                edit(obj).then_some(())
            })
            .await;
        applied(outcome, stale.get(), expected)
    }
}

/// What an update's outcome means to the simulation.
fn applied(
    outcome: Result<Outcome, ApiError>,
    stale: bool,
    expected: Option<u64>,
) -> Result<Applied, ApiError> {
    match outcome {
        _ if stale => Ok(Applied::Stale),
        Ok(o) if o.change == Change::Unchanged => Ok(Applied::Nothing),
        Ok(o) => Ok(Applied::Rev(stored_revision(o.object.value()))),
        Err(ApiError::NotFound { .. }) if expected.is_some() => Ok(Applied::Stale),
        Err(e) => Err(e),
    }
}

/// Whether merging `patch` into `target` (RFC 7386, as `json_patch::merge`) changes it: known
/// without the copy a comparison after the merge would need.
fn merge_changes(target: &Value, patch: &Value) -> bool {
    let Value::Object(p) = patch else { return target != patch };
    let Value::Object(t) = target else { return true };
    p.iter().any(|(k, v)| match (v, t.get(k)) {
        (Value::Null, current) => current.is_some(),
        (_, None) => true,
        (v, Some(current)) => merge_changes(current, v),
    })
}

fn to_vec(v: &Value) -> Result<Vec<u8>, ApiError> {
    serde_json::to_vec(v).map_err(|e| ApiError::Internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::merge_changes;

    #[test]
    fn a_merge_changes_its_target_exactly_when_merging_would() {
        let target = json!({"a": 1, "b": {"c": [1, 2], "d": null}, "e": "x"});
        for patch in [
            json!({}),
            json!({"a": 1}),
            json!({"a": 2}),
            json!({"z": null}),
            json!({"a": null}),
            json!({"b": {"c": [1, 2]}}),
            json!({"b": {"c": [2]}}),
            json!({"b": {"d": null}}),
            json!({"b": {"new": {}}}),
            json!({"e": {"f": null}}),
            json!({"y": {"f": null}}),
            json!("replaced"),
        ] {
            let mut merged = target.clone();
            json_patch::merge(&mut merged, &patch);
            assert_eq!(merge_changes(&target, &patch), merged != target, "{patch}");
        }
    }
}
