//! Writes: create, update (PUT) and patch, with kube's ObjectMeta rules for custom resources (B.2, B.3).

use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{Map, Value};

use super::{for_version, meta_str, object_key, stored_revision, subresource, Part, Target};
use crate::http::codec::{
    content_type, decode_object_and_form, negotiate, respond, with_warnings, Answer, Form,
};
use crate::http::params::reject_force;
use crate::http::params::Query;
use crate::http::server::AppState;
use crate::object::error::{ApiError, Cause};
use crate::object::managed_fields;
use crate::object::meta;
use crate::object::patch::NonApplyPatch;
use crate::object::validation::{self, Via};
use crate::resource::ResourceInfo;
use crate::store::StoreError;

use crate::object::limits::MAX_OBJECT_BYTES;
/// How often kube's create retries a generated name that collides.
const GENERATE_NAME_TRIES: usize = 8;
/// How often an unconditional patch is retried when a concurrent write wins.
const PATCH_RETRIES: usize = 16;

/// POST: create an object (201), or answer a token request (200).
pub async fn create(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let q = Query::parse(req)?;
    let (dry_run, field_validation) = q.write_options("CreateOptions")?;
    let manager = crate::http::params::manager_of(&q, req, "CreateOptions")?;
    let format = negotiate(req, res.is_stored())?;
    let (mut obj, form) = decode_object_and_form(req, &body, res.is_stored())?;
    check_type_meta(res, &obj)?;
    let admitted = validation::admit(res, &mut obj, via(&form), field_validation)?;
    check_create_meta(res, &target, &mut obj)?;
    if let Some(field) = res.token_field {
        let answer = crate::registry::token::answer(state, res, field, obj).await?;
        return respond(StatusCode::OK, format, &answer);
    }
    let meta = metadata_mut(&mut obj)?;
    let generate = meta.get("generateName").and_then(Value::as_str).unwrap_or("").to_string();
    let named = meta.get("name").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    if !named && !generate.is_empty() {
        meta.insert("name".into(), Value::String(meta::generate_name(&generate)));
    }
    init_new_object(res, &mut obj)?;
    managed_fields::record_update(res, None, &mut obj, &manager, "");
    check_size(&obj)?;
    if dry_run {
        let answer = respond(StatusCode::CREATED, format, &for_version(res, &obj))?;
        return Ok(with_warnings(answer, &admitted.warnings));
    }
    let mut tries = 0;
    loop {
        let name = meta_str(&obj, "name").to_string();
        let key = object_key(res, meta_str(&obj, "namespace"), &name);
        // Only a generated name may be tried again, with the object kept for it.
        let retry = !named && tries + 1 < GENERATE_NAME_TRIES;
        let sent = if retry { obj.clone() } else { std::mem::take(&mut obj) };
        match state.store.create(&key, sent).await {
            Ok(stored) => {
                let answer = Answer::Stored(stored).respond(res, StatusCode::CREATED, format)?;
                return Ok(with_warnings(answer, &admitted.warnings));
            }
            Err(StoreError::AlreadyExists) if retry => {
                tries += 1;
                let fresh = meta::generate_name(&generate);
                obj["metadata"]["name"] = Value::String(fresh);
            }
            Err(StoreError::AlreadyExists) => {
                let deleting = match state.store.get(&key).await? {
                    Some(existing) => !meta_str(&existing, "deletionTimestamp").is_empty(),
                    None => false,
                };
                if !named && !deleting {
                    return Err(ApiError::NameGenerationExhausted {
                        group: res.group.into(),
                        plural: res.plural.into(),
                        name,
                    });
                }
                return Err(ApiError::already_exists(res, &name, deleting));
            }
            Err(e) => return Err(ApiError::from_store(e, res, &name)),
        }
    }
}

