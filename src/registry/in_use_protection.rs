//! kube's StorageObjectInUseProtection admission plugin (K8S release-1.32
//! plugin/pkg/admission/storage/storageobjectinuseprotection/admission.go): a new claim gets
//! the `kubernetes.io/pvc-protection` finalizer and a new volume `kubernetes.io/pv-protection`
//! (pkg/volume/util/finalizer.go), appended when absent, on create only. The kinds are those
//! whose `x-virt-resource.kubeRole` is a claim or a volume; kube's pvcprotection and
//! pvprotection controllers (`controllers::protection`) remove them once deleting is safe.

use serde_json::Value;

use crate::object::error::ApiError;
use crate::object::meta::{edit_finalizers, metadata_mut};
use crate::resource::{KubeRole, ResourceInfo};

/// pkg/volume/util/finalizer.go PVCProtectionFinalizer.
pub const PVC_PROTECTION: &str = "kubernetes.io/pvc-protection";
/// pkg/volume/util/finalizer.go PVProtectionFinalizer.
pub const PV_PROTECTION: &str = "kubernetes.io/pv-protection";

/// The plugin's Admit on a create of `obj`.
pub(crate) fn protect(res: &ResourceInfo, obj: &mut Value) -> Result<(), ApiError> {
    let finalizer = match res.kube_role {
        Some(KubeRole::Claim) => PVC_PROTECTION,
        Some(KubeRole::Volume) => PV_PROTECTION,
        _ => return Ok(()),
    };
    edit_finalizers(metadata_mut(obj)?, &[finalizer.to_string()], &[]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claims_and_volumes_get_their_finalizer_once_at_the_end() {
        let claim = ResourceInfo { kube_role: Some(KubeRole::Claim), ..ResourceInfo::EXAMPLE };
        let mut obj = json!({"metadata": {"name": "c", "finalizers": ["a.io/x"]}});
        protect(&claim, &mut obj).unwrap();
        protect(&claim, &mut obj).unwrap();
        assert_eq!(obj["metadata"]["finalizers"], json!(["a.io/x", PVC_PROTECTION]));
        let volume = ResourceInfo { kube_role: Some(KubeRole::Volume), ..ResourceInfo::EXAMPLE };
        let mut obj = json!({"metadata": {"name": "v"}});
        protect(&volume, &mut obj).unwrap();
        assert_eq!(obj["metadata"]["finalizers"], json!([PV_PROTECTION]));
        let mut other = json!({"metadata": {"name": "o"}});
        protect(&ResourceInfo::EXAMPLE, &mut other).unwrap();
        assert_eq!(other["metadata"].get("finalizers"), None);
    }
}
