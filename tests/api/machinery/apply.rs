//! Server-side apply and managedFields (B.2, B.3, B.10 apply.go), over HTTP and through kubectl.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{cause_fields, Kubectl, Resp, TestServer};

const APPLY: &str = "application/apply-patch+yaml";
const MERGE: &str = "application/merge-patch+json";

fn vm_path(ns: &str, name: &str) -> String {
    format!("/apis/kubevirt.io/v1/namespaces/{ns}/virtualmachines/{name}")
}

fn vm(ns: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
           "metadata": {"name": name, "namespace": ns}, "spec": spec})
}

/// An apply PATCH of `body` (sent as JSON, which is YAML) by `manager`.
fn apply(s: &TestServer, path: &str, manager: &str, force: bool, body: &Value) -> Resp {
    let q = if force { "&force=true" } else { "" };
    s.patch(&format!("{path}?fieldManager={manager}{q}"), APPLY, body)
}

/// Asserts `resp` has `code` and returns its JSON.
fn expect(resp: Resp, code: u16) -> Value {
    assert_eq!(resp.status, code, "{}", resp.text());
    resp.json()
}

fn entries(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"].as_array().cloned().unwrap_or_default()
}

/// The entry of `manager` with `operation`, failing when there is none or several.
fn entry(obj: &Value, manager: &str, operation: &str) -> Value {
    let found: Vec<Value> = entries(obj)
        .into_iter()
        .filter(|e| e["manager"] == manager && e["operation"] == operation)
        .collect();
    assert_eq!(found.len(), 1, "one {operation} entry of {manager:?} in {obj:#}");
    found[0].clone()
}

fn fields(obj: &Value, manager: &str, operation: &str) -> Value {
    entry(obj, manager, operation)["fieldsV1"].clone()
}

