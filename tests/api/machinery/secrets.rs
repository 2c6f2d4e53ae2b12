//! ConfigMaps and Secrets with kube's validation (`x-virt-resource.dataRules`): kubectl's
//! `create secret` and `create configmap`, `stringData` merged and never returned, key names,
//! the 1 MiB total, `type` and `immutable`, and the keys each Secret type needs, through every
//! write verb.

use base64::Engine;
use serde_json::{json, Value};

use crate::common::{abac_args, assert_status, Kubectl, TestServer};

const SECRETS: &str = "/api/v1/namespaces/s/secrets";
const CONFIGMAPS: &str = "/api/v1/namespaces/s/configmaps";
const MERGE: &str = "application/merge-patch+json";
const JSON_PATCH: &str = "application/json-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

fn b64(s: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn unb64(v: &Value) -> Vec<u8> {
    let s = v.as_str().unwrap_or_else(|| panic!("{v} is not a string"));
    base64::engine::general_purpose::STANDARD.decode(s).expect("base64")
}

fn server() -> TestServer {
    let s = TestServer::start();
    s.namespace("s");
    s
}

fn secret(name: &str, body: Value) -> Value {
    let mut obj = json!({"apiVersion": "v1", "kind": "Secret",
                         "metadata": {"name": name, "namespace": "s"}});
    for (k, v) in body.as_object().unwrap() {
        obj[k] = v.clone();
    }
    obj
}

fn config_map(name: &str, body: Value) -> Value {
    let mut obj = json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": name, "namespace": "s"}});
    for (k, v) in body.as_object().unwrap() {
        obj[k] = v.clone();
    }
    obj
}

/// The causes of a 422, as `field: message` lines (kube's `Status` message is their join).
fn invalid(resp: &crate::common::Resp, kind: &str, name: &str) -> Vec<String> {
    let s = assert_status(resp, 422, "Invalid");
    assert_eq!(s["details"]["kind"], kind, "{s}");
    assert_eq!(s["details"]["name"], name, "{s}");
    let causes: Vec<String> = s["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!("{}: {}", c["field"].as_str().unwrap_or(""), c["message"].as_str().unwrap())
        })
        .collect();
    let joined =
        if causes.len() == 1 { causes[0].clone() } else { format!("[{}]", causes.join(", ")) };
    assert_eq!(s["message"], format!("{kind} {name:?} is invalid: {joined}"), "{s}");
    causes
}

#[test]
fn kubectl_creates_secrets_and_string_data_is_never_returned() {
    let s = server();
    let k = Kubectl::in_namespace(&s, "s");
    let watch = s.watch(&format!("{SECRETS}?watch=true"));
    let created: Value = serde_json::from_str(&k.ok(&[
        "create",
        "secret",
        "generic",
        "lit",
        "--from-literal=user=admin",
        "--from-literal=pass=s3cret",
        "-o",
        "json",
    ]))
    .unwrap();
    assert_eq!(created["type"], "Opaque", "SetDefaults_Secret: {created}");
    assert_eq!(unb64(&created["data"]["user"]), b"admin");
    assert_eq!(unb64(&created["data"]["pass"]), b"s3cret");
    // kubectl sends protobuf; the empty strings gogo writes are not stored.
    assert!(created["metadata"].get("generateName").is_none(), "{created}");
    assert!(created["metadata"].get("resourceVersion").is_some());

    let file = k.file("id_token", "line one\nline two\n");
    let from_file = format!("--from-file={}", file.display());
    k.ok(&["create", "secret", "generic", "files", &from_file]);
    let got = s.get_json(&format!("{SECRETS}/files"));
    assert_eq!(unb64(&got["data"]["id_token"]), b"line one\nline two\n");

    // stringData is merged into data (winning over it) and then gone, in every answer.
    let body = secret(
        "mixed",
        json!({"data": {"a": b64(b"from data"), "b": b64(b"kept")},
               "stringData": {"a": "from stringData", "c": "plain"}}),
    );
    let resp = s.post(SECRETS, &body);
    assert_eq!(resp.status, 201, "{}", resp.text());
    let answered = resp.json();
    let get = s.get_json(&format!("{SECRETS}/mixed"));
    let list = s.get_json(SECRETS);
    let listed =
        list["items"].as_array().unwrap().iter().find(|i| i["metadata"]["name"] == "mixed");
    let event = watch.expect_event("ADDED", "mixed")["object"].clone();
    for (what, obj) in
        [("answer", &answered), ("get", &get), ("list", listed.unwrap()), ("watch", &event)]
    {
        assert!(obj.get("stringData").is_none(), "{what}: {obj}");
        assert_eq!(unb64(&obj["data"]["a"]), b"from stringData", "{what}");
        assert_eq!(unb64(&obj["data"]["b"]), b"kept", "{what}");
        assert_eq!(unb64(&obj["data"]["c"]), b"plain", "{what}");
    }
    // kubectl lists secrets with kube's columns.
    let table = k.ok(&["get", "secrets"]);
    assert!(table.contains("mixed   Opaque   3"), "{table}");

    // stringData on update, through PUT and a merge patch.
    let mut put = get.clone();
    put["stringData"] = json!({"b": "replaced"});
    let resp = s.put(&format!("{SECRETS}/mixed"), &put);
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert!(resp.json().get("stringData").is_none());
    assert_eq!(unb64(&resp.json()["data"]["b"]), b"replaced");
    let resp =
        s.patch(&format!("{SECRETS}/mixed"), MERGE, &json!({"stringData": {"d": "patched"}}));
    assert_eq!(resp.status, 200, "{}", resp.text());
    let patched = s.get_json(&format!("{SECRETS}/mixed"));
    assert_eq!(unb64(&patched["data"]["d"]), b"patched");
    assert!(patched.get("stringData").is_none());
}

