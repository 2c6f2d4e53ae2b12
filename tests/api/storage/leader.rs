//! Singletons on one elected leader (etcd): two replicas on one prefix, one collector among them,
//! and collection that moves to the other when the leader is killed; the simulated runtime
//! following the leadership from one replica to the other and back.

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
    replica_with(prefix, log, &[])
}

fn replica_with(prefix: Option<String>, log: &Path, args: &[&str]) -> TestServer {
    TestServer::start_with(ServerOptions {
        etcd: true,
        etcd_prefix: prefix,
        stderr: Some(log.to_owned()),
        args: args.iter().map(|a| a.to_string()).collect(),
        env: vec![("RUST_LOG".into(), "warn,virt_apiserver::controllers::leading=info".into())],
        ..Default::default()
    })
}

fn leads(log: &Path) -> bool {
    terms(log) > 0
}

/// How many terms the replica logging to `log` has begun.
fn terms(log: &Path) -> usize {
    std::fs::read_to_string(log).unwrap_or_default().matches(LEADS).count()
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

/// The campaign keys of `s`'s prefix held by the process `pid` (their value names it).
fn campaign_keys(s: &TestServer, pid: u32) -> Vec<String> {
    let prefix =
        format!("{}/_virt/leader/", s.etcd_prefix.as_deref().unwrap().trim_end_matches('/'));
    let out = etcdctl(s.etcd_url.as_deref().unwrap(), &["get", "--prefix", &prefix]);
    let lines: Vec<&str> = out.lines().collect();
    let mine = format!("pid {pid}");
    lines
        .chunks(2)
        .filter(|kv| kv.get(1) == Some(&mine.as_str()))
        .map(|kv| kv[0].to_owned())
        .collect()
}

/// Ends the term of the replica `s` as an expired lease would: revokes the lease of its
/// campaign key (named by the lease's id in hex), as etcd does when renewals stop.
fn revoke_lease(s: &TestServer) {
    let keys = campaign_keys(s, s.pid());
    assert_eq!(keys.len(), 1, "one campaign key per replica: {keys:?}");
    let lease = keys[0].rsplit('/').next().unwrap();
    etcdctl(s.etcd_url.as_deref().unwrap(), &["lease", "revoke", lease]);
}

/// Creates a VM that should run, and waits for its `printableStatus` to be Running.
fn runs(s: &TestServer, name: &str) {
    let vms = format!("/apis/kubevirt.io/v1/namespaces/{NS}/virtualmachines");
    let vm = json!({
        "apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
        "metadata": {"name": name},
        "spec": {"runStrategy": "Always", "template": {"spec": {
            "domain": {"devices": {}, "resources": {"requests": {"memory": "64M"}}}}}}
    });
    let r = s.post(&vms, &vm);
    assert_eq!(r.status, 201, "{}", r.text());
    let deadline = Instant::now() + FAILOVER;
    loop {
        let vm = s.get_json(&format!("{vms}/{name}"));
        if vm["status"]["printableStatus"] == "Running" {
            return;
        }
        assert!(Instant::now() < deadline, "{name} not Running within {FAILOVER:?}: {vm}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A replica that led, lost its lease and leads again simulates in its second term as in its
/// first: the lifecycle engine is the term's, like the other singletons.
#[test]
fn the_simulation_follows_the_leadership_there_and_back() {
    let dir = tempfile::tempdir().unwrap();
    let logs: Vec<PathBuf> = ["a.log", "b.log"].iter().map(|n| dir.path().join(n)).collect();
    let sim = ["--simulate", "--simulate-speed", "0"];
    // A leads first: B campaigns only once A does.
    let a = replica_with(None, &logs[0], &sim);
    eventually(FAILOVER, || (terms(&logs[0]) == 1).then_some(()));
    let b = replica_with(a.etcd_prefix.clone(), &logs[1], &sim);
    a.namespace(NS);
    runs(&a, "in-a-first-term");
    assert_eq!((terms(&logs[0]), terms(&logs[1])), (1, 0));

    // A loses its lease: B leads, and A campaigns again behind it.
    revoke_lease(&a);
    eventually(FAILOVER, || (terms(&logs[1]) == 1).then_some(()));
    runs(&a, "in-b-first-term");
    eventually(FAILOVER, || (campaign_keys(&a, a.pid()).len() == 1).then_some(()));

    // B loses its lease: A leads again, in its second term.
    revoke_lease(&b);
    eventually(FAILOVER, || (terms(&logs[0]) == 2).then_some(()));
    runs(&b, "in-a-second-term");
    assert_eq!((terms(&logs[0]), terms(&logs[1])), (2, 1));
}
