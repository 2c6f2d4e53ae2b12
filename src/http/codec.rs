//! Media types: decoding request bodies and choosing and encoding the response format.

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use serde::Serialize;
use serde_json::Value;

use crate::object::error::ApiError;
use crate::object::protobuf;
use crate::registry::{decode_stored, Object};
use crate::resource::ResourceInfo;
use crate::store::json_value_end as value_end;

/// A response encoding this server offers for API objects.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Format {
    Json,
    Yaml,
}

impl Format {
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Json => "application/json",
            Format::Yaml => "application/yaml",
        }
    }
}

/// One media range of an `Accept` header.
struct MediaRange<'a> {
    essence: String,
    params: Vec<(String, &'a str)>,
}

fn media_ranges(accept: &str) -> Vec<MediaRange<'_>> {
    accept
        .split(',')
        .filter_map(|clause| {
            let mut parts = clause.split(';');
            let essence = parts.next()?.trim().to_ascii_lowercase();
            if essence.is_empty() {
                return None;
            }
            let params = parts
                .filter_map(|p| p.split_once('='))
                .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().trim_matches('"')))
                .collect();
            Some(MediaRange { essence, params })
        })
        .collect()
}

/// Picks the response format from `Accept`: the first clause we can serve wins. Clauses asking
/// for a transformed answer (`as=...`) are skipped, except Tables where `tables` allows them.
pub fn negotiate(req: &HttpRequest, yaml_ok: bool) -> Result<Format, ApiError> {
    negotiate_output(req, yaml_ok, false).map(|o| o.format)
}

/// What a read answers: an encoding and, for an `as=Table` clause, the Table's apiVersion.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Output {
    pub format: Format,
    pub table: Option<&'static str>,
}

/// As `negotiate`, also offering Tables (JSON or YAML) in `meta.k8s.io` v1 and v1beta1 where
/// `tables`. As kube's `AllowsMediaTypeTransform`, a clause asking for any other transformation
/// (another Table version, PartialObjectMetadata) is not acceptable, so the next one is tried,
/// and nothing acceptable is a 406.
pub fn negotiate_output(
    req: &HttpRequest,
    yaml_ok: bool,
    tables: bool,
) -> Result<Output, ApiError> {
    let blank = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|a| a.trim().is_empty());
    if blank {
        return Ok(Output { format: Format::Json, table: None });
    }
    let picked = first_accepted(req, |essence, as_, g, v| {
        let format = match essence {
            "application/json" => Format::Json,
            "application/*" | "*/*" if as_.is_none() => Format::Json,
            "application/yaml" if yaml_ok => Format::Yaml,
            _ => return None,
        };
        let table = match (as_, g, v) {
            (None, None, None) => None,
            (Some("Table"), Some("meta.k8s.io"), Some("v1")) if tables => Some("meta.k8s.io/v1"),
            (Some("Table"), Some("meta.k8s.io"), Some("v1beta1")) if tables => {
                Some("meta.k8s.io/v1beta1")
            }
            _ => return None,
        };
        Some(Output { format, table })
    });
    picked.ok_or_else(|| {
        let offered =
            if yaml_ok { "application/json, application/yaml" } else { "application/json" };
        ApiError::NotAcceptable(format!("only the following media types are accepted: {offered}"))
    })
}

/// The first clause of `Accept` that `pick` takes, given its essence and its `as`, `g` and `v`
/// parameters (clauses with q=0 skipped); `None` without an Accept header or when none is taken.
pub fn first_accepted<T>(
    req: &HttpRequest,
    pick: impl Fn(&str, Option<&str>, Option<&str>, Option<&str>) -> Option<T>,
) -> Option<T> {
    let accept = req.headers().get(header::ACCEPT).and_then(|v| v.to_str().ok())?;
    media_ranges(accept).iter().find_map(|range| {
        if range.params.iter().any(|(k, v)| k == "q" && v.parse::<f32>().is_ok_and(|q| q == 0.0)) {
            return None;
        }
        let param = |name: &str| range.params.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
        pick(&range.essence, param("as"), param("g"), param("v"))
    })
}

/// The essence of the request's `Content-Type` (parameters such as charset dropped).
pub fn content_type(req: &HttpRequest) -> String {
    req.headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(|v| v.split(';').next().unwrap_or("").trim().to_ascii_lowercase())
        .unwrap_or_default()
}

/// Decodes a create or update body: JSON, or YAML where `yaml_ok`.
pub fn decode_object(req: &HttpRequest, body: &[u8], yaml_ok: bool) -> Result<Value, ApiError> {
    decode_body(&content_type(req), body, yaml_ok)
}

/// How a decoded create or update body was written, for its repeated keys.
pub enum Form<'a> {
    /// JSON, with the paths of the keys it repeats, found as it was decoded.
    Json(Vec<String>),
    /// YAML, whose repeated keys are found (and worded by line) from its text.
    Yaml(&'a str),
}

