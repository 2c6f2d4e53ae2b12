//! The layers of `src/` and what each may import (ARCHITECTURE.md, "Layers"): every `crate::`
//! path in a file must name its own layer or one below it, and only the HTTP layer names actix;
//! and inside the layers, the modules' imports form no cycle, so they too have a strict order.
//! Reads the sources as text (as rustfmt lays them out).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each layer, bottom first, and the layers (besides itself) its files may name: only layers
/// listed before it (`layers_are_a_strict_order`). `generated` is the document's data (the
/// statics codegen fills); its route table is `http::routes`. `shell` turns flags into a
/// running server over all of them; `lib.rs` and `main.rs` wire the layers together and may
/// name any.
const LAYERS: &[(&str, &[&str])] = &[
    ("resource", &[]),
    ("generated", &["resource"]),
    ("object", &["resource", "generated"]),
    ("store", &[]),
    ("registry", &["resource", "generated", "object", "store"]),
    ("controllers", &["resource", "generated", "object", "store", "registry"]),
    ("behaviour", &["resource", "generated", "object", "store", "registry", "controllers"]),
    ("http", &["resource", "generated", "object", "store", "registry", "behaviour"]),
    (
        "shell",
        &[
            "resource",
            "generated",
            "object",
            "store",
            "registry",
            "controllers",
            "behaviour",
            "http",
        ],
    ),
];

/// Layers whose files may name actix (and its crates).
const ACTIX_LAYERS: &[&str] = &["http"];

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

/// A file's module: `src/http/filters.rs` is `http::filters`, a `mod.rs` its directory's module;
/// `lib.rs` and `main.rs` are the root, which wires the modules and is outside the graph.
fn module_of(rel: &Path) -> Vec<String> {
    let mut segs: Vec<String> =
        rel.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    let last = segs.pop().unwrap_or_default();
    let stem = last.strip_suffix(".rs").unwrap_or(&last);
    if !matches!(stem, "mod" | "lib" | "main") {
        segs.push(stem.to_string());
    }
    segs
}

/// A `use` tree (`crate::a::{b::C, d as e, self}`) as its paths, each with the name it brings
/// into scope (none for a glob).
fn use_paths(tree: &str) -> Vec<(Vec<String>, Option<String>)> {
    let mut tokens = Vec::new();
    let mut chars = tree.chars().peekable();
    while let Some(c) = chars.next() {
        if c.is_alphanumeric() || c == '_' {
            let mut word = c.to_string();
            while let Some(&d) = chars.peek().filter(|d| d.is_alphanumeric() || **d == '_') {
                word.push(d);
                chars.next();
            }
            tokens.push(word);
        } else if matches!(c, '{' | '}' | ',' | '*') {
            tokens.push(c.to_string());
        }
    }
    fn tree_at(
        tokens: &[String],
        i: &mut usize,
        mut path: Vec<String>,
        out: &mut Vec<(Vec<String>, Option<String>)>,
    ) {
        while let Some(token) = tokens.get(*i) {
            *i += 1;
            match token.as_str() {
                "{" => {
                    while tokens.get(*i).is_some_and(|t| t != "}") {
                        tree_at(tokens, i, path.clone(), out);
                        if tokens.get(*i).is_some_and(|t| t == ",") {
                            *i += 1;
                        }
                    }
                    *i += 1;
                    return;
                }
                "*" => return out.push((path, None)),
                "self" if !path.is_empty() => {
                    let name = path.last().cloned();
                    return out.push((path, name));
                }
                word => {
                    path.push(word.to_string());
                    // The next token continues the path unless it ends this tree.
                    match tokens.get(*i).map(String::as_str) {
                        Some("as") => {
                            let alias = tokens.get(*i + 1).cloned();
                            *i += 2;
                            return out.push((path, alias));
                        }
                        None | Some("," | "}") => {
                            let name = path.last().cloned();
                            return out.push((path, name));
                        }
                        _ => {}
                    }
                }
            }
        }
    }
    let mut out = Vec::new();
    tree_at(&tokens, &mut 0, Vec::new(), &mut out);
    out
}

/// Each path written in a line of code (`a::b::c`, as far as it goes), not counting those that
/// continue another (`x::crate::y`) or a macro's `$crate::`.
fn code_paths(code: &str) -> Vec<Vec<String>> {
    let chars: Vec<char> = code.chars().collect();
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let starts = word(chars[i])
            && (i == 0 || !(word(chars[i - 1]) || chars[i - 1] == '$' || chars[i - 1] == ':'));
        if !starts {
            i += 1;
            continue;
        }
        let mut path = Vec::new();
        loop {
            let from = i;
            while i < chars.len() && word(chars[i]) {
                i += 1;
            }
            path.push(chars[from..i].iter().collect::<String>());
            let more = chars.get(i) == Some(&':')
                && chars.get(i + 1) == Some(&':')
                && chars.get(i + 2).is_some_and(|&c| word(c));
            if !more {
                break;
            }
            i += 2;
        }
        if path.len() > 1 {
            out.push(path);
        }
    }
    out
}

