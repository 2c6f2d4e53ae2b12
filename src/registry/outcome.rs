//! What a verb answers: the object (as stored, or only computed), what the write did to it, and
//! the warnings to send with it.

use std::sync::Arc;

use serde_json::Value;

use crate::store::Written;

/// An object a verb answers with: as stored (its stored bytes can be sent as they are, as a get
/// sends them) or only computed (a dry run, a no-op, a view).
#[derive(Debug, Clone)]
pub enum Object {
    Stored(Written),
    Computed(Value),
    /// The object as it already was (a no-op decided without a copy).
    Current(Arc<Value>),
}

impl Object {
    pub fn value(&self) -> &Value {
        match self {
            Object::Stored(w) => &w.object,
            Object::Computed(v) => v,
            Object::Current(v) => v,
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
