//! KubeVirt's and CDI's behaviour as data: what their controllers do to objects under
//! `--simulate` (in the spirit of KWOK's Stages) and what virt-api answers always. A lifecycle
//! file (`openapi/lifecycles.yaml` and `openapi/actions.yaml` beside the document, read as one,
//! or `--simulate-config FILE` on top) lists, per kind:
//!
//! - `related`: objects read and acted on besides the object, by name (same name and
//!   namespace), as the object's controller (its `controller: true` ownerReference), by the
//!   name a field holds (`field: .spec.vmiName`), or lists: the objects it controls (`owned`),
//!   those naming it (`referencing`), those of a list of names (`names`), filtered by `where`
//!   (a list's objects are read without `metadata.managedFields`);
//! - `let`: the kind's named values, each a template or ordered cases `{when: predicate,
//!   value: template}` (first match wins), read as `$name` and computed when read (how KubeVirt
//!   computes `printableStatus` and mirrors conditions);
//! - `stages` (the controllers', under `--simulate`): a selector (a [`Pred`]), a delay with
//!   jitter, `let`s and steps. A delay may wait `until` a time the object holds (a deadline);
//! - `actions` (virt-api's action API, always served, [`action`]): `let`s, checks, and steps
//!   or an answer;
//! - `warnings` and `mutations`: virt-api's admission webhooks, always served (the warnings it
//!   answers a create or update of the object with; what it merges into a new object, and the
//!   finalizers its controllers then remove); `admission`: its validating webhooks on a create
//!   through a subresource of the object (a Pod's `eviction`, [`Admit`]); `validations`: those
//!   on a create or update of the object, rules of the server's run at a field ([`Validation`]).
//!
//! One binding form, [`Let`] (a name and a value, or cases), for a kind, a stage and an action;
//! a stage's and an action's are evaluated once, in order. One write vocabulary, [`Write`], for
//! stages and actions alike, each step guarded by an optional `when`: `patch` (a JSON merge
//! patch), `jsonPatch`, `finalizers`, `create` (from a template), `event`, `delete`, and
//! `call` (a JSON patch a named [`Procedure`] of the server computes, where a patch is a program
//! over the object's shape: virt-api's state-change requests), of the object or `of` a related
//! one (a list's first element), its main resource or `status`; the server runs both with one
//! executor, as the stage's or virt-api's field manager.
//!
//! Besides: `supersedes` keeps named stages from firing while a stage holds (the failures on
//! request, `simulate.virt-apiserver.io/fail`, supersede the normal step while the annotation
//! stays); a list element `...each` maps a list (a VM's volumes into export links); a related
//! object may be looked up in a namespace an expression names (a cluster-scoped clone's VMs);
//! `logs` are what a kind's containers write ([`logs`]), lines derived from the object's state;
//! `caCert()` asks the environment for a certificate, so this crate links no cryptography.
//!
//! Order is implicit, as in KWOK: a stage's selector matches what earlier stages wrote. The file
//! is compiled once when read: [`expr`] is the expression language, [`eval`] the templates and
//! the predicates (one module, as each evaluates the other), [`check`] the checker build.rs runs
//! on the built-in file and the server on `--simulate-config` (every error at once).
//!
//! This crate has no syn/quote: both build.rs and the server link it.

pub mod action;
pub mod check;
pub mod eval;
pub mod expr;
pub mod logs;

use std::cell::{RefCell, RefMut};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::Deserialize;
use serde_json::Value;

pub use eval::{Path, Pred, Template};
pub use expr::{CaCertFn, Rng};

/// A lifecycle file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Lifecycles {
    /// For `--simulate-config`: `replace` the built-in lifecycles, or `extend` them (the
    /// default: kinds merge, a stage or kind value of the same name replaces the built-in
    /// one).
    #[serde(default)]
    pub mode: Mode,
    /// The field managers stages write as, with the `source.component` of their Events.
    #[serde(default)]
    pub managers: BTreeMap<String, Manager>,
    #[serde(default)]
    pub kinds: Vec<Kind>,
    /// The simulated cluster's own objects, there whatever the kinds' objects do.
    #[serde(default)]
    pub cluster: Cluster,
}

