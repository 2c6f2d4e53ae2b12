//! The serial console: virt-api's checks before the upgrade (pkg/virt-api/rest/console.go), the
//! upgrade (gorilla's, `plain.kubevirt.io` echoed when offered), one session per VMI with the
//! old one cut as virt-handler cuts it (pkg/virt-handler/rest/console.go), the guest behind it
//! (boot log, login with cloud-init's credentials, a shell that answers as the VMI), and the
//! agent's `userlist` following who is logged in.

use serde_json::json;

use super::client::{console, open, running, users, vm, vmi_when, Ended, KV, PLAIN, SUB};
use crate::common::{simulating, TestServer};

fn console_path(ns: &str, name: &str) -> String {
    format!("{SUB}/{ns}/virtualmachineinstances/{name}/console")
}

#[test]
fn the_console_checks_then_upgrades_as_virt_api_does() {
    let s = simulating(&["--simulate-speed", "0.1"]);
    s.namespace("cc");
    // KV subresource.go FetchVirtualMachineInstance: a missing VMI is a 404 Status.
    let missing = open(&s, &console_path("cc", "nope"), &[PLAIN], &[]).err().unwrap();
    assert_eq!(missing.status, 404);
    let status: serde_json::Value = serde_json::from_str(&missing.body).unwrap();
    assert_eq!(status["message"], "virtualmachineinstance.kubevirt.io \"nope\" not found");
    // rest/console.go: no serial console attached.
    let mut no_serial = vm("noserial", "Always", "masquerade", json!({}));
    no_serial["spec"]["template"]["spec"]["domain"]["devices"]["autoattachSerialConsole"] =
        json!(false);
    assert_eq!(s.post(&format!("{KV}/cc/virtualmachines"), &no_serial).status, 201);
    assert_eq!(
        s.post(&format!("{KV}/cc/virtualmachines"), &vm("vm1", "Always", "masquerade", json!({})))
            .status,
        201
    );
    vmi_when(&s, "cc", "noserial", running);
    vmi_when(&s, "cc", "vm1", running);
    let refused = open(&s, &console_path("cc", "noserial"), &[PLAIN], &[]).err().unwrap();
    assert_eq!(refused.status, 400);
    assert!(
        refused.body.contains("\"message\":\"No serial consoles are present.\""),
        "{}",
        refused.body
    );

    // gorilla's Upgrader: a request that is no handshake is a plain 400.
    let plain = s.get(&console_path("cc", "vm1"));
    assert_eq!((plain.status, plain.text().as_str()), (400, "Bad Request\n"));
    assert_eq!(plain.header("sec-websocket-version"), Some("13"));

    // The subprotocol is echoed when offered among others (KV tests/vnc_test.go 1612/1613)...
    let c = open(&s, &console_path("cc", "vm1"), &["fantasy.protocol", PLAIN], &[]).ok().unwrap();
    assert_eq!(c.protocol.as_deref(), Some(PLAIN));
    drop(c);
    // ... and absent when not (kubevirt-manager's xterm page, kcli); v1alpha3 serves it too.
    let v1alpha3 =
        "/apis/subresources.kubevirt.io/v1alpha3/namespaces/cc/virtualmachineinstances/vm1/console";
    let c = open(&s, v1alpha3, &[], &[]).ok().unwrap();
    assert_eq!(c.protocol, None);
}

