//! WATCH: framing and content types, initial and live events, resuming from a revision,
//! selector transitions, versions and timeouts (B.5, A.12).

use std::time::Duration;

use serde_json::json;

use crate::common::*;
use virt_apiserver::resource::ResourceInfo;

const NS: &str = "watched";

fn vm() -> &'static ResourceInfo {
    resource("kubevirt.io", "v1", "virtualmachines")
}

fn vms() -> String {
    collection_path(vm(), Some(NS))
}

fn vm_path(name: &str) -> String {
    item_path(vm(), NS, name)
}

const QUIET: Duration = Duration::from_millis(300);

#[test]
fn content_types() {
    let s = TestServer::start();
    s.namespace(NS);
    let w = s.watch(&format!("{}?watch=true", vms()));
    assert_eq!(w.content_type, "application/json;stream=watch");
    let w = s.watch(&format!("{}?watch=true", collection_path(vm(), None)));
    assert_eq!(w.content_type, "application/json;stream=watch");
    let w = s.watch(&watch_path(vm(), Some(NS), None));
    assert_eq!(w.content_type, "application/json");
    let w = s.watch(&watch_path(vm(), None, None));
    assert_eq!(w.content_type, "application/json");
    s.create(vm(), &object(vm(), NS, "one"));
    let w = s.watch(&format!("{}?watch=true", vm_path("one")));
    assert_eq!(w.content_type, "application/json;stream=watch");
    let w = s.watch(&watch_path(vm(), Some(NS), Some("one")));
    assert_eq!(w.content_type, "application/json");
    next_event(&w, "ADDED", "one");
}

#[test]
fn initial_then_live_events() {
    let s = TestServer::start();
    s.namespace("elsewhere");
    s.namespace(NS);
    let a = s.create(vm(), &object(vm(), NS, "b-second"));
    let b = s.create(vm(), &object(vm(), NS, "a-first"));
    // Another namespace is not part of this collection.
    s.create(vm(), &object(vm(), "elsewhere", "x"));
    for path in [format!("{}?watch=true", vms()), watch_path(vm(), Some(NS), None)] {
        let w = s.watch(&path);
        // Initial state in key order.
        assert_eq!(next_event(&w, "ADDED", "a-first"), b);
        assert_eq!(next_event(&w, "ADDED", "b-second"), a);
        w.expect_none(QUIET);
    }
    let w = s.watch(&format!("{}?watch=true", vms()));
    next_event(&w, "ADDED", "a-first");
    next_event(&w, "ADDED", "b-second");

    let c = s.create(vm(), &object(vm(), NS, "c"));
    let ev = next_event(&w, "ADDED", "c");
    assert_eq!(ev, c, "the event carries the stored object");
    assert_eq!(ev["apiVersion"], "kubevirt.io/v1");
    assert_eq!(ev["kind"], "VirtualMachine");

    let r = s.patch(
        &vm_path("a-first"),
        "application/merge-patch+json",
        &json!({"spec": {"running": false}}),
    );
    assert_eq!(r.status, 200);
    let modified = r.json();
    assert_eq!(next_event(&w, "MODIFIED", "a-first"), modified);

    assert_eq!(s.delete(&vm_path("b-second")).status, 200);
    let deleted = next_event(&w, "DELETED", "b-second");
    let delete_rv = s.current_rv(vm());
    assert_eq!(rv(&deleted), delete_rv, "DELETED carries the delete's revision");
    assert!(rv(&deleted) > rv(&a));
    assert_eq!(deleted["metadata"]["uid"], a["metadata"]["uid"]);
    assert_eq!(deleted["spec"], a["spec"], "the last stored state");

    // Writes elsewhere are not seen.
    s.create(vm(), &object(vm(), "elsewhere", "y"));
    w.expect_none(QUIET);
}

#[test]
fn all_namespaces_watch() {
    let s = TestServer::start();
    s.namespace("ns-2");
    s.namespace("ns-1");
    s.create(vm(), &object(vm(), "ns-1", "a"));
    let w = s.watch(&format!("{}?watch=true", collection_path(vm(), None)));
    next_event(&w, "ADDED", "a");
    s.create(vm(), &object(vm(), "ns-2", "b"));
    let ev = next_event(&w, "ADDED", "b");
    assert_eq!(ev["metadata"]["namespace"], "ns-2");
    // Other kinds are not part of it.
    let vmi = resource("kubevirt.io", "v1", "virtualmachineinstances");
    s.create(vmi, &object(vmi, "ns-1", "not-a-vm"));
    w.expect_none(QUIET);
}

