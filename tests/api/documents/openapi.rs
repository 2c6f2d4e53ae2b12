//! `/openapi/v2` and `/openapi/v3` as B.11 serves them, and what the documents promise clients
//! (A.5, B.7).

use serde_json::Value;
use sha2::{Digest, Sha512};

use crate::common::*;
use virt_apiserver::GROUPS;

const PROTO_V2: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
const SMP: &str = "application/strategic-merge-patch+json";

fn document() -> Vec<u8> {
    std::fs::read(repo_root().join("openapi/virt-apiserver.json")).expect("the document")
}

fn upper_hex_sha512(bytes: &[u8]) -> String {
    Sha512::digest(bytes).iter().map(|b| format!("{b:02X}")).collect()
}

#[test]
fn v2_serves_the_document_bytes() {
    let s = TestServer::start();
    let doc = document();
    let r = s.get("/openapi/v2");
    assert_eq!(r.status, 200);
    assert!(r.body == doc, "the body is exactly openapi/virt-apiserver.json");
    assert!(r.header("Content-Type").unwrap_or("").starts_with("application/json"));
    let etag = format!("\"{}\"", upper_hex_sha512(&doc));
    assert_eq!(r.header("ETag"), Some(etag.as_str()));
    assert_eq!(r.header("Vary"), Some("Accept"));

    let r = s.request("GET", "/openapi/v2", &[("If-None-Match", &etag)], None);
    assert_eq!(r.status, 304);
    assert!(r.body.is_empty());
    let r = s.request("GET", "/openapi/v2", &[("If-None-Match", "\"stale\"")], None);
    assert_eq!(r.status, 200);

    let r = s.request("GET", "/openapi/v2", &[("Accept", "application/json")], None);
    assert_eq!(r.status, 200);
    let r = s.request("GET", "/openapi/v2", &[("Accept", "text/html")], None);
    assert_status(&r, 406, "NotAcceptable");
}

/// The top-level fields of a protobuf message: (field number, wire type, payload).
fn proto_fields(mut b: &[u8]) -> Vec<(u64, u8, &[u8])> {
    fn varint(b: &mut &[u8]) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = b[0];
            *b = &b[1..];
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                break;
            }
        }
        v
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = varint(&mut b);
        let wire = (key & 7) as u8;
        let payload = match wire {
            0 => {
                let start = b;
                varint(&mut b);
                &start[..start.len() - b.len()]
            }
            1 => {
                let (p, rest) = b.split_at(8);
                b = rest;
                p
            }
            2 => {
                let n = varint(&mut b) as usize;
                let (p, rest) = b.split_at(n);
                b = rest;
                p
            }
            other => panic!("unexpected wire type {other}"),
        };
        out.push((key >> 3, wire, payload));
    }
    out
}

