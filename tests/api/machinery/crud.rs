//! Create, update, patch and delete in detail: ObjectMeta rules, error bodies and options
//! (B.1, B.2, B.3, B.6, A.9, A.11, A.13).

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::*;
use virt_apiserver::resource::ResourceInfo;

const NS: &str = "crud";

fn vm() -> &'static ResourceInfo {
    resource("kubevirt.io", "v1", "virtualmachines")
}

/// A cluster-scoped kind.
fn cluster_kind() -> &'static ResourceInfo {
    resource("instancetype.kubevirt.io", "v1alpha2", "virtualmachineclusterinstancetypes")
}

fn token_kind() -> &'static ResourceInfo {
    resource("upload.cdi.kubevirt.io", "v1beta1", "uploadtokenrequests")
}

fn vms() -> String {
    collection_path(vm(), Some(NS))
}

fn vm_path(name: &str) -> String {
    item_path(vm(), NS, name)
}

fn unix_now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

fn is_uuid_v4(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    parts.iter().map(|p| p.len()).collect::<Vec<_>>() == [8, 4, 4, 4, 12]
        && s.chars().all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c))
        && parts[2].starts_with('4')
}

#[test]
fn create_sets_system_fields() {
    let s = TestServer::start();
    s.namespace(NS);
    let mut body = object(vm(), NS, "sys");
    // A client cannot choose these.
    body["metadata"]["uid"] = json!("not-a-uuid");
    body["metadata"]["creationTimestamp"] = json!("2000-01-01T00:00:00Z");
    body["metadata"]["generation"] = json!(7);
    let before = unix_now();
    let obj = s.create(vm(), &body);
    let meta = &obj["metadata"];
    let uid = meta["uid"].as_str().unwrap();
    assert!(is_uuid_v4(uid), "uid {uid:?}");
    let ts = meta["creationTimestamp"].as_str().unwrap();
    assert_eq!(ts.len(), 20, "RFC 3339 at seconds precision: {ts:?}");
    assert!(ts.ends_with('Z'), "{ts:?}");
    let t = virt_apiserver::meta::parse_rfc3339(ts).expect("parses");
    assert!(t >= before - 1 && t <= unix_now() + 1, "creationTimestamp {ts} is now");
    assert_eq!(meta["generation"], 1);
    assert_eq!(meta["namespace"], NS);
    assert!(rv(&obj) > 0);
    let other = s.create(vm(), &object(vm(), NS, "sys2"));
    assert_ne!(other["metadata"]["uid"], meta["uid"]);
    assert!(rv(&other) > rv(&obj), "revisions grow");
}

#[test]
fn generate_name() {
    const ALPHABET: &str = "bcdfghjklmnpqrstvwxz2456789";
    let s = TestServer::start();
    s.namespace(NS);
    let mut names = std::collections::HashSet::new();
    for _ in 0..5 {
        let mut body = object(vm(), NS, "");
        body["metadata"].as_object_mut().unwrap().remove("name");
        body["metadata"]["generateName"] = json!("gen-");
        let obj = s.create(vm(), &body);
        let name = obj["metadata"]["name"].as_str().unwrap().to_string();
        let suffix = name.strip_prefix("gen-").expect("keeps the base");
        assert_eq!(suffix.len(), 5, "{name}");
        assert!(suffix.chars().all(|c| ALPHABET.contains(c)), "{name}");
        assert_eq!(obj["metadata"]["generateName"], "gen-");
        assert_eq!(s.get(&vm_path(&name)).status, 200);
        names.insert(name);
    }
    assert_eq!(names.len(), 5, "names differ");
    // A long base is cut to 58 characters.
    let mut body = object(vm(), NS, "");
    body["metadata"].as_object_mut().unwrap().remove("name");
    body["metadata"]["generateName"] = json!("x".repeat(80));
    let obj = s.create(vm(), &body);
    let name = obj["metadata"]["name"].as_str().unwrap();
    assert_eq!(name.len(), 63);
    assert!(name.starts_with(&"x".repeat(58)));
    // A name wins over generateName.
    let mut body = object(vm(), NS, "explicit");
    body["metadata"]["generateName"] = json!("gen-");
    assert_eq!(s.create(vm(), &body)["metadata"]["name"], "explicit");
    // Neither → 422 Required.
    let mut body = object(vm(), NS, "");
    body["metadata"].as_object_mut().unwrap().remove("name");
    let st = assert_status(&s.post(&vms(), &body), 422, "Invalid");
    assert_eq!(
        st["message"],
        "VirtualMachine.kubevirt.io \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );
}

#[test]
fn namespace_rules_on_create() {
    let s = TestServer::start();
    s.namespace(NS);
    // Defaulted from the path.
    let mut body = object(vm(), NS, "defaulted");
    body["metadata"].as_object_mut().unwrap().remove("namespace");
    let r = s.post(&vms(), &body);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["metadata"]["namespace"], NS);
    // Mismatch → 400.
    let mut body = object(vm(), NS, "elsewhere");
    body["metadata"]["namespace"] = json!("other");
    let st = assert_status(&s.post(&vms(), &body), 400, "BadRequest");
    assert_eq!(
        st["message"],
        "the namespace of the provided object does not match the namespace sent on the request"
    );
    assert!(st.get("details").is_none(), "BadRequest carries no details: {st}");
    // An invalid namespace in the path names no Namespace: kube's NamespaceLifecycle admission
    // answers 404 before the object is validated.
    let bad_ns = collection_path(vm(), Some("Bad_NS"));
    let mut body = object(vm(), NS, "x");
    body["metadata"].as_object_mut().unwrap().remove("namespace");
    let st = assert_status(&s.post(&bad_ns, &body), 404, "NotFound");
    assert_eq!(st["message"], "namespaces \"Bad_NS\" not found", "{st}");
    // Where namespaces are implicit, validation finds it: 422 on metadata.namespace.
    let implicit = TestServer::start_with(ServerOptions {
        memory: true,
        args: vec!["--implicit-namespaces".into()],
        ..Default::default()
    });
    let st = assert_status(&implicit.post(&bad_ns, &body), 422, "Invalid");
    assert_eq!(st["details"]["causes"][0]["field"], "metadata.namespace", "{st}");
    // Cluster kinds silently drop a body namespace.
    let ck = cluster_kind();
    let mut body = object(ck, NS, "cluster-one");
    body["metadata"]["namespace"] = json!("ignored");
    let r = s.post(&collection_path(ck, None), &body);
    assert_eq!(r.status, 201, "{}", r.text());
    let obj = r.json();
    assert!(obj["metadata"].get("namespace").is_none(), "{obj}");
    assert_eq!(s.get(&item_path(ck, "", "cluster-one")).status, 200);
}

