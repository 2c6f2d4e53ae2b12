//! kube's graceful deletion of pods (K8S staging/src/k8s.io/apiserver/pkg/registry/rest/delete.go
//! BeforeDelete, pkg/registry/core/pod/strategy.go CheckGracefulDelete, staging/src/k8s.io/
//! apiserver/pkg/registry/generic/registry/store.go Delete), and the simulated kubelet that ends
//! it (pkg/kubelet/kuberuntime/kuberuntime_container.go killContainer, pkg/kubelet/status/
//! status_manager.go): as kubectl and a watch see it.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{condition, eventually, simulating, Kubectl, TestServer};

const NS: &str = "grace";
const PODS: &str = "/api/v1/namespaces/grace/pods";

fn pod(name: &str, node: Option<&str>) -> Value {
    let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "web", "image": "nginx"}, {"name": "sidecar", "image": "busybox"}]}});
    if let Some(node) = node {
        pod["spec"]["nodeName"] = json!(node);
    }
    pod
}

fn create(s: &TestServer, pod: &Value) -> Value {
    let r = s.post(PODS, pod);
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

fn found(s: &TestServer, name: &str) -> Option<Value> {
    let r = s.get(&format!("{PODS}/{name}"));
    (r.status == 200).then(|| r.json())
}

fn unix(t: &Value) -> i64 {
    let t = t.as_str().unwrap_or_else(|| panic!("a time: {t}"));
    virt_apiserver::meta::parse_rfc3339(t).unwrap_or_else(|| panic!("an RFC 3339 time: {t}"))
}

/// The status column `kubectl get pod` prints (kube's printPod).
fn status_column(k: &Kubectl, name: &str) -> String {
    let row = k.ok(&["get", "pod", name, "--no-headers"]);
    row.split_whitespace().nth(2).unwrap_or("").to_string()
}

#[test]
fn a_bound_pod_is_deleted_gracefully_and_only_a_shorter_grace_changes_it() {
    // No --simulate: no kubelet runs node01, as on a cluster whose node is gone.
    let s = TestServer::start();
    s.namespace(NS);
    let k = Kubectl::in_namespace(&s, NS);
    let created = create(&s, &pod("web", Some("node01")));
    // SetDefaults_PodSpec: 30 s.
    assert_eq!(created["spec"]["terminationGracePeriodSeconds"], 30);
    let watch = s.watch(&format!("{PODS}?watch=true&resourceVersion={}", rv_of(&created)));

    // The DELETE answers 200 with the pod (pods' storage: ReturnDeletedObject), now carrying
    // the deletion's timestamp (now + grace) and period.
    let r = s.delete(&format!("{PODS}/web"));
    assert_eq!(r.status, 200, "{}", r.text());
    let answered = r.json();
    assert_eq!(answered["kind"], "Pod", "{answered}");
    let meta = &answered["metadata"];
    assert_eq!(meta["deletionGracePeriodSeconds"], 30, "{answered}");
    let due = unix(&meta["deletionTimestamp"]);
    let now = unix(&json!(virt_apiserver::meta::now_rfc3339()));
    assert!((now + 28..=now + 31).contains(&due), "due {due}, now {now}");
    let ev = watch.expect_event("MODIFIED", "web");
    assert_eq!(ev["object"]["metadata"]["deletionTimestamp"], meta["deletionTimestamp"]);

    // kubectl shows it Terminating (printPod), and describe says for how long.
    assert_eq!(status_column(&k, "web"), "Terminating");
    let described = k.ok(&["describe", "pod", "web"]);
    assert!(described.contains("Terminating (lasts"), "{described}");
    assert!(described.contains("Termination Grace Period:  30s"), "{described}");

    // A longer grace changes nothing: the answer is the pod as it is.
    let before = found(&s, "web").unwrap();
    k.ok(&["delete", "pod", "web", "--grace-period=60", "--wait=false"]);
    let after = found(&s, "web").unwrap();
    assert_eq!(after["metadata"], before["metadata"]);
    // A shorter one moves the timestamp by the difference (BeforeDelete).
    k.ok(&["delete", "pod", "web", "--grace-period=5", "--wait=false"]);
    let shorter = found(&s, "web").unwrap();
    assert_eq!(shorter["metadata"]["deletionGracePeriodSeconds"], 5);
    assert_eq!(unix(&shorter["metadata"]["deletionTimestamp"]), due - 25);
    assert_eq!(status_column(&k, "web"), "Terminating");

    // --force --grace-period=0 removes it at once.
    let run = k.run(&["delete", "pod", "web", "--force", "--grace-period=0"]);
    assert!(run.ok(), "{}", run.describe());
    assert!(run.stdout().contains("pod \"web\" force deleted"), "{}", run.describe());
    assert!(found(&s, "web").is_none());
    watch.expect_event("DELETED", "web");
}

#[test]
fn an_unscheduled_or_finished_pod_goes_at_once() {
    let s = TestServer::start();
    s.namespace(NS);
    let k = Kubectl::in_namespace(&s, NS);
    // No node: CheckGracefulDelete gives 0 whatever was asked.
    create(&s, &pod("pending", None));
    k.ok(&["delete", "pod", "pending", "--grace-period=30", "--wait=false"]);
    assert!(found(&s, "pending").is_none());
    // A Succeeded (or Failed) pod: 0 too.
    create(&s, &pod("done", Some("node01")));
    let status = json!({"status": {"phase": "Succeeded"}});
    let r = s.patch(&format!("{PODS}/done/status"), "application/merge-patch+json", &status);
    assert_eq!(r.status, 200, "{}", r.text());
    k.ok(&["delete", "pod", "done", "--wait=false"]);
    assert!(found(&s, "done").is_none());
    // Deletecollection takes the same path: the bound running pod stays, Terminating.
    create(&s, &pod("bound", Some("node01")));
    create(&s, &pod("loose", None));
    let r = s.delete(PODS);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(found(&s, "loose").is_none());
    let bound = found(&s, "bound").expect("the bound pod is terminating");
    assert_eq!(bound["metadata"]["deletionGracePeriodSeconds"], 30);
}

#[test]
fn the_simulated_kubelet_kills_the_containers_then_deletes_the_pod() {
    let s = simulating(&["--simulate-speed", "0.2"]);
    s.namespace(NS);
    let k = Kubectl::in_namespace(&s, NS);
    let created = create(&s, &pod("web", None));
    eventually(Duration::from_secs(15), || {
        (found(&s, "web")?["status"]["phase"] == "Running").then_some(())
    });
    let watch = s.watch(&format!("{PODS}?watch=true&resourceVersion={}", rv_of(&created)));

    // kubectl waits for the pod to be gone: the kubelet ends it well within its grace.
    k.ok(&["delete", "pod", "web", "--timeout=30s"]);
    assert!(found(&s, "web").is_none());

    // The watch saw it marked, its containers end as SIGTERM ends them (143, Error), then
    // DELETED.
    let mut marked = false;
    let mut killed = None;
    loop {
        let ev = watch.expect();
        if ev["object"]["metadata"]["name"] != "web" {
            continue;
        }
        let obj = &ev["object"];
        if ev["type"] == "DELETED" {
            break;
        }
        marked |= obj["metadata"]["deletionTimestamp"].is_string();
        if obj["status"]["containerStatuses"][0]["state"]["terminated"].is_object() {
            killed = Some(obj.clone());
        }
    }
    assert!(marked, "a MODIFIED event with the deletionTimestamp");
    let killed = killed.expect("a MODIFIED event with the containers terminated");
    assert_eq!(killed["status"]["phase"], "Failed", "{killed}");
    for c in killed["status"]["containerStatuses"].as_array().unwrap() {
        let t = &c["state"]["terminated"];
        assert_eq!((&t["exitCode"], &t["reason"]), (&json!(143), &json!("Error")), "{c}");
    }
    assert_eq!(condition(&killed, "Ready").unwrap()["status"], "False");

    // A Killing event per container, from the kubelet.
    let events = s.get_json(&format!(
        "/api/v1/namespaces/{NS}/events?fieldSelector=involvedObject.name%3Dweb,reason%3DKilling"
    ));
    let mut messages: Vec<&str> = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    messages.sort();
    assert_eq!(messages, ["Stopping container sidecar", "Stopping container web"]);
    assert_eq!(events["items"][0]["source"]["component"], "kubelet");
}

fn rv_of(obj: &Value) -> &str {
    obj["metadata"]["resourceVersion"].as_str().unwrap()
}

#[test]
fn a_deleted_launcher_pod_shuts_its_vmi_down_and_the_vm_starts_another() {
    const KV: &str = "/apis/kubevirt.io/v1/namespaces/grace";
    let s = simulating(&["--simulate-speed", "0.2"]);
    s.namespace(NS);
    let k = Kubectl::in_namespace(&s, NS);
    let vm = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
        "metadata": {"name": "guest"},
        "spec": {"runStrategy": "Always", "template": {"spec": {
            "domain": {"devices": {"disks": [{"name": "root", "disk": {"bus": "virtio"}}]},
                       "resources": {"requests": {"memory": "128Mi"}}},
            "volumes": [{"name": "root", "containerDisk": {"image": "quay.io/containerdisks/fedora:40"}}]}}}});
    let r = s.post(&format!("{KV}/virtualmachines"), &vm);
    assert_eq!(r.status, 201, "{}", r.text());
    let running = |s: &TestServer| {
        eventually(Duration::from_secs(20), || {
            let r = s.get(&format!("{KV}/virtualmachineinstances/guest"));
            let vmi = (r.status == 200).then(|| r.json())?;
            (vmi["status"]["phase"] == "Running").then_some(vmi)
        })
    };
    let first = running(&s);
    let launcher = eventually(Duration::from_secs(15), || {
        let list = s.get_json(PODS);
        let pods = list["items"].as_array()?.clone();
        pods.into_iter().find(|p| p["status"]["phase"] == "Running")
    });
    let name = launcher["metadata"]["name"].as_str().unwrap().to_string();
    let watch = s.watch(&format!("{PODS}?watch=true&resourceVersion={}", rv_of(&launcher)));

    // The user deletes the launcher pod: it is going (isPodDownOrGoingDown), so the VMI fails;
    // the launcher's guest is down, it exits 0, and the kubelet deletes the pod.
    k.ok(&["delete", "pod", &name, "--timeout=30s"]);
    let mut exited = None;
    loop {
        let ev = watch.expect();
        if ev["object"]["metadata"]["name"] != name.as_str() {
            continue;
        }
        if ev["type"] == "DELETED" {
            break;
        }
        let compute = &ev["object"]["status"]["containerStatuses"][0]["state"]["terminated"];
        if compute.is_object() {
            exited = Some(compute.clone());
        }
    }
    let exited = exited.expect("the compute container terminated before the pod went");
    assert_eq!((&exited["exitCode"], &exited["reason"]), (&json!(0), &json!("Completed")));

    // runStrategy Always: a new VMI runs, in a new launcher pod (a new uid; the simulation's
    // generated names may repeat).
    let second = eventually(Duration::from_secs(30), || {
        let vmi = running(&s);
        (vmi["metadata"]["uid"] != first["metadata"]["uid"]).then_some(vmi)
    });
    assert_ne!(second["metadata"]["uid"], first["metadata"]["uid"]);
    eventually(Duration::from_secs(15), || {
        let list = s.get_json(PODS);
        let pods = list["items"].as_array()?.clone();
        let uid = &launcher["metadata"]["uid"];
        pods.iter()
            .any(|p| &p["metadata"]["uid"] != uid && p["status"]["phase"] == "Running")
            .then_some(())
    });
}

