//! The `status` and `scale` subresources (A.4, B.2): which part of an object each endpoint may
//! write, and the `autoscaling/v1` Scale view of a kind's replica count.
//!
//! Status writes run through the ordinary update and patch with `Target::part` set to
//! `Part::Status`; `confine` (called by `write::commit_update`) then keeps only what that part
//! may change, as AX strategy.go and status_strategy.go do. Scale writes are main-endpoint
//! writes of the one field `x-virt-resource.scale` names (AX registry/customresource/etcd.go).

use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{json, Map, Value};

use super::write::{commit_update, Commit, Ownership};
use super::{meta_str, metadata, object_key, Part, Target};
use crate::http::codec::{content_type, decode_object, negotiate, respond};
use crate::http::params::reject_force;
use crate::http::params::Query;
use crate::http::server::AppState;
use crate::object::error::{ApiError, Cause};
use crate::object::patch::NonApplyPatch;
use crate::resource::{ResourceInfo, ScaleInfo};

/// How often an unconditional scale write is retried when a concurrent write wins.
const SCALE_RETRIES: usize = 16;

/// `GET …/status`: the whole object, as kube answers it.
pub async fn get_status(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    super::get(state, res, target, req).await
}

/// `PUT …/status`: an update (resourceVersion required) that changes only `status`.
pub async fn update_status(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    super::update(state, res, Target { part: Part::Status, ..target }, req, body).await
}

/// `PATCH …/status`: the patch applies to the whole object; only its `status` is kept.
pub async fn patch_status(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    super::patch(state, res, Target { part: Part::Status, ..target }, req, body).await
}

/// `GET …/scale`: the object's replica counts and selector as an `autoscaling/v1` Scale.
pub async fn get_scale(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let info = scale_info(res)?;
    Query::parse(req)?;
    let format = negotiate(req, true)?;
    let key = object_key(res, target.ns(), target.name());
    let obj =
        state.store.get(&key).await?.ok_or_else(|| ApiError::not_found(res, target.name()))?;
    let (scale, _) = to_scale(info, &obj)?;
    respond(actix_web::http::StatusCode::OK, format, &scale)
}

/// `PUT …/scale`: writes the Scale's `spec.replicas` into the object. Conditional only when the
/// Scale carries a resourceVersion.
pub async fn update_scale(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let q = Query::parse(req)?;
    let (dry_run, _validation) = q.write_options("UpdateOptions")?;
    let manager = crate::http::params::manager_of(&q, req, "UpdateOptions")?;
    let format = negotiate(req, true)?;
    let scale = decode_object(req, &body, true)?;
    let kind = scale.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = scale.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if !(kind.is_empty() || kind == SCALE_KIND)
        || !(api_version.is_empty() || api_version == SCALE_API_VERSION)
    {
        return Err(ApiError::bad_request(format!(
            "the body of the request must be a {SCALE_API_VERSION} {SCALE_KIND}, not {api_version} {kind}"
        )));
    }
    target.check_identity(&scale)?;
    let change = ScaleChange::Replace(scale);
    write_scale(state, res, &target, format, dry_run, &manager, change).await
}

/// `PATCH …/scale`: the patch applies to the Scale as `GET …/scale` shows it; its
/// `spec.replicas` is then written into the object.
pub async fn patch_scale(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let q = Query::parse(req)?;
    let (dry_run, _validation) = q.write_options("PatchOptions")?;
    let format = negotiate(req, true)?;
    let Some(patch) = NonApplyPatch::decode(&content_type(req), &body)? else {
        let info = scale_info(res)?;
        return super::apply::apply_scale(state, res, info, target, req, &body).await;
    };
    reject_force(&q)?;
    let manager = crate::http::params::manager_of(&q, req, "PatchOptions")?;
    write_scale(state, res, &target, format, dry_run, &manager, ScaleChange::Patch(patch)).await
}

/// The Scale a write asks for: given whole, or as a patch to the current one.
enum ScaleChange {
    Replace(Value),
    Patch(NonApplyPatch),
}

async fn write_scale(
    state: &AppState,
    res: &'static ResourceInfo,
    target: &Target,
    format: crate::http::codec::Format,
    dry_run: bool,
    manager: &str,
    change: ScaleChange,
) -> Result<HttpResponse, ApiError> {
    let info = scale_info(res)?;
    let name = target.name();
    let key = object_key(res, target.ns(), name);
    for _ in 0..SCALE_RETRIES {
        let current = state.store.get(&key).await?.ok_or_else(|| ApiError::not_found(res, name))?;
        let current_rv = meta_str(&current, "resourceVersion").to_string();
        let (mut scale, spec_replicas) = to_scale(info, &current)?;
        let patching = matches!(change, ScaleChange::Patch(_));
        match &change {
            ScaleChange::Replace(body) => scale = body.clone(),
            ScaleChange::Patch(patch) => {
                if spec_replicas.is_none() {
                    scale["spec"]["replicas"] = Value::from(UNSET_REPLICAS);
                }
                patch.apply(&mut scale)?;
                if !scale.is_object() {
                    return Err(ApiError::PatchRejected);
                }
            }
        }
        let replicas = spec_replicas_of(&scale, patching)?;
        if replicas == UNSET_REPLICAS {
            return Err(ApiError::bad_request(format!(
                "the spec replicas field {:?} cannot be empty",
                info.spec_replicas_path
            )));
        }
        // A resourceVersion in the Scale is a precondition; one the patch left alone is not.
        let rv = meta_str(&scale, "resourceVersion");
        if !rv.is_empty() && rv != current_rv {
            return Err(ApiError::optimistic_lock(res, name));
        }
        let retry = rv.is_empty() || (patching && rv == current_rv);
        let mut obj = (*current).clone();
        set_nested(&mut obj, info.spec_replicas_path, Value::from(replicas))?;
        let owner = Ownership::Update { manager, subresource: "scale" };
        let how = Commit { part: Part::Main, dry_run, owner };
        match commit_update(state, res, &key, &current, obj, how).await {
            Err(ApiError::Conflict { .. }) if retry => continue,
            Err(e) => return Err(e),
            Ok((code, out)) => return respond(code, format, &to_scale(info, out.object())?.0),
        }
    }
    Err(ApiError::optimistic_lock(res, name))
}

