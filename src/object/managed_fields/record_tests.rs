//! `record_update` on a realistic VirtualMachine: golden managedFields pinned byte for byte. Its
//! cost is measured by the benchmark (server CPU per create, `virt-bench compare`), not by a
//! test.

use serde_json::{json, Value};

use super::record_update;
use crate::resource::ResourceInfo;

fn vm_res() -> &'static ResourceInfo {
    crate::generated::RESOURCES
        .iter()
        .find(|r| r.kind == "VirtualMachine" && r.version == "v1")
        .expect("VirtualMachine v1 is served")
}

/// A ~2 KB VirtualMachine as a client creates it, after the server's metadata rules.
fn vm() -> Value {
    let user_data = format!(
        concat!(
            "#cloud-config\npassword: fedora\nchpasswd: {{ expire: False }}\n",
            "ssh_authorized_keys:\n  - ssh-ed25519 {} user@host\nruncmd:\n{}"
        ),
        "A".repeat(68),
        (0..12).map(|i| format!("  - echo step {i} >> /var/log/setup.log\n")).collect::<String>()
    );
    json!({
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {
            "name": "testvm",
            "namespace": "default",
            "uid": "6f1c7a0e-1b9b-4a7e-9d55-3c1f6a2b8e11",
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "generation": 1,
            "resourceVersion": "12",
            "labels": {"app": "testvm", "tier": "backend", "kubevirt.io/os": "fedora"},
            "annotations": {"description": "a test VM", "kubevirt.io/latest-observed-api-version": "v1"}
        },
        "spec": {
            "runStrategy": "Always",
            "template": {
                "metadata": {"labels": {"kubevirt.io/size": "small", "kubevirt.io/domain": "testvm"}},
                "spec": {
                    "domain": {
                        "cpu": {"cores": 2, "sockets": 1, "threads": 1},
                        "memory": {"guest": "2Gi"},
                        "resources": {"requests": {"memory": "2Gi", "cpu": "500m"}},
                        "machine": {"type": "q35"},
                        "devices": {
                            "disks": [
                                {"name": "containerdisk", "disk": {"bus": "virtio"}, "bootOrder": 1},
                                {"name": "cloudinitdisk", "disk": {"bus": "virtio"}, "bootOrder": 2}
                            ],
                            "interfaces": [{"name": "default", "masquerade": {}, "model": "virtio"}],
                            "rng": {}
                        }
                    },
                    "networks": [{"name": "default", "pod": {}}],
                    "terminationGracePeriodSeconds": 180,
                    "volumes": [
                        {"name": "containerdisk",
                         "containerDisk": {"image": "quay.io/containerdisks/fedora:40"}},
                        {"name": "cloudinitdisk", "cloudInitNoCloud": {"userData": user_data}}
                    ]
                }
            }
        }
    })
}

/// Every entry's time set to one that sorts before any real write, so that a later write's
/// entry comes after it whatever the clock says.
fn aged(mut obj: Value) -> Value {
    for e in obj["metadata"]["managedFields"].as_array_mut().into_iter().flatten() {
        e["time"] = json!("2020-01-01T00:00:00Z");
    }
    obj
}

/// The managedFields as written, times replaced, and the order of metadata's keys.
fn pinned(obj: &Value) -> String {
    let mut mf = obj["metadata"]["managedFields"].clone();
    for e in mf.as_array_mut().into_iter().flatten() {
        if e.get("time").is_some() {
            e["time"] = json!("T");
        }
    }
    let keys: Vec<&String> = obj["metadata"].as_object().unwrap().keys().collect();
    format!("{}\n{}", serde_json::to_string(&keys).unwrap(), serde_json::to_string(&mf).unwrap())
}