/// Objects the simulated cluster is made of, registered when the simulation starts (and again
/// at each leadership term; one that exists is left alone).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Cluster {
    /// One object of each entry per simulated node (`--simulate-nodes`): its template reads
    /// `$node` (the node's name) and `$nodeIP` (its address).
    #[serde(default)]
    pub per_node: Vec<ClusterObject>,
    /// Objects the cluster has once (its storage classes), made by their `manager`.
    #[serde(default)]
    pub objects: Vec<ClusterObject>,
}

/// One object of the simulated cluster: its kind and a template of it. Its `status`, which a
/// status subresource would drop on create, is written after it, as its owner reports it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterObject {
    pub resource: ResourceRef,
    pub template: Template,
    /// The field manager that makes it (a node's is its `kubelet`).
    #[serde(default = "kubelet")]
    pub manager: String,
}

fn kubelet() -> String {
    "kubelet".into()
}

/// The variables a per-node object's template reads.
pub const NODE_VARS: [&str; 2] = ["node", "nodeIP"];

/// The address of the simulated node of index `i` (0-based), beside its name ([`expr::node_name`]).
pub fn node_ip(i: usize) -> String {
    format!("192.168.66.{}", 101 + i % 150)
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Mode {
    #[default]
    Extend,
    Replace,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manager {
    pub component: String,
}

/// A kind by group (`""` for core) and kind name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceRef {
    pub group: String,
    pub kind: String,
}

impl std::fmt::Display for ResourceRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}", self.kind)
        } else {
            write!(f, "{}/{}", self.group, self.kind)
        }
    }
}

/// One kind's lifecycle.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Kind {
    pub resource: ResourceRef,
    #[serde(default)]
    pub related: BTreeMap<String, Related>,
    /// The kind's named values, read as `$name` wherever the kind's object is read (computed
    /// when read, with `.` the object: how KubeVirt computes `printableStatus`).
    #[serde(default, rename = "let")]
    pub lets: Vec<Let>,
    #[serde(default)]
    pub stages: Vec<Stage>,
    /// The action API's calls on the kind's objects, by name ([`action`]).
    #[serde(default)]
    pub actions: BTreeMap<String, action::Action>,
    /// virt-api's admission warnings on a create or update of the object itself (not its
    /// status), in order: sent as `Warning` headers whenever their predicate holds of the
    /// object written. Served with or without `--simulate`, as the actions are.
    #[serde(default)]
    pub warnings: Vec<Warning>,
    /// virt-api's mutating webhooks on a create of the object, in order: each merges its
    /// template into the new object and appends its finalizers (once; only under `--simulate`,
    /// whose controllers remove them), before the object is validated, whoever creates it (a
    /// client, an action, the simulated runtime).
    #[serde(default)]
    pub mutations: Vec<Mutation>,
    /// virt-api's validating webhooks on a create through a subresource of the object (kube's
    /// Pod `eviction`), by subresource. Served with or without `--simulate`.
    #[serde(default)]
    pub admission: BTreeMap<String, Admit>,
    /// virt-api's validating webhooks on a create or update of the object itself, whose rules
    /// are programs over the spec's shape ([`Validation`]). Served with or without `--simulate`.
    #[serde(default)]
    pub validations: Vec<Validation>,
    /// What the object's containers write to their logs ([`logs`]), read whenever a log is
    /// asked for under `--simulate`.
    #[serde(default)]
    pub logs: Vec<logs::ContainerLog>,
}

/// A validating webhook on a create through a subresource (`$body` is what is created, the
/// Eviction): its `let`s, then its `checks` in order (the first that holds admits, or denies
/// with its code and message), then its `steps` (written as virt-api, a dry run when the
/// request is one), then `deny` (the answer after the writes; none admits). A failed write
/// denies with `onError` (reading `$error`, the write's message).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Admit {
    /// The webhook's name, which a denial names.
    pub webhook: String,
    #[serde(default, rename = "let")]
    pub lets: Vec<Let>,
    #[serde(default)]
    pub checks: Vec<AdmitCheck>,
    #[serde(default)]
    pub steps: Vec<Step>,
    #[serde(default)]
    pub deny: Option<Denial>,
    #[serde(default)]
    pub on_error: Option<Denial>,
}

