//! The filter chain every request passes before routing, as kube-apiserver's handler chain:
//! authentication, authorization, body-size and in-flight request limits; on the way out,
//! errors actix answers by itself (payload too large, broken payload) become Status bodies.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::middleware::Next;
use actix_web::{web, HttpMessage, HttpResponse, ResponseError};

use crate::http::authn::{self, TokenFile, User};
use crate::http::authz::{forbidden_message, Abac};
use crate::http::faults::{labels_of, Faults, Fired};
use crate::http::outermost::RequestId;
use crate::http::request_info::RequestInfo;
use crate::http::state::AppState;
use crate::http::tls::ClientCertUser;
use crate::object::error::ApiError;
use crate::object::fault::Request as FaultRequest;
use crate::object::limits::MAX_BODY_BYTES;
use crate::object::At;

/// kube-apiserver's defaults for `--max-requests-inflight` and `--max-mutating-requests-inflight`.
pub const DEFAULT_MAX_READONLY: usize = 400;
pub const DEFAULT_MAX_MUTATING: usize = 200;
/// kube-apiserver's `--request-timeout` default.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// What the chain enforces.
pub struct Filters {
    /// Bearer tokens; `None` (and no client certificates) means no authentication: everyone
    /// is anonymous.
    pub tokens: Option<TokenFile>,
    /// Client certificates verified against `--client-ca-file` authenticate (see `tls`).
    pub client_certs: bool,
    /// ABAC policies; `None` allows everything.
    pub abac: Option<Abac>,
    pub max_readonly: usize,
    pub max_mutating: usize,
    /// `--request-timeout`: the most a request that is not a watch may take.
    pub request_timeout: Duration,
    /// Requests in flight per user: (read-only, mutating).
    inflight: Mutex<HashMap<String, (usize, usize)>>,
}

impl Filters {
    pub fn new(
        tokens: Option<TokenFile>,
        abac: Option<Abac>,
        max_readonly: usize,
        max_mutating: usize,
    ) -> Filters {
        Filters {
            tokens,
            client_certs: false,
            abac,
            max_readonly,
            max_mutating,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            inflight: Mutex::new(HashMap::new()),
        }
    }

    /// Bounds requests other than watches by `timeout` (kube's `--request-timeout`).
    pub fn with_request_timeout(mut self, timeout: Duration) -> Filters {
        self.request_timeout = timeout;
        self
    }

    /// Also authenticates verified client certificates (TLS with `--client-ca-file`).
    pub fn with_client_certificates(mut self) -> Filters {
        self.client_certs = true;
        self
    }

    /// Whether any authentication is configured; without, every request is anonymous.
    pub fn authenticates(&self) -> bool {
        self.tokens.is_some() || self.client_certs
    }

    /// Who sent `req`: a verified client certificate wins, as in kube's union authenticator,
    /// then a bearer token. `None` when credentials are needed and missing or unknown.
    fn authenticate(&self, req: &mut ServiceRequest) -> Option<User> {
        if !self.authenticates() {
            return Some(User::anonymous());
        }
        if self.client_certs {
            if let Some(ClientCertUser(u)) = req.conn_data::<ClientCertUser>() {
                return Some(u.clone());
            }
        }
        let auth = req.headers().get(header::AUTHORIZATION).and_then(|v| v.to_str().ok());
        if let Some(user) = self.tokens.as_ref().and_then(|t| t.authenticate(auth)) {
            return Some(user);
        }
        // A websocket's token in its subprotocols (kube's websocket ProtocolAuthenticator):
        // accepted, it leaves the header, so it is never echoed.
        if !is_websocket(req) {
            return None;
        }
        let values = req.headers().get_all(header::SEC_WEBSOCKET_PROTOCOL);
        let (token, others) =
            authn::protocol_token(values.filter_map(|v| v.to_str().ok())).ok()??;
        let user = self.tokens.as_ref()?.authenticate(Some(&format!("Bearer {token}")))?;
        let rest = header::HeaderValue::from_str(&others.join(",")).ok()?;
        req.headers_mut().insert(header::SEC_WEBSOCKET_PROTOCOL, rest);
        Some(user)
    }

