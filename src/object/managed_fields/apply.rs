//! Server-side apply's merge (B.3; AS
//! pkg/endpoints/handlers/patch.go `applyPatcher`, fieldmanager, structured-merge-diff
//! merge/update.go).
//!
//! The body is the applier's whole intent for the fields it cares about. It is merged into the
//! live object (or into nothing: apply creates), the applier's `Apply` entry becomes exactly the
//! fields of the body, fields it applied last time and has dropped now are removed unless
//! someone still owns them, and changing a field another manager owns is a conflict unless
//! `force=true`, which takes the field from that manager.

/// The annotation client-side `kubectl apply` keeps its configuration in.
use serde_json::{Map, Value};

use super::{self as mf, typed, Entry, FieldSet, Managers, Operation, PathElement, Type};
use crate::object::error::{ApiError, Cause};
use crate::object::subresource::{self, Part};
use crate::object::At;
use crate::resource::ResourceInfo;

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Which part of an object an apply may change, for kinds with a status subresource (B.2/B.3):
/// the main resource never changes status there, and `/status` changes only status. Fields out
/// of scope are neither merged nor owned nor conflicting (kube's "reset fields").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// A kind without a status subresource: the whole object.
    Whole,
    /// The main resource of a kind with a status subresource.
    ExceptStatus,
    /// The `status` subresource.
    OnlyStatus,
    /// The `scale` subresource: only the replica count at this path (`.spec.replicas`).
    Scale(&'static str),
}

impl Scope {
    /// The scope of an apply through `part` of a kind.
    pub fn of(res: &ResourceInfo, part: Part) -> Scope {
        match (part, res.status_subresource) {
            (Part::Status, _) => Scope::OnlyStatus,
            (Part::Main | Part::Finalize, true) => Scope::ExceptStatus,
            (Part::Main | Part::Finalize, false) => Scope::Whole,
        }
    }

