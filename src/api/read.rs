//! Reads: get, list (chunked, at a revision, with selectors) and watch streams.

use std::sync::Arc;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use futures_util::StreamExt;
use serde_json::{json, Value};

use super::codec::{negotiate, respond};
use super::params::{ContinueToken, ListOptions, Query, RvMatch};
use super::{collection_prefix, for_version, object_key, Target};
use crate::error::ApiError;
use crate::resource::ResourceInfo;
use crate::server::AppState;
use crate::store::{EventType, ListRequest, StoreError};
use crate::watch::{self, Predicate, Start};

/// How many rows one store read fetches while filling a page.
const BATCH: usize = 500;
/// How long a read at a future revision waits for the store to catch up (kube: ~3 s).
const FUTURE_RV_WAIT: Duration = Duration::from_secs(3);

/// GET of one object; `?watch=true` watches it instead.
pub async fn get(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let q = Query::parse(req)?;
    if q.flag("watch") {
        let opts = ListOptions::parse(&q, res.namespaced)?;
        return watch_response(state, res, target, req, opts, true);
    }
    let format = negotiate(req, true)?;
    if let Some(rv) = q.get("resourceVersion").filter(|v| !v.is_empty() && *v != "0") {
        let n: u64 = rv
            .parse()
            .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))?;
        wait_for_revision(state, n).await?;
    }
    let key = object_key(res, target.ns(), target.name());
    let obj =
        state.store.get(&key).await?.ok_or_else(|| ApiError::not_found(res, target.name()))?;
    let mut out = for_version(res, &obj);
    if q.flag("export") {
        export(&mut out, q.flag("exact"));
    }
    respond(StatusCode::OK, format, &out)
}

/// `export=true`: strip what a user cannot set (A.11).
fn export(obj: &mut Value, exact: bool) {
    if let Some(m) = obj.as_object_mut() {
        m.remove("status");
    }
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "managedFields",
            "deletionTimestamp",
            "deletionGracePeriodSeconds",
            "ownerReferences",
            "selfLink",
        ] {
            meta.remove(f);
        }
        if !exact {
            meta.remove("namespace");
        }
    }
}

