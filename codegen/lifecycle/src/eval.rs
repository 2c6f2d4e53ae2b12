//! Evaluation: templates and predicates, one module since each evaluates the other (a
//! predicate's values are templates, a template's `...each` filters by a predicate); expressions
//! (`expr`) are below both.
//!
//! Templates: JSON (written as YAML) whose strings may hold `{{ expression }}`s.
//!
//! - A string that is exactly one `{{ e }}` becomes `e`'s value, of any type (so a template
//!   copies objects: `spec: "{{ .spec.template.spec }}"`); otherwise each `{{ e }}` is replaced
//!   by `e`'s text (`null` by nothing).
//! - In a list, an element `"...{{ e }}"` splices the list `e` reads (`null`: nothing).
//! - In an object, the key `"..."` merges the object its value renders to under the other keys;
//!   keys may hold `{{ e }}` too.
//! - In a list, an element `{"...each": "{{ e }}", as: name, if: predicate, value: template}`
//!   becomes one element per element of the list `e` reads, `value` rendered with `$name` (by
//!   default `$item`) bound to it, skipping those of which `if` does not hold (`.` stays the
//!   object): a VM's volumes as a snapshot's volume backups.
//!
//! Both are compiled once, when their file is read ([`Template`], [`Pred`] over [`Path`]s):
//! evaluation never parses.
//!
//! Predicates: what a stage selects, when a `let`'s case applies, an action's checks.
//! Written as single-key maps:
//!
//! `equals: {path, value}`, `in: {path, values}`, `notIn: {path, values}`, `exists: path`,
//! `doesNotExist: path` (`path` is an expression, `value`s are templates), `lessThan: {path,
//! value}` and `greaterThan: {path, value}` (as numbers, `num()`'s reading; false when either
//! side is not one), `condition: {type,
//! status?, reason?, path?}` (in `.status.conditions` unless `path` says), `hasFinalizer: name`,
//! `deleting: bool`, `related: {name, exists?, where?}` (`where` holds of the related object,
//! which is then `.`; of a list, `exists` means not empty and `where` holds of some element),
//! `all: [...]`, `any: [...]`, `not: ...`.

use std::sync::LazyLock;

use std::borrow::Cow;

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use crate::expr::{self, Env, Expr};

/// The key that merges an object into the one holding it.
pub const SPREAD: &str = "...";

/// The key of a list element that maps a list (see the module's documentation).
pub const EACH: &str = "...each";

/// The keys an `...each` element may hold besides its own.
pub const EACH_KEYS: [&str; 4] = [EACH, "as", "if", "value"];

/// An expression, parsed once when its file is read. One that does not parse keeps its error
/// for the checker (which refuses the file) and reads `null`, so nothing unchecked ever runs
/// it differently.
#[derive(Debug, Clone)]
pub struct Path {
    pub text: String,
    pub expr: Expr,
    pub error: Option<String>,
}

impl Path {
    pub fn compile(text: &str) -> Path {
        match expr::parse(text) {
            Ok(expr) => Path { text: text.to_string(), expr, error: None },
            Err(e) => Path { text: text.to_string(), expr: Expr::Lit(Value::Null), error: Some(e) },
        }
    }

    /// Its value, with `.` reading `this`.
    pub fn eval(&self, this: &Value, env: &dyn Env) -> Value {
        expr::eval(&self.expr, this, env)
    }

    /// Its value, borrowed where it is read from `this` or a named object.
    pub fn eval_ref<'a>(&'a self, this: &'a Value, env: &'a dyn Env) -> Cow<'a, Value> {
        expr::eval_ref(&self.expr, this, env)
    }
}

impl<'de> Deserialize<'de> for Path {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Path, D::Error> {
        Ok(Path::compile(&String::deserialize(d)?))
    }
}

