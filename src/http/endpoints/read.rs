//! Reads: get, list (chunked, at a revision, with selectors) and watch streams.

use std::sync::Arc;
use std::time::Duration;

use actix_web::http::StatusCode;
use actix_web::web::Bytes;
use actix_web::{HttpRequest, HttpResponse};
use base64::Engine;
use futures_util::FutureExt;
use serde_json::{json, Value};
use tokio::time::Instant;

use super::Target;
use crate::http::codec::{
    api_version_json, encode_item, negotiate_output, respond, respond_stored, Format, Output,
};
use crate::http::faults::{CutHow, StaleRead, WatchCut};
use crate::http::params::{ListOptions, Query, RvMatch};
use crate::http::shutdown::{Phases, WatchGuard};
use crate::http::state::AppState;
use crate::object::error::ApiError;
use crate::object::table::{self, TableOptions};
use crate::object::{for_version, meta_str};
use crate::registry::keys::collection_prefix;
use crate::registry::{decode_stored, Page};
use crate::resource::ResourceInfo;
use crate::store::watch::{Item, Predicate, Start, Watch, WatchError};
use crate::store::{EventType, StoreError};

/// GET of one object; `?watch=true` watches it instead.
pub async fn get(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let q = Query::parse(req)?;
    if q.flag("watch") {
        let opts = ListOptions::parse(&q, res)?;
        return watch_response(state, res, target, req, opts, true).await;
    }
    let output = negotiate_output(req, true, true)?;
    if let Some(rev) = stale_revision(state, req).await? {
        let entry = state.registry.get_at(res, target.ns(), target.name(), rev).await?;
        if output.format == Format::Json && output.table.is_none() {
            return respond_stored(res, StatusCode::OK, &entry.value);
        }
        let obj = decode_stored(&entry.value)?;
        return respond(StatusCode::OK, output.format, &for_version(res, &obj));
    }
    match q.get("resourceVersion").filter(|v| !v.is_empty()) {
        // The latest state: every write acknowledged before, on any replica.
        None => {
            state.registry.consistent().await?;
        }
        Some("0") => {}
        Some(rv) => {
            let n: u64 = rv
                .parse()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))?;
            state.registry.wait_for_revision(n).await?;
        }
    }
    if output.format == Format::Json && output.table.is_none() && !q.flag("export") {
        // The common case straight from the stored bytes, as a list item is encoded.
        let entry = state.registry.get_stored(res, target.ns(), target.name())?;
        return respond_stored(res, StatusCode::OK, &entry.value);
    }
    let obj = state.registry.get(res, target.ns(), target.name()).await?;
    let mut out = for_version(res, &obj);
    if q.flag("export") {
        export(&mut out, q.flag("exact"));
    }
    match table_options(&output, &q)? {
        None => respond(StatusCode::OK, output.format, &out),
        // A one-object Table carries the object's resourceVersion (the CRD table convertor).
        Some(opts) => {
            let metadata = json!({"resourceVersion": meta_str(&out, "resourceVersion")});
            let rows = vec![table::row(res, &out, &opts, table::now())];
            respond(StatusCode::OK, output.format, &table::table(res, &opts, metadata, rows))
        }
    }
}

/// The revision a stale-read Fault (`http::faults`) sends this read to: its distance behind the
/// current revision, and at the oldest the compacted one.
async fn stale_revision(state: &AppState, req: &HttpRequest) -> Result<Option<u64>, ApiError> {
    let Some(stale) = actix_web::HttpMessage::extensions(req).get::<StaleRead>().copied() else {
        return Ok(None);
    };
    let current = state.registry.consistent().await?;
    let compacted = state.store.compacted_revision().await.map_err(ApiError::from)?;
    Ok(Some(current.saturating_sub(stale.revisions_behind).max(compacted).max(1)))
}

