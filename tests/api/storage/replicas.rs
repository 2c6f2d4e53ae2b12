//! Several replicas over one etcd prefix: any replica serves any request with
//! kube's semantics. Consistent reads on one see every write acknowledged on another, watches on
//! all see one history, continue tokens and resourceVersions travel between them, and a replica
//! killed with SIGKILL leaves its clients to resume elsewhere with no gap and no duplicate; a
//! replica whose feed fell behind compaction relists.
//! Deadlines are generous and nothing sleeps to synchronise: two loaded cores run etcd, three
//! servers and the test.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;
use virt_apiserver::resource::ResourceInfo;
use virt_apiserver::storage::TestEtcd;

const NS: &str = "replicated";
/// How long an expected watch event may take on a loaded machine.
const EVENT: Duration = Duration::from_secs(30);

fn vm() -> &'static ResourceInfo {
    resource("kubevirt.io", "v1", "virtualmachines")
}

/// Three servers on one fresh prefix of the test etcd.
fn replicas() -> [TestServer; 3] {
    let a = TestServer::start_with(ServerOptions { etcd: true, ..Default::default() });
    let prefix = a.etcd_prefix.clone();
    let other = || {
        TestServer::start_with(ServerOptions { etcd_prefix: prefix.clone(), ..Default::default() })
    };
    let (b, c) = (other(), other());
    [a, b, c]
}

fn vms() -> String {
    collection_path(vm(), Some(NS))
}

fn list_rv(s: &TestServer) -> u64 {
    let list = s.get_json(&vms());
    list["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

/// `(type, name, resourceVersion)` of a watch event.
fn seen(ev: &Value) -> (String, String, u64) {
    let kind = ev["type"].as_str().unwrap_or_else(|| panic!("an event: {ev}")).to_owned();
    let name = ev["object"]["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    (kind, name, rv(&ev["object"]))
}

/// The next `n` events of `w`.
fn take(w: &Watch, n: usize) -> Vec<(String, String, u64)> {
    (0..n)
        .map(|i| {
            seen(&w.next(EVENT).unwrap_or_else(|| panic!("event {i} of {n} within {EVENT:?}")))
        })
        .collect()
}

fn watch_from(s: &TestServer, rv: u64) -> Watch {
    s.watch(&format!("{}?watch=true&resourceVersion={rv}", vms()))
}

fn strictly_increasing(events: &[(String, String, u64)]) {
    for pair in events.windows(2) {
        assert!(pair[0].2 < pair[1].2, "revisions must increase: {events:?}");
    }
}

#[test]
fn three_replicas_serve_one_history() {
    let [a, b, c] = replicas();
    a.namespace(NS);
    let from = list_rv(&a);
    let watches: Vec<Watch> = [&a, &b, &c].iter().map(|s| watch_from(s, from)).collect();

    // Writes through all three; each replica reads at once what another just acknowledged.
    let mut expected = 0;
    for (i, (writer, reader)) in [(&a, &b), (&b, &c), (&c, &a)].into_iter().enumerate() {
        let name = format!("vm-{i}");
        let created = writer.create(vm(), &object(vm(), NS, &name));
        expected += 1;
        // A consistent get and list on another replica right after the write see it.
        assert_eq!(reader.get_json(&item_path(vm(), NS, &name)), created);
        assert!(reader.list_names(&vms()).contains(&name));
        // An update there, from the state the writer answered, needs no retry by the client.
        let mut changed = created.clone();
        changed["metadata"]["labels"] = json!({"edited-on": "another-replica"});
        let updated = reader.put(&item_path(vm(), NS, &name), &changed);
        assert_eq!(updated.status, 200, "{}", updated.text());
        expected += 1;
    }
    let deleted = c.delete(&item_path(vm(), NS, "vm-0"));
    assert_eq!(deleted.status, 200, "{}", deleted.text());
    expected += 1;
    assert_status(&a.get(&item_path(vm(), NS, "vm-0")), 404, "NotFound");
    assert_eq!(b.list_names(&vms()), ["vm-1", "vm-2"]);

    // One history, everywhere.
    let histories: Vec<_> = watches.iter().map(|w| take(w, expected)).collect();
    strictly_increasing(&histories[0]);
    assert_eq!(histories[0], histories[1]);
    assert_eq!(histories[0], histories[2]);
    let kinds: Vec<&str> = histories[0].iter().map(|e| e.0.as_str()).collect();
    assert_eq!(kinds.iter().filter(|k| **k == "ADDED").count(), 3, "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"DELETED"));
}

/// A TCP proxy to etcd (`http://host:port`) that hands on every byte etcd sends `lag` after it
/// came: the replica behind it hears of every commit late, as a loaded one does, so a read that
/// did not wait for its feed would miss a write another replica acknowledged. Answers its URL.
fn lagging_proxy(etcd: &str, lag: Duration) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let target = etcd.trim_start_matches("http://").to_owned();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let (Ok(client), Ok(server)) = (client, TcpStream::connect(&target)) else { continue };
            let _ = (client.set_nodelay(true), server.set_nodelay(true));
            let (mut from_client, mut to_server) =
                (client.try_clone().unwrap(), server.try_clone().unwrap());
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from_client, &mut to_server);
                let _ = to_server.shutdown(Shutdown::Write);
            });
            let (chunks, due) = mpsc::channel::<(Instant, Vec<u8>)>();
            let mut from_server = server;
            std::thread::spawn(move || {
                let mut buf = vec![0; 64 << 10];
                while let Ok(n @ 1..) = from_server.read(&mut buf) {
                    if chunks.send((Instant::now() + lag, buf[..n].to_vec())).is_err() {
                        return;
                    }
                }
            });
            let mut to_client = client;
            std::thread::spawn(move || {
                for (at, bytes) in due {
                    // The injected latency itself, not a synchronisation.
                    std::thread::sleep(at.saturating_duration_since(Instant::now()));
                    if to_client.write_all(&bytes).is_err() {
                        return;
                    }
                }
                let _ = to_client.shutdown(Shutdown::Write);
            });
        }
    });
    url
}

