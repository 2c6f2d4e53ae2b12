//! The simulated runtime's storage kinds: snapshots with their contents, exports with their
//! token Secrets and links, clones through their temporary snapshot, each sequence seen in order
//! by a watch; deadlines, expiries and failures on request (`simulate.virt-apiserver.io/fail`).

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{eventually, found, sequence, TestServer};

const KV: &str = "/apis/kubevirt.io/v1/namespaces";
const SNAP: &str = "/apis/snapshot.kubevirt.io/v1alpha1/namespaces";
const EXPORT: &str = "/apis/export.kubevirt.io/v1alpha1/namespaces";
const CLONES: &str = "/apis/clone.kubevirt.io/v1alpha1/virtualmachineclones";
const FAIL: &str = "simulate.virt-apiserver.io/fail";

fn simulating() -> TestServer {
    crate::common::simulating(&["--simulate-speed", "0", "--simulate-seed", "7"])
}

fn create(server: &TestServer, path: &str, body: Value) -> Value {
    let r = server.post(path, &body);
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

/// A VM with a DataVolume disk (the DataVolume created first: a VMI waits for a missing one;
/// its import goes on while the VM's lifecycle does),
/// a container disk and a cloud-init volume, and one interface.
fn vm(server: &TestServer, ns: &str, name: &str, run_strategy: &str, disks: &[&str]) -> Value {
    if disks.contains(&"dv") {
        let dv = json!({"apiVersion": "cdi.kubevirt.io/v1beta1", "kind": "DataVolume",
                        "metadata": {"name": format!("{name}-dv")},
                        "spec": {"source": {"blank": {}}, "storage": {"resources": {"requests": {"storage": "1Gi"}}}}});
        let dvs = format!("/apis/cdi.kubevirt.io/v1beta1/namespaces/{ns}/datavolumes");
        create(server, &dvs, dv);
    }
    let mut volumes =
        vec![json!({"name": "cloudinit", "cloudInitNoCloud": {"userData": "#cloud-config"}})];
    for d in disks {
        volumes.push(match *d {
            "dv" => json!({"name": "rootdisk", "dataVolume": {"name": format!("{name}-dv")}}),
            "pvc" => json!({"name": "data", "persistentVolumeClaim": {"claimName": "data-pvc"}}),
            _ => json!({"name": "containerdisk", "containerDisk": {"image": "quay.io/containerdisks/fedora"}}),
        });
    }
    create(
        server,
        &format!("{KV}/{ns}/virtualmachines"),
        json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
               "metadata": {"name": name, "labels": {"app": name}},
               "spec": {"runStrategy": run_strategy, "template": {"spec": {
                   "domain": {"devices": {"interfaces": [
                       {"name": "default", "masquerade": {}, "macAddress": "02:00:00:00:00:01"}]}},
                   "networks": [{"name": "default", "pod": {}}],
                   "volumes": volumes}}}}),
    )
}

fn snapshot(ns: &str, name: &str, vm: &str, deadline: Option<&str>, fail: bool) -> Value {
    let mut s = json!({"apiVersion": "snapshot.kubevirt.io/v1alpha1", "kind": "VirtualMachineSnapshot",
                       "metadata": {"name": name, "namespace": ns},
                       "spec": {"source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": vm}}});
    if let Some(d) = deadline {
        s["spec"]["failureDeadline"] = json!(d);
    }
    if fail {
        s["metadata"]["annotations"] = json!({FAIL: "snapshot"});
    }
    s
}

fn condition<'a>(obj: &'a Value, type_: &str) -> &'a Value {
    let conds = obj["status"]["conditions"].as_array().map(Vec::as_slice).unwrap_or_default();
    conds.iter().find(|c| c["type"] == type_).unwrap_or(&Value::Null)
}

