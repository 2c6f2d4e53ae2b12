//! Sets of field paths, as structured-merge-diff keeps them (`fieldpath.Set`), and their wire
//! form `FieldsV1`.
//!
//! A path is a list of elements: a map field (`f:name`), a list item known by its keys
//! (`k:{"name":"x"}`), a set item known by its value (`v:"x"`) or, for lists without keys, by
//! its index (`i:0`). A set is a trie: each level holds the elements that are themselves members
//! and the children that hold deeper members. In `FieldsV1` a member with no children is `{}`; a
//! member that also has children carries `".": {}` among them.

use std::cmp::Ordering;
use std::collections::btree_map::Entry;
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
            PathElement::Field(name) => {
                let mut key = String::with_capacity(name.len() + 2);
                key.push_str("f:");
                key.push_str(name);
                key
            }
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

    #[cfg(test)]
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

    #[cfg(test)]
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

    /// Adds `pe` at this level.
    pub(crate) fn add_member(&mut self, pe: PathElement) {
        self.members.insert(pe);
    }

    /// Adds `below` under `pe` at this level (nothing when it is empty).
    pub(crate) fn add_child(&mut self, pe: PathElement, below: FieldSet) {
        if below.is_empty() {
            return;
        }
        match self.children.entry(pe) {
            Entry::Vacant(slot) => {
                slot.insert(below);
            }
            Entry::Occupied(mut slot) => slot.get_mut().union_with(below),
        }
    }

    /// Adds the paths of `other`, in place: the cost follows `other`'s size, not `self`'s.
    pub fn union_with(&mut self, other: FieldSet) {
        if self.is_empty() {
            *self = other;
            return;
        }
        self.members.extend(other.members);
        for (pe, c) in other.children {
            self.add_child(pe, c);
        }
    }

    /// Takes away the paths of `other` (exact paths, as [`FieldSet::difference`]), in place;
    /// whether any went.
    pub fn subtract(&mut self, other: &FieldSet) -> bool {
        let mut gone = false;
        for m in &other.members {
            gone |= self.members.remove(m);
        }
        for (pe, o) in &other.children {
            if let Some(c) = self.children.get_mut(pe) {
                gone |= c.subtract(o);
                if c.is_empty() {
                    self.children.remove(pe);
                }
            }
        }
        gone
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
        // Members and children are both sorted: merge them, so that each element comes once,
        // in order, knowing whether it is a member.
        let mut members = self.members.iter().peekable();
        let mut children = self.children.iter().peekable();
        loop {
            let (pe, value) = match (members.peek(), children.peek()) {
                (None, None) => break,
                (Some(m), Some((c, _))) if m < c => (members.next().expect("peeked"), Map::new()),
                (Some(_), None) => (members.next().expect("peeked"), Map::new()),
                (Some(m), Some((c, _))) if m == c => {
                    members.next();
                    let (pe, child) = children.next().expect("peeked");
                    (pe, child.emit(true))
                }
                _ => {
                    let (pe, child) = children.next().expect("peeked");
                    (pe, child.emit(false))
                }
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
            let child = FieldSet::from_fields_v1(value)?;
            if inner.is_empty() || inner.contains_key(".") {
                if child.is_empty() {
                    s.members.insert(pe);
                    continue;
                }
                s.members.insert(pe.clone());
            }
            if !child.is_empty() {
                s.children.insert(pe, child);
            }
        }
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(n: &str) -> PathElement {
        PathElement::field(n)
    }

    #[test]
    fn fields_v1_round_trips_with_self_markers() {
        let wire = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:name": {}}},
                       "f:tags": {"v:\"a\"": {}}}
        });
        let set = FieldSet::from_fields_v1(&wire).unwrap();
        assert!(set.has(&[f("metadata"), f("labels")]));
        assert!(!set.has(&[f("metadata")]));
        assert!(set.has(&[f("spec"), f("tags"), PathElement::Value(OrdValue(json!("a")))]));
        assert_eq!(set.to_fields_v1(), wire);
        let paths: Vec<String> = set.paths().iter().map(|p| path_string(p)).collect();
        assert_eq!(
            paths,
            [
                ".metadata.labels",
                ".metadata.labels.app",
                ".spec.ports[port=80,protocol=\"TCP\"]",
                ".spec.ports[port=80,protocol=\"TCP\"].name",
                ".spec.tags[=\"a\"]",
            ]
        );
    }

    #[test]
    fn set_algebra() {
        let a = FieldSet::from_paths([
            &[f("spec"), f("a")][..],
            &[f("spec"), f("b")][..],
            &[f("spec")][..],
        ]);
        let b = FieldSet::from_paths([&[f("spec"), f("b")][..], &[f("status")][..]]);
        assert_eq!(
            a.difference(&b),
            FieldSet::from_paths([&[f("spec"), f("a")][..], &[f("spec")][..]])
        );
        assert_eq!(a.intersection(&b), FieldSet::from_paths([&[f("spec"), f("b")][..]]));
        assert!(a.union(&b).has(&[f("status")]));
        let spec = FieldSet::from_paths([&[f("spec")][..]]);
        assert!(a.recursive_difference(&spec).is_empty());
        assert!(a.difference(&spec).has(&[f("spec"), f("a")]));
        assert!(a.has_at_or_below(&[f("spec")]) && !b.has_at_or_below(&[f("spec"), f("a")]));
    }

    #[test]
    fn bad_fields_v1_is_an_error() {
        assert!(FieldSet::from_fields_v1(&json!({"x:y": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
        assert!(FieldSet::from_fields_v1(&json!([])).is_err());
    }
}
