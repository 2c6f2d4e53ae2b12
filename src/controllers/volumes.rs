//! kube-controller-manager's PersistentVolume controller, the binder (K8S release-1.32
//! pkg/controller/volume/persistentvolume/pv_controller.go; helpers in
//! staging/src/k8s.io/component-helpers/storage/volume/pv_helpers.go): claims meet volumes.
//!
//! - A claim without a volume is bound to the smallest Available volume that satisfies it
//!   (FindMatchingVolume: a volume pre-bound to it first, else its class, access modes,
//!   capacity, volume mode and selector), in bind's four writes: the volume's claimRef, the
//!   volume's phase, the claim's volumeName and annotations, the claim's status.
//! - None: under a `WaitForFirstConsumer` class and before kube-scheduler picked a node
//!   (`volume.kubernetes.io/selected-node`), the WaitForFirstConsumer event; with a class, the
//!   claim is handed to the class's external provisioner (the two storage-provisioner
//!   annotations and the ExternalProvisioning event; the simulated cluster's provisioner
//!   answers them); with none, FailedBinding.
//! - A volume without a claim is Available; one whose claim is gone is Released (a Delete
//!   volume is then its external provisioner's to delete, as in kube).
//!
//! Level-triggered like the other controllers: a change of a claim, a volume or a class marks
//! what it touches; a pass decides from the current state and writes what differs.

use std::collections::BTreeSet;

use serde_json::{json, Value};

use crate::controllers::recorder::{ObjectRef, Recorder, Severity};
use crate::generated::kind_of_role;
use crate::object::error::ApiError;
use crate::object::meta::is_deleting;
use crate::object::meta_str;
use crate::object::selector::label_selector_matches;
use crate::object::subresource::Part;
use crate::object::At;
use crate::registry::keys::collection_prefix;
use crate::registry::{ListOptions, Registry};
use crate::resource::{KubeRole, ResourceInfo};

/// The controller's field manager and event source (`persistentvolume-controller`).
const MANAGER: &str = "kube-controller-manager";
const COMPONENT: &str = "persistentvolume-controller";
/// pv_helpers.go's annotations.
const BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
const BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// Where a WaitForFirstConsumer claim is provisioned (kube-scheduler's VolumeBinding writes it;
/// K8S pkg/controller/volume/persistentvolume/util AnnSelectedNode).
pub(crate) const SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
const STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
const BETA_STORAGE_PROVISIONER: &str = "volume.beta.kubernetes.io/storage-provisioner";
const BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";

#[derive(Clone, Copy)]
struct Kinds {
    claim: &'static ResourceInfo,
    volume: &'static ResourceInfo,
    class: &'static ResourceInfo,
}

fn kinds() -> Option<Kinds> {
    let find = kind_of_role;
    Some(Kinds {
        claim: find(KubeRole::Claim)?,
        volume: find(KubeRole::Volume)?,
        class: find(KubeRole::StorageClass)?,
    })
}

/// Starts the binder on the current (single-threaded) runtime, when the document has the kinds.
pub fn spawn(registry: Registry) {
    if let Some(kinds) = kinds() {
        tokio::task::spawn_local(async move { run(registry, kinds).await });
    }
}

async fn run(registry: Registry, kinds: Kinds) {
    let prefixes: Vec<String> = [kinds.claim, kinds.volume, kinds.class]
        .iter()
        .map(|r| collection_prefix(r, None))
        .collect();
    let events = registry
        .store()
        .subscribe(move |ev| prefixes.iter().any(|p| ev.key.starts_with(p.as_str())));
    let recorder = Recorder::new(registry.clone(), MANAGER, COMPONENT, "");
    super::level_triggered(events, async || match pass(&registry, kinds, &recorder).await {
        Ok(failures) => failures == 0,
        Err(e) => {
            log::warn!("persistentvolume controller pass failed: {e}");
            false
        }
    })
    .await
}

