//! The server's shutdown phases, as kube-apiserver's lifecycle signals name them
//! (`server/lifecycle_signals.go`, `genericapiserver.go` `Run`).
//!
//! `ShutdownInitiated` (SIGTERM): `/readyz`'s `shutdown` check fails at once while everything is
//! still served for `--shutdown-delay-duration`, so a load balancer can stop sending traffic.
//! `NotAcceptingNewRequest` (after the delay): the listener closes, in-flight requests finish,
//! and every watch ends its stream cleanly. As kube's `WithWatchTerminationDuringShutdown` rate
//! limits the watches' ends (at least 200 a second, all of them within
//! `--shutdown-watch-termination-grace-period`), each watch here takes its turn. With
//! `--shutdown-send-retry-after` the listener stays open after the delay instead: every new
//! request (health and metrics aside) gets 429 with `Retry-After` and `Connection: close` until
//! the requests in flight have drained (kube's `WithRetryAfter` and `WithWaitGroup`).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};
use tokio::time::Instant;

/// Where the server is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Phase {
    Serving,
    /// `/readyz` fails; requests are still served.
    ShutdownInitiated,
    /// No new connections; watches end.
    NotAcceptingNewRequests,
}

/// kube's floor for how fast watches are ended during shutdown (`genericapiserver.go`).
const MIN_WATCH_ENDS_PER_SECOND: f64 = 200.0;

/// The shared view of the phase, and the watches' turns to end. Cloning shares it.
#[derive(Clone)]
pub struct Phases {
    inner: Arc<Inner>,
}

struct Inner {
    phase: watch::Sender<Phase>,
    /// Watches open now.
    watches: AtomicUsize,
    /// Set when new requests stop: when watches end, and how far apart.
    drain: std::sync::OnceLock<Drain>,
    /// The next turn to end a watch.
    turns: AtomicU64,
    /// Requests in flight that are neither watches nor exempt from the drain.
    requests: AtomicUsize,
    /// Told whenever `requests` drops to zero.
    drained: Notify,
    /// After the delay, new requests get 429 while those in flight drain.
    send_retry_after: AtomicBool,
}

#[derive(Debug, Clone, Copy)]
struct Drain {
    start: Instant,
    interval: Duration,
    grace: Duration,
}

impl Default for Phases {
    fn default() -> Phases {
        Phases {
            inner: Arc::new(Inner {
                phase: watch::channel(Phase::Serving).0,
                watches: AtomicUsize::new(0),
                drain: std::sync::OnceLock::new(),
                turns: AtomicU64::new(0),
                requests: AtomicUsize::new(0),
                drained: Notify::new(),
                send_retry_after: AtomicBool::new(false),
            }),
        }
    }
}

/// Holds one open watch in the count; dropping it leaves.
pub struct WatchGuard {
    inner: Arc<Inner>,
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.inner.watches.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Holds one request in the drain's count; dropping it leaves.
pub struct RequestGuard {
    inner: Arc<Inner>,
}

impl Drop for RequestGuard {
    fn drop(&mut self) {
        if self.inner.requests.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.inner.drained.notify_waiters();
        }
    }
}

impl Phases {
    pub fn phase(&self) -> Phase {
        *self.inner.phase.borrow()
    }

    /// SIGTERM: `/readyz` fails from now on.
    pub fn initiate_shutdown(&self) {
        self.advance(Phase::ShutdownInitiated);
    }

    /// The delay is over: watches end, each at its turn, all within `grace` (none waits when
    /// `grace` is zero, as kube then does not wait for them).
    pub fn stop_accepting(&self, grace: Duration) {
        let count = self.inner.watches.load(Ordering::Relaxed);
        let _ = self.inner.drain.set(Drain {
            start: Instant::now(),
            interval: watch_end_interval(count, grace),
            grace,
        });
        self.advance(Phase::NotAcceptingNewRequests);
    }

    fn advance(&self, to: Phase) {
        self.inner.phase.send_if_modified(|p| {
            let moved = *p < to;
            *p = (*p).max(to);
            moved
        });
    }

    /// `--shutdown-send-retry-after`: once the delay is over, new requests are refused with 429
    /// until those in flight have drained, and only then does the listener close.
    pub fn set_send_retry_after(&self, on: bool) {
        self.inner.send_retry_after.store(on, Ordering::Relaxed);
    }

