//! Store failures as API errors: the one translation of `StoreError` (kine's `translateErr`),
//! made where the registry meets the store, so the object layer knows nothing of storage.

use crate::object::error::{ApiError, Cause};
use crate::resource::ResourceInfo;
use crate::store::StoreError;

impl ApiError {
    /// Maps a store failure for one object of `res`.
    pub fn from_store(err: StoreError, res: &ResourceInfo, name: &str) -> ApiError {
        match err {
            StoreError::NotFound => ApiError::not_found(res, name),
            StoreError::AlreadyExists => ApiError::already_exists(res, name, false),
            StoreError::Conflict { .. } => ApiError::optimistic_lock(res, name),
            other => ApiError::from(other),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> ApiError {
        match err {
            StoreError::Unavailable(m) => ApiError::Unavailable(m),
            // Only background work writes fenced; another replica now does its work.
            e @ StoreError::NotLeader => ApiError::Unavailable(e.to_string()),
            // kube answers etcd's "database space exceeded" as it answers any storage error it
            // does not classify: 500, Failure, no reason, the error's own message.
            e @ StoreError::NoSpace(_) => ApiError::Unknown(e.to_string()),
            // kube answers etcd's `request is too large` with 413 (after one retry without
            // managedFields, still to come here).
            StoreError::TooLarge(m) => ApiError::RequestEntityTooLarge(m),
            StoreError::Expired { .. } => ApiError::Expired {
                message: "The resourceVersion for the provided list is too old.".into(),
                continue_token: None,
            },
            StoreError::FutureRevision { current } => ApiError::Timeout {
                message: format!("Too large resource version, current: {current}"),
                causes: vec![Cause {
                    reason: "ResourceVersionTooLarge",
                    message: "Too large resource version".into(),
                    field: String::new(),
                }],
            },
            other => ApiError::Internal(format!("{other:?}")),
        }
    }
}
