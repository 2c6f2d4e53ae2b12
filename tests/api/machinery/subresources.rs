//! The `status` and `scale` subresources (A.4, B.2, B.7) over HTTP: which endpoint may change
//! what, generation, no-op writes, the Scale view, discovery, and `kubectl scale`.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{Resp, TestServer};

const NS: &str = "subres";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";

fn collection(version: &str, plural: &str) -> String {
    format!("/apis/kubevirt.io/{version}/namespaces/{NS}/{plural}")
}

fn item(version: &str, plural: &str, name: &str) -> String {
    format!("{}/{name}", collection(version, plural))
}

fn vm(name: &str) -> String {
    item("v1", "virtualmachines", name)
}

fn rs(name: &str) -> String {
    item("v1", "virtualmachineinstancereplicasets", name)
}

fn object(kind: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": "kubevirt.io/v1", "kind": kind,
           "metadata": {"name": name, "namespace": NS}, "spec": spec})
}

fn ok(resp: Resp, code: u16) -> Value {
    assert_eq!(resp.status, code, "{}", resp.text());
    resp.json()
}

fn failure(resp: &Resp, code: u16, reason: &str) -> Value {
    assert_eq!(resp.status, code, "{}", resp.text());
    let status = resp.json();
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["reason"], reason, "{status}");
    status
}

fn rv(obj: &Value) -> &str {
    obj["metadata"]["resourceVersion"].as_str().expect("a resourceVersion")
}

fn create(s: &TestServer, coll: &str, body: &Value) -> Value {
    ok(s.post(coll, body), 201)
}

/// Creates a VM, then gives it a status through `/status`.
fn vm_with_status(s: &TestServer, name: &str) -> Value {
    let created = create(
        s,
        &collection("v1", "virtualmachines"),
        &object("VirtualMachine", name, json!({"running": false})),
    );
    let body = json!({"status": {"printableStatus": "Stopped"}});
    ok(s.patch(&format!("{}/status", vm(name)), MERGE, &body), 200);
    let now = ok(s.get(&vm(name)), 200);
    assert_eq!(now["metadata"]["generation"], created["metadata"]["generation"]);
    now
}

#[test]
fn create_drops_status_when_the_kind_has_a_status_subresource() {
    let s = TestServer::start();
    s.namespace(NS);
    let mut body = object("VirtualMachine", "c", json!({"running": false}));
    body["status"] = json!({"printableStatus": "Running"});
    let created = create(&s, &collection("v1", "virtualmachines"), &body);
    assert!(created.get("status").is_none(), "{created}");
    assert_eq!(created["metadata"]["generation"], 1);
    assert!(ok(s.get(&vm("c")), 200).get("status").is_none());
    // Without the subresource, create keeps status.
    let mut body = object("VirtualMachineInstance", "c", json!({}));
    body["status"] = json!({"phase": "Pending"});
    let created = create(&s, &collection("v1", "virtualmachineinstances"), &body);
    assert_eq!(created["status"], json!({"phase": "Pending"}));
}

