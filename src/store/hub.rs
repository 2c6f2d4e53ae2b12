//! Fan-out of committed events to subscribers, each with its own bounded queue.
//!
//! The feed publishes every commit here, on the backend's committing thread, before that backend
//! runs anything else; publishing
//! never waits for a subscriber. Each subscription has a key prefix and a filter (events outside
//! them are never queued for it, and wake nobody) and a budget in events and bytes. What happens
//! when a subscriber exceeds it depends on its policy:
//! - `Lag::End` (watches): the subscription is cut off at once. Its queue is freed, it leaves
//!   the hub, and its next `recv` reports `Lagged`; a watch then ends with 410 rather than being
//!   resumed with events missing. A client that stops reading can so pin at most one budget.
//! - `Lag::Resume` (internal consumers that re-scan on loss, e.g. the garbage collector): the
//!   queue is dropped, `recv` reports `Lagged` once, and delivery resumes with newer events.
//!
//! A shared ring such as `tokio::sync::broadcast` would pin its whole capacity of events for the
//! slowest subscriber, of any size, and could not drop a slow watcher until it was next polled.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use futures_util::FutureExt;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::Notify;

use super::Event;

/// What a subscription's queue may hold before its subscriber counts as too slow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueLimits {
    pub events: usize,
    pub bytes: usize,
}

impl Default for QueueLimits {
    fn default() -> QueueLimits {
        QueueLimits { events: 4096, bytes: 64 << 20 }
    }
}

/// What to do with a subscriber that exceeds its queue limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lag {
    /// Cut it off for good (watches: the client must re-list).
    End,
    /// Drop what is queued, report the loss once, then go on.
    Resume,
}

/// Counts for observability (and for tests that check nothing leaks).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HubStats {
    /// Live `Lag::End` subscriptions, i.e. open watches.
    pub watchers: u64,
    /// `Lag::End` subscriptions cut off for being too slow, since start.
    pub terminated: u64,
}

pub struct Hub {
    subs: Mutex<HashMap<u64, Arc<Shared>>>,
    /// The newest revision published; read and written under `subs`.
    rev: AtomicU64,
    next_id: AtomicU64,
    terminated: AtomicU64,
    limits: QueueLimits,
}

/// Which events under its prefix a subscriber wants; it runs on the committing thread as events are
/// published, so a subscriber that wants few is not woken for the rest. A closure, so each
/// subscription can hold what it tests against (a singleton's kinds, made anew each term).
pub type Filter = Box<dyn Fn(&Event) -> bool + Send + Sync>;

