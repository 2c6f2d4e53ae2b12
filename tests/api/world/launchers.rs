//! Each VMI's virt-launcher pod under `--simulate` (KV pkg/virt-controller/services/template.go,
//! pkg/virt-controller/watch/vmi/lifecycle.go; KUBE-WORLD.md §6): created by virt-controller,
//! bound by the scheduler, run by the node's kubelet with the VMI's address, its readiness gate
//! following the pause, gone with the VMI; seen as kubectl and a UI see them.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{condition, eventually, simulating, Kubectl, TestServer};

const KV: &str = "/apis/kubevirt.io/v1/namespaces";
const SUB: &str = "/apis/subresources.kubevirt.io/v1/namespaces";

fn vm(name: &str, annotations: Value) -> Value {
    json!({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
        "metadata": {"name": name, "labels": {"app": "demo"}, "annotations": annotations},
        "spec": {"runStrategy": "Always", "template": {
            "metadata": {"labels": {"app": "demo", "tier": "web"}},
            "spec": {
                "domain": {
                    "devices": {"disks": [{"name": "root", "disk": {"bus": "virtio"}}],
                                "interfaces": [{"name": "default", "masquerade": {}}]},
                    "resources": {"requests": {"memory": "128Mi"}}
                },
                "networks": [{"name": "default", "pod": {}}],
                "volumes": [{"name": "root", "containerDisk": {"image": "quay.io/containerdisks/fedora:40"}}]
            }
        }}
    })
}

fn get(s: &TestServer, path: &str) -> Option<Value> {
    let r = s.get(path);
    (r.status == 200).then(|| r.json())
}

/// The namespace's pods, once `done` holds of the list.
fn pods_when(s: &TestServer, ns: &str, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    eventually(Duration::from_secs(15), || {
        let list = get(s, &format!("/api/v1/namespaces/{ns}/pods"))?;
        let items = list["items"].as_array()?.clone();
        done(&items).then_some(items)
    })
}

fn running_vmi(s: &TestServer, ns: &str, name: &str) -> Value {
    eventually(Duration::from_secs(15), || {
        let vmi = get(s, &format!("{KV}/{ns}/virtualmachineinstances/{name}"))?;
        let ready = condition(&vmi, "Ready").is_some_and(|c| c["status"] == "True");
        (vmi["status"]["phase"] == "Running" && ready).then_some(vmi)
    })
}

