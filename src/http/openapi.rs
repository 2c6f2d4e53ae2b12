//! Serves the OpenAPI document: `/openapi/v2` exactly as build.rs read it, and the `/openapi/v3`
//! index and per group-version documents derived from it at build time (B.11).

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use actix_web::http::header::{self, HttpDate};
use actix_web::{HttpRequest, HttpResponse};
use serde_json::json;
use sha2::{Digest, Sha512};

use crate::generated::{OPENAPI_V2, OPENAPI_V2_PB, OPENAPI_V3};
use crate::http::codec::first_accepted;
use crate::http::state::AppState;
use crate::object::error::ApiError;

/// Upper-case hex SHA-512 of `bytes`, as kube-openapi's ETags.
fn etag_of(bytes: &[u8]) -> String {
    Sha512::digest(bytes).iter().map(|b| format!("{b:02X}")).collect()
}

fn v2_etag() -> &'static str {
    static ETAG: OnceLock<String> = OnceLock::new();
    ETAG.get_or_init(|| etag_of(OPENAPI_V2))
}

/// The protobuf form's own ETag: kube-openapi reuses the JSON one, but two representations
/// with one strong validator would let a cache revalidate one with the other.
fn v2_pb_etag() -> &'static str {
    static ETAG: OnceLock<String> = OnceLock::new();
    ETAG.get_or_init(|| etag_of(OPENAPI_V2_PB))
}

/// What kube-openapi answers the protobuf form with, whichever spelling was asked for.
const PROTOBUF_V2: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `/openapi/v2`'s forms: the first `Accept` clause naming one wins; no header means JSON.
fn v2_wants_protobuf(req: &HttpRequest) -> Result<bool, ApiError> {
    if req.headers().get(header::ACCEPT).is_none_or(|v| v.as_bytes().trim_ascii().is_empty()) {
        return Ok(false);
    }
    first_accepted(req, |essence, _, _, _| match essence {
        "application/json" | "application/*" | "*/*" => Some(false),
        "application/com.github.proto-openapi.spec.v2@v1.0+protobuf" => Some(true),
        e if e == PROTOBUF_V2 => Some(true),
        _ => None,
    })
    .ok_or_else(|| {
        ApiError::NotAcceptable(format!(
            "only the following media types are accepted: application/json, {PROTOBUF_V2}"
        ))
    })
}

/// The ETags of the v3 documents, in `OPENAPI_V3` order.
fn v3_etags() -> &'static [String] {
    static ETAGS: OnceLock<Vec<String>> = OnceLock::new();
    ETAGS.get_or_init(|| OPENAPI_V3.iter().map(|d| etag_of(d.json)).collect())
}

fn v3_index_bytes() -> &'static [u8] {
    static INDEX: OnceLock<Vec<u8>> = OnceLock::new();
    INDEX.get_or_init(|| {
        let mut paths = serde_json::Map::new();
        for (doc, etag) in OPENAPI_V3.iter().zip(v3_etags()) {
            paths.insert(
                doc.path.to_string(),
                json!({"serverRelativeURL": format!("/openapi/v3/{}?hash={etag}", doc.path)}),
            );
        }
        serde_json::to_vec(&json!({ "paths": paths })).expect("index encodes")
    })
}

/// Whether the request accepts JSON (the only encoding offered here).
fn accepts_json(req: &HttpRequest) -> bool {
    let Some(accept) = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    if accept.trim().is_empty() {
        return true;
    }
    accept.split(',').any(|clause| {
        let essence = clause.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        matches!(essence.as_str(), "application/json" | "application/*" | "*/*")
    })
}

fn not_modified(req: &HttpRequest, quoted: &str) -> bool {
    req.headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == quoted || t.trim() == "*"))
}

/// Answers `body` as JSON with a quoted ETag, `Vary: Accept` and 304 on a matching If-None-Match.
fn serve(
    req: &HttpRequest,
    body: &'static [u8],
    etag: &str,
    immutable: bool,
) -> Result<HttpResponse, ApiError> {
    if !accepts_json(req) {
        return Err(ApiError::NotAcceptable(
            "only the following media types are accepted: application/json".into(),
        ));
    }
    serve_as(req, body, etag, immutable, "application/json")
}

/// Answers `body` as `content_type`, with the caching headers `serve` describes.
fn serve_as(
    req: &HttpRequest,
    body: &'static [u8],
    etag: &str,
    immutable: bool,
    content_type: &str,
) -> Result<HttpResponse, ApiError> {
    let quoted = format!("\"{etag}\"");
    let mut resp =
        if not_modified(req, &quoted) { HttpResponse::NotModified() } else { HttpResponse::Ok() };
    resp.insert_header((header::ETAG, quoted)).insert_header((header::VARY, "Accept"));
    if immutable {
        let expires = HttpDate::from(SystemTime::now() + Duration::from_secs(365 * 24 * 3600));
        resp.insert_header((header::CACHE_CONTROL, "public, immutable"))
            .insert_header((header::EXPIRES, expires.to_string()));
    }
    if not_modified(req, &format!("\"{etag}\"")) {
        return Ok(resp.finish());
    }
    Ok(resp.content_type(content_type).body(body))
}

/// `GET /openapi/v2`: the document, byte for byte, or its gnostic protobuf form (B.11).
pub async fn v2(_state: &AppState, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    if v2_wants_protobuf(req)? {
        serve_as(req, OPENAPI_V2_PB, v2_pb_etag(), false, PROTOBUF_V2)
    } else {
        serve_as(req, OPENAPI_V2, v2_etag(), false, "application/json")
    }
}

/// `GET /openapi/v3`: the index of group-version documents with their hashes.
pub async fn v3_index(_state: &AppState, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    static ETAG: OnceLock<String> = OnceLock::new();
    let index = v3_index_bytes();
    serve(req, index, ETAG.get_or_init(|| etag_of(index)), false)
}

/// `GET /openapi/v3/apis/<group>/<version>` (`/openapi/v3/api/<version>` for the core group,
/// `group` empty): a stale `hash` redirects to the current one; a current one makes the answer
/// cacheable for a year.
pub async fn v3_document(
    _state: &AppState,
    req: &HttpRequest,
    group: String,
    version: String,
) -> Result<HttpResponse, ApiError> {
    let path =
        if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") };
    let Some(i) = OPENAPI_V3.iter().position(|d| d.path == path) else {
        return Err(ApiError::PathNotFound);
    };
    let etag = &v3_etags()[i];
    let hash = crate::http::params::Query::parse(req)?.get("hash").map(str::to_string);
    match hash {
        Some(h) if h != *etag => Ok(HttpResponse::MovedPermanently()
            .insert_header((header::LOCATION, format!("/openapi/v3/{path}?hash={etag}")))
            .finish()),
        Some(_) => serve(req, OPENAPI_V3[i].json, etag, true),
        None => serve(req, OPENAPI_V3[i].json, etag, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etag_is_upper_hex_sha512() {
        let e = etag_of(b"");
        assert_eq!(e.len(), 128);
        assert!(e.starts_with("CF83E1357EEFB8BD"));
    }
}