/// One check of an [`Admit`]: when `when` holds, `allow`, or deny as `deny` says.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmitCheck {
    pub when: Pred,
    #[serde(default)]
    pub allow: bool,
    #[serde(default)]
    pub deny: Option<Denial>,
}

/// A webhook's refusal: its AdmissionResponse's Status code and message (a template).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Denial {
    pub code: u16,
    pub message: Template,
}

/// One create-time mutation: when `when` holds (always without one), `merge` (a template, as a
/// JSON merge patch) and the `finalizers` appended if absent.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Mutation {
    #[serde(default)]
    pub when: Option<Pred>,
    #[serde(default)]
    pub merge: Option<Template>,
    #[serde(default)]
    pub finalizers: Vec<String>,
}

/// A validating webhook on a create or update of the object: the server's `rule` run on the
/// part of the object at `at` (a dotted field path, which also prefixes the causes' fields, as
/// KubeVirt's admitters pass a `field.Path` down); a refusal is KubeVirt's 422 `Invalid` with
/// the causes (pkg/virt-api/webhooks/utils.go `ToAdmissionResponse`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Validation {
    /// The webhook's name, which a denial names.
    pub webhook: String,
    /// The operations it is registered for.
    pub operations: Vec<Operation>,
    pub at: String,
    pub rule: Rule,
}

/// An admission operation a webhook is registered for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Operation {
    Create,
    Update,
}

/// The validation rules the server implements (`src/behaviour/validations.rs`), each after the
/// KubeVirt function it is named for: a name here is one the server runs, or the file does not
/// parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Rule {
    /// vmi-create-admitter.go `validateAccessCredentials`, of a VMI spec's `accessCredentials`.
    AccessCredentials,
}

/// One admission warning: its text (a template) when `when` holds of the object.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Warning {
    pub when: Pred,
    pub message: Template,
}

/// How a related object is found from the object.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Related {
    pub resource: ResourceRef,
    pub by: By,
    /// For `owned`: only the objects this holds of.
    #[serde(default, rename = "where")]
    pub where_: Option<Pred>,
    /// The namespace to look in, an expression, for a cluster-scoped object relating to a
    /// namespaced one (the object's own namespace otherwise).
    #[serde(default)]
    pub namespace: Option<Path>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum By {
    /// The object of the same name, in the same namespace.
    Name,
    /// The object's controller (its ownerReference with `controller: true`).
    Controller,
    /// The object (same namespace) whose name the expression reads from this one.
    Field(Path),
    /// Every object (same namespace) this one controls, as a list (empty when none).
    Owned,
    /// Every object (same namespace) whose field the expression reads, in that object, holds
    /// this one's name, as a list (empty when none): a VMI's migrations (`.spec.vmiName`).
    Referencing(Path),
    /// The objects (same namespace) of the names the expression lists, as a list of those
    /// that exist: a VM's DataVolumes (`pluck(.spec.template.spec.volumes, 'dataVolume.name')`).
    Names(Path),
}

impl By {
    /// Whether the related object is a list (`owned`, `referencing`, `names`), which `where`
    /// filters.
    pub fn is_list(&self) -> bool {
        matches!(self, By::Owned | By::Referencing(_) | By::Names(_))
    }
}

/// The one binding form, of a kind, a stage or an action: a name and its value, a template or
/// the first of `cases` whose `when` holds (`null` when none does).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Let {
    pub name: String,
    #[serde(default)]
    pub value: Option<Template>,
    #[serde(default)]
    pub cases: Vec<Case>,
}

impl Let {
    /// Its value in `env`, with `.` reading `this`.
    pub fn eval(&self, this: &Value, env: &dyn expr::Env) -> Value {
        if let Some(v) = &self.value {
            return eval::render(v, this, env);
        }
        let case =
            self.cases.iter().find(|c| c.when.as_ref().is_none_or(|w| eval::matches(w, this, env)));
        case.map_or(Value::Null, |c| eval::render(&c.value, this, env))
    }
}

