//! The history retention policy: which revision compaction may advance to (A.6).
//!
//! History is kept for at least `window` and at least the newest `min_revisions` revisions. The
//! log has no timestamps, so the compactor records `(time, revision)` marks as it ticks and
//! compacts to the newest mark that is older than the window. After a restart no mark is old
//! enough until a full window has passed, which only keeps more history. The policy is the same
//! for every backend; when and how a backend compacts to its target is its own (SQLite: in small
//! batches between commands on its thread).

use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How long history is kept and how compaction paces itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetentionConfig {
    /// How long list tokens and watch starts stay valid (A.6: 5 minutes).
    pub window: Duration,
    /// The newest revisions always kept, as kine's `compact-min-retain`.
    pub min_revisions: u64,
    /// How often the compactor records a mark and checks the target. A token lives between
    /// `window` and `window + interval`.
    pub interval: Duration,
}

impl Default for RetentionConfig {
    fn default() -> RetentionConfig {
        RetentionConfig {
            window: Duration::from_secs(5 * 60),
            min_revisions: 1000,
            interval: Duration::from_secs(10),
        }
    }
}

/// Marks of `(when, revision)`, oldest first.
#[derive(Debug)]
pub struct Retention {
    cfg: RetentionConfig,
    marks: VecDeque<(Instant, u64)>,
}

impl Retention {
    pub fn new(cfg: RetentionConfig) -> Retention {
        Retention { cfg, marks: VecDeque::new() }
    }

    pub fn interval(&self) -> Duration {
        self.cfg.interval
    }

    /// Records that `rev` was the current revision at `now`.
    pub fn record(&mut self, now: Instant, rev: u64) {
        self.marks.push_back((now, rev));
    }

    /// The revision history may be compacted to at `now`, when the current revision is `rev`.
    pub fn target(&mut self, now: Instant, rev: u64) -> u64 {
        let window = self.cfg.window;
        // Drop marks superseded by a newer mark that is itself out of the window.
        while self.marks.get(1).is_some_and(|&(t, _)| now.duration_since(t) >= window) {
            self.marks.pop_front();
        }
        let aged = match self.marks.front() {
            Some(&(t, r)) if now.duration_since(t) >= window => r,
            _ => 0,
        };
        aged.min(rev.saturating_sub(self.cfg.min_revisions))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_window_and_the_minimum() {
        let window = Duration::from_secs(300);
        let cfg = RetentionConfig { window, min_revisions: 1000, interval: Duration::from_secs(1) };
        let t0 = Instant::now();
        let mut r = Retention::new(cfg);
        r.record(t0, 5000);
        r.record(t0 + Duration::from_secs(60), 6000);
        // Nothing is old enough yet.
        assert_eq!(r.target(t0 + Duration::from_secs(10), 7000), 0);
        // The first mark aged out: history up to it may go.
        assert_eq!(r.target(t0 + window, 7000), 5000);
        // Both aged: the newer one wins and the older is forgotten.
        assert_eq!(r.target(t0 + window + Duration::from_secs(60), 7000), 6000);
        assert_eq!(r.marks.len(), 1);
        // The newest 1000 revisions are always kept.
        assert_eq!(r.target(t0 + window * 2, 6500), 5500);
    }
}