/// One pass over every claim and volume; answers how many of their syncs failed.
async fn pass(registry: &Registry, kinds: Kinds, recorder: &Recorder) -> Result<usize, ApiError> {
    let opts = ListOptions::default();
    let claims = registry.list(kinds.claim, None, &opts).await?.objects()?;
    let volumes = registry.list(kinds.volume, None, &opts).await?.objects()?;
    let classes = registry.list(kinds.class, None, &opts).await?.objects()?;
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut failures = 0;
    for claim in &claims {
        let claim: &Value = claim;
        if is_deleting(claim) {
            continue;
        }
        if let Err(e) =
            sync_claim(registry, kinds, recorder, claim, &volumes, &classes, &mut taken).await
        {
            failures += 1;
            log::warn!(
                "persistentvolume controller: claim {}/{}: {e}",
                meta_str(claim, "namespace"),
                meta_str(claim, "name")
            );
        }
    }
    for volume in &volumes {
        if taken.contains(meta_str(volume, "name")) {
            continue;
        }
        if let Err(e) = sync_volume(registry, kinds, volume, &claims).await {
            failures += 1;
            log::warn!("persistentvolume controller: volume {}: {e}", meta_str(volume, "name"));
        }
    }
    Ok(failures)
}

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.at("/metadata/annotations")?.get(key)?.as_str()
}

/// `GetPersistentVolumeClaimClass`: the beta annotation first, else the field ("" if none).
fn claim_class(claim: &Value) -> String {
    if let Some(c) = annotation(claim, BETA_CLASS) {
        return c.to_string();
    }
    claim.at("/spec/storageClassName").and_then(Value::as_str).unwrap_or("").to_string()
}

/// `GetPersistentVolumeClass`.
fn volume_class(volume: &Value) -> String {
    if let Some(c) = annotation(volume, BETA_CLASS) {
        return c.to_string();
    }
    volume.at("/spec/storageClassName").and_then(Value::as_str).unwrap_or("").to_string()
}

fn quantity(v: Option<&Value>) -> f64 {
    v.and_then(Value::as_str).and_then(lifecycle::expr::parse_quantity).unwrap_or(0.0)
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// `IsVolumeBoundToClaim`: the volume's claimRef names the claim (its uid, if set, too).
fn bound_to(volume: &Value, claim: &Value) -> bool {
    let Some(r) = volume.at("/spec/claimRef") else { return false };
    let s = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or("");
    s("name") == meta_str(claim, "name")
        && s("namespace") == meta_str(claim, "namespace")
        && (s("uid").is_empty() || s("uid") == meta_str(claim, "uid"))
}

fn volume_mode(obj: &Value) -> &str {
    obj.at("/spec/volumeMode").and_then(Value::as_str).unwrap_or("Filesystem")
}

/// `FindMatchingVolume` for the controller (no node): a volume pre-bound to the claim first;
/// under delayed binding nothing else; else the smallest Available volume of the claim's class
/// with its access modes, capacity, volume mode and labels.
fn find_match<'v>(
    claim: &Value,
    volumes: &'v [std::sync::Arc<Value>],
    delay: bool,
    taken: &BTreeSet<String>,
) -> Option<&'v Value> {
    let requested = quantity(claim.at("/spec/resources/requests/storage"));
    let modes = strings(claim.at("/spec/accessModes"));
    let class = claim_class(claim);
    let labels_of = |v: &Value| {
        v.at("/metadata/labels").and_then(Value::as_object).cloned().unwrap_or_default()
    };
    let mut best: Option<(&Value, f64)> = None;
    for v in volumes.iter().map(|v| &**v) {
        if taken.contains(meta_str(v, "name")) {
            continue;
        }
        if v.at("/spec/claimRef").is_some_and(|r| !r.is_null()) && !bound_to(v, claim) {
            continue;
        }
        let size = quantity(v.at("/spec/capacity/storage"));
        if size < requested || volume_mode(v) != volume_mode(claim) || is_deleting(v) {
            continue;
        }
        if bound_to(v, claim) {
            return Some(v);
        }
        if delay || v.at("/status/phase").and_then(Value::as_str) != Some("Available") {
            continue;
        }
        if let Some(sel) = claim.at("/spec/selector").filter(|s| !s.is_null()) {
            if !label_selector_matches(sel, &labels_of(v)) {
                continue;
            }
        }
        if volume_class(v) != class {
            continue;
        }
        let have = strings(v.at("/spec/accessModes"));
        if !modes.iter().all(|m| have.contains(m)) {
            continue;
        }
        if best.is_none_or(|(_, s)| s > size) {
            best = Some((v, size));
        }
    }
    best.map(|(v, _)| v)
}

