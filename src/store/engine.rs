//! The store thread: owns the SQLite connection and runs every command in arrival order.
//!
//! One thread and one connection serialise all work, so the revision counter lives here in memory
//! and every write takes the next number: no gaps, no fill rows (kine's lesson, B.9). Writes
//! queued together share one transaction and one fsync (group commit, `write_batch`). After each
//! commit, before the next command runs, the cache moves to it and its events are published to
//! the hub, which is what lets a watcher subscribe, then read, and dedupe by revision (see
//! `watch`); only then are the writers answered.
//!
//! Compaction runs here too, in batches of at most `compact::BATCH` revisions, each its own
//! transaction, taken only when no command is waiting (and one per tick under steady load), so
//! a write never waits behind more than one batch.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rusqlite::config::DbConfig;
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};
use serde_json::Value;
use tokio::sync::oneshot;

use super::cache::{Cache, Entry};
use super::compact::{self, Retention, RetentionConfig};
use super::hub::Hub;
use super::{sql, Event, EventType, ListRequest, Prev, RawList, StoreError, Written};

type Result<T> = std::result::Result<T, StoreError>;

/// Where the thread sends one command's answer.
pub type Reply<T> = oneshot::Sender<Result<T>>;

/// The work the async handle hands to the store thread.
pub enum Command {
    List {
        req: ListRequest,
        reply: Reply<RawList>,
    },
    CountAfter {
        prefix: String,
        after: String,
        rev: u64,
        reply: Reply<u64>,
    },
    /// A create, update or delete; queued writes are committed together (see `write_batch`).
    Write {
        op: WriteOp,
        reply: Reply<Written>,
    },
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
        reply: Reply<Vec<Arc<Event>>>,
    },
    Compact {
        rev: u64,
        reply: Reply<u64>,
    },
    StartCompaction,
    #[cfg(test)]
    Pragmas {
        reply: Reply<(String, i64)>,
    },
}

/// One write, as the async handle hands it over.
pub enum WriteOp {
    /// Stores a new object; `AlreadyExists` if the key is live.
    Create { key: String, obj: Value },
    /// Replaces the object if its revision is still `expected`.
    Update { key: String, expected: u64, obj: Value },
    /// Deletes the object if its revision is still `expected`.
    Delete { key: String, expected: u64 },
}

/// At most this many queued writes share one transaction: bounds how long the first of them
/// waits for the last, and the size of one commit.
pub const MAX_BATCH: usize = 256;

/// Writes and the transactions that committed them, since start (`/metrics`).
#[derive(Debug, Default)]
pub struct WriteCounters {
    /// Transactions that committed at least one write.
    pub commits: AtomicU64,
    /// Writes committed (each took one revision).
    pub writes: AtomicU64,
}

/// A write done inside the batch's open transaction, published only once it commits.
struct Staged {
    /// Also what the writer is answered: the event's object and its stored bytes.
    event: Event,
    /// The key's new cache entry (`None`: deleted).
    entry: Option<Entry>,
}

/// The path SQLite reads as a private in-memory database.
const MEMORY: &str = ":memory:";

/// SQLite waits this long for a lock held by another connection before reporting busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The live state a batch's writes are checked against: the cache (the state at the last
/// commit) under what the batch has staged so far. The log is never read for it.
struct Live<'a> {
    cache: &'a Cache,
    staged: HashMap<String, Option<Entry>>,
}

impl Live<'_> {
    fn get(&self, key: &str) -> Option<Entry> {
        match self.staged.get(key) {
            Some(entry) => entry.clone(),
            None => self.cache.get(key),
        }
    }

    /// The live entry of `key`, if its revision is `expected`.
    fn checked(&self, key: &str, expected: u64) -> Result<Entry> {
        match self.get(key) {
            None => Err(StoreError::NotFound),
            Some(e) if e.rev != expected => Err(StoreError::Conflict { current_rev: e.rev }),
            Some(e) => Ok(e),
        }
    }
}

pub struct Engine {
    conn: Connection,
    /// The newest revision written; the next write takes `rev + 1`.
    rev: u64,
    /// History at or below this revision is gone.
    compacted: u64,
    hub: Arc<Hub>,
    /// The current state in memory; this thread is its only writer.
    cache: Arc<Cache>,
    counters: Arc<WriteCounters>,
    retention: Retention,
    /// Whether the retention policy drives compaction (see `Store::start_compaction`).
    auto_compact: bool,
    /// The revision compaction is working towards, a batch at a time.
    compact_goal: u64,
    next_tick: Instant,
}

