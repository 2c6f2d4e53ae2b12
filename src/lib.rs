//! virt-apiserver: the Kubernetes API for the KubeVirt family of resources on embedded SQLite.
//! See ARCHITECTURE.md for the map of modules.

pub mod api;
pub mod authn;
pub mod authz;
pub mod compress;
pub mod discovery;
pub mod error;
pub mod filters;
pub mod gc;
pub mod generated;
pub mod health;
pub mod kubeconfig;
pub mod limits;
pub mod managed_fields;
pub mod meta;
pub mod openapi;
pub mod recover;
pub mod request_info;
pub mod resource;
pub mod selector;
pub mod server;
pub mod store;
pub mod strict_decoding;
pub mod table;
pub mod tls;
pub mod token;
pub mod validation;
pub mod watch;
