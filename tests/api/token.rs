//! Upload tokens: signed with the key the store keeps, scoped to the namespace and PVC, and
//! still verifiable with the same key after a restart.

use std::path::Path;

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
    let key = key_from_db(&s.db);
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
    assert_eq!(key_from_db(&db), key, "the key survives a restart");
    check_claims(&verify(&key, &after).unwrap(), "uploads", "disk-3");
    assert!(verify(&key, &token).is_ok(), "old tokens still verify");
}
