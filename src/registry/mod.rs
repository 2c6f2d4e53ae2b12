//! The registry: kube's generic registry `Store` without HTTP. Create, update, patch, apply,
//! delete, delete-collection, get and list over typed options, returning objects and typed
//! errors; every write of the server goes through here, whoever makes it.

pub mod keys;
pub mod token;