/// Decodes a create or update body (JSON, or YAML where `yaml_ok`), noting how it was written:
/// a JSON body is parsed once for both its object and its repeated keys.
pub fn decode_object_and_form<'a>(
    req: &HttpRequest,
    res: &ResourceInfo,
    body: &'a [u8],
    yaml_ok: bool,
) -> Result<(Value, Form<'a>), ApiError> {
    let ct = content_type(req);
    // kube's protobuf, for the kinds whose fields the document numbers: a message has no
    // repeated keys to report.
    if ct == protobuf::MEDIA_TYPE && protobuf::speaks_protobuf(res) {
        let value = protobuf::decode(res, body)?;
        return Ok((checked_object(value)?, Form::Json(Vec::new())));
    }
    if is_json(&ct) {
        let (value, duplicates) = crate::object::strict_decoding::from_json_noting_duplicates(body)
            .map_err(json_error)?;
        return Ok((checked_object(value)?, Form::Json(duplicates)));
    }
    let value = decode_body(&ct, body, yaml_ok)?;
    // Decoding succeeded, so the body is YAML and UTF-8.
    Ok((value, Form::Yaml(std::str::from_utf8(body).unwrap_or_default())))
}

fn is_json(ct: &str) -> bool {
    matches!(ct, "" | "application/json")
}

fn json_error(e: serde_json::Error) -> ApiError {
    ApiError::bad_request(format!("couldn't decode the request body as JSON: {e}"))
}

/// Decodes a body of media type `ct` (its essence, as `content_type` gives it) into an object.
pub fn decode_body(ct: &str, body: &[u8], yaml_ok: bool) -> Result<Value, ApiError> {
    let value: Value = match ct {
        _ if is_json(ct) => serde_json::from_slice(body).map_err(json_error)?,
        "application/yaml" if yaml_ok => {
            let text = std::str::from_utf8(body)
                .map_err(|_| ApiError::bad_request("the request body is not valid UTF-8"))?;
            crate::object::limits::yaml_to_value(text).map_err(|e| {
                ApiError::bad_request(format!("couldn't decode the request body as YAML: {e}"))
            })?
        }
        _ => {
            let offered =
                if yaml_ok { "application/json, application/yaml" } else { "application/json" };
            return Err(ApiError::UnsupportedMediaType(format!(
                "the body of the request was in an unknown format - accepted media types include: {offered}"
            )));
        }
    };
    checked_object(value)
}

/// `value` if it is an object whose identity fields are strings (or absent).
fn checked_object(value: Value) -> Result<Value, ApiError> {
    if !value.is_object() {
        return Err(ApiError::bad_request(format!(
            "the request body must be an object, got {}",
            kind_of(&value)
        )));
    }
    // The identity fields are read as strings everywhere; another type would otherwise be
    // taken for "absent" (a numeric namespace silently replaced by the path's).
    if let Some(meta) = value.get("metadata").and_then(Value::as_object) {
        for field in ["name", "namespace", "generateName"] {
            match meta.get(field) {
                None | Some(Value::Null) | Some(Value::String(_)) => {}
                Some(other) => {
                    return Err(ApiError::bad_request(format!(
                    "couldn't decode the request body: metadata.{field} must be a string, got {}",
                    kind_of(other)
                )))
                }
            }
        }
    }
    Ok(value)
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Encodes `body` in `format` with `code`.
pub fn respond(
    code: StatusCode,
    format: Format,
    body: &impl Serialize,
) -> Result<HttpResponse, ApiError> {
    let bytes = match format {
        Format::Json => serde_json::to_vec(body).map_err(|e| ApiError::Internal(e.to_string()))?,
        Format::Yaml => {
            serde_yaml::to_string(body).map_err(|e| ApiError::Internal(e.to_string()))?.into_bytes()
        }
    };
    Ok(HttpResponse::build(code)
        .insert_header((header::CONTENT_TYPE, HeaderValue::from_static(format.content_type())))
        .body(bytes))
}

/// A write's answer in `format`, with `res`'s apiVersion: an object as stored is sent as its
/// stored bytes in JSON (as a get sends it) rather than encoded again.
pub fn respond_object(
    res: &ResourceInfo,
    code: StatusCode,
    format: Format,
    object: &Object,
) -> Result<HttpResponse, ApiError> {
    match (object, format) {
        (Object::Stored(w), Format::Json) => respond_stored(res, code, &w.value),
        _ => respond(code, format, &crate::object::for_version(res, object.value())),
    }
}

/// A JSON answer of one stored object: its stored bytes with `res`'s apiVersion spliced in
/// (`encode_item`), nothing decoded or encoded again.
pub fn respond_stored(
    res: &ResourceInfo,
    code: StatusCode,
    stored: &[u8],
) -> Result<HttpResponse, ApiError> {
    let mut body = Vec::with_capacity(stored.len() + 32);
    encode_item(res, &api_version_json(res), stored, &mut body)?;
    Ok(HttpResponse::build(code)
        .insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static(Format::Json.content_type()),
        ))
        .body(body))
}

