//! Watch semantics in the manner of the apimachinery e2e suites (B.10 watch.go, crd_watch.go),
//! plus bookmarks, the watch-list stream, expiry, slow and vanished watchers, consistency with
//! the store's revision log under concurrent writers, and kubectl's watches.
//!
//! Watches here use a raw HTTP/1.1 connection (see `RawWatch`), so a test controls exactly when
//! the body is read and when the connection closes.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::process::{Child, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

pub(crate) const GROUP_V1: &str = "/apis/kubevirt.io/v1";

pub(crate) fn vms(ns: &str) -> String {
    format!("{GROUP_V1}/namespaces/{ns}/virtualmachines")
}

pub(crate) fn vm_path(ns: &str, name: &str) -> String {
    format!("{}/{name}", vms(ns))
}

/// A VirtualMachine with a plausible spec and the given labels.
pub(crate) fn vm(name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "labels": labels},
        "spec": {"running": false, "template": {"spec": {"domain": {"devices": {}}}}},
    })
}

pub(crate) fn create(s: &TestServer, ns: &str, name: &str, labels: Value) -> Value {
    let r = s.post(&vms(ns), &vm(name, labels));
    assert_eq!(r.status, 201, "create {name}: {}", r.text());
    r.json()
}

/// Merge-patches the object's labels; answers the new object.
pub(crate) fn relabel(s: &TestServer, ns: &str, name: &str, labels: Value) -> Value {
    let r = s.patch(
        &vm_path(ns, name),
        "application/merge-patch+json",
        &json!({"metadata": {"labels": labels}}),
    );
    assert_eq!(r.status, 200, "patch {name}: {}", r.text());
    r.json()
}

/// Changes an annotation; answers the new object.
pub(crate) fn touch(s: &TestServer, ns: &str, name: &str, value: &str) -> Value {
    let r = s.patch(
        &vm_path(ns, name),
        "application/merge-patch+json",
        &json!({"metadata": {"annotations": {"touched": value}}}),
    );
    assert_eq!(r.status, 200, "patch {name}: {}", r.text());
    r.json()
}

pub(crate) fn remove(s: &TestServer, ns: &str, name: &str) {
    let r = s.delete(&vm_path(ns, name));
    assert_eq!(r.status, 200, "delete {name}: {}", r.text());
}

/// A DELETED event's object is the last state, at a newer revision (the delete's).
pub(crate) fn assert_deleted(event_object: &Value, last: &Value) {
    let strip = |v: &Value| {
        let mut v = v.clone();
        v["metadata"].as_object_mut().unwrap().remove("resourceVersion");
        v
    };
    assert_eq!(strip(event_object), strip(last));
    assert!(rv(event_object) > rv(last), "{event_object}");
}

pub(crate) fn rv(obj: &Value) -> u64 {
    obj["metadata"]["resourceVersion"].as_str().expect("resourceVersion").parse().unwrap()
}

pub(crate) fn name_of(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or("")
}

/// A server started with extra flags.
pub(crate) fn server(args: &[&str]) -> TestServer {
    TestServer::start_with(ServerOptions {
        args: args.iter().map(|a| a.to_string()).collect(),
        ..ServerOptions::default()
    })
}

/// A server whose history `args` compact: on the etcd axis with an etcd of its own, since etcd
/// compacts every prefix at once (the other tests' history would go with it).
pub(crate) fn compacting(args: &[&str]) -> TestServer {
    TestServer::start_with(ServerOptions {
        args: args.iter().map(|a| a.to_string()).collect(),
        private_etcd: true,
        ..ServerOptions::default()
    })
}

/// One value of the server's /metrics.
pub(crate) fn metric(s: &TestServer, name: &str) -> u64 {
    let r = s.get("/metrics");
    assert_eq!(r.status, 200);
    let text = r.text();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no metric {name} in:\n{text}"))
        .trim()
        .parse()
        .unwrap()
}

/// `(type, name, resourceVersion)` of a watch event.
pub(crate) fn summary(ev: &Value) -> (String, String, u64) {
    let t = ev["type"].as_str().unwrap().to_owned();
    (t, name_of(&ev["object"]).to_owned(), rv(&ev["object"]))
}

/// A watch over its own HTTP/1.1 connection, its chunked body decoded on a reader thread.
/// Dropping it closes the connection.
pub(crate) struct RawWatch {
    pub status: u16,
    pub content_type: String,
    stream: TcpStream,
    body: Option<BufReader<TcpStream>>,
    rx: Option<mpsc::Receiver<Value>>,
}

impl RawWatch {
    /// Opens `path` and starts reading events.
    pub fn open(s: &TestServer, path: &str) -> RawWatch {
        let mut w = RawWatch::open_paused(s, path);
        assert_eq!(w.status, 200, "watch {path}");
        w.resume();
        w
    }

