//! kube-controller-manager's endpoints and endpoint-slice controllers: for every object of the
//! kind whose `kubeRole` is `service` with a selector, the addresses of the `pod` objects
//! it selects, written as an `endpoints` object of the service's name (K8S
//! pkg/controller/endpoint/endpoints_controller.go syncService) and as `endpointSlices` the
//! service controls (K8S staging/src/k8s.io/endpointslice/reconciler.go, utils.go). A service
//! over a VM's labels thus lists its VMI's address, as in a cluster.
//!
//! Level-triggered, as kube's: a change of a service, a pod, a node, or of what the
//! controllers wrote marks services dirty; a pass computes each one's objects from the current
//! state and writes only what differs. It keeps no state beyond the dirty set.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

use crate::generated::kind_of_role;
use crate::object::conditions;
use crate::object::error::ApiError;
use crate::object::meta::{controller_ref, is_deleting, now_rfc3339};
use crate::object::meta_str;
use crate::object::subresource::Part;
use crate::object::validation::{FieldValidation, Via};
use crate::object::At;
use crate::registry::keys::{collection_prefix, split};
use crate::registry::{DeleteOptions, ListOptions, Registry, Target, WriteOptions};
use crate::resource::{KubeRole, ResourceInfo};

/// The field manager of both controllers' writes, as kube-controller-manager's.
const MANAGER: &str = "kube-controller-manager";
/// discovery.k8s.io's labels and the controller's name (K8S api/discovery/v1 well_known_labels.go,
/// pkg/controller/endpointslice/endpointslice_controller.go ControllerName).
const SERVICE_NAME: &str = "kubernetes.io/service-name";
const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
const CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";
/// core/v1's well-known names (K8S staging/src/k8s.io/api/core/v1/well_known_labels.go,
/// annotation_key_constants.go).
const HEADLESS: &str = "service.kubernetes.io/headless";
const TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";
const ZONE: &str = "topology.kubernetes.io/zone";
/// `maxEndpointsPerSlice`'s default (kube-controller-manager --max-endpoints-per-slice).
const MAX_PER_SLICE: usize = 100;

/// The kinds the controllers read and write.
#[derive(Clone, Copy)]
struct Kinds {
    service: &'static ResourceInfo,
    pod: &'static ResourceInfo,
    endpoints: &'static ResourceInfo,
    slices: &'static ResourceInfo,
    node: Option<&'static ResourceInfo>,
}

fn kinds() -> Option<Kinds> {
    let find = kind_of_role;
    Some(Kinds {
        service: find(KubeRole::Service)?,
        pod: find(KubeRole::Pod)?,
        endpoints: find(KubeRole::Endpoints)?,
        slices: find(KubeRole::EndpointSlices)?,
        node: find(KubeRole::Node),
    })
}

/// Starts both controllers on the current (single-threaded) runtime, when the document has
/// the kinds.
pub fn spawn(registry: Registry) {
    if let Some(kinds) = kinds() {
        tokio::task::spawn_local(async move { run(registry, kinds).await });
    }
}

async fn run(registry: Registry, kinds: Kinds) {
    let prefixes: Vec<String> = [Some(kinds.service), Some(kinds.pod), Some(kinds.endpoints)]
        .into_iter()
        .chain([Some(kinds.slices), kinds.node])
        .flatten()
        .map(|r| collection_prefix(r, None))
        .collect();
    let watched = prefixes.clone();
    let mut events = registry
        .store()
        .subscribe(move |ev| watched.iter().any(|p| ev.key.starts_with(p.as_str())));
    let mut dirty = Dirty::All;
    loop {
        if let Err(e) = pass(&registry, kinds, std::mem::take(&mut dirty)).await {
            log::warn!("endpoints controller pass failed: {e}");
        }
        let Some(batch) = events.batch().await else { return };
        for ev in &batch.events {
            dirty.mark(kinds, &ev.key, &ev.object);
        }
        if batch.lagged {
            dirty = Dirty::All;
        }
    }
}

