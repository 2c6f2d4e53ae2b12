//! "Adding a version or a kind means editing the document only": builds the real binary against a
//! document extended at run time (a new version of a group, a new kind, a removed path, a
//! subresource served under another group) and checks that the server it makes serves exactly the
//! edited API. The core group and kube's namespaces, which the checked-in document serves, are
//! tested against the real binary (`namespaces.rs`, `discovery.rs`).

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use serde_json::{json, Value};

use crate::common::{repo_root, ServerOptions, TestServer};

/// The group that gains a version, the version it has, and the one it gains (which then becomes
/// the preferred and storage version).
const NEW_VERSION_GROUP: &str = "clone.kubevirt.io";
const OLD_VERSION: &str = "v1alpha1";
const NEW_VERSION: &str = "v1beta1";
/// The kind copied into a new kind of the same group and version.
const TEMPLATE_GROUP: &str = "kubevirt.io";
const TEMPLATE_VERSION: &str = "v1";
const TEMPLATE_KIND: &str = "VirtualMachine";
const TEMPLATE_SINGULAR: &str = "virtualmachine";
const TEMPLATE_PLURAL: &str = "virtualmachines";
const NEW_KIND: &str = "VirtualMachinePool";
const NEW_SINGULAR: &str = "virtualmachinepool";
const NEW_PLURAL: &str = "virtualmachinepools";
/// The path removed from the document.
const REMOVED_PATH: &str = "/apis/export.kubevirt.io/v1alpha1/virtualmachineexports";
/// Replaces every `from` by `to` in every string and object key of `v`.
fn rename(v: &Value, pairs: &[(&str, &str)]) -> Value {
    let fix = |s: &str| pairs.iter().fold(s.to_string(), |acc, (from, to)| acc.replace(from, to));
    match v {
        Value::String(s) => Value::String(fix(s)),
        Value::Array(items) => Value::Array(items.iter().map(|i| rename(i, pairs)).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (fix(k), rename(v, pairs))).collect())
        }
        other => other.clone(),
    }
}

/// The reverse-DNS definition prefix of a group version (`io.kubevirt.clone.v1alpha1.`).
fn definition_prefix(group: &str, version: &str) -> String {
    let mut parts: Vec<&str> = group.split('.').collect();
    parts.reverse();
    format!("{}.{version}.", parts.join("."))
}

/// Adds to `section` (`paths` or `definitions`) a renamed copy of every entry whose key `copy`
/// accepts, and returns how many. Panics if a copy would replace an entry.
fn copy_renamed(
    doc: &mut Value,
    section: &str,
    copy: impl Fn(&str) -> bool,
    pairs: &[(&str, &str)],
) -> usize {
    let map = doc[section].as_object_mut().expect("an object section");
    let copies: Vec<(String, Value)> = map
        .iter()
        .filter(|(k, _)| copy(k))
        .map(|(k, v)| match rename(&json!({ k: v }), pairs) {
            Value::Object(one) => one.into_iter().next().expect("one entry"),
            _ => unreachable!(),
        })
        .collect();
    for (k, v) in &copies {
        assert!(map.insert(k.clone(), v.clone()).is_none(), "{section} already has {k}");
    }
    copies.len()
}

