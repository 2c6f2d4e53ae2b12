//! etcd 3.4 (Debian's etcd-server) as the reference: our own single-member instance on loopback
//! ephemeral ports with a temporary data directory (never a system service that the package may
//! have started), driven through its v3 JSON gateway with the same 2 KB values.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use serde_json::{json, Value};

use crate::backend::{self, num, Backend};
use crate::http::{Conn, Endpoint, Request};
use crate::scan;
use crate::stream::{self, Stream};

pub struct Etcd {
    child: Child,
    bin: PathBuf,
    ep: Endpoint,
    peer: String,
    dir: tempfile::TempDir,
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
        let etcd = Etcd { child, bin, ep: Endpoint::new(&client), peer, dir };
        etcd.wait_serving(Instant::now())?;
        Ok(etcd)
    }

    fn post(&self, path: &str, body: &str) -> Request {
        self.ep.request("POST", path, None, body.as_bytes())
    }

    fn wait_serving(&self, t0: Instant) -> Result<Duration, String> {
        let probe = self.post("/v3/kv/range", &json!({"key": b64("/probe")}).to_string());
        backend::wait_ready(t0, Duration::from_secs(120), || {
            Conn::open(&self.ep).and_then(|mut c| c.call(&probe).map(drop)).is_ok()
        })
        .map_err(|e| format!("etcd {e}; its log: {}", self.dir.path().join("etcd.log").display()))
    }
}

