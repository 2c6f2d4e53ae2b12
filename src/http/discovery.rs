//! Discovery documents (B.7, A.10, A.14): `/`, `/api`, `/apis`, `/apis/<group>`,
//! `/apis/<group>/<version>` and `/version`, built from the generated records; `/api` and `/apis`
//! also as aggregated discovery (`apidiscovery.k8s.io` v2 and v2beta1).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use base64::Engine;
use serde::Serialize;
use serde_json::json;
use sha2::{Digest, Sha256, Sha512};
use std::sync::OnceLock;

use crate::generated::{GROUPS, RESOURCES};
use crate::http::codec::{first_accepted, negotiate, respond};
use crate::http::state::AppState;
use crate::object::error::ApiError;
use crate::resource::{GroupInfo, ResourceInfo};

/// The Kubernetes API level this server implements; kubectl picks its client from it.
const KUBE_MAJOR: &str = "1";
const KUBE_MINOR: &str = "32";

/// `GET /`: every path a client may start from.
pub async fn root(_state: &AppState, _req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    let mut paths: Vec<String> = [
        "/api",
        "/apis",
        "/healthz",
        "/livez",
        "/readyz",
        "/openapi/v2",
        "/openapi/v3",
        "/version",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for g in GROUPS {
        if g.name.is_empty() {
            paths.extend(g.versions.iter().map(|v| format!("/api/{v}")));
            continue;
        }
        paths.push(format!("/apis/{}", g.name));
        for v in g.versions {
            paths.push(format!("/apis/{}/{v}", g.name));
        }
    }
    paths.sort();
    respond(StatusCode::OK, crate::http::codec::Format::Json, &json!({ "paths": paths }))
}

/// The legacy core group (`""`), served under `/api`, if the document has it.
fn core_group() -> Option<&'static GroupInfo> {
    GROUPS.iter().find(|g| g.name.is_empty())
}

/// The named groups, served under `/apis`.
fn named_groups() -> impl Iterator<Item = &'static GroupInfo> {
    GROUPS.iter().filter(|g| !g.name.is_empty())
}

/// `GET /api`: the core group's versions (none when the document has no core group), or with
/// aggregated discovery's Accept, the core group's versions and resources.
pub async fn api(_state: &AppState, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    if let Some(version) = aggregated_version(req) {
        static DOCS: OnceLock<AggregatedDocs> = OnceLock::new();
        let docs = DOCS.get_or_init(|| {
            let core: Vec<_> = core_group().into_iter().map(aggregated_group).collect();
            AggregatedDocs::new(&core)
        });
        return Ok(serve_aggregated(req, version, docs));
    }
    let format = negotiate(req, true)?;
    let addr = req.app_config().local_addr().to_string();
    let versions = core_group().map_or(&[][..], |g| g.versions);
    respond(
        StatusCode::OK,
        format,
        &json!({
            "kind": "APIVersions",
            "versions": versions,
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": addr}],
        }),
    )
}

#[derive(Serialize)]
struct GroupVersionForDiscovery {
    #[serde(rename = "groupVersion")]
    group_version: String,
    version: &'static str,
}

#[derive(Serialize)]
struct ApiGroup {
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<&'static str>,
    #[serde(rename = "apiVersion", skip_serializing_if = "Option::is_none")]
    api_version: Option<&'static str>,
    name: &'static str,
    versions: Vec<GroupVersionForDiscovery>,
    #[serde(rename = "preferredVersion")]
    preferred_version: GroupVersionForDiscovery,
}

fn api_group(g: &GroupInfo, typed: bool) -> ApiGroup {
    let gv = |v: &'static str| GroupVersionForDiscovery {
        group_version: format!("{}/{v}", g.name),
        version: v,
    };
    ApiGroup {
        kind: typed.then_some("APIGroup"),
        api_version: typed.then_some("v1"),
        name: g.name,
        versions: g.versions.iter().map(|v| gv(v)).collect(),
        preferred_version: gv(g.versions[0]),
    }
}

/// `GET /apis`: every group, in the document's order, versions preferred first; with
/// aggregated discovery's Accept, every group's versions and resources in one document.
pub async fn apis(_state: &AppState, req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    if let Some(version) = aggregated_version(req) {
        static DOCS: OnceLock<AggregatedDocs> = OnceLock::new();
        let docs = DOCS.get_or_init(|| AggregatedDocs::new(&aggregated_groups()));
        return Ok(serve_aggregated(req, version, docs));
    }
    let format = negotiate(req, true)?;
    let groups: Vec<ApiGroup> = named_groups().map(|g| api_group(g, false)).collect();
    respond(
        StatusCode::OK,
        format,
        &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}),
    )
}