#[test]
fn status_endpoint_changes_only_status_and_never_generation() {
    let s = TestServer::start();
    s.namespace(NS);
    let before = vm_with_status(&s, "a");
    let status_path = format!("{}/status", vm("a"));
    // GET answers the whole object.
    assert_eq!(ok(s.get(&status_path), 200), before);

    // PUT: status taken; spec, labels and annotations in the body dropped.
    let mut body = before.clone();
    body["status"] = json!({"printableStatus": "Starting"});
    body["spec"] = json!({"running": true});
    body["metadata"]["labels"] = json!({"changed": "yes"});
    let out = ok(s.put(&status_path, &body), 200);
    assert_eq!(out["status"], json!({"printableStatus": "Starting"}));
    assert_eq!(out["spec"], before["spec"]);
    assert!(out["metadata"].get("labels").is_none(), "{out}");
    assert_eq!(out["metadata"]["generation"], before["metadata"]["generation"]);
    assert_ne!(rv(&out), rv(&before));
    assert_eq!(ok(s.get(&vm("a")), 200), out);

    // Merge patch: status merged, the rest of the patch ignored.
    let patch = json!({"spec": {"running": true}, "status": {"ready": true}});
    let out = ok(s.patch(&status_path, MERGE, &patch), 200);
    assert_eq!(out["status"], json!({"printableStatus": "Starting", "ready": true}));
    assert_eq!(out["spec"], before["spec"]);
    assert_eq!(out["metadata"]["generation"], before["metadata"]["generation"]);

    // JSON patch, through another version of the kind.
    let ops = json!([{"op": "replace", "path": "/status/printableStatus", "value": "Running"},
                     {"op": "add", "path": "/metadata/annotations", "value": {"a": "b"}}]);
    let alpha = format!("{}/status", item("v1alpha3", "virtualmachines", "a"));
    let out = ok(s.patch(&alpha, JSON_PATCH, &ops), 200);
    assert_eq!(out["apiVersion"], "kubevirt.io/v1alpha3");
    assert_eq!(out["status"]["printableStatus"], "Running");
    assert!(out["metadata"].get("annotations").is_none(), "{out}");
    assert_eq!(out["metadata"]["generation"], before["metadata"]["generation"]);

    // dryRun answers the change and stores nothing.
    let stored = ok(s.get(&vm("a")), 200);
    let mut body = stored.clone();
    body["status"] = json!({"printableStatus": "Paused"});
    let out = ok(s.put(&format!("{status_path}?dryRun=All"), &body), 200);
    assert_eq!(out["status"]["printableStatus"], "Paused");
    assert_eq!(ok(s.get(&vm("a")), 200), stored);
}

#[test]
fn status_put_needs_a_current_resource_version() {
    let s = TestServer::start();
    s.namespace(NS);
    let before = vm_with_status(&s, "a");
    let status_path = format!("{}/status", vm("a"));
    let mut body = before.clone();
    body["status"] = json!({"printableStatus": "Starting"});
    ok(s.put(&status_path, &body), 200);
    // The same body again carries a stale resourceVersion now.
    body["status"] = json!({"printableStatus": "Other"});
    let st = failure(&s.put(&status_path, &body), 409, "Conflict");
    assert_eq!(
        st["message"],
        "Operation cannot be fulfilled on virtualmachines.kubevirt.io \"a\": the object has been modified; please apply your changes to the latest version and try again"
    );
    body["metadata"].as_object_mut().unwrap().remove("resourceVersion");
    let st = failure(&s.put(&status_path, &body), 422, "Invalid");
    assert!(st["message"].as_str().unwrap().contains("must be specified for an update"), "{st}");
    // A patch naming a stale resourceVersion conflicts too; a missing object is 404.
    let patch = json!({"metadata": {"resourceVersion": rv(&before)}, "status": {"x": 1}});
    failure(&s.patch(&status_path, MERGE, &patch), 409, "Conflict");
    let missing = format!("{}/status", vm("missing"));
    failure(&s.patch(&missing, MERGE, &json!({"status": {}})), 404, "NotFound");
    failure(&s.get(&missing), 404, "NotFound");
    // /status serves get, put and patch only.
    failure(&s.delete(&status_path), 405, "MethodNotAllowed");
}

#[test]
fn main_endpoint_ignores_status_and_bumps_generation_on_spec_only() {
    let s = TestServer::start();
    s.namespace(NS);
    let before = vm_with_status(&s, "a");
    let generation = before["metadata"]["generation"].as_i64().unwrap();

    // A status-only change through the main endpoint is a no-op: same resourceVersion.
    let mut body = before.clone();
    body["status"] = json!({"printableStatus": "Hacked"});
    let out = ok(s.put(&vm("a"), &body), 200);
    assert_eq!(out, before);
    let out = ok(s.patch(&vm("a"), MERGE, &json!({"status": {"printableStatus": "Hacked"}})), 200);
    assert_eq!(out, before);
    // Removing status through the main endpoint keeps it too.
    let out = ok(s.patch(&vm("a"), JSON_PATCH, &json!([{"op": "remove", "path": "/status"}])), 200);
    assert_eq!(out, before);

    // Metadata-only changes write but keep generation.
    let out = ok(s.patch(&vm("a"), MERGE, &json!({"metadata": {"labels": {"l": "1"}}})), 200);
    assert_eq!(out["metadata"]["generation"], generation);
    assert_ne!(rv(&out), rv(&before));

    // A spec change bumps it once, and status still comes from the store.
    let mut body = out.clone();
    body["spec"] = json!({"running": true});
    body["status"] = json!({"printableStatus": "Hacked"});
    let out = ok(s.put(&vm("a"), &body), 200);
    assert_eq!(out["metadata"]["generation"], generation + 1);
    assert_eq!(out["spec"], json!({"running": true}));
    assert_eq!(out["status"], before["status"]);
}

