//! kube-scheduler for the simulated cluster (`--simulate`): each pod without a node is placed
//! on one that fits it, by kube's default filters in their order (K8S
//! pkg/scheduler/apis/config/v1/default_plugins.go; the plugins in
//! pkg/scheduler/framework/plugins/): NodeUnschedulable, TaintToleration, NodeAffinity (the
//! node selector and required node affinity), NodeResourcesFit (requests against what the
//! node has left, pods counted), InterPodAffinity (required pod anti-affinity per hostname).
//! A node records the first filter it fails. Among the nodes that fit, the least allocated
//! wins (NodeResourcesFit's default score), ties drawn from the seed. Before the binding,
//! VolumeBinding's PreBind gives each unbound claim the pod uses under a WaitForFirstConsumer
//! class the chosen node (`volume.kubernetes.io/selected-node`), which lets its provisioner
//! act (pkg/scheduler/framework/plugins/volumebinding/binder.go BindPodVolumes); unlike kube,
//! the pod is bound at once rather than once its claims are. A pod that fits nowhere
//! gets kube-scheduler's `PodScheduled` False condition and a `FailedScheduling` event with
//! the FitError's message (pkg/scheduler/framework/types.go), and is tried again when a pod or
//! a node changes.
//!
//! What it knows of pods and nodes it keeps from the store's events (decoded once by the
//! feed), so a pass costs the pending pods, not the cluster.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use lifecycle::expr::{parse_quantity, Rng};
use serde_json::{json, Map, Value};

use crate::controllers::recorder::{ObjectRef, Recorder, Severity};
use crate::controllers::volumes::SELECTED_NODE;
use crate::generated::kind_of_role;
use crate::object::conditions::{self, update_condition};
use crate::object::error::ApiError;
use crate::object::meta::is_deleting;
use crate::object::meta_str;
use crate::object::selector::{label_selector_matches, requirement_holds};
use crate::object::subresource::Part;
use crate::object::At;
use crate::registry::keys::{collection_prefix, object_key, split};
use crate::registry::{ListOptions, Registry, Target};
use crate::resource::{KubeRole, ResourceInfo};
use crate::store::EventType;

/// kube-scheduler's name: a pod's default `schedulerName`, its events' component.
pub const SCHEDULER: &str = "default-scheduler";
/// The field manager of its writes, as kube-scheduler's client names itself.
const MANAGER: &str = "kube-scheduler";
/// `ErrNoNodesAvailable` (pkg/scheduler/schedule_one.go).
const NO_NODES: &str = "no nodes available to schedule pods";
/// The taint a cordoned node is read as carrying (NodeUnschedulable's toleration check).
const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";
const HOSTNAME: &str = "kubernetes.io/hostname";

/// The filter reasons, in kube's words (each plugin's `ErrReason…`).
const REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";
const REASON_AFFINITY: &str = "node(s) didn't match Pod's node affinity/selector";
const REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";
const REASON_TOO_MANY_PODS: &str = "Too many pods";
/// DefaultPreemption's answers (pkg/scheduler/framework/preemption/preemption.go): a node
/// whose failure preemption could resolve has no victims (every pod here has priority 0);
/// one whose failure it cannot resolve is not helped by it.
const NO_VICTIMS: &str = "No preemption victims found for incoming pod";
const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";

/// Resource amounts: cpu in millicores, the rest in units (bytes, devices).
type Amounts = BTreeMap<String, f64>;

/// What a pass reads of a pod.
#[derive(Debug, Clone)]
struct PodInfo {
    namespace: String,
    node: Option<String>,
    requests: Amounts,
    labels: Map<String, Value>,
    /// Not Succeeded or Failed: its requests count on its node.
    active: bool,
}

impl PodInfo {
    fn of(pod: &Value) -> PodInfo {
        let phase = pod.at("/status/phase").and_then(Value::as_str).unwrap_or("");
        let node = pod.at("/spec/nodeName").and_then(Value::as_str).filter(|n| !n.is_empty());
        PodInfo {
            namespace: meta_str(pod, "namespace").to_string(),
            node: node.map(str::to_string),
            requests: requests(pod),
            labels: pod
                .at("/metadata/labels")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            active: phase != "Succeeded" && phase != "Failed",
        }
    }
}