#[test]
fn v2_as_gnostic_protobuf() {
    let s = TestServer::start();
    // client-go's spelling and kube-openapi's dotted one; the answer is always the dotted one.
    for accept in [
        PROTO_V2,
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
        &format!("{PROTO_V2}, application/json"),
    ] {
        let r = s.request("GET", "/openapi/v2", &[("Accept", accept)], None);
        assert_eq!(r.status, 200, "{accept}");
        assert_eq!(
            r.header("Content-Type"),
            Some("application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
        );
        assert_eq!(r.header("Vary"), Some("Accept"));
        assert!(r.body == virt_apiserver::OPENAPI_V2_PB, "the build-time bytes");
    }
    let r = s.request("GET", "/openapi/v2", &[("Accept", PROTO_V2)], None);
    let etag = r.header("ETag").expect("an ETag").to_string();
    assert_eq!(etag, format!("\"{}\"", upper_hex_sha512(&r.body)), "its own ETag");
    let again =
        s.request("GET", "/openapi/v2", &[("Accept", PROTO_V2), ("If-None-Match", &etag)], None);
    assert_eq!(again.status, 304);

    // openapi.v2.Document: swagger (1), info (2), paths (8), definitions (9), parameters (10).
    let doc: Value = serde_json::from_slice(&document()).unwrap();
    let fields = proto_fields(&r.body);
    assert_eq!(fields[0], (1, 2, b"2.0".as_slice()));
    let numbers: Vec<u64> = fields.iter().map(|f| f.0).collect();
    for n in [2, 8, 9, 10] {
        assert!(numbers.contains(&n), "field {n} in {numbers:?}");
    }
    // Definitions: one NamedSchema (1) per definition.
    let defs = fields.iter().find(|f| f.0 == 9).unwrap().2;
    let mut names: Vec<String> = proto_fields(defs)
        .iter()
        .map(|(_, _, named)| String::from_utf8(proto_fields(named)[0].2.to_vec()).unwrap())
        .collect();
    // Compare the sets: whether serde_json keeps key order depends on the features the
    // build unifies (codegen's `preserve_order` joins in under `--workspace`).
    names.sort();
    let mut want: Vec<String> = doc["definitions"].as_object().unwrap().keys().cloned().collect();
    want.sort();
    assert_eq!(names, want);
    // Paths: one NamedPathItem (2) per path.
    let paths = proto_fields(fields.iter().find(|f| f.0 == 8).unwrap().2);
    assert_eq!(paths.iter().filter(|f| f.0 == 2).count(), doc["paths"].as_object().unwrap().len());
}

#[test]
fn large_answers_are_gzipped_when_asked_and_watches_still_stream() {
    use std::io::Read;
    let s = TestServer::start();
    s.namespace("gz");
    let doc = document();
    let r = s.request("GET", "/openapi/v2", &[("Accept-Encoding", "gzip")], None);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Encoding"), Some("gzip"));
    assert!(r.body.len() < doc.len() / 4, "compressed: {} bytes", r.body.len());
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(&r.body[..]).read_to_end(&mut plain).expect("gzip");
    assert!(plain == doc);
    // Not asked, or small: as is (kube compresses from 128 KiB).
    assert!(s.get("/openapi/v2").header("Content-Encoding").is_none());
    let small = s.request("GET", "/version", &[("Accept-Encoding", "gzip")], None);
    assert!(small.header("Content-Encoding").is_none());

    // A watch asked with gzip still delivers each event as it happens, uncompressed.
    let res = preferred("kubevirt.io", "virtualmachines");
    let w = s.watch_with(
        &format!("{}?watch=true", collection_path(res, Some("gz"))),
        &[("Accept-Encoding", "gzip")],
    );
    s.create(res, &object(res, "gz", "vm-a"));
    let ev = w.next(std::time::Duration::from_secs(3)).expect("the event, promptly");
    assert_eq!(ev["type"], "ADDED");
}

fn index(s: &TestServer) -> Value {
    let r = s.get("/openapi/v3");
    assert_eq!(r.status, 200);
    assert!(r.header("Content-Type").unwrap_or("").starts_with("application/json"));
    r.json()
}

/// A group version's key in the `/openapi/v3` index: the core group's is `api/<version>`.
fn v3_key(group: &str, version: &str) -> String {
    match group {
        "" => format!("api/{version}"),
        group => format!("apis/{group}/{version}"),
    }
}

#[test]
fn v3_index_lists_every_group_version() {
    let s = TestServer::start();
    let idx = index(&s);
    let paths = idx["paths"].as_object().expect("paths");
    let mut expected: Vec<String> = Vec::new();
    for g in GROUPS {
        for v in g.versions {
            expected.push(v3_key(g.name, v));
        }
    }
    assert!(expected.len() >= 12, "GROUPS is filled");
    assert!(expected.contains(&"api/v1".to_string()), "the core group: {expected:?}");
    let mut got: Vec<String> = paths.keys().cloned().collect();
    got.sort();
    expected.sort();
    assert_eq!(got, expected);
    for (gv, entry) in paths {
        let url = entry["serverRelativeURL"].as_str().unwrap();
        let hash = url
            .strip_prefix(&format!("/openapi/v3/{gv}?hash="))
            .unwrap_or_else(|| panic!("{gv}: {url}"));
        assert_eq!(hash.len(), 128, "{url}");
        assert!(hash.chars().all(|c| c.is_ascii_digit() || ('A'..='F').contains(&c)), "{url}");
    }
}

#[test]
fn v3_documents_cache_and_redirect() {
    let s = TestServer::start();
    let idx = index(&s);
    for (gv, entry) in idx["paths"].as_object().unwrap() {
        let url = entry["serverRelativeURL"].as_str().unwrap();
        let hash = url.rsplit("hash=").next().unwrap();
        let r = s.get(url);
        assert_eq!(r.status, 200, "{url}");
        let cc = r.header("Cache-Control").unwrap_or("");
        assert!(cc.contains("public") && cc.contains("immutable"), "{url}: Cache-Control {cc:?}");
        assert!(r.header("Expires").is_some(), "{url}: Expires");
        assert_eq!(r.header("ETag"), Some(format!("\"{hash}\"").as_str()));
        assert_eq!(upper_hex_sha512(&r.body), hash, "{url}: the hash is the body's");
        assert_eq!(r.header("Vary"), Some("Accept"));
        let doc = r.json();
        assert!(doc["openapi"].as_str().unwrap_or("").starts_with("3."), "{gv}");

        // Without a hash: the same body, not immutable.
        let plain = s.get(&format!("/openapi/v3/{gv}"));
        assert_eq!(plain.status, 200);
        assert!(plain.body == r.body);
        assert!(!plain.header("Cache-Control").unwrap_or("").contains("immutable"));

        // A wrong hash redirects to the right one.
        let r = s.get_no_redirect(&format!("/openapi/v3/{gv}?hash=0123ABCD"), &[]);
        assert_eq!(r.status, 301, "{gv}");
        assert_eq!(r.header("Location"), Some(url), "{gv}");

        let r = s.request("GET", url, &[("If-None-Match", &format!("\"{hash}\""))], None);
        assert_eq!(r.status, 304, "{gv}");
    }
    for unknown in ["/openapi/v3/apis/nope.io/v1", "/openapi/v3/apis/kubevirt.io/v9"] {
        assert_eq!(s.get(unknown).status, 404, "{unknown}");
    }
}

/// Resolves a `$ref` inside `doc` (`#/a/b`).
fn resolve<'a>(doc: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => doc.pointer(r.trim_start_matches('#')).unwrap_or_else(|| panic!("dangling {r}")),
        None => v,
    }
}

