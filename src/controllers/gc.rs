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
//! A namespaced owner is looked for in its dependent's namespace only; when the referenced
//! owner is found in another namespace (or a cluster-scoped dependent names a namespaced kind as
//! its owner), the collector records kube's `OwnerRefInvalidNamespace` warning Event about the
//! dependent, once, as kube's graph builder does when it observes the mismatch. A
//! cluster-scoped dependent of a namespaced kind is left alone, as kube's `isDangling` leaves it.
//!
//! Passes run at start-up (after the server listens), whenever a committed write touches
//! deletion state or owner references, and on a slow timer as a safety net.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::controllers::recorder::{ObjectRef, Recorder, Severity};
use crate::generated::RESOURCES;
use crate::object::error::ApiError;
use crate::object::meta::{self, FOREGROUND_FINALIZER as FOREGROUND, ORPHAN_FINALIZER as ORPHAN};
use crate::object::meta_str;
use crate::object::subresource::Part;
use crate::object::At;
use crate::registry::keys::{self, collection_prefix, object_key};
use crate::registry::{Change, DeleteOptions, Propagation, Registry};
use crate::resource::ResourceInfo;
use crate::store::{Event, EventType, ListRequest, StoreError};

/// The field manager of the collector's writes, as kube-controller-manager's user agent names it.
const MANAGER: &str = "kube-controller-manager";
/// The `source.component` of the collector's events (kube's garbage collector's recorder).
const COMPONENT: &str = "garbage-collector-controller";
/// Objects read per store call during a pass.
const PAGE: usize = 1000;
/// Passes in a row while each still changes something, before waiting for news.
const MAX_PASSES: usize = 16;

/// Starts the collector on the current (single-threaded) runtime. It writes through `registry`
/// like any client.
pub fn spawn(registry: Registry, interval: Duration) {
    tokio::task::spawn_local(async move { run(registry, interval).await });
}

async fn run(registry: Registry, interval: Duration) {
    // Filtered on the store thread: the other writes do not wake this task at all.
    let mut events = registry.store().subscribe(relevant);
    let mut warnings = Warnings::new(&registry);
    let mut pass = true;
    loop {
        for _ in 0..MAX_PASSES {
            if !pass {
                break;
            }
            match collect(&registry, &mut warnings).await {
                Ok(true) => continue,
                Ok(false) => break,
                Err(e) => {
                    log::warn!("garbage collection pass failed: {e}");
                    break;
                }
            }
        }
        // Wait for writes that may matter (a burst of them is one batch) or lost ones, or the
        // timer.
        pass = tokio::select! {
            batch = events.batch() => match batch {
                Some(batch) => batch.lagged || needs_pass(&registry, &batch.events),
                None => return,
            },
            _ = tokio::time::sleep(interval) => true,
        };
    }
}

/// Whether `events` call for a pass: a delete or an object being deleted does; an object whose
/// references were made or changed does only when an owner it names is not there (kube's graph
/// builder checks a new node's owners, `attemptToDeleteItem` on a virtual owner), so that
/// creating owned objects (every launcher pod, every VMI of a VM) reads only their owners.
fn needs_pass(registry: &Registry, events: &[Arc<Event>]) -> bool {
    events.iter().any(|ev| {
        if ev.kind == EventType::Deleted || meta::is_deleting(&ev.object) {
            return true;
        }
        let cluster_scoped = resource_of(&ev.key).is_some_and(|r| !r.namespaced);
        let refs = ev.object.at("/metadata/ownerReferences").and_then(Value::as_array);
        refs.into_iter().flatten().any(|r| {
            let uid = r.get("uid").and_then(Value::as_str).unwrap_or("");
            let namespaced_owner = owner_kind(r).is_some_and(|o| o.namespaced);
            if cluster_scoped && namespaced_owner {
                return true;
            }
            let Some(key) = owner_key(&ev.key, r) else { return true };
            !matches!(owner_has_uid(registry, &key, uid), Ok(true))
        })
    })
}

