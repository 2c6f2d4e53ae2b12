//! The served OpenAPI document, parsed once, as the schemas everything else reads: validation,
//! field ownership (managed fields), the protobuf decoder, and which paths need credentials.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;

use crate::generated::OPENAPI_V2;
use crate::resource::ResourceInfo;

struct Parsed {
    doc: &'static Value,
    /// `(group, version, kind)` → definition, borrowed from the document.
    by_gvk: HashMap<(&'static str, &'static str, &'static str), &'static Value>,
}

fn parsed() -> &'static Parsed {
    static PARSED: OnceLock<Parsed> = OnceLock::new();
    PARSED.get_or_init(|| {
        // Codegen parsed these very bytes at build time; they cannot fail to parse here. The
        // document lives as long as the process, so lookups borrow from it.
        let doc: &'static Value = Box::leak(Box::new(
            serde_json::from_slice(OPENAPI_V2).expect("the embedded document is JSON"),
        ));
        let mut by_gvk = HashMap::new();
        let defs = doc.get("definitions").and_then(Value::as_object);
        for def in defs.into_iter().flat_map(|d| d.values()) {
            let gvks = def.get("x-kubernetes-group-version-kind").and_then(Value::as_array);
            for gvk in gvks.into_iter().flatten() {
                let part = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or("");
                by_gvk.insert((part("group"), part("version"), part("kind")), def);
            }
        }
        Parsed { doc, by_gvk }
    })
}

/// The whole document.
pub fn document() -> &'static Value {
    parsed().doc
}

/// The definition the document gives a group, version and kind.
pub fn gvk_definition(group: &str, version: &str, kind: &str) -> Option<&'static Value> {
    parsed().by_gvk.get(&(group, version, kind)).copied()
}

/// The definition of `res`'s kind in `res`'s version.
pub fn kind_definition(res: &ResourceInfo) -> Option<&'static Value> {
    gvk_definition(res.group, res.version, res.kind)
}

/// A node of the compiled schema: what the walks over every value of a write (pruning,
/// validation, field ownership) ask of its place in the schema, read once for the whole
/// document instead of per value and per request. `$ref`s and one-element `allOf`s are resolved
/// to node ids, so recursive definitions are cycles of ids and no walk looks a definition up by
/// name. A reference that leads nowhere is an open schema: [`open`], which declares nothing.
#[derive(Debug)]
pub struct Node {
    /// `type`.
    pub ty: Option<&'static str>,
    /// `format: int-or-string`.
    pub int_or_string_format: bool,
    /// `x-virt-proto-type: quantity`.
    pub quantity: bool,
    /// `x-kubernetes-int-or-string: true`.
    pub int_or_string: bool,
    /// `nullable` or `x-nullable`.
    pub nullable: bool,
    /// `enum`.
    pub enum_values: Option<&'static [Value]>,
    /// The names `required` lists.
    pub required: Vec<&'static str>,
    /// `properties` is an object.
    pub has_properties: bool,
    /// The declared properties in key order.
    properties: Vec<Property>,
    /// `additionalProperties` is there, a schema or a boolean.
    pub has_additional: bool,
    /// `additionalProperties`, when it is a schema.
    pub additional: Option<Option<NodeId>>,
    /// `x-kubernetes-preserve-unknown-fields: true` or `additionalProperties: true`.
    pub keeps_unknown: bool,
    /// `items`.
    pub items: Option<Option<NodeId>>,
    /// It declares an array: it has `items`, or `type: array`.
    pub array: bool,
    /// `x-kubernetes-map-type: atomic`.
    pub map_atomic: bool,
    /// `x-kubernetes-list-type`.
    pub list_type: Option<&'static str>,
    /// `x-kubernetes-list-map-keys`.
    pub list_map_keys: Vec<String>,
    /// Defaulting can change a value here: a property with a default or a quantity at or below
    /// it. Most of a kind's schema has neither, and a write walks only the parts that do.
    pub defaults: bool,
}

/// A declared property.
#[derive(Debug)]
pub struct Property {
    pub name: &'static str,
    /// Its node (`None`: a reference that leads nowhere).
    pub node: Option<NodeId>,
    /// What a write sets it to when missing: the property's own `default` (beside a `$ref`),
    /// else its schema's.
    pub default: Option<&'static Value>,
}

/// An index into the compiled schema.
pub type NodeId = u32;

/// The open schema: nothing declared, nothing checked.
const OPEN: Node = Node {
    ty: None,
    int_or_string_format: false,
    quantity: false,
    int_or_string: false,
    nullable: false,
    enum_values: None,
    required: Vec::new(),
    has_properties: false,
    properties: Vec::new(),
    has_additional: false,
    additional: None,
    keeps_unknown: false,
    items: None,
    array: false,
    map_atomic: false,
    list_type: None,
    list_map_keys: Vec::new(),
    defaults: false,
};

impl Node {
    /// Declared property `name`: `None` when undeclared, `Some(None)` when declared but its
    /// reference leads nowhere.
    pub fn property(&self, name: &str) -> Option<Option<NodeId>> {
        self.declared(name).map(|p| p.node)
    }

