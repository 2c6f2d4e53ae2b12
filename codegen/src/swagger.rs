//! Serde types for the subset of Swagger 2.0 that virt-apiserver's document uses.
//!
//! These types only read; they check nothing beyond what serde needs to parse. Maps are
//! `IndexMap`s (and `serde_json` runs with `preserve_order`) so that document order survives:
//! route registration, `RESOURCES` and the derived OpenAPI v3 documents all follow it. Schemas
//! (`definitions`, body and response schemas) stay `serde_json::Value`: codegen only follows
//! their `$ref`s and copies them.

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::Value;

/// The whole document.
#[derive(Debug, Clone, Deserialize)]
pub struct Document {
    /// Must be `"2.0"`.
    pub swagger: String,
    pub info: Info,
    /// Default media types for operations that declare none.
    #[serde(default)]
    pub consumes: Vec<String>,
    #[serde(default)]
    pub produces: Vec<String>,
    #[serde(default)]
    pub paths: IndexMap<String, PathItem>,
    #[serde(default)]
    pub definitions: IndexMap<String, Value>,
    /// Shared parameters, referenced as `#/parameters/<name>`.
    #[serde(default)]
    pub parameters: IndexMap<String, Parameter>,
    /// `x-virt-api-groups`: every served group, in the order `/apis` lists them.
    #[serde(rename = "x-virt-api-groups", default)]
    pub api_groups: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct Info {
    pub title: String,
    pub version: String,
    #[serde(default)]
    pub description: Option<String>,
}

/// The HTTP methods a path item may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    Get,
    Put,
    Post,
    Delete,
    Options,
    Head,
    Patch,
}

impl Method {
    /// Upper-case name, as in messages and doc comments.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Put => "PUT",
            Method::Post => "POST",
            Method::Delete => "DELETE",
            Method::Options => "OPTIONS",
            Method::Head => "HEAD",
            Method::Patch => "PATCH",
        }
    }
}

/// One entry of `paths`. Path-level `parameters` apply to every operation of the path.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct PathItem {
    #[serde(default)]
    pub parameters: Vec<ParameterOrRef>,
    pub get: Option<Operation>,
    pub put: Option<Operation>,
    pub post: Option<Operation>,
    pub delete: Option<Operation>,
    pub options: Option<Operation>,
    pub head: Option<Operation>,
    pub patch: Option<Operation>,
    /// `x-virt-subresource-of` for every operation of the path, kept raw: lowering parses it
    /// into [`SubresourceOf`] and reports a bad one with the document's other problems.
    #[serde(rename = "x-virt-subresource-of")]
    pub subresource_of: Option<Value>,
}

impl PathItem {
    /// The operations present, in a fixed method order (a struct keeps no key order, and a fixed
    /// order makes the output independent of how the JSON happens to list methods).
    pub fn operations(&self) -> impl Iterator<Item = (Method, &Operation)> {
        [
            (Method::Get, &self.get),
            (Method::Post, &self.post),
            (Method::Put, &self.put),
            (Method::Patch, &self.patch),
            (Method::Delete, &self.delete),
            (Method::Head, &self.head),
            (Method::Options, &self.options),
        ]
        .into_iter()
        .filter_map(|(m, op)| op.as_ref().map(|op| (m, op)))
    }

    pub fn operation(&self, method: Method) -> Option<&Operation> {
        self.operations().find(|(m, _)| *m == method).map(|(_, op)| op)
    }
}

