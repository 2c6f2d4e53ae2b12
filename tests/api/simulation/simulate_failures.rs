//! Failures on request (`simulate.virt-apiserver.io/fail` on a VM, its template or its VMI) and
//! a start with `paused: true`: the statuses follow as KubeVirt shows them, seen over HTTP.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{condition, eventually, simulating, TestServer, Watch};

const KV: &str = "/apis/kubevirt.io/v1/namespaces";
const SUB: &str = "/apis/subresources.kubevirt.io/v1/namespaces";
const FAIL: &str = "simulate.virt-apiserver.io/fail";

/// A VM with a containerDisk; `annotations` on the VM, `template_annotations` on its template.
fn vm(name: &str, run_strategy: &str, annotations: Value, template_annotations: Value) -> Value {
    json!({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {"runStrategy": run_strategy, "template": {
            "metadata": {"annotations": template_annotations},
            "spec": {
                "domain": {"devices": {"disks": [{"name": "root", "disk": {"bus": "virtio"}}]},
                           "resources": {"requests": {"memory": "64M"}}},
                "volumes": [{"name": "root", "containerDisk": {"image": "quay.io/nope/missing:v9"}}]
            }
        }}
    })
}

fn create(server: &TestServer, ns: &str, obj: &Value) {
    let r = server.post(&format!("{KV}/{ns}/virtualmachines"), obj);
    assert_eq!(r.status, 201, "{}", r.text());
}

fn get(server: &TestServer, ns: &str, plural: &str, name: &str) -> Option<Value> {
    let r = server.get(&format!("{KV}/{ns}/{plural}/{name}"));
    (r.status == 200).then(|| r.json())
}

/// The VM's printableStatus values, each change once, until `last` (within `within`).
fn statuses_until(watch: &Watch, last: &str, within: Duration) -> Vec<String> {
    let deadline = std::time::Instant::now() + within;
    let mut seen: Vec<String> = Vec::new();
    while seen.last().is_none_or(|s| s != last) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let ev =
            watch.next(left).unwrap_or_else(|| panic!("no {last} within {within:?}: {seen:?}"));
        let status = ev["object"]["status"]["printableStatus"].as_str().unwrap_or("").to_string();
        if !status.is_empty() && seen.last() != Some(&status) {
            seen.push(status);
        }
    }
    seen
}

fn seconds_between(from: &str, to: &str) -> i64 {
    let t = |s: &str| lifecycle::expr::unix_seconds(s).unwrap_or_else(|| panic!("a time: {s}"));
    t(to) - t(from)
}

fn now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
    lifecycle::expr::format_time(secs.as_secs() as i64)
}

