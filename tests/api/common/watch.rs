//! Watches as a client reads them: a line-by-line reader and the events it expects.

use super::*;

/// The events of an open watch.
pub struct Watch {
    pub(super) rx: mpsc::Receiver<Value>,
    pub content_type: String,
}

impl Watch {
    /// The next event within `timeout`, or None (stream ended or nothing came).
    pub fn next(&self, timeout: Duration) -> Option<Value> {
        self.rx.recv_timeout(timeout).ok()
    }

    /// The next event, failing the test (at the caller's line) after 5 s.
    #[track_caller]
    pub fn expect(&self) -> Value {
        self.next(Duration::from_secs(5)).expect("a watch event within 5 s")
    }

    /// Asserts nothing arrives for `wait`.
    pub fn expect_none(&self, wait: Duration) {
        if let Some(ev) = self.next(wait) {
            panic!("unexpected watch event: {ev}");
        }
    }
}

impl Watch {
    /// Whether the stream ends within `timeout` (events before the end are skipped).
    pub fn ends_within(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(_) => continue,
                Err(mpsc::RecvTimeoutError::Disconnected) => return true,
                Err(mpsc::RecvTimeoutError::Timeout) => return false,
            }
        }
    }

    /// Skips events until one of `kind` for object `name` arrives (5 s), and returns it.
    pub fn expect_event(&self, kind: &str, name: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let ev = self
                .next(left)
                .unwrap_or_else(|| panic!("no {kind} event for {name:?} within 5 s"));
            if ev["type"] == kind && ev["object"]["metadata"]["name"] == name {
                return ev;
            }
        }
    }
}

/// Asserts the next event is `kind` for `name` and returns its object.
pub fn next_event(w: &Watch, kind: &str, name: &str) -> Value {
    let ev = w.expect();
    assert_eq!(ev["type"], kind, "event {ev}");
    assert_eq!(ev["object"]["metadata"]["name"], name, "event {ev}");
    ev["object"].clone()
}

// ---------------------------------------------------------------------------------------------
// kubectl, the first real client.

/// The distinct values the string at `field` takes on the watched object `name`, in order,
/// until one of `last`.
#[track_caller]
pub fn sequence(watch: &Watch, name: &str, field: &str, last: &[&str]) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    while seen.last().is_none_or(|v| !last.contains(&v.as_str())) {
        let ev = watch.expect();
        if ev["object"]["metadata"]["name"] != name {
            continue;
        }
        let v = ev["object"].pointer(field).and_then(Value::as_str).unwrap_or("").to_string();
        if seen.last() != Some(&v) {
            seen.push(v);
        }
    }
    seen
}
