//! A private etcd for tests, as kube's integration tests start one (`RunCustomEtcd`): `etcd` from
//! PATH on free loopback ports, its data in a fresh directory (on tmpfs `/dev/shm` when there is
//! one: etcd 3.4 cannot skip fsync), one per test process, shared by every test through key
//! prefixes of their own (`shared`); a test that needs another kind (TLS) starts its own, stopped
//! when dropped. A missing `etcd` fails loudly: the tests never skip. Readiness is etcd's
//! `/health` on a plain-HTTP metrics port, whatever the client port speaks. Tests that count the
//! shared etcd's revisions take turns (`one_at_a_time`).
//!
//! etcd runs under a small shell that holds the read end of a pipe from this process: when the
//! test process ends, however it ends, the pipe closes and the shell stops etcd and removes its
//! directory, so no etcd outlives its tests.

use std::ffi::OsString;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// How long etcd has to become healthy (generous: a loaded machine starts it slowly).
const START_DEADLINE: Duration = Duration::from_secs(60);

/// A running etcd.
pub struct TestEtcd {
    /// The client URL, `http://127.0.0.1:<port>`.
    pub url: String,
    dir: std::path::PathBuf,
    // Holds the pipe whose end stops etcd.
    _guard: Mutex<Child>,
}

impl TestEtcd {
    /// The process's etcd, started on first use; panics (failing the test) if it cannot start.
    pub fn shared() -> &'static TestEtcd {
        static ETCD: OnceLock<TestEtcd> = OnceLock::new();
        ETCD.get_or_init(|| TestEtcd::start("http", Vec::new()))
    }

    /// A key prefix no other caller in this process gets (`/t<pid>-<n>`).
    pub fn unique_prefix(&self) -> String {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        format!("/t{}-{}", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// etcd's log so far, for a failing test's message.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("etcd.log")).unwrap_or_default()
    }

    /// A private etcd over plain HTTP, for a test that stops it (`pause`).
    pub fn private() -> TestEtcd {
        TestEtcd::start("http", Vec::new())
    }

    /// Stops etcd's process where it stands (SIGSTOP): connections stay open, nothing answers.
    pub fn pause(&self) {
        self.signal("STOP");
    }

    /// Lets a paused etcd go on (SIGCONT).
    pub fn resume(&self) {
        self.signal("CONT");
    }

    fn signal(&self, name: &str) {
        let pid = std::fs::read_to_string(self.dir.join("etcd.pid")).expect("etcd's pid file");
        let ok = std::process::Command::new("kill")
            .arg(format!("-{name}"))
            .arg(pid.trim())
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill -{name} etcd ({})", pid.trim());
    }

    /// A private etcd serving clients over TLS with `cert`/`key`, and taking only clients whose
    /// certificates `ca` signed.
    pub fn start_tls(ca: &Path, cert: &Path, key: &Path) -> TestEtcd {
        let mut args: Vec<OsString> = Vec::new();
        for (flag, path) in [("--trusted-ca-file", ca), ("--cert-file", cert), ("--key-file", key)]
        {
            args.push(flag.into());
            args.push(path.into());
        }
        args.push("--client-cert-auth".into());
        TestEtcd::start("https", args)
    }

    fn start(scheme: &str, extra: Vec<OsString>) -> TestEtcd {
        match Command::new("etcd").arg("--version").output() {
            Ok(out) if out.status.success() => {}
            _ => panic!(
                "`etcd` is not on PATH: the etcd tests need it (Debian: apt-get install etcd-server)"
            ),
        }
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            std::path::PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = base.join(format!("virt-etcd-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("etcd's test directory");
        let [client, peer, metrics] = free_ports();
        let url = format!("{scheme}://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let metrics_url = format!("http://127.0.0.1:{metrics}");
        let script = r#"dir=$1; shift
etcd "$@" >"$dir/etcd.log" 2>&1 &
pid=$!
echo "$pid" >"$dir/etcd.pid"
read _
kill "$pid"; kill -CONT "$pid" 2>/dev/null; wait "$pid"; rm -rf "$dir""#;
        let child = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg("sh")
            .arg(&dir)
            .args(["--name", "test", "--data-dir"])
            .arg(dir.join("data"))
            .args(["--listen-client-urls", &url, "--advertise-client-urls", &url])
            .args(["--listen-peer-urls", &peer_url, "--initial-advertise-peer-urls", &peer_url])
            .args(["--initial-cluster", &format!("test={peer_url}")])
            .args(["--listen-metrics-urls", &metrics_url])
            .args(["--logger", "zap", "--log-outputs", "stderr"])
            .args(&extra)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sh");
        let etcd = TestEtcd { url, dir, _guard: Mutex::new(child) };
        let deadline = Instant::now() + START_DEADLINE;
        while !healthy(metrics) {
            if Instant::now() > deadline {
                panic!("etcd did not become healthy in {START_DEADLINE:?}:\n{}", etcd.log());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        etcd
    }
}

impl Drop for TestEtcd {
    fn drop(&mut self) {
        // Closing the pipe stops etcd; a static is never dropped, the process's end does it.
        if let Ok(mut child) = self._guard.lock() {
            if let Some(mut stdin) = child.stdin.take() {
                let _ = stdin.write_all(b"\n");
            }
            let _ = child.wait();
        }
    }
}

/// Holds the shared etcd for a test that counts its revisions, which every write to it shares:
/// such tests (the contract suite's on etcd among them) run one at a time. A failed test poisons
/// the lock; the next one starts afresh anyway.
#[cfg(test)]
pub(crate) fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static ONE: Mutex<()> = Mutex::new(());
    ONE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Distinct free ports: each listener is held until all are chosen, or the system may hand out
/// one port twice (etcd then fails to bind its peer and metrics listeners).
fn free_ports<const N: usize>() -> [u16; N] {
    let listeners: Vec<TcpListener> =
        (0..N).map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port")).collect();
    std::array::from_fn(|i| listeners[i].local_addr().expect("a bound port").port())
}

/// etcd's `/health` on the client port says it has a leader and serves.
fn healthy(port: u16) -> bool {
    let Ok(mut conn) = TcpStream::connect(("127.0.0.1", port)) else { return false };
    let _ = conn.set_read_timeout(Some(Duration::from_secs(2)));
    if conn.write_all(b"GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = conn.read_to_string(&mut answer);
    answer.contains(r#""health":"true""#)
}