    /// Whether a new request is to be refused with 429 and `Retry-After` (kube's
    /// `WithRetryAfter`, after the delay, with `--shutdown-send-retry-after`).
    pub fn refuses_new_requests(&self) -> bool {
        self.inner.send_retry_after.load(Ordering::Relaxed)
            && self.phase() >= Phase::NotAcceptingNewRequests
    }

    /// Counts a request in flight until the guard drops.
    pub fn request_started(&self) -> RequestGuard {
        self.inner.requests.fetch_add(1, Ordering::AcqRel);
        RequestGuard { inner: self.inner.clone() }
    }

    /// Resolves once no counted request is in flight.
    pub async fn requests_drained(&self) {
        loop {
            let told = self.inner.drained.notified();
            if self.inner.requests.load(Ordering::Acquire) == 0 {
                return;
            }
            told.await;
        }
    }

    /// Counts a watch as open until the guard drops.
    pub fn watch_opened(&self) -> WatchGuard {
        self.inner.watches.fetch_add(1, Ordering::Relaxed);
        WatchGuard { inner: self.inner.clone() }
    }

    /// Watches open now.
    pub fn open_watches(&self) -> usize {
        self.inner.watches.load(Ordering::Relaxed)
    }

    /// Resolves, once new requests stop, with the instant an open watch must end by: the next
    /// free turn, never past the grace period.
    pub async fn watch_end(&self) -> Instant {
        let mut phase = self.inner.phase.subscribe();
        // An error means the sender is gone, which the `Arc` it lives in rules out.
        let _ = phase.wait_for(|p| *p >= Phase::NotAcceptingNewRequests).await;
        let Some(drain) = self.inner.drain.get() else { return Instant::now() };
        let turn = self.inner.turns.fetch_add(1, Ordering::Relaxed);
        let after = drain.interval.saturating_mul(u32::try_from(turn).unwrap_or(u32::MAX));
        drain.start + after.min(drain.grace)
    }
}

/// Between two watches' ends: kube's rate, `count / grace` a second but at least 200; no wait
/// without a grace period.
fn watch_end_interval(count: usize, grace: Duration) -> Duration {
    if grace.is_zero() {
        return Duration::ZERO;
    }
    let rate = (count as f64 / grace.as_secs_f64()).max(MIN_WATCH_ENDS_PER_SECOND);
    Duration::from_secs_f64(1.0 / rate)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_end_at_kubes_rate_and_within_the_grace_period() {
        assert_eq!(watch_end_interval(10, Duration::ZERO), Duration::ZERO);
        // Few watches: the floor of 200 a second.
        assert_eq!(watch_end_interval(10, Duration::from_secs(10)), Duration::from_millis(5));
        // Many: spread over the grace period.
        assert_eq!(watch_end_interval(10_000, Duration::from_secs(10)), Duration::from_millis(1));
    }

    #[tokio::test]
    async fn phases_only_move_forward_and_turns_are_spaced() {
        let life = Phases::default();
        assert_eq!(life.phase(), Phase::Serving);
        let (a, b) = (life.watch_opened(), life.watch_opened());
        assert_eq!(life.open_watches(), 2);
        life.initiate_shutdown();
        assert_eq!(life.phase(), Phase::ShutdownInitiated);
        let start = Instant::now();
        life.stop_accepting(Duration::from_secs(1));
        life.initiate_shutdown();
        assert_eq!(life.phase(), Phase::NotAcceptingNewRequests);
        let first = life.watch_end().await;
        let second = life.watch_end().await;
        assert!(
            first >= start && second - first == Duration::from_millis(5),
            "{first:?} {second:?}"
        );
        drop((a, b));
        assert_eq!(life.open_watches(), 0);
    }

    #[tokio::test]
    async fn requests_drain_and_new_ones_are_refused_only_when_asked() {
        let life = Phases::default();
        let held = life.request_started();
        life.stop_accepting(Duration::ZERO);
        assert!(!life.refuses_new_requests(), "off by default");
        life.set_send_retry_after(true);
        assert!(life.refuses_new_requests());
        let waiter = tokio::spawn({
            let life = life.clone();
            async move { life.requests_drained().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished(), "a request is still in flight");
        drop(held);
        tokio::time::timeout(Duration::from_secs(5), waiter).await.unwrap().unwrap();
    }
}
