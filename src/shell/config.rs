//! The flags (`Options`, as kube-apiserver's `ServerRunOptions`) and the configuration they
//! validate into (`Config`): every problem is found before anything starts, and all are reported.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::behaviour::{self, simulate};
use crate::http::authn::TokenFile;
use crate::http::authz::Abac;
use crate::http::faults;
use crate::http::filters::{self, Filters};
use crate::http::server::{ServeOptions, ShutdownOptions, WatchConfig};
use crate::http::tls::{self, TlsFiles};
use crate::object::duration;
use crate::registry::addresses::{Cidr, PortRange, Ranges};
use crate::shell::commands::Command;
use crate::shell::fixtures;
use crate::store::{EtcdConfig, QueueLimits, RetentionConfig, StoreConfig};

/// A Kubernetes-style API server for the KubeVirt family of resources, on embedded SQLite.
#[derive(clap::Parser, Debug)]
#[command(name = "virt-apiserver", version, about)]
pub struct Options {
    /// Without a subcommand the server runs.
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: String,
    /// SQLite database file; `:memory:` keeps nothing after exit. Unused with --etcd-servers.
    #[arg(long, default_value = "./virt-apiserver.db")]
    database: String,
    /// Serve from etcd instead of SQLite: its client URLs, comma-separated (kube-apiserver's
    /// flag). Objects are stored as kube-apiserver stores custom resources.
    #[arg(long, value_delimiter = ',')]
    etcd_servers: Vec<String>,
    /// The prefix of every key in etcd.
    #[arg(long, default_value = "/registry")]
    etcd_prefix: String,
    /// The CA bundle (PEM) that verifies the etcd servers' certificates.
    #[arg(long)]
    etcd_cafile: Option<String>,
    /// The client certificate (PEM) presented to etcd; needs --etcd-keyfile.
    #[arg(long, requires = "etcd_keyfile")]
    etcd_certfile: Option<String>,
    /// The private key (PEM) of --etcd-certfile.
    #[arg(long, requires = "etcd_certfile")]
    etcd_keyfile: Option<String>,
    /// Run the garbage collector (ownerReferences, orphan and foreground deletion).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    enable_garbage_collector: bool,
    /// Seconds between garbage-collection passes when no write asks for one.
    #[arg(long, default_value_t = 30)]
    gc_interval: u64,
    /// The CIDR Services' cluster IPs are allocated from (kube-apiserver's flag; one IPv4
    /// range). Its first address is the `default/kubernetes` Service's.
    #[arg(long, default_value = "10.96.0.0/12")]
    service_cluster_ip_range: String,
    /// The ports NodePort and LoadBalancer Services' node ports are allocated from
    /// (kube-apiserver's flag): `30000-32767`, or `30000+2768`.
    #[arg(long, default_value = "30000-32767")]
    service_node_port_range: String,
    /// Let namespaced objects live in any namespace, with no Namespace object and no
    /// namespace lifecycle (the behaviour before the document served Namespaces).
    #[arg(long)]
    implicit_namespaces: bool,
    /// How long history stays readable: older continue tokens, list and watch resourceVersions
    /// get 410 Expired. Seconds, or a duration such as `5m`, `90s`, `1m30s`, `500ms`.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    history_window: Duration,
    /// How long an Event lives after its last write (kube-apiserver's --event-ttl).
    #[arg(long, default_value = "1h", value_parser = parse_duration)]
    event_ttl: Duration,
    /// The newest revisions always kept, however old.
    #[arg(long, default_value_t = 1000)]
    compaction_min_retain: u64,
    /// How often the retention check runs (a token lives up to window + interval).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    compaction_interval: Duration,
    /// Between periodic BOOKMARK events of watches with allowWatchBookmarks.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    bookmark_interval: Duration,
    /// Unread events a watcher may have queued before it is ended with 410 Expired.
    #[arg(long, default_value_t = QueueLimits::default().events)]
    watch_queue_events: usize,
    /// Bytes of unread events a watcher may have queued before it is ended with 410 Expired.
    #[arg(long, default_value_t = QueueLimits::default().bytes)]
    watch_queue_bytes: usize,
    /// Bearer tokens, in kube-apiserver's CSV format: token,user,uid,"group1,group2".
    #[arg(long)]
    token_auth_file: Option<String>,
    /// `AlwaysAllow` (default) or `ABAC` (needs --authorization-policy-file).
    #[arg(long, default_value = "AlwaysAllow")]
    authorization_mode: String,
    /// ABAC policies, one JSON policy per line, as kube-apiserver reads them.
    #[arg(long)]
    authorization_policy_file: Option<String>,
    /// Most read-only requests in flight per user (watches excepted).
    #[arg(long, default_value_t = filters::DEFAULT_MAX_READONLY)]
    max_requests_inflight: usize,
    /// Most mutating requests in flight per user.
    #[arg(long, default_value_t = filters::DEFAULT_MAX_MUTATING)]
    max_mutating_requests_inflight: usize,
    /// The most a request other than a watch may take before it is answered 504 (kube's flag;
    /// a client's `?timeout=` may shorten it).
    #[arg(long, default_value = "1m0s", value_parser = parse_duration)]
    request_timeout: Duration,
    /// Serve on a non-loopback address without authentication (anyone who reaches it may write).
    #[arg(long)]
    insecure_allow_unauthenticated_remote: bool,

