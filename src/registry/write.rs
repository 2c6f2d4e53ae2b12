//! Create, update (PUT) and non-apply patch, with kube's ObjectMeta rules for custom resources
//! (B.2, B.3). Objects arrive decoded, with how they arrived (`Via`) for their repeated keys.

use serde_json::Value;

use super::strategy::{
    check_create_meta, check_size, check_system_field_types, check_type_meta, default_type_meta,
    init_new_object, prepare_update, subresource_name, Ownership,
};
use super::{Change, Object, Outcome, Registry, Target, WriteOptions};
use crate::object::error::{ApiError, Cause};
use crate::object::meta::metadata_mut;
use crate::object::patch::NonApplyPatch;
use crate::object::schema::kind_definition;
use crate::object::subresource::Part;
use crate::object::validation::{self, Via};
use crate::object::{for_version, managed_fields, meta, meta_str};
use crate::registry::keys::object_key;
use crate::registry::update::{Next, Shed};
use crate::resource::ResourceInfo;
use crate::store::StoreError;

/// How often kube's create retries a generated name that collides.
const GENERATE_NAME_TRIES: usize = 8;

impl Registry {
    /// Creates `obj` in `target`'s namespace; for a create-only token kind, answers the signed
    /// token instead and stores nothing.
    pub async fn create(
        &self,
        res: &'static ResourceInfo,
        target: &Target,
        mut obj: Value,
        via: Via<'_>,
        opts: &WriteOptions,
    ) -> Result<Outcome, ApiError> {
        default_type_meta(res, &mut obj);
        check_type_meta(res, &obj)?;
        let admitted = validation::admit(res, &mut obj, via, opts.field_validation)?;
        let mut warnings = admitted.warnings;
        check_create_meta(res, target, &mut obj)?;
        // NamespaceLifecycle is mutating admission: it runs before the strategy validates.
        self.admit_in_namespace(res, meta_str(&obj, "namespace"), meta_str(&obj, "name")).await?;
        // DefaultStorageClass comes after NamespaceLifecycle among kube's admission plugins.
        let class = self.default_class(res).await?;
        super::default_class::fill(res, &mut obj, class.as_deref());
        // StorageObjectInUseProtection follows DefaultStorageClass.
        super::in_use_protection::protect(res, &mut obj)?;
        // virt-api's mutating webhooks come after kube's own mutating admission.
        self.mutate_on_create(res, &mut obj)?;
        if let Some(field) = res.token_field {
            let answer = super::token::answer(&self.store, res, field, obj).await?;
            return Ok(Outcome {
                change: Change::Created,
                object: Object::Computed(answer),
                warnings,
            });
        }
        let meta = metadata_mut(&mut obj)?;
        let generate = meta.get("generateName").and_then(Value::as_str).unwrap_or("").to_string();
        let named = meta.get("name").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
        if !named && !generate.is_empty() {
            meta.insert("name".into(), Value::String(meta::generate_name(&generate)));
        }
        init_new_object(res, &mut obj)?;
        self.admission_validate(res, Part::Main, &obj, false)?;
        warnings.extend(self.admission_warnings(res, Part::Main, &obj));
        managed_fields::record_update(res, None, &mut obj, &opts.manager, "");
        // kube's service storage allocates after the field manager has recorded the request
        // (`beginCreate`), holding what it took until the write is answered.
        let held = self.hold_addresses(res).await;
        if held.is_some() {
            let in_use = self.addresses_in_use(res, None).await?;
            self.allocate_create(res, &mut obj, &in_use, opts.dry_run)?;
        }
        check_size(&obj)?;
        if opts.dry_run {
            return Ok(Outcome {
                change: Change::Created,
                object: Object::Computed(obj),
                warnings,
            });
        }
        let mut tries = 0;
        loop {
            let name = meta_str(&obj, "name").to_string();
            let key = object_key(res, meta_str(&obj, "namespace"), &name);
            // Only a generated name may be tried again, with the object kept for it.
            let retry = !named && tries + 1 < GENERATE_NAME_TRIES;
            let sent = if retry { obj.clone() } else { std::mem::take(&mut obj) };
            match self.shedding(Shed::ManagedFields, sent, |v| self.store.create(&key, v)).await {
                Ok(stored) => {
                    let object = Object::Stored(stored);
                    return Ok(Outcome { change: Change::Created, object, warnings });
                }
                Err(StoreError::AlreadyExists) if retry => {
                    tries += 1;
                    let fresh = meta::generate_name(&generate);
                    obj["metadata"]["name"] = Value::String(fresh);
                }
                Err(StoreError::AlreadyExists) => {
                    let deleting = match self.store.get(&key).await? {
                        Some(existing) => meta::is_deleting(&existing),
                        None => false,
                    };
                    if !named && !deleting {
                        return Err(ApiError::NameGenerationExhausted {
                            group: res.group.into(),
                            plural: res.plural.into(),
                            name,
                        });
                    }
                    return Err(ApiError::already_exists(res, &name, deleting));
                }
                Err(e) => return Err(ApiError::from_store(e, res, &name)),
            }
        }
    }