/// The four writes: (a) create, (b) the creator updates, removing a disk and its volume, (c) a
/// second manager updates without sending managedFields, (d) a status write.
fn writes() -> [(Option<Value>, Value, &'static str, &'static str); 4] {
    let mut created = vm();
    record_update(vm_res(), None, &mut created, "kubectl-create", "");
    let live_b = aged(created.clone());
    let mut b = live_b.clone();
    b["spec"]["runStrategy"] = json!("Halted");
    b["spec"]["template"]["spec"]["domain"]["cpu"]["cores"] = json!(4);
    b["spec"]["template"]["spec"]["domain"]["devices"]["disks"].as_array_mut().unwrap().remove(1);
    b["spec"]["template"]["spec"]["volumes"].as_array_mut().unwrap().remove(1);
    b["metadata"]["labels"]["tier"] = json!("frontend");
    let mut after_b = b.clone();
    record_update(vm_res(), Some(&live_b), &mut after_b, "kubectl-create", "");
    let live_c = aged(after_b);
    let mut c = live_c.clone();
    c["metadata"].as_object_mut().unwrap().remove("managedFields");
    c["metadata"]["annotations"]["kubevirt.io/latest-observed-api-version"] = json!("v2");
    c["metadata"]["finalizers"] = json!(["kubevirt.io/virtualMachineControllerFinalize"]);
    c["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"][0]["model"] = json!("e1000");
    c["spec"]["template"]["spec"]["domain"]["devices"]["autoattachGraphicsDevice"] = json!(false);
    let mut after_c = c.clone();
    record_update(vm_res(), Some(&live_c), &mut after_c, "virt-controller", "");
    let live_d = aged(after_c);
    let mut d = live_d.clone();
    d["status"] = json!({
        "printableStatus": "Running", "ready": true, "created": true,
        "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null}],
        "volumeSnapshotStatuses": [{"name": "containerdisk", "enabled": false}]
    });
    [
        (None, vm(), "kubectl-create", ""),
        (Some(live_b), b, "kubectl-create", ""),
        (Some(live_c), c, "virt-controller", ""),
        (Some(live_d), d, "virt-handler", "status"),
    ]
}

/// Whether serde_json keeps object keys sorted, as the server builds it, rather than in insertion
/// order: `cargo test --workspace` turns on its `preserve_order` through `codegen`, and key order
/// is part of what is pinned.
fn keys_sorted() -> bool {
    json!({"b": 0, "a": 0}).as_object().and_then(|m| m.keys().next()).is_some_and(|k| k == "a")
}