impl Engine {
    /// Opens (or creates) the database and reads the counters back.
    pub fn open(
        path: &str,
        retention: RetentionConfig,
        hub: Arc<Hub>,
        counters: Arc<WriteCounters>,
    ) -> Result<(Engine, Arc<Cache>)> {
        let conn = connect(path)?;

        let version: Option<i64> = meta_get(&conn, sql::META_SCHEMA)?;
        match version {
            None => {
                conn.execute(sql::META_INSERT, params![sql::META_SCHEMA, sql::SCHEMA_VERSION])?;
            }
            Some(v) if v == sql::SCHEMA_VERSION => {}
            Some(v) => {
                return Err(StoreError::Internal(format!(
                    "database schema version {v}, this build knows {}",
                    sql::SCHEMA_VERSION
                )))
            }
        }
        let compacted = meta_get::<u64>(&conn, sql::META_COMPACTED)?.unwrap_or(0);
        let max_rev: u64 = conn.query_row(sql::MAX_REV, [], |r| r.get(0))?;
        let rev = max_rev.max(compacted);
        let cache = Arc::new(Cache::new(rev, load_current(&conn)?));
        hub.start_at(rev);
        let engine = Engine {
            conn,
            rev,
            compacted,
            hub,
            cache: cache.clone(),
            counters,
            retention: Retention::new(retention),
            auto_compact: false,
            compact_goal: compacted,
            next_tick: Instant::now(),
        };
        Ok((engine, cache))
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
                Ok(Command::Write { op, reply }) => {
                    // Group commit: every write already queued joins this one's transaction,
                    // so one fsync answers them all. A non-write ends the batch and runs after.
                    let mut batch = vec![(op, reply)];
                    let mut next = None;
                    while batch.len() < MAX_BATCH {
                        match commands.try_recv() {
                            Ok(Command::Write { op, reply }) => batch.push((op, reply)),
                            Ok(other) => {
                                next = Some(other);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    self.write_batch(batch);
                    if let Some(command) = next {
                        self.handle(command);
                    }
                }
                Ok(command) => self.handle(command),
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
                log::warn!("compaction to revision {} failed: {e}", self.compact_goal);
                // Retried from the next tick's target rather than spinning on the error.
                self.compact_goal = self.compacted;
            }
        }
    }

    fn handle(&mut self, command: Command) {
        // A send fails only when the caller stopped waiting; the work is done either way.
        match command {
            Command::List { req, reply } => drop(reply.send(self.list(req))),
            Command::CountAfter { prefix, after, rev, reply } => {
                drop(reply.send(self.count_after(&prefix, &after, rev)))
            }
            Command::Write { op, reply } => self.write_batch(vec![(op, reply)]),
            Command::Probe { reply } => drop(reply.send(self.probe())),
            Command::Secret { name, reply } => drop(reply.send(self.secret(&name))),
            Command::EventsAfter { prefix, rev, reply } => {
                drop(reply.send(self.events_after(&prefix, rev)))
            }
            Command::Compact { rev, reply } => drop(reply.send(self.compact(rev))),
            Command::StartCompaction => self.auto_compact = true,
            #[cfg(test)]
            Command::Pragmas { reply } => drop(reply.send(self.pragmas())),
        }
    }

    fn list(&self, req: ListRequest) -> Result<RawList> {
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
                    let value: Vec<u8> = row.get(1)?;
                    items.push((row.get(0)?, Bytes::from(value)));
                }
            }
            Some(rev) => {
                let mut stmt = self.conn.prepare_cached(sql::LIST_AT)?;
                let mut rows = stmt.query(params![req.prefix, after, end, sql_limit, rev])?;
                while let Some(row) = rows.next()? {
                    let value: Vec<u8> = row.get(3)?;
                    items.push((row.get(0)?, Bytes::from(value)));
                }
            }
        }
        let more = want.is_some_and(|n| items.len() > n);
        if let Some(n) = want {
            items.truncate(n);
        }
        Ok(RawList { revision: at.unwrap_or(self.rev), items, more })
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
    /// no revision and leaves the others in; then commits (one fsync), publishes the events in
    /// revision order, and only then answers: nobody hears of a write before it is durable.
    fn write_batch(&mut self, batch: Vec<(WriteOp, Reply<Written>)>) {
        let (ops, replies): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
        let mut results = Vec::with_capacity(ops.len());
        if let Err(e) = self.run_batch(ops, &mut results) {
            // Nothing of the batch is in the database: whatever was staged fails too.
            for r in &mut results {
                if r.is_ok() {
                    *r = Err(e.clone());
                }
            }
            results.resize_with(replies.len(), || Err(e.clone()));
        }
        let staged: Vec<&Staged> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
        if let Some(last) = staged.last() {
            // The cache moves to the commit first, then watchers hear of it, then writers: a
            // client that saw its answer or an event reads at least that state from the cache.
            self.rev = last.event.rev;
            self.cache
                .apply(self.rev, staged.iter().map(|s| (s.event.key.as_str(), s.entry.clone())));
            self.counters.commits.fetch_add(1, Ordering::Relaxed);
            self.counters.writes.fetch_add(staged.len() as u64, Ordering::Relaxed);
        }
        let answers: Vec<Result<Written>> = results
            .into_iter()
            .map(|result| {
                result.map(|staged| {
                    let written = Written {
                        object: staged.event.object.clone(),
                        value: staged.event.value.clone(),
                    };
                    self.hub.publish(&Arc::new(staged.event));
                    written
                })
            })
            .collect();
        for (reply, answer) in replies.into_iter().zip(answers) {
            // A send fails only when the caller stopped waiting; the write is done either way.
            let _ = reply.send(answer);
        }
    }

    /// Stages every write in one transaction and commits it when any succeeded. An `Err` means
    /// the transaction is gone: no write of the batch was committed.
    fn run_batch(&mut self, ops: Vec<WriteOp>, results: &mut Vec<Result<Staged>>) -> Result<()> {
        let mut tx = begin(&mut self.conn)?;
        let mut rev = self.rev;
        let mut live = Live { cache: &self.cache, staged: HashMap::new() };
        for op in ops {
            let sp = tx.savepoint()?;
            match stage(&sp, &live, op, rev + 1) {
                Ok(staged) => {
                    sp.commit()?;
                    rev += 1;
                    live.staged.insert(staged.event.key.clone(), staged.entry.clone());
                    results.push(Ok(staged));
                }
                Err(e) => {
                    // Dropping the savepoint rolls back to it and releases it.
                    drop(sp);
                    // SQLite rolls the whole transaction back on some errors (full, I/O).
                    if tx.is_autocommit() {
                        return Err(e);
                    }
                    results.push(Err(e));
                }
            }
        }
        if rev > self.rev {
            tx.commit()?;
        }
        Ok(())
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

    fn events_after(&self, prefix: &str, after: u64) -> Result<Vec<Arc<Event>>> {
        if after < self.compacted {
            return Err(StoreError::Expired { compacted: self.compacted });
        }
        let mut stmt = self.conn.prepare_cached(sql::EVENTS_AFTER)?;
        let mut rows = stmt.query(params![after, prefix, prefix_end(prefix)])?;
        let mut events = Vec::new();
        while let Some(row) = rows.next()? {
            let created: bool = row.get(2)?;
            let deleted: bool = row.get(3)?;
            let value: Vec<u8> = row.get(4)?;
            let prev: Option<Vec<u8>> = row.get(5)?;
            let kind = match (created, deleted) {
                (true, _) => EventType::Added,
                (_, true) => EventType::Deleted,
                _ => EventType::Modified,
            };
            let size = value.len() + prev.as_ref().map_or(0, Vec::len);
            let prev = prev.map(|p| Prev::new(Bytes::from(p)));
            events.push(Arc::new(Event {
                rev: row.get(0)?,
                key: row.get(1)?,
                kind,
                object: Arc::new(serde_json::from_slice(&value)?),
                value: Bytes::from(value),
                prev,
                size,
            }));
        }
        Ok(events)
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

    /// One transaction compacting at most `compact::BATCH` revisions towards `goal`.
    fn compact_batch(&mut self, goal: u64) -> Result<()> {
        let from = self.compacted;
        let to = goal.min(from + compact::BATCH);
        let tx = begin(&mut self.conn)?;
        tx.execute(sql::COMPACT_SUPERSEDED, params![from, to])?;
        tx.execute(sql::COMPACT_TOMBSTONES, params![from, to])?;
        tx.execute(sql::META_SET, params![sql::META_COMPACTED, to])?;
        tx.commit()?;
        self.compacted = to;
        Ok(())
    }

    #[cfg(test)]
    fn pragmas(&self) -> Result<(String, i64)> {
        let mode = self.conn.pragma_query_value(None, "journal_mode", |r| r.get(0))?;
        let sync = self.conn.pragma_query_value(None, "synchronous", |r| r.get(0))?;
        Ok((mode, sync))
    }
}

/// Every live row, for the cache at start-up: one pass over `current` and the rows it names.
fn load_current(conn: &Connection) -> Result<BTreeMap<Box<str>, Entry>> {
    let mut stmt = conn.prepare(sql::LOAD_CURRENT)?;
    let mut rows = stmt.query([])?;
    let mut objects = BTreeMap::new();
    while let Some(row) = rows.next()? {
        let key: String = row.get(0)?;
        let value: Vec<u8> = row.get(3)?;
        let entry = Entry { rev: row.get(1)?, create_rev: row.get(2)?, value: Bytes::from(value) };
        objects.insert(key.into_boxed_str(), entry);
    }
    Ok(objects)
}

/// Opens the database file with the settings every open needs, the schema created if missing.
fn connect(path: &str) -> Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // The bundled SQLite is built with STAT4, which marks statements whose WHERE compares an
    // indexed column with a parameter to be re-prepared (parsed and planned again) on every
    // new binding: every create's LATEST_REV was. There are no statistics to plan with, so
    // the stable plan loses nothing.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    // WAL lets readers of the file (backups, sqlite3) run beside our writer; an in-memory
    // database answers "memory" and keeps its own journal.
    let want = if path == MEMORY { "memory" } else { "wal" };
    let mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case(want) {
        return Err(StoreError::Unavailable(format!("cannot enable WAL (journal_mode={mode})")));
    }
    // FULL: the commit (and so the answer) waits for fsync of the WAL (A.6 durability).
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.execute_batch(sql::SCHEMA)?;
    Ok(conn)
}

