//! Writes over HTTP: create, update (PUT) and patch, decoded and answered here, decided by the
//! registry.

use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::Value;

use super::Target;
use crate::http::codec::{
    content_type, decode_object_and_form, respond_object, with_warnings, Form, Format,
};
use crate::http::extract::{apply_options, write_request, PatchRequest};
use crate::http::state::AppState;
use crate::object::error::ApiError;
use crate::object::patch::NonApplyPatch;
use crate::object::validation::Via;
use crate::registry::{ApplyRequest, Change, Outcome};
use crate::resource::ResourceInfo;

/// POST: create an object (201), or answer a token request (200).
pub async fn create(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let (_, opts, format) = write_request(req, "CreateOptions", res.is_stored())?;
    let (obj, form) = decode_object_and_form(req, res, &body, res.is_stored())?;
    let outcome = state.registry.create(res, &target, obj, via(&form), &opts).await?;
    let code = if res.is_stored() { StatusCode::CREATED } else { StatusCode::OK };
    answer(res, code, format, outcome)
}

/// PUT: replace an object; custom resources need `metadata.resourceVersion` and never create.
pub async fn update(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let (_, opts, format) = write_request(req, "UpdateOptions", true)?;
    let (obj, form) = decode_object_and_form(req, res, &body, true)?;
    let outcome = state.registry.update(res, &target, obj, via(&form), &opts).await?;
    answer(res, StatusCode::OK, format, outcome)
}

/// PATCH with a JSON patch, a JSON merge patch or server-side apply (the content type says
/// which); unconditional unless the patch sets `metadata.resourceVersion`.
pub async fn patch(
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
        let opts = apply_options(req)?;
        let config = decode_config(&body)?;
        let request = ApplyRequest { config: &config, text: &body };
        let outcome = state.registry.apply(res, &target, request, &opts).await?;
        let code = match outcome.change {
            Change::Created => StatusCode::CREATED,
            _ => StatusCode::OK,
        };
        return answer(res, code, format, outcome);
    };
    let opts = request.options(req)?;
    let outcome = state.registry.patch(res, &target, &patch, &body, &opts).await?;
    answer(res, StatusCode::OK, format, outcome)
}

/// A write's answer: the object in `format` with `res`'s apiVersion, and its warnings.
fn answer(
    res: &ResourceInfo,
    code: StatusCode,
    format: Format,
    outcome: Outcome,
) -> Result<HttpResponse, ApiError> {
    Ok(with_warnings(respond_object(res, code, format, &outcome.object)?, &outcome.warnings))
}

/// How a POST or PUT body arrived, for its duplicate keys.
fn via<'a>(form: &'a Form<'_>) -> Via<'a> {
    match form {
        Form::Json(duplicates) => Via::Body(duplicates),
        Form::Yaml(text) => Via::YamlBody(text),
    }
}

/// The body: YAML, of which JSON is a part.
pub(super) fn decode_config(body: &[u8]) -> Result<Value, ApiError> {
    // Through `limits`, which bounds flow nesting before libyaml's quadratic scanner sees it.
    let text = std::str::from_utf8(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    let v: Value = crate::object::limits::yaml_to_value(text)
        .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "error decoding YAML: the apply configuration must be an object",
        ));
    }
    Ok(v)
}