/// One operation, with the vendor extensions codegen reads.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Operation {
    pub operation_id: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    pub summary: Option<String>,
    pub description: Option<String>,
    /// `None` = inherit the document's `consumes`.
    pub consumes: Option<Vec<String>>,
    pub produces: Option<Vec<String>>,
    #[serde(default)]
    pub parameters: Vec<ParameterOrRef>,
    /// Keyed by status code (`"200"`) or `"default"`.
    #[serde(default)]
    pub responses: IndexMap<String, Response>,
    #[serde(default)]
    pub deprecated: bool,
    /// `x-kubernetes-action`: marks a resource operation (`get`, `list`, `post`, ...).
    #[serde(rename = "x-kubernetes-action")]
    pub action: Option<String>,
    /// `x-kubernetes-group-version-kind`: the object kind a resource operation serves.
    #[serde(rename = "x-kubernetes-group-version-kind")]
    pub gvk: Option<GroupVersionKind>,
    /// `x-virt-handler`: marks a non-resource operation and names its hand-written handler.
    #[serde(rename = "x-virt-handler")]
    pub handler: Option<String>,
    /// `x-virt-subresource-of`, kept raw as on [`PathItem`]; the operation's wins over its path's.
    #[serde(rename = "x-virt-subresource-of")]
    pub subresource_of: Option<Value>,
    /// `x-virt-action`: a KubeVirt action (`start`, `pause`, `guestosinfo`...) on a kind's
    /// object, served at `…/{name}/<action>` (PUT acts, GET reads); what it does is data beside
    /// the document.
    #[serde(rename = "x-virt-action")]
    pub virt_action: Option<String>,
    /// `x-virt-api-resources`, on an `apiResources` operation: entries its list holds besides
    /// the kinds', with only a name (virt-api lists its actions so).
    #[serde(rename = "x-virt-api-resources")]
    pub api_resources: Option<Vec<String>>,
}

/// `x-virt-subresource-of`: the kind, by group and plural, whose subresource a path serves when
/// the path is under another group (`/apis/subresources.kubevirt.io/v1/…/virtualmachines/{name}/…`
/// serves kubevirt.io's VirtualMachine).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubresourceOf {
    pub group: String,
    pub plural: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

/// A parameter given inline or as a reference to the document's shared `parameters`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ParameterOrRef {
    Ref {
        #[serde(rename = "$ref")]
        reference: String,
    },
    Inline(Parameter),
}

/// Where a parameter travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Location {
    Query,
    Path,
    Header,
    Body,
    FormData,
}

