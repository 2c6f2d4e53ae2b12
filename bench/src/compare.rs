//! `virt-bench compare`: virt-apiserver and etcd side by side over HTTP with 2 KB
//! VirtualMachine objects: creates with 1 and 32 clients, gets with 32, paged lists of 10 000
//! and 100 000 objects, watch delivery latency with 1 and 100 watchers, start-up time and RSS
//! with 100 000 stored objects, and the server's writes per transaction (the crate's doc says
//! how it measures).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::backend::{self, Backend};
use crate::object::{self, Body};
use crate::report::{self, ms, Goal, Measure, Report, Run, Unit};
use crate::{count, etcd, ours, workload, PAGE};

/// The sizes of one mode.
struct Plan {
    quick: bool,
    runs: usize,
    create_1: usize,
    create_32: usize,
    gets: usize,
    list_small: usize,
    /// Full lists of the small set read back to back per run: one lasts only ~60 ms, too short
    /// for a steady rate or for CPU read in 10 ms ticks.
    list_small_times: usize,
    list_large: usize,
    watch_writes: usize,
    /// The whole benchmark must end within this.
    deadline: Duration,
}

const FULL: Plan = Plan {
    quick: false,
    runs: 3,
    create_1: 2_000,
    create_32: 10_000,
    gets: 20_000,
    list_small: 10_000,
    list_small_times: 5,
    list_large: 100_000,
    watch_writes: 300,
    deadline: Duration::from_secs(3600),
};

const QUICK: Plan = Plan {
    quick: true,
    runs: 1,
    create_1: 100,
    create_32: 1_000,
    gets: 2_000,
    list_small: 1_000,
    list_small_times: 1,
    list_large: 2_000,
    watch_writes: 30,
    deadline: Duration::from_secs(120),
};

/// The measure groups `--only` chooses from, in the order they run.
pub const GROUPS: [&str; 5] = ["startup", "create", "get", "list", "watch"];

/// The groups to run: all without `--only`, else those of its comma-separated list (in
/// `GROUPS` order).
pub fn parse_only(arg: Option<&str>) -> Result<Vec<&'static str>, String> {
    let Some(arg) = arg else { return Ok(GROUPS.to_vec()) };
    let mut chosen = Vec::new();
    for name in arg.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let g = GROUPS.iter().find(|g| **g == name).ok_or_else(|| {
            format!("--only: unknown group {name:?}; the groups are {}", GROUPS.join(","))
        })?;
        chosen.push(*g);
    }
    if chosen.is_empty() {
        return Err(format!("--only needs a list of groups among {}", GROUPS.join(",")));
    }
    Ok(GROUPS.into_iter().filter(|g| chosen.contains(g)).collect())
}

/// Every measure, with the group that takes it.
fn measures(p: &Plan) -> Vec<(&'static str, Measure)> {
    let m = |group, key, label: &str, unit| (group, Measure { key, label: label.to_owned(), unit });
    let (small, large) = (count(p.list_small), count(p.list_large));
    let (c, g, l, w, s) = ("create", "get", "list", "watch", "startup");
    vec![
        m(c, "create_1", "create, 1 client", Unit::PerSec),
        m(c, "cpu_srv_create_1", "server CPU per create, 1 client", Unit::Us),
        m(c, "cpu_cli_create_1", "client CPU per create, 1 client", Unit::Us),
        m(c, "create_1_p99", "create, 1 client, p99 latency", Unit::Ms),
        m(c, "create_32", "create, 32 clients", Unit::PerSec),
        m(c, "cpu_srv_create_32", "server CPU per create, 32 clients", Unit::Us),
        m(c, "cpu_cli_create_32", "client CPU per create, 32 clients", Unit::Us),
        m(c, "create_32_p99", "create, 32 clients, p99 latency", Unit::Ms),
        m(c, "wpt_1", "writes per transaction, 1 client", Unit::Times),
        m(c, "wpt_32", "writes per transaction, 32 clients", Unit::Times),
        m(g, "get_32", "get, 32 clients", Unit::PerSec),
        m(g, "cpu_srv_get_32", "server CPU per get, 32 clients", Unit::Us),
        m(g, "cpu_cli_get_32", "client CPU per get, 32 clients", Unit::Us),
        m(g, "get_32_p99", "get, 32 clients, p99 latency", Unit::Ms),
        m(
            l,
            "list_small",
            &format!("paged list of {small} (items/s, pages of {PAGE})"),
            Unit::PerSec,
        ),
        m(l, "cpu_srv_list_small", &format!("server CPU per item, list of {small}"), Unit::Us),
        m(l, "cpu_cli_list_small", &format!("client CPU per item, list of {small}"), Unit::Us),
        m(
            s,
            "list_large",
            &format!("paged list of {large} (items/s, pages of {PAGE})"),
            Unit::PerSec,
        ),
        m(s, "cpu_srv_list_large", &format!("server CPU per item, list of {large}"), Unit::Us),
        m(s, "cpu_cli_list_large", &format!("client CPU per item, list of {large}"), Unit::Us),
        m(w, "watch_1_p50", "watch delivery, 1 watcher, p50", Unit::Ms),
        m(w, "watch_1_p99", "watch delivery, 1 watcher, p99", Unit::Ms),
        m(w, "watch_100_p50", "watch delivery, 100 watchers, p50", Unit::Ms),
        m(w, "watch_100_p99", "watch delivery, 100 watchers, p99", Unit::Ms),
        m(s, "startup", &format!("start-up to serving with {large} objects"), Unit::Ms),
        m(s, "rss_start", &format!("RSS with {large} objects, right after start-up"), Unit::MiB),
        m(s, "rss", &format!("RSS with {large} objects (after a full list)"), Unit::MiB),
        m(s, "rss_anon", "  of which anonymous (heap, not file-backed)", Unit::MiB),
        m(s, "peak", &format!("peak RSS (VmHWM) with {large} objects"), Unit::MiB),
        m(s, "json", &format!("stored JSON of the {large} objects"), Unit::MiB),
        m(s, "rss_ratio", "RSS / stored JSON", Unit::Times),
    ]
}

