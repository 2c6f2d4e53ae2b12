//! `spec.accessCredentials` as a user meets them: virt-api's refusals
//! (pkg/virt-api/webhooks/validating-webhook/admitters/vmi-create-admitter.go
//! `validateAccessCredentials`), the keys and passwords of the Secrets in the guest (noCloud's
//! at boot through cloud-init, pkg/cloud-init/cloud-init.go; the agent's re-applied while it
//! runs, pkg/virt-launcher/virtwrap/access-credentials/access_credentials.go), and
//! virt-handler's `AccessCredentialsSynchronized` with its event (pkg/virt-handler/vm.go).

use std::time::Duration;

use serde_json::{json, Value};

use super::client::{console, running, vm, vmi_when, KV};
use crate::common::{condition, eventually, simulating, Kubectl};

fn secret_source(name: &str) -> Value {
    json!({"secret": {"secretName": name}})
}

/// `vm` with `creds` as its template's access credentials.
fn vm_with(name: &str, creds: Value) -> Value {
    let mut v = vm(name, "Always", "masquerade", json!({}));
    v["spec"]["template"]["spec"]["accessCredentials"] = creds;
    v
}

#[test]
fn secrets_reach_the_guest_and_a_changed_one_reaches_it_running() {
    let s = simulating(&["--simulate-speed", "0.1"]);
    s.namespace("ac");
    let k = Kubectl::in_namespace(&s, "ac");
    // One value may hold several keys, a line each.
    let boot =
        k.file("boot-keys", "ssh-ed25519 AAAAboot1 one@host\nssh-ed25519 AAAAboot2 two@host\n");
    let from_file = format!("--from-file=keys={}", boot.display());
    k.ok(&["create", "secret", "generic", "boot-keys", &from_file]);
    k.ok(&[
        "create",
        "secret",
        "generic",
        "agent-keys",
        "--from-literal=k1=ssh-rsa AAAAagent1 a@host",
    ]);
    k.ok(&["create", "secret", "generic", "passwords", "--from-literal=fedora=agent-pw"]);
    let creds = json!([
        {"sshPublicKey": {"source": secret_source("boot-keys"), "propagationMethod": {"noCloud": {}}}},
        {"sshPublicKey": {"source": secret_source("agent-keys"),
                          "propagationMethod": {"qemuGuestAgent": {"users": ["root"]}}}},
        {"userPassword": {"source": secret_source("passwords"), "propagationMethod": {"qemuGuestAgent": {}}}},
    ]);
    let manifest = k.file("vm.json", &vm_with("vm1", creds).to_string());
    k.ok(&["apply", "-f", manifest.to_str().unwrap()]);
    let vmi = vmi_when(&s, "ac", "vm1", |v| {
        running(v) && condition(v, "AccessCredentialsSynchronized").is_some()
    });
    // vm.go updateAccessCredentialConditions: True, no message, and the Normal event.
    let synced = condition(&vmi, "AccessCredentialsSynchronized").unwrap();
    assert_eq!(synced["status"], "True");
    assert!(synced.get("message").is_none_or(|m| m == ""), "{synced}");
    let events: Value = serde_json::from_str(&k.ok(&[
        "get",
        "events",
        "--field-selector",
        "reason=AccessCredentialsSyncSuccess,involvedObject.name=vm1",
        "-o",
        "json",
    ]))
    .unwrap();
    let event = &events["items"][0];
    assert_eq!(event["message"], "Access credentials sync successful.", "{events}");
    assert_eq!(event["type"], "Normal");
    assert_eq!(event["involvedObject"]["kind"], "VirtualMachineInstance");

    // The userPassword Secret's password, not cloud-init's, logs the user in.
    let mut c = console(&s, "ac", "vm1");
    c.login("vm1", "fedora", "agent-pw");
    let run = |c: &mut super::client::Console, cmd: &str| c.run("fedora", "vm1", cmd);
    // noCloud: cloud-init gave the default user the Secret's keys.
    assert_eq!(
        run(&mut c, "cat ~/.ssh/authorized_keys"),
        "ssh-ed25519 AAAAboot1 one@host\r\nssh-ed25519 AAAAboot2 two@host\r\n"
    );
    // qemuGuestAgent: the listed user's keys are the Secret's.
    assert_eq!(run(&mut c, "sudo cat /root/.ssh/authorized_keys"), "ssh-rsa AAAAagent1 a@host\r\n");

    // A key added to the Secret while the guest runs reaches it without a restart.
    let added = json!({"stringData": {"k2": "ssh-rsa AAAAagent2 b@host"}}).to_string();
    k.ok(&["patch", "secret", "agent-keys", "--type", "merge", "-p", &added]);
    let keys = eventually(Duration::from_secs(10), || {
        let keys = run(&mut c, "sudo cat /root/.ssh/authorized_keys");
        keys.contains("AAAAagent2").then_some(keys)
    });
    assert_eq!(keys, "ssh-rsa AAAAagent1 a@host\r\nssh-rsa AAAAagent2 b@host\r\n");
    // ... while cloud-init's keys, read at boot, stay as they were.
    let boot = json!({"stringData": {"keys": "ssh-ed25519 AAAAlate late@host"}}).to_string();
    k.ok(&["patch", "secret", "boot-keys", "--type", "merge", "-p", &boot]);
    std::thread::sleep(Duration::from_secs(2));
    assert!(!run(&mut c, "cat ~/.ssh/authorized_keys").contains("AAAAlate"));
    let now: Value = serde_json::from_str(&k.ok(&["get", "vmi", "vm1", "-o", "json"])).unwrap();
    assert_eq!(now["metadata"]["uid"], vmi["metadata"]["uid"], "the same VMI ran throughout");
}

