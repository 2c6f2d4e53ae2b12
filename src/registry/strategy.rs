//! The update and create rules every kind follows (kube's `rest.BeforeCreate`/`BeforeUpdate`
//! and the custom-resource strategy, B.2, B.3): what a create or an update may set, what the
//! server keeps or sets, and what must be checked before anything is written. Pure functions.

use serde_json::{Map, Value};

use super::addresses;
use super::update::Next;
use super::Target;
use crate::object::error::{ApiError, Cause};
use crate::object::meta::metadata_mut;
use crate::object::subresource::{self, Part};
use crate::object::validation;
use crate::object::At;
use crate::object::{data_rules, defaults, event_rules, fault, pods, update_rules};
use crate::object::{managed_fields, meta, meta_str, metadata};
use crate::resource::{KubeRole, ResourceInfo};

/// An update's server-set fields must at least have their types, though their values are not
/// the client's to choose.
pub fn check_system_field_types(
    res: &ResourceInfo,
    name: &str,
    meta: &serde_json::Map<String, Value>,
) -> Result<(), ApiError> {
    let causes = meta::system_field_type_causes(meta);
    if causes.is_empty() {
        return Ok(());
    }
    Err(ApiError::invalid(res, name, causes))
}

/// Who a write's managedFields entry is recorded for.
pub enum Ownership<'a> {
    /// A create, update or non-apply patch: kube records an `Update` entry for the manager,
    /// naming the subresource written through ("", "status", "scale").
    Update { manager: &'a str, subresource: &'a str },
    /// Server-side apply, which has computed the entries itself.
    Applied,
}

/// The subresource managedFields entries name for a write through `part`.
pub fn subresource_name(part: Part) -> &'static str {
    match part {
        Part::Main => "",
        Part::Status => "status",
        Part::Finalize => "finalize",
    }
}

