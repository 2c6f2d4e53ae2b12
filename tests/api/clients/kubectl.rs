//! kubectl 1.32 as the first real client: discovery, apply, create, get, delete against the real
//! binary, each test with its own server, kubeconfig and discovery cache; the server's Tables give
//! `get` and `get -w` the printer columns.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use virt_apiserver::{GROUPS, RESOURCES};

use crate::common::{eventually, repo_root, Kubectl, TestServer};

fn manifest_path(name: &str) -> PathBuf {
    repo_root().join("tests/manifests").join(name)
}

fn manifest(name: &str) -> Value {
    let text = std::fs::read_to_string(manifest_path(name)).expect("read manifest");
    serde_yaml::from_str(&text).expect("manifest is YAML")
}

fn p(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("kubectl printed no JSON ({e}):\n{text}"))
}

fn yaml(text: &str) -> Value {
    serde_yaml::from_str(text).unwrap_or_else(|e| panic!("kubectl printed no YAML ({e}):\n{text}"))
}

/// Splits a kubectl table (tabwriter output) into rows of named cells, by the header's column
/// offsets, so that empty cells (no short names) stay in their column.
fn table(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = lines.next().unwrap_or_else(|| panic!("no table header in:\n{text}"));
    let mut starts = Vec::new();
    let mut prev = ' ';
    for (i, c) in header.char_indices() {
        if c != ' ' && prev == ' ' {
            starts.push(i);
        }
        prev = c;
    }
    let names: Vec<String> = starts
        .iter()
        .enumerate()
        .map(|(k, &s)| {
            let end = starts.get(k + 1).copied().unwrap_or(header.len());
            header[s..end].trim().to_string()
        })
        .collect();
    lines
        .map(|line| {
            starts
                .iter()
                .enumerate()
                .map(|(k, &s)| {
                    let end = starts.get(k + 1).copied().unwrap_or(line.len()).min(line.len());
                    let cell = if s < line.len() { line[s..end].trim() } else { "" };
                    (names[k].clone(), cell.to_string())
                })
                .collect()
        })
        .collect()
}

#[test]
fn kubectl_is_installed_and_picks_a_client() {
    let server = TestServer::start();
    let k = Kubectl::new(&server);
    let out = k.ok(&["version", "-o", "json"]);
    let v = json(&out);
    assert_eq!(v["serverVersion"]["major"], "1", "{out}");
    assert_eq!(v["serverVersion"]["minor"], "32", "{out}");
    let client = v["clientVersion"]["gitVersion"].as_str().unwrap_or_default();
    assert!(client.starts_with("v1.32."), "the dispatcher picked kubectl {client}:\n{out}");
}

#[test]
fn api_resources_lists_every_kind_with_short_names() {
    assert!(!RESOURCES.is_empty(), "the generated RESOURCES table is empty");
    let server = TestServer::start();
    let k = Kubectl::new(&server);
    // A complete discovery: kubectl exits 0 and says nothing on stderr (a group version with no
    // resources, for one, makes it print "unable to retrieve the complete list of server APIs").
    let run = k.run(&["api-resources"]);
    assert!(run.ok() && run.stderr().is_empty(), "{}", run.describe());
    let out = run.stdout();
    let rows = table(&out);
    // kubectl lists each kind once, in its group's preferred version.
    let mut expected = BTreeMap::new();
    for r in RESOURCES.iter().filter(|r| r.version == r.storage_version) {
        let key = (r.plural.to_string(), r.api_version());
        let value = (r.short_names.join(","), r.namespaced.to_string(), r.kind.to_string());
        expected.insert(key, value);
    }
    let mut actual = BTreeMap::new();
    for row in &rows {
        let key = (row["NAME"].clone(), row["APIVERSION"].clone());
        let value = (row["SHORTNAMES"].clone(), row["NAMESPACED"].clone(), row["KIND"].clone());
        assert!(actual.insert(key.clone(), value).is_none(), "listed twice: {key:?}\n{out}");
    }
    assert_eq!(actual, expected, "kubectl api-resources:\n{out}");

    // The token request kind is create-only, so it is not listable.
    let listable = table(&k.ok(&["api-resources", "--verbs=list"]));
    let listable: BTreeSet<_> =
        listable.iter().map(|r| (r["NAME"].clone(), r["APIVERSION"].clone())).collect();
    for r in RESOURCES.iter().filter(|r| r.version == r.storage_version) {
        let key = (r.plural.to_string(), r.api_version());
        assert_eq!(listable.contains(&key), r.has_verb("list"), "{key:?} in --verbs=list");
    }
}

