//! The per-kind facts the generated code hands to the generic handlers.
//!
//! Every value of these types is emitted by `codegen` from the OpenAPI document; no Rust file writes
//! one by hand. Behaviour that differs between kinds is a field here, never a per-kind module.

/// One kind served in one version of its group.
#[derive(Debug)]
pub struct ResourceInfo {
    /// API group, e.g. the `x-kubernetes-group-version-kind` group.
    pub group: &'static str,
    /// The version this entry serves; the URL's version segment.
    pub version: &'static str,
    /// The group's preferred version: the storage version named in `storageVersionHash`.
    pub storage_version: &'static str,
    /// Kind of a single object.
    pub kind: &'static str,
    /// Kind of a list answer (`<Kind>List`).
    pub list_kind: &'static str,
    /// Resource name in URLs; with the group it is the storage key, shared by all versions.
    pub plural: &'static str,
    /// Lower-case singular name for discovery.
    pub singular: &'static str,
    /// Whether objects live in a namespace.
    pub namespaced: bool,
    /// Discovery short names (`kubectl get vm`).
    pub short_names: &'static [&'static str],
    /// Discovery categories (`kubectl get all`).
    pub categories: &'static [&'static str],
    /// Discovery verbs, in kube-apiserver's order; derived from the operations the document lists.
    pub verbs: &'static [&'static str],
    /// Printer columns for Table output, after `Name` unless one of them has format `name` (as
    /// kube's printers for its built-in kinds place it themselves).
    pub printer_columns: &'static [PrinterColumn],
    /// Set for kinds that are answered, not stored (create-only token requests): the dotted path of
    /// the spec field the signed token names, e.g. `spec.pvcName`.
    pub token_field: Option<&'static str>,
    /// Whether the kind has a `status` subresource: its main endpoint then ignores `status`, and
    /// `/status` writes change nothing else (B.2).
    pub status_subresource: bool,
    /// Set when the kind has a `scale` subresource: where the Scale's numbers live.
    pub scale: Option<ScaleInfo>,
    /// Whether the kind has kube's Namespace `finalize` subresource (update only).
    pub finalize_subresource: bool,
    /// Whether the kind has kube's Pod `binding` subresource (create of a core/v1 Binding).
    pub binding_subresource: bool,
    /// Whether the kind has kube's Pod `eviction` subresource (create of a policy/v1 Eviction).
    pub eviction_subresource: bool,
    /// Whether the kind has kube's Pod `log` subresource (get, answered as text).
    pub log_subresource: bool,
    /// Fields a `fieldSelector` may name besides `metadata.name` and `metadata.namespace` (a
    /// CRD's `selectableFields`).
    pub selectable_fields: &'static [SelectableField],
    /// Whether this kind's objects are the namespaces (kube's core/v1 Namespace): namespaced
    /// objects then need theirs to exist and not be terminating (`registry::namespaces`).
    pub namespaces: bool,
    /// Whether this kind's objects are the events (kube's core/v1 Event): what background work
    /// records (`controllers::recorder`) and what expires `--event-ttl` after its last write.
    pub events: bool,
    /// Whether names are RFC 1123 subdomains (dots allowed), as kube validates an Event's;
    /// otherwise they are the seed's labels (A.9).
    pub dns_subdomain_names: bool,
    /// Whether names are RFC 1035 labels, as kube validates a Service's.
    pub dns1035_label_names: bool,
    /// The kind's part in kube's own controllers (`x-virt-resource.kubeRole`).
    pub kube_role: Option<KubeRole>,
    /// Whether objects get cluster IPs and node ports from the server's ranges, as kube's
    /// registry gives a Service's (`registry::addresses`).
    pub service_addresses: bool,
    /// kube's validation of the kind's data maps (`x-virt-resource.dataRules`), enforced on
    /// every write by `object::data_rules`.
    pub data_rules: Option<&'static DataRules>,
    /// Whether objects carry `metadata.generation`, set to 1 on create and bumped by changes
    /// outside metadata (custom resources do; kube's ConfigMap and Secret strategies do not).
    pub generation: bool,
    /// Whether PATCH takes strategic merge patches (`object::strategic_patch`), as
    /// kube-apiserver does for its built-in kinds; custom resources answer 415 for them.
    pub strategic_merge_patch: bool,
    /// kube's update validation of a built-in kind (`x-virt-resource.updateRules`, in kube's
    /// order), enforced on writes through the main endpoint by `object::update_rules`.
    pub update_rules: &'static [UpdateRule],
    /// Set on the claims' kind: the DefaultStorageClass admission plugin fills this field of a
    /// new object from the class marked default (`x-virt-resource.defaultClass`).
    pub default_class: Option<DefaultClass>,
}

