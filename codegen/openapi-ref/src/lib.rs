//! Follows an OpenAPI v2 schema's `$ref`s into the document's `definitions`: the one resolver
//! of the server (validation, pruning, defaults, managed fields, strategic merge patch, protobuf),
//! codegen (`x-virt-resource` paths checked against the schema) and the lifecycle checker.

use serde_json::Value;

/// Prefix of references into `definitions`.
pub const DEFINITIONS_REF: &str = "#/definitions/";

/// How many schemas [`resolve`] looks at, the one it is given included: a reference chain is
/// short; the bound only stops a cycle.
pub const MAX_STEPS: usize = 32;

/// `schema` past its `$ref`s into the definitions (`definition` looks one up by name) and a
/// one-element `allOf` (how kube's OpenAPI attaches a description to a reference).
///
/// `None` when a reference leads nowhere (not into `#/definitions/`, or to a name `definition`
/// does not know) or when no schema is reached within [`MAX_STEPS`] (a cycle); each caller
/// decides what such a schema means to it.
pub fn resolve<'a>(
    definition: impl Fn(&str) -> Option<&'a Value>,
    mut schema: &'a Value,
) -> Option<&'a Value> {
    for _ in 0..MAX_STEPS {
        if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
            schema = definition(r.strip_prefix(DEFINITIONS_REF)?)?;
        } else if let Some([only]) =
            schema.get("allOf").and_then(Value::as_array).map(Vec::as_slice)
        {
            schema = only;
        } else {
            return Some(schema);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Map};

    fn defs() -> Map<String, Value> {
        let doc = json!({
            "A": {"$ref": "#/definitions/B"},
            "B": {"$ref": "#/definitions/C"},
            "C": {"type": "object", "properties": {"x": {"type": "string"}}},
            "Wrapped": {"allOf": [{"$ref": "#/definitions/C"}], "description": "a C"},
            "Dangling": {"$ref": "#/definitions/Nothing"},
            "Loop1": {"$ref": "#/definitions/Loop2"},
            "Loop2": {"$ref": "#/definitions/Loop1"},
            "Self": {"allOf": [{"$ref": "#/definitions/Self"}]},
        });
        doc.as_object().unwrap().clone()
    }

    fn at<'a>(defs: &'a Map<String, Value>, schema: &'a Value) -> Option<&'a Value> {
        resolve(|name| defs.get(name), schema)
    }

    #[test]
    fn a_schema_without_reference_is_itself() {
        let defs = defs();
        let plain = json!({"type": "string"});
        assert_eq!(at(&defs, &plain), Some(&plain));
        // Several `allOf` members are a composition, not a wrapper: left as they are.
        let two = json!({"allOf": [{"$ref": "#/definitions/C"}, {"type": "object"}]});
        assert_eq!(at(&defs, &two), Some(&two));
    }

    #[test]
    fn a_chain_of_references_is_followed_to_its_end() {
        let defs = defs();
        let r = json!({"$ref": "#/definitions/A", "description": "beside the reference"});
        assert_eq!(at(&defs, &r), Some(&defs["C"]));
    }

    #[test]
    fn a_one_element_all_of_is_followed() {
        let defs = defs();
        assert_eq!(at(&defs, &json!({"$ref": "#/definitions/Wrapped"})), Some(&defs["C"]));
        let inline = json!({"allOf": [{"type": "integer"}], "description": "a count"});
        assert_eq!(at(&defs, &inline), Some(&json!({"type": "integer"})));
    }

    #[test]
    fn a_dangling_reference_is_none() {
        let defs = defs();
        assert_eq!(at(&defs, &json!({"$ref": "#/definitions/Nothing"})), None);
        // Dangling at the end of a chain.
        assert_eq!(at(&defs, &json!({"$ref": "#/definitions/Dangling"})), None);
        // Only references into the definitions are followed.
        assert_eq!(at(&defs, &json!({"$ref": "#/parameters/C"})), None);
        assert_eq!(at(&defs, &json!({"$ref": "C"})), None);
        // No definitions at all.
        assert_eq!(resolve(|_| None, &json!({"$ref": "#/definitions/C"})), None);
    }

    #[test]
    fn a_cycle_stops_at_the_bound() {
        let defs = defs();
        assert_eq!(at(&defs, &json!({"$ref": "#/definitions/Loop1"})), None);
        assert_eq!(at(&defs, &json!({"$ref": "#/definitions/Self"})), None);
        // A chain that ends within the bound resolves; one a step longer does not.
        let mut chain = Map::new();
        for i in 0..MAX_STEPS {
            chain.insert(format!("D{i}"), json!({"$ref": format!("#/definitions/D{}", i + 1)}));
        }
        chain.insert(format!("D{MAX_STEPS}"), json!({"type": "string"}));
        let from = |i: usize| json!({"$ref": format!("#/definitions/D{i}")});
        assert_eq!(at(&chain, &from(2)), Some(&json!({"type": "string"})));
        assert_eq!(at(&chain, &from(1)), None);
    }
}
