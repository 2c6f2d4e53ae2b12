//! A VM's volumes in the simulated runtime: its dataVolumeTemplates' DataVolumes created and
//! waited for (Provisioning), a failed import (DataVolumeError), a VMI waiting for a
//! DataVolume that does not exist (ErrorPvcNotFound) and for an unbound claim
//! (WaitingForVolumeBinding): `printableStatus` by KubeVirt's precedence, seen by a watch.

use serde_json::{json, Value};

use crate::common::{condition, managers, sequence, Kubectl, TestServer};

const KV: &str = "/apis/kubevirt.io/v1/namespaces";
const CDI: &str = "/apis/cdi.kubevirt.io/v1beta1/namespaces";
const FAIL: &str = "simulate.virt-apiserver.io/fail";

fn simulating() -> TestServer {
    crate::common::simulating(&["--simulate-speed", "0", "--simulate-seed", "3"])
}

fn create(server: &TestServer, path: &str, body: &Value) -> Value {
    let r = server.post(path, body);
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

fn import(name: &str) -> Value {
    json!({"apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume", "metadata": {"name": name},
           "spec": {"source": {"http": {"url": "https://example.com/disk.img"}},
                    "storage": {"resources": {"requests": {"storage": "1Gi"}}}}})
}

/// An Always VM with a DataVolume disk named `dv`, from a template when `template` is given.
fn vm(name: &str, dv: &str, template: Option<Value>) -> Value {
    let mut vm = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
        "metadata": {"name": name},
        "spec": {"runStrategy": "Always", "template": {"spec": {
            "domain": {"devices": {"disks": [{"name": "root", "disk": {}}]}},
            "volumes": [{"name": "root", "dataVolume": {"name": dv}}]}}}});
    if let Some(t) = template {
        vm["spec"]["dataVolumeTemplates"] = json!([t]);
    }
    vm
}

#[test]
fn a_vm_provisions_its_data_volume_templates_before_it_starts() {
    let server = simulating();
    server.namespace("ns");
    let vms = server.watch(&format!("{KV}/ns/virtualmachines?watch=true"));
    let vm = create(
        &server,
        &format!("{KV}/ns/virtualmachines"),
        &vm("p", "p-root", Some(import("p-root"))),
    );
    let seen = sequence(&vms, "p", "/status/printableStatus", &["Running"]);
    assert_eq!(
        seen.iter().filter(|s| !s.is_empty()).collect::<Vec<_>>(),
        ["Provisioning", "Starting", "Running"],
        "{seen:?}"
    );
    let dv = server.get_json(&format!("{CDI}/ns/datavolumes/p-root"));
    assert_eq!(dv["status"]["phase"], "Succeeded");
    let kubectl = Kubectl::in_namespace(&server, "ns");
    let table = kubectl.ok(&["get", "datavolumes"]);
    assert!(table.lines().any(|l| l.starts_with("p-root") && l.contains("Succeeded")), "{table}");
    assert_eq!(dv["metadata"]["labels"]["kubevirt.io/created-by"], vm["metadata"]["uid"]);
    let owner = &dv["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["kind"].as_str(), owner["controller"].as_bool()),
        (Some("VirtualMachine"), Some(true))
    );
    assert!(managers(&dv).contains(&"virt-controller"), "{dv}");
    let events = server.get_json("/api/v1/namespaces/ns/events");
    let reasons: Vec<&str> =
        events["items"].as_array().unwrap().iter().filter_map(|e| e["reason"].as_str()).collect();
    assert!(reasons.contains(&"SuccessfulDataVolumeCreate"), "{reasons:?}");
}

#[test]
fn a_failed_import_is_a_data_volume_error_and_the_vm_does_not_start() {
    let server = simulating();
    server.namespace("ns");
    let vms = server.watch(&format!("{KV}/ns/virtualmachines?watch=true"));
    let mut template = import("f-root");
    template["metadata"]["annotations"] = json!({FAIL: "import"});
    create(&server, &format!("{KV}/ns/virtualmachines"), &vm("f", "f-root", Some(template)));
    let seen = sequence(&vms, "f", "/status/printableStatus", &["DataVolumeError"]);
    assert!(seen.contains(&"Provisioning".to_string()), "{seen:?}");
    let vmi = server.get(&format!("{KV}/ns/virtualmachineinstances/f"));
    assert_eq!(vmi.status, 404, "no VMI for a VM whose DataVolume failed");
}

#[test]
fn a_missing_data_volume_is_error_pvc_not_found_until_it_appears() {
    let server = simulating();
    server.namespace("ns");
    let vms = server.watch(&format!("{KV}/ns/virtualmachines?watch=true"));
    create(&server, &format!("{KV}/ns/virtualmachines"), &vm("m", "later", None));
    let seen = sequence(&vms, "m", "/status/printableStatus", &["ErrorPvcNotFound"]);
    assert!(!seen.contains(&"Running".to_string()), "{seen:?}");
    let vmi = server.get_json(&format!("{KV}/ns/virtualmachineinstances/m"));
    assert_eq!(vmi["status"]["phase"], "Pending");
    let sync = condition(&vmi, "Synchronized").expect("Synchronized");
    assert_eq!(
        (sync["status"].as_str(), sync["reason"].as_str()),
        (Some("False"), Some("FailedPvcNotFound"))
    );
    assert_eq!(sync["message"], "PVC ns/later does not exist, waiting for it to appear");
    // The VM mirrors it; kubectl shows the status.
    let vm = server.get_json(&format!("{KV}/ns/virtualmachines/m"));
    let kubectl = Kubectl::in_namespace(&server, "ns");
    let table = kubectl.ok(&["get", "vm", "m"]);
    assert!(table.contains("ErrorPvcNotFound"), "{table}");
    assert_eq!(condition(&vm, "Synchronized").expect("mirrored")["reason"], "FailedPvcNotFound");

    // Its DataVolume appears: it imports (Provisioning, as the VMI waits), then the VM runs.
    create(&server, &format!("{CDI}/ns/datavolumes"), &import("later"));
    let seen = sequence(&vms, "m", "/status/printableStatus", &["Running"]);
    assert!(seen.contains(&"Provisioning".to_string()), "{seen:?}");
    let vmi = server.get_json(&format!("{KV}/ns/virtualmachineinstances/m"));
    assert!(condition(&vmi, "Synchronized").is_none(), "{vmi}");
}

#[test]
fn an_unbound_claim_is_waiting_for_volume_binding() {
    let server = simulating();
    server.namespace("ns");
    // A DataVolume waiting for its first consumer (its claim unbound), as CDI leaves one on a
    // WaitForFirstConsumer storage class.
    create(&server, &format!("{CDI}/ns/datavolumes"), &import("wffc"));
    let status = json!({"status": {"phase": "WaitForFirstConsumer", "progress": "N/A", "conditions": [
        {"type": "Bound", "status": "False", "reason": "Pending", "message": "PVC wffc Pending"}]}});
    let r = server.patch(
        &format!("{CDI}/ns/datavolumes/wffc/status"),
        "application/merge-patch+json",
        &status,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let vms = server.watch(&format!("{KV}/ns/virtualmachines?watch=true"));
    create(&server, &format!("{KV}/ns/virtualmachines"), &vm("w", "wffc", None));
    let seen = sequence(&vms, "w", "/status/printableStatus", &["WaitingForVolumeBinding"]);
    assert!(!seen.contains(&"Provisioning".to_string()), "{seen:?}");
}