#[test]
fn kubectl_creates_config_maps_from_files() {
    let s = server();
    let k = Kubectl::in_namespace(&s, "s");
    let text = k.file("app.properties", "color=blue\nsize=3\n");
    let binary = k.dir.path().join("blob.bin");
    std::fs::write(&binary, [0xff, 0xfe, 0x00, 0x01]).unwrap();
    k.ok(&[
        "create",
        "configmap",
        "cfg",
        &format!("--from-file={}", text.display()),
        &format!("--from-file={}", binary.display()),
    ]);
    let cm = s.get_json(&format!("{CONFIGMAPS}/cfg"));
    assert_eq!(cm["data"]["app.properties"], "color=blue\nsize=3\n");
    assert_eq!(unb64(&cm["binaryData"]["blob.bin"]), [0xff, 0xfe, 0x00, 0x01]);
    assert!(cm["metadata"].get("generateName").is_none(), "{cm}");
    let table = k.ok(&["get", "configmap", "cfg"]);
    assert!(table.contains("cfg    2"), "{table}");
}

#[test]
fn kubectl_creates_docker_registry_and_tls_secrets() {
    let s = server();
    let k = Kubectl::in_namespace(&s, "s");
    k.ok(&[
        "create",
        "secret",
        "docker-registry",
        "reg",
        "--docker-server=registry.example.com",
        "--docker-username=me",
        "--docker-password=pw",
    ]);
    let reg = s.get_json(&format!("{SECRETS}/reg"));
    assert_eq!(reg["type"], "kubernetes.io/dockerconfigjson");
    let config: Value = serde_json::from_slice(&unb64(&reg["data"][".dockerconfigjson"])).unwrap();
    assert_eq!(config["auths"]["registry.example.com"]["username"], "me");

    let cert = rcgen::generate_simple_self_signed(vec!["example.com".to_string()]).unwrap();
    let crt = k.file("tls.crt", &cert.cert.pem());
    let key = k.file("tls.key", &cert.signing_key.serialize_pem());
    k.ok(&[
        "create",
        "secret",
        "tls",
        "web",
        &format!("--cert={}", crt.display()),
        &format!("--key={}", key.display()),
    ]);
    let web = s.get_json(&format!("{SECRETS}/web"));
    assert_eq!(web["type"], "kubernetes.io/tls");
    assert_eq!(unb64(&web["data"]["tls.crt"]), cert.cert.pem().as_bytes());
    // The type is fixed at create.
    let resp = s.patch(&format!("{SECRETS}/web"), MERGE, &json!({"type": "Opaque"}));
    assert_eq!(
        invalid(&resp, "Secret", "web"),
        ["type: Invalid value: \"Opaque\": field is immutable"]
    );
    let err = k.fails(&["patch", "secret", "web", "--type=merge", "-p", r#"{"type":"Opaque"}"#]);
    assert!(err.contains("type: Invalid value: \"Opaque\": field is immutable"), "{err}");
}

#[test]
fn keys_sizes_and_base64_are_checked() {
    let s = server();
    let body = config_map(
        "keys",
        json!({"data": {"bad key": "x", "..a": "y", "dup": "1", "ok-1_.A": "z"},
               "binaryData": {"dup": b64(b"2"), "k/v": b64(b"3")}}),
    );
    let resp = s.post(CONFIGMAPS, &body);
    let key_msg = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
    assert_eq!(
        invalid(&resp, "ConfigMap", "keys"),
        [
            "data[..a]: Invalid value: \"..a\": must not start with '..'".to_string(),
            format!("data[bad key]: Invalid value: \"bad key\": {key_msg}"),
            "data[dup]: Invalid value: \"dup\": duplicate of key present in binaryData".into(),
            format!("binaryData[k/v]: Invalid value: \"k/v\": {key_msg}"),
        ]
    );
    let resp = s.post(SECRETS, &secret("keys", json!({"stringData": {"no way": "x"}})));
    assert_eq!(
        invalid(&resp, "Secret", "keys"),
        [format!("data[no way]: Invalid value: \"no way\": {key_msg}")]
    );

    // 1 MiB in all: a ConfigMap counts both maps, a Secret its decoded bytes.
    let half = "x".repeat(512 * 1024);
    let full =
        config_map("full", json!({"data": {"a": half}, "binaryData": {"b": b64(half.as_bytes())}}));
    assert_eq!(s.post(CONFIGMAPS, &full).status, 201);
    let over = config_map(
        "over",
        json!({"data": {"a": half, "c": "!"}, "binaryData": {"b": b64(half.as_bytes())}}),
    );
    let resp = s.post(CONFIGMAPS, &over);
    let s422 = assert_status(&resp, 422, "Invalid");
    assert_eq!(
        s422["message"],
        "ConfigMap \"over\" is invalid: : Too long: may not be more than 1048576 bytes"
    );
    assert!(s422["details"]["causes"][0].get("field").is_none(), "{s422}");
    assert_eq!(s422["details"]["causes"][0]["reason"], "FieldValueTooLong");
    let big = vec![7u8; 1024 * 1024 + 1];
    let resp = s.post(SECRETS, &secret("big", json!({"data": {"a": b64(&big)}})));
    assert_eq!(
        invalid(&resp, "Secret", "big"),
        ["data: Too long: may not be more than 1048576 bytes"]
    );
    let resp = s.post(SECRETS, &secret("exact", json!({"data": {"a": b64(&big[1..])}})));
    assert_eq!(resp.status, 201, "{}", resp.text());

    // Bytes that are not base64 do not decode (kube's JSON decoder).
    let resp = s.post(SECRETS, &secret("b64", json!({"data": {"a": "aGVsbG8"}})));
    let st = assert_status(&resp, 400, "BadRequest");
    assert_eq!(
        st["message"],
        "Secret in version \"v1\" cannot be handled as a Secret: illegal base64 data at input byte 4"
    );
}

#[test]
fn each_secret_type_needs_its_keys() {
    let s = server();
    let cases = [
        ("kubernetes.io/tls", json!({"tls.crt": b64(b"c")}), vec!["data[tls.key]: Required value"]),
        (
            "kubernetes.io/basic-auth",
            json!({"other": b64(b"x")}),
            vec!["data[username]: Required value", "data[password]: Required value"],
        ),
        ("kubernetes.io/ssh-auth", json!({"ssh-privatekey": ""}), vec!["data[ssh-privatekey]: Required value"]),
        ("kubernetes.io/dockercfg", json!({}), vec!["data[.dockercfg]: Required value"]),
        (
            "kubernetes.io/dockerconfigjson",
            json!({".dockerconfigjson": b64(b"nope")}),
            vec!["data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": invalid character 'o' in literal null (expecting 'u')"],
        ),
        (
            "kubernetes.io/dockerconfigjson",
            json!({".dockerconfigjson": b64(b"[1]")}),
            vec!["data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": json: cannot unmarshal array into Go value of type map[string]interface {}"],
        ),
        (
            "kubernetes.io/service-account-token",
            json!({}),
            vec!["metadata.annotations[kubernetes.io/service-account.name]: Required value"],
        ),
    ];
    for (i, (type_, data, want)) in cases.into_iter().enumerate() {
        let name = format!("t{i}");
        let resp = s.post(SECRETS, &secret(&name, json!({"type": type_, "data": data})));
        assert_eq!(invalid(&resp, "Secret", &name), want, "{type_}");
    }
    // With the keys: basic-auth needs only one of them, and the values may be empty.
    for (type_, data) in [
        ("kubernetes.io/basic-auth", json!({"password": ""})),
        ("kubernetes.io/tls", json!({"tls.crt": "", "tls.key": ""})),
        ("kubernetes.io/dockercfg", json!({".dockercfg": b64(b"{}")})),
        ("example.com/custom", json!({})),
    ] {
        let name = type_.replace(['/', '.'], "-");
        let resp = s.post(SECRETS, &secret(&name, json!({"type": type_, "data": data})));
        assert_eq!(resp.status, 201, "{type_}: {}", resp.text());
    }
    // An update is checked as a create: a JSON patch that removes a key TLS needs.
    let resp = s.patch(
        &format!("{SECRETS}/kubernetes-io-tls"),
        JSON_PATCH,
        &json!([{"op": "remove", "path": "/data/tls.key"}]),
    );
    assert_eq!(invalid(&resp, "Secret", "kubernetes-io-tls"), ["data[tls.key]: Required value"]);
}

#[test]
fn immutable_config_maps_and_secrets_keep_their_data() {
    let s = server();
    let frozen = "field is immutable when `immutable` is set";
    let cm = config_map("cm", json!({"immutable": true, "data": {"a": "1"}}));
    assert_eq!(s.post(CONFIGMAPS, &cm).status, 201);
    let path = format!("{CONFIGMAPS}/cm");
    let resp = s.patch(&path, MERGE, &json!({"data": {"a": "2"}, "binaryData": {"b": b64(b"x")}}));
    assert_eq!(
        invalid(&resp, "ConfigMap", "cm"),
        [format!("data: Forbidden: {frozen}"), format!("binaryData: Forbidden: {frozen}")]
    );
    let resp = s.patch(&path, MERGE, &json!({"immutable": false}));
    assert_eq!(invalid(&resp, "ConfigMap", "cm"), [format!("immutable: Forbidden: {frozen}")]);
    // Metadata still changes.
    let resp = s.patch(&path, MERGE, &json!({"metadata": {"labels": {"l": "v"}}}));
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.json()["data"], json!({"a": "1"}));

    let sec = secret("sec", json!({"immutable": true, "stringData": {"a": "1"}}));
    assert_eq!(s.post(SECRETS, &sec).status, 201);
    let path = format!("{SECRETS}/sec");
    let resp = s.patch(&path, MERGE, &json!({"stringData": {"a": "2"}}));
    assert_eq!(invalid(&resp, "Secret", "sec"), [format!("data: Forbidden: {frozen}")]);
    // The same data through stringData is no change.
    let resp = s.patch(
        &path,
        MERGE,
        &json!({"stringData": {"a": "1"}, "metadata": {"annotations": {"n": "1"}}}),
    );
    assert_eq!(resp.status, 200, "{}", resp.text());
    // PUT and server-side apply obey it too.
    let mut put = resp.json();
    put["data"]["b"] = json!(b64(b"new"));
    let resp = s.put(&path, &put);
    assert_eq!(invalid(&resp, "Secret", "sec"), [format!("data: Forbidden: {frozen}")]);
    let apply = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sec"},
                       "data": {"c": b64(b"applied")}});
    let resp = s.patch(&format!("{path}?fieldManager=me"), APPLY, &apply);
    assert_eq!(invalid(&resp, "Secret", "sec"), [format!("data: Forbidden: {frozen}")]);
}

#[test]
fn apply_creates_and_updates_by_the_rules() {
    let s = server();
    let path = format!("{SECRETS}/applied?fieldManager=me");
    let config = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "applied"},
                        "stringData": {"k": "v"}});
    let resp = s.patch(&path, APPLY, &config);
    assert_eq!(resp.status, 201, "{}", resp.text());
    let obj = resp.json();
    assert_eq!(obj["type"], "Opaque");
    assert_eq!(unb64(&obj["data"]["k"]), b"v");
    assert!(obj.get("stringData").is_none());
    let bad = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "applied"},
                     "type": "kubernetes.io/tls"});
    let resp = s.patch(&path, APPLY, &bad);
    let causes = invalid(&resp, "Secret", "applied");
    assert_eq!(
        causes,
        [
            "type: Invalid value: \"kubernetes.io/tls\": field is immutable",
            "data[tls.crt]: Required value",
            "data[tls.key]: Required value",
        ]
    );
}

