//! The served OpenAPI document, parsed once, as the schemas everything else reads: validation,
//! field ownership (managed fields), the protobuf decoder, and which paths need credentials.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use crate::generated::OPENAPI_V2;
use crate::resource::ResourceInfo;

struct Parsed {
    doc: Value,
    /// `(group, version, kind)` → definition name.
    by_gvk: HashMap<(String, String, String), String>,
}

fn parsed() -> &'static Parsed {
    static PARSED: OnceLock<Parsed> = OnceLock::new();
    PARSED.get_or_init(|| {
        // Codegen parsed these very bytes at build time; they cannot fail to parse here.
        let doc: Value = serde_json::from_slice(OPENAPI_V2).expect("the embedded document is JSON");
        let mut by_gvk = HashMap::new();
        let defs = doc.get("definitions").and_then(Value::as_object);
        for (name, def) in defs.into_iter().flatten() {
            let gvks = def.get("x-kubernetes-group-version-kind").and_then(Value::as_array);
            for gvk in gvks.into_iter().flatten() {
                let part = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                by_gvk.insert((part("group"), part("version"), part("kind")), name.clone());
            }
        }
        Parsed { doc, by_gvk }
    })
}

/// The whole document.
pub fn document() -> &'static Value {
    &parsed().doc
}

/// The definition the document gives a group, version and kind.
pub fn gvk_definition(group: &str, version: &str, kind: &str) -> Option<&'static Value> {
    let p = parsed();
    let name = p.by_gvk.get(&(group.to_string(), version.to_string(), kind.to_string()))?;
    p.doc.get("definitions")?.get(name)
}

/// The definition of `res`'s kind in `res`'s version.
pub fn kind_definition(res: &ResourceInfo) -> Option<&'static Value> {
    gvk_definition(res.group, res.version, res.kind)
}

/// `schema` past its `$ref`s into the definitions and a one-element `allOf` (how kube's
/// OpenAPI attaches a description to a reference); `None` when a reference leads nowhere.
pub fn resolve(schema: &Value) -> Option<&Value> {
    let defs = document().get("definitions");
    openapi_ref::resolve(|name| defs?.get(name), schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_served_kind_has_its_definition() {
        for res in crate::generated::RESOURCES {
            let def = kind_definition(res).unwrap_or_else(|| panic!("{}", res.group_resource()));
            assert!(def.get("x-kubernetes-group-version-kind").is_some());
        }
    }

    #[test]
    fn references_and_single_all_ofs_resolve() {
        let meta = json!({"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"});
        let wrapped = json!({"allOf": [meta.clone()], "description": "standard metadata"});
        let direct = resolve(&meta).unwrap();
        assert!(direct.pointer("/properties/name").is_some());
        assert_eq!(resolve(&wrapped), Some(direct));
        assert_eq!(resolve(&json!({"$ref": "#/definitions/nothing"})), None);
        let plain = json!({"type": "string"});
        assert_eq!(resolve(&plain), Some(&plain));
    }
}
