//! The checks that turn a bad database file into one clear line before SQLite touches it, and
//! SQLite's errors on a file worded for the operator: what opening the database (`conn`) and the
//! operator's subcommands (`files`) both run, so neither needs the other.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use rusqlite::ErrorCode;

/// The first 16 bytes of every SQLite database file.
const HEADER: &[u8; 16] = b"SQLite format 3\0";

/// Checks what can be checked before SQLite opens `path` for writing, so each failure names
/// its cause: an existing file must be a regular file we may write that starts with SQLite's
/// header (or is empty: SQLite's new database), and its directory must take new files (SQLite
/// creates the database there, and `-wal` and `-shm` beside it). Reads only.
pub(super) fn preflight(path: &Path) -> Result<(), String> {
    let shown = path.display();
    match fs::metadata(path) {
        Ok(meta) if meta.is_dir() => return Err(format!("{shown}: is a directory")),
        Ok(_) => {
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .map_err(|e| format!("{shown}: cannot open it for writing: {}", cause(&e)))?;
            check_header(path, &mut file)?;
            for side in ["-wal", "-shm"] {
                let side = with_suffix(path, side);
                if side.exists() {
                    OpenOptions::new().read(true).write(true).open(&side).map_err(|e| {
                        format!("{}: cannot open it for writing: {}", side.display(), cause(&e))
                    })?;
                }
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{shown}: {}", cause(&e))),
    }
    let dir = directory(path);
    if !dir.is_dir() {
        return Err(format!("{shown}: its directory {} does not exist", dir.display()));
    }
    // Creating a file is the only sure test of a directory (modes, ACLs, read-only mounts and
    // immutable attributes all answer it); SQLite's own answer is a bare "unable to open".
    let probe = dir.join(format!(".{}.probe-{}", file_name(path), std::process::id()));
    match OpenOptions::new().write(true).create_new(true).open(&probe) {
        Ok(_) => {
            let _ = fs::remove_file(&probe);
            Ok(())
        }
        Err(e) => Err(format!(
            "{shown}: cannot create files in its directory {}: {} (SQLite keeps the database's \
             -wal and -shm files beside it)",
            dir.display(),
            cause(&e)
        )),
    }
}

/// A file that holds anything must start with SQLite's header.
pub(super) fn check_header(path: &Path, file: &mut File) -> Result<(), String> {
    let mut head = Vec::with_capacity(HEADER.len());
    file.take(HEADER.len() as u64)
        .read_to_end(&mut head)
        .map_err(|e| format!("{}: cannot read it: {}", path.display(), cause(&e)))?;
    if !head.is_empty() && head != HEADER {
        return Err(format!(
            "{}: not a SQLite database (it does not start with SQLite's header)",
            path.display()
        ));
    }
    Ok(())
}

/// An I/O error as one lowercase phrase: "permission denied (os error 13)".
pub(super) fn cause(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(code) => format!("{} (os error {code})", e.kind()),
        None => e.to_string(),
    }
}

/// SQLite's error on `path`, worded for the operator.
pub(super) fn describe(path: &Path, e: &rusqlite::Error) -> String {
    let shown = path.display();
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase) => format!("{shown}: not a SQLite database ({e})"),
        Some(ErrorCode::DatabaseCorrupt) => format!(
            "{shown}: the database is corrupt ({e}); `virt-apiserver check --database {shown}` \
             lists the damage, `virt-apiserver restore` puts a backup back"
        ),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            format!("{shown}: the database is in use by another process ({e})")
        }
        _ => format!("{shown}: {e}"),
    }
}

pub(super) fn directory(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| "db".into(), |n| n.to_string_lossy().into_owned())
}

pub(super) fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_without_the_header_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.db");
        fs::write(&path, b"hello, not a database").unwrap();
        let err = preflight(&path).unwrap_err();
        assert!(err.starts_with(&format!("{}: not a SQLite database", path.display())), "{err}");
        fs::write(&path, b"").unwrap();
        preflight(&path).unwrap();
    }

    #[test]
    fn a_missing_directory_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = preflight(&dir.path().join("none/x.db")).unwrap_err();
        assert!(err.contains("does not exist"), "{err}");
        assert!(preflight(dir.path()).unwrap_err().ends_with("is a directory"));
    }

    #[test]
    fn io_causes_read_as_phrases() {
        let e = io::Error::from_raw_os_error(13);
        assert_eq!(cause(&e), "permission denied (os error 13)");
    }
}
