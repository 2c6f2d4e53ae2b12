//! The storage contract's test suite, written once and run against every backend.
//!
//! Each test is a function of a `Backing` (how to get a store over one backend's storage);
//! `contract_suite!` instantiates all of them for one backing, so adding a backend is one line at
//! the bottom. Tests that restart a store run only for backings that keep data across opens, and
//! the one about gap-free revisions only for backings that promise them (SQLite; etcd's are
//! shared with probes, secrets and every other key). Revisions are counted from the store's
//! revision at open (`base`): 0 on SQLite, etcd's revision when the test began on etcd.
//! What one backend does inside (SQLite's pragmas, statements, group commit) is tested beside it.

use serde_json::json;

use super::*;

/// How the suite gets stores of one backend.
pub trait Backing {
    /// A store over this backing's storage with `cfg`'s retention and queue limits (where the
    /// data lives is the backing's business): empty on the first open, and, for a backing that
    /// keeps data, what earlier opens left on later ones.
    fn open(&self, cfg: StoreConfig) -> Store;

    /// Whether revisions are gap-free from 1 and this store's own (SQLite).
    fn gap_free(&self) -> bool {
        false
    }

    /// `open` with the default configuration.
    fn store(&self) -> Store {
        self.open(StoreConfig::new(""))
    }
}

/// SQLite on a file in a fresh directory, removed with the backing.
pub struct SqliteFile(tempfile::TempDir);

impl SqliteFile {
    pub fn new() -> SqliteFile {
        SqliteFile(tempfile::tempdir().unwrap())
    }
}

impl Backing for SqliteFile {
    fn gap_free(&self) -> bool {
        true
    }

    fn open(&self, cfg: StoreConfig) -> Store {
        let path = self.0.path().join("store.db").to_str().unwrap().to_owned();
        Store::open(StoreConfig { path, ..cfg }).unwrap()
    }
}

/// A key prefix of its own on the test process's etcd (`TestEtcd`), kept across opens. The
/// tests on etcd run one at a time: they count revisions, which every write to the etcd shares.
pub struct EtcdPrefix {
    prefix: String,
    _one_at_a_time: std::sync::MutexGuard<'static, ()>,
}

impl EtcdPrefix {
    pub fn new() -> EtcdPrefix {
        let guard = crate::store::etcd::harness::one_at_a_time();
        let prefix = crate::store::etcd::harness::TestEtcd::shared().unique_prefix();
        EtcdPrefix { prefix, _one_at_a_time: guard }
    }

    /// The `--etcd-prefix` its stores use, for a test that writes under it as another writer.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

impl Backing for EtcdPrefix {
    fn open(&self, cfg: StoreConfig) -> Store {
        let etcd = EtcdConfig {
            servers: vec![crate::store::etcd::harness::TestEtcd::shared().url.clone()],
            prefix: self.prefix.clone(),
            ..Default::default()
        };
        Store::open(StoreConfig { etcd: Some(etcd), ..cfg }).unwrap()
    }
}

/// SQLite's private in-memory database: every open starts empty.
pub struct SqliteMemory;

impl Backing for SqliteMemory {
    fn gap_free(&self) -> bool {
        true
    }

    fn open(&self, cfg: StoreConfig) -> Store {
        Store::open(StoreConfig { path: sqlite::MEMORY.into(), ..cfg }).unwrap()
    }
}

/// Every test of the suite for one backing (`$backing` makes a fresh one per test); with
/// `restarts`, the tests that reopen the store too.
macro_rules! contract_suite {
    ($name:ident, $backing:expr $(, $extra:ident)*) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            contract_suite!(@each $backing;
                create_get_update_delete,
                non_objects_are_refused_without_using_a_revision,
                list_pages_by_key_at_current_and_past_revisions,
                compaction_expires_old_revisions_and_keeps_state,
                events_after_replays_kinds_and_previous_state,
                live_events_follow_commits_in_order,
                a_filtered_subscription_queues_only_what_passes,
                counts_after_a_key_match_the_list_at_every_revision,
                compaction_follows_the_configured_window_once_started,
                gets_at_a_revision_see_that_revision,
                served_bytes_are_the_objects_with_their_revision,
                waiting_for_a_revision_wakes_on_its_commit,
                a_watch_subscribed_before_a_read_misses_nothing,
                the_leader_writes_fenced,
                a_reset_puts_back_the_saved_state_and_expires_history
            );
            $(contract_suite!(@$extra $backing);)*
        }
    };
    (@gap_free $backing:expr) => {
        contract_suite!(@each $backing; revisions_have_no_gaps_across_failures);
    };
    (@replicas $backing:expr) => {
        contract_suite!(@each $backing; a_deposed_leaders_fenced_writes_fail);
    };
    (@restarts $backing:expr) => {
        contract_suite!(@each $backing;
            reopening_keeps_data_revision_and_secrets,
            the_cache_equals_the_log_at_its_revision
        );
    };
    (@each $backing:expr; $($test:ident),* $(,)?) => {
        $(
            #[tokio::test]
            async fn $test() {
                super::$test(&$backing).await
            }
        )*
    };
}