    /// Opens `path` and reads only the response head: the body waits in the socket until
    /// `resume`, as with a client that has stopped reading.
    pub fn open_paused(s: &TestServer, path: &str) -> RawWatch {
        let addr = s.base.strip_prefix("http://").unwrap();
        let mut stream = TcpStream::connect(addr).expect("connect");
        write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nAccept: application/json\r\n\r\n")
            .unwrap();
        let mut body = BufReader::new(stream.try_clone().unwrap());
        let mut status_line = String::new();
        body.read_line(&mut status_line).unwrap();
        let status: u16 = status_line.split(' ').nth(1).expect("status").parse().unwrap();
        let mut content_type = String::new();
        loop {
            let mut h = String::new();
            body.read_line(&mut h).unwrap();
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-type") {
                    content_type = v.trim().to_owned();
                }
            }
        }
        RawWatch { status, content_type, stream, body: Some(body), rx: None }
    }

    /// Starts decoding the body: one JSON event per line.
    pub fn resume(&mut self) {
        let mut body = self.body.take().expect("not resumed yet");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut pending = Vec::new();
            loop {
                let Some(chunk) = read_chunk(&mut body) else { return };
                pending.extend_from_slice(&chunk);
                while let Some(i) = pending.iter().position(|&b| b == b'\n') {
                    let line: Vec<u8> = pending.drain(..=i).collect();
                    let ev: Value = serde_json::from_slice(&line).expect("one JSON event per line");
                    if tx.send(ev).is_err() {
                        return;
                    }
                }
            }
        });
        self.rx = Some(rx);
    }

    fn rx(&self) -> &mpsc::Receiver<Value> {
        self.rx.as_ref().expect("resumed")
    }

    /// The next event, failing the test after 10 s.
    pub fn expect(&self) -> Value {
        match self.rx().recv_timeout(Duration::from_secs(10)) {
            Ok(v) => v,
            Err(RecvTimeoutError::Timeout) => panic!("no watch event within 10 s"),
            Err(RecvTimeoutError::Disconnected) => panic!("the watch ended"),
        }
    }

    /// The next event, which must be of `kind` for `name`; answers its object.
    pub fn expect_event(&self, kind: &str, name: &str) -> Value {
        let ev = self.expect();
        assert_eq!((ev["type"].as_str(), name_of(&ev["object"])), (Some(kind), name), "{ev}");
        ev["object"].clone()
    }

    /// Asserts that nothing arrives for `wait` (and the stream stays open).
    pub fn expect_quiet(&self, wait: Duration) {
        match self.rx().recv_timeout(wait) {
            Ok(ev) => panic!("unexpected watch event: {ev}"),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => panic!("the watch ended"),
        }
    }

    /// Asserts that the stream ends, with no further event, within `within`.
    pub fn expect_end(&self, within: Duration) {
        match self.rx().recv_timeout(within) {
            Ok(ev) => panic!("expected the end of the watch, got {ev}"),
            Err(RecvTimeoutError::Timeout) => panic!("the watch did not end within {within:?}"),
            Err(RecvTimeoutError::Disconnected) => {}
        }
    }

    /// Events until `n` have arrived (10 s each at most).
    pub fn take(&self, n: usize) -> Vec<Value> {
        (0..n).map(|_| self.expect()).collect()
    }
}

impl Drop for RawWatch {
    fn drop(&mut self) {
        let _ = self.stream.shutdown(Shutdown::Both);
    }
}

/// One chunk of a chunked body; `None` at its end or when the connection goes.
fn read_chunk(r: &mut BufReader<TcpStream>) -> Option<Vec<u8>> {
    let mut size = String::new();
    if r.read_line(&mut size).ok()? == 0 {
        return None;
    }
    let size = usize::from_str_radix(size.trim().split(';').next()?, 16).ok()?;
    if size == 0 {
        return None;
    }
    let mut chunk = vec![0; size + 2];
    r.read_exact(&mut chunk).ok()?;
    chunk.truncate(size);
    Some(chunk)
}

/// The label selector as kube judges it here: `team=<v>` or everything.
fn has_team(obj: &Value, team: &str) -> bool {
    obj["metadata"]["labels"]["team"] == team
}

// ---------------------------------------------------------------------------------------------
// watch.go

/// "should observe add, update, and delete watch notifications": watchers by label see only
/// their objects.
#[test]
fn multiple_watchers_by_label() {
    let s = TestServer::start();
    s.namespace("multi");
    let ns = "multi";
    let a = RawWatch::open(&s, &format!("{}?watch=true&labelSelector=watch-this%3DA", vms(ns)));
    let b = RawWatch::open(&s, &format!("{}?watch=true&labelSelector=watch-this%3DB", vms(ns)));
    let ab =
        RawWatch::open(&s, &format!("{}?watch=true&labelSelector=watch-this+in+(A,B)", vms(ns)));
    let created = create(&s, ns, "cm-a", json!({"watch-this": "A"}));
    assert_eq!(a.expect_event("ADDED", "cm-a"), created);
    assert_eq!(ab.expect_event("ADDED", "cm-a"), created);
    let modified = touch(&s, ns, "cm-a", "1");
    assert_eq!(a.expect_event("MODIFIED", "cm-a"), modified);
    assert_eq!(ab.expect_event("MODIFIED", "cm-a"), modified);
    remove(&s, ns, "cm-a");
    let deleted = a.expect_event("DELETED", "cm-a");
    assert_deleted(&deleted, &modified);
    assert_eq!(ab.expect_event("DELETED", "cm-a"), deleted);
    b.expect_quiet(Duration::from_millis(200));

    create(&s, ns, "cm-b", json!({"watch-this": "B"}));
    b.expect_event("ADDED", "cm-b");
    ab.expect_event("ADDED", "cm-b");
    touch(&s, ns, "cm-b", "1");
    b.expect_event("MODIFIED", "cm-b");
    ab.expect_event("MODIFIED", "cm-b");
    remove(&s, ns, "cm-b");
    b.expect_event("DELETED", "cm-b");
    ab.expect_event("DELETED", "cm-b");
    a.expect_quiet(Duration::from_millis(200));
}

