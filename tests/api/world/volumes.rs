//! kube-controller-manager's PersistentVolume binder inside the server (K8S release-1.32
//! pkg/controller/volume/persistentvolume/pv_controller.go): claims bound to the volumes that
//! satisfy them, the waits and hand-offs to provisioners in kube's words, volumes released
//! when their claims go. As `kubectl get pvc,pv` shows them.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{eventually, Kubectl, TestServer};

const NS: &str = "vol";

fn created(s: &TestServer, path: &str, body: Value) {
    let r = s.post(path, &body);
    assert_eq!(r.status, 201, "{path}: {}", r.text());
}

fn claim(s: &TestServer, name: &str, size: &str, class: Option<&str>) {
    let mut spec =
        json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}});
    if let Some(c) = class {
        spec["storageClassName"] = json!(c);
    }
    created(
        s,
        &format!("/api/v1/namespaces/{NS}/persistentvolumeclaims"),
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": spec}),
    );
}

fn volume(s: &TestServer, name: &str, size: &str) {
    created(
        s,
        "/api/v1/persistentvolumes",
        json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
               "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"],
                        "hostPath": {"path": format!("/data/{name}")}}}),
    );
}

fn class(s: &TestServer, name: &str, provisioner: &str, mode: &str) {
    created(
        s,
        "/apis/storage.k8s.io/v1/storageclasses",
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
               "provisioner": provisioner, "volumeBindingMode": mode}),
    );
}

/// The events about `name`, once one of `reason` exists.
fn event(s: &TestServer, name: &str, reason: &str) -> Value {
    eventually(Duration::from_secs(10), || {
        let path = format!("/api/v1/namespaces/{NS}/events?fieldSelector=involvedObject.name%3D{name},reason%3D{reason}");
        let list = s.get_json(&path);
        list["items"].as_array()?.first().cloned()
    })
}