contract_suite!(sqlite_file, SqliteFile::new(), restarts, gap_free);
contract_suite!(sqlite_memory, SqliteMemory, gap_free);
contract_suite!(etcd, EtcdPrefix::new(), restarts, replicas);

/// Waits (generously: a loaded machine) until `store` leads with another fence than `not`.
async fn leads(store: &Store, not: Option<&Fence>) -> Fence {
    let mut leadership = store.leadership();
    let led = leadership.wait_for(|l| l.is_some() && l.as_ref() != not);
    let held = tokio::time::timeout(std::time::Duration::from_secs(60), led)
        .await
        .expect("leadership in time")
        .expect("the backend runs");
    held.clone().unwrap()
}

/// Every backend elects this process when it is alone (SQLite: always), and its fenced writes
/// commit.
pub async fn the_leader_writes_fenced(b: &impl Backing) {
    let s = b.store();
    let fence = leads(&s, None).await;
    let fenced = s.fenced(fence);
    let written = fenced.create("g/things/ns/a", obj("a", 1)).await.unwrap();
    fenced.update("g/things/ns/a", rv(&written), obj("a", 2)).await.unwrap();
    let gone = fenced.delete("g/things/ns/a", s.get_raw("g/things/ns/a").unwrap().rev).await;
    gone.unwrap();
    // Resigns now: an expiring lease would take a revision in a later test.
    s.close().await.unwrap();
}

/// Two processes on one backing: one leads; once it is deposed the other leads, and a write
/// carrying the deposed leader's fence fails, whoever sends it, while the new fence's commit.
pub async fn a_deposed_leaders_fenced_writes_fail(b: &impl Backing) {
    let a = b.store();
    let first = leads(&a, None).await;
    let other = b.store();
    let mut standing = other.leadership();
    assert_eq!(*standing.borrow_and_update(), None, "one leader at a time");
    let written = other.fenced(first.clone()).create("g/things/ns/a", obj("a", 1)).await.unwrap();
    // A clean stop resigns: the other leads at once, not after the lease's TTL.
    a.close().await.unwrap();
    let second = leads(&other, Some(&first)).await;
    assert_ne!(first, second);
    let stale = other.fenced(first);
    let refused = stale.update("g/things/ns/a", rv(&written), obj("a", 2)).await;
    assert_eq!(refused, Err(StoreError::NotLeader));
    let refused = stale.create("g/things/ns/b", obj("b", 1)).await;
    assert_eq!(refused, Err(StoreError::NotLeader));
    assert!(other.get_raw("g/things/ns/b").is_none());
    let now = other.fenced(second);
    now.update("g/things/ns/a", rv(&written), obj("a", 2)).await.unwrap();
    other.close().await.unwrap();
}

fn obj(name: &str, n: i64) -> Value {
    json!({"kind": "Thing", "metadata": {"name": name}, "spec": {"n": n}})
}

fn rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

/// The store's revision at open, and a function counting from it.
async fn base(s: &Store) -> impl Fn(u64) -> u64 {
    let base = s.current_revision().await.unwrap();
    move |n| base + n
}

fn names(r: &ListResult) -> Vec<&str> {
    r.items.iter().map(|(_, v)| v["metadata"]["name"].as_str().unwrap()).collect()
}

fn page(prefix: &str, revision: Option<u64>, after: Option<&str>, limit: usize) -> ListRequest {
    ListRequest {
        prefix: prefix.into(),
        revision,
        start_after: after.map(Into::into),
        limit: Some(limit),
    }
}

/// A small deterministic generator, so failures reproduce.
fn lcg(x: &mut u64) -> u64 {
    *x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    *x >> 33
}