/// kube's ConfigMap and Secret strategies never set `metadata.generation`
/// (`x-virt-resource.generation: false`): not on create, on a data change, or when a
/// finalizer holds a delete.
#[test]
fn config_maps_and_secrets_have_no_generation() {
    let s = server();
    for (collection, obj) in [
        (CONFIGMAPS, config_map("g", json!({"data": {"a": "1"}}))),
        (SECRETS, secret("g", json!({"stringData": {"a": "1"}}))),
    ] {
        let mut obj = obj;
        obj["metadata"]["finalizers"] = json!(["example.com/hold"]);
        let resp = s.post(collection, &obj);
        assert_eq!(resp.status, 201, "{}", resp.text());
        assert!(resp.json()["metadata"].get("generation").is_none(), "{}", resp.text());
        let path = format!("{collection}/g");
        let resp = s.patch(&path, MERGE, &json!({"data": {"b": b64(b"2")}}));
        assert_eq!(resp.status, 200, "{}", resp.text());
        assert!(resp.json()["metadata"].get("generation").is_none(), "{}", resp.text());
        let resp = s.delete(&path);
        assert_eq!(resp.status, 200, "{}", resp.text());
        let held = s.get_json(&path);
        assert!(held["metadata"].get("deletionTimestamp").is_some(), "{held}");
        assert!(held["metadata"].get("generation").is_none(), "{held}");
        let resp = s.patch(&path, MERGE, &json!({"metadata": {"finalizers": null}}));
        assert_eq!(resp.status, 200, "{}", resp.text());
    }
}

