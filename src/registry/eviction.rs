//! kube's Pod `eviction` subresource (K8S release-1.32 `pkg/registry/core/pod/storage/eviction.go`
//! EvictionREST.Create): a policy/v1 Eviction deletes the object it names with its
//! DeleteOptions, after the validating webhooks (`Admission::admit_subresource_create`) had
//! their say.
//!
//! No PodDisruptionBudgets exist here (policy/v1 is not served), so kube's budget checks never
//! block: `getPodDisruptionBudgets` finds none and the eviction deletes, as it does for a pod
//! whose budget allows it. Nor the 429 `Cannot evict pod as it would violate the pod's
//! disruption budget.` nor the 500 of several budgets can arise.

use serde_json::Value;

use super::update::{Next, Shed};
use super::{DeleteOptions, Registry, Target};
use crate::object::conditions::update_condition;
use crate::object::error::ApiError;
use crate::object::meta_str;
use crate::object::At;
use crate::registry::keys::object_key;
use crate::resource::ResourceInfo;

impl Registry {
    /// `POST …/{name}/eviction` with `eviction` (decoded, its namespace checked); `dry_run`:
    /// the request's `dryRun`, merged with the Eviction's DeleteOptions as kube's
    /// `propagateDryRun` does. kube answers a bare `Status` Success; so does the caller.
    pub async fn evict(
        &self,
        res: &'static ResourceInfo,
        target: &Target,
        eviction: &Value,
        dry_run: &[String],
        parse_options: impl Fn(&[u8]) -> Result<DeleteOptions, ApiError>,
    ) -> Result<(), ApiError> {
        let name = target.name();
        if meta_str(eviction, "name") != name {
            return Err(ApiError::bad_request(
                "name in URL does not match name in Eviction object",
            ));
        }
        let merged = propagate_dry_run(eviction.get("deleteOptions"), dry_run)?;
        let options = parse_options(&serde_json::to_vec(&merged).unwrap_or_default())?;
        let key = object_key(res, target.ns(), name);
        // kube's getPod: a missing object is its NotFound.
        let pod = self.store.get(&key).await?.ok_or_else(|| ApiError::not_found(res, name))?;
        // kube's createValidation, where virt-api's eviction webhook may refuse; it is sent
        // the Eviction with the request's dry run in its options (its review's `dryRun`).
        let mut sent = eviction.clone();
        sent["deleteOptions"] = merged;
        self.admit_subresource_create(res, "eviction", &pod, &sent).await?;
        // Whether the budgets could be ignored (canIgnorePDB: terminal, pending or deleting)
        // or found none, the object is deleted the same way; only a pending one is held to
        // the revision just read (shouldEnforceResourceVersion), as kube guards it against
        // turning ready meanwhile. With no budget kube adds no precondition.
        let mut options = options;
        if options.precondition_rv.is_none() && enforce_resource_version(&pod) {
            options.precondition_rv = Some(meta_str(&pod, "resourceVersion").to_string());
        }
        if !options.dry_run {
            self.add_disruption_condition(res, target, &mut options).await?;
        }
        self.delete(res, target.ns(), name, &options).await?;
        Ok(())
    }