/// One of kube's update checks, over dotted paths (`spec.containers`; `[*]` is every item).
/// `field` is the path kube's cause names.
#[derive(Debug)]
pub enum UpdateRule {
    /// The value may not change: a Forbidden cause with `message`, or (`invalid`) an Invalid
    /// one showing the new value (`ValidateImmutableField`); with `once`, an unset old value
    /// may be set.
    Immutable {
        at: &'static str,
        field: &'static str,
        message: &'static str,
        invalid: bool,
        once: bool,
    },
    /// A list may not grow or shrink; validation stops at this cause (`ValidateContainerUpdates`).
    SameLength { at: &'static str, field: &'static str, message: &'static str },
    /// Existing items must stay, compared without `ignoring`; items may be added
    /// (`validateOnlyAddedTolerations`).
    OnlyAdditions {
        at: &'static str,
        field: &'static str,
        ignoring: &'static [&'static str],
        message: &'static str,
    },
    /// A number in 0..=2^31-1 that may be set, or lowered, never raised or unset; validation
    /// stops at the first two causes (a pod's `activeDeadlineSeconds`).
    OnlyLowered { at: &'static str, field: &'static str },
    /// A quantity lowered below its old value must stay above the quantity at `floor` in the
    /// old object (a claim's request and its `status.capacity`).
    NotBelow { at: &'static str, field: &'static str, floor: &'static str, message: &'static str },
    /// The object at `at` (only the keys in `only`, when given) may not change but for
    /// `except`: a Forbidden cause whose message is followed by a line break and a diff of
    /// the old and the new value, headed by the Go type `diff` names.
    Frozen {
        at: &'static str,
        only: &'static [&'static str],
        except: &'static [Exception],
        field: &'static str,
        message: &'static str,
        diff: &'static str,
    },
}

/// A path under a `Frozen` value that may change, and when.
#[derive(Debug)]
pub struct Exception {
    pub path: &'static str,
    pub when: Allowed,
}

/// When an `Exception` lets its path change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowed {
    Always,
    /// While the old value is unset or empty (set once).
    OldUnset,
    /// From unset to a non-empty value.
    SetOnce,
    /// From a negative number to 1.
    NegativeToOne,
    /// While the field at the dotted path of the new object has the value.
    FieldEquals(&'static str, &'static str),
}

/// The DefaultStorageClass admission's relation: the claims' `field` (a dotted path) names an
/// object of the cluster-scoped kind `group`/`plural`; the newest of those annotated `true`
/// under one of `annotations` is the default. A claim annotated `skip_annotation` has a class.
#[derive(Debug)]
pub struct DefaultClass {
    pub field: &'static str,
    pub group: &'static str,
    pub plural: &'static str,
    pub annotations: &'static [&'static str],
    pub skip_annotation: &'static str,
}

