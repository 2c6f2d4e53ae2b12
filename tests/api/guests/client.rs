//! A console client speaking exactly virtctl's protocol (pkg/virtctl/console/console.go,
//! client-go/kubevirt/typed/core/v1/websocket.go): the websocket to virt-api's `console`
//! subresource offering the one subprotocol `plain.kubevirt.io`, keystrokes and output as
//! binary frames of raw bytes.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tungstenite::client::IntoClientRequest;
use tungstenite::http::HeaderValue;
use tungstenite::stream::MaybeTlsStream;
use tungstenite::{Message, WebSocket};

use crate::common::{condition, eventually, TestServer};

pub const KV: &str = "/apis/kubevirt.io/v1/namespaces";
pub const SUB: &str = "/apis/subresources.kubevirt.io/v1/namespaces";
/// client-go/subresources/constants.go.
pub const PLAIN: &str = "plain.kubevirt.io";

pub struct Console {
    pub ws: WebSocket<MaybeTlsStream<TcpStream>>,
    /// What the guest wrote and no `expect` took yet.
    pub seen: Vec<u8>,
    /// The subprotocol the 101 named.
    pub protocol: Option<String>,
}

/// The handshake's answer when it was refused: its status and body.
pub struct Refused {
    pub status: u16,
    pub body: String,
}

/// Opens `path` (under the server) offering `protocols`, with extra `headers`.
pub fn open(
    s: &TestServer,
    path: &str,
    protocols: &[&str],
    headers: &[(&str, &str)],
) -> Result<Console, Refused> {
    let url = s.url(path).replacen("http://", "ws://", 1);
    let mut req = url.into_client_request().unwrap();
    if !protocols.is_empty() {
        let v = HeaderValue::from_str(&protocols.join(",")).unwrap();
        req.headers_mut().insert("Sec-WebSocket-Protocol", v);
    }
    for (k, v) in headers {
        let name = tungstenite::http::HeaderName::from_bytes(k.as_bytes()).unwrap();
        req.headers_mut().insert(name, HeaderValue::from_str(v).unwrap());
    }
    match tungstenite::connect(req) {
        Ok((ws, resp)) => {
            if let MaybeTlsStream::Plain(t) = ws.get_ref() {
                t.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
            }
            let protocol = resp
                .headers()
                .get("Sec-WebSocket-Protocol")
                .map(|v| v.to_str().unwrap().to_string());
            Ok(Console { ws, seen: vec![], protocol })
        }
        Err(tungstenite::Error::Http(resp)) => Err(Refused {
            status: resp.status().as_u16(),
            body: String::from_utf8_lossy(resp.body().as_deref().unwrap_or_default()).into(),
        }),
        Err(e) => panic!("{path}: {e}"),
    }
}

/// The console of VMI `name`, as virtctl opens it.
pub fn console(s: &TestServer, ns: &str, name: &str) -> Console {
    let path = format!("{SUB}/{ns}/virtualmachineinstances/{name}/console");
    open(s, &path, &[PLAIN], &[]).unwrap_or_else(|r| panic!("{}: {}", r.status, r.body))
}

/// How a read ended.
#[derive(Debug, PartialEq)]
pub enum Ended {
    /// The connection dropped with no close frame (a client sees 1006).
    Abnormally,
    Closed,
}

impl Console {
    /// Types `text` as keystrokes (one binary frame).
    pub fn send(&mut self, text: &str) {
        self.ws.send(Message::binary(text.as_bytes().to_vec())).unwrap();
    }

    /// Reads until what the guest wrote holds `text`; answers all written up to its end.
    pub fn expect(&mut self, text: &str) -> String {
        self.try_expect(text, Duration::from_secs(20)).unwrap_or_else(|e| {
            panic!("{text:?} not seen ({e:?}); seen: {:?}", String::from_utf8_lossy(&self.seen))
        })
    }

    pub fn try_expect(&mut self, text: &str, within: Duration) -> Result<String, Option<Ended>> {
        let deadline = Instant::now() + within;
        loop {
            let s = String::from_utf8_lossy(&self.seen).into_owned();
            if let Some(i) = s.find(text) {
                let upto = i + text.len();
                self.seen.drain(..upto);
                return Ok(s[..upto].to_string());
            }
            if Instant::now() > deadline {
                return Err(None);
            }
            self.read_some().map_err(Some)?;
        }
    }

