//! kube's core/v1 Node, Pod, Service, Endpoints, PersistentVolumeClaim and PersistentVolume,
//! storage.k8s.io/v1 StorageClass and discovery.k8s.io/v1 EndpointSlice: kubectl reads and
//! writes them by their names and short names, sends protobuf for them, selects pods by kube's
//! field labels (K8S pkg/apis/core/v1/conversion.go), and their status is a subresource.

use serde_json::{json, Value};

use crate::common::{assert_status, names, Kubectl, TestServer};

const NS: &str = "w";
const MERGE: &str = "application/merge-patch+json";

const WORLD: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: node01, labels: {kubernetes.io/hostname: node01}}
spec: {podCIDR: 10.244.0.0/24}
---
apiVersion: v1
kind: Pod
metadata: {name: web, labels: {app: web}}
spec:
  nodeName: node01
  restartPolicy: Never
  containers:
  - name: c
    image: busybox
    resources: {requests: {cpu: 2, memory: 64Mi}, limits: {cpu: 0.5}}
    ports: [{containerPort: 8080}]
---
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  # No selector: its Endpoints and EndpointSlice are written here, not by the controllers.
  ports: [{port: 80, targetPort: 8080}, {name: named, port: 81, targetPort: http}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: web}
subsets: [{addresses: [{ip: 10.244.0.5}], ports: [{port: 8080}]}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-abc, labels: {kubernetes.io/service-name: web}}
addressType: IPv4
endpoints: [{addresses: [10.244.0.5]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: disk}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv1}
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], hostPath: {path: /data/pv1}}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local}
provisioner: kubernetes.io/no-provisioner
"#;

fn world() -> (TestServer, Kubectl) {
    let s = TestServer::start();
    s.namespace(NS);
    let k = Kubectl::in_namespace(&s, NS);
    let file = k.file("world.yaml", WORLD);
    k.ok(&["apply", "-f", file.to_str().unwrap()]);
    (s, k)
}

fn json_of(k: &Kubectl, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    serde_json::from_str(&k.ok(&all)).expect("kubectl -o json")
}

#[test]
fn kubectl_reads_and_writes_the_world_kinds_by_name_and_short_name() {
    let (_s, k) = world();
    let listed = k.ok(&["get", "nodes,pods,svc,ep,endpointslices,pvc,pv,sc", "-o", "name"]);
    let listed: Vec<&str> = listed.lines().collect();
    assert_eq!(
        listed,
        [
            "node/node01",
            "pod/web",
            "service/web",
            "endpoints/web",
            "endpointslice.discovery.k8s.io/web-abc",
            "persistentvolumeclaim/disk",
            "persistentvolume/pv1",
            "storageclass.storage.k8s.io/local",
        ]
    );
    for (short, name) in [
        ("no", "node/node01"),
        ("po", "pod/web"),
        ("svc", "service/web"),
        ("ep", "endpoints/web"),
        ("pvc", "persistentvolumeclaim/disk"),
        ("pv", "persistentvolume/pv1"),
        ("sc", "storageclass.storage.k8s.io/local"),
    ] {
        assert_eq!(k.ok(&["get", short, "-o", "name"]).trim(), name, "kubectl get {short}");
    }
    // Pods and services are in the `all` category, as in kube.
    let all = k.ok(&["get", "all", "-o", "name"]);
    assert!(all.contains("pod/web") && all.contains("service/web"), "{all}");
    // A Quantity written as a number reads back as kube serializes it; an IntOrString keeps
    // its form.
    let pod = json_of(&k, &["get", "pod", "web"]);
    let resources = &pod["spec"]["containers"][0]["resources"];
    assert_eq!(resources["requests"], json!({"cpu": "2", "memory": "64Mi"}));
    assert_eq!(resources["limits"], json!({"cpu": "500m"}));
    let svc = json_of(&k, &["get", "svc", "web"]);
    let targets: Vec<&Value> =
        svc["spec"]["ports"].as_array().unwrap().iter().map(|p| &p["targetPort"]).collect();
    assert_eq!(targets, [&json!(8080), &json!("http")]);
    // Deletes, namespaced and cluster-scoped; a Bound volume goes once its claim has gone
    // (K8S pkg/controller/volume/pvprotection). The pod is bound to a node no kubelet runs, so
    // only a forced delete removes it at once (K8S pkg/registry/core/pod/strategy.go
    // CheckGracefulDelete; without --force it would stay Terminating).
    k.ok(&["delete", "pod/web", "--force", "--grace-period=0"]);
    k.ok(&["delete", "pvc/disk", "pv/pv1", "sc/local", "--timeout=20s"]);
    assert_eq!(k.ok(&["get", "pods,pvc,pv,sc", "-o", "name"]).trim(), "");
}

