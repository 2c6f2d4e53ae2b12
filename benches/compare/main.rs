//! Benchmark of virt-apiserver against etcd, side by side, over HTTP with 2 KB VirtualMachine
//! objects (issue 7, point 4): creates with 1 and 32 clients, gets with 32, paged lists of 10 000
//! and 100 000 objects, watch delivery latency with 1 and 100 watchers, start-up time and RSS
//! with 100 000 stored objects, and the server's writes per transaction.
//!
//! `cargo bench --bench compare` (full: 3 runs, medians, writes BENCHMARKS.md at the project
//! root) or `cargo bench --bench compare -- --quick` (small counts, 1 run, under a minute; the
//! report goes to target/BENCHMARKS-quick.md). `--note TEXT` adds a line to the report.
//! Both servers are started here, on loopback ephemeral ports with temporary data, and killed at
//! the end. Any 429 from our server (its in-flight limits, which a loopback benchmark with 32
//! clients and 100 watchers must not trip) or any failed operation fails the run.

mod backend;
mod etcd;
mod object;
mod ours;
mod report;
mod stream;
mod workload;

use std::time::{Duration, Instant};

use backend::Backend;
use object::Body;
use report::{ms, Goal, Measure, Report, Run, Unit};

const PAGE: usize = 500;

/// The sizes of one mode.
struct Plan {
    quick: bool,
    runs: usize,
    create_1: usize,
    create_32: usize,
    gets: usize,
    list_small: usize,
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
    list_large: 2_000,
    watch_writes: 30,
    deadline: Duration::from_secs(120),
};

/// "100 000", as the report writes counts.
fn count(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    out
}

fn measures(p: &Plan) -> Vec<Measure> {
    let m = |key, label: &str, unit| Measure { key, label: label.to_owned(), unit };
    let (small, large) = (count(p.list_small), count(p.list_large));
    vec![
        m("create_1", "create, 1 client", Unit::PerSec),
        m("create_1_p99", "create, 1 client, p99 latency", Unit::Ms),
        m("create_32", "create, 32 clients", Unit::PerSec),
        m("create_32_p99", "create, 32 clients, p99 latency", Unit::Ms),
        m("wpt_1", "writes per transaction, 1 client", Unit::Times),
        m("wpt_32", "writes per transaction, 32 clients", Unit::Times),
        m("get_32", "get, 32 clients", Unit::PerSec),
        m("get_32_p99", "get, 32 clients, p99 latency", Unit::Ms),
        m("list_small", &format!("paged list of {small} (items/s, pages of {PAGE})"), Unit::PerSec),
        m("list_large", &format!("paged list of {large} (items/s, pages of {PAGE})"), Unit::PerSec),
        m("watch_1_p50", "watch delivery, 1 watcher, p50", Unit::Ms),
        m("watch_1_p99", "watch delivery, 1 watcher, p99", Unit::Ms),
        m("watch_100_p50", "watch delivery, 100 watchers, p50", Unit::Ms),
        m("watch_100_p99", "watch delivery, 100 watchers, p99", Unit::Ms),
        m("startup", &format!("start-up to serving with {large} objects"), Unit::Ms),
        m("rss_start", &format!("RSS with {large} objects, right after start-up"), Unit::MiB),
        m("rss", &format!("RSS with {large} objects (after a full list)"), Unit::MiB),
        m("rss_anon", "  of which anonymous (heap, not file-backed)", Unit::MiB),
        m("peak", &format!("peak RSS (VmHWM) with {large} objects"), Unit::MiB),
        m("json", &format!("stored JSON of the {large} objects"), Unit::MiB),
        m("rss_ratio", "RSS / stored JSON", Unit::Times),
    ]
}

