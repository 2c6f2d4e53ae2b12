//! The fixtures scenario (`virt-bench fixtures [--count N]`): our server started with
//! `--fixtures` naming N VirtualMachines (the benchmark's 2 KB body) in one namespace, and reset
//! between "tests" (`POST /reset`), as a harness uses it. Measures the start to `/readyz` with
//! the fixtures and without them, and the reset's answer time after a test's worth of changes
//! (10 fixtures changed, 10 deleted, 10 objects created) and after none. Fails on a request
//! error or when a reset leaves anything but the N fixtures.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::backend::{self, Backend};
use crate::http::Conn;
use crate::object::Body;
use crate::ours::Ours;
use crate::report::{ms, percentile};

const NS: &str = "fixtures";
/// Per reset: fixtures changed, fixtures deleted and objects created by the "test" before it.
const CHANGES: usize = 10;

pub struct FixturesPlan {
    pub count: usize,
    /// Starts measured, with fixtures and without.
    pub starts: usize,
    /// Resets measured, each after a test's worth of changes, and as many after none.
    pub resets: usize,
}

impl FixturesPlan {
    pub fn new(quick: bool, count: Option<usize>) -> FixturesPlan {
        if quick {
            FixturesPlan { count: count.unwrap_or(100), starts: 1, resets: 5 }
        } else {
            FixturesPlan { count: count.unwrap_or(500), starts: 5, resets: 50 }
        }
    }
}

pub struct FixturesResult {
    pub count: usize,
    pub bytes: usize,
    pub start_bare: Vec<Duration>,
    pub start_fixtures: Vec<Duration>,
    pub reset_changed: Vec<Duration>,
    pub reset_unchanged: Vec<Duration>,
    pub failures: Vec<String>,
}

/// The fixtures file: a namespace and `count` VMs in it, as one multi-document YAML (JSON
/// documents are YAML).
fn write_fixtures(dir: &std::path::Path, count: usize, body: &Body) -> (std::path::PathBuf, usize) {
    let mut text = format!(
        "{{\"apiVersion\": \"v1\", \"kind\": \"Namespace\", \"metadata\": {{\"name\": \"{NS}\"}}}}\n"
    );
    for i in 0..count {
        let mut vm: Value = serde_json::from_str(&body.json(&Body::name(NS, i))).unwrap();
        vm["metadata"]["namespace"] = Value::from(NS);
        text.push_str("---\n");
        text.push_str(&vm.to_string());
        text.push('\n');
    }
    let path = dir.join("fixtures.yaml");
    std::fs::write(&path, &text).expect("write the fixtures");
    (path, text.len())
}

fn vms() -> String {
    format!("/apis/kubevirt.io/v1/namespaces/{NS}/virtualmachines")
}

/// A test's worth of changes: fixtures changed and deleted, new objects created.
fn change(conn: &mut Conn, ours: &Ours, body: &Body, round: usize) -> Result<(), String> {
    let ep = ours.endpoint();
    for i in 0..CHANGES {
        let name = Body::name(NS, i);
        let patch = format!("{{\"metadata\":{{\"labels\":{{\"round\":\"{round}\"}}}}}}");
        let path = format!("{}/{name}", vms());
        conn.call(&ep.request(
            "PATCH",
            &path,
            Some("application/merge-patch+json"),
            patch.as_bytes(),
        ))?;
        let gone = format!("{}/{}", vms(), Body::name(NS, CHANGES + i));
        conn.call(&ep.request("DELETE", &gone, None, b""))?;
        let new = body.json(&Body::name("new", i));
        conn.call(&ep.request("POST", &vms(), None, new.as_bytes()))?;
    }
    Ok(())
}

/// One reset, timed from the request to the answer.
fn reset(conn: &mut Conn, ours: &Ours) -> Result<Duration, String> {
    let t0 = Instant::now();
    conn.call(&ours.endpoint().request("POST", "/reset", None, b""))?;
    Ok(t0.elapsed())
}