/// One case of a `let`: no `when` always matches.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Case {
    #[serde(default)]
    pub when: Option<Pred>,
    pub value: Template,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Stage {
    pub name: String,
    pub manager: String,
    pub selector: Pred,
    #[serde(default)]
    pub delay: Delay,
    /// Stages of the kind that do not fire for an object while this one's selector holds of it
    /// (a failure on request taking the place of the normal step).
    #[serde(default)]
    pub supersedes: Vec<String>,
    /// Evaluated once, in order, when the stage fires; read as `$name`.
    #[serde(default, rename = "let")]
    pub lets: Vec<Let>,
    pub steps: Vec<Step>,
}

/// `ms` plus a uniform share of `jitterMs`, scaled by `--simulate-speed`; with `until` (an
/// expression reading a time, such as a deadline or an expiry in the object), not before that
/// time, whatever the speed (a time written in an object is a promise to its readers).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Delay {
    #[serde(default)]
    pub ms: u64,
    #[serde(default)]
    pub jitter_ms: u64,
    #[serde(default)]
    pub until: Option<Path>,
}

/// One step of a stage or an action: a write, when `when` holds (always without one). The one
/// write vocabulary of both, run by one executor (the server's `behaviour::write`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Step {
    #[serde(default)]
    pub when: Option<Pred>,
    #[serde(flatten)]
    pub write: Write,
}

/// One write. `of` names a related object to act on instead of the object's own (a list's
/// first element).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Write {
    /// A JSON merge patch (a template); `subresource: status` writes through `/status` where
    /// the kind has one.
    #[serde(rename_all = "camelCase")]
    Patch {
        #[serde(default)]
        of: Option<String>,
        #[serde(default)]
        subresource: Option<String>,
        merge: Template,
    },
    /// A JSON patch (a template rendering to its operations; `test` them to write only over
    /// the state that was read).
    #[serde(rename_all = "camelCase")]
    JsonPatch {
        #[serde(default)]
        of: Option<String>,
        #[serde(default)]
        subresource: Option<String>,
        ops: Template,
    },
    Finalizers {
        #[serde(default)]
        of: Option<String>,
        #[serde(default)]
        add: Vec<String>,
        #[serde(default)]
        remove: Vec<String>,
    },
    /// Creates an object of `resource` from `template` (nulls dropped); one that exists is
    /// left alone by a stage.
    Create { resource: ResourceRef, template: Template },
    /// Records an Event (`message` is a template string) about the object or `of`.
    Event {
        #[serde(default)]
        of: Option<String>,
        #[serde(rename = "type")]
        type_: String,
        reason: String,
        message: Template,
    },
    /// Deletes the object or `of`, on the condition that it is still the one read (its UID as
    /// a precondition); `gracePeriodSeconds` as a kubelet's final delete gives 0 (K8S
    /// pkg/kubelet/status/status_manager.go), else the kind's own default.
    #[serde(rename_all = "camelCase")]
    Delete {
        #[serde(default)]
        of: Option<String>,
        #[serde(default)]
        grace_period_seconds: Option<i64>,
    },
    /// A JSON patch a `procedure` of the behaviour layer computes from the object written to
    /// and `with` (a template rendering to the procedure's arguments): for a patch whose
    /// operations follow the object's shape as a program, which reads badly as a template.
    #[serde(rename_all = "camelCase")]
    Call {
        #[serde(default)]
        of: Option<String>,
        #[serde(default)]
        subresource: Option<String>,
        procedure: Procedure,
        with: Template,
    },
}

/// The procedures a `call` names, implemented by the server's behaviour layer (each after the
/// KubeVirt function it is named for): a name here is one the server runs, or the file does not
/// parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Procedure {
    /// virt-api's `getChangeRequestJson` (pkg/virt-api/rest/lifecycle.go): `requests` queued in
    /// the object's `status.stateChangeRequests`, over what was read, a start failure dropped.
    ChangeRequest,
    /// virt-api's `getRunningPatch`: the run strategy (or the deprecated `spec.running`) set
    /// for `running`, over what was read.
    RunningPatch,
}

impl Procedure {
    /// The arguments `with` gives, by name.
    pub fn args(self) -> &'static [&'static str] {
        match self {
            Procedure::ChangeRequest => &["requests"],
            Procedure::RunningPatch => &["running"],
        }
    }
}

