//! The database file as an operator handles it: the `check`, `backup` and `restore` subcommands
//! (the checks that turn a bad file into one clear line before SQLite touches it are `preflight`).
//!
//! A failed start leaves the file byte for byte as it was: everything here reads before it
//! writes, and the schema version (SQLite's `user_version`, in the file's header) is checked
//! before the journal mode or the schema is set. `backup` is SQLite's online backup in one step,
//! i.e. one read transaction: a consistent copy beside a running server, whose WAL lets it read
//! while the server writes. `restore` puts a copy back as `etcdutl snapshot restore
//! --bump-revision --mark-compacted` does: the restored history counts as compacted at a revision
//! above every one the replaced database served, so clients holding an older resourceVersion
//! get 410 and relist instead of missing the changes the restore undid.

use std::fs::{self, File};
use std::path::Path;

use rusqlite::backup::{Backup, StepResult};
use rusqlite::{params, Connection, ErrorCode, OpenFlags, OptionalExtension};

use super::conn;
use super::preflight::{cause, check_header, describe, directory, preflight, with_suffix};
use super::sql;

/// What `check` found in a sound database.
#[derive(Debug)]
pub struct Checked {
    pub schema_version: i64,
    pub revision: u64,
    pub compacted: u64,
}

/// What `backup` copied.
#[derive(Debug)]
pub struct BackedUp {
    pub revision: u64,
}

/// What `restore` put back.
#[derive(Debug)]
pub struct Restored {
    /// The newest revision in the copy.
    pub backup_revision: u64,
    /// The newest revision the replaced database had served (0: there was none).
    pub replaced_revision: u64,
    /// Where revisions continue from; history at or below it counts as compacted.
    pub compacted: u64,
}

/// Opens an existing database read-only, after the header check, refusing one that is not
/// this server's or is from a newer schema.
fn open_read_only(path: &Path) -> Result<Connection, String> {
    let mut file = File::open(path).map_err(|e| format!("{}: {}", path.display(), cause(&e)))?;
    check_header(path, &mut file)?;
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| describe(path, &e))?;
    let version = conn::schema_version(&conn).map_err(|e| describe(path, &e))?;
    conn::known_version(path, version)?;
    Ok(conn)
}

/// The newest revision the database has served and its compacted revision; the revision
/// counter restarts from the larger of the log's newest row and the compacted revision.
fn revisions(conn: &Connection) -> rusqlite::Result<(u64, u64)> {
    let compacted: Option<u64> =
        conn.query_row(sql::META_GET, [sql::META_COMPACTED], |r| r.get(0)).optional()?;
    let compacted = compacted.unwrap_or(0);
    let max_rev: u64 = conn.query_row(sql::MAX_REV, [], |r| r.get(0))?;
    Ok((max_rev.max(compacted), compacted))
}

/// SQLite's integrity check over every page; `Err` lists what it found, one problem a line.
fn integrity(path: &Path, conn: &Connection, pragma: &str) -> Result<(), String> {
    let mut stmt = conn.prepare(&format!("PRAGMA {pragma}")).map_err(|e| describe(path, &e))?;
    let found: Vec<String> = stmt
        .query_map([], |r| r.get(0))
        .and_then(|rows| rows.collect())
        .map_err(|e| describe(path, &e))?;
    if found == ["ok"] {
        Ok(())
    } else {
        Err(format!("{}: the database is corrupt:\n{}", path.display(), found.join("\n")))
    }
}

/// `virt-apiserver check`: SQLite's full integrity check, read-only (a running server may keep
/// writing).
pub fn check(path: &Path) -> Result<Checked, String> {
    let conn = open_read_only(path)?;
    integrity(path, &conn, "integrity_check")?;
    let schema_version = conn::schema_version(&conn).map_err(|e| describe(path, &e))?;
    let (revision, compacted) = revisions(&conn).map_err(|e| describe(path, &e))?;
    Ok(Checked { schema_version, revision, compacted })
}

