//! Response compression as kube-apiserver does it: a response whose body is at least 128 KiB is
//! gzipped when the client accepts gzip (responsewriters `defaultGzipThresholdBytes`).
//!
//! Only bodies of known size are compressed. actix-web's `Compress` middleware would also wrap
//! streaming bodies, and its gzip encoder holds small chunks back until it has a block's worth,
//! so a watch would stop delivering events promptly; streams are left alone here by design.

use actix_web::body::{BodySize, BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderMap, HeaderValue};
use actix_web::middleware::Next;
use std::io::Write;

/// Bodies at least this large are compressed (kube: 128 KiB).
pub const GZIP_THRESHOLD: u64 = 128 * 1024;

/// Whether `Accept-Encoding` lists gzip (or `*`) with a non-zero q.
fn accepts_gzip(headers: &HeaderMap) -> bool {
    headers.get_all(header::ACCEPT_ENCODING).filter_map(|v| v.to_str().ok()).any(|v| {
        v.split(',').any(|clause| {
            let mut parts = clause.split(';');
            let coding = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let zero_q = parts.any(|p| {
                p.split_once('=').is_some_and(|(k, q)| {
                    k.trim() == "q" && q.trim().parse::<f32>().is_ok_and(|q| q == 0.0)
                })
            });
            (coding == "gzip" || coding == "*") && !zero_q
        })
    })
}

/// Level 1, as kube-apiserver's `defaultGzipContentEncodingLevel`: the least CPU for ratios
/// within 1.1–1.3× of the best.
fn gzip(bytes: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(
        Vec::with_capacity(bytes.len() / 4),
        flate2::Compression::fast(),
    );
    enc.write_all(bytes)?;
    enc.finish()
}

/// The middleware: compresses large sized bodies for clients that accept gzip.
pub async fn gzip_large_bodies(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    let wanted = accepts_gzip(req.headers());
    let res = next.call(req).await?.map_into_boxed_body();
    let large = matches!(res.response().body().size(), BodySize::Sized(n) if n >= GZIP_THRESHOLD);
    if !wanted || !large || res.headers().contains_key(header::CONTENT_ENCODING) {
        return Ok(res);
    }
    let (req, resp) = res.into_parts();
    let (mut resp, body) = resp.into_parts();
    let bytes = match body.try_into_bytes() {
        Ok(bytes) => bytes,
        Err(body) => return Ok(ServiceResponse::new(req, resp.set_body(body))),
    };
    let body = match gzip(&bytes) {
        Ok(compressed) => {
            let headers = resp.headers_mut();
            headers.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
            headers.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
            BoxBody::new(compressed)
        }
        Err(e) => {
            log::warn!("gzip failed, answering uncompressed: {e}");
            BoxBody::new(bytes)
        }
    };
    Ok(ServiceResponse::new(req, resp.set_body(body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_str(value).unwrap());
        h
    }

    #[test]
    fn accept_encoding() {
        assert!(accepts_gzip(&headers("gzip")));
        assert!(accepts_gzip(&headers("deflate, gzip;q=0.5")));
        assert!(accepts_gzip(&headers("*")));
        assert!(!accepts_gzip(&headers("gzip;q=0")));
        assert!(!accepts_gzip(&headers("identity")));
        assert!(!accepts_gzip(&HeaderMap::new()));
    }

    #[test]
    fn gzip_round_trips() {
        let data = b"x".repeat(1000);
        let z = gzip(&data).unwrap();
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&z[..]), &mut out).unwrap();
        assert_eq!(out, data);
    }
}
