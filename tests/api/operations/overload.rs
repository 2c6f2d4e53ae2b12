//! Overload, at a test's scale: thousands of idle keep-alive connections and
//! heads sent a byte at a time leave the server answering within its memory, slow heads are cut
//! at the read-header timeout (kube's `ReadHeaderTimeout`, shortened here by a hidden flag), and
//! writes past `--max-mutating-requests-inflight` get 429 with `Retry-After`. The full figures
//! (10 000 idle connections and 5 000 watchers) are the benchmark's `--overload` scenario.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;

const IDLE: usize = 2_000;
const SLOW: usize = 50;

/// This process's open-files soft limit raised to its hard limit: the test holds thousands.
fn raise_fd_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let lim = getrlimit(Resource::Nofile);
    let _ = setrlimit(Resource::Nofile, Rlimit { current: lim.maximum, maximum: lim.maximum });
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn addr(s: &TestServer) -> String {
    s.base.strip_prefix("http://").unwrap().to_owned()
}

/// One GET of /readyz on `conn`, answered 200 (the body is one short line).
fn readyz(conn: &mut TcpStream) {
    conn.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut buf = [0u8; 1024];
    let n = conn.read(&mut buf).unwrap();
    let answer = String::from_utf8_lossy(&buf[..n]);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

#[test]
fn idle_connections_and_slow_heads_leave_the_server_answering() {
    raise_fd_limit();
    let s = TestServer::start_with(ServerOptions {
        memory: true,
        args: vec!["--debug-read-header-timeout".into(), "2s".into()],
        ..Default::default()
    });
    s.namespace("load");
    let before = rss_kib(s.pid());
    let mut idle: Vec<TcpStream> = (0..IDLE)
        .map(|_| {
            let mut c = TcpStream::connect(addr(&s)).unwrap();
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            readyz(&mut c);
            c
        })
        .collect();
    // Heads that never end: a byte every 200 ms.
    let t0 = Instant::now();
    let mut slow: Vec<(TcpStream, Option<Duration>)> = (0..SLOW)
        .map(|_| {
            let mut c = TcpStream::connect(addr(&s)).unwrap();
            c.write_all(b"GET /readyz HTTP/1.1\r\nHost: x\r\nX-Slow: ").unwrap();
            c.set_nonblocking(true).unwrap();
            (c, None)
        })
        .collect();
    let mut probes = Vec::new();
    while t0.elapsed() < Duration::from_secs(8) && slow.iter().any(|(_, cut)| cut.is_none()) {
        for (c, cut) in slow.iter_mut().filter(|(_, cut)| cut.is_none()) {
            let mut buf = [0u8; 256];
            let closed = match c.read(&mut buf) {
                Ok(_) => true,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => c.write_all(b"a").is_err(),
                Err(_) => true,
            };
            if closed {
                *cut = Some(t0.elapsed());
            }
        }
        // Meanwhile the server answers at once, reads and writes.
        let p = Instant::now();
        assert_eq!(s.get("/readyz").status, 200);
        let name = format!("vm-{}", probes.len());
        let vm = object(preferred("kubevirt.io", "virtualmachines"), "load", &name);
        let path = collection_path(preferred("kubevirt.io", "virtualmachines"), Some("load"));
        assert_eq!(s.post(&path, &vm).status, 201);
        probes.push(p.elapsed());
        std::thread::sleep(Duration::from_millis(200));
    }
    for (i, (_, cut)) in slow.iter().enumerate() {
        let cut =
            cut.unwrap_or_else(|| panic!("slow head {i} still held after {:?}", t0.elapsed()));
        // Cut at the 2 s asked for (actix's own default, 5 s, would not pass), not before.
        let ok = Duration::from_millis(1500)..Duration::from_secs(4);
        assert!(ok.contains(&cut), "slow head {i} cut after {cut:?}");
    }
    probes.sort();
    assert!(*probes.last().unwrap() < Duration::from_secs(2), "probes took {probes:?}");
    // The idle connections are still served, and cost little memory each.
    let during = rss_kib(s.pid());
    for c in idle.iter_mut().step_by(100) {
        readyz(c);
    }
    let per_conn = during.saturating_sub(before) * 1024 / IDLE as u64;
    eprintln!("RSS {before} KiB → {during} KiB with {IDLE} idle connections: {per_conn} B each");
    assert!(per_conn < 64 * 1024, "{per_conn} B of RSS per idle connection");
    drop(idle);
}

#[test]
fn writes_past_the_mutating_limit_get_429_with_retry_after() {
    let s = TestServer::start_with(ServerOptions {
        memory: true,
        args: vec!["--max-mutating-requests-inflight".into(), "1".into()],
        ..Default::default()
    });
    s.namespace("busy");
    let res = preferred("kubevirt.io", "virtualmachines");
    let path = collection_path(res, Some("busy"));
    // A create whose body is still on its way holds the only mutating slot.
    let body = object(res, "busy", "held").to_string();
    let hold = || {
        let mut held = TcpStream::connect(addr(&s)).unwrap();
        write!(
            held,
            "POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{}",
            body.len(),
            &body[..10]
        )
        .unwrap();
        held.set_nonblocking(true).unwrap();
        held
    };
    let mut held = hold();
    let started = Instant::now();
    let r = loop {
        // The probes below may hold the slot when the held create arrives: answered (429), it
        // is sent again.
        if held.peek(&mut [0u8; 1]).is_ok_and(|n| n > 0) {
            held = hold();
        }
        let r = s.post(&path, &object(res, "busy", "other"));
        // Generous: on a loaded machine the held request may take a while to be read.
        if r.status != 201 || started.elapsed() > Duration::from_secs(15) {
            break r;
        }
        s.delete(&format!("{path}/other"));
        std::thread::sleep(Duration::from_millis(50));
    };
    held.set_nonblocking(false).unwrap();
    assert_eq!(r.status, 429, "{}", r.text());
    assert_eq!(r.header("Retry-After"), Some("1"));
    let status = r.json();
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(status["details"]["retryAfterSeconds"], 1);
    // Reads have their own limit.
    assert_eq!(s.get(&path).status, 200);
    // Once the held body arrives, its create finishes and the slot is free again.
    held.write_all(&body.as_bytes()[10..]).unwrap();
    let mut answer = [0u8; 64];
    let n = held.read(&mut answer).unwrap();
    assert!(answer[..n].starts_with(b"HTTP/1.1 201"), "{}", String::from_utf8_lossy(&answer[..n]));
    assert_eq!(s.post(&path, &json!(object(res, "busy", "after"))).status, 201);
}

/// The answer read from `conn` until the server closes it or `wait` passes.
fn answer(conn: &mut TcpStream, wait: Duration) -> String {
    conn.set_read_timeout(Some(wait)).unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    while let Ok(n) = conn.read(&mut chunk) {
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if String::from_utf8_lossy(&buf).contains("\"code\":") {
            break;
        }
    }
    String::from_utf8_lossy(&buf).into_owned()
}

#[test]
fn a_body_that_never_arrives_gets_504_at_the_request_timeout() {
    let s = TestServer::start_with(ServerOptions {
        memory: true,
        args: vec!["--request-timeout".into(), "2s".into()],
        ..Default::default()
    });
    s.namespace("slow");
    let res = preferred("kubevirt.io", "virtualmachines");
    let path = collection_path(res, Some("slow"));
    let body = object(res, "slow", "late").to_string();
    let send_part = |query: &str| {
        let mut c = TcpStream::connect(addr(&s)).unwrap();
        write!(
            c,
            "POST {path}{query} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{}",
            body.len(),
            &body[..10]
        )
        .unwrap();
        c
    };
    // kube's `--request-timeout`, here 2 s: the client hears 504 Timeout, not silence.
    let started = Instant::now();
    let mut held = send_part("");
    let text = answer(&mut held, Duration::from_secs(20));
    let took = started.elapsed();
    assert!(text.starts_with("HTTP/1.1 504"), "{text}");
    assert!(text.contains(r#""reason":"Timeout""#), "{text}");
    assert!(
        text.contains("Timeout: request did not complete within the allotted timeout"),
        "{text}"
    );
    assert!(took >= Duration::from_secs(2) && took < Duration::from_secs(15), "{took:?}");
    // client-go's `?timeout=` (kubectl --request-timeout) shortens it, never lengthens it.
    let started = Instant::now();
    let text = answer(&mut send_part("?timeout=500ms"), Duration::from_secs(20));
    assert!(text.starts_with("HTTP/1.1 504"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    let started = Instant::now();
    let text = answer(&mut send_part("?timeout=1h"), Duration::from_secs(20));
    assert!(text.starts_with("HTTP/1.1 504"), "{text}");
    assert!(started.elapsed() < Duration::from_secs(15), "{:?}", started.elapsed());
    // A timeout that is no duration is kube's 400; a sane one leaves a quick request alone.
    let r = s.get(&format!("{path}?timeout=soon"));
    let status = assert_status(&r, 400, "BadRequest");
    assert_eq!(
        status["message"],
        r#"invalid timeout specified in the request URL - time: invalid duration "soon""#
    );
    assert_eq!(s.post(&format!("{path}?timeout=30s"), &object(res, "slow", "quick")).status, 201);
    // Watches are long-running: the request timeout does not end them.
    let watch = s.watch(&format!("{path}?watch=true&timeout=1s"));
    assert!(!watch.ends_within(Duration::from_secs(3)));
}
