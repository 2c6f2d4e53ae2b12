//! The `vnc` subcommand: a local TCP port bridged to a VMI's `vnc` websocket, for any VNC
//! viewer, as `virtctl vnc --proxy-only` does (pkg/virtctl/vnc/vnc.go: listens on 127.0.0.1,
//! prints `{"port":N}`; one websocket per accepted connection, offering `plain.kubevirt.io`,
//! RFB bytes in binary frames both ways). Blocking std threads, one per connection.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tungstenite::client::IntoClientRequest;
use tungstenite::http::HeaderValue;
use tungstenite::{Message, WebSocket};

/// How long each side of a bridge waits for bytes before looking at the other.
pub(super) const POLL: Duration = Duration::from_millis(10);

/// Where a bridge reaches the server, and as whom.
#[derive(clap::Args, Debug, Clone)]
pub struct ServerArgs {
    /// The server's URL, e.g. `http://127.0.0.1:8080`.
    #[arg(long)]
    pub server: String,
    /// A bearer token (when the server authenticates).
    #[arg(long)]
    pub token: Option<String>,
    /// The CA bundle (PEM) that verifies an https server's certificate.
    #[arg(long)]
    pub certificate_authority: Option<PathBuf>,
}

impl ServerArgs {
    /// The TLS client settings for an https server, read once.
    pub(super) fn tls(&self) -> Result<Option<Arc<rustls::ClientConfig>>, String> {
        match &self.certificate_authority {
            Some(ca) => Ok(Some(Arc::new(super::tls::client_tls(ca)?))),
            None => Ok(None),
        }
    }
}

#[derive(clap::Args, Debug, Clone)]
pub struct VncArgs {
    #[command(flatten)]
    pub to: ServerArgs,
    /// Where to listen for VNC viewers (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: String,
    /// Refuse to take over a VNC session another viewer holds (`preserveSession=true`).
    #[arg(long)]
    pub preserve_session: bool,
    /// The VMI's namespace.
    #[arg(short, long, default_value = "default")]
    pub namespace: String,
    /// The VMI's name.
    pub name: String,
}

pub(super) trait Io: Read + Write + Send {}
impl<T: Read + Write + Send> Io for T {}

/// Listens, prints `{"port":N}`, and bridges every connection until killed.
pub fn bridge(args: &VncArgs) -> Result<String, String> {
    let tls = args.to.tls()?;
    let listener = TcpListener::bind(&args.listen).map_err(|e| format!("{}: {e}", args.listen))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    println!("{{\"port\":{port}}}");
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    for conn in listener.incoming() {
        let Ok(conn) = conn else { continue };
        let (args, tls) = (args.clone(), tls.clone());
        std::thread::spawn(move || match dial(&args, tls) {
            Ok(ws) => pump(conn, ws),
            // virtctl: "can't access VMI <n>: <message>".
            Err(e) => eprintln!("can't access VMI {}: {e}", args.name),
        });
    }
    Ok(String::new())
}

/// Opens the VMI's `vnc` websocket; the refusal's Status message if it is refused.
fn dial(
    args: &VncArgs,
    tls: Option<Arc<rustls::ClientConfig>>,
) -> Result<WebSocket<Box<dyn Io>>, String> {
    let base = stream_base(None, "vnc")?;
    let query = if args.preserve_session { "?preserveSession=true" } else { "" };
    let path = base(&args.namespace, &args.name) + query;
    open(&args.to, tls, &path)
}

/// The URL of `stream` on an object, from the document's discovery lists: the group that
/// lists `<plural>/<stream>` (its preferred version) serves the stream for that kind and, not
/// always listed (a VM's port-forward), for the other kinds of that kind's group. `kind` names
/// the object's kind as virtctl takes it (plural, singular or a short name); `None` is the
/// listed kind.
pub(super) fn stream_base(
    kind: Option<&str>,
    stream: &'static str,
) -> Result<impl Fn(&str, &str) -> String, String> {
    use crate::generated::{GROUPS, RESOURCES};
    let unsupported = || format!("unsupported resource type '{}'", kind.unwrap_or(stream));
    let listed = GROUPS.iter().find_map(|g| {
        let version = g.versions.first()?;
        let entries = g.listed.iter().filter(|(v, _)| v == version).flat_map(|(_, l)| l.iter());
        let plural = entries
            .filter_map(|e| e.strip_suffix(stream)?.strip_suffix('/'))
            .find(|p| RESOURCES.iter().any(|r| r.plural == *p))?;
        Some((g.name, *version, plural))
    });
    let (group, version, listed) = listed.ok_or_else(unsupported)?;
    let plural = match kind {
        None => listed,
        Some(k) => {
            let of = RESOURCES.iter().find(|r| r.plural == listed).map(|r| r.group);
            let named = |r: &&crate::resource::ResourceInfo| {
                Some(r.group) == of
                    && (k == r.plural || k == r.singular || r.short_names.contains(&k))
            };
            RESOURCES.iter().find(named).ok_or_else(unsupported)?.plural
        }
    };
    Ok(move |ns: &str, name: &str| {
        format!("/apis/{group}/{version}/namespaces/{ns}/{plural}/{name}/{stream}")
    })
}

