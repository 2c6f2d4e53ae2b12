//! Kubernetes object semantics, as pure functions over JSON values: ObjectMeta rules, schemas and
//! validation, selectors, managed fields, patches, tables, limits, and the one error type with
//! its `Status` form. Nothing here knows HTTP or the store.

pub mod conditions;
pub mod data_rules;
pub mod defaults;
pub mod duration;
pub mod error;
pub mod event_rules;
pub mod fault;
pub mod limits;
pub mod managed_fields;
pub mod meta;
pub mod patch;
pub mod pods;
pub mod printers;
pub mod protobuf;
pub mod schema;
pub mod selector;
pub mod strategic_patch;
pub mod strict_decoding;
pub mod subresource;
pub mod table;
pub mod update_rules;
pub mod validation;

use serde_json::{Map, Value};

use crate::resource::ResourceInfo;

/// `Value::pointer` without its allocations: serde_json unescapes each segment into a new
/// `String`, and the paths this code reads have no `~` escapes to undo.
pub trait At {
    fn at(&self, pointer: &str) -> Option<&Value>;
}

impl At for Value {
    fn at(&self, pointer: &str) -> Option<&Value> {
        if pointer.contains('~') {
            return self.pointer(pointer);
        }
        if pointer.is_empty() {
            return Some(self);
        }
        pointer.strip_prefix('/')?.split('/').try_fold(self, |v, token| match v {
            Value::Object(m) => m.get(token),
            // serde_json's parse_index: no sign, no leading zero.
            Value::Array(items)
                if !token.starts_with('+') && (token == "0" || !token.starts_with('0')) =>
            {
                token.parse::<usize>().ok().and_then(|i| items.get(i))
            }
            _ => None,
        })
    }
}

/// The object as the requested version presents it: only `apiVersion` differs between versions.
pub fn for_version(res: &ResourceInfo, obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(m) = out.as_object_mut() {
        m.insert("apiVersion".into(), Value::String(res.api_version()));
    }
    out
}

/// The object's metadata map; the caller has made sure the object is a JSON object.
pub fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    metadata(obj).and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or("")
}

/// The revision recorded in a stored object's `metadata.resourceVersion`.
pub fn stored_revision(obj: &Value) -> u64 {
    meta_str(obj, "resourceVersion").parse().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::At;

    #[test]
    fn at_reads_as_serde_jsons_pointer_does() {
        let v = json!({"a": {"b": [10, {"c": 1}], "x/y": 2, "t~": 3, "": 4}, "n": null});
        for p in [
            "",
            "/",
            "/a",
            "/a/b",
            "/a/b/0",
            "/a/b/1/c",
            "/a/b/01",
            "/a/b/+1",
            "/a/b/2",
            "/a/x~1y",
            "/a/t~0",
            "/n",
            "/n/x",
            "a",
            "/missing",
            "/a/b/1/c/d",
        ] {
            assert_eq!(v.at(p), v.pointer(p), "{p}");
        }
    }
}
