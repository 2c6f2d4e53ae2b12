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

/// KubeVirt's behaviour beside the document: the controllers' lifecycles and virt-api's
/// actions and webhooks (none when there are no such files, as a fixture document has not),
/// read as one, checked against the document (every problem at once) and copied into `OUT_DIR`
/// for `generated::{LIFECYCLES, ACTIONS}`.
fn lifecycles(doc: &std::path::Path, out: &std::path::Path) {
    println!("cargo:rerun-if-changed=codegen/lifecycle/src");
    println!("cargo:rerun-if-changed=codegen/openapi-ref/src");
    let files = ["lifecycles.yaml", "actions.yaml"].map(|name| doc.with_file_name(name));
    let mut texts = Vec::new();
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        texts.push(std::fs::read_to_string(file).unwrap_or_default());
    }
    let parsed = lifecycle::parse(&texts[0])
        .and_then(|lc| Ok(lc.merged(lifecycle::parse(&texts[1])?)))
        .map_err(|e| vec![e]);
    let checked = parsed.and_then(|lc| {
        let bytes = std::fs::read(doc).expect("document");
        // The versions the server stores, from the model its code is generated from.
        let stored = codegen::stored_kinds(&bytes).map_err(|e| vec![e.to_string()])?;
        let doc: serde_json::Value =
            serde_json::from_slice(&bytes).map_err(|e| vec![e.to_string()])?;
        lifecycle::check::check(&doc, &stored, &lc)
    });
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let names = names.join(" and ");
    if let Err(problems) = checked {
        eprintln!("{names} have {} problem(s):", problems.len());
        for p in &problems {
            eprintln!("  - {p}");
        }
        panic!("lifecycle check failed for {names}");
    }
    for (file, text) in files.iter().zip(texts) {
        let name = file.file_name().expect("a file name");
        std::fs::write(out.join(name), text).expect("write the lifecycle files");
    }
}
