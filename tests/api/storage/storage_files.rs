//! The database file as operators meet it: bad files at start fail in one line that
//! names the file and the cause and leave it byte for byte as it was; `check`; the schema's
//! version and upgrades; `backup` beside a running server and `restore`, after which revisions
//! continue above every one served before and older history counts as compacted.
//!
//! These are the SQLite file's own tools, so their servers run on SQLite on either storage axis;
//! an etcd cluster is backed up and restored with etcd's (`etcdctl snapshot`).

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::*;

const CMS: &str = "/api/v1/namespaces/keep/configmaps";

fn cm(name: &str, value: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"v": value}})
}

fn sqlite_server() -> TestServer {
    TestServer::start_with(ServerOptions { sqlite: true, ..Default::default() })
}

/// Runs `cmd` to its end (at most 30 s: a server that starts instead of failing is killed).
fn finish(mut cmd: Command) -> Output {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    let id = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(30)) {
        Ok(out) => out.expect("wait"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(id.to_string()).status();
            panic!("{cmd:?} did not exit within 30 s");
        }
    }
}

fn server_on(db: &Path) -> Command {
    let mut cmd = Command::new(binary());
    cmd.args(["--listen", "127.0.0.1:0", "--database"]).arg(db);
    cmd
}

/// `virt-apiserver <args>` to its end.
fn tool<S: AsRef<OsStr>>(args: &[S]) -> Output {
    let mut cmd = Command::new(binary());
    cmd.args(args);
    finish(cmd)
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A start that fails: non-zero exit, and stderr one line that names `db` and has `cause`.
fn assert_refused(out: &Output, db: &Path, cause: &str) {
    let err = stderr(out);
    assert!(!out.status.success(), "the server started: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    let line = lines[0];
    assert!(line.starts_with("error: "), "{line}");
    assert!(line.contains(&db.display().to_string()), "names {}: {line}", db.display());
    assert!(line.contains(cause), "says {cause:?}: {line}");
}

/// The directory's files with their bytes.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("read_dir")
        .map(|e| {
            let e = e.expect("entry");
            let bytes = std::fs::read(e.path()).unwrap_or_default();
            (e.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect();
    files.sort();
    files
}

/// A database of this release with a few objects, as one self-contained file (a backup), in
/// a directory of its own.
fn sample_database() -> (tempfile::TempDir, PathBuf) {
    let s = sqlite_server();
    s.namespace("keep");
    for name in ["a", "b"] {
        assert_eq!(s.post(CMS, &cm(name, name)).status, 201);
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("virt.db");
    let out =
        tool(&[OsStr::new("backup"), "--database".as_ref(), s.db.as_os_str(), db.as_os_str()]);
    assert!(out.status.success(), "{}", stderr(&out));
    (dir, db)
}

fn check(db: &Path) -> Output {
    tool(&[OsStr::new("check"), "--database".as_ref(), db.as_os_str()])
}

#[test]
fn a_file_that_is_not_a_database_is_refused_untouched() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("virt.db");
    std::fs::write(&db, "apiVersion: v1\nkind: NotADatabase\n".repeat(200)).expect("write");
    let before = snapshot(dir.path());
    assert_refused(&finish(server_on(&db)), &db, "not a SQLite database");
    assert_eq!(snapshot(dir.path()), before);
    let out = check(&db);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("not a SQLite database"), "{}", stderr(&out));
}

#[test]
fn a_corrupt_database_is_refused_untouched_and_check_lists_the_damage() {
    let (dir, db) = sample_database();
    assert!(check(&db).status.success(), "{}", stderr(&check(&db)));
    // Page 1 holds the schema after the 100-byte header: garble it.
    let mut bytes = std::fs::read(&db).expect("read");
    bytes[100..3000].fill(0xa5);
    std::fs::write(&db, &bytes).expect("write");
    let before = snapshot(dir.path());
    assert_refused(&finish(server_on(&db)), &db, "the database is corrupt");
    assert_eq!(snapshot(dir.path()), before);

    // Damage start-up does not read (an index's page) is what `check` is for.
    let (dir, db) = sample_database();
    let conn = rusqlite::Connection::open(&db).expect("open");
    let root: usize = conn
        .query_row("SELECT rootpage FROM sqlite_master WHERE name = 'log_key_rev'", [], |r| {
            r.get(0)
        })
        .expect("the log's index");
    drop(conn);
    let mut bytes = std::fs::read(&db).expect("read");
    let page = 4096 * (root - 1);
    bytes[page + 50..page + 4050].fill(0x07);
    std::fs::write(&db, &bytes).expect("write");
    let before = snapshot(dir.path());
    let out = check(&db);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.starts_with(&format!("error: {}: the database is corrupt", db.display())), "{err}");
    assert!(err.lines().count() > 1, "the damage, a line each: {err}");
    assert_eq!(snapshot(dir.path()), before, "check writes nothing");
}

#[test]
fn a_newer_schema_is_refused_untouched() {
    let (dir, db) = sample_database();
    // SQLite's user_version: the header's 4 big-endian bytes at offset 60.
    let mut bytes = std::fs::read(&db).expect("read");
    assert_eq!(bytes[60..64], 2u32.to_be_bytes(), "this release writes schema version 2");
    bytes[60..64].copy_from_slice(&3u32.to_be_bytes());
    std::fs::write(&db, &bytes).expect("write");
    let before = snapshot(dir.path());
    assert_refused(
        &finish(server_on(&db)),
        &db,
        "database schema version 3 is newer than this build's 2",
    );
    assert_eq!(snapshot(dir.path()), before);
}

/// Whether this process runs as root (who may write anything).
fn root() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
}

/// The server as an unprivileged user would run it: as root (CI), as `nobody` via util-linux's
/// `setpriv`, since root writes through any file mode.
fn unprivileged_server(db: &Path) -> Command {
    if !root() {
        return server_on(db);
    }
    let found = Command::new("setpriv").arg("--version").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "setpriv (util-linux) is needed to test permissions as root: apt-get install util-linux"
    );
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(binary())
        .args(["--listen", "127.0.0.1:0", "--database"])
        .arg(db);
    cmd
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[test]
fn unwritable_directories_and_files_are_permission_denied() {
    let (dir, db) = sample_database();
    // Every user may read the directory and the file, none but the owner write them.
    chmod(dir.path(), 0o755);
    chmod(&db, 0o644);
    let before = snapshot(dir.path());

    // A new database in a directory the server may not write.
    let new = dir.path().join("new.db");
    let out = finish(unprivileged_server(&new));
    assert_refused(&out, &new, "permission denied");
    assert!(stderr(&out).contains(&format!("directory {}", dir.path().display())), "{out:?}");
    // A database file the server may not write.
    assert_refused(
        &finish(unprivileged_server(&db)),
        &db,
        "cannot open it for writing: permission denied",
    );
    assert_eq!(snapshot(dir.path()), before);
    // A file it may write, in a directory where it cannot create the -wal and -shm files.
    chmod(&db, 0o666);
    let out = finish(unprivileged_server(&db));
    assert_refused(&out, &db, "cannot create files in its directory");
    assert!(stderr(&out).contains("permission denied"), "{out:?}");
    assert_eq!(snapshot(dir.path()), before);
}

#[test]
fn check_reports_a_sound_database_with_its_version_and_revision() {
    let (_dir, db) = sample_database();
    let out = check(&db);
    assert!(out.status.success(), "{}", stderr(&out));
    // The namespaces and the `default/kubernetes` Service the server makes at start, `keep`,
    // and two ConfigMaps.
    assert_eq!(
        stdout(&out).trim(),
        format!("{}: ok (schema version 2, revision 8, compacted 0)", db.display())
    );
}

/// `tests/fixtures/current-release.db` was written by this release (schema version 2): a server
/// on a fresh database, then `POST` Namespace `fixture`, ConfigMap `fixture/settings` (label
/// era=current, data mode=fast), VirtualMachine `fixture/current-vm` (spec.runStrategy Halted),
/// ConfigMap `fixture/gone`, `DELETE` of `gone`, and `virt-apiserver backup` into the fixture.
/// When the schema changes, it becomes the database of the previous release: this test keeps
/// it opening with its objects as they were.
#[test]
fn a_database_of_this_release_opens_with_its_objects() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("virt.db");
    std::fs::copy(repo_root().join("tests/fixtures/current-release.db"), &db).expect("copy");
    let s = TestServer::start_with(ServerOptions { db: Some(db.clone()), ..Default::default() });
    let settings = s.get_json("/api/v1/namespaces/fixture/configmaps/settings");
    assert_eq!(settings["metadata"]["uid"], "2fcb4e5c-4617-488f-8cd6-937b8326a192");
    assert_eq!(rv(&settings), 6);
    assert_eq!(settings["metadata"]["labels"], json!({"era": "current"}));
    assert_eq!(settings["data"], json!({"mode": "fast"}));
    let vm = s.get_json("/apis/kubevirt.io/v1/namespaces/fixture/virtualmachines/current-vm");
    assert_eq!(vm["metadata"]["uid"], "85c1aaf7-22a8-4b7c-99be-6b4d9bd2e2ca");
    assert_eq!((rv(&vm), &vm["spec"]), (7, &json!({"runStrategy": "Halted"})));
    assert_status(&s.get("/api/v1/namespaces/fixture/configmaps/gone"), 404, "NotFound");
    let ns = s.get_json("/api/v1/namespaces/fixture");
    assert_eq!(ns["metadata"]["uid"], "8b45a62f-dc51-4c50-876b-16df0d897fd2");
    // Revisions continue after the fixture's last (the delete, 9), past the `default/kubernetes`
    // Service the start made (10): the fixture predates it.
    assert_eq!(rv(&s.post("/api/v1/namespaces/fixture/configmaps", &cm("new", "x")).json()), 11);
    drop(s);
    assert!(stdout(&check(&db)).contains("schema version 2"), "{:?}", check(&db));
}