/// The services a pass syncs.
#[derive(Default)]
enum Dirty {
    #[default]
    None,
    /// Every service, and every namespace's endpoints of a service that is gone.
    All,
    /// Services by namespace and name, and namespaces whose every service is dirty.
    Some { services: BTreeSet<(String, String)>, namespaces: BTreeSet<String> },
}

impl Dirty {
    fn mark(&mut self, kinds: Kinds, key: &str, obj: &Value) {
        let Some((group, plural, ns, name)) = split(key) else { return };
        let is = |r: &ResourceInfo| r.group == group && r.plural == plural;
        if kinds.node.is_some_and(is) {
            // A node's existence and zone are read for every slice.
            *self = Dirty::All;
            return;
        }
        let Dirty::Some { services, namespaces } = self else {
            if matches!(self, Dirty::All) {
                return;
            }
            *self = Dirty::Some { services: BTreeSet::new(), namespaces: BTreeSet::new() };
            return self.mark(kinds, key, obj);
        };
        if is(kinds.service) || is(kinds.endpoints) {
            services.insert((ns.to_string(), name.to_string()));
        } else if is(kinds.slices) {
            let svc = obj.at(&format!("/metadata/labels/{}", SERVICE_NAME.replace('/', "~1")));
            if let Some(svc) = svc.and_then(Value::as_str) {
                services.insert((ns.to_string(), svc.to_string()));
            }
        } else if is(kinds.pod) {
            namespaces.insert(ns.to_string());
        }
    }
}

/// Syncs the dirty services.
async fn pass(registry: &Registry, kinds: Kinds, dirty: Dirty) -> Result<(), ApiError> {
    let mut todo: BTreeSet<(String, String)> = BTreeSet::new();
    let all = ListOptions::default();
    match dirty {
        Dirty::None => return Ok(()),
        Dirty::All => {
            for svc in registry.list(kinds.service, None, &all).await?.objects()? {
                todo.insert((meta_str(&svc, "namespace").into(), meta_str(&svc, "name").into()));
            }
            // Endpoints whose service is gone (deleted while no pass ran).
            for ep in registry.list(kinds.endpoints, None, &all).await?.objects()? {
                if managed_endpoints(&ep) {
                    todo.insert((meta_str(&ep, "namespace").into(), meta_str(&ep, "name").into()));
                }
            }
        }
        Dirty::Some { services, namespaces } => {
            todo = services;
            for ns in namespaces {
                for svc in registry.list(kinds.service, Some(&ns), &all).await?.objects()? {
                    todo.insert((ns.clone(), meta_str(&svc, "name").into()));
                }
            }
        }
    }
    // Nodes are read for the slices of a service with a selector, once a pass: a pod's change
    // in a namespace whose only service has none (`default/kubernetes`) reads nothing more.
    let mut zones = None;
    for (ns, name) in todo {
        if let Err(e) = sync(registry, kinds, &mut zones, &ns, &name).await {
            log::warn!("endpoints controller: service {ns}/{name}: {e}");
        }
    }
    Ok(())
}

/// Endpoints the controller keeps: those of a service it syncs. kube deletes an Endpoints
/// object when its service goes (`syncService` on a missing service); one a client made for a
/// service that never existed is the client's. The label kube 1.33 adds to tell them apart
/// does not exist in 1.32 (kubernetes PR #130564): the trigger-time annotation does.
fn managed_endpoints(ep: &Value) -> bool {
    ep.at("/metadata/annotations").and_then(|a| a.get(TRIGGER_TIME)).is_some()
}