/// The goals BENCHMARKS.md records: what a benchmark measures best on two shared cores, the server's CPU per
/// operation relative to etcd's (the throughput ratios are printed beside them), create p99 at
/// 1 client (a checkpoint off the write path), and the list, watch, start-up and memory goals.
fn goals(p: &Plan) -> Vec<(String, Goal)> {
    let (small, large) = (count(p.list_small), count(p.list_large));
    vec![
        (
            "server CPU per create, 32 clients ≤ 0.3× etcd's".into(),
            Goal::RatioAtMost("cpu_srv_create_32", 0.3),
        ),
        (
            "server CPU per create, 1 client ≤ 0.3× etcd's".into(),
            Goal::RatioAtMost("cpu_srv_create_1", 0.3),
        ),
        ("server CPU per get ≤ 0.05× etcd's".into(), Goal::RatioAtMost("cpu_srv_get_32", 0.05)),
        (
            format!("server CPU per listed item, list of {small} ≤ 0.05× etcd's"),
            Goal::RatioAtMost("cpu_srv_list_small", 0.05),
        ),
        (
            format!("server CPU per listed item, list of {large} ≤ 0.05× etcd's"),
            Goal::RatioAtMost("cpu_srv_list_large", 0.05),
        ),
        ("create p99, 1 client ≤ etcd's".into(), Goal::RatioAtMost("create_1_p99", 1.0)),
        (format!("paged list of {small} ≥ 4× etcd items/s"), Goal::RatioAtLeast("list_small", 4.0)),
        (format!("paged list of {large} ≥ 4× etcd items/s"), Goal::RatioAtLeast("list_large", 4.0)),
        ("watch p99, 100 watchers ≤ 1/5 of etcd".into(), Goal::RatioAtMost("watch_100_p99", 0.2)),
        (format!("start-up with {large} objects < 1 s"), Goal::Below("startup", 1000.0)),
        (format!("RSS with {large} objects < 2.5× their JSON"), Goal::Below("rss_ratio", 2.5)),
    ]
}

struct Bench {
    plan: Plan,
    started: Instant,
    body: Body,
}

/// CPU time so far, in clock ticks, of a server process and of this one (the client).
struct Cpu {
    server: u64,
    client: u64,
}

impl Cpu {
    /// Now, for the process behind `b` at this moment (a restart changes it).
    fn now(b: &dyn Backend) -> Cpu {
        let read = |pid| backend::cpu_ticks(pid).unwrap_or_else(|e| panic!("{}: {e}", b.label()));
        Cpu { server: read(Some(b.pid())), client: read(None) }
    }