/// "should be able to start watching from a specific resource version".
#[test]
fn watch_from_a_resource_version() {
    let s = TestServer::start();
    s.namespace("from-rv");
    let ns = "from-rv";
    create(&s, ns, "cm", json!({}));
    let first = touch(&s, ns, "cm", "1");
    let second = touch(&s, ns, "cm", "2");
    remove(&s, ns, "cm");
    let w = RawWatch::open(&s, &format!("{}?watch=true&resourceVersion={}", vms(ns), rv(&first)));
    assert_eq!(w.expect_event("MODIFIED", "cm"), second);
    assert_deleted(&w.expect_event("DELETED", "cm"), &second);
    w.expect_quiet(Duration::from_millis(200));
}

/// "should be able to restart watching from the last resource version observed by the previous
/// watch": nothing lost, nothing twice.
#[test]
fn restart_from_the_last_observed_version() {
    let s = TestServer::start();
    s.namespace("restart");
    let ns = "restart";
    let sel = "labelSelector=watch-this%3Dyes";
    let w = RawWatch::open(&s, &format!("{}?watch=true&{sel}", vms(ns)));
    create(&s, ns, "cm", json!({"watch-this": "yes"}));
    touch(&s, ns, "cm", "1");
    touch(&s, ns, "cm", "2");
    let seen = w.take(3);
    let last = rv(&seen[2]["object"]);
    drop(w);
    // Changes while nobody watches.
    let m3 = touch(&s, ns, "cm", "3");
    let m4 = touch(&s, ns, "cm", "4");
    remove(&s, ns, "cm");
    let w = RawWatch::open(&s, &format!("{}?watch=true&{sel}&resourceVersion={last}", vms(ns)));
    assert_eq!(w.expect_event("MODIFIED", "cm"), m3);
    assert_eq!(w.expect_event("MODIFIED", "cm"), m4);
    assert_deleted(&w.expect_event("DELETED", "cm"), &m4);
    w.expect_quiet(Duration::from_millis(200));
}

/// "should observe an object deletion if it stops meeting the requirements of the selector".
#[test]
fn leaving_the_selector_is_a_delete() {
    let s = TestServer::start();
    s.namespace("label-change");
    let ns = "label-change";
    let w = RawWatch::open(&s, &format!("{}?watch=true&labelSelector=watch-this%3Dyes", vms(ns)));
    create(&s, ns, "cm", json!({"watch-this": "yes"}));
    w.expect_event("ADDED", "cm");
    let before = touch(&s, ns, "cm", "1");
    w.expect_event("MODIFIED", "cm");
    let left = relabel(&s, ns, "cm", json!({"watch-this": "no"}));
    let deleted = w.expect_event("DELETED", "cm");
    // The previous content, at the change's revision.
    assert_eq!(deleted["metadata"]["labels"]["watch-this"], "yes");
    assert_eq!(deleted["metadata"]["annotations"], before["metadata"]["annotations"]);
    assert_eq!(rv(&deleted), rv(&left));
    // Nothing while outside.
    touch(&s, ns, "cm", "2");
    w.expect_quiet(Duration::from_millis(300));
    let back = relabel(&s, ns, "cm", json!({"watch-this": "yes"}));
    assert_eq!(w.expect_event("ADDED", "cm"), back);
    let m = touch(&s, ns, "cm", "3");
    assert_eq!(w.expect_event("MODIFIED", "cm"), m);
    remove(&s, ns, "cm");
    assert_deleted(&w.expect_event("DELETED", "cm"), &m);
}