impl Location {
    pub fn as_str(self) -> &'static str {
        match self {
            Location::Query => "query",
            Location::Path => "path",
            Location::Header => "header",
            Location::Body => "body",
            Location::FormData => "formData",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Parameter {
    pub name: String,
    #[serde(rename = "in")]
    pub location: Location,
    pub description: Option<String>,
    #[serde(default)]
    pub required: bool,
    /// Body parameters only.
    pub schema: Option<Value>,
    /// Non-body parameters: `type`, `format`, `items`, `enum`, `default`, `uniqueItems`,
    /// `collectionFormat`, validation keywords and `x-` extensions, in document order.
    #[serde(flatten)]
    pub other: IndexMap<String, Value>,
}

impl Parameter {
    /// The `type` of a non-body parameter.
    pub fn type_name(&self) -> Option<&str> {
        self.other.get("type").and_then(Value::as_str)
    }
}

#[derive(Debug, Clone, Deserialize)]
pub struct Response {
    #[serde(default)]
    pub description: String,
    pub schema: Option<Value>,
}

/// `x-virt-resource` on a kind definition: what discovery and storage need beyond the GVK.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VirtResource {
    pub plural: String,
    /// Defaults to the lower-cased kind, as for CRDs.
    pub singular: Option<String>,
    pub namespaced: bool,
    #[serde(default)]
    pub short_names: Vec<String>,
    #[serde(default)]
    pub categories: Vec<String>,
    #[serde(default)]
    pub printer_columns: Vec<PrinterColumn>,
    /// Only on create-only token request kinds: answered, never stored.
    pub token_request: Option<TokenRequest>,
    /// Where the `scale` subresource reads and writes its numbers, as a CRD's
    /// `subresources.scale` says; required by (and only with) `/scale` paths.
    pub scale: Option<Scale>,
    /// Fields a `fieldSelector` may name besides `metadata.name` and `metadata.namespace`, as a
    /// CRD's `selectableFields` (kube's built-in kinds declare theirs the same way here).
    #[serde(default)]
    pub selectable_fields: Vec<SelectableField>,
    /// Marks the kind whose objects are the namespaces (kube's core/v1 Namespace): namespaced
    /// objects then need theirs to exist and not be terminating, unless the server runs with
    /// `--implicit-namespaces`.
    #[serde(default)]
    pub namespaces: bool,
    /// Marks the kind whose objects are the events (kube's core/v1 Event): what background
    /// work records (the garbage collector's warnings), and what expires after `--event-ttl`.
    #[serde(default)]
    pub events: bool,
    /// Names are RFC 1123 subdomains (dots allowed), as kube's own validation has them for
    /// most built-in kinds (an Event's `<object>.<nanos>`); otherwise the seed's labels (A.9).
    #[serde(default)]
    pub dns_subdomain_names: bool,
    /// Names are RFC 1035 labels (a letter first, at most 63 long), as kube validates a
    /// Service's (`ValidateServiceName`).
    #[serde(default, rename = "dns1035LabelNames")]
    pub dns1035_label_names: bool,
    /// The part the kind plays in kube's own controllers, which the server runs (one kind a
    /// role): `service` (its objects' `spec.selector` picks `pod` objects), `pod` (objects
    /// with an address and readiness, placed on a `node`), `node`, `endpoints` and
    /// `endpointSlices` (what the endpoints controllers write: `controllers::endpoints`, K8S
    /// pkg/controller/endpoint, endpointslice), and the volume binder's `claim`, `volume` and
    /// `storageClass` (`controllers::volumes`, K8S pkg/controller/volume/persistentvolume), and
    /// `fault`: the server's own faults its requests pass (`http::faults`, not kube's).
    #[serde(default)]
    pub kube_role: Option<KubeRole>,
    /// Marks the kind whose objects kube-apiserver's own registry gives cluster addresses
    /// (kube's core/v1 Service): a `spec.clusterIP` from `--service-cluster-ip-range` and a
    /// `nodePort` per port from `--service-node-port-range`, held while the object holds them
    /// (K8S pkg/registry/core/service/storage/alloc.go).
    #[serde(default)]
    pub service_addresses: bool,
    /// kube's validation of the kind's data maps (ConfigMap, Secret), as rules.
    pub data_rules: Option<DataRules>,
    /// Whether objects carry `metadata.generation` (the default, as for custom resources);
    /// `false` for built-in kinds whose strategies never set it.
    #[serde(default = "yes")]
    pub generation: bool,
    /// Whether PATCH takes `application/strategic-merge-patch+json`, as kube-apiserver takes it
    /// for its built-in kinds (never for custom resources): its PATCH operations must then list
    /// it in `consumes`, and others must not.
    #[serde(default)]
    pub strategic_merge_patch: bool,
    /// kube's update validation of the kind (`ValidateXUpdate`), as rules in kube's order.
    #[serde(default)]
    pub update_rules: Vec<UpdateRule>,
    /// On the claims' kind: which field the DefaultStorageClass admission plugin fills, from
    /// which kind's default object.
    pub default_class: Option<DefaultClass>,
}

/// One `x-virt-resource.updateRules` entry; `at` is a dotted path (`spec.containers`, `[*]` for
/// every item), `field` the path kube's cause names (default: `at`).
///
/// ```json
/// {"check": "immutable", "at": "provisioner", "message": "updates to provisioner are forbidden."}
/// {"check": "immutable", "at": "spec.volumeMode", "field": "volumeMode", "invalid": true,
///  "message": "field is immutable"}
/// {"check": "sameLength", "at": "spec.containers", "message": "…"}
/// {"check": "onlyAdditions", "at": "spec.tolerations", "ignoring": ["tolerationSeconds"], "message": "…"}
/// {"check": "onlyLowered", "at": "spec.activeDeadlineSeconds"}
/// {"check": "notBelow", "at": "spec.resources.requests.storage", "floor": "status.capacity.storage",
///  "message": "…"}
/// {"check": "frozen", "at": "spec", "only": ["hostPath"], "diff": "core.PodSpec", "message": "…",
///  "except": [{"path": "containers[*].image"}, {"path": "volumeName", "when": "oldUnset"},
///             {"path": "resources.requests.storage", "if": {"field": "status.phase", "equals": "Bound"}}]}
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateRule {
    /// `immutable`, `sameLength`, `onlyAdditions`, `onlyLowered`, `notBelow` or `frozen`.
    pub check: String,
    pub at: String,
    pub field: Option<String>,
    #[serde(default)]
    pub message: String,
    #[serde(default)]
    pub invalid: bool,
    /// `immutable`: an unset old value may be set (kube checks only when the old one is set).
    #[serde(default)]
    pub once: bool,
    #[serde(default)]
    pub ignoring: Vec<String>,
    pub floor: Option<String>,
    #[serde(default)]
    pub only: Vec<String>,
    #[serde(default)]
    pub except: Vec<UpdateException>,
    pub diff: Option<String>,
}

/// A path under a `frozen` value that may change: always, or `when` (`oldUnset`, `setOnce`,
/// `negativeToOne`), or `if` a field of the new object has a value.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateException {
    pub path: String,
    pub when: Option<String>,
    #[serde(rename = "if")]
    pub if_: Option<When>,
}

