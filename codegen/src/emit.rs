//! Turns the IR into the generated Rust: the document's data (the per-kind statics) and, apart,
//! its routes (`configure` and one thin handler per operation), so the data sits below every
//! layer and the routes in the HTTP layer.
//!
//! Everything emitted is data or glue: a handler extracts its path parameters and calls the
//! hand-written function for its action with `&RESOURCES[i]`. Both modules name hand-written
//! items only as `self::rt::<name>`: `rt` is the facade each including module declares beside
//! its `include!` (`src/generated.rs` for the data, `src/http/routes.rs` for the routes), so
//! moving an item in the main crate changes a facade, not this file. The routes name the data's
//! `RESOURCES` and `GROUPS` as they are, which their including module brings into scope. Other
//! paths are absolute (`::actix_web`, `::std`), so the modules need no other `use` items and
//! cannot clash with the including crate.
//!
//! The names the data's `rt` must provide: the records `GroupInfo`, `ResourceInfo`,
//! `PrinterColumn`, `ScaleInfo`, `OpenApiV3Doc` and theirs. The routes' `rt`: `AppState` and
//! `ApiError`; the verbs `list`, `get`, `watch`, `create`, `update`, `patch`, `delete`,
//! `delete_collection`, `{get,update,patch}_status`, `{get,update,patch}_scale`,
//! `method_not_allowed` and `Target`; `action` and `action_read` for `x-virt-action`
//! operations; and one function per `x-virt-handler`, named in snake_case (`api_group`,
//! `openapi_v3_document`, ...).

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::{format_ident, quote};

use crate::model::{Action, Api, Handler, Operation, OperationKind, Resource, Route, Subresource};
use crate::swagger::Method;

/// The two formatted modules, as `prettyplease` prints them.
#[derive(Debug, Clone)]
pub struct Rendered {
    /// The statics: `GROUPS`, `RESOURCES`, the OpenAPI documents.
    pub data: String,
    /// `configure` and the handlers.
    pub routes: String,
}

/// Both modules, formatted.
pub fn render(api: &Api) -> Result<Rendered, String> {
    Ok(Rendered { data: unparse(data_tokens(api))?, routes: unparse(routes_tokens(api))? })
}

fn unparse(tokens: TokenStream) -> Result<String, String> {
    let file: syn::File =
        syn::parse2(tokens).map_err(|e| format!("generated code does not parse: {e}"))?;
    Ok(prettyplease::unparse(&file))
}

