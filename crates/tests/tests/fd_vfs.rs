//! The file-descriptor VFS (`cipherlite_vfs::fd`, better-sqlite3 13.2's
//! `new Database(fd, { journalFd })`) from Rust: the descriptor checks and their messages,
//! a database used through its descriptors (journal included, never deleted but emptied),
//! a hot journal rolled back through the journal descriptor, WAL refused, and writes that
//! fail closed once a file lost its name. Linux only (it needs /proc/self/fd).
#![cfg(target_os = "linux")]

mod common;

use cipherlite_sqlite::{ffi, Connection, OpenFlags};
use cipherlite_vfs::fd::{self, FdRefused, FdVfsHandle};
use common::sql::{exec, rows};
use std::fs::{File, OpenOptions};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("cipherlite-fd-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A plaintext database at `path` with `t(a, b)` holding `n` rows (through the OS VFS).
fn create(path: &Path, n: u32) {
    let conn =
        Connection::open(path.to_str().expect("utf-8"), OpenFlags::default(), None).expect("open");
    exec(&conn, &format!("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT); INSERT INTO t(b) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {n}) SELECT printf('row-%d-%0300d', i, i) FROM s;")).expect("create");
    conn.close().map_err(|(_, e)| e).expect("close");
}

fn rw(path: &Path) -> File {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .expect("open")
}

fn refused(fd: i32, journal_fd: i32, readonly: bool) -> String {
    match fd::validate(fd, journal_fd, readonly) {
        Err(FdRefused(message)) => message,
        Ok(()) => panic!("descriptors {fd}/{journal_fd} accepted"),
    }
}

fn open_fd(vfs: &FdVfsHandle, readonly: bool) -> Connection {
    Connection::open(
        vfs.main_name(),
        OpenFlags {
            readonly,
            ..OpenFlags::default()
        },
        Some(vfs.name()),
    )
    .expect("open from descriptors")
}

const SUMMARY: &str = "SELECT count(*), sum(a) FROM t";

#[test]
fn descriptors_are_checked_with_better_sqlite3s_messages() {
    let dir = TempDir::new("validate");
    let db = dir.0.join("v.db");
    create(&db, 3);
    let main = rw(&db);
    let journal = rw(&dir.0.join("v.db-journal"));
    let (fd, jfd) = (main.as_raw_fd(), journal.as_raw_fd());
    assert_eq!(fd::validate(fd, jfd, false), Ok(()));
    assert_eq!(fd::header_is_sqlite(fd), Some(true));
    assert_eq!(
        fd::header_is_sqlite(jfd),
        None,
        "an empty file has no header"
    );
    assert_eq!(fd::file_size(jfd), Some(0));
    assert_eq!(
        fd::file_size(fd),
        Some(std::fs::metadata(&db).expect("db").len())
    );

    assert_eq!(
        refused(-1, jfd, false),
        "Cannot open database because the database file descriptor is not open"
    );
    let directory = File::open(&dir.0).expect("directory");
    assert_eq!(
        refused(fd, directory.as_raw_fd(), false),
        "Cannot open database because the journal file descriptor does not refer to a regular file"
    );
    let write_only = OpenOptions::new()
        .write(true)
        .open(&db)
        .expect("write-only");
    assert_eq!(
        refused(write_only.as_raw_fd(), jfd, false),
        "Cannot open database because the database file descriptor was not opened for reading"
    );
    let read_only = File::open(&db).expect("read-only");
    assert_eq!(
        refused(read_only.as_raw_fd(), jfd, false),
        "Cannot open database because the database file descriptor was not opened for writing (use the \"readonly\" option)"
    );
    let journal_ro = File::open(dir.0.join("v.db-journal")).expect("read-only journal");
    assert_eq!(
        fd::validate(read_only.as_raw_fd(), journal_ro.as_raw_fd(), true),
        Ok(())
    );
    let append = OpenOptions::new()
        .read(true)
        .append(true)
        .open(&db)
        .expect("append");
    assert_eq!(
        refused(append.as_raw_fd(), jfd, false),
        "Cannot open database because the database file descriptor was opened in append mode"
    );
    assert_eq!(
        refused(fd, fd, false),
        "Cannot open database because the database and journal file descriptors refer to the same file"
    );
    let elsewhere = rw(&dir.0.join("other-journal"));
    assert_eq!(
        refused(fd, elsewhere.as_raw_fd(), false),
        "Cannot open database because the journal file descriptor does not refer to the database's \"-journal\" file"
    );
    let gone = rw(&dir.0.join("gone.db"));
    std::fs::remove_file(dir.0.join("gone.db")).expect("unlink");
    assert_eq!(
        refused(gone.as_raw_fd(), jfd, false),
        "Cannot open database because the database file has been deleted"
    );

    // A database in WAL mode (header bytes 18 and 19 are 2).
    let wal_db = dir.0.join("w.db");
    create(&wal_db, 1);
    {
        let conn = Connection::open(wal_db.to_str().expect("utf-8"), OpenFlags::default(), None)
            .expect("open");
        exec(&conn, "PRAGMA journal_mode = WAL").expect("wal");
        conn.close().map_err(|(_, e)| e).expect("close");
    }
    let wal_main = rw(&wal_db);
    let wal_journal = rw(&dir.0.join("w.db-journal"));
    assert_eq!(
        refused(wal_main.as_raw_fd(), wal_journal.as_raw_fd(), false),
        "Cannot open database from a file descriptor because it is in WAL mode"
    );
}

#[test]
fn a_database_is_used_through_its_descriptors_and_its_journal_is_emptied_not_deleted() {
    let dir = TempDir::new("use");
    let db = dir.0.join("u.db");
    let journal_path = dir.0.join("u.db-journal");
    create(&db, 10);
    let main = rw(&db);
    let journal = rw(&journal_path);
    let vfs = FdVfsHandle::register(main.as_raw_fd(), journal.as_raw_fd(), false).expect("vfs");
    assert_eq!(vfs.main_name(), format!("fd:{}", main.as_raw_fd()));
    let conn = open_fd(&vfs, false);
    assert_eq!(rows(&conn, SUMMARY).expect("read"), "10|55|\n");
    exec(
        &conn,
        "BEGIN; INSERT INTO t(b) SELECT 'more-' || b FROM t; DELETE FROM t WHERE a = 1; COMMIT;",
    )
    .expect("write through the journal descriptor");
    assert_eq!(rows(&conn, SUMMARY).expect("read"), "19|209|\n");
    exec(&conn, "BEGIN; DELETE FROM t; ROLLBACK;").expect("rollback");
    assert_eq!(rows(&conn, SUMMARY).expect("read"), "19|209|\n");
    assert!(journal_path.exists(), "the journal is never deleted");
    assert_eq!(
        std::fs::metadata(&journal_path).expect("journal").len(),
        0,
        "but emptied"
    );

    // WAL needs shared memory this VFS doesn't offer: refused with a message.
    let err = exec(&conn, "PRAGMA journal_mode = WAL").expect_err("WAL refused");
    assert!(
        err.message.contains("journal_mode WAL is not supported"),
        "{}",
        err.message
    );
    assert_eq!(
        rows(&conn, "PRAGMA journal_mode").expect("mode"),
        "delete|\n"
    );
    // Other files (an attached database) go to the OS VFS as usual.
    let attached = dir.0.join("attached.db");
    exec(
        &conn,
        &format!(
            "ATTACH '{}' AS x; CREATE TABLE x.y(z); INSERT INTO x.y VALUES (42); DETACH x;",
            attached.display()
        ),
    )
    .expect("attach");
    conn.close().map_err(|(_, e)| e).expect("close");
    drop(vfs);

    // Connections by path see the same database.
    let by_path = Connection::open(db.to_str().expect("utf-8"), OpenFlags::default(), None)
        .expect("open by path");
    assert_eq!(rows(&by_path, SUMMARY).expect("read"), "19|209|\n");
    assert_eq!(
        rows(&by_path, "PRAGMA integrity_check").expect("check"),
        "ok|\n"
    );
    by_path.close().map_err(|(_, e)| e).expect("close");
    let other = Connection::open(
        attached.to_str().expect("utf-8"),
        OpenFlags::default(),
        None,
    )
    .expect("open attached");
    assert_eq!(rows(&other, "SELECT z FROM y").expect("read"), "42|\n");
    other.close().map_err(|(_, e)| e).expect("close");

    // Read-only descriptors: reads work, writes are refused.
    let main_ro = File::open(&db).expect("ro");
    let journal_ro = File::open(&journal_path).expect("ro journal");
    let vfs =
        FdVfsHandle::register(main_ro.as_raw_fd(), journal_ro.as_raw_fd(), true).expect("vfs");
    let conn = open_fd(&vfs, true);
    assert_eq!(rows(&conn, SUMMARY).expect("read"), "19|209|\n");
    let err = exec(&conn, "DELETE FROM t").expect_err("read-only");
    assert_eq!(err.code & 0xff, ffi::SQLITE_READONLY, "{}", err.message);
    conn.close().map_err(|(_, e)| e).expect("close");
}

#[test]
fn a_hot_journal_is_rolled_back_through_the_journal_descriptor() {
    let dir = TempDir::new("hot");
    let db = dir.0.join("h.db");
    create(&db, 40);
    // A transaction that spilled to the file, copied as a crash would leave it.
    let crashed = dir.0.join("c.db");
    {
        let conn = Connection::open(db.to_str().expect("utf-8"), OpenFlags::default(), None)
            .expect("open");
        exec(
            &conn,
            "PRAGMA cache_size = 1; BEGIN; UPDATE t SET b = 'changed';",
        )
        .expect("spill");
        std::fs::copy(&db, &crashed).expect("copy db");
        std::fs::copy(dir.0.join("h.db-journal"), dir.0.join("c.db-journal"))
            .expect("copy journal");
        drop(conn);
    }
    assert!(
        std::fs::metadata(dir.0.join("c.db-journal"))
            .expect("journal")
            .len()
            > 0
    );
    let main = rw(&crashed);
    let journal = rw(&dir.0.join("c.db-journal"));
    let vfs = FdVfsHandle::register(main.as_raw_fd(), journal.as_raw_fd(), false).expect("vfs");
    let conn = open_fd(&vfs, false);
    assert_eq!(
        rows(&conn, "SELECT count(*) FROM t WHERE b = 'changed'").expect("read"),
        "0|\n"
    );
    assert_eq!(rows(&conn, SUMMARY).expect("read"), "40|820|\n");
    assert_eq!(
        rows(&conn, "PRAGMA integrity_check").expect("check"),
        "ok|\n"
    );
    conn.close().map_err(|(_, e)| e).expect("close");
    assert_eq!(
        std::fs::metadata(dir.0.join("c.db-journal"))
            .expect("journal")
            .len(),
        0
    );
}

#[test]
fn writes_fail_closed_once_a_file_lost_its_name() {
    let dir = TempDir::new("unlinked");
    let db = dir.0.join("n.db");
    let journal_path = dir.0.join("n.db-journal");
    create(&db, 5);
    let main = rw(&db);
    let journal = rw(&journal_path);
    let vfs = FdVfsHandle::register(main.as_raw_fd(), journal.as_raw_fd(), false).expect("vfs");
    let conn = open_fd(&vfs, false);
    exec(&conn, "INSERT INTO t(b) VALUES ('before')").expect("write");
    // Without its name a crash's journal could not be found by path: no more writes.
    std::fs::remove_file(&journal_path).expect("unlink the journal");
    let err = exec(&conn, "INSERT INTO t(b) VALUES ('after')").expect_err("refused");
    // SQLite asks whether the file moved before writing: yes, so it won't write.
    assert_eq!(err.code, ffi::SQLITE_READONLY_DBMOVED, "{}", err.message);
    assert_eq!(rows(&conn, SUMMARY).expect("read"), "6|21|\n");
    conn.close().map_err(|(_, e)| e).expect("close");
    drop(vfs);
    let by_path = Connection::open(db.to_str().expect("utf-8"), OpenFlags::default(), None)
        .expect("open by path");
    assert_eq!(rows(&by_path, SUMMARY).expect("read"), "6|21|\n");
    by_path.close().map_err(|(_, e)| e).expect("close");
}