/// The previous release kept its schema version (1) in the `meta` table; opening its database
/// upgrades it in place to this release's version (2, in the header). Its objects are tested by
/// `namespaces::a_previous_release_database_opens_with_its_namespaces`.
#[test]
fn a_previous_release_database_is_upgraded_in_place() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("virt.db");
    std::fs::copy(repo_root().join("tests/fixtures/previous-release.db"), &db).expect("copy");
    let out = check(&db);
    assert!(stdout(&out).contains("schema version 1, revision 4"), "{out:?}");
    let s = TestServer::start_with(ServerOptions { db: Some(db.clone()), ..Default::default() });
    let vm = s.get_json("/apis/kubevirt.io/v1/namespaces/legacy/virtualmachines/old-vm");
    assert_eq!(rv(&vm), 1);
    drop(s);
    let out = check(&db);
    assert!(stdout(&out).contains("schema version 2"), "{out:?}");
    // The upgraded file opens again as it is.
    let s = TestServer::start_with(ServerOptions { db: Some(db), ..Default::default() });
    assert_eq!(s.get("/apis/kubevirt.io/v1/namespaces/legacy/virtualmachines/old-vm").status, 200);
}

fn items(s: &TestServer) -> (Vec<Value>, u64) {
    let list = s.get_json(CMS);
    let rv: u64 = list["metadata"]["resourceVersion"].as_str().expect("rv").parse().expect("n");
    (list["items"].as_array().expect("items").clone(), rv)
}

