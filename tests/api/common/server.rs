//! The server under test: `TestServer` (the real binary on an ephemeral port with a temporary
//! database, killed on drop), its options, and requests to it.

use super::*;

/// A running `virt-apiserver` process, killed on drop.
pub struct TestServer {
    child: Child,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// The database file (inside `_dir`), or `:memory:`.
    pub db: PathBuf,
    /// On etcd: the server's `--etcd-prefix` (its keys' root).
    pub etcd_prefix: Option<String>,
    /// On etcd: the etcd it serves from.
    pub etcd_url: Option<String>,
    _dir: Option<tempfile::TempDir>,
    /// A private etcd (`ServerOptions::private_etcd`), kept for restarts on the same data.
    _etcd: Option<Arc<TestEtcd>>,
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
    /// Write the server's stderr (its log) to this file instead of the test's stderr.
    pub stderr: Option<PathBuf>,
    /// Extra environment variables for the process.
    pub env: Vec<(String, String)>,
    /// Serve from the test etcd, whatever `VIRT_TEST_STORAGE` says.
    pub etcd: bool,
    /// On etcd, this prefix instead of a fresh one (for restarts, or a second replica).
    pub etcd_prefix: Option<String>,
    /// On SQLite, whatever `VIRT_TEST_STORAGE` says: the test is about the database file.
    pub sqlite: bool,
    /// On the etcd axis, an etcd of this server's own.
    pub private_etcd: bool,
}

impl ServerOptions {
    /// A server on the etcd at `url` (a private one, or a proxy to one), under `prefix`,
    /// whatever `VIRT_TEST_STORAGE` says.
    pub fn on_etcd(url: &str, prefix: &str) -> ServerOptions {
        ServerOptions {
            memory: true,
            args: ["--etcd-servers", url, "--etcd-prefix", prefix].map(String::from).to_vec(),
            ..Default::default()
        }
    }
}

/// The flags of a server with bearer tokens and ABAC, as kube-apiserver takes them.
pub fn abac_args(tokens: &Path, policy: &Path) -> Vec<String> {
    vec![
        "--token-auth-file".into(),
        tokens.display().to_string(),
        "--authorization-mode".into(),
        "ABAC".into(),
        "--authorization-policy-file".into(),
        policy.display().to_string(),
    ]
}

