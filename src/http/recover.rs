//! Turns a panic while a request is handled into a 500 Status, so the connection gets an answer
//! and the worker keeps serving.
//!
//! This wraps the whole app's service factory (what `HttpServer::new` gets), below actix-web's
//! routing: at that level a request is an `actix_http::Request` and the answer a plain
//! `Response`, so nothing has to keep a clone of the `HttpRequest` (an `App::wrap` middleware
//! cannot: routing needs the only reference to it).

use std::future::Future;
use std::marker::PhantomData;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

use actix_service::IntoServiceFactory;
use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{AppConfig, Response, Service, ServiceFactory};
use actix_web::ResponseError;
use futures_util::FutureExt;

use crate::object::error::ApiError;

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
    log::error!("request handler panicked: {what}");
    // The panic text may hold request data; the client learns only that the server failed.
    let err =
        ApiError::Internal("the server could not handle the request (handler panicked)".into());
    Response::from(err.error_response())
}

impl<F, Req, B> ServiceFactory<Req> for CatchPanic<F, B>
where
    F: ServiceFactory<Req, Config = AppConfig>,
    F::Service: 'static,
    F::Response: Into<Response<B>>,
    F::Error: Into<actix_web::Error>,
    F::Future: 'static,
    B: MessageBody + 'static,
    Req: 'static,
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

impl<S, Req, B> Service<Req> for CatchPanicService<S, B>
where
    S: Service<Req> + 'static,
    S::Response: Into<Response<B>>,
    S::Error: Into<actix_web::Error>,
    B: MessageBody + 'static,
    Req: 'static,
{
    type Response = Response<BoxBody>;
    type Error = actix_web::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<BoxBody>, actix_web::Error>>>>;

    fn poll_ready(&self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx).map_err(Into::into)
    }

    fn call(&self, req: Req) -> Self::Future {
        let svc = self.0.clone();
        Box::pin(async move {
            // Panics while the handler future is created or polled both land here.
            let fut = AssertUnwindSafe(async move { svc.call(req).await }).catch_unwind();
            match fut.await {
                Ok(Ok(res)) => Ok(res.into().map_into_boxed_body()),
                Ok(Err(e)) => Err(e.into()),
                Err(payload) => Ok(panic_response(payload.as_ref())),
            }
        })
    }
}
