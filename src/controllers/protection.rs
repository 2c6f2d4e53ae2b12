//! kube-controller-manager's pvc-protection and pv-protection controllers (K8S release-1.32
//! pkg/controller/volume/pvcprotection/pvc_protection_controller.go,
//! pkg/controller/volume/pvprotection/pv_protection_controller.go): a deleting claim loses
//! `kubernetes.io/pvc-protection` once no pod that is not terminated (phase Succeeded or Failed)
//! names it in a `persistentVolumeClaim` volume; a deleting volume loses
//! `kubernetes.io/pv-protection` once it is not Bound. Level-triggered: a change of a claim, a
//! volume or a pod asks for a pass over the deleting ones.

use serde_json::Value;

use crate::generated::kind_of_role;
use crate::object::error::ApiError;
use crate::object::meta::{edit_finalizers, is_deleting, object_finalizers};
use crate::object::meta_str;
use crate::object::subresource::Part;
use crate::object::At;
use crate::registry::in_use_protection::{PVC_PROTECTION, PV_PROTECTION};
use crate::registry::keys::collection_prefix;
use crate::registry::{ListOptions, Registry};
use crate::resource::{KubeRole, ResourceInfo};

/// The controllers' field manager.
const MANAGER: &str = "kube-controller-manager";

#[derive(Clone, Copy)]
struct Kinds {
    claim: &'static ResourceInfo,
    volume: &'static ResourceInfo,
    pod: &'static ResourceInfo,
}

/// Starts both controllers on the current (single-threaded) runtime, when the document has
/// the kinds.
pub fn spawn(registry: Registry) {
    let find = kind_of_role;
    let Some(kinds) = (|| {
        Some(Kinds {
            claim: find(KubeRole::Claim)?,
            volume: find(KubeRole::Volume)?,
            pod: find(KubeRole::Pod)?,
        })
    })() else {
        return;
    };
    tokio::task::spawn_local(async move {
        let prefixes: Vec<String> = [kinds.claim, kinds.volume, kinds.pod]
            .iter()
            .map(|r| collection_prefix(r, None))
            .collect();
        let events = registry
            .store()
            .subscribe(move |ev| prefixes.iter().any(|p| ev.key.starts_with(p.as_str())));
        super::level_triggered(events, async || match pass(&registry, kinds).await {
            Ok(()) => true,
            Err(e) => {
                log::warn!("pvc/pv-protection controller pass failed: {e}");
                false
            }
        })
        .await
    });
}

/// Whether `pod` holds `claim` (its namespace's): scheduled (the kubelet sees no other),
/// not terminated, naming it in a volume (pvc_protection_controller.go podUsesPVC).
fn uses(pod: &Value, ns: &str, claim: &str) -> bool {
    let phase = pod.at("/status/phase").and_then(Value::as_str);
    let scheduled = pod.at("/spec/nodeName").and_then(Value::as_str).is_some_and(|n| !n.is_empty());
    if meta_str(pod, "namespace") != ns
        || !scheduled
        || matches!(phase, Some("Succeeded" | "Failed"))
    {
        return false;
    }
    let volumes = pod.at("/spec/volumes").and_then(Value::as_array);
    volumes
        .into_iter()
        .flatten()
        .any(|v| v.at("/persistentVolumeClaim/claimName").and_then(Value::as_str) == Some(claim))
}

async fn pass(registry: &Registry, kinds: Kinds) -> Result<(), ApiError> {
    let opts = ListOptions::default();
    let held = |o: &Value, f: &str| is_deleting(o) && object_finalizers(o).iter().any(|x| x == f);
    let claims = registry.list(kinds.claim, None, &opts).await?.objects()?;
    let deleting: Vec<&Value> =
        claims.iter().map(|c| &**c).filter(|c| held(c, PVC_PROTECTION)).collect();
    if !deleting.is_empty() {
        let pods = registry.list(kinds.pod, None, &opts).await?.objects()?;
        for claim in deleting {
            let (ns, name) = (meta_str(claim, "namespace"), meta_str(claim, "name"));
            if pods.iter().any(|p| uses(p, ns, name)) {
                continue;
            }
            release(registry, kinds.claim, ns, name, PVC_PROTECTION).await?;
        }
    }
    let volumes = registry.list(kinds.volume, None, &opts).await?.objects()?;
    for volume in volumes.iter().map(|v| &**v).filter(|v| held(v, PV_PROTECTION)) {
        // pv_protection_controller.go isBeingUsed: a Bound volume is in use.
        if volume.at("/status/phase").and_then(Value::as_str) == Some("Bound") {
            continue;
        }
        release(registry, kinds.volume, "", meta_str(volume, "name"), PV_PROTECTION).await?;
    }
    Ok(())
}

/// removeFinalizer: the object's finalizer removed (a gone object is fine).
async fn release(
    registry: &Registry,
    res: &'static ResourceInfo,
    ns: &str,
    name: &str,
    finalizer: &str,
) -> Result<(), ApiError> {
    let remove = [finalizer.to_string()];
    let edit = |o: &mut Value| -> Option<()> {
        let meta = o.get_mut("metadata")?.as_object_mut()?;
        edit_finalizers(meta, &[], &remove).then_some(())
    };
    match registry.update_with(res, (ns, name, Part::Main), MANAGER, edit).await {
        Ok(_) | Err(ApiError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}
