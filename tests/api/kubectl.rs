//! kubectl 1.32 as the first real client: discovery, apply, create, get, delete against the real
//! binary, each test with its own server, kubeconfig and discovery cache.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use serde_json::Value;
use virt_apiserver::generated::{GROUPS, RESOURCES};

use crate::common::{repo_root, TestServer};

/// Where kubectl is: `$KUBECTL`, else `/usr/bin/kubectl`, else the first `kubectl` on PATH. The
/// machine ships it; a missing kubectl is a broken test machine, so this fails, never skips.
fn kubectl_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("KUBECTL") {
        return PathBuf::from(p);
    }
    let usual = PathBuf::from("/usr/bin/kubectl");
    if usual.exists() {
        return usual;
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths).map(|d| d.join("kubectl")).find(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!(
                "kubectl not found (neither $KUBECTL, /usr/bin/kubectl nor PATH): these tests \
                 need kubectl 1.32, which comes with the machine; run `bash .ci/test`"
            )
        })
}

/// kubectl pointed at one server through its own kubeconfig and cache directory.
struct Kubectl {
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    cache: PathBuf,
}

/// One finished kubectl run.
struct Run {
    args: String,
    out: Output,
}

impl Run {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    fn ok(&self) -> bool {
        self.out.status.success()
    }
    fn describe(&self) -> String {
        format!(
            "kubectl {} exited {}\n--- stdout\n{}--- stderr\n{}",
            self.args,
            self.out.status,
            self.stdout(),
            self.stderr()
        )
    }
}

impl Kubectl {
    fn new(server: &TestServer) -> Kubectl {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        // No user credentials: the server needs no authentication by default.
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: virt\n  cluster:\n    server: {}\n\
             contexts:\n- name: virt\n  context:\n    cluster: virt\n    user: virt\n\
             users:\n- name: virt\n  user: {{}}\ncurrent-context: virt\npreferences: {{}}\n",
            server.base
        );
        std::fs::write(&kubeconfig, config).expect("write kubeconfig");
        let cache = dir.path().join("cache");
        Kubectl { dir, kubeconfig, cache }
    }

    /// Runs kubectl with `args` and returns whatever happened.
    fn run(&self, args: &[&str]) -> Run {
        let started = Instant::now();
        let out = Command::new(kubectl_binary())
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            // Nothing from the developer's own kube set-up may leak in.
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.dir.path())
            .env_remove("KUBECTL_EXTERNAL_DIFF")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", kubectl_binary().display()));
        let run = Run { args: args.join(" "), out };
        eprintln!("kubectl {} -> {} in {:?}", run.args, run.out.status, started.elapsed());
        run
    }

    /// Runs kubectl and returns its stdout, failing the test unless it succeeded.
    fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert!(run.ok(), "{}", run.describe());
        run.stdout()
    }

    /// Runs kubectl and returns its stderr, failing the test if it succeeded.
    fn fails(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert!(!run.ok(), "expected a failure: {}", run.describe());
        run.stderr()
    }

    /// Writes `text` into the kubectl temp dir and returns its path.
    fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).expect("write manifest");
        path
    }
}

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
    // Every group version, and the core versions `/api` lists (it serves no core resources).
    let core = server.get("/api").json();
    let core = core["versions"].as_array().cloned().unwrap_or_default();
    let expected: Vec<String> = GROUPS
        .iter()
        .flat_map(|g| g.versions.iter().map(|v| format!("{}/{v}", g.name)))
        .chain(core.iter().map(|v| v.as_str().expect("a version").to_string()))
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

    // Delete (kubectl waits for the object to go), then it is not found. Outside `default`,
    // kubectl follows a NotFound with `GET /api/v1/namespaces/<ns>` to say whether the namespace
    // is missing; the core group is not served (A.10), so that answer is a bare 404 and kubectl
    // prints its generic message. In `default` it prints the server's own.
    let out = k.ok(&["delete", "vm", "fedora-vm", "-n", "kubectl-apply"]);
    assert_eq!(out.trim(), "virtualmachine.kubevirt.io \"fedora-vm\" deleted");
    let err = k.fails(&["get", "vm", "fedora-vm", "-n", "kubectl-apply"]);
    assert!(err.contains("Error from server (NotFound)"), "{err}");
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
