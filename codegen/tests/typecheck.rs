//! Compiles `tests/output/mini.rs` and `tests/output/mini_routes.rs` against a stub of the facades
//! `rt` that `src/generated.rs` and `src/http/routes.rs` declare for them (same names, same
//! signatures, the real `resource.rs` records), and routes requests through `configure` to check
//! paths, spellings, extractors and the 405 fallback. The stubs answer with a line naming the
//! call they got.

#![allow(dead_code)]

/// The generated statics embed `$OUT_DIR` files the golden test has no use for.
macro_rules! include_bytes {
    ($($t:tt)*) => {
        b""
    };
}

#[path = "../../src/resource.rs"]
mod resource;

mod generated {
    // Where `src/generated.rs` declares its facade, beside the include.
    use super::rt;

    include!("output/mini.rs");
}

mod routes {
    // Where `src/http/routes.rs` declares its facade and names the data, beside the include.
    use super::generated::{GROUPS, RESOURCES};
    use super::rt;

    include!("output/mini_routes.rs");
}

/// Stands in for both facades, `src/generated.rs`'s `rt` and `src/http/routes.rs`'s:
/// `facades_match_the_main_crate` holds them to the names each module uses.
mod rt {
    pub use crate::resource::{
        Allowed, Cell, DataMap, DataRules, DefaultClass, Exception, GroupInfo, ImmutableFlag,
        KubeRole, OpenApiV3Doc, Printer, PrinterColumn, RequiredKeys, ResourceInfo, ScaleInfo,
        SelectableField, SizeLimit, UpdateRule, ValueFormat, WriteOnly,
    };
    use actix_web::web::Bytes;
    use actix_web::HttpRequest;

    pub struct AppState;

    #[derive(Debug)]
    pub struct ApiError;

