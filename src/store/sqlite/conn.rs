//! Opening the SQLite connection with every setting the engine relies on, and the one place
//! rusqlite errors are translated into `StoreError` (kine's `translateErr`).

use std::path::Path;
use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, ErrorCode, OptionalExtension, Transaction, TransactionBehavior};

use super::{preflight, sql};
use crate::store::StoreError;

type Result<T> = std::result::Result<T, StoreError>;

/// The path SQLite reads as a private in-memory database.
pub const MEMORY: &str = ":memory:";

/// SQLite waits this long for a lock held by another connection before reporting busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens the database file with the settings every open needs, the schema created or upgraded.
pub fn connect(path: &str) -> Result<Connection> {
    open(path).map_err(StoreError::Unavailable)
}

/// `connect`, its failure one line naming the file and the cause. Nothing is written before the
/// file is known to be a database of a schema this build knows, so a refused file is left as
/// it was.
pub fn open(path: &str) -> std::result::Result<Connection, String> {
    let file = Path::new(path);
    if path != MEMORY {
        preflight::preflight(file)?;
    }
    let sqlite = |e: rusqlite::Error| preflight::describe(file, &e);
    let mut conn = Connection::open(path).map_err(sqlite)?;
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sqlite)?;
    // Every statement the engine runs stays prepared (`sql.rs` has fewer than this many).
    conn.set_prepared_statement_cache_capacity(64);
    // The bundled SQLite is built with STAT4, which marks statements whose WHERE compares an
    // indexed column with a parameter to be re-prepared (parsed and planned again) on every
    // new binding: every create's LATEST_REV was. There are no statistics to plan with, so
    // the stable plan loses nothing.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).map_err(sqlite)?;
    let version = schema_version(&conn).map_err(sqlite)?;
    known_version(file, version)?;
    // WAL lets readers of the file (backups, sqlite3) run beside our writer; an in-memory
    // database answers "memory" and keeps its own journal.
    let want = if path == MEMORY { "memory" } else { "wal" };
    let mode: String =
        conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0)).map_err(sqlite)?;
    if !mode.eq_ignore_ascii_case(want) {
        return Err(format!("{path}: cannot enable WAL (journal_mode={mode})"));
    }
    // FULL: the commit (and so the answer) waits for fsync of the WAL (A.6 durability).
    conn.pragma_update(None, "synchronous", "FULL").map_err(sqlite)?;
    migrate(&mut conn, version).map_err(sqlite)?;
    Ok(conn)
}

/// `schema_version`'s answer for a SQLite database that is not this server's.
const FOREIGN: i64 = -1;

/// The schema version: SQLite's `user_version` in the file's header since version 2; before,
/// the `meta` table's `schema_version` row (version 1); 0 for a database with no tables yet.
/// Reads only.
pub fn schema_version(conn: &Connection) -> rusqlite::Result<i64> {
    let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    if version != 0 {
        return Ok(version);
    }
    if conn.query_row(sql::TABLE_COUNT, [], |r| r.get::<_, i64>(0))? == 0 {
        return Ok(0);
    }
    if conn.query_row(sql::META_TABLE_EXISTS, [], |r| r.get::<_, bool>(0))? {
        let v1: Option<i64> =
            conn.query_row(sql::META_GET, [sql::META_SCHEMA_V1], |r| r.get(0)).optional()?;
        return Ok(v1.unwrap_or(FOREIGN));
    }
    Ok(FOREIGN)
}

/// Refuses a database this build cannot read: another program's, or a newer release's.
pub fn known_version(path: &Path, version: i64) -> std::result::Result<(), String> {
    let shown = path.display();
    if version == FOREIGN {
        return Err(format!("{shown}: a SQLite database, but not virt-apiserver's"));
    }
    if version > sql::SCHEMA_VERSION {
        return Err(format!(
            "{shown}: database schema version {version} is newer than this build's {}: it was \
             written by a newer virt-apiserver",
            sql::SCHEMA_VERSION
        ));
    }
    Ok(())
}

/// Brings a database of schema `from` (0: new) to `SCHEMA_VERSION` in one transaction.
fn migrate(conn: &mut Connection, from: i64) -> rusqlite::Result<()> {
    if from == sql::SCHEMA_VERSION {
        return Ok(());
    }
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    if from == 0 {
        tx.execute_batch(sql::SCHEMA)?;
    }
    // 1 → 2: the version moves into the header, readable before any table (and by `sqlite3`).
    tx.execute(sql::META_DELETE, [sql::META_SCHEMA_V1])?;
    tx.pragma_update(None, "user_version", sql::SCHEMA_VERSION)?;
    tx.commit()
}

