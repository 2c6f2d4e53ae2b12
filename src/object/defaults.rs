//! The OpenAPI `default` keyword, applied as apiextensions' structural defaulting applies it to
//! custom resources (after pruning, on create and update): a field its schema gives a default
//! is set to it where the field is missing, in every object the value holds. kube's built-in
//! kinds default some fields the same way (a Secret's `type` is `Opaque`, `SetDefaults_Secret`).
//! A number where the schema has a `resource.Quantity` (`x-virt-proto-type: quantity`) is
//! stored as its text, as kube's decoding of a Quantity serializes it (`cpu: 2` reads back "2").

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::Value;

use crate::object::validation::{kind_schema, resolve};
use crate::resource::ResourceInfo;

/// Sets the schema's defaults in `obj` (metadata is ObjectMeta's own and left alone).
pub fn apply(res: &ResourceInfo, obj: &mut Value) {
    if let Some(schema) = kind_schema(res) {
        walk(obj, schema, true);
    }
}

/// `apply` for a write through `/status`, which changes nothing else: the rest of the object is
/// the stored one, defaulted when it was written, so only `status` is walked.
pub fn apply_to_status(res: &ResourceInfo, obj: &mut Value) {
    let Some(schema) = kind_schema(res) else { return };
    let Some(prop) = resolve(schema).get("properties").and_then(|p| p.get("status")) else {
        return;
    };
    let Some(map) = obj.as_object_mut() else { return };
    if map.get("status").is_none_or(Value::is_null) {
        match prop.get("default").or_else(|| resolve(prop).get("default")) {
            Some(default) => _ = map.insert("status".into(), default.clone()),
            None => return,
        }
    }
    if let Some(status) = map.get_mut("status") {
        walk(status, prop, false);
    }
}

fn walk(v: &mut Value, schema: &'static Value, root: bool) {
    let schema = resolve(schema);
    match v {
        Value::Object(map) => {
            if let Some(props) = schema.get("properties").and_then(Value::as_object) {
                for (k, prop) in props {
                    if root && k == "metadata" {
                        continue;
                    }
                    let missing = map.get(k).is_none_or(Value::is_null);
                    // A reference's own default (beside its `$ref`) comes first.
                    let default = prop.get("default").or_else(|| resolve(prop).get("default"));
                    if let Some(default) = default.filter(|_| missing) {
                        map.insert(k.clone(), default.clone());
                    }
                }
                for (k, child) in map.iter_mut() {
                    if let Some(prop) = props.get(k).filter(|_| !(root && k == "metadata")) {
                        if has_work(prop) {
                            walk(child, prop, false);
                        }
                    }
                }
            } else if let Some(values) =
                schema.get("additionalProperties").filter(|a| a.is_object() && has_work(a))
            {
                for child in map.values_mut() {
                    walk(child, values, false);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items").filter(|i| has_work(i)) {
                for child in items {
                    walk(child, item, false);
                }
            }
        }
        Value::Number(n)
            if schema.get("x-virt-proto-type").and_then(Value::as_str) == Some("quantity") =>
        {
            *v = Value::String(quantity_text(n));
        }
        _ => {}
    }
}

thread_local! {
    /// `has_work` per schema node, by address: the document is static, so an address names one
    /// node for the life of the process.
    static WORK: RefCell<HashMap<usize, bool>> = RefCell::new(HashMap::new());
}

/// Whether `walk` can change a value under `schema`: a default or a quantity somewhere below
/// it. Most of a kind's schema has neither, and a write walks only the parts that do.
fn has_work(schema: &'static Value) -> bool {
    let addr = schema as *const Value as usize;
    if let Some(known) = WORK.with(|w| w.borrow().get(&addr).copied()) {
        return known;
    }
    // A node met again while its own answer is being found (a recursive schema) counts as
    // having work: at worst a part is walked for nothing.
    WORK.with(|w| w.borrow_mut().insert(addr, true));
    let work = find_work(schema);
    WORK.with(|w| w.borrow_mut().insert(addr, work));
    work
}

fn find_work(schema: &'static Value) -> bool {
    if schema.get("default").is_some() {
        return true;
    }
    let schema = resolve(schema);
    if schema.get("default").is_some()
        || schema.get("x-virt-proto-type").and_then(Value::as_str) == Some("quantity")
    {
        return true;
    }
    let props = schema.get("properties").and_then(Value::as_object);
    props.is_some_and(|p| p.values().any(has_work))
        || schema.get("additionalProperties").is_some_and(|a| a.is_object() && has_work(a))
        || schema.get("items").is_some_and(has_work)
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
        let prop = |k: &str| &schema["properties"][k];
        assert!(!has_work(prop("plain")));
        assert!(has_work(prop("deep")));
        assert!(has_work(prop("sizes")));
        assert!(has_work(schema));
        // Asked again, from the memo.
        assert!(!has_work(prop("plain")) && has_work(prop("deep")));
    }

    fn defaulted(schema: Value, mut obj: Value) -> Value {
        // Leaked: `has_work` remembers schema nodes by address, as the document's are static.
        walk(&mut obj, Box::leak(Box::new(schema)), true);
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
        let secret = crate::generated::RESOURCES
            .iter()
            .find(|r| r.data_rules.is_some_and(|d| !d.write_only.is_empty()))
            .expect("a kind with a write-only map");
        let mut obj = json!({"metadata": {"name": "s"}});
        apply(secret, &mut obj);
        assert_eq!(obj["type"], "Opaque");
    }
}
