//! Table output (B.8): objects as `meta.k8s.io` Tables, as apiextensions-apiserver's CRD table
//! convertor and the apiserver's `asTable` build them for `kubectl get`.
//!
//! Columns are `Name`, then the kind's printer columns from the document (kube's default `Age`
//! when it declares none); a kind whose columns place their own `Name` (format `name`, as kube's
//! printers for its built-in kinds do: an Event's is last, and only wide) gets none prepended. Cells come from simple JSONPaths, or from a column's computed `cell`
//! (kube's printers for its built-in kinds count maps and join fields); `date` cells become ages.

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use crate::object::duration::human_duration;
use crate::object::error::ApiError;
use crate::object::At;
use crate::resource::{Cell, PrinterColumn, ResourceInfo};

/// ObjectMeta's descriptions, which kube gives the `Name` and default `Age` columns.
const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// A CRD without printer columns gets this one (apiextensions `serveDefaultColumnsIfEmpty`).
const DEFAULT_COLUMNS: &[PrinterColumn] = &[PrinterColumn {
    name: "Age",
    type_: "date",
    format: "",
    description: CREATION_TIMESTAMP_DESCRIPTION,
    priority: 0,
    json_path: ".metadata.creationTimestamp",
    cell: None,
}];

/// What each row carries besides its cells (`includeObject`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    /// The default: the object's metadata as a `PartialObjectMetadata`.
    Metadata,
    Object,
    None,
}

