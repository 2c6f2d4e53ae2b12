//! kube-rs against the real binary: `Api<DynamicObject>` CRUD, list pagination, the runtime
//! watcher while objects change, and discovery.

use std::process::Stdio;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{
    Endpoints, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, Service,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::storage::v1::StorageClass;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::discovery::{Discovery, Scope};
use kube::runtime::watcher;
use kube::{Client, Config, ResourceExt};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

/// A running server, killed on drop.
struct Server {
    _child: tokio::process::Child,
    url: String,
    _dir: tempfile::TempDir,
}

async fn start() -> Server {
    start_with(&[]).await
}

/// A server with extra flags (`--simulate`, …).
async fn start_with(args: &[&str]) -> Server {
    let bin = std::env::var("VIRT_APISERVER_BIN").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/debug/virt-apiserver").to_string()
    });
    assert!(std::path::Path::new(&bin).exists(), "{bin} is missing: build the server first");
    let dir = tempfile::tempdir().unwrap();
    let mut child = tokio::process::Command::new(&bin)
        .args(["--listen", "127.0.0.1:0", "--database"])
        .arg(dir.path().join("virt.db"))
        .args(args)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the server");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next_line().await.unwrap().expect("the server prints its address");
    let url =
        first.strip_prefix("listening on ").expect("first line names the address").to_string();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    Server { _child: child, url, _dir: dir }
}

async fn client(s: &Server) -> Client {
    let config = Config::new(s.url.parse().unwrap());
    Client::try_from(config).unwrap()
}

/// Makes namespace `name` through the typed core/v1 API, as a client of a real cluster must
/// before it puts anything there.
async fn namespace(c: &Client, name: &str) {
    let api: Api<Namespace> = Api::all(c.clone());
    let ns = Namespace {
        metadata: kube::api::ObjectMeta { name: Some(name.into()), ..Default::default() },
        ..Default::default()
    };
    let made = api.create(&PostParams::default(), &ns).await.unwrap();
    assert_eq!(made.status.and_then(|s| s.phase).as_deref(), Some("Active"));
}

fn vm_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kubevirt.io", "v1", "VirtualMachine"),
        "virtualmachines",
    )
}

fn vm(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "kubevirt.io/v1",
        "kind": "VirtualMachine",
        "metadata": {"name": name, "labels": {"suite": "kube-rs"}},
        "spec": {"runStrategy": "Halted", "template": {"spec": {"domain": {"devices": {}}}}}
    }))
    .unwrap()
}

