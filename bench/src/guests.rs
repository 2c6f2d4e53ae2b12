//! The guests scenario (`virt-bench guests [--count N]`): our server with `--simulate`, N VMs
//! whose cloud-init sets a user, a password and an SSH key, all Running; then a serial console
//! opened to each (virt-api's websocket, virtctl's protocol), logged in and answering a
//! command, and an SSH login to each (OpenSSH's `ssh` with a pty, through the server's
//! `port-forward --stdio` bridge as `virtctl ssh` runs it), all held open together. Measures the
//! server's memory (RSS) with the guests running and no session, then with every session
//! open: what a session costs. Fails on a request error, a guest not Running, or a session
//! that does not log in.

use std::io::Read;
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::client::IntoClientRequest;
use tungstenite::http::HeaderValue;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

use crate::backend::{self, Backend, Memory};
use crate::http::Conn;
use crate::ours::Ours;

const NS: &str = "guests";
const USER: &str = "bench";
const PASSWORD: &str = "bench-password";

pub struct GuestsResult {
    pub count: usize,
    /// After the server started, with no VM.
    pub idle: Option<Memory>,
    /// Every guest Running, no session open.
    pub running: Option<Memory>,
    /// Every guest Running with its console logged in and open.
    pub consoles: Option<Memory>,
    /// From the first console opened to the last logged in.
    pub login_all: Duration,
    pub failures: Vec<String>,
}

fn vm(i: usize, key: &str) -> Value {
    let user_data = format!(
        "#cloud-config\nuser: {USER}\npassword: {PASSWORD}\nchpasswd: {{expire: false}}\n\
         ssh_authorized_keys:\n  - {key}\n"
    );
    json!({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
        "metadata": {"name": format!("guest-{i}"), "namespace": NS},
        "spec": {"runStrategy": "Always", "template": {"spec": {
            "domain": {"devices": {"disks": [{"name": "cloudinit", "disk": {"bus": "virtio"}}]},
                       "resources": {"requests": {"memory": "64Mi"}}},
            "volumes": [{"name": "cloudinit", "cloudInitNoCloud": {"userData": user_data}}]
        }}}
    })
}

/// Whether every VMI of the namespace is Running, and how many are.
fn running(s: &Ours) -> Result<usize, String> {
    let path = format!("/apis/kubevirt.io/v1/namespaces/{NS}/virtualmachineinstances");
    let list: Value =
        serde_json::from_slice(&backend::fetch(s.endpoint(), &path)?).map_err(|e| e.to_string())?;
    let items = list["items"].as_array().cloned().unwrap_or_default();
    Ok(items.iter().filter(|i| i["status"]["phase"] == "Running").count())
}

/// A key pair in `dir` (`key`, `key.pub`): its public line.
fn keygen(dir: &Path) -> Result<String, String> {
    let out = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-f"])
        .arg(dir.join("key"))
        .output()
        .map_err(|e| format!("ssh-keygen (Debian's openssh-client): {e}"))?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into());
    }
    let key = std::fs::read_to_string(dir.join("key.pub")).map_err(|e| e.to_string())?;
    Ok(key.trim().to_string())
}

/// An SSH login to guest `name` as `virtctl ssh` makes it: OpenSSH with a pty, its
/// ProxyCommand the server's `port-forward --stdio`; held until dropped.
struct Ssh(Child);

