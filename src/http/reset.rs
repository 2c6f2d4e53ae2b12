//! `POST /reset`: the store put back to the fixtures (`store::Store::reset`), for a harness
//! between tests. With authentication on, only `system:masters` may (403 otherwise, kube's
//! Forbidden Status for a non-resource path, AS pkg/endpoints/handlers/responsewriters/errors.go
//! `forbiddenMessage`); without, the loopback-only server lets everyone, as it lets every write.

use actix_web::{web, HttpMessage, HttpRequest, HttpResponse};
use serde_json::json;

use crate::http::authn::User;
use crate::http::authz::forbidden_message;
use crate::http::filters::Filters;
use crate::http::request_info::RequestInfo;
use crate::http::state::AppState;
use crate::object::error::ApiError;

/// The group whose members may reset (kube's `user.SystemPrivilegedGroup`).
pub const MASTERS: &str = "system:masters";

/// Resets the store to the fixtures; answers a `Success` Status whose `metadata.resourceVersion`
/// is the revision reached (every older one is now 410 Expired).
pub async fn reset(state: &AppState, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let authenticates = req.app_data::<web::Data<Filters>>().is_some_and(|f| f.authenticates());
    if authenticates {
        let user = req.extensions().get::<User>().cloned().unwrap_or_else(User::anonymous);
        if !user.groups.iter().any(|g| g == MASTERS) {
            let info = RequestInfo::parse(req.method().as_str(), req.path(), req.query_string());
            return Err(ApiError::Forbidden {
                message: forbidden_message(&user, &info),
                name: String::new(),
                group: String::new(),
                resource: String::new(),
                causes: Vec::new(),
            });
        }
    }
    let Some(saved) = &state.fixtures else {
        return Err(ApiError::Unavailable("this server keeps no state to reset to".into()));
    };
    let started = std::time::Instant::now();
    let stats = state.registry.reset(saved).await?;
    log::info!(
        "reset to the fixtures at revision {} in {:?}: {} created, {} updated, {} deleted",
        stats.revision,
        started.elapsed(),
        stats.created,
        stats.updated,
        stats.deleted
    );
    Ok(HttpResponse::Ok().json(json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": stats.revision.to_string()},
        "status": "Success",
        "message": format!(
            "reset to the fixtures: {} created, {} updated, {} deleted",
            stats.created, stats.updated, stats.deleted
        ),
    })))
}
