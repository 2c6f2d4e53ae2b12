//! The Swagger 2.0 document as gnostic's `openapi.v2.Document` protobuf message, the form
//! client-go's `OpenAPISchema()` (and so `kubectl explain --output plaintext-openapiv2`) asks
//! `/openapi/v2` for.
//!
//! Hand-written wire format from the field numbers of google/gnostic-models
//! `openapiv2/OpenAPIv2.proto`: a handful of message shapes, so a table of numbers here is
//! smaller than a protobuf toolchain at build time. As gnostic does, values of free form
//! (`default`, `example`, `enum` entries, `x-*` vendor extensions) are `Any` messages carrying
//! their YAML text; we write JSON, which YAML readers take as flow style. proto3 leaves out
//! scalar fields at their default (empty, false, 0). Security definitions are not encoded: the
//! document has none.

use serde_json::{Map, Value};

/// Encodes a whole Swagger 2.0 document.
pub fn encode_document(doc: &Value) -> Vec<u8> {
    let mut w = Writer::default();
    let Some(d) = doc.as_object() else { return w.0 };
    w.string(1, str_of(d, "swagger"));
    if let Some(info) = d.get("info") {
        w.message(2, &encode_info(info));
    }
    w.string(3, str_of(d, "host"));
    w.string(4, str_of(d, "basePath"));
    w.strings(5, d.get("schemes"));
    w.strings(6, d.get("consumes"));
    w.strings(7, d.get("produces"));
    if let Some(Value::Object(paths)) = d.get("paths") {
        let mut p = Writer::default();
        p.extensions(1, paths);
        for (name, item) in paths.iter().filter(|(k, _)| !k.starts_with("x-")) {
            p.named(2, name, &encode_path_item(item));
        }
        w.message(8, &p.0);
    }
    if let Some(Value::Object(defs)) = d.get("definitions") {
        let mut m = Writer::default();
        for (name, schema) in defs {
            m.named(1, name, &encode_schema(schema));
        }
        w.message(9, &m.0);
    }
    if let Some(Value::Object(params)) = d.get("parameters") {
        let mut m = Writer::default();
        for (name, p) in params {
            m.named(1, name, &encode_parameter(p));
        }
        w.message(10, &m.0);
    }
    if let Some(Value::Object(responses)) = d.get("responses") {
        let mut m = Writer::default();
        for (name, r) in responses {
            m.named(1, name, &encode_response(r));
        }
        w.message(11, &m.0);
    }
    for tag in d.get("tags").and_then(Value::as_array).into_iter().flatten() {
        w.message(14, &encode_tag(tag));
    }
    if let Some(docs) = d.get("externalDocs") {
        w.message(15, &encode_external_docs(docs));
    }
    w.extensions(16, d);
    w.0
}

fn str_of<'a>(m: &'a Map<String, Value>, key: &str) -> &'a str {
    m.get(key).and_then(Value::as_str).unwrap_or("")
}

