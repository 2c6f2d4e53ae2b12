//! The measurements, the same code for every backend: N operations spread over C clients (each
//! a keep-alive connection with one request in flight), paged lists, and write → watch event
//! latency.

use std::collections::HashMap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};

use crate::backend::Backend;
use crate::http::{AsyncConn, Conn, Request};
use crate::object::Body;
use crate::report::percentile;

/// Operations per second and the 99th percentile of one operation's latency.
pub struct Throughput {
    pub rate: f64,
    pub p99: Duration,
    /// Bytes the server answered it stored (creates only).
    pub stored: usize,
}

/// Runs operations 0..n over `clients` connections to `b`: operation `i` sends the request of
/// `request(i)` and hands its answer to `answer`, which says how many bytes it stored. Any
/// failure fails the measurement.
///
/// One thread drives all the connections, as tasks of a tokio current-thread runtime. Measured
/// against a blocking thread per connection (the same client otherwise), its client CPU per get
/// with 32 clients was 9.5 µs against 19.5 (ours) and 23.5 against 29.5 (etcd), per create about
/// a quarter less: fewer context switches, one epoll_wait serves several answers, and each
/// answer takes one send and one recv. The client shares the servers' cores.
pub fn spread<C>(
    b: &dyn Backend,
    clients: usize,
    n: usize,
    request: impl Fn(usize) -> (Request, C),
    answer: impl Fn(C, &[u8]) -> Result<usize, String>,
) -> Result<Throughput, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    let (request, answer) = (&request, &answer);
    let t0 = Instant::now();
    let per_client = rt.block_on(async {
        let mut clients: FuturesUnordered<_> = (0..clients)
            .map(|t| async move {
                let mut conn = AsyncConn::open(b.endpoint_of(t)).await?;
                let (mut lat, mut stored) = (Vec::with_capacity(n / clients + 1), 0);
                for i in (t..n).step_by(clients) {
                    let o0 = Instant::now();
                    let (req, c) = request(i);
                    stored += answer(c, conn.call(&req).await?)?;
                    lat.push(o0.elapsed());
                }
                Ok::<_, String>((lat, stored))
            })
            .collect();
        let mut done = Vec::new();
        while let Some(r) = clients.next().await {
            done.push(r?);
        }
        Ok::<_, String>(done)
    })?;
    Ok(throughput(n, t0.elapsed(), per_client))
}

fn throughput(n: usize, took: Duration, per_client: Vec<(Vec<Duration>, usize)>) -> Throughput {
    let stored = per_client.iter().map(|(_, s)| s).sum();
    let mut lat: Vec<Duration> = per_client.into_iter().flat_map(|(l, _)| l).collect();
    lat.sort();
    Throughput { rate: n as f64 / took.as_secs_f64(), p99: percentile(&lat, 0.99), stored }
}

/// Creates objects 0..n of `set`.
pub fn create(
    b: &dyn Backend,
    body: &Body,
    set: &str,
    n: usize,
    clients: usize,
) -> Result<Throughput, String> {
    b.prepare(set)?;
    spread(
        b,
        clients,
        n,
        |i| {
            let name = Body::name(set, i);
            let json = body.json(&name);
            (b.create(set, &name, &json), json)
        },
        |json, answer| b.created(&json, answer),
    )
}

/// `n` gets of objects of `set` (which holds `existing`), in a scattered order.
pub fn get(
    b: &dyn Backend,
    set: &str,
    existing: usize,
    n: usize,
    clients: usize,
) -> Result<Throughput, String> {
    b.prepare(set)?;
    spread(
        b,
        clients,
        n,
        |i| {
            // A multiplicative hash: every client walks the whole set, not one corner of it.
            let k = (i as u64).wrapping_mul(2_654_435_761) % existing as u64;
            (b.get(set, &Body::name(set, k as usize)), ())
        },
        |(), answer| b.got(answer).map(|()| 0),
    )
}

/// A full paged list of `set` on one connection; answers items per second.
pub fn list(b: &dyn Backend, set: &str, expect: usize, limit: usize) -> Result<f64, String> {
    list_times(b, set, expect, limit, 1)
}

/// `times` full paged lists of `set`, one after the other on one connection; answers items per
/// second over them all.
pub fn list_times(
    b: &dyn Backend,
    set: &str,
    expect: usize,
    limit: usize,
    times: usize,
) -> Result<f64, String> {
    let t0 = Instant::now();
    let mut conn = Conn::open(b.endpoint())?;
    for _ in 0..times {
        let (items, pages) = b.list(&mut conn, set, limit)?;
        if items != expect || pages != expect.div_ceil(limit).max(1) {
            return Err(format!(
                "{}: list of {set}: {items} items in {pages} pages, want {expect}",
                b.label()
            ));
        }
    }
    Ok((expect * times) as f64 / t0.elapsed().as_secs_f64())
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
    b.prepare(set)?;
    let mut conn = Conn::open(b.endpoint())?;
    let name = Body::name(set, watchers);
    let json = body.json(&name);
    b.created(&json, conn.call(&b.create(set, &name, &json))?)?;
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
        sent.insert(b.update(&mut conn, set, &name, &json, i)?, t0);
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
