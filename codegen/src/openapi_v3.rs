//! Derives one OpenAPI 3.0 document per group-version from the Swagger 2.0 document.
//!
//! kubectl reads these (B.7, B.11): `explain` finds a kind's schema by its
//! `x-kubernetes-group-version-kind`, and the field-validation check looks for a PATCH operation
//! of the GVK that declares the `fieldValidation` query parameter among the operation's own
//! parameters. So every operation gets its path-level parameters copied in (kubectl does not read
//! path-item parameters), and shared parameters are inlined: kubectl reads each parameter's own
//! `name` and does not follow `$ref`s there.
//!
//! A group-version's document holds the paths of its resource operations and its `apiResources`
//! discovery path, and the definitions those operations reach (`components.schemas`, in
//! `definitions` order, refs rewritten). The conversion is mechanical: v2 body parameters become
//! `requestBody` with one content entry per `consumes` type, responses get one content entry per
//! `produces` type.

use std::collections::HashSet;

use indexmap::IndexMap;
use openapiv3::{
    Components, HeaderStyle, Info, MediaType, OpenAPI, ParameterData, ParameterSchemaOrContent,
    PathItem, PathStyle, QueryStyle, ReferenceOr, RequestBody, Response, Responses, Schema,
    StatusCode,
};
use serde_json::{json, Value};

use crate::model::{Api, Handler, OperationKind};
use crate::swagger::{
    self, Document, Location, Method, Parameter, ParameterOrRef, DEFINITIONS_REF, PARAMETERS_REF,
};

const SCHEMAS_REF: &str = "#/components/schemas/";

/// Every group-version's document as `(index key "apis/<g>/<v>", pretty JSON)`, in `GROUPS` order.
pub fn documents(doc: &Document, api: &Api) -> Result<Vec<(String, Vec<u8>)>, Vec<String>> {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    for (gi, group) in api.groups.iter().enumerate() {
        for version in &group.versions {
            let key = crate::emit::openapi_v3_path(&group.name, version);
            let mut gv = GroupVersion { doc, problems: Vec::new(), roots: Vec::new() };
            let spec = gv.document(api, gi, version);
            if gv.problems.is_empty() {
                let mut bytes = serde_json::to_vec_pretty(&spec).expect("OpenAPI serializes");
                bytes.push(b'\n');
                out.push((key, bytes));
            } else {
                problems.extend(gv.problems.into_iter().map(|p| format!("OpenAPI v3 {key}: {p}")));
            }
        }
    }
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems)
    }
}

/// Builds one document, remembering what its components must hold.
struct GroupVersion<'d> {
    doc: &'d Document,
    problems: Vec<String>,
    /// Schemas whose `$ref`s seed `components.schemas`.
    roots: Vec<&'d Value>,
}

impl<'d> GroupVersion<'d> {
    fn document(&mut self, api: &Api, group: usize, version: &str) -> OpenAPI {
        let doc = self.doc;
        let mut spec = OpenAPI {
            openapi: "3.0.0".into(),
            info: Info {
                title: doc.info.title.clone(),
                description: doc.info.description.clone(),
                version: doc.info.version.clone(),
                ..Default::default()
            },
            ..Default::default()
        };
        for route in &api.routes {
            let item = &doc.paths[&route.path];
            let mut v3_item = PathItem::default();
            let mut any = false;
            for op in &route.operations {
                let belongs = match &op.kind {
                    // The group-version whose URLs the path is under, which is not the kind's
                    // for a subresource of another group's kind.
                    OperationKind::Resource { .. } | OperationKind::Action { .. } => route
                        .served
                        .as_ref()
                        .is_some_and(|gv| gv.group == group && gv.version == version),
                    OperationKind::Handler(Handler::ApiResources { group: g, version: v }) => {
                        *g == group && v == version
                    }
                    OperationKind::Handler(_) => false,
                };
                if !belongs {
                    continue;
                }
                let source = item.operation(op.method).expect("lowered from this path item");
                let converted = self.operation(item, source);
                let slot = match op.method {
                    Method::Get => &mut v3_item.get,
                    Method::Put => &mut v3_item.put,
                    Method::Post => &mut v3_item.post,
                    Method::Delete => &mut v3_item.delete,
                    Method::Patch => &mut v3_item.patch,
                    Method::Head => &mut v3_item.head,
                    Method::Options => &mut v3_item.options,
                };
                *slot = Some(converted);
                any = true;
            }
            if any {
                spec.paths.paths.insert(route.path.clone(), ReferenceOr::Item(v3_item));
            }
        }
        let mut components = Components::default();
        for (name, def) in self.reachable_definitions() {
            let mut def = def.clone();
            if let Value::Object(map) = &mut def {
                // Our own extensions describe the server, not the schema.
                map.retain(|k, _| !k.starts_with("x-virt-"));
            }
            if let Some(s) = self.schema(&def, &format!("definition {name}")) {
                components.schemas.insert(name.to_string(), s);
            }
        }
        spec.components = Some(components);
        spec
    }

