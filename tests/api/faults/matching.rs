//! Which requests a Fault matches: each field of `match` (an absent one matches anything),
//! `after`, `times`, the window, the seeded probability, name order; never the Faults
//! themselves, health or metrics; and without Faults nothing changes.

use serde_json::{json, Value};

use super::{create_cm, fault, FAULTS};
use crate::common::{Kubectl, ServerOptions, TestServer};

fn status(s: &TestServer, path: &str) -> u16 {
    s.get(path).status
}

const CM: &str = "/api/v1/namespaces/default/configmaps";

#[test]
fn each_match_field_narrows_what_fires() {
    let s = TestServer::start();
    s.namespace("other");
    for ns in ["default", "other"] {
        assert_eq!(create_cm(&s, ns, "a").status, 201);
        assert_eq!(create_cm(&s, ns, "b").status, 201);
    }
    let teapot = json!({"status": {"code": 418}});
    fault(
        &s,
        "m",
        json!({"match": {"verbs": ["get"], "groups": [""],
                                    "resources": ["configmaps"], "subresources": [""],
                                    "namespaces": ["default"], "names": ["a"]},
                          "action": teapot}),
    );
    assert_eq!(status(&s, &format!("{CM}/a")), 418);
    assert_eq!(status(&s, &format!("{CM}/b")), 200, "names");
    assert_eq!(status(&s, "/api/v1/namespaces/other/configmaps/a"), 200, "namespaces");
    assert_eq!(status(&s, CM), 200, "verbs: a list");
    assert_eq!(status(&s, "/api/v1/namespaces/default/secrets/a"), 404, "resources");
    s.delete(&format!("{FAULTS}/m"));
    // groups: the core group is "", a named group matches only its own.
    fault(&s, "g", json!({"match": {"groups": ["kubevirt.io"]}, "action": teapot}));
    assert_eq!(status(&s, &format!("{CM}/a")), 200, "groups");
    assert_eq!(status(&s, "/apis/kubevirt.io/v1/namespaces/default/virtualmachines"), 418);
    s.delete(&format!("{FAULTS}/g"));
    // subresources: "status" is not the object itself.
    fault(&s, "sub", json!({"match": {"subresources": ["status"]}, "action": teapot}));
    assert_eq!(status(&s, &format!("{CM}/a")), 200, "subresources");
    assert_eq!(status(&s, "/api/v1/namespaces/default/status"), 418);
}

#[test]
fn user_agents_match_by_prefix() {
    let s = TestServer::start();
    let k = Kubectl::new(&s);
    fault(
        &s,
        "ua",
        json!({"match": {"userAgents": ["kubectl"], "resources": ["configmaps"]},
                           "action": {"status": {"code": 503}}}),
    );
    let err = k.fails(&["get", "configmaps"]);
    assert!(err.contains("ServiceUnavailable") || err.contains("unable to handle"), "{err}");
    assert_eq!(status(&s, CM), 200, "another client");
    let r = s.request("GET", CM, &[("User-Agent", "kubectl/v1.32.0 (linux/amd64)")], None);
    assert_eq!(r.status, 503);
}

#[test]
fn users_match_the_authenticated_name() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "tok-alice,alice,1\ntok-bob,bob,2\n").unwrap();
    let args = vec!["--token-auth-file".to_string(), tokens.display().to_string()];
    let s = TestServer::start_with(ServerOptions { memory: true, args, ..Default::default() });
    let f = json!({"apiVersion": "testing.virt-apiserver.io/v1alpha1", "kind": "Fault",
                   "metadata": {"name": "alice-only"},
                   "spec": {"match": {"users": ["alice"], "verbs": ["list"]},
                            "action": {"status": {"code": 403, "message": "no"}}}});
    assert_eq!(s.as_user("tok-bob", "POST", FAULTS, Some(&f)).status, 201);
    assert_eq!(s.as_user("tok-alice", "GET", CM, None).status, 403);
    assert_eq!(s.as_user("tok-bob", "GET", CM, None).status, 200);
}

#[test]
fn a_label_selector_reads_the_bodys_labels_on_writes_and_the_stored_objects_on_reads() {
    let s = TestServer::start();
    fault(
        &s,
        "web",
        json!({"match": {"labelSelector": {"matchLabels": {"app": "web"}}},
                            "action": {"status": {"code": 409, "reason": "Conflict"}}}),
    );
    let web = json!({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "web", "labels": {"app": "web"}}});
    assert_eq!(s.post(CM, &web).status, 409, "the body's labels");
    assert_eq!(create_cm(&s, "default", "plain").status, 201);
    assert_eq!(status(&s, &format!("{CM}/plain")), 200);
    // Stored with the label while no Fault stood, then read: the stored object's labels.
    s.delete(&format!("{FAULTS}/web"));
    assert_eq!(s.post(CM, &web).status, 201);
    fault(
        &s,
        "web2",
        json!({"match": {"labelSelector": {"matchLabels": {"app": "web"}}},
                             "action": {"status": {"code": 409}}}),
    );
    assert_eq!(status(&s, &format!("{CM}/web")), 409);
    assert_eq!(status(&s, &format!("{CM}/plain")), 200);
    // The handler still reads the body the selector read.
    let other = json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "other", "labels": {"app": "db"}}, "data": {"k": "v"}});
    let r = s.post(CM, &other);
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["data"]["k"], "v");
}