#[test]
fn virt_api_refuses_each_malformed_credential_with_its_field() {
    let s = simulating(&["--simulate-speed", "0.1"]);
    s.namespace("acr");
    let k = Kubectl::in_namespace(&s, "acr");
    let src = secret_source("s");
    let no_volume = |mut v: Value| {
        v["spec"]["template"]["spec"]["volumes"] = json!([{"name": "root", "containerDisk": {"image": "quay.io/containerdisks/fedora:40"}}]);
        v["spec"]["template"]["spec"]["domain"]["devices"]["disks"] =
            json!([{"name": "root", "disk": {"bus": "virtio"}}]);
        v
    };
    let at = "spec.template.spec.accessCredentials[0]";
    let cases = [
        (
            vm_with("two-methods", json!([{"sshPublicKey": {"source": src,
                "propagationMethod": {"noCloud": {}, "qemuGuestAgent": {"users": ["u"]}}}}])),
            format!("{at}.sshPublicKey.propagationMethod: {at} must have exactly one propagationMethod set"),
        ),
        (
            vm_with("no-source", json!([{"sshPublicKey": {"source": {},
                "propagationMethod": {"noCloud": {}}}}])),
            format!("{at}.sshPublicKey.source: {at} must have exactly one source set"),
        ),
        (
            vm_with("both-types", json!([{"sshPublicKey": {"source": src, "propagationMethod": {"noCloud": {}}},
                "userPassword": {"source": src, "propagationMethod": {"qemuGuestAgent": {}}}}])),
            format!("{at}: {at} must have exactly one access credential type set"),
        ),
        (
            no_volume(vm_with("no-nocloud", json!([{"sshPublicKey": {"source": src,
                "propagationMethod": {"noCloud": {}}}}]))),
            format!("{at}.sshPublicKey.propagationMethod: {at} requires a noCloud volume to exist when the noCloud propagationMethod is in use."),
        ),
        (
            vm_with("no-configdrive", json!([{"sshPublicKey": {"source": src,
                "propagationMethod": {"configDrive": {}}}}])),
            format!("{at}.sshPublicKey.propagationMethod: {at} requires a configDrive volume to exist when the configDrive propagationMethod is in use."),
        ),
        (
            vm_with("no-users", json!([{"sshPublicKey": {"source": src,
                "propagationMethod": {"qemuGuestAgent": {"users": []}}}}])),
            format!("{at}.sshPublicKey.propagationMethod.qemuGuestAgent.users: {at} requires at least one user to be present in the users list"),
        ),
        (
            vm_with("no-password-method", json!([{"userPassword": {"source": src, "propagationMethod": {}}}])),
            format!("{at}.userPassword.propagationMethod: {at} must have exactly one propagationMethod set"),
        ),
    ];
    // Each case: the VM and the cause (its field: its message).
    for (v, message) in cases {
        let name = v["metadata"]["name"].as_str().unwrap().to_string();
        let manifest = k.file(&format!("{name}.json"), &v.to_string());
        let err = k.fails(&["apply", "-f", manifest.to_str().unwrap()]);
        // kubectl shows a 422 `Invalid` by its causes (cmdutil StandardErrorMessage), as it
        // shows KubeVirt's: `field: message`.
        assert_eq!(err.trim(), format!("The request is invalid: {message}"), "{name}");
    }

    // An update is refused as a create is; the VMI's own webhook names the VMI's fields, and
    // the answer is virt-api's 422 with the causes (webhooks/utils.go ToAdmissionResponse).
    let ok = vm_with(
        "ok",
        json!([{"sshPublicKey": {"source": src, "propagationMethod": {"noCloud": {}}}}]),
    );
    assert_eq!(s.post(&format!("{KV}/acr/virtualmachines"), &ok).status, 201);
    // The simulated virt-controller writes the new VM meanwhile: a 409 before admission is
    // kube's answer to a stale resourceVersion (registry/store.go Update), so read again and
    // retry as client-go's RetryOnConflict does.
    let r = (0..20)
        .map(|_| {
            let mut bad = s.get_json(&format!("{KV}/acr/virtualmachines/ok"));
            bad["spec"]["template"]["spec"]["accessCredentials"][0]["sshPublicKey"]
                ["propagationMethod"] = json!({"configDrive": {}});
            s.put(&format!("{KV}/acr/virtualmachines/ok"), &bad)
        })
        .find(|r| r.status != 409)
        .expect("an update not in conflict");
    assert_eq!(r.status, 422, "{}", r.text());
    let vmi = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
        "metadata": {"name": "vmi1"},
        "spec": {"domain": {"devices": {}, "resources": {"requests": {"memory": "128Mi"}}},
                 "accessCredentials": [{"userPassword": {"source": src, "propagationMethod": {}}}]}});
    let r = s.post(&format!("{KV}/acr/virtualmachineinstances"), &vmi);
    assert_eq!(r.status, 422, "{}", r.text());
    let status = r.json();
    assert_eq!(status["reason"], "Invalid");
    assert_eq!(
        status["message"],
        "admission webhook \"virtualmachineinstances-create-validator.kubevirt.io\" denied the request: spec.accessCredentials[0] must have exactly one propagationMethod set"
    );
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldValueInvalid",
                "message": "spec.accessCredentials[0] must have exactly one propagationMethod set",
                "field": "spec.accessCredentials[0].userPassword.propagationMethod"}])
    );
}