/// "should receive events on concurrent watches in same order": watches started at various
/// revisions see the same sequence from where they start.
#[test]
fn concurrent_watches_from_various_versions_agree() {
    let s = TestServer::start();
    s.namespace("consistency");
    let ns = "consistency";
    let start = rv(&create(&s, ns, "seed", json!({})));
    let mut watches = vec![(
        start,
        RawWatch::open(&s, &format!("{}?watch=true&resourceVersion={start}", vms(ns))),
    )];
    let ops = 60;
    for i in 0..ops {
        let name = format!("cm-{}", i % 6);
        if s.get(&vm_path(ns, &name)).status == 404 {
            create(&s, ns, &name, json!({}));
        } else if i % 3 == 2 {
            remove(&s, ns, &name);
        } else {
            touch(&s, ns, &name, &i.to_string());
        }
        if i % 15 == 7 {
            // Start another watch from the revision just written.
            let list = s.get(&format!("{}?limit=1", vms(ns))).json();
            let from: u64 = list["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
            watches.push((
                from,
                RawWatch::open(&s, &format!("{}?watch=true&resourceVersion={from}", vms(ns))),
            ));
        }
    }
    // Every write shows, once, in revision order.
    let full: Vec<(String, String, u64)> = watches[0].1.take(ops).iter().map(summary).collect();
    let revs: Vec<u64> = full.iter().map(|e| e.2).collect();
    s.assert_revisions_follow(start, &revs, "the first watch");
    watches[0].1.expect_quiet(Duration::from_millis(100));
    for (from, w) in &watches[1..] {
        let want: Vec<_> = full.iter().filter(|e| e.2 > *from).cloned().collect();
        let got: Vec<_> = w.take(want.len()).iter().map(summary).collect();
        assert_eq!(got, want, "watch from {from}");
        w.expect_quiet(Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------------------------------------
// crd_watch.go

/// Watches by `metadata.name` opened before the objects exist: each sees only its object.
#[test]
fn field_selector_watches_opened_before_the_objects() {
    let s = TestServer::start();
    s.namespace("crd-watch");
    let ns = "crd-watch";
    let w1 =
        RawWatch::open(&s, &format!("{}?watch=true&fieldSelector=metadata.name%3Dname1", vms(ns)));
    let w2 = RawWatch::open(
        &s,
        &format!(
            "{GROUP_V1}/watch/namespaces/{ns}/virtualmachines?fieldSelector=metadata.name%3Dname2"
        ),
    );
    let one = create(&s, ns, "name1", json!({}));
    assert!(!one["metadata"]["uid"].as_str().unwrap().is_empty());
    assert_eq!(one["apiVersion"], "kubevirt.io/v1");
    assert_eq!(one["kind"], "VirtualMachine");
    assert_eq!(w1.expect_event("ADDED", "name1"), one);
    let two = create(&s, ns, "name2", json!({}));
    assert_eq!(w2.expect_event("ADDED", "name2"), two);
    let r = s.patch(
        &vm_path(ns, "name1"),
        "application/json-patch+json",
        &json!([{"op": "add", "path": "/spec/runStrategy", "value": "Halted"}]),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let patched = w1.expect_event("MODIFIED", "name1");
    assert_eq!(patched["spec"]["runStrategy"], "Halted");
    remove(&s, ns, "name1");
    w1.expect_event("DELETED", "name1");
    remove(&s, ns, "name2");
    w2.expect_event("DELETED", "name2");
    w1.expect_quiet(Duration::from_millis(100));
    w2.expect_quiet(Duration::from_millis(100));
}

// ---------------------------------------------------------------------------------------------
// Start points, versions, limits, timeouts, bookmarks, the watch-list stream.

#[test]
fn synthetic_added_then_live_and_limit_continue_are_ignored() {
    let s = TestServer::start();
    s.namespace("start");
    let ns = "start";
    let a = create(&s, ns, "a", json!({}));
    let b = create(&s, ns, "b", json!({}));
    // An undecodable continue token and a limit mean nothing to a watch.
    for q in ["", "&resourceVersion=0", "&limit=1&continue=garbage"] {
        let w = RawWatch::open(&s, &format!("{}?watch=true{q}", vms(ns)));
        assert_eq!(w.expect_event("ADDED", "a"), a);
        assert_eq!(w.expect_event("ADDED", "b"), b);
        w.expect_quiet(Duration::from_millis(100));
    }
    // A single-item watch, both spellings.
    let mut a = a;
    for path in [
        format!("{}?watch=1", vm_path(ns, "a")),
        format!("{GROUP_V1}/watch/namespaces/{ns}/virtualmachines/a"),
    ] {
        let w = RawWatch::open(&s, &path);
        assert_eq!(w.expect_event("ADDED", "a"), a);
        a = touch(&s, ns, "a", &path);
        assert_eq!(w.expect_event("MODIFIED", "a"), a);
        touch(&s, ns, "b", &path);
        w.expect_quiet(Duration::from_millis(100));
    }
}

/// A watch through another version sees objects written through v1, in its own version.
#[test]
fn watch_through_every_version() {
    let s = server(&["--bookmark-interval", "300ms"]);
    for version in ["v1alpha3", "v1alpha2", "v1"] {
        let ns = &format!("versions-{version}");
        s.namespace(ns);
        let path = format!(
            "/apis/kubevirt.io/{version}/namespaces/{ns}/virtualmachines?watch=true&allowWatchBookmarks=true"
        );
        let w = RawWatch::open(&s, &path);
        let name = format!("through-{version}");
        let created = create(&s, ns, &name, json!({}));
        let ev = w.expect_event("ADDED", &name);
        assert_eq!(ev["apiVersion"], format!("kubevirt.io/{version}"));
        assert_eq!(ev["metadata"], created["metadata"]);
        let bookmark = loop {
            let ev = w.expect();
            if ev["type"] == "BOOKMARK" {
                break ev;
            }
        };
        assert_eq!(bookmark["object"]["apiVersion"], format!("kubevirt.io/{version}"));
        assert_eq!(bookmark["object"]["kind"], "VirtualMachine");
    }
}

#[test]
fn timeout_seconds_ends_the_stream_cleanly() {
    let s = TestServer::start();
    s.namespace("timeout");
    let ns = "timeout";
    create(&s, ns, "a", json!({}));
    let started = Instant::now();
    let w = RawWatch::open(&s, &format!("{}?watch=true&timeoutSeconds=1", vms(ns)));
    w.expect_event("ADDED", "a");
    // No ERROR, no bookmark (not asked for): the stream simply ends.
    w.expect_end(Duration::from_secs(5));
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(4), "{took:?}");
}

#[test]
fn periodic_bookmarks_carry_a_delivered_revision() {
    let s = server(&["--bookmark-interval", "400ms"]);
    let ns = "bookmarks";
    s.namespace(ns);
    s.namespace("elsewhere");
    let a = create(&s, ns, "a", json!({}));
    // Without allowWatchBookmarks: never.
    let plain = RawWatch::open(&s, &format!("{}?watch=true", vms(ns)));
    plain.expect_event("ADDED", "a");
    let w = RawWatch::open(&s, &format!("{}?watch=true&allowWatchBookmarks=true", vms(ns)));
    w.expect_event("ADDED", "a");
    let first = w.expect();
    assert_eq!(first["type"], "BOOKMARK");
    // Only apiVersion, kind and metadata.resourceVersion.
    assert_eq!(
        first["object"],
        json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
               "metadata": {"resourceVersion": rv(&a).to_string()}})
    );
    // Writes elsewhere move bookmarks on: everything up to them has been seen.
    let other = create(&s, "elsewhere", "x", json!({}));
    let bookmark = loop {
        let ev = w.expect();
        assert_eq!(ev["type"], "BOOKMARK", "{ev}");
        if rv(&ev["object"]) == rv(&other) {
            break ev;
        }
        assert!(rv(&ev["object"]) < rv(&other));
    };
    // A later event is newer than the bookmark, and bookmarks never go back.
    let m = touch(&s, ns, "a", "1");
    let mut last = rv(&bookmark["object"]);
    loop {
        let ev = w.expect();
        assert!(rv(&ev["object"]) >= last, "{ev}");
        last = rv(&ev["object"]);
        if ev["type"] == "MODIFIED" {
            assert_eq!(ev["object"], m);
            break;
        }
    }
    let plain_ev = plain.expect();
    assert_eq!(plain_ev["type"], "MODIFIED", "no bookmarks without allowWatchBookmarks");
    assert_eq!(plain_ev["object"], m);
    plain.expect_quiet(Duration::from_millis(500));
}

/// About 2 s before `timeoutSeconds` runs out, one last bookmark, even with a long interval.
#[test]
fn a_bookmark_comes_shortly_before_the_deadline() {
    let s = TestServer::start();
    s.namespace("deadline");
    let ns = "deadline";
    let a = create(&s, ns, "a", json!({}));
    let started = Instant::now();
    let w = RawWatch::open(
        &s,
        &format!("{}?watch=true&allowWatchBookmarks=true&timeoutSeconds=3", vms(ns)),
    );
    w.expect_event("ADDED", "a");
    let b = w.expect();
    let at = started.elapsed();
    assert_eq!(b["type"], "BOOKMARK");
    assert_eq!(rv(&b["object"]), rv(&a));
    assert!(at >= Duration::from_millis(800) && at < Duration::from_millis(2500), "{at:?}");
    w.expect_end(Duration::from_secs(4));
}

/// KEP-3157: the state as ADDED events, one end bookmark at the state's revision, then changes.
#[test]
fn watch_list_stream() {
    let s = TestServer::start();
    s.namespace("watch-list");
    let ns = "watch-list";
    create(&s, ns, "b", json!({"app": "x"}));
    create(&s, ns, "a", json!({"app": "x"}));
    create(&s, ns, "c", json!({"app": "y"}));
    let list = s.get(&vms(ns)).json();
    let list_rv: u64 = list["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    let q = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    for extra in ["", "&resourceVersion=0", "&resourceVersion=1"] {
        let w = RawWatch::open(&s, &format!("{}?{q}{extra}&labelSelector=app%3Dx", vms(ns)));
        assert_eq!(w.content_type, "application/json;stream=watch");
        w.expect_event("ADDED", "a");
        w.expect_event("ADDED", "b");
        let end = w.expect();
        assert_eq!(end["type"], "BOOKMARK", "{end}");
        let meta = &end["object"]["metadata"];
        assert_eq!(meta["resourceVersion"], list_rv.to_string(), "the state's revision");
        assert_eq!(meta["annotations"]["k8s.io/initial-events-end"], "true");
        let blueprint = meta["annotations"]["kubernetes.io/initial-events-list-blueprint"]
            .as_str()
            .expect("the list blueprint");
        assert!(!blueprint.is_empty());
        assert_eq!(end["object"]["apiVersion"], "kubevirt.io/v1");
        assert_eq!(end["object"]["kind"], "VirtualMachine");
        w.expect_quiet(Duration::from_millis(100));
    }
    // Then live events follow.
    let w = RawWatch::open(&s, &format!("{}?{q}", vms(ns)));
    let initial: Vec<_> = w.take(4).iter().map(summary).collect();
    assert_eq!(initial.iter().map(|e| e.1.as_str()).collect::<Vec<_>>(), ["a", "b", "c", ""]);
    assert_eq!(initial[3].0, "BOOKMARK");
    let d = create(&s, ns, "d", json!({}));
    assert_eq!(w.expect_event("ADDED", "d"), d);

    // Without allowWatchBookmarks: the state, but no end bookmark.
    let q2 = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan";
    let w = RawWatch::open(&s, &format!("{}?{q2}", vms(ns)));
    assert_eq!(w.take(4).iter().filter(|e| e["type"] == "ADDED").count(), 4);
    w.expect_quiet(Duration::from_millis(200));

    // sendInitialEvents=false: only what happens from now on.
    let q3 = "watch=true&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let w = RawWatch::open(&s, &format!("{}?{q3}", vms(ns)));
    let m = touch(&s, ns, "a", "1");
    assert_eq!(w.expect_event("MODIFIED", "a"), m);
}

#[test]
fn watch_list_validation_and_future_versions() {
    let s = TestServer::start();
    let ns = "watch-list-errors";
    let cases = [
        ("watch=true&sendInitialEvents=true", vec![
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ]),
        ("watch=true&resourceVersionMatch=NotOlderThan", vec![
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ]),
        ("watch=true&sendInitialEvents=true&resourceVersionMatch=Exact", vec![
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
            "resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"",
        ]),
        ("sendInitialEvents=true", vec!["sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list"]),
        ("sendInitialEvents=false&resourceVersionMatch=NotOlderThan&resourceVersion=1", vec![
            "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list",
        ]),
    ];
    for (q, messages) in cases {
        let r = s.get(&format!("{}?{q}", vms(ns)));
        assert_eq!(r.status, 422, "{q}: {}", r.text());
        let st = r.json();
        assert_eq!(st["reason"], "Invalid");
        let message = st["message"].as_str().unwrap();
        assert!(message.starts_with("ListOptions.meta.k8s.io \"\" is invalid: "), "{message}");
        for m in &messages {
            assert!(message.contains(m), "{q}: {message}");
        }
        assert_eq!(st["details"]["causes"].as_array().unwrap().len(), messages.len(), "{st}");
    }
    // A state not older than a revision the store has not reached: 504 after about 3 s.
    let ahead =
        s.current_rv(crate::common::preferred("kubevirt.io", "virtualmachines")) + 1_000_000;
    let started = Instant::now();
    let r = s.get(&format!(
        "{}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion={ahead}",
        vms(ns)
    ));
    assert_eq!(r.status, 504, "{}", r.text());
    assert_eq!(r.json()["reason"], "Timeout");
    assert!(started.elapsed() >= Duration::from_secs(2));
}

// ---------------------------------------------------------------------------------------------
// History, slow watchers, disconnects.

#[test]
fn watch_from_a_compacted_version_is_one_410_error() {
    let s = compacting(&[
        "--history-window",
        "1s",
        "--compaction-min-retain",
        "5",
        "--compaction-interval",
        "100ms",
    ]);
    let ns = "expired";
    s.namespace(ns);
    let first = create(&s, ns, "a", json!({}));
    for i in 0..20 {
        touch(&s, ns, "a", &i.to_string());
    }
    // Once the window has passed, history before the newest 5 revisions is gone.
    let path = format!("{}?watch=true&resourceVersion={}", vms(ns), rv(&first));
    let err = eventually(Duration::from_secs(10), || {
        let w = RawWatch::open(&s, &path);
        let ev = w.expect();
        (ev["type"] == "ERROR").then(|| {
            w.expect_end(Duration::from_secs(5));
            ev
        })
    });
    let status = &err["object"];
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["code"], 410);
    assert_eq!(status["reason"], "Expired");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.starts_with(&format!("too old resource version: {} (", rv(&first))),
        "{message}"
    );
}