async fn create_get_update_delete(b: &impl Backing) {
    let s = b.store();
    let r = base(&s).await;
    let a = s.create("g/p/ns/a", obj("a", 1)).await.unwrap();
    assert_eq!(a["metadata"]["resourceVersion"], r(1).to_string());
    assert_eq!(s.get("g/p/ns/a").await.unwrap().unwrap(), a.object);
    assert_eq!(s.get("g/p/ns/b").await.unwrap(), None);

    assert_eq!(s.create("g/p/ns/a", obj("a", 9)).await, Err(StoreError::AlreadyExists));
    assert_eq!(
        s.update("g/p/ns/a", r(7), obj("a", 2)).await,
        Err(StoreError::Conflict { current_rev: r(1) })
    );
    assert_eq!(s.update("g/p/ns/b", r(1), obj("b", 2)).await, Err(StoreError::NotFound));

    let a2 = s.update("g/p/ns/a", r(1), obj("a", 2)).await.unwrap();
    assert_eq!(rv(&a2), r(2));
    assert_eq!(a2["spec"]["n"], 2);

    assert_eq!(s.delete("g/p/ns/a", r(1)).await, Err(StoreError::Conflict { current_rev: r(2) }));
    assert_eq!(s.delete("g/p/ns/b", r(1)).await, Err(StoreError::NotFound));
    let gone = s.delete("g/p/ns/a", r(2)).await.unwrap();
    // The last state, with the delete's revision.
    assert_eq!(rv(&gone), r(3));
    assert_eq!(gone["spec"]["n"], 2);
    assert_eq!(s.get("g/p/ns/a").await.unwrap(), None);
    assert_eq!(s.delete("g/p/ns/a", r(3)).await, Err(StoreError::NotFound));

    // A key can be created again after its delete.
    let again = s.create("g/p/ns/a", obj("a", 5)).await.unwrap();
    assert_eq!(rv(&again), r(4));
    assert_eq!(s.current_revision().await.unwrap(), r(4));
}

async fn non_objects_are_refused_without_using_a_revision(b: &impl Backing) {
    let s = b.store();
    let r = base(&s).await;
    assert!(matches!(s.create("g/p/ns/a", json!([1])).await, Err(StoreError::Internal(_))));
    assert!(matches!(
        s.create("g/p/ns/a", json!({"metadata": 1})).await,
        Err(StoreError::Internal(_))
    ));
    let a = s.create("g/p/ns/a", json!({})).await.unwrap();
    assert_eq!(rv(&a), r(1));
}

async fn revisions_have_no_gaps_across_failures(b: &impl Backing) {
    let s = b.store();
    let mut revs = Vec::new();
    for i in 0..5 {
        let key = format!("g/p/ns/{i}");
        revs.push(rv(&s.create(&key, obj("x", i)).await.unwrap()));
        // Failed writes do not use a revision.
        assert!(s.create(&key, obj("x", i)).await.is_err());
        assert!(s.update(&key, 999, obj("x", i)).await.is_err());
        s.probe().await.unwrap();
        s.secret("k").await.unwrap();
        let cur = *revs.last().unwrap();
        revs.push(rv(&s.update(&key, cur, obj("x", i + 10)).await.unwrap()));
        revs.push(rv(&s.delete(&key, cur + 1).await.unwrap()));
    }
    assert_eq!(revs, (1..=15).collect::<Vec<_>>());
    assert_eq!(s.current_revision().await.unwrap(), 15);
}

async fn list_pages_by_key_at_current_and_past_revisions(b: &impl Backing) {
    let s = b.store();
    let r = base(&s).await;
    for name in ["c", "a", "e", "b", "d"] {
        s.create(&format!("g/p/ns/{name}"), obj(name, 0)).await.unwrap();
    }
    // Same-prefix neighbours that must stay out: another namespace sorting right after, and a
    // cluster-scoped key of another plural.
    s.create("g/p/ns0/z", obj("z", 0)).await.unwrap();
    s.create("g.x/q//y", obj("y", 0)).await.unwrap();
    let at = s.current_revision().await.unwrap(); // 7

    // Current state, paged.
    let p1 = s.list(page("g/p/ns/", None, None, 2)).await.unwrap();
    assert_eq!((names(&p1), p1.more, p1.revision), (vec!["a", "b"], true, at));
    let p2 = s.list(page("g/p/ns/", None, Some("g/p/ns/b"), 2)).await.unwrap();
    assert_eq!((names(&p2), p2.more), (vec!["c", "d"], true));
    let p3 = s.list(page("g/p/ns/", None, Some("g/p/ns/d"), 2)).await.unwrap();
    assert_eq!((names(&p3), p3.more), (vec!["e"], false));
    let exact = s.list(page("g/p/ns/", None, None, 5)).await.unwrap();
    assert!(!exact.more);
    let all = s.list(ListRequest { prefix: "g/p/".into(), ..Default::default() }).await.unwrap();
    assert_eq!(names(&all), ["a", "b", "c", "d", "e", "z"]);
    assert_eq!(all.items[0].0, "g/p/ns/a");

    // Change things after `at`: delete b, update c, add f.
    s.delete("g/p/ns/b", r(4)).await.unwrap();
    s.update("g/p/ns/c", r(1), obj("c", 1)).await.unwrap();
    s.create("g/p/ns/f", obj("f", 0)).await.unwrap();
    let now = s.list(page("g/p/ns/", None, None, 10)).await.unwrap();
    assert_eq!(names(&now), ["a", "c", "d", "e", "f"]);
    assert_eq!(now.revision, r(10));

    // The past revision still sees b, the old c, and no f; paging continues at that revision.
    let old1 = s.list(page("g/p/ns/", Some(at), None, 3)).await.unwrap();
    assert_eq!((names(&old1), old1.more, old1.revision), (vec!["a", "b", "c"], true, at));
    assert_eq!(old1.items[2].1["spec"]["n"], 0);
    assert_eq!(rv(&old1.items[2].1), r(1));
    let old2 = s.list(page("g/p/ns/", Some(at), Some("g/p/ns/c"), 3)).await.unwrap();
    assert_eq!((names(&old2), old2.more), (vec!["d", "e"], false));

    // Between the delete and the update: b is gone (tombstone skipped), c is old.
    let mid = s.list(page("g/p/ns/", Some(r(8)), None, 10)).await.unwrap();
    assert_eq!(names(&mid), ["a", "c", "d", "e"]);
    assert_eq!(mid.items[1].1["spec"]["n"], 0);

    assert_eq!(
        s.list(page("g/p/ns/", Some(r(11)), None, 1)).await.unwrap_err(),
        StoreError::FutureRevision { current: r(10) }
    );
    let empty = s.list(page("g/x/", None, None, 1)).await.unwrap();
    assert!(empty.items.is_empty() && !empty.more);
}

