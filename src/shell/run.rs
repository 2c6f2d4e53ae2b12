//! A complete server from a `Config`: the store, the listener, the HTTP server, the background
//! work (the compactor, and the singletons of each leadership term), and the shutdown on
//! SIGTERM or SIGINT, after which the store is closed.

use std::io::Write;
use std::net::TcpListener;

use crate::behaviour::{simulate, Behaviour};
use crate::controllers::{
    apiserver_service, endpoints, event_ttl, gc, leading, namespaces, podgc, protection, scheduler,
    volumes,
};
use crate::http::faults::{self, Faults};
use crate::http::server::{self, AppState, ShutdownSignals, StopHandle};
use crate::shell::config::Config;
use crate::shell::fixtures;
use crate::store::Store;

/// Why the server did not start or did not run to its clean end.
#[derive(Debug)]
pub enum Error {
    /// A start refused, in one line for the operator: the store, the namespaces, the address.
    Start(String),
    /// Binding, serving or writing the address line failed.
    Io(std::io::Error),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Start(msg) => f.write_str(msg),
            Error::Io(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Error {}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Error {
        Error::Io(e)
    }
}

/// Runs the server `config` describes until a signal has stopped it and the store is closed.
/// Blocks; the server runs on an actix system of its own. Once it listens it writes
/// `listening on <scheme>://<addr>` as the first line of stdout, where tests and scripts read
/// the bound address.
pub fn run(config: Config) -> Result<(), Error> {
    serve(config, None, |url| {
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening on {url}")?;
        out.flush()
    })
}

/// A complete server running inside this process, on a thread (and actix system) of its own,
/// as `run` runs one, but with no signal handlers and nothing written to stdout; stopped (as
/// SIGTERM stops the binary) by `stop` or on drop.
pub struct Running {
    url: String,
    stop: StopHandle,
    thread: Option<std::thread::JoinHandle<Result<(), Error>>>,
}

/// Starts the server `config` describes in this process; returns once it listens.
pub fn start(config: Config) -> Result<Running, Error> {
    let (stop, signals) = ShutdownSignals::handle();
    let (tx, listening) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new().name("virt-apiserver".into()).spawn(move || {
        serve(config, Some(signals), move |url| {
            let _ = tx.send(url.to_string());
            Ok(())
        })
    })?;
    match listening.recv() {
        Ok(url) => Ok(Running { url, stop, thread: Some(thread) }),
        // It ended before it listened: its error says why.
        Err(_) => match thread.join() {
            Ok(Err(e)) => Err(e),
            Ok(Ok(())) => Err(Error::Start("the server ended before it listened".into())),
            Err(_) => Err(Error::Start("the server panicked before it listened".into())),
        },
    }
}

impl Running {
    /// `<scheme>://<addr>`, as the binary's first line names it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Stops the server as SIGTERM does and waits until its store is closed.
    pub fn stop(mut self) -> Result<(), Error> {
        self.stop.stop();
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(done)) => done,
            Some(Err(_)) => Err(Error::Start("the server panicked".into())),
            None => Ok(()),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.stop();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The server until `signals` (SIGTERM and SIGINT when none) stop it; `listening` is told
/// `<scheme>://<addr>` once it listens.
fn serve(
    config: Config,
    signals: Option<ShutdownSignals>,
    listening: impl FnOnce(&str) -> std::io::Result<()>,
) -> Result<(), Error> {
    raise_open_files_limit();
    // Opened before the async runtime exists: the etcd backend starts (and on failure drops) a
    // runtime of its own.
    let store = Store::open(config.store.clone()).map_err(|e| Error::Start(e.detail()))?;
    let listener = TcpListener::bind(&config.listen)?;
    let addr = listener.local_addr()?;
    config.check_listener(&addr).map_err(Error::Start)?;
    if !config.filters.authenticates() {
        let scope = if addr.ip().is_loopback() { "loopback only" } else { "NOT loopback" };
        eprintln!(
            "warning: no authentication configured: serving {addr} ({scope}); every request is allowed as system:anonymous"
        );
    }
    let scheme = if config.serve.tls.is_some() { "https" } else { "http" };
    server::block_on(async move {
        let Config { filters, serve, watch, simulation, fixtures, .. } = config;
        // `--simulate-config` extends or replaces virt-api's webhooks and actions as it does
        // the controllers' lifecycles.
        let behaviour = match &simulation {
            Some(cfg) => Behaviour::simulated(cfg.lifecycles.clone(), cfg.seed),
            None => Behaviour::builtin(),
        };
        let registry = crate::registry::Registry::new(store.clone())
            .with_implicit_namespaces(config.implicit_namespaces)
            .with_address_ranges(config.service_ranges);
        // The kubelet's log reader: the simulated containers' lines, or none.
        let registry = behaviour.logging(registry);
        let mut state = AppState { watch, ..AppState::new(store, &behaviour, registry) };
        state.faults = Faults::new(state.registry.clone(), config.fault_seed);
        // kube-apiserver's system namespaces, and those objects already live in, exist before
        // the first request is served.
        if let Err(e) = state.registry.ensure_namespaces().await {
            return Err(Error::Start(format!("cannot create the namespaces: {e}")));
        }
        // `--faults`: in force before the first request is served.
        faults::load(&state.registry, &config.faults).await.map_err(Error::Start)?;
        // kube-apiserver's own Service holds the range's first address before anyone asks.
        if let Err(e) = apiserver_service::ensure(&state.registry, addr.port()).await {
            log::warn!("cannot create the default/kubernetes service: {e}");
        }
        // The fixtures, before anyone is served; the state reached is what a reset puts back.
        fixtures::apply(&state.registry, &fixtures).await.map_err(Error::Start)?;
        let saved = state
            .store
            .save()
            .map_err(|e| Error::Start(format!("cannot save the fixtures: {e}")))?;
        state.fixtures = Some(std::sync::Arc::new(saved));
        let shutdown = serve.shutdown;
        let signals = match signals {
            Some(s) => s,
            None => ShutdownSignals::install()?,
        };
        let http = server::run_with(listener, state.clone(), filters, serve)?;
        listening(&format!("{scheme}://{addr}"))?;
        // Background work starts only once the server is listening. Compaction elects itself
        // on every backend (etcd: kube's compare-and-swap on the compaction key). The
        // collector, the namespace, endpoints and volume controllers, the events' expiry and the
        // simulated runtime are singletons: they run while this process leads (always on
        // SQLite; on etcd, while it holds the election's lease), writing fenced by that
        // leadership.
        state.store.start_compaction();
        let facts = state.store.facts();
        let (ttl, collect, interval) =
            (config.event_ttl, config.garbage_collector, config.gc_interval);
        let term = leading::while_leading(state.registry.clone(), move |r| {
            event_ttl::spawn_expiry(r.clone(), ttl);
            namespaces::spawn(r.clone(), interval);
            endpoints::spawn(r.clone());
            volumes::spawn(r.clone());
            protection::spawn(r.clone());
            podgc::spawn(r.clone());
            if let Some(cfg) = simulation.clone() {
                // The simulated cluster's kube-scheduler places pods on its nodes.
                scheduler::spawn(r.clone(), cfg.seed);
                simulate::spawn(r.clone(), cfg);
            }
            if collect {
                gc::spawn(r, interval);
            }
        });
        tokio::task::spawn_local(term);
        // Every process counts the Faults its own requests meet.
        if let Some(faults) = &state.faults {
            faults.spawn_status_writer();
        }
        server::serve_until_signalled(http, state.phases.clone(), shutdown, signals).await?;
        // Every request has finished: what was acknowledged is committed. Checkpointing
        // leaves one tidy file for the next start.
        if let Err(e) = state.store.close().await {
            log::warn!("closing the {} store: {e}", facts.name);
        }
        Ok(())
    })
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
