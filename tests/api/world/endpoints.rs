//! kube-controller-manager's endpoints and endpoint-slice controllers inside the server (K8S
//! pkg/controller/endpoint/endpoints_controller.go, staging/src/k8s.io/endpointslice/): a
//! service's selector picks pods, whose addresses its Endpoints and EndpointSlices list, with
//! or without `--simulate`; under it, a service over a VM's labels lists the VMI's address.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{eventually, simulating, Kubectl, TestServer};

fn get(s: &TestServer, path: &str) -> Option<Value> {
    let r = s.get(path);
    (r.status == 200).then(|| r.json())
}

fn created(s: &TestServer, path: &str, body: Value) -> Value {
    let r = s.post(path, &body);
    assert_eq!(r.status, 201, "{path}: {}", r.text());
    r.json()
}

/// A pod on `node` with `ip`, Running, Ready as asked, through `/status` as a kubelet reports.
fn running_pod(s: &TestServer, ns: &str, name: &str, ip: &str, ready: bool) -> Value {
    let pod = created(
        s,
        &format!("/api/v1/namespaces/{ns}/pods"),
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": name, "labels": {"app": "web"}},
               "spec": {"nodeName": "node-a",
                        "containers": [{"name": "c", "image": "nginx",
                                        "ports": [{"name": "http", "containerPort": 8080}]}]}}),
    );
    let mut pod = pod;
    pod["status"] = json!({
        "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
        "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" },
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    let r = s.put(&format!("/api/v1/namespaces/{ns}/pods/{name}/status"), &pod);
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn service(s: &TestServer, ns: &str, name: &str, selector: Value) -> Value {
    created(
        s,
        &format!("/api/v1/namespaces/{ns}/services"),
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": name, "labels": {"team": "a"}},
               "spec": {"selector": selector,
                        "ports": [{"name": "web", "port": 80, "targetPort": "http"}]}}),
    )
}

fn slices_of(s: &TestServer, ns: &str, svc: &str) -> Vec<Value> {
    let path = format!(
        "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices?labelSelector=kubernetes.io/service-name%3D{svc}"
    );
    get(s, &path).unwrap()["items"].as_array().unwrap().clone()
}

