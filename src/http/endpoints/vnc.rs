//! virt-api's `vnc` stream and `vnc/screenshot` read of a VMI's display (the guest's tty1,
//! `behaviour::guest::vnc` speaking QEMU's RFB over it). The upgrade is the console's
//! (`stream::upgrade`); one VNC connection per VMI, a new one cutting the old as virt-handler
//! does, unless `preserveSession=true` (pkg/virt-api/rest/vnc.go), when an active one makes
//! virt-handler refuse with 503 `Active VNC connection. Request denied.` and virt-api answer
//! its dial error as a 500 (pkg/virt-api/rest/dialers.go `handlerDial.Dial`:
//! `NewInternalError(EnrichError(err, resp))`; client-go/kubevirt/typed/core/v1/async.go).

use actix_web::web::{Payload, Query};
use actix_web::{HttpRequest, HttpResponse};
use futures_util::future::Either;
use serde::Deserialize;
use std::sync::Arc;

use super::stream::{frame, power, Frame};
use crate::behaviour::actions::Actions;
use crate::behaviour::guest::vnc::Rfb;
use crate::behaviour::guest::{screen, Display, Guest};
use crate::http::state::AppState;
use crate::object::error::ApiError;

/// virt-handler's refusal as virt-api passes it on.
const ACTIVE: &str = "Can't connect to websocket (503): websocket: bad handshake: application info: Active VNC connection. Request denied.";

#[derive(Deserialize)]
struct VncQuery {
    /// Go's strconv.ParseBool: anything else reads false (vnc.go logs a warning).
    #[serde(rename = "preserveSession")]
    preserve: Option<String>,
}

fn parse_bool(v: Option<&str>) -> bool {
    matches!(v, Some("1" | "t" | "T" | "TRUE" | "true" | "True"))
}

/// `GET …/vnc`: the display, streamed as RFB in binary frames.
pub fn serve(
    state: &AppState,
    req: &HttpRequest,
    payload: Payload,
    guest: Arc<Guest>,
) -> Result<HttpResponse, ApiError> {
    let q = Query::<VncQuery>::from_query(req.query_string()).ok();
    let preserve = parse_bool(q.as_ref().and_then(|q| q.preserve.as_deref()));
    // virt-api dials virt-handler (which refuses, or cuts the old session) before it upgrades.
    let Some(display) = guest.display(preserve) else {
        return Err(ApiError::Internal(ACTIVE.to_string()));
    };
    if let Some(refused) = super::stream::no_handshake(req) {
        return Ok(refused);
    }
    let (res, session, messages) = super::stream::upgrade(req, payload)?;
    actix_web::rt::spawn(pump(display, session, messages, state.actions.clone()));
    Ok(res)
}

/// `GET …/vnc/screenshot`: the display as a PNG (virt-api copies virt-handler's bytes and
/// sets no Content-Type, so Go sniffs `image/png`: pkg/virt-api/rest/subresource.go
/// `httpGetRequestBinaryHandler`). `moveCursor` is not passed on; a text screen has no
/// cursor to wake.
pub fn screenshot(guest: &Guest) -> HttpResponse {
    HttpResponse::Ok().content_type("image/png").body(screen::png(&guest.screenshot()))
}

async fn pump(
    display: Display,
    mut session: actix_ws::Session,
    mut messages: actix_ws::MessageStream,
    actions: Actions,
) {
    let domain = format!("{}_{}", display.guest.namespace, display.guest.name);
    let (mut rfb, hello) = Rfb::new(&domain);
    if session.binary(hello).await.is_err() {
        return;
    }
    let mut changed = display.changed.clone();
    let mut liveness = tokio::time::interval(super::stream::LIVENESS);
    loop {
        let event = tokio::select! {
            c = changed.changed() => Either::Left(c.is_ok()),
            input = messages.recv() => Either::Right(input),
            _ = liveness.tick() => {
                actions.still_running(&display.guest).await;
                Either::Left(true)
            }
        };
        match event {
            Either::Left(_) => {}
            Either::Right(input) => match frame(&mut session, input).await {
                Frame::Bytes(bytes) => {
                    // QEMU drops a client that breaks the protocol.
                    let Ok((out, typed)) = rfb.feed(&bytes) else { return };
                    if !out.is_empty() && session.binary(out).await.is_err() {
                        return;
                    }
                    power(&actions, &display.guest, display.input(&typed)).await;
                }
                Frame::Nothing => {}
                Frame::End => return,
            },
        }
        // Cut, or the guest went down: dropped with no close frame, as virt-handler drops it.
        let Some(text) = display.text() else { return };
        if let Some(update) = rfb.update(&text) {
            if session.binary(update).await.is_err() {
                return;
            }
        }
    }
}
