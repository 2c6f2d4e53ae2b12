//! Operations on `…/{name}/<subresource>`: which kind they belong to (the path's own group's, or
//! the one `x-virt-subresource-of` names) and what they may serve.

use serde_json::Value;

use super::{DraftKind, KindDef, Lowering, Owner};
use crate::model::paths::{parse_action_path, parse_resource_path, ResourcePath};
use crate::model::{Action, Subresource, BINDING_GVK, EVICTION_GVK, SCALE_GVK};
use crate::swagger::{GroupVersionKind, Method, SubresourceOf};

impl<'d> Lowering<'d> {
    /// The owner an `x-virt-subresource-of` at `ctx` (a path item of `path`, or one of its
    /// operations) declares. Problems with the declaration itself are reported here, once.
    /// An `action`'s path may have two segments (`vnc/screenshot`) or none (`expand-vm-spec`).
    pub(super) fn subresource_of(
        &mut self,
        ctx: &str,
        path: &str,
        value: &Value,
        action: bool,
    ) -> Owner {
        if parse_resource_path(path).is_none_or(|rp| rp.subresource.is_none())
            && !(action && parse_action_path(path).is_some())
        {
            let msg = "x-virt-subresource-of belongs only on a subresource path \
                       (…/{name}/<subresource>) or an action's";
            self.problem(ctx, msg);
            return Owner::Invalid;
        }
        match serde_json::from_value::<SubresourceOf>(value.clone()) {
            Ok(owner) => Owner::Named(owner),
            Err(e) => {
                self.problem(ctx, format!("bad x-virt-subresource-of: {e}"));
                Owner::Invalid
            }
        }
    }

