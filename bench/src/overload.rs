//! The overload scenario (`virt-bench overload`): against our server only, 10 000 idle
//! keep-alive connections and 5 000 watchers held at once (1 000 and 500 in quick mode). While
//! they are held, reads and writes must still be answered in good time, every watcher must get
//! every write's event exactly once and in order, and resident memory must stay bounded: the
//! figures are memory per held connection, get and create latency before and under the load,
//! and the fan-out delay (a write's send to its event reaching the last watcher).

use std::io::{Read, Write as _};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::backend::{self, num, Backend};
use crate::http::Conn;
use crate::object::Body;
use crate::report::{ms, percentile};
use crate::stream::AsyncLines;

const NS: &str = "overload";
/// Gets timed before and under the load.
const GETS: usize = 200;
/// Bound on the resident memory each held connection or watch may cost the server.
const MAX_KIB_PER_CONNECTION: f64 = 64.0;
/// Bound on a get's p99 under the load.
const MAX_GET_P99: Duration = Duration::from_millis(250);

pub struct OverloadPlan {
    pub idle: usize,
    pub watchers: usize,
    /// Creates sent one after another while everything is held; each fans out to every watcher.
    pub writes: usize,
}

impl OverloadPlan {
    pub fn new(quick: bool) -> OverloadPlan {
        if quick {
            OverloadPlan { idle: 1_000, watchers: 500, writes: 10 }
        } else {
            OverloadPlan { idle: 10_000, watchers: 5_000, writes: 20 }
        }
    }
}

#[derive(Default)]
pub struct OverloadResult {
    pub idle: usize,
    pub watchers: usize,
    pub writes: usize,
    pub open_idle: Duration,
    pub open_watchers: Duration,
    /// Server RSS (bytes): before, with everything held, after the writes.
    pub rss: [u64; 3],
    pub get_p99: [Duration; 2],
    pub create_p50: Duration,
    pub create_p99: Duration,
    /// Per write, from its send to the last watcher reading its event.
    pub fanout_p50: Duration,
    pub fanout_p99: Duration,
    pub deliveries: usize,
    pub failures: Vec<String>,
}

/// Times `GETS` gets of one object on one connection; sorted latencies.
fn gets(b: &dyn Backend, name: &str) -> Result<Vec<Duration>, String> {
    let mut conn = Conn::open(b.endpoint())?;
    let req = b.get(NS, name);
    let mut out = Vec::with_capacity(GETS);
    for _ in 0..GETS {
        let t = Instant::now();
        conn.call(&req)?;
        out.push(t.elapsed());
    }
    out.sort();
    Ok(out)
}

/// One idle keep-alive connection: a readiness request answered, then nothing.
fn idle_connection(addr: &str) -> Result<TcpStream, String> {
    let mut c = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
    c.set_read_timeout(Some(Duration::from_secs(30))).ok();
    c.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n").map_err(|e| e.to_string())?;
    let mut buf = [0u8; 512];
    let n = c.read(&mut buf).map_err(|e| format!("read: {e}"))?;
    if !buf[..n].starts_with(b"HTTP/1.1 200") {
        return Err(format!("readyz: {}", String::from_utf8_lossy(&buf[..n])));
    }
    Ok(c)
}

/// Follows one watch until `writes` events came: each event's object name and when it was read.
async fn follow(
    addr: String,
    path: String,
    writes: usize,
    opened: Arc<AtomicUsize>,
) -> Result<Vec<(String, Instant)>, String> {
    let mut s = AsyncLines::open(&addr, &path).await?;
    opened.fetch_add(1, Ordering::Relaxed);
    let mut got = Vec::with_capacity(writes);
    while got.len() < writes {
        let Some((line, at)) = s.next_line().await? else {
            return Err(format!("the watch ended after {} events", got.len()));
        };
        let ev: Value = serde_json::from_slice(&line).map_err(|e| format!("event: {e}"))?;
        let name = ev["object"]["metadata"]["name"].as_str().unwrap_or("").to_owned();
        got.push((name, at));
    }
    Ok(got)
}

