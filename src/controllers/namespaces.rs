//! The namespace controller (kube-controller-manager's `NamespaceController`): a namespace being
//! deleted is emptied of every namespaced kind's objects through the registry, as a client's
//! deletes (their finalizers and propagation honoured); its conditions say what remains; once
//! nothing does, the `kubernetes` finalizer goes from `spec.finalizers` and the registry's update
//! rules remove the namespace.
//!
//! Like the garbage collector it keeps no state: a pass looks at every terminating namespace,
//! on start-up, whenever a namespace or a deletion commits, and on a timer.

use std::sync::OnceLock;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::broadcast::error::RecvError;

use crate::generated::RESOURCES;
use crate::object::error::ApiError;
use crate::object::meta::{is_deleting, now_rfc3339};
use crate::object::meta_str;
use crate::object::subresource::Part;
use crate::object::At;
use crate::registry::keys::collection_prefix;
use crate::registry::namespaces::namespace_kind;
use crate::registry::{DeleteOptions, Deleted, ListOptions, Registry};
use crate::resource::ResourceInfo;
use crate::store::{Event, EventType};

/// The field manager of the controller's writes, as kube-controller-manager's.
const MANAGER: &str = "kube-controller-manager";
/// The finalizer the controller owns (`spec.finalizers`).
const FINALIZER: &str = "kubernetes";

/// Starts the controller on the current (single-threaded) runtime, when the registry runs the
/// namespace lifecycle.
pub fn spawn(registry: Registry, interval: Duration) {
    if namespace_kind().is_some() && registry.checks_namespaces() {
        tokio::task::spawn_local(async move { run(registry, interval).await });
    }
}

async fn run(registry: Registry, interval: Duration) {
    let mut events = registry.store().subscribe(relevant);
    loop {
        if let Err(e) = pass(&registry).await {
            log::warn!("namespace controller pass failed: {e}");
        }
        tokio::select! {
            ev = events.recv() => if let Err(RecvError::Closed) = ev {
                return;
            },
            _ = tokio::time::sleep(interval) => {}
        }
    }
}

/// A change to a namespace, or a deletion (content leaving a terminating namespace). Runs on
/// the committing thread for every commit: the namespaces' key prefix is made once.
fn relevant(ev: &Event) -> bool {
    static PREFIX: OnceLock<Option<String>> = OnceLock::new();
    let prefix = PREFIX.get_or_init(|| namespace_kind().map(|ns| collection_prefix(ns, None)));
    prefix.as_deref().is_some_and(|p| ev.kind == EventType::Deleted || ev.key.starts_with(p))
}

/// The kinds a namespace holds: every namespaced, stored kind, once (in its storage version).
fn namespaced_kinds() -> impl Iterator<Item = &'static ResourceInfo> {
    RESOURCES.iter().filter(|r| r.namespaced && r.is_stored() && r.version == r.storage_version)
}

/// One pass over the terminating namespaces.
pub async fn pass(registry: &Registry) -> Result<(), ApiError> {
    let Some(ns_kind) = namespace_kind() else { return Ok(()) };
    let namespaces = registry.list(ns_kind, None, &ListOptions::default()).await?.objects()?;
    for ns in namespaces.iter().filter(|n| is_deleting(n)) {
        empty(registry, ns_kind, meta_str(ns, "name")).await?;
    }
    Ok(())
}

