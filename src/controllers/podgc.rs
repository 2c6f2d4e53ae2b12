//! kube-controller-manager's pod garbage collector, its orphaned-pod rule (K8S release-1.32
//! pkg/controller/podgc/gc_controller.go `gcOrphaned`): a pod bound to a node that does not
//! exist, still missing after a 40 s quarantine (`quarantineTime`), is marked Failed with the
//! `DisruptionTarget` condition (reason `DeletionByPodGC`, message `PodGC: node no longer
//! exists`) and deleted with a grace period of 0 (`markFailedAndDeletePodWithCondition`, as the
//! field manager `PodGC`). This is what ends a pod left Terminating on a node no kubelet runs.
//! Its other rules (terminated pods over a threshold, terminating pods on out-of-service
//! nodes, unscheduled terminating pods) have nothing to act on here: the threshold is off by
//! default, no node is tainted out-of-service, and an unscheduled pod is deleted at once.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::generated::kind_of_role;
use crate::object::conditions::update_condition;
use crate::object::error::ApiError;
use crate::object::meta_str;
use crate::object::subresource::Part;
use crate::object::At;
use crate::registry::keys::collection_prefix;
use crate::registry::{DeleteOptions, ListOptions, Registry};
use crate::resource::{KubeRole, ResourceInfo};

/// gc_controller.go `fieldManager`.
const MANAGER: &str = "PodGC";
/// gc_controller.go `quarantineTime`.
const QUARANTINE: Duration = Duration::from_secs(40);
/// gc_controller.go `gcCheckPeriod`: how often a pass runs while nodes are quarantined.
const CHECK_PERIOD: Duration = Duration::from_secs(20);

/// Starts the controller on the current (single-threaded) runtime, when the document has pods
/// and nodes.
pub fn spawn(registry: Registry) {
    let (Some(pods), Some(nodes)) = (kind_of_role(KubeRole::Pod), kind_of_role(KubeRole::Node))
    else {
        return;
    };
    tokio::task::spawn_local(async move {
        let prefixes = [collection_prefix(pods, None), collection_prefix(nodes, None)];
        let mut events = registry
            .store()
            .subscribe(move |ev| prefixes.iter().any(|p| ev.key.starts_with(p.as_str())));
        // The missing nodes and when each was first seen missing (the node queue's AddAfter).
        let mut missing: HashMap<String, Instant> = HashMap::new();
        loop {
            let next = match pass(&registry, pods, nodes, &mut missing, Instant::now()).await {
                Ok(next) => next,
                Err(e) => {
                    log::warn!("pod garbage collector pass failed: {e}");
                    Some(Instant::now() + Duration::from_secs(1))
                }
            };
            let batch = match next {
                Some(at) => match tokio::time::timeout_at(at, events.batch()).await {
                    Ok(batch) => batch,
                    Err(_) => continue,
                },
                None => events.batch().await,
            };
            if batch.is_none() {
                return;
            }
        }
    });
}

/// One pass: quarantines newly missing nodes, collects the pods of those missing past their
/// quarantine; answers when the next quarantine ends, if one is running.
async fn pass(
    registry: &Registry,
    pods: &'static ResourceInfo,
    nodes: &'static ResourceInfo,
    missing: &mut HashMap<String, Instant>,
    now: Instant,
) -> Result<Option<Instant>, ApiError> {
    let opts = ListOptions::default();
    let existing: BTreeSet<String> = registry
        .list(nodes, None, &opts)
        .await?
        .objects()?
        .iter()
        .map(|n| meta_str(n, "name").to_string())
        .collect();
    let all = registry.list(pods, None, &opts).await?.objects()?;
    let orphaned: BTreeSet<&str> = all
        .iter()
        .filter_map(|p| p.at("/spec/nodeName").and_then(Value::as_str))
        .filter(|n| !n.is_empty() && !existing.contains(*n))
        .collect();
    missing.retain(|n, _| orphaned.contains(n.as_str()));
    for node in &orphaned {
        missing.entry(node.to_string()).or_insert(now);
    }
    let gone: BTreeSet<&str> = missing
        .iter()
        .filter(|(_, since)| now.duration_since(**since) >= QUARANTINE)
        .map(|(n, _)| n.as_str())
        .collect();
    for pod in all.iter().filter(|p| {
        p.at("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| gone.contains(n))
    }) {
        let (ns, name) = (meta_str(pod, "namespace"), meta_str(pod, "name"));
        log::info!("PodGC is force deleting Pod {ns}/{name}");
        match mark_failed_and_delete(registry, pods, pod).await {
            Ok(()) | Err(ApiError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    let next = missing.values().map(|since| *since + QUARANTINE).filter(|at| *at > now).min();
    Ok(next.map(|at| at.min(now + CHECK_PERIOD)))
}

/// `markFailedAndDeletePodWithCondition`: a pod not yet terminal turns Failed with the
/// condition (kube applies the status as `PodGC`; here an update of the status as that
/// manager), then it is deleted with `NewDeleteOptions(0)`.
async fn mark_failed_and_delete(
    registry: &Registry,
    pods: &'static ResourceInfo,
    pod: &Value,
) -> Result<(), ApiError> {
    let (ns, name) = (meta_str(pod, "namespace"), meta_str(pod, "name"));
    let uid = meta_str(pod, "uid").to_string();
    let phase = pod.at("/status/phase").and_then(Value::as_str);
    if !matches!(phase, Some("Succeeded" | "Failed")) {
        let edit = |p: &mut Value| -> Option<()> {
            if meta_str(p, "uid") != uid {
                return None;
            }
            let status = p
                .as_object_mut()?
                .entry("status")
                .or_insert_with(|| Value::from(serde_json::Map::new()));
            status.as_object_mut()?.insert("phase".into(), Value::from("Failed"));
            update_condition(
                p,
                "DisruptionTarget",
                "True",
                "DeletionByPodGC",
                "PodGC: node no longer exists",
            );
            Some(())
        };
        registry.update_with(pods, (ns, name, Part::Status), MANAGER, edit).await?;
    }
    let opts = DeleteOptions { grace_period_seconds: Some(0), ..DeleteOptions::default() };
    registry.delete(pods, ns, name, &opts).await.map(|_| ())
}
