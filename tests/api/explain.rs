//! `kubectl explain` answers from our OpenAPI document: kinds' spec and status fields, their types,
//! enums and list keys, as kubectl 1.32 reads them from `/openapi/v3`. Also the kubectl helper the
//! validation tests share.

use std::path::PathBuf;
use std::process::{Command, Output};

use crate::common::TestServer;

/// Where kubectl is: `$KUBECTL`, else the first `kubectl` on PATH. The machine ships kubectl
/// 1.32; without it these tests fail loudly rather than skip.
fn kubectl_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("KUBECTL") {
        return PathBuf::from(p);
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths).map(|d| d.join("kubectl")).find(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!("kubectl not found ($KUBECTL or PATH): these tests need kubectl 1.32")
        })
}

/// kubectl pointed at one server through its own kubeconfig and a fresh cache directory.
pub struct Kubectl {
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

impl Kubectl {
    pub fn new(server: &TestServer) -> Kubectl {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: virt\n  cluster:\n    server: {}\n\
             contexts:\n- name: virt\n  context:\n    cluster: virt\n    user: virt\n\
             users:\n- name: virt\n  user: {{}}\ncurrent-context: virt\n",
            server.base
        );
        std::fs::write(&kubeconfig, config).expect("write kubeconfig");
        Kubectl { dir, kubeconfig }
    }

    /// Runs kubectl with `args`; nothing from the developer's own set-up leaks in.
    pub fn run(&self, args: &[&str]) -> Output {
        Command::new(kubectl_binary())
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(args)
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.dir.path())
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", kubectl_binary().display()))
    }

    /// Runs kubectl and returns its stdout, failing the test unless it succeeded.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(out.status.success(), "kubectl {args:?}: {}", describe(&out));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs kubectl and returns its stderr, failing the test if it succeeded.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(!out.status.success(), "kubectl {args:?} should fail: {}", describe(&out));
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// Writes a manifest into the temporary directory and returns its path.
    pub fn file(&self, name: &str, text: &str) -> String {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).expect("write manifest");
        path.to_str().expect("UTF-8 path").to_string()
    }
}

fn describe(out: &Output) -> String {
    format!(
        "{}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The `FIELDS:` entries of an explain answer: `(name, type)` in order.
fn fields(explained: &str) -> Vec<(String, String)> {
    explained
        .split("FIELDS:")
        .nth(1)
        .unwrap_or("")
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("    ") && l.contains('\t'))
        .map(|l| {
            let (name, ty) = l.trim().split_once('\t').expect("name<TAB>type");
            (name.to_string(), ty.trim().to_string())
        })
        .collect()
}

#[test]
fn explain_vm_spec_lists_the_declared_fields() {
    let s = TestServer::start();
    let k = Kubectl::new(&s);
    let out = k.ok(&["explain", "vm.spec"]);
    assert!(out.contains("KIND:       VirtualMachine"), "{out}");
    assert!(out.contains("VERSION:    v1"), "{out}");
    assert!(out.contains("Desired state of the VirtualMachine."), "{out}");
    let names: Vec<(String, String)> = fields(&out);
    let want = [
        ("dataVolumeTemplates", "<[]Object>"),
        ("instancetype", "<Object>"),
        ("preference", "<Object>"),
        ("runStrategy", "<string>"),
        ("running", "<boolean>"),
        ("template", "<Object>"),
        ("updateVolumesStrategy", "<string>"),
    ];
    let want: Vec<(String, String)> =
        want.iter().map(|(n, t)| (n.to_string(), t.to_string())).collect();
    assert_eq!(names, want, "{out}");
    assert!(out.contains("enum: Always, RerunOnFailure, Manual, Halted, ...."), "{out}");

    let out = k.ok(&["explain", "vm.spec.runStrategy"]);
    let enum_block: Vec<&str> = out
        .split("ENUM:")
        .nth(1)
        .expect("an ENUM block")
        .lines()
        .skip(1)
        .map(str::trim)
        .take_while(|l| !l.is_empty())
        .collect();
    assert_eq!(
        enum_block,
        ["Always", "RerunOnFailure", "Manual", "Halted", "Once", "WaitAsReceiver"],
        "{out}"
    );
}

#[test]
fn explain_status_nested_fields_and_other_groups() {
    let s = TestServer::start();
    let k = Kubectl::new(&s);
    let out = k.ok(&["explain", "vm.status.conditions"]);
    let names: Vec<String> = fields(&out).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        ["lastProbeTime", "lastTransitionTime", "message", "reason", "status", "type"],
        "{out}"
    );
    assert!(out.contains("type\t<string> -required-"), "{out}");

    let out = k.ok(&["explain", "vm.spec.instancetype"]);
    let names: Vec<String> = fields(&out).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        ["inferFromVolume", "inferFromVolumeFailurePolicy", "kind", "name", "revisionName"],
        "{out}"
    );

    let out = k.ok(&["explain", "dv.spec"]);
    assert!(out.contains("GROUP:      cdi.kubevirt.io"), "{out}");
    let names: Vec<String> = fields(&out).into_iter().map(|(n, _)| n).collect();
    for f in ["contentType", "preallocation", "pvc", "source", "sourceRef", "storage"] {
        assert!(names.iter().any(|n| n == f), "dv.spec lists {f}: {out}");
    }
    assert!(out.contains("enum: kubevirt, archive"), "{out}");

    let out = k.ok(&["explain", "dv.status.restartCount"]);
    assert!(out.contains("FIELD: restartCount <integer>"), "{out}");

    let out = k.ok(&["explain", "vmirs.spec.replicas"]);
    assert!(out.contains("FIELD: replicas <integer>"), "{out}");

    let out = k.ok(&["explain", "vmim.spec"]);
    assert!(fields(&out).iter().any(|(n, t)| n == "vmiName" && t == "<string>"), "{out}");

    // Another version of the same kind answers from its own definition.
    let out = k.ok(&["explain", "vm.spec.runStrategy", "--api-version=kubevirt.io/v1alpha3"]);
    assert!(out.contains("VERSION:    v1alpha3"), "{out}");
    assert!(out.contains("WaitAsReceiver"), "{out}");
}