/// The parts kinds play in kube's own controllers: the endpoints controllers' (K8S
/// pkg/controller/endpoint, endpointslice) service whose selector picks pods, the pods and the
/// nodes they run on, and the two kinds written; the volume binder's claims, volumes and
/// storage classes (K8S pkg/controller/volume/persistentvolume); and the server's own Fault
/// kind, which the filter chain follows (`http::faults`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// How a built-in kind's data maps are validated and written, as kube's ConfigMap and Secret
/// strategies do it; every path is a top-level field of the object unless said otherwise.
#[derive(Debug)]
pub struct DataRules {
    /// Maps whose keys must be config-map keys; a key may be in only one of them.
    pub key_maps: &'static [DataMap],
    /// A limit on the bytes the values of some maps hold together.
    pub max_total_size: Option<SizeLimit>,
    /// Write-only maps merged into another on every write (their keys win), then dropped.
    pub write_only: &'static [WriteOnly],
    /// Fields a write may not change once the object exists.
    pub immutable_after_create: &'static [&'static str],
    /// A boolean that, once true, freezes itself and some fields.
    pub immutable_flag: Option<ImmutableFlag>,
    /// Keys a map must hold when a field has a value (a Secret's type).
    pub required_keys: &'static [RequiredKeys],
}

/// A map of strings; `base64` when its values are bytes (`format: byte`).
#[derive(Debug)]
pub struct DataMap {
    pub field: &'static str,
    pub base64: bool,
}

#[derive(Debug)]
pub struct SizeLimit {
    pub maps: &'static [DataMap],
    pub bytes: usize,
    /// The path the error names (kube names `data` for a Secret, nothing for a ConfigMap).
    pub field: &'static str,
}

#[derive(Debug)]
pub struct WriteOnly {
    pub field: &'static str,
    pub into: &'static str,
    /// Whether the target holds bytes: the values are then base64-encoded into it.
    pub base64: bool,
}

#[derive(Debug)]
pub struct ImmutableFlag {
    pub field: &'static str,
    pub freezes: &'static [&'static str],
}

/// When `when_field` equals `equals`, the map at the dotted path `map` must hold `keys` (all of
/// them, or with `any` at least one), with non-empty values under `non_empty`, and values in
/// `format` when they are there.
#[derive(Debug)]
pub struct RequiredKeys {
    pub when_field: &'static str,
    pub equals: &'static str,
    pub map: &'static str,
    pub base64: bool,
    pub keys: &'static [&'static str],
    pub any: bool,
    pub non_empty: bool,
    pub format: Option<ValueFormat>,
}

/// A format a map value must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueFormat {
    /// A JSON object (or null), as Go's `json.Unmarshal` into a map accepts.
    Json,
}

/// A field `fieldSelector` may name: its label (`spec.color`, or kube's own such as `source`)
/// and a simple JSON path to a string, integer or boolean (`.spec.color`).
#[derive(Debug)]
pub struct SelectableField {
    pub name: &'static str,
    pub json_path: &'static str,
    /// What the field reads as where an object lacks it (`false` for a built-in kind's boolean).
    pub missing: &'static str,
}

/// A CRD's `subresources.scale`: simple JSON paths into the object, such as `.spec.replicas`.
#[derive(Debug)]
pub struct ScaleInfo {
    /// Under `.spec`: read and written as the Scale's `spec.replicas`.
    pub spec_replicas_path: &'static str,
    /// Under `.status`: read as the Scale's `status.replicas`.
    pub status_replicas_path: &'static str,
    /// A string field holding a label selector: read as the Scale's `status.selector`.
    pub label_selector_path: Option<&'static str>,
}

/// A CRD-style additional printer column.
#[derive(Debug)]
pub struct PrinterColumn {
    pub name: &'static str,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    pub type_: &'static str,
    pub format: &'static str,
    pub description: &'static str,
    pub priority: i32,
    /// Simple JSONPath such as `.status.printableStatus`; empty when `cell` computes the cell.
    pub json_path: &'static str,
    /// A cell computed from several fields, as kube's printers compute those of its built-in
    /// kinds (a ConfigMap's `DATA` counts two maps, an Event's `OBJECT` joins kind and name).
    pub cell: Option<&'static Cell>,
}

