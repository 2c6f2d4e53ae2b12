//! The history retention policy: which revision compaction may advance to (A.6).
//!
//! History is kept for at least `RETAIN_WINDOW` and at least the newest `RETAIN_MIN_REVISIONS`
//! revisions. The log has no timestamps, so the store thread records `(time, revision)` marks as
//! it ticks and compacts to the newest mark that is older than the window. After a restart no
//! mark is old enough until a full window has passed, which only keeps more history.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How long list tokens and watch starts stay valid (A.6: 5 minutes).
pub const RETAIN_WINDOW: Duration = Duration::from_secs(5 * 60);
/// The newest revisions always kept, as kine's `compact-min-retain`.
pub const RETAIN_MIN_REVISIONS: u64 = 1000;
/// How often the store thread records a mark and checks the target.
pub const TICK: Duration = Duration::from_secs(10);
/// Revisions compacted per transaction, so no single write waits long behind compaction.
pub const BATCH: u64 = 1000;

/// Marks of `(when, revision)`, oldest first.
#[derive(Debug, Default)]
pub struct Retention {
    marks: VecDeque<(Instant, u64)>,
}

impl Retention {
    /// Records that `rev` was the current revision at `now`.
    pub fn record(&mut self, now: Instant, rev: u64) {
        self.marks.push_back((now, rev));
    }

    /// The revision history may be compacted to at `now`, when the current revision is `rev`.
    pub fn target(&mut self, now: Instant, rev: u64) -> u64 {
        // Drop marks superseded by a newer mark that is itself out of the window.
        while self.marks.get(1).is_some_and(|&(t, _)| now.duration_since(t) >= RETAIN_WINDOW) {
            self.marks.pop_front();
        }
        let aged = match self.marks.front() {
            Some(&(t, r)) if now.duration_since(t) >= RETAIN_WINDOW => r,
            _ => 0,
        };
        aged.min(rev.saturating_sub(RETAIN_MIN_REVISIONS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_window_and_the_minimum() {
        let t0 = Instant::now();
        let mut r = Retention::default();
        r.record(t0, 5000);
        r.record(t0 + Duration::from_secs(60), 6000);
        // Nothing is old enough yet.
        assert_eq!(r.target(t0 + Duration::from_secs(10), 7000), 0);
        // The first mark aged out: history up to it may go.
        assert_eq!(r.target(t0 + RETAIN_WINDOW, 7000), 5000);
        // Both aged: the newer one wins and the older is forgotten.
        assert_eq!(r.target(t0 + RETAIN_WINDOW + Duration::from_secs(60), 7000), 6000);
        assert_eq!(r.marks.len(), 1);
        // The newest 1000 revisions are always kept.
        assert_eq!(r.target(t0 + RETAIN_WINDOW * 2, 6500), 5500);
    }
}
