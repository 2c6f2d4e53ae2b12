//! The engine thread: owns the SQLite connection and runs every command in arrival order.
//!
//! One thread and one connection serialise all work, so the revision counter lives here in memory
//! and every write takes the next number: no gaps, no fill rows (kine's lesson, B.9). Writes
//! queued together share one transaction and one fsync (group commit, `write_batch`). After each
//! commit, before the next command runs, the feed moves the cache to it, publishes its events and
//! answers its writers, which is what lets a watcher subscribe, then read, and dedupe by revision
//! (see `watch`).
//!
//! Compaction runs here too, in batches of at most `BATCH` revisions, each its own transaction,
//! taken only when no command is waiting (and one per tick under steady load), so a write never
//! waits behind more than one batch.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rusqlite::types::Type;
use rusqlite::{params, Connection, OptionalExtension};
use tokio::sync::oneshot;

use super::conn::{begin, connect, meta_get};
use super::{preflight, sql};
use crate::store::backend::{Change, Commit, Feed, KeyValue, Op, Range, Snapshot, Write};
use crate::store::retention::{Retention, RetentionConfig};
use crate::store::{served, EventType, ListRequest, StoreError};

type Result<T> = std::result::Result<T, StoreError>;

/// Where the thread sends one command's answer.
pub type Reply<T> = oneshot::Sender<Result<T>>;

/// The work the backend's handle hands to the engine thread.
pub enum Command {
    Get {
        key: String,
        rev: Option<u64>,
        reply: Reply<Option<KeyValue>>,
    },
    List {
        req: ListRequest,
        reply: Reply<Range>,
    },
    CountAfter {
        prefix: String,
        after: String,
        rev: u64,
        reply: Reply<u64>,
    },
    /// A create, update or delete; queued writes are committed together (see `write_batch`).
    Write(Write),
    Probe {
        reply: Reply<()>,
    },
    Secret {
        name: String,
        reply: Reply<Vec<u8>>,
    },
    EventsAfter {
        prefix: String,
        rev: u64,
        reply: Reply<Vec<Change>>,
    },
    Compact {
        rev: u64,
        reply: Reply<u64>,
    },
    StartCompaction,
    /// Checkpoint the WAL, answer, and stop the thread (commands queued before it run first).
    Close {
        reply: Reply<()>,
    },
    #[cfg(test)]
    Pragmas {
        reply: Reply<(String, i64)>,
    },
}

/// At most this many queued writes share one transaction: bounds how long the first of them
/// waits for the last, and the size of one commit.
pub const MAX_BATCH: usize = 256;

/// Revisions compacted per transaction at most. Each batch deletes at most about twice this many
/// rows, so a write queued behind it waits a few milliseconds, not the whole compaction.
pub const BATCH: u64 = 256;

/// A write done inside the batch's open transaction, reported only once it commits.
struct Staged {
    rev: u64,
    kind: EventType,
    create_rev: u64,
    /// A delete's tombstone: the deleted state as persisted.
    tombstone: Option<Bytes>,
}

/// A key's live state as a batch's writes are checked against it.
#[derive(Clone, Copy)]
struct Live {
    rev: u64,
    create_rev: u64,
    /// The batch's write that staged it; `None`: the state at the last commit.
    staged_by: Option<usize>,
}

/// The live state a batch's writes are checked against: the state at the last commit (the
/// feed's, i.e. the cache) under what the batch has staged so far. The log is never read for it.
struct Batch<'a> {
    feed: &'a Feed,
    writes: &'a [Write],
    /// Keys the batch wrote so far (`None`: deleted), borrowed from its writes.
    staged: HashMap<&'a str, Option<Live>>,
}