/// A quantity in the unit the fit compares: millicores for cpu.
fn amount(resource: &str, q: &Value) -> f64 {
    let v = match q {
        Value::String(s) => parse_quantity(s).unwrap_or(0.0),
        Value::Number(n) => n.as_f64().unwrap_or(0.0),
        _ => 0.0,
    };
    if resource == "cpu" {
        (v * 1000.0).round()
    } else {
        v.ceil()
    }
}

/// A container's requests; a resource with a limit and no request requests its limit, as
/// kube's defaulting stores it (pkg/apis/core/v1/defaults.go SetDefaults_Pod).
fn container_requests(c: &Value) -> Amounts {
    let mut out = Amounts::new();
    for from in ["limits", "requests"] {
        let list = c.at(&format!("/resources/{from}")).and_then(Value::as_object);
        for (k, v) in list.into_iter().flatten() {
            out.insert(k.clone(), amount(k, v));
        }
    }
    out
}

fn add(into: &mut Amounts, more: &Amounts) {
    for (k, v) in more {
        match into.get_mut(k) {
            Some(sum) => *sum += v,
            None => {
                into.insert(k.clone(), *v);
            }
        }
    }
}

/// The pod's effective requests (K8S staging/src/k8s.io/component-helpers/resource/helpers.go
/// PodRequests): its containers' sum and its sidecars', at least each init container's with
/// the sidecars started before it, plus the pod's overhead.
fn requests(pod: &Value) -> Amounts {
    let mut total = Amounts::new();
    let containers = pod.at("/spec/containers").and_then(Value::as_array);
    for c in containers.into_iter().flatten() {
        add(&mut total, &container_requests(c));
    }
    let mut sidecars = Amounts::new();
    let mut init_floor = Amounts::new();
    let inits = pod.at("/spec/initContainers").and_then(Value::as_array);
    for c in inits.into_iter().flatten() {
        let req = container_requests(c);
        if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add(&mut sidecars, &req);
            add(&mut total, &req);
        } else {
            let mut during = sidecars.clone();
            add(&mut during, &req);
            for (k, v) in during {
                let floor = init_floor.entry(k).or_default();
                *floor = floor.max(v);
            }
        }
    }
    for (k, v) in init_floor {
        let t = total.entry(k).or_default();
        *t = t.max(v);
    }
    if let Some(overhead) = pod.at("/spec/overhead").and_then(Value::as_object) {
        for (k, v) in overhead {
            *total.entry(k.clone()).or_default() += amount(k, v);
        }
    }
    total
}

/// A node's verdict for a pod: the reasons it fails its first filter with, and whether
/// preemption could resolve them.
#[derive(Debug, PartialEq)]
struct Failure {
    reasons: Vec<String>,
    resolvable: bool,
}

fn tolerates(pod: &Value, key: &str, value: &str, effect: &str) -> bool {
    let tolerations = pod.at("/spec/tolerations").and_then(Value::as_array);
    tolerations.into_iter().flatten().any(|t| {
        let s = |f: &str| t.get(f).and_then(Value::as_str).unwrap_or("");
        let effect_ok = s("effect").is_empty() || s("effect") == effect;
        // An empty key with Exists tolerates everything (ToleratesTaint).
        let key_ok = s("key").is_empty() || s("key") == key;
        let value_ok = match s("operator") {
            "Exists" => true,
            _ => s("value") == value,
        };
        effect_ok && key_ok && value_ok && (!s("key").is_empty() || s("operator") == "Exists")
    })
}

