//! What kube-apiserver itself does for a Service (K8S pkg/registry/core/service/storage/
//! storage.go and alloc.go, 1.32): a cluster IP from `--service-cluster-ip-range`, node ports
//! from `--service-node-port-range` (random, the upper part of each range first), kube's 422s
//! for addresses taken or out of range, its 500 for a full range, release on delete, kube's
//! update rules, the conditional defaults (K8S pkg/apis/core/v1/defaults.go) and the server's
//! own `default/kubernetes` Service (K8S pkg/controlplane/controller/kubernetesservice).

use std::net::Ipv4Addr;

use serde_json::{json, Value};

use crate::common::{assert_status, Kubectl, ServerOptions, TestServer};

const NS: &str = "svc";
const MERGE: &str = "application/merge-patch+json";

fn services(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/services")
}

fn json_of(k: &Kubectl, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&k.ok(&all)).expect("kubectl -o json")
}

fn ip_of(svc: &Value) -> Ipv4Addr {
    let ip = svc["spec"]["clusterIP"].as_str().unwrap_or_else(|| panic!("no clusterIP: {svc}"));
    assert_eq!(svc["spec"]["clusterIPs"], json!([ip]), "{svc}");
    ip.parse().unwrap_or_else(|_| panic!("not an IPv4 address: {ip}"))
}

