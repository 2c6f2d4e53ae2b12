//! Bad input never breaks the server: every malformed request is answered with a 4xx Status
//! (never a 5xx, a panic or a hang), unknown query parameters are ignored, booleans parse as
//! A.11 says, and a handler panic becomes a 500 Status after which the server keeps serving.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{ServerOptions, TestServer};

const NS: &str = "bad";
const VMS: &str = "/apis/kubevirt.io/v1/namespaces/bad/virtualmachines";
const VM1: &str = "/apis/kubevirt.io/v1/namespaces/bad/virtualmachines/vm1";
const ALL_VMS: &str = "/apis/kubevirt.io/v1/virtualmachines";
const CLONES: &str = "/apis/clone.kubevirt.io/v1alpha1/virtualmachineclones";
const TOKENS: &str = "/apis/upload.cdi.kubevirt.io/v1beta1/namespaces/bad/uploadtokenrequests";
const VM1_STATUS: &str = "/apis/kubevirt.io/v1/namespaces/bad/virtualmachines/vm1/status";
const RS1_SCALE: &str =
    "/apis/kubevirt.io/v1/namespaces/bad/virtualmachineinstancereplicasets/rs1/scale";

const JSON: &str = "application/json";
const YAML: &str = "application/yaml";
const MERGE: &str = "application/merge-patch+json";
const JSONPATCH: &str = "application/json-patch+json";

/// One malformed request.
struct Case {
    what: String,
    method: &'static str,
    path: String,
    headers: Vec<(&'static str, String)>,
    body: Option<(&'static str, Vec<u8>)>,
}

fn case(what: impl Into<String>, method: &'static str, path: impl Into<String>) -> Case {
    Case { what: what.into(), method, path: path.into(), headers: vec![], body: None }
}

impl Case {
    fn body(mut self, content_type: &'static str, body: impl Into<Vec<u8>>) -> Case {
        self.body = Some((content_type, body.into()));
        self
    }
    fn header(mut self, k: &'static str, v: impl Into<String>) -> Case {
        self.headers.push((k, v.into()));
        self
    }
}

fn server() -> TestServer {
    let s = TestServer::start_with(ServerOptions {
        memory: true,
        args: vec!["--debug-panic-path".into(), "/debug/panic".into()],
        ..Default::default()
    });
    s.namespace(NS);
    let r = s.post(VMS, &vm("vm1"));
    assert_eq!(r.status, 201, "{}", r.text());
    let rs = json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstanceReplicaSet",
                    "metadata": {"name": "rs1"}, "spec": {"replicas": 1}});
    let r = s.post("/apis/kubevirt.io/v1/namespaces/bad/virtualmachineinstancereplicasets", &rs);
    assert_eq!(r.status, 201, "{}", r.text());
    s
}

fn vm(name: &str) -> Value {
    json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
           "metadata": {"name": name, "namespace": NS, "labels": {"a": "b"}}, "spec": {"x": 1}})
}

/// A VirtualMachine with `metadata.<field>` set to `value`: for POST with a name of its own
/// (so that one accepted case does not turn the next into a 409), for PUT vm1's.
fn vm_with_meta(method: &str, field: &str, value: Value) -> Vec<u8> {
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut o = if method == "PUT" { vm("vm1") } else { vm(&format!("typed-{n}")) };
    o["metadata"][field] = value;
    o.to_string().into_bytes()
}

/// A VirtualMachine with `levels` nested arrays at `spec.template.spec.domain.x`, a place whose
/// schema keeps unknown fields (so the nesting is neither pruned nor a type error); the object
/// as a whole is five levels deeper.
fn nested_json(levels: usize) -> String {
    format!(
        r#"{{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{{"name":"deep"}},"spec":{{"template":{{"spec":{{"domain":{{"x":{}1{}}}}}}}}}}}"#,
        "[".repeat(levels),
        "]".repeat(levels)
    )
}

fn nested_yaml(levels: usize) -> String {
    format!(
        "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: deep\nspec:\n  template:\n    spec:\n      domain:\n        x: {}1{}\n",
        "[".repeat(levels),
        "]".repeat(levels)
    )
}

/// The billion-laughs document: ten aliases, each expanding to ten of the one before.
fn yaml_bomb() -> String {
    let mut y = String::from("apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: lol\nspec:\n  a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for i in 1..10 {
        let p = i - 1;
        y.push_str(&format!(
            "  a{i}: &a{i} [*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p},*a{p}]\n"
        ));
    }
    y
}