struct Shared {
    prefix: String,
    filter: Filter,
    lag: Lag,
    state: Mutex<State>,
    notify: Notify,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Arc<Event>>,
    bytes: usize,
    /// The newest revision published while subscribed, queued for it or not.
    published: u64,
    /// Events were dropped (the newest dropped revision); reported by the next `recv`.
    dropped: Option<u64>,
    /// Cut off (`Lag::End`) or the store closed: nothing more will be queued.
    closed: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding one of these locks leaves plain data behind; keep serving.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Hub {
    pub fn new(limits: QueueLimits) -> Hub {
        Hub {
            subs: Mutex::new(HashMap::new()),
            rev: AtomicU64::new(0),
            next_id: AtomicU64::new(0),
            terminated: AtomicU64::new(0),
            limits,
        }
    }

    /// The store's revision when it opened, before anything is published.
    pub fn start_at(&self, rev: u64) {
        let _subs = lock(&self.subs);
        self.rev.store(rev, Ordering::Relaxed);
    }

    /// A new subscription to the events under `prefix` that pass `filter`, published from now
    /// on.
    pub fn subscribe(self: &Arc<Hub>, prefix: &str, filter: Filter, lag: Lag) -> Subscription {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut subs = lock(&self.subs);
        let shared = Arc::new(Shared {
            prefix: prefix.to_owned(),
            filter,
            lag,
            // What was published before is not this subscriber's to wait for.
            state: Mutex::new(State {
                published: self.rev.load(Ordering::Relaxed),
                ..State::default()
            }),
            notify: Notify::new(),
        });
        subs.insert(id, shared.clone());
        Subscription { id, shared, hub: Arc::downgrade(self) }
    }

    /// Queues `event` for every subscription whose prefix holds its key; never blocks on one.
    pub fn publish(&self, event: &Arc<Event>) {
        let mut subs = lock(&self.subs);
        self.rev.store(event.rev, Ordering::Relaxed);
        let mut cut = Vec::new();
        for (&id, sub) in subs.iter() {
            let mut st = lock(&sub.state);
            st.published = event.rev;
            if st.closed || !event.key.starts_with(&sub.prefix) || !(sub.filter)(event) {
                continue;
            }
            let full = st.queue.len() >= self.limits.events
                || (st.bytes + event.size > self.limits.bytes && !st.queue.is_empty());
            if full {
                st.queue = VecDeque::new();
                st.bytes = 0;
                st.dropped = Some(event.rev);
                if sub.lag == Lag::End {
                    st.closed = true;
                    cut.push(id);
                }
            } else {
                st.bytes += event.size;
                st.queue.push_back(event.clone());
            }
            drop(st);
            sub.notify.notify_one();
        }
        for id in cut {
            subs.remove(&id);
            self.terminated.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The backend reloaded its state at `rev` (a relist past compaction): the events between
    /// the last published and `rev` are lost to every subscriber. Watches get what was queued,
    /// then their end, as kube's cacher ends its watchers when its reflector relists (clients
    /// re-watch from their last resourceVersion, now compacted, and relist); `Lag::Resume`
    /// consumers are told of the loss and re-scan.
    pub fn restart(&self, rev: u64) {
        let mut subs = lock(&self.subs);
        // A reset restarts the hub from outside the committing thread: a commit published
        // meanwhile is not unpublished.
        let rev = rev.max(self.rev.load(Ordering::Relaxed));
        self.rev.store(rev, Ordering::Relaxed);
        subs.retain(|_, sub| {
            let mut st = lock(&sub.state);
            st.published = rev;
            let keep = match sub.lag {
                Lag::End => {
                    st.closed = true;
                    false
                }
                Lag::Resume => {
                    st.queue = VecDeque::new();
                    st.bytes = 0;
                    st.dropped = Some(rev);
                    true
                }
            };
            drop(st);
            sub.notify.notify_one();
            keep
        });
    }

    /// Wakes every subscriber with end-of-stream: the store is gone.
    pub fn close(&self) {
        for (_, sub) in lock(&self.subs).drain() {
            lock(&sub.state).closed = true;
            sub.notify.notify_one();
        }
    }

    pub fn stats(&self) -> HubStats {
        let watchers = lock(&self.subs).values().filter(|s| s.lag == Lag::End).count() as u64;
        HubStats { watchers, terminated: self.terminated.load(Ordering::Relaxed) }
    }
}

/// What `Subscription::batch` took: the events, in order, and whether some were lost.
pub struct Batch {
    pub events: Vec<Arc<Event>>,
    pub lagged: bool,
}

/// One subscriber's end; leaves the hub when dropped.
pub struct Subscription {
    id: u64,
    shared: Arc<Shared>,
    hub: Weak<Hub>,
}

impl Subscription {
    /// The next queued event. `Lagged` reports dropped events (then, under `Lag::End`, every
    /// later call too); `Closed` that the store is gone. Cancel-safe: an event is taken from the
    /// queue only by a call that returns it.
    pub async fn recv(&mut self) -> Result<Arc<Event>, RecvError> {
        loop {
            {
                let mut st = lock(&self.shared.state);
                if let Some(rev) = st.dropped {
                    if self.shared.lag == Lag::Resume {
                        st.dropped = None;
                    }
                    return Err(RecvError::Lagged(rev));
                }
                if let Some(event) = st.queue.pop_front() {
                    st.bytes -= event.size;
                    return Ok(event);
                }
                if st.closed {
                    return Err(RecvError::Closed);
                }
            }
            // A publish between the check and here leaves a permit, so no wake-up is lost.
            self.shared.notify.notified().await;
        }
    }

    /// Waits for the next event, then takes every one already queued behind it: one batch for
    /// a level-triggered consumer (a controller), which decides once from the state they leave.
    /// A loss ends the batch (`lagged`: the consumer relists). `None` once the store is gone.
    pub async fn batch(&mut self) -> Option<Batch> {
        let mut out = Batch { events: Vec::new(), lagged: false };
        let mut next = Some(self.recv().await);
        while let Some(ev) = next.take() {
            match ev {
                Ok(ev) => out.events.push(ev),
                Err(RecvError::Lagged(_)) => {
                    out.lagged = true;
                    break;
                }
                Err(RecvError::Closed) => return None,
            }
            next = self.recv().now_or_never();
        }
        Some(out)
    }

    /// A revision up to which every event for this subscriber has been taken by `recv`: the
    /// newest published while nothing is queued, else just below the oldest queued event.
    /// `None` once events were dropped.
    pub fn taken_through(&self) -> Option<u64> {
        let st = lock(&self.shared.state);
        if st.dropped.is_some() {
            return None;
        }
        Some(st.queue.front().map_or(st.published, |e| e.rev - 1))
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(hub) = self.hub.upgrade() {
            lock(&hub.subs).remove(&self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::EventType;
    use futures_util::FutureExt;

    fn event(rev: u64) -> Arc<Event> {
        let value = bytes::Bytes::from_static(b"{}");
        let (key, object) = (format!("k/{rev}"), Arc::new(serde_json::json!({})));
        Arc::new(Event { rev, key, kind: EventType::Added, object, value, prev: None, size: 2 })
    }

    /// A relist: a watch gets what was queued and then its end; a re-scanning consumer is told
    /// of the loss once and goes on with what follows.
    #[test]
    fn a_restart_ends_watches_and_tells_rescanners_of_the_loss() {
        let hub = Arc::new(Hub::new(QueueLimits::default()));
        hub.start_at(1);
        let mut watch = hub.subscribe("k/", Box::new(|_| true), Lag::End);
        let mut consumer = hub.subscribe("", Box::new(|_| true), Lag::Resume);
        hub.publish(&event(2));
        hub.restart(10);
        hub.publish(&event(11));
        let next = |s: &mut Subscription| s.recv().now_or_never().expect("ready");
        assert_eq!(next(&mut watch).unwrap().rev, 2);
        assert!(matches!(next(&mut watch), Err(RecvError::Closed)));
        assert!(matches!(next(&mut consumer), Err(RecvError::Lagged(10))));
        assert_eq!(next(&mut consumer).unwrap().rev, 11);
        assert_eq!(hub.stats().watchers, 0);
    }

    /// A batch is what was queued when it was taken, ended by a loss; none once closed.
    #[test]
    fn a_batch_takes_what_is_queued_and_ends_at_a_loss() {
        let hub = Arc::new(Hub::new(QueueLimits::default()));
        hub.start_at(1);
        let mut sub = hub.subscribe("", Box::new(|_| true), Lag::Resume);
        for rev in 2..5 {
            hub.publish(&event(rev));
        }
        let mut next = || sub.batch().now_or_never().expect("ready");
        let b = next().expect("open");
        assert_eq!(b.events.iter().map(|e| e.rev).collect::<Vec<_>>(), [2, 3, 4]);
        assert!(!b.lagged);
        hub.restart(10);
        hub.publish(&event(11));
        let b = next().expect("open");
        assert!(b.lagged && b.events.is_empty());
        assert_eq!(next().expect("open").events[0].rev, 11);
        hub.close();
        assert!(next().is_none());
    }
}