/// `path`, written in `scope`, as a path from the crate's root; `None` for another crate's.
fn absolute(
    scope: &[String],
    path: &[String],
    aliases: &BTreeMap<String, Vec<String>>,
    modules: &BTreeSet<Vec<String>>,
) -> Option<Vec<String>> {
    let mut abs = scope.to_vec();
    let mut rest = path;
    match path.first()?.as_str() {
        "crate" => {
            abs.clear();
            rest = &path[1..];
        }
        "self" => rest = &path[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                abs.pop()?;
                rest = &rest[1..];
            }
        }
        first => {
            let child = [scope, &[first.to_string()]].concat();
            if !modules.contains(&child) {
                abs = aliases.get(first)?.clone();
                rest = &path[1..];
            }
        }
    }
    abs.extend(rest.iter().cloned());
    Some(abs)
}

/// What each module re-exports (`pub use`): a name and the path it stands for.
type Reexports = BTreeMap<Vec<String>, BTreeMap<String, Vec<String>>>;

/// The module an absolute path names: the longest known module it starts with, through the
/// re-exports (`crate::store::StoreError` is `store::error`'s).
fn module_named(
    abs: &[String],
    modules: &BTreeSet<Vec<String>>,
    reexports: &Reexports,
) -> Option<Vec<String>> {
    let mut abs = abs.to_vec();
    for _ in 0..8 {
        let module =
            (1..=abs.len()).rev().map(|n| abs[..n].to_vec()).find(|m| modules.contains(m))?;
        let Some(target) = abs.get(module.len()).and_then(|name| reexports.get(&module)?.get(name))
        else {
            return Some(module);
        };
        abs = target.iter().chain(&abs[module.len() + 1..]).cloned().collect();
    }
    None
}

/// The modules a file's code names (comments dropped), each with the first line naming it, and
/// what it re-exports. Inline modules (`mod tests { ... }`, closed by a `}` at their
/// indentation) are scopes of their file: what they name, their file names.
fn module_imports(
    module: &[String],
    text: &str,
    modules: &BTreeSet<Vec<String>>,
    reexports: &Reexports,
) -> (BTreeMap<Vec<String>, usize>, BTreeMap<String, Vec<String>>) {
    let mut out = BTreeMap::new();
    let mut own = BTreeMap::new();
    let mut aliases = BTreeMap::new();
    let mut inline: Vec<(usize, String)> = Vec::new();
    // A `use` item being read, from the line it starts on to its `;`.
    let mut pending: Option<(usize, String)> = None;
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let trimmed = code.trim();
        let indent = code.len() - code.trim_start().len();
        if pending.is_none() && inline.last().is_some_and(|(at, _)| *at == indent) && trimmed == "}"
        {
            inline.pop();
            continue;
        }
        let scope: Vec<String> =
            module.iter().cloned().chain(inline.iter().map(|(_, m)| m.clone())).collect();
        // `pub`, `pub(crate)`, `pub(super)`: the item after it.
        let item = match trimmed.strip_prefix("pub") {
            Some(rest) if rest.starts_with('(') => rest.split_once(')').map_or(rest, |p| p.1),
            Some(rest) if rest.starts_with(' ') => rest,
            _ => trimmed,
        }
        .trim_start();
        if pending.is_none() {
            if let Some(name) = item.strip_prefix("mod ").and_then(|m| m.strip_suffix(" {")) {
                inline.push((indent, name.to_string()));
                continue;
            }
            if let Some(tree) = item.strip_prefix("use ") {
                let public = item.len() < trimmed.len() && inline.is_empty();
                pending = Some((n, format!("{}{tree}", if public { "pub " } else { "" })));
            }
        } else if let Some((_, tree)) = &mut pending {
            tree.push(' ');
            tree.push_str(trimmed);
        }
        let mut found = Vec::new();
        if pending.as_ref().is_some_and(|(_, tree)| tree.contains(';')) {
            let (at, tree) = pending.take().unwrap();
            let (public, tree) = match tree.strip_prefix("pub ") {
                Some(tree) => (true, tree),
                None => (false, tree.as_str()),
            };
            for (path, name) in use_paths(tree.split(';').next().unwrap_or("")) {
                let Some(abs) = absolute(&scope, &path, &aliases, modules) else { continue };
                let Some(target) = module_named(&abs, modules, reexports) else { continue };
                if let Some(name) = name {
                    if public {
                        own.insert(name.clone(), abs.clone());
                    }
                    aliases.insert(name, abs);
                }
                found.push((target, at));
            }
        } else if pending.is_none() {
            for path in code_paths(code) {
                let abs = absolute(&scope, &path, &aliases, modules);
                if let Some(target) = abs.and_then(|abs| module_named(&abs, modules, reexports)) {
                    found.push((target, n));
                }
            }
        }
        for (target, at) in found {
            if target != module {
                out.entry(target).or_insert(at + 1);
            }
        }
    }
    (out, own)
}

