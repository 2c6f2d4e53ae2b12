//! kubectl, the first real client: the binary, a kubeconfig for the server, runs and their
//! output.

use super::*;

/// Where kubectl is: `$KUBECTL`, else `/usr/bin/kubectl`, else the first `kubectl` on PATH. The
/// machine ships it; a missing kubectl is a broken test machine, so this fails, never skips.
pub fn kubectl_binary() -> PathBuf {
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
pub struct Kubectl {
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
    pub cache: PathBuf,
}

/// One finished kubectl run.
pub struct Run {
    pub args: String,
    pub out: Output,
}

impl Run {
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    pub fn ok(&self) -> bool {
        self.out.status.success()
    }
    pub fn describe(&self) -> String {
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
    pub fn new(server: &TestServer) -> Kubectl {
        Kubectl::in_namespace(server, "default")
    }

    /// kubectl whose context defaults to namespace `ns`.
    pub fn in_namespace(server: &TestServer, ns: &str) -> Kubectl {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        // No user credentials: the server needs no authentication by default.
        let config = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: virt\n  cluster:\n    server: {}\n\
             contexts:\n- name: virt\n  context:\n    cluster: virt\n    user: virt\n    namespace: {ns}\n\
             users:\n- name: virt\n  user: {{}}\ncurrent-context: virt\npreferences: {{}}\n",
            server.base
        );
        std::fs::write(&kubeconfig, config).expect("write kubeconfig");
        let cache = dir.path().join("cache");
        Kubectl { dir, kubeconfig, cache }
    }

    /// The kubectl command with this kubeconfig and cache, for callers that spawn it.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(kubectl_binary());
        c.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache)
            .args(args)
            // Nothing from the developer's own kube set-up may leak in.
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", self.dir.path())
            .env_remove("KUBECTL_EXTERNAL_DIFF")
            .stdin(Stdio::null());
        c
    }

    /// Runs kubectl with `args` and returns whatever happened.
    pub fn run(&self, args: &[&str]) -> Run {
        let started = Instant::now();
        let out = self
            .command(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", kubectl_binary().display()));
        let run = Run { args: args.join(" "), out };
        eprintln!("kubectl {} -> {} in {:?}", run.args, run.out.status, started.elapsed());
        run
    }

    /// Runs kubectl and returns its stdout, failing the test unless it succeeded.
    pub fn ok(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert!(run.ok(), "{}", run.describe());
        run.stdout()
    }

    /// Runs kubectl and returns its stderr, failing the test if it succeeded.
    pub fn fails(&self, args: &[&str]) -> String {
        let run = self.run(args);
        assert!(!run.ok(), "expected a failure: {}", run.describe());
        run.stderr()
    }

    /// Writes `text` into the kubectl temp dir and returns its path.
    pub fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, text).expect("write manifest");
        path
    }
}
