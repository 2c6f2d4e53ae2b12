//! History retention (A.6, issue point 2): compaction really removes superseded rows, keeping
//! the configured window and minimum, while the server keeps answering.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::common::*;
use crate::watches::watch_semantics::{compacting, create, rv, touch, vm_path, vms, RawWatch};

/// Rows of one key in the log table of the database file.
fn rows_of(db: &std::path::Path, key: &str) -> u64 {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the database read-only");
    conn.query_row("SELECT COUNT(*) FROM log WHERE key = ?1", [key], |r| r.get(0)).unwrap()
}

#[test]
fn a_hot_key_keeps_at_most_the_retained_minimum_plus_one_row() {
    const MIN_RETAIN: u64 = 100;
    let s = compacting(&[
        "--history-window",
        "1s",
        "--compaction-min-retain",
        &MIN_RETAIN.to_string(),
        "--compaction-interval",
        "100ms",
    ]);
    let ns = "hot";
    s.namespace(ns);
    let key = format!("kubevirt.io/virtualmachines/{ns}/key");
    create(&s, ns, "key", json!({}));
    let mut slowest = Duration::ZERO;
    let mut written = Vec::new();
    for i in 0..2000 {
        let started = Instant::now();
        written.push(touch(&s, ns, "key", &i.to_string()));
        slowest = slowest.max(started.elapsed());
    }
    let last = written.last().unwrap().clone();
    // Compaction ran beside the writes (the window is 1 s) without holding them up for long.
    assert!(slowest < Duration::from_secs(2), "a write took {slowest:?}");
    let on_sqlite = s.etcd_prefix.is_none();
    if on_sqlite {
        assert!(rows_of(&s.db, &key) > MIN_RETAIN + 1, "compaction cannot have caught up yet");
    }
    // Once the window has passed, the early revisions are gone (on SQLite: only the newest
    // revisions and the row they supersede remain).
    let early = rv(&written[999]);
    eventually(Duration::from_secs(20), || {
        let r = s.get(&format!("{}?resourceVersion={early}&resourceVersionMatch=Exact", vms(ns)));
        (r.status == 410).then_some(())
    });
    if on_sqlite {
        eventually(Duration::from_secs(20), || {
            (rows_of(&s.db, &key) <= MIN_RETAIN + 1).then_some(())
        });
    }
    // The object is intact, and the retained history still replays.
    let now = s.get(&vm_path(ns, "key"));
    assert_eq!(now.status, 200);
    assert_eq!(now.json(), last);
    // (From the 51st write back: on etcd, bookkeeping keys take revisions between them too.)
    let from = rv(&written[written.len() - 51]);
    let w = RawWatch::open(&s, &format!("{}?watch=true&resourceVersion={from}", vms(ns)));
    let events = w.take(50);
    assert_eq!(events.last().unwrap()["object"], last);
    // Older history is gone: 410.
    let old = RawWatch::open(&s, &format!("{}?watch=true&resourceVersion=1", vms(ns)));
    let ev = old.expect();
    assert_eq!((ev["type"].as_str(), ev["object"]["code"].as_u64()), (Some("ERROR"), Some(410)));
}

#[test]
fn history_stays_readable_for_the_window() {
    let s = compacting(&[
        "--history-window",
        "3s",
        "--compaction-min-retain",
        "1",
        "--compaction-interval",
        "100ms",
    ]);
    let ns = "window";
    s.namespace(ns);
    let first = create(&s, ns, "a", json!({}));
    for i in 0..5 {
        touch(&s, ns, "a", &i.to_string());
    }
    std::thread::sleep(Duration::from_millis(1500));
    // Well inside the window: the old revision still lists exactly and replays.
    let at = rv(&first);
    let r = s.get(&format!("{}?resourceVersion={at}&resourceVersionMatch=Exact", vms(ns)));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["items"][0], first);
    let w = RawWatch::open(&s, &format!("{}?watch=true&resourceVersion={at}", vms(ns)));
    assert_eq!(w.take(5).len(), 5);
    // After it: expired.
    eventually(Duration::from_secs(10), || {
        let r = s.get(&format!("{}?resourceVersion={at}&resourceVersionMatch=Exact", vms(ns)));
        (r.status == 410).then_some(())
    });
}