/// A client that stops reading is cut off once its queue overflows, while other watchers and
/// the writers carry on; when it reads again it finds a 410 and the end.
#[test]
fn a_slow_watcher_is_ended_while_others_keep_going() {
    let s = server(&["--watch-queue-bytes", "1000000"]);
    let ns = "slow";
    s.namespace(ns);
    let base = metric(&s, "apiserver_registered_watchers");
    let mut slow = RawWatch::open_paused(&s, &format!("{}?watch=true", vms(ns)));
    let fast = RawWatch::open(&s, &format!("{}?watch=true", vms(ns)));
    eventually(Duration::from_secs(5), || {
        (metric(&s, "apiserver_registered_watchers") == base + 2).then_some(())
    });
    // About 40 MB of events: more than the socket buffers plus the 1 MB queue can hold.
    let pad = "x".repeat(400_000);
    let started = Instant::now();
    let mut revs = Vec::new();
    for i in 0..100 {
        let mut obj = vm(&format!("big-{i:03}"), json!({}));
        obj["spec"]["template"]["metadata"] = json!({"annotations": {"pad": pad}});
        let r = s.post(&vms(ns), &obj);
        assert_eq!(r.status, 201, "{}", r.text());
        revs.push(rv(&r.json()));
        // The fast watcher keeps up and sees every event.
        assert_eq!(rv(&fast.expect_event("ADDED", &format!("big-{i:03}"))), revs[i]);
    }
    let writing = started.elapsed();
    assert!(writing < Duration::from_secs(60), "writers were held up: {writing:?}");
    assert_eq!(metric(&s, "apiserver_terminated_watchers_total"), 1);
    assert_eq!(metric(&s, "apiserver_registered_watchers"), base + 1);

    // Reading again: what was already on its way, then one 410, then the end.
    slow.resume();
    let mut got = 0;
    let err = loop {
        let ev = slow.expect();
        if ev["type"] != "ADDED" {
            break ev;
        }
        assert_eq!(rv(&ev["object"]), revs[got], "in order, none skipped before the error");
        got += 1;
    };
    assert!(got < revs.len(), "the slow watcher must not have received everything");
    assert_eq!(err["type"], "ERROR");
    assert_eq!(err["object"]["code"], 410);
    assert_eq!(err["object"]["reason"], "Expired");
    slow.expect_end(Duration::from_secs(5));
    // And the server still serves.
    let later = create(&s, ns, "after", json!({}));
    assert_eq!(fast.expect_event("ADDED", "after"), later);
}

