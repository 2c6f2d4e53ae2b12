//! Object decoding as create and update see it: a JSON or YAML body (the first byte picks the
//! media type) decoded, its nesting and size bounded, its metadata validated, and its repeated keys
//! found as strict decoding reports them.
#![no_main]

use libfuzzer_sys::fuzz_target;
use virt_apiserver::decode_body;
use virt_apiserver::limits::check_object;
use virt_apiserver::meta;
use virt_apiserver::strict_decoding;

fuzz_target!(|data: &[u8]| {
    let Some((&kind, body)) = data.split_first() else { return };
    let ct = ["application/json", "application/yaml", "text/plain", ""][usize::from(kind % 4)];
    let Ok(obj) = decode_body(ct, body, true) else { return };
    assert!(obj.is_object(), "decode_body answers objects only");
    if check_object(&obj).is_err() {
        return;
    }
    if let Some(m) = obj.get("metadata").and_then(|m| m.as_object()) {
        // Bits 3 and 4 pick the name rules.
        let names = match kind & 24 {
            0 => meta::Names::Seed,
            8 => meta::Names::Subdomain,
            _ => meta::Names::Label,
        };
        let _ = meta::validate(m, kind & 4 == 0, names);
    }
    let _ = serde_json::to_vec(&obj);
    let _ = strict_decoding::duplicate_fields(body);
    if let Ok(text) = std::str::from_utf8(body) {
        let _ = strict_decoding::yaml_duplicate_keys(text);
    }
});