fn managers(obj: &Value) -> Vec<(String, String)> {
    entries(obj)
        .iter()
        .map(|e| {
            (
                e["manager"].as_str().unwrap().to_string(),
                e["operation"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn rv(obj: &Value) -> String {
    obj["metadata"]["resourceVersion"].as_str().unwrap().to_string()
}

fn is_rfc3339_seconds(t: &str) -> bool {
    let b = t.as_bytes();
    b.len() == 20 && b[4] == b'-' && b[10] == b'T' && b[19] == b'Z'
}

#[test]
fn apply_options_and_body_are_checked() {
    let s = TestServer::start();
    s.namespace("ns");
    let path = vm_path("ns", "a");
    let body = vm("ns", "a", json!({"running": true}));
    let r = expect(s.patch(&path, APPLY, &body), 422);
    assert_eq!(
        r["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    assert_eq!(r["details"]["causes"][0]["field"], "fieldManager");
    let long = "m".repeat(129);
    let r = expect(s.patch(&format!("{path}?fieldManager={long}"), APPLY, &body), 422);
    assert_eq!(
        r["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes"
    );
    let mut with_mf = body.clone();
    with_mf["metadata"]["managedFields"] = json!([]);
    let r = expect(apply(&s, &path, "m", false, &with_mf), 400);
    assert_eq!(r["message"], "metadata.managedFields must be nil");
    let mut other_version = body.clone();
    other_version["apiVersion"] = json!("kubevirt.io/v1alpha3");
    let r = expect(apply(&s, &path, "m", false, &other_version), 400);
    assert_eq!(
        r["message"],
        "Incorrect version specified in apply patch. Specified patch version: kubevirt.io/v1alpha3, expected: kubevirt.io/v1"
    );
    let r = expect(apply(&s, &vm_path("ns", "b"), "m", false, &body), 400);
    assert_eq!(r["message"], "the name of the object (a) does not match the name on the URL (b)");
    let r = expect(
        s.request("PATCH", &format!("{path}?fieldManager=m"), &[], Some((APPLY, b"- a\n- b\n"))),
        400,
    );
    assert!(r["message"].as_str().unwrap().starts_with("error decoding YAML"), "{r}");
    let mut with_uid = body.clone();
    with_uid["metadata"]["uid"] = json!("1234");
    let r = expect(apply(&s, &path, "m", false, &with_uid), 409);
    assert_eq!(
        r["message"],
        "Operation cannot be fulfilled on virtualmachines.kubevirt.io \"a\": uid mismatch: the provided object specified uid 1234, and no existing object was found"
    );
    let dry = expect(s.patch(&format!("{path}?fieldManager=m&dryRun=All"), APPLY, &body), 201);
    assert_eq!(dry["metadata"]["managedFields"][0]["manager"], "m");
    // Nothing of the above stored anything.
    assert_eq!(s.get(&path).status, 404);
    // `force` belongs to apply only.
    expect(apply(&s, &path, "m", false, &body), 201);
    let r = expect(s.patch(&format!("{path}?force=true"), MERGE, &json!({})), 422);
    assert_eq!(
        r["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
}

#[test]
fn apply_creates_then_updates_and_a_repeat_is_a_no_op() {
    let s = TestServer::start();
    s.namespace("ns");
    let path = vm_path("ns", "vm1");
    let yaml = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: vm1\n  labels:\n    app: web\nspec:\n  running: true\n";
    let created = expect(
        s.request(
            "PATCH",
            &format!("{path}?fieldManager=alice"),
            &[],
            Some((APPLY, yaml.as_bytes())),
        ),
        201,
    );
    assert_eq!(created["metadata"]["namespace"], "ns");
    assert_eq!(created["metadata"]["generation"], 1);
    assert!(!created["metadata"]["uid"].as_str().unwrap().is_empty());
    assert_eq!(managers(&created), [("alice".to_string(), "Apply".to_string())]);
    let e = entry(&created, "alice", "Apply");
    assert_eq!(e["apiVersion"], "kubevirt.io/v1");
    assert_eq!(e["fieldsType"], "FieldsV1");
    assert!(is_rfc3339_seconds(e["time"].as_str().unwrap()), "{e}");
    assert_eq!(
        e["fieldsV1"],
        json!({"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:running": {}}})
    );
    assert_eq!(s.get(&path).json(), created);

    // The same configuration again changes nothing: same resourceVersion, no event.
    let watch = s.watch(&format!("{path}?watch=true&resourceVersion={}", rv(&created)));
    std::thread::sleep(Duration::from_millis(1100));
    let again = expect(
        s.request(
            "PATCH",
            &format!("{path}?fieldManager=alice"),
            &[],
            Some((APPLY, yaml.as_bytes())),
        ),
        200,
    );
    assert_eq!(again, created);
    watch.expect_none(Duration::from_millis(500));

    // A changed configuration updates (200) and bumps the generation.
    let changed = vm("ns", "vm1", json!({"running": false}));
    let updated = expect(apply(&s, &path, "alice", false, &changed), 200);
    assert_ne!(rv(&updated), rv(&created));
    assert_eq!(updated["spec"], json!({"running": false}));
    assert_eq!(updated["metadata"]["generation"], 2);
    // The label alice no longer applies is gone: nobody else owns it.
    assert!(updated["metadata"].get("labels").is_none(), "{updated}");
    assert_eq!(fields(&updated, "alice", "Apply"), json!({"f:spec": {"f:running": {}}}));
    assert_eq!(watch.expect()["type"], "MODIFIED");

    // dryRun answers without storing.
    let dry = vm("ns", "vm1", json!({"running": true}));
    let answered =
        expect(s.patch(&format!("{path}?fieldManager=alice&dryRun=All"), APPLY, &dry), 200);
    assert_eq!(answered["spec"]["running"], true);
    assert_eq!(s.get(&path).json()["spec"]["running"], false);
}

#[test]
fn two_managers_own_disjoint_fields() {
    let s = TestServer::start();
    s.namespace("ns");
    let path = vm_path("ns", "vm");
    let a = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
                   "metadata": {"name": "vm", "labels": {"a": "1"}}, "spec": {"running": true}});
    let b = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
                   "metadata": {"name": "vm", "labels": {"b": "2"}, "annotations": {"note": "x"}},
                   "spec": {"runStrategy": "Always"}});
    expect(apply(&s, &path, "manager-a", false, &a), 201);
    let obj = expect(apply(&s, &path, "manager-b", false, &b), 200);
    assert_eq!(obj["metadata"]["labels"], json!({"a": "1", "b": "2"}));
    assert_eq!(obj["spec"], json!({"running": true, "runStrategy": "Always"}));
    assert_eq!(
        fields(&obj, "manager-a", "Apply"),
        json!({"f:metadata": {"f:labels": {"f:a": {}}}, "f:spec": {"f:running": {}}})
    );
    assert_eq!(
        fields(&obj, "manager-b", "Apply"),
        json!({"f:metadata": {"f:annotations": {"f:note": {}}, "f:labels": {"f:b": {}}},
               "f:spec": {"f:runStrategy": {}}})
    );
    assert_eq!(entries(&obj).len(), 2);
}

#[test]
fn conflicts_name_exactly_the_conflicting_paths_and_force_takes_them() {
    let s = TestServer::start();
    s.namespace("ns");
    let path = vm_path("ns", "vm");
    let spec = json!({"running": true, "runStrategy": "Always",
                      "template": {"metadata": {"labels": {"x": "1"}}}});
    expect(apply(&s, &path, "owner", false, &vm("ns", "vm", spec)), 201);

    // One conflict: only the changed field, not the equal one nor the new one.
    let one = vm(
        "ns",
        "vm",
        json!({"running": false, "runStrategy": "Always", "instancetype": {"name": "u1"}}),
    );
    let r = expect(apply(&s, &path, "intruder", false, &one), 409);
    assert_eq!(r["reason"], "Conflict");
    assert_eq!(
        r["message"],
        "Apply failed with 1 conflict: conflict with \"owner\": .spec.running"
    );
    assert_eq!(
        r["details"],
        json!({"causes": [{"reason": "FieldManagerConflict", "message": "conflict with \"owner\"",
                           "field": ".spec.running"}]})
    );

    // Several conflicts are listed per manager.
    let two = vm("ns", "vm", json!({"running": false, "runStrategy": "Halted"}));
    let r = expect(apply(&s, &path, "intruder", false, &two), 409);
    assert_eq!(
        r["message"],
        "Apply failed with 2 conflicts: conflicts with \"owner\":\n- .spec.runStrategy\n- .spec.running"
    );
    let fields_named = cause_fields(&r);
    assert_eq!(fields_named, [".spec.runStrategy", ".spec.running"]);
    // Nothing was written.
    assert_eq!(s.get(&path).json()["spec"]["running"], true);

    // force takes the fields: the old owner keeps only what was not contested.
    let obj = expect(apply(&s, &path, "intruder", true, &two), 200);
    assert_eq!(obj["spec"]["running"], false);
    assert_eq!(obj["spec"]["runStrategy"], "Halted");
    assert_eq!(
        fields(&obj, "intruder", "Apply"),
        json!({"f:spec": {"f:runStrategy": {}, "f:running": {}}})
    );
    let owner = fields(&obj, "owner", "Apply");
    assert!(
        owner["f:spec"].get("f:running").is_none()
            && owner["f:spec"].get("f:runStrategy").is_none(),
        "{owner}"
    );
    assert!(owner["f:spec"].get("f:template").is_some(), "{owner}");

    // An Update owner is named with its apiVersion.
    expect(
        s.patch(&format!("{path}?fieldManager=editor"), MERGE, &json!({"spec": {"running": true}})),
        200,
    );
    let r = expect(apply(&s, &path, "intruder", false, &two), 409);
    assert_eq!(
        r["message"],
        "Apply failed with 1 conflict: conflict with \"editor\" using kubevirt.io/v1: .spec.running"
    );
}

#[test]
fn a_dropped_field_is_removed_only_when_nobody_else_owns_it() {
    let s = TestServer::start();
    s.namespace("ns");
    let path = vm_path("ns", "vm");
    let first = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
                       "metadata": {"name": "vm", "labels": {"keep": "1", "drop": "2", "shared": "3"}},
                       "spec": {"running": true, "runStrategy": "Always"}});
    expect(apply(&s, &path, "a", false, &first), 201);
    // b applies the same values for some fields: no conflict, shared ownership.
    let b = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
                   "metadata": {"name": "vm", "labels": {"shared": "3"}}, "spec": {"runStrategy": "Always"}});
    let obj = expect(apply(&s, &path, "b", false, &b), 200);
    assert_eq!(
        fields(&obj, "b", "Apply"),
        json!({"f:metadata": {"f:labels": {"f:shared": {}}}, "f:spec": {"f:runStrategy": {}}})
    );
    assert_eq!(fields(&obj, "a", "Apply")["f:spec"], json!({"f:runStrategy": {}, "f:running": {}}));

    // a drops drop, shared and runStrategy: only the field nobody else owns goes.
    let second = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
                        "metadata": {"name": "vm", "labels": {"keep": "1"}}, "spec": {"running": true}});
    let obj = expect(apply(&s, &path, "a", false, &second), 200);
    assert_eq!(obj["metadata"]["labels"], json!({"keep": "1", "shared": "3"}));
    assert_eq!(obj["spec"], json!({"running": true, "runStrategy": "Always"}));

    // Now b drops them too, and they go.
    let empty = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "vm"}});
    let obj = expect(apply(&s, &path, "b", false, &empty), 200);
    assert_eq!(obj["metadata"]["labels"], json!({"keep": "1"}));
    assert_eq!(obj["spec"], json!({"running": true}));
    assert_eq!(managers(&obj), [("a".to_string(), "Apply".to_string())]);

    // A field an updater set survives its applier dropping it.
    expect(
        s.patch(
            &format!("{path}?fieldManager=editor"),
            MERGE,
            &json!({"metadata": {"labels": {"keep": "1", "ed": "x"}}}),
        ),
        200,
    );
    let obj = expect(
        apply(
            &s,
            &path,
            "a",
            false,
            &json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "vm"}, "spec": {"running": true}}),
        ),
        200,
    );
    assert_eq!(obj["metadata"]["labels"], json!({"ed": "x"}));
}