/// The extended document: `clone.kubevirt.io` gains `v1beta1`, `kubevirt.io/v1` gains the
/// namespaced kind `VirtualMachinePool` (short names vmpool, vmpools), and the all-namespaces
/// list of VirtualMachineExports is removed.
fn extended_document(original: &Value) -> Value {
    let mut doc = original.clone();

    // A new version of an existing group: its discovery path, resource paths and definitions.
    let renames = [
        (OLD_VERSION, NEW_VERSION),
        (&capitalized(OLD_VERSION) as &str, &capitalized(NEW_VERSION) as &str),
    ];
    let path_prefix = format!("/apis/{NEW_VERSION_GROUP}/{OLD_VERSION}/");
    let paths = copy_renamed(&mut doc, "paths", |p| p.starts_with(&path_prefix), &renames);
    let def_prefix = definition_prefix(NEW_VERSION_GROUP, OLD_VERSION);
    let defs = copy_renamed(&mut doc, "definitions", |d| d.starts_with(&def_prefix), &renames);
    // The discovery path, the four resource paths, and any subresource paths; the kind and list.
    assert!(paths >= 5 && defs == 2, "copied {paths} paths and {defs} definitions");

    // A new kind in an existing group version, modelled on VirtualMachine.
    let renames = [(TEMPLATE_KIND, NEW_KIND), (TEMPLATE_SINGULAR, NEW_SINGULAR)];
    let path_prefix = format!("/apis/{TEMPLATE_GROUP}/{TEMPLATE_VERSION}/");
    let is_template_path =
        |p: &str| p.starts_with(&path_prefix) && p.split('/').any(|seg| seg == TEMPLATE_PLURAL);
    let paths = copy_renamed(&mut doc, "paths", is_template_path, &renames);
    let template_def =
        format!("{}{TEMPLATE_KIND}", definition_prefix(TEMPLATE_GROUP, TEMPLATE_VERSION));
    let template_list = format!("{template_def}List");
    let is_template_def = |d: &str| d == template_def || d == template_list;
    let defs = copy_renamed(&mut doc, "definitions", is_template_def, &renames);
    // Six resource paths, and any subresource paths; the kind and its list.
    assert!(paths >= 6 && defs == 2, "copied {paths} paths and {defs} definitions");
    let new_def = format!("{}{NEW_KIND}", definition_prefix(TEMPLATE_GROUP, TEMPLATE_VERSION));
    let def = &mut doc["definitions"][&new_def];
    def["description"] = json!("A pool of identical virtual machines (a fixture kind).");
    // Its own spec: fields a schema does not declare are pruned.
    def["properties"]["spec"] = json!({"type": "object", "description": "Desired pool.", "properties": {
        "replicas": {"type": "integer", "format": "int32", "description": "Number of machines."},
        "selector": {"type": "object", "description": "Selects the pool's machines.",
                     "x-kubernetes-preserve-unknown-fields": true}}});
    let res = &mut def["x-virt-resource"];
    assert_eq!(res["plural"], NEW_PLURAL);
    res["shortNames"] = json!(["vmpool", "vmpools"]);
    // As a CRD's `selectableFields`: `fieldSelector=spec.replicas=3`.
    res["selectableFields"] = json!([{"jsonPath": ".spec.replicas"}]);
    res["categories"] = json!(["all"]);
    res["printerColumns"] = json!([{
        "name": "Age", "type": "date", "format": "", "priority": 0,
        "description": "Custom resource definition column (in JSONPath format): .metadata.creationTimestamp",
        "jsonPath": ".metadata.creationTimestamp"
    }]);

    // A removed path.
    let removed = doc["paths"].as_object_mut().expect("paths").remove(REMOVED_PATH);
    assert!(removed.is_some(), "{REMOVED_PATH} is in the document");

    add_cross_group_status(&mut doc);

    check_document(&doc);
    doc
}

/// The group a subresource of another group's kind is served under (KubeVirt's actions live in
/// `subresources.kubevirt.io`), and the VirtualMachine's `status` served there too.
const CROSS_GROUP: &str = "subresources.kubevirt.io";

fn add_cross_group_status(doc: &mut Value) {
    let own = format!("/apis/{TEMPLATE_GROUP}/{TEMPLATE_VERSION}/namespaces/{{namespace}}/{TEMPLATE_PLURAL}/{{name}}/status");
    let renames = [
        (format!("/apis/{TEMPLATE_GROUP}/"), format!("/apis/{CROSS_GROUP}/")),
        ("KubevirtIoV1".to_string(), "SubresourcesKubevirtIoV1".to_string()),
    ];
    let pairs: Vec<(&str, &str)> = renames.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let copied = copy_renamed(doc, "paths", |p| p == own, &pairs);
    assert_eq!(copied, 1);
    let path = own.replace(&format!("/apis/{TEMPLATE_GROUP}/"), &format!("/apis/{CROSS_GROUP}/"));
    doc["paths"][&path]["x-virt-subresource-of"] =
        json!({"group": TEMPLATE_GROUP, "plural": TEMPLATE_PLURAL});
    let handler = |id: &str, name: &str| {
        json!({"get": {"operationId": id, "produces": ["application/json"],
                       "responses": {"200": {"description": "OK"}}, "x-virt-handler": name}})
    };
    // The checked-in document serves the group already (KubeVirt's actions): then only the
    // status path is new.
    let paths = doc["paths"].as_object_mut().unwrap();
    for (path, item) in cross_group_paths() {
        paths.entry(path).or_insert_with(|| handler(item.0, item.1));
    }
    let groups = doc["x-virt-api-groups"].as_array_mut().unwrap();
    if !groups.contains(&json!(CROSS_GROUP)) {
        groups.push(json!(CROSS_GROUP));
    }
}