#[tokio::test]
async fn dynamic_object_crud() {
    let s = start().await;
    let c = client(&s).await;
    namespace(&c, "krs").await;
    let api: Api<DynamicObject> = Api::namespaced_with(c, "krs", &vm_resource());
    let created = api.create(&PostParams::default(), &vm("a")).await.unwrap();
    assert!(created.metadata.uid.is_some());
    assert_eq!(created.metadata.generation, Some(1));
    let got = api.get("a").await.unwrap();
    assert_eq!(got.metadata.resource_version, created.metadata.resource_version);
    assert_eq!(got.data["spec"]["runStrategy"], "Halted");

    let patch = json!({"spec": {"runStrategy": "Always"}});
    let patched = api.patch("a", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    assert_eq!(patched.data["spec"]["runStrategy"], "Always");
    assert_eq!(patched.metadata.generation, Some(2));

    let mut replaced = patched.clone();
    replaced.data["spec"]["runStrategy"] = json!("Manual");
    let replaced = api.replace("a", &PostParams::default(), &replaced).await.unwrap();
    assert_eq!(replaced.data["spec"]["runStrategy"], "Manual");
    // A stale resourceVersion is a conflict.
    let err = api.replace("a", &PostParams::default(), &patched).await.unwrap_err();
    match err {
        kube::Error::Api(status) => assert_eq!(status.code, 409),
        other => panic!("expected a 409, got {other:?}"),
    }

    let deleted = api.delete("a", &DeleteParams::default()).await.unwrap();
    assert!(deleted.is_right(), "a finalizer-free delete answers a Status");
    match api.get("a").await.unwrap_err() {
        kube::Error::Api(status) => {
            assert_eq!((status.code, status.reason.as_str()), (404, "NotFound"))
        }
        other => panic!("expected a 404, got {other:?}"),
    }
}

#[tokio::test]
async fn list_pagination() {
    let s = start().await;
    let c = client(&s).await;
    namespace(&c, "pages").await;
    let api: Api<DynamicObject> = Api::namespaced_with(c, "pages", &vm_resource());
    for i in 0..7 {
        api.create(&PostParams::default(), &vm(&format!("vm-{i}"))).await.unwrap();
    }
    let mut names = Vec::new();
    let mut lp = ListParams::default().limit(3);
    let mut pages = 0;
    let mut first_rv = None;
    loop {
        let page = api.list(&lp).await.unwrap();
        pages += 1;
        let rv = page.metadata.resource_version.clone();
        assert_eq!(
            *first_rv.get_or_insert(rv.clone()),
            rv,
            "every page reports the first page's RV"
        );
        names.extend(page.items.iter().map(|o| o.metadata.name.clone().unwrap()));
        match page.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(token) => lp = lp.continue_token(&token),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names, (0..7).map(|i| format!("vm-{i}")).collect::<Vec<_>>());
}

#[tokio::test]
async fn runtime_watcher_follows_changes() {
    let s = start().await;
    let c = client(&s).await;
    namespace(&c, "watched").await;
    let api: Api<DynamicObject> = Api::namespaced_with(c.clone(), "watched", &vm_resource());
    api.create(&PostParams::default(), &vm("before")).await.unwrap();

    let all: Api<DynamicObject> = Api::all_with(c, &vm_resource());
    let mut events = watcher(all, watcher::Config::default().labels("suite=kube-rs")).boxed();
    // The initial list: Init, InitApply(before), InitDone.
    let mut initial = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .unwrap()
            .unwrap()
        {
            Some(watcher::Event::InitApply(o)) => initial.push(o.metadata.name.unwrap()),
            Some(watcher::Event::InitDone) => break,
            Some(_) => {}
            None => panic!("watcher ended"),
        }
    }
    assert_eq!(initial, ["before"]);

    api.create(&PostParams::default(), &vm("after")).await.unwrap();
    let patch = json!({"metadata": {"annotations": {"touched": "yes"}}});
    api.patch("after", &PatchParams::default(), &Patch::Merge(&patch)).await.unwrap();
    api.delete("before", &DeleteParams::default()).await.unwrap();

    let mut seen = Vec::new();
    while seen.len() < 3 {
        let ev = tokio::time::timeout(Duration::from_secs(10), events.try_next())
            .await
            .unwrap()
            .unwrap();
        match ev {
            Some(watcher::Event::Apply(o)) => seen.push(format!(
                "apply {} {}",
                o.metadata.name.unwrap(),
                o.metadata.annotations.map_or(0, |a| a.len())
            )),
            Some(watcher::Event::Delete(o)) => {
                seen.push(format!("delete {}", o.metadata.name.unwrap()))
            }
            Some(_) => {}
            None => panic!("watcher ended"),
        }
    }
    assert_eq!(seen, ["apply after 0", "apply after 1", "delete before"]);
}

