//! The HTTP server: the app (generated routes plus the plain 404) and `run`.

use std::any::Any;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::Extensions;
use actix_web::{web, App, HttpResponse, HttpServer};

use crate::http::filters::Filters;
pub use crate::http::shutdown::{Phase, Phases};
pub use crate::http::state::{AppState, WatchConfig};
use crate::object::error::ApiError;

use crate::object::limits::MAX_BODY_BYTES;

/// On TLS connections, keeps the user a verified client certificate names
/// (`HttpRequest::conn_data`).
fn on_connect(conn: &dyn Any, data: &mut Extensions) {
    crate::http::tls::on_connect(conn, data);
}

/// Prometheus text: open watches and watchers cut off for falling behind, under
/// kube-apiserver's names (tests use them to check that dropped watches leave nothing behind),
/// then whatever the storage backend reports of itself (SQLite: committed writes and the
/// transactions that held them, whose ratio is the group commit's batch size).
async fn metrics(state: web::Data<AppState>, filters: Option<web::Data<Filters>>) -> HttpResponse {
    use std::fmt::Write as _;
    let stats = state.store.watch_stats();
    let (read_only, mutating) = filters.map(|f| f.in_flight()).unwrap_or_default();
    let mut body = format!(
        "# HELP apiserver_current_inflight_requests Requests in flight under the in-flight limits, \
         by kind (this scrape counts itself).\n\
         # TYPE apiserver_current_inflight_requests gauge\n\
         apiserver_current_inflight_requests{{request_kind=\"mutating\"}} {mutating}\n\
         apiserver_current_inflight_requests{{request_kind=\"readOnly\"}} {read_only}\n"
    );
    let _ = write!(
        body,
        "# HELP apiserver_registered_watchers Number of currently registered watchers.\n\
         # TYPE apiserver_registered_watchers gauge\n\
         apiserver_registered_watchers {}\n\
         # HELP apiserver_terminated_watchers_total Watchers closed for falling too far behind.\n\
         # TYPE apiserver_terminated_watchers_total counter\n\
         apiserver_terminated_watchers_total {}\n",
        stats.watchers, stats.terminated
    );
    if let Some(faults) = &state.faults {
        body.push_str(
            "# HELP virt_apiserver_faults_fired_total Requests a Fault fired on, by Fault.\n\
             # TYPE virt_apiserver_faults_fired_total counter\n",
        );
        for (name, n) in faults.fired_total() {
            let _ = writeln!(body, "virt_apiserver_faults_fired_total{{fault={name:?}}} {n}");
        }
    }
    for m in state.store.metrics() {
        let _ = write!(
            body,
            "# HELP {name} {}\n# TYPE {name} {}\n{name} {}\n",
            m.help,
            m.kind.as_str(),
            m.value,
            name = m.name
        );
    }
    HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(body)
}

/// Registers everything the server answers on an actix app; tests use the same function.
pub fn configure(cfg: &mut web::ServiceConfig) {
    crate::http::routes::configure(cfg);
}

async fn not_found() -> HttpResponse {
    actix_web::ResponseError::error_response(&ApiError::PathNotFound)
}

/// How to serve, beyond the listener, the state and the filter chain.
#[derive(Clone, Default)]
pub struct ServeOptions {
    /// Serve HTTPS with this configuration (client certificates included) instead of HTTP.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Test hook: a GET of this path panics in its handler, to prove panics become 500s.
    /// Set only by the hidden `--debug-panic-path` flag.
    pub debug_panic_path: Option<String>,
    pub shutdown: ShutdownOptions,
    /// How long a client may take to send a request's head; `None`: kube's 32 s. Shorter only
    /// through the hidden `--debug-read-header-timeout` flag, for tests.
    pub read_header_timeout: Option<Duration>,
}

/// kube-apiserver's `http.Server` (secure_serving.go): `ReadHeaderTimeout` 32 s ("just shy of
/// requestTimeoutUpperBound"), so a head sent a byte at a time cannot hold a connection, and
/// `IdleTimeout` 90 s (http.DefaultTransport's keep-alive) for idle keep-alive connections.
pub const READ_HEADER_TIMEOUT: Duration = Duration::from_secs(32);
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// How the server stops on SIGTERM: kube-apiserver's flags.
#[derive(Debug, Clone, Copy, Default)]
pub struct ShutdownOptions {
    /// `--shutdown-delay-duration`: `/readyz` fails, everything is still served.
    pub delay: Duration,
    /// `--shutdown-watch-termination-grace-period`: watches end within it.
    pub watch_grace: Duration,
    /// `--shutdown-send-retry-after`: after the delay, keep listening and answer new requests
    /// 429 until those in flight have drained.
    pub send_retry_after: bool,
}

/// What stops the server: SIGTERM and SIGINT, caught from the moment this is made (made before
/// the server says where it listens, so a signal sent as soon as it does is never the default
/// action, death); or, for a server inside another program, a `StopHandle`.
pub struct ShutdownSignals {
    requests: tokio::sync::mpsc::UnboundedReceiver<()>,
    /// A second signal exits the process; a second stop request from a handle does nothing.
    exit_on_second: bool,
}

/// Asks a server started with `ShutdownSignals::handle` to stop, as one signal would; dropped,
/// it asks too.
#[derive(Clone)]
pub struct StopHandle(tokio::sync::mpsc::UnboundedSender<()>);

impl StopHandle {
    pub fn stop(&self) {
        let _ = self.0.send(());
    }
}

