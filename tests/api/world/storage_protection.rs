//! kube's storage object in-use protection: the StorageObjectInUseProtection admission's
//! finalizers on every new claim and volume (K8S release-1.32
//! plugin/pkg/admission/storage/storageobjectinuseprotection/admission.go), removed by the
//! pvc-protection controller once no running pod uses a deleting claim
//! (pkg/controller/volume/pvcprotection) and by the pv-protection controller once a deleting
//! volume is not Bound (pkg/controller/volume/pvprotection). As kubectl shows them.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{eventually, Kubectl, TestServer};

fn gone(s: &TestServer, path: &str) {
    eventually(Duration::from_secs(10), || (s.get(path).status == 404).then_some(()));
}

#[test]
fn a_claim_in_use_stays_terminating_until_its_pod_goes() {
    let s = TestServer::start();
    s.namespace("prot");
    let k = Kubectl::in_namespace(&s, "prot");
    let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                       "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}});
    let r = s.post("/api/v1/namespaces/prot/persistentvolumeclaims", &claim);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["metadata"]["finalizers"], json!(["kubernetes.io/pvc-protection"]));
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "user"},
                     "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}],
                              "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}});
    assert_eq!(s.post("/api/v1/namespaces/prot/pods", &pod).status, 201);

    k.ok(&["delete", "pvc", "data", "--wait=false"]);
    // The claim stays while its pod may run: kubectl shows it Terminating.
    std::thread::sleep(Duration::from_millis(500));
    let row = k.ok(&["get", "pvc", "data", "--no-headers"]);
    assert_eq!(row.split_whitespace().nth(1), Some("Terminating"), "{row}");
    let stored: Value = s.get("/api/v1/namespaces/prot/persistentvolumeclaims/data").json();
    assert_eq!(stored["metadata"]["finalizers"], json!(["kubernetes.io/pvc-protection"]));

    // The pod is bound to a node no kubelet runs: deleted gracefully it would stay
    // Terminating, as on a cluster whose node is gone (K8S pkg/registry/core/pod/strategy.go
    // CheckGracefulDelete), so it is force-deleted, as one would there.
    k.ok(&["delete", "pod", "user", "--force", "--grace-period=0", "--wait=true", "--timeout=20s"]);
    k.ok(&["wait", "--for=delete", "pvc/data", "--timeout=20s"]);
}

#[test]
fn a_bound_volume_stays_until_its_claim_goes() {
    let s = TestServer::start();
    s.namespace("protv");
    let k = Kubectl::in_namespace(&s, "protv");
    let pv = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "disk"},
                    "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                             "persistentVolumeReclaimPolicy": "Retain", "hostPath": {"path": "/data/disk"}}});
    let r = s.post("/api/v1/persistentvolumes", &pv);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["metadata"]["finalizers"], json!(["kubernetes.io/pv-protection"]));
    let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"},
                       "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                                "resources": {"requests": {"storage": "1Gi"}}}});
    assert_eq!(s.post("/api/v1/namespaces/protv/persistentvolumeclaims", &claim).status, 201);
    eventually(Duration::from_secs(10), || {
        let v: Value = s.get("/api/v1/persistentvolumes/disk").json();
        (v["status"]["phase"] == "Bound").then_some(())
    });

    k.ok(&["delete", "pv", "disk", "--wait=false"]);
    std::thread::sleep(Duration::from_millis(500));
    let row = k.ok(&["get", "pv", "disk", "--no-headers"]);
    assert!(row.contains("Terminating"), "{row}");
    // Its claim gone, the volume is Released, so no longer protected.
    k.ok(&["delete", "pvc", "c", "--wait=true", "--timeout=20s"]);
    gone(&s, "/api/v1/persistentvolumes/disk");
}