async fn compaction_expires_old_revisions_and_keeps_state(b: &impl Backing) {
    let s = b.store();
    let r = base(&s).await;
    s.create("g/p/ns/a", obj("a", 0)).await.unwrap(); // 1
    s.create("g/p/ns/b", obj("b", 0)).await.unwrap(); // 2
    s.update("g/p/ns/a", r(1), obj("a", 1)).await.unwrap(); // 3
    s.delete("g/p/ns/b", r(2)).await.unwrap(); // 4
    s.create("g/p/ns/c", obj("c", 0)).await.unwrap(); // 5
    assert_eq!(s.compact(r(4)).await.unwrap(), r(4));
    assert_eq!(s.compact(r(2)).await.unwrap(), r(4));

    assert_eq!(
        s.list(page("g/p/", Some(r(3)), None, 10)).await.unwrap_err(),
        StoreError::Expired { compacted: r(4) }
    );
    assert_eq!(
        s.events_after("g/p/", r(3)).await.unwrap_err(),
        StoreError::Expired { compacted: r(4) }
    );
    let at4 = s.list(page("g/p/", Some(r(4)), None, 10)).await.unwrap();
    assert_eq!(names(&at4), ["a"]);
    assert_eq!(at4.items[0].1["spec"]["n"], 1);
    let now = s.list(page("g/p/", None, None, 10)).await.unwrap();
    assert_eq!(names(&now), ["a", "c"]);
    let replay = s.events_after("g/p/", r(4)).await.unwrap();
    assert_eq!(replay.iter().map(|e| e.rev).collect::<Vec<_>>(), [r(5)]);
    // The current object is still updatable at its revision.
    s.update("g/p/ns/a", r(3), obj("a", 2)).await.unwrap();
}

async fn events_after_replays_kinds_and_previous_state(b: &impl Backing) {
    let s = b.store();
    let r = base(&s).await;
    s.create("g/p/ns/a", obj("a", 0)).await.unwrap(); // 1
    s.create("g/p/other/x", obj("x", 0)).await.unwrap(); // 2, other prefix
    s.update("g/p/ns/a", r(1), obj("a", 1)).await.unwrap(); // 3
    s.delete("g/p/ns/a", r(3)).await.unwrap(); // 4
    s.create("g/p/ns/a", obj("a", 2)).await.unwrap(); // 5

    let events = s.events_after("g/p/ns/", r(0)).await.unwrap();
    let summary: Vec<_> = events.iter().map(|e| (e.rev, e.kind, e.key.as_str())).collect();
    assert_eq!(
        summary,
        [
            (r(1), EventType::Added, "g/p/ns/a"),
            (r(3), EventType::Modified, "g/p/ns/a"),
            (r(4), EventType::Deleted, "g/p/ns/a"),
            (r(5), EventType::Added, "g/p/ns/a"),
        ]
    );
    assert!(events[0].prev.is_none());
    assert_eq!(events[1].prev().unwrap()["spec"]["n"], 0);
    assert_eq!(rv(events[2].prev().unwrap()), r(3));
    assert_eq!(rv(&events[2].object), r(4));
    assert_eq!(events[2].object["spec"]["n"], 1);
    // A re-create has no previous state even though a tombstone precedes it.
    assert!(events[3].prev.is_none());
    assert_eq!(s.events_after("g/p/ns/", r(4)).await.unwrap().len(), 1);
    assert!(s.events_after("g/p/ns/", r(99)).await.unwrap().is_empty());
}