/// Whether an event can give the collector work: a delete (its dependents may now dangle), an
/// object being deleted, or owner references made or changed. An update that leaves a
/// dependent's references as they were (a status write of an owned object, most writes of a
/// running simulation) cannot: a pass for each would read every object per write.
fn relevant(ev: &Event) -> bool {
    let refs = |v: &Value| v.at("/metadata/ownerReferences").filter(|r| !r.is_null()).cloned();
    if matches!(ev.kind, EventType::Deleted) || meta::is_deleting(&ev.object) {
        return true;
    }
    let now = refs(&ev.object);
    let Some(prev) = ev.prev.as_ref().map(|p| p.bytes()) else { return now.is_some() };
    // The previous state only as bytes, as a pass scans objects, and only its references
    // decoded, only when it has some: a full decode of every update would cost more.
    if memchr::memmem::find(prev, NEEDLES[0]).is_none() {
        return now.is_some();
    }
    gc_view(prev).map_or(true, |before| refs(&before) != now)
}

/// The kind a storage key belongs to, in its storage version.
fn resource_of(key: &str) -> Option<&'static ResourceInfo> {
    let (group, plural, _, _) = keys::split(key)?;
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.plural == plural && r.version == r.storage_version)
}

fn owner_uids(obj: &Value) -> Vec<(String, bool)> {
    obj.at("/metadata/ownerReferences")
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
    let namespace = match keys::split(dependent_key) {
        Some((_, _, ns, _)) if res.namespaced => ns,
        _ => "",
    };
    Some(object_key(res, namespace, field("name")))
}

fn owner_has_uid(registry: &Registry, key: &str, uid: &str) -> Result<bool, ApiError> {
    // Its metadata only: a pass asks this of every dependent's owners.
    let Some(entry) = registry.store().get_raw(key) else { return Ok(false) };
    Ok(meta_str(&gc_view(&entry.value)?, "uid") == uid)
}

/// The collector's warnings about owner references that point across namespaces, each told
/// once per dependent and owner.
pub struct Warnings {
    recorder: Recorder,
    told: HashSet<(String, String)>,
    /// The namespace each owner looked for in this pass lives in, if it exists.
    owners: HashMap<String, Option<String>>,
}

impl Warnings {
    pub fn new(registry: &Registry) -> Warnings {
        Warnings {
            recorder: Recorder::new(registry.clone(), MANAGER, COMPONENT, ""),
            told: HashSet::new(),
            owners: HashMap::new(),
        }
    }

    /// Records `OwnerRefInvalidNamespace` about the dependent at `key` when the owner `r`
    /// names (of the namespaced kind `owner`) exists with its uid in another namespace than the
    /// dependent's (kube's `reportInvalidNamespaceOwnerRef`).
    async fn check(
        &mut self,
        registry: &Registry,
        key: &str,
        dependent: &Value,
        owner: &ResourceInfo,
        r: &Value,
    ) -> Result<(), ApiError> {
        let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let told = (meta_str(dependent, "uid").to_string(), field("uid").to_string());
        let (Some(res), Some((_, _, ns, name))) = (resource_of(key), keys::split(key)) else {
            return Ok(());
        };
        if self.told.contains(&told) {
            return Ok(());
        }
        // Where the owner lives, if anywhere: its kind's objects of that name, in any namespace
        // (once a pass: the dependents of a deleted owner all ask).
        let uid = field("uid");
        if !self.owners.contains_key(uid) {
            let all =
                ListRequest { prefix: collection_prefix(owner, None), ..ListRequest::default() };
            let suffix = format!("/{}", field("name"));
            let mut home = None;
            for (owner_key, bytes) in registry.store().list_raw(all).await?.items {
                if owner_key.ends_with(&suffix) && meta_str(&gc_view(&bytes)?, "uid") == uid {
                    home = keys::split(&owner_key).map(|k| k.2.to_string());
                }
            }
            self.owners.insert(uid.to_string(), home);
        }
        if self.owners[uid].as_deref().is_none_or(|home| home == ns) {
            return Ok(());
        }
        let about = ObjectRef {
            kind: res.kind.into(),
            namespace: ns.into(),
            name: name.into(),
            uid: told.0.clone(),
            api_version: res.api_version(),
            ..ObjectRef::default()
        };
        let message = format!(
            "ownerRef [{}/{}, namespace: {ns}, name: {}, uid: {}] does not exist in namespace {ns:?}",
            field("apiVersion"),
            field("kind"),
            field("name"),
            field("uid"),
        );
        match self
            .recorder
            .record(&about, Severity::Warning, "OwnerRefInvalidNamespace", &message)
            .await
        {
            Ok(()) => {
                self.told.insert(told);
            }
            Err(e) => log::warn!("recording OwnerRefInvalidNamespace for {key} failed: {e}"),
        }
        Ok(())
    }
}

