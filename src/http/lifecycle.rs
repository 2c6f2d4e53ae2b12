//! The server's shutdown phases, as kube-apiserver's lifecycle signals name them
//! (`server/lifecycle_signals.go`, `genericapiserver.go` `Run`).
//!
//! `ShutdownInitiated` (SIGTERM): `/readyz`'s `shutdown` check fails at once while everything is
//! still served for `--shutdown-delay-duration`, so a load balancer can stop sending traffic.
//! `NotAcceptingNewRequest` (after the delay): the listener closes, in-flight requests finish,
//! and every watch ends its stream cleanly. As kube's `WithWatchTerminationDuringShutdown` rate
//! limits the watches' ends (at least 200 a second, all of them within
//! `--shutdown-watch-termination-grace-period`), each watch here takes its turn.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
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
pub struct Lifecycle {
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
}

#[derive(Debug, Clone, Copy)]
struct Drain {
    start: Instant,
    interval: Duration,
    grace: Duration,
}

impl Default for Lifecycle {
    fn default() -> Lifecycle {
        Lifecycle {
            inner: Arc::new(Inner {
                phase: watch::channel(Phase::Serving).0,
                watches: AtomicUsize::new(0),
                drain: std::sync::OnceLock::new(),
                turns: AtomicU64::new(0),
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

impl Lifecycle {
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
        let life = Lifecycle::default();
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
}
