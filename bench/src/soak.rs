//! The soak (`virt-bench soak [--minutes N]`): against our server only, 32 writers create,
//! update and delete at a steady pace while 1 000 watchers with mixed selectors and paginated
//! listers run, all at once. Every watcher's stream is checked against the writers' own log
//! (each acknowledged write with its resourceVersion): every event of its selection, exactly
//! once, in order, of the type kube's selector transitions give. Resident memory is sampled
//! every second; the run fails on any error, any 429, any watcher off the log, or memory
//! growing 10% or more after the warm-up.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::backend::{self, num, Backend};
use crate::http::{query_value, AsyncConn, Conn};
use crate::object::Body;
use crate::report::{ms, percentile};
use crate::stream::AsyncLines;

/// Namespaces the writers spread over.
pub const NAMESPACES: usize = 8;
pub const WRITERS: usize = 32;
/// Objects each writer keeps at most (slots reused after a delete, so names recur).
const SLOTS: usize = 8;
/// Label groups an object moves between (`soak/group`), so label selectors see transitions.
const GROUPS: u8 = 4;
pub const WATCHERS: usize = 1_000;
/// The watchers and one more, unfiltered and cluster-wide: the only way to learn a delete's
/// resourceVersion (kube answers a delete of a custom resource with a Status, no object), so
/// the log takes them from it, once its every other event matched the log's own.
const STREAMS: usize = WATCHERS + 1;
/// Watchers per client thread (each a tokio current-thread runtime).
const WATCHER_THREADS: usize = 2;
pub const LISTERS: usize = 2;
/// Each writer's pace: about 100 writes per second in all.
pub const WRITER_INTERVAL: Duration = Duration::from_millis(320);
const PAGE: usize = 50;

fn ns(i: usize) -> String {
    format!("soak-{i}")
}

fn obj_name(writer: usize, slot: usize) -> String {
    format!("w{writer:02}-s{slot}")
}

/// One acknowledged write, as its writer recorded it.
#[derive(Clone, Copy)]
struct Write {
    rv: u64,
    writer: u8,
    slot: u8,
    /// The object's `soak/group` before and after (None: absent, a create's before or a
    /// delete's after).
    before: Option<u8>,
    after: Option<u8>,
    sent: Instant,
    took: Duration,
}

/// Gives each delete in `log` (rv 0: its answer is a Status) the revision of its event in the
/// unfiltered watch, after checking that watch object by object: the same writes in the
/// writer's order, the creates' and updates' revisions equal to their acknowledgements.
fn resolve_deletes(log: &mut [Write], all: &Received) -> Result<(), String> {
    use std::collections::HashMap;
    let mut seen: HashMap<u16, Vec<(u64, Kind)>> = HashMap::new();
    for &(rv, kind, id, _) in &all.events {
        seen.entry(id).or_default().push((rv, kind));
    }
    let mut next: HashMap<u16, usize> = HashMap::new();
    // `log` holds each writer's writes in the order it made them.
    for w in log.iter_mut() {
        let id = u16::from(w.writer) * SLOTS as u16 + u16::from(w.slot);
        let i = next.entry(id).or_default();
        let want = match (w.before, w.after) {
            (None, _) => Kind::Added,
            (_, None) => Kind::Deleted,
            _ => Kind::Modified,
        };
        let name = obj_name(w.writer.into(), w.slot.into());
        let Some(&(rv, kind)) = seen.get(&id).and_then(|v| v.get(*i)) else {
            return Err(format!(
                "{name}: its write #{} ({want:?}, rv {}) never came",
                *i + 1,
                w.rv
            ));
        };
        if kind != want || (w.rv != 0 && w.rv != rv) {
            return Err(format!(
                "{name}: event #{}: {kind:?} at {rv}, the log has {want:?} at {}",
                *i + 1,
                w.rv
            ));
        }
        w.rv = rv;
        *i += 1;
    }
    for (id, v) in &seen {
        if v.len() > next.get(id).copied().unwrap_or(0) {
            return Err(format!(
                "object {id}: {} events, {} writes",
                v.len(),
                next.get(id).copied().unwrap_or(0)
            ));
        }
    }
    Ok(())
}