/// The served kind an owner reference names, by its group and kind.
fn owner_kind(r: &Value) -> Option<&'static ResourceInfo> {
    let field = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let group = field("apiVersion").rsplit_once('/').map_or("", |(g, _)| g);
    RESOURCES.iter().find(|res| {
        res.group == group && res.kind == field("kind") && res.version == res.storage_version
    })
}

/// One pass over every object; true when it changed something.
pub async fn collect(registry: &Registry, warnings: &mut Warnings) -> Result<bool, ApiError> {
    warnings.owners.clear();
    let mut all: Vec<(String, Value)> = Vec::new();
    let mut start_after = None;
    loop {
        let page = registry
            .store()
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
            // Events are outside the graph, as kube's collector ignores them
            // (`DefaultIgnoredResources`): an Event's ownerReferences keep and collect nothing.
            if NEEDLES.iter().any(|n| memchr::memmem::find(&bytes, n).is_some())
                && !resource_of(&key).is_some_and(|r| r.events)
            {
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
    // Cluster-scoped dependents with a namespaced owner kind: neither kept nor collected.
    let mut unresolvable: HashSet<&str> = HashSet::new();
    for (key, obj) in &all {
        let refs = obj.at("/metadata/ownerReferences").and_then(Value::as_array);
        let cluster_scoped = resource_of(key).is_some_and(|r| !r.namespaced);
        for r in refs.into_iter().flatten() {
            let Some(uid) = r.get("uid").and_then(Value::as_str) else { continue };
            let namespaced_owner = owner_kind(r).filter(|o| o.namespaced);
            if let (Some(owner), true) = (namespaced_owner, cluster_scoped) {
                unresolvable.insert(key.as_str());
                warnings.check(registry, key, obj, owner, r).await?;
                continue;
            }
            let owner_key = owner_key(key, r).unwrap_or_default();
            let there = match found.get(&(uid.to_string(), owner_key.clone())) {
                Some(&there) => there,
                None => {
                    let there = !owner_key.is_empty() && owner_has_uid(registry, &owner_key, uid)?;
                    found.insert((uid.to_string(), owner_key), there);
                    there
                }
            };
            if !there {
                dangling.entry(key.as_str()).or_default().insert(uid.to_string());
                if let Some(owner) = namespaced_owner {
                    warnings.check(registry, key, obj, owner, r).await?;
                }
            }
        }
    }
    // owner uid → its dependents' keys, and whether each blocks the owner's deletion.
    let mut dependents: HashMap<&str, Vec<(&str, bool)>> = HashMap::new();
    for (key, obj) in &all {
        if let Some(refs) = obj.at("/metadata/ownerReferences").and_then(Value::as_array) {
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
        let fins = meta::object_finalizers(obj);
        let deps = dependents.get(uid).cloned().unwrap_or_default();
        if meta::is_deleting(obj) && fins.iter().any(|f| f == ORPHAN) {
            let is_owner = |u: &str| u == uid;
            for (dep_key, _) in &deps {
                changed |= drop_owner_refs(registry, dep_key, &is_owner).await?;
            }
            changed |= remove_finalizer(registry, key, ORPHAN).await?;
        } else if meta::is_deleting(obj) && fins.iter().any(|f| f == FOREGROUND) {
            let opts = DeleteOptions {
                propagation: Some(Propagation::Foreground),
                ..DeleteOptions::default()
            };
            for (dep_key, _) in &deps {
                let Some(dep_res) = resource_of(dep_key) else { continue };
                let dep = all.iter().find(|(k, _)| k == dep_key).map(|(_, o)| o);
                if dep.is_some_and(|d| !meta::is_deleting(d)) {
                    let Some((_, _, ns, name)) = keys::split(dep_key) else { continue };
                    match registry.delete(dep_res, ns, name, &opts).await {
                        Ok(_) | Err(ApiError::NotFound { .. }) => changed = true,
                        Err(e) => return Err(e),
                    }
                }
            }
            if !deps.iter().any(|(_, blocks)| *blocks) {
                changed |= remove_finalizer(registry, key, FOREGROUND).await?;
            }
        }
        let owners = owner_uids(obj);
        if owners.is_empty() || unresolvable.contains(key.as_str()) {
            continue;
        }
        let none = HashSet::new();
        let dangling_here = dangling.get(key.as_str()).unwrap_or(&none);
        let gone = |u: &str| dangling_here.contains(u);
        if owners.iter().all(|(u, _)| gone(u)) {
            if !meta::is_deleting(obj) {
                let opts = DeleteOptions {
                    propagation: Some(Propagation::Background),
                    ..DeleteOptions::default()
                };
                let ns = keys::split(key).map_or("", |(_, _, ns, _)| ns);
                match registry.delete(res, ns, meta_str(obj, "name"), &opts).await {
                    Ok(_) | Err(ApiError::NotFound { .. }) => changed = true,
                    Err(e) => return Err(e),
                }
            }
        } else if owners.iter().any(|(u, _)| gone(u)) {
            changed |= drop_owner_refs(registry, key, &gone).await?;
        }
    }
    Ok(changed)
}

/// Removes the owner references matching `drop` from the object at `key`; true when it did.
async fn drop_owner_refs(
    registry: &Registry,
    key: &str,
    drop: &dyn Fn(&str) -> bool,
) -> Result<bool, ApiError> {
    change(registry, key, |obj| {
        let refs = obj.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut)?;
        let before = refs.len();
        refs.retain(|r| !r.get("uid").and_then(Value::as_str).is_some_and(drop));
        if refs.len() == before {
            return None;
        }
        if refs.is_empty() {
            if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                meta.remove("ownerReferences");
            }
        }
        Some(())
    })
    .await
}

/// Removes finalizer `name`; an object being deleted that loses its last finalizer goes (the
/// registry's update rules remove it).
async fn remove_finalizer(registry: &Registry, key: &str, name: &str) -> Result<bool, ApiError> {
    change(registry, key, |obj| {
        let meta = obj.get_mut("metadata").and_then(Value::as_object_mut)?;
        meta::edit_finalizers(meta, &[], &[name.to_string()]).then_some(())
    })
    .await
}

/// One update of the object at `key` by the collector's field manager, as any client's update
/// (kube's collector writes through the API): `edit` changes a copy of the current state, or
/// says there is nothing to do. True when something was written; an object gone meanwhile is
/// nothing to do.
async fn change(
    registry: &Registry,
    key: &str,
    edit: impl FnMut(&mut Value) -> Option<()>,
) -> Result<bool, ApiError> {
    let (Some(res), Some((_, _, ns, name))) = (resource_of(key), keys::split(key)) else {
        return Ok(false);
    };
    match registry.update_with(res, (ns, name, Part::Main), MANAGER, edit).await {
        Ok(outcome) => Ok(outcome.change != Change::Unchanged),
        Err(ApiError::NotFound { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use serde_json::json;

    use super::relevant;
    use crate::store::{Event, EventType, Prev};

    fn event(kind: EventType, object: serde_json::Value, prev: Option<serde_json::Value>) -> Event {
        Event {
            rev: 2,
            key: "g/things/ns/x".into(),
            kind,
            object: Arc::new(object),
            value: Bytes::new(),
            prev: prev.map(|p| Prev::new(Bytes::from(p.to_string()))),
            size: 0,
        }
    }

    #[test]
    fn only_deletes_deletion_state_and_changed_owner_references_wake_the_collector() {
        let owned = |status: &str, owner: &str| {
            json!({"metadata": {"name": "x", "ownerReferences": [{"uid": owner, "controller": true}]},
                   "status": {"phase": status}})
        };
        let plain = json!({"metadata": {"name": "x"}, "status": {"phase": "Running"}});
        let (added, modified) = (EventType::Added, EventType::Modified);
        // A status write of an owned object, references as they were: nothing to collect.
        let status = event(modified, owned("Running", "u1"), Some(owned("Pending", "u1")));
        assert!(!relevant(&status));
        assert!(!relevant(&event(modified, plain.clone(), Some(plain.clone()))));
        assert!(!relevant(&event(added, plain.clone(), None)));
        // A new dependent, references changed, made or dropped.
        assert!(relevant(&event(added, owned("Pending", "u1"), None)));
        assert!(relevant(&event(modified, owned("Running", "u2"), Some(owned("Running", "u1")))));
        assert!(relevant(&event(modified, owned("Running", "u1"), Some(plain.clone()))));
        assert!(relevant(&event(modified, plain.clone(), Some(owned("Running", "u1")))));
        // Deletion state and deletes.
        let mut deleting = plain.clone();
        deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert!(relevant(&event(modified, deleting, Some(plain.clone()))));
        assert!(relevant(&event(EventType::Deleted, plain, None)));
    }
}