fn node_ports(svc: &Value) -> Vec<u64> {
    svc["spec"]["ports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["nodePort"].as_u64().unwrap())
        .collect()
}

fn svc(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

/// The server with small ranges, and a namespace for the tests' Services.
fn small(cidr: &str, ports: &str) -> TestServer {
    let args = ["--service-cluster-ip-range", cidr, "--service-node-port-range", ports];
    let s = TestServer::start_with(ServerOptions {
        args: args.map(String::from).to_vec(),
        ..Default::default()
    });
    s.namespace(NS);
    s
}

#[test]
fn kubectl_creates_services_with_a_cluster_ip_and_node_ports_from_the_upper_bands() {
    let s = TestServer::start();
    s.namespace(NS);
    let k = Kubectl::in_namespace(&s, NS);
    k.ok(&["create", "service", "clusterip", "web", "--tcp=80:8080"]);
    k.ok(&["create", "service", "nodeport", "ssh", "--tcp=2222:22"]);
    let web = json_of(&k, &["get", "svc", "web"]);
    let ip = u32::from(ip_of(&web));
    // 10.96.0.0/12, the first 256 usable addresses kept for static choices (ipallocator's
    // calculateRangeOffset): 10.96.1.1 up to the broadcast address, excluded.
    let (low, high) =
        (u32::from(Ipv4Addr::new(10, 96, 1, 1)), u32::from(Ipv4Addr::new(10, 111, 255, 255)));
    assert!((low..high).contains(&ip), "{}", Ipv4Addr::from(ip));
    let spec = &web["spec"];
    assert_eq!(
        (&spec["ipFamilies"], &spec["ipFamilyPolicy"], &spec["internalTrafficPolicy"]),
        (&json!(["IPv4"]), &json!("SingleStack"), &json!("Cluster"))
    );
    assert_eq!(spec.get("externalTrafficPolicy"), None);
    assert_eq!(spec["ports"][0].get("nodePort"), None);
    let ssh = json_of(&k, &["get", "svc", "ssh"]);
    assert_ne!(ip_of(&ssh), Ipv4Addr::from(ip));
    let np = node_ports(&ssh)[0];
    // 30000-32767 keeps its first 86 ports (portallocator's calculateRangeOffset).
    assert!((30086..=32767).contains(&np), "{np}");
    assert_eq!(ssh["spec"]["externalTrafficPolicy"], "Cluster");
    // The allocated fields are the server's, not the client's (kube allocates after the field
    // manager has recorded the request).
    let stored = s.get_json(&format!("{}/ssh", services(NS)));
    let owned = stored["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"].clone();
    assert!(owned.get("f:clusterIP").is_none() && owned.get("f:type").is_some(), "{owned}");
    let wide = k.ok(&["get", "svc", "-o", "wide"]);
    let lines: Vec<Vec<&str>> = wide.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(
        lines[0],
        ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"],
        "{wide}"
    );
    let ssh_line = lines.iter().find(|l| l[0] == "ssh").unwrap_or_else(|| panic!("{wide}"));
    let ssh_ip = ssh["spec"]["clusterIP"].as_str().unwrap().to_string();
    let port_cell = format!("2222:{np}/TCP");
    assert_eq!(ssh_line[1..5], ["NodePort", &ssh_ip, "<none>", &port_cell], "{wide}");
    assert_eq!(ssh_line[6], "app=ssh");
}

/// Dry run allocates nothing (kube's dry-run allocator answers the range's network address).
#[test]
fn a_dry_run_create_allocates_nothing() {
    let s = TestServer::start();
    s.namespace(NS);
    let r = s.post(
        &format!("{}?dryRun=All", services(NS)),
        &svc("dry", json!({"ports": [{"port": 80}]})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["spec"]["clusterIPs"], json!(["10.96.0.0"]));
    assert_eq!(s.get(&format!("{}/dry", services(NS))).status, 404);
}

#[test]
fn concurrent_creates_never_share_an_address_and_a_full_range_is_kubes_500() {
    // 10.0.0.0/29: six usable addresses, the first the server's own Service's (a range of 16 or
    // fewer keeps no lower band); five node ports.
    let s = small("10.0.0.0/29", "30000-30004");
    let k = Kubectl::in_namespace(&s, NS);
    let own = s.get_json("/api/v1/namespaces/default/services/kubernetes");
    assert_eq!(own["spec"]["clusterIP"], "10.0.0.1");
    let names: Vec<String> = (0..5).map(|i| format!("s{i}")).collect();
    let running: Vec<_> = names
        .iter()
        .map(|n| {
            let mut c = k.command(&["create", "service", "nodeport", n, "--tcp=80"]);
            c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
            c.spawn().expect("kubectl")
        })
        .collect();
    for child in running {
        let out = child.wait_with_output().expect("kubectl");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    let list = s.get_json(&services(NS));
    let items = list["items"].as_array().unwrap();
    let mut ips: Vec<Ipv4Addr> = items.iter().map(ip_of).collect();
    let mut ports: Vec<u64> = items.iter().flat_map(node_ports).collect();
    ips.sort();
    ports.sort();
    let want: Vec<Ipv4Addr> = (2..=6).map(|i| Ipv4Addr::new(10, 0, 0, i)).collect();
    assert_eq!(ips, want, "every address once, none the server's own");
    ports.dedup();
    assert_eq!(ports.len(), 5, "{ports:?}");
    assert!(ports.iter().all(|p| (30000..=30004).contains(p)), "{ports:?}");
    // The range is full: kube's InternalError, its message also the one cause.
    let r = s.post(&services(NS), &svc("full", json!({"ports": [{"port": 80}]})));
    let st = assert_status(&r, 500, "InternalError");
    assert_eq!(
        st["message"],
        "Internal error occurred: failed to allocate a serviceIP: range is full"
    );
    assert_eq!(
        st["details"],
        json!({"causes": [{"message": "failed to allocate a serviceIP: range is full"}]})
    );
    // A delete releases what the Service held: its address can be asked for by name.
    let freed = s.get_json(&format!("{}/s0", services(NS)));
    let (freed_ip, freed_port) = (ip_of(&freed).to_string(), node_ports(&freed)[0]);
    k.ok(&["delete", "svc", "s0"]);
    let two = svc(
        "two",
        json!({"type": "NodePort", "clusterIP": freed_ip,
                               "ports": [{"name": "a", "port": 80}, {"name": "b", "port": 81}]}),
    );
    let r = s.post(&services(NS), &two);
    let st = assert_status(&r, 500, "InternalError");
    assert_eq!(
        st["message"],
        "Internal error occurred: failed to allocate a nodePort: range is full"
    );
    // Nothing the failed create took stays taken.
    let one = svc(
        "one",
        json!({"type": "NodePort", "clusterIP": freed_ip,
                               "ports": [{"port": 80, "nodePort": freed_port}]}),
    );
    let r = s.post(&services(NS), &one);
    assert_eq!(r.status, 201, "{}", r.text());
}

/// The 422s of alloc.go's `allocIPs` and `initNodePorts` (messages from
/// ipallocator/interfaces.go and portallocator/allocator.go) and validation.go's forbidden
/// nodePort, as kubectl and a raw client see them.
#[test]
fn requested_addresses_taken_or_out_of_range_are_kubes_422s() {
    let s = TestServer::start();
    s.namespace(NS);
    let k = Kubectl::in_namespace(&s, NS);
    k.ok(&["create", "service", "clusterip", "a", "--clusterip=10.96.0.50", "--tcp=80"]);
    let invalid = |name: &str, field: &str, detail: &str| {
        json!({"name": name, "kind": "Service",
               "causes": [{"reason": "FieldValueInvalid", "message": detail, "field": field}]})
    };
    let r = s.post(
        &services(NS),
        &svc("b", json!({"clusterIP": "10.96.0.50", "ports": [{"port": 80}]})),
    );
    let st = assert_status(&r, 422, "Invalid");
    let taken = "Invalid value: []string{\"10.96.0.50\"}: failed to allocate IP 10.96.0.50: provided IP is already allocated";
    assert_eq!(st["message"], format!("Service \"b\" is invalid: spec.clusterIPs: {taken}"));
    assert_eq!(st["details"], invalid("b", "spec.clusterIPs", taken));
    let err =
        k.fails(&["create", "service", "clusterip", "c", "--clusterip=10.96.0.50", "--tcp=80"]);
    assert!(err.contains(&format!("Service \"c\" is invalid: spec.clusterIPs: {taken}")), "{err}");
    // The server's own Service holds the first address.
    let r = s
        .post(&services(NS), &svc("d", json!({"clusterIP": "10.96.0.1", "ports": [{"port": 80}]})));
    let st = assert_status(&r, 422, "Invalid");
    assert!(st["message"].as_str().unwrap().ends_with("provided IP is already allocated"), "{st}");
    let r = s.post(
        &services(NS),
        &svc("e", json!({"clusterIP": "192.168.0.1", "ports": [{"port": 80}]})),
    );
    let st = assert_status(&r, 422, "Invalid");
    let outside = "Invalid value: []string{\"192.168.0.1\"}: failed to allocate IP 192.168.0.1: the provided IP (192.168.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12";
    assert_eq!(st["details"], invalid("e", "spec.clusterIPs", outside));

    let node_port = |name: &str, np: u64| {
        svc(name, json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": np}]}))
    };
    let r = s.post(&services(NS), &node_port("f", 30500));
    assert_eq!(r.status, 201, "{}", r.text());
    let r = s.post(&services(NS), &node_port("g", 30500));
    let st = assert_status(&r, 422, "Invalid");
    let taken_port = "Invalid value: 30500: provided port is already allocated";
    assert_eq!(
        st["message"],
        format!("Service \"g\" is invalid: spec.ports[0].nodePort: {taken_port}")
    );
    assert_eq!(st["details"], invalid("g", "spec.ports[0].nodePort", taken_port));
    let r = s.post(&services(NS), &node_port("h", 8080));
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["message"],
        "Service \"h\" is invalid: spec.ports[0].nodePort: Invalid value: 8080: provided port is not in the valid range. The range of valid ports is 30000-32767"
    );
    let r = s.post(&services(NS), &svc("i", json!({"ports": [{"port": 80, "nodePort": 30600}]})));
    let st = assert_status(&r, 422, "Invalid");
    let forbidden = "Forbidden: may not be used when `type` is 'ClusterIP'";
    assert_eq!(
        st["message"],
        format!("Service \"i\" is invalid: spec.ports[0].nodePort: {forbidden}")
    );
    assert_eq!(
        st["details"]["causes"],
        json!([{"reason": "FieldValueForbidden", "message": forbidden, "field": "spec.ports[0].nodePort"}])
    );
    // Deleted, their addresses are free to ask for again.
    k.ok(&["delete", "svc", "a", "f"]);
    k.ok(&["create", "service", "clusterip", "a2", "--clusterip=10.96.0.50", "--tcp=80"]);
    let r = s.post(&services(NS), &node_port("f2", 30500));
    assert_eq!(r.status, 201, "{}", r.text());
}

/// Headless stays headless; kube's IP family fields follow (alloc.go `initIPFamilyFields`).
#[test]
fn a_headless_service_gets_no_address() {
    let s = TestServer::start();
    s.namespace(NS);
    let k = Kubectl::in_namespace(&s, NS);
    k.ok(&["create", "service", "clusterip", "h", "--clusterip=None"]);
    let h = json_of(&k, &["get", "svc", "h"]);
    assert_eq!(
        (&h["spec"]["clusterIP"], &h["spec"]["clusterIPs"], &h["spec"]["ipFamilyPolicy"]),
        (&json!("None"), &json!(["None"]), &json!("SingleStack"))
    );
    let wide = k.ok(&["get", "svc", "h"]);
    assert!(
        wide.lines().nth(1).is_some_and(|l| l.split_whitespace().nth(2) == Some("None")),
        "{wide}"
    );
}

/// kube's update rules (storage.go `beginUpdate`, strategy.go `dropTypeDependentFields`,
/// validation.go `ValidateServiceUpdate`).
#[test]
fn updates_keep_the_address_and_a_type_change_moves_node_ports() {
    let s = TestServer::start();
    s.namespace(NS);
    let path = format!("{}/t", services(NS));
    let body = svc("t", json!({"selector": {"app": "t"}, "ports": [{"name": "http", "port": 80}]}));
    let r = s.post(&services(NS), &body);
    assert_eq!(r.status, 201, "{}", r.text());
    let created = r.json();
    let ip = ip_of(&created).to_string();
    // A client resubmitting what it created, without the allocated fields, keeps them.
    let mut again = body.clone();
    again["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
    let r = s.put(&path, &again);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(ip_of(&r.json()).to_string(), ip);
    assert_eq!(
        r.json()["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"],
        "a no-op"
    );
    let r = s.patch(&path, MERGE, &json!({"spec": {"clusterIP": "10.96.5.5"}}));
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["message"],
        "Service \"t\" is invalid: spec.clusterIPs[0]: Invalid value: []string{\"10.96.5.5\"}: may not change once set"
    );
    // ClusterIP to NodePort gains node ports; back again drops them, and they are free.
    let r = s.patch(&path, MERGE, &json!({"spec": {"type": "NodePort"}}));
    assert_eq!(r.status, 200, "{}", r.text());
    let node_port = r.json();
    assert_eq!(ip_of(&node_port).to_string(), ip);
    let np = node_ports(&node_port)[0];
    assert!((30086..=32767).contains(&np), "{np}");
    assert_eq!(node_port["spec"]["externalTrafficPolicy"], "Cluster");
    let r = s.patch(&path, MERGE, &json!({"spec": {"type": "ClusterIP"}}));
    assert_eq!(r.status, 200, "{}", r.text());
    let back = r.json();
    assert_eq!(back["spec"]["ports"][0].get("nodePort"), None, "{back}");
    assert_eq!(back["spec"].get("externalTrafficPolicy"), None, "{back}");
    let other = svc("u", json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": np}]}));
    let r = s.post(&services(NS), &other);
    assert_eq!(r.status, 201, "{}", r.text());
    // A node port another Service holds cannot be taken by an update either.
    let r = s.patch(&path, MERGE, &json!({"spec": {"type": "NodePort", "ports": [{"name": "http", "port": 80, "nodePort": np}]}}));
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["message"],
        format!("Service \"t\" is invalid: spec.ports[0].nodePort: Invalid value: {np}: provided port is already allocated")
    );
}

/// kube-apiserver's own Service: the range's first address, 443 to the port it serves on.
#[test]
fn the_server_has_its_own_kubernetes_service() {
    let s = TestServer::start();
    let own = s.get_json("/api/v1/namespaces/default/services/kubernetes");
    let port: u64 = s.base.rsplit(':').next().unwrap().trim_end_matches('/').parse().unwrap();
    assert_eq!(
        own["metadata"]["labels"],
        json!({"component": "apiserver", "provider": "kubernetes"})
    );
    assert_eq!(
        own["spec"]["ports"],
        json!([{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}])
    );
    assert_eq!(ip_of(&own), Ipv4Addr::new(10, 96, 0, 1));
    let k = Kubectl::new(&s);
    let listed = k.ok(&["get", "svc"]);
    let row: Vec<&str> = listed.lines().nth(1).unwrap_or_default().split_whitespace().collect();
    assert_eq!(row[..5], ["kubernetes", "ClusterIP", "10.96.0.1", "<none>", "443/TCP"], "{listed}");
}

/// `kubectl expose` (what `virtctl expose` does for a VM) selects the pod's labels; the Service
/// it sends gets its addresses as any other, and `targetPort` its port (SetDefaults_Service).
#[test]
fn kubectl_expose_makes_a_node_port_service() {
    let s = TestServer::start();
    s.namespace(NS);
    let k = Kubectl::in_namespace(&s, NS);
    k.ok(&["run", "vm", "--image=busybox", "--labels=vm.kubevirt.io/name=vm", "--restart=Never"]);
    k.ok(&["expose", "pod", "vm", "--name=vm-ssh", "--port=22", "--type=NodePort"]);
    let svc = json_of(&k, &["get", "svc", "vm-ssh"]);
    assert_eq!(svc["spec"]["selector"], json!({"vm.kubevirt.io/name": "vm"}));
    ip_of(&svc);
    let np = node_ports(&svc)[0];
    assert!((30086..=32767).contains(&np), "{np}");
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 22);
    let listed = k.ok(&["get", "svc", "vm-ssh"]);
    assert!(listed.contains(&format!("22:{np}/TCP")), "{listed}");
}

/// One IPv4 range is a single-stack cluster: what asks for a second family is refused in
/// alloc.go's `initIPFamilyFields` words, a malformed address in validation.go's
/// `ValidateServiceClusterIPsRelatedFields` words.
#[test]
fn a_single_stack_cluster_refuses_what_needs_another_family() {
    let s = TestServer::start();
    s.namespace(NS);
    let refused = |name: &str, spec: Value| {
        let r = s.post(&services(NS), &svc(name, spec));
        assert_status(&r, 422, "Invalid")["message"].as_str().unwrap().to_string()
    };
    let ports = json!([{"port": 80}]);
    assert_eq!(
        refused("d", json!({"ipFamilyPolicy": "RequireDualStack", "selector": {"a": "b"}, "ports": ports})),
        "Service \"d\" is invalid: spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services"
    );
    assert_eq!(
        refused("v6", json!({"clusterIP": "fd00::10", "ports": ports})),
        "Service \"v6\" is invalid: spec.clusterIPs[0]: Invalid value: []string{\"fd00::10\"}: IPv6 is not configured on this cluster"
    );
    assert_eq!(
        refused("bad", json!({"clusterIP": "10.96.0.300", "ports": ports})),
        "Service \"bad\" is invalid: spec.clusterIPs[0]: Invalid value: \"10.96.0.300\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
    );
    // PreferDualStack settles for the one family there is.
    let r = s.post(
        &services(NS),
        &svc("p", json!({"ipFamilyPolicy": "PreferDualStack", "ports": ports})),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let p = r.json();
    assert_eq!(
        (&p["spec"]["ipFamilies"], &p["spec"]["ipFamilyPolicy"]),
        (&json!(["IPv4"]), &json!("PreferDualStack"))
    );
}
