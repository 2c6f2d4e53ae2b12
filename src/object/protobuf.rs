//! kube's protobuf wire form, decoded by schema: kubectl's typed clients send the bodies of
//! built-in kinds as `application/vnd.kubernetes.protobuf` (`kubectl create namespace`,
//! `create secret`, `create configmap`). The body is `k8s\0` and a `runtime.Unknown` message
//! (its `typeMeta`, then the object's own message as `raw`).
//!
//! No Rust here names a kind: the field numbers are data in the document. A property carries
//! `x-virt-proto-tag` (its number in kube's `generated.proto`), a kind speaks protobuf when its
//! properties carry them, and a definition whose message is not its JSON shape says so with
//! `x-virt-proto-type` (`time`, `micro-time`: seconds and nanos; `raw-json`: JSON bytes, as
//! `FieldsV1`; `quantity`: its text; `int-or-string`: its two forms), and a Go struct embedded
//! in a kind's type travels as a message of its own, numbered by the definition's
//! `x-virt-proto-embedded`. Scalars take their wire type from the schema's `type` and `format`;
//! an array is a repeated field, a map (`additionalProperties`) repeated key/value entries, a
//! `$ref` a nested message. Fields the schema does not number are skipped, as gogo-protobuf
//! skips unknown fields.

use base64::Engine;
use serde_json::{Map, Value};

use crate::object::error::ApiError;
use crate::object::limits::MAX_OBJECT_DEPTH;
use crate::object::validation::{kind_schema, resolve};
use crate::resource::ResourceInfo;

/// kube's protobuf media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The envelope's magic prefix (`runtime/serializer/protobuf`).
const MAGIC: &[u8] = b"k8s\0";

/// Whether `res`'s kind has protobuf field numbers in the document.
pub fn speaks_protobuf(res: &ResourceInfo) -> bool {
    kind_schema(res).is_some_and(numbered)
}

fn numbered(schema: &Value) -> bool {
    let props = schema.get("properties").and_then(Value::as_object);
    props.is_some_and(|p| p.values().any(|v| v.get("x-virt-proto-tag").is_some()))
}

/// Decodes a protobuf body for `res` (a kind that `speaks_protobuf`): the envelope, its type,
/// then the object's message.
pub fn decode(res: &ResourceInfo, body: &[u8]) -> Result<Value, ApiError> {
    let bad =
        |why: String| ApiError::bad_request(format!("couldn't decode the protobuf body: {why}"));
    let schema = kind_schema(res)
        .filter(|s| numbered(s))
        .ok_or_else(|| bad(format!("{} has no protobuf field numbers", res.group_resource())))?;
    let unknown = body.strip_prefix(MAGIC).ok_or_else(|| bad("no k8s\\0 prefix".into()))?;
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    let mut r = Reader::new(unknown);
    while let Some((tag, wire)) = r.key().map_err(bad)? {
        match (tag, wire) {
            (1, LEN) => {
                let mut tm = Reader::new(r.bytes().map_err(bad)?);
                while let Some((tag, wire)) = tm.key().map_err(bad)? {
                    match (tag, wire) {
                        (1, LEN) => api_version = tm.string().map_err(bad)?,
                        (2, LEN) => kind = tm.string().map_err(bad)?,
                        _ => tm.skip(wire).map_err(bad)?,
                    }
                }
            }
            (2, LEN) => raw = r.bytes().map_err(bad)?,
            (3, LEN) => {
                let encoding = r.string().map_err(bad)?;
                if !encoding.is_empty() {
                    return Err(bad(format!("content encoding {encoding:?} is not supported")));
                }
            }
            _ => r.skip(wire).map_err(bad)?,
        }
    }
    let mut obj = message(schema, raw, 0).map_err(bad)?;
    if let Some(m) = obj.as_object_mut() {
        m.insert("apiVersion".into(), Value::String(api_version));
        m.insert("kind".into(), Value::String(kind));
    }
    Ok(obj)
}

