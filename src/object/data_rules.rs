//! kube's validation of data maps (`ValidateConfigMap`, `ValidateSecret` and their update forms),
//! for the kinds whose `x-virt-resource.dataRules` declare it: config-map keys, maps that may not
//! share keys, a total size, write-only maps merged into another (a Secret's `stringData`, kube's
//! conversion), fields immutable after create, an `immutable` flag that freezes the data, and keys
//! a map must hold for some values of a field (a Secret's type). Nothing here names a kind.
//!
//! `normalize` is decoding (400 on bytes that are not base64, as kube's JSON decoder); `validate`
//! words its causes as kube's validation does (422 Invalid).

use base64::Engine;
use serde_json::{Map, Value};

use crate::object::error::{ApiError, Cause};
use crate::object::meta::quote;
use crate::object::validation::{kind_schema, resolve};
use crate::resource::{DataMap, DataRules, RequiredKeys, ResourceInfo, ValueFormat};

/// `IsConfigMapKey`'s longest key (a DNS-1123 subdomain's).
const MAX_KEY_LEN: usize = 253;
const KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
/// What kube prints instead of a secret value it rejects.
const REDACTED: &str = "<secret contents redacted>";
const FROZEN: &str = "field is immutable when `immutable` is set";

/// Decodes `obj` as kube's decoder does for the kind: values of byte maps must be base64, and
/// write-only maps are merged into their targets (their keys win) and removed.
pub fn normalize(res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    let Some(rules) = res.data_rules else { return Ok(()) };
    let Some(root) = obj.as_object_mut() else { return Ok(()) };
    let byte_maps = rules.key_maps.iter().chain(rules.max_total_size.iter().flat_map(|s| s.maps));
    for map in byte_maps.filter(|m| m.base64) {
        let values = root.get(map.field).and_then(Value::as_object).into_iter().flatten();
        for s in values.filter_map(|(_, v)| v.as_str()) {
            if let Err(at) = go_base64(s) {
                return Err(ApiError::bad_request(format!(
                    "{kind} in version {:?} cannot be handled as a {kind}: illegal base64 data at input byte {at}",
                    res.version,
                    kind = res.kind
                )));
            }
        }
    }
    for w in rules.write_only {
        // One that is not a map of strings is left for schema validation to refuse.
        let strings = root
            .get(w.field)
            .and_then(Value::as_object)
            .is_some_and(|m| m.values().all(Value::is_string));
        if !strings {
            continue;
        }
        let Some(Value::Object(from)) = root.remove(w.field) else { continue };
        if from.is_empty() {
            continue;
        }
        let into = root.entry(w.into).or_insert_with(|| Value::Object(Map::new()));
        if !into.is_object() {
            *into = Value::Object(Map::new());
        }
        let Value::Object(into) = into else { unreachable!("made an object") };
        for (k, v) in from {
            let s = v.as_str().unwrap_or("");
            let v = if w.base64 {
                Value::String(base64::engine::general_purpose::STANDARD.encode(s))
            } else {
                v
            };
            into.insert(k, v);
        }
    }
    Ok(())
}

/// The causes kube's validation finds in `obj`, written over `old` when it is an update.
pub fn validate(res: &ResourceInfo, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let Some(rules) = res.data_rules else { return Vec::new() };
    let mut causes = Vec::new();
    if let Some(old) = old {
        update_causes(res, rules, obj, old, &mut causes);
    }
    for (i, map) in rules.key_maps.iter().enumerate() {
        let Some(values) = obj.get(map.field).and_then(Value::as_object) else { continue };
        for key in values.keys() {
            let path = format!("{}[{key}]", map.field);
            for msg in config_map_key_errors(key) {
                causes.push(Cause::invalid(&path, &quote(key), &msg));
            }
            for other in &rules.key_maps[i + 1..] {
                if obj.get(other.field).and_then(|m| m.get(key)).is_some() {
                    let msg = format!("duplicate of key present in {}", other.field);
                    causes.push(Cause::invalid(&path, &quote(key), &msg));
                }
            }
        }
    }
    if let Some(limit) = &rules.max_total_size {
        let total: usize = limit.maps.iter().map(|m| map_bytes(obj, m)).sum();
        if total > limit.bytes {
            causes.push(Cause::too_long(limit.field, limit.bytes));
        }
    }
    for req in rules.required_keys {
        if at_path(obj, req.when_field).and_then(Value::as_str) == Some(req.equals) {
            required_key_causes(req, obj, &mut causes);
        }
    }
    causes
}