    /// The subresource recorded in managedFields entries.
    pub fn subresource(self) -> &'static str {
        match self {
            Scope::OnlyStatus => "status",
            Scope::Scale(_) => "scale",
            Scope::Whole | Scope::ExceptStatus => "",
        }
    }

    /// The top-level fields out of scope among those of `objs`.
    fn ignored(self, objs: &[&Value]) -> FieldSet {
        let mut out = FieldSet::new();
        match self {
            Scope::Whole => {}
            Scope::ExceptStatus => out.insert(&[PathElement::field("status")]),
            Scope::OnlyStatus => {
                for key in objs.iter().filter_map(|o| o.as_object()).flat_map(Map::keys) {
                    if key != "status" {
                        out.insert(&[PathElement::field(key)]);
                    }
                }
            }
            Scope::Scale(path) => {
                // Every sibling of every step towards the replica count.
                let steps: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
                for (depth, step) in steps.iter().enumerate() {
                    let above: Vec<PathElement> =
                        steps[..depth].iter().map(|s| PathElement::field(s)).collect();
                    for obj in objs {
                        let mut at = Some(*obj);
                        for s in &steps[..depth] {
                            at = at.and_then(|v| v.get(*s));
                        }
                        for key in at.and_then(Value::as_object).into_iter().flat_map(Map::keys) {
                            if key != step {
                                let mut p = above.clone();
                                p.push(PathElement::field(key));
                                out.insert(&p);
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// Puts back into `merged` the live value of everything out of scope.
    fn restore(self, merged: &mut Value, live: &Value) {
        match self {
            Scope::Whole => {}
            Scope::ExceptStatus => {
                let Some(m) = merged.as_object_mut() else { return };
                match live.get("status") {
                    Some(s) => m.insert("status".into(), s.clone()),
                    None => m.remove("status"),
                };
            }
            Scope::Scale(path) => {
                let pointer = path.replace('.', "/");
                let replicas = merged.at(&pointer).cloned();
                *merged = live.clone();
                match replicas {
                    Some(r) => {
                        // The path exists in the merge, so setting it cannot fail.
                        let _ = subresource::set_nested(merged, path, r);
                    }
                    None => {
                        let (parent, leaf) = pointer.rsplit_once('/').unwrap_or(("", &pointer));
                        if let Some(m) = merged.pointer_mut(parent).and_then(Value::as_object_mut) {
                            m.remove(leaf);
                        }
                    }
                }
            }
            Scope::OnlyStatus => {
                let status = merged.get("status").cloned();
                *merged = live.clone();
                if let Some(m) = merged.as_object_mut() {
                    match status {
                        Some(s) => m.insert("status".into(), s),
                        None => m.remove("status"),
                    };
                }
            }
        }
    }
}

/// Applies `config` by `manager` to `live` (merge/update.go `Apply`): the merged object with its
/// managedFields, or the conflicts as a 409.
pub fn merge_config(
    ty: Type,
    live: &Value,
    config: &Value,
    manager: &str,
    api_version: &str,
    force: bool,
    scope: Scope,
) -> Result<Value, ApiError> {
    let mut managers = Managers::decode(live).unwrap_or_default();
    let live = mf::without_managed_fields(live);
    let ignored = scope.ignored(&[&live, config]);
    let owned = typed::to_field_set(config, ty)
        .difference(&mf::stripped_fields())
        .recursive_difference(&ignored);
    let mut merged = typed::merge(&live, config, ty);
    let mut me = Entry {
        manager: manager.to_string(),
        operation: Operation::Apply,
        api_version: api_version.to_string(),
        time: Some(crate::object::meta::now_rfc3339()),
        subresource: scope.subresource().to_string(),
        fields: owned,
        wire: Default::default(),
    };
    let last = managers.take(&me);
    managers.put(me.clone());
    if let Some(last) = &last {
        prune(&mut merged, &last.fields.recursive_difference(&ignored), &managers.union(), ty);
    }
    scope.restore(&mut merged, &live);
    let cmp = typed::compare(&live, &merged, ty).without(&ignored);
    let contested = cmp.modified.union(&cmp.added);
    let mut conflicts = managers.conflicts(&me, &contested);
    if !force && manager == "kubectl" {
        // kubectl moving from client-side apply may take what its annotation says it set.
        let allowed = set_by_last_applied(ty, &live, api_version);
        for (_, paths) in conflicts.iter_mut() {
            *paths = paths.difference(&allowed);
        }
        conflicts.retain(|(_, paths)| !paths.is_empty());
    }
    if !force && !conflicts.is_empty() {
        return Err(conflict_error(&conflicts));
    }
    managers.release(Some(&me), &contested, &cmp.removed);
    if cmp.is_same() {
        // Nothing changed: the entry keeps its time, as kube only stamps changing applies.
        me.time = last.and_then(|l| l.time);
        managers.put(me);
    }
    managers.encode_into(&mut merged);
    Ok(merged)
}

/// Removes what the applier applied last time and has dropped now, unless some manager (the
/// applier's new configuration included) owns it or something below it.
fn prune(merged: &mut Value, last: &FieldSet, owned: &FieldSet, ty: Type) {
    let mut dropped = FieldSet::new();
    for path in last.paths() {
        if !owned.has_at_or_below(&path) {
            dropped.insert(&path);
        }
    }
    typed::remove(merged, &dropped, ty);
}

/// The fields of `live` that its client-side apply annotation set and that still hold the
/// annotation's values (lastappliedmanager.go `allowedConflictsFromLastApplied`).
fn set_by_last_applied(ty: Type, live: &Value, api_version: &str) -> FieldSet {
    let text = live.at("/metadata/annotations").and_then(|a| a.get(LAST_APPLIED));
    let Some(last) =
        text.and_then(Value::as_str).and_then(|t| serde_json::from_str::<Value>(t).ok())
    else {
        return FieldSet::new();
    };
    if last.get("apiVersion").and_then(Value::as_str) != Some(api_version) {
        return FieldSet::new();
    }
    let cmp = typed::compare(&last, live, ty);
    typed::to_field_set(&last, ty)
        .difference(&cmp.modified)
        .difference(&cmp.added)
        .difference(&cmp.removed)
}

/// The 409 of conflicting applies (AM pkg/util/managedfields/internal/conflict.go).
fn conflict_error(conflicts: &[(Entry, FieldSet)]) -> ApiError {
    let mut causes = Vec::new();
    for (owner, fields) in conflicts {
        for path in fields.paths() {
            causes.push(Cause {
                reason: "FieldManagerConflict",
                message: format!("conflict with {}", owner.describe()),
                field: mf::fieldset::path_string(&path),
            });
        }
    }
    let message = if let [only] = causes.as_slice() {
        format!("Apply failed with 1 conflict: {}: {}", only.message, only.field)
    } else {
        let mut lines = Vec::new();
        for (owner, fields) in conflicts {
            lines.push(format!("conflicts with {}:", owner.describe()));
            for path in fields.paths() {
                lines.push(format!("- {}", mf::fieldset::path_string(&path)));
            }
        }
        format!("Apply failed with {} conflicts: {}", causes.len(), lines.join("\n"))
    };
    ApiError::ApplyConflict { message, causes }
}

/// kubectl's server-side apply keeps the client-side annotation in step when the object has one,
/// so that a later client-side apply computes the right patch (lastappliedupdater.go).
pub fn sync_last_applied(manager: &str, config: &Value, obj: &mut Value) {
    if manager != "kubectl" {
        return;
    }
    let has = obj.at("/metadata/annotations").and_then(|a| a.get(LAST_APPLIED)).is_some();
    if !has {
        return;
    }
    let mut applied = config.clone();
    if let Some(meta) = applied.get_mut("metadata").and_then(Value::as_object_mut) {
        if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            annotations.remove(LAST_APPLIED);
            if annotations.is_empty() {
                meta.remove("annotations");
            }
        }
    }
    if let Some(annotations) =
        obj.pointer_mut("/metadata/annotations").and_then(Value::as_object_mut)
    {
        annotations.insert(LAST_APPLIED.into(), Value::String(format!("{applied}\n")));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ty() -> Type {
        let vm = crate::generated::RESOURCES
            .iter()
            .find(|r| r.kind == "VirtualMachine" && r.version == "v1")
            .expect("VirtualMachine v1 is served");
        Type::of(vm)
    }

    fn apply(live: &Value, config: &Value, manager: &str, force: bool) -> Result<Value, ApiError> {
        merge_config(ty(), live, config, manager, "kubevirt.io/v1", force, Scope::Whole)
    }

    fn fields_of(obj: &Value, manager: &str) -> Value {
        let m = Managers::decode(obj).unwrap();
        m.0.iter()
            .find(|e| e.manager == manager)
            .map(|e| e.fields.to_fields_v1())
            .unwrap_or(Value::Null)
    }

    #[test]
    fn conflicts_name_each_path_and_force_takes_them() {
        let a = apply(&json!({}), &json!({"spec": {"x": 1, "y": 2}}), "a", false).unwrap();
        let err = apply(&a, &json!({"spec": {"x": 5, "y": 6}}), "b", false).unwrap_err();
        let s = serde_json::to_value(err.to_status()).unwrap();
        assert_eq!(s["code"], 409);
        assert_eq!(
            s["message"],
            "Apply failed with 2 conflicts: conflicts with \"a\":\n- .spec.x\n- .spec.y"
        );
        assert_eq!(s["details"]["causes"][0]["field"], ".spec.x");
        let forced = apply(&a, &json!({"spec": {"x": 5}}), "b", true).unwrap();
        assert_eq!(forced["spec"], json!({"x": 5, "y": 2}));
        assert_eq!(fields_of(&forced, "a"), json!({"f:spec": {"f:y": {}}}));
        assert_eq!(fields_of(&forced, "b"), json!({"f:spec": {"f:x": {}}}));
    }

    #[test]
    fn equal_values_share_ownership_and_dropped_fields_go_only_when_unowned() {
        let a = apply(&json!({}), &json!({"spec": {"x": 1, "y": 2}}), "a", false).unwrap();
        let b = apply(&a, &json!({"spec": {"x": 1}}), "b", false).unwrap();
        assert_eq!(fields_of(&b, "b"), json!({"f:spec": {"f:x": {}}}));
        let dropped = apply(&b, &json!({"spec": {}}), "a", false).unwrap();
        assert_eq!(dropped["spec"], json!({"x": 1}));
    }

    #[test]
    fn scope_keeps_status_out_of_main_applies() {
        let live =
            json!({"metadata": {"name": "a"}, "spec": {"x": 1}, "status": {"phase": "Running"}});
        let out = merge_config(
            ty(),
            &live,
            &json!({"spec": {"x": 2}, "status": {"phase": "Gone"}}),
            "a",
            "kubevirt.io/v1",
            false,
            Scope::ExceptStatus,
        )
        .unwrap();
        assert_eq!(out["status"], json!({"phase": "Running"}));
        assert_eq!(fields_of(&out, "a"), json!({"f:spec": {"f:x": {}}}));
        let status = merge_config(
            ty(),
            &live,
            &json!({"spec": {"x": 3}, "status": {"phase": "Gone"}}),
            "a",
            "kubevirt.io/v1",
            false,
            Scope::OnlyStatus,
        )
        .unwrap();
        assert_eq!(status["spec"], json!({"x": 1}));
        assert_eq!(status["status"], json!({"phase": "Gone"}));
        assert_eq!(status["metadata"]["managedFields"][0]["subresource"], "status");
    }
}
