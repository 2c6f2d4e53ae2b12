//! The simulated runtime beyond VMs: migrations, replica sets and CDI's kinds move as KubeVirt
//! and CDI move them, each sequence seen in order by a watch; failures on request
//! (`simulate.virt-apiserver.io/fail`) give the failed statuses.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{eventually, found, sequence, TestServer};

const KV: &str = "/apis/kubevirt.io/v1/namespaces";
const CDI: &str = "/apis/cdi.kubevirt.io/v1beta1";
const FAIL: &str = "simulate.virt-apiserver.io/fail";

fn simulating(speed: &str) -> TestServer {
    crate::common::simulating(&["--simulate-speed", speed, "--simulate-seed", "7"])
}

fn create(server: &TestServer, path: &str, body: Value) {
    let r = server.post(path, &body);
    assert_eq!(r.status, 201, "{}", r.text());
}

fn running_vm(server: &TestServer, ns: &str, name: &str) -> Value {
    create(
        server,
        &format!("{KV}/{ns}/virtualmachines"),
        json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
               "metadata": {"name": name},
               "spec": {"runStrategy": "Always", "template": {"spec": {"domain": {"devices": {}}}}}}),
    );
    eventually(Duration::from_secs(20), || {
        found(server, &format!("{KV}/{ns}/virtualmachineinstances/{name}"))
            .filter(|v| v["status"]["phase"] == "Running")
    })
}

fn migration(ns: &str, name: &str, vmi: &str, fail: bool) -> Value {
    let mut m = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
                       "metadata": {"name": name, "namespace": ns}, "spec": {"vmiName": vmi}});
    if fail {
        m["metadata"]["annotations"] = json!({FAIL: "migration"});
    }
    m
}

