//! Faults as API objects (the `testing.virt-apiserver.io/v1alpha1` kind `Fault`): managed with
//! kubectl, applied by the filter chain to the requests they match, each shape and match rule
//! seen by a client; and nothing changes without them.

mod actions;
mod file;
mod matching;
mod objects;

use serde_json::{json, Value};

use crate::common::{Kubectl, TestServer};

pub const FAULTS: &str = "/apis/testing.virt-apiserver.io/v1alpha1/faults";

/// Applies a Fault manifest (YAML) with kubectl, as a user adds one.
pub fn apply(k: &Kubectl, yaml: &str) {
    let file = k.dir.path().join("fault.yaml");
    std::fs::write(&file, yaml).expect("write the manifest");
    k.ok(&["apply", "-f", file.to_str().expect("utf-8 path")]);
}

/// Creates a Fault named `name` with `spec` over HTTP.
pub fn fault(s: &TestServer, name: &str, spec: Value) {
    let body = json!({"apiVersion": "testing.virt-apiserver.io/v1alpha1", "kind": "Fault",
                      "metadata": {"name": name}, "spec": spec});
    let r = s.post(FAULTS, &body);
    assert_eq!(r.status, 201, "{}", r.text());
}

/// A ConfigMap create in `ns` named `name`, answered with what the server said.
pub fn create_cm(s: &TestServer, ns: &str, name: &str) -> crate::common::Resp {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    s.post(&format!("/api/v1/namespaces/{ns}/configmaps"), &body)
}
