//! The simulated runtime (`--simulate`): VMs and their VMIs move as KubeVirt moves them, through
//! ordinary writes a client sees over HTTP and kubectl; restarts resume; a seed repeats; a bad
//! `--simulate-config` fails at start; without `--simulate` nothing moves.

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{binary, eventually, managers, simulating, Kubectl, ServerOptions, TestServer};

const VMS: &str = "/apis/kubevirt.io/v1/namespaces";

fn vm(ns: &str, name: &str, run_strategy: &str) -> Value {
    json!({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"runStrategy": run_strategy, "template": {
            "metadata": {"labels": {"kubevirt.io/domain": name}},
            "spec": {"domain": {"devices": {}, "resources": {"requests": {"memory": "64M"}}}}
        }}
    })
}

fn create_vm(server: &TestServer, ns: &str, name: &str, run_strategy: &str) {
    let r = server.post(&format!("{VMS}/{ns}/virtualmachines"), &vm(ns, name, run_strategy));
    assert_eq!(r.status, 201, "{}", r.text());
}

fn get(server: &TestServer, ns: &str, plural: &str, name: &str) -> Option<Value> {
    let r = server.get(&format!("{VMS}/{ns}/{plural}/{name}"));
    (r.status == 200).then(|| r.json())
}

/// The VMI once it is Running.
fn running_vmi(server: &TestServer, ns: &str, name: &str, within: Duration) -> Value {
    eventually(within, || {
        get(server, ns, "virtualmachineinstances", name)
            .filter(|v| v["status"]["phase"] == "Running")
    })
}

