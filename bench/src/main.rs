//! The benchmark of virt-apiserver: against etcd, side by side, and scenarios of our server
//! alone. A program, `virt-bench MODE [--quick] [--server PATH]`, run from the workspace as
//! `cargo run --release -p virt-bench -- MODE`; `--help` lists each mode's options.
//!
//! The server measured is a release binary it does not build: the workspace's
//! target/release/virt-apiserver (`cargo build --release --bin virt-apiserver` first), or the one
//! `--server PATH` names, such as an older build to compare with the same benchmark. Full runs
//! write their section of BENCHMARKS.md at the workspace's root; `--quick` runs (small counts, 1
//! run) write target/BENCHMARKS-*.md.
//!
//! `compare` (compare.rs): over HTTP with 2 KB VirtualMachine objects, creates with 1 and 32
//! clients, gets with 32, paged lists of 10 000 and 100 000 objects, watch delivery latency with
//! 1 and 100 watchers, start-up time and RSS with 100 000 stored objects, and the server's writes
//! per transaction. Full: 3 runs, medians, BENCHMARKS.md; `--quick`: under a minute,
//! target/BENCHMARKS-quick.md. `--note TEXT` adds a line to the report. `--only LIST`
//! (comma-separated groups: `startup` = populate 100 000, restart, the large list and memory;
//! `create`; `get`; `list` = the small list; `watch`) runs only those groups, for quick
//! investigations, e.g. `compare --quick --only get,list`; groups that read the small set (get,
//! list) still populate it, and the goals table lists only goals whose measures were taken. A
//! full-mode run with `--only` writes target/BENCHMARKS-only.md, never BENCHMARKS.md.
//!
//! `soak [--minutes N]` (soak.rs), `overload` (overload.rs: idle connections and watchers held
//! while gets and creates run) and `vms [--count N]` (vms.rs: N VMs created at once under
//! `--simulate` reach Running; time, transitions, server CPU per transition) are scenarios of our
//! server alone, each writing its own section of BENCHMARKS.md (with `--quick`: smaller, reported
//! to target/). `replicas` (replicas.rs) starts one private etcd and runs creates with 1 and 32
//! clients, gets with 32, a consistent list (no resourceVersion, first page of 500, right after
//! a write through another replica) and an unpaged list of 10 000 on our server on SQLite, on
//! etcd with 1 replica and with 3 (clients round-robin), and on bare etcd, with our processes'
//! CPU, etcd's and their sum per operation, plus write-on-A to event-on-B latency; its own
//! section of BENCHMARKS.md (with `--quick`: 2 000 objects, target/). On two shared cores it
//! measures the overhead of the etcd backend and of replication, not scale-out.
//!
//! `fixtures [--count N]` (fixtures.rs): our server started with N fixture VMs (500 by default)
//! and reset between "tests": the start with and without them and the reset's answer time; its
//! section of BENCHMARKS.md (with `--quick`: 100 VMs, target/).
//!
//! Each throughput (creates, gets, lists) also records CPU time per operation (per item for
//! lists) of the server process, all threads, and of this process (the client), from
//! utime + stime in /proc/PID/stat and /proc/self/stat around the measurement.
//! The client is the bench's own lean HTTP/1.1 client (`http.rs`), the same for both servers:
//! "N clients" are N keep-alive connections with one request in flight each, all driven by one
//! thread (`workload::spread`); lists and a watch's writes use one blocking connection. A load
//! generator must cost far less CPU than the server it measures, as wrk and h2load do: ureq 2
//! with a thread per client cost as much per operation as our server. List pages are counted,
//! not decoded, with the server's own JSON scanner (`scan.rs`).
//! Both servers are started here, on loopback ephemeral ports with temporary data, and killed at
//! the end. Any 429 from our server (its in-flight limits, which a loopback benchmark with 32
//! clients and 100 watchers must not trip) or any failed operation fails the run.

mod backend;
mod compare;
mod etcd;
mod fixtures;
mod guard;
mod guests;
mod http;
mod object;
mod ours;
mod overload;
mod plot;
mod replicas;
mod report;
mod scan;
mod soak;
mod stream;
mod vms;
mod workload;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use clap::{Parser, Subcommand};

use object::Body;

/// Items per list page, in every mode.
const PAGE: usize = 500;

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