    /// Requests holding an in-flight slot now: (read-only, mutating).
    pub fn in_flight(&self) -> (usize, usize) {
        let map = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
        map.values().fold((0, 0), |(r, m), (a, b)| (r + a, m + b))
    }

    /// Takes an in-flight slot for `user`, or says the limit is reached.
    fn acquire(&self, user: &str, mutating: bool) -> Option<Slot<'_>> {
        let mut map = self.inflight.lock().unwrap_or_else(|p| p.into_inner());
        let entry = map.entry(user.to_string()).or_default();
        let (count, max) = if mutating {
            (&mut entry.1, self.max_mutating)
        } else {
            (&mut entry.0, self.max_readonly)
        };
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(Slot { filters: self, user: user.to_string(), mutating })
    }
}

/// An in-flight slot, given back on drop.
struct Slot<'a> {
    filters: &'a Filters,
    user: String,
    mutating: bool,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut map = self.filters.inflight.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = map.get_mut(&self.user) {
            if self.mutating {
                e.1 = e.1.saturating_sub(1);
            } else {
                e.0 = e.0.saturating_sub(1);
            }
            if *e == (0, 0) {
                map.remove(&self.user);
            }
        }
    }
}

/// wsstream.IsWebSocketRequest: `Connection: upgrade` and `Upgrade: websocket`.
fn is_websocket(req: &ServiceRequest) -> bool {
    let has = |name: header::HeaderName, token: &str| {
        req.headers()
            .get_all(name)
            .filter_map(|v| v.to_str().ok())
            .any(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
    };
    has(header::CONNECTION, "upgrade") && has(header::UPGRADE, "websocket")
}

/// Paths whose operations declare no 401 answer in the document: health and version, which
/// need no credentials (A.16).
fn public_paths() -> &'static HashSet<String> {
    static PUBLIC: OnceLock<HashSet<String>> = OnceLock::new();
    PUBLIC.get_or_init(|| {
        let mut out = HashSet::new();
        if let Some(paths) =
            crate::object::schema::document().get("paths").and_then(|p| p.as_object())
        {
            for (path, item) in paths {
                let ops: Vec<_> = ["get", "put", "post", "delete", "patch"]
                    .iter()
                    .filter_map(|m| item.get(*m))
                    .collect();
                if !ops.is_empty() && ops.iter().all(|op| op.at("/responses/401").is_none()) {
                    out.insert(path.trim_end_matches('/').to_string());
                }
            }
        }
        out
    })
}

fn reject<B>(req: ServiceRequest, err: ApiError) -> ServiceResponse<EitherBody<B>> {
    req.into_response(err.error_response()).map_into_right_body()
}

