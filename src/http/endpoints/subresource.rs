//! The `status` and `scale` subresources over HTTP (A.4, B.2). Status reads and writes are the
//! ordinary verbs with `Target::part` set to `Part::Status`; scale writes answer the Scale view
//! of what the registry wrote (`object::subresource` holds the rules).

use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;

use super::write::decode_config;
use super::Target;
use crate::http::codec::{content_type, decode_object, negotiate, respond, with_warnings, Format};
use crate::http::extract::{apply_options, write_request, PatchRequest};
use crate::http::params::Query;
use crate::http::state::AppState;
use crate::object::error::ApiError;
use crate::object::patch::NonApplyPatch;
use crate::object::subresource::{scale_info, to_scale, Part, SCALE_API_VERSION, SCALE_KIND};
use crate::registry::{ApplyRequest, Outcome, ScaleChange};
use crate::resource::ResourceInfo;

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

/// `PUT …/finalize` (kube's Namespace): an update of everything but status.
pub async fn update_finalize(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    super::update(state, res, Target { part: Part::Finalize, ..target }, req, body).await
}

/// `GET …/scale`: the object's replica counts and selector as an `autoscaling/v1` Scale.
pub async fn get_scale(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    scale_info(res)?;
    Query::parse(req)?;
    let format = negotiate(req, true)?;
    let scale = state.registry.get_scale(res, &target).await?;
    respond(StatusCode::OK, format, &scale)
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
    let (_, opts, format) = write_request(req, "UpdateOptions", true)?;
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
    let outcome =
        state.registry.write_scale(res, &target, &change, opts.dry_run, &opts.manager).await?;
    answer_scale(res, format, outcome)
}

/// `PATCH …/scale`: the patch applies to the Scale as `GET …/scale` shows it; its
/// `spec.replicas` is then written into the object. An apply patch is applied to the replica
/// count the same way.
pub async fn patch_scale(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let request = PatchRequest::extract(req)?;
    let format = request.format;
    let Some(patch) = NonApplyPatch::decode(&content_type(req), &body, res.strategic_merge_patch)?
    else {
        let info = scale_info(res)?;
        let opts = apply_options(req)?;
        let format = negotiate(req, true)?;
        let config = decode_config(&body)?;
        let request = ApplyRequest { config: &config, text: &body };
        let outcome = state.registry.apply_scale(res, info, &target, request, &opts).await?;
        return answer_scale(res, format, outcome);
    };
    let opts = request.options(req)?;
    let change = ScaleChange::Patch(patch);
    let outcome =
        state.registry.write_scale(res, &target, &change, opts.dry_run, &opts.manager).await?;
    answer_scale(res, format, outcome)
}

/// A scale write's answer: the Scale view of the object written, with the write's warnings.
fn answer_scale(
    res: &'static ResourceInfo,
    format: Format,
    outcome: Outcome,
) -> Result<HttpResponse, ApiError> {
    let (view, _) = to_scale(scale_info(res)?, outcome.object.value())?;
    Ok(with_warnings(respond(StatusCode::OK, format, &view)?, &outcome.warnings))
}
