//! Each action as a client meets it: a Status exactly as kube writes the error (its own reason
//! from the code when none is given, Retry-After and retryAfterSeconds, causes), a delay, a
//! dropped connection, a watch answered 410; kubectl's retry of a 429 after its Retry-After.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;

use super::{create_cm, fault};
use crate::common::{assert_status, eventually, Kubectl, ServerOptions, TestServer};

#[test]
fn a_status_fault_answers_as_kube_writes_the_error() {
    let s = TestServer::start();
    s.namespace("a");
    // No reason: the code's own, as apimachinery's NewGenericServerResponse gives it (409 to a
    // POST is AlreadyExists), its message naming the request.
    fault(
        &s,
        "a-conflict",
        json!({"match": {"verbs": ["create"], "names": []},
                                   "times": 1, "action": {"status": {"code": 409}}}),
    );
    assert_eq!(create_cm(&s, "a", "x").status, 201, "names: [] matches no name");
    s.delete("/apis/testing.virt-apiserver.io/v1alpha1/faults/a-conflict");
    fault(
        &s,
        "b-conflict",
        json!({"match": {"verbs": ["create"], "resources": ["configmaps"]},
                                   "times": 1, "action": {"status": {"code": 409}}}),
    );
    let st = assert_status(&create_cm(&s, "a", "y"), 409, "AlreadyExists");
    assert_eq!(
        st["message"], "the server reported a conflict (post configmaps)",
        "errors.go NewGenericServerResponse: {st}"
    );
    assert_eq!(st["status"], "Failure");
    assert_eq!(st["details"]["kind"], "configmaps", "{st}");
    assert_eq!(create_cm(&s, "a", "y").status, 201, "times: 1");

    // A 429 with its Retry-After header and details.retryAfterSeconds, causes as given.
    fault(
        &s,
        "c-throttle",
        json!({"match": {"verbs": ["get"], "names": ["x"]},
        "action": {"status": {"code": 429, "message": "slow down", "retryAfterSeconds": 3,
                              "causes": [{"reason": "FieldValueInvalid", "message": "m",
                                          "field": "f"}]}}}),
    );
    let r = s.get("/api/v1/namespaces/a/configmaps/x");
    let st = assert_status(&r, 429, "TooManyRequests");
    assert_eq!(r.header("Retry-After"), Some("3"));
    assert_eq!(st["message"], "slow down");
    assert_eq!(st["details"]["retryAfterSeconds"], 3);
    assert_eq!(st["details"]["name"], "x");
    assert_eq!(
        st["details"]["causes"],
        json!([{"reason": "FieldValueInvalid", "message": "m",
                                                 "field": "f"}])
    );
    // A 503 and a 500 as kube's reasons have them.
    fault(
        &s,
        "d-unavailable",
        json!({"match": {"verbs": ["list"]},
                                      "action": {"status": {"code": 503}}}),
    );
    assert_status(&s.get("/api/v1/namespaces/a/configmaps"), 503, "ServiceUnavailable");
}

#[test]
fn each_firing_is_logged_with_the_requests_audit_id() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let opts = ServerOptions { stderr: Some(log.clone()), ..Default::default() };
    let s = TestServer::start_with(opts);
    fault(&s, "logged", json!({"match": {"verbs": ["list"]}, "action": {"status": {"code": 409}}}));
    let r = s.get("/api/v1/namespaces/default/configmaps");
    assert_eq!(r.status, 409);
    let id = r.header("Audit-Id").expect("an Audit-Id").to_string();
    let line = eventually(Duration::from_secs(5), || {
        let text = std::fs::read_to_string(&log).ok()?;
        text.lines().find(|l| l.contains("fault \"logged\" fired")).map(str::to_string)
    });
    assert!(line.contains(&format!("(Audit-Id {id})")), "{line}");
}

#[test]
fn kubectl_retries_a_429_after_its_retry_after() {
    let s = TestServer::start();
    let k = Kubectl::new(&s);
    fault(
        &s,
        "throttle",
        json!({"match": {"verbs": ["create"], "resources": ["configmaps"]},
        "times": 1, "action": {"status": {"code": 429, "retryAfterSeconds": 1}}}),
    );
    // client-go retries a 429 that carries Retry-After (rest/request.go checkWait), after it.
    let started = Instant::now();
    k.ok(&["create", "configmap", "retried"]);
    assert!(started.elapsed() >= Duration::from_secs(1), "{:?}", started.elapsed());
    let f = s.get_json("/apis/testing.virt-apiserver.io/v1alpha1/faults/throttle");
    assert!(f["metadata"]["name"] == "throttle");
    assert_eq!(s.get("/api/v1/namespaces/default/configmaps/retried").status, 200);
}

