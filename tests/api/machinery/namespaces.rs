//! kube's namespace lifecycle against the checked-in document, which serves core/v1 Namespaces
//! (`x-virt-resource.namespaces`): the system namespaces exist from the start, a client makes
//! the others before using them, nothing is created in one that is missing or terminating,
//! deleting one empties it (finalizers honoured, kube's conditions saying what holds it), and a
//! database of the previous release opens with a Namespace for each namespace holding objects.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

const NAMESPACES: &str = "/api/v1/namespaces";

fn ns_path(name: &str) -> String {
    format!("{NAMESPACES}/{name}")
}

fn vms(ns: &str) -> String {
    format!("/apis/kubevirt.io/v1/namespaces/{ns}/virtualmachines")
}

fn cms(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/configmaps")
}

fn vm(name: &str) -> Value {
    json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": name},
           "spec": {}})
}

fn cm(name: &str, finalizers: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "finalizers": finalizers}, "data": {"k": "v"}})
}

/// `kubectl get ns` as (name, status) rows.
fn kubectl_namespaces(kubectl: &Kubectl) -> Vec<(String, String)> {
    let listed = kubectl.ok(&["get", "ns", "--no-headers"]);
    listed
        .lines()
        .map(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            (cells[0].to_string(), cells[1].to_string())
        })
        .collect()
}

fn active(names: &[&str]) -> Vec<(String, String)> {
    names.iter().map(|n| (n.to_string(), "Active".to_string())).collect()
}

fn condition<'a>(ns: &'a Value, type_: &str) -> Option<&'a Value> {
    ns["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == type_)
}

#[test]
fn namespaces_are_made_before_use_and_checked() {
    let server = TestServer::start();
    let kubectl = Kubectl::new(&server);
    // The system namespaces exist from the start.
    let system = ["default", "kube-node-lease", "kube-public", "kube-system"];
    assert_eq!(kubectl_namespaces(&kubectl), active(&system));
    // kubectl's typed client sends a Namespace as protobuf (k8s\0 + runtime.Unknown).
    let run = kubectl.run(&["create", "namespace", "pools", "-v=8"]);
    assert!(run.ok(), "{}", run.describe());
    assert_eq!(run.stdout().trim(), "namespace/pools created");
    assert!(
        run.stderr().contains("application/vnd.kubernetes.protobuf"),
        "kubectl sent protobuf: {}",
        run.describe()
    );
    let mut all = system.to_vec();
    all.push("pools");
    assert_eq!(kubectl_namespaces(&kubectl), active(&all));
    // kube's namespace strategy: the `kubernetes` finalizer, phase Active, the name label.
    let pools = server.get_json(&ns_path("pools"));
    assert_eq!(pools["spec"]["finalizers"], json!(["kubernetes"]), "{pools}");
    assert_eq!(pools["status"]["phase"], "Active", "{pools}");
    assert_eq!(pools["metadata"]["labels"]["kubernetes.io/metadata.name"], "pools", "{pools}");
    assert!(pools["metadata"].get("namespace").is_none(), "cluster-scoped: {pools}");
    let made = server.post(&cms("pools"), &cm("c", json!([])));
    assert_eq!(made.status, 201, "{}", made.text());

    // A namespace that does not exist holds nothing: 404 for the namespace, with its details,
    // whatever the kind and however it is created.
    for (path, body) in [(cms("nowhere"), cm("c", json!([]))), (vms("nowhere"), vm("v"))] {
        let missing = server.post(&path, &body);
        let st = assert_status(&missing, 404, "NotFound");
        assert_eq!(st["message"], "namespaces \"nowhere\" not found");
        assert_eq!(st["details"], json!({"name": "nowhere", "kind": "namespaces"}));
    }
    let applied = server.patch(
        &format!("{}/v?fieldManager=test", vms("nowhere")),
        "application/apply-patch+yaml",
        &vm("v"),
    );
    assert_status(&applied, 404, "NotFound");
    let err = kubectl.fails(&["create", "configmap", "c", "-n", "nowhere"]);
    assert_eq!(err.trim(), "error: failed to create configmap: namespaces \"nowhere\" not found");

    // A terminating namespace takes no new content: 403 with kube's NamespaceTerminating cause.
    kubectl.ok(&["create", "namespace", "closing"]);
    let closing = server.patch(
        &format!("{}/status", ns_path("closing")),
        "application/merge-patch+json",
        &json!({"status": {"phase": "Terminating"}}),
    );
    assert_eq!(closing.status, 200, "{}", closing.text());
    let refused = server.post(&cms("closing"), &cm("c", json!([])));
    let st = assert_status(&refused, 403, "Forbidden");
    assert_eq!(
        st["message"],
        "configmaps \"c\" is forbidden: unable to create new content in namespace closing because it is being terminated"
    );
    assert_eq!(
        st["details"]["causes"],
        json!([{"reason": "NamespaceTerminating", "message": "namespace closing is being terminated",
                "field": "metadata.namespace"}])
    );

    // The namespaces kube keeps cannot be deleted.
    for name in ["default", "kube-system", "kube-public"] {
        let st = assert_status(&server.delete(&ns_path(name)), 403, "Forbidden");
        assert_eq!(
            st["message"],
            format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
        );
        assert_eq!(server.get_json(&ns_path(name))["status"]["phase"], "Active");
    }
}