#[allow(clippy::too_many_arguments)]
async fn sync_claim(
    registry: &Registry,
    kinds: Kinds,
    recorder: &Recorder,
    claim: &Value,
    volumes: &[std::sync::Arc<Value>],
    classes: &[std::sync::Arc<Value>],
    taken: &mut BTreeSet<String>,
) -> Result<(), ApiError> {
    let (ns, name) = (meta_str(claim, "namespace"), meta_str(claim, "name"));
    let about = ObjectRef::to(kinds.claim, claim);
    let volume_name = claim.at("/spec/volumeName").and_then(Value::as_str).unwrap_or("");
    if annotation(claim, BIND_COMPLETED).is_some() {
        // syncBoundClaim: a bound claim whose volume went is Lost, once.
        let gone =
            volume_name.is_empty() || !volumes.iter().any(|v| meta_str(v, "name") == volume_name);
        let phase = claim.at("/status/phase").and_then(Value::as_str).unwrap_or("");
        if gone && phase != "Lost" {
            claim_status(registry, kinds, ns, name, "Lost", None).await?;
            let message = if volume_name.is_empty() {
                "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"
            } else {
                "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
            };
            recorder.record(&about, Severity::Warning, "ClaimLost", message).await?;
        } else if !gone {
            let v = volumes.iter().find(|v| meta_str(v, "name") == volume_name).expect("found");
            if bound_to(v, claim) || v.at("/spec/claimRef").is_none_or(Value::is_null) {
                taken.insert(volume_name.to_string());
                bind(registry, kinds, v, claim).await?;
            }
        }
        return Ok(());
    }
    if !volume_name.is_empty() {
        // A claim pre-bound to a volume.
        let Some(v) = volumes.iter().find(|v| meta_str(v, "name") == volume_name) else {
            return claim_status(registry, kinds, ns, name, "Pending", None).await;
        };
        if v.at("/spec/claimRef").is_none_or(Value::is_null) || bound_to(v, claim) {
            taken.insert(volume_name.to_string());
            return bind(registry, kinds, v, claim).await;
        }
        let message = format!("volume {volume_name:?} already bound to a different claim.");
        recorder.record(&about, Severity::Warning, "FailedBinding", &message).await?;
        return claim_status(registry, kinds, ns, name, "Pending", None).await;
    }
    let class_name = claim_class(claim);
    let class = classes.iter().find(|c| meta_str(c, "name") == class_name);
    let delay = class.and_then(|c| c.get("volumeBindingMode")).and_then(Value::as_str)
        == Some("WaitForFirstConsumer");
    if let Some(v) = find_match(claim, volumes, delay, taken) {
        taken.insert(meta_str(v, "name").to_string());
        return bind(registry, kinds, v, claim).await;
    }
    if delay && annotation(claim, SELECTED_NODE).is_none() {
        let message = "waiting for first consumer to be created before binding";
        recorder.record(&about, Severity::Normal, "WaitForFirstConsumer", message).await?;
    } else if !class_name.is_empty() {
        // provisionClaim: an unknown class or in-tree name fails; another is external.
        let Some(class) = class else {
            let message = format!("storageclass.storage.k8s.io {class_name:?} not found");
            return recorder
                .record(&about, Severity::Warning, "ProvisioningFailed", &message)
                .await;
        };
        let provisioner = class.get("provisioner").and_then(Value::as_str).unwrap_or("");
        if provisioner == NO_PROVISIONER || provisioner.starts_with("kubernetes.io/") {
            let message = format!("no volume plugin matched name: {provisioner}");
            return recorder
                .record(&about, Severity::Warning, "ProvisioningFailed", &message)
                .await;
        }
        if annotation(claim, STORAGE_PROVISIONER) != Some(provisioner) {
            let edit = |c: &mut Value| -> Option<()> {
                let meta = c.get_mut("metadata")?.as_object_mut()?;
                let ann = meta.entry("annotations").or_insert_with(|| json!({})).as_object_mut()?;
                ann.insert(BETA_STORAGE_PROVISIONER.into(), json!(provisioner));
                ann.insert(STORAGE_PROVISIONER.into(), json!(provisioner));
                Some(())
            };
            registry.update_with(kinds.claim, (ns, name, Part::Main), MANAGER, edit).await?;
        }
        let message = format!(
            "Waiting for a volume to be created either by the external provisioner '{provisioner}' or manually by the system administrator. If volume creation is delayed, please verify that the provisioner is running and correctly registered."
        );
        return recorder.record(&about, Severity::Normal, "ExternalProvisioning", &message).await;
    } else {
        let message = "no persistent volumes available for this claim and no storage class is set";
        recorder.record(&about, Severity::Normal, "FailedBinding", message).await?;
    }
    claim_status(registry, kinds, ns, name, "Pending", None).await
}