/// The benchmark of virt-apiserver, against etcd and alone. Full runs write their section of
/// BENCHMARKS.md; `--quick` runs write target/BENCHMARKS-*.md.
#[derive(Parser, Debug)]
#[command(name = "virt-bench")]
struct Cli {
    /// The virt-apiserver binary to measure [default: the workspace's
    /// target/release/virt-apiserver, built by `cargo build --release --bin virt-apiserver`]
    #[arg(long, global = true, value_name = "PATH")]
    server: Option<PathBuf>,
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Subcommand, Debug)]
enum Mode {
    /// virt-apiserver and etcd side by side: creates, gets, lists, watches, start-up and memory
    Compare {
        /// Small counts, 1 run, under a minute (a smoke test, not figures); reports to
        /// target/BENCHMARKS-quick.md
        #[arg(long)]
        quick: bool,
        /// A line added to the report, such as what else shared the machine
        #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
        note: Option<String>,
        /// Only these measure groups, comma-separated, among startup, create, get, list and
        /// watch (a full run then reports to target/BENCHMARKS-only.md)
        #[arg(long, value_name = "LIST", value_parser = groups)]
        only: Option<Groups>,
    },
    /// CI's check: server CPU per create and per get, relative to etcd's, against the figures
    /// BENCHMARKS.md records (fails more than 25% above them)
    Guard {
        /// Measure and write the figures into BENCHMARKS.md instead of checking them
        #[arg(long)]
        record: bool,
    },
    /// Our server for minutes under writers, 1 000 watchers and listers, checked event by event
    Soak {
        /// 1 minute by default, reported to target/BENCHMARKS-soak-quick.md
        #[arg(long)]
        quick: bool,
        /// How long [default: 10, or 1 with --quick]
        #[arg(long, value_name = "N", value_parser = positive::<f64>)]
        minutes: Option<f64>,
    },
    /// Our server holding 10 000 idle connections and 5 000 watchers while gets and creates run
    Overload {
        /// A tenth of the size, reported to target/BENCHMARKS-overload-quick.md
        #[arg(long)]
        quick: bool,
    },
    /// N VMs created at once under --simulate, followed to Running
    Vms {
        /// 100 VMs by default, reported to target/BENCHMARKS-vms-quick.md
        #[arg(long)]
        quick: bool,
        /// How many VMs [default: 1000, or 100 with --quick]
        #[arg(long, value_name = "N", value_parser = positive::<usize>)]
        count: Option<usize>,
        /// A line added to the report
        #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
        note: Option<String>,
    },
    /// Our server started with N fixture VMs and reset between tests (`POST /reset`)
    Fixtures {
        /// 100 VMs, 1 start and 5 resets, reported to target/BENCHMARKS-fixtures-quick.md
        #[arg(long)]
        quick: bool,
        /// How many fixture VMs [default: 500, or 100 with --quick]
        #[arg(long, value_name = "N", value_parser = positive::<usize>)]
        count: Option<usize>,
        /// A line added to the report
        #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
        note: Option<String>,
    },
    /// N simulated guests Running, then a logged-in serial console and SSH session held open to
    /// each: memory
    Guests {
        /// 10 VMs, reported to target/BENCHMARKS-guests-quick.md
        #[arg(long)]
        quick: bool,
        /// How many VMs [default: 100, or 10 with --quick]
        #[arg(long, value_name = "N", value_parser = positive::<usize>)]
        count: Option<usize>,
        /// A line added to the report
        #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
        note: Option<String>,
    },
    /// Our server on SQLite, on a private etcd with 1 and 3 replicas, and bare etcd
    Replicas {
        /// 2 000 objects, 1 run, reported to target/BENCHMARKS-replicas-quick.md
        #[arg(long)]
        quick: bool,
        /// A line added to the report
        #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
        note: Option<String>,
    },
}

