//! The store's HTTP-agnostic error, the same for every backend (SQLite's translation of its
//! own errors is in `sqlite::conn`).

use std::fmt;

/// What a store operation can fail with; the API layer maps each variant to a `Status` once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The key has no live object (update, delete).
    NotFound,
    /// The key already holds a live object (create).
    AlreadyExists,
    /// The caller's expected revision is not the object's current one.
    Conflict {
        /// The object's current revision.
        current_rev: u64,
    },
    /// The requested revision is gone: compacted history, or a watcher that fell behind.
    Expired {
        /// The compacted revision (for a lagging watcher: the revision it had reached).
        compacted: u64,
    },
    /// The requested revision is newer than anything written.
    FutureRevision {
        /// The store's current revision.
        current: u64,
    },
    /// The database cannot serve the request now (busy, locked, I/O, store stopped).
    Unavailable(String),
    /// The write did not fit: the database's storage is full (etcd's `database space
    /// exceeded`). Nothing of it was stored; writes succeed again once space is freed.
    NoSpace(String),
    /// The write is larger than the backend takes in one request (etcd's `request is too
    /// large`, 1.5 MiB by default); nothing of it was stored.
    TooLarge(String),
    /// Storage that can no longer be trusted, e.g. a failed fsync: what reached the disk is
    /// unknown, so the backend stops rather than go on as if the write had worked.
    Fatal(String),
    /// A write fenced by a leadership this process no longer holds (`backend::Fence`): nothing
    /// was stored.
    NotLeader,
    /// A bug or corrupt data; not the caller's fault.
    Internal(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::NotFound => f.write_str("not found"),
            StoreError::AlreadyExists => f.write_str("already exists"),
            StoreError::Conflict { current_rev } => {
                write!(f, "conflict: the current revision is {current_rev}")
            }
            StoreError::Expired { compacted } => {
                write!(f, "revision expired: history up to {compacted} is gone")
            }
            StoreError::FutureRevision { current } => {
                write!(f, "revision is in the future: the current revision is {current}")
            }
            StoreError::Unavailable(m) => write!(f, "store unavailable: {m}"),
            StoreError::NoSpace(m) => write!(f, "database space exceeded: {m}"),
            StoreError::TooLarge(m) => write!(f, "request too large for storage: {m}"),
            StoreError::Fatal(m) => write!(f, "storage failed: {m}"),
            StoreError::NotLeader => f.write_str("this server no longer leads: write fenced"),
            StoreError::Internal(m) => write!(f, "store internal error: {m}"),
        }
    }
}

impl StoreError {
    /// The message alone, without the category `Display` puts before it: what an operator
    /// reads when the store cannot open (its messages name the file and the cause).
    pub fn detail(&self) -> String {
        match self {
            StoreError::Unavailable(m) | StoreError::Internal(m) => m.clone(),
            other => other.to_string(),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> StoreError {
        StoreError::Internal(format!("stored JSON: {e}"))
    }
}
