//! SSH and scp to a simulated guest as `virtctl ssh`/`scp` reach it: OpenSSH's `ssh` and
//! `scp` (Debian's openssh-client) with a ProxyCommand bridging stdio to virt-api's
//! port-forward websocket (pkg/virtctl/ssh/ssh.go), here the server's own `port-forward
//! --stdio`. Before that, virt-api's checks and its dial (pkg/virt-api/rest/portforward.go,
//! dialers.go, subresource.go `FetchVirtualMachineInstanceForVM`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use super::client::{open, running, users, vm, vmi_when, KV, PLAIN, SUB};
use crate::common::{eventually, simulating, TestServer};

const VMS: &str = "/apis/subresources.kubevirt.io/v1/namespaces";

/// A VM whose cloud-init authorizes `key` for the default user (password `fedora-pw`).
fn vm_with_key(name: &str, key: &str) -> Value {
    let mut v = vm(name, "Always", "masquerade", json!({}));
    let user_data = format!(
        "#cloud-config\npassword: fedora-pw\nchpasswd: {{expire: false}}\nuser: fedora\n\
         ssh_authorized_keys:\n  - {key}\n"
    );
    v["spec"]["template"]["spec"]["volumes"][1]["cloudInitNoCloud"]["userData"] = json!(user_data);
    v
}

fn tool(name: &str) -> Command {
    let found = Command::new("sh").args(["-c", &format!("command -v {name}")]).output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "{name} is not installed: the ssh tests need Debian's openssh-client (.ci/run installs it)"
    );
    Command::new(name)
}

/// OpenSSH's options as virtctl ssh builds them, with a known_hosts of the test's own.
struct Ssh {
    dir: PathBuf,
    proxy: String,
}

impl Ssh {
    fn new(s: &TestServer, dir: &Path, target: &str) -> Ssh {
        let bin = crate::common::binary();
        let proxy = format!(
            "ProxyCommand={} port-forward --stdio --server {} {target} 22",
            bin.display(),
            s.url("")
        );
        Ssh { dir: dir.to_path_buf(), proxy }
    }

    fn opts(&self, cmd: &mut Command, strict: bool) {
        let known = self.dir.join("known_hosts");
        cmd.args(["-o", &self.proxy])
            .args(["-o", &format!("UserKnownHostsFile={}", known.display())])
            .args([
                "-o",
                if strict { "StrictHostKeyChecking=yes" } else { "StrictHostKeyChecking=no" },
            ])
            .args(["-o", "BatchMode=yes", "-o", "ConnectTimeout=20"])
            .arg("-i")
            .arg(self.dir.join("key"));
    }

    fn ssh(&self, host: &str, command: &str) -> Output {
        let mut cmd = tool("ssh");
        self.opts(&mut cmd, false);
        cmd.arg(format!("fedora@{host}")).arg(command).output().unwrap()
    }

    fn scp(&self, from: &str, to: &str) -> Output {
        let mut cmd = tool("scp");
        self.opts(&mut cmd, false);
        cmd.args([from, to]).output().unwrap()
    }
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into(), String::from_utf8_lossy(&o.stderr).into())
}

