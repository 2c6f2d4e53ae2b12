//! The VM scenario (`virt-bench vms [--count N]`): against our server with `--simulate`, N
//! VirtualMachines with `runStrategy: Always` created at once by concurrent clients, followed by
//! two watches (the namespace's VMs and VMIs) until every VM's `status.printableStatus` and its
//! VMI's `status.phase` are `Running`. Run once with the default delays and once with
//! `--simulate-speed 0` (each stage as soon as the previous one is written), each on a fresh
//! server: time to all Running, per-VM time, the transitions (watch events) and store writes the
//! runtime made, and the server's CPU per transition. Fails on any request error, any 429 or a
//! VM not Running within the deadline.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::backend::{self, num, Backend};
use crate::object::Body;
use crate::ours::Ours;
use crate::report::{ms, percentile};
use crate::stream::AsyncLines;
use crate::workload;

/// The namespace the VMs are created in.
const NS: &str = "vms";
/// Connections the creates are spread over (each with one request in flight); below the
/// server's mutating in-flight limit (200), so none is refused.
const CLIENTS: usize = 100;

pub struct VmsPlan {
    pub count: usize,
    /// How long one speed's run may take from the first create to the last VM Running.
    pub deadline: Duration,
}

/// One simulation speed: its label in the report and the server's flags for it.
pub struct Speed {
    pub label: &'static str,
    pub flags: &'static [&'static str],
}

pub const SPEEDS: [Speed; 2] = [
    Speed { label: "default delays", flags: &[] },
    Speed { label: "`--simulate-speed 0`", flags: &["--simulate-speed", "0"] },
];

/// The figures of one run (one speed), and what failed.
pub struct VmsResult {
    pub speed: &'static str,
    pub count: usize,
    /// VMs seen Running (with their VMI).
    pub running: usize,
    /// From the first create sent to the last create answered.
    pub creates: Duration,
    /// From the first create sent to the last VM seen Running.
    pub took: Duration,
    /// Per VM, from its create sent to its VM and VMI both seen Running.
    pub p50: Duration,
    pub p99: Duration,
    pub vm_events: u64,
    pub vmi_events: u64,
    /// The store's writes over the run (the runtime's Events included), if the counter was read.
    pub writes: Option<u64>,
    /// User + system CPU of the server and of this process over the run.
    pub server_cpu: Duration,
    pub client_cpu: Duration,
    pub throttled: u64,
    pub failures: Vec<String>,
}

impl VmsResult {
    fn transitions(&self) -> u64 {
        self.vm_events + self.vmi_events
    }
}

/// What the watches saw, up to every VM Running or the deadline.
#[derive(Default)]
struct Followed {
    /// VM name → when its VM and its VMI had both been seen Running.
    reached: HashMap<String, Instant>,
    vm_events: u64,
    vmi_events: u64,
    /// Server CPU ticks (and this process's) when the last VM was seen Running.
    cpu_end: Option<(u64, u64)>,
    error: Option<String>,
}

/// One VM's progress as the watches saw it.
#[derive(Default)]
struct Seen {
    vm: Option<Instant>,
    vmi: Option<Instant>,
}

fn vm_name(i: usize) -> String {
    format!("vm-{i:05}")
}

