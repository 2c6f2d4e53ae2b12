//! The generic verbs every kind is served by: the generated handlers call these with the kind's
//! `ResourceInfo` and the path's namespace and name.

pub mod apply;
mod delete;
mod read;
mod subresource;
mod write;

use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;

use crate::object::error::ApiError;
use crate::resource::ResourceInfo;

pub(crate) use crate::object::{for_version, meta_str, metadata, stored_revision};
pub(crate) use crate::registry::keys::{collection_prefix, object_key};

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
