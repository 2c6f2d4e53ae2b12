//! What the `status` and `scale` subresources mean for an object (A.4, B.2; AX strategy.go,
//! status_strategy.go, registry/customresource/etcd.go, validator.go): which part of an object
//! each endpoint may write, the `autoscaling/v1` Scale view of a kind's replica count, and the
//! nested fields `x-virt-resource.scale` names. Pure functions.

use serde_json::{json, Map, Value};

use crate::object::error::{ApiError, Cause};
use crate::object::metadata;
use crate::object::At;
use crate::resource::{ResourceInfo, ScaleInfo};

/// Which part of an object a write may change (B.2, AX strategy.go and status_strategy.go).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Part {
    /// The main endpoint: everything, except `status` on kinds with a status subresource and
    /// a Namespace's `spec.finalizers` where `finalize` writes them.
    #[default]
    Main,
    /// `/status`: only `status` (and `metadata.managedFields`, which track the write).
    Status,
    /// kube's Namespace `/finalize`: everything but `status`, as its finalize strategy keeps
    /// the stored status (the namespace controller removes `spec.finalizers` entries).
    Finalize,
}

/// The Scale kind every scale subresource serves.
pub const SCALE_API_VERSION: &str = "autoscaling/v1";
pub const SCALE_KIND: &str = "Scale";

/// The replicas kube's scale handler puts in the Scale a patch applies to when the object has
/// none yet, so that a patch leaving them unset can be told apart (AX etcd.go).
pub const UNSET_REPLICAS: i64 = i32::MIN as i64;

/// `new` reduced to what `part` may change, everything else taken from `current`.
///
/// On a kind with a status subresource the main endpoint keeps the stored `status`; `/status`
/// keeps everything stored except `status` and `metadata.managedFields`, so metadata and spec
/// changes in its body are dropped.
pub fn confine(res: &ResourceInfo, part: Part, current: &Value, mut new: Value) -> Value {
    match part {
        Part::Main | Part::Finalize => {
            if res.status_subresource && new.get("status") != current.get("status") {
                if let Some(obj) = new.as_object_mut() {
                    match current.get("status") {
                        Some(s) => obj.insert("status".into(), s.clone()),
                        None => obj.remove("status"),
                    };
                }
            }
            // kube's namespace strategy: an update keeps the stored spec.finalizers, which only
            // `finalize` changes (PrepareForUpdate in pkg/registry/core/namespace/strategy.go).
            if part == Part::Main && res.namespaces && res.finalize_subresource {
                keep_spec_finalizers(current, &mut new);
            }
            new
        }
        // Background work mostly edits a copy of the stored object's status: then the copy is
        // already the answer, found by a comparison where a copy would allocate.
        Part::Status if same_outside_status(current, &new) => new,
        Part::Status => {
            let status = new.get_mut("status").map(Value::take);
            let managed = new.pointer_mut("/metadata/managedFields").map(Value::take);
            let mut out = current.clone();
            if let Some(obj) = out.as_object_mut() {
                match status {
                    Some(s) => obj.insert("status".into(), s),
                    None => obj.remove("status"),
                };
            }
            if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
                match managed {
                    Some(m) => meta.insert("managedFields".into(), m),
                    None => meta.remove("managedFields"),
                };
            }
            out
        }
    }
}

/// Whether `a` and `b` agree on everything but `status` and `metadata.managedFields`.
fn same_outside_status(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else { return false };
    let (am, bm) = (a.get("metadata"), b.get("metadata"));
    let meta_same = match (am.and_then(Value::as_object), bm.and_then(Value::as_object)) {
        (Some(am), Some(bm)) => same_except(am, bm, &["managedFields"]),
        _ => am == bm,
    };
    meta_same && same_except(a, b, &["status", "metadata"])
}

/// Whether two maps agree on every key but `skip`.
fn same_except(a: &Map<String, Value>, b: &Map<String, Value>, skip: &[&str]) -> bool {
    let kept = |m: &Map<String, Value>| m.keys().filter(|k| !skip.contains(&k.as_str())).count();
    kept(a) == kept(b) && a.iter().all(|(k, v)| skip.contains(&k.as_str()) || b.get(k) == Some(v))
}

/// `new`'s `spec.finalizers` set to `current`'s (removed where `current` has none).
fn keep_spec_finalizers(current: &Value, new: &mut Value) {
    let stored = current.at("/spec/finalizers").cloned();
    let Some(obj) = new.as_object_mut() else { return };
    match stored {
        Some(finalizers) => {
            let spec = obj.entry("spec").or_insert_with(|| json!({}));
            if let Some(spec) = spec.as_object_mut() {
                spec.insert("finalizers".into(), finalizers);
            }
        }
        None => {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                spec.remove("finalizers");
            }
        }
    }
}

