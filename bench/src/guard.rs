//! `virt-bench guard`: CI's check on the request path's CPU. Server CPU per create (1 and 32
//! clients) and per get (32 clients), each relative to etcd's in the same round, must not be
//! more than `LIMIT` above the figures the guard's section of BENCHMARKS.md records, so a change
//! that costs CPU is seen the day it lands. `--record` measures and writes those figures (a
//! deliberate update, when a feature is worth its price).
//!
//! Noise: etcd's own CPU per operation moves by ±15% between two of its processes on this
//! machine, and CPU is read in ticks of 10 ms. Each round measures both servers back to back, so
//! drift in the machine's speed cancels in the round's ratio; rounds come in sessions on fresh
//! servers, so no one etcd process decides; the guard takes the median of the rounds' ratios, so
//! one slow round, on either side, moves nothing.

use std::time::Instant;

use crate::backend::{self, Backend};
use crate::object::Body;
use crate::report;
use crate::{etcd, ours, workload};

/// How far above its recorded figure a ratio may be.
pub const LIMIT: f64 = 1.25;

/// The modes, as their rows in BENCHMARKS.md name them.
pub const MODES: [&str; 3] = ["create, 1 client", "create, 32 clients", "get, 32 clients"];

/// Sessions of a `--record` run.
const RECORD_SESSIONS: usize = 9;

/// The section's key in BENCHMARKS.md.
const SECTION: &str = "cpu-guard";

/// The sizes of one round: enough operations that each server's CPU is at least ~20 ticks.
struct Plan {
    /// Each on fresh servers.
    sessions: usize,
    /// Per session.
    rounds: usize,
    create_1: usize,
    create_32: usize,
    /// The set gets read (each server's get costs ~10× less than etcd's, so ours does more).
    existing: usize,
    gets_ours: usize,
    gets_etcd: usize,
}

const PLAN: Plan = Plan {
    sessions: 3,
    rounds: 3,
    create_1: 800,
    create_32: 3_000,
    existing: 1_000,
    gets_ours: 30_000,
    gets_etcd: 3_000,
};

/// Server CPU per operation in µs, for each mode, of one server in one round.
fn round(b: &dyn Backend, body: &Body, i: usize, p: &Plan, gets: usize) -> [f64; 3] {
    let per_op = |n: usize, run: &dyn Fn() -> Result<workload::Throughput, String>| {
        let before = ticks(b);
        run().unwrap_or_else(|e| panic!("{}: round {i}: {e}", b.label()));
        (ticks(b) - before) as f64 * 1e6 / backend::ticks_per_sec() as f64 / n as f64
    };
    let (s1, s32) = (format!("g1r{i}"), format!("g32r{i}"));
    // Sets are made before the clock starts (a namespace for ours).
    b.prepare(&s1).and_then(|()| b.prepare(&s32)).unwrap_or_else(|e| panic!("{e}"));
    [
        per_op(p.create_1, &|| workload::create(b, body, &s1, p.create_1, 1)),
        per_op(p.create_32, &|| workload::create(b, body, &s32, p.create_32, 32)),
        per_op(gets, &|| workload::get(b, "gget", p.existing, gets, 32)),
    ]
}