#[test]
fn a_delay_holds_the_answer_then_gives_it() {
    let s = TestServer::start();
    let path = "/api/v1/namespaces/default/configmaps";
    assert_eq!(create_cm(&s, "default", "slow").status, 201);
    fault(
        &s,
        "slow",
        json!({"match": {"verbs": ["get"], "names": ["slow"]},
                             "action": {"delay": {"duration": "600ms", "jitter": "100ms"}}}),
    );
    let started = Instant::now();
    let r = s.get(&format!("{path}/slow"));
    let took = started.elapsed();
    assert_eq!(r.status, 200, "the real answer after the delay");
    assert!(took >= Duration::from_millis(600), "{took:?}");
    assert!(took < Duration::from_millis(3000), "{took:?}");
    let started = Instant::now();
    assert_eq!(s.get(path).status, 200);
    assert!(started.elapsed() < Duration::from_millis(600), "a list is not delayed");
}

/// A GET over a raw connection: everything the server sent before it closed.
fn raw_get(s: &TestServer, path: &str) -> Vec<u8> {
    let addr = s.base.trim_start_matches("http://");
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(c, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = Vec::new();
    let _ = c.read_to_end(&mut out);
    out
}

#[test]
fn a_drop_closes_the_connection_with_no_answer() {
    let s = TestServer::start();
    let path = "/api/v1/namespaces/default/configmaps/gone";
    fault(&s, "drop", json!({"match": {"names": ["gone"]}, "times": 1, "action": {"drop": {}}}));
    assert_eq!(raw_get(&s, path), b"", "not a byte of an answer");
    let answer = String::from_utf8(raw_get(&s, path)).unwrap();
    assert!(answer.starts_with("HTTP/1.1 404"), "times: 1 — {answer}");
}

#[test]
fn an_expired_cut_answers_the_watch_with_410() {
    let s = TestServer::start();
    fault(
        &s,
        "expire",
        json!({"match": {"verbs": ["watch"], "resources": ["configmaps"]},
                               "times": 1, "action": {"watch": {"cut": "expired"}}}),
    );
    let path = "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=1";
    let st = assert_status(&s.get(path), 410, "Expired");
    assert_eq!(st["message"], "too old resource version");
    // kubectl's watch (a list, then a watch) meets it and fails as on kube.
    let k = Kubectl::new(&s);
    fault(
        &s,
        "expire-again",
        json!({"match": {"verbs": ["watch"]},
                                     "action": {"watch": {"cut": "expired"}}}),
    );
    let err = k.fails(&["get", "configmaps", "--watch", "--request-timeout=5s"]);
    assert!(err.contains("too old resource version"), "{err}");
}

/// A watch of the default namespace's ConfigMaps from now on.
fn watch_from_now(s: &TestServer) -> crate::common::Watch {
    let list = s.get_json("/api/v1/namespaces/default/configmaps");
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    s.watch(&format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}"))
}

#[test]
fn an_end_cut_closes_the_watch_cleanly_after_its_events() {
    let s = TestServer::start();
    fault(
        &s,
        "end",
        json!({"match": {"verbs": ["watch"]}, "times": 1,
                            "action": {"watch": {"cut": "end", "afterEvents": 2}}}),
    );
    // A cut fires only on watches: the list before it is answered.
    let w = watch_from_now(&s);
    for n in ["a", "b", "c"] {
        assert_eq!(create_cm(&s, "default", n).status, 201);
    }
    assert_eq!(w.expect_event("ADDED", "a")["type"], "ADDED");
    assert_eq!(w.expect()["object"]["metadata"]["name"], "b");
    assert!(w.ends_within(Duration::from_secs(5)), "the stream ends after two events");
    // times: 1 — the next watch is whole.
    let w = watch_from_now(&s);
    for n in ["d", "e", "f"] {
        assert_eq!(create_cm(&s, "default", n).status, 201);
    }
    for n in ["d", "e", "f"] {
        w.expect_event("ADDED", n);
    }
}

#[test]
fn an_error_event_cut_sends_a_410_status_then_ends() {
    let s = TestServer::start();
    fault(
        &s,
        "gone",
        json!({"match": {"verbs": ["watch"], "resources": ["configmaps"]},
                             "action": {"watch": {"cut": "errorEvent", "afterEvents": 1}}}),
    );
    let w = watch_from_now(&s);
    assert_eq!(create_cm(&s, "default", "a").status, 201);
    assert_eq!(create_cm(&s, "default", "b").status, 201);
    w.expect_event("ADDED", "a");
    let ev = w.expect();
    assert_eq!(ev["type"], "ERROR", "{ev}");
    assert_eq!(ev["object"]["kind"], "Status");
    assert_eq!(ev["object"]["code"], 410);
    assert_eq!(ev["object"]["reason"], "Expired");
    assert!(w.ends_within(Duration::from_secs(5)));
}

#[test]
fn a_goaway_cut_ends_the_connection_with_the_watch_unfinished() {
    let s = TestServer::start();
    fault(
        &s,
        "goaway",
        json!({"match": {"verbs": ["watch"]}, "times": 1,
                               "action": {"watch": {"cut": "goaway", "afterEvents": 1}}}),
    );
    let list = s.get_json("/api/v1/namespaces/default/configmaps");
    let rv = list["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let path = format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}");
    let addr = s.base.trim_start_matches("http://").to_string();
    let reader = std::thread::spawn(move || {
        let mut c = TcpStream::connect(&addr).unwrap();
        c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(c, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut out = Vec::new();
        let _ = c.read_to_end(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    });
    // Sent until the reader's watch has its first event and is cut.
    let answer = loop {
        for n in ["a", "b"] {
            let _ = create_cm(&s, "default", n);
        }
        if reader.is_finished() {
            break reader.join().unwrap();
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#""type":"ADDED""#), "the event before the cut: {answer}");
    // Chunked transfer ends with a zero-length chunk; an aborted response never sends it.
    assert!(!answer.ends_with("0\r\n\r\n"), "the response is unfinished: {answer:?}");
    assert_eq!(answer.matches(r#""type":"#).count(), 1, "{answer}");
}

#[test]
fn a_stale_fault_answers_gets_and_lists_from_older_revisions() {
    // The revisions below are counted: on the etcd axis, an etcd no other server writes to.
    let s = TestServer::start_with(ServerOptions { private_etcd: true, ..Default::default() });
    let path = "/api/v1/namespaces/default/configmaps/aging";
    let lagging = format!("{}/lagging", super::FAULTS);
    let body = |v: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "aging"}, "data": {"v": v}})
    };
    fault(
        &s,
        "lagging",
        json!({"match": {"resources": ["configmaps"]}, "action": {"stale": {"revisionsBehind": 2}}}),
    );
    // Writes are not faulted: three versions at three revisions.
    let r = s.post("/api/v1/namespaces/default/configmaps", &body("1"));
    assert_eq!(r.status, 201);
    let rv = |o: &serde_json::Value| -> u64 {
        o["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
    };
    let first = rv(&r.json());
    for v in ["2", "3"] {
        let r = s.patch(path, "application/merge-patch+json", &json!({"data": {"v": v}}));
        assert_eq!(r.status, 200, "{}", r.text());
    }
    // Each firing's count is written to the Fault's status, a revision of its own, within a
    // second: waiting for it keeps the revisions below known.
    let fired = |n: u64| {
        eventually(Duration::from_secs(5), || {
            (s.get_json(&lagging)["status"]["fired"] == n).then_some(())
        });
    };
    // Two revisions back from the third version's: the first, with its resourceVersion.
    let old = s.get_json(path);
    assert_eq!(old["data"]["v"], "1", "{old}");
    assert_eq!(rv(&old), first);
    fired(1);
    let k = Kubectl::new(&s);
    let shown = k.ok(&["get", "configmap", "aging", "-o", "jsonpath={.data.v}"]);
    assert_eq!(shown, "2", "two back from the status write: the second version");
    fired(2);
    assert_eq!(create_cm(&s, "default", "newer").status, 201);
    let list = s.get_json("/api/v1/namespaces/default/configmaps");
    assert_eq!(rv(&list), first + 3, "{list}");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"aging") && !names.contains(&"newer"), "not made yet: {names:?}");
    fired(3);
    assert_status(&s.get("/api/v1/namespaces/default/configmaps/newer"), 404, "NotFound");
    // Deleted, the fault is gone: reads are current again.
    assert_eq!(s.delete(&lagging).status, 200);
    assert_eq!(s.get_json(path)["data"]["v"], "3");
    assert_eq!(
        s.get_json("/api/v1/namespaces/default/configmaps/newer")["metadata"]["name"],
        "newer"
    );
    let bad = json!({"apiVersion": "testing.virt-apiserver.io/v1alpha1", "kind": "Fault",
                     "metadata": {"name": "nowhere"},
                     "spec": {"action": {"stale": {"revisionsBehind": 0}}}});
    let st = assert_status(&s.post(super::FAULTS, &bad), 422, "Invalid");
    assert_eq!(st["details"]["causes"][0]["field"], "spec.action.stale.revisionsBehind", "{st}");
}