#[test]
fn a_migration_goes_through_its_phases_and_moves_the_vmi() {
    // Speed 1: the VM's status catches the Migrating window.
    let server = simulating("1");
    server.namespace("mig");
    let before = running_vm(&server, "mig", "vm1");
    let source = before["status"]["nodeName"].as_str().unwrap().to_string();
    let vms = server.watch(&format!("{KV}/mig/virtualmachines?watch=true"));
    let watch = server.watch(&format!("{KV}/mig/virtualmachineinstancemigrations?watch=true"));
    create(
        &server,
        &format!("{KV}/mig/virtualmachineinstancemigrations"),
        migration("mig", "m1", "vm1", false),
    );
    let phases = sequence(&watch, "m1", "/status/phase", &["Succeeded", "Failed"]);
    assert_eq!(
        phases,
        [
            "",
            "Pending",
            "Scheduling",
            "Scheduled",
            "PreparingTarget",
            "TargetReady",
            "Running",
            "Succeeded"
        ]
    );
    let vmi =
        found(&server, "/apis/kubevirt.io/v1/namespaces/mig/virtualmachineinstances/vm1").unwrap();
    let target = vmi["status"]["nodeName"].as_str().unwrap();
    assert_ne!(target, source);
    assert_eq!(vmi["metadata"]["labels"]["kubevirt.io/nodeName"], target);
    assert!(
        vmi["metadata"]["labels"].get("kubevirt.io/migrationTargetNodeName").is_none(),
        "{vmi}"
    );
    let state = &vmi["status"]["migrationState"];
    assert_eq!(state["sourceNode"], source.as_str());
    assert_eq!(state["targetNode"], target);
    assert_eq!(state["completed"], true);
    assert_eq!(state["mode"], "PreCopy");
    assert!(state["targetPod"].as_str().unwrap().starts_with("virt-launcher-vm1-"), "{state}");
    assert!(state["startTimestamp"].is_string() && state["endTimestamp"].is_string(), "{state}");
    // The target pod (KV migration.go createTargetPod): the launch template with KubeVirt's
    // migration label and annotation and the anti-affinity that keeps it off the VMI's pods'
    // nodes, run on the target node; the source pod completed; both are the VMI's active pods.
    let pods = "/api/v1/namespaces/mig/pods";
    let target_pod = server.get_json(&format!("{pods}/{}", state["targetPod"].as_str().unwrap()));
    assert_eq!(target_pod["spec"]["nodeName"], target);
    let labels = &target_pod["metadata"]["labels"];
    assert_eq!(labels["kubevirt.io/migrationJobUID"], state["migrationUid"]);
    assert_eq!(
        (labels["kubevirt.io"].as_str(), labels["vm.kubevirt.io/name"].as_str()),
        (Some("virt-launcher"), Some("vm1"))
    );
    assert_eq!(target_pod["metadata"]["annotations"]["kubevirt.io/migrationJobName"], "m1");
    assert_eq!(
        target_pod["spec"]["affinity"]["podAntiAffinity"]
            ["requiredDuringSchedulingIgnoredDuringExecution"],
        json!([{"labelSelector": {"matchLabels": {"kubevirt.io/created-by": vmi["metadata"]["uid"]}},
                "topologyKey": "kubernetes.io/hostname"}])
    );
    let source_pods = eventually(Duration::from_secs(10), || {
        let list = found(&server, &format!("{pods}?fieldSelector=spec.nodeName%3D{source}"))?;
        let items = list["items"].as_array()?.clone();
        items.iter().all(|p| p["status"]["phase"] == "Succeeded").then_some(items)
    });
    assert_eq!(source_pods.len(), 1);
    let active = eventually(Duration::from_secs(10), || {
        let vmi =
            found(&server, "/apis/kubevirt.io/v1/namespaces/mig/virtualmachineinstances/vm1")?;
        let active = vmi["status"]["activePods"].as_object()?.clone();
        (active.len() == 2).then_some(active)
    });
    assert_eq!(active[target_pod["metadata"]["uid"].as_str().unwrap()], target);
    assert_eq!(active[source_pods[0]["metadata"]["uid"].as_str().unwrap()], source.as_str());
    let m = eventually(Duration::from_secs(10), || {
        found(&server, &format!("{KV}/mig/virtualmachineinstancemigrations/m1"))
            .filter(|m| m["metadata"].get("finalizers").is_none())
    });
    assert_eq!(m["metadata"]["labels"]["kubevirt.io/vmi-name"], "vm1");
    assert_eq!(state["migrationUid"], m["metadata"]["uid"]);
    assert_eq!(m["status"]["migrationState"]["targetNode"], target);
    let recorded: Vec<&str> = m["status"]["phaseTransitionTimestamps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["phase"].as_str())
        .collect();
    assert_eq!(recorded, phases[1..]);
    // The VM showed Migrating while it ran, and Running again after.
    let statuses = sequence(&vms, "vm1", "/status/printableStatus", &["Migrating"]);
    assert_eq!(statuses.last().unwrap(), "Migrating");
    eventually(Duration::from_secs(10), || {
        found(&server, &format!("{KV}/mig/virtualmachines/vm1"))
            .filter(|vm| vm["status"]["printableStatus"] == "Running")
    });
}

#[test]
fn migrations_fail_on_request_and_without_a_running_vmi() {
    let server = simulating("0");
    server.namespace("migfail");
    let before = running_vm(&server, "migfail", "vm1");
    let watch = server.watch(&format!("{KV}/migfail/virtualmachineinstancemigrations?watch=true"));
    let path = format!("{KV}/migfail/virtualmachineinstancemigrations");
    create(&server, &path, migration("migfail", "bad", "vm1", true));
    let phases = sequence(&watch, "bad", "/status/phase", &["Succeeded", "Failed"]);
    assert_eq!(phases.last().unwrap(), "Failed");
    assert!(phases.contains(&"Running".to_string()), "{phases:?}");
    let vmi = found(&server, &format!("{KV}/migfail/virtualmachineinstances/vm1")).unwrap();
    assert_eq!(vmi["status"]["nodeName"], before["status"]["nodeName"]);
    assert_eq!(vmi["status"]["migrationState"]["failed"], true);
    assert_eq!(vmi["status"]["migrationState"]["completed"], true);
    // The failed migration's target pod goes; the VMI's pod stays.
    let target = vmi["status"]["migrationState"]["targetPod"].as_str().unwrap();
    eventually(Duration::from_secs(10), || {
        (server.get(&format!("/api/v1/namespaces/migfail/pods/{target}")).status == 404)
            .then_some(())
    });
    // No such VMI: Failed, with KubeVirt's Event.
    create(&server, &path, migration("migfail", "ghost", "nope", false));
    let phases = sequence(&watch, "ghost", "/status/phase", &["Succeeded", "Failed"]);
    assert_eq!(phases, ["", "Failed"]);
    let events = eventually(Duration::from_secs(10), || {
        let list = found(&server, "/api/v1/namespaces/migfail/events")?;
        let items = list["items"].as_array()?.clone();
        let found =
            items.iter().any(|e| e["message"] == "Migration failed because vmi does not exist.");
        found.then_some(items)
    });
    assert!(events.iter().any(|e| e["reason"] == "FailedMigration" && e["type"] == "Warning"));
    assert!(events.iter().any(|e| e["message"] == "source node reported migration failed"));
}

/// With one node the target pod finds none (its anti-affinity keeps it off the VMI's node):
/// it stays Pending, Unschedulable, and the migration in Scheduling, as on a real cluster.
#[test]
fn a_migration_with_no_other_node_waits_in_scheduling() {
    let server = crate::common::simulating(&["--simulate-speed", "0", "--simulate-nodes", "1"]);
    server.namespace("lone");
    running_vm(&server, "lone", "vm1");
    let path = format!("{KV}/lone/virtualmachineinstancemigrations");
    create(&server, &path, migration("lone", "m1", "vm1", false));
    let pod = eventually(Duration::from_secs(10), || {
        let list = found(
            &server,
            "/api/v1/namespaces/lone/pods?labelSelector=kubevirt.io%2FmigrationJobUID",
        )?;
        let pod = list["items"].as_array()?.first()?.clone();
        let scheduled = pod["status"]["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "PodScheduled")?
            .clone();
        (scheduled["reason"] == "Unschedulable").then_some((pod, scheduled))
    });
    let (pod, scheduled) = pod;
    assert!(pod["spec"].get("nodeName").is_none(), "{pod}");
    assert_eq!(pod["status"]["phase"], "Pending");
    let message = scheduled["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules."
        ),
        "{message}"
    );
    std::thread::sleep(Duration::from_millis(500));
    let m = found(&server, &format!("{path}/m1")).unwrap();
    assert_eq!(m["status"]["phase"], "Scheduling");
}

fn replica_set(replicas: i64) -> Value {
    json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceReplicaSet",
           "metadata": {"name": "rs"},
           "spec": {"replicas": replicas,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"domain": {"devices": {}}}}}})
}