impl Write {
    pub fn of(&self) -> Option<&str> {
        match self {
            Write::Patch { of, .. }
            | Write::JsonPatch { of, .. }
            | Write::Finalizers { of, .. }
            | Write::Event { of, .. }
            | Write::Call { of, .. }
            | Write::Delete { of, .. } => of.as_deref(),
            Write::Create { .. } => None,
        }
    }

    pub fn subresource(&self) -> Option<&str> {
        match self {
            Write::Patch { subresource, .. }
            | Write::JsonPatch { subresource, .. }
            | Write::Call { subresource, .. } => subresource.as_deref(),
            _ => None,
        }
    }

    pub fn verb(&self) -> &'static str {
        match self {
            Write::Patch { .. } => "patch",
            Write::JsonPatch { .. } => "jsonPatch",
            Write::Finalizers { .. } => "finalizers",
            Write::Create { .. } => "create",
            Write::Event { .. } => "event",
            Write::Delete { .. } => "delete",
            Write::Call { .. } => "call",
        }
    }
}

/// Parses a lifecycle file (YAML or JSON); shape errors name the first problem.
pub fn parse(text: &str) -> Result<Lifecycles, String> {
    // Through JSON values: serde_json reads `{variant: value}` maps as enum variants.
    let value: Value = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
    if value.is_null() {
        return Ok(Lifecycles::default());
    }
    serde_json::from_value(value).map_err(|e| e.to_string())
}

impl Lifecycles {
    /// `extra` on top of `self`, as its `mode` says.
    pub fn merged(mut self, extra: Lifecycles) -> Lifecycles {
        if extra.mode == Mode::Replace {
            return extra;
        }
        self.managers.extend(extra.managers);
        if !extra.cluster.per_node.is_empty() {
            self.cluster = extra.cluster;
        }
        for kind in extra.kinds {
            match self.kinds.iter_mut().find(|k| k.resource == kind.resource) {
                None => self.kinds.push(kind),
                Some(mine) => {
                    mine.related.extend(kind.related);
                    for l in kind.lets {
                        match mine.lets.iter_mut().find(|m| m.name == l.name) {
                            Some(old) => *old = l,
                            None => mine.lets.push(l),
                        }
                    }
                    mine.actions.extend(kind.actions);
                    mine.warnings.extend(kind.warnings);
                    mine.mutations.extend(kind.mutations);
                    mine.admission.extend(kind.admission);
                    mine.validations.extend(kind.validations);
                    for log in kind.logs {
                        match mine.logs.iter_mut().find(|l| l.container == log.container) {
                            Some(old) => *old = log,
                            None => mine.logs.push(log),
                        }
                    }
                    for stage in kind.stages {
                        match mine.stages.iter_mut().find(|s| s.name == stage.name) {
                            Some(old) => *old = stage,
                            None => mine.stages.push(stage),
                        }
                    }
                }
            }
        }
        self
    }

    pub fn kind(&self, r: &ResourceRef) -> Option<&Kind> {
        self.kinds.iter().find(|k| &k.resource == r)
    }
}

/// Everything an evaluation reads: the object, its related objects and `let` values, the
/// kind's values, the time, the nodes and the seeded generator.
pub struct Ctx<'a> {
    pub kind: &'a Kind,
    pub object: &'a Value,
    /// Related objects present, then stage variables once evaluated; shared, as the related
    /// objects are the store's own decoded copies.
    pub named: BTreeMap<String, Arc<Value>>,
    pub now: String,
    pub nodes: usize,
    pub rng: RefCell<Rng>,
    /// What answers `caCert()` (`None`: it is null): the server's engine sets it for a stage's
    /// run, since this crate links no cryptography.
    pub ca_cert: Option<CaCertFn>,
    /// The kind's values being computed (one that reads itself is `null`).
    computing: RefCell<Vec<String>>,
    /// The kind's values computed so far, while `named` holds as many values as then (a kind's
    /// value reads the object and its related objects, which a context never changes once set,
    /// not a stage's own values): a stage's selector reads the same few many times.
    computed: RefCell<(usize, HashMap<String, Value>)>,
}