/// `x-virt-resource.defaultClass`: the claims' `field` (dotted) names an object of the
/// cluster-scoped kind `group`/`plural`; the newest annotated `"true"` under one of
/// `annotations` is the default; a claim with `skipAnnotation` already has a class.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DefaultClass {
    pub field: String,
    pub group: String,
    pub plural: String,
    pub annotations: Vec<String>,
    #[serde(default)]
    pub skip_annotation: String,
}

fn yes() -> bool {
    true
}

/// `x-virt-resource.kubeRole`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum KubeRole {
    Service,
    Pod,
    Endpoints,
    EndpointSlices,
    Node,
    Claim,
    Volume,
    StorageClass,
    Fault,
}

impl KubeRole {
    /// The variant's name in `crate::resource::KubeRole`.
    pub fn variant(self) -> &'static str {
        match self {
            KubeRole::Service => "Service",
            KubeRole::Pod => "Pod",
            KubeRole::Endpoints => "Endpoints",
            KubeRole::EndpointSlices => "EndpointSlices",
            KubeRole::Node => "Node",
            KubeRole::Claim => "Claim",
            KubeRole::Volume => "Volume",
            KubeRole::StorageClass => "StorageClass",
            KubeRole::Fault => "Fault",
        }
    }
}

/// `x-virt-resource.dataRules`. Fields are top-level properties of the kind; `requiredKeys[].map`
/// is a dotted path (`metadata.annotations`).
///
/// ```json
/// "dataRules": {
///   "keyMaps": ["data", "binaryData"],
///   "maxTotalSize": {"maps": ["data", "binaryData"], "bytes": 1048576, "field": ""},
///   "writeOnly": [{"field": "stringData", "into": "data"}],
///   "immutableAfterCreate": ["type"],
///   "immutableFlag": {"field": "immutable", "freezes": ["data"]},
///   "requiredKeys": [{"when": {"field": "type", "equals": "kubernetes.io/tls"},
///                     "map": "data", "keys": ["tls.crt", "tls.key"]}]
/// }
/// ```
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DataRules {
    #[serde(default)]
    pub key_maps: Vec<String>,
    pub max_total_size: Option<MaxTotalSize>,
    #[serde(default)]
    pub write_only: Vec<WriteOnly>,
    #[serde(default)]
    pub immutable_after_create: Vec<String>,
    pub immutable_flag: Option<ImmutableFlag>,
    #[serde(default)]
    pub required_keys: Vec<RequiredKeys>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MaxTotalSize {
    pub maps: Vec<String>,
    pub bytes: u64,
    /// The path the error names; empty for the whole object.
    #[serde(default)]
    pub field: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WriteOnly {
    pub field: String,
    pub into: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ImmutableFlag {
    pub field: String,
    pub freezes: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequiredKeys {
    pub when: When,
    pub map: String,
    pub keys: Vec<String>,
    /// At least one of `keys` instead of all of them.
    #[serde(default)]
    pub any: bool,
    #[serde(default)]
    pub non_empty: bool,
    /// `json`: the value must be a JSON object.
    pub format: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct When {
    pub field: String,
    pub equals: String,
}

/// One selectable field: a simple JSON path (`.spec.color`) to a string, integer or boolean. Its
/// selector label is the path without the leading dot unless `name` gives another (kube's Event
/// selects `.source.component` as `source`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SelectableField {
    pub json_path: String,
    pub name: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PrinterColumn {
    pub name: String,
    #[serde(rename = "type")]
    pub type_: String,
    #[serde(default)]
    pub format: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub priority: i32,
    /// A CRD column's simple JSONPath; or else `cell`.
    #[serde(default)]
    pub json_path: String,
    /// A computed cell, as kube's printers make its built-in kinds' cells: a `.path`, a number,
    /// another string (itself), `{"firstOf": [..]}`, `{"count": [..]}`, `{"lower": ..}`, `{"age": ..}` or
    /// `{"join": {"separator": "/", "parts": [..]}}` (lowered into `model::Cell`).
    pub cell: Option<Value>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenRequest {
    /// Dotted path of the spec field the signed token names, e.g. `spec.claimName`.
    pub field: String,
}

/// A CRD's `subresources.scale`: simple JSON paths (`.spec.replicas`) into the object.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scale {
    /// Under `.spec`: the Scale's `spec.replicas`.
    pub spec_replicas_path: String,
    /// Under `.status`: the Scale's `status.replicas`.
    pub status_replicas_path: String,
    /// Under `.spec` or `.status`, a string: the Scale's `status.selector`.
    pub label_selector_path: Option<String>,
}

/// Prefix of references into `definitions`.
pub use openapi_ref::DEFINITIONS_REF;
/// Prefix of references into the shared `parameters`.
pub const PARAMETERS_REF: &str = "#/parameters/";

/// Calls `f` with every `$ref` string found anywhere inside `value`.
pub fn visit_refs<'a>(value: &'a Value, f: &mut dyn FnMut(&'a str)) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match v {
                    Value::String(s) if k == "$ref" => f(s),
                    _ => visit_refs(v, f),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| visit_refs(v, f)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_operations_parameters_and_extensions() {
        let doc: Document = serde_json::from_str(
            r##"{
              "swagger": "2.0", "info": {"title": "t", "version": "1"},
              "x-virt-api-groups": ["g.io"],
              "parameters": {"pretty": {"name": "pretty", "in": "query", "type": "string", "uniqueItems": true}},
              "paths": {"/apis/g.io/v1/things/{name}": {
                "parameters": [{"$ref": "#/parameters/pretty"},
                               {"name": "name", "in": "path", "required": true, "type": "string"}],
                "patch": {"operationId": "patchThing", "consumes": ["application/merge-patch+json"],
                          "x-kubernetes-action": "patch",
                          "x-kubernetes-group-version-kind": {"group": "g.io", "version": "v1", "kind": "Thing"},
                          "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/T"}}}},
                "get": {"operationId": "readThing", "responses": {}}
              }}
            }"##,
        )
        .unwrap();
        assert_eq!(doc.api_groups, ["g.io"]);
        assert_eq!(doc.parameters["pretty"].type_name(), Some("string"));
        let item = &doc.paths["/apis/g.io/v1/things/{name}"];
        assert!(
            matches!(&item.parameters[0], ParameterOrRef::Ref { reference } if reference == "#/parameters/pretty")
        );
        assert!(
            matches!(&item.parameters[1], ParameterOrRef::Inline(p) if p.required && p.location == Location::Path)
        );
        let methods: Vec<_> = item.operations().map(|(m, _)| m).collect();
        assert_eq!(methods, [Method::Get, Method::Patch]);
        let patch = item.operation(Method::Patch).unwrap();
        assert_eq!(patch.action.as_deref(), Some("patch"));
        assert_eq!(patch.gvk.as_ref().unwrap().kind, "Thing");
        assert_eq!(
            patch.consumes.as_deref(),
            Some(&["application/merge-patch+json".to_string()][..])
        );
        assert!(item.get.as_ref().unwrap().consumes.is_none());
        let mut refs = vec![];
        visit_refs(patch.responses["200"].schema.as_ref().unwrap(), &mut |r| refs.push(r));
        assert_eq!(refs, ["#/definitions/T"]);
    }
}
