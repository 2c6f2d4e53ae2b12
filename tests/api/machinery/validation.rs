//! Field validation against the kinds' schemas (B.3, B.10 field_validation.go): unknown and
//! duplicate fields under Strict, Warn and Ignore; type, enum, required and list-key errors; and
//! dryRun=All on every write, over HTTP with a watch open.

use std::io::{Read, Write};
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{cause_fields, Kubectl, Resp, TestServer};

const VMS: &str = "/apis/kubevirt.io/v1/namespaces/default/virtualmachines";

fn vm(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    })
}

/// Any request, keeping every value of repeated headers (kube sends one `Warning` per warning).
fn send(s: &TestServer, method: &str, path: &str, content_type: &str, body: &[u8]) -> Resp {
    let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(30)).build();
    let req = agent.request(method, &s.url(path)).set("Content-Type", content_type);
    let resp = match req.send_bytes(body) {
        Ok(r) | Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {path}: {e}"),
    };
    let status = resp.status();
    let mut names = resp.headers_names();
    names.dedup();
    let headers = names
        .iter()
        .flat_map(|n| resp.all(n).into_iter().map(move |v| (n.clone(), v.to_string())))
        .collect();
    let mut bytes = Vec::new();
    resp.into_reader().read_to_end(&mut bytes).expect("body");
    Resp { status, headers, body: bytes }
}

fn post(s: &TestServer, path: &str, body: &Value) -> Resp {
    send(s, "POST", path, "application/json", body.to_string().as_bytes())
}

fn put(s: &TestServer, path: &str, body: &Value) -> Resp {
    send(s, "PUT", path, "application/json", body.to_string().as_bytes())
}

fn patch(s: &TestServer, path: &str, content_type: &str, body: &Value) -> Resp {
    send(s, "PATCH", path, content_type, body.to_string().as_bytes())
}

fn post_raw(s: &TestServer, path: &str, body: &str) -> Resp {
    send(s, "POST", path, "application/json", body.as_bytes())
}

/// Asserts a Status answer and returns it.
fn status(r: &Resp, code: u16, reason: &str) -> Value {
    assert_eq!(r.status, code, "{}", r.text());
    let st = r.json();
    assert_eq!(st["kind"], "Status", "{st}");
    assert_eq!(st["reason"], reason, "{st}");
    assert_eq!(st["code"], code, "{st}");
    st
}

/// The warning virt-api's VM admitter adds to every write of a VM that sets `spec.running`,
/// the boolean these tests' bodies use (tested by itself in
/// `spec_running_is_deprecated_as_virt_api_warns`).
const DEPRECATED_RUNNING: &str =
    r#"299 - "spec.running is deprecated, please use spec.runStrategy instead.""#;

/// Every `Warning` header of a response.
fn all_warnings(r: &Resp) -> Vec<String> {
    r.headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("warning"))
        .map(|(_, v)| v.clone())
        .collect()
}

/// The decoder's and validation's warnings: every `Warning` header but virt-api's, which comes
/// last when it comes.
fn warnings(r: &Resp) -> Vec<String> {
    let mut all = all_warnings(r);
    if all.last().is_some_and(|w| w == DEPRECATED_RUNNING) {
        all.pop();
    }
    all
}