    /// Declared property `name`, whole.
    pub fn declared(&self, name: &str) -> Option<&Property> {
        let i = self.properties.binary_search_by(|p| p.name.cmp(name)).ok()?;
        Some(&self.properties[i])
    }

    /// The declared properties, in key order.
    pub fn properties(&self) -> &[Property] {
        &self.properties
    }

    /// The schema of map entry `name`: its property's, else `additionalProperties`'.
    pub fn entry(&self, name: &str) -> Option<Option<NodeId>> {
        self.property(name).or(self.additional)
    }
}

struct Compiled {
    nodes: Vec<Node>,
    /// A kind's definition, by its address in the document → its node.
    kinds: HashMap<usize, NodeId>,
}

/// A schema's identity: the address of its value in the document, which never moves.
fn addr(v: &'static Value) -> usize {
    v as *const Value as usize
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let mut c = Compiler::default();
        let mut kinds = HashMap::new();
        for def in parsed().by_gvk.values() {
            if let Some(id) = c.compile(def) {
                kinds.insert(addr(def), id);
            }
        }
        mark_defaults(&mut c.nodes);
        Compiled { nodes: c.nodes, kinds }
    })
}

/// Sets each node's `defaults`: the least fixed point, so a recursive part of a schema with no
/// default and no quantity anywhere in it is not walked.
fn mark_defaults(nodes: &mut [Node]) {
    loop {
        let mut changed = false;
        for i in 0..nodes.len() {
            let below = |id: &Option<NodeId>| id.is_some_and(|id| nodes[id as usize].defaults);
            let n = &nodes[i];
            let defaults = n.quantity
                || n.properties.iter().any(|p| p.default.is_some() || below(&p.node))
                || n.additional.as_ref().is_some_and(below)
                || n.items.as_ref().is_some_and(below);
            if defaults && !n.defaults {
                nodes[i].defaults = true;
                changed = true;
            }
        }
        if !changed {
            return;
        }
    }
}

/// Compiles `schema` apart from the document's kinds (its references still resolve into the
/// document's definitions): the nodes and the root's id, for tests of the walks.
#[cfg(test)]
pub fn compile_alone(schema: &'static Value) -> (Vec<Node>, Option<NodeId>) {
    let mut c = Compiler::default();
    let root = c.compile(schema);
    mark_defaults(&mut c.nodes);
    (c.nodes, root)
}

#[derive(Default)]
struct Compiler {
    nodes: Vec<Node>,
    /// Resolved schema (by address) → its node: each is compiled once, and cycles end.
    seen: HashMap<usize, NodeId>,
}

impl Compiler {
    fn compile(&mut self, schema: &'static Value) -> Option<NodeId> {
        let node = resolve(schema)?;
        if let Some(&id) = self.seen.get(&addr(node)) {
            return Some(id);
        }
        let id = self.nodes.len() as NodeId;
        self.nodes.push(OPEN);
        self.seen.insert(addr(node), id);
        let ext = |k: &str| node.get(k).and_then(Value::as_str);
        let flag = |k: &str| node.get(k).and_then(Value::as_bool).unwrap_or(false);
        let props = node.get("properties").and_then(Value::as_object);
        let mut properties = Vec::new();
        for (name, prop) in props.into_iter().flatten() {
            let default = prop.get("default").or_else(|| resolve(prop)?.get("default"));
            properties.push(Property { name: name.as_str(), node: self.compile(prop), default });
        }
        properties.sort_by(|a, b| a.name.cmp(b.name));
        let additional_raw = node.get("additionalProperties");
        let additional = match additional_raw {
            Some(ap @ Value::Object(_)) => Some(self.compile(ap)),
            _ => None,
        };
        let items = node.get("items").map(|i| self.compile(i));
        let list_map_keys = node
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_string).collect())
            .unwrap_or_default();
        let required = node.get("required").and_then(Value::as_array);
        self.nodes[id as usize] = Node {
            ty: ext("type"),
            int_or_string_format: ext("format") == Some("int-or-string"),
            quantity: ext("x-virt-proto-type") == Some("quantity"),
            int_or_string: flag("x-kubernetes-int-or-string"),
            nullable: flag("nullable") || flag("x-nullable"),
            enum_values: node.get("enum").and_then(Value::as_array).map(Vec::as_slice),
            required: required.into_iter().flatten().filter_map(Value::as_str).collect(),
            has_properties: props.is_some(),
            properties,
            has_additional: additional_raw.is_some(),
            additional,
            keeps_unknown: flag("x-kubernetes-preserve-unknown-fields")
                || additional_raw.and_then(Value::as_bool) == Some(true),
            items,
            array: node.get("items").is_some() || ext("type") == Some("array"),
            map_atomic: ext("x-kubernetes-map-type") == Some("atomic"),
            list_type: ext("x-kubernetes-list-type"),
            list_map_keys,
            defaults: false,
        };
        Some(id)
    }
}

