//! Server-side apply as a verb (B.3; AS pkg/endpoints/handlers/patch.go `applyPatcher`): the
//! configuration is checked as kube checks it, merged into the live object (or into nothing:
//! apply creates) by `managed_fields::apply`, and written through the one update loop. An apply
//! is unconditional unless its configuration names a resourceVersion.

use serde_json::{Map, Value};

use super::strategy::{check_create_meta, check_size, check_type_meta, init_new_object, Ownership};
use super::update::{Next, Shed};
use super::{Outcome, Registry, Target};
use crate::object::error::ApiError;
use crate::object::managed_fields::apply::{merge_config, sync_last_applied, Scope};
use crate::object::managed_fields::Type;
use crate::object::subresource::{self, SCALE_API_VERSION, SCALE_KIND};
use crate::object::validation::{self, FieldValidation};
use crate::object::At;
use crate::object::{for_version, meta_str, strict_decoding};
use crate::registry::keys::object_key;
use crate::registry::strategy::prepare_update;
use crate::resource::{ResourceInfo, ScaleInfo};

/// An apply's options (kube's `PatchOptions` for an apply patch), already checked.
#[derive(Debug, Clone)]
pub struct ApplyOptions {
    pub manager: String,
    pub force: bool,
    pub dry_run: bool,
    pub field_validation: FieldValidation,
}

/// One apply: the configuration decoded, and its text for the keys it repeats.
#[derive(Debug, Clone, Copy)]
pub struct ApplyRequest<'a> {
    pub config: &'a Value,
    /// The body as sent (YAML, of which JSON is a part).
    pub text: &'a [u8],
}

impl Registry {
    /// Applies to the object `target` names (through `target.part`); creates it on the main
    /// endpoint when it does not exist.
    pub async fn apply(
        &self,
        res: &'static ResourceInfo,
        target: &Target,
        request: ApplyRequest<'_>,
        opts: &ApplyOptions,
    ) -> Result<Outcome, ApiError> {
        let config = request.config;
        let scope = Scope::of(res, target.part);
        check_config(res, config)?;
        check_declared((res.group, res.version, res.kind), target, config)?;
        let warnings = strict_yaml(request.text, opts.field_validation)?;
        let name = target.name();
        let key = object_key(res, target.ns(), name);
        // An apply that would create meets NamespaceLifecycle as a create does.
        if res.namespaced && self.checks_namespaces() && self.store.get_raw(&key).is_none() {
            self.admit_in_namespace(res, target.ns(), name).await?;
        }
        // So is DefaultStorageClass, read before the decision that may create.
        let class = match res.default_class {
            Some(_) if self.store.get_raw(&key).is_none() => self.default_class(res).await?,
            _ => None,
        };
        let mut outcome = self
            .guaranteed_update(res, &key, name, opts.dry_run, Shed::Never, |current| {
                let next = match current {
                    None if scope == Scope::OnlyStatus => Err(ApiError::not_found(res, name)),
                    None => create(self, res, target, opts, scope, config, class.as_deref()),
                    Some(current) => update(res, target, opts, scope, current, config),
                };
                self.validated(res, target.part, next)
            })
            .await?;
        outcome.warnings = warnings;
        let admission = self.admission_warnings(res, target.part, outcome.object.value());
        outcome.warnings.extend(admission);
        Ok(outcome)
    }

    /// Applies an `autoscaling/v1` Scale to `…/scale`: its `spec.replicas` is applied to the
    /// field `x-virt-resource.scale` names, owned under the `scale` subresource (kube's
    /// fieldmanager ScaleHandler). Never creates. Answers the object; its Scale view is the
    /// caller's.
    pub async fn apply_scale(
        &self,
        res: &'static ResourceInfo,
        info: &'static ScaleInfo,
        target: &Target,
        request: ApplyRequest<'_>,
        opts: &ApplyOptions,
    ) -> Result<Outcome, ApiError> {
        let scale = request.config;
        let version = scale.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        if version != SCALE_API_VERSION {
            return Err(ApiError::bad_request(format!(
                "Incorrect version specified in apply patch. Specified patch version: {version}, expected: {SCALE_API_VERSION}"
            )));
        }
        let kind = scale.get("kind").and_then(Value::as_str).unwrap_or("");
        if kind != SCALE_KIND {
            return Err(ApiError::bad_request(format!(
                "the kind in the apply patch ({kind}) does not match the expected kind ({SCALE_KIND})"
            )));
        }
        if scale.at("/metadata/managedFields").is_some_and(|v| !v.is_null()) {
            return Err(ApiError::bad_request("metadata.managedFields must be nil"));
        }
        check_declared(("autoscaling", "v1", SCALE_KIND), target, scale)?;
        let warnings = strict_yaml(request.text, opts.field_validation)?;
        // The same intent, said of the object itself.
        let mut config = serde_json::json!({
            "apiVersion": res.api_version(),
            "kind": res.kind,
            "metadata": scale.get("metadata").cloned().unwrap_or_else(|| Value::Object(Map::new())),
        });
        if scale.at("/spec/replicas").is_some() {
            let replicas = subresource::spec_replicas_of(scale, true)?;
            subresource::set_nested(&mut config, info.spec_replicas_path, Value::from(replicas))?;
        }
        let scope = Scope::Scale(info.spec_replicas_path);
        let name = target.name();
        let key = object_key(res, target.ns(), name);
        let mut outcome = self
            .guaranteed_update(res, &key, name, opts.dry_run, Shed::Never, |current| {
                let current = current.ok_or_else(|| ApiError::not_found(res, name))?;
                self.validated(res, target.part, update(res, target, opts, scope, current, &config))
            })
            .await?;
        outcome.warnings = warnings;
        Ok(outcome)
    }
}