/// A template, compiled once when its file is read: its literal parts kept as values, every
/// `{{ expression }}` parsed.
#[derive(Debug, Clone)]
pub struct Template {
    /// The template as written (the checker reads a JSON patch's literal paths from it).
    pub source: Value,
    pub node: Node,
}

/// A compiled template's parts.
#[derive(Debug, Clone)]
pub enum Node {
    /// No expression inside.
    Lit(Value),
    /// Exactly one `{{ e }}`: `e`'s value, of any type.
    Expr(Path),
    /// Text around expressions, each replaced by its text.
    Text(Vec<Piece>),
    /// A string with an unclosed `{{`: itself, and the error for the checker.
    Bad {
        text: String,
        error: String,
    },
    List(Vec<Element>),
    Object {
        /// `"...": template`, merged under the other members.
        spread: Option<Box<Node>>,
        /// Each key a string template.
        members: Vec<(Node, Node)>,
    },
}

#[derive(Debug, Clone)]
pub enum Piece {
    Text(String),
    Expr(Path),
}

/// A list element.
#[derive(Debug, Clone)]
pub enum Element {
    Item(Node),
    /// `"...{{ e }}"`: the list `e` reads, spliced.
    Splice(Path),
    /// `{"...each": "{{ e }}", as, if, value}`.
    Each(Box<Each>),
}

/// An `...each` element: the list, the bound name, the filter, the value, and the keys it
/// holds that it should not (for the checker).
#[derive(Debug, Clone)]
pub struct Each {
    pub list: Node,
    pub name: String,
    pub filter: Option<Pred>,
    /// A filter that is not a predicate: its error (and no element is kept).
    pub filter_error: Option<String>,
    pub value: Node,
    pub extra_keys: Vec<String>,
}

impl Template {
    pub fn compile(source: &Value) -> Template {
        Template { source: source.clone(), node: Node::compile(source) }
    }

    /// The template of the empty string (a message not given).
    pub fn empty() -> Template {
        Template::compile(&Value::String(String::new()))
    }
}

impl Default for Template {
    fn default() -> Template {
        Template::compile(&Value::Null)
    }
}

impl<'de> Deserialize<'de> for Template {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Template, D::Error> {
        Ok(Template::compile(&Value::deserialize(d)?))
    }
}

enum Raw<'a> {
    Text(&'a str),
    Expr(&'a str),
}

fn pieces(s: &str) -> Result<Vec<Raw<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find("{{") {
        if open > 0 {
            out.push(Raw::Text(&rest[..open]));
        }
        let after = &rest[open + 2..];
        let close = after.find("}}").ok_or_else(|| format!("unclosed `{{{{` in {s:?}"))?;
        out.push(Raw::Expr(after[..close].trim()));
        rest = &after[close + 2..];
    }
    if !rest.is_empty() {
        out.push(Raw::Text(rest));
    }
    Ok(out)
}

/// An expression inside a template string, its error naming the string.
fn inner(e: &str, s: &str) -> Path {
    let mut p = Path::compile(e);
    if let Some(err) = &mut p.error {
        *err = format!("{err} (in {s:?})");
    }
    p
}

impl Node {
    fn compile(t: &Value) -> Node {
        match t {
            Value::String(s) => Node::text(s),
            Value::Array(items) => Node::List(items.iter().map(Element::compile).collect()),
            Value::Object(members) => Node::Object {
                spread: members.get(SPREAD).map(|s| Box::new(Node::compile(s))),
                members: members
                    .iter()
                    .filter(|(k, _)| *k != SPREAD)
                    .map(|(k, v)| (Node::text(k), Node::compile(v)))
                    .collect(),
            },
            other => Node::Lit(other.clone()),
        }
    }

