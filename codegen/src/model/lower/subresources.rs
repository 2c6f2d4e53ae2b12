//! Operations on `…/{name}/<subresource>`: which kind they belong to and what they may serve.

use super::{DraftKind, KindDef, Lowering};
use crate::model::paths::ResourcePath;
use crate::model::{Action, Subresource, SCALE_GVK, SUBRESOURCE_ACTIONS};
use crate::swagger::GroupVersionKind;

impl<'d> Lowering<'d> {
    /// An operation on `…/{name}/<subresource>`. The path names the kind (scale operations carry
    /// autoscaling's GVK, not the kind's), as a CRD's subresources belong to the CRD.
    pub(super) fn subresource_op(
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
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_problem, lower_json};
    use crate::model::*;
    use crate::swagger::Method;
    use crate::test_doc::TestDoc;

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
}
