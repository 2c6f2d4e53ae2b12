//! etcd 3.4 (Debian's etcd-server) as the reference: our own single-member instance on loopback
//! ephemeral ports with a temporary data directory (never a system service that the package may
//! have started), driven through its v3 JSON gateway with the same 2 KB values.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicU64;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};

use crate::backend::{self, num, send, Backend};
use crate::stream::{self, Stream};

pub struct Etcd {
    child: Child,
    bin: PathBuf,
    client: String,
    peer: String,
    dir: tempfile::TempDir,
    unused: AtomicU64,
}

impl Drop for Etcd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `etcd` on PATH, or a failure that says how to install it.
pub fn binary() -> Result<PathBuf, String> {
    std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .map(|dir| dir.join("etcd"))
        .find(|p| p.is_file())
        .ok_or_else(|| {
            "etcd not found on PATH; the benchmark compares against it: \
             install it with `apt-get install -y etcd-server`"
                .to_owned()
        })
}

/// `etcd --version`'s version line, e.g. `3.4.23`.
pub fn version(bin: &PathBuf) -> String {
    let out = Command::new(bin).arg("--version").output();
    let text = out.map(|o| String::from_utf8_lossy(&o.stdout).into_owned()).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("etcd Version:"))
        .map_or_else(|| "unknown".to_owned(), |v| v.trim().to_owned())
}

fn b64(s: &str) -> String {
    B64.encode(s)
}

/// The key prefix of a set, and the end of its range (the prefix with its last byte plus one).
fn prefix(set: &str) -> (String, String) {
    (format!("/bench/{set}/"), format!("/bench/{set}0"))
}

impl Etcd {
    pub fn start() -> Result<Etcd, String> {
        let bin = binary()?;
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let client = format!("127.0.0.1:{}", backend::free_port());
        let peer = format!("127.0.0.1:{}", backend::free_port());
        let child = spawn(&bin, &dir, &client, &peer)?;
        let etcd = Etcd { child, bin, client, peer, dir, unused: AtomicU64::new(0) };
        etcd.wait_serving(Instant::now())?;
        Ok(etcd)
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.client)
    }

    fn call(&self, agent: &ureq::Agent, path: &str, body: &Value) -> Result<Value, String> {
        let text = send(agent.post(&self.url(path)), Some(&body.to_string()), &self.unused)?;
        serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))
    }

    fn wait_serving(&self, t0: Instant) -> Result<Duration, String> {
        let agent = backend::agent();
        let probe = json!({"key": b64("/probe")});
        backend::wait_ready(t0, Duration::from_secs(120), || {
            self.call(&agent, "/v3/kv/range", &probe).is_ok()
        })
        .map_err(|e| format!("etcd {e}; its log: {}", self.dir.path().join("etcd.log").display()))
    }
}

/// What a paging client needs of a range answer: values are skipped unread, as `ours` skips
/// the objects of a list page, so both sides measure the server and the wire, not the client.
#[derive(serde::Deserialize)]
struct RangePage {
    header: RangeHeader,
    #[serde(default)]
    kvs: Vec<RangeKv>,
    #[serde(default)]
    more: bool,
}

#[derive(serde::Deserialize)]
struct RangeHeader {
    revision: Value,
}

#[derive(serde::Deserialize)]
struct RangeKv {
    key: String,
}

fn spawn(
    bin: &PathBuf,
    dir: &tempfile::TempDir,
    client: &str,
    peer: &str,
) -> Result<Child, String> {
    let log = std::fs::File::create(dir.path().join("etcd.log")).map_err(|e| e.to_string())?;
    Command::new(bin)
        .args(["--name", "bench", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg(format!("--listen-client-urls=http://{client}"))
        .arg(format!("--advertise-client-urls=http://{client}"))
        .arg(format!("--listen-peer-urls=http://{peer}"))
        .arg(format!("--initial-advertise-peer-urls=http://{peer}"))
        .arg(format!("--initial-cluster=bench=http://{peer}"))
        .args(["--logger", "zap", "--log-level", "warn"])
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .map_err(|e| format!("start {}: {e}", bin.display()))
}

impl Backend for Etcd {
    fn label(&self) -> &'static str {
        "etcd"
    }

    fn create(
        &self,
        agent: &ureq::Agent,
        set: &str,
        name: &str,
        body: &str,
    ) -> Result<usize, String> {
        let key = format!("{}{name}", prefix(set).0);
        self.call(agent, "/v3/kv/put", &json!({"key": b64(&key), "value": B64.encode(body)}))?;
        Ok(body.len())
    }

    fn get(&self, agent: &ureq::Agent, set: &str, name: &str) -> Result<(), String> {
        let key = format!("{}{name}", prefix(set).0);
        let answer = self.call(agent, "/v3/kv/range", &json!({"key": b64(&key)}))?;
        match answer["kvs"].as_array().map_or(0, Vec::len) {
            1 => Ok(()),
            n => Err(format!("range {key}: {n} keys")),
        }
    }

    fn list(&self, agent: &ureq::Agent, set: &str, limit: usize) -> Result<(usize, usize), String> {
        // As a continue token does, later pages read at the first page's revision.
        let (mut key, end) = prefix(set);
        let (mut items, mut pages, mut revision) = (0, 0, 0);
        loop {
            let mut req = json!({"key": b64(&key), "range_end": b64(&end), "limit": limit});
            if revision > 0 {
                req["revision"] = json!(revision);
            }
            let text =
                send(agent.post(&self.url("/v3/kv/range")), Some(&req.to_string()), &self.unused)?;
            let page: RangePage = serde_json::from_str(&text).map_err(|e| format!("range: {e}"))?;
            pages += 1;
            revision = num(&page.header.revision);
            items += page.kvs.len();
            let Some(last) = page.kvs.last().filter(|_| page.more) else {
                return Ok((items, pages));
            };
            let last = B64.decode(&last.key).map_err(|e| format!("range key: {e}"))?;
            key = String::from_utf8(last).map_err(|e| e.to_string())? + "\0";
        }
    }

    fn update(
        &self,
        agent: &ureq::Agent,
        set: &str,
        name: &str,
        body: &str,
        _i: usize,
    ) -> Result<u64, String> {
        let key = format!("{}{name}", prefix(set).0);
        let answer =
            self.call(agent, "/v3/kv/put", &json!({"key": b64(&key), "value": B64.encode(body)}))?;
        Ok(num(&answer["header"]["revision"]))
    }

    fn watch(
        &self,
        set: &str,
        name: &str,
        tx: mpsc::Sender<(Vec<u8>, Instant)>,
    ) -> Result<Stream, String> {
        let key = format!("{}{name}", prefix(set).0);
        let body = json!({"create_request": {"key": b64(&key)}}).to_string();
        stream::open(&self.client, "POST", "/v3/watch", &body, tx)
    }

    fn event_revisions(&self, line: &[u8]) -> Vec<u64> {
        let msg: Value = serde_json::from_slice(line).unwrap_or_default();
        let events = msg["result"]["events"].as_array().cloned().unwrap_or_default();
        events.iter().map(|e| num(&e["kv"]["mod_revision"])).filter(|&r| r > 0).collect()
    }

    fn restart(&mut self) -> Result<Duration, String> {
        backend::stop(&mut self.child);
        let t0 = Instant::now();
        self.child = spawn(&self.bin, &self.dir, &self.client, &self.peer)?;
        self.wait_serving(t0)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn write_counters(&self) -> Option<(u64, u64)> {
        None
    }

    fn throttled(&self) -> u64 {
        0
    }
}