    /// An operation on `…/{name}/<subresource>`. The path names the kind (scale operations carry
    /// autoscaling's GVK, not the kind's), as a CRD's subresources belong to the CRD: by its
    /// version and plural, and by its group unless `owner` names another.
    pub(super) fn subresource_op(
        &mut self,
        ctx: &str,
        action: Action,
        gvk: &GroupVersionKind,
        rp: &ResourcePath<'_>,
        owner: &Owner,
        defs: &[KindDef<'d>],
    ) -> Option<DraftKind> {
        let raw = rp.subresource.expect("a subresource path");
        let Some(sub) = Subresource::parse(raw) else {
            let known: Vec<_> = Subresource::ALL.iter().map(|s| s.as_str()).collect();
            self.problem(ctx, format!("unknown subresource `{raw}` (known: {})", known.join(", ")));
            return None;
        };
        let mut ok = true;
        let (group, plural) = match owner {
            Owner::OwnGroup => (rp.group, rp.plural),
            // Reported where it is declared.
            Owner::Invalid => return None,
            Owner::Named(o) => {
                if o.plural != rp.plural {
                    let msg = format!(
                        "path names `{}` but x-virt-subresource-of names `{}`",
                        rp.plural, o.plural
                    );
                    self.problem(ctx, msg);
                    ok = false;
                }
                // The path's group-version serves the operation, so it is a served group.
                if o.group != rp.group && !self.doc.api_groups.iter().any(|g| g == rp.group) {
                    self.problem(ctx, format!("group `{}` is not in x-virt-api-groups", rp.group));
                    ok = false;
                }
                if !self.doc.api_groups.contains(&o.group) {
                    let msg = format!(
                        "x-virt-subresource-of: group `{}` is not in x-virt-api-groups",
                        o.group
                    );
                    self.problem(ctx, msg);
                    return None;
                }
                (o.group.as_str(), o.plural.as_str())
            }
        };
        let found = defs.iter().position(|d| {
            (d.group.as_str(), d.version.as_str()) == (group, rp.version)
                && d.resource.as_ref().is_some_and(|r| r.plural == plural)
        });
        let Some(def) = found else {
            let msg = format!("no kind of {group}/{} has plural `{plural}`", rp.version);
            self.problem(ctx, msg);
            return None;
        };
        let d = &defs[def];
        let res = d.resource.as_ref().expect("found by its x-virt-resource");
        let want = match sub {
            Subresource::Status | Subresource::Finalize | Subresource::Log => {
                (d.group.as_str(), d.version.as_str(), d.kind.as_str())
            }
            Subresource::Scale => SCALE_GVK,
            Subresource::Binding => BINDING_GVK,
            Subresource::Eviction => EVICTION_GVK,
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
        if !sub.actions().contains(&action) {
            let msg = format!(
                "the `{}` subresource serves only {}, not `{}`",
                sub.as_str(),
                sub.actions_in_words(),
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
}

impl<'d> Lowering<'d> {
    /// An `x-virt-action` operation: PUT (acts) or GET (reads) on `…/namespaces/{namespace}/
    /// <plural>/{name}/<action>` (the kind found as a subresource's is), or on
    /// `…/namespaces/{namespace}/<action>` for the kind `x-virt-subresource-of` names.
    pub(super) fn action_op(
        &mut self,
        ctx: &str,
        path: &str,
        method: Method,
        name: &str,
        owner: &Owner,
        defs: &[KindDef<'d>],
    ) -> Option<DraftKind> {
        let Some(ap) = parse_action_path(path) else {
            let msg = "x-virt-action belongs only on a path …/namespaces/{namespace}/\
                       [<plural>/{name}/]<action>[/{param}]";
            self.problem(ctx, msg);
            return None;
        };
        let mut ok = true;
        if ap.action != name {
            let msg = format!("x-virt-action `{name}` is not the path's last segments");
            self.problem(ctx, msg);
            ok = false;
        }
        let read = match method {
            Method::Put => false,
            Method::Get => true,
            other => {
                self.problem(ctx, format!("an action is PUT or GET, not {}", other.as_str()));
                return None;
            }
        };
        let (group, plural) = match (owner, ap.plural) {
            (Owner::OwnGroup, Some(p)) => (ap.group, p),
            (Owner::OwnGroup, None) => {
                let msg = "an action on no object names its kind with x-virt-subresource-of";
                self.problem(ctx, msg);
                return None;
            }
            (Owner::Invalid, _) => return None,
            (Owner::Named(o), p) => {
                if p.is_some_and(|p| p != o.plural) {
                    let msg = format!(
                        "path names `{}` but x-virt-subresource-of names `{}`",
                        p.unwrap_or_default(),
                        o.plural
                    );
                    self.problem(ctx, msg);
                    ok = false;
                }
                (o.group.as_str(), o.plural.as_str())
            }
        };
        if !self.doc.api_groups.iter().any(|g| g == ap.group) {
            self.problem(ctx, format!("group `{}` is not in x-virt-api-groups", ap.group));
            ok = false;
        }
        let found = defs.iter().position(|d| {
            (d.group.as_str(), d.version.as_str()) == (group, ap.version)
                && d.resource.as_ref().is_some_and(|r| r.plural == plural)
        });
        let Some(def) = found else {
            let msg = format!("no kind of {group}/{} has plural `{plural}`", ap.version);
            self.problem(ctx, msg);
            return None;
        };
        let namespaced = defs[def].resource.as_ref().is_some_and(|r| r.namespaced);
        if !namespaced {
            self.problem(ctx, "actions are on namespaced kinds, under a namespace");
            ok = false;
        }
        let named = ap.plural.is_some();
        let params = ap.params.iter().map(|p| p.to_string()).collect();
        ok.then(|| DraftKind::Action { def, name: name.to_string(), read, named, params })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::super::testing::{assert_problem, assert_problems, lower_json};
    use crate::model::*;
    use crate::swagger::Method;
    use crate::test_doc::TestDoc;

    #[test]
    fn lowers_subresources() {
        let mut d = TestDoc::new(&["a.io"]);
        for v in ["v1", "v1beta1"] {
            d.kind("a.io", v, "Thing", "things", true);
            d.status("a.io", v, "Thing");
            d.scale("a.io", v, "Thing");
        }
        d.kind("a.io", "v1", "Gizmo", "gizmos", false);
        d.status("a.io", "v1", "Gizmo");
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
        d.status("a.io", "v1", "Thing");
        d.kind("a.io", "v1", "Gizmo", "gizmos", false);
        d.status("a.io", "v1", "Gizmo");
        d.scale("a.io", "v1", "Gizmo");
        d.kind("a.io", "v1", "Widget", "widgets", true);
        d.scale("a.io", "v1", "Widget");
        d.kind("a.io", "v1", "Doohickey", "doohickeys", true);
        d.scale("a.io", "v1", "Doohickey");
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
            "(readGizmoFoo): unknown subresource `foo` (known: status, scale, finalize, binding, eviction, log)",
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
        assert_problems(&problems, &expected);
    }

    /// kube's Namespace `finalize`: put only, the kind's own GVK.
    #[test]
    fn finalize_is_update_only() {
        let mut d = TestDoc::new(&["a.io"]);
        d.kind("a.io", "v1", "Thing", "things", false);
        let fin = "/apis/a.io/v1/things/{name}/finalize";
        let mut doc = d.build();
        let item = doc["paths"]["/apis/a.io/v1/things/{name}"].clone();
        let mut put = item["put"].clone();
        put["operationId"] = "replaceAIoV1ThingFinalize".into();
        doc["paths"][fin] = serde_json::json!({"parameters": item["parameters"], "put": put});
        let api = lower_json(doc.clone()).unwrap();
        assert!(api.resources[0].finalize_subresource);
        let mut get = item["get"].clone();
        get["operationId"] = "readAIoV1ThingFinalize".into();
        doc["paths"][fin]["get"] = get;
        let problems = lower_json(doc).unwrap_err();
        assert_problem(&problems, "the `finalize` subresource serves only put, not `get`");
    }

    /// kube's Pod `binding`, `eviction` (create of core/v1 Binding and policy/v1 Eviction) and
    /// `log` (get of the kind itself).
    #[test]
    fn binding_eviction_and_log_carry_kubes_kinds() {
        let mut d = TestDoc::new(&["a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        let base = "/apis/a.io/v1/namespaces/{namespace}/things/{name}";
        let mut doc = d.build();
        let item = doc["paths"][base].clone();
        let op = |verb: &str, id: &str, gvk: Value| {
            let mut op = item[verb].clone();
            op["operationId"] = id.into();
            op["x-kubernetes-action"] = (if verb == "get" { "get" } else { "post" }).into();
            op["x-kubernetes-group-version-kind"] = gvk;
            op
        };
        let kind =
            |g: &str, v: &str, k: &str| serde_json::json!({"group": g, "version": v, "kind": k});
        let mut post = |sub: &str, id: &str, gvk: Value| {
            let mut op = op("put", id, gvk);
            op["responses"] = serde_json::json!({"201": {"description": "Created"}});
            doc["paths"][format!("{base}/{sub}")] =
                serde_json::json!({"parameters": item["parameters"], "post": op});
        };
        post("binding", "createThingBinding", kind("", "v1", "Binding"));
        post("eviction", "createThingEviction", kind("policy", "v1", "Eviction"));
        doc["paths"][format!("{base}/log")] = serde_json::json!({
            "parameters": item["parameters"],
            "get": op("get", "readThingLog", kind("a.io", "v1", "Thing")),
        });
        let api = lower_json(doc.clone()).unwrap();
        let r = &api.resources[0];
        assert!(r.binding_subresource && r.eviction_subresource && r.log_subresource);
        let route = api.routes.iter().find(|r| r.path == format!("{base}/eviction")).unwrap();
        assert_eq!(
            route.operations[0].kind,
            OperationKind::Resource {
                action: Action::Post,
                resource: 0,
                namespace: true,
                name: true,
                subresource: Some(Subresource::Eviction),
            }
        );
        // The eviction's kind is policy's, not core's; a log is read only.
        doc["paths"][format!("{base}/eviction")]["post"]["x-kubernetes-group-version-kind"] =
            kind("", "v1", "Eviction");
        let mut put = doc["paths"][format!("{base}/log")]["get"].clone();
        put["operationId"] = "replaceThingLog".into();
        put["x-kubernetes-action"] = "put".into();
        doc["paths"][format!("{base}/log")]["put"] = put;
        let problems = lower_json(doc).unwrap_err();
        assert_problem(
            &problems,
            "`eviction` operations carry the GVK policy/v1 Eviction, not /v1 Eviction",
        );
        assert_problem(&problems, "the `log` subresource serves only get, not `put`");
    }

    /// a.io's Thing, its `status` and `scale` served under sub.a.io (the path item names the kind).
    fn cross_group() -> TestDoc {
        let mut d = TestDoc::new(&["a.io", "sub.a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        d.subresource_under("sub.a.io", "a.io", "v1", "Thing", "status");
        d.subresource_under("sub.a.io", "a.io", "v1", "Thing", "scale");
        d
    }

    const STATUS: &str = "/apis/sub.a.io/v1/namespaces/{namespace}/things/{name}/status";

    #[test]
    fn lowers_a_subresource_served_under_another_group() {
        let mut d = cross_group();
        // An operation may name the kind itself.
        let scale = "/apis/sub.a.io/v1/namespaces/{namespace}/things/{name}/scale";
        d.set_path_field(scale, "x-virt-subresource-of", Value::Null);
        for method in ["get", "put", "patch"] {
            let owner = serde_json::json!({"group": "a.io", "plural": "things"});
            d.set(scale, method, "x-virt-subresource-of", owner);
        }
        let api = lower_json(d.build()).unwrap();
        // The serving group-version is served like any other.
        assert_eq!(
            api.groups,
            [
                Group { name: "a.io".into(), versions: vec!["v1".into()], listed: vec![] },
                Group { name: "sub.a.io".into(), versions: vec!["v1".into()], listed: vec![] },
            ]
        );
        let r: Vec<_> = api
            .resources
            .iter()
            .map(|r| (r.group.as_str(), r.kind.as_str(), r.status_subresource, r.scale.is_some()))
            .collect();
        assert_eq!(r, [("a.io", "Thing", true, true)]);
        let route = |p: &str| api.routes.iter().find(|r| r.path == p).unwrap();
        for (path, sub) in [(STATUS, Subresource::Status), (scale, Subresource::Scale)] {
            let route = route(path);
            assert_eq!(route.resource, Some(0), "{path}");
            assert_eq!(route.served, Some(GroupVersion { group: 1, version: "v1".into() }));
            let kinds: Vec<_> = route.operations.iter().map(|o| &o.kind).collect();
            let kind = |action| OperationKind::Resource {
                action,
                resource: 0,
                namespace: true,
                name: true,
                subresource: Some(sub),
            };
            assert_eq!(kinds, [&kind(Action::Get), &kind(Action::Put), &kind(Action::Patch)]);
        }
        assert_eq!(route(STATUS).operations[0].fn_name, "read_sub_a_io_v1_namespaced_thing_status");
        let own = route("/apis/a.io/v1/namespaces/{namespace}/things/{name}");
        assert_eq!(own.served, Some(GroupVersion { group: 0, version: "v1".into() }));
        assert_eq!(route("/apis/sub.a.io/v1/").served, None);
    }

    #[test]
    fn lowers_actions_served_under_another_group() {
        let mut d = TestDoc::new(&["a.io", "sub.a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        d.action_under("sub.a.io", "a.io", "v1", "things", "start", "put");
        d.action_under("sub.a.io", "a.io", "v1", "things", "info", "get");
        d.action_under("sub.a.io", "a.io", "v1", "things", "vnc/screenshot", "get");
        d.action_under("sub.a.io", "a.io", "v1", "things", "expand", "put");
        d.action_under("sub.a.io", "a.io", "v1", "things", "forward", "get");
        let mut doc = d.build();
        let paths = doc["paths"].as_object_mut().unwrap();
        const BASE: &str = "/apis/sub.a.io/v1/namespaces/{namespace}";
        // An action whose path ends in parameters, given to its handler.
        let mut forward = paths.shift_remove(&format!("{BASE}/things/{{name}}/forward")).unwrap();
        forward["parameters"].as_array_mut().unwrap().push(
            serde_json::json!({"name": "port", "in": "path", "required": true, "type": "integer"}),
        );
        paths.insert(format!("{BASE}/things/{{name}}/forward/{{port}}"), forward);
        paths[&format!("{BASE}/things/{{name}}/vnc/screenshot")]["get"]["operationId"] =
            "getScreenshot".into();
        // An action on no object: the namespace's, its kind named by x-virt-subresource-of.
        let mut expand = paths.shift_remove(&format!("{BASE}/things/{{name}}/expand")).unwrap();
        expand["parameters"] = serde_json::json!([{"$ref": "#/parameters/namespace"}]);
        paths.insert(format!("{BASE}/expand-thing"), expand.clone());
        expand["put"]["operationId"] = "putExpandThing".into();
        expand["put"]["x-virt-action"] = "expand-thing".into();
        paths.insert(format!("{BASE}/expand-thing"), expand);
        doc["paths"]["/apis/sub.a.io/v1/"]["get"]["x-virt-api-resources"] =
            serde_json::json!(["things/start", "things/info", "things/vnc"]);
        let api = lower_json(doc).unwrap();
        // The serving group's versions come from its action paths; its list from the document.
        assert_eq!(api.groups[1].versions, ["v1"]);
        let listed = vec!["things/start".to_string(), "things/info".into(), "things/vnc".into()];
        assert_eq!(api.groups[1].listed, [("v1".to_string(), listed)]);
        let route = |p: &str| api.routes.iter().find(|r| r.path == p).unwrap();
        let start = route("/apis/sub.a.io/v1/namespaces/{namespace}/things/{name}/start");
        assert_eq!(start.served, Some(GroupVersion { group: 1, version: "v1".into() }));
        let kind = |name: &str, read| OperationKind::Action {
            resource: 0,
            name: name.into(),
            read,
            named: true,
            params: Vec::new(),
        };
        assert_eq!(start.operations[0].kind, kind("start", false));
        let info = route("/apis/sub.a.io/v1/namespaces/{namespace}/things/{name}/info");
        assert_eq!(info.operations[0].kind, kind("info", true));
        let shot = route("/apis/sub.a.io/v1/namespaces/{namespace}/things/{name}/vnc/screenshot");
        assert_eq!(shot.operations[0].kind, kind("vnc/screenshot", true));
        let forward =
            route("/apis/sub.a.io/v1/namespaces/{namespace}/things/{name}/forward/{port}");
        assert_eq!(
            forward.operations[0].kind,
            OperationKind::Action {
                resource: 0,
                name: "forward".into(),
                read: true,
                named: true,
                params: vec!["port".into()],
            }
        );
        let expand = route("/apis/sub.a.io/v1/namespaces/{namespace}/expand-thing");
        assert_eq!(
            expand.operations[0].kind,
            OperationKind::Action {
                resource: 0,
                name: "expand-thing".into(),
                read: false,
                named: false,
                params: Vec::new(),
            }
        );
        // No discovery verbs of the kind come from its actions.
        assert!(api.resources[0].verbs.iter().all(|v| *v != "start"));
    }

    #[test]
    fn checks_actions() {
        let mut d = TestDoc::new(&["a.io", "sub.a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        d.kind("a.io", "v1", "Gizmo", "gizmos", false);
        d.action_under("sub.a.io", "a.io", "v1", "things", "start", "put");
        d.action_under("sub.a.io", "a.io", "v1", "things", "stop", "put");
        d.action_under("sub.a.io", "a.io", "v1", "things", "poke", "put");
        let mut doc = d.build();
        let paths = doc["paths"].as_object_mut().unwrap();
        let base = "/apis/sub.a.io/v1/namespaces/{namespace}/things/{name}";
        paths[&format!("{base}/stop")]["put"]["x-virt-action"] = "halt".into();
        let poke = paths.shift_remove(&format!("{base}/poke")).unwrap();
        let mut post = poke.clone();
        post["post"] = post["put"].take();
        post.as_object_mut().unwrap().shift_remove("put");
        post["post"]["operationId"] = "postPoke".into();
        paths.insert(format!("{base}/poke"), post);
        let mut cluster = poke.clone();
        cluster["parameters"] = serde_json::json!([{"$ref": "#/parameters/name"}]);
        cluster["x-virt-subresource-of"]["plural"] = "gizmos".into();
        cluster["put"]["x-virt-action"] = "poke".into();
        cluster["put"]["operationId"] = "putGizmoPoke".into();
        paths.insert("/apis/sub.a.io/v1/gizmos/{name}/poke".into(), cluster);
        paths["/version"]["get"]["x-virt-api-resources"] = serde_json::json!(["x"]);
        let problems = lower_json(doc).unwrap_err();
        let expected = [
            "x-virt-action `halt` is not the path's last segments",
            "(postPoke): an action is PUT or GET, not POST",
            "(putGizmoPoke): x-virt-action belongs only on a path …/namespaces/{namespace}/[<plural>/{name}/]<action>",
            "x-virt-api-resources belongs only on an `apiResources` operation",
        ];
        assert_problems(&problems, &expected);
    }

    #[test]
    fn checks_subresource_owners() {
        fn problems(edit: impl FnOnce(&mut Value)) -> Vec<String> {
            let mut doc = cross_group().build();
            edit(&mut doc);
            lower_json(doc).unwrap_err()
        }
        fn rename(doc: &mut Value, to: &str) {
            let paths = doc["paths"].as_object_mut().unwrap();
            let item = paths.shift_remove(STATUS).unwrap();
            paths.insert(to.to_string(), item);
        }
        fn owner(group: &str, plural: &str) -> Value {
            serde_json::json!({"group": group, "plural": plural})
        }
        /// `msg` once for each of the status path's operations: they are what it is about.
        fn each_op(msg: &str) -> Vec<String> {
            ["read", "replace", "patch"]
                .map(|verb| format!("({verb}SubAIoV1NamespacedThingStatus): {msg}"))
                .to_vec()
        }
        const COLLECTION: &str = "/apis/a.io/v1/namespaces/{namespace}/things";
        type Edit = Box<dyn FnOnce(&mut Value)>;
        let cases: Vec<(&str, Edit, Vec<String>)> = vec![
            (
                "a malformed declaration on a path item is reported once, for the path",
                Box::new(|d| d["paths"][STATUS]["x-virt-subresource-of"] = "a.io".into()),
                vec![format!(
                    "path {STATUS}: bad x-virt-subresource-of: invalid type: string \"a.io\", \
                     expected struct SubresourceOf"
                )],
            ),
            (
                "an operation's own declaration wins over its path item's",
                Box::new(|d| {
                    let bad =
                        serde_json::json!({"group": "a.io", "plural": "things", "version": "v1"});
                    d["paths"][STATUS]["get"]["x-virt-subresource-of"] = bad;
                }),
                vec![
                    "(readSubAIoV1NamespacedThingStatus): bad x-virt-subresource-of: unknown field \
                     `version`, expected `group` or `plural`"
                        .into(),
                    "definition io.a.v1.Thing: the `status` subresource must serve get, put and \
                     patch; missing: get"
                        .into(),
                ],
            ),
            (
                "only subresource paths take it",
                Box::new(|d| {
                    d["paths"][COLLECTION]["x-virt-subresource-of"] = owner("a.io", "things")
                }),
                vec![format!(
                    "path {COLLECTION}: x-virt-subresource-of belongs only on a subresource path"
                )],
            ),
            (
                "nor their operations",
                Box::new(|d| {
                    d["paths"][format!("{COLLECTION}/{{name}}")]["get"]["x-virt-subresource-of"] =
                        owner("a.io", "things")
                }),
                vec!["(readAIoV1NamespacedThing): x-virt-subresource-of belongs only on a \
                      subresource path"
                    .into()],
            ),
            (
                "the owner's group must be served",
                Box::new(|d| d["paths"][STATUS]["x-virt-subresource-of"] = owner("c.io", "things")),
                each_op("x-virt-subresource-of: group `c.io` is not in x-virt-api-groups"),
            ),
            (
                "the owner must be a kind of that group in the path's version",
                Box::new(|d| {
                    d["paths"][STATUS]["x-virt-subresource-of"] = owner("a.io", "gadgets");
                    rename(d, "/apis/sub.a.io/v1/namespaces/{namespace}/gadgets/{name}/status");
                }),
                each_op("no kind of a.io/v1 has plural `gadgets`"),
            ),
            (
                "the path's plural must be the owner's",
                Box::new(|d| {
                    rename(d, "/apis/sub.a.io/v1/namespaces/{namespace}/stuff/{name}/status")
                }),
                each_op("path names `stuff` but x-virt-subresource-of names `things`"),
            ),
            (
                "the serving group must be served",
                Box::new(|d| {
                    rename(d, "/apis/c.io/v1/namespaces/{namespace}/things/{name}/status")
                }),
                each_op("group `c.io` is not in x-virt-api-groups"),
            ),
            (
                "without a declaration the kind is the path's own group's",
                Box::new(|d| {
                    d["paths"][STATUS]
                        .as_object_mut()
                        .unwrap()
                        .shift_remove("x-virt-subresource-of");
                }),
                each_op("no kind of sub.a.io/v1 has plural `things`"),
            ),
            (
                "the serving version needs its discovery path",
                Box::new(|d| {
                    drop(d["paths"].as_object_mut().unwrap().shift_remove("/apis/sub.a.io/v1/"))
                }),
                vec!["group sub.a.io: no path has x-virt-handler `apiResources` for version v1"
                    .into()],
            ),
        ];
        for (case, edit, expected) in cases {
            let problems = problems(edit);
            for e in &expected {
                assert_problem(&problems, e);
            }
            assert_eq!(problems.len(), expected.len(), "{case}:\n{}", problems.join("\n"));
        }
    }
}
