//! virt-apiserver: the Kubernetes API for the KubeVirt family of resources on embedded SQLite.
//! See ARCHITECTURE.md for the map of modules.

pub mod generated;
pub mod resource;
pub mod store;
pub mod watch;
