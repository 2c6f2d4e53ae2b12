//! The layers of `src/` and what each may import (ARCHITECTURE.md, "Layers"): every `crate::`
//! path in a file must name its own layer or one below it, and only the HTTP layer names actix.
//! Reads the sources as text, so a new upward import fails here before it becomes a cycle.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Each layer and the layers (besides itself) its files may name. `generated` is the
/// document's data (the statics) plus the route table, which names hand-written code only
/// through its facade; `shell` turns flags into a running server over all of them; `lib.rs`
/// and `main.rs` may name any.
const LAYERS: &[(&str, &[&str])] = &[
    ("resource", &[]),
    ("object", &["resource", "generated"]),
    ("store", &[]),
    ("registry", &["resource", "generated", "object", "store"]),
    ("runtime", &["resource", "generated", "object", "store", "registry"]),
    ("http", &["resource", "generated", "object", "store", "registry"]),
    ("generated", &["resource", "object", "store", "registry", "http"]),
    ("shell", &["resource", "generated", "object", "store", "registry", "runtime", "http"]),
];

/// Layers whose files may name actix (and its crates).
const ACTIX_LAYERS: &[&str] = &["http", "generated"];

fn layer_of(rel: &Path) -> Option<String> {
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    match name {
        "lib" | "main" => None,
        other => Some(other.to_string()),
    }
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The first segment after each `crate::` in a line's code (comments dropped).
fn crate_paths(line: &str) -> Vec<String> {
    let code = line.split("//").next().unwrap_or("");
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        // `$crate::` and `virt_apiserver::…` are not this crate's paths.
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let seg: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
        if !seg.is_empty() {
            out.push(seg);
        }
    }
    out
}

fn names_actix(line: &str) -> bool {
    let code = line.split("//").next().unwrap_or("");
    code.contains("actix_")
}

#[test]
fn imports_point_down_only() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let known: BTreeSet<&str> = LAYERS.iter().map(|(l, _)| *l).collect();
    let mut problems = Vec::new();
    for file in &files {
        let rel = file.strip_prefix(&root).unwrap();
        let Some(layer) = layer_of(rel) else { continue };
        let Some((_, allowed)) = LAYERS.iter().find(|(l, _)| *l == layer) else {
            problems.push(format!("{}: not in a layer ({known:?})", rel.display()));
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for (n, line) in text.lines().enumerate() {
            for seg in crate_paths(line) {
                if seg != layer && !allowed.contains(&seg.as_str()) {
                    problems.push(format!(
                        "{}:{}: the {layer} layer names crate::{seg}",
                        rel.display(),
                        n + 1
                    ));
                }
            }
            if names_actix(line) && !ACTIX_LAYERS.contains(&layer.as_str()) {
                problems.push(format!("{}:{}: actix outside the HTTP layer", rel.display(), n + 1));
            }
        }
    }
    assert!(problems.is_empty(), "{} upward imports:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_scanner_reads_paths_and_skips_comments() {
    assert_eq!(crate_paths("use crate::object::meta; // crate::http"), ["object"]);
    assert_eq!(
        crate_paths("let x = crate::store::Store::open(y, crate::registry::A);"),
        ["store", "registry"]
    );
    assert!(crate_paths("$crate::x; my_crate::y").is_empty());
    assert!(names_actix("use actix_web::HttpRequest;"));
    assert!(!names_actix("// actix_web notices it only when it writes"));
}