/// PUT: replace an object; custom resources need `metadata.resourceVersion` and never create.
pub async fn update(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let q = Query::parse(req)?;
    let (dry_run, field_validation) = q.write_options("UpdateOptions")?;
    let manager = crate::http::params::manager_of(&q, req, "UpdateOptions")?;
    let format = negotiate(req, true)?;
    let (mut obj, form) = decode_object_and_form(req, &body, true)?;
    check_type_meta(res, &obj)?;
    let name = target.name();
    let admitted = validation::admit(res, &mut obj, via(&form), field_validation)?;
    check_system_field_types(res, name, metadata_mut(&mut obj)?)?;
    target.check_identity(&obj)?;
    let meta = metadata_mut(&mut obj)?;
    if !res.namespaced {
        meta.remove("namespace");
    } else if meta.get("namespace").and_then(Value::as_str).unwrap_or("").is_empty() {
        meta.insert("namespace".into(), Value::String(target.ns().into()));
    }
    let rv = meta.get("resourceVersion").and_then(Value::as_str).unwrap_or("").to_string();
    if rv.is_empty() {
        return Err(ApiError::Invalid {
            group: res.group.into(),
            details_kind: res.plural.into(),
            qualified: res.group_resource(),
            name: name.into(),
            causes: vec![Cause::invalid(
                "metadata.resourceVersion",
                "0x0",
                "must be specified for an update",
            )],
        });
    }
    let key = object_key(res, target.ns(), name);
    let current = state.store.get(&key).await?.ok_or_else(|| ApiError::not_found(res, name))?;
    if rv != meta_str(&current, "resourceVersion") {
        return Err(ApiError::optimistic_lock(res, name));
    }
    let owner = Ownership::Update { manager: &manager, subresource: subresource_name(target.part) };
    let how = Commit { part: target.part, dry_run, owner };
    let (code, out) = commit_update(state, res, &key, &current, obj, how).await?;
    Ok(with_warnings(out.respond(res, code, format)?, &admitted.warnings))
}

/// PATCH with a JSON patch, a JSON merge patch or server-side apply; unconditional unless the
/// patch sets `metadata.resourceVersion`.
pub async fn patch(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    let q = Query::parse(req)?;
    let (dry_run, field_validation) = q.write_options("PatchOptions")?;
    let format = negotiate(req, true)?;
    let Some(kind) = NonApplyPatch::decode(&content_type(req), &body)? else {
        return super::apply::apply(state, res, target, req, &body).await;
    };
    reject_force(&q)?;
    let manager = crate::http::params::manager_of(&q, req, "PatchOptions")?;
    let name = target.name();
    let key = object_key(res, target.ns(), name);
    for _ in 0..PATCH_RETRIES {
        let current = state.store.get(&key).await?.ok_or_else(|| ApiError::not_found(res, name))?;
        let mut patched = for_version(res, &current);
        kind.apply(&mut patched)?;
        if !patched.is_object() {
            return Err(ApiError::PatchRejected);
        }
        check_type_meta(res, &patched)?;
        let via = match kind {
            NonApplyPatch::Json(_) => Via::JsonPatch(&body),
            NonApplyPatch::Merge(_) => Via::MergePatch(&body),
        };
        let admitted = validation::admit(res, &mut patched, via, field_validation)?;
        let meta = metadata_mut(&mut patched)?;
        check_system_field_types(res, name, meta)?;
        let wanted_rv =
            meta.get("resourceVersion").and_then(Value::as_str).unwrap_or("").to_string();
        let conditional = wanted_rv != meta_str(&current, "resourceVersion");
        if conditional && !wanted_rv.is_empty() {
            return Err(ApiError::optimistic_lock(res, name));
        }
        let owner =
            Ownership::Update { manager: &manager, subresource: subresource_name(target.part) };
        let how = Commit { part: target.part, dry_run, owner };
        match commit_update(state, res, &key, &current, patched, how).await {
            Err(ApiError::Conflict { .. }) if !conditional => continue,
            Err(e) => return Err(e),
            Ok((code, out)) => {
                return Ok(with_warnings(out.respond(res, code, format)?, &admitted.warnings));
            }
        }
    }
    Err(ApiError::optimistic_lock(res, name))
}

/// How a POST or PUT body arrived, for its duplicate keys.
fn via<'a>(form: &'a Form<'_>) -> Via<'a> {
    match form {
        Form::Json(duplicates) => Via::Body(duplicates),
        Form::Yaml(text) => Via::YamlBody(text),
    }
}
