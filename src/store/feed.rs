//! The feed of committed events: where a backend reports its start-up state and each commit, and
//! what turns them into the shared state (cache, revision, hub) and the writers' answers.
//!
//! It runs on the backend's committing thread, synchronously, so a commit is in the cache before
//! its events are published and its writers answered, and published before the backend runs
//! anything else: the order the watch protocol (`watch`) and read-your-writes rely on. It is also
//! where the resourceVersion is set, once per commit, into the bytes every reader then shares
//! (`served`).

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::{oneshot, watch};

use super::cache::{Cache, Entry};
use super::hub::Hub;
use super::{served, Event, EventType, Prev, StoreError, Written};

/// One committed write, reported through `Feed::commit`.
#[derive(Debug)]
pub struct Commit {
    pub rev: u64,
    pub key: String,
    pub kind: EventType,
    /// The revision that created the key (this one for `Added`).
    pub create_rev: u64,
    /// The new value as persisted; for `Deleted`, the deleted state (persisted or as the feed
    /// held it: the shared layer sets the delete's revision either way).
    pub value: Bytes,
    /// `Some` for a write this process appended.
    pub ticket: Option<Ticket>,
}

/// The shared layer's end of one write, carried through a backend and handed back with its
/// commit (or failed): the decoded object to fan out, so nobody decodes the bytes again,
/// and the writer's answer. Opaque to backends.
#[derive(Debug)]
pub struct Ticket {
    /// The object as written, without a resourceVersion; `None` for a delete.
    object: Option<Value>,
    reply: oneshot::Sender<Result<Written, StoreError>>,
}

impl Ticket {
    pub(super) fn new(
        object: Option<Value>,
    ) -> (Ticket, oneshot::Receiver<Result<Written, StoreError>>) {
        let (reply, answer) = oneshot::channel();
        (Ticket { object, reply }, answer)
    }

    /// Answers the writer of a commit the feed has already reported without this ticket (etcd:
    /// the watch can overtake the transaction's answer): `persisted` is the written value, or
    /// the deleted state for a delete. The cache holds the commit already.
    pub fn succeed(self, rev: u64, persisted: &[u8]) {
        let value = served::serve(persisted, rev);
        let object = match self.object {
            Some(mut object) => {
                // Checked when the write was made: it is an object with an object metadata.
                let _ = served::set(&mut object, rev);
                object
            }
            None => serde_json::from_slice(&value).unwrap_or(Value::Null),
        };
        // A send fails only when the writer stopped waiting; the write is done either way.
        let _ = self.reply.send(Ok(Written { object: Arc::new(object), value }));
    }

    /// Answers the writer with a failure: its write took no revision.
    pub fn fail(self, e: StoreError) {
        // A send fails only when the writer stopped waiting; nothing was written either way.
        let _ = self.reply.send(Err(e));
    }
}

/// The state a backend found at start-up, built key by key.
#[derive(Default)]
pub struct Snapshot {
    objects: BTreeMap<Box<str>, Entry>,
}

impl Snapshot {
    /// Adds one live key as persisted; its bytes are served with `rev` from now on.
    pub fn insert(&mut self, key: &str, rev: u64, create_rev: u64, persisted: &[u8]) {
        let value = served::serve(persisted, rev);
        self.objects.insert(key.into(), Entry::new(rev, create_rev, value));
    }
}

/// What a backend reports to; see the module documentation.
pub struct Feed {
    cache: Arc<Cache>,
    hub: Arc<Hub>,
    revision: watch::Sender<u64>,
}

impl Feed {
    pub(super) fn new(cache: Arc<Cache>, hub: Arc<Hub>, revision: watch::Sender<u64>) -> Feed {
        Feed { cache, hub, revision }
    }

    /// Starts the shared state at `rev` with what the backend holds live there. Called once,
    /// before `open` returns and before any commit.
    pub fn load(&self, rev: u64, snapshot: Snapshot) {
        self.cache.reset(rev, snapshot.objects);
        self.hub.start_at(rev);
        self.revision.send_replace(rev);
    }

    /// Replaces the shared state with what the backend holds live at `rev`, after it lost
    /// events (its feed fell behind compaction and it relisted): every watch ends, internal
    /// consumers re-scan (`Hub::restart`).
    pub fn reload(&self, rev: u64, snapshot: Snapshot) {
        self.cache.reset(rev, snapshot.objects);
        self.hub.restart(rev);
        self.revision.send_replace(rev);
    }

    /// The state of `key` at the last commit reported (served bytes). A backend that is the only
    /// writer (SQLite) checks its compare-and-swaps against it instead of reading its log.
    pub fn live(&self, key: &str) -> Option<Entry> {
        self.cache.get(key)
    }

    /// One durable commit, its writes in revision order: the cache moves to it, waiters for its
    /// revision wake, its events are published, then its writers are answered.
    pub fn commit(&self, commits: Vec<Commit>) {
        let Some(rev) = commits.last().map(|c| c.rev) else { return };
        // The resourceVersion goes into the bytes once, here, outside the cache's lock.
        let served: Vec<Bytes> = commits.iter().map(|c| served::serve(&c.value, c.rev)).collect();
        // Each write's object, decoded once: the writer's own, or (a delete, a commit made
        // elsewhere) the bytes'. The cache's entry may take it while its event lives, so a
        // read soon after the write decodes nothing.
        let mut replies = Vec::with_capacity(commits.len());
        let mut objects = Vec::with_capacity(commits.len());
        let mut commits: Vec<Commit> = commits;
        for (commit, value) in commits.iter_mut().zip(&served) {
            let (object, reply) = match commit.ticket.take() {
                Some(Ticket { object, reply }) => (object, Some(reply)),
                None => (None, None),
            };
            let object = match object {
                Some(mut object) => {
                    // Checked when the write was made: it is an object with an object metadata.
                    let _ = served::set(&mut object, commit.rev);
                    object
                }
                None => serde_json::from_slice(value).unwrap_or(Value::Null),
            };
            objects.push(Arc::new(object));
            replies.push(reply);
        }
        let prevs = self.cache.apply(
            rev,
            commits.iter().zip(&served).zip(&objects).map(|((c, value), object)| {
                let entry = (c.kind != EventType::Deleted)
                    .then(|| Entry::decoded(c.rev, c.create_rev, value.clone(), object));
                (c.key.as_str(), entry)
            }),
        );
        self.revision.send_replace(rev);

        let mut answers = Vec::with_capacity(commits.len());
        let all = commits.into_iter().zip(served).zip(prevs).zip(objects).zip(replies);
        for ((((commit, value), prev), object), reply) in all {
            let Commit { rev, key, kind, .. } = commit;
            let prev = match kind {
                EventType::Added => None,
                _ => prev.map(|p| Prev::new(p.value)),
            };
            let size = value.len() + prev.as_ref().map_or(0, |p| p.bytes().len());
            let event = Arc::new(Event { rev, key, kind, object, value, prev, size });
            self.hub.publish(&event);
            if let Some(reply) = reply {
                answers.push((reply, event));
            }
        }
        for (reply, event) in answers {
            let written = Written { object: event.object.clone(), value: event.value.clone() };
            // A send fails only when the writer stopped waiting; the write is done either way.
            let _ = reply.send(Ok(written));
        }
    }
}

impl Drop for Feed {
    /// The backend stopped: no commit will ever come, so every watch ends.
    fn drop(&mut self) {
        self.hub.close();
    }
}