async fn live_events_follow_commits_in_order(b: &impl Backing) {
    let s = b.store();
    let r = base(&s).await;
    let mut rx = s.subscribe(|_| true);
    s.create("g/p/ns/a", obj("a", 0)).await.unwrap();
    s.update("g/p/ns/a", r(1), obj("a", 1)).await.unwrap();
    let _ = s.update("g/p/ns/a", r(1), obj("a", 1)).await; // conflict: no event
    s.delete("g/p/ns/a", r(2)).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let e = rx.recv().await.unwrap();
        seen.push((e.rev, e.kind));
    }
    assert_eq!(
        seen,
        [(r(1), EventType::Added), (r(2), EventType::Modified), (r(3), EventType::Deleted)]
    );
    assert_eq!(rx.taken_through(), Some(r(3)), "nothing more queued");
}

async fn a_filtered_subscription_queues_only_what_passes(b: &impl Backing) {
    let s = b.store();
    let r = base(&s).await;
    let mut rx = s.subscribe(|e| e.kind != EventType::Modified);
    s.create("g/p/ns/a", obj("a", 0)).await.unwrap();
    s.update("g/p/ns/a", r(1), obj("a", 1)).await.unwrap();
    s.update("g/p/ns/a", r(2), obj("a", 2)).await.unwrap();
    s.delete("g/p/ns/a", r(3)).await.unwrap();
    assert_eq!(rx.recv().await.unwrap().rev, r(1));
    assert_eq!(rx.recv().await.unwrap().rev, r(4), "the updates were never queued");
    // What it skipped still counts as seen: nothing is pending.
    assert_eq!(rx.taken_through(), Some(r(4)));
}

async fn counts_after_a_key_match_the_list_at_every_revision(b: &impl Backing) {
    let s = b.store();
    let r = base(&s).await;
    let mut live: std::collections::BTreeMap<String, u64> = Default::default();
    let mut x = 7;
    for i in 0..400 {
        let key = format!("g/p/ns/k{:02}", lcg(&mut x) % 40);
        let rev = match live.get(&key).copied() {
            None => rv(&s.create(&key, obj(&key, i)).await.unwrap()),
            Some(r) if lcg(&mut x).is_multiple_of(4) => {
                s.delete(&key, r).await.unwrap();
                live.remove(&key);
                continue;
            }
            Some(r) => rv(&s.update(&key, r, obj(&key, i)).await.unwrap()),
        };
        live.insert(key, rev);
        if i % 7 == 0 {
            // Neighbours outside the prefix must not be counted.
            s.create(&format!("g/p/ns0/n{i}"), obj("n", i)).await.unwrap();
        }
    }
    let now = s.current_revision().await.unwrap();
    for rev in (r(1)..=now).step_by(37).chain([now]) {
        let all = s
            .list(ListRequest {
                prefix: "g/p/ns/".into(),
                revision: Some(rev),
                ..Default::default()
            })
            .await
            .unwrap();
        assert_eq!(s.count_after("g/p/ns/", "g/p/ns/", rev).await.unwrap(), all.items.len() as u64);
        for (i, (key, _)) in all.items.iter().enumerate() {
            let want = (all.items.len() - i - 1) as u64;
            assert_eq!(s.count_after("g/p/ns/", key, rev).await.unwrap(), want, "{key} at {rev}");
        }
    }
    assert_eq!(
        s.count_after("g/p/ns/", "g/p/ns/a", now + 1).await,
        Err(StoreError::FutureRevision { current: now })
    );
    s.compact(now - 10).await.unwrap();
    assert!(matches!(
        s.count_after("g/p/ns/", "g/p/ns/", r(1)).await,
        Err(StoreError::Expired { .. })
    ));
}