    /// Records the server's and the client's CPU per operation since `self` under `keys`, in µs.
    fn record(
        self,
        b: &dyn Backend,
        ops: usize,
        fig: &mut BTreeMap<&'static str, f64>,
        keys: [&'static str; 2],
    ) {
        let now = Cpu::now(b);
        let us =
            |ticks: u64| ticks as f64 * 1e6 / backend::ticks_per_sec() as f64 / ops.max(1) as f64;
        fig.insert(keys[0], us(now.server.saturating_sub(self.server)));
        fig.insert(keys[1], us(now.client.saturating_sub(self.client)));
    }
}

impl Bench {
    fn check_deadline(&self) {
        assert!(
            self.started.elapsed() < self.plan.deadline,
            "benchmark deadline of {:?} exceeded",
            self.plan.deadline
        );
    }

    fn step<T>(&self, b: &dyn Backend, what: &str, r: Result<T, String>) -> T {
        self.check_deadline();
        let v = r.unwrap_or_else(|e| panic!("{}: {what}: {e}", b.label()));
        println!("  {:>6.1} s  {:<14} {what}", self.started.elapsed().as_secs_f64(), b.label());
        v
    }

    /// Creates with writes-per-transaction from the server's counters around them.
    fn create(
        &self,
        b: &dyn Backend,
        set: &str,
        n: usize,
        clients: usize,
        fig: &mut Run,
        side: usize,
    ) {
        let before = b.write_counters();
        let cpu = Cpu::now(b);
        let t = self.step(b, &format!("create {n}, {clients} client(s)"), {
            workload::create(b, &self.body, set, n, clients)
        });
        let key = |k1, k32| if clients == 1 { k1 } else { k32 };
        let cpu_keys = if clients == 1 {
            ["cpu_srv_create_1", "cpu_cli_create_1"]
        } else {
            ["cpu_srv_create_32", "cpu_cli_create_32"]
        };
        cpu.record(b, n, &mut fig[side], cpu_keys);
        fig[side].insert(key("create_1", "create_32"), t.rate);
        fig[side].insert(key("create_1_p99", "create_32_p99"), ms(t.p99));
        if let (Some((c0, w0)), Some((c1, w1))) = (before, b.write_counters()) {
            if c1 > c0 {
                fig[side].insert(key("wpt_1", "wpt_32"), (w1 - w0) as f64 / (c1 - c0) as f64);
            }
        }
    }
}

/// Runs the comparison and writes its report; answers the exit status (1 on a 429 from our
/// server; a failed operation panics). `only`: the measure groups to run, in `GROUPS` order.
pub fn run(quick: bool, note: Option<&str>, only: &[&'static str]) -> i32 {
    let plan = if quick { QUICK } else { FULL };
    let partial = only.len() < GROUPS.len();
    let runs_group = |g: &str| only.contains(&g);

    let etcd_bin = etcd::binary().unwrap_or_else(|e| panic!("{e}"));
    let provenance = Provenance {
        commit: crate::commit(),
        date: report::date(),
        machine: report::machine(),
        etcd: etcd::version(&etcd_bin),
    };
    let bench = Bench { plan, started: Instant::now(), body: Body::new() };
    let p = &bench.plan;
    let mut ours = ours::Ours::start().unwrap_or_else(|e| panic!("{e}"));
    let mut etcd = etcd::Etcd::start().unwrap_or_else(|e| panic!("{e}"));
    println!("virt-apiserver and etcd {} started", provenance.etcd);

    let mut runs: Vec<Run> = (0..p.runs).map(|_| Run::default()).collect();
    let mib = |v: u64| v as f64 / 1024.0 / 1024.0;
    // Start-up, the large list and memory first, while exactly `list_large` objects are stored.
    if runs_group("startup") {
        for (side, b) in [&ours as &dyn Backend, &etcd].into_iter().enumerate() {
            let t = bench.step(b, &format!("populate {}", count(p.list_large)), {
                workload::create(b, &bench.body, "large", p.list_large, 32)
            });
            for run in &mut runs {
                run[side].insert("json", t.stored as f64 / 1024.0 / 1024.0);
            }
        }
        for run in &mut runs {
            for (side, b) in [&mut ours as &mut dyn Backend, &mut etcd].into_iter().enumerate() {
                let restarted = b.restart();
                let startup = bench.step(&*b, "restart on the populated data", restarted);
                run[side].insert("startup", ms(startup));
                let mem = bench.step(&*b, "memory after start-up", backend::memory(b.pid()));
                run[side].insert("rss_start", mib(mem.rss));
                let cpu = Cpu::now(&*b);
                let rate = bench.step(&*b, &format!("list {}", count(p.list_large)), {
                    workload::list(&*b, "large", p.list_large, PAGE)
                });
                cpu.record(
                    &*b,
                    p.list_large,
                    &mut run[side],
                    ["cpu_srv_list_large", "cpu_cli_list_large"],
                );
                run[side].insert("list_large", rate);
                let mem = bench.step(&*b, "memory after a list", backend::memory(b.pid()));
                run[side].insert("rss", mib(mem.rss));
                run[side].insert("rss_anon", mib(mem.anon));
                run[side].insert("peak", mib(mem.peak));
                run[side].insert("rss_ratio", mib(mem.rss) / run[side]["json"]);
            }
        }
    }

    if runs_group("get") || runs_group("list") {
        for b in [&ours as &dyn Backend, &etcd] {
            bench.step(b, &format!("populate {}", count(p.list_small)), {
                workload::create(b, &bench.body, "small", p.list_small, 32)
            });
        }
    }
    for (i, run) in runs.iter_mut().enumerate() {
        for (side, b) in [&ours as &dyn Backend, &etcd].into_iter().enumerate() {
            if runs_group("create") {
                bench.create(b, &format!("c1r{i}"), p.create_1, 1, run, side);
                bench.create(b, &format!("c32r{i}"), p.create_32, 32, run, side);
            }
            if runs_group("get") {
                let cpu = Cpu::now(b);
                let t = bench.step(b, &format!("get {}, 32 clients", p.gets), {
                    workload::get(b, "small", p.list_small, p.gets, 32)
                });
                cpu.record(b, p.gets, &mut run[side], ["cpu_srv_get_32", "cpu_cli_get_32"]);
                run[side].insert("get_32", t.rate);
                run[side].insert("get_32_p99", ms(t.p99));
            }
            if runs_group("list") {
                let cpu = Cpu::now(b);
                let what = format!("list {}, {} times", count(p.list_small), p.list_small_times);
                let rate = bench.step(b, &what, {
                    workload::list_times(b, "small", p.list_small, PAGE, p.list_small_times)
                });
                let keys = ["cpu_srv_list_small", "cpu_cli_list_small"];
                cpu.record(b, p.list_small * p.list_small_times, &mut run[side], keys);
                run[side].insert("list_small", rate);
            }
            for watchers in [1, 100].into_iter().filter(|_| runs_group("watch")) {
                let l = bench.step(b, &format!("watch, {watchers} watcher(s)"), {
                    workload::watch(
                        b,
                        &bench.body,
                        &format!("w{watchers}r{i}"),
                        watchers,
                        p.watch_writes,
                    )
                });
                let (k50, k99) = if watchers == 1 {
                    ("watch_1_p50", "watch_1_p99")
                } else {
                    ("watch_100_p50", "watch_100_p99")
                };
                run[side].insert(k50, ms(l.p50));
                run[side].insert(k99, ms(l.p99));
            }
        }
    }
    let throttled = ours.throttled();
    let took = bench.started.elapsed();
    drop((ours, etcd));

    let measures: Vec<Measure> =
        measures(p).into_iter().filter(|(g, _)| runs_group(g)).map(|(_, m)| m).collect();
    // Only the goals whose measures were taken.
    let goals = goals(p)
        .into_iter()
        .filter(|(_, goal)| {
            let (Goal::RatioAtLeast(k, _) | Goal::RatioAtMost(k, _) | Goal::Below(k, _)) = goal;
            measures.iter().any(|m| m.key == *k)
        })
        .collect();
    let report = Report { measures, goals, runs };
    let header = header(p, &provenance, throttled, took, note, partial.then_some(only));
    let text = report.markdown(&header);
    let path = if p.quick {
        crate::target_dir().join("BENCHMARKS-quick.md")
    } else if partial {
        // BENCHMARKS.md holds only complete full runs.
        crate::target_dir().join("BENCHMARKS-only.md")
    } else {
        crate::root().join("BENCHMARKS.md")
    };
    println!("\n{text}");
    // The soak's sections, written by its own runs, stay.
    let text = report::keep_sections(&std::fs::read_to_string(&path).unwrap_or_default(), &text);
    std::fs::write(&path, &text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    println!("report written to {}", path.display());
    if throttled > 0 {
        eprintln!(
            "error: virt-apiserver answered 429 {throttled} time(s): the in-flight limits tripped"
        );
        return 1;
    }
    0
}

/// What was measured where, taken before the run (the tree may change while it runs).
struct Provenance {
    commit: String,
    date: String,
    machine: String,
    etcd: String,
}

fn header(
    p: &Plan,
    v: &Provenance,
    throttled: u64,
    took: Duration,
    note: Option<&str>,
    only: Option<&[&str]>,
) -> String {
    let mode =
        if p.quick { "`--quick` (small counts, 1 run: a smoke test, not figures)" } else { "full" };
    let mut h = format!(
        "# Benchmarks: virt-apiserver and etcd side by side\n\n\
         Written by `cargo run --release -p virt-bench -- compare` (bench/); do not edit by \
         hand.\n\n\
         - commit: {}\n- date: {}\n- machine: {}\n- etcd: {} (Debian etcd-server), v3 JSON gateway\n\
         - mode: {mode}; {} run(s), medians across runs; the whole benchmark took {:.0} s\n\
         - 429 answers from virt-apiserver: {throttled}\n",
        v.commit,
        v.date,
        v.machine,
        v.etcd,
        p.runs,
        took.as_secs_f64(),
    );
    if let Some(note) = note {
        h.push_str(&format!("- note: {note}\n"));
    }
    if let Some(only) = only {
        h.push_str(&format!(
            "- only: {} (`--only`; the other measures and their goals were skipped)\n",
            only.join(", ")
        ));
    }
    h.push_str(&format!(
        "\nBoth servers run on this machine on loopback, durable as shipped (virt-apiserver: SQLite \
         WAL, synchronous=FULL, default flags; etcd: defaults), with the benchmark's client on \
         the same cores. Objects are {} B KubeVirt VirtualMachines (etcd stores the same JSON as its \
         value). Creates: {} with 1 client and {} with 32 per run; gets: {} by 32 clients over \
         {} objects; lists read in pages of {PAGE} at one revision (continue tokens / etcd range \
         with revision), the list of {} read {} times back to back per run (its rate: all the \
         items over all the time); watch latency: {} sequential updates of one object (virt-apiserver: a \
         merge patch of an annotation; etcd: a put of the whole value), from sending the write \
         to each watcher reading the event. Start-up: SIGTERM, start again on the same data, \
         until /readyz (etcd: a range) answers. RSS: VmRSS (and RssAnon) after that restart and one full list; peak: VmHWM. \
         Writes per transaction: virt_apiserver_store_writes_total / _commits_total deltas \
         (n/a where the server lacks them).\n",
        object::SIZE,
        count(p.create_1),
        count(p.create_32),
        count(p.gets),
        count(p.list_small),
        count(p.list_small),
        p.list_small_times,
        p.watch_writes,
    ));
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    h.push_str(&format!(
        "\nThe client is the benchmark's own HTTP/1.1 client, the same for both servers: N clients \
         are N keep-alive connections, each with one request in flight (no pipelining), all \
         driven by one client thread (a tokio current-thread runtime); a list reads its pages on \
         one connection. Each request is sent in one write; every answer's status is checked; \
         list pages are counted (items and continue token; etcd: kvs and `more`) by a scan of \
         their JSON structure, not decoded into objects. A load generator must cost far less CPU \
         than the server it measures, and shares its cores here.\n\
         \nCPU per operation (per item for lists): user + system CPU time of the whole server \
         process (all threads, /proc/PID/stat) and of the benchmark's own process (the client, \
         /proc/self/stat) across the measurement, divided by the operations; read in \
         clock ticks of 1/{} s, so short measurements (quick mode) are coarse. Servers and \
         the client share this machine's {cores} cores, so no rate can exceed {cores} cores \
         divided by (server CPU per operation + client CPU per operation) operations per second: \
         where the client's CPU per operation is comparable to the server's, the client caps the \
         rate and a ratio of rates (ours / etcd) says less about the servers than their CPU \
         rows. Much of the client's own CPU is the kernel's loopback TCP work for its sends and \
         receives.\n",
        backend::ticks_per_sec(),
    ));
    h
}

/// Checks of `--only`.
#[cfg(test)]
mod tests {
    use super::{parse_only, GROUPS};

    #[test]
    fn only_absent_is_everything() {
        assert_eq!(parse_only(None).unwrap(), GROUPS.to_vec());
    }

    #[test]
    fn only_picks_groups_in_run_order() {
        assert_eq!(parse_only(Some("get")).unwrap(), ["get"]);
        assert_eq!(parse_only(Some("watch,get, list")).unwrap(), ["get", "list", "watch"]);
        assert_eq!(parse_only(Some("create,create,")).unwrap(), ["create"]);
        assert_eq!(parse_only(Some(&GROUPS.join(","))).unwrap(), GROUPS.to_vec());
    }

    #[test]
    fn only_rejects_unknown_and_empty() {
        assert!(parse_only(Some("gets")).unwrap_err().contains("\"gets\""));
        assert!(parse_only(Some("get,memory")).is_err());
        assert!(parse_only(Some("")).is_err());
        assert!(parse_only(Some(" , ")).is_err());
    }
}
