//! KubeVirt's action API (`subresources.kubevirt.io`), driven over HTTP as virtctl drives it (PUT
//! with an optional JSON body): discovery as virt-api serves it, every action's success path
//! with `--simulate`, every error of the reference's table with its code and exact message,
//! dryRun, bad bodies, and effects written without `--simulate`.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::{condition, eventually, managers, Kubectl, Resp, TestServer};

const KV: &str = "/apis/kubevirt.io/v1/namespaces";
const SUB: &str = "/apis/subresources.kubevirt.io/v1/namespaces";

fn simulating() -> TestServer {
    crate::common::simulating(&["--simulate-speed", "0.05"])
}

fn vm(name: &str, run_strategy: &str) -> Value {
    json!({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
        "metadata": {"name": name},
        "spec": {"runStrategy": run_strategy, "template": {
            "spec": {"domain": {"devices": {}, "resources": {"requests": {"memory": "64M"}}}}
        }}
    })
}

/// A simulating server with VM `name` in namespace `ns` under `strategy`, once its
/// printableStatus reads `printable`.
fn with_vm(name: &str, strategy: &str, printable: &str) -> TestServer {
    let server = simulating();
    server.namespace("ns");
    create_vm(&server, "ns", name, strategy);
    wait_printable(&server, name, printable);
    server
}

fn create_vm(server: &TestServer, ns: &str, name: &str, run_strategy: &str) -> Value {
    let r = server.post(&format!("{KV}/{ns}/virtualmachines"), &vm(name, run_strategy));
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

/// A VMI written by hand (no simulation): its status is part of the object.
fn create_vmi(server: &TestServer, ns: &str, name: &str, spec: Value, status: Value) -> Value {
    let vmi = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
                     "metadata": {"name": name}, "spec": spec, "status": status});
    let r = server.post(&format!("{KV}/{ns}/virtualmachineinstances"), &vmi);
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

fn running(extra: &[Value]) -> Value {
    let mut conditions = vec![json!({"type": "Ready", "status": "True"})];
    conditions.extend_from_slice(extra);
    json!({"phase": "Running", "conditions": conditions})
}

fn agent() -> Value {
    json!({"type": "AgentConnected", "status": "True"})
}

fn set_vm_status(server: &TestServer, ns: &str, name: &str, status: Value) {
    let path = format!("{KV}/{ns}/virtualmachines/{name}/status");
    let r = server.patch(&path, "application/merge-patch+json", &json!({"status": status}));
    assert_eq!(r.status, 200, "{}", r.text());
}

/// `PUT` (or `GET`) of an action, with a raw body.
fn act(
    server: &TestServer,
    method: &str,
    plural: &str,
    name: &str,
    action: &str,
    body: &str,
) -> Resp {
    let path = format!("{SUB}/ns/{plural}/{name}/{action}");
    let body = (!body.is_empty()).then_some(("application/json", body.as_bytes()));
    server.request(method, &path, &[], body)
}

fn vm_act(server: &TestServer, name: &str, action: &str, body: &str) -> Resp {
    act(server, "PUT", "virtualmachines", name, action, body)
}

fn vmi_act(server: &TestServer, name: &str, action: &str, body: &str) -> Resp {
    act(server, "PUT", "virtualmachineinstances", name, action, body)
}

fn vmi_read(server: &TestServer, name: &str, action: &str) -> Resp {
    act(server, "GET", "virtualmachineinstances", name, action, "")
}

/// A success: its code and an empty body.
fn assert_done(r: &Resp, code: u16) {
    assert_eq!((r.status, r.text().as_str()), (code, ""), "{}", r.text());
}

/// A refusal: virt-api's Status with `code`, `message` and, unless a 400, details naming the
/// object by its singular resource.
fn assert_refused(r: &Resp, code: u16, message: &str, singular: &str) {
    assert_eq!(r.status, code, "{}", r.text());
    let s = r.json();
    assert_eq!(s["kind"], "Status", "{s}");
    assert_eq!(s["status"], "Failure", "{s}");
    assert_eq!(s["code"], code, "{s}");
    assert_eq!(s["message"], message, "{s}");
    let reason = match code {
        400 => "BadRequest",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        500 => "InternalError",
        _ => "",
    };
    assert_eq!(s["reason"].as_str().unwrap_or(""), reason, "{s}");
    if code == 409 || code == 404 || code == 403 {
        assert_eq!(s["details"]["group"], "kubevirt.io", "{s}");
        assert_eq!(s["details"]["kind"], singular, "{s}");
        assert!(s["details"]["name"].is_string(), "{s}");
    }
}

fn conflict(kind: &str, name: &str, msg: &str) -> String {
    format!("Operation cannot be fulfilled on {kind}.kubevirt.io \"{name}\": {msg}")
}

fn get(server: &TestServer, plural: &str, name: &str) -> Option<Value> {
    let r = server.get(&format!("{KV}/ns/{plural}/{name}"));
    (r.status == 200).then(|| r.json())
}

fn printable(server: &TestServer, name: &str) -> Option<String> {
    get(server, "virtualmachines", name)?["status"]["printableStatus"].as_str().map(String::from)
}

fn wait_printable(server: &TestServer, name: &str, want: &str) -> Value {
    eventually(Duration::from_secs(15), || {
        (printable(server, name).as_deref() == Some(want))
            .then(|| get(server, "virtualmachines", name))
            .flatten()
    })
}