/// The names of the parameters an operation takes, path-level ones included.
fn param_names(doc: &Value, path_item: &Value, op: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for list in [path_item.get("parameters"), op.get("parameters")].into_iter().flatten() {
        for p in list.as_array().unwrap() {
            out.push(resolve(doc, p)["name"].as_str().unwrap_or("").to_string());
        }
    }
    out
}

const METHODS: &[&str] = &["get", "put", "post", "delete", "patch", "head", "options"];

#[test]
fn patch_operations_declare_field_validation_and_strategic_merge_for_built_in_kinds_only() {
    let s = TestServer::start();
    // v3: every group-version document.
    let idx = index(&s);
    let mut patches = 0;
    for (gv, entry) in idx["paths"].as_object().unwrap() {
        let doc = s.get_json(entry["serverRelativeURL"].as_str().unwrap());
        for (path, item) in doc["paths"].as_object().unwrap() {
            for m in METHODS {
                let Some(op) = item.get(*m) else { continue };
                if let Some(body) = op.get("requestBody") {
                    let body = resolve(&doc, body);
                    if let Some(content) = body["content"].as_object() {
                        // Only kube's own kinds' PATCHes take it, as kube's (B.3).
                        let own = gv.starts_with("api/") || gv.contains(".k8s.io/");
                        let built_in = *m == "patch" && own;
                        let offers = content.contains_key(SMP);
                        assert_eq!(offers, built_in, "{gv} {m} {path}: offers {SMP}: {offers}");
                    }
                }
                if *m == "patch" {
                    patches += 1;
                    // kubectl's verifier (cli-runtime query_param_verifier_v3.go) reads only the
                    // operation's own parameters, inline and `in: query`, and the GVK extension
                    // as an object.
                    let inline = op["parameters"].as_array().is_some_and(|ps| {
                        ps.iter().any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
                    });
                    assert!(inline, "{gv} PATCH {path}: no inline fieldValidation");
                    let gvk = &op["x-kubernetes-group-version-kind"];
                    let g = gvk["group"].as_str().unwrap_or_else(|| panic!("{gv} {path}: {gvk}"));
                    let v = gvk["version"].as_str().unwrap_or_else(|| panic!("{gv} {path}: {gvk}"));
                    assert!(gvk["kind"].is_string(), "{gv} PATCH {path}: GVK {gvk}");
                    // Scale subresources answer autoscaling/v1 Scale in their kind's document,
                    // as a CRD's do (B.11).
                    if (g, v, gvk["kind"].as_str()) == ("autoscaling", "v1", Some("Scale")) {
                        assert!(path.ends_with("/{name}/scale"), "{gv} PATCH {path}: {gvk}");
                    } else {
                        assert_eq!(&v3_key(g, v), gv, "{path}");
                    }
                    let content = resolve(&doc, &op["requestBody"])["content"].as_object().unwrap();
                    for ct in [
                        "application/json-patch+json",
                        "application/merge-patch+json",
                        "application/apply-patch+yaml",
                    ] {
                        assert!(content.contains_key(ct), "{gv} PATCH {path} lacks {ct}");
                    }
                }
            }
        }
    }
    assert!(patches >= 39, "{patches} PATCH operations in v3");
    // v2: the whole document.
    let doc: Value = serde_json::from_slice(&document()).unwrap();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (m, op) in item.as_object().unwrap() {
            let offers = op["consumes"].as_array().is_some_and(|c| c.iter().any(|t| t == SMP));
            let own = path.starts_with("/api/") || path.contains(".k8s.io/");
            let built_in = m == "patch" && own;
            assert_eq!(offers, built_in, "v2 {m} {path}: offers {SMP}: {offers}");
        }
        if let Some(op) = item.get("patch") {
            let names = param_names(&doc, item, op);
            assert!(names.iter().any(|n| n == "fieldValidation"), "v2 PATCH {path}: {names:?}");
        }
    }
}
