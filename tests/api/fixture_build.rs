//! "Adding a version or a kind means editing the document only": builds the real binary against a
//! document extended at run time (a new version of a group, a new kind, a kind of the legacy core
//! group under `/api/v1`, a removed path) and checks that the server it makes serves exactly the
//! edited API.

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
/// The kind added to the legacy core group (`""`, served under `/api/v1`), modelled on the
/// template kind.
const CORE_KIND: &str = "ConfigMap";
const CORE_PLURAL: &str = "configmaps";

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

    add_core_kind(&mut doc);
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
    let paths = doc["paths"].as_object_mut().unwrap();
    paths.insert(
        format!("/apis/{CROSS_GROUP}/"),
        handler("getSubresourcesKubevirtIoAPIGroup", "apiGroup"),
    );
    paths.insert(
        format!("/apis/{CROSS_GROUP}/v1/"),
        handler("getSubresourcesKubevirtIoV1APIResources", "apiResources"),
    );
    doc["x-virt-api-groups"].as_array_mut().unwrap().push(json!(CROSS_GROUP));
}

/// The legacy core group with one namespaced kind: `""` in x-virt-api-groups, its discovery path
/// `/api/v1/`, its OpenAPI v3 document path, and the template kind's paths moved to `/api/v1`.
fn add_core_kind(doc: &mut Value) {
    let template_prefix = format!("/apis/{TEMPLATE_GROUP}/{TEMPLATE_VERSION}/");
    let renames = [
        (&template_prefix as &str, "/api/v1/"),
        ("io.kubevirt.v1.VirtualMachine", "io.k8s.api.core.v1.ConfigMap"),
        ("KubevirtIoV1", "CoreV1"),
        (TEMPLATE_KIND, CORE_KIND),
        (TEMPLATE_SINGULAR, "configmap"),
    ];
    let is_template_path =
        |p: &str| p.starts_with(&template_prefix) && p.split('/').any(|seg| seg == TEMPLATE_PLURAL);
    // Only the kind's own paths: a status subresource is the template's, not a ConfigMap's.
    let copy = |p: &str| is_template_path(p) && !p.ends_with("/status");
    let paths = copy_renamed(doc, "paths", copy, &renames);
    assert!(paths >= 6, "copied {paths} paths");
    let def = format!("{}{TEMPLATE_KIND}", definition_prefix(TEMPLATE_GROUP, TEMPLATE_VERSION));
    let list = format!("{def}List");
    let defs = copy_renamed(doc, "definitions", |d| d == def || d == list, &renames);
    assert_eq!(defs, 2);
    let core_gvk = |kind: &str| json!({"group": "", "version": "v1", "kind": kind});
    let paths = doc["paths"].as_object_mut().unwrap();
    for (path, item) in paths.iter_mut().filter(|(p, _)| p.starts_with("/api/v1/")) {
        for op in
            item.as_object_mut().unwrap().values_mut().filter(|o| o.get("operationId").is_some())
        {
            if op.get("x-kubernetes-group-version-kind").is_some() {
                op["x-kubernetes-group-version-kind"] = core_gvk(CORE_KIND);
            }
        }
        assert!(!path.contains("kubevirt"), "{path}");
    }
    let handler = |id: &str, name: &str| {
        json!({"get": {"operationId": id, "produces": ["application/json"],
                       "responses": {"200": {"description": "OK"}}, "x-virt-handler": name}})
    };
    paths.insert("/api/v1/".into(), handler("getCoreV1APIResources", "apiResources"));
    let mut v3 = handler("getOpenAPIV3CoreDocument", "openapiV3Document");
    v3["get"]["parameters"] =
        json!([{"name": "version", "in": "path", "required": true, "type": "string"}]);
    paths.insert("/openapi/v3/api/{version}".into(), v3);
    let defs = doc["definitions"].as_object_mut().unwrap();
    let kind = &mut defs["io.k8s.api.core.v1.ConfigMap"];
    kind["x-kubernetes-group-version-kind"] = json!([core_gvk(CORE_KIND)]);
    kind["description"] = json!("Configuration data (a fixture kind of the core group).");
    // kube's ConfigMap, with its protobuf field numbers (generated.proto): kubectl's typed
    // client sends it as protobuf.
    kind["properties"] = json!({
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                     "x-virt-proto-tag": 1},
        "data": {"type": "object", "additionalProperties": {"type": "string"}, "x-virt-proto-tag": 2},
        "binaryData": {"type": "object", "x-virt-proto-tag": 3,
                       "additionalProperties": {"type": "string", "format": "byte"}},
        "immutable": {"type": "boolean", "x-virt-proto-tag": 4},
    });
    kind["x-virt-resource"]["shortNames"] = json!(["cm"]);
    // kube's printer for ConfigMaps: DATA counts both maps.
    kind["x-virt-resource"]["printerColumns"] = json!([
        {"name": "Data", "type": "integer", "description": "Data contains the configuration data.",
         "cell": {"count": [".data", ".binaryData"]}},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
         "description": "CreationTimestamp is a timestamp representing the server time when this object was created."},
    ]);
    kind["x-virt-resource"]["categories"] = json!([]);
    defs["io.k8s.api.core.v1.ConfigMapList"]["x-kubernetes-group-version-kind"] =
        json!([core_gvk("ConfigMapList")]);
    number_meta(defs);
    doc["x-virt-api-groups"].as_array_mut().unwrap().insert(0, json!(""));
    add_namespaces(doc);
}