    // HTTPS and client certificates.
    /// Serve HTTPS with this certificate chain (PEM); needs --tls-private-key-file.
    #[arg(long, requires = "tls_private_key_file")]
    tls_cert_file: Option<String>,
    /// The private key (PEM) of --tls-cert-file.
    #[arg(long, requires = "tls_cert_file")]
    tls_private_key_file: Option<String>,
    /// CA bundle (PEM): client certificates it signs authenticate, CN as user and O as groups.
    #[arg(long, requires = "tls_cert_file")]
    client_ca_file: Option<String>,
    /// After SIGTERM, keep serving this long while /readyz fails, so load balancers stop
    /// sending traffic (kube-apiserver's flag); then stop taking connections.
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    shutdown_delay_duration: Duration,
    /// Once the server stops taking connections, open watches end within this (kube-apiserver's
    /// flag; 0: at once).
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    shutdown_watch_termination_grace_period: Duration,
    /// After the delay, keep the listener open and answer new requests 429 with Retry-After
    /// until those in flight have drained (kube-apiserver's flag, so `=true` is taken too); off:
    /// the listener closes.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set,
          default_value_t = false)]
    shutdown_send_retry_after: bool,
    /// Test hook: GET of this path panics in its handler (proves panics become 500 Status).
    #[arg(long, hide = true)]
    debug_panic_path: Option<String>,
    /// Test hook: the time a client has to send a request's head (default: kube's 32 s).
    #[arg(long, hide = true, value_parser = parse_duration)]
    debug_read_header_timeout: Option<Duration>,

    /// Manifests (a YAML or JSON file, or a directory of them) applied at start, in the order
    /// given, namespaces first; `POST /reset` puts the store back to them. Repeatable.
    #[arg(long, value_name = "DIR|FILE")]
    fixtures: Vec<String>,

    /// Run the simulated KubeVirt runtime: objects move through their lifecycles
    /// (openapi/lifecycles.yaml). Off: a pure API server.
    #[arg(long)]
    simulate: bool,
    /// Faults (testing.virt-apiserver.io/v1alpha1) created at start: a YAML file of one or more
    /// documents, or a JSON list. A Fault that exists gets the file's spec.
    #[arg(long)]
    faults: Option<String>,
    /// A lifecycle file that extends (or, with `mode: replace`, replaces) the built-in ones:
    /// lifecycles and actions.
    #[arg(long, requires = "simulate")]
    simulate_config: Option<String>,
    /// A factor on every simulated delay (0: each step as soon as the previous one is written).
    #[arg(long, default_value_t = 1.0)]
    simulate_speed: f64,
    /// Seeds jitter, names, addresses and node choice, so runs repeat them; and the Faults'
    /// probabilities and jitter, with or without --simulate.
    #[arg(long)]
    simulate_seed: Option<u64>,
    /// How many simulated nodes VMIs are scheduled on (sim-node-1 … sim-node-N).
    #[arg(long, default_value_t = 2)]
    simulate_nodes: usize,
}