/// Does one write inside the open transaction, as revision `rev`.
fn stage(conn: &Connection, live: &Live<'_>, op: WriteOp, rev: u64) -> Result<Staged> {
    match op {
        WriteOp::Create { key, mut obj } => {
            set_resource_version(&mut obj, rev)?;
            let bytes = stored_bytes(&obj)?;
            if live.get(&key).is_some() {
                return Err(StoreError::AlreadyExists);
            }
            // A re-create links to the tombstone, as kine does.
            let prev: Option<u64> =
                conn.prepare_cached(sql::LATEST_REV)?.query_row([&key], |r| r.get(0))?;
            append(conn, rev, &key, EventType::Added, rev, prev.unwrap_or(0), &bytes)?;
            conn.prepare_cached(sql::CURRENT_SET)?.execute(params![key, rev])?;
            let event = Event {
                rev,
                key,
                kind: EventType::Added,
                object: Arc::new(obj),
                value: bytes.clone(),
                prev: None,
                size: bytes.len(),
            };
            let entry = Some(Entry { rev, create_rev: rev, value: bytes });
            Ok(Staged { event, entry })
        }
        WriteOp::Update { key, expected, mut obj } => {
            set_resource_version(&mut obj, rev)?;
            let bytes = stored_bytes(&obj)?;
            let old = live.checked(&key, expected)?;
            append(conn, rev, &key, EventType::Modified, old.create_rev, old.rev, &bytes)?;
            conn.prepare_cached(sql::CURRENT_SET)?.execute(params![key, rev])?;
            let event = Event {
                rev,
                key,
                kind: EventType::Modified,
                object: Arc::new(obj),
                value: bytes.clone(),
                size: bytes.len() + old.value.len(),
                prev: Some(Prev::new(old.value)),
            };
            let entry = Some(Entry { rev, create_rev: old.create_rev, value: bytes });
            Ok(Staged { event, entry })
        }
        WriteOp::Delete { key, expected } => {
            let old = live.checked(&key, expected)?;
            // The tombstone keeps the last state with the delete's revision: the DELETED event
            // and the delete answer both carry it (B.5).
            let mut last: Value = serde_json::from_slice(&old.value)?;
            set_resource_version(&mut last, rev)?;
            let bytes = Bytes::from(serde_json::to_vec(&last)?);
            append(conn, rev, &key, EventType::Deleted, old.create_rev, old.rev, &bytes)?;
            conn.prepare_cached(sql::CURRENT_DELETE)?.execute([&key])?;
            let event = Event {
                rev,
                key,
                kind: EventType::Deleted,
                object: Arc::new(last),
                size: bytes.len() + old.value.len(),
                value: bytes,
                prev: Some(Prev::new(old.value)),
            };
            Ok(Staged { event, entry: None })
        }
    }
}