fn create(s: &TestServer, body: &Value) -> Value {
    let r = post(s, VMS, body);
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

#[test]
fn strict_post_rejects_unknown_fields() {
    let s = TestServer::start();
    let body = vm("a", json!({"runStrategy": "Halted", "bogus": 1}));
    let r = post(&s, &format!("{VMS}?fieldValidation=Strict"), &body);
    let st = status(&r, 400, "BadRequest");
    assert_eq!(
        st["message"],
        "VirtualMachine in version \"v1\" cannot be handled as a VirtualMachine: strict decoding error: unknown field \"spec.bogus\""
    );
    assert!(st.get("details").is_none(), "{st}");
    assert_eq!(s.get(&format!("{VMS}/a")).status, 404, "nothing stored");

    // Several unknown fields are comma-joined; metadata's come last, as kube's decoder adds them.
    let mut body = vm("a", json!({"zz": 1, "bogus": {"x": 1}, "template": {"spec": {"nope": 1}}}));
    body["metadata"]["unknownMeta"] = json!("x");
    body["status"] = json!({"conditions": [{"type": "Ready", "status": "True", "odd": 1}]});
    let st = status(&post(&s, &format!("{VMS}?fieldValidation=Strict"), &body), 400, "BadRequest");
    assert_eq!(
        st["message"],
        "VirtualMachine in version \"v1\" cannot be handled as a VirtualMachine: strict decoding error: unknown field \"spec.bogus\", unknown field \"spec.template.spec.nope\", unknown field \"spec.zz\", unknown field \"status.conditions[0].odd\", unknown field \"metadata.unknownMeta\""
    );

    // The version in the message is the one the request used.
    let mut old = body.clone();
    old["apiVersion"] = json!("kubevirt.io/v1alpha3");
    let r = post(
        &s,
        "/apis/kubevirt.io/v1alpha3/namespaces/default/virtualmachines?fieldValidation=Strict",
        &old,
    );
    let st = status(&r, 400, "BadRequest");
    assert!(
        st["message"].as_str().unwrap().starts_with(
            "VirtualMachine in version \"v1alpha3\" cannot be handled as a VirtualMachine: strict decoding error: "
        ),
        "{st}"
    );
}

#[test]
fn strict_rejects_unknown_metadata_fields() {
    let s = TestServer::start();
    let mut body = vm("m", json!({}));
    body["metadata"]["unknownMeta"] = json!("x");
    let st = status(&post(&s, &format!("{VMS}?fieldValidation=Strict"), &body), 400, "BadRequest");
    assert_eq!(
        st["message"],
        "VirtualMachine in version \"v1\" cannot be handled as a VirtualMachine: strict decoding error: unknown field \"metadata.unknownMeta\""
    );
    // Under Warn the field is dropped from metadata and reported.
    let r = post(&s, VMS, &body);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(warnings(&r), ["299 - \"unknown field \\\"metadata.unknownMeta\\\"\""]);
    let stored = s.get(&format!("{VMS}/m")).json();
    assert!(stored["metadata"].get("unknownMeta").is_none(), "{stored}");
    assert_eq!(stored["metadata"]["name"], "m");
}

#[test]
fn thousands_of_unknown_fields_get_kubes_bounded_warnings() {
    let s = TestServer::start();
    let spec: serde_json::Map<String, Value> =
        (0..20_000).map(|i| (format!("f{i:05}"), json!(i))).collect();
    // Over a plain socket: ureq refuses an answer of over 100 header fields, as Go's client
    // does not.
    let body = vm("many", Value::Object(spec)).to_string();
    let mut conn = std::net::TcpStream::connect(s.url("").trim_start_matches("http://")).unwrap();
    write!(
        conn,
        "POST {VMS} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    let (head, rest) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 201"), "{head}");
    let sent: Vec<&str> = head.lines().filter_map(|l| l.strip_prefix("warning: ")).collect();
    // kube-apiserver sends at most 4 Ki characters of warning text (then cuts and drops):
    // ~170 of these, not 20 000 headers of half a megabyte.
    let text: usize = sent.iter().map(|w| w.replace("\\\"", "\"").len() - "299 - \"\"".len()).sum();
    assert!((100..400).contains(&sent.len()), "{} warnings", sent.len());
    assert!(text <= 4 * 1024 + 256, "{text} bytes of warning text");
    assert_eq!(sent[0], "299 - \"unknown field \\\"spec.f00000\\\"\"");
    assert_eq!(sent[1], "299 - \"unknown field \\\"spec.f00001\\\"\"");
    let created: Value = serde_json::from_str(rest).unwrap();
    assert_eq!(created["spec"], json!({}), "all pruned");
}

#[test]
fn strict_rejects_duplicate_json_keys() {
    let s = TestServer::start();
    let body = r#"{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"d"},
                   "spec":{"running":true,"running":false,"bogus":1}}"#;
    let st =
        status(&post_raw(&s, &format!("{VMS}?fieldValidation=Strict"), body), 400, "BadRequest");
    assert_eq!(
        st["message"],
        "VirtualMachine in version \"v1\" cannot be handled as a VirtualMachine: strict decoding error: duplicate field \"spec.running\", unknown field \"spec.bogus\""
    );
    // Warn: accepted, the last value wins, both problems reported.
    let r = post_raw(&s, VMS, body);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        warnings(&r),
        [
            "299 - \"duplicate field \\\"spec.running\\\"\"",
            "299 - \"unknown field \\\"spec.bogus\\\"\""
        ]
    );
    assert_eq!(r.json()["spec"], json!({"running": false}));
    // Ignore: accepted silently.
    let r = post_raw(&s, &format!("{VMS}?fieldValidation=Ignore"), &body.replace("\"d\"", "\"e\""));
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(warnings(&r).is_empty(), "{:?}", r.headers);
}

#[test]
fn strict_put_rejects_unknown_fields() {
    let s = TestServer::start();
    let created = create(&s, &vm("p", json!({"running": false})));
    let mut changed = created.clone();
    changed["spec"]["bogus"] = json!(true);
    let r = put(&s, &format!("{VMS}/p?fieldValidation=Strict"), &changed);
    let st = status(&r, 400, "BadRequest");
    assert_eq!(
        st["message"],
        "VirtualMachine in version \"v1\" cannot be handled as a VirtualMachine: strict decoding error: unknown field \"spec.bogus\""
    );
    assert_eq!(s.get(&format!("{VMS}/p")).json(), created, "nothing changed");

    // Warn (the default): stored without the field, and said so.
    let r = put(&s, &format!("{VMS}/p"), &changed);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(warnings(&r), ["299 - \"unknown field \\\"spec.bogus\\\"\""]);
    assert_eq!(r.json()["spec"], json!({"running": false}));
    assert_eq!(
        r.json()["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"],
        "pruned to a no-op"
    );
}

