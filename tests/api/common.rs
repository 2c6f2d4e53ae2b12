//! Shared test helpers: start the real binary on an ephemeral port with a temporary database, and
//! talk HTTP to it as a client would.
//!
//! The storage axis: `VIRT_TEST_STORAGE=etcd` runs every server that asks for no particular
//! database on the test process's private etcd (`TestEtcd`, started from PATH on first use),
//! each with a key prefix of its own; `ServerOptions::etcd` asks for etcd in any case, `sqlite`
//! for SQLite (a test of the database file itself), and `private_etcd` for an etcd of the
//! server's own (a test that compacts: etcd compacts every prefix at once).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde_json::Value;
use virt_apiserver::resource::ResourceInfo;
pub use virt_apiserver::storage::TestEtcd;
use virt_apiserver::{GROUPS, RESOURCES};

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

/// Whether servers that ask for no particular database run on etcd (`VIRT_TEST_STORAGE=etcd`).
pub fn storage_is_etcd() -> bool {
    std::env::var("VIRT_TEST_STORAGE").is_ok_and(|v| v == "etcd")
}

/// Where on etcd a database path's data went: the prefix, and the private etcd if any.
type EtcdPlace = (String, Option<Arc<TestEtcd>>);

/// The etcd place each database path stood for on etcd, so restarts find their data.
fn etcd_places() -> std::sync::MutexGuard<'static, std::collections::HashMap<PathBuf, EtcdPlace>> {
    static PLACES: std::sync::OnceLock<
        std::sync::Mutex<std::collections::HashMap<PathBuf, EtcdPlace>>,
    > = std::sync::OnceLock::new();
    PLACES.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner())
}

/// The test process's etcd (started on first use; fails the test when `etcd` is not on PATH).
pub fn test_etcd() -> &'static TestEtcd {
    TestEtcd::shared()
}

/// A private etcd cluster for fault tests (`etcd_cluster.rs`): `members` etcd processes from PATH
/// on free loopback ports, their data in one temporary directory (on tmpfs when there is one),
/// each member stopped with SIGKILL and started again on the same ports and data at will. Every
/// member runs under a small shell holding a pipe from this process, which SIGKILLs it when the
/// pipe closes (a `kill`, the cluster dropped, or the test process gone, however it ended).
pub struct EtcdCluster {
    dir: tempfile::TempDir,
    members: Vec<ClusterMember>,
}

struct ClusterMember {
    name: String,
    client: u16,
    peer: u16,
    metrics: u16,
    /// The shell running it, while it runs.
    process: Option<Child>,
}

impl EtcdCluster {
    /// How long a member (or the whole cluster) has to become healthy on a loaded machine.
    pub const START: Duration = Duration::from_secs(60);

    /// Starts `members` members as one new cluster; answers once every member is healthy.
    pub fn start(members: usize) -> EtcdCluster {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = tempfile::Builder::new().prefix("virt-etcd-cluster-").tempdir_in(base).unwrap();
        let port =
            || std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let members = (0..members)
            .map(|i| ClusterMember {
                name: format!("m{i}"),
                client: port(),
                peer: port(),
                metrics: port(),
                process: None,
            })
            .collect();
        let mut cluster = EtcdCluster { dir, members };
        for i in 0..cluster.members.len() {
            cluster.spawn(i);
        }
        for i in 0..cluster.members.len() {
            cluster.wait_healthy(i);
        }
        cluster
    }

    /// Every member's client URL, comma-separated (`--etcd-servers`).
    pub fn urls(&self) -> String {
        (0..self.members.len()).map(|i| self.url(i)).collect::<Vec<_>>().join(",")
    }

    pub fn url(&self, member: usize) -> String {
        format!("http://127.0.0.1:{}", self.members[member].client)
    }

