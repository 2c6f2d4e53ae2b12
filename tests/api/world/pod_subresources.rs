//! kube's Pod `binding`, `eviction` and `log` subresources (K8S release-1.32
//! `pkg/registry/core/pod/storage/storage.go` BindingREST, `…/storage/eviction.go`
//! EvictionREST, `pkg/registry/core/pod/rest/log.go` and `strategy.go` LogLocation): listed in
//! discovery as kube-apiserver lists them, and answering with kube's codes and Status bodies.

use serde_json::{json, Value};

use crate::common::{assert_status, condition, managers, Kubectl, TestServer};

const NS: &str = "sub";
const PODS: &str = "/api/v1/namespaces/sub/pods";

fn pod(name: &str, containers: &[&str]) -> Value {
    let containers: Vec<Value> =
        containers.iter().map(|c| json!({"name": c, "image": "busybox"})).collect();
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": containers}})
}

fn server() -> TestServer {
    let s = TestServer::start();
    s.namespace(NS);
    s
}

fn create(s: &TestServer, body: &Value) -> Value {
    let r = s.post(PODS, body);
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

fn binding(name: &str, node: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
           "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
}

/// What kube's create handler answers for a Status Success with no code (create.go).
fn success() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
}

#[test]
fn discovery_lists_binding_eviction_and_log_as_kube_does() {
    let s = TestServer::start();
    let list = s.get_json("/api/v1");
    let resources = list["resources"].as_array().unwrap();
    let names: Vec<&str> = resources
        .iter()
        .filter_map(|r| r["name"].as_str())
        .filter(|n| n.starts_with("pods"))
        .collect();
    // kube's api/discovery/api__v1.json, less what this server does not serve (attach,
    // ephemeralcontainers, exec, portforward, proxy).
    assert_eq!(names, ["pods", "pods/binding", "pods/eviction", "pods/log", "pods/status"]);
    let entry = |name: &str| resources.iter().find(|r| r["name"] == name).unwrap().clone();
    assert_eq!(
        entry("pods/binding"),
        json!({"name": "pods/binding", "singularName": "", "namespaced": true, "kind": "Binding",
               "verbs": ["create"]})
    );
    assert_eq!(
        entry("pods/eviction"),
        json!({"name": "pods/eviction", "singularName": "", "namespaced": true,
               "group": "policy", "version": "v1", "kind": "Eviction", "verbs": ["create"]})
    );
    assert_eq!(
        entry("pods/log"),
        json!({"name": "pods/log", "singularName": "", "namespaced": true, "kind": "Pod",
               "verbs": ["get"]})
    );
    let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let doc = s.request("GET", "/api", &[("Accept", accept)], None).json();
    let pods = doc["items"][0]["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "pods")
        .unwrap()
        .clone();
    let subs: Vec<(Value, Value, Value)> = pods["subresources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["subresource"].clone(), s["responseKind"]["kind"].clone(), s["verbs"].clone()))
        .collect();
    assert_eq!(
        subs,
        [
            (json!("binding"), json!("Binding"), json!(["create"])),
            (json!("eviction"), json!("Eviction"), json!(["create"])),
            (json!("log"), json!("Pod"), json!(["get"])),
            (json!("status"), json!("Pod"), json!(["get", "patch", "update"])),
        ]
    );
    assert_eq!(
        pods["subresources"][1]["responseKind"],
        json!({"group": "policy", "version": "v1", "kind": "Eviction"})
    );
}

#[test]
fn binding_assigns_the_node_and_answers_a_success_status() {
    let s = server();
    create(&s, &pod("p", &["c"]));
    // The scheduler's earlier verdict, replaced whole by the binding's PodScheduled True.
    let unschedulable = json!({"status": {"conditions": [{"type": "PodScheduled",
        "status": "False", "reason": "Unschedulable", "message": "0/1 nodes are available"}]}});
    let r = s.patch(&format!("{PODS}/p/status"), "application/merge-patch+json", &unschedulable);
    assert_eq!(r.status, 200, "{}", r.text());
    let before = managers(&r.json()).into_iter().map(String::from).collect::<Vec<_>>();

    let mut body = binding("p", "node01");
    body["metadata"]["annotations"] = json!({"scheduler.example.com/score": "7"});
    let r = s.post(&format!("{PODS}/p/binding"), &body);
    assert_eq!((r.status, r.json()), (201, success()), "{}", r.text());
    let p = s.get_json(&format!("{PODS}/p"));
    assert_eq!(p["spec"]["nodeName"], "node01");
    assert_eq!(p["metadata"]["annotations"]["scheduler.example.com/score"], "7");
    let scheduled = condition(&p, "PodScheduled").unwrap();
    assert_eq!(scheduled["status"], "True");
    assert!(scheduled.get("reason").is_none() && scheduled.get("message").is_none(), "{p}");
    assert!(scheduled["lastTransitionTime"].is_string());
    // A storage-level write: no managedFields entry of its own.
    assert_eq!(managers(&p), before);

    // Bound already: a Conflict on pods/binding, assignPod's words.
    let r = s.post(&format!("{PODS}/p/binding"), &binding("p", "node02"));
    let st = assert_status(&r, 409, "Conflict");
    assert_eq!(
        st["message"],
        "Operation cannot be fulfilled on pods/binding \"p\": pod p is already assigned to node \"node01\""
    );
    assert_eq!(st["details"], json!({"name": "p", "kind": "pods/binding"}));
}

#[test]
fn binding_errors_are_kubes() {
    let s = server();
    let created = create(&s, &pod("p", &["c"]));
    let r = s.post(&format!("{PODS}/p/binding"), &binding("q", "node01"));
    let st = assert_status(&r, 400, "BadRequest");
    assert_eq!(st["message"], "name in URL does not match name in Binding object");

    // ValidatePodBinding's aggregate is no Status error: 500 with no reason.
    let mut bad = binding("p", "");
    bad["target"]["kind"] = json!("Pod");
    let r = s.post(&format!("{PODS}/p/binding"), &bad);
    assert_eq!(r.status, 500, "{}", r.text());
    assert_eq!(
        r.json(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "[target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", target.name: Required value]",
               "code": 500})
    );

    let r = s.post(&format!("{PODS}/missing/binding"), &binding("missing", "node01"));
    let st = assert_status(&r, 404, "NotFound");
    assert_eq!(st["message"], "pods \"missing\" not found");

    // The Binding's uid is the storage layer's precondition.
    let mut stale = binding("p", "node01");
    stale["metadata"]["uid"] = json!("00000000-0000-0000-0000-000000000000");
    let r = s.post(&format!("{PODS}/p/binding"), &stale);
    let st = assert_status(&r, 409, "Conflict");
    let uid = created["metadata"]["uid"].as_str().unwrap();
    assert_eq!(
        st["message"],
        format!(
            "Operation cannot be fulfilled on pods \"p\": StorageError: invalid object, Code: 4, \
             Key: /registry/pods/sub/p, ResourceVersion: 0, AdditionalErrorMsg: Precondition \
             failed: UID in precondition: 00000000-0000-0000-0000-000000000000, UID in object \
             meta: {uid}"
        )
    );

    // A dry run answers as the write would and changes nothing.
    let r = s.post(&format!("{PODS}/p/binding?dryRun=All"), &binding("p", "node01"));
    assert_eq!((r.status, r.json()), (201, success()));
    assert!(s.get_json(&format!("{PODS}/p"))["spec"].get("nodeName").is_none());

    let mut gated = pod("gated", &["c"]);
    gated["spec"]["schedulingGates"] = json!([{"name": "example.com/wait"}]);
    create(&s, &gated);
    let r = s.post(&format!("{PODS}/gated/binding"), &binding("gated", "node01"));
    let st = assert_status(&r, 409, "Conflict");
    assert_eq!(
        st["message"],
        "Operation cannot be fulfilled on pods/binding \"gated\": pod gated has non-empty .spec.schedulingGates"
    );

    let mut held = pod("held", &["c"]);
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    create(&s, &held);
    assert_eq!(s.delete(&format!("{PODS}/held")).status, 200);
    let r = s.post(&format!("{PODS}/held/binding"), &binding("held", "node01"));
    let st = assert_status(&r, 409, "Conflict");
    assert_eq!(
        st["message"],
        "Operation cannot be fulfilled on pods/binding \"held\": pod held is being deleted, cannot be assigned to a host"
    );
}

