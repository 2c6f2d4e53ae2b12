//! Benchmark (not a test) of lists and watches against the real binary: watch delivery latency
//! (p50/p99) with 1 and 100 watchers, and list throughput for 10 000 objects in pages of 500.
//!
//! `cargo bench --bench listwatch`. Everything has a deadline, so it ends in bounded time (a few
//! minutes at most) even if the server misbehaves. Sizes can be reduced for a quick look with
//! `LISTWATCH_BENCH_OBJECTS` and `LISTWATCH_BENCH_WRITES`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The whole run must finish within this, or it stops with an error.
const DEADLINE: Duration = Duration::from_secs(600);
const NS: &str = "bench";

struct Server {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Server {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_virt-apiserver"))
        .args(["--listen", "127.0.0.1:0", "--database"])
        .arg(dir.path().join("bench.db"))
        .args(["--enable-garbage-collector", "false"])
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start virt-apiserver");
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut first).expect("address line");
    let base = first.trim().strip_prefix("listening on ").expect("listening line").to_owned();
    Server { child, base, _dir: dir }
}

fn vms() -> String {
    format!("/apis/kubevirt.io/v1/namespaces/{NS}/virtualmachines")
}

fn vm(name: &str) -> Value {
    json!({
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "labels": {"app": "bench"}},
        "spec": {"running": false, "template": {"spec": {"domain": {"devices": {
            "disks": [{"name": "root", "disk": {"bus": "virtio"}}]}}}}},
    })
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new().timeout(Duration::from_secs(30)).build()
}

fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"].as_str().and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// Opens a watch on a raw connection; a thread reports `(resourceVersion, arrival)` per event.
fn watch(base: &str, path: &str, tx: mpsc::Sender<(u64, Instant)>) -> TcpStream {
    let addr = base.strip_prefix("http://").unwrap();
    let mut stream = TcpStream::connect(addr).expect("connect");
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut r = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
    }
    std::thread::spawn(move || {
        let mut pending = Vec::new();
        loop {
            let mut size = String::new();
            if r.read_line(&mut size).unwrap_or(0) == 0 {
                return;
            }
            let Ok(n) = usize::from_str_radix(size.trim(), 16) else { return };
            if n == 0 {
                return;
            }
            let mut chunk = vec![0; n + 2];
            if r.read_exact(&mut chunk).is_err() {
                return;
            }
            pending.extend_from_slice(&chunk[..n]);
            while let Some(i) = pending.iter().position(|&b| b == b'\n') {
                let now = Instant::now();
                let line: Vec<u8> = pending.drain(..=i).collect();
                let ev: Value = serde_json::from_slice(&line).expect("event");
                if tx.send((rv(&ev["object"]), now)).is_err() {
                    return;
                }
            }
        }
    });
    stream
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Write → event latency over `writes` sequential updates, seen by each of `watchers`.
fn watch_latency(s: &Server, watchers: usize, writes: usize, started: Instant) {
    let agent = agent();
    let name = format!("latency-{watchers}");
    let created: Value = agent
        .post(&format!("{}{}", s.base, vms()))
        .send_json(vm(&name))
        .unwrap()
        .into_json()
        .unwrap();
    let (tx, rx) = mpsc::channel();
    let path = format!(
        "{}?watch=true&resourceVersion={}&fieldSelector=metadata.name%3D{name}",
        vms(),
        rv(&created)
    );
    let conns: Vec<TcpStream> = (0..watchers).map(|_| watch(&s.base, &path, tx.clone())).collect();
    drop(tx);
    // Let every watch reach its live phase before measuring.
    std::thread::sleep(Duration::from_millis(300 + 5 * watchers as u64));
    let mut sent = std::collections::HashMap::new();
    let mut commit = Vec::new();
    let item = format!("{}{}/{name}", s.base, vms());
    for i in 0..writes {
        assert!(started.elapsed() < DEADLINE, "benchmark deadline exceeded");
        let t0 = Instant::now();
        let obj: Value = agent
            .request("PATCH", &item)
            .set("Content-Type", "application/merge-patch+json")
            .send_string(&json!({"metadata": {"annotations": {"i": i.to_string()}}}).to_string())
            .unwrap()
            .into_json()
            .unwrap();
        commit.push(t0.elapsed());
        sent.insert(rv(&obj), t0);
    }
    let mut latencies = Vec::with_capacity(writes * watchers);
    let wait_until = Instant::now() + Duration::from_secs(30);
    while latencies.len() < writes * watchers {
        let left = wait_until.saturating_duration_since(Instant::now());
        let Ok((rev, at)) = rx.recv_timeout(left) else { break };
        if let Some(t0) = sent.get(&rev) {
            latencies.push(at.duration_since(*t0));
        }
    }
    for c in &conns {
        let _ = c.shutdown(Shutdown::Both);
    }
    let missing = writes * watchers - latencies.len();
    latencies.sort();
    commit.sort();
    println!(
        "watch delivery, {watchers:>3} watcher(s), {writes} writes: p50 {}  p99 {}  max {}  \
         (write round trip p50 {}  p99 {}){}",
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.99)),
        ms(latencies.last().copied().unwrap_or_default()),
        ms(percentile(&commit, 0.5)),
        ms(percentile(&commit, 0.99)),
        if missing > 0 { format!("  MISSING {missing} events") } else { String::new() },
    );
}