#[test]
fn a_console_sees_the_boot_logs_in_with_cloud_init_and_the_shell_answers_as_the_vmi() {
    let s = simulating(&["--simulate-speed", "0.1", "--simulate-seed", "7"]);
    s.namespace("gc");
    assert_eq!(
        s.post(&format!("{KV}/gc/virtualmachines"), &vm("vm1", "Always", "masquerade", json!({})))
            .status,
        201
    );
    let vmi = vmi_when(&s, "gc", "vm1", running);
    // Attached as the guest boots: the boot log, then the login prompt.
    let mut c = console(&s, "gc", "vm1");
    let boot = c.expect("vm1 login: ");
    assert!(boot.contains("Linux version 6.8.5-301.fc40.x86_64"), "{boot}");
    assert!(
        boot.contains(
            "Fedora Linux 40 (Cloud Edition)\r\nKernel 6.8.5-301.fc40.x86_64 on an x86_64 (ttyS0)"
        ),
        "{boot}"
    );
    assert!(users(&s, "gc", "vm1").is_empty());

    // A wrong password is refused; text frames are not keystrokes.
    c.send("fedora\r");
    c.expect("Password: ");
    c.send("wrong\r");
    c.expect("Login incorrect\r\nvm1 login: ");
    c.ws.send(tungstenite::Message::text("hostname\r")).unwrap();
    c.login("vm1", "fedora", "fedora-pw");
    assert_eq!(users(&s, "gc", "vm1"), ["fedora"]);

    let run = |c: &mut super::client::Console, cmd: &str| c.run("fedora", "vm1", cmd);
    assert_eq!(run(&mut c, "hostname"), "vm1\r\n");
    assert_eq!(run(&mut c, "whoami"), "fedora\r\n");
    assert_eq!(run(&mut c, "sudo whoami"), "root\r\n");
    // Masquerade: the guest holds 10.0.2.2/24 behind NAT, with the VMI's MAC.
    let mac = vmi["status"]["interfaces"][0]["mac"].as_str().unwrap();
    let ip = run(&mut c, "ip addr");
    assert!(ip.contains(&format!("link/ether {mac} ")), "{ip}");
    assert!(ip.contains("inet 10.0.2.2/24 brd 10.0.2.255"), "{ip}");
    let os = &vmi["status"]["guestOSInfo"];
    let release = run(&mut c, "cat /etc/os-release");
    assert!(release.contains(&format!("PRETTY_NAME=\"{}\"", os["prettyName"].as_str().unwrap())));
    let uname = run(&mut c, "uname -a");
    assert!(
        uname.starts_with(&format!("Linux vm1 {} ", os["kernelRelease"].as_str().unwrap())),
        "{uname}"
    );
    // df's root is what the agent's filesystemlist reports.
    let fs = s.get_json(&format!("{SUB}/gc/virtualmachineinstances/vm1/filesystemlist"));
    assert_eq!(fs["items"][0]["diskName"], "vda1");
    assert!(run(&mut c, "df -h").contains("/dev/vda1       5.0G  1.2G  3.9G  24% /"));
    assert_eq!(run(&mut c, "echo hi there > note"), "");
    assert_eq!(run(&mut c, "cat note"), "hi there\r\n");
    assert_eq!(run(&mut c, "nosuch"), "bash: nosuch: command not found\r\n");
    let info = s.get_json(&format!("{SUB}/gc/virtualmachineinstances/vm1/guestosinfo"));
    assert_eq!(info["userList"][0]["userName"], "fedora");

    // A second console cuts the first, with no close frame (virtctl: "You were disconnected").
    let mut second = console(&s, "gc", "vm1");
    assert_eq!(c.ends(), Ended::Abnormally);
    // The port's session outlives the connection: still logged in.
    second.send("\r");
    second.expect("[fedora@vm1 ~]$ ");
    second.send("exit\r");
    second.expect("vm1 login: ");
    assert!(users(&s, "gc", "vm1").is_empty());
    // virtctl stop: the guest goes down with its VMI, and the console with it.
    let stop = s.put(&format!("{SUB}/gc/virtualmachines/vm1/stop"), &json!({}));
    assert_eq!(stop.status, 202, "{}", stop.text());
    second.expect("reboot: Power down");
    assert_eq!(second.ends(), Ended::Abnormally);
}

/// kube-apiserver's websocket ProtocolAuthenticator: a browser passes its token as a
/// subprotocol; it authenticates, and ABAC applies to `get` on `virtualmachineinstances/console`.
#[test]
fn a_browser_passes_its_bearer_token_as_a_websocket_subprotocol() {
    use crate::common::{abac_args, ServerOptions};
    use base64::Engine;
    let dir = tempfile::tempdir().unwrap();
    let (tokens, policy) = (dir.path().join("tokens.csv"), dir.path().join("policy.jsonl"));
    std::fs::write(&tokens, "tok-root,root,0,\"admins\"\ntok-other,other,1\n").unwrap();
    let rule = json!({"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy",
        "spec": {"group": "admins", "namespace": "*", "resource": "*", "apiGroup": "*"}});
    std::fs::write(&policy, format!("{rule}\n")).unwrap();
    let mut args = abac_args(&tokens, &policy);
    args.extend(["--simulate", "--simulate-speed", "0.1"].map(String::from));
    let s = TestServer::start_with(ServerOptions { args, ..Default::default() });
    let root = [("Authorization", "Bearer tok-root")];
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ba"}});
    let body = ns.to_string();
    assert_eq!(
        s.request("POST", "/api/v1/namespaces", &root, Some(("application/json", body.as_bytes())))
            .status,
        201
    );
    let body = vm("vm1", "Always", "bridge", json!({})).to_string();
    let created = s.request(
        "POST",
        &format!("{KV}/ba/virtualmachines"),
        &root,
        Some(("application/json", body.as_bytes())),
    );
    assert_eq!(created.status, 201);
    crate::common::eventually(std::time::Duration::from_secs(20), || {
        let r = s.request("GET", &format!("{KV}/ba/virtualmachineinstances/vm1"), &root, None);
        (r.status == 200 && running(&r.json())).then_some(())
    });
    let path = console_path("ba", "vm1");
    let token = |t: &str| {
        let enc = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(t);
        format!("base64url.bearer.authorization.k8s.io.{enc}")
    };
    // No credentials: 401.
    assert_eq!(open(&s, &path, &[PLAIN], &[]).err().unwrap().status, 401);
    // The token alone is refused (kube: "missing additional subprotocol").
    assert_eq!(open(&s, &path, &[&token("tok-root")], &[]).err().unwrap().status, 401);
    // A user ABAC does not allow: 403.
    assert_eq!(open(&s, &path, &[&token("tok-other"), PLAIN], &[]).err().unwrap().status, 403);
    // Accepted, the token's subprotocol is not echoed: plain.kubevirt.io is.
    let mut c = open(&s, &path, &[&token("tok-root"), PLAIN], &[]).ok().unwrap();
    assert_eq!(c.protocol.as_deref(), Some(PLAIN));
    c.expect("vm1 login: ");
    // Bridge: the guest holds the VMI's own address.
    c.login("vm1", "fedora", "fedora-pw");
    let r = s.request("GET", &format!("{KV}/ba/virtualmachineinstances/vm1"), &root, None);
    let ip = r.json()["status"]["interfaces"][0]["ipAddress"].as_str().unwrap().to_string();
    assert!(c.run("fedora", "vm1", "ip a").contains(&format!("inet {ip}/24 ")));
}
