//! Tests of the SQLite backend's own workings: connection settings, statements, group commit and
//! its batching, compaction's pacing, and databases written by earlier releases. Its semantics
//! are the contract suite's (`store::contract_tests`).

use std::sync::Arc;

use serde_json::{json, Value};

use super::engine::prefix_end;
use super::*;
use crate::store::{Bytes, ListRequest, RetentionConfig, Store, StoreConfig, StoreError, Written};

fn obj(name: &str, n: i64) -> Value {
    json!({"kind": "Thing", "metadata": {"name": name}, "spec": {"n": n}})
}

fn rv(v: &Value) -> u64 {
    v["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

fn page(prefix: &str, revision: Option<u64>, after: Option<&str>, limit: usize) -> ListRequest {
    ListRequest {
        prefix: prefix.into(),
        revision,
        start_after: after.map(Into::into),
        limit: Some(limit),
    }
}

fn memory() -> Store {
    Store::open(StoreConfig::new(MEMORY)).unwrap()
}

/// A store over SQLite at `path`, and its backend for what only SQLite answers (pragmas). The
/// backend outlives the store while the caller holds it.
fn open_keeping(path: &str) -> (Store, Arc<SqliteBackend>) {
    let mut kept = None;
    let store = Store::with_backend(Default::default(), |feed| {
        let backend = Arc::new(SqliteBackend::open(path, RetentionConfig::default(), feed)?);
        kept = Some(backend.clone());
        Ok(backend)
    })
    .unwrap();
    (store, kept.unwrap())
}

#[test]
fn prefix_end_bumps_the_last_character() {
    assert_eq!(prefix_end("g/p/"), "g/p0");
    assert_eq!(prefix_end("g/p/ns/"), "g/p/ns0");
    assert_eq!(prefix_end("a\u{d7ff}"), "a\u{e000}");
    assert_eq!(prefix_end(""), "\u{10ffff}");
    assert!("g/p/ns/zzz".as_bytes() < prefix_end("g/p/ns/").as_bytes());
    assert!("g/p/ns0".as_bytes() >= prefix_end("g/p/ns/").as_bytes());
}

#[test]
fn statements_are_not_prepared_again_for_new_parameters() {
    use rusqlite::types::Value::{Integer as Int, Text};
    /// The parameters of a statement's `i`th run: keys and revisions that change each time.
    type Params = fn(i64) -> Vec<rusqlite::types::Value>;
    let conn = conn::connect(MEMORY).unwrap();
    let queries: [(&str, Params); 8] = [
        (sql::LATEST_REV, |i| vec![Text(format!("k{i}"))]),
        (sql::LIST_CURRENT, |i| {
            vec![Text(format!("a{i}")), Text("".into()), Text("z".into()), Int(5)]
        }),
        (sql::LIST_AT, |i| {
            vec![Text(format!("a{i}")), Text("".into()), Text("z".into()), Int(5), Int(i)]
        }),
        (sql::GET_AT, |i| vec![Text(format!("k{i}")), Int(i)]),
        (sql::GET_CURRENT, |i| vec![Text(format!("k{i}"))]),
        (sql::COUNT_CURRENT_AFTER, |i| vec![Text(format!("a{i}")), Text("z".into())]),
        (sql::COUNT_CORRECTION_AT, |i| vec![Text(format!("a{i}")), Text("z".into()), Int(i)]),
        (sql::EVENTS_AFTER, |i| vec![Int(i), Text("a".into()), Text("z".into())]),
    ];
    for (query, params) in queries {
        for i in 0..3 {
            let mut stmt = conn.prepare_cached(query).unwrap();
            let mut rows = stmt.query(rusqlite::params_from_iter(params(i))).unwrap();
            while rows.next().unwrap().is_some() {}
            drop(rows);
            let again = stmt.get_status(rusqlite::StatementStatus::RePrepare);
            assert_eq!(again, 0, "{query} was prepared again for binding #{i}");
        }
    }
}

#[tokio::test]
async fn a_file_store_uses_wal_and_full_sync() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").to_str().unwrap().to_owned();
    let (s, sqlite) = open_keeping(&path);
    assert_eq!(sqlite.pragmas().await.unwrap(), ("wal".to_owned(), 2));
    assert_eq!(
        s.facts(),
        BackendFacts {
            name: "sqlite",
            needs_leader_election: false,
            external_commits: false,
            request_limit: false,
        }
    );
}

#[tokio::test]
async fn memory_store_uses_full_sync() {
    let (s, sqlite) = open_keeping(MEMORY);
    assert_eq!(sqlite.pragmas().await.unwrap(), ("memory".to_owned(), 2));
    s.probe().await.unwrap();
    assert_eq!(s.current_revision().await.unwrap(), 0);
}

#[tokio::test]
async fn group_commit_metrics_are_the_backends() {
    let s = memory();
    s.create("g/p/ns/a", obj("a", 0)).await.unwrap();
    s.update("g/p/ns/a", 1, obj("a", 1)).await.unwrap();
    let samples = s.metrics();
    let names: Vec<_> = samples.iter().map(|m| (m.name, m.kind.as_str(), m.value)).collect();
    assert_eq!(names, [(COMMITS_TOTAL, "counter", 2), (WRITES_TOTAL, "counter", 2)]);
    assert_eq!(s.write_stats(), crate::store::WriteStats { commits: 2, writes: 2 });
}

/// Through the contract itself: the backend keeps and answers persisted bytes, without a
/// resourceVersion, with the revisions that wrote them.
#[tokio::test]
async fn the_backend_answers_persisted_bytes_with_their_revisions() {
    let (s, sqlite) = open_keeping(MEMORY);
    let mut stale = obj("a", 0);
    stale["metadata"]["resourceVersion"] = "77".into();
    s.create("g/p/ns/a", stale.clone()).await.unwrap();
    s.update("g/p/ns/a", 1, stale).await.unwrap();
    s.create("g/p/ns/b", obj("b", 0)).await.unwrap();
    let persisted = Bytes::from(serde_json::to_vec(&obj("a", 0)).unwrap());
    let now = sqlite.get("g/p/ns/a", None).await.unwrap().unwrap();
    let want = crate::store::backend::KeyValue {
        key: "g/p/ns/a".into(),
        rev: 2,
        create_rev: 1,
        value: persisted,
    };
    assert_eq!(now, want);
    assert_eq!(sqlite.get("g/p/ns/a", Some(1)).await.unwrap().unwrap().rev, 1);
    assert_eq!(sqlite.get("g/p/ns/b", Some(2)).await.unwrap(), None);
    let range = sqlite.range(page("g/p/", None, None, 1)).await.unwrap();
    assert_eq!((range.revision, range.items.as_slice(), range.more), (3, [want].as_slice(), true));
    assert_eq!(sqlite.current_revision().await.unwrap(), 3);
    assert_eq!(sqlite.compacted_revision().await.unwrap(), 0);
    let changes = sqlite.events_after("g/p/ns/a", 0).await.unwrap();
    assert_eq!(changes[1].prev.as_ref().map(|(rev, _)| *rev), Some(1));
    assert!(changes.iter().all(|c| !c.value.windows(15).any(|w| w == b"resourceVersion")));
}

/// A database written by the release before the storage contract: every row's value holds its
/// resourceVersion (a tombstone's, the delete's). It opens and serves the same bytes as then,
/// and what is written from now on is persisted without one.
#[tokio::test]
async fn rows_written_with_a_resource_version_are_served_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").to_str().unwrap().to_owned();
    drop(Store::open(StoreConfig::new(path.clone())).unwrap());
    // What that release stored: the object encoded with its revision set.
    let old = |name: &str, n: i64, rev: u64| {
        let mut o = obj(name, n);
        o["metadata"]["resourceVersion"] = rev.to_string().into();
        serde_json::to_vec(&o).unwrap()
    };
    let conn = rusqlite::Connection::open(&path).unwrap();
    /// (rev, key, created, deleted, create_rev, prev_rev, value): a `log` row.
    type Row<'a> = (u64, &'a str, bool, bool, u64, u64, Vec<u8>);
    let rows: [Row; 4] = [
        (1, "g/p/ns/a", true, false, 1, 0, old("a", 0, 1)),
        (2, "g/p/ns/b", true, false, 2, 0, old("b", 0, 2)),
        (3, "g/p/ns/a", false, false, 1, 1, old("a", 1, 3)),
        (4, "g/p/ns/b", false, true, 2, 2, old("b", 0, 4)),
    ];
    for (rev, key, created, deleted, create_rev, prev_rev, value) in &rows {
        conn.execute(
            sql::LOG_APPEND,
            rusqlite::params![rev, key, created, deleted, create_rev, prev_rev, value],
        )
        .unwrap();
    }
    conn.execute(sql::CURRENT_SET, rusqlite::params!["g/p/ns/a", 3]).unwrap();
    drop(conn);

    let s = Store::open(StoreConfig::new(path.clone())).unwrap();
    assert_eq!(s.current_revision().await.unwrap(), 4);
    // Byte for byte what the old release served.
    assert_eq!(s.get_raw("g/p/ns/a").unwrap().value, old("a", 1, 3));
    assert_eq!(s.get_raw("g/p/ns/b"), None);
    let at2 = s.list_raw(page("g/p/", Some(2), None, 10)).await.unwrap();
    let want: Vec<(String, Bytes)> = vec![
        ("g/p/ns/a".into(), old("a", 0, 1).into()),
        ("g/p/ns/b".into(), old("b", 0, 2).into()),
    ];
    assert_eq!(at2.items, want);
    let events = s.events_after("g/p/", 0).await.unwrap();
    let served: Vec<&[u8]> = events.iter().map(|e| &e.value[..]).collect();
    assert_eq!(served, rows.iter().map(|r| &r.6[..]).collect::<Vec<_>>());
    assert_eq!(rv(&events[3].object), 4);

    // Writes on top of the old rows: persisted without a resourceVersion, served with one.
    let a = s.update("g/p/ns/a", 3, obj("a", 2)).await.unwrap();
    assert_eq!(rv(&a), 5);
    let gone = s.delete("g/p/ns/a", 5).await.unwrap();
    assert_eq!((rv(&gone), &gone["spec"]["n"]), (6, &json!(2)));
    drop(s);
    let conn = rusqlite::Connection::open(&path).unwrap();
    for rev in [5, 6] {
        let value: Vec<u8> =
            conn.query_row("SELECT value FROM log WHERE rev = ?1", [rev], |r| r.get(0)).unwrap();
        let value: Value = serde_json::from_slice(&value).unwrap();
        assert_eq!(value, obj("a", 2), "row {rev} as persisted");
    }
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

#[tokio::test]
async fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").to_str().unwrap().to_owned();
    drop(Store::open(StoreConfig::new(path.clone())).unwrap());
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    assert!(matches!(Store::open(StoreConfig::new(path)), Err(StoreError::Unavailable(_))));
}

#[test]
fn opening_an_unusable_path_fails() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing/dir/store.db").to_str().unwrap().to_owned();
    assert!(matches!(Store::open(StoreConfig::new(path)), Err(StoreError::Unavailable(_))));
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
