//! Objects read through their schema, as structured-merge-diff reads them: which maps and lists
//! are merged item by item and which are atomic, how list items are named, and the four walks
//! field ownership needs (the set of fields a value sets, comparing two values, merging an
//! applied configuration into a live object, and removing fields).
//!
//! The schema is the served OpenAPI v2 document, parsed once. A kind's definition is the one whose
//! `x-kubernetes-group-version-kind` names it. Below a definition, `$ref`s are followed lazily, so
//! recursive definitions cost nothing. Where the schema says nothing (no definition, an open
//! object with `x-kubernetes-preserve-unknown-fields`, a value of another type than declared) the
//! shape is deduced from the value as kube does for such fields: maps merge key by key and lists
//! are atomic.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::fieldset::{FieldSet, OrdValue, Path, PathElement};
use crate::object::schema::{self, Node, NodeId};
use crate::resource::ResourceInfo;

/// Where a value sits in the schema; `None` means nothing is known and the shape is deduced.
#[derive(Clone, Copy, Debug)]
pub struct Type {
    /// A node of the compiled schema (`schema::Node`): the walks ask a type several questions
    /// per value, and the compiled node answers each without a lookup in the document.
    node: Option<NodeId>,
}

/// How a value is merged.
#[derive(Clone, Debug, PartialEq)]
pub enum Shape {
    Scalar,
    /// A map or an object; an atomic one is replaced whole.
    Map {
        atomic: bool,
    },
    List(ListKind),
}

#[derive(Clone, Debug, PartialEq)]
pub enum ListKind {
    Atomic,
    /// `x-kubernetes-list-type: set`: items are named by their value.
    Set,
    /// `x-kubernetes-list-type: map`: items are named by their key fields.
    Map(Vec<String>),
}

impl Type {
    /// The type of a whole object of `res` in its version.
    pub fn of(res: &ResourceInfo) -> Type {
        Type { node: schema::kind_node(res) }
    }

    pub fn deduced() -> Type {
        Type { node: None }
    }

    fn node(self) -> Option<&'static Node> {
        self.node.map(|id| schema::node(Some(id)))
    }

    /// How `v` is merged at this place. The value decides between map, list and scalar; the
    /// schema decides whether maps and lists are atomic and how list items are named.
    pub fn shape(self, v: &Value) -> Shape {
        let node = self.node();
        match v {
            Value::Object(_) => Shape::Map { atomic: node.is_some_and(|n| n.map_atomic) },
            Value::Array(_) => {
                let Some(node) = node.filter(|n| n.array) else {
                    return Shape::List(ListKind::Atomic);
                };
                match node.list_type {
                    Some("set") => Shape::List(ListKind::Set),
                    Some("map") if !node.list_map_keys.is_empty() => {
                        Shape::List(ListKind::Map(node.list_map_keys.clone()))
                    }
                    _ => Shape::List(ListKind::Atomic),
                }
            }
            _ => Shape::Scalar,
        }
    }

    /// The type of map entry `key`, and whether it is a declared (named) field. Entries of
    /// free-form maps are not named: structured-merge-diff makes each of them a member of the
    /// field set even when it has children.
    pub fn field(self, key: &str) -> (Type, bool) {
        let Some(node) = self.node() else { return (Type::deduced(), false) };
        match node.property(key) {
            Some(prop) => (Type { node: prop }, true),
            None => (Type { node: node.additional.flatten() }, false),
        }
    }

    pub fn items(self) -> Type {
        Type { node: self.node().and_then(|n| n.items.flatten()) }
    }
}

/// The name of list item `index`: its value in a set, its keys in a list-map. An item missing
/// every key falls back to its index (kube rejects such items; we keep them addressable).
pub fn item_element(kind: &ListKind, index: usize, item: &Value) -> PathElement {
    match kind {
        ListKind::Set => PathElement::Value(OrdValue(item.clone())),
        ListKind::Map(keys) => {
            let mut fields: Vec<(String, OrdValue)> = keys
                .iter()
                .filter_map(|k| item.get(k).map(|v| (k.clone(), OrdValue(v.clone()))))
                .collect();
            if fields.is_empty() {
                return PathElement::Index(index);
            }
            fields.sort_by(|a, b| a.0.cmp(&b.0));
            PathElement::Key(fields)
        }
        ListKind::Atomic => PathElement::Index(index),
    }
}