#[test]
fn a_vm_runs_halts_and_goes_through_kubectl() {
    let server = simulating(&[]);
    server.namespace("sim");
    let kubectl = Kubectl::in_namespace(&server, "sim");
    let manifest = kubectl.file(
        "vm.yaml",
        "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: vm1\nspec:\n  runStrategy: Always\n  template:\n    spec:\n      domain:\n        devices: {}\n        resources: {requests: {memory: 64M}}\n",
    );
    kubectl.ok(&["apply", "-f", manifest.to_str().unwrap()]);
    let started = std::time::Instant::now();
    kubectl.ok(&["wait", "vm/vm1", "--for=condition=Ready", "--timeout=20s"]);
    // Real but short: about 2 s, with room for a loaded machine.
    assert!(started.elapsed() < Duration::from_secs(8), "{:?}", started.elapsed());
    let vms = kubectl.ok(&["get", "vm", "vm1", "--no-headers"]);
    let cols: Vec<&str> = vms.split_whitespace().collect();
    assert_eq!(cols[2..], ["Running", "True"], "{vms}");
    let vmis = kubectl.ok(&["get", "vmi", "vm1", "--no-headers"]);
    let cols: Vec<&str> = vmis.split_whitespace().collect();
    assert_eq!(cols[2], "Running", "{vmis}");
    assert!(cols[3].starts_with("10.244."), "{vmis}");
    assert!(cols[4].starts_with("sim-node-"), "{vmis}");
    assert_eq!(cols[5], "True", "{vmis}");

    let vm = get(&server, "sim", "virtualmachines", "vm1").unwrap();
    assert_eq!(
        vm["metadata"]["finalizers"],
        json!(["kubevirt.io/virtualMachineControllerFinalize"])
    );
    assert_eq!(vm["metadata"]["annotations"]["kubevirt.io/latest-observed-api-version"], "v1");
    assert_eq!(vm["status"]["created"], true);
    assert_eq!(vm["status"]["ready"], true);
    assert_eq!(vm["status"]["runStrategy"], "Always");
    assert_eq!(vm["status"]["desiredGeneration"], 1);
    assert_eq!(vm["status"]["observedGeneration"], 1);
    let managers = managers(&vm);
    assert!(managers.contains(&"virt-controller"), "{managers:?}");
    let vmi = get(&server, "sim", "virtualmachineinstances", "vm1").unwrap();
    let owner = &vmi["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "VirtualMachine");
    assert_eq!(owner["uid"], vm["metadata"]["uid"]);
    assert_eq!(owner["controller"], true);
    assert_eq!(vmi["metadata"]["annotations"]["kubevirt.io/vm-generation"], "1");
    assert_eq!(vmi["metadata"]["labels"]["kubevirt.io/nodeName"], vmi["status"]["nodeName"]);
    let phases: Vec<&str> = vmi["status"]["phaseTransitionTimestamps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["phase"].as_str())
        .collect();
    assert_eq!(phases, ["Pending", "Scheduling", "Scheduled", "Running"]);
    assert_eq!(
        vmi["status"]["activePods"].as_object().unwrap().values().next().unwrap(),
        &vmi["status"]["nodeName"]
    );

    kubectl.ok(&[
        "patch",
        "vm",
        "vm1",
        "--type=merge",
        "-p",
        r#"{"spec":{"runStrategy":"Halted"}}"#,
    ]);
    eventually(Duration::from_secs(10), || {
        let vm = get(&server, "sim", "virtualmachines", "vm1")?;
        let gone = get(&server, "sim", "virtualmachineinstances", "vm1").is_none();
        let ready = &vm["status"]["conditions"][0];
        (gone && vm["status"]["printableStatus"] == "Stopped" && ready["reason"] == "VMINotExists")
            .then_some(())
    });
    let vm = get(&server, "sim", "virtualmachines", "vm1").unwrap();
    assert_eq!(vm["status"]["conditions"][0]["reason"], "VMINotExists");
    assert!(vm["status"].get("created").is_none(), "{vm}");
    let described = kubectl.ok(&["describe", "vm", "vm1"]);
    assert!(
        described.contains(
            "Started the virtual machine by creating the new virtual machine instance vm1"
        ),
        "{described}"
    );
    assert!(described.contains("SuccessfulDelete"), "{described}");
    assert!(described.contains("virtualmachine-controller"), "{described}");

    kubectl.ok(&["delete", "vm", "vm1", "--timeout=20s"]);
    assert!(get(&server, "sim", "virtualmachines", "vm1").is_none());
}

#[test]
fn a_watch_sees_the_vmi_sequence_in_order() {
    let server = simulating(&["--simulate-speed", "0"]);
    server.namespace("seq");
    let watch = server.watch(&format!("{VMS}/seq/virtualmachineinstances?watch=true"));
    create_vm(&server, "seq", "vm1", "Always");
    let mut seen: Vec<(String, String)> = Vec::new();
    while seen.last().is_none_or(|(_, p)| p != "Running") {
        let ev = watch.expect();
        let phase = ev["object"]["status"]["phase"].as_str().unwrap_or("").to_string();
        if seen.last().is_none_or(|(_, p)| *p != phase) {
            seen.push((ev["type"].as_str().unwrap().to_string(), phase));
        }
    }
    let want = [
        ("ADDED", "Pending"),
        ("MODIFIED", "Scheduling"),
        ("MODIFIED", "Scheduled"),
        ("MODIFIED", "Running"),
    ];
    let want: Vec<(String, String)> =
        want.iter().map(|(t, p)| (t.to_string(), p.to_string())).collect();
    assert_eq!(seen, want);

    // Deleting the VM takes its VMI through Succeeded, then away, then the VM itself.
    let r = server.delete(&format!("{VMS}/seq/virtualmachines/vm1"));
    assert_eq!(r.status, 200, "{}", r.text());
    let mut phases = Vec::new();
    loop {
        let ev = watch.expect();
        let phase = ev["object"]["status"]["phase"].as_str().unwrap_or("").to_string();
        if ev["type"] == "DELETED" {
            assert_eq!(phase, "Succeeded");
            break;
        }
        if phases.last() != Some(&phase) {
            phases.push(phase);
        }
    }
    assert_eq!(phases, ["Running", "Succeeded"]);
    eventually(Duration::from_secs(5), || {
        get(&server, "seq", "virtualmachines", "vm1").is_none().then_some(())
    });
}

#[test]
fn a_restart_resumes_a_lifecycle_from_stored_state() {
    // Slow enough that the VMI is still on its way when the server dies.
    let server = simulating(&["--simulate-speed", "30"]);
    server.namespace("resume");
    create_vm(&server, "resume", "vm1", "Always");
    eventually(Duration::from_secs(20), || {
        get(&server, "resume", "virtualmachineinstances", "vm1")
    });
    let vmi = get(&server, "resume", "virtualmachineinstances", "vm1").unwrap();
    assert_ne!(vmi["status"]["phase"], "Running");
    let (db, dir) = server.kill();
    let args = vec!["--simulate".into(), "--simulate-speed".into(), "0".into()];
    let again =
        TestServer::start_with(ServerOptions { db: Some(db), args, ..ServerOptions::default() });
    let vmi = running_vmi(&again, "resume", "vm1", Duration::from_secs(10));
    assert!(vmi["status"]["interfaces"][0]["ipAddress"].as_str().unwrap().starts_with("10.244."));
    eventually(Duration::from_secs(10), || {
        let vm = get(&again, "resume", "virtualmachines", "vm1")?;
        (vm["status"]["printableStatus"] == "Running").then_some(())
    });
    drop(dir);
}

#[test]
fn a_seed_repeats_nodes_and_addresses() {
    let facts = |seed: &str| {
        let server = simulating(&[
            "--simulate-speed",
            "0",
            "--simulate-seed",
            seed,
            "--simulate-nodes",
            "5",
        ]);
        server.namespace("seeded");
        create_vm(&server, "seeded", "vm1", "Always");
        let vmi = running_vmi(&server, "seeded", "vm1", Duration::from_secs(10));
        let iface = &vmi["status"]["interfaces"][0];
        (vmi["status"]["nodeName"].clone(), iface["ipAddress"].clone(), iface["mac"].clone())
    };
    let first = facts("42");
    assert_eq!(first, facts("42"));
    // Another seed draws other values (the three agreeing by chance is negligible).
    assert_ne!(first, facts("43"));
}

#[test]
fn without_simulate_nothing_moves() {
    let server = TestServer::start();
    server.namespace("still");
    create_vm(&server, "still", "vm1", "Always");
    std::thread::sleep(Duration::from_millis(1500));
    let vm = get(&server, "still", "virtualmachines", "vm1").unwrap();
    assert!(vm.get("status").is_none_or(|s| s.get("printableStatus").is_none()), "{vm}");
    assert!(vm["metadata"].get("finalizers").is_none(), "{vm}");
    assert!(get(&server, "still", "virtualmachineinstances", "vm1").is_none());
}

/// Starts the server with `--simulate-config config`, which it must refuse; answers its stderr.
fn refused_config(dir: &std::path::Path, config: &std::path::Path) -> String {
    let out = Command::new(binary())
        .args(["--listen", "127.0.0.1:0", "--database"])
        .arg(dir.join("db"))
        .arg("--simulate")
        .arg("--simulate-config")
        .arg(config)
        .output()
        .unwrap();
    assert!(!out.status.success(), "the server started with {}", config.display());
    assert!(out.stdout.is_empty(), "it never listened");
    String::from_utf8_lossy(&out.stderr).into_owned()
}
#[test]
fn a_bad_simulate_config_fails_at_start_listing_every_problem() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad.yaml");
    std::fs::write(
        &config,
        r#"
kinds:
  - resource: {group: kubevirt.io, kind: NoSuchKind}
  - resource: {group: kubevirt.io, kind: VirtualMachine}
    stages:
      - name: broken
        manager: nobody
        selector: {equals: {path: .spec.notAField, value: 1}}
        steps:
          - patch: {merge: {status: {alsoNotAField: "{{ bogus() }}"}}}
"#,
    )
    .unwrap();
    let stderr = refused_config(dir.path(), &config);
    assert!(stderr.contains("has 5 problem(s)"), "{stderr}");
    for want in [
        "kind kubevirt.io/NoSuchKind: the document serves no such kind",
        "stage broken: manager \"nobody\" is not declared",
        ".spec.notAField field \"notAField\" is not declared",
        ".status field \"alsoNotAField\" is not declared",
        "no function bogus()",
    ] {
        assert!(stderr.contains(want), "missing {want:?} in {stderr}");
    }
}

#[test]
fn a_config_extends_the_built_in_lifecycles() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("extra.yaml");
    // A VMI stage of its own: label every Running VMI.
    std::fs::write(
        &config,
        r#"
kinds:
  - resource: {group: kubevirt.io, kind: VirtualMachineInstance}
    stages:
      - name: label-running
        manager: virt-handler
        selector: {all: [{equals: {path: .status.phase, value: Running}}, {doesNotExist: ".metadata.labels['example.com/seen']"}]}
        steps:
          - patch: {merge: {metadata: {labels: {example.com/seen: "{{ .status.nodeName }}"}}}}
"#,
    )
    .unwrap();
    let server =
        simulating(&["--simulate-speed", "0", "--simulate-config", config.to_str().unwrap()]);
    server.namespace("ext");
    create_vm(&server, "ext", "vm1", "Always");
    let vmi = eventually(Duration::from_secs(10), || {
        get(&server, "ext", "virtualmachineinstances", "vm1")
            .filter(|v| v["metadata"]["labels"]["example.com/seen"].is_string())
    });
    assert_eq!(vmi["metadata"]["labels"]["example.com/seen"], vmi["status"]["nodeName"]);
}