    fn operation(
        &mut self,
        item: &'d swagger::PathItem,
        op: &'d swagger::Operation,
    ) -> openapiv3::Operation {
        let doc = self.doc;
        let ctx = op.operation_id.clone().unwrap_or_default();
        // Path-level first, then the operation's own, which win on the same name and location.
        let mut merged: Vec<&'d Parameter> = Vec::new();
        for p in item.parameters.iter().chain(&op.parameters) {
            let param = match p {
                ParameterOrRef::Inline(p) => p,
                ParameterOrRef::Ref { reference } => {
                    let name = reference.strip_prefix(PARAMETERS_REF).expect("checked by lowering");
                    &doc.parameters[name]
                }
            };
            merged
                .retain(|q| (q.name.as_str(), q.location) != (param.name.as_str(), param.location));
            merged.push(param);
        }
        let consumes = media_types(op.consumes.as_ref().unwrap_or(&doc.consumes));
        let produces = media_types(op.produces.as_ref().unwrap_or(&doc.produces));

        let mut parameters = Vec::new();
        let mut request_body = None;
        for p in merged {
            if p.location == Location::Body {
                let schema = p.schema.as_ref().expect("checked by lowering");
                self.roots.push(schema);
                let schema = self.schema(schema, &format!("{ctx} body"));
                let content = consumes.iter().map(|c| {
                    (c.clone(), MediaType { schema: schema.clone(), ..Default::default() })
                });
                request_body = Some(ReferenceOr::Item(RequestBody {
                    description: p.description.clone(),
                    content: content.collect(),
                    required: p.required,
                    ..Default::default()
                }));
            } else if let Some(p) = self.parameter(p) {
                parameters.push(ReferenceOr::Item(p));
            }
        }

        let mut responses = Responses::default();
        for (code, r) in &op.responses {
            let schema = r.schema.as_ref().and_then(|s| {
                self.roots.push(s);
                self.schema(s, &format!("{ctx} response {code}"))
            });
            let content = match schema {
                Some(s) => produces
                    .iter()
                    .map(|m| {
                        (m.clone(), MediaType { schema: Some(s.clone()), ..Default::default() })
                    })
                    .collect(),
                None => IndexMap::new(),
            };
            let response = ReferenceOr::Item(Response {
                description: r.description.clone(),
                content,
                ..Default::default()
            });
            if code == "default" {
                responses.default = Some(response);
            } else if let Ok(n) = code.parse::<u16>() {
                responses.responses.insert(StatusCode::Code(n), response);
            } else {
                self.problems.push(format!("{ctx}: response code `{code}` is not a status code"));
            }
        }

        let mut extensions = IndexMap::new();
        if let Some(a) = &op.action {
            extensions.insert("x-kubernetes-action".to_string(), json!(a));
        }
        if let Some(g) = &op.gvk {
            extensions.insert(
                "x-kubernetes-group-version-kind".to_string(),
                json!({"group": g.group, "version": g.version, "kind": g.kind}),
            );
        }
        openapiv3::Operation {
            tags: op.tags.clone(),
            summary: op.summary.clone(),
            description: op.description.clone(),
            operation_id: op.operation_id.clone(),
            parameters,
            request_body,
            responses,
            deprecated: op.deprecated,
            extensions,
            ..Default::default()
        }
    }

    /// A non-body v2 parameter as a v3 parameter with a schema.
    fn parameter(&mut self, p: &'d Parameter) -> Option<openapiv3::Parameter> {
        let mut schema = serde_json::Map::new();
        let mut extensions = IndexMap::new();
        let mut collection_format = None;
        let mut allow_empty_value = None;
        for (k, v) in &p.other {
            match k.as_str() {
                k if k.starts_with("x-") => {
                    extensions.insert(k.to_string(), v.clone());
                }
                "collectionFormat" => collection_format = v.as_str(),
                "allowEmptyValue" => allow_empty_value = v.as_bool(),
                _ => {
                    schema.insert(k.clone(), v.clone());
                }
            }
        }
        // v2 arrays default to `csv`, which is v3's `form` with `explode: false`.
        let explode = (p.type_name() == Some("array")).then(|| collection_format == Some("multi"));
        let schema = self.schema(&Value::Object(schema), &format!("parameter {}", p.name))?;
        let parameter_data = ParameterData {
            name: p.name.clone(),
            description: p.description.clone(),
            required: p.required || p.location == Location::Path,
            deprecated: None,
            format: ParameterSchemaOrContent::Schema(schema),
            example: None,
            examples: IndexMap::new(),
            explode,
            extensions,
        };
        Some(match p.location {
            Location::Query => openapiv3::Parameter::Query {
                parameter_data,
                allow_reserved: false,
                style: QueryStyle::Form,
                allow_empty_value,
            },
            Location::Path => {
                openapiv3::Parameter::Path { parameter_data, style: PathStyle::Simple }
            }
            Location::Header => {
                openapiv3::Parameter::Header { parameter_data, style: HeaderStyle::Simple }
            }
            Location::Body | Location::FormData => {
                unreachable!("handled by the caller / rejected by lowering")
            }
        })
    }

