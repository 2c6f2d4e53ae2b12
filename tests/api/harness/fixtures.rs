//! `--fixtures DIR|FILE` and `POST /reset` (`virt-apiserver reset`), as a harness and its
//! clients meet them: kubectl reads what the fixtures made; after a reset changed and deleted
//! fixtures are back, new objects gone, a watch open at the reset ends, and a watch or list from
//! an older resourceVersion is 410 Expired (kube's answer once history is compacted,
//! AS pkg/storage/cacher/cacher.go; K8S staging/src/k8s.io/apiserver/pkg/storage/errors.go), so
//! an informer relists.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{binary, eventually, rv, Kubectl, ServerOptions, TestServer};

/// A namespaced VM and a claim that defaults its class, in a file named before the one that
/// makes their namespace and the default StorageClass: the server orders them.
const OBJECTS: &str = "\
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: web, namespace: team, labels: {app: web}}
spec: {runStrategy: Halted, template: {spec: {domain: {devices: {}}}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: disk, namespace: team}
spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
";

const NAMESPACE: &str = "\
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
  annotations: {storageclass.kubernetes.io/is-default-class: \"true\"}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
";

/// A JSON `List` in a file of its own: a VM in the default namespace.
const LIST: &str = r#"{"apiVersion": "v1", "kind": "List", "items": [
  {"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": "db"},
   "spec": {"runStrategy": "Halted", "template": {"spec": {"domain": {"devices": {}}}}}}]}"#;

/// The fixtures: a directory (`a-objects.yaml`, `b-namespace.yaml`) and a JSON file.
fn fixtures(dir: &Path) -> Vec<String> {
    let objects = dir.join("objects");
    std::fs::create_dir(&objects).unwrap();
    std::fs::write(objects.join("a-objects.yaml"), OBJECTS).unwrap();
    std::fs::write(objects.join("b-namespace.yaml"), NAMESPACE).unwrap();
    std::fs::write(objects.join("notes.txt"), "not a manifest").unwrap();
    let list = dir.join("list.json");
    std::fs::write(&list, LIST).unwrap();
    ["--fixtures", objects.to_str().unwrap(), "--fixtures", list.to_str().unwrap()]
        .map(String::from)
        .to_vec()
}

/// On the etcd axis an etcd of its own: a reset compacts, and etcd compacts every prefix at
/// once, so a reset beside another test's watch from a recent resourceVersion would expire it.
fn with_fixtures(dir: &Path, extra: &[String]) -> TestServer {
    let mut args = fixtures(dir);
    args.extend_from_slice(extra);
    TestServer::start_with(ServerOptions { args, private_etcd: true, ..Default::default() })
}

const VMS: &str = "/apis/kubevirt.io/v1/namespaces/team/virtualmachines";

fn reset(s: &TestServer) -> Value {
    let r = s.request("POST", "/reset", &[], None);
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

#[test]
fn fixtures_from_a_directory_and_a_file_are_applied_in_an_order_that_works() {
    let dir = tempfile::tempdir().unwrap();
    let s = with_fixtures(dir.path(), &[]);
    let k = Kubectl::in_namespace(&s, "team");
    assert_eq!(k.ok(&["get", "vm", "-o", "name"]), "virtualmachine.kubevirt.io/web\n");
    assert_eq!(
        k.ok(&["get", "vm", "-n", "default", "-o", "name"]),
        "virtualmachine.kubevirt.io/db\n"
    );
    // The claim met DefaultStorageClass after the class existed.
    let class = k.ok(&["get", "pvc", "disk", "-o", "jsonpath={.spec.storageClassName}"]);
    assert_eq!(class, "standard");
    // Applied as `kubectl apply --server-side` applies: kubectl's field manager, an Apply.
    let vm = s.get_json(&format!("{VMS}/web"));
    let entry = &vm["metadata"]["managedFields"][0];
    assert_eq!(
        (entry["manager"].as_str(), entry["operation"].as_str()),
        (Some("kubectl"), Some("Apply"))
    );
    // So kubectl applying the same manifest again changes nothing.
    let file = k.file("again.yaml", OBJECTS);
    let out = k.ok(&["apply", "--server-side", "-f", file.to_str().unwrap()]);
    assert!(out.contains("virtualmachine.kubevirt.io/web serverside-applied"), "{out}");
    assert_eq!(rv(&s.get_json(&format!("{VMS}/web"))), rv(&vm));
}

#[test]
fn a_fixture_the_api_refuses_stops_the_start_naming_its_file_and_document() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    let bad = "apiVersion: v1\nkind: Namespace\nmetadata: {name: ok}\n---\n\
               apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: Not_A_Name}\n\
               spec: {runStrategy: Halted, template: {spec: {domain: {devices: {}}}}}\n";
    std::fs::write(&file, bad).unwrap();
    let unknown = dir.path().join("unknown.yaml");
    std::fs::write(&unknown, "apiVersion: zoo.io/v1\nkind: Zebra\nmetadata: {name: z}\n").unwrap();
    let start = |fixtures: &Path| {
        let out = Command::new(binary())
            .args(["--listen", "127.0.0.1:0", "--database", ":memory:", "--fixtures"])
            .arg(fixtures)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "the server started");
        assert!(
            out.stdout.is_empty(),
            "it never listened: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stderr).unwrap()
    };
    let err = start(&file);
    // kube's own answer to the create, after the place.
    let place = format!("error: {}: document 2: 422 Invalid: ", file.display());
    assert!(err.contains(&place), "{err}");
    assert!(err.contains("metadata.name: Invalid value: \"Not_A_Name\""), "{err}");
    let err = start(&unknown);
    let want = format!(
        "error: {}: document 1: no matches for kind \"Zebra\" in version \"zoo.io/v1\"",
        unknown.display()
    );
    assert!(err.contains(&want), "{err}");
}