/// Key of a group-version in the `/openapi/v3` index, and its file under `$OUT_DIR/openapi-v3/`.
pub fn openapi_v3_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// The data module's tokens.
pub fn data_tokens(api: &Api) -> TokenStream {
    let groups = api.groups.iter().map(|g| {
        let name = &g.name;
        let versions = &g.versions;
        let listed = g.listed.iter().map(|(v, names)| quote!((#v, &[#(#names),*])));
        quote! {
            self::rt::GroupInfo { name: #name, versions: &[#(#versions),*], listed: &[#(#listed),*] }
        }
    });
    let resources = api.resources.iter().map(resource);
    let v3 = api.groups.iter().flat_map(|g| {
        g.versions.iter().map(|v| {
            let path = openapi_v3_path(&g.name, v);
            let file = format!("/openapi-v3/{path}.json");
            quote! {
                self::rt::OpenApiV3Doc {
                    path: #path,
                    json: include_bytes!(concat!(env!("OUT_DIR"), #file)),
                }
            }
        })
    });
    quote! {
        /// Every API group, in `/apis` order; versions preferred first.
        pub static GROUPS: &[self::rt::GroupInfo] = &[#(#groups),*];
        /// Every kind in every version: groups in order, versions preferred first, kinds in document order.
        pub static RESOURCES: &[self::rt::ResourceInfo] = &[#(#resources),*];
        /// The OpenAPI v2 document, byte for byte as checked in.
        pub static OPENAPI_V2: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/openapi-v2.json"));
        /// The same document as gnostic's `openapi.v2.Document` protobuf, encoded at build time.
        pub static OPENAPI_V2_PB: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/openapi-v2.pb"));
        /// One OpenAPI v3 document per group-version, derived from the v2 document at build time.
        pub static OPENAPI_V3: &[self::rt::OpenApiV3Doc] = &[#(#v3),*];
    }
}

/// The routes module's tokens.
pub fn routes_tokens(api: &Api) -> TokenStream {
    let services = services(&api.routes);
    let handlers =
        api.routes.iter().flat_map(|r| r.operations.iter().map(move |op| handler(api, r, op)));
    quote! {
        /// Registers one `web::resource` per document path, those below a group-version in
        /// that group-version's `web::scope`.
        pub fn configure(cfg: &mut ::actix_web::web::ServiceConfig) {
            #services
        }
        #(#handlers)*
    }
}

fn resource(r: &Resource) -> TokenStream {
    let Resource {
        group,
        version,
        storage_version,
        kind,
        list_kind,
        plural,
        singular,
        namespaced,
        short_names,
        categories,
        verbs,
        printer_columns,
        token_field,
        status_subresource,
        scale,
        finalize_subresource,
        binding_subresource,
        eviction_subresource,
        log_subresource,
        selectable_fields,
        namespaces,
        events,
        dns_subdomain_names,
        dns1035_label_names,
        kube_role,
        service_addresses,
        data_rules,
        generation,
        strategic_merge_patch,
        update_rules,
        default_class,
        definition: _,
    } = r;
    let kube_role = option(kube_role.map(|r| {
        let variant = format_ident!("{}", r.variant());
        quote!(self::rt::KubeRole::#variant)
    }));
    let columns = printer_columns.iter().map(|c| {
        let (name, type_, format, description, priority, json_path) = (
            &c.name,
            &c.type_,
            &c.format,
            &c.description,
            Literal::i32_unsuffixed(c.priority),
            &c.json_path,
        );
        let computed = option(c.cell.as_ref().map(|cell| {
            let cell = cell_tokens(cell);
            quote!(&#cell)
        }));
        quote! {
            self::rt::PrinterColumn {
                name: #name,
                type_: #type_,
                format: #format,
                description: #description,
                priority: #priority,
                json_path: #json_path,
                cell: #computed,
            }
        }
    });
    let token_field = option(token_field.as_deref().map(|f| quote!(#f)));
    let scale = option(scale.as_ref().map(|s| {
        let (spec, status) = (&s.spec_replicas, &s.status_replicas);
        let selector = option(s.label_selector.as_deref().map(|p| quote!(#p)));
        quote! {
            self::rt::ScaleInfo {
                spec_replicas_path: #spec,
                status_replicas_path: #status,
                label_selector_path: #selector,
            }
        }
    }));
    let selectable = selectable_fields.iter().map(|f| {
        let (name, json_path, missing) = (&f.name, &f.json_path, &f.missing);
        quote!(self::rt::SelectableField { name: #name, json_path: #json_path, missing: #missing })
    });
    let data_rules = option(data_rules.as_ref().map(|d| {
        let rules = data_rules_tokens(d);
        quote!(&#rules)
    }));
    let update_rules = update_rules.iter().map(update_rule_tokens);
    let default_class = option(default_class.as_ref().map(|c| {
        let (field, group, plural, skip) = (&c.field, &c.group, &c.plural, &c.skip_annotation);
        let annotations = &c.annotations;
        quote! {
            self::rt::DefaultClass {
                field: #field,
                group: #group,
                plural: #plural,
                annotations: &[#(#annotations),*],
                skip_annotation: #skip,
            }
        }
    }));
    quote! {
        self::rt::ResourceInfo {
            group: #group,
            version: #version,
            storage_version: #storage_version,
            kind: #kind,
            list_kind: #list_kind,
            plural: #plural,
            singular: #singular,
            namespaced: #namespaced,
            short_names: &[#(#short_names),*],
            categories: &[#(#categories),*],
            verbs: &[#(#verbs),*],
            printer_columns: &[#(#columns),*],
            token_field: #token_field,
            status_subresource: #status_subresource,
            scale: #scale,
            finalize_subresource: #finalize_subresource,
            binding_subresource: #binding_subresource,
            eviction_subresource: #eviction_subresource,
            log_subresource: #log_subresource,
            selectable_fields: &[#(#selectable),*],
            namespaces: #namespaces,
            events: #events,
            dns_subdomain_names: #dns_subdomain_names,
            dns1035_label_names: #dns1035_label_names,
            kube_role: #kube_role,
            service_addresses: #service_addresses,
            data_rules: #data_rules,
            generation: #generation,
            strategic_merge_patch: #strategic_merge_patch,
            update_rules: &[#(#update_rules),*],
            default_class: #default_class,
        }
    }
}

/// One `x-virt-resource.updateRules` entry as a constant `rt::UpdateRule`.
fn update_rule_tokens(r: &crate::model::UpdateRule) -> TokenStream {
    use crate::model::{Allowed, UpdateRule};
    match r {
        UpdateRule::Immutable { at, field, message, invalid, once } => quote! {
            self::rt::UpdateRule::Immutable {
                at: #at, field: #field, message: #message, invalid: #invalid, once: #once,
            }
        },
        UpdateRule::SameLength { at, field, message } => quote! {
            self::rt::UpdateRule::SameLength { at: #at, field: #field, message: #message }
        },
        UpdateRule::OnlyAdditions { at, field, ignoring, message } => quote! {
            self::rt::UpdateRule::OnlyAdditions {
                at: #at, field: #field, ignoring: &[#(#ignoring),*], message: #message,
            }
        },
        UpdateRule::OnlyLowered { at, field } => quote! {
            self::rt::UpdateRule::OnlyLowered { at: #at, field: #field }
        },
        UpdateRule::NotBelow { at, field, floor, message } => quote! {
            self::rt::UpdateRule::NotBelow { at: #at, field: #field, floor: #floor, message: #message }
        },
        UpdateRule::Frozen { at, only, except, field, message, diff } => {
            let except = except.iter().map(|e| {
                let path = &e.path;
                let when = match &e.when {
                    Allowed::Always => quote!(self::rt::Allowed::Always),
                    Allowed::OldUnset => quote!(self::rt::Allowed::OldUnset),
                    Allowed::SetOnce => quote!(self::rt::Allowed::SetOnce),
                    Allowed::NegativeToOne => quote!(self::rt::Allowed::NegativeToOne),
                    Allowed::FieldEquals(f, v) => quote!(self::rt::Allowed::FieldEquals(#f, #v)),
                };
                quote!(self::rt::Exception { path: #path, when: #when })
            });
            quote! {
                self::rt::UpdateRule::Frozen {
                    at: #at,
                    only: &[#(#only),*],
                    except: &[#(#except),*],
                    field: #field,
                    message: #message,
                    diff: #diff,
                }
            }
        }
    }
}

/// `x-virt-resource.dataRules` as a constant `rt::DataRules`.
fn data_rules_tokens(d: &crate::model::DataRules) -> TokenStream {
    let maps = |maps: &[crate::model::DataMap]| {
        let maps = maps.iter().map(|m| {
            let (field, base64) = (&m.field, m.base64);
            quote!(self::rt::DataMap { field: #field, base64: #base64 })
        });
        quote!(&[#(#maps),*])
    };
    let key_maps = maps(&d.key_maps);
    let size = option(d.max_total_size.as_ref().map(|s| {
        let (list, field) = (maps(&s.maps), &s.field);
        let bytes = Literal::usize_unsuffixed(s.bytes as usize);
        quote!(self::rt::SizeLimit { maps: #list, bytes: #bytes, field: #field })
    }));
    let write_only = d.write_only.iter().map(|w| {
        let (field, into, base64) = (&w.field, &w.into, w.base64);
        quote!(self::rt::WriteOnly { field: #field, into: #into, base64: #base64 })
    });
    let immutable = &d.immutable_after_create;
    let flag = option(d.immutable_flag.as_ref().map(|f| {
        let (field, freezes) = (&f.field, &f.freezes);
        quote!(self::rt::ImmutableFlag { field: #field, freezes: &[#(#freezes),*] })
    }));
    let required = d.required_keys.iter().map(|r| {
        let (when_field, equals, map, base64) = (&r.when_field, &r.equals, &r.map, r.base64);
        let (keys, any, non_empty) = (&r.keys, r.any, r.non_empty);
        let format = option(r.json.then(|| quote!(self::rt::ValueFormat::Json)));
        quote! {
            self::rt::RequiredKeys {
                when_field: #when_field,
                equals: #equals,
                map: #map,
                base64: #base64,
                keys: &[#(#keys),*],
                any: #any,
                non_empty: #non_empty,
                format: #format,
            }
        }
    });
    quote! {
        self::rt::DataRules {
            key_maps: #key_maps,
            max_total_size: #size,
            write_only: &[#(#write_only),*],
            immutable_after_create: &[#(#immutable),*],
            immutable_flag: #flag,
            required_keys: &[#(#required),*],
        }
    }
}

/// A computed cell as a constant expression of `rt::Cell`s.
fn cell_tokens(cell: &crate::model::Cell) -> TokenStream {
    use crate::model::Cell;
    let list = |cells: &[Cell]| {
        let items = cells.iter().map(cell_tokens);
        quote!(&[#(#items),*])
    };
    match cell {
        Cell::Path(p) => quote!(self::rt::Cell::Path(#p)),
        Cell::Int(n) => {
            let n = Literal::i64_unsuffixed(*n);
            quote!(self::rt::Cell::Int(#n))
        }
        Cell::Str(s) => quote!(self::rt::Cell::Str(#s)),
        Cell::Bool(b) => quote!(self::rt::Cell::Bool(#b)),
        Cell::FirstOf(cells) => {
            let l = list(cells);
            quote!(self::rt::Cell::FirstOf(#l))
        }
        Cell::Count(cells) => {
            let l = list(cells);
            quote!(self::rt::Cell::Count(#l))
        }
        Cell::Lower(inner) => {
            let inner = cell_tokens(inner);
            quote!(self::rt::Cell::Lower(&#inner))
        }
        Cell::Join(sep, cells) => {
            let l = list(cells);
            quote!(self::rt::Cell::Join(#sep, #l))
        }
        Cell::Age(inner) => {
            let inner = cell_tokens(inner);
            quote!(self::rt::Cell::Age(&#inner))
        }
        Cell::Printer(name) => {
            let mut chars = name.chars();
            let first = chars.next().map(|c| c.to_ascii_uppercase()).into_iter();
            let variant = format_ident!("{}", first.chain(chars).collect::<String>());
            quote!(self::rt::Cell::Printer(self::rt::Printer::#variant))
        }
    }
}

fn option(value: Option<TokenStream>) -> TokenStream {
    match value {
        Some(v) => quote!(::std::option::Option::Some(#v)),
        None => quote!(::std::option::Option::None),
    }
}

fn ident(name: &str) -> Ident {
    Ident::new(name, Span::call_site())
}

/// The static prefix (`/apis/{group}/{version}`; two segments elsewhere: `/api/v1`) a route's paths sit
/// below, if they all do.
fn scope_of(route: &Route) -> Option<String> {
    let depth = if route.path.starts_with("/apis/") { 3 } else { 2 };
    let prefix: Vec<&str> = route.path.split('/').skip(1).take(depth).collect();
    if prefix.len() < depth || prefix.iter().any(|s| s.is_empty() || s.contains('{')) {
        return None;
    }
    let prefix = format!("/{}", prefix.join("/"));
    let below = |p: &String| {
        p.strip_prefix(&prefix).is_some_and(|rest| rest.len() > 1 && rest.starts_with('/'))
    };
    route.patterns.iter().all(below).then_some(prefix)
}

/// Routes below a group-version go in one `web::scope` each: actix tries a request against every
/// registered pattern in turn, so a scope's static prefix, checked once, spares the patterns of
/// every other group-version. The scopes are registered first, as most requests are for
/// resources, and every pattern at or below a scope's prefix is served inside it (its discovery
/// document as `""` and `"/"`): a scope matches its own prefix too, so nothing registered after
/// it could. actix pays for each pattern it tries, static or not, before it finds the one.
fn services(routes: &[Route]) -> TokenStream {
    let mut scopes: Vec<(String, Vec<TokenStream>)> = Vec::new();
    for prefix in routes.iter().filter_map(scope_of) {
        if !scopes.iter().any(|(p, _)| *p == prefix) {
            scopes.push((prefix, Vec::new()));
        }
    }
    let mut top = Vec::new();
    for route in routes {
        // Each pattern goes where actix routes a request for it.
        let mut places: Vec<(Option<usize>, Vec<&str>)> = Vec::new();
        for pattern in &route.patterns {
            let place = scopes.iter().position(|(prefix, _)| at_or_below(pattern, prefix));
            let relative = place.map_or(pattern.as_str(), |i| &pattern[scopes[i].0.len()..]);
            match places.iter_mut().find(|(p, _)| *p == place) {
                Some((_, patterns)) => patterns.push(relative),
                None => places.push((place, vec![relative])),
            }
        }
        for (place, patterns) in places {
            let tokens = resource_services(route, &patterns);
            match place {
                Some(i) => scopes[i].1.extend(tokens),
                None => top.extend(tokens),
            }
        }
    }
    let scopes = scopes.into_iter().map(|(prefix, services)| {
        quote! {
            cfg.service(::actix_web::web::scope(#prefix) #(.service(#services))*);
        }
    });
    quote! {
        #(#scopes)*
        #(cfg.service(#top);)*
    }
}

/// Whether a request for `pattern` reaches the scope of `prefix`.
fn at_or_below(pattern: &str, prefix: &str) -> bool {
    pattern.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The `web::resource`s serving `route` at `patterns`: one resource for all patterns, or one per
/// pattern when they are all static. actix matches a resource of several patterns through a
/// `RegexSet`, where a static pattern is a string comparison.
fn resource_services(route: &Route, patterns: &[&str]) -> Vec<TokenStream> {
    if patterns.len() > 1 && patterns.iter().all(|p| !p.contains('{')) {
        return patterns.iter().map(|p| resource_service(route, &quote!(#p))).collect();
    }
    let pattern = match patterns {
        [one] => quote!(#one),
        many => quote!([#(#many),*]),
    };
    vec![resource_service(route, &pattern)]
}

/// One `web::resource` for `pattern` (a string or an array of them) with `route`'s handlers.
fn resource_service(route: &Route, pattern: &TokenStream) -> TokenStream {
    let routes = route.operations.iter().map(|op| {
        let method = ident(match op.method {
            Method::Get => "get",
            Method::Post => "post",
            Method::Put => "put",
            Method::Patch => "patch",
            Method::Delete => "delete",
            Method::Head | Method::Options => {
                unreachable!("lowering rejects {}", op.method.as_str())
            }
        });
        let f = ident(&op.fn_name);
        quote!(.route(::actix_web::web::#method().to(#f)))
    });
    // Resource paths answer other methods with kube's 405 Status; the rest fall through to
    // actix's default.
    let fallback = route.resource.map(|i| {
        let i = Literal::usize_unsuffixed(i);
        quote! {
            .default_service(::actix_web::web::to(|req: ::actix_web::HttpRequest| async move {
                self::rt::method_not_allowed(&RESOURCES[#i], &req)
            }))
        }
    });
    quote! {
        ::actix_web::web::resource(#pattern) #(#routes)* #fallback
    }
}

fn handler(api: &Api, route: &Route, op: &Operation) -> TokenStream {
    let doc = format!(" `{}`: `{} {}`", op.operation_id, op.method.as_str(), route.path);
    let f = ident(&op.fn_name);
    let params: Vec<Ident> = route.params.iter().map(|p| ident(p)).collect();
    let (path_arg, unpack) = if params.is_empty() {
        (None, None)
    } else {
        let strings = params.iter().map(|_| quote!(::std::string::String));
        (
            Some(quote!(path: ::actix_web::web::Path<(#(#strings,)*)>,)),
            Some(quote!(let (#(#params,)*) = path.into_inner();)),
        )
    };
    let (body_arg, call) = match &op.kind {
        OperationKind::Resource { action, resource, namespace, name, subresource } => {
            let namespace = option(namespace.then(|| quote!(namespace)));
            let name = option(name.then(|| quote!(name)));
            let target = quote!(self::rt::Target::new(#namespace, #name));
            let index = Literal::usize_unsuffixed(*resource);
            let res = quote!(&RESOURCES[#index]);
            let func = ident(match (subresource, action) {
                (None, Action::List) => "list",
                (None, Action::Get) => "get",
                (None, Action::Watch | Action::WatchList) => "watch",
                (None, Action::Post) => "create",
                (None, Action::Put) => "update",
                (None, Action::Patch) => "patch",
                (None, Action::Delete) => "delete",
                (None, Action::DeleteCollection) => "delete_collection",
                (Some(Subresource::Status), Action::Get) => "get_status",
                (Some(Subresource::Status), Action::Put) => "update_status",
                (Some(Subresource::Status), Action::Patch) => "patch_status",
                (Some(Subresource::Scale), Action::Get) => "get_scale",
                (Some(Subresource::Scale), Action::Put) => "update_scale",
                (Some(Subresource::Scale), Action::Patch) => "patch_scale",
                (Some(Subresource::Finalize), Action::Put) => "update_finalize",
                (Some(Subresource::Binding), Action::Post) => "create_binding",
                (Some(Subresource::Eviction), Action::Post) => "create_eviction",
                (Some(Subresource::Log), Action::Get) => "get_log",
                (Some(s), a) => unreachable!("lowering rejects {} on {}", a.as_str(), s.as_str()),
            });
            if matches!(action, Action::List | Action::Get | Action::Watch | Action::WatchList) {
                (None, quote!(self::rt::#func(&state, #res, #target, &req)))
            } else {
                (
                    Some(quote!(body: ::actix_web::web::Bytes,)),
                    quote!(self::rt::#func(&state, #res, #target, &req, body)),
                )
            }
        }
        OperationKind::Handler(h) => (None, handler_call(api, h)),
        OperationKind::Action { resource, name, read, named, params } => {
            let index = Literal::usize_unsuffixed(*resource);
            let object = option(named.then(|| quote!(name)));
            let target = quote!(self::rt::Target::new(Some(namespace), #object));
            let values = params.iter().map(|p| ident(p));
            let args = quote!(&[#((#params, #values.as_str()),)*]);
            if *read {
                // A read may be a stream: the upgraded connection's bytes come as its payload.
                (
                    Some(quote!(payload: ::actix_web::web::Payload,)),
                    quote!(self::rt::action_read(&state, &RESOURCES[#index], #name, #target, #args, &req, payload)),
                )
            } else {
                (
                    Some(quote!(body: ::actix_web::web::Bytes,)),
                    quote!(self::rt::action(&state, &RESOURCES[#index], #name, #target, &req, body)),
                )
            }
        }
    };
    quote! {
        #[doc = #doc]
        async fn #f(
            state: ::actix_web::web::Data<self::rt::AppState>,
            req: ::actix_web::HttpRequest,
            #path_arg
            #body_arg
        ) -> ::std::result::Result<::actix_web::HttpResponse, self::rt::ApiError> {
            #unpack
            #call.await
        }
    }
}

fn handler_call(api: &Api, h: &Handler) -> TokenStream {
    match h {
        Handler::Root => quote!(self::rt::root(&state, &req)),
        Handler::Api => quote!(self::rt::api(&state, &req)),
        Handler::Apis => quote!(self::rt::apis(&state, &req)),
        Handler::ApiGroup { group } => {
            let group = Literal::usize_unsuffixed(*group);
            quote!(self::rt::api_group(&state, &req, &GROUPS[#group]))
        }
        Handler::ApiResources { group: g, version } => {
            debug_assert!(api.groups[*g].versions.contains(version));
            let group = Literal::usize_unsuffixed(*g);
            quote!(self::rt::api_resources(&state, &req, &GROUPS[#group], #version))
        }
        Handler::Version => quote!(self::rt::version(&state, &req)),
        Handler::Ping => quote!(self::rt::ping(&state, &req)),
        Handler::Ready => quote!(self::rt::ready(&state, &req)),
        Handler::StoreProbe => quote!(self::rt::store_probe(&state, &req)),
        Handler::Reset => quote!(self::rt::reset(&state, &req)),
        Handler::OpenapiV2 => quote!(self::rt::openapi_v2(&state, &req)),
        Handler::OpenapiV3Index => quote!(self::rt::openapi_v3_index(&state, &req)),
        Handler::OpenapiV3Document { core: false } => {
            quote!(self::rt::openapi_v3_document(&state, &req, group, version))
        }
        Handler::OpenapiV3Document { core: true } => {
            quote!(self::rt::openapi_v3_document(&state, &req, String::new(), version))
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::model::lower;
    use crate::test_doc::TestDoc;

    #[test]
    fn a_subresource_of_another_groups_kind_is_registered_in_its_serving_scope() {
        let mut d = TestDoc::new(&["a.io", "sub.a.io"]);
        d.kind("a.io", "v1", "Thing", "things", true);
        d.subresource_under("sub.a.io", "a.io", "v1", "Thing", "status");
        let api = lower(&serde_json::from_value(d.build()).unwrap()).unwrap();
        let routes = super::render(&api).unwrap().routes;
        let code = routes.split_whitespace().collect::<Vec<_>>().join(" ");
        let scope = |prefix: &str| {
            let start = format!("::actix_web::web::scope(\"{prefix}\")");
            let found = code.split("cfg.service(").find(|s| s.trim_start().starts_with(&start));
            found.unwrap_or_else(|| panic!("no scope {prefix} in:\n{code}")).to_string()
        };
        // Relative to the scope, with the kind's 405s.
        let served = scope("/apis/sub.a.io/v1");
        assert!(served.contains("\"/namespaces/{namespace}/things/{name}/status\""), "{served}");
        assert!(served.contains("self::rt::method_not_allowed(&RESOURCES[0], &req)"), "{served}");
        assert!(!scope("/apis/a.io/v1").contains("/status"));
        // Its handler calls the kind's verb with the kind's record.
        let f = "async fn read_sub_a_io_v1_namespaced_thing_status(";
        let handler = &code[code.find(f).expect("the handler")..];
        assert!(handler.contains("self::rt::get_status( &state, &RESOURCES[0],"), "{handler}");
    }
}