/// kube's own kinds through their typed `Api`s: a node watched while it changes, pods selected
/// by node, a service's IntOrString port, a storage class.
#[tokio::test]
async fn typed_apis_list_and_watch_the_world_kinds() {
    let s = start().await;
    let c = client(&s).await;
    namespace(&c, "world").await;
    let nodes: Api<Node> = Api::all(c.clone());
    let mut events = watcher(nodes.clone(), watcher::Config::default()).boxed();
    loop {
        let ev = tokio::time::timeout(Duration::from_secs(10), events.try_next()).await;
        if let Some(watcher::Event::InitDone) = ev.unwrap().unwrap() {
            break;
        }
    }
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "node01"},
                                                   "spec": {"podCIDR": "10.244.0.0/24"}}))
    .unwrap();
    nodes.create(&PostParams::default(), &node).await.unwrap();
    let cordon = json!({"spec": {"unschedulable": true}});
    nodes.patch("node01", &PatchParams::default(), &Patch::Strategic(&cordon)).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let ev = tokio::time::timeout(Duration::from_secs(10), events.try_next()).await;
        if let Some(watcher::Event::Apply(n)) = ev.unwrap().unwrap() {
            seen.push(n.spec.and_then(|s| s.unschedulable).unwrap_or(false));
        }
    }
    assert_eq!(seen, [false, true]);

    let pods: Api<Pod> = Api::namespaced(c.clone(), "world");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"nodeName": "node01", "containers": [{"name": "c", "image": "busybox"}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let on_node = pods.list(&ListParams::default().fields("spec.nodeName=node01")).await.unwrap();
    let names: Vec<_> = on_node.items.iter().filter_map(|p| p.metadata.name.clone()).collect();
    assert_eq!(names, ["web"]);

    let services: Api<Service> = Api::namespaced(c.clone(), "world");
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}))
    .unwrap();
    services.create(&PostParams::default(), &svc).await.unwrap();
    let got = services.get("web").await.unwrap();
    let port = &got.spec.unwrap().ports.unwrap()[0];
    assert_eq!(
        port.target_port,
        Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(8080))
    );

    let classes: Api<StorageClass> = Api::all(c);
    let class: StorageClass = serde_json::from_value(json!({
        "metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner"}))
    .unwrap();
    classes.create(&PostParams::default(), &class).await.unwrap();
    let listed = classes.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items[0].provisioner, "kubernetes.io/no-provisioner");
}

/// The simulated world's volumes and endpoints through their typed `Api`s: a claim of the
/// default class watched to Bound and the volume the provisioner made for it, then a Service's
/// Endpoints watched until they list the pod it selects, and its EndpointSlice.
#[tokio::test]
async fn typed_apis_follow_the_simulated_worlds_claims_and_endpoints() {
    let s = start_with(&["--simulate", "--simulate-nodes", "1", "--simulate-speed", "0"]).await;
    let c = client(&s).await;
    namespace(&c, "sim").await;

    let claims: Api<PersistentVolumeClaim> = Api::namespaced(c.clone(), "sim");
    let mut events = watcher(claims.clone(), watcher::Config::default()).boxed();
    let claim: PersistentVolumeClaim = serde_json::from_value(json!({
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}))
    .unwrap();
    claims.create(&PostParams::default(), &claim).await.unwrap();
    let bound = loop {
        let ev = tokio::time::timeout(Duration::from_secs(20), events.try_next()).await;
        if let Some(watcher::Event::Apply(pvc)) = ev.unwrap().unwrap() {
            if pvc.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Bound") {
                break pvc;
            }
        }
    };
    let spec = bound.spec.unwrap();
    assert_eq!(spec.storage_class_name.as_deref(), Some("standard"), "the default class");
    let volume_name = spec.volume_name.expect("a bound claim names its volume");
    let volumes: Api<PersistentVolume> = Api::all(c.clone());
    let volume = volumes.get(&volume_name).await.unwrap();
    let claim_ref = volume.spec.unwrap().claim_ref.unwrap();
    assert_eq!(claim_ref.name.as_deref(), Some("data"));
    assert_eq!(volume.status.unwrap().phase.as_deref(), Some("Bound"));

    let pods: Api<Pod> = Api::namespaced(c.clone(), "sim");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "web", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 8080}]}]}}))
    .unwrap();
    pods.create(&PostParams::default(), &pod).await.unwrap();
    let services: Api<Service> = Api::namespaced(c.clone(), "sim");
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080}]}}))
    .unwrap();
    services.create(&PostParams::default(), &svc).await.unwrap();
    let endpoints: Api<Endpoints> = Api::namespaced(c.clone(), "sim");
    let config = watcher::Config::default().fields("metadata.name=web");
    let mut events = watcher(endpoints, config).boxed();
    let address = loop {
        let ev = tokio::time::timeout(Duration::from_secs(20), events.try_next()).await;
        if let Some(watcher::Event::Apply(ep)) = ev.unwrap().unwrap() {
            let subsets = ep.subsets.unwrap_or_default();
            let ready = subsets.first().and_then(|s| s.addresses.clone()).unwrap_or_default();
            if let Some(a) = ready.first() {
                assert_eq!(subsets[0].ports.as_ref().unwrap()[0].port, 8080);
                break a.ip.clone();
            }
        }
    };
    let running = pods.get("web").await.unwrap();
    assert_eq!(running.status.unwrap().pod_ip.as_deref(), Some(address.as_str()));
    // The slice controller writes after the endpoints controller: its slice follows.
    let slices: Api<EndpointSlice> = Api::namespaced(c, "sim");
    let by_service = ListParams::default().labels("kubernetes.io/service-name=web");
    let mut addresses = Vec::new();
    for _ in 0..100 {
        let listed = slices.list(&by_service).await.unwrap();
        addresses = listed
            .items
            .iter()
            .flat_map(|s| s.endpoints.iter().flat_map(|e| e.addresses.clone()))
            .collect();
        if !addresses.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(addresses, [address]);
}