/// A cycle of the graph for each strongly connected component of more than one module: the
/// modules along it (the first repeated at the end), and all the component's modules.
fn cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<(Vec<String>, Vec<String>)> {
    // Tarjan's algorithm, recursive: the graph is a few hundred modules.
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        components: Vec<Vec<&'a str>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, v: &'a str) {
            let i = self.index.len();
            self.index.insert(v, i);
            self.low.insert(v, i);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.edges.get(v).into_iter().flatten() {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                while let Some(w) = self.stack.pop() {
                    self.on_stack.remove(w);
                    component.push(w);
                    if w == v {
                        break;
                    }
                }
                self.components.push(component);
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v.as_str()) {
            walk.visit(v);
        }
    }
    let mut out = Vec::new();
    for component in walk.components.iter().filter(|c| c.len() > 1) {
        // The shortest way from its smallest module back to itself, inside the component.
        let inside: BTreeSet<&str> = component.iter().copied().collect();
        let start = *inside.first().unwrap();
        let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([start]);
        'search: while let Some(v) = queue.pop_front() {
            for w in edges.get(v).into_iter().flatten().map(String::as_str) {
                if !inside.contains(w) {
                    continue;
                }
                if w == start {
                    came_from.insert(start, v);
                    break 'search;
                }
                if !came_from.contains_key(w) {
                    came_from.insert(w, v);
                    queue.push_back(w);
                }
            }
        }
        let mut cycle = vec![start.to_string()];
        let mut at = came_from[start];
        while at != start {
            cycle.push(at.to_string());
            at = came_from[at];
        }
        cycle.push(start.to_string());
        cycle.reverse();
        out.push((cycle, inside.iter().map(|m| m.to_string()).collect()));
    }
    out
}

/// The import graph of modules given with their text: for each module, the modules it names
/// (through the re-exports to the module defining the item), each with the first line naming it.
/// A module naming one of its ancestors (`super::X`) is an edge like any other.
fn import_graph(
    texts: &[(Vec<String>, &str)],
    modules: &BTreeSet<Vec<String>>,
) -> BTreeMap<String, BTreeMap<String, usize>> {
    // The re-exports first, so a path through one names the module that defines the item.
    let mut reexports = Reexports::new();
    for (module, text) in texts {
        reexports
            .insert(module.clone(), module_imports(module, text, modules, &Reexports::new()).1);
    }
    let mut graph = BTreeMap::new();
    for (module, text) in texts {
        let (imports, _) = module_imports(module, text, modules, &reexports);
        let named = imports.into_iter().map(|(target, line)| (target.join("::"), line)).collect();
        graph.insert(module.join("::"), named);
    }
    graph
}

/// A graph's edges without their lines, for `cycles`.
fn edges(graph: &BTreeMap<String, BTreeMap<String, usize>>) -> BTreeMap<String, BTreeSet<String>> {
    graph.iter().map(|(from, to)| (from.clone(), to.keys().cloned().collect())).collect()
}

/// The modules of `src/` (one per file) and the modules each names, through re-exports to the
/// module defining the item, form no cycle, with no exception: a child naming its parent
/// (`super::X`) makes one as soon as the parent names the child (a `use` or a re-export;
/// declaring it, `mod x;`, is no edge). So a `mod.rs` holds its module declarations, its
/// re-exports and what only it uses; what its children share is defined in a file of its own,
/// which `mod.rs` re-exports (`pub use`), and a child's `super::X` names that file. Tests are no
/// exception either: an inline `mod tests` counts as its file, so a test that needs the whole
/// of an ancestor (a `Store` over the backend it tests) lives in a test file of its own
/// (`store/etcd/tests.rs`), which nothing names.
#[test]
fn modules_import_each_other_in_one_direction_only() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &mut files);
    let rel = |file: &PathBuf| file.strip_prefix(&root).unwrap().to_path_buf();
    let modules: BTreeSet<Vec<String>> =
        files.iter().map(|f| module_of(&rel(f))).filter(|m| !m.is_empty()).collect();
    let texts: Vec<(Vec<String>, PathBuf, String)> = files
        .iter()
        .map(|f| (module_of(&rel(f)), rel(f), std::fs::read_to_string(f).unwrap()))
        .filter(|(m, _, _)| !m.is_empty())
        .collect();
    let paths: BTreeMap<String, &PathBuf> =
        texts.iter().map(|(module, rel, _)| (module.join("::"), rel)).collect();
    let named: Vec<(Vec<String>, &str)> =
        texts.iter().map(|(module, _, text)| (module.clone(), text.as_str())).collect();
    let graph = import_graph(&named, &modules);
    let found: Vec<String> = cycles(&edges(&graph))
        .iter()
        .map(|(cycle, component)| {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| {
                    let line = graph[&w[0]][&w[1]];
                    format!("  {} -> {} ({}:{line})", w[0], w[1], paths[&w[0]].display())
                })
                .collect();
            format!(
                "{}\n{}\n  (one of the cycles among {})",
                cycle.join(" -> "),
                steps.join("\n"),
                component.join(", ")
            )
        })
        .collect();
    assert!(
        found.is_empty(),
        "{} import cycle(s) between modules:\n{}",
        found.len(),
        found.join("\n")
    );
}