impl Batch<'_> {
    fn get(&self, key: &str) -> Option<Live> {
        match self.staged.get(key) {
            Some(live) => *live,
            None => self.feed.live(key).map(|e| Live {
                rev: e.rev,
                create_rev: e.create_rev,
                staged_by: None,
            }),
        }
    }

    /// The live state of `key`, if its revision is `expected`.
    fn checked(&self, key: &str, expected: u64) -> Result<Live> {
        match self.get(key) {
            None => Err(StoreError::NotFound),
            Some(e) if e.rev != expected => Err(StoreError::Conflict { current_rev: e.rev }),
            Some(e) => Ok(e),
        }
    }

    /// The persisted bytes of a live state: the staging write's own, or the cache's with the
    /// resourceVersion taken out.
    fn persisted(&self, key: &str, live: Live) -> Result<Bytes> {
        match live.staged_by {
            Some(i) => match &self.writes[i].op {
                Op::Create { value } | Op::Update { value, .. } => Ok(value.clone()),
                Op::Delete { .. } => Err(StoreError::Internal("a deleted key is live".into())),
            },
            None => match self.feed.live(key) {
                Some(entry) => Ok(served::strip(&entry.value)),
                None => Err(StoreError::Internal(format!("{key} left the cache mid-batch"))),
            },
        }
    }
}

/// What the engine thread counts for others to read without asking it.
#[derive(Debug, Default)]
pub struct Counters {
    /// Transactions that committed at least one write.
    pub commits: AtomicU64,
    /// Writes committed (each took one revision).
    pub writes: AtomicU64,
    /// The newest committed revision.
    pub revision: AtomicU64,
    /// The compacted revision.
    pub compacted: AtomicU64,
}

pub struct Engine {
    conn: Connection,
    /// The newest revision written; the next write takes `rev + 1`.
    rev: u64,
    /// History at or below this revision is gone.
    compacted: u64,
    feed: Feed,
    counters: Arc<Counters>,
    retention: Retention,
    /// Whether the retention policy drives compaction (see `Backend::start_compaction`).
    auto_compact: bool,
    /// The revision compaction is working towards, a batch at a time.
    compact_goal: u64,
    next_tick: Instant,
}

impl Engine {
    /// Opens (or creates) the database, reads the counters back and loads the live state into
    /// the feed.
    pub fn open(
        path: &str,
        retention: RetentionConfig,
        feed: Feed,
        counters: Arc<Counters>,
    ) -> Result<Engine> {
        let conn = connect(path)?;
        // Reading the live state reads the pages it is on: a damaged one is named here.
        let (compacted, max_rev, live) = (|| {
            let compacted: Option<u64> =
                conn.query_row(sql::META_GET, [sql::META_COMPACTED], |r| r.get(0)).optional()?;
            let max_rev: u64 = conn.query_row(sql::MAX_REV, [], |r| r.get(0))?;
            Ok((compacted.unwrap_or(0), max_rev, load_current(&conn)?))
        })()
        .map_err(|e| StoreError::Unavailable(preflight::describe(Path::new(path), &e)))?;
        let rev = max_rev.max(compacted);
        counters.revision.store(rev, Ordering::Relaxed);
        counters.compacted.store(compacted, Ordering::Relaxed);
        feed.load(rev, live);
        Ok(Engine {
            conn,
            rev,
            compacted,
            feed,
            counters,
            retention: Retention::new(retention),
            auto_compact: false,
            compact_goal: compacted,
            next_tick: Instant::now(),
        })
    }