    /// Reads what comes within the read timeout into `seen`; how the connection ended if it did.
    pub fn read_some(&mut self) -> Result<(), Ended> {
        match self.ws.read() {
            Ok(Message::Binary(b)) => self.seen.extend_from_slice(&b),
            Ok(Message::Text(t)) => panic!("the server wrote a text frame: {t}"),
            Ok(Message::Close(_)) => return Err(Ended::Closed),
            Ok(_) => {}
            Err(tungstenite::Error::Io(e))
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(tungstenite::Error::Protocol(
                tungstenite::error::ProtocolError::ResetWithoutClosingHandshake,
            ))
            | Err(tungstenite::Error::Io(_))
            | Err(tungstenite::Error::ConnectionClosed)
            | Err(tungstenite::Error::AlreadyClosed) => return Err(Ended::Abnormally),
            Err(e) => panic!("{e}"),
        }
        Ok(())
    }

    /// Reads until the connection ends; how it ended.
    pub fn ends(&mut self) -> Ended {
        match self.try_expect("\u{0}never\u{0}", Duration::from_secs(20)) {
            Err(Some(e)) => e,
            other => panic!("the console did not end: {other:?}"),
        }
    }

    /// Logs in at the login prompt (after pressing Enter).
    pub fn login(&mut self, host: &str, user: &str, password: &str) {
        self.send("\r");
        self.expect(&format!("{host} login: "));
        self.send(&format!("{user}\r"));
        self.expect("Password: ");
        self.send(&format!("{password}\r"));
        self.expect(&format!("[{user}@{host} ~]$ "));
    }

    /// Runs `cmd` at the shell prompt of `user`@`host`; answers its output.
    pub fn run(&mut self, user: &str, host: &str, cmd: &str) -> String {
        self.send(&format!("{cmd}\r"));
        let prompt = format!("[{user}@{host} ~]$ ");
        let out = self.expect(&prompt);
        let out = out.strip_suffix(&prompt).unwrap();
        out.strip_prefix(&format!("{cmd}\r\n")).unwrap_or(out).to_string()
    }
}

/// A VM of `run_strategy` whose guest's cloud-init gives the default user `password`.
pub fn vm(name: &str, run_strategy: &str, binding: &str, domain_extra: Value) -> Value {
    let mut domain = json!({
        "devices": {"disks": [{"name": "root", "disk": {"bus": "virtio"}},
                              {"name": "cloudinit", "disk": {"bus": "virtio"}}],
                    "interfaces": [{"name": "default", binding: {}}]},
        "resources": {"requests": {"memory": "128Mi"}}
    });
    if let (Some(d), Some(extra)) = (domain.as_object_mut(), domain_extra.as_object()) {
        d.extend(extra.clone());
    }
    json!({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
        "metadata": {"name": name},
        "spec": {"runStrategy": run_strategy, "template": {"spec": {
            "domain": domain,
            "networks": [{"name": "default", "pod": {}}],
            "volumes": [
                {"name": "root", "containerDisk": {"image": "quay.io/containerdisks/fedora:40"}},
                {"name": "cloudinit", "cloudInitNoCloud": {"userData":
                    "#cloud-config\npassword: fedora-pw\nchpasswd: {expire: false}\nuser: fedora\n"}}
            ]
        }}}
    })
}

pub fn get(s: &TestServer, path: &str) -> Option<Value> {
    let r = s.get(path);
    (r.status == 200).then(|| r.json())
}

/// The VMI `name` once `done` holds of it.
pub fn vmi_when(s: &TestServer, ns: &str, name: &str, done: impl Fn(&Value) -> bool) -> Value {
    eventually(Duration::from_secs(20), || {
        let vmi = get(s, &format!("{KV}/{ns}/virtualmachineinstances/{name}"))?;
        done(&vmi).then_some(vmi)
    })
}

pub fn running(vmi: &Value) -> bool {
    vmi["status"]["phase"] == "Running"
        && condition(vmi, "AgentConnected").is_some_and(|c| c["status"] == "True")
}

/// The guest agent's logged-in users (`virtctl userlist`).
pub fn users(s: &TestServer, ns: &str, name: &str) -> Vec<String> {
    let list = s.get_json(&format!("{SUB}/{ns}/virtualmachineinstances/{name}/userlist"));
    let items = list["items"].as_array().unwrap();
    items.iter().map(|u| u["userName"].as_str().unwrap().to_string()).collect()
}