fn body_cases() -> Vec<Case> {
    let mut out = Vec::new();
    let broken: Vec<(&str, Vec<u8>)> = vec![
        ("empty body", b"".to_vec()),
        ("whitespace", b"   \n".to_vec()),
        ("truncated", b"{\"apiVersion\": \"kubevirt.io/v1\", \"kind\"".to_vec()),
        ("open brace", b"{".to_vec()),
        ("null", b"null".to_vec()),
        ("a string", b"\"vm\"".to_vec()),
        ("a number", b"42".to_vec()),
        ("an array", b"[]".to_vec()),
        ("two objects", b"{}{}".to_vec()),
        ("invalid UTF-8", b"{\"a\": \"\xff\xfe\"}".to_vec()),
        ("lone surrogate", br#"{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"\ud800"}}"#.to_vec()),
        ("NUL in name", br#"{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"a\u0000b"}}"#.to_vec()),
        ("number out of range", br#"{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"n"},"spec":1e999}"#.to_vec()),
        ("NaN", br#"{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"n"},"spec":NaN}"#.to_vec()),
        ("nested 129 levels", nested_json(129).into_bytes()),
        ("nested 120 levels", nested_json(120).into_bytes()),
        ("nested 512 levels", nested_json(512).into_bytes()),
        ("nested 100000 levels", nested_json(100_000).into_bytes()),
        ("apiVersion a number", br#"{"apiVersion":1,"kind":"VirtualMachine","metadata":{"name":"n"}}"#.to_vec()),
        ("kind an object", br#"{"apiVersion":"kubevirt.io/v1","kind":{},"metadata":{"name":"n"}}"#.to_vec()),
        ("wrong kind", br#"{"apiVersion":"kubevirt.io/v1","kind":"Pod","metadata":{"name":"n"}}"#.to_vec()),
        ("wrong version", br#"{"apiVersion":"kubevirt.io/v9","kind":"VirtualMachine","metadata":{"name":"n"}}"#.to_vec()),
        ("metadata a list", br#"{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":[]}"#.to_vec()),
        ("metadata a string", br#"{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":"m"}"#.to_vec()),
        ("metadata a number", br#"{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":7}"#.to_vec()),
    ];
    let typed: Vec<(&str, Value)> = vec![
        ("name", json!(5)),
        ("name", json!({"a": 1})),
        ("name", json!(["vm"])),
        ("name", json!("UPPER")),
        ("name", json!("a..b")),
        ("name", json!("-a")),
        ("name", json!("x".repeat(300))),
        ("name", json!("ünïcode")),
        ("name", json!("a/b")),
        ("namespace", json!(3)),
        ("namespace", json!("other")),
        ("labels", json!(["a", "b"])),
        ("labels", json!("a=b")),
        ("labels", json!({"a": 1})),
        ("labels", json!({"a": null})),
        ("labels", json!({"a": {"b": "c"}})),
        ("labels", json!({"k".repeat(300): "v"})),
        ("labels", json!({"k": "v".repeat(300)})),
        ("labels", json!({"/": "v", "a/": "v", "/b": "v"})),
        ("annotations", json!("x")),
        ("annotations", json!({"a": 1})),
        ("annotations", json!({"a": "x".repeat(300 * 1024)})),
        ("finalizers", json!({"a": 1})),
        ("finalizers", json!([1, 2])),
        ("finalizers", json!(["orphan", "foregroundDeletion"])),
        ("ownerReferences", json!("x")),
        ("ownerReferences", json!(["x"])),
        ("ownerReferences", json!([{"apiVersion": 1, "kind": [], "name": {}, "uid": null}])),
        ("generation", json!("1")),
        ("generation", json!(-1)),
        ("generation", json!(1.5)),
        ("generation", json!(1e300)),
        ("generation", json!(u64::MAX)),
        ("resourceVersion", json!(12)),
        ("resourceVersion", json!("12")),
        ("uid", json!(12)),
        ("generateName", json!(12)),
        ("generateName", json!("UPPER-")),
        ("creationTimestamp", json!(12)),
        ("creationTimestamp", json!("yesterday")),
        ("deletionTimestamp", json!("never")),
        ("deletionGracePeriodSeconds", json!("x")),
        ("managedFields", json!("x")),
        ("managedFields", json!([1])),
        ("selfLink", json!(1)),
    ];
    for (method, path) in [("POST", VMS), ("PUT", VM1)] {
        for (what, body) in &broken {
            out.push(case(format!("{method} {what}"), method, path).body(JSON, body.clone()));
        }
        for (field, value) in &typed {
            let what = format!("{method} metadata.{field} = {}", short(value));
            out.push(
                case(what, method, path).body(JSON, vm_with_meta(method, field, value.clone())),
            );
        }
        let many: serde_json::Map<String, Value> =
            (0..20_000).map(|i| (format!("k{i}"), json!("v"))).collect();
        out.push(
            case(format!("{method} 20000 labels"), method, path)
                .body(JSON, vm_with_meta(method, "labels", Value::Object(many))),
        );
        let yaml: Vec<(&str, String)> = vec![
            ("YAML broken", "a: [\n".into()),
            ("YAML tab indent", "apiVersion: v1\n\tkind: x\n".into()),
            ("YAML unknown alias", "a: *nothing\n".into()),
            ("YAML a scalar", "just a string\n".into()),
            ("YAML a list", "- a\n- b\n".into()),
            ("YAML two documents", "a: 1\n---\nb: 2\n".into()),
            ("YAML complex key", "? [a, b]\n: c\n".into()),
            ("YAML non-string key", "1: 2\n".into()),
            ("YAML binary tag", "a: !!binary zzz\n".into()),
            ("YAML custom tag", "a: !thing x\n".into()),
            ("YAML .inf", "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: inf}\nspec: .inf\n".into()),
            ("YAML big int", "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: big}\nspec: 99999999999999999999999999999\n".into()),
            ("YAML nested 129", nested_yaml(129)),
            ("YAML nested 512", nested_yaml(512)),
            ("YAML nested 100000", nested_yaml(100_000)),
            ("YAML billion laughs", yaml_bomb()),
            ("YAML name a number", "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: 12\n".into()),
            ("YAML labels a list", "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: y\n  labels: [a]\n".into()),
            ("YAML invalid UTF-8", String::from_utf8_lossy(b"a: \xff").into_owned()),
        ];
        for (what, body) in yaml {
            out.push(case(format!("{method} {what}"), method, path).body(YAML, body));
        }
        out.push(
            case(format!("{method} raw invalid UTF-8 YAML"), method, path)
                .body(YAML, b"a: \xff\xfe".to_vec()),
        );
        out.push(
            case(format!("{method} unknown content type"), method, path).body("text/x-nope", "{}"),
        );
        out.push(case(format!("{method} garbage content type"), method, path).body(";;;=", "{}"));
        out.push(
            case(format!("{method} gzip garbage"), method, path)
                .body(JSON, b"not gzip at all".to_vec())
                .header("Content-Encoding", "gzip"),
        );
        out.push(
            case(format!("{method} unknown content encoding"), method, path)
                .body(JSON, b"{}".to_vec())
                .header("Content-Encoding", "x-nope"),
        );
    }
    // Cluster-scoped and create-only kinds take the same abuse.
    for (what, body) in &broken {
        out.push(case(format!("clone {what}"), "POST", CLONES).body(JSON, body.clone()));
        out.push(case(format!("token request {what}"), "POST", TOKENS).body(JSON, body.clone()));
    }
    out.push(
        case("token request without its field", "POST", TOKENS).body(
            JSON,
            r#"{"apiVersion":"upload.cdi.kubevirt.io/v1beta1","kind":"UploadTokenRequest","metadata":{"name":"t"},"spec":{"pvcName":5}}"#,
        ),
    );
    out
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 40 {
        format!("{}…({} bytes)", &s[..30], s.len())
    } else {
        s
    }
}

fn patch_cases() -> Vec<Case> {
    let mut out = Vec::new();
    let merge: Vec<(&str, Vec<u8>)> = vec![
        ("empty", b"".to_vec()),
        ("broken", b"{\"metadata\":".to_vec()),
        ("null", b"null".to_vec()),
        ("a list", b"[1,2]".to_vec()),
        ("a string", b"\"x\"".to_vec()),
        ("metadata null", br#"{"metadata":null}"#.to_vec()),
        ("metadata a list", br#"{"metadata":[1]}"#.to_vec()),
        ("name changed", br#"{"metadata":{"name":"other"}}"#.to_vec()),
        ("name a number", br#"{"metadata":{"name":1}}"#.to_vec()),
        ("labels a list", br#"{"metadata":{"labels":["a"]}}"#.to_vec()),
        ("label value a number", br#"{"metadata":{"labels":{"a":1}}}"#.to_vec()),
        ("resourceVersion stale", br#"{"metadata":{"resourceVersion":"1"}}"#.to_vec()),
        ("resourceVersion a number", br#"{"metadata":{"resourceVersion":1}}"#.to_vec()),
        ("kind changed", br#"{"kind":"Other"}"#.to_vec()),
        ("apiVersion removed", br#"{"apiVersion":null}"#.to_vec()),
        ("uid changed", br#"{"metadata":{"uid":"x"}}"#.to_vec()),
        (
            "deletionTimestamp set",
            br#"{"metadata":{"deletionTimestamp":"2020-01-01T00:00:00Z"}}"#.to_vec(),
        ),
        (
            "nested 129",
            format!("{{\"spec\":{}1{}}}", "[".repeat(129), "]".repeat(129)).into_bytes(),
        ),
        (
            "nested 120",
            format!("{{\"spec\":{}1{}}}", "{\"a\":".repeat(120), "}".repeat(120)).into_bytes(),
        ),
        (
            "nested 512",
            format!("{{\"spec\":{}1{}}}", "[".repeat(512), "]".repeat(512)).into_bytes(),
        ),
    ];
    for (what, body) in merge {
        out.push(case(format!("merge patch {what}"), "PATCH", VM1).body(MERGE, body));
    }
    let deep_path: String = "/a".repeat(200);
    let json_patches: Vec<(&str, String)> = vec![
        ("not a list", r#"{"op":"add"}"#.into()),
        ("op a number", r#"[{"op":1,"path":"/spec"}]"#.into()),
        ("unknown op", r#"[{"op":"frobnicate","path":"/spec"}]"#.into()),
        ("missing path", r#"[{"op":"add","value":1}]"#.into()),
        ("missing value", r#"[{"op":"add","path":"/spec/y"}]"#.into()),
        ("path without slash", r#"[{"op":"add","path":"spec","value":1}]"#.into()),
        ("bad escape", r#"[{"op":"add","path":"/spec/~9","value":1}]"#.into()),
        ("remove missing", r#"[{"op":"remove","path":"/nope/nope"}]"#.into()),
        ("replace missing", r#"[{"op":"replace","path":"/spec/nope/x","value":1}]"#.into()),
        (
            "huge index",
            r#"[{"op":"add","path":"/metadata/finalizers/99999999999999999999999","value":"a"}]"#
                .into(),
        ),
        (
            "index out of range",
            r#"[{"op":"add","path":"/metadata/labels/a/5","value":"a"}]"#.into(),
        ),
        ("test fails", r#"[{"op":"test","path":"/spec/x","value":2}]"#.into()),
        ("move into own child", r#"[{"op":"move","from":"/spec","path":"/spec/child"}]"#.into()),
        ("copy missing from", r#"[{"op":"copy","from":"/nope","path":"/spec/y"}]"#.into()),
        ("remove root", r#"[{"op":"remove","path":""}]"#.into()),
        ("replace root with a list", r#"[{"op":"replace","path":"","value":[1]}]"#.into()),
        ("replace root with null", r#"[{"op":"replace","path":"","value":null}]"#.into()),
        ("remove metadata", r#"[{"op":"remove","path":"/metadata"}]"#.into()),
        ("metadata a number", r#"[{"op":"replace","path":"/metadata","value":3}]"#.into()),
        ("name a number", r#"[{"op":"replace","path":"/metadata/name","value":3}]"#.into()),
        ("labels a list", r#"[{"op":"replace","path":"/metadata/labels","value":["a"]}]"#.into()),
        (
            "label too long",
            format!(
                r#"[{{"op":"add","path":"/metadata/labels/b","value":"{}"}}]"#,
                "v".repeat(100)
            ),
        ),
        (
            "generation a string",
            r#"[{"op":"replace","path":"/metadata/generation","value":"x"}]"#.into(),
        ),
        ("path 200 levels deep", format!(r#"[{{"op":"add","path":"{deep_path}","value":1}}]"#)),
        (
            "value 125 levels deep",
            format!(
                r#"[{{"op":"add","path":"/spec/deep","value":{}1{}}}]"#,
                "[".repeat(125),
                "]".repeat(125)
            ),
        ),
        ("growing nesting", growing_nesting_patch()),
        ("doubling copies", doubling_copies_patch()),
        (
            "10001 ops",
            format!("[{}]", vec![r#"{"op":"test","path":"/spec/x","value":1}"#; 10_001].join(",")),
        ),
    ];
    for (what, body) in json_patches {
        out.push(case(format!("json patch {what}"), "PATCH", VM1).body(JSONPATCH, body));
    }
    out.push(
        case("strategic merge patch", "PATCH", VM1)
            .body("application/strategic-merge-patch+json", "{}"),
    );
    out.push(case("patch without content type", "PATCH", VM1).body("", "{}"));
    out.push(
        case("apply patch garbage", "PATCH", VM1).body("application/apply-patch+yaml", "a: [\n"),
    );
    out.push(
        case("apply patch bomb", "PATCH", VM1).body("application/apply-patch+yaml", yaml_bomb()),
    );
    out.push(
        case("apply patch nested", "PATCH", VM1)
            .body("application/apply-patch+yaml", nested_yaml(512)),
    );
    out.push(
        case("apply patch flow nested 100000", "PATCH", format!("{VM1}?fieldManager=t"))
            .body("application/apply-patch+yaml", nested_yaml(100_000)),
    );
    out.push(
        case("apply patch 120 levels", "PATCH", format!("{VM1}?fieldManager=t")).body(
            "application/apply-patch+yaml",
            nested_yaml(120).replace("name: deep", "name: vm1"),
        ),
    );
    out.push(case("patch a missing object", "PATCH", format!("{VMS}/nope")).body(MERGE, "{}"));
    // The subresources decode and patch through their own paths.
    for (what, path) in [("status", VM1_STATUS), ("scale", RS1_SCALE)] {
        out.push(case(format!("{what} put broken"), "PUT", path).body(JSON, "{"));
        out.push(case(format!("{what} put a list"), "PUT", path).body(JSON, "[]"));
        out.push(case(format!("{what} put nested"), "PUT", path).body(JSON, nested_json(512)));
        out.push(case(format!("{what} put YAML bomb"), "PUT", path).body(YAML, yaml_bomb()));
        out.push(case(format!("{what} merge broken"), "PATCH", path).body(MERGE, "{"));
        out.push(case(format!("{what} merge null"), "PATCH", path).body(MERGE, "null"));
        out.push(
            case(format!("{what} json patch doubling"), "PATCH", path)
                .body(JSONPATCH, doubling_copies_patch()),
        );
        out.push(
            case(format!("{what} json patch nesting"), "PATCH", path)
                .body(JSONPATCH, growing_nesting_patch()),
        );
        out.push(
            case(format!("{what} replicas a string"), "PATCH", path)
                .body(MERGE, r#"{"spec":{"replicas":"many"}}"#),
        );
        out.push(
            case(format!("{what} replicas huge"), "PATCH", path)
                .body(MERGE, r#"{"spec":{"replicas":99999999999999999999}}"#),
        );
        out.push(
            case(format!("{what} replicas negative"), "PATCH", path)
                .body(MERGE, r#"{"spec":{"replicas":-5}}"#),
        );
    }
    out
}

/// Each op nests a 100-level value one level under the last one's deepest point.
fn growing_nesting_patch() -> String {
    let value = format!("{}1{}", "{\"a\":".repeat(100), "}".repeat(100));
    let ops: Vec<String> = (0..50)
        .map(|i| {
            let path = format!("/spec/n{}", "/a".repeat(i * 100));
            let path = if i == 0 { "/spec/n".to_string() } else { path };
            format!(r#"{{"op":"add","path":"{path}","value":{value}}}"#)
        })
        .collect();
    format!("[{}]", ops.join(","))
}

/// Forty copies of `/spec` into itself: 2^40 times its size if nothing bounds it.
fn doubling_copies_patch() -> String {
    let mut ops =
        vec![format!(r#"{{"op":"add","path":"/spec/blob","value":"{}"}}"#, "x".repeat(1024))];
    for i in 0..40 {
        ops.push(format!(r#"{{"op":"copy","from":"/spec","path":"/spec/c{i}"}}"#));
    }
    format!("[{}]", ops.join(","))
}

fn query_cases() -> Vec<Case> {
    let mut out = Vec::new();
    let list_queries = [
        "labelSelector=a%20in",
        "labelSelector=a%20in%20(",
        "labelSelector=a%20in%20(b",
        "labelSelector=a%20notin",
        "labelSelector=!",
        "labelSelector=!!a",
        "labelSelector=(",
        "labelSelector=)",
        "labelSelector=,",
        "labelSelector=a,,b",
        "labelSelector==",
        "labelSelector=a=b=c",
        "labelSelector=a%3E",
        "labelSelector=a%3Eb",
        "labelSelector=a%3E99999999999999999999999",
        "labelSelector=a%3C-99999999999999999999999",
        "labelSelector=a%20in%20b",
        "labelSelector=A!!!",
        "labelSelector=%00",
        "labelSelector=%ff",
        "fieldSelector=metadata.name",
        "fieldSelector=spec.x%3D1",
        "fieldSelector==",
        "fieldSelector=!%3Dx",
        "fieldSelector=metadata.name%3D%3D%3D",
        "fieldSelector=metadata.namespace%3Da,metadata.namespace%21%3Da,%2C",
        "fieldSelector=metadata.name%20in%20(a)",
        "continue=garbage",
        "continue=%00%01",
        "continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6InN0ciIsInN0YXJ0IjoxfQ",
        "continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiLi4vLi4veCJ9",
        "continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6OTIyMzM3MjAzNjg1NDc3NTgwNywic3RhcnQiOiJ4In0",
        "continue=W10",
        "continue=bnVsbA",
        "limit=abc",
        "limit=-1",
        "limit=99999999999999999999999",
        "limit=9223372036854775807",
        "resourceVersion=abc",
        "resourceVersion=-5",
        "resourceVersion=99999999999999999999999",
        "resourceVersion=18446744073709551615",
        "resourceVersion=0&resourceVersionMatch=Exact",
        "resourceVersion=1&resourceVersionMatch=Sometimes",
        "resourceVersionMatch=NotOlderThan",
        "timeoutSeconds=abc",
        "timeoutSeconds=-1",
        "sendInitialEvents=true",
        "watch=true&sendInitialEvents=true&timeoutSeconds=1",
        "watch=true&resourceVersionMatch=Exact&timeoutSeconds=1",
        "watch=true&resourceVersion=abc&timeoutSeconds=1",
        "watch=true&labelSelector=a%20in&timeoutSeconds=1",
        "watch=true&timeoutSeconds=abc",
        "watch=true&continue=garbage&timeoutSeconds=1",
        "includeObject=Sometimes",
        "%zz=1",
        "a=%",
        "=&&=&",
        "labelSelector=a&labelSelector=%20in",
    ];
    for q in list_queries {
        out.push(case(format!("list ?{q}"), "GET", format!("{VMS}?{q}")));
        out.push(case(format!("all-namespace list ?{q}"), "GET", format!("{ALL_VMS}?{q}")));
    }
    let huge_selector = format!("labelSelector={}", "a%3Db,".repeat(4000));
    out.push(case("huge label selector", "GET", format!("{VMS}?{huge_selector}")));
    let get_queries = [
        "resourceVersion=abc",
        "resourceVersion=-1",
        "watch=true&labelSelector=(",
        "export=true&exact=maybe",
    ];
    for q in get_queries {
        out.push(case(format!("get ?{q}"), "GET", format!("{VM1}?{q}")));
    }
    let write_queries = [
        "dryRun=Maybe",
        "dryRun=All&dryRun=None",
        "dryRun=",
        "fieldValidation=Loud",
        "fieldValidation=strict",
        "fieldManager=",
    ];
    for q in write_queries {
        out.push(
            case(format!("create ?{q}"), "POST", format!("{VMS}?{q}"))
                .body(JSON, vm("q").to_string()),
        );
        out.push(
            case(format!("update ?{q}"), "PUT", format!("{VM1}?{q}"))
                .body(JSON, vm("vm1").to_string()),
        );
        out.push(case(format!("patch ?{q}"), "PATCH", format!("{VM1}?{q}")).body(MERGE, "{}"));
    }
    let delete_queries = [
        "propagationPolicy=Sideways",
        "propagationPolicy=orphan",
        "orphanDependents=true&propagationPolicy=Foreground",
        "gracePeriodSeconds=-1",
        "gracePeriodSeconds=abc",
        "gracePeriodSeconds=99999999999999999999999",
        "dryRun=Never",
        "labelSelector=a%20in",
        "continue=garbage",
    ];
    for q in delete_queries {
        out.push(case(format!("delete ?{q}"), "DELETE", format!("{VM1}?{q}")));
        out.push(case(format!("deletecollection ?{q}"), "DELETE", format!("{VMS}?{q}")));
    }
    let delete_bodies = [
        "{",
        "[]",
        "\"x\"",
        r#"{"propagationPolicy":5}"#,
        r#"{"propagationPolicy":"Sideways"}"#,
        r#"{"gracePeriodSeconds":"x"}"#,
        r#"{"gracePeriodSeconds":-3}"#,
        r#"{"preconditions":"x"}"#,
        r#"{"preconditions":{"uid":5,"resourceVersion":[]}}"#,
        r#"{"preconditions":{"uid":"nope"}}"#,
        r#"{"dryRun":"All"}"#,
        r#"{"dryRun":["Nope"]}"#,
        r#"{"orphanDependents":"yes"}"#,
        r#"{"orphanDependents":true,"propagationPolicy":"Orphan"}"#,
    ];
    for b in delete_bodies {
        out.push(case(format!("delete body {b}"), "DELETE", VM1).body(JSON, b));
        out.push(case(format!("deletecollection body {b}"), "DELETE", VMS).body(JSON, b));
    }
    out
}

fn path_and_header_cases() -> Vec<Case> {
    let long = "x".repeat(300);
    let mut out = vec![
        case("upper-case name", "GET", format!("{VMS}/UPPER")),
        case("long name", "GET", format!("{VMS}/{long}")),
        case("long namespace", "GET", format!("/apis/kubevirt.io/v1/namespaces/{long}/virtualmachines")),
        case("encoded slash in name", "GET", format!("{VMS}/a%2Fb")),
        case("encoded dot-dot name", "GET", format!("{VMS}/%2E%2E")),
        case("invalid UTF-8 in path", "GET", format!("{VMS}/%ff%fe")),
        case("NUL in path", "GET", format!("{VMS}/a%00b")),
        case("create in a bad namespace", "POST", "/apis/kubevirt.io/v1/namespaces/BAD_NS/virtualmachines")
            .body(JSON, r#"{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"n"}}"#),
        case("put to a bad name", "PUT", format!("{VMS}/UPPER"))
            .body(JSON, r#"{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachine","metadata":{"name":"UPPER","resourceVersion":"1"}}"#),
        case("bad Accept", "GET", VM1).header("Accept", "text/html"),
        case("garbage Accept", "GET", VM1).header("Accept", ";;;,,,q=x"),
        case("Accept with bad q", "GET", VM1).header("Accept", "application/json;q=abc, text/plain"),
        case("Accept as=Table only", "GET", VM1).header("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"),
        case("unsupported method", "OPTIONS", VMS),
        case("TRACE", "TRACE", VM1),
        case("POST to an item", "POST", VM1).body(JSON, "{}"),
        case("PUT to a collection", "PUT", VMS).body(JSON, "{}"),
        case("PATCH a collection", "PATCH", VMS).body(MERGE, "{}"),
        case("watch item bad query", "GET", "/apis/kubevirt.io/v1/watch/namespaces/bad/virtualmachines/vm1?labelSelector=("),
        case("bad bearer header", "GET", VM1).header("Authorization", "Bearer"),
    ];
    out.push(case("huge header", "GET", VM1).header("X-Big", "y".repeat(60 * 1024)));
    out
}

/// Sends `c` and returns (status, content type, body); a transport error fails the test.
fn send(s: &TestServer, c: &Case) -> (u16, String, Vec<u8>) {
    let agent = ureq::AgentBuilder::new().timeout(Duration::from_secs(30)).build();
    let mut req = agent.request(c.method, &s.url(&c.path));
    for (k, v) in &c.headers {
        req = req.set(k, v);
    }
    let result = match &c.body {
        Some((ct, b)) => {
            if !ct.is_empty() {
                req = req.set("Content-Type", ct);
            }
            req.send_bytes(b)
        }
        None => req.call(),
    };
    let resp = match result {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{}: {} {}: transport error {e}", c.what, c.method, c.path),
    };
    let status = resp.status();
    let ct = resp.header("Content-Type").unwrap_or("").to_string();
    let mut body = Vec::new();
    let _ = resp.into_reader().take(1 << 20).read_to_end(&mut body);
    (status, ct, body)
}

/// Runs every case; a 2xx is fine (the input was acceptable after all), a 4xx must be a Status
/// (or Go's plain 404 for paths nothing serves), and a 5xx (but kube's 504 for a revision from
/// the future) or a slow answer fails.
fn run_cases(s: &TestServer, cases: Vec<Case>) {
    let mut failures = Vec::new();
    for c in &cases {
        let t = Instant::now();
        let (status, ct, body) = send(s, c);
        let took = t.elapsed();
        let text = String::from_utf8_lossy(&body[..body.len().min(300)]).into_owned();
        if std::env::var_os("BAD_INPUT_VERBOSE").is_some() {
            eprintln!("{status} {:?} {}: {}", took, c.what, &text[..text.len().min(160)]);
        }
        // A revision from the future is kube's 504 ResourceVersionTooLarge (B.1), after a wait.
        let future_rv = status == 504 && text.contains("\"ResourceVersionTooLarge\"");
        if status >= 500 && !future_rv {
            failures.push(format!("{}: {status} {text}", c.what));
        } else if status >= 400 {
            let plain_404 = status == 404 && text.trim_end() == "404 page not found";
            let status_body = ct.starts_with("application/json")
                && serde_json::from_slice::<Value>(&body).is_ok_and(|v| {
                    v["kind"] == "Status" && v["status"] == "Failure" && v["code"] == status
                });
            if !plain_404 && !status_body {
                failures.push(format!("{}: {status} without a Status ({ct}): {text}", c.what));
            }
        }
        if took > Duration::from_secs(5) {
            failures.push(format!("{}: took {took:?}", c.what));
        }
        // Some deletes succeed (their odd parameters are ignored); later cases need vm1.
        if c.method == "DELETE" && s.get(VM1).status == 404 {
            assert_eq!(s.post(VMS, &vm("vm1")).status, 201);
        }
    }
    // The server is still there and sane.
    assert_eq!(s.get(VM1).status, 200, "server still serves after the bad input");
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn malformed_bodies_get_4xx_status() {
    let s = server();
    run_cases(&s, body_cases());
}

#[test]
fn malformed_patches_get_4xx_status() {
    let s = server();
    run_cases(&s, patch_cases());
    // Nothing above changed the object's nesting or size beyond the limits.
    let obj = s.get_json(VM1);
    assert!(obj.to_string().len() < 2 << 20);
}

#[test]
fn malformed_queries_get_4xx_status() {
    let s = server();
    run_cases(&s, query_cases());
}

#[test]
fn malformed_paths_and_headers_get_4xx_status() {
    let s = server();
    run_cases(&s, path_and_header_cases());
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    let s = server();
    for levels in [129usize, 512, 100_000] {
        let r = s.request("POST", VMS, &[], Some((JSON, nested_json(levels).as_bytes())));
        assert_eq!(r.status, 400, "{levels} levels: {}", r.text());
        let r = s.request("POST", VMS, &[], Some((YAML, nested_yaml(levels).as_bytes())));
        assert_eq!(r.status, 400, "{levels} levels of YAML: {}", r.text());
    }
    // Just under the decoder's limit is still refused: a stored object must stay readable.
    let r = s.request("POST", VMS, &[], Some((JSON, nested_json(120).as_bytes())));
    assert_eq!(r.status, 400, "{}", r.text());
    let r = s.request("PATCH", VM1, &[], Some((JSONPATCH, growing_nesting_patch().as_bytes())));
    assert!(matches!(r.status, 400 | 422), "{}", r.text());
    // Modest nesting is fine.
    let r = s.request(
        "POST",
        VMS,
        &[],
        Some((JSON, nested_json(50).replace("deep", "fifty").as_bytes())),
    );
    assert_eq!(r.status, 201, "{}", r.text());
    let stored = s.get_json(&format!("{VMS}/fifty"));
    assert!(stored.pointer("/spec/template/spec/domain/x/0/0/0").is_some(), "{stored}");
}

#[test]
fn yaml_alias_bombs_are_refused() {
    let s = server();
    let t = Instant::now();
    let r = s.request("POST", VMS, &[], Some((YAML, yaml_bomb().as_bytes())));
    assert!((400..500).contains(&r.status), "{} {}", r.status, r.text());
    assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
}

#[test]
fn copy_amplification_in_a_json_patch_is_bounded() {
    let s = server();
    let t = Instant::now();
    let r = s.request("PATCH", VM1, &[], Some((JSONPATCH, doubling_copies_patch().as_bytes())));
    assert_eq!(r.status, 413, "{}", r.text());
    assert!(t.elapsed() < Duration::from_secs(5), "took {:?}", t.elapsed());
}

/// A chunked body over 3 MiB is cut off with a 413 Status, like one with a Content-Length.
#[test]
fn chunked_bodies_over_the_limit_get_413_status() {
    let s = server();
    let addr = s.base.trim_start_matches("http://").to_string();
    let mut conn = TcpStream::connect(&addr).unwrap();
    conn.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        conn,
        "POST {VMS} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .unwrap();
    let chunk = vec![b' '; 64 * 1024];
    // Write until the server answers or 4 MiB have gone; it may close before the end.
    for _ in 0..64 {
        if write!(conn, "{:x}\r\n", chunk.len()).is_err()
            || conn.write_all(&chunk).is_err()
            || conn.write_all(b"\r\n").is_err()
        {
            break;
        }
    }
    let _ = conn.write_all(b"0\r\n\r\n");
    let mut answer = Vec::new();
    let _ = conn.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 413"), "{text}");
    assert!(text.contains("\"reason\":\"RequestEntityTooLarge\""), "{text}");
    assert!(text.contains("Request entity too large: limit is 3145728"), "{text}");
}

#[test]
fn unknown_parameters_are_ignored_and_booleans_parse_as_kube_does() {
    let s = server();
    for q in
        ["nonsense=1", "pretty=true", "foo", "a=b&c=d&e", "includeUninitialized=maybe", "export"]
    {
        assert_eq!(s.get(&format!("{VM1}?{q}")).status, 200, "{q}");
        assert_eq!(s.get(&format!("{VMS}?{q}")).status, 200, "{q}");
    }
    // kube's booleans: absent, "0" or "false" (any case) are false; anything else is true.
    for (v, watch) in [
        ("false", false),
        ("FALSE", false),
        ("0", false),
        ("", true),
        ("1", true),
        ("yes", true),
        ("True", true),
    ] {
        let r = s.get(&format!("{VMS}?watch={v}&timeoutSeconds=1"));
        assert_eq!(r.status, 200, "watch={v}");
        let is_watch = r.header("Content-Type").unwrap_or("").contains("stream=watch");
        assert_eq!(is_watch, watch, "watch={v}: {:?}", r.header("Content-Type"));
    }
    // export=<true> strips the server's fields; export=false does not.
    assert!(s.get_json(&format!("{VM1}?export=1"))["metadata"].get("uid").is_none());
    assert!(s.get_json(&format!("{VM1}?export=false"))["metadata"].get("uid").is_some());
}

#[test]
fn a_huge_timeout_does_not_overflow() {
    let s = server();
    // A deadline that far out must not overflow the clock; the watch opens and is dropped.
    let w = s.watch(&format!("{VMS}?watch=true&timeoutSeconds=9223372036854775807"));
    w.expect_event("ADDED", "vm1");
    assert_eq!(s.get(VM1).status, 200);
}

#[test]
fn a_panicking_handler_gets_a_500_status_and_the_server_goes_on() {
    let s = server();
    for _ in 0..3 {
        let r = s.get("/debug/panic");
        assert_eq!(r.status, 500);
        let st = r.json();
        assert_eq!(
            (st["kind"].as_str(), st["reason"].as_str(), st["code"].as_u64()),
            (Some("Status"), Some("InternalError"), Some(500)),
            "{st}"
        );
        assert_eq!(s.get(VM1).status, 200);
    }
    // Without the hidden flag, the path is nothing.
    let plain = TestServer::start_with(ServerOptions { memory: true, ..Default::default() });
    assert_eq!(plain.get("/debug/panic").status, 404);
}

/// Server-set metadata fields of the wrong type are refused, not silently replaced: kube's
/// ObjectMeta decoding fails on them before any rule replaces their values.
#[test]
fn wrong_types_in_server_set_metadata_are_refused() {
    let s = server();
    let fields = [
        ("uid", json!(5)),
        ("creationTimestamp", json!(7)),
        ("resourceVersion", json!(5)),
        ("generation", json!("one")),
        ("deletionGracePeriodSeconds", json!("30")),
        ("managedFields", json!(5)),
    ];
    for (field, value) in fields {
        let what = format!("metadata.{field} = {value}");
        let check = |r: crate::common::Resp| {
            assert_eq!(r.status, 422, "{what}: {}", r.text());
            let st = r.json();
            assert_eq!(st["reason"], "Invalid", "{what}: {st}");
            assert_eq!(st["details"]["causes"][0]["field"], format!("metadata.{field}"), "{st}");
            assert_eq!(st["details"]["causes"][0]["reason"], "FieldValueTypeInvalid", "{st}");
        };
        let body: Value =
            serde_json::from_slice(&vm_with_meta("POST", field, value.clone())).unwrap();
        check(s.post(VMS, &body));
        let mut put = s.get(VM1).json();
        put["metadata"][field] = value.clone();
        check(s.put(VM1, &put));
        check(s.patch(VM1, MERGE, &json!({"metadata": {field: value}})));
    }
}

/// Header blocks past what the HTTP layer reads (here 300 KiB, or 120 headers) get 431 before any handler
/// runs, as Go's server answers kube-apiserver's past its 1 MiB (neither sends a Status), and
/// the connection closes; the server goes on.
#[test]
fn oversized_header_blocks_get_431_and_the_server_goes_on() {
    let s = server();
    let addr = s.url("").trim_start_matches("http://").trim_end_matches('/').to_string();
    let many: String = (0..120).map(|i| format!("X-H{i}: v\r\n")).collect();
    let big = format!("X-Big: {}\r\n", "a".repeat(300 * 1024));
    for headers in [many, big] {
        let mut conn = TcpStream::connect(&addr).expect("connect");
        conn.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let req = format!("GET {VM1} HTTP/1.1\r\nHost: x\r\n{headers}\r\n");
        let _ = conn.write_all(req.as_bytes());
        let mut answer = Vec::new();
        let _ = conn.read_to_end(&mut answer);
        let text = String::from_utf8_lossy(&answer);
        assert!(text.starts_with("HTTP/1.1 431 "), "{text}");
    }
    assert_eq!(s.get(VM1).status, 200);
}