impl<'a> Ctx<'a> {
    pub fn new(kind: &'a Kind, object: &'a Value, now: String, nodes: usize, rng: Rng) -> Self {
        Ctx {
            kind,
            object,
            named: BTreeMap::new(),
            now,
            nodes,
            rng: RefCell::new(rng),
            ca_cert: None,
            computing: RefCell::default(),
            computed: RefCell::default(),
        }
    }

    /// Whether `p` holds of the object.
    pub fn matches(&self, p: &Pred) -> bool {
        eval::matches(p, self.object, self)
    }

    pub fn render(&self, t: &Template) -> Value {
        eval::render(t, self.object, self)
    }

    /// A template rendered as text (a message).
    pub fn text(&self, t: &Template) -> String {
        eval::render_text(t, self.object, self)
    }

    /// The value of `path`, with `.` reading the object.
    pub fn read(&self, path: &Path) -> Value {
        path.eval(self.object, self)
    }

    /// The time `until` reads, as Unix seconds (`None`: no such time).
    pub fn until(&self, delay: &Delay) -> Option<i64> {
        self.read(delay.until.as_ref()?).as_str().and_then(expr::unix_seconds)
    }

    /// Evaluates a stage's or an action's `let`s, in order, into `named`.
    pub fn bind(&mut self, lets: &[Let]) {
        for l in lets {
            let value = l.eval(self.object, self);
            self.named.insert(l.name.clone(), Arc::new(value));
        }
    }
}