impl Write {
    fn ns(&self) -> usize {
        usize::from(self.writer) % NAMESPACES
    }
}

/// What a watcher selects: the path's namespace, a label selector on the group, field selectors
/// on the namespace and the name.
#[derive(Clone, Copy, Debug)]
struct Selection {
    namespace: Option<usize>,
    /// (group, equal): `soak/group=gN` or `soak/group!=gN`.
    label: Option<(u8, bool)>,
    field_ns: Option<usize>,
    field_name: Option<(u8, u8)>,
}

impl Selection {
    /// Watcher `i`'s selection: ten classes, cluster-wide and namespaced, label and field.
    fn of(i: usize) -> Selection {
        let none = Selection { namespace: None, label: None, field_ns: None, field_name: None };
        if i == WATCHERS {
            return none;
        }
        let x = i / 10;
        let n = x % NAMESPACES;
        let g = (x % usize::from(GROUPS)) as u8;
        match i % 10 {
            0 => Selection { label: Some((g, true)), ..none },
            1 => Selection { field_ns: Some(n), ..none },
            2 | 3 => Selection { namespace: Some(n), ..none },
            4..=6 => Selection { namespace: Some(n), label: Some((g, true)), ..none },
            7 | 8 => {
                // A writer of that namespace, one of its slots.
                let w = n + NAMESPACES * (x % (WRITERS / NAMESPACES));
                let slot = (x % SLOTS) as u8;
                Selection { namespace: Some(n), field_name: Some((w as u8, slot)), ..none }
            }
            _ => Selection { label: Some((g, false)), field_ns: Some(n), ..none },
        }
    }

    fn matches(&self, w: &Write, group: Option<u8>) -> bool {
        let Some(group) = group else { return false };
        self.namespace.is_none_or(|n| n == w.ns())
            && self.field_ns.is_none_or(|n| n == w.ns())
            && self.field_name.is_none_or(|(wr, s)| wr == w.writer && s == w.slot)
            && self.label.is_none_or(|(g, eq)| (g == group) == eq)
    }

    /// The event this watcher gets for `w`, by kube's selector transitions.
    fn event(&self, w: &Write) -> Option<Kind> {
        match (self.matches(w, w.before), self.matches(w, w.after)) {
            (false, true) => Some(Kind::Added),
            (true, true) => Some(Kind::Modified),
            (true, false) => Some(Kind::Deleted),
            (false, false) => None,
        }
    }

    fn path(&self, from_rv: u64, timeout: Duration) -> String {
        let mut p = match self.namespace {
            Some(n) => format!("/apis/kubevirt.io/v1/namespaces/{}/virtualmachines", ns(n)),
            None => "/apis/kubevirt.io/v1/virtualmachines".to_owned(),
        };
        p.push_str(&format!(
            "?watch=true&resourceVersion={from_rv}&timeoutSeconds={}",
            timeout.as_secs()
        ));
        if let Some((g, eq)) = self.label {
            let op = if eq { "=" } else { "!=" };
            p.push_str(&format!("&labelSelector={}", query_value(&format!("soak/group{op}g{g}"))));
        }
        let mut fields = Vec::new();
        if let Some(n) = self.field_ns {
            fields.push(format!("metadata.namespace={}", ns(n)));
        }
        if let Some((w, s)) = self.field_name {
            fields.push(format!("metadata.name={}", obj_name(w.into(), s.into())));
        }
        if !fields.is_empty() {
            p.push_str(&format!("&fieldSelector={}", query_value(&fields.join(","))));
        }
        p
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Added,
    Modified,
    Deleted,
}

/// What one watcher received: (resourceVersion, type, arrival) per event, and how it ended.
#[derive(Default)]
struct Received {
    /// (resourceVersion, type, object id (`writer * SLOTS + slot`), arrival).
    events: Vec<(u64, Kind, u16, Instant)>,
    error: Option<String>,
}

#[derive(serde::Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: &'a str,
    object: EventObject<'a>,
}

