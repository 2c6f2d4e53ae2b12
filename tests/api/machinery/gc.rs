//! Garbage collection by ownerReferences: background, foreground and orphan propagation, dangling
//! owners, and collection that resumes after a crash.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{eventually, ServerOptions, TestServer};

const VMS: &str = "/apis/kubevirt.io/v1/namespaces/gc/virtualmachines";
const VMIS: &str = "/apis/kubevirt.io/v1/namespaces/gc/virtualmachineinstances";

/// Creates a VM and a VMI it owns; returns the VM's uid.
fn owner_and_dependent(s: &TestServer, name: &str, blocks: bool) -> String {
    let vm = s.post(VMS, &json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": name}}));
    assert_eq!(vm.status, 201, "{}", vm.text());
    let uid = vm.json()["metadata"]["uid"].as_str().unwrap().to_string();
    let vmi = s.post(
        VMIS,
        &json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance", "metadata": {
            "name": name,
            "ownerReferences": [{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "name": name,
                                 "uid": uid, "controller": true, "blockOwnerDeletion": blocks}]}}),
    );
    assert_eq!(vmi.status, 201, "{}", vmi.text());
    uid
}

fn gone(s: &TestServer, path: &str) -> Option<()> {
    (s.get(path).status == 404).then_some(())
}

#[test]
fn background_deletes_dependents_after_the_owner() {
    let s = TestServer::start_with(ServerOptions { memory: true, ..Default::default() });
    s.namespace("gc");
    owner_and_dependent(&s, "bg", true);
    let r = s.delete(&format!("{VMS}/bg?propagationPolicy=Background"));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["kind"], "Status");
    eventually(Duration::from_secs(5), || gone(&s, &format!("{VMIS}/bg")));
}

#[test]
fn foreground_waits_for_dependents() {
    let s = TestServer::start_with(ServerOptions { memory: true, ..Default::default() });
    s.namespace("gc");
    owner_and_dependent(&s, "fg", true);
    // A finalizer of its own keeps the dependent around, so the owner must wait.
    let hold = s.patch(
        &format!("{VMIS}/fg"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": ["example.com/hold"]}}),
    );
    assert_eq!(hold.status, 200, "{}", hold.text());
    let r = s.delete(&format!("{VMS}/fg?propagationPolicy=Foreground"));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["metadata"]["finalizers"], json!(["foregroundDeletion"]));
    // The dependent is being deleted; the owner still waits for it.
    eventually(Duration::from_secs(5), || {
        let vmi = s.get(&format!("{VMIS}/fg")).json();
        vmi["metadata"]["deletionTimestamp"].is_string().then_some(())
    });
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(s.get(&format!("{VMS}/fg")).status, 200, "owner left before its blocking dependent");
    let release = s.patch(
        &format!("{VMIS}/fg"),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    );
    assert_eq!(release.status, 200, "{}", release.text());
    eventually(Duration::from_secs(5) + s.takeover(), || gone(&s, &format!("{VMIS}/fg")));
    eventually(Duration::from_secs(5), || gone(&s, &format!("{VMS}/fg")));
}

#[test]
fn orphan_keeps_dependents_without_the_reference() {
    let s = TestServer::start_with(ServerOptions { memory: true, ..Default::default() });
    s.namespace("gc");
    owner_and_dependent(&s, "or", true);
    let owned_refs = |vmi: &Value| {
        let entries = vmi["metadata"]["managedFields"].as_array().cloned().unwrap_or_default();
        entries.iter().any(|e| e["fieldsV1"]["f:metadata"].get("f:ownerReferences").is_some())
    };
    assert!(owned_refs(&s.get(&format!("{VMIS}/or")).json()));
    let r = s.delete(&format!("{VMS}/or?propagationPolicy=Orphan"));
    assert_eq!(r.status, 200);
    eventually(Duration::from_secs(5), || gone(&s, &format!("{VMS}/or")));
    let vmi = s.get(&format!("{VMIS}/or"));
    assert_eq!(vmi.status, 200);
    assert!(vmi.json()["metadata"].get("ownerReferences").is_none(), "{}", vmi.text());
    // Whoever set the reference no longer owns it: the collector's write is an update too.
    assert!(!owned_refs(&vmi.json()), "{}", vmi.text());
}

#[test]
fn dependents_of_missing_owners_are_collected_and_dangling_refs_dropped() {
    let s = TestServer::start_with(ServerOptions { memory: true, ..Default::default() });
    s.namespace("gc");
    let vm = s.post(VMS, &json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "alive"}}));
    let alive = vm.json()["metadata"]["uid"].as_str().unwrap().to_string();
    let orphaned = |name: &str, refs: Value| {
        let r = s.post(
            VMIS,
            &json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
            "metadata": {"name": name, "ownerReferences": refs}}),
        );
        assert_eq!(r.status, 201, "{}", r.text());
    };
    let dead = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "name": "x", "uid": "00000000-0000-0000-0000-000000000001"});
    orphaned("lonely", json!([dead]));
    orphaned(
        "shared",
        json!([dead, {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "name": "alive", "uid": alive}]),
    );
    // An owner is found where its reference points: the right uid under another name is gone.
    orphaned(
        "misnamed",
        json!([{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "name": "other", "uid": alive}]),
    );
    eventually(Duration::from_secs(5), || gone(&s, &format!("{VMIS}/lonely")));
    eventually(Duration::from_secs(5), || gone(&s, &format!("{VMIS}/misnamed")));
    eventually(Duration::from_secs(5), || {
        let refs = s.get(&format!("{VMIS}/shared")).json()["metadata"]["ownerReferences"].clone();
        (refs.as_array().map(Vec::len) == Some(1) && refs[0]["uid"] == alive.as_str()).then_some(())
    });
}

/// The collector's state is the objects themselves: a server killed while an owner waits for
/// its dependents finishes the job after a restart.
#[test]
fn collection_resumes_after_a_crash() {
    let off = vec!["--enable-garbage-collector".to_string(), "false".to_string()];
    let s = TestServer::start_with(ServerOptions { args: off.clone(), ..Default::default() });
    s.namespace("gc");
    owner_and_dependent(&s, "fg", true);
    owner_and_dependent(&s, "or", true);
    assert_eq!(s.delete(&format!("{VMS}/fg?propagationPolicy=Foreground")).status, 200);
    assert_eq!(s.delete(&format!("{VMS}/or?propagationPolicy=Orphan")).status, 200);
    // Nothing collects while the collector is off.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        s.get(&format!("{VMS}/fg")).json()["metadata"]["finalizers"],
        json!(["foregroundDeletion"])
    );
    assert_eq!(s.get(&format!("{VMS}/or")).json()["metadata"]["finalizers"], json!(["orphan"]));
    // `_dir` keeps the database file until the restarted server (declared later) is gone.
    let (db, _dir) = s.kill();
    let s = TestServer::start_with(ServerOptions { db: Some(db), ..Default::default() });
    eventually(Duration::from_secs(5) + s.takeover(), || gone(&s, &format!("{VMIS}/fg")));
    eventually(Duration::from_secs(5), || gone(&s, &format!("{VMS}/fg")));
    eventually(Duration::from_secs(5), || gone(&s, &format!("{VMS}/or")));
    let vmi = s.get(&format!("{VMIS}/or"));
    assert_eq!(vmi.status, 200);
    assert!(vmi.json()["metadata"].get("ownerReferences").is_none());
}