    /// addConditionAndDeletePod's status write (PodDisruptionConditions, on in 1.32): the
    /// `DisruptionTarget` condition, written through the status store with the delete's
    /// preconditions checked against the latest object in kube's words, no managedFields entry;
    /// the delete then requires the revision this write made, where one was required.
    async fn add_disruption_condition(
        &self,
        res: &'static ResourceInfo,
        target: &Target,
        options: &mut DeleteOptions,
    ) -> Result<(), ApiError> {
        let name = target.name();
        let key = object_key(res, target.ns(), name);
        let conflict = |why: String| ApiError::Conflict {
            group: String::new(),
            // kube names `schema.GroupResource{Resource: "Pod"}` here: the kind, as written.
            plural: res.kind.into(),
            name: name.into(),
            message: format!("Operation cannot be fulfilled on {} {name:?}: {why}", res.kind),
        };
        let outcome = self
            .guaranteed_update(res, &key, name, false, Shed::Never, |current| {
                let current = current.ok_or_else(|| ApiError::not_found(res, name))?;
                if let Some(uid) = options.precondition_uid.as_deref().filter(|u| !u.is_empty()) {
                    let have = meta_str(current, "uid");
                    if uid != have {
                        return Err(conflict(format!(
                            "the UID in the precondition ({uid}) does not match the UID in record \
                             ({have}). The object might have been deleted and then recreated"
                        )));
                    }
                }
                if let Some(rv) = options.precondition_rv.as_deref().filter(|r| !r.is_empty()) {
                    let have = meta_str(current, "resourceVersion");
                    if rv != have {
                        return Err(conflict(format!(
                            "the ResourceVersion in the precondition ({rv}) does not match the \
                             ResourceVersion in record ({have}). The object might have been \
                             modified"
                        )));
                    }
                }
                let mut pod = (**current).clone();
                update_condition(
                    &mut pod,
                    "DisruptionTarget",
                    "True",
                    "EvictionByEvictionAPI",
                    "Eviction API: evicting",
                );
                if pod == **current {
                    return Ok(Next::Keep(pod));
                }
                Ok(Next::Update(pod))
            })
            .await?;
        if options.precondition_rv.is_some() {
            let rv = meta_str(outcome.object.value(), "resourceVersion").to_string();
            options.precondition_rv = Some(rv);
        }
        Ok(())
    }
}

/// kube's `canIgnorePDB && shouldEnforceResourceVersion`: of the objects whose budgets are
/// ignored (terminal, pending or deleting), the pending ones that are not being deleted.
fn enforce_resource_version(pod: &Value) -> bool {
    let phase = pod.at("/status/phase").and_then(Value::as_str).unwrap_or("");
    let deleting = pod.at("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null());
    phase == "Pending" && !deleting
}

/// kube's `propagateDryRun`: the request's `dryRun` fills the Eviction's DeleteOptions' where
/// they have none; differing ones are a plain error (500 with no reason).
fn propagate_dry_run(options: Option<&Value>, dry_run: &[String]) -> Result<Value, ApiError> {
    let mut options = match options {
        Some(Value::Object(o)) => Value::Object(o.clone()),
        _ => serde_json::json!({}),
    };
    let theirs: Vec<String> = match options.get("dryRun") {
        Some(Value::Array(a)) => a.iter().map(|v| v.as_str().unwrap_or("").to_string()).collect(),
        _ => Vec::new(),
    };
    if theirs.is_empty() {
        if !dry_run.is_empty() {
            options["dryRun"] = serde_json::json!(dry_run);
        }
    } else if !dry_run.is_empty() && theirs != dry_run {
        return Err(ApiError::Unknown(format!(
            "Non-matching dry-run options in request and content: [{}] and [{}]",
            dry_run.join(" "),
            theirs.join(" ")
        )));
    }
    Ok(options)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dry_run_comes_from_the_request_where_the_options_have_none() {
        let all = ["All".to_string()];
        assert_eq!(propagate_dry_run(None, &all).unwrap(), json!({"dryRun": ["All"]}));
        let given = json!({"gracePeriodSeconds": 5, "dryRun": ["All"]});
        assert_eq!(propagate_dry_run(Some(&given), &[]).unwrap(), given);
        let err = propagate_dry_run(Some(&json!({"dryRun": ["X"]})), &all).unwrap_err();
        assert_eq!(
            err,
            ApiError::Unknown(
                "Non-matching dry-run options in request and content: [All] and [X]".into()
            )
        );
        assert!(enforce_resource_version(&json!({"status": {"phase": "Pending"}})));
        assert!(!enforce_resource_version(&json!({"status": {"phase": "Running"}})));
        assert!(!enforce_resource_version(&json!({"status": {"phase": "Failed"}})));
    }
}
