//! The guests scenario (`virt-bench guests [--count N]`): our server with `--simulate`, N VMs
//! whose cloud-init sets a user and password, all Running; then a serial console opened to each
//! (virt-api's websocket, virtctl's protocol), logged in and answering a command, all held open
//! together. Measures the server's memory (RSS) with the guests running and no session, then
//! with every session open: what a session costs. Fails on a request error, a guest not
//! Running, or a console that does not log in.

use std::net::TcpStream;
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

fn vm(i: usize) -> Value {
    let user_data =
        format!("#cloud-config\nuser: {USER}\npassword: {PASSWORD}\nchpasswd: {{expire: false}}\n");
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
    let made = s.prepare(NS).and_then(|_| {
        let mut conn = Conn::open(s.endpoint())?;
        let path = format!("/apis/kubevirt.io/v1/namespaces/{NS}/virtualmachines");
        for i in 0..count {
            let req = s.endpoint().request("POST", &path, None, vm(i).to_string().as_bytes());
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
    // The guests boot once Running: their consoles then show a login prompt.
    std::thread::sleep(Duration::from_secs(2));
    r.running = memory(&s);
    let addr = s.endpoint().addr().to_string();
    let held = Arc::new(Barrier::new(count + 1));
    let released = Arc::new(Barrier::new(count + 1));
    let started = Instant::now();
    let sessions: Vec<_> = (0..count)
        .map(|i| {
            let (addr, held, released) = (addr.clone(), held.clone(), released.clone());
            std::thread::spawn(move || {
                let name = format!("guest-{i}");
                let logged =
                    Console::open(&addr, &name).and_then(|mut c| c.log_in(&name).map(|_| c));
                held.wait();
                released.wait();
                logged.map(|_| ())
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
            Ok(Err(e)) => r.failures.push(format!("guest-{i}'s console: {e}")),
            Err(_) => r.failures.push(format!("guest-{i}'s console panicked")),
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
        "{provenance}\n\nOur server with `--simulate --simulate-speed 0`: {} VMs whose cloud-init sets a user and \
         password, all Running; then each VM's serial console opened as virtctl opens it (virt-api's websocket, \
         `plain.kubevirt.io`), logged in and answering `hostname`, every session held open at once. Memory is the \
         server's resident set (VmRSS).\n\n",
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
        "| RSS, {} consoles logged in and open | {} |\n",
        r.count,
        mib(&r.consoles)
    ));
    out.push_str(&format!("| per open console | {per} |\n"));
    out.push_str(&format!(
        "| all consoles opened and logged in | {:.0} ms |\n",
        r.login_all.as_secs_f64() * 1000.0
    ));
    out
}
