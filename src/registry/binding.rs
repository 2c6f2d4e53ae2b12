//! kube's Pod `binding` subresource (K8S release-1.32 `pkg/registry/core/pod/storage/storage.go`
//! BindingREST.Create, assignPod, setPodNodeAndMetadata): a core/v1 Binding assigns the object
//! it names to a node in one storage-level write. As kube's, the write goes round the kind's
//! strategy: no managedFields entry is recorded for it (the generic handler's field manager
//! never sees it) and the object is not validated again.

use serde_json::{json, Map, Value};

use super::update::{Next, Shed};
use super::{Registry, Target};
use crate::generated::kind_of_role;
use crate::object::conditions::update_condition;
use crate::object::error::{ApiError, Cause};
use crate::object::meta_str;
use crate::object::At;
use crate::registry::keys::object_key;
use crate::resource::{KubeRole, ResourceInfo};

impl Registry {
    /// `POST …/{name}/binding` with `binding` (decoded, its namespace checked). `dry_run`
    /// decides without writing. kube answers a bare `Status` Success; so does the caller.
    pub async fn bind(
        &self,
        res: &'static ResourceInfo,
        target: &Target,
        binding: &Value,
        dry_run: bool,
    ) -> Result<(), ApiError> {
        let name = target.name();
        if meta_str(binding, "name") != name {
            return Err(ApiError::bad_request("name in URL does not match name in Binding object"));
        }
        // ValidatePodBinding's errors are a plain aggregate, which kube's handler answers as
        // 500 with no reason (`responsewriters.ErrorToAPIStatus`).
        let causes = validate_binding(binding);
        if !causes.is_empty() {
            return Err(ApiError::Unknown(aggregate(&causes)));
        }
        let current = self.store.get(&object_key(res, target.ns(), name)).await?;
        // kube's createValidation: the validating webhooks see the Binding before the write.
        if let Some(pod) = current.as_deref() {
            self.admit_subresource_create(res, "binding", pod, binding).await?;
        }
        let uid = meta_str(binding, "uid").to_string();
        let rv = meta_str(binding, "resourceVersion").to_string();
        let node = binding.at("/target/name").and_then(Value::as_str).unwrap_or("");
        let annotations = binding.at("/metadata/annotations").and_then(Value::as_object);
        let key = object_key(res, target.ns(), name);
        self.guaranteed_update(res, &key, name, dry_run, Shed::Never, |current| {
            let current = current.ok_or_else(|| ApiError::not_found(res, name))?;
            check_storage_preconditions(res, target, current, &uid, &rv)?;
            let mut pod = (**current).clone();
            assign(res, &mut pod, node, annotations).map(Next::Update)
        })
        .await?;
        Ok(())
    }
}

/// `ValidatePodBinding` (K8S `pkg/apis/core/validation/validation.go`).
fn validate_binding(binding: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let kind = binding.at("/target/kind").and_then(Value::as_str).unwrap_or("");
    // A pod is bound to one of the document's nodes.
    let node_kind = kind_of_role(KubeRole::Node).map_or("", |r| r.kind);
    if !kind.is_empty() && kind != node_kind {
        causes.push(Cause::not_supported("target.kind", kind, &[node_kind, "<empty>"]));
    }
    if binding.at("/target/name").and_then(Value::as_str).unwrap_or("").is_empty() {
        causes.push(Cause::required("target.name", ""));
    }
    causes
}