/// Captured from the implementation before the rewrite for speed (commit 629f504), keys sorted.
const GOLDEN: [&str; 4] = [
    concat!(
        r##"["annotations","creationTimestamp","generation","labels","managedFields","name","namespace","resourceVersion","uid"]"##,
        "\n",
        r##"[{"apiVersion":"kubevirt.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:description":{},"f:kubevirt.io/latest-observed-api-version":{}},"f:labels":{".":{},"f:app":{},"f:kubevirt.io/os":{},"f:tier":{}}},"f:spec":{".":{},"f:runStrategy":{},"f:template":{".":{},"f:metadata":{".":{},"f:labels":{".":{},"f:kubevirt.io/domain":{},"f:kubevirt.io/size":{}}},"f:spec":{".":{},"f:domain":{".":{},"f:cpu":{".":{},"f:cores":{},"f:sockets":{},"f:threads":{}},"f:devices":{".":{},"f:disks":{},"f:interfaces":{},"f:rng":{}},"f:machine":{".":{},"f:type":{}},"f:memory":{".":{},"f:guest":{}},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}},"f:networks":{".":{},"k:{\"name\":\"default\"}":{".":{},"f:name":{},"f:pod":{}}},"f:terminationGracePeriodSeconds":{},"f:volumes":{".":{},"k:{\"name\":\"cloudinitdisk\"}":{".":{},"f:cloudInitNoCloud":{".":{},"f:userData":{}},"f:name":{}},"k:{\"name\":\"containerdisk\"}":{".":{},"f:containerDisk":{".":{},"f:image":{}},"f:name":{}}}}}}},"manager":"kubectl-create","operation":"Update","time":"T"}]"##
    ),
    concat!(
        r##"["annotations","creationTimestamp","generation","labels","managedFields","name","namespace","resourceVersion","uid"]"##,
        "\n",
        r##"[{"apiVersion":"kubevirt.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:description":{},"f:kubevirt.io/latest-observed-api-version":{}},"f:labels":{".":{},"f:app":{},"f:kubevirt.io/os":{},"f:tier":{}}},"f:spec":{".":{},"f:runStrategy":{},"f:template":{".":{},"f:metadata":{".":{},"f:labels":{".":{},"f:kubevirt.io/domain":{},"f:kubevirt.io/size":{}}},"f:spec":{".":{},"f:domain":{".":{},"f:cpu":{".":{},"f:cores":{},"f:sockets":{},"f:threads":{}},"f:devices":{".":{},"f:disks":{},"f:interfaces":{},"f:rng":{}},"f:machine":{".":{},"f:type":{}},"f:memory":{".":{},"f:guest":{}},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}},"f:networks":{".":{},"k:{\"name\":\"default\"}":{".":{},"f:name":{},"f:pod":{}}},"f:terminationGracePeriodSeconds":{},"f:volumes":{".":{},"k:{\"name\":\"containerdisk\"}":{".":{},"f:containerDisk":{".":{},"f:image":{}},"f:name":{}}}}}}},"manager":"kubectl-create","operation":"Update","time":"T"}]"##
    ),
    concat!(
        r##"["annotations","creationTimestamp","finalizers","generation","labels","managedFields","name","namespace","resourceVersion","uid"]"##,
        "\n",
        r##"[{"apiVersion":"kubevirt.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:description":{}},"f:labels":{".":{},"f:app":{},"f:kubevirt.io/os":{},"f:tier":{}}},"f:spec":{".":{},"f:runStrategy":{},"f:template":{".":{},"f:metadata":{".":{},"f:labels":{".":{},"f:kubevirt.io/domain":{},"f:kubevirt.io/size":{}}},"f:spec":{".":{},"f:domain":{".":{},"f:cpu":{".":{},"f:cores":{},"f:sockets":{},"f:threads":{}},"f:devices":{".":{},"f:disks":{},"f:rng":{}},"f:machine":{".":{},"f:type":{}},"f:memory":{".":{},"f:guest":{}},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}},"f:networks":{".":{},"k:{\"name\":\"default\"}":{".":{},"f:name":{},"f:pod":{}}},"f:terminationGracePeriodSeconds":{},"f:volumes":{".":{},"k:{\"name\":\"containerdisk\"}":{".":{},"f:containerDisk":{".":{},"f:image":{}},"f:name":{}}}}}}},"manager":"kubectl-create","operation":"Update","time":"T"},{"apiVersion":"kubevirt.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{"f:kubevirt.io/latest-observed-api-version":{}},"f:finalizers":{".":{},"v:\"kubevirt.io/virtualMachineControllerFinalize\"":{}}},"f:spec":{"f:template":{"f:spec":{"f:domain":{"f:devices":{"f:autoattachGraphicsDevice":{},"f:interfaces":{}}}}}}},"manager":"virt-controller","operation":"Update","time":"T"}]"##
    ),
    concat!(
        r##"["annotations","creationTimestamp","finalizers","generation","labels","managedFields","name","namespace","resourceVersion","uid"]"##,
        "\n",
        r##"[{"apiVersion":"kubevirt.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:description":{}},"f:labels":{".":{},"f:app":{},"f:kubevirt.io/os":{},"f:tier":{}}},"f:spec":{".":{},"f:runStrategy":{},"f:template":{".":{},"f:metadata":{".":{},"f:labels":{".":{},"f:kubevirt.io/domain":{},"f:kubevirt.io/size":{}}},"f:spec":{".":{},"f:domain":{".":{},"f:cpu":{".":{},"f:cores":{},"f:sockets":{},"f:threads":{}},"f:devices":{".":{},"f:disks":{},"f:rng":{}},"f:machine":{".":{},"f:type":{}},"f:memory":{".":{},"f:guest":{}},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}},"f:networks":{".":{},"k:{\"name\":\"default\"}":{".":{},"f:name":{},"f:pod":{}}},"f:terminationGracePeriodSeconds":{},"f:volumes":{".":{},"k:{\"name\":\"containerdisk\"}":{".":{},"f:containerDisk":{".":{},"f:image":{}},"f:name":{}}}}}}},"manager":"kubectl-create","operation":"Update","time":"T"},{"apiVersion":"kubevirt.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{"f:kubevirt.io/latest-observed-api-version":{}},"f:finalizers":{".":{},"v:\"kubevirt.io/virtualMachineControllerFinalize\"":{}}},"f:spec":{"f:template":{"f:spec":{"f:domain":{"f:devices":{"f:autoattachGraphicsDevice":{},"f:interfaces":{}}}}}}},"manager":"virt-controller","operation":"Update","time":"T"},{"apiVersion":"kubevirt.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:status":{".":{},"f:conditions":{".":{},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:status":{},"f:type":{}}},"f:created":{},"f:printableStatus":{},"f:ready":{},"f:volumeSnapshotStatuses":{}}},"manager":"virt-handler","operation":"Update","subresource":"status","time":"T"}]"##
    ),
];

