//! Every operation of `seed-operations.tsv` (beside this file: the repository's copy of the seed's
//! table) answers its success code for a valid request.

use serde_json::{json, Value};

use crate::common::*;
use virt_apiserver::resource::ResourceInfo;

const NS: &str = "seed";

/// One row of the table.
struct Row {
    line: usize,
    method: String,
    path: String,
    op: String,
}

fn rows() -> Vec<Row> {
    let path = repo_root().join("tests/api/documents/seed-operations.tsv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|(i, l)| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert!(cols.len() >= 3, "line {}: three tab-separated columns: {l:?}", i + 1);
            Row {
                line: i + 1,
                method: cols[0].trim().to_string(),
                path: cols[1].trim().to_string(),
                op: cols[2].trim().to_string(),
            }
        })
        .collect()
}

/// What a resource path of the table names.
struct ResourcePath {
    res: &'static ResourceInfo,
    /// The path of the collection the row's object lives in (namespace bound).
    collection: String,
    has_name: bool,
}

/// Parses `/apis/<g>/<v>/[watch/][namespaces/{namespace}/]<plural>[/{name}]`.
fn resource_path(path: &str) -> Option<ResourcePath> {
    let rest = path.strip_prefix("/apis/")?;
    let segs: Vec<&str> = rest.split('/').collect();
    if segs.len() < 3 {
        return None;
    }
    let (group, version) = (segs[0], segs[1]);
    let mut i = 2;
    if segs[i] == "watch" {
        i += 1;
    }
    if segs.get(i) == Some(&"namespaces") {
        i += 2;
    }
    let plural = segs.get(i)?;
    let has_name = segs.get(i + 1) == Some(&"{name}");
    let res = resource(group, version, plural);
    Some(ResourcePath { res, collection: collection_path(res, Some(NS)), has_name })
}

fn bind(path: &str, name: &str) -> String {
    path.replace("{namespace}", NS).replace("{name}", name)
}

#[test]
fn every_seed_operation_succeeds() {
    let s = TestServer::start();
    s.namespace(NS);
    let rows = rows();
    assert!(rows.len() > 200, "the table lists {} operations", rows.len());
    let mut failures = Vec::new();
    for row in &rows {
        if let Err(e) = run_row(&s, row) {
            failures
                .push(format!("line {} {} {} ({}): {e}", row.line, row.method, row.path, row.op));
        }
    }
    assert!(failures.is_empty(), "{} failing operations:\n{}", failures.len(), failures.join("\n"));
}

fn run_row(s: &TestServer, row: &Row) -> Result<(), String> {
    let name = format!("seed-{}", row.line);
    let path = bind(&row.path, &name);
    let expect = |r: Resp, code: u16| -> Result<Resp, String> {
        if r.status == code {
            Ok(r)
        } else {
            Err(format!("expected {code}, got {}: {}", r.status, r.text()))
        }
    };
    let create = |rp: &ResourcePath, name: &str| -> Result<Value, String> {
        let r = s.post(&rp.collection, &object(rp.res, NS, name));
        Ok(expect(r, 201)?.json())
    };
    match (row.method.as_str(), row.op.as_str()) {
        ("GET", "discovery" | "health" | "openapi") => {
            expect(s.get(&path), 200)?;
        }
        ("POST", "create") => {
            let rp = resource_path(&row.path).ok_or("not a resource path")?;
            let code = if rp.res.token_field.is_some() { 200 } else { 201 };
            let r = expect(s.post(&path, &object(rp.res, NS, &name)), code)?;
            let body = r.json();
            if body["kind"] != rp.res.kind {
                return Err(format!("answered kind {}", body["kind"]));
            }
        }
        ("GET", "list" | "listall") => {
            let rp = resource_path(&row.path).ok_or("not a resource path")?;
            let list = expect(s.get(&path), 200)?.json();
            if list["kind"] != rp.res.list_kind {
                return Err(format!("list kind {}", list["kind"]));
            }
        }
        ("DELETE", "deletecollection") => {
            let rp = resource_path(&row.path).ok_or("not a resource path")?;
            create(&rp, &name)?;
            let list = expect(s.delete(&path), 200)?.json();
            if !names(&list).contains(&name) {
                return Err(format!("deleted list lacks {name}: {list}"));
            }
        }
        ("GET", "get") => {
            let rp = resource_path(&row.path).ok_or("not a resource path")?;
            create(&rp, &name)?;
            let obj = expect(s.get(&path), 200)?.json();
            if obj["metadata"]["name"] != name.as_str() {
                return Err(format!("got {obj}"));
            }
        }
        ("PUT", "update") => {
            let rp = resource_path(&row.path).ok_or("not a resource path")?;
            let mut obj = create(&rp, &name)?;
            obj["spec"] = json!({"updated": true});
            expect(s.put(&path, &obj), 200)?;
        }
        ("PATCH", "patch") => {
            let rp = resource_path(&row.path).ok_or("not a resource path")?;
            create(&rp, &name)?;
            let patch = json!({"metadata": {"labels": {"patched": "yes"}}});
            let obj = expect(s.patch(&path, "application/merge-patch+json", &patch), 200)?.json();
            if obj["metadata"]["labels"]["patched"] != "yes" {
                return Err(format!("patch not applied: {obj}"));
            }
        }
        ("DELETE", "delete") => {
            let rp = resource_path(&row.path).ok_or("not a resource path")?;
            create(&rp, &name)?;
            expect(s.delete(&path), 200)?;
            expect(s.get(&path), 404)?;
        }
        ("GET", "watchns" | "watchall" | "watch") => {
            let rp = resource_path(&row.path).ok_or("not a resource path")?;
            if rp.has_name {
                return Err("item watches are not in the table yet; extend this test".into());
            }
            create(&rp, &name)?;
            let w = s.watch(&path);
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
            loop {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                let Some(ev) = w.next(left) else {
                    return Err(format!("no ADDED event for {name} within 5 s"));
                };
                if ev["type"] == "ADDED" && ev["object"]["metadata"]["name"] == name.as_str() {
                    break;
                }
            }
        }
        (m, op) => return Err(format!("unknown row kind {m} {op}; extend this test")),
    }
    Ok(())
}