/// What `run` starts: the flags checked, and the files they name read.
pub struct Config {
    /// The address to bind, as given (a host name is resolved by the bind).
    pub listen: String,
    pub store: StoreConfig,
    /// The filter chain, its token file and ABAC policies loaded.
    pub filters: Filters,
    /// Serve without authentication on an address that is not loopback.
    pub insecure_allow_unauthenticated_remote: bool,
    pub serve: ServeOptions,
    pub watch: WatchConfig,
    pub implicit_namespaces: bool,
    /// `--service-cluster-ip-range` and `--service-node-port-range`.
    pub service_ranges: Ranges,
    /// `--simulate`: the checked lifecycles (they also replace the actions) and the engine's knobs.
    pub simulation: Option<simulate::Config>,
    /// What Faults' `probability` and jitter draw from: `--simulate-seed` (the simulation's
    /// seed under `--simulate`), else 0, so the same requests fire on every run.
    pub fault_seed: u64,
    /// `--faults`: the documents to create at start, each with the label its errors name.
    pub faults: Vec<(String, serde_json::Value)>,
    pub garbage_collector: bool,
    /// The collector's and the namespace controller's pass interval.
    pub gc_interval: Duration,
    pub event_ttl: Duration,
    /// `--fixtures`: the manifests read, applied at start.
    pub fixtures: Vec<fixtures::Manifest>,
}

