//! The HTTP layer, the only place actix appears: the server and its filter chain, request
//! options and media types, the endpoints the generated routes call, discovery, OpenAPI and
//! health.

pub mod authn;
pub mod authz;
pub mod codec;
pub mod compress;
pub mod discovery;
pub mod endpoints;
pub mod error;
pub mod extract;
pub mod faults;
pub mod filters;
pub mod health;
pub mod kubeconfig;
pub mod openapi;
pub mod outermost;
pub mod params;
pub mod request_info;
pub mod reset;
pub mod routes;
pub mod server;
pub mod shutdown;
pub mod state;
pub mod tls;