#[test]
fn single_item_watches() {
    let s = TestServer::start();
    s.namespace(NS);
    s.create(vm(), &object(vm(), NS, "me"));
    s.create(vm(), &object(vm(), NS, "other"));
    let watches = [
        s.watch(&format!("{}?watch=true", vm_path("me"))),
        s.watch(&watch_path(vm(), Some(NS), Some("me"))),
        s.watch(&format!("{}?watch=true&fieldSelector=metadata.name%3Dme", vms())),
    ];
    for w in &watches {
        next_event(w, "ADDED", "me");
    }
    s.patch(
        &vm_path("other"),
        "application/merge-patch+json",
        &json!({"spec": {"running": false}}),
    );
    s.patch(&vm_path("me"), "application/merge-patch+json", &json!({"spec": {"running": false}}));
    s.delete(&vm_path("other"));
    s.delete(&vm_path("me"));
    for w in &watches {
        next_event(w, "MODIFIED", "me");
        next_event(w, "DELETED", "me");
        w.expect_none(QUIET);
    }
    // A watch opened before the object exists sees it appear.
    let w = s.watch(&watch_path(vm(), Some(NS), Some("later")));
    w.expect_none(QUIET);
    s.create(vm(), &object(vm(), NS, "later"));
    next_event(&w, "ADDED", "later");
    // A URL name and another name in the selector → 400.
    let r = s.get(&format!("{}?watch=true&fieldSelector=metadata.name%3Dother", vm_path("me")));
    let st = assert_status(&r, 400, "BadRequest");
    assert_eq!(st["message"], "fieldSelector metadata.name doesn't match requested name");
}

#[test]
fn resume_from_a_resource_version() {
    let s = TestServer::start();
    s.namespace(NS);
    let created = s.create(vm(), &object(vm(), NS, "r"));
    let p = |n: i64| {
        let spec = json!({"spec": {"template": {"spec": {"terminationGracePeriodSeconds": n}}}});
        let r = s.patch(&vm_path("r"), "application/merge-patch+json", &spec);
        assert_eq!(r.status, 200);
        r.json()
    };
    let first = p(1);
    let second = p(2);
    assert_eq!(s.delete(&vm_path("r")).status, 200);
    let delete_rv = s.current_rv(vm());

    let w = s.watch(&format!("{}?watch=true&resourceVersion={}", vms(), rv(&first)));
    assert_eq!(next_event(&w, "MODIFIED", "r"), second);
    assert_eq!(rv(&next_event(&w, "DELETED", "r")), delete_rv);
    w.expect_none(QUIET);

    let w = s.watch(&format!("{}?watch=true&resourceVersion={}", vms(), rv(&created)));
    assert_eq!(next_event(&w, "MODIFIED", "r"), first);
    assert_eq!(next_event(&w, "MODIFIED", "r"), second);
    next_event(&w, "DELETED", "r");
    w.expect_none(QUIET);

    // From the current revision: nothing until something happens.
    let w = s.watch(&format!("{}?watch=true&resourceVersion={delete_rv}", vms()));
    w.expect_none(QUIET);
    s.create(vm(), &object(vm(), NS, "r"));
    next_event(&w, "ADDED", "r");

    // resourceVersion=0 behaves as unset: the current state first.
    let w = s.watch(&format!("{}?watch=true&resourceVersion=0", vms()));
    next_event(&w, "ADDED", "r");
    w.expect_none(QUIET);
}

#[test]
fn label_selector_transitions() {
    let s = TestServer::start();
    s.namespace(NS);
    let w = s.watch(&format!("{}?watch=true&labelSelector=sel%3Dyes", vms()));
    s.create(vm(), &labelled(vm(), NS, "t", json!({"sel": "no"})));
    w.expect_none(QUIET);
    let set = |v: &str| {
        let r = s.patch(
            &vm_path("t"),
            "application/merge-patch+json",
            &json!({"metadata": {"labels": {"sel": v}}}),
        );
        assert_eq!(r.status, 200);
        r.json()
    };
    let entered = set("yes");
    assert_eq!(next_event(&w, "ADDED", "t"), entered, "entering the selector → ADDED");
    let r = s.patch(
        &vm_path("t"),
        "application/merge-patch+json",
        &json!({"spec": {"running": false}}),
    );
    let inside = r.json();
    assert_eq!(next_event(&w, "MODIFIED", "t"), inside);
    let left = set("no");
    let ev = next_event(&w, "DELETED", "t");
    assert_eq!(
        ev["metadata"]["labels"]["sel"], "yes",
        "leaving → DELETED with the previous content"
    );
    assert_eq!(rv(&ev), rv(&left), "... at the new revision");
    s.patch(&vm_path("t"), "application/merge-patch+json", &json!({"spec": {"running": true}}));
    w.expect_none(QUIET);
    set("yes");
    next_event(&w, "ADDED", "t");
    s.delete(&vm_path("t"));
    next_event(&w, "DELETED", "t");
}