#[test]
fn kinds_without_a_status_subresource_write_status_through_the_main_endpoint() {
    let s = TestServer::start();
    s.namespace(NS);
    let path = item("v1", "virtualmachineinstances", "i");
    let mut body = object("VirtualMachineInstance", "i", json!({}));
    body["status"] = json!({"phase": "Pending"});
    let created = create(&s, &collection("v1", "virtualmachineinstances"), &body);
    let mut body = created.clone();
    body["status"] = json!({"phase": "Running"});
    let out = ok(s.put(&path, &body), 200);
    assert_eq!(out["status"], json!({"phase": "Running"}));
    assert_eq!(out["metadata"]["generation"], 2);
    let out = ok(s.patch(&path, MERGE, &json!({"status": {"phase": "Succeeded"}})), 200);
    assert_eq!(out["metadata"]["generation"], 3);
    // No /status path: Go's plain 404.
    let r = s.get(&format!("{path}/status"));
    assert_eq!(r.status, 404);
    assert_eq!(r.text().trim(), "404 page not found");
}

#[test]
fn no_op_writes_keep_the_resource_version_and_send_no_event() {
    let s = TestServer::start();
    s.namespace(NS);
    let before = vm_with_status(&s, "a");
    let w = s.watch(&format!(
        "{}?watch=true&resourceVersion={}",
        collection("v1", "virtualmachines"),
        rv(&before)
    ));
    let status_path = format!("{}/status", vm("a"));
    assert_eq!(ok(s.put(&vm("a"), &before), 200), before);
    assert_eq!(ok(s.put(&status_path, &before), 200), before);
    assert_eq!(ok(s.patch(&status_path, MERGE, &json!({})), 200), before);
    assert_eq!(ok(s.patch(&vm("a"), MERGE, &json!({"spec": {"running": false}})), 200), before);
    w.expect_none(Duration::from_millis(700));
    // A real change is seen.
    let out = ok(s.patch(&status_path, MERGE, &json!({"status": {"ready": true}})), 200);
    let ev = w.expect();
    assert_eq!(ev["type"], "MODIFIED");
    assert_eq!(ev["object"]["metadata"]["resourceVersion"], rv(&out));
    assert_eq!(ev["object"]["status"]["ready"], true);
}

/// A replica set with 2 desired replicas and a status (replicas 1, a selector).
fn replica_set(s: &TestServer, name: &str) -> Value {
    let coll = collection("v1", "virtualmachineinstancereplicasets");
    create(s, &coll, &object("VirtualMachineInstanceReplicaSet", name, json!({"replicas": 2})));
    let status = json!({"status": {"replicas": 1, "labelSelector": "kubevirt.io/vmReplicaSet=rs"}});
    ok(s.patch(&format!("{}/status", rs(name)), MERGE, &status), 200)
}

