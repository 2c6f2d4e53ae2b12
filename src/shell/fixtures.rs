//! `--fixtures`: manifests applied at start, the state `POST /reset` puts back.
//!
//! Each `--fixtures` names a file or a directory (its `.yaml`, `.yml` and `.json` files in name
//! order, not recursing: kubectl's `apply -f DIR`). A file holds YAML documents (`---`-separated,
//! JSON being YAML) and each document is an object or a `List` of them (kubectl's
//! `resource.Builder` flattens `v1 List`). They are read and parsed with the other flags; at start
//! they are applied through the registry as `kubectl apply --server-side -f` applies them (field
//! manager `kubectl`, forced): a second start over the same database changes nothing, and a user
//! re-applying the same files with kubectl owns the same fields. Namespaces go first, then the
//! other cluster-scoped kinds, then the namespaced ones, each group in the order given, so a
//! namespace exists before its objects and a StorageClass before the claims that default to it.
//! The first failure stops the start, naming the file, the document (counted from 1) and the
//! API's answer.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::generated::RESOURCES;
use crate::object::validation::FieldValidation;
use crate::object::At;
use crate::registry::{ApplyOptions, ApplyRequest, Registry, Target};
use crate::resource::ResourceInfo;

/// The field manager fixtures are applied as: kubectl's for `apply --server-side`
/// (K8S staging/src/k8s.io/kubectl/pkg/cmd/apply/apply.go `fieldManagerServerSideApply`).
pub const FIELD_MANAGER: &str = "kubectl";

/// One object from a fixture file, with where it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Manifest {
    pub file: PathBuf,
    /// The document's place in its file, from 1.
    pub document: usize,
    pub object: Value,
}

impl Manifest {
    fn place(&self) -> String {
        format!("{}: document {}", self.file.display(), self.document)
    }
}

/// Every manifest under `paths`, in the order given (a directory's files by name).
pub fn read(paths: &[String]) -> Result<Vec<Manifest>, String> {
    let mut out = Vec::new();
    for path in paths {
        let path = Path::new(path);
        let meta =
            std::fs::metadata(path).map_err(|e| format!("--fixtures {}: {e}", path.display()))?;
        if meta.is_dir() {
            let mut files = Vec::new();
            let dir = std::fs::read_dir(path)
                .map_err(|e| format!("--fixtures {}: {e}", path.display()))?;
            for entry in dir {
                let file = entry.map_err(|e| format!("--fixtures {}: {e}", path.display()))?.path();
                let ext = file.extension().and_then(|e| e.to_str()).unwrap_or("");
                if file.is_file() && matches!(ext, "yaml" | "yml" | "json") {
                    files.push(file);
                }
            }
            files.sort();
            for file in files {
                read_file(&file, &mut out)?;
            }
        } else {
            read_file(path, &mut out)?;
        }
    }
    Ok(out)
}

fn read_file(file: &Path, out: &mut Vec<Manifest>) -> Result<(), String> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    for (i, doc) in serde_yaml::Deserializer::from_str(&text).enumerate() {
        let document = i + 1;
        let object = Value::deserialize(doc)
            .map_err(|e| format!("{}: document {document}: {e}", file.display()))?;
        let mut push = |object: Value| out.push(Manifest { file: file.into(), document, object });
        match object {
            // An empty document (`---` at the end).
            Value::Null => {}
            Value::Object(ref map) if is_list(map) => {
                let items = map.get("items").and_then(Value::as_array).cloned().unwrap_or_default();
                items.into_iter().for_each(push);
            }
            Value::Object(_) => push(object),
            _ => {
                return Err(format!("{}: document {document}: not an object", file.display()));
            }
        }
    }
    Ok(())
}

/// `v1 List` (kubectl also flattens any `*List` holding `items`).
fn is_list(map: &serde_json::Map<String, Value>) -> bool {
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
    kind.ends_with("List") && map.get("items").is_some_and(Value::is_array)
}