/// The benchmark's 2 KB VM, set to run.
fn vm_body(body: &Body, name: &str) -> String {
    let json = body.json(name);
    let running = json.replace(r#""runStrategy":"Halted""#, r#""runStrategy":"Always""#);
    assert_ne!(json, running, "the benchmark's VM has a runStrategy to set");
    running
}

/// The collection's resourceVersion now: the watches start from it.
fn current_rv(b: &dyn Backend, plural: &str) -> Result<u64, String> {
    let page = backend::fetch(b.endpoint(), &format!("{}?limit=1", collection(plural)))?;
    let v: Value = serde_json::from_slice(&page).map_err(|e| format!("list: {e}"))?;
    Ok(num(&v["metadata"]["resourceVersion"]))
}

fn collection(plural: &str) -> String {
    format!("/apis/kubevirt.io/v1/namespaces/{NS}/{plural}")
}

/// Follows the VMs and VMIs of `NS` from `rv` until `count` VMs are Running with their VMI,
/// or `deadline`; reads the server's CPU (process `pid`) the moment the last one is.
async fn follow(addr: &str, rv: u64, count: usize, deadline: Instant, pid: u32) -> Followed {
    let mut out = Followed::default();
    let timeout = deadline.saturating_duration_since(Instant::now()).as_secs() + 60;
    let path = |plural| {
        format!("{}?watch=true&resourceVersion={rv}&timeoutSeconds={timeout}", collection(plural))
    };
    let (vm_path, vmi_path) = (path("virtualmachines"), path("virtualmachineinstances"));
    let opened = futures_util::future::try_join(
        AsyncLines::open(addr, &vm_path),
        AsyncLines::open(addr, &vmi_path),
    );
    let (mut vms, mut vmis) = match opened.await {
        Ok(w) => w,
        Err(e) => {
            out.error = Some(format!("watch: {e}"));
            return out;
        }
    };
    let mut seen: HashMap<String, Seen> = HashMap::new();
    let until = tokio::time::Instant::from_std(deadline);
    while out.reached.len() < count {
        let next = async {
            tokio::select! {
                l = vms.next_line() => (true, l),
                l = vmis.next_line() => (false, l),
            }
        };
        let (is_vm, line) = match tokio::time::timeout_at(until, next).await {
            Err(_) => return out,
            Ok((is_vm, Ok(Some(line)))) => (is_vm, line),
            Ok((_, Ok(None))) => {
                out.error = Some("a watch ended before every VM was Running".into());
                return out;
            }
            Ok((_, Err(e))) => {
                out.error = Some(format!("watch: {e}"));
                return out;
            }
        };
        let (bytes, at) = line;
        let ev: Value = match serde_json::from_slice(&bytes) {
            Ok(v) => v,
            Err(e) => {
                out.error = Some(format!("watch event: {e}"));
                return out;
            }
        };
        if ev["type"] == "ERROR" {
            out.error = Some(format!("watch: {}", ev["object"]));
            return out;
        }
        if ev["type"] == "BOOKMARK" {
            continue;
        }
        let name = ev["object"]["metadata"]["name"].as_str().unwrap_or_default();
        let s = seen.entry(name.to_owned()).or_default();
        if is_vm {
            out.vm_events += 1;
            if ev["object"]["status"]["printableStatus"] == "Running" {
                s.vm.get_or_insert(at);
            }
        } else {
            out.vmi_events += 1;
            if ev["object"]["status"]["phase"] == "Running" {
                s.vmi.get_or_insert(at);
            }
        }
        if let (Some(a), Some(b)) = (s.vm, s.vmi) {
            out.reached.entry(name.to_owned()).or_insert(a.max(b));
        }
    }
    let ticks = (backend::cpu_ticks(Some(pid)), backend::cpu_ticks(None));
    if let (Ok(server), Ok(client)) = ticks {
        out.cpu_end = Some((server, client));
    }
    out
}

fn writes(b: &dyn Backend) -> Option<u64> {
    b.write_counters().map(|(_, writes)| writes)
}

/// One run: a fresh server at `speed`, `plan.count` VMs.
pub fn run(plan: &VmsPlan, speed: &Speed, body: &Body) -> VmsResult {
    // Nodes enough for every launcher pod: each asks for its VM's 2Gi and KubeVirt's overhead
    // (bench/src/object.rs), so a simulated node (32 GiB) holds 13; 10 a node leaves room.
    let nodes = plan.count.div_ceil(10).max(2).to_string();
    let mut flags = vec!["--simulate", "--simulate-seed", "1", "--simulate-nodes", &nodes];
    flags.extend(speed.flags);
    let ours = Ours::start_with(&flags).unwrap_or_else(|e| panic!("{e}"));
    ours.prepare(NS).unwrap_or_else(|e| panic!("vms: namespace {NS}: {e}"));
    let rv = current_rv(&ours, "virtualmachines").unwrap_or_else(|e| panic!("vms: {e}"));
    let tick = |pid| backend::cpu_ticks(pid).unwrap_or_else(|e| panic!("vms: {e}"));
    let (server0, client0) = (tick(Some(ours.pid())), tick(None));
    let writes0 = writes(&ours);
    let t0 = Instant::now();
    let deadline = t0 + plan.deadline;

    let (addr, count, pid) = (ours.endpoint().addr().to_owned(), plan.count, ours.pid());
    let watcher = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(follow(&addr, rv, count, deadline, pid))
    });
    let sent: RefCell<Vec<Option<Instant>>> = RefCell::new(vec![None; plan.count]);
    let created = workload::spread(
        &ours,
        CLIENTS.min(plan.count),
        plan.count,
        |i| {
            sent.borrow_mut()[i] = Some(Instant::now());
            (ours.create(NS, &vm_name(i), &vm_body(body, &vm_name(i))), ())
        },
        |(), _| Ok(0),
    );
    let creates = t0.elapsed();
    let mut failures = Vec::new();
    if let Err(e) = &created {
        failures.push(format!("create: {e}"));
        // Nothing more will come: end the watches now rather than at the deadline.
        drop(ours);
        let _ = watcher.join();
        return VmsResult {
            speed: speed.label,
            count: plan.count,
            running: 0,
            creates,
            took: t0.elapsed(),
            p50: Duration::ZERO,
            p99: Duration::ZERO,
            vm_events: 0,
            vmi_events: 0,
            writes: None,
            server_cpu: Duration::ZERO,
            client_cpu: Duration::ZERO,
            throttled: 0,
            failures,
        };
    }
    let followed = watcher.join().unwrap_or_else(|_| panic!("vms: the watcher panicked"));
    let writes1 = writes(&ours);
    if let Some(e) = followed.error {
        failures.push(e);
    }
    let running = followed.reached.len();
    if running < plan.count {
        failures.push(format!(
            "only {running} of {} VMs Running within {:?}",
            plan.count, plan.deadline
        ));
    }
    let sent = sent.into_inner();
    let mut per_vm: Vec<Duration> = followed
        .reached
        .iter()
        .filter_map(|(name, at)| {
            let i: usize = name.strip_prefix("vm-")?.parse().ok()?;
            Some(at.saturating_duration_since((*sent.get(i)?)?))
        })
        .collect();
    per_vm.sort();
    let took = followed.reached.values().max().map_or(t0.elapsed(), |last| *last - t0);
    let (server1, client1) =
        followed.cpu_end.unwrap_or_else(|| (tick(Some(ours.pid())), tick(None)));
    let cpu = |ticks: u64| Duration::from_secs_f64(ticks as f64 / backend::ticks_per_sec() as f64);
    let throttled = ours.throttled();
    if throttled > 0 {
        failures.push(format!("{throttled} answers were 429"));
    }
    VmsResult {
        speed: speed.label,
        count: plan.count,
        running,
        creates,
        took,
        p50: percentile(&per_vm, 0.5),
        p99: percentile(&per_vm, 0.99),
        vm_events: followed.vm_events,
        vmi_events: followed.vmi_events,
        writes: writes0.zip(writes1).map(|(a, b)| b.saturating_sub(a)),
        server_cpu: cpu(server1.saturating_sub(server0)),
        client_cpu: cpu(client1.saturating_sub(client0)),
        throttled,
        failures,
    }
}

