//! KubeVirt's and CDI's behaviour, above kube's generic registry: what virt-api, virt-controller,
//! virt-handler and CDI's controllers do to the objects the registry stores. The behaviour is
//! data where data reads well (`openapi/lifecycles.yaml` and `actions.yaml`, format in the `lifecycle` crate) and
//! Rust here where it does not; it reaches the registry only as a client does (the verbs) and
//! through the admission it hands in.
//!
//! - `webhooks`: virt-api's admission webhooks (mutations on create, warnings), always served;
//! - `actions`: virt-api's action API (`subresources.kubevirt.io`: start, stop, migrate…),
//!   always served;
//! - `related`: the objects a kind relates to, found forward (from an object, for a stage or an
//!   action) and in reverse (from a changed object, the objects relating to it);
//! - `launcher_logs`: what the simulated containers write to their logs (the lifecycles'
//!   `logs`), the registry's log source under `--simulate`;
//! - `simulate`: KubeVirt's controllers under `--simulate`: the lifecycles' stages;
//! - `guest`: the simulated guests of running VMIs (serial console, login, shell, in-guest
//!   power), reached through the actions' streams and agent reads;
//! - `write`: the one executor of both's writes, and `procedures`, the patches a write `call`s
//!   (virt-api's that are programs over the object's shape).

pub mod actions;
pub mod guest;
pub mod launcher_logs;
mod procedures;
pub mod related;
mod reverse;
pub mod simulate;
pub mod validations;
pub mod webhooks;
pub mod write;

use std::sync::{Arc, OnceLock};

use lifecycle::Lifecycles;
use serde_json::Value;

use crate::generated::{ACTIONS, LIFECYCLES, OPENAPI_V2, RESOURCES};
use crate::registry::Registry;

/// The behaviour a server runs: the lifecycle file's program (the built-in one, or with
/// `--simulate-config` on top) and whether its controllers run (`--simulate`).
#[derive(Debug, Clone)]
pub struct Behaviour {
    pub program: Arc<Lifecycles>,
    /// Only the controllers remove the finalizers virt-api's webhooks add, so without them
    /// none is added (a delete would wait forever).
    pub controllers: bool,
    /// `--simulate-seed`: the guests' draws repeat with it.
    pub seed: u64,
}

impl Behaviour {
    /// virt-api alone: webhooks and actions from the built-in file, no controllers.
    pub fn builtin() -> Behaviour {
        Behaviour { program: builtin(), controllers: false, seed: 0 }
    }

    /// virt-api and KubeVirt's controllers over `program` (checked: `load`).
    pub fn simulated(program: Lifecycles, seed: u64) -> Behaviour {
        Behaviour { program: Arc::new(program), controllers: true, seed }
    }

    /// `registry` with virt-api's webhooks in its admission.
    pub fn admitting(&self, registry: Registry) -> Registry {
        let webhooks =
            webhooks::Webhooks::new(self.program.clone(), self.controllers, registry.clone());
        registry.with_admission(Arc::new(webhooks))
    }

    /// `registry` with the simulated containers' logs as its log source, while the controllers
    /// run (without them no container runs: every log stays empty).
    pub fn logging(&self, registry: Registry) -> Registry {
        match self.controllers {
            true => {
                let source =
                    launcher_logs::LauncherLogs::new(registry.clone(), self.program.clone());
                registry.with_log_source(Arc::new(source))
            }
            false => registry,
        }
    }

    /// virt-api's action API over `registry`.
    pub fn actions(&self, registry: Registry) -> actions::Actions {
        actions::Actions::new(registry, self.program.clone(), guest::Guests::new(self.seed))
    }
}

/// The built-in program, compiled once (build.rs checked it).
fn builtin() -> Arc<Lifecycles> {
    static LC: OnceLock<Arc<Lifecycles>> = OnceLock::new();
    LC.get_or_init(|| Arc::new(parse_builtin().expect("build.rs checked the built-in files")))
        .clone()
}

/// The controllers' lifecycles and virt-api's actions, one program.
fn parse_builtin() -> Result<Lifecycles, String> {
    Ok(lifecycle::parse(LIFECYCLES)?.merged(lifecycle::parse(ACTIONS)?))
}

