//! Node maintenance: virt-api's pod eviction admitter (KV v1.6 `pkg/virt-api/webhooks/
//! validating-webhook/admitters/pod-eviction-admitter.go`, webhook
//! `virt-launcher-eviction-interceptor.kubevirt.io` from `pkg/virt-operator/resource/generate/
//! components/webhooks.go`) in front of kube's eviction (K8S `pkg/registry/core/pod/storage/
//! eviction.go`), answered as a client sees it; under `--simulate`, `kubectl drain` (K8S
//! `staging/src/k8s.io/kubectl/pkg/drain/drain.go`) over the evacuation it triggers.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{condition, eventually, simulating, Kubectl, TestServer};

const NS: &str = "maint";
const PODS: &str = "/api/v1/namespaces/maint/pods";
const VMIS: &str = "/apis/kubevirt.io/v1/namespaces/maint/virtualmachineinstances";

fn eviction(name: &str) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}})
}

/// A VMI as virt-handler reports it running on `node`, with `strategy` (none: the default).
fn vmi(s: &TestServer, name: &str, strategy: Option<&str>, migratable: bool) {
    let mut spec = json!({"domain": {"devices": {}}});
    if let Some(strategy) = strategy {
        spec["evictionStrategy"] = json!(strategy);
    }
    let body = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
                      "metadata": {"name": name}, "spec": spec});
    let r = s.post(VMIS, &body);
    assert_eq!(r.status, 201, "{}", r.text());
    let status = if migratable { "True" } else { "False" };
    let patch = json!({"status": {"phase": "Running", "nodeName": "node01",
        "conditions": [{"type": "LiveMigratable", "status": status}]}});
    let r = s.patch(&format!("{VMIS}/{name}"), "application/merge-patch+json", &patch);
    assert_eq!(r.status, 200, "{}", r.text());
}

/// A running launcher pod of VMI `vmi` on `node` (labels and annotation from KV template.go).
fn launcher(s: &TestServer, name: &str, vmi: &str, node: &str) {
    let body = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"kubevirt.io": "virt-launcher"},
                     "annotations": {"kubevirt.io/domain": vmi}},
        "spec": {"nodeName": node, "containers": [{"name": "compute", "image": "virt-launcher"}]}});
    let r = s.post(PODS, &body);
    assert_eq!(r.status, 201, "{}", r.text());
    let status = json!({"status": {"phase": "Running"}});
    let r = s.patch(&format!("{PODS}/{name}/status"), "application/merge-patch+json", &status);
    assert_eq!(r.status, 200, "{}", r.text());
}

/// The webhook's refusal as kube-apiserver answers it (apiserver `admission/plugin/webhook/
/// errors/statuserror.go` ToStatusErr: the webhook's code, its message after the webhook's name).
fn denied(s: &TestServer, pod: &str, message: &str) {
    let r = s.post(&format!("{PODS}/{pod}/eviction"), &eviction(pod));
    assert_eq!(r.status, 429, "{}", r.text());
    let st = r.json();
    assert_eq!(
        st["message"],
        format!(
            "admission webhook \"virt-launcher-eviction-interceptor.kubevirt.io\" denied the \
             request: {message}"
        )
    );
    assert_eq!((st["kind"].as_str(), st["status"].as_str()), (Some("Status"), Some("Failure")));
    // virt-api's `denied` gives a code and a message, no reason.
    assert_eq!(st["code"], 429);
    assert!(st.get("reason").is_none(), "{st}");
}

/// Evicted: kube deletes the pod with the Eviction's options, gracefully; no kubelet runs its
/// node here, so it stays Terminating (K8S pkg/registry/core/pod/strategy.go CheckGracefulDelete).
fn evicted(s: &TestServer, pod: &str) {
    let r = s.post(&format!("{PODS}/{pod}/eviction"), &eviction(pod));
    assert_eq!(r.status, 201, "{}", r.text());
    let terminating = s.get_json(&format!("{PODS}/{pod}"));
    assert!(terminating["metadata"]["deletionTimestamp"].is_string(), "{terminating}");
}

