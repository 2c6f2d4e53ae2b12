//! The registry: kube's generic registry `Store` without HTTP. Create, update, patch, apply,
//! delete, delete-collection, get and list over typed options, returning objects and typed
//! errors. Every write of the server goes through here, whoever makes it (the HTTP endpoints,
//! the garbage collector, the namespace controller), and every read-modify-write through one
//! optimistic-concurrency loop (`update::guaranteed_update`). What KubeVirt adds (its webhooks,
//! its action API, its controllers) is the behaviour layer's, above: it reaches the verbs only
//! as a client does, and admission through the `Admission` it hands in.

pub mod admission;
mod apply;
mod delete;
mod errors;
pub mod keys;
pub mod namespaces;
mod options;
mod read;
mod scale;
mod strategy;
pub mod token;
mod update;
mod write;

use std::sync::Arc;

use serde_json::Value;

pub use admission::Admission;
pub use apply::{ApplyOptions, ApplyRequest};
pub use delete::Deleted;
pub use options::{ContinueToken, DeleteOptions, ListOptions, Propagation, RvMatch};
pub use read::{decode_stored, Page};
pub use scale::ScaleChange;

use crate::object::error::ApiError;
use crate::object::meta_str;
use crate::object::subresource::Part;
use crate::object::validation::FieldValidation;
use crate::store::{Fence, Store, Written};

/// The verbs over one store. Cheap to clone: it is a handle.
#[derive(Clone, Debug)]
pub struct Registry {
    store: Store,
    /// `--implicit-namespaces`: namespaced objects need no Namespace (`namespaces`).
    implicit_namespaces: bool,
    /// The webhooks admission calls on every write (none: kube's own admission only).
    admission: Option<Arc<dyn Admission>>,
}

impl Registry {
    /// The verbs over `store`, with kube's namespace lifecycle (when the document has a
    /// namespace kind).
    pub fn new(store: Store) -> Registry {
        Registry { store, implicit_namespaces: false, admission: None }
    }

    /// These verbs with `admission`'s webhooks called on every write.
    pub fn with_admission(mut self, admission: Arc<dyn Admission>) -> Registry {
        self.admission = Some(admission);
        self
    }

    /// These verbs with every write fenced by `fence` (`Store::fenced`): what singletons write
    /// through, so their writes fail once this process no longer leads.
    pub fn fenced(&self, fence: Fence) -> Registry {
        Registry { store: self.store.fenced(fence), ..self.clone() }
    }

    /// `--implicit-namespaces`: any namespace name may hold objects, and none is checked.
    pub fn with_implicit_namespaces(mut self, implicit: bool) -> Registry {
        self.implicit_namespaces = implicit;
        self
    }

    /// The store underneath, for what is not an object verb: watches, probes, metrics.
    pub fn store(&self) -> &Store {
        &self.store
    }
}

/// Where a request points: a collection (namespace or all/cluster) or one named object, and
/// which part of it a write may change.
#[derive(Debug, Clone, Default)]
pub struct Target {
    /// The path's namespace; `None` on cluster kinds and all-namespace paths.
    pub namespace: Option<String>,
    pub name: Option<String>,
    /// `Main` for the resource's own paths, `Status` for `/status`.
    pub part: Part,
}

impl Target {
    pub fn new(namespace: Option<String>, name: Option<String>) -> Target {
        Target { namespace, name, part: Part::Main }
    }

    pub fn ns(&self) -> &str {
        self.namespace.as_deref().unwrap_or("")
    }

    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    /// A written object must be the one the URL names: its name, and its namespace when it
    /// gives one (handlers/rest.go `checkName`, patch.go for the patched result).
    pub fn check_identity(&self, obj: &Value) -> Result<(), ApiError> {
        let name = meta_str(obj, "name");
        if name != self.name() {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({name}) does not match the name on the URL ({})",
                self.name()
            )));
        }
        let ns = meta_str(obj, "namespace");
        if !self.ns().is_empty() && !ns.is_empty() && ns != self.ns() {
            return Err(ApiError::bad_request(format!(
                "the namespace of the object ({ns}) does not match the namespace on the request ({})",
                self.ns()
            )));
        }
        Ok(())
    }
}

/// The options of every create, update and patch (kube's `CreateOptions`, `UpdateOptions`,
/// `PatchOptions` less apply's `force`).
#[derive(Debug, Clone)]
pub struct WriteOptions {
    pub dry_run: bool,
    pub field_validation: FieldValidation,
    /// The field manager the write's managedFields entry is recorded for.
    pub manager: String,
}

/// An object a verb answers with: as stored (its stored bytes can be sent as they are, as a get
/// sends them) or only computed (a dry run, a no-op, a view).
#[derive(Debug, Clone)]
pub enum Object {
    Stored(Written),
    Computed(Value),
}

impl Object {
    pub fn value(&self) -> &Value {
        match self {
            Object::Stored(w) => &w.object,
            Object::Computed(v) => v,
        }
    }
}

/// What a write did to its object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Created,
    Updated,
    /// Nothing to write: the object is as asked (a no-op update, a repeated delete).
    Unchanged,
    /// The object is gone (a delete, or an update that removed the last finalizer).
    Deleted,
}

/// A write's result: what happened, the object to answer with, and the warnings to send.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub change: Change,
    pub object: Object,
    pub warnings: Vec<String>,
}

#[cfg(test)]
mod tests;