/// As [`GOLDEN`], with serde_json's `preserve_order`.
const GOLDEN_INSERTION_ORDER: [&str; 4] = [
    concat!(
        r##"["name","namespace","uid","creationTimestamp","generation","resourceVersion","labels","annotations","managedFields"]"##,
        "\n",
        r##"[{"manager":"kubectl-create","operation":"Update","apiVersion":"kubevirt.io/v1","time":"T","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:description":{},"f:kubevirt.io/latest-observed-api-version":{}},"f:labels":{".":{},"f:app":{},"f:kubevirt.io/os":{},"f:tier":{}}},"f:spec":{".":{},"f:runStrategy":{},"f:template":{".":{},"f:metadata":{".":{},"f:labels":{".":{},"f:kubevirt.io/domain":{},"f:kubevirt.io/size":{}}},"f:spec":{".":{},"f:domain":{".":{},"f:cpu":{".":{},"f:cores":{},"f:sockets":{},"f:threads":{}},"f:devices":{".":{},"f:disks":{},"f:interfaces":{},"f:rng":{}},"f:machine":{".":{},"f:type":{}},"f:memory":{".":{},"f:guest":{}},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}},"f:networks":{".":{},"k:{\"name\":\"default\"}":{".":{},"f:name":{},"f:pod":{}}},"f:terminationGracePeriodSeconds":{},"f:volumes":{".":{},"k:{\"name\":\"cloudinitdisk\"}":{".":{},"f:cloudInitNoCloud":{".":{},"f:userData":{}},"f:name":{}},"k:{\"name\":\"containerdisk\"}":{".":{},"f:containerDisk":{".":{},"f:image":{}},"f:name":{}}}}}}}}]"##
    ),
    concat!(
        r##"["name","namespace","uid","creationTimestamp","generation","resourceVersion","labels","annotations","managedFields"]"##,
        "\n",
        r##"[{"manager":"kubectl-create","operation":"Update","apiVersion":"kubevirt.io/v1","time":"T","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:description":{},"f:kubevirt.io/latest-observed-api-version":{}},"f:labels":{".":{},"f:app":{},"f:kubevirt.io/os":{},"f:tier":{}}},"f:spec":{".":{},"f:runStrategy":{},"f:template":{".":{},"f:metadata":{".":{},"f:labels":{".":{},"f:kubevirt.io/domain":{},"f:kubevirt.io/size":{}}},"f:spec":{".":{},"f:domain":{".":{},"f:cpu":{".":{},"f:cores":{},"f:sockets":{},"f:threads":{}},"f:devices":{".":{},"f:disks":{},"f:interfaces":{},"f:rng":{}},"f:machine":{".":{},"f:type":{}},"f:memory":{".":{},"f:guest":{}},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}},"f:networks":{".":{},"k:{\"name\":\"default\"}":{".":{},"f:name":{},"f:pod":{}}},"f:terminationGracePeriodSeconds":{},"f:volumes":{".":{},"k:{\"name\":\"containerdisk\"}":{".":{},"f:containerDisk":{".":{},"f:image":{}},"f:name":{}}}}}}}}]"##
    ),
    concat!(
        r##"["name","namespace","uid","creationTimestamp","generation","resourceVersion","labels","annotations","finalizers","managedFields"]"##,
        "\n",
        r##"[{"manager":"kubectl-create","operation":"Update","apiVersion":"kubevirt.io/v1","time":"T","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:description":{}},"f:labels":{".":{},"f:app":{},"f:kubevirt.io/os":{},"f:tier":{}}},"f:spec":{".":{},"f:runStrategy":{},"f:template":{".":{},"f:metadata":{".":{},"f:labels":{".":{},"f:kubevirt.io/domain":{},"f:kubevirt.io/size":{}}},"f:spec":{".":{},"f:domain":{".":{},"f:cpu":{".":{},"f:cores":{},"f:sockets":{},"f:threads":{}},"f:devices":{".":{},"f:disks":{},"f:rng":{}},"f:machine":{".":{},"f:type":{}},"f:memory":{".":{},"f:guest":{}},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}},"f:networks":{".":{},"k:{\"name\":\"default\"}":{".":{},"f:name":{},"f:pod":{}}},"f:terminationGracePeriodSeconds":{},"f:volumes":{".":{},"k:{\"name\":\"containerdisk\"}":{".":{},"f:containerDisk":{".":{},"f:image":{}},"f:name":{}}}}}}}},{"manager":"virt-controller","operation":"Update","apiVersion":"kubevirt.io/v1","time":"T","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{"f:kubevirt.io/latest-observed-api-version":{}},"f:finalizers":{".":{},"v:\"kubevirt.io/virtualMachineControllerFinalize\"":{}}},"f:spec":{"f:template":{"f:spec":{"f:domain":{"f:devices":{"f:autoattachGraphicsDevice":{},"f:interfaces":{}}}}}}}}]"##
    ),
    concat!(
        r##"["name","namespace","uid","creationTimestamp","generation","resourceVersion","labels","annotations","finalizers","managedFields"]"##,
        "\n",
        r##"[{"manager":"kubectl-create","operation":"Update","apiVersion":"kubevirt.io/v1","time":"T","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{".":{},"f:description":{}},"f:labels":{".":{},"f:app":{},"f:kubevirt.io/os":{},"f:tier":{}}},"f:spec":{".":{},"f:runStrategy":{},"f:template":{".":{},"f:metadata":{".":{},"f:labels":{".":{},"f:kubevirt.io/domain":{},"f:kubevirt.io/size":{}}},"f:spec":{".":{},"f:domain":{".":{},"f:cpu":{".":{},"f:cores":{},"f:sockets":{},"f:threads":{}},"f:devices":{".":{},"f:disks":{},"f:rng":{}},"f:machine":{".":{},"f:type":{}},"f:memory":{".":{},"f:guest":{}},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{},"f:memory":{}}}},"f:networks":{".":{},"k:{\"name\":\"default\"}":{".":{},"f:name":{},"f:pod":{}}},"f:terminationGracePeriodSeconds":{},"f:volumes":{".":{},"k:{\"name\":\"containerdisk\"}":{".":{},"f:containerDisk":{".":{},"f:image":{}},"f:name":{}}}}}}}},{"manager":"virt-controller","operation":"Update","apiVersion":"kubevirt.io/v1","time":"T","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:annotations":{"f:kubevirt.io/latest-observed-api-version":{}},"f:finalizers":{".":{},"v:\"kubevirt.io/virtualMachineControllerFinalize\"":{}}},"f:spec":{"f:template":{"f:spec":{"f:domain":{"f:devices":{"f:autoattachGraphicsDevice":{},"f:interfaces":{}}}}}}}},{"manager":"virt-handler","operation":"Update","apiVersion":"kubevirt.io/v1","time":"T","fieldsType":"FieldsV1","fieldsV1":{"f:status":{".":{},"f:conditions":{".":{},"k:{\"type\":\"Ready\"}":{".":{},"f:lastProbeTime":{},"f:status":{},"f:type":{}}},"f:created":{},"f:printableStatus":{},"f:ready":{},"f:volumeSnapshotStatuses":{}}},"subresource":"status"}]"##
    ),
];

