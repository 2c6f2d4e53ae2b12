//! The `virt-apiserver` binary: parses flags, opens the store, binds and serves.

use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

// Every request decodes, checks and encodes JSON trees: many small short-lived allocations, which
// glibc's allocator serves at ~25% of a write's CPU.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use virt_apiserver::authn::TokenFile;
use virt_apiserver::authz::Abac;
use virt_apiserver::filters::Filters;
use virt_apiserver::kubeconfig::KubeconfigArgs;
use virt_apiserver::server::{self, AppState, ServeOptions, ShutdownOptions, WatchConfig};
use virt_apiserver::storage::{
    files, EtcdConfig, QueueLimits, RetentionConfig, Store, StoreConfig,
};
use virt_apiserver::tls::TlsFiles;

/// A Kubernetes-style API server for the KubeVirt family of resources, on embedded SQLite.
#[derive(Parser, Debug)]
#[command(name = "virt-apiserver", version, about)]
struct Args {
    /// Without a subcommand the server runs.
    #[command(subcommand)]
    command: Option<Subcommand>,
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
    #[arg(long, default_value_t = virt_apiserver::filters::DEFAULT_MAX_READONLY)]
    max_requests_inflight: usize,
    /// Most mutating requests in flight per user.
    #[arg(long, default_value_t = virt_apiserver::filters::DEFAULT_MAX_MUTATING)]
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

    /// Run the simulated KubeVirt runtime: objects move through their lifecycles
    /// (openapi/lifecycles.yaml). Off: a pure API server.
    #[arg(long)]
    simulate: bool,
    /// A lifecycle file that extends (or, with `mode: replace`, replaces) the built-in ones:
    /// lifecycles and actions.
    #[arg(long, requires = "simulate")]
    simulate_config: Option<String>,
    /// A factor on every simulated delay (0: each step as soon as the previous one is written).
    #[arg(long, default_value_t = 1.0)]
    simulate_speed: f64,
    /// Seeds jitter, names, addresses and node choice, so runs repeat them.
    #[arg(long)]
    simulate_seed: Option<u64>,
    /// How many simulated nodes VMIs are scheduled on (sim-node-1 … sim-node-N).
    #[arg(long, default_value_t = 2)]
    simulate_nodes: usize,
}

#[derive(clap::Subcommand, Debug)]
enum Subcommand {
    /// Print a kubeconfig for one user to stdout (embedding the given PEM files).
    Kubeconfig(KubeconfigArgs),
    /// Run SQLite's integrity check over every page of the database (read-only; the server may
    /// be running). Exits 1 and lists the damage if there is any.
    Check {
        /// The database file.
        #[arg(long)]
        database: PathBuf,
    },
    /// Copy the database, consistent at one revision, to OUT while the server runs.
    Backup {
        /// The database file.
        #[arg(long)]
        database: PathBuf,
        /// Where the copy goes (replaced if it exists).
        out: PathBuf,
    },
    /// Replace the database with the copy IN (the server stopped). Revisions continue above
    /// every revision the replaced database served and older history counts as compacted, so
    /// clients relist.
    Restore {
        /// The database file to replace (or create).
        #[arg(long)]
        database: PathBuf,
        /// A copy `backup` wrote.
        input: PathBuf,
        /// Revisions to skip beyond the newest known one: needed when the replaced database
        /// is gone or unreadable but clients saw its revisions.
        #[arg(long, default_value_t = 0)]
        bump_revision: u64,
    },
}

/// Runs a subcommand to its end.
fn subcommand(command: &Subcommand) {
    match command {
        Subcommand::Kubeconfig(k) => {
            let yaml = virt_apiserver::kubeconfig::render(k).unwrap_or_else(|e| fail(e));
            print!("{yaml}");
        }
        Subcommand::Check { database } => {
            let ok = files::check(database).unwrap_or_else(|e| fail(e));
            println!(
                "{}: ok (schema version {}, revision {}, compacted {})",
                database.display(),
                ok.schema_version,
                ok.revision,
                ok.compacted
            );
        }
        Subcommand::Backup { database, out } => {
            let done = files::backup(database, out).unwrap_or_else(|e| fail(e));
            println!(
                "{}: copied at revision {} to {}",
                database.display(),
                done.revision,
                out.display()
            );
        }
        Subcommand::Restore { database, input, bump_revision } => {
            let done = files::restore(database, input, *bump_revision).unwrap_or_else(|e| fail(e));
            println!(
                "{}: restored from {} (revision {}; the replaced database was at {}); history up \
                 to {} counts as compacted",
                database.display(),
                input.display(),
                done.backup_revision,
                done.replaced_revision,
                done.compacted
            );
        }
    }
}