async fn sync(
    registry: &Registry,
    kinds: Kinds,
    zones: &mut Option<Zones>,
    ns: &str,
    name: &str,
) -> Result<(), ApiError> {
    let service = match registry.get(kinds.service, ns, name).await {
        Ok(s) => s,
        Err(ApiError::NotFound { .. }) => {
            // The slices go with their owner (the garbage collector); the endpoints are deleted.
            if let Ok(ep) = registry.get(kinds.endpoints, ns, name).await {
                if managed_endpoints(&ep) {
                    match registry
                        .delete(kinds.endpoints, ns, name, &DeleteOptions::default())
                        .await
                    {
                        Ok(_) | Err(ApiError::NotFound { .. }) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let selector = service.at("/spec/selector").and_then(Value::as_object);
    // A service without a selector has the endpoints its owner writes; an ExternalName
    // service has none (endpoints_controller.go, reconciler.go).
    let external = service.at("/spec/type").and_then(Value::as_str) == Some("ExternalName");
    let Some(selector) = selector.filter(|s| !s.is_empty() && !external) else { return Ok(()) };
    let pods = registry.list(kinds.pod, Some(ns), &ListOptions::default()).await?.objects()?;
    let selected: Vec<&Value> = pods
        .iter()
        .map(|p| &**p)
        .filter(|p| {
            let labels = p.at("/metadata/labels").and_then(Value::as_object);
            selector.iter().all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
        })
        .collect();
    let trigger = trigger_time(&service, &selected);
    write_endpoints(registry, kinds, &service, &selected, &trigger).await?;
    let zones = match zones {
        Some(zones) => zones,
        None => zones.insert(node_zones(registry, kinds).await?),
    };
    write_slices(registry, kinds, &service, &selected, zones, &trigger).await
}

/// Each node's zone label (none: its slices' endpoints carry no zone).
type Zones = BTreeMap<String, Option<String>>;

async fn node_zones(registry: &Registry, kinds: Kinds) -> Result<Zones, ApiError> {
    let Some(node) = kinds.node else { return Ok(Zones::new()) };
    let nodes = registry.list(node, None, &ListOptions::default()).await?.objects()?;
    Ok(nodes
        .iter()
        .map(|n| {
            let zone = n.at("/metadata/labels").and_then(|l| l.get(ZONE)).and_then(Value::as_str);
            (meta_str(n, "name").to_string(), zone.map(str::to_string))
        })
        .collect())
}

/// `endpoints.kubernetes.io/last-change-trigger-time` (K8S pkg/controller/util/endpoint
/// trigger_time_tracker.go): the latest change among the service and its pods, a pod's being
/// its Ready condition's transition (else its creation).
fn trigger_time(service: &Value, pods: &[&Value]) -> String {
    let mut latest = meta_str(service, "creationTimestamp").to_string();
    for pod in pods {
        let ready = conditions::find(pod, "Ready").and_then(|c| c.get("lastTransitionTime"));
        let t = ready.and_then(Value::as_str).unwrap_or(meta_str(pod, "creationTimestamp"));
        if t > latest.as_str() {
            latest = t.to_string();
        }
    }
    if latest.is_empty() {
        now_rfc3339()
    } else {
        latest
    }
}

/// `podutil.IsPodReady`.
fn is_ready(pod: &Value) -> bool {
    conditions::find(pod, "Ready").and_then(|c| c.get("status")) == Some(&json!("True"))
}

/// `endpointutil.ShouldPodBeInEndpoints` (K8S pkg/controller/util/endpoint/controller_utils.go):
/// an address, not being deleted unless `include_terminating`, and not finished for its
/// restart policy.
fn in_endpoints(pod: &Value, include_terminating: bool) -> bool {
    let ip = pod.at("/status/podIP").and_then(Value::as_str).unwrap_or("");
    let ips = pod.at("/status/podIPs").and_then(Value::as_array).is_some_and(|a| !a.is_empty());
    if ip.is_empty() && !ips {
        return false;
    }
    if !include_terminating && is_deleting(pod) {
        return false;
    }
    let phase = pod.at("/status/phase").and_then(Value::as_str).unwrap_or("");
    match pod.at("/spec/restartPolicy").and_then(Value::as_str) {
        Some("Never") => phase != "Failed" && phase != "Succeeded",
        Some("OnFailure") => phase != "Succeeded",
        _ => true,
    }
}

fn pod_ip(pod: &Value) -> String {
    let ip = pod.at("/status/podIP").and_then(Value::as_str).unwrap_or("");
    if !ip.is_empty() {
        return ip.to_string();
    }
    let first = pod.at("/status/podIPs/0/ip").and_then(Value::as_str);
    first.unwrap_or("").to_string()
}

/// `podutil.FindPort`: a service port's target on the pod, by number or by the name of a
/// container port of the same protocol.
fn find_port(pod: &Value, port: &Value) -> Option<i64> {
    let target = port.get("targetPort").or_else(|| port.get("port"))?;
    if let Some(n) = target.as_i64() {
        return Some(n);
    }
    let name = target.as_str()?;
    let protocol = port.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
    let containers = pod.at("/spec/containers").and_then(Value::as_array)?;
    containers
        .iter()
        .flat_map(|c| c.get("ports").and_then(Value::as_array).into_iter().flatten())
        .find(|p| {
            p.get("name").and_then(Value::as_str) == Some(name)
                && p.get("protocol").and_then(Value::as_str).unwrap_or("TCP") == protocol
        })
        .and_then(|p| p.get("containerPort")?.as_i64())
}

/// The service's ports as the pod resolves them (`None` for a port it cannot resolve: kube
/// leaves that pod out of that port's subset; a pod resolving none of them is left out).
fn ports_of(service: &Value, pod: &Value, slice_form: bool) -> Vec<Value> {
    let ports = service.at("/spec/ports").and_then(Value::as_array);
    let mut out = Vec::new();
    for port in ports.into_iter().flatten() {
        let Some(n) = find_port(pod, port) else { continue };
        let name = port.get("name").and_then(Value::as_str).unwrap_or("");
        let protocol = port.get("protocol").cloned().unwrap_or(json!("TCP"));
        let mut p = Map::new();
        // An EndpointPort's name is "" when unnamed in a slice (a pointer), omitted in Endpoints.
        if slice_form || !name.is_empty() {
            p.insert("name".into(), json!(name));
        }
        p.insert("port".into(), json!(n));
        p.insert("protocol".into(), protocol);
        if let Some(app) = port.get("appProtocol") {
            p.insert("appProtocol".into(), app.clone());
        }
        out.push(Value::Object(p));
    }
    out
}

/// An ObjectReference to the pod, of the kind the stored object says it is.
fn target_ref(pod: &Value) -> Value {
    json!({"kind": pod.get("kind").cloned().unwrap_or(Value::Null), "namespace": meta_str(pod, "namespace"), "name": meta_str(pod, "name"),
           "uid": meta_str(pod, "uid")})
}

/// `ShouldSetHostname`: the pod's hostname, when its subdomain names the service.
fn hostname(pod: &Value, service: &Value) -> Option<String> {
    let host = pod.at("/spec/hostname").and_then(Value::as_str).filter(|h| !h.is_empty())?;
    let sub = pod.at("/spec/subdomain").and_then(Value::as_str);
    (sub == Some(meta_str(service, "name"))
        && meta_str(pod, "namespace") == meta_str(service, "namespace"))
    .then(|| host.to_string())
}

fn is_headless(service: &Value) -> bool {
    service.at("/spec/clusterIP").and_then(Value::as_str) == Some("None")
}

fn service_labels(service: &Value) -> Map<String, Value> {
    service.at("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default()
}

/// The Endpoints object's subsets (endpoints_controller.go syncService, then
/// `endpoints.RepackSubsets`: addresses grouped by identical ports, each group's addresses
/// ordered by IP then target uid as `LessEndpointAddress` orders them).
fn subsets(service: &Value, pods: &[&Value]) -> Vec<Value> {
    let tolerate = service.at("/spec/publishNotReadyAddresses") == Some(&json!(true));
    let no_ports = service.at("/spec/ports").and_then(Value::as_array).is_none_or(|p| p.is_empty());
    // (ports, ready addresses, not-ready addresses), in the order port sets first appear.
    let mut groups: Vec<(Vec<Value>, Vec<Value>, Vec<Value>)> = Vec::new();
    for pod in pods.iter().filter(|p| in_endpoints(p, tolerate)) {
        let mut addr = Map::new();
        addr.insert("ip".into(), json!(pod_ip(pod)));
        if let Some(h) = hostname(pod, service) {
            addr.insert("hostname".into(), json!(h));
        }
        if let Some(node) =
            pod.at("/spec/nodeName").filter(|n| n.as_str().is_some_and(|n| !n.is_empty()))
        {
            addr.insert("nodeName".into(), node.clone());
        }
        addr.insert("targetRef".into(), target_ref(pod));
        let ports = ports_of(service, pod, false);
        if ports.is_empty() && !(no_ports && is_headless(service)) {
            continue;
        }
        let ready = tolerate || is_ready(pod);
        let group = match groups.iter_mut().find(|g| g.0 == ports) {
            Some(g) => g,
            None => {
                groups.push((ports, Vec::new(), Vec::new()));
                groups.last_mut().expect("just pushed")
            }
        };
        if ready {
            group.1.push(Value::Object(addr));
        } else {
            group.2.push(Value::Object(addr));
        }
    }
    let order = |a: &Value, b: &Value| {
        let key = |v: &Value| {
            (
                v["ip"].as_str().unwrap_or("").to_string(),
                v["targetRef"]["uid"].as_str().unwrap_or("").to_string(),
            )
        };
        key(a).cmp(&key(b))
    };
    groups
        .into_iter()
        .map(|(ports, mut ready, mut not_ready)| {
            ready.sort_by(order);
            not_ready.sort_by(order);
            let mut s = Map::new();
            if !ready.is_empty() {
                s.insert("addresses".into(), Value::Array(ready));
            }
            if !not_ready.is_empty() {
                s.insert("notReadyAddresses".into(), Value::Array(not_ready));
            }
            if !ports.is_empty() {
                s.insert("ports".into(), Value::Array(ports));
            }
            Value::Object(s)
        })
        .collect()
}

async fn write_endpoints(
    registry: &Registry,
    kinds: Kinds,
    service: &Value,
    pods: &[&Value],
    trigger: &str,
) -> Result<(), ApiError> {
    let (ns, name) = (meta_str(service, "namespace"), meta_str(service, "name"));
    let subsets = subsets(service, pods);
    let mut labels = service_labels(service);
    // `IsServiceIPSet`: an address that is neither "" nor None.
    let ip = service.at("/spec/clusterIP").and_then(Value::as_str).unwrap_or("");
    if ip.is_empty() || ip == "None" {
        labels.insert(HEADLESS.into(), json!(""));
    } else {
        labels.remove(HEADLESS);
    }
    let labels = Value::Object(labels);
    let edit = |ep: &mut Value| -> Option<()> {
        let same_subsets = ep.get("subsets").cloned().unwrap_or(json!([])) == json!(subsets);
        let same_labels = ep.at("/metadata/labels").cloned().unwrap_or(json!({})) == labels;
        if same_subsets && same_labels && managed_endpoints(ep) {
            return None;
        }
        let obj = ep.as_object_mut()?;
        if subsets.is_empty() {
            obj.remove("subsets");
        } else {
            obj.insert("subsets".into(), json!(subsets));
        }
        let meta = obj.get_mut("metadata")?.as_object_mut()?;
        meta.insert("labels".into(), labels.clone());
        let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
        annotations.as_object_mut()?.insert(TRIGGER_TIME.into(), json!(trigger));
        Some(())
    };
    match registry.update_with(kinds.endpoints, (ns, name, Part::Main), MANAGER, edit).await {
        Ok(_) => Ok(()),
        Err(ApiError::NotFound { .. }) => {
            let mut obj = json!({
                "apiVersion": kinds.endpoints.api_version(), "kind": kinds.endpoints.kind,
                "metadata": {"name": name, "namespace": ns, "labels": labels,
                             "annotations": {TRIGGER_TIME: trigger}},
            });
            if !subsets.is_empty() {
                obj["subsets"] = json!(subsets);
            }
            create(registry, kinds.endpoints, ns, obj).await
        }
        Err(e) => Err(e),
    }
}

async fn create(
    registry: &Registry,
    res: &'static ResourceInfo,
    ns: &str,
    obj: Value,
) -> Result<(), ApiError> {
    let opts = WriteOptions {
        dry_run: false,
        field_validation: FieldValidation::Strict,
        manager: MANAGER.to_string(),
    };
    let target = Target::new(Some(ns.to_string()), None);
    match registry.create(res, &target, obj, Via::Body(&[]), &opts).await {
        Ok(_) | Err(ApiError::AlreadyExists { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// A slice's ports and endpoints.
type SliceContent = (Vec<Value>, Vec<Value>);

/// The slices' desired content: per set of ports, its endpoints, at most `MAX_PER_SLICE` a
/// slice (reconciler.go reconcileByAddressType; utils.go podToEndpoint). Only IPv4.
fn desired_slices(
    service: &Value,
    pods: &[&Value],
    zones: &BTreeMap<String, Option<String>>,
) -> Vec<SliceContent> {
    let publish = service.at("/spec/publishNotReadyAddresses") == Some(&json!(true));
    let mut groups: Vec<SliceContent> = Vec::new();
    for pod in pods.iter().filter(|p| in_endpoints(p, true)) {
        // A pod whose node does not exist is left out until it does (reconciler.go).
        let node = pod.at("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
        let Some(zone) = zones.get(node) else { continue };
        let serving = is_ready(pod);
        let terminating = is_deleting(pod);
        let ready = publish || (serving && !terminating);
        let mut ep = Map::new();
        ep.insert("addresses".into(), json!([pod_ip(pod)]));
        ep.insert(
            "conditions".into(),
            json!({"ready": ready, "serving": serving, "terminating": terminating}),
        );
        if let Some(h) = hostname(pod, service) {
            ep.insert("hostname".into(), json!(h));
        }
        ep.insert("targetRef".into(), target_ref(pod));
        ep.insert("nodeName".into(), json!(node));
        if let Some(zone) = zone {
            ep.insert("zone".into(), json!(zone));
        }
        let ports = ports_of(service, pod, true);
        match groups.iter_mut().find(|g| g.0 == ports) {
            Some(g) => g.1.push(Value::Object(ep)),
            None => groups.push((ports, vec![Value::Object(ep)])),
        }
    }
    let mut out = Vec::new();
    for (ports, mut endpoints) in groups {
        endpoints.sort_by(|a, b| a["addresses"][0].as_str().cmp(&b["addresses"][0].as_str()));
        for chunk in endpoints.chunks(MAX_PER_SLICE) {
            out.push((ports.clone(), chunk.to_vec()));
        }
    }
    out
}

async fn write_slices(
    registry: &Registry,
    kinds: Kinds,
    service: &Value,
    pods: &[&Value],
    zones: &BTreeMap<String, Option<String>>,
    trigger: &str,
) -> Result<(), ApiError> {
    let (ns, name, uid) =
        (meta_str(service, "namespace"), meta_str(service, "name"), meta_str(service, "uid"));
    let mut desired = desired_slices(service, pods, zones);
    // No endpoints: one placeholder slice. kube's has `endpoints: null` (the controller's
    // empty list does not survive protobuf, kubernetes #135968), which the Python client
    // refuses (kubernetes-client/python #2214); an empty list reads the same to every client.
    if desired.is_empty() {
        desired.push((Vec::new(), Vec::new()));
    }
    let mut labels = service_labels(service);
    labels.remove(SERVICE_NAME);
    labels.remove(MANAGED_BY);
    labels.insert(SERVICE_NAME.into(), json!(name));
    labels.insert(MANAGED_BY.into(), json!(CONTROLLER_NAME));
    if is_headless(service) {
        labels.insert(HEADLESS.into(), json!(""));
    }
    let labels = Value::Object(labels);
    let existing =
        registry.list(kinds.slices, Some(ns), &ListOptions::default()).await?.objects()?;
    let mut existing: Vec<&Value> = existing
        .iter()
        .map(|s| &**s)
        .filter(|s| {
            let owner = controller_ref(s).and_then(|r| r.get("uid")?.as_str());
            let ours = s.at("/metadata/labels").and_then(|l| l.get(MANAGED_BY))
                == Some(&json!(CONTROLLER_NAME));
            owner == Some(uid) && ours
        })
        .collect();
    existing.sort_by_key(|s| meta_str(s, "name").to_string());
    let mut unused: Vec<&Value> = Vec::new();
    let mut matched: Vec<(Option<&Value>, SliceContent)> = Vec::new();
    // A slice keeps its name while its ports stay: matched by ports first, in name order.
    let mut pool = existing.clone();
    for want in desired {
        let ports = if want.0.is_empty() { Value::Null } else { json!(want.0) };
        let at = pool.iter().position(|s| s.get("ports").cloned().unwrap_or(Value::Null) == ports);
        let slot = at.map(|i| pool.remove(i));
        matched.push((slot, want));
    }
    unused.extend(pool);
    for (slot, (ports, endpoints)) in matched {
        let endpoints = Value::Array(endpoints);
        let ports = if ports.is_empty() { None } else { Some(Value::Array(ports)) };
        match slot {
            Some(slice) => {
                let same = slice.get("endpoints").cloned().unwrap_or(json!([])) == endpoints
                    && slice.get("ports").cloned() == ports
                    && slice.at("/metadata/labels") == Some(&labels);
                if same {
                    continue;
                }
                let edit = |s: &mut Value| -> Option<()> {
                    let obj = s.as_object_mut()?;
                    obj.insert("endpoints".into(), endpoints.clone());
                    match &ports {
                        Some(p) => obj.insert("ports".into(), p.clone()),
                        None => obj.remove("ports"),
                    };
                    let meta = obj.get_mut("metadata")?.as_object_mut()?;
                    meta.insert("labels".into(), labels.clone());
                    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
                    annotations.as_object_mut()?.insert(TRIGGER_TIME.into(), json!(trigger));
                    Some(())
                };
                let target = (ns, meta_str(slice, "name"), Part::Main);
                match registry.update_with(kinds.slices, target, MANAGER, edit).await {
                    Ok(_) | Err(ApiError::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            None => {
                let owner = json!({"apiVersion": kinds.service.api_version(), "kind": kinds.service.kind,
                    "name": name, "uid": uid, "controller": true, "blockOwnerDeletion": true});
                let mut obj = json!({
                    "apiVersion": kinds.slices.api_version(), "kind": kinds.slices.kind,
                    "metadata": {"generateName": slice_prefix(name), "namespace": ns, "labels": labels,
                                 "annotations": {TRIGGER_TIME: trigger}, "ownerReferences": [owner]},
                    "addressType": "IPv4",
                    "endpoints": endpoints,
                });
                if let Some(p) = ports {
                    obj["ports"] = p;
                }
                create(registry, kinds.slices, ns, obj).await?;
            }
        }
    }
    for slice in unused {
        let name = meta_str(slice, "name");
        match registry.delete(kinds.slices, ns, name, &DeleteOptions::default()).await {
            Ok(_) | Err(ApiError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// `getEndpointSlicePrefix`: the service's name and a dash, cut so a generated name fits.
fn slice_prefix(service: &str) -> String {
    let mut prefix = format!("{service}-");
    // names.SimpleNameGenerator keeps 58 characters of the base (63 minus its 5).
    if prefix.len() > 58 {
        prefix.truncate(58);
    }
    prefix
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ip: &str, ready: bool, labels: Value) -> Value {
        json!({"kind": "Pod",
               "metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}"), "labels": labels},
               "spec": {"nodeName": "n1", "restartPolicy": "Never",
                        "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
               "status": {"phase": "Running", "podIP": ip,
                          "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
    }

    fn service(ports: Value) -> Value {
        json!({"metadata": {"name": "web", "namespace": "ns", "uid": "s1"},
               "spec": {"selector": {"app": "a"}, "clusterIP": "10.96.0.10", "ports": ports}})
    }

    #[test]
    fn subsets_group_ready_and_not_ready_addresses_by_their_ports_in_address_order() {
        let svc = service(json!([{"port": 80, "targetPort": "http", "protocol": "TCP"}]));
        let (a, b, c) = (
            pod("a", "10.244.0.9", true, json!({})),
            pod("b", "10.244.0.10", true, json!({})),
            pod("c", "10.244.0.11", false, json!({})),
        );
        let got = subsets(&svc, &[&a, &b, &c]);
        assert_eq!(got.len(), 1);
        // LessEndpointAddress compares the IPs' text.
        let ips: Vec<&str> = got[0]["addresses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["ip"].as_str().unwrap())
            .collect();
        assert_eq!(ips, ["10.244.0.10", "10.244.0.9"]);
        assert_eq!(got[0]["notReadyAddresses"][0]["ip"], "10.244.0.11");
        assert_eq!(got[0]["ports"], json!([{"port": 8080, "protocol": "TCP"}]));
        assert_eq!(got[0]["addresses"][0]["targetRef"]["kind"], "Pod");
        assert_eq!(got[0]["addresses"][0]["nodeName"], "n1");
    }

    #[test]
    fn finished_pods_and_pods_without_addresses_are_left_out() {
        let svc = service(json!([{"port": 80, "protocol": "TCP"}]));
        let mut done = pod("d", "10.244.0.5", false, json!({}));
        done["status"]["phase"] = json!("Succeeded");
        let mut pending = pod("p", "", false, json!({}));
        pending["status"].as_object_mut().unwrap().remove("podIP");
        assert!(subsets(&svc, &[&done, &pending]).is_empty());
        // Without a targetPort, the port itself.
        let live = pod("l", "10.244.0.6", true, json!({}));
        assert_eq!(subsets(&svc, &[&live])[0]["ports"][0]["port"], 80);
    }

    #[test]
    fn slices_carry_conditions_and_leave_out_pods_on_unknown_nodes() {
        let svc =
            service(json!([{"name": "web", "port": 80, "targetPort": 8080, "protocol": "TCP"}]));
        let ready = pod("r", "10.244.0.2", true, json!({}));
        let mut elsewhere = pod("e", "10.244.0.3", true, json!({}));
        elsewhere["spec"]["nodeName"] = json!("gone");
        let zones = BTreeMap::from([("n1".to_string(), Some("z1".to_string()))]);
        let slices = desired_slices(&svc, &[&ready, &elsewhere], &zones);
        assert_eq!(slices.len(), 1);
        let (ports, endpoints) = &slices[0];
        assert_eq!(ports, &vec![json!({"name": "web", "port": 8080, "protocol": "TCP"})]);
        assert_eq!(endpoints.len(), 1);
        assert_eq!(
            endpoints[0]["conditions"],
            json!({"ready": true, "serving": true, "terminating": false})
        );
        assert_eq!(endpoints[0]["zone"], "z1");
    }

    #[test]
    fn a_slice_name_fits_a_generated_suffix() {
        assert_eq!(slice_prefix("web"), "web-");
        assert_eq!(slice_prefix(&"x".repeat(70)).len(), 58);
    }
}
