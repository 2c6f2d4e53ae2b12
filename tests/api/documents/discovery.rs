//! Discovery documents against A.8's table and B.7's shapes, plus `/` and `/version` (A.14).

use std::collections::BTreeSet;

use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::common::*;

/// A.8: groups in /apis order with their versions, preferred first.
const GROUPS: &[(&str, &[&str])] = &[
    // kube's own groups first, in kube-apiserver's order.
    ("storage.k8s.io", &["v1"]),
    ("discovery.k8s.io", &["v1"]),
    ("kubevirt.io", &["v1", "v1alpha3", "v1alpha2"]),
    ("snapshot.kubevirt.io", &["v1alpha1"]),
    ("clone.kubevirt.io", &["v1alpha1"]),
    ("export.kubevirt.io", &["v1alpha1"]),
    ("instancetype.kubevirt.io", &["v1alpha2"]),
    ("flavor.kubevirt.io", &["v1alpha1"]),
    ("cdi.kubevirt.io", &["v1beta1", "v1alpha1"]),
    ("upload.cdi.kubevirt.io", &["v1beta1", "v1alpha1"]),
    ("subresources.kubevirt.io", &["v1", "v1alpha3"]),
    // The server's own testing kinds (Faults).
    ("testing.virt-apiserver.io", &["v1alpha1"]),
];

/// A.8: (group, kind, plural, namespaced, short names).
const KINDS: &[(&str, &str, &str, bool, &[&str])] = &[
    // kube's (api/discovery/apis__storage.k8s.io__v1.json, apis__discovery.k8s.io__v1.json).
    ("storage.k8s.io", "StorageClass", "storageclasses", false, &["sc"]),
    ("discovery.k8s.io", "EndpointSlice", "endpointslices", true, &[]),
    ("kubevirt.io", "VirtualMachine", "virtualmachines", true, &["vm", "vms"]),
    ("kubevirt.io", "VirtualMachineInstance", "virtualmachineinstances", true, &["vmi", "vmis"]),
    (
        "kubevirt.io",
        "VirtualMachineInstancePreset",
        "virtualmachineinstancepresets",
        true,
        &["vmipreset", "vmipresets"],
    ),
    (
        "kubevirt.io",
        "VirtualMachineInstanceReplicaSet",
        "virtualmachineinstancereplicasets",
        true,
        &["vmirs", "vmirss"],
    ),
    (
        "kubevirt.io",
        "VirtualMachineInstanceMigration",
        "virtualmachineinstancemigrations",
        true,
        &["vmim", "vmims"],
    ),
    ("kubevirt.io", "Virt", "virt", true, &[]),
    (
        "snapshot.kubevirt.io",
        "VirtualMachineSnapshot",
        "virtualmachinesnapshots",
        true,
        &["vmsnapshot", "vmsnapshots"],
    ),
    (
        "snapshot.kubevirt.io",
        "VirtualMachineSnapshotContent",
        "virtualmachinesnapshotcontents",
        true,
        &["vmsnapshotcontent", "vmsnapshotcontents"],
    ),
    (
        "clone.kubevirt.io",
        "VirtualMachineClone",
        "virtualmachineclones",
        false,
        &["vmclone", "vmclones"],
    ),
    (
        "export.kubevirt.io",
        "VirtualMachineExport",
        "virtualmachineexports",
        true,
        &["vmexport", "vmexports"],
    ),
    (
        "instancetype.kubevirt.io",
        "VirtualMachineInstancetype",
        "virtualmachineinstancetypes",
        true,
        &["vminstancetype", "vminstancetypes"],
    ),
    (
        "instancetype.kubevirt.io",
        "VirtualMachineClusterInstancetype",
        "virtualmachineclusterinstancetypes",
        false,
        &["vmclusterinstancetype", "vmclusterinstancetypes"],
    ),
    (
        "instancetype.kubevirt.io",
        "VirtualMachinePreference",
        "virtualmachinepreferences",
        true,
        &["vmpref", "vmprefs"],
    ),
    (
        "instancetype.kubevirt.io",
        "VirtualMachineClusterPreference",
        "virtualmachineclusterpreferences",
        false,
        &["vmcp", "vmcps"],
    ),
    (
        "flavor.kubevirt.io",
        "VirtualMachineClusterFlavor",
        "virtualmachineclusterflavors",
        false,
        &["vmclusterflavor", "vmclusterflavors"],
    ),
    ("flavor.kubevirt.io", "VirtualMachinePreference", "virtualmachinepreferences", true, &[]),
    (
        "flavor.kubevirt.io",
        "VirtualMachineClusterPreference",
        "virtualmachineclusterpreferences",
        false,
        &[],
    ),
    ("cdi.kubevirt.io", "CDI", "cdis", true, &["cdi"]),
    ("cdi.kubevirt.io", "CDIConfig", "cdiconfigs", true, &[]),
    ("cdi.kubevirt.io", "DataVolume", "datavolumes", true, &["dv", "dvs"]),
    ("cdi.kubevirt.io", "DataImportCron", "dataimportcrons", true, &["dic", "dics"]),
    ("cdi.kubevirt.io", "DataSource", "datasources", true, &["das"]),
    ("upload.cdi.kubevirt.io", "UploadTokenRequest", "uploadtokenrequests", true, &["utr", "utrs"]),
    ("testing.virt-apiserver.io", "Fault", "faults", false, &[]),
];