    /// A server on every member of the cluster, its keys under `prefix`, listing member `first`
    /// first: its calls and streams go there until that member fails.
    pub fn server(&self, prefix: &str, first: usize) -> TestServer {
        let n = self.members.len();
        let urls: Vec<String> = (0..n).map(|i| self.url((first + i) % n)).collect();
        TestServer::start_with(ServerOptions {
            memory: true,
            args: vec![
                "--etcd-servers".into(),
                urls.join(","),
                "--etcd-prefix".into(),
                prefix.into(),
            ],
            ..Default::default()
        })
    }

    /// SIGKILLs a member, keeping its data; waits until it is gone.
    pub fn kill(&mut self, member: usize) {
        let mut process = self.members[member].process.take().expect("the member runs");
        // Closing the pipe makes the shell SIGKILL etcd and wait for it.
        drop(process.stdin.take());
        process.wait().expect("the member's shell ends");
    }

    /// Starts a killed member again on its ports and data; answers once it is healthy (which
    /// needs a quorum of the cluster to be up).
    pub fn restart(&mut self, member: usize) {
        assert!(self.members[member].process.is_none(), "member {member} still runs");
        self.spawn(member);
        self.wait_healthy(member);
    }

    /// The member that leads the cluster now, as the live members report it (etcdctl's
    /// `endpoint status`); waits for an election under way.
    pub fn leader(&self) -> usize {
        let live: Vec<usize> =
            (0..self.members.len()).filter(|&i| self.members[i].process.is_some()).collect();
        let endpoints = live.iter().map(|&i| self.url(i)).collect::<Vec<_>>().join(",");
        eventually(Self::START, || {
            let out = etcdctl_command(&endpoints)
                .args(["endpoint", "status", "-w", "json"])
                .output()
                .expect("etcdctl is needed (Debian: apt-get install etcd-client)");
            let statuses: Value = serde_json::from_slice(&out.stdout).ok()?;
            let leader = statuses.as_array()?.iter().find(|s| {
                let status = &s["Status"];
                status["leader"].as_u64().is_some_and(|l| l != 0)
                    && status["leader"] == status["header"]["member_id"]
            })?;
            let endpoint = leader["Endpoint"].as_str()?;
            live.iter().copied().find(|&i| self.url(i) == endpoint)
        })
    }

    /// A member's log so far, for a failing test's message.
    pub fn log(&self, member: usize) -> String {
        let name = &self.members[member].name;
        std::fs::read_to_string(self.dir.path().join(format!("{name}.log"))).unwrap_or_default()
    }

