//! The server on etcd (`--etcd-servers`): the API over HTTP as on SQLite, and the data as
//! kube-apiserver keeps it, read and written with `etcdctl` (Debian: `etcd-client`).

use std::process::Command;

use serde_json::{json, Value};

use crate::common::*;
use virt_apiserver::resource::ResourceInfo;
use virt_apiserver::storage::TestEtcd;

const NS: &str = "on-etcd";

fn vm() -> &'static ResourceInfo {
    resource("kubevirt.io", "v1", "virtualmachines")
}

fn on_etcd() -> TestServer {
    TestServer::start_with(ServerOptions { etcd: true, ..Default::default() })
}

/// The key kube-apiserver keeps a VirtualMachine under.
fn vm_key(s: &TestServer, name: &str) -> String {
    format!("{}/kubevirt.io/virtualmachines/{NS}/{name}", s.etcd_prefix.as_deref().unwrap())
}

/// A key's `mod_revision`, as etcd reports it.
fn mod_revision(key: &str) -> u64 {
    let got: Value =
        serde_json::from_str(&etcdctl(&test_etcd().url, &["get", key, "-w", "json"])).unwrap();
    got["kvs"][0]["mod_revision"].as_u64().unwrap_or_else(|| panic!("{key} in etcd: {got}"))
}

fn list_rv(s: &TestServer) -> String {
    let list = s.get_json(&collection_path(vm(), Some(NS)));
    list["metadata"]["resourceVersion"].as_str().unwrap().to_owned()
}

#[test]
fn a_virtual_machine_lives_its_life_on_etcd() {
    let s = on_etcd();
    s.namespace(NS);
    let from = list_rv(&s);
    let events =
        s.watch(&format!("{}?watch=true&resourceVersion={from}", collection_path(vm(), Some(NS))));

    let created = s.create(vm(), &object(vm(), NS, "vm1"));
    assert!(rv(&created) > from.parse().unwrap());
    assert_eq!(s.get_json(&item_path(vm(), NS, "vm1")), created);
    assert_eq!(s.list_names(&collection_path(vm(), Some(NS))), ["vm1"]);
    assert_eq!(mod_revision(&vm_key(&s, "vm1")), rv(&created));

    let mut changed = created.clone();
    changed["spec"] = sample_spec(vm(), 7);
    let updated = s.put(&item_path(vm(), NS, "vm1"), &changed);
    assert_eq!(updated.status, 200, "{}", updated.text());
    let updated = updated.json();
    assert!(rv(&updated) > rv(&created));
    // The revision it was read at is gone: etcd's compare-and-swap refuses it.
    assert_status(&s.put(&item_path(vm(), NS, "vm1"), &changed), 409, "Conflict");

    let deleted = s.delete(&item_path(vm(), NS, "vm1"));
    assert_eq!(deleted.status, 200, "{}", deleted.text());
    assert_status(&s.get(&item_path(vm(), NS, "vm1")), 404, "NotFound");

    let seen: Vec<(String, u64)> = (0..3)
        .map(|_| {
            let ev = events.expect();
            (ev["type"].as_str().unwrap().to_owned(), rv(&ev["object"]))
        })
        .collect();
    assert_eq!(seen[0], ("ADDED".to_owned(), rv(&created)));
    assert_eq!(seen[1], ("MODIFIED".to_owned(), rv(&updated)));
    assert_eq!(seen[2].0, "DELETED");
    assert!(seen[2].1 > rv(&updated));

    // A watch from the list's revision replays the same history from etcd.
    let replay =
        s.watch(&format!("{}?watch=true&resourceVersion={from}", collection_path(vm(), Some(NS))));
    for (kind, at) in &seen {
        let ev = replay.expect();
        assert_eq!((ev["type"].as_str().unwrap(), rv(&ev["object"])), (kind.as_str(), *at));
    }
}

#[test]
fn a_restart_on_the_same_prefix_serves_what_was_written() {
    let s = on_etcd();
    s.namespace(NS);
    let created = s.create(vm(), &object(vm(), NS, "kept"));
    let prefix = s.etcd_prefix.clone();
    drop(s.kill());

    let s = TestServer::start_with(ServerOptions { etcd_prefix: prefix, ..Default::default() });
    assert_eq!(s.get_json(&item_path(vm(), NS, "kept")), created);
    let again = s.create(vm(), &object(vm(), NS, "more"));
    assert!(rv(&again) > rv(&created));
}