#[test]
fn after_times_and_the_window_count_matching_requests() {
    let s = TestServer::start();
    fault(
        &s,
        "third-and-fourth",
        json!({"match": {"verbs": ["create"]}, "after": 2, "times": 2,
                                         "action": {"status": {"code": 500}}}),
    );
    let codes: Vec<u16> =
        (0..6).map(|i| create_cm(&s, "default", &format!("c{i}")).status).collect();
    assert_eq!(codes, [201, 201, 500, 500, 201, 201]);
    fault(
        &s,
        "past",
        json!({"notAfter": "2000-01-01T00:00:00Z",
                             "action": {"status": {"code": 500}}}),
    );
    fault(
        &s,
        "future",
        json!({"notBefore": "2999-01-01T00:00:00Z",
                               "action": {"status": {"code": 500}}}),
    );
    assert_eq!(status(&s, CM), 200, "outside their windows");
    fault(
        &s,
        "now",
        json!({"notBefore": "2000-01-01T00:00:00Z",
                            "notAfter": "2999-01-01T00:00:00Z", "action": {"status": {"code": 502}}}),
    );
    assert_eq!(status(&s, CM), 502);
}

#[test]
fn faults_apply_in_name_order_and_the_first_that_fires_wins() {
    let s = TestServer::start();
    fault(&s, "b-second", json!({"action": {"status": {"code": 502}}}));
    fault(&s, "a-first", json!({"times": 1, "action": {"status": {"code": 501}}}));
    assert_eq!(status(&s, CM), 501);
    assert_eq!(status(&s, CM), 502, "a-first spent, b-second fires");
}

/// The fire pattern of 20 gets under a probability-½ Fault on a server seeded with `seed`.
fn pattern(seed: &str) -> Vec<u16> {
    let args = vec!["--simulate-seed".to_string(), seed.to_string()];
    let s = TestServer::start_with(ServerOptions { memory: true, args, ..Default::default() });
    fault(
        &s,
        "coin",
        json!({"match": {"verbs": ["list"]}, "probability": 0.5,
                             "action": {"status": {"code": 500}}}),
    );
    (0..20).map(|_| status(&s, CM)).collect()
}

#[test]
fn the_probability_draws_from_the_seeded_generator() {
    let a = pattern("7");
    assert_eq!(a, pattern("7"), "the same requests fire on every run");
    assert!(a.contains(&500) && a.contains(&200), "{a:?}");
    assert_ne!(a, pattern("8"));
}

#[test]
fn faults_health_and_metrics_are_never_faulted() {
    let s = TestServer::start();
    let k = Kubectl::new(&s);
    fault(&s, "everything", json!({"action": {"drop": {}}}));
    for p in ["/readyz", "/livez", "/healthz", "/metrics", FAULTS] {
        assert_eq!(status(&s, p), 200, "{p}");
    }
    assert!(k.ok(&["get", "faults", "--no-headers"]).contains("everything"));
    k.ok(&["delete", "fault", "everything"]);
    assert_eq!(status(&s, CM), 200);
}

/// The answers a fixed series of requests gets, without the volatile fields.
fn answers(s: &TestServer) -> Vec<(u16, String)> {
    let mut out = Vec::new();
    let strip = |mut v: Value| {
        for f in ["resourceVersion", "uid", "creationTimestamp", "managedFields"] {
            if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
                m.remove(f);
            }
            if let Some(d) = v.get_mut("details").and_then(Value::as_object_mut) {
                d.remove(f);
            }
        }
        v.to_string()
    };
    let r = create_cm(s, "default", "same");
    out.push((r.status, strip(r.json())));
    let r = create_cm(s, "default", "same");
    out.push((r.status, strip(r.json())));
    let r = s.get(&format!("{CM}/same"));
    out.push((r.status, strip(r.json())));
    let r = s.get("/api/v1/namespaces/default/configmaps/none");
    out.push((r.status, strip(r.json())));
    let r = s.delete(&format!("{CM}/same"));
    out.push((r.status, strip(r.json())));
    out
}

#[test]
fn without_faults_nothing_changes() {
    let s = TestServer::start();
    let before = answers(&s);
    // A Fault that matches nothing, then none at all: the same answers, byte for byte.
    fault(
        &s,
        "elsewhere",
        json!({"match": {"namespaces": ["nowhere"]},
                                  "action": {"drop": {}}}),
    );
    assert_eq!(answers(&s), before);
    s.delete(&format!("{FAULTS}/elsewhere"));
    assert_eq!(answers(&s), before);
    let f = s.get_json(FAULTS);
    assert_eq!(f["items"], json!([]));
    assert!(!s.get("/metrics").text().contains("virt_apiserver_faults_fired_total{"));
}
