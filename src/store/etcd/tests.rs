//! The etcd backend through whole stores on the test process's etcd: values another writer put
//! (what kube-apiserver and `etcdctl` leave in etcd, read through every path a value takes into
//! the shared layer), consistent reads past another prefix's revisions (`fresh`), and a leader
//! whose lease ends under it (`election`). What needs no store is tested beside its code.

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use super::client::Client;
use super::keys::Keys;
use super::pb::LeaseRevokeRequest;
use super::{BARRIERS_TOTAL, REVISION_READS_TOTAL};
use crate::store::contract_tests::{Backing, EtcdPrefix};
use crate::store::etcd::harness::TestEtcd;
use crate::store::{EtcdConfig, EventType, Fence, ListRequest, Store, StoreConfig, StoreError};

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

fn count(s: &Store, name: &str) -> u64 {
    s.metrics().iter().find(|m| m.name == name).map_or(0, |m| m.value)
}

/// Consistent reads (`fresh`): a replica syncs past revisions of another prefix, closing them
/// with a barrier, and its callers share the round trips.
#[tokio::test]
async fn a_replica_syncs_past_foreign_revisions_in_coalesced_round_trips() {
    let backing = EtcdPrefix::new();
    let (a, b) = (backing.store(), backing.store());
    let written = a.create("g/p/ns/x", json!({"metadata": {"name": "x"}})).await.unwrap();
    // Another prefix's write: etcd's revision moves past anything under ours.
    let etcd = TestEtcd::shared();
    let other = Store::open(StoreConfig {
        etcd: Some(EtcdConfig {
            servers: vec![etcd.url.clone()],
            prefix: etcd.unique_prefix(),
            ..Default::default()
        }),
        ..StoreConfig::new("")
    })
    .unwrap();
    other.create("g/p/ns/y", json!({"metadata": {"name": "y"}})).await.unwrap();

    let callers = 20;
    let synced = futures_util::future::join_all((0..callers).map(|_| b.sync())).await;
    for rev in synced {
        assert!(
            rev.unwrap()
                >= written.object["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
        );
    }
    assert_eq!(b.get_raw("g/p/ns/x").map(|e| e.value), Some(written.value));
    let (reads, barriers) = (count(&b, REVISION_READS_TOTAL), count(&b, BARRIERS_TOTAL));
    assert!((1..callers).contains(&reads), "{reads} revision reads for {callers} callers");
    // The foreign revision is closed by a barrier, never left to time out; callers that ask
    // while one is under way join the next, so a loaded machine may see a few rounds.
    assert!((1..callers).contains(&barriers), "{barriers} barriers for {callers} callers");
}

async fn leading(store: &Store, not: Option<&Fence>) -> Fence {
    let mut leadership = store.leadership();
    let led = leadership.wait_for(|l| l.is_some() && l.as_ref() != not);
    let held = tokio::time::timeout(Duration::from_secs(60), led).await.unwrap().unwrap();
    held.clone().unwrap()
}

/// A leader whose lease ends under it (etcd expired it: the process was paused, say) is
/// fenced at once, before it notices; then it stops leading, and campaigns again.
#[tokio::test]
async fn a_lost_lease_fences_at_once_and_ends_the_term() {
    // With the contract suite's etcd tests, one at a time: they count revisions.
    let backing = EtcdPrefix::new();
    let store = backing.store();
    let fence = leading(&store, None).await;
    let lease = i64::from_str_radix(fence.key.rsplit('/').next().unwrap(), 16).unwrap();
    let servers = vec![TestEtcd::shared().url.clone()];
    let client = Client::new(&EtcdConfig { servers, ..Default::default() }).unwrap();
    client.lease_revoke(LeaseRevokeRequest { id: lease }).await.unwrap();

    let thing = json!({"kind": "Thing", "metadata": {"name": "a"}});
    let stale = store.fenced(fence.clone()).create("g/things/ns/a", thing.clone()).await;
    assert_eq!(stale, Err(StoreError::NotLeader));
    let mut leadership = store.leadership();
    let ended = leadership.wait_for(|l| l.as_ref() != Some(&fence));
    tokio::time::timeout(Duration::from_secs(30), ended).await.unwrap().unwrap();
    let again = leading(&store, Some(&fence)).await;
    store.fenced(again).create("g/things/ns/a", thing).await.unwrap();
    store.close().await.unwrap();
}
