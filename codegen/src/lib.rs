//! Reads virt-apiserver's Swagger 2.0 document and generates its route table, per-kind records,
//! thin handlers and OpenAPI v3 documents.
//!
//! Two phases, as progenitor does: [`model::lower`] validates the document and lowers it into a
//! small IR, collecting every problem before failing; [`emit`] and [`openapi_v3`] turn the IR into
//! Rust (via `quote!` and `prettyplease`) and JSON; [`openapi_v2_pb`] encodes the v2 document as
//! gnostic protobuf. The root crate's `build.rs` calls
//! [`generate_to_dir`]; `cargo run -p codegen --example dump -- <doc.json>` prints the Rust.
//!
//! The generated code is two modules, the document's data and its routes; each names the including
//! crate's items only through the facade module `rt` its including module declares beside its
//! `include!` (`src/generated.rs`, `src/http/routes.rs`); [`emit`] lists the names they provide.

pub mod emit;
pub mod model;
pub mod openapi_v2_pb;
pub mod openapi_v3;
pub mod swagger;
#[cfg(test)]
mod test_doc;

use std::fmt;
use std::path::{Path, PathBuf};

/// Everything generated from one document.
#[derive(Debug, Clone)]
pub struct Generated {
    /// The prettyplease-formatted data module (`generated.rs`): the statics.
    pub data: String,
    /// The prettyplease-formatted routes module (`routes.rs`): `configure` and the handlers.
    pub routes: String,
    /// `(index key "apis/<group>/<version>", JSON)` for each group-version, in `GROUPS` order.
    pub openapi_v3: Vec<(String, Vec<u8>)>,
    /// The v2 document as gnostic's `openapi.v2.Document` protobuf message.
    pub openapi_v2_pb: Vec<u8>,
}

/// Why generation failed.
#[derive(Debug)]
pub enum Error {
    /// The document could not be read or a file could not be written.
    Io { path: PathBuf, source: std::io::Error },
    /// The document is not JSON of the expected shape (serde stops at the first error).
    Parse(serde_json::Error),
    /// The document parsed but lowering rejects it: every problem found, one per line.
    Invalid(Vec<String>),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, source } => write!(f, "{}: {source}", path.display()),
            Error::Parse(e) => write!(f, "the OpenAPI document does not parse: {e}"),
            Error::Invalid(problems) => {
                write!(f, "the OpenAPI document has {} problem(s):", problems.len())?;
                for p in problems {
                    write!(f, "\n  - {p}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Error {}

/// Generates the Rust module and the OpenAPI v3 documents from the document's bytes.
pub fn generate(bytes: &[u8]) -> Result<Generated, Error> {
    let doc: swagger::Document = serde_json::from_slice(bytes).map_err(Error::Parse)?;
    let api = model::lower(&doc).map_err(Error::Invalid)?;
    let openapi_v3 = openapi_v3::documents(&doc, &api).map_err(Error::Invalid)?;
    let emit::Rendered { data, routes } =
        emit::render(&api).map_err(|e| Error::Invalid(vec![e]))?;
    // Read again as plain JSON: the protobuf keeps every member, in the document's order.
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(Error::Parse)?;
    let openapi_v2_pb = openapi_v2_pb::encode_document(&value);
    Ok(Generated { data, routes, openapi_v3, openapi_v2_pb })
}

/// The kinds the server generated from the document's bytes stores, each as (group, kind,
/// storage version): what the lifecycle checker reads paths against.
pub fn stored_kinds(bytes: &[u8]) -> Result<Vec<(String, String, String)>, Error> {
    let doc: swagger::Document = serde_json::from_slice(bytes).map_err(Error::Parse)?;
    let api = model::lower(&doc).map_err(Error::Invalid)?;
    let stored = api.resources.iter().filter(|r| r.version == r.storage_version);
    Ok(stored.map(|r| (r.group.clone(), r.kind.clone(), r.version.clone())).collect())
}

/// Reads `doc` and writes into `out_dir`: `generated.rs`, `routes.rs`, `openapi-v2.json` (the document's exact
/// bytes), `openapi-v2.pb` (its protobuf form) and `openapi-v3/apis/<group>/<version>.json`. The entry point of the root `build.rs`.
pub fn generate_to_dir(doc: &Path, out_dir: &Path) -> Result<(), String> {
    write_all(doc, out_dir).map_err(|e| e.to_string())
}

fn write_all(doc: &Path, out_dir: &Path) -> Result<(), Error> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    let bytes = std::fs::read(doc).map_err(io(doc))?;
    let generated = generate(&bytes)?;
    let v2 = out_dir.join("openapi-v2.json");
    std::fs::write(&v2, &bytes).map_err(io(&v2))?;
    let pb = out_dir.join("openapi-v2.pb");
    std::fs::write(&pb, &generated.openapi_v2_pb).map_err(io(&pb))?;
    for (key, json) in &generated.openapi_v3 {
        let file = out_dir.join("openapi-v3").join(format!("{key}.json"));
        let dir = file.parent().expect("has a parent");
        std::fs::create_dir_all(dir).map_err(io(dir))?;
        std::fs::write(&file, json).map_err(io(&file))?;
    }
    for (name, code) in [("generated.rs", &generated.data), ("routes.rs", &generated.routes)] {
        let file = out_dir.join(name);
        std::fs::write(&file, code).map_err(io(&file))?;
    }
    Ok(())
}
