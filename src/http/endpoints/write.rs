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
    let manager = managed_fields::manager_of(&q, req, "CreateOptions")?;
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

/// An update's server-set fields must at least have their types, though their values are not
/// the client's to choose.
fn check_system_field_types(
    res: &ResourceInfo,
    name: &str,
    meta: &serde_json::Map<String, Value>,
) -> Result<(), ApiError> {
    let causes = meta::system_field_type_causes(meta);
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid(res, name, causes))
}

/// How a POST or PUT body arrived, for its duplicate keys.
fn via<'a>(form: &'a Form<'_>) -> Via<'a> {
    match form {
        Form::Json(duplicates) => Via::Body(duplicates),
        Form::Yaml(text) => Via::YamlBody(text),
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
    let manager = managed_fields::manager_of(&q, req, "UpdateOptions")?;
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
    let manager = managed_fields::manager_of(&q, req, "PatchOptions")?;
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

/// How `commit_update` commits a write.
pub(crate) struct Commit<'a> {
    /// The part of the object the endpoint may change.
    pub part: Part,
    pub dry_run: bool,
    pub owner: Ownership<'a>,
}

/// Who a write's managedFields entry is recorded for.
pub(crate) enum Ownership<'a> {
    /// A create, update or non-apply patch: kube records an `Update` entry for the manager,
    /// naming the subresource written through ("", "status", "scale").
    Update { manager: &'a str, subresource: &'a str },
    /// Server-side apply, which has computed the entries itself.
    Applied,
}

/// The subresource managedFields entries name for a write through `part`.
fn subresource_name(part: Part) -> &'static str {
    match part {
        Part::Main => "",
        Part::Status => "status",
    }
}

