//! virt-apiserver: the release binary cargo built for this bench, on an ephemeral port and a
//! temporary database file, with its default settings otherwise.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::backend::{self, num, send, Backend};

/// What a paging client needs of a list page: the objects are skipped unread, as `etcd`
/// skips its values, so both sides measure the server and the wire, not the client's decoder.
#[derive(serde::Deserialize)]
struct ListPage {
    metadata: ListMeta,
    #[serde(default)]
    items: Vec<serde::de::IgnoredAny>,
}

#[derive(serde::Deserialize)]
struct ListMeta {
    #[serde(rename = "continue", default)]
    cont: String,
}
use crate::stream::{self, Stream};

pub struct Ours {
    child: Child,
    base: String,
    db: PathBuf,
    throttled: AtomicU64,
    _dir: tempfile::TempDir,
}

impl Drop for Ours {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the binary and answers it with its base URL, read from its first stdout line.
fn spawn(db: &PathBuf) -> Result<(Child, String), String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_virt-apiserver"))
        .args(["--listen", "127.0.0.1:0", "--database"])
        .arg(db)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("start virt-apiserver: {e}"))?;
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    out.read_line(&mut first).map_err(|e| format!("virt-apiserver stdout: {e}"))?;
    let base = first
        .trim()
        .strip_prefix("listening on ")
        .ok_or_else(|| format!("virt-apiserver said {first:?} instead of its address"))?
        .to_owned();
    // Keep draining stdout: a closed pipe would fail the server's later prints.
    std::thread::spawn(move || std::io::copy(&mut out, &mut std::io::sink()));
    Ok((child, base))
}

impl Ours {
    pub fn start() -> Result<Ours, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let db = dir.path().join("bench.db");
        let (child, base) = spawn(&db)?;
        let ours = Ours { child, base, db, throttled: AtomicU64::new(0), _dir: dir };
        ours.wait_serving(Instant::now())?;
        Ok(ours)
    }

    fn collection(&self, set: &str) -> String {
        format!("{}/apis/kubevirt.io/v1/namespaces/{set}/virtualmachines", self.base)
    }

    fn wait_serving(&self, t0: Instant) -> Result<Duration, String> {
        let agent = backend::agent();
        let url = format!("{}/readyz", self.base);
        backend::wait_ready(t0, Duration::from_secs(120), || {
            agent.get(&url).call().is_ok_and(|r| r.status() == 200)
        })
    }
}

impl Backend for Ours {
    fn label(&self) -> &'static str {
        "virt-apiserver"
    }

    fn create(
        &self,
        agent: &ureq::Agent,
        set: &str,
        _name: &str,
        body: &str,
    ) -> Result<usize, String> {
        let answer = send(agent.post(&self.collection(set)), Some(body), &self.throttled)?;
        Ok(answer.len())
    }

    fn get(&self, agent: &ureq::Agent, set: &str, name: &str) -> Result<(), String> {
        send(agent.get(&format!("{}/{name}", self.collection(set))), None, &self.throttled)?;
        Ok(())
    }

    fn list(&self, agent: &ureq::Agent, set: &str, limit: usize) -> Result<(usize, usize), String> {
        let url = self.collection(set);
        let (mut items, mut pages, mut token) = (0, 0, String::new());
        loop {
            let mut req = agent.get(&url).query("limit", &limit.to_string());
            if !token.is_empty() {
                req = req.query("continue", &token);
            }
            let page: ListPage = serde_json::from_str(&send(req, None, &self.throttled)?)
                .map_err(|e| format!("list page: {e}"))?;
            pages += 1;
            items += page.items.len();
            token = page.metadata.cont;
            if token.is_empty() {
                return Ok((items, pages));
            }
        }
    }

    fn update(
        &self,
        agent: &ureq::Agent,
        set: &str,
        name: &str,
        _body: &str,
        i: usize,
    ) -> Result<u64, String> {
        // A controller's typical small change; the server still writes (and sends) the whole
        // 2 KB object.
        let req = agent
            .request("PATCH", &format!("{}/{name}", self.collection(set)))
            .set("Content-Type", "application/merge-patch+json");
        let patch = json!({"metadata": {"annotations": {"bench/i": i.to_string()}}}).to_string();
        let res = send(req, Some(&patch), &self.throttled)?;
        let obj: Value = serde_json::from_str(&res).map_err(|e| format!("patch answer: {e}"))?;
        Ok(num(&obj["metadata"]["resourceVersion"]))
    }

    fn watch(
        &self,
        set: &str,
        name: &str,
        tx: mpsc::Sender<(Vec<u8>, Instant)>,
    ) -> Result<Stream, String> {
        let addr = self.base.strip_prefix("http://").unwrap_or(&self.base);
        let path = format!(
            "/apis/kubevirt.io/v1/namespaces/{set}/virtualmachines?watch=true&fieldSelector=metadata.name%3D{name}"
        );
        stream::open(addr, "GET", &path, "", tx)
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
        let (child, base) = spawn(&self.db)?;
        self.child = child;
        self.base = base;
        self.wait_serving(t0)
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn write_counters(&self) -> Option<(u64, u64)> {
        let text = backend::agent()
            .get(&format!("{}/metrics", self.base))
            .call()
            .ok()?
            .into_string()
            .ok()?;
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

    fn throttled(&self) -> u64 {
        self.throttled.load(Ordering::Relaxed)
    }
}