    /// Replaces the object `target` names with `obj`: custom resources need
    /// `metadata.resourceVersion` and an update never creates.
    pub async fn update(
        &self,
        res: &'static ResourceInfo,
        target: &Target,
        mut obj: Value,
        via: Via<'_>,
        opts: &WriteOptions,
    ) -> Result<Outcome, ApiError> {
        default_type_meta(res, &mut obj);
        check_type_meta(res, &obj)?;
        let name = target.name();
        let admitted = validation::admit(res, &mut obj, via, opts.field_validation)?;
        check_system_field_types(res, name, metadata_mut(&mut obj)?)?;
        target.check_identity(&obj)?;
        let meta = metadata_mut(&mut obj)?;
        if !res.namespaced {
            meta.remove("namespace");
        } else if meta.get("namespace").and_then(Value::as_str).unwrap_or("").is_empty() {
            meta.insert("namespace".into(), Value::String(target.ns().into()));
        }
        let rv = meta.get("resourceVersion").and_then(Value::as_str).unwrap_or("").to_string();
        if rv.is_empty() {
            return Err(ApiError::Invalid {
                group: res.group.into(),
                details_kind: res.plural.into(),
                qualified: res.group_resource(),
                name: name.into(),
                causes: vec![Cause::invalid(
                    "metadata.resourceVersion",
                    "0x0",
                    "must be specified for an update",
                )],
            });
        }
        let key = object_key(res, target.ns(), name);
        let owner = || Ownership::Update {
            manager: &opts.manager,
            subresource: subresource_name(target.part),
        };
        // The body is the write's only version: once the stored revision moves past its
        // resourceVersion, every later decision is a conflict, so it is needed twice only when
        // a decision that wrote nothing is made again on a state known to be current (a backend
        // whose commits also come from elsewhere: see `guaranteed_update`).
        let decided_again = self.store.facts().external_commits;
        let mut body = Some(obj);
        let mut outcome = self
            .guaranteed_update(res, &key, name, opts.dry_run, Shed::ManagedFields, |current| {
                let current = current.ok_or_else(|| ApiError::not_found(res, name))?;
                if rv != meta_str(current, "resourceVersion") {
                    return Err(ApiError::optimistic_lock(res, name));
                }
                let obj = if decided_again { body.clone() } else { body.take() };
                let obj = obj.ok_or_else(|| ApiError::optimistic_lock(res, name))?;
                self.validated(
                    res,
                    target.part,
                    prepare_update(res, current, obj, target.part, owner()),
                )
            })
            .await?;
        outcome.warnings = admitted.warnings;
        let admission = self.admission_warnings(res, target.part, outcome.object.value());
        outcome.warnings.extend(admission);
        Ok(outcome)
    }

