//! Field ownership: `metadata.managedFields`, as kube-apiserver's field manager keeps it
//! (AS pkg/endpoints/handlers/fieldmanager, AM pkg/util/managedfields/internal,
//! sigs.k8s.io/structured-merge-diff).
//!
//! Every write records who set which fields. A create, update or non-apply patch records an
//! `Update` entry for its manager holding the fields it added or changed, taking them from every
//! other manager ([`record_update`]); server-side apply records an `Apply` entry holding exactly
//! the fields of the applied configuration (`api::apply`). Entries are keyed by manager,
//! operation, subresource and, for `Update` only, apiVersion.

pub mod apply;
pub mod fieldset;
#[cfg(test)]
mod record_tests;
pub mod typed;

use std::sync::OnceLock;

use serde_json::{Map, Value};

pub use fieldset::{FieldSet, PathElement};
pub use typed::Type;

use crate::object::error::{ApiError, Cause};
use crate::object::meta;
use crate::object::At;
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
    /// The entry's wire form as it was decoded, while nothing has changed it.
    pub wire: Wire,
}

/// An entry's wire form kept from its decoding, so that a write that leaves the entry alone
/// does not encode it again (on a busy object most writes change one entry of several). It
/// takes no part in an entry's equality.
#[derive(Debug, Clone, Default)]
pub struct Wire(Option<Value>);

impl PartialEq for Wire {
    fn eq(&self, _: &Wire) -> bool {
        true
    }
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
            wire: Wire::default(),
        })
    }

    /// The entry's wire form: the one it was decoded from when it is unchanged.
    fn into_json(self) -> Value {
        match self.wire.0 {
            Some(v) => v,
            None => self.to_json(),
        }
    }
}

/// All entries of one object.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Managers(pub Vec<Entry>);

impl Managers {
    /// Decodes `metadata.managedFields`; absent or null is empty.
    pub fn decode(obj: &Value) -> Result<Managers, String> {
        match obj.at("/metadata/managedFields") {
            Some(list) => Managers::decode_list(list),
            None => Ok(Managers::default()),
        }
    }

    fn decode_list(list: &Value) -> Result<Managers, String> {
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

    /// Decodes a `managedFields` list taken out of its object; entries of a list this server
    /// encoded (`ours`) keep their wire forms, a client's are encoded again, as kube does.
    fn decode_owned(list: Value, ours: bool) -> Result<Managers, String> {
        if !ours {
            return Managers::decode_list(&list);
        }
        let items = match list {
            Value::Null => return Ok(Managers::default()),
            Value::Array(items) => items,
            _ => return Err("managedFields must be a list".into()),
        };
        let mut out = Managers::default();
        for item in items {
            let mut entry = Entry::from_json(&item)?;
            entry.wire = Wire(Some(item));
            out.put(entry);
        }
        Ok(out)
    }

    /// Writes the entries into `obj.metadata.managedFields` in kube's order (Apply before
    /// Update, then oldest first, then by manager), or removes the field when there are none.
    pub fn encode_into(self, obj: &mut Value) {
        let Some(root) = obj.as_object_mut() else { return };
        let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
        let Some(meta) = meta.as_object_mut() else { return };
        let mut entries: Vec<Entry> = self.0.into_iter().filter(|e| !e.fields.is_empty()).collect();
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
            Value::Array(entries.into_iter().map(Entry::into_json).collect()),
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
            if e.fields.subtract(contested) | e.fields.subtract(removed) {
                e.wire = Wire::default();
            }
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
                wire: Wire::default(),
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
                let (fields, time) = (founder.fields, founder.time);
                self.put(Entry { fields, time, ..bucket.clone() });
            }
            let merged = self.take(&e).expect("updater is present");
            let mut b = self.take(&bucket).expect("bucket was just made");
            b.fields = b.fields.union(&merged.fields);
            b.time = merged.time;
            b.wire = Wire::default();
            self.put(b);
        }
    }
}

/// [`stripped_fields`], built once.
fn stripped() -> &'static FieldSet {
    static STRIPPED: OnceLock<FieldSet> = OnceLock::new();
    STRIPPED.get_or_init(stripped_fields)
}

/// The paths no manager ever owns: identity and server-set metadata (stripmeta.go).
pub fn stripped_fields() -> FieldSet {
    let f = PathElement::field;
    let mut s = FieldSet::new();
    s.insert(&[f("apiVersion")]);
    s.insert(&[f("kind")]);
    s.insert(&[f("metadata")]);
    for name in typed::STRIPPED_METADATA {
        s.insert(&[f("metadata"), f(name)]);
    }
    s
}