/// kube's Namespace in the core group, marked as the namespaces (`x-virt-resource.namespaces`),
/// its paths modelled on the cluster-scoped VirtualMachineClone's (which has a status too).
fn add_namespaces(doc: &mut Value) {
    let template_prefix = format!("/apis/{NEW_VERSION_GROUP}/{OLD_VERSION}/");
    let template_def =
        format!("{}VirtualMachineClone", definition_prefix(NEW_VERSION_GROUP, OLD_VERSION));
    let renames = [
        (template_prefix.as_str(), "/api/v1/"),
        (template_def.as_str(), "io.k8s.api.core.v1.Namespace"),
        ("CloneKubevirtIoV1alpha1", "CoreV1"),
        ("VirtualMachineClone", "Namespace"),
        ("virtualmachineclone", "namespace"),
    ];
    let copy = |p: &str| p.starts_with(&template_prefix) && p.contains("/virtualmachineclones");
    let paths = copy_renamed(doc, "paths", copy, &renames);
    assert_eq!(paths, 5, "the collection, the object, its status and the two watches");
    let list = format!("{template_def}List");
    let defs = copy_renamed(doc, "definitions", |d| d == template_def || d == list, &renames);
    assert_eq!(defs, 2);
    let gvk = |kind: &str| json!({"group": "", "version": "v1", "kind": kind});
    // kube's update-only `finalize`, modelled on the object's own PUT.
    let object = doc["paths"]["/api/v1/namespaces/{name}"].clone();
    let mut put = object["put"].clone();
    put["operationId"] = json!("replaceCoreV1NamespaceFinalize");
    doc["paths"]["/api/v1/namespaces/{name}/finalize"] =
        json!({"parameters": object["parameters"], "put": put});
    for (path, item) in doc["paths"].as_object_mut().unwrap().iter_mut() {
        if !path.starts_with("/api/v1/") || !path.contains("namespaces") {
            continue;
        }
        for op in item.as_object_mut().unwrap().values_mut() {
            if let Some(g) = op.get_mut("x-kubernetes-group-version-kind") {
                let kind = g["kind"].as_str().unwrap_or("Namespace").to_string();
                *g = gvk(&kind);
            }
        }
    }
    let defs = doc["definitions"].as_object_mut().unwrap();
    let ns = &mut defs["io.k8s.api.core.v1.Namespace"];
    ns["x-kubernetes-group-version-kind"] = json!([gvk("Namespace")]);
    ns["description"] =
        json!("Namespace provides a scope for Names (a fixture kind of the core group).");
    ns["properties"] = json!({
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                     "x-virt-proto-tag": 1},
        "spec": {"type": "object", "x-virt-proto-tag": 2, "properties": {
            "finalizers": {"type": "array", "items": {"type": "string"}, "x-virt-proto-tag": 1}}},
        "status": {"type": "object", "x-virt-proto-tag": 3, "properties": {
            "phase": {"type": "string", "x-virt-proto-tag": 1}}},
    });
    let res = &mut ns["x-virt-resource"];
    res["namespaces"] = json!(true);
    res["shortNames"] = json!(["ns"]);
    res["printerColumns"] = json!([
        {"name": "Status", "type": "string", "jsonPath": ".status.phase",
         "description": "The phase of the namespace."},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp",
         "description": "CreationTimestamp is a timestamp representing the server time when this object was created."},
    ]);
    defs["io.k8s.api.core.v1.NamespaceList"]["x-kubernetes-group-version-kind"] =
        json!([gvk("NamespaceList")]);
}