#[test]
fn a_lagging_replica_reads_what_another_acknowledged() {
    let a = TestServer::start_with(ServerOptions { etcd: true, ..Default::default() });
    let prefix = a.etcd_prefix.clone().unwrap();
    let proxy = lagging_proxy(&test_etcd().url, Duration::from_millis(200));
    let b = TestServer::start_with(ServerOptions::on_etcd(&proxy, &prefix));
    for i in 0..3 {
        // A namespace made on A is there for B's namespace lifecycle at once.
        let ns = format!("lagging-{i}");
        a.namespace(&ns);
        b.create(vm(), &object(vm(), &ns, "from-b"));

        let made = a.create(vm(), &object(vm(), &ns, "from-a"));
        let path = item_path(vm(), &ns, "from-a");
        assert_eq!(b.get_json(&path), made);
        assert_eq!(b.list_names(&collection_path(vm(), Some(&ns))), ["from-a", "from-b"]);

        // An update on B from A's answer, before anything on B read it: B decides on the
        // state A acknowledged, not on its own older one.
        let made = a.create(vm(), &object(vm(), &ns, "edited"));
        let edited = item_path(vm(), &ns, "edited");
        let mut changed = made.clone();
        changed["metadata"]["labels"] = json!({"on": "b"});
        let updated = b.put(&edited, &changed);
        assert_eq!(updated.status, 200, "{}", updated.text());
        assert_eq!(a.get_json(&edited), updated.json());

        // Deleted on A: gone on B.
        assert_eq!(a.delete(&path).status, 200);
        assert_status(&b.get(&path), 404, "NotFound");
    }
}

