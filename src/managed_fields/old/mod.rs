#![allow(dead_code, unused_imports, clippy::all)]
//! TEMPORARY: the implementation before the speed-up (commit 5181294), kept only to check the new
//! one against it (`differential`, below); removed in the next commit.
//!
//! Field ownership: `metadata.managedFields`, as kube-apiserver's field manager keeps it
//! (AS pkg/endpoints/handlers/fieldmanager, AM pkg/util/managedfields/internal,
//! sigs.k8s.io/structured-merge-diff).
//!
//! Every write records who set which fields. A create, update or non-apply patch records an
//! `Update` entry for its manager holding the fields it added or changed, taking them from every
//! other manager ([`record_update`]); server-side apply records an `Apply` entry holding exactly
//! the fields of the applied configuration (`api::apply`). Entries are keyed by manager,
//! operation, subresource and, for `Update` only, apiVersion.

pub mod fieldset;
pub mod typed;

use actix_web::http::header;
use actix_web::HttpRequest;
use serde_json::{Map, Value};

pub use fieldset::{FieldSet, Path, PathElement};
pub use typed::Type;

use crate::api::params::Query;
use crate::error::{ApiError, Cause};
use crate::meta;
use crate::resource::ResourceInfo;

/// Longest manager name (`FieldManagerMaxLength`).
pub const MAX_MANAGER_LEN: usize = 128;
/// How many `Update` entries an object keeps before the oldest are merged
/// (`DefaultMaxUpdateManagers`).
const MAX_UPDATE_MANAGERS: usize = 10;
/// The manager the oldest `Update` entries are merged into.
const ANCIENT_CHANGES: &str = "ancient-changes";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    Apply,
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One `ManagedFieldsEntry`.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub manager: String,
    pub operation: Operation,
    pub api_version: String,
    /// RFC 3339 seconds; kube leaves it out when an entry was never timed.
    pub time: Option<String>,
    pub subresource: String,
    pub fields: FieldSet,
}

impl Entry {
    /// Whether `self` and `other` are the same manager in kube's sense (`BuildManagerIdentifier`):
    /// appliers are one manager across versions, updaters one per version.
    pub fn same_manager(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == Operation::Apply || self.api_version == other.api_version)
    }

    /// How conflicts name this manager (conflict.go `printManager`).
    pub fn describe(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s.push_str(&format!(" with subresource {:?}", self.subresource));
        }
        if self.operation == Operation::Update {
            s.push_str(&format!(" using {}", self.api_version));
        }
        s
    }

    fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("manager".into(), Value::String(self.manager.clone()));
        m.insert("operation".into(), Value::String(self.operation.as_str().into()));
        m.insert("apiVersion".into(), Value::String(self.api_version.clone()));
        if let Some(t) = &self.time {
            m.insert("time".into(), Value::String(t.clone()));
        }
        m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
        m.insert("fieldsV1".into(), self.fields.to_fields_v1());
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), Value::String(self.subresource.clone()));
        }
        Value::Object(m)
    }

    fn from_json(v: &Value) -> Result<Entry, String> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let operation = match s("operation").as_str() {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            other => return Err(format!("operation must be `Apply` or `Update`, got {other:?}")),
        };
        if s("fieldsType") != "FieldsV1" {
            return Err(format!("only FieldsV1 is supported, got {:?}", s("fieldsType")));
        }
        let fields = match v.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::new(),
            Some(f) => FieldSet::from_fields_v1(f)?,
        };
        Ok(Entry {
            manager: s("manager"),
            operation,
            api_version: s("apiVersion"),
            time: v.get("time").and_then(Value::as_str).map(str::to_string),
            subresource: s("subresource"),
            fields,
        })
    }
}

/// All entries of one object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Managers(pub Vec<Entry>);

impl Managers {
    /// Decodes `metadata.managedFields`; absent or null is empty.
    pub fn decode(obj: &Value) -> Result<Managers, String> {
        let Some(list) = obj.pointer("/metadata/managedFields") else {
            return Ok(Managers::default());
        };
        let items = match list {
            Value::Null => return Ok(Managers::default()),
            Value::Array(items) => items,
            _ => return Err("managedFields must be a list".into()),
        };
        let mut out = Managers::default();
        for item in items {
            // A later entry for the same manager replaces an earlier one, as kube's map does.
            out.put(Entry::from_json(item)?);
        }
        Ok(out)
    }

