//! `x-virt-resource.dataRules`: kube's validation of a kind's data maps (ConfigMap, Secret),
//! checked against the kind's schema so that the server only enforces rules that make sense.

use serde_json::Value;

use super::Lowering;
use crate::model::{DataMap, DataRules, ImmutableFlag, RequiredKeys, SizeLimit, WriteOnly};
use crate::swagger;

impl<'d> Lowering<'d> {
    /// The kind's data rules, every problem with them reported.
    pub(super) fn data_rules(
        &mut self,
        ctx: &str,
        def: &Value,
        rules: &swagger::DataRules,
    ) -> DataRules {
        let mut out = DataRules::default();
        for (i, field) in rules.key_maps.iter().enumerate() {
            if rules.key_maps[..i].contains(field) {
                self.problem(ctx, format!("dataRules.keyMaps: `{field}` is repeated"));
            }
            if let Some(m) = self.data_map(ctx, def, "dataRules.keyMaps", field) {
                out.key_maps.push(m);
            }
        }
        if let Some(size) = &rules.max_total_size {
            let maps: Vec<DataMap> = size
                .maps
                .iter()
                .filter_map(|f| self.data_map(ctx, def, "dataRules.maxTotalSize", f))
                .collect();
            if size.maps.is_empty() || size.bytes == 0 {
                self.problem(ctx, "dataRules.maxTotalSize: needs maps and a positive bytes");
            }
            if !size.field.is_empty() && self.top_level(def, &size.field).is_none() {
                let msg = format!("dataRules.maxTotalSize.field `{}` is not declared", size.field);
                self.problem(ctx, msg);
            }
            out.max_total_size =
                Some(SizeLimit { maps, bytes: size.bytes, field: size.field.clone() });
        }
        for w in &rules.write_only {
            let from = self.data_map(ctx, def, "dataRules.writeOnly", &w.field);
            let into = self.data_map(ctx, def, "dataRules.writeOnly", &w.into);
            if w.field == w.into {
                self.problem(ctx, format!("dataRules.writeOnly: `{}` merges into itself", w.field));
            }
            if let (Some(_), Some(into)) = (from, into) {
                out.write_only.push(WriteOnly {
                    field: w.field.clone(),
                    into: w.into.clone(),
                    base64: into.base64,
                });
            }
        }
        for field in &rules.immutable_after_create {
            self.declared(ctx, def, "dataRules.immutableAfterCreate", field);
        }
        out.immutable_after_create = rules.immutable_after_create.clone();
        if let Some(flag) = &rules.immutable_flag {
            match self.top_level(def, &flag.field).and_then(|s| s.get("type")) {
                Some(t) if t == "boolean" => {}
                _ => self.problem(
                    ctx,
                    format!("dataRules.immutableFlag.field `{}` is not a boolean", flag.field),
                ),
            }
            for field in &flag.freezes {
                self.declared(ctx, def, "dataRules.immutableFlag.freezes", field);
            }
            out.immutable_flag =
                Some(ImmutableFlag { field: flag.field.clone(), freezes: flag.freezes.clone() });
        }
        for r in &rules.required_keys {
            let segs: Vec<&str> = r.when.field.split('.').collect();
            if self.schema_at(def, &segs).and_then(|s| s.get("type")).is_none_or(|t| t != "string")
            {
                let msg = format!(
                    "dataRules.requiredKeys: when.field `{}` is not a string",
                    r.when.field
                );
                self.problem(ctx, msg);
            }
            let segs: Vec<&str> = r.map.split('.').collect();
            let base64 = match self.schema_at(def, &segs).and_then(string_map) {
                Some(base64) => base64,
                None => {
                    let msg =
                        format!("dataRules.requiredKeys: `{}` is not a map of strings", r.map);
                    self.problem(ctx, msg);
                    false
                }
            };
            if r.keys.is_empty() || r.keys.iter().any(String::is_empty) {
                self.problem(ctx, "dataRules.requiredKeys: keys must be a non-empty list of names");
            }
            let json = match r.format.as_deref() {
                None => false,
                Some("json") => true,
                Some(other) => {
                    let msg =
                        format!("dataRules.requiredKeys: format `{other}` is not one of: json");
                    self.problem(ctx, msg);
                    false
                }
            };
            out.required_keys.push(RequiredKeys {
                when_field: r.when.field.clone(),
                equals: r.when.equals.clone(),
                map: r.map.clone(),
                base64,
                keys: r.keys.clone(),
                any: r.any,
                non_empty: r.non_empty,
                json,
            });
        }
        out
    }

    fn top_level<'a>(&'a self, def: &'a Value, field: &str) -> Option<&'a Value> {
        if field.is_empty() || field.contains('.') || field == "metadata" {
            return None;
        }
        self.schema_at(def, &[field])
    }

