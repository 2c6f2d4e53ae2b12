//! The schema and every SQL statement the SQLite backend runs; nothing outside it speaks SQL.
//!
//! The design is kine's (an append-only log whose primary key is the revision) cut down for one
//! node: a single writer thread assigns revisions, so there are no gaps and no fill rows, and a
//! `current` index answers reads without grouping over history.
//!
//! Keys are TEXT with SQLite's default BINARY collation, i.e. `memcmp` on UTF-8, which is the
//! bytewise key order etcd (and so kube's list order) uses.

/// The schema's version, kept in SQLite's `user_version` (the file's header). Bumped with every
/// change to the schema; `conn::migrate` upgrades older databases in place and `open` refuses
/// newer ones. 1: the version in `meta`; 2: in the header.
pub const SCHEMA_VERSION: i64 = 2;

/// How many tables, indexes and views the database has: none in a new database.
pub const TABLE_COUNT: &str = "SELECT COUNT(*) FROM sqlite_master";
pub const META_TABLE_EXISTS: &str =
    "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta')";

/// Idempotent: run on every open.
pub const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS log (
    rev        INTEGER PRIMARY KEY,  -- global revision = resourceVersion, set by the engine thread
    key        TEXT    NOT NULL,
    created    INTEGER NOT NULL,     -- 1 on the row that creates the key
    deleted    INTEGER NOT NULL,     -- 1 on a tombstone (value = the deleted state)
    create_rev INTEGER NOT NULL,     -- rev of the key's create row
    prev_rev   INTEGER NOT NULL,     -- rev of the key's previous row, 0 if none
    value      BLOB    NOT NULL      -- the object's JSON without resourceVersion (rows written
                                     -- before the storage contract hold one: it is replaced)
);
CREATE INDEX IF NOT EXISTS log_key_rev ON log (key, rev);
CREATE TABLE IF NOT EXISTS current (
    key TEXT PRIMARY KEY,
    rev INTEGER NOT NULL             -- the live row of the key; tombstoned keys have no entry
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
    name  TEXT PRIMARY KEY,
    value                            -- untyped: integers and blobs
) WITHOUT ROWID;
";

/// `meta` row that held the schema version in version 1.
pub const META_SCHEMA_V1: &str = "schema_version";
/// `meta` row holding the compacted revision: history at or below it is gone.
pub const META_COMPACTED: &str = "compacted";
/// `meta` row the health probe rewrites.
pub const META_PROBE: &str = "probe";
/// Prefix of the `meta` rows holding named secrets.
pub const META_SECRET_PREFIX: &str = "secret:";

pub const META_GET: &str = "SELECT value FROM meta WHERE name = ?1";
pub const META_DELETE: &str = "DELETE FROM meta WHERE name = ?1";
pub const META_INSERT: &str = "INSERT INTO meta (name, value) VALUES (?1, ?2)";
pub const META_SET: &str = "INSERT INTO meta (name, value) VALUES (?1, ?2)
    ON CONFLICT (name) DO UPDATE SET value = excluded.value";
pub const META_BUMP: &str = "INSERT INTO meta (name, value) VALUES (?1, 1)
    ON CONFLICT (name) DO UPDATE SET value = value + 1";

/// The newest revision ever written. Compaction may delete the newest rows (tombstones), so the
/// revision counter restarts from the larger of this and the compacted revision.
pub const MAX_REV: &str = "SELECT COALESCE(MAX(rev), 0) FROM log";

/// Every live row: (key, rev, create_rev, value), read in revision order so the log is walked
/// front to back once (the cache's start-up load).
pub const LOAD_CURRENT: &str = "SELECT key, rev, create_rev, value FROM log
    WHERE rev IN (SELECT rev FROM current) ORDER BY rev";

/// The newest row of a key, tombstone or not; a re-create links to it.
pub const LATEST_REV: &str = "SELECT MAX(rev) FROM log WHERE key = ?1";

/// A batch of writes is one transaction; IMMEDIATE takes the write lock up front, so a busy
/// database fails before any work is done. Each write is a savepoint in it, so a failing one
/// takes back only its own changes.
pub const BEGIN: &str = "BEGIN IMMEDIATE";
pub const COMMIT: &str = "COMMIT";
pub const ROLLBACK: &str = "ROLLBACK";
pub const SAVEPOINT: &str = "SAVEPOINT write";
pub const RELEASE: &str = "RELEASE write";
pub const ROLLBACK_TO: &str = "ROLLBACK TO write";

