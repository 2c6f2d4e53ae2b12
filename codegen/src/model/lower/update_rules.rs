//! `x-virt-resource.updateRules` (kube's `ValidateXUpdate` as rules) and `defaultClass` (the
//! DefaultStorageClass admission's relation), checked against the kinds' schemas so that the
//! server only enforces rules over fields the kind has.

use serde_json::Value;

use super::Lowering;
use crate::model::{Allowed, DefaultClass, Exception, Resource, UpdateRule};
use crate::swagger;

impl<'d> Lowering<'d> {
    /// The kind's update rules, every problem with them reported.
    pub(super) fn update_rules(
        &mut self,
        ctx: &str,
        def: &Value,
        rules: &[swagger::UpdateRule],
    ) -> Vec<UpdateRule> {
        let mut out = Vec::new();
        for (i, r) in rules.iter().enumerate() {
            let what = format!("updateRules[{i}]");
            // The declared type at `at`, if the path is declared at all.
            let at_schema: Option<Option<String>> = self
                .path_schema(def, &r.at)
                .map(|s| s.get("type").and_then(Value::as_str).map(String::from));
            if at_schema.is_none() {
                self.problem(ctx, format!("{what}: `{}` is not a declared path", r.at));
            }
            let field = r.field.clone().unwrap_or_else(|| r.at.clone());
            let needs_message = |s: &mut Self, check: &str| {
                if r.message.is_empty() {
                    s.problem(ctx, format!("{what}: `{check}` needs a message"));
                }
            };
            let rule = match r.check.as_str() {
                "immutable" => {
                    needs_message(self, "immutable");
                    UpdateRule::Immutable {
                        at: r.at.clone(),
                        field,
                        message: r.message.clone(),
                        invalid: r.invalid,
                        once: r.once,
                    }
                }
                "sameLength" | "onlyAdditions" => {
                    needs_message(self, &r.check);
                    if at_schema.as_ref().is_some_and(|t| t.as_deref() != Some("array")) {
                        self.problem(ctx, format!("{what}: `{}` is not a list", r.at));
                    }
                    if r.check == "sameLength" {
                        UpdateRule::SameLength {
                            at: r.at.clone(),
                            field,
                            message: r.message.clone(),
                        }
                    } else {
                        UpdateRule::OnlyAdditions {
                            at: r.at.clone(),
                            field,
                            ignoring: r.ignoring.clone(),
                            message: r.message.clone(),
                        }
                    }
                }
                "onlyLowered" => {
                    if at_schema.as_ref().is_some_and(|t| t.as_deref() != Some("integer")) {
                        self.problem(ctx, format!("{what}: `{}` is not an integer", r.at));
                    }
                    UpdateRule::OnlyLowered { at: r.at.clone(), field }
                }
                "notBelow" => {
                    needs_message(self, "notBelow");
                    let floor = r.floor.clone().unwrap_or_default();
                    if self.path_schema(def, &floor).is_none() {
                        self.problem(
                            ctx,
                            format!("{what}: floor `{floor}` is not a declared path"),
                        );
                    }
                    UpdateRule::NotBelow {
                        at: r.at.clone(),
                        field,
                        floor,
                        message: r.message.clone(),
                    }
                }
                "frozen" => {
                    needs_message(self, "frozen");
                    let mut except = Vec::new();
                    for e in &r.except {
                        let full = format!("{}.{}", r.at, e.path);
                        if self.path_schema(def, &full).is_none() {
                            let msg = format!(
                                "{what}: except `{}` is not declared under `{}`",
                                e.path, r.at
                            );
                            self.problem(ctx, msg);
                        }
                        let when = match (e.when.as_deref(), &e.if_) {
                            (None, None) => Allowed::Always,
                            (Some("oldUnset"), None) => Allowed::OldUnset,
                            (Some("setOnce"), None) => Allowed::SetOnce,
                            (Some("negativeToOne"), None) => Allowed::NegativeToOne,
                            (None, Some(w)) => {
                                if self.path_schema(def, &w.field).is_none() {
                                    let msg =
                                        format!("{what}: if.field `{}` is not declared", w.field);
                                    self.problem(ctx, msg);
                                }
                                Allowed::FieldEquals(w.field.clone(), w.equals.clone())
                            }
                            (when, _) => {
                                let msg = format!(
                                    "{what}: except `{}`: `when` {when:?} is not one of oldUnset, setOnce, negativeToOne (or `if` alone)",
                                    e.path
                                );
                                self.problem(ctx, msg);
                                Allowed::Always
                            }
                        };
                        except.push(Exception { path: e.path.clone(), when });
                    }
                    for key in &r.only {
                        if self.path_schema(def, &format!("{}.{key}", r.at)).is_none() {
                            let msg =
                                format!("{what}: only `{key}` is not declared under `{}`", r.at);
                            self.problem(ctx, msg);
                        }
                    }
                    let diff = r.diff.clone().unwrap_or_default();
                    if diff.is_empty() {
                        self.problem(ctx, format!("{what}: `frozen` needs the diff's Go type"));
                    }
                    UpdateRule::Frozen {
                        at: r.at.clone(),
                        only: r.only.clone(),
                        except,
                        field,
                        message: r.message.clone(),
                        diff,
                    }
                }
                other => {
                    let msg = format!(
                        "{what}: check `{other}` is not one of immutable, sameLength, onlyAdditions, onlyLowered, notBelow, frozen"
                    );
                    self.problem(ctx, msg);
                    continue;
                }
            };
            out.push(rule);
        }
        out
    }