/// Create ignores `status` on kinds with a status subresource, and checks the scale fields.
pub fn prepare_create(res: &ResourceInfo, obj: &mut Value, name: &str) -> Result<(), ApiError> {
    if res.status_subresource {
        if let Some(m) = obj.as_object_mut() {
            m.remove("status");
        }
    }
    let causes = validate(res, obj);
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(res, name, causes))
    }
}

/// What a scale subresource adds to the validation of every write (AX validator.go
/// `ValidateScaleSpec`, `ValidateScaleStatus`): replica counts are non-negative int32s and the
/// selector is a string, wherever present.
pub fn validate(res: &ResourceInfo, obj: &Value) -> Vec<Cause> {
    let Some(scale) = &res.scale else { return Vec::new() };
    let mut causes = Vec::new();
    for path in [scale.spec_replicas_path, scale.status_replicas_path] {
        match nested_int(obj, path) {
            Err(e) => causes.push(Cause::invalid(path, "0", &e)),
            Ok(Some(n)) if n < 0 => causes.push(Cause::invalid(
                path,
                &n.to_string(),
                "should be a non-negative integer",
            )),
            Ok(Some(n)) if n > i64::from(i32::MAX) => causes.push(Cause::invalid(
                path,
                &n.to_string(),
                &format!("should be less than or equal to {}", i32::MAX),
            )),
            Ok(_) => {}
        }
    }
    if let Some(path) = scale.label_selector_path {
        if let Err(e) = nested_str(obj, path) {
            causes.push(Cause::invalid(path, "\"\"", &e));
        }
    }
    causes
}

pub fn scale_info(res: &'static ResourceInfo) -> Result<&'static ScaleInfo, ApiError> {
    res.scale
        .as_ref()
        .ok_or_else(|| ApiError::Internal(format!("{} has no scale subresource", res.plural)))
}

/// The Scale of `obj` (AX etcd.go `scaleFromCustomResource`) and the object's own
/// `spec.replicas`, `None` when it has none. Zero spec replicas and an empty selector are left
/// out, as `autoscaling/v1` encodes them (`omitempty`).
pub fn to_scale(info: &ScaleInfo, obj: &Value) -> Result<(Value, Option<i64>), ApiError> {
    let spec = nested_int(obj, info.spec_replicas_path).map_err(ApiError::Internal)?;
    let status = nested_int(obj, info.status_replicas_path).map_err(ApiError::Internal)?;
    let selector = match info.label_selector_path {
        Some(path) => nested_str(obj, path).map_err(ApiError::Internal)?.unwrap_or_default(),
        None => String::new(),
    };
    let mut meta = Map::new();
    for field in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        match metadata(obj).and_then(|m| m.get(field)) {
            Some(Value::String(s)) if s.is_empty() => {}
            Some(v) if !v.is_null() => {
                meta.insert(field.into(), v.clone());
            }
            _ => {}
        }
    }
    let mut spec_out = Map::new();
    if let Some(n) = spec.filter(|n| *n != 0) {
        spec_out.insert("replicas".into(), Value::from(n));
    }
    let mut status_out = Map::new();
    status_out.insert("replicas".into(), Value::from(status.unwrap_or(0)));
    if !selector.is_empty() {
        status_out.insert("selector".into(), Value::String(selector));
    }
    let scale = json!({
        "kind": SCALE_KIND,
        "apiVersion": SCALE_API_VERSION,
        "metadata": meta,
        "spec": spec_out,
        "status": status_out,
    });
    Ok((scale, spec))
}