/// The Table options when `output` is a Table: `includeObject` and `noHeaders`.
fn table_options(output: &Output, q: &Query) -> Result<Option<TableOptions>, ApiError> {
    output
        .table
        .map(|v| TableOptions::new(v, q.get("includeObject").unwrap_or(""), q.flag("noHeaders")))
        .transpose()
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

/// LIST of a collection; `?watch=true` turns it into a watch.
pub async fn list(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let q = Query::parse(req)?;
    let mut opts = ListOptions::parse(&q, res)?;
    if opts.watch {
        return watch_response(state, res, target, req, opts, true).await;
    }
    let output = negotiate_output(req, true, true)?;
    // A later page of a list already reads at its first page's revision.
    if opts.continue_token.is_none() {
        if let Some(rev) = stale_revision(state, req).await? {
            opts.resource_version = Some(rev.to_string());
            opts.rv_match = Some(RvMatch::Exact);
        }
    }
    let page = state.registry.list(res, target.namespace.as_deref(), &opts).await?;
    match table_options(&output, &q)? {
        // Streamed from the stored bytes (see `Page::into_json_stream`). Streams are not gzipped.
        None if output.format == Format::Json => Ok(HttpResponse::Ok()
            .content_type(output.format.content_type())
            .streaming(page.into_json_stream(res))),
        None => respond(StatusCode::OK, output.format, &page.into_json(res)?),
        Some(topts) => {
            let list = page.into_json(res)?;
            let now = table::now();
            let rows = list["items"]
                .as_array()
                .map(|items| items.iter().map(|o| table::row(res, o, &topts, now)).collect())
                .unwrap_or_default();
            let metadata = list["metadata"].as_object().map(table::list_metadata);
            let metadata = metadata.unwrap_or_else(|| json!({}));
            respond(StatusCode::OK, output.format, &table::table(res, &topts, metadata, rows))
        }
    }
}

/// A JSON list body is sent in chunks of about this size.
const LIST_CHUNK: usize = 64 << 10;

impl Page {
    /// The list without its items: `items` is `[]`.
    fn envelope(&self, res: &ResourceInfo) -> Value {
        let mut metadata = json!({
            "continue": self.continue_token.clone().unwrap_or_default(),
            "resourceVersion": self.revision.to_string(),
        });
        if let Some(n) = self.remaining {
            metadata["remainingItemCount"] = n.into();
        }
        json!({
            "apiVersion": res.api_version(),
            "items": [],
            "kind": res.list_kind,
            "metadata": metadata,
        })
    }

    fn into_json(self, res: &ResourceInfo) -> Result<Value, ApiError> {
        let mut list = self.envelope(res);
        let items = self.items.iter().map(|b| Ok(for_version(res, &decode_stored(b)?)));
        list["items"] = Value::Array(items.collect::<Result<_, ApiError>>()?);
        Ok(list)
    }

    /// The list as JSON, encoded while it is sent: the envelope around the items, each written
    /// from its stored bytes, so a large list is never held a second time as one buffer (or as
    /// values). Byte for byte what `into_json` encodes.
    fn into_json_stream(
        self,
        res: &'static ResourceInfo,
    ) -> impl futures_util::Stream<Item = Result<Bytes, actix_web::Error>> {
        let envelope = serde_json::to_vec(&self.envelope(res)).unwrap_or_default();
        // `"items":[]` first appears as the key itself: strings before it escape their quotes.
        let at = envelope
            .windows(ITEMS.len())
            .position(|w| w == ITEMS)
            .map_or(envelope.len(), |i| i + ITEMS.len() - 1);
        let tail = Bytes::copy_from_slice(&envelope[at..]);
        let mut head = envelope;
        head.truncate(at);
        let api_version = api_version_json(res);
        let state = (Some(head), self.items.into_iter(), Some(tail));
        futures_util::stream::unfold(state, move |(mut buf, mut items, mut tail)| {
            let api_version = api_version.clone();
            async move {
                let mut out = match buf.take() {
                    Some(head) => head,
                    None => Vec::with_capacity(LIST_CHUNK + 4096),
                };
                let first = out.last() == Some(&b'[');
                for (i, item) in items.by_ref().enumerate() {
                    if !(first && i == 0) {
                        out.push(b',');
                    }
                    if let Err(e) = encode_item(res, &api_version, &item, &mut out) {
                        return Some((Err(e.into()), (None, Vec::new().into_iter(), None)));
                    }
                    if out.len() >= LIST_CHUNK {
                        return Some((Ok(Bytes::from(out)), (None, items, tail)));
                    }
                }
                let tail = tail.take()?;
                out.extend_from_slice(&tail);
                Some((Ok(Bytes::from(out)), (None, items, None)))
            }
        })
    }
}

const ITEMS: &[u8] = b"\"items\":[]";

/// A watch on a `/watch/` path: same as `?watch=true`, but answered as plain `application/json`.
pub async fn watch(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let q = Query::parse(req)?;
    let opts = ListOptions::parse(&q, res)?;
    watch_response(state, res, target, req, opts, false).await
}

/// Kube waits this long before a watch's deadline to send a last bookmark (cache_watcher.go).
const BOOKMARK_BEFORE_DEADLINE: Duration = Duration::from_secs(2);

/// Opens the event stream (B.5). `stream_type` marks the `?watch=true` form, whose content type
/// carries `;stream=watch` (A.12).
///
/// Failures found before the stream starts are plain error responses; once it has started,
/// a failure is one ERROR event, then the end.
async fn watch_response(
    state: &AppState,
    res: &'static ResourceInfo,
    target: Target,
    req: &HttpRequest,
    opts: ListOptions,
    stream_type: bool,
) -> Result<HttpResponse, ApiError> {
    // The watch-list stream has no Table form: a Table clause is passed over there, so the next
    // acceptable clause is used or the answer is 406 (E2E watchlist.go).
    let tables = opts.send_initial_events != Some(true);
    let output = negotiate_output(req, false, tables)?;
    let table = table_options(&output, &Query::parse(req)?)?;
    if let (Some(name), Some(selected)) = (target.name.as_deref(), opts.fields.exact_name()) {
        if name != selected {
            return Err(ApiError::bad_request(
                "fieldSelector metadata.name doesn't match requested name",
            ));
        }
    }
    let rv = opts.resource_version.as_deref().filter(|v| *v != "0");
    let requested: Option<u64> = rv.map(|v| v.parse().unwrap_or(0));
    let start = match (opts.send_initial_events, requested) {
        // Legacy: unset and "0" get the current state first; N gets the changes after N.
        (None, None) => Start::Current,
        (None, Some(n)) => Start::After(n),
        // The watch-list stream: the state at a revision not older than N, then changes.
        (Some(true), None) => {
            state.registry.consistent().await?;
            Start::Current
        }
        (Some(true), Some(n)) => {
            state.registry.wait_for_revision(n).await?;
            Start::Current
        }
        (Some(false), None) => Start::Now,
        (Some(false), Some(n)) => Start::After(n),
    };
    // The end-of-initial-events bookmark is sent only to clients that accept bookmarks
    // (cacher.go `isListWatchRequest`).
    let end_bookmark = opts.send_initial_events == Some(true) && opts.allow_bookmarks;

    let name = target.name.clone();
    let labels = opts.labels.clone();
    let fields = opts.fields.clone();
    let selects_all = name.is_none() && labels.is_empty() && fields.is_empty();
    let predicate: Option<Predicate> = (!selects_all).then(|| {
        Arc::new(move |obj: &Value| {
            name.as_deref().is_none_or(|n| meta_str(obj, "name") == n)
                && labels.matches(obj)
                && fields.matches(obj)
        }) as Predicate
    });
    let prefix = collection_prefix(res, target.namespace.as_deref());
    let now = Instant::now();
    let deadline = now + opts.timeout.unwrap_or_else(default_watch_timeout);
    let mut stream = WatchStream {
        watch: Watch::new(&state.store, prefix, start, predicate),
        res,
        requested: opts.resource_version.clone().unwrap_or_default(),
        deadline,
        bookmarks: opts.allow_bookmarks.then_some(Bookmarks {
            interval: state.watch.bookmark_interval,
            next: None,
            last_before_deadline: false,
            due: false,
        }),
        end_bookmark,
        table,
        api_version: api_version_json(res),
        done: false,
        phases: state.phases.clone(),
        _open: state.phases.watch_opened(),
        ending: false,
    };
    if let Some(b) = &mut stream.bookmarks {
        b.schedule(now, deadline);
    }
    // A Fault's cut (`http::faults`): after its events the stream ends, or sends a 410 first.
    let cut = actix_web::HttpMessage::extensions(req).get::<WatchCut>().copied();
    let body = futures_util::stream::unfold((stream, 0u64), move |(mut st, sent)| async move {
        if let Some(cut) = cut.filter(|c| sent >= c.after_events) {
            match cut.how {
                _ if st.done => return None,
                CutHow::End => return None,
                // An error ends the response unfinished; actix then closes the connection.
                CutHow::Abort => {
                    st.done = true;
                    // Pending once, so the events before the cut leave the buffer first.
                    tokio::task::yield_now().await;
                    return Some((
                        Err(actix_web::error::ErrorServiceUnavailable("goaway")),
                        (st, sent),
                    ));
                }
                CutHow::ErrorEvent => st.done = true,
            }
            let error = line(&json!({"type": "ERROR", "object": WatchCut::expired().to_status()}));
            return Some((Ok(error), (st, sent)));
        }
        let line = st.next_line().await?;
        let bookmark = line.get(..24).is_some_and(|head| head.windows(8).any(|w| w == b"BOOKMARK"));
        Some((Ok::<_, actix_web::Error>(line), (st, sent + u64::from(!bookmark))))
    });
    let content_type =
        if stream_type { "application/json;stream=watch" } else { "application/json" };
    Ok(HttpResponse::Ok()
        .content_type(content_type)
        .insert_header(("Cache-Control", "no-cache, private"))
        .streaming(body))
}

/// One watch response body: events, bookmarks and the deadline, one JSON line at a time.
struct WatchStream {
    watch: Watch,
    res: &'static ResourceInfo,
    /// `resourceVersion` as requested, for the 410 message.
    requested: String,
    deadline: Instant,
    /// `allowWatchBookmarks`.
    bookmarks: Option<Bookmarks>,
    /// Send the watch-list's end bookmark when the initial events are out.
    end_bookmark: bool,
    /// Each event's object as a one-row Table; `no_headers` is set once the first has gone out.
    table: Option<TableOptions>,
    /// The watched version's `apiVersion`, JSON-encoded once for every event's line.
    api_version: Vec<u8>,
    done: bool,
    /// Once the server stops taking requests, the stream ends at its turn (`phases`).
    phases: Phases,
    _open: WatchGuard,
    /// The deadline has been brought forward to the watch's turn to end.
    ending: bool,
}

/// When periodic bookmarks are due: every interval, and once about 2 s before the deadline.
struct Bookmarks {
    interval: Duration,
    next: Option<Instant>,
    last_before_deadline: bool,
    /// The timer fired; the bookmark goes out once nothing is ready to send before it.
    due: bool,
}

impl Bookmarks {
    /// As kube's `nextBookmarkTime`: the next heartbeat, unless the deadline comes first, in
    /// which case one last bookmark shortly before it.
    fn schedule(&mut self, now: Instant, deadline: Instant) {
        let heartbeat = now + self.interval;
        self.next = if heartbeat < deadline {
            Some(heartbeat)
        } else if !self.last_before_deadline {
            self.last_before_deadline = true;
            Some(deadline.checked_sub(BOOKMARK_BEFORE_DEADLINE).unwrap_or(now).max(now))
        } else {
            None
        };
    }
}

impl WatchStream {
    /// The next line to send; `None` ends the response.
    async fn next_line(&mut self) -> Option<Bytes> {
        loop {
            if self.done {
                return None;
            }
            if self.bookmarks.as_ref().is_some_and(|b| b.due) {
                // Send what is already there first, so the bookmark is as fresh as it can be.
                if let Some(item) = self.watch.next().now_or_never() {
                    match self.line_for(item) {
                        Some(line) => return Some(line),
                        None => continue,
                    }
                }
                let now = Instant::now();
                if let Some(b) = &mut self.bookmarks {
                    b.due = false;
                    b.schedule(now, self.deadline);
                }
                match self.watch.progress() {
                    Some(rev) if rev > 0 => return Some(self.bookmark(rev, false)),
                    _ => continue,
                }
            }
            // A bookmark needs a revision the watch has fully delivered, so its timer runs only
            // once the starting point is out.
            let bookmark_at = match (&self.bookmarks, self.watch.progress()) {
                (Some(b), Some(_)) => b.next,
                _ => None,
            };
            tokio::select! {
                item = self.watch.next() => {
                    if let Some(line) = self.line_for(item) {
                        return Some(line);
                    }
                }
                _ = tokio::time::sleep_until(self.deadline) => {
                    // timeoutSeconds, or the server's shutdown: the stream simply ends, with no
                    // final event (B.5), as kube's watch handler returns on either.
                    self.done = true;
                    return None;
                }
                end = self.phases.watch_end(), if !self.ending => {
                    self.ending = true;
                    self.deadline = self.deadline.min(end);
                }
                _ = sleep_until_some(bookmark_at), if bookmark_at.is_some() => {
                    if let Some(b) = &mut self.bookmarks {
                        b.due = true;
                    }
                }
            }
        }
    }

    /// The line for one item of the watch, if it is sent at all.
    fn line_for(&mut self, item: Option<Result<Item, WatchError>>) -> Option<Bytes> {
        let value = match item {
            None => {
                self.done = true;
                return None;
            }
            Some(Ok(Item::Event(ev))) => {
                let kind = match ev.kind {
                    EventType::Added => "ADDED",
                    EventType::Modified => "MODIFIED",
                    EventType::Deleted => "DELETED",
                };
                if let (None, Some(stored)) = (&self.table, &ev.value) {
                    return Some(self.stored_line(kind, stored));
                }
                let object = for_version(self.res, &ev.object);
                let object = match &mut self.table {
                    None => object,
                    Some(opts) => {
                        let rv = meta_str(&object, "resourceVersion").to_string();
                        let rows = vec![table::row(self.res, &object, opts, table::now())];
                        let t = table::table(self.res, opts, json!({"resourceVersion": rv}), rows);
                        // Column definitions only on the first event (watchEmbeddedEncoder).
                        opts.no_headers = true;
                        t
                    }
                };
                json!({"type": kind, "object": object})
            }
            Some(Ok(Item::Synced(rev))) => {
                if !self.end_bookmark {
                    return None;
                }
                return Some(self.bookmark(rev, true));
            }
            Some(Err(err)) => {
                self.done = true;
                let status = match err {
                    // kube's watch-cache wording (B.5): the requested and the oldest-1 revision.
                    WatchError::Store(StoreError::Expired { compacted }) => ApiError::Expired {
                        message: format!(
                            "too old resource version: {} ({compacted})",
                            self.requested
                        ),
                        continue_token: None,
                    },
                    WatchError::Store(other) => ApiError::from(other),
                    WatchError::TooSlow { reached } => ApiError::Expired {
                        message: format!(
                            "the watch fell too far behind after resource version {reached}; \
                             list again and watch from the list's resourceVersion"
                        ),
                        continue_token: None,
                    },
                }
                .to_status();
                json!({"type": "ERROR", "object": status})
            }
        };
        Some(line(&value))
    }

    fn stored_line(&mut self, kind: &str, stored: &[u8]) -> Bytes {
        stored_event_line(self.res, &self.api_version, kind, stored).unwrap_or_else(|e| {
            // Stored bytes always decode; should they not, the watch ends with the error.
            self.done = true;
            line(&json!({"type": "ERROR", "object": e.to_status()}))
        })
    }

    /// A BOOKMARK: the watched kind with only a resourceVersion (B.5); the watch-list's end
    /// bookmark also carries kube 1.32's annotations.
    fn bookmark(&self, rev: u64, initial_events_end: bool) -> Bytes {
        let mut metadata = json!({"resourceVersion": rev.to_string()});
        if initial_events_end {
            // An empty list in the requested encoding (always JSON for watches here), base64.
            let blueprint = json!({
                "apiVersion": self.res.api_version(),
                "items": [],
                "kind": self.res.list_kind,
                "metadata": {},
            });
            let blueprint = base64::engine::general_purpose::STANDARD.encode(blueprint.to_string());
            metadata["annotations"] = json!({
                "k8s.io/initial-events-end": "true",
                "kubernetes.io/initial-events-list-blueprint": blueprint,
            });
        }
        let object = json!({
            "apiVersion": self.res.api_version(),
            "kind": self.res.kind,
            "metadata": metadata,
        });
        line(&json!({"type": "BOOKMARK", "object": object}))
    }
}

async fn sleep_until_some(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// An event line around an object's stored bytes: the event `line` encodes with the object from
/// `for_version` (its object byte for byte), but a fan-out to many watchers encodes nothing per
/// watcher.
fn stored_event_line(
    res: &ResourceInfo,
    api_version: &[u8],
    kind: &str,
    stored: &[u8],
) -> Result<Bytes, ApiError> {
    let mut out = Vec::with_capacity(stored.len() + api_version.len() + 32);
    // kube's field order (watch.Event: type, then object).
    out.extend_from_slice(format!("{{\"type\":\"{kind}\",\"object\":").as_bytes());
    encode_item(res, api_version, stored, &mut out)?;
    out.extend_from_slice(b"}\n");
    Ok(Bytes::from(out))
}

/// One watch event: compact JSON and a newline (clients split on newlines).
fn line(value: &Value) -> Bytes {
    let mut bytes = serde_json::to_vec(value).unwrap_or_default();
    bytes.push(b'\n');
    Bytes::from(bytes)
}

/// kube-apiserver's default: a random duration between 30 and 60 minutes.
fn default_watch_timeout() -> Duration {
    let mut b = [0u8; 2];
    let _ = getrandom::getrandom(&mut b);
    Duration::from_secs(1800 + u64::from(u16::from_le_bytes(b)) % 1801)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn streamed(page: Page, res: &'static ResourceInfo) -> Vec<u8> {
        use futures_util::StreamExt;
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let chunks: Vec<_> = rt.block_on(page.into_json_stream(res).collect());
        chunks.into_iter().flat_map(|c| c.unwrap().to_vec()).collect()
    }

    fn page(items: &[Value], continue_token: Option<&str>, remaining: Option<u64>) -> Page {
        Page {
            revision: 42,
            items: items.iter().map(|v| Bytes::from(serde_json::to_vec(v).unwrap())).collect(),
            decoded: items.iter().map(|_| Default::default()).collect(),
            continue_token: continue_token.map(Into::into),
            remaining,
        }
    }

    #[test]
    fn a_stored_event_line_is_the_encoded_event_byte_for_byte() {
        let res = &crate::generated::RESOURCES[0];
        let api_version = serde_json::to_vec(&res.api_version()).unwrap();
        for obj in [
            json!({"apiVersion": "other/v9", "kind": "K", "metadata": {"name": "a"},
                   "spec": {"s": "q\"u\\o\"te {[", "n": -1.5e3, "apiVersion": "nested"}}),
            json!({"metadata": {"name": "no-api-version"}}),
        ] {
            let stored = serde_json::to_vec(&obj).unwrap();
            let object = serde_json::to_string(&for_version(res, &obj)).unwrap();
            for kind in ["ADDED", "MODIFIED", "DELETED"] {
                let want = format!("{{\"type\":\"{kind}\",\"object\":{object}}}\n");
                let got = stored_event_line(res, &api_version, kind, &stored).unwrap();
                assert_eq!(std::str::from_utf8(&got).unwrap(), want);
                let as_line = line(&json!({"type": kind, "object": for_version(res, &obj)}));
                let parsed = |b: &[u8]| serde_json::from_slice::<Value>(b).unwrap();
                assert_eq!(parsed(&got), parsed(&as_line));
            }
        }
        assert!(stored_event_line(res, &api_version, "ADDED", b"{\"apiVersion\":").is_err());
    }

    #[test]
    fn a_streamed_list_is_the_encoded_list_byte_for_byte() {
        let res = &crate::generated::RESOURCES[0];
        let big = "x".repeat(5000);
        let mut items = vec![
            // apiVersion after nested ones, escapes, numbers, other versions.
            json!({"kind": "K", "metadata": {"name": "a", "ownerReferences": [{"apiVersion": "o/v1"}]},
                   "apiVersion": "other/v9", "spec": {"s": "q\"u\\o\"te {[", "n": -1.5e3, "b": true}}),
            json!({"apiVersion": res.api_version(), "metadata": {"name": "b"}, "x": null, "y": []}),
            // No apiVersion at all: encoded the slow way.
            json!({"metadata": {"name": "c"}, "spec": {"apiVersion": "nested"}}),
            json!({"apiVersion": 7, "metadata": {"name": "d"}}),
        ];
        for i in 0..40 {
            items.push(json!({"apiVersion": "g/v1", "metadata": {"name": format!("n{i}")}, "spec": {"big": big}}));
        }
        for (items, token, remaining) in
            [(&items[..], Some("tok"), Some(3)), (&items[..1], None, None), (&[][..], None, None)]
        {
            let want =
                serde_json::to_vec(&page(items, token, remaining).into_json(res).unwrap()).unwrap();
            let got = streamed(page(items, token, remaining), res);
            assert_eq!(String::from_utf8(got).unwrap(), String::from_utf8(want).unwrap());
        }
    }

    #[test]
    fn bookmarks_every_interval_and_once_before_the_deadline() {
        let now = Instant::now();
        let secs = Duration::from_secs;
        let mut b =
            Bookmarks { interval: secs(60), next: None, last_before_deadline: false, due: false };
        // A long watch: heartbeats.
        b.schedule(now, now + secs(600));
        assert_eq!(b.next, Some(now + secs(60)));
        // The deadline comes before the next heartbeat: one bookmark 2 s before it, then none.
        b.schedule(now + secs(560), now + secs(600));
        assert_eq!(b.next, Some(now + secs(598)));
        b.schedule(now + secs(598), now + secs(600));
        assert_eq!(b.next, None);
        // A deadline under 2 s away: at once.
        let mut b =
            Bookmarks { interval: secs(60), next: None, last_before_deadline: false, due: false };
        b.schedule(now, now + secs(1));
        assert_eq!(b.next, Some(now));
    }
}