#[test]
fn a_snapshot_locks_its_vm_creates_its_content_and_succeeds() {
    let server = simulating();
    server.namespace("snap");
    let vm = vm(&server, "snap", "vm1", "Halted", &["dv", "pvc", "containerdisk"]);
    let vms = server.watch(&format!("{KV}/snap/virtualmachines?watch=true"));
    let watch = server.watch(&format!("{SNAP}/snap/virtualmachinesnapshots?watch=true"));
    let snap = create(
        &server,
        &format!("{SNAP}/snap/virtualmachinesnapshots"),
        snapshot("snap", "s1", "vm1", None, false),
    );
    let phases = sequence(&watch, "s1", "/status/phase", &["Succeeded", "Failed"]);
    assert_eq!(phases, ["", "InProgress", "Succeeded"]);
    // The VM was locked by the snapshot, then unlocked.
    let locks = sequence(&vms, "vm1", "/status/snapshotInProgress", &["s1"]);
    assert_eq!(locks.last().unwrap(), "s1");
    let vm_now = eventually(Duration::from_secs(30), || {
        found(&server, &format!("{KV}/snap/virtualmachines/vm1"))
            .filter(|v| v["status"].get("snapshotInProgress").is_none())
            // The lock's status and its finalizer go in two writes.
            .filter(|v| {
                let fins = v["metadata"]["finalizers"].as_array().cloned().unwrap_or_default();
                !fins.contains(&json!("snapshot.kubevirt.io/snapshot-source-protection"))
            })
    });
    assert!(vm_now["status"].get("snapshotInProgress").is_none(), "{vm_now}");

    let uid = snap["metadata"]["uid"].as_str().unwrap();
    let content_name = format!("vmsnapshot-content-{uid}");
    let s = found(&server, &format!("{SNAP}/snap/virtualmachinesnapshots/s1")).unwrap();
    assert_eq!(s["metadata"]["finalizers"], json!(["snapshot.kubevirt.io/vmsnapshot-protection"]));
    assert_eq!(s["status"]["readyToUse"], true);
    assert_eq!(s["status"]["sourceUID"], vm["metadata"]["uid"]);
    assert_eq!(s["status"]["virtualMachineSnapshotContentName"], content_name.as_str());
    assert!(s["status"]["creationTime"].is_string(), "{s}");
    // Offline: no indications.
    assert!(s["status"].get("indications").is_none(), "{s}");
    let progressing = condition(&s, "Progressing");
    assert_eq!(progressing["status"], "False");
    assert_eq!(progressing["reason"], "Operation complete");
    let ready = condition(&s, "Ready");
    assert_eq!((&ready["status"], &ready["reason"]), (&json!("True"), &json!("Ready")));
    assert_eq!(s["status"]["snapshotVolumes"]["includedVolumes"], json!(["rootdisk", "data"]));
    assert_eq!(
        s["status"]["snapshotVolumes"]["excludedVolumes"],
        json!(["cloudinit", "containerdisk"])
    );

    let c = found(&server, &format!("{SNAP}/snap/virtualmachinesnapshotcontents/{content_name}"))
        .unwrap();
    assert_eq!(
        c["metadata"]["finalizers"],
        json!(["snapshot.kubevirt.io/vmsnapshotcontent-protection"])
    );
    assert_eq!(c["spec"]["virtualMachineSnapshotName"], "s1");
    let source = &c["spec"]["source"]["virtualMachine"];
    assert_eq!(source["metadata"]["uid"], vm["metadata"]["uid"]);
    assert_eq!(source["spec"]["template"], vm["spec"]["template"]);
    let backups = c["spec"]["volumeBackups"].as_array().unwrap();
    let names: Vec<_> = backups.iter().map(|b| b["volumeName"].as_str().unwrap()).collect();
    assert_eq!(names, ["rootdisk", "data"]);
    assert_eq!(backups[0]["persistentVolumeClaim"]["metadata"]["name"], "vm1-dv");
    assert_eq!(backups[1]["persistentVolumeClaim"]["metadata"]["name"], "data-pvc");
    assert_eq!(backups[1]["volumeSnapshotName"], format!("vmsnapshot-{uid}-volume-data"));
    assert_eq!(c["status"]["readyToUse"], true);
    assert_eq!(c["status"]["volumeSnapshotStatus"].as_array().unwrap().len(), 2);

    let events = server.get_json("/api/v1/namespaces/snap/events");
    let created = events["items"].as_array().unwrap().iter().any(|e| {
        e["reason"] == "SuccessfulVirtualMachineSnapshotContentCreate"
            && e["message"]
                == format!("Successfully created VirtualMachineSnapshotContent {content_name}")
            && e["source"]["component"] == "snapshot-controller"
    });
    assert!(created, "{events}");

    // Deleted: the content goes with it, then the snapshot.
    assert_eq!(server.delete(&format!("{SNAP}/snap/virtualmachinesnapshots/s1")).status, 200);
    eventually(Duration::from_secs(10), || {
        let gone = |p: String| server.get(&p).status == 404;
        (gone(format!("{SNAP}/snap/virtualmachinesnapshots/s1"))
            && gone(format!("{SNAP}/snap/virtualmachinesnapshotcontents/{content_name}")))
        .then_some(())
    });
}

