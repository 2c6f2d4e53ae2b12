//! Unit tests of the store's semantics through its public handle.

use serde_json::json;

use super::*;

fn memory() -> Store {
    Store::open(StoreConfig::new(":memory:")).unwrap()
}

fn obj(name: &str, n: i64) -> Value {
    json!({"kind": "Thing", "metadata": {"name": name}, "spec": {"n": n}})
}

fn rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
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

#[tokio::test]
async fn create_get_update_delete() {
    let s = memory();
    assert_eq!(s.current_revision().await.unwrap(), 0);
    let a = s.create("g/p/ns/a", obj("a", 1)).await.unwrap();
    assert_eq!(a["metadata"]["resourceVersion"], "1");
    assert_eq!(s.get("g/p/ns/a").await.unwrap().unwrap(), a.object);
    assert_eq!(s.get("g/p/ns/b").await.unwrap(), None);

    assert_eq!(s.create("g/p/ns/a", obj("a", 9)).await, Err(StoreError::AlreadyExists));
    assert_eq!(
        s.update("g/p/ns/a", 7, obj("a", 2)).await,
        Err(StoreError::Conflict { current_rev: 1 })
    );
    assert_eq!(s.update("g/p/ns/b", 1, obj("b", 2)).await, Err(StoreError::NotFound));

    let a2 = s.update("g/p/ns/a", 1, obj("a", 2)).await.unwrap();
    assert_eq!(rv(&a2), 2);
    assert_eq!(a2["spec"]["n"], 2);

    assert_eq!(s.delete("g/p/ns/a", 1).await, Err(StoreError::Conflict { current_rev: 2 }));
    assert_eq!(s.delete("g/p/ns/b", 1).await, Err(StoreError::NotFound));
    let gone = s.delete("g/p/ns/a", 2).await.unwrap();
    // The last state, with the delete's revision.
    assert_eq!(rv(&gone), 3);
    assert_eq!(gone["spec"]["n"], 2);
    assert_eq!(s.get("g/p/ns/a").await.unwrap(), None);
    assert_eq!(s.delete("g/p/ns/a", 3).await, Err(StoreError::NotFound));

    // A key can be created again after its delete.
    let again = s.create("g/p/ns/a", obj("a", 5)).await.unwrap();
    assert_eq!(rv(&again), 4);
    assert_eq!(s.current_revision().await.unwrap(), 4);
}

#[tokio::test]
async fn non_objects_are_refused_without_using_a_revision() {
    let s = memory();
    assert!(matches!(s.create("g/p/ns/a", json!([1])).await, Err(StoreError::Internal(_))));
    assert!(matches!(
        s.create("g/p/ns/a", json!({"metadata": 1})).await,
        Err(StoreError::Internal(_))
    ));
    let a = s.create("g/p/ns/a", json!({})).await.unwrap();
    assert_eq!(rv(&a), 1);
}

