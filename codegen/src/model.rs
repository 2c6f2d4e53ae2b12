//! Validates the Swagger document and lowers it into the IR that `emit` and `openapi_v3` read.
//!
//! Lowering never stops at the first problem: every check pushes a message naming the path,
//! method and operationId (or the definition) it is about, and `lower` fails once with all of
//! them, so one build shows everything wrong with the document.

use std::cmp::Ordering;
use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::swagger::{
    self, Document, GroupVersionKind, Location, Method, Parameter, ParameterOrRef, VirtResource,
    DEFINITIONS_REF, PARAMETERS_REF,
};

/// The whole API, validated.
#[derive(Debug, Clone)]
pub struct Api {
    /// `info.title` and `info.version` of the document.
    pub title: String,
    pub version: String,
    /// In `x-virt-api-groups` order.
    pub groups: Vec<Group>,
    /// Groups in order, then versions preferred first, then kinds in `definitions` order.
    pub resources: Vec<Resource>,
    /// One per document path, in document order.
    pub routes: Vec<Route>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub name: String,
    /// Versions that resource paths serve, preferred (= storage) first.
    pub versions: Vec<String>,
}

/// One kind in one version: the IR of `crate::resource::ResourceInfo`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub group: String,
    pub version: String,
    pub storage_version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    /// Discovery verbs in kube's order, derived from the actions the paths offer.
    pub verbs: Vec<&'static str>,
    pub printer_columns: Vec<PrinterColumn>,
    pub token_field: Option<String>,
    /// Whether `/status` paths serve the kind: its main endpoint then leaves status alone.
    pub status_subresource: bool,
    /// Set when `/scale` paths serve the kind: where the Scale's numbers live in the object.
    pub scale: Option<ScalePaths>,
    /// Name of the kind's definition.
    pub definition: String,
}

/// `x-virt-resource.scale`, validated: simple JSON paths such as `.spec.replicas`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i32,
    pub json_path: String,
}

/// One document path: one actix `web::resource`.
#[derive(Debug, Clone)]
pub struct Route {
    /// The path as the document spells it.
    pub path: String,
    /// The patterns to register: the path plus its other spelling where the contract asks for
    /// both (with and without a trailing slash).
    pub patterns: Vec<String>,
    /// Path parameter names in path order.
    pub params: Vec<String>,
    /// For resource paths: the `RESOURCES` index its operations (and 405s) serve.
    pub resource: Option<usize>,
    pub operations: Vec<Operation>,
}

#[derive(Debug, Clone)]
pub struct Operation {
    pub method: Method,
    pub operation_id: String,
    /// The snake_cased operationId: the generated handler's name.
    pub fn_name: String,
    pub kind: OperationKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperationKind {
    /// A generic verb on `RESOURCES[resource]`, or on one of its subresources;
    /// `namespace`/`name` say which path parameters exist.
    Resource {
        action: Action,
        resource: usize,
        namespace: bool,
        name: bool,
        subresource: Option<Subresource>,
    },
    /// A hand-written non-resource handler.
    Handler(Handler),
}

/// `x-kubernetes-action` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    Get,
    List,
    Post,
    Put,
    Patch,
    Delete,
    DeleteCollection,
    Watch,
    WatchList,
}

/// The last segment of a subresource path (`…/{name}/status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Subresource {
    /// The object's `status`, written apart from the rest (B.2).
    Status,
    /// The object's replica count as an `autoscaling/v1` Scale.
    Scale,
}

impl Subresource {
    pub const ALL: [Subresource; 2] = [Subresource::Status, Subresource::Scale];

    pub fn parse(s: &str) -> Option<Subresource> {
        Subresource::ALL.into_iter().find(|r| r.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Subresource::Status => "status",
            Subresource::Scale => "scale",
        }
    }
}

/// What every subresource serves, as a CRD's always do: read, replace and patch.
pub const SUBRESOURCE_ACTIONS: [Action; 3] = [Action::Get, Action::Put, Action::Patch];

/// The GVK `scale` operations carry, whatever the kind: (group, version, kind).
pub const SCALE_GVK: (&str, &str, &str) = ("autoscaling", "v1", "Scale");

/// Discovery verbs in the order kube-apiserver lists them for custom resources.
pub const VERB_ORDER: [&str; 8] =
    ["delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"];

impl Action {
    pub const ALL: [Action; 9] = [
        Action::Get,
        Action::List,
        Action::Post,
        Action::Put,
        Action::Patch,
        Action::Delete,
        Action::DeleteCollection,
        Action::Watch,
        Action::WatchList,
    ];

    pub fn parse(s: &str) -> Option<Action> {
        Action::ALL.into_iter().find(|a| a.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Action::Get => "get",
            Action::List => "list",
            Action::Post => "post",
            Action::Put => "put",
            Action::Patch => "patch",
            Action::Delete => "delete",
            Action::DeleteCollection => "deletecollection",
            Action::Watch => "watch",
            Action::WatchList => "watchlist",
        }
    }

    /// The only method that may carry this action.
    pub fn method(self) -> Method {
        match self {
            Action::Get | Action::List | Action::Watch | Action::WatchList => Method::Get,
            Action::Post => Method::Post,
            Action::Put => Method::Put,
            Action::Patch => Method::Patch,
            Action::Delete | Action::DeleteCollection => Method::Delete,
        }
    }

    /// The discovery verb this action grants.
    pub fn verb(self) -> &'static str {
        match self {
            Action::Get => "get",
            Action::List => "list",
            Action::Post => "create",
            Action::Put => "update",
            Action::Patch => "patch",
            Action::Delete => "delete",
            Action::DeleteCollection => "deletecollection",
            Action::Watch | Action::WatchList => "watch",
        }
    }

    /// Whether the path is under `/watch/`.
    fn on_watch_path(self) -> bool {
        matches!(self, Action::Watch | Action::WatchList)
    }

    /// Whether the path ends in `{name}`.
    fn on_item_path(self) -> bool {
        matches!(self, Action::Get | Action::Put | Action::Patch | Action::Delete | Action::Watch)
    }

    /// Whether a namespaced kind may serve this action without a namespace segment.
    fn spans_namespaces(self) -> bool {
        matches!(self, Action::List | Action::WatchList)
    }
}

/// `x-virt-handler` values, resolved against the groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Handler {
    Root,
    Api,
    Apis,
    /// `/apis/<group>/`: `GROUPS[group]`.
    ApiGroup {
        group: usize,
    },
    /// `/apis/<group>/<version>/`.
    ApiResources {
        group: usize,
        version: String,
    },
    Version,
    Ping,
    StoreProbe,
    OpenapiV2,
    OpenapiV3Index,
    /// `/openapi/v3/apis/{group}/{version}`.
    OpenapiV3Document,
}

/// The handler names `x-virt-handler` accepts.
pub const HANDLER_NAMES: [&str; 11] = [
    "root",
    "api",
    "apis",
    "apiGroup",
    "apiResources",
    "version",
    "ping",
    "storeProbe",
    "openapiV2",
    "openapiV3Index",
    "openapiV3Document",
];

/// Media type PATCH must never offer: kubectl would then send strategic merge patches (B.3).
pub const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";

/// Names the generated module defines besides the handlers.
const RESERVED_FN_NAMES: [&str; 1] = ["configure"];