/// The cross group's discovery paths, with their operationIds and handlers.
fn cross_group_paths() -> [(String, (&'static str, &'static str)); 2] {
    [
        (format!("/apis/{CROSS_GROUP}/"), ("getSubresourcesKubevirtIoAPIGroup", "apiGroup")),
        (
            format!("/apis/{CROSS_GROUP}/v1/"),
            ("getSubresourcesKubevirtIoV1APIResources", "apiResources"),
        ),
    ]
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// What the edit must keep true: every `$ref` resolves and operationIds stay unique.
fn check_document(doc: &Value) {
    fn walk<'a>(v: &'a Value, refs: &mut Vec<&'a str>, ids: &mut Vec<&'a str>) {
        match v {
            Value::Object(map) => {
                for (k, v) in map {
                    match (k.as_str(), v) {
                        ("$ref", Value::String(r)) => refs.push(r),
                        ("operationId", Value::String(id)) => ids.push(id),
                        _ => walk(v, refs, ids),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, refs, ids)),
            _ => {}
        }
    }
    let (mut refs, mut ids) = (Vec::new(), Vec::new());
    walk(doc, &mut refs, &mut ids);
    for r in refs {
        let pointer = r.strip_prefix('#').unwrap_or_else(|| panic!("non-local $ref {r}"));
        let pointer = pointer.replace("~1", "/");
        assert!(doc.pointer(&pointer).is_some(), "dangling $ref {r}");
    }
    let unique: BTreeSet<&str> = ids.iter().copied().collect();
    assert_eq!(unique.len(), ids.len(), "operationIds are unique");
}

/// Writes `bytes` to `path` unless it already holds them, so cargo sees no change on a rerun;
/// through a rename, so a build reading it beside (the other storage's run) never sees it half
/// written.
fn write_if_changed(path: &Path, bytes: &[u8]) {
    if std::fs::read(path).ok().as_deref() != Some(bytes) {
        let scratch = path.with_extension(format!("{}.tmp", std::process::id()));
        std::fs::write(&scratch, bytes)
            .unwrap_or_else(|e| panic!("write {}: {e}", scratch.display()));
        std::fs::rename(&scratch, path)
            .unwrap_or_else(|e| panic!("rename to {}: {e}", path.display()));
    }
}

/// Prints past the test harness's capture, so the timing shows in every run's log.
fn say(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

/// Names in a profile dir that are the workspace's document-dependent crates (the server's
/// library, binary and test binaries, by crate or package name): the fixture build makes its own.
const OWN_ARTIFACTS: [&str; 5] =
    ["virt_apiserver", "libvirt_apiserver", "virt-apiserver", "api-", "layers-"];

/// Seeds a fixture target dir that has no build yet with the dependencies this test's own
/// build compiled, so the fixture build compiles the server alone: a cold one compiled every
/// dependency again, about five minutes of a core on two. They are the same artifacts because
/// the features are (Cargo.toml keeps a plain build's features the test build's) and so is the
/// profile. Copied with their times (cargo reads an older dependency as rebuilt), not linked (it
/// rewrites in place what it rebuilds), into a scratch dir renamed into place: the suite on
/// SQLite and on etcd may run side by side, and only one seed may land.
fn seed(target_dir: &Path) {
    let profile = target_dir.join("debug");
    let exe = std::env::current_exe().expect("the test's path");
    // target/debug/deps/api-<hash>: its profile dir is two levels up.
    let Some(ours) = exe.parent().and_then(Path::parent) else { return };
    if profile.exists() || !ours.join(".fingerprint").is_dir() {
        return;
    }
    let started = Instant::now();
    let scratch = target_dir.join(format!(".seed-{}", std::process::id()));
    for sub in ["deps", "build", ".fingerprint"] {
        let to = scratch.join(sub);
        std::fs::create_dir_all(&to).expect("create the seeded dir");
        let entries: Vec<PathBuf> = std::fs::read_dir(ours.join(sub))
            .expect("read the test build's profile dir")
            .map(|e| e.expect("a dir entry"))
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                !OWN_ARTIFACTS.iter().any(|own| name.starts_with(own))
            })
            .map(|e| e.path())
            .collect();
        if entries.is_empty() {
            continue;
        }
        let out = Command::new("cp")
            .arg("-a")
            .args(&entries)
            .arg(&to)
            .output()
            .unwrap_or_else(|e| panic!("cannot run cp: {e}"));
        assert!(
            out.status.success(),
            "cp -a into {}: {}",
            to.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    match std::fs::rename(&scratch, &profile) {
        Ok(()) => say(&format!(
            "fixture build: seeded {} from {} in {:.1} s",
            profile.display(),
            ours.display(),
            started.elapsed().as_secs_f64()
        )),
        // Another run's seed landed first.
        Err(_) => std::fs::remove_dir_all(&scratch).expect("remove the unused seed"),
    }
}

/// Builds `virt-apiserver` against `doc` in its own target dir and returns the binary.
fn build_against(doc: &Path, target_dir: &Path) -> PathBuf {
    seed(target_dir);
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| env!("CARGO").into());
    // Lowest priority, so the build slows the tests running beside it as little as it can.
    let mut cmd = if Path::new("/usr/bin/nice").exists() {
        let mut c = Command::new("/usr/bin/nice");
        c.args(["-n", "19"]).arg(&cargo);
        c
    } else {
        Command::new(&cargo)
    };
    cmd.args(["build", "--locked", "--bin", "virt-apiserver", "--target-dir"])
        .arg(target_dir)
        .current_dir(repo_root())
        .env("VIRT_APISERVER_OPENAPI", doc)
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_TARGET_DIR");
    let started = Instant::now();
    say(&format!("fixture build: cargo build --target-dir {} ...", target_dir.display()));
    let out = cmd.output().unwrap_or_else(|e| panic!("cannot run cargo: {e}"));
    say(&format!("fixture build: took {:.1} s", started.elapsed().as_secs_f64()));
    assert!(
        out.status.success(),
        "cargo build against {} failed ({}):\n{}",
        doc.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let bin =
        target_dir.join("debug").join(format!("virt-apiserver{}", std::env::consts::EXE_SUFFIX));
    assert!(bin.is_file(), "{} was built", bin.display());
    bin
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap_or_default().to_string())
        .collect()
}

fn discovery_resource<'a>(list: &'a Value, plural: &str) -> Option<&'a Value> {
    list["resources"].as_array()?.iter().find(|r| r["name"] == plural)
}