#[derive(serde::Deserialize)]
struct EventObject<'a> {
    #[serde(borrow)]
    metadata: EventMeta<'a>,
}

#[derive(serde::Deserialize)]
struct EventMeta<'a> {
    #[serde(rename = "resourceVersion", borrow, default)]
    rv: &'a str,
    #[serde(borrow, default)]
    name: &'a str,
}

/// `wNN-sK` → its object id.
fn object_id(name: &str) -> Option<u16> {
    let (w, s) = name.strip_prefix('w')?.split_once("-s")?;
    Some(w.parse::<u16>().ok()? * SLOTS as u16 + s.parse::<u16>().ok()?)
}

fn parse_event(line: &[u8]) -> Result<(u64, Kind, u16), String> {
    let ev: Event = serde_json::from_slice(line).map_err(|e| {
        format!("event {}: {e}", String::from_utf8_lossy(&line[..line.len().min(300)]))
    })?;
    let kind = match ev.kind {
        "ADDED" => Kind::Added,
        "MODIFIED" => Kind::Modified,
        "DELETED" => Kind::Deleted,
        other => {
            return Err(format!(
                "a {other} event: {}",
                String::from_utf8_lossy(&line[..line.len().min(300)])
            ))
        }
    };
    let meta = ev.object.metadata;
    let id = object_id(meta.name).ok_or_else(|| format!("an event of {:?}", meta.name))?;
    Ok((meta.rv.parse().map_err(|_| "an event without resourceVersion")?, kind, id))
}

/// The sizes of one soak.
pub struct SoakPlan {
    pub duration: Duration,
    pub quick: bool,
}

/// The figures of one soak, and what failed.
pub struct SoakResult {
    pub minutes: f64,
    pub writes: usize,
    pub write_p50: Duration,
    pub write_p99: Duration,
    pub events: usize,
    pub lag_p50: Duration,
    pub lag_p99: Duration,
    pub watchers_exact: usize,
    pub lists: u64,
    pub pages: u64,
    pub errors: u64,
    pub throttled: u64,
    pub rss_after_warmup: f64,
    pub rss_end: f64,
    pub rss_peak: f64,
    pub growth: f64,
    pub warmup: Duration,
    /// Per second: (RSS MiB, write p99 ms, watch lag p99 ms), NaN where nothing happened.
    pub series: Vec<(f64, f64, f64)>,
    pub failures: Vec<String>,
}