// Wire types.
const VARINT: u8 = 0;
const I64: u8 = 1;
const LEN: u8 = 2;
const I32: u8 = 5;

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = *self.buf.get(self.pos).ok_or("truncated varint")?;
            self.pos += 1;
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint longer than 10 bytes".into())
    }

    /// The next field's number and wire type, or `None` at the end.
    fn key(&mut self) -> Result<Option<(u64, u8)>, String> {
        if self.pos == self.buf.len() {
            return Ok(None);
        }
        let k = self.varint()?;
        Ok(Some((k >> 3, (k & 7) as u8)))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end =
            self.pos.checked_add(n).filter(|&e| e <= self.buf.len()).ok_or("truncated field")?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = usize::try_from(self.varint()?).map_err(|_| "field too long")?;
        self.take(n)
    }

    fn string(&mut self) -> Result<String, String> {
        String::from_utf8(self.bytes()?.to_vec()).map_err(|_| "a string field is not UTF-8".into())
    }

    fn skip(&mut self, wire: u8) -> Result<(), String> {
        match wire {
            VARINT => self.varint().map(drop),
            I64 => self.take(8).map(drop),
            LEN => self.bytes().map(drop),
            I32 => self.take(4).map(drop),
            other => Err(format!("unsupported wire type {other}")),
        }
    }
}

/// One message decoded as `schema` describes it.
fn message(schema: &Value, buf: &[u8], depth: usize) -> Result<Value, String> {
    if depth > MAX_OBJECT_DEPTH {
        return Err("nested too deeply".into());
    }
    let schema = resolve(schema);
    match schema.get("x-virt-proto-type").and_then(Value::as_str) {
        Some("time") => return timestamp(buf, false),
        Some("micro-time") => return timestamp(buf, true),
        Some("raw-json") => {
            let mut r = Reader::new(buf);
            let mut raw = &[][..];
            while let Some((tag, wire)) = r.key()? {
                match (tag, wire) {
                    (1, LEN) => raw = r.bytes()?,
                    _ => r.skip(wire)?,
                }
            }
            return serde_json::from_slice(raw).map_err(|e| format!("raw JSON: {e}"));
        }
        // resource.Quantity: its text.
        Some("quantity") => {
            let mut r = Reader::new(buf);
            let mut text = String::new();
            while let Some((tag, wire)) = r.key()? {
                match (tag, wire) {
                    (1, LEN) => text = r.string()?,
                    _ => r.skip(wire)?,
                }
            }
            return Ok(Value::String(text));
        }
        // intstr.IntOrString: `type` 0 an int32 (`intVal`), 1 a string (`strVal`).
        Some("int-or-string") => {
            let mut r = Reader::new(buf);
            let (mut is_string, mut int, mut text) = (false, 0i32, String::new());
            while let Some((tag, wire)) = r.key()? {
                match (tag, wire) {
                    (1, VARINT) => is_string = r.varint()? == 1,
                    (2, VARINT) => int = r.varint()? as i64 as i32,
                    (3, LEN) => text = r.string()?,
                    _ => r.skip(wire)?,
                }
            }
            return Ok(if is_string { Value::String(text) } else { Value::from(int) });
        }
        Some(other) => return Err(format!("unknown x-virt-proto-type {other:?}")),
        None => {}
    }
    let props = schema.get("properties").and_then(Value::as_object);
    let field_of = move |tag: u64| {
        props?.iter().find(|(_, p)| p.get("x-virt-proto-tag").and_then(Value::as_u64) == Some(tag))
    };
    let mut out = Map::new();
    fields(schema, &field_of, buf, &mut out, depth)?;
    Ok(Value::Object(out))
}

/// A property by its field number.
type FieldOf<'s> = dyn Fn(u64) -> Option<(&'s String, &'s Value)> + 's;