#[test]
fn an_unschedulable_vm_waits_in_scheduling_until_the_failure_is_lifted() {
    let server = simulating(&["--simulate-speed", "0.2", "--simulate-nodes", "2"]);
    server.namespace("uns");
    let watch = server.watch(&format!("{KV}/uns/virtualmachines?watch=true"));
    create(&server, "uns", &vm("u", "Always", json!({FAIL: "unschedulable"}), json!(null)));
    let seen = statuses_until(&watch, "ErrorUnschedulable", Duration::from_secs(10));
    assert_eq!(seen, ["Starting", "ErrorUnschedulable"]);

    // It stays there: no node, Scheduling, the pod's condition mirrored on VMI and VM.
    std::thread::sleep(Duration::from_millis(800));
    let vmi = get(&server, "uns", "virtualmachineinstances", "u").unwrap();
    assert_eq!(vmi["status"]["phase"], "Scheduling", "{vmi}");
    assert!(vmi["status"]["nodeName"].is_null(), "{vmi}");
    let scheduled = condition(&vmi, "PodScheduled").unwrap();
    assert_eq!(
        (&scheduled["status"], &scheduled["reason"]),
        (&json!("False"), &json!("Unschedulable"))
    );
    // kube-scheduler's FitError, DefaultPreemption's own FitError after it, each closed by
    // the separator's "." (pkg/scheduler/framework/types.go): hence the "..".
    assert_eq!(
        scheduled["message"],
        "0/2 nodes are available: 2 Insufficient memory. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.."
    );
    let vm = get(&server, "uns", "virtualmachines", "u").unwrap();
    assert_eq!(vm["status"]["printableStatus"], "ErrorUnschedulable");
    assert_eq!(condition(&vm, "PodScheduled"), Some(scheduled));
    assert_eq!(condition(&vm, "Ready").unwrap()["status"], "False");

    // The launcher asks for what no node has: lifting the failure changes no pod, but the
    // next VMI's launcher fits (stopped, then started again); its condition goes with it.
    let r = server.patch(
        &format!("{KV}/uns/virtualmachines/u"),
        "application/merge-patch+json",
        &json!({"metadata": {"annotations": {FAIL: null}}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    std::thread::sleep(Duration::from_millis(500));
    let vmi = get(&server, "uns", "virtualmachineinstances", "u").unwrap();
    assert_eq!(vmi["status"]["phase"], "Scheduling", "{vmi}");
    for strategy in ["Halted", "Always"] {
        let r = server.patch(
            &format!("{KV}/uns/virtualmachines/u"),
            "application/merge-patch+json",
            &json!({"spec": {"runStrategy": strategy}}),
        );
        assert_eq!(r.status, 200, "{}", r.text());
        if strategy == "Halted" {
            eventually(Duration::from_secs(10), || {
                get(&server, "uns", "virtualmachineinstances", "u").is_none().then_some(())
            });
        }
    }
    assert_eq!(
        statuses_until(&watch, "Running", Duration::from_secs(10)).last().unwrap(),
        "Running"
    );
    let vm = get(&server, "uns", "virtualmachines", "u").unwrap();
    assert!(condition(&vm, "PodScheduled").is_none(), "{vm}");
}

#[test]
fn an_image_that_cannot_be_pulled_shows_err_image_pull_then_back_off() {
    let server = simulating(&["--simulate-speed", "0.2"]);
    server.namespace("img");
    let watch = server.watch(&format!("{KV}/img/virtualmachines?watch=true"));
    // Asked for on the template: each VMI carries it.
    create(&server, "img", &vm("i", "Always", json!(null), json!({FAIL: "image-pull"})));
    let seen = statuses_until(&watch, "ImagePullBackOff", Duration::from_secs(10));
    assert_eq!(seen, ["Starting", "ErrImagePull", "ImagePullBackOff"]);

    let vmi = get(&server, "img", "virtualmachineinstances", "i").unwrap();
    assert_eq!(vmi["metadata"]["annotations"][FAIL], "image-pull");
    assert_eq!(vmi["status"]["phase"], "Scheduling", "{vmi}");
    let sync = condition(&vmi, "Synchronized").unwrap();
    assert_eq!((&sync["status"], &sync["reason"]), (&json!("False"), &json!("ImagePullBackOff")));
    assert_eq!(sync["message"], r#"Back-off pulling image "quay.io/nope/missing:v9""#);
    let vm = get(&server, "img", "virtualmachines", "i").unwrap();
    assert_eq!(condition(&vm, "Synchronized"), Some(sync));

    // kubelet's back-off: the next pull (ErrImagePull again) not before 10 s.
    let backoff_at = sync["lastTransitionTime"].as_str().unwrap().to_string();
    let again = statuses_until(&watch, "ErrImagePull", Duration::from_secs(20));
    assert!(again.iter().all(|s| s == "ImagePullBackOff" || s == "ErrImagePull"), "{again:?}");
    let vmi = get(&server, "img", "virtualmachineinstances", "i").unwrap();
    let sync = condition(&vmi, "Synchronized").unwrap();
    let waited = seconds_between(&backoff_at, sync["lastTransitionTime"].as_str().unwrap());
    assert!(waited >= 10, "pulled again after {waited} s");
    assert!(
        sync["message"]
            .as_str()
            .unwrap()
            .contains(r#"failed to pull and unpack image "quay.io/nope/missing:v9""#),
        "{sync}"
    );
}

#[test]
fn a_crash_loop_counts_start_failures_and_restarts_after_the_back_off() {
    let server = simulating(&["--simulate-speed", "0.2"]);
    server.namespace("crash");
    let watch = server.watch(&format!("{KV}/crash/virtualmachines?watch=true"));
    let vmis = server.watch(&format!("{KV}/crash/virtualmachineinstances?watch=true"));
    create(&server, "crash", &vm("c", "Always", json!({FAIL: "crash-loop"}), json!(null)));
    let seen = statuses_until(&watch, "CrashLoopBackOff", Duration::from_secs(10));
    assert_eq!(seen, ["Starting", "CrashLoopBackOff"]);

    // The VMI failed before it ever ran, and was deleted.
    let mut phases = Vec::new();
    let first_uid = loop {
        let ev = vmis.expect();
        let phase = ev["object"]["status"]["phase"].as_str().unwrap_or("").to_string();
        if phases.last() != Some(&phase) {
            phases.push(phase.clone());
        }
        if phase == "Failed" {
            break ev["object"]["metadata"]["uid"].as_str().unwrap().to_string();
        }
    };
    assert_eq!(phases, ["Pending", "Scheduling", "Scheduled", "Failed"]);
    let vm = eventually(Duration::from_secs(5), || {
        let vm = get(&server, "crash", "virtualmachines", "c")?;
        let gone = get(&server, "crash", "virtualmachineinstances", "c").is_none();
        // Once virt-controller has seen it go: not created any more.
        let seen_gone = vm["status"]["created"].is_null();
        (gone && seen_gone && vm["status"]["printableStatus"] == "CrashLoopBackOff").then_some(vm)
    });
    let failure = &vm["status"]["startFailure"];
    assert_eq!(failure["consecutiveFailCount"], 1, "{vm}");
    assert_eq!(failure["lastFailedVMIUID"], first_uid.as_str());
    // calculateStartBackoffTime(1): 10 s plus up to 5 s, from the failure.
    let at = now();
    let left = seconds_between(&at, failure["retryAfterTimestamp"].as_str().unwrap());
    assert!((5..=16).contains(&left), "retry in {left} s: {failure}");
    let events = server.get_json("/api/v1/namespaces/crash/events");
    let crashed = events["items"].as_array().unwrap().iter().any(|e| {
        e["reason"] == "Stopped"
            && e["type"] == "Warning"
            && e["message"] == "The VirtualMachineInstance crashed."
    });
    assert!(crashed, "{events}");

    // Not before retryAfterTimestamp, a new VMI; it fails too: two failures, a longer wait.
    let retry_at = failure["retryAfterTimestamp"].as_str().unwrap().to_string();
    let second = eventually(Duration::from_secs(25), || {
        let vm = get(&server, "crash", "virtualmachines", "c")?;
        (vm["status"]["startFailure"]["consecutiveFailCount"] == 2).then_some(vm)
    });
    let failure = &second["status"]["startFailure"];
    assert_ne!(failure["lastFailedVMIUID"], first_uid.as_str());
    let created = eventually(Duration::from_secs(10), || {
        let events = server.get_json("/api/v1/namespaces/crash/events");
        let items = events["items"].as_array()?.clone();
        let starts: Vec<Value> =
            items.into_iter().filter(|e| e["reason"] == "SuccessfulCreate").collect();
        (starts.len() >= 2).then_some(starts)
    });
    let restarted_at = created
        .iter()
        .filter_map(|e| e["lastTimestamp"].as_str().or(e["eventTime"].as_str()))
        .max()
        .unwrap()
        .to_string();
    assert!(seconds_between(&retry_at, &restarted_at) >= 0, "{retry_at} {restarted_at}");
    let at = now();
    let left = seconds_between(&at, failure["retryAfterTimestamp"].as_str().unwrap());
    assert!((30..=61).contains(&left), "retry in {left} s: {failure}");

    // Halted: no restarts to back off from; the failures are forgotten.
    let r = server.patch(
        &format!("{KV}/crash/virtualmachines/c"),
        "application/merge-patch+json",
        &json!({"spec": {"runStrategy": "Halted"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    eventually(Duration::from_secs(5), || {
        let vm = get(&server, "crash", "virtualmachines", "c")?;
        (vm["status"]["printableStatus"] == "Stopped" && vm["status"]["startFailure"].is_null())
            .then_some(())
    });
}

#[test]
fn a_vm_started_paused_runs_paused_and_not_ready() {
    let server = simulating(&["--simulate-speed", "0.2"]);
    server.namespace("pz");
    let watch = server.watch(&format!("{KV}/pz/virtualmachines?watch=true"));
    create(&server, "pz", &vm("p", "Halted", json!(null), json!(null)));
    assert_eq!(statuses_until(&watch, "Stopped", Duration::from_secs(5)), ["Stopped"]);
    let r = server.request(
        "PUT",
        &format!("{SUB}/pz/virtualmachines/p/start"),
        &[],
        Some(("application/json", br#"{"paused": true}"#)),
    );
    assert_eq!((r.status, r.text()), (202, String::new()));
    // Never Running on the way: Starting, then Paused.
    let seen = statuses_until(&watch, "Paused", Duration::from_secs(10));
    assert_eq!(seen, ["Stopped", "Starting", "Paused"]);

    let vmi = get(&server, "pz", "virtualmachineinstances", "p").unwrap();
    assert_eq!(vmi["spec"]["startStrategy"], "Paused");
    assert_eq!(vmi["status"]["phase"], "Running");
    let paused = condition(&vmi, "Paused").unwrap();
    assert_eq!((&paused["status"], &paused["reason"]), (&json!("True"), &json!("PausedByUser")));
    assert_eq!(paused["message"], "VMI was paused by user");
    assert_eq!(condition(&vmi, "Ready").unwrap()["status"], "False");
    let vm = get(&server, "pz", "virtualmachines", "p").unwrap();
    assert_eq!(vm["spec"]["runStrategy"], "Always");
    assert_eq!(vm["status"]["ready"], Value::Null);
    assert_eq!(condition(&vm, "Ready").unwrap()["status"], "False");
    assert_eq!(condition(&vm, "Paused").unwrap()["reason"], "PausedByUser");
    assert!(vm["status"]["stateChangeRequests"].is_null(), "{vm}");

    // Unpausing runs it.
    let r =
        server.request("PUT", &format!("{SUB}/pz/virtualmachineinstances/p/unpause"), &[], None);
    assert_eq!(r.status, 200, "{}", r.text());
    let seen = statuses_until(&watch, "Running", Duration::from_secs(10));
    assert!(seen.iter().all(|s| s == "Paused" || s == "Running"), "{seen:?}");
    let vm = get(&server, "pz", "virtualmachines", "p").unwrap();
    assert_eq!(vm["status"]["ready"], true);
}