#[test]
fn scale_reads_and_writes_spec_replicas() {
    let s = TestServer::start();
    s.namespace(NS);
    let obj = replica_set(&s, "rs");
    let scale_path = format!("{}/scale", rs("rs"));
    let scale = ok(s.get(&scale_path), 200);
    assert_eq!(
        scale,
        json!({"kind": "Scale", "apiVersion": "autoscaling/v1",
               "metadata": {"name": "rs", "namespace": NS, "uid": obj["metadata"]["uid"],
                            "resourceVersion": rv(&obj),
                            "creationTimestamp": obj["metadata"]["creationTimestamp"]},
               "spec": {"replicas": 2},
               "status": {"replicas": 1, "selector": "kubevirt.io/vmReplicaSet=rs"}})
    );

    // PUT with the current resourceVersion.
    let mut body = scale.clone();
    body["spec"]["replicas"] = json!(5);
    let out = ok(s.put(&scale_path, &body), 200);
    assert_eq!(out["kind"], "Scale");
    assert_eq!(out["spec"]["replicas"], 5);
    let stored = ok(s.get(&rs("rs")), 200);
    assert_eq!(stored["spec"]["replicas"], 5);
    assert_eq!(stored["metadata"]["generation"], 2, "a spec change bumps generation");
    assert_eq!(stored["status"], obj["status"]);
    assert_eq!(rv(&out), rv(&stored));
    // The same body again: stale resourceVersion.
    body["spec"]["replicas"] = json!(6);
    let st = failure(&s.put(&scale_path, &body), 409, "Conflict");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("virtualmachineinstancereplicasets.kubevirt.io \"rs\""),
        "{st}"
    );
    // Without one, PUT is unconditional.
    body["metadata"].as_object_mut().unwrap().remove("resourceVersion");
    assert_eq!(ok(s.put(&scale_path, &body), 200)["spec"]["replicas"], 6);

    // Merge patch, as kubectl scale sends it; JSON patch; through another version.
    let out = ok(s.patch(&scale_path, MERGE, &json!({"spec": {"replicas": 3}})), 200);
    assert_eq!(out["spec"]["replicas"], 3);
    let ops = json!([{"op": "test", "path": "/spec/replicas", "value": 3},
                     {"op": "replace", "path": "/spec/replicas", "value": 4}]);
    let alpha = format!("{}/scale", item("v1alpha3", "virtualmachineinstancereplicasets", "rs"));
    let out = ok(s.patch(&alpha, JSON_PATCH, &ops), 200);
    assert_eq!(out["apiVersion"], "autoscaling/v1");
    assert_eq!(out["spec"]["replicas"], 4);
    assert_eq!(ok(s.get(&rs("rs")), 200)["spec"]["replicas"], 4);
    // Same replicas: a no-op keeping the resourceVersion.
    let again = ok(s.patch(&scale_path, MERGE, &json!({"spec": {"replicas": 4}})), 200);
    assert_eq!(rv(&again), rv(&out));
    // Zero: kube's Scale leaves `spec.replicas` out (omitempty).
    let out = ok(s.patch(&scale_path, MERGE, &json!({"spec": {"replicas": 0}})), 200);
    assert_eq!(out["spec"], json!({}));
    assert_eq!(ok(s.get(&rs("rs")), 200)["spec"]["replicas"], 0);
}

#[test]
fn scale_rejects_bad_replicas() {
    let s = TestServer::start();
    s.namespace(NS);
    replica_set(&s, "rs");
    let scale_path = format!("{}/scale", rs("rs"));
    let st =
        failure(&s.patch(&scale_path, MERGE, &json!({"spec": {"replicas": -1}})), 422, "Invalid");
    assert_eq!(
        st["message"],
        "VirtualMachineInstanceReplicaSet.kubevirt.io \"rs\" is invalid: .spec.replicas: Invalid value: -1: should be a non-negative integer"
    );
    assert_eq!(st["details"]["causes"][0]["field"], ".spec.replicas");
    let body = json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
                      "metadata": {"name": "rs"}, "spec": {"replicas": -3}});
    failure(&s.put(&scale_path, &body), 422, "Invalid");
    // The main endpoint checks the same field.
    failure(&s.patch(&rs("rs"), MERGE, &json!({"spec": {"replicas": -2}})), 422, "Invalid");
    let coll = collection("v1", "virtualmachineinstancereplicasets");
    let bad = object("VirtualMachineInstanceReplicaSet", "neg", json!({"replicas": -1}));
    failure(&s.post(&coll, &bad), 422, "Invalid");
    // Not an integer: a body that cannot be decoded (400), a patch that produced one (422).
    let body = json!({"metadata": {"name": "rs"}, "spec": {"replicas": "three"}});
    failure(&s.put(&scale_path, &body), 400, "BadRequest");
    let st =
        failure(&s.patch(&scale_path, MERGE, &json!({"spec": {"replicas": 1.5}})), 422, "Invalid");
    assert_eq!(st["details"]["causes"][0]["field"], "patch");
    // Names must agree; the object must exist.
    let body = json!({"metadata": {"name": "other"}, "spec": {"replicas": 1}});
    failure(&s.put(&scale_path, &body), 400, "BadRequest");
    let missing = format!("{}/scale", rs("missing"));
    failure(&s.get(&missing), 404, "NotFound");
    failure(&s.patch(&missing, MERGE, &json!({"spec": {"replicas": 1}})), 404, "NotFound");
    // Strategic merge is refused as on every CR path.
    let smp = "application/strategic-merge-patch+json";
    failure(
        &s.patch(&scale_path, smp, &json!({"spec": {"replicas": 1}})),
        415,
        "UnsupportedMediaType",
    );
    assert_eq!(ok(s.get(&rs("rs")), 200)["spec"]["replicas"], 2, "nothing was written");
}