#[test]
fn objects_are_kept_as_kube_apiserver_keeps_them() {
    let s = on_etcd();
    s.namespace(NS);
    let prefix = s.etcd_prefix.clone().unwrap();

    // Ours, read with etcdctl: kube's keys, the JSON without a resourceVersion.
    let ours = s.create(vm(), &object(vm(), NS, "ours"));
    let stored: Value = serde_json::from_str(&etcdctl(
        &test_etcd().url,
        &["get", &vm_key(&s, "ours"), "--print-value-only"],
    ))
    .unwrap();
    assert_eq!(stored["metadata"]["uid"], ours["metadata"]["uid"]);
    assert_eq!(stored["metadata"].get("resourceVersion"), None, "{stored}");
    let namespace = etcdctl(
        &test_etcd().url,
        &["get", &format!("{prefix}/namespaces/{NS}"), "--print-value-only"],
    );
    assert!(namespace.contains(r#""kind":"Namespace""#), "{namespace}");

    // Theirs, as a kube-apiserver would have written it: served as it is, at its revision.
    let events = s.watch(&format!(
        "{}?watch=true&resourceVersion={}",
        collection_path(vm(), Some(NS)),
        list_rv(&s)
    ));
    let mut theirs = object(vm(), NS, "theirs");
    theirs["metadata"]["uid"] = json!("0c6f5a5e-6d3a-4b4c-9a51-3f0f3f1e2b10");
    theirs["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
    assert_eq!(
        etcdctl(&test_etcd().url, &["put", &vm_key(&s, "theirs"), &theirs.to_string()]).trim(),
        "OK"
    );
    let added = events.expect();
    assert_eq!(added["type"], "ADDED");
    let at = mod_revision(&vm_key(&s, "theirs"));
    assert_eq!(rv(&added["object"]), at);
    let served = s.get_json(&item_path(vm(), NS, "theirs"));
    assert_eq!(rv(&served), at);
    assert_eq!(served["metadata"]["uid"], theirs["metadata"]["uid"]);
    assert_eq!(served["spec"], theirs["spec"]);

    // Changed through the API: etcd holds the new state at the answer's revision.
    let mut changed = served.clone();
    changed["metadata"]["labels"] = json!({"edited": "yes"});
    let updated = s.put(&item_path(vm(), NS, "theirs"), &changed);
    assert_eq!(updated.status, 200, "{}", updated.text());
    assert_eq!(mod_revision(&vm_key(&s, "theirs")), rv(&updated.json()));

    // Deleted behind the server's back: its watchers hear of it.
    etcdctl(&test_etcd().url, &["del", &vm_key(&s, "theirs")]);
    let modified = events.expect();
    assert_eq!(modified["type"], "MODIFIED");
    let gone = events.expect();
    assert_eq!(
        (gone["type"].as_str(), gone["object"]["metadata"]["name"].as_str()),
        (Some("DELETED"), Some("theirs"))
    );
}

#[test]
fn an_object_over_etcds_request_limit_is_413() {
    let s = on_etcd();
    s.namespace(NS);
    let with_user_data = |name: &str, len: usize| {
        let mut big = object(vm(), NS, name);
        big["spec"]["template"]["spec"]["volumes"] =
            json!([{"name": "init", "cloudInitNoCloud": {"userData": "x".repeat(len)}}]);
        s.post(&collection_path(vm(), Some(NS)), &big)
    };
    // The server's own object limit is etcd's request limit (1.5 MiB); its answer says how
    // large the stored object came out, so the next one can be just under it.
    const LIMIT: usize = 1572864;
    let over = assert_status(&with_user_data("big", LIMIT), 413, "RequestEntityTooLarge");
    let message = over["message"].as_str().unwrap();
    let size: usize = message
        .split("the object is ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{message}"));
    let under = LIMIT - (size - LIMIT) - 4;
    // Under the object limit, but the transaction with its key is over etcd's: as kube's create
    // handler, the server tries once more without managedFields, which fits.
    let r = with_user_data("big", under);
    assert_eq!(r.status, 201, "{}", r.text());
    let made = r.json();
    assert!(made["metadata"].get("managedFields").is_none(), "stored without: {made}");
    assert_eq!(s.get_json(&item_path(vm(), NS, "big")), made);
    // A patch likewise: its managedFields entry would take it over etcd's limit again.
    let patch = json!({
        "metadata": {"labels": {"patched": "yes"}},
        "spec": {"template": {"spec": {"volumes": [
            {"name": "init", "cloudInitNoCloud": {"userData": "x".repeat(under - 100)}}
        ]}}}
    });
    let r = s.patch(&item_path(vm(), NS, "big"), "application/merge-patch+json", &patch);
    assert_eq!(r.status, 200, "{}", r.text());
    let patched = r.json();
    assert_eq!(patched["metadata"]["labels"]["patched"], "yes");
    assert!(patched["metadata"].get("managedFields").is_none(), "stored without: {patched}");
    // With a key so long that even that is over etcd's limit: 413 with etcd's reason.
    let long = "l".repeat(253);
    let r = with_user_data(&long, under - (long.len() - "big".len()));
    let status = assert_status(&r, 413, "RequestEntityTooLarge");
    assert!(status["message"].as_str().unwrap().contains("request is too large"), "{status}");
    assert_status(&s.get(&item_path(vm(), NS, &long)), 404, "NotFound");
    // The server goes on.
    s.create(vm(), &object(vm(), NS, "small"));
}

#[test]
fn etcd_over_tls_with_a_client_certificate() {
    let pki = crate::common::pki();
    let etcd = TestEtcd::start_tls(
        &pki.path("ca.pem"),
        &pki.path("server.pem"),
        &pki.path("server-key.pem"),
    );
    let tls_args = |with_client_cert: bool| {
        let mut args = vec![
            "--etcd-servers".to_owned(),
            etcd.url.clone(),
            "--etcd-cafile".into(),
            pki.arg("ca.pem"),
        ];
        if with_client_cert {
            args.extend([
                "--etcd-certfile".into(),
                pki.arg("alice.pem"),
                "--etcd-keyfile".into(),
                pki.arg("alice-key.pem"),
            ]);
        }
        args
    };
    // `memory`: on the `VIRT_TEST_STORAGE=etcd` axis too, only the private etcd is given.
    let opts = ServerOptions { args: tls_args(true), memory: true, ..Default::default() };
    let s = TestServer::start_with(opts);
    s.namespace(NS);
    let created = s.create(vm(), &object(vm(), NS, "secure"));
    assert_eq!(s.get_json(&item_path(vm(), NS, "secure")), created);

    // Without a client certificate etcd refuses the connection: the server does not start.
    let out = Command::new(binary())
        .args(["--listen", "127.0.0.1:0", "--database", ":memory:"])
        .args(tls_args(false))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("loading from etcd"), "{stderr}");
}

#[test]
fn a_patch_right_after_another_writer_keeps_its_change() {
    let s = on_etcd();
    s.namespace(NS);
    s.create(vm(), &object(vm(), NS, "shared"));
    for round in 0..5 {
        // Another writer (another replica, say) changes the object in etcd...
        let key = vm_key(&s, "shared");
        let mut theirs: Value =
            serde_json::from_str(&etcdctl(&test_etcd().url, &["get", &key, "--print-value-only"]))
                .unwrap();
        theirs["metadata"]["labels"] = json!({"theirs": round.to_string()});
        etcdctl(&test_etcd().url, &["put", &key, &theirs.to_string()]);
        // ...and at once a patch here: decided on the state that won, whatever the cache held.
        let patch = json!({"metadata": {"annotations": {"ours": round.to_string()}}});
        let r = s.patch(&item_path(vm(), NS, "shared"), "application/merge-patch+json", &patch);
        assert_eq!(r.status, 200, "{}", r.text());
        let patched = r.json();
        assert_eq!(patched["metadata"]["labels"]["theirs"], round.to_string(), "{patched}");
        assert_eq!(patched["metadata"]["annotations"]["ours"], round.to_string());
        assert_eq!(mod_revision(&key), rv(&patched));
    }
}

/// kube-apiserver's JSON serializer ends every value it writes with a newline (its `Encode` is
/// `json.NewEncoder(w).Encode(obj)`, apimachinery pkg/runtime/serializer/json/json.go), and a
/// value put with `etcdctl` from an indented file is pretty-printed: both must be served as
/// compact JSON, one line per watch event, and stay writable through the API.
#[test]
fn values_with_whitespace_as_kube_apiserver_writes_them_are_served_compact() {
    let s = on_etcd();
    s.namespace(NS);
    let url = &test_etcd().url;
    let vms = collection_path(vm(), Some(NS));
    let cm = resource("", "v1", "configmaps");
    let cms = collection_path(cm, Some(NS));
    let from = list_rv(&s);
    let live = s.watch(&format!("{vms}?watch=true&resourceVersion={from}"));
    let live_cms = s.watch(&format!("{cms}?watch=true&resourceVersion={from}"));

    let theirs = |name: &str, uid: &str| {
        let mut vm = object(vm(), NS, name);
        vm["metadata"]["uid"] = json!(uid);
        vm["metadata"]["creationTimestamp"] = json!("2026-01-01T00:00:00Z");
        vm
    };
    let kube = theirs("kube", "6f1d1e0a-2b6e-4d0c-8b1e-0a9e5c3d2f01");
    etcdctl(url, &["put", &vm_key(&s, "kube"), &format!("{kube}\n")]);
    // An indented file, with a stray space in front.
    let pretty = theirs("pretty", "6f1d1e0a-2b6e-4d0c-8b1e-0a9e5c3d2f02");
    let indented = serde_json::to_string_pretty(&pretty).unwrap();
    etcdctl(url, &["put", &vm_key(&s, "pretty"), &format!(" {indented}\n")]);
    // A built-in kind as kube-apiserver writes it with `--storage-media-type=application/json`:
    // its Go struct's field order, not sorted.
    let cm_key = format!("{}/configmaps/{NS}/kube", s.etcd_prefix.as_deref().unwrap());
    let cm_value = format!(
        "{{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{{\"name\":\"kube\",\
         \"namespace\":\"{NS}\",\"uid\":\"6f1d1e0a-2b6e-4d0c-8b1e-0a9e5c3d2f03\",\
         \"creationTimestamp\":\"2026-01-01T00:00:00Z\"}},\"data\":{{\"k\":\"v\"}}}}\n"
    );
    etcdctl(url, &["put", &cm_key, &cm_value]);
    let at = |name: &str| mod_revision(&vm_key(&s, name));

    // Every answer is JSON, and compact: what an encode of its own parse gives.
    let compact = |r: &Resp| {
        assert_eq!(r.status, 200, "{}", r.text());
        let value = r.json();
        assert_eq!(r.text().trim_end(), value.to_string(), "compact");
        value
    };
    let expect_vm = |ev: Value, kind: &str, name: &str| {
        assert_eq!(
            (ev["type"].as_str(), ev["object"]["metadata"]["name"].as_str()),
            (Some(kind), Some(name))
        );
        ev["object"].clone()
    };

    // Live watches: one line per event (`TestServer::watch` parses each line on its own, so a
    // split event ends the stream).
    assert_eq!(rv(&expect_vm(live.expect(), "ADDED", "kube")), at("kube"));
    assert_eq!(rv(&expect_vm(live.expect(), "ADDED", "pretty")), at("pretty"));
    let added_cm = live_cms.expect();
    assert_eq!(
        (added_cm["type"].as_str(), added_cm["object"]["data"]["k"].as_str()),
        (Some("ADDED"), Some("v"))
    );

    // Gets, of each.
    for name in ["kube", "pretty"] {
        let got = compact(&s.get(&item_path(vm(), NS, name)));
        assert_eq!(rv(&got), at(name));
        assert_eq!(got["spec"], kube["spec"]);
    }
    let got_cm = compact(&s.get(&item_path(cm, NS, "kube")));
    assert_eq!(rv(&got_cm), mod_revision(&cm_key));
    assert_eq!(got_cm["data"], json!({"k": "v"}));

    // Lists: whole, chunked, from the cache, and at a past revision read from etcd.
    let list = compact(&s.get(&vms));
    assert_eq!(names(&list), ["kube", "pretty"]);
    let listed_at = list["metadata"]["resourceVersion"].as_str().unwrap().to_owned();
    let mut chunked = Vec::new();
    let mut next = format!("{vms}?limit=1");
    loop {
        let page = compact(&s.get(&next));
        chunked.extend(names(&page));
        match page["metadata"]["continue"].as_str() {
            Some(token) if !token.is_empty() => next = format!("{vms}?limit=1&continue={token}"),
            _ => break,
        }
    }
    assert_eq!(chunked, ["kube", "pretty"]);
    assert_eq!(names(&compact(&s.get(&format!("{vms}?resourceVersion=0")))), ["kube", "pretty"]);
    assert_eq!(names(&compact(&s.get(&cms))), ["kube"]);

    // Tables.
    const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
    let table = compact(&s.request("GET", &vms, &[("Accept", TABLE)], None));
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["rows"].as_array().map(Vec::len), Some(2), "{table}");
    let row =
        compact(&s.request("GET", &item_path(vm(), NS, "pretty"), &[("Accept", TABLE)], None));
    assert_eq!(row["rows"][0]["object"]["metadata"]["name"], "pretty");

    // A watch from resourceVersion 0 starts with them, a line each.
    let cached = s.watch(&format!("{vms}?watch=true&resourceVersion=0"));
    assert_eq!(rv(&expect_vm(cached.expect(), "ADDED", "kube")), at("kube"));
    assert_eq!(rv(&expect_vm(cached.expect(), "ADDED", "pretty")), at("pretty"));

    // kube-apiserver writes again: MODIFIED, a line.
    let mut changed = kube.clone();
    changed["metadata"]["labels"] = json!({"again": "yes"});
    etcdctl(url, &["put", &vm_key(&s, "kube"), &format!("{changed}\n")]);
    let modified = expect_vm(live.expect(), "MODIFIED", "kube");
    assert_eq!(
        (rv(&modified), &modified["metadata"]["labels"]),
        (at("kube"), &json!({"again": "yes"}))
    );
    // A list at the revision before it is read from etcd, as are the replayed events.
    let past =
        compact(&s.get(&format!("{vms}?resourceVersion={listed_at}&resourceVersionMatch=Exact")));
    assert_eq!(names(&past), ["kube", "pretty"]);
    assert!(past["items"][0]["metadata"].get("labels").is_none(), "{past}");
    let replay = s.watch(&format!("{vms}?watch=true&resourceVersion={from}"));
    expect_vm(replay.expect(), "ADDED", "kube");
    expect_vm(replay.expect(), "ADDED", "pretty");
    assert_eq!(rv(&expect_vm(replay.expect(), "MODIFIED", "kube")), at("kube"));

    // kubectl reads them.
    let k = Kubectl::in_namespace(&s, NS);
    let out: Value = serde_json::from_str(&k.ok(&["get", "vms", "-o", "json"])).unwrap();
    assert_eq!(names(&out), ["kube", "pretty"]);
    let out = k.ok(&["get", "vms"]);
    assert!(out.contains("kube") && out.contains("pretty"), "{out}");
    assert!(k.ok(&["get", "configmaps", "kube", "-o", "json"]).contains("\"k\": \"v\""));

    // Written through the server: the patch applies, etcd then holds our compact encoding.
    let patch = json!({"metadata": {"annotations": {"ours": "yes"}}});
    let r = s.patch(&item_path(vm(), NS, "pretty"), "application/merge-patch+json", &patch);
    let patched = compact(&r);
    assert_eq!(patched["metadata"]["annotations"]["ours"], "yes");
    assert_eq!((rv(&patched), &patched["spec"]), (at("pretty"), &pretty["spec"]));
    let stored = etcdctl(url, &["get", &vm_key(&s, "pretty"), "--print-value-only"]);
    // etcdctl ends what it prints with a newline of its own.
    let stored = stored.strip_suffix('\n').unwrap();
    assert_eq!(stored, serde_json::from_str::<Value>(stored).unwrap().to_string());
    assert_eq!(
        expect_vm(live.expect(), "MODIFIED", "pretty")["metadata"]["annotations"]["ours"],
        "yes"
    );
    let r = s.patch(
        &item_path(cm, NS, "kube"),
        "application/merge-patch+json",
        &json!({"data": {"k": "w"}}),
    );
    assert_eq!(compact(&r)["data"]["k"], "w");
    assert_eq!(live_cms.expect()["type"], "MODIFIED");

    // Deleted through the server: its last state, a line.
    let r = s.delete(&item_path(vm(), NS, "kube"));
    assert_eq!(r.status, 200, "{}", r.text());
    let deleted = expect_vm(live.expect(), "DELETED", "kube");
    assert_eq!(deleted["metadata"]["labels"], json!({"again": "yes"}));
    assert_eq!(s.list_names(&vms), ["pretty"]);
}