/// The items of an associative list by name, in order, first occurrence winning.
fn index_items<'a>(kind: &ListKind, items: &'a [Value]) -> Vec<(PathElement, &'a Value)> {
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let pe = item_element(kind, i, item);
        if seen.insert(pe.clone()) {
            out.push((pe, item));
        }
    }
    out
}

fn same_kind(a: &Shape, b: &Shape) -> bool {
    std::mem::discriminant(a) == std::mem::discriminant(b)
}

/// The fields a value sets (structured-merge-diff's `ToFieldSet`): scalars, atomic maps and
/// lists, list items and free-form map entries are members; declared fields holding a map are
/// not, only what is below them.
pub fn to_field_set(v: &Value, ty: Type) -> FieldSet {
    let mut set = FieldSet::new();
    walk_field_set(v, ty, &mut Vec::new(), &mut set);
    set
}

fn walk_field_set(v: &Value, ty: Type, path: &mut Path, set: &mut FieldSet) {
    match ty.shape(v) {
        Shape::Scalar | Shape::Map { atomic: true } | Shape::List(ListKind::Atomic) => {
            set.insert(path)
        }
        Shape::List(kind) => {
            for (pe, item) in index_items(&kind, v.as_array().map(Vec::as_slice).unwrap_or(&[])) {
                path.push(pe);
                walk_field_set(item, ty.items(), path, set);
                set.insert(path);
                path.pop();
            }
        }
        Shape::Map { atomic: false } => {
            for (k, val) in v.as_object().into_iter().flatten() {
                let (fty, named) = ty.field(k);
                path.push(PathElement::Field(k.clone()));
                walk_field_set(val, fty, path, set);
                if !named {
                    set.insert(path);
                }
                path.pop();
            }
        }
    }
}

/// What changed between two values (structured-merge-diff's `Comparison`).
#[derive(Debug, Default)]
pub struct Comparison {
    pub added: FieldSet,
    pub modified: FieldSet,
    pub removed: FieldSet,
}

impl Comparison {
    pub fn is_same(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    /// Leaves out the paths in `ignored` and below them.
    pub fn without(self, ignored: &FieldSet) -> Comparison {
        Comparison {
            added: self.added.recursive_difference(ignored),
            modified: self.modified.recursive_difference(ignored),
            removed: self.removed.recursive_difference(ignored),
        }
    }
}

pub fn compare(old: &Value, new: &Value, ty: Type) -> Comparison {
    let mut c = Comparison::default();
    diff(Some(old), Some(new), ty, Level::Other, &mut c);
    c
}

/// [`compare`] of two whole objects as if neither had `metadata.managedFields`, without copying
/// them to take it out.
pub fn compare_ignoring_managed_fields(old: &Value, new: &Value, ty: Type) -> Comparison {
    let mut c = Comparison::default();
    diff(Some(old), Some(new), ty, Level::Root, &mut c);
    c
}

/// Where a compared value sits, for [`compare_ignoring_managed_fields`]: in the `metadata` of
/// the root, `managedFields` is as good as absent.
#[derive(Clone, Copy, PartialEq)]
enum Level {
    Root,
    Metadata,
    Other,
}

impl Level {
    fn below(self, key: &str) -> Level {
        match self {
            Level::Root if key == "metadata" => Level::Metadata,
            _ => Level::Other,
        }
    }

    fn skips(self, key: &str) -> bool {
        self == Level::Metadata && key == "managedFields"
    }

    /// The entries of `m` that are not skipped.
    fn entries(self, m: Option<&Map<String, Value>>) -> impl Iterator<Item = (&String, &Value)> {
        m.into_iter().flatten().filter(move |(k, _)| !self.skips(k))
    }