/// Orders versions as kube-apiserver does (`version.CompareKubeAwareVersionStrings`): GA before
/// beta before alpha, higher major then higher minor first, then non-kube-like strings
/// alphabetically. `Less` means "preferred".
pub fn compare_versions(a: &str, b: &str) -> Ordering {
    fn parse(v: &str) -> Option<(u8, u64, u64)> {
        let rest = v.strip_prefix('v')?;
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if digits == 0 || rest.starts_with('0') {
            return None;
        }
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        if tail.is_empty() {
            return Some((0, major, 0));
        }
        let (stability, minor) = if let Some(m) = tail.strip_prefix("beta") {
            (1, m)
        } else if let Some(m) = tail.strip_prefix("alpha") {
            (2, m)
        } else {
            return None;
        };
        if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some((stability, major, minor.parse().ok()?))
    }
    match (parse(a), parse(b)) {
        (Some((sa, ma, na)), Some((sb, mb, nb))) => sa.cmp(&sb).then(mb.cmp(&ma)).then(nb.cmp(&na)),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// The snake_case form of an operationId (`listZooExampleIoV1NamespacedAnimal` →
/// `list_zoo_example_io_v1_namespaced_animal`); acronyms stay together
/// (`readAPIKey` → `read_api_key`).
pub fn snake_case(id: &str) -> String {
    let chars: Vec<char> = id.chars().collect();
    let mut out = String::with_capacity(id.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() {
            let prev = i.checked_sub(1).map(|j| chars[j]);
            let next = chars.get(i + 1).copied();
            let boundary = match prev {
                Some(p) if p.is_ascii_lowercase() || p.is_ascii_digit() => true,
                Some(p) if p.is_ascii_uppercase() => next.is_some_and(|n| n.is_ascii_lowercase()),
                _ => false,
            };
            if boundary && !out.ends_with('_') {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out
}

/// The `{param}` names of a path, in order; `Err` for unbalanced braces.
pub fn path_params(path: &str) -> Result<Vec<String>, String> {
    let mut params = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find(['{', '}']) {
        if rest.as_bytes()[open] == b'}' {
            return Err("`}` without `{`".into());
        }
        let after = &rest[open + 1..];
        let close = after.find('}').ok_or("`{` without `}`")?;
        let name = &after[..close];
        if name.is_empty() || name.contains('{') {
            return Err(format!("bad parameter `{{{name}}}`"));
        }
        params.push(name.to_string());
        rest = &after[close + 1..];
    }
    Ok(params)
}

/// A resource path taken apart:
/// `/apis/<group>/<version>/[watch/][namespaces/{namespace}/]<plural>[/{name}[/<subresource>]]`.
#[derive(Debug, PartialEq, Eq)]
struct ResourcePath<'a> {
    group: &'a str,
    version: &'a str,
    watch: bool,
    namespaced: bool,
    plural: &'a str,
    named: bool,
    /// The segment after `{name}`, not yet checked against the known subresources.
    subresource: Option<&'a str>,
}

const RESOURCE_PATH_SHAPE: &str =
    "/apis/<group>/<version>/[watch/][namespaces/{namespace}/]<plural>[/{name}[/<subresource>]]";

fn parse_resource_path(path: &str) -> Option<ResourcePath<'_>> {
    let segs: Vec<&str> = path.strip_prefix("/apis/")?.split('/').collect();
    let (group, version, mut rest) = match segs.as_slice() {
        [g, v, rest @ ..] if !rest.is_empty() => (*g, *v, rest),
        _ => return None,
    };
    let watch = rest.first() == Some(&"watch");
    if watch {
        rest = &rest[1..];
    }
    let namespaced = rest.len() >= 3 && rest[0] == "namespaces";
    if namespaced {
        if rest[1] != "{namespace}" {
            return None;
        }
        rest = &rest[2..];
    }
    let (plural, named, subresource) = match rest {
        [p] => (*p, false, None),
        [p, "{name}"] => (*p, true, None),
        // Subresources have no watch paths.
        [p, "{name}", s] if !watch => (*p, true, Some(*s)),
        _ => return None,
    };
    let literal = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
    };
    if !literal(group) || !literal(version) || !literal(plural) || !subresource.is_none_or(literal)
    {
        return None;
    }
    Some(ResourcePath { group, version, watch, namespaced, plural, named, subresource })
}

/// Lowers `doc`, or returns every problem found.
pub fn lower(doc: &Document) -> Result<Api, Vec<String>> {
    let mut l =
        Lowering { doc, problems: Vec::new(), seen_ids: HashMap::new(), seen_fns: HashMap::new() };
    let api = l.run();
    if l.problems.is_empty() {
        Ok(api)
    } else {
        Err(l.problems)
    }
}

struct Lowering<'d> {
    doc: &'d Document,
    problems: Vec<String>,
    /// operationId and handler name → the operation that took it first.
    seen_ids: HashMap<String, String>,
    seen_fns: HashMap<String, String>,
}

/// A definition that names a GVK.
struct KindDef<'d> {
    name: &'d str,
    group: String,
    version: String,
    kind: String,
    /// Parsed `x-virt-resource`, when present and valid.
    resource: Option<VirtResource>,
    /// Whether it carried an `x-virt-resource` at all (valid or not).
    has_resource_ext: bool,
}

/// An operation that passed its own checks; groups and resources are resolved later.
struct OpDraft {
    method: Method,
    operation_id: String,
    fn_name: String,
    ctx: String,
    kind: DraftKind,
}

enum DraftKind {
    Resource {
        action: Action,
        def: usize,
        namespace: bool,
        name: bool,
        subresource: Option<Subresource>,
    },
    Handler(DraftHandler),
}

enum DraftHandler {
    Plain(Handler),
    ApiGroup { group: String },
    ApiResources { group: String, version: String },
}

struct RouteDraft<'d> {
    path: &'d str,
    params: Vec<String>,
    ops: Vec<OpDraft>,
}

fn op_ctx(method: Method, path: &str, operation_id: Option<&str>) -> String {
    match operation_id {
        Some(id) => format!("{} {path} ({id})", method.as_str()),
        None => format!("{} {path} (no operationId)", method.as_str()),
    }
}

impl<'d> Lowering<'d> {
    fn problem(&mut self, ctx: &str, msg: impl std::fmt::Display) {
        self.problems.push(format!("{ctx}: {msg}"));
    }

    fn run(&mut self) -> Api {
        let doc = self.doc;
        self.check_document();
        let defs = self.kind_definitions();
        self.check_refs();
        let mut routes = Vec::new();
        for (path, item) in &doc.paths {
            let params = match path_params(path) {
                Ok(p) => p,
                Err(e) => {
                    self.problem(&format!("path {path}"), e);
                    continue;
                }
            };
            let ops: Vec<OpDraft> = item
                .operations()
                .filter_map(|(method, op)| self.operation(path, item, &params, method, op, &defs))
                .collect();
            self.check_route_mix(path, &ops, &defs);
            routes.push(RouteDraft { path, params, ops });
        }
        let groups = self.groups(&defs, &routes);
        let (resources, def_to_resource) = self.resources(&defs, &groups, &routes);
        let routes = self.routes(routes, &groups, &def_to_resource);
        Api {
            title: doc.info.title.clone(),
            version: doc.info.version.clone(),
            groups,
            resources,
            routes,
        }
    }