    impl std::fmt::Display for ApiError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("stub")
        }
    }

    impl actix_web::ResponseError for ApiError {}

    type Answer = Result<actix_web::HttpResponse, ApiError>;

    fn answer(line: String) -> Answer {
        Ok(actix_web::HttpResponse::Ok().body(line))
    }

    // The generic verbs.
    pub struct Target {
        namespace: Option<String>,
        name: Option<String>,
    }

    impl Target {
        pub fn new(namespace: Option<String>, name: Option<String>) -> Target {
            Target { namespace, name }
        }
    }

    fn line(verb: &str, res: &ResourceInfo, t: &Target, body: Option<&Bytes>) -> Answer {
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
        let body = body.map(|b| format!(" body={}", b.len())).unwrap_or_default();
        let (ns, name) = (opt(&t.namespace), opt(&t.name));
        answer(format!("{verb} {}/{} {} {ns} {name}{body}", res.group, res.version, res.kind))
    }

    pub async fn list(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
    ) -> Answer {
        line("list", res, &t, None)
    }
    pub async fn get(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
    ) -> Answer {
        line("get", res, &t, None)
    }
    pub async fn watch(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
    ) -> Answer {
        line("watch", res, &t, None)
    }
    pub async fn create(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
        b: Bytes,
    ) -> Answer {
        line("create", res, &t, Some(&b))
    }
    pub async fn update(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
        b: Bytes,
    ) -> Answer {
        line("update", res, &t, Some(&b))
    }
    pub async fn patch(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
        b: Bytes,
    ) -> Answer {
        line("patch", res, &t, Some(&b))
    }
    pub async fn delete(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
        b: Bytes,
    ) -> Answer {
        line("delete", res, &t, Some(&b))
    }
    pub async fn delete_collection(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
        b: Bytes,
    ) -> Answer {
        line("deletecollection", res, &t, Some(&b))
    }
    pub async fn get_status(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
    ) -> Answer {
        line("get_status", res, &t, None)
    }
    pub async fn update_status(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
        b: Bytes,
    ) -> Answer {
        line("update_status", res, &t, Some(&b))
    }
    // The `x-virt-action` calls.
    pub async fn action(
        _: &AppState,
        res: &'static ResourceInfo,
        name: &'static str,
        t: Target,
        _: &HttpRequest,
        b: Bytes,
    ) -> Answer {
        line(&format!("action {name}"), res, &t, Some(&b))
    }
    pub async fn action_read(
        _: &AppState,
        res: &'static ResourceInfo,
        name: &'static str,
        t: Target,
        args: &[(&str, &str)],
        _: &HttpRequest,
        _: actix_web::web::Payload,
    ) -> Answer {
        line(&format!("action_read {name} {args:?}"), res, &t, None)
    }
    pub async fn update_finalize(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
        b: Bytes,
    ) -> Answer {
        line("update_finalize", res, &t, Some(&b))
    }
    pub async fn create_binding(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
        b: Bytes,
    ) -> Answer {
        line("create_binding", res, &t, Some(&b))
    }
    pub async fn create_eviction(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
        b: Bytes,
    ) -> Answer {
        line("create_eviction", res, &t, Some(&b))
    }
    pub async fn get_log(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
    ) -> Answer {
        line("get_log", res, &t, None)
    }
    pub async fn patch_status(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
        b: Bytes,
    ) -> Answer {
        line("patch_status", res, &t, Some(&b))
    }
    pub async fn get_scale(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
    ) -> Answer {
        line("get_scale", res, &t, None)
    }
    pub async fn update_scale(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
        b: Bytes,
    ) -> Answer {
        line("update_scale", res, &t, Some(&b))
    }
    pub async fn patch_scale(
        _: &AppState,
        res: &'static ResourceInfo,
        t: Target,
        _: &HttpRequest,
        b: Bytes,
    ) -> Answer {
        line("patch_scale", res, &t, Some(&b))
    }
    pub fn method_not_allowed(res: &'static ResourceInfo, req: &HttpRequest) -> Answer {
        answer(format!("405 {} {}/{} {}", req.method(), res.group, res.version, res.kind))
    }

    // The `x-virt-handler` handlers.
    pub async fn root(_: &AppState, _: &HttpRequest) -> Answer {
        answer("root".into())
    }
    pub async fn api(_: &AppState, _: &HttpRequest) -> Answer {
        answer("api".into())
    }
    pub async fn apis(_: &AppState, _: &HttpRequest) -> Answer {
        answer("apis".into())
    }
    pub async fn api_group(_: &AppState, _: &HttpRequest, g: &'static GroupInfo) -> Answer {
        answer(format!("group {} {:?}", g.name, g.versions))
    }
    pub async fn api_resources(
        _: &AppState,
        _: &HttpRequest,
        g: &'static GroupInfo,
        v: &'static str,
    ) -> Answer {
        answer(format!("resources {}/{v}", g.name))
    }
    pub async fn version(_: &AppState, _: &HttpRequest) -> Answer {
        answer("version".into())
    }
    pub async fn ping(_: &AppState, req: &HttpRequest) -> Answer {
        answer(format!("ping {}", req.path()))
    }
    pub async fn ready(_: &AppState, req: &HttpRequest) -> Answer {
        answer(format!("ready {}", req.path()))
    }
    pub async fn store_probe(_: &AppState, _: &HttpRequest) -> Answer {
        answer("store probe".into())
    }
    pub async fn reset(_: &AppState, _: &HttpRequest) -> Answer {
        answer("reset".into())
    }
    pub async fn openapi_v2(_: &AppState, _: &HttpRequest) -> Answer {
        answer("openapi v2".into())
    }
    pub async fn openapi_v3_index(_: &AppState, _: &HttpRequest) -> Answer {
        answer("openapi v3 index".into())
    }
    pub async fn openapi_v3_document(
        _: &AppState,
        _: &HttpRequest,
        group: String,
        version: String,
    ) -> Answer {
        answer(format!("openapi v3 {group}/{version}"))
    }
}