#[test]
fn a_running_vms_snapshot_is_online() {
    let server = simulating();
    server.namespace("online");
    vm(&server, "online", "vm1", "Always", &["dv"]);
    eventually(Duration::from_secs(20), || {
        found(&server, &format!("{KV}/online/virtualmachineinstances/vm1"))
            .filter(|v| v["status"]["phase"] == "Running")
            .filter(|v| {
                let conditions = v["status"]["conditions"].as_array().cloned().unwrap_or_default();
                conditions.iter().any(|c| c["type"] == "AgentConnected" && c["status"] == "True")
            })
    });
    create(
        &server,
        &format!("{SNAP}/online/virtualmachinesnapshots"),
        snapshot("online", "s1", "vm1", None, false),
    );
    let s = eventually(Duration::from_secs(10), || {
        found(&server, &format!("{SNAP}/online/virtualmachinesnapshots/s1"))
            .filter(|s| s["status"]["phase"] == "Succeeded")
    });
    // The simulated guest runs an agent: KubeVirt indicates a consistent, agent-frozen snapshot.
    assert_eq!(s["status"]["indications"], json!(["GuestAgent", "Online"]));
}

#[test]
fn a_snapshot_without_its_source_or_past_its_deadline_fails() {
    let server = simulating();
    server.namespace("late");
    vm(&server, "late", "vm1", "Halted", &["dv"]);
    let watch = server.watch(&format!("{SNAP}/late/virtualmachinesnapshots?watch=true"));
    let vm_watch = server.watch(&format!("{KV}/late/virtualmachines?watch=true"));
    create(
        &server,
        &format!("{SNAP}/late/virtualmachinesnapshots"),
        snapshot("late", "ghost", "nope", Some("2s"), false),
    );
    create(
        &server,
        &format!("{SNAP}/late/virtualmachinesnapshots"),
        snapshot("late", "stuck", "vm1", Some("2s"), true),
    );
    // Both states before the deadline are transient (2 s), so they are read from the watches, which
    // see every write, not polled.
    let mut history: Vec<Value> = Vec::new();
    let failed = |h: &[Value], name: &str| {
        h.iter().any(|e| {
            e["object"]["metadata"]["name"] == name && e["object"]["status"]["phase"] == "Failed"
        })
    };
    while !(failed(&history, "ghost") && failed(&history, "stuck")) {
        history.push(watch.expect());
    }
    let of = |name: &str| -> Vec<&Value> {
        history
            .iter()
            .filter(|e| e["object"]["metadata"]["name"] == name)
            .map(|e| &e["object"])
            .collect()
    };
    let missing = of("ghost")
        .into_iter()
        .find(|s| condition(s, "Progressing")["status"] == "False")
        .expect("the sourceless snapshot stops progressing before its deadline");
    assert_eq!(missing["status"]["phase"], "InProgress");
    assert_eq!(condition(missing, "Progressing")["reason"], "Source does not exist");
    assert_eq!(condition(missing, "Ready")["reason"], "Not ready");
    // The failure on request keeps the volume snapshots from becoming ready: the VM stays locked.
    first_on(&vm_watch, |v| {
        v["status"]["snapshotInProgress"] == "stuck"
            && v["metadata"]["finalizers"].as_array().is_some_and(|f| {
                f.contains(&json!("snapshot.kubevirt.io/snapshot-source-protection"))
            })
    });
    for name in ["ghost", "stuck"] {
        let phases: Vec<&str> =
            of(name).iter().filter_map(|s| s["status"]["phase"].as_str()).collect();
        assert_eq!(phases.last().copied(), Some("Failed"), "{name}: {phases:?}");
        assert!(!phases.contains(&"Succeeded"), "{name}: {phases:?}");
        let s = found(&server, &format!("{SNAP}/late/virtualmachinesnapshots/{name}")).unwrap();
        let failure = condition(&s, "Failure");
        assert_eq!(failure["status"], "True");
        assert_eq!(failure["reason"], "snapshot deadline exceeded");
        assert_eq!(condition(&s, "Progressing")["reason"], "Operation failed");
        assert_eq!(s["status"]["readyToUse"], false);
    }
    // Failed: the VM is unlocked.
    first_on(&vm_watch, |v| v["status"].get("snapshotInProgress").is_none());
}