/// ObjectMeta and the messages inside it, numbered as apimachinery's generated.proto numbers
/// them.
fn number_meta(defs: &mut serde_json::Map<String, Value>) {
    let meta = "io.k8s.apimachinery.pkg.apis.meta.v1.";
    let numbers: [(&str, &[(&str, u64)]); 3] = [
        (
            "ObjectMeta",
            &[
                ("name", 1),
                ("generateName", 2),
                ("namespace", 3),
                ("selfLink", 4),
                ("uid", 5),
                ("resourceVersion", 6),
                ("generation", 7),
                ("creationTimestamp", 8),
                ("deletionTimestamp", 9),
                ("deletionGracePeriodSeconds", 10),
                ("labels", 11),
                ("annotations", 12),
                ("ownerReferences", 13),
                ("finalizers", 14),
                ("managedFields", 17),
            ],
        ),
        (
            "OwnerReference",
            &[
                ("kind", 1),
                ("name", 3),
                ("uid", 4),
                ("apiVersion", 5),
                ("controller", 6),
                ("blockOwnerDeletion", 7),
            ],
        ),
        (
            "ManagedFieldsEntry",
            &[
                ("manager", 1),
                ("operation", 2),
                ("apiVersion", 3),
                ("time", 4),
                ("fieldsType", 6),
                ("fieldsV1", 7),
                ("subresource", 8),
            ],
        ),
    ];
    for (def, fields) in numbers {
        let props = &mut defs[&format!("{meta}{def}")]["properties"];
        for (field, tag) in fields {
            assert!(props.get(field).is_some(), "{def}.{field}");
            props[field]["x-virt-proto-tag"] = json!(tag);
        }
    }
    defs[&format!("{meta}Time")]["x-virt-proto-type"] = json!("time");
    defs[&format!("{meta}FieldsV1")]["x-virt-proto-type"] = json!("raw-json");
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

/// Writes `bytes` to `path` unless it already holds them, so cargo sees no change on a rerun.
fn write_if_changed(path: &Path, bytes: &[u8]) {
    if std::fs::read(path).ok().as_deref() != Some(bytes) {
        std::fs::write(path, bytes).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }
}

/// Prints past the test harness's capture, so the timing shows in every run's log.
fn say(msg: &str) {
    let _ = writeln!(std::io::stderr(), "{msg}");
}

/// Builds `virt-apiserver` against `doc` in its own target dir and returns the binary.
fn build_against(doc: &Path, target_dir: &Path) -> PathBuf {
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
    // The core group: the template's paths less its status, its discovery and v3 paths.
    let core = template - count("/apis/kubevirt.io/v1/", "/virtualmachines/{name}/status") + 2;
    // The Namespace kind: the cluster-scoped clone's five paths, and `finalize`.
    let namespaces = count("/apis/clone.kubevirt.io/v1alpha1/", "/virtualmachineclones") + 1;
    // The VirtualMachine's status under subresources.kubevirt.io, and that group's two
    // discovery paths.
    let cross = 3;
    let added =
        count("/apis/clone.kubevirt.io/v1alpha1/", "") + template + core + namespaces + cross;
    assert_eq!(paths.len(), original["paths"].as_object().unwrap().len() + added - 1);
    assert!(paths.contains_key("/api/v1/namespaces/{namespace}/configmaps/{name}"));
    assert!(paths.contains_key("/api/v1/watch/configmaps"));
    assert!(paths.contains_key("/openapi/v3/api/{version}"));
    assert!(paths.contains_key("/api/v1/namespaces/{name}/status"));
    assert_eq!(
        doc["definitions"]["io.k8s.api.core.v1.Namespace"]["x-virt-resource"]["namespaces"],
        true
    );
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

    // Namespaces, as kube keeps them: the system ones exist from the start, the others are made
    // before use (kubectl sends a Namespace as protobuf), and nothing lives in one that is
    // missing or terminating.
    let kubectl = crate::common::Kubectl::new(&server);
    kubectl.ok(&["create", "namespace", "pools"]);
    let listed = kubectl.ok(&["get", "ns", "--no-headers"]);
    let namespaces: Vec<Vec<&str>> =
        listed.lines().map(|l| l.split_whitespace().collect()).collect();
    let names_and_status: Vec<(&str, &str)> = namespaces.iter().map(|r| (r[0], r[1])).collect();
    assert_eq!(
        names_and_status,
        [
            ("default", "Active"),
            ("kube-node-lease", "Active"),
            ("kube-public", "Active"),
            ("kube-system", "Active"),
            ("pools", "Active")
        ],
        "{listed}"
    );
    let pools = server.get("/api/v1/namespaces/pools").json();
    assert_eq!(pools["spec"]["finalizers"], json!(["kubernetes"]), "{pools}");
    assert_eq!(pools["metadata"]["labels"]["kubernetes.io/metadata.name"], "pools", "{pools}");
    let cm = |ns: &str| {
        let body = json!({"apiVersion": "v1", "kind": CORE_KIND, "metadata": {"name": "c"}});
        server.post(&format!("/api/v1/namespaces/{ns}/{CORE_PLURAL}"), &body)
    };
    let missing = cm("nowhere");
    assert_eq!(missing.status, 404, "{}", missing.text());
    assert_eq!(missing.json()["message"], "namespaces \"nowhere\" not found");
    assert_eq!(missing.json()["details"], json!({"name": "nowhere", "kind": "namespaces"}));
    kubectl.ok(&["create", "namespace", "closing"]);
    let closing = server.request(
        "PATCH",
        "/api/v1/namespaces/closing/status",
        &[],
        Some(("application/merge-patch+json", br#"{"status":{"phase":"Terminating"}}"#)),
    );
    assert_eq!(closing.status, 200, "{}", closing.text());
    let refused = cm("closing");
    assert_eq!(refused.status, 403, "{}", refused.text());
    let refused = refused.json();
    assert_eq!(
        refused["message"],
        "configmaps \"c\" is forbidden: unable to create new content in namespace closing because it is being terminated"
    );
    assert_eq!(
        refused["details"]["causes"],
        json!([{"reason": "NamespaceTerminating", "message": "namespace closing is being terminated",
                "field": "metadata.namespace"}])
    );
    let protected = server.delete("/api/v1/namespaces/default");
    assert_eq!(protected.status, 403, "{}", protected.text());
    assert_eq!(
        protected.json()["message"],
        "namespaces \"default\" is forbidden: this namespace may not be deleted"
    );

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

    // The core group: `/api` lists its version, `/api/v1` its kind, `/apis` leaves it out, and
    // its objects live under `/api/v1` in storage of their own.
    let api = server.get("/api").json();
    assert_eq!(api["versions"], json!(["v1"]), "{api}");
    let core = server.get("/api/v1");
    assert_eq!(core.status, 200, "{}", core.text());
    let core = core.json();
    assert_eq!(core["groupVersion"], "v1", "{core}");
    let cm = discovery_resource(&core, CORE_PLURAL).unwrap_or_else(|| panic!("{core}"));
    assert_eq!((cm["kind"].as_str(), cm["namespaced"].as_bool()), (Some(CORE_KIND), Some(true)));
    assert_eq!(cm["shortNames"], json!(["cm"]));
    let all = server.get("/apis").json();
    assert!(all["groups"].as_array().unwrap().iter().all(|g| g["name"] != ""), "{all}");
    let aggregated = server.request(
        "GET",
        "/api",
        &[("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")],
        None,
    );
    assert_eq!(aggregated.status, 200, "{}", aggregated.text());
    let aggregated = aggregated.json();
    let items = aggregated["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{aggregated}");
    assert!(items[0]["metadata"].get("name").is_none(), "the core group has no name");
    assert_eq!(items[0]["versions"][0]["resources"][0]["resource"], CORE_PLURAL);
    let index = server.get("/openapi/v3").json();
    assert!(index["paths"].get("api/v1").is_some(), "{index}");
    let v3 = server.get("/openapi/v3/api/v1");
    assert_eq!(v3.status, 200, "{}", v3.text());
    assert!(v3.json()["paths"].get("/api/v1/namespaces/{namespace}/configmaps").is_some());
    let cms = format!("/api/v1/namespaces/pools/{CORE_PLURAL}");
    let body = json!({"apiVersion": "v1", "kind": CORE_KIND, "metadata": {"name": "settings"},
                      "data": {"color": "blue"}});
    let created = server.post(&cms, &body);
    assert_eq!(created.status, 201, "{}", created.text());
    assert_eq!(created.json()["apiVersion"], "v1");
    let got = server.get(&format!("{cms}/settings"));
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(got.json()["data"], body["data"]);
    assert_eq!(names(&server.get(&format!("/api/v1/{CORE_PLURAL}")).json()), ["settings"]);
    let listed = kubectl.ok(&["get", "cm", "-n", "pools", "-o", "name"]);
    assert_eq!(listed.trim(), "configmap/settings", "{listed}");
    // kubectl's typed client sends built-in kinds as protobuf (k8s\0 + runtime.Unknown).
    kubectl.ok(&[
        "create",
        "configmap",
        "from-kubectl",
        "-n",
        "pools",
        "--from-literal=color=green",
        "--from-literal=size=3",
    ]);
    let made = server.get(&format!("{cms}/from-kubectl")).json();
    assert_eq!(made["data"], json!({"color": "green", "size": "3"}), "{made}");
    assert_eq!(made["metadata"]["namespace"], "pools");
    assert!(made["metadata"]["uid"].is_string(), "{made}");
    let table = kubectl.ok(&["get", "cm", "-n", "pools"]);
    let rows: Vec<Vec<&str>> = table.lines().map(|l| l.split_whitespace().collect()).collect();
    assert_eq!(rows[0], ["NAME", "DATA", "AGE"], "{table}");
    assert!(rows.iter().any(|r| r[..2] == ["from-kubectl", "2"]), "{table}");
    assert!(rows.iter().any(|r| r[..2] == ["settings", "1"]), "{table}");
    let resources = kubectl.ok(&["api-resources", "--api-group="]);
    assert!(
        resources.lines().any(|l| l.split_whitespace().collect::<Vec<_>>()
            == ["configmaps", "cm", "v1", "true", CORE_KIND]),
        "{resources}"
    );
    let gone = server.delete(&format!("{cms}/settings"));
    assert_eq!(gone.status, 200, "{}", gone.text());

    // Deleting a namespace: it terminates, its content is deleted (finalizers honoured), its
    // conditions say what holds it, and it goes once nothing does.
    kubectl.ok(&["create", "namespace", "doomed"]);
    let doomed_cms = format!("/api/v1/namespaces/doomed/{CORE_PLURAL}");
    for (name, finalizers) in [("loose", json!([])), ("held", json!(["example.com/hold"]))] {
        let body = json!({"apiVersion": "v1", "kind": CORE_KIND,
                          "metadata": {"name": name, "finalizers": finalizers}});
        let made = server.post(&doomed_cms, &body);
        assert_eq!(made.status, 201, "{}", made.text());
    }
    let first = server.delete("/api/v1/namespaces/doomed");
    assert_eq!(first.status, 200, "{}", first.text());
    assert_eq!(first.json()["status"]["phase"], "Terminating", "{}", first.text());
    let until = |what: &str, done: &dyn Fn() -> bool| {
        for _ in 0..200 {
            if done() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("{what} did not happen within 10 s");
    };
    until("the loose ConfigMap's deletion", &|| {
        server.get(&format!("{doomed_cms}/loose")).status == 404
    });
    let held_message = "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances";
    until("the conditions", &|| {
        let ns = server.get("/api/v1/namespaces/doomed").json();
        ns["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter().any(|c| {
                c["type"] == "NamespaceFinalizersRemaining" && c["message"] == held_message
            })
        })
    });
    let again = server.delete("/api/v1/namespaces/doomed");
    assert_eq!(again.status, 409, "{}", again.text());
    assert_eq!(
        again.json()["message"],
        "Operation cannot be fulfilled on namespaces \"doomed\": The system is ensuring all content is removed from this namespace.  Upon completion, this namespace will automatically be purged by the system."
    );
    let late = json!({"apiVersion": "v1", "kind": CORE_KIND, "metadata": {"name": "late"}});
    assert_eq!(server.post(&doomed_cms, &late).status, 403, "no new content while terminating");
    let release = server.request(
        "PATCH",
        &format!("{doomed_cms}/held"),
        &[],
        Some(("application/merge-patch+json", br#"{"metadata":{"finalizers":null}}"#)),
    );
    assert_eq!(release.status, 200, "{}", release.text());
    until("the namespace's removal", &|| server.get("/api/v1/namespaces/doomed").status == 404);
    // `finalize` (update only) ends a namespace whatever it holds, as kube's does.
    kubectl.ok(&["create", "namespace", "stuck"]);
    let held = json!({"apiVersion": "v1", "kind": CORE_KIND,
                      "metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    let stuck_cms = format!("/api/v1/namespaces/stuck/{CORE_PLURAL}");
    assert_eq!(server.post(&stuck_cms, &held).status, 201);
    assert_eq!(server.delete("/api/v1/namespaces/stuck").status, 200);
    until("the conditions", &|| {
        let ns = server.get("/api/v1/namespaces/stuck").json();
        ns["status"]["conditions"].as_array().is_some_and(|c| !c.is_empty())
    });
    let mut ns = server.get("/api/v1/namespaces/stuck").json();
    ns["spec"]["finalizers"] = json!([]);
    let finalized = server.put("/api/v1/namespaces/stuck/finalize", &ns);
    assert_eq!(finalized.status, 200, "{}", finalized.text());
    assert_eq!(server.get("/api/v1/namespaces/stuck").status, 404);
    let get_finalize = server.get("/api/v1/namespaces/stuck/finalize");
    assert_eq!(get_finalize.status, 405, "{}", get_finalize.text());
    let v1 = server.get("/api/v1").json();
    let fin = discovery_resource(&v1, "namespaces/finalize").unwrap_or_else(|| panic!("{v1}"));
    assert_eq!(fin["verbs"], json!(["update"]));
    // kubectl waits for the namespace to go, which it does promptly when nothing holds it.
    kubectl.ok(&["create", "namespace", "quick"]);
    kubectl.ok(&["create", "configmap", "inside", "-n", "quick", "--from-literal=a=b"]);
    kubectl.ok(&["delete", "namespace", "quick", "--timeout=20s"]);
    assert_eq!(server.get("/api/v1/namespaces/quick").status, 404);

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

    // `--implicit-namespaces`: any namespace holds objects, and none is made or checked.
    drop(server);
    let implicit = TestServer::start_with(ServerOptions {
        binary: Some(bin.clone()),
        args: vec!["--implicit-namespaces".into()],
        ..Default::default()
    });
    let body = json!({"apiVersion": "v1", "kind": CORE_KIND, "metadata": {"name": "c"}});
    let made = implicit.post(&format!("/api/v1/namespaces/nowhere/{CORE_PLURAL}"), &body);
    assert_eq!(made.status, 201, "{}", made.text());
    assert_eq!(names(&implicit.get("/api/v1/namespaces").json()), Vec::<String>::new());

    // And the binary built from the checked-in document serves none of the edits.
    let plain = TestServer::start();
    assert_eq!(plain.get(&format!("{coll}/web")).status, 404);
    assert_eq!(plain.get(&format!("/apis/{NEW_VERSION_GROUP}/{NEW_VERSION}")).status, 404);
    assert_eq!(plain.get(REMOVED_PATH).status, 200);
    assert_eq!(plain.get("/api").json()["versions"], json!([]));
    assert_eq!(plain.get("/api/v1").status, 404);

    // Upgrading: a database the checked-in document's binary wrote, with objects in namespaces
    // no Namespace names, opens under the document that serves Namespaces with one for each.
    let vm = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
                    "metadata": {"name": "old"}, "spec": {}});
    let made = plain.post("/apis/kubevirt.io/v1/namespaces/legacy/virtualmachines", &vm);
    assert_eq!(made.status, 201, "{}", made.text());
    let (db, dir) = plain.kill();
    let upgraded = TestServer::start_with(ServerOptions {
        db: Some(db),
        binary: Some(bin),
        ..Default::default()
    });
    let legacy = upgraded.get("/api/v1/namespaces/legacy");
    assert_eq!(legacy.status, 200, "{}", legacy.text());
    assert_eq!(legacy.json()["status"]["phase"], "Active");
    let old = upgraded.get("/apis/kubevirt.io/v1/namespaces/legacy/virtualmachines/old");
    assert_eq!(old.status, 200, "{}", old.text());
    assert_eq!(upgraded.get("/api/v1/namespaces/default").status, 200);
    drop(upgraded);
    drop(dir);
}
