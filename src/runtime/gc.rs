//! Garbage collection by `ownerReferences` (A.7): what kube-controller-manager's collector does,
//! inside the server, since there is no controller manager.
//!
//! The collector keeps no state of its own: everything it acts on is in the objects (finalizers,
//! deletion timestamps, owner references), so a restart simply rescans. A pass reads every
//! object's bytes, decodes only those that have owners or are being deleted (most have neither,
//! and their bytes say so), looks each owner up where its reference points (kind, name,
//! namespace; gone unless that object has the referenced uid, as kube's `isDangling`), and then:
//! - an owner being deleted with the `orphan` finalizer has its dependents' references to it
//!   removed, then the finalizer;
//! - an owner being deleted with `foregroundDeletion` has its dependents deleted (in the
//!   foreground too), and loses the finalizer once no dependent that blocks it remains;
//! - a dependent whose owners are all gone is deleted (background propagation); references to
//!   gone owners are dropped when some owner remains.
//!
//! Passes run at start-up (after the server listens), whenever a committed write touches
//! deletion state or owner references, and on a slow timer as a safety net.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;

use crate::generated::RESOURCES;
use crate::http::endpoints::{delete_one, meta_str, stored_revision};
use crate::http::params::{DeleteOptions, Propagation};
use crate::http::server::AppState;
use crate::object::error::ApiError;
use crate::object::managed_fields;
use crate::resource::ResourceInfo;
use crate::store::{Event, ListRequest, StoreError};

pub const ORPHAN: &str = "orphan";
pub const FOREGROUND: &str = "foregroundDeletion";
/// The field manager of the collector's writes, as kube-controller-manager's user agent names it.
const MANAGER: &str = "kube-controller-manager";
/// Objects read per store call during a pass.
const PAGE: usize = 1000;
/// Passes in a row while each still changes something, before waiting for news.
const MAX_PASSES: usize = 16;

/// Starts the collector on the current runtime.
pub fn spawn(state: AppState, interval: Duration) {
    actix_web::rt::spawn(async move { run(state, interval).await });
}

async fn run(state: AppState, interval: Duration) {
    // Filtered on the store thread: the other writes do not wake this task at all.
    let mut events = state.store.subscribe(relevant);
    loop {
        for _ in 0..MAX_PASSES {
            match collect(&state).await {
                Ok(true) => continue,
                Ok(false) => break,
                Err(e) => {
                    log::warn!("garbage collection pass failed: {e}");
                    break;
                }
            }
        }
        // Wait for a write that may matter (or lost ones), or the timer.
        tokio::select! {
            ev = events.recv() => if let Err(RecvError::Closed) = ev {
                return;
            },
            _ = tokio::time::sleep(interval) => {}
        }
    }
}

/// Whether an event can give the collector work.
fn relevant(ev: &Event) -> bool {
    let touches = |v: &Value| {
        v.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
            || v.pointer("/metadata/ownerReferences").is_some_and(|r| !r.is_null())
    };
    // The previous state only as bytes, as a pass scans objects: decoding it here would cost a
    // decode of every update for the few that matter.
    let marked = |b: &[u8]| NEEDLES.iter().any(|n| memchr::memmem::find(b, n).is_some());
    matches!(ev.kind, crate::store::EventType::Deleted)
        || touches(&ev.object)
        || ev.prev.as_ref().is_some_and(|p| marked(p.bytes()))
}

/// The kind a storage key belongs to, in its storage version.
fn resource_of(key: &str) -> Option<&'static ResourceInfo> {
    let mut parts = key.splitn(3, '/');
    let (group, plural) = (parts.next()?, parts.next()?);
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.plural == plural && r.version == r.storage_version)
}