/// The node selector and the required node affinity (NodeAffinity's Filter).
fn matches_node_affinity(pod: &Value, node: &Value) -> bool {
    let none = Map::new();
    let labels = node.at("/metadata/labels").and_then(Value::as_object).unwrap_or(&none);
    let selector = pod.at("/spec/nodeSelector").and_then(Value::as_object);
    if !selector.into_iter().flatten().all(|(k, v)| labels.get(k) == Some(v)) {
        return false;
    }
    let terms = pod
        .at("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array);
    let Some(terms) = terms else { return true };
    // Terms are ORed, a term's expressions ANDed; a term with no expressions matches nothing.
    terms.iter().any(|t| {
        let exprs = t.get("matchExpressions").and_then(Value::as_array);
        let fields = t.get("matchFields").and_then(Value::as_array);
        if exprs.is_none_or(|e| e.is_empty()) && fields.is_none_or(|f| f.is_empty()) {
            return false;
        }
        let name = json!({"metadata.name": meta_str(node, "name")});
        let by_name = name.as_object().expect("an object");
        exprs.into_iter().flatten().all(|r| requirement_holds(r, labels))
            && fields.into_iter().flatten().all(|r| requirement_holds(r, by_name))
    })
}

/// The pod's required anti-affinity per hostname against the pods on the node.
fn violates_anti_affinity(pod: &Value, on_node: &[&PodInfo]) -> bool {
    let terms = pod
        .at("/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution")
        .and_then(Value::as_array);
    let ns = meta_str(pod, "namespace");
    terms.into_iter().flatten().any(|t| {
        if t.get("topologyKey").and_then(Value::as_str) != Some(HOSTNAME) {
            return false;
        }
        let Some(selector) = t.get("labelSelector") else { return false };
        let namespaces: Vec<&str> = t
            .get("namespaces")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        on_node.iter().any(|p| {
            let ns_ok = if namespaces.is_empty() {
                p.namespace == ns
            } else {
                namespaces.contains(&p.namespace.as_str())
            };
            ns_ok && label_selector_matches(selector, &p.labels)
        })
    })
}

/// What a filter reads of a node's pods: how many count against it, the sum of their
/// requests, and (for a pod with anti-affinity) the pods themselves.
struct OnNode<'a> {
    count: usize,
    pods: Vec<&'a PodInfo>,
    used: &'a Amounts,
}

/// Runs the filters on one node; `None` when the pod fits.
fn filter(pod: &Value, want: &Amounts, node: &Value, on: &OnNode) -> Option<Failure> {
    let on_node = on.pods.as_slice();
    let unresolvable = |r: &str| Some(Failure { reasons: vec![r.to_string()], resolvable: false });
    // NodeUnschedulable.
    let cordoned = node.at("/spec/unschedulable") == Some(&json!(true));
    if cordoned && !tolerates(pod, UNSCHEDULABLE_TAINT, "", "NoSchedule") {
        return unresolvable(REASON_UNSCHEDULABLE);
    }
    // TaintToleration: NoSchedule and NoExecute taints must be tolerated.
    let taints = node.at("/spec/taints").and_then(Value::as_array);
    for t in taints.into_iter().flatten() {
        let s = |f: &str| t.get(f).and_then(Value::as_str).unwrap_or("");
        if (s("effect") == "NoSchedule" || s("effect") == "NoExecute")
            && !tolerates(pod, s("key"), s("value"), s("effect"))
        {
            return unresolvable(&format!(
                "node(s) had untolerated taint {{{}: {}}}",
                s("key"),
                s("value")
            ));
        }
    }
    // NodeAffinity.
    if !matches_node_affinity(pod, node) {
        return unresolvable(REASON_AFFINITY);
    }
    // NodeResourcesFit (fitsRequest: pods first, then each requested resource).
    let allocatable = node.at("/status/allocatable").and_then(Value::as_object);
    let alloc = |r: &str| allocatable.and_then(|a| a.get(r)).map_or(0.0, |q| amount(r, q));
    let mut reasons = Vec::new();
    if on.count as f64 + 1.0 > alloc("pods") {
        reasons.push(REASON_TOO_MANY_PODS.to_string());
    }
    let used = on.used;
    let order = ["cpu", "memory", "ephemeral-storage"];
    let rest = want.keys().filter(|k| !order.contains(&k.as_str())).map(String::as_str);
    for r in order.into_iter().chain(rest) {
        let need = want.get(r).copied().unwrap_or(0.0);
        if need > 0.0 && need > alloc(r) - used.get(r).copied().unwrap_or(0.0) {
            reasons.push(format!("Insufficient {r}"));
        }
    }
    if !reasons.is_empty() {
        return Some(Failure { reasons, resolvable: true });
    }
    // InterPodAffinity.
    if violates_anti_affinity(pod, on_node) {
        return Some(Failure { reasons: vec![REASON_ANTI_AFFINITY.to_string()], resolvable: true });
    }
    None
}

