//! Golden test: codegen on `tests/fixtures/mini.json` must print exactly `tests/output/mini.rs`
//! (the data) and `tests/output/mini_routes.rs` (the routes).
//! `UPDATE_EXPECT=1 cargo test -p codegen --test golden` rewrites the expected files.

use std::path::Path;

use serde_json::Value;

fn fixture() -> Vec<u8> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mini.json");
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Compares `actual` with the file, or rewrites the file under `UPDATE_EXPECT=1`.
fn assert_golden(relative: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(relative);
    if std::env::var_os("UPDATE_EXPECT").is_some() {
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected == actual {
        return;
    }
    let (exp, act): (Vec<_>, Vec<_>) = (expected.lines().collect(), actual.lines().collect());
    let first = exp.iter().zip(&act).position(|(e, a)| e != a).unwrap_or(exp.len().min(act.len()));
    let show = |lines: &[&str]| {
        lines
            .iter()
            .enumerate()
            .skip(first.saturating_sub(2))
            .take(8)
            .map(|(i, l)| format!("{:>5} | {l}\n", i + 1))
            .collect::<String>()
    };
    panic!(
        "{relative} differs from the generated code ({} vs {} lines), first at line {}:\n--- expected\n{}+++ actual\n{}\n\
         Rerun with UPDATE_EXPECT=1 to accept the new output.",
        exp.len(),
        act.len(),
        first + 1,
        show(&exp),
        show(&act),
    );
}

#[test]
fn mini_generates_the_expected_code() {
    let generated = codegen::generate(&fixture()).unwrap_or_else(|e| panic!("{e}"));
    assert_golden("tests/output/mini.rs", &generated.data);
    assert_golden("tests/output/mini_routes.rs", &generated.routes);
}

#[test]
fn mini_openapi_v3_documents() {
    let generated = codegen::generate(&fixture()).unwrap_or_else(|e| panic!("{e}"));
    let keys: Vec<_> = generated.openapi_v3.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        keys,
        [
            "apis/zoo.example.io/v1",
            "apis/zoo.example.io/v1beta1",
            "apis/tickets.example.io/v1alpha1",
            "apis/actions.example.io/v1"
        ]
    );
    for (key, bytes) in &generated.openapi_v3 {
        let doc: Value = serde_json::from_slice(bytes).unwrap();
        // kubectl's field-validation check (B.7): each PATCH op carries fieldValidation itself,
        // inline, since kubectl follows no `$ref` there.
        let mut patches = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                let gvk = &op["x-kubernetes-group-version-kind"];
                // Actions (`x-virt-action`) carry neither: they are no verb on a kind.
                if !path.ends_with('/') && key != "apis/actions.example.io/v1" {
                    assert!(
                        gvk.is_object() && op["x-kubernetes-action"].is_string(),
                        "{key} {method} {path}"
                    );
                }
                if let Some(body) = op.get("requestBody") {
                    // Only the kind marked `strategicMergePatch` takes strategic merge patches,
                    // on every PATCH of it (its /status and /scale too).
                    let types = body["content"].as_object().unwrap();
                    let smp = types.contains_key("application/strategic-merge-patch+json");
                    let wanted = method == "patch" && path.contains("/enclosures/");
                    assert_eq!(smp, wanted, "{key} {method} {path}");
                }
                if method != "patch" {
                    continue;
                }
                patches += 1;
                let declares = op["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|p| p["name"] == "fieldValidation" && p["in"] == "query");
                assert!(declares, "{key} PATCH {path} lacks fieldValidation");
            }
        }
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        let kinds: Vec<_> = schemas
            .values()
            .filter_map(|s| s["x-kubernetes-group-version-kind"][0]["kind"].as_str())
            .collect();
        match key.as_str() {
            "apis/zoo.example.io/v1" => {
                // Animal, Enclosure, Enclosure's status and scale.
                assert_eq!(patches, 4);
                assert_eq!(kinds, ["Animal", "AnimalList", "Enclosure", "EnclosureList", "Scale"]);
                let scale = &doc["paths"]["/apis/zoo.example.io/v1/enclosures/{name}/scale"];
                assert_eq!(scale["get"]["x-kubernetes-group-version-kind"]["group"], "autoscaling");
                let status = &doc["paths"]["/apis/zoo.example.io/v1/enclosures/{name}/status"];
                assert_eq!(status["put"]["x-kubernetes-group-version-kind"]["kind"], "Enclosure");
            }
            "apis/zoo.example.io/v1beta1" => {
                assert_eq!(patches, 1);
                assert_eq!(kinds, ["Animal", "AnimalList"]);
            }
            "apis/actions.example.io/v1" => {
                assert_eq!(patches, 0);
                let paths: Vec<_> = doc["paths"].as_object().unwrap().keys().collect();
                assert_eq!(
                    paths,
                    [
                        "/apis/actions.example.io/v1/",
                        "/apis/actions.example.io/v1/namespaces/{namespace}/animals/{name}/feed",
                        "/apis/actions.example.io/v1/namespaces/{namespace}/animals/{name}/mood"
                    ]
                );
            }
            _ => {
                assert_eq!(patches, 0);
                assert_eq!(kinds, ["TicketRequest"]);
            }
        }
    }
}

#[test]
fn an_invalid_document_reports_every_problem_at_once() {
    let mut doc: Value = serde_json::from_slice(&fixture()).unwrap();
    let paths = doc["paths"].as_object_mut().unwrap();
    let item = "/apis/zoo.example.io/v1/namespaces/{namespace}/animals/{name}";
    paths[item]["patch"]["consumes"] =
        serde_json::json!(["application/strategic-merge-patch+json"]);
    paths[item]["get"]["x-kubernetes-action"] = "fetch".into();
    paths["/apis/zoo.example.io/v1/enclosures"]["get"]
        .as_object_mut()
        .unwrap()
        .remove("operationId");
    paths["/version"]["get"]["x-virt-handler"] = "versionInfo".into();
    let err = codegen::generate(&serde_json::to_vec(&doc).unwrap()).unwrap_err();
    let codegen::Error::Invalid(problems) = &err else { panic!("{err}") };
    assert_eq!(problems.len(), 4, "{err}");
    let text = err.to_string();
    for needle in [
        "4 problem(s)",
        "PATCH /apis/zoo.example.io/v1/namespaces/{namespace}/animals/{name} (patchZooExampleIoV1NamespacedAnimal): PATCH must not consume application/strategic-merge-patch+json",
        "GET /apis/zoo.example.io/v1/namespaces/{namespace}/animals/{name} (readZooExampleIoV1NamespacedAnimal): unknown x-kubernetes-action `fetch`",
        "GET /apis/zoo.example.io/v1/enclosures (no operationId): missing operationId",
        "GET /version (getCodeVersion): unknown x-virt-handler `versionInfo`",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}
