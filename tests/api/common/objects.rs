//! The kinds of the document and sample objects of each: paths, bodies valid against the
//! kind's schema, the repository's root.

use super::*;

/// The repository root.
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------------------------
// Per-kind paths and bodies, Status checks, and small readers shared by the API tests.

/// The served kind `plural` of `group` in `version`.
pub fn resource(group: &str, version: &str, plural: &str) -> &'static ResourceInfo {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
        .unwrap_or_else(|| panic!("no resource {plural}.{group}/{version} in RESOURCES"))
}

/// Every served (group, version, kind) that is kept in the store.
pub fn stored_resources() -> impl Iterator<Item = &'static ResourceInfo> {
    RESOURCES.iter().filter(|r| r.is_stored())
}

/// The preferred-version entry of `group`'s kind `plural`.
pub fn preferred(group: &str, plural: &str) -> &'static ResourceInfo {
    let g = GROUPS.iter().find(|g| g.name == group).expect("group in GROUPS");
    resource(group, g.versions[0], plural)
}

/// A collection path: the namespace is used for namespaced kinds (`None` = all namespaces) and
/// ignored for cluster kinds.
pub fn collection_path(res: &ResourceInfo, ns: Option<&str>) -> String {
    let prefix = api_prefix(res);
    match ns {
        Some(ns) if res.namespaced => format!("{prefix}/namespaces/{ns}/{}", res.plural),
        _ => format!("{prefix}/{}", res.plural),
    }
}

/// Where `res`'s group version is served: `/api/v1` for the legacy core group, else
/// `/apis/<group>/<version>`.
pub fn api_prefix(res: &ResourceInfo) -> String {
    if res.group.is_empty() {
        format!("/api/{}", res.version)
    } else {
        format!("/apis/{}/{}", res.group, res.version)
    }
}

/// One object's path (the namespace is ignored for cluster kinds).
pub fn item_path(res: &ResourceInfo, ns: &str, name: &str) -> String {
    format!("{}/{name}", collection_path(res, Some(ns)))
}

/// A `/watch/` path for a collection (`name` None) or one object.
pub fn watch_path(res: &ResourceInfo, ns: Option<&str>, name: Option<&str>) -> String {
    let prefix = api_prefix(res);
    let mut p = match ns {
        Some(ns) if res.namespaced => format!("{prefix}/watch/namespaces/{ns}/{}", res.plural),
        _ => format!("{prefix}/watch/{}", res.plural),
    };
    if let Some(n) = name {
        p.push('/');
        p.push_str(n);
    }
    p
}

/// A minimal valid create body for `res` (the namespace only on namespaced kinds; token
/// requests get their required field; the kind's content from `sample_content`).
pub fn object(res: &ResourceInfo, ns: &str, name: &str) -> Value {
    let mut meta = serde_json::json!({ "name": name });
    if res.namespaced {
        meta["namespace"] = Value::String(ns.to_string());
    }
    let mut obj = serde_json::json!({
        "apiVersion": res.api_version(),
        "kind": res.kind,
        "metadata": meta,
    });
    if let Some((field, value)) = sample_content(res, 42) {
        obj[field] = value;
    }
    // Fields the kind requires beside its content (a StorageClass's provisioner).
    let schema = kind_schema(res);
    for r in schema.get("required").and_then(Value::as_array).into_iter().flatten() {
        let Some(r) = r.as_str().filter(|r| obj.get(*r).is_none()) else { continue };
        let value = schema.pointer(&format!("/properties/{r}")).and_then(|s| sample_value(s, 42));
        obj[r] = value.unwrap_or_else(|| panic!("no sample {r} for {}", res.kind));
    }
    // kube's Event names the object it is about, in the Event's own namespace.
    if kind_schema(res).pointer("/properties/involvedObject").is_some() {
        obj["involvedObject"] = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                                                   "name": name, "namespace": ns});
    }
    if let Some(field) = res.token_field {
        let mut at = &mut obj;
        for part in field.split('.') {
            at = &mut at[part];
        }
        *at = Value::String(format!("{name}-pvc"));
    }
    obj
}

/// A small `spec` the kind's schema declares, different for each `n`: one field gets a value made
/// from `n` (booleans first, then integers, strings, enums, then objects with their required
/// fields; by name within each, so the choice does not depend on map order). Made-up fields would
/// be pruned, as kube prunes undeclared fields.
pub fn sample_spec(res: &ResourceInfo, n: i64) -> Value {
    let schema = kind_schema(res)
        .pointer("/properties/spec")
        .unwrap_or_else(|| panic!("{} declares its spec", res.kind));
    sample_value(schema, n).unwrap_or_else(|| panic!("no sample spec for {}", res.kind))
}

