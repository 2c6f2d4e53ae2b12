//! KubeVirt's action API over HTTP (`PUT …/{name}/start`, `GET …/{name}/guestosinfo`): the
//! behaviour layer runs the action (`behaviour::actions`); a PUT answers its code with an empty body, a
//! read its JSON answer, a refusal virt-api's Status (or its plain text).

use actix_web::http::StatusCode;
use actix_web::web::{Bytes, Payload};
use actix_web::{HttpRequest, HttpResponse};

use super::Target;
use crate::behaviour::actions::Acted;
use crate::http::state::AppState;
use crate::object::error::ApiError;
use crate::resource::ResourceInfo;

/// `PUT …/<action>` with its optional options body.
pub async fn action(
    state: &AppState,
    res: &'static ResourceInfo,
    name: &'static str,
    target: Target,
    _req: &HttpRequest,
    body: Bytes,
) -> Result<HttpResponse, ApiError> {
    answer(state.actions.act(res, name, &target, &body).await?)
}

/// `GET …/<action>`: a guest read, or a stream: its checks, then the upgrade.
pub async fn action_read(
    state: &AppState,
    res: &'static ResourceInfo,
    name: &'static str,
    target: Target,
    args: &[(&str, &str)],
    req: &HttpRequest,
    payload: Payload,
) -> Result<HttpResponse, ApiError> {
    match state.actions.act(res, name, &target, &[]).await? {
        // A read of the guest's display, not a stream (pkg/virt-api/rest/vnc.go).
        Acted::Stream { stream, guest, .. } if stream == "vnc/screenshot" => {
            Ok(super::vnc::screenshot(&guest))
        }
        Acted::Stream { stream, guest, .. } if stream == "vnc" => {
            super::vnc::serve(state, req, payload, guest)
        }
        Acted::Stream { stream, guest, object } if stream == "portforward" => {
            super::portforward::serve(state, req, payload, args, guest, &object)
        }
        Acted::Stream { stream, guest, .. } => {
            super::stream::serve(state, req, payload, &stream, guest)
        }
        acted => answer(acted),
    }
}

fn answer(acted: Acted) -> Result<HttpResponse, ApiError> {
    Ok(match acted {
        Acted::Done(code) => {
            HttpResponse::build(StatusCode::from_u16(code).unwrap_or(StatusCode::OK)).finish()
        }
        Acted::Answer(v) => HttpResponse::Ok().json(v),
        Acted::Stream { .. } => unreachable!("action_read serves streams"),
    })
}