/// kube's verbs for its own kinds, sorted.
const BUILT_IN_VERBS: &[&str] =
    &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];

/// kube's verbs for a custom resource, in its order (B.7).
const CR_VERBS: &[&str] =
    &["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"];

/// A.4: kinds with a status subresource (and scale for replica sets).
const WITH_STATUS: &[(&str, &str)] = &[
    ("kubevirt.io", "virtualmachines"),
    ("kubevirt.io", "virtualmachineinstancemigrations"),
    ("kubevirt.io", "virt"),
    ("kubevirt.io", "virtualmachineinstancereplicasets"),
    ("snapshot.kubevirt.io", "virtualmachinesnapshots"),
    ("snapshot.kubevirt.io", "virtualmachinesnapshotcontents"),
    ("export.kubevirt.io", "virtualmachineexports"),
    ("clone.kubevirt.io", "virtualmachineclones"),
    ("cdi.kubevirt.io", "datavolumes"),
];

fn expected_group(name: &str, versions: &[&str]) -> Value {
    let gv = |v: &str| json!({"groupVersion": format!("{name}/{v}"), "version": v});
    json!({
        "name": name,
        "versions": versions.iter().map(|v| gv(v)).collect::<Vec<_>>(),
        "preferredVersion": gv(versions[0]),
    })
}