/// `GET /apis/<group>`.
pub async fn group(
    _state: &AppState,
    req: &HttpRequest,
    g: &'static GroupInfo,
) -> Result<HttpResponse, ApiError> {
    let format = negotiate(req, true)?;
    respond(StatusCode::OK, format, &api_group(g, true))
}

#[derive(Serialize)]
struct ApiResource {
    name: String,
    #[serde(rename = "singularName")]
    singular_name: &'static str,
    namespaced: bool,
    /// Set only where the answer's group differs from the list's (the scale subresource).
    #[serde(skip_serializing_if = "str::is_empty")]
    group: &'static str,
    #[serde(skip_serializing_if = "str::is_empty")]
    version: &'static str,
    kind: &'static str,
    verbs: &'static [&'static str],
    #[serde(rename = "shortNames", skip_serializing_if = "<[_]>::is_empty")]
    short_names: &'static [&'static str],
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    categories: &'static [&'static str],
    #[serde(rename = "storageVersionHash", skip_serializing_if = "String::is_empty")]
    storage_version_hash: String,
}

/// std-base64 of the first 8 bytes of sha256(`<group>/<storageVersion>/<Kind>`) (AS discovery).
pub fn storage_version_hash(res: &ResourceInfo) -> String {
    let digest = Sha256::digest(format!("{}/{}/{}", res.group, res.storage_version, res.kind));
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

/// What kube lists for every subresource of a custom resource.
const SUBRESOURCE_VERBS: &[&str] = &["get", "patch", "update"];
/// kube's Namespace `finalize` is written only.
const FINALIZE_VERBS: &[&str] = &["update"];
/// kube's Pod `binding` and `eviction` are created only, its `log` read only.
const CREATE_VERBS: &[&str] = &["create"];
const GET_VERBS: &[&str] = &["get"];

/// kube's Pod subresources other than `status`, in the order kube-apiserver lists them
/// (alphabetical: K8S `api/discovery/api__v1.json`), each with the group, version and kind its
/// entry names (the eviction answers policy/v1's; the binding core's, named only by its kind)
/// and its verbs.
fn built_in_subresources(
    r: &ResourceInfo,
) -> impl Iterator<
    Item = (&'static str, &'static str, &'static str, &'static str, &'static [&'static str]),
> {
    let kind = r.kind;
    [
        (r.binding_subresource, ("binding", "", "", "Binding", CREATE_VERBS)),
        (r.eviction_subresource, ("eviction", "policy", "v1", "Eviction", CREATE_VERBS)),
        (r.log_subresource, ("log", "", "", kind, GET_VERBS)),
    ]
    .into_iter()
    .filter_map(|(served, entry)| served.then_some(entry))
}

/// A kind's discovery entry followed by its subresources' (`<plural>/status` with the kind,
/// `<plural>/scale` answering `autoscaling/v1` Scale), as the CRD discovery controller lists them.
fn api_resources(r: &ResourceInfo) -> Vec<ApiResource> {
    let mut out = vec![ApiResource {
        name: r.plural.to_string(),
        singular_name: r.singular,
        namespaced: r.namespaced,
        group: "",
        version: "",
        kind: r.kind,
        verbs: r.verbs,
        short_names: r.short_names,
        categories: r.categories,
        storage_version_hash: if r.is_stored() { storage_version_hash(r) } else { String::new() },
    }];
    let sub = |name: &str, group, version, kind| ApiResource {
        name: format!("{}/{name}", r.plural),
        singular_name: "",
        namespaced: r.namespaced,
        group,
        version,
        kind,
        verbs: SUBRESOURCE_VERBS,
        short_names: &[],
        categories: &[],
        storage_version_hash: String::new(),
    };
    for (name, group, version, kind, verbs) in built_in_subresources(r) {
        out.push(ApiResource { verbs, ..sub(name, group, version, kind) });
    }
    if r.status_subresource {
        out.push(sub("status", "", "", r.kind));
    }
    if r.scale.is_some() {
        out.push(sub("scale", "autoscaling", "v1", "Scale"));
    }
    if r.finalize_subresource {
        out.push(ApiResource { verbs: FINALIZE_VERBS, ..sub("finalize", "", "", r.kind) });
    }
    out
}

/// `GET /apis/<group>/<version>`: the version's resources.
pub async fn resources(
    _state: &AppState,
    req: &HttpRequest,
    g: &'static GroupInfo,
    version: &'static str,
) -> Result<HttpResponse, ApiError> {
    let format = negotiate(req, true)?;
    let mut resources: Vec<serde_json::Value> = RESOURCES
        .iter()
        .filter(|r| r.group == g.name && r.version == version)
        .flat_map(api_resources)
        .map(|r| serde_json::to_value(r).expect("discovery encodes"))
        .collect();
    // Name-only entries: virt-api's `APIResource{Name, Namespaced: true}`, its nil verbs as an
    // empty list (typed clients such as k8s-openapi's refuse a null).
    let listed = g.listed.iter().filter(|(v, _)| *v == version).flat_map(|(_, names)| *names);
    resources.extend(listed.map(|name| {
        json!({"name": name, "singularName": "", "namespaced": true, "kind": "", "verbs": []})
    }));
    respond(
        StatusCode::OK,
        format,
        &json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": group_version(g.name, version),
            "resources": resources,
        }),
    )
}