#[test]
fn extended_document_unit() {
    let original: Value = serde_json::from_slice(
        &std::fs::read(repo_root().join("openapi/virt-apiserver.json")).expect("read document"),
    )
    .expect("the document is JSON");
    let doc = extended_document(&original);
    let paths = doc["paths"].as_object().unwrap();
    assert!(paths.contains_key("/apis/clone.kubevirt.io/v1beta1/virtualmachineclones/{name}"));
    assert!(paths.contains_key("/apis/clone.kubevirt.io/v1beta1/"));
    assert!(paths.contains_key("/apis/kubevirt.io/v1/namespaces/{namespace}/virtualmachinepools"));
    assert!(paths.contains_key("/apis/kubevirt.io/v1/watch/virtualmachinepools"));
    assert!(!paths.contains_key(REMOVED_PATH));
    let count = |prefix: &str, plural: &str| {
        original["paths"]
            .as_object()
            .unwrap()
            .keys()
            .filter(|p| p.starts_with(prefix) && (plural.is_empty() || p.contains(plural)))
            .count()
    };
    let template = count("/apis/kubevirt.io/v1/", "/virtualmachines");
    // The VirtualMachine's status under subresources.kubevirt.io, and that group's discovery
    // paths the document lacks.
    let original_paths = original["paths"].as_object().unwrap();
    let cross =
        1 + cross_group_paths().iter().filter(|(p, _)| !original_paths.contains_key(p)).count();
    let added = count("/apis/clone.kubevirt.io/v1alpha1/", "") + template + cross;
    assert_eq!(paths.len(), original["paths"].as_object().unwrap().len() + added - 1);
    assert!(paths.contains_key(
        "/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachines/{name}/status"
    ));
    // The rest of the document, the core group's kinds among them, is untouched.
    for (path, item) in original["paths"].as_object().unwrap() {
        if path != REMOVED_PATH {
            assert_eq!(&paths[path], item, "{path}");
        }
    }
    assert_eq!(doc["x-virt-api-groups"][0], "");
    let get =
        &paths["/apis/kubevirt.io/v1/namespaces/{namespace}/virtualmachinepools/{name}"]["get"];
    assert_eq!(get["operationId"], "readKubevirtIoV1NamespacedVirtualMachinePool");
    assert_eq!(get["x-kubernetes-group-version-kind"]["kind"], NEW_KIND);
    let get = &paths["/apis/clone.kubevirt.io/v1beta1/virtualmachineclones/{name}"]["get"];
    assert_eq!(get["operationId"], "readCloneKubevirtIoV1beta1VirtualMachineClone");
    assert_eq!(get["x-kubernetes-group-version-kind"]["version"], "v1beta1");
    assert!(doc["definitions"]["io.kubevirt.clone.v1beta1.VirtualMachineCloneList"].is_object());
    assert!(doc["definitions"]["io.kubevirt.v1.VirtualMachinePoolList"].is_object());
}

