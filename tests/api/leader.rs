//! Singletons on one elected leader (etcd): two replicas on one prefix, one collector among them,
//! and collection that moves to the other when the leader is killed.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;

const NS: &str = "leader";
const VMIS: &str = "/apis/kubevirt.io/v1/namespaces/leader/virtualmachineinstances";
/// The lease's TTL (10 s) and a wide margin for a loaded machine.
const FAILOVER: Duration = Duration::from_secs(60);
const LEADS: &str = "this server leads";

/// A replica on `prefix` (a fresh one when `None`), its log in `log`.
fn replica(prefix: Option<String>, log: &Path) -> TestServer {
    TestServer::start_with(ServerOptions {
        etcd: true,
        etcd_prefix: prefix,
        stderr: Some(log.to_owned()),
        env: vec![("RUST_LOG".into(), "warn,virt_apiserver::runtime::leading=info".into())],
        ..Default::default()
    })
}

fn leads(log: &Path) -> bool {
    std::fs::read_to_string(log).unwrap_or_default().contains(LEADS)
}

/// Creates a VMI whose owner does not exist (the collector deletes it); its revision.
fn orphan(s: &TestServer, name: &str) -> u64 {
    let dead = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "name": "gone",
                      "uid": "00000000-0000-0000-0000-00000000dead"});
    let r = s.post(
        VMIS,
        &json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
                "metadata": {"name": name, "ownerReferences": [dead]}}),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    rv(&r.json())
}

/// Follows `name` through watches from `from` (each ending after 20 s, reopened where it
/// stopped) until it is deleted, within `timeout`.
fn deleted_within(s: &TestServer, name: &str, mut from: u64, timeout: Duration) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        let w = s.watch(&format!("{VMIS}?watch=true&resourceVersion={from}&timeoutSeconds=20"));
        while let Some(ev) = w.next(deadline.saturating_duration_since(Instant::now())) {
            if ev["object"]["metadata"]["name"] != name {
                continue;
            }
            if ev["type"] == "DELETED" {
                return;
            }
            from = rv(&ev["object"]);
        }
    }
    panic!("{name} was not collected within {timeout:?}");
}

#[test]
fn one_replica_collects_and_another_takes_over_when_it_dies() {
    let dir = tempfile::tempdir().unwrap();
    let logs: Vec<PathBuf> = ["a.log", "b.log"].iter().map(|n| dir.path().join(n)).collect();
    let a = replica(None, &logs[0]);
    let b = replica(a.etcd_prefix.clone(), &logs[1]);
    let leader = eventually(FAILOVER, || match (leads(&logs[0]), leads(&logs[1])) {
        (true, false) => Some(0),
        (false, true) => Some(1),
        (true, true) => panic!("two leaders at once"),
        (false, false) => None,
    });
    let mut replicas = [Some(a), Some(b)];
    let follower = replicas[1 - leader].take().unwrap();
    follower.namespace(NS);

    // Written through the follower, collected by the leader's collector.
    let from = orphan(&follower, "first");
    deleted_within(&follower, "first", from, FAILOVER);
    assert!(!leads(&logs[1 - leader]), "one leader at a time");

    // kill -9: the lease expires, the other replica leads and collects.
    replicas[leader].take().unwrap().kill();
    let from = orphan(&follower, "second");
    deleted_within(&follower, "second", from, FAILOVER);
    assert!(leads(&logs[1 - leader]));
}
