//! How an `ApiError` is answered over HTTP: its Status body with its code, `Retry-After` when
//! the Status asks for one, and Go's plain-text 404 for paths nothing serves.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

use crate::http::outermost::Failure;
use crate::object::error::ApiError;

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        StatusCode::from_u16(self.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
    }

    fn error_response(&self) -> HttpResponse {
        if *self == ApiError::PathNotFound {
            return HttpResponse::NotFound()
                .content_type("text/plain; charset=utf-8")
                .insert_header(("X-Content-Type-Options", "nosniff"))
                .body("404 page not found\n");
        }
        if let ApiError::PlainText { message, .. } = self {
            let mut resp = HttpResponse::build(self.status_code())
                .content_type("text/plain; charset=utf-8")
                .body(message.clone());
            if self.code() >= 500 {
                resp.extensions_mut().insert(Failure(self.to_string()));
            }
            return resp;
        }
        let status = self.to_status();
        let mut resp = HttpResponse::build(self.status_code());
        if let Some(secs) =
            status.details.as_ref().map(|d| d.retry_after_seconds).filter(|s| *s > 0)
        {
            resp.insert_header(("Retry-After", secs.to_string()));
        }
        resp.content_type("application/json");
        let mut resp = resp.json(status);
        if self.code() >= 500 {
            resp.extensions_mut().insert(Failure(self.to_string()));
        }
        resp
    }
}