    /// Serves commands until every handle is gone; compacts when idle and on each tick.
    pub fn run(mut self, commands: Receiver<Command>) {
        loop {
            let now = Instant::now();
            if now >= self.next_tick {
                self.tick(now);
            }
            // Commands go first; compaction batches fill the idle gaps between them.
            let wait = if self.compact_goal > self.compacted {
                Duration::ZERO
            } else {
                self.next_tick.saturating_duration_since(now)
            };
            match commands.recv_timeout(wait) {
                Ok(Command::Write(write)) => {
                    // Group commit: every write already queued joins this one's transaction,
                    // so one fsync answers them all. A non-write ends the batch and runs after.
                    let mut batch = vec![write];
                    let mut next = None;
                    while batch.len() < MAX_BATCH {
                        match commands.try_recv() {
                            Ok(Command::Write(write)) => batch.push(write),
                            Ok(other) => {
                                next = Some(other);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    self.write_batch(batch);
                    if let Some(command) = next {
                        if self.handle(command).is_break() {
                            break;
                        }
                    }
                }
                Ok(command) => {
                    if self.handle(command).is_break() {
                        break;
                    }
                }
                Err(RecvTimeoutError::Timeout) => self.compact_step(),
                Err(RecvTimeoutError::Disconnected) => break,
            }
        }
    }

    fn tick(&mut self, now: Instant) {
        self.next_tick = now + self.retention.interval();
        self.retention.record(now, self.rev);
        // Computed even before compaction starts: it also forgets marks no longer needed.
        let target = self.retention.target(now, self.rev);
        if self.auto_compact {
            self.compact_goal = self.compact_goal.max(target);
        }
        // One batch per tick even when busy, so compaction cannot starve under steady load.
        self.compact_step();
    }

    fn compact_step(&mut self) {
        if self.compact_goal > self.compacted {
            if let Err(e) = self.compact_batch(self.compact_goal) {
                stop_if_fatal(&e);
                log::warn!("compaction to revision {} failed: {e}", self.compact_goal);
                // Retried from the next tick's target rather than spinning on the error.
                self.compact_goal = self.compacted;
            }
        }
    }

    /// Runs one command and answers it; `Break` once the store is closed.
    fn handle(&mut self, command: Command) -> ControlFlow<()> {
        match command {
            Command::Get { key, rev, reply } => answer(reply, self.get(&key, rev)),
            Command::List { req, reply } => answer(reply, self.list(req)),
            Command::CountAfter { prefix, after, rev, reply } => {
                answer(reply, self.count_after(&prefix, &after, rev))
            }
            Command::Write(write) => self.write_batch(vec![write]),
            Command::Probe { reply } => answer(reply, self.probe()),
            Command::Secret { name, reply } => {
                let secret = self.secret(&name);
                answer(reply, secret)
            }
            Command::EventsAfter { prefix, rev, reply } => {
                answer(reply, self.events_after(&prefix, rev))
            }
            Command::Compact { rev, reply } => {
                let compacted = self.compact(rev);
                answer(reply, compacted)
            }
            Command::StartCompaction => self.auto_compact = true,
            Command::Close { reply } => {
                answer(reply, self.checkpoint());
                return ControlFlow::Break(());
            }
            #[cfg(test)]
            Command::Pragmas { reply } => answer(reply, self.pragmas()),
        }
        ControlFlow::Continue(())
    }

    /// Copies the WAL into the database file and empties it, so the next start reads one file.
    fn checkpoint(&self) -> Result<()> {
        let (busy, frames, done): (i64, i64, i64) =
            self.conn.query_row(sql::CHECKPOINT, [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
        if busy != 0 {
            return Err(StoreError::Unavailable(format!(
                "the WAL checkpoint could not finish ({done} of {frames} frames)"
            )));
        }
        Ok(())
    }

    fn get(&self, key: &str, rev: Option<u64>) -> Result<Option<KeyValue>> {
        let row = match self.read_at(rev)? {
            None => self
                .conn
                .prepare_cached(sql::GET_CURRENT)?
                .query_row([key], |r| Ok((r.get(0)?, r.get(1)?, false, r.get::<_, Vec<u8>>(2)?)))
                .optional()?,
            Some(at) => self
                .conn
                .prepare_cached(sql::GET_AT)?
                .query_row(params![key, at], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get::<_, Vec<u8>>(3)?))
                })
                .optional()?,
        };
        Ok(row.filter(|&(_, _, deleted, _)| !deleted).map(|(rev, create_rev, _, value)| KeyValue {
            key: key.to_owned(),
            rev,
            create_rev,
            value: Bytes::from(value),
        }))
    }

    fn list(&self, req: ListRequest) -> Result<Range> {
        let at = self.read_at(req.revision)?;
        let end = prefix_end(&req.prefix);
        let after = req.start_after.unwrap_or_default();
        // One extra row tells whether another page exists. limit 0 means "no limit", as in kube.
        let want = req.limit.filter(|&n| n > 0);
        let sql_limit = want.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX - 1) + 1);

        let mut items = Vec::new();
        match at {
            None => {
                let mut stmt = self.conn.prepare_cached(sql::LIST_CURRENT)?;
                let mut rows = stmt.query(params![req.prefix, after, end, sql_limit])?;
                while let Some(row) = rows.next()? {
                    let value: Vec<u8> = row.get(3)?;
                    let (key, rev, create_rev) = (row.get(0)?, row.get(1)?, row.get(2)?);
                    items.push(KeyValue { key, rev, create_rev, value: Bytes::from(value) });
                }
            }
            Some(at) => {
                let mut stmt = self.conn.prepare_cached(sql::LIST_AT)?;
                let mut rows = stmt.query(params![req.prefix, after, end, sql_limit, at])?;
                while let Some(row) = rows.next()? {
                    let value: Vec<u8> = row.get(4)?;
                    let (key, rev, create_rev) = (row.get(0)?, row.get(1)?, row.get(3)?);
                    items.push(KeyValue { key, rev, create_rev, value: Bytes::from(value) });
                }
            }
        }
        let more = want.is_some_and(|n| items.len() > n);
        if let Some(n) = want {
            items.truncate(n);
        }
        Ok(Range { revision: at.unwrap_or(self.rev), items, more })
    }