impl Options {
    /// The configuration the binary's flags `args` (without the program's name) describe, for
    /// a server started inside another program (`start`); on failure, every problem found.
    pub fn config_from_args<I, T>(args: I) -> Result<Config, Vec<String>>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let argv = std::iter::once("virt-apiserver".into()).chain(args.into_iter().map(Into::into));
        let options =
            <Options as clap::Parser>::try_parse_from(argv).map_err(|e| vec![e.to_string()])?;
        if options.command.is_some() {
            return Err(vec!["a subcommand does not start a server".into()]);
        }
        options.into_config()
    }

    /// Checks the flags and reads the files they name; on failure, every problem found.
    pub fn into_config(self) -> Result<Config, Vec<String>> {
        let mut problems = Vec::new();
        let p = &mut problems;
        let simulation = if self.simulate { noted(p, self.simulation()) } else { None };
        let faults = self.faults.as_deref().and_then(|f| noted(p, faults::read_file(f)));
        let faults = faults.unwrap_or_default();
        let tokens = self.token_auth_file.as_deref().and_then(|f| noted(p, TokenFile::load(f)));
        let abac = noted(p, self.authorization()).flatten();
        // The bound address decides (`run` checks it again); one given as a literal is known now.
        let authenticates = self.token_auth_file.is_some() || self.client_ca_file.is_some();
        if let Ok(addr) = self.listen.parse::<SocketAddr>() {
            let insecure = self.insecure_allow_unauthenticated_remote;
            noted(p, unauthenticated_listener(&addr, authenticates, insecure));
        }
        let tls = self.tls().and_then(|r| noted(p, r));
        let fixtures = noted(p, fixtures::read(&self.fixtures)).unwrap_or_default();
        let cluster_ips = noted(p, cluster_ip_range(&self.service_cluster_ip_range));
        let node_ports = noted(
            p,
            PortRange::parse(&self.service_node_port_range)
                .map_err(|e| format!("--service-node-port-range: {e}")),
        );
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut filters = Filters::new(
            tokens,
            abac,
            self.max_requests_inflight,
            self.max_mutating_requests_inflight,
        )
        .with_request_timeout(self.request_timeout);
        if self.client_ca_file.is_some() {
            filters = filters.with_client_certificates();
        }
        let shutdown = ShutdownOptions {
            delay: self.shutdown_delay_duration,
            watch_grace: self.shutdown_watch_termination_grace_period,
            send_retry_after: self.shutdown_send_retry_after,
        };
        Ok(Config {
            store: StoreConfig {
                path: self.database,
                etcd: (!self.etcd_servers.is_empty()).then_some(EtcdConfig {
                    servers: self.etcd_servers,
                    prefix: self.etcd_prefix,
                    cafile: self.etcd_cafile,
                    certfile: self.etcd_certfile,
                    keyfile: self.etcd_keyfile,
                }),
                retention: RetentionConfig {
                    window: self.history_window,
                    min_revisions: self.compaction_min_retain,
                    interval: self.compaction_interval.max(Duration::from_millis(10)),
                },
                watch_queue: QueueLimits {
                    events: self.watch_queue_events,
                    bytes: self.watch_queue_bytes,
                },
            },
            listen: self.listen,
            filters,
            insecure_allow_unauthenticated_remote: self.insecure_allow_unauthenticated_remote,
            serve: ServeOptions {
                tls,
                debug_panic_path: self.debug_panic_path,
                shutdown,
                read_header_timeout: self.debug_read_header_timeout,
            },
            watch: WatchConfig { bookmark_interval: self.bookmark_interval },
            implicit_namespaces: self.implicit_namespaces,
            service_ranges: Ranges {
                cluster_ips: cluster_ips.unwrap_or(Ranges::default().cluster_ips),
                node_ports: node_ports.unwrap_or(Ranges::default().node_ports),
            },
            fault_seed: simulation.as_ref().map_or(self.simulate_seed.unwrap_or(0), |s| s.seed),
            simulation,
            faults,
            garbage_collector: self.enable_garbage_collector,
            gc_interval: Duration::from_secs(self.gc_interval.max(1)),
            event_ttl: self.event_ttl,
            fixtures,
        })
    }

    /// The ABAC policies `--authorization-mode` asks for, if any.
    fn authorization(&self) -> Result<Option<Abac>, String> {
        match self.authorization_mode.as_str() {
            "AlwaysAllow" => Ok(None),
            "ABAC" => match self.authorization_policy_file.as_deref() {
                Some(path) => Abac::load(path).map(Some),
                None => Err("--authorization-mode=ABAC needs --authorization-policy-file".into()),
            },
            other => {
                Err(format!("unknown --authorization-mode {other:?}: use AlwaysAllow or ABAC"))
            }
        }
    }

    /// The TLS configuration the flags ask for, if any.
    fn tls(&self) -> Option<Result<Arc<rustls::ServerConfig>, String>> {
        let (cert_file, key_file) =
            (self.tls_cert_file.clone()?, self.tls_private_key_file.clone()?);
        let files = TlsFiles { cert_file, key_file, client_ca_file: self.client_ca_file.clone() };
        Some(tls::server_config(&files))
    }

    /// The simulation's configuration: a bad `--simulate-config` is one problem listing all of
    /// its own.
    fn simulation(&self) -> Result<simulate::Config, String> {
        let extra = match self.simulate_config.as_deref() {
            Some(path) => Some(std::fs::read_to_string(path).map_err(|e| format!("{path}: {e}"))?),
            None => None,
        };
        let lifecycles = behaviour::load(extra.as_deref()).map_err(|problems| {
            let file = self.simulate_config.as_deref().unwrap_or("the built-in lifecycles");
            let list: Vec<String> = problems.iter().map(|p| format!("\n  - {p}")).collect();
            format!("{file} has {} problem(s):{}", problems.len(), list.concat())
        })?;
        if !(self.simulate_speed >= 0.0 && self.simulate_speed.is_finite()) {
            return Err("--simulate-speed must be a number >= 0".into());
        }
        let seed = self.simulate_seed.unwrap_or_else(|| {
            let mut bytes = [0u8; 8];
            getrandom::getrandom(&mut bytes).expect("system randomness");
            u64::from_le_bytes(bytes)
        });
        Ok(simulate::Config {
            lifecycles,
            speed: self.simulate_speed,
            seed,
            nodes: self.simulate_nodes.max(1),
        })
    }
}