#[test]
fn discovery_is_served_as_virt_api_serves_it() {
    let server = TestServer::start();
    let groups = server.get("/apis").json();
    let group = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "subresources.kubevirt.io")
        .expect("the group is listed")
        .clone();
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["version"].as_str())
        .collect();
    assert_eq!(versions, ["v1", "v1alpha3"]);
    assert_eq!(group["preferredVersion"]["groupVersion"], "subresources.kubevirt.io/v1");
    let doc = server.get("/apis/subresources.kubevirt.io").json();
    assert_eq!(
        (doc["kind"].as_str(), doc["name"].as_str()),
        (Some("APIGroup"), Some("subresources.kubevirt.io"))
    );
    for v in ["v1", "v1alpha3"] {
        let list = server.get(&format!("/apis/subresources.kubevirt.io/{v}")).json();
        assert_eq!(list["kind"], "APIResourceList");
        assert_eq!(list["groupVersion"], format!("subresources.kubevirt.io/{v}"));
        let entries = list["resources"].as_array().unwrap();
        for e in entries {
            // `APIResource{Name, Namespaced: true}`: nothing else set (verbs an empty list).
            assert_eq!(e["namespaced"], true, "{e}");
            assert_eq!(
                (e["kind"].as_str(), e["singularName"].as_str()),
                (Some(""), Some("")),
                "{e}"
            );
            assert_eq!(e["verbs"], json!([]), "{e}");
        }
        let names: Vec<&str> = entries.iter().filter_map(|e| e["name"].as_str()).collect();
        for listed in [
            "expand-vm-spec",
            "virtualmachines/start",
            "virtualmachines/stop",
            "virtualmachines/restart",
            "virtualmachines/migrate",
            "virtualmachines/expand-spec",
            "virtualmachineinstances/pause",
            "virtualmachineinstances/unpause",
            "virtualmachineinstances/freeze",
            "virtualmachineinstances/softreboot",
            "virtualmachineinstances/guestosinfo",
            "virtualmachineinstances/console",
            "virtualmachineinstances/vnc/screenshot",
            "virtualmachineinstances/addvolume",
        ] {
            assert!(names.contains(&listed), "{listed} missing from {names:?}");
        }
        // Every listed route is served: a 404 is virt-api's for the missing object, never the
        // server's unknown path; no 405.
        for name in &names {
            let read = [
                "vnc",
                "vnc/screenshot",
                "console",
                "portforward",
                "guestosinfo",
                "userlist",
                "filesystemlist",
                "objectgraph",
                "expand-spec",
                "sev/fetchcertchain",
                "sev/querylaunchmeasurement",
            ];
            let (method, path) = match name.split_once('/') {
                None => ("PUT", format!("{SUB}/ns/{name}")),
                Some((plural, action)) => {
                    let method = if read.contains(&action) { "GET" } else { "PUT" };
                    // Port-forward's routes name the port.
                    let port = if action == "portforward" { "/22" } else { "" };
                    (method, format!("{SUB}/ns/{plural}/ghost/{action}{port}"))
                }
            };
            let path = path.replace("/v1/", &format!("/{v}/"));
            let r = server.request(method, &path, &[], Some(("application/json", b"{}")));
            let text = r.text();
            let unknown = r.status == 404 && !text.contains("ghost");
            assert!(r.status != 405 && !unknown, "{method} {path}: {} {text}", r.status);
        }
        // Routed but not listed.
        for unlisted in [
            "virtualmachines/addvolume",
            "virtualmachines/portforward",
            "virtualmachineinstances/usbredir",
        ] {
            assert!(!names.contains(&unlisted), "{unlisted} listed");
        }
    }
    // Aggregated discovery lists them as kube-aggregator converts virt-api's legacy lists.
    let accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let agg = server.request("GET", "/apis", &[("Accept", accept)], None).json();
    let item = agg["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metadata"]["name"] == "subresources.kubevirt.io")
        .expect("the group")
        .clone();
    let vms = item["versions"][0]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["resource"] == "virtualmachines")
        .expect("a parent for the VM actions")
        .clone();
    assert_eq!(vms["responseKind"], json!({"group": "", "version": "", "kind": ""}));
    assert_eq!(
        vms["subresources"][0],
        json!({"subresource": "start", "responseKind": {"group": "", "version": "", "kind": ""}, "verbs": []})
    );
    let kubectl = Kubectl::new(&server);
    let versions = kubectl.ok(&["api-versions"]);
    assert!(versions.lines().any(|l| l == "subresources.kubevirt.io/v1"), "{versions}");
    let raw = kubectl.ok(&["get", "--raw", "/apis/subresources.kubevirt.io/v1alpha3"]);
    assert!(raw.contains("virtualmachines/start"), "{raw}");
}

#[test]
fn start_stop_and_restart_drive_a_vm() {
    let server = with_vm("vm1", "Halted", "Stopped");
    assert_done(&vm_act(&server, "vm1", "start", ""), 202);
    let vm = wait_printable(&server, "vm1", "Running");
    assert_eq!(vm["spec"]["runStrategy"], "Always");
    assert_eq!(condition(&vm, "Ready").unwrap()["status"], "True");
    // Both versions serve the actions.
    let again = server.request(
        "PUT",
        "/apis/subresources.kubevirt.io/v1alpha3/namespaces/ns/virtualmachines/vm1/start",
        &[],
        None,
    );
    assert_refused(
        &again,
        409,
        &conflict("virtualmachine", "vm1", "VM is already running"),
        "virtualmachine",
    );

    let old = get(&server, "virtualmachineinstances", "vm1").unwrap();
    assert_done(&vm_act(&server, "vm1", "restart", "{}"), 202);
    let vmi = eventually(Duration::from_secs(15), || {
        get(&server, "virtualmachineinstances", "vm1").filter(|v| {
            v["metadata"]["uid"] != old["metadata"]["uid"] && v["status"]["phase"] == "Running"
        })
    });
    assert_eq!(vmi["metadata"]["name"], "vm1");
    let vm = wait_printable(&server, "vm1", "Running");
    assert!(vm["status"]["stateChangeRequests"].is_null(), "the queue is consumed: {vm}");

    assert_done(&vm_act(&server, "vm1", "stop", ""), 202);
    let vm = wait_printable(&server, "vm1", "Stopped");
    assert_eq!(vm["spec"]["runStrategy"], "Halted");
    eventually(Duration::from_secs(10), || {
        get(&server, "virtualmachineinstances", "vm1").is_none().then_some(())
    });
    assert_refused(
        &vm_act(&server, "vm1", "stop", ""),
        409,
        &conflict("virtualmachine", "vm1", "VM is not running"),
        "virtualmachine",
    );
}

#[test]
fn manual_vms_start_and_stop_through_the_queue() {
    let server = with_vm("man", "Manual", "Stopped");
    assert!(get(&server, "virtualmachineinstances", "man").is_none(), "Manual creates nothing");
    assert_done(&vm_act(&server, "man", "start", ""), 202);
    let vm = wait_printable(&server, "man", "Running");
    assert_eq!(vm["spec"]["runStrategy"], "Manual");
    assert!(vm["status"]["stateChangeRequests"].is_null(), "{vm}");
    let vmi = get(&server, "virtualmachineinstances", "man").unwrap();
    assert_done(&vm_act(&server, "man", "restart", ""), 202);
    eventually(Duration::from_secs(15), || {
        get(&server, "virtualmachineinstances", "man").filter(|v| {
            v["metadata"]["uid"] != vmi["metadata"]["uid"] && v["status"]["phase"] == "Running"
        })
    });
    assert_done(&vm_act(&server, "man", "stop", ""), 202);
    let vm = wait_printable(&server, "man", "Stopped");
    assert_eq!(vm["spec"]["runStrategy"], "Manual");
    eventually(Duration::from_secs(10), || {
        let vm = get(&server, "virtualmachines", "man")?;
        (get(&server, "virtualmachineinstances", "man").is_none()
            && vm["status"]["stateChangeRequests"].is_null())
        .then_some(())
    });
}