#[test]
fn record_update_output_is_pinned() {
    let mut wrong = Vec::new();
    for (i, (live, new, manager, sub)) in writes().into_iter().enumerate() {
        let mut out = new;
        record_update(vm_res(), live.as_ref(), &mut out, manager, sub);
        let got = pinned(&out);
        let golden = if keys_sorted() { GOLDEN[i] } else { GOLDEN_INSERTION_ORDER[i] };
        if got != golden {
            wrong.push(format!("write ({}):\n{got}", ["a", "b", "c", "d"][i]));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// An entry a write leaves alone is answered in its stored form (here marked by a key kube
/// would not write), not encoded again; one the write takes fields from, and every entry a
/// client sends of its own, are encoded again.
#[test]
fn entries_a_write_leaves_alone_keep_their_stored_form() {
    let mut live = vm();
    record_update(vm_res(), None, &mut live, "kubectl-create", "");
    let mut live = aged(live);
    live["metadata"]["managedFields"][0]["mark"] = json!(true);
    let marked = |obj: &Value| obj["metadata"]["managedFields"][0].get("mark").is_some();

    let mut status = live.clone();
    status["status"] = json!({"ready": true});
    record_update(vm_res(), Some(&live), &mut status, "virt-handler", "status");
    assert!(marked(&status), "{}", status["metadata"]["managedFields"]);
    assert_eq!(status["metadata"]["managedFields"].as_array().map(Vec::len), Some(2));

    let mut taken = live.clone();
    taken["spec"]["runStrategy"] = json!("Halted");
    record_update(vm_res(), Some(&live), &mut taken, "virt-controller", "");
    assert!(!marked(&taken), "{}", taken["metadata"]["managedFields"]);

    let mut theirs = live.clone();
    theirs["metadata"]["managedFields"][0]["time"] = json!("2021-01-01T00:00:00Z");
    theirs["metadata"]["labels"]["extra"] = json!("x");
    record_update(vm_res(), Some(&live), &mut theirs, "kubectl-label", "");
    assert!(!marked(&theirs), "{}", theirs["metadata"]["managedFields"]);
}

/// A create's one-walk entry (`record_create`) is what the general path records, field for
/// field, over a VM, a Pod (list-maps keyed by one and by two fields, a set) and the edges: empty
/// maps and lists, a metadata of server fields only, repeated list-map keys, a value whose type
/// differs from its schema's.
#[test]
fn a_creates_entry_is_the_general_paths() {
    let kind = |k: &str| {
        crate::generated::RESOURCES
            .iter()
            .find(|r| r.kind == k && r.version == "v1")
            .unwrap_or_else(|| panic!("{k} v1 is served"))
    };
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "n", "uid": "u", "generateName": "p-",
                     "finalizers": ["a/b", "c/d"], "ownerReferences": [
                        {"apiVersion": "v1", "kind": "X", "name": "x", "uid": "1"}]},
        "spec": {"containers": [
            {"name": "c", "image": "i", "ports": [
                {"containerPort": 80, "protocol": "TCP"}, {"containerPort": 80, "protocol": "UDP"}],
             "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}],
             "resources": {}},
            {"name": "d", "image": "j", "args": []}],
            "tolerations": [{"key": "k", "operator": "Exists"}],
            "nodeSelector": {}, "volumes": []},
        "status": {"phase": "Pending", "conditions": "not a list"}
    });
    let cases = [
        (vm_res(), vm()),
        (kind("Pod"), pod),
        (
            vm_res(),
            json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
                          "metadata": {"name": "a", "uid": "u"}}),
        ),
        (
            vm_res(),
            json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
                          "metadata": {"name": "a", "labels": {}}, "spec": {}}),
        ),
    ];
    for (res, obj) in cases {
        let mut fast = obj.clone();
        record_update(res, None, &mut fast, "m", "");
        let mut general = obj.clone();
        super::record_update_general(res, None, &mut general, "m", "");
        assert_eq!(pinned(&fast), pinned(&general), "{obj}");
    }
}
