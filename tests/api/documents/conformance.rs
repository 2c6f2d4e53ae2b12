//! The standard verb cycle for every stored kind in every served version, and reads across
//! versions of one group (A.2, A.3, B.1, B.2, B.4, B.6).

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::common::*;
use virt_apiserver::resource::ResourceInfo;
use virt_apiserver::{GROUPS, RESOURCES};

const NS: &str = "conformance";

#[test]
fn every_kind_every_version_full_cycle() {
    let s = TestServer::start();
    s.namespace(NS);
    let mut seen = BTreeSet::new();
    for res in stored_resources() {
        seen.insert((res.group.to_string(), res.version.to_string(), res.kind.to_string()));
        // A Namespace's delete terminates it and its spec is the server's: namespaces.rs.
        if !res.namespaces {
            cycle(&s, res);
        }
    }
    assert_eq!(seen, stored_kinds_in_document(), "stored (group, version, kind)s in RESOURCES");
}

/// Every (group, version, kind) the document declares as a resource (`x-virt-resource`) other
/// than the token requests, which are answered and never stored.
fn stored_kinds_in_document() -> BTreeSet<(String, String, String)> {
    let doc: Value = serde_json::from_slice(
        &std::fs::read(repo_root().join("openapi/virt-apiserver.json")).expect("read document"),
    )
    .expect("the document is JSON");
    let mut kinds = BTreeSet::new();
    for def in doc["definitions"].as_object().expect("definitions").values() {
        let Some(res) = def.get("x-virt-resource") else { continue };
        if res.get("tokenRequest").is_some() {
            continue;
        }
        for gvk in def["x-kubernetes-group-version-kind"].as_array().expect("a kind's GVK") {
            let part = |k: &str| gvk[k].as_str().expect("GVK part").to_string();
            kinds.insert((part("group"), part("version"), part("kind")));
        }
    }
    // A.8: 6 kinds x 3 versions, 12 single-version kinds, 5 kinds x 2 versions; and core/v1's
    // Namespace, ConfigMap, Secret and Event.
    assert!(kinds.len() >= 43, "the document declares {} stored kinds", kinds.len());
    kinds
}

/// The object at `path` once two reads 300 ms apart find it at one resourceVersion.
fn settled(s: &TestServer, path: &str) -> Value {
    let mut last = s.get_json(path);
    loop {
        std::thread::sleep(std::time::Duration::from_millis(300));
        let now = s.get_json(path);
        if rv(&now) == rv(&last) {
            return now;
        }
        last = now;
    }
}

