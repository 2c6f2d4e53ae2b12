//! Namespaces as kube-apiserver keeps them, for the kind the document marks as the namespaces
//! (`x-virt-resource.namespaces`, kube's core/v1 Namespace): its `NamespaceLifecycle` admission
//! (a new namespaced object needs its namespace to exist and not be terminating; the system
//! namespaces cannot be deleted), its namespace strategy's create rules, its deletion rules,
//! and the namespaces that exist from the first start (and those a database written before the
//! document served Namespaces has objects in). A server started with `--implicit-namespaces`, or a document
//! without such a kind, checks none of this.

use std::collections::BTreeSet;
use std::sync::OnceLock;

use serde_json::{json, Map, Value};

use super::{Registry, Target, WriteOptions};
use crate::generated::RESOURCES;
use crate::object::error::{ApiError, Cause};
use crate::object::meta_str;
use crate::object::validation::{FieldValidation, Via};
use crate::object::At;
use crate::registry::keys::{collection_prefix, object_key, split};
use crate::resource::ResourceInfo;
use crate::store::ListRequest;

/// The namespaces kube-apiserver makes at start-up (its `system` namespaces and `default`).
pub const DEFAULT_NAMESPACES: [&str; 4] =
    ["default", "kube-system", "kube-public", "kube-node-lease"];
/// The namespaces `NamespaceLifecycle` refuses to delete.
const PROTECTED: [&str; 3] = ["default", "kube-system", "kube-public"];
/// The finalizer in `spec.finalizers` that the namespace controller removes once it has emptied
/// a terminating namespace.
const FINALIZER: &str = "kubernetes";
/// The label every namespace carries with its own name (kube ≥ 1.21).
const NAME_LABEL: &str = "kubernetes.io/metadata.name";
/// Who creates the default namespaces (the managedFields entry kube-apiserver writes).
const MANAGER: &str = "kube-apiserver";

/// The namespaces' kind in its storage version, if the document has one.
pub fn namespace_kind() -> Option<&'static ResourceInfo> {
    // Looked up on every create: found once.
    static KIND: OnceLock<Option<&'static ResourceInfo>> = OnceLock::new();
    *KIND.get_or_init(|| RESOURCES.iter().find(|r| r.namespaces && r.version == r.storage_version))
}

fn terminating(ns: &Value) -> bool {
    crate::object::meta::is_deleting(ns)
        || ns.at("/status/phase").and_then(Value::as_str) == Some("Terminating")
}