    fn spawn(&mut self, member: usize) {
        let initial = self
            .members
            .iter()
            .map(|m| format!("{}=http://127.0.0.1:{}", m.name, m.peer))
            .collect::<Vec<_>>()
            .join(",");
        let m = &self.members[member];
        let url = format!("http://127.0.0.1:{}", m.client);
        let peer = format!("http://127.0.0.1:{}", m.peer);
        let metrics = format!("http://127.0.0.1:{}", m.metrics);
        let log = self.dir.path().join(format!("{}.log", m.name));
        // A restart finds its data directory and ignores the `--initial-*` flags.
        let script = r#"log=$1; shift
etcd "$@" >>"$log" 2>&1 &
pid=$!
read _
kill -KILL "$pid" 2>/dev/null; wait "$pid""#;
        let process = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg("sh")
            .arg(&log)
            .args(["--name", &m.name, "--data-dir"])
            .arg(self.dir.path().join(&m.name))
            .args(["--listen-client-urls", &url, "--advertise-client-urls", &url])
            .args(["--listen-peer-urls", &peer, "--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &initial, "--initial-cluster-state", "new"])
            .args(["--initial-cluster-token", "virt-test-cluster"])
            .args(["--listen-metrics-urls", &metrics])
            .args(["--logger", "zap", "--log-outputs", "stderr"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sh");
        self.members[member].process = Some(process);
    }

    /// Waits until the member's `/health` says it has a leader and serves.
    fn wait_healthy(&self, member: usize) {
        let port = self.members[member].metrics;
        let deadline = Instant::now() + Self::START;
        loop {
            let healthy = ureq::get(&format!("http://127.0.0.1:{port}/health"))
                .timeout(Duration::from_secs(5))
                .call()
                .ok()
                .and_then(|r| r.into_string().ok())
                .is_some_and(|body| body.contains(r#""health":"true""#));
            if healthy {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "etcd member {member} not healthy within {:?}:\n{}",
                Self::START,
                self.log(member)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for member in &mut self.members {
            if let Some(mut process) = member.process.take() {
                drop(process.stdin.take());
                let _ = process.wait();
            }
        }
    }
}

/// An `etcdctl` (v3 API) command against the etcd at `url`, to add arguments to.
pub fn etcdctl_command(url: &str) -> Command {
    let mut cmd = Command::new("etcdctl");
    cmd.env("ETCDCTL_API", "3").args(["--endpoints", url]);
    cmd
}

/// Runs `etcdctl args` against the etcd at `url`, failing the test unless it succeeds (or when
/// etcdctl is missing); its stdout.
pub fn etcdctl(url: &str, args: &[&str]) -> String {
    let out = etcdctl_command(url)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("etcdctl is needed (Debian: apt-get install etcd-client): {e}"));
    assert!(out.status.success(), "etcdctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
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

// ---------------------------------------------------------------------------------------------
// Per-kind paths and bodies, Status checks, and small readers shared by the API tests.

/// The served kind `plural` of `group` in `version`.
pub fn resource(group: &str, version: &str, plural: &str) -> &'static ResourceInfo {
    RESOURCES
        .iter()
        .find(|r| r.group == group && r.version == version && r.plural == plural)
        .unwrap_or_else(|| panic!("no resource {plural}.{group}/{version} in RESOURCES"))
}

/// Every served (group, version, kind) that is kept in the store.
pub fn stored_resources() -> impl Iterator<Item = &'static ResourceInfo> {
    RESOURCES.iter().filter(|r| r.is_stored())
}

/// The preferred-version entry of `group`'s kind `plural`.
pub fn preferred(group: &str, plural: &str) -> &'static ResourceInfo {
    let g = GROUPS.iter().find(|g| g.name == group).expect("group in GROUPS");
    resource(group, g.versions[0], plural)
}

/// A collection path: the namespace is used for namespaced kinds (`None` = all namespaces) and
/// ignored for cluster kinds.
pub fn collection_path(res: &ResourceInfo, ns: Option<&str>) -> String {
    let prefix = api_prefix(res);
    match ns {
        Some(ns) if res.namespaced => format!("{prefix}/namespaces/{ns}/{}", res.plural),
        _ => format!("{prefix}/{}", res.plural),
    }
}

/// Where `res`'s group version is served: `/api/v1` for the legacy core group, else
/// `/apis/<group>/<version>`.
pub fn api_prefix(res: &ResourceInfo) -> String {
    if res.group.is_empty() {
        format!("/api/{}", res.version)
    } else {
        format!("/apis/{}/{}", res.group, res.version)
    }
}

/// One object's path (the namespace is ignored for cluster kinds).
pub fn item_path(res: &ResourceInfo, ns: &str, name: &str) -> String {
    format!("{}/{name}", collection_path(res, Some(ns)))
}

/// A `/watch/` path for a collection (`name` None) or one object.
pub fn watch_path(res: &ResourceInfo, ns: Option<&str>, name: Option<&str>) -> String {
    let prefix = api_prefix(res);
    let mut p = match ns {
        Some(ns) if res.namespaced => format!("{prefix}/watch/namespaces/{ns}/{}", res.plural),
        _ => format!("{prefix}/watch/{}", res.plural),
    };
    if let Some(n) = name {
        p.push('/');
        p.push_str(n);
    }
    p
}

/// A minimal valid create body for `res` (the namespace only on namespaced kinds; token
/// requests get their required field; the kind's content from `sample_content`).
pub fn object(res: &ResourceInfo, ns: &str, name: &str) -> Value {
    let mut meta = serde_json::json!({ "name": name });
    if res.namespaced {
        meta["namespace"] = Value::String(ns.to_string());
    }
    let mut obj = serde_json::json!({
        "apiVersion": res.api_version(),
        "kind": res.kind,
        "metadata": meta,
    });
    if let Some((field, value)) = sample_content(res, 42) {
        obj[field] = value;
    }
    // kube's Event names the object it is about, in the Event's own namespace.
    if kind_schema(res).pointer("/properties/involvedObject").is_some() {
        obj["involvedObject"] = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                                                   "name": name, "namespace": ns});
    }
    if let Some(field) = res.token_field {
        let mut at = &mut obj;
        for part in field.split('.') {
            at = &mut at[part];
        }
        *at = Value::String(format!("{name}-pvc"));
    }
    obj
}

/// A small `spec` the kind's schema declares, different for each `n`: one field gets a value made
/// from `n` (booleans first, then integers, strings, enums, then objects with their required
/// fields; by name within each, so the choice does not depend on map order). Made-up fields would
/// be pruned, as kube prunes undeclared fields.
pub fn sample_spec(res: &ResourceInfo, n: i64) -> Value {
    let schema = kind_schema(res)
        .pointer("/properties/spec")
        .unwrap_or_else(|| panic!("{} declares its spec", res.kind));
    sample_value(schema, n).unwrap_or_else(|| panic!("no sample spec for {}", res.kind))
}

/// The field a test writes to give an object of `res` content, and its value for `n`: `spec`
/// where the kind has one a client writes; a ConfigMap's or Secret's `data`; an Event's
/// `message`. None for the namespaces' kind, whose spec the server keeps (kube's namespace
/// strategy ignores a client's spec.finalizers).
pub fn sample_content(res: &ResourceInfo, n: i64) -> Option<(&'static str, Value)> {
    if res.namespaces {
        return None;
    }
    let props = kind_schema(res).get("properties").and_then(Value::as_object);
    let props = props.unwrap_or_else(|| panic!("{} declares its properties", res.kind));
    for field in ["spec", "data", "message"] {
        if let Some(schema) = props.get(field) {
            let value = sample_value(schema, n)
                .unwrap_or_else(|| panic!("no sample {field} for {}", res.kind));
            return Some((field, value));
        }
    }
    panic!("{} has none of spec, data and message: give it a sample", res.kind)
}

/// `res`'s resolved schema in the served document.
fn kind_schema(res: &ResourceInfo) -> &'static Value {
    virt_apiserver::validation::kind_schema(res)
        .unwrap_or_else(|| panic!("the document has {}'s schema", res.kind))
}

fn sample_value(schema: &Value, n: i64) -> Option<Value> {
    let schema = virt_apiserver::validation::resolve(schema);
    let enumerated = schema.get("enum").and_then(Value::as_array);
    match schema.get("type").and_then(Value::as_str) {
        // Bytes travel in base64, as a Secret's data.
        Some("string") if schema.get("format") == Some(&"byte".into()) => {
            use base64::Engine as _;
            Some(Value::String(base64::engine::general_purpose::STANDARD.encode(format!("v{n}"))))
        }
        Some("string") if schema.get("format").is_none() => Some(match enumerated {
            Some(values) => values[n.unsigned_abs() as usize % values.len()].clone(),
            None => Value::String(format!("v{n}")),
        }),
        Some("integer") => Some(Value::from(n)),
        Some("boolean") => Some(Value::Bool(n % 2 == 0)),
        Some("object") => {
            let props = schema.get("properties").and_then(Value::as_object);
            if props.is_none() {
                // A map of strings (a ConfigMap's or Secret's data), one entry.
                let values = schema.get("additionalProperties")?;
                if values.get("type") != Some(&"string".into()) {
                    return None;
                }
                return Some(serde_json::json!({"k": sample_value(values, n)?}));
            }
            let props = props?;
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut out = serde_json::Map::new();
            for r in &required {
                out.insert(r.to_string(), sample_value(props.get(*r)?, n)?);
            }
            if out.is_empty() {
                let rank = |s: &Value| match (s.get("type").and_then(Value::as_str), s.get("enum"))
                {
                    (Some("boolean"), _) => 0,
                    (Some("integer"), _) => 1,
                    (Some("string"), None) => 2,
                    (Some("string"), Some(_)) => 3,
                    _ => 4,
                };
                let mut candidates: Vec<(&String, &Value)> = props.iter().collect();
                candidates.sort_by_key(|(k, s)| (rank(s), k.as_str()));
                let (k, v) =
                    candidates.into_iter().find_map(|(k, s)| Some((k, sample_value(s, n)?)))?;
                out.insert(k.clone(), v);
            }
            Some(Value::Object(out))
        }
        _ => None,
    }
}

/// `object` with labels.
pub fn labelled(res: &ResourceInfo, ns: &str, name: &str, labels: Value) -> Value {
    let mut obj = object(res, ns, name);
    obj["metadata"]["labels"] = labels;
    obj
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

/// `metadata.name` of every item of a list.
pub fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("a list has items: {list}"))
        .iter()
        .map(|o| o["metadata"]["name"].as_str().expect("item name").to_string())
        .collect()
}

/// An object's `metadata.resourceVersion` as a number.
pub fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_else(|| panic!("no resourceVersion in {obj}"))
        .parse()
        .expect("numeric resourceVersion")
}

/// Asserts a Failure `metav1.Status` with `code` and `reason` and returns it.
pub fn assert_status(resp: &Resp, code: u16, reason: &str) -> Value {
    assert_eq!(resp.status, code, "HTTP code; body: {}", resp.text());
    let ct = resp.header("Content-Type").unwrap_or("");
    assert!(ct.starts_with("application/json"), "Status content type {ct:?}: {}", resp.text());
    let s = resp.json();
    assert_eq!(s["kind"], "Status", "{s}");
    assert_eq!(s["apiVersion"], "v1", "{s}");
    assert_eq!(s["metadata"], serde_json::json!({}), "{s}");
    assert_eq!(s["status"], "Failure", "{s}");
    assert_eq!(s["code"], code, "{s}");
    assert_eq!(s["reason"], reason, "{s}");
    s
}

/// Asserts Go's plain `404 page not found` (no Status) for paths nothing serves.
pub fn assert_plain_404(resp: &Resp) {
    assert_eq!(resp.status, 404, "{}", resp.text());
    let ct = resp.header("Content-Type").unwrap_or("");
    assert!(ct.starts_with("text/plain"), "content type {ct:?}");
    assert_eq!(resp.text().trim_end(), "404 page not found");
}

impl Watch {
    /// Whether the stream ends within `timeout` (events before the end are skipped).
    pub fn ends_within(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(_) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => return true,
                Err(mpsc::RecvTimeoutError::Timeout) => return false,
            }
        }
    }

    /// Skips events until one of `kind` for object `name` arrives (5 s), and returns it.
    pub fn expect_event(&self, kind: &str, name: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let ev = self
                .next(left)
                .unwrap_or_else(|| panic!("no {kind} event for {name:?} within 5 s"));
            if ev["type"] == kind && ev["object"]["metadata"]["name"] == name {
                return ev;
            }
        }
    }
}