    /// `a == b` once the skipped entries are gone from both.
    fn same(self, a: &Value, b: &Value) -> bool {
        match (self, a, b) {
            (Level::Other, ..) => a == b,
            (_, Value::Object(x), Value::Object(y)) => {
                let count = |m: &Map<String, Value>| m.keys().filter(|k| !self.skips(k)).count();
                count(x) == count(y)
                    && x.iter()
                        .filter(|(k, _)| !self.skips(k))
                        .all(|(k, v)| y.get(k).is_some_and(|w| self.below(k).same(v, w)))
            }
            _ => a == b,
        }
    }
}

/// How one place changed as a whole.
#[derive(Clone, Copy)]
enum Change {
    Added,
    Modified,
    Removed,
}

impl Comparison {
    /// Records, at this level, how the place named `pe` changed and what changed below it.
    fn adopt(&mut self, pe: PathElement, change: Option<Change>, below: Comparison) {
        let Comparison { added, modified, removed } = below;
        let mut uses = usize::from(change.is_some())
            + [&added, &modified, &removed].iter().filter(|s| !s.is_empty()).count();
        // `pe` goes to each set that needs it: cloned for all but the last, moved to that one.
        let mut pe = Some(pe);
        let mut name = || {
            uses -= 1;
            if uses == 0 {
                pe.take().expect("taken last")
            } else {
                pe.clone().expect("not taken yet")
            }
        };
        for (set, sub) in
            [(&mut self.added, added), (&mut self.modified, modified), (&mut self.removed, removed)]
        {
            if !sub.is_empty() {
                set.add_child(name(), sub);
            }
        }
        match change {
            Some(Change::Added) => self.added.add_member(name()),
            Some(Change::Modified) => self.modified.add_member(name()),
            Some(Change::Removed) => self.removed.add_member(name()),
            None => {}
        }
    }
}

/// Compares `l` and `r` at one place: returns how the place itself changed and puts what
/// changed below it, relative to it, in `below`. Each level builds its own sets and hands them
/// up, so no path is ever walked from the root.
fn diff(
    l: Option<&Value>,
    r: Option<&Value>,
    ty: Type,
    level: Level,
    below: &mut Comparison,
) -> Option<Change> {
    // Most of an object is as it was (a status write leaves metadata and spec alone): an equal
    // subtree has nothing below that changed, found without building a set.
    if let (Some(a), Some(b)) = (l, r) {
        if a == b {
            return None;
        }
    }
    let leaf = || match (l, r) {
        (None, Some(_)) => Some(Change::Added),
        (Some(_), None) => Some(Change::Removed),
        (Some(a), Some(b)) if !level.same(a, b) => Some(Change::Modified),
        _ => None,
    };
    let shape = match (l.map(|v| ty.shape(v)), r.map(|v| ty.shape(v))) {
        (Some(a), Some(b)) if same_kind(&a, &b) => b,
        (Some(a), None) => a,
        (None, Some(b)) => b,
        _ => return leaf(),
    };
    match shape {
        Shape::Scalar | Shape::Map { atomic: true } | Shape::List(ListKind::Atomic) => {
            return leaf();
        }
        Shape::List(kind) => {
            let empty: &[Value] = &[];
            let la = l.and_then(Value::as_array).map(Vec::as_slice).unwrap_or(empty);
            let ra = r.and_then(Value::as_array).map(Vec::as_slice).unwrap_or(empty);
            // Two empty lists compare as leaves, which keeps null and [] apart.
            if la.is_empty() && ra.is_empty() {
                return leaf();
            }
            let item_ty = ty.items();
            let mut lhs = named_items(&kind, la);
            for (pe, rv) in named_items(&kind, ra) {
                let lv = lhs.remove(&pe);
                let mut sub = Comparison::default();
                let change = diff(lv, Some(rv), item_ty, Level::Other, &mut sub);
                below.adopt(pe, change, sub);
            }
            for (pe, lv) in lhs {
                let mut sub = Comparison::default();
                let change = diff(Some(lv), None, item_ty, Level::Other, &mut sub);
                below.adopt(pe, change, sub);
            }
        }
        Shape::Map { atomic: false } => {
            let lm = l.and_then(Value::as_object);
            let rm = r.and_then(Value::as_object);
            if level.entries(lm).next().is_none() && level.entries(rm).next().is_none() {
                return leaf();
            }
            let mut field = |k: &String, lv: Option<&Value>, rv: Option<&Value>| {
                let (fty, _) = ty.field(k);
                let mut sub = Comparison::default();
                let change = diff(lv, rv, fty, level.below(k), &mut sub);
                if change.is_some() || !sub.is_same() {
                    below.adopt(PathElement::Field(k.clone()), change, sub);
                }
            };
            for (k, rv) in level.entries(rm) {
                field(k, lm.and_then(|m| m.get(k)), Some(rv));
            }
            for (k, lv) in
                level.entries(lm).filter(|(k, _)| !rm.is_some_and(|m| m.contains_key(*k)))
            {
                field(k, Some(lv), None);
            }
        }
    }
    // A map or list that appears or disappears as a whole is itself added or removed, besides
    // what is in it.
    match (l, r) {
        (None, Some(_)) => Some(Change::Added),
        (Some(_), None) => Some(Change::Removed),
        _ => None,
    }
}

/// The `FieldsV1` of what [`compare_ignoring_managed_fields`] finds added from an empty object
/// to `new`, less the stripped metadata fields (`stripped_fields`), as `FieldSet::to_fields_v1`
/// emits it: one walk of `new`, the same keys in the same order. A member with children gets
/// `"."`; a map or associative list with no entries is a member only.
pub fn created_fields_v1(new: &Value, ty: Type) -> Map<String, Value> {
    let Some(root) = new.as_object() else { return Map::new() };
    let mut out = Map::new();
    for (k, v) in sorted_entries(root, false) {
        let (fty, _) = ty.field(k);
        // Identity is stripped; `metadata` is a member of nobody, but what is in it is.
        let member = !matches!(k.as_str(), "apiVersion" | "kind" | "metadata");
        let children = added_below(v, fty, k == "metadata");
        put_added(&mut out, field_key(k), member, children);
    }
    out
}

/// What is below an added value, in `FieldsV1`; `metadata`: it is the root's metadata, whose
/// managedFields count as absent and whose server-set fields are stripped.
fn added_below(v: &Value, ty: Type, metadata: bool) -> Map<String, Value> {
    let mut out = Map::new();
    match ty.shape(v) {
        Shape::Scalar | Shape::Map { atomic: true } | Shape::List(ListKind::Atomic) => {}
        Shape::List(kind) => {
            let items = v.as_array().map(Vec::as_slice).unwrap_or(&[]);
            let item_ty = ty.items();
            for (pe, item) in named_items(&kind, items) {
                put_added(&mut out, pe.to_fields_v1_key(), true, added_below(item, item_ty, false));
            }
        }
        Shape::Map { atomic: false } => {
            let Some(m) = v.as_object() else { return out };
            for (k, val) in sorted_entries(m, metadata) {
                let (fty, _) = ty.field(k);
                let member = !(metadata && STRIPPED_METADATA.contains(&k.as_str()));
                put_added(&mut out, field_key(k), member, added_below(val, fty, false));
            }
        }
    }
    out
}

/// `f:<name>`, without `format!`'s machinery: this runs for every field of every create.
fn field_key(name: &str) -> String {
    let mut key = String::with_capacity(name.len() + 2);
    key.push_str("f:");
    key.push_str(name);
    key
}

/// The metadata fields no manager owns (stripmeta.go), besides the root's `apiVersion`, `kind` and
/// `metadata` itself (`stripped_fields`).
pub const STRIPPED_METADATA: [&str; 9] = [
    "name",
    "namespace",
    "creationTimestamp",
    "selfLink",
    "uid",
    "clusterName",
    "generation",
    "managedFields",
    "resourceVersion",
];

/// A map's entries in key order (a field set's order: serde_json's `Map` is a `BTreeMap` in
/// this build, `validation`'s `maps_iterate_in_key_order` holds it), without managedFields in
/// `metadata`.
fn sorted_entries(
    m: &Map<String, Value>,
    metadata: bool,
) -> impl Iterator<Item = (&String, &Value)> {
    m.iter().filter(move |(k, _)| !(metadata && k.as_str() == "managedFields"))
}

fn put_added(
    out: &mut Map<String, Value>,
    key: String,
    member: bool,
    mut children: Map<String, Value>,
) {
    if children.is_empty() {
        if member {
            out.insert(key, Value::Object(Map::new()));
        }
        return;
    }
    if member {
        // `.` sorts before every `f:`, `k:`, `v:` and `i:` key: the map's order is kube's.
        children.insert(".".into(), Value::Object(Map::new()));
    }
    out.insert(key, Value::Object(children));
}

/// The items of an associative list by name, first occurrence winning.
fn named_items<'a>(kind: &ListKind, items: &'a [Value]) -> BTreeMap<PathElement, &'a Value> {
    let mut out = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        out.entry(item_element(kind, i, item)).or_insert(item);
    }
    out
}

