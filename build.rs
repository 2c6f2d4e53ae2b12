//! Generates the route table and handlers from the OpenAPI document (see `codegen`).

use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-env-changed=VIRT_APISERVER_OPENAPI");
    let manifest =
        PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    // Tests build the binary against a fixture document through this variable.
    let doc = match std::env::var_os("VIRT_APISERVER_OPENAPI") {
        Some(p) => PathBuf::from(p),
        None => manifest.join("openapi/virt-apiserver.json"),
    };
    println!("cargo:rerun-if-changed={}", doc.display());
    println!("cargo:rerun-if-changed=codegen/src");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    if let Err(e) = codegen::generate_to_dir(&doc, &out) {
        eprintln!("{e}");
        panic!("codegen failed for {}", doc.display());
    }
    lifecycles(&doc, &out);
}

/// The simulated runtime's lifecycles beside the document (none when it has no such file, as a
/// fixture document has not): checked against the document, every problem at once, and copied
/// into `OUT_DIR` for `generated::LIFECYCLES`.
fn lifecycles(doc: &std::path::Path, out: &std::path::Path) {
    let file = doc.with_file_name("lifecycles.yaml");
    println!("cargo:rerun-if-changed={}", file.display());
    println!("cargo:rerun-if-changed=codegen/lifecycle/src");
    println!("cargo:rerun-if-changed=codegen/openapi-ref/src");
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let parsed = lifecycle::parse(&text).map_err(|e| vec![e]);
    let checked = parsed.and_then(|lc| {
        let bytes = std::fs::read(doc).expect("document");
        // The versions the server stores, from the model its code is generated from.
        let stored = codegen::stored_kinds(&bytes).map_err(|e| vec![e.to_string()])?;
        let doc: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| vec![e.to_string()])?;
        lifecycle::check::check(&doc, &stored, &lc)
    });
    if let Err(problems) = checked {
        eprintln!("{} has {} problem(s):", file.display(), problems.len());
        for p in &problems {
            eprintln!("  - {p}");
        }
        panic!("lifecycle check failed for {}", file.display());
    }
    std::fs::write(out.join("lifecycles.yaml"), text).expect("write lifecycles.yaml");
}