/// A key pair in `dir` (`key`, `key.pub`); the public key's line.
fn keygen(dir: &Path) -> String {
    let out = tool("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "tester@host", "-f"])
        .arg(dir.join("key"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    std::fs::read_to_string(dir.join("key.pub")).unwrap().trim().to_string()
}

/// Starts VM `name` with `key` and waits until its guest's sshd answers (it starts once the
/// guest has booted).
fn start(s: &TestServer, ns: &str, name: &str, key: &str, ssh: &Ssh) {
    assert_eq!(s.post(&format!("{KV}/{ns}/virtualmachines"), &vm_with_key(name, key)).status, 201);
    vmi_when(s, ns, name, running);
    eventually(Duration::from_secs(30), || {
        ssh.ssh(&format!("vmi.{name}.{ns}"), "hostname").status.success().then_some(())
    });
}

#[test]
fn port_forward_checks_then_dials_as_virt_api_does() {
    let s = simulating(&["--simulate-speed", "0.1"]);
    s.namespace("pf");
    let vmi_pf = |name: &str, port: &str| {
        format!("{SUB}/pf/virtualmachineinstances/{name}/portforward/{port}")
    };
    let vm_pf =
        |name: &str, port: &str| format!("{VMS}/pf/virtualmachines/{name}/portforward/{port}");
    let status = |r: super::client::Refused| -> (u16, String) {
        let v: Value = serde_json::from_str(&r.body).unwrap_or(Value::Null);
        (r.status, v["message"].as_str().unwrap_or(&r.body).to_string())
    };
    let refused = |path: &str| status(open(&s, path, &[PLAIN], &[]).err().unwrap());
    // subresource.go: the VMI (or the VM) missing.
    assert_eq!(
        refused(&vmi_pf("nope", "22")),
        (404, "virtualmachineinstance.kubevirt.io \"nope\" not found".into())
    );
    assert_eq!(
        refused(&vm_pf("nope", "22/tcp")),
        (404, "virtualmachine.kubevirt.io \"nope\" not found".into())
    );
    // FetchVirtualMachineInstanceForVM: a VM that is not started.
    let halted = vm("halted", "Halted", "masquerade", json!({}));
    assert_eq!(s.post(&format!("{KV}/pf/virtualmachines"), &halted).status, 201);
    assert_eq!(
        refused(&vm_pf("halted", "22")),
        (
            409,
            "Operation cannot be fulfilled on virtualmachine.kubevirt.io \"halted\": VMI is not started"
                .into()
        )
    );
    assert_eq!(s.post(&format!("{KV}/pf/virtualmachines"), &vm_with_key("vm1", "x")).status, 201);
    let vmi = vmi_when(&s, "pf", "vm1", running);
    let ip = vmi["status"]["interfaces"][0]["ipAddress"].as_str().unwrap().to_string();
    eventually(Duration::from_secs(30), || {
        open(&s, &vmi_pf("vm1", "22"), &[PLAIN], &[]).is_ok().then_some(())
    });
    // dialers.go netDial: nothing listens on port 80; virt-api answers before any upgrade.
    for path in [vmi_pf("vm1", "80"), vmi_pf("vm1", "80/tcp"), vm_pf("vm1", "80")] {
        assert_eq!(
            refused(&path),
            (
                500,
                format!("Internal error occurred: dialing VM: dial tcp {ip}:80: connect: connection refused")
            ),
            "{path}"
        );
    }
    // Port 22 upgrades, echoing the subprotocol, on both forms; sshd speaks first.
    for path in [vmi_pf("vm1", "22"), vm_pf("vm1", "22/tcp")] {
        let mut c = open(&s, &path, &[PLAIN], &[]).ok().unwrap();
        assert_eq!(c.protocol.as_deref(), Some(PLAIN));
        let banner = c.expect("\r\n");
        assert!(banner.starts_with("SSH-2.0-OpenSSH_9.6"), "{banner}");
    }
    // virt-api pings the client every second ("keep alive", streamer.go).
    let mut c = open(&s, &vmi_pf("vm1", "22"), &[PLAIN], &[]).ok().unwrap();
    let ping = eventually(Duration::from_secs(5), || match c.ws.read() {
        Ok(tungstenite::Message::Ping(p)) => Some(p),
        _ => None,
    });
    assert_eq!(&ping[..], b"keep alive");
    // A request that is no handshake: gorilla's plain 400.
    assert_eq!(s.get(&vmi_pf("vm1", "22")).status, 400);
    // rest/portforward.go: a paused VMI.
    assert_eq!(
        s.put(&format!("{SUB}/pf/virtualmachineinstances/vm1/pause"), &json!({})).status,
        200
    );
    vmi_when(&s, "pf", "vm1", |v| {
        v["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "Paused"))
    });
    assert_eq!(
        refused(&vmi_pf("vm1", "22")),
        (
            409,
            "Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io \"vm1\": VMI is paused"
                .into()
        )
    );
}

#[test]
fn openssh_runs_commands_logs_in_and_copies_files_through_the_bridge() {
    let s = simulating(&["--simulate-speed", "0.1", "--simulate-seed", "7"]);
    s.namespace("sh");
    let dir = tempfile::tempdir().unwrap();
    let key = keygen(dir.path());
    let ssh = Ssh::new(&s, dir.path(), "vmi/vm1/sh");
    start(&s, "sh", "vm1", &key, &ssh);
    let host = "vmi.vm1.sh";

    // exec: the command's output and its exit status.
    let out = ssh.ssh(host, "hostname");
    assert_eq!(text(&out).0, "vm1\n", "{:?}", text(&out));
    assert!(out.status.success());
    assert_eq!(text(&ssh.ssh(host, "whoami")).0, "fedora\n");
    let out = ssh.ssh(host, "frobnicate");
    assert_eq!(out.status.code(), Some(127));
    assert_eq!(text(&out).0, "bash: frobnicate: command not found\n");
    // The VM form (virtctl ssh vm/vm1): the same guest.
    let via_vm = Ssh::new(&s, dir.path(), "vm/vm1/sh");
    assert_eq!(text(&via_vm.ssh("vm.vm1.sh", "hostname")).0, "vm1\n");

    // scp (SFTP since OpenSSH 9.0): a file to the guest, seen by its shell, and back.
    let local = dir.path().join("notes.txt");
    std::fs::write(&local, "written by scp\n").unwrap();
    let up = ssh.scp(local.to_str().unwrap(), &format!("fedora@{host}:notes.txt"));
    assert!(up.status.success(), "{:?}", text(&up));
    assert_eq!(text(&ssh.ssh(host, "cat notes.txt")).0, "written by scp\n");
    assert_eq!(text(&ssh.ssh(host, "ls")).0, "notes.txt\n");
    let back = dir.path().join("back.txt");
    let down = ssh.scp(&format!("fedora@{host}:/home/fedora/notes.txt"), back.to_str().unwrap());
    assert!(down.status.success(), "{:?}", text(&down));
    assert_eq!(std::fs::read_to_string(&back).unwrap(), "written by scp\n");
    let denied = ssh.scp(local.to_str().unwrap(), &format!("fedora@{host}:/etc/motd"));
    assert!(!denied.status.success());

    // An interactive login (a pty): the user is in the agent's user list while it lasts.
    let mut cmd = tool("ssh");
    ssh.opts(&mut cmd, false);
    let mut shell = cmd
        .args(["-tt", &format!("fedora@{host}")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    eventually(Duration::from_secs(20), || {
        users(&s, "sh", "vm1").contains(&"fedora".into()).then_some(())
    });
    shell.stdin.as_mut().unwrap().write_all(b"id\r").unwrap();
    shell.stdin.as_mut().unwrap().write_all(b"exit\r").unwrap();
    let out = shell.wait_with_output().unwrap();
    let (stdout, _) = text(&out);
    assert!(stdout.contains("[fedora@vm1 ~]$ "), "{stdout}");
    assert!(stdout.contains("uid=1000(fedora)"), "{stdout}");
    assert!(stdout.contains("logout"), "{stdout}");
    assert!(out.status.success(), "{stdout}");
    eventually(Duration::from_secs(10), || users(&s, "sh", "vm1").is_empty().then_some(()));

    // Password authentication (cloud-init's `password`), typed through SSH_ASKPASS.
    let askpass = dir.path().join("askpass.sh");
    let password = |pw: &str| {
        std::fs::write(&askpass, format!("#!/bin/sh\necho {pw}\n")).unwrap();
        std::process::Command::new("chmod").arg("+x").arg(&askpass).status().unwrap();
        // OpenSSH takes an option's first value: these come before the batch ones.
        let mut cmd = tool("ssh");
        cmd.args(["-o", "BatchMode=no", "-o", "PubkeyAuthentication=no"]).args([
            "-o",
            "PreferredAuthentications=password",
            "-o",
            "NumberOfPasswordPrompts=1",
        ]);
        ssh.opts(&mut cmd, false);
        cmd.env("SSH_ASKPASS", &askpass)
            .env("SSH_ASKPASS_REQUIRE", "force")
            .env("DISPLAY", ":0")
            .stdin(Stdio::null())
            .arg(format!("fedora@{host}"))
            .arg("whoami")
            .output()
            .unwrap()
    };
    let right = password("fedora-pw");
    assert_eq!(text(&right).0, "fedora\n", "{:?}", text(&right));
    let wrong = password("nope");
    assert_eq!(wrong.status.code(), Some(255), "{:?}", text(&wrong));
    assert!(text(&wrong).1.contains("Permission denied"), "{:?}", text(&wrong));

    // The host key is the seed's: another server with the same seed and the same VM answers
    // with the key known_hosts holds (strict checking passes).
    drop(s);
    let again = simulating(&["--simulate-speed", "0.1", "--simulate-seed", "7"]);
    again.namespace("sh");
    let ssh2 = Ssh::new(&again, dir.path(), "vmi/vm1/sh");
    start(&again, "sh", "vm1", &key, &ssh2);
    let mut cmd = tool("ssh");
    ssh2.opts(&mut cmd, true);
    let out = cmd.arg(format!("fedora@{host}")).arg("hostname").output().unwrap();
    assert_eq!(text(&out).0, "vm1\n", "{:?}", text(&out));
}
