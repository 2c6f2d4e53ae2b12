//! Applying JSON patches (RFC 6902) and JSON merge patches (RFC 7396) to an object, with the
//! bounds a hostile patch needs: a JSON patch can nest deeper with each `add` below an earlier
//! one and double the object with each `copy`, in 10000 operations, all before the result is
//! checked. Pure functions, also used by the fuzz targets.

use serde_json::Value;

use crate::object::error::ApiError;
use crate::object::limits::{
    depth, encoded_len, MAX_BODY_BYTES, MAX_OBJECT_BYTES, MAX_OBJECT_DEPTH,
};
use crate::object::strategic_patch;
use crate::object::At;

/// Most operations in one JSON patch (kube-apiserver's `maxJSONPatchOperations`).
pub const MAX_PATCH_OPS: usize = 10_000;

/// How large copies may make an object while a patch is applied; the result is held to the
/// object limit afterwards, this only stops the growth early.
const MAX_COPY_GROWTH: usize = MAX_OBJECT_BYTES + MAX_BODY_BYTES;

/// Decodes a JSON patch body: a list of at most `MAX_PATCH_OPS` operations.
pub fn parse_json_patch(body: &[u8]) -> Result<json_patch::Patch, ApiError> {
    let raw: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("couldn't decode the JSON patch: {e}")))?;
    if let Some(ops) = raw.as_array() {
        if ops.len() > MAX_PATCH_OPS {
            return Err(ApiError::RequestEntityTooLarge(format!(
                "Request entity too large: The allowed maximum operations in a JSON patch is {MAX_PATCH_OPS}, got {}",
                ops.len()
            )));
        }
    }
    serde_json::from_value(raw)
        .map_err(|e| ApiError::bad_request(format!("couldn't decode the JSON patch: {e}")))
}

/// Applies `patch` to `doc` operation by operation. A failing operation is kube's 422 (the
/// caller owns `doc` and drops it); nesting past `MAX_OBJECT_DEPTH` is 422 and copying past
/// twice the object limit 413, both checked before the operation runs, from an upper bound of
/// the depth kept in O(1) per operation.
pub fn apply_json_patch(doc: &mut Value, patch: &json_patch::Patch) -> Result<(), ApiError> {
    let mut depth_bound = depth(doc);
    let mut size = encoded_len(doc);
    for op in &patch.0 {
        use json_patch::PatchOperation::*;
        let reached = match op {
            Add(o) => o.path.count() + depth(&o.value),
            Replace(o) => o.path.count() + depth(&o.value),
            // What is moved or copied is at most as deep as the document below `from`.
            Move(o) => o.path.count() + depth_bound.saturating_sub(o.from.count()),
            Copy(o) => o.path.count() + depth_bound.saturating_sub(o.from.count()),
            Remove(_) | Test(_) => 0,
        };
        if reached > MAX_OBJECT_DEPTH {
            return Err(ApiError::bad_request(format!(
                "the JSON patch would nest the object {reached} levels deep; the limit is {MAX_OBJECT_DEPTH}"
            )));
        }
        depth_bound = depth_bound.max(reached);
        match op {
            Copy(o) => {
                size += doc.at(o.from.as_str()).map(encoded_len).unwrap_or(0);
            }
            Add(o) => size += encoded_len(&o.value),
            Replace(o) => size += encoded_len(&o.value),
            _ => {}
        }
        if size > MAX_COPY_GROWTH {
            return Err(ApiError::RequestEntityTooLarge(format!(
                "Request entity too large: the JSON patch would grow the object past {MAX_COPY_GROWTH} bytes"
            )));
        }
        json_patch::patch_unsafe(doc, std::slice::from_ref(op))
            .map_err(|_| ApiError::PatchRejected)?;
    }
    Ok(())
}

/// Decodes a merge patch body.
pub fn parse_merge_patch(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("couldn't decode the merge patch: {e}")))
}

/// Applies a JSON merge patch. Its result is no deeper than the document or the patch (which
/// the JSON decoder bounded), and no larger than both together.
pub fn apply_merge_patch(doc: &mut Value, patch: &Value) {
    json_patch::merge(doc, patch);
}

/// kube's 415 text for a PATCH whose media type a custom resource's endpoint does not accept.
pub const UNKNOWN_PATCH_TYPE_MSG: &str = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml";

