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

// ---- keys, page sizes and the key check at open -------------------------------------------

use super::checksum::wal_checksum;
use super::format::{put_checksum, JOURNAL_MAGIC};
use super::VfsKey;
use crate::sqlite::ffi;
use crate::sqlite::Error;

fn try_open(path: &Path, vfs: &KeyedVfsHandle) -> Result<Connection, Error> {
    Connection::open(
        path.to_str().expect("utf-8 path"),
        OpenFlags::default(),
        Some(vfs.name()),
    )
}

/// Opens and runs `sql`, returning its single column as text, or the error's code.
fn try_query(path: &Path, vfs: &KeyedVfsHandle, sql: &str) -> Result<Vec<String>, i32> {
    let conn = try_open(path, vfs).map_err(|e| e.code)?;
    let (stmt, _) = conn.prepare(sql, false).map_err(|e| e.code)?;
    let mut stmt = stmt.expect("statement");
    let mut out = Vec::new();
    while stmt.step().map_err(|e| e.code)? {
        out.push(String::from_utf8_lossy(stmt.column_text(0)).into_owned());
    }
    Ok(out)
}

fn exec(conn: &Connection, sql: &str) {
    conn.exec_each(sql, |_| Ok(()))
        .map_err(|_| ())
        .unwrap_or_else(|()| panic!("{sql}"));
}

/// A new encrypted database at `path` through `vfs`, of `page_size`-byte pages, holding
/// `t(a, b)` with `rows` rows.
fn create(path: &Path, vfs: &KeyedVfsHandle, rows: u32) {
    let conn = open(path, vfs);
    let mut reserve = super::RESERVE_BYTES;
    let _ = conn.file_control_int(c"main", ffi::SQLITE_FCNTL_RESERVE_BYTES, &mut reserve);
    exec(&conn, &format!("PRAGMA page_size = {}", vfs.page_size()));
    exec(&conn, &format!("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT); INSERT INTO t(b) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {rows}) SELECT printf('row-%d-%0500d', i, i) FROM s;"));
    drop(conn);
}

const SUMMARY: &str = "SELECT count(*) || ',' || sum(a) FROM t";

#[test]
fn register_refuses_page_sizes_the_format_has_not_and_unknown_base_vfses() {
    let key = [1u8; 32];
    for bad in [0, 256, 1000, 4097, 131072] {
        assert_eq!(
            KeyedVfsHandle::register_with(&VfsKey::Raw(&key), NewFileLayout::Sqlite3mc, bad, None)
                .err(),
            Some(ffi::SQLITE_MISUSE),
            "{bad}"
        );
    }
    assert_eq!(
        KeyedVfsHandle::register_with(
            &VfsKey::Raw(&key),
            NewFileLayout::Sqlite3mc,
            4096,
            Some(c"no-such-vfs")
        )
        .err(),
        Some(ffi::SQLITE_ERROR)
    );
    let vfs =
        KeyedVfsHandle::register_with(&VfsKey::Raw(&key), NewFileLayout::SqlCipher, 8192, None)
            .expect("8 KiB pages");
    assert_eq!(vfs.page_size(), 8192);
    assert!(vfs.name().to_bytes().starts_with(b"cipherlite-"));
}

#[test]
fn a_passphrase_opens_its_database_and_another_is_not_a_database() {
    let dir = TempDir::new("pass");
    let path = dir.0.join("p.db");
    let key = |passphrase: &'static [u8]| {
        KeyedVfsHandle::register_with(
            &VfsKey::Passphrase {
                passphrase,
                iterations: 2,
            },
            NewFileLayout::Sqlite3mc,
            P,
            None,
        )
        .expect("vfs")
    };
    let right = key(b"right passphrase");
    create(&path, &right, 20);
    drop(right);
    assert_eq!(
        try_query(&path, &key(b"right passphrase"), SUMMARY),
        Ok(vec!["20,210".to_string()])
    );
    let before = std::fs::read(&path).expect("db");
    assert_eq!(
        try_query(&path, &key(b"wrong passphrase"), SUMMARY),
        Err(ffi::SQLITE_NOTADB)
    );
    assert_eq!(std::fs::read(&path).expect("db"), before, "nothing written");

    // The key of the file is derived from its own salt.
    let salt: [u8; 16] = before[..16].try_into().expect("salt");
    let derived = key(b"right passphrase")
        .key_for_database(path.to_str().expect("path"))
        .expect("a key");
    assert_eq!(
        *derived,
        *crate::codec::derive_passphrase_key(b"right passphrase", &salt, 2)
    );
    assert!(key(b"x")
        .key_for_database(dir.0.join("missing.db").to_str().expect("path"))
        .is_none());
    let raw = KeyedVfsHandle::register(&[3u8; 32], NewFileLayout::Sqlite3mc).expect("vfs");
    assert_eq!(
        raw.key_for_database(path.to_str().expect("path"))
            .map(|k| *k),
        Some([3u8; 32])
    );
}