#[test]
fn api_versions_lists_every_group_version() {
    assert!(!GROUPS.is_empty(), "the generated GROUPS table is empty");
    let server = TestServer::start();
    let k = Kubectl::new(&server);
    let run = k.run(&["api-versions"]);
    assert!(run.ok() && run.stderr().is_empty(), "{}", run.describe());
    let out = run.stdout();
    let actual: BTreeSet<&str> = out.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    // Every group version; the core group's versions (`/api` lists them) have no group name.
    let core = server.get("/api").json();
    assert_eq!(core["versions"], serde_json::json!(["v1"]), "{core}");
    let expected: Vec<String> = GROUPS
        .iter()
        .flat_map(|g| {
            g.versions.iter().map(|v| match g.name {
                "" => v.to_string(),
                group => format!("{group}/{v}"),
            })
        })
        .collect();
    let expected: BTreeSet<&str> = expected.iter().map(String::as_str).collect();
    assert_eq!(actual, expected, "kubectl api-versions:\n{out}");
}

#[test]
fn apply_get_and_delete_a_virtual_machine() {
    let server = TestServer::start();
    let k = Kubectl::new(&server);
    let vm = manifest_path("vm.yaml");
    let want = manifest("vm.yaml");
    k.ok(&["create", "namespace", "kubectl-apply"]);

    let out = k.ok(&["apply", "-n", "kubectl-apply", "-f", p(&vm)]);
    assert_eq!(out.trim(), "virtualmachine.kubevirt.io/fedora-vm created");

    let got = yaml(&k.ok(&["get", "vm", "fedora-vm", "-n", "kubectl-apply", "-o", "yaml"]));
    assert_eq!(got["apiVersion"], "kubevirt.io/v1");
    assert_eq!(got["kind"], "VirtualMachine");
    assert_eq!(got["metadata"]["name"], "fedora-vm");
    assert_eq!(got["metadata"]["namespace"], "kubectl-apply");
    assert!(got["metadata"]["uid"].as_str().is_some_and(|u| u.len() == 36), "uid: {got}");
    let rv = got["metadata"]["resourceVersion"].as_str().expect("resourceVersion").to_string();
    assert!(rv.parse::<u64>().is_ok_and(|n| n > 0), "resourceVersion {rv}");
    assert!(got["metadata"]["creationTimestamp"].is_string(), "creationTimestamp: {got}");
    assert_eq!(got["metadata"]["labels"], want["metadata"]["labels"]);
    assert_eq!(got["spec"], want["spec"], "spec preserved");
    let last = got["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .expect("kubectl apply records the last applied configuration");
    assert_eq!(json(last)["spec"], want["spec"]);

    // The same manifest again changes nothing.
    let out = k.ok(&["apply", "-n", "kubectl-apply", "-f", p(&vm)]);
    assert_eq!(out.trim(), "virtualmachine.kubevirt.io/fedora-vm unchanged");
    let again = yaml(&k.ok(&["get", "vm", "fedora-vm", "-n", "kubectl-apply", "-o", "yaml"]));
    assert_eq!(again["metadata"]["resourceVersion"], got["metadata"]["resourceVersion"]);

    // A changed manifest is a three-way merge patch: a new value, and a label dropped from the
    // manifest is removed from the object.
    let mut changed = want.clone();
    changed["spec"]["runStrategy"] = "Halted".into();
    changed["metadata"]["labels"].as_object_mut().expect("labels").remove("kubevirt.io/os");
    let changed_path = k.file("vm-halted.yaml", &serde_yaml::to_string(&changed).expect("yaml"));
    let out = k.ok(&["apply", "-n", "kubectl-apply", "-f", p(&changed_path)]);
    assert_eq!(out.trim(), "virtualmachine.kubevirt.io/fedora-vm configured");
    let patched = json(&k.ok(&["get", "vms", "-n", "kubectl-apply", "fedora-vm", "-o", "json"]));
    assert_eq!(patched["spec"]["runStrategy"], "Halted");
    assert_eq!(patched["metadata"]["labels"], changed["metadata"]["labels"]);
    assert_eq!(patched["metadata"]["uid"], got["metadata"]["uid"]);
    let new_rv: u64 = patched["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    assert!(new_rv > rv.parse().unwrap());

    // Delete (kubectl waits for the object to go), then it is not found: kubectl prints the
    // server's own message.
    let out = k.ok(&["delete", "vm", "fedora-vm", "-n", "kubectl-apply"]);
    assert_eq!(out.trim(), "virtualmachine.kubevirt.io \"fedora-vm\" deleted");
    let err = k.fails(&["get", "vm", "fedora-vm", "-n", "kubectl-apply"]);
    assert_eq!(
        err.trim(),
        "Error from server (NotFound): virtualmachines.kubevirt.io \"fedora-vm\" not found"
    );
    let err = k.fails(&["delete", "vm", "fedora-vm", "-n", "kubectl-apply"]);
    assert!(err.contains("(NotFound)"), "{err}");
    k.ok(&["apply", "-n", "default", "-f", p(&vm)]);
    k.ok(&["delete", "-n", "default", "-f", p(&vm)]);
    let err = k.fails(&["get", "vm", "fedora-vm"]);
    assert_eq!(
        err.trim(),
        "Error from server (NotFound): virtualmachines.kubevirt.io \"fedora-vm\" not found"
    );
}

#[test]
fn get_lists_across_and_within_namespaces() {
    let server = TestServer::start();
    let k = Kubectl::new(&server);
    let vm = manifest_path("vm.yaml");
    for ns in ["team-a", "team-b"] {
        k.ok(&["create", "namespace", ns]);
        k.ok(&["apply", "-n", ns, "-f", p(&vm)]);
    }
    let mut second = manifest("vm.yaml");
    second["metadata"]["name"] = "fedora-vm-2".into();
    let second = k.file("vm-2.yaml", &serde_yaml::to_string(&second).expect("yaml"));
    k.ok(&["apply", "-n", "team-b", "-f", p(&second)]);

    // All namespaces: a NAMESPACE column before NAME.
    let out = k.ok(&["get", "vm", "-A"]);
    let rows = table(&out);
    let seen: BTreeSet<(String, String)> =
        rows.iter().map(|r| (r["NAMESPACE"].clone(), r["NAME"].clone())).collect();
    let expected: BTreeSet<(String, String)> =
        [("team-a", "fedora-vm"), ("team-b", "fedora-vm"), ("team-b", "fedora-vm-2")]
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
    assert_eq!(seen, expected, "kubectl get vm -A:\n{out}");
    assert!(rows.iter().all(|r| r.contains_key("AGE")), "an AGE column:\n{out}");

    // One namespace, as JSON: kubectl wraps the items in a List.
    let list = json(&k.ok(&["get", "vms", "-n", "team-b", "-o", "json"]));
    assert_eq!(list["kind"], "List");
    let items = list["items"].as_array().expect("items");
    let names: Vec<&str> = items.iter().map(|i| i["metadata"]["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["fedora-vm", "fedora-vm-2"]);
    for item in items {
        assert_eq!(item["apiVersion"], "kubevirt.io/v1");
        assert_eq!(item["kind"], "VirtualMachine");
        assert_eq!(item["metadata"]["namespace"], "team-b");
    }

    // Label selectors and other spellings of the resource.
    let out = k.ok(&["get", "virtualmachines.kubevirt.io", "-n", "team-a", "-l", "app=fedora"]);
    assert!(out.lines().any(|l| l.starts_with("fedora-vm ")), "{out}");
    let out = k.ok(&["get", "vm", "-n", "team-a", "-l", "app=other"]);
    assert!(out.trim().is_empty(), "no match prints nothing on stdout: {out}");
    let names = k.ok(&["get", "vm", "-n", "team-b", "-o", "name"]);
    assert_eq!(
        names.lines().collect::<Vec<_>>(),
        ["virtualmachine.kubevirt.io/fedora-vm", "virtualmachine.kubevirt.io/fedora-vm-2"]
    );
    let out = k.ok(&["get", "vm", "-n", "team-a", "--show-labels"]);
    let rows = table(&out);
    assert_eq!(rows[0]["LABELS"], "app=fedora,kubevirt.io/os=fedora", "{out}");

    // The `all` category (discovery `categories`) reaches the virtual machines.
    let names = k.ok(&["get", "all", "-n", "team-b", "-o", "name"]);
    assert_eq!(
        names.lines().collect::<Vec<_>>(),
        ["virtualmachine.kubevirt.io/fedora-vm", "virtualmachine.kubevirt.io/fedora-vm-2"],
        "kubectl get all"
    );
}

#[test]
fn create_a_data_volume() {
    let server = TestServer::start();
    let k = Kubectl::new(&server);
    let dv = manifest_path("dv.yaml");
    let want = manifest("dv.yaml");
    k.ok(&["create", "namespace", "storage"]);

    let out = k.ok(&["create", "-n", "storage", "-f", p(&dv)]);
    assert_eq!(out.trim(), "datavolume.cdi.kubevirt.io/fedora-root created");

    let out = k.ok(&["get", "dv", "-n", "storage"]);
    let rows = table(&out);
    assert_eq!(rows.len(), 1, "{out}");
    assert_eq!(rows[0]["NAME"], "fedora-root", "{out}");

    let got = json(&k.ok(&["get", "datavolume", "fedora-root", "-n", "storage", "-o", "json"]));
    assert_eq!(got["apiVersion"], "cdi.kubevirt.io/v1beta1");
    assert_eq!(got["spec"], want["spec"]);
    let url = k.ok(&[
        "get",
        "dvs",
        "fedora-root",
        "-n",
        "storage",
        "-o",
        "jsonpath={.spec.source.http.url}",
    ]);
    assert_eq!(url, want["spec"]["source"]["http"]["url"].as_str().unwrap());

    // create never updates.
    let err = k.fails(&["create", "-n", "storage", "-f", p(&dv)]);
    assert!(
        err.contains("(AlreadyExists)")
            && err.contains("datavolumes.cdi.kubevirt.io \"fedora-root\" already exists"),
        "{err}"
    );

    k.ok(&["delete", "-n", "storage", "-f", p(&dv)]);
    let out = k.run(&["get", "dv", "-n", "storage"]);
    assert!(out.ok(), "{}", out.describe());
    assert!(out.stdout().trim().is_empty(), "{}", out.describe());
    assert!(
        out.stderr().contains("No resources found in storage namespace."),
        "{}",
        out.describe()
    );
}

#[test]
fn apply_an_instancetype() {
    let server = TestServer::start();
    let k = Kubectl::new(&server);
    let it = manifest_path("instancetype.yaml");
    let want = manifest("instancetype.yaml");
    k.ok(&["create", "namespace", "types"]);

    let out = k.ok(&["apply", "-n", "types", "-f", p(&it)]);
    assert_eq!(out.trim(), "virtualmachineinstancetype.instancetype.kubevirt.io/u1-medium created");
    let out = k.ok(&["apply", "-n", "types", "-f", p(&it)]);
    assert_eq!(
        out.trim(),
        "virtualmachineinstancetype.instancetype.kubevirt.io/u1-medium unchanged"
    );

    let got = json(&k.ok(&["get", "vminstancetype", "u1-medium", "-n", "types", "-o", "json"]));
    assert_eq!(got["apiVersion"], "instancetype.kubevirt.io/v1alpha2");
    assert_eq!(got["kind"], "VirtualMachineInstancetype");
    assert_eq!(got["spec"], want["spec"]);
    assert_eq!(got["metadata"]["labels"], want["metadata"]["labels"]);

    // A cluster-scoped instancetype of the same group is a different kind, and empty.
    let out = k.run(&["get", "virtualmachineclusterinstancetypes"]);
    assert!(out.ok(), "{}", out.describe());
    assert!(out.stderr().contains("No resources found"), "{}", out.describe());

    k.ok(&["delete", "-n", "types", "-f", p(&it)]);
    let err = k.fails(&["get", "vminstancetype", "u1-medium", "-n", "types"]);
    assert!(err.contains("(NotFound)"), "{err}");
}

#[test]
fn label_annotate_patch_and_replace() {
    let server = TestServer::start();
    let k = Kubectl::new(&server);
    let vm = manifest_path("vm.yaml");
    let vm = p(&vm);
    // Every command in one namespace.
    let ok = |args: &[&str]| k.ok(&[args, &["-n", "edits"]].concat());
    let fails = |args: &[&str]| k.fails(&[args, &["-n", "edits"]].concat());
    k.ok(&["create", "namespace", "edits"]);
    ok(&["create", "-f", vm]);

    // label and annotate send merge patches for custom resources.
    let out = ok(&["label", "vm", "fedora-vm", "env=prod"]);
    assert_eq!(out.trim(), "virtualmachine.kubevirt.io/fedora-vm labeled");
    let out = ok(&["annotate", "vm", "fedora-vm", "owner=team-a"]);
    assert_eq!(out.trim(), "virtualmachine.kubevirt.io/fedora-vm annotated");
    let got = json(&ok(&["get", "vm", "fedora-vm", "-o", "json"]));
    assert_eq!(got["metadata"]["labels"]["env"], "prod");
    assert_eq!(got["metadata"]["labels"]["app"], "fedora");
    assert_eq!(got["metadata"]["annotations"]["owner"], "team-a");
    let out = ok(&["label", "vm", "fedora-vm", "env-"]);
    assert_eq!(out.trim(), "virtualmachine.kubevirt.io/fedora-vm unlabeled");

    // Merge and JSON patches.
    let out = ok(&[
        "patch",
        "vm",
        "fedora-vm",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"runStrategy":"Manual"}}"#,
    ]);
    assert_eq!(out.trim(), "virtualmachine.kubevirt.io/fedora-vm patched");
    let out = ok(&[
        "patch",
        "vm",
        "fedora-vm",
        "--type",
        "json",
        "-p",
        r#"[{"op":"replace","path":"/spec/template/spec/domain/cpu/cores","value":4}]"#,
    ]);
    assert_eq!(out.trim(), "virtualmachine.kubevirt.io/fedora-vm patched");
    let got = json(&ok(&["get", "vm", "fedora-vm", "-o", "json"]));
    assert_eq!(got["spec"]["runStrategy"], "Manual");
    assert_eq!(got["spec"]["template"]["spec"]["domain"]["cpu"]["cores"], 4);
    assert!(got["metadata"]["labels"].get("env").is_none(), "{got}");

    // kubectl patch's default type is strategic merge, which custom resources refuse (B.3).
    let err = fails(&["patch", "vm", "fedora-vm", "-p", r#"{"spec":{"runStrategy":"Always"}}"#]);
    assert!(
        err.contains("application/strategic-merge-patch+json is not supported by kubevirt.io/v1")
            && err.contains("accepted media types include: application/json-patch+json"),
        "{err}"
    );

    // replace PUTs the manifest; the server keeps identity and bumps the resourceVersion.
    let out = ok(&["replace", "-f", vm]);
    assert_eq!(out.trim(), "virtualmachine.kubevirt.io/fedora-vm replaced");
    let replaced = json(&ok(&["get", "vm", "fedora-vm", "-o", "json"]));
    assert_eq!(replaced["spec"], manifest("vm.yaml")["spec"]);
    assert_eq!(replaced["metadata"]["uid"], got["metadata"]["uid"]);
    assert!(replaced["metadata"]["annotations"].get("owner").is_none(), "{replaced}");
}

#[test]
fn explain_reads_the_openapi_document() {
    let server = TestServer::start();
    let k = Kubectl::new(&server);
    let field = |out: &str, name: &str| {
        let line = out.lines().find(|l| l.starts_with(name));
        line.map(|l| l[name.len()..].trim().to_string()).unwrap_or_default()
    };
    let out = k.ok(&["explain", "vm"]);
    assert_eq!(field(&out, "GROUP:"), "kubevirt.io", "{out}");
    assert_eq!(field(&out, "KIND:"), "VirtualMachine", "{out}");
    assert_eq!(field(&out, "VERSION:"), "v1", "{out}");
    assert!(out.contains("FIELDS:") && out.contains("metadata\t<ObjectMeta>"), "{out}");
    // Another group, a non-preferred version, and a field.
    let out = k.ok(&["explain", "datavolumes.spec", "--api-version", "cdi.kubevirt.io/v1alpha1"]);
    assert_eq!(field(&out, "GROUP:"), "cdi.kubevirt.io", "{out}");
    assert_eq!(field(&out, "KIND:"), "DataVolume", "{out}");
    assert_eq!(field(&out, "VERSION:"), "v1alpha1", "{out}");
    assert_eq!(field(&out, "FIELD:"), "spec <Object>", "{out}");
}

#[test]
fn edit_through_kube_editor() {
    let server = TestServer::start();
    let k = Kubectl::new(&server);
    let vm = manifest_path("vm.yaml");
    k.ok(&["apply", "-f", p(&vm)]);
    // kubectl runs the editor through a shell when the variable holds arguments.
    let out = k
        .command(&["edit", "vm", "fedora-vm"])
        .env("KUBE_EDITOR", "sed -i -e 's/runStrategy: Always/runStrategy: Halted/'")
        .output()
        .expect("run kubectl edit");
    assert!(out.status.success(), "kubectl edit: {}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("edited"));
    let live =
        server.get("/apis/kubevirt.io/v1/namespaces/default/virtualmachines/fedora-vm").json();
    assert_eq!(live["spec"]["runStrategy"], "Halted");
    assert_eq!(live["metadata"]["generation"], 2);
    let managers: Vec<&str> = live["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["manager"].as_str())
        .collect();
    assert!(managers.contains(&"kubectl-edit"), "{managers:?}");
}

/// `kubectl delete --cascade=…` on a VirtualMachine that owns a VirtualMachineInstance.
#[test]
fn delete_cascades_to_owned_instances() {
    let server = TestServer::start();
    let k = Kubectl::new(&server);
    let vms = "/apis/kubevirt.io/v1/namespaces/default/virtualmachines";
    let vmis = "/apis/kubevirt.io/v1/namespaces/default/virtualmachineinstances";
    let owned = |name: &str| {
        let vm = server.post(
            vms,
            &serde_json::json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": name}}),
        );
        assert_eq!(vm.status, 201, "{}", vm.text());
        let uid = vm.json()["metadata"]["uid"].clone();
        let vmi = server.post(
            vmis,
            &serde_json::json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
                "metadata": {"name": name, "ownerReferences": [{"apiVersion": "kubevirt.io/v1",
                "kind": "VirtualMachine", "name": name, "uid": uid, "controller": true,
                "blockOwnerDeletion": true}]}}),
        );
        assert_eq!(vmi.status, 201, "{}", vmi.text());
    };
    let gone = |path: String| {
        crate::common::eventually(std::time::Duration::from_secs(10), || {
            (server.get(&path).status == 404).then_some(())
        })
    };
    for cascade in ["foreground", "background", "orphan"] {
        owned(cascade);
        // kubectl waits for the object to go before it returns.
        let out =
            k.ok(&["delete", "vm", cascade, &format!("--cascade={cascade}"), "--timeout=30s"]);
        assert!(out.contains("deleted"), "{out}");
        assert_eq!(server.get(&format!("{vms}/{cascade}")).status, 404, "{cascade}");
        if cascade == "orphan" {
            let vmi = server.get(&format!("{vmis}/{cascade}"));
            assert_eq!(vmi.status, 200);
            assert!(vmi.json()["metadata"].get("ownerReferences").is_none(), "{}", vmi.text());
        } else {
            gone(format!("{vmis}/{cascade}"));
        }
    }
}

/// Sets a VM's printable status and Ready condition through `/status`, as virt-controller would.
fn set_vm_status(server: &TestServer, ns: &str, name: &str, printable: &str, ready: &str) {
    let res = crate::common::preferred("kubevirt.io", "virtualmachines");
    let status = serde_json::json!({"status": {"printableStatus": printable,
        "conditions": [{"type": "Ready", "status": ready}]}});
    let path = format!("{}/status", crate::common::item_path(res, ns, name));
    let r = server.patch(&path, "application/merge-patch+json", &status);
    assert_eq!(r.status, 200, "{}", r.text());
}

/// The column names of a kubectl table's header line.
fn header(text: &str) -> Vec<&str> {
    text.lines().next().unwrap_or("").split_whitespace().collect()
}

#[test]
fn get_prints_the_printer_columns() {
    let server = TestServer::start();
    let k = Kubectl::in_namespace(&server, "columns");
    k.ok(&["create", "namespace", "columns"]);
    k.ok(&["apply", "-f", p(&manifest_path("vm.yaml"))]);
    set_vm_status(&server, "columns", "fedora-vm", "Running", "True");

    // The server's Table (B.8): Name, then the document's columns for the kind.
    let out = k.ok(&["get", "vm"]);
    assert_eq!(header(&out), ["NAME", "AGE", "STATUS", "READY"], "{out}");
    let rows = table(&out);
    assert_eq!(rows.len(), 1, "{out}");
    assert_eq!(
        (rows[0]["NAME"].as_str(), rows[0]["STATUS"].as_str(), rows[0]["READY"].as_str()),
        ("fedora-vm", "Running", "True"),
        "{out}"
    );
    let age = &rows[0]["AGE"];
    assert!(age.ends_with('s') || age.ends_with('m'), "an age: {out}");

    // Row metadata feeds -A and --show-labels; one object prints the same columns.
    let out = k.ok(&["get", "vm", "-A"]);
    assert_eq!(header(&out), ["NAMESPACE", "NAME", "AGE", "STATUS", "READY"], "{out}");
    let out = k.ok(&["get", "vm", "--show-labels"]);
    assert_eq!(header(&out), ["NAME", "AGE", "STATUS", "READY", "LABELS"], "{out}");
    let out = k.ok(&["get", "vm", "fedora-vm"]);
    assert_eq!(header(&out), ["NAME", "AGE", "STATUS", "READY"], "{out}");
    assert_eq!(table(&out)[0]["STATUS"], "Running", "{out}");
    // --sort-by asks for whole objects in the rows.
    let out = k.ok(&["get", "vm", "--sort-by=.metadata.name"]);
    assert_eq!(table(&out)[0]["NAME"], "fedora-vm", "{out}");
}

#[test]
fn get_with_chunk_size_pages_through_the_list() {
    let server = TestServer::start();
    server.namespace("chunks");
    let k = Kubectl::in_namespace(&server, "chunks");
    let res = crate::common::preferred("kubevirt.io", "virtualmachines");
    let names: Vec<String> = (1..=5).map(|i| format!("vm-{i}")).collect();
    for n in &names {
        server.create(res, &crate::common::object(res, "chunks", n));
    }
    let run = k.run(&["get", "vm", "--chunk-size=2", "-v=6"]);
    assert!(run.ok(), "{}", run.describe());
    let out = run.stdout();
    let listed: Vec<String> = table(&out).iter().map(|r| r["NAME"].clone()).collect();
    assert_eq!(listed, names, "every object, once, in order:\n{out}");
    // Three requests of two, the later ones continuing the first (-v=6 logs each request).
    let err = run.stderr();
    let pages: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("GET ") && l.contains("/virtualmachines?") && l.contains("limit=2"))
        .collect();
    assert_eq!(pages.len(), 3, "{}", run.describe());
    assert_eq!(pages.iter().filter(|l| l.contains("continue=")).count(), 2, "{err}");
    // As JSON too: one List of everything.
    let list = json(&k.ok(&["get", "vm", "--chunk-size=2", "-o", "json"]));
    assert_eq!(list["items"].as_array().map(Vec::len), Some(5));
}

#[test]
fn describe_shows_the_virtual_machine() {
    let server = TestServer::start();
    let k = Kubectl::in_namespace(&server, "describe");
    k.ok(&["create", "namespace", "describe"]);
    k.ok(&["apply", "-f", p(&manifest_path("vm.yaml"))]);
    let out = k.ok(&["describe", "vm", "fedora-vm"]);
    for want in [
        "Name:         fedora-vm",
        "Namespace:    describe",
        "app=fedora",
        "API Version:  kubevirt.io/v1",
        "Kind:         VirtualMachine",
        "Spec:",
        "Run Strategy:  Always",
        "Template:",
        "Events:",
    ] {
        assert!(out.contains(want), "{want:?} in:\n{out}");
    }
}

#[test]
fn get_watch_prints_the_printer_columns() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    let server = TestServer::start();
    let k = Kubectl::in_namespace(&server, "watching");
    k.ok(&["create", "namespace", "watching"]);
    k.ok(&["apply", "-f", p(&manifest_path("vm.yaml"))]);
    let mut child =
        k.command(&["get", "vm", "-w"]).stdout(Stdio::piped()).spawn().expect("start kubectl");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let line_with = |needle: &str| -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(l) if l.contains(needle) => return l,
                Ok(_) => {}
                Err(e) => panic!("kubectl get -w printed no line with {needle:?}: {e}"),
            }
        }
    };
    let head = line_with("NAME");
    assert_eq!(head.split_whitespace().collect::<Vec<_>>(), ["NAME", "AGE", "STATUS", "READY"]);
    line_with("fedora-vm");
    // Changes arrive as Table rows with the same columns.
    eventually(Duration::from_secs(20), || {
        server.get("/metrics").text().contains("apiserver_registered_watchers 1").then_some(())
    });
    set_vm_status(&server, "watching", "fedora-vm", "Stopped", "False");
    let row = line_with("Stopped");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!((cells[0], cells[2], cells[3]), ("fedora-vm", "Stopped", "False"), "{row}");
    let _ = child.kill();
    let _ = child.wait();
}
