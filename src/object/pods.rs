//! kube's pod strategy beyond the schema (K8S pkg/registry/core/pod/strategy.go and
//! pkg/apis/core/v1/defaults.go): the requests a container's limits default, and the QoS
//! class the API server gives a pod at creation and keeps through status writes.

use serde_json::{Map, Value};

use crate::object::At;
use lifecycle::expr::parse_quantity;

/// `SetDefaults_Pod`: a container (init containers too) with a limit and no request for a
/// resource requests its limit.
pub fn default_requests(pod: &mut Value) {
    for list in ["containers", "initContainers"] {
        let containers = pod.pointer_mut(&format!("/spec/{list}")).and_then(Value::as_array_mut);
        for c in containers.into_iter().flatten() {
            let Some(resources) = c.get_mut("resources").and_then(Value::as_object_mut) else {
                continue;
            };
            let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else {
                continue;
            };
            let requests = resources.entry("requests").or_insert_with(|| Value::Object(Map::new()));
            if let Some(requests) = requests.as_object_mut() {
                for (k, v) in limits {
                    requests.entry(k).or_insert(v);
                }
            }
        }
    }
}

/// `ComputePodQOS` (K8S pkg/apis/core/helper/qos/qos.go): BestEffort without cpu or memory
/// requests or limits; Guaranteed when every container limits both and the summed requests
/// equal the summed limits; else Burstable.
pub fn qos_class(pod: &Value) -> &'static str {
    let mut requests: Map<String, Value> = Map::new();
    let mut limits: Map<String, Value> = Map::new();
    let mut guaranteed = true;
    let sum = |into: &mut Map<String, Value>, list: Option<&Value>| {
        let mut found = Vec::new();
        for (name, q) in list.and_then(Value::as_object).into_iter().flatten() {
            if name != "cpu" && name != "memory" {
                continue;
            }
            let v = q.as_str().and_then(parse_quantity).or_else(|| q.as_f64()).unwrap_or(0.0);
            if v > 0.0 {
                let total = into.get(name).and_then(Value::as_f64).unwrap_or(0.0) + v;
                into.insert(name.clone(), Value::from(total));
                found.push(name.clone());
            }
        }
        found
    };
    for list in ["containers", "initContainers"] {
        let containers = pod.at(&format!("/spec/{list}")).and_then(Value::as_array);
        for c in containers.into_iter().flatten() {
            sum(&mut requests, c.at("/resources/requests"));
            let found = sum(&mut limits, c.at("/resources/limits"));
            if !(found.iter().any(|n| n == "cpu") && found.iter().any(|n| n == "memory")) {
                guaranteed = false;
            }
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    let same = requests.iter().all(|(k, v)| limits.get(k) == Some(v));
    if guaranteed && same && requests.len() == limits.len() {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// `podStrategy.PrepareForCreate`: the status a new pod starts with, whatever the body said.
pub fn prepare_create(pod: &mut Value) {
    let qos = qos_class(pod);
    if let Some(m) = pod.as_object_mut() {
        let mut status = Map::new();
        status.insert("phase".into(), Value::from("Pending"));
        status.insert("qosClass".into(), Value::from(qos));
        m.insert("status".into(), Value::Object(status));
    }
}

/// `podStatusStrategy.PrepareForUpdate`: "the Pod QoS is immutable and populated at creation
/// time by the kube-apiserver", so a status write without it keeps the stored one.
pub fn keep_qos_class(current: &Value, new: &mut Value) {
    let Some(old) = current.at("/status/qosClass").cloned() else { return };
    let Some(m) = new.as_object_mut() else { return };
    let status = m.entry("status").or_insert_with(|| Value::Object(Map::new()));
    if let Some(s) = status.as_object_mut() {
        if s.get("qosClass").and_then(Value::as_str).is_none_or(str::is_empty) {
            s.insert("qosClass".into(), old);
        }
    }
}

/// `podStrategy.CheckGracefulDelete` (K8S pkg/registry/core/pod/strategy.go): the grace period
/// a delete gives `pod`: the options' `gracePeriodSeconds`, else `spec.terminationGracePeriodSeconds`
/// (0 without one); 0 for a pod no node runs (no `spec.nodeName`) and for one whose phase is
/// Failed or Succeeded; a negative period is 1.
pub fn grace_period(pod: &Value, requested: Option<i64>) -> i64 {
    let mut period = requested
        .or_else(|| pod.at("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64))
        .unwrap_or(0);
    if pod.at("/spec/nodeName").and_then(Value::as_str).is_none_or(str::is_empty) {
        period = 0;
    }
    let phase = pod.at("/status/phase").and_then(Value::as_str);
    if matches!(phase, Some("Failed" | "Succeeded")) {
        period = 0;
    }
    if period < 0 {
        period = 1;
    }
    period
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(containers: Value) -> Value {
        json!({"spec": {"containers": containers}})
    }

    #[test]
    fn limits_default_requests_and_decide_the_qos_class() {
        let mut p =
            pod(json!([{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]));
        default_requests(&mut p);
        assert_eq!(
            p["spec"]["containers"][0]["resources"]["requests"],
            json!({"cpu": "1", "memory": "1Gi"})
        );
        assert_eq!(qos_class(&p), "Guaranteed");
        assert_eq!(qos_class(&pod(json!([{"name": "c"}]))), "BestEffort");
        let burstable = pod(json!([{"name": "c", "resources": {"requests": {"memory": "128Mi"}}}]));
        assert_eq!(qos_class(&burstable), "Burstable");
        // A container without limits on both makes the pod Burstable, whatever the others do.
        let mixed = pod(json!([
            {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "100m"}}}
        ]));
        assert_eq!(qos_class(&mixed), "Burstable");
        // Equal totals in other units still match.
        let units = pod(
            json!([{"name": "c", "resources": {"limits": {"cpu": "1000m", "memory": "1024Mi"}, "requests": {"cpu": "1", "memory": "1Gi"}}}]),
        );
        assert_eq!(qos_class(&units), "Guaranteed");
    }

    #[test]
    fn a_new_pod_starts_pending_and_a_status_write_keeps_its_class() {
        let mut p =
            json!({"spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Running"}});
        prepare_create(&mut p);
        assert_eq!(p["status"], json!({"phase": "Pending", "qosClass": "BestEffort"}));
        let mut written = json!({"status": {"phase": "Running"}});
        keep_qos_class(&p, &mut written);
        assert_eq!(written["status"]["qosClass"], "BestEffort");
    }

    #[test]
    fn the_grace_period_of_a_delete() {
        let bound = json!({"spec": {"nodeName": "n", "terminationGracePeriodSeconds": 30},
                           "status": {"phase": "Running"}});
        assert_eq!(grace_period(&bound, None), 30);
        assert_eq!(grace_period(&bound, Some(5)), 5);
        assert_eq!(grace_period(&bound, Some(-3)), 1);
        let unscheduled = json!({"spec": {"terminationGracePeriodSeconds": 30}});
        assert_eq!(grace_period(&unscheduled, Some(10)), 0);
        let mut done = bound.clone();
        done["status"]["phase"] = json!("Succeeded");
        assert_eq!(grace_period(&done, None), 0);
        done["status"]["phase"] = json!("Failed");
        assert_eq!(grace_period(&done, Some(9)), 0);
        assert_eq!(grace_period(&json!({"spec": {"nodeName": "n"}}), None), 0);
    }
}
