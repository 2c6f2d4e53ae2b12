//! Crash safety: an acknowledged write survives SIGKILL, and it was fsync'd before its answer.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};

use crate::common::*;
use crate::watches::watch_semantics::{vm, vm_path, vms};

const NS: &str = "crash";

/// One acknowledged write: the object's name, the answered resourceVersion and the label it set.
#[derive(Debug, Clone)]
struct Acked {
    name: String,
    rv: u64,
    step: u64,
}

/// Creates one object, then updates it again and again, recording every answered write, until
/// the server stops answering.
fn writer(base: String, id: usize, acked: Arc<Mutex<Vec<Acked>>>) {
    let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(10)).build();
    let name = format!("w{id}");
    let mut current: Option<Value> = None;
    for step in 0.. {
        let mut obj = match &current {
            None => vm(&name, json!({"step": "0"})),
            Some(stored) => stored.clone(),
        };
        obj["metadata"]["labels"]["step"] = json!(step.to_string());
        let result = match &current {
            None => agent.post(&format!("{base}{}", vms(NS))).send_json(&obj),
            Some(_) => agent.put(&format!("{base}{}", vm_path(NS, &name))).send_json(&obj),
        };
        let stored: Value = match result {
            Ok(resp) => match resp.into_json() {
                Ok(v) => v,
                // The answer broke off: not acknowledged.
                Err(_) => return,
            },
            Err(ureq::Error::Status(code, resp)) => {
                panic!(
                    "write {name} step {step}: {code} {}",
                    resp.into_string().unwrap_or_default()
                )
            }
            // Killed: this write was never acknowledged.
            Err(ureq::Error::Transport(_)) => return,
        };
        acked.lock().unwrap().push(Acked { name: name.clone(), rv: rv(&stored), step });
        current = Some(stored);
    }
}

/// Every event's revision from a watch, until it ends or goes quiet.
fn revisions(w: &Watch, quiet: Duration) -> Vec<(u64, Value)> {
    let mut out = Vec::new();
    while let Some(ev) = w.next(quiet) {
        if ev["type"] == "ERROR" {
            panic!("watch error: {ev}");
        }
        out.push((rv(&ev["object"]), ev));
    }
    out
}