#[test]
fn a_claim_is_bound_to_the_smallest_volume_that_satisfies_it() {
    let s = TestServer::start();
    s.namespace(NS);
    let k = Kubectl::in_namespace(&s, NS);
    volume(&s, "big", "10Gi");
    volume(&s, "small", "2Gi");
    volume(&s, "tiny", "500Mi");
    // kube's matcher skips a volume not yet Available (component-helpers storage/volume
    // pv_helpers.go FindMatchingVolume), so a claim created sooner may get any of them.
    for name in ["big", "small", "tiny"] {
        eventually(Duration::from_secs(10), || {
            let pv = s.get_json(&format!("/api/v1/persistentvolumes/{name}"));
            (pv["status"]["phase"] == "Available").then_some(())
        });
    }
    claim(&s, "data", "1Gi", None);
    let pv = eventually(Duration::from_secs(10), || {
        let pv = s.get_json("/api/v1/persistentvolumes/small");
        (pv["status"]["phase"] == "Bound").then_some(pv)
    });
    // The claim's writes come after the volume's.
    let c = eventually(Duration::from_secs(10), || {
        let c = s.get_json(&format!("/api/v1/namespaces/{NS}/persistentvolumeclaims/data"));
        (c["status"]["phase"] == "Bound").then_some(c)
    });
    // bind's writes: the volume's claimRef and annotation, the claim's volume and annotations,
    // the claim's status with the volume's capacity and modes.
    let r = &pv["spec"]["claimRef"];
    assert_eq!((&r["kind"], &r["apiVersion"]), (&json!("PersistentVolumeClaim"), &json!("v1")));
    assert_eq!(
        (&r["namespace"], &r["name"], &r["uid"]),
        (&json!(NS), &json!("data"), &c["metadata"]["uid"])
    );
    assert_eq!(pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"], "yes");
    assert_eq!(c["spec"]["volumeName"], "small");
    let ann = &c["metadata"]["annotations"];
    assert_eq!(
        (&ann["pv.kubernetes.io/bind-completed"], &ann["pv.kubernetes.io/bound-by-controller"]),
        (&json!("yes"), &json!("yes"))
    );
    let c = eventually(Duration::from_secs(10), || {
        let c = s.get_json(&format!("/api/v1/namespaces/{NS}/persistentvolumeclaims/data"));
        (c["status"]["phase"] == "Bound").then_some(c)
    });
    assert_eq!(
        c["status"],
        json!({"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "2Gi"}})
    );
    // The others are Available.
    let big = eventually(Duration::from_secs(10), || {
        let v = s.get_json("/api/v1/persistentvolumes/big");
        (v["status"]["phase"] == "Available").then_some(v)
    });
    assert!(big["spec"]["claimRef"].is_null());
    let rows = k.ok(&["get", "pvc", "--no-headers"]);
    let row: Vec<&str> = rows.split_whitespace().collect();
    assert_eq!(row[..5], ["data", "Bound", "small", "2Gi", "RWO"], "{rows}");
    let rows = k.ok(&["get", "pv", "small", "--no-headers"]);
    let row: Vec<&str> = rows.split_whitespace().collect();
    assert_eq!(row[..6], ["small", "2Gi", "RWO", "Retain", "Bound", "vol/data"], "{rows}");

    // The claim goes: its volume is Released (Retain: it stays so).
    k.ok(&["delete", "pvc", "data"]);
    eventually(Duration::from_secs(10), || {
        (s.get_json("/api/v1/persistentvolumes/small")["status"]["phase"] == "Released")
            .then_some(())
    });
}

#[test]
fn an_unbindable_claim_waits_as_kube_says_why() {
    let s = TestServer::start();
    s.namespace(NS);
    // No class and no volume.
    claim(&s, "lonely", "1Gi", Some(""));
    let e = event(&s, "lonely", "FailedBinding");
    assert_eq!(
        e["message"],
        "no persistent volumes available for this claim and no storage class is set"
    );
    assert_eq!(e["source"]["component"], "persistentvolume-controller");
    // A class of an external provisioner: handed to it.
    class(&s, "fast", "example.com/fast", "Immediate");
    claim(&s, "quick", "1Gi", Some("fast"));
    let e = event(&s, "quick", "ExternalProvisioning");
    assert_eq!(
        e["message"],
        "Waiting for a volume to be created either by the external provisioner 'example.com/fast' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered."
    );
    let c = s.get_json(&format!("/api/v1/namespaces/{NS}/persistentvolumeclaims/quick"));
    let ann = &c["metadata"]["annotations"];
    assert_eq!(ann["volume.kubernetes.io/storage-provisioner"], "example.com/fast");
    assert_eq!(ann["volume.beta.kubernetes.io/storage-provisioner"], "example.com/fast");
    // A class that waits for its first consumer.
    class(&s, "later", "example.com/fast", "WaitForFirstConsumer");
    claim(&s, "waiting", "1Gi", Some("later"));
    let e = event(&s, "waiting", "WaitForFirstConsumer");
    assert_eq!(e["message"], "waiting for first consumer to be created before binding");
    // A class that does not exist.
    claim(&s, "nowhere", "1Gi", Some("missing"));
    let e = event(&s, "nowhere", "ProvisioningFailed");
    assert_eq!(e["message"], "storageclass.storage.k8s.io \"missing\" not found");
    assert_eq!(e["type"], "Warning");
    for name in ["lonely", "quick", "waiting", "nowhere"] {
        let c = s.get_json(&format!("/api/v1/namespaces/{NS}/persistentvolumeclaims/{name}"));
        assert_eq!(c["status"]["phase"], "Pending", "{c}");
    }
}

#[test]
fn the_simulated_clusters_default_class_provisions_a_claims_volume() {
    let s = crate::common::simulating(&["--simulate-speed", "0.1"]);
    s.namespace(NS);
    let k = Kubectl::in_namespace(&s, NS);
    // The cluster's classes, `standard` the default (DefaultStorageClass fills the claim's).
    let classes = eventually(Duration::from_secs(10), || {
        let out = k.ok(&["get", "sc", "--no-headers"]);
        (out.lines().count() == 2).then_some(out)
    });
    let rows: Vec<Vec<&str>> = classes.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(
        rows[0][..4],
        ["hostpath-csi", "kubevirt.io.hostpath-provisioner", "Delete", "WaitForFirstConsumer"]
    );
    assert_eq!(
        rows[1][..5],
        ["standard", "(default)", "kubevirt.io.hostpath-provisioner", "Delete", "Immediate"]
    );
    claim(&s, "disk", "3Gi", None);
    let c = eventually(Duration::from_secs(15), || {
        let c = s.get_json(&format!("/api/v1/namespaces/{NS}/persistentvolumeclaims/disk"));
        (c["status"]["phase"] == "Bound").then_some(c)
    });
    assert_eq!(c["spec"]["storageClassName"], "standard");
    let pv_name = format!("pvc-{}", c["metadata"]["uid"].as_str().unwrap());
    assert_eq!(c["spec"]["volumeName"], json!(pv_name));
    let pv = s.get_json(&format!("/api/v1/persistentvolumes/{pv_name}"));
    assert_eq!(
        pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"],
        "kubevirt.io.hostpath-provisioner"
    );
    assert_eq!(pv["spec"]["capacity"]["storage"], "3Gi");
    assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Delete");
    // Provisioned for the claim: the binder does not mark it as its own choice.
    assert!(
        pv["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"].is_null(),
        "{pv}"
    );
    let e = event(&s, "disk", "ProvisioningSucceeded");
    assert_eq!(e["message"], format!("Successfully provisioned volume {pv_name}"));
    let out = k.ok(&["get", "pvc,pv", "--no-headers"]);
    let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(
        rows[0][..6],
        ["persistentvolumeclaim/disk", "Bound", &pv_name, "3Gi", "RWO", "standard"],
        "{out}"
    );
    let pv_row = [
        format!("persistentvolume/{pv_name}"),
        "3Gi".into(),
        "RWO".into(),
        "Delete".into(),
        "Bound".into(),
        format!("{NS}/disk"),
    ];
    assert_eq!(rows[1][..6], pv_row.each_ref().map(String::as_str), "{out}");

    // Deleted, the claim releases its volume, which the provisioner deletes (Delete policy).
    k.ok(&["delete", "pvc", "disk"]);
    eventually(Duration::from_secs(15), || {
        let r = s.get(&format!("/api/v1/persistentvolumes/{pv_name}"));
        (r.status == 404).then_some(())
    });
}

#[test]
fn a_vm_waits_for_its_claim_and_mounts_it_once_it_exists() {
    let s = crate::common::simulating(&["--simulate-speed", "0.1"]);
    s.namespace(NS);
    let vm = json!({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "db"},
        "spec": {"runStrategy": "Always", "template": {"spec": {
            "domain": {"devices": {"disks": [{"name": "data", "disk": {}}]},
                       "resources": {"requests": {"memory": "128Mi"}}},
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "db-data"}}]}}}});
    created(&s, &format!("/apis/kubevirt.io/v1/namespaces/{NS}/virtualmachines"), vm);
    // KubeVirt waits for the claim (datavolumes.go): no launcher pod meanwhile.
    let vmi_path = format!("/apis/kubevirt.io/v1/namespaces/{NS}/virtualmachineinstances/db");
    let vmi = eventually(Duration::from_secs(10), || {
        let r = s.get(&vmi_path);
        let vmi = (r.status == 200).then(|| r.json())?;
        let conds = vmi["status"]["conditions"].as_array()?.clone();
        conds.iter().any(|c| c["reason"] == "FailedPvcNotFound").then_some(vmi)
    });
    let sync = vmi["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Synchronized")
        .unwrap()
        .clone();
    assert_eq!(
        sync["message"],
        format!("PVC {NS}/db-data does not exist, waiting for it to appear")
    );
    eventually(Duration::from_secs(10), || {
        let vm = s.get_json(&format!("/apis/kubevirt.io/v1/namespaces/{NS}/virtualmachines/db"));
        (vm["status"]["printableStatus"] == "ErrorPvcNotFound").then_some(())
    });
    std::thread::sleep(Duration::from_millis(300));
    let pods = s.get_json(&format!("/api/v1/namespaces/{NS}/pods"));
    assert!(pods["items"].as_array().unwrap().is_empty(), "{pods}");

    // The claim comes (the default class provisions it): the VM runs, its launcher mounts it.
    claim(&s, "db-data", "1Gi", None);
    eventually(Duration::from_secs(20), || {
        let vm = s.get_json(&format!("/apis/kubevirt.io/v1/namespaces/{NS}/virtualmachines/db"));
        (vm["status"]["printableStatus"] == "Running").then_some(())
    });
    let pods = s.get_json(&format!("/api/v1/namespaces/{NS}/pods"));
    let volumes = pods["items"][0]["spec"]["volumes"].as_array().unwrap().clone();
    let data = volumes.iter().find(|v| v["name"] == "data").expect("the claim's volume");
    assert_eq!(data["persistentVolumeClaim"]["claimName"], "db-data");
}