/// The first object on `watch` that satisfies `ok`.
fn first_on(watch: &crate::common::Watch, ok: impl Fn(&Value) -> bool) -> Value {
    loop {
        let ev = watch.expect();
        if ok(&ev["object"]) {
            return ev["object"].clone();
        }
    }
}

fn export(ns: &str, name: &str, vm: &str, ttl: Option<&str>) -> Value {
    let mut e = json!({"apiVersion": "export.kubevirt.io/v1alpha1", "kind": "VirtualMachineExport",
                       "metadata": {"name": name, "namespace": ns},
                       "spec": {"source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": vm}}});
    if let Some(t) = ttl {
        e["spec"]["ttlDuration"] = json!(t);
    }
    e
}

fn seconds(t: &Value) -> i64 {
    virt_apiserver::meta::parse_rfc3339(t.as_str().unwrap()).unwrap()
}

#[test]
fn an_export_becomes_ready_with_links_and_an_owned_token_secret() {
    let server = simulating();
    server.namespace("exp");
    vm(&server, "exp", "vm1", "Halted", &["dv", "containerdisk"]);
    let watch = server.watch(&format!("{EXPORT}/exp/virtualmachineexports?watch=true"));
    let created = create(
        &server,
        &format!("{EXPORT}/exp/virtualmachineexports"),
        export("exp", "e1", "vm1", None),
    );
    let phases = sequence(&watch, "e1", "/status/phase", &["Ready", "Skipped"]);
    assert_eq!(phases, ["", "Pending", "Ready"]);
    let e = found(&server, &format!("{EXPORT}/exp/virtualmachineexports/e1")).unwrap();
    let st = &e["status"];
    assert_eq!(st["tokenSecretRef"], "export-token-e1");
    assert_eq!(st["serviceName"], "virt-export-e1");
    assert_eq!(st["virtualMachineName"], "vm1");
    assert_eq!(
        seconds(&st["ttlExpirationTime"]) - seconds(&created["metadata"]["creationTimestamp"]),
        7200
    );
    let ready = condition(&e, "Ready");
    assert_eq!((&ready["status"], &ready["reason"]), (&json!("True"), &json!("PodReady")));
    let host = "https://virt-export-e1.exp.svc";
    assert_eq!(
        st["links"]["internal"]["volumes"],
        json!([{"name": "vm1-dv", "formats": [
            {"format": "raw", "url": format!("{host}/volumes/vm1-dv/disk.img")},
            {"format": "gzip", "url": format!("{host}/volumes/vm1-dv/disk.img.gz")}]}])
    );
    assert_eq!(
        st["links"]["internal"]["manifests"],
        json!([{"type": "all", "url": format!("{host}/internal/manifests/all")},
               {"type": "auth-header-secret", "url": format!("{host}/internal/manifests/secret")}])
    );
    assert!(st["links"].get("external").is_none(), "{st}");

    let secret = found(&server, "/api/v1/namespaces/exp/secrets/export-token-e1").unwrap();
    let owner = &secret["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "VirtualMachineExport");
    assert_eq!(owner["uid"], created["metadata"]["uid"]);
    assert_eq!(owner["controller"], true);
    let token = secret["data"]["token"].as_str().expect("a token");
    assert!(token.len() >= 40, "{secret}");
}

/// The CA certificate a client reads from a link's `cert` (as `virtctl vmexport download`
/// trusts it): one PEM certificate, self-signed, a CA, named as virt-operator names the export
/// CA (`export.kubevirt.io@<unix seconds>`); its `notBefore` and `notAfter`.
fn export_ca(pem: &str) -> (i64, i64) {
    let (rest, block) = x509_parser::pem::parse_x509_pem(pem.as_bytes()).expect("a PEM block");
    assert!(rest.iter().all(u8::is_ascii_whitespace), "one certificate: {pem}");
    assert_eq!(block.label, "CERTIFICATE");
    let cert = block.parse_x509().expect("an X.509 certificate");
    assert!(cert.is_ca(), "{pem}");
    let constraints = cert.basic_constraints().unwrap().expect("basic constraints");
    assert!(constraints.critical && constraints.value.ca);
    let usage = cert.key_usage().unwrap().expect("key usage");
    assert!(usage.value.key_cert_sign() && usage.value.digital_signature());
    assert_eq!(cert.subject().as_raw(), cert.issuer().as_raw(), "self-signed");
    let cn = cert.subject().iter_common_name().next().expect("a common name");
    let cn = cn.as_str().unwrap();
    let at: i64 = cn.strip_prefix("export.kubevirt.io@").expect(cn).parse().expect(cn);
    let validity = cert.validity();
    assert_eq!(validity.not_before.timestamp(), at);
    // A client's TLS stack takes it as a root to verify the export server against.
    let der = rustls_pki_types::CertificateDer::from(block.contents.clone());
    rustls::RootCertStore::empty().add(der).expect("a trust anchor");
    (validity.not_before.timestamp(), validity.not_after.timestamp())
}

#[test]
fn an_exports_internal_link_carries_its_own_ca_certificate_made_once() {
    let server = simulating();
    server.namespace("certs");
    vm(&server, "certs", "vm1", "Halted", &["pvc"]);
    vm(&server, "certs", "vm2", "Halted", &["dv"]);
    let watch = server.watch(&format!("{EXPORT}/certs/virtualmachineexports?watch=true"));
    let path = format!("{EXPORT}/certs/virtualmachineexports");
    create(&server, &path, export("certs", "e1", "vm1", None));
    create(&server, &path, export("certs", "e2", "vm2", Some("30m")));
    let ready = |name: &str| {
        eventually(Duration::from_secs(10), || {
            found(&server, &format!("{path}/{name}")).filter(|e| e["status"]["phase"] == "Ready")
        })
    };
    let mut certs = Vec::new();
    for name in ["e1", "e2"] {
        let e = ready(name);
        let cert = e["status"]["links"]["internal"]["cert"].as_str();
        let pem = cert.unwrap_or_else(|| panic!("no cert in {e}"));
        let (from, until) = export_ca(pem);
        // Made when the export became Ready, valid until it expires.
        assert_eq!(from, seconds(&condition(&e, "Ready")["lastTransitionTime"]), "{name}");
        assert_eq!(until, seconds(&e["status"]["ttlExpirationTime"]), "{name}");
        certs.push(pem.to_string());
    }
    assert_ne!(certs[0], certs[1], "each export has a CA of its own");
    // Once: a later change of the export evaluates it again, but makes no new certificate.
    let label = json!({"metadata": {"labels": {"touched": "yes"}}});
    let r = server.patch(&format!("{path}/e1"), "application/merge-patch+json", &label);
    assert_eq!(r.status, 200, "{}", r.text());
    let (mut seen, mut touched): (Vec<(String, String)>, bool) = (Vec::new(), false);
    while let Some(ev) = watch.next(Duration::from_secs(2)) {
        let obj = &ev["object"];
        touched |= obj["metadata"]["labels"]["touched"] == "yes";
        let Some(cert) = obj["status"]["links"]["internal"]["cert"].as_str() else { continue };
        let seen_one = (obj["metadata"]["name"].as_str().unwrap().to_string(), cert.to_string());
        if !seen.contains(&seen_one) {
            seen.push(seen_one);
        }
    }
    assert!(touched, "the label's event");
    let names: Vec<&str> = seen.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names.iter().filter(|n| **n == "e1").count(), 1, "{seen:?}");
    assert_eq!(names.iter().filter(|n| **n == "e2").count(), 1, "{seen:?}");
    assert_eq!(
        found(&server, &format!("{path}/e1")).unwrap()["status"]["links"]["internal"]["cert"],
        certs[0]
    );
}

