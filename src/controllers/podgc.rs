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
use crate::registry::keys::{collection_prefix, object_key, split};
use crate::registry::{DeleteOptions, ListOptions, Registry};
use crate::resource::{KubeRole, ResourceInfo};
use crate::store::EventType;

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
    tokio::task::spawn_local(async move { run(registry, pods, nodes).await });
}

async fn run(registry: Registry, pods: &'static ResourceInfo, nodes: &'static ResourceInfo) {
    let (pod_prefix, node_prefix) = (collection_prefix(pods, None), collection_prefix(nodes, None));
    let watched = [pod_prefix.clone(), node_prefix.clone()];
    let mut events = registry
        .store()
        .subscribe(move |ev| watched.iter().any(|p| ev.key.starts_with(p.as_str())));
    let mut seen = Seen::default();
    let mut relist = true;
    loop {
        if relist {
            if let Err(e) = seen.list(&registry, pods, nodes).await {
                log::warn!("pod garbage collector: listing: {e}");
            }
        }
        let next = match pass(&registry, pods, &mut seen, Instant::now()).await {
            Ok(next) => next,
            Err(e) => {
                log::warn!("pod garbage collector pass failed: {e}");
                Some(Instant::now() + Duration::from_secs(1))
            }
        };
        let batch = match next {
            Some(at) => match tokio::time::timeout_at(at, events.batch()).await {
                Ok(batch) => batch,
                Err(_) => {
                    relist = false;
                    continue;
                }
            },
            None => events.batch().await,
        };
        let Some(batch) = batch else { return };
        relist = batch.lagged;
        for ev in &batch.events {
            let gone = ev.kind == EventType::Deleted;
            if ev.key.starts_with(&node_prefix) {
                let name = split(&ev.key).map_or("", |k| k.3).to_string();
                match gone {
                    true => seen.nodes.remove(&name),
                    false => seen.nodes.insert(name),
                };
            } else {
                let node = ev.object.at("/spec/nodeName").and_then(Value::as_str);
                seen.pod(&ev.key, node.filter(|n| !gone && !n.is_empty()));
            }
        }
    }
}

/// What a pass needs, kept from the events as an informer's cache keeps it (a pass reads no
/// list): the nodes, each bound pod's node, and how many pods each node has.
#[derive(Default)]
struct Seen {
    nodes: BTreeSet<String>,
    pods: HashMap<String, String>,
    per_node: HashMap<String, usize>,
    /// The missing nodes and when each was first seen missing (the node queue's AddAfter).
    missing: HashMap<String, Instant>,
}

impl Seen {
    async fn list(
        &mut self,
        registry: &Registry,
        pods: &'static ResourceInfo,
        nodes: &'static ResourceInfo,
    ) -> Result<(), ApiError> {
        let opts = ListOptions::default();
        let missing = std::mem::take(&mut self.missing);
        *self = Seen { missing, ..Seen::default() };
        for n in registry.list(nodes, None, &opts).await?.objects()? {
            self.nodes.insert(meta_str(&n, "name").to_string());
        }
        for p in registry.list(pods, None, &opts).await?.objects()? {
            let key = object_key(pods, meta_str(&p, "namespace"), meta_str(&p, "name"));
            self.pod(
                &key,
                p.at("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty()),
            );
        }
        Ok(())
    }

    /// Notes the pod `key` bound to `node` (`None`: gone or not bound).
    fn pod(&mut self, key: &str, node: Option<&str>) {
        if self.pods.get(key).map(String::as_str) == node {
            return;
        }
        if let Some(old) = self.pods.remove(key) {
            if let Some(n) = self.per_node.get_mut(&old) {
                *n -= 1;
                if *n == 0 {
                    self.per_node.remove(&old);
                }
            }
        }
        if let Some(node) = node {
            self.pods.insert(key.to_string(), node.to_string());
            *self.per_node.entry(node.to_string()).or_default() += 1;
        }
    }
}

/// One pass: quarantines newly missing nodes, collects the pods of those missing past their
/// quarantine; answers when the next quarantine ends, if one is running.
async fn pass(
    registry: &Registry,
    pods: &'static ResourceInfo,
    seen: &mut Seen,
    now: Instant,
) -> Result<Option<Instant>, ApiError> {
    let Seen { nodes, pods: bound, per_node, missing } = &mut *seen;
    missing.retain(|n, _| per_node.contains_key(n) && !nodes.contains(n));
    for node in per_node.keys().filter(|n| !nodes.contains(*n)) {
        missing.entry(node.clone()).or_insert(now);
    }
    let gone: BTreeSet<&str> = missing
        .iter()
        .filter(|(_, since)| now.duration_since(**since) >= QUARANTINE)
        .map(|(n, _)| n.as_str())
        .collect();
    if !gone.is_empty() {
        let keys: Vec<&String> =
            bound.iter().filter(|(_, n)| gone.contains(n.as_str())).map(|(k, _)| k).collect();
        for key in keys {
            let Ok(Some(pod)) = registry.store().get(key).await else { continue };
            let (ns, name) = (meta_str(&pod, "namespace"), meta_str(&pod, "name"));
            log::info!("PodGC is force deleting Pod {ns}/{name}");
            match mark_failed_and_delete(registry, pods, &pod).await {
                Ok(()) | Err(ApiError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_node_no_pod_names_or_that_exists_is_never_quarantined() {
        let mut seen = Seen::default();
        seen.nodes.insert("n1".into());
        seen.pod("p/a", Some("n1"));
        seen.pod("p/b", Some("gone"));
        seen.pod("p/c", Some("gone"));
        assert_eq!(seen.per_node.get("gone"), Some(&2));
        let t0 = Instant::now();
        let store = crate::store::Store::open(crate::store::StoreConfig::new(":memory:")).unwrap();
        let registry = Registry::new(store);
        let pods = kind_of_role(KubeRole::Pod).unwrap();
        let next = pass(&registry, pods, &mut seen, t0).await.unwrap();
        assert_eq!(next, Some(t0 + CHECK_PERIOD));
        assert_eq!(seen.missing.keys().collect::<Vec<_>>(), ["gone"]);
        // Its pods moved or went: the quarantine ends with them.
        seen.pod("p/b", None);
        seen.pod("p/c", Some("n1"));
        assert!(!seen.per_node.contains_key("gone"));
        assert_eq!(pass(&registry, pods, &mut seen, t0).await.unwrap(), None);
        assert!(seen.missing.is_empty());
    }
}
