//! LIST in detail: pages and continue tokens, snapshots, selectors and option errors (B.4).

use serde_json::{json, Value};

use crate::common::*;
use virt_apiserver::resource::ResourceInfo;

fn vm() -> &'static ResourceInfo {
    resource("kubevirt.io", "v1", "virtualmachines")
}

fn all_vms() -> String {
    collection_path(vm(), None)
}

/// `path` with `query` appended, percent-encoding what selectors need.
fn with_query(path: &str, query: &[(&str, &str)]) -> String {
    let mut out = path.to_string();
    for (i, (k, v)) in query.iter().enumerate() {
        out.push(if i == 0 && !path.contains('?') { '?' } else { '&' });
        out.push_str(k);
        out.push('=');
        out.push_str(&encode(v));
    }
    out
}

fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Reads every page of `path` with `limit`, checking the paging rules; returns the
/// `(namespace, name)` of every item and the first page's resourceVersion.
fn read_pages(s: &TestServer, path: &str, limit: usize) -> (Vec<(String, String)>, String) {
    let mut out = Vec::new();
    let mut first_rv: Option<String> = None;
    let mut token = String::new();
    for _ in 0..100 {
        let mut q = vec![("limit", limit.to_string())];
        if !token.is_empty() {
            q.push(("continue", token.clone()));
        }
        let q: Vec<(&str, &str)> = q.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let page = s.get_json(&with_query(path, &q));
        let items = page["items"].as_array().expect("items");
        assert!(items.len() <= limit, "page of {} > limit {limit}", items.len());
        let page_rv = page["metadata"]["resourceVersion"].as_str().unwrap().to_string();
        match &first_rv {
            None => first_rv = Some(page_rv),
            Some(rv) => assert_eq!(&page_rv, rv, "every page reports the first page's RV"),
        }
        for o in items {
            out.push((
                o["metadata"]["namespace"].as_str().unwrap_or("").to_string(),
                o["metadata"]["name"].as_str().unwrap().to_string(),
            ));
        }
        token = page["metadata"]["continue"].as_str().expect("continue is always present").into();
        if token.is_empty() {
            return (out, first_rv.unwrap());
        }
        assert!(!token.contains('='), "RawURL base64, no padding: {token}");
    }
    panic!("more than 100 pages");
}

#[test]
fn pages_in_key_order_at_one_revision() {
    let s = TestServer::start();
    s.namespace("ns-a");
    s.namespace("ns-b");
    s.namespace("ns-ab");
    // Created out of order; names chosen so bytewise order differs from creation order.
    let objs = [
        ("ns-b", "a"),
        ("ns-a", "z"),
        ("ns-a", "b-2"),
        ("ns-a", "b"),
        ("ns-a", "b-10"),
        ("ns-ab", "a"),
        ("ns-a", "a"),
        ("ns-b", "0"),
    ];
    for (ns, name) in objs {
        s.create(vm(), &object(vm(), ns, name));
    }
    let mut expected: Vec<(String, String)> =
        objs.iter().map(|(n, m)| (n.to_string(), m.to_string())).collect();
    expected.sort_by(|a, b| {
        format!("{}/{}", a.0, a.1).as_bytes().cmp(format!("{}/{}", b.0, b.1).as_bytes())
    });
    for limit in [1, 3, 8, 9, 500] {
        let (got, _) = read_pages(&s, &all_vms(), limit);
        assert_eq!(got, expected, "limit {limit}");
    }
    // Without a limit: one page, same order.
    let all = s.get_json(&all_vms());
    assert_eq!(all["metadata"]["continue"], "");
    assert_eq!(all["items"].as_array().unwrap().len(), expected.len());
    // A namespace's collection pages too.
    let (got, _) = read_pages(&s, &collection_path(vm(), Some("ns-a")), 2);
    let names: Vec<&str> = got.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, ["a", "b", "b-10", "b-2", "z"]);
    // An empty collection is `items: []` with continue "".
    let empty = s.get_json(&format!("{}?limit=2", collection_path(vm(), Some("ns-none"))));
    assert_eq!(empty["items"], json!([]));
    assert_eq!(empty["metadata"]["continue"], "");
}