/// How a computed printer cell is made from the object (`x-virt-resource.printerColumns[].cell`).
#[derive(Debug)]
pub enum Cell {
    /// The value at a JSONPath, as `jsonPath` columns read it.
    Path(&'static str),
    Int(i64),
    Bool(bool),
    Str(&'static str),
    /// The first value that is set (not null, missing, "", 0, false or empty), else the last
    /// one's value as it is (a literal default).
    FirstOf(&'static [Cell]),
    /// How many entries the maps and lists hold, together (missing ones hold none).
    Count(&'static [Cell]),
    /// A string, lower-cased.
    Lower(&'static Cell),
    /// The parts that are set, as strings, joined by the separator.
    Join(&'static str, &'static [Cell]),
    /// A timestamp as the age kube's printers show (`translateTimestampSince`: `<unknown>` when
    /// unset).
    Age(&'static Cell),
    /// One of kube's printers' cells that is a program over the object (`object::printers`).
    Printer(Printer),
}

/// kube's printers.go cells that read several fields by rules (K8S
/// pkg/printers/internalversion/printers.go), each named for what it prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Printer {
    PodReady,
    PodStatus,
    PodRestarts,
    PodReadinessGates,
    NodeStatus,
    NodeRoles,
    ServiceExternalIP,
    ServicePorts,
    ServiceSelector,
    Endpoints,
    /// A volume's or claim's phase, `Terminating` while it is deleted.
    TerminatingPhase,
    ClaimCapacity,
    ClaimAccessModes,
    ClaimStorageClass,
    VolumeAccessModes,
    VolumeClaim,
    VolumeStorageClass,
    /// A storage class's name, ` (default)` after the default's.
    StorageClassName,
    EndpointSlicePorts,
    EndpointSliceEndpoints,
}

/// One API group, as `/apis` lists it.
#[derive(Debug)]
pub struct GroupInfo {
    pub name: &'static str,
    /// Served versions, preferred first.
    pub versions: &'static [&'static str],
    /// Per version, discovery entries with only a name (`x-virt-api-resources`).
    pub listed: &'static [(&'static str, &'static [&'static str])],
}

/// One OpenAPI v3 document, derived at build time from the v2 document.
#[derive(Debug)]
pub struct OpenApiV3Doc {
    /// `apis/<group>/<version>`, the key of the `/openapi/v3` index.
    pub path: &'static str,
    pub json: &'static [u8],
}

impl ResourceInfo {
    /// A namespaced custom resource with nothing optional, for unit tests to vary with
    /// `..ResourceInfo::EXAMPLE`, so a new field changes one literal.
    #[cfg(test)]
    pub const EXAMPLE: ResourceInfo = ResourceInfo {
        group: "g.io",
        version: "v1",
        storage_version: "v1",
        kind: "Thing",
        list_kind: "ThingList",
        plural: "things",
        singular: "thing",
        namespaced: true,
        short_names: &[],
        categories: &[],
        verbs: &[],
        printer_columns: &[],
        token_field: None,
        status_subresource: false,
        scale: None,
        finalize_subresource: false,
        binding_subresource: false,
        eviction_subresource: false,
        log_subresource: false,
        selectable_fields: &[],
        namespaces: false,
        events: false,
        dns_subdomain_names: false,
        dns1035_label_names: false,
        kube_role: None,
        service_addresses: false,
        data_rules: None,
        generation: true,
        strategic_merge_patch: false,
        update_rules: &[],
        default_class: None,
    };

    /// `<plural>.<group>`, the name kube-apiserver uses in messages.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.to_string()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `<Kind>.<group>`, used in Invalid messages.
    pub fn group_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.to_string()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    /// `<group>/<version>`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.to_string()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether objects of this kind are kept in the store.
    pub fn is_stored(&self) -> bool {
        self.token_field.is_none()
    }

    /// Whether discovery lists `verb` for this kind.
    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }
}