#[tokio::test]
async fn revisions_have_no_gaps_across_failures() {
    let s = memory();
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

#[tokio::test]
async fn list_pages_by_key_at_current_and_past_revisions() {
    let s = memory();
    for name in ["c", "a", "e", "b", "d"] {
        s.create(&format!("g/p/ns/{name}"), obj(name, 0)).await.unwrap();
    }
    // Same-prefix neighbours that must stay out: another namespace sorting right after, and a
    // cluster-scoped key of another plural.
    s.create("g/p/ns0/z", obj("z", 0)).await.unwrap();
    s.create("g/q//y", obj("y", 0)).await.unwrap();
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
    s.delete("g/p/ns/b", 4).await.unwrap();
    s.update("g/p/ns/c", 1, obj("c", 1)).await.unwrap();
    s.create("g/p/ns/f", obj("f", 0)).await.unwrap();
    let now = s.list(page("g/p/ns/", None, None, 10)).await.unwrap();
    assert_eq!(names(&now), ["a", "c", "d", "e", "f"]);
    assert_eq!(now.revision, 10);

    // The past revision still sees b, the old c, and no f; paging continues at that revision.
    let old1 = s.list(page("g/p/ns/", Some(at), None, 3)).await.unwrap();
    assert_eq!((names(&old1), old1.more, old1.revision), (vec!["a", "b", "c"], true, at));
    assert_eq!(old1.items[2].1["spec"]["n"], 0);
    assert_eq!(rv(&old1.items[2].1), 1);
    let old2 = s.list(page("g/p/ns/", Some(at), Some("g/p/ns/c"), 3)).await.unwrap();
    assert_eq!((names(&old2), old2.more), (vec!["d", "e"], false));

    // Between the delete and the update: b is gone (tombstone skipped), c is old.
    let mid = s.list(page("g/p/ns/", Some(8), None, 10)).await.unwrap();
    assert_eq!(names(&mid), ["a", "c", "d", "e"]);
    assert_eq!(mid.items[1].1["spec"]["n"], 0);

    assert_eq!(
        s.list(page("g/p/ns/", Some(11), None, 1)).await.unwrap_err(),
        StoreError::FutureRevision { current: 10 }
    );
    let empty = s.list(page("g/x/", None, None, 1)).await.unwrap();
    assert!(empty.items.is_empty() && !empty.more);
}

#[tokio::test]
async fn compaction_expires_old_revisions_and_keeps_state() {
    let s = memory();
    s.create("g/p/ns/a", obj("a", 0)).await.unwrap(); // 1
    s.create("g/p/ns/b", obj("b", 0)).await.unwrap(); // 2
    s.update("g/p/ns/a", 1, obj("a", 1)).await.unwrap(); // 3
    s.delete("g/p/ns/b", 2).await.unwrap(); // 4
    s.create("g/p/ns/c", obj("c", 0)).await.unwrap(); // 5
    assert_eq!(s.compact(4).await.unwrap(), 4);
    assert_eq!(s.compact(2).await.unwrap(), 4);

    assert_eq!(
        s.list(page("g/p/", Some(3), None, 10)).await.unwrap_err(),
        StoreError::Expired { compacted: 4 }
    );
    assert_eq!(s.events_after("g/p/", 3).await.unwrap_err(), StoreError::Expired { compacted: 4 });
    let at4 = s.list(page("g/p/", Some(4), None, 10)).await.unwrap();
    assert_eq!(names(&at4), ["a"]);
    assert_eq!(at4.items[0].1["spec"]["n"], 1);
    let now = s.list(page("g/p/", None, None, 10)).await.unwrap();
    assert_eq!(names(&now), ["a", "c"]);
    let replay = s.events_after("g/p/", 4).await.unwrap();
    assert_eq!(replay.iter().map(|e| e.rev).collect::<Vec<_>>(), [5]);
    // The current object is still updatable at its revision.
    s.update("g/p/ns/a", 3, obj("a", 2)).await.unwrap();
}

#[tokio::test]
async fn events_after_replays_kinds_and_previous_state() {
    let s = memory();
    s.create("g/p/ns/a", obj("a", 0)).await.unwrap(); // 1
    s.create("g/p/other/x", obj("x", 0)).await.unwrap(); // 2, other prefix
    s.update("g/p/ns/a", 1, obj("a", 1)).await.unwrap(); // 3
    s.delete("g/p/ns/a", 3).await.unwrap(); // 4
    s.create("g/p/ns/a", obj("a", 2)).await.unwrap(); // 5

    let events = s.events_after("g/p/ns/", 0).await.unwrap();
    let summary: Vec<_> = events.iter().map(|e| (e.rev, e.kind, e.key.as_str())).collect();
    assert_eq!(
        summary,
        [
            (1, EventType::Added, "g/p/ns/a"),
            (3, EventType::Modified, "g/p/ns/a"),
            (4, EventType::Deleted, "g/p/ns/a"),
            (5, EventType::Added, "g/p/ns/a"),
        ]
    );
    assert!(events[0].prev.is_none());
    assert_eq!(events[1].prev().unwrap()["spec"]["n"], 0);
    assert_eq!(rv(events[2].prev().unwrap()), 3);
    assert_eq!(rv(&events[2].object), 4);
    assert_eq!(events[2].object["spec"]["n"], 1);
    // A re-create has no previous state even though a tombstone precedes it.
    assert!(events[3].prev.is_none());
    assert_eq!(s.events_after("g/p/ns/", 4).await.unwrap().len(), 1);
    assert!(s.events_after("g/p/ns/", 99).await.unwrap().is_empty());
}

#[tokio::test]
async fn live_events_follow_commits_in_order() {
    let s = memory();
    let mut rx = s.subscribe(|_| true);
    s.create("g/p/ns/a", obj("a", 0)).await.unwrap();
    s.update("g/p/ns/a", 1, obj("a", 1)).await.unwrap();
    let _ = s.update("g/p/ns/a", 1, obj("a", 1)).await; // conflict: no event
    s.delete("g/p/ns/a", 2).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let e = rx.recv().await.unwrap();
        seen.push((e.rev, e.kind));
    }
    assert_eq!(seen, [(1, EventType::Added), (2, EventType::Modified), (3, EventType::Deleted)]);
    assert_eq!(rx.taken_through(), Some(3), "nothing more queued");
}