/// Opens the websocket at `path` of `server`, offering `plain.kubevirt.io`, with a bearer
/// `token`; the refusal's Status message if it is refused.
pub(super) fn open(
    to: &ServerArgs,
    tls: Option<Arc<rustls::ClientConfig>>,
    path: &str,
) -> Result<WebSocket<Box<dyn Io>>, String> {
    let (server, token) = (to.server.trim_end_matches('/'), to.token.as_deref());
    let (scheme, rest) = server.split_once("://").ok_or(format!("{server}: no scheme"))?;
    let ws_scheme = if scheme == "https" { "wss" } else { "ws" };
    let url = format!("{ws_scheme}://{rest}{path}");
    let mut req = url.as_str().into_client_request().map_err(|e| format!("{url}: {e}"))?;
    let h = req.headers_mut();
    h.insert("Sec-WebSocket-Protocol", HeaderValue::from_static("plain.kubevirt.io"));
    if let Some(t) = token {
        let v = HeaderValue::from_str(&format!("Bearer {t}")).map_err(|e| e.to_string())?;
        h.insert("Authorization", v);
    }
    let host = rest.split('/').next().unwrap_or(rest);
    let tcp = TcpStream::connect(host).map_err(|e| format!("{host}: {e}"))?;
    tcp.set_nodelay(true).map_err(|e| e.to_string())?;
    // The socket waits `POLL` for bytes, so one thread serves both directions of the bridge.
    tcp.set_read_timeout(Some(POLL)).map_err(|e| e.to_string())?;
    let stream: Box<dyn Io> = match (scheme, tls) {
        ("https", Some(cfg)) => {
            let name = host.rsplit_once(':').map_or(host, |(h, _)| h);
            let name =
                rustls_pki_types::ServerName::try_from(name.trim_matches(['[', ']']).to_string())
                    .map_err(|e| format!("{host}: {e}"))?;
            let conn = rustls::ClientConnection::new(cfg, name).map_err(|e| e.to_string())?;
            Box::new(rustls::StreamOwned::new(conn, tcp))
        }
        ("https", None) => return Err(format!("{server}: https needs --certificate-authority")),
        _ => Box::new(tcp),
    };
    let mut shake = tungstenite::client::client(req, stream);
    while let Err(tungstenite::HandshakeError::Interrupted(mid)) = shake {
        shake = mid.handshake();
    }
    match shake {
        Ok((ws, _)) => Ok(ws),
        Err(tungstenite::HandshakeError::Failure(tungstenite::Error::Http(resp))) => {
            let body =
                String::from_utf8_lossy(resp.body().as_deref().unwrap_or_default()).to_string();
            let message = serde_json::from_str::<serde_json::Value>(&body)
                .ok()
                .and_then(|s| s["message"].as_str().map(str::to_owned))
                .unwrap_or(body);
            Err(message)
        }
        Err(e) => Err(format!("{url}: {e}")),
    }
}

/// Copies the viewer's bytes to the websocket and back until either side ends.
fn pump(mut conn: TcpStream, mut ws: WebSocket<Box<dyn Io>>) {
    let mut buf = vec![0u8; 64 * 1024];
    if conn.set_read_timeout(Some(POLL)).is_err() {
        return;
    }
    let idle = |e: &std::io::Error| matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut);
    loop {
        match conn.read(&mut buf) {
            Ok(0) => {
                let _ = ws.close(None);
                let _ = ws.flush();
                return;
            }
            Ok(n) => {
                if ws.send(Message::binary(buf[..n].to_vec())).is_err() {
                    return;
                }
            }
            Err(e) if idle(&e) => {}
            Err(_) => return,
        }
        match ws.read() {
            Ok(Message::Binary(b)) => {
                if conn.write_all(&b).is_err() {
                    return;
                }
            }
            Ok(Message::Close(_)) => return,
            // Text frames carry nothing (client-go's binaryReader drops them).
            Ok(_) => {}
            Err(tungstenite::Error::Io(e)) if idle(&e) => {}
            Err(_) => return,
        }
    }
}