/// `--simulate-config` extends the actions as it does the lifecycles: an action of the file
/// takes the built-in one's place, the others stay; a bad one fails the start.
#[test]
fn a_config_replaces_an_action_and_keeps_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("actions.yaml");
    // `stop` refuses a VM labelled protected, else halts it.
    std::fs::write(
        &config,
        r#"
kinds:
  - resource: {group: kubevirt.io, kind: VirtualMachine}
    actions:
      stop:
        code: 202
        bodyType: StopOptions
        body: {gracePeriod: int, dryRun: strings}
        checks:
          - {when: {doesNotExist: .metadata.uid}, code: 404}
          - {when: {equals: {path: ".metadata.labels['example.com/protected']", value: "true"}}, code: 403, message: "{{ .metadata.name }} is protected"}
        steps:
          - patch: {merge: {spec: {runStrategy: Halted, running: null}}}
"#,
    )
    .unwrap();
    let server =
        simulating(&["--simulate-speed", "0", "--simulate-config", config.to_str().unwrap()]);
    server.namespace("act");
    let mut protected = vm("act", "keep", "Always");
    protected["metadata"]["labels"] = json!({"example.com/protected": "true"});
    let r = server.post(&format!("{VMS}/act/virtualmachines"), &protected);
    assert_eq!(r.status, 201, "{}", r.text());
    create_vm(&server, "act", "free", "Always");
    let stop = |name: &str| {
        let path =
            format!("/apis/subresources.kubevirt.io/v1/namespaces/act/virtualmachines/{name}/stop");
        server.request("PUT", &path, &[], None)
    };
    let r = stop("keep");
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(
        r.json()["message"],
        r#"virtualmachine.kubevirt.io "keep" is forbidden: keep is protected"#
    );
    let r = stop("free");
    assert_eq!((r.status, r.text()), (202, String::new()));
    let vm = get(&server, "act", "virtualmachines", "free").unwrap();
    assert_eq!(vm["spec"]["runStrategy"], "Halted");
    // The built-in start is still there.
    create_vm(&server, "act", "idle", "Halted");
    let path = "/apis/subresources.kubevirt.io/v1/namespaces/act/virtualmachines/idle/start";
    assert_eq!(server.request("PUT", path, &[], None).status, 202);
    let vm = get(&server, "act", "virtualmachines", "idle").unwrap();
    assert_eq!(vm["spec"]["runStrategy"], "Always");

    // A bad action in the file: every problem at start.
    std::fs::write(
        &config,
        r#"
kinds:
  - resource: {group: kubevirt.io, kind: VirtualMachine}
    actions:
      stop:
        checks:
          - {when: {exists: .spec.notAField}, code: 409, message: "{{ bogus() }}"}
        steps:
          - patch: {of: nothing, merge: {spec: {alsoNotAField: 1}}}
"#,
    )
    .unwrap();
    let stderr = refused_config(dir.path(), &config);
    for want in [".spec.notAField field \"notAField\" is not declared", "no function bogus()"] {
        assert!(stderr.contains(want), "missing {want:?} in {stderr}");
    }
    assert!(stderr.contains("action stop"), "{stderr}");
}