fn cycle(s: &TestServer, res: &'static ResourceInfo) {
    let what = format!("{}/{} {}", res.group, res.version, res.kind);
    let name = format!("cycle-{}", res.version);
    let path = item_path(res, NS, &name);

    // create
    let created = s.create(res, &object(res, NS, &name));
    assert_eq!(created["apiVersion"], res.api_version(), "{what}: {created}");
    assert_eq!(created["kind"], res.kind, "{what}");
    assert_eq!(created["metadata"]["name"], name.as_str(), "{what}");
    if res.namespaced {
        assert_eq!(created["metadata"]["namespace"], NS, "{what}");
    } else {
        assert!(created["metadata"].get("namespace").is_none(), "{what}: {created}");
    }
    // Custom resources count generations; kube's built-in ConfigMap, Secret and Event do not.
    let generation = |n: i64| if res.generation { json!(n) } else { Value::Null };
    assert_eq!(created["metadata"]["generation"], generation(1), "{what}");
    let (content, sample) = sample_content(res, 42).expect("a kind with content");
    assert_eq!(written(res, &created, content), defaulted(res, content, &sample), "{what}");
    let rv0 = rv(&created);
    // kube's controllers inside the server write some kinds' objects after the create (the
    // volume binder a volume's phase): the cycle goes on from the object once they are done.
    let created = if res.kube_role.is_some() { settled(s, &path) } else { created };

    // get
    let got = s.get_json(&path);
    assert_eq!(got, created, "{what}: GET answers the stored object");

    // list (namespace, and all namespaces for namespaced kinds)
    let mut lists = vec![collection_path(res, Some(NS))];
    if res.namespaced {
        lists.push(collection_path(res, None));
    }
    for list_path in lists {
        let list = s.get_json(&list_path);
        assert_eq!(list["kind"], res.list_kind, "{what}: {list_path}");
        assert_eq!(list["apiVersion"], res.api_version(), "{what}: {list_path}");
        let list_rv = list["metadata"]["resourceVersion"].as_str().unwrap_or("");
        assert!(list_rv.parse::<u64>().is_ok_and(|n| n >= rv0), "{what}: list RV {list_rv:?}");
        assert_eq!(list["metadata"]["continue"], "", "{what}: continue is always present");
        let items = list["items"].as_array().expect("items");
        for item in items {
            assert_eq!(item["apiVersion"], res.api_version(), "{what}: item {item}");
            assert_eq!(item["kind"], res.kind, "{what}: item {item}");
        }
        assert!(items.contains(&created), "{what}: {list_path} lacks the object: {list}");
    }

    // metadata-only update: new RV, generation unchanged
    let mut labelled = created.clone();
    labelled["metadata"]["labels"] = json!({"step": "labels"});
    let r = s.put(&path, &labelled);
    assert_eq!(r.status, 200, "{what}: {}", r.text());
    let v1 = r.json();
    assert!(rv(&v1) > rv0, "{what}: RV moves on update");
    assert_eq!(
        v1["metadata"]["generation"],
        generation(1),
        "{what}: labels do not bump generation"
    );
    assert_eq!(v1["metadata"]["uid"], created["metadata"]["uid"], "{what}");

    // merge patch of metadata: new RV, generation unchanged
    let r = s.patch(
        &path,
        "application/merge-patch+json",
        &json!({"metadata": {"annotations": {"a": "b"}}}),
    );
    assert_eq!(r.status, 200, "{what}: {}", r.text());
    let v1 = r.json();
    assert_eq!(v1["metadata"]["annotations"], json!({"a": "b"}), "{what}");
    assert_eq!(v1["metadata"]["generation"], generation(1), "{what}");

    // stale resourceVersion
    let r = s.put(&path, &created);
    let st = assert_status(&r, 409, "Conflict");
    assert_eq!(
        st["message"],
        format!(
            "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; please apply your changes to the latest version and try again",
            res.group_resource()
        ),
        "{what}"
    );
    assert_eq!(st["details"], details(res, &name, None), "{what}");

    // content update: generation bumps
    let mut changed = v1.clone();
    let (_, sample) = sample_content(res, 43).expect("a kind with content");
    changed[content] = sample.clone();
    let r = s.put(&path, &changed);
    if r.status == 422 && !res.update_rules.is_empty() {
        // A built-in kind whose update rules freeze what the sample changes (a pod's
        // containers): refused as kube refuses it, and nothing written.
        let st = assert_status(&r, 422, "Invalid");
        assert_eq!(st["details"]["causes"][0]["reason"], "FieldValueForbidden", "{what}: {st}");
        assert_eq!(s.get_json(&path), v1, "{what}");
    } else {
        assert_eq!(r.status, 200, "{what}: {}", r.text());
        let v2 = r.json();
        assert!(rv(&v2) > rv(&v1), "{what}");
        assert_eq!(
            v2["metadata"]["generation"],
            generation(2),
            "{what}: a {content} change bumps generation"
        );
        assert_eq!(written(res, &v2, content), defaulted(res, content, &sample), "{what}");
        assert_eq!(s.get_json(&path), v2, "{what}");
    }

    // delete
    let r = s.delete(&path);
    assert_eq!(r.status, 200, "{what}: {}", r.text());
    let held = created["metadata"]["finalizers"].as_array().is_some_and(|f| !f.is_empty());
    if held {
        // A finalizer kube's admission adds (a claim's or a volume's in-use protection): the
        // object is answered marked for deletion, and goes once its controller lets it go.
        let marked = r.json();
        assert!(marked["metadata"]["deletionTimestamp"].is_string(), "{what}: {marked}");
        eventually(std::time::Duration::from_secs(10), || {
            (s.get(&path).status == 404).then_some(())
        });
    } else if res.group.is_empty() && res.kind == "Pod" {
        // Pods' storage sets ReturnDeletedObject (K8S pkg/registry/core/pod/storage/
        // storage.go): the answer is the pod; unscheduled, it had no grace period to run.
        let answered = r.json();
        assert_eq!(answered["kind"], "Pod", "{what}: {answered}");
        assert_eq!(answered["metadata"]["uid"], created["metadata"]["uid"], "{what}");
    } else {
        assert_eq!(
            r.json(),
            json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": details(res, &name, Some(&created["metadata"]["uid"])),
            }),
            "{what}"
        );
    }

    // gone
    let st = assert_status(&s.get(&path), 404, "NotFound");
    assert_eq!(st["message"], format!("{} \"{name}\" not found", res.group_resource()), "{what}");
    assert_eq!(st["details"], details(res, &name, None), "{what}");
}