impl Ssh {
    fn open(addr: &str, dir: &Path, name: &str) -> Result<Ssh, String> {
        let proxy = format!(
            "ProxyCommand={} port-forward --stdio --server http://{addr} vmi/{name}/{NS} 22",
            crate::ours::binary().display()
        );
        let known = format!("UserKnownHostsFile={}", dir.join("known_hosts").display());
        let mut child = Command::new("ssh")
            .args(["-tt", "-o", &proxy, "-o", &known, "-o", "StrictHostKeyChecking=no"])
            .args(["-o", "BatchMode=yes", "-o", "LogLevel=ERROR", "-i"])
            .arg(dir.join("key"))
            .arg(format!("{USER}@vmi.{name}.{NS}"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("ssh (Debian's openssh-client): {e}"))?;
        // The shell's prompt: logged in.
        let mut out = child.stdout.take().ok_or("no stdout")?;
        let mut seen = Vec::new();
        let mut buf = [0u8; 1024];
        let prompt = format!("[{USER}@{name} ~]$ ");
        while !String::from_utf8_lossy(&seen).contains(&prompt) {
            match out.read(&mut buf) {
                Ok(0) | Err(_) => {
                    let _ = child.kill();
                    return Err(format!("no prompt: {:?}", String::from_utf8_lossy(&seen)));
                }
                Ok(n) => seen.extend_from_slice(&buf[..n]),
            }
        }
        child.stdout = Some(out);
        Ok(Ssh(child))
    }
}

impl Drop for Ssh {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One console as virtctl opens it: the websocket offering `plain.kubevirt.io`, binary frames.
struct Console {
    ws: WebSocket<MaybeTlsStream<TcpStream>>,
    seen: Vec<u8>,
}

impl Console {
    fn open(addr: &str, name: &str) -> Result<Console, String> {
        let url = format!(
            "ws://{addr}/apis/subresources.kubevirt.io/v1/namespaces/{NS}/virtualmachineinstances/{name}/console"
        );
        let mut req = url.into_client_request().map_err(|e| e.to_string())?;
        req.headers_mut()
            .insert("Sec-WebSocket-Protocol", HeaderValue::from_static("plain.kubevirt.io"));
        let (ws, _) = tungstenite::connect(req).map_err(|e| format!("{name}: {e}"))?;
        if let MaybeTlsStream::Plain(t) = ws.get_ref() {
            t.set_read_timeout(Some(Duration::from_millis(200))).map_err(|e| e.to_string())?;
        }
        Ok(Console { ws, seen: Vec::new() })
    }

    fn send(&mut self, text: &str) -> Result<(), String> {
        self.ws.send(Message::binary(text.as_bytes().to_vec())).map_err(|e| e.to_string())
    }

