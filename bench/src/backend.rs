//! What the workloads need from a server under test, and the HTTP and /proc helpers both
//! implementations share.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::http::{Conn, Endpoint, Request};
use crate::stream::Stream;

/// A server under test. `set` groups objects: a namespace for us, a key prefix for etcd.
///
/// The throughput operations (create, get) are a request and a check of its answer, so the
/// workload owns the connections and may drive many from one thread; the sequential ones
/// (list, update) run on a blocking connection the workload hands in. Every request goes
/// through `http`'s client, the same for both servers: a non-2xx answer fails (a 429 is
/// counted in the endpoint and retried).
pub trait Backend: Sync {
    fn label(&self) -> &'static str;
    /// Makes `set` ready to hold objects, before a workload times anything in it: a server with
    /// kube's namespaces needs the namespace made first; etcd's keys need nothing.
    fn prepare(&self, _set: &str) -> Result<(), String> {
        Ok(())
    }
    /// Where clients connect, with its count of 429 answers.
    fn endpoint(&self) -> &Endpoint;
    /// Where client `i` of a throughput workload connects: replicas of one server take clients
    /// round-robin.
    fn endpoint_of(&self, _client: usize) -> &Endpoint {
        self.endpoint()
    }
    /// The request that stores `body` as a new object `name` of `set`.
    fn create(&self, set: &str, name: &str, body: &str) -> Request;
    /// From a create's (2xx) answer: the size of what the server says it stored.
    fn created(&self, body: &str, answer: &[u8]) -> Result<usize, String>;
    /// The request that reads object `name` of `set`.
    fn get(&self, set: &str, name: &str) -> Request;
    /// Checks a get's (2xx) answer.
    fn got(&self, answer: &[u8]) -> Result<(), String>;
    /// The request for the first page of `set` at the current revision (a list without a
    /// resourceVersion, a linearizable range): `limit` items, or all of them when None.
    fn list_first(&self, set: &str, limit: Option<usize>) -> Request;
    /// From a first page's (2xx) answer: its items, counted unread, and the revision it reflects.
    fn listed(&self, answer: &[u8]) -> Result<(usize, u64), String>;
    /// Reads all of `set` in pages of `limit` at one revision; answers (items, pages).
    fn list(&self, conn: &mut Conn, set: &str, limit: usize) -> Result<(usize, usize), String>;
    /// Rewrites an existing object (the `i`th time); answers the revision written.
    fn update(
        &self,
        conn: &mut Conn,
        set: &str,
        name: &str,
        body: &str,
        i: usize,
    ) -> Result<u64, String>;
    /// Watches one object from now on; the stream's lines go to `tx`.
    fn watch(
        &self,
        set: &str,
        name: &str,
        tx: mpsc::Sender<(Vec<u8>, Instant)>,
    ) -> Result<Stream, String>;
    /// The revisions of the events in one line of a watch stream.
    fn event_revisions(&self, line: &[u8]) -> Vec<u64>;
    /// Stops the server and starts it again on the same data; answers the time to serving.
    fn restart(&mut self) -> Result<Duration, String>;
    fn pid(&self) -> u32;
    /// `(commits, writes)` from the server's own counters, when it has them.
    fn write_counters(&self) -> Option<(u64, u64)>;
    /// 429 answers seen so far.
    fn throttled(&self) -> u64 {
        self.endpoint().throttled()
    }
}

/// One GET on a connection of its own (readiness polls, metrics): its body, if a 2xx.
pub fn fetch(ep: &Endpoint, path: &str) -> Result<Vec<u8>, String> {
    let mut conn = Conn::open(ep)?;
    conn.call(&ep.request("GET", path, None, b"")).map(<[u8]>::to_vec)
}

/// A number that JSON may carry as a string (etcd's gateway writes int64 as strings, kube
/// writes resourceVersion as one).
pub fn num(v: &serde_json::Value) -> u64 {
    v.as_u64().or_else(|| v.as_str().and_then(|s| s.parse().ok())).unwrap_or(0)
}

/// Resident memory of a process, in bytes: all, its peak, and the anonymous part (what is not
/// file pages such as SQLite's or bbolt's memory maps).
#[derive(Clone, Copy, Default)]
pub struct Memory {
    pub rss: u64,
    pub peak: u64,
    pub anon: u64,
}

pub fn memory(pid: u32) -> Result<Memory, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("/proc/{pid}/status: {e}"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
            .ok_or_else(|| format!("no {name} in /proc/{pid}/status"))
    };
    Ok(Memory { rss: field("VmRSS:")?, peak: field("VmHWM:")?, anon: field("RssAnon:")? })
}