/// The middleware: `App::wrap(from_fn(filters::chain))`, with `web::Data<Filters>` registered.
pub async fn chain(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let Some(filters) = req.app_data::<web::Data<Filters>>().cloned() else {
        return next.call(req).await.map(ServiceResponse::map_into_left_body);
    };
    let path = req.path().to_string();
    let info = RequestInfo::parse(req.method().as_str(), &path, req.query_string());
    // kube's WithRetryAfter and WithWaitGroup, outside authentication as there.
    let phases = req.app_data::<web::Data<AppState>>().map(|s| s.phases.clone());
    let _in_flight = match &phases {
        Some(life) if !info.is_long_running() && !exempt_from_retry_after(&req) => {
            if life.refuses_new_requests() {
                let res = HttpResponse::TooManyRequests()
                    .insert_header((header::RETRY_AFTER, "5"))
                    .force_close()
                    .insert_header((header::CONTENT_TYPE, "text/plain; charset=utf-8"))
                    .insert_header(("X-Content-Type-Options", "nosniff"))
                    .body("The apiserver is shutting down, please try again later.\n");
                return Ok(req.into_response(res).map_into_right_body());
            }
            Some(life.request_started())
        }
        _ => None,
    };
    let public = public_paths().contains(path.trim_end_matches('/'));

    let user = match filters.authenticate(&mut req) {
        Some(u) => u,
        None if public => User::anonymous(),
        None => return Ok(reject(req, ApiError::Unauthorized)),
    };
    if let Some(abac) = &filters.abac {
        if !public && !abac.allows(&user, &info) {
            let err = ApiError::Forbidden {
                message: forbidden_message(&user, &info),
                name: info.name.clone(),
                group: info.api_group.clone(),
                resource: info.resource.clone(),
                causes: Vec::new(),
            };
            return Ok(reject(req, err));
        }
    }
    let fault = match req.app_data::<web::Data<AppState>>().and_then(|s| s.faults.clone()) {
        Some(faults) if info.is_resource && !faults.is_own(&info.api_group, &info.resource) => {
            fire_fault(&mut req, &faults, &info, &user).await
        }
        _ => None,
    };
    match fault {
        Some(Fired::Answer(err)) => return Ok(reject(req, err)),
        Some(Fired::Drop) => return Ok(req.into_response(dropped()).map_into_right_body()),
        Some(Fired::Delay(d)) => tokio::time::sleep(d).await,
        Some(Fired::CutWatch(cut)) => {
            req.extensions_mut().insert(cut);
        }
        Some(Fired::Stale(stale)) => {
            req.extensions_mut().insert(stale);
        }
        None => {}
    }
    if let Some(len) = req.headers().get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()) {
        if len.parse::<usize>().is_ok_and(|n| n > MAX_BODY_BYTES) {
            let msg = format!("Request entity too large: limit is {}", MAX_BODY_BYTES);
            return Ok(reject(req, ApiError::RequestEntityTooLarge(msg)));
        }
    }
    let long_running = info.is_long_running();
    let deadline = match request_deadline(&filters, req.query_string()) {
        Ok(d) => d,
        Err(err) => return Ok(reject(req, err)),
    };
    let _slot = if long_running {
        None
    } else {
        let mutating = !info.is_read_only() && info.is_resource;
        match filters.acquire(&user.name, mutating) {
            Some(slot) => Some(slot),
            None => return Ok(reject(req, ApiError::TooManyRequests)),
        }
    };
    req.extensions_mut().insert(user);
    // Panics are answered further out, by `outermost` (this layer cannot keep the request).
    let res = if long_running {
        next.call(req).await?
    } else {
        // kube's WithTimeoutForNonLongRunningRequests: past the deadline the client gets 504,
        // whatever holds the request (a body sent a byte at a time, a slow store). The
        // handler is dropped; a write it handed to the store may still commit, as in kube
        // ("the server ... may still be processing the request").
        // The request itself is inside the dropped handler, so the 504 leaves as an error that
        // actix answers with its `error_response` (the Status body).
        match tokio::time::timeout(deadline, next.call(req)).await {
            Ok(res) => res?,
            Err(_) => {
                return Err(ApiError::Timeout {
                    message: "request did not complete within the allotted timeout".into(),
                    causes: Vec::new(),
                }
                .into())
            }
        }
    };
    Ok(match foreign_error(&res) {
        None => res.map_into_left_body(),
        Some(err) => {
            let (req, _) = res.into_parts();
            ServiceResponse::new(req, err.error_response()).map_into_right_body()
        }
    })
}