impl expr::Env for Ctx<'_> {
    fn named(&self, name: &str) -> Option<&Value> {
        self.named.get(name).map(|v| &**v)
    }
    fn object(&self) -> &Value {
        self.object
    }
    fn computed(&self, name: &str) -> Value {
        self.computed_at(name, &[])
    }
    fn computed_at(&self, name: &str, segs: &[expr::Seg]) -> Value {
        if self.computing.borrow().iter().any(|n| n == name) {
            return Value::Null;
        }
        {
            let mut memo = self.computed.borrow_mut();
            if memo.0 != self.named.len() {
                *memo = (self.named.len(), HashMap::new());
            }
            if let Some(v) = memo.1.get(name) {
                return expr::read(v, segs).clone();
            }
        }
        let Some(l) = self.kind.lets.iter().find(|l| l.name == name) else { return Value::Null };
        self.computing.borrow_mut().push(name.to_string());
        let value = l.eval(self.object, self);
        self.computing.borrow_mut().pop();
        let part = expr::read(&value, segs).clone();
        // Only a value read at the top: one read while another computes may have seen null for
        // a value in a cycle.
        if self.computing.borrow().is_empty() {
            let mut memo = self.computed.borrow_mut();
            if memo.0 == self.named.len() {
                memo.1.insert(name.to_string(), value);
            }
        }
        part
    }
    fn now(&self) -> String {
        self.now.clone()
    }
    fn nodes(&self) -> usize {
        self.nodes
    }
    fn rng(&self) -> RefMut<'_, Rng> {
        self.rng.borrow_mut()
    }
    fn ca_cert(&self, common_name: &str, not_before: i64, not_after: i64) -> Option<String> {
        self.ca_cert.and_then(|make| make(common_name, not_before, not_after))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FILE: &str = r#"
managers:
  ctl: {component: the-controller}
kinds:
  - resource: {group: g.io, kind: Thing}
    related:
      peer: {resource: {group: g.io, kind: Peer}, by: name}
    let:
      - name: phase
        cases:
          - when: {deleting: true}
            value: Terminating
          - when: {related: {name: peer, where: {equals: {path: .status.phase, value: Running}}}}
            value: "{{ $peer.status.phase }}"
          - value: Stopped
    stages:
      - name: start
        manager: ctl
        selector:
          all:
            - {equals: {path: .spec.run, value: true}}
            - {related: {name: peer, exists: false}}
        delay: {ms: 10, jitterMs: 5, until: "addDuration(.metadata.creationTimestamp, '1m')"}
        let: [{name: node, value: "{{ node() }}"}]
        steps:
          - create: {resource: {group: g.io, kind: Peer}, template: {metadata: {name: "{{ .metadata.name }}"}}}
          - event: {type: Normal, reason: Started, message: "on {{ $node }}"}
          - patch: {subresource: status, merge: {status: {phase: "{{ $phase }}"}}}
          - finalizers: {add: [x.io/f]}
          - delete: {of: peer}
"#;

    #[test]
    fn a_file_parses_and_the_kinds_values_take_the_first_match() {
        let lc = parse(FILE).unwrap();
        let kind = &lc.kinds[0];
        assert_eq!(kind.stages[0].steps.len(), 5);
        assert_eq!(kind.stages[0].steps[4].write.of(), Some("peer"));
        let obj = json!({"metadata": {"name": "a", "creationTimestamp": "1970-01-01T00:00:00Z"},
                         "spec": {"run": true}});
        let mut ctx = Ctx::new(kind, &obj, "now".into(), 2, Rng::new(1));
        assert_eq!(ctx.until(&kind.stages[0].delay), Some(60));
        assert_eq!(ctx.until(&Delay::default()), None);
        assert!(ctx.matches(&kind.stages[0].selector));
        assert_eq!(expr::Env::computed(&ctx, "phase"), json!("Stopped"));
        ctx.named.insert("peer".into(), Arc::new(json!({"status": {"phase": "Running"}})));
        assert!(!ctx.matches(&kind.stages[0].selector));
        assert_eq!(expr::Env::computed(&ctx, "phase"), json!("Running"));
        let deleting = json!({"metadata": {"name": "a", "deletionTimestamp": "t"}});
        let ctx = Ctx::new(kind, &deleting, "now".into(), 2, Rng::new(1));
        assert_eq!(expr::Env::computed(&ctx, "phase"), json!("Terminating"));
    }

    #[test]
    fn a_ca_certificate_is_made_only_by_a_context_given_a_maker() {
        let lc = parse(FILE).unwrap();
        let obj = json!({"metadata": {"name": "a"}});
        let e = expr::parse("caCert('ca', '2026-01-01T01:00:00Z')").unwrap();
        let mut ctx = Ctx::new(&lc.kinds[0], &obj, "2026-01-01T00:00:00Z".into(), 1, Rng::new(1));
        assert_eq!(expr::eval(&e, &obj, &ctx), Value::Null);
        ctx.ca_cert = Some(|cn, from, until| Some(format!("{cn} {}", until - from)));
        assert_eq!(expr::eval(&e, &obj, &ctx), json!("ca 3600"));
    }

    #[test]
    fn extending_replaces_stages_by_name_and_replacing_drops_the_rest() {
        let base = parse(FILE).unwrap();
        let extra = parse(
            "kinds:\n- resource: {group: g.io, kind: Thing}\n  stages:\n  - {name: start, manager: ctl, selector: {deleting: true}, steps: []}\n  - {name: more, manager: ctl, selector: {deleting: true}, steps: []}\n",
        )
        .unwrap();
        let merged = base.clone().merged(extra);
        let stages = &merged.kinds[0].stages;
        assert_eq!(stages.len(), 2);
        assert!(stages[0].steps.is_empty());
        assert_eq!(merged.kinds[0].lets.len(), 1);
        let replaced = base.merged(parse("mode: replace\nkinds: []\n").unwrap());
        assert!(replaced.kinds.is_empty());
    }

    #[test]
    fn shape_errors_are_reported() {
        assert!(parse("kinds: [{resource: {group: g, kind: K}, stages: [{name: s}]}]").is_err());
        assert!(parse("bogus: 1").unwrap_err().contains("bogus"));
        assert!(parse("").unwrap().kinds.is_empty());
        // A call names a procedure the server runs, or the file does not parse.
        let call = |p: &str| {
            parse(&format!("kinds: [{{resource: {{group: g, kind: K}}, stages: [{{name: s, manager: m, selector: {{deleting: true}}, steps: [{{call: {{procedure: {p}, with: {{}}}}}}]}}]}}]"))
        };
        assert!(call("runningPatch").is_ok());
        assert!(call("formatDisk").unwrap_err().contains("unknown variant `formatDisk`"));
    }
}