/// The report's section: what was run, then one column per speed.
pub fn markdown(results: &[VmsResult], provenance: &str, note: Option<&str>) -> String {
    let count = results.first().map_or(0, |r| r.count);
    let n = crate::count(count);
    let mut s = format!(
        "## {n} VMs created at once reach Running\n\n\
         Written by `cargo run --release -p virt-bench -- vms --count {count}` (bench/src/vms.rs); \
         virt-apiserver only. {provenance}\n\n"
    );
    if let Some(note) = note {
        s.push_str(&format!("Note: {note}\n\n"));
    }
    s.push_str(&format!(
        "Our server with `--simulate --simulate-seed 1`, a fresh database per column: with its \
         default delays (a VM alone reaches Running about 2 s after its create) and with \
         `--simulate-speed 0` (each stage as soon as the previous one is written, so the runtime \
         works flat out). {n} VirtualMachines (the benchmark's 2 KB VM with `runStrategy: \
         Always`) are created in one namespace by {} concurrent clients (keep-alive connections, \
         one request in flight each), while two watches from the revision before the first \
         create (the namespace's VMs and VMIs) follow them until every VM's \
         `status.printableStatus` and its VMI's `status.phase` are `Running`. Time to all \
         Running: from the first create sent to the last of those events read; per VM: from its \
         create sent to both its events read. Transitions: the two watches' events over that \
         time (every write of a VM or VMI: the creates, the runtime's status, finalizer and \
         annotation writes); store writes: the server's `virt_apiserver_store_writes_total` \
         (the core/v1 Events the runtime records too). Server CPU: user + system of the whole \
         server process (/proc/PID/stat) over the same time, in ticks of 1/{} s.\n\n",
        CLIENTS.min(count),
        backend::ticks_per_sec(),
    ));
    s.push_str("| figure |");
    for r in results {
        s.push_str(&format!(" {} |", r.speed));
    }
    s.push_str("\n|---|");
    s.push_str(&"---:|".repeat(results.len()));
    s.push('\n');
    let row = |s: &mut String, label: &str, cell: &dyn Fn(&VmsResult) -> String| {
        s.push_str(&format!("| {label} |"));
        for r in results {
            s.push_str(&format!(" {} |", cell(r)));
        }
        s.push('\n');
    };
    let secs = |d: Duration| format!("{:.2} s", d.as_secs_f64());
    let per = |d: Duration, n: u64| {
        let us = d.as_secs_f64() * 1e6 / n.max(1) as f64;
        if us >= 1000.0 {
            format!("{:.2} ms", us / 1000.0)
        } else {
            format!("{us:.0} µs")
        }
    };
    row(&mut s, "VMs Running", &|r| format!("{} of {}", r.running, r.count));
    row(&mut s, "all creates answered", &|r| secs(r.creates));
    row(&mut s, "time to all Running", &|r| secs(r.took));
    row(&mut s, "per-VM time to Running p50 / p99", &|r| {
        format!("{:.0} / {:.0} ms", ms(r.p50), ms(r.p99))
    });
    row(&mut s, "transitions (VM + VMI watch events)", &|r| {
        format!("{} ({} + {})", r.transitions(), r.vm_events, r.vmi_events)
    });
    row(&mut s, "store writes", &|r| r.writes.map_or("n/a".into(), |w| w.to_string()));
    row(&mut s, "server CPU", &|r| secs(r.server_cpu));
    row(&mut s, "server CPU per transition", &|r| per(r.server_cpu, r.transitions()));
    row(&mut s, "server CPU per VM", &|r| per(r.server_cpu, r.count as u64));
    row(&mut s, "client CPU (creates and watches)", &|r| secs(r.client_cpu));
    row(&mut s, "429 answers", &|r| r.throttled.to_string());
    row(&mut s, "failures", &|r| r.failures.len().to_string());
    let failed: Vec<&VmsResult> = results.iter().filter(|r| !r.failures.is_empty()).collect();
    if failed.is_empty() {
        s.push_str("\nThe scenario passed.\n");
    } else {
        s.push_str("\nThe scenario FAILED:\n\n");
        for r in failed {
            for f in &r.failures {
                s.push_str(&format!("- {}: {f}\n", r.speed));
            }
        }
    }
    s
}