/// Watches whose clients go away leave nothing registered behind, idle or busy.
#[test]
fn dropped_watches_leave_nothing_behind() {
    let s = TestServer::start();
    s.namespace("drops");
    let ns = "drops";
    let a = rv(&create(&s, ns, "a", json!({})));
    let base = metric(&s, "apiserver_registered_watchers");
    let mut watches: Vec<RawWatch> = (0..60)
        .map(|i| {
            let q = match i % 3 {
                0 => "watch=true".to_string(),
                1 => format!("watch=true&allowWatchBookmarks=true&resourceVersion={a}"),
                _ => "watch=true&labelSelector=x%3Dy".to_string(),
            };
            RawWatch::open(&s, &format!("{}?{q}", vms(ns)))
        })
        .collect();
    eventually(Duration::from_secs(10), || {
        (metric(&s, "apiserver_registered_watchers") == base + 60).then_some(())
    });
    // Half go away while idle, the rest while events flow.
    watches.truncate(30);
    touch(&s, ns, "a", "1");
    drop(watches);
    touch(&s, ns, "a", "2");
    eventually(Duration::from_secs(10), || {
        (metric(&s, "apiserver_registered_watchers") == base).then_some(())
    });
    assert_eq!(metric(&s, "apiserver_terminated_watchers_total"), 0);
    let w = RawWatch::open(&s, &format!("{}?watch=true", vms(ns)));
    w.expect_event("ADDED", "a");
}