#[test]
fn scale_of_an_object_without_replicas() {
    let s = TestServer::start();
    s.namespace(NS);
    let coll = collection("v1", "virtualmachineinstancereplicasets");
    create(&s, &coll, &object("VirtualMachineInstanceReplicaSet", "bare", json!({})));
    let scale_path = format!("{}/scale", rs("bare"));
    let scale = ok(s.get(&scale_path), 200);
    assert_eq!(scale["spec"], json!({}));
    assert_eq!(scale["status"], json!({"replicas": 0}));
    // A patch that leaves the replicas unset is refused, as kube does.
    let st = failure(
        &s.patch(&scale_path, MERGE, &json!({"metadata": {"labels": {"a": "b"}}})),
        400,
        "BadRequest",
    );
    assert_eq!(st["message"], "the spec replicas field \".spec.replicas\" cannot be empty");
    let out = ok(s.patch(&scale_path, MERGE, &json!({"spec": {"replicas": 2}})), 200);
    assert_eq!(out["spec"]["replicas"], 2);
    assert_eq!(ok(s.get(&rs("bare")), 200)["spec"], json!({"replicas": 2}));
}

/// A.4 and B.7: every status subresource and the replica set's scale, after their kinds.
#[test]
fn discovery_lists_subresources_after_their_kind() {
    let s = TestServer::start();
    let with_status = [
        (
            "kubevirt.io",
            vec!["v1", "v1alpha3", "v1alpha2"],
            vec![
                "virtualmachines",
                "virtualmachineinstancereplicasets",
                "virtualmachineinstancemigrations",
                "virt",
            ],
        ),
        (
            "snapshot.kubevirt.io",
            vec!["v1alpha1"],
            vec!["virtualmachinesnapshots", "virtualmachinesnapshotcontents"],
        ),
        ("clone.kubevirt.io", vec!["v1alpha1"], vec!["virtualmachineclones"]),
        ("export.kubevirt.io", vec!["v1alpha1"], vec!["virtualmachineexports"]),
        ("cdi.kubevirt.io", vec!["v1beta1", "v1alpha1"], vec!["datavolumes"]),
    ];
    for (group, versions, plurals) in with_status {
        for v in versions {
            let doc = ok(s.get(&format!("/apis/{group}/{v}")), 200);
            let resources = doc["resources"].as_array().unwrap();
            let names: Vec<&str> = resources.iter().map(|r| r["name"].as_str().unwrap()).collect();
            let subs: Vec<&str> = names.iter().copied().filter(|n| n.contains('/')).collect();
            let mut want: Vec<String> = plurals.iter().map(|p| format!("{p}/status")).collect();
            if group == "kubevirt.io" {
                want.push("virtualmachineinstancereplicasets/scale".into());
            }
            let mut got: Vec<String> = subs.iter().map(|s| s.to_string()).collect();
            got.sort();
            want.sort();
            assert_eq!(got, want, "/apis/{group}/{v}");
            for p in &plurals {
                let parent = resources.iter().position(|r| r["name"] == *p).unwrap();
                let status = &resources[parent + 1];
                assert_eq!(status["name"], format!("{p}/status"));
                assert_eq!(status["singularName"], "");
                assert_eq!(status["kind"], resources[parent]["kind"]);
                assert_eq!(status["namespaced"], resources[parent]["namespaced"]);
                assert_eq!(status["verbs"], json!(["get", "patch", "update"]));
                assert!(
                    status.get("group").is_none() && status.get("storageVersionHash").is_none()
                );
            }
            if group == "kubevirt.io" {
                let parent =
                    names.iter().position(|n| *n == "virtualmachineinstancereplicasets").unwrap();
                assert_eq!(
                    resources[parent + 2],
                    json!({"name": "virtualmachineinstancereplicasets/scale", "singularName": "",
                           "namespaced": true, "group": "autoscaling", "version": "v1",
                           "kind": "Scale", "verbs": ["get", "patch", "update"]})
                );
            }
        }
    }
}

