//! An operation's parameters and media types: declared, resolved and fit for what kubectl sends.

use super::Lowering;
use crate::model::STRATEGIC_MERGE_PATCH;
use crate::swagger::{self, Location, Method, Parameter, ParameterOrRef, PARAMETERS_REF};

impl<'d> Lowering<'d> {
    /// Path-level then operation-level parameters, references resolved; the operation's win.
    pub(super) fn parameters(
        &mut self,
        ctx: &str,
        path_level: &'d [ParameterOrRef],
        op_level: &'d [ParameterOrRef],
    ) -> Option<Vec<&'d Parameter>> {
        let mut out: Vec<&'d Parameter> = Vec::new();
        let mut ok = true;
        for p in path_level.iter().chain(op_level) {
            let p = match p {
                ParameterOrRef::Inline(p) => p,
                ParameterOrRef::Ref { reference } => {
                    match reference
                        .strip_prefix(PARAMETERS_REF)
                        .and_then(|n| self.doc.parameters.get(n))
                    {
                        Some(p) => p,
                        None => {
                            self.problem(
                                ctx,
                                format!("parameter `$ref: {reference}` does not resolve"),
                            );
                            ok = false;
                            continue;
                        }
                    }
                }
            };
            out.retain(|q| (q.name.as_str(), q.location) != (p.name.as_str(), p.location));
            out.push(p);
        }
        ok.then_some(out)
    }

    pub(super) fn check_parameters(
        &mut self,
        ctx: &str,
        path_params: &[String],
        params: &[&Parameter],
    ) {
        for name in path_params {
            match params.iter().find(|p| p.location == Location::Path && &p.name == name) {
                None => self.problem(ctx, format!("path parameter `{name}` is not declared")),
                Some(p) if !p.required => {
                    self.problem(ctx, format!("path parameter `{name}` must be required"))
                }
                Some(_) => {}
            }
        }
        let mut bodies = 0;
        for p in params {
            match p.location {
                Location::Path if !path_params.contains(&p.name) => self
                    .problem(ctx, format!("declares path parameter `{}` the path lacks", p.name)),
                Location::Body => {
                    bodies += 1;
                    if p.schema.is_none() {
                        self.problem(ctx, format!("body parameter `{}` has no schema", p.name));
                    }
                }
                Location::FormData => {
                    self.problem(ctx, format!("formData parameter `{}` is not supported", p.name))
                }
                Location::Query | Location::Path | Location::Header => {
                    if p.type_name().is_none() {
                        self.problem(ctx, format!("parameter `{}` has no type", p.name));
                    }
                }
            }
        }
        if bodies > 1 {
            self.problem(ctx, "more than one body parameter");
        }
    }

    /// `consumes` lists strategic merge patches exactly on the PATCH operations of kinds marked
    /// `x-virt-resource.strategicMergePatch`: kubectl sends them to whatever lists them, and
    /// custom resources cannot take them (B.3); a built-in kind must list them, as kube's do.
    pub(super) fn check_strategic_merge_patch(
        &mut self,
        ctx: &str,
        method: Method,
        op: &swagger::Operation,
        takes_it: bool,
    ) {
        let consumes = op.consumes.as_ref().unwrap_or(&self.doc.consumes);
        let listed = consumes.iter().any(|c| c == STRATEGIC_MERGE_PATCH);
        let method = method.as_str();
        if listed && !takes_it {
            let why = if method == "PATCH" {
                " (its kind is not marked x-virt-resource.strategicMergePatch)"
            } else {
                ""
            };
            self.problem(ctx, format!("{method} must not consume {STRATEGIC_MERGE_PATCH}{why}"));
        } else if !listed && takes_it {
            let msg = format!(
                "PATCH must consume {STRATEGIC_MERGE_PATCH} (its kind is marked x-virt-resource.strategicMergePatch)"
            );
            self.problem(ctx, msg);
        }
    }

    pub(super) fn check_consumes(
        &mut self,
        ctx: &str,
        method: Method,
        op: &swagger::Operation,
        params: &[&Parameter],
    ) {
        let consumes = op.consumes.as_ref().unwrap_or(&self.doc.consumes);
        if method != Method::Patch {
            return;
        }
        if consumes.is_empty() {
            self.problem(ctx, "PATCH declares no consumes");
        }
        if !params.iter().any(|p| p.location == Location::Query && p.name == "fieldValidation") {
            // kubectl looks for it to decide server-side field validation (B.7).
            self.problem(ctx, "PATCH must declare the fieldValidation query parameter");
        }
    }
}