    /// The revision a read at `rev` uses: `None` for the current state.
    fn read_at(&self, rev: Option<u64>) -> Result<Option<u64>> {
        match rev {
            // Reading at the current revision is the same as reading the current index.
            None => Ok(None),
            Some(r) if r == self.rev => Ok(None),
            Some(r) if r < self.compacted => Err(StoreError::Expired { compacted: self.compacted }),
            Some(r) if r > self.rev => Err(StoreError::FutureRevision { current: self.rev }),
            Some(r) => Ok(Some(r)),
        }
    }

    /// How many objects follow `after` below `end` at revision `at` (`None`: now).
    ///
    /// Counting what follows, rather than keeping a count in the token or counting what came
    /// before, keeps a page's cost independent of its depth: an index-only walk over the keys
    /// counted (fewer on deeper pages) plus, for a past revision, the keys among them written
    /// since. kube does the same: etcd counts the rest of the range with each page. The
    /// continue token keeps B.4's format, with no room for a running count.
    fn count_after(&self, prefix: &str, after: &str, rev: u64) -> Result<u64> {
        let at = self.read_at(Some(rev))?;
        let end = prefix_end(prefix);
        let after = after.max(prefix);
        let now: i64 = self
            .conn
            .prepare_cached(sql::COUNT_CURRENT_AFTER)?
            .query_row(params![after, end], |r| r.get(0))?;
        let correction: i64 = match at {
            None => 0,
            Some(rev) => self
                .conn
                .prepare_cached(sql::COUNT_CORRECTION_AT)?
                .query_row(params![after, end, rev], |r| r.get(0))?,
        };
        u64::try_from(now + correction)
            .map_err(|_| StoreError::Internal(format!("negative count {now} + {correction}")))
    }

