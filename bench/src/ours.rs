//! virt-apiserver: the binary `--server` names (by default the workspace's release build), on an
//! ephemeral port and a temporary database file, with its default settings otherwise.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::backend::{self, num, Backend};
use crate::http::{query_value, Conn, Endpoint, Request};
use crate::scan;
use crate::stream::{self, Stream};

/// What a paging client needs of a list page's metadata. The page's items are counted by
/// `scan`, unread, as `etcd` skips its values, so both sides measure the server and the wire,
/// not the client's decoder.
#[derive(serde::Deserialize)]
struct ListMeta {
    #[serde(rename = "continue", default)]
    cont: String,
    #[serde(rename = "resourceVersion", default)]
    rv: String,
}

/// A list page's items, counted unread, and its metadata.
fn list_page(page: &[u8]) -> Result<(usize, ListMeta), String> {
    let (mut n, mut meta) = (0, None);
    let mut obj = scan::Object::new(page).map_err(|e| format!("list page: {e}"))?;
    while let Some(key) = obj.next_key().map_err(|e| format!("list page: {e}"))? {
        match key {
            b"items" => n = obj.elements().map_err(|e| format!("list items: {e}"))?.0,
            b"metadata" => meta = Some(obj.value().map(serde_json::from_slice::<ListMeta>)),
            _ => {}
        }
    }
    let meta = meta
        .ok_or("list page: no metadata")?
        .map_err(|e| format!("list page: {e}"))?
        .map_err(|e| format!("list page metadata: {e}"))?;
    Ok((n, meta))
}

/// The server binary every `Ours` starts, set once before any is started.
static BINARY: OnceLock<PathBuf> = OnceLock::new();

/// Makes `path` the binary every server of this run starts.
pub fn use_binary(path: PathBuf) {
    BINARY.set(path).expect("the server binary is set once");
}

pub fn binary() -> &'static Path {
    BINARY.get().expect("the server binary is set before a server starts")
}

pub struct Ours {
    child: Child,
    /// Flags beyond the defaults (`--simulate`…), kept for a restart.
    extra: Vec<String>,
    ep: Endpoint,
    db: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Ours {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the binary and answers it with its address (`host:port`), read from its first stdout
/// line.
fn spawn(db: &PathBuf, extra: &[String]) -> Result<(Child, String), String> {
    let mut child = Command::new(binary())
        .args(["--listen", "127.0.0.1:0", "--database"])
        .arg(db)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("start virt-apiserver ({}): {e}", binary().display()))?;
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).map_err(|e| format!("virt-apiserver stdout: {e}"))?;
    let addr = first
        .trim()
        .strip_prefix("listening on http://")
        .ok_or_else(|| format!("virt-apiserver said {first:?} instead of its address"))?
        .to_owned();
    // Keep draining stdout: a closed pipe would fail the server's later prints.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    Ok((child, addr))
}

fn collection(set: &str) -> String {
    format!("/apis/kubevirt.io/v1/namespaces/{set}/virtualmachines")
}

impl Ours {
    pub fn start() -> Result<Ours, String> {
        Ours::start_with(&[])
    }

    /// Started with `extra` flags after the defaults.
    pub fn start_with(extra: &[&str]) -> Result<Ours, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let db = dir.path().join("bench.db");
        let extra: Vec<String> = extra.iter().map(|a| a.to_string()).collect();
        let (child, addr) = spawn(&db, &extra)?;
        let ours = Ours { child, extra, ep: Endpoint::new(&addr), db, _dir: dir };
        ours.wait_serving(Instant::now())?;
        Ok(ours)
    }

    fn wait_serving(&self, t0: Instant) -> Result<Duration, String> {
        backend::wait_ready(t0, Duration::from_secs(120), || {
            backend::fetch(&self.ep, "/readyz").is_ok()
        })
    }
}

