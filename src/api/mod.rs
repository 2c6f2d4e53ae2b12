//! The generic verbs every kind is served by: the generated handlers call these with the kind's
//! `ResourceInfo` and the path's namespace and name.

pub mod apply;
pub mod codec;
mod delete;
pub mod params;
pub mod patch;
mod read;
mod subresource;
mod write;

use actix_web::{HttpRequest, HttpResponse};
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::resource::ResourceInfo;

pub(crate) use delete::delete_one;
pub use delete::{delete, delete_collection};
pub use read::{get, list, watch};
pub use subresource::{
    get_scale, get_status, patch_scale, patch_status, update_scale, update_status,
};
pub use write::{create, patch, update};

/// Where a request points: a collection (namespace or all/cluster) or one named object, and
/// which part of it a write may change.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// The path's namespace; `None` on cluster kinds and all-namespace paths.
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// `Main` for the resource's own paths, `Status` for `/status`.
    pub part: Part,
}

/// Which part of an object a write may change (B.2, AX strategy.go and status_strategy.go).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Part {
    /// The main endpoint: everything, except `status` on kinds with a status subresource.
    #[default]
    Main,
    /// `/status`: only `status` (and `metadata.managedFields`, which track the write).
    Status,
}

impl Target {
    pub fn new(namespace: Option<String>, name: Option<String>) -> Target {
        Target { namespace, name, part: Part::Main }
    }

    fn ns(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }

    fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    /// A written object must be the one the URL names: its name, and its namespace when it
    /// gives one (handlers/rest.go `checkName`, patch.go for the patched result).
    fn check_identity(&self, obj: &Value) -> Result<(), ApiError> {
        let name = meta_str(obj, "name");
        if name != self.name() {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({name}) does not match the name on the URL ({})",
                self.name()
            )));
        }
        let ns = meta_str(obj, "namespace");
        if !self.ns().is_empty() && !ns.is_empty() && ns != self.ns() {
            return Err(ApiError::bad_request(format!(
                "the namespace of the object ({ns}) does not match the namespace on the request ({})",
                self.ns()
            )));
        }
        Ok(())
    }
}

/// The storage key of one object: `<group>/<plural>/<namespace>/<name>`, shared by all versions.
pub(crate) fn object_key(res: &ResourceInfo, namespace: &str, name: &str) -> String {
    format!("{}/{}/{}/{}", res.group, res.plural, namespace, name)
}

/// The key prefix of a collection; `None` lists every namespace.
pub(crate) fn collection_prefix(res: &ResourceInfo, namespace: Option<&str>) -> String {
    match namespace {
        Some(ns) => format!("{}/{}/{}/", res.group, res.plural, ns),
        None => format!("{}/{}/", res.group, res.plural),
    }
}

/// The object as the requested version presents it: only `apiVersion` differs between versions.
pub(crate) fn for_version(res: &ResourceInfo, obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(m) = out.as_object_mut() {
        m.insert("apiVersion".into(), Value::String(res.api_version()));
    }
    out
}

/// The object's metadata map; the caller has made sure the object is a JSON object.
pub(crate) fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

pub(crate) fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    metadata(obj).and_then(|m| m.get(field)).and_then(Value::as_str).unwrap_or("")
}

/// The revision recorded in a stored object's `metadata.resourceVersion`.
pub(crate) fn stored_revision(obj: &Value) -> u64 {
    meta_str(obj, "resourceVersion").parse().unwrap_or(0)
}

/// 405 for a method the document does not list on a resource path.
pub fn method_not_allowed(
    res: &'static ResourceInfo,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let verb = match req.method().as_str() {
        "GET" => "get",
        "POST" => "create",
        "PUT" => "update",
        "PATCH" => "patch",
        "DELETE" => "delete",
        other => {
            return Err(ApiError::MethodNotAllowed(format!(
                "{other} is not supported on resources of kind {:?}",
                res.group_resource()
            )))
        }
    };
    Err(ApiError::MethodNotAllowed(format!(
        "{verb} is not supported on resources of kind {:?}",
        res.group_resource()
    )))
}