#[test]
fn virt_api_answers_a_launchers_eviction_by_its_vmis_strategy() {
    // virt-api's side is served without --simulate.
    let s = TestServer::start();
    s.namespace(NS);

    // LiveMigrate: a dry run marks nothing, the first eviction marks the VMI for evacuation
    // from the pod's node and refuses, the next ones say the evacuation is under way.
    vmi(&s, "live", Some("LiveMigrate"), true);
    launcher(&s, "virt-launcher-live-abcde", "live", "node01");
    let r = s.post(
        &format!("{PODS}/virt-launcher-live-abcde/eviction?dryRun=All"),
        &eviction("virt-launcher-live-abcde"),
    );
    assert_eq!(r.status, 429, "{}", r.text());
    assert!(s.get_json(&format!("{VMIS}/live"))["status"].get("evacuationNodeName").is_none());
    denied(&s, "virt-launcher-live-abcde", "Eviction triggered evacuation of VMI \"maint/live\"");
    let marked = s.get_json(&format!("{VMIS}/live"));
    assert_eq!(marked["status"]["evacuationNodeName"], "node01");
    denied(
        &s,
        "virt-launcher-live-abcde",
        "Evacuation in progress: Eviction triggered evacuation of VMI \"maint/live\"",
    );
    assert_eq!(s.get(&format!("{PODS}/virt-launcher-live-abcde")).status, 200);

    // A pod on another node than the VMI's is a migration's target.
    vmi(&s, "moving", Some("LiveMigrate"), true);
    launcher(&s, "virt-launcher-moving-fghij", "moving", "node02");
    denied(&s, "virt-launcher-moving-fghij", "Eviction request for target Pod");

    // LiveMigrate but not migratable: refused, nothing marked.
    vmi(&s, "pinned", Some("LiveMigrate"), false);
    launcher(&s, "virt-launcher-pinned-klmno", "pinned", "node01");
    denied(
        &s,
        "virt-launcher-pinned-klmno",
        "VMI pinned is configured with an eviction strategy but is not live-migratable",
    );

    // None (the default) and LiveMigrateIfPossible when not migratable: kube evicts.
    vmi(&s, "plain", None, true);
    launcher(&s, "virt-launcher-plain-pqrst", "plain", "node01");
    evicted(&s, "virt-launcher-plain-pqrst");
    vmi(&s, "maybe", Some("LiveMigrateIfPossible"), false);
    launcher(&s, "virt-launcher-maybe-uvwxy", "maybe", "node01");
    evicted(&s, "virt-launcher-maybe-uvwxy");

    // A launcher whose VMI is gone: virt-api cannot read it and refuses.
    launcher(&s, "virt-launcher-gone-zzzzz", "gone", "node01");
    denied(
        &s,
        "virt-launcher-gone-zzzzz",
        "kubevirt failed getting the vmi: virtualmachineinstances.kubevirt.io \"gone\" not found",
    );
    // A finished launcher is not virt-api's business.
    let done = json!({"status": {"phase": "Succeeded"}});
    let path = format!("{PODS}/virt-launcher-gone-zzzzz/status");
    assert_eq!(s.patch(&path, "application/merge-patch+json", &done).status, 200);
    // Finished, it has no grace period to run (CheckGracefulDelete): gone at once.
    let r = s.post(
        &format!("{PODS}/virt-launcher-gone-zzzzz/eviction"),
        &eviction("virt-launcher-gone-zzzzz"),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(s.get(&format!("{PODS}/virt-launcher-gone-zzzzz")).status, 404);
}

const VMS: &str = "/apis/kubevirt.io/v1/namespaces/maint/virtualmachines";
const VMIMS: &str = "/apis/kubevirt.io/v1/namespaces/maint/virtualmachineinstancemigrations";

/// An Always VM with a masquerade interface (live-migratable), of eviction `strategy`.
fn vm(name: &str, strategy: Option<&str>) -> Value {
    let mut spec = json!({
        "domain": {"devices": {"interfaces": [{"name": "default", "masquerade": {}}]},
                   "resources": {"requests": {"memory": "128Mi"}}},
        "networks": [{"name": "default", "pod": {}}]
    });
    if let Some(strategy) = strategy {
        spec["evictionStrategy"] = json!(strategy);
    }
    json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": name},
           "spec": {"runStrategy": "Always", "template": {"spec": spec}}})
}

/// The VMI `name` once `done` holds of it.
fn vmi_when(s: &TestServer, name: &str, done: impl Fn(&Value) -> bool) -> Value {
    eventually(Duration::from_secs(60), || {
        let r = s.get(&format!("{VMIS}/{name}"));
        (r.status == 200).then(|| r.json()).filter(|v| done(v))
    })
}

fn running(v: &Value) -> bool {
    v["status"]["phase"] == "Running"
        && condition(v, "Ready").is_some_and(|c| c["status"] == "True")
}

/// The two simulated nodes: the one the VMI runs on first.
fn nodes(s: &TestServer, vmi: &Value) -> (String, String) {
    let node = vmi["status"]["nodeName"].as_str().unwrap().to_string();
    let list = s.get_json("/api/v1/nodes");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    let other = names.into_iter().find(|n| *n != node).unwrap().to_string();
    (node, other)
}