/// The verbs on a Namespace itself: its spec is the server's, its delete terminates it.
#[test]
fn the_namespace_kind_answers_its_verbs() {
    let s = TestServer::start();
    let made = s.post(
        NAMESPACES,
        &json!({"apiVersion": "v1", "kind": "Namespace",
                                          "metadata": {"name": "verbs"}}),
    );
    assert_eq!(made.status, 201, "{}", made.text());
    let made = made.json();
    assert_eq!(made["apiVersion"], "v1");
    assert_eq!(made["kind"], "Namespace");
    let again = s.post(
        NAMESPACES,
        &json!({"apiVersion": "v1", "kind": "Namespace",
                                           "metadata": {"name": "verbs"}}),
    );
    let st = assert_status(&again, 409, "AlreadyExists");
    assert_eq!(st["message"], "namespaces \"verbs\" already exists");
    assert_eq!(s.get_json(&ns_path("verbs")), made);
    let list = s.get_json(NAMESPACES);
    assert_eq!(list["kind"], "NamespaceList");
    assert!(names(&list).contains(&"verbs".to_string()), "{list}");
    // A label through PUT; a client's spec.finalizers do not replace the server's.
    let mut labelled = made.clone();
    labelled["metadata"]["labels"]["team"] = json!("a");
    labelled["spec"]["finalizers"] = json!([]);
    let r = s.put(&ns_path("verbs"), &labelled);
    assert_eq!(r.status, 200, "{}", r.text());
    let updated = r.json();
    assert_eq!(updated["metadata"]["labels"]["team"], "a");
    assert_eq!(updated["spec"]["finalizers"], json!(["kubernetes"]), "{updated}");
    assert!(rv(&updated) > rv(&made));
    let r = s.patch(
        &ns_path("verbs"),
        "application/merge-patch+json",
        &json!({"metadata": {"annotations": {"a": "b"}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let st = assert_status(&s.put(&ns_path("verbs"), &made), 409, "Conflict");
    assert_eq!(
        st["message"],
        "Operation cannot be fulfilled on namespaces \"verbs\": the object has been modified; please apply your changes to the latest version and try again"
    );
    let selected = s.get_json(&format!("{NAMESPACES}?labelSelector=team%3Da"));
    assert_eq!(names(&selected), ["verbs"]);
    let selected = s.get_json(&format!("{NAMESPACES}?fieldSelector=status.phase%3DActive"));
    assert!(names(&selected).contains(&"verbs".to_string()), "{selected}");
    // A built-in kind's body may leave out apiVersion and kind (the Python client's typed models
    // do): they default to the URL's, as kube decodes built-in kinds. A custom resource's may not.
    let bare = s.post(NAMESPACES, &json!({"metadata": {"name": "bare"}}));
    assert_eq!(bare.status, 201, "{}", bare.text());
    assert_eq!(
        (bare.json()["apiVersion"].as_str(), bare.json()["kind"].as_str()),
        (Some("v1"), Some("Namespace"))
    );
    let mut again = bare.json();
    again.as_object_mut().unwrap().retain(|k, _| k != "apiVersion" && k != "kind");
    again["metadata"]["labels"]["bare"] = json!("yes");
    let r = s.put(&ns_path("bare"), &again);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["kind"], "Namespace");
    let st = assert_status(
        &s.post(&vms("bare"), &json!({"metadata": {"name": "v"}})),
        400,
        "BadRequest",
    );
    assert_eq!(st["message"], "Object 'Kind' is missing in '{\"metadata\":{\"name\":\"v\"}}'");
    // Namespaces have no deletecollection.
    assert_eq!(s.delete(NAMESPACES).status, 405);
    // Delete answers the terminating Namespace; the controller removes it once it is empty.
    let r = s.delete(&ns_path("verbs"));
    assert_eq!(r.status, 200, "{}", r.text());
    let deleting = r.json();
    assert_eq!(deleting["kind"], "Namespace", "{deleting}");
    assert_eq!(deleting["status"]["phase"], "Terminating", "{deleting}");
    assert!(deleting["metadata"]["deletionTimestamp"].is_string(), "{deleting}");
    eventually(Duration::from_secs(10), || (s.get(&ns_path("verbs")).status == 404).then_some(()));
    let st = assert_status(&s.get(&ns_path("verbs")), 404, "NotFound");
    assert_eq!(st["message"], "namespaces \"verbs\" not found");
}

/// Deleting a namespace: it terminates, its content is deleted (finalizers honoured), its
/// conditions say what holds it, it goes once nothing does, and a watch sees every step.
#[test]
fn deleting_a_namespace_empties_it_and_waits_for_finalizers() {
    let s = TestServer::start();
    s.namespace("doomed");
    let watch = s.watch(&format!("{NAMESPACES}?watch=true&fieldSelector=metadata.name%3Ddoomed"));
    let added = watch.expect_event("ADDED", "doomed");
    assert_eq!(added["object"]["status"]["phase"], "Active");
    let content = s.watch(&format!("{}?watch=true", cms("doomed")));
    assert_eq!(s.post(&vms("doomed"), &vm("loose")).status, 201);
    for (name, finalizers) in [("loose", json!([])), ("held", json!(["example.com/hold"]))] {
        let made = s.post(&cms("doomed"), &cm(name, finalizers));
        assert_eq!(made.status, 201, "{}", made.text());
        content.expect_event("ADDED", name);
    }

    let first = s.delete(&ns_path("doomed"));
    assert_eq!(first.status, 200, "{}", first.text());
    assert_eq!(first.json()["status"]["phase"], "Terminating", "{}", first.text());
    let terminating = watch.expect_event("MODIFIED", "doomed");
    assert_eq!(terminating["object"]["status"]["phase"], "Terminating");
    assert!(terminating["object"]["metadata"]["deletionTimestamp"].is_string());
    // The content goes, except what a finalizer holds, which is marked for deletion (in
    // whichever order the controller reaches them).
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let ev = content.expect();
        let name = ev["object"]["metadata"]["name"].as_str().unwrap_or_default().to_string();
        match (ev["type"].as_str(), name.as_str()) {
            (Some("DELETED"), "loose") => {}
            (Some("MODIFIED"), "held") => {
                assert!(ev["object"]["metadata"]["deletionTimestamp"].is_string(), "{ev}");
            }
            _ => panic!("unexpected event {ev}"),
        }
        seen.push(name);
    }
    seen.sort();
    assert_eq!(seen, ["held", "loose"]);
    eventually(Duration::from_secs(10), || {
        (s.get(&format!("{}/loose", vms("doomed"))).status == 404).then_some(())
    });
    // kube's conditions say what holds the namespace.
    let held_message = "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances";
    let with_conditions = loop {
        let ev = watch.expect_event("MODIFIED", "doomed");
        if condition(&ev["object"], "NamespaceFinalizersRemaining")
            .is_some_and(|c| c["message"] == held_message)
        {
            break ev["object"].clone();
        }
    };
    assert_eq!(with_conditions["status"]["phase"], "Terminating");
    let remaining = condition(&with_conditions, "NamespaceContentRemaining").expect("condition");
    assert_eq!(remaining["status"], "True", "{with_conditions}");
    assert_eq!(remaining["reason"], "SomeResourcesRemain");
    assert_eq!(
        remaining["message"],
        "Some resources are remaining: configmaps has 1 resource instances"
    );
    let failures = ["NamespaceDeletionDiscoveryFailure", "NamespaceDeletionContentFailure"];
    for type_ in failures {
        let c = condition(&with_conditions, type_).expect("condition");
        assert_eq!(c["status"], "False", "{type_}: {with_conditions}");
    }
    assert_eq!(with_conditions["spec"]["finalizers"], json!(["kubernetes"]));

    // While it terminates: a second delete answers 200 with the namespace as it is (kube's
    // namespace storage `Delete`, pkg/registry/core/namespace/storage/storage.go: `return
    // namespace, false, nil` while spec.finalizers remain), kubectl says it is deleted, the
    // namespace storage's own preconditions are worded its way, and nothing new goes in.
    // (Unchanged: the same resourceVersion as a read just before, unless the namespace
    // controller wrote in between, which a read just after shows.)
    let unchanged = (0..5).any(|_| {
        let before = s.get_json(&ns_path("doomed"));
        let again = s.delete(&ns_path("doomed"));
        assert_eq!(again.status, 200, "{}", again.text());
        let again = again.json();
        assert_eq!(again["kind"], "Namespace", "{again}");
        assert_eq!(again["status"]["phase"], "Terminating", "{again}");
        let after = s.get_json(&ns_path("doomed"));
        let rv = |o: &Value| o["metadata"]["resourceVersion"].clone();
        rv(&again) == rv(&before) && rv(&after) == rv(&before)
    });
    assert!(unchanged, "a repeated delete wrote the namespace");
    let kubectl = Kubectl::new(&s);
    let out = kubectl.ok(&["delete", "namespace", "doomed", "--wait=false"]);
    assert_eq!(out.trim(), "namespace \"doomed\" deleted");
    let uid = with_conditions["metadata"]["uid"].as_str().unwrap();
    let stale = s.delete_with(
        &ns_path("doomed"),
        &json!({"kind": "DeleteOptions", "apiVersion": "v1", "preconditions": {"uid": "not-it"}}),
    );
    let st = assert_status(&stale, 409, "Conflict");
    assert_eq!(
        st["message"],
        format!("Operation cannot be fulfilled on namespaces \"doomed\": Precondition failed: UID in precondition: not-it, UID in object meta: {uid}")
    );
    let late = s.post(&cms("doomed"), &cm("late", json!([])));
    assert_status(&late, 403, "Forbidden");

    // Releasing the finalizer lets the object go, then the namespace.
    let release = s.patch(
        &format!("{}/held", cms("doomed")),
        "application/merge-patch+json",
        &json!({"metadata": {"finalizers": null}}),
    );
    assert_eq!(release.status, 200, "{}", release.text());
    content.expect_event("DELETED", "held");
    let deleted = loop {
        let ev = watch.expect();
        assert_eq!(ev["object"]["metadata"]["name"], "doomed", "{ev}");
        if ev["type"] == "DELETED" {
            break ev;
        }
        assert_eq!(ev["type"], "MODIFIED", "{ev}");
        assert_eq!(ev["object"]["status"]["phase"], "Terminating", "{ev}");
    };
    assert!(rv(&deleted["object"]) > rv(&with_conditions));
    assert_status(&s.get(&ns_path("doomed")), 404, "NotFound");
    // Made again, it is a new namespace, empty.
    s.namespace("doomed");
    assert!(s.list_names(&cms("doomed")).is_empty());
    assert!(s.list_names(&vms("doomed")).is_empty());
}

/// `finalize` (update only) ends a namespace whatever it holds, as kube's does.
#[test]
fn finalize_ends_a_namespace_whatever_it_holds() {
    let s = TestServer::start();
    s.namespace("stuck");
    let made = s.post(&cms("stuck"), &cm("held", json!(["example.com/hold"])));
    assert_eq!(made.status, 201, "{}", made.text());
    assert_eq!(s.delete(&ns_path("stuck")).status, 200);
    let ns = eventually(Duration::from_secs(10), || {
        let ns = s.get_json(&ns_path("stuck"));
        condition(&ns, "NamespaceFinalizersRemaining").is_some().then_some(ns)
    });
    let mut ns = ns;
    ns["spec"]["finalizers"] = json!([]);
    let finalized = s.put(&format!("{}/finalize", ns_path("stuck")), &ns);
    assert_eq!(finalized.status, 200, "{}", finalized.text());
    assert_eq!(finalized.json()["spec"]["finalizers"], json!([]), "{}", finalized.text());
    assert_status(&s.get(&ns_path("stuck")), 404, "NotFound");
    // Only an update: a GET of it is 405.
    let get_finalize = s.get(&format!("{}/finalize", ns_path("stuck")));
    assert_eq!(get_finalize.status, 405, "{}", get_finalize.text());
    // Discovery lists it with its one verb.
    let v1 = s.get_json("/api/v1");
    let fin =
        v1["resources"].as_array().unwrap().iter().find(|r| r["name"] == "namespaces/finalize");
    assert_eq!(fin.unwrap_or_else(|| panic!("{v1}"))["verbs"], json!(["update"]));
}

/// `kubectl delete namespace` waits for the namespace to go, which is prompt when nothing
/// holds it, and takes what it held (a VM applied into it) with it.
#[test]
fn kubectl_delete_namespace_removes_everything_inside_promptly() {
    let server = TestServer::start();
    let kubectl = Kubectl::new(&server);
    kubectl.ok(&["create", "namespace", "quick"]);
    let manifest = repo_root().join("tests/manifests/vm.yaml");
    let out = kubectl.ok(&["apply", "-n", "quick", "-f", manifest.to_str().unwrap()]);
    assert_eq!(out.trim(), "virtualmachine.kubevirt.io/fedora-vm created");
    kubectl.ok(&["create", "configmap", "inside", "-n", "quick", "--from-literal=a=b"]);
    let started = Instant::now();
    let out = kubectl.ok(&["delete", "namespace", "quick", "--timeout=20s"]);
    assert_eq!(out.trim(), "namespace \"quick\" deleted");
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert_status(&server.get(&ns_path("quick")), 404, "NotFound");
    assert_status(&server.get(&format!("{}/fedora-vm", vms("quick"))), 404, "NotFound");
    assert_status(&server.get(&format!("{}/inside", cms("quick"))), 404, "NotFound");
    // kubectl follows a NotFound with a look at the namespace, and says that it is missing.
    let err = kubectl.fails(&["get", "vm", "-n", "quick", "fedora-vm"]);
    assert_eq!(err.trim(), "Error from server (NotFound): namespaces \"quick\" not found");
}

/// The core group's kinds through kubectl, which sends them as protobuf: `create configmap`,
/// `get cm` with kube's DATA column, `api-resources` for the core group.
#[test]
fn core_kinds_through_kubectl() {
    let server = TestServer::start();
    let kubectl = Kubectl::in_namespace(&server, "pools");
    kubectl.ok(&["create", "namespace", "pools"]);
    kubectl.ok(&[
        "create",
        "configmap",
        "from-kubectl",
        "--from-literal=color=green",
        "--from-literal=size=3",
    ]);
    let made = server.get_json(&format!("{}/from-kubectl", cms("pools")));
    assert_eq!(made["data"], json!({"color": "green", "size": "3"}), "{made}");
    assert_eq!(made["metadata"]["namespace"], "pools");
    assert!(made["metadata"]["uid"].is_string(), "{made}");
    let created = server.post(
        &cms("pools"),
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings"}, "data": {"color": "blue"}}),
    );
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(created.json()["apiVersion"], "v1");
    let table = kubectl.ok(&["get", "cm"]);
    let rows: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0], ["NAME", "DATA", "AGE"], "{table}");
    assert!(rows.iter().any(|r| r[..2] == ["from-kubectl", "2"]), "{table}");
    assert!(rows.iter().any(|r| r[..2] == ["settings", "1"]), "{table}");
    let listed = kubectl.ok(&["get", "cm", "-o", "name"]);
    assert_eq!(
        listed.lines().collect::<Vec<_>>(),
        ["configmap/from-kubectl", "configmap/settings"]
    );
    let resources = kubectl.ok(&["api-resources", "--api-group="]);
    let rows: Vec<Vec<&str>> = resources.lines().map(|l| l.split_whitespace().collect()).collect();
    for want in [
        ["configmaps", "cm", "v1", "true", "ConfigMap"],
        ["namespaces", "ns", "v1", "false", "Namespace"],
    ] {
        assert!(rows.iter().any(|r| r[..] == want[..]), "{want:?} in:\n{resources}");
    }
}