    fn declared(&mut self, ctx: &str, def: &Value, what: &str, field: &str) {
        if self.top_level(def, field).is_none() {
            self.problem(ctx, format!("{what}: `{field}` is not a declared top-level field"));
        }
    }

    /// A top-level map of strings, or a problem.
    fn data_map(&mut self, ctx: &str, def: &Value, what: &str, field: &str) -> Option<DataMap> {
        match self.top_level(def, field).and_then(string_map) {
            Some(base64) => Some(DataMap { field: field.to_string(), base64 }),
            None => {
                self.problem(ctx, format!("{what}: `{field}` is not a top-level map of strings"));
                None
            }
        }
    }
}

/// Whether `schema` is a map of strings, and if so whether they are bytes (`format: byte`).
fn string_map(schema: &Value) -> Option<bool> {
    let values = schema.get("additionalProperties")?;
    (values.get("type")? == "string")
        .then(|| values.get("format").and_then(Value::as_str) == Some("byte"))
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_problem, lower_json};
    use crate::test_doc::TestDoc;
    use serde_json::{json, Value};

    fn with(rules: Value) -> Result<crate::model::Api, Vec<String>> {
        let mut d = TestDoc::new(&["a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        let mut doc = d.build();
        let def = &mut doc["definitions"]["io.a.v1.Thing"];
        let strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
        let bytes = json!({"type": "object",
                           "additionalProperties": {"type": "string", "format": "byte"}});
        def["properties"]["data"] = bytes;
        def["properties"]["text"] = strings.clone();
        def["properties"]["draft"] = strings;
        def["properties"]["type"] = json!({"type": "string"});
        def["properties"]["sealed"] = json!({"type": "boolean"});
        def["x-virt-resource"]["dataRules"] = rules;
        lower_json(doc)
    }

    #[test]
    fn data_rules_are_checked_against_the_schema() {
        let api = with(json!({
            "keyMaps": ["data", "text"],
            "maxTotalSize": {"maps": ["data", "text"], "bytes": 10, "field": "data"},
            "writeOnly": [{"field": "draft", "into": "data"}],
            "immutableAfterCreate": ["type"],
            "immutableFlag": {"field": "sealed", "freezes": ["data", "text"]},
            "requiredKeys": [{"when": {"field": "type", "equals": "t"}, "map": "data",
                              "keys": ["k.json"], "format": "json", "nonEmpty": true},
                             {"when": {"field": "type", "equals": "s"},
                              "map": "text", "keys": ["a", "b"], "any": true}]
        }))
        .unwrap();
        let rules = api.resources[0].data_rules.as_ref().unwrap();
        let maps: Vec<_> = rules.key_maps.iter().map(|m| (m.field.as_str(), m.base64)).collect();
        assert_eq!(maps, [("data", true), ("text", false)]);
        assert!(rules.write_only[0].base64, "draft merges into a byte map");
        assert!(rules.required_keys[0].json && rules.required_keys[0].base64);
        assert!(!rules.required_keys[1].base64 && rules.required_keys[1].any);

        let problems = with(json!({
            "keyMaps": ["data", "data", "type", "nothing"],
            "maxTotalSize": {"maps": [], "bytes": 0, "field": "nowhere"},
            "writeOnly": [{"field": "text", "into": "text"}],
            "immutableAfterCreate": ["metadata"],
            "immutableFlag": {"field": "type", "freezes": ["missing"]},
            "requiredKeys": [{"when": {"field": "sealed", "equals": "x"}, "map": "type",
                              "keys": [], "format": "yaml"}]
        }))
        .unwrap_err();
        for want in [
            "dataRules.keyMaps: `data` is repeated",
            "dataRules.keyMaps: `type` is not a top-level map of strings",
            "dataRules.keyMaps: `nothing` is not a top-level map of strings",
            "dataRules.maxTotalSize: needs maps and a positive bytes",
            "dataRules.maxTotalSize.field `nowhere` is not declared",
            "dataRules.writeOnly: `text` merges into itself",
            "dataRules.immutableAfterCreate: `metadata` is not a declared top-level field",
            "dataRules.immutableFlag.field `type` is not a boolean",
            "dataRules.immutableFlag.freezes: `missing` is not a declared top-level field",
            "dataRules.requiredKeys: when.field `sealed` is not a string",
            "dataRules.requiredKeys: `type` is not a map of strings",
            "dataRules.requiredKeys: keys must be a non-empty list of names",
            "dataRules.requiredKeys: format `yaml` is not one of: json",
        ] {
            assert_problem(&problems, want);
        }
        assert_eq!(problems.len(), 13, "{}", problems.join("\n"));
        assert_problem(
            &with(json!({"keyMaps": ["data"], "extra": 1})).unwrap_err(),
            "unknown field `extra`",
        );
    }
}