impl Backend for Ours {
    fn label(&self) -> &'static str {
        "virt-apiserver"
    }

    /// Each set is a namespace, made before its first object as kube's namespaces require.
    fn prepare(&self, set: &str) -> Result<(), String> {
        let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": set}});
        let path = format!("/api/v1/namespaces/{set}");
        // A release from before the core kinds (measured back to back with today's) has no
        // namespaces to make.
        if backend::fetch(&self.ep, &path).is_ok() || backend::fetch(&self.ep, "/api/v1").is_err() {
            return Ok(());
        }
        let req = self.ep.request("POST", "/api/v1/namespaces", None, body.to_string().as_bytes());
        Conn::open(&self.ep)?.call(&req).map(|_| ())
    }

    fn endpoint(&self) -> &Endpoint {
        &self.ep
    }

    fn create(&self, set: &str, _name: &str, body: &str) -> Request {
        self.ep.request("POST", &collection(set), None, body.as_bytes())
    }

    fn created(&self, _body: &str, answer: &[u8]) -> Result<usize, String> {
        Ok(answer.len())
    }

    fn get(&self, set: &str, name: &str) -> Request {
        self.ep.request("GET", &format!("{}/{name}", collection(set)), None, b"")
    }

    fn got(&self, _answer: &[u8]) -> Result<(), String> {
        Ok(())
    }

    fn list_first(&self, set: &str, limit: Option<usize>) -> Request {
        let path = match limit {
            Some(limit) => format!("{}?limit={limit}", collection(set)),
            None => collection(set),
        };
        self.ep.request("GET", &path, None, b"")
    }

    fn listed(&self, answer: &[u8]) -> Result<(usize, u64), String> {
        let (n, meta) = list_page(answer)?;
        let rv = meta.rv.parse().map_err(|_| format!("list resourceVersion {:?}", meta.rv))?;
        Ok((n, rv))
    }

    fn list(&self, conn: &mut Conn, set: &str, limit: usize) -> Result<(usize, usize), String> {
        let (mut items, mut pages, mut token) = (0, 0, String::new());
        loop {
            let mut path = format!("{}?limit={limit}", collection(set));
            if !token.is_empty() {
                path.push_str("&continue=");
                path.push_str(&query_value(&token));
            }
            let (n, meta) = list_page(conn.call(&self.ep.request("GET", &path, None, b""))?)?;
            pages += 1;
            items += n;
            token = meta.cont;
            if token.is_empty() {
                return Ok((items, pages));
            }
        }
    }

    fn update(
        &self,
        conn: &mut Conn,
        set: &str,
        name: &str,
        _body: &str,
        i: usize,
    ) -> Result<u64, String> {
        // A controller's typical small change; the server still writes (and sends) the whole
        // 2 KB object.
        let patch = json!({"metadata": {"annotations": {"bench/i": i.to_string()}}}).to_string();
        let req = self.ep.request(
            "PATCH",
            &format!("{}/{name}", collection(set)),
            Some("application/merge-patch+json"),
            patch.as_bytes(),
        );
        let obj: Value =
            serde_json::from_slice(conn.call(&req)?).map_err(|e| format!("patch answer: {e}"))?;
        Ok(num(&obj["metadata"]["resourceVersion"]))
    }

    fn watch(
        &self,
        set: &str,
        name: &str,
        tx: mpsc::Sender<(Vec<u8>, Instant)>,
    ) -> Result<Stream, String> {
        let path = format!(
            "/apis/kubevirt.io/v1/namespaces/{set}/virtualmachines?watch=true&fieldSelector=metadata.name%3D{name}"
        );
        stream::open(self.ep.addr(), "GET", &path, "", tx)
    }

    fn event_revisions(&self, line: &[u8]) -> Vec<u64> {
        let ev: Value = serde_json::from_slice(line).unwrap_or_default();
        let rev = num(&ev["object"]["metadata"]["resourceVersion"]);
        if ev["type"] == "MODIFIED" && rev > 0 {
            vec![rev]
        } else {
            vec![]
        }
    }

    fn restart(&mut self) -> Result<Duration, String> {
        backend::stop(&mut self.child);
        let t0 = Instant::now();
        let (child, addr) = spawn(&self.db, &self.extra)?;
        self.child = child;
        self.ep.set_addr(&addr);
        self.wait_serving(t0)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn write_counters(&self) -> Option<(u64, u64)> {
        let text = String::from_utf8(backend::fetch(&self.ep, "/metrics").ok()?).ok()?;
        let counter = |name: &str| {
            text.lines()
                .filter(|l| !l.starts_with('#'))
                .find_map(|l| l.strip_prefix(name)?.trim().parse::<f64>().ok())
                .map(|v| v as u64)
        };
        Some((
            counter("virt_apiserver_store_commits_total")?,
            counter("virt_apiserver_store_writes_total")?,
        ))
    }
}