/// kube-controller-manager's PodGC (K8S pkg/controller/podgc/gc_controller.go gcOrphaned):
/// a pod left Terminating on a node that does not exist is marked Failed with the
/// `DisruptionTarget` condition after the 40 s quarantine, then deleted at once; a pod on a
/// node that exists is left alone.
#[test]
fn podgc_removes_a_terminating_pod_whose_node_does_not_exist() {
    let s = TestServer::start();
    s.namespace(NS);
    let k = Kubectl::in_namespace(&s, NS);
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "here"}});
    assert_eq!(s.post("/api/v1/nodes", &node).status, 201);
    create(&s, &pod("kept", Some("here")));
    create(&s, &pod("orphan", Some("gone")));
    k.ok(&["delete", "pod", "orphan", "--wait=false"]);
    assert_eq!(status_column(&k, "orphan"), "Terminating");
    // Still there well within the quarantine; the watch opens late, as the test client's
    // requests last at most 30 s.
    std::thread::sleep(Duration::from_secs(25));
    let terminating = found(&s, "orphan").expect("kept through the quarantine");
    let watch = s.watch(&format!("{PODS}?watch=true&resourceVersion={}", rv_of(&terminating)));
    let failed = eventually(Duration::from_secs(28), || {
        let ev = watch.next(Duration::from_secs(1))?;
        (ev["object"]["metadata"]["name"] == "orphan"
            && ev["object"]["status"]["phase"] == "Failed")
            .then(|| ev["object"].clone())
    });
    let c = condition(&failed, "DisruptionTarget").expect("the DisruptionTarget condition");
    assert_eq!(
        (&c["status"], &c["reason"], &c["message"]),
        (&json!("True"), &json!("DeletionByPodGC"), &json!("PodGC: node no longer exists"))
    );
    assert!(failed["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["manager"] == "PodGC"));
    watch.expect_event("DELETED", "orphan");
    assert!(found(&s, "orphan").is_none());
    assert_eq!(found(&s, "kept").unwrap()["status"]["phase"], "Pending");
}
