//! Reads: one object, and one page of a list read at one revision (B.4: the revision from the
//! continue token, `resourceVersion` and `resourceVersionMatch`; selectors filter while the
//! page fills; keyset pages, never OFFSET).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::keys::{collection_prefix, object_key};
use super::options::{ContinueToken, ListOptions, RvMatch};
use super::Registry;
use crate::object::error::ApiError;
use crate::resource::ResourceInfo;
use crate::store::{Bytes, Decoded, Entry, ListRequest, StoreError};

/// How many rows one store read fetches while filling a page.
const BATCH: usize = 500;

/// How long a read at a future revision waits for the store to catch up (kube: ~3 s).
const FUTURE_RV_WAIT: Duration = Duration::from_secs(3);

/// One page of a list, read at one revision.
pub struct Page {
    pub revision: u64,
    /// The objects as stored, shared with the store's in-memory state when read from it.
    pub items: Vec<Bytes>,
    /// Each item's decoded object, shared with the store's in-memory state likewise.
    pub decoded: Vec<Decoded>,
    pub continue_token: Option<String>,
    /// Objects after this page at its revision; only with a continue token and no selector.
    pub remaining: Option<u64>,
}

impl Page {
    /// The objects, decoded.
    pub fn objects(&self) -> Result<Vec<Arc<Value>>, ApiError> {
        let decode = |(bytes, cell): (&Bytes, &Decoded)| cell.object(bytes).map_err(stored_error);
        self.items.iter().zip(&self.decoded).map(decode).collect()
    }
}