#[tokio::test]
async fn discovery_finds_every_group() {
    let s = start().await;
    // `/api` lists core/v1 (Namespaces, ConfigMaps, Secrets, Events) beside the groups.
    let discovery = Discovery::new(client(&s).await).run().await.unwrap();
    let groups: Vec<String> = discovery.groups().map(|g| g.name().to_string()).collect();
    for g in
        ["kubevirt.io", "cdi.kubevirt.io", "upload.cdi.kubevirt.io", "instancetype.kubevirt.io"]
    {
        assert!(groups.iter().any(|x| x == g), "{g} missing from {groups:?}");
    }
    let kv = discovery.get("kubevirt.io").unwrap();
    assert_eq!(kv.preferred_version_or_latest(), "v1");
    let (ar, caps) = kv
        .recommended_resources()
        .into_iter()
        .find(|(ar, _)| ar.kind == "VirtualMachine")
        .expect("VirtualMachine is discovered");
    assert_eq!(ar.plural, "virtualmachines");
    assert_eq!(caps.scope, Scope::Namespaced);
    assert!(caps.supports_operation("watch"));
    assert_core_group(&discovery);
    // The whole group is usable through what discovery returned.
    let c = client(&s).await;
    namespace(&c, "disc").await;
    let api: Api<DynamicObject> = Api::namespaced_with(c, "disc", &ar);
    api.create(&PostParams::default(), &vm("found")).await.unwrap();
    assert_eq!(api.list(&ListParams::default()).await.unwrap().items.len(), 1);
}

#[tokio::test]
async fn aggregated_discovery_finds_every_group_in_one_round_trip() {
    let s = start().await;
    // `/apis` and `/api` as apidiscovery.k8s.io/v2 (B.7); `/api` lists the core group.
    let discovery = Discovery::new(client(&s).await).run_aggregated().await.unwrap();
    let groups: Vec<String> = discovery.groups().map(|g| g.name().to_string()).collect();
    for g in
        ["kubevirt.io", "cdi.kubevirt.io", "upload.cdi.kubevirt.io", "instancetype.kubevirt.io"]
    {
        assert!(groups.iter().any(|x| x == g), "{g} missing from {groups:?}");
    }
    assert_core_group(&discovery);
    let kv = discovery.get("kubevirt.io").unwrap();
    assert_eq!(kv.preferred_version_or_latest(), "v1");
    assert_eq!(kv.versions().collect::<Vec<_>>(), ["v1", "v1alpha3", "v1alpha2"]);
    let (ar, caps) = kv
        .recommended_resources()
        .into_iter()
        .find(|(ar, _)| ar.kind == "VirtualMachine")
        .expect("VirtualMachine is discovered");
    assert_eq!(ar.plural, "virtualmachines");
    assert_eq!(caps.scope, Scope::Namespaced);
    assert!(caps.supports_operation("watch"));
    assert!(
        caps.subresources.iter().any(|(sub, _)| sub.plural == "status"),
        "the status subresource: {:?}",
        caps.subresources
    );
    let c = client(&s).await;
    namespace(&c, "agg").await;
    let api: Api<DynamicObject> = Api::namespaced_with(c, "agg", &ar);
    api.create(&PostParams::default(), &vm("found")).await.unwrap();
    assert_eq!(api.list(&ListParams::default()).await.unwrap().items.len(), 1);
}

