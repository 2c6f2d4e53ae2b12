//! Event expiry (`--event-ttl`): an event is deleted that long after its last write, as
//! kube-apiserver's etcd lease on every write of an Event has it. Each delete carries the
//! resourceVersion the deadline was set for, so an event written again meanwhile lives on.
//! Deadlines follow the writes the job sees; the events already stored when it starts (or after
//! it fell behind) get theirs from their own times, so none lives forever.

use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use tokio::sync::broadcast::error::RecvError;

use crate::controllers::recorder::{events_kind, is_event, text};
use crate::object::error::ApiError;
use crate::object::meta::parse_rfc3339;
use crate::object::meta_str;
use crate::object::At;
use crate::registry::keys::{collection_prefix, split};
use crate::registry::{decode_stored, DeleteOptions, Registry};
use crate::resource::ResourceInfo;
use crate::store::{EventType, ListRequest};

/// Starts deleting events `ttl` after their last write, on the current (single-threaded)
/// runtime, when the document has an events kind. A singleton: run it only where the other
/// singletons (the compactor, the collector) run.
pub fn spawn_expiry(registry: Registry, ttl: Duration) {
    if events_kind().is_some() {
        tokio::task::spawn_local(async move { expire(registry, ttl).await });
    }
}

/// When each event expires: the revision of the write that set the deadline, by key, and
/// the keys in deadline order.
#[derive(Debug, Default)]
struct Deadlines {
    by_key: HashMap<String, (SystemTime, u64)>,
    order: BTreeSet<(SystemTime, String)>,
}

impl Deadlines {
    /// Sets `key`'s deadline for the write at `rev`, unless a later write set it already.
    fn set(&mut self, key: &str, at: SystemTime, rev: u64) {
        if let Some(&(old, old_rev)) = self.by_key.get(key) {
            if old_rev > rev {
                return;
            }
            self.order.remove(&(old, key.to_string()));
        }
        self.by_key.insert(key.to_string(), (at, rev));
        self.order.insert((at, key.to_string()));
    }

    fn remove(&mut self, key: &str) {
        if let Some((at, _)) = self.by_key.remove(key) {
            self.order.remove(&(at, key.to_string()));
        }
    }

    /// Forgets `key`'s deadline if the write at `rev` set it.
    fn remove_if(&mut self, key: &str, rev: u64) {
        if self.by_key.get(key).is_some_and(|&(_, r)| r == rev) {
            self.remove(key);
        }
    }

    /// The keys due by `now`, with the revision each deadline is for.
    fn due(&self, now: SystemTime) -> Vec<(String, u64)> {
        self.order
            .iter()
            .take_while(|(at, _)| *at <= now)
            .map(|(_, k)| (k.clone(), self.by_key[k].1))
            .collect()
    }

    fn next(&self) -> Option<SystemTime> {
        self.order.first().map(|(at, _)| *at)
    }
}

/// When a stored event was last written, as far as its own fields tell: the latest of its
/// managedFields times and its timestamps (a restart does not know when the writes it did not
/// see were made).
fn last_written(event: &Value) -> Option<i64> {
    let mut times: Vec<&str> = ["/lastTimestamp", "/firstTimestamp", "/eventTime"]
        .iter()
        .map(|p| text(event, p))
        .collect();
    times.push(text(event, "/series/lastObservedTime"));
    times.push(text(event, "/metadata/creationTimestamp"));
    let managed = event.at("/metadata/managedFields").and_then(Value::as_array);
    times.extend(managed.into_iter().flatten().filter_map(|m| m.get("time")?.as_str()));
    times.into_iter().filter_map(parse_rfc3339).max()
}

/// Every stored event's deadline, from its own fields.
async fn scan(
    registry: &Registry,
    kind: &ResourceInfo,
    ttl: Duration,
    into: &mut Deadlines,
) -> Result<(), ApiError> {
    let mut start_after = None;
    loop {
        let page = registry
            .store()
            .list_raw(ListRequest {
                prefix: collection_prefix(kind, None),
                revision: None,
                start_after: start_after.clone(),
                limit: Some(1000),
            })
            .await?;
        start_after = page.items.last().map(|(k, _)| k.clone());
        for (key, bytes) in &page.items {
            let event = decode_stored(bytes)?;
            let rev = meta_str(&event, "resourceVersion").parse().unwrap_or(0);
            let written = match last_written(&event) {
                Some(secs) => UNIX_EPOCH + Duration::from_secs(secs.max(0) as u64),
                None => SystemTime::now(),
            };
            into.set(key, written + ttl, rev);
        }
        if !page.more {
            return Ok(());
        }
    }
}

/// How long the job waits at most between looks, should it hear of no write.
const IDLE: Duration = Duration::from_secs(60);

async fn expire(registry: Registry, ttl: Duration) {
    let Some(kind) = events_kind() else { return };
    // Subscribed before the scan: no write falls between them.
    let mut writes = registry.store().subscribe(is_event);
    let mut deadlines = Deadlines::default();
    let mut rescan = true;
    loop {
        if rescan {
            match scan(&registry, kind, ttl, &mut deadlines).await {
                Ok(()) => rescan = false,
                Err(e) => log::warn!("reading the events to expire failed: {e}"),
            }
        }
        let now = SystemTime::now();
        for (key, rev) in deadlines.due(now) {
            let Some((_, _, ns, name)) = split(&key) else {
                deadlines.remove(&key);
                continue;
            };
            let opts = DeleteOptions {
                precondition_rv: Some(rev.to_string()),
                ..DeleteOptions::default()
            };
            match registry.delete(kind, ns, name, &opts).await {
                // Gone, or written again since (its newer write sets its deadline).
                Ok(_) | Err(ApiError::NotFound { .. }) | Err(ApiError::Conflict { .. }) => {
                    deadlines.remove_if(&key, rev)
                }
                Err(e) => {
                    log::warn!("expiring event {key} failed: {e}");
                    deadlines.set(&key, now + Duration::from_secs(1), rev);
                }
            }
        }
        let wait = deadlines
            .next()
            .map_or(IDLE, |at| at.duration_since(SystemTime::now()).unwrap_or_default())
            .min(IDLE);
        tokio::select! {
            ev = writes.recv() => match ev {
                Ok(ev) if ev.kind == EventType::Deleted => deadlines.remove_if(&ev.key, ev.rev),
                Ok(ev) => deadlines.set(&ev.key, SystemTime::now() + ttl, ev.rev),
                Err(RecvError::Lagged(_)) => rescan = true,
                Err(RecvError::Closed) => return,
            },
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deadlines_follow_the_latest_write() {
        let mut d = Deadlines::default();
        let t = |s: u64| UNIX_EPOCH + Duration::from_secs(s);
        d.set("a", t(10), 5);
        d.set("b", t(20), 6);
        d.set("a", t(5), 4);
        assert_eq!(d.next(), Some(t(10)), "an older write does not move the deadline");
        d.set("a", t(30), 7);
        assert_eq!(d.due(t(25)), [("b".to_string(), 6)]);
        d.remove_if("b", 5);
        assert_eq!(d.next(), Some(t(20)), "only the write that set it removes it");
        d.remove_if("b", 6);
        assert_eq!(d.due(t(40)), [("a".to_string(), 7)]);
    }

    #[test]
    fn a_stored_event_was_last_written_at_its_latest_time() {
        let e = json!({"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z",
                                    "managedFields": [{"time": "2024-01-01T00:10:00Z"}]},
                       "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:05:00Z"});
        assert_eq!(last_written(&e), parse_rfc3339("2024-01-01T00:10:00Z"));
        assert_eq!(last_written(&json!({})), None);
    }
}
