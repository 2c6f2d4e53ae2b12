//! Checks of the document as a whole: its header, its groups and every `$ref`.

use std::collections::HashSet;

use serde_json::Value;

use super::{op_ctx, Lowering};
use crate::swagger::{self, Parameter, ParameterOrRef, DEFINITIONS_REF};

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