pub fn run(b: &dyn Backend, body: &Body, plan: &OverloadPlan) -> OverloadResult {
    let mut r = OverloadResult {
        idle: plan.idle,
        watchers: plan.watchers,
        writes: plan.writes,
        ..Default::default()
    };
    if let Err(e) = run_into(b, body, plan, &mut r) {
        r.failures.push(e);
    }
    r
}

fn run_into(
    b: &dyn Backend,
    body: &Body,
    plan: &OverloadPlan,
    r: &mut OverloadResult,
) -> Result<(), String> {
    let pid = b.pid();
    let addr = b.endpoint().addr().to_owned();
    let server = addr.clone();
    b.prepare(NS)?;
    let mut conn = Conn::open(b.endpoint())?;
    conn.call(&b.create(NS, "probe", &body.json("probe")))?;
    let before = gets(b, "probe")?;
    r.get_p99[0] = percentile(&before, 0.99);
    r.rss[0] = backend::memory(pid)?.rss;

    let t = Instant::now();
    let idle = (0..plan.idle).map(|_| idle_connection(&server)).collect::<Result<Vec<_>, _>>()?;
    r.open_idle = t.elapsed();

    // Watches from the revision of now, so each sees exactly the creates below.
    let list = backend::fetch(
        b.endpoint(),
        &format!("/apis/kubevirt.io/v1/namespaces/{NS}/virtualmachines?limit=1"),
    )?;
    let list: Value = serde_json::from_slice(&list).map_err(|e| format!("list: {e}"))?;
    let rv = num(&list["metadata"]["resourceVersion"]);
    let path = format!(
        "/apis/kubevirt.io/v1/namespaces/{NS}/virtualmachines?watch=true&resourceVersion={rv}"
    );
    let opened = Arc::new(AtomicUsize::new(0));
    let t = Instant::now();
    // One client thread drives every watch (a current-thread runtime), as a lean load generator.
    let watchers = std::thread::spawn({
        let (opened, writes, count) = (opened.clone(), plan.writes, plan.watchers);
        move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let tasks: Vec<_> = (0..count)
                    .map(|_| {
                        tokio::spawn(follow(addr.clone(), path.clone(), writes, opened.clone()))
                    })
                    .collect();
                let mut out = Vec::with_capacity(count);
                for task in tasks {
                    out.push(match tokio::time::timeout(Duration::from_secs(180), task).await {
                        Err(_) => Err("its events did not all come in time".to_owned()),
                        Ok(Err(e)) => Err(e.to_string()),
                        Ok(Ok(r)) => r,
                    });
                }
                out
            })
        }
    });
    while opened.load(Ordering::Relaxed) < plan.watchers {
        if t.elapsed() > Duration::from_secs(120) {
            return Err(format!(
                "{} of {} watches open after 120 s",
                opened.load(Ordering::Relaxed),
                plan.watchers
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    r.open_watchers = t.elapsed();
    r.rss[1] = backend::memory(pid)?.rss;

    let under = gets(b, "probe")?;
    r.get_p99[1] = percentile(&under, 0.99);
    let mut sent = Vec::with_capacity(plan.writes);
    let mut creates = Vec::with_capacity(plan.writes);
    for i in 0..plan.writes {
        let name = format!("fan-{i:03}");
        let t = Instant::now();
        conn.call(&b.create(NS, &name, &body.json(&name)))?;
        creates.push(t.elapsed());
        sent.push((name, t));
        // Paced, so each write's fan-out is timed on its own.
        std::thread::sleep(Duration::from_millis(100));
    }
    creates.sort();
    r.create_p50 = percentile(&creates, 0.5);
    r.create_p99 = percentile(&creates, 0.99);

    let mut last = vec![Duration::ZERO; plan.writes];
    let results = watchers.join().map_err(|_| "the watch thread panicked".to_owned())?;
    for (w, got) in results.into_iter().enumerate() {
        let got = got.map_err(|e| format!("watcher {w}: {e}"))?;
        for (i, ((name, at), (want, t))) in got.iter().zip(&sent).enumerate() {
            if name != want {
                return Err(format!("watcher {w}: event {i} is {name}, the log says {want}"));
            }
            last[i] = last[i].max(at.saturating_duration_since(*t));
        }
        r.deliveries += got.len();
    }
    last.sort();
    r.fanout_p50 = percentile(&last, 0.5);
    r.fanout_p99 = percentile(&last, 0.99);
    r.rss[2] = backend::memory(pid)?.rss;
    // Still answering a newcomer, with everything held.
    backend::fetch(b.endpoint(), "/readyz")?;
    drop(idle);

    let held = (plan.idle + plan.watchers) as f64;
    let per = r.rss[2].saturating_sub(r.rss[0]) as f64 / 1024.0 / held;
    if per > MAX_KIB_PER_CONNECTION {
        r.failures.push(format!(
            "memory: {per:.1} KiB per held connection (bound {MAX_KIB_PER_CONNECTION} KiB)"
        ));
    }
    if r.get_p99[1] > MAX_GET_P99 {
        r.failures.push(format!(
            "get p99 under load {:.1} ms (bound {} ms)",
            ms(r.get_p99[1]),
            MAX_GET_P99.as_millis()
        ));
    }
    Ok(())
}

/// The report's section.
pub fn markdown(r: &OverloadResult, provenance: &str, quick: bool) -> String {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let held = (r.idle + r.watchers) as f64;
    let per = r.rss[2].saturating_sub(r.rss[0]) as f64 / 1024.0 / held;
    let verdict = if r.failures.is_empty() {
        "PASS".to_owned()
    } else {
        format!("FAIL: {}", r.failures.join("; "))
    };
    format!(
        "## Overload: {idle} idle connections and {watchers} watchers{mode}\n\n\
         `cargo run --release -p virt-bench -- overload{flag}`. {provenance}\n\n\
         Our server only, on SQLite. {idle} keep-alive connections each make one request and then \
         stay open; {watchers} watches of one namespace open from one resourceVersion; then gets \
         and {writes} paced creates run while all of them are held. Every watcher must read every \
         create's event, in order ({deliveries} deliveries checked); one client thread decodes every \
         event, so the fan-out figure includes its work. Bounds: at most \
         {MAX_KIB_PER_CONNECTION} KiB of server RSS per held connection, get p99 under the load \
         at most {bound} ms. Result: **{verdict}**.\n\n\
         | figure | value |\n|---|---|\n\
         | opening the idle connections | {oi:.1} s |\n\
         | opening the watches | {ow:.1} s |\n\
         | server RSS before / held / after the writes | {r0:.0} / {r1:.0} / {r2:.0} MiB |\n\
         | RSS per held connection | {per:.1} KiB |\n\
         | get p99 before / under the load | {g0:.2} / {g1:.2} ms |\n\
         | create p50 / p99 under the load | {c50:.2} / {c99:.2} ms |\n\
         | fan-out to the last of {watchers} watchers, p50 / p99 | {f50:.1} / {f99:.1} ms |\n",
        idle = r.idle,
        watchers = r.watchers,
        writes = r.writes,
        deliveries = r.deliveries,
        mode = if quick { " (quick)" } else { "" },
        flag = if quick { " --quick" } else { "" },
        bound = MAX_GET_P99.as_millis(),
        oi = r.open_idle.as_secs_f64(),
        ow = r.open_watchers.as_secs_f64(),
        r0 = mib(r.rss[0]),
        r1 = mib(r.rss[1]),
        r2 = mib(r.rss[2]),
        g0 = ms(r.get_p99[0]),
        g1 = ms(r.get_p99[1]),
        c50 = ms(r.create_p50),
        c99 = ms(r.create_p99),
        f50 = ms(r.fanout_p50),
        f99 = ms(r.fanout_p99),
    )
}