#[test]
fn pods_are_selected_by_kubes_field_labels() {
    let (s, k) = world();
    let other = json!({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": "idle", "namespace": NS},
                       "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    let r = s.post(&format!("/api/v1/namespaces/{NS}/pods"), &other);
    assert_eq!(r.status, 201, "{}", r.text());
    for selector in ["spec.nodeName=node01", "spec.host=node01", "spec.restartPolicy=Never"] {
        let got = k.ok(&["get", "pods", "--field-selector", selector, "-o", "name"]);
        assert_eq!(got.trim(), "pod/web", "{selector}");
    }
    let unscheduled = k.ok(&["get", "pods", "--field-selector", "spec.nodeName=", "-o", "name"]);
    assert_eq!(unscheduled.trim(), "pod/idle");
    let r = s.get(&format!("/api/v1/namespaces/{NS}/pods?fieldSelector=spec.containers=c"));
    let st = assert_status(&r, 400, "BadRequest");
    assert_eq!(st["message"], "field label not supported: spec.containers");
    let all = s.get_json("/api/v1/pods?fieldSelector=metadata.name%3Dweb");
    assert_eq!(names(&all), ["web"]);
    // A node that was never cordoned reads `spec.unschedulable=false`, as kube's Go struct does.
    let schedulable =
        ["get", "nodes", "--field-selector", "spec.unschedulable=false", "-o", "name"];
    assert_eq!(k.ok(&schedulable).trim(), "node/node01");
    k.ok(&["cordon", "node01"]);
    assert_eq!(k.ok(&schedulable).trim(), "");
    let cordoned =
        k.ok(&["get", "nodes", "--field-selector", "spec.unschedulable=true", "-o", "name"]);
    assert_eq!(cordoned.trim(), "node/node01");
}

#[test]
fn kubectl_create_service_sends_protobuf_and_ports_keep_their_form() {
    let s = TestServer::start();
    s.namespace(NS);
    let k = Kubectl::in_namespace(&s, NS);
    // kube's typed client sends a built-in kind as protobuf: the IntOrString targetPort
    // arrives as its message.
    k.ok(&["create", "service", "clusterip", "numbered", "--tcp=80:8080"]);
    k.ok(&["create", "service", "clusterip", "named", "--tcp=81:http"]);
    let numbered = json_of(&k, &["get", "svc", "numbered"]);
    assert_eq!(
        numbered["spec"]["ports"],
        json!([{"name": "80-8080", "port": 80, "protocol": "TCP", "targetPort": 8080}])
    );
    assert_eq!(numbered["spec"]["selector"], json!({"app": "numbered"}));
    let named = json_of(&k, &["get", "svc", "named"]);
    assert_eq!(named["spec"]["ports"][0]["targetPort"], "http");
}

#[test]
fn status_is_a_subresource_of_pods_nodes_services_and_volumes() {
    let (s, _k) = world();
    let phase = |p: &str| json!({"phase": p});
    let ingress = json!({"loadBalancer": {"ingress": [{"ip": "192.0.2.1"}]}});
    for (path, status) in [
        (format!("/api/v1/namespaces/{NS}/pods/web"), phase("Running")),
        ("/api/v1/nodes/node01".to_string(), phase("Running")),
        (format!("/api/v1/namespaces/{NS}/services/web"), ingress),
        // Fields the volume binder leaves alone (it writes the phases).
        (
            format!("/api/v1/namespaces/{NS}/persistentvolumeclaims/disk"),
            json!({"conditions": [{"type": "Resizing", "status": "True"}]}),
        ),
        ("/api/v1/persistentvolumes/pv1".to_string(), json!({"message": "checked"})),
    ] {
        let status = json!({ "status": status });
        let main = s.patch(&path, MERGE, &status).json();
        assert_ne!(main.get("status"), Some(&status["status"]), "{path}: {main}");
        let sub = s.patch(&format!("{path}/status"), MERGE, &status).json();
        // What the patch set; the volume binder may have written more beside it.
        for (k, v) in status["status"].as_object().unwrap() {
            assert_eq!(&sub["status"][k], v, "{path}: {sub}");
        }
    }
}

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

/// The Table's header names and its first row's cells, as `kubectl get -o wide` shows them.
fn table(s: &TestServer, path: &str) -> (Vec<String>, Vec<Value>) {
    let r = s.request("GET", path, &[("Accept", TABLE)], None);
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    let t = r.json();
    let names = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect();
    let cells = t["rows"][0]["cells"].as_array().unwrap().clone();
    (names, cells)
}

/// kube's printers (K8S pkg/printers/internalversion/printers.go): every column and cell of
/// each kind, wide, as kube-apiserver's Table has them.
#[test]
fn tables_print_the_world_kinds_as_kubes_printers_do() {
    let (s, k) = world();
    let status = |path: &str, status: Value| {
        let r = s.patch(&format!("{path}/status"), MERGE, &json!({ "status": status }));
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    };
    status(
        &format!("/api/v1/namespaces/{NS}/pods/web"),
        json!({"phase": "Running", "podIP": "10.244.0.5", "podIPs": [{"ip": "10.244.0.5"}],
               "conditions": [{"type": "Ready", "status": "True"}],
               "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0, "image": "busybox",
                                      "imageID": "", "state": {"running": {}}}]}),
    );
    status(
        "/api/v1/nodes/node01",
        json!({"conditions": [{"type": "Ready", "status": "True"}],
               "addresses": [{"type": "InternalIP", "address": "192.168.66.101"},
                             {"type": "Hostname", "address": "node01"}],
               "nodeInfo": {"kubeletVersion": "v1.32.0", "osImage": "Debian GNU/Linux 12",
                            "kernelVersion": "6.1.0", "containerRuntimeVersion": "containerd://1.7.24",
                            "architecture": "amd64", "bootID": "b", "kubeProxyVersion": "v1.32.0",
                            "machineID": "m", "operatingSystem": "linux", "systemUUID": "u"}}),
    );
    // The volume binder binds the claim to the volume (both of no class, the size fits).
    crate::common::eventually(std::time::Duration::from_secs(10), || {
        let pv = s.get_json("/api/v1/persistentvolumes/pv1");
        (pv["status"]["phase"] == "Bound").then_some(())
    });
    k.ok(&["cordon", "node01"]);
    k.ok(&["annotate", "sc", "local", "storageclass.kubernetes.io/is-default-class=true"]);
    let age = |cells: &[Value], at: usize| {
        assert!(cells[at].as_str().unwrap().ends_with('s'), "an age: {}", cells[at]);
    };

    let (names, cells) = table(&s, "/api/v1/nodes");
    assert_eq!(
        names,
        [
            "Name",
            "Status",
            "Roles",
            "Age",
            "Version",
            "Internal-IP",
            "External-IP",
            "OS-Image",
            "Kernel-Version",
            "Container-Runtime"
        ]
    );
    age(&cells, 3);
    assert_eq!(cells[..3], [json!("node01"), json!("Ready,SchedulingDisabled"), json!("<none>")]);
    assert_eq!(
        cells[4..],
        [
            json!("v1.32.0"),
            json!("192.168.66.101"),
            json!("<none>"),
            json!("Debian GNU/Linux 12"),
            json!("6.1.0"),
            json!("containerd://1.7.24")
        ]
    );

    let (names, cells) = table(&s, &format!("/api/v1/namespaces/{NS}/pods"));
    assert_eq!(
        names,
        [
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates"
        ]
    );
    assert_eq!(cells[..4], [json!("web"), json!("1/1"), json!("Running"), json!("0")]);
    assert_eq!(
        cells[5..],
        [json!("10.244.0.5"), json!("node01"), json!("<none>"), json!("<none>")]
    );

    let (names, cells) = table(&s, &format!("/api/v1/namespaces/{NS}/services"));
    assert_eq!(names, ["Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"]);
    // The cluster IP the registry allocated (world/services.rs has the rules).
    let ip =
        s.get_json(&format!("/api/v1/namespaces/{NS}/services/web"))["spec"]["clusterIP"].clone();
    assert!(ip.as_str().is_some_and(|ip| ip.starts_with("10.")), "{ip}");
    assert_eq!(
        cells[..5],
        [json!("web"), json!("ClusterIP"), ip, json!("<none>"), json!("80/TCP,81/TCP")]
    );
    assert_eq!(cells[6], "<none>");

    let (names, cells) = table(&s, &format!("/api/v1/namespaces/{NS}/endpoints"));
    assert_eq!(names, ["Name", "Endpoints", "Age"]);
    assert_eq!(cells[..2], [json!("web"), json!("10.244.0.5:8080")]);

    let (names, cells) =
        table(&s, &format!("/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices"));
    assert_eq!(names, ["Name", "AddressType", "Ports", "Endpoints", "Age"]);
    assert_eq!(
        cells[..4],
        [json!("web-abc"), json!("IPv4"), json!("<unset>"), json!("10.244.0.5")]
    );

    let (names, cells) = table(&s, &format!("/api/v1/namespaces/{NS}/persistentvolumeclaims"));
    assert_eq!(
        names,
        [
            "Name",
            "Status",
            "Volume",
            "Capacity",
            "Access Modes",
            "StorageClass",
            "VolumeAttributesClass",
            "Age",
            "VolumeMode"
        ]
    );
    assert_eq!(
        cells[..7],
        [
            json!("disk"),
            json!("Bound"),
            json!("pv1"),
            json!("1Gi"),
            json!("RWO"),
            json!(""),
            json!("<unset>")
        ]
    );
    assert_eq!(cells[8], "Filesystem");

    let (names, cells) = table(&s, "/api/v1/persistentvolumes");
    assert_eq!(
        names,
        [
            "Name",
            "Capacity",
            "Access Modes",
            "Reclaim Policy",
            "Status",
            "Claim",
            "StorageClass",
            "VolumeAttributesClass",
            "Reason",
            "Age",
            "VolumeMode"
        ]
    );
    assert_eq!(
        cells[..9],
        [
            json!("pv1"),
            json!("1Gi"),
            json!("RWO"),
            json!("Retain"),
            json!("Bound"),
            json!("w/disk"),
            json!(""),
            json!("<unset>"),
            json!("")
        ]
    );

    let (names, cells) = table(&s, "/apis/storage.k8s.io/v1/storageclasses");
    assert_eq!(
        names,
        [
            "Name",
            "Provisioner",
            "ReclaimPolicy",
            "VolumeBindingMode",
            "AllowVolumeExpansion",
            "Age"
        ]
    );
    assert_eq!(
        cells[..5],
        [
            json!("local (default)"),
            json!("kubernetes.io/no-provisioner"),
            json!("Delete"),
            json!("Immediate"),
            json!(false)
        ]
    );

    // kubectl shows the wide columns with -o wide only.
    let wide = k.ok(&["get", "nodes", "-o", "wide"]);
    let header: Vec<&str> = wide.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        [
            "NAME",
            "STATUS",
            "ROLES",
            "AGE",
            "VERSION",
            "INTERNAL-IP",
            "EXTERNAL-IP",
            "OS-IMAGE",
            "KERNEL-VERSION",
            "CONTAINER-RUNTIME"
        ]
    );
    let narrow = k.ok(&["get", "pods"]);
    let header: Vec<&str> = narrow.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]);
}

