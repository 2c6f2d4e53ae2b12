//! The IR that `emit` and `openapi_v3` read, and the lowering that validates the Swagger document
//! into it.
//!
//! Lowering never stops at the first problem: every check pushes a message naming the path,
//! method and operationId (or the definition) it is about, and [`lower()`] fails once with all of
//! them, so one build shows everything wrong with the document.
//!
//! Here are the IR's types and the vocabulary the document's extensions use; `paths` takes
//! resource paths apart, `names` orders versions and spells handler names, and `lower` checks
//! and lowers the document, one file per part of it.
//!
//! # Subresources and `x-virt-subresource-of`
//!
//! A subresource path (`/apis/<group>/<version>/[namespaces/{namespace}/]<plural>/{name}/<sub>`)
//! belongs to a kind, found by group, version and plural. By default that is the path's own
//! group: `/apis/kubevirt.io/v1/…/virtualmachines/{name}/status` is VirtualMachine's. A path under
//! another group names its kind's group and plural with `x-virt-subresource-of`, on the path item
//! (for all its operations) or on one operation (which wins):
//!
//! ```json
//! "/apis/subresources.kubevirt.io/v1/namespaces/{namespace}/virtualmachines/{name}/status": {
//!   "x-virt-subresource-of": {"group": "kubevirt.io", "plural": "virtualmachines"}, ...
//! ```
//!
//! The kind is then kubevirt.io's VirtualMachine in the path's version (v1 here), and the path's
//! plural must be the kind's. The operation still calls the kind's verbs with the kind's
//! `ResourceInfo`; where it is served is the route's [`Route::served`]: that group-version
//! (which must be in `x-virt-api-groups` and have its discovery paths like any other) lists it,
//! its OpenAPI v3 document holds the path, and `configure` registers the path in its scope. Only
//! subresource paths take the extension, and it only names a kind that exists.

mod lower;
mod names;
mod paths;

pub use lower::lower;
pub use names::{compare_versions, snake_case};
pub use paths::path_params;

use crate::swagger::Method;

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
    /// Per version, the name-only entries its `x-virt-api-resources` adds to discovery.
    pub listed: Vec<(String, Vec<String>)>,
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
    /// Whether a `/finalize` path serves the kind.
    pub finalize_subresource: bool,
    /// Whether `/binding`, `/eviction` and `/log` paths serve the kind (kube's Pod's).
    pub binding_subresource: bool,
    pub eviction_subresource: bool,
    pub log_subresource: bool,
    /// `x-virt-resource.selectableFields`, validated against the kind's schema.
    pub selectable_fields: Vec<SelectableField>,
    /// Whether this kind's objects are the namespaces (`x-virt-resource.namespaces`).
    pub namespaces: bool,
    /// Whether this kind's objects are the events (`x-virt-resource.events`).
    pub events: bool,
    /// Whether names are DNS subdomains (`x-virt-resource.dnsSubdomainNames`).
    pub dns_subdomain_names: bool,
    /// Whether names are RFC 1035 labels (`x-virt-resource.dns1035LabelNames`).
    pub dns1035_label_names: bool,
    /// `x-virt-resource.kubeRole`: the kind's part in kube's own controllers.
    pub kube_role: Option<crate::swagger::KubeRole>,
    /// Whether the kind's objects get cluster IPs and node ports
    /// (`x-virt-resource.serviceAddresses`).
    pub service_addresses: bool,
    /// `x-virt-resource.dataRules`, checked against the kind's schema.
    pub data_rules: Option<DataRules>,
    /// `x-virt-resource.generation`: whether objects carry `metadata.generation`.
    pub generation: bool,
    /// `x-virt-resource.strategicMergePatch`: whether PATCH takes strategic merge patches.
    pub strategic_merge_patch: bool,
    /// `x-virt-resource.updateRules`, checked against the kind's schema.
    pub update_rules: Vec<UpdateRule>,
    /// `x-virt-resource.defaultClass`, checked against both kinds.
    pub default_class: Option<DefaultClass>,
    /// Name of the kind's definition.
    pub definition: String,
}

/// `x-virt-resource.dataRules`, checked (`crate::resource::DataRules`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DataRules {
    pub key_maps: Vec<DataMap>,
    pub max_total_size: Option<SizeLimit>,
    pub write_only: Vec<WriteOnly>,
    pub immutable_after_create: Vec<String>,
    pub immutable_flag: Option<ImmutableFlag>,
    pub required_keys: Vec<RequiredKeys>,
}