#[test]
fn page_size_that_opens_names_the_page_size_the_key_opens() {
    let dir = TempDir::new("psize");
    let path = dir.0.join("small.db");
    let key = [5u8; 32];
    let small =
        KeyedVfsHandle::register_with(&VfsKey::Raw(&key), NewFileLayout::SqlCipher, 1024, None)
            .expect("vfs");
    create(&path, &small, 30);
    assert_eq!(
        try_query(&path, &small, SUMMARY),
        Ok(vec!["30,465".to_string()])
    );
    let default = KeyedVfsHandle::register(&key, NewFileLayout::SqlCipher).expect("vfs");
    assert_eq!(try_query(&path, &default, SUMMARY), Err(ffi::SQLITE_NOTADB));
    let p = path.to_str().expect("path");
    assert_eq!(default.page_size_that_opens(p), Some(1024));
    assert_eq!(small.page_size_that_opens(p), Some(1024));
    let other_key = KeyedVfsHandle::register(&[6u8; 32], NewFileLayout::SqlCipher).expect("vfs");
    assert_eq!(other_key.page_size_that_opens(p), None);
    assert_eq!(
        default.page_size_that_opens(dir.0.join("missing.db").to_str().expect("path")),
        None
    );
    let tiny = dir.0.join("tiny.db");
    std::fs::write(&tiny, [1u8; 100]).expect("tiny");
    assert_eq!(
        default.page_size_that_opens(tiny.to_str().expect("path")),
        None
    );
}

#[test]
fn a_file_created_by_another_connection_is_read_with_its_salt() {
    let dir = TempDir::new("adopt");
    let path = dir.0.join("a.db");
    let vfs = KeyedVfsHandle::register_with(
        &VfsKey::Passphrase {
            passphrase: b"shared",
            iterations: 2,
        },
        NewFileLayout::Sqlite3mc,
        P,
        None,
    )
    .expect("vfs");
    // Both open the empty file (each draws a provisional salt); the second creates it.
    let first = open(&path, &vfs);
    create(&path, &vfs, 5);
    assert_eq!(query(&first, SUMMARY), ["5,15"]);
    exec(&first, "INSERT INTO t(b) VALUES ('from the first')");
    drop(first);
    assert_eq!(
        try_query(&path, &vfs, SUMMARY),
        Ok(vec!["6,21".to_string()])
    );
}

/// A rollback-journal header: `nrec`, `nonce`, `original_size` (pages), `sector`, `page`,
/// padded with zeros to `sector` bytes.
fn journal_header(nrec: u32, nonce: u32, original_size: u32, sector: u32, page: u32) -> Vec<u8> {
    let mut h = vec![0u8; sector.max(28) as usize];
    h[..8].copy_from_slice(&JOURNAL_MAGIC);
    for (at, v) in [
        (8, nrec),
        (12, nonce),
        (16, original_size),
        (20, sector),
        (24, page),
    ] {
        h[at..at + 4].copy_from_slice(&v.to_be_bytes());
    }
    h
}

