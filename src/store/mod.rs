//! TEMP STUB
use serde_json::Value;
use std::sync::Arc;
#[derive(Clone)]
pub struct Store;
pub struct StoreConfig {
    pub path: String,
}
pub struct ListRequest {
    pub prefix: String,
    pub revision: Option<u64>,
    pub start_after: Option<String>,
    pub limit: Option<usize>,
}
pub struct ListResult {
    pub revision: u64,
    pub items: Vec<(String, Arc<Value>)>,
    pub more: bool,
}
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}
pub struct Event {
    pub rev: u64,
    pub key: String,
    pub kind: EventType,
    pub object: Arc<Value>,
    pub prev: Option<Arc<Value>>,
}
#[derive(Debug)]
pub enum StoreError {
    NotFound,
    AlreadyExists,
    Conflict { current_rev: u64 },
    Expired { compacted: u64 },
    FutureRevision { current: u64 },
    Unavailable(String),
    Internal(String),
}
impl Store {
    pub fn open(_c: StoreConfig) -> Result<Store, StoreError> {
        todo!()
    }
    pub async fn get(&self, _key: &str) -> Result<Option<Arc<Value>>, StoreError> {
        todo!()
    }
    pub async fn list(&self, _req: ListRequest) -> Result<ListResult, StoreError> {
        todo!()
    }
    pub async fn create(&self, _key: &str, _obj: Value) -> Result<Arc<Value>, StoreError> {
        todo!()
    }
    pub async fn update(&self, _key: &str, _r: u64, _obj: Value) -> Result<Arc<Value>, StoreError> {
        todo!()
    }
    pub async fn delete(&self, _key: &str, _r: u64) -> Result<Arc<Value>, StoreError> {
        todo!()
    }
    pub async fn current_revision(&self) -> Result<u64, StoreError> {
        todo!()
    }
    pub async fn probe(&self) -> Result<(), StoreError> {
        todo!()
    }
    pub async fn secret(&self, _n: &str) -> Result<Vec<u8>, StoreError> {
        todo!()
    }
}
