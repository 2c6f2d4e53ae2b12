//! virt-api's port-forward (`…/portforward/{port}[/{protocol}]`, pkg/virt-api/rest/
//! portforward.go, dialers.go, streamer.go): once the action's checks pass, virt-api dials
//! the VMI's first interface itself (`netDial`) and only then upgrades; the websocket's binary
//! frames carry the connection's bytes both ways, and virt-api pings the client every second
//! (`keepAliveClientStream`), dropping a client silent for a minute. Port 22 (TCP) is the
//! simulated guest's sshd once it has booted; every other port refuses, as a guest with nothing
//! listening does.

use std::sync::Arc;
use std::time::{Duration, Instant};

use actix_web::web::Payload;
use actix_web::{HttpRequest, HttpResponse};
use bytes::Bytes;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::stream::{frame, no_handshake, power, upgrade, Frame, LIVENESS};
use crate::behaviour::guest::{ssh, Guest};
use crate::http::state::AppState;
use crate::object::error::ApiError;

/// streamer.go: a ping every second ("keep alive"), a client silent this long is gone.
const PING_EVERY: Duration = Duration::from_secs(1);
const READ_DEADLINE: Duration = Duration::from_secs(60);

/// The guest's sshd.
const SSH_PORT: &str = "22";

pub fn serve(
    state: &AppState,
    req: &HttpRequest,
    payload: Payload,
    args: &[(&str, &str)],
    guest: Arc<Guest>,
    vmi: &Value,
) -> Result<HttpResponse, ApiError> {
    let arg = |n: &str| args.iter().find(|(k, _)| *k == n).map(|(_, v)| *v);
    let port = arg("port").unwrap_or_default();
    let protocol = arg("protocol").unwrap_or("tcp");
    // portforward.go: the port must be a number, the protocol tcp or udp.
    if port.parse::<u16>().is_err() {
        return Err(ApiError::bad_request(format!("invalid port: {port}")));
    }
    if !matches!(protocol, "tcp" | "udp") {
        return Err(ApiError::bad_request(format!("unsupported protocol: {protocol}")));
    }
    let ip = vmi["status"]["interfaces"][0]["ipAddress"].as_str().unwrap_or_default();
    let host = match ip.contains(':') {
        true => format!("[{ip}]:{port}"),
        false => format!("{ip}:{port}"),
    };
    // A TCP dial to a port nothing listens on is refused (a UDP dial connects, and its
    // stream then carries nothing).
    if protocol == "tcp" && (port != SSH_PORT || !guest.sshd_up()) {
        let refused = format!("dialing VM: dial tcp {host}: connect: connection refused");
        return Err(ApiError::Internal(refused));
    }
    if let Some(refused) = no_handshake(req) {
        return Ok(refused);
    }
    let (res, session, messages) = upgrade(req, payload)?;
    let actions = state.actions.clone();
    let sshd = protocol == "tcp";
    actix_web::rt::spawn(pump(guest, session, messages, actions, sshd));
    Ok(res)
}

/// Copies the websocket's binary frames to the guest's sshd and its answers back, pinging
/// the client, until either side ends or the guest goes down.
async fn pump(
    guest: Arc<Guest>,
    mut session: actix_ws::Session,
    mut messages: actix_ws::MessageStream,
    actions: crate::behaviour::actions::Actions,
    sshd: bool,
) {
    if !sshd {
        let _ = session.close(None).await;
        return;
    }
    let (mut near, far) = tokio::io::duplex(64 * 1024);
    let (power_tx, mut power_rx) = mpsc::unbounded_channel();
    tokio::spawn(ssh::serve(guest.clone(), far, power_tx));
    let mut ping = tokio::time::interval(PING_EVERY);
    let mut liveness = tokio::time::interval(LIVENESS);
    let mut heard = Instant::now();
    let mut buf = vec![0u8; 32 * 1024];
    loop {
        tokio::select! {
            n = near.read(&mut buf) => match n {
                Ok(n) if n > 0 => {
                    if session.binary(Bytes::copy_from_slice(&buf[..n])).await.is_err() {
                        return;
                    }
                }
                // sshd closed the connection: the dialled socket's EOF ends the stream.
                _ => {
                    let _ = session.close(None).await;
                    return;
                }
            },
            input = messages.recv() => {
                if !matches!(input, Some(Ok(actix_ws::Message::Text(_)))) {
                    heard = Instant::now();
                }
                match frame(&mut session, input).await {
                    Frame::Bytes(bytes) => {
                        if near.write_all(&bytes).await.is_err() {
                            return;
                        }
                    }
                    Frame::Nothing => {}
                    Frame::End => return,
                }
            }
            p = power_rx.recv() => {
                if p.is_some() {
                    power(&actions, &guest, p).await;
                }
            }
            _ = ping.tick() => {
                if heard.elapsed() > READ_DEADLINE || session.ping(b"keep alive").await.is_err() {
                    return;
                }
            }
            // A guest that went down takes its sshd's connections with it.
            _ = liveness.tick() => {
                if guest.is_down() || !actions.still_running(&guest).await {
                    return;
                }
            }
        }
    }
}
