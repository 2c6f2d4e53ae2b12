//! The records the store's modules and its callers pass around: a list's request and its pages
//! (as objects and as served bytes), a committed write's event with its previous state, and what
//! a write left in the store. Plain data, shared by the cache, the feed, the hub, the backends
//! and `Store`; `store` re-exports each.

use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde_json::Value;

/// One page of a list.
#[derive(Debug, Clone, Default)]
pub struct ListRequest {
    /// Collection prefix, e.g. `"<group>/<plural>/"` or `"<group>/<plural>/<ns>/"`.
    pub prefix: String,
    /// Read the state at this revision; `None` reads the current state.
    pub revision: Option<u64>,
    /// Continue after this full key (exclusive).
    pub start_after: Option<String>,
    /// At most this many items; `None` or `Some(0)` means all.
    pub limit: Option<usize>,
}

/// A page of objects in bytewise key order.
#[derive(Debug, Clone)]
pub struct ListResult {
    /// The revision the page was read at (the list's `metadata.resourceVersion`).
    pub revision: u64,
    /// `(key, object)` pairs.
    pub items: Vec<(String, Arc<Value>)>,
    /// Whether another item exists after the last one (a continue token is due).
    pub more: bool,
}

/// A page as served: `(key, JSON bytes)` pairs, resourceVersion set, shared with the cache when
/// read from it.
#[derive(Debug, Clone)]
pub struct RawList {
    pub revision: u64,
    pub items: Vec<(String, Bytes)>,
    pub more: bool,
    /// Each item's decoded object, shared with the cache's entry when read from it (empty
    /// cells for a page the backend answered), so a reader decodes what nobody has.
    pub decoded: Vec<Decoded>,
}

/// What a committed write did to its key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One committed write, published in revision order.
#[derive(Debug, Clone)]
pub struct Event {
    /// The write's revision.
    pub rev: u64,
    pub key: String,
    pub kind: EventType,
    /// The new state; for `Deleted`, the last state with the delete's revision.
    pub object: Arc<Value>,
    /// `object` as served (its resourceVersion set): watches send these bytes rather than
    /// encoding `object` again each.
    pub value: Bytes,
    /// The state before the write (`None` for `Added`), as served, for selector transitions.
    pub prev: Option<Prev>,
    /// Served bytes of `object` and `prev`: what a queued event costs, for queue limits.
    pub size: usize,
}

impl Event {
    /// The state before the write, decoded on first use.
    pub fn prev(&self) -> Option<&Value> {
        self.prev.as_ref().map(Prev::value)
    }
}

/// An event's previous state as served, decoded only when asked (a watcher with a selector
/// judging a transition) and then once for every watcher: the committing thread never decodes
/// it.
#[derive(Debug, Clone)]
pub struct Prev {
    bytes: Bytes,
    decoded: Arc<std::sync::OnceLock<Value>>,
}

impl Prev {
    pub fn new(bytes: Bytes) -> Prev {
        Prev { bytes, decoded: Arc::default() }
    }

    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    pub fn value(&self) -> &Value {
        // The store wrote these bytes from a Value; should they not decode, nothing matches.
        self.decoded.get_or_init(|| serde_json::from_slice(&self.bytes).unwrap_or(Value::Null))
    }
}

/// What a write left in the store: the object and its served bytes, resourceVersion set (a
/// JSON answer can send them as they are, as a get does).
#[derive(Debug, Clone, PartialEq)]
pub struct Written {
    pub object: Arc<Value>,
    pub value: Bytes,
}

// Tests read a written object's fields directly; the server goes through `object`.
#[cfg(test)]
impl std::ops::Deref for Written {
    type Target = Value;

    fn deref(&self) -> &Value {
        &self.object
    }
}

/// An entry's decoded object, shared by its copies (and the list items read from it); not
/// part of what the entry is.
///
/// A write's own object is only a hint (a weak reference): while its event or its writer still
/// holds it, a reader takes it instead of decoding; once they are done, its memory goes back to
/// the allocator. Kept for every stored object, it was ~8 KB of fresh memory per create, whose
/// page faults cost 15% of a create's CPU. What a reader decoded or took is kept.
#[derive(Default, Clone)]
pub struct Decoded(Arc<(OnceLock<Arc<Value>>, std::sync::Weak<Value>)>);

impl Decoded {
    /// A cell that may take `object` while others hold it.
    pub fn hinted(object: &Arc<Value>) -> Decoded {
        Decoded(Arc::new((OnceLock::new(), Arc::downgrade(object))))
    }

    /// The object `value` holds, decoded once for every holder of this cell.
    pub fn object(&self, value: &[u8]) -> Result<Arc<Value>, serde_json::Error> {
        let (held, hint) = &*self.0;
        if let Some(v) = held.get() {
            return Ok(v.clone());
        }
        let v = match hint.upgrade() {
            Some(v) => v,
            None => Arc::new(serde_json::from_slice(value)?),
        };
        // Two first readers decode alike; either's copy is kept.
        Ok(held.get_or_init(|| v).clone())
    }
}

impl PartialEq for Decoded {
    fn eq(&self, _: &Decoded) -> bool {
        true
    }
}

impl Eq for Decoded {}

impl std::fmt::Debug for Decoded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0 .0.get().is_some() { "Decoded" } else { "Encoded" })
    }
}