/// `field.ErrorList.ToAggregate().Error()`: one error alone, several in brackets.
fn aggregate(causes: &[Cause]) -> String {
    let errs: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
    match errs.as_slice() {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// The storage layer's preconditions from the Binding's metadata (K8S
/// `staging/src/k8s.io/apiserver/pkg/storage/interfaces.go` Preconditions.Check), whose
/// InvalidObjError `storeerr.InterpretUpdateError` turns into a Conflict on the kind, naming
/// kube's etcd key (`/registry/<resource>/<namespace>/<name>`).
fn check_storage_preconditions(
    res: &ResourceInfo,
    target: &Target,
    current: &Value,
    uid: &str,
    rv: &str,
) -> Result<(), ApiError> {
    let failed = |what: &str, wanted: &str, have: &str| {
        let key = format!("/registry/{}/{}/{}", res.plural, target.ns(), target.name());
        ApiError::Conflict {
            group: res.group.into(),
            plural: res.plural.into(),
            name: target.name().into(),
            message: format!(
                "Operation cannot be fulfilled on {} {:?}: StorageError: invalid object, Code: 4, \
                 Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: {what} \
                 in precondition: {wanted}, {what} in object meta: {have}",
                res.group_resource(),
                target.name()
            ),
        }
    };
    let have_uid = meta_str(current, "uid");
    if !uid.is_empty() && uid != have_uid {
        return Err(failed("UID", uid, have_uid));
    }
    let have_rv = meta_str(current, "resourceVersion");
    if !rv.is_empty() && rv != have_rv {
        return Err(failed("ResourceVersion", rv, have_rv));
    }
    Ok(())
}

/// setPodNodeAndMetadata's update of the stored object: refused (a Conflict on
/// `<resource>/binding`, as assignPod wraps a plain error) while it is being deleted, already
/// has a node or still has scheduling gates; else its node, the Binding's annotations and
/// `PodScheduled` True.
fn assign(
    res: &ResourceInfo,
    pod: &mut Value,
    node: &str,
    annotations: Option<&Map<String, Value>>,
) -> Result<Value, ApiError> {
    let name = meta_str(pod, "name").to_string();
    let conflict = |why: String| ApiError::Conflict {
        group: res.group.into(),
        plural: format!("{}/binding", res.plural),
        name: name.clone(),
        message: format!(
            "Operation cannot be fulfilled on {}/binding {name:?}: {why}",
            res.group_resource()
        ),
    };
    if pod.at("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null()) {
        return Err(conflict(format!("pod {name} is being deleted, cannot be assigned to a host")));
    }
    let assigned = pod.at("/spec/nodeName").and_then(Value::as_str).unwrap_or("");
    if !assigned.is_empty() {
        return Err(conflict(format!("pod {name} is already assigned to node {assigned:?}")));
    }
    if pod.at("/spec/schedulingGates").and_then(Value::as_array).is_some_and(|g| !g.is_empty()) {
        return Err(conflict(format!("pod {name} has non-empty .spec.schedulingGates")));
    }
    let obj = pod.as_object_mut().ok_or_else(|| ApiError::Internal("not an object".into()))?;
    let spec = obj.entry("spec").or_insert_with(|| json!({}));
    spec["nodeName"] = Value::String(node.into());
    if let Some(extra) = annotations.filter(|a| !a.is_empty()) {
        let meta = obj.entry("metadata").or_insert_with(|| json!({}));
        let mine = meta
            .as_object_mut()
            .ok_or_else(|| ApiError::Internal("metadata is not an object".into()))?
            .entry("annotations")
            .or_insert_with(|| json!({}));
        if let Some(mine) = mine.as_object_mut() {
            for (k, v) in extra {
                mine.insert(k.clone(), v.clone());
            }
        }
    }
    update_condition(pod, "PodScheduled", "True", "", "");
    Ok(std::mem::take(pod))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_condition_keeps_its_transition_time_while_its_status_holds() {
        let mut pod = json!({"status": {"conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
             "message": "0/1 nodes are available", "lastTransitionTime": "2020-01-01T00:00:00Z"},
        ]}});
        update_condition(&mut pod, "PodScheduled", "False", "", "");
        let c = &pod["status"]["conditions"][0];
        assert_eq!(c["lastTransitionTime"], "2020-01-01T00:00:00Z");
        // Replaced whole: the old reason and message are gone.
        assert!(c.get("reason").is_none() && c.get("message").is_none());
        update_condition(&mut pod, "PodScheduled", "True", "", "");
        let c = &pod["status"]["conditions"][0];
        assert_ne!(c["lastTransitionTime"], "2020-01-01T00:00:00Z");
        assert_eq!(c["status"], "True");
        update_condition(&mut pod, "DisruptionTarget", "True", "EvictionByEvictionAPI", "m");
        assert_eq!(pod["status"]["conditions"][1]["reason"], "EvictionByEvictionAPI");
    }

    #[test]
    fn binding_validation_is_kubes_aggregate() {
        let causes = validate_binding(&json!({"target": {"kind": "Pod"}}));
        assert_eq!(
            aggregate(&causes),
            "[target.kind: Unsupported value: \"Pod\": supported values: \"Node\", \"<empty>\", \
             target.name: Required value]"
        );
        assert!(validate_binding(&json!({"target": {"name": "n1"}})).is_empty());
    }
}