/// The kind a manifest's `apiVersion` and `kind` name, as served.
fn resource_of(m: &Manifest) -> Result<&'static ResourceInfo, String> {
    let version = m.object.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = m.object.get("kind").and_then(Value::as_str).unwrap_or("");
    RESOURCES
        .iter()
        .find(|r| r.kind == kind && r.api_version() == version && r.is_stored())
        // apimachinery's NoKindMatchError (pkg/api/meta/errors.go), as kubectl reports it.
        .ok_or_else(|| {
            format!("{}: no matches for kind {kind:?} in version {version:?}", m.place())
        })
}

/// Applies `manifests` through `registry` (namespaces, cluster-scoped kinds, namespaced kinds);
/// answers how many were applied, or the first failure naming its file and document.
pub async fn apply(registry: &Registry, manifests: &[Manifest]) -> Result<usize, String> {
    let mut ordered = Vec::with_capacity(manifests.len());
    for m in manifests {
        let res = resource_of(m)?;
        let rank = if res.namespaces {
            0
        } else if !res.namespaced {
            1
        } else {
            2
        };
        ordered.push((rank, res, m));
    }
    // Stable: within a rank, the order given.
    ordered.sort_by_key(|(rank, _, _)| *rank);
    let opts = ApplyOptions {
        manager: FIELD_MANAGER.into(),
        force: true,
        dry_run: false,
        field_validation: FieldValidation::Strict,
    };
    for (_, res, m) in &ordered {
        let mut config = m.object.clone();
        let name = config.at("/metadata/name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            // kubectl's words for a manifest without a name (resource.Builder's mapper).
            return Err(format!("{}: resource name may not be empty", m.place()));
        }
        let name = name.to_owned();
        let namespace = if res.namespaced {
            let ns = config.at("/metadata/namespace").and_then(Value::as_str);
            let ns = ns.filter(|ns| !ns.is_empty()).unwrap_or("default").to_owned();
            config["metadata"]["namespace"] = Value::String(ns.clone());
            Some(ns)
        } else {
            None
        };
        let text = serde_json::to_vec(&config).map_err(|e| format!("{}: {e}", m.place()))?;
        let target = Target::new(namespace, Some(name));
        let request = ApplyRequest { config: &config, text: &text };
        registry
            .apply(res, &target, request, &opts)
            .await
            .map_err(|e| format!("{}: {e}", m.place()))?;
    }
    Ok(ordered.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> String {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    }

    #[test]
    fn documents_lists_and_directories_in_name_order() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "b.yaml", "a: 1\n---\n---\nkind: List\nitems: [{x: 1}, {x: 2}]\n");
        write(dir.path(), "a.json", "{\"a\": 0}");
        write(dir.path(), "c.txt", "ignored: true");
        let got = read(&[dir.path().to_str().unwrap().to_owned()]).unwrap();
        let seen: Vec<(String, usize, Value)> = got
            .iter()
            .map(|m| {
                (
                    m.file.file_name().unwrap().to_str().unwrap().to_owned(),
                    m.document,
                    m.object.clone(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("a.json".into(), 1, serde_json::json!({"a": 0})),
                ("b.yaml".into(), 1, serde_json::json!({"a": 1})),
                ("b.yaml".into(), 3, serde_json::json!({"x": 1})),
                ("b.yaml".into(), 3, serde_json::json!({"x": 2})),
            ]
        );
    }

    #[test]
    fn a_bad_document_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = write(dir.path(), "bad.yaml", "a: 1\n---\n- not an object\n");
        assert_eq!(
            read(std::slice::from_ref(&file)).unwrap_err(),
            format!("{file}: document 2: not an object")
        );
        let file = write(dir.path(), "worse.yaml", "a: 1\n---\na: [\n");
        let err = read(std::slice::from_ref(&file)).unwrap_err();
        assert!(err.starts_with(&format!("{file}: document 2: ")), "{err}");
        let err = read(&["/nonexistent/fixtures".into()]).unwrap_err();
        assert!(err.starts_with("--fixtures /nonexistent/fixtures: "), "{err}");
    }
}