#[test]
fn a_services_endpoints_and_slices_list_the_pods_it_selects() {
    let s = TestServer::start();
    s.namespace("ep");
    let k = Kubectl::in_namespace(&s, "ep");
    created(
        &s,
        "/api/v1/nodes",
        json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "node-a", "labels": {"topology.kubernetes.io/zone": "z1"}}}),
    );
    running_pod(&s, "ep", "a", "10.244.0.9", true);
    running_pod(&s, "ep", "b", "10.244.0.10", true);
    running_pod(&s, "ep", "c", "10.244.0.11", false);
    let svc = service(&s, "ep", "web", json!({"app": "web"}));

    // Endpoints: named as the service, its labels, ready and not-ready addresses apart,
    // ordered as LessEndpointAddress orders them, the named target port resolved.
    let ep = eventually(Duration::from_secs(10), || {
        let ep = get(&s, "/api/v1/namespaces/ep/endpoints/web")?;
        (ep["subsets"][0]["addresses"].as_array()?.len() == 2).then_some(ep)
    });
    let subset = &ep["subsets"][0];
    let ips: Vec<&str> =
        subset["addresses"].as_array().unwrap().iter().map(|a| a["ip"].as_str().unwrap()).collect();
    assert_eq!(ips, ["10.244.0.10", "10.244.0.9"]);
    assert_eq!(subset["notReadyAddresses"][0]["ip"], "10.244.0.11");
    assert_eq!(subset["ports"], json!([{"name": "web", "port": 8080, "protocol": "TCP"}]));
    let address = &subset["addresses"][0];
    assert_eq!(address["nodeName"], "node-a");
    assert_eq!(address["targetRef"]["kind"], "Pod");
    assert_eq!(address["targetRef"]["name"], "b");
    assert_eq!(ep["metadata"]["labels"]["team"], "a");
    assert!(ep["metadata"]["ownerReferences"].is_null(), "{ep}");
    assert!(ep["metadata"]["annotations"]["endpoints.kubernetes.io/last-change-trigger-time"]
        .is_string());
    assert_eq!(ep["metadata"]["managedFields"][0]["manager"], "kube-controller-manager");
    let row = k.ok(&["get", "endpoints", "web", "--no-headers"]);
    assert_eq!(row.split_whitespace().nth(1), Some("10.244.0.10:8080,10.244.0.9:8080"), "{row}");

    // One slice, owned by the service, with kube's labels and each endpoint's conditions.
    let slices = eventually(Duration::from_secs(10), || {
        let slices = slices_of(&s, "ep", "web");
        (slices.len() == 1 && slices[0]["endpoints"].as_array()?.len() == 3).then_some(slices)
    });
    let slice = &slices[0];
    assert!(slice["metadata"]["name"].as_str().unwrap().starts_with("web-"));
    assert_eq!(slice["metadata"]["generateName"], "web-");
    assert_eq!(slice["addressType"], "IPv4");
    let labels = &slice["metadata"]["labels"];
    assert_eq!(labels["endpointslice.kubernetes.io/managed-by"], "endpointslice-controller.k8s.io");
    assert_eq!(labels["team"], "a");
    let owner = &slice["metadata"]["ownerReferences"][0];
    assert_eq!((&owner["kind"], &owner["uid"]), (&json!("Service"), &svc["metadata"]["uid"]));
    assert_eq!(owner["controller"], true);
    assert_eq!(slice["ports"], json!([{"name": "web", "port": 8080, "protocol": "TCP"}]));
    let not_ready = slice["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["addresses"][0] == "10.244.0.11")
        .unwrap();
    assert_eq!(
        not_ready["conditions"],
        json!({"ready": false, "serving": false, "terminating": false})
    );
    assert_eq!((&not_ready["nodeName"], &not_ready["zone"]), (&json!("node-a"), &json!("z1")));
    let row = k.ok(&["get", "endpointslices", "--no-headers"]);
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[1..4], ["IPv4", "8080", "10.244.0.10,10.244.0.11,10.244.0.9"], "{row}");

    // A pod being deleted (bound to a node no kubelet runs here, so it stays Terminating)
    // leaves the endpoints and stays in the slice as terminating, serving still (K8S
    // pkg/controller/util/endpoint ShouldPodBeInEndpoints, includeTerminating for slices);
    // force-deleted, it leaves both.
    let r = s.delete("/api/v1/namespaces/ep/pods/a");
    assert_eq!(r.status, 200, "{}", r.text());
    eventually(Duration::from_secs(10), || {
        let ep = get(&s, "/api/v1/namespaces/ep/endpoints/web")?;
        (ep["subsets"][0]["addresses"].as_array()?.len() == 1).then_some(())
    });
    eventually(Duration::from_secs(10), || {
        let slice = slices_of(&s, "ep", "web").into_iter().next()?;
        let endpoints = slice["endpoints"].as_array()?.clone();
        let a = endpoints.iter().find(|e| e["addresses"][0] == "10.244.0.9")?;
        (a["conditions"] == json!({"ready": false, "serving": true, "terminating": true}))
            .then_some(())
    });
    let r = s.delete("/api/v1/namespaces/ep/pods/a?gracePeriodSeconds=0");
    assert_eq!(r.status, 200, "{}", r.text());
    eventually(Duration::from_secs(10), || {
        (slices_of(&s, "ep", "web")[0]["endpoints"].as_array()?.len() == 2).then_some(())
    });

    // The service goes: its endpoints are deleted, its slices collected with it.
    let r = s.delete("/api/v1/namespaces/ep/services/web");
    assert_eq!(r.status, 200, "{}", r.text());
    eventually(Duration::from_secs(10), || {
        get(&s, "/api/v1/namespaces/ep/endpoints/web").is_none().then_some(())
    });
    eventually(Duration::from_secs(15), || slices_of(&s, "ep", "web").is_empty().then_some(()));
}