/// Applies kube's update rules to `new` against `current` and writes it: only the `part` the
/// endpoint may change taken from `new`, server-owned fields kept, generation bumped on
/// non-metadata changes, managedFields recorded, no-ops short-circuited, and an object that is
/// being deleted and lost its last finalizer removed.
pub(crate) async fn commit_update(
    state: &AppState,
    res: &'static ResourceInfo,
    key: &str,
    current: &Value,
    new: Value,
    how: Commit<'_>,
) -> Result<(StatusCode, Answer), ApiError> {
    let Commit { part, dry_run, owner } = how;
    let mut new = subresource::confine(res, part, current, new);
    let name = meta_str(current, "name").to_string();
    let no_meta = Map::new();
    let old_meta = super::metadata(current).unwrap_or(&no_meta);
    let mut causes = Vec::new();
    {
        let meta = metadata_mut(&mut new)?;
        for (field, label) in [("name", "metadata.name"), ("namespace", "metadata.namespace")] {
            let new_v = meta.get(field).and_then(Value::as_str).unwrap_or("");
            let old_v = old_meta.get(field).and_then(Value::as_str).unwrap_or("");
            if new_v != old_v && !(field == "namespace" && new_v.is_empty()) {
                causes.push(Cause::invalid(label, &meta::quote(new_v), "field is immutable"));
            }
        }
        match meta.get("uid").and_then(Value::as_str) {
            None | Some("") => {
                if let Some(uid) = old_meta.get("uid") {
                    meta.insert("uid".into(), uid.clone());
                }
            }
            Some(u) if Some(u) != old_meta.get("uid").and_then(Value::as_str) => {
                causes.push(Cause::invalid("metadata.uid", &meta::quote(u), "field is immutable"));
            }
            Some(_) => {}
        }
        for field in ["creationTimestamp", "generation", "namespace"] {
            match old_meta.get(field) {
                Some(v) => meta.insert(field.into(), v.clone()),
                None => meta.remove(field),
            };
        }
        let deleting = old_meta.get("deletionTimestamp").is_some_and(|v| !v.is_null());
        if deleting {
            for field in ["deletionTimestamp", "deletionGracePeriodSeconds"] {
                if let Some(v) = old_meta.get(field) {
                    meta.insert(field.into(), v.clone());
                }
            }
            let old_f = finalizers(old_meta);
            let added: Vec<String> =
                finalizers(meta).into_iter().filter(|f| !old_f.contains(f)).collect();
            if !added.is_empty() {
                let list: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
                causes.push(Cause::forbidden(
                    "metadata.finalizers",
                    &format!(
                        "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                        list.join(", ")
                    ),
                ));
            }
        } else {
            if meta.get("deletionTimestamp").is_some_and(|v| !v.is_null()) {
                causes.push(Cause::invalid(
                    "metadata.deletionTimestamp",
                    &format!(
                        "{:?}",
                        meta.get("deletionTimestamp").map(|v| v.to_string()).unwrap_or_default()
                    ),
                    "field is immutable; may only be changed via deletion",
                ));
            }
            meta.remove("deletionTimestamp");
            meta.remove("deletionGracePeriodSeconds");
        }
        meta.insert(
            "resourceVersion".into(),
            Value::String(meta_str(current, "resourceVersion").into()),
        );
        causes.extend(meta::validate(meta, res.namespaced));
    }
    causes.extend(validation::check(res, &new));
    causes.extend(subresource::validate(res, &new));
    if !causes.is_empty() {
        return Err(ApiError::invalid(res, &name, causes));
    }
    set_storage_version(res, &mut new);
    // Status writes never bump generation (AX status_strategy.go).
    if part == Part::Main && spec_changed(current, &new) {
        let g = current.pointer("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
        new["metadata"]["generation"] = Value::from(g + 1);
    }
    // Recorded last, so that the entry sees `new` as it will be stored.
    if let Ownership::Update { manager, subresource } = owner {
        managed_fields::record_update(res, Some(current), &mut new, manager, subresource);
    }
    check_size(&new)?;
    if managed_fields::same_ignoring_times(&new, current) {
        return Ok((StatusCode::OK, Answer::Computed(current.clone())));
    }
    let deleting = old_meta.get("deletionTimestamp").is_some_and(|v| !v.is_null());
    if deleting && finalizers(super::metadata(&new).unwrap_or(&Map::new())).is_empty() {
        if dry_run {
            return Ok((StatusCode::OK, Answer::Computed(new)));
        }
        state
            .store
            .delete(key, stored_revision(current))
            .await
            .map_err(|e| ApiError::from_store(e, res, &name))?;
        return Ok((StatusCode::OK, Answer::Computed(new)));
    }
    if dry_run {
        return Ok((StatusCode::OK, Answer::Computed(new)));
    }
    let stored = state
        .store
        .update(key, stored_revision(current), new)
        .await
        .map_err(|e| ApiError::from_store(e, res, &name))?;
    Ok((StatusCode::OK, Answer::Stored(stored)))
}

/// Whether anything but `metadata` differs: that bumps `generation` for custom resources.
fn spec_changed(old: &Value, new: &Value) -> bool {
    let (Some(old), Some(new)) = (old.as_object(), new.as_object()) else { return old != new };
    let counted = |k: &String| k != "metadata" && k != "apiVersion";
    old.keys().filter(|k| counted(k)).count() != new.keys().filter(|k| counted(k)).count()
        || new.iter().any(|(k, v)| counted(k) && old.get(k) != Some(v))
}

pub(crate) fn finalizers(meta: &Map<String, Value>) -> Vec<String> {
    meta.get("finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

/// The object's metadata, created empty when absent; a non-object metadata is a 400.
pub(crate) fn metadata_mut(obj: &mut Value) -> Result<&mut Map<String, Value>, ApiError> {
    let root = obj
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the object must be a JSON object"))?;
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if meta.is_null() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut().ok_or_else(|| ApiError::bad_request("metadata must be an object"))
}

/// The create rules that come before anything else: no resourceVersion, and the namespace
/// agrees with the path (or is taken from it; cluster kinds have none).
pub(crate) fn check_create_meta(
    res: &ResourceInfo,
    target: &Target,
    obj: &mut Value,
) -> Result<(), ApiError> {
    let meta = metadata_mut(obj)?;
    if meta.get("resourceVersion").and_then(Value::as_str).is_some_and(|v| !v.is_empty()) {
        return Err(ApiError::bad_request(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    set_namespace_for_create(res, target, meta)
}

/// Makes a named body a new object: system fields wiped and set afresh, metadata validated,
/// storage version set.
pub(crate) fn init_new_object(res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    // Validated as it will be stored: without the status a status subresource owns (a copy
    // only when there is such a status to leave out).
    let schema_causes = if res.status_subresource && obj.get("status").is_some() {
        validation::check(res, &subresource::confine(res, Part::Main, &Value::Null, obj.clone()))
    } else {
        validation::check(res, obj)
    };
    let meta = metadata_mut(obj)?;
    let type_causes = meta::system_field_type_causes(meta);
    meta::wipe_system_fields(meta);
    let name = meta.get("name").and_then(Value::as_str).unwrap_or("").to_string();
    let mut causes = type_causes;
    causes.extend(meta::validate(meta, res.namespaced));
    causes.extend(schema_causes);
    if !causes.is_empty() {
        return Err(ApiError::invalid(res, &name, causes));
    }
    meta.insert("uid".into(), Value::String(meta::new_uid()));
    meta.insert("creationTimestamp".into(), Value::String(meta::now_rfc3339()));
    meta.insert("generation".into(), Value::from(1));
    set_storage_version(res, obj);
    subresource::prepare_create(res, obj, &name)
}

/// apiVersion and kind in a body must name the URL's kind and version.
pub(crate) fn check_type_meta(res: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        return Err(ApiError::bad_request(format!(
            "Object 'Kind' is missing in '{}'",
            short_json(obj)
        )));
    }
    if api_version.is_empty() {
        return Err(ApiError::bad_request(format!(
            "Object 'apiVersion' is missing in '{}'",
            short_json(obj)
        )));
    }
    let expected = res.api_version();
    if api_version != expected {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({expected})"
        )));
    }
    if kind != res.kind {
        return Err(ApiError::invalid(
            res,
            meta_str(obj, "name"),
            vec![Cause::invalid("kind", &meta::quote(kind), &format!("must be {}", res.kind))],
        ));
    }
    Ok(())
}

fn short_json(v: &Value) -> String {
    let s = v.to_string();
    s.chars().take(256).collect()
}

/// Namespace rules on create: body and path must agree; empty takes the path's; cluster kinds
/// have none.
fn set_namespace_for_create(
    res: &ResourceInfo,
    target: &Target,
    meta: &mut Map<String, Value>,
) -> Result<(), ApiError> {
    if !res.namespaced {
        meta.remove("namespace");
        return Ok(());
    }
    let body_ns = meta.get("namespace").and_then(Value::as_str).unwrap_or("");
    if body_ns.is_empty() {
        meta.insert("namespace".into(), Value::String(target.ns().into()));
    } else if body_ns != target.ns() {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

/// Stored objects carry the storage version; reads rewrite it to the version asked for.
fn set_storage_version(res: &ResourceInfo, obj: &mut Value) {
    if let Some(m) = obj.as_object_mut() {
        let v = if res.group.is_empty() {
            res.storage_version.to_string()
        } else {
            format!("{}/{}", res.group, res.storage_version)
        };
        m.insert("apiVersion".into(), Value::String(v));
    }
}

pub(crate) fn check_size(obj: &Value) -> Result<(), ApiError> {
    // The store decodes what it keeps: an object nested too deep could never be read back.
    crate::object::limits::check_depth(obj)?;
    let n = crate::object::limits::encoded_len(obj);
    if n > MAX_OBJECT_BYTES {
        return Err(ApiError::RequestEntityTooLarge(format!(
            "Request entity too large: the object is {n} bytes, the limit is {MAX_OBJECT_BYTES}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_fields_beside_metadata_and_api_version_are_the_spec() {
        let old = json!({"apiVersion": "g/v1", "metadata": {"a": 1}, "spec": {"n": 1}});
        let same = json!({"apiVersion": "g/v2", "metadata": {"a": 2}, "spec": {"n": 1}});
        assert!(!spec_changed(&old, &same));
        assert!(spec_changed(&old, &json!({"metadata": {}, "spec": {"n": 2}})));
        assert!(spec_changed(&old, &json!({"metadata": {}, "spec": {"n": 1}, "status": {}})));
        assert!(spec_changed(&old, &json!({"metadata": {}})));
        assert!(!spec_changed(&json!({"x": null}), &json!({"x": null, "apiVersion": "v"})));
        assert!(spec_changed(&json!({"x": null}), &json!({"y": null})));
    }
}