/// Asserts the next event is `kind` for `name` and returns its object.
pub fn next_event(w: &Watch, kind: &str, name: &str) -> Value {
    let ev = w.expect();
    assert_eq!(ev["type"], kind, "event {ev}");
    assert_eq!(ev["object"]["metadata"]["name"], name, "event {ev}");
    ev["object"].clone()
}

// ---------------------------------------------------------------------------------------------
// kubectl, the first real client.

/// Where kubectl is: `$KUBECTL`, else `/usr/bin/kubectl`, else the first `kubectl` on PATH. The
/// machine ships it; a missing kubectl is a broken test machine, so this fails, never skips.
pub fn kubectl_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("KUBECTL") {
        return PathBuf::from(p);
    }
    let usual = PathBuf::from("/usr/bin/kubectl");
    if usual.exists() {
        return usual;
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths).map(|d| d.join("kubectl")).find(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!(
                "kubectl not found (neither $KUBECTL, /usr/bin/kubectl nor PATH): these tests \
                 need kubectl 1.32, which comes with the machine; run `bash .ci/test`"
            )
        })
}

/// kubectl pointed at one server through its own kubeconfig and cache directory.
pub struct Kubectl {
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    pub cache: PathBuf,
}

/// One finished kubectl run.
pub struct Run {
    pub args: String,
    pub out: Output,
}