#[test]
fn exports_wait_for_a_stopped_vm_skip_container_disks_and_expire() {
    let server = simulating();
    server.namespace("wait");
    vm(&server, "wait", "running", "Always", &["dv"]);
    vm(&server, "wait", "disks", "Halted", &["containerdisk"]);
    vm(&server, "wait", "brief", "Halted", &["pvc"]);
    eventually(Duration::from_secs(20), || {
        found(&server, &format!("{KV}/wait/virtualmachineinstances/running"))
            .filter(|v| v["status"]["phase"] == "Running")
    });
    let watch = server.watch(&format!("{EXPORT}/wait/virtualmachineexports?watch=true"));
    let path = format!("{EXPORT}/wait/virtualmachineexports");
    create(&server, &path, export("wait", "busy", "running", None));
    create(&server, &path, export("wait", "missing", "nope", None));
    create(&server, &path, export("wait", "cd", "disks", None));
    create(&server, &path, export("wait", "short", "brief", Some("3s")));
    let reason = |name: &str, want: &str| {
        eventually(Duration::from_secs(10), || {
            found(&server, &format!("{path}/{name}"))
                .filter(|e| condition(e, "Ready")["reason"] == want)
        })
    };
    let busy = reason("busy", "InUse");
    assert_eq!(busy["status"]["phase"], "Pending");
    assert_eq!(condition(&busy, "Ready")["message"], "Virtual Machine wait/running is running");
    let missing = reason("missing", "VMNotFound");
    assert_eq!(missing["status"]["phase"], "Pending");
    assert_eq!(condition(&missing, "Ready")["status"], "False");
    eventually(Duration::from_secs(10), || {
        found(&server, &format!("{path}/cd")).filter(|e| e["status"]["phase"] == "Skipped")
    });
    // Expiry: Ready, then deleted at its ttlExpirationTime; the token Secret goes with it.
    let mut phases = Vec::new();
    loop {
        let ev = watch.next(Duration::from_secs(10)).expect("the short export's events");
        if ev["object"]["metadata"]["name"] != "short" {
            continue;
        }
        if ev["type"] == "DELETED" {
            break;
        }
        let p = ev["object"]["status"]["phase"].as_str().unwrap_or("").to_string();
        if phases.last() != Some(&p) {
            phases.push(p);
        }
    }
    assert_eq!(phases, ["", "Pending", "Ready"]);
    eventually(Duration::from_secs(10), || {
        (server.get("/api/v1/namespaces/wait/secrets/export-token-short").status == 404)
            .then_some(())
    });
    assert_eq!(server.get(&format!("{path}/busy")).status, 200);
}