#[test]
fn a_first_transaction_cut_off_before_page_1_reached_the_file_opens_as_new() {
    let dir = TempDir::new("zero");
    let path = dir.0.join("z.db");
    let journal = dir.0.join("z.db-journal");
    let vfs = KeyedVfsHandle::register(&[8u8; 32], NewFileLayout::Sqlite3mc).expect("vfs");
    // Page 1 never written (zeros), the hot journal says the database was empty.
    std::fs::write(&path, vec![0u8; P]).expect("db");
    std::fs::write(&journal, journal_header(0, 1, 0, 512, P as u32)).expect("journal");
    assert_eq!(
        try_query(&path, &vfs, "SELECT count(*) FROM sqlite_schema"),
        Ok(vec!["0".to_string()])
    );
    assert_eq!(
        std::fs::metadata(&path).expect("db").len(),
        0,
        "rolled back"
    );
    create(&path, &vfs, 3);
    assert_eq!(try_query(&path, &vfs, SUMMARY), Ok(vec!["3,6".to_string()]));

    // The same with a journal of another page size proves nothing: not a database.
    let path = dir.0.join("y.db");
    std::fs::write(&path, vec![0u8; P]).expect("db");
    std::fs::write(
        dir.0.join("y.db-journal"),
        journal_header(0, 1, 0, 512, 1024),
    )
    .expect("journal");
    assert_eq!(
        try_query(&path, &vfs, "SELECT count(*) FROM sqlite_schema"),
        Err(ffi::SQLITE_NOTADB)
    );
    assert_eq!(std::fs::read(&path).expect("db"), vec![0u8; P], "untouched");
}

#[test]
fn a_hot_journal_of_another_geometry_is_refused_before_sqlite_plays_it_back() {
    let dir = TempDir::new("geom");
    let path = dir.0.join("g.db");
    let journal = dir.0.join("g.db-journal");
    let vfs = KeyedVfsHandle::register(&[10u8; 32], NewFileLayout::SqlCipher).expect("vfs");
    create(&path, &vfs, 40);
    let db = std::fs::read(&path).expect("db");
    let pages = (db.len() / P) as u32;
    // Another page size (SQLite would switch to it and truncate), an odd sector size.
    for header in [
        journal_header(1, 9, 1, 512, 1024),
        journal_header(1, 9, 1, 500, P as u32),
    ] {
        let mut bytes = header;
        bytes.extend_from_slice(&2u32.to_be_bytes());
        bytes.extend_from_slice(&db[P..2 * P]);
        bytes.extend_from_slice(&0u32.to_be_bytes());
        std::fs::write(&journal, &bytes).expect("journal");
        assert_eq!(try_query(&path, &vfs, SUMMARY), Err(ffi::SQLITE_CORRUPT));
        assert_eq!(std::fs::read(&path).expect("db"), db, "database untouched");
        assert_eq!(
            std::fs::read(&journal).expect("journal"),
            bytes,
            "journal kept"
        );
    }
    std::fs::remove_file(&journal).expect("remove");
    assert_eq!(
        try_query(&path, &vfs, SUMMARY),
        Ok(vec!["40,820".to_string()])
    );
    assert_eq!(pages as usize * P, db.len());
}

#[test]
fn journal_records_that_do_not_authenticate_are_never_played_back() {
    let dir = TempDir::new("forged");
    let path = dir.0.join("f.db");
    let journal = dir.0.join("f.db-journal");
    let vfs = KeyedVfsHandle::register(&[11u8; 32], NewFileLayout::Sqlite3mc).expect("vfs");
    create(&path, &vfs, 40);
    let db = std::fs::read(&path).expect("db");
    let pages = (db.len() / P) as u32;
    assert!(pages >= 4);
    let nonce = 0x1234_5678;
    // Garbage, and an authentic image of page 3 recorded as page 2: each with a checksum
    // valid over the bytes stored (what a forger can compute without the key).
    let garbage: Vec<u8> = (0..P).map(|i| (i * 7 + 3) as u8).collect();
    for image in [garbage, db[2 * P..3 * P].to_vec()] {
        let mut bytes = journal_header(1, nonce, pages, 512, P as u32);
        bytes.extend_from_slice(&2u32.to_be_bytes());
        bytes.extend_from_slice(&image);
        bytes.extend_from_slice(&journal_checksum(nonce, &image).to_be_bytes());
        std::fs::write(&journal, &bytes).expect("journal");
        assert_eq!(
            try_query(&path, &vfs, SUMMARY),
            Ok(vec!["40,820".to_string()])
        );
        assert_eq!(
            try_query(&path, &vfs, "PRAGMA integrity_check"),
            Ok(vec!["ok".to_string()])
        );
        assert_eq!(
            &std::fs::read(&path).expect("db")[P..2 * P],
            &db[P..2 * P],
            "page 2 kept"
        );
        assert!(
            !journal.exists(),
            "the journal was taken as torn and removed"
        );
    }
}