/// `ValidateImmutableField` for each field fixed at create, then the `immutable` flag's rule.
fn update_causes(
    res: &ResourceInfo,
    rules: &DataRules,
    obj: &Value,
    old: &Value,
    causes: &mut Vec<Cause>,
) {
    let field = |v: &Value, f: &str| v.get(f).filter(|v| !v.is_null()).cloned();
    // kube defaults what it reads from storage: an object stored before its field had a
    // default compares as if it had it.
    let schema = kind_schema(res);
    let default = |f: &str| {
        schema.and_then(|s| s.get("properties")?.get(f)).and_then(|p| resolve(p).get("default"))
    };
    for f in rules.immutable_after_create {
        let new = field(obj, f);
        if new != field(old, f).or_else(|| default(f).cloned()) {
            let shown = match &new {
                None => quote(""),
                Some(Value::String(s)) => quote(s),
                Some(other) => other.to_string(),
            };
            causes.push(Cause::invalid(f, &shown, "field is immutable"));
        }
    }
    let Some(flag) = &rules.immutable_flag else { return };
    if field(old, flag.field) != Some(Value::Bool(true)) {
        return;
    }
    if field(obj, flag.field) != Some(Value::Bool(true)) {
        causes.push(Cause::forbidden(flag.field, FROZEN));
    }
    for f in flag.freezes {
        if field(obj, f) != field(old, f) {
            causes.push(Cause::forbidden(f, FROZEN));
        }
    }
}

fn required_key_causes(req: &RequiredKeys, obj: &Value, causes: &mut Vec<Cause>) {
    let map = at_path(obj, req.map).and_then(Value::as_object);
    let value = |k: &str| map.and_then(|m| m.get(k)).map(|v| v.as_str().unwrap_or(""));
    let path = |k: &str| format!("{}[{k}]", req.map);
    if req.any {
        if req.keys.iter().all(|k| value(k).is_none()) {
            causes.extend(req.keys.iter().map(|k| Cause::required(&path(k), "")));
        }
        return;
    }
    for key in req.keys {
        match value(key) {
            None => causes.push(Cause::required(&path(key), "")),
            Some("") if req.non_empty => causes.push(Cause::required(&path(key), "")),
            Some(v) => {
                let bytes = if req.base64 { go_base64(v).unwrap_or_default() } else { v.into() };
                if let Some(ValueFormat::Json) = req.format {
                    if let Err(e) = go_json_object(&bytes) {
                        causes.push(Cause::invalid(&path(key), &quote(REDACTED), &e));
                    }
                }
            }
        }
    }
}

/// The value at a dotted path.
fn at_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(obj, |v, seg| v.get(seg))
}

/// The bytes a map's values hold (decoded, for a byte map).
fn map_bytes(obj: &Value, map: &DataMap) -> usize {
    let values = obj.get(map.field).and_then(Value::as_object).into_iter().flatten();
    values
        .filter_map(|(_, v)| v.as_str())
        .map(|s| if map.base64 { go_base64(s).map_or(0, |b| b.len()) } else { s.len() })
        .sum()
}

/// `validation.IsConfigMapKey`.
pub fn config_map_key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > MAX_KEY_LEN {
        errs.push(format!("must be no more than {MAX_KEY_LEN} characters"));
    }
    let valid = !key.is_empty()
        && key.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if !valid {
        errs.push(KEY_MSG.to_string());
    }
    if key == "." {
        errs.push("must not be '.'".into());
    } else if key == ".." {
        errs.push("must not be '..'".into());
    } else if key.starts_with("..") {
        errs.push("must not start with '..'".into());
    }
    errs
}

