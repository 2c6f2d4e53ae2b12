//! etcd for the storage axis and the fault tests: the test process's etcd, a private cluster
//! whose members are killed and restarted at will, and `etcdctl`.

use super::*;

/// Whether servers that ask for no particular database run on etcd (`VIRT_TEST_STORAGE=etcd`).
pub fn storage_is_etcd() -> bool {
    std::env::var("VIRT_TEST_STORAGE").is_ok_and(|v| v == "etcd")
}

/// Where on etcd a database path's data went: the prefix, and the private etcd if any.
pub(super) type EtcdPlace = (String, Option<Arc<TestEtcd>>);

/// The etcd place each database path stood for on etcd, so restarts find their data.
pub(super) fn etcd_places(
) -> std::sync::MutexGuard<'static, std::collections::HashMap<PathBuf, EtcdPlace>> {
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
