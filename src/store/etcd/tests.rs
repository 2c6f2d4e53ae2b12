//! The etcd backend with values another writer put: what kube-apiserver and `etcdctl` leave in
//! etcd, read through every path a value takes into the shared layer.

use std::process::Command;

use serde_json::{json, Value};

use super::keys::Keys;
use crate::store::contract_tests::{Backing, EtcdPrefix};
use crate::store::etcd::harness::TestEtcd;
use crate::store::{EventType, ListRequest};

/// Runs etcdctl with `args` against the test etcd; its stdout.
fn etcdctl(args: &[&str]) -> Vec<u8> {
    let out = Command::new("etcdctl")
        .env("ETCDCTL_API", "3")
        .args(["--endpoints", &TestEtcd::shared().url])
        .args(args)
        .output()
        .expect("etcdctl is needed (Debian: etcd-client)");
    assert!(out.status.success(), "etcdctl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// Puts `value` under `key`, as another writer; its revision.
fn put(key: &str, value: &str) -> u64 {
    let answer: Value =
        serde_json::from_slice(&etcdctl(&["put", key, value, "-w", "json"])).unwrap();
    answer["header"]["revision"].as_u64().unwrap_or_else(|| panic!("{answer}"))
}

/// Asserts `served` is `obj` at `rev` as this server encodes it: compact, keys sorted.
fn assert_served(served: &[u8], rev: u64, obj: &Value) {
    let mut want = obj.clone();
    want["metadata"]["resourceVersion"] = json!(rev.to_string());
    assert_eq!(String::from_utf8_lossy(served), want.to_string());
}

/// kube-apiserver's encoder ends every value with a newline (apimachinery
/// pkg/runtime/serializer/json/json.go: `json.NewEncoder(w).Encode(obj)`); an indented file put
/// with etcdctl is pretty-printed. Loaded, fed, read at a past revision or replayed, each is
/// served as our own encoding, and the store's writes over them persist that.
#[tokio::test]
async fn values_put_with_whitespace_are_served_compact() {
    let backing = EtcdPrefix::new();
    let keys = Keys::new(backing.prefix());
    let obj = |name: &str, n: u64| {
        let metadata = json!({"name": name});
        json!({"kind": "K", "apiVersion": "g.io/v1", "metadata": metadata, "spec": {"n": n}})
    };
    let line = |o: &Value| format!("{o}\n");
    let pretty = |o: &Value| format!(" {}\n", serde_json::to_string_pretty(o).unwrap());
    let (a, b) = ("g.io/p/ns/a", "g.io/p/ns/b");

    let loaded = put(&keys.object(a), &line(&obj("a", 0)));
    let s = backing.store();
    assert_served(&s.get_raw(a).unwrap().value, loaded, &obj("a", 0));

    let mut rx = s.subscribe(|_| true);
    let added = put(&keys.object(b), &pretty(&obj("b", 0)));
    let ev = rx.recv().await.unwrap();
    assert_eq!((ev.rev, ev.kind), (added, EventType::Added));
    assert_served(&ev.value, added, &obj("b", 0));
    assert_eq!(s.get_raw(b).unwrap().value, ev.value);
    let modified = put(&keys.object(b), &line(&obj("b", 1)));
    let ev = rx.recv().await.unwrap();
    assert_eq!((ev.rev, ev.kind), (modified, EventType::Modified));
    assert_served(&ev.value, modified, &obj("b", 1));
    assert_served(ev.prev.as_ref().unwrap().bytes(), added, &obj("b", 0));

    // Past reads and replays are etcd's Ranges and watches.
    assert_served(&s.get_at(b, added).await.unwrap().unwrap().value, added, &obj("b", 0));
    let req = ListRequest { prefix: "g.io/p/".into(), revision: Some(added), ..Default::default() };
    let page = s.list_raw(req).await.unwrap();
    assert_eq!(page.items.len(), 2);
    assert_served(&page.items[0].1, loaded, &obj("a", 0));
    assert_served(&page.items[1].1, added, &obj("b", 0));
    let replayed = s.events_after("g.io/p/", loaded).await.unwrap();
    assert_eq!(replayed.len(), 2);
    assert_served(&replayed[0].value, added, &obj("b", 0));
    assert_served(&replayed[1].value, modified, &obj("b", 1));
    assert_served(replayed[1].prev.as_ref().unwrap().bytes(), added, &obj("b", 0));

    // The store's own writes: an update persists our encoding; a delete answers the last state.
    let updated = s.update(a, loaded, obj("a", 2)).await.unwrap();
    let stored = etcdctl(&["get", &keys.object(a), "--print-value-only"]);
    assert_eq!(String::from_utf8_lossy(&stored), format!("{}\n", obj("a", 2)), "etcdctl's line");
    assert_eq!(rx.recv().await.unwrap().value, updated.value);
    let deleted = s.delete(b, modified).await.unwrap();
    let ev = rx.recv().await.unwrap();
    assert_eq!(ev.kind, EventType::Deleted);
    assert_served(&ev.value, ev.rev, &obj("b", 1));
    assert_eq!(deleted.value, ev.value);
}