#[test]
fn watch_through_another_version() {
    let s = TestServer::start();
    s.namespace(NS);
    let old = resource("kubevirt.io", "v1alpha3", "virtualmachines");
    s.create(vm(), &object(vm(), NS, "before"));
    let w = s.watch(&format!("{}?watch=true", collection_path(old, Some(NS))));
    let ev = next_event(&w, "ADDED", "before");
    assert_eq!(ev["apiVersion"], "kubevirt.io/v1alpha3");
    s.create(vm(), &object(vm(), NS, "after"));
    let ev = next_event(&w, "ADDED", "after");
    assert_eq!(ev["apiVersion"], "kubevirt.io/v1alpha3");
    assert_eq!(ev["kind"], "VirtualMachine");
    s.delete(&vm_path("after"));
    let ev = next_event(&w, "DELETED", "after");
    assert_eq!(ev["apiVersion"], "kubevirt.io/v1alpha3");
}

#[test]
fn timeout_seconds_ends_the_stream() {
    let s = TestServer::start();
    s.namespace(NS);
    s.create(vm(), &object(vm(), NS, "a"));
    let start = std::time::Instant::now();
    let w = s.watch(&format!("{}?watch=true&timeoutSeconds=1", vms()));
    next_event(&w, "ADDED", "a");
    assert!(w.ends_within(Duration::from_secs(4)), "the stream ends after timeoutSeconds");
    assert!(start.elapsed() >= Duration::from_millis(900), "not before the timeout");
    let w = s.watch(&format!("{}?timeoutSeconds=1", watch_path(vm(), Some(NS), None)));
    assert!(w.ends_within(Duration::from_secs(4)));
}

#[test]
fn watch_flag_spellings() {
    let s = TestServer::start();
    s.namespace(NS);
    s.create(vm(), &object(vm(), NS, "a"));
    for flag in ["true", "True", "1", "yes", ""] {
        let w = s.watch(&format!("{}?watch={flag}", vms()));
        assert_eq!(w.content_type, "application/json;stream=watch", "watch={flag}");
        next_event(&w, "ADDED", "a");
    }
    for flag in ["false", "False", "0"] {
        let r = s.get(&format!("{}?watch={flag}", vms()));
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["kind"], "VirtualMachineList", "watch={flag} is a list");
    }
}

/// B.5: a streaming list must be served exactly or refused with a 4xx; silently ignoring
/// `sendInitialEvents` would leave client-go >= 1.35 informers unsynced.
#[test]
fn streaming_list_is_served_or_refused() {
    let s = TestServer::start();
    s.namespace(NS);
    s.create(vm(), &object(vm(), NS, "a"));
    let q = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=2";
    let r = s.get(&format!("{}?{q}", vms()));
    if r.status == 200 {
        let lines: Vec<serde_json::Value> = r
            .text()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["type"], "ADDED");
        let end = lines.iter().find(|e| e["type"] == "BOOKMARK").expect("an end bookmark");
        assert_eq!(end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
    } else {
        assert!((400..500).contains(&r.status), "{} {}", r.status, r.text());
        assert_eq!(r.json()["kind"], "Status");
    }
}

#[test]
fn watch_option_errors() {
    let s = TestServer::start();
    let r = s.get(&format!("{}?watch=true&labelSelector=a%20b", vms()));
    assert_status(&r, 400, "BadRequest");
    let r = s.get(&format!("{}?watch=true&fieldSelector=spec.x%3D1", vms()));
    let st = assert_status(&r, 400, "BadRequest");
    assert_eq!(st["message"], "field label not supported: spec.x");
    let r =
        s.get(&format!("{}?watch=true&resourceVersionMatch=NotOlderThan&resourceVersion=1", vms()));
    let st = assert_status(&r, 422, "Invalid");
    assert!(
        st["message"].as_str().unwrap().contains(
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided"
        ),
        "{st}"
    );
}