/// The server under test: `VIRT_TEST_SERVER_BIN` when set (`.ci/test` runs both storages' suites
/// against the release build the benchmark measures), else the binary cargo built beside this test.
pub fn binary() -> PathBuf {
    match std::env::var_os("VIRT_TEST_SERVER_BIN") {
        Some(bin) if !bin.is_empty() => PathBuf::from(bin),
        _ => PathBuf::from(env!("CARGO_BIN_EXE_virt-apiserver")),
    }
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
        // On the etcd axis, a restart "with the same database" is one on the same prefix.
        let earlier = opts.db.as_ref().and_then(|db| etcd_places().get(db).cloned());
        let on_etcd = !opts.sqlite
            && (opts.etcd
                || opts.etcd_prefix.is_some()
                || earlier.is_some()
                || (storage_is_etcd() && opts.db.is_none() && !opts.memory));
        let place: Option<EtcdPlace> = on_etcd.then(|| match earlier {
            Some(place) => place,
            None if opts.private_etcd => {
                let etcd = Arc::new(TestEtcd::private());
                (opts.etcd_prefix.clone().unwrap_or_else(|| etcd.unique_prefix()), Some(etcd))
            }
            None => (opts.etcd_prefix.clone().unwrap_or_else(|| test_etcd().unique_prefix()), None),
        });
        if let Some(place) = &place {
            etcd_places().insert(db.clone(), place.clone());
        }
        let etcd_url = place.as_ref().map(|(_, private)| match private {
            Some(etcd) => etcd.url.clone(),
            None => test_etcd().url.clone(),
        });
        let (etcd_prefix, etcd) = place.unzip();
        let etcd = etcd.flatten();
        let etcd_args: Vec<String> = match (&etcd_prefix, &etcd_url) {
            (Some(prefix), Some(url)) => {
                vec!["--etcd-servers".into(), url.clone(), "--etcd-prefix".into(), prefix.clone()]
            }
            _ => Vec::new(),
        };
        let bin = opts.binary.clone().unwrap_or_else(binary);
        let mut child = Command::new(&bin)
            .arg("--listen")
            .arg("127.0.0.1:0")
            .arg("--database")
            .arg(&db)
            .args(&etcd_args)
            .args(&opts.args)
            .envs(opts.env.iter().map(|(k, v)| (k, v)))
            .stdout(Stdio::piped())
            .stderr(match &opts.stderr {
                Some(path) => Stdio::from(std::fs::File::create(path).expect("stderr file")),
                None => Stdio::inherit(),
            })
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
        TestServer { child, base, db, etcd_prefix, etcd_url, _dir: dir, _etcd: etcd, agent }
    }

    /// Stops the process as SIGKILL would, keeping the database for a restart.
    pub fn kill(mut self) -> (PathBuf, Option<tempfile::TempDir>) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let dir = self._dir.take();
        (self.db.clone(), dir)
    }

    /// How much longer background work may take to start after a SIGKILL'd server on the same
    /// data: on etcd, the killed process's lease keeps the singletons' leadership for up to its
    /// TTL (10 s; the rest is margin for a loaded machine).
    pub fn takeover(&self) -> Duration {
        if self.etcd_prefix.is_some() {
            Duration::from_secs(30)
        } else {
            Duration::ZERO
        }
    }

    /// Whether this server's revisions are its own and consecutive (SQLite). On etcd they are
    /// the cluster's, only increasing: other prefixes and the server's own bookkeeping keys
    /// (barriers, leases) take revisions too.
    pub fn gap_free(&self) -> bool {
        self.etcd_prefix.is_none()
    }

    /// Asserts that `revs` follow `from` as this server's storage numbers commits: one after
    /// another on SQLite, strictly increasing on etcd.
    pub fn assert_revisions_follow(&self, from: u64, revs: &[u64], what: &str) {
        let mut prev = from;
        for &r in revs {
            if self.gap_free() {
                assert_eq!(r, prev + 1, "{what}: no gap after {prev} in {revs:?}");
            } else {
                assert!(r > prev, "{what}: {r} does not follow {prev} in {revs:?}");
            }
            prev = r;
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends the process a signal by name (`TERM`, `INT`, ...).
    pub fn signal(&self, name: &str) {
        let ok = Command::new("kill")
            .arg(format!("-{name}"))
            .arg(self.child.id().to_string())
            .status()
            .expect("kill runs");
        assert!(ok.success(), "kill -{name} {}", self.child.id());
    }

    /// The process's exit status once it has exited, waiting at most `timeout`.
    pub fn wait_exit(&mut self, timeout: Duration) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
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

    /// A request with `token` as its bearer token and `body` as JSON.
    pub fn as_user(&self, token: &str, method: &str, path: &str, body: Option<&Value>) -> Resp {
        let auth = format!("Bearer {token}");
        let text = body.map(Value::to_string);
        let body = text.as_deref().map(|t| ("application/json", t.as_bytes()));
        self.request(method, path, &[("Authorization", &auth)], body)
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
        self.watch_with(path, &[])
    }

    /// `watch` with request headers (a Table Accept, say).
    pub fn watch_with(&self, path: &str, headers: &[(&str, &str)]) -> Watch {
        let mut req = self.agent.get(&self.url(path));
        for (k, v) in headers {
            req = req.set(k, v);
        }
        let resp = match req.call() {
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

impl TestServer {
    /// Makes the namespace `name` unless it exists, as a client must before using it.
    pub fn namespace(&self, name: &str) {
        let body = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
        let resp = self.post("/api/v1/namespaces", &body);
        assert!(matches!(resp.status, 201 | 409), "create namespace {name}: {}", resp.text());
    }

    /// Creates `obj` through `res`'s collection and returns the stored object (asserts 201).
    pub fn create(&self, res: &ResourceInfo, obj: &Value) -> Value {
        let ns = obj["metadata"]["namespace"].as_str().unwrap_or("");
        let r = self.post(&collection_path(res, Some(ns)), obj);
        assert_eq!(r.status, 201, "create {}: {}", res.plural, r.text());
        r.json()
    }

    /// GET that must succeed; returns the JSON body.
    pub fn get_json(&self, path: &str) -> Value {
        let r = self.get(path);
        assert_eq!(r.status, 200, "GET {path}: {}", r.text());
        r.json()
    }

    /// The names of a list answer's items, in order.
    pub fn list_names(&self, path: &str) -> Vec<String> {
        names(&self.get_json(path))
    }

    /// The store's current revision, as an unfiltered list of `res` reports it.
    pub fn current_rv(&self, res: &ResourceInfo) -> u64 {
        let l = self.get_json(&format!("{}?limit=1", collection_path(res, None)));
        l["metadata"]["resourceVersion"].as_str().expect("list RV").parse().expect("numeric RV")
    }

    /// GET without following redirects.
    pub fn get_no_redirect(&self, path: &str, headers: &[(&str, &str)]) -> Resp {
        let agent = ureq::AgentBuilder::new().redirects(0).timeout(Duration::from_secs(30)).build();
        let mut req = agent.get(&self.url(path));
        for (k, v) in headers {
            req = req.set(k, v);
        }
        let resp = match req.call() {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => panic!("GET {path}: {e}"),
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
}

/// A server running the simulated runtime (`--simulate`), with `extra` flags.
pub fn simulating(extra: &[&str]) -> TestServer {
    let mut args = vec!["--simulate".to_string()];
    args.extend(extra.iter().map(|a| a.to_string()));
    TestServer::start_with(ServerOptions { args, ..ServerOptions::default() })
}
