//! TEMP STUB
use crate::store::{EventType, Store, StoreError};
use serde_json::Value;
use std::sync::Arc;
pub enum Start {
    Current,
    After(u64),
}
pub struct WatchEvent {
    pub kind: EventType,
    pub rev: u64,
    pub object: Arc<Value>,
}
pub type Predicate = Arc<dyn Fn(&Value) -> bool + Send + Sync>;
pub fn watch(
    _s: &Store,
    _p: String,
    _st: Start,
    _pr: Predicate,
) -> impl futures_util::Stream<Item = Result<WatchEvent, StoreError>> + Send + 'static {
    futures_util::stream::empty()
}