/// Waits (bounded) until the store has reached revision `n`, else 504 as kube answers.
async fn wait_for_revision(state: &AppState, n: u64) -> Result<u64, ApiError> {
    let deadline = tokio::time::Instant::now() + FUTURE_RV_WAIT;
    loop {
        let current = state.store.current_revision().await?;
        if current >= n {
            return Ok(current);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(StoreError::FutureRevision { current }.into()).map_err(
                |e: ApiError| match e {
                    ApiError::Timeout { causes, .. } => ApiError::Timeout {
                        message: format!("Too large resource version: {n}, current: {current}"),
                        causes,
                    },
                    other => other,
                },
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// LIST of a collection; `?watch=true` turns it into a watch.
pub async fn list(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let q = Query::parse(req)?;
    let opts = ListOptions::parse(&q, res.namespaced)?;
    if opts.watch {
        return watch_response(state, res, target, req, opts, true);
    }
    let format = negotiate(req, true)?;
    let page = list_page(state, res, target.namespace.as_deref(), &opts).await?;
    respond(StatusCode::OK, format, &page.into_json(res))
}

/// One page of a list, read at one revision.
pub(crate) struct Page {
    pub revision: u64,
    pub items: Vec<Arc<Value>>,
    pub continue_token: Option<String>,
}

impl Page {
    fn into_json(self, res: &ResourceInfo) -> Value {
        let items: Vec<Value> = self.items.iter().map(|o| for_version(res, o)).collect();
        json!({
            "apiVersion": res.api_version(),
            "items": items,
            "kind": res.list_kind,
            "metadata": {
                "continue": self.continue_token.unwrap_or_default(),
                "resourceVersion": self.revision.to_string(),
            },
        })
    }
}

/// Reads one page: the revision comes from the continue token, `resourceVersion` and
/// `resourceVersionMatch` as B.4's table says; selectors filter while the page fills.
pub(crate) async fn list_page(
    state: &AppState,
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
        (None, None) => None,
        // "Any" revision: 1.32 ignores limit here and returns everything.
        (None, Some("0")) => {
            limit = None;
            None
        }
        (None, Some(rv)) => {
            let n: u64 = rv.parse().unwrap_or(0);
            let exact = opts.rv_match == Some(RvMatch::Exact)
                || (opts.rv_match.is_none() && limit.is_some());
            wait_for_revision(state, n).await?;
            exact.then_some(n)
        }
    };
    let expired = |compacted: u64| -> ApiError {
        match &opts.continue_token {
            Some(tok) => ApiError::Expired {
                message: "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.".into(),
                continue_token: Some(ContinueToken::encode(-1, &tok.start)),
            },
            None => {
                let _ = compacted;
                ApiError::Expired {
                    message: "The resourceVersion for the provided list is too old.".into(),
                    continue_token: None,
                }
            }
        }
    };

    let mut items = Vec::new();
    let mut read_at = revision;
    let mut continue_token = None;
    loop {
        let want = limit.map(|l| (l - items.len()).clamp(1, BATCH)).unwrap_or(BATCH);
        let batch = state
            .store
            .list(ListRequest {
                prefix: prefix.clone(),
                revision: read_at,
                start_after: start_after.clone(),
                limit: Some(want),
            })
            .await
            .map_err(|e| match e {
                StoreError::Expired { compacted } => expired(compacted),
                other => ApiError::from(other),
            })?;
        let rev = batch.revision;
        read_at = Some(rev);
        let n = batch.items.len();
        for (i, (key, obj)) in batch.items.into_iter().enumerate() {
            start_after = Some(key.clone());
            if opts.labels.matches(&obj) && opts.fields.matches(&obj) {
                items.push(obj);
            }
            if limit.is_some_and(|l| items.len() >= l) {
                let more = i + 1 < n || batch.more;
                if more {
                    let rel = &key[prefix.len()..];
                    continue_token = Some(ContinueToken::encode(rev as i64, &format!("{rel}\0")));
                }
                return Ok(Page { revision: rev, items, continue_token });
            }
        }
        if !batch.more {
            return Ok(Page { revision: rev, items, continue_token });
        }
    }
}

/// A watch on a `/watch/` path: same as `?watch=true`, but answered as plain `application/json`.
pub async fn watch(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let q = Query::parse(req)?;
    let opts = ListOptions::parse(&q, res.namespaced)?;
    watch_response(state, res, target, req, opts, false)
}

/// Opens the event stream (B.5). `stream_type` marks the `?watch=true` form, whose content type
/// carries `;stream=watch` (A.12).
fn watch_response(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    opts: ListOptions,
    stream_type: bool,
) -> Result<HttpResponse, ApiError> {
    negotiate(req, false)?;
    if let (Some(name), Some(selected)) = (target.name.as_deref(), opts.fields.exact_name()) {
        if name != selected {
            return Err(ApiError::bad_request(
                "fieldSelector metadata.name doesn't match requested name",
            ));
        }
    }
    if opts.send_initial_events == Some(true) {
        // TODO-compat: the watch-list stream (initial-events-end bookmark) comes with the list/watch
        // work; until then refuse it loudly so informers fall back to LIST.
        return Err(ApiError::invalid_options(
            "ListOptions",
            vec![crate::error::Cause::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is not supported by this server yet",
            )],
        ));
    }
    let start = match opts.resource_version.as_deref() {
        None | Some("0") => Start::Current,
        Some(rv) => Start::After(rv.parse().unwrap_or(0)),
    };
    let name = target.name.clone();
    let labels = opts.labels.clone();
    let fields = opts.fields.clone();
    let predicate: Predicate = Arc::new(move |obj: &Value| {
        name.as_deref().is_none_or(|n| super::meta_str(obj, "name") == n)
            && labels.matches(obj)
            && fields.matches(obj)
    });
    let prefix = collection_prefix(res, target.namespace.as_deref());
    let events = watch::watch(&state.store, prefix, start, predicate);
    let timeout = opts.timeout.unwrap_or_else(default_watch_timeout);
    let requested = opts.resource_version.clone().unwrap_or_default();

    struct Streaming<S> {
        events: S,
        deadline: tokio::time::Instant,
        done: bool,
    }
    let state0 = Streaming {
        events: Box::pin(events),
        deadline: tokio::time::Instant::now() + timeout,
        done: false,
    };
    let body = futures_util::stream::unfold(state0, move |mut st| {
        let requested = requested.clone();
        async move {
            if st.done {
                return None;
            }
            let next = tokio::select! {
                ev = st.events.next() => ev,
                _ = tokio::time::sleep_until(st.deadline) => None,
            };
            let line = match next {
                None => return None,
                Some(Ok(ev)) => {
                    let kind = match ev.kind {
                        EventType::Added => "ADDED",
                        EventType::Modified => "MODIFIED",
                        EventType::Deleted => "DELETED",
                    };
                    json!({"type": kind, "object": for_version(res, &ev.object)})
                }
                Some(Err(err)) => {
                    st.done = true;
                    let status = match err {
                        StoreError::Expired { compacted } => ApiError::Expired {
                            message: format!("too old resource version: {requested} ({compacted})"),
                            continue_token: None,
                        },
                        other => ApiError::from(other),
                    }
                    .to_status();
                    json!({"type": "ERROR", "object": status})
                }
            };
            let mut bytes = serde_json::to_vec(&line).unwrap_or_default();
            bytes.push(b'\n');
            Some((Ok::<_, actix_web::Error>(Bytes::from(bytes)), st))
        }
    });
    let content_type =
        if stream_type { "application/json;stream=watch" } else { "application/json" };
    Ok(HttpResponse::Ok()
        .content_type(content_type)
        .insert_header(("Cache-Control", "no-cache, private"))
        .streaming(body))
}

/// kube-apiserver's default: a random duration between 30 and 60 minutes.
fn default_watch_timeout() -> Duration {
    let mut b = [0u8; 2];
    let _ = getrandom::getrandom(&mut b);
    Duration::from_secs(1800 + u64::from(u16::from_le_bytes(b)) % 1801)
}
