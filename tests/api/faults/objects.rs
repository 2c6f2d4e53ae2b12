//! Faults managed as every kind is: kubectl apply, get (with their columns), a second create's
//! 409, delete; their validation's 422 with field causes; their status counting what fired.

use std::time::Duration;

use serde_json::json;

use super::{apply, create_cm, fault, FAULTS};
use crate::common::{assert_status, cause_fields, eventually, Kubectl, TestServer};

/// The README's Fault: the second ConfigMap create in `team-a` fails once with a 409.
const SECOND_CREATE_CONFLICTS: &str = "\
apiVersion: testing.virt-apiserver.io/v1alpha1
kind: Fault
metadata:
  name: second-create-conflicts
spec:
  match:
    verbs: [create]
    resources: [configmaps]
    namespaces: [team-a]
  after: 1
  times: 1
  action:
    status: {code: 409}
";

#[test]
fn the_readme_shows_this_fault() {
    let readme = std::fs::read_to_string(crate::common::repo_root().join("README.md")).unwrap();
    assert!(readme.contains(SECOND_CREATE_CONFLICTS), "README.md's Faults section");
}

#[test]
fn kubectl_applies_lists_and_deletes_faults() {
    let s = TestServer::start();
    s.namespace("team-a");
    let k = Kubectl::in_namespace(&s, "team-a");
    apply(&k, SECOND_CREATE_CONFLICTS);
    let table = k.ok(&["get", "faults"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "VERBS", "RESOURCES", "FIRED", "AGE"], "{table}");
    assert!(table.contains("second-create-conflicts"), "{table}");
    // A second create of the Fault itself is kube's 409 AlreadyExists (Faults are never faulted).
    let file = k.dir.path().join("fault.yaml");
    let err = k.fails(&["create", "-f", file.to_str().unwrap()]);
    assert!(err.contains("AlreadyExists") && err.contains("already exists"), "{err}");

    k.ok(&["create", "configmap", "first"]);
    let err = k.fails(&["create", "configmap", "second"]);
    // NewGenericServerResponse's message for a 409 to a POST, as the server wrote it.
    assert!(err.contains("the server reported a conflict (post configmaps)"), "{err}");
    k.ok(&["create", "configmap", "third"]);
    // What fired is written back to the Fault's status, and the FIRED column shows it.
    let status = eventually(Duration::from_secs(5), || {
        let f = s.get_json(&format!("{FAULTS}/second-create-conflicts"));
        (f["status"]["fired"] == 1 && f["status"]["matched"] == 3).then_some(f)
    });
    assert!(status["status"]["lastFiredTime"].is_string(), "{status}");
    let row = k.ok(&["get", "fault", "second-create-conflicts", "--no-headers"]);
    assert_eq!(row.split_whitespace().nth(3), Some("1"), "{row}");
    let metrics = s.get("/metrics").text();
    assert!(
        metrics.contains("virt_apiserver_faults_fired_total{fault=\"second-create-conflicts\"} 1"),
        "{metrics}"
    );

    k.ok(&["delete", "fault", "second-create-conflicts"]);
    assert_eq!(create_cm(&s, "team-a", "fourth").status, 201);
    assert!(k.ok(&["get", "faults"]).is_empty());
}

#[test]
fn a_fault_that_cannot_fire_is_invalid_with_kubes_field_causes() {
    let s = TestServer::start();
    let bad = json!({"apiVersion": "testing.virt-apiserver.io/v1alpha1", "kind": "Fault",
                     "metadata": {"name": "bad"},
                     "spec": {"match": {"verbs": ["fetch"]}, "probability": 2,
                              "action": {"drop": {}, "status": {"code": 200, "reason": "Odd",
                                         "causes": [{"reason": "Nope"}]}}}});
    let st = assert_status(&s.post(FAULTS, &bad), 422, "Invalid");
    let fields = cause_fields(&st);
    for f in [
        "spec.action",
        "spec.action.status.code",
        "spec.action.status.reason",
        "spec.action.status.causes[0].reason",
        "spec.match.verbs",
        "spec.probability",
    ] {
        assert!(fields.contains(&f), "{f} in {st}");
    }
    let none = json!({"apiVersion": "testing.virt-apiserver.io/v1alpha1", "kind": "Fault",
                      "metadata": {"name": "none"}, "spec": {"action": {}}});
    let st = assert_status(&s.post(FAULTS, &none), 422, "Invalid");
    assert_eq!(st["details"]["causes"][0]["reason"], "FieldValueRequired", "{st}");
    // An update is validated as a create is.
    fault(&s, "ok", json!({"action": {"drop": {}}}));
    let mut f = s.get_json(&format!("{FAULTS}/ok"));
    f["spec"]["action"] = json!({"watch": {"cut": "snip"}});
    let st = assert_status(&s.put(&format!("{FAULTS}/ok"), &f), 422, "Invalid");
    assert_eq!(st["details"]["causes"][0]["field"], "spec.action.watch.cut", "{st}");
}
