//! The HTTP server: shared state, the app (generated routes plus the plain 404), and `run`.

use std::net::TcpListener;
use std::sync::Arc;

use actix_web::{web, App, HttpResponse, HttpServer};

use crate::error::ApiError;
use crate::filters::Filters;
use crate::store::Store;

/// Largest request body (kube-apiserver's `MaxRequestBodyBytes`).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// What every handler shares.
#[derive(Clone)]
pub struct AppState {
    pub store: Store,
}

/// How to serve, beyond the listener, the state and the filter chain.
#[derive(Clone, Default)]
pub struct ServeOptions {
    /// Serve HTTPS with this configuration (client certificates included) instead of HTTP.
    pub tls: Option<Arc<rustls::ServerConfig>>,
    /// Test hook: a GET of this path panics in its handler, to prove panics become 500s.
    /// Set only by the hidden `--debug-panic-path` flag.
    pub debug_panic_path: Option<String>,
}

/// Registers everything the server answers on an actix app; tests use the same function.
pub fn configure(cfg: &mut web::ServiceConfig) {
    crate::generated::configure(cfg);
}

async fn not_found() -> HttpResponse {
    actix_web::ResponseError::error_response(&ApiError::PathNotFound)
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
    let filters = web::Data::new(filters);
    let panic_path = opts.debug_panic_path.clone();
    let server = HttpServer::new(move || {
        let panic_path = panic_path.clone();
        let app = App::new()
            .wrap(actix_web::middleware::from_fn(crate::filters::chain))
            .app_data(data.clone())
            .app_data(filters.clone())
            .app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
            .configure(move |cfg| {
                if let Some(p) = panic_path {
                    cfg.route(&p, web::get().to(debug_panic));
                }
            })
            .configure(configure)
            .default_service(web::to(not_found));
        crate::recover::catch_panics(app)
    });
    let server = match opts.tls {
        None => server.listen(listener)?,
        Some(config) => server
            .on_connect(crate::tls::on_connect)
            .listen_rustls_0_23(listener, (*config).clone())?,
    };
    Ok(server.run())
}

async fn debug_panic() -> HttpResponse {
    panic!("--debug-panic-path was requested");
}
