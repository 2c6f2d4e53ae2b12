//! kube's update rules for pods, claims, volumes and storage classes (K8S
//! pkg/apis/core/validation/validation.go `ValidatePodUpdate`,
//! `ValidatePersistentVolumeClaimUpdate`, `ValidatePersistentVolumeUpdate`;
//! pkg/apis/storage/validation/validation.go `ValidateStorageClassUpdate`), as clients meet
//! them through PUT, patches and apply, and the DefaultStorageClass admission plugin (K8S
//! plugin/pkg/admission/storage/storageclass/setdefault/admission.go).

use serde_json::{json, Value};

use crate::common::{assert_status, Kubectl, TestServer};

const NS: &str = "rules";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const POD: &str = "/api/v1/namespaces/rules/pods/p";
const CLAIM: &str = "/api/v1/namespaces/rules/persistentvolumeclaims";
const CLASSES: &str = "/apis/storage.k8s.io/v1/storageclasses";

/// ValidatePodUpdate's `updatablePodSpecFields`, joined by ",".
const POD_FROZEN: &str = "pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";
const CLAIM_FROZEN: &str = "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims";

const POD_YAML: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: rules}
spec:
  restartPolicy: Never
  tolerations: [{key: k, operator: Exists, effect: NoExecute, tolerationSeconds: 30}]
  containers:
  - name: c
    image: busybox
"#;

fn causes(status: &Value) -> Vec<(String, String)> {
    let list = status["details"]["causes"].as_array().cloned().unwrap_or_default();
    list.iter()
        .map(|c| (c["reason"].as_str().unwrap().into(), c["field"].as_str().unwrap_or("").into()))
        .collect()
}

fn forbidden(field: &str) -> (String, String) {
    ("FieldValueForbidden".into(), field.into())
}

fn invalid(field: &str) -> (String, String) {
    ("FieldValueInvalid".into(), field.into())
}

#[test]
fn a_pods_spec_changes_only_in_images_deadline_tolerations_and_grace() {
    let s = TestServer::start();
    s.namespace(NS);
    let k = Kubectl::new(&s);
    let file = k.file("pod.yaml", POD_YAML);
    k.ok(&["apply", "-f", file.to_str().unwrap()]);

    // The image may change (kubectl set image sends a strategic merge patch).
    k.ok(&["-n", NS, "set", "image", "pod/p", "c=busybox:1.36"]);
    // Tolerations may be added, and an existing one's tolerationSeconds changed.
    let add = json!([{"op": "add", "path": "/spec/tolerations/-",
                      "value": {"key": "x", "operator": "Exists"}},
                     {"op": "replace", "path": "/spec/tolerations/0/tolerationSeconds", "value": 10}]);
    assert_eq!(s.patch(POD, JSON_PATCH, &add).status, 200);
    // activeDeadlineSeconds may be set, then only lowered.
    let deadline = |v: Value| s.patch(POD, MERGE, &json!({"spec": {"activeDeadlineSeconds": v}}));
    assert_eq!(deadline(json!(60)).status, 200);
    assert_eq!(deadline(json!(30)).status, 200);
    let raised = assert_status(&deadline(json!(90)), 422, "Invalid");
    assert_eq!(
        raised["message"],
        "Pod \"p\" is invalid: spec.activeDeadlineSeconds: Invalid value: 90: must be less than or equal to previous value"
    );
    assert_eq!(causes(&raised), [invalid("spec.activeDeadlineSeconds")]);
    let pod = s.get_json(POD);
    assert_eq!(pod["spec"]["containers"][0]["image"], "busybox:1.36");
    assert_eq!(pod["spec"]["tolerations"][0]["tolerationSeconds"], 10);
    assert_eq!(pod["spec"]["activeDeadlineSeconds"], 30);

    // Anything else: Forbidden on `spec`, with a diff of the specs after the list.
    let policy = s.patch(POD, MERGE, &json!({"spec": {"restartPolicy": "Always"}}));
    let status = assert_status(&policy, 422, "Invalid");
    let message = status["message"].as_str().unwrap();
    let head = format!("Pod \"p\" is invalid: spec: Forbidden: {POD_FROZEN}\n  core.PodSpec{{\n");
    assert!(message.starts_with(&head), "{message}");
    assert!(
        message.contains("- \tRestartPolicy: \"Never\",\n+ \tRestartPolicy: \"Always\",\n"),
        "{message}"
    );
    assert!(message.ends_with("  }\n"), "{message:?}");
    assert_eq!(causes(&status), [forbidden("spec")]);
    assert_eq!(status["details"]["name"], "p");
    assert_eq!(status["details"]["kind"], "Pod");

    // kubectl apply of a changed container meets the same answer; its file's tolerations replace
    // the list (no merge key), which drops the one added above: kube refuses both.
    let ported =
        POD_YAML.replace("image: busybox", "image: busybox\n    ports: [{containerPort: 80}]");
    let file = k.file("ported.yaml", &ported);
    let err = k.fails(&["apply", "-f", file.to_str().unwrap()]);
    assert!(err.contains("The Pod \"p\" is invalid: \n"), "{err}");
    let tolerations = "* spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds\n";
    assert!(err.contains(tolerations), "{err}");
    assert!(err.contains(&format!("* spec: Forbidden: {POD_FROZEN}\n  core.PodSpec{{\n")), "{err}");
    assert!(
        err.contains(
            "- \t\t\tPorts: nil,\n+ \t\t\tPorts: {{ContainerPort: 80, Protocol: \"TCP\"}},\n"
        ),
        "{err}"
    );

    // A container more, through PUT: kube stops at the count.
    let mut more = s.get_json(POD);
    more["spec"]["containers"].as_array_mut().unwrap().push(json!({"name": "d", "image": "x"}));
    let status = assert_status(&s.put(POD, &more), 422, "Invalid");
    assert_eq!(
        status["message"],
        "Pod \"p\" is invalid: spec.containers: Forbidden: pod updates may not add or remove containers"
    );
    // A toleration taken away.
    let fewer = json!([{"op": "remove", "path": "/spec/tolerations/0"}]);
    let status = assert_status(&s.patch(POD, JSON_PATCH, &fewer), 422, "Invalid");
    assert_eq!(
        status["message"],
        "Pod \"p\" is invalid: spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"
    );
    // The status subresource leaves the spec alone and is not refused for it.
    let phase = json!({"status": {"phase": "Running"}});
    assert_eq!(s.patch(&format!("{POD}/status"), MERGE, &phase).status, 200);
}

