//! Figures, medians, goals and the Markdown report (printed, and written to a file).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::process::Command;
use std::time::Duration;

pub fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => None,
        n if n % 2 == 1 => Some(v[n / 2]),
        n => Some((v[n / 2 - 1] + v[n / 2]) / 2.0),
    }
}

/// How a measure is shown.
#[derive(Clone, Copy)]
pub enum Unit {
    PerSec,
    Ms,
    MiB,
    Times,
    /// Microseconds (of CPU time, per operation).
    Us,
}

pub struct Measure {
    pub key: &'static str,
    pub label: String,
    pub unit: Unit,
}

/// One run's figures: per backend (0 = virt-apiserver, 1 = etcd), measure key → value.
pub type Run = [BTreeMap<&'static str, f64>; 2];

pub enum Goal {
    /// ours / etcd at least this.
    RatioAtLeast(&'static str, f64),
    /// ours / etcd at most this.
    RatioAtMost(&'static str, f64),
    /// ours below this, in the measure's unit.
    Below(&'static str, f64),
}

pub struct Report {
    pub measures: Vec<Measure>,
    pub goals: Vec<(String, Goal)>,
    pub runs: Vec<Run>,
}

pub fn show(unit: Unit, v: Option<f64>) -> String {
    match (unit, v) {
        (_, None) => "n/a".into(),
        (Unit::PerSec, Some(v)) => format!("{v:.0}/s"),
        (Unit::Ms, Some(v)) if v < 10.0 => format!("{v:.2} ms"),
        (Unit::Ms, Some(v)) => format!("{v:.0} ms"),
        (Unit::MiB, Some(v)) => format!("{v:.0} MiB"),
        (Unit::Times, Some(v)) => format!("{v:.2}×"),
        (Unit::Us, Some(v)) if v < 10.0 => format!("{v:.2} µs"),
        (Unit::Us, Some(v)) => format!("{v:.1} µs"),
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => Some(a / b),
        _ => None,
    }
}

impl Report {
    fn medians(&self, side: usize, key: &str) -> Option<f64> {
        median(self.runs.iter().filter_map(|r| r[side].get(key).copied()).collect())
    }

    fn unit(&self, key: &str) -> Unit {
        self.measures.iter().find(|m| m.key == key).map_or(Unit::Times, |m| m.unit)
    }

    fn table(&self, out: &mut String, value: impl Fn(usize, &str) -> Option<f64>) {
        out.push_str("| measure | virt-apiserver | etcd | ours / etcd |\n|---|---:|---:|---:|\n");
        for m in &self.measures {
            let (a, b) = (value(0, m.key), value(1, m.key));
            let r = ratio(a, b).map_or("n/a".into(), |r| format!("{r:.2}"));
            let _ =
                writeln!(out, "| {} | {} | {} | {r} |", m.label, show(m.unit, a), show(m.unit, b));
        }
    }

    /// The goals table; answers it and how many goals were missed.
    fn goals_table(&self, out: &mut String) -> usize {
        out.push_str(
            "| goal | virt-apiserver | etcd | figure | verdict | throughput, ours / etcd |\n\
             |---|---:|---:|---:|---|---:|\n",
        );
        let mut missed = 0;
        for (text, goal) in &self.goals {
            let key = match goal {
                Goal::RatioAtLeast(k, _) | Goal::RatioAtMost(k, _) | Goal::Below(k, _) => *k,
            };
            let (a, b) = (self.medians(0, key), self.medians(1, key));
            let unit = self.unit(key);
            let (figure, pass) = match *goal {
                Goal::RatioAtLeast(_, x) => {
                    let r = ratio(a, b);
                    (r.map(|r| format!("{r:.3}× etcd")), r.map(|r| r >= x))
                }
                Goal::RatioAtMost(_, x) => {
                    let r = ratio(a, b);
                    (r.map(|r| format!("{r:.3}× etcd")), r.map(|r| r <= x))
                }
                Goal::Below(_, x) => (a.map(|v| show(unit, Some(v))), a.map(|v| v < x)),
            };
            let verdict = match pass {
                Some(true) => "PASS",
                Some(false) => "MISS",
                None => "n/a",
            };
            missed += usize::from(pass != Some(true));
            // A CPU goal shows its operation's throughput ratio beside it.
            let beside = key.strip_prefix("cpu_srv_").map_or(String::new(), |rate| {
                ratio(self.medians(0, rate), self.medians(1, rate))
                    .map_or("n/a".into(), |r| format!("{r:.2}×"))
            });
            let _ = writeln!(
                out,
                "| {text} | {} | {} | {} | {verdict} | {beside} |",
                show(unit, a),
                show(unit, b),
                figure.unwrap_or_else(|| "n/a".into())
            );
        }
        missed
    }

    /// The whole Markdown document, with `header` (provenance and notes) first.
    pub fn markdown(&self, header: &str) -> String {
        let mut out = String::from(header);
        out.push_str("\n## Goals (medians)\n\n");
        let missed = self.goals_table(&mut out);
        let _ = writeln!(
            out,
            "\n{} of {} goals met; a MISS is reported, not a failure.\n",
            self.goals.len() - missed,
            self.goals.len()
        );
        let _ = writeln!(out, "## Medians of {} run(s)\n", self.runs.len());
        self.table(&mut out, |side, key| self.medians(side, key));
        for (i, run) in self.runs.iter().enumerate() {
            let _ = writeln!(out, "\n## Run {}\n", i + 1);
            self.table(&mut out, |side, key| run[side].get(key).copied());
        }
        out
    }
}

fn command(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

/// The commit measured, marked `-dirty` when tracked files differ from it.
pub fn commit() -> String {
    let hash = command("git", &["rev-parse", "--short=12", "HEAD"]);
    let dirty = !command("git", &["status", "--porcelain", "--untracked-files=no"]).is_empty();
    format!(
        "{}{}",
        if hash.is_empty() { "unknown" } else { &hash },
        if dirty { "-dirty" } else { "" }
    )
}

pub fn date() -> String {
    command("date", &["-u", "+%Y-%m-%d %H:%M UTC"])
}

/// Cores, memory, CPU model and kernel, from /proc.
pub fn machine() -> String {
    let read = |p: &str| std::fs::read_to_string(p).unwrap_or_default();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem_kb: u64 = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0);
    let cpu = read("/proc/cpuinfo")
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name").map(|v| v.trim_start_matches([' ', '\t', ':']).to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let kernel = read("/proc/sys/kernel/osrelease");
    format!(
        "{cores} cores, {:.1} GiB memory, {cpu}, Linux {}",
        mem_kb as f64 / 1024.0 / 1024.0,
        kernel.trim()
    )
}

/// The markers around a section another mode writes into BENCHMARKS.md (the soak's), which
/// the full benchmark's rewrite keeps.
fn markers(key: &str) -> (String, String) {
    (format!("<!-- section:{key} -->"), format!("<!-- /section:{key} -->"))
}

/// `doc` with section `key` set to `text`: replaced where it was, else appended.
pub fn splice(doc: &str, key: &str, text: &str) -> String {
    let (open, close) = markers(key);
    let block = format!("{open}\n{}\n{close}\n", text.trim_end());
    match (doc.find(&open), doc.find(&close)) {
        (Some(a), Some(b)) if b > a => {
            let end = b + close.len();
            let end = if doc[end..].starts_with('\n') { end + 1 } else { end };
            format!("{}{block}{}", &doc[..a], &doc[end..])
        }
        _ if doc.is_empty() || doc.ends_with("\n\n") => format!("{doc}{block}"),
        _ if doc.ends_with('\n') => format!("{doc}\n{block}"),
        _ => format!("{doc}\n\n{block}"),
    }
}

/// Every marked section of `old`, appended to `new` (a full rewrite keeps the soak's figures).
pub fn keep_sections(old: &str, new: &str) -> String {
    let mut out = new.to_owned();
    let mut rest = old;
    while let Some(a) = rest.find("<!-- section:") {
        let key_end = rest[a..].find(" -->").map(|i| a + i);
        let Some(key_end) = key_end else { break };
        let key = &rest[a + "<!-- section:".len()..key_end];
        let (open, close) = markers(key);
        let Some(b) = rest[a..].find(&close).map(|i| a + i) else { break };
        let text = &rest[a + open.len()..b];
        out = splice(&out, key, text.trim_matches('\n'));
        rest = &rest[b + close.len()..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{keep_sections, splice};

    #[test]
    fn sections_replace_and_append() {
        let doc = splice("# B\n", "soak-1min", "one");
        assert_eq!(doc, "# B\n\n<!-- section:soak-1min -->\none\n<!-- /section:soak-1min -->\n");
        let doc2 = splice(&doc, "soak-5min", "five");
        let doc3 = splice(&doc2, "soak-1min", "uno\n");
        assert!(doc3.contains("-->\nuno\n<!--") && !doc3.contains("one"), "{doc3}");
        assert!(doc3.find("uno").unwrap() < doc3.find("five").unwrap());
        assert_eq!(
            keep_sections(&doc3, "# New\n"),
            splice(&splice("# New\n", "soak-1min", "uno"), "soak-5min", "five")
        );
        assert_eq!(keep_sections("# Old, no sections\n", "# New\n"), "# New\n");
    }
}