/// kube's defaults (K8S pkg/apis/core/v1/defaults.go, storage/v1/defaults.go): what a client
/// leaves out reads back as kube fills it, a new claim or volume is Pending.
#[test]
fn the_world_kinds_read_back_with_kubes_defaults() {
    let (s, k) = world();
    let pod = json_of(&k, &["get", "pod", "web"]);
    let spec = &pod["spec"];
    for (field, want) in [
        ("dnsPolicy", json!("ClusterFirst")),
        ("schedulerName", json!("default-scheduler")),
        ("terminationGracePeriodSeconds", json!(30)),
        ("enableServiceLinks", json!(true)),
        ("securityContext", json!({})),
        ("restartPolicy", json!("Never")),
    ] {
        assert_eq!(spec[field], want, "spec.{field}");
    }
    let c = &spec["containers"][0];
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(c["terminationMessagePolicy"], "File");
    assert_eq!(c["ports"][0]["protocol"], "TCP");
    let svc = json_of(&k, &["get", "svc", "web"]);
    assert_eq!(
        (&svc["spec"]["type"], &svc["spec"]["sessionAffinity"]),
        (&json!("ClusterIP"), &json!("None"))
    );
    // A new claim and volume read back Pending (the binder moves them on after).
    let claim = s.post(
        &format!("/api/v1/namespaces/{NS}/persistentvolumeclaims"),
        &json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "later"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    );
    assert_eq!(claim.status, 201, "{}", claim.text());
    let claim = claim.json();
    assert_eq!(claim["status"], json!({"phase": "Pending"}));
    assert_eq!(claim["spec"]["volumeMode"], "Filesystem");
    let pv = s.post(
        "/api/v1/persistentvolumes",
        &json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv2"},
                "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                         "hostPath": {"path": "/data/pv2"}}}),
    );
    assert_eq!(pv.status, 201, "{}", pv.text());
    let pv = pv.json();
    assert_eq!(pv["status"], json!({"phase": "Pending"}));
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
    let sc = json_of(&k, &["get", "sc", "local"]);
    assert_eq!(
        (&sc["reclaimPolicy"], &sc["volumeBindingMode"]),
        (&json!("Delete"), &json!("Immediate"))
    );
}