/// Merges an applied configuration `r` into the live object `l`: the configuration wins on
/// scalars and atomic values, maps merge key by key, associative lists item by item.
pub fn merge(l: &Value, r: &Value, ty: Type) -> Value {
    let (ls, rs) = (ty.shape(l), ty.shape(r));
    if !same_kind(&ls, &rs) {
        return r.clone();
    }
    match rs {
        Shape::Scalar | Shape::Map { atomic: true } | Shape::List(ListKind::Atomic) => r.clone(),
        Shape::List(kind) => {
            let empty: &[Value] = &[];
            let la = l.as_array().map(Vec::as_slice).unwrap_or(empty);
            let ra = r.as_array().map(Vec::as_slice).unwrap_or(empty);
            Value::Array(merge_items(&kind, la, ra, ty.items()))
        }
        Shape::Map { atomic: false } => {
            let (Some(lm), Some(rm)) = (l.as_object(), r.as_object()) else { return r.clone() };
            let mut out = lm.clone();
            for (k, rv) in rm {
                let merged = match lm.get(k) {
                    Some(lv) => merge(lv, rv, ty.field(k).0),
                    None => rv.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Object(out)
        }
    }
}

/// The items of two associative lists merged, in structured-merge-diff's order: items of the
/// configuration in its order, live-only items kept where they were relative to shared ones.
fn merge_items(kind: &ListKind, la: &[Value], ra: &[Value], item_ty: Type) -> Vec<Value> {
    let lhs = index_items(kind, la);
    let rhs = index_items(kind, ra);
    let lmap: BTreeMap<&PathElement, &Value> = lhs.iter().map(|(p, v)| (p, *v)).collect();
    let rmap: BTreeMap<&PathElement, &Value> = rhs.iter().map(|(p, v)| (p, *v)).collect();
    let mut shared = rhs.iter().map(|(p, _)| p).filter(|p| lmap.contains_key(p));
    let mut next_shared = shared.next();
    let item = |pe: &PathElement| -> Value {
        match (lmap.get(pe), rmap.get(pe)) {
            (Some(l), Some(r)) => merge(l, r, item_ty),
            (Some(l), None) => (*l).clone(),
            (None, Some(r)) => (*r).clone(),
            (None, None) => Value::Null,
        }
    };
    let mut out = Vec::with_capacity(lhs.len().max(rhs.len()));
    let (mut li, mut ri) = (0, 0);
    while li < lhs.len() || ri < rhs.len() {
        if li < lhs.len() && ri < rhs.len() {
            let pe = &lhs[li].0;
            if *pe == rhs[ri].0 {
                out.push(item(pe));
                li += 1;
                ri += 1;
                next_shared = shared.next();
                continue;
            }
            // A shared item that comes later in the configuration: take it then, not now.
            if rmap.contains_key(pe) && next_shared.is_some_and(|n| n != pe) {
                li += 1;
                continue;
            }
        }
        if li < lhs.len() && !rmap.contains_key(&lhs[li].0) {
            out.push(item(&lhs[li].0));
            li += 1;
            continue;
        }
        if ri < rhs.len() {
            let pe = &rhs[ri].0;
            out.push(item(pe));
            ri += 1;
            if next_shared == Some(pe) {
                next_shared = shared.next();
            }
        } else {
            // Only shared live items remain, all already taken from the configuration side.
            li += 1;
        }
    }
    out
}

/// Removes the members of `set` (and all below them) from `v`. A map emptied by the removal
/// goes too, as structured-merge-diff leaves nothing of it.
pub fn remove(v: &mut Value, set: &FieldSet, ty: Type) {
    match ty.shape(v) {
        Shape::Map { atomic: false } => {
            let Some(m) = v.as_object_mut() else { return };
            let keys: Vec<String> = m.keys().cloned().collect();
            for k in keys {
                let pe = PathElement::Field(k.clone());
                if set.has_member(&pe) {
                    m.remove(&k);
                } else if let Some(sub) = set.child(&pe) {
                    let val = m.get_mut(&k).expect("key listed above");
                    let was_empty = is_empty_container(val);
                    remove(val, sub, ty.field(&k).0);
                    if !was_empty && is_empty_container(val) && val.is_object() {
                        m.remove(&k);
                    }
                }
            }
        }
        Shape::List(kind) if kind != ListKind::Atomic => {
            let item_ty = ty.items();
            let Some(items) = v.as_array_mut() else { return };
            let old = std::mem::take(items);
            for (i, mut item) in old.into_iter().enumerate() {
                let pe = item_element(&kind, i, &item);
                if set.has_member(&pe) {
                    continue;
                }
                if let Some(sub) = set.child(&pe) {
                    remove(&mut item, sub, item_ty);
                }
                items.push(item);
            }
        }
        _ => {}
    }
}

fn is_empty_container(v: &Value) -> bool {
    match v {
        Value::Object(m) => m.is_empty(),
        Value::Array(a) => a.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::object::managed_fields::fieldset::path_string;
    use serde_json::json;

    fn vm() -> Type {
        let res = crate::generated::RESOURCES
            .iter()
            .find(|r| r.kind == "VirtualMachine" && r.version == "v1")
            .expect("VirtualMachine v1 is served");
        Type::of(res)
    }

    fn paths(s: &FieldSet) -> Vec<String> {
        s.paths().iter().map(|p| path_string(p)).collect()
    }

    #[test]
    fn field_sets_follow_the_schema() {
        let obj = json!({
            "metadata": {"labels": {"a": "1"}, "finalizers": ["x", "y"],
                         "ownerReferences": [{"uid": "u1", "name": "o"}]},
            "spec": {"running": true, "template": {"spec": {"n": 1}}, "list": [1, 2]}
        });
        let s = to_field_set(&obj, vm());
        assert_eq!(
            paths(&s),
            [
                ".metadata.finalizers[=\"x\"]",
                ".metadata.finalizers[=\"y\"]",
                ".metadata.labels.a",
                // OwnerReference is an atomic struct: the item is owned whole.
                ".metadata.ownerReferences[uid=\"u1\"]",
                ".spec.list",
                ".spec.running",
                // spec.template and its spec are declared structs: only their leaves are owned.
                ".spec.template.spec.n",
            ]
        );
    }

    #[test]
    fn compare_reports_containers_and_leaves() {
        let old = json!({"spec": {"a": 1, "gone": {"x": 1}}});
        let new = json!({"spec": {"a": 2, "new": {"y": 1}}, "status": {}});
        let c = compare(&old, &new, Type::deduced());
        assert_eq!(paths(&c.modified), [".spec.a"]);
        assert_eq!(paths(&c.added), [".status", ".spec.new", ".spec.new.y"]);
        assert_eq!(paths(&c.removed), [".spec.gone", ".spec.gone.x"]);
    }

    #[test]
    fn merge_unites_maps_sets_and_keyed_lists() {
        let live = json!({"metadata": {"finalizers": ["a", "b"], "labels": {"x": "1"},
                          "ownerReferences": [{"uid": "1", "name": "one"}, {"uid": "2", "name": "two"}]},
                          "spec": {"list": [1, 2], "keep": true}});
        let config = json!({"metadata": {"finalizers": ["c", "a"], "labels": {"y": "2"},
                            "ownerReferences": [{"uid": "2", "name": "TWO"}, {"uid": "3", "name": "three"}]},
                            "spec": {"list": [3]}});
        let merged = merge(&live, &config, vm());
        assert_eq!(merged["metadata"]["finalizers"], json!(["c", "a", "b"]));
        assert_eq!(merged["metadata"]["labels"], json!({"x": "1", "y": "2"}));
        assert_eq!(
            merged["metadata"]["ownerReferences"],
            json!([{"uid": "1", "name": "one"}, {"uid": "2", "name": "TWO"}, {"uid": "3", "name": "three"}])
        );
        assert_eq!(merged["spec"], json!({"list": [3], "keep": true}));
    }

    #[test]
    fn remove_drops_members_and_emptied_maps() {
        let mut v =
            json!({"metadata": {"finalizers": ["a", "b"]}, "spec": {"a": {"b": 1}, "c": 2}});
        let set = to_field_set(
            &json!({"metadata": {"finalizers": ["a"]}, "spec": {"a": {"b": 1}}}),
            vm(),
        );
        remove(&mut v, &set, vm());
        assert_eq!(v, json!({"metadata": {"finalizers": ["b"]}, "spec": {"c": 2}}));
    }
}