/// The FitError's text (framework/types.go: `0/N nodes are available:` then each " %v."): the
/// filters' reasons as a histogram sorted as strings, then DefaultPreemption's own FitError.
fn fit_error(nodes: usize, failures: &[Failure]) -> String {
    let histogram = |reasons: &mut dyn Iterator<Item = &str>| {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for r in reasons {
            *counts.entry(r).or_default() += 1;
        }
        let mut items: Vec<String> = counts.into_iter().map(|(r, n)| format!("{n} {r}")).collect();
        items.sort();
        items.join(", ")
    };
    let filters =
        histogram(&mut failures.iter().flat_map(|f| f.reasons.iter().map(String::as_str)));
    let preemption =
        histogram(
            &mut failures.iter().map(|f| if f.resolvable { NO_VICTIMS } else { NOT_HELPFUL }),
        );
    format!("0/{nodes} nodes are available: {filters}. preemption: 0/{nodes} nodes are available: {preemption}..")
}

/// Where `pod` goes among the cluster's nodes, given the pods placed so far, or the
/// FitError's message.
fn place(pod: &Value, cluster: &Cluster, rng: &mut Rng) -> Result<String, String> {
    let nodes = &cluster.nodes;
    if nodes.is_empty() {
        return Err(NO_NODES.to_string());
    }
    let want = requests(pod);
    // Only a pod with required anti-affinity reads the pods on each node (InterPodAffinity).
    let reads_pods = pod
        .at("/spec/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution")
        .is_some();
    let empty = NodeUse::default();
    let mut failures = Vec::new();
    let mut best: Vec<(&str, f64)> = Vec::new();
    for (name, node) in nodes {
        let usage = cluster.usage.get(name.as_str()).unwrap_or(&empty);
        let pods = match reads_pods {
            true => usage.pods.iter().filter_map(|k| cluster.pods.get(k)).collect(),
            false => Vec::new(),
        };
        let on = OnNode { count: usage.pods.len(), pods, used: &usage.used };
        match filter(pod, &want, node, &on) {
            Some(f) => failures.push(f),
            None => best.push((name, least_allocated(node, &want, &usage.used))),
        }
    }
    if best.is_empty() {
        return Err(fit_error(nodes.len(), &failures));
    }
    let top = best.iter().map(|b| b.1).fold(f64::MIN, f64::max);
    let tops: Vec<&str> = best.iter().filter(|b| (b.1 - top).abs() < 1e-9).map(|b| b.0).collect();
    Ok(tops[rng.below(tops.len() as u64) as usize].to_string())
}

/// NodeResourcesFit's LeastAllocated score: the share of cpu and memory left after the pod.
fn least_allocated(node: &Value, want: &Amounts, used: &Amounts) -> f64 {
    let allocatable = node.at("/status/allocatable").and_then(Value::as_object);
    let mut score = 0.0;
    for r in ["cpu", "memory"] {
        let alloc = allocatable.and_then(|a| a.get(r)).map_or(0.0, |q| amount(r, q));
        if alloc <= 0.0 {
            continue;
        }
        let used = used.get(r).copied().unwrap_or(0.0);
        score += (alloc - used - want.get(r).copied().unwrap_or(0.0)) / alloc;
    }
    score / 2.0
}

/// Starts the scheduler on the current (single-threaded) runtime, when the document has pods
/// and nodes; `seed` draws among equally good nodes.
pub fn spawn(registry: Registry, seed: u64) {
    if let (Some(pods), Some(nodes)) = (kind_of_role(KubeRole::Pod), kind_of_role(KubeRole::Node)) {
        tokio::task::spawn_local(async move { run(registry, pods, nodes, seed).await });
    }
}

/// What the scheduler knows: the nodes, the pods, the pods waiting for a node, and what the
/// active pods on each node use (kept as pods come and go, as kube-scheduler's cache keeps
/// NodeInfo, so a placement does not add up every pod again).
#[derive(Default)]
struct Cluster {
    nodes: BTreeMap<String, Arc<Value>>,
    pods: HashMap<String, PodInfo>,
    pending: BTreeSet<String>,
    usage: HashMap<String, NodeUse>,
}