#[test]
fn a_running_vmi_runs_in_its_launcher_pod_on_its_node_with_its_address() {
    let s = simulating(&["--simulate-speed", "0.1", "--simulate-nodes", "3"]);
    s.namespace("lp");
    let k = Kubectl::in_namespace(&s, "lp");
    assert_eq!(s.post(&format!("{KV}/lp/virtualmachines"), &vm("web", json!(null))).status, 201);
    let vmi = running_vmi(&s, "lp", "web");
    let pods = pods_when(&s, "lp", |p| {
        p.len() == 1 && condition(&p[0], "Ready").is_some_and(|c| c["status"] == "True")
    });
    let pod = &pods[0];
    let name = pod["metadata"]["name"].as_str().unwrap();
    let node = vmi["status"]["nodeName"].as_str().unwrap();
    let ip = vmi["status"]["interfaces"][0]["ipAddress"].as_str().unwrap();

    // template.go: generateName, the VMI's labels and KubeVirt's, owned by the VMI.
    assert!(name.starts_with("virt-launcher-web-") && name.len() == "virt-launcher-web-".len() + 5);
    assert_eq!(pod["metadata"]["generateName"], "virt-launcher-web-");
    let labels = &pod["metadata"]["labels"];
    assert_eq!(labels["kubevirt.io"], "virt-launcher");
    assert_eq!(labels["kubevirt.io/created-by"], vmi["metadata"]["uid"]);
    assert_eq!(labels["vm.kubevirt.io/name"], "web");
    assert_eq!(labels["vmi.kubevirt.io/id"], "web");
    assert_eq!((&labels["app"], &labels["tier"]), (&json!("demo"), &json!("web")));
    let owner = &pod["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "VirtualMachineInstance");
    assert_eq!(owner["uid"], vmi["metadata"]["uid"]);
    assert_eq!((&owner["controller"], &owner["blockOwnerDeletion"]), (&json!(true), &json!(true)));
    assert_eq!(pod["metadata"]["annotations"]["kubevirt.io/domain"], "web");
    assert_eq!(
        pod["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"],
        "compute"
    );
    assert_eq!(pod["spec"]["nodeSelector"]["kubevirt.io/schedulable"], "true");
    assert_eq!(
        pod["spec"]["readinessGates"][0]["conditionType"],
        "kubevirt.io/virtual-machine-unpaused"
    );
    assert_eq!(pod["spec"]["restartPolicy"], "Never");
    // renderresources.go: 128Mi + GetMemoryOverhead (268.25Mi) in the request's format; one
    // vCPU over cpuAllocationRatio 10; the devices as limits (kube defaults requests to them).
    let compute = &pod["spec"]["containers"][0];
    assert_eq!(compute["name"], "compute");
    let resources = &compute["resources"];
    assert_eq!(resources["requests"]["memory"], "405760Ki", "{resources}");
    assert_eq!(resources["requests"]["cpu"], "100m", "{resources}");
    assert_eq!(resources["limits"]["devices.kubevirt.io/kvm"], "1", "{resources}");
    let names = |list: &Value| -> Vec<String> {
        list.as_array().unwrap().iter().map(|c| c["name"].as_str().unwrap().to_string()).collect()
    };
    assert_eq!(names(&pod["spec"]["containers"]), ["compute", "volumeroot"]);
    assert_eq!(
        names(&pod["spec"]["initContainers"]),
        ["guest-console-log", "container-disk-binary", "volumeroot-init"]
    );
    let uid_of_vmi = vmi["metadata"]["uid"].as_str().unwrap();
    assert_eq!(
        pod["spec"]["containers"][1]["args"],
        json!([
            "--copy-path",
            format!("/var/run/kubevirt-ephemeral-disks/container-disk-data/{uid_of_vmi}/disk_0")
        ])
    );

    // Scheduled where the VMI runs, with the VMI's address; the VMI lists it as active.
    assert_eq!(pod["spec"]["nodeName"], node);
    assert_eq!((&pod["status"]["phase"], &pod["status"]["podIP"]), (&json!("Running"), &json!(ip)));
    assert_eq!(pod["status"]["podIPs"], json!([{"ip": ip}]));
    let node_obj = get(&s, &format!("/api/v1/nodes/{node}")).unwrap();
    let node_ip = node_obj["status"]["addresses"][0]["address"].as_str().unwrap();
    assert_eq!(pod["status"]["hostIP"], node_ip);
    let uid = pod["metadata"]["uid"].as_str().unwrap();
    assert_eq!(vmi["status"]["activePods"], json!({uid: node}));
    for c in ["PodReadyToStartContainers", "Initialized", "ContainersReady", "PodScheduled"] {
        assert_eq!(condition(pod, c).unwrap()["status"], "True", "{c}: {pod}");
    }
    assert_eq!(
        condition(pod, "kubevirt.io/virtual-machine-unpaused").unwrap()["reason"],
        "NotPaused"
    );
    // Every field the Python client requires of a container status.
    let status = &pod["status"]["containerStatuses"][0];
    assert_eq!(
        (&status["name"], &status["ready"], &status["restartCount"]),
        (&json!("compute"), &json!(true), &json!(0))
    );
    assert!(status["imageID"]
        .as_str()
        .unwrap()
        .starts_with("quay.io/kubevirt/virt-launcher:v1.6.0@sha256:"));
    assert!(status["state"]["running"]["startedAt"].is_string());

    // kubectl's views: get -o wide, a field selector on the node, describe.
    let wide = k.ok(&["get", "pods", "-o", "wide", "--no-headers"]);
    let row: Vec<&str> = wide.split_whitespace().collect();
    // compute, the containerDisk's container and the console log's sidecar.
    assert_eq!(row[..3], [name, "3/3", "Running"], "{wide}");
    assert_eq!(row[5..7], [ip, node], "{wide}");
    assert_eq!(row[row.len() - 1], "1/1", "{wide}");
    let on_node = k.ok(&[
        "get",
        "pods",
        "-A",
        "--field-selector",
        &format!("spec.nodeName={node}"),
        "-o",
        "name",
    ]);
    assert_eq!(on_node.trim(), format!("pod/{name}"));
    let described = k.ok(&["describe", "pod", name]);
    assert!(described.contains(&format!("Node:         {node}/{node_ip}")), "{described}");
    assert!(described.contains("Controlled By:  VirtualMachineInstance/web"), "{described}");
    let events = k.ok(&[
        "get",
        "events",
        "--field-selector",
        &format!("involvedObject.name={name}"),
        "-o",
        "json",
    ]);
    let events: Value = serde_json::from_str(&events).unwrap();
    let scheduled = &events["items"][0];
    assert_eq!(scheduled["reason"], "Scheduled");
    assert_eq!(scheduled["message"], format!("Successfully assigned lp/{name} to {node}"));
    assert_eq!(scheduled["source"]["component"], "default-scheduler");
}

#[test]
fn the_readiness_gate_follows_the_pause_and_the_pod_goes_with_its_vmi() {
    let s = simulating(&["--simulate-speed", "0.1"]);
    s.namespace("gate");
    let k = Kubectl::in_namespace(&s, "gate");
    assert_eq!(s.post(&format!("{KV}/gate/virtualmachines"), &vm("g", json!(null))).status, 201);
    running_vmi(&s, "gate", "g");
    pods_when(&s, "gate", |p| {
        p.len() == 1 && condition(&p[0], "Ready").is_some_and(|c| c["status"] == "True")
    });

    // Paused: virt-controller sets the gate False, and kubelet's Ready follows it.
    let r = s.request(
        "PUT",
        &format!("{SUB}/gate/virtualmachineinstances/g/pause"),
        &[],
        Some(("application/json", b"{}")),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let pods = pods_when(&s, "gate", |p| {
        condition(&p[0], "Ready").is_some_and(|c| c["status"] == "False")
    });
    let gate = condition(&pods[0], "kubevirt.io/virtual-machine-unpaused").unwrap();
    assert_eq!((&gate["status"], &gate["reason"]), (&json!("False"), &json!("Paused")));
    assert_eq!(gate["message"], "the virtual machine is paused");
    let ready = condition(&pods[0], "Ready").unwrap();
    assert_eq!(ready["reason"], "ReadinessGatesNotReady");
    assert_eq!(
        ready["message"],
        "the status of pod readiness gate \"kubevirt.io/virtual-machine-unpaused\" is not \"True\", but False"
    );
    let row = k.ok(&["get", "pods", "-o", "wide", "--no-headers"]);
    let row: Vec<&str> = row.split_whitespace().collect();
    // READY counts containers; the gate shows in READINESS GATES.
    assert_eq!((row[1], row[2], row[row.len() - 1]), ("3/3", "Running", "0/1"));

    let r = s.request(
        "PUT",
        &format!("{SUB}/gate/virtualmachineinstances/g/unpause"),
        &[],
        Some(("application/json", b"{}")),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    pods_when(&s, "gate", |p| condition(&p[0], "Ready").is_some_and(|c| c["status"] == "True"));

    // Stopped: the VMI goes, and its pod before it.
    k.ok(&["patch", "vm", "g", "--type", "merge", "-p", r#"{"spec":{"runStrategy":"Halted"}}"#]);
    pods_when(&s, "gate", |p| p.is_empty());
    eventually(Duration::from_secs(10), || {
        get(&s, &format!("{KV}/gate/virtualmachineinstances/g")).is_none().then_some(())
    });
}

#[test]
fn an_unschedulable_launcher_stays_pending_with_the_schedulers_condition() {
    let s = simulating(&["--simulate-speed", "0.1", "--simulate-nodes", "3"]);
    s.namespace("pend");
    let fail = json!({"simulate.virt-apiserver.io/fail": "unschedulable"});
    assert_eq!(s.post(&format!("{KV}/pend/virtualmachines"), &vm("p", fail)).status, 201);
    let pods = pods_when(&s, "pend", |p| {
        p.len() == 1 && condition(&p[0], "PodScheduled").is_some_and(|c| c["status"] == "False")
    });
    let pod = &pods[0];
    assert!(pod["spec"]["nodeName"].is_null(), "{pod}");
    let scheduled = condition(pod, "PodScheduled").unwrap();
    let message = "0/3 nodes are available: 3 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod..";
    assert_eq!(
        (&scheduled["reason"], &scheduled["message"]),
        (&json!("Unschedulable"), &json!(message))
    );
    // KubeVirt mirrors it onto the VMI, which stays Scheduling.
    let vmi = eventually(Duration::from_secs(10), || {
        let vmi = get(&s, &format!("{KV}/pend/virtualmachineinstances/p"))?;
        condition(&vmi, "PodScheduled").is_some().then_some(vmi)
    });
    assert_eq!(vmi["status"]["phase"], "Scheduling");
    assert_eq!(condition(&vmi, "PodScheduled").unwrap()["message"], message);
    let k = Kubectl::in_namespace(&s, "pend");
    let row = k.ok(&["get", "pods", "--no-headers"]);
    assert_eq!(row.split_whitespace().nth(2), Some("Pending"), "{row}");
    let events =
        k.ok(&["get", "events", "--field-selector", "reason=FailedScheduling", "-o", "json"]);
    let events: Value = serde_json::from_str(&events).unwrap();
    assert_eq!(events["items"][0]["message"], message);
    assert_eq!(events["items"][0]["type"], "Warning");
}

#[test]
fn a_deleted_vmi_takes_its_pod() {
    let s = simulating(&["--simulate-speed", "0.1"]);
    s.namespace("solo");
    let vmi = vm("solo", json!(null))["spec"]["template"].clone();
    let body = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
        "metadata": {"name": "solo", "labels": vmi["metadata"]["labels"]}, "spec": vmi["spec"]});
    assert_eq!(s.post(&format!("{KV}/solo/virtualmachineinstances"), &body).status, 201);
    running_vmi(&s, "solo", "solo");
    pods_when(&s, "solo", |p| p.len() == 1);
    let k = Kubectl::in_namespace(&s, "solo");
    k.ok(&["delete", "vmi", "solo", "--wait=true", "--timeout=20s"]);
    assert!(get(&s, "/api/v1/namespaces/solo/pods").unwrap()["items"]
        .as_array()
        .unwrap()
        .is_empty());
}

#[test]
fn cordoned_nodes_take_no_launcher_until_one_is_uncordoned() {
    let s = simulating(&["--simulate-speed", "0.1", "--simulate-nodes", "2"]);
    s.namespace("cord");
    let k = Kubectl::in_namespace(&s, "cord");
    eventually(Duration::from_secs(10), || {
        (get(&s, "/api/v1/nodes")?["items"].as_array()?.len() == 2).then_some(())
    });
    k.ok(&["cordon", "sim-node-1", "sim-node-2"]);
    assert_eq!(s.post(&format!("{KV}/cord/virtualmachines"), &vm("c", json!(null))).status, 201);
    // NodeUnschedulable fails every node; preemption cannot help (framework/types.go).
    let pods = pods_when(&s, "cord", |p| {
        p.len() == 1 && condition(&p[0], "PodScheduled").is_some_and(|c| c["status"] == "False")
    });
    assert_eq!(
        condition(&pods[0], "PodScheduled").unwrap()["message"],
        "0/2 nodes are available: 2 node(s) were unschedulable. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.."
    );
    let wide = k.ok(&["get", "nodes", "--no-headers"]);
    assert!(wide.lines().all(|l| l.contains("Ready,SchedulingDisabled")), "{wide}");
    // Uncordoned, the node takes it.
    k.ok(&["uncordon", "sim-node-2"]);
    let vmi = running_vmi(&s, "cord", "c");
    assert_eq!(vmi["status"]["nodeName"], "sim-node-2");
}
