//! CDI's world around a DataVolume under `--simulate` (CDI pkg/controller/datavolume/
//! controller-base.go, import-controller.go; KUBE-WORLD.md §7): the DataVolume's claim,
//! provisioned and bound to a `pvc-<uid>` volume, the importer pod that fills it and goes, the
//! DataVolume's phases following both; as kubectl shows them.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{eventually, sequence, simulating, Kubectl, TestServer};

const CDI: &str = "/apis/cdi.kubevirt.io/v1beta1/namespaces";

fn get(s: &TestServer, path: &str) -> Option<Value> {
    let r = s.get(path);
    (r.status == 200).then(|| r.json())
}

fn import_yaml(name: &str, class: Option<&str>, annotations: &str) -> String {
    let class = class.map(|c| format!("\n    storageClassName: {c}")).unwrap_or_default();
    format!(
        "apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: {name}
  labels: {{team: disks}}
  annotations: {{{annotations}}}
spec:
  source:
    http: {{url: https://example.com/fedora.qcow2}}
  storage:
    resources: {{requests: {{storage: 1Gi}}}}{class}
"
    )
}

/// CDI's updateStatusPhase (import-controller.go, pvc-clone-controller.go) sets a DataVolume's
/// phase from its pod's phase as the reconcile finds it: one that first sees the pod Running, as
/// a loaded machine's late one may, skips the pod-Pending phase (`scheduled`). The phases are
/// `expected` with or without it; whether it was seen is returned.
fn assert_phases(phases: &[String], expected: &[&str], scheduled: &str) -> bool {
    let seen = phases.iter().any(|p| p == scheduled);
    let expected: Vec<&str> =
        expected.iter().copied().filter(|p| seen || *p != scheduled).collect();
    assert_eq!(phases, expected, "{phases:?}");
    seen
}

#[test]
fn an_import_binds_its_claim_runs_its_importer_and_succeeds() {
    let s = simulating(&["--simulate-speed", "0.5", "--simulate-nodes", "2"]);
    s.namespace("cdi");
    let k = Kubectl::in_namespace(&s, "cdi");
    let dvs = s.watch(&format!("{CDI}/cdi/datavolumes?watch=true"));
    let pods = s.watch("/api/v1/namespaces/cdi/pods?watch=true");
    let file = k.file("dv.yaml", &import_yaml("fedora", None, ""));
    k.ok(&["apply", "-f", file.to_str().unwrap()]);

    // The phases follow the claim, then the importer (CDI's updateStatus, updateStatusPhase).
    let phases = sequence(&dvs, "fedora", "/status/phase", &["Succeeded", "Failed"]);
    assert_phases(
        &phases,
        &["", "Pending", "PVCBound", "ImportScheduled", "ImportInProgress", "Succeeded"],
        "ImportScheduled",
    );
    let dv = get(&s, &format!("{CDI}/cdi/datavolumes/fedora")).unwrap();
    assert_eq!(dv["status"]["progress"], "100.0%");

    // The claim: the DataVolume's name, CDI's labels and annotations, the DataVolume its
    // controller, the storage API rendered (the default class, ReadWriteOnce, Filesystem).
    let claim = s.get_json("/api/v1/namespaces/cdi/persistentvolumeclaims/fedora");
    let labels = &claim["metadata"]["labels"];
    assert_eq!(labels["app"], "containerized-data-importer");
    assert_eq!(labels["app.kubernetes.io/managed-by"], "cdi-controller");
    assert_eq!(labels["team"], "disks", "the DataVolume's labels");
    let ann = &claim["metadata"]["annotations"];
    assert_eq!(ann["cdi.kubevirt.io/storage.import.endpoint"], "https://example.com/fedora.qcow2");
    assert_eq!(ann["cdi.kubevirt.io/storage.import.source"], "http");
    assert_eq!(ann["cdi.kubevirt.io/storage.contentType"], "kubevirt");
    assert_eq!(ann["cdi.kubevirt.io/storage.pod.restarts"], "0");
    assert_eq!(ann["cdi.kubevirt.io/createdForDataVolume"], dv["metadata"]["uid"]);
    assert_eq!(ann["cdi.kubevirt.io/storage.import.importPodName"], "importer-fedora");
    assert_eq!(ann["cdi.kubevirt.io/storage.pod.phase"], "Succeeded");
    assert_eq!(ann["cdi.kubevirt.io/storage.condition.running"], "false");
    assert_eq!(ann["cdi.kubevirt.io/storage.condition.running.reason"], "Completed");
    assert_eq!(ann["cdi.kubevirt.io/storage.condition.running.message"], "Import Complete");
    let owner = &claim["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["kind"].as_str(), owner["controller"].as_bool()),
        (Some("DataVolume"), Some(true))
    );
    assert_eq!(owner["uid"], dv["metadata"]["uid"]);
    assert_eq!(claim["spec"]["storageClassName"], "standard");
    assert_eq!(claim["spec"]["accessModes"], json!(["ReadWriteOnce"]));
    assert_eq!(claim["spec"]["volumeMode"], "Filesystem");
    let pv = format!("pvc-{}", claim["metadata"]["uid"].as_str().unwrap());
    assert_eq!(claim["spec"]["volumeName"], pv.as_str());

    // kubectl get pvc,pv: the claim Bound to its provisioned volume.
    let table = k.ok(&["get", "pvc,pv"]);
    let claim_line = table.lines().find(|l| l.starts_with("persistentvolumeclaim/fedora"));
    let claim_line = claim_line.unwrap_or_else(|| panic!("{table}"));
    assert!(claim_line.contains("Bound") && claim_line.contains(&pv), "{table}");
    let pv_line = table.lines().find(|l| l.starts_with(&format!("persistentvolume/{pv}")));
    assert!(pv_line.is_some_and(|l| l.contains("Bound") && l.contains("cdi/fedora")), "{table}");
    let table = k.ok(&["get", "dv"]);
    assert!(table.lines().any(|l| l.starts_with("fedora") && l.contains("Succeeded")), "{table}");

    // The importer pod came, ran on a node with the claim mounted, completed, and went.
    let mut importer = None;
    let mut deleted = false;
    while !deleted {
        let ev = pods.expect();
        if ev["object"]["metadata"]["name"] != "importer-fedora" {
            continue;
        }
        deleted = ev["type"] == "DELETED";
        importer = Some(ev["object"].clone());
    }
    let pod = importer.unwrap();
    assert_eq!(pod["status"]["phase"], "Succeeded");
    assert_eq!(pod["metadata"]["labels"]["cdi.kubevirt.io"], "importer");
    assert_eq!(
        pod["metadata"]["annotations"]["cdi.kubevirt.io/storage.createdByController"],
        "yes"
    );
    let owner = &pod["metadata"]["ownerReferences"][0];
    assert_eq!(
        (owner["kind"].as_str(), owner["name"].as_str()),
        (Some("PersistentVolumeClaim"), Some("fedora"))
    );
    assert_eq!(pod["spec"]["restartPolicy"], "OnFailure");
    assert_eq!(pod["spec"]["containers"][0]["name"], "importer");
    assert_eq!(pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"], "fedora");
    assert!(pod["spec"]["nodeName"].as_str().is_some_and(|n| n.starts_with("sim-node-")), "{pod}");
    let term = &pod["status"]["containerStatuses"][0]["state"]["terminated"];
    assert_eq!(
        (term["reason"].as_str(), term["message"].as_str()),
        (Some("Completed"), Some("Import Complete"))
    );
    let r = s.get("/api/v1/namespaces/cdi/pods/importer-fedora");
    assert_eq!(r.status, 404, "the completed importer is deleted");
}

#[test]
fn a_retained_importer_stays_after_completion() {
    let s = simulating(&["--simulate-speed", "0.2"]);
    s.namespace("cdi");
    let k = Kubectl::in_namespace(&s, "cdi");
    let retain = "cdi.kubevirt.io/storage.pod.retainAfterCompletion: \"true\"";
    let file = k.file("dv.yaml", &import_yaml("kept", None, retain));
    k.ok(&["apply", "-f", file.to_str().unwrap()]);
    eventually(Duration::from_secs(20), || {
        let dv = get(&s, &format!("{CDI}/cdi/datavolumes/kept"))?;
        (dv["status"]["phase"] == "Succeeded").then_some(())
    });
    std::thread::sleep(Duration::from_millis(300));
    let pod = s.get_json("/api/v1/namespaces/cdi/pods/importer-kept");
    assert_eq!(pod["status"]["phase"], "Succeeded");
    let table = k.ok(&["get", "pods"]);
    assert!(
        table.lines().any(|l| l.starts_with("importer-kept") && l.contains("Completed")),
        "{table}"
    );
}

const KV: &str = "/apis/kubevirt.io/v1/namespaces";

/// A VM whose root disk is a dataVolumeTemplate importing into a claim of `class`.
fn vm_yaml(name: &str, class: &str) -> String {
    format!(
        "apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: {name}
spec:
  runStrategy: Always
  dataVolumeTemplates:
    - metadata: {{name: {name}-root}}
      spec:
        source: {{http: {{url: https://example.com/fedora.qcow2}}}}
        storage:
          resources: {{requests: {{storage: 2Gi}}}}
          storageClassName: {class}
  template:
    spec:
      domain:
        devices: {{disks: [{{name: root, disk: {{bus: virtio}}}}]}}
        resources: {{requests: {{memory: 128Mi}}}}
      volumes:
        - {{name: root, dataVolume: {{name: {name}-root}}}}
"
    )
}

/// kube-scheduler's VolumeBinding and the external provisioner under WaitForFirstConsumer
/// (K8S pkg/scheduler/framework/plugins/volumebinding/binder.go; KUBE-WORLD.md §4): a
/// DataVolume on such a class waits, its claim Pending with no node; a VM using it starts, its
/// launcher pod placed on a node the claim then records, and the claim is provisioned there.
#[test]
fn a_wait_for_first_consumer_data_volume_binds_where_its_vm_is_scheduled() {
    let s = simulating(&["--simulate-speed", "0.5", "--simulate-nodes", "3"]);
    s.namespace("wffc");
    let k = Kubectl::in_namespace(&s, "wffc");
    let file = k.file("dv.yaml", &import_yaml("alone", Some("hostpath-csi"), ""));
    k.ok(&["apply", "-f", file.to_str().unwrap()]);
    eventually(Duration::from_secs(10), || {
        let dv = get(&s, &format!("{CDI}/wffc/datavolumes/alone"))?;
        (dv["status"]["phase"] == "WaitForFirstConsumer").then_some(())
    });
    // Nothing consumes it: it stays so, the claim Pending with no node and no volume.
    std::thread::sleep(Duration::from_millis(1500));
    let dv = s.get_json(&format!("{CDI}/wffc/datavolumes/alone"));
    assert_eq!(dv["status"]["phase"], "WaitForFirstConsumer");
    let claim = s.get_json("/api/v1/namespaces/wffc/persistentvolumeclaims/alone");
    assert_eq!(claim["status"]["phase"], "Pending");
    assert_eq!(claim["spec"]["storageClassName"], "hostpath-csi");
    assert!(claim["metadata"]["annotations"].get("volume.kubernetes.io/selected-node").is_none());
    let r = s.get("/api/v1/namespaces/wffc/pods/importer-alone");
    assert_eq!(r.status, 404, "no importer before the claim is bound");
    let table = k.ok(&["get", "dv", "alone"]);
    assert!(table.contains("WaitForFirstConsumer"), "{table}");

    // A VM with a dataVolumeTemplate on the class: its launcher pod is the first consumer.
    let file = k.file("vm.yaml", &vm_yaml("web", "hostpath-csi"));
    k.ok(&["apply", "-f", file.to_str().unwrap()]);
    let vmi = eventually(Duration::from_secs(30), || {
        let vmi = get(&s, &format!("{KV}/wffc/virtualmachineinstances/web"))?;
        (vmi["status"]["phase"] == "Running").then_some(vmi)
    });
    let dv = eventually(Duration::from_secs(30), || {
        let dv = get(&s, &format!("{CDI}/wffc/datavolumes/web-root"))?;
        (dv["status"]["phase"] == "Succeeded").then_some(dv)
    });
    assert_eq!(dv["status"]["claimName"], "web-root");
    let claim = s.get_json("/api/v1/namespaces/wffc/persistentvolumeclaims/web-root");
    let node = vmi["status"]["nodeName"].as_str().unwrap();
    assert_eq!(claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"], node);
    assert_eq!(claim["status"]["phase"], "Bound");
    assert!(crate::common::managers(&claim).contains(&"kube-scheduler"), "{claim}");
    let pods = s.get_json("/api/v1/namespaces/wffc/pods?labelSelector=kubevirt.io%3Dvirt-launcher");
    let launcher = &pods["items"][0];
    let mounted = launcher["spec"]["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .any(|v| v["name"] == "root" && v["persistentVolumeClaim"]["claimName"] == "web-root");
    assert!(mounted, "{launcher}");
    assert_eq!(launcher["spec"]["nodeName"], node);
    eventually(Duration::from_secs(10), || {
        let vm = get(&s, &format!("{KV}/wffc/virtualmachines/web"))?;
        (vm["status"]["printableStatus"] == "Running").then_some(())
    });
    // The lone DataVolume still waits.
    let dv = s.get_json(&format!("{CDI}/wffc/datavolumes/alone"));
    assert_eq!(dv["status"]["phase"], "WaitForFirstConsumer");
}

fn upload_yaml(name: &str, class: &str) -> String {
    dv_yaml(name, "source: {upload: {}}", &format!("\n    storageClassName: {class}"))
}

/// A DataVolume of `source` (a line of its spec), 1Gi of the default class unless `class`
/// adds a line.
fn dv_yaml(name: &str, source: &str, class: &str) -> String {
    format!(
        "apiVersion: cdi.kubevirt.io/v1beta1
kind: DataVolume
metadata:
  name: {name}
spec:
  {source}
  storage:
    resources: {{requests: {{storage: 1Gi}}}}{class}
"
    )
}

/// CDI's upload controller (CDI pkg/controller/upload-controller.go): an upload DataVolume's
/// claim gets the upload server pod and its Service `cdi-upload-<claim>`; the DataVolume is
/// UploadScheduled, then UploadReady once the server runs and is ready. On a
/// WaitForFirstConsumer class the upload server is the claim's first consumer.
#[test]
fn an_upload_runs_its_upload_server_behind_its_service() {
    let s = simulating(&["--simulate-speed", "0.5", "--simulate-nodes", "2"]);
    s.namespace("up");
    let k = Kubectl::in_namespace(&s, "up");
    let dvs = s.watch(&format!("{CDI}/up/datavolumes?watch=true"));
    let file = k.file("up.yaml", &upload_yaml("disk", "standard"));
    k.ok(&["apply", "-f", file.to_str().unwrap()]);
    // The upload server may run before the claim is bound (CDI then moves PVCBound on in the
    // same sync): the phases are in this order, some perhaps unseen.
    let phases = sequence(&dvs, "disk", "/status/phase", &["UploadReady", "Failed"]);
    let order = ["", "Pending", "PVCBound", "UploadScheduled", "UploadReady"];
    let at: Vec<usize> =
        phases.iter().map(|p| order.iter().position(|o| o == p).unwrap()).collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]) && at.last() == Some(&4), "{phases:?}");
    let claim = s.get_json("/api/v1/namespaces/up/persistentvolumeclaims/disk");
    let ann = &claim["metadata"]["annotations"];
    assert_eq!(ann["cdi.kubevirt.io/storage.upload.target"], "");
    assert_eq!(ann["cdi.kubevirt.io/storage.uploadPodName"], "cdi-upload-disk");
    assert_eq!(ann["cdi.kubevirt.io/storage.pod.ready"], "true");
    let pod = s.get_json("/api/v1/namespaces/up/pods/cdi-upload-disk");
    let labels = &pod["metadata"]["labels"];
    assert_eq!(labels["cdi.kubevirt.io"], "cdi-upload-server");
    assert_eq!(labels["service"], "cdi-upload-disk");
    assert_eq!(labels["cdi.kubevirt.io/uploadTarget"], claim["metadata"]["uid"]);
    assert_eq!(pod["metadata"]["ownerReferences"][0]["kind"], "PersistentVolumeClaim");
    assert_eq!(pod["spec"]["containers"][0]["name"], "cdi-upload-server");
    assert_eq!(pod["status"]["phase"], "Running");
    let svc = s.get_json("/api/v1/namespaces/up/services/cdi-upload-disk");
    assert_eq!(svc["spec"]["selector"], json!({"service": "cdi-upload-disk"}));
    assert_eq!(svc["spec"]["ports"][0]["port"], 443);
    assert_eq!(svc["spec"]["ports"][0]["targetPort"], 8443);
    assert_eq!(svc["metadata"]["ownerReferences"][0]["name"], "disk");
    let table = k.ok(&["get", "svc,pods"]);
    assert!(table.lines().any(|l| l.starts_with("service/cdi-upload-disk")), "{table}");
    assert!(
        table.lines().any(|l| l.starts_with("pod/cdi-upload-disk") && l.contains("Running")),
        "{table}"
    );
    let table = k.ok(&["get", "dv", "disk"]);
    assert!(table.contains("UploadReady"), "{table}");

    // On a WaitForFirstConsumer class, the claim binds where the upload server is placed.
    let file = k.file("late.yaml", &upload_yaml("late", "hostpath-csi"));
    k.ok(&["apply", "-f", file.to_str().unwrap()]);
    let phases = sequence(&dvs, "late", "/status/phase", &["UploadReady", "Failed"]);
    assert_eq!(phases.last().map(String::as_str), Some("UploadReady"), "{phases:?}");
    let claim = s.get_json("/api/v1/namespaces/up/persistentvolumeclaims/late");
    let pod = s.get_json("/api/v1/namespaces/up/pods/cdi-upload-late");
    assert_eq!(
        claim["metadata"]["annotations"]["volume.kubernetes.io/selected-node"],
        pod["spec"]["nodeName"]
    );
    assert_eq!(claim["status"]["phase"], "Bound");
}

fn clone_yaml(name: &str, source: &str) -> String {
    dv_yaml(name, source, "")
}

fn event_message(s: &TestServer, ns: &str, kind: &str, name: &str, reason: &str) -> String {
    eventually(Duration::from_secs(10), || {
        let path = format!(
            "/api/v1/namespaces/{ns}/events?fieldSelector=involvedObject.kind%3D{kind},\
             involvedObject.name%3D{name},reason%3D{reason}"
        );
        let list = s.get_json(&path);
        list["items"].as_array()?.first()?["message"].as_str().map(str::to_string)
    })
}

/// A host-assisted clone (CDI pkg/controller/datavolume/pvc-clone-controller.go with no
/// populator for the class, clone-controller.go, upload-controller.go): the target claim asks
/// for its source (`k8s.io/CloneRequest`), its upload server takes the stream, the source pod
/// `<claim uid>-source-pod` in the source's namespace sends it; both finish with "Clone
/// Complete", the claim is marked `k8s.io/CloneOf`, both pods go, and the DataVolume's phases
/// follow the upload server. A `sourceRef` to a DataSource clones the claim it names.
#[test]
fn a_clone_copies_its_source_through_a_source_pod_and_an_upload_server() {
    let s = simulating(&["--simulate-speed", "0.5", "--simulate-nodes", "2"]);
    s.namespace("golden");
    s.namespace("vms");
    let golden = Kubectl::in_namespace(&s, "golden");
    let k = Kubectl::in_namespace(&s, "vms");
    let source_dvs = s.watch(&format!("{CDI}/golden/datavolumes?watch=true"));
    let file = golden.file("fedora.yaml", &import_yaml("fedora", None, ""));
    golden.ok(&["apply", "-f", file.to_str().unwrap()]);
    sequence(&source_dvs, "fedora", "/status/phase", &["Succeeded", "Failed"]);

    let dvs = s.watch(&format!("{CDI}/vms/datavolumes?watch=true"));
    let sources = s.watch("/api/v1/namespaces/golden/pods?watch=true");
    let file = k
        .file("copy.yaml", &clone_yaml("copy", "source: {pvc: {namespace: golden, name: fedora}}"));
    k.ok(&["apply", "-f", file.to_str().unwrap()]);
    let phases = sequence(&dvs, "copy", "/status/phase", &["Succeeded", "Failed"]);
    let scheduled = assert_phases(
        &phases,
        &["", "Pending", "PVCBound", "CloneScheduled", "CloneInProgress", "Succeeded"],
        "CloneScheduled",
    );
    let dv = s.get_json(&format!("{CDI}/vms/datavolumes/copy"));
    assert_eq!(dv["status"]["progress"], "100.0%");
    assert_eq!(dv["metadata"]["annotations"]["cdi.kubevirt.io/cloneType"], "copy");
    let running =
        dv["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Running");
    assert_eq!(
        (&running.unwrap()["reason"], &running.unwrap()["message"]),
        (&json!("Completed"), &json!("Clone Complete"))
    );

    // The claim: the request, the fallback to a host-assisted copy, the pods it named.
    let claim = eventually(Duration::from_secs(10), || {
        let c = s.get_json("/api/v1/namespaces/vms/persistentvolumeclaims/copy");
        let held = c["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.contains(&json!("cdi.kubevirt.io/cloneSource")));
        (!held).then_some(c)
    });
    let uid = claim["metadata"]["uid"].as_str().unwrap().to_string();
    let ann = &claim["metadata"]["annotations"];
    assert_eq!(ann["k8s.io/CloneRequest"], "golden/fedora");
    assert_eq!(ann["k8s.io/CloneOf"], "true");
    assert_eq!(ann["cdi.kubevirt.io/cloneType"], "copy");
    assert_eq!(
        ann["cdi.kubevirt.io/cloneFallbackReason"],
        "In tree storage class does not support snapshot/clone"
    );
    assert_eq!(ann["cdi.kubevirt.io/storage.sourceClonePodName"], format!("{uid}-source-pod"));
    assert_eq!(ann["cdi.kubevirt.io/uploadClientName"], "golden/fedora-vms/copy");
    assert_eq!(ann["cdi.kubevirt.io/storage.uploadPodName"], "cdi-upload-copy");
    assert_eq!(ann["cdi.kubevirt.io/storage.pod.phase"], "Succeeded");
    assert_eq!(ann["cdi.kubevirt.io/storage.condition.running.message"], "Clone Complete");
    assert_eq!(ann["cdi.kubevirt.io/storage.condition.source.running"], "false");
    assert_eq!(ann["cdi.kubevirt.io/storage.condition.source.running.reason"], "Completed");
    assert_eq!(ann["cdi.kubevirt.io/storage.condition.source.running.message"], "Clone Complete");

    // The source pod ran in the source's namespace, reading the source claim, and went.
    let mut source_pod: Option<Value> = None;
    while source_pod.as_ref().is_none_or(|p| p["status"]["phase"] != "Running") {
        let ev = sources.expect();
        if ev["object"]["metadata"]["name"] == format!("{uid}-source-pod") {
            source_pod = Some(ev["object"].clone());
        }
    }
    let pod = source_pod.unwrap();
    let labels = &pod["metadata"]["labels"];
    assert_eq!(labels["cdi.kubevirt.io"], "cdi-clone-source");
    assert_eq!(labels["cdi.kubevirt.io/storage.clone.cloneUniqeId"], format!("{uid}-source-pod"));
    let source_claim = s.get_json("/api/v1/namespaces/golden/persistentvolumeclaims/fedora");
    assert_eq!(
        labels["cdi.kubevirt.io/hostAssistedSourcePodCloneSource"],
        source_claim["metadata"]["uid"]
    );
    assert_eq!(pod["metadata"]["annotations"]["cdi.kubevirt.io/storage.ownerRef"], "vms/copy");
    assert_eq!(pod["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"], "fedora");
    assert!(pod["spec"]["nodeName"].is_string(), "{pod}");
    eventually(Duration::from_secs(10), || {
        let gone = |path: &str| s.get(path).status == 404;
        (gone(&format!("/api/v1/namespaces/golden/pods/{uid}-source-pod"))
            && gone("/api/v1/namespaces/vms/pods/cdi-upload-copy"))
        .then_some(())
    });

    // The events, in CDI's words.
    let scheduled_event =
        ("DataVolume", "CloneScheduled", "Cloning from golden/fedora into vms/copy scheduled");
    for (kind, reason, message) in scheduled.then_some(scheduled_event).into_iter().chain([
        ("DataVolume", "CloneInProgress", "Cloning from golden/fedora into vms/copy in progress"),
        ("DataVolume", "CloneSucceeded", "Successfully cloned from golden/fedora into vms/copy"),
        ("PersistentVolumeClaim", "CloneSucceeded", "Clone Complete"),
    ]) {
        assert_eq!(event_message(&s, "vms", kind, "copy", reason), message, "{kind} {reason}");
    }
    let table = k.ok(&["get", "dv", "copy"]);
    assert!(table.contains("Succeeded") && table.contains("100.0%"), "{table}");

    // A DataSource's claim, cloned through a sourceRef.
    let ds = json!({"apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataSource",
        "metadata": {"name": "fedora-latest", "namespace": "golden"},
        "spec": {"source": {"pvc": {"name": "fedora", "namespace": "golden"}}}});
    let file = golden.file("ds.json", &ds.to_string());
    golden.ok(&["apply", "-f", file.to_str().unwrap()]);
    let file = k.file(
        "ref.yaml",
        &clone_yaml("ref", "sourceRef: {kind: DataSource, name: fedora-latest, namespace: golden}"),
    );
    k.ok(&["apply", "-f", file.to_str().unwrap()]);
    let phases = sequence(&dvs, "ref", "/status/phase", &["Succeeded", "Failed"]);
    assert_eq!(phases.last().map(String::as_str), Some("Succeeded"), "{phases:?}");
    let claim = s.get_json("/api/v1/namespaces/vms/persistentvolumeclaims/ref");
    assert_eq!(claim["metadata"]["annotations"]["k8s.io/CloneRequest"], "golden/fedora");
    assert_eq!(claim["metadata"]["annotations"]["k8s.io/CloneOf"], "true");
}