/// `remainingItemCount` appears while pages remain and no selector is set (B.4; E2E chunking).
#[test]
fn remaining_item_count() {
    let s = TestServer::start();
    s.namespace("rc");
    for name in ["a", "b", "c", "d", "e"] {
        s.create(vm(), &labelled(vm(), "rc", name, json!({"k": "v"})));
    }
    let path = collection_path(vm(), Some("rc"));
    let mut token = String::new();
    let mut seen = 0;
    loop {
        let mut q = vec![("limit", "2")];
        if !token.is_empty() {
            q.push(("continue", token.as_str()));
        }
        let page = s.get_json(&with_query(&path, &q));
        seen += page["items"].as_array().unwrap().len();
        token = page["metadata"]["continue"].as_str().unwrap().to_string();
        if token.is_empty() {
            assert!(page["metadata"].get("remainingItemCount").is_none(), "{page}");
            break;
        }
        assert_eq!(page["metadata"]["remainingItemCount"], 5 - seen, "{page}");
    }
    let page = s.get_json(&with_query(&path, &[("limit", "2"), ("labelSelector", "k=v")]));
    assert!(page["metadata"].get("remainingItemCount").is_none(), "not with a selector: {page}");
}

#[test]
fn later_pages_show_the_first_pages_snapshot() {
    let s = TestServer::start();
    s.namespace("snap");
    let ns = "snap";
    for name in ["a", "b", "c", "d", "e"] {
        s.create(vm(), &object(vm(), ns, name));
    }
    let path = collection_path(vm(), Some(ns));
    let first = s.get_json(&format!("{path}?limit=2"));
    assert_eq!(names(&first), ["a", "b"]);
    let snap_rv = first["metadata"]["resourceVersion"].as_str().unwrap().to_string();
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    assert!(!token.is_empty());
    let d_before = s.get_json(&item_path(vm(), ns, "d"));

    // Changes after the first page.
    s.create(vm(), &object(vm(), ns, "f"));
    s.create(vm(), &object(vm(), ns, "cc"));
    let r = s.patch(
        &item_path(vm(), ns, "d"),
        "application/merge-patch+json",
        &json!({"spec": {"running": false}}),
    );
    assert_eq!(r.status, 200);
    assert_eq!(s.delete(&item_path(vm(), ns, "e")).status, 200);

    let mut seen = Vec::new();
    let mut token = token;
    while !token.is_empty() {
        let page = s.get_json(&with_query(&path, &[("limit", "2"), ("continue", &token)]));
        assert_eq!(page["metadata"]["resourceVersion"], snap_rv.as_str());
        for o in page["items"].as_array().unwrap() {
            if o["metadata"]["name"] == "d" {
                assert_eq!(o, &d_before, "d as it was at the snapshot");
            }
            seen.push(o["metadata"]["name"].as_str().unwrap().to_string());
        }
        token = page["metadata"]["continue"].as_str().unwrap().to_string();
    }
    assert_eq!(seen, ["c", "d", "e"], "new objects absent, deleted present");
    // A fresh list sees the present.
    assert_eq!(s.list_names(&path), ["a", "b", "c", "cc", "d", "f"]);
}

#[test]
fn list_at_an_exact_revision() {
    let s = TestServer::start();
    s.namespace("exact");
    let ns = "exact";
    let a = s.create(vm(), &object(vm(), ns, "a"));
    s.create(vm(), &object(vm(), ns, "b"));
    let path = collection_path(vm(), Some(ns));
    let old = s.get_json(&format!("{path}?resourceVersion={}&resourceVersionMatch=Exact", rv(&a)));
    assert_eq!(names(&old), ["a"]);
    assert_eq!(old["metadata"]["resourceVersion"], a["metadata"]["resourceVersion"]);
    let newer =
        s.get_json(&format!("{path}?resourceVersion={}&resourceVersionMatch=NotOlderThan", rv(&a)));
    assert_eq!(names(&newer), ["a", "b"]);
    // Legacy: an RV with a limit and no match means Exact.
    let legacy = s.get_json(&format!("{path}?resourceVersion={}&limit=10", rv(&a)));
    assert_eq!(names(&legacy), ["a"]);
    let any = s.get_json(&format!("{path}?resourceVersion=0&limit=1"));
    assert_eq!(names(&any), ["a", "b"], "rv=0 ignores limit");
}

fn label_fixture(s: &TestServer) -> String {
    let ns = "labels";
    let objs = [
        ("o1", json!({"env": "prod", "tier": "web", "n": "5"})),
        ("o2", json!({"env": "dev", "tier": "db", "n": "10"})),
        ("o3", json!({"env": "prod"})),
        ("o4", json!({})),
    ];
    for (name, labels) in objs {
        s.create(vm(), &labelled(vm(), ns, name, labels));
    }
    collection_path(vm(), Some(ns))
}

