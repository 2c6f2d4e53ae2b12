//! The route table `build.rs` generates from the OpenAPI document: `configure` and one thin
//! handler per operation, each calling an endpoint with its kind's record from the document's
//! data. Print it with `cargo run -p codegen --example dump`.
#![allow(clippy::all, clippy::pedantic, dead_code, unused_imports)]

// The data the handlers hand to the endpoints, named as codegen writes it.
use crate::generated::{GROUPS, RESOURCES};

include!(concat!(env!("OUT_DIR"), "/routes.rs"));

/// The only paths the generated routes name: they say `self::rt::create`, `self::rt::AppState`,
/// and never a module of this crate, so moving a hand-written item changes its line here, not
/// codegen. The list is exactly what codegen emits (`codegen/tests/typecheck.rs` holds it to that).
mod rt {
    // What every handler takes and returns.
    pub(super) use crate::http::state::AppState;
    pub(super) use crate::object::error::ApiError;
    // The generic verbs (`x-kubernetes-action`), their subresource forms and the 405 fallback.
    pub(super) use crate::http::endpoints::{
        action, action_read, create, create_binding, create_eviction, delete, delete_collection,
        get, get_log, get_scale, get_status, list, method_not_allowed, patch, patch_scale,
        patch_status, update, update_finalize, update_scale, update_status, watch, Target,
    };
    // The `x-virt-handler` handlers, each under its handler name in snake_case.
    pub(super) use crate::http::discovery::{
        api, apis, group as api_group, resources as api_resources, root, version,
    };
    pub(super) use crate::http::health::{ping, ready, store_probe};
    pub(super) use crate::http::openapi::{
        v2 as openapi_v2, v3_document as openapi_v3_document, v3_index as openapi_v3_index,
    };
    pub(super) use crate::http::reset::reset;
}