#[test]
fn sigkill_during_concurrent_writes_loses_no_acknowledged_write() {
    let s = TestServer::start();
    s.namespace(NS);
    let start = s.current_rv(crate::common::preferred("kubevirt.io", "virtualmachines"));
    let watch = s.watch(&format!("{}?watch=true&resourceVersion={start}", vms(NS)));

    let acked = Arc::new(Mutex::new(Vec::new()));
    let writers: Vec<_> = (0..6)
        .map(|id| {
            let (base, acked) = (s.base.clone(), acked.clone());
            std::thread::spawn(move || writer(base, id, acked))
        })
        .collect();
    // Kill in the middle of the stream of writes.
    eventually(Duration::from_secs(60), || (acked.lock().unwrap().len() >= 150).then_some(()));
    let (db, dir) = s.kill();
    for w in writers {
        w.join().expect("writer thread");
    }
    let acked = acked.lock().unwrap().clone();

    // What the watch saw before the crash: revisions without a gap.
    let before = revisions(&watch, Duration::from_secs(2));
    assert!(!before.is_empty(), "the watch saw writes before the kill");
    let last_seen = before.last().unwrap().0;

    // Start-up recovers on its own, on the same file.
    let s = TestServer::start_with(ServerOptions { db: Some(db), ..Default::default() });
    let revs: Vec<u64> = before.iter().map(|(r, _)| *r).collect();
    s.assert_revisions_follow(start, &revs, "the watch before the crash");
    let _keep = dir;
    let list = s.get_json(&vms(NS));
    let now: u64 = list["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    let live: BTreeMap<String, Value> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| (o["metadata"]["name"].as_str().unwrap().to_owned(), o.clone()))
        .collect();
    let max_acked = acked.iter().map(|a| a.rv).max().unwrap();
    assert!(now >= max_acked, "revision {now} below an acknowledged {max_acked}");
    // Every acknowledged write is there: each object is at its last answered revision, or at the
    // one write after it that was in flight at the kill (committed, never answered).
    let mut last: BTreeMap<&str, &Acked> = BTreeMap::new();
    for a in &acked {
        last.insert(&a.name, a);
    }
    for (name, a) in &last {
        let obj = live.get(*name).unwrap_or_else(|| panic!("acknowledged {name} is gone"));
        let step: u64 = obj["metadata"]["labels"]["step"].as_str().unwrap().parse().unwrap();
        if rv(obj) == a.rv {
            assert_eq!(step, a.step, "{name} at its answered revision holds what was written");
        } else {
            assert!(rv(obj) > a.rv && step == a.step + 1, "{name}: {obj} after {a:?}");
        }
    }
    // Nothing half-written: the log holds each acknowledged revision with its content.
    let resumed = s.watch(&format!("{}?watch=true&resourceVersion={last_seen}", vms(NS)));
    let after = revisions(&resumed, Duration::from_secs(2));
    let revs: Vec<u64> = after.iter().map(|(r, _)| *r).collect();
    s.assert_revisions_follow(last_seen, &revs, "the resumed watch");
    let reached = after.last().map_or(last_seen, |(r, _)| *r);
    if s.gap_free() {
        assert_eq!(reached, now, "it reaches the current state");
    } else {
        // etcd's revision also counts the restart's own bookkeeping writes.
        assert!(reached <= now && reached >= max_acked, "it reaches the current state");
    }
    let mut seen: BTreeMap<u64, &Value> = before.iter().map(|(r, e)| (*r, e)).collect();
    seen.extend(after.iter().map(|(r, e)| (*r, e)));
    for a in &acked {
        let ev = seen.get(&a.rv).unwrap_or_else(|| panic!("no event for acknowledged {a:?}"));
        assert_eq!(ev["object"]["metadata"]["name"], a.name.as_str());
        assert_eq!(ev["object"]["metadata"]["labels"]["step"], a.step.to_string());
    }

    // New writes take higher revisions, and the resumed watch follows on.
    let fresh = crate::watches::watch_semantics::create(&s, NS, "after-restart", json!({}));
    assert!(rv(&fresh) > now);
    let ev = resumed.expect();
    assert_eq!((ev["type"].as_str(), rv(&ev["object"])), (Some("ADDED"), rv(&fresh)));
}

/// One traced fsync or fdatasync of a database file: when it began and ended (epoch seconds).
#[derive(Debug)]
struct Sync {
    start: f64,
    end: f64,
}

/// Parses `strace -f -ttt -T -y` output: syncs of files named `db_name*` (the database, its WAL).
fn syncs(trace: &str, db_name: &str) -> Vec<Sync> {
    let mut out = Vec::new();
    let mut pending: BTreeMap<&str, f64> = BTreeMap::new();
    for line in trace.lines() {
        // `PID TIME CALL`, the pid padded to a width.
        let Some((pid, rest)) = line.split_once(' ') else { continue };
        let Some((ts, rest)) = rest.trim_start().split_once(' ') else { continue };
        let Ok(ts) = ts.parse::<f64>() else { continue };
        let is_sync = rest.starts_with("fsync(") || rest.starts_with("fdatasync(");
        let duration = || -> Option<f64> {
            let d = rest.rsplit_once('<')?.1.strip_suffix('>')?;
            d.parse().ok()
        };
        if is_sync && rest.contains(db_name) {
            if rest.ends_with("<unfinished ...>") {
                pending.insert(pid, ts);
            } else if let Some(d) = duration() {
                out.push(Sync { start: ts, end: ts + d });
            }
        } else if rest.starts_with("<... fsync resumed>")
            || rest.starts_with("<... fdatasync resumed>")
        {
            if let (Some(start), Some(d)) = (pending.remove(pid), duration()) {
                // The duration is measured from the call's start.
                out.push(Sync { start, end: start + d });
            }
        }
    }
    out
}

fn epoch() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

/// The pid of a process whose parent is `parent`.
fn child_of(parent: u32) -> Option<u32> {
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
        // The fields after the command's closing parenthesis: state, ppid, ...
        let ppid: u32 = stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()?;
        (ppid == parent).then_some(pid)
    })
}

/// The server run under `strace -f -e trace=CALLS`, its trace written to a file.
struct Traced {
    strace: std::process::Child,
    base: String,
    server: u32,
    trace: std::path::PathBuf,
}

impl Traced {
    fn start(dir: &std::path::Path, db: &std::path::Path, calls: &str) -> Traced {
        if Command::new("strace").arg("-V").stdout(Stdio::null()).status().is_err() {
            panic!(
                "strace is not installed, and this test needs it to see the server's system \
                 calls: apt-get install -y strace (.ci/test installs it)"
            );
        }
        let trace = dir.join("strace.txt");
        let mut strace = Command::new("strace")
            .args(["-f", "-qq", "-ttt", "-T", "-y", "-e", &format!("trace={calls}")])
            .args(["-e", "signal=none", "-o"])
            .arg(&trace)
            .arg(binary())
            .args(["--listen", "127.0.0.1:0", "--database"])
            .arg(db)
            .stdout(Stdio::piped())
            .spawn()
            .expect("strace runs");
        let mut first = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(strace.stdout.take().unwrap()),
            &mut first,
        )
        .unwrap();
        let base =
            first.trim().strip_prefix("listening on ").expect("the server's address").to_owned();
        let server = child_of(strace.id()).expect("the traced server process");
        Traced { strace, base, server, trace }
    }

    /// Kills the server (strace then ends) and answers what strace saw.
    fn finish(mut self) -> String {
        let _ = Command::new("kill").args(["-KILL", &self.server.to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.strace.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "strace did not end after the server was killed");
            std::thread::sleep(Duration::from_millis(50));
        }
        std::fs::read_to_string(&self.trace).unwrap()
    }
}

