//! One operation on its own: its id, its handler name, its method, and what it serves (a verb on
//! a kind, checked against the path's shape, or an `x-virt-handler`).

use super::{op_ctx, DraftHandler, DraftKind, KindDef, Lowering, OpDraft, Owner, PathCtx};
use crate::model::paths::{parse_resource_path, RESOURCE_PATH_SHAPE};
use crate::model::{snake_case, Action, Handler, HANDLER_NAMES};
use crate::swagger::{self, Method};

/// Names the generated module defines besides the handlers.
const RESERVED_FN_NAMES: [&str; 1] = ["configure"];

impl<'d> Lowering<'d> {
    /// Checks one operation on its own; `None` if it cannot be lowered.
    pub(super) fn operation(
        &mut self,
        at: &PathCtx<'d>,
        method: Method,
        op: &'d swagger::Operation,
        defs: &[KindDef<'d>],
    ) -> Option<OpDraft> {
        let (path, item, params) = (at.path, at.item, at.params.as_slice());
        let ctx = op_ctx(method, path, op.operation_id.as_deref());
        let Some(id) = op.operation_id.as_deref().filter(|id| !id.is_empty()) else {
            self.problem(&ctx, "missing operationId");
            return None;
        };
        if let Some(first) = self.seen_ids.insert(id.to_string(), ctx.clone()) {
            self.problem(&ctx, format!("duplicate operationId, also used by {first}"));
            return None;
        }
        let fn_name = snake_case(id);
        if syn::parse_str::<syn::Ident>(&fn_name).is_err()
            || RESERVED_FN_NAMES.contains(&fn_name.as_str())
        {
            let msg = format!("operationId gives `{fn_name}`, not a usable Rust function name");
            self.problem(&ctx, msg);
            return None;
        }
        if let Some(first) = self.seen_fns.insert(fn_name.clone(), ctx.clone()) {
            self.problem(&ctx, format!("handler name `{fn_name}` is also the name of {first}"));
            return None;
        }
        if !matches!(
            method,
            Method::Get | Method::Post | Method::Put | Method::Patch | Method::Delete
        ) {
            self.problem(&ctx, format!("method {} is not served", method.as_str()));
            return None;
        }
        let resolved = self.parameters(&ctx, &item.parameters, &op.parameters)?;
        self.check_parameters(&ctx, params, &resolved);
        self.check_consumes(&ctx, method, op, &resolved);
        let owner = match &op.subresource_of {
            Some(v) => self.subresource_of(&ctx, path, v, op.virt_action.is_some()),
            None => at.owner.clone(),
        };
        if op.api_resources.is_some() && op.handler.as_deref() != Some("apiResources") {
            self.problem(&ctx, "x-virt-api-resources belongs only on an `apiResources` operation");
        }
        if let Some(name) = &op.virt_action {
            if op.action.is_some() || op.handler.is_some() {
                let msg = "has x-virt-action and x-kubernetes-action or x-virt-handler";
                self.problem(&ctx, msg);
                return None;
            }
            let kind = self.action_op(&ctx, path, method, name, &owner, defs)?;
            return Some(OpDraft { method, operation_id: id.to_string(), fn_name, ctx, kind });
        }
        let kind = match (&op.action, &op.handler) {
            (Some(_), Some(_)) => {
                self.problem(&ctx, "has both x-kubernetes-action and x-virt-handler");
                return None;
            }
            (None, None) => {
                self.problem(&ctx, "has neither x-kubernetes-action nor x-virt-handler");
                return None;
            }
            (Some(_), None) => self.resource_op(&ctx, path, method, op, &owner, defs)?,
            (None, Some(handler)) => {
                DraftKind::Handler(self.handler_op(&ctx, path, params, op, handler)?)
            }
        };
        let takes_smp = match &kind {
            DraftKind::Resource { def, .. } => {
                method == Method::Patch
                    && defs[*def].resource.as_ref().is_some_and(|r| r.strategic_merge_patch)
            }
            DraftKind::Handler(_) | DraftKind::Action { .. } => false,
        };
        self.check_strategic_merge_patch(&ctx, method, op, takes_smp);
        Some(OpDraft { method, operation_id: id.to_string(), fn_name, ctx, kind })
    }

    /// A verb on a kind; `owner` is what the operation or its path item declares with
    /// `x-virt-subresource-of`.
    fn resource_op(
        &mut self,
        ctx: &str,
        path: &str,
        method: Method,
        op: &swagger::Operation,
        owner: &Owner,
        defs: &[KindDef<'d>],
    ) -> Option<DraftKind> {
        let action = op.action.as_deref().expect("a resource operation");
        let Some(action) = Action::parse(action) else {
            let known: Vec<_> = Action::ALL.iter().map(|a| a.as_str()).collect();
            self.problem(
                ctx,
                format!("unknown x-kubernetes-action `{action}` (known: {})", known.join(", ")),
            );
            return None;
        };
        let mut ok = true;
        if action.method() != method {
            self.problem(
                ctx,
                format!("action `{}` needs method {}", action.as_str(), action.method().as_str()),
            );
            ok = false;
        }
        let Some(gvk) = &op.gvk else {
            self.problem(ctx, "resource operation without x-kubernetes-group-version-kind");
            return None;
        };
        if let Some(rp) = parse_resource_path(path).filter(|rp| rp.subresource.is_some()) {
            let draft = self.subresource_op(ctx, action, gvk, &rp, owner, defs);
            return draft.filter(|_| ok);
        }
        let gvk_str = format!("{}/{} {}", gvk.group, gvk.version, gvk.kind);
        if !self.doc.api_groups.contains(&gvk.group) {
            self.problem(ctx, format!("group `{}` is not in x-virt-api-groups", gvk.group));
            ok = false;
        }
        let found = defs
            .iter()
            .position(|d| (&d.group, &d.version, &d.kind) == (&gvk.group, &gvk.version, &gvk.kind));
        let Some(def) = found else {
            self.problem(ctx, format!("no definition has GVK {gvk_str}"));
            return None;
        };
        let Some(res) = &defs[def].resource else {
            if !defs[def].has_resource_ext {
                let msg =
                    format!("GVK {gvk_str} names {}, which has no x-virt-resource", defs[def].name);
                self.problem(ctx, msg);
            }
            return None;
        };
        let Some(rp) = parse_resource_path(path) else {
            self.problem(
                ctx,
                format!("resource path does not have the shape {RESOURCE_PATH_SHAPE}"),
            );
            return None;
        };
        if (rp.group, rp.version) != (gvk.group.as_str(), gvk.version.as_str()) {
            self.problem(
                ctx,
                format!("path is under {}/{} but the GVK is {gvk_str}", rp.group, rp.version),
            );
            ok = false;
        }
        if rp.plural != res.plural {
            let msg =
                format!("path names `{}` but {} has plural `{}`", rp.plural, gvk.kind, res.plural);
            self.problem(ctx, msg);
            ok = false;
        }
        if rp.namespaced && !res.namespaced {
            self.problem(
                ctx,
                format!("{} is cluster-scoped but the path has a namespace", gvk.kind),
            );
            ok = false;
        }
        if !rp.namespaced && res.namespaced && !action.spans_namespaces() {
            let msg = format!("{} is namespaced but the path has no namespace", gvk.kind);
            self.problem(ctx, msg);
            ok = false;
        }
        if rp.watch != action.on_watch_path() || rp.named != action.on_item_path() {
            let want = match (action.on_watch_path(), action.on_item_path()) {
                (true, true) => "a /watch/ item path",
                (true, false) => "a /watch/ collection path",
                (false, true) => "an item path",
                (false, false) => "a collection path",
            };
            self.problem(ctx, format!("action `{}` belongs on {want}", action.as_str()));
            ok = false;
        }
        if res.token_request.is_some() && action != Action::Post {
            let msg =
                format!("{} is a create-only token request; only `post` is allowed", gvk.kind);
            self.problem(ctx, msg);
            ok = false;
        }
        ok.then_some(DraftKind::Resource {
            action,
            def,
            namespace: rp.namespaced,
            name: rp.named,
            subresource: None,
        })
    }

    fn handler_op(
        &mut self,
        ctx: &str,
        path: &str,
        params: &[String],
        op: &swagger::Operation,
        handler: &str,
    ) -> Option<DraftHandler> {
        let listed = op.api_resources.clone().unwrap_or_default();
        let core_v3 = path.starts_with("/openapi/v3/api/");
        let want_params: &[&str] = match handler {
            // The core group's documents sit at `/openapi/v3/api/{version}`.
            "openapiV3Document" if core_v3 => &["version"],
            "openapiV3Document" => &["group", "version"],
            _ => &[],
        };
        if HANDLER_NAMES.contains(&handler) && params != want_params {
            let msg =
                format!("handler `{handler}` takes path parameters [{}]", want_params.join(", "));
            self.problem(ctx, msg);
            return None;
        }
        let segs: Vec<&str> = path.trim_end_matches('/').split('/').collect();
        Some(DraftHandler::Plain(match handler {
            "root" => Handler::Root,
            "api" => Handler::Api,
            "apis" => Handler::Apis,
            "version" => Handler::Version,
            "ping" => Handler::Ping,
            "ready" => Handler::Ready,
            "storeProbe" => Handler::StoreProbe,
            "reset" => Handler::Reset,
            "openapiV2" => Handler::OpenapiV2,
            "openapiV3Index" => Handler::OpenapiV3Index,
            "openapiV3Document" => Handler::OpenapiV3Document { core: core_v3 },
            "apiGroup" => match segs.as_slice() {
                ["", "apis", g] => return Some(DraftHandler::ApiGroup { group: g.to_string() }),
                _ => {
                    self.problem(ctx, "handler `apiGroup` needs a path /apis/<group>/");
                    return None;
                }
            },
            "apiResources" => match segs.as_slice() {
                ["", "apis", g, v] => {
                    return Some(DraftHandler::ApiResources {
                        group: g.to_string(),
                        version: v.to_string(),
                        listed,
                    })
                }
                ["", "api", v] => {
                    return Some(DraftHandler::ApiResources {
                        group: String::new(),
                        version: v.to_string(),
                        listed,
                    })
                }
                _ => {
                    self.problem(
                        ctx,
                        "handler `apiResources` needs a path /apis/<group>/<version>/ (or /api/<version>/)",
                    );
                    return None;
                }
            },
            other => {
                let msg = format!(
                    "unknown x-virt-handler `{other}` (known: {})",
                    HANDLER_NAMES.join(", ")
                );
                self.problem(ctx, msg);
                return None;
            }
        }))
    }
}