#[test]
fn pause_freeze_guest_reads_and_streams_on_a_running_vmi() {
    let server = with_vm("p", "Always", "Running");
    eventually(Duration::from_secs(10), || {
        get(&server, "virtualmachineinstances", "p")
            .filter(|v| condition(v, "AgentConnected").is_some())
    });

    // dryRun stops after the checks.
    assert_done(&vmi_act(&server, "p", "pause", r#"{"dryRun": ["All"]}"#), 200);
    assert!(condition(&get(&server, "virtualmachineinstances", "p").unwrap(), "Paused").is_none());
    assert_done(&vmi_act(&server, "p", "pause", ""), 200);
    let vmi = get(&server, "virtualmachineinstances", "p").unwrap();
    let paused = condition(&vmi, "Paused").unwrap();
    assert_eq!(
        (paused["status"].as_str(), paused["reason"].as_str()),
        (Some("True"), Some("PausedByUser"))
    );
    assert_eq!(paused["message"], "VMI was paused by user");
    assert_eq!(condition(&vmi, "Ready").unwrap()["status"], "False");
    let vm = wait_printable(&server, "p", "Paused");
    assert_eq!(condition(&vm, "Ready").unwrap()["status"], "False");
    assert!(vm["status"]["ready"].is_null(), "{vm}");
    assert_refused(
        &vmi_act(&server, "p", "pause", ""),
        409,
        &conflict("virtualmachineinstance", "p", "VMI is already paused"),
        "virtualmachineinstance",
    );
    assert_refused(
        &vmi_act(&server, "p", "softreboot", ""),
        409,
        &conflict("virtualmachineinstance", "p", "VMI is paused"),
        "virtualmachineinstance",
    );
    assert_refused(
        &act(&server, "GET", "virtualmachineinstances", "p", "portforward/22", ""),
        409,
        &conflict("virtualmachineinstance", "p", "VMI is paused"),
        "virtualmachineinstance",
    );
    assert_done(&vmi_act(&server, "p", "unpause", r#"{"dryRun": ["All"]}"#), 200);
    assert!(condition(&get(&server, "virtualmachineinstances", "p").unwrap(), "Paused").is_some());
    assert_done(&vmi_act(&server, "p", "unpause", ""), 200);
    let vmi = get(&server, "virtualmachineinstances", "p").unwrap();
    assert!(condition(&vmi, "Paused").is_none(), "{vmi}");
    assert_eq!(condition(&vmi, "Ready").unwrap()["status"], "True");
    wait_printable(&server, "p", "Running");
    assert_refused(
        &vmi_act(&server, "p", "unpause", ""),
        409,
        &conflict("virtualmachineinstance", "p", "VMI is not paused"),
        "virtualmachineinstance",
    );

    assert_done(&vmi_act(&server, "p", "freeze", r#"{"unfreezeTimeout": "5m"}"#), 200);
    assert_eq!(
        get(&server, "virtualmachineinstances", "p").unwrap()["status"]["fsFreezeStatus"],
        "frozen"
    );
    let info = vmi_read(&server, "p", "guestosinfo");
    assert_eq!(info.status, 200, "{}", info.text());
    let info = info.json();
    assert_eq!(info["os"]["id"], "fedora");
    assert_eq!(info["hostname"], "p");
    assert_eq!(info["fsFreezeStatus"], "frozen");
    assert!(info["supportedCommands"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["name"] == "guest-ping"));
    assert_done(&vmi_act(&server, "p", "unfreeze", ""), 200);
    assert!(
        get(&server, "virtualmachineinstances", "p").unwrap()["status"]["fsFreezeStatus"].is_null()
    );
    assert_eq!(vmi_read(&server, "p", "userlist").json(), json!({"items": []}));
    let fs = vmi_read(&server, "p", "filesystemlist").json();
    assert_eq!(fs["items"][0]["mountPoint"], "/");
    assert_done(&vmi_act(&server, "p", "softreboot", ""), 200);
    assert_done(&vmi_act(&server, "p", "reset", ""), 200);

    // The console and VNC pass virt-api's checks, then upgrade: a plain GET is gorilla's 400
    // (the streams themselves: tests/api/guests); the screenshot is a PNG.
    for stream in ["console", "vnc"] {
        let r = act(&server, "GET", "virtualmachineinstances", "p", stream, "");
        assert_eq!((r.status, r.text().as_str()), (400, "Bad Request\n"));
    }
    let r = act(&server, "GET", "virtualmachineinstances", "p", "vnc/screenshot", "");
    assert_eq!((r.status, r.header("content-type")), (200, Some("image/png")));
    // Port-forward passes virt-api's checks, then dials the VMI's address: nothing listens on
    // port 80 (the guest's sshd on 22: tests/api/guests/ssh.rs).
    let vmi = get(&server, "virtualmachineinstances", "p").unwrap();
    let ip = vmi["status"]["interfaces"][0]["ipAddress"].as_str().unwrap().to_string();
    let msg = format!(
        "Internal error occurred: dialing VM: dial tcp {ip}:80: connect: connection refused"
    );
    for plural in ["virtualmachineinstances", "virtualmachines"] {
        let r = act(&server, "GET", plural, "p", "portforward/80/tcp", "");
        assert_refused(&r, 500, &msg, "");
    }
    let r = act(&server, "GET", "virtualmachineinstances", "p", "usbredir", "");
    assert_refused(
        &r,
        409,
        &conflict("virtualmachineinstance", "p", "Not configured with USB Redirection"),
        "virtualmachineinstance",
    );
    let spec = act(&server, "GET", "virtualmachines", "p", "expand-spec", "");
    assert_eq!(spec.json()["metadata"]["name"], "p");
}

#[test]
fn migrate_creates_a_migration() {
    let server = with_vm("m", "Always", "Running");
    let migrations = || server.list_names(&format!("{KV}/ns/virtualmachineinstancemigrations"));
    assert_done(&vm_act(&server, "m", "migrate", r#"{"dryRun": ["All"]}"#), 202);
    assert!(migrations().is_empty());
    assert_done(&vm_act(&server, "m", "migrate", r#"{"addedNodeSelector": {"zone": "b"}}"#), 202);
    let names = migrations();
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(names[0].starts_with("kubevirt-migrate-vm-"), "{names:?}");
    let vmim = server.get_json(&format!("{KV}/ns/virtualmachineinstancemigrations/{}", names[0]));
    assert_eq!(vmim["spec"], json!({"vmiName": "m", "addedNodeSelector": {"zone": "b"}}));
    // virt-api made it (the simulated virt-controller may have written its status since).
    let entries = vmim["metadata"]["managedFields"].as_array().unwrap();
    let spec_owner = entries.iter().find(|m| m["fieldsV1"].get("f:spec").is_some());
    assert_eq!(spec_owner.map(|m| &m["manager"]), Some(&json!("virt-api")), "{entries:?}");
    assert!(managers(&vmim).iter().all(|m| ["virt-api", "virt-controller"].contains(m)));

    // A VMI bridged to the pod network cannot migrate: virt-handler says so, and the
    // migration's admission refuses it.
    let mut bridged = vm("b", "Always");
    bridged["spec"]["template"]["spec"]["domain"]["devices"]["interfaces"] =
        json!([{"name": "default", "bridge": {}}]);
    bridged["spec"]["template"]["spec"]["networks"] = json!([{"name": "default", "pod": {}}]);
    let r = server.post(&format!("{KV}/ns/virtualmachines"), &bridged);
    assert_eq!(r.status, 201, "{}", r.text());
    wait_printable(&server, "b", "Running");
    let vmi = get(&server, "virtualmachineinstances", "b").unwrap();
    let migratable = condition(&vmi, "LiveMigratable").unwrap();
    assert_eq!(
        (migratable["status"].as_str(), migratable["reason"].as_str()),
        (Some("False"), Some("InterfaceNotLiveMigratable"))
    );
    let r = vm_act(&server, "b", "migrate", "");
    assert_refused(&r, 500, "Internal error occurred: admission webhook \"migration-create-validator.kubevirt.io\" denied the request: Cannot migrate VMI, Reason: InterfaceNotLiveMigratable, Message: cannot migrate VMI which does not use masquerade or a migratable plugin to connect to the pod network", "");
    assert_eq!(migrations().len(), 1);
    // With the controllers running, the webhook's finalizer too, in the create's answer.
    let kubectl = Kubectl::new(&server);
    let direct = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
        "metadata": {"name": "direct", "namespace": "ns"}, "spec": {"vmiName": "m"}});
    let file = kubectl.file("vmim.json", &direct.to_string());
    let made = kubectl.ok(&["create", "-f", file.to_str().unwrap(), "-o", "json"]);
    let made: Value = serde_json::from_str(&made).unwrap();
    assert_eq!(made["metadata"]["labels"], json!({"kubevirt.io/vmi-name": "m"}));
    assert_eq!(made["metadata"]["finalizers"], json!(["kubevirt.io/migrationJobFinalize"]));
}

/// Without `--simulate` nothing moves, but each action's effect is written.
#[test]
fn actions_write_their_effect_without_simulate() {
    let server = TestServer::start();
    server.namespace("ns");
    create_vm(&server, "ns", "h", "Halted");
    assert_done(&vm_act(&server, "h", "start", r#"{"dryRun": ["All"]}"#), 202);
    assert_eq!(get(&server, "virtualmachines", "h").unwrap()["spec"]["runStrategy"], "Halted");
    assert_done(&vm_act(&server, "h", "start", ""), 202);
    let vm = get(&server, "virtualmachines", "h").unwrap();
    assert_eq!(vm["spec"]["runStrategy"], "Always");
    assert!(get(&server, "virtualmachineinstances", "h").is_none(), "nothing moves");
    let managers = managers(&vm);
    assert!(managers.contains(&"virt-api"), "{managers:?}");
    assert_done(&vm_act(&server, "h", "stop", ""), 202);
    assert_eq!(get(&server, "virtualmachines", "h").unwrap()["spec"]["runStrategy"], "Halted");

    // Halted and `paused`: a Start request in the status, the spec untouched.
    assert_done(&vm_act(&server, "h", "start", r#"{"paused": true}"#), 202);
    let vm = get(&server, "virtualmachines", "h").unwrap();
    assert_eq!(
        vm["status"]["stateChangeRequests"],
        json!([{"action": "Start", "data": {"paused": "true"}}])
    );
    assert_eq!(vm["spec"]["runStrategy"], "Halted");

    create_vm(&server, "ns", "man", "Manual");
    assert_done(&vm_act(&server, "man", "start", ""), 202);
    let vm = get(&server, "virtualmachines", "man").unwrap();
    assert_eq!(vm["status"]["stateChangeRequests"], json!([{"action": "Start"}]));
    let underway = vm_act(&server, "man", "start", "");
    assert_refused(
        &underway,
        500,
        "Internal error occurred: unable to complete request: stop/start already underway",
        "",
    );
    // A Stop replaces the queue; with a running VMI it names the VMI's UID.
    let vmi = create_vmi(&server, "ns", "man", json!({"domain": {"devices": {}}}), running(&[]));
    assert_done(&vm_act(&server, "man", "stop", ""), 202);
    let vm = get(&server, "virtualmachines", "man").unwrap();
    assert_eq!(
        vm["status"]["stateChangeRequests"],
        json!([{"action": "Stop", "uid": vmi["metadata"]["uid"]}])
    );
    let restart = vm_act(&server, "man", "restart", "");
    assert_refused(
        &restart,
        500,
        "Internal error occurred: unable to complete request: stop/start already underway",
        "",
    );

    // A restart of a Manual VM queues Stop (the VMI's UID) then Start.
    create_vm(&server, "ns", "r", "Manual");
    let vmi = create_vmi(&server, "ns", "r", json!({"domain": {"devices": {}}}), running(&[]));
    assert_done(&vm_act(&server, "r", "restart", r#"{"gracePeriodSeconds": 0}"#), 202);
    let vm = get(&server, "virtualmachines", "r").unwrap();
    assert_eq!(
        vm["status"]["stateChangeRequests"],
        json!([{"action": "Stop", "uid": vmi["metadata"]["uid"]}, {"action": "Start"}])
    );
    // A forced restart shortens the VMI's grace period first.
    assert_eq!(
        get(&server, "virtualmachineinstances", "r").unwrap()["spec"]
            ["terminationGracePeriodSeconds"],
        1
    );

    // Pause writes the condition virt-handler would report; migrate creates the migration.
    assert_done(&vmi_act(&server, "r", "pause", ""), 200);
    assert_eq!(
        condition(&get(&server, "virtualmachineinstances", "r").unwrap(), "Paused").unwrap()
            ["reason"],
        "PausedByUser"
    );
    assert_done(&vm_act(&server, "r", "migrate", ""), 202);
    // As virt-api's migration-create mutating webhook leaves it: `kubectl get vmim -l
    // kubevirt.io/vmi-name=r` finds it; the migration controller's finalizer only comes with
    // the controllers (`--simulate`), which remove it.
    let vmims = format!("{KV}/ns/virtualmachineinstancemigrations");
    let selected = server.get_json(&format!("{vmims}?labelSelector=kubevirt.io%2Fvmi-name%3Dr"));
    let items = selected["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{selected}");
    assert!(items[0]["metadata"].get("finalizers").is_none(), "{selected}");
    let kubectl = Kubectl::new(&server);
    let listed =
        kubectl.ok(&["get", "vmim", "-n", "ns", "-l", "kubevirt.io/vmi-name=r", "-o", "name"]);
    assert!(
        listed
            .trim()
            .starts_with("virtualmachineinstancemigration.kubevirt.io/kubevirt-migrate-vm-"),
        "{listed}"
    );
    assert_eq!(server.list_names(&vmims).len(), 1);
    // The webhook mutates every create, `kubectl create` included, in the create's answer.
    let direct = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceMigration",
        "metadata": {"name": "direct", "namespace": "ns", "labels": {"team": "a"},
                     "finalizers": ["example.com/keep"]},
        "spec": {"vmiName": "man"}});
    let file = kubectl.file("vmim.json", &direct.to_string());
    let made = kubectl.ok(&["create", "-f", file.to_str().unwrap(), "-o", "json"]);
    let made: Value = serde_json::from_str(&made).unwrap();
    assert_eq!(made["metadata"]["labels"], json!({"team": "a", "kubevirt.io/vmi-name": "man"}));
    assert_eq!(made["metadata"]["finalizers"], json!(["example.com/keep"]));
    let listed =
        kubectl.ok(&["get", "vmim", "-n", "ns", "-l", "kubevirt.io/vmi-name=man", "-o", "name"]);
    assert_eq!(listed.trim(), "virtualmachineinstancemigration.kubevirt.io/direct");
    // Hotplug: the VM's volumeRequests, the VMI's spec.
    let add = r#"{"name": "extra", "disk": {"disk": {"bus": "scsi"}}, "volumeSource": {"persistentVolumeClaim": {"claimName": "pvc1"}}}"#;
    assert_done(&vm_act(&server, "r", "addvolume", add), 202);
    let vm = get(&server, "virtualmachines", "r").unwrap();
    assert_eq!(vm["status"]["volumeRequests"][0]["addVolumeOptions"]["name"], "extra");
    assert_done(&vmi_act(&server, "r", "addvolume", add), 202);
    let vmi = get(&server, "virtualmachineinstances", "r").unwrap();
    assert_eq!(
        vmi["spec"]["volumes"],
        json!([{"name": "extra", "persistentVolumeClaim": {"claimName": "pvc1", "hotpluggable": true}}])
    );
    assert_eq!(
        vmi["spec"]["domain"]["devices"]["disks"],
        json!([{"name": "extra", "disk": {"bus": "scsi"}}])
    );
    let dup = vmi_act(&server, "r", "addvolume", add);
    assert_refused(
        &dup,
        409,
        &conflict(
            "virtualmachineinstance",
            "r",
            "Unable to add volume [extra] because volume with that name already exists",
        ),
        "virtualmachineinstance",
    );
    assert_done(&vmi_act(&server, "r", "removevolume", r#"{"name": "extra"}"#), 202);
    assert_eq!(get(&server, "virtualmachineinstances", "r").unwrap()["spec"]["volumes"], json!([]));
}

#[test]
fn every_error_of_the_table() {
    let server = TestServer::start();
    server.namespace("ns");
    let vm_c = |name: &str, msg: &str| conflict("virtualmachine", name, msg);
    let vmi_c = |name: &str, msg: &str| conflict("virtualmachineinstance", name, msg);
    const VM: &str = "virtualmachine";
    const VMI: &str = "virtualmachineinstance";

    // Missing objects.
    assert_refused(
        &vm_act(&server, "ghost", "start", ""),
        404,
        r#"virtualmachine.kubevirt.io "ghost" not found"#,
        VM,
    );
    assert_refused(
        &vmi_act(&server, "ghost", "pause", ""),
        404,
        r#"virtualmachineinstance.kubevirt.io "ghost" not found"#,
        VMI,
    );

    // Bad bodies, before anything else is looked at.
    let bad = vm_act(&server, "ghost", "start", r#"{"paused": "yes"}"#);
    assert_refused(&bad, 400, "Can not unmarshal Request body to struct, error: json: cannot unmarshal string into Go struct field StartOptions.paused of type bool", "");
    let bad = vmi_act(&server, "ghost", "pause", "[1, 2]");
    assert_refused(&bad, 400, "Can not unmarshal Request body to struct, error: json: cannot unmarshal array into Go value of type v1.PauseOptions", "");
    let bad = vm_act(&server, "ghost", "stop", "{not json");
    assert_eq!(bad.status, 400);
    assert!(bad.json()["message"]
        .as_str()
        .unwrap()
        .starts_with("Can not unmarshal Request body to struct, error: "));

    // start.
    create_vm(&server, "ns", "always", "Always");
    assert_refused(
        &vm_act(&server, "always", "start", ""),
        409,
        &vm_c("always", "Always does not support manual start requests"),
        VM,
    );
    create_vm(&server, "ns", "once", "Once");
    assert_refused(
        &vm_act(&server, "once", "start", ""),
        409,
        &vm_c("once", "Once does not support manual start requests"),
        VM,
    );
    create_vmi(&server, "ns", "always", json!({"domain": {"devices": {}}}), running(&[]));
    assert_refused(
        &vm_act(&server, "always", "start", ""),
        409,
        &vm_c("always", "VM is already running"),
        VM,
    );
    create_vm(&server, "ns", "rerun", "RerunOnFailure");
    create_vmi(&server, "ns", "rerun", json!({}), json!({"phase": "Failed"}));
    assert_refused(
        &vm_act(&server, "rerun", "start", ""),
        409,
        &vm_c("rerun", "RerunOnFailure does not support starting VM from failed state"),
        VM,
    );
    create_vm(&server, "ns", "broken", "Manual");
    set_vm_status(
        &server,
        "ns",
        "broken",
        json!({"conditions": [{"type": "ManualRecoveryRequired", "status": "True"}, {"type": "VolumesChange", "status": "True"}]}),
    );
    let recovery = "VM recovery required: Volume migration failed, leaving some volumes pointing to non-consistent targets, manual intervention is needed to reassign them to their original volumes.";
    assert_refused(&vm_act(&server, "broken", "start", ""), 409, &vm_c("broken", recovery), VM);
    assert_refused(&vm_act(&server, "broken", "restart", ""), 409, &vm_c("broken", recovery), VM);

    // stop.
    create_vm(&server, "ns", "manual", "Manual");
    assert_refused(
        &vm_act(&server, "manual", "stop", ""),
        409,
        &vm_c("manual", "VM is not running"),
        VM,
    );
    create_vm(&server, "ns", "halted", "Halted");
    assert_refused(
        &vm_act(&server, "halted", "stop", ""),
        409,
        &vm_c("halted", "VM is not running"),
        VM,
    );
    create_vmi(&server, "ns", "halted", json!({"domain": {"devices": {}}}), running(&[]));
    assert_refused(
        &vm_act(&server, "halted", "stop", ""),
        409,
        &vm_c("halted", "Halted only supports manual stop requests with a shorter graceperiod"),
        VM,
    );
    assert_done(&vm_act(&server, "halted", "stop", r#"{"gracePeriod": 0}"#), 202);

    // restart.
    let r = vm_act(&server, "ghost", "restart", r#"{"gracePeriodSeconds": 5}"#);
    assert_refused(&r, 400, "For force restart, only gracePeriod=0 is supported for now", "");
    let r = vm_act(&server, "ghost", "restart", r#"{"gracePeriodSeconds": -1}"#);
    assert_refused(&r, 400, "gracePeriod has to be greater or equal to 0", "");
    assert_refused(
        &vm_act(&server, "ghost", "restart", ""),
        404,
        r#"virtualmachine.kubevirt.io "ghost" not found"#,
        VM,
    );
    assert_refused(
        &vm_act(&server, "halted", "restart", ""),
        409,
        &vm_c("halted", "RunStategy Halted does not support manual restart requests"),
        VM,
    );
    assert_refused(
        &vm_act(&server, "once", "restart", ""),
        409,
        &vm_c("once", "RunStategy Once does not support manual restart requests"),
        VM,
    );
    assert_refused(
        &vm_act(&server, "manual", "restart", ""),
        409,
        &vm_c("manual", "VM is not running: Halted"),
        VM,
    );

    // migrate.
    assert_refused(
        &vm_act(&server, "manual", "migrate", ""),
        404,
        r#"virtualmachineinstance.kubevirt.io "manual" not found"#,
        VMI,
    );
    create_vmi(&server, "ns", "manual", json!({}), json!({"phase": "Scheduling"}));
    assert_refused(
        &vm_act(&server, "manual", "migrate", ""),
        409,
        &vm_c("manual", "VM is not running"),
        VM,
    );

    // pause, unpause, freeze, unfreeze, softreboot, reset on a VMI that is not running.
    let pending = "manual";
    assert_refused(
        &vmi_act(&server, pending, "pause", ""),
        409,
        &vmi_c(pending, "VM is not running"),
        VMI,
    );
    assert_refused(
        &vmi_act(&server, pending, "unpause", ""),
        409,
        &vmi_c(pending, "VMI is not running"),
        VMI,
    );
    assert_refused(
        &vmi_act(&server, pending, "freeze", ""),
        409,
        &vmi_c(pending, "VM is not running"),
        VMI,
    );
    assert_refused(
        &vmi_act(&server, pending, "unfreeze", ""),
        409,
        &vmi_c(pending, "VMI is not running"),
        VMI,
    );
    assert_refused(
        &vmi_act(&server, pending, "softreboot", ""),
        409,
        &vmi_c(pending, "VM is not running"),
        VMI,
    );
    let reset = "Failed to reset non-running VMI with phase Scheduling: Unable to connect to VirtualMachineInstance because phase is Scheduling instead of Running or Scheduled";
    assert_refused(&vmi_act(&server, pending, "reset", ""), 400, reset, VMI);

    // A running VMI without a guest agent, with a liveness probe, with ACPI off.
    let spec = json!({"livenessProbe": {"httpGet": {"port": 80}}, "domain": {"devices": {}, "features": {"acpi": {"enabled": false}}}});
    create_vmi(&server, "ns", "bare", spec, running(&[]));
    let forbidden = r#"virtualmachineinstance.kubevirt.io "bare" is forbidden: Pausing VMIs with a non-GuestAgentPing LivenessProbe is not supported"#;
    assert_refused(&vmi_act(&server, "bare", "pause", ""), 403, forbidden, VMI);
    assert_refused(
        &vmi_act(&server, "bare", "unpause", ""),
        409,
        &vmi_c("bare", "VMI is not paused"),
        VMI,
    );
    assert_refused(
        &vmi_act(&server, "bare", "freeze", ""),
        500,
        "Internal error occurred: VMI does not have guest agent connected",
        "",
    );
    assert_refused(
        &vmi_act(&server, "bare", "softreboot", ""),
        409,
        &vmi_c("bare", "VMI neither have the agent connected nor the ACPI feature enabled"),
        VMI,
    );

    // Guest reads fail in plain text, with a 500.
    for (name, text) in [
        ("ghost", r#"virtualmachineinstance.kubevirt.io "ghost" not found"#.to_string()),
        (pending, vmi_c(pending, "VMI is not running")),
        ("bare", vmi_c("bare", "VMI does not have guest agent connected")),
    ] {
        for read in ["guestosinfo", "userlist", "filesystemlist"] {
            let r = vmi_read(&server, name, read);
            assert_eq!((r.status, r.text()), (500, text.clone()), "{read} {name}");
            assert!(r.header("content-type").unwrap().starts_with("text/plain"), "{read}");
        }
    }

    // unpause while the VM's snapshot is in progress.
    create_vm(&server, "ns", "snap", "Always");
    set_vm_status(&server, "ns", "snap", json!({"snapshotInProgress": "s1"}));
    create_vmi(&server, "ns", "snap", json!({}), running(&[agent()]));
    let vmi = get(&server, "virtualmachineinstances", "snap").unwrap();
    let owned = json!({"metadata": {"ownerReferences": [{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "name": "snap", "uid": get(&server, "virtualmachines", "snap").unwrap()["metadata"]["uid"], "controller": true}]}});
    let r = server.patch(
        &format!("{KV}/ns/virtualmachineinstances/snap"),
        "application/merge-patch+json",
        &owned,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(vmi["metadata"]["uid"].is_string());
    assert_refused(
        &vmi_act(&server, "snap", "unpause", ""),
        409,
        &vm_c("snap", "VM snapshot is in progress"),
        VM,
    );

    // Streams' checks.
    let devices = json!({"domain": {"devices": {"autoattachSerialConsole": false, "autoattachGraphicsDevice": false}}});
    create_vmi(&server, "ns", "headless", devices, running(&[]));
    let get_ =
        |name: &str, what: &str| act(&server, "GET", "virtualmachineinstances", name, what, "");
    assert_refused(&get_("headless", "console"), 400, "No serial consoles are present.", VMI);
    assert_refused(&get_("headless", "vnc"), 400, "No graphics devices are present.", VMI);
    create_vmi(&server, "ns", "failed", json!({}), json!({"phase": "Failed"}));
    assert_refused(
        &get_("failed", "console"),
        409,
        &vmi_c("failed", "VMI is in failed status"),
        VMI,
    );
    assert_refused(&get_(pending, "console"), 400, "VMI is not running", VMI);
    // Port-forward checks no phase, only the first interface the dialer wants
    // (pkg/virt-api/rest/dialers.go getTargetInterfaceIP).
    let msg = "no network interfaces are present";
    assert_refused(&get_(pending, "portforward/22"), 400, msg, VMI);

    // Hotplug bodies.
    let r = vmi_act(&server, "bare", "addvolume", "{}");
    assert_refused(&r, 400, "AddVolumeOptions requires name to be set", "");
    let r = vm_act(&server, "manual", "removevolume", "{}");
    assert_refused(&r, 400, "RemoveVolumeOptions requires name to be set", "");

    // A method an action does not serve: kube's 405 for the kind's paths.
    let r = server.request("POST", &format!("{SUB}/ns/virtualmachines/manual/start"), &[], None);
    assert_eq!(r.status, 405, "{}", r.text());
}

/// A VM's VMI, written by hand with its controller reference.
fn create_owned_vmi(server: &TestServer, vm: &Value, spec: Value, status: Value) -> Value {
    let name = vm["metadata"]["name"].as_str().unwrap();
    let vmi = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
                     "metadata": {"name": name, "ownerReferences": [{
                         "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "name": name,
                         "uid": vm["metadata"]["uid"], "controller": true}]},
                     "spec": spec, "status": status});
    let r = server.post(&format!("{KV}/ns/virtualmachineinstances"), &vmi);
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

/// Hotplug's checks as rest/volumes.go makes them: a VM's VMI refused (400), a VMI that is
/// not running, a name or a source already there, a volume missing or not hotpluggable (409s),
/// and the VM's pending requests.
#[test]
fn hotplug_errors_as_virt_api_answers_them() {
    let server = TestServer::start();
    server.namespace("ns");
    let vm_c = |name: &str, msg: &str| conflict("virtualmachine", name, msg);
    let vmi_c = |name: &str, msg: &str| conflict("virtualmachineinstance", name, msg);
    const VM: &str = "virtualmachine";
    const VMI: &str = "virtualmachineinstance";
    let add = |name: &str, source: Value| {
        json!({"name": name, "disk": {"disk": {"bus": "scsi"}}, "volumeSource": source}).to_string()
    };
    let pvc = |claim: &str| json!({"persistentVolumeClaim": {"claimName": claim}});
    let remove = |name: &str| json!({"name": name}).to_string();

    // A VM's VMI takes volumes through the VM (ephemeral hotplug is not enabled).
    let vm = create_vm(&server, "ns", "owned", "Always");
    create_owned_vmi(&server, &vm, json!({"domain": {"devices": {}}}), running(&[]));
    let owned = "VMI ns/owned is owned by a VM";
    assert_refused(&vmi_act(&server, "owned", "addvolume", &add("x", pvc("c"))), 400, owned, "");
    assert_refused(&vmi_act(&server, "owned", "removevolume", &remove("x")), 400, owned, "");

    create_vmi(&server, "ns", "sched", json!({}), json!({"phase": "Scheduling"}));
    let r = vmi_act(&server, "sched", "addvolume", &add("x", pvc("c")));
    assert_refused(&r, 409, &vmi_c("sched", "VMI is not running"), VMI);

    let volumes = json!([{"name": "root", "containerDisk": {"image": "i"}},
                         {"name": "data", "dataVolume": {"name": "dv1"}}]);
    let spec = json!({"domain": {"devices": {"disks": [{"name": "root"}, {"name": "data"}]}}, "volumes": volumes});
    create_vmi(&server, "ns", "run", spec, running(&[]));
    let r = vmi_act(&server, "run", "addvolume", &add("root", pvc("c")));
    let dup = "Unable to add volume [root] because volume with that name already exists";
    assert_refused(&r, 409, &vmi_c("run", dup), VMI);
    let r = vmi_act(&server, "run", "addvolume", &add("x", json!({"dataVolume": {"name": "dv1"}})));
    let source = "Unable to add volume source [dv1] because it already exists";
    assert_refused(&r, 409, &vmi_c("run", source), VMI);
    let r = vmi_act(&server, "run", "removevolume", &remove("nope"));
    let missing = "Unable to remove volume [nope] because it does not exist";
    assert_refused(&r, 409, &vmi_c("run", missing), VMI);
    // By name or by its source's name: the volume is not hotpluggable.
    let fixed = "Unable to remove volume [data] because it is not hotpluggable";
    for name in ["data", "dv1"] {
        let r = vmi_act(&server, "run", "removevolume", &remove(name));
        assert_refused(&r, 409, &vmi_c("run", fixed), VMI);
    }
    // A hotplugged volume, removed by its claim's name.
    assert_done(&vmi_act(&server, "run", "addvolume", &add("hp", pvc("claim"))), 202);
    assert_done(&vmi_act(&server, "run", "removevolume", &remove("claim")), 202);
    let vmi = get(&server, "virtualmachineinstances", "run").unwrap();
    assert_eq!(vmi["spec"]["volumes"], volumes);
    assert_eq!(
        vmi["spec"]["domain"]["devices"]["disks"],
        json!([{"name": "root"}, {"name": "data"}])
    );

    // A VM: its template's volumes, then its pending requests.
    let mut with_volumes = self::vm("tpl", "Halted");
    with_volumes["spec"]["template"]["spec"]["volumes"] = volumes.clone();
    let r = server.post(&format!("{KV}/ns/virtualmachines"), &with_volumes);
    assert_eq!(r.status, 201, "{}", r.text());
    let r = vm_act(&server, "tpl", "addvolume", &add("root", pvc("c")));
    assert_refused(&r, 409, &vm_c("tpl", dup), VM);
    let r = vm_act(&server, "tpl", "addvolume", &add("x", json!({"dataVolume": {"name": "dv1"}})));
    assert_refused(&r, 409, &vm_c("tpl", source), VM);
    assert_done(&vm_act(&server, "tpl", "addvolume", &add("hp", pvc("claim"))), 202);
    let r = vm_act(&server, "tpl", "addvolume", &add("hp", pvc("claim")));
    assert_refused(&r, 409, &vm_c("tpl", "add volume request for volume [hp] already exists"), VM);
    let r = vm_act(&server, "tpl", "removevolume", &remove("data"));
    assert_refused(&r, 409, &vm_c("tpl", fixed), VM);
    let r = vm_act(&server, "tpl", "removevolume", &remove("hp"));
    assert_refused(
        &r,
        409,
        &vm_c("tpl", "Unable to remove volume [hp] because it does not exist"),
        VM,
    );
    let requests = &get(&server, "virtualmachines", "tpl").unwrap()["status"]["volumeRequests"];
    assert_eq!(
        requests,
        &json!([{"addVolumeOptions": {"name": "hp", "disk": {"name": "hp", "disk": {"bus": "scsi"}},
                 "volumeSource": {"persistentVolumeClaim": {"claimName": "claim", "hotpluggable": true}}}}])
    );
}

/// migrate refused as the migration admission webhook refuses the create (a 500 from the
/// action), and a Halted VM's stop with virt-api's grace period rule.
#[test]
fn migration_admission_and_stop_grace_periods() {
    let server = TestServer::start();
    server.namespace("ns");
    let denied = |msg: &str| {
        format!("Internal error occurred: admission webhook \"migration-create-validator.kubevirt.io\" denied the request: {msg}")
    };
    let migrations = || server.list_names(&format!("{KV}/ns/virtualmachineinstancemigrations"));

    let vm = create_vm(&server, "ns", "bridge", "Always");
    let not_migratable = json!({"type": "LiveMigratable", "status": "False",
        "reason": "InterfaceNotLiveMigratable",
        "message": "cannot migrate VMI which does not use masquerade or a migratable plugin to connect to the pod network"});
    create_owned_vmi(&server, &vm, json!({}), running(&[not_migratable]));
    let r = vm_act(&server, "bridge", "migrate", "");
    assert_refused(&r, 500, &denied("Cannot migrate VMI, Reason: InterfaceNotLiveMigratable, Message: cannot migrate VMI which does not use masquerade or a migratable plugin to connect to the pod network"), "");
    assert!(migrations().is_empty());

    let vm = create_vm(&server, "ns", "m", "Always");
    create_owned_vmi(&server, &vm, json!({}), running(&[]));
    assert_done(&vm_act(&server, "m", "migrate", ""), 202);
    let first = migrations();
    assert_eq!(first.len(), 1);
    let path = format!("{KV}/ns/virtualmachineinstancemigrations/{}", first[0]);
    let uid = server.get_json(&path)["metadata"]["uid"].as_str().unwrap().to_string();
    let in_flight = denied(&format!("in-flight migration detected. Active migration job ({uid}) is currently already in progress for VMI m."));
    assert_refused(&vm_act(&server, "m", "migrate", ""), 500, &in_flight, "");
    assert_refused(&vm_act(&server, "m", "migrate", r#"{"dryRun": ["All"]}"#), 500, &in_flight, "");
    assert_eq!(migrations().len(), 1);
    // Once it is over, another may start.
    let r = server.patch(
        &format!("{path}/status"),
        "application/merge-patch+json",
        &json!({"status": {"phase": "Succeeded"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_done(&vm_act(&server, "m", "migrate", ""), 202);
    assert_eq!(migrations().len(), 2);

    // Halted and still stopping: only a grace period shorter than the VMI's.
    let vm = create_vm(&server, "ns", "halting", "Halted");
    let spec = json!({"terminationGracePeriodSeconds": 30, "domain": {"devices": {}}});
    create_owned_vmi(&server, &vm, spec, running(&[]));
    let shorter = conflict(
        "virtualmachine",
        "halting",
        "Halted only supports manual stop requests with a shorter graceperiod",
    );
    for body in ["", r#"{"gracePeriod": 30}"#, r#"{"gracePeriod": 45}"#] {
        assert_refused(&vm_act(&server, "halting", "stop", body), 409, &shorter, "virtualmachine");
    }
    assert_done(&vm_act(&server, "halting", "stop", r#"{"gracePeriod": 10}"#), 202);
    let vmi = get(&server, "virtualmachineinstances", "halting").unwrap();
    assert_eq!(vmi["spec"]["terminationGracePeriodSeconds"], 10);
    assert_refused(
        &vm_act(&server, "halting", "stop", r#"{"gracePeriod": 10}"#),
        409,
        &shorter,
        "virtualmachine",
    );
    assert_done(&vm_act(&server, "halting", "stop", r#"{"gracePeriod": 0}"#), 202);
}

/// The listed routes beyond the actions: backup and SEV refused as the simulated cluster
/// would, the object graph computed from the objects, evacuation cancelled, expand-vm-spec.
#[test]
fn object_graphs_evacuations_expansions_and_refusals() {
    let server = TestServer::start();
    server.namespace("ns");
    let vmi_c = |name: &str, msg: &str| conflict("virtualmachineinstance", name, msg);
    const VMI: &str = "virtualmachineinstance";

    create_vmi(&server, "ns", "sched", json!({}), json!({"phase": "Scheduling"}));
    create_vmi(&server, "ns", "run", json!({"domain": {"devices": {}}}), running(&[]));
    let r = vmi_act(&server, "sched", "backup", "");
    assert_refused(&r, 409, &vmi_c("sched", "VM is not running"), VMI);
    assert_refused(
        &vmi_act(&server, "run", "backup", ""),
        400,
        "the simulated VMI has no disks to back up",
        "",
    );
    let r = vmi_act(&server, "run", "redefine-checkpoint", "");
    assert_refused(&r, 409, &vmi_c("run", "ChangedBlockTracking is not enabled"), VMI);
    for (method, sev) in [
        ("GET", "fetchcertchain"),
        ("GET", "querylaunchmeasurement"),
        ("PUT", "setupsession"),
        ("PUT", "injectlaunchsecret"),
    ] {
        let r = act(&server, method, "virtualmachineinstances", "run", &format!("sev/{sev}"), "");
        assert_refused(&r, 400, "'WorkloadEncryptionSEV' feature gate is not enabled", "");
    }

    // The object graph: the VM, its VMI once created, its instance type, credentials and
    // volumes' objects.
    let ns = |kind: &str, group: &str, name: &str| json!({"objectReference": {"apiGroup": group, "kind": kind, "name": name, "namespace": "ns"}});
    let mut vm = self::vm("g", "Halted");
    vm["spec"]["instancetype"] = json!({"name": "u1.small"});
    vm["spec"]["template"]["spec"]["accessCredentials"] = json!([{"sshPublicKey": {"source": {"secret": {"secretName": "keys"}}, "propagationMethod": {"noCloud": {}}}}]);
    vm["spec"]["template"]["spec"]["volumes"] = json!([
        {"name": "root", "dataVolume": {"name": "root-dv"}},
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-pvc"}},
        {"name": "cfg", "configMap": {"name": "cm"}},
        {"name": "init", "cloudInitNoCloud": {"userDataSecretRef": {"name": "userdata"}}},
        {"name": "disk", "containerDisk": {"image": "quay.io/x"}}
    ]);
    let r = server.post(&format!("{KV}/ns/virtualmachines"), &vm);
    assert_eq!(r.status, 201, "{}", r.text());
    let graph = act(&server, "GET", "virtualmachines", "g", "objectgraph", "");
    assert_eq!(graph.status, 200, "{}", graph.text());
    let mut dv = ns("datavolumes", "cdi.kubevirt.io", "root-dv");
    dv["children"] = json!([ns("persistentvolumeclaims", "", "root-dv")]);
    let instancetype = json!({"objectReference": {"apiGroup": "instancetype.kubevirt.io",
        "kind": "virtualmachineclusterinstancetypes", "name": "u1.small", "namespace": ""}, "optional": true});
    let tail = vec![
        ns("secrets", "", "keys"),
        dv,
        ns("persistentvolumeclaims", "", "data-pvc"),
        ns("configmaps", "", "cm"),
        ns("secrets", "", "userdata"),
    ];
    let mut want = ns("virtualmachines", "kubevirt.io", "g");
    let mut children = vec![instancetype.clone()];
    children.extend(tail.clone());
    want["children"] = json!(children);
    assert_eq!(graph.json(), want);
    set_vm_status(&server, "ns", "g", json!({"created": true}));
    let mut children = vec![ns("virtualmachineinstances", "kubevirt.io", "g"), instancetype];
    children.extend(tail);
    want["children"] = json!(children);
    assert_eq!(act(&server, "GET", "virtualmachines", "g", "objectgraph", "").json(), want);
    // A VMI's graph, from its own spec; one without dependencies has no children.
    let spec = json!({"domain": {"devices": {}}, "volumes": [{"name": "cfg", "configMap": {"name": "cm"}}]});
    create_vmi(&server, "ns", "solo", spec, running(&[]));
    let mut want = ns("virtualmachineinstances", "kubevirt.io", "solo");
    want["children"] = json!([ns("configmaps", "", "cm")]);
    assert_eq!(
        act(&server, "GET", "virtualmachineinstances", "solo", "objectgraph", "").json(),
        want
    );
    let bare = act(&server, "GET", "virtualmachineinstances", "run", "objectgraph", "").json();
    assert_eq!(bare, ns("virtualmachineinstances", "kubevirt.io", "run"));
    // kubectl reads the graph, and shows a stream's plain GET refused as gorilla's 400.
    let kubectl = Kubectl::new(&server);
    let raw = kubectl.ok(&[
        "get",
        "--raw",
        &format!("{SUB}/ns/virtualmachineinstances/solo/objectgraph"),
    ]);
    assert_eq!(serde_json::from_str::<Value>(&raw).unwrap(), want);
    let err =
        kubectl.fails(&["get", "--raw", &format!("{SUB}/ns/virtualmachineinstances/run/vnc")]);
    assert!(err.contains("(BadRequest)"), "{err}");
    let r = act(&server, "GET", "virtualmachines", "ghost", "objectgraph", "");
    assert_refused(&r, 404, r#"virtualmachine.kubevirt.io "ghost" not found"#, "virtualmachine");

    // Evacuation: cancelled when the body names the node; nothing to do without one.
    let r = server.patch(
        &format!("{KV}/ns/virtualmachineinstances/run"),
        "application/merge-patch+json",
        &json!({"status": {"evacuationNodeName": "node-1"}}),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r#"{"evacuationNodeName": "node-1"}"#;
    assert_done(
        &vmi_act(
            &server,
            "run",
            "evacuate/cancel",
            r#"{"evacuationNodeName": "node-1", "dryRun": ["All"]}"#,
        ),
        200,
    );
    assert_eq!(
        get(&server, "virtualmachineinstances", "run").unwrap()["status"]["evacuationNodeName"],
        "node-1"
    );
    assert_done(&vmi_act(&server, "run", "evacuate/cancel", body), 200);
    assert!(get(&server, "virtualmachineinstances", "run").unwrap()["status"]
        ["evacuationNodeName"]
        .is_null());
    assert_done(&vmi_act(&server, "run", "evacuate/cancel", body), 200);
    let r = vm_act(&server, "g", "evacuate/cancel", body);
    assert_refused(&r, 404, r#"virtualmachineinstance.kubevirt.io "g" not found"#, VMI);
    create_vm(&server, "ns", "stopped", "Halted");
    let r = vm_act(&server, "stopped", "evacuate/cancel", body);
    assert_refused(
        &r,
        409,
        &conflict("virtualmachine", "stopped", "VMI is not started"),
        "virtualmachine",
    );

    // expand-vm-spec: the VM of the body, in the request's namespace.
    let expand = |body: &Value| {
        let path = format!("{SUB}/ns/expand-vm-spec");
        let bytes = body.to_string();
        server.request("PUT", &path, &[], Some(("application/json", bytes.as_bytes())))
    };
    let r = expand(&self::vm("x", "Always"));
    assert_eq!(r.status, 200, "{}", r.text());
    let mut want = self::vm("x", "Always");
    want["metadata"]["namespace"] = json!("ns");
    assert_eq!(r.json(), want);
    let mut elsewhere = self::vm("x", "Always");
    elsewhere["metadata"]["namespace"] = json!("other");
    assert_refused(&expand(&elsewhere), 400, "VM namespace must be empty or ns", "");
    assert_refused(
        &expand(&json!({"kind": "VirtualMachine"})),
        400,
        "Object is not a valid VirtualMachine",
        "",
    );
}

/// A VM's hotplug requests reach its template and its running VMI, then leave its status
/// (vm.go handleVolumeRequests, trimDoneVolumeRequests).
#[test]
fn vm_hotplug_reaches_the_template_and_the_running_vmi() {
    let server = with_vm("h", "Always", "Running");
    let add = r#"{"name": "hp", "disk": {"disk": {"bus": "scsi"}}, "volumeSource": {"persistentVolumeClaim": {"claimName": "claim"}}}"#;
    assert_done(&vm_act(&server, "h", "addvolume", add), 202);
    let volume = json!({"name": "hp", "persistentVolumeClaim": {"claimName": "claim", "hotpluggable": true}});
    let has = |obj: &Value, path: &str| {
        obj.pointer(path).and_then(Value::as_array).is_some_and(|v| v.contains(&volume))
    };
    eventually(Duration::from_secs(10), || {
        let vm = get(&server, "virtualmachines", "h")?;
        let vmi = get(&server, "virtualmachineinstances", "h")?;
        (has(&vm, "/spec/template/spec/volumes")
            && has(&vmi, "/spec/volumes")
            && vm["status"]["volumeRequests"].is_null())
        .then_some(())
    });
    let vmi = get(&server, "virtualmachineinstances", "h").unwrap();
    let disks = vmi["spec"]["domain"]["devices"]["disks"].as_array().unwrap();
    assert!(disks.contains(&json!({"name": "hp", "disk": {"bus": "scsi"}})), "{disks:?}");
    // Removed again, from both.
    assert_done(&vm_act(&server, "h", "removevolume", r#"{"name": "hp"}"#), 202);
    eventually(Duration::from_secs(10), || {
        let vm = get(&server, "virtualmachines", "h")?;
        let vmi = get(&server, "virtualmachineinstances", "h")?;
        (!has(&vm, "/spec/template/spec/volumes")
            && !has(&vmi, "/spec/volumes")
            && vm["status"]["volumeRequests"].is_null())
        .then_some(())
    });
}