/// The measure groups `--only` chose, in the order they run.
#[derive(Clone, Debug, PartialEq)]
struct Groups(Vec<&'static str>);

fn groups(arg: &str) -> Result<Groups, String> {
    compare::parse_only(Some(arg)).map(Groups)
}

/// A number above zero.
fn positive<T: std::str::FromStr + PartialOrd + Default>(arg: &str) -> Result<T, String> {
    match arg.parse::<T>() {
        Ok(n) if n > T::default() => Ok(n),
        _ => Err("needs a number above zero".into()),
    }
}

fn main() {
    let cli = Cli::parse();
    let server = server_binary(cli.server.clone()).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(2);
    });
    if cli.server.is_some() {
        NAMED_SERVER.set(server.clone()).expect("set once");
    }
    println!("virt-bench: measuring {}", server.display());
    ours::use_binary(server);
    let status = match cli.mode {
        Mode::Compare { quick, note, only } => {
            let only = only.map_or_else(|| compare::GROUPS.to_vec(), |g| g.0);
            compare::run(quick, note.as_deref(), &only)
        }
        Mode::Guard { record } => guard::run(record),
        Mode::Soak { quick, minutes } => {
            run_soak(minutes.unwrap_or(if quick { 1.0 } else { 10.0 }), quick)
        }
        Mode::Overload { quick } => run_overload(quick),
        Mode::Vms { quick, count, note } => {
            run_vms(count.unwrap_or(if quick { 100 } else { 1000 }), quick, note.as_deref())
        }
        Mode::Replicas { quick, note } => run_replicas(quick, note.as_deref()),
        Mode::Fixtures { quick, count, note } => run_fixtures(quick, count, note.as_deref()),
        Mode::Guests { quick, count, note } => run_guests(quick, count, note.as_deref()),
    };
    std::process::exit(status);
}

/// The workspace's root, where BENCHMARKS.md is.
fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the benchmark is a workspace member")
}

/// The workspace's target directory (`CARGO_TARGET_DIR` when set), where quick and partial runs
/// report and the release server is built.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), PathBuf::from)
}

/// The server binary measured when `--server` names none.
fn default_server() -> PathBuf {
    target_dir().join("release").join("virt-apiserver")
}

/// The server binary to measure, checked before anything starts; `Err` says what to do.
fn server_binary(given: Option<PathBuf>) -> Result<PathBuf, String> {
    let (path, explicit) = match given {
        Some(path) => (path, true),
        None => (default_server(), false),
    };
    if path.is_file() {
        // Absolute, so a report names the binary wherever the benchmark was started.
        return Ok(std::fs::canonicalize(&path).unwrap_or(path));
    }
    Err(if explicit {
        format!("--server {}: no such file", path.display())
    } else {
        format!(
            "no server binary at {}: build it first with `cargo build --release --bin \
             virt-apiserver`, or name one with --server PATH",
            path.display()
        )
    })
}

/// The binary `--server` named, when it named one: reports then say which binary they measured,
/// since the commit they record is the benchmark's.
static NAMED_SERVER: OnceLock<PathBuf> = OnceLock::new();

/// The commit measured (the tree's; with `--server`, also the binary's path).
fn commit() -> String {
    match NAMED_SERVER.get() {
        None => report::commit(),
        Some(path) => format!("{} (server binary {})", report::commit(), path.display()),
    }
}

/// Where and when a scenario of our server alone ran.
fn scenario_provenance(fds: u64) -> String {
    format!(
        "Commit {}, {}, {}; open-files limit {fds}.",
        commit(),
        report::date(),
        report::machine()
    )
}

/// `soak`: our server only; answers the exit status (1 when any check failed). A quick soak
/// reports to target/; a timed one to its section of BENCHMARKS.md, its plot beside it.
fn run_soak(minutes: f64, quick: bool) -> i32 {
    let fds = backend::raise_fd_limit(65_536);
    let provenance = scenario_provenance(fds);
    let ours = ours::Ours::start().unwrap_or_else(|e| panic!("{e}"));
    println!("soak: {minutes} minute(s) against virt-apiserver (open-files limit {fds})");
    let plan = soak::SoakPlan { duration: Duration::from_secs_f64(minutes * 60.0), quick };
    let result = soak::run(&ours, &Body::new(), &plan);
    drop(ours);
    let key = format!("soak-{minutes}min");
    let root = root();
    let (md, svg) = if quick {
        (
            target_dir().join("BENCHMARKS-soak-quick.md"),
            target_dir().join(format!("BENCHMARKS-{key}.svg")),
        )
    } else {
        (root.join("BENCHMARKS.md"), root.join(format!("BENCHMARKS-{key}.svg")))
    };
    let title = format!("virt-apiserver soak, {minutes} minute(s)");
    if let Err(e) = plot::soak(&svg, &title, &result.series) {
        eprintln!("error: {e}");
        return 1;
    }
    let text = soak::markdown(&result, &provenance, &svg.file_name().unwrap().to_string_lossy());
    println!("\n{text}");
    let old = std::fs::read_to_string(&md).unwrap_or_default();
    std::fs::write(&md, report::splice(&old, &key, &text))
        .unwrap_or_else(|e| panic!("write {}: {e}", md.display()));
    println!("soak report written to {} (plot {})", md.display(), svg.display());
    if result.failures.is_empty() {
        0
    } else {
        for f in &result.failures {
            eprintln!("error: soak: {f}");
        }
        1
    }
}

