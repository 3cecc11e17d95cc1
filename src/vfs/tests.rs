//! The VFS per file kind, on the SQLCipher/SQLite3MC sample files of `testdata/sqlcipher4`
//! (see its README for what each holds): hot journals roll back to BASE whichever domain
//! their checksums are in, WALs recover, and the checksums cipherlite writes are over the
//! ciphertext. Through a real connection over the keyed VFS, in a temporary directory.

use super::checksum::{be32, wal_frame_checksum};
use super::format::{WalHeader, WAL_FRAME_HEADER, WAL_HEADER};
use super::{KeyedVfsHandle, NewFileLayout, PAGE_SIZE as P};
use crate::codec::journal_checksum;
use crate::codec::test_support::{sample_file, sample_key};
use crate::sqlite::{Connection, OpenFlags};
use std::path::{Path, PathBuf};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "cipherlite-vfs-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
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

/// Copies sample `name` (and its -journal/-wal) into `dir`.
fn copy_sample(name: &str, dir: &Path) -> PathBuf {
    for suffix in ["", "-journal", "-wal"] {
        let from = format!("{name}{suffix}");
        if crate::codec::test_support::testdata_dir()
            .join(&from)
            .is_file()
        {
            std::fs::write(dir.join(&from), sample_file(&from)).expect("copy");
        }
    }
    dir.join(name)
}

fn query(conn: &Connection, sql: &str) -> Vec<String> {
    let (stmt, _) = conn.prepare(sql, false).expect("prepare");
    let mut stmt = stmt.expect("statement");
    let mut out = Vec::new();
    while stmt.step().expect("step") {
        out.push(String::from_utf8_lossy(stmt.column_text(0)).into_owned());
    }
    out
}

fn open(path: &Path, vfs: &KeyedVfsHandle) -> Connection {
    Connection::open(
        path.to_str().expect("utf-8 path"),
        OpenFlags::default(),
        Some(vfs.name()),
    )
    .expect("open")
}

#[test]
fn hot_journals_of_both_checksum_domains_roll_back_to_base() {
    let key = sample_key();
    for name in [
        "hot-sqlcipher-4.12.0.sqlite",
        "hot-sqlite3mc-2.6.1-legacy4.sqlite",
        "hot-sqlite3mc-2.6.1-legacy0.sqlite",
    ] {
        let dir = TempDir::new("hot");
        let path = copy_sample(name, &dir.0);
        let vfs = KeyedVfsHandle::register(&key, NewFileLayout::Sqlite3mc).expect("vfs");
        let conn = open(&path, &vfs);
        assert_eq!(
            query(&conn, "SELECT count(*) || ',' || sum(a) FROM t"),
            ["100,5050"],
            "{name}"
        );
        assert_eq!(
            query(&conn, "SELECT count(*) FROM t WHERE b <> 'row-' || a"),
            ["0"],
            "{name}"
        );
        assert_eq!(query(&conn, "PRAGMA integrity_check"), ["ok"], "{name}");
        assert!(
            !dir.0.join(format!("{name}-journal")).exists(),
            "{name}: journal played back"
        );
        assert_eq!(
            std::fs::metadata(&path).expect("db").len(),
            2 * P as u64,
            "{name}: truncated"
        );
        drop(conn);
    }
}

#[test]
fn wals_of_sqlcipher_and_sqlite3mc_recover() {
    let key = sample_key();
    for name in [
        "wal-sqlcipher-4.12.0.sqlite",
        "wal-sqlite3mc-2.6.1-legacy0.sqlite",
    ] {
        let dir = TempDir::new("wal");
        let path = copy_sample(name, &dir.0);
        let vfs = KeyedVfsHandle::register(&key, NewFileLayout::Sqlite3mc).expect("vfs");
        let conn = open(&path, &vfs);
        assert_eq!(
            query(&conn, "SELECT count(*) || ',' || sum(a) FROM t"),
            ["110,6105"],
            "{name}"
        );
        assert_eq!(query(&conn, "SELECT x FROM w"), ["hello-wal"], "{name}");
        assert_eq!(query(&conn, "PRAGMA integrity_check"), ["ok"], "{name}");
        drop(conn);
    }
}