#[tokio::test]
async fn a_filtered_subscription_queues_only_what_passes() {
    let s = memory();
    let mut rx = s.subscribe(|e| e.kind != EventType::Modified);
    s.create("g/p/ns/a", obj("a", 0)).await.unwrap();
    s.update("g/p/ns/a", 1, obj("a", 1)).await.unwrap();
    s.update("g/p/ns/a", 2, obj("a", 2)).await.unwrap();
    s.delete("g/p/ns/a", 3).await.unwrap();
    assert_eq!(rx.recv().await.unwrap().rev, 1);
    assert_eq!(rx.recv().await.unwrap().rev, 4, "the updates were never queued");
    // What it skipped still counts as seen: nothing is pending.
    assert_eq!(rx.taken_through(), Some(4));
}

#[tokio::test]
async fn reopening_a_file_keeps_data_revision_and_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").to_str().unwrap().to_owned();
    let open = || Store::open(StoreConfig::new(path.clone())).unwrap();

    let s = open();
    assert_eq!(s.pragmas().await.unwrap(), ("wal".to_owned(), 2));
    s.create("g/p/ns/a", obj("a", 0)).await.unwrap();
    s.create("g/p/ns/b", obj("b", 0)).await.unwrap();
    s.delete("g/p/ns/b", 2).await.unwrap();
    // Compacting the newest row (a tombstone) must not let its revision be reused.
    assert_eq!(s.compact(3).await.unwrap(), 3);
    let secret = s.secret("tokens").await.unwrap();
    assert_eq!(secret.len(), 32);
    assert_eq!(s.secret("tokens").await.unwrap(), secret);
    assert_ne!(s.secret("other").await.unwrap(), secret);
    drop(s);

    let s = open();
    assert_eq!(s.current_revision().await.unwrap(), 3);
    assert_eq!(s.secret("tokens").await.unwrap(), secret);
    assert_eq!(s.get("g/p/ns/a").await.unwrap().unwrap()["spec"]["n"], 0);
    assert_eq!(s.get("g/p/ns/b").await.unwrap(), None);
    assert_eq!(
        s.list(page("g/p/", Some(2), None, 1)).await.unwrap_err(),
        StoreError::Expired { compacted: 3 }
    );
    let b = s.create("g/p/ns/b", obj("b", 1)).await.unwrap();
    assert_eq!(rv(&b), 4);
}

#[tokio::test]
async fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").to_str().unwrap().to_owned();
    drop(Store::open(StoreConfig::new(path.clone())).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE meta SET value = 99 WHERE name = 'schema_version'", []).unwrap();
    drop(conn);
    assert!(matches!(Store::open(StoreConfig::new(path)), Err(StoreError::Internal(_))));
}

#[tokio::test]
async fn memory_store_uses_full_sync() {
    let s = memory();
    assert_eq!(s.pragmas().await.unwrap(), ("memory".to_owned(), 2));
    s.probe().await.unwrap();
    assert_eq!(s.current_revision().await.unwrap(), 0);
}

