//! A complete virt-apiserver inside a test's own process, handed back as a `kube::Client`.
//!
//! ```no_run
//! # async fn example() {
//! let server = virt_apiserver_harness::Server::builder().simulate().speed(0.0).start();
//! let client = server.client();
//! // … drive `client` as against a cluster; the server stops when `server` is dropped.
//! # }
//! ```
//!
//! Each server listens on an ephemeral loopback port with an in-memory database (nothing on
//! disk), takes the binary's own flags (`Builder::arg`), and answers its first request within
//! milliseconds of `start`. Dropping the `Server` stops it as SIGTERM stops the binary. As with
//! any kube-rs library, the test crate picks the k8s-openapi version feature.

use std::path::Path;

use kube::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Client, Config};
use serde_json::{json, Value};

/// What `start` is given: the binary's flags.
#[derive(Debug, Clone, Default)]
pub struct Builder {
    args: Vec<String>,
}

impl Builder {
    /// `--simulate`: KubeVirt, CDI and the cluster around them move objects as a cluster would.
    pub fn simulate(self) -> Builder {
        self.flag("--simulate")
    }

    /// `--simulate-speed`: the simulated delays times this (0: every step at once). Simulates.
    pub fn speed(self, factor: f64) -> Builder {
        self.simulate().arg("--simulate-speed").arg(factor.to_string())
    }

    /// `--simulate-seed`: the generator behind the simulation and Faults' `probability`.
    pub fn seed(self, seed: u64) -> Builder {
        self.arg("--simulate-seed").arg(seed.to_string())
    }

    /// `--fixtures`: manifests (a file or a directory) applied before the first request, and
    /// what `Server::reset` puts back.
    pub fn fixtures(self, path: impl AsRef<Path>) -> Builder {
        self.arg("--fixtures").arg(path.as_ref().display().to_string())
    }

    /// `--faults`: Faults in force from the first request.
    pub fn faults(self, path: impl AsRef<Path>) -> Builder {
        self.arg("--faults").arg(path.as_ref().display().to_string())
    }

    /// Any other flag of the binary (`virt-apiserver --help`), e.g. `--token-auth-file`.
    pub fn arg(mut self, arg: impl Into<String>) -> Builder {
        self.args.push(arg.into());
        self
    }

    fn flag(self, flag: &str) -> Builder {
        if self.args.iter().any(|a| a == flag) {
            self
        } else {
            self.arg(flag)
        }
    }

    /// Starts the server; returns once it listens, or why it did not start.
    pub fn try_start(self) -> Result<Server, String> {
        let mut args = vec!["--listen", "127.0.0.1:0", "--database", ":memory:"]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        args.extend(self.args);
        let config = virt_apiserver::Options::config_from_args(args).map_err(|p| p.join("; "))?;
        let running = virt_apiserver::start(config).map_err(|e| e.to_string())?;
        Ok(Server { running: Some(running) })
    }

    /// `try_start`, panicking with the reason: a test cannot go on without its server.
    pub fn start(self) -> Server {
        self.try_start().unwrap_or_else(|e| panic!("virt-apiserver did not start: {e}"))
    }
}

/// A running server, stopped on drop.
pub struct Server {
    running: Option<virt_apiserver::Running>,
}

impl Server {
    /// A plain API server (nothing moves objects): `Server::builder().start()`.
    pub fn start() -> Server {
        Builder::default().start()
    }

    pub fn builder() -> Builder {
        Builder::default()
    }

    /// `http://127.0.0.1:<port>`.
    pub fn url(&self) -> &str {
        self.running.as_ref().map_or("", |r| r.url())
    }

    /// A client of this server, as `kube::Client::try_default` is of a cluster. Call it inside
    /// a tokio runtime (kube's client spawns its buffer there).
    pub fn client(&self) -> Client {
        let url = self.url().parse().expect("the server's URL");
        Client::try_from(Config::new(url)).expect("a client of the server")
    }

    /// Creates the Fault `name` (`testing.virt-apiserver.io/v1alpha1`) with `spec`; it acts on
    /// the next matching request.
    pub async fn add_fault(&self, name: &str, spec: Value) -> Result<DynamicObject, kube::Error> {
        let fault: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "testing.virt-apiserver.io/v1alpha1",
            "kind": "Fault",
            "metadata": {"name": name},
            "spec": spec,
        }))
        .map_err(kube::Error::SerdeError)?;
        self.faults().create(&PostParams::default(), &fault).await
    }

    /// Deletes the Fault `name`.
    pub async fn remove_fault(&self, name: &str) -> Result<(), kube::Error> {
        self.faults().delete(name, &DeleteParams::default()).await.map(|_| ())
    }

    /// The Faults, as `kubectl get faults` lists them (their `status` counts firings).
    pub fn faults(&self) -> Api<DynamicObject> {
        let gvk = GroupVersionKind::gvk("testing.virt-apiserver.io", "v1alpha1", "Fault");
        Api::all_with(self.client(), &ApiResource::from_gvk_with_plural(&gvk, "faults"))
    }

    /// Puts the store back to the fixtures (`POST /reset`): what a test added is gone, and
    /// watches older than the reset end, so informers relist.
    pub async fn reset(&self) -> Result<(), kube::Error> {
        let req = http::Request::post("/reset").body(Vec::new()).map_err(kube::Error::HttpError)?;
        self.client().request_text(req).await.map(|_| ())
    }

    /// Stops the server as SIGTERM stops the binary, and says whether it stopped cleanly.
    pub fn stop(mut self) -> Result<(), String> {
        match self.running.take() {
            Some(r) => r.stop().map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }
}
