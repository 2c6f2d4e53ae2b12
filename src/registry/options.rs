//! The typed options of the verbs (kube's `ListOptions`, `DeleteOptions`, the options every
//! create, update and patch takes, and the continue token of a paged list), as the HTTP layer
//! parses them from a request and as background work builds them itself.

use std::time::Duration;

use base64::Engine;
use serde_json::Value;

use crate::object::error::ApiError;
use crate::object::selector::{FieldSelector, LabelSelector};
use crate::object::validation::FieldValidation;

/// The options of every create, update and patch (kube's `CreateOptions`, `UpdateOptions`,
/// `PatchOptions` less apply's `force`).
#[derive(Debug, Clone)]
pub struct WriteOptions {
    pub dry_run: bool,
    pub field_validation: FieldValidation,
    /// The field manager the write's managedFields entry is recorded for.
    pub manager: String,
}

/// `resourceVersionMatch`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RvMatch {
    NotOlderThan,
    Exact,
}

/// The options of list, watch and deletecollection.
#[derive(Debug, Default)]
pub struct ListOptions {
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    /// Always `None` on a watch, which ignores it.
    pub limit: Option<usize>,
    /// Always `None` on a watch, which ignores it.
    pub continue_token: Option<ContinueToken>,
    /// `resourceVersion` as given (validated to be an integer when not empty).
    pub resource_version: Option<String>,
    pub rv_match: Option<RvMatch>,
    pub timeout: Option<Duration>,
    pub watch: bool,
    pub allow_bookmarks: bool,
    pub send_initial_events: Option<bool>,
}

impl ListOptions {
    /// Whether a label or field selector narrows the result (no `remainingItemCount` then).
    pub fn has_selector(&self) -> bool {
        !self.labels.is_empty() || !self.fields.is_empty()
    }
}

/// A decoded continue token (AS pkg/storage/continue.go).
#[derive(Debug, Clone, PartialEq)]
pub struct ContinueToken {
    /// The revision the first page was read at; -1 means "latest".
    pub rv: i64,
    /// The key to start from, relative to the collection prefix.
    pub start: String,
}

impl ContinueToken {
    pub fn encode(rv: i64, start: &str) -> String {
        let json = serde_json::json!({"v": "meta.k8s.io/v1", "rv": rv, "start": start});
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json.to_string())
    }

    pub fn decode(token: &str) -> Result<ContinueToken, ApiError> {
        let bad = |why: &str| ApiError::bad_request(format!("invalid continue token: {why}"));
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(token.trim_end_matches('='))
            .map_err(|e| bad(&format!("continue key is not valid: {e}")))?;
        let v: Value = serde_json::from_slice(&bytes)
            .map_err(|e| bad(&format!("continue key is not valid: {e}")))?;
        if v.get("v").and_then(Value::as_str) != Some("meta.k8s.io/v1") {
            return Err(bad(
                "continue key is not valid: server does not recognize this encoded version",
            ));
        }
        let rv = v.get("rv").and_then(Value::as_i64).unwrap_or(0);
        if rv == 0 {
            return Err(bad(
                "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
            ));
        }
        let start = v.get("start").and_then(Value::as_str).unwrap_or("");
        if start.is_empty() {
            return Err(bad("continue key is not valid: encoded start key empty"));
        }
        // Tokens address keys below the collection; reject anything that climbs out of it.
        if start.starts_with('/') || start.split('/').any(|seg| seg == ".." || seg == ".") {
            return Err(bad(
                "continue key is not valid: key must not contain relative path segments",
            ));
        }
        Ok(ContinueToken { rv, start: start.to_string() })
    }
}

/// Delete options from a body or, without one, from the query (B.6).
#[derive(Debug, Default, Clone)]
pub struct DeleteOptions {
    pub propagation: Option<Propagation>,
    pub orphan_dependents: Option<bool>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
    /// `gracePeriodSeconds`: how long a kind that deletes gracefully (a pod) is given; `None`
    /// leaves it to the kind's strategy (AS pkg/registry/rest/delete.go `BeforeDelete`).
    pub grace_period_seconds: Option<i64>,
    pub dry_run: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Propagation {
    Orphan,
    Background,
    Foreground,
}