/// Applies kube's update rules to `new` against `current` (the strategy of AX strategy.go and
/// the store's update): only the `part` the endpoint may change taken from `new`, server-owned
/// fields kept, generation bumped on non-metadata changes, managedFields recorded, no-ops found,
/// and an object that is being deleted and lost its last finalizer removed. Pure: the write
/// itself is the caller's (`update::guaranteed_update`).
pub(crate) fn prepare_update(
    res: &ResourceInfo,
    current: &Value,
    new: Value,
    part: Part,
    owner: Ownership<'_>,
) -> Result<Next, ApiError> {
    let mut new = subresource::confine(res, part, current, new);
    data_rules::normalize(res, &mut new)?;
    match part {
        Part::Status => defaults::apply_to_status(res, &mut new),
        _ => defaults::apply(res, &mut new),
    }
    if res.service_addresses {
        addresses::default_fields(&mut new);
    }
    if res.kube_role == Some(KubeRole::Pod) {
        pods::default_requests(&mut new);
        if part == Part::Status {
            pods::keep_qos_class(current, &mut new);
        }
    }
    let name = meta_str(current, "name").to_string();
    let no_meta = Map::new();
    let old_meta = metadata(current).unwrap_or(&no_meta);
    let mut causes = Vec::new();
    {
        let meta = metadata_mut(&mut new)?;
        for (field, label) in [("name", "metadata.name"), ("namespace", "metadata.namespace")] {
            let new_v = meta.get(field).and_then(Value::as_str).unwrap_or("");
            let old_v = old_meta.get(field).and_then(Value::as_str).unwrap_or("");
            if new_v != old_v && !(field == "namespace" && new_v.is_empty()) {
                causes.push(Cause::invalid(label, &meta::quote(new_v), "field is immutable"));
            }
        }
        match meta.get("uid").and_then(Value::as_str) {
            None | Some("") => {
                if let Some(uid) = old_meta.get("uid") {
                    meta.insert("uid".into(), uid.clone());
                }
            }
            Some(u) if Some(u) != old_meta.get("uid").and_then(Value::as_str) => {
                causes.push(Cause::invalid("metadata.uid", &meta::quote(u), "field is immutable"));
            }
            Some(_) => {}
        }
        for field in ["creationTimestamp", "generation", "namespace"] {
            match old_meta.get(field) {
                Some(v) => meta.insert(field.into(), v.clone()),
                None => meta.remove(field),
            };
        }
        let deleting = meta::deleting(old_meta);
        if deleting {
            for field in ["deletionTimestamp", "deletionGracePeriodSeconds"] {
                if let Some(v) = old_meta.get(field) {
                    meta.insert(field.into(), v.clone());
                }
            }
            let old_f = meta::finalizers(old_meta);
            let added: Vec<String> =
                meta::finalizers(meta).into_iter().filter(|f| !old_f.contains(f)).collect();
            if !added.is_empty() {
                let list: Vec<String> = added.iter().map(|f| format!("{f:?}")).collect();
                causes.push(Cause::forbidden(
                    "metadata.finalizers",
                    &format!(
                        "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                        list.join(", ")
                    ),
                ));
            }
        } else {
            if meta::deleting(meta) {
                causes.push(Cause::invalid(
                    "metadata.deletionTimestamp",
                    &format!(
                        "{:?}",
                        meta.get("deletionTimestamp").map(|v| v.to_string()).unwrap_or_default()
                    ),
                    "field is immutable; may only be changed via deletion",
                ));
            }
            meta.remove("deletionTimestamp");
            meta.remove("deletionGracePeriodSeconds");
        }
        meta.insert(
            "resourceVersion".into(),
            Value::String(meta_str(current, "resourceVersion").into()),
        );
        causes.extend(meta::validate(meta, res.namespaced, names(res)));
    }
    causes.extend(validation::check(res, &new));
    causes.extend(data_rules::validate(res, &new, Some(current)));
    // The kind's ValidateXUpdate; a status write keeps the stored spec (ValidateXStatusUpdate
    // checks metadata, as above).
    if part == Part::Main {
        causes.extend(update_rules::validate(res, &new, current));
    }
    if res.events {
        // ValidateEventUpdate in core/v1: the legacy rules, beside the common ones.
        causes.extend(event_rules::validate(&new));
    }
    causes.extend(subresource::validate(res, &new));
    if res.kube_role == Some(KubeRole::Fault) && part == Part::Main {
        causes.extend(fault::validate(&new));
    }
    if !causes.is_empty() {
        return Err(ApiError::invalid(res, &name, causes));
    }
    set_storage_version(res, &mut new);
    // Status writes never bump generation (AX status_strategy.go).
    if res.generation && part == Part::Main && spec_changed(current, &new) {
        let g = current.at("/metadata/generation").and_then(Value::as_i64).unwrap_or(0);
        new["metadata"]["generation"] = Value::from(g + 1);
    }
    // Recorded last, so that the entry sees `new` as it will be stored.
    if let Ownership::Update { manager, subresource } = owner {
        managed_fields::record_update(res, Some(current), &mut new, manager, subresource);
    }
    check_size(&new)?;
    if managed_fields::same_ignoring_times(&new, current) {
        return Ok(Next::Keep(current.clone()));
    }
    // store.go ShouldDeleteDuringUpdate: only an object whose deletion has no grace period
    // left (none, or 0) goes with its last finalizer; a pod in its grace period is its
    // kubelet's to delete.
    let grace = old_meta.get("deletionGracePeriodSeconds").and_then(Value::as_i64);
    let deleting = meta::deleting(old_meta) && grace.is_none_or(|g| g == 0);
    // A namespace's own finalizers (`spec.finalizers`) hold it as metadata's do.
    let held = res.namespaces && super::namespaces::held(&new);
    if deleting && !held && meta::finalizers(metadata(&new).unwrap_or(&Map::new())).is_empty() {
        return Ok(Next::Delete { answer: Some(new) });
    }
    Ok(Next::Update(new))
}

/// Whether anything but `metadata` differs: that bumps `generation` for custom resources.
fn spec_changed(old: &Value, new: &Value) -> bool {
    let (Some(old), Some(new)) = (old.as_object(), new.as_object()) else { return old != new };
    let counted = |k: &String| k != "metadata" && k != "apiVersion";
    old.keys().filter(|k| counted(k)).count() != new.keys().filter(|k| counted(k)).count()
        || new.iter().any(|(k, v)| counted(k) && old.get(k) != Some(v))
}