pub const LOG_APPEND: &str =
    "INSERT INTO log (rev, key, created, deleted, create_rev, prev_rev, value)
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
pub const CURRENT_SET: &str = "INSERT INTO current (key, rev) VALUES (?1, ?2)
    ON CONFLICT (key) DO UPDATE SET rev = excluded.rev";
pub const CURRENT_DELETE: &str = "DELETE FROM current WHERE key = ?1";

/// One page of the current state: ?1 prefix (inclusive lower bound), ?2 start_after (exclusive),
/// ?3 prefix end (exclusive), ?4 limit (-1 = all). Keyset paging: never OFFSET.
pub const LIST_CURRENT: &str = "SELECT c.key, c.rev, l.create_rev, l.value
    FROM current c JOIN log l ON l.rev = c.rev
    WHERE c.key >= ?1 AND c.key > ?2 AND c.key < ?3
    ORDER BY c.key LIMIT ?4";

/// One page of the state at revision ?5: the newest row per key at or below it, tombstones
/// skipped. Bound parameters as for `LIST_CURRENT`.
///
/// This relies on SQLite's documented bare-column rule: with a single `max()` aggregate, the
/// other columns come from the row holding the maximum. Grouping walks `log_key_rev` in key
/// order, so the LIMIT stops the scan early.
pub const LIST_AT: &str = "SELECT key, MAX(rev), deleted, create_rev, value
    FROM log
    WHERE key >= ?1 AND key > ?2 AND key < ?3 AND rev <= ?5
    GROUP BY key HAVING deleted = 0
    ORDER BY key LIMIT ?4";

/// The newest row of key ?1 at or below revision ?2: (rev, create_rev, deleted, value); a
/// tombstone means the key was not live.
pub const GET_AT: &str = "SELECT rev, create_rev, deleted, value FROM log
    WHERE key = ?1 AND rev <= ?2 ORDER BY rev DESC LIMIT 1";

/// The live row of key ?1: (rev, create_rev, value).
pub const GET_CURRENT: &str = "SELECT c.rev, l.create_rev, l.value
    FROM current c JOIN log l ON l.rev = c.rev WHERE c.key = ?1";

/// How many live keys follow ?1 (exclusive) below ?2 (exclusive) now: an index-only walk of
/// `current`, so its cost is the number of keys counted, never the keys before ?1.
pub const COUNT_CURRENT_AFTER: &str = "SELECT COUNT(*) FROM current WHERE key > ?1 AND key < ?2";

/// What turns `COUNT_CURRENT_AFTER` into the count at revision ?3: over the keys in the range
/// written after ?3, (live at ?3) - (live now). A key was live at ?3 exactly when its first row
/// after ?3 is not a create. Rows after ?3 are never compacted while ?3 is readable.
pub const COUNT_CORRECTION_AT: &str =
    "SELECT COALESCE(SUM(f.created = 0) - SUM(c.key IS NOT NULL), 0)
    FROM (SELECT key, MIN(rev) AS first FROM log
          WHERE key > ?1 AND key < ?2 AND rev > ?3 GROUP BY key) ch
    JOIN log f ON f.rev = ch.first
    LEFT JOIN current c ON c.key = ch.key";

/// Every change after revision ?1 under a prefix (?2 inclusive, ?3 exclusive), in revision
/// order, with the previous row's revision and value for updates and deletes.
pub const EVENTS_AFTER: &str = "SELECT l.rev, l.key, l.created, l.deleted, l.value, p.rev, p.value
    FROM log l LEFT JOIN log p ON p.rev = l.prev_rev AND l.created = 0
    WHERE l.rev > ?1 AND l.key >= ?2 AND l.key < ?3
    ORDER BY l.rev";

/// Compaction of the revisions in (?1, ?2]: first the rows they superseded, then the tombstones
/// themselves. Rows newer than ?2 are never touched, so every state at or after ?2 stays whole.
pub const COMPACT_SUPERSEDED: &str = "DELETE FROM log WHERE rev IN
    (SELECT prev_rev FROM log WHERE rev > ?1 AND rev <= ?2 AND prev_rev != 0)";
pub const COMPACT_TOMBSTONES: &str = "DELETE FROM log WHERE rev > ?1 AND rev <= ?2 AND deleted = 1";

/// At a clean stop: every WAL frame copied into the database file, which is synced, and the WAL
/// emptied. Answers (busy, WAL frames, frames checkpointed); busy 1 means it could not finish.
pub const CHECKPOINT: &str = "PRAGMA wal_checkpoint(TRUNCATE)";