/// kube's pod strategy: limits default the requests (SetDefaults_Pod) and a new pod's status is
/// Pending with the QoS class the API server computes (K8S pkg/registry/core/pod/strategy.go
/// PrepareForCreate, pkg/apis/core/helper/qos/qos.go), which a status write without it keeps.
#[test]
fn a_new_pod_has_its_qos_class_and_its_limits_as_requests() {
    let (s, k) = world();
    let manifest = r#"
apiVersion: v1
kind: Pod
metadata: {name: sized}
spec:
  containers:
  - name: c
    image: nginx
    resources: {limits: {cpu: "1", memory: 1Gi}}
status: {phase: Running, qosClass: BestEffort}
"#;
    let file = k.file("sized.yaml", manifest);
    k.ok(&["create", "-f", file.to_str().unwrap()]);
    let pod = json_of(&k, &["get", "pod", "sized"]);
    assert_eq!(
        pod["spec"]["containers"][0]["resources"]["requests"],
        json!({"cpu": "1", "memory": "1Gi"})
    );
    assert_eq!(pod["status"], json!({"phase": "Pending", "qosClass": "Guaranteed"}));
    let described = k.ok(&["describe", "pod", "sized"]);
    assert!(described.contains("QoS Class:        Guaranteed"), "{described}");
    // The world's pod limits cpu alone; one asking for nothing is BestEffort.
    assert_eq!(json_of(&k, &["get", "pod", "web"])["status"]["qosClass"], "Burstable");
    k.ok(&["run", "bare", "--image=nginx"]);
    assert_eq!(json_of(&k, &["get", "pod", "bare"])["status"]["qosClass"], "BestEffort");
    let written = s.put(
        &format!("/api/v1/namespaces/{NS}/pods/sized/status"),
        &json!({"apiVersion": "v1", "kind": "Pod", "metadata": pod["metadata"], "spec": pod["spec"],
                "status": {"phase": "Running"}}),
    );
    assert_eq!(written.status, 200, "{}", written.text());
    assert_eq!(written.json()["status"], json!({"phase": "Running", "qosClass": "Guaranteed"}));
}