impl Config {
    /// Whether serving on `addr`, where the listener is bound, is allowed (see
    /// `unauthenticated_listener`).
    pub fn check_listener(&self, addr: &SocketAddr) -> Result<(), String> {
        unauthenticated_listener(
            addr,
            self.filters.authenticates(),
            self.insecure_allow_unauthenticated_remote,
        )
    }
}

/// `--service-cluster-ip-range`, checked as kube-apiserver's `validateClusterIPFlags` checks it
/// (K8S pkg/controlplane/apiserver/options/validation.go: at most 20 host bits).
fn cluster_ip_range(text: &str) -> Result<Cidr, String> {
    let flag = "--service-cluster-ip-range";
    let cidr = Cidr::parse(text)
        .map_err(|e| format!("{flag} must contain at least one valid cidr: {e}"))?;
    if cidr.host_bits() > 20 {
        return Err(format!(
            "specified {flag} is too large; for 32-bit addresses, the mask must be >= 12"
        ));
    }
    Ok(cidr)
}

/// `r`'s value, or `None` with its error noted.
fn noted<T>(problems: &mut Vec<String>, r: Result<T, String>) -> Option<T> {
    r.map_err(|e| problems.push(e)).ok()
}

/// Without authentication only loopback is served, unless the operator insists.
fn unauthenticated_listener(
    addr: &SocketAddr,
    authenticates: bool,
    insecure: bool,
) -> Result<(), String> {
    if authenticates || addr.ip().is_loopback() || insecure {
        return Ok(());
    }
    Err(format!(
        "refusing to serve {addr} without authentication: give --token-auth-file or --client-ca-file, listen on loopback, or pass --insecure-allow-unauthenticated-remote"
    ))
}

