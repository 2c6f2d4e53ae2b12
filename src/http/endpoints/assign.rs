//! kube's Pod subresources that are not the object itself: `binding` and `eviction` (creates of
//! another kind that assign or delete the object) and `log` (its containers' text). Decoded and
//! answered here, decided by the registry (`registry::binding`, `eviction`, `logs`).

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{json, Value};

use super::Target;
use crate::http::codec::{decode_object, respond, Format};
use crate::http::extract::write_request;
use crate::http::params::{DeleteOptions, Query};
use crate::http::state::AppState;
use crate::object::error::ApiError;
use crate::resource::ResourceInfo;

/// `POST …/{name}/binding`: assigns the object to the Binding's node.
pub async fn create_binding(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let (_, opts, format) = write_request(req, "CreateOptions", true)?;
    let binding = in_namespace(&target, decode_object(req, &body, true)?)?;
    state.registry.bind(res, &target, &binding, opts.dry_run).await?;
    success(format)
}

/// `POST …/{name}/eviction`: deletes the object with the Eviction's DeleteOptions.
pub async fn create_eviction(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let (q, _, format) = write_request(req, "CreateOptions", true)?;
    let eviction = in_namespace(&target, decode_object(req, &body, true)?)?;
    let dry_run: Vec<String> = q.all("dryRun").into_iter().map(str::to_string).collect();
    let none = Query::from_query("")?;
    let parse = |options: &[u8]| DeleteOptions::parse(options, &none);
    state.registry.evict(res, &target, &eviction, &dry_run, parse).await?;
    success(format)
}

/// `GET …/{name}/log`: the container's log as `text/plain`; 204 with no body while the object
/// has no node (kube's `LocationStreamer` with no location: `responsewriters.StreamObject`).
pub async fn get_log(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let opts = Query::parse(req)?.log_options()?;
    match state.registry.logs(res, &target, &opts).await? {
        None => Ok(HttpResponse::NoContent().finish()),
        Some(text) => Ok(HttpResponse::Ok()
            .insert_header((header::CONTENT_TYPE, HeaderValue::from_static("text/plain")))
            .body(text)),
    }
}

/// kube's create handler answers the `Status` these creates return with its own code
/// (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/create.go`: a Status whose code is
/// unset gets 201).
fn success(format: Format) -> Result<HttpResponse, ApiError> {
    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                        "code": 201});
    respond(StatusCode::CREATED, format, &status)
}

/// The create handler's `EnsureObjectNamespaceMatchesRequestNamespace`
/// (`staging/src/k8s.io/apiserver/pkg/registry/rest/meta.go`): no namespace takes the
/// request's, another is refused. The subresource keeps the body's uid and resourceVersion
/// (`PreserveRequestObjectMetaSystemFieldsOnSubresourceCreate`).
fn in_namespace(target: &Target, mut obj: Value) -> Result<Value, ApiError> {
    let ns = obj.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("");
    if ns.is_empty() {
        if let Some(meta) = obj.as_object_mut().map(|o| o.entry("metadata").or_insert(json!({}))) {
            if let Some(meta) = meta.as_object_mut() {
                meta.insert("namespace".into(), target.ns().into());
            }
        }
    } else if ns != target.ns() {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(obj)
}
