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
//! Predicates: what a stage selects, when a computed case applies, and (later) an action's
//! preconditions. Written as single-key maps:
//!
//! `equals: {path, value}`, `in: {path, values}`, `notIn: {path, values}`, `exists: path`,
//! `doesNotExist: path` (`path` is an expression, `value`s are templates), `lessThan: {path,
//! value}` and `greaterThan: {path, value}` (as numbers, `num()`'s reading; false when either
//! side is not one), `condition: {type,
//! status?, reason?, path?}` (in `.status.conditions` unless `path` says), `hasFinalizer: name`,
//! `deleting: bool`, `related: {name, exists?, where?}` (`where` holds of the related object,
//! which is then `.`; of a list, `exists` means not empty and `where` holds of some element),
//! `all: [...]`, `any: [...]`, `not: ...`.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::expr::{self, Env, Expr};

/// The key that merges an object into the one holding it.
pub const SPREAD: &str = "...";

/// The key of a list element that maps a list (see the module's documentation).
pub const EACH: &str = "...each";

/// An `...each` element's parts: the list's template, the bound name, the filter, the value.
pub struct Each<'t> {
    pub list: &'t str,
    pub name: &'t str,
    pub filter: Option<Result<Pred, String>>,
    pub value: &'t Value,
}

impl<'t> Each<'t> {
    /// `item` as an `...each` element, if it is one.
    pub fn of(item: &'t Value) -> Option<Each<'t>> {
        static NULL: Value = Value::Null;
        let m = item.as_object()?;
        let list = m.get(EACH)?.as_str().unwrap_or("");
        Some(Each {
            list,
            name: m.get("as").and_then(Value::as_str).unwrap_or("item"),
            filter: m
                .get("if")
                .map(|p| serde_json::from_value::<Pred>(p.clone()).map_err(|e| e.to_string())),
            value: m.get("value").unwrap_or(&NULL),
        })
    }

    /// The keys an `...each` element may hold besides its own.
    pub const KEYS: [&'static str; 4] = [EACH, "as", "if", "value"];
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

enum Piece<'a> {
    Text(&'a str),
    Expr(&'a str),
}

fn pieces(s: &str) -> Result<Vec<Piece<'_>>, String> {
    let mut out = Vec::new();
    let mut rest = s;
    while let Some(open) = rest.find("{{") {
        if open > 0 {
            out.push(Piece::Text(&rest[..open]));
        }
        let after = &rest[open + 2..];
        let close = after.find("}}").ok_or_else(|| format!("unclosed `{{{{` in {s:?}"))?;
        out.push(Piece::Expr(after[..close].trim()));
        rest = &after[close + 2..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    Ok(out)
}

/// Every expression in a template string, each parsed (for the checker).
pub fn expressions(s: &str) -> Result<Vec<Result<Expr, String>>, String> {
    let s = s.strip_prefix(SPREAD).filter(|r| r.starts_with("{{")).unwrap_or(s);
    let parse = |e: &str| expr::parse(e).map_err(|err| format!("{err} (in {s:?})"));
    let exprs = pieces(s)?.into_iter().filter_map(|p| match p {
        Piece::Expr(e) => Some(parse(e)),
        Piece::Text(_) => None,
    });
    Ok(exprs.collect())
}

/// Renders a template string.
pub fn render_str(s: &str, this: &Value, env: &dyn Env) -> Value {
    let Ok(parts) = pieces(s) else { return Value::String(s.into()) };
    let eval = |e: &str| expr::parse(e).map_or(Value::Null, |e| expr::eval(&e, this, env));
    match parts.as_slice() {
        [Piece::Expr(e)] => eval(e),
        _ if !s.contains("{{") => Value::String(s.into()),
        _ => {
            let mut out = String::new();
            for p in parts {
                match p {
                    Piece::Text(t) => out.push_str(t),
                    Piece::Expr(e) => match eval(e) {
                        Value::Null => {}
                        Value::String(t) => out.push_str(&t),
                        v => out.push_str(&v.to_string()),
                    },
                }
            }
            Value::String(out)
        }
    }
}

/// Renders a template.
pub fn render(t: &Value, this: &Value, env: &dyn Env) -> Value {
    match t {
        Value::String(s) => render_str(s, this, env),
        Value::Array(items) => {
            let mut out = Vec::new();
            for item in items {
                if let Some(each) = Each::of(item) {
                    let Value::Array(list) = render_str(each.list, this, env) else { continue };
                    for element in &list {
                        let bound = Bound { inner: env, name: each.name, value: element };
                        let keep = match &each.filter {
                            None => true,
                            Some(Ok(p)) => matches(p, this, &bound),
                            Some(Err(_)) => false,
                        };
                        if keep {
                            out.push(render(each.value, this, &bound));
                        }
                    }
                    continue;
                }
                match item.as_str().and_then(|s| s.strip_prefix(SPREAD)) {
                    Some(rest) if rest.starts_with("{{") => {
                        if let Value::Array(more) = render_str(rest, this, env) {
                            out.extend(more);
                        }
                    }
                    _ => out.push(render(item, this, env)),
                }
            }
            Value::Array(out)
        }
        Value::Object(members) => {
            let mut out = match members.get(SPREAD).map(|s| render(s, this, env)) {
                Some(Value::Object(base)) => base,
                _ => Map::new(),
            };
            for (k, v) in members.iter().filter(|(k, _)| *k != SPREAD) {
                let key = match render_str(k, this, env) {
                    Value::String(s) => s,
                    Value::Null => continue,
                    other => other.to_string(),
                };
                out.insert(key, render(v, this, env));
            }
            Value::Object(out)
        }
        other => other.clone(),
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
    Equals { path: String, value: Value },
    In { path: String, values: Vec<Value> },
    NotIn { path: String, values: Vec<Value> },
    LessThan { path: String, value: Value },
    GreaterThan { path: String, value: Value },
    Exists(String),
    DoesNotExist(String),
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
    pub path: Option<String>,
}

impl Condition {
    pub fn path(&self) -> &str {
        self.path.as_deref().unwrap_or(".status.conditions")
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

fn read(path: &str, this: &Value, env: &dyn Env) -> Value {
    expr::parse(path).map_or(Value::Null, |e| expr::eval(&e, this, env))
}

/// Whether `p` holds, with `.` reading `this`.
pub fn matches(p: &Pred, this: &Value, env: &dyn Env) -> bool {
    let one_of = |path: &str, values: &[Value]| {
        let v = read(path, this, env);
        values.iter().any(|t| render(t, this, env) == v)
    };
    match p {
        Pred::Equals { path, value } => read(path, this, env) == render(value, this, env),
        Pred::In { path, values } => one_of(path, values),
        Pred::LessThan { path, value } | Pred::GreaterThan { path, value } => {
            let a = expr::number(&read(path, this, env));
            let b = expr::number(&render(value, this, env));
            match (a, b, p) {
                (Some(a), Some(b), Pred::LessThan { .. }) => a < b,
                (Some(a), Some(b), _) => a > b,
                _ => false,
            }
        }
        Pred::NotIn { path, values } => !one_of(path, values),
        Pred::Exists(path) => !read(path, this, env).is_null(),
        Pred::DoesNotExist(path) => read(path, this, env).is_null(),
        Pred::Condition(c) => {
            let list = read(c.path(), this, env);
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
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|f| f.iter().any(|f| f.as_str() == Some(name))),
        Pred::Deleting(want) => {
            this.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null()) == *want
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
        let out = render(&t, &obj, &env);
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
        let out = render(&t, &obj, &env);
        assert_eq!(
            out["backups"],
            json!(["first",
                   {"volumeName": "root", "of": "vm1", "claim": "dv1"},
                   {"volumeName": "data", "of": "vm1", "claim": "pvc1"},
                   "root", "cloud", "data"])
        );
    }

    #[test]
    fn expressions_are_listed_and_bad_ones_reported() {
        assert_eq!(expressions("a {{ .x }} b {{ now() }}").unwrap().len(), 2);
        assert_eq!(expressions("...{{ .x }}").unwrap().len(), 1);
        assert!(expressions("{{ .x ").unwrap_err().contains("unclosed"));
        assert!(expressions("{{ nope }} {{ .a }}").unwrap()[0].is_err());
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
        assert!(holds(
            "equals: {path: .spec.runStrategy, value: \"{{ computed('x') }}\"}",
            vm.clone(),
            None
        ));
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
