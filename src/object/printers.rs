//! kube's printers for the cells of its built-in kinds that are programs over the object
//! (K8S pkg/printers/internalversion/printers.go, 1.3x: printPod, printNode, printService,
//! formatEndpoints, printPersistentVolume(Claim), printStorageClass, printEndpointSlice), as the
//! server's Table makes them: always wide, nothing clipped. The document names one per column
//! cell (`{"printer": "podStatus"}`); simple cells are JSONPaths there.

use serde_json::{Map, Value};

use crate::object::duration::human_duration;
use crate::object::meta::parse_rfc3339;
use crate::object::At;
use crate::resource::Printer;

/// The cell `p` prints for `obj`, ages measured from `now` (Unix seconds).
pub fn cell(p: Printer, obj: &Value, now: i64) -> Value {
    let text = match p {
        Printer::PodReady => pod_ready(obj),
        Printer::PodStatus => pod_status(obj),
        Printer::PodRestarts => pod_restarts(obj, now),
        Printer::PodReadinessGates => readiness_gates(obj),
        Printer::NodeStatus => node_status(obj),
        Printer::NodeRoles => node_roles(obj),
        Printer::ServiceExternalIP => service_external_ip(obj),
        Printer::ServicePorts => service_ports(obj),
        Printer::ServiceSelector => format_labels(obj.at("/spec/selector")),
        Printer::Endpoints => format_endpoints(obj),
        Printer::TerminatingPhase => match obj.at("/metadata/deletionTimestamp") {
            Some(t) if !t.is_null() => "Terminating".into(),
            _ => str_at(obj, "/status/phase").into(),
        },
        Printer::ClaimCapacity => match str_at(obj, "/spec/volumeName") {
            "" => String::new(),
            _ => quantity_at(obj, "/status/capacity/storage"),
        },
        Printer::ClaimAccessModes => match str_at(obj, "/spec/volumeName") {
            "" => String::new(),
            _ => access_modes(obj.at("/status/accessModes")),
        },
        Printer::ClaimStorageClass => match beta_class(obj) {
            Some(class) => class.into(),
            None => str_at(obj, "/spec/storageClassName").into(),
        },
        Printer::VolumeAccessModes => access_modes(obj.at("/spec/accessModes")),
        Printer::VolumeClaim => match obj.at("/spec/claimRef") {
            Some(r) if r.is_object() => {
                format!("{}/{}", str_at(r, "/namespace"), str_at(r, "/name"))
            }
            _ => String::new(),
        },
        Printer::VolumeStorageClass => match beta_class(obj) {
            Some(class) => class.into(),
            None => str_at(obj, "/spec/storageClassName").into(),
        },
        Printer::StorageClassName => storage_class_name(obj),
        Printer::EndpointSlicePorts => endpoint_slice_ports(obj),
        Printer::EndpointSliceEndpoints => endpoint_slice_endpoints(obj),
    };
    Value::String(text)
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.at(pointer).and_then(Value::as_str).unwrap_or("")
}

fn list_at<'a>(v: &'a Value, pointer: &str) -> &'a [Value] {
    v.at(pointer).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn int_at(v: &Value, pointer: &str) -> i64 {
    v.at(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn is_true(v: &Value, pointer: &str) -> bool {
    v.at(pointer).and_then(Value::as_bool).unwrap_or(false)
}

/// A Quantity's text, `0` where there is none (the zero Quantity's `String()`).
fn quantity_at(v: &Value, pointer: &str) -> String {
    match v.at(pointer) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "0".into(),
    }
}

// ---- pods (printPod) ----

/// The spec containers of a pod's init containers that restart (sidecars), by name.
fn restartable_init(obj: &Value, name: &str) -> bool {
    list_at(obj, "/spec/initContainers").iter().any(|c| {
        c.get("name").and_then(Value::as_str) == Some(name)
            && c.get("restartPolicy").and_then(Value::as_str) == Some("Always")
    })
}

/// What printPod computes: ready and total containers, the status, restarts and the last
/// restart's time.
struct PodSummary {
    ready: usize,
    total: usize,
    reason: String,
    restarts: i64,
    last_restart: Option<i64>,
}

fn has_condition(obj: &Value, type_: &str, status: &str) -> bool {
    list_at(obj, "/status/conditions").iter().any(|c| {
        c.get("type").and_then(Value::as_str) == Some(type_)
            && c.get("status").and_then(Value::as_str) == Some(status)
    })
}

/// `isPodInitializedConditionTrue`: the first `Initialized` condition.
fn initialized(obj: &Value) -> bool {
    let first = list_at(obj, "/status/conditions")
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("Initialized"));
    first.is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"))
}