fn bool_of(m: &Map<String, Value>, key: &str) -> bool {
    m.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn obj(v: &Value) -> Map<String, Value> {
    v.as_object().cloned().unwrap_or_default()
}

fn encode_info(v: &Value) -> Vec<u8> {
    let m = obj(v);
    let mut w = Writer::default();
    w.string(1, str_of(&m, "title"));
    w.string(2, str_of(&m, "version"));
    w.string(3, str_of(&m, "description"));
    w.string(4, str_of(&m, "termsOfService"));
    if let Some(c) = m.get("contact").and_then(Value::as_object) {
        let mut cw = Writer::default();
        cw.string(1, str_of(c, "name"));
        cw.string(2, str_of(c, "url"));
        cw.string(3, str_of(c, "email"));
        cw.extensions(4, c);
        w.message(5, &cw.0);
    }
    if let Some(l) = m.get("license").and_then(Value::as_object) {
        let mut lw = Writer::default();
        lw.string(1, str_of(l, "name"));
        lw.string(2, str_of(l, "url"));
        lw.extensions(3, l);
        w.message(6, &lw.0);
    }
    w.extensions(7, &m);
    w.0
}

fn encode_external_docs(v: &Value) -> Vec<u8> {
    let m = obj(v);
    let mut w = Writer::default();
    w.string(1, str_of(&m, "description"));
    w.string(2, str_of(&m, "url"));
    w.extensions(3, &m);
    w.0
}

fn encode_tag(v: &Value) -> Vec<u8> {
    let m = obj(v);
    let mut w = Writer::default();
    w.string(1, str_of(&m, "name"));
    w.string(2, str_of(&m, "description"));
    if let Some(d) = m.get("externalDocs") {
        w.message(3, &encode_external_docs(d));
    }
    w.extensions(4, &m);
    w.0
}

/// `PathItem`: `$ref`, the operations by method, shared parameters.
fn encode_path_item(v: &Value) -> Vec<u8> {
    let m = obj(v);
    let mut w = Writer::default();
    w.string(1, str_of(&m, "$ref"));
    for (field, method) in [
        (2, "get"),
        (3, "put"),
        (4, "post"),
        (5, "delete"),
        (6, "options"),
        (7, "head"),
        (8, "patch"),
    ] {
        if let Some(op) = m.get(method) {
            w.message(field, &encode_operation(op));
        }
    }
    for p in m.get("parameters").and_then(Value::as_array).into_iter().flatten() {
        w.message(9, &encode_parameters_item(p));
    }
    w.extensions(10, &m);
    w.0
}

fn encode_operation(v: &Value) -> Vec<u8> {
    let m = obj(v);
    let mut w = Writer::default();
    w.strings(1, m.get("tags"));
    w.string(2, str_of(&m, "summary"));
    w.string(3, str_of(&m, "description"));
    if let Some(d) = m.get("externalDocs") {
        w.message(4, &encode_external_docs(d));
    }
    w.string(5, str_of(&m, "operationId"));
    w.strings(6, m.get("produces"));
    w.strings(7, m.get("consumes"));
    for p in m.get("parameters").and_then(Value::as_array).into_iter().flatten() {
        w.message(8, &encode_parameters_item(p));
    }
    if let Some(Value::Object(responses)) = m.get("responses") {
        let mut rw = Writer::default();
        for (code, r) in responses.iter().filter(|(k, _)| !k.starts_with("x-")) {
            rw.named(1, code, &encode_response_value(r));
        }
        rw.extensions(2, responses);
        w.message(9, &rw.0);
    }
    w.strings(10, m.get("schemes"));
    w.bool(11, bool_of(&m, "deprecated"));
    w.extensions(13, &m);
    w.0
}

/// `JsonReference`: `$ref` and a description.
fn encode_reference(m: &Map<String, Value>) -> Vec<u8> {
    let mut w = Writer::default();
    w.string(1, str_of(m, "$ref"));
    w.string(2, str_of(m, "description"));
    w.0
}

/// `ParametersItem`: a parameter, or a reference to a shared one.
fn encode_parameters_item(v: &Value) -> Vec<u8> {
    let m = obj(v);
    let mut w = Writer::default();
    if m.contains_key("$ref") {
        w.message(2, &encode_reference(&m));
    } else {
        w.message(1, &encode_parameter(v));
    }
    w.0
}

/// `Parameter`: a body parameter, or one of the four located ones.
fn encode_parameter(v: &Value) -> Vec<u8> {
    let m = obj(v);
    let location = str_of(&m, "in");
    let mut w = Writer::default();
    if location == "body" {
        let mut b = Writer::default();
        b.string(1, str_of(&m, "description"));
        b.string(2, str_of(&m, "name"));
        b.string(3, location);
        b.bool(4, bool_of(&m, "required"));
        if let Some(s) = m.get("schema") {
            b.message(5, &encode_schema(s));
        }
        b.extensions(6, &m);
        w.message(1, &b.0);
        return w.0;
    }
    // Header and path sub-schemas have no allowEmptyValue; query and form data have it as
    // field 5, which moves the rest up by one.
    let (which, allow_empty) = match location {
        "header" => (1, false),
        "formData" => (2, true),
        "query" => (3, true),
        _ => (4, false),
    };
    let mut s = Writer::default();
    s.bool(1, bool_of(&m, "required"));
    s.string(2, location);
    s.string(3, str_of(&m, "description"));
    s.string(4, str_of(&m, "name"));
    let base = if allow_empty {
        s.bool(5, bool_of(&m, "allowEmptyValue"));
        6
    } else {
        5
    };
    s.primitive_fields(base, &m);
    s.extensions(base + 17, &m);
    let mut nb = Writer::default();
    nb.message(which, &s.0);
    w.message(2, &nb.0);
    w.0
}

/// `PrimitivesItems`: the items of a non-body parameter or header.
fn encode_primitives_items(v: &Value) -> Vec<u8> {
    let m = obj(v);
    let mut w = Writer::default();
    w.primitive_fields(1, &m);
    w.extensions(18, &m);
    w.0
}

fn encode_response_value(v: &Value) -> Vec<u8> {
    let m = obj(v);
    let mut w = Writer::default();
    if m.contains_key("$ref") {
        w.message(2, &encode_reference(&m));
    } else {
        w.message(1, &encode_response(v));
    }
    w.0
}

fn encode_response(v: &Value) -> Vec<u8> {
    let m = obj(v);
    let mut w = Writer::default();
    w.string(1, str_of(&m, "description"));
    if let Some(s) = m.get("schema") {
        // `SchemaItem`: a schema, or a file schema (`type: file`).
        let mut item = Writer::default();
        if s.get("type").and_then(Value::as_str) == Some("file") {
            item.message(2, &encode_file_schema(s));
        } else {
            item.message(1, &encode_schema(s));
        }
        w.message(2, &item.0);
    }
    if let Some(Value::Object(headers)) = m.get("headers") {
        let mut hw = Writer::default();
        for (name, h) in headers {
            let hm = obj(h);
            let mut one = Writer::default();
            one.primitive_fields(1, &hm);
            one.string(18, str_of(&hm, "description"));
            one.extensions(19, &hm);
            hw.named(1, name, &one.0);
        }
        w.message(3, &hw.0);
    }
    if let Some(Value::Object(examples)) = m.get("examples") {
        let mut ew = Writer::default();
        for (name, e) in examples {
            ew.named(1, name, &encode_any(e));
        }
        w.message(4, &ew.0);
    }
    w.extensions(5, &m);
    w.0
}

fn encode_file_schema(v: &Value) -> Vec<u8> {
    let m = obj(v);
    let mut w = Writer::default();
    w.string(1, str_of(&m, "format"));
    w.string(2, str_of(&m, "title"));
    w.string(3, str_of(&m, "description"));
    if let Some(d) = m.get("default") {
        w.message(4, &encode_any(d));
    }
    w.strings(5, m.get("required"));
    w.string(6, str_of(&m, "type"));
    w.bool(7, bool_of(&m, "readOnly"));
    if let Some(d) = m.get("externalDocs") {
        w.message(8, &encode_external_docs(d));
    }
    if let Some(e) = m.get("example") {
        w.message(9, &encode_any(e));
    }
    w.extensions(10, &m);
    w.0
}

/// `Schema`, recursively.
pub fn encode_schema(v: &Value) -> Vec<u8> {
    let m = obj(v);
    let mut w = Writer::default();
    w.string(1, str_of(&m, "$ref"));
    w.string(2, str_of(&m, "format"));
    w.string(3, str_of(&m, "title"));
    w.string(4, str_of(&m, "description"));
    if let Some(d) = m.get("default") {
        w.message(5, &encode_any(d));
    }
    w.double(6, m.get("multipleOf"));
    w.double(7, m.get("maximum"));
    w.bool(8, bool_of(&m, "exclusiveMaximum"));
    w.double(9, m.get("minimum"));
    w.bool(10, bool_of(&m, "exclusiveMinimum"));
    w.int64(11, m.get("maxLength"));
    w.int64(12, m.get("minLength"));
    w.string(13, str_of(&m, "pattern"));
    w.int64(14, m.get("maxItems"));
    w.int64(15, m.get("minItems"));
    w.bool(16, bool_of(&m, "uniqueItems"));
    w.int64(17, m.get("maxProperties"));
    w.int64(18, m.get("minProperties"));
    w.strings(19, m.get("required"));
    for e in m.get("enum").and_then(Value::as_array).into_iter().flatten() {
        w.message(20, &encode_any(e));
    }
    match m.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            // A oneof member is written even at its default, so `false` survives.
            let mut a = Writer::default();
            a.tag(2, 0);
            a.varint(u64::from(*b));
            w.message(21, &a.0);
        }
        Some(s @ Value::Object(_)) => {
            let mut a = Writer::default();
            a.message(1, &encode_schema(s));
            w.message(21, &a.0);
        }
        _ => {}
    }
    match m.get("type") {
        Some(Value::String(t)) => {
            let mut t_w = Writer::default();
            t_w.string(1, t);
            w.message(22, &t_w.0);
        }
        Some(types @ Value::Array(_)) => {
            let mut t_w = Writer::default();
            t_w.strings(1, Some(types));
            w.message(22, &t_w.0);
        }
        _ => {}
    }
    match m.get("items") {
        Some(Value::Array(items)) => {
            let mut i = Writer::default();
            for s in items {
                i.message(1, &encode_schema(s));
            }
            w.message(23, &i.0);
        }
        Some(s @ Value::Object(_)) => {
            let mut i = Writer::default();
            i.message(1, &encode_schema(s));
            w.message(23, &i.0);
        }
        _ => {}
    }
    for s in m.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        w.message(24, &encode_schema(s));
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        let mut p = Writer::default();
        for (name, s) in props {
            p.named(1, name, &encode_schema(s));
        }
        w.message(25, &p.0);
    }
    w.string(26, str_of(&m, "discriminator"));
    w.bool(27, bool_of(&m, "readOnly"));
    if let Some(x) = m.get("xml").and_then(Value::as_object) {
        let mut xw = Writer::default();
        xw.string(1, str_of(x, "name"));
        xw.string(2, str_of(x, "namespace"));
        xw.string(3, str_of(x, "prefix"));
        xw.bool(4, bool_of(x, "attribute"));
        xw.bool(5, bool_of(x, "wrapped"));
        xw.extensions(6, x);
        w.message(28, &xw.0);
    }
    if let Some(d) = m.get("externalDocs") {
        w.message(29, &encode_external_docs(d));
    }
    if let Some(e) = m.get("example") {
        w.message(30, &encode_any(e));
    }
    w.extensions(31, &m);
    w.0
}

