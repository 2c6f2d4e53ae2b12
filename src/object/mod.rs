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