/// The core group as discovery found it: v1 with the cluster-scoped Namespace (no
/// deletecollection) and the namespaced ConfigMap.
fn assert_core_group(discovery: &Discovery) {
    let core = discovery.get("").expect("the core group is discovered");
    assert_eq!(core.preferred_version_or_latest(), "v1");
    let resources = core.recommended_resources();
    let find = |kind: &str| {
        resources
            .iter()
            .find(|(ar, _)| ar.kind == kind)
            .unwrap_or_else(|| panic!("{kind} is discovered"))
    };
    let (ar, caps) = find("Namespace");
    assert_eq!((ar.plural.as_str(), ar.api_version.as_str()), ("namespaces", "v1"));
    assert_eq!(caps.scope, Scope::Cluster);
    assert!(caps.supports_operation("watch"));
    assert!(!caps.supports_operation("deletecollection"));
    let (ar, caps) = find("ConfigMap");
    assert_eq!(ar.plural, "configmaps");
    assert_eq!(caps.scope, Scope::Namespaced);
}

/// kube's runtime watcher follows a VM the simulated runtime starts (`runStrategy: Always`),
/// from creation through Starting to Running, as a controller or UI built on kube-rs would.
#[tokio::test]
async fn runtime_watcher_follows_a_simulated_vm_to_running() {
    let s = start_with(&["--simulate", "--simulate-speed", "0.2"]).await;
    let c = client(&s).await;
    namespace(&c, "sim").await;
    let api: Api<DynamicObject> = Api::namespaced_with(c, "sim", &vm_resource());
    let config = watcher::Config::default().fields("metadata.name=runs");
    let mut events = watcher(api.clone(), config).boxed();
    let mut obj = vm("runs");
    obj.data["spec"]["runStrategy"] = json!("Always");
    api.create(&PostParams::default(), &obj).await.unwrap();

    // Each printableStatus once, in the order the watcher delivers them.
    let mut seen: Vec<String> = Vec::new();
    let follow = async {
        while seen.last().map(String::as_str) != Some("Running") {
            let o = match events.try_next().await.unwrap() {
                Some(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => o,
                Some(_) => continue,
                None => panic!("watcher ended"),
            };
            let status = o.data["status"]["printableStatus"].as_str().unwrap_or("").to_string();
            if !status.is_empty() && seen.last() != Some(&status) {
                seen.push(status);
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), follow).await.expect("Running within 30 s");
    assert_eq!(seen, ["Starting", "Running"]);
    let vm = api.get("runs").await.unwrap();
    assert_eq!(vm.data["status"]["ready"], true);
    assert_eq!(vm.data["status"]["created"], true);
}

/// A Fault (testing.virt-apiserver.io/v1alpha1) that answers the watcher's first watch with 410
/// Expired, as kube answers a resourceVersion it no longer holds. kube-rs 3.1's watcher reports
/// the failed start and watches again from the same resourceVersion: it does not relist
/// (kube-runtime watcher.rs: `State::InitListed` keeps its `resource_version` on
/// `WatchStartFailed`, where a 410 from an established watch goes back to `State::Empty`).
/// With the Fault spent the second watch takes, and changes flow again.
#[tokio::test]
async fn runtime_watcher_retries_a_watch_answered_410_from_the_same_version() {
    let s = start().await;
    let c = client(&s).await;
    namespace(&c, "cut").await;
    let api: Api<DynamicObject> = Api::namespaced_with(c.clone(), "cut", &vm_resource());
    api.create(&PostParams::default(), &vm("one")).await.unwrap();
    let faults = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("testing.virt-apiserver.io", "v1alpha1", "Fault"),
        "faults",
    );
    let fault: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "testing.virt-apiserver.io/v1alpha1",
        "kind": "Fault",
        "metadata": {"name": "expire-first-watch"},
        "spec": {"match": {"verbs": ["watch"], "resources": ["virtualmachines"]}, "times": 1,
                 "action": {"watch": {"cut": "expired"}}}
    }))
    .unwrap();
    let fault_api: Api<DynamicObject> = Api::all_with(c.clone(), &faults);
    fault_api.create(&PostParams::default(), &fault).await.unwrap();

    let all: Api<DynamicObject> = Api::all_with(c, &vm_resource());
    let mut events = watcher(all, watcher::Config::default()).boxed();
    let mut seen: Vec<String> = Vec::new();
    while !seen.iter().any(|e| e == "apply two") {
        let ev = tokio::time::timeout(Duration::from_secs(10), events.next())
            .await
            .unwrap_or_else(|_| panic!("the watcher stalled after {seen:?}"))
            .expect("the watcher does not end");
        match ev {
            Ok(watcher::Event::Init) => seen.push("init".into()),
            Ok(watcher::Event::InitApply(o)) => seen.push(format!("list {}", o.name_any())),
            Ok(watcher::Event::InitDone) => seen.push("listed".into()),
            Ok(watcher::Event::Apply(o)) => seen.push(format!("apply {}", o.name_any())),
            Ok(watcher::Event::Delete(o)) => seen.push(format!("delete {}", o.name_any())),
            Err(e) => {
                assert!(format!("{e:?}").contains("Expired"), "{e:?}");
                seen.push("error 410".into());
                api.create(&PostParams::default(), &vm("two")).await.unwrap();
            }
        }
    }
    assert_eq!(seen, ["init", "list one", "listed", "error 410", "apply two"]);
}