/// Runs the soak against `b` (our server).
pub fn run(b: &dyn Backend, body: &Body, plan: &SoakPlan) -> SoakResult {
    let addr = b.endpoint().addr().to_owned();
    for n in 0..NAMESPACES {
        b.prepare(&ns(n)).unwrap_or_else(|e| panic!("soak: namespace {}: {e}", ns(n)));
    }
    // Watchers start from the revision before the first write: they must see all of them.
    let r0 = current_rv(b).unwrap_or_else(|e| panic!("soak: {e}"));
    let errors = Arc::new(AtomicU64::new(0));
    let first_errors: Arc<Mutex<Vec<String>>> = Arc::default();
    let note_error = {
        let (errors, first) = (errors.clone(), first_errors.clone());
        move |e: String| {
            errors.fetch_add(1, Ordering::Relaxed);
            let mut f = first.lock().unwrap();
            if f.len() < 5 {
                f.push(e);
            }
        }
    };

    // Watchers, on their threads, opened before any write.
    let logs: Arc<Vec<Mutex<Received>>> =
        Arc::new((0..STREAMS).map(|_| Mutex::default()).collect());
    let stream_timeout = plan.duration + Duration::from_secs(300);
    let mut stops = Vec::new();
    let mut threads = Vec::new();
    let opened = Arc::new(AtomicU64::new(0));
    for t in 0..WATCHER_THREADS {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        stops.push(tx);
        let (logs, addr, opened) = (logs.clone(), addr.clone(), opened.clone());
        threads.push(std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            rt.block_on(async move {
                let tasks: Vec<_> = (t..STREAMS)
                    .step_by(WATCHER_THREADS)
                    .map(|i| {
                        let (logs, addr, opened) = (logs.clone(), addr.clone(), opened.clone());
                        tokio::spawn(async move {
                            let path = Selection::of(i).path(r0, stream_timeout);
                            let r = follow(&addr, &path, &logs[i], &opened).await;
                            if let Err(e) = r {
                                logs[i].lock().unwrap().error = Some(format!("{path}: {e}"));
                            }
                        })
                    })
                    .collect();
                let _ = rx.await;
                // Dropping the runtime, next, drops the tasks and closes their connections.
                drop(tasks);
            });
        }));
    }
    let t_open = Instant::now();
    while opened.load(Ordering::Relaxed) < STREAMS as u64 {
        assert!(
            t_open.elapsed() < Duration::from_secs(60),
            "soak: only {} of {STREAMS} watches opened within 60 s",
            opened.load(Ordering::Relaxed)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    println!("  soak: {STREAMS} watches open from revision {r0}");

    let t0 = Instant::now();
    let until = t0 + plan.duration;
    let stop = Arc::new(AtomicBool::new(false));

    // Listers: paginated lists of one namespace after another, on blocking connections.
    let lists = Arc::new(AtomicU64::new(0));
    let pages = Arc::new(AtomicU64::new(0));
    let listers: Vec<_> = (0..LISTERS)
        .map(|l| {
            let (stop, lists, pages, note_error) =
                (stop.clone(), lists.clone(), pages.clone(), note_error.clone());
            let ep = crate::http::Endpoint::new(&addr);
            std::thread::spawn(move || {
                let mut conn = match Conn::open(&ep) {
                    Ok(c) => c,
                    Err(e) => {
                        note_error(format!("lister: {e}"));
                        return 0;
                    }
                };
                let mut i = l;
                while !stop.load(Ordering::Relaxed) {
                    match list(&ep, &mut conn, i % (NAMESPACES + 1)) {
                        Ok(p) => {
                            lists.fetch_add(1, Ordering::Relaxed);
                            pages.fetch_add(p, Ordering::Relaxed);
                        }
                        Err(e) => note_error(format!("lister: {e}")),
                    }
                    i += LISTERS;
                    std::thread::sleep(Duration::from_millis(100));
                }
                ep.throttled()
            })
        })
        .collect();

    // Writers: one thread, 32 tasks at a steady pace.
    let writer_thread = {
        let (addr, note_error) = (addr.clone(), note_error.clone());
        let template: Value = serde_json::from_str(&body.json("x")).unwrap();
        std::thread::spawn(move || {
            let ep = crate::http::Endpoint::new(&addr);
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            let logs = rt.block_on(async {
                let writers = (0..WRITERS).map(|w| writer(&ep, w, &template, t0, until));
                futures_util::future::join_all(writers).await
            });
            let mut all = Vec::new();
            for r in logs {
                match r {
                    Ok(log) => all.extend(log),
                    Err(e) => note_error(format!("writer: {e}")),
                }
            }
            (all, ep.throttled())
        })
    };

    // Memory, every second, until the writers are done.
    let mut rss = Vec::new();
    let pid = b.pid();
    let mut tick = t0;
    while tick < until {
        match backend::memory(pid) {
            Ok(m) => rss.push(m.rss as f64 / 1024.0 / 1024.0),
            Err(e) => note_error(format!("memory: {e}")),
        }
        tick += Duration::from_secs(1);
        std::thread::sleep(tick.saturating_duration_since(Instant::now()));
        if !plan.quick && rss.len() % 60 == 0 {
            println!("  soak: {} s, RSS {:.0} MiB", rss.len(), rss.last().unwrap_or(&0.0));
        }
    }
    let (mut log, writer_429) = writer_thread.join().expect("writer thread");
    stop.store(true, Ordering::Relaxed);
    let lister_429: u64 = listers.into_iter().map(|h| h.join().expect("lister thread")).sum();
    let mut failures = Vec::new();
    let settle = Instant::now();
    while settle.elapsed() < Duration::from_secs(30) {
        let r = logs[WATCHERS].lock().unwrap();
        if r.error.is_some() || r.events.len() >= log.len() {
            break;
        }
        drop(r);
        std::thread::sleep(Duration::from_millis(50));
    }
    if let Err(e) = resolve_deletes(&mut log, &logs[WATCHERS].lock().unwrap()) {
        failures.push(format!("the unfiltered watch against the writers' log: {e}"));
    }
    log.sort_by_key(|w| w.rv);
    if log.windows(2).any(|p| p[0].rv == p[1].rv) {
        failures.push("two acknowledged writes share a resourceVersion".to_owned());
    }

    // Each watcher's selection of the log, then wait (30 s at most) for the streams to have it.
    let expected: Vec<Vec<(u64, Kind)>> = (0..STREAMS)
        .map(|i| {
            let sel = Selection::of(i);
            log.iter().filter_map(|w| sel.event(w).map(|k| (w.rv, k))).collect()
        })
        .collect();
    let settle = Instant::now();
    while settle.elapsed() < Duration::from_secs(30) {
        let behind = (0..STREAMS).any(|i| {
            let r = logs[i].lock().unwrap();
            r.error.is_none() && r.events.len() < expected[i].len()
        });
        if !behind {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    // A little longer, for an event beyond the expected (a duplicate) to show.
    std::thread::sleep(Duration::from_millis(500));
    for s in stops {
        let _ = s.send(());
    }
    for t in threads {
        t.join().expect("watcher thread");
    }

    // The checks and figures.
    let sent: std::collections::HashMap<u64, Instant> =
        log.iter().map(|w| (w.rv, w.sent)).collect();
    let secs = rss.len().max(1);
    let mut lag_by_sec: Vec<Vec<Duration>> = vec![Vec::new(); secs];
    let mut lags = Vec::new();
    let mut exact = 0;
    let mut events = 0;
    for (i, want) in expected.iter().enumerate() {
        let r = logs[i].lock().unwrap();
        events += r.events.len();
        for &(rv, _, _, at) in &r.events {
            if let Some(s) = sent.get(&rv) {
                let lag = at.saturating_duration_since(*s);
                lags.push(lag);
                let sec = at.saturating_duration_since(t0).as_secs() as usize;
                lag_by_sec[sec.min(secs - 1)].push(lag);
            }
        }
        let got: Vec<(u64, Kind)> = r.events.iter().map(|&(rv, k, _, _)| (rv, k)).collect();
        if let Some(e) = &r.error {
            failures.push(format!("watcher {i} ({:?}): {e}", Selection::of(i)));
        } else if got == *want {
            exact += 1;
        } else if failures.len() < 20 {
            let at = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(want.len());
            failures.push(format!(
                "watcher {i} ({:?}): {} events, want {}; first difference at {at}: got {:?}, \
                 want {:?}",
                Selection::of(i),
                got.len(),
                want.len(),
                got.get(at),
                want.get(at)
            ));
        }
    }
    if exact < STREAMS {
        failures.push(format!("{} of {STREAMS} watchers off the writers' log", STREAMS - exact));
    }
    let errors = errors.load(Ordering::Relaxed);
    if errors > 0 {
        failures.push(format!("{errors} error(s): {:?}", first_errors.lock().unwrap()));
    }
    let throttled = writer_429 + lister_429;
    if throttled > 0 {
        failures.push(format!("{throttled} answer(s) 429"));
    }

    let mut write_by_sec: Vec<Vec<Duration>> = vec![Vec::new(); secs];
    for w in &log {
        let sec = w.sent.saturating_duration_since(t0).as_secs() as usize;
        write_by_sec[sec.min(secs - 1)].push(w.took);
    }
    let p99 = |v: &mut Vec<Duration>| {
        v.sort();
        if v.is_empty() {
            f64::NAN
        } else {
            ms(percentile(v, 0.99))
        }
    };
    let series = (0..secs)
        .map(|s| {
            (
                rss.get(s).copied().unwrap_or(f64::NAN),
                p99(&mut write_by_sec[s]),
                p99(&mut lag_by_sec[s]),
            )
        })
        .collect();

    // Memory: the median of a window right after the warm-up against one at the end.
    let warmup_secs = (secs / 5).max(10).min(secs.saturating_sub(1));
    let window = (secs / 10).max(5);
    let median_of = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(f64::NAN)
    };
    let early = median_of(&rss[warmup_secs.min(rss.len())..(warmup_secs + window).min(rss.len())]);
    let late = median_of(&rss[rss.len().saturating_sub(window)..]);
    let growth = late / early - 1.0;
    if growth.is_nan() || growth >= 0.10 {
        failures.push(format!(
            "RSS grew {:.1}% after the warm-up ({early:.0} → {late:.0} MiB)",
            growth * 100.0
        ));
    }

    let mut took: Vec<Duration> = log.iter().map(|w| w.took).collect();
    took.sort();
    lags.sort();
    SoakResult {
        minutes: plan.duration.as_secs_f64() / 60.0,
        writes: log.len(),
        write_p50: percentile(&took, 0.5),
        write_p99: percentile(&took, 0.99),
        events,
        lag_p50: percentile(&lags, 0.5),
        lag_p99: percentile(&lags, 0.99),
        watchers_exact: exact,
        lists: lists.load(Ordering::Relaxed),
        pages: pages.load(Ordering::Relaxed),
        errors,
        throttled,
        rss_after_warmup: early,
        rss_end: late,
        rss_peak: rss.iter().copied().fold(0.0, f64::max),
        growth,
        warmup: Duration::from_secs(warmup_secs as u64),
        series,
        failures,
    }
}

/// Follows one watch, recording its events, until the stream ends or the task is dropped.
async fn follow(
    addr: &str,
    path: &str,
    log: &Mutex<Received>,
    opened: &AtomicU64,
) -> Result<(), String> {
    let mut s = AsyncLines::open(addr, path).await?;
    opened.fetch_add(1, Ordering::Relaxed);
    while let Some((line, at)) = s.next_line().await? {
        let (rv, kind, id) = parse_event(&line)?;
        log.lock().unwrap().events.push((rv, kind, id, at));
    }
    Err("the stream ended before the soak did".into())
}

/// The store's revision now: a list's resourceVersion.
fn current_rv(b: &dyn Backend) -> Result<u64, String> {
    let page = backend::fetch(b.endpoint(), "/apis/kubevirt.io/v1/virtualmachines?limit=1")?;
    let v: Value = serde_json::from_slice(&page).map_err(|e| format!("list: {e}"))?;
    Ok(num(&v["metadata"]["resourceVersion"]))
}

/// One paginated list (namespace `n`, or every namespace for `NAMESPACES`); answers its pages.
fn list(ep: &crate::http::Endpoint, conn: &mut Conn, n: usize) -> Result<u64, String> {
    let base = if n < NAMESPACES {
        format!("/apis/kubevirt.io/v1/namespaces/{}/virtualmachines", ns(n))
    } else {
        "/apis/kubevirt.io/v1/virtualmachines".to_owned()
    };
    let (mut token, mut pages, mut items, mut rv) = (String::new(), 0, 0, None);
    loop {
        let mut path = format!("{base}?limit={PAGE}");
        if !token.is_empty() {
            path.push_str(&format!("&continue={}", query_value(&token)));
        }
        let page: Value = serde_json::from_slice(conn.call(&ep.request("GET", &path, None, b""))?)
            .map_err(|e| format!("list page: {e}"))?;
        pages += 1;
        items += page["items"].as_array().map_or(0, Vec::len);
        // Every page of one list is read at the revision of its first.
        let page_rv = num(&page["metadata"]["resourceVersion"]);
        if *rv.get_or_insert(page_rv) != page_rv {
            return Err(format!("{base}: a page at revision {page_rv}, the first at {rv:?}"));
        }
        token = page["metadata"]["continue"].as_str().unwrap_or("").to_owned();
        if token.is_empty() {
            break;
        }
    }
    if items > WRITERS * SLOTS {
        return Err(format!("{base}: {items} items, more than the writers ever keep"));
    }
    Ok(pages)
}

/// A small deterministic generator (xorshift), seeded per writer.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Writer `w`: every `WRITER_INTERVAL`, a create in an empty slot, else a merge patch that
/// moves the object to a random group (a third of the time a delete), until `until`.
async fn writer(
    ep: &crate::http::Endpoint,
    w: usize,
    template: &Value,
    t0: Instant,
    until: Instant,
) -> Result<Vec<Write>, String> {
    let namespace = ns(w % NAMESPACES);
    let collection = format!("/apis/kubevirt.io/v1/namespaces/{namespace}/virtualmachines");
    let mut conn = AsyncConn::open(ep).await?;
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (w as u64 + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    let mut slots: [Option<u8>; SLOTS] = [None; SLOTS];
    let mut log = Vec::new();
    // Spread the writers' ticks over the interval.
    let mut next = t0 + WRITER_INTERVAL * w as u32 / WRITERS as u32;
    while next < until {
        tokio::time::sleep_until(next.into()).await;
        next += WRITER_INTERVAL;
        let slot = rng.below(SLOTS as u64) as usize;
        let name = obj_name(w, slot);
        let before = slots[slot];
        let (req, after) = match before {
            None => {
                let g = rng.below(GROUPS.into()) as u8;
                let mut obj = template.clone();
                obj["metadata"]["name"] = json!(name);
                obj["metadata"]["labels"]["soak/group"] = json!(format!("g{g}"));
                let body = obj.to_string();
                (ep.request("POST", &collection, None, body.as_bytes()), Some(g))
            }
            Some(_) if rng.below(3) == 0 => {
                (ep.request("DELETE", &format!("{collection}/{name}"), None, b""), None)
            }
            Some(_) => {
                let g = rng.below(GROUPS.into()) as u8;
                let patch = json!({"metadata": {"labels": {"soak/group": format!("g{g}")},
                    "annotations": {"soak/tick": format!("{}", log.len())}}})
                .to_string();
                let path = format!("{collection}/{name}");
                let ct = Some("application/merge-patch+json");
                (ep.request("PATCH", &path, ct, patch.as_bytes()), Some(g))
            }
        };
        let sent = Instant::now();
        let answer = conn.call(&req).await?;
        let took = sent.elapsed();
        let obj: Value =
            serde_json::from_slice(answer).map_err(|e| format!("{name}: answer: {e}"))?;
        // A delete answers a Status (kube's, for custom resources): its revision comes from
        // the unfiltered watch (`resolve_deletes`).
        let rv = num(&obj["metadata"]["resourceVersion"]);
        if after.is_none() {
            if obj["status"] != "Success" {
                return Err(format!("{name}: delete answered {obj}"));
            }
        } else if rv == 0 {
            return Err(format!("{name}: an answer without resourceVersion"));
        }
        slots[slot] = after;
        log.push(Write { rv, writer: w as u8, slot: slot as u8, before, after, sent, took });
    }
    Ok(log)
}

/// The soak's section of BENCHMARKS.md; `plot` is the SVG's file name beside it.
pub fn markdown(r: &SoakResult, provenance: &str, plot: &str) -> String {
    let verdict = |ok: bool| if ok { "PASS" } else { "FAIL" };
    let mut out = format!(
        "## Soak, {} minute(s)\n\n\
         Written by `cargo run --release -p virt-bench -- soak --minutes {}` (bench/src/soak.rs); \
         virt-apiserver only. {provenance}\n\n\
         At once, for the whole run: {WRITERS} writers, each on its own keep-alive connection, one \
         write every {} ms (about {:.0}/s in all) over {NAMESPACES} namespaces: a create in an \
         empty slot of its {SLOTS}, else a merge patch that moves the object to a random one of \
         {GROUPS} label groups (`soak/group`), or (a third of the time) a delete, so names recur; \
         {WATCHERS} watchers from the revision before the first write, in ten classes: \
         cluster-wide with a label selector (`=` and, with a namespace field selector, `!=`), \
         cluster-wide with a `metadata.namespace` field selector, one namespace plain, with a \
         label selector, or with a `metadata.name` field selector; {LISTERS} listers reading one \
         namespace or all in pages of {PAGE}, each page checked to be at its list's revision. \
         Every watcher's stream is compared with the writers' log (each acknowledged write with \
         its resourceVersion, the object's group before and after): every event of its \
         selection, exactly once, in order, of the type kube's selector transitions give \
         (ADDED on entering, DELETED on leaving). Write latency: from sending to the answer; \
         watch lag: from sending the write to a watcher reading its event. RSS (VmRSS) sampled \
         every second; growth compares the median of the {}-second window after the warm-up \
         (the first {} s) with that of the last window.\n\n\
         | figure | value | check |\n|---|---:|---|\n",
        r.minutes,
        r.minutes,
        WRITER_INTERVAL.as_millis(),
        WRITERS as f64 / WRITER_INTERVAL.as_secs_f64(),
        (r.series.len() / 10).max(5),
        r.warmup.as_secs(),
    );
    let rows = [
        (
            "writes acknowledged".to_owned(),
            format!("{} ({:.0}/s)", r.writes, r.writes as f64 / (r.minutes * 60.0)),
            "",
        ),
        (
            "write latency p50 / p99".into(),
            format!("{:.2} / {:.2} ms", ms(r.write_p50), ms(r.write_p99)),
            "",
        ),
        (
            "watch events delivered".into(),
            format!("{} ({:.0}/s)", r.events, r.events as f64 / (r.minutes * 60.0)),
            "",
        ),
        (
            "watch lag p50 / p99".into(),
            format!("{:.2} / {:.2} ms", ms(r.lag_p50), ms(r.lag_p99)),
            "",
        ),
        (
            "watchers whose stream equals their selection of the log".into(),
            format!("{} of {STREAMS}", r.watchers_exact),
            verdict(r.watchers_exact == STREAMS),
        ),
        ("paginated lists (pages)".into(), format!("{} ({})", r.lists, r.pages), ""),
        ("errors".into(), r.errors.to_string(), verdict(r.errors == 0)),
        ("429 answers".into(), r.throttled.to_string(), verdict(r.throttled == 0)),
        (
            "RSS after the warm-up → at the end (peak)".into(),
            format!("{:.0} → {:.0} MiB ({:.0})", r.rss_after_warmup, r.rss_end, r.rss_peak),
            "",
        ),
        (
            "RSS growth after the warm-up (< 10%)".into(),
            format!("{:+.1}%", r.growth * 100.0),
            verdict(r.growth < 0.10),
        ),
    ];
    for (label, value, check) in rows {
        out.push_str(&format!("| {label} | {value} | {check} |\n"));
    }
    if r.failures.is_empty() {
        out.push_str("\nThe soak passed.\n");
    } else {
        out.push_str("\nThe soak FAILED:\n");
        for f in &r.failures {
            out.push_str(&format!("- {f}\n"));
        }
    }
    out.push_str(&format!("\n![memory, write p99 and watch lag p99 per second]({plot})\n"));
    out
}