fn ticks(b: &dyn Backend) -> u64 {
    backend::cpu_ticks(Some(b.pid())).unwrap_or_else(|e| panic!("{}: {e}", b.label()))
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The figures the section records, by mode; None where a mode has no row.
pub fn recorded(doc: &str) -> [Option<f64>; 3] {
    let section = doc
        .find(&format!("<!-- section:{SECTION} -->"))
        .map(|a| &doc[a..])
        .map(|s| s.find(&format!("<!-- /section:{SECTION} -->")).map_or(s, |b| &s[..b]))
        .unwrap_or("");
    MODES.map(|mode| {
        let row = section.lines().find(|l| l.starts_with(&format!("| {mode} |")))?;
        row.split('|').nth(2)?.trim().trim_end_matches('×').parse().ok()
    })
}

/// Runs the rounds; answers the exit status: 1 when a ratio's median is above its limit (or,
/// with `record`, never: the figures are written instead).
pub fn run(record: bool) -> i32 {
    let p = &PLAN;
    let started = Instant::now();
    let md = crate::root().join("BENCHMARKS.md");
    let doc = std::fs::read_to_string(&md).unwrap_or_default();
    let before = recorded(&doc);
    if !record && before.iter().any(Option::is_none) {
        eprintln!(
            "error: {} records no CPU guard figures (section {SECTION}); \
             `virt-bench guard --record` writes them",
            md.display()
        );
        return 1;
    }
    let body = Body::new();
    let mut ratios: [Vec<f64>; 3] = Default::default();
    let mut rows = Vec::new();
    // A recorded figure is what every later check is held to: three times the sessions.
    let sessions = if record { RECORD_SESSIONS } else { p.sessions };
    for session in 0..sessions {
        // Fresh servers per session: etcd's CPU per operation differs more between two of its
        // processes than between two rounds of one.
        let ours = ours::Ours::start().unwrap_or_else(|e| panic!("{e}"));
        let etcd = etcd::Etcd::start().unwrap_or_else(|e| panic!("{e}"));
        for b in [&ours as &dyn Backend, &etcd] {
            workload::create(b, &body, "gget", p.existing, 32).unwrap_or_else(|e| panic!("{e}"));
        }
        for i in (0..p.rounds).map(|r| session * p.rounds + r) {
            let o = round(&ours, &body, i, p, p.gets_ours);
            let e = round(&etcd, &body, i, p, p.gets_etcd);
            let r: Vec<f64> = (0..3).map(|m| o[m] / e[m]).collect();
            println!(
                "  {:>5.1} s  round {i}: ours / etcd  {}",
                started.elapsed().as_secs_f64(),
                (0..3).map(|m| format!("{}: {:.3}", MODES[m], r[m])).collect::<Vec<_>>().join(", ")
            );
            for m in 0..3 {
                ratios[m].push(r[m]);
            }
            rows.push((o, e));
        }
    }
    let rounds = rows.len();
    let medians: Vec<f64> = ratios.iter().map(|r| median(r.clone())).collect();
    let cpu = |side: usize, m: usize| {
        median(rows.iter().map(|(o, e)| if side == 0 { o[m] } else { e[m] }).collect())
    };
    let mut failed = false;
    let mut table = String::from(
        "| mode | server CPU per operation, ours / etcd (median of the rounds' ratios) \
         | ours | etcd | recorded | the guard fails above |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for m in 0..3 {
        let limit = before[m].map(|r| r * LIMIT);
        let over = !record && limit.is_some_and(|l| medians[m] > l);
        failed |= over;
        table.push_str(&format!(
            "| {} | {:.3}× | {:.1} µs | {:.1} µs | {} | {} |{}\n",
            MODES[m],
            medians[m],
            cpu(0, m),
            cpu(1, m),
            before[m].map_or("none".into(), |r| format!("{r:.3}×")),
            limit.map_or("none".into(), |l| format!("{l:.3}×")),
            if over { " **over**" } else { "" }
        ));
    }
    println!("\n{table}");
    let took = started.elapsed().as_secs();
    if record {
        let text = section(&medians, p, rounds, took);
        std::fs::write(&md, report::splice(&doc, SECTION, &text))
            .unwrap_or_else(|e| panic!("write {}: {e}", md.display()));
        println!("figures recorded in {}", md.display());
        return 0;
    }
    std::fs::write(crate::target_dir().join("BENCHMARKS-guard.md"), &table).ok();
    if failed {
        eprintln!(
            "error: server CPU per operation, relative to etcd's, is more than {:.0}% above the \
             figure BENCHMARKS.md records (section {SECTION}). Find the pass that costs it, or \
             update the figure deliberately with `virt-bench guard --record` when the feature \
             is worth its price",
            (LIMIT - 1.0) * 100.0
        );
        return 1;
    }
    println!("the CPU guard holds ({took} s)");
    0
}

/// The section `--record` writes: the figures the guard reads back, and how they were taken.
fn section(medians: &[f64], p: &Plan, rounds: usize, took: u64) -> String {
    let mut s = format!(
        "## CI guard: server CPU per operation relative to etcd's\n\n\
         Written by `cargo run --release -p virt-bench -- guard --record` (bench/src/guard.rs); \
         `.ci/run` runs `virt-bench guard`, which fails when a median below is more than {:.0}% \
         above the figure recorded here. Rounds come in sessions of {} on fresh servers. Commit {}, {}, {}. {rounds} rounds (a check runs {}), \
         each measuring our server then etcd: {} creates with 1 client, {} with 32, then gets \
         with 32 clients of {} objects ({} for ours, {} for etcd); a figure is the median of the \
         rounds' ratios. Recording took {took} s.\n\n| mode | recorded |\n|---|---:|\n",
        (LIMIT - 1.0) * 100.0,
        p.rounds,
        report::commit(),
        report::date(),
        report::machine(),
        p.sessions * p.rounds,
        p.create_1,
        p.create_32,
        p.existing,
        p.gets_ours,
        p.gets_etcd,
    );
    for (mode, r) in MODES.iter().zip(medians) {
        s.push_str(&format!("| {mode} | {r:.3}× |\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::{median, recorded};

    #[test]
    fn recorded_figures_are_read_from_their_section_only() {
        let doc = "| create, 1 client | 9.000× |\n<!-- section:cpu-guard -->\n## CI guard\n\
                   | mode | recorded |\n|---|---:|\n| create, 1 client | 0.420× |\n\
                   | get, 32 clients | 0.090× |\n<!-- /section:cpu-guard -->\n";
        assert_eq!(recorded(doc), [Some(0.42), None, Some(0.09)]);
        assert_eq!(recorded("no section"), [None, None, None]);
    }

    #[test]
    fn medians_take_the_middle() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 3.0, 2.0]), 2.5);
    }
}
