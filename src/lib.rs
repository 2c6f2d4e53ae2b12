//! virt-apiserver: the Kubernetes API for the KubeVirt family of resources on embedded SQLite.
//! See ARCHITECTURE.md for the layers and what each may import.
//!
//! The modules are private; what the binary, the tests, the benchmark and the fuzz targets use
//! is re-exported below, and nothing else is public.

mod behaviour;
mod controllers;
mod generated;
mod http;
mod object;
mod registry;
pub mod resource;
mod shell;
mod store;

/// KubeVirt's simulated controllers, whose configuration `Config` carries.
pub use behaviour::simulate;
/// The served document's groups and kinds, and the document itself.
pub use generated::{GROUPS, OPENAPI_V2, OPENAPI_V2_PB, RESOURCES};
/// Serving: access control and the HTTP server (`server::run_with`), as `Config` holds them.
pub use http::{authn, authz, filters, kubeconfig, server, tls};
/// Wire formats the fuzz targets drive.
pub use http::{codec::decode_body, params::ContinueToken};
/// Pure object semantics the tests and the fuzz targets drive directly.
pub use object::{defaults, duration, limits, meta, patch, selector, strict_decoding, validation};
/// Create-only token requests' signed answers.
pub use registry::token;
/// The flags, the configuration they validate into, and a complete server run from it (the
/// background work included).
pub use shell::config::{Config, Options};
pub use shell::{commands::Command, run::run, run::start, run::Error as RunError, run::Running};
/// The scanner served bytes are spliced with (a JSON value's end, found by its structure), which
/// the benchmark counts list pages with.
pub mod json {
    pub use crate::store::json_value_end as value_end;
}
/// The store the binary opens, and its file's maintenance (`check`, `backup`, `restore`).
pub mod storage {
    pub use crate::store::etcd::harness::TestEtcd;
    pub use crate::store::sqlite::files;
    pub use crate::store::{EtcdConfig, QueueLimits, RetentionConfig, Store, StoreConfig};
}