/// `overload`: our server only; answers the exit status (1 when a check failed). A quick run
/// reports to target/; a full one to its section of BENCHMARKS.md.
fn run_overload(quick: bool) -> i32 {
    let plan = overload::OverloadPlan::new(quick);
    // The client and the server (which inherits the limit) each hold one end of every connection.
    let want = (plan.idle + plan.watchers) as u64 + 2_048;
    let fds = backend::raise_fd_limit(want.max(65_536));
    if fds < want {
        eprintln!("error: the open-files limit is {fds}; the overload scenario needs {want}");
        return 1;
    }
    let provenance = scenario_provenance(fds);
    let ours = ours::Ours::start().unwrap_or_else(|e| panic!("{e}"));
    println!(
        "overload: {} idle connections, {} watchers, {} writes against virt-apiserver",
        plan.idle, plan.watchers, plan.writes
    );
    let result = overload::run(&ours, &Body::new(), &plan);
    drop(ours);
    let text = overload::markdown(&result, &provenance, quick);
    println!("\n{text}");
    write_report("overload", "overload", quick, &text);
    if result.failures.is_empty() {
        0
    } else {
        for f in &result.failures {
            eprintln!("error: overload: {f}");
        }
        1
    }
}

/// `vms`: our server only, once per simulation speed; answers the exit status (1 when any
/// check failed). A quick run reports to target/; a full one to its section of BENCHMARKS.md.
fn run_vms(count: usize, quick: bool, note: Option<&str>) -> i32 {
    let provenance = format!("Commit {}, {}, {}.", commit(), report::date(), report::machine());
    // Generous: a run of 1 000 at the default delays takes well under a minute.
    let deadline = Duration::from_secs(60 + count as u64 / 2);
    let plan = vms::VmsPlan { count, deadline };
    let body = Body::new();
    let mut results = Vec::new();
    for speed in &vms::SPEEDS {
        println!("vms: {} VMs, {}", count, speed.label);
        let r = vms::run(&plan, speed, &body);
        println!(
            "  all Running after {:.2} s, {} transitions, server CPU {:.2} s",
            r.took.as_secs_f64(),
            r.vm_events + r.vmi_events,
            r.server_cpu.as_secs_f64()
        );
        results.push(r);
    }
    let text = vms::markdown(&results, &provenance, note);
    println!("\n{text}");
    let key = format!("vms-{count}");
    write_report("vms", &key, quick, &text);
    let failures: Vec<String> = results
        .iter()
        .flat_map(|r| r.failures.iter().map(move |f| format!("{}: {f}", r.speed)))
        .collect();
    for f in &failures {
        eprintln!("error: vms: {f}");
    }
    i32::from(!failures.is_empty())
}

/// Writes a mode's report into its section (`key`) of BENCHMARKS.md, or for a quick run of
/// target/BENCHMARKS-<mode>-quick.md.
fn write_report(mode: &str, key: &str, quick: bool, text: &str) {
    let md = if quick {
        target_dir().join(format!("BENCHMARKS-{mode}-quick.md"))
    } else {
        root().join("BENCHMARKS.md")
    };
    let old = std::fs::read_to_string(&md).unwrap_or_default();
    std::fs::write(&md, report::splice(&old, key, text))
        .unwrap_or_else(|e| panic!("write {}: {e}", md.display()));
    println!("{mode} report written to {}", md.display());
}

/// `guests`: our server only; answers the exit status (1 when a check failed). A quick run
/// reports to target/; a full one to its section of BENCHMARKS.md.
fn run_guests(quick: bool, count: Option<usize>, note: Option<&str>) -> i32 {
    let provenance = format!("Commit {}, {}, {}.", commit(), report::date(), report::machine());
    let count = count.unwrap_or(if quick { 10 } else { 100 });
    println!("guests: {count} VMs, a console and an SSH session to each");
    let result = guests::run(count);
    let text = guests::markdown(&result, &provenance, note);
    println!("\n{text}");
    write_report("guests", &format!("guests-{count}"), quick, &text);
    for f in &result.failures {
        eprintln!("error: guests: {f}");
    }
    i32::from(!result.failures.is_empty())
}