/// The built-in lifecycles with `extra` (a `--simulate-config` file's text) on top, checked
/// against the served document: every problem, one per entry.
pub fn load(extra: Option<&str>) -> Result<Lifecycles, Vec<String>> {
    let builtin = parse_builtin().map_err(|e| vec![e])?;
    let lc = match extra {
        Some(text) => builtin.merged(lifecycle::parse(text).map_err(|e| vec![e])?),
        None => builtin,
    };
    let doc: Value = serde_json::from_slice(OPENAPI_V2).map_err(|e| vec![e.to_string()])?;
    // The versions this server stores.
    let stored: Vec<(String, String, String)> = RESOURCES
        .iter()
        .filter(|r| r.version == r.storage_version)
        .map(|r| (r.group.to_string(), r.kind.to_string(), r.version.to_string()))
        .collect();
    lifecycle::check::check(&doc, &stored, &lc)?;
    Ok(lc)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::object::error::ApiError;
    use crate::object::validation::{FieldValidation, Via};
    use crate::registry::{Registry, Target, WriteOptions};
    use crate::resource::ResourceInfo;
    use crate::store::{Store, StoreConfig};

    /// virt-api's eviction admitter, without the controllers: a LiveMigrate VMI's launcher is
    /// refused with the webhook's 429 and its VMI marked (a dry run marks nothing), then refused
    /// as being evacuated; a launcher whose VMI has no strategy is evicted (kube deletes it,
    /// gracefully).
    #[tokio::test(flavor = "multi_thread")]
    async fn the_eviction_admitter_marks_a_live_migrate_vmi_and_passes_a_plain_one() {
        let stored = |plural: &'static str| {
            move |r: &&ResourceInfo| r.plural == plural && r.version == r.storage_version
        };
        let pods = crate::generated::RESOURCES.iter().find(stored("pods")).unwrap();
        let vmis =
            crate::generated::RESOURCES.iter().find(stored("virtualmachineinstances")).unwrap();
        let store = Store::open(StoreConfig::new(crate::store::sqlite::MEMORY)).unwrap();
        let r = Behaviour::builtin().admitting(Registry::new(store));
        r.ensure_namespaces().await.unwrap();
        let opts = WriteOptions {
            dry_run: false,
            field_validation: FieldValidation::Strict,
            manager: "test".into(),
        };
        let target = |name: &str| Target::new(Some("default".into()), Some(name.into()));
        let all = Target::new(Some("default".into()), None);
        for (name, strategy) in [("live", json!("LiveMigrate")), ("plain", Value::Null)] {
            let vmi = json!({"apiVersion": vmis.api_version(), "kind": vmis.kind,
                "metadata": {"name": name},
                "spec": {"domain": {"devices": {}}, "evictionStrategy": strategy},
                "status": {"phase": "Running", "nodeName": "n1",
                           "conditions": [{"type": "LiveMigratable", "status": "True"}]}});
            r.create(vmis, &all, vmi, Via::Body(&[]), &opts).await.unwrap();
            let pod = json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("virt-launcher-{name}"),
                             "labels": {"kubevirt.io": "virt-launcher"},
                             "annotations": {"kubevirt.io/domain": name}},
                "spec": {"nodeName": "n1", "containers": [{"name": "compute", "image": "i"}]}});
            r.create(pods, &all, pod, Via::Body(&[]), &opts).await.unwrap();
        }
        let evict = |pod: &'static str, dry_run: bool| {
            let r = r.clone();
            async move {
                let eviction = json!({"metadata": {"name": pod, "namespace": "default"}});
                let parse = |_: &[u8]| Ok(crate::registry::DeleteOptions::default());
                let dry_run = if dry_run { vec!["All".to_string()] } else { Vec::new() };
                r.evict(pods, &target(pod), &eviction, &dry_run, parse).await
            }
        };
        let message = |e: ApiError| e.to_status().message.unwrap_or_default();
        let denied = "admission webhook \"virt-launcher-eviction-interceptor.kubevirt.io\" \
                      denied the request: ";
        let e = evict("virt-launcher-live", true).await.unwrap_err();
        assert_eq!(
            message(e),
            format!("{denied}Eviction triggered evacuation of VMI \"default/live\"")
        );
        let vmi = r.get(vmis, "default", "live").await.unwrap();
        assert!(vmi["status"].get("evacuationNodeName").is_none());
        let e = evict("virt-launcher-live", false).await.unwrap_err();
        assert_eq!(e.to_status().code, Some(429));
        let vmi = r.get(vmis, "default", "live").await.unwrap();
        assert_eq!(vmi["status"]["evacuationNodeName"], "n1");
        assert_eq!(managers_of(&vmi), ["test", "virt-api"]);
        let e = evict("virt-launcher-live", false).await.unwrap_err();
        assert_eq!(
            message(e),
            format!("{denied}Evacuation in progress: Eviction triggered evacuation of VMI \"default/live\"")
        );
        evict("virt-launcher-plain", false).await.unwrap();
        // The eviction deletes the bound pod gracefully (its default 30 s); no kubelet runs
        // here to end it, so it stays terminating (K8S pkg/registry/core/pod/strategy.go).
        let evicted = r.get(pods, "default", "virt-launcher-plain").await.unwrap();
        assert_eq!(evicted["metadata"]["deletionGracePeriodSeconds"], 30);
        assert!(r.get(pods, "default", "virt-launcher-live").await.is_ok());
    }

    fn managers_of(obj: &Value) -> Vec<&str> {
        let entries = obj["metadata"]["managedFields"].as_array().unwrap();
        entries.iter().filter_map(|m| m["manager"].as_str()).collect()
    }

    /// The label always; the controller's finalizer only while the controllers run to remove it.
    #[tokio::test]
    async fn a_migration_is_mutated_on_create_as_virt_api_does() {
        let stored = |r: &&ResourceInfo| {
            r.plural == "virtualmachineinstancemigrations" && r.version == r.storage_version
        };
        let vmims = crate::generated::RESOURCES.iter().find(stored).unwrap();
        let body = json!({"apiVersion": vmims.api_version(), "kind": vmims.kind,
                          "metadata": {"name": "m"}, "spec": {"vmiName": "vm1"}});
        for controllers in [false, true] {
            let store = Store::open(StoreConfig::new(crate::store::sqlite::MEMORY)).unwrap();
            let behaviour = Behaviour { controllers, ..Behaviour::builtin() };
            let r = behaviour.admitting(Registry::new(store));
            r.ensure_namespaces().await.unwrap();
            let opts = WriteOptions {
                dry_run: false,
                field_validation: FieldValidation::Strict,
                manager: "test".into(),
            };
            let target = Target::new(Some("default".into()), None);
            let out = r.create(vmims, &target, body.clone(), Via::Body(&[]), &opts).await.unwrap();
            let meta = &out.object.value()["metadata"];
            assert_eq!(meta["labels"], json!({"kubevirt.io/vmi-name": "vm1"}));
            let want = controllers.then(|| json!(["kubevirt.io/migrationJobFinalize"]));
            assert_eq!(meta.get("finalizers"), want.as_ref(), "controllers: {controllers}");
        }
    }
}
