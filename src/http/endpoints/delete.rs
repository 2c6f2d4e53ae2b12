//! Deletion (B.6): DeleteOptions, preconditions, propagation finalizers, and deletecollection.

use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use serde_json::{json, Value};

use super::read::list_page;
use super::write::{finalizers, metadata_mut};
use super::{for_version, meta_str, object_key, stored_revision, Target};
use crate::http::codec::{negotiate, respond};
use crate::http::params::{DeleteOptions, ListOptions, Propagation, Query};
use crate::http::server::AppState;
use crate::object::error::{ApiError, Status};
use crate::object::meta;
use crate::resource::ResourceInfo;
use crate::store::StoreError;

use crate::runtime::gc::{FOREGROUND, ORPHAN};
/// How often a delete re-reads the object when a concurrent write wins.
const DELETE_RETRIES: usize = 16;

/// What one delete did.
pub(crate) enum Outcome {
    /// Removed: answered with a Success Status.
    Deleted(Arc<Value>),
    /// Kept with a deletionTimestamp because finalizers remain: answered with the object.
    Finalizing(Value),
}

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
    let key = object_key(res, target.ns(), target.name());
    match delete_one(state, res, &key, target.name(), &opts).await? {
        Outcome::Deleted(obj) => respond(
            StatusCode::OK,
            format,
            &Status::deleted(res, target.name(), meta_str(&obj, "uid")),
        ),
        Outcome::Finalizing(obj) => {
            // kube answers 202 only when the caller explicitly asked not to orphan.
            let code = if opts.orphan_dependents == Some(false) {
                StatusCode::ACCEPTED
            } else {
                StatusCode::OK
            };
            respond(code, format, &for_version(res, &obj))
        }
    }
}

/// Deletes one object as a DELETE request would (also used by the garbage collector).
pub(crate) async fn delete_one(
    state: &AppState,
    res: &'static ResourceInfo,
    key: &str,
    name: &str,
    opts: &DeleteOptions,
) -> Result<Outcome, ApiError> {
    for _ in 0..DELETE_RETRIES {
        let current = state.store.get(key).await?.ok_or_else(|| ApiError::not_found(res, name))?;
        check_preconditions(res, name, &current, opts)?;
        let mut obj = (*current).clone();
        let meta = metadata_mut(&mut obj)?;
        let already_deleting = meta.get("deletionTimestamp").is_some_and(|v| !v.is_null());
        let mut fins = finalizers(meta);
        if !already_deleting {
            apply_propagation(&mut fins, opts);
        }
        if fins.is_empty() {
            if opts.dry_run {
                return Ok(Outcome::Deleted(current));
            }
            match state.store.delete(key, stored_revision(&current)).await {
                Ok(last) => return Ok(Outcome::Deleted(last.object)),
                Err(StoreError::Conflict { .. }) => continue,
                Err(e) => return Err(ApiError::from_store(e, res, name)),
            }
        }
        if already_deleting {
            // A repeated delete changes nothing once finalization has begun.
            return Ok(Outcome::Finalizing(obj));
        }
        meta.insert("finalizers".into(), json!(fins));
        meta.insert("deletionTimestamp".into(), Value::String(meta::now_rfc3339()));
        meta.insert("deletionGracePeriodSeconds".into(), json!(0));
        let g = meta.get("generation").and_then(Value::as_i64).unwrap_or(0);
        meta.insert("generation".into(), json!(g + 1));
        if opts.dry_run {
            return Ok(Outcome::Finalizing(obj));
        }
        match state.store.update(key, stored_revision(&current), obj).await {
            Ok(stored) => return Ok(Outcome::Finalizing((*stored.object).clone())),
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(ApiError::from_store(e, res, name)),
        }
    }
    Err(ApiError::optimistic_lock(res, name))
}

fn check_preconditions(
    res: &ResourceInfo,
    name: &str,
    current: &Value,
    opts: &DeleteOptions,
) -> Result<(), ApiError> {
    let conflict = |message: String| ApiError::Conflict {
        group: res.group.into(),
        plural: res.plural.into(),
        name: name.into(),
        message,
    };
    if let Some(uid) = &opts.precondition_uid {
        let have = meta_str(current, "uid");
        if uid != have {
            return Err(conflict(format!(
                "Operation cannot be fulfilled on {} {name:?}: the UID in the precondition ({uid}) does not match the UID in record ({have}). The object might have been deleted and then recreated",
                res.group_kind()
            )));
        }
    }
    if let Some(rv) = &opts.precondition_rv {
        let have = meta_str(current, "resourceVersion");
        if rv != have {
            return Err(conflict(format!(
                "Operation cannot be fulfilled on {} {name:?}: the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({have}). The object might have been modified",
                res.group_kind()
            )));
        }
    }
    Ok(())
}

/// The propagation finalizers a delete adds or removes (store.go
/// `deletionFinalizersForGarbageCollection`).
fn apply_propagation(fins: &mut Vec<String>, opts: &DeleteOptions) {
    let set = |fins: &mut Vec<String>, f: &str, on: bool| {
        let has = fins.iter().any(|x| x == f);
        if on && !has {
            fins.push(f.to_string());
        } else if !on && has {
            fins.retain(|x| x != f);
        }
    };
    match (opts.propagation, opts.orphan_dependents) {
        (Some(Propagation::Orphan), _) | (None, Some(true)) => {
            set(fins, ORPHAN, true);
            set(fins, FOREGROUND, false);
        }
        (Some(Propagation::Foreground), _) => {
            set(fins, FOREGROUND, true);
            set(fins, ORPHAN, false);
        }
        (Some(Propagation::Background), _) => {
            set(fins, ORPHAN, false);
            set(fins, FOREGROUND, false);
        }
        (None, Some(false)) => set(fins, ORPHAN, false),
        (None, None) => {}
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
    let list_opts = ListOptions::parse(&q, res.namespaced)?;
    let format = negotiate(req, true)?;
    let page = list_page(state, res, target.namespace.as_deref(), &list_opts).await?;
    let objects = page.objects()?;
    for obj in &objects {
        let name = meta_str(obj, "name");
        let key = object_key(res, meta_str(obj, "namespace"), name);
        match delete_one(state, res, &key, name, &opts).await {
            Ok(_) | Err(ApiError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(p: Option<Propagation>, o: Option<bool>) -> DeleteOptions {
        DeleteOptions { propagation: p, orphan_dependents: o, ..DeleteOptions::default() }
    }

    #[test]
    fn propagation_finalizers() {
        let mut f = vec!["x.io/keep".to_string()];
        apply_propagation(&mut f, &opts(Some(Propagation::Orphan), None));
        assert_eq!(f, ["x.io/keep", "orphan"]);
        apply_propagation(&mut f, &opts(Some(Propagation::Foreground), None));
        assert_eq!(f, ["x.io/keep", "foregroundDeletion"]);
        apply_propagation(&mut f, &opts(Some(Propagation::Background), None));
        assert_eq!(f, ["x.io/keep"]);
        apply_propagation(&mut f, &opts(None, Some(true)));
        assert_eq!(f, ["x.io/keep", "orphan"]);
        apply_propagation(&mut f, &opts(None, Some(false)));
        assert_eq!(f, ["x.io/keep"]);
    }
}