/// Go's `base64.StdEncoding.Decode` (padding required, `\r` and `\n` skipped): the bytes, or the
/// offset its `CorruptInputError` names.
pub fn go_base64(s: &str) -> Result<Vec<u8>, usize> {
    let src = s.as_bytes();
    let sextet = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let newline = |c: u8| c == b'\n' || c == b'\r';
    let mut out = Vec::with_capacity(src.len() / 4 * 3);
    let mut si = 0;
    loop {
        let mut quantum = [0u8; 4];
        let mut len = 4;
        let mut j = 0;
        while j < 4 {
            if si == src.len() {
                if j == 0 {
                    return Ok(out);
                }
                // Padding is required: a short last quantum is corrupt where it began.
                return Err(si - j);
            }
            let c = src[si];
            si += 1;
            if let Some(v) = sextet(c) {
                quantum[j] = v;
                j += 1;
                continue;
            }
            if newline(c) {
                continue;
            }
            if c != b'=' {
                return Err(si - 1);
            }
            match j {
                0 | 1 => return Err(si - 1),
                2 => {
                    while si < src.len() && newline(src[si]) {
                        si += 1;
                    }
                    if si == src.len() {
                        return Err(src.len());
                    }
                    if src[si] != b'=' {
                        return Err(si - 1);
                    }
                    si += 1;
                }
                _ => {}
            }
            while si < src.len() && newline(src[si]) {
                si += 1;
            }
            if si < src.len() {
                return Err(si);
            }
            len = j;
            break;
        }
        let n = u32::from(quantum[0]) << 18
            | u32::from(quantum[1]) << 12
            | u32::from(quantum[2]) << 6
            | u32::from(quantum[3]);
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..len]);
        if len < 4 {
            return Ok(out);
        }
    }
}

/// Go's `json.Unmarshal` into a `map[string]interface{}`: the error text it returns, if any.
pub fn go_json_object(b: &[u8]) -> Result<(), String> {
    let mut s = Scanner { b, i: 0 };
    s.ws();
    let first = s.peek();
    s.value()
        .and_then(|()| {
            s.ws();
            match s.peek() {
                None => Ok(()),
                Some(c) => Err(Syntax::Char(c, "after top-level value")),
            }
        })
        .map_err(|e| match e {
            Syntax::End => "unexpected end of JSON input".to_string(),
            Syntax::Char(c, ctx) => format!("invalid character {} {ctx}", quote_char(c)),
            Syntax::Literal(c, lit, want) => {
                format!(
                    "invalid character {} in literal {lit} (expecting {})",
                    quote_char(c),
                    quote_char(want)
                )
            }
        })?;
    let found = match first {
        Some(b'{') | Some(b'n') => return Ok(()),
        Some(b'[') => "array",
        Some(b'"') => "string",
        Some(b't' | b'f') => "bool",
        _ => "number",
    };
    Err(format!("json: cannot unmarshal {found} into Go value of type map[string]interface {{}}"))
}

enum Syntax {
    End,
    Char(u8, &'static str),
    /// A bad byte inside `true`, `false` or `null`, with the byte expected.
    Literal(u8, &'static str, u8),
}

/// Go's `encoding/json` scanner, for its error texts.
struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl Scanner<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn next(&mut self) -> Result<u8, Syntax> {
        let c = self.peek().ok_or(Syntax::End)?;
        self.i += 1;
        Ok(c)
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r' | b'\n')) {
            self.i += 1;
        }
    }

    fn value(&mut self) -> Result<(), Syntax> {
        match self.next()? {
            b'{' => self.object(),
            b'[' => self.array(),
            b'"' => self.string(),
            b'-' => match self.next()? {
                b'0'..=b'9' => self.number(self.b[self.i - 1]),
                c => Err(Syntax::Char(c, "in numeric literal")),
            },
            c @ b'0'..=b'9' => self.number(c),
            b't' => self.literal("true"),
            b'f' => self.literal("false"),
            b'n' => self.literal("null"),
            c => Err(Syntax::Char(c, "looking for beginning of value")),
        }
    }

    fn literal(&mut self, lit: &'static str) -> Result<(), Syntax> {
        for &want in &lit.as_bytes()[1..] {
            let c = self.next()?;
            if c != want {
                return Err(Syntax::Literal(c, lit, want));
            }
        }
        Ok(())
    }