    /// Runs `batch` in one transaction, each write in its own savepoint so a failing one takes
    /// no revision and leaves the others in; then commits (one fsync) and reports the commit to
    /// the feed (cache, events in revision order, answers); only then are the failures answered:
    /// nobody hears of a batch before it is durable.
    fn write_batch(&mut self, batch: Vec<Write>) {
        let mut results = Vec::with_capacity(batch.len());
        if let Err(e) = self.run_batch(&batch, &mut results) {
            stop_if_fatal(&e);
            // Nothing of the batch is in the database: whatever was staged fails too.
            for r in &mut results {
                if r.is_ok() {
                    *r = Err(e.clone());
                }
            }
            results.resize_with(batch.len(), || Err(e.clone()));
        }
        let mut commits = Vec::with_capacity(batch.len());
        let mut failed = Vec::new();
        for (write, result) in batch.into_iter().zip(results) {
            // One process's file: it always leads, so a fence holds.
            let Write { key, op, ticket, .. } = write;
            match result {
                Ok(Staged { rev, kind, create_rev, tombstone }) => {
                    let value = match op {
                        Op::Create { value } | Op::Update { value, .. } => value,
                        Op::Delete { .. } => tombstone.unwrap_or_default(),
                    };
                    commits.push(Commit {
                        rev,
                        key,
                        kind,
                        create_rev,
                        value,
                        ticket: Some(ticket),
                    });
                }
                Err(e) => failed.push((ticket, e)),
            }
        }
        if let Some(last) = commits.last() {
            self.rev = last.rev;
            self.counters.revision.store(self.rev, Ordering::Relaxed);
            self.counters.commits.fetch_add(1, Ordering::Relaxed);
            self.counters.writes.fetch_add(commits.len() as u64, Ordering::Relaxed);
            self.feed.commit(commits);
        }
        for (ticket, e) in failed {
            ticket.fail(e);
        }
    }

    /// Stages every write in one transaction and commits it when any succeeded. An `Err` means
    /// the transaction is gone: no write of the batch was committed.
    fn run_batch(&mut self, writes: &[Write], results: &mut Vec<Result<Staged>>) -> Result<()> {
        // The transaction's own statements are prepared once, like the writes' (rusqlite's
        // `Transaction` and `Savepoint` parse theirs anew on every batch and every write).
        let conn = &self.conn;
        run(conn, sql::BEGIN)?;
        let staged = self.stage_batch(writes, results);
        let done = match staged {
            Ok(true) => run(conn, sql::COMMIT),
            Ok(false) => run(conn, sql::ROLLBACK),
            Err(e) => Err(e),
        };
        if done.is_err() && !conn.is_autocommit() {
            // What the batch staged goes; the next batch starts clean.
            let _ = run(conn, sql::ROLLBACK);
        }
        done
    }

    /// Stages each write in its own savepoint of the open transaction; answers whether any
    /// succeeded. An `Err`: SQLite rolled the whole transaction back (a full disk, an I/O error).
    fn stage_batch(&self, writes: &[Write], results: &mut Vec<Result<Staged>>) -> Result<bool> {
        let conn = &self.conn;
        let mut rev = self.rev;
        let mut batch = Batch { feed: &self.feed, writes, staged: HashMap::new() };
        for (i, write) in writes.iter().enumerate() {
            run(conn, sql::SAVEPOINT)?;
            match stage(conn, &batch, write, rev + 1) {
                Ok(staged) => {
                    run(conn, sql::RELEASE)?;
                    rev += 1;
                    let live = (staged.kind != EventType::Deleted).then_some(Live {
                        rev,
                        create_rev: staged.create_rev,
                        staged_by: Some(i),
                    });
                    batch.staged.insert(&write.key, live);
                    results.push(Ok(staged));
                }
                Err(e) => {
                    // SQLite rolls the whole transaction back on some errors (full, I/O).
                    if conn.is_autocommit() {
                        return Err(e);
                    }
                    run(conn, sql::ROLLBACK_TO)?;
                    run(conn, sql::RELEASE)?;
                    results.push(Err(e));
                }
            }
        }
        Ok(rev > self.rev)
    }

    fn probe(&self) -> Result<()> {
        self.conn.execute(sql::META_BUMP, [sql::META_PROBE])?;
        Ok(())
    }