#[test]
fn type_meta_must_match_the_url() {
    let s = TestServer::start();
    let mut body = object(vm(), NS, "k");
    body["kind"] = json!("VirtualMachineInstance");
    let st = assert_status(&s.post(&vms(), &body), 422, "Invalid");
    assert_eq!(
        st["message"],
        "VirtualMachine.kubevirt.io \"k\" is invalid: kind: Invalid value: \"VirtualMachineInstance\": must be VirtualMachine"
    );
    assert_eq!(st["details"]["causes"][0]["field"], "kind");
    assert_eq!(st["details"]["causes"][0]["reason"], "FieldValueInvalid");
    assert_eq!(st["details"]["kind"], "VirtualMachine");

    let mut body = object(vm(), NS, "v");
    body["apiVersion"] = json!("kubevirt.io/v1alpha3");
    let st = assert_status(&s.post(&vms(), &body), 400, "BadRequest");
    assert_eq!(
        st["message"],
        "the API version in the data (kubevirt.io/v1alpha3) does not match the expected API version (kubevirt.io/v1)"
    );
    assert_eq!(s.get(&vm_path("k")).status, 404);
    assert_eq!(s.get(&vm_path("v")).status, 404);
}

#[test]
fn invalid_names_are_422() {
    let s = TestServer::start();
    s.namespace(NS);
    for bad in ["Upper", "with.dot", "-lead", "trail-", "under_score", &"a".repeat(254)] {
        let st = assert_status(&s.post(&vms(), &object(vm(), NS, bad)), 422, "Invalid");
        let prefix = format!(
            "VirtualMachine.kubevirt.io {bad:?} is invalid: metadata.name: Invalid value: {bad:?}: "
        );
        assert!(st["message"].as_str().unwrap().starts_with(&prefix), "{bad}: {st}");
        let d = &st["details"];
        assert_eq!(d["name"], bad);
        assert_eq!(d["group"], "kubevirt.io");
        assert_eq!(d["kind"], "VirtualMachine", "Invalid details name the Kind");
        assert_eq!(d["causes"][0]["field"], "metadata.name", "{st}");
        assert_eq!(d["causes"][0]["reason"], "FieldValueInvalid");
        assert_eq!(s.get(&vm_path(bad)).status, 404, "{bad} not stored");
    }
    // Several errors are joined in brackets.
    let body = labelled(vm(), NS, "Bad", json!({"k": "-v"}));
    let st = assert_status(&s.post(&vms(), &body), 422, "Invalid");
    let msg = st["message"].as_str().unwrap();
    assert!(msg.starts_with("VirtualMachine.kubevirt.io \"Bad\" is invalid: [metadata.name: Invalid value: \"Bad\": "), "{msg}");
    assert!(
        msg.contains(", metadata.labels: Invalid value: \"-v\": ") && msg.ends_with(']'),
        "{msg}"
    );
    assert_eq!(st["details"]["causes"].as_array().unwrap().len(), 2, "{st}");
    // The longest allowed name.
    let long = "a".repeat(253);
    s.create(vm(), &object(vm(), NS, &long));
    assert_eq!(s.get(&vm_path(&long)).status, 200);
}

#[test]
fn bad_labels_are_422() {
    let s = TestServer::start();
    s.namespace(NS);
    let cases = [
        json!({"bad key": "v"}),
        json!({"k": "-starts-with-dash"}),
        json!({"k": "a".repeat(64)}),
        json!({ "a".repeat(64): "v" }),
        json!({"Bad_Prefix!/k": "v"}),
    ];
    for (i, labels) in cases.iter().enumerate() {
        let body = labelled(vm(), NS, &format!("lbl-{i}"), labels.clone());
        let st = assert_status(&s.post(&vms(), &body), 422, "Invalid");
        assert_eq!(st["details"]["causes"][0]["field"], "metadata.labels", "{labels}: {st}");
        assert_eq!(st["details"]["kind"], "VirtualMachine");
    }
    let ok = labelled(vm(), NS, "lbl-ok", json!({"example.com/app": "web", "empty": ""}));
    s.create(vm(), &ok);
}