/// The Scale's `spec.replicas` as Go decodes it into an int32 (absent = 0). A bad value is 400
/// in a body, and 422 on the field `patch` when a patch produced it (AS handlers/patch.go).
pub fn spec_replicas_of(scale: &Value, patched: bool) -> Result<i64, ApiError> {
    let spec = scale.get("spec").unwrap_or(&Value::Null);
    let (replicas, bad) = match spec {
        Value::Null => (Some(0), None),
        Value::Object(m) => match m.get("replicas") {
            None | Some(Value::Null) => (Some(0), None),
            Some(v) => match v.as_i64().filter(|n| i32::try_from(*n).is_ok()) {
                Some(n) => (Some(n), None),
                None => (
                    None,
                    Some(format!(
                        "json: cannot unmarshal {} into Go struct field ScaleSpec.spec.replicas of type int32",
                        json_type(v)
                    )),
                ),
            },
        },
        other => (
            None,
            Some(format!(
                "json: cannot unmarshal {} into Go struct field Scale.spec of type v1.ScaleSpec",
                json_type(other)
            )),
        ),
    };
    match (replicas, bad) {
        (Some(n), _) => Ok(n),
        (None, detail) => {
            let detail = detail.unwrap_or_default();
            if patched {
                Err(ApiError::Invalid {
                    group: String::new(),
                    details_kind: String::new(),
                    qualified: String::new(),
                    name: String::new(),
                    causes: vec![Cause::invalid(
                        "patch",
                        &format!("{:?}", scale.to_string()),
                        &detail,
                    )],
                })
            } else {
                Err(ApiError::bad_request(format!(
                    "{SCALE_KIND} in version \"v1\" cannot be handled as a {SCALE_KIND}: {detail}"
                )))
            }
        }
    }
}

/// How Go's JSON decoder names a value it cannot decode.
fn json_type(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) => format!("number {n}"),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

/// The value at a simple JSON path such as `.spec.replicas`, found as apimachinery's
/// `unstructured.NestedFieldNoCopy` finds it: `Ok(None)` when a field on the way is missing or
/// null, an error when something on the way is not an object.
fn nested<'a>(obj: &'a Value, path: &str) -> Result<Option<&'a Value>, String> {
    let fields: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    let mut val = obj;
    for (i, field) in fields.iter().enumerate() {
        match val {
            Value::Null => return Ok(None),
            Value::Object(m) => match m.get(*field) {
                Some(v) => val = v,
                None => return Ok(None),
            },
            other => {
                return Err(accessor_error(&fields[..=i], other, "map[string]interface{}"));
            }
        }
    }
    Ok(Some(val))
}

/// An integer at `path` (`unstructured.NestedInt64`).
fn nested_int(obj: &Value, path: &str) -> Result<Option<i64>, String> {
    let fields: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    match nested(obj, path)? {
        None => Ok(None),
        Some(v) => v.as_i64().map(Some).ok_or_else(|| accessor_error(&fields, v, "int64")),
    }
}

/// A string at `path` (`unstructured.NestedString`).
fn nested_str(obj: &Value, path: &str) -> Result<Option<String>, String> {
    let fields: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    match nested(obj, path)? {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(accessor_error(&fields, v, "string")),
    }
}

/// apimachinery's wording: `.spec.replicas accessor error: x is of the type string, expected int64`.
fn accessor_error(fields: &[&str], v: &Value, expected: &str) -> String {
    let (shown, go_type) = match v {
        Value::Null => ("<nil>".to_string(), "<nil>"),
        Value::Bool(b) => (b.to_string(), "bool"),
        Value::Number(n) if n.is_f64() => (n.to_string(), "float64"),
        Value::Number(n) => (n.to_string(), "int64"),
        Value::String(s) => (s.clone(), "string"),
        Value::Array(_) => (v.to_string(), "[]interface {}"),
        Value::Object(_) => (v.to_string(), "map[string]interface {}"),
    };
    format!(
        ".{} accessor error: {shown} is of the type {go_type}, expected {expected}",
        fields.join(".")
    )
}