/// The same for a built-in kind's endpoint, which accepts strategic merge patches too
/// (installer.go's `supportedTypes`, in its order).
pub const UNKNOWN_PATCH_TYPE_BUILT_IN_MSG: &str = "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml";

/// The media type of strategic merge patches.
pub const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";

/// A JSON patch, a merge patch or a strategic merge patch, decoded by its media type.
pub enum NonApplyPatch {
    Json(json_patch::Patch),
    Merge(Value),
    /// Its decoded object.
    Strategic(Value),
}

impl NonApplyPatch {
    /// Decodes `body` by `content_type`; `None` for an apply patch, which the caller routes.
    /// A strategic merge patch when `strategic` (the kind takes them), or any other type, is a
    /// 415.
    pub fn decode(
        content_type: &str,
        body: &[u8],
        strategic: bool,
    ) -> Result<Option<NonApplyPatch>, ApiError> {
        match content_type {
            "application/json-patch+json" => Ok(Some(NonApplyPatch::Json(parse_json_patch(body)?))),
            "application/merge-patch+json" => {
                Ok(Some(NonApplyPatch::Merge(parse_merge_patch(body)?)))
            }
            STRATEGIC_MERGE_PATCH if strategic => {
                Ok(Some(NonApplyPatch::Strategic(strategic_patch::parse(body)?)))
            }
            "application/apply-patch+yaml" => Ok(None),
            _ if strategic => {
                Err(ApiError::UnsupportedMediaType(UNKNOWN_PATCH_TYPE_BUILT_IN_MSG.into()))
            }
            _ => Err(ApiError::UnsupportedMediaType(UNKNOWN_PATCH_TYPE_MSG.into())),
        }
    }

    /// Applies the patch to `doc`; a strategic merge patch follows the patch strategies of
    /// `schema`, the definition of what `doc` is.
    pub fn apply(&self, doc: &mut Value, schema: Option<&Value>) -> Result<(), ApiError> {
        match self {
            NonApplyPatch::Json(ops) => apply_json_patch(doc, ops),
            NonApplyPatch::Merge(p) => {
                apply_merge_patch(doc, p);
                Ok(())
            }
            NonApplyPatch::Strategic(p) => strategic_patch::apply(doc, p, schema),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn patch(ops: Value) -> json_patch::Patch {
        serde_json::from_value(ops).unwrap()
    }

    #[test]
    fn ordinary_patches_apply() {
        let mut doc = json!({"spec": {"a": 1}, "metadata": {"labels": {}}});
        let p = patch(json!([
            {"op": "add", "path": "/spec/b", "value": [1, 2]},
            {"op": "copy", "from": "/spec/b", "path": "/spec/c"},
            {"op": "move", "from": "/spec/a", "path": "/spec/d"},
            {"op": "test", "path": "/spec/d", "value": 1},
        ]));
        apply_json_patch(&mut doc, &p).unwrap();
        assert_eq!(doc["spec"], json!({"b": [1, 2], "c": [1, 2], "d": 1}));
        let p = patch(json!([{"op": "test", "path": "/spec/d", "value": 2}]));
        assert_eq!(apply_json_patch(&mut doc, &p), Err(ApiError::PatchRejected));
    }

    #[test]
    fn nesting_and_copies_are_bounded() {
        let mut doc = json!({"spec": {"blob": "x".repeat(1 << 16)}});
        let copies: Vec<Value> = (0..40)
            .map(|i| json!({"op": "copy", "from": "/spec", "path": format!("/spec/c{i}")}))
            .collect();
        let err = apply_json_patch(&mut doc, &patch(Value::Array(copies))).unwrap_err();
        assert!(matches!(err, ApiError::RequestEntityTooLarge(_)), "{err:?}");

        let mut deep = json!(1);
        for _ in 0..90 {
            deep = json!({ "a": deep });
        }
        let mut doc = json!({"spec": {}});
        let ops = json!([
            {"op": "add", "path": "/spec/n", "value": deep},
            {"op": "add", "path": format!("/spec/n{}", "/a".repeat(80)), "value": deep},
        ]);
        let err = apply_json_patch(&mut doc, &patch(ops)).unwrap_err();
        assert!(matches!(err, ApiError::BadRequest(_)), "{err:?}");
        let ops =
            json!([{"op": "move", "from": "/spec", "path": format!("/x{}", "/a".repeat(100))}]);
        assert!(apply_json_patch(&mut json!({"spec": {}}), &patch(ops)).is_err());
    }
}