/// ABAC treats ConfigMaps and Secrets like any other resource of the core group (`apiGroup: ""`).
#[test]
fn abac_authorizes_config_maps_and_secrets_by_resource() {
    use crate::common::ServerOptions;
    let dir = tempfile::tempdir().unwrap();
    let (tokens, policy) = (dir.path().join("tokens.csv"), dir.path().join("policy.jsonl"));
    std::fs::write(&tokens, "tok-root,root,0,\"admins\"\ntok-cm,cm,1\ntok-reader,reader,2\n")
        .unwrap();
    let rule = |spec: Value| {
        json!({"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy",
               "spec": spec})
        .to_string()
    };
    let rules = [
        rule(json!({"group": "admins", "namespace": "*", "resource": "*", "apiGroup": "*"})),
        rule(json!({"user": "cm", "namespace": "s", "resource": "configmaps", "apiGroup": ""})),
        rule(json!({"user": "reader", "namespace": "s", "resource": "secrets", "apiGroup": "",
                    "readonly": true})),
    ];
    std::fs::write(&policy, rules.join("\n") + "\n").unwrap();
    let args = abac_args(&tokens, &policy);
    let s = TestServer::start_with(ServerOptions { memory: true, args, ..Default::default() });
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "s"}});
    assert_eq!(s.as_user("tok-root", "POST", "/api/v1/namespaces", Some(&ns)).status, 201);
    let sec = secret("x", json!({"stringData": {"a": "1"}}));
    assert_eq!(s.as_user("tok-root", "POST", SECRETS, Some(&sec)).status, 201);

    let cm = config_map("c", json!({"data": {"a": "1"}}));
    assert_eq!(s.as_user("tok-cm", "POST", CONFIGMAPS, Some(&cm)).status, 201);
    let r = s.as_user("tok-cm", "GET", &format!("{SECRETS}/x"), None);
    let st = assert_status(&r, 403, "Forbidden");
    assert_eq!(
        st["message"],
        "secrets \"x\" is forbidden: User \"cm\" cannot get resource \"secrets\" in API group \"\" in the namespace \"s\""
    );
    let r = s.as_user("tok-reader", "GET", &format!("{SECRETS}/x"), None);
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.json().get("stringData").is_none());
    let r = s.as_user("tok-reader", "POST", SECRETS, Some(&secret("y", json!({}))));
    let st = assert_status(&r, 403, "Forbidden");
    assert_eq!(
        st["message"],
        "secrets is forbidden: User \"reader\" cannot create resource \"secrets\" in API group \"\" in the namespace \"s\""
    );
    assert_eq!(s.as_user("tok-reader", "GET", CONFIGMAPS, None).status, 403);
}