/// `--implicit-namespaces`: any namespace holds objects, and none is made or checked.
#[test]
fn implicit_namespaces_make_and_check_none() {
    let s = TestServer::start_with(ServerOptions {
        args: vec!["--implicit-namespaces".into()],
        ..Default::default()
    });
    let made = s.post(&cms("nowhere"), &cm("c", json!([])));
    assert_eq!(made.status, 201, "{}", made.text());
    assert_eq!(s.post(&vms("elsewhere"), &vm("v")).status, 201);
    assert_eq!(s.list_names(NAMESPACES), Vec::<String>::new());
}

/// Upgrading: `tests/fixtures/previous-release.db` was written by the previous release (whose
/// document served no Namespaces; the binary at /tmp/prev-virt-apiserver when this test was
/// written) with `--database previous-release.db` and these requests, then SIGTERM:
///   POST /apis/kubevirt.io/v1/namespaces/{legacy,default}/virtualmachines   old-vm
///        (labels era=previous, spec.runStrategy Halted)
///   POST /apis/cdi.kubevirt.io/v1beta1/namespaces/legacy/datavolumes        old-dv
///        (spec.source.blank {})
///   POST /apis/instancetype.kubevirt.io/v1alpha2/virtualmachineclusterinstancetypes  old-type
/// It holds those four objects at revisions 1-4 and no Namespace. The current binary opens a
/// copy with a Namespace for each namespace holding objects, and the objects intact.
#[test]
fn a_previous_release_database_opens_with_its_namespaces() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("virt.db");
    std::fs::copy(repo_root().join("tests/fixtures/previous-release.db"), &db).expect("copy");
    let s = TestServer::start_with(ServerOptions { db: Some(db), ..Default::default() });
    let kubectl = Kubectl::new(&s);
    let all = ["default", "kube-node-lease", "kube-public", "kube-system", "legacy"];
    assert_eq!(kubectl_namespaces(&kubectl), active(&all));
    let legacy = s.get_json(&ns_path("legacy"));
    assert_eq!(legacy["spec"]["finalizers"], json!(["kubernetes"]), "{legacy}");
    assert_eq!(legacy["metadata"]["labels"]["kubernetes.io/metadata.name"], "legacy");
    // The objects as the previous release stored them, at their revisions.
    let uids = [
        ("legacy", "65c3bb8f-a3a0-48f8-bd83-7c31c7c78c03", 1),
        ("default", "6d4782f5-6784-4603-95cf-037539198293", 2),
    ];
    for (ns, uid, revision) in uids {
        let old = s.get_json(&format!("{}/old-vm", vms(ns)));
        assert_eq!(old["metadata"]["uid"], uid, "{old}");
        assert_eq!(rv(&old), revision, "{old}");
        assert_eq!(old["metadata"]["labels"], json!({"era": "previous"}), "{old}");
        assert_eq!(old["spec"], json!({"runStrategy": "Halted"}), "{old}");
        assert_eq!(old["metadata"]["creationTimestamp"], "2026-11-26T18:31:13Z", "{old}");
    }
    let dv = s.get_json("/apis/cdi.kubevirt.io/v1beta1/namespaces/legacy/datavolumes/old-dv");
    assert_eq!(dv["metadata"]["uid"], "1554f2a1-efc8-4c9e-aa8b-326d93b1d93e", "{dv}");
    assert_eq!(dv["spec"], json!({"source": {"blank": {}}}), "{dv}");
    let it = s.get_json(
        "/apis/instancetype.kubevirt.io/v1alpha2/virtualmachineclusterinstancetypes/old-type",
    );
    assert_eq!(it["metadata"]["uid"], "bd837eab-14f9-4a76-bea4-a377f611d855", "{it}");
    assert_eq!(it["spec"], json!({"cpu": {"guest": 1}, "memory": {"guest": "1Gi"}}), "{it}");
    // The namespaces are real: they hold new content, and deleting one takes the old with it.
    assert_eq!(s.post(&vms("legacy"), &vm("new-vm")).status, 201);
    kubectl.ok(&["delete", "namespace", "legacy", "--timeout=20s"]);
    assert_status(&s.get(&format!("{}/old-vm", vms("legacy"))), 404, "NotFound");
    assert_status(
        &s.get("/apis/cdi.kubevirt.io/v1beta1/namespaces/legacy/datavolumes/old-dv"),
        404,
        "NotFound",
    );
    assert_eq!(s.get(&format!("{}/old-vm", vms("default"))).status, 200);
}

