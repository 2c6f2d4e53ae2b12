//! The simulated cluster's nodes (`--simulate --simulate-nodes N`): registered as a kubelet
//! registers its node, with the labels and device plugins virt-handler adds, and the nodes
//! VMIs are scheduled to.

use serde_json::Value;

use crate::common::{eventually, Kubectl, ServerOptions, TestServer};

fn simulating(nodes: &str) -> TestServer {
    let args = ["--simulate", "--simulate-speed", "0", "--simulate-nodes", nodes];
    TestServer::start_with(ServerOptions {
        args: args.map(String::from).to_vec(),
        ..ServerOptions::default()
    })
}

#[test]
fn the_simulated_nodes_are_registered_ready_as_kubelets_register_them() {
    let s = simulating("3");
    let k = Kubectl::new(&s);
    let nodes = eventually(std::time::Duration::from_secs(10), || {
        let list = s.get_json("/api/v1/nodes");
        let ready =
            list["items"].as_array().unwrap().iter().all(|n| n["status"]["conditions"].is_array());
        (list["items"].as_array().unwrap().len() == 3 && ready).then_some(list)
    });
    let items = nodes["items"].as_array().unwrap();
    let names: Vec<&str> = items.iter().map(|n| n["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["sim-node-1", "sim-node-2", "sim-node-3"]);
    let node = &items[0];
    assert_eq!(node["metadata"]["labels"]["kubevirt.io/schedulable"], "true");
    assert_eq!(node["metadata"]["labels"]["kubernetes.io/hostname"], "sim-node-1");
    assert_eq!(node["status"]["allocatable"]["devices.kubevirt.io/kvm"], "1k");
    assert_eq!(node["metadata"]["managedFields"][0]["manager"], "kubelet");
    // Every field the Python client requires of a node's system info.
    let info = node["status"]["nodeInfo"].as_object().unwrap();
    for field in [
        "architecture",
        "bootID",
        "containerRuntimeVersion",
        "kernelVersion",
        "kubeProxyVersion",
        "kubeletVersion",
        "machineID",
        "operatingSystem",
        "osImage",
        "systemUUID",
    ] {
        assert!(info.get(field).and_then(Value::as_str).is_some_and(|v| !v.is_empty()), "{field}");
    }
    let wide = k.ok(&["get", "nodes", "-o", "wide", "--no-headers"]);
    let first: Vec<&str> = wide.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(first[..3], ["sim-node-1", "Ready", "<none>"]);
    assert_eq!(first[4..6], ["v1.32.0", "192.168.66.101"]);
    assert_eq!(first[first.len() - 1], "containerd://1.7.24");
}