    fn text(s: &str) -> Node {
        if !s.contains("{{") {
            return Node::Lit(Value::String(s.to_string()));
        }
        match pieces(s) {
            Err(error) => Node::Bad { text: s.to_string(), error },
            Ok(parts) => match parts.as_slice() {
                [Raw::Expr(e)] => Node::Expr(inner(e, s)),
                _ => Node::Text(
                    parts
                        .iter()
                        .map(|p| match p {
                            Raw::Text(t) => Piece::Text(t.to_string()),
                            Raw::Expr(e) => Piece::Expr(inner(e, s)),
                        })
                        .collect(),
                ),
            },
        }
    }

    /// The expressions it reads directly (not those of the nodes below it).
    pub fn paths(&self) -> Vec<&Path> {
        match self {
            Node::Expr(p) => vec![p],
            Node::Text(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    Piece::Expr(p) => Some(p),
                    Piece::Text(_) => None,
                })
                .collect(),
            _ => Vec::new(),
        }
    }
}

impl Element {
    fn compile(item: &Value) -> Element {
        if let Some(m) = item.as_object().filter(|m| m.contains_key(EACH)) {
            let list = m.get(EACH).and_then(Value::as_str).unwrap_or("");
            let (filter, filter_error) = match m.get("if") {
                None => (None, None),
                Some(p) => match serde_json::from_value::<Pred>(p.clone()) {
                    Ok(p) => (Some(p), None),
                    Err(e) => (Some(Pred::Any(Vec::new())), Some(e.to_string())),
                },
            };
            return Element::Each(Box::new(Each {
                list: Node::text(list),
                name: m.get("as").and_then(Value::as_str).unwrap_or("item").to_string(),
                filter,
                filter_error,
                value: Node::compile(m.get("value").unwrap_or(&Value::Null)),
                extra_keys: m
                    .keys()
                    .filter(|k| !EACH_KEYS.contains(&k.as_str()))
                    .cloned()
                    .collect(),
            }));
        }
        match item.as_str().and_then(|s| s.strip_prefix(SPREAD)) {
            Some(rest) if rest.starts_with("{{") => match Node::text(rest) {
                Node::Expr(p) => Element::Splice(p),
                other => Element::Item(other),
            },
            _ => Element::Item(Node::compile(item)),
        }
    }
}

/// `env` with one more `$name`.
pub struct Bound<'e> {
    pub inner: &'e dyn Env,
    pub name: &'e str,
    pub value: &'e Value,
}

impl Env for Bound<'_> {
    fn named(&self, name: &str) -> Option<&Value> {
        if name == self.name {
            Some(self.value)
        } else {
            self.inner.named(name)
        }
    }
    fn object(&self) -> &Value {
        self.inner.object()
    }
    fn computed(&self, name: &str) -> Value {
        self.inner.computed(name)
    }
    fn now(&self) -> String {
        self.inner.now()
    }
    fn nodes(&self) -> usize {
        self.inner.nodes()
    }
    fn rng(&self) -> std::cell::RefMut<'_, crate::expr::Rng> {
        self.inner.rng()
    }
    fn ca_cert(&self, common_name: &str, not_before: i64, not_after: i64) -> Option<String> {
        self.inner.ca_cert(common_name, not_before, not_after)
    }
}

/// Renders a template.
pub fn render(t: &Template, this: &Value, env: &dyn Env) -> Value {
    render_node(&t.node, this, env)
}

/// `render`, borrowing a literal or a single expression's value instead of copying it.
fn render_ref<'a>(t: &'a Template, this: &'a Value, env: &'a dyn Env) -> Cow<'a, Value> {
    match &t.node {
        Node::Lit(v) => Cow::Borrowed(v),
        Node::Expr(p) => p.eval_ref(this, env),
        other => Cow::Owned(render_node(other, this, env)),
    }
}