/// A top-level map of strings; `base64` when the schema says its values are bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataMap {
    pub field: String,
    pub base64: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SizeLimit {
    pub maps: Vec<DataMap>,
    pub bytes: u64,
    pub field: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOnly {
    pub field: String,
    pub into: String,
    pub base64: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImmutableFlag {
    pub field: String,
    pub freezes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequiredKeys {
    pub when_field: String,
    pub equals: String,
    pub map: String,
    pub base64: bool,
    pub keys: Vec<String>,
    pub any: bool,
    pub non_empty: bool,
    /// Only `json` so far.
    pub json: bool,
}

/// One `x-virt-resource.updateRules` entry, checked (`crate::resource::UpdateRule`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpdateRule {
    Immutable {
        at: String,
        field: String,
        message: String,
        invalid: bool,
        once: bool,
    },
    SameLength {
        at: String,
        field: String,
        message: String,
    },
    OnlyAdditions {
        at: String,
        field: String,
        ignoring: Vec<String>,
        message: String,
    },
    OnlyLowered {
        at: String,
        field: String,
    },
    NotBelow {
        at: String,
        field: String,
        floor: String,
        message: String,
    },
    Frozen {
        at: String,
        only: Vec<String>,
        except: Vec<Exception>,
        field: String,
        message: String,
        diff: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exception {
    pub path: String,
    pub when: Allowed,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowed {
    Always,
    OldUnset,
    SetOnce,
    NegativeToOne,
    FieldEquals(String, String),
}

/// `x-virt-resource.defaultClass`, checked (`crate::resource::DefaultClass`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DefaultClass {
    pub field: String,
    pub group: String,
    pub plural: String,
    pub annotations: Vec<String>,
    pub skip_annotation: String,
}

/// A field `fieldSelector` may name: its label and where it is in the object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SelectableField {
    /// The selector's label, e.g. `spec.color` or `source`.
    pub name: String,
    /// The JSON path, e.g. `.spec.color`.
    pub json_path: String,
    /// What the field reads as where an object lacks it: `false` for a built-in kind's boolean
    /// (kube selects by its Go struct's zero value), otherwise "".
    pub missing: String,
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
    /// Empty when `cell` computes the column.
    pub json_path: String,
    pub cell: Option<Cell>,
}

/// A computed printer cell (`crate::resource::Cell`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    Path(String),
    Int(i64),
    Bool(bool),
    Str(String),
    FirstOf(Vec<Cell>),
    Count(Vec<Cell>),
    Lower(Box<Cell>),
    Join(String, Vec<Cell>),
    Age(Box<Cell>),
    /// One of kube's printers of a built-in kind's cell (`rt::Printer`, by its camelCase name).
    Printer(String),
}

/// The printers `{"printer": name}` names: kube's printers.go cells that are programs over the
/// object (the server's `rt::Printer`, one variant each).
pub const PRINTERS: &[&str] = &[
    "podReady",
    "podStatus",
    "podRestarts",
    "podReadinessGates",
    "nodeStatus",
    "nodeRoles",
    "serviceExternalIP",
    "servicePorts",
    "serviceSelector",
    "endpoints",
    "terminatingPhase",
    "claimCapacity",
    "claimAccessModes",
    "claimStorageClass",
    "volumeAccessModes",
    "volumeClaim",
    "volumeStorageClass",
    "storageClassName",
    "endpointSlicePorts",
    "endpointSliceEndpoints",
];

impl Cell {
    /// A cell's JSON form in the document, checked; `Err` says what is wrong.
    pub fn parse(v: &serde_json::Value) -> Result<Cell, String> {
        use serde_json::Value;
        let list = |v: &Value| -> Result<Vec<Cell>, String> {
            let items = v.as_array().filter(|a| !a.is_empty()).ok_or("expects a non-empty list")?;
            items.iter().map(Cell::parse).collect()
        };
        match v {
            Value::String(s) if s.starts_with('.') => {
                if s.len() < 2 || s.contains(['{', '}', ' ']) {
                    return Err(format!("`{s}` is not a JSONPath"));
                }
                Ok(Cell::Path(s.clone()))
            }
            Value::String(s) => Ok(Cell::Str(s.clone())),
            Value::Bool(b) => Ok(Cell::Bool(*b)),
            Value::Number(n) => {
                n.as_i64().map(Cell::Int).ok_or_else(|| format!("{n} is not an integer"))
            }
            Value::Object(m) if m.len() == 1 => {
                let (op, arg) = m.iter().next().expect("one entry");
                let ctx = |e: String| format!("{op}: {e}");
                match op.as_str() {
                    "firstOf" => list(arg).map(Cell::FirstOf).map_err(ctx),
                    "count" => list(arg).map(Cell::Count).map_err(ctx),
                    "lower" => Cell::parse(arg).map(|c| Cell::Lower(Box::new(c))).map_err(ctx),
                    "age" => Cell::parse(arg).map(|c| Cell::Age(Box::new(c))).map_err(ctx),
                    "join" => {
                        let sep = arg.get("separator").and_then(Value::as_str);
                        let parts = arg.get("parts").map(list).transpose().map_err(ctx)?;
                        match (sep, parts, arg.as_object().map(|o| o.len())) {
                            (Some(s), Some(p), Some(2)) => Ok(Cell::Join(s.to_string(), p)),
                            _ => Err("join: expects {\"separator\": .., \"parts\": [..]}".into()),
                        }
                    }
                    "printer" => match arg.as_str() {
                        Some(name) if PRINTERS.contains(&name) => Ok(Cell::Printer(name.into())),
                        _ => Err(format!("printer: {arg} is none of {}", PRINTERS.join(", "))),
                    },
                    other => Err(format!(
                        "unknown cell function `{other}` (known: firstOf, count, lower, join, age, \
                         printer)"
                    )),
                }
            }
            other => Err(format!("{other} is not a cell")),
        }
    }
}

/// One document path: one actix `web::resource`.
#[derive(Debug, Clone)]
pub struct Route {
    /// The path as the document spells it.
    pub path: String,
    /// The patterns to register: the path plus its other spelling where kube serves both
    /// (with and without a trailing slash).
    pub patterns: Vec<String>,
    /// Path parameter names in path order.
    pub params: Vec<String>,
    /// For resource paths: the `RESOURCES` index its operations (and 405s) serve.
    pub resource: Option<usize>,
    /// For resource paths: the group-version whose URLs the path is under. The kind's own, but
    /// for a subresource of another group's kind (`x-virt-subresource-of`).
    pub served: Option<GroupVersion>,
    pub operations: Vec<Operation>,
}

/// A served group-version: `GROUPS[group]` in `version`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupVersion {
    pub group: usize,
    pub version: String,
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
    /// An `x-virt-action` on an object of `RESOURCES[resource]` (always namespaced): PUT acts,
    /// GET (`read`) answers from the object; not `named`, on no object (the namespace's);
    /// `params`: the path parameters after the action's name, given to its handler.
    Action { resource: usize, name: String, read: bool, named: bool, params: Vec<String> },
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
    /// kube's Namespace `finalize`: an update-only write of the object but its status (the
    /// namespace controller removes its `spec.finalizers` entry through it).
    Finalize,
    /// kube's Pod `binding`: a create of a core/v1 Binding that assigns the object to a node
    /// (K8S `pkg/registry/core/pod/storage/storage.go` BindingREST).
    Binding,
    /// kube's Pod `eviction`: a create of a policy/v1 Eviction that deletes the object
    /// (K8S `pkg/registry/core/pod/storage/eviction.go`).
    Eviction,
    /// kube's Pod `log`: a read of a container's log as text (K8S `pkg/registry/core/pod/rest/log.go`).
    Log,
}

impl Subresource {
    pub const ALL: [Subresource; 6] = [
        Subresource::Status,
        Subresource::Scale,
        Subresource::Finalize,
        Subresource::Binding,
        Subresource::Eviction,
        Subresource::Log,
    ];

    /// The actions the subresource serves, all of them required.
    pub fn actions(self) -> &'static [Action] {
        match self {
            Subresource::Status | Subresource::Scale => &SUBRESOURCE_ACTIONS,
            Subresource::Finalize => &[Action::Put],
            Subresource::Binding | Subresource::Eviction => &[Action::Post],
            Subresource::Log => &[Action::Get],
        }
    }

    /// Its actions in words: "get, put and patch", "put".
    pub fn actions_in_words(self) -> String {
        let words: Vec<&str> = self.actions().iter().map(|a| a.as_str()).collect();
        match words.split_last() {
            Some((last, [])) => last.to_string(),
            Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
            None => String::new(),
        }
    }

    pub fn parse(s: &str) -> Option<Subresource> {
        Subresource::ALL.into_iter().find(|r| r.as_str() == s)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Subresource::Status => "status",
            Subresource::Scale => "scale",
            Subresource::Finalize => "finalize",
            Subresource::Binding => "binding",
            Subresource::Eviction => "eviction",
            Subresource::Log => "log",
        }
    }
}