/// kube validates a Service's name as an RFC 1035 label (a letter first; K8S
/// pkg/apis/core/validation/validation.go `ValidateServiceName`), other kinds' as subdomains.
#[test]
fn a_service_is_named_by_an_rfc_1035_label() {
    let s = TestServer::start();
    s.namespace(NS);
    let svc = |name: &str| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
               "spec": {"ports": [{"port": 80}]}})
    };
    let r = s.post(&format!("/api/v1/namespaces/{NS}/services"), &svc("1web"));
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["message"],
        "Service \"1web\" is invalid: metadata.name: Invalid value: \"1web\": a DNS-1035 label must \
         consist of lower case alphanumeric characters or '-', start with an alphabetic character, \
         and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for \
         validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    );
    let r = s.post(&format!("/api/v1/namespaces/{NS}/services"), &svc("web.a"));
    assert_status(&r, 422, "Invalid");
    let r = s.post(&format!("/api/v1/namespaces/{NS}/services"), &svc("web-1"));
    assert_eq!(r.status, 201, "{}", r.text());
    // A pod's name is a subdomain: a digit first and dots are fine.
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "1web.a"},
                     "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    let r = s.post(&format!("/api/v1/namespaces/{NS}/pods"), &pod);
    assert_eq!(r.status, 201, "{}", r.text());
}