/// Whether `Accept`'s first acceptable clause asks for aggregated discovery (B.7), and in which
/// version. As kube's `WrappedHandler`, a plain JSON or YAML clause before it means the legacy
/// document; clauses asking for other transformations are passed over.
fn aggregated_version(req: &HttpRequest) -> Option<&'static str> {
    first_accepted(req, |essence, as_, g, v| match (essence, as_, g, v) {
        ("application/json", Some("APIGroupDiscoveryList"), Some(AGGREGATED_GROUP), Some(v)) => {
            match v {
                "v2" => Some(Some("v2")),
                "v2beta1" => Some(Some("v2beta1")),
                _ => None,
            }
        }
        ("application/json" | "application/yaml" | "application/*" | "*/*", None, None, None) => {
            Some(None)
        }
        _ => None,
    })
    .flatten()
}

const AGGREGATED_GROUP: &str = "apidiscovery.k8s.io";

/// An aggregated discovery document in both versions kube 1.32 serves, and its ETag.
struct AggregatedDocs {
    v2: Vec<u8>,
    v2beta1: Vec<u8>,
    /// Upper-case hex SHA-512 of the v2 document; kube gives both encodings the same one (they
    /// differ only by `Vary: Accept`).
    etag: String,
}

impl AggregatedDocs {
    fn new(items: &[serde_json::Value]) -> AggregatedDocs {
        let doc = |version: &str| {
            serde_json::to_vec(&json!({
                "kind": "APIGroupDiscoveryList",
                "apiVersion": format!("{AGGREGATED_GROUP}/{version}"),
                "metadata": {},
                "items": items,
            }))
            .expect("discovery encodes")
        };
        let v2 = doc("v2");
        let etag = Sha512::digest(&v2).iter().map(|b| format!("{b:02X}")).collect();
        AggregatedDocs { v2beta1: doc("v2beta1"), v2, etag }
    }
}

/// Answers an aggregated document with kube's caching headers; 304 when `If-None-Match` is the
/// current ETag.
fn serve_aggregated(
    req: &HttpRequest,
    version: &str,
    docs: &'static AggregatedDocs,
) -> HttpResponse {
    let quoted = format!("\"{}\"", docs.etag);
    let fresh = req
        .headers()
        .get(actix_web::http::header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == quoted.as_bytes());
    let mut resp = if fresh { HttpResponse::NotModified() } else { HttpResponse::Ok() };
    resp.insert_header(("ETag", quoted.as_str()))
        .insert_header(("Vary", "Accept"))
        .insert_header(("Cache-Control", "public"));
    if fresh {
        return resp.finish();
    }
    let body: &'static [u8] = if version == "v2" { &docs.v2 } else { &docs.v2beta1 };
    resp.content_type(format!(
        "application/json;g={AGGREGATED_GROUP};v={version};as=APIGroupDiscoveryList"
    ))
    .body(body)
}

/// Every group as an `APIGroupDiscovery`: versions preferred first, each with its resources and
/// their subresources, all `Current` (everything is served by this one process).
fn aggregated_groups() -> Vec<serde_json::Value> {
    named_groups().map(aggregated_group).collect()
}