/// The TLS configuration the flags ask for, if any.
fn tls(args: &Args) -> Option<std::sync::Arc<rustls::ServerConfig>> {
    let (cert_file, key_file) = (args.tls_cert_file.clone()?, args.tls_private_key_file.clone()?);
    let files = TlsFiles { cert_file, key_file, client_ca_file: args.client_ca_file.clone() };
    Some(virt_apiserver::tls::server_config(&files).unwrap_or_else(|e| fail(e)))
}

/// Seconds (`300`), or Go's duration syntax as kube's flags take it (`5m`, `1m30s`, `500ms`).
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    match text.parse::<u64>() {
        Ok(secs) => Ok(Duration::from_secs(secs)),
        Err(_) if text.starts_with('-') => {
            Err(format!("invalid duration {text:?}: it is negative"))
        }
        Err(_) => virt_apiserver::duration::parse(text),
    }
}

fn fail(msg: impl std::fmt::Display) -> ! {
    eprintln!("error: {msg}");
    std::process::exit(1);
}

/// Builds the filter chain's configuration from the flags, refusing unsafe combinations.
fn filters(args: &Args, addr: &std::net::SocketAddr) -> Filters {
    let tokens =
        args.token_auth_file.as_deref().map(|p| TokenFile::load(p).unwrap_or_else(|e| fail(e)));
    let abac = match args.authorization_mode.as_str() {
        "AlwaysAllow" => None,
        "ABAC" => {
            let Some(path) = args.authorization_policy_file.as_deref() else {
                fail("--authorization-mode=ABAC needs --authorization-policy-file")
            };
            Some(Abac::load(path).unwrap_or_else(|e| fail(e)))
        }
        other => fail(format!("unknown --authorization-mode {other:?}: use AlwaysAllow or ABAC")),
    };
    let mut filters =
        Filters::new(tokens, abac, args.max_requests_inflight, args.max_mutating_requests_inflight)
            .with_request_timeout(args.request_timeout);
    if args.client_ca_file.is_some() {
        filters = filters.with_client_certificates();
    }
    if !filters.authenticates() {
        if !addr.ip().is_loopback() && !args.insecure_allow_unauthenticated_remote {
            fail(format!(
                "refusing to serve {addr} without authentication: give --token-auth-file or --client-ca-file, listen on loopback, or pass --insecure-allow-unauthenticated-remote"
            ));
        }
        let scope = if addr.ip().is_loopback() { "loopback only" } else { "NOT loopback" };
        eprintln!(
            "warning: no authentication configured: serving {addr} ({scope}); every request is allowed as system:anonymous"
        );
    }
    filters
}

/// The simulation's configuration; a bad `--simulate-config` ends the process listing every
/// problem.
fn simulation(args: &Args) -> virt_apiserver::simulate::Config {
    let extra = args
        .simulate_config
        .as_deref()
        .map(|path| std::fs::read_to_string(path).unwrap_or_else(|e| fail(format!("{path}: {e}"))));
    let lifecycles = virt_apiserver::simulate::load(extra.as_deref()).unwrap_or_else(|problems| {
        let file = args.simulate_config.as_deref().unwrap_or("the built-in lifecycles");
        let list: Vec<String> = problems.iter().map(|p| format!("\n  - {p}")).collect();
        fail(format!("{file} has {} problem(s):{}", problems.len(), list.concat()))
    });
    if !(args.simulate_speed >= 0.0 && args.simulate_speed.is_finite()) {
        fail("--simulate-speed must be a number >= 0");
    }
    let seed = args.simulate_seed.unwrap_or_else(|| {
        let mut bytes = [0u8; 8];
        getrandom::getrandom(&mut bytes).expect("system randomness");
        u64::from_le_bytes(bytes)
    });
    virt_apiserver::simulate::Config {
        lifecycles,
        speed: args.simulate_speed,
        seed,
        nodes: args.simulate_nodes.max(1),
    }
}

/// Raises the soft limit on open files to the hard one, as Go's runtime does at start (since
/// 1.19, so kube-apiserver does): every connection and watch holds a descriptor, and the usual
/// soft limit of 1024 would cap them long before memory does.
fn raise_open_files_limit() {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let lim = getrlimit(Resource::Nofile);
    if lim.current != lim.maximum {
        let raised = Rlimit { current: lim.maximum, maximum: lim.maximum };
        if let Err(e) = setrlimit(Resource::Nofile, raised) {
            log::warn!("cannot raise the open-files limit to its hard limit: {e}");
        }
    }
}