    fn secret(&mut self, name: &str) -> Result<Vec<u8>> {
        let row = format!("{}{name}", sql::META_SECRET_PREFIX);
        let tx = begin(&mut self.conn)?;
        if let Some(secret) = meta_get::<Vec<u8>>(&tx, &row)? {
            return Ok(secret);
        }
        let mut secret = vec![0u8; 32];
        getrandom::getrandom(&mut secret)
            .map_err(|e| StoreError::Internal(format!("no randomness for a secret: {e}")))?;
        tx.execute(sql::META_INSERT, params![row, secret])?;
        tx.commit()?;
        Ok(secret)
    }

    fn events_after(&self, prefix: &str, after: u64) -> Result<Vec<Change>> {
        if after < self.compacted {
            return Err(StoreError::Expired { compacted: self.compacted });
        }
        let mut stmt = self.conn.prepare_cached(sql::EVENTS_AFTER)?;
        let mut rows = stmt.query(params![after, prefix, prefix_end(prefix)])?;
        let mut changes = Vec::new();
        while let Some(row) = rows.next()? {
            let created: bool = row.get(2)?;
            let deleted: bool = row.get(3)?;
            let value: Vec<u8> = row.get(4)?;
            let prev_rev: Option<u64> = row.get(5)?;
            let prev: Option<Vec<u8>> = row.get(6)?;
            let kind = match (created, deleted) {
                (true, _) => EventType::Added,
                (_, true) => EventType::Deleted,
                _ => EventType::Modified,
            };
            changes.push(Change {
                rev: row.get(0)?,
                key: row.get(1)?,
                kind,
                value: Bytes::from(value),
                prev: prev_rev.zip(prev).map(|(rev, p)| (rev, Bytes::from(p))),
            });
        }
        Ok(changes)
    }

    /// Compacts up to `rev` (capped at the current revision) now; answers the compacted revision.
    fn compact(&mut self, rev: u64) -> Result<u64> {
        let goal = rev.min(self.rev);
        while self.compacted < goal {
            self.compact_batch(goal)?;
        }
        self.compact_goal = self.compact_goal.max(self.compacted);
        Ok(self.compacted)
    }

    /// One transaction compacting at most `BATCH` revisions towards `goal`.
    fn compact_batch(&mut self, goal: u64) -> Result<()> {
        let from = self.compacted;
        let to = goal.min(from + BATCH);
        let tx = begin(&mut self.conn)?;
        tx.execute(sql::COMPACT_SUPERSEDED, params![from, to])?;
        tx.execute(sql::COMPACT_TOMBSTONES, params![from, to])?;
        tx.execute(sql::META_SET, params![sql::META_COMPACTED, to])?;
        tx.commit()?;
        self.compacted = to;
        self.counters.compacted.store(to, Ordering::Relaxed);
        Ok(())
    }

    #[cfg(test)]
    fn pragmas(&self) -> Result<(String, i64)> {
        let mode = self.conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
        let sync = self.conn.pragma_query_value(None, "synchronous", |r| r.get(0))?;
        Ok((mode, sync))
    }
}

/// Answers one command; a send fails only when the caller stopped waiting, and the work is done
/// either way. A fatal storage failure stops the process first (`stop_if_fatal`).
fn answer<T>(reply: Reply<T>, result: Result<T>) {
    if let Err(e) = &result {
        stop_if_fatal(e);
    }
    let _ = reply.send(result);
}

/// After a failed fsync nothing may be answered as if the data were safe, and nothing retried
/// as if the page cache still held it: the server stops, with the cause, before any client
/// hears of the batch. The next start reads only what the WAL holds as committed.
fn stop_if_fatal(e: &StoreError) {
    if let StoreError::Fatal(m) = e {
        log::error!("{m}");
        eprintln!("error: the database's storage failed, stopping: {m}");
        std::process::exit(1);
    }
}