/// `res`'s apiVersion as a JSON string, the form `encode_item` splices into stored bytes.
pub fn api_version_json(res: &ResourceInfo) -> Vec<u8> {
    serde_json::to_vec(&res.api_version()).unwrap_or_default()
}

/// Adds one `Warning: 299 - "<text>"` header per distinct warning, within kube-apiserver's
/// bounds (see [`warning_headers`]).
pub fn with_warnings(mut resp: HttpResponse, warnings: &[String]) -> HttpResponse {
    for v in warning_headers(warnings, WARNING_TOTAL_RUNES, WARNING_ITEM_RUNES) {
        resp.headers_mut().append(header::WARNING, v);
    }
    resp
}

/// The warning text kube-apiserver sends in all, in characters, before it cuts each warning
/// short (endpoints/filters/warning.go `truncateAtTotalRunes`).
const WARNING_TOTAL_RUNES: usize = 4 * 1024;
/// What each warning is cut to once the total is reached (`truncateItemRunes`).
const WARNING_ITEM_RUNES: usize = 256;

/// kube's warning recorder: warnings are deduplicated and kept in order while their text fits
/// in `total` characters. The one that does not fit switches to truncation: every warning so
/// far is sent again cut to `item` characters, each later one too, until the sum reaches
/// `total`; the rest are dropped. A body with thousands of unknown fields so gets a few kB of
/// headers, not megabytes that clients refuse.
fn warning_headers(warnings: &[String], total: usize, item: usize) -> Vec<HeaderValue> {
    fn cut(w: &str, item: usize) -> (&str, usize) {
        match w.char_indices().nth(item) {
            Some((at, _)) => (&w[..at], item),
            None => (w, w.chars().count()),
        }
    }
    let header = |text: &str| {
        let text = text.replace('\\', "\\\\").replace('"', "\\\"");
        HeaderValue::from_str(&format!("299 - \"{text}\"")).ok()
    };
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut ordered: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    let (mut written, mut truncating) = (0, false);
    for w in warnings {
        if w.is_empty() || !seen.insert(w) {
            continue;
        }
        if truncating && written >= total {
            break;
        }
        ordered.push(w);
        let (text, runes) = if truncating { cut(w, item) } else { (w.as_str(), w.chars().count()) };
        let Some(value) = header(text) else { continue };
        if truncating || written + runes <= total {
            written += runes;
            out.push(value);
            continue;
        }
        truncating = true;
        written = 0;
        out.clear();
        for w in &ordered {
            let (text, runes) = cut(w, item);
            if let Some(value) = header(text) {
                written += runes;
                out.push(value);
            }
        }
    }
    out
}

/// Appends one stored object as `for_version` would encode it: the stored bytes with the
/// top-level `apiVersion` value replaced, or, for an object without one, decoded and encoded.
/// Stored bytes are serde_json's own encoding, so this matches a decode and encode.
pub fn encode_item(
    res: &ResourceInfo,
    api_version: &[u8],
    stored: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), ApiError> {
    match api_version_span(stored) {
        Some((from, to)) => {
            out.extend_from_slice(&stored[..from]);
            out.extend_from_slice(api_version);
            out.extend_from_slice(&stored[to..]);
        }
        None => serde_json::to_writer(
            &mut *out,
            &crate::object::for_version(res, &decode_stored(stored)?),
        )
        .map_err(|e| ApiError::Internal(e.to_string()))?,
    }
    Ok(())
}

/// The byte range of the top-level `"apiVersion"` string value (quotes included) in a JSON
/// object; `None` if it has none or is not an object.
pub(crate) fn api_version_span(json: &[u8]) -> Option<(usize, usize)> {
    let mut i = skip_ws(json, 0);
    if json.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = skip_ws(json, i);
        if json.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = value_end(json, i)?;
        let key = &json[i..key_end];
        i = skip_ws(json, key_end);
        if json.get(i) != Some(&b':') {
            return None;
        }
        let start = skip_ws(json, i + 1);
        let end = value_end(json, start)?;
        if key == b"\"apiVersion\"" {
            return (json[start] == b'"').then_some((start, end));
        }
        i = skip_ws(json, end);
        if json.get(i) != Some(&b',') {
            return None;
        }
        i += 1;
    }
}