/// updateClaimStatus: the phase, and the volume's access modes and capacity (capacity only
/// as the phase changes); none of them without a volume.
async fn claim_status(
    registry: &Registry,
    kinds: Kinds,
    ns: &str,
    name: &str,
    phase: &str,
    volume: Option<&Value>,
) -> Result<(), ApiError> {
    let edit = |c: &mut Value| -> Option<()> {
        let old_phase = c.at("/status/phase").and_then(Value::as_str).unwrap_or("").to_string();
        let status =
            c.as_object_mut()?.entry("status").or_insert_with(|| json!({})).as_object_mut()?;
        let before = Value::Object(status.clone());
        status.insert("phase".into(), json!(phase));
        match volume {
            None => {
                status.remove("accessModes");
                status.remove("capacity");
            }
            Some(v) => {
                if let Some(m) = v.at("/spec/accessModes") {
                    status.insert("accessModes".into(), m.clone());
                }
                if old_phase != phase {
                    if let Some(cap) = v.at("/spec/capacity") {
                        status.insert("capacity".into(), cap.clone());
                    }
                }
            }
        }
        (Value::Object(status.clone()) != before).then_some(())
    };
    ignore_gone(registry.update_with(kinds.claim, (ns, name, Part::Status), MANAGER, edit).await)
}

