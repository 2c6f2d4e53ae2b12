//! Authentication (static token file), ABAC authorization by namespace, safe defaults and the
//! in-flight request limit.

use std::process::Command;
use std::time::Duration;

use serde_json::json;

use crate::common::{abac_args, binary, ServerOptions, TestServer};

const TOKENS: &str =
    "tok-alice,alice,1001\ntok-bob,bob,1002,\"viewers\"\ntok-root,root,0,\"admins\"\n";
const POLICY: &str = r#"{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"alice","namespace":"team-a","resource":"*","apiGroup":"*"}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"viewers","namespace":"team-a","resource":"*","apiGroup":"*","readonly":true}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"admins","namespace":"*","resource":"*","apiGroup":"*","nonResourcePath":"*"}}
{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"group":"system:authenticated","nonResourcePath":"*","readonly":true}}
"#;

fn secured() -> (TestServer, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    let policy = dir.path().join("policy.jsonl");
    std::fs::write(&tokens, TOKENS).unwrap();
    std::fs::write(&policy, POLICY).unwrap();
    let args = abac_args(&tokens, &policy);
    (TestServer::start_with(ServerOptions { memory: true, args, ..Default::default() }), dir)
}

fn vm(name: &str) -> Vec<u8> {
    json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine", "metadata": {"name": name}})
        .to_string()
        .into_bytes()
}

#[test]
fn missing_or_unknown_tokens_get_401_but_health_needs_none() {
    let (s, _dir) = secured();
    for headers in
        [vec![], vec![("Authorization", "Bearer nope")], vec![("Authorization", "Basic tok-alice")]]
    {
        let r = s.request(
            "GET",
            "/apis/kubevirt.io/v1/namespaces/team-a/virtualmachines",
            &headers,
            None,
        );
        assert_eq!(r.status, 401, "{headers:?}");
        let st = r.json();
        assert_eq!(
            (st["kind"].as_str(), st["reason"].as_str(), st["code"].as_u64()),
            (Some("Status"), Some("Unauthorized"), Some(401))
        );
    }
    assert_eq!(s.get("/apis").status, 401);
    for public in
        ["/healthz", "/livez", "/readyz", "/version", "/apis/kubevirt.io/v1alpha2/healthz"]
    {
        assert_eq!(s.get(public).status, 200, "{public}");
    }
}

#[test]
fn users_are_limited_to_their_namespaces() {
    let (s, _dir) = secured();
    let alice = [("Authorization", "Bearer tok-alice")];
    let bob = [("Authorization", "Bearer tok-bob")];
    let root = [("Authorization", "Bearer tok-root")];
    // The admin makes the team's namespace: alice may write only inside it.
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}});
    let ns = ns.to_string();
    let r =
        s.request("POST", "/api/v1/namespaces", &alice, Some(("application/json", ns.as_bytes())));
    assert_eq!(r.status, 403, "{}", r.text());
    let r =
        s.request("POST", "/api/v1/namespaces", &root, Some(("application/json", ns.as_bytes())));
    assert_eq!(r.status, 201, "{}", r.text());
    let json = Some(("application/json", &vm("a")[..]));
    let r =
        s.request("POST", "/apis/kubevirt.io/v1/namespaces/team-a/virtualmachines", &alice, json);
    assert_eq!(r.status, 201, "{}", r.text());
    // Another namespace: 403 with kube's message.
    let r =
        s.request("GET", "/apis/kubevirt.io/v1/namespaces/team-b/virtualmachines/a", &alice, None);
    assert_eq!(r.status, 403);
    assert_eq!(
        r.json()["message"],
        "virtualmachines.kubevirt.io \"a\" is forbidden: User \"alice\" cannot get resource \"virtualmachines\" in API group \"kubevirt.io\" in the namespace \"team-b\""
    );
    assert_eq!(
        r.json()["details"],
        json!({"name": "a", "group": "kubevirt.io", "kind": "virtualmachines"})
    );
    // Lists and watches across namespaces need cluster-wide permission.
    let r = s.request("GET", "/apis/kubevirt.io/v1/virtualmachines", &alice, None);
    assert_eq!(r.status, 403);
    assert!(r.json()["message"].as_str().unwrap().ends_with("at the cluster scope"));
    assert_eq!(
        s.request(
            "GET",
            "/apis/kubevirt.io/v1/virtualmachines?watch=true&timeoutSeconds=1",
            &alice,
            None
        )
        .status,
        403
    );
    assert_eq!(s.request("GET", "/apis/kubevirt.io/v1/virtualmachines", &root, None).status, 200);
    // A read-only group reads but does not write.
    assert_eq!(
        s.request("GET", "/apis/kubevirt.io/v1/namespaces/team-a/virtualmachines/a", &bob, None)
            .status,
        200
    );
    let r =
        s.request("DELETE", "/apis/kubevirt.io/v1/namespaces/team-a/virtualmachines/a", &bob, None);
    assert_eq!(r.status, 403);
    assert!(r.json()["message"].as_str().unwrap().contains("cannot delete resource"));
    // Discovery is a non-resource request: any authenticated user may read it here.
    assert_eq!(s.request("GET", "/apis/kubevirt.io/v1", &bob, None).status, 200);
}

#[test]
fn without_authentication_only_loopback_is_served() {
    let out = Command::new(binary())
        .args(["--listen", "0.0.0.0:0", "--database", ":memory:"])
        .output()
        .expect("run the binary");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refusing to serve"), "{err}");
}

#[test]
fn requests_in_flight_are_bounded_per_user() {
    let s = TestServer::start_with(ServerOptions {
        memory: true,
        args: vec!["--max-requests-inflight".into(), "1".into()],
        ..Default::default()
    });
    let base = s.base.clone();
    // A read of a future revision waits about 3 s before its 504: long enough to hold the slot.
    let slow = std::thread::spawn(move || loop {
        let url = format!("{base}/apis/kubevirt.io/v1/virtualmachines?resourceVersion=999999&resourceVersionMatch=NotOlderThan");
        let code = ureq::get(&url).call().err().map(|e| match e {
            ureq::Error::Status(code, _) => code,
            _ => 0,
        });
        // The probes below may hold the slot when it arrives: then it tries again.
        if code != Some(429) {
            break code;
        }
    });
    // Until the slow read holds the slot (on a loaded machine it may take a while to arrive).
    let started = std::time::Instant::now();
    let r = loop {
        let r = s.get("/apis/kubevirt.io/v1/virtualmachines");
        if r.status != 200 || started.elapsed() > Duration::from_millis(2500) {
            break r;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(r.status, 429, "{}", r.text());
    assert_eq!(r.header("Retry-After"), Some("1"));
    assert_eq!(r.json()["reason"], "TooManyRequests");
    // Watches are exempt.
    let w = s.watch("/apis/kubevirt.io/v1/virtualmachines?watch=true&timeoutSeconds=1");
    w.expect_none(Duration::from_millis(100));
    assert_eq!(slow.join().unwrap(), Some(504));
    assert_eq!(s.get("/apis/kubevirt.io/v1/virtualmachines").status, 200);
}
