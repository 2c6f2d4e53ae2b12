//! Lowering: the document checked and turned into the IR in passes, one file per part.
//!
//! `run` reads the definitions that name kinds (`kinds`), checks each operation on its own
//! (`operations`, `parameters`, `subresources`) into drafts that point at definitions, then
//! derives the groups and the `RESOURCES` table from what the paths serve (`resources`) and
//! resolves the drafts into routes (`routes`); `document` holds the checks of the document as a
//! whole. Every check reports through [`Lowering::problem`] and carries on.

mod data_rules;
mod defaults;
mod document;
mod kinds;
mod operations;
mod parameters;
mod resources;
mod routes;
mod subresources;
mod update_rules;

use std::collections::HashMap;

use super::paths::path_params;
use super::{Action, Api, Handler, Subresource};
use crate::swagger::{self, Document, Method, SubresourceOf, VirtResource};

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

/// One lowering under way: the document and every problem found so far.
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
    /// Its `x-virt-resource.dataRules`, checked.
    data_rules: Option<crate::model::DataRules>,
    /// Its `x-virt-resource.updateRules` and `defaultClass`, checked.
    update_rules: Vec<crate::model::UpdateRule>,
    default_class: Option<crate::model::DefaultClass>,
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

/// What a draft serves: an [`OperationKind`](crate::model::OperationKind) whose kind is still a
/// definition index and whose handler may still name its group.
enum DraftKind {
    Resource {
        action: Action,
        def: usize,
        namespace: bool,
        name: bool,
        subresource: Option<Subresource>,
    },
    Handler(DraftHandler),
    /// An `x-virt-action` on the objects of definition `def` (`named`: on one of them).
    Action {
        def: usize,
        name: String,
        read: bool,
        named: bool,
        params: Vec<String>,
    },
}

/// A handler, with the group it names resolved once the groups are known.
enum DraftHandler {
    Plain(Handler),
    ApiGroup { group: String },
    ApiResources { group: String, version: String, listed: Vec<String> },
}

/// A document path while its operations are checked.
struct PathCtx<'d> {
    path: &'d str,
    item: &'d swagger::PathItem,
    params: Vec<String>,
    /// What the path item's `x-virt-subresource-of` declares; an operation's own wins.
    owner: Owner,
}

/// Whose subresource an operation serves, as the document declares it.
#[derive(Debug, Clone)]
enum Owner {
    /// No `x-virt-subresource-of`: the kind of the path's own group.
    OwnGroup,
    /// The kind `x-virt-subresource-of` names.
    Named(SubresourceOf),
    /// An `x-virt-subresource-of` already reported as wrong: its operations are not lowered.
    Invalid,
}

/// A document path and the drafts of its operations that passed their own checks.
struct RouteDraft<'d> {
    path: &'d str,
    params: Vec<String>,
    ops: Vec<OpDraft>,
}

/// How a problem names an operation: method, path and operationId.
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
        self.check_defaults();
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
            let owner = match &item.subresource_of {
                Some(v) => {
                    let action = item.operations().any(|(_, op)| op.virt_action.is_some());
                    self.subresource_of(&format!("path {path}"), path, v, action)
                }
                None => Owner::OwnGroup,
            };
            let at = PathCtx { path, item, params, owner };
            let ops: Vec<OpDraft> = item
                .operations()
                .filter_map(|(method, op)| self.operation(&at, method, op, &defs))
                .collect();
            self.check_route_mix(path, &ops, &defs);
            routes.push(RouteDraft { path, params: at.params, ops });
        }
        let mut groups = self.groups(&routes);
        let (resources, def_to_resource) = self.resources(&defs, &groups, &routes);
        let routes = self.routes(routes, &mut groups, &def_to_resource);
        Api {
            title: doc.info.title.clone(),
            version: doc.info.version.clone(),
            groups,
            resources,
            routes,
        }
    }
}

/// What the tests beside each part of lowering share.
#[cfg(test)]
mod testing {
    use serde_json::Value;

    use crate::model::Api;

    pub(super) fn lower_json(v: Value) -> Result<Api, Vec<String>> {
        super::lower(&serde_json::from_value(v).unwrap())
    }

    pub(super) fn assert_problem(problems: &[String], needle: &str) {
        assert!(
            problems.iter().any(|p| p.contains(needle)),
            "no problem containing {needle:?} in:\n{}",
            problems.join("\n")
        );
    }

    /// Exactly these problems: each needle in one of them, and no others.
    pub(super) fn assert_problems(problems: &[String], expected: &[&str]) {
        for e in expected {
            assert_problem(problems, e);
        }
        assert_eq!(problems.len(), expected.len(), "{}", problems.join("\n"));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::testing::{assert_problems, lower_json};
    use crate::model::*;
    use crate::swagger::Method;
    use crate::test_doc::TestDoc;

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
                Group {
                    name: "a.io".into(),
                    versions: vec!["v1".into(), "v1beta1".into()],
                    listed: vec![]
                },
                Group { name: "b.io".into(), versions: vec!["v1".into()], listed: vec![] },
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
            "(patchAIoV1NamespacedThing): PATCH must declare the fieldValidation query parameter",
            "(patchAIoV1NamespacedThing): PATCH must not consume application/strategic-merge-patch+json (its kind is not marked x-virt-resource.strategicMergePatch)",
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
        assert_problems(&problems, &expected);
    }
}