#[test]
fn a_reset_puts_the_fixtures_back_ends_watches_and_expires_older_versions() {
    let dir = tempfile::tempdir().unwrap();
    let s = with_fixtures(dir.path(), &[]);
    let k = Kubectl::in_namespace(&s, "team");
    let web = s.get_json(&format!("{VMS}/web"));
    // A test's changes: a fixture changed, one deleted, a new object and a new namespace.
    k.ok(&["label", "vm", "web", "app=changed", "--overwrite"]);
    k.ok(&["delete", "pvc", "disk", "--wait=false"]);
    k.ok(&["create", "namespace", "scratch"]);
    let file = k.file("new.yaml", &OBJECTS.replace("name: web", "name: extra"));
    k.ok(&["apply", "-f", file.to_str().unwrap()]);
    let before = s.get_json(VMS);
    let before_rv: u64 = before["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    let watch = s.watch(&format!("{VMS}?watch=true&resourceVersion={before_rv}"));

    let status = reset(&s);
    assert_eq!(status["status"], "Success", "{status}");
    let reset_rv: u64 = status["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
    assert!(reset_rv > before_rv);
    // The open watch ends (after the events it was sent), so its client re-watches.
    assert!(watch.ends_within(Duration::from_secs(5)), "the watch did not end");
    // The fixtures are back as they were made (same uid), the rest is gone.
    assert_eq!(k.ok(&["get", "vm", "-o", "name"]), "virtualmachine.kubevirt.io/web\n");
    let back = s.get_json(&format!("{VMS}/web"));
    assert_eq!(back["metadata"]["labels"]["app"], "web");
    assert_eq!(back["metadata"]["uid"], web["metadata"]["uid"]);
    assert_eq!(
        k.ok(&["get", "pvc", "disk", "-o", "jsonpath={.spec.storageClassName}"]),
        "standard"
    );
    let namespaces = k.ok(&["get", "namespaces", "-o", "name"]);
    for ns in ["default", "kube-node-lease", "kube-public", "kube-system", "team"] {
        assert!(namespaces.contains(&format!("namespace/{ns}\n")), "{ns}: {namespaces}");
    }
    assert!(!namespaces.contains("scratch"), "{namespaces}");
    // Older resourceVersions are compacted: a list is 410, a watch gets kube's 410 ERROR event.
    let old = s.get(&format!("{VMS}?resourceVersion={before_rv}&resourceVersionMatch=Exact"));
    assert_eq!(old.status, 410, "{}", old.text());
    assert_eq!(old.json()["reason"], "Expired");
    let w = s.watch(&format!("{VMS}?watch=true&resourceVersion={before_rv}"));
    let ev = w.expect();
    assert_eq!((ev["type"].as_str(), ev["object"]["code"].as_u64()), (Some("ERROR"), Some(410)));
    // From the reset's revision a watch starts and sees what follows.
    let w = s.watch(&format!("{VMS}?watch=true&resourceVersion={reset_rv}"));
    k.ok(&["label", "vm", "web", "after=reset"]);
    let ev = w.expect_event("MODIFIED", "web");
    assert_eq!(ev["object"]["metadata"]["labels"]["after"], "reset");
    // A second reset puts that back too.
    let again = reset(&s);
    assert!(again["message"].as_str().unwrap().contains("1 updated"), "{again}");
}

const TOKENS: &str = "tok-root,root,0,\"system:masters\"\ntok-bob,bob,1002,\"developers\"\n";

#[test]
fn only_system_masters_may_reset_when_authentication_is_on_and_the_subcommand_sends_it() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, TOKENS).unwrap();
    let auth = ["--token-auth-file".to_owned(), tokens.display().to_string()];
    let s = with_fixtures(dir.path(), &auth);
    let bearer = |t: &str| format!("Bearer {t}");
    let (root, bob) = (bearer("tok-root"), bearer("tok-bob"));
    let path = format!("{VMS}/web");
    let r = s.request("DELETE", &path, &[("Authorization", &root)], None);
    assert_eq!(r.status, 200, "{}", r.text());
    // Nobody: 401; a user outside system:masters: kube's Forbidden for a non-resource path.
    assert_eq!(s.request("POST", "/reset", &[], None).status, 401);
    let r = s.request("POST", "/reset", &[("Authorization", &bob)], None);
    assert_eq!(r.status, 403, "{}", r.text());
    let st = r.json();
    assert_eq!((st["kind"].as_str(), st["reason"].as_str()), (Some("Status"), Some("Forbidden")));
    assert_eq!(st["message"], "forbidden: User \"bob\" cannot post path \"/reset\"");
    assert_eq!(s.request("GET", &path, &[("Authorization", &root)], None).status, 404);

    // `virt-apiserver reset`: refused in the server's words, then done with a master's token.
    let subcommand = |token: &str| {
        Command::new(binary())
            .args(["reset", "--server", &s.base, "--token", token])
            .stdin(Stdio::null())
            .output()
            .unwrap()
    };
    let out = subcommand("tok-bob");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("403: forbidden: User \"bob\" cannot post path \"/reset\""), "{err}");
    let out = subcommand("tok-root");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(said.starts_with("reset to the fixtures: 1 created"), "{said}");
    assert!(said.contains("(resourceVersion "), "{said}");
    let r = s.request("GET", &path, &[("Authorization", &root)], None);
    assert_eq!(r.status, 200, "{}", r.text());
}

