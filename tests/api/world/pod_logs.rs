//! `kubectl logs` of a virt-launcher pod under `--simulate`: the `compute` container's lines tell
//! what happened to its VMI (started, migrated away, stopped) in KubeVirt's JSON log format
//! (KV staging/src/kubevirt.io/client-go/log/log.go; cmd/virt-launcher/virt-launcher.go,
//! pkg/virt-launcher/virtwrap/manager.go, live-migration-source.go; KUBE-WORLD.md §10), read with
//! the kubelet's options.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{condition, eventually, simulating, Kubectl, TestServer};

const KV: &str = "/apis/kubevirt.io/v1/namespaces";

fn vm(name: &str) -> Value {
    json!({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
        "metadata": {"name": name},
        "spec": {"runStrategy": "Always", "template": {"spec": {
            "domain": {"devices": {}, "resources": {"requests": {"memory": "128Mi"}}}
        }}}
    })
}

fn get(s: &TestServer, path: &str) -> Option<Value> {
    let r = s.get(path);
    (r.status == 200).then(|| r.json())
}

/// The log's lines, each parsed as JSON (every line of virt-launcher's is an object).
fn parsed(text: &str) -> Vec<Value> {
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?}"))).collect()
}

fn msgs(lines: &[Value]) -> Vec<&str> {
    lines.iter().map(|l| l["msg"].as_str().unwrap()).collect()
}