#[actix_web::test]
async fn routes_reach_the_expected_calls() {
    use actix_web::{test, web, App};
    let app = test::init_service(
        App::new().app_data(web::Data::new(rt::AppState)).configure(routes::configure),
    )
    .await;
    let zoo = "/apis/zoo.example.io";
    let cases = [
        ("GET", "/".to_string(), "root"),
        ("GET", "/api".into(), "api"),
        ("GET", "/api/".into(), "api"),
        ("GET", "/apis/".into(), "apis"),
        ("GET", "/version".into(), "version"),
        ("GET", "/readyz".into(), "ready /readyz"),
        ("GET", "/openapi/v3".into(), "openapi v3 index"),
        ("GET", "/openapi/v3/apis/zoo.example.io/v1".into(), "openapi v3 zoo.example.io/v1"),
        ("GET", zoo.into(), r#"group zoo.example.io ["v1", "v1beta1"]"#),
        ("GET", format!("{zoo}/"), r#"group zoo.example.io ["v1", "v1beta1"]"#),
        ("GET", format!("{zoo}/v1beta1"), "resources zoo.example.io/v1beta1"),
        ("GET", format!("{zoo}/v1/"), "resources zoo.example.io/v1"),
        ("GET", format!("{zoo}/v1beta1/healthz"), "store probe"),
        ("GET", format!("{zoo}/v1/namespaces/ns1/animals"), "list zoo.example.io/v1 Animal ns1 -"),
        ("GET", format!("{zoo}/v1beta1/animals"), "list zoo.example.io/v1beta1 Animal - -"),
        (
            "POST",
            format!("{zoo}/v1/namespaces/ns1/animals"),
            "create zoo.example.io/v1 Animal ns1 - body=2",
        ),
        (
            "DELETE",
            format!("{zoo}/v1/namespaces/ns1/animals"),
            "deletecollection zoo.example.io/v1 Animal ns1 - body=2",
        ),
        ("GET", format!("{zoo}/v1/namespaces/ns1/animals/a"), "get zoo.example.io/v1 Animal ns1 a"),
        (
            "PUT",
            format!("{zoo}/v1beta1/namespaces/ns1/animals/a"),
            "update zoo.example.io/v1beta1 Animal ns1 a body=2",
        ),
        (
            "PATCH",
            format!("{zoo}/v1/namespaces/ns1/animals/a"),
            "patch zoo.example.io/v1 Animal ns1 a body=2",
        ),
        (
            "DELETE",
            format!("{zoo}/v1/namespaces/ns1/animals/a"),
            "delete zoo.example.io/v1 Animal ns1 a body=2",
        ),
        (
            "GET",
            format!("{zoo}/v1/watch/namespaces/ns1/animals"),
            "watch zoo.example.io/v1 Animal ns1 -",
        ),
        (
            "GET",
            format!("{zoo}/v1/watch/namespaces/ns1/animals/a"),
            "watch zoo.example.io/v1 Animal ns1 a",
        ),
        ("GET", format!("{zoo}/v1/watch/animals"), "watch zoo.example.io/v1 Animal - -"),
        ("GET", format!("{zoo}/v1/enclosures/e"), "get zoo.example.io/v1 Enclosure - e"),
        ("GET", format!("{zoo}/v1/watch/enclosures/e"), "watch zoo.example.io/v1 Enclosure - e"),
        (
            "GET",
            format!("{zoo}/v1/enclosures/e/status"),
            "get_status zoo.example.io/v1 Enclosure - e",
        ),
        (
            "PUT",
            format!("{zoo}/v1/enclosures/e/status"),
            "update_status zoo.example.io/v1 Enclosure - e body=2",
        ),
        (
            "PATCH",
            format!("{zoo}/v1/enclosures/e/status"),
            "patch_status zoo.example.io/v1 Enclosure - e body=2",
        ),
        (
            "GET",
            format!("{zoo}/v1/enclosures/e/scale"),
            "get_scale zoo.example.io/v1 Enclosure - e",
        ),
        (
            "PUT",
            format!("{zoo}/v1/enclosures/e/scale"),
            "update_scale zoo.example.io/v1 Enclosure - e body=2",
        ),
        (
            "PATCH",
            format!("{zoo}/v1/enclosures/e/scale"),
            "patch_scale zoo.example.io/v1 Enclosure - e body=2",
        ),
        (
            "DELETE",
            format!("{zoo}/v1/enclosures/e/status"),
            "405 DELETE zoo.example.io/v1 Enclosure",
        ),
        ("POST", format!("{zoo}/v1/enclosures/e/scale"), "405 POST zoo.example.io/v1 Enclosure"),
        ("PUT", format!("{zoo}/v1/namespaces/ns1/animals"), "405 PUT zoo.example.io/v1 Animal"),
        ("POST", format!("{zoo}/v1/enclosures/e"), "405 POST zoo.example.io/v1 Enclosure"),
        (
            "PUT",
            "/apis/actions.example.io/v1/namespaces/ns1/animals/a/feed".into(),
            "action feed zoo.example.io/v1 Animal ns1 a body=2",
        ),
        (
            "GET",
            "/apis/actions.example.io/v1/namespaces/ns1/animals/a/mood".into(),
            "action_read mood [] zoo.example.io/v1 Animal ns1 a",
        ),
        (
            "POST",
            "/apis/actions.example.io/v1/namespaces/ns1/animals/a/feed".into(),
            "405 POST zoo.example.io/v1 Animal",
        ),
        (
            "POST",
            "/apis/tickets.example.io/v1alpha1/namespaces/ns1/ticketrequests".into(),
            "create tickets.example.io/v1alpha1 TicketRequest ns1 - body=2",
        ),
        (
            "GET",
            "/apis/tickets.example.io/v1alpha1/namespaces/ns1/ticketrequests".into(),
            "405 GET tickets.example.io/v1alpha1 TicketRequest",
        ),
    ];
    for (method, uri, expected) in cases {
        let req = test::TestRequest::default()
            .method(method.parse().unwrap())
            .uri(&uri)
            .set_payload("{}")
            .to_request();
        let body = test::call_and_read_body(&app, req).await;
        assert_eq!(std::str::from_utf8(&body).unwrap(), expected, "{method} {uri}");
    }
}

#[test]
fn statics_hold_the_fixture() {
    let kinds: Vec<_> = generated::RESOURCES.iter().map(|r| (r.version, r.kind)).collect();
    assert_eq!(
        kinds,
        [
            ("v1", "Animal"),
            ("v1", "Enclosure"),
            ("v1beta1", "Animal"),
            ("v1alpha1", "TicketRequest")
        ]
    );
    let subresources: Vec<_> = generated::RESOURCES
        .iter()
        .map(|r| (r.status_subresource, r.scale.as_ref().map(|s| s.spec_replicas_path)))
        .collect();
    assert_eq!(
        subresources,
        [(false, None), (true, Some(".spec.replicas")), (false, None), (false, None)]
    );
    assert!(generated::RESOURCES.iter().all(|r| r.storage_version
        == generated::GROUPS.iter().find(|g| g.name == r.group).unwrap().versions[0]));
    let actions = generated::GROUPS.iter().find(|g| g.name == "actions.example.io").unwrap();
    assert_eq!(actions.versions, ["v1"]);
    assert_eq!(actions.listed, [("v1", &["animals/feed", "animals/mood", "animals/groom"][..])]);
    let v3: Vec<_> = generated::OPENAPI_V3.iter().map(|d| d.path).collect();
    assert_eq!(
        v3,
        [
            "apis/zoo.example.io/v1",
            "apis/zoo.example.io/v1beta1",
            "apis/tickets.example.io/v1alpha1",
            "apis/actions.example.io/v1"
        ]
    );
}

/// Each facade the main crate declares (its `use` leaves, under their re-exported names) must be
/// exactly what its golden output names through `self::rt::`: nothing missing, which would break
/// the main crate's build, and nothing stale. The fixture exercises every name emit can produce.
#[test]
fn facades_match_the_main_crate() {
    fn leaves(tree: &syn::UseTree, out: &mut std::collections::BTreeSet<String>) {
        match tree {
            syn::UseTree::Path(p) => leaves(&p.tree, out),
            syn::UseTree::Name(n) => drop(out.insert(n.ident.to_string())),
            syn::UseTree::Rename(r) => drop(out.insert(r.rename.to_string())),
            syn::UseTree::Group(g) => g.items.iter().for_each(|t| leaves(t, out)),
            syn::UseTree::Glob(_) => panic!("the facade lists its names, no globs"),
        }
    }
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    for (module, golden) in [
        ("src/generated.rs", include_str!("output/mini.rs")),
        ("src/http/routes.rs", include_str!("output/mini_routes.rs")),
    ] {
        let source = std::fs::read_to_string(dir.join("..").join(module)).unwrap();
        let file = syn::parse_file(&source).unwrap();
        let rt = file.items.iter().find_map(|item| match item {
            syn::Item::Mod(m) if m.ident == "rt" => m.content.as_ref(),
            _ => None,
        });
        let (_, items) = rt.unwrap_or_else(|| panic!("{module} declares `mod rt`"));
        let mut facade = std::collections::BTreeSet::new();
        for item in items {
            let syn::Item::Use(u) = item else { panic!("the facade holds only `use` items") };
            leaves(&u.tree, &mut facade);
        }
        let named: std::collections::BTreeSet<String> = golden
            .split("self::rt::")
            .skip(1)
            .map(|rest| {
                rest.split(|c: char| !c.is_alphanumeric() && c != '_').next().unwrap().into()
            })
            .collect();
        assert_eq!(facade, named, "left: {module}'s `rt`, right: what codegen names");
    }
}