/// What every subresource serves, as a CRD's always do: read, replace and patch.
pub const SUBRESOURCE_ACTIONS: [Action; 3] = [Action::Get, Action::Put, Action::Patch];

/// The GVK `scale` operations carry, whatever the kind: (group, version, kind).
pub const SCALE_GVK: (&str, &str, &str) = ("autoscaling", "v1", "Scale");

/// The GVK `binding` operations carry: kube's core/v1 Binding (K8S api/openapi-spec/swagger.json).
pub const BINDING_GVK: (&str, &str, &str) = ("", "v1", "Binding");

/// The GVK `eviction` operations carry: kube's policy/v1 Eviction, served under core/v1
/// (K8S api/openapi-spec/swagger.json, `createCoreV1NamespacedPodEviction`).
pub const EVICTION_GVK: (&str, &str, &str) = ("policy", "v1", "Eviction");

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
    /// `/readyz`: kube's readiness checks, `shutdown` among them.
    Ready,
    StoreProbe,
    /// `POST /reset`: the store back to the fixtures.
    Reset,
    OpenapiV2,
    OpenapiV3Index,
    /// `/openapi/v3/apis/{group}/{version}`, or `/openapi/v3/api/{version}` for the core group.
    OpenapiV3Document {
        core: bool,
    },
}

/// The handler names `x-virt-handler` accepts.
pub const HANDLER_NAMES: [&str; 13] = [
    "root",
    "api",
    "apis",
    "apiGroup",
    "apiResources",
    "version",
    "ping",
    "ready",
    "storeProbe",
    "reset",
    "openapiV2",
    "openapiV3Index",
    "openapiV3Document",
];

/// Media type PATCH must never offer: kubectl would then send strategic merge patches (B.3).
pub const STRATEGIC_MERGE_PATCH: &str = "application/strategic-merge-patch+json";
