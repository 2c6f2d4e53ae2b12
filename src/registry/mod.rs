//! The registry: kube's generic registry `Store` without HTTP. Create, update, patch, apply,
//! delete, delete-collection, get and list over typed options, returning objects and typed
//! errors. Every write of the server goes through here, whoever makes it (the HTTP endpoints,
//! the garbage collector, the namespace controller), and every read-modify-write through one
//! optimistic-concurrency loop (`update::guaranteed_update`). What KubeVirt adds (its webhooks,
//! its action API, its controllers) is the behaviour layer's, above: it reaches the verbs only
//! as a client does, and admission through the `Admission` it hands in.

pub mod addresses;
pub mod admission;
mod allocating;
mod apply;
mod binding;
mod default_class;
mod delete;
mod errors;
mod eviction;
mod handle;
pub mod in_use_protection;
pub mod keys;
pub mod log_source;
mod logs;
pub mod namespaces;
mod options;
mod outcome;
mod read;
mod scale;
mod strategy;
mod target;
pub mod token;
mod update;
mod write;

pub use admission::Admission;
pub use apply::{ApplyOptions, ApplyRequest};
pub use delete::Deleted;
pub use handle::Registry;
pub use log_source::{LogOptions, LogSource};
pub use options::{ContinueToken, DeleteOptions, ListOptions, Propagation, RvMatch, WriteOptions};
pub use outcome::{Change, Object, Outcome};
pub use read::{decode_stored, Page};
pub use scale::ScaleChange;
pub use target::Target;

#[cfg(test)]
mod tests;