/// The active pods on a node (their keys) and the sum of their requests.
#[derive(Default)]
struct NodeUse {
    pods: BTreeSet<String>,
    used: Amounts,
}

impl Cluster {
    /// Replaces what is known of the pod at `key` (`None`: it is gone), its usage with it.
    fn set(&mut self, key: &str, info: Option<PodInfo>) {
        if let Some(old) = self.pods.remove(key) {
            if let (true, Some(node)) = (old.active, &old.node) {
                if let Some(u) = self.usage.get_mut(node) {
                    u.pods.remove(key);
                    for (r, v) in &old.requests {
                        if let Some(sum) = u.used.get_mut(r) {
                            *sum -= v;
                        }
                    }
                }
            }
        }
        if let Some(new) = info {
            if let (true, Some(node)) = (new.active, &new.node) {
                let u = self.usage.entry(node.clone()).or_default();
                u.pods.insert(key.to_string());
                add(&mut u.used, &new.requests);
            }
            self.pods.insert(key.to_string(), new);
        }
    }

    fn pod(&mut self, key: &str, pod: Option<&Value>) {
        match pod {
            Some(p) => {
                let waiting =
                    p.at("/spec/nodeName").and_then(Value::as_str).is_none_or(str::is_empty)
                        && !is_deleting(p)
                        && p.at("/spec/schedulerName").and_then(Value::as_str).unwrap_or(SCHEDULER)
                            == SCHEDULER;
                let info = PodInfo::of(p);
                if waiting && info.active {
                    self.pending.insert(key.to_string());
                } else {
                    self.pending.remove(key);
                }
                self.set(key, Some(info));
            }
            None => {
                self.set(key, None);
                self.pending.remove(key);
            }
        }
    }
}

async fn run(
    registry: Registry,
    pods: &'static ResourceInfo,
    nodes: &'static ResourceInfo,
    seed: u64,
) {
    let (pod_prefix, node_prefix) = (collection_prefix(pods, None), collection_prefix(nodes, None));
    let watched = [pod_prefix.clone(), node_prefix.clone()];
    let mut events = registry
        .store()
        .subscribe(move |ev| watched.iter().any(|p| ev.key.starts_with(p.as_str())));
    let recorder = Recorder::new(registry.clone(), MANAGER, SCHEDULER, "");
    let mut cluster = Cluster::default();
    let mut relist = true;
    loop {
        if relist {
            cluster = Cluster::default();
            match list(&registry, pods, nodes, &mut cluster).await {
                Ok(()) => {}
                Err(e) => log::warn!("scheduler: listing: {e}"),
            }
        }
        schedule(&registry, pods, &recorder, &mut cluster, seed).await;
        let Some(batch) = events.batch().await else { return };
        relist = batch.lagged;
        for ev in &batch.events {
            let gone = ev.kind == EventType::Deleted;
            if ev.key.starts_with(&node_prefix) {
                let name = split(&ev.key).map_or("", |k| k.3).to_string();
                if gone {
                    cluster.nodes.remove(&name);
                } else {
                    cluster.nodes.insert(name, ev.object.clone());
                }
                // A node that changed may fit what did not fit anywhere.
                retry_unschedulable(&mut cluster);
            } else {
                let was_placed = cluster.pods.get(&ev.key).is_some_and(|p| p.node.is_some());
                cluster.pod(&ev.key, (!gone).then_some(&*ev.object));
                if gone && was_placed {
                    retry_unschedulable(&mut cluster);
                }
            }
        }
    }
}

/// Pods that found no node are tried again after a change that may make room (kube's
/// scheduling queue moves them on cluster events).
fn retry_unschedulable(cluster: &mut Cluster) {
    let waiting: Vec<String> = cluster
        .pods
        .iter()
        .filter(|(_, p)| p.node.is_none() && p.active)
        .map(|(k, _)| k.clone())
        .collect();
    cluster.pending.extend(waiting);
}

async fn list(
    registry: &Registry,
    pods: &'static ResourceInfo,
    nodes: &'static ResourceInfo,
    cluster: &mut Cluster,
) -> Result<(), ApiError> {
    let all = ListOptions::default();
    for n in registry.list(nodes, None, &all).await?.objects()? {
        cluster.nodes.insert(meta_str(&n, "name").to_string(), n);
    }
    for p in registry.list(pods, None, &all).await?.objects()? {
        let key = object_key(pods, meta_str(&p, "namespace"), meta_str(&p, "name"));
        cluster.pod(&key, Some(&p));
    }
    Ok(())
}

