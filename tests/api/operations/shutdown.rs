//! Shutdown on kube-apiserver's terms (`--shutdown-delay-duration`,
//! `--shutdown-watch-termination-grace-period`, `/readyz`'s `shutdown` check), and repeated
//! SIGKILLs under a mixed workload losing and tearing nothing.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

fn configmaps(ns: &str) -> String {
    format!("/api/v1/namespaces/{ns}/configmaps")
}

fn configmap(name: &str, step: u64) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"step": step.to_string()}},
        "data": {"step": step.to_string(), "payload": payload(name, step)},
    })
}

/// Content that only one write of `name` at `step` has, long enough to span pages.
fn payload(name: &str, step: u64) -> String {
    format!("{name}@{step};").repeat(200)
}

/// A request written by hand on its own connection, so the test decides when each byte goes.
fn raw(base: &str) -> TcpStream {
    let addr = base.strip_prefix("http://").unwrap();
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    stream
}

/// Reads a response to its end (the server closes the connection), then splits the head from
/// the chunked body and decodes it. `clean`: the body ended with the zero-length chunk.
struct Chunked {
    head: String,
    body: String,
    clean: bool,
    ended: Instant,
}

fn read_chunked(mut stream: TcpStream) -> Chunked {
    let mut bytes = Vec::new();
    let _ = stream.read_to_end(&mut bytes);
    let ended = Instant::now();
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let (head, mut rest) = text.split_once("\r\n\r\n").expect("a response head");
    assert!(head.to_ascii_lowercase().contains("transfer-encoding: chunked"), "{head}");
    let mut body = String::new();
    let mut clean = false;
    while let Some((size, tail)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
        if size == 0 {
            clean = tail == "\r\n";
            break;
        }
        if tail.len() < size + 2 {
            break;
        }
        body.push_str(&tail[..size]);
        rest = &tail[size + 2..];
    }
    Chunked { head: head.to_string(), body, clean, ended }
}

/// A create of the ConfigMap `in-flight` whose body has begun to arrive and then stops: a
/// request in flight. Returns once the server counts it so.
struct HeldCreate {
    conn: TcpStream,
    body: Vec<u8>,
}

fn held_create(s: &TestServer, ns: &str) -> HeldCreate {
    let body = serde_json::to_vec(&configmap("in-flight", 0)).unwrap();
    let mut conn = raw(&s.base);
    write!(
        conn,
        "POST {} HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n",
        configmaps(ns),
        body.len()
    )
    .unwrap();
    conn.write_all(&body[..10]).unwrap();
    conn.flush().unwrap();
    eventually(Duration::from_secs(5), || {
        let held = "apiserver_current_inflight_requests{request_kind=\"mutating\"} 1";
        s.get("/metrics").text().lines().any(|l| l == held).then_some(())
    });
    HeldCreate { conn, body }
}

impl HeldCreate {
    /// Sends the rest of the body; answers the response as it came.
    fn finish(mut self) -> String {
        self.conn.write_all(&self.body[10..]).unwrap();
        let mut answer = String::new();
        let _ = self.conn.read_to_string(&mut answer);
        answer
    }
}

fn refused(base: &str) -> bool {
    let addr = base.strip_prefix("http://").unwrap();
    matches!(TcpStream::connect(addr), Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused)
}

