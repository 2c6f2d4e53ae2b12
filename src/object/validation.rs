//! Schema validation of written objects against their kind's definition in the embedded OpenAPI
//! document, as kube-apiserver treats structural custom resources (B.3, B.10).
//!
//! A write goes through two steps. `admit` is decoding: fields the schema does not declare are
//! pruned (always, as kube prunes them for every structural CR), and `fieldValidation` decides
//! what the client hears about them and about duplicate JSON keys: nothing (`Ignore`), `Warning`
//! headers (`Warn`, the default) or a rejection (`Strict`: 400 for a body, 422 on the field
//! `patch` for a patch). `check` is validation: wrong types, values outside an enum, missing
//! required fields and duplicate list-map keys are 422 Invalid whatever `fieldValidation` says.
//!
//! `metadata` is ObjectMeta: its unknown fields are pruned and reported like any other, but its
//! values are left to `meta::validate`, which words its errors as kube's ObjectMeta validation.
//! Below a schema that lists no `properties` (or keeps unknown fields) nothing is pruned.

use serde_json::{Map, Value};

use crate::object::error::{ApiError, Cause};
use crate::object::schema::{Node, NodeId};
use crate::object::strict_decoding as strict;
use crate::object::{meta, schema};
use crate::resource::ResourceInfo;

/// `fieldValidation`: what a write does with unknown and repeated fields.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

/// The definition of `res`'s kind in `res`'s version.
pub fn kind_schema(res: &ResourceInfo) -> Option<&'static Value> {
    schema::kind_definition(res)
}

/// `schema` past its references; one that leads nowhere is an open schema.
pub fn resolve(schema: &Value) -> &Value {
    static OPEN: Value = Value::Null;
    schema::resolve(schema).unwrap_or(&OPEN)
}

/// What admitting a body found that the request goes on with.
#[derive(Debug, Default)]
pub struct Admitted {
    /// `Warning` header texts (only under `Warn`).
    pub warnings: Vec<String>,
}