fn skip_ws(json: &[u8], mut i: usize) -> usize {
    while json.get(i).is_some_and(|b| b.is_ascii_whitespace()) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_deduplicated_and_truncated_as_kube_does() {
        // kube's own case (endpoints/filters/warning_test.go TestTruncation), limits 25 and 5.
        let sent = |ws: &[&str]| -> Vec<String> {
            let ws: Vec<String> = ws.iter().map(|w| w.to_string()).collect();
            let headers = warning_headers(&ws, 25, 5);
            headers.iter().map(|v| String::from_utf8(v.as_bytes().to_vec()).unwrap()).collect()
        };
        let first = ["aaaaaaaaaa", "aaaaaaaaaa", "bb", "ccc", "Iñtërnâtiô"];
        assert_eq!(
            sent(&first),
            [r#"299 - "aaaaaaaaaa""#, r#"299 - "bb""#, r#"299 - "ccc""#, "299 - \"Iñtërnâtiô\""]
        );
        let all = [&first[..], &["e", "ffffffffff", "ffffffffff", "gggggggggg", "h"]].concat();
        assert_eq!(
            sent(&all),
            [
                r#"299 - "aaaaa""#,
                r#"299 - "bb""#,
                r#"299 - "ccc""#,
                "299 - \"Iñtër\"",
                r#"299 - "e""#,
                r#"299 - "fffff""#,
                r#"299 - "ggggg""#,
            ]
        );
        // Quotes and backslashes are escaped; text no header can carry is left out.
        assert_eq!(sent(&["a\"b\\c", "x\ny", ""]), [r#"299 - "a\"b\\c""#]);
    }

    #[test]
    fn many_warnings_stay_within_kube_bounds() {
        let many: Vec<String> =
            (0..150_000).map(|i| format!("unknown field \"spec.f{i}\"")).collect();
        let resp = with_warnings(HttpResponse::Ok().finish(), &many);
        let sent: Vec<&str> =
            resp.headers().get_all(header::WARNING).map(|v| v.to_str().unwrap()).collect();
        let text: usize = sent.iter().map(|v| v.len()).sum();
        assert!(text < 2 * WARNING_TOTAL_RUNES, "{} headers, {text} bytes", sent.len());
        assert_eq!(sent[0], r#"299 - "unknown field \"spec.f0\"""#);
    }

    #[test]
    fn the_top_level_api_version_is_found_without_decoding() {
        let span = |s: &str| api_version_span(s.as_bytes()).map(|(a, b)| s[a..b].to_owned());
        assert_eq!(span(r#"{"apiVersion":"a/v1","kind":"K"}"#).as_deref(), Some(r#""a/v1""#));
        assert_eq!(
            span(r#" { "m" : {"apiVersion":"x"} , "apiVersion" : "b\"c" }"#).as_deref(),
            Some(r#""b\"c""#)
        );
        assert_eq!(
            span(r#"{"m":["apiVersion",{"a":"]"}],"n":1,"apiVersion":"z"}"#).as_deref(),
            Some(r#""z""#)
        );
        assert_eq!(span(r#"{"m":{"apiVersion":"x"}}"#), None);
        assert_eq!(span(r#"{"apiVersion":1}"#), None);
        assert_eq!(span("{}"), None);
        assert_eq!(span("[]"), None);
        assert_eq!(span(r#"{"a":"unterminated"#), None);
    }
    use actix_web::test::TestRequest;

    fn output(accept: &str, tables: bool) -> Result<Output, ApiError> {
        let req = TestRequest::default().insert_header((header::ACCEPT, accept)).to_http_request();
        negotiate_output(&req, true, tables)
    }

    #[test]
    fn tables_are_negotiated_as_kube_allows_them() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        let table = |format, v| Ok(Output { format, table: Some(v) });
        let plain = |format| Ok(Output { format, table: None });
        assert_eq!(output(kubectl, true), table(Format::Json, "meta.k8s.io/v1"));
        assert_eq!(output(kubectl, false), plain(Format::Json));
        assert_eq!(
            output("application/json;g=meta.k8s.io;as=Table;v=v1beta1", true),
            table(Format::Json, "meta.k8s.io/v1beta1")
        );
        assert_eq!(
            output("application/yaml;as=Table;v=v1;g=meta.k8s.io", true),
            table(Format::Yaml, "meta.k8s.io/v1")
        );
        // Unknown versions and other transformations are passed over.
        assert_eq!(
            output("application/json;as=Table;v=v2;g=meta.k8s.io, application/yaml", true),
            plain(Format::Yaml)
        );
        for refused in [
            "application/json;as=Table;v=v2;g=meta.k8s.io",
            "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
            "*/*;as=Table;v=v1;g=meta.k8s.io",
            "application/json;as=Table;v=v1;g=meta.k8s.io;q=0",
        ] {
            assert!(matches!(output(refused, true), Err(ApiError::NotAcceptable(_))), "{refused}");
        }
        assert_eq!(output("*/*", true), plain(Format::Json));
        assert_eq!(output("", true), plain(Format::Json));
    }
}