#[test]
fn sigterm_fails_readyz_serves_through_the_delay_then_drains_watches_and_writes_and_exits_clean() {
    let mut s = TestServer::start_with(ServerOptions {
        args: ["--shutdown-delay-duration=4s", "--shutdown-watch-termination-grace-period=3s"]
            .map(String::from)
            .to_vec(),
        ..Default::default()
    });
    s.namespace("sd");
    assert_eq!(s.post(&configmaps("sd"), &configmap("before", 0)).status, 201);
    let ready = s.get("/readyz");
    assert_eq!((ready.status, ready.text().as_str()), (200, "ok"));

    let mut watch = raw(&s.base);
    write!(watch, "GET {}?watch=true HTTP/1.1\r\nHost: test\r\n\r\n", configmaps("sd")).unwrap();
    let watch = std::thread::spawn(move || read_chunked(watch));

    // A write whose request is under way when the listener closes: its body comes later.
    let slow = held_create(&s, "sd");

    let term = Instant::now();
    s.signal("TERM");
    // At once: not ready, with kube's answer; alive; and still serving reads and writes.
    let not_ready = eventually(Duration::from_secs(3), || {
        let r = s.get("/readyz");
        (r.status == 500).then_some(r)
    });
    // On etcd, the feed's check sits between them.
    let feed = if storage_is_etcd() { "[+]etcd-feed ok\n" } else { "" };
    assert_eq!(
        not_ready.text(),
        format!("[+]ping ok\n{feed}[-]shutdown failed: reason withheld\nreadyz check failed\n")
    );
    assert_eq!(not_ready.header("content-type"), Some("text/plain; charset=utf-8"));
    let verbose = s.get("/readyz?exclude=shutdown&verbose");
    assert_eq!(
        (verbose.status, verbose.text()),
        (200, format!("[+]ping ok\n{feed}[+]shutdown excluded: ok\nreadyz check passed\n"))
    );
    assert_eq!(s.get("/healthz").status, 200);
    assert_eq!(s.get("/livez").status, 200);
    assert_eq!(s.post(&configmaps("sd"), &configmap("during-delay", 0)).status, 201);
    assert_eq!(s.get(&format!("{}/before", configmaps("sd"))).status, 200);
    assert!(term.elapsed() < Duration::from_millis(3800), "the checks ran within the delay");
    assert!(!refused(&s.base), "connections are taken during the delay");

    // After the delay: no new connections.
    eventually(Duration::from_secs(8), || refused(&s.base).then_some(()));
    assert!(term.elapsed() >= Duration::from_secs(4), "the listener closed before the delay");

    // The write under way finishes, and is answered.
    let answer = slow.finish();
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");

    // The watch ended with a clean end of stream, within the grace period, after sending what
    // happened during the delay.
    let watch = watch.join().unwrap();
    assert!(watch.head.starts_with("HTTP/1.1 200"), "{}", watch.head);
    assert!(watch.clean, "the chunked body ends with its last chunk: {:?}", watch.body);
    assert!(watch.ended - term < Duration::from_secs(4 + 3 + 1), "ended within the grace");
    let names: Vec<String> = watch
        .body
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("one event a line"))
        .map(|e| e["object"]["metadata"]["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        names.contains(&"before".into()) && names.contains(&"during-delay".into()),
        "{names:?}"
    );

    let status = s.wait_exit(Duration::from_secs(10)).expect("the server exits");
    assert_eq!(status.code(), Some(0), "a clean shutdown exits 0");
    // The WAL was checkpointed into the database: nothing is left in it.
    let wal = s.db.with_file_name(format!("{}-wal", s.db.file_name().unwrap().to_str().unwrap()));
    assert!(std::fs::metadata(&wal).map_or(true, |m| m.len() == 0), "WAL left: {wal:?}");

    // Everything answered is there after a restart.
    let (db, dir) = s.kill();
    let s = TestServer::start_with(ServerOptions { db: Some(db), ..Default::default() });
    let _keep = dir;
    let mut names = s.list_names(&configmaps("sd"));
    names.sort();
    assert_eq!(names, ["before", "during-delay", "in-flight"]);
}