/// One group as an `APIGroupDiscovery`: its versions, each with its resources. The core
/// group's has no name, as kube's `/api` document.
fn aggregated_group(g: &GroupInfo) -> serde_json::Value {
    let versions: Vec<_> = g
        .versions
        .iter()
        .map(|v| {
            let mut resources: Vec<_> = RESOURCES
                .iter()
                .filter(|r| r.group == g.name && r.version == *v)
                .map(aggregated_resource)
                .collect();
            let listed = g.listed.iter().filter(|(lv, _)| lv == v).flat_map(|(_, names)| *names);
            aggregated_listed(&mut resources, listed);
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let metadata = if g.name.is_empty() {
        json!({"creationTimestamp": null})
    } else {
        json!({"name": g.name, "creationTimestamp": null})
    };
    json!({"metadata": metadata, "versions": versions})
}

/// Name-only entries (`x-virt-api-resources`) as kube-aggregator converts an API service's
/// legacy list (`ConvertGroupVersionIntoToDiscovery`): a top-level name is a resource with an
/// empty kind; `<parent>/<sub>` a subresource of its parent, created (empty kind) if absent.
/// Verbs are an empty list where Go would write null (see `resources`).
fn aggregated_listed<'a>(
    resources: &mut Vec<serde_json::Value>,
    names: impl Iterator<Item = &'a &'static str>,
) {
    let empty = || json!({"group": "", "version": "", "kind": ""});
    let entry = |name: &str| {
        json!({"resource": name, "responseKind": empty(), "scope": "Namespaced",
               "singularResource": "", "verbs": []})
    };
    let names: Vec<&str> = names.copied().collect();
    for name in names.iter().filter(|n| !n.contains('/')) {
        resources.push(entry(name));
    }
    for (parent, sub) in names.iter().filter_map(|n| n.split_once('/')) {
        let at = match resources.iter().position(|r| r["resource"] == parent) {
            Some(at) => at,
            None => {
                resources.push(entry(parent));
                resources.len() - 1
            }
        };
        let subs = resources[at]
            .as_object_mut()
            .expect("an object")
            .entry("subresources")
            .or_insert_with(|| json!([]));
        if let Some(list) = subs.as_array_mut() {
            list.push(json!({"subresource": sub, "responseKind": empty(), "verbs": []}));
        }
    }
}

/// `<group>/<version>`, or `<version>` alone in the core group.
fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// One kind as an `APIResourceDiscovery`, its subresources as the CRD handler lists them.
fn aggregated_resource(r: &ResourceInfo) -> serde_json::Value {
    let kind = json!({"group": r.group, "version": r.version, "kind": r.kind});
    let mut out = json!({
        "resource": r.plural,
        "responseKind": kind,
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": r.verbs,
    });
    if !r.short_names.is_empty() {
        out["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        out["categories"] = json!(r.categories);
    }
    let mut subresources = Vec::new();
    for (name, group, version, sub_kind, verbs) in built_in_subresources(r) {
        // As the kind's own entries here name it: the core group's version spelled out.
        let (group, version) =
            if group.is_empty() { (r.group, r.version) } else { (group, version) };
        subresources.push(json!({"subresource": name,
            "responseKind": {"group": group, "version": version, "kind": sub_kind},
            "verbs": verbs}));
    }
    if r.status_subresource {
        subresources.push(json!({"subresource": "status", "responseKind": kind,
                                 "verbs": SUBRESOURCE_VERBS}));
    }
    if r.scale.is_some() {
        subresources.push(json!({"subresource": "scale",
            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
            "verbs": SUBRESOURCE_VERBS}));
    }
    if r.finalize_subresource {
        subresources.push(json!({"subresource": "finalize", "responseKind": kind,
                                 "verbs": FINALIZE_VERBS}));
    }
    if !subresources.is_empty() {
        out["subresources"] = json!(subresources);
    }
    out
}

/// `GET /version`: kube's `version.Info` at the API level this server implements (A.14).
pub async fn version(_state: &AppState, _req: &HttpRequest) -> Result<HttpResponse, ApiError> {
    respond(
        StatusCode::OK,
        crate::http::codec::Format::Json,
        &json!({
            "major": KUBE_MAJOR,
            "minor": KUBE_MINOR,
            "gitVersion": format!("v{KUBE_MAJOR}.{KUBE_MINOR}.0+virt-apiserver.{}", env!("CARGO_PKG_VERSION")),
            "gitCommit": "",
            "gitTreeState": "",
            "buildDate": "",
            "goVersion": "",
            "compiler": "rustc",
            "platform": format!("{}/{}", std::env::consts::OS, go_arch()),
        }),
    )
}

fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_version_hash_matches_kube() {
        // kube-apiserver's hash for apps/v1 Deployment, as a real cluster serves it.
        let res = ResourceInfo {
            group: "apps",
            kind: "Deployment",
            list_kind: "DeploymentList",
            plural: "deployments",
            singular: "deployment",
            ..ResourceInfo::EXAMPLE
        };
        assert_eq!(storage_version_hash(&res), "8aSe+NMegvE=");
    }

    #[test]
    fn subresources_follow_their_kind() {
        let rs = RESOURCES.iter().find(|r| r.scale.is_some()).expect("a kind with scale");
        let entries = serde_json::to_value(api_resources(rs)).unwrap();
        assert_eq!(
            entries[1],
            json!({"name": format!("{}/status", rs.plural), "singularName": "",
                   "namespaced": rs.namespaced, "kind": rs.kind, "verbs": ["get", "patch", "update"]})
        );
        assert_eq!(
            entries[2],
            json!({"name": format!("{}/scale", rs.plural), "singularName": "",
                   "namespaced": rs.namespaced, "group": "autoscaling", "version": "v1",
                   "kind": "Scale", "verbs": ["get", "patch", "update"]})
        );
        assert!(entries[0].get("group").is_none());
        let plain = RESOURCES.iter().find(|r| !r.status_subresource).expect("a kind without");
        assert_eq!(api_resources(plain).len(), 1);
    }
}