#[test]
fn a_claims_spec_is_frozen_but_a_bound_claim_may_grow() {
    let s = TestServer::start();
    s.namespace(NS);
    let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                       "metadata": {"name": "c", "namespace": NS},
                       "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "",
                                "resources": {"requests": {"storage": "1Gi"}}}});
    assert_eq!(s.post(CLAIM, &claim).status, 201);
    let path = format!("{CLAIM}/c");
    let patch = |p: Value| s.patch(&path, MERGE, &p);
    let grow = json!({"spec": {"resources": {"requests": {"storage": "2Gi"}}}});

    // Pending: not even the request may change.
    let status = assert_status(&patch(grow.clone()), 422, "Invalid");
    let message = status["message"].as_str().unwrap();
    let head = format!(
        "PersistentVolumeClaim \"c\" is invalid: spec: Forbidden: {CLAIM_FROZEN}\n  core.PersistentVolumeClaimSpec{{\n"
    );
    assert!(message.starts_with(&head), "{message}");
    assert!(
        message.contains("- \t\t\tStorage: \"1Gi\",\n+ \t\t\tStorage: \"2Gi\",\n"),
        "{message}"
    );
    assert_eq!(causes(&status), [forbidden("spec")]);
    let modes = json!({"spec": {"accessModes": ["ReadWriteMany"]}});
    assert_status(&patch(modes), 422, "Invalid");

    // The volume is named once (the PV controller binding it), then fixed.
    assert_eq!(patch(json!({"spec": {"volumeName": "pv-1"}})).status, 200);
    assert_status(&patch(json!({"spec": {"volumeName": "pv-2"}})), 422, "Invalid");

    // Bound (the volume binder binds it once its volume exists): the request may grow, and
    // fall back no lower than what the volume has.
    let pv = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"},
                    "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                             "hostPath": {"path": "/data/pv-1"}}});
    assert_eq!(s.post("/api/v1/persistentvolumes", &pv).status, 201);
    crate::common::eventually(std::time::Duration::from_secs(10), || {
        let c = s.get_json(&path);
        (c["status"]["phase"] == "Bound" && c["status"]["capacity"]["storage"] == "1Gi")
            .then_some(())
    });
    assert_eq!(patch(grow).status, 200);
    let back = json!({"spec": {"resources": {"requests": {"storage": "1Gi"}}}});
    let status = assert_status(&patch(back), 422, "Invalid");
    assert_eq!(
        status["message"],
        "PersistentVolumeClaim \"c\" is invalid: spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"
    );
    assert_eq!(s.get_json(&path)["spec"]["resources"]["requests"]["storage"], "2Gi");

    // The volume mode: the spec's cause, then ValidateImmutableField's at `volumeMode`.
    let status = assert_status(&patch(json!({"spec": {"volumeMode": "Block"}})), 422, "Invalid");
    assert_eq!(causes(&status), [forbidden("spec"), invalid("volumeMode")]);
    let message = status["message"].as_str().unwrap();
    assert!(
        message.ends_with(", volumeMode: Invalid value: \"Block\": field is immutable]"),
        "{message}"
    );
}