#[test]
fn by_default_sigterm_ends_watches_at_once_and_a_second_signal_exits_1() {
    let mut s = TestServer::start();
    s.namespace("sd0");
    let mut watch = raw(&s.base);
    write!(watch, "GET {}?watch=true HTTP/1.1\r\nHost: test\r\n\r\n", configmaps("sd0")).unwrap();
    let watch = std::thread::spawn(move || read_chunked(watch));
    std::thread::sleep(Duration::from_millis(200));
    let term = Instant::now();
    s.signal("TERM");
    let watch = watch.join().unwrap();
    assert!(watch.clean, "a clean end of stream");
    assert!(watch.ended - term < Duration::from_secs(2), "no delay, no grace: at once");
    assert_eq!(s.wait_exit(Duration::from_secs(5)).expect("exits").code(), Some(0));

    // A second signal during a long delay stops at once, with status 1 (kube's handler).
    let mut s = TestServer::start_with(ServerOptions {
        args: vec!["--shutdown-delay-duration=1m".into()],
        ..Default::default()
    });
    s.signal("TERM");
    eventually(Duration::from_secs(10), || (s.get("/readyz").status == 500).then_some(()));
    s.signal("INT");
    assert_eq!(s.wait_exit(Duration::from_secs(5)).expect("exits at once").code(), Some(1));
}

#[test]
fn with_send_retry_after_new_requests_get_429_until_those_in_flight_drain() {
    let mut s = TestServer::start_with(ServerOptions {
        args: ["--shutdown-delay-duration=1s", "--shutdown-send-retry-after=true"]
            .map(String::from)
            .to_vec(),
        ..Default::default()
    });
    s.namespace("sra");
    // A create whose body is still on its way when the delay ends.
    let slow = held_create(&s, "sra");
    s.signal("TERM");
    // After the delay: kube's 429, the listener still open, health and metrics still served.
    let refused = eventually(Duration::from_secs(5), || {
        let r = s.get(&configmaps("sra"));
        (r.status == 429).then_some(r)
    });
    assert_eq!(refused.header("Retry-After"), Some("5"));
    assert_eq!(refused.header("Connection"), Some("close"));
    assert_eq!(refused.header("content-type"), Some("text/plain; charset=utf-8"));
    assert_eq!(refused.text(), "The apiserver is shutting down, please try again later.\n");
    assert_eq!(s.get("/readyz").status, 500);
    assert_eq!(s.get("/livez").status, 200);
    assert_eq!(s.get("/metrics").status, 200);
    // The request in flight finishes; then the listener closes and the server exits clean.
    let answer = slow.finish();
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    let status = s.wait_exit(Duration::from_secs(10)).expect("the server exits once drained");
    assert_eq!(status.code(), Some(0));
}

/// The flags parse as the server's other durations do, and refuse what is not one.
#[test]
fn shutdown_flags_take_durations() {
    let out = std::process::Command::new(binary())
        .args(["--shutdown-delay-duration=soon", "--database", ":memory:"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("invalid duration \"soon\""), "{err}");
}

/// A thread's view of its objects: the acknowledged state of each, and the one write under way
/// when the server was killed, whose outcome is unknown.
#[derive(Default, Clone)]
struct Model {
    /// name → (resourceVersion, step) of its last acknowledged write; absent: deleted or never
    /// created.
    acked: BTreeMap<String, (u64, u64)>,
    /// The write in flight at the kill: its name and the step it writes (None: a delete).
    pending: Option<(String, Option<u64>)>,
    /// Writes acknowledged over every round.
    writes: u64,
}

/// Creates, updates and deletes this thread's objects until the server stops answering.
fn workload(base: String, id: usize, mut model: Model, round: u64) -> Model {
    let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(10)).build();
    let ns = configmaps("kills");
    for op in 0u64.. {
        let name = format!("t{id}-{}", (op * 7 + round) % 5);
        let (method, path, step, body) = match model.acked.get(&name).copied() {
            None => ("POST", ns.clone(), Some(0), Some(configmap(&name, 0))),
            Some(_) if (op + round) % 4 == 3 => ("DELETE", format!("{ns}/{name}"), None, None),
            Some((rv, step)) => {
                let mut obj = configmap(&name, step + 1);
                obj["metadata"]["resourceVersion"] = json!(rv.to_string());
                ("PUT", format!("{ns}/{name}"), Some(step + 1), Some(obj))
            }
        };
        model.pending = Some((name.clone(), step));
        let req = agent.request(method, &format!("{base}{path}"));
        let result = match &body {
            Some(b) => req.send_json(b),
            None => req.call(),
        };
        let answer: Value = match result.map(|r| r.into_json::<Value>()) {
            Ok(Ok(v)) => v,
            // Cut off before or during the answer: not acknowledged.
            Ok(Err(_)) | Err(ureq::Error::Transport(_)) => return model,
            Err(ureq::Error::Status(code, r)) => {
                panic!("{method} {path}: {code} {}", r.into_string().unwrap_or_default())
            }
        };
        model.pending = None;
        model.writes += 1;
        match step {
            Some(step) => {
                model.acked.insert(name, (rv(&answer), step));
            }
            None => {
                model.acked.remove(&name);
            }
        }
    }
    unreachable!()
}