#[test]
fn a_missing_secret_keeps_the_launcher_from_starting_until_it_exists() {
    let s = simulating(&["--simulate-speed", "0.1"]);
    s.namespace("acm");
    let k = Kubectl::in_namespace(&s, "acm");
    let creds = json!([{"userPassword": {"source": secret_source("later"),
                                         "propagationMethod": {"qemuGuestAgent": {}}}}]);
    let manifest = k.file("vm.json", &vm_with("vm1", creds).to_string());
    k.ok(&["apply", "-f", manifest.to_str().unwrap()]);
    // rendervolumes.go withAccessCredentials: the launcher mounts the Secret; the kubelet
    // cannot, so its containers never start and the VMI waits in Scheduling.
    let pod = eventually(Duration::from_secs(10), || {
        let pods: Value = serde_json::from_str(&k.ok(&["get", "pods", "-o", "json"])).unwrap();
        let pod = pods["items"][0].clone();
        condition(&pod, "PodScheduled").is_some_and(|c| c["status"] == "True").then_some(pod)
    });
    let volumes = pod["spec"]["volumes"].as_array().unwrap();
    let mounted = volumes.iter().find(|v| v["name"] == "later-access-cred");
    assert_eq!(mounted.unwrap()["secret"]["secretName"], "later", "{volumes:?}");
    std::thread::sleep(Duration::from_secs(3));
    let vmi: Value = serde_json::from_str(&k.ok(&["get", "vmi", "vm1", "-o", "json"])).unwrap();
    assert_eq!(vmi["status"]["phase"], "Scheduling", "{vmi}");
    assert!(condition(&vmi, "AccessCredentialsSynchronized").is_none());
    let phase = k.ok(&["get", "pods", "-o", "jsonpath={.items[0].status.phase}"]);
    assert_eq!(phase, "Pending");
    // The kubelet's event says why (operation_generator.go GenerateMountVolumeFunc).
    let events: Value = serde_json::from_str(&k.ok(&[
        "get",
        "events",
        "--field-selector",
        "reason=FailedMount",
        "-o",
        "json",
    ]))
    .unwrap();
    let event = &events["items"][0];
    assert_eq!(
        event["message"],
        "MountVolume.SetUp failed for volume \"later-access-cred\" : secret \"later\" not found",
        "{events}"
    );
    assert_eq!(
        (event["type"].as_str(), event["involvedObject"]["kind"].as_str()),
        (Some("Warning"), Some("Pod"))
    );

    // The Secret made, the kubelet's retry mounts it: the guest runs with its password.
    k.ok(&["create", "secret", "generic", "later", "--from-literal=fedora=late-pw"]);
    let vmi = vmi_when(&s, "acm", "vm1", |v| {
        running(v) && condition(v, "AccessCredentialsSynchronized").is_some()
    });
    assert_eq!(condition(&vmi, "AccessCredentialsSynchronized").unwrap()["status"], "True");
    let mut c = console(&s, "acm", "vm1");
    c.login("vm1", "fedora", "late-pw");
}
