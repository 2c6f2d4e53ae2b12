//! LIST chunking in the manner of the apimachinery e2e chunking.go (B.4, B.10): pages of random
//! size read at one revision, in key order, with kube's `remainingItemCount`, and expired tokens.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::{json, Value};

use crate::common::*;
use crate::watches::watch_semantics::{compacting, create, remove, touch, vm, vms};

const TOTAL: usize = 400;

fn template(i: usize) -> String {
    format!("template-{i:04}")
}

/// Creates `n` objects named `template-NNNN` with four clients at once.
fn populate(s: &TestServer, ns: &str, n: usize, labels: impl Fn(usize) -> Value + Sync) {
    std::thread::scope(|scope| {
        for t in 0..4 {
            let labels = &labels;
            scope.spawn(move || {
                for i in (t..n).step_by(4) {
                    let r = s.post(&vms(ns), &vm(&template(i), labels(i)));
                    assert_eq!(r.status, 201, "{}", r.text());
                }
            });
        }
    });
}

/// A small generator seeded from the clock; the seed is printed so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn new() -> Rng {
        let seed = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
        eprintln!("chunking seed: {seed}");
        Rng(seed)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn list_rv(list: &Value) -> u64 {
    list["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap()
}

fn page(s: &TestServer, path: &str) -> Value {
    let r = s.get(path);
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.json()
}

/// "should return chunks of results for list calls": random limits, one revision, key order,
/// `remainingItemCount` absent exactly on the last page and otherwise exact.
#[test]
fn chunks_of_random_size_are_one_ordered_snapshot() {
    let s = TestServer::start();
    s.namespace("chunking0");
    s.namespace("chunking");
    let ns = "chunking";
    populate(&s, ns, TOTAL, |_| json!({}));
    // A neighbouring namespace that sorts right after must stay out.
    create(&s, "chunking0", "outsider", json!({}));
    let want: Vec<String> = (0..TOTAL).map(template).collect();
    let mut rng = Rng::new();
    for _ in 0..4 {
        let limit = rng.below(TOTAL as u64 / 10) as usize + 1;
        let mut seen = Vec::new();
        let mut token = String::new();
        let mut first_rv = None;
        loop {
            let list = page(&s, &format!("{}?limit={limit}&continue={token}", vms(ns)));
            let items = names(&list);
            assert!(items.len() <= limit, "a page of {} with limit {limit}", items.len());
            let rv = list_rv(&list);
            assert_eq!(*first_rv.get_or_insert(rv), rv, "every page reports the first page's RV");
            seen.extend(items);
            token = list["metadata"]["continue"]
                .as_str()
                .expect("continue is always present")
                .to_owned();
            let remaining = &list["metadata"]["remainingItemCount"];
            if token.is_empty() {
                assert!(remaining.is_null(), "no remainingItemCount on the last page: {remaining}");
                break;
            }
            assert_eq!(remaining.as_u64().unwrap() as usize + seen.len(), TOTAL, "limit {limit}");
        }
        assert_eq!(seen, want, "limit {limit}");
    }
    // One more than there is: everything, and no continue.
    for limit in [TOTAL + 1, TOTAL] {
        let all = page(&s, &format!("{}?limit={limit}", vms(ns)));
        assert_eq!(names(&all), want);
        assert_eq!(all["metadata"]["continue"], "");
        assert!(all["metadata"]["remainingItemCount"].is_null());
    }
}

/// Pages after the first are read at its revision: later creates, updates and deletes do not
/// show, and `remainingItemCount` is counted at that revision too.
#[test]
fn later_writes_do_not_show_in_later_pages() {
    let s = TestServer::start();
    s.namespace("snapshot");
    let ns = "snapshot";
    let n = 60;
    populate(&s, ns, n, |_| json!({}));
    let first = page(&s, &format!("{}?limit=20", vms(ns)));
    let at = list_rv(&first);
    assert_eq!(first["metadata"]["remainingItemCount"], 40);
    // After the first page: a create inside the remaining range, updates, a delete.
    touch(&s, ns, &template(30), "later");
    create(&s, ns, "template-0025a", json!({}));
    touch(&s, ns, &template(40), "later");
    remove(&s, ns, &template(50));
    let mut token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    let mut items: Vec<Value> = first["items"].as_array().unwrap().clone();
    // Another page at the first page's revision, then a change, then the rest.
    let second = page(&s, &format!("{}?limit=15&continue={token}", vms(ns)));
    assert_eq!(list_rv(&second), at);
    assert_eq!(second["metadata"]["remainingItemCount"], 25);
    items.extend(second["items"].as_array().unwrap().iter().cloned());
    token = second["metadata"]["continue"].as_str().unwrap().to_owned();
    remove(&s, ns, &template(45));
    let rest = page(&s, &format!("{}?limit=100&continue={token}", vms(ns)));
    assert_eq!(list_rv(&rest), at);
    assert_eq!(rest["metadata"]["continue"], "");
    items.extend(rest["items"].as_array().unwrap().iter().cloned());
    // Exactly one unlimited list at that revision.
    let exact = page(&s, &format!("{}?resourceVersion={at}&resourceVersionMatch=Exact", vms(ns)));
    assert_eq!(list_rv(&exact), at);
    assert_eq!(&items, exact["items"].as_array().unwrap());
    let got: Vec<String> =
        items.iter().map(|i| i["metadata"]["name"].as_str().unwrap().to_owned()).collect();
    assert_eq!(got, (0..n).map(template).collect::<Vec<_>>());
    assert!(items.iter().all(|i| i["metadata"]["annotations"].is_null()), "no later update shows");
    // The current state has moved on.
    let now = page(&s, &vms(ns));
    assert!(list_rv(&now) > at);
    assert_eq!(names(&now).len(), n - 1, "one created, two deleted");
}

/// With a selector the pages may be short and say nothing of what remains (B.4).
#[test]
fn selected_pages_have_no_remaining_count() {
    let s = TestServer::start();
    s.namespace("selected");
    let ns = "selected";
    populate(&s, ns, 40, |i| json!({"parity": if i % 2 == 0 { "even" } else { "odd" }}));
    let mut token = String::new();
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let list =
            page(&s, &format!("{}?limit=7&labelSelector=parity%3Deven&continue={token}", vms(ns)));
        assert!(list["metadata"]["remainingItemCount"].is_null(), "{}", list["metadata"]);
        seen.extend(names(&list));
        pages += 1;
        token = list["metadata"]["continue"].as_str().unwrap().to_owned();
        if token.is_empty() {
            break;
        }
    }
    assert_eq!(seen, (0..40).step_by(2).map(template).collect::<Vec<_>>());
    assert!(pages >= 3);
    let by_name =
        page(&s, &format!("{}?limit=1&fieldSelector=metadata.name%3D{}", vms(ns), template(3)));
    assert_eq!(names(&by_name), [template(3)]);
    assert!(by_name["metadata"]["remainingItemCount"].is_null());
}

