//! Health endpoints, the store write probe under a held database lock or a silent etcd (A.16),
//! and durability across a restart (A.6).

use std::time::Duration;

use serde_json::json;

use crate::common::*;
use virt_apiserver::resource::ResourceInfo;

fn vm() -> &'static ResourceInfo {
    resource("kubevirt.io", "v1", "virtualmachines")
}

const PROBE: &str = "/apis/kubevirt.io/v1alpha2/healthz";

#[test]
fn health_endpoints() {
    let s = TestServer::start();
    for path in ["/healthz", "/livez", "/readyz"] {
        let r = s.get(path);
        assert_eq!(r.status, 200, "{path}");
        assert_eq!(r.text(), "ok", "{path}");
    }
    let r = s.get(PROBE);
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty(), "the probe answers no body: {:?}", r.text());
}

#[test]
fn probe_fails_while_the_database_is_locked() {
    let s = TestServer::start_with(ServerOptions { sqlite: true, ..Default::default() });
    s.namespace("after-lock");
    assert_eq!(s.get(PROBE).status, 200);
    let conn = rusqlite::Connection::open(&s.db).expect("open the database file");
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn.execute_batch("BEGIN EXCLUSIVE").expect("take the write lock");
    let failed = eventually(Duration::from_secs(3), || {
        let r = s.get(PROBE);
        (r.status == 500).then_some(r)
    });
    assert!(failed.body.is_empty(), "no body on 500: {:?}", failed.text());
    // The process itself is still alive.
    assert_eq!(s.get("/healthz").status, 200);
    conn.execute_batch("ROLLBACK").expect("release the lock");
    drop(conn);
    eventually(Duration::from_secs(10), || (s.get(PROBE).status == 200).then_some(()));
    // And writes work again.
    s.create(vm(), &object(vm(), "after-lock", "ok"));
}

/// The etcd equivalent: the probe fails while etcd does not answer, the process stays up, and
/// both recover when etcd does.
#[test]
fn probe_fails_while_etcd_does_not_answer() {
    let etcd = TestEtcd::private();
    let prefix = etcd.unique_prefix();
    let s = TestServer::start_with(ServerOptions::on_etcd(&etcd.url, &prefix));
    s.namespace("after-pause");
    assert_eq!(s.get(PROBE).status, 200);
    etcd.pause();
    // The first probe may have been under way before etcd stopped: the next ones fail.
    let mut seen = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let failed = loop {
        let r = s.get(PROBE);
        if r.status == 500 || std::time::Instant::now() > deadline {
            break r;
        }
        seen.push(r.status);
    };
    let alive = s.get("/livez").status;
    etcd.resume();
    assert_eq!(failed.status, 500, "{} after {seen:?}", failed.text());
    assert!(failed.body.is_empty(), "no body on 500: {:?}", failed.text());
    assert_eq!(alive, 200, "the process itself is still alive");
    eventually(Duration::from_secs(30), || (s.get(PROBE).status == 200).then_some(()));
    s.create(vm(), &object(vm(), "after-pause", "ok"));
}

#[test]
fn data_and_revisions_survive_a_restart() {
    let s = TestServer::start();
    s.namespace("durable");
    let ns = "durable";
    let a = s.create(vm(), &labelled(vm(), ns, "a", json!({"k": "v"})));
    s.create(vm(), &object(vm(), ns, "b"));
    assert_eq!(s.delete(&item_path(vm(), ns, "b")).status, 200);
    let r = s.patch(
        &item_path(vm(), ns, "a"),
        "application/merge-patch+json",
        &json!({"spec": {"running": false}}),
    );
    assert_eq!(r.status, 200);
    let a2 = r.json();
    assert!(rv(&a2) > rv(&a));
    let before = s.current_rv(vm());

    let (db, _dir) = s.kill();
    let s = TestServer::start_with(ServerOptions { db: Some(db), ..Default::default() });
    assert_eq!(s.get_json(&item_path(vm(), ns, "a")), a2, "the object survived unchanged");
    assert_eq!(s.get(&item_path(vm(), ns, "b")).status, 404);
    let after = s.current_rv(vm());
    let c = s.create(vm(), &object(vm(), ns, "c"));
    if s.gap_free() {
        assert_eq!(after, before, "the revision counter survived");
        assert_eq!(rv(&c), before + 1, "revisions continue without a gap");
    } else {
        // etcd's revision is the cluster's: the restart's own bookkeeping moves it.
        assert!(after >= before, "the revision counter survived: {after} < {before}");
        assert!(rv(&c) > after, "revisions go on increasing");
    }
    // History survives too: a watch from an old revision replays what followed it.
    let w = s.watch(&format!(
        "{}?watch=true&resourceVersion={}",
        collection_path(vm(), Some(ns)),
        rv(&a)
    ));
    next_event(&w, "ADDED", "b");
    next_event(&w, "DELETED", "b");
    assert_eq!(next_event(&w, "MODIFIED", "a"), a2);
    assert_eq!(next_event(&w, "ADDED", "c"), c);
}