    /// Checks one operation on its own; `None` if it cannot be lowered.
    fn operation(
        &mut self,
        path: &str,
        item: &'d swagger::PathItem,
        params: &[String],
        method: Method,
        op: &'d swagger::Operation,
        defs: &[KindDef<'d>],
    ) -> Option<OpDraft> {
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
        let kind = match (&op.action, &op.handler) {
            (Some(_), Some(_)) => {
                self.problem(&ctx, "has both x-kubernetes-action and x-virt-handler");
                return None;
            }
            (None, None) => {
                self.problem(&ctx, "has neither x-kubernetes-action nor x-virt-handler");
                return None;
            }
            (Some(action), None) => self.resource_op(&ctx, path, method, action, op, defs)?,
            (None, Some(handler)) => {
                DraftKind::Handler(self.handler_op(&ctx, path, params, handler)?)
            }
        };
        Some(OpDraft { method, operation_id: id.to_string(), fn_name, ctx, kind })
    }

    fn check_document(&mut self) {
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
        let mut seen = HashSet::new();
        for g in &doc.api_groups {
            if g.is_empty() || !seen.insert(g.as_str()) {
                self.problem("document", format!("x-virt-api-groups: `{g}` is empty or repeated"));
            }
        }
    }

    /// Every definition carrying a GVK, with its `x-virt-resource` parsed.
    fn kind_definitions(&mut self) -> Vec<KindDef<'d>> {
        let mut defs: Vec<KindDef<'d>> = Vec::new();
        for (name, def) in &self.doc.definitions {
            let ctx = format!("definition {name}");
            let ext = def.get("x-virt-resource");
            let gvks = match def.get("x-kubernetes-group-version-kind") {
                None => {
                    if ext.is_some() {
                        self.problem(
                            &ctx,
                            "x-virt-resource without x-kubernetes-group-version-kind",
                        );
                    }
                    continue;
                }
                Some(v) => {
                    match serde_json::from_value::<Vec<swagger::GroupVersionKind>>(v.clone()) {
                        Ok(g) => g,
                        Err(e) => {
                            self.problem(&ctx, format!("bad x-kubernetes-group-version-kind: {e}"));
                            continue;
                        }
                    }
                }
            };
            if ext.is_some() && gvks.len() != 1 {
                self.problem(&ctx, "a kind with x-virt-resource must name exactly one GVK");
                continue;
            }
            let resource =
                ext.and_then(|v| match serde_json::from_value::<VirtResource>(v.clone()) {
                    Ok(r) => Some(r),
                    Err(e) => {
                        self.problem(&ctx, format!("bad x-virt-resource: {e}"));
                        None
                    }
                });
            if let Some(r) = &resource {
                self.check_virt_resource(&ctx, r);
            }
            for gvk in gvks {
                if let Some(other) = defs.iter().find(|d| {
                    (&d.group, &d.version, &d.kind) == (&gvk.group, &gvk.version, &gvk.kind)
                }) {
                    let msg = format!(
                        "GVK {}/{} {} is also claimed by {}",
                        gvk.group, gvk.version, gvk.kind, other.name
                    );
                    self.problem(&ctx, msg);
                    continue;
                }
                defs.push(KindDef {
                    name,
                    group: gvk.group,
                    version: gvk.version,
                    kind: gvk.kind,
                    resource: resource.clone(),
                    has_resource_ext: ext.is_some(),
                });
            }
        }
        defs
    }

    fn check_virt_resource(&mut self, ctx: &str, r: &VirtResource) {
        let is_name = |s: &str| {
            !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        };
        if !is_name(&r.plural) {
            self.problem(
                ctx,
                format!("x-virt-resource.plural `{}` is not a lower-case name", r.plural),
            );
        }
        if let Some(s) = &r.singular {
            if !is_name(s) {
                self.problem(
                    ctx,
                    format!("x-virt-resource.singular `{s}` is not a lower-case name"),
                );
            }
        }
        for c in &r.printer_columns {
            if !["string", "integer", "number", "boolean", "date"].contains(&c.type_.as_str()) {
                self.problem(
                    ctx,
                    format!("printer column `{}` has unknown type `{}`", c.name, c.type_),
                );
            }
            if c.priority < 0 {
                self.problem(
                    ctx,
                    format!("printer column `{}`: priority must be non-negative", c.name),
                );
            }
            if !c.json_path.starts_with('.') {
                self.problem(
                    ctx,
                    format!("printer column `{}`: jsonPath must start with `.`", c.name),
                );
            }
        }
        if let Some(t) = &r.token_request {
            if t.field.is_empty() || t.field.split('.').any(str::is_empty) {
                self.problem(ctx, format!("tokenRequest.field `{}` is not a dotted path", t.field));
            }
        }
        if let Some(s) = &r.scale {
            // The CRD rules: simple JSON paths (no array notation) under the given roots.
            let paths = [
                ("specReplicasPath", Some(&s.spec_replicas_path), &["spec"][..]),
                ("statusReplicasPath", Some(&s.status_replicas_path), &["status"][..]),
                ("labelSelectorPath", s.label_selector_path.as_ref(), &["spec", "status"][..]),
            ];
            for (field, path, roots) in paths {
                let Some(path) = path else { continue };
                let segs: Vec<&str> = path.strip_prefix('.').unwrap_or("").split('.').collect();
                let simple = segs.len() >= 2
                    && roots.contains(&segs[0])
                    && segs.iter().all(|s| !s.is_empty() && !s.contains(['[', ']', '*', ' ']));
                if !simple {
                    let under: Vec<String> = roots.iter().map(|r| format!(".{r}")).collect();
                    let msg = format!(
                        "scale.{field} `{path}` is not a simple JSON path under {}",
                        under.join(" or ")
                    );
                    self.problem(ctx, msg);
                }
            }
        }
    }