    /// Applies a JSON patch, a JSON merge patch or a strategic merge patch (`body` is its text)
    /// to the object `target` names: unconditional unless the patch sets
    /// `metadata.resourceVersion`.
    pub async fn patch(
        &self,
        res: &'static ResourceInfo,
        target: &Target,
        patch: &NonApplyPatch,
        body: &[u8],
        opts: &WriteOptions,
    ) -> Result<Outcome, ApiError> {
        let name = target.name();
        let key = object_key(res, target.ns(), name);
        let via = match patch {
            NonApplyPatch::Json(_) => Via::JsonPatch(body),
            NonApplyPatch::Merge(_) => Via::MergePatch(body),
            NonApplyPatch::Strategic(p) => Via::StrategicMergePatch(body, p),
        };
        let mut warnings = Vec::new();
        let mut outcome = self
            .guaranteed_update(res, &key, name, opts.dry_run, Shed::ManagedFields, |current| {
                let current = current.ok_or_else(|| ApiError::not_found(res, name))?;
                let mut patched = for_version(res, current);
                patch.apply(&mut patched, kind_definition(res))?;
                if !patched.is_object() {
                    return Err(ApiError::PatchRejected);
                }
                check_type_meta(res, &patched)?;
                let admitted = validation::admit(res, &mut patched, via, opts.field_validation)?;
                warnings = admitted.warnings;
                let meta = metadata_mut(&mut patched)?;
                check_system_field_types(res, name, meta)?;
                let wanted_rv = meta.get("resourceVersion").and_then(Value::as_str).unwrap_or("");
                if !wanted_rv.is_empty() && wanted_rv != meta_str(current, "resourceVersion") {
                    return Err(ApiError::optimistic_lock(res, name));
                }
                let owner = Ownership::Update {
                    manager: &opts.manager,
                    subresource: subresource_name(target.part),
                };
                self.validated(
                    res,
                    target.part,
                    prepare_update(res, current, patched, target.part, owner),
                )
            })
            .await?;
        outcome.warnings = warnings;
        let admission = self.admission_warnings(res, target.part, outcome.object.value());
        outcome.warnings.extend(admission);
        Ok(outcome)
    }

    /// An update that background work decides from the current state: `edit` changes a copy
    /// of it, or says there is nothing to do (`None`). The write goes through `part` (the main
    /// endpoint, or `/status`), follows every update rule and records `manager` in
    /// managedFields, as a client's update would.
    pub async fn update_with(
        &self,
        res: &'static ResourceInfo,
        target: (&str, &str, Part),
        manager: &str,
        mut edit: impl FnMut(&mut Value) -> Option<()>,
    ) -> Result<Outcome, ApiError> {
        let (namespace, name, part) = target;
        let key = object_key(res, namespace, name);
        self.guaranteed_update(res, &key, name, false, Shed::ManagedFields, |current| {
            let current = current.ok_or_else(|| ApiError::not_found(res, name))?;
            let mut obj = (**current).clone();
            if edit(&mut obj).is_none() {
                return Ok(Next::Keep(obj));
            }
            let owner = Ownership::Update { manager, subresource: subresource_name(part) };
            self.validated(res, part, prepare_update(res, current, obj, part, owner))
        })
        .await
    }

    /// `update_with` for an edit that can tell from the current object whether it changes
    /// anything (`changes`): an object it leaves alone is not copied.
    pub async fn update_when(
        &self,
        res: &'static ResourceInfo,
        target: (&str, &str, Part),
        manager: &str,
        mut changes: impl FnMut(&Value) -> bool,
        mut edit: impl FnMut(&mut Value),
    ) -> Result<Outcome, ApiError> {
        let (namespace, name, part) = target;
        let key = object_key(res, namespace, name);
        self.guaranteed_update(res, &key, name, false, Shed::ManagedFields, |current| {
            let current = current.ok_or_else(|| ApiError::not_found(res, name))?;
            if !changes(current) {
                return Ok(Next::Same);
            }
            let mut obj = (**current).clone();
            edit(&mut obj);
            let owner = Ownership::Update { manager, subresource: subresource_name(part) };
            self.validated(res, part, prepare_update(res, current, obj, part, owner))
        })
        .await
    }
}