/// `kubectl drain` as an administrator runs it before maintenance (KV user-guide
/// node-eviction.md; launchers use emptyDir, nothing here is a DaemonSet's).
fn drain(k: &Kubectl, node: &str) -> String {
    let run =
        k.run(&["drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=120s"]);
    assert!(run.ok(), "{}", run.describe());
    format!("{}{}", run.stdout(), run.stderr())
}

#[test]
fn kubectl_drain_waits_for_a_live_migrate_vm_to_migrate_away() {
    let s = simulating(&["--simulate-speed", "0.1", "--simulate-nodes", "2"]);
    s.namespace(NS);
    let k = Kubectl::in_namespace(&s, NS);
    assert_eq!(s.post(VMS, &vm("live", Some("LiveMigrate"))).status, 201);
    let first = vmi_when(&s, "live", running);
    let (node, other) = nodes(&s, &first);
    let source = format!("{PODS}?fieldSelector=spec.nodeName%3D{node}");
    let launchers = s.get_json(&source);
    let pod = launchers["items"][0]["metadata"]["name"].as_str().unwrap().to_string();

    let out = drain(&k, &node);
    // kubectl's lines (drain.go, cmd/drain/drain.go): cordoned, the webhook's refusal retried
    // every 5 s while the VMI migrates, then the finished source pod evicted.
    for want in [
        format!("node/{node} cordoned"),
        format!("evicting pod {NS}/{pod}"),
        format!(
            "error when evicting pods/\"{pod}\" -n \"{NS}\" (will retry after 5s): admission \
             webhook \"virt-launcher-eviction-interceptor.kubevirt.io\" denied the request: \
             Eviction triggered evacuation of VMI \"{NS}/live\""
        ),
        format!("pod/{pod} evicted"),
        format!("node/{node} drained"),
    ] {
        assert!(out.contains(&want), "missing {want:?} in:\n{out}");
    }

    // The same VMI runs on the other node; the evacuation's migration did it.
    let moved = vmi_when(&s, "live", |v| running(v) && v["status"]["nodeName"] == other.as_str());
    assert_eq!(moved["metadata"]["uid"], first["metadata"]["uid"]);
    assert!(moved["status"].get("evacuationNodeName").is_none(), "{moved}");
    let vmims = s.get_json(VMIMS);
    let vmim = &vmims["items"][0];
    assert!(vmim["metadata"]["name"].as_str().unwrap().starts_with("kubevirt-evacuation-"));
    assert_eq!(vmim["metadata"]["annotations"]["kubevirt.io/evacuationMigration"], node.as_str());
    assert_eq!(vmim["spec"]["vmiName"], "live");
    assert_eq!(vmim["status"]["phase"], "Succeeded");
    // Its launcher now is the migration's target pod, on the other node.
    let target = moved["status"]["migrationState"]["targetPod"].as_str().unwrap();
    let target = s.get_json(&format!("{PODS}/{target}"));
    assert_eq!(target["spec"]["nodeName"], other.as_str());
    assert_eq!(
        target["metadata"]["labels"]["kubevirt.io/migrationJobUID"],
        vmim["metadata"]["uid"]
    );
    assert_eq!(s.get(&format!("{PODS}/{pod}")).status, 404);
}

#[test]
fn kubectl_drain_evicts_a_plain_vm_which_restarts_on_the_other_node() {
    let s = simulating(&["--simulate-speed", "0.1", "--simulate-nodes", "2"]);
    s.namespace(NS);
    let k = Kubectl::in_namespace(&s, NS);
    assert_eq!(s.post(VMS, &vm("plain", None)).status, 201);
    let first = vmi_when(&s, "plain", running);
    let (node, other) = nodes(&s, &first);

    let out = drain(&k, &node);
    assert!(out.contains(&format!("node/{node} drained")), "{out}");
    assert!(!out.contains("error when evicting"), "{out}");
    // The VMI failed with its pod gone (lifecycle.go); the Always VM started a new one, which
    // kube-scheduler placed on the node left.
    let next =
        vmi_when(&s, "plain", |v| v["metadata"]["uid"] != first["metadata"]["uid"] && running(v));
    assert_eq!(next["status"]["nodeName"], other.as_str());
    // The VM's status follows its VMI's (vm.go setPrintableStatus).
    eventually(Duration::from_secs(10), || {
        let vm = s.get_json(&format!("{VMS}/plain"));
        (vm["status"]["printableStatus"] == "Running").then_some(())
    });
    let left = s.get_json(&format!("{PODS}?fieldSelector=spec.nodeName%3D{node}"));
    assert_eq!(left["items"], json!([]));
}