/// Every live row, for the cache at start-up: one pass over `current` and the rows it names,
/// each value copied once, into the served bytes.
fn load_current(conn: &Connection) -> rusqlite::Result<Snapshot> {
    let column = |i, ty, e| rusqlite::Error::FromSqlConversionFailure(i, ty, Box::new(e));
    let mut stmt = conn.prepare(sql::LOAD_CURRENT)?;
    let mut rows = stmt.query([])?;
    let mut snapshot = Snapshot::default();
    while let Some(row) = rows.next()? {
        let key = row.get_ref(0)?.as_str().map_err(|e| column(0, Type::Text, e))?;
        let value = row.get_ref(3)?.as_blob().map_err(|e| column(3, Type::Blob, e))?;
        snapshot.insert(key, row.get(1)?, row.get(2)?, value);
    }
    Ok(snapshot)
}

/// Does one write inside the open transaction, as revision `rev`.
fn stage(conn: &Connection, batch: &Batch<'_>, write: &Write, rev: u64) -> Result<Staged> {
    let key = write.key.as_str();
    match &write.op {
        Op::Create { value } => {
            if batch.get(key).is_some() {
                return Err(StoreError::AlreadyExists);
            }
            // A re-create links to the tombstone, as kine does.
            let prev: Option<u64> =
                conn.prepare_cached(sql::LATEST_REV)?.query_row([key], |r| r.get(0))?;
            append(conn, rev, key, EventType::Added, rev, prev.unwrap_or(0), value)?;
            conn.prepare_cached(sql::CURRENT_SET)?.execute(params![key, rev])?;
            Ok(Staged { rev, kind: EventType::Added, create_rev: rev, tombstone: None })
        }
        Op::Update { expected, value } => {
            let old = batch.checked(key, *expected)?;
            append(conn, rev, key, EventType::Modified, old.create_rev, old.rev, value)?;
            conn.prepare_cached(sql::CURRENT_SET)?.execute(params![key, rev])?;
            let create_rev = old.create_rev;
            Ok(Staged { rev, kind: EventType::Modified, create_rev, tombstone: None })
        }
        Op::Delete { expected } => {
            let old = batch.checked(key, *expected)?;
            // The tombstone keeps the deleted state: the DELETED event and the delete answer
            // both carry it, with the delete's revision (B.5).
            let last = batch.persisted(key, old)?;
            append(conn, rev, key, EventType::Deleted, old.create_rev, old.rev, &last)?;
            conn.prepare_cached(sql::CURRENT_DELETE)?.execute([key])?;
            let create_rev = old.create_rev;
            Ok(Staged { rev, kind: EventType::Deleted, create_rev, tombstone: Some(last) })
        }
    }
}

/// Runs a statement that answers no rows, prepared once per connection.
fn run(conn: &Connection, statement: &str) -> Result<()> {
    conn.prepare_cached(statement)?.raw_execute()?;
    Ok(())
}

/// Appends a write's row to the log; its kind sets the row's created and deleted flags. Its value
/// is always this server's compact encoding (`Store::write`'s, or a tombstone stripped from the
/// served bytes), as is every row an earlier release wrote: unlike etcd, which other writers share,
/// the file holds no value `served::serve` has to encode anew.
fn append(
    conn: &Connection,
    rev: u64,
    key: &str,
    kind: EventType,
    create_rev: u64,
    prev_rev: u64,
    value: &[u8],
) -> Result<()> {
    let (created, deleted) = (kind == EventType::Added, kind == EventType::Deleted);
    conn.prepare_cached(sql::LOG_APPEND)?
        .execute(params![rev, key, created, deleted, create_rev, prev_rev, value])?;
    Ok(())
}

/// The smallest string above every key that starts with `prefix`.
///
/// UTF-8 byte order is code-point order, so bumping the last character gives the bound. An empty
/// prefix (or one ending in the last code point) gets an upper bound above any real key instead.
pub fn prefix_end(prefix: &str) -> String {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let next = (last as u32 + 1..=char::MAX as u32).find_map(char::from_u32);
        if let Some(next) = next {
            chars.push(next);
            return chars.into_iter().collect();
        }
    }
    char::MAX.to_string()
}
