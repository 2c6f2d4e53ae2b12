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

use serde_json::{Map, Value};

use crate::expr::{self, Env, Expr};
use crate::pred::{self, Pred};

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
                            Some(Ok(p)) => pred::matches(p, this, &bound),
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

#[cfg(test)]
mod tests {
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