fn storage_version_hash(group: &str, storage_version: &str, kind: &str) -> String {
    let digest = Sha256::digest(format!("{group}/{storage_version}/{kind}"));
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

#[test]
fn root_lists_paths() {
    let s = TestServer::start();
    let root = s.get_json("/");
    let paths: Vec<&str> =
        root["paths"].as_array().expect("paths").iter().map(|p| p.as_str().unwrap()).collect();
    for p in ["/apis", "/healthz", "/livez", "/readyz", "/openapi/v2", "/openapi/v3", "/version"] {
        assert!(paths.contains(&p), "{p} missing from {paths:?}");
    }
    for (g, versions) in GROUPS {
        assert!(paths.contains(&format!("/apis/{g}").as_str()), "/apis/{g}");
        for v in *versions {
            assert!(paths.contains(&format!("/apis/{g}/{v}").as_str()), "/apis/{g}/{v}");
        }
    }
}

/// kube's core/v1 kinds the document serves: (plural, kind, namespaced, short names).
const CORE_KINDS: &[(&str, &str, bool, &[&str])] = &[
    ("namespaces", "Namespace", false, &["ns"]),
    ("configmaps", "ConfigMap", true, &["cm"]),
    ("secrets", "Secret", true, &[]),
    ("events", "Event", true, &["ev"]),
    ("nodes", "Node", false, &["no"]),
    ("pods", "Pod", true, &["po"]),
    ("services", "Service", true, &["svc"]),
    ("endpoints", "Endpoints", true, &["ep"]),
    ("persistentvolumeclaims", "PersistentVolumeClaim", true, &["pvc"]),
    ("persistentvolumes", "PersistentVolume", false, &["pv"]),
];

/// The core kinds with a status subresource (kube's api/discovery/api__v1.json).
const CORE_STATUS: &[&str] = &[
    "namespaces/status",
    "nodes/status",
    "pods/status",
    "services/status",
    "persistentvolumeclaims/status",
    "persistentvolumes/status",
];

#[test]
fn core_api_lists_v1_and_its_kinds() {
    let s = TestServer::start();
    for path in ["/api", "/api/"] {
        let api = s.get_json(path);
        assert_eq!(api["kind"], "APIVersions", "{path}");
        assert_eq!(api["versions"], json!(["v1"]), "{path}");
        assert!(api.get("apiVersion").is_none(), "{path}: no apiVersion field");
        assert!(api["serverAddressByClientCIDRs"].is_array());
    }
    for path in ["/api/v1", "/api/v1/"] {
        let list = s.get_json(path);
        assert_eq!(list["kind"], "APIResourceList", "{path}");
        assert_eq!(list["groupVersion"], "v1", "{path}");
        let resources = list["resources"].as_array().expect("resources");
        let find = |name: &str| {
            resources
                .iter()
                .find(|r| r["name"] == name)
                .unwrap_or_else(|| panic!("{path} lists {name}: {list}"))
        };
        for (plural, kind, namespaced, short) in CORE_KINDS {
            let r = find(plural);
            assert_eq!(r["kind"], *kind, "{plural}");
            assert_eq!(r["namespaced"], *namespaced, "{plural}");
            assert_eq!(r["singularName"], kind.to_lowercase(), "{plural}");
            let short_names = r.get("shortNames").cloned().unwrap_or(json!([]));
            assert_eq!(short_names, json!(short), "{plural}");
            let verbs: BTreeSet<&str> =
                r["verbs"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
            let mut want = BTreeSet::from(["create", "delete", "get", "list", "patch", "update"]);
            want.insert("watch");
            // kube's namespaces have no deletecollection.
            if *plural != "namespaces" {
                want.insert("deletecollection");
            }
            assert_eq!(verbs, want, "{plural}");
        }
        let status = find("namespaces/status");
        assert_eq!((&status["kind"], &status["namespaced"]), (&json!("Namespace"), &json!(false)));
        let status_verbs: BTreeSet<&str> =
            status["verbs"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        assert_eq!(status_verbs, BTreeSet::from(["get", "patch", "update"]));
        let finalize = find("namespaces/finalize");
        assert_eq!(finalize["kind"], "Namespace");
        assert_eq!(finalize["verbs"], json!(["update"]));
        let served: BTreeSet<&str> =
            resources.iter().map(|r| r["name"].as_str().unwrap()).collect();
        let mut want: BTreeSet<&str> = CORE_KINDS.iter().map(|k| k.0).collect();
        want.extend(CORE_STATUS);
        want.insert("namespaces/finalize");
        // kube's pods/binding, pods/eviction and pods/log (world::pod_subresources).
        want.extend(["pods/binding", "pods/eviction", "pods/log"]);
        assert_eq!(served, want, "{path}");
    }
    // The core group has no group document, and /apis leaves it out.
    assert_plain_404(&s.get("/apis/v1"));
    let apis = s.get_json("/apis");
    let groups = apis["groups"].as_array().unwrap();
    assert!(groups.iter().all(|g| g["name"] != "" && g["name"] != "v1"), "{apis}");
}

#[test]
fn apis_lists_groups_in_order() {
    let s = TestServer::start();
    for path in ["/apis", "/apis/"] {
        let list = s.get_json(path);
        assert_eq!(list["kind"], "APIGroupList");
        assert_eq!(list["apiVersion"], "v1");
        let expected: Vec<Value> = GROUPS.iter().map(|(g, v)| expected_group(g, v)).collect();
        assert_eq!(list["groups"], json!(expected), "{path}");
    }
}

#[test]
fn each_group_both_spellings() {
    let s = TestServer::start();
    for (g, versions) in GROUPS {
        let mut expected = expected_group(g, versions);
        expected["kind"] = json!("APIGroup");
        expected["apiVersion"] = json!("v1");
        for path in [format!("/apis/{g}"), format!("/apis/{g}/")] {
            let doc = s.get_json(&path);
            assert_eq!(doc, expected, "{path}");
            let pv = &doc["preferredVersion"];
            assert!(doc["versions"].as_array().unwrap().contains(pv), "preferred ∈ versions");
        }
    }
}

#[test]
fn resource_lists_match_the_table() {
    let s = TestServer::start();
    for (g, versions) in GROUPS {
        for v in *versions {
            for path in [format!("/apis/{g}/{v}"), format!("/apis/{g}/{v}/")] {
                let doc = s.get_json(&path);
                assert_eq!(doc["kind"], "APIResourceList", "{path}");
                assert_eq!(doc["apiVersion"], "v1", "{path}");
                assert_eq!(doc["groupVersion"], format!("{g}/{v}"), "{path}");
                let resources = doc["resources"].as_array().expect("resources");
                // Kinds (virt-api's name-only entries are tested in actions.rs).
                let top: Vec<&Value> = resources
                    .iter()
                    .filter(|r| !r["name"].as_str().unwrap().contains('/') && r["kind"] != "")
                    .collect();
                let kinds: Vec<_> = KINDS.iter().filter(|k| k.0 == *g).collect();
                assert_eq!(top.len(), kinds.len(), "{path}: {doc}");
                for (group, kind, plural, namespaced, short) in kinds {
                    let r = top
                        .iter()
                        .find(|r| r["name"] == *plural)
                        .unwrap_or_else(|| panic!("{path} lacks {plural}"));
                    let what = format!("{path} {plural}");
                    assert_eq!(r["singularName"], kind.to_lowercase(), "{what}");
                    assert_eq!(r["namespaced"], *namespaced, "{what}");
                    assert_eq!(r["kind"], *kind, "{what}");
                    let shorts = r.get("shortNames").cloned().unwrap_or(json!([]));
                    assert_eq!(shorts, json!(short), "{what}");
                    if *group == "upload.cdi.kubevirt.io" {
                        assert_eq!(r["verbs"], json!(["create"]), "{what}");
                    } else if group.ends_with(".k8s.io") {
                        // kube's own kinds list their verbs sorted.
                        assert_eq!(r["verbs"], json!(BUILT_IN_VERBS), "{what}");
                        let hash = storage_version_hash(group, versions[0], kind);
                        assert_eq!(r["storageVersionHash"], hash, "{what}");
                    } else {
                        assert_eq!(r["verbs"], json!(CR_VERBS), "{what}");
                        let hash = storage_version_hash(group, versions[0], kind);
                        assert_eq!(r["storageVersionHash"], hash, "{what}");
                    }
                    if let Some(c) = r.get("categories") {
                        assert!(c.is_array(), "{what}");
                    }
                }
            }
        }
    }
}

/// A.4: status (and scale) subresources appear as their own discovery entries (B.7).
#[test]
fn subresources_are_listed() {
    let s = TestServer::start();
    for (g, versions) in GROUPS {
        for v in *versions {
            let doc = s.get_json(&format!("/apis/{g}/{v}"));
            let resources = doc["resources"].as_array().unwrap();
            for (_, plural) in WITH_STATUS.iter().filter(|(group, _)| group == g) {
                let name = format!("{plural}/status");
                let kind = KINDS.iter().find(|k| k.0 == *g && k.2 == *plural).unwrap().1;
                let r = resources
                    .iter()
                    .find(|r| r["name"] == name.as_str())
                    .unwrap_or_else(|| panic!("/apis/{g}/{v} lacks {name}"));
                assert_eq!(r["kind"], kind);
                assert_eq!(r["singularName"], "");
                assert_eq!(r["verbs"], json!(["get", "patch", "update"]));
            }
            if *g == "kubevirt.io" {
                let r = resources
                    .iter()
                    .find(|r| r["name"] == "virtualmachineinstancereplicasets/scale")
                    .unwrap_or_else(|| panic!("/apis/{g}/{v} lacks the scale subresource"));
                assert_eq!(r["group"], "autoscaling");
                assert_eq!(r["version"], "v1");
                assert_eq!(r["kind"], "Scale");
            }
        }
    }
}

#[test]
fn version_info() {
    let s = TestServer::start();
    let v = s.get_json("/version");
    assert_eq!(v["major"], "1");
    assert_eq!(v["minor"], "32");
    let git = v["gitVersion"].as_str().unwrap();
    assert!(git.starts_with("v1.32.0+virt-apiserver."), "{git}");
    assert!(v["platform"].is_string());
}

#[test]
fn unknown_groups_and_versions_are_plain_404() {
    let s = TestServer::start();
    for path in [
        "/apis/nope.io",
        "/apis/nope.io/v1",
        "/apis/kubevirt.io/v9",
        "/apis/kubevirt.io/v1beta1",
        "/api/v2",
    ] {
        assert_plain_404(&s.get(path));
    }
}

#[test]
fn discovery_in_yaml_and_406() {
    let s = TestServer::start();
    let r = s.request("GET", "/apis", &[("Accept", "application/yaml")], None);
    assert_eq!(r.status, 200);
    let doc: Value = serde_yaml::from_slice(&r.body).expect("YAML");
    assert_eq!(doc["kind"], "APIGroupList");
    // Nothing acceptable at all: 406.
    let r = s.request("GET", "/apis", &[("Accept", "text/html")], None);
    assert_status(&r, 406, "NotAcceptable");
}

/// What client-go 1.32 sends to `/api` and `/apis`.
const AGGREGATED_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

#[test]
fn aggregated_discovery_matches_the_legacy_documents() {
    let s = TestServer::start();
    let r = s.request("GET", "/apis", &[("Accept", AGGREGATED_ACCEPT)], None);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.header("content-type"),
        Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
    );
    assert_eq!(r.header("vary"), Some("Accept"));
    let doc = r.json();
    assert_eq!(doc["kind"], "APIGroupDiscoveryList");
    assert_eq!(doc["apiVersion"], "apidiscovery.k8s.io/v2");
    let items = doc["items"].as_array().expect("items");
    let names: Vec<&str> = items.iter().map(|g| g["metadata"]["name"].as_str().unwrap()).collect();
    let want: Vec<&str> = GROUPS.iter().map(|(g, _)| *g).collect();
    assert_eq!(names, want, "groups in /apis order");

    // Every version's resources say what the legacy resource lists say.
    for (item, (group, versions)) in items.iter().zip(GROUPS) {
        let got: Vec<&str> = item["versions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["version"].as_str().unwrap())
            .collect();
        assert_eq!(&got, versions, "{group}: versions preferred first");
        for v in item["versions"].as_array().unwrap() {
            assert_eq!(v["freshness"], "Current");
            let version = v["version"].as_str().unwrap();
            let legacy = s.get_json(&format!("/apis/{group}/{version}"));
            let legacy = legacy["resources"].as_array().unwrap();
            let mut expected = Vec::new();
            for l in legacy.iter().filter(|l| !l["name"].as_str().unwrap().contains('/')) {
                let plural = l["name"].as_str().unwrap();
                let subresources: Vec<Value> = legacy
                    .iter()
                    .filter_map(|sub| {
                        let (parent, name) = sub["name"].as_str()?.split_once('/')?;
                        (parent == plural).then(|| sub_discovery(group, version, name, sub))
                    })
                    .collect();
                // virt-api's name-only entries convert as kube-aggregator converts them.
                let response_kind = if l["kind"] == "" {
                    json!({"group": "", "version": "", "kind": ""})
                } else {
                    json!({"group": group, "version": version, "kind": l["kind"]})
                };
                let mut e = json!({
                    "resource": plural,
                    "responseKind": response_kind,
                    "scope": if l["namespaced"] == true { "Namespaced" } else { "Cluster" },
                    "singularResource": l["singularName"],
                    "verbs": l["verbs"],
                });
                for (from, to) in [("shortNames", "shortNames"), ("categories", "categories")] {
                    if let Some(x) = l.get(from) {
                        e[to] = x.clone();
                    }
                }
                if !subresources.is_empty() {
                    e["subresources"] = json!(subresources);
                }
                expected.push(e);
            }
            // Subresources without a parent get an empty one, as kube-aggregator makes it.
            for sub in legacy {
                let Some((parent, name)) = sub["name"].as_str().unwrap().split_once('/') else {
                    continue;
                };
                if legacy.iter().any(|l| l["name"] == parent) {
                    continue;
                }
                let at = match expected.iter().position(|e| e["resource"] == parent) {
                    Some(at) => at,
                    None => {
                        expected.push(json!({"resource": parent,
                            "responseKind": {"group": "", "version": "", "kind": ""},
                            "scope": "Namespaced", "singularResource": "", "verbs": []}));
                        expected.len() - 1
                    }
                };
                let subs = expected[at]
                    .as_object_mut()
                    .unwrap()
                    .entry("subresources")
                    .or_insert(json!([]));
                subs.as_array_mut().unwrap().push(sub_discovery(group, version, name, sub));
            }
            assert_eq!(v["resources"], json!(expected), "{group}/{version}");
        }
    }
    let kubevirt = items.iter().position(|g| g["metadata"]["name"] == "kubevirt.io").unwrap();
    let vm = &items[kubevirt]["versions"][0]["resources"][0];
    assert_eq!(vm["resource"], "virtualmachines");
    assert_eq!(vm["shortNames"], json!(["vm", "vms"]));
    assert_eq!(vm["subresources"][0]["subresource"], "status");
}

/// A legacy subresource entry as aggregated discovery lists it.
fn sub_discovery(group: &str, version: &str, name: &str, sub: &Value) -> Value {
    let response_kind = if sub["kind"] == "" {
        json!({"group": "", "version": "", "kind": ""})
    } else {
        json!({"group": sub.get("group").and_then(Value::as_str).unwrap_or(group),
               "version": sub.get("version").and_then(Value::as_str).unwrap_or(version),
               "kind": sub["kind"]})
    };
    json!({"subresource": name, "responseKind": response_kind, "verbs": sub["verbs"]})
}

#[test]
fn aggregated_discovery_etag_v2beta1_and_core() {
    let s = TestServer::start();
    let r = s.request("GET", "/apis", &[("Accept", AGGREGATED_ACCEPT)], None);
    let etag = r.header("etag").expect("an ETag").to_string();
    assert!(etag.starts_with('"') && etag.len() == 130, "{etag}");
    assert_eq!(r.header("cache-control"), Some("public"));
    let again =
        s.request("GET", "/apis", &[("Accept", AGGREGATED_ACCEPT), ("If-None-Match", &etag)], None);
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    let stale = s.request(
        "GET",
        "/apis",
        &[("Accept", AGGREGATED_ACCEPT), ("If-None-Match", "\"0123\"")],
        None,
    );
    assert_eq!(stale.status, 200);

    let beta = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
    let r = s.request("GET", "/apis", &[("Accept", beta)], None);
    assert_eq!(r.header("content-type"), Some(beta));
    assert_eq!(r.json()["apiVersion"], "apidiscovery.k8s.io/v2beta1");

    // The core group: one unnamed group with v1 and its kinds, as the legacy /api/v1 says.
    let r = s.request("GET", "/api", &[("Accept", AGGREGATED_ACCEPT)], None);
    assert_eq!(r.status, 200);
    let doc = r.json();
    assert_eq!(doc["kind"], "APIGroupDiscoveryList");
    let items = doc["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "{doc}");
    assert!(items[0]["metadata"].get("name").is_none(), "the core group has no name: {doc}");
    let versions = items[0]["versions"].as_array().unwrap();
    assert_eq!(versions.len(), 1, "{doc}");
    assert_eq!(versions[0]["version"], "v1");
    let resources = versions[0]["resources"].as_array().unwrap();
    for (plural, kind, namespaced, short) in CORE_KINDS {
        let r = resources
            .iter()
            .find(|r| r["resource"] == *plural)
            .unwrap_or_else(|| panic!("{plural} in {doc}"));
        assert_eq!(r["responseKind"], json!({"group": "", "version": "v1", "kind": kind}));
        assert_eq!(r["scope"], if *namespaced { "Namespaced" } else { "Cluster" }, "{plural}");
        assert_eq!(r.get("shortNames").cloned().unwrap_or(json!([])), json!(short));
    }
    assert_eq!(resources.len(), CORE_KINDS.len(), "{doc}");
    let ns = resources.iter().find(|r| r["resource"] == "namespaces").unwrap();
    let subresources: Vec<&Value> =
        ns["subresources"].as_array().unwrap().iter().map(|s| &s["subresource"]).collect();
    assert_eq!(subresources, [&json!("status"), &json!("finalize")], "{ns}");
    assert_eq!(ns["subresources"][1]["verbs"], json!(["update"]));
    assert!(r.header("etag").is_some());

    // A plain clause first, or an unknown version, gets the legacy document.
    for accept in [
        "application/json,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        "application/json;g=apidiscovery.k8s.io;v=v3;as=APIGroupDiscoveryList,application/json",
    ] {
        let r = s.request("GET", "/apis", &[("Accept", accept)], None);
        assert_eq!(r.json()["kind"], "APIGroupList", "{accept}");
    }
}
