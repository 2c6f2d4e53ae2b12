//! The groups and the `RESOURCES` table, derived from what the paths serve, and the facts that
//! must hold across a kind's versions.

use std::collections::{HashMap, HashSet};

use super::kinds::selectable_name;
use super::{DraftKind, KindDef, Lowering, RouteDraft};
use crate::model::paths::parse_resource_path;
use crate::model::{
    compare_versions, Action, Group, PrinterColumn, Resource, ScalePaths, SelectableField,
    Subresource, VERB_ORDER,
};

impl<'d> Lowering<'d> {
    /// Groups in `x-virt-api-groups` order with the versions their resource paths are under.
    pub(super) fn groups(&mut self, routes: &[RouteDraft<'d>]) -> Vec<Group> {
        let mut groups: Vec<Group> = self
            .doc
            .api_groups
            .iter()
            .map(|g| Group { name: g.clone(), versions: Vec::new(), listed: Vec::new() })
            .collect();
        for route in routes {
            let serves =
                |k: &DraftKind| matches!(k, DraftKind::Resource { .. } | DraftKind::Action { .. });
            if !route.ops.iter().any(|op| serves(&op.kind)) {
                continue;
            }
            // The path's group-version, not the kind's: they differ for a subresource of another
            // group's kind.
            let Some(rp) = parse_resource_path(route.path) else { continue };
            if let Some(g) = groups.iter_mut().find(|g| g.name == rp.group) {
                if !g.versions.iter().any(|v| v == rp.version) {
                    g.versions.push(rp.version.to_string());
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
    pub(super) fn resources(
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
            let missing: Vec<_> =
                sub.actions().iter().filter(|a| !acts.contains(a)).map(|a| a.as_str()).collect();
            if !missing.is_empty() {
                let msg = format!(
                    "the `{}` subresource must serve {}; missing: {}",
                    sub.as_str(),
                    sub.actions_in_words(),
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
                    let mut verbs: Vec<&str> = VERB_ORDER
                        .into_iter()
                        .filter(|verb| acts.iter().any(|a| a.verb() == *verb))
                        .collect();
                    // kube lists a built-in kind's verbs sorted, a custom resource's in
                    // apiextensions' order (built-in kinds are those taking strategic merge
                    // patches).
                    if r.strategic_merge_patch {
                        verbs.sort_unstable();
                    }
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
                                // Checked with the kind's other facts (`check_virt_resource`).
                                cell: c
                                    .cell
                                    .as_ref()
                                    .and_then(|v| crate::model::Cell::parse(v).ok()),
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
                        finalize_subresource: sub_actions.contains_key(&(i, Subresource::Finalize)),
                        binding_subresource: sub_actions.contains_key(&(i, Subresource::Binding)),
                        eviction_subresource: sub_actions.contains_key(&(i, Subresource::Eviction)),
                        log_subresource: sub_actions.contains_key(&(i, Subresource::Log)),
                        selectable_fields: r
                            .selectable_fields
                            .iter()
                            .map(|f| SelectableField {
                                name: selectable_name(f),
                                json_path: f.json_path.clone(),
                                missing: self.missing_text(d.name, r, &f.json_path),
                            })
                            .collect(),
                        namespaces: r.namespaces,
                        events: r.events,
                        dns_subdomain_names: r.dns_subdomain_names,
                        dns1035_label_names: r.dns1035_label_names,
                        kube_role: r.kube_role,
                        service_addresses: r.service_addresses,
                        data_rules: d.data_rules.clone(),
                        generation: r.generation,
                        strategic_merge_patch: r.strategic_merge_patch,
                        update_rules: d.update_rules.clone(),
                        default_class: d.default_class.clone(),
                        definition: d.name.to_string(),
                    });
                }
            }
        }
        self.check_resources(&resources);
        (resources, index)
    }

    /// A marker such as `x-virt-resource.namespaces` names one kind at most (in any of its
    /// versions).
    fn at_most_one_kind(
        &mut self,
        resources: &[Resource],
        marker: &str,
        marks: impl Fn(&Resource) -> bool,
    ) {
        let mut kinds: Vec<String> = resources
            .iter()
            .filter(|r| marks(r))
            .map(|r| format!("{}.{}", r.kind, r.group))
            .collect();
        kinds.dedup();
        if kinds.len() > 1 {
            self.problem(
                "document",
                format!("x-virt-resource.{marker} marks more than one kind: {}", kinds.join(", ")),
            );
        }
    }

    /// Facts that must hold across the versions of a kind, and between kinds of a group.
    fn check_resources(&mut self, resources: &[Resource]) {
        // One kind (in any of its versions) is the namespaces, one the events.
        self.at_most_one_kind(resources, "namespaces", |r| r.namespaces);
        self.at_most_one_kind(resources, "events", |r| r.events);
        for role in [
            crate::swagger::KubeRole::Service,
            crate::swagger::KubeRole::Pod,
            crate::swagger::KubeRole::Endpoints,
            crate::swagger::KubeRole::EndpointSlices,
            crate::swagger::KubeRole::Node,
            crate::swagger::KubeRole::Claim,
            crate::swagger::KubeRole::Volume,
            crate::swagger::KubeRole::StorageClass,
            crate::swagger::KubeRole::Fault,
        ] {
            let what = format!("kubeRole {}", role.variant());
            self.at_most_one_kind(resources, &what, |r| r.kube_role == Some(role));
        }
        self.check_default_classes(resources);
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
                        || other.namespaces != r.namespaces
                        || other.events != r.events
                        || other.dns_subdomain_names != r.dns_subdomain_names
                        || other.dns1035_label_names != r.dns1035_label_names
                        || other.kube_role != r.kube_role
                        || other.service_addresses != r.service_addresses
                        || other.generation != r.generation
                        || other.strategic_merge_patch != r.strategic_merge_patch
                        || other.data_rules != r.data_rules
                        || other.token_field != r.token_field)
                {
                    let msg = format!(
                        "plural, singular, scope, tokenRequest, generation, strategicMergePatch and dataRules must match {} (same kind)",
                        other.definition
                    );
                    self.problem(&ctx, msg);
                    break;
                }
                if same_kind
                    && (other.status_subresource != r.status_subresource
                        || other.scale != r.scale
                        || other.finalize_subresource != r.finalize_subresource
                        || other.binding_subresource != r.binding_subresource
                        || other.eviction_subresource != r.eviction_subresource
                        || other.log_subresource != r.log_subresource)
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
}

#[cfg(test)]
mod tests {
    use super::super::testing::{assert_problem, assert_problems, lower_json};
    use crate::test_doc::TestDoc;

    /// The legacy core group (`""` in x-virt-api-groups) is served under `/api/<version>`, with no
    /// group document, and its kinds lower like any other's.
    #[test]
    fn the_core_group_is_served_under_api() {
        use crate::model::{Handler, OperationKind};
        let mut d = TestDoc::new(&["", "a.io"]);
        d.kind("", "v1", "ConfigMap", "configmaps", true);
        d.kind("", "v1", "Namespace", "namespaces", false);
        d.status("", "v1", "Namespace");
        d.kind("a.io", "v1", "Thing", "things", true);
        // kube's own kinds take strategic merge patches.
        let mut doc = d.build();
        for (def, path) in [
            ("io.k8s.api.core.v1.ConfigMap", "/api/v1/namespaces/{namespace}/configmaps/{name}"),
            ("io.k8s.api.core.v1.Namespace", "/api/v1/namespaces/{name}"),
            ("io.k8s.api.core.v1.Namespace", "/api/v1/namespaces/{name}/status"),
        ] {
            doc["definitions"][def]["x-virt-resource"]["strategicMergePatch"] =
                serde_json::json!(true);
            doc["paths"][path]["patch"]["consumes"] = serde_json::json!([
                "application/merge-patch+json",
                "application/strategic-merge-patch+json"
            ]);
        }
        let api = lower_json(doc).unwrap();
        let r: Vec<_> =
            api.resources.iter().map(|r| (r.group.as_str(), r.plural.as_str())).collect();
        assert_eq!(r, [("", "configmaps"), ("", "namespaces"), ("a.io", "things")]);
        assert!(api.resources[1].status_subresource);
        // kube's own kinds list their verbs sorted, as its discovery does.
        let verbs =
            ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"];
        assert_eq!(api.resources[0].verbs, verbs);
        assert_eq!(api.resources[2].verbs[..3], ["delete", "deletecollection", "get"]);
        let route = |p: &str| {
            api.routes.iter().find(|r| r.path == p).unwrap_or_else(|| panic!("no route {p}"))
        };
        assert_eq!(route("/api/v1/namespaces/{namespace}/configmaps/{name}").resource, Some(0));
        assert_eq!(route("/api/v1/namespaces/{name}").resource, Some(1));
        assert_eq!(route("/api/v1/namespaces/{name}/status").resource, Some(1));
        assert_eq!(route("/api/v1/watch/namespaces/{namespace}/configmaps").resource, Some(0));
        let discovery = &route("/api/v1/").operations[0].kind;
        let core_v1 = Handler::ApiResources { group: 0, version: "v1".into() };
        assert_eq!(discovery, &OperationKind::Handler(core_v1));
        let v3 = &route("/openapi/v3/api/{version}").operations[0].kind;
        assert_eq!(v3, &OperationKind::Handler(Handler::OpenapiV3Document { core: true }));
        assert_eq!(crate::emit::openapi_v3_path("", "v1"), "api/v1");
        // Without its `/api/v1/` discovery path the version is not served.
        d.remove_path("/api/v1/");
        let problems = lower_json(d.build()).unwrap_err();
        assert_problem(&problems, "no path has x-virt-handler `apiResources` for version v1");
    }

    /// `selectableFields` as a CRD declares them: checked against the schema, labelled by path
    /// or by name.
    #[test]
    fn selectable_fields_are_checked_against_the_schema() {
        use serde_json::{json, Value};
        let mut d = TestDoc::new(&["a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        let with = |fields: Value| {
            let mut doc = d.build();
            let def = &mut doc["definitions"]["io.a.v1.Thing"];
            def["properties"]["spec"]["properties"] = json!({
                "color": {"type": "string"}, "size": {"type": "integer"},
                "on": {"type": "boolean"}, "tags": {"type": "array"},
                "owner": {"$ref": "#/definitions/io.a.v1.Owner"}});
            def["x-virt-resource"]["selectableFields"] = fields;
            doc["definitions"]["io.a.v1.Owner"] =
                json!({"type": "object", "properties": {"component": {"type": "string"}}});
            lower_json(doc)
        };
        let api = with(json!([{"jsonPath": ".spec.color"},
                              {"jsonPath": ".spec.owner.component", "name": "source"}]))
        .unwrap();
        let fields: Vec<_> = api.resources[0]
            .selectable_fields
            .iter()
            .map(|f| (f.name.as_str(), f.json_path.as_str()))
            .collect();
        assert_eq!(fields, [("spec.color", ".spec.color"), ("source", ".spec.owner.component")]);
        let cases = [
            (json!([{"jsonPath": "spec.color"}]), "`spec.color` is not a simple JSON path"),
            (json!([{"jsonPath": ".spec.tags[0]"}]), "`.spec.tags[0]` is not a simple JSON path"),
            (
                json!([{"jsonPath": ".metadata.labels"}]),
                "is not a simple JSON path outside .metadata",
            ),
            (json!([{"jsonPath": ".spec.shape"}]), "`.spec.shape` is not declared in the schema"),
            (json!([{"jsonPath": ".spec.tags"}]), "`.spec.tags` is of type array"),
            (
                json!([{"jsonPath": ".spec.color"}, {"jsonPath": ".spec.size", "name": "spec.color"}]),
                "label `spec.color` is repeated or reserved",
            ),
            (json!([{"jsonPath": ".spec.on", "name": "metadata.on"}]), "label `metadata.on`"),
            (json!([{"jsonPath": ".spec.on", "where": 1}]), "unknown field `where`"),
        ];
        for (fields, want) in cases {
            let problems = with(fields.clone()).unwrap_err();
            assert_problem(&problems, want);
        }
        let nine: Vec<Value> = (0..9).map(|_| json!({"jsonPath": ".spec.on"})).collect();
        assert_problem(&with(Value::Array(nine)).unwrap_err(), "at most 8 selectableFields");
    }

    #[test]
    fn protobuf_numbers_are_checked() {
        use serde_json::json;
        let mut d = TestDoc::new(&["a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        let mut doc = d.build();
        let props = &mut doc["definitions"]["io.a.v1.Thing"]["properties"];
        props["metadata"]["x-virt-proto-tag"] = json!(1);
        props["spec"]["x-virt-proto-tag"] = json!(2);
        lower_json(doc.clone()).unwrap();
        doc["definitions"]["io.a.v1.Thing"]["properties"]["spec"]["x-virt-proto-tag"] = json!(1);
        doc["definitions"]["io.a.v1.Thing"]["properties"]["kind"] = json!({"x-virt-proto-tag": 0});
        doc["definitions"]["io.a.v1.Thing"]["x-virt-proto-type"] = json!("duration");
        let problems = lower_json(doc).unwrap_err();
        assert_problem(&problems, "x-virt-proto-tag 1 is repeated");
        assert_problem(&problems, "kind: x-virt-proto-tag 0 is not a protobuf field number");
        assert_problem(&problems, "x-virt-proto-type \"duration\" is not one of");
    }

    /// Computed printer cells: parsed, checked, and only instead of a jsonPath.
    #[test]
    fn computed_printer_cells() {
        use crate::model::Cell;
        use serde_json::json;
        let cell = |v| Cell::parse(&v);
        assert_eq!(
            cell(
                json!({"join": {"separator": "/", "parts": [{"lower": ".involvedObject.kind"}, ".involvedObject.name"]}})
            ),
            Ok(Cell::Join(
                "/".into(),
                vec![
                    Cell::Lower(Box::new(Cell::Path(".involvedObject.kind".into()))),
                    Cell::Path(".involvedObject.name".into()),
                ]
            ))
        );
        assert_eq!(
            cell(json!({"firstOf": [".series.count", ".count", 1]})),
            Ok(Cell::FirstOf(vec![
                Cell::Path(".series.count".into()),
                Cell::Path(".count".into()),
                Cell::Int(1)
            ]))
        );
        assert_eq!(cell(json!({"count": [".data", ".binaryData"]})).map(|_| ()), Ok(()));
        assert_eq!(cell(json!("Pending")), Ok(Cell::Str("Pending".into())));
        assert_eq!(
            cell(json!({"age": ".metadata.creationTimestamp"})),
            Ok(Cell::Age(Box::new(Cell::Path(".metadata.creationTimestamp".into()))))
        );
        assert_eq!(cell(json!({"printer": "podStatus"})), Ok(Cell::Printer("podStatus".into())));
        assert_eq!(cell(json!(false)), Ok(Cell::Bool(false)));
        for (bad, want) in [
            (json!({"printer": "podColour"}), "printer: \"podColour\" is none of podReady"),
            (json!({"count": []}), "count: expects a non-empty list"),
            (json!({"sum": [".a"]}), "unknown cell function `sum`"),
            (json!({"join": {"parts": [".a"]}}), "join: expects"),
            (json!(1.5), "1.5 is not an integer"),
            (json!([".a"]), "is not a cell"),
            (json!("."), "`.` is not a JSONPath"),
        ] {
            let err = cell(bad).unwrap_err();
            assert!(err.contains(want), "{err} / {want}");
        }
        let mut d = TestDoc::new(&["a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        let with = |column: serde_json::Value| {
            let mut doc = d.build();
            doc["definitions"]["io.a.v1.Thing"]["x-virt-resource"]["printerColumns"] =
                json!([column]);
            lower_json(doc)
        };
        let api = with(json!({"name": "Data", "type": "integer", "description": "keys",
                              "cell": {"count": [".data"]}}))
        .unwrap();
        let column = &api.resources[0].printer_columns[0];
        assert_eq!(
            (column.json_path.as_str(), column.cell.clone()),
            ("", Some(Cell::Count(vec![Cell::Path(".data".into())])))
        );
        for (column, want) in [
            (
                json!({"name": "D", "type": "integer", "description": "x", "jsonPath": ".a", "cell": ".b"}),
                "give jsonPath or cell, not both",
            ),
            (
                json!({"name": "D", "type": "integer", "cell": ".b"}),
                "a computed cell needs a description",
            ),
            (
                json!({"name": "D", "type": "integer", "description": "x", "cell": {"max": 1}}),
                "cell unknown cell function `max`",
            ),
            (json!({"name": "D", "type": "integer"}), "jsonPath must start with `.`"),
        ] {
            assert_problem(&with(column).unwrap_err(), want);
        }
    }

    #[test]
    fn one_cluster_scoped_kind_may_be_the_namespaces() {
        use serde_json::json;
        let mut d = TestDoc::new(&["", "a.io"]);
        d.kind("", "v1", "Namespace", "namespaces", false);
        d.kind("a.io", "v1", "Thing", "things", true);
        d.kind("a.io", "v1", "Other", "others", false);
        let mark = |doc: &mut serde_json::Value, def: &str| {
            doc["definitions"][def]["x-virt-resource"]["namespaces"] = json!(true);
        };
        let mut doc = d.build();
        mark(&mut doc, "io.k8s.api.core.v1.Namespace");
        let api = lower_json(doc.clone()).unwrap();
        let marked: Vec<_> =
            api.resources.iter().filter(|r| r.namespaces).map(|r| r.kind.as_str()).collect();
        assert_eq!(marked, ["Namespace"]);
        let mut two = doc.clone();
        mark(&mut two, "io.a.v1.Other");
        assert_problem(
            &lower_json(two).unwrap_err(),
            "x-virt-resource.namespaces marks more than one kind",
        );
        mark(&mut doc, "io.a.v1.Thing");
        assert_problem(&lower_json(doc).unwrap_err(), "the namespace kind is cluster-scoped");
    }

    #[test]
    fn strategic_merge_patch_is_consumed_exactly_by_the_kinds_marked_for_it() {
        use serde_json::json;
        const SMP: &str = "application/strategic-merge-patch+json";
        let mut d = TestDoc::new(&["", "a.io"]);
        d.kind("", "v1", "ConfigMap", "configmaps", true);
        d.kind("a.io", "v1", "Thing", "things", true);
        let cm = "/api/v1/namespaces/{namespace}/configmaps/{name}";
        let mut doc = d.build();
        doc["definitions"]["io.k8s.api.core.v1.ConfigMap"]["x-virt-resource"]
            ["strategicMergePatch"] = json!(true);
        assert_problem(
            &lower_json(doc.clone()).unwrap_err(),
            "PATCH must consume application/strategic-merge-patch+json (its kind is marked",
        );
        doc["paths"][cm]["patch"]["consumes"] = json!(["application/merge-patch+json", SMP]);
        let api = lower_json(doc.clone()).unwrap();
        let marked: Vec<_> = api
            .resources
            .iter()
            .filter(|r| r.strategic_merge_patch)
            .map(|r| r.kind.as_str())
            .collect();
        assert_eq!(marked, ["ConfigMap"]);
        doc["paths"][cm]["get"]["consumes"] = json!([SMP]);
        assert_problem(
            &lower_json(doc).unwrap_err(),
            "GET must not consume application/strategic-merge-patch+json",
        );
    }

    #[test]
    fn one_namespaced_kind_with_an_events_fields_may_be_the_events() {
        use serde_json::json;
        let mut d = TestDoc::new(&["", "a.io"]);
        d.kind("", "v1", "Event", "events", true);
        d.kind("a.io", "v1", "Other", "others", true);
        d.kind("a.io", "v1", "Global", "globals", false);
        let s = json!({"type": "string"});
        let event_schema = json!({
            "metadata": {"type": "object"},
            "involvedObject": {"type": "object", "properties": {
                "kind": s, "namespace": s, "name": s, "uid": s, "apiVersion": s,
                "resourceVersion": s, "fieldPath": s}},
            "source": {"$ref": "#/definitions/io.k8s.api.core.v1.EventSource"},
            "reason": s, "message": s, "type": s, "count": {"type": "integer"},
            "firstTimestamp": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Time"},
            "lastTimestamp": {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Time"},
            "reportingComponent": s, "reportingInstance": s,
        });
        let mut doc = d.build();
        let defs = doc["definitions"].as_object_mut().unwrap();
        defs.insert(
            "io.k8s.api.core.v1.EventSource".into(),
            json!({"type": "object", "properties": {"component": s, "host": s}}),
        );
        defs.insert(
            "io.k8s.apimachinery.pkg.apis.meta.v1.Time".into(),
            json!({"type": "string", "format": "date-time"}),
        );
        for def in ["io.k8s.api.core.v1.Event", "io.a.v1.Other", "io.a.v1.Global"] {
            defs[def]["properties"] = event_schema.clone();
        }
        let mark = |doc: &mut serde_json::Value, def: &str| {
            doc["definitions"][def]["x-virt-resource"]["events"] = json!(true);
        };
        mark(&mut doc, "io.k8s.api.core.v1.Event");
        let api = lower_json(doc.clone()).unwrap();
        let marked: Vec<_> =
            api.resources.iter().filter(|r| r.events).map(|r| r.kind.as_str()).collect();
        assert_eq!(marked, ["Event"]);
        let mut two = doc.clone();
        mark(&mut two, "io.a.v1.Other");
        assert_problem(
            &lower_json(two).unwrap_err(),
            "x-virt-resource.events marks more than one kind",
        );
        let mut global = doc.clone();
        mark(&mut global, "io.a.v1.Global");
        assert_problem(&lower_json(global).unwrap_err(), "the events kind is namespaced");
        let props = &mut doc["definitions"]["io.k8s.api.core.v1.Event"]["properties"];
        props["count"] = s.clone();
        props.as_object_mut().unwrap().remove("reportingInstance");
        let problems = lower_json(doc).unwrap_err();
        assert_problem(&problems, "`.count` must be declared of type integer, found string");
        assert_problem(
            &problems,
            "`.reportingInstance` must be declared of type string, found nothing",
        );
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
            "definition io.a.v1alpha1.Thing: plural, singular, scope, tokenRequest, generation, strategicMergePatch and dataRules must match io.a.v1.Thing (same kind)",
            "definition io.a.v1alpha1.Gizmo: plural `gizmos` is also used by io.a.v1.Widget",
            "definition io.a.v1alpha1.Gizmo: Gizmo is not served in a.io/v1, the group's preferred (storage) version",
            "definition io.a.v1alpha1.Gizmo: no definition has GVK a.io/v1alpha1 GizmoList",
            "(listAIoV1alpha1NamespacedGizmo): `$ref: #/definitions/io.a.v1alpha1.GizmoList` does not name a definition",
            "(listAIoV1alpha1GizmoForAllNamespaces): `$ref: #/definitions/io.a.v1alpha1.GizmoList` does not name",
            "group a.io: no path has x-virt-handler `apiResources` for version v1alpha1",
        ];
        assert_problems(&problems, &expected);
    }
}