#[test]
fn opening_an_unusable_path_fails() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing/dir/store.db").to_str().unwrap().to_owned();
    assert!(matches!(Store::open(StoreConfig::new(path)), Err(StoreError::Unavailable(_))));
}

/// A small deterministic generator, so failures reproduce.
fn lcg(x: &mut u64) -> u64 {
    *x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    *x >> 33
}

#[tokio::test]
async fn counts_after_a_key_match_the_list_at_every_revision() {
    let s = memory();
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
    for rev in (1..=now).step_by(37).chain([now]) {
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
        s.count_after("g/p/ns/", "g/p/ns/", 1).await,
        Err(StoreError::Expired { .. })
    ));
}

#[tokio::test]
async fn compaction_follows_the_configured_window_once_started() {
    let mut cfg = StoreConfig::new(":memory:");
    cfg.retention = RetentionConfig {
        window: std::time::Duration::from_millis(100),
        min_revisions: 5,
        interval: std::time::Duration::from_millis(10),
    };
    let s = Store::open(cfg).unwrap();
    let mut rev = rv(&s.create("g/p/ns/a", obj("a", 0)).await.unwrap());
    for i in 1..50 {
        rev = rv(&s.update("g/p/ns/a", rev, obj("a", i)).await.unwrap());
    }
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // Not started: everything is still there.
    assert_eq!(s.events_after("g/p/", 0).await.unwrap().len(), 50);
    s.start_compaction();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match s.events_after("g/p/", 0).await {
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

#[tokio::test]
async fn compaction_runs_beside_writes_in_small_batches() {
    let mut cfg = StoreConfig::new(":memory:");
    cfg.retention = RetentionConfig {
        window: std::time::Duration::from_millis(1),
        min_revisions: 0,
        interval: std::time::Duration::from_millis(1),
    };
    let s = Store::open(cfg).unwrap();
    s.start_compaction();
    let mut rev = rv(&s.create("g/p/ns/a", obj("a", 0)).await.unwrap());
    let mut slowest = std::time::Duration::ZERO;
    for i in 1..3000 {
        let t0 = std::time::Instant::now();
        rev = rv(&s.update("g/p/ns/a", rev, obj("a", i)).await.unwrap());
        slowest = slowest.max(t0.elapsed());
    }
    // Compaction kept up while writing, and no write waited long behind it.
    assert!(slowest < std::time::Duration::from_millis(500), "a write took {slowest:?}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !matches!(s.events_after("g/p/", rev - 1).await, Err(StoreError::Expired { .. })) {
        assert!(std::time::Instant::now() < deadline, "compaction did not catch up");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(s.get("g/p/ns/a").await.unwrap().unwrap()["spec"]["n"], 2999);
}

/// Holds SQLite's write lock from a second connection until dropped, so writes sent meanwhile
/// queue up in the store's channel and meet in one batch.
struct WriteLock(rusqlite::Connection);

impl WriteLock {
    fn take(path: &std::path::Path) -> WriteLock {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        WriteLock(conn)
    }
}

impl Drop for WriteLock {
    fn drop(&mut self) {
        self.0.execute_batch("ROLLBACK").unwrap();
    }
}

/// Starts `ops` on their own threads, each with its own runtime, as concurrent clients would,
/// waits until all are queued behind the lock, releases it, and collects the answers.
fn concurrently<T: Send + 'static>(
    s: &Store,
    lock: WriteLock,
    ops: Vec<Box<dyn FnOnce(Store) -> T + Send>>,
) -> Vec<T> {
    let n = ops.len();
    let threads: Vec<_> = ops
        .into_iter()
        .map(|op| {
            let s = s.clone();
            std::thread::spawn(move || op(s))
        })
        .collect();
    // The first write waits for the lock inside the store thread; the others wait in its
    // channel. A generous pause lets every thread send before the lock goes.
    std::thread::sleep(std::time::Duration::from_millis(300 + 10 * n as u64));
    drop(lock);
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
}

#[test]
fn concurrent_writes_share_commits() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let s = Store::open(StoreConfig::new(path.to_str().unwrap())).unwrap();
    let n: i64 = 64;
    let lock = WriteLock::take(&path);
    let ops = (0..n)
        .map(|i| {
            Box::new(move |s: Store| {
                let key = format!("g/p/ns/o{i:03}");
                block_on(s.create(&key, obj(&key, i))).map(|o| rv(&o))
            }) as Box<dyn FnOnce(Store) -> _ + Send>
        })
        .collect();
    let mut revs: Vec<u64> = concurrently(&s, lock, ops).into_iter().map(Result::unwrap).collect();
    revs.sort_unstable();
    assert_eq!(revs, (1..=n as u64).collect::<Vec<_>>(), "gap-free, one revision each");
    let stats = s.write_stats();
    assert_eq!(stats.writes, n as u64);
    // The first write waited alone for the lock; everything queued behind it shares commits.
    assert!(stats.commits < stats.writes / 4, "{stats:?}");
    let list = block_on(s.list(ListRequest { prefix: "g/p/".into(), ..Default::default() }));
    assert_eq!(list.unwrap().items.len(), n as usize);
}

#[test]
fn writes_in_one_batch_see_those_staged_before_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let s = Store::open(StoreConfig::new(path.to_str().unwrap())).unwrap();
    let lock = WriteLock::take(&path);
    type Op = Box<dyn FnOnce(Store) -> Result<Written, StoreError> + Send>;
    let twin = |n| -> Op { Box::new(move |s| block_on(s.create("g/p/ns/twin", obj("twin", n)))) };
    let ops: Vec<Op> = vec![
        // Waits alone for the lock; the rest share one batch.
        Box::new(|s| block_on(s.create("g/p/ns/first", obj("first", 1)))),
        twin(2),
        twin(3),
        twin(4),
    ];
    let results = concurrently(&s, lock, ops);
    let created: Vec<&Written> = results[1..].iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(created.len(), 1, "{results:?}");
    assert_eq!(results[1..].iter().filter(|r| **r == Err(StoreError::AlreadyExists)).count(), 2);
    assert!(s.write_stats().commits < 4, "{:?}", s.write_stats());
    // An update and a delete later in one batch see the create before them.
    let rev = rv(created[0]);
    assert_eq!(block_on(s.get("g/p/ns/twin")).unwrap(), Some(created[0].object.clone()));
    // The update's revision, if it goes first.
    let next = block_on(s.current_revision()).unwrap() + 1;
    let lock = WriteLock::take(&path);
    let ops: Vec<Op> = vec![
        Box::new(move |s| block_on(s.update("g/p/ns/twin", rev, obj("twin", 5)))),
        Box::new(move |s| block_on(s.delete("g/p/ns/twin", next))),
    ];
    let results = concurrently(&s, lock, ops);
    // The delete expects the update's revision: it succeeds only if the update came first.
    match (&results[0], &results[1]) {
        (Ok(u), Ok(d)) => assert_eq!((rv(u), rv(d)), (next, next + 1)),
        (Ok(u), Err(e)) => {
            assert_eq!(rv(u), next);
            assert_eq!(*e, StoreError::Conflict { current_rev: rev });
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_failing_write_leaves_its_batch_mates_committed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let s = Store::open(StoreConfig::new(path.to_str().unwrap())).unwrap();
    let base = block_on(s.create("g/p/ns/base", obj("base", 0))).unwrap();
    // Never deleted, so what fails on it fails whatever order the writes arrive in.
    block_on(s.create("g/p/ns/keep", obj("keep", 0))).unwrap();
    let mut live = s.subscribe(|_| true);
    let lock = WriteLock::take(&path);
    type Op = Box<dyn FnOnce(Store) -> Result<Written, StoreError> + Send>;
    let ops: Vec<Op> = vec![
        // Waits alone for the lock.
        Box::new(|s| block_on(s.create("g/p/ns/first", obj("first", 1)))),
        Box::new(|s| block_on(s.create("g/p/ns/keep", obj("keep", 2)))),
        Box::new(|s| block_on(s.update("g/p/ns/keep", 99, obj("keep", 3)))),
        Box::new(|s| block_on(s.create("g/p/ns/x", json!([1])))),
        Box::new(|s| block_on(s.update("g/p/ns/nope", 1, obj("nope", 4)))),
        Box::new(|s| block_on(s.create("g/p/ns/y", obj("y", 5)))),
        Box::new(|s| block_on(s.update("g/p/ns/base", 1, obj("base", 6)))),
        Box::new(|s| block_on(s.delete("g/p/ns/base", 1))),
    ];
    // Threads start in order but may reach the channel in any order: judge by outcome.
    let results = concurrently(&s, lock, ops);
    assert_eq!(results[1], Err(StoreError::AlreadyExists));
    assert!(matches!(results[2], Err(StoreError::Conflict { .. })));
    assert!(matches!(results[3], Err(StoreError::Internal(_))));
    assert_eq!(results[4], Err(StoreError::NotFound));
    // Exactly one of the update and the delete of `base` at revision 1 wins.
    assert!(results[6].is_ok() != results[7].is_ok(), "{:?} {:?}", results[6], results[7]);
    let ok: Vec<u64> = results.iter().filter_map(|r| r.as_ref().ok()).map(|o| rv(o)).collect();
    let mut sorted = ok.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, vec![3, 4, 5], "failures take no revision");
    assert_eq!(rv(&base), 1);
    assert_eq!(s.write_stats().writes, 5);
    // Events come in revision order, one per committed write.
    for want in 3..=5 {
        let ev = block_on(live.recv()).unwrap();
        assert_eq!(ev.rev, want);
    }
    // What the batch committed survives a reopen.
    drop(live);
    drop(s);
    let s = Store::open(StoreConfig::new(path.to_str().unwrap())).unwrap();
    assert_eq!(block_on(s.current_revision()).unwrap(), 5);
    assert!(block_on(s.get("g/p/ns/first")).unwrap().is_some());
    assert!(block_on(s.get("g/p/ns/y")).unwrap().is_some());
}

#[tokio::test]
async fn the_cache_equals_the_log_at_its_revision() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let s = Store::open(StoreConfig::new(path.to_str().unwrap())).unwrap();
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
    let s = Store::open(StoreConfig::new(path.to_str().unwrap())).unwrap();
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

#[test]
fn current_reads_do_not_wait_for_the_store_thread() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("db");
    let s = Store::open(StoreConfig::new(path.to_str().unwrap())).unwrap();
    let a = block_on(s.create("g/p/ns/a", obj("a", 1))).unwrap();
    // The store thread is stuck waiting for SQLite's lock behind this write.
    let lock = WriteLock::take(&path);
    let writer = {
        let s = s.clone();
        std::thread::spawn(move || block_on(s.create("g/p/ns/b", obj("b", 2))))
    };
    std::thread::sleep(std::time::Duration::from_millis(200));
    let started = std::time::Instant::now();
    assert_eq!(block_on(s.get("g/p/ns/a")).unwrap(), Some(a.object));
    let page = block_on(s.list_raw(page("g/p/", Some(1), None, 10))).unwrap();
    assert_eq!((page.revision, page.items.len()), (1, 1));
    assert_eq!(block_on(s.count_after("g/p/", "", 1)).unwrap(), 1);
    assert_eq!(block_on(s.current_revision()).unwrap(), 1);
    assert!(block_on(s.events_after("g/p/", 1)).unwrap().is_empty());
    // Well under the 5 s SQLite would make the store thread wait.
    assert!(started.elapsed() < std::time::Duration::from_secs(2), "{:?}", started.elapsed());
    drop(lock);
    assert_eq!(rv(&writer.join().unwrap().unwrap()), 2);
    // Once committed and answered, the write is in what a consistent read sees.
    assert!(block_on(s.get("g/p/ns/b")).unwrap().is_some());
}