/// `virt-apiserver backup`: copies the database at one revision into `out` (replaced as a
/// whole: written beside it, synced, renamed), a self-contained file in rollback-journal mode.
pub fn backup(path: &Path, out: &Path) -> Result<BackedUp, String> {
    let src = open_read_only(path)?;
    let part = with_suffix(out, ".part");
    let _ = fs::remove_file(&part);
    let written = (|| {
        copy(&src, path, &part)?;
        let dst = Connection::open(&part).map_err(|e| describe(&part, &e))?;
        dst.pragma_update(None, "journal_mode", "DELETE").map_err(|e| describe(&part, &e))?;
        integrity(&part, &dst, "quick_check")?;
        let (revision, _) = revisions(&dst).map_err(|e| describe(&part, &e))?;
        drop(dst);
        sync(&part)?;
        fs::rename(&part, out).map_err(|e| format!("{}: {}", out.display(), cause(&e)))?;
        sync(&directory(out))?;
        Ok(BackedUp { revision })
    })();
    if written.is_err() {
        let _ = fs::remove_file(&part);
    }
    written
}

/// Copies every page of `src` into a new database at `to` in one step: one read transaction,
/// so the copy is the database at one commit even while another process writes.
fn copy(src: &Connection, from: &Path, to: &Path) -> Result<(), String> {
    let mut dst = Connection::open(to).map_err(|e| describe(to, &e))?;
    let backup = Backup::new(src, &mut dst).map_err(|e| describe(to, &e))?;
    loop {
        match backup.step(-1).map_err(|e| describe(from, &e))? {
            StepResult::Done => return Ok(()),
            // The source's writer holds a lock for a moment (a checkpoint): try again.
            _ => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    }
}

fn sync(path: &Path) -> Result<(), String> {
    File::open(path)
        .and_then(|f| f.sync_all())
        .map_err(|e| format!("{}: cannot sync: {}", path.display(), cause(&e)))
}

/// `virt-apiserver restore`: replaces the database at `path` with the copy at `from`, its
/// history compacted and marked compacted above every revision served before: above the
/// replaced database's newest revision, read from it, and the copy's, plus `bump`. A database
/// no server may hold: its exclusive lock is taken first and kept until the copy is in place.
pub fn restore(path: &Path, from: &Path, bump: u64) -> Result<Restored, String> {
    let src = open_read_only(from)?;
    integrity(from, &src, "quick_check")?;
    let (backup_revision, _) = revisions(&src).map_err(|e| describe(from, &e))?;

    let mut held = None;
    let mut replaced_revision = 0;
    if path.exists() {
        preflight(path)?;
        let old = Connection::open(path).map_err(|e| describe(path, &e))?;
        // A running server keeps the database open: the exclusive lock tells.
        old.pragma_update(None, "locking_mode", "EXCLUSIVE").map_err(|e| describe(path, &e))?;
        old.execute_batch("BEGIN EXCLUSIVE").map_err(|e| match e.sqlite_error_code() {
            Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => format!(
                "{}: the database is in use (is a server running on it?): stop it before \
                 restoring",
                path.display()
            ),
            _ => describe(path, &e),
        })?;
        match revisions(&old) {
            Ok((rev, _)) => replaced_revision = rev,
            Err(_) if bump > 0 => {}
            Err(e) => {
                return Err(format!(
                    "{}; its newest revision cannot be read, so pass --bump-revision with a \
                     number above every revision it served",
                    describe(path, &e)
                ))
            }
        }
        held = Some(old);
    } else {
        preflight(path)?;
    }
    let compacted = backup_revision.max(replaced_revision) + 1 + bump;

    let part = with_suffix(path, ".restore-part");
    for stale in [part.clone(), with_suffix(&part, "-wal"), with_suffix(&part, "-shm")] {
        let _ = fs::remove_file(stale);
    }
    let written = (|| {
        copy(&src, from, &part)?;
        // `open` upgrades an older schema and sets the server's journal mode.
        let name = part.to_str().ok_or_else(|| format!("{}: not a UTF-8 path", part.display()))?;
        let mut conn = conn::open(name)?;
        let tx = conn.transaction().map_err(|e| describe(&part, &e))?;
        tx.execute(sql::COMPACT_SUPERSEDED, params![0, backup_revision])
            .and_then(|_| tx.execute(sql::COMPACT_TOMBSTONES, params![0, backup_revision]))
            .and_then(|_| tx.execute(sql::META_SET, params![sql::META_COMPACTED, compacted]))
            .and_then(|_| tx.commit())
            .map_err(|e| describe(&part, &e))?;
        // Closing checkpoints the WAL into the file and removes it.
        drop(conn);
        sync(&part)
    })();
    if let Err(e) = written {
        let _ = fs::remove_file(&part);
        return Err(e);
    }
    // Release the old database only now; its WAL and shared memory belong to the old file and
    // would be read as the new one's.
    drop(held);
    for side in ["-wal", "-shm"] {
        let side = with_suffix(path, side);
        if side.exists() {
            fs::remove_file(&side).map_err(|e| format!("{}: {}", side.display(), cause(&e)))?;
        }
    }
    fs::rename(&part, path).map_err(|e| format!("{}: {}", path.display(), cause(&e)))?;
    sync(&directory(path))?;
    Ok(Restored { backup_revision, replaced_revision, compacted })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Store, StoreConfig, StoreError};
    use serde_json::json;

    fn store(path: &Path) -> Store {
        Store::open(StoreConfig::new(path.to_str().unwrap())).unwrap()
    }

    /// The restored history is compacted away and marked compacted one above the newest
    /// revision either database had; the revision counter continues from there.
    #[tokio::test]
    async fn restore_compacts_the_copy_above_both_databases() {
        let dir = tempfile::tempdir().unwrap();
        let (db, copy) = (dir.path().join("db"), dir.path().join("copy"));
        let s = store(&db);
        let a = s.create("g/p/ns/a", json!({"metadata": {"name": "a"}})).await.unwrap();
        let rev_a: u64 = a["metadata"]["resourceVersion"].as_str().unwrap().parse().unwrap();
        s.update("g/p/ns/a", rev_a, json!({"metadata": {"name": "a"}, "v": 2})).await.unwrap();
        s.create("g/p/ns/b", json!({"metadata": {"name": "b"}})).await.unwrap();
        s.delete("g/p/ns/b", 3).await.unwrap();
        assert_eq!(backup(&db, &copy).unwrap().revision, 4);
        for n in 0..3 {
            s.create(&format!("g/p/ns/later-{n}"), json!({"metadata": {}})).await.unwrap();
        }
        drop(s);

        let done = restore(&db, &copy, 0).unwrap();
        assert_eq!((done.backup_revision, done.replaced_revision, done.compacted), (4, 7, 8));
        let conn = Connection::open(&db).unwrap();
        let revs: Vec<u64> = conn
            .prepare("SELECT rev FROM log ORDER BY rev")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(revs, [2], "only the live row is left");
        drop(conn);

        let s = store(&db);
        assert_eq!(s.current_revision().await.unwrap(), 8);
        assert!(matches!(s.events_after("g/", 7).await, Err(StoreError::Expired { compacted: 8 })));
        assert_eq!(s.get("g/p/ns/a").await.unwrap().unwrap()["v"], 2);
        assert!(s.get("g/p/ns/later-0").await.unwrap().is_none());
        let c = s.create("g/p/ns/c", json!({"metadata": {}})).await.unwrap();
        assert_eq!(c["metadata"]["resourceVersion"], "9");
    }

    #[test]
    fn restore_refuses_a_copy_that_is_not_a_database() {
        let dir = tempfile::tempdir().unwrap();
        let (db, copy) = (dir.path().join("db"), dir.path().join("copy"));
        fs::write(&copy, "not sqlite").unwrap();
        let err = restore(&db, &copy, 0).unwrap_err();
        assert!(err.contains("not a SQLite database"), "{err}");
        assert!(!db.exists());
    }
}