impl Run {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    pub fn ok(&self) -> bool {
        self.out.status.success()
    }
    pub fn describe(&self) -> String {
        format!(
            "kubectl {} exited {}\n--- stdout\n{}--- stderr\n{}",
            self.args,
            self.out.status,
            self.stdout(),
            self.stderr()
        )
    }
}

impl Kubectl {
    pub fn new(server: &TestServer) -> Kubectl {
        Kubectl::in_namespace(server, "default")
    }

    /// kubectl whose context defaults to namespace `ns`.
    pub fn in_namespace(server: &TestServer, ns: &str) -> Kubectl {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        // No user credentials: the server needs no authentication by default.
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: virt\n  cluster:\n    server: {}\n\
             contexts:\n- name: virt\n  context:\n    cluster: virt\n    user: virt\n    namespace: {ns}\n\
             users:\n- name: virt\n  user: {{}}\ncurrent-context: virt\npreferences: {{}}\n",
            server.base
        );
        std::fs::write(&kubeconfig, config).expect("write kubeconfig");
        let cache = dir.path().join("cache");
        Kubectl { dir, kubeconfig, cache }
    }

    /// The kubectl command with this kubeconfig and cache, for callers that spawn it.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(kubectl_binary());
        c.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            // Nothing from the developer's own kube set-up may leak in.
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.dir.path())
            .env_remove("KUBECTL_EXTERNAL_DIFF")
            .stdin(Stdio::null());
        c
    }

    /// Runs kubectl with `args` and returns whatever happened.
    pub fn run(&self, args: &[&str]) -> Run {
        let started = Instant::now();
        let out = self
            .command(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", kubectl_binary().display()));
        let run = Run { args: args.join(" "), out };
        eprintln!("kubectl {} -> {} in {:?}", run.args, run.out.status, started.elapsed());
        run
    }

    /// Runs kubectl and returns its stdout, failing the test unless it succeeded.
    pub fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert!(run.ok(), "{}", run.describe());
        run.stdout()
    }

    /// Runs kubectl and returns its stderr, failing the test if it succeeded.
    pub fn fails(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert!(!run.ok(), "expected a failure: {}", run.describe());
        run.stderr()
    }

    /// Writes `text` into the kubectl temp dir and returns its path.
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).expect("write manifest");
        path
    }
}