fn clone(name: &str, source: &str, target: Option<&str>, ns: Option<&str>) -> Value {
    let mut c = json!({"apiVersion": "clone.kubevirt.io/v1alpha1", "kind": "VirtualMachineClone",
                       "metadata": {"name": name},
                       "spec": {"source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": source}}});
    if let Some(t) = target {
        c["spec"]["target"] =
            json!({"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": t});
    }
    if let Some(ns) = ns {
        c["metadata"]["annotations"] = json!({"simulate.virt-apiserver.io/namespace": ns});
    }
    c
}

#[test]
fn a_clone_snapshots_restores_and_creates_its_target() {
    let server = simulating();
    let source = vm(&server, "default", "src", "Halted", &["dv"]);
    let snaps = server.watch(&format!("{SNAP}/default/virtualmachinesnapshots?watch=true"));
    let watch = server.watch(&format!("{CLONES}?watch=true"));
    let c = create(&server, CLONES, clone("c1", "src", None, None));
    let phases = sequence(&watch, "c1", "/status/phase", &["Succeeded", "Failed"]);
    assert_eq!(
        phases,
        ["", "SnapshotInProgress", "RestoreInProgress", "CreatingTargetVM", "Succeeded"]
    );
    let done = found(&server, &format!("{CLONES}/c1")).unwrap();
    // The webhook's default target name.
    let target = done["spec"]["target"]["name"].as_str().unwrap();
    assert!(target.starts_with("clone-src-") && target.len() == 15, "{target}");
    assert_eq!(done["status"]["targetName"], target);
    assert!(done["status"].get("snapshotName").is_none(), "{done}");
    assert!(done["status"].get("restoreName").is_none(), "{done}");
    let ready = condition(&done, "Ready");
    assert_eq!((&ready["status"], &ready["reason"]), (&json!("True"), &json!("Ready")));
    assert_eq!(condition(&done, "Progressing")["status"], "False");

    // The temporary snapshot ran its lifecycle, then went.
    let tmp = format!("tmp-snapshot-{}", c["metadata"]["uid"].as_str().unwrap());
    let snap_phases = sequence(&snaps, &tmp, "/status/phase", &["Succeeded"]);
    assert_eq!(snap_phases, ["", "InProgress", "Succeeded"]);
    eventually(Duration::from_secs(10), || {
        (server.get(&format!("{SNAP}/default/virtualmachinesnapshots/{tmp}")).status == 404)
            .then_some(())
    });

    // The target: the source's spec, its MAC blanked, its labels kept.
    let vm = found(&server, &format!("{KV}/default/virtualmachines/{target}")).unwrap();
    let iface = &vm["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"][0];
    assert_eq!(iface["name"], "default");
    assert!(iface.get("macAddress").is_none(), "{vm}");
    assert_eq!(vm["metadata"]["labels"], source["metadata"]["labels"]);
    assert_eq!(
        vm["spec"]["template"]["spec"]["volumes"],
        source["spec"]["template"]["spec"]["volumes"]
    );
    assert_eq!(vm["spec"]["runStrategy"], "Halted");
}