/// The fields of one message of `schema` into `out`, numbered as `field_of` says. A number it
/// does not know may be one of the definition's `x-virt-proto-embedded` messages (Go's embedded
/// structs: a message of their own, whose fields are the definition's properties, numbered as
/// that message numbers them).
fn fields<'s>(
    schema: &'s Value,
    field_of: &FieldOf<'s>,
    buf: &[u8],
    out: &mut Map<String, Value>,
    depth: usize,
) -> Result<(), String> {
    let required = schema.get("required").and_then(Value::as_array).map_or(&[][..], Vec::as_slice);
    let mut r = Reader::new(buf);
    while let Some((tag, wire)) = r.key()? {
        let Some((name, prop)) = field_of(tag) else {
            match (embedded(schema, tag), wire) {
                (Some(numbers), LEN) => {
                    let props = schema.get("properties").and_then(Value::as_object);
                    let inner = move |t: u64| {
                        let (name, _) = numbers.iter().find(|(_, n)| n.as_u64() == Some(t))?;
                        props?.get_key_value(name)
                    };
                    if depth > MAX_OBJECT_DEPTH {
                        return Err("nested too deeply".into());
                    }
                    fields(schema, &inner, r.bytes()?, out, depth + 1)?;
                }
                _ => r.skip(wire)?,
            }
            continue;
        };
        let prop = resolve(prop);
        if let Some(items) = prop.get("items").filter(|_| type_of(prop) == "array") {
            let list = out.entry(name.clone()).or_insert_with(|| Value::Array(Vec::new()));
            let Value::Array(list) = list else { unreachable!("inserted as an array") };
            let items = resolve(items);
            if wire == LEN && is_varint(items) {
                // A packed repeated scalar.
                let mut packed = Reader::new(r.bytes()?);
                while packed.pos < packed.buf.len() {
                    list.push(scalar(items, VARINT, &mut packed, depth)?);
                }
            } else {
                list.push(scalar(items, wire, &mut r, depth)?);
            }
        } else if let Some(values) = prop.get("additionalProperties").filter(|v| v.is_object()) {
            let mut entry = Reader::new(r.bytes()?);
            let (mut key, mut value) = (String::new(), Value::Null);
            while let Some((tag, wire)) = entry.key()? {
                match tag {
                    1 => key = entry.string()?,
                    2 => value = scalar(resolve(values), wire, &mut entry, depth)?,
                    _ => entry.skip(wire)?,
                }
            }
            if value.is_null() {
                value = empty(resolve(values));
            }
            let map = out.entry(name.clone()).or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(map) = map {
                map.insert(key, value);
            }
        } else {
            let value = scalar(prop, wire, &mut r, depth)?;
            // gogo-protobuf writes every non-pointer scalar; Go's JSON leaves their zero values
            // out (`omitempty`), so a stored object has only what the client set.
            if !is_zero(&value) || required.contains(&Value::String(name.clone())) {
                out.insert(name.clone(), value);
            }
        }
    }
    Ok(())
}

/// The field numbers of `schema`'s embedded message `tag`, by property name.
fn embedded(schema: &Value, tag: u64) -> Option<&Map<String, Value>> {
    let all = schema.get("x-virt-proto-embedded")?.as_array()?;
    let e = all.iter().find(|e| e.get("tag").and_then(Value::as_u64) == Some(tag))?;
    e.get("properties")?.as_object()
}

/// A scalar's zero value ("", 0, false), or the zero time (null).
fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.is_empty(),
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        _ => false,
    }
}

fn type_of(schema: &Value) -> &str {
    schema.get("type").and_then(Value::as_str).unwrap_or("object")
}

fn is_varint(schema: &Value) -> bool {
    matches!(type_of(schema), "integer" | "boolean")
}

/// A map entry's value when the entry omits it: proto3 leaves out empty values.
fn empty(schema: &Value) -> Value {
    match type_of(schema) {
        "string" => Value::String(String::new()),
        "integer" => Value::from(0),
        "boolean" => Value::Bool(false),
        _ => Value::Object(Map::new()),
    }
}

/// One value of `schema`'s type, read from a field of wire type `wire`.
fn scalar(schema: &Value, wire: u8, r: &mut Reader<'_>, depth: usize) -> Result<Value, String> {
    let format = schema.get("format").and_then(Value::as_str).unwrap_or("");
    match (type_of(schema), wire) {
        ("string", LEN) if format == "byte" => {
            Ok(Value::String(base64::engine::general_purpose::STANDARD.encode(r.bytes()?)))
        }
        ("string", LEN) if schema.get("x-virt-proto-type").is_none() => {
            Ok(Value::String(r.string()?))
        }
        ("integer", VARINT) => {
            let v = r.varint()?;
            // int32 values travel sign-extended to 64 bits, int64 as two's complement.
            Ok(if format == "int32" { Value::from(v as i64 as i32) } else { Value::from(v as i64) })
        }
        ("boolean", VARINT) => Ok(Value::Bool(r.varint()? != 0)),
        ("number", I64) => {
            let b = r.take(8)?;
            Ok(Value::from(f64::from_le_bytes(b.try_into().map_err(|_| "short double")?)))
        }
        ("number", I32) => {
            let b = r.take(4)?;
            Ok(Value::from(f64::from(f32::from_le_bytes(b.try_into().map_err(|_| "short float")?))))
        }
        (_, LEN) => message(schema, r.bytes()?, depth + 1),
        (ty, wire) => Err(format!("a {ty} field arrived with wire type {wire}")),
    }
}