/// Applies to a missing object.
fn create(
    registry: &Registry,
    res: &'static ResourceInfo,
    target: &Target,
    opts: &ApplyOptions,
    scope: Scope,
    config: &Value,
    default_class: Option<&str>,
) -> Result<Next, ApiError> {
    let nothing = Value::Object(Map::new());
    let mut obj = merge(res, opts, scope, &nothing, config)?;
    let uid = meta_str(&obj, "uid");
    if !uid.is_empty() {
        return Err(ApiError::Conflict {
            group: res.group.into(),
            plural: res.plural.into(),
            name: target.name().into(),
            message: format!(
                "Operation cannot be fulfilled on {} {:?}: uid mismatch: the provided object specified uid {uid}, and no existing object was found",
                res.group_resource(),
                target.name()
            ),
        });
    }
    target.check_identity(&obj)?;
    check_create_meta(res, target, &mut obj)?;
    super::default_class::fill(res, &mut obj, default_class);
    super::in_use_protection::protect(res, &mut obj)?;
    registry.mutate_on_create(res, &mut obj)?;
    init_new_object(res, &mut obj)?;
    check_size(&obj)?;
    Ok(Next::Create(obj))
}

/// Applies to `current`.
fn update(
    res: &'static ResourceInfo,
    target: &Target,
    opts: &ApplyOptions,
    scope: Scope,
    current: &Value,
    config: &Value,
) -> Result<Next, ApiError> {
    let wanted_rv = meta_str(config, "resourceVersion");
    if !wanted_rv.is_empty() && wanted_rv != meta_str(current, "resourceVersion") {
        return Err(ApiError::optimistic_lock(res, target.name()));
    }
    let obj = merge(res, opts, scope, &for_version(res, current), config)?;
    target.check_identity(&obj)?;
    prepare_update(res, current, obj, target.part, Ownership::Applied)
}

/// The object after applying `config` to `live`, with its managedFields.
fn merge(
    res: &ResourceInfo,
    opts: &ApplyOptions,
    scope: Scope,
    live: &Value,
    config: &Value,
) -> Result<Value, ApiError> {
    let api_version = res.api_version();
    let mut out =
        merge_config(Type::of(res), live, config, &opts.manager, &api_version, opts.force, scope)?;
    if !matches!(scope, Scope::Scale(_)) {
        sync_last_applied(&opts.manager, config, &mut out);
    }
    Ok(out)
}

/// Every field an apply sets must be declared: structured-merge-diff cannot type the
/// configuration otherwise, whatever `fieldValidation` says. kube answers a 500 with this text
/// (kubernetes#139253); it is the client's mistake, so ours is a 400.
fn check_declared(
    gvk: (&str, &str, &str),
    target: &Target,
    config: &Value,
) -> Result<(), ApiError> {
    let undeclared = validation::undeclared_in_apply(gvk, config);
    let errors = match undeclared.as_slice() {
        [] => return Ok(()),
        [one] => format!("{one}: field not declared in schema"),
        many => format!(
            "errors:\n  {}",
            many.iter()
                .map(|p| format!("{p}: field not declared in schema"))
                .collect::<Vec<_>>()
                .join("\n  ")
        ),
    };
    Err(ApiError::bad_request(format!(
        "failed to create typed patch object ({}/{}; {}, Kind={}): {errors}",
        target.namespace.as_deref().unwrap_or(""),
        target.name.as_deref().unwrap_or(""),
        if gvk.0.is_empty() { gvk.1.to_string() } else { format!("{}/{}", gvk.0, gvk.1) },
        gvk.2
    )))
}

/// Keys repeated in the configuration (handlers/patch.go `applyPatcher` decodes it again
/// strictly): refused under `Strict`, the warnings under `Warn`.
fn strict_yaml(body: &[u8], mode: FieldValidation) -> Result<Vec<String>, ApiError> {
    if mode == FieldValidation::Ignore {
        return Ok(Vec::new());
    }
    let lines =
        std::str::from_utf8(body).map(strict_decoding::yaml_duplicate_keys).unwrap_or_default();
    if mode == FieldValidation::Strict && !lines.is_empty() {
        return Err(ApiError::bad_request(format!(
            "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  {}",
            lines.join("\n  ")
        )));
    }
    Ok(lines)
}

/// What kube checks of an apply configuration before merging (structuredmerge.go `Apply`).
fn check_config(res: &ResourceInfo, config: &Value) -> Result<(), ApiError> {
    let version = config.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if version != res.api_version() {
        return Err(ApiError::bad_request(format!(
            "Incorrect version specified in apply patch. Specified patch version: {version}, expected: {}",
            res.api_version()
        )));
    }
    if config.at("/metadata/managedFields").is_some_and(|v| !v.is_null()) {
        return Err(ApiError::bad_request("metadata.managedFields must be nil"));
    }
    check_type_meta(res, config)
}
