//! Prints the Rust that codegen generates from a document, the data module then the routes:
//! `cargo run -p codegen --example dump -- [doc.json]` (default `openapi/virt-apiserver.json`).

use std::process::ExitCode;

fn main() -> ExitCode {
    let path = std::env::args().nth(1).unwrap_or_else(|| "openapi/virt-apiserver.json".to_string());
    let generated = std::fs::read(&path)
        .map_err(|e| format!("{path}: {e}"))
        .and_then(|bytes| codegen::generate(&bytes).map_err(|e| format!("{path}: {e}")));
    match generated {
        Ok(g) => {
            print!("// $OUT_DIR/generated.rs\n{}\n// $OUT_DIR/routes.rs\n{}", g.data, g.routes);
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