#[test]
fn a_service_selecting_nothing_has_empty_endpoints_and_a_placeholder_slice() {
    let s = TestServer::start();
    s.namespace("none");
    let k = Kubectl::in_namespace(&s, "none");
    service(&s, "none", "lonely", json!({"app": "nobody"}));
    let ep =
        eventually(Duration::from_secs(10), || get(&s, "/api/v1/namespaces/none/endpoints/lonely"));
    assert!(ep["subsets"].is_null(), "{ep}");
    let row = k.ok(&["get", "endpoints", "lonely", "--no-headers"]);
    assert_eq!(row.split_whitespace().nth(1), Some("<none>"), "{row}");
    let slices = eventually(Duration::from_secs(10), || {
        let slices = slices_of(&s, "none", "lonely");
        (!slices.is_empty()).then_some(slices)
    });
    assert_eq!(slices.len(), 1);
    assert_eq!(slices[0]["endpoints"], json!([]));
    assert!(slices[0]["ports"].is_null());
    let row = k.ok(&["get", "endpointslices", "--no-headers"]);
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[1..4], ["IPv4", "<unset>", "<unset>"], "{row}");

    // A service without a selector: its endpoints are its owner's, the controllers leave it.
    created(
        &s,
        "/api/v1/namespaces/none/services",
        json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "manual"}, "spec": {"ports": [{"port": 5432}]}}),
    );
    created(
        &s,
        "/api/v1/namespaces/none/endpoints",
        json!({"apiVersion": "v1", "kind": "Endpoints",
        "metadata": {"name": "manual"},
        "subsets": [{"addresses": [{"ip": "192.0.2.7"}], "ports": [{"port": 5432}]}]}),
    );
    std::thread::sleep(Duration::from_millis(500));
    let ep = get(&s, "/api/v1/namespaces/none/endpoints/manual").unwrap();
    assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], "192.0.2.7");
    assert!(slices_of(&s, "none", "manual").is_empty());
}

#[test]
fn a_service_over_a_vms_labels_lists_its_vmi_address() {
    let s = simulating(&["--simulate-speed", "0.1"]);
    s.namespace("vmsvc");
    let k = Kubectl::in_namespace(&s, "vmsvc");
    let vm = json!({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
        "metadata": {"name": "db"},
        "spec": {"runStrategy": "Always", "template": {
            "metadata": {"labels": {"app": "db"}},
            "spec": {"domain": {"devices": {}, "resources": {"requests": {"memory": "64Mi"}}},
                     "volumes": [{"name": "root", "containerDisk": {"image": "quay.io/containerdisks/fedora:40"}}]}}}});
    created(&s, "/apis/kubevirt.io/v1/namespaces/vmsvc/virtualmachines", vm);
    // kubectl's own: selector and label app=db, port 5432 to 5432.
    k.ok(&["create", "service", "clusterip", "db", "--tcp=5432:5432"]);
    let wide = k.ok(&["get", "svc", "db", "-o", "wide", "--no-headers"]);
    assert_eq!(wide.split_whitespace().last(), Some("app=db"), "{wide}");
    let vmi = eventually(Duration::from_secs(15), || {
        let vmi = get(&s, "/apis/kubevirt.io/v1/namespaces/vmsvc/virtualmachineinstances/db")?;
        vmi["status"]["interfaces"][0]["ipAddress"].as_str()?;
        Some(vmi)
    });
    let ip = vmi["status"]["interfaces"][0]["ipAddress"].as_str().unwrap().to_string();
    let row = eventually(Duration::from_secs(15), || {
        let row = k.ok(&["get", "endpoints", "db", "--no-headers"]);
        row.contains(&ip).then_some(row)
    });
    assert_eq!(row.split_whitespace().nth(1), Some(format!("{ip}:5432").as_str()), "{row}");
    let ep = get(&s, "/api/v1/namespaces/vmsvc/endpoints/db").unwrap();
    let target = &ep["subsets"][0]["addresses"][0]["targetRef"];
    assert!(target["name"].as_str().unwrap().starts_with("virt-launcher-db-"), "{ep}");
    assert_eq!(ep["subsets"][0]["addresses"][0]["nodeName"], vmi["status"]["nodeName"]);
    let slices = eventually(Duration::from_secs(10), || {
        let slices = slices_of(&s, "vmsvc", "db");
        (slices.len() == 1 && slices[0]["endpoints"].as_array()?.len() == 1).then_some(slices)
    });
    assert_eq!(slices[0]["endpoints"][0]["addresses"][0], json!(ip));
    assert_eq!(slices[0]["endpoints"][0]["conditions"]["ready"], true);

    // Stopped: the pod goes, and the address with it.
    k.ok(&["patch", "vm", "db", "--type", "merge", "-p", r#"{"spec":{"runStrategy":"Halted"}}"#]);
    eventually(Duration::from_secs(15), || {
        let ep = get(&s, "/api/v1/namespaces/vmsvc/endpoints/db")?;
        ep["subsets"].is_null().then_some(())
    });
}