fn goals(p: &Plan) -> Vec<(String, Goal)> {
    let (small, large) = (count(p.list_small), count(p.list_large));
    vec![
        ("create, 32 clients ≥ 3× etcd".into(), Goal::RatioAtLeast("create_32", 3.0)),
        ("create, 1 client ≥ 2× etcd".into(), Goal::RatioAtLeast("create_1", 2.0)),
        ("get, 32 clients ≥ 10× etcd".into(), Goal::RatioAtLeast("get_32", 10.0)),
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
        let t = self.step(b, &format!("create {n}, {clients} client(s)"), {
            workload::create(b, &self.body, set, n, clients)
        });
        let key = |k1, k32| if clients == 1 { k1 } else { k32 };
        fig[side].insert(key("create_1", "create_32"), t.rate);
        fig[side].insert(key("create_1_p99", "create_32_p99"), ms(t.p99));
        if let (Some((c0, w0)), Some((c1, w1))) = (before, b.write_counters()) {
            if c1 > c0 {
                fig[side].insert(key("wpt_1", "wpt_32"), (w1 - w0) as f64 / (c1 - c0) as f64);
            }
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    // `cargo bench` passes `--bench`; `cargo test --all-targets` runs this binary without it,
    // and a test run should not spend minutes benchmarking.
    if !args.iter().any(|a| a == "--bench") {
        println!("compare: a benchmark; run it with `cargo bench --bench compare [-- --quick]`");
        return;
    }
    let plan = if args.iter().any(|a| a == "--quick") { QUICK } else { FULL };
    let note = args.iter().position(|a| a == "--note").and_then(|i| args.get(i + 1)).cloned();

    let etcd_bin = etcd::binary().unwrap_or_else(|e| panic!("{e}"));
    let provenance = Provenance {
        commit: report::commit(),
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
            let rate = bench.step(&*b, &format!("list {}", count(p.list_large)), {
                workload::list(&*b, "large", p.list_large, PAGE)
            });
            run[side].insert("list_large", rate);
            let mem = bench.step(&*b, "memory after a list", backend::memory(b.pid()));
            run[side].insert("rss", mib(mem.rss));
            run[side].insert("rss_anon", mib(mem.anon));
            run[side].insert("peak", mib(mem.peak));
            run[side].insert("rss_ratio", mib(mem.rss) / run[side]["json"]);
        }
    }

    for b in [&ours as &dyn Backend, &etcd] {
        bench.step(b, &format!("populate {}", count(p.list_small)), {
            workload::create(b, &bench.body, "small", p.list_small, 32)
        });
    }
    for (i, run) in runs.iter_mut().enumerate() {
        for (side, b) in [&ours as &dyn Backend, &etcd].into_iter().enumerate() {
            bench.create(b, &format!("c1r{i}"), p.create_1, 1, run, side);
            bench.create(b, &format!("c32r{i}"), p.create_32, 32, run, side);
            let t = bench.step(b, &format!("get {}, 32 clients", p.gets), {
                workload::get(b, "small", p.list_small, p.gets, 32)
            });
            run[side].insert("get_32", t.rate);
            run[side].insert("get_32_p99", ms(t.p99));
            let rate = bench.step(b, &format!("list {}", count(p.list_small)), {
                workload::list(b, "small", p.list_small, PAGE)
            });
            run[side].insert("list_small", rate);
            for watchers in [1, 100] {
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

    let report = Report { measures: measures(p), goals: goals(p), runs };
    let header = header(p, &provenance, throttled, took, note.as_deref());
    let text = report.markdown(&header);
    let path = if p.quick {
        let target = std::env::var("CARGO_TARGET_DIR")
            .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/target").to_owned());
        std::path::Path::new(&target).join("BENCHMARKS-quick.md")
    } else {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("BENCHMARKS.md")
    };
    println!("\n{text}");
    std::fs::write(&path, &text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    println!("report written to {}", path.display());
    if throttled > 0 {
        eprintln!(
            "error: virt-apiserver answered 429 {throttled} time(s): the in-flight limits tripped"
        );
        std::process::exit(1);
    }
}

/// What was measured where, taken before the run (the tree may change while it runs).
struct Provenance {
    commit: String,
    date: String,
    machine: String,
    etcd: String,
}

fn header(p: &Plan, v: &Provenance, throttled: u64, took: Duration, note: Option<&str>) -> String {
    let mode =
        if p.quick { "`--quick` (small counts, 1 run: a smoke test, not figures)" } else { "full" };
    let mut h = format!(
        "# Benchmarks: virt-apiserver and etcd side by side\n\n\
         Written by `cargo bench --bench compare` (benches/compare/); do not edit by hand.\n\n\
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
    h.push_str(&format!(
        "\nBoth servers run on this machine on loopback, durable as shipped (virt-apiserver: SQLite \
         WAL, synchronous=FULL, default flags; etcd: defaults), with the client threads on the \
         same cores. Objects are {} B KubeVirt VirtualMachines (etcd stores the same JSON as its \
         value). Creates: {} with 1 client and {} with 32 per run; gets: {} by 32 clients over \
         {} objects; lists read in pages of {PAGE} at one revision (continue tokens / etcd range \
         with revision); watch latency: {} sequential updates of one object (virt-apiserver: a \
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
        p.watch_writes,
    ));
    h
}