/// The compiled node of `res`'s kind in `res`'s version.
pub fn kind_node(res: &ResourceInfo) -> Option<NodeId> {
    gvk_node(res.group, res.version, res.kind)
}

/// The compiled node of a group, version and kind's definition.
pub fn gvk_node(group: &str, version: &str, kind: &str) -> Option<NodeId> {
    let def = gvk_definition(group, version, kind)?;
    compiled().kinds.get(&addr(def)).copied()
}

/// Node `id` of the compiled schema; `None`, a reference that leads nowhere, is the open schema.
pub fn node(id: Option<NodeId>) -> &'static Node {
    node_in(&compiled().nodes, id)
}

/// Node `id` of `nodes`, a compiled schema.
pub fn node_in(nodes: &[Node], id: Option<NodeId>) -> &Node {
    static OPEN_NODE: Node = OPEN;
    match id {
        Some(id) => &nodes[id as usize],
        None => &OPEN_NODE,
    }
}

/// The whole compiled schema, for walks that take it as [`node_in`]'s `nodes`.
pub fn nodes() -> &'static [Node] {
    &compiled().nodes
}

/// `schema` past its `$ref`s into the definitions and a one-element `allOf` (how kube's
/// OpenAPI attaches a description to a reference); `None` when a reference leads nowhere.
pub fn resolve(schema: &Value) -> Option<&Value> {
    let defs = document().get("definitions");
    openapi_ref::resolve(|name| defs?.get(name), schema)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashSet;

    #[test]
    fn every_served_kind_has_its_definition() {
        for res in crate::generated::RESOURCES {
            let def = kind_definition(res).unwrap_or_else(|| panic!("{}", res.group_resource()));
            assert!(def.get("x-kubernetes-group-version-kind").is_some());
        }
    }

    #[test]
    fn references_and_single_all_ofs_resolve() {
        let meta = json!({"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"});
        let wrapped = json!({"allOf": [meta.clone()], "description": "standard metadata"});
        let direct = resolve(&meta).unwrap();
        assert!(direct.pointer("/properties/name").is_some());
        assert_eq!(resolve(&wrapped), Some(direct));
        assert_eq!(resolve(&json!({"$ref": "#/definitions/nothing"})), None);
        let plain = json!({"type": "string"});
        assert_eq!(resolve(&plain), Some(&plain));
    }

    /// Every node reachable from every kind says what its schema in the document says.
    #[test]
    fn the_compiled_schema_agrees_with_the_document() {
        fn agree(schema: &'static Value, id: Option<NodeId>, seen: &mut HashSet<NodeId>) {
            let n = node(id);
            let Some(v) = resolve(schema) else {
                assert!(id.is_none(), "a reference that leads nowhere is open");
                return;
            };
            let id = id.expect("a resolvable schema has a node");
            if !seen.insert(id) {
                return;
            }
            let s = |k: &str| v.get(k).and_then(Value::as_str);
            let b = |k: &str| v.get(k).and_then(Value::as_bool) == Some(true);
            assert_eq!(n.ty, s("type"), "{v}");
            assert_eq!(n.nullable, b("nullable") || b("x-nullable"));
            assert_eq!(n.int_or_string, b("x-kubernetes-int-or-string"));
            assert_eq!(n.list_type, s("x-kubernetes-list-type"));
            assert_eq!(n.map_atomic, s("x-kubernetes-map-type") == Some("atomic"));
            assert_eq!(n.enum_values.map(<[Value]>::len), v["enum"].as_array().map(Vec::len));
            let required = v["required"].as_array().map_or(0, Vec::len);
            assert_eq!(n.required.len(), required);
            let props = v.get("properties").and_then(Value::as_object);
            assert_eq!(n.has_properties, props.is_some());
            for (name, prop) in props.into_iter().flatten() {
                let declared = n.declared(name).unwrap_or_else(|| panic!("{name} is declared"));
                let default = prop.get("default").or_else(|| resolve(prop)?.get("default"));
                assert_eq!(declared.default, default, "{name}");
                agree(prop, declared.node, seen);
            }
            assert_eq!(n.property("no such property, ever"), None);
            match (v.get("additionalProperties"), n.additional) {
                (Some(ap @ Value::Object(_)), Some(child)) => agree(ap, child, seen),
                (Some(Value::Object(_)), None) => panic!("additionalProperties lost: {v}"),
                (_, additional) => assert_eq!(additional, None),
            }
            match (v.get("items"), n.items) {
                (Some(items), Some(child)) => agree(items, child, seen),
                (items, child) => assert_eq!((items.is_some(), child), (false, None)),
            }
        }
        let mut seen = HashSet::new();
        for res in crate::generated::RESOURCES {
            let def = kind_definition(res).expect("every kind has its definition");
            let id = kind_node(res);
            assert!(id.is_some(), "{}", res.kind);
            agree(def, id, &mut seen);
        }
        assert!(seen.len() > 100, "{} nodes", seen.len());
    }
}