#[test]
fn other_metadata_rules() {
    let s = TestServer::start();
    s.namespace(NS);
    let cause_field = |body: &Value| -> String {
        let st = assert_status(&s.post(&vms(), body), 422, "Invalid");
        st["details"]["causes"][0]["field"].as_str().unwrap_or("").to_string()
    };
    let mut body = object(vm(), NS, "ann");
    body["metadata"]["annotations"] = json!({"big": "x".repeat(262_145)});
    let st = assert_status(&s.post(&vms(), &body), 422, "Invalid");
    assert_eq!(
        st["message"],
        "VirtualMachine.kubevirt.io \"ann\" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes"
    );
    let mut body = object(vm(), NS, "fins");
    body["metadata"]["finalizers"] = json!(["orphan", "foregroundDeletion"]);
    assert_eq!(cause_field(&body), "metadata.finalizers");
    let owner = |name: &str, uid: &str| json!({"apiVersion": "v1", "kind": "Thing", "name": name, "uid": uid, "controller": true});
    let mut body = object(vm(), NS, "owners");
    body["metadata"]["ownerReferences"] = json!([
        owner("o", "33333333-3333-4333-8333-333333333333"),
        owner("p", "44444444-4444-4444-8444-444444444444"),
    ]);
    assert_eq!(cause_field(&body), "metadata.ownerReferences");
    let mut body = object(vm(), NS, "fine");
    body["metadata"]["annotations"] = json!({"example.com/ok": "x".repeat(1000)});
    s.create(vm(), &body);
}

#[test]
fn resource_version_on_create_is_400() {
    let s = TestServer::start();
    let mut body = object(vm(), NS, "rv");
    body["metadata"]["resourceVersion"] = json!("5");
    let st = assert_status(&s.post(&vms(), &body), 400, "BadRequest");
    assert_eq!(st["message"], "resourceVersion should not be set on objects to be created");
}

#[test]
fn duplicate_create_is_409_already_exists() {
    let s = TestServer::start();
    s.namespace(NS);
    s.create(vm(), &object(vm(), NS, "dup"));
    let st = assert_status(&s.post(&vms(), &object(vm(), NS, "dup")), 409, "AlreadyExists");
    assert_eq!(st["message"], "virtualmachines.kubevirt.io \"dup\" already exists");
    assert_eq!(
        st["details"],
        json!({"name": "dup", "group": "kubevirt.io", "kind": "virtualmachines"})
    );
    // The same name in another namespace is another object.
    s.namespace("crud-other");
    let other = collection_path(vm(), Some("crud-other"));
    assert_eq!(s.post(&other, &object(vm(), "crud-other", "dup")).status, 201);
}

#[test]
fn put_rules() {
    let s = TestServer::start();
    s.namespace(NS);
    let created = s.create(vm(), &object(vm(), NS, "p"));

    // No resourceVersion → 422 naming the plural.
    let mut body = created.clone();
    body["metadata"].as_object_mut().unwrap().remove("resourceVersion");
    let st = assert_status(&s.put(&vm_path("p"), &body), 422, "Invalid");
    assert_eq!(
        st["message"],
        "virtualmachines.kubevirt.io \"p\" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"
    );
    assert_eq!(st["details"]["kind"], "virtualmachines");
    assert_eq!(st["details"]["causes"][0]["field"], "metadata.resourceVersion");

    // A missing object is not created.
    let mut ghost = object(vm(), NS, "ghost");
    ghost["metadata"]["resourceVersion"] = json!("1");
    let st = assert_status(&s.put(&vm_path("ghost"), &ghost), 404, "NotFound");
    assert_eq!(st["message"], "virtualmachines.kubevirt.io \"ghost\" not found");
    assert_eq!(s.get(&vm_path("ghost")).status, 404);

    // Body name ≠ URL name → 400.
    let st = assert_status(&s.put(&vm_path("other"), &created), 400, "BadRequest");
    assert_eq!(
        st["message"],
        "the name of the object (p) does not match the name on the URL (other)"
    );

    // Body namespace ≠ URL namespace → 400.
    let mut body = created.clone();
    body["metadata"]["namespace"] = json!("elsewhere");
    let st = assert_status(&s.put(&vm_path("p"), &body), 400, "BadRequest");
    assert_eq!(
        st["message"],
        "the namespace of the object (elsewhere) does not match the namespace on the request (crud)"
    );

    // Server-owned fields are kept.
    let mut body = created.clone();
    body["metadata"].as_object_mut().unwrap().remove("uid");
    body["metadata"]["creationTimestamp"] = json!("2000-01-01T00:00:00Z");
    body["metadata"]["generation"] = json!(99);
    body["metadata"]["labels"] = json!({"x": "y"});
    let r = s.put(&vm_path("p"), &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let updated = r.json();
    assert_eq!(updated["metadata"]["uid"], created["metadata"]["uid"]);
    assert_eq!(updated["metadata"]["creationTimestamp"], created["metadata"]["creationTimestamp"]);
    assert_eq!(updated["metadata"]["generation"], 1);
    assert_eq!(updated["metadata"]["labels"], json!({"x": "y"}));

    // A changed uid is refused.
    let mut body = updated.clone();
    body["metadata"]["uid"] = json!("00000000-0000-4000-8000-000000000000");
    let st = assert_status(&s.put(&vm_path("p"), &body), 422, "Invalid");
    assert_eq!(st["details"]["causes"][0]["field"], "metadata.uid", "{st}");

    // A no-op PUT keeps the resourceVersion and sends no event.
    let r = s.put(&vm_path("p"), &updated);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json(), updated, "no-op answers the stored object");
    let w = s.watch(&format!("{}?watch=1&resourceVersion={}", vms(), rv(&updated)));
    let mut changed = updated.clone();
    changed["spec"] = json!({"runStrategy": "Always"});
    let after = s.put(&vm_path("p"), &changed).json();
    let ev = next_event(&w, "MODIFIED", "p");
    assert_eq!(rv(&ev), rv(&after), "the first event after the no-op is the real change");
    assert_eq!(after["metadata"]["generation"], 2);
}