fn rs_vmis(server: &TestServer, ns: &str) -> Vec<Value> {
    let list = found(server, &format!("{KV}/{ns}/virtualmachineinstances")).unwrap();
    list["items"].as_array().unwrap().clone()
}

#[test]
fn a_replica_set_scales_counts_ready_pauses_and_scales_down() {
    let server = simulating("0");
    server.namespace("rs");
    let path = format!("{KV}/rs/virtualmachineinstancereplicasets");
    create(&server, &path, replica_set(3));
    let rs = eventually(Duration::from_secs(20), || {
        found(&server, &format!("{path}/rs")).filter(|rs| rs["status"]["readyReplicas"] == 3)
    });
    assert_eq!(rs["status"]["replicas"], 3);
    assert_eq!(rs["status"]["labelSelector"], "app=web");
    let vmis = rs_vmis(&server, "rs");
    assert_eq!(vmis.len(), 3);
    for vmi in &vmis {
        let name = vmi["metadata"]["name"].as_str().unwrap();
        assert!(name.starts_with("rs") && name.len() == 7, "{name}");
        assert_eq!(vmi["metadata"]["generateName"], "rs");
        assert_eq!(vmi["metadata"]["labels"]["app"], "web");
        assert_eq!(vmi["metadata"]["ownerReferences"][0]["uid"], rs["metadata"]["uid"]);
        assert_eq!(vmi["status"]["phase"], "Running");
    }
    // Paused: the condition, and no scaling.
    let merge = "application/merge-patch+json";
    let r = server.patch(
        &format!("{path}/rs"),
        merge,
        &json!({"spec": {"paused": true, "replicas": 1}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let rs = eventually(Duration::from_secs(10), || {
        found(&server, &format!("{path}/rs"))
            .filter(|rs| rs["status"]["conditions"][0]["type"] == "ReplicaPaused")
    });
    let cond = &rs["status"]["conditions"][0];
    assert_eq!(
        (&cond["status"], &cond["reason"], &cond["message"]),
        (&json!("True"), &json!("Paused"), &json!("Controller got paused"))
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(rs_vmis(&server, "rs").len(), 3);
    // Resumed: down to one; the condition goes.
    let r = server.patch(&format!("{path}/rs"), merge, &json!({"spec": {"paused": false}}));
    assert_eq!(r.status, 200, "{}", r.text());
    let rs = eventually(Duration::from_secs(20), || {
        let rs = found(&server, &format!("{path}/rs"))?;
        (rs_vmis(&server, "rs").len() == 1
            && rs["status"]["replicas"] == 1
            && rs["status"].get("conditions").is_none())
        .then_some(rs)
    });
    assert_eq!(rs["status"]["readyReplicas"], 1);
}

fn data_volume(name: &str, fail: bool) -> Value {
    let mut dv = json!({"apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume",
                        "metadata": {"name": name},
                        "spec": {"source": {"http": {"url": "https://example.com/disk.img"}},
                                 "storage": {"resources": {"requests": {"storage": "1Gi"}}}}});
    if fail {
        dv["metadata"]["annotations"] = json!({FAIL: "import"});
    }
    dv
}

#[test]
fn a_data_volume_imports_with_progress_and_kubes_conditions() {
    let server = simulating("0.2");
    server.namespace("cdi");
    let path = format!("{CDI}/namespaces/cdi/datavolumes");
    let watch = server.watch(&format!("{path}?watch=true"));
    create(&server, &path, data_volume("disk", false));
    let mut phases: Vec<String> = Vec::new();
    let mut progress: Vec<String> = Vec::new();
    while phases.last().is_none_or(|p| p != "Succeeded") {
        let ev = watch.expect();
        let status = &ev["object"]["status"];
        let phase = status["phase"].as_str().unwrap_or("").to_string();
        if phases.last() != Some(&phase) {
            phases.push(phase);
        }
        if let Some(p) = status["progress"].as_str() {
            if progress.last().map(String::as_str) != Some(p) {
                progress.push(p.to_string());
            }
        }
    }
    assert_eq!(
        phases,
        ["", "Pending", "PVCBound", "ImportScheduled", "ImportInProgress", "Succeeded"]
    );
    assert_eq!(progress.first().unwrap(), "N/A");
    assert_eq!(progress.last().unwrap(), "100.0%");
    let readings = &progress[1..progress.len() - 1];
    assert!(readings.len() >= 2, "{progress:?}");
    for r in readings {
        let (int, frac) = r.strip_suffix('%').unwrap().split_once('.').unwrap();
        assert!(int.parse::<u32>().unwrap() < 100 && frac.len() == 2, "{r}");
    }
    let dv = found(&server, &format!("{path}/disk")).unwrap();
    assert_eq!(dv["status"]["claimName"], "disk");
    let cond = |t: &str| {
        dv["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == t)
            .unwrap()
            .clone()
    };
    assert_eq!(
        (cond("Bound")["status"].clone(), cond("Bound")["reason"].clone()),
        (json!("True"), json!("Bound"))
    );
    assert_eq!(cond("Bound")["message"], "PVC disk Bound");
    assert_eq!(cond("Ready")["status"], "True");
    assert_eq!(cond("Running")["status"], "False");
    assert_eq!(cond("Running")["reason"], "Completed");
    assert_eq!(cond("Running")["message"], "Import Complete");

    // A DataSource on it is ready; a DataImportCron is up to date; CDI deployed; its config.
    create(
        &server,
        &format!("{CDI}/namespaces/cdi/datasources"),
        json!({
        "apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataSource", "metadata": {"name": "ds"},
        "spec": {"source": {"pvc": {"name": "disk", "namespace": "cdi"}}}}),
    );
    let ds = eventually(Duration::from_secs(10), || {
        found(&server, &format!("{CDI}/namespaces/cdi/datasources/ds"))
            .filter(|d| d["status"]["conditions"][0]["status"] == "True")
    });
    assert_eq!(ds["status"]["conditions"][0]["message"], "DataSource is ready to be consumed");
    assert_eq!(ds["status"]["source"]["pvc"]["name"], "disk");
    create(
        &server,
        &format!("{CDI}/namespaces/cdi/dataimportcrons"),
        json!({
        "apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataImportCron", "metadata": {"name": "cron"},
        "spec": {"schedule": "0 */12 * * *", "managedDataSource": "fedora",
                 "template": {"spec": {"source": {"registry": {"url": "docker://quay.io/containerdisks/fedora"}}}}}}),
    );
    let cron = eventually(Duration::from_secs(10), || {
        found(&server, &format!("{CDI}/namespaces/cdi/dataimportcrons/cron"))
            .filter(|c| c["status"].get("conditions").is_some())
    });
    assert_eq!(cron["status"]["conditions"][1]["type"], "UpToDate");
    assert_eq!(cron["status"]["conditions"][1]["message"], "Latest import is up to date");
    create(
        &server,
        &format!("{CDI}/namespaces/cdi/cdis"),
        json!({
        "apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "CDI", "metadata": {"name": "cdi"}, "spec": {}}),
    );
    let cdi = eventually(Duration::from_secs(10), || {
        found(&server, &format!("{CDI}/namespaces/cdi/cdis/cdi"))
            .filter(|c| c["status"]["phase"] == "Deployed")
    });
    assert_eq!(cdi["status"]["conditions"][0]["type"], "Available");
    assert_eq!(cdi["status"]["conditions"][0]["status"], "True");
    create(
        &server,
        &format!("{CDI}/namespaces/cdi/cdiconfigs"),
        json!({
        "apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "CDIConfig", "metadata": {"name": "config"}, "spec": {}}),
    );
    let cfg = eventually(Duration::from_secs(10), || {
        found(&server, &format!("{CDI}/namespaces/cdi/cdiconfigs/config"))
            .filter(|c| c["status"].get("uploadProxyURL").is_some())
    });
    assert_eq!(cfg["status"]["filesystemOverhead"]["global"], "0.055");
}

#[test]
fn an_import_fails_on_request() {
    let server = simulating("0.2");
    server.namespace("cdifail");
    let path = format!("{CDI}/namespaces/cdifail/datavolumes");
    let watch = server.watch(&format!("{path}?watch=true"));
    create(&server, &path, data_volume("bad", true));
    let phases = sequence(&watch, "bad", "/status/phase", &["Succeeded", "Failed"]);
    assert_eq!(
        phases,
        ["", "Pending", "PVCBound", "ImportScheduled", "ImportInProgress", "Failed"]
    );
    let dv = found(&server, &format!("{path}/bad")).unwrap();
    assert_eq!(dv["status"]["progress"], "N/A");
    assert_eq!(dv["status"]["restartCount"], 1);
    let running = dv["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Running")
        .unwrap()
        .clone();
    assert_eq!(running["reason"], "Error");
    // Nothing moves it on.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(found(&server, &format!("{path}/bad")).unwrap()["status"]["phase"], "Failed");
}