    fn object(&mut self) -> Result<(), Syntax> {
        self.ws();
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            match self.next()? {
                b'"' => self.string()?,
                c => return Err(Syntax::Char(c, "looking for beginning of object key string")),
            }
            self.ws();
            match self.next()? {
                b':' => {}
                c => return Err(Syntax::Char(c, "after object key")),
            }
            self.ws();
            self.value()?;
            self.ws();
            match self.next()? {
                b',' => self.ws(),
                b'}' => return Ok(()),
                c => return Err(Syntax::Char(c, "after object key:value pair")),
            }
        }
    }

    fn array(&mut self) -> Result<(), Syntax> {
        self.ws();
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws();
            self.value()?;
            self.ws();
            match self.next()? {
                b',' => {}
                b']' => return Ok(()),
                c => return Err(Syntax::Char(c, "after array element")),
            }
        }
    }

    fn string(&mut self) -> Result<(), Syntax> {
        loop {
            match self.next()? {
                b'"' => return Ok(()),
                b'\\' => match self.next()? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => {}
                    b'u' => {
                        for _ in 0..4 {
                            let c = self.next()?;
                            if !c.is_ascii_hexdigit() {
                                return Err(Syntax::Char(c, "in \\u hexadecimal character escape"));
                            }
                        }
                    }
                    c => return Err(Syntax::Char(c, "in string escape code")),
                },
                c if c < 0x20 => return Err(Syntax::Char(c, "in string literal")),
                _ => {}
            }
        }
    }

    /// The rest of a number whose first digit was `first`.
    fn number(&mut self, first: u8) -> Result<(), Syntax> {
        if first != b'0' {
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.i += 1;
            }
        }
        if self.peek() == Some(b'.') {
            self.i += 1;
            match self.next()? {
                b'0'..=b'9' => {}
                c => return Err(Syntax::Char(c, "after decimal point in numeric literal")),
            }
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.i += 1;
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.i += 1;
            }
            match self.next()? {
                b'0'..=b'9' => {}
                c => return Err(Syntax::Char(c, "in exponent of numeric literal")),
            }
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.i += 1;
            }
        }
        Ok(())
    }
}

