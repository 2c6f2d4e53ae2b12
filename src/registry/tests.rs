//! The verbs without HTTP: what a request does to the store, decided by the registry alone, as
//! kube's generic registry tests drive its `Store` (`registry/generic/registry/store_test.go`).

use serde_json::{json, Value};

use super::*;
use crate::object::error::ApiError;
use crate::object::patch::NonApplyPatch;
use crate::object::validation::{FieldValidation, Via};
use crate::resource::ResourceInfo;
use crate::store::{Store, StoreConfig};

fn served(plural: &str) -> &'static ResourceInfo {
    let stored = |r: &&ResourceInfo| r.plural == plural && r.version == r.storage_version;
    crate::generated::RESOURCES.iter().find(stored).unwrap()
}

/// A registry over an in-memory store, with kube's namespace lifecycle.
async fn registry() -> Registry {
    let store = Store::open(StoreConfig::new(crate::store::sqlite::MEMORY)).unwrap();
    let registry = Registry::new(store);
    registry.ensure_namespaces().await.unwrap();
    registry
}

fn opts() -> WriteOptions {
    WriteOptions {
        dry_run: false,
        field_validation: FieldValidation::Strict,
        manager: "test".into(),
    }
}

fn in_ns(ns: &str, name: Option<&str>) -> Target {
    Target::new(Some(ns.into()), name.map(str::to_string))
}

fn config_map(name: &str, finalizers: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "finalizers": finalizers}, "data": {"k": "v"}})
}

async fn create(r: &Registry, res: &'static ResourceInfo, ns: &str, obj: Value) -> Outcome {
    r.create(res, &in_ns(ns, None), obj, Via::Body(&[]), &opts()).await.unwrap()
}

fn rv(v: &Value) -> String {
    v["metadata"]["resourceVersion"].as_str().unwrap().to_string()
}

#[tokio::test]
async fn create_get_update_and_a_stale_update() {
    let r = registry().await;
    let cms = served("configmaps");
    let made = create(&r, cms, "default", config_map("c", json!([]))).await;
    assert_eq!(made.change, Change::Created);
    let stored = r.get(cms, "default", "c").await.unwrap();
    assert_eq!(stored["data"], json!({"k": "v"}));
    assert!(!stored["metadata"]["uid"].as_str().unwrap().is_empty());
    let mut next = (*stored).clone();
    next["data"] = json!({"k": "w"});
    let target = in_ns("default", Some("c"));
    let updated = r.update(cms, &target, next.clone(), Via::Body(&[]), &opts()).await.unwrap();
    assert_eq!(updated.change, Change::Updated);
    assert!(rv(updated.object.value()) > rv(&stored));
    // The body still names the first revision: kube's optimistic-concurrency conflict.
    let stale = r.update(cms, &target, next, Via::Body(&[]), &opts()).await.unwrap_err();
    assert_eq!(stale.code(), 409, "{stale:?}");
    // A repeat of what is stored changes nothing.
    let current = (*r.get(cms, "default", "c").await.unwrap()).clone();
    let same = r.update(cms, &target, current, Via::Body(&[]), &opts()).await.unwrap();
    assert_eq!(same.change, Change::Unchanged);
}

#[tokio::test]
async fn a_dry_run_and_a_generated_name() {
    let r = registry().await;
    let cms = served("configmaps");
    let dry = WriteOptions { dry_run: true, ..opts() };
    let body = config_map("dry", json!([]));
    let out = r.create(cms, &in_ns("default", None), body, Via::Body(&[]), &dry).await.unwrap();
    assert_eq!(out.object.value()["metadata"]["name"], "dry");
    assert!(matches!(r.get(cms, "default", "dry").await, Err(ApiError::NotFound { .. })));
    let mut generated = config_map("", json!([]));
    generated["metadata"] = json!({"generateName": "cm-"});
    let out = create(&r, cms, "default", generated).await;
    let name = out.object.value()["metadata"]["name"].as_str().unwrap().to_string();
    assert!(name.starts_with("cm-") && name.len() == "cm-".len() + 5, "{name}");
    assert!(r.get(cms, "default", &name).await.is_ok());
}

#[tokio::test]
async fn a_finalizer_holds_a_delete_until_a_patch_removes_it() {
    let r = registry().await;
    let cms = served("configmaps");
    create(&r, cms, "default", config_map("held", json!(["example.com/hold"]))).await;
    let deleted = r.delete(cms, "default", "held", &DeleteOptions::default()).await.unwrap();
    let Deleted::Finalizing(obj) = deleted else { panic!("{deleted:?}") };
    assert!(crate::object::meta::is_deleting(obj.value()));
    // A repeated delete changes nothing.
    let again = r.delete(cms, "default", "held", &DeleteOptions::default()).await.unwrap();
    assert!(matches!(again, Deleted::Finalizing(_)));
    let release = json!({"metadata": {"finalizers": null}});
    let patch = NonApplyPatch::Merge(release.clone());
    let body = release.to_string();
    let target = in_ns("default", Some("held"));
    let out = r.patch(cms, &target, &patch, body.as_bytes(), &opts()).await.unwrap();
    assert_eq!(out.change, Change::Deleted, "the last finalizer gone, the object goes");
    assert!(matches!(r.get(cms, "default", "held").await, Err(ApiError::NotFound { .. })));
}