async fn compaction_follows_the_configured_window_once_started(b: &impl Backing) {
    let mut cfg = StoreConfig::new("");
    cfg.retention = RetentionConfig {
        window: std::time::Duration::from_millis(100),
        min_revisions: 5,
        interval: std::time::Duration::from_millis(10),
    };
    let s = b.open(cfg);
    let r = base(&s).await;
    let mut rev = rv(&s.create("g/p/ns/a", obj("a", 0)).await.unwrap());
    for i in 1..50 {
        rev = rv(&s.update("g/p/ns/a", rev, obj("a", i)).await.unwrap());
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // Not started: everything is still there.
    assert_eq!(s.events_after("g/p/", r(0)).await.unwrap().len(), 50);
    s.start_compaction();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match s.events_after("g/p/", r(0)).await {
            Err(StoreError::Expired { compacted }) => {
                // Never beyond the newest 5 revisions.
                assert!(compacted <= rev - 5, "{compacted}");
                if compacted == rev - 5 {
                    break;
                }
            }
            Ok(_) => {}
            Err(e) => panic!("{e}"),
        }
        assert!(std::time::Instant::now() < deadline, "compaction did not run");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(s.events_after("g/p/", rev - 5).await.unwrap().len(), 5);
    assert_eq!(s.get("g/p/ns/a").await.unwrap().unwrap()["spec"]["n"], 49);
}

async fn reopening_keeps_data_revision_and_secrets(b: &impl Backing) {
    let open = || b.store();

    let s = open();
    let r = base(&s).await;
    s.create("g/p/ns/a", obj("a", 0)).await.unwrap();
    s.create("g/p/ns/b", obj("b", 0)).await.unwrap();
    s.delete("g/p/ns/b", r(2)).await.unwrap();
    // Compacting the newest row (a tombstone) must not let its revision be reused.
    assert_eq!(s.compact(r(3)).await.unwrap(), r(3));
    let secret = s.secret("tokens").await.unwrap();
    assert_eq!(secret.len(), 32);
    assert_eq!(s.secret("tokens").await.unwrap(), secret);
    assert_ne!(s.secret("other").await.unwrap(), secret);
    drop(s);

    let s = open();
    let now = s.current_revision().await.unwrap();
    if b.gap_free() {
        assert_eq!(now, 3);
    } else {
        // The compaction mark and the secrets took revisions too.
        assert!(now >= r(3), "{now}");
    }
    assert_eq!(s.secret("tokens").await.unwrap(), secret);
    assert_eq!(s.get("g/p/ns/a").await.unwrap().unwrap()["spec"]["n"], 0);
    assert_eq!(s.get("g/p/ns/b").await.unwrap(), None);
    assert_eq!(
        s.list(page("g/p/", Some(r(2)), None, 1)).await.unwrap_err(),
        StoreError::Expired { compacted: r(3) }
    );
    let b = s.create("g/p/ns/b", obj("b", 1)).await.unwrap();
    assert_eq!(rv(&b), now + 1);
}

async fn the_cache_equals_the_log_at_its_revision(b: &impl Backing) {
    let s = b.store();
    let all = |revision| ListRequest { prefix: "g/".into(), revision, ..Default::default() };
    let mut live: std::collections::BTreeMap<String, u64> = Default::default();
    let mut snapshots = Vec::new();
    for i in 0..300i64 {
        let key = format!("g/p/ns{}/k{}", i % 3, i % 17);
        match live.get(&key).copied() {
            None => live.insert(key.clone(), rv(&s.create(&key, obj(&key, i)).await.unwrap())),
            Some(r) if i % 4 == 0 => {
                s.delete(&key, r).await.unwrap();
                live.remove(&key)
            }
            Some(r) => {
                live.insert(key.clone(), rv(&s.update(&key, r, obj(&key, i)).await.unwrap()))
            }
        };
        if i % 10 == 0 {
            // Served from memory: the current revision.
            let page = s.list_raw(all(None)).await.unwrap();
            assert_eq!(page.revision, s.current_revision().await.unwrap());
            let keys: Vec<&String> = page.items.iter().map(|(k, _)| k).collect();
            assert_eq!(keys, live.keys().collect::<Vec<_>>());
            snapshots.push(page);
        }
    }
    s.create("g/p/ns0/last", obj("last", 0)).await.unwrap();
    // Each snapshot, now in the past, is read from the log: the very same bytes.
    for snap in &snapshots {
        let logged = s.list_raw(all(Some(snap.revision))).await.unwrap();
        assert_eq!(logged.items, snap.items, "at revision {}", snap.revision);
    }
    let now = s.list_raw(all(None)).await.unwrap();
    drop(s);
    // Start-up loads the same state from the log.
    let s = b.store();
    let reloaded = s.list_raw(all(None)).await.unwrap();
    assert_eq!((reloaded.revision, reloaded.items), (now.revision, now.items));
    let key = live.keys().next().unwrap().as_str();
    let entry = s.get_raw(key).unwrap();
    assert_eq!(entry.rev, live[key]);
    assert_eq!(
        Some(Arc::new(serde_json::from_slice(&entry.value).unwrap())),
        s.get(key).await.unwrap()
    );
}

async fn gets_at_a_revision_see_that_revision(b: &impl Backing) {
    let s = b.store();
    let r = base(&s).await;
    s.create("g/p/ns/a", obj("a", 0)).await.unwrap(); // 1
    s.update("g/p/ns/a", r(1), obj("a", 1)).await.unwrap(); // 2
    s.create("g/p/ns/b", obj("b", 0)).await.unwrap(); // 3
    s.delete("g/p/ns/a", r(2)).await.unwrap(); // 4
    let at = |rev| {
        let s = s.clone();
        async move { s.get_at("g/p/ns/a", rev).await }
    };
    let one = at(r(1)).await.unwrap().unwrap();
    assert_eq!((one.rev, one.create_rev), (r(1), r(1)));
    let one: Value = serde_json::from_slice(&one.value).unwrap();
    assert_eq!((rv(&one), &one["spec"]["n"]), (r(1), &json!(0)));
    let two = at(r(3)).await.unwrap().unwrap();
    assert_eq!((two.rev, two.create_rev), (r(2), r(1)));
    assert_eq!(rv(&serde_json::from_slice(&two.value).unwrap()), r(2));
    // Deleted at 4, which is now: from memory.
    assert_eq!(at(r(4)).await.unwrap(), None);
    assert_eq!(s.get_at("g/p/ns/b", r(4)).await.unwrap(), s.get_raw("g/p/ns/b"));
    assert_eq!(s.get_at("g/p/ns/b", r(2)).await.unwrap(), None);
    assert_eq!(at(r(5)).await, Err(StoreError::FutureRevision { current: r(4) }));
    assert_eq!(s.compact(r(2)).await.unwrap(), r(2));
    assert_eq!(s.compacted_revision().await.unwrap(), r(2));
    assert_eq!(at(r(1)).await, Err(StoreError::Expired { compacted: r(2) }));
    assert_eq!(at(r(2)).await.unwrap().unwrap().rev, r(2));
}

/// Every path that serves an object sends its bytes with the resourceVersion set: exactly the
/// encoding of the object it answers, whatever resourceVersion the caller's object held.
async fn served_bytes_are_the_objects_with_their_revision(b: &impl Backing) {
    let s = b.store();
    let r = base(&s).await;
    let mut rx = s.subscribe(|_| true);
    let stale = json!({"metadata": {"name": "a", "resourceVersion": "99", "labels": {
        "resourceVersion": "x"}}, "spec": {"metadata": {"resourceVersion": "y"}}});
    let bare = json!({"kind": "K"});
    let written = [
        s.create("g/p/ns/a", stale.clone()).await.unwrap(),
        s.create("g/p/ns/b", bare).await.unwrap(),
        s.update("g/p/ns/a", r(1), stale).await.unwrap(),
        s.delete("g/p/ns/b", r(2)).await.unwrap(),
    ];
    for (w, rev) in written.iter().zip(r(1)..) {
        assert_eq!(rv(&w.object), rev);
        assert_eq!(w.value, serde_json::to_vec(&*w.object).unwrap(), "answer at {rev}");
        let ev = rx.recv().await.unwrap();
        assert_eq!((ev.rev, &ev.object, &ev.value), (rev, &w.object, &w.value));
    }
    assert_eq!(written[0].object["metadata"]["labels"]["resourceVersion"], "x");
    assert_eq!(written[0].object["spec"]["metadata"]["resourceVersion"], "y");
    assert_eq!(written[3].object["kind"], "K");
    let cached = s.get_raw("g/p/ns/a").unwrap();
    assert_eq!(cached.value, written[2].value);
    let replay = s.events_after("g/p/", r(0)).await.unwrap();
    assert_eq!(replay.len(), 4);
    for (ev, w) in replay.iter().zip(&written) {
        assert_eq!((&ev.object, &ev.value), (&w.object, &w.value), "replayed {}", ev.rev);
    }
    let past = s.list_raw(page("g/p/", Some(r(3)), None, 10)).await.unwrap();
    assert_eq!(past.items[0].1, written[2].value);
    assert_eq!(past.items[1].1, written[1].value);
}

async fn waiting_for_a_revision_wakes_on_its_commit(b: &impl Backing) {
    let s = b.store();
    let r = base(&s).await;
    s.create("g/p/ns/a", obj("a", 0)).await.unwrap();
    // Reached already: at once.
    assert_eq!(s.wait_for_revision(r(1)).await.unwrap(), r(1));
    assert_eq!(s.wait_for_revision(0).await.unwrap(), r(1));
    let waiting = tokio::spawn(s.wait_for_revision(r(3)));
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(!waiting.is_finished(), "revision 3 is not there yet");
    s.update("g/p/ns/a", r(1), obj("a", 1)).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(!waiting.is_finished(), "revision 2 is not 3");
    let third = s.create("g/p/ns/b", obj("b", 0)).await.unwrap();
    let reached = tokio::time::timeout(std::time::Duration::from_secs(5), waiting).await;
    assert_eq!(reached.expect("woken by the commit").unwrap().unwrap(), rv(&third));
    // Woken, the cache is there too: a read sees the commit.
    assert!(s.get("g/p/ns/b").await.unwrap().is_some());
    // A store that goes away wakes its waiters with an error instead of leaving them hanging.
    let never = tokio::spawn(s.wait_for_revision(r(100)));
    drop(s);
    let ended = tokio::time::timeout(std::time::Duration::from_secs(5), never).await;
    assert!(matches!(ended.expect("woken").unwrap(), Err(StoreError::Unavailable(_))));
}

/// The watch protocol's guarantee from the store's side: whatever a subscriber reads after
/// subscribing, every commit is either in what it read or in its subscription.
async fn a_watch_subscribed_before_a_read_misses_nothing(b: &impl Backing) {
    let s = b.store();
    let r = base(&s).await;
    let writer = {
        let s = s.clone();
        tokio::spawn(async move {
            for i in 0..200 {
                s.create(&format!("g/p/ns/k{i:03}"), obj("k", i)).await.unwrap();
            }
        })
    };
    let mut reads = 0;
    loop {
        let mut live = s.watch_events("g/p/");
        let read = s.list_raw(ListRequest { prefix: "g/p/".into(), ..Default::default() });
        let read = read.await.unwrap();
        assert_eq!(r(read.items.len() as u64), read.revision, "one object per revision");
        if read.revision == r(200) {
            break;
        }
        // The first commit after the read arrives live, whatever else raced the read.
        let mut ev = live.recv().await.unwrap();
        while ev.rev <= read.revision {
            ev = live.recv().await.unwrap();
        }
        assert_eq!(ev.rev, read.revision + 1, "no gap after the read");
        reads += 1;
    }
    writer.await.unwrap();
    assert!(reads > 0, "the writer raced no read");
}

/// A reset deletes what is not saved, writes back what changed or went, leaves the rest, at a new
/// revision below which history is compacted; open watches end, re-scanning consumers re-scan.
async fn a_reset_puts_back_the_saved_state_and_expires_history(b: &impl Backing) {
    let s = b.store();
    s.create("g/p/ns/kept", obj("kept", 0)).await.unwrap();
    let changed = s.create("g/p/ns/changed", obj("changed", 0)).await.unwrap();
    let gone = s.create("g/p/ns/gone", obj("gone", 0)).await.unwrap();
    let saved = s.save().unwrap();
    assert_eq!(saved.len(), 3);
    let kept_rev = s.get_raw("g/p/ns/kept").unwrap().rev;
    s.update("g/p/ns/changed", rv(&changed.object), obj("changed", 1)).await.unwrap();
    s.delete("g/p/ns/gone", rv(&gone.object)).await.unwrap();
    s.create("g/p/ns/new", obj("new", 0)).await.unwrap();
    let mut watch = s.watch_events("g/p/");
    let mut consumer = s.subscribe(|_| true);
    s.create("g/p/ns/queued", obj("queued", 0)).await.unwrap();
    let before = s.current_revision().await.unwrap();

    let stats = s.reset(&saved).await.unwrap();
    assert_eq!((stats.created, stats.updated, stats.deleted), (1, 1, 2));
    assert!(stats.revision > before);
    assert_eq!(s.current_revision().await.unwrap(), stats.revision);
    let now = s.list(page("g/p/", None, None, 10)).await.unwrap();
    assert_eq!(names(&now), ["changed", "gone", "kept"]);
    assert_eq!(now.items[0].1["spec"]["n"], 0);
    assert_eq!(s.get_raw("g/p/ns/kept").unwrap().rev, kept_rev, "an unchanged key is not written");
    assert_eq!(s.save().unwrap(), saved);
    // History before the reset is gone; the reset's revision is readable.
    assert!(matches!(
        s.list(page("g/p/", Some(before), None, 10)).await,
        Err(StoreError::Expired { .. })
    ));
    assert!(matches!(s.events_after("g/p/", before).await, Err(StoreError::Expired { .. })));
    assert!(s.events_after("g/p/", stats.revision).await.unwrap().is_empty());
    // The watch gets what was queued before the reset, none of its writes, then its end; the
    // consumer hears of the loss.
    let mut ended = false;
    for _ in 0..10 {
        match watch.recv().await {
            Ok(ev) => assert!(ev.rev <= before, "the reset's event {ev:?}"),
            Err(e) => {
                assert!(matches!(e, tokio::sync::broadcast::error::RecvError::Closed), "{e:?}");
                ended = true;
                break;
            }
        }
    }
    assert!(ended, "the watch ended");
    let mut lagged = false;
    for _ in 0..10 {
        if let Err(tokio::sync::broadcast::error::RecvError::Lagged(rev)) = consumer.recv().await {
            assert!(rev >= before);
            lagged = true;
            break;
        }
    }
    assert!(lagged, "the consumer was told to re-scan");
    // A second reset to the same state writes nothing.
    let again = s.reset(&saved).await.unwrap();
    assert_eq!((again.created, again.updated, again.deleted), (0, 0, 0));
}