#[test]
fn repeated_sigkill_under_a_mixed_workload_loses_and_tears_nothing() {
    const KILLS: u64 = 20;
    const THREADS: usize = 4;
    let started = Instant::now();
    let mut s = TestServer::start();
    s.namespace("kills");
    let mut models = vec![Model::default(); THREADS];
    let mut _dir = None;
    for round in 0..KILLS {
        let threads: Vec<JoinHandle<Model>> = models
            .iter()
            .enumerate()
            .map(|(id, m)| {
                let (base, m) = (s.base.clone(), m.clone());
                std::thread::spawn(move || workload(base, id, m, round))
            })
            .collect();
        // Kill at a different point of the stream of writes each round.
        std::thread::sleep(Duration::from_millis(150 + (round * 37) % 250));
        let (db, dir) = s.kill();
        models = threads.into_iter().map(|t| t.join().expect("workload thread")).collect();

        s = TestServer::start_with(ServerOptions { db: Some(db), ..Default::default() });
        if dir.is_some() {
            _dir = dir;
        }
        let list = s.get_json(&configmaps("kills"));
        let live: BTreeMap<String, Value> = list["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (o["metadata"]["name"].as_str().unwrap().to_owned(), o.clone()))
            .collect();
        // Nothing torn: every object holds one write's whole content.
        for (name, obj) in &live {
            let step: u64 = obj["data"]["step"].as_str().unwrap().parse().unwrap();
            assert_eq!(obj["metadata"]["labels"]["step"], step.to_string(), "{name} torn");
            assert_eq!(obj["data"]["payload"], payload(name, step), "{name} torn");
        }
        for (id, model) in models.iter_mut().enumerate() {
            let prefix = format!("t{id}-");
            let names: Vec<&String> = live.keys().filter(|n| n.starts_with(&prefix)).collect();
            for name in names.iter().copied().chain(model.acked.keys()) {
                let now = live.get(name).map(|o| (rv(o), o["data"]["step"].as_str().unwrap()));
                let acked = model.acked.get(name).copied();
                let as_acked = now.map(|(r, st)| (r, st.parse::<u64>().unwrap())) == acked;
                let pending = model.pending.as_ref().filter(|(n, _)| n == name);
                let as_pending = match (pending, now) {
                    (Some((_, Some(step))), Some((_, st))) => st == step.to_string(),
                    (Some((_, None)), None) => true,
                    _ => false,
                };
                assert!(
                    as_acked || as_pending,
                    "round {round}: {name} is {now:?}, acknowledged {acked:?}, pending {pending:?}"
                );
            }
            // The next round starts from what the server holds.
            model.acked = names
                .into_iter()
                .map(|n| {
                    let o = &live[n];
                    (n.clone(), (rv(o), o["data"]["step"].as_str().unwrap().parse().unwrap()))
                })
                .collect();
            model.pending = None;
        }
    }
    let writes: u64 = models.iter().map(|m| m.writes).sum();
    assert!(writes >= KILLS * 10, "only {writes} writes were acknowledged");
    assert!(started.elapsed() < Duration::from_secs(90), "took {:?}", started.elapsed());
}
