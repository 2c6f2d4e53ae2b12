//! The OpenAPI `default` keyword, applied as apiextensions' structural defaulting applies it to
//! custom resources (after pruning, on create and update): a field its schema gives a default
//! is set to it where the field is missing, in every object the value holds. kube's built-in
//! kinds default some fields the same way (a Secret's `type` is `Opaque`, `SetDefaults_Secret`).
//! A number where the schema has a `resource.Quantity` (`x-virt-proto-type: quantity`) is
//! stored as its text, as kube's decoding of a Quantity serializes it (`cpu: 2` reads back "2").

use serde_json::Value;

use crate::object::schema::{self, Node};
use crate::resource::ResourceInfo;

/// Sets the schema's defaults in `obj` (metadata is ObjectMeta's own and left alone).
pub fn apply(res: &ResourceInfo, obj: &mut Value) {
    if let Some(kind) = schema::kind_node(res) {
        walk(obj, schema::nodes(), schema::node(Some(kind)), true);
    }
}

/// `apply` for a write through `/status`, which changes nothing else: the rest of the object is
/// the stored one, defaulted when it was written, so only `status` is walked.
pub fn apply_to_status(res: &ResourceInfo, obj: &mut Value) {
    let Some(kind) = schema::kind_node(res) else { return };
    let Some(prop) = schema::node(Some(kind)).declared("status") else { return };
    let Some(map) = obj.as_object_mut() else { return };
    if map.get("status").is_none_or(Value::is_null) {
        match prop.default {
            Some(default) => _ = map.insert("status".into(), default.clone()),
            None => return,
        }
    }
    if let Some(status) = map.get_mut("status") {
        walk(status, schema::nodes(), schema::node(prop.node), false);
    }
}

/// Defaults `v` by `schema`, a node of the compiled schema `nodes`, walking only the parts
/// whose nodes have `defaults`.
fn walk(v: &mut Value, nodes: &[Node], schema: &Node, root: bool) {
    match v {
        Value::Object(map) => {
            if schema.has_properties {
                for prop in schema.properties() {
                    if root && prop.name == "metadata" {
                        continue;
                    }
                    let Some(default) = prop.default else { continue };
                    if map.get(prop.name).is_none_or(Value::is_null) {
                        map.insert(prop.name.into(), default.clone());
                    }
                }
                for (k, child) in map.iter_mut() {
                    if root && k == "metadata" {
                        continue;
                    }
                    let Some(prop) = schema.declared(k) else { continue };
                    let child_schema = schema::node_in(nodes, prop.node);
                    if child_schema.defaults {
                        walk(child, nodes, child_schema, false);
                    }
                }
            } else if let Some(values) = schema.additional {
                let values = schema::node_in(nodes, values);
                if values.defaults {
                    for child in map.values_mut() {
                        walk(child, nodes, values, false);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.items {
                let item = schema::node_in(nodes, item);
                if item.defaults {
                    for child in items {
                        walk(child, nodes, item, false);
                    }
                }
            }
        }
        Value::Number(n) if schema.quantity => *v = Value::String(quantity_text(n)),
        _ => {}
    }
}

/// A JSON number as a Quantity's canonical text: whole numbers as they are, fractions in
/// thousandths (`0.5` is `500m`) where exact (resource.Quantity's canonical form).
fn quantity_text(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    let milli = f * 1000.0;
    if f.fract() == 0.0 && f.abs() < 9e15 {
        format!("{}", f as i64)
    } else if milli.fract() == 0.0 && milli.abs() < 9e15 {
        format!("{}m", milli as i64)
    } else {
        n.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_number_in_a_quantity_is_stored_as_its_text() {
        let schema = json!({"properties": {"spec": {"properties": {"requests": {
            "additionalProperties": {"type": "string", "x-virt-proto-type": "quantity"}}}}}});
        let obj = json!({"spec": {"requests": {"cpu": 2, "memory": "1Gi", "gpu": 0.5, "x": 1.0}}});
        let out = defaulted(schema, obj);
        assert_eq!(
            out["spec"]["requests"],
            json!({"cpu": "2", "memory": "1Gi", "gpu": "500m", "x": "1"})
        );
    }

    #[test]
    fn only_parts_of_a_schema_with_a_default_or_a_quantity_are_walked() {
        let schema: &'static Value = Box::leak(Box::new(json!({"properties": {
            "plain": {"properties": {"a": {"type": "string"}, "b": {"items": {"type": "integer"}}}},
            "deep": {"properties": {"x": {"items": {"properties": {"y": {"default": 1}}}}}},
            "sizes": {"additionalProperties": {"x-virt-proto-type": "quantity"}},
        }})));
        let (nodes, root) = schema::compile_alone(schema);
        let root = schema::node_in(&nodes, root);
        let prop = |k: &str| schema::node_in(&nodes, root.property(k).expect("declared"));
        assert!(!prop("plain").defaults);
        assert!(prop("deep").defaults);
        assert!(prop("sizes").defaults);
        assert!(root.defaults);
    }

    #[test]
    fn a_kind_is_walked_only_where_it_has_defaults() {
        // A Secret's `type` has a default; its metadata (ObjectMeta, whose managed fields and
        // owner references hold no default or quantity) is not walked.
        let kind = schema::node(schema::kind_node(secret()));
        assert!(kind.defaults);
        assert!(kind.declared("type").and_then(|p| p.default).is_some());
        assert!(!schema::node(kind.property("metadata").expect("declared")).defaults);
    }

    fn secret() -> &'static ResourceInfo {
        crate::generated::RESOURCES
            .iter()
            .find(|r| r.data_rules.is_some_and(|d| !d.write_only.is_empty()))
            .expect("a kind with a write-only map")
    }

    fn defaulted(schema: Value, mut obj: Value) -> Value {
        let (nodes, root) = schema::compile_alone(Box::leak(Box::new(schema)));
        walk(&mut obj, &nodes, schema::node_in(&nodes, root), true);
        obj
    }

    #[test]
    fn missing_fields_take_their_defaults_at_every_depth() {
        let schema = json!({"type": "object", "properties": {
            "type": {"type": "string", "default": "Opaque"},
            "spec": {"type": "object", "properties": {
                "n": {"type": "integer", "default": 3},
                "list": {"type": "array", "items": {"type": "object", "properties": {
                    "on": {"type": "boolean", "default": true}}}},
                "byName": {"type": "object", "additionalProperties": {"type": "object",
                    "properties": {"w": {"type": "integer", "default": 1}}}}}},
            "metadata": {"type": "object", "properties": {"name": {"default": "x"}}}}});
        assert_eq!(
            defaulted(
                schema.clone(),
                json!({"metadata": {}, "spec": {"list": [{}, {"on": false}],
                                              "byName": {"a": {}}}})
            ),
            json!({"type": "Opaque", "metadata": {},
                   "spec": {"n": 3, "list": [{"on": true}, {"on": false}],
                            "byName": {"a": {"w": 1}}}})
        );
        // A value that is set, even to "", is kept; a missing parent is not made.
        assert_eq!(defaulted(schema, json!({"type": ""})), json!({"type": ""}));
    }

    #[test]
    fn a_secret_defaults_to_opaque() {
        let mut obj = json!({"metadata": {"name": "s"}});
        apply(secret(), &mut obj);
        assert_eq!(obj["type"], "Opaque");
    }
}