// ---------------------------------------------------------------------------------------------
// Several writers and watchers at once, checked against the revision log in the database.

/// One row of the store's log, read from the database file.
struct LogRow {
    rev: u64,
    key: String,
    created: bool,
    deleted: bool,
    prev_rev: u64,
    value: Value,
}

fn read_log(db: &std::path::Path) -> BTreeMap<u64, LogRow> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the database read-only");
    let mut stmt =
        conn.prepare("SELECT rev, key, created, deleted, prev_rev, value FROM log").unwrap();
    let rows = stmt
        .query_map([], |r| {
            let value: Vec<u8> = r.get(5)?;
            Ok(LogRow {
                rev: r.get(0)?,
                key: r.get(1)?,
                created: r.get(2)?,
                deleted: r.get(3)?,
                prev_rev: r.get(4)?,
                value: serde_json::from_slice(&value).unwrap(),
            })
        })
        .unwrap();
    rows.map(|r| r.unwrap()).map(|r| (r.rev, r)).collect()
}

/// The same log from etcd's history: the VirtualMachine keys' events from `from` (etcdctl's watch
/// with previous values) up to the creation of `last` (`<namespace>/<name>`), which ends it.
fn read_etcd_log(s: &TestServer, from: u64, last: &str) -> BTreeMap<u64, LogRow> {
    use base64::Engine;
    let (prefix, url) = (s.etcd_prefix.as_deref().unwrap(), s.etcd_url.as_deref().unwrap());
    let vms = format!("{prefix}/kubevirt.io/virtualmachines/");
    let mut child = etcdctl_command(url)
        .args(["watch", "--prefix", &vms, "--prev-kv", "-w", "json"])
        .arg(format!("--rev={from}"))
        .stdout(Stdio::piped())
        .spawn()
        .expect("etcdctl is needed (Debian: apt-get install etcd-client)");
    let lines = BufReader::new(child.stdout.take().expect("etcdctl's stdout"));
    let _watch = KillOnDrop(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in lines.lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let text = |v: &Value| base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap());
    let mut log = BTreeMap::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    'read: loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line =
            rx.recv_timeout(left).unwrap_or_else(|_| panic!("etcd's log never reached {last}"));
        let resp: Value = serde_json::from_str(&line).unwrap();
        for ev in resp["Events"].as_array().into_iter().flatten() {
            let (kv, prev) = (&ev["kv"], &ev["prev_kv"]);
            let key = String::from_utf8(text(&kv["key"]).unwrap()).unwrap();
            let deleted = ev["type"] == 1;
            let rev = kv["mod_revision"].as_u64().unwrap();
            let value = if deleted { &prev["value"] } else { &kv["value"] };
            let row = LogRow {
                rev,
                key: key.strip_prefix(&format!("{prefix}/")).unwrap().to_owned(),
                created: !deleted && kv["create_revision"] == kv["mod_revision"],
                deleted,
                prev_rev: prev["mod_revision"].as_u64().unwrap_or(0),
                value: serde_json::from_slice(&text(value).unwrap()).unwrap(),
            };
            log.insert(rev, row);
            if key.ends_with(&format!("/{last}")) {
                break 'read;
            }
        }
    }
    log
}

/// What a watch of `prefix` from `from` with `matches` must deliver, by kube's transitions.
fn expected_events(
    log: &BTreeMap<u64, LogRow>,
    prefix: &str,
    from: u64,
    matches: &dyn Fn(&Value) -> bool,
) -> Vec<(String, String, u64)> {
    let mut out = Vec::new();
    for row in log.range(from + 1..).map(|(_, r)| r) {
        if !row.key.starts_with(prefix) {
            continue;
        }
        let name = name_of(&row.value).to_owned();
        let now = matches(&row.value);
        let kind = if row.created {
            now.then_some("ADDED")
        } else if row.deleted {
            now.then_some("DELETED")
        } else {
            let before = matches(&log[&row.prev_rev].value);
            match (before, now) {
                (false, true) => Some("ADDED"),
                (true, true) => Some("MODIFIED"),
                (true, false) => Some("DELETED"),
                (false, false) => None,
            }
        };
        if let Some(kind) = kind {
            out.push((kind.to_owned(), name, row.rev));
        }
    }
    out
}

