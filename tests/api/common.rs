//! Shared test helpers: start the real binary on an ephemeral port with a temporary database, and
//! talk HTTP to it as a client would.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A running `virt-apiserver` process, killed on drop.
pub struct TestServer {
    child: Child,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// The database file (inside `_dir`), or `:memory:`.
    pub db: PathBuf,
    _dir: Option<tempfile::TempDir>,
    agent: ureq::Agent,
}

/// How to start a server.
#[derive(Default, Clone)]
pub struct ServerOptions {
    /// Use this database file instead of a fresh temporary one (for restarts).
    pub db: Option<PathBuf>,
    /// `--database :memory:`.
    pub memory: bool,
    /// Extra flags, e.g. authentication options.
    pub args: Vec<String>,
    /// Another binary, e.g. one built against a fixture document.
    pub binary: Option<PathBuf>,
}

/// One HTTP answer.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

pub fn binary() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_virt-apiserver"))
}

impl TestServer {
    /// A fresh server with a temporary database file.
    pub fn start() -> TestServer {
        TestServer::start_with(ServerOptions::default())
    }

    pub fn start_with(opts: ServerOptions) -> TestServer {
        let (dir, db) = match (&opts.db, opts.memory) {
            (_, true) => (None, PathBuf::from(":memory:")),
            (Some(db), false) => (None, db.clone()),
            (None, false) => {
                let dir = tempfile::tempdir().expect("tempdir");
                let db = dir.path().join("virt.db");
                (Some(dir), db)
            }
        };
        let bin = opts.binary.clone().unwrap_or_else(binary);
        let mut child = Command::new(&bin)
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--database")
            .arg(&db)
            .args(&opts.args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stdout).lines();
            if let Some(Ok(first)) = lines.next() {
                let _ = tx.send(first);
            }
            // Keep draining so the server never blocks on a full pipe.
            for _ in lines {}
        });
        let first = rx.recv_timeout(Duration::from_secs(20)).expect("server printed its address");
        let base =
            first.strip_prefix("listening on ").expect("first line names the address").to_string();
        let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(30)).build();
        TestServer { child, base, db, _dir: dir, agent }
    }

    /// Stops the process as SIGKILL would, keeping the database for a restart.
    pub fn kill(mut self) -> (PathBuf, Option<tempfile::TempDir>) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let dir = self._dir.take();
        (self.db.clone(), dir)
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Any request; `body` is sent with `content_type` when given.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<(&str, &[u8])>,
    ) -> Resp {
        let mut req = self.agent.request(method, &self.url(path));
        for (k, v) in headers {
            req = req.set(k, v);
        }
        let result = match body {
            Some((ct, bytes)) => req.set("Content-Type", ct).send_bytes(bytes),
            None => req.call(),
        };
        let resp = match result {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("{method} {path}: {e}"),
        };
        let status = resp.status();
        let headers = resp
            .headers_names()
            .into_iter()
            .filter_map(|n| resp.header(&n).map(|v| (n.clone(), v.to_string())))
            .collect();
        let mut body = Vec::new();
        resp.into_reader().read_to_end(&mut body).expect("body");
        Resp { status, headers, body }
    }

    pub fn get(&self, path: &str) -> Resp {
        self.request("GET", path, &[], None)
    }
    pub fn post(&self, path: &str, body: &Value) -> Resp {
        self.request("POST", path, &[], Some(("application/json", body.to_string().as_bytes())))
    }
    pub fn put(&self, path: &str, body: &Value) -> Resp {
        self.request("PUT", path, &[], Some(("application/json", body.to_string().as_bytes())))
    }
    /// PATCH with `content_type` (json-patch, merge-patch, apply-patch ...).
    pub fn patch(&self, path: &str, content_type: &str, body: &Value) -> Resp {
        self.request("PATCH", path, &[], Some((content_type, body.to_string().as_bytes())))
    }
    pub fn delete(&self, path: &str) -> Resp {
        self.request("DELETE", path, &[], None)
    }
    pub fn delete_with(&self, path: &str, options: &Value) -> Resp {
        self.request(
            "DELETE",
            path,
            &[],
            Some(("application/json", options.to_string().as_bytes())),
        )
    }

    /// Opens a watch (any path with `watch=true` or a `/watch/` path) and returns its events.
    pub fn watch(&self, path: &str) -> Watch {
        let resp = match self.agent.get(&self.url(path)).call() {
            Ok(r) => r,
            Err(ureq::Error::Status(code, r)) => {
                panic!("watch {path}: {code} {}", r.into_string().unwrap_or_default())
            }
            Err(e) => panic!("watch {path}: {e}"),
        };
        let content_type = resp.header("Content-Type").unwrap_or("").to_string();
        let reader = BufReader::new(resp.into_reader());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in reader.lines() {
                match line {
                    Ok(l) if l.trim().is_empty() => continue,
                    Ok(l) => {
                        let v: Value =
                            serde_json::from_str(&l).expect("watch event is one JSON line");
                        if tx.send(v).is_err() {
                            return;
                        }
                    }
                    Err(_) => return,
                }
            }
        });
        Watch { rx, content_type }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The events of an open watch.
pub struct Watch {
    rx: mpsc::Receiver<Value>,
    pub content_type: String,
}

impl Watch {
    /// The next event within `timeout`, or None (stream ended or nothing came).
    pub fn next(&self, timeout: Duration) -> Option<Value> {
        self.rx.recv_timeout(timeout).ok()
    }

    /// The next event, failing the test after 5 s.
    pub fn expect(&self) -> Value {
        self.next(Duration::from_secs(5)).expect("a watch event within 5 s")
    }

    /// Asserts nothing arrives for `wait`.
    pub fn expect_none(&self, wait: Duration) {
        if let Some(ev) = self.next(wait) {
            panic!("unexpected watch event: {ev}");
        }
    }
}

/// Polls `f` until it returns Some, for at most `timeout`.
pub fn eventually<T>(timeout: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "condition not met within {timeout:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The repository root.
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}
