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
}
