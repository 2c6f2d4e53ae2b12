//! Builds small, valid documents for unit tests, which then break them on purpose.
//!
//! The documents have the shapes of `openapi/virt-apiserver.json` (the paths kube serves for a
//! kind, the `x-virt-*` extensions lowering reads) but carry only the parameters and responses
//! that lowering and the v3 derivation look at; the golden fixture covers the full shape.

use serde_json::{json, Map, Value};

/// The definition scale operations use.
pub const SCALE_DEF: &str = "io.k8s.api.autoscaling.v1.Scale";

pub struct TestDoc {
    doc: Value,
}

/// `a.io` + `v1` → `AIoV1`, the operationId infix kube uses (`CoreV1` for the core group).
fn gv_infix(group: &str, version: &str) -> String {
    let group = if group.is_empty() { "core" } else { group };
    let mut s: String = group.split('.').map(capitalize).collect();
    s.push_str(&capitalize(version));
    s
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

/// `a.io` → `io.a`; the core group's definitions are kube's `io.k8s.api.core`.
fn reverse_dns(group: &str) -> String {
    if group.is_empty() {
        return "io.k8s.api.core".into();
    }
    group.split('.').rev().collect::<Vec<_>>().join(".")
}

/// Where a group-version's paths start: `/apis/<group>/<version>`, `/api/<version>` for core.
fn base(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

fn handler(id: &str, name: &str) -> Value {
    json!({"operationId": id, "x-virt-handler": name, "produces": ["application/json"],
           "responses": {"200": {"description": "OK"}}})
}

impl TestDoc {
    /// A document with the non-resource paths and one `apiGroup` path per group.
    pub fn new(groups: &[&str]) -> TestDoc {
        let mut doc = json!({
            "swagger": "2.0",
            "info": {"title": "test", "version": "0.0.1"},
            "consumes": ["application/json"],
            "produces": ["application/json"],
            "paths": {
                "/": {"get": handler("getRoot", "root")},
                "/api": {"get": handler("getCoreAPIVersions", "api")},
                "/apis": {"get": handler("getAPIVersions", "apis")},
                "/version": {"get": handler("getCodeVersion", "version")},
                "/healthz": {"get": handler("getHealthz", "ping")},
                "/openapi/v2": {"get": handler("getOpenapiV2", "openapiV2")},
                "/openapi/v3": {"get": handler("getOpenapiV3", "openapiV3Index")},
                "/openapi/v3/apis/{group}/{version}": {
                    "parameters": [
                        {"name": "group", "in": "path", "required": true, "type": "string"},
                        {"name": "version", "in": "path", "required": true, "type": "string"}],
                    "get": handler("getOpenapiV3Document", "openapiV3Document")},
                "/openapi/v3/api/{version}": {
                    "parameters": [
                        {"name": "version", "in": "path", "required": true, "type": "string"}],
                    "get": handler("getOpenapiV3CoreDocument", "openapiV3Document")},
            },
            "definitions": {
                "Status": {"type": "object", "properties": {"code": {"type": "integer"}}},
            },
            "parameters": {
                "namespace": {"name": "namespace", "in": "path", "required": true, "type": "string"},
                "name": {"name": "name", "in": "path", "required": true, "type": "string"},
                "fieldValidation": {"name": "fieldValidation", "in": "query", "type": "string", "uniqueItems": true},
            },
            "x-virt-api-groups": groups,
        });
        let paths = doc["paths"].as_object_mut().unwrap();
        for g in groups.iter().filter(|g| !g.is_empty()) {
            let id = format!("get{}APIGroup", gv_infix(g, ""));
            paths.insert(format!("/apis/{g}/"), json!({"get": handler(&id, "apiGroup")}));
        }
        TestDoc { doc }
    }

    fn paths(&mut self) -> &mut Map<String, Value> {
        self.doc["paths"].as_object_mut().unwrap()
    }

    fn definition(&mut self, group: &str, version: &str, kind: &str, resource: Option<Value>) {
        let name = format!("{}.{version}.{kind}", reverse_dns(group));
        let mut def = json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object"},
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            },
            "x-kubernetes-group-version-kind": [{"group": group, "version": version, "kind": kind}],
        });
        if let Some(r) = resource {
            def["x-virt-resource"] = r;
        }
        self.doc["definitions"].as_object_mut().unwrap().insert(name, def);
    }

    fn ensure_version_path(&mut self, group: &str, version: &str) {
        let path = format!("{}/", base(group, version));
        if !self.paths().contains_key(&path) {
            let id = format!("get{}APIResources", gv_infix(group, version));
            self.paths().insert(path, json!({"get": handler(&id, "apiResources")}));
        }
    }

    fn op(&self, id: String, action: &str, gvk: &Value, response: &str) -> Value {
        let mut op = json!({
            "operationId": id,
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk,
            "responses": {"200": {"description": "OK", "schema": {"$ref": format!("#/definitions/{response}")}}},
        });
        match action {
            "patch" => {
                op["consumes"] =
                    json!(["application/json-patch+json", "application/merge-patch+json"]);
                op["parameters"] = json!([{"$ref": "#/parameters/fieldValidation"},
                    {"name": "body", "in": "body", "required": true, "schema": {"type": "object"}}]);
            }
            "post" | "put" => {
                op["parameters"] = json!([{"name": "body", "in": "body", "required": true,
                    "schema": {"$ref": format!("#/definitions/{response}")}}]);
            }
            _ => {}
        }
        op
    }

    /// A stored kind in one version with the full set of paths kube serves for one.
    pub fn kind(&mut self, group: &str, version: &str, kind: &str, plural: &str, namespaced: bool) {
        let resource = json!({"plural": plural, "namespaced": namespaced, "shortNames": [],
                              "printerColumns": [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]});
        self.definition(group, version, kind, Some(resource));
        self.definition(group, version, &format!("{kind}List"), None);
        self.ensure_version_path(group, version);
        let gvk = json!({"group": group, "version": version, "kind": kind});
        let x = gv_infix(group, version);
        let obj = format!("{}.{version}.{kind}", reverse_dns(group));
        let list = format!("{obj}List");
        let base = base(group, version);
        let ns = if namespaced { "Namespaced" } else { "" };
        let ns_seg = if namespaced { "/namespaces/{namespace}" } else { "" };
        let mut coll_params = vec![];
        if namespaced {
            coll_params.push(json!({"$ref": "#/parameters/namespace"}));
        }
        let mut item_params = coll_params.clone();
        item_params.push(json!({"$ref": "#/parameters/name"}));

        let coll = json!({
            "parameters": coll_params,
            "get": self.op(format!("list{x}{ns}{kind}"), "list", &gvk, &list),
            "post": self.op(format!("create{x}{ns}{kind}"), "post", &gvk, &obj),
            "delete": self.op(format!("delete{x}Collection{ns}{kind}"), "deletecollection", &gvk, "Status"),
        });
        let item = json!({
            "parameters": item_params,
            "get": self.op(format!("read{x}{ns}{kind}"), "get", &gvk, &obj),
            "put": self.op(format!("replace{x}{ns}{kind}"), "put", &gvk, &obj),
            "patch": self.op(format!("patch{x}{ns}{kind}"), "patch", &gvk, &obj),
            "delete": self.op(format!("delete{x}{ns}{kind}"), "delete", &gvk, "Status"),
        });
        let watch_coll = json!({"parameters": coll_params,
            "get": self.op(format!("watch{x}{ns}{kind}List"), "watchlist", &gvk, "Status")});
        let watch_item = json!({"parameters": item_params,
            "get": self.op(format!("watch{x}{ns}{kind}"), "watch", &gvk, "Status")});
        let paths = self.paths();
        paths.insert(format!("{base}{ns_seg}/{plural}"), coll);
        paths.insert(format!("{base}{ns_seg}/{plural}/{{name}}"), item);
        if namespaced {
            let all = json!({"get": self.op(format!("list{x}{kind}ForAllNamespaces"), "list", &gvk, &list)});
            let watch_all = json!({"get": self.op(format!("watch{x}{kind}ListForAllNamespaces"), "watchlist", &gvk, "Status")});
            let paths = self.paths();
            paths.insert(format!("{base}/{plural}"), all);
            paths.insert(format!("{base}/watch{ns_seg}/{plural}"), watch_coll);
            paths.insert(format!("{base}/watch{ns_seg}/{plural}/{{name}}"), watch_item);
            paths.insert(format!("{base}/watch/{plural}"), watch_all);
        } else {
            paths.insert(format!("{base}/watch/{plural}"), watch_coll);
            paths.insert(format!("{base}/watch/{plural}/{{name}}"), watch_item);
        }
    }

    /// The `status` subresource of a kind added with [`TestDoc::kind`].
    pub fn status(&mut self, group: &str, version: &str, kind: &str) {
        self.subresource_under(group, group, version, kind, "status");
    }

    /// The `scale` subresource of a kind added with [`TestDoc::kind`]: its paths, its
    /// `x-virt-resource.scale` and the Scale definition.
    pub fn scale(&mut self, group: &str, version: &str, kind: &str) {
        self.subresource_under(group, group, version, kind, "scale");
    }

    /// The `status` or `scale` subresource of a kind of `group` added with [`TestDoc::kind`],
    /// served under `under` in the same version; when the groups differ the path item names the
    /// kind with `x-virt-subresource-of`, and `under` gets its `apiResources` path.
    pub fn subresource_under(
        &mut self,
        under: &str,
        group: &str,
        version: &str,
        kind: &str,
        sub: &str,
    ) {
        let name = format!("{}.{version}.{kind}", reverse_dns(group));
        let resource = &self.doc["definitions"][&name]["x-virt-resource"];
        let plural = resource["plural"].as_str().expect("a kind").to_string();
        let namespaced = resource["namespaced"].as_bool().expect("a kind");
        let (gvk, obj) = if sub == "scale" {
            self.doc["definitions"][&name]["x-virt-resource"]["scale"] = json!({
                "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas",
                "labelSelectorPath": ".status.labelSelector"});
            self.doc["definitions"].as_object_mut().unwrap().insert(
                SCALE_DEF.into(),
                json!({"type": "object", "properties": {"spec": {"type": "object"}},
                       "x-kubernetes-group-version-kind": [{"group": "autoscaling", "version": "v1", "kind": "Scale"}]}),
            );
            (json!({"group": "autoscaling", "version": "v1", "kind": "Scale"}), SCALE_DEF.into())
        } else {
            (json!({"group": group, "version": version, "kind": kind}), name)
        };
        let x = gv_infix(under, version);
        let ns = if namespaced { "Namespaced" } else { "" };
        let ns_seg = if namespaced { "/namespaces/{namespace}" } else { "" };
        let mut params = vec![];
        if namespaced {
            params.push(json!({"$ref": "#/parameters/namespace"}));
        }
        params.push(json!({"$ref": "#/parameters/name"}));
        let suffix = capitalize(sub);
        let mut item = json!({
            "parameters": params,
            "get": self.op(format!("read{x}{ns}{kind}{suffix}"), "get", &gvk, &obj),
            "put": self.op(format!("replace{x}{ns}{kind}{suffix}"), "put", &gvk, &obj),
            "patch": self.op(format!("patch{x}{ns}{kind}{suffix}"), "patch", &gvk, &obj),
        });
        if under != group {
            item["x-virt-subresource-of"] = json!({"group": group, "plural": plural});
            self.ensure_version_path(under, version);
        }
        self.paths()
            .insert(format!("{}{ns_seg}/{plural}/{{name}}/{sub}", base(under, version)), item);
    }

    /// An `x-virt-action` (`method` put or get) on a namespaced kind of `group` added with
    /// [`TestDoc::kind`], served under `under` in the same version.
    pub fn action_under(
        &mut self,
        under: &str,
        group: &str,
        version: &str,
        plural: &str,
        action: &str,
        method: &str,
    ) {
        let id = format!("{method}{}{}", gv_infix(under, version), capitalize(action));
        let mut op = json!({"operationId": id, "x-virt-action": action,
                            "responses": {"200": {"description": "OK"}}});
        if method == "put" {
            op["consumes"] = json!(["application/json"]);
            op["parameters"] = json!([{"name": "body", "in": "body", "required": false,
                                       "schema": {"type": "object"}}]);
        }
        let item = json!({
            "parameters": [{"$ref": "#/parameters/namespace"}, {"$ref": "#/parameters/name"}],
            "x-virt-subresource-of": {"group": group, "plural": plural},
            method: op,
        });
        self.ensure_version_path(under, version);
        let path =
            format!("{}/namespaces/{{namespace}}/{plural}/{{name}}/{action}", base(under, version));
        self.paths().insert(path, item);
    }

    /// A create-only, never stored, namespaced token request kind.
    pub fn token_kind(
        &mut self,
        group: &str,
        version: &str,
        kind: &str,
        plural: &str,
        field: &str,
    ) {
        let resource =
            json!({"plural": plural, "namespaced": true, "tokenRequest": {"field": field}});
        self.definition(group, version, kind, Some(resource));
        self.ensure_version_path(group, version);
        let gvk = json!({"group": group, "version": version, "kind": kind});
        let obj = format!("{}.{version}.{kind}", reverse_dns(group));
        let post = self.op(
            format!("create{}Namespaced{kind}", gv_infix(group, version)),
            "post",
            &gvk,
            &obj,
        );
        self.paths().insert(
            format!("/apis/{group}/{version}/namespaces/{{namespace}}/{plural}"),
            json!({"parameters": [{"$ref": "#/parameters/namespace"}], "post": post}),
        );
    }

    /// A kind definition with `x-virt-resource` that no path serves.
    pub fn unserved_kind(&mut self, group: &str, version: &str, kind: &str, plural: &str) {
        self.definition(group, version, kind, Some(json!({"plural": plural, "namespaced": true})));
    }

    pub fn remove_op(&mut self, path: &str, method: &str) {
        self.paths()[path].as_object_mut().unwrap().shift_remove(method).expect(method);
    }

    pub fn remove_path(&mut self, path: &str) {
        self.paths().shift_remove(path).expect(path);
    }

    pub fn remove_definition(&mut self, name: &str) {
        self.doc["definitions"].as_object_mut().unwrap().shift_remove(name).expect(name);
    }

    /// Sets (or, with `null`, removes) one field of one operation.
    pub fn set(&mut self, path: &str, method: &str, field: &str, value: Value) {
        let op = self.paths()[path][method].as_object_mut().expect(method);
        if value.is_null() {
            op.shift_remove(field);
        } else {
            op.insert(field.to_string(), value);
        }
    }

    pub fn set_path_params(&mut self, path: &str, params: Value) {
        self.paths()[path]["parameters"] = params;
    }

    /// Sets (or, with `null`, removes) one field of one path item.
    pub fn set_path_field(&mut self, path: &str, field: &str, value: Value) {
        let item = self.paths()[path].as_object_mut().expect(path);
        if value.is_null() {
            item.shift_remove(field);
        } else {
            item.insert(field.to_string(), value);
        }
    }

    pub fn add_path(&mut self, path: &str, method: &str, op: Value) {
        self.paths().insert(path.to_string(), json!({ method: op }));
    }

    pub fn build(&self) -> Value {
        self.doc.clone()
    }
}