/// Deletes what namespace `name` holds, then writes its conditions, or finalizes it.
async fn empty(
    registry: &Registry,
    ns_kind: &'static ResourceInfo,
    name: &str,
) -> Result<(), ApiError> {
    let mut remaining = Vec::new();
    let mut finalizers: Vec<(String, usize)> = Vec::new();
    for res in namespaced_kinds() {
        let objects = registry.list(res, Some(name), &ListOptions::default()).await?.objects()?;
        let mut left = 0;
        for obj in &objects {
            // What holds the object: its finalizers as listed, or as its delete left them.
            let kept;
            let held: &Value = if !is_deleting(obj) {
                let opts = DeleteOptions::default();
                match registry.delete(res, name, meta_str(obj, "name"), &opts).await {
                    Ok(Deleted::Gone(_)) | Err(ApiError::NotFound { .. }) => continue,
                    Ok(Deleted::Finalizing(object)) => {
                        kept = object;
                        kept.value()
                    }
                    Err(e) => return Err(e),
                }
            } else {
                obj
            };
            left += 1;
            let held = held.at("/metadata/finalizers").and_then(Value::as_array);
            for f in held.into_iter().flatten().filter_map(Value::as_str) {
                match finalizers.iter_mut().find(|(name, _)| name == f) {
                    Some((_, n)) => *n += 1,
                    None => finalizers.push((f.to_string(), 1)),
                }
            }
        }
        if left > 0 {
            remaining.push(format!("{} has {left} resource instances", res.group_resource()));
        }
    }
    if remaining.is_empty() {
        // Finalized: the registry removes a deleted namespace that nothing holds any more.
        let done = |ns: &mut Value| {
            let list = ns.pointer_mut("/spec/finalizers")?.as_array_mut()?;
            let before = list.len();
            list.retain(|f| f != FINALIZER);
            (list.len() != before).then_some(())
        };
        let part = if ns_kind.finalize_subresource { Part::Finalize } else { Part::Main };
        return match registry.update_with(ns_kind, ("", name, part), MANAGER, done).await {
            Ok(_) | Err(ApiError::NotFound { .. }) => Ok(()),
            Err(e) => Err(e),
        };
    }
    finalizers.sort();
    let conditions = conditions(&remaining, &finalizers);
    let write = |ns: &mut Value| {
        let status = ns.as_object_mut()?.entry("status").or_insert_with(|| json!({}));
        let old = status.get("conditions").cloned().unwrap_or(Value::Null);
        let new = keep_transition_times(&old, conditions.clone());
        (old != new).then(|| status["conditions"] = new)
    };
    match registry.update_with(ns_kind, ("", name, Part::Status), MANAGER, write).await {
        Ok(_) | Err(ApiError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// kube's namespace conditions while content remains (`namespacedResourcesDeleter`).
fn conditions(remaining: &[String], finalizers: &[(String, usize)]) -> Value {
    let condition = |type_: &str, status: &str, reason: &str, message: String| {
        json!({"type": type_, "status": status, "reason": reason, "message": message,
               "lastTransitionTime": now_rfc3339()})
    };
    let mut out = vec![
        condition(
            "NamespaceDeletionDiscoveryFailure",
            "False",
            "ResourcesDiscovered",
            "All resources successfully discovered".into(),
        ),
        condition(
            "NamespaceDeletionGroupVersionParsingFailure",
            "False",
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed".into(),
        ),
        condition(
            "NamespaceDeletionContentFailure",
            "False",
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization".into(),
        ),
        condition(
            "NamespaceContentRemaining",
            "True",
            "SomeResourcesRemain",
            format!("Some resources are remaining: {}", remaining.join(", ")),
        ),
    ];
    out.push(if finalizers.is_empty() {
        condition(
            "NamespaceFinalizersRemaining",
            "False",
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished".into(),
        )
    } else {
        let held: Vec<String> =
            finalizers.iter().map(|(f, n)| format!("{f} in {n} resource instances")).collect();
        condition(
            "NamespaceFinalizersRemaining",
            "True",
            "SomeFinalizersRemain",
            format!("Some content in the namespace has finalizers remaining: {}", held.join(", ")),
        )
    });
    Value::Array(out)
}

/// A condition that did not change keeps its `lastTransitionTime`, so a pass that finds the
/// same state writes nothing.
fn keep_transition_times(old: &Value, mut new: Value) -> Value {
    let same = |a: &Value, b: &Value| {
        ["type", "status", "reason", "message"].iter().all(|k| a.get(k) == b.get(k))
    };
    if let (Some(old), Some(new)) = (old.as_array(), new.as_array_mut()) {
        for c in new.iter_mut() {
            if let Some(prev) = old.iter().find(|o| same(o, c)) {
                c["lastTransitionTime"] = prev["lastTransitionTime"].clone();
            }
        }
    }
    new
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_say_what_remains_and_keep_unchanged_times() {
        let c = conditions(
            &["virtualmachines.kubevirt.io has 1 resource instances".into()],
            &[("example.com/hold".into(), 1)],
        );
        let by_type =
            |t: &str| c.as_array().unwrap().iter().find(|x| x["type"] == t).unwrap().clone();
        assert_eq!(
            by_type("NamespaceContentRemaining")["message"],
            "Some resources are remaining: virtualmachines.kubevirt.io has 1 resource instances"
        );
        assert_eq!(
            by_type("NamespaceFinalizersRemaining")["message"],
            "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
        );
        let mut old = c.clone();
        old[0]["lastTransitionTime"] = json!("2020-01-01T00:00:00Z");
        let kept = keep_transition_times(&old, c.clone());
        assert_eq!(kept[0]["lastTransitionTime"], "2020-01-01T00:00:00Z");
        assert_eq!(kept, old, "the same state is the same conditions");
    }
}