/// The create rules that come before anything else: no resourceVersion, and the namespace
/// agrees with the path (or is taken from it; cluster kinds have none).
pub fn check_create_meta(
    res: &ResourceInfo,
    target: &Target,
    obj: &mut Value,
) -> Result<(), ApiError> {
    let meta = metadata_mut(obj)?;
    if meta.get("resourceVersion").and_then(Value::as_str).is_some_and(|v| !v.is_empty()) {
        return Err(ApiError::bad_request(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    set_namespace_for_create(res, target, meta)
}

/// Makes a named body a new object: system fields wiped and set afresh, metadata validated,
/// storage version set.
pub fn init_new_object(res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    // Decoding and defaulting come before validation, as in kube's create path.
    data_rules::normalize(res, obj)?;
    defaults::apply(res, obj);
    if res.service_addresses {
        addresses::default_fields(obj);
    }
    if res.kube_role == Some(KubeRole::Pod) {
        pods::default_requests(obj);
    }
    // Validated as it will be stored: without the status a status subresource owns (a copy
    // only when there is such a status to leave out).
    let schema_causes = if res.status_subresource && obj.get("status").is_some() {
        validation::check(res, &subresource::confine(res, Part::Main, &Value::Null, obj.clone()))
    } else {
        validation::check(res, obj)
    };
    let mut data_causes = data_rules::validate(res, obj, None);
    if res.kube_role == Some(KubeRole::Fault) {
        data_causes.extend(fault::validate(obj));
    }
    // The events' strategy validates before ObjectMeta is, and alone when it finds a cause
    // (rest.BeforeCreate).
    if res.events {
        let causes = event_rules::validate(obj);
        if !causes.is_empty() {
            return Err(ApiError::invalid(res, meta_str(obj, "name"), causes));
        }
    }
    let meta = metadata_mut(obj)?;
    let type_causes = meta::system_field_type_causes(meta);
    meta::wipe_system_fields(meta);
    let name = meta.get("name").and_then(Value::as_str).unwrap_or("").to_string();
    let mut causes = type_causes;
    causes.extend(meta::validate(meta, res.namespaced, names(res)));
    causes.extend(schema_causes);
    causes.extend(data_causes);
    if !causes.is_empty() {
        return Err(ApiError::invalid(res, &name, causes));
    }
    meta.insert("uid".into(), Value::String(meta::new_uid()));
    meta.insert("creationTimestamp".into(), Value::String(meta::now_rfc3339()));
    if res.generation {
        meta.insert("generation".into(), Value::from(1));
    }
    set_storage_version(res, obj);
    subresource::prepare_create(res, obj, &name)?;
    // kube defaults on every decode, the read back from storage too: a status the create
    // dropped gets its defaults (a new claim is Pending).
    defaults::apply(res, obj);
    // After the status subresource's rule: a new namespace's status is the strategy's own.
    if res.namespaces {
        super::namespaces::prepare_namespace(obj);
    }
    if res.kube_role == Some(KubeRole::Pod) {
        pods::prepare_create(obj);
    }
    Ok(())
}

/// kube decodes a built-in kind's create or update body with the URL's kind as the default, so
/// a body without apiVersion or kind takes the URL's (the JSON serializer's gvkWithDefaults, as
/// the Python client's typed models send them); custom resources, decoded as unstructured, must
/// carry both. Built-in kinds are those taking strategic merge patches.
pub fn default_type_meta(res: &ResourceInfo, obj: &mut Value) {
    if !res.strategic_merge_patch {
        return;
    }
    let Some(map) = obj.as_object_mut() else { return };
    for (field, default) in [("kind", res.kind.to_string()), ("apiVersion", res.api_version())] {
        if map.get(field).and_then(Value::as_str).is_none_or(str::is_empty) {
            map.insert(field.into(), Value::String(default));
        }
    }
}

/// apiVersion and kind in a body must name the URL's kind and version.
pub fn check_type_meta(res: &ResourceInfo, obj: &Value) -> Result<(), ApiError> {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind.is_empty() {
        return Err(ApiError::bad_request(format!(
            "Object 'Kind' is missing in '{}'",
            short_json(obj)
        )));
    }
    if api_version.is_empty() {
        return Err(ApiError::bad_request(format!(
            "Object 'apiVersion' is missing in '{}'",
            short_json(obj)
        )));
    }
    let expected = res.api_version();
    if api_version != expected {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({expected})"
        )));
    }
    if kind != res.kind {
        return Err(ApiError::invalid(
            res,
            meta_str(obj, "name"),
            vec![Cause::invalid("kind", &meta::quote(kind), &format!("must be {}", res.kind))],
        ));
    }
    Ok(())
}