#[test]
fn layers_are_a_strict_order() {
    for (i, (layer, allowed)) in LAYERS.iter().enumerate() {
        for below in *allowed {
            let at = LAYERS.iter().position(|(l, _)| l == below);
            assert!(at.is_some_and(|at| at < i), "{layer} may name {below}, not listed before it");
        }
    }
}

/// A planted cycle, as `http/filters.rs` and `http/server.rs` once had: each names the other,
/// one through `crate::`, one through `super::`, and a third module hangs off the cycle.
#[test]
fn a_planted_cycle_is_named() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let modules: BTreeSet<Vec<String>> =
        ["http", "http::filters", "http::server", "http::state", "store"].map(m).into();
    let sources = [
        ("http::filters", "use crate::http::state::AppState;\nuse super::server::Options;\n"),
        (
            "http::server",
            "use crate::{\n    http::filters::{chain, Filters},\n    store::Store,\n};\n",
        ),
        ("http::state", "pub struct AppState;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n"),
    ];
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, text) in sources {
        let (imports, _) = module_imports(&m(module), text, &modules, &Reexports::new());
        edges.insert(module.into(), imports.keys().map(|t| t.join("::")).collect());
    }
    assert_eq!(edges["http::server"], ["http::filters", "store"].map(String::from).into());
    assert!(edges["http::state"].is_empty(), "a test module's `super` is its file");
    let (cycle, component) = &cycles(&edges)[0];
    assert_eq!(cycle, &["http::filters", "http::server", "http::filters"]);
    assert_eq!(component, &["http::filters", "http::server"]);
    edges.get_mut("http::filters").unwrap().remove("http::server");
    assert!(cycles(&edges).is_empty());
}

/// A child naming its parent, as `store/backend.rs` once did (`use super::ListRequest`, defined
/// in `store/mod.rs`, which names `backend` in turn): a cycle like any other. Once the item is
/// defined in a file of its own and re-exported, the child's same path names that file, and the
/// cycle is gone.
#[test]
fn a_child_naming_its_parent_is_a_cycle() {
    let m = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
    let modules: BTreeSet<Vec<String>> =
        ["store", "store::backend", "store::records"].map(m).into();
    let child = "use super::ListRequest;\n\npub trait Backend {}\n";
    let parent =
        "pub mod backend;\nmod records;\n\nuse backend::Backend;\n\npub struct ListRequest;\n";
    let graph = import_graph(&[(m("store"), parent), (m("store::backend"), child)], &modules);
    let (cycle, _) = &cycles(&edges(&graph))[0];
    assert_eq!(cycle, &["store", "store::backend", "store"]);
    assert_eq!(graph["store::backend"]["store"], 1, "the line naming the parent");

    let parent =
        "pub mod backend;\nmod records;\n\nuse backend::Backend;\npub use records::ListRequest;\n";
    let records = "pub struct ListRequest;\n";
    let texts =
        [(m("store"), parent), (m("store::backend"), child), (m("store::records"), records)];
    let graph = import_graph(&texts, &modules);
    assert_eq!(graph["store::backend"].keys().collect::<Vec<_>>(), ["store::records"]);
    assert!(cycles(&edges(&graph)).is_empty());
}

#[test]
fn use_trees_and_code_paths() {
    let paths = use_paths("crate::a::{b::{C, self}, d as e, *}");
    let shown: Vec<(String, Option<&str>)> =
        paths.iter().map(|(p, n)| (p.join("::"), n.as_deref())).collect();
    assert_eq!(
        shown,
        [
            ("crate::a::b::C".into(), Some("C")),
            ("crate::a::b".into(), Some("b")),
            ("crate::a::d".into(), Some("e")),
            ("crate::a".into(), None),
        ]
    );
    let code = code_paths("let x = super::conn::open(p)?; $crate::y; Vec::<u8>::new(); a::b");
    let code: Vec<String> = code.iter().map(|p| p.join("::")).collect();
    assert_eq!(code, ["super::conn::open", "a::b"]);
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
