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
  selector: {app: web}
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
    // Deletes, namespaced and cluster-scoped.
    k.ok(&["delete", "pod/web", "pv/pv1", "sc/local"]);
    assert_eq!(k.ok(&["get", "pods,pv,sc", "-o", "name"]).trim(), "");
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
        (format!("/api/v1/namespaces/{NS}/persistentvolumeclaims/disk"), phase("Bound")),
        ("/api/v1/persistentvolumes/pv1".to_string(), phase("Bound")),
    ] {
        let status = json!({ "status": status });
        let main = s.patch(&path, MERGE, &status).json();
        assert_ne!(main.get("status"), Some(&status["status"]), "{path}: {main}");
        let sub = s.patch(&format!("{path}/status"), MERGE, &status).json();
        assert_eq!(sub["status"], status["status"], "{path}");
    }
}