#[test]
fn strict_patch_is_invalid_on_the_patch_field() {
    let s = TestServer::start();
    create(&s, &vm("q", json!({"running": false})));
    let path = format!("{VMS}/q?fieldValidation=Strict");
    let r = patch(&s, &path, "application/merge-patch+json", &json!({"spec": {"bogus": 1}}));
    let st = status(&r, 422, "Invalid");
    let message = st["message"].as_str().unwrap();
    assert!(message.starts_with(" \"\" is invalid: patch: Invalid value: \"{"), "{st}");
    assert!(message.ends_with(": strict decoding error: unknown field \"spec.bogus\""), "{st}");
    let cause = &st["details"]["causes"][0];
    assert_eq!(cause["reason"], "FieldValueInvalid", "{st}");
    assert_eq!(cause["field"], "patch", "{st}");
    // The quoted value is the patched object, unknown field included.
    assert!(cause["message"].as_str().unwrap().contains(r#"\"bogus\":1"#), "{st}");
    assert!(st["details"].get("kind").is_none(), "{st}");

    // A JSON patch adding the field, and a merge patch repeating a key, are rejected the same way.
    let ops = json!([{"op": "add", "path": "/spec/bogus", "value": 1}]);
    let st = status(&patch(&s, &path, "application/json-patch+json", &ops), 422, "Invalid");
    assert!(st["message"].as_str().unwrap().ends_with("unknown field \"spec.bogus\""), "{st}");
    let dup = br#"{"spec":{"running":true,"running":false}}"#;
    let r = s.request("PATCH", &path, &[], Some(("application/merge-patch+json", dup)));
    let st = status(&r, 422, "Invalid");
    assert!(st["message"].as_str().unwrap().ends_with("duplicate field \"spec.running\""), "{st}");
    assert_eq!(s.get(&format!("{VMS}/q")).json()["spec"], json!({"running": false}));

    // Warn: applied without the unknown field.
    let r = patch(
        &s,
        &format!("{VMS}/q"),
        "application/merge-patch+json",
        &json!({"spec": {"bogus": 1, "running": true}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(warnings(&r), ["299 - \"unknown field \\\"spec.bogus\\\"\""]);
    assert_eq!(s.get(&format!("{VMS}/q")).json()["spec"], json!({"running": true}));
}

#[test]
fn warn_is_the_default_and_prunes() {
    let s = TestServer::start();
    let body =
        vm("w", json!({"runStrategy": "Manual", "bogus": 1, "template": {"spec": {"x": 1}}}));
    for path in [VMS.to_string(), format!("{VMS}?fieldValidation=Warn")] {
        let r = post(&s, &path, &body);
        assert_eq!(r.status, 201, "{}", r.text());
        assert_eq!(
            warnings(&r),
            [
                "299 - \"unknown field \\\"spec.bogus\\\"\"",
                "299 - \"unknown field \\\"spec.template.spec.x\\\"\""
            ]
        );
        let created = r.json();
        assert_eq!(created["spec"], json!({"runStrategy": "Manual", "template": {"spec": {}}}));
        assert_eq!(s.get(&format!("{VMS}/w")).json(), created, "stored without them");
        assert_eq!(s.delete(&format!("{VMS}/w")).status, 200);
    }
}

#[test]
fn ignore_prunes_silently() {
    let s = TestServer::start();
    let mut body = vm("i", json!({"runStrategy": "Manual", "bogus": 1}));
    body["metadata"]["unknownMeta"] = json!("x");
    let r = post(&s, &format!("{VMS}?fieldValidation=Ignore"), &body);
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(warnings(&r).is_empty(), "{:?}", r.headers);
    let stored = s.get(&format!("{VMS}/i")).json();
    assert_eq!(stored["spec"], json!({"runStrategy": "Manual"}), "kube prunes under Ignore too");
    assert!(stored["metadata"].get("unknownMeta").is_none());
}

#[test]
fn wrong_types_are_invalid_whatever_the_mode() {
    let s = TestServer::start();
    for mode in ["Ignore", "Warn", "Strict"] {
        let r =
            post(&s, &format!("{VMS}?fieldValidation={mode}"), &vm("t", json!({"running": "yes"})));
        let st = status(&r, 422, "Invalid");
        assert_eq!(
            st["message"],
            "VirtualMachine.kubevirt.io \"t\" is invalid: spec.running: Invalid value: \"string\": spec.running in body must be of type boolean: \"string\""
        );
        assert_eq!(
            st["details"],
            json!({"name": "t", "group": "kubevirt.io", "kind": "VirtualMachine", "causes": [{
                "reason": "FieldValueTypeInvalid",
                "message": "Invalid value: \"string\": spec.running in body must be of type boolean: \"string\"",
                "field": "spec.running"}]})
        );
    }
    // In an update and a patch too; nothing changes.
    let created = create(&s, &vm("t", json!({"running": false})));
    let mut changed = created.clone();
    changed["spec"]["template"] = json!("a string");
    let st = status(&put(&s, &format!("{VMS}/t"), &changed), 422, "Invalid");
    assert_eq!(
        st["message"],
        "VirtualMachine.kubevirt.io \"t\" is invalid: spec.template: Invalid value: \"string\": spec.template in body must be of type object: \"string\""
    );
    let change = json!({"spec": {"running": "yes", "runStrategy": 3}});
    let st = status(
        &patch(&s, &format!("{VMS}/t"), "application/merge-patch+json", &change),
        422,
        "Invalid",
    );
    assert_eq!(
        st["message"],
        "VirtualMachine.kubevirt.io \"t\" is invalid: [spec.runStrategy: Invalid value: \"integer\": spec.runStrategy in body must be of type string: \"integer\", spec.running: Invalid value: \"string\": spec.running in body must be of type boolean: \"string\"]"
    );
    assert_eq!(s.get(&format!("{VMS}/t")).json(), created);

    // Replica counts are integers; a fraction is a number.
    let rs = "/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancereplicasets";
    let body = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceReplicaSet",
                      "metadata": {"name": "r"}, "spec": {"replicas": 1.5}});
    let st = status(&post(&s, rs, &body), 422, "Invalid");
    assert_eq!(
        st["message"],
        "VirtualMachineInstanceReplicaSet.kubevirt.io \"r\" is invalid: spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\""
    );
}

#[test]
fn enum_violations_list_the_supported_values() {
    let s = TestServer::start();
    let st = status(&post(&s, VMS, &vm("e", json!({"runStrategy": "Sometimes"}))), 422, "Invalid");
    let detail = "Unsupported value: \"Sometimes\": supported values: \"Always\", \"RerunOnFailure\", \"Manual\", \"Halted\", \"Once\", \"WaitAsReceiver\"";
    assert_eq!(
        st["message"],
        format!("VirtualMachine.kubevirt.io \"e\" is invalid: spec.runStrategy: {detail}")
    );
    assert_eq!(
        st["details"]["causes"],
        json!([{"reason": "FieldValueNotSupported", "message": detail, "field": "spec.runStrategy"}])
    );
    // Schema errors and metadata errors come back together.
    let mut bad = vm("Bad_Name", json!({"runStrategy": "Sometimes"}));
    bad["metadata"]["name"] = json!("Bad_Name");
    let st = status(&post(&s, VMS, &bad), 422, "Invalid");
    let fields = cause_fields(&st);
    assert_eq!(fields, ["metadata.name", "spec.runStrategy"], "{st}");

    let dvs = "/apis/cdi.kubevirt.io/v1beta1/namespaces/default/datavolumes";
    let dv = json!({"apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume",
                    "metadata": {"name": "dv"}, "spec": {"contentType": "iso"}});
    let st = status(&post(&s, dvs, &dv), 422, "Invalid");
    assert_eq!(
        st["message"],
        "DataVolume.cdi.kubevirt.io \"dv\" is invalid: spec.contentType: Unsupported value: \"iso\": supported values: \"kubevirt\", \"archive\""
    );
}

#[test]
fn required_fields_and_list_map_keys() {
    let s = TestServer::start();
    let spec = json!({"template": {"spec": {"volumes": [
        {"name": "root", "containerDisk": {"image": "a"}},
        {"name": "root", "emptyDisk": {"capacity": "1Gi"}},
        {"emptyDisk": {}}]}}});
    let st = status(&post(&s, VMS, &vm("l", spec)), 422, "Invalid");
    assert_eq!(
        st["message"],
        "VirtualMachine.kubevirt.io \"l\" is invalid: [spec.template.spec.volumes[2].name: Required value, spec.template.spec.volumes[1]: Duplicate value: map[string]interface {}{\"name\":\"root\"}]"
    );
    let reasons: Vec<&str> = st["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["FieldValueRequired", "FieldValueDuplicate"]);

    let utr = "/apis/upload.cdi.kubevirt.io/v1beta1/namespaces/default/uploadtokenrequests";
    let body = json!({"apiVersion": "upload.cdi.kubevirt.io/v1beta1", "kind": "UploadTokenRequest",
                      "metadata": {"name": "u"}, "spec": {}});
    let st = status(&post(&s, utr, &body), 422, "Invalid");
    assert_eq!(st["details"]["causes"][0]["field"], "spec.pvcName", "{st}");
}

/// Realistic objects of several kinds pass Strict unchanged.
#[test]
fn real_objects_pass_strict_unchanged() {
    let s = TestServer::start();
    let cases = [
        (
            "/apis/kubevirt.io/v1/namespaces/default/virtualmachines",
            json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "fedora"},
              "spec": {"runStrategy": "Always",
                "instancetype": {"name": "u1.medium", "kind": "VirtualMachineClusterInstancetype"},
                "preference": {"name": "fedora"},
                "dataVolumeTemplates": [{"metadata": {"name": "fedora-root"}, "spec": {
                    "sourceRef": {"kind": "DataSource", "name": "fedora", "namespace": "os-images"},
                    "storage": {"resources": {"requests": {"storage": "30Gi"}}}}}],
                "template": {"metadata": {"labels": {"kubevirt.io/domain": "fedora"}},
                  "spec": {"terminationGracePeriodSeconds": 180,
                    "domain": {"cpu": {"cores": 2}, "memory": {"guest": "2Gi"},
                      "devices": {"disks": [{"name": "root", "disk": {"bus": "virtio"}}],
                                  "interfaces": [{"name": "default", "masquerade": {}}]}},
                    "networks": [{"name": "default", "pod": {}}],
                    "volumes": [{"name": "root", "dataVolume": {"name": "fedora-root"}},
                                {"name": "cloudinit", "cloudInitNoCloud": {"userData": "#cloud-config"}}],
                    "evictionStrategy": "LiveMigrate", "nodeSelector": {"kubernetes.io/arch": "amd64"}}}},
              "status": {"printableStatus": "Running", "ready": true, "created": true,
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "volumeSnapshotStatuses": [{"name": "root", "enabled": true}]}}),
        ),
        (
            "/apis/cdi.kubevirt.io/v1beta1/namespaces/default/datavolumes",
            json!({"apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume", "metadata": {"name": "img"},
              "spec": {"source": {"http": {"url": "http://example.com/disk.qcow2"}},
                "storage": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "10Gi"}}},
                "contentType": "kubevirt", "preallocation": false,
                "checkpoints": [{"previous": "", "current": "snap1"}], "finalCheckpoint": true},
              "status": {"phase": "ImportInProgress", "progress": "45.5%", "restartCount": 1, "claimName": "img",
                "conditions": [{"type": "Bound", "status": "True", "lastHeartbeatTime": "2026-01-01T00:00:00Z"}]}}),
        ),
        (
            "/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancereplicasets",
            json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceReplicaSet", "metadata": {"name": "rs"},
              "spec": {"replicas": 3, "selector": {"matchLabels": {"tier": "frontend"},
                  "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]},
                "template": {"metadata": {"labels": {"tier": "frontend"}},
                  "spec": {"domain": {"devices": {}}}}}}),
        ),
        (
            "/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstancemigrations",
            json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration", "metadata": {"name": "mig"},
              "spec": {"vmiName": "fedora"}, "status": {"phase": "Running"}}),
        ),
        (
            "/apis/instancetype.kubevirt.io/v1alpha2/namespaces/default/virtualmachineinstancetypes",
            json!({"apiVersion": "instancetype.kubevirt.io/v1alpha2", "kind": "VirtualMachineInstancetype",
              "metadata": {"name": "u1-medium"},
              "spec": {"cpu": {"guest": 2}, "memory": {"guest": "4Gi"}}}),
        ),
        (
            "/apis/snapshot.kubevirt.io/v1alpha1/namespaces/default/virtualmachinesnapshots",
            json!({"apiVersion": "snapshot.kubevirt.io/v1alpha1", "kind": "VirtualMachineSnapshot",
              "metadata": {"name": "snap"},
              "spec": {"source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "fedora"}}}),
        ),
        (
            "/apis/clone.kubevirt.io/v1alpha1/virtualmachineclones",
            json!({"apiVersion": "clone.kubevirt.io/v1alpha1", "kind": "VirtualMachineClone",
              "metadata": {"name": "clone"},
              "spec": {"source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "fedora"},
                       "target": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "copy"},
                       "labelFilters": ["*", "!debug/*"]}}),
        ),
        (
            "/apis/cdi.kubevirt.io/v1beta1/namespaces/default/dataimportcrons",
            json!({"apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataImportCron", "metadata": {"name": "cron"},
              "spec": {"schedule": "0 */12 * * *", "managedDataSource": "fedora", "garbageCollect": "Outdated",
                "importsToKeep": 2, "template": {"spec": {"source": {"registry": {"url": "docker://quay.io/x"}},
                  "storage": {"resources": {"requests": {"storage": "5Gi"}}}}}}}),
        ),
    ];
    for (path, body) in cases {
        let r = post(&s, &format!("{path}?fieldValidation=Strict"), &body);
        assert_eq!(r.status, 201, "{path}: {}", r.text());
        assert!(warnings(&r).is_empty(), "{path}: {:?}", r.headers);
        let created = r.json();
        // (status may be dropped on create where the kind has a status subresource)
        assert_eq!(created["spec"], body["spec"], "{path}");
    }
}