/// The object at `path`, if it exists.
pub fn found(server: &TestServer, path: &str) -> Option<Value> {
    let r = server.get(path);
    (r.status == 200).then(|| r.json())
}

/// The distinct values the string at `field` takes on the watched object `name`, in order,
/// until one of `last`.
pub fn sequence(watch: &Watch, name: &str, field: &str, last: &[&str]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    while seen.last().is_none_or(|v| !last.contains(&v.as_str())) {
        let ev = watch.expect();
        if ev["object"]["metadata"]["name"] != name {
            continue;
        }
        let v = ev["object"].pointer(field).and_then(Value::as_str).unwrap_or("").to_string();
        if seen.last() != Some(&v) {
            seen.push(v);
        }
    }
    seen
}

/// The status condition of `type_`, if the object has one.
pub fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == type_)
}

/// The field managers that wrote the object.
pub fn managers(obj: &Value) -> Vec<&str> {
    let entries =
        obj["metadata"]["managedFields"].as_array().map(Vec::as_slice).unwrap_or_default();
    entries.iter().filter_map(|m| m["manager"].as_str()).collect()
}

/// A server running the simulated runtime (`--simulate`), with `extra` flags.
pub fn simulating(extra: &[&str]) -> TestServer {
    let mut args = vec!["--simulate".to_string()];
    args.extend(extra.iter().map(|a| a.to_string()));
    TestServer::start_with(ServerOptions { args, ..ServerOptions::default() })
}