/// Creates `n` objects with a few clients at once.
fn populate(s: &Server, n: usize, started: Instant) {
    let t0 = Instant::now();
    std::thread::scope(|scope| {
        for t in 0..8 {
            scope.spawn(move || {
                let agent = agent();
                let url = format!("{}{}", s.base, vms());
                for i in (t..n).step_by(8) {
                    assert!(started.elapsed() < DEADLINE, "benchmark deadline exceeded");
                    agent.post(&url).send_json(vm(&format!("obj-{i:05}"))).expect("create");
                }
            });
        }
    });
    let took = t0.elapsed();
    println!(
        "created {n} objects in {:.2} s ({:.0} writes/s, each fsync'd)",
        took.as_secs_f64(),
        n as f64 / took.as_secs_f64()
    );
}

/// Lists everything in pages of `limit`; answers the total time and each page's time.
fn list_all(s: &Server, limit: usize, expect: usize) -> (Duration, Vec<Duration>) {
    let agent = agent();
    let mut token = String::new();
    let mut pages = Vec::new();
    let mut count = 0;
    let t0 = Instant::now();
    loop {
        let p0 = Instant::now();
        let url = format!("{}{}?limit={limit}&continue={token}", s.base, vms());
        let page: Value = agent.get(&url).call().unwrap().into_json().unwrap();
        pages.push(p0.elapsed());
        count += page["items"].as_array().unwrap().len();
        token = page["metadata"]["continue"].as_str().unwrap_or("").to_owned();
        if token.is_empty() {
            break;
        }
    }
    assert_eq!(count, expect, "a full list");
    (t0.elapsed(), pages)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary without it,
    // and a test run should not spend a minute benchmarking.
    if !std::env::args().any(|a| a == "--bench") {
        println!("listwatch: a benchmark; run it with `cargo bench --bench listwatch`");
        return;
    }
    let started = Instant::now();
    let objects = env_usize("LISTWATCH_BENCH_OBJECTS", 10_000);
    let writes = env_usize("LISTWATCH_BENCH_WRITES", 300);
    let s = start();
    println!("virt-apiserver at {}", s.base);

    watch_latency(&s, 1, writes, started);
    watch_latency(&s, 100, writes, started);

    populate(&s, objects - 2, started);
    let total = objects;
    let mut runs = Vec::new();
    for _ in 0..3 {
        assert!(started.elapsed() < DEADLINE, "benchmark deadline exceeded");
        runs.push(list_all(&s, 500, total));
    }
    runs.sort_by_key(|r| r.0);
    let (best, pages) = &runs[0];
    let (median, _) = &runs[1];
    let first_pages: Duration = pages.iter().take(3).sum::<Duration>() / 3;
    let last_pages: Duration = pages.iter().rev().take(3).sum::<Duration>() / 3;
    println!(
        "list {total} objects in {} pages of 500: best {:.0} ms ({:.0} objects/s), median {:.0} ms; \
         first pages {} each, last pages {} each",
        pages.len(),
        best.as_secs_f64() * 1000.0,
        total as f64 / best.as_secs_f64(),
        median.as_secs_f64() * 1000.0,
        ms(first_pages),
        ms(last_pages),
    );
    println!("done in {:.1} s", started.elapsed().as_secs_f64());
}
