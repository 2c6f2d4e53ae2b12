//! Health endpoints: `/healthz`, `/livez`, `/readyz` and the store's write probe (A.16).

use std::time::Duration;

use actix_web::{HttpRequest, HttpResponse};

use crate::http::server::AppState;
use crate::object::error::ApiError;

/// The write probe's deadline.
const PROBE_DEADLINE: Duration = Duration::from_secs(1);

/// The process is up and serving.
pub async fn ping(_state: &AppState, _req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    Ok(HttpResponse::Ok().content_type("text/plain; charset=utf-8").body("ok"))
}

/// 200 when a write goes through the store within the deadline, else 500; no body either way.
pub async fn store_probe(state: &AppState, _req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    match tokio::time::timeout(PROBE_DEADLINE, state.store.probe()).await {
        Ok(Ok(())) => Ok(HttpResponse::Ok().finish()),
        Ok(Err(e)) => {
            log::warn!("store health probe failed: {e:?}");
            Ok(HttpResponse::InternalServerError().finish())
        }
        Err(_) => {
            log::warn!("store health probe did not finish within {PROBE_DEADLINE:?}");
            Ok(HttpResponse::InternalServerError().finish())
        }
    }
}
