//! A three-member etcd cluster under faults, driven as a client would: writes through
//! the API, and one watch open from before the first fault whose events are checked against every
//! write the server acknowledged (none lost, none duplicated, revisions strictly increasing).
//! A killed member, the leader or a follower, costs at most an election: writes resume on the
//! others. Two killed, the cluster has no quorum: writes fail with a `metav1.Status` 503
//! `ServiceUnavailable` (nothing written, or an outcome the server cannot know: the client
//! retries), `/readyz` fails its `etcd-feed` check, reads at `resourceVersion=0` are still served
//! from the cache, and consistent reads are kube's 504 once their wait for etcd's revision ends.
//! Restarted, everything resumes. Deadlines are tens of seconds: two loaded cores run three etcd
//! members, the server and the test.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::common::*;
use virt_apiserver::resource::ResourceInfo;

const NS: &str = "clustered";
/// How long writes, readiness or an event may take to come back after a fault.
const RESUME: Duration = Duration::from_secs(60);

fn vm() -> &'static ResourceInfo {
    resource("kubevirt.io", "v1", "virtualmachines")
}

fn vms() -> String {
    collection_path(vm(), Some(NS))
}

/// The client's record of its creates: each attempt a fresh name, so an attempt whose outcome
/// the server could not know shows in the watch at most once, under its own name.
#[derive(Default)]
struct Ledger {
    /// Acknowledged: name and the resourceVersion the server answered.
    acked: Vec<(String, u64)>,
    /// Failed with a 5xx: maybe written, maybe not.
    unknown: HashSet<String>,
    next: usize,
}

impl Ledger {
    /// One create; the failure's answer when it is not acknowledged.
    fn create(&mut self, s: &TestServer) -> Result<u64, Resp> {
        let name = format!("vm-{}", self.next);
        self.next += 1;
        let resp = s.post(&vms(), &object(vm(), NS, &name));
        match resp.status {
            201 => {
                let rv = rv(&resp.json());
                self.acked.push((name, rv));
                Ok(rv)
            }
            500..=504 => {
                self.unknown.insert(name);
                Err(resp)
            }
            other => panic!("create {name}: unexpected {other}: {}", resp.text()),
        }
    }

    /// `n` creates in a row, each acknowledged.
    fn create_all(&mut self, s: &TestServer, n: usize) {
        for _ in 0..n {
            if let Err(resp) = self.create(s) {
                panic!("a create failed on a cluster with quorum: {} {}", resp.status, resp.text());
            }
        }
    }

    /// Creates until one is acknowledged (the cluster electing a leader meanwhile), as a client
    /// retrying its 5xx would; answers how long it took.
    fn resume(&mut self, s: &TestServer) -> Duration {
        let started = Instant::now();
        loop {
            match self.create(s) {
                Ok(_) => return started.elapsed(),
                Err(resp) => {
                    assert!(
                        started.elapsed() < RESUME,
                        "writes did not resume within {RESUME:?}: {} {}",
                        resp.status,
                        resp.text()
                    );
                    assert_status(&resp, 503, "ServiceUnavailable");
                }
            }
        }
    }
}