    /// Every `$ref` in the document must point at something that exists.
    fn check_refs(&mut self) {
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

    /// Path-level then operation-level parameters, references resolved; the operation's win.
    fn parameters(
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

    fn check_parameters(&mut self, ctx: &str, path_params: &[String], params: &[&Parameter]) {
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

    fn check_consumes(
        &mut self,
        ctx: &str,
        method: Method,
        op: &swagger::Operation,
        params: &[&Parameter],
    ) {
        let consumes = op.consumes.as_ref().unwrap_or(&self.doc.consumes);
        if consumes.iter().any(|c| c == STRATEGIC_MERGE_PATCH) {
            // kubectl would then send strategic merge patches, which CRs cannot take (B.3).
            self.problem(
                ctx,
                format!("{} must not consume {STRATEGIC_MERGE_PATCH}", method.as_str()),
            );
        }
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

    fn resource_op(
        &mut self,
        ctx: &str,
        path: &str,
        method: Method,
        action: &str,
        op: &swagger::Operation,
        defs: &[KindDef<'d>],
    ) -> Option<DraftKind> {
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
            return self.subresource_op(ctx, action, gvk, &rp, defs, ok);
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

    /// An operation on `…/{name}/<subresource>`. The path names the kind (scale operations carry
    /// autoscaling's GVK, not the kind's), as a CRD's subresources belong to the CRD.
    fn subresource_op(
        &mut self,
        ctx: &str,
        action: Action,
        gvk: &GroupVersionKind,
        rp: &ResourcePath<'_>,
        defs: &[KindDef<'d>],
        mut ok: bool,
    ) -> Option<DraftKind> {
        let raw = rp.subresource.expect("a subresource path");
        let Some(sub) = Subresource::parse(raw) else {
            let known: Vec<_> = Subresource::ALL.iter().map(|s| s.as_str()).collect();
            self.problem(ctx, format!("unknown subresource `{raw}` (known: {})", known.join(", ")));
            return None;
        };
        let found = defs.iter().position(|d| {
            (d.group.as_str(), d.version.as_str()) == (rp.group, rp.version)
                && d.resource.as_ref().is_some_and(|r| r.plural == rp.plural)
        });
        let Some(def) = found else {
            let msg = format!("no kind of {}/{} has plural `{}`", rp.group, rp.version, rp.plural);
            self.problem(ctx, msg);
            return None;
        };
        let d = &defs[def];
        let res = d.resource.as_ref().expect("found by its x-virt-resource");
        let want = match sub {
            Subresource::Status => (d.group.as_str(), d.version.as_str(), d.kind.as_str()),
            Subresource::Scale => SCALE_GVK,
        };
        if (gvk.group.as_str(), gvk.version.as_str(), gvk.kind.as_str()) != want {
            let msg = format!(
                "`{}` operations carry the GVK {}/{} {}, not {}/{} {}",
                sub.as_str(),
                want.0,
                want.1,
                want.2,
                gvk.group,
                gvk.version,
                gvk.kind
            );
            self.problem(ctx, msg);
            ok = false;
        }
        if !SUBRESOURCE_ACTIONS.contains(&action) {
            let msg = format!(
                "the `{}` subresource serves only get, put and patch, not `{}`",
                sub.as_str(),
                action.as_str()
            );
            self.problem(ctx, msg);
            ok = false;
        }
        if sub == Subresource::Scale && res.scale.is_none() {
            self.problem(ctx, format!("`scale` needs x-virt-resource.scale on {}", d.name));
            ok = false;
        }
        if res.token_request.is_some() {
            let msg = format!("{} is a create-only token request; only `post` is allowed", d.kind);
            self.problem(ctx, msg);
            ok = false;
        }
        if rp.namespaced && !res.namespaced {
            let msg = format!("{} is cluster-scoped but the path has a namespace", d.kind);
            self.problem(ctx, msg);
            ok = false;
        }
        if !rp.namespaced && res.namespaced {
            let msg = format!("{} is namespaced but the path has no namespace", d.kind);
            self.problem(ctx, msg);
            ok = false;
        }
        ok.then_some(DraftKind::Resource {
            action,
            def,
            namespace: rp.namespaced,
            name: true,
            subresource: Some(sub),
        })
    }

    fn handler_op(
        &mut self,
        ctx: &str,
        path: &str,
        params: &[String],
        handler: &str,
    ) -> Option<DraftHandler> {
        let want_params: &[&str] =
            if handler == "openapiV3Document" { &["group", "version"] } else { &[] };
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
            "storeProbe" => Handler::StoreProbe,
            "openapiV2" => Handler::OpenapiV2,
            "openapiV3Index" => Handler::OpenapiV3Index,
            "openapiV3Document" => Handler::OpenapiV3Document,
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
                    })
                }
                _ => {
                    self.problem(
                        ctx,
                        "handler `apiResources` needs a path /apis/<group>/<version>/",
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

    /// One path serves one kind in one version, or only non-resource handlers.
    fn check_route_mix(&mut self, path: &str, ops: &[OpDraft], defs: &[KindDef<'d>]) {
        let mut kinds = Vec::new();
        let mut handlers = false;
        for op in ops {
            match &op.kind {
                DraftKind::Resource { def, .. } => {
                    if !kinds.contains(def) {
                        kinds.push(*def);
                    }
                }
                DraftKind::Handler(_) => handlers = true,
            }
        }
        if handlers && !kinds.is_empty() {
            self.problem(
                &format!("path {path}"),
                "mixes resource operations and x-virt-handler operations",
            );
        }
        if kinds.len() > 1 {
            let names: Vec<_> = kinds.iter().map(|&d| defs[d].name).collect();
            self.problem(
                &format!("path {path}"),
                format!("serves several kinds: {}", names.join(", ")),
            );
        }
    }

    /// Groups in `x-virt-api-groups` order with the versions their resource paths serve.
    fn groups(&mut self, defs: &[KindDef<'d>], routes: &[RouteDraft<'d>]) -> Vec<Group> {
        let mut groups: Vec<Group> = self
            .doc
            .api_groups
            .iter()
            .map(|g| Group { name: g.clone(), versions: Vec::new() })
            .collect();
        for op in routes.iter().flat_map(|r| &r.ops) {
            if let DraftKind::Resource { def, .. } = op.kind {
                let d = &defs[def];
                if let Some(g) = groups.iter_mut().find(|g| g.name == d.group) {
                    if !g.versions.contains(&d.version) {
                        g.versions.push(d.version.clone());
                    }
                }
            }
        }
        for g in &mut groups {
            g.versions.sort_by(|a, b| compare_versions(a, b));
        }
        for g in &groups {
            if g.versions.is_empty() {
                self.problem(
                    &format!("group {}", g.name),
                    "no resource path serves any version of it",
                );
            }
        }
        groups
    }

    /// The `RESOURCES` table, and for each definition index its entry.
    fn resources(
        &mut self,
        defs: &[KindDef<'d>],
        groups: &[Group],
        routes: &[RouteDraft<'d>],
    ) -> (Vec<Resource>, HashMap<usize, usize>) {
        // Discovery verbs come from the main resource's actions only.
        let mut actions: HashMap<usize, HashSet<Action>> = HashMap::new();
        let mut sub_actions: HashMap<(usize, Subresource), HashSet<Action>> = HashMap::new();
        for op in routes.iter().flat_map(|r| &r.ops) {
            if let DraftKind::Resource { action, def, subresource, .. } = op.kind {
                match subresource {
                    None => actions.entry(def).or_default().insert(action),
                    Some(s) => sub_actions.entry((def, s)).or_default().insert(action),
                };
            }
        }
        for (i, d) in defs.iter().enumerate() {
            if d.resource.is_some() && !actions.contains_key(&i) {
                self.problem(
                    &format!("definition {}", d.name),
                    "has x-virt-resource but no path serves it",
                );
            }
        }
        let mut served: Vec<_> = sub_actions.iter().collect();
        served.sort_by_key(|(k, _)| **k);
        for ((def, sub), acts) in served {
            let missing: Vec<_> = SUBRESOURCE_ACTIONS
                .iter()
                .filter(|a| !acts.contains(a))
                .map(|a| a.as_str())
                .collect();
            if !missing.is_empty() {
                let msg = format!(
                    "the `{}` subresource must serve get, put and patch; missing: {}",
                    sub.as_str(),
                    missing.join(", ")
                );
                self.problem(&format!("definition {}", defs[*def].name), msg);
            }
        }
        for (i, d) in defs.iter().enumerate() {
            let declares_scale = d.resource.as_ref().is_some_and(|r| r.scale.is_some());
            if declares_scale
                && actions.contains_key(&i)
                && !sub_actions.contains_key(&(i, Subresource::Scale))
            {
                self.problem(
                    &format!("definition {}", d.name),
                    "has x-virt-resource.scale but no path serves its `scale` subresource",
                );
            }
        }
        let mut resources = Vec::new();
        let mut index = HashMap::new();
        for g in groups {
            for v in &g.versions {
                for (i, d) in defs.iter().enumerate() {
                    if d.group != g.name || &d.version != v {
                        continue;
                    }
                    let (Some(r), Some(acts)) = (&d.resource, actions.get(&i)) else { continue };
                    let list_kind = format!("{}List", d.kind);
                    let lists =
                        acts.contains(&Action::List) || acts.contains(&Action::DeleteCollection);
                    if lists
                        && !defs
                            .iter()
                            .any(|l| (&l.group, &l.version, &l.kind) == (&d.group, v, &list_kind))
                    {
                        let msg = format!("no definition has GVK {}/{v} {list_kind}", d.group);
                        self.problem(&format!("definition {}", d.name), msg);
                    }
                    let verbs = VERB_ORDER
                        .into_iter()
                        .filter(|verb| acts.iter().any(|a| a.verb() == *verb))
                        .collect();
                    index.insert(i, resources.len());
                    resources.push(Resource {
                        group: g.name.clone(),
                        version: v.clone(),
                        storage_version: g.versions[0].clone(),
                        kind: d.kind.clone(),
                        list_kind,
                        plural: r.plural.clone(),
                        singular: r.singular.clone().unwrap_or_else(|| d.kind.to_lowercase()),
                        namespaced: r.namespaced,
                        short_names: r.short_names.clone(),
                        categories: r.categories.clone(),
                        verbs,
                        printer_columns: r
                            .printer_columns
                            .iter()
                            .map(|c| PrinterColumn {
                                name: c.name.clone(),
                                type_: c.type_.clone(),
                                format: c.format.clone(),
                                description: c.description.clone(),
                                priority: c.priority,
                                json_path: c.json_path.clone(),
                            })
                            .collect(),
                        token_field: r.token_request.as_ref().map(|t| t.field.clone()),
                        status_subresource: sub_actions.contains_key(&(i, Subresource::Status)),
                        scale: r
                            .scale
                            .as_ref()
                            .filter(|_| sub_actions.contains_key(&(i, Subresource::Scale)))
                            .map(|s| ScalePaths {
                                spec_replicas: s.spec_replicas_path.clone(),
                                status_replicas: s.status_replicas_path.clone(),
                                label_selector: s.label_selector_path.clone(),
                            }),
                        definition: d.name.to_string(),
                    });
                }
            }
        }
        self.check_resources(&resources);
        (resources, index)
    }

    /// Facts that must hold across the versions of a kind, and between kinds of a group.
    fn check_resources(&mut self, resources: &[Resource]) {
        for (i, r) in resources.iter().enumerate() {
            let ctx = format!("definition {}", r.definition);
            // Storage is shared by the versions of a group and keyed by group and plural.
            let same_group = resources[..i].iter().filter(|o| o.group == r.group);
            for other in same_group {
                let same_kind = other.kind == r.kind;
                if same_kind
                    && (other.plural != r.plural
                        || other.singular != r.singular
                        || other.namespaced != r.namespaced
                        || other.token_field != r.token_field)
                {
                    let msg = format!(
                        "plural, singular, scope and tokenRequest must match {} (same kind)",
                        other.definition
                    );
                    self.problem(&ctx, msg);
                    break;
                }
                if same_kind
                    && (other.status_subresource != r.status_subresource || other.scale != r.scale)
                {
                    // The versions share storage, so they must agree on who may write status.
                    let msg = format!(
                        "status and scale subresources must match {} (same kind)",
                        other.definition
                    );
                    self.problem(&ctx, msg);
                    break;
                }
                if !same_kind && other.plural == r.plural {
                    let msg = format!("plural `{}` is also used by {}", r.plural, other.definition);
                    self.problem(&ctx, msg);
                    break;
                }
            }
            let in_storage_version = resources
                .iter()
                .any(|o| o.group == r.group && o.kind == r.kind && o.version == o.storage_version);
            if !in_storage_version {
                let msg = format!(
                    "{} is not served in {}/{}, the group's preferred (storage) version",
                    r.kind, r.group, r.storage_version
                );
                self.problem(&ctx, msg);
            }
        }
    }

    fn routes(
        &mut self,
        drafts: Vec<RouteDraft<'d>>,
        groups: &[Group],
        def_to_resource: &HashMap<usize, usize>,
    ) -> Vec<Route> {
        let mut routes = Vec::new();
        let mut group_paths = vec![false; groups.len()];
        let mut version_paths: HashSet<(usize, String)> = HashSet::new();
        for draft in drafts {
            let mut ops = Vec::new();
            let mut resource = None;
            let mut discovery_root = false;
            for op in draft.ops {
                let kind = match op.kind {
                    DraftKind::Resource { action, def, namespace, name, subresource } => {
                        let Some(&r) = def_to_resource.get(&def) else { continue };
                        resource = Some(r);
                        OperationKind::Resource {
                            action,
                            resource: r,
                            namespace,
                            name,
                            subresource,
                        }
                    }
                    DraftKind::Handler(DraftHandler::Plain(h)) => {
                        discovery_root |= matches!(h, Handler::Api | Handler::Apis);
                        OperationKind::Handler(h)
                    }
                    DraftKind::Handler(DraftHandler::ApiGroup { group }) => {
                        let Some(g) = groups.iter().position(|x| x.name == group) else {
                            self.problem(
                                &op.ctx,
                                format!("group `{group}` is not in x-virt-api-groups"),
                            );
                            continue;
                        };
                        group_paths[g] = true;
                        OperationKind::Handler(Handler::ApiGroup { group: g })
                    }
                    DraftKind::Handler(DraftHandler::ApiResources { group, version }) => {
                        let Some(g) = groups.iter().position(|x| x.name == group) else {
                            self.problem(
                                &op.ctx,
                                format!("group `{group}` is not in x-virt-api-groups"),
                            );
                            continue;
                        };
                        if !groups[g].versions.contains(&version) {
                            let msg =
                                format!("no resource path serves version `{version}` of {group}");
                            self.problem(&op.ctx, msg);
                            continue;
                        }
                        version_paths.insert((g, version.clone()));
                        OperationKind::Handler(Handler::ApiResources { group: g, version })
                    }
                };
                ops.push(Operation {
                    method: op.method,
                    operation_id: op.operation_id,
                    fn_name: op.fn_name,
                    kind,
                });
            }
            if ops.is_empty() {
                // Nothing to serve (every operation failed, or the path item had none).
                continue;
            }
            let path = draft.path.to_string();
            let mut patterns = vec![path.clone()];
            if path.len() > 1 && path.ends_with('/') {
                patterns.push(path.trim_end_matches('/').to_string());
            } else if discovery_root && !path.ends_with('/') {
                // kube serves the discovery roots under both spellings.
                patterns.push(format!("{path}/"));
            }
            routes.push(Route { path, patterns, params: draft.params, resource, operations: ops });
        }
        for (g, group) in groups.iter().enumerate() {
            if !group_paths[g] {
                self.problem(
                    &format!("group {}", group.name),
                    "no path has x-virt-handler `apiGroup` for it",
                );
            }
            for v in &group.versions {
                if !version_paths.contains(&(g, v.clone())) {
                    let msg = format!("no path has x-virt-handler `apiResources` for version {v}");
                    self.problem(&format!("group {}", group.name), msg);
                }
            }
        }
        let mut seen: HashMap<&str, &str> = HashMap::new();
        let mut clashes = Vec::new();
        for r in &routes {
            for p in &r.patterns {
                if let Some(first) = seen.insert(p, &r.path) {
                    clashes.push(format!(
                        "path {}: is also registered as `{p}` by path {first}",
                        r.path
                    ));
                }
            }
        }
        self.problems.extend(clashes);
        routes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_doc::TestDoc;

    fn lower_json(v: Value) -> Result<Api, Vec<String>> {
        lower(&serde_json::from_value(v).unwrap())
    }

    fn assert_problem(problems: &[String], needle: &str) {
        assert!(
            problems.iter().any(|p| p.contains(needle)),
            "no problem containing {needle:?} in:\n{}",
            problems.join("\n")
        );
    }

    #[test]
    fn version_order_is_kube_priority() {
        let mut v = vec![
            "v1alpha1", "v1beta1", "foo", "v2", "v1", "v1alpha3", "v1beta2", "v2alpha1", "v10",
            "v1alpha2",
        ];
        v.sort_by(|a, b| compare_versions(a, b));
        assert_eq!(
            v,
            [
                "v10", "v2", "v1", "v1beta2", "v1beta1", "v2alpha1", "v1alpha3", "v1alpha2",
                "v1alpha1", "foo"
            ]
        );
    }

    #[test]
    fn snake_cases_operation_ids() {
        assert_eq!(
            snake_case("listZooExampleIoV1NamespacedAnimalKeeper"),
            "list_zoo_example_io_v1_namespaced_animal_keeper"
        );
        assert_eq!(
            snake_case("readZooExampleIoV1beta1NamespacedAPIKey"),
            "read_zoo_example_io_v1beta1_namespaced_api_key"
        );
        assert_eq!(snake_case("getAPIVersions"), "get_api_versions");
        assert_eq!(snake_case("getCodeVersion"), "get_code_version");
        assert_eq!(snake_case("v3Index"), "v3_index");
    }

    #[test]
    fn path_params_in_order() {
        assert_eq!(path_params("/a/{namespace}/b/{name}").unwrap(), ["namespace", "name"]);
        assert!(path_params("/a/{x").is_err());
        assert!(path_params("/a/x}").is_err());
    }

    #[test]
    fn resource_path_shapes() {
        let p = parse_resource_path("/apis/g.io/v1/watch/namespaces/{namespace}/things/{name}")
            .unwrap();
        assert_eq!(
            p,
            ResourcePath {
                group: "g.io",
                version: "v1",
                watch: true,
                namespaced: true,
                plural: "things",
                named: true,
                subresource: None,
            }
        );
        let p = parse_resource_path("/apis/g.io/v1/things").unwrap();
        assert!(!p.watch && !p.namespaced && !p.named);
        let p = parse_resource_path("/apis/g.io/v1/namespaces/{namespace}/things/{name}/scale")
            .unwrap();
        assert!(p.namespaced && p.named && p.subresource == Some("scale"));
        assert!(parse_resource_path("/apis/g.io/v1/watch/things/{name}/status").is_none());
        assert!(parse_resource_path("/apis/g.io/v1/things/{name}/status/x").is_none());
        assert!(parse_resource_path("/apis/g.io/v1/things/{name}/{x}").is_none());
        assert!(parse_resource_path("/apis/g.io/v1/namespaces/{ns}/things").is_none());
        assert!(parse_resource_path("/api/v1/things").is_none());
    }

    #[test]
    fn lowers_groups_resources_and_routes() {
        let mut d = TestDoc::new(&["a.io", "b.io"]);
        d.kind("a.io", "v1beta1", "Thing", "things", true);
        d.kind("a.io", "v1", "Thing", "things", true);
        d.kind("a.io", "v1", "Gizmo", "gizmos", false);
        d.token_kind("b.io", "v1", "TicketRequest", "ticketrequests", "spec.claim");
        let api = lower_json(d.build()).unwrap();
        assert_eq!(
            api.groups,
            [
                Group { name: "a.io".into(), versions: vec!["v1".into(), "v1beta1".into()] },
                Group { name: "b.io".into(), versions: vec!["v1".into()] },
            ]
        );
        let rs: Vec<_> =
            api.resources.iter().map(|r| (r.version.as_str(), r.kind.as_str())).collect();
        assert_eq!(
            rs,
            [("v1", "Thing"), ("v1", "Gizmo"), ("v1beta1", "Thing"), ("v1", "TicketRequest")]
        );
        let thing = &api.resources[2];
        assert_eq!(thing.storage_version, "v1");
        assert_eq!(thing.list_kind, "ThingList");
        assert_eq!(thing.singular, "thing");
        assert_eq!(thing.verbs, VERB_ORDER);
        let ticket = &api.resources[3];
        assert_eq!(ticket.verbs, ["create"]);
        assert_eq!(ticket.token_field.as_deref(), Some("spec.claim"));

        let route = api
            .routes
            .iter()
            .find(|r| r.path == "/apis/a.io/v1beta1/namespaces/{namespace}/things/{name}")
            .unwrap();
        assert_eq!(route.params, ["namespace", "name"]);
        assert_eq!(route.resource, Some(2));
        let kinds: Vec<_> = route.operations.iter().map(|o| (o.method, &o.kind)).collect();
        assert_eq!(
            kinds[0],
            (
                Method::Get,
                &OperationKind::Resource {
                    action: Action::Get,
                    resource: 2,
                    namespace: true,
                    name: true,
                    subresource: None,
                }
            )
        );
        let group_route = api.routes.iter().find(|r| r.path == "/apis/b.io/").unwrap();
        assert_eq!(group_route.patterns, ["/apis/b.io/", "/apis/b.io"]);
        assert_eq!(
            group_route.operations[0].kind,
            OperationKind::Handler(Handler::ApiGroup { group: 1 })
        );
        let apis = api.routes.iter().find(|r| r.path == "/apis").unwrap();
        assert_eq!(apis.patterns, ["/apis", "/apis/"]);
        let root = api.routes.iter().find(|r| r.path == "/").unwrap();
        assert_eq!(root.patterns, ["/"]);
    }

    #[test]
    fn lowers_subresources() {
        let mut d = TestDoc::new(&["a.io"]);
        for v in ["v1", "v1beta1"] {
            d.kind("a.io", v, "Thing", "things", true);
            d.status("a.io", v, "Thing", "things", true);
            d.scale("a.io", v, "Thing", "things", true);
        }
        d.kind("a.io", "v1", "Gizmo", "gizmos", false);
        d.status("a.io", "v1", "Gizmo", "gizmos", false);
        d.kind("a.io", "v1", "Widget", "widgets", true);
        let api = lower_json(d.build()).unwrap();
        let summary: Vec<_> = api
            .resources
            .iter()
            .map(|r| (r.version.as_str(), r.kind.as_str(), r.status_subresource, r.scale.is_some()))
            .collect();
        assert_eq!(
            summary,
            [
                ("v1", "Thing", true, true),
                ("v1", "Gizmo", true, false),
                ("v1", "Widget", false, false),
                ("v1beta1", "Thing", true, true)
            ]
        );
        assert_eq!(
            api.resources[0].scale,
            Some(ScalePaths {
                spec_replicas: ".spec.replicas".into(),
                status_replicas: ".status.replicas".into(),
                label_selector: Some(".status.labelSelector".into()),
            })
        );
        // Subresource operations grant no discovery verbs of their own.
        assert!(api.resources.iter().all(|r| r.verbs == VERB_ORDER));
        let route = |p: &str| api.routes.iter().find(|r| r.path == p).unwrap();
        let scale = route("/apis/a.io/v1beta1/namespaces/{namespace}/things/{name}/scale");
        assert_eq!(scale.resource, Some(3));
        assert_eq!(scale.params, ["namespace", "name"]);
        let ops: Vec<_> =
            scale.operations.iter().map(|o| (o.method, o.fn_name.as_str(), &o.kind)).collect();
        let kind = |action| OperationKind::Resource {
            action,
            resource: 3,
            namespace: true,
            name: true,
            subresource: Some(Subresource::Scale),
        };
        assert_eq!(
            ops,
            [
                (Method::Get, "read_a_io_v1beta1_namespaced_thing_scale", &kind(Action::Get)),
                (Method::Put, "replace_a_io_v1beta1_namespaced_thing_scale", &kind(Action::Put)),
                (Method::Patch, "patch_a_io_v1beta1_namespaced_thing_scale", &kind(Action::Patch)),
            ]
        );
        let status = route("/apis/a.io/v1/gizmos/{name}/status");
        assert_eq!(
            status.operations[0].kind,
            OperationKind::Resource {
                action: Action::Get,
                resource: 1,
                namespace: false,
                name: true,
                subresource: Some(Subresource::Status),
            }
        );
    }

    #[test]
    fn checks_subresources() {
        let mut d = TestDoc::new(&["a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        d.kind("a.io", "v1beta1", "Thing", "things", true);
        d.status("a.io", "v1", "Thing", "things", true);
        d.kind("a.io", "v1", "Gizmo", "gizmos", false);
        d.status("a.io", "v1", "Gizmo", "gizmos", false);
        d.scale("a.io", "v1", "Gizmo", "gizmos", false);
        d.kind("a.io", "v1", "Widget", "widgets", true);
        d.scale("a.io", "v1", "Widget", "widgets", true);
        d.kind("a.io", "v1", "Doohickey", "doohickeys", true);
        d.scale("a.io", "v1", "Doohickey", "doohickeys", true);
        let status = "/apis/a.io/v1/namespaces/{namespace}/things/{name}/status";
        d.set(
            status,
            "get",
            "x-kubernetes-group-version-kind",
            serde_json::json!({"group": "a.io", "version": "v1", "kind": "Gizmo"}),
        );
        d.set(status, "patch", "x-kubernetes-action", "delete".into());
        d.set(status, "patch", "operationId", "deleteThingStatus".into());
        d.remove_op("/apis/a.io/v1/gizmos/{name}/status", "put");
        d.set(
            "/apis/a.io/v1/gizmos/{name}/scale",
            "get",
            "x-kubernetes-group-version-kind",
            serde_json::json!({"group": "a.io", "version": "v1", "kind": "Gizmo"}),
        );
        d.remove_path("/apis/a.io/v1/namespaces/{namespace}/widgets/{name}/scale");
        let mut doc = d.build();
        let scale = &mut doc["definitions"]["io.a.v1.Doohickey"]["x-virt-resource"]["scale"];
        scale["specReplicasPath"] = ".status.replicas".into();
        scale["labelSelectorPath"] = ".spec.selector[0]".into();
        let paths = doc["paths"].as_object_mut().unwrap();
        let mut extra = paths["/apis/a.io/v1/gizmos/{name}/status"].clone();
        extra.as_object_mut().unwrap().retain(|k, _| k == "parameters" || k == "get");
        extra["get"]["operationId"] = "readGizmoFoo".into();
        paths.insert("/apis/a.io/v1/gizmos/{name}/foo".into(), extra.clone());
        extra["get"]["operationId"] = "readStuffStatus".into();
        paths.insert("/apis/a.io/v1/stuff/{name}/status".into(), extra.clone());
        extra["get"]["operationId"] = "readNamespacedGizmoStatus".into();
        extra["parameters"] = serde_json::json!([{"$ref": "#/parameters/namespace"},
                                                 {"$ref": "#/parameters/name"}]);
        paths.insert("/apis/a.io/v1/namespaces/{namespace}/gizmos/{name}/status".into(), extra);
        let problems = lower_json(doc).unwrap_err();
        let expected = [
            "(readAIoV1NamespacedThingStatus): `status` operations carry the GVK a.io/v1 Thing, not a.io/v1 Gizmo",
            "(deleteThingStatus): action `delete` needs method DELETE",
            "(deleteThingStatus): the `status` subresource serves only get, put and patch, not `delete`",
            "(readAIoV1GizmoScale): `scale` operations carry the GVK autoscaling/v1 Scale, not a.io/v1 Gizmo",
            "(readGizmoFoo): unknown subresource `foo` (known: status, scale)",
            "(readStuffStatus): no kind of a.io/v1 has plural `stuff`",
            "(readNamespacedGizmoStatus): Gizmo is cluster-scoped but the path has a namespace",
            // The two rejected operations above leave the subresource incomplete.
            "definition io.a.v1.Thing: the `status` subresource must serve get, put and patch; missing: get, patch",
            "definition io.a.v1.Gizmo: the `status` subresource must serve get, put and patch; missing: put",
            "definition io.a.v1.Gizmo: the `scale` subresource must serve get, put and patch; missing: get",
            "definition io.a.v1.Widget: has x-virt-resource.scale but no path serves its `scale` subresource",
            "definition io.a.v1.Doohickey: scale.specReplicasPath `.status.replicas` is not a simple JSON path under .spec",
            "definition io.a.v1.Doohickey: scale.labelSelectorPath `.spec.selector[0]` is not a simple JSON path under .spec or .status",
            "definition io.a.v1beta1.Thing: status and scale subresources must match io.a.v1.Thing (same kind)",
        ];
        for e in expected {
            assert_problem(&problems, e);
        }
        assert_eq!(problems.len(), expected.len(), "{}", problems.join("\n"));
    }

    #[test]
    fn verbs_follow_the_actions_present() {
        let mut d = TestDoc::new(&["a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        d.remove_op("/apis/a.io/v1/namespaces/{namespace}/things/{name}", "put");
        d.remove_op("/apis/a.io/v1/namespaces/{namespace}/things", "delete");
        d.remove_op("/apis/a.io/v1/watch/namespaces/{namespace}/things", "get");
        let api = lower_json(d.build()).unwrap();
        // The item watch still grants `watch`.
        assert_eq!(api.resources[0].verbs, ["delete", "get", "list", "patch", "create", "watch"]);
        d.remove_op("/apis/a.io/v1/watch/namespaces/{namespace}/things/{name}", "get");
        d.remove_op("/apis/a.io/v1/watch/things", "get");
        let api = lower_json(d.build()).unwrap();
        assert_eq!(api.resources[0].verbs, ["delete", "get", "list", "patch", "create"]);
    }

    #[test]
    fn collects_every_problem() {
        let mut d = TestDoc::new(&["a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        d.kind("a.io", "v1", "Gizmo", "gizmos", false);
        let item = "/apis/a.io/v1/namespaces/{namespace}/things/{name}";
        d.set(item, "get", "x-kubernetes-action", "fetch".into());
        d.set(item, "put", "operationId", Value::Null);
        d.set(item, "delete", "operationId", "listAIoV1NamespacedThing".into());
        d.set("/apis/a.io/v1/gizmos", "delete", "x-virt-handler", "ping".into());
        d.set(item, "patch", "consumes", serde_json::json!([STRATEGIC_MERGE_PATCH]));
        d.set(item, "patch", "parameters", serde_json::json!([]));
        d.set(
            "/apis/a.io/v1/gizmos",
            "get",
            "x-kubernetes-group-version-kind",
            serde_json::json!({"group": "b.io", "version": "v1", "kind": "Gizmo"}),
        );
        d.set(
            "/apis/a.io/v1/gizmos/{name}",
            "get",
            "x-kubernetes-group-version-kind",
            serde_json::json!({"group": "a.io", "version": "v1", "kind": "GizmoList"}),
        );
        d.set(
            "/apis/a.io/v1/gizmos/{name}",
            "put",
            "x-kubernetes-group-version-kind",
            serde_json::json!({"group": "a.io", "version": "v1", "kind": "Thing"}),
        );
        d.set(
            "/apis/a.io/v1/gizmos/{name}",
            "patch",
            "parameters",
            serde_json::json!([{"$ref": "#/parameters/nope"}]),
        );
        d.set("/apis/a.io/v1/watch/gizmos", "get", "x-kubernetes-action", "list".into());
        d.set("/version", "get", "x-virt-handler", "versionInfo".into());
        d.set_path_params("/apis/a.io/v1/watch/gizmos/{name}", serde_json::json!([]));
        d.add_path(
            "/apis/a.io/v1/namespaces/{namespace}/gizmos",
            "get",
            serde_json::json!({
            "operationId": "listAIoV1NamespacedGizmo", "x-kubernetes-action": "list",
            "x-kubernetes-group-version-kind": {"group": "a.io", "version": "v1", "kind": "Gizmo"},
            "parameters": [{"name": "namespace", "in": "path", "required": true, "type": "string"}],
            "responses": {}}),
        );
        d.add_path(
            "/apis/a.io/v1/stuff",
            "get",
            serde_json::json!({
            "operationId": "listAIoV1Stuff", "x-kubernetes-action": "list",
            "x-kubernetes-group-version-kind": {"group": "a.io", "version": "v1", "kind": "Thing"},
            "responses": {}}),
        );
        d.add_path(
            "/apis/c.io/",
            "get",
            serde_json::json!({
            "operationId": "getCIoAPIGroup", "x-virt-handler": "apiGroup", "responses": {}}),
        );
        let problems = lower_json(d.build()).unwrap_err();
        let expected = [
            "GET /apis/a.io/v1/namespaces/{namespace}/things/{name} (readAIoV1NamespacedThing): unknown x-kubernetes-action `fetch`",
            "PUT /apis/a.io/v1/namespaces/{namespace}/things/{name} (no operationId): missing operationId",
            "DELETE /apis/a.io/v1/namespaces/{namespace}/things/{name} (listAIoV1NamespacedThing): duplicate operationId, also used by GET /apis/a.io/v1/namespaces/{namespace}/things (listAIoV1NamespacedThing)",
            "(patchAIoV1NamespacedThing): PATCH must not consume application/strategic-merge-patch+json",
            "(patchAIoV1NamespacedThing): PATCH must declare the fieldValidation query parameter",
            "GET /apis/a.io/v1/gizmos (listAIoV1Gizmo): group `b.io` is not in x-virt-api-groups",
            "(readAIoV1Gizmo): GVK a.io/v1 GizmoList names io.a.v1.GizmoList, which has no x-virt-resource",
            "(replaceAIoV1Gizmo): path names `gizmos` but Thing has plural `things`",
            "(replaceAIoV1Gizmo): Thing is namespaced but the path has no namespace",
            "(patchAIoV1Gizmo): parameter `$ref: #/parameters/nope` does not resolve",
            "(watchAIoV1GizmoList): action `list` belongs on a collection path",
            "GET /version (getCodeVersion): unknown x-virt-handler `versionInfo`",
            "(watchAIoV1Gizmo): path parameter `name` is not declared",
            "(deleteAIoV1CollectionGizmo): has both x-kubernetes-action and x-virt-handler",
            "(listAIoV1Gizmo): no definition has GVK b.io/v1 Gizmo",
            "(listAIoV1NamespacedGizmo): Gizmo is cluster-scoped but the path has a namespace",
            "(listAIoV1Stuff): path names `stuff` but Thing has plural `things`",
            "GET /apis/c.io/ (getCIoAPIGroup): group `c.io` is not in x-virt-api-groups",
        ];
        for e in expected {
            assert_problem(&problems, e);
        }
        assert_eq!(problems.len(), expected.len(), "{}", problems.join("\n"));
    }

    #[test]
    fn checks_resource_consistency_and_coverage() {
        let mut d = TestDoc::new(&["a.io", "b.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        d.kind("a.io", "v1alpha1", "Thing", "thingies", true);
        d.kind("a.io", "v1alpha1", "Gizmo", "gizmos", true);
        d.kind("a.io", "v1", "Widget", "gizmos", true);
        d.token_kind("a.io", "v1", "TicketRequest", "ticketrequests", "spec.claim");
        d.add_path("/apis/a.io/v1/namespaces/{namespace}/ticketrequests/{name}", "get", serde_json::json!({
            "operationId": "readTicket", "x-kubernetes-action": "get",
            "x-kubernetes-group-version-kind": {"group": "a.io", "version": "v1", "kind": "TicketRequest"},
            "parameters": [{"name": "namespace", "in": "path", "required": true, "type": "string"},
                           {"name": "name", "in": "path", "required": true, "type": "string"}],
            "responses": {}}));
        d.unserved_kind("a.io", "v1", "Orphan", "orphans");
        d.remove_definition("io.a.v1alpha1.GizmoList");
        d.remove_path("/apis/a.io/v1alpha1/");
        d.remove_path("/apis/b.io/");
        let problems = lower_json(d.build()).unwrap_err();
        let expected = [
            "(readTicket): TicketRequest is a create-only token request; only `post` is allowed",
            "definition io.a.v1.Orphan: has x-virt-resource but no path serves it",
            "group b.io: no resource path serves any version of it",
            "group b.io: no path has x-virt-handler `apiGroup` for it",
            "definition io.a.v1alpha1.Thing: plural, singular, scope and tokenRequest must match io.a.v1.Thing (same kind)",
            "definition io.a.v1alpha1.Gizmo: plural `gizmos` is also used by io.a.v1.Widget",
            "definition io.a.v1alpha1.Gizmo: Gizmo is not served in a.io/v1, the group's preferred (storage) version",
            "definition io.a.v1alpha1.Gizmo: no definition has GVK a.io/v1alpha1 GizmoList",
            "(listAIoV1alpha1NamespacedGizmo): `$ref: #/definitions/io.a.v1alpha1.GizmoList` does not name a definition",
            "(listAIoV1alpha1GizmoForAllNamespaces): `$ref: #/definitions/io.a.v1alpha1.GizmoList` does not name",
            "group a.io: no path has x-virt-handler `apiResources` for version v1alpha1",
        ];
        for e in expected {
            assert_problem(&problems, e);
        }
        assert_eq!(problems.len(), expected.len(), "{}", problems.join("\n"));
    }
}