/// `fixtures`: our server only; answers the exit status (1 when a check failed). A quick run
/// reports to target/; a full one to its section of BENCHMARKS.md.
fn run_fixtures(quick: bool, count: Option<usize>, note: Option<&str>) -> i32 {
    let provenance = format!("Commit {}, {}, {}.", commit(), report::date(), report::machine());
    let plan = fixtures::FixturesPlan::new(quick, count);
    println!("fixtures: {} VMs, {} starts, {} resets", plan.count, plan.starts, plan.resets);
    let result = fixtures::run(&plan, &Body::new());
    let text = fixtures::markdown(&result, &provenance, note);
    println!("\n{text}");
    write_report("fixtures", "fixtures", quick, &text);
    for f in &result.failures {
        eprintln!("error: fixtures: {f}");
    }
    i32::from(!result.failures.is_empty())
}

/// `replicas`: answers the exit status (1 on a 429; a failed operation panics). A quick run
/// reports to target/; a full one to its section of BENCHMARKS.md.
fn run_replicas(quick: bool, note: Option<&str>) -> i32 {
    let etcd_version = etcd::version(&etcd::binary().unwrap_or_else(|e| panic!("{e}")));
    let provenance = format!(
        "Commit {}, {}, {}; etcd {etcd_version} (Debian etcd-server).",
        commit(),
        report::date(),
        report::machine()
    );
    let result = replicas::run(replicas::ReplicasPlan::new(quick));
    let text = replicas::markdown(&result, &provenance, note);
    println!("\n{text}");
    write_report("replicas", "replicas", quick, &text);
    if result.throttled > 0 {
        eprintln!("error: replicas: virt-apiserver answered 429 {} time(s)", result.throttled);
        return 1;
    }
    0
}
/// Checks of the command line.
#[cfg(test)]
mod tests {
    use super::{Cli, Groups, Mode};
    use clap::{CommandFactory, Parser};

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("virt-bench").chain(args.iter().copied()))
    }

    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn compare_takes_quick_note_and_only() {
        let cli = parse(&["compare", "--quick", "--note", "-busy-", "--only", "watch,get"]);
        let Mode::Compare { quick, note, only } = cli.unwrap().mode else { panic!() };
        assert!(quick);
        assert_eq!(note.as_deref(), Some("-busy-"));
        assert_eq!(only, Some(Groups(vec!["get", "watch"])));
        assert!(parse(&["compare", "--only", "gets"]).is_err());
        assert!(parse(&["compare", "--only", ""]).is_err());
        assert!(parse(&["compare", "--minutes", "1"]).is_err());
        assert!(parse(&["compare"]).unwrap().server.is_none());
    }

    #[test]
    fn scenarios_take_their_sizes() {
        let cli = parse(&["soak", "--minutes", "0.5", "--server", "/x/virt-apiserver"]).unwrap();
        assert!(matches!(cli.mode, Mode::Soak { quick: false, minutes: Some(0.5) }));
        assert_eq!(cli.server.unwrap(), std::path::Path::new("/x/virt-apiserver"));
        assert!(parse(&["soak", "--minutes", "0"]).is_err());
        assert!(parse(&["soak", "--minutes", "x"]).is_err());
        let cli = parse(&["--server", "s", "vms", "--quick", "--count", "7"]).unwrap();
        assert!(matches!(cli.mode, Mode::Vms { quick: true, count: Some(7), note: None }));
        assert!(parse(&["vms", "--count", "0"]).is_err());
        assert!(parse(&["vms", "--count", "1.5"]).is_err());
        let cli = parse(&["overload", "--quick"]).unwrap();
        assert!(matches!(cli.mode, Mode::Overload { quick: true }));
        let cli = parse(&["replicas", "--note", "n"]).unwrap();
        assert!(matches!(cli.mode, Mode::Replicas { quick: false, note: Some(_) }));
        let cli = parse(&["fixtures", "--quick", "--count", "20"]).unwrap();
        assert!(matches!(cli.mode, Mode::Fixtures { quick: true, count: Some(20), note: None }));
        assert!(parse(&["fixtures", "--count", "0"]).is_err());
        assert!(parse(&[]).is_err());
        assert!(parse(&["--quick"]).is_err());
    }

    #[test]
    fn the_server_binary_is_checked_first() {
        // The release build may or may not exist here; without it, the error says what to run.
        match super::server_binary(None) {
            Ok(path) => assert!(path.ends_with("release/virt-apiserver"), "{}", path.display()),
            Err(e) => assert!(e.contains("cargo build --release"), "{e}"),
        }
        let e = super::server_binary(Some("/nonexistent/virt-apiserver".into())).unwrap_err();
        assert!(e.contains("--server /nonexistent/virt-apiserver"), "{e}");
    }
}