    /// A v2 schema as a v3 schema, `$ref`s rewritten.
    fn schema(&mut self, v2: &Value, ctx: &str) -> Option<ReferenceOr<Schema>> {
        let mut v = v2.clone();
        rewrite_refs(&mut v);
        match serde_json::from_value(v) {
            Ok(s) => Some(s),
            Err(e) => {
                self.problems.push(format!("{ctx}: schema does not convert: {e}"));
                None
            }
        }
    }

    /// The definitions the roots reach, in `definitions` order.
    fn reachable_definitions(&self) -> Vec<(&'d String, &'d Value)> {
        let doc = self.doc;
        let mut seen: HashSet<&'d str> = HashSet::new();
        let mut queue: Vec<&'d str> = Vec::new();
        let push = |v: &'d Value, seen: &mut HashSet<&'d str>, queue: &mut Vec<&'d str>| {
            swagger::visit_refs(v, &mut |r| {
                if let Some(name) = r.strip_prefix(DEFINITIONS_REF) {
                    if doc.definitions.contains_key(name) && seen.insert(name) {
                        queue.push(name);
                    }
                }
            })
        };
        for root in &self.roots {
            push(root, &mut seen, &mut queue);
        }
        while let Some(name) = queue.pop() {
            push(&doc.definitions[name], &mut seen, &mut queue);
        }
        doc.definitions.iter().filter(|(n, _)| seen.contains(n.as_str())).collect()
    }
}

fn media_types(declared: &[String]) -> Vec<String> {
    if declared.is_empty() {
        vec!["application/json".to_string()]
    } else {
        declared.to_vec()
    }
}