const EXPIRED_MESSAGE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

fn decode_token(token: &str) -> Value {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// "[Slow] should return chunks of results for list calls" with a shortened history window: an
/// expired token is 410 with a fresh `rv:-1` token that lists the rest at a newer revision.
#[test]
fn an_expired_continue_token_is_410_with_a_fresh_token() {
    let s = compacting(&[
        "--history-window",
        "1s",
        "--compaction-min-retain",
        "10",
        "--compaction-interval",
        "100ms",
    ]);
    let ns = "expiring";
    s.namespace(ns);
    let n = 30;
    populate(&s, ns, n, |_| json!({}));
    let first = page(&s, &format!("{}?limit=10", vms(ns)));
    let at = list_rv(&first);
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    assert_eq!(
        decode_token(&token),
        json!({"v": "meta.k8s.io/v1", "rv": at, "start": format!("{}\u{0}", template(9))})
    );
    // Enough writes that the minimum kept history no longer covers the token's revision.
    for i in 0..15 {
        touch(&s, ns, &template(0), &i.to_string());
    }
    let expired = eventually(Duration::from_secs(15), || {
        let r = s.get(&format!("{}?limit=10&continue={token}", vms(ns)));
        (r.status == 410).then(|| r.json())
    });
    assert_eq!(expired["kind"], "Status");
    assert_eq!(expired["code"], 410);
    assert_eq!(expired["reason"], "Expired");
    assert_eq!(expired["message"], EXPIRED_MESSAGE);
    let fresh = expired["metadata"]["continue"].as_str().expect("a fresh token").to_owned();
    assert_eq!(
        decode_token(&fresh),
        json!({"v": "meta.k8s.io/v1", "rv": -1, "start": format!("{}\u{0}", template(9))})
    );

    // The fresh token lists the rest, at the latest revision.
    let rest = page(&s, &format!("{}?limit=10&continue={fresh}", vms(ns)));
    let newer = list_rv(&rest);
    assert!(newer > at, "a different, newer RV: {newer} vs {at}");
    assert_eq!(names(&rest), (10..20).map(template).collect::<Vec<_>>());
    assert_eq!(rest["metadata"]["remainingItemCount"], 10);
    let token = rest["metadata"]["continue"].as_str().unwrap();
    assert_eq!(decode_token(token)["rv"], newer);
    let last = page(&s, &format!("{}?limit=10&continue={token}", vms(ns)));
    assert_eq!(list_rv(&last), newer);
    assert_eq!(names(&last), (20..30).map(template).collect::<Vec<_>>());
    assert_eq!(last["metadata"]["continue"], "");

    // A list at the compacted revision is gone too, whichever way it asks for exactly that.
    for q in [
        format!("resourceVersion={at}&resourceVersionMatch=Exact"),
        format!("resourceVersion={at}&limit=5"),
    ] {
        let r = s.get(&format!("{}?{q}", vms(ns)));
        assert_eq!(r.status, 410, "{q}: {}", r.text());
        let st = r.json();
        assert_eq!(st["reason"], "Expired");
        assert_eq!(st["message"], "The resourceVersion for the provided list is too old.");
        assert!(st["metadata"]["continue"].is_null());
    }
    // "Not older than" it is still fine: the current state.
    let r = page(&s, &format!("{}?resourceVersion={at}", vms(ns)));
    assert!(list_rv(&r) > at);
}

#[test]
fn continue_parameter_errors() {
    let s = TestServer::start();
    s.namespace("tokens");
    let ns = "tokens";
    populate(&s, ns, 3, |_| json!({}));
    let first = page(&s, &format!("{}?limit=1", vms(ns)));
    let token = first["metadata"]["continue"].as_str().unwrap().to_owned();
    let bad = |q: &str, code: u16, reason: &str| -> String {
        let r = s.get(&format!("{}?{q}", vms(ns)));
        assert_eq!(r.status, code, "{q}: {}", r.text());
        let st = r.json();
        assert_eq!(st["reason"], reason, "{q}: {st}");
        st["message"].as_str().unwrap().to_owned()
    };
    let m = bad("limit=1&continue=%21%21%21", 400, "BadRequest");
    assert!(m.starts_with("invalid continue token: continue key is not valid"), "{m}");
    let m = bad(&format!("limit=1&continue={token}&resourceVersion=5"), 400, "BadRequest");
    assert_eq!(m, "specifying resource version is not allowed when using continue");
    let m = bad(
        &format!("limit=1&continue={token}&resourceVersion=5&resourceVersionMatch=Exact"),
        422,
        "Invalid",
    );
    assert!(m.contains("resourceVersionMatch is forbidden when continue is provided"), "{m}");
    // resourceVersion=0 may accompany a token; the token's revision rules.
    let second = page(&s, &format!("{}?limit=1&continue={token}&resourceVersion=0", vms(ns)));
    assert_eq!(list_rv(&second), list_rv(&first));
    assert_eq!(names(&second), [template(1)]);
}