#[test]
fn json_patch() {
    let s = TestServer::start();
    s.namespace(NS);
    s.create(vm(), &object(vm(), NS, "jp"));
    let ops = json!([
        {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}},
        {"op": "replace", "path": "/spec/running", "value": false},
        {"op": "add", "path": "/spec/template", "value": {"metadata": {}, "spec": {"volumes": [{"name": "v1"}, {"name": "v2"}]}}},
        {"op": "copy", "from": "/metadata/labels", "path": "/spec/template/spec/nodeSelector"},
        {"op": "move", "from": "/spec/template/spec/nodeSelector", "path": "/spec/template/metadata/labels"},
    ]);
    let r = s.patch(&vm_path("jp"), "application/json-patch+json", &ops);
    assert_eq!(r.status, 200, "{}", r.text());
    let obj = r.json();
    assert_eq!(obj["metadata"]["labels"], json!({"a": "b"}));
    assert_eq!(
        obj["spec"],
        json!({"running": false, "template": {"metadata": {"labels": {"a": "b"}},
                                              "spec": {"volumes": [{"name": "v1"}, {"name": "v2"}]}}})
    );
    assert_eq!(obj["metadata"]["generation"], 2);
    assert_eq!(s.get_json(&vm_path("jp")), obj);

    // A failing test op rejects the whole patch.
    let ops = json!([
        {"op": "remove", "path": "/spec/template/spec/volumes"},
        {"op": "test", "path": "/spec/running", "value": true},
    ]);
    let st = assert_status(
        &s.patch(&vm_path("jp"), "application/json-patch+json", &ops),
        422,
        "Invalid",
    );
    assert_eq!(st["message"], "the server rejected our request due to an error in our request");
    let ops = json!([{"op": "remove", "path": "/spec/nothing"}]);
    let st = assert_status(
        &s.patch(&vm_path("jp"), "application/json-patch+json", &ops),
        422,
        "Invalid",
    );
    assert_eq!(st["message"], "the server rejected our request due to an error in our request");
    assert_eq!(s.get_json(&vm_path("jp")), obj, "nothing changed");

    // More than 10000 operations → 413.
    let many: Vec<Value> = (0..10_001)
        .map(|_| json!({"op": "test", "path": "/spec/running", "value": false}))
        .collect();
    let st = assert_status(
        &s.patch(&vm_path("jp"), "application/json-patch+json", &json!(many)),
        413,
        "RequestEntityTooLarge",
    );
    assert_eq!(
        st["message"],
        "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
    );

    // Not a patch at all → 400.
    let r = s.request(
        "PATCH",
        &vm_path("jp"),
        &[],
        Some(("application/json-patch+json", b"{not json")),
    );
    assert_status(&r, 400, "BadRequest");
    // charset parameters are stripped.
    let r = s.request(
        "PATCH",
        &vm_path("jp"),
        &[],
        Some((
            "application/json-patch+json; charset=utf-8",
            br#"[{"op":"replace","path":"/spec/running","value":true}]"#,
        )),
    );
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn merge_patch() {
    let s = TestServer::start();
    s.namespace(NS);
    let mut body = labelled(vm(), NS, "mp", json!({"keep": "1", "drop": "2"}));
    body["spec"] = json!({"runStrategy": "Always", "template": {"spec": {
        "volumes": [{"name": "a"}, {"name": "b"}], "nodeSelector": {"a": "1", "b": "2"}}}});
    s.create(vm(), &body);
    let patch = json!({
        "metadata": {"labels": {"drop": null, "new": "3"}},
        "spec": {"runStrategy": null, "template": {"spec": {
            "volumes": [{"name": "c"}], "nodeSelector": {"b": null, "c": "3"}}}},
    });
    let r = s.patch(&vm_path("mp"), "application/merge-patch+json", &patch);
    assert_eq!(r.status, 200, "{}", r.text());
    let obj = r.json();
    assert_eq!(obj["metadata"]["labels"], json!({"keep": "1", "new": "3"}));
    assert_eq!(
        obj["spec"],
        json!({"template": {"spec": {"volumes": [{"name": "c"}], "nodeSelector": {"a": "1", "c": "3"}}}})
    );
    assert_eq!(s.get_json(&vm_path("mp")), obj);

    // Invalid JSON → 400.
    let r =
        s.request("PATCH", &vm_path("mp"), &[], Some(("application/merge-patch+json", b"{oops")));
    assert_status(&r, 400, "BadRequest");
}