fn terminated_at(container: &Value) -> Option<i64> {
    container.at("/lastState/terminated/finishedAt").and_then(Value::as_str).and_then(parse_rfc3339)
}

/// `Init:`/`Signal:`/`ExitCode:` for a terminated state without a reason.
fn terminated_text(t: &Value, prefix: &str) -> String {
    match t.get("reason").and_then(Value::as_str).filter(|r| !r.is_empty()) {
        Some(r) => format!("{prefix}{r}"),
        None => match int_at(t, "/signal") {
            0 => format!("{prefix}ExitCode:{}", int_at(t, "/exitCode")),
            s => format!("{prefix}Signal:{s}"),
        },
    }
}

fn pod_summary(obj: &Value) -> PodSummary {
    let phase = str_at(obj, "/status/phase");
    let mut reason = match str_at(obj, "/status/reason") {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    let gated = list_at(obj, "/status/conditions").iter().any(|c| {
        c.get("type").and_then(Value::as_str) == Some("PodScheduled")
            && c.get("reason").and_then(Value::as_str) == Some("SchedulingGated")
    });
    if gated {
        reason = "SchedulingGated".into();
    }
    let init_specs = list_at(obj, "/spec/initContainers");
    let sidecars = init_specs
        .iter()
        .filter(|c| c.get("restartPolicy").and_then(Value::as_str) == Some("Always"))
        .count();
    let total = list_at(obj, "/spec/containers").len() + sidecars;
    let mut ready = 0;
    let (mut restarts, mut sidecar_restarts) = (0, 0);
    let (mut last, mut sidecar_last): (Option<i64>, Option<i64>) = (None, None);
    let mut initializing = false;
    for (i, c) in list_at(obj, "/status/initContainerStatuses").iter().enumerate() {
        let count = int_at(c, "/restartCount");
        restarts += count;
        last = last.max(terminated_at(c));
        let name = c.get("name").and_then(Value::as_str).unwrap_or("");
        let sidecar = restartable_init(obj, name);
        if sidecar {
            sidecar_restarts += count;
            sidecar_last = sidecar_last.max(terminated_at(c));
        }
        let terminated = c.at("/state/terminated").filter(|t| t.is_object());
        let waiting = c.at("/state/waiting/reason").and_then(Value::as_str).unwrap_or("");
        if terminated.is_some_and(|t| int_at(t, "/exitCode") == 0) {
            continue;
        }
        if sidecar && is_true(c, "/started") {
            if is_true(c, "/ready") {
                ready += 1;
            }
            continue;
        }
        reason = match terminated {
            Some(t) => terminated_text(t, "Init:"),
            None if !waiting.is_empty() && waiting != "PodInitializing" => {
                format!("Init:{waiting}")
            }
            None => format!("Init:{i}/{}", init_specs.len()),
        };
        initializing = true;
        break;
    }
    if !initializing || initialized(obj) {
        restarts = sidecar_restarts;
        last = sidecar_last;
        let mut has_running = false;
        for c in list_at(obj, "/status/containerStatuses").iter().rev() {
            restarts += int_at(c, "/restartCount");
            last = last.max(terminated_at(c));
            let waiting = c.at("/state/waiting/reason").and_then(Value::as_str);
            let terminated = c.at("/state/terminated").filter(|t| t.is_object());
            if let Some(w) = waiting.filter(|w| !w.is_empty()) {
                reason = w.to_string();
            } else if let Some(t) = terminated {
                reason = terminated_text(t, "");
            } else if is_true(c, "/ready") && c.at("/state/running").is_some_and(Value::is_object) {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            reason = match has_condition(obj, "Ready", "True") {
                true => "Running".into(),
                false => "NotReady".into(),
            };
        }
    }
    let deleting = obj.at("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null());
    if deleting && str_at(obj, "/status/reason") == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && !matches!(phase, "Failed" | "Succeeded") {
        reason = "Terminating".into();
    }
    PodSummary { ready, total, reason, restarts, last_restart: last }
}

fn pod_ready(obj: &Value) -> String {
    let s = pod_summary(obj);
    format!("{}/{}", s.ready, s.total)
}

fn pod_status(obj: &Value) -> String {
    pod_summary(obj).reason
}

fn pod_restarts(obj: &Value, now: i64) -> String {
    let s = pod_summary(obj);
    match s.last_restart {
        Some(t) if s.restarts != 0 => format!("{} ({} ago)", s.restarts, human_duration(now - t)),
        _ => s.restarts.to_string(),
    }
}

fn readiness_gates(obj: &Value) -> String {
    let gates = list_at(obj, "/spec/readinessGates");
    if gates.is_empty() {
        return "<none>".into();
    }
    let conditions = list_at(obj, "/status/conditions");
    let met = gates
        .iter()
        .filter(|g| {
            let t = g.get("conditionType").and_then(Value::as_str);
            let first = conditions.iter().find(|c| c.get("type").and_then(Value::as_str) == t);
            first.is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"))
        })
        .count();
    format!("{met}/{}", gates.len())
}

// ---- nodes (printNode) ----

fn node_status(obj: &Value) -> String {
    // Only Ready counts; the last condition of that type wins.
    let ready = list_at(obj, "/status/conditions")
        .iter()
        .rfind(|c| c.get("type").and_then(Value::as_str) == Some("Ready"));
    let mut status = vec![match ready {
        Some(c) if c.get("status").and_then(Value::as_str) == Some("True") => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if is_true(obj, "/spec/unschedulable") {
        status.push("SchedulingDisabled");
    }
    status.join(",")
}

/// `findNodeRoles`: `node-role.kubernetes.io/<role>` keys and the `kubernetes.io/role` value.
fn node_roles(obj: &Value) -> String {
    let mut roles = std::collections::BTreeSet::new();
    if let Some(labels) = obj.at("/metadata/labels").and_then(Value::as_object) {
        for (k, v) in labels {
            match k.strip_prefix("node-role.kubernetes.io/") {
                Some(role) if !role.is_empty() => {
                    roles.insert(role.to_string());
                }
                Some(_) => {}
                None if k == "kubernetes.io/role" => {
                    if let Some(v) = v.as_str().filter(|v| !v.is_empty()) {
                        roles.insert(v.to_string());
                    }
                }
                None => {}
            }
        }
    }
    if roles.is_empty() {
        return "<none>".into();
    }
    roles.into_iter().collect::<Vec<_>>().join(",")
}

// ---- services (printService) ----

fn strings(list: &[Value]) -> Vec<String> {
    list.iter().filter_map(Value::as_str).map(String::from).collect()
}

fn service_external_ip(obj: &Value) -> String {
    let external = strings(list_at(obj, "/spec/externalIPs"));
    match str_at(obj, "/spec/type") {
        "ClusterIP" | "NodePort" if !external.is_empty() => external.join(","),
        "ClusterIP" | "NodePort" => "<none>".into(),
        "LoadBalancer" => {
            // loadBalancerStatusStringer, wide: a sorted set of IPs (or hostnames).
            let mut lb = std::collections::BTreeSet::new();
            for ingress in list_at(obj, "/status/loadBalancer/ingress") {
                match (str_at(ingress, "/ip"), str_at(ingress, "/hostname")) {
                    ("", "") => {}
                    ("", host) => {
                        lb.insert(host.to_string());
                    }
                    (ip, _) => {
                        lb.insert(ip.to_string());
                    }
                }
            }
            let mut all: Vec<String> = lb.into_iter().collect();
            if all.is_empty() && external.is_empty() {
                return "<pending>".into();
            }
            all.extend(external);
            all.join(",")
        }
        "ExternalName" => str_at(obj, "/spec/externalName").into(),
        _ => "<unknown>".into(),
    }
}

/// `makePortString`.
fn service_ports(obj: &Value) -> String {
    let ports: Vec<String> = list_at(obj, "/spec/ports")
        .iter()
        .map(|p| {
            let (port, protocol) = (int_at(p, "/port"), str_at(p, "/protocol"));
            match int_at(p, "/nodePort") {
                n if n > 0 => format!("{port}:{n}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    if ports.is_empty() {
        return "<none>".into();
    }
    ports.join(",")
}

/// `labels.FormatLabels`: sorted `k=v`, `<none>` when empty.
fn format_labels(map: Option<&Value>) -> String {
    let Some(map) = map.and_then(Value::as_object).filter(|m| !m.is_empty()) else {
        return "<none>".into();
    };
    let mut pairs: Vec<String> =
        map.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect();
    pairs.sort();
    pairs.join(",")
}

// ---- endpoints (formatEndpoints) ----

/// `net.JoinHostPort`.
fn host_port(ip: &str, port: i64) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

/// The first three items, then ` + N more...`; `empty` when there are none.
fn first_three(items: Vec<String>, empty: &str) -> String {
    match items.len() {
        0 => empty.into(),
        n if n > 3 => format!("{} + {} more...", items[..3].join(","), n - 3),
        _ => items.join(","),
    }
}

fn format_endpoints(obj: &Value) -> String {
    let subsets = list_at(obj, "/subsets");
    if subsets.is_empty() {
        return "<none>".into();
    }
    let mut items = Vec::new();
    for ss in subsets {
        let addresses = list_at(ss, "/addresses");
        let ports = list_at(ss, "/ports");
        if ports.is_empty() {
            items.extend(addresses.iter().map(|a| str_at(a, "/ip").to_string()));
            continue;
        }
        for p in ports {
            let port = int_at(p, "/port");
            items.extend(addresses.iter().map(|a| host_port(str_at(a, "/ip"), port)));
        }
    }
    // Subsets with only not-ready addresses list nothing, and say nothing.
    first_three(items, "")
}

// ---- volumes and claims ----

/// `GetAccessModesAsString`: always in the order RWO,ROX,RWX,RWOP.
fn access_modes(modes: Option<&Value>) -> String {
    let modes = modes.and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(m, _)| has(m))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// The beta storage-class annotation, which wins over the field where present.
fn beta_class(obj: &Value) -> Option<&str> {
    obj.at("/metadata/annotations")
        .and_then(Value::as_object)
        .and_then(|a: &Map<String, Value>| a.get("volume.beta.kubernetes.io/storage-class"))
        .and_then(Value::as_str)
}

/// `IsDefaultAnnotation`: either annotation exactly "true".
fn storage_class_name(obj: &Value) -> String {
    let name = str_at(obj, "/metadata/name");
    let annotations = obj.at("/metadata/annotations");
    let default = [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .iter()
    .any(|k| annotations.and_then(|a| a.get(*k)).and_then(Value::as_str) == Some("true"));
    if default {
        format!("{name} (default)")
    } else {
        name.into()
    }
}

// ---- endpoint slices (formatDiscoveryPorts, formatDiscoveryEndpoints) ----

fn endpoint_slice_ports(obj: &Value) -> String {
    let ports = list_at(obj, "/ports")
        .iter()
        .map(|p| match (p.get("port").and_then(Value::as_i64), p.get("name")) {
            (Some(n), _) => n.to_string(),
            (None, Some(Value::String(name))) => name.clone(),
            _ => "*".into(),
        })
        .collect();
    first_three(ports, "<unset>")
}

fn endpoint_slice_endpoints(obj: &Value) -> String {
    let addresses =
        list_at(obj, "/endpoints").iter().flat_map(|e| strings(list_at(e, "/addresses"))).collect();
    first_three(addresses, "<unset>")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const NOW: i64 = 1_800_000_000;

    fn at(secs_ago: i64) -> String {
        crate::object::meta::rfc3339(NOW - secs_ago)
    }

    fn print(p: Printer, obj: &Value) -> String {
        cell(p, obj, NOW).as_str().unwrap().to_string()
    }

    #[test]
    fn a_pods_ready_status_and_restarts_follow_its_containers() {
        let running = json!({"ready": true, "restartCount": 0, "state": {"running": {}}});
        let waiting = json!({"ready": false, "restartCount": 3,
            "state": {"waiting": {"reason": "CrashLoopBackOff"}},
            "lastState": {"terminated": {"exitCode": 1, "finishedAt": at(65)}}});
        let pod = json!({
            "spec": {"containers": [{"name": "a"}, {"name": "b"}]},
            "status": {"phase": "Running", "containerStatuses": [running, waiting]},
        });
        assert_eq!(print(Printer::PodReady, &pod), "1/2");
        assert_eq!(print(Printer::PodStatus, &pod), "CrashLoopBackOff");
        assert_eq!(print(Printer::PodRestarts, &pod), "3 (65s ago)");
        let pending =
            json!({"spec": {"containers": [{"name": "a"}]}, "status": {"phase": "Pending"}});
        assert_eq!(
            (print(Printer::PodReady, &pending), print(Printer::PodStatus, &pending)),
            ("0/1".into(), "Pending".into())
        );
        assert_eq!(print(Printer::PodRestarts, &pending), "0");
        // An init container still running; a sidecar that started counts as a container.
        let init = json!({
            "spec": {"initContainers": [{"name": "side", "restartPolicy": "Always"}, {"name": "i"}],
                     "containers": [{"name": "a"}]},
            "status": {"phase": "Pending", "initContainerStatuses": [
                {"name": "side", "started": true, "ready": true, "state": {"running": {}}},
                {"name": "i", "state": {"running": {}}}]},
        });
        assert_eq!(print(Printer::PodStatus, &init), "Init:1/2");
        assert_eq!(print(Printer::PodReady, &init), "1/2");
        let failed_init = json!({"spec": {"initContainers": [{"name": "i"}]},
            "status": {"initContainerStatuses": [{"name": "i", "state": {"terminated": {"exitCode": 2}}}]}});
        assert_eq!(print(Printer::PodStatus, &failed_init), "Init:ExitCode:2");
        // Deleting: Terminating unless the phase is final; NodeLost reads Unknown.
        let mut deleting = pod.clone();
        deleting["metadata"] = json!({"deletionTimestamp": at(1)});
        assert_eq!(print(Printer::PodStatus, &deleting), "Terminating");
        deleting["status"]["reason"] = json!("NodeLost");
        assert_eq!(print(Printer::PodStatus, &deleting), "Unknown");
        let done = json!({"metadata": {"deletionTimestamp": at(1)},
            "status": {"phase": "Succeeded", "containerStatuses": [
                {"state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}]}});
        assert_eq!(print(Printer::PodStatus, &done), "Completed");
        let gated = json!({"status": {"phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}});
        assert_eq!(print(Printer::PodStatus, &gated), "SchedulingGated");
        let gates = json!({"spec": {"readinessGates": [{"conditionType": "kubevirt.io/virtual-machine-unpaused"}]},
            "status": {"conditions": [{"type": "kubevirt.io/virtual-machine-unpaused", "status": "True"}]}});
        assert_eq!(print(Printer::PodReadinessGates, &gates), "1/1");
        assert_eq!(print(Printer::PodReadinessGates, &pod), "<none>");
    }

    #[test]
    fn nodes_show_readiness_cordons_and_roles() {
        let node = json!({"metadata": {"labels": {"node-role.kubernetes.io/control-plane": "",
                                                   "kubernetes.io/role": "worker"}},
                          "spec": {"unschedulable": true},
                          "status": {"conditions": [{"type": "MemoryPressure", "status": "False"},
                                                    {"type": "Ready", "status": "True"}]}});
        assert_eq!(print(Printer::NodeStatus, &node), "Ready,SchedulingDisabled");
        assert_eq!(print(Printer::NodeRoles, &node), "control-plane,worker");
        let bare = json!({"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
        assert_eq!(print(Printer::NodeStatus, &bare), "NotReady");
        assert_eq!(print(Printer::NodeStatus, &json!({})), "Unknown");
        assert_eq!(print(Printer::NodeRoles, &bare), "<none>");
    }

    #[test]
    fn services_show_addresses_ports_and_selectors() {
        let svc = json!({"spec": {"type": "NodePort", "selector": {"b": "2", "a": "1"},
            "ports": [{"port": 22, "nodePort": 30022, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}]}});
        assert_eq!(print(Printer::ServiceExternalIP, &svc), "<none>");
        assert_eq!(print(Printer::ServicePorts, &svc), "22:30022/TCP,53/UDP");
        assert_eq!(print(Printer::ServiceSelector, &svc), "a=1,b=2");
        let lb = json!({"spec": {"type": "LoadBalancer", "externalIPs": ["192.0.2.9"]},
            "status": {"loadBalancer": {"ingress": [{"ip": "192.0.2.2"}, {"hostname": "lb.example"}]}}});
        assert_eq!(print(Printer::ServiceExternalIP, &lb), "192.0.2.2,lb.example,192.0.2.9");
        let pending = json!({"spec": {"type": "LoadBalancer"}});
        assert_eq!(print(Printer::ServiceExternalIP, &pending), "<pending>");
        assert_eq!(print(Printer::ServicePorts, &pending), "<none>");
        assert_eq!(print(Printer::ServiceSelector, &pending), "<none>");
    }

    #[test]
    fn endpoints_list_three_addresses_then_count_the_rest() {
        let ep = json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}, {"ip": "fd00::2"}],
                                     "ports": [{"port": 80}, {"port": 443}]}]});
        assert_eq!(
            print(Printer::Endpoints, &ep),
            "10.0.0.1:80,[fd00::2]:80,10.0.0.1:443 + 1 more..."
        );
        assert_eq!(print(Printer::Endpoints, &json!({})), "<none>");
        let slice = json!({"ports": [{"port": 80}, {"name": "dns"}, {}],
                           "endpoints": [{"addresses": ["10.0.0.1"]}]});
        assert_eq!(print(Printer::EndpointSlicePorts, &slice), "80,dns,*");
        assert_eq!(print(Printer::EndpointSliceEndpoints, &slice), "10.0.0.1");
        assert_eq!(print(Printer::EndpointSliceEndpoints, &json!({})), "<unset>");
    }

    #[test]
    fn volumes_and_claims_show_binding_modes_and_classes() {
        let claim = json!({"spec": {"volumeName": "pv1", "storageClassName": "local"},
            "status": {"phase": "Bound", "capacity": {"storage": "1Gi"},
                       "accessModes": ["ReadWriteMany", "ReadWriteOnce"]}});
        assert_eq!(print(Printer::ClaimCapacity, &claim), "1Gi");
        assert_eq!(print(Printer::ClaimAccessModes, &claim), "RWO,RWX");
        assert_eq!(print(Printer::ClaimStorageClass, &claim), "local");
        assert_eq!(print(Printer::TerminatingPhase, &claim), "Bound");
        let unbound = json!({"metadata": {"deletionTimestamp": at(1)},
            "spec": {"resources": {"requests": {"storage": "1Gi"}}}});
        assert_eq!(print(Printer::ClaimCapacity, &unbound), "");
        assert_eq!(print(Printer::TerminatingPhase, &unbound), "Terminating");
        let pv = json!({"metadata": {"annotations": {"volume.beta.kubernetes.io/storage-class": "old"}},
            "spec": {"claimRef": {"namespace": "ns", "name": "c"}, "storageClassName": "new"}});
        assert_eq!(print(Printer::VolumeClaim, &pv), "ns/c");
        assert_eq!(print(Printer::VolumeStorageClass, &pv), "old");
        assert_eq!(print(Printer::VolumeClaim, &json!({})), "");
        let sc = json!({"metadata": {"name": "local",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}}});
        assert_eq!(print(Printer::StorageClassName, &sc), "local (default)");
    }
}