/// Go's `quoteChar`: a byte as the scanner's errors show it.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".into(),
        b'"' => "'\"'".into(),
        b'\\' => "'\\\\'".into(),
        b'\n' => "'\\n'".into(),
        b'\r' => "'\\r'".into(),
        b'\t' => "'\\t'".into(),
        0x07 => "'\\a'".into(),
        0x08 => "'\\b'".into(),
        0x0b => "'\\v'".into(),
        0x0c => "'\\f'".into(),
        0x20..=0x7e => format!("'{}'", c as char),
        0x00..=0x1f | 0x7f => format!("'\\x{c:02x}'"),
        0x80..=0xa0 | 0xad => format!("'\\u{c:04x}'"),
        _ => format!("'{}'", char::from(c)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secrets() -> &'static ResourceInfo {
        crate::generated::RESOURCES
            .iter()
            .find(|r| r.data_rules.is_some_and(|d| !d.write_only.is_empty()))
            .expect("a kind with a write-only map")
    }

    /// An object stored before its immutable field had a default (a Secret without a type)
    /// may still be updated to the default, as kube defaults what it reads.
    #[test]
    fn immutable_fields_compare_with_the_stored_default() {
        let old = serde_json::json!({"metadata": {"name": "s"}, "data": {}});
        let opaque = serde_json::json!({"metadata": {"name": "s"}, "type": "Opaque"});
        assert!(validate(secrets(), &opaque, Some(&old)).is_empty());
        let tls = serde_json::json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls",
                                      "data": {"tls.crt": "", "tls.key": ""}});
        let causes = validate(secrets(), &tls, Some(&old));
        assert_eq!(causes[0].message, "Invalid value: \"kubernetes.io/tls\": field is immutable");
        assert_eq!(causes.len(), 1);
    }

    #[test]
    fn string_data_wins_and_is_dropped() {
        let mut obj = serde_json::json!({"data": {"a": "eA==", "b": "eQ=="},
                                         "stringData": {"a": "new", "c": ""}});
        normalize(secrets(), &mut obj).unwrap();
        assert_eq!(obj, serde_json::json!({"data": {"a": "bmV3", "b": "eQ==", "c": ""}}));
        let mut bad = serde_json::json!({"stringData": {"a": 1}});
        normalize(secrets(), &mut bad).unwrap();
        assert_eq!(bad, serde_json::json!({"stringData": {"a": 1}}), "left for the schema");
        let mut not_b64 = serde_json::json!({"data": {"a": "!"}});
        let err = normalize(secrets(), &mut not_b64).unwrap_err();
        assert_eq!(
            err,
            ApiError::BadRequest("Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 0".into())
        );
    }

    #[test]
    fn base64_as_go_decodes_it() {
        assert_eq!(go_base64("aGVsbG8="), Ok(b"hello".to_vec()));
        assert_eq!(go_base64("aGVs\nbG8="), Ok(b"hello".to_vec()));
        assert_eq!(go_base64(""), Ok(vec![]));
        assert_eq!(go_base64("aGk="), Ok(b"hi".to_vec()));
        assert_eq!(go_base64("aA=="), Ok(b"h".to_vec()));
        // Go's CorruptInputError offsets.
        assert_eq!(go_base64("aGk"), Err(0));
        assert_eq!(go_base64("aGVsbG8"), Err(4));
        assert_eq!(go_base64("a!=="), Err(1));
        assert_eq!(go_base64("aA="), Err(3));
        assert_eq!(go_base64("aA=x"), Err(2));
        assert_eq!(go_base64("aGk=x"), Err(4));
        assert_eq!(go_base64("=AAA"), Err(0));
        assert_eq!(go_base64("not base64"), Err(3));
    }

    #[test]
    fn json_errors_are_go_s() {
        assert_eq!(go_json_object(br#"{"auths":{}}"#), Ok(()));
        assert_eq!(go_json_object(b" null "), Ok(()));
        let err = |b: &[u8]| go_json_object(b).unwrap_err();
        assert_eq!(err(b""), "unexpected end of JSON input");
        assert_eq!(err(b"{\"a\":"), "unexpected end of JSON input");
        assert_eq!(err(b"nope"), "invalid character 'o' in literal null (expecting 'u')");
        assert_eq!(err(b"x"), "invalid character 'x' looking for beginning of value");
        assert_eq!(err(b"{a}"), "invalid character 'a' looking for beginning of object key string");
        assert_eq!(err(b"{\"a\" 1}"), "invalid character '1' after object key");
        assert_eq!(err(b"{\"a\":1 \"b\"}"), "invalid character '\"' after object key:value pair");
        assert_eq!(err(b"[1 2]"), "invalid character '2' after array element");
        assert_eq!(err(b"{} x"), "invalid character 'x' after top-level value");
        assert_eq!(err(b"\"\\q\""), "invalid character 'q' in string escape code");
        assert_eq!(err(b"-x"), "invalid character 'x' in numeric literal");
        assert_eq!(err(b"1.e"), "invalid character 'e' after decimal point in numeric literal");
        assert_eq!(err(b"[\n"), "unexpected end of JSON input");
        assert_eq!(err(b"\"a\nb\""), "invalid character '\\n' in string literal");
        let wrong = |t: &str| {
            format!("json: cannot unmarshal {t} into Go value of type map[string]interface {{}}")
        };
        assert_eq!(err(b"[1]"), wrong("array"));
        assert_eq!(err(b"\"s\""), wrong("string"));
        assert_eq!(err(b"1.5e3"), wrong("number"));
        assert_eq!(err(b"true"), wrong("bool"));
    }

    #[test]
    fn config_map_keys() {
        assert!(config_map_key_errors("a-b_c.D9").is_empty());
        assert_eq!(config_map_key_errors("a b"), [KEY_MSG]);
        assert_eq!(config_map_key_errors(""), [KEY_MSG]);
        assert_eq!(config_map_key_errors(".."), ["must not be '..'"]);
        assert_eq!(config_map_key_errors("..a"), ["must not start with '..'"]);
        assert_eq!(config_map_key_errors("."), ["must not be '.'"]);
        let long = "a".repeat(254);
        assert_eq!(config_map_key_errors(&long), ["must be no more than 253 characters"]);
    }
}
