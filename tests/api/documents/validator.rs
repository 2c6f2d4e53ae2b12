//! The OpenAPI documents pass a real validator: `openapi-spec-validator` (PyPI) on the checked-in
//! Swagger 2.0 document and on every OpenAPI 3.0 group-version document a running server serves.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::common::{repo_root, TestServer};

/// `$OPENAPI_SPEC_VALIDATOR` (set by `.ci/test`), else `openapi-spec-validator` on PATH. Missing is
/// a failure, never a skip.
fn validator() -> PathBuf {
    if let Some(p) = std::env::var_os("OPENAPI_SPEC_VALIDATOR") {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "OPENAPI_SPEC_VALIDATOR={} does not exist", p.display());
        return p;
    }
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join("openapi-spec-validator"))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| {
            panic!(
                "openapi-spec-validator not found (neither $OPENAPI_SPEC_VALIDATOR nor PATH): \
                 run the README's test command, `bash .ci/test`, which installs it"
            )
        })
}

/// Runs the validator on `files` as OpenAPI `schema` (`2.0` or `3.0`).
fn validate(schema: &str, files: &[PathBuf]) -> Output {
    let out = Command::new(validator())
        .args(["--schema", schema, "--validation-errors", "all"])
        .args(files)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", validator().display()));
    eprintln!(
        "openapi-spec-validator --schema {schema} ({} files): {}\n{}{}",
        files.len(),
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Asserts the validator accepted every file, naming each as OK.
fn assert_valid(schema: &str, files: &[PathBuf]) {
    let out = validate(schema, files);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "openapi-spec-validator rejected a document:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in files {
        let line = format!("{}: OK", f.display());
        assert!(stdout.lines().any(|l| l.trim() == line), "no `{line}` in:\n{stdout}");
    }
}

fn write_json(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_vec_pretty(v).expect("encode")).expect("write");
    path
}

#[test]
fn checked_in_document_is_valid_swagger_2() {
    assert_valid("2.0", &[repo_root().join("openapi/virt-apiserver.json")]);
}

#[test]
fn validator_rejects_a_broken_document() {
    // The validator must really look: a document that misses info.version and declares a path
    // parameter nowhere fails.
    let dir = tempfile::tempdir().expect("tempdir");
    let broken = serde_json::json!({
        "swagger": "2.0",
        "info": {"title": "broken"},
        "paths": {"/things/{name}": {"get": {"responses": {"200": {"description": "OK"}}}}}
    });
    let path = write_json(dir.path(), "broken.json", &broken);
    let out = validate("2.0", &[path]);
    assert!(!out.status.success(), "openapi-spec-validator accepted a broken document");
}

#[test]
fn served_v3_documents_are_valid_openapi_3() {
    let server = TestServer::start();
    let index = server.get("/openapi/v3");
    assert_eq!(index.status, 200, "{}", index.text());
    let index = index.json();
    let paths = index["paths"].as_object().expect("an index of group versions");
    assert!(!paths.is_empty(), "the /openapi/v3 index lists no group version: {index}");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut files = Vec::new();
    for (gv, entry) in paths {
        let url = entry["serverRelativeURL"].as_str().expect("serverRelativeURL");
        let doc = server.get(url);
        assert_eq!(doc.status, 200, "{url}: {}", doc.text());
        let doc = doc.json();
        assert!(
            doc["openapi"].as_str().is_some_and(|v| v.starts_with("3.0")),
            "{gv} is not an OpenAPI 3.0 document"
        );
        files.push(write_json(dir.path(), &format!("{}.json", gv.replace('/', "_")), &doc));
    }
    assert_valid("3.0", &files);

    // The served v2 document is the checked-in one, and valid too.
    let v2 = server.get("/openapi/v2");
    assert_eq!(v2.status, 200);
    let path = dir.path().join("v2.json");
    std::fs::write(&path, &v2.body).expect("write");
    assert_valid("2.0", &[path]);
}
