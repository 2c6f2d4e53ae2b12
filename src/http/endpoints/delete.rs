//! Deletion over HTTP (B.6): DeleteOptions from the body or the query, answered as kube does
//! (a Success Status, or the object while finalizers or a pod's grace period remain, and a
//! deleted pod; the list for deletecollection).

use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{json, Value};

use super::Target;
use crate::http::codec::{negotiate, respond, respond_object};
use crate::http::params::{DeleteOptions, ListOptions, Query};
use crate::http::state::AppState;
use crate::object::error::{ApiError, Status};
use crate::object::{for_version, meta_str};
use crate::registry::Deleted;
use crate::resource::{KubeRole, ResourceInfo};

/// DELETE of one object.
pub async fn delete(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let q = Query::parse(req)?;
    let opts = DeleteOptions::parse(&body, &q)?;
    let format = negotiate(req, true)?;
    match state.registry.delete(res, target.ns(), target.name(), &opts).await? {
        // Pods' storage sets ReturnDeletedObject (K8S pkg/registry/core/pod/storage/
        // storage.go): the answer is the pod as it was last stored, not a Status.
        Deleted::Gone(obj) if res.kube_role == Some(KubeRole::Pod) => {
            respond_object(res, StatusCode::OK, format, &obj)
        }
        Deleted::Gone(obj) => respond(
            StatusCode::OK,
            format,
            &Status::deleted(res, target.name(), meta_str(obj.value(), "uid")),
        ),
        Deleted::Finalizing(obj) => {
            // kube answers 202 only when the caller explicitly asked not to orphan.
            let code = if opts.orphan_dependents == Some(false) {
                StatusCode::ACCEPTED
            } else {
                StatusCode::OK
            };
            respond_object(res, code, format, &obj)
        }
    }
}

/// DELETE of a collection: lists with the given options, deletes each item, and answers with
/// the list as it was before.
pub async fn delete_collection(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let q = Query::parse(req)?;
    let opts = DeleteOptions::parse(&body, &q)?;
    let list_opts = ListOptions::parse(&q, res)?;
    let format = negotiate(req, true)?;
    let namespace = target.namespace.as_deref();
    let (page, objects) =
        state.registry.delete_collection(res, namespace, &list_opts, &opts).await?;
    let items: Vec<Value> = objects.iter().map(|o| for_version(res, o)).collect();
    let body = json!({
        "apiVersion": res.api_version(),
        "items": items,
        "kind": res.list_kind,
        "metadata": {
            "continue": page.continue_token.unwrap_or_default(),
            "resourceVersion": page.revision.to_string(),
        },
    });
    respond(StatusCode::OK, format, &body)
}