#[test]
fn concurrent_writers_and_watchers_match_the_revision_log() {
    let s = TestServer::start();
    s.namespace("concurrent");
    let ns = "concurrent";
    let from = rv(&create(&s, ns, "seed", json!({"team": "a"})));
    type Matcher = Box<dyn Fn(&Value) -> bool>;
    let selectors: Vec<(&str, Matcher)> = vec![
        ("", Box::new(|_| true)),
        ("&labelSelector=team%3Da", Box::new(|o| has_team(o, "a"))),
        ("&labelSelector=team%3Db", Box::new(|o| has_team(o, "b"))),
        ("&labelSelector=team+notin+(a)", Box::new(|o| !has_team(o, "a"))),
    ];
    let watches: Vec<RawWatch> = selectors
        .iter()
        .map(|(q, _)| {
            RawWatch::open(&s, &format!("{}?watch=true&resourceVersion={from}{q}", vms(ns)))
        })
        .collect();
    // Plus watches of every namespace, one of them from "now" (a synthetic start).
    let cluster = RawWatch::open(
        &s,
        &format!(
            "{GROUP_V1}/virtualmachines?watch=true&resourceVersion={from}&labelSelector=team%3Db"
        ),
    );

    let writers: Vec<_> = (0..4)
        .map(|w| {
            let base = s.base.clone();
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(30)).build();
                let url = |p: &str| format!("{base}{p}");
                let mut x: u64 = 0x9e3779b97f4a7c15 ^ w;
                let mut next = || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                for _ in 0..60 {
                    let name = format!("w{w}-k{}", next() % 5);
                    let team = ["a", "b", "c"][(next() % 3) as usize];
                    let path = vm_path(ns, &name);
                    let exists = agent.get(&url(&path)).call().is_ok();
                    let result = match (exists, next() % 4) {
                        (false, _) => {
                            agent.post(&url(&vms(ns))).send_json(vm(&name, json!({"team": team})))
                        }
                        (true, 0) => agent.delete(&url(&path)).call(),
                        (true, _) => agent
                            .request("PATCH", &url(&path))
                            .set("Content-Type", "application/merge-patch+json")
                            .send_string(
                                &json!({"metadata": {"labels": {"team": team}}}).to_string(),
                            ),
                    };
                    result.unwrap_or_else(|e| panic!("writer {w}: {e}"));
                }
            })
        })
        .collect();
    // A watcher that joins midway, from the then-current revision.
    std::thread::sleep(Duration::from_millis(100));
    let midway = s.get(&vms(ns)).json()["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse::<u64>()
        .unwrap();
    let late = RawWatch::open(&s, &format!("{}?watch=true&resourceVersion={midway}", vms(ns)));
    for w in writers {
        w.join().unwrap();
    }

    // The end of the log to compare with: a write after all the others, outside every watch.
    s.namespace("concurrent-end");
    create(&s, "concurrent-end", "last", json!({}));
    let log = match s.gap_free() {
        true => read_log(&s.db),
        false => read_etcd_log(&s, from, "concurrent-end/last"),
    };
    let prefix = format!("kubevirt.io/virtualmachines/{ns}/");
    for ((q, matches), w) in selectors.iter().zip(&watches) {
        let want = expected_events(&log, &prefix, from, matches.as_ref());
        let got: Vec<_> = w.take(want.len()).iter().map(summary).collect();
        assert_eq!(got, want, "watch with {q:?}");
        w.expect_quiet(Duration::from_millis(100));
    }
    let want = expected_events(&log, "kubevirt.io/virtualmachines/", from, &|o| has_team(o, "b"));
    assert_eq!(cluster.take(want.len()).iter().map(summary).collect::<Vec<_>>(), want);
    let want = expected_events(&log, &prefix, midway, &|_| true);
    assert_eq!(late.take(want.len()).iter().map(summary).collect::<Vec<_>>(), want);
    late.expect_quiet(Duration::from_millis(100));
}

// ---------------------------------------------------------------------------------------------
// kubectl (B.5): `get -w`, `get NAME -w` and `wait --for=delete`.

/// Starts kubectl; its stdout lines arrive on the receiver.
fn spawn(k: &Kubectl, args: &[&str]) -> (KillOnDrop, mpsc::Receiver<String>) {
    let mut child = k
        .command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start kubectl");
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    (KillOnDrop(child), rx)
}

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits for a line containing `needle`.
fn line_with(rx: &mpsc::Receiver<String>, needle: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(l) if l.contains(needle) => return l,
            Ok(_) => {}
            Err(e) => panic!("kubectl printed no line with {needle:?}: {e}"),
        }
    }
}

#[test]
fn kubectl_get_watch_shows_later_changes() {
    let s = TestServer::start();
    s.namespace("kubectl-watch");
    let ns = "kubectl-watch";
    create(&s, ns, "first", json!({}));
    let k = Kubectl::in_namespace(&s, ns);
    let (_list_watch, all) = spawn(&k, &["get", "vm", "-w"]);
    line_with(&all, "first");
    let (_item_watch, one) = spawn(&k, &["get", "vm", "first", "-w"]);
    line_with(&one, "first");
    // Give both watches time to be established before changing things.
    eventually(Duration::from_secs(20), || {
        (metric(&s, "apiserver_registered_watchers") >= 2).then_some(())
    });
    create(&s, ns, "second", json!({}));
    line_with(&all, "second");
    touch(&s, ns, "first", "1");
    line_with(&all, "first");
    // `get NAME -w` discards the synthetic ADDED and prints the real change.
    line_with(&one, "first");
}

#[test]
fn kubectl_wait_for_delete_returns_when_the_object_goes() {
    let s = TestServer::start();
    s.namespace("kubectl-wait");
    let ns = "kubectl-wait";
    create(&s, ns, "doomed", json!({}));
    let k = Kubectl::in_namespace(&s, ns);
    let mut wait = k
        .command(&["wait", "--for=delete", "vm/doomed", "--timeout=60s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kubectl wait");
    eventually(Duration::from_secs(20), || {
        (metric(&s, "apiserver_registered_watchers") >= 1).then_some(())
    });
    assert!(wait.try_wait().unwrap().is_none(), "kubectl wait returned before the delete");
    let deleted_at = Instant::now();
    remove(&s, ns, "doomed");
    let status = loop {
        if let Some(st) = wait.try_wait().unwrap() {
            break st;
        }
        assert!(deleted_at.elapsed() < Duration::from_secs(20), "kubectl wait did not return");
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut out = String::new();
    wait.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let mut err = String::new();
    wait.stderr.take().unwrap().read_to_string(&mut err).unwrap();
    assert!(status.success(), "kubectl wait failed: {out}{err}");
    assert!(out.contains("doomed"), "{out}");
}
