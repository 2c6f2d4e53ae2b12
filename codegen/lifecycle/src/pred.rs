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
use serde_json::Value;

use crate::expr::{self, Env};
use crate::template;

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
        values.iter().any(|t| template::render(t, this, env) == v)
    };
    match p {
        Pred::Equals { path, value } => read(path, this, env) == template::render(value, this, env),
        Pred::In { path, values } => one_of(path, values),
        Pred::LessThan { path, value } | Pred::GreaterThan { path, value } => {
            let a = expr::number(&read(path, this, env));
            let b = expr::number(&template::render(value, this, env));
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
mod tests {
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