/// One scheduling pass over the pending pods, oldest key first.
async fn schedule(
    registry: &Registry,
    pods: &'static ResourceInfo,
    recorder: &Recorder,
    cluster: &mut Cluster,
    seed: u64,
) {
    let pending = std::mem::take(&mut cluster.pending);
    for key in pending {
        let Some((_, _, ns, name)) = split(&key) else { continue };
        // The pod as stored now: another writer may have placed or removed it.
        let Ok(Some(pod)) = registry.store().get(&key).await else { continue };
        if pod.at("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty())
            || is_deleting(&pod)
        {
            continue;
        }
        let mut rng = Rng::derived(seed, &["schedule", &key]);
        let about = ObjectRef::to(pods, &pod);
        match place(&pod, cluster, &mut rng) {
            Ok(node) => match pre_bind_and_bind(registry, pods, &pod, &node).await {
                Ok(()) => {
                    // Counted on its node at once, before its event comes back.
                    if let Some(mut p) = cluster.pods.get(&key).cloned() {
                        p.node = Some(node.clone());
                        cluster.set(&key, Some(p));
                    }
                    let message = format!("Successfully assigned {ns}/{name} to {node}");
                    if let Err(e) =
                        recorder.record(&about, Severity::Normal, "Scheduled", &message).await
                    {
                        log::warn!("scheduler: event for {key}: {e}");
                    }
                }
                Err(e) => log::warn!("scheduler: binding {key} to {node}: {e}"),
            },
            Err(message) => {
                let same = conditions::find(&pod, "PodScheduled").is_some_and(|c| {
                    c.get("status") == Some(&json!("False"))
                        && c.get("message") == Some(&json!(message))
                });
                if same {
                    continue;
                }
                if let Err(e) = unschedulable(registry, pods, ns, name, &message).await {
                    log::warn!("scheduler: condition of {key}: {e}");
                    continue;
                }
                if let Err(e) =
                    recorder.record(&about, Severity::Warning, "FailedScheduling", &message).await
                {
                    log::warn!("scheduler: event for {key}: {e}");
                }
            }
        }
    }
}

/// kube-scheduler's `handleSchedulingFailure`: PodScheduled False, Unschedulable, the message.
async fn unschedulable(
    registry: &Registry,
    pods: &'static ResourceInfo,
    ns: &str,
    name: &str,
    message: &str,
) -> Result<(), ApiError> {
    let edit = |pod: &mut Value| {
        update_condition(pod, "PodScheduled", "False", "Unschedulable", message);
        Some(())
    };
    registry.update_with(pods, (ns, name, Part::Status), MANAGER, edit).await.map(|_| ())
}

/// The binding cycle: PreBind (VolumeBinding's), then the binding.
async fn pre_bind_and_bind(
    registry: &Registry,
    pods: &'static ResourceInfo,
    pod: &Value,
    node: &str,
) -> Result<(), ApiError> {
    select_node_for_claims(registry, pod, node).await?;
    bind(registry, pods, meta_str(pod, "namespace"), meta_str(pod, "name"), node).await
}

/// VolumeBinding's PreBind for a pod placed on `node`: each claim of its volumes that is not
/// bound, of a WaitForFirstConsumer class and with no node yet, is annotated with `node`
/// (binder.go bindAPIUpdate: a claim update as the scheduler).
async fn select_node_for_claims(
    registry: &Registry,
    pod: &Value,
    node: &str,
) -> Result<(), ApiError> {
    let (Some(claims), Some(classes)) =
        (kind_of_role(KubeRole::Claim), kind_of_role(KubeRole::StorageClass))
    else {
        return Ok(());
    };
    let ns = meta_str(pod, "namespace");
    let volumes = pod.at("/spec/volumes").and_then(Value::as_array);
    let names = volumes
        .into_iter()
        .flatten()
        .filter_map(|v| v.at("/persistentVolumeClaim/claimName").and_then(Value::as_str));
    for claim_name in names {
        let key = object_key(claims, ns, claim_name);
        let Ok(Some(claim)) = registry.store().get(&key).await else { continue };
        let unbound =
            claim.at("/spec/volumeName").and_then(Value::as_str).is_none_or(str::is_empty);
        let selected = claim.at("/metadata/annotations").and_then(|a| a.get(SELECTED_NODE));
        if !unbound || selected.is_some() || is_deleting(&claim) {
            continue;
        }
        let class_name = claim.at("/spec/storageClassName").and_then(Value::as_str);
        let Some(class_name) = class_name.filter(|c| !c.is_empty()) else { continue };
        let Ok(Some(class)) = registry.store().get(&object_key(classes, "", class_name)).await
        else {
            continue;
        };
        if class.get("volumeBindingMode").and_then(Value::as_str) != Some("WaitForFirstConsumer") {
            continue;
        }
        let edit = |c: &mut Value| -> Option<()> {
            let meta = c.get_mut("metadata")?.as_object_mut()?;
            let ann = meta.entry("annotations").or_insert_with(|| json!({})).as_object_mut()?;
            if ann.contains_key(SELECTED_NODE) {
                return None;
            }
            ann.insert(SELECTED_NODE.to_string(), json!(node));
            Some(())
        };
        registry.update_with(claims, (ns, claim_name, Part::Main), MANAGER, edit).await?;
    }
    Ok(())
}

/// The binding kube-scheduler posts (`pods/binding`: the node and PodScheduled True, one write).
async fn bind(
    registry: &Registry,
    pods: &'static ResourceInfo,
    ns: &str,
    name: &str,
    node: &str,
) -> Result<(), ApiError> {
    // What kube-scheduler posts: the pod's name and its node (the document's node kind).
    let node_kind = kind_of_role(KubeRole::Node).map_or("", |r| r.kind);
    let binding = json!({"metadata": {"name": name, "namespace": ns},
                         "target": {"kind": node_kind, "name": node}});
    let target = Target::new(Some(ns.to_string()), Some(name.to_string()));
    registry.bind(pods, &target, &binding, false).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, cpu: &str, memory: &str, labels: Value) -> Arc<Value> {
        Arc::new(json!({"metadata": {"name": name, "labels": labels},
                        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110",
                                                   "devices.kubevirt.io/kvm": "1k"}}}))
    }

    fn pod(memory: &str, extra: Value) -> Value {
        let mut p = json!({"metadata": {"name": "p", "namespace": "ns", "labels": {"app": "x"}},
                           "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": memory},
                                                                              "limits": {"devices.kubevirt.io/kvm": "1"}}}]}});
        if let (Some(spec), Some(extra)) = (p["spec"].as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        p
    }

    fn nodes(list: Vec<Arc<Value>>) -> BTreeMap<String, Arc<Value>> {
        list.into_iter().map(|n| (meta_str(&n, "name").to_string(), n)).collect()
    }

    fn cluster(nodes: &BTreeMap<String, Arc<Value>>, placed: Vec<(&str, PodInfo)>) -> Cluster {
        let mut c = Cluster { nodes: nodes.clone(), ..Cluster::default() };
        for (key, info) in placed {
            c.set(key, Some(info));
        }
        c
    }

    fn on(node: &str, memory: f64, active: bool) -> PodInfo {
        PodInfo {
            namespace: "ns".into(),
            node: Some(node.into()),
            requests: Amounts::from([("memory".to_string(), memory)]),
            labels: json!({"app": "x"}).as_object().unwrap().clone(),
            active,
        }
    }

    #[test]
    fn requests_count_sidecars_init_floors_and_limits_without_requests() {
        let p = json!({"spec": {
            "initContainers": [
                {"name": "log", "restartPolicy": "Always", "resources": {"requests": {"memory": "35M", "cpu": "5m"}}},
                {"name": "init", "resources": {"requests": {"memory": "1Gi", "cpu": "10m"}}}],
            "containers": [{"name": "c", "resources": {"requests": {"memory": "405760Ki", "cpu": "100m"},
                                                      "limits": {"devices.kubevirt.io/kvm": "1"}}}]}});
        let r = requests(&p);
        assert_eq!(r["cpu"], 105.0);
        // The init container with the sidecar beside it needs more than the rest.
        assert_eq!(r["memory"], 1024.0 * 1024.0 * 1024.0 + 35e6);
        assert_eq!(r["devices.kubevirt.io/kvm"], 1.0);
    }

    #[test]
    fn a_pod_goes_to_the_least_allocated_node_that_fits() {
        let ns = nodes(vec![node("a", "2", "1Gi", json!({})), node("b", "8", "32Gi", json!({}))]);
        let mut rng = Rng::new(1);
        assert_eq!(
            place(&pod("512Mi", json!({})), &cluster(&ns, vec![]), &mut rng),
            Ok("b".to_string())
        );
    }

    #[test]
    fn a_pod_that_fits_nowhere_reads_as_kube_schedulers_fit_error() {
        let ns = nodes(vec![
            node("a", "2", "1Gi", json!({})),
            node("b", "2", "1Gi", json!({})),
            node("c", "2", "1Gi", json!({})),
        ]);
        let mut rng = Rng::new(1);
        let got = place(&pod("2Gi", json!({})), &cluster(&ns, vec![]), &mut rng);
        assert_eq!(
            got,
            Err("0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod..".into())
        );
        // A selector no node has: not something preemption helps.
        let picky = pod("1Mi", json!({"nodeSelector": {"disk": "ssd"}}));
        let got = place(&picky, &cluster(&ns, vec![]), &mut rng);
        assert_eq!(
            got,
            Err("0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling..".into())
        );
        assert_eq!(place(&picky, &Cluster::default(), &mut rng), Err(NO_NODES.into()));
    }

    #[test]
    fn cordons_taints_and_anti_affinity_keep_pods_off_nodes() {
        let mut cordoned =
            (*node("a", "8", "32Gi", json!({"kubernetes.io/hostname": "a"}))).clone();
        cordoned["spec"] = json!({"unschedulable": true});
        let mut tainted = (*node("b", "8", "32Gi", json!({"kubernetes.io/hostname": "b"}))).clone();
        tainted["spec"] =
            json!({"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]});
        let free = node("c", "8", "32Gi", json!({"kubernetes.io/hostname": "c"}));
        let ns = nodes(vec![Arc::new(cordoned), Arc::new(tainted), free]);
        let mut rng = Rng::new(1);
        assert_eq!(
            place(&pod("1Mi", json!({})), &cluster(&ns, vec![]), &mut rng),
            Ok("c".to_string())
        );
        // On c already: a pod that must not share its host with it fits nowhere.
        let placed = cluster(&ns, vec![("k", on("c", 0.0, true))]);
        let anti = pod(
            "1Mi",
            json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}}),
        );
        assert_eq!(
            place(&anti, &placed, &mut rng),
            Err("0/3 nodes are available: 1 node(s) didn't match pod anti-affinity rules, 1 node(s) had untolerated taint {dedicated: gpu}, 1 node(s) were unschedulable. preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling..".into())
        );
        // Tolerated, the taint is no obstacle.
        let tolerant = pod(
            "1Mi",
            json!({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
            "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "x"}}, "topologyKey": "kubernetes.io/hostname"}]}}}),
        );
        assert_eq!(place(&tolerant, &placed, &mut rng), Ok("b".to_string()));
    }

    #[test]
    fn a_nodes_usage_follows_its_pods_as_they_come_finish_and_go() {
        let ns = nodes(vec![node("a", "8", "1Gi", json!({}))]);
        let mut c = cluster(&ns, vec![("big", on("a", 768.0 * 1024.0 * 1024.0, true))]);
        let mut rng = Rng::new(1);
        let small = pod("512Mi", json!({}));
        assert!(place(&small, &c, &mut rng).is_err());
        // Finished, it no longer counts; running again, it does; gone, never.
        c.set("big", Some(on("a", 768.0 * 1024.0 * 1024.0, false)));
        assert_eq!(place(&small, &c, &mut rng), Ok("a".to_string()));
        c.set("big", Some(on("a", 768.0 * 1024.0 * 1024.0, true)));
        assert!(place(&small, &c, &mut rng).is_err());
        c.set("big", None);
        assert_eq!(place(&small, &c, &mut rng), Ok("a".to_string()));
        assert!(c.usage["a"].pods.is_empty() && c.usage["a"].used["memory"] == 0.0);
    }
}