/// `meta.v1.Time` (`seconds`, `nanos`) as kube writes it in JSON: RFC 3339 in UTC, to the
/// second, or to the microsecond for `MicroTime`.
fn timestamp(buf: &[u8], micro: bool) -> Result<Value, String> {
    // kube writes the zero time as no bytes at all, and reads them back as the zero time: null.
    if buf.is_empty() {
        return Ok(Value::Null);
    }
    let (mut seconds, mut nanos) = (0i64, 0i64);
    let mut r = Reader::new(buf);
    while let Some((tag, wire)) = r.key()? {
        match (tag, wire) {
            (1, VARINT) => seconds = r.varint()? as i64,
            (2, VARINT) => nanos = i64::from(r.varint()? as i64 as i32),
            _ => r.skip(wire)?,
        }
    }
    // Zero seconds and nanos are what an empty message holds: the zero time too.
    if seconds == 0 && nanos == 0 {
        return Ok(Value::Null);
    }
    let days = seconds.div_euclid(86_400);
    let secs = seconds.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let (hh, mm, ss) = (secs / 3600, secs % 3600 / 60, secs % 60);
    let mut out = format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}");
    if micro {
        out.push_str(&format!(".{:06}", nanos.clamp(0, 999_999_999) / 1000));
    }
    out.push('Z');
    Ok(Value::String(out))
}