/// The JSON bodies, written as `json!(..).to_string()` writes them (members in key order) but
/// without building a `Value`: base64 never needs escaping.
fn put_body(key: &str, value: &str) -> String {
    format!(r#"{{"key":"{}","value":"{}"}}"#, b64(key), b64(value))
}

fn range_body(key: &str, end: Option<(&str, usize)>, revision: u64) -> String {
    let mut out = format!(r#"{{"key":"{}""#, b64(key));
    if let Some((end, limit)) = end {
        out.push_str(&format!(r#","limit":{limit},"range_end":"{}""#, b64(end)));
    }
    if revision > 0 {
        out.push_str(&format!(r#","revision":{revision}"#));
    }
    out.push('}');
    out
}

/// What a paging client needs of a range answer's header and of its last key. The values are
/// skipped unread (`scan` counts the kvs), as `ours` skips the objects of a list page, so both
/// sides measure the server and the wire, not the client.
#[derive(serde::Deserialize)]
struct RangeHeader {
    revision: Value,
}

#[derive(serde::Deserialize)]
struct RangeKv {
    key: String,
}

/// A range answer's header, its kvs counted, the last of them, and `more`.
struct RangePage<'a> {
    header: Option<&'a [u8]>,
    kvs: usize,
    last: Option<&'a [u8]>,
    more: bool,
}

fn range_page(answer: &[u8]) -> Result<RangePage<'_>, String> {
    let mut page = RangePage { header: None, kvs: 0, last: None, more: false };
    let fail = |e| format!("range: {e}");
    let mut obj = scan::Object::new(answer).map_err(fail)?;
    while let Some(key) = obj.next_key().map_err(fail)? {
        match key {
            b"header" => page.header = Some(obj.value().map_err(fail)?),
            b"kvs" => (page.kvs, page.last) = obj.elements().map_err(fail)?,
            b"more" => page.more = obj.value().map_err(fail)? == b"true",
            _ => {}
        }
    }
    if page.header.is_none() {
        return Err("range: no header".into());
    }
    Ok(page)
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

    fn endpoint(&self) -> &Endpoint {
        &self.ep
    }

    fn create(&self, set: &str, name: &str, body: &str) -> Request {
        self.post("/v3/kv/put", &put_body(&format!("{}{name}", prefix(set).0), body))
    }

    fn created(&self, body: &str, answer: &[u8]) -> Result<usize, String> {
        let fail = |e| format!("put: {e}");
        let (mut obj, mut header) = (scan::Object::new(answer).map_err(fail)?, false);
        while let Some(key) = obj.next_key().map_err(fail)? {
            header |= key == b"header";
        }
        if !header {
            return Err("put: no header".into());
        }
        Ok(body.len())
    }

    fn get(&self, set: &str, name: &str) -> Request {
        self.post("/v3/kv/range", &range_body(&format!("{}{name}", prefix(set).0), None, 0))
    }

    fn got(&self, answer: &[u8]) -> Result<(), String> {
        match range_page(answer)?.kvs {
            1 => Ok(()),
            n => Err(format!("range of one key: {n} keys")),
        }
    }

    fn list_first(&self, set: &str, limit: Option<usize>) -> Request {
        // A range without a revision is linearizable, etcd's default; limit 0 is no limit.
        let (key, end) = prefix(set);
        self.post("/v3/kv/range", &range_body(&key, Some((&end, limit.unwrap_or(0))), 0))
    }

    fn listed(&self, answer: &[u8]) -> Result<(usize, u64), String> {
        let page = range_page(answer)?;
        let header: RangeHeader = serde_json::from_slice(page.header.unwrap_or_default())
            .map_err(|e| format!("range header: {e}"))?;
        Ok((page.kvs, num(&header.revision)))
    }

    fn list(&self, conn: &mut Conn, set: &str, limit: usize) -> Result<(usize, usize), String> {
        // As a continue token does, later pages read at the first page's revision.
        let (mut key, end) = prefix(set);
        let (mut items, mut pages, mut revision) = (0, 0, 0);
        loop {
            let req = self.post("/v3/kv/range", &range_body(&key, Some((&end, limit)), revision));
            let page = range_page(conn.call(&req)?)?;
            let header: RangeHeader = serde_json::from_slice(page.header.unwrap_or_default())
                .map_err(|e| format!("range header: {e}"))?;
            pages += 1;
            revision = num(&header.revision);
            items += page.kvs;
            let Some(last) = page.last.filter(|_| page.more) else {
                return Ok((items, pages));
            };
            let last: RangeKv =
                serde_json::from_slice(last).map_err(|e| format!("range kv: {e}"))?;
            let last = B64.decode(&last.key).map_err(|e| format!("range key: {e}"))?;
            key = String::from_utf8(last).map_err(|e| e.to_string())? + "\0";
        }
    }

    fn update(
        &self,
        conn: &mut Conn,
        set: &str,
        name: &str,
        body: &str,
        _i: usize,
    ) -> Result<u64, String> {
        let req = self.post("/v3/kv/put", &put_body(&format!("{}{name}", prefix(set).0), body));
        let answer: Value =
            serde_json::from_slice(conn.call(&req)?).map_err(|e| format!("put answer: {e}"))?;
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
        stream::open(self.ep.addr(), "POST", "/v3/watch", &body, tx)
    }

    fn event_revisions(&self, line: &[u8]) -> Vec<u64> {
        let msg: Value = serde_json::from_slice(line).unwrap_or_default();
        let events = msg["result"]["events"].as_array().cloned().unwrap_or_default();
        events.iter().map(|e| num(&e["kv"]["mod_revision"])).filter(|&r| r > 0).collect()
    }

    fn restart(&mut self) -> Result<Duration, String> {
        backend::stop(&mut self.child);
        let t0 = Instant::now();
        self.child = spawn(&self.bin, &self.dir, self.ep.addr(), &self.peer)?;
        self.wait_serving(t0)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn write_counters(&self) -> Option<(u64, u64)> {
        None
    }
}

/// Checks of the request bodies.
#[cfg(test)]
mod tests {
    use super::{b64, put_body, range_body};
    use serde_json::json;

    #[test]
    fn bodies_as_json_writes_them() {
        let (key, end) = ("/bench/s/vm-s-000001", "/bench/s0");
        let value = "{\"a\":\"b\\\"c\"}";
        assert_eq!(put_body(key, value), json!({"key": b64(key), "value": b64(value)}).to_string());
        assert_eq!(range_body(key, None, 0), json!({"key": b64(key)}).to_string());
        let mut range = json!({"key": b64(key), "range_end": b64(end), "limit": 500});
        assert_eq!(range_body(key, Some((end, 500)), 0), range.to_string());
        range["revision"] = json!(12345);
        assert_eq!(range_body(key, Some((end, 500)), 12345), range.to_string());
    }
}
