//! A full disk: with the database on a small tmpfs, writes that do not fit answer kube's 500 for
//! etcd's `database space exceeded`, reads and watches go on, nothing acknowledged is lost, and
//! writes work again once space is freed, without a restart.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::common::*;

/// A tmpfs of the given size, unmounted on drop. CI runs as root: a mount that fails is a
/// failure, not a skip.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Tmpfs {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .expect("mount runs");
        assert!(
            out.status.success(),
            "cannot mount a tmpfs at {} (this test needs root, as CI has): {}",
            dir.path().display(),
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.dir.path()).status();
    }
}

/// Writes a file until the filesystem has no room left.
fn fill(path: &Path) -> PathBuf {
    let filler = path.join("filler");
    let mut f = std::fs::File::create(&filler).expect("filler");
    let chunk = vec![0xa5u8; 64 * 1024];
    loop {
        if f.write_all(&chunk).and_then(|_| f.sync_all()).is_err() {
            break;
        }
    }
    // The last bytes, a page at a time.
    while f.write_all(&chunk[..4096]).and_then(|_| f.sync_all()).is_ok() {}
    filler
}

const NS: &str = "full";

fn configmap(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"payload": format!("{name};").repeat(20_000)},
    })
}

fn path() -> String {
    format!("/api/v1/namespaces/{NS}/configmaps")
}

#[test]
fn a_full_disk_answers_500_keeps_reads_and_watches_loses_nothing_and_recovers() {
    let fs = Tmpfs::mount("8m");
    let db = fs.path().join("virt.db");
    let s = TestServer::start_with(ServerOptions { db: Some(db.clone()), ..Default::default() });
    s.namespace(NS);
    let mut acked = Vec::new();
    for i in 0..3 {
        let name = format!("early-{i}");
        assert_eq!(s.post(&path(), &configmap(&name)).status, 201);
        acked.push(name);
    }
    let watch = s.watch(&format!("{}?watch=true&resourceVersion={}", path(), {
        let list = s.get_json(&path());
        list["metadata"]["resourceVersion"].as_str().unwrap().to_owned()
    }));

    let filler = fill(fs.path());
    // Writes go on while the WAL still has room it wrote before; then one does not fit.
    let mut refused = None;
    for i in 0..200 {
        let name = format!("late-{i}");
        let r = s.post(&path(), &configmap(&name));
        match r.status {
            201 => acked.push(name),
            _ => {
                refused = Some(r);
                break;
            }
        }
    }
    let refused = refused.expect("a write that does not fit is refused");
    // kube answers etcd's "database space exceeded" as an unclassified storage error.
    let status = refused.json();
    assert_eq!(refused.status, 500, "{status}");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["code"], 500);
    assert!(status.get("reason").is_none(), "no reason, as kube's StatusReasonUnknown: {status}");
    assert_eq!(
        status["message"], "database space exceeded: database or disk is full",
        "the message names the cause"
    );
    // Still full: still refused, the same way.
    assert_eq!(s.post(&path(), &configmap("still-full")).status, 500);

    // Reads go on, and hold every acknowledged write.
    let mut names = s.list_names(&path());
    names.sort();
    let mut want = acked.clone();
    want.sort();
    assert_eq!(names, want);
    assert_eq!(s.get(&format!("{}/early-0", path())).status, 200);
    // The open watch saw every acknowledged write after its start, and no refused one.
    for name in &acked[3..] {
        next_event(&watch, "ADDED", name);
    }
    watch.expect_none(Duration::from_millis(300));
    // A new watch can start.
    let second = s.watch(&format!("{}?watch=true", path()));
    for _ in 0..acked.len() {
        assert_eq!(second.expect()["type"], "ADDED");
    }

    // Space freed: writes work again, without a restart, and the watches follow.
    std::fs::remove_file(&filler).unwrap();
    let again = s.post(&path(), &configmap("after-freeing"));
    assert_eq!(again.status, 201, "{}", again.text());
    acked.push("after-freeing".into());
    next_event(&watch, "ADDED", "after-freeing");
    next_event(&second, "ADDED", "after-freeing");

    // Nothing acknowledged is lost, even to a crash.
    let (db, _) = s.kill();
    let s = TestServer::start_with(ServerOptions { db: Some(db), ..Default::default() });
    let mut names = s.list_names(&path());
    names.sort();
    acked.sort();
    assert_eq!(names, acked);
    drop(s);
}

/// An fsync that fails (here EIO, injected by an `LD_PRELOAD` shim once a marker file exists)
/// is not retried or answered as if it had worked: the server stops with a clear message, and
/// what was acknowledged before is there after a restart.
#[test]
fn a_failed_fsync_stops_the_server_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("failing_fsync.c");
    std::fs::write(
        &source,
        r#"#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
static int failing(void) {
    const char *marker = getenv("FAIL_FSYNC_WHEN");
    return marker && access(marker, F_OK) == 0;
}
int fsync(int fd) {
    if (failing()) { errno = EIO; return -1; }
    return ((int (*)(int))dlsym(RTLD_NEXT, "fsync"))(fd);
}
int fdatasync(int fd) {
    if (failing()) { errno = EIO; return -1; }
    return ((int (*)(int))dlsym(RTLD_NEXT, "fdatasync"))(fd);
}
"#,
    )
    .unwrap();
    let shim = dir.path().join("failing_fsync.so");
    let cc = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(&shim)
        .arg(&source)
        .arg("-ldl")
        .output()
        .expect("cc runs (the build needs it for SQLite anyway)");
    assert!(cc.status.success(), "{}", String::from_utf8_lossy(&cc.stderr));

    let marker = dir.path().join("fail-now");
    let log = dir.path().join("stderr");
    let db = dir.path().join("virt.db");
    let mut s = TestServer::start_with(ServerOptions {
        db: Some(db.clone()),
        stderr: Some(log.clone()),
        env: vec![
            ("LD_PRELOAD".into(), shim.display().to_string()),
            ("FAIL_FSYNC_WHEN".into(), marker.display().to_string()),
        ],
        ..Default::default()
    });
    s.namespace(NS);
    assert_eq!(s.post(&path(), &configmap("synced")).status, 201);

    std::fs::write(&marker, "").unwrap();
    // The answer is a 500 or a cut connection, whichever the exit leaves time for.
    match ureq::post(&s.url(&path())).send_json(configmap("unsynced")) {
        Ok(r) => panic!("a write whose fsync failed was answered {}", r.status()),
        Err(ureq::Error::Status(code, _)) => assert_eq!(code, 500),
        Err(ureq::Error::Transport(_)) => {}
    }
    let status = s.wait_exit(Duration::from_secs(5)).expect("the server stops");
    assert_eq!(status.code(), Some(1));
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(
        log.contains(
            "error: the database's storage failed, stopping: fsync of the database failed"
        ),
        "{log}"
    );

    std::fs::remove_file(&marker).unwrap();
    let (db, _) = s.kill();
    let s = TestServer::start_with(ServerOptions { db: Some(db), ..Default::default() });
    assert_eq!(s.get(&format!("{}/synced", path())).status, 200);
}
