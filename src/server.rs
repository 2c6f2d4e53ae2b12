//! The HTTP server: shared state, the app (generated routes plus the plain 404), and `run`.

use std::net::TcpListener;
use std::time::Duration;

use actix_web::{web, App, HttpResponse, HttpServer};

use crate::error::ApiError;
use crate::store::Store;

/// Largest request body (kube-apiserver's `MaxRequestBodyBytes`).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub watch: WatchConfig,
}

impl AppState {
    /// The state with default watch settings.
    pub fn new(store: Store) -> AppState {
        AppState { store, watch: WatchConfig::default() }
    }
}

/// How watch streams behave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WatchConfig {
    /// Between periodic BOOKMARK events (kube's cacher: 1 minute).
    pub bookmark_interval: Duration,
}

impl Default for WatchConfig {
    fn default() -> WatchConfig {
        WatchConfig { bookmark_interval: Duration::from_secs(60) }
    }
}

/// Prometheus text, under kube-apiserver's metric names: open watches and watchers cut off for
/// falling behind. Tests use it to check that dropped watches leave nothing behind.
async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    let stats = state.store.watch_stats();
    let body = format!(
        "# HELP apiserver_registered_watchers Number of currently registered watchers.\n\
         # TYPE apiserver_registered_watchers gauge\n\
         apiserver_registered_watchers {}\n\
         # HELP apiserver_terminated_watchers_total Watchers closed for falling too far behind.\n\
         # TYPE apiserver_terminated_watchers_total counter\n\
         apiserver_terminated_watchers_total {}\n",
        stats.watchers, stats.terminated
    );
    HttpResponse::Ok().content_type("text/plain; version=0.0.4").body(body)
}

/// Registers everything the server answers on an actix app; tests use the same function.
pub fn configure(cfg: &mut web::ServiceConfig) {
    crate::generated::configure(cfg);
}

async fn not_found() -> HttpResponse {
    actix_web::ResponseError::error_response(&ApiError::PathNotFound)
}

/// Starts serving on `listener`; the returned server runs until stopped.
pub fn run(listener: TcpListener, state: AppState) -> std::io::Result<actix_web::dev::Server> {
    let data = web::Data::new(state);
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
            .route("/metrics", web::get().to(metrics))
            .configure(configure)
            .default_service(web::to(not_found))
    })
    .listen(listener)?
    .run();
    Ok(server)
}