    /// Writes the entries into `obj.metadata.managedFields` in kube's order (Apply before
    /// Update, then oldest first, then by manager), or removes the field when there are none.
    pub fn encode_into(&self, obj: &mut Value) {
        let Some(root) = obj.as_object_mut() else { return };
        let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
        let Some(meta) = meta.as_object_mut() else { return };
        let mut entries: Vec<&Entry> = self.0.iter().filter(|e| !e.fields.is_empty()).collect();
        if entries.is_empty() {
            meta.remove("managedFields");
            return;
        }
        entries.sort_by(|a, b| {
            let secs = |e: &Entry| e.time.as_deref().and_then(meta::parse_rfc3339).unwrap_or(0);
            a.operation
                .cmp(&b.operation)
                .then(secs(a).cmp(&secs(b)))
                .then_with(|| a.manager.cmp(&b.manager))
                .then_with(|| a.api_version.cmp(&b.api_version))
                .then_with(|| a.subresource.cmp(&b.subresource))
        });
        meta.insert(
            "managedFields".into(),
            Value::Array(entries.into_iter().map(Entry::to_json).collect()),
        );
    }

    pub fn find(&self, like: &Entry) -> Option<&Entry> {
        self.0.iter().find(|e| e.same_manager(like))
    }

    /// Removes and returns the entry of `like`'s manager.
    pub fn take(&mut self, like: &Entry) -> Option<Entry> {
        let i = self.0.iter().position(|e| e.same_manager(like))?;
        Some(self.0.remove(i))
    }

    /// Adds `entry`, replacing the same manager's.
    pub fn put(&mut self, entry: Entry) {
        match self.0.iter_mut().find(|e| e.same_manager(&entry)) {
            Some(slot) => *slot = entry,
            None => self.0.push(entry),
        }
    }

    /// Every field some manager owns.
    pub fn union(&self) -> FieldSet {
        self.0.iter().fold(FieldSet::new(), |acc, e| acc.union(&e.fields))
    }

    /// What each manager but `except` owns of `contested`, managers in name order.
    pub fn conflicts(&self, except: &Entry, contested: &FieldSet) -> Vec<(Entry, FieldSet)> {
        let mut out: Vec<(Entry, FieldSet)> = self
            .0
            .iter()
            .filter(|e| !e.same_manager(except))
            .map(|e| (e.clone(), e.fields.intersection(contested)))
            .filter(|(_, c)| !c.is_empty())
            .collect();
        out.sort_by(|(a, _), (b, _)| {
            (&a.manager, a.operation, &a.api_version, &a.subresource).cmp(&(
                &b.manager,
                b.operation,
                &b.api_version,
                &b.subresource,
            ))
        });
        out
    }

    /// Takes `contested` and `removed` away from every manager but `except` (all of them when
    /// `None`) and drops managers left with nothing (merge/update.go `update` with force).
    pub fn release(&mut self, except: Option<&Entry>, contested: &FieldSet, removed: &FieldSet) {
        let spared = |e: &Entry| except.is_some_and(|x| e.same_manager(x));
        for e in self.0.iter_mut().filter(|e| !spared(e)) {
            e.fields = e.fields.difference(contested).difference(removed);
        }
        self.0.retain(|e| !e.fields.is_empty() || spared(e));
    }

    /// Merges the oldest `Update` entries into one `ancient-changes` entry per apiVersion while
    /// there are more than kube keeps (capmanagers.go): the first updater seen for a version
    /// becomes the bucket once a second one joins it.
    fn cap_updaters(&mut self) {
        let count = |m: &Managers| m.0.iter().filter(|e| e.operation == Operation::Update).count();
        if count(self) <= MAX_UPDATE_MANAGERS {
            return;
        }
        let secs = |e: &Entry| e.time.as_deref().and_then(meta::parse_rfc3339).unwrap_or(0);
        let mut updaters: Vec<Entry> =
            self.0.iter().filter(|e| e.operation == Operation::Update).cloned().collect();
        updaters.sort_by(|a, b| secs(a).cmp(&secs(b)).then_with(|| a.manager.cmp(&b.manager)));
        let mut first: Vec<Entry> = Vec::new();
        for e in updaters {
            if count(self) <= MAX_UPDATE_MANAGERS {
                break;
            }
            let bucket = Entry {
                manager: ANCIENT_CHANGES.into(),
                operation: Operation::Update,
                api_version: e.api_version.clone(),
                time: None,
                subresource: String::new(),
                fields: FieldSet::new(),
            };
            if e.same_manager(&bucket) {
                continue;
            }
            let Some(pos) = first.iter().position(|f| f.api_version == e.api_version) else {
                first.push(e);
                continue;
            };
            if self.find(&bucket).is_none() {
                let founder = self.take(&first[pos]).expect("first updater is still present");
                self.put(Entry { fields: founder.fields, time: founder.time, ..bucket.clone() });
            }
            let merged = self.take(&e).expect("updater is present");
            let mut b = self.take(&bucket).expect("bucket was just made");
            b.fields = b.fields.union(&merged.fields);
            b.time = merged.time;
            self.put(b);
        }
    }
}