impl Registry {
    /// The namespaces' kind when namespaces are checked: the document has one and the server
    /// was not started with `--implicit-namespaces`.
    fn checked_namespaces(&self) -> Option<&'static ResourceInfo> {
        namespace_kind().filter(|_| !self.implicit_namespaces)
    }

    /// Whether the namespace lifecycle runs (see `checked_namespaces`).
    pub(crate) fn checks_namespaces(&self) -> bool {
        self.checked_namespaces().is_some()
    }

    /// `NamespaceLifecycle` for a new object `name` of `res` in `namespace`: 404 when the
    /// namespace does not exist, 403 while it is being terminated.
    pub(crate) async fn admit_in_namespace(
        &self,
        res: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        let Some(ns_kind) = self.checked_namespaces().filter(|_| res.namespaced) else {
            return Ok(());
        };
        let key = object_key(ns_kind, "", namespace);
        let mut ns = self.store.get(&key).await?;
        if ns.as_deref().is_none_or(terminating) && self.store.facts().external_commits {
            // Made or changed on another replica, perhaps, and not heard of here yet.
            self.consistent().await?;
            ns = self.store.get(&key).await?;
        }
        match ns {
            None => Err(ApiError::not_found(ns_kind, namespace)),
            Some(ns) if terminating(&ns) => Err(ApiError::forbidden(
                res,
                name,
                &format!(
                    "unable to create new content in namespace {namespace} because it is being terminated"
                ),
                vec![Cause {
                    reason: "NamespaceTerminating",
                    message: format!("namespace {namespace} is being terminated"),
                    field: "metadata.namespace".into(),
                }],
            )),
            Some(_) => Ok(()),
        }
    }

    /// `NamespaceLifecycle` for a delete: the system namespaces stay.
    pub(crate) fn admit_delete(&self, res: &ResourceInfo, name: &str) -> Result<(), ApiError> {
        if res.namespaces && self.checked_namespaces().is_some() && PROTECTED.contains(&name) {
            return Err(ApiError::forbidden(
                res,
                name,
                "this namespace may not be deleted",
                vec![],
            ));
        }
        Ok(())
    }

    /// Creates the namespaces that must exist and do not yet: the default ones, as
    /// kube-apiserver does at start-up, and every namespace objects already live in (a
    /// database written before the document served Namespaces), so none is orphaned.
    pub async fn ensure_namespaces(&self) -> Result<(), ApiError> {
        let Some(ns_kind) = self.checked_namespaces() else { return Ok(()) };
        let opts = WriteOptions {
            dry_run: false,
            field_validation: FieldValidation::Strict,
            manager: MANAGER.into(),
        };
        let mut names: BTreeSet<String> =
            DEFAULT_NAMESPACES.iter().map(|n| n.to_string()).collect();
        let namespaced = RESOURCES.iter().filter(|r| r.namespaced && r.is_stored());
        for res in namespaced.filter(|r| r.version == r.storage_version) {
            let all =
                ListRequest { prefix: collection_prefix(res, None), ..ListRequest::default() };
            for (key, _) in self.store.list_raw(all).await?.items {
                if let Some((_, _, ns, _)) = split(&key) {
                    names.insert(ns.to_string());
                }
            }
        }
        for name in &names {
            if self.store.get(&object_key(ns_kind, "", name)).await?.is_some() {
                continue;
            }
            let obj = json!({"apiVersion": ns_kind.api_version(), "kind": ns_kind.kind,
                             "metadata": {"name": name}});
            match self.create(ns_kind, &Target::default(), obj, Via::Body(&[]), &opts).await {
                Ok(_) | Err(ApiError::AlreadyExists { .. }) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Whether a namespace's own finalizers (`spec.finalizers`) still hold it.
pub(crate) fn held(ns: &Value) -> bool {
    ns.at("/spec/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty())
}

/// What the first delete of a namespace does besides the deletion timestamp: it terminates.
pub(crate) fn start_terminating(ns: &mut Value) {
    if let Some(root) = ns.as_object_mut() {
        let status = root.entry("status").or_insert_with(|| Value::Object(Map::new()));
        if let Some(status) = status.as_object_mut() {
            status.insert("phase".into(), Value::String("Terminating".into()));
        }
    }
}

/// The namespace strategy's `PrepareForCreate`: a new namespace is `Active`, carries the
/// `kubernetes` finalizer in `spec.finalizers`, and is labelled with its name.
pub(crate) fn prepare_namespace(obj: &mut Value) {
    let name = meta_str(obj, "name").to_string();
    let Some(root) = obj.as_object_mut() else { return };
    root.insert("status".into(), json!({"phase": "Active"}));
    let spec = root.entry("spec").or_insert_with(|| Value::Object(Map::new()));
    if let Some(spec) = spec.as_object_mut() {
        let finalizers = spec.entry("finalizers").or_insert_with(|| json!([]));
        if let Some(list) = finalizers.as_array_mut() {
            if !list.iter().any(|f| f == FINALIZER) {
                list.push(json!(FINALIZER));
            }
        }
    }
    let meta = root.entry("metadata").or_insert_with(|| Value::Object(Map::new()));
    if let Some(meta) = meta.as_object_mut() {
        let labels = meta.entry("labels").or_insert_with(|| Value::Object(Map::new()));
        if let Some(labels) = labels.as_object_mut() {
            labels.insert(NAME_LABEL.into(), Value::String(name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_namespace_is_active_with_the_kubernetes_finalizer_and_its_name_label() {
        let mut ns = json!({"metadata": {"name": "vm-test", "labels": {"team": "a"}},
                            "spec": {"finalizers": ["example.com/x"]}, "status": {"phase": "Terminating"}});
        prepare_namespace(&mut ns);
        assert_eq!(ns["status"], json!({"phase": "Active"}));
        assert_eq!(ns["spec"]["finalizers"], json!(["example.com/x", "kubernetes"]));
        assert_eq!(ns["metadata"]["labels"], json!({"team": "a", NAME_LABEL: "vm-test"}));
        let mut bare = json!({"metadata": {"name": "b"}});
        prepare_namespace(&mut bare);
        assert_eq!(bare["spec"]["finalizers"], json!(["kubernetes"]));
        assert!(terminating(&json!({"status": {"phase": "Terminating"}})));
        assert!(terminating(&json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}})));
        assert!(!terminating(&ns));
    }
}