#[test]
fn openapi_documents_declare_the_subresource_paths() {
    let s = TestServer::start();
    let v2 = ok(s.get("/openapi/v2"), 200);
    let base =
        "/apis/kubevirt.io/v1/namespaces/{namespace}/virtualmachineinstancereplicasets/{name}";
    let status = &v2["paths"][format!("{base}/status")];
    assert_eq!(
        status["patch"]["operationId"],
        "patchKubevirtIoV1NamespacedVirtualMachineInstanceReplicaSetStatus"
    );
    assert_eq!(
        status["put"]["x-kubernetes-group-version-kind"]["kind"],
        "VirtualMachineInstanceReplicaSet"
    );
    let scale = &v2["paths"][format!("{base}/scale")];
    assert_eq!(
        scale["get"]["operationId"],
        "readKubevirtIoV1NamespacedVirtualMachineInstanceReplicaSetScale"
    );
    assert_eq!(
        scale["get"]["x-kubernetes-group-version-kind"],
        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
    );
    assert!(v2["paths"]
        .get("/apis/kubevirt.io/v1/namespaces/{namespace}/virtualmachineinstances/{name}/status")
        .is_none());
    let v3 = ok(s.get("/openapi/v3/apis/kubevirt.io/v1"), 200);
    let patch = &v3["paths"][format!("{base}/scale")]["patch"];
    let params: Vec<&str> = patch["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(params.contains(&"fieldValidation"), "{params:?}");
    assert!(v3["components"]["schemas"].get("io.k8s.api.autoscaling.v1.Scale").is_some());
}

/// kubectl is part of the test machine: a missing one fails the test.
fn kubectl() -> PathBuf {
    if let Some(p) = std::env::var_os("KUBECTL") {
        return PathBuf::from(p);
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths).map(|d| d.join("kubectl")).find(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!("kubectl not found on PATH (or $KUBECTL): this test needs kubectl 1.32")
        })
}

#[test]
fn kubectl_scale_writes_spec_replicas() {
    let s = TestServer::start();
    s.namespace(NS);
    replica_set(&s, "rs");
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let config = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: virt\n  cluster:\n    server: {}\n\
         contexts:\n- name: virt\n  context:\n    cluster: virt\n    user: virt\n    namespace: {NS}\n\
         users:\n- name: virt\n  user: {{}}\ncurrent-context: virt\n",
        s.base
    );
    std::fs::write(&kubeconfig, config).expect("kubeconfig");
    let run = |args: &[&str]| {
        let out = Command::new(kubectl())
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .args(args)
            .env("KUBECONFIG", &kubeconfig)
            .env("HOME", dir.path())
            .output()
            .expect("run kubectl");
        let (stdout, stderr) =
            (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "kubectl {args:?}: {}\n{stdout}\n{stderr}", out.status);
        stdout.into_owned()
    };
    let out = run(&["scale", "vmirs", "rs", "--replicas=3"]);
    assert_eq!(out.trim(), "virtualmachineinstancereplicaset.kubevirt.io/rs scaled");
    let stored = ok(s.get(&rs("rs")), 200);
    assert_eq!(stored["spec"]["replicas"], 3);
    assert_eq!(stored["metadata"]["generation"], 2);
    // With a precondition kubectl reads the Scale, then replaces it.
    let out = run(&["scale", "vmirs", "rs", "--current-replicas=3", "--replicas=1"]);
    assert!(out.contains("scaled"), "{out}");
    assert_eq!(ok(s.get(&rs("rs")), 200)["spec"]["replicas"], 1);
    let shown = run(&["get", "vmirs", "rs", "-o", "jsonpath={.spec.replicas}"]);
    assert_eq!(shown, "1");
}

const APPLY: &str = "application/apply-patch+yaml";

fn scale_apply(s: &TestServer, name: &str, manager: &str, body: &Value) -> Resp {
    s.patch(&format!("{}/scale?fieldManager={manager}", rs(name)), APPLY, body)
}

