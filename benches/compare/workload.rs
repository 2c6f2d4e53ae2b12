//! The measurements, the same code for every backend: N operations spread over C client threads
//! (each with its own keep-alive connection), paged lists, and write → watch event latency.

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::backend::{agent, Backend};
use crate::object::Body;
use crate::report::percentile;

/// Operations per second and the 99th percentile of one operation's latency.
pub struct Throughput {
    pub rate: f64,
    pub p99: Duration,
    /// Bytes the server answered it stored (creates only).
    pub stored: usize,
}

/// Runs `op(agent, i)` for i in 0..n over `clients` threads; any failure fails the measurement.
fn spread(
    clients: usize,
    n: usize,
    op: impl Fn(&ureq::Agent, usize) -> Result<usize, String> + Sync,
) -> Result<Throughput, String> {
    let failure = Mutex::new(None);
    let t0 = Instant::now();
    let per_thread: Vec<(Vec<Duration>, usize)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..clients)
            .map(|t| {
                let (op, failure) = (&op, &failure);
                s.spawn(move || {
                    let agent = agent();
                    let (mut lat, mut stored) = (Vec::new(), 0);
                    for i in (t..n).step_by(clients) {
                        let o0 = Instant::now();
                        match op(&agent, i) {
                            Ok(size) => stored += size,
                            Err(e) => {
                                failure.lock().unwrap().get_or_insert(e);
                                break;
                            }
                        }
                        lat.push(o0.elapsed());
                    }
                    (lat, stored)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let took = t0.elapsed();
    if let Some(e) = failure.into_inner().unwrap() {
        return Err(e);
    }
    let stored = per_thread.iter().map(|(_, s)| s).sum();
    let mut lat: Vec<Duration> = per_thread.into_iter().flat_map(|(l, _)| l).collect();
    lat.sort();
    Ok(Throughput { rate: n as f64 / took.as_secs_f64(), p99: percentile(&lat, 0.99), stored })
}

/// Creates objects 0..n of `set`.
pub fn create(
    b: &dyn Backend,
    body: &Body,
    set: &str,
    n: usize,
    clients: usize,
) -> Result<Throughput, String> {
    spread(clients, n, |agent, i| {
        let name = Body::name(set, i);
        b.create(agent, set, &name, &body.json(&name))
    })
}

/// `n` gets of objects of `set` (which holds `existing`), in a scattered order.
pub fn get(
    b: &dyn Backend,
    set: &str,
    existing: usize,
    n: usize,
    clients: usize,
) -> Result<Throughput, String> {
    spread(clients, n, |agent, i| {
        // A multiplicative hash: every thread walks the whole set, not one corner of it.
        let k = (i as u64).wrapping_mul(2_654_435_761) % existing as u64;
        b.get(agent, set, &Body::name(set, k as usize)).map(|()| 0)
    })
}

/// A full paged list of `set`; answers items per second.
pub fn list(b: &dyn Backend, set: &str, expect: usize, limit: usize) -> Result<f64, String> {
    let agent = agent();
    let t0 = Instant::now();
    let (items, pages) = b.list(&agent, set, limit)?;
    let took = t0.elapsed();
    if items != expect || pages != expect.div_ceil(limit).max(1) {
        return Err(format!(
            "{}: list of {set}: {items} items in {pages} pages, want {expect}",
            b.label()
        ));
    }
    Ok(items as f64 / took.as_secs_f64())
}

pub struct Latency {
    pub p50: Duration,
    pub p99: Duration,
}

/// `writes` sequential updates of one object of `set`, each watched by `watchers` streams:
/// the time from sending a write to each watcher receiving its event.
pub fn watch(
    b: &dyn Backend,
    body: &Body,
    set: &str,
    watchers: usize,
    writes: usize,
) -> Result<Latency, String> {
    let agent = agent();
    let name = Body::name(set, watchers);
    let json = body.json(&name);
    b.create(&agent, set, &name, &json)?;
    let (tx, rx) = mpsc::channel();
    let streams =
        (0..watchers).map(|_| b.watch(set, &name, tx.clone())).collect::<Result<Vec<_>, _>>()?;
    drop(tx);
    // Let every watch reach its live phase before the first write.
    std::thread::sleep(Duration::from_millis(300 + 5 * watchers as u64));
    while rx.try_recv().is_ok() {}
    let mut sent = HashMap::new();
    for i in 0..writes {
        let t0 = Instant::now();
        sent.insert(b.update(&agent, set, &name, &json, i)?, t0);
    }
    let mut latencies = Vec::with_capacity(writes * watchers);
    let until = Instant::now() + Duration::from_secs(30);
    while latencies.len() < writes * watchers {
        let Ok((line, at)) = rx.recv_timeout(until.saturating_duration_since(Instant::now()))
        else {
            break;
        };
        for rev in b.event_revisions(&line) {
            if let Some(t0) = sent.get(&rev) {
                latencies.push(at.duration_since(*t0));
            }
        }
    }
    drop(streams);
    if latencies.len() < writes * watchers {
        return Err(format!(
            "{}: {} of {} watch events arrived",
            b.label(),
            latencies.len(),
            writes * watchers
        ));
    }
    latencies.sort();
    Ok(Latency { p50: percentile(&latencies, 0.5), p99: percentile(&latencies, 0.99) })
}