/// Checks of the pure helpers.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vm_runs_always() {
        let vm: Value = serde_json::from_str(&vm_body(&Body::new(), &vm_name(7))).unwrap();
        assert_eq!(vm["spec"]["runStrategy"], "Always");
        assert_eq!(vm["metadata"]["name"], "vm-00007");
    }

    #[test]
    fn the_report_has_a_column_per_speed_and_says_what_failed() {
        let result = |speed, failures: Vec<String>| VmsResult {
            speed,
            count: 1000,
            running: 1000,
            creates: Duration::from_millis(300),
            took: Duration::from_secs(7),
            p50: Duration::from_secs(5),
            p99: Duration::from_secs(6),
            vm_events: 4000,
            vmi_events: 4000,
            writes: Some(11_000),
            server_cpu: Duration::from_secs(4),
            client_cpu: Duration::from_millis(250),
            throttled: 0,
            failures,
        };
        let ok = [result("a", vec![]), result("b", vec![])];
        let text = markdown(&ok, "Commit x.", Some("before: y"));
        assert!(text.starts_with("## 1 000 VMs created at once reach Running\n"), "{text}");
        assert!(text.contains("| figure | a | b |\n|---|---:|---:|\n"), "{text}");
        assert!(text.contains("| server CPU per transition | 500 µs | 500 µs |"), "{text}");
        assert!(text.contains("| transitions (VM + VMI watch events) | 8000 (4000 + 4000) |"));
        assert!(text.contains("Note: before: y") && text.ends_with("The scenario passed.\n"));
        let failed = [result("a", vec!["only 3 of 1000 VMs Running".into()])];
        let text = markdown(&failed, "Commit x.", None);
        assert!(text.contains("FAILED:\n\n- a: only 3 of 1000 VMs Running\n"), "{text}");
    }
}