/// The paths no manager ever owns: identity and server-set metadata (stripmeta.go).
pub fn stripped_fields() -> FieldSet {
    let f = PathElement::field;
    let mut s = FieldSet::new();
    s.insert(&[f("apiVersion")]);
    s.insert(&[f("kind")]);
    s.insert(&[f("metadata")]);
    for name in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        s.insert(&[f("metadata"), f(name)]);
    }
    s
}

/// The manager of a non-apply write: `?fieldManager=`, else the User-Agent up to its first `/`,
/// printable characters only, at most 128 bytes (handlers/create.go `managerOrUserAgent`).
/// `options_kind` names the options object of a 422 (`CreateOptions`, `UpdateOptions`, ...).
pub fn manager_of(q: &Query, req: &HttpRequest, options_kind: &str) -> Result<String, ApiError> {
    let given = q.get("fieldManager").unwrap_or("");
    let causes = manager_causes(given);
    if !causes.is_empty() {
        return Err(ApiError::invalid_options(options_kind, causes));
    }
    if !given.is_empty() {
        return Ok(given.to_string());
    }
    let agent = req.headers().get(header::USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
    let mut out = String::new();
    for c in agent.split('/').next().unwrap_or("").chars() {
        if c.is_control() {
            continue;
        }
        if out.len() + c.len_utf8() > MAX_MANAGER_LEN {
            break;
        }
        out.push(c);
    }
    Ok(out)
}

/// What kube's `ValidateFieldManager` finds wrong with a `fieldManager` parameter.
pub fn manager_causes(manager: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if manager.len() > MAX_MANAGER_LEN {
        causes.push(Cause::too_long("fieldManager", MAX_MANAGER_LEN));
    }
    for (i, c) in manager.char_indices() {
        if c.is_control() {
            causes.push(Cause::invalid(
                "fieldManager",
                &meta::quote(manager),
                &format!("invalid character U+{:04X} (at position {i})", c as u32),
            ));
        }
    }
    causes
}

/// Whether a request body asks to clear managedFields: `[]` or `[{}]` (fieldmanager.go
/// `isResetManagedFields`).
fn is_reset(obj: &Value) -> bool {
    match obj.pointer("/metadata/managedFields") {
        Some(Value::Array(items)) => match items.as_slice() {
            [] => true,
            [only] => only.as_object().is_some_and(Map::is_empty),
            _ => false,
        },
        _ => false,
    }
}

/// Records a non-apply write of `new` (over `live`, `None` on create) by `manager` in
/// `new.metadata.managedFields`.
///
/// The starting entries are the request's own when it sets valid ones (kube lets clients rewrite
/// them; `[]` or `[{}]` clears them), else the live object's. The manager gets every field the
/// write added or changed, and loses none it had; other managers lose the fields the write
/// changed or removed. A `subresource` write (e.g. `status`) always starts from the live entries.
pub fn record_update(
    res: &ResourceInfo,
    live: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: &str,
) {
    let live_managers = || live.and_then(|l| Managers::decode(l).ok()).unwrap_or_default();
    let mut managers = if !subresource.is_empty() {
        live_managers()
    } else if is_reset(new) {
        Managers::default()
    } else {
        match Managers::decode(new) {
            Ok(m) if !m.0.is_empty() => m,
            _ => live_managers(),
        }
    };
    let empty = Value::Object(Map::new());
    let old = without_managed_fields(live.unwrap_or(&empty));
    let cmp = typed::compare(&old, &without_managed_fields(new), Type::of(res));
    let changed = cmp.modified.union(&cmp.added);
    let me = Entry {
        manager: manager.to_string(),
        operation: Operation::Update,
        api_version: res.api_version(),
        time: Some(meta::now_rfc3339()),
        subresource: subresource.to_string(),
        fields: FieldSet::new(),
    };
    // kube runs this as a separate "current-operation" manager, so the writer's own earlier
    // entry loses what this write removed, like everyone else's.
    managers.release(None, &changed, &cmp.removed);
    let taken = changed.difference(&cmp.removed).difference(&stripped_fields());
    if !taken.is_empty() {
        let fields = match managers.take(&me) {
            Some(prev) => prev.fields.union(&taken),
            None => taken,
        };
        managers.put(Entry { fields, ..me });
    }
    managers.0.retain(|e| !e.fields.is_empty());
    managers.cap_updaters();
    managers.encode_into(new);
}

/// A copy of `obj` without `metadata.managedFields`.
pub fn without_managed_fields(obj: &Value) -> Value {
    let mut out = obj.clone();
    if let Some(meta) = out.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    out
}

/// Whether two objects differ at most in the times of their managedFields entries: kube counts
/// such a write as a no-op (`IgnoreManagedFieldsTimestampsTransformer`).
pub fn same_ignoring_times(a: &Value, b: &Value) -> bool {
    if a == b {
        return true;
    }
    let untimed = |v: &Value| {
        let mut out = v.clone();
        if let Some(Value::Array(items)) = out.pointer_mut("/metadata/managedFields") {
            for item in items.iter_mut().filter_map(Value::as_object_mut) {
                item.remove("time");
            }
        }
        out
    };
    untimed(a) == untimed(b)
}

#[cfg(test)]
mod diff {
    use serde_json::{json, Value};

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn pick(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    fn places(v: &Value, at: String, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (k, c) in m {
                    let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                    out.push(p.clone());
                    places(c, p, out);
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    let p = format!("{at}/{i}");
                    out.push(p.clone());
                    places(c, p, out);
                }
            }
            _ => {}
        }
    }

    fn mutate(v: &mut Value, rng: &mut Rng, donor: &Value) {
        let mut ps = Vec::new();
        places(v, String::new(), &mut ps);
        if ps.is_empty() {
            return;
        }
        let p = ps[rng.pick(ps.len())].clone();
        let (parent, last) = p.rsplit_once('/').unwrap();
        let choices = [
            json!(null),
            json!({}),
            json!([]),
            json!(1),
            json!(1.0),
            json!("x"),
            json!(true),
            json!([{"name": "default"}]),
            json!([{"name": "n2", "x": 1}, {"name": "n2", "y": 2}]),
            json!([{"nokey": 1}]),
            json!({"a": {"b": [1, 2]}}),
            json!(["a", "a", "b"]),
        ];
        match rng.pick(7) {
            0 | 1 => {
                // delete
                match v.pointer_mut(parent) {
                    Some(Value::Object(m)) => {
                        m.remove(&last.replace("~1", "/").replace("~0", "~"));
                    }
                    Some(Value::Array(a)) => {
                        let i: usize = last.parse().unwrap();
                        if i < a.len() {
                            a.remove(i);
                        }
                    }
                    _ => {}
                }
            }
            2 | 3 => {
                if let Some(t) = v.pointer_mut(&p) {
                    *t = choices[rng.pick(choices.len())].clone();
                }
            }
            4 => {
                // duplicate or add in arrays / objects
                match v.pointer_mut(parent) {
                    Some(Value::Array(a)) => {
                        let i: usize = last.parse().unwrap();
                        if i < a.len() {
                            let c = a[i].clone();
                            a.push(c);
                        }
                    }
                    Some(Value::Object(m)) => {
                        m.insert(
                            format!("new{}", rng.pick(3)),
                            choices[rng.pick(choices.len())].clone(),
                        );
                    }
                    _ => {}
                }
            }
            5 => {
                let mf = [
                    json!([]),
                    json!([{}]),
                    json!(null),
                    json!("bad"),
                    json!([{"manager": "x", "operation": "Bogus"}]),
                    donor["metadata"]["managedFields"].clone(),
                    json!([{"manager": "client", "operation": "Update", "apiVersion": "kubevirt.io/v1",
                            "fieldsType": "FieldsV1", "time": "2019-01-01T00:00:00Z",
                            "fieldsV1": {"f:spec": {".": {}, "f:runStrategy": {".": {}}, "f:template": {"f:spec": {"f:volumes": {"k:{\"name\": \"containerdisk\"}": {}}}}}, "f:metadata": {"f:name": {}, "f:labels": {"f:app": {}}}}}]),
                ];
                if let Some(Value::Object(m)) = v.pointer_mut("/metadata") {
                    m.insert("managedFields".into(), mf[rng.pick(mf.len())].clone());
                }
            }
            _ => {
                if let Some(Value::Object(m)) = v.pointer_mut("/metadata") {
                    m.remove("managedFields");
                }
                if rng.pick(4) == 0 {
                    v["metadata"] =
                        json!({"managedFields": donor["metadata"]["managedFields"].clone()});
                }
            }
        }
    }

    fn masked(v: &Value) -> String {
        let mut v = v.clone();
        if let Some(Value::Array(a)) = v.pointer_mut("/metadata/managedFields") {
            for e in a.iter_mut().filter_map(Value::as_object_mut) {
                if e.contains_key("time") {
                    e.insert("time".into(), json!("T"));
                }
            }
        }
        serde_json::to_string(&v).unwrap()
    }

    fn aged(mut obj: Value) -> Value {
        if let Some(Value::Array(a)) = obj.pointer_mut("/metadata/managedFields") {
            for e in a.iter_mut().filter_map(Value::as_object_mut) {
                e.insert("time".into(), json!("2020-01-01T00:00:00Z"));
            }
        }
        obj
    }

    #[test]
    fn differential() {
        let res = crate::managed_fields::record_tests::vm_res();
        let bases: Vec<Value> = crate::managed_fields::record_tests::writes()
            .into_iter()
            .flat_map(|(l, n, _, _)| l.into_iter().chain([n]))
            .collect();
        let mut rng = Rng(0x9e3779b97f4a7c15);
        let mut checked = 0;
        for round in 0..50000 {
            let base = &bases[rng.pick(bases.len())];
            let donor = &bases[rng.pick(bases.len())];
            let mut live = base.clone();
            for _ in 0..rng.pick(3) {
                mutate(&mut live, &mut rng, donor);
            }
            let mut live2 = live.clone();
            super::record_update(res, None, &mut live2, "creator", "");
            let live = aged(if rng.pick(2) == 0 { live2 } else { live });
            let mut new = live.clone();
            for _ in 0..1 + rng.pick(4) {
                mutate(&mut new, &mut rng, donor);
            }
            let manager = ["creator", "other", "virt-controller"][rng.pick(3)];
            let sub = ["", "", "status"][rng.pick(3)];
            let live_opt = if rng.pick(5) == 0 { None } else { Some(&live) };
            let mut a = new.clone();
            let mut b = new.clone();
            super::record_update(res, live_opt, &mut a, manager, sub);
            crate::managed_fields::record_update(res, live_opt, &mut b, manager, sub);
            assert_eq!(
                masked(&a),
                masked(&b),
                "round {round}\nlive {live:?}\nnew {new}\nmanager {manager} sub {sub}"
            );
            assert_eq!(
                super::same_ignoring_times(&a, &live),
                crate::managed_fields::same_ignoring_times(&a, &live),
                "same_ignoring_times round {round}"
            );
            assert_eq!(
                super::same_ignoring_times(&new, &live),
                crate::managed_fields::same_ignoring_times(&new, &live),
                "same_ignoring_times round {round}"
            );
            let old_cmp = super::typed::compare(&live, &new, super::Type::of(res));
            let new_cmp = crate::managed_fields::typed::compare(
                &live,
                &new,
                crate::managed_fields::Type::of(res),
            );
            assert_eq!(old_cmp.added.to_fields_v1(), new_cmp.added.to_fields_v1());
            assert_eq!(old_cmp.modified.to_fields_v1(), new_cmp.modified.to_fields_v1());
            assert_eq!(old_cmp.removed.to_fields_v1(), new_cmp.removed.to_fields_v1());
            checked += 1;
        }
        println!("checked {checked}");
    }
}