fn ignore_gone<T>(r: Result<T, ApiError>) -> Result<(), ApiError> {
    match r {
        Ok(_) | Err(ApiError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The volume's phase through its status (updateVolumePhase: the message cleared).
async fn volume_phase(
    registry: &Registry,
    kinds: Kinds,
    name: &str,
    phase: &str,
) -> Result<(), ApiError> {
    let edit = |v: &mut Value| -> Option<()> {
        let status =
            v.as_object_mut()?.entry("status").or_insert_with(|| json!({})).as_object_mut()?;
        if status.get("phase").and_then(Value::as_str) == Some(phase) {
            return None;
        }
        status.insert("phase".into(), json!(phase));
        status.remove("message");
        Some(())
    };
    ignore_gone(registry.update_with(kinds.volume, ("", name, Part::Status), MANAGER, edit).await)
}

/// bind: the volume's claimRef (and bound-by-controller when the controller chose it), its
/// phase, the claim's volume name and annotations, the claim's status; each only if it differs.
async fn bind(
    registry: &Registry,
    kinds: Kinds,
    volume: &Value,
    claim: &Value,
) -> Result<(), ApiError> {
    let (ns, name, uid) =
        (meta_str(claim, "namespace"), meta_str(claim, "name"), meta_str(claim, "uid"));
    let vname = meta_str(volume, "name").to_string();
    let claim_ref = json!({"kind": kinds.claim.kind, "namespace": ns, "name": name, "uid": uid,
                           "apiVersion": kinds.claim.api_version(),
                           "resourceVersion": meta_str(claim, "resourceVersion")});
    let prebound = bound_to(volume, claim);
    let edit = |v: &mut Value| -> Option<()> {
        let r = v.at("/spec/claimRef");
        let same = r.is_some_and(|r| {
            r.get("name").and_then(Value::as_str) == Some(name)
                && r.get("namespace").and_then(Value::as_str) == Some(ns)
                && r.get("uid").and_then(Value::as_str) == Some(uid)
        });
        if same {
            return None;
        }
        v.get_mut("spec")?.as_object_mut()?.insert("claimRef".into(), claim_ref.clone());
        if !prebound {
            let meta = v.get_mut("metadata")?.as_object_mut()?;
            let ann = meta.entry("annotations").or_insert_with(|| json!({})).as_object_mut()?;
            ann.insert(BOUND_BY_CONTROLLER.into(), json!("yes"));
        }
        Some(())
    };
    registry.update_with(kinds.volume, ("", &vname, Part::Main), MANAGER, edit).await?;
    volume_phase(registry, kinds, &vname, "Bound").await?;
    let edit = |c: &mut Value| -> Option<()> {
        let chose = c.at("/spec/volumeName").and_then(Value::as_str) != Some(vname.as_str());
        let done = annotation(c, BIND_COMPLETED).is_some();
        if !chose && done {
            return None;
        }
        if chose {
            c.get_mut("spec")?.as_object_mut()?.insert("volumeName".into(), json!(vname));
        }
        let meta = c.get_mut("metadata")?.as_object_mut()?;
        let ann = meta.entry("annotations").or_insert_with(|| json!({})).as_object_mut()?;
        if chose {
            ann.entry(BOUND_BY_CONTROLLER).or_insert(json!("yes"));
        }
        ann.insert(BIND_COMPLETED.into(), json!("yes"));
        Some(())
    };
    registry.update_with(kinds.claim, (ns, name, Part::Main), MANAGER, edit).await?;
    claim_status(registry, kinds, ns, name, "Bound", Some(volume)).await
}

/// syncVolume: Available without a claim; Bound to its claim; Released once the claim is gone.
async fn sync_volume(
    registry: &Registry,
    kinds: Kinds,
    volume: &Value,
    claims: &[std::sync::Arc<Value>],
) -> Result<(), ApiError> {
    let name = meta_str(volume, "name");
    let phase = volume.at("/status/phase").and_then(Value::as_str).unwrap_or("");
    let Some(r) = volume.at("/spec/claimRef").filter(|r| !r.is_null()) else {
        return volume_phase(registry, kinds, name, "Available").await;
    };
    let s = |f: &str| r.get(f).and_then(Value::as_str).unwrap_or("");
    if s("uid").is_empty() {
        return volume_phase(registry, kinds, name, "Available").await;
    }
    let claim = claims.iter().find(|c| {
        meta_str(c, "namespace") == s("namespace")
            && meta_str(c, "name") == s("name")
            && meta_str(c, "uid") == s("uid")
    });
    match claim {
        None => {
            if phase != "Released" && phase != "Failed" {
                volume_phase(registry, kinds, name, "Released").await?;
            }
            Ok(())
        }
        Some(c) if c.at("/spec/volumeName").and_then(Value::as_str) == Some(name) => {
            volume_phase(registry, kinds, name, "Bound").await
        }
        // The claim is still to be bound (its sync does it), or bound elsewhere.
        Some(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn volume(name: &str, size: &str, class: &str, modes: Value) -> Arc<Value> {
        Arc::new(json!({"metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": modes, "storageClassName": class},
            "status": {"phase": "Available"}}))
    }

    fn claim(size: &str, class: &str) -> Value {
        json!({"metadata": {"name": "c", "namespace": "ns", "uid": "u1"},
               "spec": {"resources": {"requests": {"storage": size}}, "accessModes": ["ReadWriteOnce"],
                        "storageClassName": class}})
    }

    #[test]
    fn the_smallest_available_volume_of_the_class_that_fits_is_chosen() {
        let vs = vec![
            volume("big", "10Gi", "local", json!(["ReadWriteOnce"])),
            volume("small", "2Gi", "local", json!(["ReadWriteOnce"])),
            volume("tiny", "500Mi", "local", json!(["ReadWriteOnce"])),
            volume("other", "2Gi", "fast", json!(["ReadWriteOnce"])),
            volume("ro", "2Gi", "local", json!(["ReadOnlyMany"])),
        ];
        let none = BTreeSet::new();
        let got =
            find_match(&claim("1Gi", "local"), &vs, false, &none).map(|v| meta_str(v, "name"));
        assert_eq!(got, Some("small"));
        // Delayed binding: only a volume pre-bound to the claim.
        assert!(find_match(&claim("1Gi", "local"), &vs, true, &none).is_none());
        let mut prebound = (*volume("pre", "1Gi", "", json!(["ReadWriteOnce"]))).clone();
        prebound["spec"]["claimRef"] = json!({"name": "c", "namespace": "ns"});
        prebound["status"]["phase"] = json!("Available");
        let vs = vec![Arc::new(prebound)];
        let got = find_match(&claim("1Gi", "local"), &vs, true, &none).map(|v| meta_str(v, "name"));
        assert_eq!(got, Some("pre"));
    }
}