/// Reads the watch until every acknowledged write is there; checks the history against the
/// ledger: every acknowledged write at the revision it was answered with, nothing else but
/// writes of unknown outcome, each name once, revisions strictly increasing.
fn check_history(watch: &Watch, ledger: &Ledger) {
    let acked: HashMap<&str, u64> = ledger.acked.iter().map(|(n, rv)| (n.as_str(), *rv)).collect();
    let mut seen: Vec<(String, u64)> = Vec::new();
    let mut missing: HashSet<&str> = acked.keys().copied().collect();
    while !missing.is_empty() {
        let ev = watch.next(RESUME).unwrap_or_else(|| {
            panic!("no event within {RESUME:?}; still missing {missing:?}; seen {seen:?}")
        });
        assert_eq!(ev["type"], "ADDED", "{ev}");
        let name = ev["object"]["metadata"]["name"].as_str().unwrap().to_owned();
        missing.remove(name.as_str());
        seen.push((name, rv(&ev["object"])));
    }
    // A duplicate would come right behind; a short look suffices to catch it.
    if let Some(ev) = watch.next(Duration::from_secs(1)) {
        let name = ev["object"]["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        seen.push((name, rv(&ev["object"])));
    }
    let mut names = HashSet::new();
    for (i, (name, rev)) in seen.iter().enumerate() {
        assert!(names.insert(name.as_str()), "{name} twice: {seen:?}");
        if i > 0 {
            assert!(seen[i - 1].1 < *rev, "revisions must increase: {seen:?}");
        }
        match acked.get(name.as_str()) {
            Some(answered) => {
                assert_eq!(answered, rev, "{name} answered at {answered}, seen at {rev}")
            }
            None => assert!(ledger.unknown.contains(name), "{name} was never written: {seen:?}"),
        }
    }
}

#[test]
fn a_three_member_cluster_survives_losing_members() {
    let mut cluster = EtcdCluster::start(3);
    // The server starts on the leader: its feed, lease keepalive and leader watch die with it.
    let leader = cluster.leader();
    let s = cluster.server(&format!("/cluster-{}", std::process::id()), leader);
    s.namespace(NS);
    let from: u64 =
        s.get_json(&vms())["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    let watch = s.watch(&format!("{}?watch=true&resourceVersion={from}", vms()));
    let mut ledger = Ledger::default();
    ledger.create_all(&s, 3);

    // The leader dies: an election, then writes go on through the two left.
    cluster.kill(leader);
    let took = ledger.resume(&s);
    eprintln!("writes resumed {took:?} after the leader (member {leader}) died");
    ledger.create_all(&s, 3);
    cluster.restart(leader);

    // A follower dies: its clients move on.
    let follower = (cluster.leader() + 1) % 3;
    cluster.kill(follower);
    let took = ledger.resume(&s);
    eprintln!("writes resumed {took:?} after a follower (member {follower}) died");
    ledger.create_all(&s, 3);
    cluster.restart(follower);
    ledger.create_all(&s, 3);

    // Two die: no quorum. Writes fail with a Status, readiness fails, cached reads go on.
    let leader = cluster.leader();
    let (a, b) = (leader, (leader + 1) % 3);
    cluster.kill(a);
    cluster.kill(b);
    let failed = ledger.create(&s).expect_err("a write without quorum");
    let status = assert_status(&failed, 503, "ServiceUnavailable");
    assert_eq!(status["kind"], "Status", "{status}");
    eventually(RESUME, || {
        let ready = s.get("/readyz?verbose");
        (ready.status == 500 && ready.text().contains("[-]etcd-feed failed")).then_some(())
    });
    let cached = s.get(&format!("{}?resourceVersion=0", vms()));
    assert_eq!(cached.status, 200, "{}", cached.text());
    let listed: HashSet<String> = names(&cached.json()).into_iter().collect();
    for (name, _) in &ledger.acked {
        assert!(listed.contains(name), "{name} acknowledged, not in the cached list");
    }
    let (first, _) = &ledger.acked[0];
    let cached = s.get(&format!("{}?resourceVersion=0", item_path(vm(), NS, first)));
    assert_eq!(cached.status, 200, "{}", cached.text());
    // A consistent read cannot learn etcd's revision: kube's 504 once its 3 s wait gave up.
    let consistent = s.get(&vms());
    assert_status(&consistent, 504, "Timeout");

    // Back: writes, readiness and the watch resume.
    cluster.restart(a);
    cluster.restart(b);
    let took = ledger.resume(&s);
    eprintln!("writes resumed {took:?} after the quorum came back");
    ledger.create_all(&s, 3);
    eventually(RESUME, || (s.get("/readyz").status == 200).then_some(()));
    check_history(&watch, &ledger);
    // A consistent list holds every acknowledged write and nothing never written.
    let listed = s.list_names(&vms());
    for (name, _) in &ledger.acked {
        assert!(listed.contains(name), "{name} acknowledged, not listed");
    }
    for name in &listed {
        let acked = ledger.acked.iter().any(|(n, _)| n == name);
        assert!(acked || ledger.unknown.contains(name), "{name} was never written");
    }
}