#[test]
fn writes_record_update_entries_for_their_manager() {
    let s = TestServer::start();
    s.namespace("ns");
    let coll = "/apis/kubevirt.io/v1/namespaces/ns/virtualmachines";
    let path = vm_path("ns", "vm");
    let mut body = vm("ns", "vm", json!({"running": true}));
    body["metadata"]["labels"] = json!({"app": "x"});
    let created = expect(
        s.request(
            "POST",
            &format!("{coll}?fieldManager=creator"),
            &[],
            Some(("application/json", body.to_string().as_bytes())),
        ),
        201,
    );
    let e = entry(&created, "creator", "Update");
    assert_eq!(e["apiVersion"], "kubevirt.io/v1");
    assert_eq!(e["fieldsType"], "FieldsV1");
    assert!(is_rfc3339_seconds(e["time"].as_str().unwrap()), "{e}");
    assert_eq!(
        e["fieldsV1"],
        json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {".": {}, "f:running": {}}})
    );

    // PUT without fieldManager: the User-Agent up to its first slash names the manager.
    let mut put = created.clone();
    put["spec"]["running"] = json!(false);
    put["spec"]["runStrategy"] = json!("Manual");
    let updated = expect(
        s.request(
            "PUT",
            &path,
            &[("User-Agent", "my-editor/1.2.3 (linux/amd64)")],
            Some(("application/json", put.to_string().as_bytes())),
        ),
        200,
    );
    assert_eq!(
        fields(&updated, "my-editor", "Update"),
        json!({"f:spec": {"f:runStrategy": {}, "f:running": {}}})
    );
    // The creator lost the field the editor changed.
    assert_eq!(
        fields(&updated, "creator", "Update"),
        json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {}})
    );

    // A merge patch through another version records that version.
    let other = "/apis/kubevirt.io/v1alpha3/namespaces/ns/virtualmachines/vm";
    let patched = expect(
        s.request(
            "PATCH",
            &format!("{other}?fieldManager=patcher"),
            &[],
            Some((MERGE, br#"{"metadata":{"labels":{"tier":"db"}}}"#)),
        ),
        200,
    );
    let e = entry(&patched, "patcher", "Update");
    assert_eq!(e["apiVersion"], "kubevirt.io/v1alpha3");
    assert_eq!(e["fieldsV1"], json!({"f:metadata": {"f:labels": {"f:tier": {}}}}));
    // The same manager writing again merges into its entry.
    let again = expect(
        s.request(
            "PATCH",
            &format!("{other}?fieldManager=patcher"),
            &[],
            Some((MERGE, br#"{"metadata":{"annotations":{"a":"b"}}}"#)),
        ),
        200,
    );
    assert_eq!(
        fields(&again, "patcher", "Update"),
        json!({"f:metadata": {"f:annotations": {".": {}, "f:a": {}}, "f:labels": {"f:tier": {}}}})
    );
    assert_eq!(entries(&again).len(), 3, "{again:#}");
    // A JSON patch with the default client's User-Agent.
    let j = expect(
        s.request(
            "PATCH",
            &path,
            &[("User-Agent", "kubectl/v1.32.4 (linux/amd64) kubernetes/abc")],
            Some((
                "application/json-patch+json",
                br#"[{"op":"add","path":"/spec/instancetype","value":{"name":"u1"}}]"#,
            )),
        ),
        200,
    );
    assert_eq!(
        fields(&j, "kubectl", "Update"),
        json!({"f:spec": {"f:instancetype": {".": {}, "f:name": {}}}})
    );
    // A write that changes nothing adds nothing and keeps the resourceVersion.
    let same = expect(
        s.request(
            "PATCH",
            &format!("{path}?fieldManager=idle"),
            &[],
            Some((MERGE, br#"{"spec":{"running":false}}"#)),
        ),
        200,
    );
    assert_eq!(rv(&same), rv(&j));
    assert!(managers(&same).iter().all(|(m, _)| m != "idle"));
}

#[test]
fn managed_fields_in_a_body_are_taken_reset_or_ignored() {
    let s = TestServer::start();
    s.namespace("ns");
    let path = vm_path("ns", "vm");
    let created =
        expect(apply(&s, &path, "a", false, &vm("ns", "vm", json!({"running": true}))), 201);

    // Only timestamps differ: a no-op.
    let mut retimed = created.clone();
    retimed["metadata"]["managedFields"][0]["time"] = json!("2001-01-01T00:00:00Z");
    let r = expect(s.put(&path, &retimed), 200);
    assert_eq!(rv(&r), rv(&created));
    assert_eq!(r, created);

    // Garbage is ignored: the live entries stay.
    let mut garbage = created.clone();
    garbage["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Sideways"}]);
    let r = expect(s.put(&path, &garbage), 200);
    assert_eq!(r["metadata"]["managedFields"], created["metadata"]["managedFields"]);

    // Valid entries are taken as given.
    let given = json!([{"manager": "someone", "operation": "Update", "apiVersion": "kubevirt.io/v1",
                        "time": "2020-01-02T03:04:05Z", "fieldsType": "FieldsV1",
                        "fieldsV1": {"f:spec": {"f:running": {}}}}]);
    let mut rewritten = s.get(&path).json();
    rewritten["metadata"]["managedFields"] = given.clone();
    let r = expect(s.put(&path, &rewritten), 200);
    assert_eq!(r["metadata"]["managedFields"], given);
    assert_ne!(rv(&r), rv(&created));

    // [{}] and [] clear them.
    let r = expect(s.patch(&path, MERGE, &json!({"metadata": {"managedFields": [{}]}})), 200);
    assert!(r["metadata"].get("managedFields").is_none(), "{r:#}");
    expect(apply(&s, &path, "a", false, &vm("ns", "vm", json!({"running": true}))), 200);
    let mut cleared = s.get(&path).json();
    cleared["metadata"]["managedFields"] = json!([]);
    let r = expect(s.put(&path, &cleared), 200);
    assert!(r["metadata"].get("managedFields").is_none(), "{r:#}");
    // A body without managedFields keeps the live ones.
    expect(apply(&s, &path, "a", false, &vm("ns", "vm", json!({"running": true}))), 200);
    let live = s.get(&path).json();
    let r = expect(s.patch(&path, MERGE, &json!({"metadata": {"labels": {"l": "v"}}})), 200);
    assert_eq!(r["metadata"]["managedFields"][0], live["metadata"]["managedFields"][0]);
}

#[test]
fn finalizers_merge_as_a_set_and_owner_references_by_uid() {
    let s = TestServer::start();
    s.namespace("ns");
    let path = vm_path("ns", "vm");
    let with_meta = |meta: Value| {
        let mut m = json!({"name": "vm"});
        m.as_object_mut().unwrap().extend(meta.as_object().unwrap().clone());
        json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": m})
    };
    expect(apply(&s, &path, "a", false, &with_meta(json!({"finalizers": ["a.io/one"]}))), 201);
    let obj =
        expect(apply(&s, &path, "b", false, &with_meta(json!({"finalizers": ["b.io/two"]}))), 200);
    assert_eq!(obj["metadata"]["finalizers"], json!(["a.io/one", "b.io/two"]));
    assert_eq!(
        fields(&obj, "b", "Apply"),
        json!({"f:metadata": {"f:finalizers": {"v:\"b.io/two\"": {}}}})
    );
    let obj = expect(apply(&s, &path, "a", false, &with_meta(json!({}))), 200);
    assert_eq!(obj["metadata"]["finalizers"], json!(["b.io/two"]));

    // ownerReferences is a list-map keyed by uid: a new item merges, a changed item conflicts.
    let owner = |uid: &str, name: &str| json!({"apiVersion": "v1", "kind": "Thing", "name": name, "uid": uid});
    let obj = expect(
        apply(&s, &path, "a", false, &with_meta(json!({"ownerReferences": [owner("u1", "one")]}))),
        200,
    );
    assert_eq!(
        fields(&obj, "a", "Apply"),
        json!({"f:metadata": {"f:ownerReferences": {"k:{\"uid\":\"u1\"}": {}}}})
    );
    let r = expect(
        apply(
            &s,
            &path,
            "c",
            false,
            &with_meta(json!({"ownerReferences": [owner("u1", "other")]})),
        ),
        409,
    );
    assert_eq!(
        r["message"],
        "Apply failed with 1 conflict: conflict with \"a\": .metadata.ownerReferences[uid=\"u1\"]"
    );
    let obj = expect(
        apply(&s, &path, "c", false, &with_meta(json!({"ownerReferences": [owner("u2", "two")]}))),
        200,
    );
    let uids: Vec<&str> = obj["metadata"]["ownerReferences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["uid"].as_str().unwrap())
        .collect();
    assert_eq!(uids, ["u1", "u2"]);
    // Let the server delete it later: drop the finalizer.
    expect(apply(&s, &path, "b", false, &with_meta(json!({}))), 200);
}

#[test]
fn a_merge_patched_field_gives_exactly_one_conflict_on_reapply() {
    let s = TestServer::start();
    s.namespace("ns");
    let path = "/apis/kubevirt.io/v1/namespaces/ns/virtualmachineinstancereplicasets/rs";
    let body = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceReplicaSet",
                      "metadata": {"name": "rs"}, "spec": {"replicas": 3, "selector": {"matchLabels": {"a": "b"}}}});
    expect(apply(&s, path, "deployer", false, &body), 201);
    expect(
        s.patch(&format!("{path}?fieldManager=scaler"), MERGE, &json!({"spec": {"replicas": 5}})),
        200,
    );
    let r = expect(apply(&s, path, "deployer", false, &body), 409);
    let causes = r["details"]["causes"].as_array().unwrap();
    assert_eq!(causes.len(), 1, "{r}");
    assert_eq!(causes[0]["field"], ".spec.replicas");
    assert_eq!(causes[0]["message"], "conflict with \"scaler\" using kubevirt.io/v1");
    assert_eq!(
        r["message"],
        "Apply failed with 1 conflict: conflict with \"scaler\" using kubevirt.io/v1: .spec.replicas"
    );
    let obj = expect(apply(&s, path, "deployer", true, &body), 200);
    assert_eq!(obj["spec"]["replicas"], 3);
    // The scaler owned nothing else, so its entry is gone.
    assert!(managers(&obj).iter().all(|(m, _)| m != "scaler"), "{obj:#}");
}

#[test]
fn a_forced_apply_replaces_an_atomic_list() {
    let s = TestServer::start();
    s.namespace("ns");
    let path = vm_path("ns", "vm");
    let tolerations = |keys: &[&str]| {
        let items: Vec<Value> =
            keys.iter().map(|k| json!({"key": k, "operator": "Exists"})).collect();
        vm("ns", "vm", json!({"template": {"spec": {"tolerations": items}}}))
    };
    expect(apply(&s, &path, "a", false, &tolerations(&["one", "two"])), 201);
    let r = expect(apply(&s, &path, "b", false, &tolerations(&["three"])), 409);
    assert_eq!(
        r["message"],
        "Apply failed with 1 conflict: conflict with \"a\": .spec.template.spec.tolerations"
    );
    let obj = expect(apply(&s, &path, "b", true, &tolerations(&["three"])), 200);
    assert_eq!(
        obj["spec"]["template"]["spec"]["tolerations"],
        json!([{"key": "three", "operator": "Exists"}])
    );
}

#[test]
fn apply_works_through_two_versions() {
    let s = TestServer::start();
    s.namespace("ns");
    let v1 = vm_path("ns", "vm");
    let alpha = "/apis/kubevirt.io/v1alpha3/namespaces/ns/virtualmachines/vm";
    expect(apply(&s, &v1, "a", false, &vm("ns", "vm", json!({"running": true}))), 201);
    let mut body = vm("ns", "vm", json!({"running": true, "runStrategy": "Always"}));
    body["apiVersion"] = json!("kubevirt.io/v1alpha3");
    let obj = expect(apply(&s, alpha, "a", false, &body), 200);
    assert_eq!(obj["apiVersion"], "kubevirt.io/v1alpha3");
    // One applier across versions: its entry now names the version it last applied.
    let e = entry(&obj, "a", "Apply");
    assert_eq!(e["apiVersion"], "kubevirt.io/v1alpha3");
    assert_eq!(e["fieldsV1"], json!({"f:spec": {"f:runStrategy": {}, "f:running": {}}}));
    assert_eq!(entries(&obj).len(), 1);
    assert_eq!(s.get(&v1).json()["spec"]["runStrategy"], "Always");
}

#[test]
fn put_to_a_missing_object_is_not_found_but_apply_creates() {
    let s = TestServer::start();
    s.namespace("ns");
    let path = vm_path("ns", "ghost");
    let mut body = vm("ns", "ghost", json!({}));
    body["metadata"]["resourceVersion"] = json!("1");
    assert_eq!(s.put(&path, &body).status, 404);
    expect(apply(&s, &path, "a", false, &vm("ns", "ghost", json!({}))), 201);
}

// ---------------------------------------------------------------------------------------------
// kubectl

const VM_MANIFEST: &str = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: ssa-vm\n  labels:\n    app: ssa\nspec:\n  running: true\n  template:\n    spec:\n      domain:\n        devices: {}\n";

#[test]
fn kubectl_server_side_apply_conflicts_and_force() {
    let s = TestServer::start();
    let k = Kubectl::new(&s);
    k.ok(&["create", "namespace", "ssa"]);
    let file = k.file("vm.yaml", VM_MANIFEST);
    let file = file.to_str().unwrap();
    let out = k.ok(&["apply", "--server-side", "-n", "ssa", "-f", file]);
    assert!(out.contains("virtualmachine.kubevirt.io/ssa-vm serverside-applied"), "{out}");
    let path = vm_path("ssa", "ssa-vm");
    let obj = s.get(&path).json();
    assert_eq!(managers(&obj), [("kubectl".to_string(), "Apply".to_string())]);
    assert_eq!(fields(&obj, "kubectl", "Apply")["f:spec"]["f:running"], json!({}));

    k.ok(&[
        "patch",
        "vm",
        "ssa-vm",
        "-n",
        "ssa",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"running":false}}"#,
    ]);
    let obj = s.get(&path).json();
    assert_eq!(fields(&obj, "kubectl-patch", "Update"), json!({"f:spec": {"f:running": {}}}));

    let err = k.fails(&["apply", "--server-side", "-n", "ssa", "-f", file]);
    assert!(
        err.contains(r#"Apply failed with 1 conflict: conflict with "kubectl-patch" using kubevirt.io/v1: .spec.running"#),
        "{err}"
    );
    assert_eq!(s.get(&path).json()["spec"]["running"], false);

    let out = k.ok(&["apply", "--server-side", "--force-conflicts", "-n", "ssa", "-f", file]);
    assert!(out.contains("serverside-applied"), "{out}");
    let obj = s.get(&path).json();
    assert_eq!(obj["spec"]["running"], true);
    assert!(managers(&obj).iter().all(|(m, _)| m != "kubectl-patch"), "{obj:#}");
    // Unchanged: a repeat keeps the resourceVersion.
    k.ok(&["apply", "--server-side", "-n", "ssa", "-f", file]);
    assert_eq!(rv(&s.get(&path).json()), rv(&obj));
}

#[test]
fn kubectl_moves_a_client_side_applied_object_to_server_side_apply() {
    let s = TestServer::start();
    let k = Kubectl::new(&s);
    let file = k.file("vm.yaml", VM_MANIFEST);
    let file = file.to_str().unwrap();
    k.ok(&["create", "namespace", "csa"]);
    k.ok(&["apply", "-n", "csa", "-f", file]);
    let path = vm_path("csa", "ssa-vm");
    let obj = s.get(&path).json();
    assert_eq!(managers(&obj), [("kubectl-client-side-apply".to_string(), "Update".to_string())]);

    // A field the client-side apply set changes: no conflict with kubectl-client-side-apply,
    // since the annotation shows kubectl set it. kubectl then keeps the annotation under
    // `kubectl-last-applied`, rewrites the client-side entry into its own with a JSON patch
    // (csaupgrade), and applies again.
    let changed = k.file("vm1.yaml", &VM_MANIFEST.replace("running: true", "running: false"));
    let out = k.ok(&["apply", "--server-side", "-n", "csa", "-f", changed.to_str().unwrap()]);
    assert!(out.contains("serverside-applied"), "{out}");
    let obj = s.get(&path).json();
    let apply = |m: &str| (m.to_string(), "Apply".to_string());
    let mut all = managers(&obj);
    all.sort();
    assert_eq!(all, [apply("kubectl"), apply("kubectl-last-applied")], "{obj:#}");
    assert_eq!(
        fields(&obj, "kubectl-last-applied", "Apply"),
        json!({"f:metadata": {"f:annotations": {"f:kubectl.kubernetes.io/last-applied-configuration": {}}}})
    );
    assert_eq!(obj["spec"]["running"], false);
    let annotation = obj["metadata"]["annotations"]
        ["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .unwrap();
    assert!(annotation.contains(r#""running":false"#), "kept in step: {annotation}");
    let owned = fields(&obj, "kubectl", "Apply");
    assert_eq!(owned["f:spec"]["f:running"], json!({}), "{owned}");
    assert_eq!(owned["f:metadata"]["f:labels"]["f:app"], json!({}), "{owned}");

    // Dropping a field from the manifest now removes it from the object.
    let smaller = k.file(
        "vm2.yaml",
        &VM_MANIFEST
            .replace("  labels:\n    app: ssa\n", "")
            .replace("running: true", "running: false"),
    );
    k.ok(&["apply", "--server-side", "-n", "csa", "-f", smaller.to_str().unwrap()]);
    let obj = s.get(&path).json();
    assert!(obj["metadata"]["labels"].get("app").is_none(), "{obj:#}");
}

#[test]
fn status_is_applied_only_through_its_subresource() {
    let s = TestServer::start();
    s.namespace("ns");
    let path = vm_path("ns", "vm");
    let status_path = format!("{path}/status");
    let with = |spec: Value, status: Value| {
        let mut v = vm("ns", "vm", spec);
        v["status"] = status;
        v
    };
    // The main resource ignores status, on create and after.
    let obj = expect(
        apply(
            &s,
            &path,
            "a",
            false,
            &with(json!({"running": true}), json!({"printableStatus": "Up"})),
        ),
        201,
    );
    assert!(obj.get("status").is_none(), "{obj:#}");
    assert_eq!(fields(&obj, "a", "Apply"), json!({"f:spec": {"f:running": {}}}));

    // /status changes status only, and its entry says so.
    let obj = expect(
        apply(
            &s,
            &status_path,
            "ctrl",
            false,
            &with(json!({"running": false}), json!({"printableStatus": "Running"})),
        ),
        200,
    );
    assert_eq!(obj["status"], json!({"printableStatus": "Running"}));
    assert_eq!(obj["spec"], json!({"running": true}));
    let e = entry(&obj, "ctrl", "Apply");
    assert_eq!(e["subresource"], "status");
    assert_eq!(e["fieldsV1"], json!({"f:status": {"f:printableStatus": {}}}));
    assert_eq!(obj["metadata"]["generation"], 1);

    // A main apply with another status neither changes it nor conflicts.
    let obj = expect(
        apply(
            &s,
            &path,
            "a",
            false,
            &with(json!({"running": true}), json!({"printableStatus": "Stopped"})),
        ),
        200,
    );
    assert_eq!(obj["status"], json!({"printableStatus": "Running"}));

    // A second status applier conflicts with the first, named with its subresource.
    let r = expect(
        apply(
            &s,
            &status_path,
            "ctrl2",
            false,
            &with(json!({}), json!({"printableStatus": "Paused"})),
        ),
        409,
    );
    assert_eq!(
        r["message"],
        "Apply failed with 1 conflict: conflict with \"ctrl\" with subresource \"status\": .status.printableStatus"
    );

    // Updates through /status record the subresource too.
    let mut current = s.get(&path).json();
    current["status"]["ready"] = json!(true);
    let obj = expect(
        s.request(
            "PUT",
            &status_path,
            &[("User-Agent", "virt-controller/v1.0")],
            Some(("application/json", current.to_string().as_bytes())),
        ),
        200,
    );
    let e = entry(&obj, "virt-controller", "Update");
    assert_eq!(e["subresource"], "status");
    assert_eq!(e["fieldsV1"], json!({"f:status": {"f:ready": {}}}));

    // Apply never creates through /status.
    let r = apply(
        &s,
        &format!("{}/status", vm_path("ns", "none")),
        "ctrl",
        false,
        &vm("ns", "none", json!({})),
    );
    assert_eq!(r.status, 404, "{}", r.text());
}

#[test]
fn scale_writes_record_the_scale_subresource() {
    let s = TestServer::start();
    s.namespace("ns");
    let path = "/apis/kubevirt.io/v1/namespaces/ns/virtualmachineinstancereplicasets/rs";
    let body = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceReplicaSet",
                      "metadata": {"name": "rs"}, "spec": {"replicas": 2}});
    expect(apply(&s, path, "deployer", false, &body), 201);
    let scaled = format!("{path}/scale?fieldManager=autoscaler");
    expect(s.patch(&scaled, MERGE, &json!({"spec": {"replicas": 4}})), 200);
    let obj = s.get(path).json();
    assert_eq!(obj["spec"]["replicas"], 4);
    let e = entry(&obj, "autoscaler", "Update");
    assert_eq!(e["subresource"], "scale");
    assert_eq!(e["fieldsV1"], json!({"f:spec": {"f:replicas": {}}}));
    let r = expect(apply(&s, path, "deployer", false, &body), 409);
    assert_eq!(
        r["message"],
        "Apply failed with 1 conflict: conflict with \"autoscaler\" with subresource \"scale\" using kubevirt.io/v1: .spec.replicas"
    );
}

#[test]
fn apply_works_on_cluster_scoped_kinds() {
    let s = TestServer::start();
    let path = "/apis/instancetype.kubevirt.io/v1alpha2/virtualmachineclusterinstancetypes/small";
    let body = json!({"apiVersion": "instancetype.kubevirt.io/v1alpha2",
                      "kind": "VirtualMachineClusterInstancetype",
                      "metadata": {"name": "small"}, "spec": {"cpu": {"guest": 1}}});
    let obj = expect(apply(&s, path, "a", false, &body), 201);
    assert!(obj["metadata"].get("namespace").is_none(), "{obj:#}");
    assert_eq!(entry(&obj, "a", "Apply")["apiVersion"], "instancetype.kubevirt.io/v1alpha2");
    let mut bigger = body.clone();
    bigger["spec"]["cpu"]["guest"] = json!(2);
    let obj = expect(apply(&s, path, "a", false, &bigger), 200);
    assert_eq!(obj["spec"]["cpu"]["guest"], 2);
}
