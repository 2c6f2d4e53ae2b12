//! Tests of the shared layer's own pieces through a store: the feed's ordering of cache,
//! waiters, events and answers. Semantics every backend must have are in `contract_tests`.

use serde_json::json;

use super::*;

/// Whoever is woken by a commit (a waiter, a subscriber, the writer) finds the cache at it.
#[tokio::test]
async fn the_cache_moves_before_anyone_hears_of_a_commit() {
    let s = Store::open(StoreConfig::new(sqlite::MEMORY)).unwrap();
    let mut rx = s.subscribe(|_| true);
    for i in 1..=50u64 {
        let waiter = tokio::spawn(s.wait_for_revision(i));
        let key = format!("g/p/ns/k{}", i % 5);
        let written = match s.get_raw(&key) {
            None => s.create(&key, json!({"spec": {"i": i}})).await.unwrap(),
            Some(e) => s.update(&key, e.rev, json!({"spec": {"i": i}})).await.unwrap(),
        };
        assert_eq!(s.get_raw(&key).unwrap().value, written.value, "answered, so cached");
        let ev = rx.recv().await.unwrap();
        assert_eq!(ev.rev, i);
        assert_eq!(waiter.await.unwrap().unwrap(), i);
        assert_eq!(s.current_revision().await.unwrap(), i);
    }
}
