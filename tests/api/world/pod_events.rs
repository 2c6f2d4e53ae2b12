//! The events a cluster records for a virt-launcher pod, as `kubectl describe pod` shows them:
//! kube-scheduler's `Scheduled` (K8S pkg/scheduler/schedule_one.go) and the kubelet's `Pulled`,
//! `Created`, `Started` per container, init containers first (K8S pkg/kubelet/events/event.go,
//! pkg/kubelet/images/image_manager.go, pkg/kubelet/kuberuntime/kuberuntime_container.go).

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{eventually, simulating, Kubectl};

#[test]
fn a_launcher_pods_events_are_the_schedulers_and_the_kubelets() {
    let s = simulating(&["--simulate-speed", "0.1", "--simulate-nodes", "2"]);
    s.namespace("ev");
    let k = Kubectl::in_namespace(&s, "ev");
    let vm = json!({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "web"},
        "spec": {"runStrategy": "Always", "template": {"spec": {
            "domain": {"devices": {"disks": [{"name": "root", "disk": {"bus": "virtio"}}]},
                       "resources": {"requests": {"memory": "128Mi"}}},
            "volumes": [{"name": "root", "containerDisk": {"image": "quay.io/containerdisks/fedora:40"}}]
        }}}
    });
    assert_eq!(s.post("/apis/kubevirt.io/v1/namespaces/ev/virtualmachines", &vm).status, 201);
    let (pod, events) = eventually(Duration::from_secs(15), || {
        let pods = s.get("/api/v1/namespaces/ev/pods").json();
        let pod = pods["items"].get(0)?.clone();
        let name = pod["metadata"]["name"].as_str()?.to_string();
        let q = format!("/api/v1/namespaces/ev/events?fieldSelector=involvedObject.name={name}");
        let events: Vec<Value> = s.get(&q).json()["items"].as_array()?.clone();
        // Scheduled, then three for each of 3 init containers and 2 containers; those of one
        // message counted in one Event (the recorder's correlation: no fieldPath tells the
        // containers apart here).
        let count: i64 = events.iter().map(|e| e["count"].as_i64().unwrap_or(1)).sum();
        (count == 16).then_some((pod, events))
    });
    let name = pod["metadata"]["name"].as_str().unwrap();
    let node = pod["spec"]["nodeName"].as_str().unwrap();
    let seen: Vec<(String, String, String)> = events
        .iter()
        .map(|e| {
            let s = |p: &str| e.pointer(p).and_then(Value::as_str).unwrap_or("").to_string();
            (s("/source/component"), s("/reason"), s("/message"))
        })
        .collect();
    let scheduled = (
        "default-scheduler".to_string(),
        "Scheduled".to_string(),
        format!("Successfully assigned ev/{name} to {node}"),
    );
    assert!(seen.contains(&scheduled), "{seen:?}");
    let kubelet: Vec<(String, String)> = seen
        .iter()
        .filter(|(c, ..)| c == "kubelet")
        .map(|(_, r, m)| (r.clone(), m.clone()))
        .collect();
    let mut want = Vec::new();
    for c in
        ["guest-console-log", "container-disk-binary", "volumeroot-init", "compute", "volumeroot"]
    {
        let list = pod["spec"]["initContainers"].as_array().unwrap().iter();
        let spec = list
            .chain(pod["spec"]["containers"].as_array().unwrap())
            .find(|s| s["name"] == c)
            .unwrap();
        let image = spec["image"].as_str().unwrap();
        for w in [
            ("Pulled".into(), format!("Container image \"{image}\" already present on machine")),
            ("Created".into(), format!("Created container: {c}")),
            ("Started".into(), format!("Started container {c}")),
        ] {
            if !want.contains(&w) {
                want.push(w);
            }
        }
    }
    assert_eq!(kubelet, want);

    let described = k.ok(&["describe", "pod", name]);
    let events = described.split("Events:").nth(1).unwrap();
    assert!(events.contains("Started container compute"), "{described}");
    assert!(events.contains(&format!("Successfully assigned ev/{name} to {node}")), "{described}");
}