fn eviction(name: &str) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}})
}

#[test]
fn eviction_deletes_the_pod_as_kube_does() {
    let s = server();
    let mut running = pod("run", &["c"]);
    running["spec"]["nodeName"] = json!("node01");
    create(&s, &running);
    let r = s.patch(
        &format!("{PODS}/run/status"),
        "application/merge-patch+json",
        &json!({"status": {"phase": "Running"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());

    let r = s.post(&format!("{PODS}/run/eviction"), &eviction("other"));
    let st = assert_status(&r, 400, "BadRequest");
    assert_eq!(st["message"], "name in URL does not match name in Eviction object");

    // A dry run deletes nothing and marks nothing.
    let r = s.post(&format!("{PODS}/run/eviction?dryRun=All"), &eviction("run"));
    assert_eq!((r.status, r.json()), (201, success()));
    let kept = s.get_json(&format!("{PODS}/run"));
    assert!(condition(&kept, "DisruptionTarget").is_none(), "{kept}");

    // The Eviction's DeleteOptions are the delete's: a stale uid is a Conflict.
    let mut stale = eviction("run");
    stale["deleteOptions"] = json!({"preconditions": {"uid": "not-the-uid"}});
    let r = s.post(&format!("{PODS}/run/eviction"), &stale);
    let st = assert_status(&r, 409, "Conflict");
    let uid = kept["metadata"]["uid"].as_str().unwrap();
    assert_eq!(
        st["message"],
        format!(
            "Operation cannot be fulfilled on Pod \"run\": the UID in the precondition \
             (not-the-uid) does not match the UID in record ({uid}). The object might have been \
             deleted and then recreated"
        )
    );

    // The eviction deletes the bound pod gracefully (its default 30 s, K8S pkg/registry/core/
    // pod/strategy.go CheckGracefulDelete); no kubelet runs node01, so it stays Terminating.
    let r = s.post(&format!("{PODS}/run/eviction"), &eviction("run"));
    assert_eq!((r.status, r.json()), (201, success()), "{}", r.text());
    let evicted = s.get_json(&format!("{PODS}/run"));
    assert_eq!(evicted["metadata"]["deletionGracePeriodSeconds"], 30, "{evicted}");
    assert!(evicted["metadata"]["deletionTimestamp"].is_string(), "{evicted}");
    // The Eviction's own DeleteOptions decide the grace: 0 removes it now.
    let mut now = eviction("run");
    now["deleteOptions"] = json!({"gracePeriodSeconds": 0});
    let r = s.post(&format!("{PODS}/run/eviction"), &now);
    assert_eq!((r.status, r.json()), (201, success()), "{}", r.text());
    assert_eq!(s.get(&format!("{PODS}/run")).status, 404);

    let r = s.post(&format!("{PODS}/gone/eviction"), &eviction("gone"));
    let st = assert_status(&r, 404, "NotFound");
    assert_eq!(st["message"], "pods \"gone\" not found");
    assert_eq!(st["details"], json!({"name": "gone", "kind": "pods"}));
}

#[test]
fn logs_choose_a_container_and_are_empty_without_a_log_source() {
    let s = server();
    let k = Kubectl::in_namespace(&s, NS);
    create(&s, &pod("waiting", &["c"]));
    // Not scheduled: kube's LocationStreamer has no location and answers 204.
    let r = s.get(&format!("{PODS}/waiting/log"));
    assert_eq!((r.status, r.text()), (204, String::new()));

    let mut launcher = pod("launcher", &["compute", "volumecontainerdisk"]);
    launcher["metadata"]["annotations"] =
        json!({"kubectl.kubernetes.io/default-container": "compute"});
    launcher["spec"]["initContainers"] = json!([{"name": "container-disk-binary", "image": "b"}]);
    launcher["spec"]["nodeName"] = json!("node01");
    create(&s, &launcher);
    let r = s.get(&format!("{PODS}/launcher/log?container=compute"));
    assert_eq!((r.status, r.text()), (200, String::new()));
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert_eq!(k.ok(&["logs", "launcher"]), "");
    assert_eq!(k.ok(&["logs", "launcher", "-c", "volumecontainerdisk"]), "");

    let r = s.get(&format!("{PODS}/launcher/log"));
    let st = assert_status(&r, 400, "BadRequest");
    assert_eq!(
        st["message"],
        "a container name must be specified for pod launcher, choose one of: [compute \
         volumecontainerdisk] or one of the init containers: [container-disk-binary]"
    );
    let r = s.get(&format!("{PODS}/launcher/log?container=nope"));
    let st = assert_status(&r, 400, "BadRequest");
    assert_eq!(st["message"], "container nope is not valid for pod launcher");
    let out = k.fails(&["logs", "launcher", "-c", "nope"]);
    assert!(out.contains("container nope is not valid for pod launcher"), "{out}");

    let r = s.get(&format!("{PODS}/launcher/log?container=compute&tailLines=-1"));
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["message"],
        "PodLogOptions \"launcher\" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0"
    );
    assert_eq!(
        st["details"],
        json!({"name": "launcher", "kind": "PodLogOptions", "causes": [{"reason": "FieldValueInvalid",
               "message": "Invalid value: -1: must be greater than or equal to 0", "field": "tailLines"}]})
    );
    let r = s.get(&format!("{PODS}/missing/log"));
    assert_eq!(assert_status(&r, 404, "NotFound")["message"], "pods \"missing\" not found");
}
