#![allow(dead_code, clippy::all)]
//! Sets of field paths, as structured-merge-diff keeps them (`fieldpath.Set`), and their wire
//! form `FieldsV1`.
//!
//! A path is a list of elements: a map field (`f:name`), a list item known by its keys
//! (`k:{"name":"x"}`), a set item known by its value (`v:"x"`) or, for lists without keys, by
//! its index (`i:0`). A set is a trie: each level holds the elements that are themselves members
//! and the children that hold deeper members. In `FieldsV1` a member with no children is `{}`; a
//! member that also has children carries `".": {}` among them.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

/// A JSON value with a total order, so that keyed and set items can be sorted as
/// structured-merge-diff sorts them (by type, then by value).
#[derive(Clone, Debug)]
pub struct OrdValue(pub Value);

fn rank(v: &Value) -> u8 {
    match v {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    }
}

fn compare_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Number(x), Value::Number(y)) => {
            let (fx, fy) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
            // Ties (1 and 1.0) fall back to the text so that the order agrees with equality.
            fx.partial_cmp(&fy)
                .unwrap_or(Ordering::Equal)
                .then_with(|| x.to_string().cmp(&y.to_string()))
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y) {
                let c = compare_values(p, q);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(_), Value::Object(_)) => a.to_string().cmp(&b.to_string()),
        _ => rank(a).cmp(&rank(b)),
    }
}

impl PartialEq for OrdValue {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for OrdValue {}
impl PartialOrd for OrdValue {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for OrdValue {
    fn cmp(&self, other: &Self) -> Ordering {
        compare_values(&self.0, &other.0)
    }
}

/// One step of a path. The variant order is structured-merge-diff's: fields, keys, values,
/// indexes.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PathElement {
    Field(String),
    /// A list-map item: its key fields and values, sorted by field name.
    Key(Vec<(String, OrdValue)>),
    /// A set item.
    Value(OrdValue),
    /// An item of a list that has no keys.
    Index(usize),
}

impl PathElement {
    pub fn field(name: &str) -> PathElement {
        PathElement::Field(name.to_string())
    }

    /// The `FieldsV1` key: `f:name`, `k:{...}`, `v:...`, `i:N`.
    pub fn to_fields_v1_key(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Key(fields) => {
                let obj: Map<String, Value> =
                    fields.iter().map(|(k, v)| (k.clone(), v.0.clone())).collect();
                format!("k:{}", Value::Object(obj))
            }
            PathElement::Value(v) => format!("v:{}", v.0),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    pub fn from_fields_v1_key(key: &str) -> Result<PathElement, String> {
        let (kind, rest) = key.split_at(key.find(':').ok_or_else(|| bad_key(key))? + 1);
        match kind {
            "f:" => Ok(PathElement::Field(rest.to_string())),
            "k:" => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(m)) if !m.is_empty() => {
                    let mut fields: Vec<(String, OrdValue)> =
                        m.into_iter().map(|(k, v)| (k, OrdValue(v))).collect();
                    fields.sort_by(|a, b| a.0.cmp(&b.0));
                    Ok(PathElement::Key(fields))
                }
                _ => Err(bad_key(key)),
            },
            "v:" => serde_json::from_str(rest)
                .map(|v| PathElement::Value(OrdValue(v)))
                .map_err(|_| bad_key(key)),
            "i:" => rest.parse().map(PathElement::Index).map_err(|_| bad_key(key)),
            _ => Err(bad_key(key)),
        }
    }
}

fn bad_key(key: &str) -> String {
    format!("unknown path element {key:?}")
}

/// Paths print as structured-merge-diff prints them in conflict messages:
/// `.spec.template`, `[name="x",port=80]`, `[="a"]`, `[3]`.
impl fmt::Display for PathElement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathElement::Field(name) => write!(f, ".{name}"),
            PathElement::Key(fields) => {
                let parts: Vec<String> =
                    fields.iter().map(|(k, v)| format!("{k}={}", v.0)).collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={}]", v.0),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

pub type Path = Vec<PathElement>;

pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(PathElement::to_string).collect()
}

/// A set of paths, kept as a trie.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    /// Never holds an empty set.
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    pub fn new() -> FieldSet {
        FieldSet::default()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    pub fn from_paths<'a>(paths: impl IntoIterator<Item = &'a [PathElement]>) -> FieldSet {
        let mut s = FieldSet::new();
        for p in paths {
            s.insert(p);
        }
        s
    }

    /// Adds `path`; the empty path (the whole object) is never a member.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// Whether `path` or anything below it is a member.
    pub fn has_at_or_below(&self, path: &[PathElement]) -> bool {
        match path {
            [] => !self.is_empty(),
            [last] => self.members.contains(last) || self.children.contains_key(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has_at_or_below(rest)),
        }
    }

    /// Whether `pe` at this level is a member.
    pub fn has_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    /// The members below `pe`, relative to it.
    pub fn child(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.children.get(pe)
    }

    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, c) in &other.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(c),
                None => c.clone(),
            };
            out.children.insert(pe.clone(), merged);
        }
        out
    }

    /// The paths of `self` that are not paths of `other` (exact paths: a member of `other`
    /// does not take away what lies below it).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, c) in &self.children {
            let d = match other.children.get(pe) {
                Some(o) => c.difference(o),
                None => c.clone(),
            };
            if !d.is_empty() {
                children.insert(pe.clone(), d);
            }
        }
        FieldSet { members, children }
    }

    /// The paths of `self` that are neither members of `other` nor below one.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, c) in &self.children {
            if other.members.contains(pe) {
                continue;
            }
            let d = match other.children.get(pe) {
                Some(o) => c.recursive_difference(o),
                None => c.clone(),
            };
            if !d.is_empty() {
                children.insert(pe.clone(), d);
            }
        }
        FieldSet { members, children }
    }

    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, c) in &self.children {
            if let Some(o) = other.children.get(pe) {
                let i = c.intersection(o);
                if !i.is_empty() {
                    children.insert(pe.clone(), i);
                }
            }
        }
        FieldSet { members, children }
    }

    /// Every member path, in structured-merge-diff's iteration order: at each level the members
    /// first, then the children, each sorted.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        for m in &self.members {
            prefix.push(m.clone());
            out.push(prefix.clone());
            prefix.pop();
        }
        for (pe, c) in &self.children {
            prefix.push(pe.clone());
            c.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The `FieldsV1` object.
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.emit(false))
    }

    fn emit(&self, include_self: bool) -> Map<String, Value> {
        let mut out = Map::new();
        if include_self {
            out.insert(".".into(), Value::Object(Map::new()));
        }
        let elements: BTreeSet<&PathElement> =
            self.members.iter().chain(self.children.keys()).collect();
        for pe in elements {
            let value = match self.children.get(pe) {
                Some(c) => c.emit(self.members.contains(pe)),
                None => Map::new(),
            };
            out.insert(pe.to_fields_v1_key(), Value::Object(value));
        }
        out
    }

    /// Parses a `FieldsV1` object.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, String> {
        let obj = v.as_object().ok_or("fieldsV1 must be an object")?;
        let mut s = FieldSet::new();
        for (key, value) in obj {
            if key == "." {
                continue;
            }
            let pe = PathElement::from_fields_v1_key(key)?;
            let inner = value.as_object().ok_or_else(|| format!("{key}: must be an object"))?;
            if inner.is_empty() || inner.contains_key(".") {
                s.members.insert(pe.clone());
            }
            let child = FieldSet::from_fields_v1(value)?;
            if !child.is_empty() {
                s.children.insert(pe, child);
            }
        }
        Ok(s)
    }
}