#[test]
fn patch_errors() {
    let s = TestServer::start();
    s.namespace(NS);
    let created = s.create(vm(), &object(vm(), NS, "pe"));
    // Strategic merge patch → 415.
    let r = s.patch(
        &vm_path("pe"),
        "application/strategic-merge-patch+json",
        &json!({"spec": {"answer": 1}}),
    );
    let st = assert_status(&r, 415, "UnsupportedMediaType");
    assert_eq!(
        st["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
    // Missing objects → 404 for both patch types.
    for ct in ["application/merge-patch+json", "application/json-patch+json"] {
        let body = if ct.contains("json-patch") {
            json!([{"op": "add", "path": "/spec/x", "value": 1}])
        } else {
            json!({"spec": {"x": 1}})
        };
        let st = assert_status(&s.patch(&vm_path("missing"), ct, &body), 404, "NotFound");
        assert_eq!(st["message"], "virtualmachines.kubevirt.io \"missing\" not found");
    }
    // A patch that sets a stale resourceVersion → 409; the current one works.
    let r = s.patch(
        &vm_path("pe"),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": {"a": "1"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let current = r.json();
    let stale = json!({"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "spec": {"running": false}});
    let st = assert_status(
        &s.patch(&vm_path("pe"), "application/merge-patch+json", &stale),
        409,
        "Conflict",
    );
    assert_eq!(
        st["message"],
        "Operation cannot be fulfilled on virtualmachines.kubevirt.io \"pe\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let fresh = json!({"metadata": {"resourceVersion": current["metadata"]["resourceVersion"]}, "spec": {"running": false}});
    let r = s.patch(&vm_path("pe"), "application/merge-patch+json", &fresh);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(rv(&r.json()) > rv(&current));
}

#[test]
fn delete_options_and_preconditions() {
    let s = TestServer::start();
    s.namespace(NS);
    let obj = s.create(vm(), &object(vm(), NS, "d"));
    let uid = obj["metadata"]["uid"].as_str().unwrap().to_string();
    let both = json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground", "orphanDependents": true});
    let st = assert_status(&s.delete_with(&vm_path("d"), &both), 422, "Invalid");
    assert_eq!(
        st["message"],
        "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value: \"Foreground\": orphanDependents and deletionPropagation cannot be both set"
    );
    let bogus = json!({"propagationPolicy": "Sideways"});
    let st = assert_status(&s.delete_with(&vm_path("d"), &bogus), 422, "Invalid");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("supported values: \"Foreground\", \"Background\", \"Orphan\""),
        "{st}"
    );

    let wrong_uid = json!({"preconditions": {"uid": "11111111-1111-4111-8111-111111111111"}});
    let st = assert_status(&s.delete_with(&vm_path("d"), &wrong_uid), 409, "Conflict");
    assert_eq!(
        st["message"],
        format!("Operation cannot be fulfilled on VirtualMachine.kubevirt.io \"d\": the UID in the precondition (11111111-1111-4111-8111-111111111111) does not match the UID in record ({uid}). The object might have been deleted and then recreated")
    );
    let wrong_rv = json!({"preconditions": {"resourceVersion": "999999"}});
    let st = assert_status(&s.delete_with(&vm_path("d"), &wrong_rv), 409, "Conflict");
    assert_eq!(
        st["message"],
        format!("Operation cannot be fulfilled on VirtualMachine.kubevirt.io \"d\": the ResourceVersion in the precondition (999999) does not match the ResourceVersion in record ({}). The object might have been modified", rv(&obj))
    );
    assert_eq!(s.get(&vm_path("d")).status, 200, "still there");
    let right = json!({"preconditions": {"uid": uid, "resourceVersion": obj["metadata"]["resourceVersion"]}});
    let r = s.delete_with(&vm_path("d"), &right);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["status"], "Success");
    assert_status(&s.get(&vm_path("d")), 404, "NotFound");
    // Deleting a missing object → 404.
    let st = assert_status(&s.delete(&vm_path("d")), 404, "NotFound");
    assert_eq!(st["details"]["kind"], "virtualmachines");
    // Options as query parameters are checked too.
    s.create(vm(), &object(vm(), NS, "q"));
    let r = s.delete(&format!("{}?gracePeriodSeconds=-1", vm_path("q")));
    assert_status(&r, 422, "Invalid");
    let r =
        s.delete(&format!("{}?gracePeriodSeconds=0&propagationPolicy=Background", vm_path("q")));
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn finalizers_hold_deletion() {
    let s = TestServer::start();
    s.namespace(NS);
    let mut body = object(vm(), NS, "fin");
    body["metadata"]["finalizers"] = json!(["example.com/keep"]);
    let created = s.create(vm(), &body);
    let w = s.watch(&format!("{}?watch=true&resourceVersion={}", vms(), rv(&created)));

    let r = s.delete(&vm_path("fin"));
    assert_eq!(r.status, 200, "{}", r.text());
    let marked = r.json();
    assert_eq!(marked["kind"], "VirtualMachine", "the object, not a Status: {marked}");
    let meta = &marked["metadata"];
    assert!(meta["deletionTimestamp"].as_str().is_some_and(|t| t.ends_with('Z')), "{marked}");
    assert_eq!(meta["deletionGracePeriodSeconds"], 0);
    assert_eq!(meta["generation"], 2, "the first deletion marking bumps generation");
    assert_eq!(meta["finalizers"], json!(["example.com/keep"]));
    let ev = next_event(&w, "MODIFIED", "fin");
    assert_eq!(ev["metadata"]["deletionTimestamp"], meta["deletionTimestamp"]);
    assert_eq!(s.get_json(&vm_path("fin")), marked);

    // A repeated delete changes nothing.
    let again = s.delete(&vm_path("fin"));
    assert_eq!(again.status, 200);
    assert_eq!(rv(&again.json()), rv(&marked));

    // Recreating the name while it is being deleted.
    let st = assert_status(&s.post(&vms(), &object(vm(), NS, "fin")), 409, "AlreadyExists");
    assert_eq!(
        st["message"],
        "object is being deleted: virtualmachines.kubevirt.io \"fin\" already exists"
    );

    // No new finalizers once deleting.
    let add = json!({"metadata": {"finalizers": ["example.com/keep", "example.com/more"]}});
    let st = assert_status(
        &s.patch(&vm_path("fin"), "application/merge-patch+json", &add),
        422,
        "Invalid",
    );
    assert_eq!(st["details"]["causes"][0]["field"], "metadata.finalizers", "{st}");

    // kube answers 202 when the caller explicitly asked not to orphan and finalizers remain.
    let mut body = object(vm(), NS, "fin202");
    body["metadata"]["finalizers"] = json!(["example.com/keep"]);
    s.create(vm(), &body);
    let r = s.delete_with(&vm_path("fin202"), &json!({"orphanDependents": false}));
    assert_eq!(r.status, 202, "{}", r.text());
    assert_eq!(r.json()["kind"], "VirtualMachine");
    next_event(&w, "ADDED", "fin202");
    next_event(&w, "MODIFIED", "fin202");

    // Removing the last finalizer deletes it.
    let clear = json!({"metadata": {"finalizers": null}});
    let r = s.patch(&vm_path("fin"), "application/merge-patch+json", &clear);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_status(&s.get(&vm_path("fin")), 404, "NotFound");
    next_event(&w, "DELETED", "fin");
}

/// A.7: with no garbage collector beside it, the server strips the propagation finalizers it
/// adds, so Orphan and Foreground deletes complete.
#[test]
fn orphan_and_foreground_deletes_complete() {
    let s = TestServer::start();
    s.namespace(NS);
    for (name, policy) in [("orphan", "Orphan"), ("fg", "Foreground")] {
        s.create(vm(), &object(vm(), NS, name));
        let r = s.delete_with(&vm_path(name), &json!({"propagationPolicy": policy}));
        assert!(r.status == 200 || r.status == 202, "{}", r.text());
        eventually(Duration::from_secs(5), || (s.get(&vm_path(name)).status == 404).then_some(()));
    }
    let r = s.delete(&format!("{}?orphanDependents=true", vm_path("none")));
    assert_status(&r, 404, "NotFound");
}

#[test]
fn deletecollection_with_label_selector() {
    let s = TestServer::start();
    s.namespace(NS);
    for (name, sel) in [("a1", "yes"), ("a2", "yes"), ("b", "no")] {
        s.create(vm(), &labelled(vm(), NS, name, json!({ "sel": sel })));
    }
    let r = s.delete(&format!("{}?labelSelector=sel%3Dyes", vms()));
    assert_eq!(r.status, 200, "{}", r.text());
    let list = r.json();
    assert_eq!(list["kind"], "VirtualMachineList");
    assert_eq!(list["apiVersion"], "kubevirt.io/v1");
    assert_eq!(names(&list), ["a1", "a2"]);
    assert_eq!(s.list_names(&vms()), ["b"]);
    // Without a selector: everything in the namespace, nothing elsewhere.
    s.namespace("crud-keep");
    let other = collection_path(vm(), Some("crud-keep"));
    assert_eq!(s.post(&other, &object(vm(), "crud-keep", "kept")).status, 201);
    assert_eq!(names(&s.delete(&vms()).json()), ["b"]);
    assert!(s.list_names(&vms()).is_empty());
    assert_eq!(s.list_names(&other), ["kept"]);
}

#[test]
fn unknown_paths_are_plain_404() {
    let s = TestServer::start();
    for path in [
        "/nothing",
        "/apis/nope.example.com",
        "/apis/nope.example.com/v1/things",
        "/apis/kubevirt.io/v9/virtualmachines",
        "/apis/kubevirt.io/v1/namespaces/ns/nothings",
        "/apis/kubevirt.io/v1/namespaces/ns/virtualmachines/a/b/c",
        "/api/v1/replicationcontrollers",
        // Namespaced kinds have no item path outside a namespace.
        "/apis/kubevirt.io/v1/virtualmachines/x",
        "/apis/kubevirt.io/v1/watch/virtualmachines/x",
        // The token kind is create-only: no item path.
        "/apis/upload.cdi.kubevirt.io/v1beta1/namespaces/ns/uploadtokenrequests/x",
        // A namespaced URL of a cluster kind.
        "/apis/instancetype.kubevirt.io/v1alpha2/namespaces/ns/virtualmachineclusterinstancetypes",
        "/apis/instancetype.kubevirt.io/v1alpha2/namespaces/ns/virtualmachineclusterinstancetypes/x",
    ] {
        let r = s.get(path);
        assert_plain_404(&r);
    }
}

#[test]
fn unsupported_methods_are_405() {
    let s = TestServer::start();
    s.namespace(NS);
    s.create(vm(), &object(vm(), NS, "m"));
    let r = s.post(&vm_path("m"), &object(vm(), NS, "m"));
    let st = assert_status(&r, 405, "MethodNotAllowed");
    assert_eq!(
        st["message"],
        "create is not supported on resources of kind \"virtualmachines.kubevirt.io\""
    );
    let r = s.put(&vms(), &object(vm(), NS, "m"));
    assert_status(&r, 405, "MethodNotAllowed");
    let r = s.patch(&vms(), "application/merge-patch+json", &json!({}));
    assert_status(&r, 405, "MethodNotAllowed");
}

#[test]
fn export_strips_server_fields() {
    let s = TestServer::start();
    s.namespace(NS);
    let mut body = labelled(vm(), NS, "exp", json!({"app": "x"}));
    body["metadata"]["annotations"] = json!({"note": "kept"});
    // A live owner: the collector removes objects whose owners are gone.
    let owner = s.create(vm(), &object(vm(), NS, "owner"));
    body["metadata"]["ownerReferences"] = json!([{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "name": "owner", "uid": owner["metadata"]["uid"]}]);
    body["status"] = json!({"phase": "Running"});
    let full = s.create(vm(), &body);
    let exported = s.get_json(&format!("{}?export=true", vm_path("exp")));
    let meta = exported["metadata"].as_object().unwrap();
    for gone in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "generation",
        "managedFields",
        "ownerReferences",
        "namespace",
    ] {
        assert!(!meta.contains_key(gone), "{gone} exported: {exported}");
    }
    assert!(exported.get("status").is_none(), "{exported}");
    assert_eq!(exported["metadata"]["name"], "exp");
    assert_eq!(exported["metadata"]["labels"], json!({"app": "x"}));
    assert_eq!(exported["metadata"]["annotations"], json!({"note": "kept"}));
    assert_eq!(exported["spec"], full["spec"]);
    assert_eq!(exported["kind"], "VirtualMachine");
    let exact = s.get_json(&format!("{}?export=true&exact=true", vm_path("exp")));
    assert_eq!(exact["metadata"]["namespace"], NS);
    assert!(exact["metadata"].get("uid").is_none());
    let plain = s.get_json(&format!("{}?exact=true", vm_path("exp")));
    assert_eq!(plain, full, "exact alone changes nothing");
}

#[test]
fn dry_run_stores_nothing() {
    let s = TestServer::start();
    s.namespace(NS);
    let r = s.post(&format!("{}?dryRun=All", vms()), &object(vm(), NS, "dry"));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["metadata"]["name"], "dry");
    assert_status(&s.get(&vm_path("dry")), 404, "NotFound");
    assert!(s.list_names(&vms()).is_empty());

    let obj = s.create(vm(), &object(vm(), NS, "wet"));
    let mut changed = obj.clone();
    changed["spec"] = json!({"running": false});
    let r = s.put(&format!("{}?dryRun=All", vm_path("wet")), &changed);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["spec"], json!({"running": false}));
    let r = s.patch(
        &format!("{}?dryRun=All", vm_path("wet")),
        "application/merge-patch+json",
        &json!({"spec": {"runStrategy": "Halted"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let r = s.delete(&format!("{}?dryRun=All", vm_path("wet")));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(s.get_json(&vm_path("wet")), obj, "unchanged after dry runs");

    let r = s.post(&format!("{}?dryRun=Bogus", vms()), &object(vm(), NS, "bogus"));
    assert_eq!(s.get(&vm_path("bogus")).status, 404);
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{\"Bogus\"}: supported values: \"All\""
    );
    assert_eq!(st["details"]["kind"], "CreateOptions");
    assert_eq!(st["details"]["group"], "meta.k8s.io");
}

/// Bad enumerated write options are 422 on the verb's options kind (A.11; AM
/// `ValidateCreateOptions`, `ValidateUpdateOptions`, `ValidatePatchOptions`, `ValidateDeleteOptions`).
#[test]
fn bad_write_options_are_422() {
    let s = TestServer::start();
    s.namespace(NS);
    let obj = s.create(vm(), &object(vm(), NS, "opt"));
    let dry = |kind: &str| {
        format!("{kind}.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: []string{{\"All\", \"Bogus\"}}: supported values: \"All\"")
    };
    let q = "dryRun=All&dryRun=Bogus";
    let st = assert_status(&s.put(&format!("{}?{q}", vm_path("opt")), &obj), 422, "Invalid");
    assert_eq!(st["message"], dry("UpdateOptions"));
    let r = s.patch(&format!("{}?{q}", vm_path("opt")), "application/merge-patch+json", &json!({}));
    assert_eq!(assert_status(&r, 422, "Invalid")["message"], dry("PatchOptions"));
    let st = assert_status(&s.delete(&format!("{}?{q}", vm_path("opt"))), 422, "Invalid");
    assert_eq!(st["message"], dry("DeleteOptions"));
    let st = assert_status(
        &s.delete_with(&vm_path("opt"), &json!({"dryRun": ["All", "Bogus"]})),
        422,
        "Invalid",
    );
    assert_eq!(st["message"], dry("DeleteOptions"));

    let fv = |kind: &str| {
        format!("{kind}.meta.k8s.io \"\" is invalid: fieldValidation: Unsupported value: \"Bogus\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"")
    };
    let r = s.post(&format!("{}?fieldValidation=Bogus", vms()), &object(vm(), NS, "fv"));
    assert_eq!(assert_status(&r, 422, "Invalid")["message"], fv("CreateOptions"));
    let st = assert_status(
        &s.put(&format!("{}?fieldValidation=Bogus", vm_path("opt")), &obj),
        422,
        "Invalid",
    );
    assert_eq!(st["message"], fv("UpdateOptions"));
    let r = s.patch(
        &format!("{}?fieldValidation=Bogus", vm_path("opt")),
        "application/merge-patch+json",
        &json!({}),
    );
    assert_eq!(assert_status(&r, 422, "Invalid")["message"], fv("PatchOptions"));
    // Both at once: one error listing both causes.
    let r = s.post(&format!("{}?fieldValidation=Bogus&dryRun=x", vms()), &object(vm(), NS, "fv"));
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(st["details"]["causes"].as_array().unwrap().len(), 2, "{st}");
    for good in ["Strict", "Warn", "Ignore", ""] {
        let r = s.patch(
            &format!("{}?fieldValidation={good}", vm_path("opt")),
            "application/merge-patch+json",
            &json!({}),
        );
        assert_eq!(r.status, 200, "fieldValidation={good}: {}", r.text());
    }
    assert_eq!(s.get_json(&vm_path("opt")), obj, "nothing changed");
}

#[test]
fn yaml_in_and_out() {
    let s = TestServer::start();
    s.namespace(NS);
    let yaml = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: from-yaml\n  labels:\n    fmt: yaml\nspec:\n  running: false\n";
    let r = s.request("POST", &vms(), &[], Some(("application/yaml", yaml.as_bytes())));
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(r.header("Content-Type").unwrap_or("").starts_with("application/json"));
    let obj = r.json();
    assert_eq!(obj["spec"], json!({"running": false}));
    assert_eq!(obj["metadata"]["labels"], json!({"fmt": "yaml"}));

    let r = s.request("GET", &vm_path("from-yaml"), &[("Accept", "application/yaml")], None);
    assert_eq!(r.status, 200);
    assert!(
        r.header("Content-Type").unwrap_or("").starts_with("application/yaml"),
        "{:?}",
        r.headers
    );
    let back: Value = serde_yaml::from_slice(&r.body).expect("YAML body");
    assert_eq!(back, obj);
    let r = s.request("GET", &vms(), &[("Accept", "application/yaml")], None);
    let list: Value = serde_yaml::from_slice(&r.body).expect("YAML list");
    assert_eq!(list["kind"], "VirtualMachineList");
    // Neither JSON nor YAML acceptable → 406.
    let r = s.request(
        "GET",
        &vm_path("from-yaml"),
        &[("Accept", "application/vnd.kubernetes.protobuf")],
        None,
    );
    assert_status(&r, 406, "NotAcceptable");
}

#[test]
fn upload_token_requests() {
    let s = TestServer::start();
    s.namespace(NS);
    let res = token_kind();
    let path = collection_path(res, Some(NS));

    let mut missing = object(res, NS, "tok");
    missing["spec"] = json!({});
    let st = assert_status(&s.post(&path, &missing), 422, "Invalid");
    assert_eq!(st["details"]["causes"][0]["field"], "spec.pvcName", "{st}");
    assert_eq!(st["details"]["kind"], "UploadTokenRequest");

    let yaml = "apiVersion: upload.cdi.kubevirt.io/v1beta1\nkind: UploadTokenRequest\nmetadata:\n  name: tok\nspec:\n  pvcName: disk\n";
    let r = s.request("POST", &path, &[], Some(("application/yaml", yaml.as_bytes())));
    assert_status(&r, 415, "UnsupportedMediaType");

    let mut body = object(res, NS, "tok");
    body["spec"] = json!({"pvcName": "disk"});
    let r = s.post(&path, &body);
    assert_eq!(r.status, 200, "{}", r.text());
    let answer = r.json();
    assert_eq!(answer["kind"], "UploadTokenRequest");
    assert_eq!(answer["apiVersion"], "upload.cdi.kubevirt.io/v1beta1");
    assert_eq!(answer["spec"]["pvcName"], "disk");
    let token = answer["status"]["token"].as_str().expect("status.token");
    assert_eq!(token.split('.').count(), 3, "a JWT: {token}");

    for method in ["GET", "PUT", "DELETE"] {
        let body = body.to_string();
        let b = (method == "PUT").then_some(("application/json", body.as_bytes()));
        let r = s.request(method, &path, &[], b);
        assert_status(&r, 405, "MethodNotAllowed");
    }
    // Nothing was stored: the same request again is answered again.
    assert_eq!(s.post(&path, &body).status, 200);
}

#[test]
fn oversized_objects_and_bodies_are_413() {
    let s = TestServer::start();
    s.namespace(NS);
    // Over 1.5 MiB once encoded (A.13), under the 3 MiB body limit.
    let mut body = object(vm(), NS, "big");
    body["spec"] = json!({"template": {"metadata": {"blob": "x".repeat(1600 * 1024)}}});
    let st = assert_status(&s.post(&vms(), &body), 413, "RequestEntityTooLarge");
    assert!(st["message"].as_str().unwrap().starts_with("Request entity too large"), "{st}");
    assert_eq!(s.get(&vm_path("big")).status, 404);
    // A body over 3 MiB (B.1).
    body["spec"] = json!({"template": {"metadata": {"blob": "x".repeat(3 * 1024 * 1024 + 10)}}});
    let st = assert_status(&s.post(&vms(), &body), 413, "RequestEntityTooLarge");
    assert_eq!(st["message"], "Request entity too large: limit is 3145728");
}

/// A.4 with B.2: on kinds with a status subresource the main endpoint ignores status (create
/// drops it, updates keep the stored one), and `/status` changes only status.
#[test]
fn status_subresource_semantics() {
    let s = TestServer::start();
    s.namespace(NS);
    let mut body = object(vm(), NS, "st");
    body["status"] = json!({"printableStatus": "Running"});
    let created = s.create(vm(), &body);
    assert!(created.get("status").is_none(), "create drops status: {created}");
    let mut changed = created.clone();
    changed["status"] = json!({"printableStatus": "Stopped"});
    let r = s.put(&vm_path("st"), &changed);
    assert_eq!(r.status, 200, "{}", r.text());
    let after = r.json();
    assert!(after.get("status").is_none(), "main endpoint keeps the stored status: {after}");
    assert_eq!(after["metadata"]["generation"], 1);
    // The status subresource.
    let status_path = format!("{}/status", vm_path("st"));
    let cur = s.get_json(&status_path);
    let mut st = cur.clone();
    st["status"] = json!({"printableStatus": "Stopped"});
    st["spec"] = json!({"running": false});
    let r = s.put(&status_path, &st);
    assert_eq!(r.status, 200, "{}", r.text());
    let out = r.json();
    assert_eq!(out["status"], json!({"printableStatus": "Stopped"}));
    assert_eq!(out["spec"], created["spec"], "/status discards spec changes");
    assert_eq!(out["metadata"]["generation"], 1, "/status never bumps generation");
    let r =
        s.patch(&status_path, "application/merge-patch+json", &json!({"status": {"ready": true}}));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["status"], json!({"printableStatus": "Stopped", "ready": true}));
    // A kind without the subresource keeps status through the main endpoint, bumping generation.
    let vmi = resource("kubevirt.io", "v1", "virtualmachineinstances");
    let mut body = object(vmi, NS, "vmi");
    body["status"] = json!({"phase": "Pending"});
    let created = s.create(vmi, &body);
    assert_eq!(created["status"], json!({"phase": "Pending"}));
    let mut changed = created.clone();
    changed["status"] = json!({"phase": "Running"});
    let after = s.put(&item_path(vmi, NS, "vmi"), &changed).json();
    assert_eq!(after["status"], json!({"phase": "Running"}));
    assert_eq!(after["metadata"]["generation"], 2);
    assert_plain_404(&s.get(&format!("{}/status", item_path(vmi, NS, "vmi"))));
}
