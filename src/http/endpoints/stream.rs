//! virt-api's websocket streams (`…/virtualmachineinstances/{name}/console`): once the action's
//! checks pass, the upgrade as gorilla/websocket's `Upgrader` does it for KubeVirt
//! (client-go/kubevirt/typed/core/v1/websocket.go `NewUpgrader`: one subprotocol,
//! `plain.kubevirt.io`, echoed when the client offers it and no header otherwise; any origin),
//! then raw bytes both ways in binary frames; text frames are dropped (`binaryReader`), a close
//! frame ends the stream. A connection the guest cuts (another console attached, the guest
//! powered off) ends without a close frame, as virt-handler drops it (clients see 1006).

use actix_web::http::header::{self, HeaderValue};
use actix_web::web::Payload;
use actix_web::{HttpRequest, HttpResponse};
use futures_util::future::Either;

use crate::behaviour::guest::{Console, Guest};
use crate::http::state::AppState;
use crate::object::error::ApiError;
use std::sync::Arc;

/// How often an open console looks whether its VMI still runs.
pub(super) const LIVENESS: std::time::Duration = std::time::Duration::from_secs(1);

/// client-go/subresources/constants.go `PlainStreamProtocolName`.
const PLAIN_STREAM_PROTOCOL: &str = "plain.kubevirt.io";

/// Upgrades `req` to stream `stream` of `guest`.
pub fn serve(
    state: &AppState,
    req: &HttpRequest,
    payload: Payload,
    stream: &str,
    guest: Arc<Guest>,
) -> Result<HttpResponse, ApiError> {
    if let Some(refused) = no_handshake(req) {
        return Ok(refused);
    }
    if stream != "console" {
        return Err(ApiError::bad_request(format!("a simulated guest does not stream {stream}")));
    }
    let (res, session, messages) = upgrade(req, payload)?;
    let console = guest.attach();
    let actions = state.actions.clone();
    actix_web::rt::spawn(pump(console, session, messages, actions));
    Ok(res)
}

/// gorilla's Upgrader.returnError: a request that is no websocket handshake is a plain 400.
pub(super) fn no_handshake(req: &HttpRequest) -> Option<HttpResponse> {
    actix_http::ws::handshake(req.head()).is_err().then(|| {
        HttpResponse::BadRequest()
            .insert_header(("Sec-Websocket-Version", "13"))
            .content_type("text/plain; charset=utf-8")
            .body("Bad Request\n")
    })
}

/// The websocket upgrade, `plain.kubevirt.io` echoed when offered.
pub(super) fn upgrade(
    req: &HttpRequest,
    payload: Payload,
) -> Result<(HttpResponse, actix_ws::Session, actix_ws::MessageStream), ApiError> {
    let offered = req
        .headers()
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|p| p.trim() == PLAIN_STREAM_PROTOCOL);
    let (mut res, session, messages) =
        actix_ws::handle(req, payload).map_err(|e| ApiError::bad_request(e.to_string()))?;
    if offered {
        res.headers_mut().insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static(PLAIN_STREAM_PROTOCOL),
        );
    }
    Ok((res, session, messages))
}

/// Copies the guest's output to the client and the client's binary frames to the guest, until
/// either ends; a power request typed in goes to the guest's VMI.
async fn pump(
    mut console: Console,
    mut session: actix_ws::Session,
    mut messages: actix_ws::MessageStream,
    actions: crate::behaviour::actions::Actions,
) {
    let mut liveness = tokio::time::interval(LIVENESS);
    loop {
        let event = tokio::select! {
            out = console.output.recv() => Either::Left(out),
            input = messages.recv() => Either::Right(input),
            // A VMI stopped or deleted takes its guest down, and the connection with it.
            // (Its last words still come on `output`, then its end.)
            _ = liveness.tick() => {
                actions.still_running(&console.guest).await;
                continue;
            }
        };
        match event {
            Either::Left(Some(bytes)) => {
                if session.binary(bytes).await.is_err() {
                    return;
                }
            }
            // Cut: the session is dropped with no close frame, the connection ends.
            Either::Left(None) => return,
            Either::Right(Some(Ok(actix_ws::Message::Binary(bytes)))) => {
                if let Some(power) = console.input(&bytes) {
                    let guest = console.guest.clone();
                    if let Err(e) = actions.power(&guest, power).await {
                        log::warn!("guest {}/{}: power: {e}", guest.namespace, guest.name);
                    }
                }
            }
            Either::Right(Some(Ok(actix_ws::Message::Ping(p)))) => {
                if session.pong(&p).await.is_err() {
                    return;
                }
            }
            Either::Right(Some(Ok(actix_ws::Message::Close(reason)))) => {
                let _ = session.close(reason).await;
                return;
            }
            // Text frames are dropped; pongs and continuations carry nothing here.
            Either::Right(Some(Ok(_))) => {}
            Either::Right(Some(Err(_)) | None) => return,
        }
    }
}
