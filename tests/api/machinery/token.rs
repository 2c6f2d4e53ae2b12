//! Upload tokens: signed with the key the store keeps, scoped to the namespace and PVC, and
//! still verifiable with the same key after a restart.

use std::path::Path;

use base64::Engine;

use serde_json::{json, Value};

use crate::common::*;
use virt_apiserver::resource::ResourceInfo;
use virt_apiserver::token::{verify, KEY_NAME};

fn token_kind() -> &'static ResourceInfo {
    resource("upload.cdi.kubevirt.io", "v1beta1", "uploadtokenrequests")
}

/// The signing key as the store keeps it: a `meta` row `secret:<name>` holding the raw bytes.
fn key_from_db(db: &Path) -> Vec<u8> {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the database read-only");
    conn.query_row("SELECT value FROM meta WHERE name = ?1", [format!("secret:{KEY_NAME}")], |r| {
        r.get::<_, Vec<u8>>(0)
    })
    .expect("the signing key is in the database")
}

/// The signing key where the server's storage keeps it: SQLite's `meta` row, or etcd's
/// `<prefix>/_virt/secret/<name>` key.
fn stored_key(s: &TestServer) -> Vec<u8> {
    let (Some(prefix), Some(url)) = (&s.etcd_prefix, &s.etcd_url) else {
        return key_from_db(&s.db);
    };
    let key = format!("{prefix}/_virt/secret/{KEY_NAME}");
    let got: Value = serde_json::from_str(&etcdctl(url, &["get", &key, "-w", "json"])).unwrap();
    let value = got["kvs"][0]["value"].as_str().unwrap_or_else(|| panic!("{key}: {got}"));
    base64::engine::general_purpose::STANDARD.decode(value).unwrap()
}

fn request_token(s: &TestServer, ns: &str, pvc: &str) -> String {
    let res = token_kind();
    let mut body = object(res, ns, "req");
    body["spec"] = json!({"pvcName": pvc});
    let r = s.post(&collection_path(res, Some(ns)), &body);
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["status"]["token"].as_str().expect("status.token").to_string()
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

fn check_claims(claims: &Value, ns: &str, pvc: &str) {
    assert_eq!(claims["name"], pvc, "{claims}");
    assert_eq!(claims["namespace"], ns, "{claims}");
    let exp = claims["exp"].as_i64().expect("exp");
    assert!(exp > now(), "not expired: {claims}");
    assert!(exp <= now() + 3600, "short-lived: {claims}");
}

#[test]
fn tokens_verify_with_the_stored_key_across_restarts() {
    let s = TestServer::start();
    s.namespace("other-ns");
    s.namespace("uploads");
    let token = request_token(&s, "uploads", "disk-1");
    let key = stored_key(&s);
    assert_eq!(key.len(), 32);
    let claims = verify(&key, &token).expect("the token verifies with the stored key");
    check_claims(&claims, "uploads", "disk-1");
    assert!(verify(&[0u8; 32], &token).is_err(), "and not with another key");

    // The older version serves the same token kind.
    let old = resource("upload.cdi.kubevirt.io", "v1alpha1", "uploadtokenrequests");
    let mut body = object(old, "other-ns", "req");
    body["spec"] = json!({"pvcName": "disk-2"});
    let r = s.post(&collection_path(old, Some("other-ns")), &body);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["apiVersion"], "upload.cdi.kubevirt.io/v1alpha1");
    let t2 = r.json()["status"]["token"].as_str().unwrap().to_string();
    check_claims(&verify(&key, &t2).unwrap(), "other-ns", "disk-2");

    let (db, _dir) = s.kill();
    let s = TestServer::start_with(ServerOptions { db: Some(db.clone()), ..Default::default() });
    let after = request_token(&s, "uploads", "disk-3");
    assert_eq!(stored_key(&s), key, "the key survives a restart");
    check_claims(&verify(&key, &after).unwrap(), "uploads", "disk-3");
    assert!(verify(&key, &token).is_ok(), "old tokens still verify");
}

/// Replicas over one etcd share the key: a token minted on one verifies with the key every other
/// replica signs and verifies with.
#[test]
fn tokens_minted_on_any_replica_verify_with_one_key() {
    let a = TestServer::start_with(ServerOptions { etcd: true, ..Default::default() });
    let prefix = a.etcd_prefix.clone();
    let b = TestServer::start_with(ServerOptions { etcd_prefix: prefix, ..Default::default() });
    a.namespace("uploads");
    let on_a = request_token(&a, "uploads", "disk-a");
    let on_b = request_token(&b, "uploads", "disk-b");
    let key = stored_key(&a);
    assert_eq!(key.len(), 32);
    check_claims(&verify(&key, &on_a).expect("A's token"), "uploads", "disk-a");
    check_claims(&verify(&key, &on_b).expect("B's token"), "uploads", "disk-b");
    // A third replica started later signs with the same key.
    let c = TestServer::start_with(ServerOptions {
        etcd_prefix: a.etcd_prefix.clone(),
        ..Default::default()
    });
    check_claims(
        &verify(&key, &request_token(&c, "uploads", "disk-c")).unwrap(),
        "uploads",
        "disk-c",
    );
}
