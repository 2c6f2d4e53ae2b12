//! `--faults FILE`: Faults in force from the first request, from YAML documents or a JSON list;
//! a bad one stops the start, naming the file and the document.

use std::process::Command;

use serde_json::json;

use super::{create_cm, FAULTS};
use crate::common::{binary, names, ServerOptions, TestServer};

const TWO_FAULTS: &str = "\
apiVersion: testing.virt-apiserver.io/v1alpha1
kind: Fault
metadata: {name: first-create-fails}
spec:
  match: {verbs: [create], resources: [configmaps]}
  times: 1
  action:
    status: {code: 500}
---
apiVersion: testing.virt-apiserver.io/v1alpha1
kind: Fault
metadata: {name: secrets-unavailable}
spec:
  match: {resources: [secrets]}
  action:
    status: {code: 503}
";

#[test]
fn faults_from_a_file_are_in_force_from_the_first_request() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("faults.yaml");
    std::fs::write(&file, TWO_FAULTS).unwrap();
    let args = vec!["--faults".to_string(), file.display().to_string()];
    let s = TestServer::start_with(ServerOptions { args, ..Default::default() });
    assert_eq!(create_cm(&s, "default", "a").status, 500);
    assert_eq!(create_cm(&s, "default", "a").status, 201);
    assert_eq!(s.get("/api/v1/namespaces/default/secrets").status, 503);
    assert_eq!(names(&s.get_json(FAULTS)), ["first-create-fails", "secrets-unavailable"]);

    // A JSON list serves as well.
    let list = json!([{"apiVersion": "testing.virt-apiserver.io/v1alpha1", "kind": "Fault",
                       "metadata": {"name": "from-json"},
                       "spec": {"match": {"verbs": ["list"]}, "action": {"status": {"code": 429}}}}]);
    let file = dir.path().join("faults.json");
    std::fs::write(&file, list.to_string()).unwrap();
    let args = vec!["--faults".to_string(), file.display().to_string()];
    let s = TestServer::start_with(ServerOptions { memory: true, args, ..Default::default() });
    assert_eq!(s.get("/api/v1/namespaces/default/configmaps").status, 429);
}

#[test]
fn a_bad_fault_in_the_file_stops_the_start_naming_its_document() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("faults.yaml");
    let bad = TWO_FAULTS.replace("code: 503", "code: 200");
    std::fs::write(&file, bad).unwrap();
    let out = Command::new(binary())
        .args(["--listen", "127.0.0.1:0", "--database", ":memory:", "--faults"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    let expected = format!("--faults {} document 2", file.display());
    assert!(stderr.contains(&expected), "{stderr}");
    assert!(stderr.contains("spec.action.status.code"), "{stderr}");
}