#[test]
fn label_selector_grammar() {
    let s = TestServer::start();
    s.namespace("labels");
    let path = label_fixture(&s);
    let cases: &[(&str, &[&str])] = &[
        ("", &["o1", "o2", "o3", "o4"]),
        ("env=prod", &["o1", "o3"]),
        ("env==prod", &["o1", "o3"]),
        ("env!=prod", &["o2", "o4"]),
        ("env in (prod,dev)", &["o1", "o2", "o3"]),
        ("env in (dev)", &["o2"]),
        ("env notin (prod)", &["o2", "o4"]),
        ("tier", &["o1", "o2"]),
        ("!tier", &["o3", "o4"]),
        ("n>6", &["o2"]),
        ("n<6", &["o1"]),
        ("env=prod,tier=web", &["o1"]),
        ("env=prod,!tier", &["o3"]),
        (" env = prod , tier ", &["o1"]),
        ("env=staging", &[]),
    ];
    for (sel, want) in cases {
        let got = s.list_names(&with_query(&path, &[("labelSelector", sel)]));
        assert_eq!(got, *want, "labelSelector {sel:?}");
    }
    // Selectors with limit: pages may be short, continue still leads on.
    let (got, _) = {
        let mut all = Vec::new();
        let mut token = String::new();
        loop {
            let mut q = vec![("labelSelector", "env=prod"), ("limit", "1")];
            if !token.is_empty() {
                q.push(("continue", token.as_str()));
            }
            let page = s.get_json(&with_query(&path, &q));
            all.extend(names(&page));
            token = page["metadata"]["continue"].as_str().unwrap().to_string();
            if token.is_empty() {
                break (all, ());
            }
        }
    };
    assert_eq!(got, ["o1", "o3"]);
}

#[test]
fn label_selector_errors_are_400() {
    let s = TestServer::start();
    s.namespace("labels");
    let path = label_fixture(&s);
    for bad in
        ["env prod", "env in prod", "env in (prod", "=prod", "n>abc", "n>1,", "bad key=v", "k=-v-"]
    {
        let r = s.get(&with_query(&path, &[("labelSelector", bad)]));
        assert_status(&r, 400, "BadRequest");
    }
    let r = s.get(&with_query(&path, &[("labelSelector", "x y")]));
    let st = assert_status(&r, 400, "BadRequest");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .contains("found 'y', expected: in, notin, =, ==, !=, gt, lt"),
        "{st}"
    );
}

#[test]
fn field_selectors() {
    let s = TestServer::start();
    s.namespace("f2");
    s.namespace("f1");
    for (ns, name) in [("f1", "a"), ("f1", "b"), ("f2", "a")] {
        s.create(vm(), &object(vm(), ns, name));
    }
    let ns_path = collection_path(vm(), Some("f1"));
    assert_eq!(s.list_names(&with_query(&ns_path, &[("fieldSelector", "metadata.name=b")])), ["b"]);
    assert_eq!(
        s.list_names(&with_query(&ns_path, &[("fieldSelector", "metadata.name==b")])),
        ["b"]
    );
    assert_eq!(
        s.list_names(&with_query(&ns_path, &[("fieldSelector", "metadata.name!=b")])),
        ["a"]
    );
    let all = all_vms();
    let f2 = s.get_json(&with_query(&all, &[("fieldSelector", "metadata.namespace=f2")]));
    assert_eq!(names(&f2), ["a"]);
    assert_eq!(f2["items"][0]["metadata"]["namespace"], "f2");
    let both = s.get_json(&with_query(
        &all,
        &[("fieldSelector", "metadata.name=a,metadata.namespace!=f2")],
    ));
    assert_eq!(both["items"].as_array().unwrap().len(), 1);
    assert_eq!(both["items"][0]["metadata"]["namespace"], "f1");

    let st = assert_status(
        &s.get(&with_query(&all, &[("fieldSelector", "spec.running=true")])),
        400,
        "BadRequest",
    );
    assert_eq!(st["message"], "field label not supported: spec.running");
    // A cluster kind has no namespace field.
    let ck = resource("instancetype.kubevirt.io", "v1alpha2", "virtualmachineclusterinstancetypes");
    let r = s
        .get(&with_query(&collection_path(ck, None), &[("fieldSelector", "metadata.namespace=x")]));
    let st = assert_status(&r, 400, "BadRequest");
    assert_eq!(st["message"], "field label not supported: metadata.namespace");
    // Only =, ==, != exist.
    let r = s.get(&with_query(&all, &[("fieldSelector", "metadata.name")]));
    assert_status(&r, 400, "BadRequest");
}