    /// The claims' side of `defaultClass`; the classes' kind is checked once all kinds are known.
    pub(super) fn default_class(
        &mut self,
        ctx: &str,
        def: &Value,
        c: &swagger::DefaultClass,
    ) -> DefaultClass {
        if self.path_schema(def, &c.field).and_then(|s| s.get("type")).is_none_or(|t| t != "string")
        {
            self.problem(ctx, format!("defaultClass.field `{}` is not a string", c.field));
        }
        if c.annotations.is_empty() {
            self.problem(ctx, "defaultClass.annotations: needs at least one annotation");
        }
        DefaultClass {
            field: c.field.clone(),
            group: c.group.clone(),
            plural: c.plural.clone(),
            annotations: c.annotations.clone(),
            skip_annotation: c.skip_annotation.clone(),
        }
    }

    /// A `defaultClass` names a served cluster-scoped kind.
    pub(super) fn check_default_classes(&mut self, resources: &[Resource]) {
        for r in resources {
            let Some(c) = &r.default_class else { continue };
            let class = resources.iter().find(|o| o.group == c.group && o.plural == c.plural);
            match class {
                Some(o) if !o.namespaced => {}
                Some(_) => {
                    let msg = format!("defaultClass: `{}.{}` is namespaced", c.plural, c.group);
                    self.problem(&format!("definition {}", r.definition), msg);
                }
                None => {
                    let msg = format!("defaultClass: no kind `{}.{}` is served", c.plural, c.group);
                    self.problem(&format!("definition {}", r.definition), msg);
                }
            }
        }
    }

    /// The schema at a dotted path: `[*]` steps into a list's items, and a segment a map's
    /// values when it is not a property.
    fn path_schema<'a>(&'a self, def: &'a Value, path: &str) -> Option<&'a Value> {
        let doc = self.doc;
        let resolve = |s: &'a Value| openapi_ref::resolve(|name| doc.definitions.get(name), s);
        let mut schema = resolve(def)?;
        for seg in path.split('.') {
            let (name, items) = match seg.strip_suffix("[*]") {
                Some(name) => (name, true),
                None => (seg, false),
            };
            let props = schema.get("properties").and_then(|p| p.get(name));
            schema = resolve(props.or_else(|| schema.get("additionalProperties"))?)?;
            if items {
                schema = resolve(schema.get("items")?)?;
            }
        }
        Some(schema)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_problem, lower_json};
    use crate::model::{Allowed, UpdateRule};
    use crate::test_doc::TestDoc;
    use serde_json::{json, Value};

    fn with(rules: Value, class: Option<Value>) -> Result<crate::model::Api, Vec<String>> {
        let mut d = TestDoc::new(&["a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        d.kind("a.io", "v1", "Class", "classes", false);
        let mut doc = d.build();
        let def = &mut doc["definitions"]["io.a.v1.Thing"];
        def["properties"]["spec"] = json!({"type": "object", "properties": {
            "items": {"type": "array", "items": {"type": "object",
                      "properties": {"image": {"type": "string"}}}},
            "deadline": {"type": "integer"},
            "requests": {"type": "object", "additionalProperties": {"type": "string"}},
            "className": {"type": "string"}}});
        def["properties"]["status"] =
            json!({"type": "object", "properties": {"phase": {"type": "string"}}});
        def["x-virt-resource"]["updateRules"] = rules;
        if let Some(c) = class {
            def["x-virt-resource"]["defaultClass"] = c;
        }
        lower_json(doc)
    }

    #[test]
    fn update_rules_are_checked_against_the_schema() {
        let api = with(
            json!([
                {"check": "sameLength", "at": "spec.items", "message": "m"},
                {"check": "onlyLowered", "at": "spec.deadline"},
                {"check": "frozen", "at": "spec", "message": "m", "diff": "a.Spec",
                 "except": [{"path": "items[*].image"}, {"path": "className", "when": "setOnce"},
                            {"path": "requests.storage",
                             "if": {"field": "status.phase", "equals": "Bound"}}]}
            ]),
            Some(json!({"field": "spec.className", "group": "a.io", "plural": "classes",
                        "annotations": ["a.io/default"]})),
        )
        .unwrap();
        let thing = api.resources.iter().find(|r| r.kind == "Thing").unwrap();
        assert_eq!(thing.update_rules.len(), 3);
        let UpdateRule::Frozen { except, field, .. } = &thing.update_rules[2] else {
            panic!("{:?}", thing.update_rules[2])
        };
        assert_eq!(field, "spec");
        assert_eq!(except[1].when, Allowed::SetOnce);
        assert_eq!(except[2].when, Allowed::FieldEquals("status.phase".into(), "Bound".into()));
        assert_eq!(thing.default_class.as_ref().unwrap().plural, "classes");

        let problems = with(
            json!([
                {"check": "sameLength", "at": "spec.deadline"},
                {"check": "onlyLowered", "at": "spec.nowhere"},
                {"check": "frozen", "at": "spec", "message": "m",
                 "except": [{"path": "items[*].tag"}, {"path": "className", "when": "later"}]},
                {"check": "shrinks", "at": "spec"}
            ]),
            Some(json!({"field": "spec.deadline", "group": "a.io", "plural": "things",
                        "annotations": []})),
        )
        .unwrap_err();
        for want in [
            "updateRules[0]: `sameLength` needs a message",
            "updateRules[0]: `spec.deadline` is not a list",
            "updateRules[1]: `spec.nowhere` is not a declared path",
            "updateRules[2]: except `items[*].tag` is not declared under `spec`",
            "updateRules[2]: except `className`: `when` Some(\"later\") is not one of",
            "updateRules[2]: `frozen` needs the diff's Go type",
            "updateRules[3]: check `shrinks` is not one of",
            "defaultClass.field `spec.deadline` is not a string",
            "defaultClass.annotations: needs at least one annotation",
            "defaultClass: `things.a.io` is namespaced",
        ] {
            assert_problem(&problems, want);
        }
    }
}