#[test]
fn a_clone_keeps_given_macs_and_fails_without_its_source() {
    let server = simulating();
    server.namespace("cl");
    vm(&server, "cl", "src", "Halted", &["dv"]);
    let mut c = clone("c2", "src", Some("copy"), Some("cl"));
    c["spec"]["newMacAddresses"] = json!({"default": "02:aa:bb:cc:dd:ee"});
    create(&server, CLONES, c);
    create(&server, CLONES, clone("c3", "ghost", Some("nothing"), Some("cl")));
    let copy = eventually(Duration::from_secs(15), || {
        found(&server, &format!("{KV}/cl/virtualmachines/copy"))
    });
    let iface = &copy["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"][0];
    assert_eq!(iface["macAddress"], "02:aa:bb:cc:dd:ee");
    let failed = eventually(Duration::from_secs(10), || {
        found(&server, &format!("{CLONES}/c3")).filter(|c| c["status"]["phase"] == "Failed")
    });
    assert_eq!(condition(&failed, "Ready")["status"], "False");
    assert_eq!(server.get(&format!("{KV}/cl/virtualmachines/nothing")).status, 404);
    // A succeeded clone whose target is deleted deletes itself.
    eventually(Duration::from_secs(10), || {
        found(&server, &format!("{CLONES}/c2")).filter(|c| c["status"]["phase"] == "Succeeded")
    });
    assert_eq!(server.delete(&format!("{KV}/cl/virtualmachines/copy")).status, 200);
    eventually(Duration::from_secs(10), || {
        (server.get(&format!("{CLONES}/c2")).status == 404).then_some(())
    });
}
