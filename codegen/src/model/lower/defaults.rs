//! The OpenAPI `default` keyword, which the server applies as CRD structural defaulting does:
//! a default must have its schema's type, or the server would store objects its own
//! validation refuses.

use serde_json::Value;

use super::Lowering;

impl Lowering<'_> {
    /// Every `default` in the definitions, against the `type` beside it.
    pub(super) fn check_defaults(&mut self) {
        let mut found = Vec::new();
        let defs = &self.doc.definitions;
        for (name, def) in defs {
            defaults_in(def, name, &|r| defs.get(r), &mut found);
        }
        for (ctx, problem) in found {
            self.problem(&format!("definition {ctx}"), problem);
        }
    }
}

/// A definition by name.
type Lookup<'a> = dyn Fn(&str) -> Option<&'a Value> + 'a;

fn defaults_in<'a>(
    schema: &'a Value,
    path: &str,
    lookup: &Lookup<'a>,
    out: &mut Vec<(String, String)>,
) {
    if let Some(default) = schema.get("default") {
        // A reference's default fits the type of what it refers to.
        let target = openapi_ref::resolve(lookup, schema).unwrap_or(schema);
        let ty = schema.get("type").or_else(|| target.get("type")).and_then(Value::as_str);
        let fits = match ty {
            Some("string") => default.is_string(),
            Some("integer") => default.is_i64() || default.is_u64(),
            Some("number") => default.is_number(),
            Some("boolean") => default.is_boolean(),
            Some("array") => default.is_array(),
            Some("object") => default.is_object(),
            _ => false,
        };
        if !fits {
            let ty = ty.unwrap_or("no type");
            out.push((path.to_string(), format!("default {default} does not fit {ty}")));
        }
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            defaults_in(v, &format!("{path}.{k}"), lookup, out);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = schema.get(key).filter(|c| c.is_object()) {
            defaults_in(child, &format!("{path}[]"), lookup, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_problem, lower_json};
    use crate::test_doc::TestDoc;
    use serde_json::json;

    #[test]
    fn defaults_must_fit_their_type() {
        let mut d = TestDoc::new(&["a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        let mut doc = d.build();
        let props = &mut doc["definitions"]["io.a.v1.Thing"]["properties"];
        props["type"] = json!({"type": "string", "default": "Opaque"});
        props["spec"]["properties"]["n"] = json!({"type": "integer", "default": 3});
        // A reference's default fits what it refers to.
        props["meta"] = json!({"$ref": "#/definitions/io.a.v1.ThingList", "default": {}});
        lower_json(doc.clone()).unwrap();
        let props = &mut doc["definitions"]["io.a.v1.Thing"]["properties"];
        props["spec"]["properties"]["n"]["default"] = json!("three");
        props["list"] = json!({"type": "array", "items": {"default": 1}});
        props["meta"]["default"] = json!([]);
        let problems = lower_json(doc).unwrap_err();
        assert_problem(&problems, "io.a.v1.Thing.spec.n: default \"three\" does not fit integer");
        assert_problem(&problems, "io.a.v1.Thing.list[]: default 1 does not fit no type");
        assert_problem(&problems, "io.a.v1.Thing.meta: default [] does not fit object");
        assert_eq!(problems.len(), 3, "{}", problems.join("\n"));
    }
}