/// `2006-01-02T15:04:05.000000Z`, KubeVirt's logTimestampFormat.
/// Sets the pod's finalizers (`finalizers`: a JSON list, or null).
fn keep(k: &Kubectl, pod: &str, finalizers: &str) {
    let patch = format!(r#"{{"metadata":{{"finalizers":{finalizers}}}}}"#);
    k.ok(&["patch", "pod", pod, "--type", "merge", "-p", &patch]);
}

fn kubevirts_timestamp(t: &str) -> bool {
    let b = t.as_bytes();
    t.len() == 27 && b[10] == b'T' && b[19] == b'.' && t.ends_with('Z')
}

#[test]
fn a_launchers_log_tells_its_vmis_start_migration_and_stop() {
    let s = simulating(&["--simulate-speed", "0.1", "--simulate-nodes", "2"]);
    s.namespace("logs");
    let k = Kubectl::in_namespace(&s, "logs");
    assert_eq!(s.post(&format!("{KV}/logs/virtualmachines"), &vm("web")).status, 201);
    let vmi = eventually(Duration::from_secs(15), || {
        let vmi = get(&s, &format!("{KV}/logs/virtualmachineinstances/web"))?;
        (vmi["status"]["phase"] == "Running").then_some(vmi)
    });
    let pod = eventually(Duration::from_secs(15), || {
        let list = get(&s, "/api/v1/namespaces/logs/pods")?;
        let pod = list["items"].get(0)?.clone();
        condition(&pod, "Ready").is_some_and(|c| c["status"] == "True").then_some(pod)
    });
    let name = pod["metadata"]["name"].as_str().unwrap();

    // kubectl picks `compute` (the default-container annotation).
    let lines = parsed(&k.ok(&["logs", name]));
    assert_eq!(msgs(&lines), ["Marked as ready", "Domain defined.", "Domain started."]);
    assert_eq!(
        lines[0],
        json!({"component": "virt-launcher", "level": "info", "msg": "Marked as ready",
               "pos": "virt-launcher.go:83", "timestamp": lines[0]["timestamp"]})
    );
    let started = &lines[2];
    assert_eq!(started["pos"], "manager.go:1647");
    assert_eq!((&started["namespace"], &started["name"]), (&json!("logs"), &json!("web")));
    assert_eq!((&started["kind"], &started["uid"]), (&json!(""), &vmi["metadata"]["uid"]));
    assert!(lines.iter().all(|l| kubevirts_timestamp(l["timestamp"].as_str().unwrap())));
    // The raw line: go-kit's JSON logger sorts the keys.
    let raw = k.ok(&["logs", name, "-c", "compute", "--tail", "1"]);
    assert!(raw.starts_with(r#"{"component":"virt-launcher","kind":"","level":"info","msg":"Domain started.","name":"web","namespace":"logs","pos":"manager.go:1647","timestamp":""#), "{raw}");
    assert_eq!(raw.lines().count(), 1);
    // --timestamps: the kubelet's time, then the line.
    let stamped = k.ok(&["logs", name, "--timestamps"]);
    for line in stamped.lines() {
        let (at, rest) = line.split_once(' ').unwrap();
        let at_second = &at[..19];
        let logged: Value = serde_json::from_str(rest).unwrap();
        assert!(logged["timestamp"].as_str().unwrap().starts_with(at_second), "{line}");
    }
    // The other containers write nothing here.
    assert_eq!(k.ok(&["logs", name, "-c", "guest-console-log"]), "");
    assert_eq!(k.ok(&["logs", name, "-c", "container-disk-binary"]), "");

    // Migrated to the other node: the source launcher reports it.
    let migration = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
                           "metadata": {"name": "m1"}, "spec": {"vmiName": "web"}});
    let path = format!("{KV}/logs/virtualmachineinstancemigrations");
    assert_eq!(s.post(&path, &migration).status, 201);
    eventually(Duration::from_secs(15), || {
        let vmi = get(&s, &format!("{KV}/logs/virtualmachineinstances/web"))?;
        (vmi["status"]["migrationState"]["completed"] == true).then_some(())
    });
    // The source launcher reports it, then exits (its pod ends Succeeded) without a shutdown.
    let text = eventually(Duration::from_secs(15), || {
        let text = k.ok(&["logs", name]);
        text.contains("Exiting...").then_some(text)
    });
    let lines = parsed(&text);
    let migrated = lines.iter().position(|l| l["msg"] == "Live migration succeeded.").expect(&text);
    assert_eq!(lines[migrated]["pos"], "live-migration-source.go:1421");
    assert_eq!(lines[migrated]["uid"], vmi["metadata"]["uid"]);
    assert_eq!(
        msgs(&lines)[migrated + 1..],
        [
            "Waiting on final notifications to be sent to virt-handler.",
            "Final Delete notification sent",
            "Exiting...",
        ]
    );

    // Stopped: the domain shuts down in the target launcher, which exits. A finalizer keeps
    // the pod to read.
    let vmi = get(&s, &format!("{KV}/logs/virtualmachineinstances/web")).unwrap();
    let target = vmi["status"]["migrationState"]["targetPod"].as_str().unwrap().to_string();
    assert_ne!(target, name);
    assert_eq!(msgs(&parsed(&k.ok(&["logs", &target]))), ["Marked as ready"]);
    keep(&k, &target, r#"["test.io/keep"]"#);
    k.ok(&["patch", "vm", "web", "--type", "merge", "-p", r#"{"spec":{"runStrategy":"Halted"}}"#]);
    let text = eventually(Duration::from_secs(15), || {
        let text = k.ok(&["logs", &target]);
        text.contains("Exiting...").then_some(text)
    });
    let lines = parsed(&text);
    assert_eq!(
        msgs(&lines)[lines.len() - 4..],
        [
            "Signaled graceful shutdown for web",
            "Waiting on final notifications to be sent to virt-handler.",
            "Final Delete notification sent",
            "Exiting...",
        ]
    );
    assert_eq!(lines[lines.len() - 4]["pos"], "manager.go:2182");
    assert_eq!(lines[lines.len() - 1]["pos"], "virt-launcher.go:564");
    keep(&k, &target, "null");
}

#[test]
fn without_simulate_a_log_is_empty() {
    let s = TestServer::start();
    s.namespace("quiet");
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": "p"},
                     "spec": {"nodeName": "n1", "containers": [{"name": "compute", "image": "i"}]}});
    assert_eq!(s.post("/api/v1/namespaces/quiet/pods", &pod).status, 201);
    assert_eq!(Kubectl::in_namespace(&s, "quiet").ok(&["logs", "p"]), "");
}