impl Registry {
    /// The current state of the object `name` in `namespace`, as stored.
    pub fn get_stored(
        &self,
        res: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<Entry, ApiError> {
        self.store
            .get_raw(&object_key(res, namespace, name))
            .ok_or_else(|| ApiError::not_found(res, name))
    }

    /// The object as it was at revision `rev` (404 if it did not exist then), as served then.
    pub async fn get_at(
        &self,
        res: &ResourceInfo,
        namespace: &str,
        name: &str,
        rev: u64,
    ) -> Result<Entry, ApiError> {
        let key = object_key(res, namespace, name);
        self.store.get_at(&key, rev).await?.ok_or_else(|| ApiError::not_found(res, name))
    }

    /// The current state of the object `name` in `namespace`, decoded.
    pub async fn get(
        &self,
        res: &ResourceInfo,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<Value>, ApiError> {
        let key = object_key(res, namespace, name);
        self.store.get(&key).await?.ok_or_else(|| ApiError::not_found(res, name))
    }

    /// Waits (bounded) until the store has reached revision `n`, else 504 as kube answers.
    pub async fn wait_for_revision(&self, n: u64) -> Result<u64, ApiError> {
        // Woken by the commit that reaches `n`, not by polling.
        let reached = tokio::time::timeout(FUTURE_RV_WAIT, self.store.wait_for_revision(n)).await;
        if let Ok(reached) = reached {
            return Ok(reached?);
        }
        let current = self.store.current_revision().await?;
        match ApiError::from(StoreError::FutureRevision { current }) {
            ApiError::Timeout { causes, .. } => Err(ApiError::Timeout {
                message: format!("Too large resource version: {n}, current: {current}"),
                causes,
            }),
            other => Err(other),
        }
    }

    /// Waits (bounded) until the store holds every write acknowledged before the call, on any
    /// replica: the start of a read with no resourceVersion (kube's consistent read), else 504
    /// as kube answers when its cache does not catch up.
    pub async fn consistent(&self) -> Result<u64, ApiError> {
        if !self.store.facts().external_commits {
            // The cache holds every acknowledged write already (SQLite): no wait, no timer.
            return Ok(self.store.sync().await?);
        }
        match tokio::time::timeout(FUTURE_RV_WAIT, self.store.sync()).await {
            Ok(reached) => Ok(reached?),
            Err(_) => {
                let current = self.store.current_revision().await?;
                Err(ApiError::from(StoreError::FutureRevision { current }))
            }
        }
    }

    /// Reads one page: the revision comes from the continue token, `resourceVersion` and
    /// `resourceVersionMatch` as B.4's table says; selectors filter while the page fills.
    pub async fn list(
        &self,
        res: &ResourceInfo,
        namespace: Option<&str>,
        opts: &ListOptions,
    ) -> Result<Page, ApiError> {
        let prefix = collection_prefix(res, namespace);
        let mut limit = opts.limit;
        let mut start_after = None;
        let revision = match (&opts.continue_token, opts.resource_version.as_deref()) {
            (Some(tok), _) => {
                start_after =
                    Some(format!("{prefix}{}", tok.start.strip_suffix('\0').unwrap_or(&tok.start)));
                (tok.rv > 0).then_some(tok.rv as u64)
            }
            (None, None) => {
                self.consistent().await?;
                None
            }
            // "Any" revision: 1.32 ignores limit here and returns everything.
            (None, Some("0")) => {
                limit = None;
                None
            }
            (None, Some(rv)) => {
                let n: u64 = rv.parse().unwrap_or(0);
                let exact = opts.rv_match == Some(RvMatch::Exact)
                    || (opts.rv_match.is_none() && limit.is_some());
                self.wait_for_revision(n).await?;
                exact.then_some(n)
            }
        };
        let expired = || -> ApiError {
            match &opts.continue_token {
                Some(tok) => ApiError::Expired {
                    message: "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.".into(),
                    continue_token: Some(ContinueToken::encode(-1, &tok.start)),
                },
                None => ApiError::Expired {
                    message: "The resourceVersion for the provided list is too old.".into(),
                    continue_token: None,
                },
            }
        };
        let map_err = |e: StoreError| -> ApiError {
            match e {
                StoreError::Expired { .. } => expired(),
                other => ApiError::from(other),
            }
        };

        let (mut items, mut decoded) = (Vec::new(), Vec::new());
        let mut read_at = revision;
        let mut continue_token = None;
        loop {
            let want = limit.map(|l| (l - items.len()).clamp(1, BATCH)).unwrap_or(BATCH);
            let batch = self
                .store
                .list_raw(ListRequest {
                    prefix: prefix.clone(),
                    revision: read_at,
                    start_after: start_after.clone(),
                    limit: Some(want),
                })
                .await
                .map_err(map_err)?;
            let rev = batch.revision;
            read_at = Some(rev);
            let n = batch.items.len();
            for (i, ((key, obj), cell)) in batch.items.into_iter().zip(batch.decoded).enumerate() {
                start_after = Some(key.clone());
                let keep = !opts.has_selector() || {
                    let value = cell.object(&obj).map_err(stored_error)?;
                    opts.labels.matches(&value) && opts.fields.matches(&value)
                };
                if keep {
                    items.push(obj);
                    decoded.push(cell);
                }
                if limit.is_some_and(|l| items.len() >= l) {
                    let more = i + 1 < n || batch.more;
                    let mut remaining = None;
                    if more {
                        let rel = &key[prefix.len()..];
                        continue_token =
                            Some(ContinueToken::encode(rev as i64, &format!("{rel}\0")));
                        // B.4: only unfiltered lists say how many remain (kube cannot count
                        // what a selector would keep without reading it all).
                        if !opts.has_selector() {
                            let n = self.store.count_after(&prefix, &key, rev).await;
                            remaining = Some(n.map_err(map_err)?);
                        }
                    }
                    return Ok(Page { revision: rev, items, decoded, continue_token, remaining });
                }
            }
            if !batch.more {
                let remaining = None;
                return Ok(Page { revision: rev, items, decoded, continue_token, remaining });
            }
        }
    }
}

/// Stored bytes as a value; they were written from one, so failing is the store's fault.
pub fn decode_stored(bytes: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(bytes).map_err(stored_error)
}

fn stored_error(e: serde_json::Error) -> ApiError {
    ApiError::from(crate::store::StoreError::from(e))
}
