//! The harness's examples, as a user's tests would read: a retry loop against a 409 and a 429
//! that a Fault makes the server answer, and kube's runtime watcher (the informer behind every
//! kube-rs controller) kept whole across each way a Fault cuts a watch.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::runtime::watcher;
use serde_json::json;
use virt_apiserver_harness::Server;

fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        ..Default::default()
    }
}

/// client-go's `RetryOnConflict` as a user writes it: read, change, write; on a 409 Conflict
/// read again and retry. Returns the attempts made.
async fn label_with_retry(api: &Api<ConfigMap>, name: &str, key: &str) -> usize {
    for attempt in 1..=5 {
        let mut cm = api.get(name).await.unwrap();
        cm.metadata.labels.get_or_insert_default().insert(key.into(), "yes".into());
        match api.replace(name, &PostParams::default(), &cm).await {
            Ok(_) => return attempt,
            Err(kube::Error::Api(e)) if e.code == 409 => continue,
            Err(e) => panic!("{e}"),
        }
    }
    panic!("still conflicting after 5 attempts")
}

#[tokio::test]
async fn a_retry_loop_survives_a_conflict() {
    let server = Server::start();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("settings")).await.unwrap();
    // The next update of it conflicts, as when another writer got there first.
    server
        .add_fault(
            "first-update-conflicts",
            json!({"match": {"verbs": ["update"], "names": ["settings"]}, "times": 1,
                   "action": {"status": {"code": 409, "reason": "Conflict"}}}),
        )
        .await
        .unwrap();
    assert_eq!(label_with_retry(&api, "settings", "tuned").await, 2);
    let cm = api.get("settings").await.unwrap();
    assert_eq!(cm.metadata.labels.unwrap()["tuned"], "yes");
}

#[tokio::test]
async fn a_retry_loop_waits_out_a_429() {
    let server = Server::start();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    server
        .add_fault(
            "throttled",
            json!({"match": {"verbs": ["create"], "resources": ["configmaps"]}, "times": 2,
                   "action": {"status": {"code": 429, "retryAfterSeconds": 1}}}),
        )
        .await
        .unwrap();
    let started = Instant::now();
    let mut throttled = 0;
    loop {
        match api.create(&PostParams::default(), &config_map("patient")).await {
            Ok(_) => break,
            Err(kube::Error::Api(e)) if e.code == 429 => {
                assert_eq!(e.reason, "TooManyRequests");
                throttled += 1;
                // The answer's Retry-After: one second.
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!(throttled, 2);
    assert!(started.elapsed() >= Duration::from_secs(2));
    let fault = server.faults().get("throttled").await.unwrap();
    assert_eq!(fault.data["status"]["fired"], 2, "{:?}", fault.data);
}

/// What an informer's consumer holds: each list replaces it, each event moves it.
#[derive(Default)]
struct Held {
    names: BTreeSet<String>,
    listing: BTreeSet<String>,
    lists: usize,
    errors: usize,
}

impl Held {
    fn take(&mut self, ev: Result<watcher::Event<ConfigMap>, watcher::Error>) {
        let name = |cm: ConfigMap| cm.metadata.name.unwrap_or_default();
        match ev {
            Err(_) => self.errors += 1,
            Ok(watcher::Event::Init) => self.listing.clear(),
            Ok(watcher::Event::InitApply(cm)) => {
                self.listing.insert(name(cm));
            }
            Ok(watcher::Event::InitDone) => {
                self.lists += 1;
                self.names = std::mem::take(&mut self.listing);
            }
            Ok(watcher::Event::Apply(cm)) => {
                self.names.insert(name(cm));
            }
            Ok(watcher::Event::Delete(cm)) => {
                self.names.remove(&name(cm));
            }
        }
    }
}

/// Each cut once, after the watch's first event: the watcher re-watches or relists, and what it
/// holds ends whole.
#[tokio::test]
async fn an_informer_stays_whole_across_every_watch_cut() {
    for cut in ["end", "expired", "errorEvent", "goaway"] {
        let server = Server::start();
        let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
        server
            .add_fault(
                "cut",
                json!({"match": {"verbs": ["watch"], "resources": ["configmaps"]}, "times": 1,
                       "action": {"watch": {"cut": cut, "afterEvents": 1}}}),
            )
            .await
            .unwrap();
        let mut events = watcher(api.clone(), watcher::Config::default()).boxed();
        let mut held = Held::default();
        let wanted: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
        let mut made = 0;
        while held.names.iter().filter(|n| wanted.contains(*n)).count() < wanted.len() {
            let next = tokio::time::timeout(Duration::from_secs(10), events.next()).await;
            let ev = next.unwrap_or_else(|_| panic!("{cut}: the watcher stalled"));
            held.take(ev.expect("the watcher does not end"));
            // Changes start once the first list is held.
            if held.lists > 0 && made < wanted.len() {
                let name = ["a", "b", "c"][made];
                api.create(&PostParams::default(), &config_map(name)).await.unwrap();
                made += 1;
            }
        }
        eventually_fired(&server, "cut").await;
        // `end` looks like a watch's timeout: a quiet re-watch. The others reach the consumer
        // as an error; after a 410 ERROR event the watcher lists again.
        assert_eq!(held.errors > 0, cut != "end", "{cut}: {} errors", held.errors);
        assert_eq!(held.lists > 1, cut == "errorEvent", "{cut}: {} lists", held.lists);
    }
}

/// Waits until the Fault's status counts its firing (written within a second).
async fn eventually_fired(server: &Server, name: &str) {
    for _ in 0..50 {
        let f = server.faults().get(name).await.unwrap();
        if f.data["status"]["fired"] == 1 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the fault {name} never fired");
}

#[tokio::test]
async fn a_reset_puts_the_fixtures_back() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = dir.path().join("fixtures.yaml");
    std::fs::write(
        &fixtures,
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept, namespace: default}\n",
    )
    .unwrap();
    let server = Server::builder().fixtures(&fixtures).start();
    let api: Api<ConfigMap> = Api::namespaced(server.client(), "default");
    api.create(&PostParams::default(), &config_map("added")).await.unwrap();
    server.reset().await.unwrap();
    assert!(api.get_opt("added").await.unwrap().is_none());
    assert!(api.get_opt("kept").await.unwrap().is_some());
    server.stop().unwrap();
}