/// A Status's details for `res`'s object `name`: kube leaves out the core group's empty name.
fn details(res: &ResourceInfo, name: &str, uid: Option<&Value>) -> Value {
    let mut d = json!({"name": name, "kind": res.plural});
    if !res.group.is_empty() {
        d["group"] = json!(res.group);
    }
    if let Some(uid) = uid {
        d["uid"] = uid.clone();
    }
    d
}

/// Objects written through one version read the same through every other; only apiVersion
/// changes (A.3).
#[test]
fn reads_across_versions_rewrite_only_api_version() {
    let s = TestServer::start();
    s.namespace(NS);
    let mut groups_checked = 0;
    for g in GROUPS.iter().filter(|g| g.versions.len() > 1) {
        groups_checked += 1;
        let kinds: Vec<&ResourceInfo> = RESOURCES
            .iter()
            .filter(|r| r.group == g.name && r.version == g.versions[0] && r.is_stored())
            .collect();
        for kind in kinds {
            let versions: Vec<&ResourceInfo> =
                RESOURCES.iter().filter(|r| r.group == g.name && r.plural == kind.plural).collect();
            assert_eq!(versions.len(), g.versions.len(), "{} in every version", kind.kind);
            // Write through the least preferred version, read through each.
            let writer = versions[versions.len() - 1];
            let name = format!("xv-{}", writer.version);
            let created = s.create(writer, &object(writer, NS, &name));
            assert_eq!(created["apiVersion"], writer.api_version());
            for reader in &versions {
                let got = s.get_json(&item_path(reader, NS, &name));
                assert_eq!(got["apiVersion"], reader.api_version(), "{}", reader.kind);
                assert_eq!(without_api_version(&got), without_api_version(&created));
                let list = s.get_json(&collection_path(reader, Some(NS)));
                let item = list["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|o| o["metadata"]["name"] == name.as_str())
                    .unwrap_or_else(|| panic!("{} list via {}", kind.kind, reader.version))
                    .clone();
                assert_eq!(item["apiVersion"], reader.api_version());
            }
            // An update through the preferred version is seen through the writer's.
            let preferred = versions[0];
            let mut obj = s.get_json(&item_path(preferred, NS, &name));
            obj["spec"] = sample_spec(preferred, 7);
            let r = s.put(&item_path(preferred, NS, &name), &obj);
            assert_eq!(r.status, 200, "{}", r.text());
            let back = s.get_json(&item_path(writer, NS, &name));
            assert_eq!(back["spec"], sample_spec(preferred, 7));
            assert_eq!(back["apiVersion"], writer.api_version());
            // Deleting through one version removes it for all.
            assert_eq!(s.delete(&item_path(preferred, NS, &name)).status, 200);
            for reader in &versions {
                assert_eq!(s.get(&item_path(reader, NS, &name)).status, 404);
            }
        }
    }
    assert!(groups_checked >= 3, "kubevirt.io, cdi and upload have several versions");
}

/// The stored object minus `apiVersion`.
fn without_api_version(v: &Value) -> Value {
    let mut v = v.clone();
    v.as_object_mut().unwrap().remove("apiVersion");
    v
}

/// The brief's example: kubevirt.io v1alpha3 written, v1 read.
#[test]
fn v1alpha3_write_reads_as_v1() {
    let s = TestServer::start();
    s.namespace(NS);
    let old = resource("kubevirt.io", "v1alpha3", "virtualmachines");
    let new = resource("kubevirt.io", "v1", "virtualmachines");
    let created = s.create(old, &object(old, NS, "old-vm"));
    assert_eq!(created["apiVersion"], "kubevirt.io/v1alpha3");
    let got = s.get_json(&item_path(new, NS, "old-vm"));
    assert_eq!(got["apiVersion"], "kubevirt.io/v1");
    assert_eq!(got["metadata"], created["metadata"]);
    assert_eq!(got["spec"], created["spec"]);
}

/// `value` of `field` as the server stores it: with the schema's defaults (kube's, for its own
/// kinds).
/// `obj`'s `field` as the client wrote it, defaulted: without what a Service's storage adds
/// (its addresses and IP family fields, world/services.rs).
fn written(res: &ResourceInfo, obj: &Value, field: &str) -> Value {
    let mut value = obj[field].clone();
    if let Some(spec) = value.as_object_mut().filter(|_| res.service_addresses) {
        for allocated in
            ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "internalTrafficPolicy"]
        {
            spec.remove(allocated);
        }
    }
    value
}

fn defaulted(res: &ResourceInfo, field: &str, value: &Value) -> Value {
    let mut obj = json!({ field: value });
    virt_apiserver::defaults::apply(res, &mut obj);
    obj[field].take()
}