/// How many VMs the namespace holds, and whether they are the fixtures unchanged.
fn check(conn: &mut Conn, ours: &Ours, count: usize) -> Result<(), String> {
    let answer = conn.call(&ours.endpoint().request("GET", &vms(), None, b""))?;
    let list: Value = serde_json::from_slice(answer).map_err(|e| format!("list: {e}"))?;
    let items = list["items"].as_array().map_or(&[][..], Vec::as_slice);
    let changed = items.iter().filter(|o| o["metadata"]["labels"].get("round").is_some()).count();
    if items.len() != count || changed > 0 {
        return Err(format!(
            "after a reset: {} VMs ({changed} changed), want the {count} fixtures",
            items.len()
        ));
    }
    Ok(())
}

pub fn run(plan: &FixturesPlan, body: &Body) -> FixturesResult {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (file, bytes) = write_fixtures(dir.path(), plan.count, body);
    let file = file.to_str().expect("a UTF-8 path").to_owned();
    let mut r = FixturesResult {
        count: plan.count,
        bytes,
        start_bare: Vec::new(),
        start_fixtures: Vec::new(),
        reset_changed: Vec::new(),
        reset_unchanged: Vec::new(),
        failures: Vec::new(),
    };
    for _ in 0..plan.starts {
        let t0 = Instant::now();
        drop(Ours::start().unwrap_or_else(|e| panic!("{e}")));
        r.start_bare.push(t0.elapsed());
        let t0 = Instant::now();
        let ours = Ours::start_with(&["--fixtures", &file]).unwrap_or_else(|e| panic!("{e}"));
        r.start_fixtures.push(t0.elapsed());
        if let Err(e) =
            Conn::open(ours.endpoint()).and_then(|mut c| check(&mut c, &ours, plan.count))
        {
            r.failures.push(format!("at start: {e}"));
        }
    }
    let ours = Ours::start_with(&["--fixtures", &file]).unwrap_or_else(|e| panic!("{e}"));
    let mut conn = Conn::open(ours.endpoint()).unwrap_or_else(|e| panic!("{e}"));
    for round in 0..plan.resets {
        let step = change(&mut conn, &ours, body, round)
            .and_then(|()| reset(&mut conn, &ours))
            .map(|took| r.reset_changed.push(took))
            .and_then(|()| check(&mut conn, &ours, plan.count))
            .and_then(|()| reset(&mut conn, &ours))
            .map(|took| r.reset_unchanged.push(took));
        if let Err(e) = step {
            r.failures.push(format!("round {round}: {e}"));
            break;
        }
    }
    // The server is still ready after every reset.
    if backend::fetch(ours.endpoint(), "/readyz").is_err() {
        r.failures.push("not ready after the resets".into());
    }
    r
}

fn median(v: &[Duration]) -> Duration {
    let mut v = v.to_vec();
    v.sort();
    percentile(&v, 0.5)
}

fn max(v: &[Duration]) -> Duration {
    v.iter().copied().max().unwrap_or_default()
}

pub fn markdown(r: &FixturesResult, provenance: &str, note: Option<&str>) -> String {
    let kb = r.bytes as f64 / 1024.0;
    let mut out = format!(
        "### Fixtures and reset: {} VMs\n\n{provenance}\n\n\
         `virt-bench fixtures`: the server started with `--fixtures` naming one YAML file \
         ({kb:.0} KB: a namespace and {} VirtualMachines of 2 KB), then reset with `POST /reset` \
         after a test's worth of changes ({CHANGES} fixtures changed, {CHANGES} deleted, \
         {CHANGES} VMs created) and after none. Times are from the client: a start from spawning \
         the process to `/readyz` answering, a reset from the request to its answer (history \
         compacted, watches ended).\n\n",
        r.count, r.count
    );
    if let Some(note) = note {
        out.push_str(&format!("{note}\n\n"));
    }
    out.push_str("| measure | runs | median | max |\n|---|---|---|---|\n");
    for (what, v) in [
        ("start, no fixtures".to_owned(), &r.start_bare),
        (format!("start, {} fixtures", r.count), &r.start_fixtures),
        (format!("reset after {} changes", 3 * CHANGES), &r.reset_changed),
        ("reset, nothing changed".to_owned(), &r.reset_unchanged),
    ] {
        out.push_str(&format!(
            "| {what} | {} | {:.1} ms | {:.1} ms |\n",
            v.len(),
            ms(median(v)),
            ms(max(v))
        ));
    }
    if !r.failures.is_empty() {
        out.push_str(&format!("\nFailures: {}\n", r.failures.join("; ")));
    }
    out
}
