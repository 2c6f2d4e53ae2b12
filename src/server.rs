//! The HTTP server: shared state, the app (generated routes plus the plain 404), and `run`.

use std::net::TcpListener;

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

/// Registers everything the server answers on an actix app; tests use the same function.
pub fn configure(cfg: &mut web::ServiceConfig) {
    crate::generated::configure(cfg);
}

async fn not_found() -> HttpResponse {
    actix_web::ResponseError::error_response(&ApiError::PathNotFound)
}

/// Starts serving on `listener`; the returned server runs until stopped.
pub fn run(
    listener: TcpListener,
    state: AppState,
    filters: Filters,
) -> std::io::Result<actix_web::dev::Server> {
    let data = web::Data::new(state);
    let filters = web::Data::new(filters);
    let server = HttpServer::new(move || {
        App::new()
            .wrap(actix_web::middleware::from_fn(crate::filters::chain))
            .app_data(data.clone())
            .app_data(filters.clone())
            .app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
            .configure(configure)
            .default_service(web::to(not_found))
    })
    .listen(listener)?
    .run();
    Ok(server)
}
