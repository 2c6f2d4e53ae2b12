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

use crate::behaviour::actions::Actions;
use crate::behaviour::guest::shell::Power;
use crate::behaviour::guest::{Console, Guest};
use crate::http::state::AppState;
use crate::object::error::ApiError;
use bytes::Bytes;
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
            Either::Right(input) => match frame(&mut session, input).await {
                Frame::Bytes(bytes) => power(&actions, &console.guest, console.input(&bytes)).await,
                Frame::Nothing => {}
                Frame::End => return,
            },
        }
    }
}

/// What a client's websocket message is to a stream.
pub(super) enum Frame {
    /// A binary frame's bytes.
    Bytes(Bytes),
    Nothing,
    /// A close frame (answered) or the connection gone.
    End,
}

/// Reads the client's message `input`: pings answered, a close frame answered and the end.
pub(super) async fn frame(
    session: &mut actix_ws::Session,
    input: Option<Result<actix_ws::Message, actix_ws::ProtocolError>>,
) -> Frame {
    match input {
        Some(Ok(actix_ws::Message::Binary(bytes))) => Frame::Bytes(bytes),
        Some(Ok(actix_ws::Message::Ping(p))) => match session.pong(&p).await {
            Ok(()) => Frame::Nothing,
            Err(_) => Frame::End,
        },
        Some(Ok(actix_ws::Message::Close(reason))) => {
            let _ = session.clone().close(reason).await;
            Frame::End
        }
        // Text frames are dropped; pongs and continuations carry nothing here.
        Some(Ok(_)) => Frame::Nothing,
        Some(Err(_)) | None => Frame::End,
    }
}

/// A power request typed into `guest` goes to its VMI.
pub(super) async fn power(actions: &Actions, guest: &Arc<Guest>, request: Option<Power>) {
    if let Some(p) = request {
        if let Err(e) = actions.power(guest, p).await {
            log::warn!("guest {}/{}: power: {e}", guest.namespace, guest.name);
        }
    }
}