/// IMMEDIATE takes the write lock up front, so a busy database fails before any work is done.
fn begin(conn: &mut Connection) -> Result<Transaction<'_>> {
    Ok(conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
}

/// Appends a write's row to the log; its kind sets the row's created and deleted flags.
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

fn meta_get<T: rusqlite::types::FromSql>(conn: &Connection, name: &str) -> Result<Option<T>> {
    Ok(conn.query_row(sql::META_GET, [name], |r| r.get(0)).optional()?)
}

/// An object's JSON as stored and cached, without the encoder's spare capacity: the cache keeps
/// it for as long as the object lives.
fn stored_bytes(obj: &Value) -> Result<Bytes> {
    Ok(Bytes::from(serde_json::to_vec(obj)?.into_boxed_slice()))
}

/// Stores the revision as kube does: a decimal string in `metadata.resourceVersion`.
fn set_resource_version(obj: &mut Value, rev: u64) -> Result<()> {
    let Value::Object(map) = obj else {
        return Err(StoreError::Internal("a stored object must be a JSON object".into()));
    };
    let meta = map.entry("metadata").or_insert_with(|| Value::Object(Default::default()));
    let Value::Object(meta) = meta else {
        return Err(StoreError::Internal("metadata must be a JSON object".into()));
    };
    meta.insert("resourceVersion".into(), Value::String(rev.to_string()));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_end_bumps_the_last_character() {
        assert_eq!(prefix_end("g/p/"), "g/p0");
        assert_eq!(prefix_end("g/p/ns/"), "g/p/ns0");
        assert_eq!(prefix_end("a\u{d7ff}"), "a\u{e000}");
        assert_eq!(prefix_end(""), "\u{10ffff}");
        assert!("g/p/ns/zzz".as_bytes() < prefix_end("g/p/ns/").as_bytes());
        assert!("g/p/ns0".as_bytes() >= prefix_end("g/p/ns/").as_bytes());
    }

    #[test]
    fn statements_are_not_prepared_again_for_new_parameters() {
        use rusqlite::types::Value::{Integer as Int, Text};
        /// The parameters of a statement's `i`th run: keys and revisions that change each time.
        type Params = fn(i64) -> Vec<rusqlite::types::Value>;
        let conn = connect(MEMORY).unwrap();
        let queries: [(&str, Params); 6] = [
            (sql::LATEST_REV, |i| vec![Text(format!("k{i}"))]),
            (sql::LIST_CURRENT, |i| {
                vec![Text(format!("a{i}")), Text("".into()), Text("z".into()), Int(5)]
            }),
            (sql::LIST_AT, |i| {
                vec![Text(format!("a{i}")), Text("".into()), Text("z".into()), Int(5), Int(i)]
            }),
            (sql::COUNT_CURRENT_AFTER, |i| vec![Text(format!("a{i}")), Text("z".into())]),
            (sql::COUNT_CORRECTION_AT, |i| vec![Text(format!("a{i}")), Text("z".into()), Int(i)]),
            (sql::EVENTS_AFTER, |i| vec![Int(i), Text("a".into()), Text("z".into())]),
        ];
        for (query, params) in queries {
            for i in 0..3 {
                let mut stmt = conn.prepare_cached(query).unwrap();
                let mut rows = stmt.query(rusqlite::params_from_iter(params(i))).unwrap();
                while rows.next().unwrap().is_some() {}
                drop(rows);
                let again = stmt.get_status(rusqlite::StatementStatus::RePrepare);
                assert_eq!(again, 0, "{query} was prepared again for binding #{i}");
            }
        }
    }

    #[test]
    fn resource_version_is_a_string_in_metadata() {
        let mut obj = serde_json::json!({"kind": "X"});
        set_resource_version(&mut obj, 42).unwrap();
        assert_eq!(obj["metadata"]["resourceVersion"], "42");
        assert!(set_resource_version(&mut serde_json::json!([]), 1).is_err());
    }
}