/// A copy of an encrypted WAL database while its WAL is live (not yet checkpointed):
/// (database bytes, WAL bytes), and what `SUMMARY` gives before and after the WAL.
fn live_wal(dir: &Path, vfs: &KeyedVfsHandle) -> (Vec<u8>, Vec<u8>) {
    let path = dir.join("w.db");
    create(&path, vfs, 20);
    let conn = open(&path, vfs);
    exec(
        &conn,
        "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;",
    );
    exec(&conn, "INSERT INTO t(b) SELECT 'wal-' || b FROM t;");
    exec(&conn, "INSERT INTO t(b) VALUES ('last');");
    let db = std::fs::read(&path).expect("db");
    let wal = std::fs::read(dir.join("w.db-wal")).expect("wal");
    drop(conn);
    (db, wal)
}

fn put_wal(dir: &Path, db: &[u8], wal: &[u8]) -> PathBuf {
    let path = dir.join("w.db");
    std::fs::write(&path, db).expect("db");
    std::fs::write(dir.join("w.db-wal"), wal).expect("wal");
    let _ = std::fs::remove_file(dir.join("w.db-shm"));
    path
}

fn reseal_wal_header(wal: &mut [u8]) {
    let big_endian = wal[3] & 1 == 1;
    let checksum = wal_checksum(big_endian, (0, 0), &wal[..24]);
    put_checksum(&mut wal[24..32], checksum);
}

#[test]
fn a_wal_recovers_and_forged_or_foreign_headers_and_frames_are_refused() {
    let dir = TempDir::new("walforge");
    let vfs = KeyedVfsHandle::register(&[12u8; 32], NewFileLayout::Sqlite3mc).expect("vfs");
    let (db, wal) = live_wal(&dir.0, &vfs);
    let frame = WAL_FRAME_HEADER + P;
    assert!(wal.len() >= WAL_HEADER + 3 * frame);

    // As it was: recovered from the WAL.
    let path = put_wal(&dir.0, &db, &wal);
    assert_eq!(
        try_query(&path, &vfs, SUMMARY),
        Ok(vec!["41,861".to_string()])
    );

    // A torn header (its checksum fails): SQLite ignores the WAL, the database as before.
    let mut torn = wal.clone();
    torn[30] ^= 0x40;
    let path = put_wal(&dir.0, &db, &torn);
    assert_eq!(
        try_query(&path, &vfs, SUMMARY),
        Ok(vec!["20,210".to_string()])
    );

    // A valid header for another page size: refused, not acted on.
    let mut foreign = wal.clone();
    foreign[8..12].copy_from_slice(&1024u32.to_be_bytes());
    reseal_wal_header(&mut foreign);
    let path = put_wal(&dir.0, &db, &foreign);
    assert_eq!(try_query(&path, &vfs, SUMMARY), Err(ffi::SQLITE_CORRUPT));
    assert_eq!(std::fs::read(&path).expect("db"), db, "database untouched");

    // Frame 2's page altered and its checksum recomputed over what is stored: whole by its
    // checksum but not authentic — an error, never skipped as if torn.
    let mut forged = wal.clone();
    let at = WAL_HEADER + frame;
    forged[at + WAL_FRAME_HEADER + 100] ^= 1;
    let big_endian = forged[3] & 1 == 1;
    let prev = (be32(&forged[at - P - 8..]), be32(&forged[at - P - 4..]));
    let (head, page) = forged[at..at + frame].split_at(WAL_FRAME_HEADER);
    let checksum = wal_frame_checksum(big_endian, prev, head, page);
    put_checksum(&mut forged[at + 16..at + 24], checksum);
    let path = put_wal(&dir.0, &db, &forged);
    assert_eq!(try_query(&path, &vfs, SUMMARY), Err(ffi::SQLITE_CORRUPT));

    // Page 1 of the database torn while the WAL holds a copy: the key check uses the copy.
    let mut torn_db = db.clone();
    torn_db[200..300].fill(0xee);
    let path = put_wal(&dir.0, &torn_db, &wal);
    assert_eq!(
        try_query(&path, &vfs, SUMMARY),
        Ok(vec!["41,861".to_string()])
    );
}