/// `Any` with its `yaml` field (2) holding the value's text.
fn encode_any(v: &Value) -> Vec<u8> {
    let mut w = Writer::default();
    let mut text = serde_json::to_string(v).expect("JSON values encode");
    text.push('\n');
    w.string(2, &text);
    w.0
}

/// Protobuf wire format, proto3 rules: scalars at their default are left out.
#[derive(Default)]
struct Writer(Vec<u8>);

impl Writer {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    /// A field key: number and wire type (0 varint, 1 fixed64, 2 length-delimited).
    fn tag(&mut self, field: u32, wire: u8) {
        self.varint(u64::from(field) << 3 | u64::from(wire));
    }

    fn bytes(&mut self, field: u32, b: &[u8]) {
        self.tag(field, 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    /// A repeated string field from a JSON array of strings.
    fn strings(&mut self, field: u32, v: Option<&Value>) {
        for s in v.and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
            // Repeated fields keep empty entries.
            self.bytes(field, s.as_bytes());
        }
    }

    /// An embedded message, written even when empty: its presence is what it says.
    fn message(&mut self, field: u32, encoded: &[u8]) {
        self.bytes(field, encoded);
    }

    fn bool(&mut self, field: u32, b: bool) {
        if b {
            self.tag(field, 0);
            self.varint(1);
        }
    }

    fn int64(&mut self, field: u32, v: Option<&Value>) {
        if let Some(n) = v.and_then(Value::as_i64).filter(|n| *n != 0) {
            self.tag(field, 0);
            self.varint(n as u64);
        }
    }

    fn double(&mut self, field: u32, v: Option<&Value>) {
        if let Some(f) = v.and_then(Value::as_f64).filter(|f| *f != 0.0) {
            self.tag(field, 1);
            self.0.extend_from_slice(&f.to_le_bytes());
        }
    }

    /// A `Named*` entry: the name (1) and the encoded value (2).
    fn named(&mut self, field: u32, name: &str, value: &[u8]) {
        let mut n = Writer::default();
        n.string(1, name);
        n.message(2, value);
        self.message(field, &n.0);
    }

    /// The object's `x-*` members as `NamedAny` entries, in the document's order.
    fn extensions(&mut self, field: u32, m: &Map<String, Value>) {
        for (k, v) in m.iter().filter(|(k, _)| k.starts_with("x-")) {
            self.named(field, k, &encode_any(v));
        }
    }

    /// The 17 validation fields non-body parameters, headers and their items share, numbered
    /// from `base` (the number of `type`) in the .proto's order.
    fn primitive_fields(&mut self, base: u32, m: &Map<String, Value>) {
        self.string(base, str_of(m, "type"));
        self.string(base + 1, str_of(m, "format"));
        if let Some(items) = m.get("items") {
            self.message(base + 2, &encode_primitives_items(items));
        }
        self.string(base + 3, str_of(m, "collectionFormat"));
        if let Some(d) = m.get("default") {
            self.message(base + 4, &encode_any(d));
        }
        self.double(base + 5, m.get("maximum"));
        self.bool(base + 6, bool_of(m, "exclusiveMaximum"));
        self.double(base + 7, m.get("minimum"));
        self.bool(base + 8, bool_of(m, "exclusiveMinimum"));
        self.int64(base + 9, m.get("maxLength"));
        self.int64(base + 10, m.get("minLength"));
        self.string(base + 11, str_of(m, "pattern"));
        self.int64(base + 12, m.get("maxItems"));
        self.int64(base + 13, m.get("minItems"));
        self.bool(base + 14, bool_of(m, "uniqueItems"));
        for e in m.get("enum").and_then(Value::as_array).into_iter().flatten() {
            self.message(base + 15, &encode_any(e));
        }
        self.double(base + 16, m.get("multipleOf"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn varints_and_keys() {
        let mut w = Writer::default();
        w.varint(300);
        assert_eq!(w.0, [0xac, 0x02]);
        let mut w = Writer::default();
        w.tag(31, 2);
        assert_eq!(w.0, [0xfa, 0x01]);
    }

    #[test]
    fn a_small_document_encodes_to_known_bytes() {
        // Checked field by field against OpenAPIv2.proto (and `protoc --decode_raw`):
        // Document{swagger=1:"2.0", info=2:{title=1:"t", version=2:"1"}}
        let doc = json!({"swagger": "2.0", "info": {"title": "t", "version": "1"}});
        assert_eq!(
            encode_document(&doc),
            [0x0a, 3, b'2', b'.', b'0', 0x12, 6, 0x0a, 1, b't', 0x12, 1, b'1']
        );
    }

    #[test]
    fn schemas_encode_types_properties_and_extensions() {
        let schema = json!({
            "type": "object",
            "required": ["a"],
            "properties": {"a": {"type": "integer", "format": "int32", "minimum": 1}},
            "x-kubernetes-list-type": "atomic",
        });
        let got = encode_schema(&schema);
        let mut want = vec![
            0x9a, 0x01, 1, b'a', // required (19)
            0xb2, 0x01, 8, 0x0a, 6, b'o', b'b', b'j', b'e', b'c', b't', // type (22) TypeItem
        ];
        // properties (25): Properties{1: NamedSchema{1:"a", 2: Schema{format, minimum, type}}}
        let inner = [
            0x12, 5, b'i', b'n', b't', b'3', b'2', // format (2)
            0x49, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, // minimum (9) = 1.0 as fixed64
            0xb2, 0x01, 9, 0x0a, 7, b'i', b'n', b't', b'e', b'g', b'e', b'r', // type
        ];
        let mut named = vec![0x0a, 1, b'a', 0x12, inner.len() as u8];
        named.extend_from_slice(&inner);
        want.extend_from_slice(&[0xca, 0x01, named.len() as u8 + 2, 0x0a, named.len() as u8]);
        want.extend_from_slice(&named);
        // vendor_extension (31): NamedAny{1: name, 2: Any{2: "\"atomic\"\n"}}
        let any = b"\"atomic\"\n";
        let mut ext = vec![0x0a, 22];
        ext.extend_from_slice(b"x-kubernetes-list-type");
        ext.extend_from_slice(&[0x12, any.len() as u8 + 2, 0x12, any.len() as u8]);
        ext.extend_from_slice(any);
        want.extend_from_slice(&[0xfa, 0x01, ext.len() as u8]);
        want.extend_from_slice(&ext);
        assert_eq!(got, want);
    }

    #[test]
    fn parameters_pick_their_sub_schema() {
        // A query parameter: ParametersItem{1: Parameter{2: NonBodyParameter{3: Query{...}}}}
        let q = json!({"name": "watch", "in": "query", "type": "boolean", "uniqueItems": true});
        let got = encode_parameters_item(&q);
        let query = [
            0x12, 5, b'q', b'u', b'e', b'r', b'y', // in (2)
            0x22, 5, b'w', b'a', b't', b'c', b'h', // name (4)
            0x32, 7, b'b', b'o', b'o', b'l', b'e', b'a', b'n', // type (6)
            0xa0, 0x01, 1, // unique_items (20)
        ];
        let mut want = vec![0x0a, query.len() as u8 + 4, 0x12, query.len() as u8 + 2, 0x1a];
        want.push(query.len() as u8);
        want.extend_from_slice(&query);
        assert_eq!(got, want);
        // A reference: ParametersItem{2: JsonReference{1: "$ref"}}
        let r = json!({"$ref": "#/parameters/x"});
        let got = encode_parameters_item(&r);
        assert_eq!(&got[..4], &[0x12, 16, 0x0a, 14]);
        assert_eq!(&got[4..], b"#/parameters/x");
    }
}