#[test]
fn a_consistent_read_is_not_held_by_revisions_outside_its_prefix() {
    let s = TestServer::start_with(ServerOptions { etcd: true, ..Default::default() });
    s.namespace(NS);
    let made = s.create(vm(), &object(vm(), NS, "quiet"));
    // Another tenant of the etcd moves its revision; no event under our prefix reports it.
    let foreign = format!("/foreign-{}", std::process::id());
    etcdctl(&test_etcd().url, &["put", &foreign, "x"]);
    let started = Instant::now();
    assert_eq!(s.get_json(&item_path(vm(), NS, "quiet")), made);
    // The barrier closed the wait, well before kube's 3 s (then 504).
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

#[test]
fn a_continue_token_from_one_replica_works_on_the_others() {
    let [a, b, c] = replicas();
    a.namespace(NS);
    for i in 0..5 {
        [&a, &b, &c][i % 3].create(vm(), &object(vm(), NS, &format!("vm-{i}")));
    }
    let first = a.get_json(&format!("{}?limit=2", vms()));
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    assert!(!token.is_empty(), "{first}");
    // Written after the first page: a continued list stays at the first page's revision.
    b.create(vm(), &object(vm(), NS, "vm-late"));
    let mut got = names(&first);
    let second = c.get_json(&format!("{}?limit=2&continue={token}", vms()));
    assert_eq!(second["metadata"]["resourceVersion"], first["metadata"]["resourceVersion"]);
    got.extend(names(&second));
    let token = second["metadata"]["continue"].as_str().unwrap().to_owned();
    let third = b.get_json(&format!("{}?limit=2&continue={token}", vms()));
    got.extend(names(&third));
    assert_eq!(third["metadata"]["continue"], "", "{third}");
    assert_eq!(got, ["vm-0", "vm-1", "vm-2", "vm-3", "vm-4"]);
}

#[test]
fn a_watch_resumes_on_another_replica_after_a_sigkill() {
    let [a, b, c] = replicas();
    a.namespace(NS);
    let from = list_rv(&b);
    let reference = watch_from(&c, from);
    let on_a = watch_from(&a, from);
    for i in 0..4 {
        a.create(vm(), &object(vm(), NS, &format!("before-{i}")));
    }
    let before = take(&on_a, 4);
    let last = before.last().unwrap().2;
    drop(a.kill());

    // The others go on: writes, reads, and the client's watch resumed from its last revision.
    for i in 0..4 {
        [&b, &c][i % 2].create(vm(), &object(vm(), NS, &format!("after-{i}")));
    }
    let resumed = watch_from(&b, last);
    let after = take(&resumed, 4);
    let mut joined = before.clone();
    joined.extend(after);
    strictly_increasing(&joined);
    assert_eq!(joined, take(&reference, 8), "no gap and no duplicate");
    resumed.expect_none(Duration::from_millis(500));
    assert_eq!(c.list_names(&vms()).len(), 8);
}

#[test]
fn readyz_fails_while_the_feed_cannot_catch_up() {
    let etcd = TestEtcd::private();
    let prefix = format!("/ready-{}", std::process::id());
    let s = TestServer::start_with(ServerOptions::on_etcd(&etcd.url, &prefix));
    let ready = s.get("/readyz?verbose");
    assert_eq!(ready.status, 200, "{}", ready.text());
    assert!(ready.text().contains("[+]etcd-feed ok\n"), "{}", ready.text());

    etcd.pause();
    // (Polled: a probe already answered by etcd when the signal landed may still pass.)
    let down = eventually(Duration::from_secs(30), || {
        let r = s.get("/readyz?verbose");
        (r.status != 200).then_some(r)
    });
    etcd.resume();
    assert_eq!(down.status, 500, "{}", down.text());
    assert!(down.text().contains("[-]etcd-feed failed: reason withheld\n"), "{}", down.text());
    assert!(down.text().contains("[+]ping ok\n"), "{}", down.text());

    // Caught up again once etcd answers.
    eventually(Duration::from_secs(60), || (s.get("/readyz").status == 200).then_some(()));
    assert_eq!(s.get("/readyz?exclude=etcd-feed").status, 200);
}

/// A TCP proxy to etcd that can be cut: every connection through it is shut and new ones are
/// refused (accepted and closed) until it is restored, as a partition does. `cut_after` cuts it
/// once etcd has sent that many more bytes through it.
struct CuttableProxy {
    url: String,
    open: Arc<AtomicBool>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    /// Bytes from etcd until the cut; negative: no cut planned.
    budget: Arc<AtomicI64>,
}

impl CuttableProxy {
    fn start(etcd: &str) -> CuttableProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let target = etcd.trim_start_matches("http://").to_owned();
        let proxy = CuttableProxy {
            url,
            open: Arc::new(AtomicBool::new(true)),
            conns: Arc::new(Mutex::new(Vec::new())),
            budget: Arc::new(AtomicI64::new(-1)),
        };
        let (is_open, live, budget) =
            (proxy.open.clone(), proxy.conns.clone(), proxy.budget.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if !is_open.load(Ordering::SeqCst) {
                    continue;
                }
                let Ok(server) = TcpStream::connect(&target) else { continue };
                let _ = (client.set_nodelay(true), server.set_nodelay(true));
                let mut conns = live.lock().unwrap();
                conns.extend([client.try_clone().unwrap(), server.try_clone().unwrap()]);
                drop(conns);
                let (mut from, mut to) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(Shutdown::Both);
                });
                let (mut from, mut to) = (server, client);
                let (is_open, live, budget) = (is_open.clone(), live.clone(), budget.clone());
                std::thread::spawn(move || {
                    let mut buf = vec![0; 16 << 10];
                    while let Ok(n @ 1..) = from.read(&mut buf) {
                        let left = budget.load(Ordering::SeqCst);
                        if left >= 0 && budget.fetch_sub(n as i64, Ordering::SeqCst) <= n as i64 {
                            cut(&is_open, &live);
                            break;
                        }
                        if to.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = to.shutdown(Shutdown::Both);
                });
            }
        });
        proxy
    }

    fn cut(&self) {
        cut(&self.open, &self.conns);
    }

    /// Cuts once etcd has sent `bytes` more through the proxy.
    fn cut_after(&self, bytes: i64) {
        self.budget.store(bytes, Ordering::SeqCst);
    }

    fn restore(&self) {
        self.budget.store(-1, Ordering::SeqCst);
        self.open.store(true, Ordering::SeqCst);
    }
}

