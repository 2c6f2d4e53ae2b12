//! The generic verbs every kind is served by: the generated handlers call these with the kind's
//! `ResourceInfo` and the path's namespace and name. Each extracts its options, calls the
//! registry and encodes the answer.

mod action;
mod assign;
mod delete;
mod portforward;
mod read;
mod stream;
mod subresource;
mod vnc;
mod write;

use actix_web::{HttpRequest, HttpResponse};

use crate::object::error::ApiError;
use crate::resource::ResourceInfo;

pub use crate::registry::Target;
pub use action::{action, action_read};
pub use assign::{create_binding, create_eviction, get_log};
pub use delete::{delete, delete_collection};
pub use read::{get, list, watch};
pub use subresource::{
    get_scale, get_status, patch_scale, patch_status, update_finalize, update_scale, update_status,
};
pub use write::{create, patch, update};

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