fn owner_uids(obj: &Value) -> Vec<(String, bool)> {
    obj.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .map(|refs| {
            refs.iter()
                .filter_map(|r| {
                    let uid = r.get("uid")?.as_str()?.to_string();
                    let blocks = r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true);
                    Some((uid, blocks))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
        .unwrap_or_default()
}

fn deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
}

/// The part of an object a pass looks at, as an object with only those metadata fields.
///
/// A pass holds every object at once; keeping whole decoded objects would cost several times
/// the store's memory for a large store.
fn gc_view(bytes: &[u8]) -> Result<Value, StoreError> {
    // Typed, so that serde skips everything else without building it (a pass reads every
    // object: the rest of metadata, managedFields above all, would cost more than the scan).
    #[derive(serde::Deserialize)]
    struct View {
        #[serde(default)]
        metadata: Meta,
    }
    #[derive(serde::Deserialize, Default)]
    #[serde(rename_all = "camelCase")]
    struct Meta {
        uid: Option<Value>,
        name: Option<Value>,
        finalizers: Option<Value>,
        deletion_timestamp: Option<Value>,
        owner_references: Option<Value>,
    }
    let View { metadata: m } = serde_json::from_slice(bytes)?;
    let mut metadata = serde_json::Map::new();
    for (field, value) in [
        ("uid", m.uid),
        ("name", m.name),
        ("finalizers", m.finalizers),
        ("deletionTimestamp", m.deletion_timestamp),
        ("ownerReferences", m.owner_references),
    ] {
        if let Some(v) = value {
            metadata.insert(field.into(), v);
        }
    }
    Ok(json!({ "metadata": metadata }))
}

/// What marks an object a pass must judge: it has owners, or it is being deleted.
const NEEDLES: [&[u8]; 2] = [b"\"ownerReferences\"", b"\"deletionTimestamp\""];

/// The storage key of the owner a reference (from the object at `dependent_key`) names, if its
/// kind is served.
fn owner_key(dependent_key: &str, r: &Value) -> Option<String> {
    let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let group = field("apiVersion").rsplit_once('/').map_or("", |(g, _)| g);
    let res = RESOURCES.iter().find(|res| res.group == group && res.kind == field("kind"))?;
    let namespace = if res.namespaced { dependent_key.split('/').nth(2).unwrap_or("") } else { "" };
    Some(crate::http::endpoints::object_key(res, namespace, field("name")))
}

async fn owner_has_uid(state: &AppState, key: &str, uid: &str) -> Result<bool, ApiError> {
    Ok(state.store.get(key).await?.is_some_and(|o| meta_str(&o, "uid") == uid))
}

/// One pass over every object; true when it changed something.
pub async fn collect(state: &AppState) -> Result<bool, ApiError> {
    let mut all: Vec<(String, Value)> = Vec::new();
    let mut start_after = None;
    loop {
        let page = state
            .store
            .list_raw(ListRequest {
                prefix: String::new(),
                revision: None,
                start_after: start_after.clone(),
                limit: Some(PAGE),
            })
            .await?;
        start_after = page.items.last().map(|(k, _)| k.clone());
        for (key, bytes) in page.items {
            // Most objects neither own nor are owned nor are being deleted: their bytes say so
            // without a parse (a nested `ownerReferences`, in a template, only costs a parse).
            if NEEDLES.iter().any(|n| memchr::memmem::find(&bytes, n).is_some()) {
                all.push((key, gc_view(&bytes)?));
            }
        }
        if !page.more {
            break;
        }
    }
    // Owners are looked up where their references point, as kube's collector does: an owner
    // is there when the object of that kind, name and namespace has the referenced uid.
    let mut found: HashMap<(String, String), bool> = HashMap::new();
    let mut dangling: HashMap<&str, HashSet<String>> = HashMap::new();
    for (key, obj) in &all {
        let refs = obj.pointer("/metadata/ownerReferences").and_then(Value::as_array);
        for r in refs.into_iter().flatten() {
            let Some(uid) = r.get("uid").and_then(Value::as_str) else { continue };
            let owner_key = owner_key(key, r).unwrap_or_default();
            let there = match found.get(&(uid.to_string(), owner_key.clone())) {
                Some(&there) => there,
                None => {
                    let there =
                        !owner_key.is_empty() && owner_has_uid(state, &owner_key, uid).await?;
                    found.insert((uid.to_string(), owner_key), there);
                    there
                }
            };
            if !there {
                dangling.entry(key.as_str()).or_default().insert(uid.to_string());
            }
        }
    }
    // owner uid → its dependents' keys, and whether each blocks the owner's deletion.
    let mut dependents: HashMap<&str, Vec<(&str, bool)>> = HashMap::new();
    for (key, obj) in &all {
        if let Some(refs) = obj.pointer("/metadata/ownerReferences").and_then(Value::as_array) {
            for r in refs {
                if let Some(uid) = r.get("uid").and_then(Value::as_str) {
                    let blocks = r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true);
                    dependents.entry(uid).or_default().push((key.as_str(), blocks));
                }
            }
        }
    }
    let mut changed = false;
    for (key, obj) in &all {
        let Some(res) = resource_of(key) else { continue };
        let uid = meta_str(obj, "uid");
        let fins = finalizers(obj);
        let deps = dependents.get(uid).cloned().unwrap_or_default();
        if deleting(obj) && fins.iter().any(|f| f == ORPHAN) {
            let is_owner = |u: &str| u == uid;
            for (dep_key, _) in &deps {
                changed |= retry(|| drop_owner_refs(state, dep_key, &is_owner)).await?;
            }
            changed |= retry(|| remove_finalizer(state, key, ORPHAN)).await?;
        } else if deleting(obj) && fins.iter().any(|f| f == FOREGROUND) {
            let opts = DeleteOptions {
                propagation: Some(Propagation::Foreground),
                ..DeleteOptions::default()
            };
            for (dep_key, _) in &deps {
                let Some(dep_res) = resource_of(dep_key) else { continue };
                let dep = all.iter().find(|(k, _)| k == dep_key).map(|(_, o)| o);
                if dep.is_some_and(|d| !deleting(d)) {
                    let name = dep_key.rsplit('/').next().unwrap_or("");
                    match delete_one(state, dep_res, dep_key, name, &opts).await {
                        Ok(_) | Err(ApiError::NotFound { .. }) => changed = true,
                        Err(e) => return Err(e),
                    }
                }
            }
            if !deps.iter().any(|(_, blocks)| *blocks) {
                changed |= retry(|| remove_finalizer(state, key, FOREGROUND)).await?;
            }
        }
        let owners = owner_uids(obj);
        if owners.is_empty() {
            continue;
        }
        let none = HashSet::new();
        let dangling_here = dangling.get(key.as_str()).unwrap_or(&none);
        let gone = |u: &str| dangling_here.contains(u);
        if owners.iter().all(|(u, _)| gone(u)) {
            if !deleting(obj) {
                let opts = DeleteOptions {
                    propagation: Some(Propagation::Background),
                    ..DeleteOptions::default()
                };
                match delete_one(state, res, key, meta_str(obj, "name"), &opts).await {
                    Ok(_) | Err(ApiError::NotFound { .. }) => changed = true,
                    Err(e) => return Err(e),
                }
            }
        } else if owners.iter().any(|(u, _)| gone(u)) {
            changed |= retry(|| drop_owner_refs(state, key, &gone)).await?;
        }
    }
    Ok(changed)
}

/// Runs an optimistic write again while a concurrent write wins.
async fn retry<F, Fut>(mut f: F) -> Result<bool, ApiError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<bool, StoreError>>,
{
    for _ in 0..16 {
        match f().await {
            Err(StoreError::Conflict { .. }) => continue,
            Err(StoreError::NotFound) => return Ok(false),
            other => return other.map_err(ApiError::from),
        }
    }
    Ok(false)
}

/// Removes the owner references matching `drop` from the object at `key`.
async fn drop_owner_refs(
    state: &AppState,
    key: &str,
    drop: &dyn Fn(&str) -> bool,
) -> Result<bool, StoreError> {
    let Some(current) = state.store.get(key).await? else { return Ok(false) };
    let mut obj = (*current).clone();
    let Some(refs) = obj.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut)
    else {
        return Ok(false);
    };
    let before = refs.len();
    refs.retain(|r| !r.get("uid").and_then(Value::as_str).is_some_and(drop));
    if refs.len() == before {
        return Ok(false);
    }
    if refs.is_empty() {
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("ownerReferences");
        }
    }
    record(key, &current, &mut obj);
    state.store.update(key, stored_revision(&current), obj).await?;
    Ok(true)
}

/// Removes finalizer `name`; an object being deleted that loses its last finalizer goes.
async fn remove_finalizer(state: &AppState, key: &str, name: &str) -> Result<bool, StoreError> {
    let Some(current) = state.store.get(key).await? else { return Ok(false) };
    let mut fins = finalizers(&current);
    if !fins.iter().any(|f| f == name) {
        return Ok(false);
    }
    fins.retain(|f| f != name);
    if fins.is_empty() && deleting(&current) {
        state.store.delete(key, stored_revision(&current)).await?;
        return Ok(true);
    }
    let mut obj = (*current).clone();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if fins.is_empty() {
            meta.remove("finalizers");
        } else {
            meta.insert("finalizers".into(), json!(fins));
        }
    }
    record(key, &current, &mut obj);
    state.store.update(key, stored_revision(&current), obj).await?;
    Ok(true)
}

/// The collector's writes are updates like any other: whoever owned what it removed no longer
/// does (kube's collector writes through the API, so its field manager sees them).
fn record(key: &str, current: &Value, obj: &mut Value) {
    if let Some(res) = resource_of(key) {
        managed_fields::record_update(res, Some(current), obj, MANAGER, "");
    }
}