#[test]
fn the_journal_cipherlite_writes_checksums_the_ciphertext() {
    let dir = TempDir::new("journal");
    let path = dir.0.join("j.db");
    let vfs = KeyedVfsHandle::register(&[7u8; 32], NewFileLayout::SqlCipher).expect("vfs");
    let conn = open(&path, &vfs);
    let mut reserve = super::RESERVE_BYTES;
    let _ = conn.file_control_int(
        c"main",
        crate::sqlite::ffi::SQLITE_FCNTL_RESERVE_BYTES,
        &mut reserve,
    );
    let exec = |sql: &str| conn.exec_each(sql, |_| Ok(())).map_err(|_| ()).expect(sql);
    exec("CREATE TABLE t(x); INSERT INTO t VALUES (randomblob(3000)), (randomblob(3000)), (randomblob(3000));");
    // A transaction whose pages spill (tiny cache): the journal is synced and on disk.
    exec("PRAGMA cache_size = 1; BEGIN; UPDATE t SET x = randomblob(3000); INSERT INTO t SELECT x FROM t;");
    let journal = std::fs::read(dir.0.join("j.db-journal")).expect("journal");
    let mut nonce = be32(&journal[12..]);
    let sector = be32(&journal[20..]) as usize;
    assert_eq!(be32(&journal[24..]) as usize, P, "page size in the header");
    let mut records = 0;
    let mut at = sector;
    while at + 8 + P <= journal.len() {
        let is_header = journal[at..at + 8] == super::format::JOURNAL_MAGIC
            || (journal[at..at + 12] == [0; 12] && be32(&journal[at + 24..]) as usize == P);
        if at.is_multiple_of(sector) && is_header {
            // The next segment's header (SQLite syncs the journal in segments; its magic is
            // zero until the segment's records are synced).
            nonce = be32(&journal[at + 12..]);
            at += sector;
            continue;
        }
        let pgno = be32(&journal[at..]);
        if pgno == 0 {
            at = (at / sector + 1) * sector; // padding up to the next segment
            continue;
        }
        let image = &journal[at + 4..at + 4 + P];
        let stored = be32(&journal[at + 4 + P..]);
        assert_eq!(
            stored,
            journal_checksum(nonce, image),
            "record {records} (page {pgno})"
        );
        records += 1;
        at += 8 + P;
    }
    assert!(records >= 2, "{records} records");
    drop(conn);
}

#[test]
fn the_wal_cipherlite_writes_chains_over_the_ciphertext() {
    let dir = TempDir::new("walw");
    let path = dir.0.join("w.db");
    let vfs = KeyedVfsHandle::register(&[9u8; 32], NewFileLayout::Sqlite3mc).expect("vfs");
    let conn = open(&path, &vfs);
    let mut reserve = super::RESERVE_BYTES;
    let _ = conn.file_control_int(
        c"main",
        crate::sqlite::ffi::SQLITE_FCNTL_RESERVE_BYTES,
        &mut reserve,
    );
    let exec = |sql: &str| conn.exec_each(sql, |_| Ok(())).map_err(|_| ()).expect(sql);
    exec("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t(x); INSERT INTO t VALUES (randomblob(5000));");
    let wal = std::fs::read(dir.0.join("w.db-wal")).expect("wal");
    let header = WalHeader::parse(&wal[..WAL_HEADER], P).expect("a valid WAL header");
    let mut chain = header.checksum;
    let mut frames = 0;
    for frame in wal[WAL_HEADER..].chunks_exact(WAL_FRAME_HEADER + P) {
        let (head, page) = frame.split_at(WAL_FRAME_HEADER);
        let expected = wal_frame_checksum(header.big_endian, chain, head, page);
        let stored = (be32(&head[16..]), be32(&head[20..]));
        assert_eq!(stored, expected, "frame {}", frames + 1);
        chain = stored;
        frames += 1;
    }
    assert!(frames >= 3);
    drop(conn);
}