/// Sets the value at a simple JSON path, creating missing objects on the way
/// (`unstructured.SetNestedField`).
pub fn set_nested(obj: &mut Value, path: &str, value: Value) -> Result<(), ApiError> {
    let fields: Vec<&str> = path.trim_start_matches('.').split('.').collect();
    let (last, parents) = fields.split_last().expect("a validated, non-empty path");
    let mut cur = obj;
    for field in parents {
        let map = cur.as_object_mut().ok_or_else(|| {
            ApiError::Internal(format!("value cannot be set because {path} is not under objects"))
        })?;
        cur = map.entry(field.to_string()).or_insert_with(|| Value::Object(Map::new()));
        if cur.is_null() {
            *cur = Value::Object(Map::new());
        }
    }
    cur.as_object_mut()
        .ok_or_else(|| {
            ApiError::Internal(format!("value cannot be set because {path} is not under objects"))
        })?
        .insert(last.to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_write_keeps_the_stored_object_but_its_status_and_managed_fields() {
        let current = json!({"metadata": {"name": "a", "labels": {"x": "1"},
                                          "managedFields": [{"manager": "m"}]},
                             "spec": {"n": 1}, "status": {"phase": "A"}});
        let r = res(true, None);
        for new in [
            json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"n": 1},
                   "status": {"phase": "B"}}),
            json!({"metadata": {"name": "a", "labels": {"x": "1"}, "managedFields": []},
                   "spec": {"n": 1}}),
            json!({"metadata": {"name": "a", "labels": {"x": "2"}}, "spec": {"n": 2},
                   "status": {"phase": "C"}}),
            json!({"metadata": {"name": "a"}, "spec": {"n": 1}, "extra": true}),
            json!({"spec": {"n": 1}, "status": {}}),
        ] {
            let mut want = current.clone();
            match new.get("status") {
                Some(st) => want["status"] = st.clone(),
                None => _ = want.as_object_mut().unwrap().remove("status"),
            }
            let meta = want["metadata"].as_object_mut().unwrap();
            match new.at("/metadata/managedFields") {
                Some(m) => _ = meta.insert("managedFields".into(), m.clone()),
                None => _ = meta.remove("managedFields"),
            }
            assert_eq!(confine(&r, Part::Status, &current, new.clone()), want, "{new}");
        }
    }

    fn res(status: bool, scale: Option<ScaleInfo>) -> ResourceInfo {
        ResourceInfo { status_subresource: status, scale, ..ResourceInfo::EXAMPLE }
    }

    #[test]
    fn a_namespace_update_keeps_its_spec_finalizers_and_finalize_changes_them() {
        let namespaces = ResourceInfo {
            namespaced: false,
            namespaces: true,
            finalize_subresource: true,
            ..res(true, None)
        };
        let current = json!({"metadata": {"name": "n"}, "spec": {"finalizers": ["kubernetes"]},
                             "status": {"phase": "Active"}});
        let cleared = json!({"metadata": {"name": "n", "labels": {"a": "b"}},
                             "spec": {"finalizers": []}});
        let kept = confine(&namespaces, Part::Main, &current, cleared.clone());
        assert_eq!(kept["spec"], json!({"finalizers": ["kubernetes"]}));
        assert_eq!(kept["metadata"]["labels"], json!({"a": "b"}), "the rest is the update's");
        assert_eq!(kept["status"], current["status"]);
        let none = confine(&namespaces, Part::Main, &current, json!({"metadata": {"name": "n"}}));
        assert_eq!(none["spec"], json!({"finalizers": ["kubernetes"]}));
        let bare = json!({"metadata": {"name": "n"}});
        let added = json!({"metadata": {"name": "n"}, "spec": {"finalizers": ["x.io/y"]}});
        assert_eq!(confine(&namespaces, Part::Main, &bare, added.clone())["spec"], json!({}));
        let finalized = confine(&namespaces, Part::Finalize, &current, cleared.clone());
        assert_eq!(finalized["spec"], json!({"finalizers": []}));
        // Without a finalize subresource the main endpoint is the only way to change them.
        let plain = ResourceInfo { finalize_subresource: false, ..namespaces };
        assert_eq!(
            confine(&plain, Part::Main, &current, cleared)["spec"],
            json!({"finalizers": []})
        );
        // Other kinds' spec.finalizers are theirs.
        assert_eq!(
            confine(&res(true, None), Part::Main, &bare, added)["spec"]["finalizers"],
            json!(["x.io/y"])
        );
    }

    const SCALE: ScaleInfo = ScaleInfo {
        spec_replicas_path: ".spec.replicas",
        status_replicas_path: ".status.replicas",
        label_selector_path: Some(".status.labelSelector"),
    };

    fn stored() -> Value {
        json!({"apiVersion": "g.io/v1", "kind": "Thing",
               "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                            "generation": 2, "labels": {"x": "1"},
                            "creationTimestamp": "2026-01-01T00:00:00Z",
                            "managedFields": [{"manager": "old"}]},
               "spec": {"replicas": 2}, "status": {"replicas": 1, "labelSelector": "app=a"}})
    }

    #[test]
    fn main_endpoint_keeps_stored_status_only_with_a_status_subresource() {
        let mut new = stored();
        new["status"] = json!({"replicas": 9});
        new["spec"]["replicas"] = json!(3);
        let out = confine(&res(true, None), Part::Main, &stored(), new.clone());
        assert_eq!(out["status"], stored()["status"]);
        assert_eq!(out["spec"]["replicas"], 3);
        let out = confine(&res(false, None), Part::Main, &stored(), new.clone());
        assert_eq!(out, new);
        // No stored status: none is written either.
        let mut bare = stored();
        bare.as_object_mut().unwrap().remove("status");
        let out = confine(&res(true, None), Part::Main, &bare, new);
        assert!(out.get("status").is_none());
    }

    #[test]
    fn status_endpoint_takes_only_status_and_managed_fields() {
        let mut new = stored();
        new["status"] = json!({"replicas": 9});
        new["spec"] = json!({"replicas": 5});
        new["metadata"]["labels"] = json!({"y": "2"});
        new["metadata"]["managedFields"] = json!([{"manager": "new"}]);
        let out = confine(&res(true, None), Part::Status, &stored(), new);
        let mut want = stored();
        want["status"] = json!({"replicas": 9});
        want["metadata"]["managedFields"] = json!([{"manager": "new"}]);
        assert_eq!(out, want);
        let mut gone = stored();
        gone.as_object_mut().unwrap().remove("status");
        gone["metadata"].as_object_mut().unwrap().remove("managedFields");
        let out = confine(&res(true, None), Part::Status, &stored(), gone.clone());
        assert_eq!(out, gone);
    }

    #[test]
    fn scale_view_of_an_object() {
        let (scale, spec) = to_scale(&SCALE, &stored()).unwrap();
        assert_eq!(spec, Some(2));
        assert_eq!(
            scale,
            json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
                   "metadata": {"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "7",
                                "creationTimestamp": "2026-01-01T00:00:00Z"},
                   "spec": {"replicas": 2}, "status": {"replicas": 1, "selector": "app=a"}})
        );
        let bare = json!({"metadata": {"name": "a"}, "spec": {}});
        let (scale, spec) = to_scale(&SCALE, &bare).unwrap();
        assert_eq!(spec, None);
        assert_eq!(scale["spec"], json!({}));
        assert_eq!(scale["status"], json!({"replicas": 0}));
    }

    #[test]
    fn scale_fields_are_validated_as_apiextensions_does() {
        let r = res(true, Some(SCALE));
        assert!(validate(&r, &stored()).is_empty());
        assert!(validate(&res(true, None), &json!({"spec": {"replicas": -1}})).is_empty());
        let bad =
            json!({"spec": {"replicas": -1}, "status": {"replicas": "x", "labelSelector": 3}});
        let msgs: Vec<String> =
            validate(&r, &bad).iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(
            msgs,
            [
                ".spec.replicas: Invalid value: -1: should be a non-negative integer",
                ".status.replicas: Invalid value: 0: .status.replicas accessor error: x is of the type string, expected int64",
                ".status.labelSelector: Invalid value: \"\": .status.labelSelector accessor error: 3 is of the type int64, expected string",
            ]
        );
        let msgs: Vec<String> = validate(&r, &json!({"spec": "x", "status": {"replicas": 1.5}}))
            .iter()
            .map(|c| c.message.clone())
            .collect();
        assert_eq!(
            msgs,
            [
                "Invalid value: 0: .spec.replicas accessor error: x is of the type string, expected map[string]interface{}",
                "Invalid value: 0: .status.replicas accessor error: 1.5 is of the type float64, expected int64",
            ]
        );
        let big = json!({"spec": {"replicas": 2147483648i64}});
        assert_eq!(
            validate(&r, &big)[0].message,
            "Invalid value: 2147483648: should be less than or equal to 2147483647"
        );
    }

    #[test]
    fn spec_replicas_decode_as_int32() {
        assert_eq!(spec_replicas_of(&json!({"spec": {"replicas": 4}}), false).unwrap(), 4);
        assert_eq!(spec_replicas_of(&json!({"spec": {}}), false).unwrap(), 0);
        assert_eq!(spec_replicas_of(&json!({}), true).unwrap(), 0);
        let e = spec_replicas_of(&json!({"spec": {"replicas": "3"}}), false).unwrap_err();
        assert_eq!(
            e,
            ApiError::bad_request(
                "Scale in version \"v1\" cannot be handled as a Scale: json: cannot unmarshal string into Go struct field ScaleSpec.spec.replicas of type int32"
            )
        );
        let e = spec_replicas_of(&json!({"spec": {"replicas": 1.5}}), true).unwrap_err();
        let ApiError::Invalid { causes, .. } = e else { panic!("{e:?}") };
        assert_eq!(causes[0].field, "patch");
        assert!(causes[0].message.ends_with("json: cannot unmarshal number 1.5 into Go struct field ScaleSpec.spec.replicas of type int32"));
    }

    #[test]
    fn sets_nested_fields() {
        let mut v = json!({"spec": null});
        set_nested(&mut v, ".spec.scale.replicas", json!(3)).unwrap();
        assert_eq!(v, json!({"spec": {"scale": {"replicas": 3}}}));
        let mut v = json!({"spec": "x"});
        assert!(set_nested(&mut v, ".spec.replicas", json!(3)).is_err());
    }
}