#[test]
fn restore_brings_objects_back_and_clients_relist() {
    let s = sqlite_server();
    s.namespace("keep");
    for name in ["a", "b", "c"] {
        assert_eq!(s.post(CMS, &cm(name, "1")).status, 201);
    }
    let a = s.get_json(&format!("{CMS}/a"));
    let mut changed = a.clone();
    changed["data"]["v"] = "2".into();
    assert_eq!(s.put(&format!("{CMS}/a"), &changed).status, 200);
    let (saved, saved_rv) = items(&s);

    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join("backup.db");
    let out =
        tool(&[OsStr::new("backup"), "--database".as_ref(), s.db.as_os_str(), copy.as_os_str()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(&format!("at revision {saved_rv}")), "{}", stdout(&out));

    // Changes after the backup, which the restore undoes.
    assert_eq!(s.post(CMS, &cm("d", "1")).status, 201);
    assert_eq!(s.delete(&format!("{CMS}/b")).status, 200);
    let (_, served_rv) = items(&s);
    assert!(served_rv > saved_rv);

    // Not while a server holds the database.
    let restore = |db: &Path| {
        tool(&[OsStr::new("restore"), "--database".as_ref(), db.as_os_str(), copy.as_os_str()])
    };
    let out = restore(&s.db);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("the database is in use"), "{}", stderr(&out));

    let (db, _keep) = s.kill();
    let out = restore(&db);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = TestServer::start_with(ServerOptions { db: Some(db), ..Default::default() });

    // The objects as they were at the backup, revisions and all.
    let (restored, list_rv) = items(&s);
    assert_eq!(restored, saved);
    // History up to above every revision served before counts as compacted.
    assert_eq!(list_rv, served_rv + 1);
    for old in [saved_rv, served_rv] {
        let w = s.watch(&format!("{CMS}?watch=true&resourceVersion={old}"));
        let ev = w.expect();
        assert_eq!(
            (ev["type"].as_str(), ev["object"]["code"].as_u64()),
            (Some("ERROR"), Some(410))
        );
        assert_eq!(ev["object"]["reason"], "Expired", "{ev}");
        let exact = s.get(&format!("{CMS}?resourceVersion={old}&resourceVersionMatch=Exact"));
        assert_status(&exact, 410, "Expired");
    }
    // A client that relists watches on from the list's revision, and new writes take revisions
    // above every one served before the restore.
    let w = s.watch(&format!("{CMS}?watch=true&resourceVersion={list_rv}"));
    let made = s.post(CMS, &cm("e", "1"));
    assert_eq!(made.status, 201);
    assert!(rv(&made.json()) > served_rv);
    let ev = w.expect();
    assert_eq!(
        (ev["type"].as_str(), ev["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("e"))
    );
    assert_eq!(rv(&ev["object"]), list_rv + 1);
}

#[test]
fn restore_into_a_new_file_and_with_a_bump() {
    let (dir, copy) = sample_database();
    let db = dir.path().join("fresh.db");
    let out = tool(&[
        OsStr::new("restore"),
        "--database".as_ref(),
        db.as_os_str(),
        copy.as_os_str(),
        "--bump-revision".as_ref(),
        "1000".as_ref(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = TestServer::start_with(ServerOptions { db: Some(db), ..Default::default() });
    let (items, list_rv) = items(&s);
    assert_eq!(items.len(), 2);
    assert_eq!(list_rv, 8 + 1 + 1000);
}

/// A backup taken while writers run is the database at one commit: every writer's objects
/// (each created after the previous one was acknowledged) are a prefix of what it wrote, at
/// least as long as what was acknowledged before the backup started.
#[test]
fn a_backup_under_concurrent_writes_is_consistent() {
    let s = Arc::new(sqlite_server());
    s.namespace("keep");
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Vec<std::sync::atomic::AtomicUsize>> =
        Arc::new((0..4).map(|_| Default::default()).collect());
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let (s, stop, acked) = (s.clone(), stop.clone(), acked.clone());
            std::thread::spawn(move || {
                let mut i = 0;
                while !stop.load(Ordering::Relaxed) {
                    let made = s.post(CMS, &cm(&format!("w{t}-{i:05}"), &"x".repeat(2000)));
                    assert_eq!(made.status, 201, "{}", made.text());
                    i += 1;
                    acked[t].store(i, Ordering::SeqCst);
                }
            })
        })
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let deadline = Instant::now() + Duration::from_secs(60);
    for round in 0..3 {
        std::thread::sleep(Duration::from_millis(300));
        let before: Vec<usize> = acked.iter().map(|a| a.load(Ordering::SeqCst)).collect();
        let copy = dir.path().join(format!("backup-{round}.db"));
        let out = tool(&[
            OsStr::new("backup"),
            "--database".as_ref(),
            s.db.as_os_str(),
            copy.as_os_str(),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(check(&copy).status.success(), "{:?}", check(&copy));
        let db = dir.path().join(format!("restored-{round}.db"));
        let out =
            tool(&[OsStr::new("restore"), "--database".as_ref(), db.as_os_str(), copy.as_os_str()]);
        assert!(out.status.success(), "{}", stderr(&out));
        let r = TestServer::start_with(ServerOptions { db: Some(db), ..Default::default() });
        let names = r.list_names(CMS);
        for (t, acked_before) in before.iter().enumerate() {
            let mine: Vec<&String> =
                names.iter().filter(|n| n.starts_with(&format!("w{t}-"))).collect();
            let prefix: Vec<String> = (0..mine.len()).map(|i| format!("w{t}-{i:05}")).collect();
            assert_eq!(mine, prefix.iter().collect::<Vec<_>>(), "writer {t}: a prefix");
            assert!(mine.len() >= *acked_before, "writer {t}: {} < {acked_before}", mine.len());
        }
        assert!(Instant::now() < deadline, "took too long");
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().expect("writer");
    }
    assert!(acked.iter().all(|a| a.load(Ordering::SeqCst) > 0));
}