fn cut(open: &AtomicBool, conns: &Mutex<Vec<TcpStream>>) {
    open.store(false, Ordering::SeqCst);
    for conn in conns.lock().unwrap().drain(..) {
        let _ = conn.shutdown(Shutdown::Both);
    }
}

/// A dead endpoint is left for the next one, in the middle of a watch's replay too: a replica
/// whose first etcd endpoint goes away while it replays history for a watch from an old
/// resourceVersion goes on from where the replay stopped on its other endpoint, and the client
/// sees every event once, in order.
#[test]
fn a_replay_cut_off_with_its_endpoint_goes_on_at_the_next() {
    let etcd = TestEtcd::private();
    let prefix = etcd.unique_prefix();
    let a = TestServer::start_with(ServerOptions::on_etcd(&etcd.url, &prefix));
    let proxy = CuttableProxy::start(&etcd.url);
    let both = format!("{},{}", proxy.url, etcd.url);
    let b = TestServer::start_with(ServerOptions::on_etcd(&both, &prefix));
    a.namespace(NS);
    let from = list_rv(&a);
    // More revisions than etcd sends in one watch response (1000), about 1 KiB each.
    let total = 1500;
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let base = a.base.clone();
            std::thread::spawn(move || {
                let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(30)).build();
                for i in (w..total).step_by(4) {
                    let mut obj = object(vm(), NS, &format!("vm-{i:04}"));
                    obj["metadata"]["annotations"] = json!({"pad": "p".repeat(600)});
                    agent.post(&format!("{base}{}", vms())).send_json(obj).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    // B has caught up through the proxy, its current endpoint; the replay for the watch then
    // flows through it, and the proxy cuts it in its second response (etcd sends a catching-up
    // watch 1000 revisions a response), so it goes on from the 1001st revision.
    let listed = b.get_json(&vms());
    assert_eq!(listed["items"].as_array().unwrap().len(), total);
    let item = serde_json::to_vec(&listed["items"][0]).unwrap().len();
    let key = format!("{prefix}/kubevirt.io/virtualmachines/{NS}/vm-0000").len();
    proxy.cut_after(((item + key + 32) * 1250) as i64);
    let w = watch_from(&b, from);
    let got = take(&w, total);
    strictly_increasing(&got);
    let mut names: Vec<&str> = got.iter().map(|(_, name, _)| name.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), total, "every event once");
    assert!(got.iter().all(|(kind, _, _)| kind == "ADDED"), "{:?}", &got[..3]);
    assert!(!proxy.open.load(Ordering::SeqCst), "the proxy cut the replay");
    w.expect_none(Duration::from_millis(500));
    // B goes on, on its other endpoint.
    let made = b.create(vm(), &object(vm(), NS, "after"));
    assert_eq!(a.get_json(&item_path(vm(), NS, "after")), made);
}

/// kube's reflector restart: a replica cut off from etcd while another writes and etcd compacts
/// cannot resume its feed from where it stood, so it relists. Its open watches end (the client
/// re-watches from its last resourceVersion and is told 410), and it serves the new state,
/// becomes ready again and takes writes.
#[test]
fn a_replica_whose_feed_fell_behind_compaction_relists() {
    let etcd = TestEtcd::private();
    let prefix = etcd.unique_prefix();
    let a = TestServer::start_with(ServerOptions::on_etcd(&etcd.url, &prefix));
    let proxy = CuttableProxy::start(&etcd.url);
    let b = TestServer::start_with(ServerOptions::on_etcd(&proxy.url, &prefix));
    a.namespace(NS);
    let gone = a.create(vm(), &object(vm(), NS, "gone"));
    assert_eq!(b.get_json(&item_path(vm(), NS, "gone")), gone);
    let since = rv(&gone);
    let watch = crate::watches::watch_semantics::RawWatch::open(
        &b,
        &format!("{}?watch=true&resourceVersion={since}", vms()),
    );

    proxy.cut();
    assert_eq!(a.delete(&item_path(vm(), NS, "gone")).status, 200);
    let kept = a.create(vm(), &object(vm(), NS, "kept"));
    let current = rv(&kept).to_string();
    etcdctl(&etcd.url, &["compact", &current]);
    proxy.restore();

    // The open watch ends without the events B never saw, as kube's watchers do on a relist.
    watch.expect_end(Duration::from_secs(60));
    let again = crate::watches::watch_semantics::RawWatch::open(
        &b,
        &format!("{}?watch=true&resourceVersion={since}", vms()),
    );
    let ev = again.expect();
    assert_eq!((ev["type"].as_str(), ev["object"]["code"].as_u64()), (Some("ERROR"), Some(410)));
    // The new state, served and watched from.
    eventually(EVENT, || (b.get("/readyz").status == 200).then_some(()));
    assert_eq!(b.list_names(&vms()), ["kept"]);
    let from = list_rv(&b);
    let w = watch_from(&b, from);
    let made = b.create(vm(), &object(vm(), NS, "after"));
    assert_eq!(take(&w, 1), [("ADDED".to_owned(), "after".to_owned(), rv(&made))]);
    assert_eq!(a.get_json(&item_path(vm(), NS, "after")), made);
}