impl ShutdownSignals {
    pub fn install() -> std::io::Result<ShutdownSignals> {
        use actix_web::rt::signal::unix::{signal, SignalKind};
        let (mut term, mut int) =
            (signal(SignalKind::terminate())?, signal(SignalKind::interrupt())?);
        let (tx, requests) = tokio::sync::mpsc::unbounded_channel();
        actix_web::rt::spawn(async move {
            loop {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
                if tx.send(()).is_err() {
                    break;
                }
            }
        });
        Ok(ShutdownSignals { requests, exit_on_second: true })
    }

    /// Stops the server when the handle says so, or when every handle is dropped; no signal
    /// handler is installed.
    pub fn handle() -> (StopHandle, ShutdownSignals) {
        let (tx, requests) = tokio::sync::mpsc::unbounded_channel();
        (StopHandle(tx), ShutdownSignals { requests, exit_on_second: false })
    }
}

/// Runs `server` until SIGTERM or SIGINT (or its stop handle), then stops as kube-apiserver
/// does: `/readyz` fails at once, requests are served for the delay, then the listener closes,
/// watches end cleanly (each at its turn within the grace period), in-flight requests finish and
/// idle connections close. A second signal exits at once with status 1 (kube's
/// `SetupSignalHandler`). Returns once every connection is done; the caller then closes the
/// store.
pub async fn serve_until_signalled(
    server: actix_web::dev::Server,
    phases: Phases,
    opts: ShutdownOptions,
    signals: ShutdownSignals,
) -> std::io::Result<()> {
    let ShutdownSignals { mut requests, exit_on_second } = signals;
    let handle = server.handle();
    let running = actix_web::rt::spawn(server);
    // A dropped handle stops too.
    requests.recv().await;
    phases.initiate_shutdown();
    log::info!(
        "[graceful-termination] shutdown initiated: /readyz fails; serving for {:?}",
        opts.delay
    );
    if exit_on_second {
        actix_web::rt::spawn(async move {
            if requests.recv().await.is_some() {
                eprintln!("error: a second signal: exiting without finishing the shutdown");
                std::process::exit(1);
            }
        });
    }
    tokio::time::sleep(opts.delay).await;
    phases.set_send_retry_after(opts.send_retry_after);
    phases.stop_accepting(opts.watch_grace);
    log::info!(
        "[graceful-termination] not accepting new requests; ending {} watches within {:?}",
        phases.open_watches(),
        opts.watch_grace
    );
    if opts.send_retry_after {
        // Every request has its deadline (`--request-timeout`), so this ends.
        phases.requests_drained().await;
        log::info!("[graceful-termination] requests in flight drained; closing the listener");
    }
    handle.stop(true).await;
    running.await.map_err(std::io::Error::other)?
}

/// Runs `work` to its end on a new actix system (a current-thread runtime and its `LocalSet`),
/// where the server, its signals and the singletons' local tasks run.
pub fn block_on<F: std::future::Future>(work: F) -> F::Output {
    actix_web::rt::System::new().block_on(work)
}

/// Starts serving plain HTTP on `listener`; the returned server runs until stopped.
pub fn run(
    listener: TcpListener,
    state: AppState,
    filters: Filters,
) -> std::io::Result<actix_web::dev::Server> {
    run_with(listener, state, filters, ServeOptions::default())
}

/// Starts serving on `listener` as `opts` says.
pub fn run_with(
    listener: TcpListener,
    state: AppState,
    filters: Filters,
    opts: ServeOptions,
) -> std::io::Result<actix_web::dev::Server> {
    let data = web::Data::new(state);
    // kube's `--request-timeout` also bounds its graceful shutdown: in-flight requests get this
    // long to finish once the listener is closed.
    let request_timeout = filters.request_timeout;
    let filters = web::Data::new(filters);
    let panic_path = opts.debug_panic_path.clone();
    let server = HttpServer::new(move || {
        let panic_path = panic_path.clone();
        let app = App::new()
            .wrap(actix_web::middleware::from_fn(crate::http::filters::chain))
            // Outermost: compresses whatever the chain answers, errors included.
            .wrap(actix_web::middleware::from_fn(crate::http::compress::gzip_large_bodies))
            .app_data(data.clone())
            .app_data(filters.clone())
            .app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
            .route("/metrics", web::get().to(metrics))
            .configure(move |cfg| {
                if let Some(p) = panic_path {
                    cfg.route(&p, web::get().to(debug_panic));
                }
            })
            .configure(configure)
            .default_service(web::to(not_found));
        crate::http::outermost::catch_panics(app)
    })
    .on_connect(on_connect)
    // The shutdown is `serve_until_signalled`'s, on kube's terms, not actix's own.
    .disable_signals()
    .shutdown_timeout((request_timeout + opts.shutdown.watch_grace).as_secs_f64().ceil() as u64)
    // As Go's net/http (and so kube-apiserver): without it, the last small segment of a
    // response or a watch event waits for the client's delayed ACK (~40 ms on Linux).
    .tcp_nodelay(true)
    // As Go's net/http, whose background read cancels a request when its client closes the
    // connection: a client that goes away (even only its sending half) ends the connection,
    // and so its watch, at once. actix otherwise notices only when it next writes
    // (actix-web#1313), so an idle watch would live on until its timeout.
    .h1_allow_half_closed(false)
    // actix answers 408 and closes when the head is not all there in time (its default, 5 s,
    // is stricter than Go's); idle keep-alive connections close after kube's idle timeout.
    .client_request_timeout(opts.read_header_timeout.unwrap_or(READ_HEADER_TIMEOUT))
    .keep_alive(actix_web::http::KeepAlive::Timeout(IDLE_TIMEOUT));
    let server = match opts.tls {
        None => server.listen(listener)?,
        Some(config) => server.listen_rustls_0_23(listener, (*config).clone())?,
    };
    Ok(server.run())
}

async fn debug_panic() -> HttpResponse {
    panic!("--debug-panic-path was requested");
}