/// What a runtime watcher's consumer holds: each list replaces it (Init … InitDone), each
/// event moves it; `relists` counts the lists.
#[derive(Default)]
struct Held {
    objects: std::collections::BTreeSet<String>,
    listing: Vec<String>,
    relists: usize,
}

impl Held {
    fn take(&mut self, ev: Result<watcher::Event<DynamicObject>, watcher::Error>) {
        match ev {
            // A re-watch answered 410 Expired: the watcher relists on its next poll.
            Err(_) => {}
            Ok(watcher::Event::Init) => self.listing.clear(),
            Ok(watcher::Event::InitApply(o)) => self.listing.push(o.metadata.name.unwrap()),
            Ok(watcher::Event::InitDone) => {
                self.relists += 1;
                self.objects = self.listing.drain(..).collect();
            }
            Ok(watcher::Event::Apply(o)) => {
                self.objects.insert(o.metadata.name.unwrap());
            }
            Ok(watcher::Event::Delete(o)) => {
                self.objects.remove(&o.metadata.name.unwrap());
            }
        }
    }

    fn names(&self) -> Vec<&str> {
        self.objects.iter().map(String::as_str).collect()
    }
}

/// kube's runtime watcher across a reset (`POST /reset`, sent by `virt-apiserver reset`): its
/// watch ends, its re-watch from the last resourceVersion is 410 Expired (compacted), and it
/// relists: the world it then holds is the fixtures, without what the test added.
#[tokio::test]
async fn runtime_watcher_relists_after_a_reset() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = dir.path().join("fixtures.yaml");
    std::fs::write(
        &fixture,
        "apiVersion: v1\nkind: Namespace\nmetadata: {name: fixed}\n---\n\
         apiVersion: kubevirt.io/v1\nkind: VirtualMachine\n\
         metadata: {name: web, namespace: fixed, labels: {suite: kube-rs}}\n\
         spec: {runStrategy: Halted, template: {spec: {domain: {devices: {}}}}}\n",
    )
    .unwrap();
    let s = start_with(&["--fixtures", fixture.to_str().unwrap()]).await;
    let c = client(&s).await;
    let api: Api<DynamicObject> = Api::namespaced_with(c, "fixed", &vm_resource());
    let mut events = watcher(api.clone(), watcher::Config::default()).boxed();
    let mut held = Held::default();
    let next = Duration::from_secs(10);
    while held.relists == 0 {
        held.take(tokio::time::timeout(next, events.next()).await.unwrap().unwrap());
    }
    assert_eq!(held.names(), ["web"]);
    api.create(&PostParams::default(), &vm("extra")).await.unwrap();
    while !held.objects.contains("extra") {
        held.take(tokio::time::timeout(next, events.next()).await.unwrap().unwrap());
    }

    let bin = std::env::var("VIRT_APISERVER_BIN").unwrap_or_else(|_| {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../target/debug/virt-apiserver").to_string()
    });
    let out = tokio::process::Command::new(bin)
        .args(["reset", "--server", &s.url])
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The watch ends, the re-watch is 410, and the watcher lists again (its second InitDone).
    while held.relists == 1 {
        held.take(tokio::time::timeout(next, events.next()).await.unwrap().unwrap());
    }
    assert_eq!(held.names(), ["web"], "the world after the reset");
}