/// How a Table answer is built: the requested Table version and the `TableOptions` parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableOptions {
    /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`, as the Accept header asked.
    pub api_version: &'static str,
    pub include: IncludeObject,
    pub no_headers: bool,
}

impl TableOptions {
    /// From `includeObject` and `noHeaders`; an unknown `includeObject` is a 400, as `asTable`.
    pub fn new(
        api_version: &'static str,
        include_object: &str,
        no_headers: bool,
    ) -> Result<TableOptions, ApiError> {
        let include = match include_object {
            "" | "Metadata" => IncludeObject::Metadata,
            "Object" => IncludeObject::Object,
            "None" => IncludeObject::None,
            other => {
                return Err(ApiError::bad_request(format!(
                    "includeObject: Invalid value: \"{other}\": must be 'Metadata', 'Object', 'None', or empty"
                )))
            }
        };
        Ok(TableOptions { api_version, include, no_headers })
    }
}

fn columns(res: &ResourceInfo) -> &'static [PrinterColumn] {
    if res.printer_columns.is_empty() {
        DEFAULT_COLUMNS
    } else {
        res.printer_columns
    }
}

/// Whether the kind's columns place the object's name themselves (a column of format `name`),
/// so no `Name` goes before them.
fn names_itself(res: &ResourceInfo) -> bool {
    columns(res).iter().any(|c| c.format == "name")
}

/// The column definitions: `Name` (unless a column is the name), then the printer columns.
pub fn column_definitions(res: &ResourceInfo) -> Value {
    let mut defs = Vec::new();
    if !names_itself(res) {
        defs.push(json!({
            "name": "Name", "type": "string", "format": "name",
            "description": NAME_DESCRIPTION, "priority": 0,
        }));
    }
    for c in columns(res) {
        let description = if c.description.is_empty() {
            format!("Custom resource definition column (in JSONPath format): {}", c.json_path)
        } else {
            c.description.to_string()
        };
        defs.push(json!({
            "name": c.name, "type": c.type_, "format": c.format,
            "description": description, "priority": c.priority,
        }));
    }
    Value::Array(defs)
}

/// One row for `obj` (already in the requested version), ages measured from `now` (Unix seconds).
pub fn row(res: &ResourceInfo, obj: &Value, opts: &TableOptions, now: i64) -> Value {
    let mut cells = Vec::new();
    if !names_itself(res) {
        cells.push(obj.at("/metadata/name").cloned().unwrap_or(Value::String(String::new())));
    }
    for c in columns(res) {
        cells.push(match c.cell {
            // As kube's printers make them: typed values whatever the column's declared type
            // (a ConfigMap's DATA is an int64 in a `string` column).
            Some(computed) => compute(computed, obj, now).map_or(Value::Null, Cow::into_owned),
            None => cell(c.type_, first_result(c.json_path, obj), now),
        });
    }
    let object = match opts.include {
        IncludeObject::Object => obj.clone(),
        IncludeObject::None => Value::Null,
        IncludeObject::Metadata => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": opts.api_version,
            "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
        }),
    };
    json!({"cells": cells, "object": object})
}

/// A Table of `rows` with the list metadata `metadata` (`resourceVersion`, `continue`, ...).
pub fn table(res: &ResourceInfo, opts: &TableOptions, metadata: Value, rows: Vec<Value>) -> Value {
    // Go writes the nil slice that `noHeaders` leaves as null.
    let defs = if opts.no_headers { Value::Null } else { column_definitions(res) };
    json!({
        "kind": "Table",
        "apiVersion": opts.api_version,
        "metadata": metadata,
        "columnDefinitions": defs,
        "rows": rows,
    })
}

/// Now, in Unix seconds.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A cell as the CRD convertor makes it: `string` cells print any value (maps and lists as JSON),
/// the others keep only values of their type; whatever is missing or mistyped is null.
fn cell(type_: &str, value: Option<&Value>, now: i64) -> Value {
    let Some(value) = value.filter(|v| !v.is_null()) else {
        return Value::Null;
    };
    match (type_, value) {
        ("string", Value::String(_)) => value.clone(),
        ("string", other) => Value::String(other.to_string()),
        ("integer", Value::Number(n)) => {
            n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)).map_or(Value::Null, Value::from)
        }
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        ("boolean", Value::Bool(_)) => value.clone(),
        ("date", Value::String(s)) => match crate::object::meta::parse_rfc3339(s) {
            Some(t) => Value::String(human_duration(now - t)),
            None => Value::String("<invalid>".into()),
        },
        _ => Value::Null,
    }
}

/// A computed cell's value; `None` when nothing is set.
fn compute<'a>(c: &Cell, obj: &'a Value, now: i64) -> Option<Cow<'a, Value>> {
    match c {
        Cell::Path(p) => first_result(p, obj).map(Cow::Borrowed),
        Cell::Int(n) => Some(Cow::Owned(Value::from(*n))),
        Cell::Str(s) => Some(Cow::Owned(Value::from(*s))),
        Cell::Bool(b) => Some(Cow::Owned(Value::Bool(*b))),
        Cell::FirstOf(options) => {
            let (last, rest) = options.split_last()?;
            rest.iter()
                .filter_map(|o| compute(o, obj, now))
                .find(|v| is_set(v))
                .or_else(|| compute(last, obj, now))
        }
        Cell::Printer(p) => Some(Cow::Owned(super::printers::cell(*p, obj, now))),
        Cell::Count(parts) => {
            let size = |v: &Value| match v {
                Value::Object(m) => m.len(),
                Value::Array(a) => a.len(),
                _ => 0,
            };
            let n: usize =
                parts.iter().filter_map(|p| compute(p, obj, now)).map(|v| size(&v)).sum();
            Some(Cow::Owned(Value::from(n)))
        }
        Cell::Lower(inner) => {
            let v = compute(inner, obj, now)?;
            Some(Cow::Owned(Value::String(text(&v).to_lowercase())))
        }
        Cell::Join(separator, parts) => {
            let texts: Vec<String> = parts
                .iter()
                .filter_map(|p| compute(p, obj, now))
                .filter(|v| is_set(v))
                .map(|v| text(&v))
                .collect();
            Some(Cow::Owned(Value::String(texts.join(separator))))
        }
        Cell::Age(inner) => {
            let age = match compute(inner, obj, now).filter(|v| is_set(v)) {
                None => "<unknown>".to_string(),
                Some(v) => match v.as_str().and_then(crate::object::meta::parse_rfc3339) {
                    Some(t) => human_duration(now - t),
                    None => "<invalid>".to_string(),
                },
            };
            Some(Cow::Owned(Value::String(age)))
        }
    }
}

/// Whether a value counts as set for `FirstOf` and `Join`, as Go's zero values do not.
fn is_set(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::String(s) => !s.is_empty(),
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::Bool(b) => *b,
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => !m.is_empty(),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// One step of a simple JSONPath.
#[derive(Debug, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
    /// `[?(@.a.b=="x")]` (or `!=`): the elements whose sub-path compares so.
    Filter {
        path: Vec<String>,
        equal: bool,
        value: Value,
    },
}

/// Parses what CRD printer columns use: `.a.b`, `['a']`, `[0]`, `[-1]`, `[*]` and
/// `[?(@.a=="x")]`. `None` for anything else; such a column's cells are null.
fn parse_path(path: &str) -> Option<Vec<Step>> {
    let mut steps = Vec::new();
    let mut rest = path.trim();
    rest = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')).unwrap_or(rest);
    rest = rest.strip_prefix('$').unwrap_or(rest);
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            if end > 0 {
                steps.push(Step::Field(r[..end].to_string()));
            }
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = find_bracket_end(r)?;
            let inner = r[..end].trim();
            rest = &r[end + 1..];
            steps.push(parse_bracket(inner)?);
        } else {
            return None;
        }
    }
    Some(steps)
}

/// The `]` closing a bracket, skipping quoted text.
fn find_bracket_end(s: &str) -> Option<usize> {
    let mut quote = None;
    for (i, c) in s.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, ']') => return Some(i),
            _ => {}
        }
    }
    None
}

fn parse_bracket(inner: &str) -> Option<Step> {
    if inner == "*" {
        return Some(Step::All);
    }
    if let Ok(i) = inner.parse::<i64>() {
        return Some(Step::Index(i));
    }
    if let Some(name) = unquote(inner) {
        return Some(Step::Field(name));
    }
    let expr = inner.strip_prefix("?(")?.strip_suffix(')')?.trim();
    let (lhs, rhs, equal) = match expr.split_once("==") {
        Some((l, r)) => (l, r, true),
        None => expr.split_once("!=").map(|(l, r)| (l, r, false))?,
    };
    let path = lhs.trim().strip_prefix('@')?;
    let path: Vec<String> = path.split('.').filter(|s| !s.is_empty()).map(String::from).collect();
    let rhs = rhs.trim();
    let value = match unquote(rhs) {
        Some(s) => Value::String(s),
        None => serde_json::from_str(rhs).ok()?,
    };
    Some(Step::Filter { path, equal, value })
}

fn unquote(s: &str) -> Option<String> {
    let q = s.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let body = s.strip_prefix(q)?.strip_suffix(q)?;
    Some(body.to_string())
}

/// The first value `path` finds in `obj`, as kube takes `results[0][0]`.
pub fn first_result<'a>(path: &str, obj: &'a Value) -> Option<&'a Value> {
    let steps = parse_path(path)?;
    let mut current = vec![obj];
    for step in &steps {
        let mut next = Vec::new();
        for v in current {
            match (step, v) {
                (Step::Field(f), Value::Object(m)) => next.extend(m.get(f)),
                (Step::Index(i), Value::Array(a)) => {
                    let i = if *i < 0 { a.len() as i64 + i } else { *i };
                    next.extend(usize::try_from(i).ok().and_then(|i| a.get(i)));
                }
                (Step::All, Value::Array(a)) => next.extend(a.iter()),
                (Step::All, Value::Object(m)) => next.extend(m.values()),
                (Step::Filter { path, equal, value }, Value::Array(a)) => {
                    next.extend(a.iter().filter(|item| {
                        let found = path.iter().try_fold(*item, |v, f| v.get(f));
                        found.is_some_and(|f| (f == value) == *equal)
                    }));
                }
                _ => {}
            }
        }
        current = next;
    }
    current.into_iter().next()
}

/// The list metadata a Table keeps from the list it shows.
pub fn list_metadata(list_metadata: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    for key in ["resourceVersion", "continue", "remainingItemCount"] {
        match list_metadata.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s.is_empty() => {}
            Some(v) => {
                out.insert(key.to_string(), v.clone());
            }
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_json_paths() {
        let obj = json!({
            "metadata": {"name": "a"},
            "spec": {"replicas": 3, "a.b": "dotted"},
            "status": {
                "conditions": [{"type": "Paused", "status": "False"}, {"type": "Ready", "status": "True"}],
                "interfaces": [{"ipAddress": "10.0.0.1"}, {"ipAddress": "10.0.0.2"}],
            },
        });
        let find = |p: &str| first_result(p, &obj).cloned();
        assert_eq!(find(".spec.replicas"), Some(json!(3)));
        assert_eq!(find(".status.conditions[?(@.type==\"Ready\")].status"), Some(json!("True")));
        assert_eq!(find(".status.conditions[?(@.type!=\"Paused\")].status"), Some(json!("True")));
        assert_eq!(find(".status.interfaces[0].ipAddress"), Some(json!("10.0.0.1")));
        assert_eq!(find(".status.interfaces[-1].ipAddress"), Some(json!("10.0.0.2")));
        assert_eq!(find(".status.interfaces[*].ipAddress"), Some(json!("10.0.0.1")));
        assert_eq!(find(".spec['a.b']"), Some(json!("dotted")));
        assert_eq!(find(".status.phase"), None);
        assert_eq!(find(".status.interfaces[5].ipAddress"), None);
        assert_eq!(find("status"), None, "not a JSONPath");
    }

    #[test]
    fn cells_follow_the_column_type() {
        let now = 1_000_000;
        assert_eq!(cell("integer", Some(&json!(2.0)), now), json!(2));
        assert_eq!(cell("integer", Some(&json!("2")), now), Value::Null);
        assert_eq!(cell("number", Some(&json!(2)), now), json!(2.0));
        assert_eq!(cell("boolean", Some(&json!(true)), now), json!(true));
        assert_eq!(cell("string", Some(&json!(7)), now), json!("7"));
        assert_eq!(cell("string", Some(&json!({"a": 1})), now), json!("{\"a\":1}"));
        assert_eq!(cell("string", Some(&Value::Null), now), Value::Null);
        assert_eq!(cell("string", None, now), Value::Null);
        let created = crate::object::meta::rfc3339(now - 182);
        assert_eq!(cell("date", Some(&json!(created)), now), json!("3m2s"));
        assert_eq!(cell("date", Some(&json!("yesterday")), now), json!("<invalid>"));
    }

    fn kind(columns: &'static [PrinterColumn]) -> ResourceInfo {
        ResourceInfo {
            group: "",
            kind: "Event",
            list_kind: "EventList",
            plural: "events",
            singular: "event",
            printer_columns: columns,
            events: true,
            generation: false,
            ..ResourceInfo::EXAMPLE
        }
    }

    #[test]
    fn name_comes_first_unless_a_column_is_the_name() {
        const fn column(
            name: &'static str,
            format: &'static str,
            path: &'static str,
        ) -> PrinterColumn {
            PrinterColumn {
                name,
                type_: "string",
                format,
                description: "d",
                priority: 0,
                json_path: path,
                cell: None,
            }
        }
        static CRD: [PrinterColumn; 1] = [column("Reason", "", ".reason")];
        static BUILTIN: [PrinterColumn; 2] =
            [column("Reason", "", ".reason"), column("Name", "name", ".metadata.name")];
        let obj = json!({"metadata": {"name": "e1"}, "reason": "Because"});
        let opts = TableOptions::new("meta.k8s.io/v1", "None", false).unwrap();
        let names = |res: &ResourceInfo| -> Vec<Value> {
            let defs = column_definitions(res);
            defs.as_array().unwrap().iter().map(|d| d["name"].clone()).collect()
        };
        let crd = kind(&CRD);
        assert_eq!(names(&crd), [json!("Name"), json!("Reason")]);
        assert_eq!(row(&crd, &obj, &opts, 0)["cells"], json!(["e1", "Because"]));
        let builtin = kind(&BUILTIN);
        assert_eq!(names(&builtin), [json!("Reason"), json!("Name")]);
        assert_eq!(column_definitions(&builtin)[1]["format"], "name");
        assert_eq!(row(&builtin, &obj, &opts, 0)["cells"], json!(["Because", "e1"]));
    }

    #[test]
    fn computed_cells_as_kubes_printers_make_them() {
        static OBJECT: Cell = Cell::Join(
            "/",
            &[Cell::Lower(&Cell::Path(".involvedObject.kind")), Cell::Path(".involvedObject.name")],
        );
        static COUNT: Cell =
            Cell::FirstOf(&[Cell::Path(".series.count"), Cell::Path(".count"), Cell::Int(1)]);
        static DATA: Cell = Cell::Count(&[Cell::Path(".data"), Cell::Path(".binaryData")]);
        static SOURCE: Cell =
            Cell::Join(", ", &[Cell::Path(".source.component"), Cell::Path(".source.host")]);
        let value = |c: &Cell, o: &Value| compute(c, o, 0).map(Cow::into_owned);
        let event = json!({"involvedObject": {"kind": "VirtualMachine", "name": "vm1"}, "count": 0,
                           "source": {"component": "virt-controller"}});
        assert_eq!(value(&OBJECT, &event), Some(json!("virtualmachine/vm1")));
        assert_eq!(
            value(&OBJECT, &json!({"involvedObject": {"kind": "Node"}})),
            Some(json!("node"))
        );
        assert_eq!(value(&COUNT, &event), Some(json!(1)), "a zero count prints as 1");
        assert_eq!(value(&COUNT, &json!({"count": 4, "series": {"count": 7}})), Some(json!(7)));
        assert_eq!(value(&SOURCE, &event), Some(json!("virt-controller")));
        let cm = json!({"data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}});
        assert_eq!(value(&DATA, &cm), Some(json!(3)));
        assert_eq!(value(&DATA, &json!({})), Some(json!(0)));
        assert_eq!(value(&Cell::FirstOf(&[Cell::Path(".x")]), &json!({})), None);
        static AGE: Cell = Cell::Age(&Cell::FirstOf(&[Cell::Path(".lastTimestamp")]));
        let at = |o: &Value, now| compute(&AGE, o, now).map(Cow::into_owned);
        let seen = json!({"lastTimestamp": "2026-01-01T00:00:00Z"});
        let t = crate::object::meta::parse_rfc3339("2026-01-01T00:00:00Z").unwrap();
        assert_eq!(at(&seen, t + 182), Some(json!("3m2s")));
        assert_eq!(at(&json!({}), t), Some(json!("<unknown>")), "translateTimestampSince");
        assert_eq!(at(&json!({"lastTimestamp": "soon"}), t), Some(json!("<invalid>")));
    }
}