/// How the object being admitted arrived, with what its duplicate keys are found in.
#[derive(Debug, Clone, Copy)]
pub enum Via<'a> {
    /// The whole object, as a JSON POST or PUT body: the paths of the keys it repeats, found
    /// as it was decoded (`strict_decoding::from_json_noting_duplicates`).
    Body(&'a [String]),
    /// The whole object, as a YAML POST or PUT body (yaml.v2 words its duplicate keys by line).
    YamlBody(&'a str),
    /// The stored object with this merge patch applied.
    MergePatch(&'a [u8]),
    /// The stored object with this JSON patch applied (its operations are decoded strictly).
    JsonPatch(&'a [u8]),
    /// The stored object with this strategic merge patch applied: its text, and the object it
    /// decoded to, which kube quotes (as Go prints it) in a strict rejection.
    StrategicMergePatch(&'a [u8], &'a Value),
}

fn duplicate_field(path: &str) -> String {
    format!("duplicate field \"{path}\"")
}

/// Decodes `obj` as kube's CR decoder does: prunes undeclared fields whatever `mode` says, then
/// says nothing about them and duplicate keys (`Ignore`), returns them as warnings (`Warn`), or
/// rejects the request (`Strict`).
pub fn admit(
    res: &ResourceInfo,
    obj: &mut Value,
    via: Via<'_>,
    mode: FieldValidation,
) -> Result<Admitted, ApiError> {
    // kube quotes the patched object, before pruning, in a strict patch rejection.
    let patched = match (via, mode) {
        (Via::MergePatch(_) | Via::JsonPatch(_), FieldValidation::Strict) => Some(obj.to_string()),
        // handlers/patch.go `applyPatchToObject` quotes `fmt.Sprintf("%+v", patchMap)`.
        (Via::StrategicMergePatch(_, patch), FieldValidation::Strict) => {
            Some(crate::object::strategic_patch::go_v(patch))
        }
        _ => None,
    };
    let mut warnings: Vec<String> = Vec::new();
    let mut errs: Vec<String> = Vec::new();
    if mode != FieldValidation::Ignore {
        match via {
            Via::Body(found) => errs.extend(found.iter().map(|p| duplicate_field(p))),
            Via::MergePatch(raw) | Via::StrategicMergePatch(raw, _) => {
                errs.extend(strict::duplicate_fields(raw).iter().map(|p| duplicate_field(p)))
            }
            Via::JsonPatch(raw) => errs.extend(strict::json_patch_field_errors(raw)),
            Via::YamlBody(text) => {
                let lines = strict::yaml_duplicate_keys(text);
                // One error listing every line, as yaml.v2's TypeError; one warning per line.
                if mode == FieldValidation::Strict && !lines.is_empty() {
                    errs.push(format!("yaml: unmarshal errors:\n  {}", lines.join("\n  ")));
                } else {
                    warnings.extend(lines);
                }
            }
        }
    }
    let unknown = prune(res, obj);
    if mode == FieldValidation::Ignore {
        return Ok(Admitted::default());
    }
    errs.extend(unknown.iter().map(|p| format!("unknown field \"{p}\"")));
    if mode == FieldValidation::Warn {
        warnings.extend(errs);
        return Ok(Admitted { warnings });
    }
    if errs.is_empty() {
        return Ok(Admitted::default());
    }
    let detail = format!("strict decoding error: {}", errs.join(", "));
    match patched {
        // handlers/patch.go: an Invalid on the field `patch`, with no kind or name.
        Some(patched) => Err(ApiError::Invalid {
            group: String::new(),
            details_kind: String::new(),
            qualified: String::new(),
            name: String::new(),
            causes: vec![Cause::invalid("patch", &meta::quote(&patched), &detail)],
        }),
        None => Err(ApiError::bad_request(format!(
            "{kind} in version \"{}\" cannot be handled as a {kind}: {detail}",
            res.version,
            kind = res.kind
        ))),
    }
}

/// The paths of fields an apply configuration sets that the kind's schema does not declare,
/// as structured-merge-diff words them (`.spec.foo`), or nothing.
pub fn undeclared_in_apply(gvk: (&str, &str, &str), config: &Value) -> Vec<String> {
    let mut copy = config.clone();
    prune_by(schema::gvk_node(gvk.0, gvk.1, gvk.2), &mut copy)
        .into_iter()
        .map(|p| format!(".{p}"))
        .collect()
}

/// Validates an admitted object: types, enums, required fields and list keys (not metadata).
pub fn check(res: &ResourceInfo, obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(kind) = schema::kind_node(res) else { return causes };
    let schema = schema::node(Some(kind));
    let (Some(map), true) = (obj.as_object(), schema.has_properties) else {
        return causes;
    };
    let mut path = String::new();
    for (k, v) in map {
        if let (false, Some(s)) = (k == "metadata", schema.property(k)) {
            path.push_str(k);
            check_value(v, schema::node(s), &mut path, &mut causes);
            path.clear();
        }
    }
    causes
}

// serde_json's `Map` is a `BTreeMap` in this build (no `preserve_order`), so walking a map
// visits its keys in the sorted order kube reports them in.

/// Runs `f` with `path` extended by the field `key` (kube's `spec.x`), then restores it: one
/// buffer serves a whole walk, and a path is only copied when a finding keeps it.
fn at_field<R>(path: &mut String, key: &str, f: impl FnOnce(&mut String) -> R) -> R {
    let len = path.len();
    if len > 0 {
        path.push('.');
    }
    path.push_str(key);
    let r = f(path);
    path.truncate(len);
    r
}

/// As [`at_field`], for the item `i` of a list (`spec.list[3]`).
fn at_index<R>(path: &mut String, i: usize, f: impl FnOnce(&mut String) -> R) -> R {
    use std::fmt::Write;
    let len = path.len();
    let _ = write!(path, "[{i}]");
    let r = f(path);
    path.truncate(len);
    r
}

/// Removes every field the kind's schema does not declare and returns their paths, kube-style
/// (`spec.bogus`, `spec.list[0].x`, `metadata.unknownMeta`), in key order with metadata last. Nulls where the
/// schema allows none are dropped too, silently, as kube's `PruneNonNullableNullsWithoutDefaults`.
pub fn prune(res: &ResourceInfo, obj: &mut Value) -> Vec<String> {
    prune_by(schema::kind_node(res), obj)
}

fn prune_by(kind: Option<NodeId>, obj: &mut Value) -> Vec<String> {
    let Some(kind) = kind else { return Vec::new() };
    let schema = schema::node(Some(kind));
    let mut pruned = Vec::new();
    let mut meta_pruned = Vec::new();
    if let Some(meta_schema) = schema.property("metadata") {
        if let Some(m) = obj.get_mut("metadata") {
            let mut path = String::from("metadata");
            let meta_schema = schema::node(meta_schema);
            prune_value(m, meta_schema, &mut path, &mut meta_pruned, false, false);
        }
    }
    prune_value(obj, schema, &mut String::new(), &mut pruned, true, true);
    pruned.extend(meta_pruned);
    pruned
}

/// kube's pruning walk (apiextensions schema/pruning). `root` skips `metadata`, walked apart.
fn prune_value(
    v: &mut Value,
    schema: &Node,
    path: &mut String,
    out: &mut Vec<String>,
    drop_nulls: bool,
    root: bool,
) {
    match v {
        Value::Object(map) => {
            if !schema.has_properties && !schema.has_additional {
                return;
            }
            let mut gone = Vec::new();
            for (k, value) in map.iter_mut() {
                if root && k == "metadata" {
                    continue;
                }
                match schema.entry(k) {
                    Some(child) => {
                        let child = schema::node(child);
                        if drop_nulls && value.is_null() && !child.nullable {
                            gone.push(k.clone());
                        } else {
                            at_field(path, k, |path| {
                                prune_value(value, child, path, out, drop_nulls, false)
                            });
                        }
                    }
                    None if schema.keeps_unknown => {}
                    None => {
                        out.push(at_field(path, k, |path| path.clone()));
                        gone.push(k.clone());
                    }
                }
            }
            for k in gone {
                map.remove(&k);
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.items {
                let item_schema = schema::node(item_schema);
                for (i, item) in items.iter_mut().enumerate() {
                    at_index(path, i, |path| {
                        prune_value(item, item_schema, path, out, drop_nulls, false)
                    });
                }
            }
        }
        _ => {}
    }
}

/// The JSON type go-openapi names for a value (kube decodes whole numbers as integers).
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn is_integer(v: &Value) -> bool {
    v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0)
}

/// kube's two-form types, declared `string` in its document: an IntOrString's integer form
/// (`format: int-or-string`) and a Quantity's number form (`x-virt-proto-type: quantity`).
fn other_form(schema: &Node, v: &Value) -> bool {
    (schema.int_or_string_format && is_integer(v)) || (schema.quantity && v.is_number())
}

fn type_matches(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "boolean" => v.is_boolean(),
        "integer" => is_integer(v),
        "number" => v.is_number(),
        _ => true,
    }
}

/// `FieldValueTypeInvalid` as kube's CR validation words it.
fn type_invalid(path: &str, want: &str, v: &Value) -> Cause {
    let got = json_type(v);
    Cause {
        reason: "FieldValueTypeInvalid",
        message: format!(
            "Invalid value: \"{got}\": {path} in body must be of type {want}: \"{got}\""
        ),
        field: path.to_string(),
    }
}

/// A value as Go's field errors print it: strings quoted, numbers and booleans bare, objects as
/// `map[string]interface {}{...}`.
fn go_repr(v: &Value) -> String {
    match v {
        Value::String(s) => meta::quote(s),
        Value::Null => "<nil>".into(),
        Value::Object(m) => {
            let parts: Vec<String> =
                m.iter().map(|(k, v)| format!("{}:{}", meta::quote(k), go_repr(v))).collect();
            format!("map[string]interface {{}}{{{}}}", parts.join(", "))
        }
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(go_repr).collect();
            format!("[]interface {{}}{{{}}}", parts.join(", "))
        }
        other => other.to_string(),
    }
}

fn check_value(v: &Value, schema: &Node, path: &mut String, causes: &mut Vec<Cause>) {
    // A null no pruning removed is a built-in kind's zero value, as Go's decoding reads it
    // (a condition's `lastProbeTime: null`, which kube itself writes): not a type error.
    // Custom resources never keep one (`prune` drops nulls their schema does not allow).
    if v.is_null() {
        return;
    }
    match schema.ty {
        Some(t) if !type_matches(v, t) && !other_form(schema, v) => {
            causes.push(type_invalid(path, t, v));
            return;
        }
        None if schema.int_or_string && !(is_integer(v) || v.is_string()) => {
            causes.push(type_invalid(path, "integer,string", v));
            return;
        }
        _ => {}
    }
    if let Some(allowed) = schema.enum_values {
        if !allowed.contains(v) {
            let names: Vec<String> = allowed
                .iter()
                .map(|a| a.as_str().map_or_else(|| a.to_string(), String::from))
                .collect();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let value = v.as_str().map_or_else(|| v.to_string(), String::from);
            causes.push(Cause::not_supported(path, &value, &refs));
        }
    }
    match v {
        Value::Object(map) => {
            for r in schema.required.iter().filter(|r| !map.contains_key(**r)) {
                causes.push(at_field(path, r, |path| Cause::required(path, "")));
            }
            for (k, value) in map {
                if let Some(s) = schema.entry(k) {
                    at_field(path, k, |path| check_value(value, schema::node(s), path, causes));
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.items {
                let item_schema = schema::node(item_schema);
                for (i, item) in items.iter().enumerate() {
                    at_index(path, i, |path| check_value(item, item_schema, path, causes));
                }
            }
            check_list_type(items, schema, path, causes);
        }
        _ => {}
    }
}

/// `x-kubernetes-list-type` `set` and `map` forbid duplicate items and duplicate keys.
fn check_list_type(items: &[Value], schema: &Node, path: &str, causes: &mut Vec<Cause>) {
    let keys = &schema.list_map_keys;
    let mut seen: Vec<Value> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let identity = match schema.list_type {
            Some("set") => item.clone(),
            Some("map") if !keys.is_empty() => {
                let Some(obj) = item.as_object() else { continue };
                let key: Map<String, Value> = keys
                    .iter()
                    .filter_map(|k| obj.get(k).map(|v| (k.to_string(), v.clone())))
                    .collect();
                Value::Object(key)
            }
            _ => return,
        };
        if seen.contains(&identity) {
            causes.push(Cause {
                reason: "FieldValueDuplicate",
                message: format!("Duplicate value: {}", go_repr(&identity)),
                field: format!("{path}[{i}]"),
            });
        } else {
            seen.push(identity);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generated::RESOURCES;
    use crate::object::At;
    use serde_json::json;

    #[test]
    fn maps_iterate_in_key_order() {
        // The walks report fields in map order and rely on it being kube's sorted order: this
        // fails if a dependency turns on serde_json's `preserve_order`.
        let m = json!({"b": 1, "a": 2, "C": 3});
        let keys: Vec<&String> = m.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["C", "a", "b"]);
    }

    fn kind(group: &str, version: &str, kind: &str) -> &'static ResourceInfo {
        RESOURCES
            .iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
            .expect("kind served")
    }

    fn vm() -> &'static ResourceInfo {
        kind("kubevirt.io", "v1", "VirtualMachine")
    }

    /// Every kind has a schema, and a spec (when it has one: a ConfigMap has none) that lists
    /// its fields.
    #[test]
    fn every_kind_has_a_schema_with_declared_spec() {
        for res in RESOURCES {
            let schema = kind_schema(res).unwrap_or_else(|| panic!("{} {}", res.kind, res.version));
            let Some(spec) = schema.at("/properties/spec") else {
                // kube's ConfigMap, Secret, Event, Endpoints, EndpointSlice and StorageClass
                // keep their fields beside metadata.
                assert!(res.strategic_merge_patch, "{} declares its spec", res.kind);
                let fields = schema["properties"].as_object().map_or(0, |p| p.len());
                assert!(fields > 3, "{} lists fields beside its type and metadata", res.kind);
                continue;
            };
            assert!(resolve(spec).get("properties").is_some(), "{} lists its spec", res.kind);
            // The compiled schema says the same.
            let kind = schema::node(schema::kind_node(res));
            let spec = schema::node(kind.property("spec").expect("spec is declared"));
            assert!(spec.has_properties, "{} lists its spec fields", res.kind);
            assert!(!spec.keeps_unknown, "{}", res.kind);
        }
    }

    #[test]
    fn prunes_unknown_fields_and_nulls() {
        let mut obj = json!({
            "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "bogus": 1,
            "metadata": {"name": "a", "unknownMeta": "x", "labels": {"k": "v"}},
            "spec": {"running": null, "bogus": {"deep": 1}, "runStrategy": "Always",
                     "template": {"spec": {"domain": {"devices": {"any": 1}, "free": true},
                                           "volumes": [{"name": "d", "containerDisk": {}}],
                                           "nope": 1}}},
            "status": {"conditions": [{"type": "Ready", "status": "True", "extra": 1}]},
        });
        let pruned = prune(vm(), &mut obj);
        assert_eq!(
            pruned,
            [
                "bogus",
                "spec.bogus",
                "spec.template.spec.nope",
                "status.conditions[0].extra",
                "metadata.unknownMeta"
            ]
        );
        assert_eq!(obj["metadata"], json!({"name": "a", "labels": {"k": "v"}}));
        assert_eq!(
            obj["spec"],
            json!({"runStrategy": "Always", "template": {"spec": {
                "domain": {"devices": {"any": 1}, "free": true},
                "volumes": [{"name": "d", "containerDisk": {}}]}}})
        );
    }

    #[test]
    fn checks_types_enums_required_and_list_keys() {
        let obj = json!({
            "spec": {"running": "yes", "runStrategy": "Sometimes",
                     "instancetype": {"kind": "x", "inferFromVolumeFailurePolicy": "Maybe"},
                     "template": {"spec": {"volumes": [{"name": "a"}, {"name": "a"}, {}]}}},
            "status": {"ready": 1.0, "conditions": [{"type": "Ready"}]},
        });
        let causes = check(vm(), &obj);
        let rendered: Vec<String> =
            causes.iter().map(|c| format!("{}: {} ({})", c.field, c.message, c.reason)).collect();
        assert_eq!(
            rendered,
            [
                "spec.instancetype.inferFromVolumeFailurePolicy: Unsupported value: \"Maybe\": supported values: \"Reject\", \"Ignore\" (FieldValueNotSupported)",
                "spec.runStrategy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"RerunOnFailure\", \"Manual\", \"Halted\", \"Once\", \"WaitAsReceiver\" (FieldValueNotSupported)",
                "spec.running: Invalid value: \"string\": spec.running in body must be of type boolean: \"string\" (FieldValueTypeInvalid)",
                "spec.template.spec.volumes[2].name: Required value (FieldValueRequired)",
                "spec.template.spec.volumes[1]: Duplicate value: map[string]interface {}{\"name\":\"a\"} (FieldValueDuplicate)",
                "status.conditions[0].status: Required value (FieldValueRequired)",
                "status.ready: Invalid value: \"number\": status.ready in body must be of type boolean: \"number\" (FieldValueTypeInvalid)",
            ]
        );
    }

    #[test]
    fn int_or_string_and_integers() {
        let it = kind("instancetype.kubevirt.io", "v1alpha2", "VirtualMachineInstancetype");
        let ok = json!({"spec": {"cpu": {"guest": 2.0}, "memory": {"guest": "2Gi"}}});
        assert!(check(it, &ok).is_empty());
        let bad = json!({"spec": {"cpu": {"guest": 1.5}, "memory": {"guest": true}}});
        let fields: Vec<String> = check(it, &bad).iter().map(|c| c.message.clone()).collect();
        assert_eq!(
            fields,
            [
                "Invalid value: \"number\": spec.cpu.guest in body must be of type integer: \"number\"",
                "Invalid value: \"boolean\": spec.memory.guest in body must be of type integer,string: \"boolean\"",
            ]
        );
        // kube's own IntOrString and Quantity, declared strings, take their other JSON form.
        let svc = kind("", "v1", "Service");
        let ports = json!({"spec": {"ports": [{"port": 80, "targetPort": 8080},
                                              {"port": 81, "targetPort": "web"}]}});
        assert!(check(svc, &ports).is_empty());
        let bad = json!({"spec": {"ports": [{"port": 80, "targetPort": 1.5}]}});
        assert_eq!(check(svc, &bad).len(), 1);
        let pvc = kind("", "v1", "PersistentVolumeClaim");
        let sized = json!({"spec": {"resources": {"requests": {"storage": 1024, "x": "1Gi"}}}});
        assert!(check(pvc, &sized).is_empty());
        assert_eq!(
            check(pvc, &json!({"spec": {"resources": {"requests": {"storage": true}}}})).len(),
            1
        );
    }

    #[test]
    fn strict_warn_and_ignore() {
        let body = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
                          "spec": {"bogus": 1, "other": 2}});
        let raw = br#"{"spec":{"bogus":1,"other":2,"running":true,"running":false}}"#;
        let (_, found) = strict::from_json_noting_duplicates(raw).unwrap();
        let raw = found.as_slice();
        let mut obj = body.clone();
        let err = admit(vm(), &mut obj, Via::Body(raw), FieldValidation::Strict).unwrap_err();
        assert_eq!(
            err,
            ApiError::BadRequest("VirtualMachine in version \"v1\" cannot be handled as a VirtualMachine: strict decoding error: duplicate field \"spec.running\", unknown field \"spec.bogus\", unknown field \"spec.other\"".into())
        );
        let mut obj = body.clone();
        let found = admit(vm(), &mut obj, Via::Body(raw), FieldValidation::Warn).unwrap();
        assert_eq!(found.warnings.len(), 3);
        assert_eq!(obj["spec"], json!({}));
        let mut obj = body.clone();
        let found = admit(vm(), &mut obj, Via::Body(raw), FieldValidation::Ignore).unwrap();
        assert!(found.warnings.is_empty());
        assert_eq!(obj["spec"], json!({}), "Ignore prunes too");
        let mut obj = body;
        let err =
            admit(vm(), &mut obj, Via::MergePatch(b"{}"), FieldValidation::Strict).unwrap_err();
        let st = serde_json::to_value(err.to_status()).unwrap();
        assert_eq!(st["code"], 422);
        assert_eq!(st["details"]["causes"][0]["field"], "patch");
        assert!(st["message"]
            .as_str()
            .unwrap()
            .starts_with(" \"\" is invalid: patch: Invalid value: \"{"));
        assert!(st["message"].as_str().unwrap().ends_with(
            "strict decoding error: unknown field \"spec.bogus\", unknown field \"spec.other\""
        ));
    }
}