/// Seconds (`300`), or Go's duration syntax as kube's flags take it (`5m`, `1m30s`, `500ms`).
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    match text.parse::<u64>() {
        Ok(secs) => Ok(Duration::from_secs(secs)),
        Err(_) if text.starts_with('-') => {
            Err(format!("invalid duration {text:?}: it is negative"))
        }
        Err(_) => duration::parse(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn config(flags: &[&str]) -> Result<Config, Vec<String>> {
        let args = std::iter::once("virt-apiserver").chain(flags.iter().copied());
        Options::try_parse_from(args).expect("flags parse").into_config()
    }

    #[test]
    fn durations() {
        let ok = |t: &str| parse_duration(t).unwrap();
        assert_eq!(ok("300"), Duration::from_secs(300));
        assert_eq!(ok("5m"), Duration::from_secs(300));
        assert_eq!(ok("1m30s"), Duration::from_secs(90));
        assert_eq!(ok("500ms"), Duration::from_millis(500));
        assert_eq!(ok("1.5s"), Duration::from_millis(1500));
        assert_eq!(ok("2h"), Duration::from_secs(7200));
        for bad in ["", "x", "5x", "m", "1.2.3s", "-1s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_defaults_are_a_valid_configuration() {
        let Ok(c) = config(&[]) else { panic!("the defaults are refused") };
        assert_eq!(c.listen, "127.0.0.1:8080");
        assert_eq!(c.store.path, "./virt-apiserver.db");
        assert!(c.store.etcd.is_none());
        assert!(!c.filters.authenticates());
        assert!(c.serve.tls.is_none() && c.simulation.is_none());
        assert!(c.garbage_collector);
        assert_eq!(
            (c.gc_interval, c.event_ttl),
            (Duration::from_secs(30), Duration::from_secs(3600))
        );
        assert_eq!(c.store.retention.window, Duration::from_secs(300));
        assert_eq!(c.filters.request_timeout, Duration::from_secs(60));
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let problems = config(&[
            "--listen=0.0.0.0:0",
            "--authorization-mode=RBAC",
            "--simulate",
            "--simulate-speed=-1",
        ])
        .err()
        .expect("refused");
        assert_eq!(
            problems,
            [
                "--simulate-speed must be a number >= 0",
                "unknown --authorization-mode \"RBAC\": use AlwaysAllow or ABAC",
                "refusing to serve 0.0.0.0:0 without authentication: give --token-auth-file or \
                 --client-ca-file, listen on loopback, or pass --insecure-allow-unauthenticated-remote",
            ]
        );
        let missing = "/nonexistent/virt-apiserver";
        let problems = config(&[
            &format!("--token-auth-file={missing}/tokens.csv"),
            "--authorization-mode=ABAC",
            "--simulate",
            &format!("--simulate-config={missing}/lifecycles.yaml"),
            &format!("--tls-cert-file={missing}/tls.crt"),
            &format!("--tls-private-key-file={missing}/tls.key"),
        ])
        .err()
        .expect("refused");
        assert_eq!(problems.len(), 4, "{problems:#?}");
        assert!(problems[0].starts_with(&format!("{missing}/lifecycles.yaml: ")), "{problems:#?}");
        assert!(problems[1].contains("tokens.csv"), "{problems:#?}");
        assert_eq!(problems[2], "--authorization-mode=ABAC needs --authorization-policy-file");
        assert!(problems[3].contains("tls.crt"), "{problems:#?}");
    }

    #[test]
    fn service_ranges_are_checked_with_the_other_flags() {
        let Ok(c) = config(&[]) else { panic!("the defaults are refused") };
        assert_eq!(c.service_ranges, Ranges::default());
        let given =
            ["--service-cluster-ip-range=10.0.0.0/24", "--service-node-port-range=31000+10"];
        let Ok(c) = config(&given) else { panic!("valid ranges are refused") };
        assert_eq!(
            (c.service_ranges.cluster_ips.to_string(), c.service_ranges.node_ports.to_string()),
            ("10.0.0.0/24".into(), "31000-31009".into())
        );
        let problems = config(&[
            "--service-cluster-ip-range=10.0.0.0/8",
            "--service-node-port-range=32767-30000",
            "--authorization-mode=RBAC",
        ])
        .err()
        .expect("refused");
        assert_eq!(
            problems,
            [
                "unknown --authorization-mode \"RBAC\": use AlwaysAllow or ABAC",
                "specified --service-cluster-ip-range is too large; for 32-bit addresses, the mask \
                 must be >= 12",
                "--service-node-port-range: invalid port range: \"32767-30000\"",
            ]
        );
        let problems = config(&["--service-cluster-ip-range=fd00::/112"]).err().expect("refused");
        assert_eq!(
            problems,
            ["--service-cluster-ip-range must contain at least one valid cidr: invalid CIDR \
              address: fd00::/112"]
        );
    }

    #[test]
    fn a_listener_is_checked_where_it_is_bound() {
        let c = config(&["--listen=localhost:0"]).expect("a host name is checked when bound");
        assert!(c.check_listener(&"127.0.0.1:4321".parse().unwrap()).is_ok());
        let err = c.check_listener(&"10.0.0.1:4321".parse().unwrap()).unwrap_err();
        assert!(err.starts_with("refusing to serve 10.0.0.1:4321 without authentication"), "{err}");
        let c = config(&["--listen=0.0.0.0:0", "--insecure-allow-unauthenticated-remote"]);
        assert!(c.is_ok(), "the operator may insist");
    }
}