/// Namespace names are RFC 1123 labels, at most 63 characters (apimachinery
/// `pkg/api/validation/generic.go`: `ValidateNamespaceName = NameIsDNSLabel`), not subdomains.
#[test]
fn namespace_names_are_dns_labels() {
    let s = TestServer::start();
    let kubectl = Kubectl::new(&s);
    let longest = "n".repeat(63);
    kubectl.ok(&["create", "namespace", &longest]);
    let long = "n".repeat(64);
    let refused = s.post(
        NAMESPACES,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": long}}),
    );
    let st = assert_status(&refused, 422, "Invalid");
    assert_eq!(
        st["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "field": "metadata.name",
                "message": format!("Invalid value: \"{long}\": must be no more than 63 characters")}])
    );
    let err = kubectl.fails(&["create", "namespace", &long]);
    assert_eq!(
        err.trim(),
        format!("The Namespace \"{long}\" is invalid: metadata.name: Invalid value: \"{long}\": must be no more than 63 characters")
    );
    let dotted = s.post(
        NAMESPACES,
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}}),
    );
    let st = assert_status(&dotted, 422, "Invalid");
    assert_eq!(st["details"]["causes"][0]["field"], "metadata.name", "{st}");
    assert_status(&s.get(&ns_path(&long)), 404, "NotFound");
}