/// The field a test writes to give an object of `res` content, and its value for `n`: `spec`
/// where the kind has one a client writes; a ConfigMap's or Secret's `data`; an Event's
/// `message`; the addresses of Endpoints and EndpointSlices; whether a StorageClass expands
/// volumes (kube forbids changing its other fields). None for the namespaces' kind, whose spec
/// the server keeps (kube's namespace strategy ignores a client's spec.finalizers).
pub fn sample_content(res: &ResourceInfo, n: i64) -> Option<(&'static str, Value)> {
    if res.namespaces {
        return None;
    }
    // A Fault's spec must be one that can fire (its validation), here one that never does.
    if res.kube_role == Some(virt_apiserver::resource::KubeRole::Fault) {
        let spec = serde_json::json!({"match": {"names": [format!("no-such-name-{n}")]},
                                      "action": {"status": {"code": 500}}});
        return Some(("spec", spec));
    }
    let props = kind_schema(res).get("properties").and_then(Value::as_object);
    let props = props.unwrap_or_else(|| panic!("{} declares its properties", res.kind));
    for field in ["spec", "data", "message", "subsets", "endpoints", "allowVolumeExpansion"] {
        if let Some(schema) = props.get(field) {
            let value = sample_value(schema, n)
                .unwrap_or_else(|| panic!("no sample {field} for {}", res.kind));
            return Some((field, value));
        }
    }
    panic!("{} has no field sample_content knows: give it a sample", res.kind)
}

/// `res`'s resolved schema in the served document.
fn kind_schema(res: &ResourceInfo) -> &'static Value {
    virt_apiserver::validation::kind_schema(res)
        .unwrap_or_else(|| panic!("the document has {}'s schema", res.kind))
}

fn sample_value(schema: &Value, n: i64) -> Option<Value> {
    let schema = virt_apiserver::validation::resolve(schema);
    let enumerated = schema.get("enum").and_then(Value::as_array);
    match schema.get("type").and_then(Value::as_str) {
        // Bytes travel in base64, as a Secret's data.
        Some("string") if schema.get("format") == Some(&"byte".into()) => {
            use base64::Engine as _;
            Some(Value::String(base64::engine::general_purpose::STANDARD.encode(format!("v{n}"))))
        }
        Some("string") if schema.get("format").is_none() => Some(match enumerated {
            Some(values) => values[n.unsigned_abs() as usize % values.len()].clone(),
            None => Value::String(format!("v{n}")),
        }),
        Some("integer") => Some(Value::from(n)),
        // A list of one.
        Some("array") => Some(Value::Array(vec![sample_value(schema.get("items")?, n)?])),
        Some("boolean") => Some(Value::Bool(n % 2 == 0)),
        Some("object") => {
            let props = schema.get("properties").and_then(Value::as_object);
            if props.is_none() {
                // A map of strings (a ConfigMap's or Secret's data), one entry.
                let values = schema.get("additionalProperties")?;
                if values.get("type") != Some(&"string".into()) {
                    return None;
                }
                return Some(serde_json::json!({"k": sample_value(values, n)?}));
            }
            let props = props?;
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = serde_json::Map::new();
            for r in &required {
                out.insert(r.to_string(), sample_value(props.get(*r)?, n)?);
            }
            if out.is_empty() {
                let rank = |s: &Value| match (s.get("type").and_then(Value::as_str), s.get("enum"))
                {
                    (Some("boolean"), _) => 0,
                    (Some("integer"), _) => 1,
                    (Some("string"), None) => 2,
                    (Some("string"), Some(_)) => 3,
                    (Some("array"), _) => 5,
                    _ => 4,
                };
                let mut candidates: Vec<(&String, &Value)> = props.iter().collect();
                candidates.sort_by_key(|(k, s)| (rank(s), k.as_str()));
                let (k, v) =
                    candidates.into_iter().find_map(|(k, s)| Some((k, sample_value(s, n)?)))?;
                out.insert(k.clone(), v);
            }
            Some(Value::Object(out))
        }
        _ => None,
    }
}

/// `object` with labels.
pub fn labelled(res: &ResourceInfo, ns: &str, name: &str, labels: Value) -> Value {
    let mut obj = object(res, ns, name);
    obj["metadata"]["labels"] = labels;
    obj
}
