//! What happens around every request, outermost: it gets an id (sent back as kube-apiserver's
//! `Audit-Id` header), a panic while it is handled becomes a 500 Status (the connection gets
//! an answer and the worker keeps serving), and every 5xx answer is logged with the request's
//! method, path and id.
//!
//! This wraps the whole app's service factory (what `HttpServer::new` gets), below actix-web's
//! routing: at that level a request is an `actix_http::Request` and the answer a plain
//! `Response`, so nothing has to keep a clone of the `HttpRequest` (an `App::wrap` middleware
//! cannot: routing needs the only reference to it), and a panic unwinding out of the app still
//! finds the request's method and path here.

use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::task::{Context, Poll};

use actix_http::Request;
use actix_service::IntoServiceFactory;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{AppConfig, Response, Service, ServiceFactory};
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{HttpMessage, ResponseError};
use futures_util::FutureExt;

use crate::object::error::ApiError;

/// The response header kube-apiserver names each request's id in.
const AUDIT_ID: HeaderName = HeaderName::from_static("audit-id");

/// A request's id, in its extensions for whoever logs about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestId(u128);

impl RequestId {
    /// A fresh id: unique within the process (a counter) and across restarts (a random
    /// start), formatted as the UUID kube's `Audit-Id` is, without a system call per request.
    fn next() -> RequestId {
        static BASE: OnceLock<u128> = OnceLock::new();
        static COUNT: AtomicU64 = AtomicU64::new(0);
        let base = *BASE.get_or_init(|| {
            let mut b = [0u8; 16];
            let _ = getrandom::getrandom(&mut b);
            u128::from_le_bytes(b)
        });
        let n = COUNT.fetch_add(1, Ordering::Relaxed);
        // Version 4, variant 10, as a random UUID reads.
        let v = (base ^ u128::from(n)) & !(0xf000 << 64) & !(0xc000 << 48);
        RequestId(v | (0x4000 << 64) | (0x8000 << 48))
    }
}

impl RequestId {
    /// The UUID's 36 ASCII characters, written without allocating (this runs on every request).
    fn text(self) -> [u8; 36] {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut out = [b'-'; 36];
        let mut nibble = 0;
        for (i, slot) in out.iter_mut().enumerate() {
            if !matches!(i, 8 | 13 | 18 | 23) {
                *slot = HEX[((self.0 >> (124 - 4 * nibble)) & 0xf) as usize];
                nibble += 1;
            }
        }
        out
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(std::str::from_utf8(&self.text()).unwrap_or_default())
    }
}

/// What a 5xx answer failed with, put in the response's extensions where it is made
/// (`http::error`), so the log line here can say it.
#[derive(Debug, Clone)]
pub struct Failure(pub String);

/// Wraps an app (anything `HttpServer::new` accepts) with panic recovery.
pub fn catch_panics<I, F, Req, B>(app: I) -> CatchPanic<F, B>
where
    I: IntoServiceFactory<F, Req>,
    F: ServiceFactory<Req>,
{
    CatchPanic(app.into_factory(), PhantomData)
}

/// `B` is the body type of the wrapped app's responses.
pub struct CatchPanic<F, B>(F, PhantomData<B>);

/// The answer to a request whose handling panicked.
fn panic_response(payload: &(dyn std::any::Any + Send)) -> Response<BoxBody> {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a handler panicked".into());
    // The panic text may hold request data; the client learns only that the server failed.
    let err =
        ApiError::Internal("the server could not handle the request (handler panicked)".into());
    let mut res = Response::from(err.error_response());
    res.extensions_mut().insert(Failure(format!("request handler panicked: {what}")));
    res
}

/// Sends the request's id back and logs the answer if it is a 5xx.
fn finish(
    mut res: Response<BoxBody>,
    id: RequestId,
    method: &str,
    path: &str,
) -> Response<BoxBody> {
    if let Ok(v) = HeaderValue::from_bytes(&id.text()) {
        res.headers_mut().insert(AUDIT_ID, v);
    }
    let code = res.status();
    if code.is_server_error() {
        let why = res.extensions().get::<Failure>().map(|f| f.0.clone()).unwrap_or_default();
        log::error!("{method} {path} answered {} (Audit-Id {id}): {why}", code.as_u16());
    }
    res
}

impl<F, B> ServiceFactory<Request> for CatchPanic<F, B>
where
    F: ServiceFactory<Request, Config = AppConfig>,
    F::Service: 'static,
    F::Response: Into<Response<B>>,
    F::Error: Into<actix_web::Error>,
    F::Future: 'static,
    B: MessageBody + 'static,
{
    type Response = Response<BoxBody>;
    type Error = actix_web::Error;
    type Config = AppConfig;
    type Service = CatchPanicService<F::Service, B>;
    type InitError = F::InitError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Service, Self::InitError>>>>;

    fn new_service(&self, cfg: AppConfig) -> Self::Future {
        let fut = self.0.new_service(cfg);
        Box::pin(async move { fut.await.map(|s| CatchPanicService(Rc::new(s), PhantomData)) })
    }
}

pub struct CatchPanicService<S, B>(Rc<S>, PhantomData<B>);

impl<S, B> Service<Request> for CatchPanicService<S, B>
where
    S: Service<Request> + 'static,
    S::Response: Into<Response<B>>,
    S::Error: Into<actix_web::Error>,
    B: MessageBody + 'static,
{
    type Response = Response<BoxBody>;
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<BoxBody>, actix_web::Error>>>>;

    fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx).map_err(Into::into)
    }

    fn call(&self, req: Request) -> Self::Future {
        let svc = self.0.clone();
        let id = RequestId::next();
        req.extensions_mut().insert(id);
        let method = req.head().method.clone();
        let path = req.head().uri.path().to_string();
        Box::pin(async move {
            // Panics while the handler future is created or polled both land here.
            let fut = AssertUnwindSafe(async move { svc.call(req).await }).catch_unwind();
            let res = match fut.await {
                Ok(Ok(res)) => res.into().map_into_boxed_body(),
                Ok(Err(e)) => {
                    let e: actix_web::Error = e.into();
                    let mut res = e.error_response().map_into_boxed_body();
                    res.extensions_mut().insert(Failure(e.to_string()));
                    Response::from(res)
                }
                Err(payload) => panic_response(payload.as_ref()),
            };
            Ok(finish(res, id, method.as_str(), &path))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_read_as_random_uuids_and_differ() {
        let (a, b) = (RequestId::next().to_string(), RequestId::next().to_string());
        let n = 0x0123_4567_89ab_4def_8123_4567_89ab_cdefu128;
        assert_eq!(RequestId(n).to_string(), "01234567-89ab-4def-8123-456789abcdef");
        assert_ne!(a, b);
        for id in [&a, &b] {
            let parts: Vec<&str> = id.split('-').collect();
            assert_eq!(parts.iter().map(|p| p.len()).collect::<Vec<_>>(), [8, 4, 4, 4, 12], "{id}");
            assert!(parts[2].starts_with('4'), "version 4: {id}");
            assert!(matches!(&parts[3][..1], "8" | "9" | "a" | "b"), "variant 10: {id}");
        }
    }
}