#[test]
fn a_document_edit_alone_adds_a_version_and_a_kind_and_removes_a_path() {
    let root = repo_root();
    let original: Value = serde_json::from_slice(
        &std::fs::read(root.join("openapi/virt-apiserver.json")).expect("read document"),
    )
    .expect("the document is JSON");
    let doc = extended_document(&original);

    // A stable place (not a fresh temp dir) so that a rerun with the same document is a no-op
    // build; the directory is cargo's own output, never committed.
    let target_dir = root.join("target").join("fixture-build");
    std::fs::create_dir_all(&target_dir).expect("create target dir");
    let doc_path = target_dir.join("extended.json");
    let bytes = serde_json::to_vec_pretty(&doc).expect("encode");
    write_if_changed(&doc_path, &bytes);
    let bin = build_against(&doc_path, &target_dir);

    let server =
        TestServer::start_with(ServerOptions { binary: Some(bin.clone()), ..Default::default() });

    // The served v2 document is the edited one, byte for byte.
    let v2 = server.get("/openapi/v2");
    assert_eq!(v2.status, 200);
    assert!(v2.body == bytes, "/openapi/v2 serves the fixture document");

    // Its objects live in a namespace made first, as against any cluster with kube's namespaces.
    let kubectl = crate::common::Kubectl::new(&server);
    kubectl.ok(&["create", "namespace", "pools"]);

    // Discovery: the new version is the group's preferred one, and has the group's kind.
    let group = server.get(&format!("/apis/{NEW_VERSION_GROUP}"));
    assert_eq!(group.status, 200, "{}", group.text());
    let group = group.json();
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, [NEW_VERSION, OLD_VERSION], "{group}");
    assert_eq!(group["preferredVersion"]["version"], NEW_VERSION, "{group}");
    let all = server.get("/apis").json();
    let listed = all["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == NEW_VERSION_GROUP)
        .unwrap_or_else(|| panic!("/apis lists {NEW_VERSION_GROUP}: {all}"));
    assert_eq!(
        listed["preferredVersion"]["groupVersion"],
        format!("{NEW_VERSION_GROUP}/{NEW_VERSION}")
    );
    let resources = server.get(&format!("/apis/{NEW_VERSION_GROUP}/{NEW_VERSION}"));
    assert_eq!(resources.status, 200, "{}", resources.text());
    let resources = resources.json();
    assert_eq!(resources["groupVersion"], format!("{NEW_VERSION_GROUP}/{NEW_VERSION}"));
    let clone = discovery_resource(&resources, "virtualmachineclones")
        .unwrap_or_else(|| panic!("virtualmachineclones in {resources}"));
    assert_eq!(clone["namespaced"], false);
    assert_eq!(clone["kind"], "VirtualMachineClone");
    let index = server.get("/openapi/v3").json();
    assert!(
        index["paths"].get(format!("apis/{NEW_VERSION_GROUP}/{NEW_VERSION}")).is_some(),
        "/openapi/v3 lists the new version: {index}"
    );

    // Discovery: the new kind, with its short names, beside the kinds it was copied from.
    let v1 = server.get(&format!("/apis/{TEMPLATE_GROUP}/{TEMPLATE_VERSION}")).json();
    let pool =
        discovery_resource(&v1, NEW_PLURAL).unwrap_or_else(|| panic!("{NEW_PLURAL} in {v1}"));
    assert_eq!(pool["kind"], NEW_KIND);
    assert_eq!(pool["singularName"], "virtualmachinepool");
    assert_eq!(pool["namespaced"], true);
    assert_eq!(pool["shortNames"], json!(["vmpool", "vmpools"]));
    assert_eq!(
        pool["verbs"],
        json!(["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"])
    );
    assert!(discovery_resource(&v1, TEMPLATE_PLURAL).is_some(), "{v1}");
    let alpha3 = server.get(&format!("/apis/{TEMPLATE_GROUP}/v1alpha3")).json();
    assert!(discovery_resource(&alpha3, NEW_PLURAL).is_none(), "only v1 got the kind: {alpha3}");

    // The new kind over HTTP: create, get, list (one namespace and all), delete.
    let base = format!("/apis/{TEMPLATE_GROUP}/{TEMPLATE_VERSION}");
    let coll = format!("{base}/namespaces/pools/{NEW_PLURAL}");
    let body = json!({
        "apiVersion": format!("{TEMPLATE_GROUP}/{TEMPLATE_VERSION}"),
        "kind": NEW_KIND,
        "metadata": {"name": "web", "labels": {"tier": "frontend"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"tier": "frontend"}}}
    });
    let created = server.post(&coll, &body);
    assert_eq!(created.status, 201, "{}", created.text());
    let created = created.json();
    assert_eq!(created["kind"], NEW_KIND);
    assert_eq!(created["metadata"]["namespace"], "pools");
    assert_eq!(created["spec"], body["spec"]);
    let got = server.get(&format!("{coll}/web"));
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(got.json()["metadata"]["uid"], created["metadata"]["uid"]);
    let list = server.get(&coll);
    assert_eq!(list.status, 200, "{}", list.text());
    let list = list.json();
    assert_eq!(list["kind"], format!("{NEW_KIND}List"));
    assert_eq!(names(&list), ["web"]);
    let list = server.get(&format!("{base}/{NEW_PLURAL}"));
    assert_eq!(list.status, 200, "{}", list.text());
    assert_eq!(names(&list.json()), ["web"]);
    // Its selectable field: compared as text, with `=` and `!=`; other fields are not selectable.
    for (selector, want) in [("spec.replicas=3", vec!["web"]), ("spec.replicas!=3", vec![])] {
        let list = server.get(&format!("{coll}?fieldSelector={selector}"));
        assert_eq!(list.status, 200, "{}", list.text());
        assert_eq!(names(&list.json()), want, "{selector}");
    }
    let unsupported = server.get(&format!("{coll}?fieldSelector=spec.selector=x"));
    assert_eq!(unsupported.status, 400, "{}", unsupported.text());
    assert_eq!(unsupported.json()["message"], "field label not supported: spec.selector");
    let found = kubectl.ok(&[
        "get",
        "vmpool",
        "-n",
        "pools",
        "--field-selector",
        "spec.replicas=3",
        "-o",
        "name",
    ]);
    assert_eq!(found.trim(), format!("{NEW_SINGULAR}.{TEMPLATE_GROUP}/web"), "{found}");
    // Its storage is its own: the kind it was copied from does not see it.
    assert_eq!(
        names(&server.get(&format!("{base}/{TEMPLATE_PLURAL}")).json()),
        Vec::<String>::new()
    );
    let deleted = server.delete(&format!("{coll}/web"));
    assert_eq!(deleted.status, 200, "{}", deleted.text());
    let gone = server.get(&format!("{coll}/web"));
    assert_eq!(gone.status, 404, "{}", gone.text());
    assert_eq!(gone.json()["reason"], "NotFound");

    // The new version shares storage with the old one (A.3).
    let clones = format!("/apis/{NEW_VERSION_GROUP}/{NEW_VERSION}/virtualmachineclones");
    let body = json!({
        "apiVersion": format!("{NEW_VERSION_GROUP}/{NEW_VERSION}"),
        "kind": "VirtualMachineClone",
        "metadata": {"name": "copy-of-fedora"},
        "spec": {"source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "fedora-vm"}}
    });
    let created = server.post(&clones, &body);
    assert_eq!(created.status, 201, "{}", created.text());
    let old = server.get(&format!(
        "/apis/{NEW_VERSION_GROUP}/{OLD_VERSION}/virtualmachineclones/copy-of-fedora"
    ));
    assert_eq!(old.status, 200, "{}", old.text());
    let old = old.json();
    assert_eq!(old["apiVersion"], format!("{NEW_VERSION_GROUP}/{OLD_VERSION}"));
    assert_eq!(old["spec"], body["spec"]);

    // The removed path is gone; its siblings stay.
    let removed = server.get(REMOVED_PATH);
    assert_eq!(removed.status, 404, "{REMOVED_PATH}: {}", removed.text());
    let sibling =
        server.get("/apis/export.kubevirt.io/v1alpha1/namespaces/default/virtualmachineexports");
    assert_eq!(sibling.status, 200, "{}", sibling.text());
    let watch_all = server
        .get("/apis/export.kubevirt.io/v1alpha1/watch/virtualmachineexports?timeoutSeconds=1");
    assert_eq!(
        watch_all.status,
        200,
        "the all-namespaces watch was not removed: {}",
        watch_all.text()
    );

    // A subresource served under another group than its kind's (x-virt-subresource-of): the
    // VirtualMachine's status, read and written under subresources.kubevirt.io.
    let vm = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
                    "metadata": {"name": "crossed"}, "spec": {}});
    let made = server.post("/apis/kubevirt.io/v1/namespaces/pools/virtualmachines", &vm);
    assert_eq!(made.status, 201, "{}", made.text());
    let crossed = format!("/apis/{CROSS_GROUP}/v1/namespaces/pools/virtualmachines/crossed/status");
    let read = server.get(&crossed);
    assert_eq!(read.status, 200, "{}", read.text());
    assert_eq!(read.json()["metadata"]["uid"], made.json()["metadata"]["uid"]);
    let patched = server.request(
        "PATCH",
        &crossed,
        &[],
        Some(("application/merge-patch+json", br#"{"status":{"printableStatus":"Stopped"}}"#)),
    );
    assert_eq!(patched.status, 200, "{}", patched.text());
    let own = server.get("/apis/kubevirt.io/v1/namespaces/pools/virtualmachines/crossed").json();
    assert_eq!(own["status"]["printableStatus"], "Stopped", "{own}");
    let group = server.get(&format!("/apis/{CROSS_GROUP}"));
    assert_eq!(group.status, 200, "{}", group.text());

    // And the binary built from the checked-in document serves none of the edits.
    let plain = TestServer::start();
    assert_eq!(plain.get(&format!("{coll}/web")).status, 404);
    assert_eq!(plain.get(&format!("/apis/{NEW_VERSION_GROUP}/{NEW_VERSION}")).status, 404);
    assert_eq!(plain.get(REMOVED_PATH).status, 200);

    // A database the checked-in document's binary wrote opens under the edited document, its
    // objects read through the new version.
    let clone = json!({
        "apiVersion": format!("{NEW_VERSION_GROUP}/{OLD_VERSION}"),
        "kind": "VirtualMachineClone",
        "metadata": {"name": "before-the-edit"},
        "spec": {"source": {"apiGroup": "kubevirt.io", "kind": "VirtualMachine", "name": "vm"}}
    });
    let made = plain
        .post(&format!("/apis/{NEW_VERSION_GROUP}/{OLD_VERSION}/virtualmachineclones"), &clone);
    assert_eq!(made.status, 201, "{}", made.text());
    let (db, dir) = plain.kill();
    let upgraded = TestServer::start_with(ServerOptions {
        db: Some(db),
        binary: Some(bin),
        ..Default::default()
    });
    let read = upgraded.get(&format!("{clones}/before-the-edit"));
    assert_eq!(read.status, 200, "{}", read.text());
    let read = read.json();
    assert_eq!(read["apiVersion"], format!("{NEW_VERSION_GROUP}/{NEW_VERSION}"));
    assert_eq!(read["metadata"]["uid"], made.json()["metadata"]["uid"]);
    assert_eq!(read["spec"], clone["spec"]);
    drop(upgraded);
    drop(dir);
}