/// CPU time (user + system, all threads) of a process, in clock ticks, from `/proc/PID/stat`;
/// `pid` None reads this process (`/proc/self/stat`).
pub fn cpu_ticks(pid: Option<u32>) -> Result<u64, String> {
    let path = pid.map_or_else(|| "/proc/self/stat".to_owned(), |p| format!("/proc/{p}/stat"));
    let stat = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
    stat_cpu_ticks(&stat).ok_or_else(|| format!("{path}: no utime and stime in {stat:?}"))
}

/// utime + stime (fields 14 and 15) of a `/proc/PID/stat` line. The command name (field 2) is
/// in parentheses and may hold spaces and parentheses itself, so fields are counted after the
/// last ')', where field 3 (the state) starts.
fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(14 - 3);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Clock ticks per second, the unit of `cpu_ticks`: `getconf CLK_TCK`, read once (100, Linux's
/// usual value, only if that fails).
pub fn ticks_per_sec() -> u64 {
    static TICKS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .and_then(|o| String::from_utf8_lossy(&o.stdout).trim().parse().ok())
            .filter(|&t| t > 0)
            .unwrap_or(100)
    })
}

/// Polls `ready` until it answers true; answers the time since `t0`.
pub fn wait_ready(
    t0: Instant,
    limit: Duration,
    mut ready: impl FnMut() -> bool,
) -> Result<Duration, String> {
    while t0.elapsed() < limit {
        if ready() {
            return Ok(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    Err(format!("not serving after {limit:?}"))
}

/// Asks a process to stop with SIGTERM, as an operator would; SIGKILL if it lingers.
pub fn stop(child: &mut std::process::Child) {
    let _ = std::process::Command::new("kill").arg("-TERM").arg(child.id().to_string()).status();
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(15) {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Raises this process's open-files limit to `want` (or to its hard limit, when it may not
/// raise that: root may), for its clients and for the servers it starts, which inherit it; answers
/// the soft limit now in force. The soak and the overload scenario hold thousands of
/// connections; the usual soft limit is 1024.
pub fn raise_fd_limit(want: u64) -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let lim = getrlimit(Resource::Nofile);
    let (cur, max) = (lim.current.unwrap_or(u64::MAX), lim.maximum.unwrap_or(u64::MAX));
    if max < want
        && setrlimit(Resource::Nofile, Rlimit { current: Some(want), maximum: Some(want) }).is_ok()
    {
        return want;
    }
    let target = max.min(want.max(cur));
    match setrlimit(Resource::Nofile, Rlimit { current: Some(target), maximum: lim.maximum }) {
        Ok(()) => target,
        Err(_) => cur,
    }
}

/// A free loopback port, for servers (etcd) that cannot report the port they took.
pub fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    l.local_addr().unwrap().port()
}

/// Checks of the pure helpers.
#[cfg(test)]
mod tests {
    use super::stat_cpu_ticks;

    // A real line (pid 1234, `cat`): utime 7, stime 3 (fields 14 and 15).
    const LINE: &str = "1234 (cat) R 1000 1234 1000 34816 1234 4194304 91 0 0 0 7 3 0 0 20 0 \
        1 0 12345 5632000 200 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0\n";

    #[test]
    fn stat_fields_after_the_command() {
        assert_eq!(stat_cpu_ticks(LINE), Some(10));
        assert_eq!(stat_cpu_ticks(&LINE.replace(" 7 3 ", " 123456 654321 ")), Some(777777));
    }

    #[test]
    fn stat_command_with_spaces_and_parentheses() {
        let odd = LINE.replace("(cat)", "(a b) c (d) 9 9)");
        assert_eq!(stat_cpu_ticks(&odd), Some(10));
        assert_eq!(stat_cpu_ticks(&LINE.replace("(cat)", "())")), Some(10));
    }

    #[test]
    fn stat_truncated() {
        assert_eq!(stat_cpu_ticks(""), None);
        assert_eq!(stat_cpu_ticks("1234 cat R 1 2 3"), None);
        assert_eq!(
            stat_cpu_ticks("1234 (cat) R 1000 1234 1000 34816 1234 4194304 91 0 0 0 7"),
            None
        );
        assert_eq!(stat_cpu_ticks("1234 (cat) R 1 1 1 1 1 1 1 1 1 1 x 3"), None);
    }

    #[test]
    fn ticks_per_sec_positive() {
        assert!(super::ticks_per_sec() > 0);
        // This process has run: its own line parses.
        assert!(super::cpu_ticks(None).is_ok());
    }
}