#[test]
fn every_write_is_synced_to_disk_before_its_answer() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("synced.db");
    let traced = Traced::start(dir.path(), &db, "fsync,fdatasync");
    let base = traced.base.clone();
    let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(30)).build();

    // One at a time, then many at once (a batch shares one sync, which must still fall in each
    // write's window).
    let mut windows: Vec<(String, f64, f64)> =
        (0..10).map(|i| create_timed(&agent, &base, format!("one-{i}"))).collect();
    let concurrent: Vec<_> = (0..8)
        .map(|t| {
            let (agent, base) = (agent.clone(), base.clone());
            std::thread::spawn(move || {
                (0..5)
                    .map(|i| create_timed(&agent, &base, format!("many-{t}-{i}")))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    for t in concurrent {
        windows.extend(t.join().unwrap());
    }
    let metrics = agent.get(&format!("{base}/metrics")).call().unwrap().into_string().unwrap();

    let text = traced.finish();
    let name = db.file_name().unwrap().to_str().unwrap();
    let synced = syncs(&text, name);
    assert!(!synced.is_empty(), "no fsync/fdatasync of {name}* traced:\n{text}");
    for (write, sent, answered) in &windows {
        assert!(
            synced.iter().any(|s| s.start >= *sent && s.end <= *answered),
            "no sync of the database between the arrival of {write} ({sent:.6}) and its \
             answer ({answered:.6}); syncs: {synced:?}"
        );
    }
    // Fewer syncs than writes overall shows batching when writes overlap (not asserted: timing).
    assert!(metrics.contains("virt_apiserver_store_writes_total"), "{metrics}");
}

/// Every accepted connection gets TCP_NODELAY, as Go's servers set it: otherwise a response's
/// or a watch event's last small segment waits for the client's delayed ACK (~40 ms).
#[test]
fn accepted_connections_are_tcp_nodelay() {
    let dir = tempfile::tempdir().unwrap();
    let traced = Traced::start(dir.path(), &dir.path().join("nodelay.db"), "setsockopt");
    let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(30)).build();
    for _ in 0..3 {
        // A fresh connection each time.
        let fresh = ureq::AgentBuilder::new().max_idle_connections(0).build();
        assert_eq!(fresh.get(&format!("{}/readyz", traced.base)).call().unwrap().status(), 200);
    }
    agent.get(&format!("{}{}", traced.base, vms("default"))).call().unwrap();
    let text = traced.finish();
    // `setsockopt(24<socket:[1747428]>, SOL_TCP, TCP_NODELAY, [1], 4)`: nothing else in the
    // server sets it, so each such call is one accepted connection.
    let accepted: Vec<&str> = text.lines().filter(|l| l.contains("TCP_NODELAY, [1]")).collect();
    assert!(
        accepted.len() >= 4,
        "TCP_NODELAY set on {} connections, want 4:\n{text}",
        accepted.len()
    );
}

/// Creates a VirtualMachine; answers its name, when the request was sent and when it was
/// answered.
fn create_timed(agent: &ureq::Agent, base: &str, name: String) -> (String, f64, f64) {
    let sent = epoch();
    let resp = agent.post(&format!("{base}{}", vms("default"))).send_json(vm(&name, json!({})));
    let answered = epoch();
    assert_eq!(resp.expect("create").status(), 201);
    (name, sent, answered)
}

#[test]
fn strace_lines_parse_whatever_the_pid_width() {
    let trace = "\
9886  1795670180.291031 fsync(4</t/x.db-journal>) = 0 <0.000387>
12345 1795670181.000000 fdatasync(4</t/x.db-wal> <unfinished ...>
9886  1795670181.000100 fsync(7</t/other>) = 0 <0.000050>
12345 1795670181.000500 <... fdatasync resumed>) = 0 <0.002000>
";
    let s = syncs(trace, "x.db");
    assert_eq!(s.len(), 2, "{s:?}");
    assert!((s[0].end - 1795670180.291418).abs() < 1e-6);
    assert!((s[1].start - 1795670181.0).abs() < 1e-6 && (s[1].end - 1795670181.002).abs() < 1e-6);
}
