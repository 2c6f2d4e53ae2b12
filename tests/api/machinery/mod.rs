//! The API machinery on the KubeVirt kinds and kube's core kinds: CRUD, apply, patches,
//! subresources, validation and bad input, Tables, namespaces, Secrets, Events, garbage
//! collection and upload tokens.

mod apply;
mod bad_input;
mod crud;
mod events;
mod gc;
mod namespaces;
mod secrets;
mod strategic_patch;
mod subresources;
mod table;
mod token;
mod validation;