fn rewrite_refs(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                match v {
                    Value::String(s) if k == "$ref" => {
                        if let Some(name) = s.strip_prefix(DEFINITIONS_REF) {
                            *s = format!("{SCHEMAS_REF}{name}");
                        }
                    }
                    _ => rewrite_refs(v),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{lower, STRATEGIC_MERGE_PATCH};
    use crate::test_doc::TestDoc;

    fn derive(d: &TestDoc) -> Vec<(String, Value)> {
        let doc: Document = serde_json::from_value(d.build()).unwrap();
        let api = lower(&doc).unwrap();
        documents(&doc, &api)
            .unwrap()
            .into_iter()
            .map(|(k, bytes)| (k, serde_json::from_slice(&bytes).unwrap()))
            .collect()
    }

    #[test]
    fn one_document_per_group_version_with_its_paths_only() {
        let mut d = TestDoc::new(&["a.io", "b.io"]);
        d.kind("a.io", "v1alpha1", "Thing", "things", true);
        d.kind("a.io", "v1", "Thing", "things", true);
        d.kind("b.io", "v1", "Gizmo", "gizmos", false);
        let docs = derive(&d);
        let keys: Vec<_> = docs.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["apis/a.io/v1", "apis/a.io/v1alpha1", "apis/b.io/v1"]);
        let (_, v1) = &docs[0];
        assert_eq!(v1["openapi"], "3.0.0");
        assert_eq!(v1["info"], json!({"title": "test", "version": "0.0.1"}));
        let paths: Vec<_> = v1["paths"].as_object().unwrap().keys().cloned().collect();
        assert!(paths.contains(&"/apis/a.io/v1/".to_string()));
        assert!(paths.iter().all(|p| p.starts_with("/apis/a.io/v1/")), "{paths:?}");
        let schemas: Vec<_> =
            v1["components"]["schemas"].as_object().unwrap().keys().cloned().collect();
        assert_eq!(schemas, ["Status", "io.a.v1.Thing", "io.a.v1.ThingList"]);
        assert!(v1["components"]["schemas"]["io.a.v1.Thing"].get("x-virt-resource").is_none());
        assert_eq!(
            v1["components"]["schemas"]["io.a.v1.Thing"]["x-kubernetes-group-version-kind"][0]
                ["kind"],
            "Thing"
        );
    }

    #[test]
    fn subresource_paths_join_their_kinds_document() {
        let mut d = TestDoc::new(&["a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        d.status("a.io", "v1", "Thing");
        d.scale("a.io", "v1", "Thing");
        let docs = derive(&d);
        let (_, v1) = &docs[0];
        let base = "/apis/a.io/v1/namespaces/{namespace}/things/{name}";
        let status = &v1["paths"][format!("{base}/status")]["patch"];
        assert_eq!(
            status["x-kubernetes-group-version-kind"],
            json!({"group": "a.io", "version": "v1", "kind": "Thing"})
        );
        let names: Vec<_> =
            status["parameters"].as_array().unwrap().iter().map(|p| &p["name"]).collect();
        assert_eq!(names, ["namespace", "name", "fieldValidation"]);
        let scale = &v1["paths"][format!("{base}/scale")]["put"];
        assert_eq!(
            scale["x-kubernetes-group-version-kind"],
            json!({"group": "autoscaling", "version": "v1", "kind": "Scale"})
        );
        assert_eq!(
            scale["responses"]["200"]["content"]["application/json"]["schema"],
            json!({"$ref": "#/components/schemas/io.k8s.api.autoscaling.v1.Scale"})
        );
        let schema = &v1["components"]["schemas"]["io.k8s.api.autoscaling.v1.Scale"];
        assert_eq!(schema["x-kubernetes-group-version-kind"][0]["kind"], "Scale");
    }

    #[test]
    fn a_subresource_of_another_groups_kind_joins_its_serving_document() {
        let mut d = TestDoc::new(&["a.io", "sub.a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        d.subresource_under("sub.a.io", "a.io", "v1", "Thing", "status");
        let docs = derive(&d);
        let keys: Vec<_> = docs.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["apis/a.io/v1", "apis/sub.a.io/v1"]);
        let paths = |i: usize| -> Vec<String> {
            docs[i].1["paths"].as_object().unwrap().keys().cloned().collect()
        };
        let status = "/apis/sub.a.io/v1/namespaces/{namespace}/things/{name}/status";
        assert_eq!(paths(1), ["/apis/sub.a.io/v1/", status]);
        assert!(paths(0).iter().all(|p| p.starts_with("/apis/a.io/v1/")));
        let (_, sub) = &docs[1];
        let get = &sub["paths"][status]["get"];
        assert_eq!(
            get["x-kubernetes-group-version-kind"],
            json!({"group": "a.io", "version": "v1", "kind": "Thing"})
        );
        assert!(get.get("x-virt-subresource-of").is_none());
        assert!(sub["components"]["schemas"].get("io.a.v1.Thing").is_some());
    }

    #[test]
    fn converts_operations() {
        let mut d = TestDoc::new(&["a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        let docs = derive(&d);
        let (_, v1) = &docs[0];
        let item = &v1["paths"]["/apis/a.io/v1/namespaces/{namespace}/things/{name}"];
        assert!(item.get("parameters").is_none());
        let patch = &item["patch"];
        assert_eq!(patch["x-kubernetes-action"], "patch");
        assert_eq!(
            patch["x-kubernetes-group-version-kind"],
            json!({"group": "a.io", "version": "v1", "kind": "Thing"})
        );
        // Inline, by name: kubectl's fieldValidation check reads names and follows no `$ref`.
        let params = patch["parameters"].as_array().unwrap();
        let names: Vec<&str> = params.iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["namespace", "name", "fieldValidation"]);
        assert!(params.iter().all(|p| p.get("$ref").is_none()));
        let content = patch["requestBody"]["content"].as_object().unwrap();
        let types: Vec<_> = content.keys().cloned().collect();
        assert_eq!(types, ["application/json-patch+json", "application/merge-patch+json"]);
        assert!(!types.iter().any(|t| t == STRATEGIC_MERGE_PATCH));
        assert_eq!(patch["requestBody"]["required"], true);
        assert_eq!(
            patch["responses"]["200"]["content"]["application/json"]["schema"],
            json!({"$ref": "#/components/schemas/io.a.v1.Thing"})
        );
        let fv = &params[2];
        assert_eq!(fv["in"], "query");
        assert_eq!(fv["schema"], json!({"type": "string", "uniqueItems": true}));
        let ns = &params[0];
        assert_eq!(
            (&ns["in"], &ns["required"], &ns["schema"]["type"]),
            (&json!("path"), &json!(true), &json!("string"))
        );
        assert!(v1["components"].get("parameters").is_none());
    }
}