/// The proleptic Gregorian date of a day count from 1970-01-01 (Howard Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A protobuf encoder for the tests' inputs: what kube's generated marshallers write.
    #[derive(Default)]
    struct Writer(Vec<u8>);

    impl Writer {
        fn varint(&mut self, mut v: u64) -> &mut Self {
            while v >= 0x80 {
                self.0.push((v as u8) | 0x80);
                v >>= 7;
            }
            self.0.push(v as u8);
            self
        }
        fn key(&mut self, tag: u64, wire: u8) -> &mut Self {
            self.varint(tag << 3 | u64::from(wire))
        }
        fn bytes(&mut self, tag: u64, b: &[u8]) -> &mut Self {
            self.key(tag, LEN).varint(b.len() as u64);
            self.0.extend_from_slice(b);
            self
        }
        fn string(&mut self, tag: u64, s: &str) -> &mut Self {
            self.bytes(tag, s.as_bytes())
        }
        fn int(&mut self, tag: u64, v: i64) -> &mut Self {
            self.key(tag, VARINT).varint(v as u64)
        }
        fn done(&mut self) -> Vec<u8> {
            std::mem::take(&mut self.0)
        }
    }

    fn schema() -> Value {
        json!({"properties": {
            "name": {"type": "string", "x-virt-proto-tag": 1},
            "count": {"type": "integer", "format": "int32", "x-virt-proto-tag": 2},
            "big": {"type": "integer", "format": "int64", "x-virt-proto-tag": 3},
            "on": {"type": "boolean", "x-virt-proto-tag": 4},
            "tags": {"type": "array", "items": {"type": "string"}, "x-virt-proto-tag": 5},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}, "x-virt-proto-tag": 6},
            "blobs": {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}, "x-virt-proto-tag": 7},
            "child": {"type": "object", "properties": {"n": {"type": "string", "x-virt-proto-tag": 1}}, "x-virt-proto-tag": 8},
            "when": {"type": "string", "format": "date-time", "x-virt-proto-type": "time", "x-virt-proto-tag": 9},
            "ports": {"type": "array", "items": {"type": "integer", "format": "int32"}, "x-virt-proto-tag": 10},
            "unnumbered": {"type": "string"},
        }})
    }

    #[test]
    fn a_message_decodes_by_its_schema() {
        let child = Writer::default().string(1, "inner").done();
        let entry = Writer::default().string(1, "app").string(2, "web").done();
        let blob = Writer::default().string(1, "k").bytes(2, b"\x00\xff").done();
        let when = Writer::default().int(1, 1_700_000_000).done();
        let packed = Writer::default().varint(80).varint(443).done();
        let msg = Writer::default()
            .string(1, "a")
            .int(2, -5)
            .int(3, 1 << 40)
            .int(4, 1)
            .string(5, "x")
            .string(5, "y")
            .bytes(6, &entry)
            .bytes(7, &blob)
            .bytes(8, &child)
            .bytes(9, &when)
            .bytes(10, &packed)
            .string(99, "an unknown field is skipped")
            .done();
        let v = message(&schema(), &msg, 0).unwrap();
        assert_eq!(
            v,
            json!({"name": "a", "count": -5, "big": 1u64 << 40, "on": true, "tags": ["x", "y"],
                   "labels": {"app": "web"}, "blobs": {"k": "AP8="}, "child": {"n": "inner"},
                   "when": "2023-11-14T22:13:20Z", "ports": [80, 443]})
        );
    }

    /// kube's Volume: `name` its own, the volume source in an embedded `VolumeSource` message
    /// (field 2) numbering its own fields; a Quantity and an IntOrString by their messages.
    #[test]
    fn embedded_structs_quantities_and_int_or_strings_decode_as_kube_marshals_them() {
        let quantity = json!({"type": "string", "x-virt-proto-type": "quantity"});
        let port = json!({"type": "string", "format": "int-or-string",
                          "x-virt-proto-type": "int-or-string"});
        let size_limit = json!({"x-virt-proto-tag": 2, "allOf": [quantity]});
        let schema = json!({
            "properties": {
                "name": {"type": "string", "x-virt-proto-tag": 1},
                "emptyDir": {"properties": {"sizeLimit": size_limit}},
                "hostPath": {"properties": {"path": {"type": "string", "x-virt-proto-tag": 1}}},
                "target": {"x-virt-proto-tag": 3, "allOf": [port.clone()]},
                "named": {"x-virt-proto-tag": 4, "allOf": [port]},
            },
            "x-virt-proto-embedded": [{"tag": 2, "properties": {"hostPath": 1, "emptyDir": 2}}],
        });
        let size = Writer::default().string(1, "1Gi").done();
        let empty_dir = Writer::default().bytes(2, &size).done();
        let source = Writer::default().bytes(2, &empty_dir).done();
        let number = Writer::default().int(1, 0).int(2, 8080).done();
        let text = Writer::default().int(1, 1).string(3, "http").done();
        let msg = Writer::default()
            .string(1, "scratch")
            .bytes(2, &source)
            .bytes(3, &number)
            .bytes(4, &text)
            .done();
        assert_eq!(
            message(&schema, &msg, 0).unwrap(),
            json!({"name": "scratch", "emptyDir": {"sizeLimit": "1Gi"},
                   "target": 8080, "named": "http"})
        );
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        for bad in [&b"\x0a\x05ab"[..], b"\x0a", b"\x80", b"\x0b", b"\x12\x01\x08"] {
            assert!(message(&schema(), bad, 0).is_err(), "{bad:?}");
        }
        let child = Writer::default().bytes(8, b"").done();
        assert!(message(&schema(), &child, MAX_OBJECT_DEPTH).is_err(), "too deep");
        // A child whose schema cannot be resolved has no numbered fields: skipped, not an error.
        let open =
            json!({"properties": {"child": {"$ref": "#/definitions/none", "x-virt-proto-tag": 8}}});
        let nested = Writer::default().bytes(8, &Writer::default().string(1, "x").done()).done();
        assert_eq!(message(&open, &nested, 0).unwrap(), json!({"child": {}}));
    }

    /// gogo-protobuf writes zero scalars that Go's JSON leaves out: so does the decoder, but
    /// for fields the schema requires.
    #[test]
    fn zero_scalars_are_left_out_unless_required() {
        let msg = Writer::default()
            .string(1, "")
            .int(2, 0)
            .int(4, 0)
            .bytes(9, b"")
            .bytes(8, &Writer::default().string(1, "").done())
            .bytes(6, &Writer::default().string(1, "k").string(2, "").done())
            .done();
        let v = message(&schema(), &msg, 0).unwrap();
        assert_eq!(v, json!({"child": {}, "labels": {"k": ""}}), "map values are kept");
        let mut required = schema();
        required["required"] = json!(["name", "on"]);
        let v = message(&required, &msg, 0).unwrap();
        assert_eq!(v, json!({"name": "", "on": false, "child": {}, "labels": {"k": ""}}));
        let set = Writer::default().string(1, "a").int(2, -1).int(4, 1).done();
        assert_eq!(
            message(&schema(), &set, 0).unwrap(),
            json!({"name": "a", "count": -1, "on": true})
        );
    }

    #[test]
    fn times_are_rfc3339_in_utc() {
        let t = |s: i64, n: i64, micro: bool| {
            let buf = Writer::default().int(1, s).int(2, n).done();
            timestamp(&buf, micro).unwrap()
        };
        assert_eq!(t(0, 0, false), Value::Null, "zero seconds: what an empty message holds");
        assert_eq!(t(0, 5_000, true), "1970-01-01T00:00:00.000005Z");
        assert_eq!(timestamp(b"", false).unwrap(), Value::Null, "the zero time");
        assert_eq!(t(951_782_400, 0, false), "2000-02-29T00:00:00Z");
        assert_eq!(t(-1, 0, false), "1969-12-31T23:59:59Z");
        assert_eq!(t(1_700_000_000, 123_456_789, true), "2023-11-14T22:13:20.123456Z");
    }
}
