//! kube-apiserver's own Service, `default/kubernetes` (K8S
//! pkg/controlplane/controller/kubernetesservice/controller.go,
//! `CreateOrUpdateMasterServiceIfNeeded`): the first address of the cluster IP range, port 443
//! named `https` to the port the server listens on. Made at start when the document serves a
//! kind with service addresses and it is missing. kube also resets one whose port or type
//! differs; here a restart writes nothing (a restart on another port keeps the first port),
//! and kube's Endpoints for it are not kept.

use serde_json::json;

use crate::generated::RESOURCES;
use crate::object::error::ApiError;
use crate::object::validation::{FieldValidation, Via};
use crate::registry::{Registry, Target, WriteOptions};

const NAMESPACE: &str = "default";
const NAME: &str = "kubernetes";
/// The field manager kube-apiserver's own client writes as.
const MANAGER: &str = "kube-apiserver";

/// Creates the server's own Service unless it exists; `target_port` is the port the server listens on.
pub async fn ensure(registry: &Registry, target_port: u16) -> Result<(), ApiError> {
    let stored = |r: &&crate::resource::ResourceInfo| r.service_addresses && r.is_stored();
    let Some(res) = RESOURCES.iter().filter(stored).find(|r| r.version == r.storage_version) else {
        return Ok(());
    };
    let ports =
        json!([{"name": "https", "port": 443, "protocol": "TCP", "targetPort": target_port}]);
    match registry.get(res, NAMESPACE, NAME).await {
        Ok(_) => Ok(()),
        Err(ApiError::NotFound { .. }) => {
            let ip = registry.address_ranges().cluster_ips.first().to_string();
            let svc = json!({
                "apiVersion": res.api_version(), "kind": res.kind,
                "metadata": {"name": NAME, "namespace": NAMESPACE,
                             "labels": {"provider": "kubernetes", "component": "apiserver"}},
                "spec": {"ports": ports, "clusterIP": ip, "ipFamilyPolicy": "SingleStack",
                         "sessionAffinity": "None", "type": "ClusterIP"}});
            let opts = WriteOptions {
                dry_run: false,
                field_validation: FieldValidation::Strict,
                manager: MANAGER.into(),
            };
            let target = Target::new(Some(NAMESPACE.into()), None);
            match registry.create(res, &target, svc, Via::Body(&[]), &opts).await {
                Ok(_) | Err(ApiError::AlreadyExists { .. }) => Ok(()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}