fn short_json(v: &Value) -> String {
    let s = v.to_string();
    s.chars().take(256).collect()
}

/// Namespace rules on create: body and path must agree; empty takes the path's; cluster kinds
/// have none.
fn set_namespace_for_create(
    res: &ResourceInfo,
    target: &Target,
    meta: &mut Map<String, Value>,
) -> Result<(), ApiError> {
    if !res.namespaced {
        meta.remove("namespace");
        return Ok(());
    }
    let body_ns = meta.get("namespace").and_then(Value::as_str).unwrap_or("");
    if body_ns.is_empty() {
        meta.insert("namespace".into(), Value::String(target.ns().into()));
    } else if body_ns != target.ns() {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    Ok(())
}

/// Stored objects carry the storage version; reads rewrite it to the version asked for.
fn set_storage_version(res: &ResourceInfo, obj: &mut Value) {
    if let Some(m) = obj.as_object_mut() {
        let v = if res.group.is_empty() {
            res.storage_version.to_string()
        } else {
            format!("{}/{}", res.group, res.storage_version)
        };
        m.insert("apiVersion".into(), Value::String(v));
    }
}

pub fn check_size(obj: &Value) -> Result<(), ApiError> {
    // The store decodes what it keeps: an object nested too deep could never be read back.
    crate::object::limits::check_object(obj)
}

/// Which names `res` accepts: kube's namespace names are labels, other built-in kinds'
/// subdomains, the seed's kinds' its labels of up to 253 characters.
fn names(res: &ResourceInfo) -> meta::Names {
    if res.namespaces {
        meta::Names::Label
    } else if res.dns1035_label_names {
        meta::Names::Dns1035Label
    } else if res.dns_subdomain_names {
        meta::Names::Subdomain
    } else {
        meta::Names::Seed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_fields_beside_metadata_and_api_version_are_the_spec() {
        let old = json!({"apiVersion": "g/v1", "metadata": {"a": 1}, "spec": {"n": 1}});
        let same = json!({"apiVersion": "g/v2", "metadata": {"a": 2}, "spec": {"n": 1}});
        assert!(!spec_changed(&old, &same));
        assert!(spec_changed(&old, &json!({"metadata": {}, "spec": {"n": 2}})));
        assert!(spec_changed(&old, &json!({"metadata": {}, "spec": {"n": 1}, "status": {}})));
        assert!(spec_changed(&old, &json!({"metadata": {}})));
        assert!(!spec_changed(&json!({"x": null}), &json!({"x": null, "apiVersion": "v"})));
        assert!(spec_changed(&json!({"x": null}), &json!({"y": null})));
    }

    #[test]
    fn built_in_kinds_take_the_urls_type_meta_and_custom_resources_must_carry_it() {
        let core = crate::generated::RESOURCES.iter().find(|r| r.group.is_empty() && r.is_stored());
        let custom =
            crate::generated::RESOURCES.iter().find(|r| !r.strategic_merge_patch && r.is_stored());
        let (Some(core), Some(custom)) = (core, custom) else {
            panic!("the document serves a core kind and a custom resource")
        };
        let mut bare = json!({"metadata": {"name": "a"}});
        default_type_meta(core, &mut bare);
        assert_eq!(bare["kind"], core.kind);
        assert_eq!(bare["apiVersion"], core.api_version());
        assert!(check_type_meta(core, &bare).is_ok());
        // What the body says is kept, and still checked.
        let mut other = json!({"apiVersion": "v2", "kind": "", "metadata": {}});
        default_type_meta(core, &mut other);
        assert_eq!(
            (other["apiVersion"].as_str(), other["kind"].as_str()),
            (Some("v2"), Some(core.kind))
        );
        assert!(check_type_meta(core, &other).is_err());
        let mut bare = json!({"metadata": {"name": "a"}});
        default_type_meta(custom, &mut bare);
        assert_eq!(bare, json!({"metadata": {"name": "a"}}));
        let err = check_type_meta(custom, &bare).unwrap_err();
        assert!(format!("{err:?}").contains("Object 'Kind' is missing"), "{err:?}");
    }
}