/// Under `--simulate` the runtime follows a reset: what it made is gone with the rest, and it
/// runs the fixtures' VMs again from the state put back (it re-evaluates every object after
/// the loss, as after a restart).
#[test]
fn the_simulation_runs_the_fixtures_again_after_a_reset() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("vm.yaml");
    let vm = "apiVersion: v1\nkind: Namespace\nmetadata: {name: team}\n---\n\
              apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: runs, namespace: team}\n\
              spec: {runStrategy: Always, template: {spec: {domain: {devices: {}}}}}\n";
    std::fs::write(&file, vm).unwrap();
    let args = ["--simulate", "--simulate-speed", "0", "--fixtures", file.to_str().unwrap()];
    let s = TestServer::start_with(ServerOptions {
        args: args.map(String::from).to_vec(),
        private_etcd: true,
        ..Default::default()
    });
    let k = Kubectl::in_namespace(&s, "team");
    let running = |name: &str| {
        let path = format!("{VMS}/{name}");
        eventually(Duration::from_secs(20), || {
            let vm = s.get_json(&path);
            (vm["status"]["printableStatus"] == "Running").then_some(())
        });
        let vmi = format!("/apis/kubevirt.io/v1/namespaces/team/virtualmachineinstances/{name}");
        s.get_json(&vmi)["metadata"]["uid"].as_str().unwrap().to_owned()
    };
    let first = running("runs");
    let file = k.file("extra.yaml", &vm.replace("name: runs", "name: extra"));
    k.ok(&["apply", "-f", file.to_str().unwrap()]);
    running("extra");

    reset(&s);
    let again = running("runs");
    assert_ne!(again, first, "the VMI the runtime made went with the reset and was made again");
    assert_eq!(k.ok(&["get", "vm", "-o", "name"]), "virtualmachine.kubevirt.io/runs\n");
    eventually(Duration::from_secs(10), || {
        let vmis = k.ok(&["get", "vmi", "-o", "name"]);
        (vmis == "virtualmachineinstance.kubevirt.io/runs\n").then_some(())
    });
}