/// The Fault that fires on `req`, if any (`http::faults`): its object's labels read only when a
/// matching Fault selects by them, the body's put back for the handler.
async fn fire_fault(
    req: &mut ServiceRequest,
    faults: &Faults,
    info: &RequestInfo,
    user: &User,
) -> Option<Fired> {
    let agent = req.headers().get(header::USER_AGENT).and_then(|v| v.to_str().ok());
    let agent = agent.map(str::to_string);
    let fr = FaultRequest {
        verb: &info.verb,
        group: &info.api_group,
        resource: &info.resource,
        subresource: &info.subresource,
        namespace: &info.namespace,
        name: &info.name,
        user: &user.name,
        user_agent: agent.as_deref().unwrap_or(""),
    };
    let labels = if faults.wants_labels(&fr).await {
        let body = match fr.verb {
            "create" | "update" => {
                let bytes = req.extract::<web::Bytes>().await.ok()?;
                req.set_payload(bytes.clone().into());
                Some(bytes)
            }
            _ => None,
        };
        let state = req.app_data::<web::Data<AppState>>()?;
        labels_of(&state.registry, &fr, body.as_deref()).await
    } else {
        None
    };
    // The id `outermost` gave the request, which its answer's `Audit-Id` header carries.
    let audit = req.extensions().get::<RequestId>().map(ToString::to_string).unwrap_or_default();
    faults.fire(&fr, req.method().as_str(), labels.as_ref(), &audit).await
}

/// An answer that never comes: its body fails before a byte of it is written, so the
/// connection closes with nothing sent (a Fault's `drop`).
fn dropped() -> HttpResponse {
    let failing = futures_util::stream::once(async {
        Err::<web::Bytes, _>(std::io::Error::other("dropped by a fault"))
    });
    HttpResponse::Ok().streaming(failing)
}

/// Health probes and metrics are served through the drain, as is kube-apiserver's own loopback
/// client (`isRequestExemptFromRetryAfter`).
fn exempt_from_retry_after(req: &ServiceRequest) -> bool {
    let agent = req.headers().get(header::USER_AGENT).and_then(|v| v.to_str().ok());
    agent.is_some_and(|a| a.starts_with("kube-apiserver/"))
        || ["/readyz", "/livez", "/healthz", "/metrics"].iter().any(|p| req.path().starts_with(p))
}

/// The deadline of a request that is not a watch: the `timeout` query parameter client-go sends
/// (`kubectl --request-timeout`), when above zero and below the server's own bound (kube's
/// WithRequestDeadline), else `--request-timeout`.
fn request_deadline(filters: &Filters, query: &str) -> Result<Duration, ApiError> {
    // A query that does not decode is the handler's 400 to give, in its words.
    let query = crate::http::params::Query::from_query(query).ok();
    let asked = query.as_ref().and_then(|q| q.get("timeout")).filter(|v| !v.is_empty());
    let Some(asked) = asked else { return Ok(filters.request_timeout) };
    match crate::object::duration::parse(asked) {
        Ok(d) if !d.is_zero() && d < filters.request_timeout => Ok(d),
        Ok(_) => Ok(filters.request_timeout),
        Err(e) => {
            Err(ApiError::BadRequest(format!("invalid timeout specified in the request URL - {e}")))
        }
    }
}

/// An error answered by actix itself rather than by our handlers (their errors are `ApiError`s
/// already), as the Status kube would send: a body over the limit without Content-Length
/// (chunked) is 413, a body that breaks off or does not decode is 400.
fn foreign_error<B>(res: &ServiceResponse<B>) -> Option<ApiError> {
    let err = res.response().error()?;
    if err.as_error::<ApiError>().is_some() {
        return None;
    }
    let code = res.status();
    let message = err.to_string();
    Some(match code.as_u16() {
        413 => ApiError::RequestEntityTooLarge(format!(
            "Request entity too large: limit is {}",
            MAX_BODY_BYTES
        )),
        405 => ApiError::MethodNotAllowed(message),
        404 => ApiError::PathNotFound,
        406 => ApiError::NotAcceptable(message),
        415 => ApiError::UnsupportedMediaType(message),
        500..=599 => ApiError::Internal(message),
        _ => ApiError::BadRequest(message),
    })
}
