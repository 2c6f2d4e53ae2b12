//! Opening the SQLite connection with every setting the engine relies on, and the one place
//! rusqlite errors are translated into `StoreError` (kine's `translateErr`).

use std::time::Duration;

use rusqlite::config::DbConfig;
use rusqlite::{
    params, Connection, ErrorCode, OptionalExtension, Transaction, TransactionBehavior,
};

use super::sql;
use crate::store::StoreError;

type Result<T> = std::result::Result<T, StoreError>;

/// The path SQLite reads as a private in-memory database.
pub const MEMORY: &str = ":memory:";

/// SQLite waits this long for a lock held by another connection before reporting busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Opens the database file with the settings every open needs, the schema created if missing
/// and its version checked.
pub fn connect(path: &str) -> Result<Connection> {
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
    match meta_get::<i64>(&conn, sql::META_SCHEMA)? {
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
    Ok(conn)
}

/// IMMEDIATE takes the write lock up front, so a busy database fails before any work is done.
pub fn begin(conn: &mut Connection) -> Result<Transaction<'_>> {
    Ok(conn.transaction_with_behavior(TransactionBehavior::Immediate)?)
}

pub fn meta_get<T: rusqlite::types::FromSql>(conn: &Connection, name: &str) -> Result<Option<T>> {
    Ok(conn.query_row(sql::META_GET, [name], |r| r.get(0)).optional()?)
}

impl From<rusqlite::Error> for StoreError {
    /// Conditions that go away on their own or with operator help (a lock held elsewhere, a full
    /// or failing disk) are `Unavailable`, so health checks and clients can tell them from bugs.
    fn from(e: rusqlite::Error) -> StoreError {
        match e.sqlite_error_code() {
            Some(
                ErrorCode::DatabaseBusy
                | ErrorCode::DatabaseLocked
                | ErrorCode::SystemIoFailure
                | ErrorCode::DiskFull
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
}
