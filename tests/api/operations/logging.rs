//! Every request gets an id, sent back as kube-apiserver's `Audit-Id` header, and every 5xx
//! answer is logged with the request's method, path and that id.

use crate::common::*;

#[test]
fn a_5xx_is_logged_with_method_path_and_the_audit_id_the_client_got() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("server.log");
    let s = TestServer::start_with(ServerOptions {
        memory: true,
        args: vec!["--debug-panic-path".into(), "/debug/panic".into()],
        stderr: Some(log.clone()),
        ..Default::default()
    });
    let ok = s.get("/version");
    assert_eq!(ok.status, 200);
    let first = ok.header("Audit-Id").expect("every answer names its request").to_string();
    assert_eq!(first.len(), 36, "a UUID: {first}");
    let failed = s.get("/debug/panic");
    assert_eq!(failed.status, 500, "{}", failed.text());
    let id = failed.header("Audit-Id").expect("a 5xx names its request too").to_string();
    assert_ne!(id, first, "each request has its own id");
    let missing = s.get("/apis/kubevirt.io/v1/namespaces/x/virtualmachines/none");
    assert_eq!(missing.status, 404);
    drop(s);
    let text = std::fs::read_to_string(&log).unwrap();
    let line = text
        .lines()
        .find(|l| l.contains(&id))
        .unwrap_or_else(|| panic!("no log line names {id}:\n{text}"));
    assert!(line.contains("GET /debug/panic answered 500"), "{line}");
    assert!(line.contains("panicked"), "the line says why: {line}");
    assert!(!text.contains("answered 404"), "only 5xx answers are logged:\n{text}");
    assert!(!text.contains(&first), "a 200 is not logged:\n{text}");
}