/// The manager of a non-apply write: `?fieldManager=`, else the User-Agent up to its first `/`,
/// printable characters only, at most 128 bytes (handlers/create.go `managerOrUserAgent`).
/// `options_kind` names the options object of a 422 (`CreateOptions`, `UpdateOptions`, ...).
pub fn manager_of(given: &str, user_agent: &str, options_kind: &str) -> Result<String, ApiError> {
    let causes = manager_causes(given);
    if !causes.is_empty() {
        return Err(ApiError::invalid_options(options_kind, causes));
    }
    if !given.is_empty() {
        return Ok(given.to_string());
    }
    let mut out = String::new();
    for c in user_agent.split('/').next().unwrap_or("").chars() {
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
    match obj.at("/metadata/managedFields") {
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
    let carries_entries = new.at("/metadata/managedFields").is_some();
    if live.is_none() && subresource.is_empty() && !carries_entries {
        return record_create(res, new, manager);
    }
    record_update_general(res, live, new, manager, subresource)
}

/// [`record_update`] of a create whose body has no managedFields: the writer's entry holds every
/// field the object sets but the stripped ones, and it is the only entry. Emitted in one walk
/// of the object (`typed::created_fields_v1`), with no field set built: this runs on every
/// create.
fn record_create(res: &ResourceInfo, new: &mut Value, manager: &str) {
    let fields = typed::created_fields_v1(new, Type::of(res));
    let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) else {
        return record_update_general(res, None, new, manager, "");
    };
    if fields.is_empty() {
        meta.remove("managedFields");
        return;
    }
    let mut entry = Map::new();
    entry.insert("manager".into(), Value::String(manager.into()));
    entry.insert("operation".into(), Value::String(Operation::Update.as_str().into()));
    entry.insert("apiVersion".into(), Value::String(res.api_version()));
    entry.insert("time".into(), Value::String(meta::now_rfc3339()));
    entry.insert("fieldsType".into(), Value::String("FieldsV1".into()));
    entry.insert("fieldsV1".into(), Value::Object(fields));
    meta.insert("managedFields".into(), Value::Array(vec![Value::Object(entry)]));
}

fn record_update_general(
    res: &ResourceInfo,
    live: Option<&Value>,
    new: &mut Value,
    manager: &str,
    subresource: &str,
) {
    // The entries come out of `new` (which gets them back encoded) rather than as copies: when
    // they are the live object's, as a controller's edit of the live object leaves them, their
    // wire forms are reused for every entry this write leaves alone.
    let reset = subresource.is_empty() && is_reset(new);
    // Taken, not removed, so that the key keeps its place in an insertion-ordered map.
    let theirs = new.get_mut("metadata").and_then(|m| m.get_mut("managedFields"));
    let theirs = theirs.map(std::mem::take);
    let live_list = live.and_then(|l| l.at("/metadata/managedFields"));
    let live_managers = |theirs: Option<Value>| match (theirs, live_list) {
        (Some(t), Some(l)) if &t == l => Managers::decode_owned(t, true).unwrap_or_default(),
        (_, Some(l)) => Managers::decode_owned(l.clone(), true).unwrap_or_default(),
        (_, None) => Managers::default(),
    };
    let mut managers = if !subresource.is_empty() {
        live_managers(theirs)
    } else if reset {
        Managers::default()
    } else {
        let live_ones = |t: &Value| live_list == Some(t);
        match theirs.map(|t| (live_ones(&t), t)).map(|(ours, t)| Managers::decode_owned(t, ours)) {
            Some(Ok(m)) if !m.0.is_empty() => m,
            _ => live_managers(None),
        }
    };
    let empty = Value::Object(Map::new());
    let cmp = typed::compare_ignoring_managed_fields(live.unwrap_or(&empty), new, Type::of(res));
    let mut changed = cmp.added;
    changed.union_with(cmp.modified);
    let me = Entry {
        manager: manager.to_string(),
        operation: Operation::Update,
        api_version: res.api_version(),
        time: Some(meta::now_rfc3339()),
        subresource: subresource.to_string(),
        fields: FieldSet::new(),
        wire: Wire::default(),
    };
    // kube runs this as a separate "current-operation" manager, so the writer's own earlier
    // entry loses what this write removed, like everyone else's.
    managers.release(None, &changed, &cmp.removed);
    let mut taken = changed;
    taken.subtract(&cmp.removed);
    taken.subtract(stripped());
    if !taken.is_empty() {
        let fields = match managers.take(&me) {
            Some(mut prev) => {
                prev.fields.union_with(taken);
                prev.fields
            }
            None => taken,
        };
        managers.put(Entry { fields, ..me });
    }
    managers.0.retain(|e| !e.fields.is_empty());
    managers.cap_updaters();
    managers.encode_into(new);
}

/// A copy of `obj` without `metadata.managedFields`, which are never copied (they are often
/// half of an object's bytes).
pub fn without_managed_fields(obj: &Value) -> Value {
    let Value::Object(map) = obj else { return obj.clone() };
    let copy = map.iter().map(|(k, v)| {
        let v = match (k.as_str(), v) {
            ("metadata", Value::Object(meta)) => Value::Object(
                meta.iter()
                    .filter(|(k, _)| *k != "managedFields")
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            _ => v.clone(),
        };
        (k.clone(), v)
    });
    Value::Object(copy.collect())
}

/// Whether two objects differ at most in the times of their managedFields entries: kube counts
/// such a write as a no-op (`IgnoreManagedFieldsTimestampsTransformer`).
pub fn same_ignoring_times(a: &Value, b: &Value) -> bool {
    // Compared in place rather than on copies without the times: this runs on every update.
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => same_map_by(x, y, |k, v, w| match k {
            "metadata" => match (v, w) {
                (Value::Object(x), Value::Object(y)) => same_map_by(x, y, |k, v, w| {
                    k == "managedFields" && same_entries_ignoring_times(v, w) || v == w
                }),
                _ => v == w,
            },
            _ => v == w,
        }),
        _ => a == b,
    }
}

/// Two `managedFields` values equal but for the `time` of entries that are objects.
fn same_entries_ignoring_times(a: &Value, b: &Value) -> bool {
    let (Value::Array(x), Value::Array(y)) = (a, b) else { return false };
    x.len() == y.len()
        && x.iter().zip(y).all(|(v, w)| match (v, w) {
            (Value::Object(v), Value::Object(w)) => {
                let untimed =
                    |m: &Map<String, Value>| m.len() - usize::from(m.contains_key("time"));
                untimed(v) == untimed(w)
                    && v.iter().all(|(k, x)| k == "time" || w.get(k).is_some_and(|y| x == y))
            }
            _ => v == w,
        })
}

/// Map equality (order aside, as `==`) with `same` deciding for the values under each key.
fn same_map_by(
    x: &Map<String, Value>,
    y: &Map<String, Value>,
    same: impl Fn(&str, &Value, &Value) -> bool,
) -> bool {
    x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(k, v, w)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn vm() -> &'static ResourceInfo {
        crate::generated::RESOURCES
            .iter()
            .find(|r| r.kind == "VirtualMachine" && r.version == "v1")
            .expect("VirtualMachine v1 is served")
    }

    fn obj(spec: Value) -> Value {
        json!({"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachine",
               "metadata": {"name": "a", "namespace": "n", "uid": "u", "labels": {"app": "x"}},
               "spec": spec})
    }

    #[test]
    fn a_copy_keeps_all_but_managed_fields() {
        let pod = json!({"metadata": {"name": "p", "managedFields": [{"manager": "kubelet"}],
                          "labels": {"a": "b"}}, "spec": {"nodeName": "n"}});
        assert_eq!(
            without_managed_fields(&pod),
            json!({"metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"nodeName": "n"}})
        );
        assert_eq!(without_managed_fields(&json!("x")), json!("x"));
    }

    #[test]
    fn create_records_the_creator() {
        let mut new = obj(json!({"running": true}));
        record_update(vm(), None, &mut new, "kubectl-create", "");
        let mf = &new["metadata"]["managedFields"];
        assert_eq!(mf.as_array().unwrap().len(), 1);
        assert_eq!(mf[0]["manager"], "kubectl-create");
        assert_eq!(mf[0]["operation"], "Update");
        assert_eq!(mf[0]["apiVersion"], "kubevirt.io/v1");
        assert_eq!(mf[0]["fieldsType"], "FieldsV1");
        assert_eq!(
            mf[0]["fieldsV1"],
            json!({"f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                   "f:spec": {".": {}, "f:running": {}}})
        );
    }

    #[test]
    fn an_update_takes_changed_fields_from_others() {
        let mut live = obj(json!({"running": true, "x": 1}));
        record_update(vm(), None, &mut live, "creator", "");
        let mut new = live.clone();
        new["spec"]["running"] = json!(false);
        record_update(vm(), Some(&live), &mut new, "patcher", "");
        let m = Managers::decode(&new).unwrap();
        let creator = m.0.iter().find(|e| e.manager == "creator").unwrap();
        let patcher = m.0.iter().find(|e| e.manager == "patcher").unwrap();
        assert_eq!(patcher.fields.to_fields_v1(), json!({"f:spec": {"f:running": {}}}));
        assert!(!creator.fields.has(&[PathElement::field("spec"), PathElement::field("running")]));
        assert!(creator.fields.has(&[PathElement::field("spec"), PathElement::field("x")]));
        // Removing a field takes it from its owner, the writer included.
        let mut removed = new.clone();
        removed["spec"].as_object_mut().unwrap().remove("running");
        removed["spec"].as_object_mut().unwrap().remove("x");
        record_update(vm(), Some(&new), &mut removed, "patcher", "");
        let m = Managers::decode(&removed).unwrap();
        assert!(m.0.iter().all(|e| e.manager != "patcher"), "{removed}");
        let creator = m.0.iter().find(|e| e.manager == "creator").unwrap();
        assert!(!creator.fields.has(&[PathElement::field("spec"), PathElement::field("x")]));
    }

    #[test]
    fn a_body_may_reset_or_replace_managed_fields() {
        let mut live = obj(json!({"running": true}));
        record_update(vm(), None, &mut live, "creator", "");
        for reset in [json!([]), json!([{}])] {
            let mut new = live.clone();
            new["metadata"]["managedFields"] = reset;
            record_update(vm(), Some(&live), &mut new, "clearer", "");
            assert!(new["metadata"].get("managedFields").is_none(), "{new}");
        }
        // Garbage falls back to the live entries.
        let mut new = live.clone();
        new["metadata"]["managedFields"] = json!([{"manager": "x", "operation": "Bogus"}]);
        record_update(vm(), Some(&live), &mut new, "other", "");
        assert_eq!(new["metadata"]["managedFields"], live["metadata"]["managedFields"]);
    }

    #[test]
    fn many_updaters_are_capped() {
        let mut cur = obj(json!({}));
        for i in 0..12 {
            let mut next = cur.clone();
            next["spec"][format!("f{i}")] = json!(i);
            record_update(vm(), Some(&cur), &mut next, &format!("m{i:02}"), "");
            cur = next;
        }
        let m = Managers::decode(&cur).unwrap();
        assert_eq!(m.0.len(), MAX_UPDATE_MANAGERS);
        assert!(m.0.iter().any(|e| e.manager == ANCIENT_CHANGES));
    }

    #[test]
    fn timestamps_alone_are_no_change() {
        let a = json!({"metadata": {"managedFields": [{"manager": "m", "time": "2020-01-01T00:00:00Z"}]}});
        let b = json!({"metadata": {"managedFields": [{"manager": "m", "time": "2021-01-01T00:00:00Z"}]}});
        assert!(same_ignoring_times(&a, &b));
        let c = json!({"metadata": {"managedFields": [{"manager": "n", "time": "2021-01-01T00:00:00Z"}]}});
        assert!(!same_ignoring_times(&a, &c));
    }

    #[test]
    fn managers_from_agent_or_parameter() {
        assert!(manager_causes(&"m".repeat(129))[0].message.contains("128"));
        assert!(!manager_causes("a\u{1}b").is_empty());
        assert!(manager_causes("kubectl").is_empty());
        let e = Entry {
            manager: "m".into(),
            operation: Operation::Update,
            api_version: "kubevirt.io/v1".into(),
            time: None,
            subresource: String::new(),
            fields: FieldSet::new(),
            wire: Wire::default(),
        };
        assert_eq!(e.describe(), "\"m\" using kubevirt.io/v1");
        let applier = Entry { operation: Operation::Apply, ..e.clone() };
        assert_eq!(applier.describe(), "\"m\"");
        assert!(!applier.same_manager(&e));
        let other_version = Entry { api_version: "kubevirt.io/v1alpha3".into(), ..applier.clone() };
        assert!(applier.same_manager(&other_version));
    }
}