/// IMMEDIATE takes the write lock up front, so a busy database fails before any work is done.
pub fn begin(conn: &mut Connection) -> Result<Transaction<'_>> {
    Ok(conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
}

pub fn meta_get<T: rusqlite::types::FromSql>(conn: &Connection, name: &str) -> Result<Option<T>> {
    Ok(conn.query_row(sql::META_GET, [name], |r| r.get(0)).optional()?)
}

impl From<rusqlite::Error> for StoreError {
    /// A full disk is `NoSpace`: the write did not fit and nothing of it is stored. A failed
    /// fsync is `Fatal`: the kernel may have dropped the unsynced pages and marked them clean,
    /// so neither a retry nor going on can vouch for what is on disk (the lesson of
    /// PostgreSQL's "fsyncgate"). SQLite reports an fsync's failure as `SQLITE_IOERR_FSYNC`
    /// whatever its errno, while a full disk shows on the write before it, as `SQLITE_FULL`.
    /// Conditions that go away on their own or with operator help (a lock held elsewhere, a
    /// failing read or write) are `Unavailable`, so health checks and clients can tell them
    /// from bugs.
    fn from(e: rusqlite::Error) -> StoreError {
        if let rusqlite::Error::SqliteFailure(failure, _) = &e {
            if matches!(
                failure.extended_code,
                rusqlite::ffi::SQLITE_IOERR_FSYNC | rusqlite::ffi::SQLITE_IOERR_DIR_FSYNC
            ) {
                return StoreError::Fatal(format!(
                    "fsync of the database failed ({e}, SQLite code {}): what reached the disk \
                     is unknown",
                    failure.extended_code
                ));
            }
        }
        match e.sqlite_error_code() {
            Some(ErrorCode::DiskFull) => StoreError::NoSpace(e.to_string()),
            Some(
                ErrorCode::DatabaseBusy
                | ErrorCode::DatabaseLocked
                | ErrorCode::SystemIoFailure
                | ErrorCode::CannotOpen
                | ErrorCode::ReadOnly
                | ErrorCode::OutOfMemory,
            ) => StoreError::Unavailable(e.to_string()),
            _ => StoreError::Internal(e.to_string()),
        }
    }
}

impl From<rusqlite::types::FromSqlError> for StoreError {
    /// A column of another type than the schema's: corrupt data.
    fn from(e: rusqlite::types::FromSqlError) -> StoreError {
        StoreError::Internal(format!("stored column: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_is_unavailable_and_constraint_is_internal() {
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        );
        assert!(matches!(StoreError::from(busy), StoreError::Unavailable(_)));
        let unique = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT),
            None,
        );
        assert!(matches!(StoreError::from(unique), StoreError::Internal(_)));
    }

    fn failure(extended_code: std::ffi::c_int) -> rusqlite::Error {
        rusqlite::Error::SqliteFailure(rusqlite::ffi::Error::new(extended_code), None)
    }

    #[test]
    fn a_full_disk_is_no_space_and_a_failed_fsync_is_fatal() {
        use rusqlite::ffi;
        // As SQLite reports it: the code and its message.
        let full = rusqlite::Error::SqliteFailure(
            ffi::Error::new(ffi::SQLITE_FULL),
            Some("database or disk is full".into()),
        );
        let full = StoreError::from(full);
        assert_eq!(full, StoreError::NoSpace("database or disk is full".into()));
        assert_eq!(full.to_string(), "database space exceeded: database or disk is full");
        // A failed fsync is never taken for a transient error that a retry could clear.
        for code in [ffi::SQLITE_IOERR_FSYNC, ffi::SQLITE_IOERR_DIR_FSYNC] {
            match StoreError::from(failure(code)) {
                StoreError::Fatal(m) => {
                    assert!(m.starts_with("fsync of the database failed"), "{m}")
                }
                other => panic!("{code}: {other:?}"),
            }
        }
        // Other I/O failures (a read, a write that did not happen) leave nothing unknown behind.
        for code in [ffi::SQLITE_IOERR_READ, ffi::SQLITE_IOERR_WRITE, ffi::SQLITE_IOERR] {
            assert!(
                matches!(StoreError::from(failure(code)), StoreError::Unavailable(_)),
                "{code}"
            );
        }
    }
}