#[test]
fn option_errors() {
    let s = TestServer::start();
    s.namespace("opts");
    s.create(vm(), &object(vm(), "opts", "a"));
    s.create(vm(), &object(vm(), "opts", "b"));
    let path = collection_path(vm(), Some("opts"));
    let invalid = |q: &str, message: &str| {
        let st = assert_status(&s.get(&format!("{path}?{q}")), 422, "Invalid");
        assert_eq!(st["message"], message, "{q}");
        assert_eq!(st["details"]["group"], "meta.k8s.io", "{q}");
        assert_eq!(st["details"]["kind"], "ListOptions", "{q}");
    };
    invalid(
        "resourceVersionMatch=Exact",
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
    );
    invalid(
        "resourceVersionMatch=NotOlderThan",
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
    );
    invalid(
        "resourceVersion=0&resourceVersionMatch=Exact",
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
    );
    let st = assert_status(
        &s.get(&format!("{path}?resourceVersion=1&resourceVersionMatch=Bogus")),
        422,
        "Invalid",
    );
    assert_eq!(st["details"]["causes"][0]["reason"], "FieldValueNotSupported", "{st}");

    // Continue tokens.
    let first = s.get_json(&format!("{path}?limit=1"));
    let token = first["metadata"]["continue"].as_str().unwrap().to_string();
    assert!(!token.is_empty());
    let st =
        assert_status(&s.get(&format!("{path}?limit=1&continue=not-a-token!")), 400, "BadRequest");
    assert!(st["message"].as_str().unwrap().starts_with("invalid continue token"), "{st}");
    let st = assert_status(
        &s.get(&format!(
            "{path}?limit=1&continue={token}&resourceVersion={}",
            rv(&first["items"][0])
        )),
        400,
        "BadRequest",
    );
    assert_eq!(st["message"], "specifying resource version is not allowed when using continue");
    let r = s.get(&format!(
        "{path}?limit=1&continue={token}&resourceVersionMatch=Exact&resourceVersion=0"
    ));
    assert_eq!(r.status, 422, "{}", r.text());
    let r = s.get(&format!("{path}?limit=1&continue={token}"));
    assert_eq!(names(&r.json()), ["b"]);
    let st = assert_status(&s.get(&format!("{path}?resourceVersion=abc")), 400, "BadRequest");
    assert!(st["message"].as_str().unwrap().contains("abc"), "{st}");
}

/// A revision ahead of the store: the server waits about 3 s, then 504 (B.4).
#[test]
fn future_resource_version_is_504() {
    let s = TestServer::start();
    s.namespace("future");
    let a = s.create(vm(), &object(vm(), "future", "a"));
    let ahead = rv(&a) + 100;
    let started = std::time::Instant::now();
    let path = collection_path(vm(), Some("future"));
    let r = s.get(&format!("{path}?resourceVersion={ahead}&resourceVersionMatch=NotOlderThan"));
    let st = assert_status(&r, 504, "Timeout");
    assert!(started.elapsed() >= std::time::Duration::from_secs(2), "waited first");
    assert_eq!(
        st["message"],
        format!("Timeout: Too large resource version: {ahead}, current: {}", rv(&a))
    );
    assert_eq!(
        st["details"]["causes"][0],
        json!({"reason": "ResourceVersionTooLarge", "message": "Too large resource version"})
    );
}

#[test]
fn harmless_parameters_are_accepted() {
    let s = TestServer::start();
    s.namespace("params");
    s.create(vm(), &object(vm(), "params", "a"));
    let path = collection_path(vm(), Some("params"));
    for q in [
        "includeUninitialized=true",
        "includeUninitialized=false",
        "unknownParam=1",
        "pretty=true",
        "timeoutSeconds=5",
        "allowWatchBookmarks=true",
    ] {
        assert_eq!(s.list_names(&format!("{path}?{q}")), ["a"], "{q}");
    }
    let item = item_path(vm(), "params", "a");
    assert_eq!(s.get(&format!("{item}?includeUninitialized=true&bogus=x")).status, 200);
}

/// A list item is the stored object with the requested version's apiVersion.
#[test]
fn list_items_are_full_objects() {
    let s = TestServer::start();
    s.namespace("full");
    let created = s.create(vm(), &labelled(vm(), "full", "a", json!({"k": "v"})));
    let list = s.get_json(&collection_path(vm(), Some("full")));
    assert_eq!(list["items"][0], created);
    let v1alpha3 = resource("kubevirt.io", "v1alpha3", "virtualmachines");
    let old = s.get_json(&collection_path(v1alpha3, Some("full")));
    assert_eq!(old["apiVersion"], "kubevirt.io/v1alpha3");
    assert_eq!(old["kind"], "VirtualMachineList");
    let mut expected: Value = created.clone();
    expected["apiVersion"] = json!("kubevirt.io/v1alpha3");
    assert_eq!(old["items"][0], expected);
}