fn main() -> std::io::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args = Args::parse();
    raise_open_files_limit();
    if let Some(command) = &args.command {
        subcommand(command);
        return Ok(());
    }
    let cfg = StoreConfig {
        path: args.database.clone(),
        etcd: (!args.etcd_servers.is_empty()).then(|| EtcdConfig {
            servers: args.etcd_servers.clone(),
            prefix: args.etcd_prefix.clone(),
            cafile: args.etcd_cafile.clone(),
            certfile: args.etcd_certfile.clone(),
            keyfile: args.etcd_keyfile.clone(),
        }),
        retention: RetentionConfig {
            window: args.history_window,
            min_revisions: args.compaction_min_retain,
            interval: args.compaction_interval.max(Duration::from_millis(10)),
        },
        watch_queue: QueueLimits { events: args.watch_queue_events, bytes: args.watch_queue_bytes },
    };
    let store = match Store::open(cfg) {
        Ok(s) => s,
        // One line naming the file and the cause.
        Err(e) => fail(e.detail()),
    };
    let simulation = args.simulate.then(|| simulation(&args));
    let listener = TcpListener::bind(&args.listen)?;
    let addr = listener.local_addr()?;
    let filters = filters(&args, &addr);
    let shutdown = ShutdownOptions {
        delay: args.shutdown_delay_duration,
        watch_grace: args.shutdown_watch_termination_grace_period,
        send_retry_after: args.shutdown_send_retry_after,
    };
    let opts = ServeOptions {
        tls: tls(&args),
        debug_panic_path: args.debug_panic_path.clone(),
        shutdown,
        read_header_timeout: args.debug_read_header_timeout,
    };
    let scheme = if opts.tls.is_some() { "https" } else { "http" };
    actix_web::rt::System::new().block_on(async move {
        let watch = WatchConfig { bookmark_interval: args.bookmark_interval };
        let mut state = AppState { watch, ..AppState::new(store) };
        state.registry = state.registry.with_implicit_namespaces(args.implicit_namespaces);
        // `--simulate-config` extends or replaces the actions as it does the lifecycles.
        if let Some(cfg) = &simulation {
            let lifecycles = std::sync::Arc::new(cfg.lifecycles.clone());
            state.registry = state.registry.with_actions(lifecycles).with_controllers(true);
        }
        // kube-apiserver's system namespaces, and those objects already live in, exist before
        // the first request is served.
        if let Err(e) = state.registry.ensure_namespaces().await {
            eprintln!("error: cannot create the namespaces: {e}");
            std::process::exit(1);
        }
        let signals = server::ShutdownSignals::install()?;
        let server = server::run_with(listener, state.clone(), filters, opts)?;
        // Tests and scripts read the bound address from this first line.
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {scheme}://{addr}")?;
        out.flush()?;
        drop(out);
        // Background work starts only once the server is listening. Compaction elects itself
        // on every backend (etcd: kube's compare-and-swap on the compaction key). The
        // collector, the namespace controller, the events' expiry and the simulated runtime
        // are singletons: they run while this process leads (always on SQLite; on etcd, while
        // it holds the election's lease), writing fenced by that leadership.
        state.store.start_compaction();
        let facts = state.store.facts();
        let (event_ttl, gc) = (args.event_ttl, args.enable_garbage_collector);
        let interval = Duration::from_secs(args.gc_interval.max(1));
        let leading = virt_apiserver::leading::while_leading(state.registry.clone(), move |r| {
            virt_apiserver::event_ttl::spawn_expiry(r.clone(), event_ttl);
            virt_apiserver::namespace_controller::spawn(r.clone(), interval);
            if let Some(cfg) = simulation.clone() {
                virt_apiserver::simulate::spawn(r.clone(), cfg);
            }
            if gc {
                virt_apiserver::gc::spawn(r, interval);
            }
        });
        tokio::task::spawn_local(leading);
        server::serve_until_signalled(server, state.lifecycle.clone(), shutdown, signals).await?;
        // Every request has finished: what was acknowledged is committed. Checkpointing
        // leaves one tidy file for the next start.
        if let Err(e) = state.store.close().await {
            log::warn!("closing the {} store: {e}", facts.name);
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
