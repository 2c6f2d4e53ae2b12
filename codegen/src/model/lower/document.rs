//! Checks of the document as a whole: its header, its groups, every `$ref`, and the protobuf
//! field numbers (`x-virt-proto-tag`, `x-virt-proto-type`) the server decodes kube's protobuf by.

use std::collections::HashSet;

use serde_json::Value;

use super::{op_ctx, Lowering};
use crate::swagger::{self, Parameter, ParameterOrRef, DEFINITIONS_REF};

/// The messages the server decodes by name rather than by their fields.
const PROTO_TYPES: [&str; 5] = ["time", "micro-time", "raw-json", "quantity", "int-or-string"];

impl<'d> Lowering<'d> {
    pub(super) fn check_document(&mut self) {
        let doc = self.doc;
        if doc.swagger != "2.0" {
            self.problem("document", format!("swagger is `{}`, expected `2.0`", doc.swagger));
        }
        if doc.info.title.is_empty() || doc.info.version.is_empty() {
            self.problem("document", "info.title and info.version must be set");
        }
        if doc.api_groups.is_empty() {
            self.problem("document", "x-virt-api-groups is missing or empty");
        }
        // `""` is the legacy core group, served under `/api` instead of `/apis/<group>`.
        let mut seen = HashSet::new();
        for g in &doc.api_groups {
            if !seen.insert(g.as_str()) {
                self.problem("document", format!("x-virt-api-groups: `{g}` is repeated"));
            }
        }
        self.check_proto_numbers();
    }

    /// Within a definition, protobuf field numbers are positive and unique (as in
    /// `generated.proto`); `x-virt-proto-type` names a message the decoder knows.
    fn check_proto_numbers(&mut self) {
        for (name, def) in &self.doc.definitions {
            let ctx = format!("definition {name}");
            match def.get("x-virt-proto-type") {
                None => {}
                Some(Value::String(t)) if PROTO_TYPES.contains(&t.as_str()) => {}
                Some(other) => self.problem(
                    &ctx,
                    format!("x-virt-proto-type {other} is not one of {}", PROTO_TYPES.join(", ")),
                ),
            }
            let Some(props) = def.get("properties").and_then(Value::as_object) else { continue };
            let mut numbers = HashSet::new();
            // Go's embedded structs: a field number of the definition's own, and the numbers
            // of the properties inside it.
            for e in
                def.get("x-virt-proto-embedded").and_then(Value::as_array).into_iter().flatten()
            {
                let tag = e.get("tag").and_then(Value::as_u64);
                let inner = e.get("properties").and_then(Value::as_object);
                match (tag, inner) {
                    (Some(n), Some(inner)) if numbers.insert(n) => {
                        for p in inner.keys().filter(|p| !props.contains_key(*p)) {
                            let msg = format!("x-virt-proto-embedded {n}: no property {p}");
                            self.problem(&ctx, msg);
                        }
                    }
                    _ => {
                        let msg = "is not {tag, properties} with a tag of its own";
                        self.problem(&ctx, format!("x-virt-proto-embedded entry {e} {msg}"));
                    }
                }
            }
            for (field, prop) in props {
                let Some(tag) = prop.get("x-virt-proto-tag") else { continue };
                match tag.as_u64().filter(|&n| (1..1 << 29).contains(&n)) {
                    Some(n) if numbers.insert(n) => {}
                    Some(n) => {
                        self.problem(&ctx, format!("x-virt-proto-tag {n} is repeated ({field})"))
                    }
                    None => self.problem(
                        &ctx,
                        format!("{field}: x-virt-proto-tag {tag} is not a protobuf field number"),
                    ),
                }
            }
        }
    }

    /// Every `$ref` in the document must point at something that exists.
    pub(super) fn check_refs(&mut self) {
        let doc = self.doc;
        let mut bad: Vec<(String, String)> = Vec::new();
        let mut check = |ctx: &str, v: &Value| {
            swagger::visit_refs(v, &mut |r| {
                let ok = r
                    .strip_prefix(DEFINITIONS_REF)
                    .is_some_and(|name| doc.definitions.contains_key(name));
                if !ok {
                    bad.push((ctx.to_string(), r.to_string()));
                }
            })
        };
        for (name, def) in &doc.definitions {
            check(&format!("definition {name}"), def);
        }
        for (name, p) in &doc.parameters {
            if let Some(s) = &p.schema {
                check(&format!("parameter {name}"), s);
            }
        }
        for (path, item) in &doc.paths {
            for (method, op) in item.operations() {
                let ctx = op_ctx(method, path, op.operation_id.as_deref());
                let inline = item.parameters.iter().chain(&op.parameters);
                for p in inline {
                    if let ParameterOrRef::Inline(Parameter { schema: Some(s), .. }) = p {
                        check(&ctx, s);
                    }
                }
                for r in op.responses.values() {
                    if let Some(s) = &r.schema {
                        check(&ctx, s);
                    }
                }
            }
        }
        for (ctx, r) in bad {
            self.problem(&ctx, format!("`$ref: {r}` does not name a definition"));
        }
    }
}
