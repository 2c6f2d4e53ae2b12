//! core/v1 Events: kube's table columns, its field selectors, `kubectl describe` and `kubectl
//! events`, expiry after `--event-ttl`, and the garbage collector's `OwnerRefInvalidNamespace`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{assert_status, eventually, names, Kubectl, ServerOptions, TestServer};

const VMS: &str = "/apis/kubevirt.io/v1/namespaces/ev/virtualmachines";
const EVENTS: &str = "/api/v1/namespaces/ev/events";

/// A VM in namespace `ev`; returns it as stored.
fn vm(s: &TestServer, name: &str) -> Value {
    let r = s.post(
        VMS,
        &json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": name}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

/// An event about `about` (a stored object) in namespace `ev`, as a client posts one.
fn event(s: &TestServer, name: &str, about: &Value, fields: Value) -> Value {
    let mut body = json!({
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": name, "namespace": "ev"},
        "involvedObject": {
            "apiVersion": about["apiVersion"], "kind": about["kind"],
            "namespace": about["metadata"]["namespace"], "name": about["metadata"]["name"],
            "uid": about["metadata"]["uid"],
            "resourceVersion": about["metadata"]["resourceVersion"],
        },
        "reason": "Started", "message": "started it", "type": "Normal", "count": 1,
        "source": {"component": "virt-controller", "host": "node1"},
        "reportingComponent": "virt-controller", "reportingInstance": "node1",
        "firstTimestamp": "2020-01-01T00:00:00Z", "lastTimestamp": "2020-01-01T00:00:00Z",
    });
    for (k, v) in fields.as_object().unwrap() {
        if v.is_object() {
            for (k2, v2) in v.as_object().unwrap() {
                body[k][k2] = v2.clone();
            }
        } else {
            body[k] = v.clone();
        }
    }
    let r = s.post(EVENTS, &body);
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

fn now() -> String {
    virt_apiserver::meta::now_rfc3339()
}

fn started() -> TestServer {
    let s = TestServer::start_with(ServerOptions { memory: true, ..Default::default() });
    s.namespace("ev");
    s
}

#[test]
fn kubectl_get_events_prints_kubes_columns() {
    let s = started();
    let a = vm(&s, "a");
    let t = now();
    event(
        &s,
        "a.1",
        &a,
        json!({"count": 3, "firstTimestamp": t, "lastTimestamp": t, "message": "started a"}),
    );
    let k = Kubectl::in_namespace(&s, "ev");
    let out = k.ok(&["get", "events"]);
    let lines: Vec<&str> = out.lines().collect();
    let header: Vec<&str> = lines[0].split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(header, ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"], "{out}");
    let row: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(row[1..], ["Normal", "Started", "virtualmachine/a", "started", "a"], "{out}");
    let wide = k.ok(&["get", "events", "-o", "wide"]);
    let header: Vec<&str> =
        wide.lines().next().unwrap().split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(
        header,
        [
            "LAST SEEN",
            "TYPE",
            "REASON",
            "OBJECT",
            "SUBOBJECT",
            "SOURCE",
            "MESSAGE",
            "FIRST SEEN",
            "COUNT",
            "NAME"
        ],
        "{wide}"
    );
    let row = wide.lines().nth(1).unwrap();
    assert!(row.contains("virt-controller, node1"), "{wide}");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[cells.len() - 2..], ["3", "a.1"], "COUNT and NAME last: {wide}");
    // The Table itself: no leading Name column, the Name last and wide-only.
    let table = s.request(
        "GET",
        EVENTS,
        &[("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")],
        None,
    );
    let defs = &table.json()["columnDefinitions"];
    assert_eq!(defs[0]["name"], "Last Seen");
    let last = defs.as_array().unwrap().last().unwrap();
    assert_eq!(
        (&last["name"], &last["format"], &last["priority"]),
        (&json!("Name"), &json!("name"), &json!(1))
    );
}

#[test]
fn events_select_by_kubes_fields() {
    let s = started();
    let (a, b) = (vm(&s, "a"), vm(&s, "b"));
    event(&s, "a.1", &a, json!({}));
    event(
        &s,
        "a.2",
        &a,
        json!({"reason": "Failed", "type": "Warning", "source": {"component": "virt-handler"},
               "reportingComponent": "virt-handler", "involvedObject": {"fieldPath": "spec.template"}}),
    );
    event(
        &s,
        "b.1",
        &b,
        json!({"involvedObject": {"kind": "VirtualMachineInstance", "apiVersion": "kubevirt.io/v1alpha3"}}),
    );
    let select = |selector: &str| -> Vec<String> {
        let r = s.get(&format!("{EVENTS}?fieldSelector={}", urlencode(selector)));
        assert_eq!(r.status, 200, "{selector}: {}", r.text());
        names(&r.json())
    };
    let a_uid = a["metadata"]["uid"].as_str().unwrap();
    let a_rv = a["metadata"]["resourceVersion"].as_str().unwrap();
    let cases: Vec<(String, Vec<&str>)> = vec![
        ("involvedObject.kind=VirtualMachine".into(), vec!["a.1", "a.2"]),
        ("involvedObject.kind=VirtualMachineInstance".into(), vec!["b.1"]),
        ("involvedObject.namespace=ev".into(), vec!["a.1", "a.2", "b.1"]),
        ("involvedObject.name=a".into(), vec!["a.1", "a.2"]),
        (format!("involvedObject.uid={a_uid}"), vec!["a.1", "a.2"]),
        ("involvedObject.apiVersion=kubevirt.io/v1alpha3".into(), vec!["b.1"]),
        (format!("involvedObject.resourceVersion={a_rv}"), vec!["a.1", "a.2"]),
        ("involvedObject.fieldPath=spec.template".into(), vec!["a.2"]),
        ("reason=Failed".into(), vec!["a.2"]),
        ("reason!=Failed".into(), vec!["a.1", "b.1"]),
        ("reportingComponent=virt-handler".into(), vec!["a.2"]),
        ("source=virt-controller".into(), vec!["a.1", "b.1"]),
        ("type=Warning".into(), vec!["a.2"]),
        ("metadata.name=b.1".into(), vec!["b.1"]),
        ("metadata.namespace=ev".into(), vec!["a.1", "a.2", "b.1"]),
        ("involvedObject.name=a,type=Normal".into(), vec!["a.1"]),
    ];
    for (selector, want) in cases {
        assert_eq!(select(&selector), want, "{selector}");
    }
    let r = s.get(&format!("{EVENTS}?fieldSelector=spec.nothing%3Dx"));
    let status = assert_status(&r, 400, "BadRequest");
    assert_eq!(status["message"], "field label not supported: spec.nothing");
    // And as kubectl asks for them.
    let k = Kubectl::in_namespace(&s, "ev");
    let out = k.ok(&["get", "events", "--field-selector", "reason=Failed", "-o", "name"]);
    assert_eq!(out.trim(), "event/a.2");
}

fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

#[test]
fn describe_and_kubectl_events_list_an_objects_events() {
    let s = started();
    let (a, b) = (vm(&s, "a"), vm(&s, "b"));
    let t = now();
    event(
        &s,
        "a.1",
        &a,
        json!({"reason": "Created", "message": "created the instance", "firstTimestamp": t, "lastTimestamp": t}),
    );
    event(
        &s,
        "a.2",
        &a,
        json!({"reason": "FailedStart", "type": "Warning", "message": "no node fits", "firstTimestamp": t, "lastTimestamp": t}),
    );
    event(
        &s,
        "b.1",
        &b,
        json!({"reason": "Stopped", "message": "stopped b", "firstTimestamp": t, "lastTimestamp": t}),
    );
    let k = Kubectl::in_namespace(&s, "ev");
    let described = k.ok(&["describe", "vm", "a"]);
    let events = described.split("Events:").nth(1).unwrap_or_else(|| panic!("{described}"));
    for want in
        ["Created", "created the instance", "FailedStart", "no node fits", "virt-controller"]
    {
        assert!(events.contains(want), "{want} in {described}");
    }
    assert!(!events.contains("stopped b"), "only a's events: {described}");
    let listed = k.ok(&["events", "--for", "vm/a"]);
    assert!(listed.lines().next().unwrap().starts_with("LAST SEEN"), "{listed}");
    for want in ["Created", "created the instance", "FailedStart", "VirtualMachine/a"] {
        assert!(listed.contains(want), "{want} in {listed}");
    }
    assert!(!listed.contains("stopped b"), "{listed}");
    let warnings = k.ok(&["events", "--for", "vm/a", "--types", "Warning"]);
    assert!(
        warnings.contains("no node fits") && !warnings.contains("created the instance"),
        "{warnings}"
    );
}

#[test]
fn events_expire_ttl_after_their_last_write() {
    let s = TestServer::start_with(ServerOptions {
        memory: true,
        args: vec!["--event-ttl".into(), "4s".into()],
        ..Default::default()
    });
    s.namespace("ev");
    let a = vm(&s, "a");
    let w = s.watch(&format!("{EVENTS}?watch=true"));
    let started = std::time::Instant::now();
    event(&s, "old", &a, json!({}));
    event(&s, "kept", &a, json!({}));
    w.expect_event("ADDED", "old");
    w.expect_event("ADDED", "kept");
    std::thread::sleep(Duration::from_secs(2));
    let r = s.patch(
        &format!("{EVENTS}/kept"),
        "application/merge-patch+json",
        &json!({"count": 2, "message": "again"}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    w.expect_event("MODIFIED", "kept");
    let gone = w.next(Duration::from_secs(6)).expect("a DELETED event");
    assert_eq!(
        (&gone["type"], &gone["object"]["metadata"]["name"]),
        (&json!("DELETED"), &json!("old"))
    );
    assert!(started.elapsed() >= Duration::from_secs(4), "not before its TTL");
    assert_eq!(s.get(&format!("{EVENTS}/kept")).status, 200, "written 2s later, it lives on");
    let gone = w.next(Duration::from_secs(6)).expect("a DELETED event");
    assert_eq!(
        (&gone["type"], &gone["object"]["metadata"]["name"]),
        (&json!("DELETED"), &json!("kept"))
    );
    assert!(started.elapsed() >= Duration::from_secs(6), "4s after its last write");
    assert_eq!(s.get(EVENTS).json()["items"], json!([]));
}

/// After a restart the deadlines come from the stored events, so none outlives its TTL.
#[test]
fn events_stored_before_a_restart_expire_too() {
    let s = TestServer::start();
    s.namespace("ev");
    let a = vm(&s, "a");
    event(&s, "before", &a, json!({"firstTimestamp": now(), "lastTimestamp": now()}));
    let (db, dir) = s.kill();
    let s = TestServer::start_with(ServerOptions {
        db: Some(db),
        args: vec!["--event-ttl".into(), "2s".into()],
        ..Default::default()
    });
    eventually(Duration::from_secs(8) + s.takeover(), || {
        (s.get(&format!("{EVENTS}/before")).status == 404).then_some(())
    });
    assert_eq!(s.get(VMS).json()["items"].as_array().unwrap().len(), 1, "only events expire");
    drop(dir);
}

#[test]
fn the_collector_warns_of_an_owner_in_another_namespace() {
    let s = started();
    s.namespace("other");
    let owner = vm(&s, "owner");
    let uid = owner["metadata"]["uid"].as_str().unwrap().to_string();
    let other_vms = "/apis/kubevirt.io/v1/namespaces/other/virtualmachines";
    let reference = |name: &str, uid: &str| {
        json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {
            "name": name,
            "ownerReferences": [{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
                                 "name": "owner", "uid": uid}]}})
    };
    let dep = s.post(other_vms, &reference("dep", &uid));
    assert_eq!(dep.status, 201, "{}", dep.text());
    let dep_uid = dep.json()["metadata"]["uid"].as_str().unwrap().to_string();
    // An owner that exists nowhere is only dangling: collected without a warning.
    let orphan = s.post(other_vms, &reference("orphan", "0000-gone"));
    assert_eq!(orphan.status, 201, "{}", orphan.text());
    // Kube looks for a namespaced owner in its dependent's namespace only: not there, the
    // dependent is collected, and the owner seen elsewhere is warned of.
    for name in ["dep", "orphan"] {
        eventually(Duration::from_secs(10), || {
            (s.get(&format!("{other_vms}/{name}")).status == 404).then_some(())
        });
    }
    let list = s.get("/api/v1/events?fieldSelector=reason%3DOwnerRefInvalidNamespace").json();
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{list}");
    let e = &items[0];
    assert_eq!(e["metadata"]["namespace"], "other");
    assert!(e["metadata"]["name"].as_str().unwrap().starts_with("dep."), "{e}");
    assert_eq!(e["type"], "Warning");
    assert_eq!(e["count"], 1);
    assert_eq!(e["source"], json!({"component": "garbage-collector-controller"}));
    assert_eq!(e["reportingComponent"], "garbage-collector-controller");
    assert_eq!(
        e["involvedObject"],
        json!({"kind": "VirtualMachine", "namespace": "other", "name": "dep", "uid": dep_uid,
               "apiVersion": "kubevirt.io/v1"})
    );
    assert_eq!(
        e["message"],
        format!("ownerRef [kubevirt.io/v1/VirtualMachine, namespace: other, name: owner, uid: {uid}] does not exist in namespace \"other\"")
    );
    assert_eq!(s.get(&format!("{VMS}/owner")).status, 200, "the owner stays");
    let k = Kubectl::new(&s);
    let out = k.ok(&["get", "events", "-A", "--field-selector=reason=OwnerRefInvalidNamespace"]);
    assert!(
        out.contains("virtualmachine/dep") && out.contains("does not exist in namespace"),
        "{out}"
    );
}

/// A cluster-scoped dependent naming a namespaced owner is warned of in `default` and left
/// alone, as kube's collector leaves it (`isDangling`'s cluster-scoped case).
#[test]
fn the_collector_leaves_a_cluster_scoped_dependent_of_a_namespaced_owner() {
    let s = started();
    let owner = vm(&s, "owner");
    let uid = owner["metadata"]["uid"].as_str().unwrap();
    let res =
        crate::common::preferred("instancetype.kubevirt.io", "virtualmachineclusterinstancetypes");
    let mut dep = crate::common::object(res, "", "dep");
    dep["metadata"]["ownerReferences"] = json!([{"apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine", "name": "owner", "uid": uid}]);
    let dep = s.create(res, &dep);
    let path = crate::common::item_path(res, "", "dep");
    let warned = eventually(Duration::from_secs(10), || {
        let list = s.get("/api/v1/namespaces/default/events").json();
        list["items"].as_array().unwrap().first().cloned()
    });
    assert_eq!(warned["reason"], "OwnerRefInvalidNamespace");
    assert_eq!(warned["involvedObject"]["uid"], dep["metadata"]["uid"]);
    assert_eq!(
        warned["message"],
        format!("ownerRef [kubevirt.io/v1/VirtualMachine, namespace: , name: owner, uid: {uid}] does not exist in namespace \"\"")
    );
    std::thread::sleep(Duration::from_secs(1));
    assert_eq!(s.get(&path).status, 200, "left alone");
    assert_eq!(
        s.get("/api/v1/namespaces/default/events").json()["items"].as_array().unwrap().len(),
        1
    );
}

/// kube's `legacyValidateEvent` (`pkg/apis/core/validation/events.go`), all that core/v1
/// applies: an Event is about an object of its own namespace (a cluster-scoped one's lives in
/// `default`); one with `eventTime` names its reporting controller, instance, action and reason.
#[test]
fn events_follow_kubes_legacy_validation() {
    let s = started();
    s.namespace("other");
    let a = vm(&s, "a");
    let elsewhere = json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "x.1", "namespace": "other"},
        "involvedObject": {"kind": "VirtualMachine", "namespace": "ev", "name": "a",
                           "uid": a["metadata"]["uid"]},
        "reason": "Started", "message": "started it", "type": "Normal"});
    let r = s.post("/api/v1/namespaces/other/events", &elsewhere);
    let st = assert_status(&r, 422, "Invalid");
    assert_eq!(
        st["message"],
        "Event \"x.1\" is invalid: involvedObject.namespace: Invalid value: \"ev\": does not match event.namespace"
    );
    assert_eq!(
        st["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "field": "involvedObject.namespace",
                "message": "Invalid value: \"ev\": does not match event.namespace"}])
    );
    // kubectl shows kube's words.
    let kubectl = Kubectl::new(&s);
    let file = kubectl.file("event.json", &elsewhere.to_string());
    let err = kubectl.fails(&["create", "-f", file.to_str().unwrap()]);
    assert_eq!(
        err.trim(),
        "The Event \"x.1\" is invalid: involvedObject.namespace: Invalid value: \"ev\": does not match event.namespace"
    );
    // About a cluster-scoped object (no involvedObject.namespace): default only.
    let mut cluster = elsewhere.clone();
    cluster["involvedObject"] = json!({"kind": "Namespace", "name": "ev", "apiVersion": "v1"});
    let r = s.post("/api/v1/namespaces/other/events", &cluster);
    assert_status(&r, 422, "Invalid");
    cluster["metadata"]["namespace"] = json!("default");
    let r = s.post("/api/v1/namespaces/default/events", &cluster);
    assert_eq!(r.status, 201, "{}", r.text());
    // An update is held to the same rules.
    let mut moved = r.json();
    moved["involvedObject"]["namespace"] = json!("ev");
    let r = s.put("/api/v1/namespaces/default/events/x.1", &moved);
    assert_status(&r, 422, "Invalid");
    // The events.k8s.io shape (eventTime set) names who reported it.
    let mut timed = elsewhere.clone();
    timed["metadata"]["namespace"] = json!("ev");
    timed["eventTime"] = json!("2026-01-01T00:00:00.000000Z");
    let r = s.post(EVENTS, &timed);
    let st = assert_status(&r, 422, "Invalid");
    let fields: Vec<(Value, Value)> = st["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["field"].clone(), c["message"].clone()))
        .collect();
    assert_eq!(
        fields,
        [
            (json!("reportingComponent"), json!("Required value")),
            (json!("reportingComponent"), json!("Invalid value: \"\": name part must be non-empty")),
            (json!("reportingComponent"), json!("Invalid value: \"\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")),
            (json!("reportingInstance"), json!("Required value")),
            (json!("action"), json!("Required value")),
        ]
    );
    timed["reportingComponent"] = json!("kubevirt.io/virt-controller");
    timed["reportingInstance"] = json!("virt-controller-abc");
    timed["action"] = json!("Started");
    let r = s.post(EVENTS, &timed);
    assert_eq!(r.status, 201, "{}", r.text());
}