/// Renders a template as text (a message): `null` is empty, other values their JSON.
pub fn render_text(t: &Template, this: &Value, env: &dyn Env) -> String {
    match render(t, this, env) {
        Value::String(s) => s,
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn render_node(n: &Node, this: &Value, env: &dyn Env) -> Value {
    match n {
        Node::Lit(v) => v.clone(),
        Node::Expr(p) => p.eval(this, env),
        Node::Bad { text, .. } => Value::String(text.clone()),
        Node::Text(parts) => {
            let mut out = String::new();
            for p in parts {
                match p {
                    Piece::Text(t) => out.push_str(t),
                    Piece::Expr(e) => match e.eval(this, env) {
                        Value::Null => {}
                        Value::String(t) => out.push_str(&t),
                        v => out.push_str(&v.to_string()),
                    },
                }
            }
            Value::String(out)
        }
        Node::List(items) => {
            let mut out = Vec::new();
            for item in items {
                match item {
                    Element::Item(n) => out.push(render_node(n, this, env)),
                    Element::Splice(p) => {
                        if let Value::Array(more) = p.eval(this, env) {
                            out.extend(more);
                        }
                    }
                    Element::Each(each) => {
                        let Value::Array(list) = render_node(&each.list, this, env) else {
                            continue;
                        };
                        for element in &list {
                            let bound = Bound { inner: env, name: &each.name, value: element };
                            if each.filter.as_ref().is_none_or(|p| matches(p, this, &bound)) {
                                out.push(render_node(&each.value, this, &bound));
                            }
                        }
                    }
                }
            }
            Value::Array(out)
        }
        Node::Object { spread, members } => {
            let mut out = match spread.as_ref().map(|s| render_node(s, this, env)) {
                Some(Value::Object(base)) => base,
                _ => Map::new(),
            };
            for (k, v) in members {
                let key = match render_node(k, this, env) {
                    Value::String(s) => s,
                    Value::Null => continue,
                    other => other.to_string(),
                };
                out.insert(key, render_node(v, this, env));
            }
            Value::Object(out)
        }
    }
}

/// Removes `null` members and elements, recursively (an object to create has no nulls).
pub fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            m.values_mut().for_each(strip_nulls);
        }
        Value::Array(a) => {
            a.retain(|v| !v.is_null());
            a.iter_mut().for_each(strip_nulls);
        }
        _ => {}
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Pred {
    Equals { path: Path, value: Template },
    In { path: Path, values: Vec<Template> },
    NotIn { path: Path, values: Vec<Template> },
    LessThan { path: Path, value: Template },
    GreaterThan { path: Path, value: Template },
    Exists(Path),
    DoesNotExist(Path),
    Condition(Condition),
    HasFinalizer(String),
    Deleting(bool),
    Related(RelatedPred),
    All(Vec<Pred>),
    Any(Vec<Pred>),
    Not(Box<Pred>),
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    /// The conditions list, `.status.conditions` unless given.
    #[serde(default)]
    pub path: Option<Path>,
}

impl Condition {
    pub fn path(&self) -> &Path {
        static CONDITIONS: LazyLock<Path> = LazyLock::new(|| Path::compile(".status.conditions"));
        self.path.as_ref().unwrap_or(&CONDITIONS)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RelatedPred {
    pub name: String,
    #[serde(default)]
    pub exists: Option<bool>,
    #[serde(default, rename = "where")]
    pub where_: Option<Box<Pred>>,
}

/// Whether `p` holds, with `.` reading `this`.
pub fn matches(p: &Pred, this: &Value, env: &dyn Env) -> bool {
    let one_of = |path: &Path, values: &[Template]| {
        let v = path.eval_ref(this, env);
        values.iter().any(|t| *render_ref(t, this, env) == *v)
    };
    match p {
        Pred::Equals { path, value } => *path.eval_ref(this, env) == *render_ref(value, this, env),
        Pred::In { path, values } => one_of(path, values),
        Pred::LessThan { path, value } | Pred::GreaterThan { path, value } => {
            let a = expr::number(&path.eval_ref(this, env));
            let b = expr::number(&render_ref(value, this, env));
            match (a, b, p) {
                (Some(a), Some(b), Pred::LessThan { .. }) => a < b,
                (Some(a), Some(b), _) => a > b,
                _ => false,
            }
        }
        Pred::NotIn { path, values } => !one_of(path, values),
        Pred::Exists(path) => !path.eval_ref(this, env).is_null(),
        Pred::DoesNotExist(path) => path.eval_ref(this, env).is_null(),
        Pred::Condition(c) => {
            let list = c.path().eval_ref(this, env);
            let found = list.as_array().and_then(|items| {
                items.iter().find(|i| i.get("type").and_then(Value::as_str) == Some(&c.type_))
            });
            let field_is = |cond: &Value, f: &str, want: &Option<String>| {
                want.as_deref().is_none_or(|w| cond.get(f).and_then(Value::as_str) == Some(w))
            };
            found.is_some_and(|cond| {
                field_is(cond, "status", &c.status) && field_is(cond, "reason", &c.reason)
            })
        }
        Pred::HasFinalizer(name) => this
            .get("metadata")
            .and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|f| f.as_str() == Some(name))),
        Pred::Deleting(want) => {
            let at = this.get("metadata").and_then(|m| m.get("deletionTimestamp"));
            at.is_some_and(|t| !t.is_null()) == *want
        }
        Pred::Related(r) => {
            let related = env.named(&r.name);
            // A list (the objects this one owns): exists when not empty, `where` of any.
            if let Some(Value::Array(items)) = related {
                return r.exists.is_none_or(|e| items.is_empty() != e)
                    && r.where_.as_ref().is_none_or(|w| items.iter().any(|o| matches(w, o, env)));
            }
            r.exists.is_none_or(|e| related.is_some() == e)
                && r.where_.as_ref().is_none_or(|w| related.is_some_and(|o| matches(w, o, env)))
        }
        Pred::All(ps) => ps.iter().all(|p| matches(p, this, env)),
        Pred::Any(ps) => ps.iter().any(|p| matches(p, this, env)),
        Pred::Not(p) => !matches(p, this, env),
    }
}

/// Calls `f` on every predicate inside `p`, `p` first, with whether it reads a related
/// object (its name) instead of `.`.
pub fn walk<'a>(
    p: &'a Pred,
    related: Option<&'a str>,
    f: &mut dyn FnMut(&'a Pred, Option<&'a str>),
) {
    f(p, related);
    match p {
        Pred::All(ps) | Pred::Any(ps) => ps.iter().for_each(|q| walk(q, related, f)),
        Pred::Not(q) => walk(q, related, f),
        Pred::Related(r) => {
            if let Some(w) = &r.where_ {
                walk(w, Some(&r.name), f);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod template_tests {
    use super::*;
    use crate::expr::Rng;
    use serde_json::json;
    use std::cell::RefCell;

    struct T(Value, RefCell<Rng>);

    impl Env for T {
        fn named(&self, _: &str) -> Option<&Value> {
            None
        }
        fn object(&self) -> &Value {
            &self.0
        }
        fn computed(&self, _: &str) -> Value {
            Value::Null
        }
        fn now(&self) -> String {
            "now".into()
        }
        fn nodes(&self) -> usize {
            1
        }
        fn rng(&self) -> std::cell::RefMut<'_, Rng> {
            self.1.borrow_mut()
        }
        fn ca_cert(&self, _: &str, _: i64, _: i64) -> Option<String> {
            None
        }
    }

    #[test]
    fn whole_expressions_keep_their_type_and_text_interpolates() {
        let obj = json!({"metadata": {"name": "vm1", "generation": 2, "labels": {"a": "b"}},
                         "list": [1, 2]});
        let env = T(obj.clone(), RefCell::new(Rng::new(0)));
        let t = json!({
            "name": "{{ .metadata.name }}",
            "gen": "{{ .metadata.generation }}",
            "text": "gen {{ .metadata.generation }} of {{.metadata.name}}{{ .nope }}",
            "labels": "{{ .metadata.labels }}",
            "spread": ["...{{ .list }}", 3, "...{{ .nope }}"],
            "merged": {"...": "{{ .metadata.labels }}", "c": "d", "a": "over"},
            "{{ .metadata.name }}-key": "node: {{ node() }}",
            "plain": "no braces",
        });
        let out = render(&Template::compile(&t), &obj, &env);
        assert_eq!(out["name"], json!("vm1"));
        assert_eq!(out["gen"], json!(2));
        assert_eq!(out["text"], json!("gen 2 of vm1"));
        assert_eq!(out["labels"], json!({"a": "b"}));
        assert_eq!(out["spread"], json!([1, 2, 3]));
        assert_eq!(out["merged"], json!({"a": "over", "c": "d"}));
        assert_eq!(out["vm1-key"], json!("node: sim-node-1"));
        assert_eq!(out["plain"], json!("no braces"));
    }

    #[test]
    fn each_maps_a_list_with_a_bound_name_and_a_filter() {
        let obj = json!({"metadata": {"name": "vm1"}, "volumes": [
            {"name": "root", "dataVolume": {"name": "dv1"}},
            {"name": "cloud", "cloudInitNoCloud": {}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "pvc1"}}]});
        let env = T(obj.clone(), RefCell::new(Rng::new(0)));
        let t = json!({"backups": [
            "first",
            {"...each": "{{ .volumes }}", "as": "vol",
             "if": {"any": [{"exists": "$vol.dataVolume"}, {"exists": "$vol.persistentVolumeClaim"}]},
             "value": {"volumeName": "{{ $vol.name }}", "of": "{{ .metadata.name }}",
                       "claim": "{{ default($vol.dataVolume.name, $vol.persistentVolumeClaim.claimName) }}"}},
            {"...each": "{{ .nope }}", "value": 1},
            {"...each": "{{ .volumes }}", "value": "{{ $item.name }}"}]});
        let out = render(&Template::compile(&t), &obj, &env);
        assert_eq!(
            out["backups"],
            json!(["first",
                   {"volumeName": "root", "of": "vm1", "claim": "dv1"},
                   {"volumeName": "data", "of": "vm1", "claim": "pvc1"},
                   "root", "cloud", "data"])
        );
    }

    #[test]
    fn templates_compile_once_and_keep_their_errors() {
        let t = |s: &str| Node::compile(&json!(s));
        assert_eq!(t("a {{ .x }} b {{ now() }}").paths().len(), 2);
        assert!(matches!(t("{{ .x }}"), Node::Expr(_)));
        assert!(matches!(t("plain"), Node::Lit(_)));
        let Node::Bad { error, .. } = t("{{ .x ") else { panic!("not bad") };
        assert!(error.contains("unclosed"), "{error}");
        let bad = t("{{ nope }} {{ .a }}");
        assert!(bad.paths()[0].error.as_ref().is_some_and(|e| e.contains("in \"{{ nope }}")));
        assert!(bad.paths()[1].error.is_none());
        assert!(matches!(Element::compile(&json!("...{{ .x }}")), Element::Splice(_)));
    }

    #[test]
    fn nulls_are_stripped_from_objects_to_create() {
        let mut v = json!({"a": null, "b": {"c": null, "d": [null, 1]}});
        strip_nulls(&mut v);
        assert_eq!(v, json!({"b": {"d": [1]}}));
    }
}

#[cfg(test)]
mod pred_tests {
    use super::*;
    use crate::expr::Rng;
    use serde_json::json;
    use std::cell::RefCell;

    struct T(Value, Option<Value>, RefCell<Rng>);

    impl Env for T {
        fn named(&self, name: &str) -> Option<&Value> {
            self.1.as_ref().filter(|_| name == "vmi")
        }
        fn object(&self) -> &Value {
            &self.0
        }
        fn computed(&self, _: &str) -> Value {
            json!("Always")
        }
        fn now(&self) -> String {
            "now".into()
        }
        fn nodes(&self) -> usize {
            1
        }
        fn rng(&self) -> std::cell::RefMut<'_, Rng> {
            self.2.borrow_mut()
        }
        fn ca_cert(&self, _: &str, _: i64, _: i64) -> Option<String> {
            None
        }
    }

    fn holds(p: &str, obj: Value, related: Option<Value>) -> bool {
        let p: Pred = serde_json::from_value(serde_yaml::from_str(p).unwrap()).unwrap();
        let env = T(obj.clone(), related, RefCell::new(Rng::new(0)));
        matches(&p, &obj, &env)
    }

    #[test]
    fn field_predicates() {
        let vm = json!({"metadata": {"finalizers": ["a/b"], "generation": 2},
                        "spec": {"runStrategy": "Always"},
                        "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "VMINotExists"}]}});
        assert!(holds("equals: {path: .spec.runStrategy, value: Always}", vm.clone(), None));
        assert!(holds("equals: {path: .spec.runStrategy, value: \"{{ $x }}\"}", vm.clone(), None));
        assert!(holds("equals: {path: .metadata.generation, value: 2}", vm.clone(), None));
        assert!(holds("in: {path: .spec.runStrategy, values: [Halted, Always]}", vm.clone(), None));
        assert!(holds("notIn: {path: .spec.running, values: [true]}", vm.clone(), None));
        assert!(holds("exists: .spec.runStrategy", vm.clone(), None));
        assert!(holds("lessThan: {path: .metadata.generation, value: 3}", vm.clone(), None));
        assert!(!holds("lessThan: {path: .metadata.generation, value: 2}", vm.clone(), None));
        assert!(holds("greaterThan: {path: \"num('12.5%')\", value: '12'}", vm.clone(), None));
        assert!(!holds("greaterThan: {path: .spec.runStrategy, value: 1}", vm.clone(), None));
        assert!(holds("doesNotExist: .spec.running", vm.clone(), None));
        assert!(holds(
            "condition: {type: Ready, status: 'False', reason: VMINotExists}",
            vm.clone(),
            None
        ));
        assert!(!holds("condition: {type: Ready, status: 'True'}", vm.clone(), None));
        assert!(!holds("condition: {type: Paused}", vm.clone(), None));
        assert!(holds("hasFinalizer: a/b", vm.clone(), None));
        assert!(holds("deleting: false", vm.clone(), None));
        assert!(holds("not: {deleting: true}", vm.clone(), None));
        assert!(holds("any: [{deleting: true}, {exists: .spec}]", vm.clone(), None));
        assert!(!holds("all: [{deleting: false}, {exists: .nope}]", vm, None));
    }

    #[test]
    fn related_predicates_read_the_related_object() {
        let vm = json!({"metadata": {"name": "a"}});
        let vmi = json!({"status": {"phase": "Running"}});
        assert!(holds("related: {name: vmi, exists: false}", vm.clone(), None));
        assert!(!holds("related: {name: vmi, exists: false}", vm.clone(), Some(vmi.clone())));
        let running =
            "related: {name: vmi, where: {equals: {path: .status.phase, value: Running}}}";
        assert!(holds(running, vm.clone(), Some(vmi)));
        assert!(!holds(running, vm.clone(), None));
        assert!(!holds(running, vm.clone(), Some(json!({"status": {"phase": "Pending"}}))));
        // A list: not empty, and `where` of some element.
        let list = json!([{"status": {"phase": "Pending"}}, {"status": {"phase": "Running"}}]);
        assert!(holds(running, vm.clone(), Some(list)));
        assert!(holds("related: {name: vmi, exists: false}", vm.clone(), Some(json!([]))));
        assert!(!holds(running, vm, Some(json!([]))));
    }
}