    fn expect(&mut self, text: &str) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(i) = String::from_utf8_lossy(&self.seen).find(text) {
                self.seen.drain(..i + text.len());
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "{text:?} not seen: {:?}",
                    String::from_utf8_lossy(&self.seen)
                ));
            }
            match self.ws.read() {
                Ok(Message::Binary(b)) => self.seen.extend_from_slice(&b),
                Ok(_) => {}
                Err(tungstenite::Error::Io(e))
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// Enter for a fresh prompt, the user and password, then a command's answer.
    fn log_in(&mut self, name: &str) -> Result<(), String> {
        self.send("\r")?;
        self.expect("login: ")?;
        self.send(&format!("{USER}\r"))?;
        self.expect("Password: ")?;
        self.send(&format!("{PASSWORD}\r"))?;
        self.expect("$ ")?;
        self.send("hostname\r")?;
        self.expect(&format!("{name}\r\n"))
    }
}

pub fn run(count: usize) -> GuestsResult {
    let mut r = GuestsResult {
        count,
        idle: None,
        running: None,
        consoles: None,
        login_all: Duration::ZERO,
        failures: Vec::new(),
    };
    let s = match Ours::start_with(&["--simulate", "--simulate-speed", "0"]) {
        Ok(s) => s,
        Err(e) => {
            r.failures.push(e);
            return r;
        }
    };
    let memory = |s: &Ours| backend::memory(s.pid()).ok();
    r.idle = memory(&s);
    let keys = tempfile::tempdir().map_err(|e| e.to_string());
    let (keys, key) = match keys.and_then(|d| keygen(d.path()).map(|k| (d, k))) {
        Ok(k) => k,
        Err(e) => {
            r.failures.push(e);
            return r;
        }
    };
    let made = s.prepare(NS).and_then(|_| {
        let mut conn = Conn::open(s.endpoint())?;
        let path = format!("/apis/kubevirt.io/v1/namespaces/{NS}/virtualmachines");
        for i in 0..count {
            let body = vm(i, &key).to_string();
            let req = s.endpoint().request("POST", &path, None, body.as_bytes());
            conn.call(&req)?;
        }
        Ok(())
    });
    if let Err(e) = made {
        r.failures.push(format!("creating the VMs: {e}"));
        return r;
    }
    let t0 = Instant::now();
    let all_running =
        backend::wait_ready(t0, Duration::from_secs(120), || running(&s).is_ok_and(|n| n == count));
    if let Err(e) = all_running {
        r.failures.push(format!("not every guest Running: {e}"));
        return r;
    }
    // The guests boot once Running: their consoles then show a login prompt, their sshd
    // listens.
    std::thread::sleep(Duration::from_secs(2));
    r.running = memory(&s);
    let addr = s.endpoint().addr().to_string();
    let held = Arc::new(Barrier::new(count + 1));
    let released = Arc::new(Barrier::new(count + 1));
    let started = Instant::now();
    let sessions: Vec<_> = (0..count)
        .map(|i| {
            let (addr, held, released) = (addr.clone(), held.clone(), released.clone());
            let dir = keys.path().to_path_buf();
            std::thread::spawn(move || {
                let name = format!("guest-{i}");
                let logged =
                    Console::open(&addr, &name).and_then(|mut c| c.log_in(&name).map(|_| c));
                // sshd listens once the guest has booted: a refused dial is tried again.
                let deadline = Instant::now() + Duration::from_secs(60);
                let ssh = loop {
                    match Ssh::open(&addr, &dir, &name) {
                        Err(_) if Instant::now() < deadline => {
                            std::thread::sleep(Duration::from_millis(500))
                        }
                        other => break other,
                    }
                };
                held.wait();
                released.wait();
                logged.and(ssh).map(|_| ())
            })
        })
        .collect();
    held.wait();
    r.login_all = started.elapsed();
    r.consoles = memory(&s);
    released.wait();
    for (i, t) in sessions.into_iter().enumerate() {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => r.failures.push(format!("guest-{i}'s sessions: {e}")),
            Err(_) => r.failures.push(format!("guest-{i}'s sessions panicked")),
        }
    }
    r
}

pub fn markdown(r: &GuestsResult, provenance: &str, note: Option<&str>) -> String {
    let mib = |m: &Option<Memory>| {
        m.as_ref()
            .map_or("-".to_string(), |m| format!("{:.1} MiB", m.rss as f64 / (1 << 20) as f64))
    };
    let per = match (&r.running, &r.consoles) {
        (Some(a), Some(b)) if r.count > 0 => {
            format!("{:+.0} KiB", (b.rss as f64 - a.rss as f64) / 1024.0 / r.count as f64)
        }
        _ => "-".into(),
    };
    let mut out = format!(
        "{provenance}\n\nOur server with `--simulate --simulate-speed 0`: {} VMs whose cloud-init sets a user, \
         a password and an SSH key, all Running; then each VM's serial console opened as virtctl opens it (virt-api's \
         websocket, `plain.kubevirt.io`), logged in and answering `hostname`, and an SSH login to each (OpenSSH's \
         `ssh -tt` through `virt-apiserver port-forward --stdio`, as `virtctl ssh` runs it) at its shell prompt, \
         every session held open at once. Memory is the server's resident set (VmRSS).\n\n",
        r.count
    );
    if let Some(n) = note {
        out.push_str(&format!("{n}\n\n"));
    }
    out.push_str("| | value |\n|---|---|\n");
    out.push_str(&format!("| RSS, started, no VM | {} |\n", mib(&r.idle)));
    out.push_str(&format!(
        "| RSS, {} guests Running, no session | {} |\n",
        r.count,
        mib(&r.running)
    ));
    out.push_str(&format!(
        "| RSS, {} consoles and {0} SSH sessions logged in and open | {} |\n",
        r.count,
        mib(&r.consoles)
    ));
    out.push_str(&format!("| per guest's open console and SSH session | {per} |\n"));
    out.push_str(&format!(
        "| all sessions opened and logged in | {:.0} ms |\n",
        r.login_all.as_secs_f64() * 1000.0
    ));
    out
}