#[test]
fn storage_classes_and_volumes_keep_what_they_were_made_with() {
    let s = TestServer::start();
    let k = Kubectl::new(&s);
    let class = r#"
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/a
parameters: {type: ssd}
"#;
    let file = k.file("sc.yaml", class);
    k.ok(&["apply", "-f", file.to_str().unwrap()]);
    let changed = class.replace("example.com/a", "example.com/b").replace("ssd", "hdd")
        + "reclaimPolicy: Retain\n";
    let file = k.file("sc2.yaml", &changed);
    let err = k.fails(&["apply", "-f", file.to_str().unwrap()]);
    for line in [
        "parameters: Forbidden: updates to parameters are forbidden.",
        "provisioner: Forbidden: updates to provisioner are forbidden.",
        "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
    ] {
        assert!(err.contains(line), "{err}");
    }
    let path = format!("{CLASSES}/fast");
    let mode = json!({"volumeBindingMode": "WaitForFirstConsumer"});
    let status = assert_status(&s.patch(&path, MERGE, &mode), 422, "Invalid");
    assert_eq!(
        status["message"],
        "StorageClass.storage.k8s.io \"fast\" is invalid: volumeBindingMode: Invalid value: \"WaitForFirstConsumer\": field is immutable"
    );
    assert_eq!(status["details"]["group"], "storage.k8s.io");
    assert_eq!(causes(&status), [invalid("volumeBindingMode")]);
    // What the rules leave free.
    let free = json!({"allowVolumeExpansion": true, "mountOptions": ["debug"]});
    assert_eq!(s.patch(&path, MERGE, &free).status, 200);

    let volume = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"},
                        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                                 "hostPath": {"path": "/data/a"}}});
    assert_eq!(s.post("/api/v1/persistentvolumes", &volume).status, 201);
    let pv = "/api/v1/persistentvolumes/pv-1";
    let moved = json!({"spec": {"hostPath": {"path": "/data/b"}}});
    let status = assert_status(&s.patch(pv, MERGE, &moved), 422, "Invalid");
    assert_eq!(
        status["message"],
        "PersistentVolume \"pv-1\" is invalid: spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n  core.PersistentVolumeSource{\n  \tHostPath: {\n- \t\tPath: \"/data/a\",\n+ \t\tPath: \"/data/b\",\n  \t},\n  }\n"
    );
    assert_eq!(causes(&status), [forbidden("spec.persistentvolumesource")]);
    // The PV controller's binding and a resize change no source.
    let bind = json!({"spec": {"capacity": {"storage": "2Gi"},
                               "claimRef": {"kind": "PersistentVolumeClaim", "namespace": NS, "name": "c"}}});
    assert_eq!(s.patch(pv, MERGE, &bind).status, 200);
    let status = assert_status(
        &s.patch(pv, MERGE, &json!({"spec": {"volumeMode": "Block"}})),
        422,
        "Invalid",
    );
    assert_eq!(
        status["message"],
        "PersistentVolume \"pv-1\" is invalid: volumeMode: Invalid value: \"Block\": field is immutable"
    );
}

fn new_claim(s: &TestServer, name: &str, class: Option<&str>) -> Value {
    let mut spec =
        json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}});
    if let Some(c) = class {
        spec["storageClassName"] = json!(c);
    }
    let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                       "metadata": {"name": name, "namespace": NS}, "spec": spec});
    let r = s.post(CLAIM, &claim);
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

fn new_class(s: &TestServer, name: &str, annotation: Option<&str>) {
    let mut class = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                           "metadata": {"name": name}, "provisioner": "example.com/p"});
    if let Some(a) = annotation {
        class["metadata"]["annotations"] = json!({a: "true"});
    }
    assert_eq!(s.post(CLASSES, &class).status, 201);
}

#[test]
fn a_new_claim_without_a_class_gets_the_newest_default() {
    let s = TestServer::start();
    s.namespace(NS);
    new_class(&s, "plain", None);
    let none = new_claim(&s, "none", None);
    assert!(none["spec"].get("storageClassName").is_none(), "no default class: {none}");

    new_class(&s, "standard", Some("storageclass.kubernetes.io/is-default-class"));
    assert_eq!(new_claim(&s, "one", None)["spec"]["storageClassName"], "standard");
    // creationTimestamp has seconds: the newer default must be a second younger.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    new_class(&s, "beta", Some("storageclass.beta.kubernetes.io/is-default-class"));
    assert_eq!(new_claim(&s, "two", None)["spec"]["storageClassName"], "beta");
    // A class given, even "", is the claim's own choice.
    assert_eq!(new_claim(&s, "empty", Some(""))["spec"]["storageClassName"], "");
    assert_eq!(new_claim(&s, "chosen", Some("plain"))["spec"]["storageClassName"], "plain");
    // An apply that creates is admitted as a create is; an update is not defaulted.
    let k = Kubectl::new(&s);
    let yaml = "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: applied, namespace: rules}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n";
    let file = k.file("claim.yaml", yaml);
    k.ok(&["apply", "--server-side", "-f", file.to_str().unwrap()]);
    assert_eq!(s.get_json(&format!("{CLAIM}/applied"))["spec"]["storageClassName"], "beta");
    let labelled =
        s.patch(&format!("{CLAIM}/none"), MERGE, &json!({"metadata": {"labels": {"a": "b"}}}));
    assert_eq!(labelled.status, 200);
    assert!(labelled.json()["spec"].get("storageClassName").is_none());
}