fn scale_config(name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
           "metadata": {"name": name, "namespace": NS}, "spec": {"replicas": replicas}})
}

/// Server-side apply of a Scale (kube's fieldmanager ScaleHandler): the replica count is owned
/// under the `scale` subresource on the object itself, and conflicts with the main resource's
/// appliers both ways.
#[test]
fn apply_on_scale_owns_the_replica_count() {
    let s = TestServer::start();
    s.namespace(NS);
    replica_set(&s, "rs");
    // Its creator owns the count (an Update entry), so the first apply conflicts with it.
    let st = failure(&scale_apply(&s, "rs", "hpa", &scale_config("rs", 3)), 409, "Conflict");
    assert!(st["message"].as_str().unwrap().ends_with(": .spec.replicas"), "{st}");
    let out = ok(scale_apply(&s, "rs", "hpa&force=true", &scale_config("rs", 3)), 200);
    assert_eq!(out["kind"], "Scale", "{out}");
    assert_eq!(out["spec"]["replicas"], 3, "{out}");
    let obj = ok(s.get(&rs("rs")), 200);
    assert_eq!(obj["spec"]["replicas"], 3);
    let entries = obj["metadata"]["managedFields"].as_array().expect("managedFields").clone();
    let hpa: Vec<&Value> = entries.iter().filter(|e| e["manager"] == "hpa").collect();
    assert_eq!(hpa.len(), 1, "{entries:?}");
    assert_eq!(hpa[0]["operation"], "Apply");
    assert_eq!(hpa[0]["subresource"], "scale");
    assert_eq!(hpa[0]["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));

    // An applier of the main resource that wants another count conflicts with it.
    let main = object("VirtualMachineInstanceReplicaSet", "rs", json!({"replicas": 5}));
    let path = format!("{}?fieldManager=deployer", rs("rs"));
    let st = failure(&s.patch(&path, APPLY, &main), 409, "Conflict");
    assert_eq!(
        st["message"],
        "Apply failed with 1 conflict: conflict with \"hpa\" with subresource \"scale\": .spec.replicas",
    );
    // Forcing takes it; then the Scale applier conflicts in turn.
    ok(s.patch(&format!("{path}&force=true"), APPLY, &main), 200);
    let st = failure(&scale_apply(&s, "rs", "hpa", &scale_config("rs", 4)), 409, "Conflict");
    assert!(st["message"].as_str().unwrap().contains("conflict with \"deployer\""), "{st}");

    // Same count, no conflict; the object is untouched apart from ownership.
    let before = ok(s.get(&rs("rs")), 200);
    ok(scale_apply(&s, "rs", "hpa", &scale_config("rs", 5)), 200);
    let after = ok(s.get(&rs("rs")), 200);
    assert_eq!(after["spec"], before["spec"]);
    assert_eq!(after["status"], before["status"]);
}

#[test]
fn apply_on_scale_checks_its_body() {
    let s = TestServer::start();
    s.namespace(NS);
    replica_set(&s, "rs");
    let mut wrong = scale_config("rs", 3);
    wrong["apiVersion"] = json!("kubevirt.io/v1");
    let st = failure(&scale_apply(&s, "rs", "hpa", &wrong), 400, "BadRequest");
    assert_eq!(
        st["message"],
        "Incorrect version specified in apply patch. Specified patch version: kubevirt.io/v1, expected: autoscaling/v1"
    );
    let mut unknown = scale_config("rs", 3);
    unknown["spec"]["bogus"] = json!(1);
    let st = failure(&scale_apply(&s, "rs", "hpa", &unknown), 400, "BadRequest");
    assert_eq!(
        st["message"],
        format!("failed to create typed patch object ({NS}/rs; autoscaling/v1, Kind=Scale): .spec.bogus: field not declared in schema")
    );
    let st = failure(
        &s.patch(&format!("{}/scale", rs("rs")), APPLY, &scale_config("rs", 3)),
        422,
        "Invalid",
    );
    assert!(st["message"].as_str().unwrap().contains("fieldManager: Required value"), "{st}");
    failure(&scale_apply(&s, "missing", "hpa", &scale_config("missing", 3)), 404, "NotFound");
    assert_eq!(ok(s.get(&rs("rs")), 200)["spec"]["replicas"], 2);
}