/// dryRun=All on every write: validated and answered, nothing stored, no watch event.
#[test]
fn dry_run_stores_nothing_and_sends_no_event() {
    let s = TestServer::start();
    let base = create(&s, &vm("base", json!({"running": false})));
    let rv = base["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let w = s.watch(&format!("{VMS}?watch=true&resourceVersion={rv}"));

    // create
    let r =
        post(&s, &format!("{VMS}?dryRun=All"), &vm("dry", json!({"running": true, "bogus": 1})));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(warnings(&r), ["299 - \"unknown field \\\"spec.bogus\\\"\""]);
    let answered = r.json();
    assert_eq!(answered["metadata"]["name"], "dry");
    assert_eq!(answered["spec"], json!({"running": true}));
    assert_eq!(s.get(&format!("{VMS}/dry")).status, 404);
    // Validation still runs on a dry run.
    let r = s
        .post(&format!("{VMS}?dryRun=All&fieldValidation=Strict"), &vm("dry", json!({"bogus": 1})));
    status(&r, 400, "BadRequest");
    status(
        &post(&s, &format!("{VMS}?dryRun=All"), &vm("dry", json!({"running": 1}))),
        422,
        "Invalid",
    );

    // update
    let mut changed = base.clone();
    changed["spec"]["running"] = json!(true);
    let r = put(&s, &format!("{VMS}/base?dryRun=All"), &changed);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["spec"]["running"], true);
    assert_eq!(r.json()["metadata"]["generation"], 2);

    // patch (merge and JSON)
    let r = patch(
        &s,
        &format!("{VMS}/base?dryRun=All"),
        "application/merge-patch+json",
        &json!({"spec": {"runStrategy": "Always", "running": null}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["spec"], json!({"runStrategy": "Always"}));
    let ops = json!([{"op": "replace", "path": "/spec/running", "value": true}]);
    let r = patch(&s, &format!("{VMS}/base?dryRun=All"), "application/json-patch+json", &ops);
    assert_eq!(r.status, 200, "{}", r.text());
    let r = patch(
        &s,
        &format!("{VMS}/base?dryRun=All"),
        "application/merge-patch+json",
        &json!({"spec": {"runStrategy": "Never"}}),
    );
    status(&r, 422, "Invalid");

    // delete
    let r = s.delete(&format!("{VMS}/base?dryRun=All"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["status"], "Success");
    let r = s.delete_with(&format!("{VMS}/base"), &json!({"dryRun": ["All"]}));
    assert_eq!(r.status, 200, "{}", r.text());

    // deletecollection
    let r = s.delete(&format!("{VMS}?dryRun=All"));
    assert_eq!(r.status, 200, "{}", r.text());
    let list = r.json();
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["base"]);

    assert_eq!(s.get(&format!("{VMS}/base")).json(), base, "nothing changed");
    w.expect_none(Duration::from_millis(500));
    // The watch is alive: the first event it sees is the first real write.
    let r = patch(
        &s,
        &format!("{VMS}/base"),
        "application/merge-patch+json",
        &json!({"spec": {"running": true}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let ev = w.expect();
    assert_eq!(ev["type"], "MODIFIED", "{ev}");
    assert_eq!(ev["object"]["spec"], json!({"running": true}));
    assert_eq!(
        ev["object"]["metadata"]["resourceVersion"],
        r.json()["metadata"]["resourceVersion"]
    );
}

#[test]
fn kubectl_create_with_a_bogus_field_fails() {
    let s = TestServer::start();
    let k = Kubectl::new(&s);
    let bad_path = k.file(
        "bad.yaml",
        "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: bad\nspec:\n  runStrategy: Halted\n  bogus: 1\n",
    );
    let bad = bad_path.to_str().expect("UTF-8 path");
    let err = k.fails(&["create", "-f", bad]);
    assert_eq!(
        err.trim(),
        "Error from server (BadRequest): error when creating \"".to_string()
            + bad
            + "\": VirtualMachine in version \"v1\" cannot be handled as a VirtualMachine: strict decoding error: unknown field \"spec.bogus\"",
    );
    assert_eq!(s.get(&format!("{VMS}/bad")).status, 404);

    let bad_enum_path = k.file(
        "enum.yaml",
        "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: enum\nspec:\n  runStrategy: Sometimes\n",
    );
    let bad_enum = bad_enum_path.to_str().expect("UTF-8 path");
    let err = k.fails(&["create", "-f", bad_enum]);
    assert!(
        err.contains("The VirtualMachine \"enum\" is invalid: spec.runStrategy: Unsupported value: \"Sometimes\": supported values: \"Always\""),
        "{err}"
    );

    // kubectl apply: created by a Strict POST, then a Strict merge patch refused on `patch`.
    let good_path = k.file(
        "apply.yaml",
        "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: applied\nspec:\n  runStrategy: Halted\n",
    );
    let good = good_path.to_str().expect("UTF-8 path");
    assert_eq!(k.ok(&["apply", "-f", good]).trim(), "virtualmachine.kubevirt.io/applied created");
    let changed_path = k.file(
        "apply2.yaml",
        "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: applied\nspec:\n  runStrategy: Always\n  bogus: 1\n",
    );
    let changed = changed_path.to_str().expect("UTF-8 path");
    let err = k.fails(&["apply", "-f", changed]);
    assert!(err.starts_with("The request is invalid: patch: Invalid value: \""), "{err}");
    assert!(
        err.trim_end().ends_with(": strict decoding error: unknown field \"spec.bogus\""),
        "{err}"
    );
    assert_eq!(s.get(&format!("{VMS}/applied")).json()["spec"], json!({"runStrategy": "Halted"}));

    // --validate=false sends Ignore: created, the field pruned.
    let out = k.ok(&["create", "--validate=false", "-f", bad]);
    assert_eq!(out.trim(), "virtualmachine.kubevirt.io/bad created");
    assert_eq!(s.get(&format!("{VMS}/bad")).json()["spec"], json!({"runStrategy": "Halted"}));
}

/// With a status subresource, `/status` writes are validated on their status, while the main
/// endpoint ignores status before validating, as kube's status strategy does.
#[test]
fn status_is_validated_where_it_is_written() {
    let s = TestServer::start();
    let created = create(&s, &vm("s", json!({"running": false})));
    let status_path = format!("{VMS}/s/status");
    let merge = "application/merge-patch+json";
    let bad = json!({"status": {"ready": "yes"}});
    let st = status(&patch(&s, &status_path, merge, &bad), 422, "Invalid");
    assert_eq!(st["details"]["causes"][0]["field"], "status.ready", "{st}");
    assert_eq!(st["details"]["causes"][0]["reason"], "FieldValueTypeInvalid", "{st}");
    // Phases are open, as in KubeVirt's own CRDs: controllers may write any.
    let phase = json!({"status": {"printableStatus": "Migrating"}});
    assert_eq!(patch(&s, &status_path, merge, &phase).status, 200);
    let unknown = json!({"status": {"ready": true, "bogus": 1}});
    let r = patch(&s, &format!("{status_path}?fieldValidation=Strict"), merge, &unknown);
    let st = status(&r, 422, "Invalid");
    assert!(st["message"].as_str().unwrap().ends_with("unknown field \"status.bogus\""), "{st}");
    let r = patch(&s, &status_path, merge, &unknown);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(warnings(&r), ["299 - \"unknown field \\\"status.bogus\\\"\""]);
    assert_eq!(r.json()["status"], json!({"ready": true, "printableStatus": "Migrating"}));

    // The main endpoint drops status changes, so an invalid status there is no error.
    let r = patch(&s, &format!("{VMS}/s"), merge, &bad);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["status"], json!({"ready": true, "printableStatus": "Migrating"}));
    assert_eq!(r.json()["metadata"]["generation"], created["metadata"]["generation"]);
}

const YAML_WITH_DUPLICATES: &str = "apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: NAME
  namespace: default
  name: NAME
spec:
  running: false
  running: true
  bogus: 1
";

/// YAML bodies: repeated keys are worded by line, as yaml.v2's strict decoder words them
/// (field_validation_test.go `*-yaml` cases); the last value wins when they are let through.
#[test]
fn yaml_bodies_report_repeated_keys_by_line() {
    let s = TestServer::start();
    let body = |name: &str| YAML_WITH_DUPLICATES.replace("NAME", name);
    let r = send(
        &s,
        "POST",
        &format!("{VMS}?fieldValidation=Strict"),
        "application/yaml",
        body("a").as_bytes(),
    );
    let st = status(&r, 400, "BadRequest");
    assert_eq!(
        st["message"],
        "VirtualMachine in version \"v1\" cannot be handled as a VirtualMachine: strict decoding error: yaml: unmarshal errors:\n  line 6: key \"name\" already set in map\n  line 9: key \"running\" already set in map, unknown field \"spec.bogus\""
    );
    assert_eq!(s.get(&format!("{VMS}/a")).status, 404);

    let r = send(&s, "POST", VMS, "application/yaml", body("b").as_bytes());
    assert_eq!(r.status, 201, "{}", r.text());
    let w = warnings(&r);
    assert_eq!(w.len(), 3, "{w:?}");
    assert!(w[0].ends_with("\"line 6: key \\\"name\\\" already set in map\""), "{w:?}");
    assert!(w[1].ends_with("\"line 9: key \\\"running\\\" already set in map\""), "{w:?}");
    assert!(w[2].ends_with("\"unknown field \\\"spec.bogus\\\"\""), "{w:?}");
    assert_eq!(r.json()["spec"], json!({"running": true}));

    let r = send(
        &s,
        "POST",
        &format!("{VMS}?fieldValidation=Ignore"),
        "application/yaml",
        body("c").as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert!(warnings(&r).is_empty());

    // PUT too.
    let rv = s.get(&format!("{VMS}/c")).json()["metadata"]["resourceVersion"].clone();
    let text = format!(
        "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: c\n  namespace: default\n  name: c\n  resourceVersion: {rv}\nspec:\n  running: false\n  running: true\n"
    );
    let put = format!("{VMS}/c?fieldValidation=Strict");
    let st = status(&send(&s, "PUT", &put, "application/yaml", text.as_bytes()), 400, "BadRequest");
    assert!(
        st["message"].as_str().unwrap().ends_with(
            "strict decoding error: yaml: unmarshal errors:\n  line 6: key \"name\" already set in map\n  line 10: key \"running\" already set in map"
        ),
        "{st}"
    );
}

/// JSON patch operations are decoded strictly: fields an operation has not, and repeated ones.
#[test]
fn json_patch_operations_are_decoded_strictly() {
    let s = TestServer::start();
    create(&s, &vm("a", json!({"running": false})));
    let body = br#"[{"op": "add", "path": "/spec/bogus", "value": 1, "foo": "bar"},
                    {"op": "replace", "path": "/spec/nope", "path": "/spec/running", "value": true}]"#;
    let path = format!("{VMS}/a");
    let r = send(
        &s,
        "PATCH",
        &format!("{path}?fieldValidation=Strict"),
        "application/json-patch+json",
        body,
    );
    let st = status(&r, 422, "Invalid");
    let message = st["message"].as_str().unwrap();
    assert!(
        message.ends_with("strict decoding error: json patch unknown field \"[0].foo\", json patch duplicate field \"[1].path\", unknown field \"spec.bogus\""),
        "{message}"
    );
    let r = send(&s, "PATCH", &path, "application/json-patch+json", body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(warnings(&r).len(), 3, "{:?}", warnings(&r));
    // The last of the repeated fields is the one applied.
    assert_eq!(r.json()["spec"], json!({"running": true}));
}

fn apply(s: &TestServer, name: &str, query: &str, body: &[u8]) -> Resp {
    let path = format!("{VMS}/{name}?fieldManager=mgr{query}");
    send(s, "PATCH", &path, "application/apply-patch+yaml", body)
}

/// An apply must declare every field it sets, whatever fieldValidation says (structured-merge-
/// diff cannot type it otherwise); repeated keys follow fieldValidation (patch.go
/// `applyPatcher`: `error strict decoding YAML`).
#[test]
fn apply_bodies_are_validated() {
    let s = TestServer::start();
    let unknown = vm("a", json!({"running": true, "bogus": {"x": 1}, "other": 2})).to_string();
    for query in ["", "&fieldValidation=Ignore", "&fieldValidation=Strict"] {
        let st = status(&apply(&s, "a", query, unknown.as_bytes()), 400, "BadRequest");
        assert_eq!(
            st["message"],
            "failed to create typed patch object (default/a; kubevirt.io/v1, Kind=VirtualMachine): errors:\n  .spec.bogus: field not declared in schema\n  .spec.other: field not declared in schema"
        );
    }
    let one = vm("a", json!({"bogus": 1})).to_string();
    let st = status(&apply(&s, "a", "", one.as_bytes()), 400, "BadRequest");
    assert_eq!(
        st["message"],
        "failed to create typed patch object (default/a; kubevirt.io/v1, Kind=VirtualMachine): .spec.bogus: field not declared in schema"
    );
    let mut meta = vm("a", json!({}));
    meta["metadata"]["unknownMeta"] = json!("x");
    let st = status(&apply(&s, "a", "", meta.to_string().as_bytes()), 400, "BadRequest");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .ends_with("): .metadata.unknownMeta: field not declared in schema"),
        "{st}"
    );
    assert_eq!(s.get(&format!("{VMS}/a")).status, 404);

    let yaml = YAML_WITH_DUPLICATES.replace("NAME", "a").replace("  bogus: 1\n", "");
    let st = status(&apply(&s, "a", "&fieldValidation=Strict", yaml.as_bytes()), 400, "BadRequest");
    assert_eq!(
        st["message"],
        "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  line 6: key \"name\" already set in map\n  line 9: key \"running\" already set in map"
    );
    assert_eq!(s.get(&format!("{VMS}/a")).status, 404);
    let r = apply(&s, "a", "", yaml.as_bytes());
    assert_eq!(r.status, 201, "{}", r.text());
    let w = warnings(&r);
    assert_eq!(w.len(), 2, "{w:?}");
    assert!(w[1].ends_with("\"line 9: key \\\"running\\\" already set in map\""), "{w:?}");
    assert_eq!(r.json()["spec"], json!({"running": true}));
    let r = apply(&s, "a", "&fieldValidation=Ignore", yaml.as_bytes());
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(warnings(&r).is_empty());
}

/// virt-api's VM admitter warns of `spec.running` on every create and update of a VM that sets
/// it, true or false (`vms-admitter.go`: `if vm.Spec.Running != nil`), whether or not the
/// runtime is simulated; not on a status write, which KubeVirt admits separately, and not when
/// `runStrategy` alone is used. kubectl prints it.
#[test]
fn spec_running_is_deprecated_as_virt_api_warns() {
    const DEPRECATED: &str =
        r#"299 - "spec.running is deprecated, please use spec.runStrategy instead.""#;
    let s = TestServer::start();
    let r = post(&s, VMS, &vm("legacy", json!({"running": false})));
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(all_warnings(&r), [DEPRECATED]);
    let mut stored = r.json();
    stored["metadata"]["labels"] = json!({"a": "b"});
    let r = put(&s, &format!("{VMS}/legacy"), &stored);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(all_warnings(&r), [DEPRECATED], "an update that keeps it");
    let merge = json!({"spec": {"running": true}});
    let r = patch(&s, &format!("{VMS}/legacy"), "application/merge-patch+json", &merge);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(all_warnings(&r), [DEPRECATED]);
    let status = json!({"status": {"printableStatus": "Stopped"}});
    let r = patch(&s, &format!("{VMS}/legacy/status"), "application/merge-patch+json", &status);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(all_warnings(&r).is_empty(), "a status write: {:?}", all_warnings(&r));
    // Unknown fields warn first, as kube's decoder adds them before admission.
    let r = send(
        &s,
        "POST",
        &format!("{VMS}?fieldValidation=Warn"),
        "application/json",
        vm("typo", json!({"running": true, "bogus": 1})).to_string().as_bytes(),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(all_warnings(&r), [r#"299 - "unknown field \"spec.bogus\"""#, DEPRECATED]);
    // Moved to runStrategy: no warning.
    let r = patch(
        &s,
        &format!("{VMS}/legacy"),
        "application/merge-patch+json",
        &json!({"spec": {"running": null, "runStrategy": "Halted"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(all_warnings(&r).is_empty(), "{:?}", all_warnings(&r));
    let r = post(&s, VMS, &vm("modern", json!({"runStrategy": "Always"})));
    assert!(all_warnings(&r).is_empty(), "{:?}", all_warnings(&r));

    // kubectl apply (server-side and client-side) prints it as kubectl does.
    let kubectl = Kubectl::new(&s);
    let file = kubectl.file("running.json", &vm("applied", json!({"running": true})).to_string());
    let path = file.to_str().unwrap();
    for args in [vec!["apply", "-f", path], vec!["apply", "--server-side", "-f", path]] {
        let run = kubectl.run(&args);
        assert!(run.ok(), "{}", run.describe());
        assert!(
            run.stderr().contains(
                "Warning: spec.running is deprecated, please use spec.runStrategy instead."
            ),
            "{}",
            run.describe()
        );
    }
}