#[tokio::test]
async fn namespaces_are_checked_and_collections_deleted() {
    let r = registry().await;
    let cms = served("configmaps");
    let missing = r
        .create(cms, &in_ns("nowhere", None), config_map("c", json!([])), Via::Body(&[]), &opts())
        .await
        .unwrap_err();
    assert_eq!(missing.code(), 404, "{missing:?}");
    for name in ["a", "b"] {
        create(&r, cms, "default", config_map(name, json!([]))).await;
    }
    let (page, gone) = r
        .delete_collection(cms, Some("default"), &ListOptions::default(), &DeleteOptions::default())
        .await
        .unwrap();
    assert_eq!((page.items.len(), gone.len()), (2, 2));
    let left = r.list(cms, Some("default"), &ListOptions::default()).await.unwrap();
    assert!(left.items.is_empty());
}

/// A validating webhook that refuses every eviction as KubeVirt's virt-launcher interceptor
/// does (KUBE-WORLD §9: 429, its message), and allows everything else.
#[derive(Debug)]
struct RefusesEvictions;

impl Admission for RefusesEvictions {
    fn mutate_on_create(&self, _: &ResourceInfo, _: &mut Value) -> Result<(), ApiError> {
        Ok(())
    }
    fn warnings(
        &self,
        _: &ResourceInfo,
        _: crate::object::subresource::Part,
        _: &Value,
    ) -> Vec<String> {
        Vec::new()
    }
    fn admit_subresource_create<'a>(
        &'a self,
        _: &'static ResourceInfo,
        subresource: &'a str,
        obj: &'a Value,
        _: &'a Value,
    ) -> admission::Admitted<'a> {
        let verdict = if subresource == "eviction" {
            let msg = format!(
                "Eviction triggered evacuation of VMI \"{}/vm\"",
                obj["metadata"]["namespace"].as_str().unwrap_or("")
            );
            Err(ApiError::webhook_denied(
                "virt-launcher-eviction-interceptor.kubevirt.io",
                429,
                &msg,
            ))
        } else {
            Ok(())
        };
        Box::pin(std::future::ready(verdict))
    }
}

fn a_pod(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]}})
}

#[tokio::test]
async fn a_refused_eviction_is_the_webhooks_answer_and_deletes_nothing() {
    let r = registry().await.with_admission(std::sync::Arc::new(RefusesEvictions));
    let pods = served("pods");
    create(&r, pods, "default", a_pod("p")).await;
    let eviction = json!({"metadata": {"name": "p", "namespace": "default"}});
    let parse = |_: &[u8]| Ok(DeleteOptions::default());
    let err = r.evict(pods, &in_ns("default", Some("p")), &eviction, &[], parse).await.unwrap_err();
    let status = serde_json::to_value(err.to_status()).unwrap();
    assert_eq!(
        status,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "admission webhook \"virt-launcher-eviction-interceptor.kubevirt.io\" denied the request: Eviction triggered evacuation of VMI \"default/vm\"",
               "code": 429})
    );
    assert!(r.get(pods, "default", "p").await.is_ok());
    // A binding is not refused by it.
    let binding =
        json!({"metadata": {"name": "q", "namespace": "default"}, "target": {"name": "n1"}});
    let mut unbound = a_pod("q");
    unbound["spec"].as_object_mut().unwrap().remove("nodeName");
    create(&r, pods, "default", unbound).await;
    r.bind(pods, &in_ns("default", Some("q")), &binding, false).await.unwrap();
    assert_eq!(r.get(pods, "default", "q").await.unwrap()["spec"]["nodeName"], "n1");
}

/// Lines as a kubelet would have them.
#[derive(Debug)]
struct FixedLogs;

impl log_source::LogSource for FixedLogs {
    fn lines<'a>(
        &'a self,
        _: &'static ResourceInfo,
        pod: &'a Value,
        container: &'a str,
    ) -> futures_util::future::LocalBoxFuture<'a, Vec<(String, String)>> {
        let name = pod["metadata"]["name"].as_str().unwrap_or("");
        Box::pin(std::future::ready(vec![
            ("2026-01-01T00:00:00.5Z".into(), format!("{name}/{container} first")),
            ("2026-01-01T00:00:01Z".into(), format!("{name}/{container} second")),
        ]))
    }
}

#[tokio::test]
async fn logs_are_the_sources_lines_with_kubes_options() {
    let r = registry().await.with_log_source(std::sync::Arc::new(FixedLogs));
    let pods = served("pods");
    create(&r, pods, "default", a_pod("p")).await;
    let opts = LogOptions { timestamps: true, tail_lines: Some(1), ..LogOptions::default() };
    let text = r.logs(pods, &in_ns("default", Some("p")), &opts).await.unwrap();
    assert_eq!(text.as_deref(), Some("2026-01-01T00:00:01Z p/c second\n"));
}
