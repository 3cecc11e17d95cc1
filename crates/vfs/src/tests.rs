//! The VFS per file kind, on the SQLCipher/SQLite3MC sample files of `testdata/sqlcipher4`
//! (see its README for what each holds): hot journals roll back to BASE whichever domain
//! their checksums are in, WALs recover, and the checksums cipherlite writes are over the
//! ciphertext. Through a real connection over the keyed VFS, in a temporary directory.

use super::checksum::{be32, wal_frame_checksum};
use super::format::{WalHeader, WAL_FRAME_HEADER, WAL_HEADER};
use super::{KeyedVfsHandle, NewFileLayout, PAGE_SIZE as P};
use cipherlite_codec::journal_checksum;
use cipherlite_codec::test_support::{sample_file, sample_key};
use cipherlite_sqlite::{Connection, OpenFlags};
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
        if cipherlite_codec::test_support::testdata_dir()
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
    // SQLite3MC's journals are checksummed over the plaintext: rolled back only when the
    // owner accepts those checksums (`accept_plaintext_journal_checksums`).
    for (name, plaintext_checksums) in [
        ("hot-sqlcipher-4.12.0.sqlite", false),
        ("hot-sqlite3mc-2.6.1-legacy4.sqlite", true),
        ("hot-sqlite3mc-2.6.1-legacy0.sqlite", true),
    ] {
        let dir = TempDir::new("hot");
        let path = copy_sample(name, &dir.0);
        let vfs = KeyedVfsHandle::register(&key, NewFileLayout::Sqlite3mc).expect("vfs");
        if plaintext_checksums {
            vfs.accept_plaintext_journal_checksums();
        }
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
fn a_journal_checksummed_over_the_plaintext_is_refused_by_default_and_changes_nothing() {
    // Whether a record checksummed over the plaintext is valid depends on the plaintext: a
    // journal planted around a page's image would learn, from what playback does, whether
    // a guess was right. Nor may it be skipped as torn: SQLite truncates the database to
    // the header's size before it reads a record. So such a hot journal (SQLite3MC's) is
    // refused when SQLite reads its header, and nothing changes.
    for name in [
        "hot-sqlite3mc-2.6.1-legacy0.sqlite",
        "hot-sqlite3mc-2.6.1-legacy4.sqlite",
    ] {
        let dir = TempDir::new("hot-default");
        let path = copy_sample(name, &dir.0);
        let journal = dir.0.join(format!("{name}-journal"));
        let (db_before, journal_before) = (
            std::fs::read(&path).expect("db"),
            std::fs::read(&journal).expect("journal"),
        );
        let vfs = KeyedVfsHandle::register(&sample_key(), NewFileLayout::Sqlite3mc).expect("vfs");
        assert_eq!(
            try_query(&path, &vfs, "SELECT count(*) FROM t"),
            Err(ffi::SQLITE_CORRUPT),
            "{name}"
        );
        assert!(
            std::fs::read(&path).expect("db") == db_before,
            "{name}: database unchanged"
        );
        assert!(
            std::fs::read(&journal).expect("journal") == journal_before,
            "{name}: journal kept"
        );
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
        cipherlite_sys::ffi::SQLITE_FCNTL_RESERVE_BYTES,
        &mut reserve,
    );
    let exec = |sql: &str| conn.exec_each(sql, |_| Ok(())).map_err(|_| ()).expect(sql);
    exec("CREATE TABLE t(x); INSERT INTO t VALUES (randomblob(3000)), (randomblob(3000)), (randomblob(3000));");
    // A transaction whose pages spill (tiny cache): the journal is synced and on disk.
    exec("PRAGMA cache_size = 1; BEGIN; UPDATE t SET x = randomblob(3000); INSERT INTO t SELECT x FROM t;");
    let journal = std::fs::read(dir.0.join("j.db-journal")).expect("journal");
    assert_eq!(be32(&journal[24..]) as usize, P, "page size in the header");
    let records = journal_records(&journal);
    for (i, r) in records.iter().enumerate() {
        assert_eq!(
            r.checksum,
            journal_checksum(r.nonce, &r.image),
            "record {i} (page {})",
            r.pgno
        );
    }
    assert!(records.len() >= 2, "{} records", records.len());
    drop(conn);
}

/// A record of a rollback journal as it is on disk.
struct JournalRecord {
    pgno: u32,
    image: Vec<u8>,
    checksum: u32,
    /// The nonce of the header of the record's segment.
    nonce: u32,
}

/// The records of a rollback journal of `P`-byte pages, segment by segment.
fn journal_records(journal: &[u8]) -> Vec<JournalRecord> {
    let mut nonce = be32(&journal[12..]);
    let sector = be32(&journal[20..]) as usize;
    let mut records = Vec::new();
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
        records.push(JournalRecord {
            pgno,
            image: journal[at + 4..at + 4 + P].to_vec(),
            checksum: be32(&journal[at + 4 + P..]),
            nonce,
        });
        at += 8 + P;
    }
    records
}

/// A copy of `path` and its journal as a crash now would leave them, in a directory of
/// their own, opens (playing the hot journal back) with `CONTENT` as `expected` and passes
/// `integrity_check`.
fn assert_recovers_to(path: &Path, vfs: &KeyedVfsHandle, expected: &[String]) {
    let crashed = TempDir::new("crash-copy");
    let copy = crashed.0.join("crashed.db");
    std::fs::copy(path, &copy).expect("db");
    let journal = format!("{}-journal", path.display());
    std::fs::copy(journal, crashed.0.join("crashed.db-journal")).expect("journal");
    assert_eq!(try_query(&copy, vfs, CONTENT), Ok(expected.to_vec()));
    assert_eq!(
        try_query(&copy, vfs, "PRAGMA integrity_check"),
        Ok(vec!["ok".to_string()])
    );
}

#[test]
fn a_journal_record_of_a_page_written_before_is_its_image_in_the_database_file() {
    let dir = TempDir::new("jcopy");
    let vfs = KeyedVfsHandle::register(&[0x5a; 32], NewFileLayout::SqlCipher).expect("vfs");
    let path = dir.0.join("j.db");
    // About 145 pages: more than the journal copy's first version knew (64).
    create(&path, &vfs, 1000);
    let conn = open(&path, &vfs);
    // One transaction writes every page of t (and page 1); the next changes them again.
    exec(&conn, "UPDATE t SET b = 'first-' || b;");
    let before = query(&conn, CONTENT);
    let db_before = std::fs::read(&path).expect("db");
    // A transaction whose pages spill (tiny cache): the journal is synced and on disk.
    exec(
        &conn,
        "PRAGMA cache_size = 1; BEGIN; PRAGMA user_version = 7; UPDATE t SET b = 'changed-' || b WHERE a % 2 = 0;",
    );
    let journal = std::fs::read(dir.0.join("j.db-journal")).expect("journal");
    let records = journal_records(&journal);
    assert!(records.len() > 100, "{} records", records.len());
    assert!(
        records.iter().any(|r| r.pgno == 1),
        "page 1 journaled (user_version)"
    );
    for r in &records {
        let held = &db_before[(r.pgno as usize - 1) * P..r.pgno as usize * P];
        assert!(
            r.image == held,
            "page {}: the image the database file held",
            r.pgno
        );
        assert_eq!(r.checksum, journal_checksum(r.nonce, &r.image));
    }

    // Left hot by a crash now (the file has spilled pages of the transaction): another
    // connection plays the copied records back.
    assert_recovers_to(&path, &vfs, &before);
    // The connection's own ROLLBACK, and a savepoint's.
    exec(&conn, "ROLLBACK");
    assert_eq!(query(&conn, CONTENT), before);
    exec(
        &conn,
        "BEGIN; SAVEPOINT s; UPDATE t SET b = 'again-' || b; ROLLBACK TO s; COMMIT;",
    );
    assert_eq!(query(&conn, CONTENT), before);

    // Pages only read (never written by this connection) are encrypted afresh.
    drop(conn);
    let conn = open(&path, &vfs);
    let db_now = std::fs::read(&path).expect("db");
    exec(
        &conn,
        "BEGIN; UPDATE t SET b = 'read-only-' || b WHERE a < 20;",
    );
    let journal = std::fs::read(dir.0.join("j.db-journal")).expect("journal");
    for r in journal_records(&journal) {
        let held = &db_now[(r.pgno as usize - 1) * P..r.pgno as usize * P];
        assert!(r.image != held, "page {}: encrypted afresh", r.pgno);
    }
    exec(&conn, "ROLLBACK");
    assert_eq!(query(&conn, CONTENT), before);
}

#[test]
fn a_page_forged_behind_sqlites_locks_is_not_journaled_and_recovery_heals_it() {
    let dir = TempDir::new("jforged");
    let vfs = KeyedVfsHandle::register(&[0x5b; 32], NewFileLayout::SqlCipher).expect("vfs");
    let path = dir.0.join("j.db");
    create(&path, &vfs, 200);
    let conn = open(&path, &vfs);
    exec(&conn, "UPDATE t SET b = 'first-' || b;"); // every page written by this handle
    let before = query(&conn, CONTENT); // and every page in SQLite's cache
                                        // An attacker edits a page's ciphertext in place, keeping its HMAC. SQLite holds the
                                        // page in its cache and does not read it again; the journal must not take the forged
                                        // image for its record.
    let mut db = std::fs::read(&path).expect("db");
    let victim = db.len() / P / 2 + 1;
    let at = (victim - 1) * P + 200;
    db[at] ^= 0x40;
    std::fs::write(&path, &db).expect("forge");
    let forged = db[(victim - 1) * P..victim * P].to_vec();
    // (synchronous=OFF: the journal's header is complete at once, so a copy of the files
    // taken now has a hot journal, without the transaction spilling pages — which would
    // read the forged page again.)
    exec(
        &conn,
        "PRAGMA synchronous = OFF; BEGIN; UPDATE t SET b = 'changed-' || b;",
    );
    let journal = std::fs::read(dir.0.join("j.db-journal")).expect("journal");
    let records = journal_records(&journal);
    let record = records
        .iter()
        .find(|r| r.pgno as usize == victim)
        .expect("the victim page journaled");
    assert!(record.image != forged, "SQLite's content encrypted afresh");

    // Left hot by a crash: played back, the authentic original replaces the forged page.
    assert_recovers_to(&path, &vfs, &before);
    // The connection's own ROLLBACK wrote nothing to the file (nothing spilled): the
    // forged page is still there, and refused when read.
    exec(&conn, "ROLLBACK");
    drop(conn);
    assert_eq!(
        try_query(&path, &vfs, CONTENT).map_err(|code| code & 0xff),
        Err(ffi::SQLITE_CORRUPT)
    );
}

/// The image check alone is not enough: a handle's own old image of a page, put back on
/// disk after another connection changed the page (and this handle read the change), is
/// the image it wrote last, but not what SQLite journals. The record must hold SQLite's
/// content, so that a rollback restores that.
#[test]
fn an_own_old_image_put_back_after_another_connection_wrote_is_not_journaled() {
    let dir = TempDir::new("jreplay");
    let vfs = KeyedVfsHandle::register(&[0x5c; 32], NewFileLayout::SqlCipher).expect("vfs");
    let path = dir.0.join("j.db");
    create(&path, &vfs, 200);
    let conn = open(&path, &vfs);
    exec(&conn, "UPDATE t SET b = 'first-' || b;"); // every page written by this handle
    let old = std::fs::read(&path).expect("db"); // the attacker keeps those images
    let other = open(&path, &vfs);
    exec(&other, "UPDATE t SET b = replace(b, 'first-', 'other-');"); // same lengths
    drop(other);
    let current = query(&conn, CONTENT); // read again: SQLite's cache holds the change
    let mut db = std::fs::read(&path).expect("db");
    assert_eq!(db.len(), old.len());
    // Every page but page 1 (so that SQLite keeps its cache) back as this handle wrote it.
    db[P..].copy_from_slice(&old[P..]);
    std::fs::write(&path, &db).expect("replay");
    exec(
        &conn,
        "PRAGMA synchronous = OFF; BEGIN; UPDATE t SET b = 'changed-' || b;",
    );
    let journal = std::fs::read(dir.0.join("j.db-journal")).expect("journal");
    let records = journal_records(&journal);
    assert!(records.len() > 20, "{} records", records.len());
    for r in records.iter().filter(|r| r.pgno > 1) {
        let replayed = &old[(r.pgno as usize - 1) * P..r.pgno as usize * P];
        assert!(
            r.image != replayed,
            "page {}: SQLite's content encrypted",
            r.pgno
        );
    }
    // Played back after a crash, the records restore what SQLite had: the other
    // connection's change.
    assert_recovers_to(&path, &vfs, &current);
    exec(&conn, "ROLLBACK");
    assert_eq!(query(&conn, CONTENT), current);
}

#[test]
fn the_journal_takes_only_the_image_the_database_handle_wrote() {
    let dir = TempDir::new("jknown");
    let mut db_file = RawFile::create(&dir.0.join("db.bin"));
    let db = db_file.os();
    let mut journal_file = RawFile::create(&dir.0.join("journal.bin"));
    let jos = journal_file.os();
    let codec = test_codec();
    let mut main = super::main_db::MainDb::new(std::sync::Arc::new(WalIndex::default()), P);
    let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
    let mut out = vec![0u8; P];
    let mut work = vec![0u8; P];
    let page_at = |pgno: u32| (pgno as i64 - 1) * P as i64;
    // Whether the journal would take page `pgno`'s image for SQLite's content `plain`.
    let mut written = |main: &super::main_db::MainDb, pgno: u32, plain: &[u8], out: &mut [u8]| {
        main.written_image(db, &codec, pgno, plain, out, &mut work)
    };
    for pgno in 2..=4u32 {
        let page = plain_page(pgno as u8);
        assert_eq!(
            main.write(db, &codec, &mut scratch, &page, page_at(pgno)),
            ffi::SQLITE_OK
        );
    }
    assert!(
        written(&main, 2, &plain_page(2), &mut out),
        "written by the handle"
    );
    assert!(out == bytes_at(db, page_at(2), P));
    assert!(
        !written(&main, 2, &plain_page(7), &mut out),
        "not what SQLite journals"
    );
    assert!(
        !written(&main, 5, &plain_page(5), &mut out),
        "never written"
    );

    // Another image of the same content, written behind the handle: not taken, even once
    // the handle has read (authenticated) it.
    let mut other = vec![0u8; P];
    assert_eq!(codec.encrypt(3, &plain_page(3), &mut other), ffi::SQLITE_OK);
    assert_eq!(db.write(&other, page_at(3)), ffi::SQLITE_OK);
    assert!(!written(&main, 3, &plain_page(3), &mut out));
    assert_reads(&mut main, db, &codec, 3, &plain_page(3));
    assert!(
        !written(&main, 3, &plain_page(3), &mut out),
        "read, not written"
    );
    // Written again by the handle: taken.
    assert_eq!(
        main.write(db, &codec, &mut scratch, &plain_page(3), page_at(3)),
        ffi::SQLITE_OK
    );
    assert!(written(&main, 3, &plain_page(3), &mut out));
    // A byte of the ciphertext edited, the HMAC kept: not taken (nor readable).
    let mut tampered = bytes_at(db, page_at(4), P);
    tampered[100] ^= 1;
    assert_eq!(db.write(&tampered, page_at(4)), ffi::SQLITE_OK);
    assert!(!written(&main, 4, &plain_page(4), &mut out));
    assert_eq!(read_main(&mut main, db, &codec, 4).0, ffi::SQLITE_CORRUPT);

    // Page 2 written again with the same content: its older image, that ciphertext with
    // the newer reserve, and the newer ciphertext with the older IV are not taken.
    let reserve = cipherlite_codec::RESERVE;
    let first = bytes_at(db, page_at(2), P);
    assert_eq!(
        main.write(db, &codec, &mut scratch, &plain_page(2), page_at(2)),
        ffi::SQLITE_OK
    );
    let second = bytes_at(db, page_at(2), P);
    let iv_end = P - reserve + 16;
    for mixed in [
        first.clone(),
        [&first[..P - reserve], &second[P - reserve..]].concat(),
        [
            &second[..P - reserve],
            &first[P - reserve..iv_end],
            &second[iv_end..],
        ]
        .concat(),
    ] {
        assert_eq!(db.write(&mixed, page_at(2)), ffi::SQLITE_OK);
        assert!(!written(&main, 2, &plain_page(2), &mut out));
    }
    assert_eq!(db.write(&second, page_at(2)), ffi::SQLITE_OK);
    assert!(written(&main, 2, &plain_page(2), &mut out));

    // CBC splice (found by review): another connection writes page 2 with content chosen
    // from this handle's ciphertext c (no key needed: XORs of public blocks), this handle
    // reads it, and the attacker puts c back with block k replaced by block j. That
    // decrypts, under c's IV, to the other connection's content, but its HMAC fails: it
    // must not become a record. (Reading the other image forgets page 2's.)
    let block = |image: &[u8], i: usize| -> [u8; 16] {
        image[16 * i..16 * i + 16].try_into().expect("a block")
    };
    let xor3 = |a: [u8; 16], b: [u8; 16], c: [u8; 16]| -> [u8; 16] {
        core::array::from_fn(|i| a[i] ^ b[i] ^ c[i])
    };
    let (k, j) = (5usize, 2usize);
    let c = bytes_at(db, page_at(2), P);
    let m0 = plain_page(2);
    let mut m = m0.clone();
    m[16 * k..16 * k + 16].copy_from_slice(&xor3(
        block(&m0, j),
        block(&c, j - 1),
        block(&c, k - 1),
    ));
    m[16 * (k + 1)..16 * (k + 2)].copy_from_slice(&xor3(
        block(&m0, k + 1),
        block(&c, k),
        block(&c, j),
    ));
    let mut theirs = vec![0u8; P];
    assert_eq!(codec.encrypt(2, &m, &mut theirs), ffi::SQLITE_OK);
    assert_eq!(db.write(&theirs, page_at(2)), ffi::SQLITE_OK);
    assert_reads(&mut main, db, &codec, 2, &m);
    let mut spliced = c.clone();
    spliced[16 * k..16 * k + 16].copy_from_slice(&block(&c, j));
    assert_eq!(db.write(&spliced, page_at(2)), ffi::SQLITE_OK);
    assert!(!written(&main, 2, &m, &mut out), "a spliced image");
    // (Without the forgetting, the splice holds the content: the attack is real.)
    let mut work2 = vec![0u8; P];
    assert!(codec.image_holds(2, &spliced, &m, &mut work2));

    // Page 2 written again; then a page read from the WAL: nothing is taken until the
    // handle's next read or write.
    assert_eq!(
        main.write(db, &codec, &mut scratch, &plain_page(2), page_at(2)),
        ffi::SQLITE_OK
    );
    assert!(written(&main, 2, &plain_page(2), &mut out));
    main.wal_index.wal_page_read();
    assert!(
        !written(&main, 2, &plain_page(2), &mut out),
        "after a WAL read"
    );
    assert_reads(&mut main, db, &codec, 3, &plain_page(3));
    assert!(
        !written(&main, 2, &plain_page(2), &mut out),
        "forgotten at the next read"
    );
    assert_eq!(
        main.write(db, &codec, &mut scratch, &plain_page(2), page_at(2)),
        ffi::SQLITE_OK
    );
    assert!(written(&main, 2, &plain_page(2), &mut out), "written again");

    // A record of page 2: the database file's image, as it is; without the database, the
    // content encrypted afresh (another IV). Both play back as page 2's content.
    let record = |j: &mut Journal,
                  scratch: &mut Vec<u8>,
                  database: Option<(OsFile, &super::main_db::MainDb)>,
                  at: i64| {
        let pgno = 2u32.to_be_bytes();
        assert_eq!(
            j.write(jos, &codec, scratch, &pgno, at, database),
            ffi::SQLITE_OK
        );
        let page = plain_page(2);
        assert_eq!(
            j.write(jos, &codec, scratch, &page, at + 4, database),
            ffi::SQLITE_OK
        );
        bytes_at(jos, at + 4, P)
    };
    let mut j = Journal::new(P, false);
    let header = journal_header(0, 5, 5, 512, P as u32);
    assert_eq!(
        j.write(jos, &codec, &mut scratch, &header, 0, None),
        ffi::SQLITE_OK
    );
    let copied = record(&mut j, &mut scratch, Some((db, &main)), 512);
    assert!(copied == bytes_at(db, page_at(2), P), "the file's image");
    let encrypted = record(&mut j, &mut scratch, None, 512 + 8 + P as i64);
    assert!(encrypted != copied, "encrypted afresh");
    for (at, image) in [(512i64, &copied), (512 + 8 + P as i64, &encrypted)] {
        let mut pgno = [0u8; 4];
        assert_eq!(j.read(jos, &codec, &mut pgno, at), ffi::SQLITE_OK);
        let mut page = vec![0u8; P];
        assert_eq!(j.read(jos, &codec, &mut page, at + 4), ffi::SQLITE_OK);
        assert!(page == plain_page(2));
        assert!(bytes_at(jos, at + 4, P) == *image);
    }
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
        cipherlite_sys::ffi::SQLITE_FCNTL_RESERVE_BYTES,
        &mut reserve,
    );
    let exec = |sql: &str| conn.exec_each(sql, |_| Ok(())).map_err(|_| ()).expect(sql);
    exec("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t(x); INSERT INTO t VALUES (randomblob(5000));");
    let wal = std::fs::read(dir.0.join("w.db-wal")).expect("wal");
    let frames = assert_whole_wal_chained(&wal, "one connection");
    assert_eq!(
        frames,
        (wal.len() - WAL_HEADER) / (WAL_FRAME_HEADER + P),
        "every frame"
    );
    assert!(frames >= 3);
    drop(conn);
}

// ---- keys, page sizes and the key check at open -------------------------------------------

use super::checksum::wal_checksum;
use super::format::{put_checksum, JOURNAL_MAGIC};
use super::VfsKey;
use cipherlite_sqlite::Error;
use cipherlite_sys::ffi;

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
fn planted_page_1_copies_cost_an_open_at_most_two_key_derivations() {
    // A passphrase's key is derived per salt (PBKDF2, 256,000 iterations by default). When
    // page 1 doesn't open, its copies in a hot journal are tried: copies under many salts
    // must not make one open derive as many keys.
    let dir = TempDir::new("salts");
    let path = dir.0.join("s.db");
    let passphrase = |iterations| {
        KeyedVfsHandle::register_with(
            &VfsKey::Passphrase {
                passphrase: b"a passphrase",
                iterations,
            },
            NewFileLayout::Sqlite3mc,
            P,
            None,
        )
        .expect("vfs")
    };
    create(&path, &passphrase(2), 20);
    let mut db = std::fs::read(&path).expect("db");
    db[100] ^= 1; // page 1 no longer authenticates
    std::fs::write(&path, &db).expect("damage");
    let page1 = db[..P].to_vec();
    let sector = 512u32;
    let copies = 20u32;
    let mut journal = journal_header(copies, 7, 2, sector, P as u32);
    for i in 0..copies {
        let mut image = page1.clone();
        image[..16].copy_from_slice(&[i as u8 + 1; 16]); // another salt each
        journal.extend_from_slice(&1u32.to_be_bytes());
        journal.extend_from_slice(&image);
        journal.extend_from_slice(&0u32.to_be_bytes());
    }
    std::fs::write(dir.0.join("s.db-journal"), &journal).expect("journal");
    let vfs = passphrase(2);
    assert_eq!(try_query(&path, &vfs, SUMMARY), Err(ffi::SQLITE_NOTADB));
    assert!(
        vfs.key_derivations() <= 2,
        "{} key derivations for one open",
        vfs.key_derivations()
    );
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
        *cipherlite_codec::derive_passphrase_key(b"right passphrase", &salt, 2)
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

// ---- each file kind's refusals, called directly on a file of the OS VFS -------------------

use super::file_codec::FileCodec;
use super::journal::Journal;
use super::os_file::OsFile;
use super::wal::Wal;
use super::wal_index::WalIndex;
use cipherlite_codec::{Page1Layout, PageCodec};
use std::ffi::{c_int, CString};

/// A file of the default (OS) VFS, opened read-write and closed on drop.
struct RawFile {
    storage: Vec<u64>,
    _name: CString,
}

impl RawFile {
    fn create(path: &Path) -> RawFile {
        let name = CString::new(path.to_str().expect("utf-8")).expect("no NUL");
        // SAFETY: the default VFS is registered for the process's life.
        let vfs = unsafe { &*ffi::sqlite3_vfs_find(std::ptr::null()) };
        let mut file = RawFile {
            storage: vec![0u64; (vfs.szOsFile as usize).div_ceil(8)],
            _name: name,
        };
        let mut out_flags = 0;
        // SAFETY: storage has szOsFile bytes; the name outlives the file (kept in self).
        let rc = unsafe {
            (vfs.xOpen.expect("xOpen"))(
                ffi::sqlite3_vfs_find(std::ptr::null()),
                file._name.as_ptr(),
                file.storage.as_mut_ptr().cast(),
                ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE | ffi::SQLITE_OPEN_MAIN_DB,
                &mut out_flags,
            )
        };
        assert_eq!(rc, ffi::SQLITE_OK);
        file
    }

    fn os(&mut self) -> OsFile {
        // SAFETY: open until drop.
        unsafe { OsFile::new(self.storage.as_mut_ptr().cast()) }
    }
}

impl Drop for RawFile {
    fn drop(&mut self) {
        self.os().close();
    }
}

fn test_codec() -> FileCodec {
    FileCodec::new(
        PageCodec::new(&[13u8; 32], [4u8; 16], P).expect("codec"),
        Page1Layout::Sqlite3mc,
    )
}

/// A page of plaintext as SQLite holds it (the reserve zero).
fn plain_page(seed: u8) -> Vec<u8> {
    let mut page: Vec<u8> = (0..P).map(|i| (i as u8).wrapping_mul(seed)).collect();
    page[P - cipherlite_codec::RESERVE..].fill(0);
    page
}

fn bytes_at(os: OsFile, off: i64, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    assert_eq!(os.read(&mut out, off), ffi::SQLITE_OK);
    out
}

#[test]
fn the_journal_refuses_writes_that_would_land_in_clear_and_reads_out_of_order() {
    let dir = TempDir::new("jdirect");
    let mut file = RawFile::create(&dir.0.join("journal.bin"));
    let os = file.os();
    let codec = test_codec();
    let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
    let mut j = Journal::new(P, false);
    let page = plain_page(3);

    // A page-sized write that is no record's page; a header for another page size.
    assert_eq!(
        j.write(os, &codec, &mut scratch, &page, 512, None),
        ffi::SQLITE_IOERR_WRITE
    );
    let foreign = journal_header(0, 5, 1, 512, 1024);
    assert_eq!(
        j.write(os, &codec, &mut scratch, &foreign, 0, None),
        ffi::SQLITE_IOERR_WRITE
    );
    assert_eq!(os.size(), Ok(0), "nothing written");

    // A header, then a record: page number, page (encrypted), checksum (over the
    // ciphertext, whatever SQLite passed).
    let header = journal_header(0, 5, 1, 512, P as u32);
    assert_eq!(
        j.write(os, &codec, &mut scratch, &header, 0, None),
        ffi::SQLITE_OK
    );
    assert_eq!(
        j.write(os, &codec, &mut scratch, &2u32.to_be_bytes(), 512, None),
        ffi::SQLITE_OK
    );
    assert_eq!(
        j.write(os, &codec, &mut scratch, &page, 516, None),
        ffi::SQLITE_OK
    );
    let at_checksum = 516 + P as i64;
    assert_eq!(
        j.write(os, &codec, &mut scratch, &[0xab; 4], at_checksum, None),
        ffi::SQLITE_OK
    );
    let image = bytes_at(os, 516, P);
    assert_ne!(image, page, "the page is stored encrypted");
    assert_eq!(
        bytes_at(os, at_checksum, 4),
        journal_checksum(5, &image).to_be_bytes()
    );

    // Reads: a page image must follow its page number, and authenticates as that page.
    let mut out = vec![0xffu8; P];
    assert_eq!(j.read(os, &codec, &mut out, 516), ffi::SQLITE_CORRUPT);
    assert!(out.iter().all(|&b| b == 0), "no byte of a refused read");
    let mut pgno = [0u8; 4];
    assert_eq!(j.read(os, &codec, &mut pgno, 512), ffi::SQLITE_OK);
    assert_eq!(j.read(os, &codec, &mut out, 520), ffi::SQLITE_CORRUPT);
    assert_eq!(j.read(os, &codec, &mut pgno, 512), ffi::SQLITE_OK);
    assert_eq!(j.read(os, &codec, &mut out, 516), ffi::SQLITE_OK);
    assert_eq!(out, page);
    let mut checksum = [0u8; 4];
    assert_eq!(
        j.read(os, &codec, &mut checksum, at_checksum),
        ffi::SQLITE_OK
    );
    assert_eq!(
        checksum,
        journal_checksum(5, &page).to_be_bytes(),
        "SQLite's domain"
    );

    // Read as another page (the page number on disk changed): zeros, and a checksum that
    // can't match, so SQLite's playback ends there.
    assert_eq!(os.write(&3u32.to_be_bytes(), 512), ffi::SQLITE_OK);
    assert_eq!(j.read(os, &codec, &mut pgno, 512), ffi::SQLITE_OK);
    assert_eq!(j.read(os, &codec, &mut out, 516), ffi::SQLITE_OK);
    assert!(out.iter().all(|&b| b == 0));
    assert_eq!(
        j.read(os, &codec, &mut checksum, at_checksum),
        ffi::SQLITE_OK
    );
    assert_ne!(checksum, journal_checksum(5, &out).to_be_bytes());

    // Other sizes: a super-journal's name passes; anything longer is refused.
    let mut name = [0u8; 28];
    assert_eq!(j.read(os, &codec, &mut name, 0), ffi::SQLITE_OK);
    assert_eq!(name[..8], JOURNAL_MAGIC);
    let mut long = vec![1u8; 2000];
    assert_eq!(j.read(os, &codec, &mut long, 0), ffi::SQLITE_CORRUPT);
    assert!(long.iter().all(|&b| b == 0));

    // A magic with fewer than 28 bytes after it is a super-journal pointer's, not a header.
    let end = os.size().expect("size");
    assert_eq!(os.write(&JOURNAL_MAGIC, end), ffi::SQLITE_OK);
    let mut magic = [0u8; 8];
    assert_eq!(j.read(os, &codec, &mut magic, end), ffi::SQLITE_OK);
    assert_eq!(magic, JOURNAL_MAGIC);
    // A header of another geometry found by its magic: refused before SQLite reads it.
    assert_eq!(os.write(&foreign, 0), ffi::SQLITE_OK);
    assert_eq!(j.read(os, &codec, &mut magic, 0), ffi::SQLITE_CORRUPT);
    assert_eq!(magic, [0; 8]);
}

fn wal_header_bytes(page_size: u32, salts: [u8; 8]) -> [u8; WAL_HEADER] {
    let mut h = [0u8; WAL_HEADER];
    h[0..4].copy_from_slice(&super::format::WAL_MAGIC_LE.to_be_bytes());
    h[4..8].copy_from_slice(&super::format::WAL_VERSION.to_be_bytes());
    h[8..12].copy_from_slice(&page_size.to_be_bytes());
    h[16..24].copy_from_slice(&salts);
    reseal_wal_header(&mut h);
    h
}

fn frame_header(pgno: u32, commit: u32, salts: [u8; 8]) -> [u8; WAL_FRAME_HEADER] {
    let mut h = [0u8; WAL_FRAME_HEADER];
    h[0..4].copy_from_slice(&pgno.to_be_bytes());
    h[4..8].copy_from_slice(&commit.to_be_bytes());
    h[8..16].copy_from_slice(&salts);
    h
}

#[test]
fn the_wal_refuses_writes_and_reads_outside_its_geometry() {
    let dir = TempDir::new("wdirect");
    let mut file = RawFile::create(&dir.0.join("wal.bin"));
    let os = file.os();
    let codec = test_codec();
    let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
    let mut w = Wal::new(std::sync::Arc::new(WalIndex::default()), P);
    let salts = [1, 2, 3, 4, 5, 6, 7, 8];
    let frame = (WAL_FRAME_HEADER + P) as i64;
    let page_of = |n: i64| WAL_HEADER as i64 + (n - 1) * frame + WAL_FRAME_HEADER as i64;

    // Nothing that isn't a header, a frame header or a frame's page is written.
    assert_eq!(
        w.write(os, &codec, &mut scratch, &[7u8; 100], 0),
        ffi::SQLITE_IOERR_WRITE
    );
    let foreign = wal_header_bytes(1024, salts);
    assert_eq!(
        w.write(os, &codec, &mut scratch, &foreign, 0),
        ffi::SQLITE_IOERR_WRITE
    );
    assert_eq!(os.size(), Ok(0), "nothing written");
    // No header on disk yet: a frame's page can't be authenticated.
    let mut out = vec![0xffu8; P];
    assert_eq!(
        w.read(os, &codec, &mut scratch, &mut out, page_of(1)),
        ffi::SQLITE_CORRUPT
    );
    assert!(out.iter().all(|&b| b == 0));

    // A header and two frames, as SQLite writes them.
    let header = wal_header_bytes(P as u32, salts);
    assert_eq!(
        w.write(os, &codec, &mut scratch, &header, 0),
        ffi::SQLITE_OK
    );
    let (two, three) = (plain_page(5), plain_page(7));
    for (n, pgno, page) in [(1i64, 2u32, &two), (2, 3, &three)] {
        let head = frame_header(pgno, n as u32 - 1, salts);
        let at = page_of(n) - WAL_FRAME_HEADER as i64;
        assert_eq!(w.write(os, &codec, &mut scratch, &head, at), ffi::SQLITE_OK);
        assert_eq!(
            w.write(os, &codec, &mut scratch, page, page_of(n)),
            ffi::SQLITE_OK
        );
    }
    let on_disk = bytes_at(os, page_of(1), P);
    assert_ne!(on_disk, two, "stored encrypted");

    // Read back as the pages the frames hold (no wal-index mapped: the frame's own).
    assert_eq!(
        w.read(os, &codec, &mut scratch, &mut out, page_of(2)),
        ffi::SQLITE_OK
    );
    assert_eq!(out, three);
    // The checksum seed passes through; other pieces are refused.
    let mut seed = [0u8; 8];
    assert_eq!(
        w.read(os, &codec, &mut scratch, &mut seed, 24),
        ffi::SQLITE_OK
    );
    assert_eq!(seed[..], header[24..32]);
    let mut odd = vec![0xffu8; 100];
    assert_eq!(
        w.read(os, &codec, &mut scratch, &mut odd, 7),
        ffi::SQLITE_CORRUPT
    );
    assert!(odd.iter().all(|&b| b == 0));

    // A frame whose salts are another WAL's, or whose page was swapped: refused.
    let mut other_salts = frame_header(3, 1, [9; 8]);
    other_salts[16..].copy_from_slice(&bytes_at(os, page_of(2) - 8, 8));
    assert_eq!(
        os.write(&other_salts, page_of(2) - WAL_FRAME_HEADER as i64),
        ffi::SQLITE_OK
    );
    assert_eq!(
        w.read(os, &codec, &mut scratch, &mut out, page_of(2)),
        ffi::SQLITE_CORRUPT
    );
    assert_eq!(os.write(&on_disk, page_of(2)), ffi::SQLITE_OK);
    let head = frame_header(3, 1, salts);
    assert_eq!(
        os.write(&head[..16], page_of(2) - WAL_FRAME_HEADER as i64),
        ffi::SQLITE_OK
    );
    assert_eq!(
        w.read(os, &codec, &mut scratch, &mut out, page_of(2)),
        ffi::SQLITE_CORRUPT
    );
    assert!(out.iter().all(|&b| b == 0));

    // A header for another page size on disk is refused when SQLite reads it.
    assert_eq!(os.write(&foreign, 0), ffi::SQLITE_OK);
    let mut read_header = [0u8; WAL_HEADER];
    assert_eq!(
        w.read(os, &codec, &mut scratch, &mut read_header, 0),
        ffi::SQLITE_CORRUPT
    );
    assert_eq!(read_header, [0; WAL_HEADER]);
}

// ---- the VFS's other methods ---------------------------------------------------------------

#[test]
fn the_vfs_forwards_its_other_methods_to_the_os_vfs() {
    let keyed = KeyedVfsHandle::register(&[14u8; 32], NewFileLayout::Sqlite3mc).expect("vfs");
    // SAFETY: both VFSes stay registered for the test; every call gets valid buffers.
    unsafe {
        let vfs = ffi::sqlite3_vfs_find(keyed.name().as_ptr());
        let os = ffi::sqlite3_vfs_find(std::ptr::null());
        assert!(!vfs.is_null() && !os.is_null());
        let (v, o) = (&*vfs, &*os);

        let mut random = [0i8; 64];
        assert_eq!(
            v.xRandomness.expect("xRandomness")(vfs, 64, random.as_mut_ptr()),
            64
        );
        assert!(random.iter().any(|&b| b != 0));
        assert!(v.xSleep.expect("xSleep")(vfs, 1000) >= 1000);

        let (mut ours, mut theirs) = (0f64, 0f64);
        assert_eq!(v.xCurrentTime.expect("xCurrentTime")(vfs, &mut ours), 0);
        assert_eq!(o.xCurrentTime.expect("xCurrentTime")(os, &mut theirs), 0);
        assert!(
            (theirs - ours).abs() < 1.0 / 24.0,
            "{ours} vs {theirs} (Julian days)"
        );
        let (mut ours, mut theirs) = (0i64, 0i64);
        assert_eq!(
            v.xCurrentTimeInt64.expect("xCurrentTimeInt64")(vfs, &mut ours),
            0
        );
        assert_eq!(
            o.xCurrentTimeInt64.expect("xCurrentTimeInt64")(os, &mut theirs),
            0
        );
        assert!((theirs - ours).abs() < 60_000, "{ours} vs {theirs} (ms)");
        let mut message = [0i8; 256];
        let ours = v.xGetLastError.expect("xGetLastError")(vfs, 256, message.as_mut_ptr());
        let theirs = o.xGetLastError.expect("xGetLastError")(os, 256, message.as_mut_ptr());
        assert_eq!(ours, theirs);

        // Loadable extensions go through the OS VFS's dynamic loader.
        let missing = c"/nonexistent/cipherlite-no-such-library.so";
        assert!(v.xDlOpen.expect("xDlOpen")(vfs, missing.as_ptr()).is_null());
        let mut error = [0i8; 512];
        v.xDlError.expect("xDlError")(vfs, 512, error.as_mut_ptr());
        let error = std::ffi::CStr::from_ptr(error.as_ptr()).to_string_lossy();
        assert!(error.contains("cipherlite-no-such-library"), "{error}");
        let libc = v.xDlOpen.expect("xDlOpen")(vfs, c"libc.so.6".as_ptr());
        assert!(!libc.is_null());
        let getpid = v.xDlSym.expect("xDlSym")(vfs, libc, c"getpid".as_ptr());
        assert!(getpid.is_some());
        assert!(v.xDlSym.expect("xDlSym")(vfs, libc, c"no_such_symbol_here".as_ptr()).is_none());
        v.xDlClose.expect("xDlClose")(vfs, libc);
    }
}

#[test]
fn temporary_files_are_refused_and_super_journals_pass_through() {
    let dir = TempDir::new("kinds");
    let keyed = KeyedVfsHandle::register(&[15u8; 32], NewFileLayout::Sqlite3mc).expect("vfs");
    // SAFETY: the VFS stays registered; the file buffer has szOsFile bytes; the name
    // outlives the file.
    unsafe {
        let vfs = ffi::sqlite3_vfs_find(keyed.name().as_ptr());
        let size = (*vfs).szOsFile as usize;
        let open = (*vfs).xOpen.expect("xOpen");
        let mut storage = vec![0u64; size.div_ceil(8)];
        let file = storage.as_mut_ptr().cast::<ffi::sqlite3_file>();
        let mut out_flags: c_int = 0;
        let rw = ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE;
        for temporary in [
            ffi::SQLITE_OPEN_TEMP_JOURNAL,
            ffi::SQLITE_OPEN_TEMP_DB,
            ffi::SQLITE_OPEN_SUBJOURNAL,
            ffi::SQLITE_OPEN_TRANSIENT_DB,
        ] {
            let flags = rw | temporary | ffi::SQLITE_OPEN_DELETEONCLOSE;
            assert_eq!(
                open(vfs, std::ptr::null(), file, flags, &mut out_flags),
                ffi::SQLITE_CANTOPEN
            );
            assert!((*file).pMethods.is_null(), "nothing open");
        }
        let path = dir.0.join("super-journal");
        let name = CString::new(path.to_str().expect("utf-8")).expect("no NUL");
        let flags = rw | ffi::SQLITE_OPEN_SUPER_JOURNAL | ffi::SQLITE_OPEN_EXCLUSIVE;
        assert_eq!(
            open(vfs, name.as_ptr(), file, flags, &mut out_flags),
            ffi::SQLITE_OK
        );
        let methods = &*(*file).pMethods;
        let names = b"/a/db-journal\0/b/db-journal\0";
        let rc =
            methods.xWrite.expect("xWrite")(file, names.as_ptr().cast(), names.len() as c_int, 0);
        assert_eq!(rc, ffi::SQLITE_OK);
        assert_eq!(methods.xClose.expect("xClose")(file), ffi::SQLITE_OK);
        assert_eq!(
            std::fs::read(&path).expect("super-journal"),
            names,
            "file names in clear"
        );
    }
}

#[test]
fn memory_mapping_never_hands_out_ciphertext() {
    let dir = TempDir::new("mmap");
    let path = dir.0.join("m.db");
    let vfs = KeyedVfsHandle::register(&[16u8; 32], NewFileLayout::Sqlite3mc).expect("vfs");
    create(&path, &vfs, 50);
    let conn = open(&path, &vfs);
    exec(&conn, "PRAGMA mmap_size = 268435456");
    assert_eq!(query(&conn, SUMMARY), ["50,1275"]);
    assert_eq!(
        query(&conn, "SELECT b FROM t WHERE a = 50"),
        [format!("row-50-{:0500}", 50)]
    );
    exec(&conn, "UPDATE t SET b = 'mapped' WHERE a = 1");
    assert_eq!(query(&conn, "SELECT b FROM t WHERE a = 1"), ["mapped"]);
    assert_eq!(query(&conn, "PRAGMA integrity_check"), ["ok"]);
}

/// The key of the read-only `-shm` test's database (the writer runs in another process).
const READ_ONLY_SHM_KEY: [u8; 32] = [21u8; 32];

#[test]
fn a_reader_on_a_read_only_wal_index_reads_the_wal() {
    // Found in review: SQLite maps a read-only -shm that a live writer (in another process)
    // keeps current: xShmMap returns SQLITE_READONLY with the mapping. The VFS recorded no
    // mapping, took SQLite's wal-index for its own heap copy and refused every WAL page.
    let dir = TempDir::new("ro-shm");
    let path = dir.0.join("r.db");
    let vfs = KeyedVfsHandle::register(&READ_ONLY_SHM_KEY, NewFileLayout::Sqlite3mc).expect("vfs");
    create(&path, &vfs, 20);
    let ready = dir.0.join("ready");
    let done = dir.0.join("done");
    let mut writer = std::process::Command::new(std::env::current_exe().expect("test binary"))
        .args([
            "--exact",
            "tests::wal_writer_for_the_read_only_shm_test",
            "--ignored",
            "--test-threads=1",
        ])
        .env("CIPHERLITE_TEST_WAL_WRITER", &path)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("writer process");
    let started = std::time::Instant::now();
    while !ready.exists() {
        assert!(
            started.elapsed().as_secs() < 60,
            "the writer never got ready"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let uri = format!("file:{}?readonly_shm=1", path.display());
    let flags = OpenFlags {
        readonly: true,
        uri: true,
        ..OpenFlags::default()
    };
    // The writer is told to stop whatever the reader saw (a failure here must not leave it
    // waiting).
    let seen = std::panic::catch_unwind(|| {
        let reader = Connection::open(&uri, flags, Some(vfs.name())).expect("open");
        query(&reader, "SELECT count(*) FROM t WHERE b = 'in the wal'")
    });
    std::fs::write(&done, b"").expect("done");
    assert!(writer.wait().expect("writer").success());
    assert_eq!(seen.expect("the reader read the WAL"), ["10"]);
}

/// The other process of [`a_reader_on_a_read_only_wal_index_reads_the_wal`]: keeps a WAL
/// database open with committed frames until told to stop. Does nothing when run alone.
#[test]
#[ignore = "run by a_reader_on_a_read_only_wal_index_reads_the_wal in a process of its own"]
fn wal_writer_for_the_read_only_shm_test() {
    let Some(path) = std::env::var_os("CIPHERLITE_TEST_WAL_WRITER") else {
        return;
    };
    let path = PathBuf::from(path);
    let vfs = KeyedVfsHandle::register(&READ_ONLY_SHM_KEY, NewFileLayout::Sqlite3mc).expect("vfs");
    let conn = open(&path, &vfs);
    exec(
        &conn,
        "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0",
    );
    exec(&conn, "UPDATE t SET b = 'in the wal' WHERE a <= 10");
    let dir = path.parent().expect("dir");
    std::fs::write(dir.join("ready"), b"").expect("ready");
    let started = std::time::Instant::now();
    while !dir.join("done").exists() && started.elapsed().as_secs() < 60 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    drop(conn);
}

#[test]
fn a_heap_memory_wal_after_leaving_wal_mode_on_the_same_handle_works() {
    // Found in review: after journal_mode=DELETE (the -shm unmapped), locking_mode=EXCLUSIVE
    // and journal_mode=WAL open a WAL whose wal-index SQLite keeps in heap memory; the VFS
    // still took every frame for a -shm region no longer mapped.
    let dir = TempDir::new("heap-again");
    let path = dir.0.join("h.db");
    let vfs = KeyedVfsHandle::register(&[22u8; 32], NewFileLayout::Sqlite3mc).expect("vfs");
    create(&path, &vfs, 20);
    let conn = open(&path, &vfs);
    exec(
        &conn,
        "PRAGMA journal_mode = WAL; UPDATE t SET b = 'shared' WHERE a = 1",
    );
    exec(&conn, "PRAGMA journal_mode = DELETE");
    exec(
        &conn,
        "PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL",
    );
    exec(
        &conn,
        "PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = 2",
    );
    exec(&conn, "UPDATE t SET b = 'heap' WHERE a > 10");
    assert_eq!(
        query(&conn, "SELECT count(*) FROM t WHERE b = 'heap'"),
        ["10"]
    );
    assert_eq!(query(&conn, "SELECT b FROM t WHERE a = 1"), ["shared"]);
    assert_eq!(query(&conn, "PRAGMA integrity_check"), ["ok"]);
}

/// A WAL on a file of the OS VFS with its header written: (file, handle, salts).
fn wal_with_header(dir: &Path, index: std::sync::Arc<WalIndex>) -> (RawFile, Wal, [u8; 8]) {
    let mut file = RawFile::create(&dir.join("wal.bin"));
    let salts = [8, 7, 6, 5, 4, 3, 2, 1];
    let mut w = Wal::new(index, P);
    let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
    let header = wal_header_bytes(P as u32, salts);
    assert_eq!(
        w.write(file.os(), &test_codec(), &mut scratch, &header, 0),
        ffi::SQLITE_OK
    );
    (file, w, salts)
}

const FRAME: i64 = (WAL_FRAME_HEADER + P) as i64;

fn frame_at(n: i64) -> i64 {
    WAL_HEADER as i64 + (n - 1) * FRAME
}

#[test]
fn wal_frames_written_in_pieces_are_encrypted_whole_from_what_sqlite_wrote() {
    let dir = TempDir::new("pieces");
    let (mut file, mut w, salts) = wal_with_header(&dir.0, Default::default());
    let os = file.os();
    let codec = test_codec();
    let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
    let mut write = |w: &mut Wal, data: &[u8], off: i64| {
        assert_eq!(w.write(os, &codec, &mut scratch, data, off), ffi::SQLITE_OK);
    };
    let (two, three, other) = (plain_page(3), plain_page(5), plain_page(11));
    // Frame 1 as usual; frame 2 (another page) in four pieces: two of its header, two of
    // its page. Nothing is on disk for frame 2 until it is whole.
    write(&mut w, &frame_header(2, 0, salts), frame_at(1));
    write(&mut w, &two, frame_at(1) + WAL_FRAME_HEADER as i64);
    let head = frame_header(3, 2, salts);
    write(&mut w, &head[..10], frame_at(2));
    write(&mut w, &head[10..], frame_at(2) + 10);
    let page_at = frame_at(2) + WAL_FRAME_HEADER as i64;
    write(&mut w, &three[..1000], page_at);
    assert_eq!(
        os.size(),
        Ok(frame_at(2)),
        "an incomplete frame isn't written"
    );
    write(&mut w, &three[1000..], page_at + 1000);
    assert_eq!(os.size(), Ok(frame_at(3)));

    // Frame 3, a padding copy of frame 2 as SQLite writes it on a device without
    // powersafe overwrite: once its first bytes match frame 2's header, all of it is on
    // disk (before SQLite syncs the first piece).
    write(&mut w, &head[..16], frame_at(3));
    assert_eq!(
        os.size(),
        Ok(frame_at(4)),
        "written whole from frame 2's ciphertext"
    );
    write(&mut w, &head[16..], frame_at(3) + 16);
    write(&mut w, &three, frame_at(3) + WAL_FRAME_HEADER as i64);
    // Frame 4 starts like frame 3 but its page differs: written again from SQLite's bytes.
    write(&mut w, &head[..12], frame_at(4));
    write(&mut w, &head[12..], frame_at(4) + 12);
    write(
        &mut w,
        &other[..P / 2],
        frame_at(4) + WAL_FRAME_HEADER as i64,
    );
    write(
        &mut w,
        &other[P / 2..],
        frame_at(4) + (WAL_FRAME_HEADER + P / 2) as i64,
    );

    // Each frame reads back as what SQLite wrote, its checksums chained over the ciphertext.
    let mut out = vec![0u8; P];
    for (n, expected) in [(1, &two), (2, &three), (3, &three), (4, &other)] {
        assert_eq!(
            w.read(
                os,
                &codec,
                &mut scratch,
                &mut out,
                frame_at(n) + WAL_FRAME_HEADER as i64
            ),
            ffi::SQLITE_OK,
            "frame {n}"
        );
        assert_eq!(&out, expected, "frame {n}");
    }
    let wal = std::fs::read(dir.0.join("wal.bin")).expect("wal");
    let header = WalHeader::parse(&wal[..WAL_HEADER], P).expect("header");
    let mut chain = header.checksum;
    for frame in wal[WAL_HEADER..].chunks_exact(FRAME as usize) {
        let (head, page) = frame.split_at(WAL_FRAME_HEADER);
        chain = wal_frame_checksum(header.big_endian, chain, head, page);
        assert_eq!((be32(&head[16..]), be32(&head[20..])), chain);
    }
}

#[test]
fn a_wal_frame_is_authenticated_as_the_page_the_wal_index_maps_it_to() {
    let dir = TempDir::new("index");
    let index = std::sync::Arc::new(WalIndex::default());
    let (mut file, mut w, salts) = wal_with_header(&dir.0, index.clone());
    let os = file.os();
    let codec = test_codec();
    let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
    let two = plain_page(9);
    let page_at = frame_at(1) + WAL_FRAME_HEADER as i64;
    assert_eq!(
        w.write(
            os,
            &codec,
            &mut scratch,
            &frame_header(2, 1, salts),
            frame_at(1)
        ),
        ffi::SQLITE_OK
    );
    assert_eq!(
        w.write(os, &codec, &mut scratch, &two, page_at),
        ffi::SQLITE_OK
    );

    // The wal-index region 0: a 136-byte header, then the page number of each frame.
    let mut region = vec![0u32; super::wal_index::REGION_SIZE / 4];
    region[136 / 4] = 2;
    index.mapped(0, region.as_mut_ptr().cast());
    let mut out = vec![0u8; P];
    assert_eq!(
        w.read(os, &codec, &mut scratch, &mut out, page_at),
        ffi::SQLITE_OK
    );
    assert_eq!(out, two);
    // An edited -shm that maps the frame to another page: refused, not that page.
    region[136 / 4] = 5;
    assert_eq!(
        w.read(os, &codec, &mut scratch, &mut out, page_at),
        ffi::SQLITE_CORRUPT
    );
    assert!(out.iter().all(|&b| b == 0));
    // No wal-index mapped any more (SQLite's own in heap memory from now on): the frame
    // is authenticated as the page this handle appended there.
    index.unmapped();
    assert_eq!(
        w.read(os, &codec, &mut scratch, &mut out, page_at),
        ffi::SQLITE_OK
    );
    assert_eq!(out, two);
}

/// Appends frames 1, 2, … through `w` as SQLite does (header, then page): `(pgno, commit
/// size, page)` each.
fn append_frames(
    w: &mut Wal,
    os: OsFile,
    codec: &FileCodec,
    salts: [u8; 8],
    frames: &[(u32, u32, &[u8])],
) {
    append_frames_from(w, os, codec, salts, 1, frames);
}

/// [`append_frames`] from frame `first` on.
fn append_frames_from(
    w: &mut Wal,
    os: OsFile,
    codec: &FileCodec,
    salts: [u8; 8],
    first: i64,
    frames: &[(u32, u32, &[u8])],
) {
    let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
    for (n, &(pgno, commit, page)) in (first..).zip(frames) {
        let head = frame_header(pgno, commit, salts);
        assert_eq!(
            w.write(os, codec, &mut scratch, &head, frame_at(n)),
            ffi::SQLITE_OK
        );
        let page_at = frame_at(n) + WAL_FRAME_HEADER as i64;
        assert_eq!(
            w.write(os, codec, &mut scratch, page, page_at),
            ffi::SQLITE_OK
        );
    }
}

#[test]
fn a_wal_image_this_handle_wrote_skips_the_hmac_check_only_while_unchanged() {
    let dir = TempDir::new("written");
    let index = std::sync::Arc::new(WalIndex::default());
    let (mut file, mut w, salts) = wal_with_header(&dir.0, index.clone());
    // The wal-index maps frames 1 and 2 to pages 2 and 3.
    let mut region = vec![0u32; super::wal_index::REGION_SIZE / 4];
    region[136 / 4] = 2;
    region[136 / 4 + 1] = 3;
    index.mapped(0, region.as_mut_ptr().cast());
    let os = file.os();
    let codec = test_codec();
    let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
    let (two, three) = (plain_page(9), plain_page(13));
    append_frames(&mut w, os, &codec, salts, &[(2, 0, &two), (3, 3, &three)]);
    let page_at = |n: i64| frame_at(n) + WAL_FRAME_HEADER as i64;
    let image2 = bytes_at(os, page_at(1), P);
    let image3 = bytes_at(os, page_at(2), P);
    let mut out = vec![0u8; P];
    let mut read =
        |w: &mut Wal, n: i64, out: &mut [u8]| w.read(os, &codec, &mut scratch, out, page_at(n));

    // Unchanged: decrypted without the HMAC check.
    assert_eq!(read(&mut w, 1, &mut out), ffi::SQLITE_OK);
    assert_eq!(out, two);
    assert_eq!(w.written_images_matched(), 1);

    // One ciphertext byte edited (the HMAC kept): not the image written, and refused.
    let mut edited = image2.clone();
    edited[100] ^= 0x20;
    assert_eq!(os.write(&edited, page_at(1)), ffi::SQLITE_OK);
    assert_eq!(read(&mut w, 1, &mut out), ffi::SQLITE_CORRUPT);
    assert!(out.iter().all(|&b| b == 0));
    // Page 3's authentic image in page 2's frame: not held as page 2, and refused.
    assert_eq!(os.write(&image3, page_at(1)), ffi::SQLITE_OK);
    assert_eq!(read(&mut w, 1, &mut out), ffi::SQLITE_CORRUPT);
    assert_eq!(w.written_images_matched(), 1);
    // Put back: held again.
    assert_eq!(os.write(&image2, page_at(1)), ffi::SQLITE_OK);
    assert_eq!(read(&mut w, 1, &mut out), ffi::SQLITE_OK);
    assert_eq!(out, two);
    assert_eq!(w.written_images_matched(), 2);

    // The WAL starts over: the images are forgotten, and frame 2 still reads (HMAC checked).
    let header = wal_header_bytes(P as u32, salts);
    let mut other_scratch = vec![0u8; P + WAL_FRAME_HEADER];
    assert_eq!(
        w.write(os, &codec, &mut other_scratch, &header, 0),
        ffi::SQLITE_OK
    );
    assert_eq!(read(&mut w, 2, &mut out), ffi::SQLITE_OK);
    assert_eq!(out, three);
    assert_eq!(w.written_images_matched(), 2);
}

#[test]
fn a_wal_image_written_under_a_provisional_salt_is_not_kept() {
    // A new file's codec: another connection's page 1 may still replace its salt, and with
    // it the key this image was encrypted under.
    let dir = TempDir::new("written-unsettled");
    let (mut file, mut w, salts) = wal_with_header(&dir.0, Default::default());
    let os = file.os();
    let raw = [13u8; 32];
    let key = std::sync::Arc::new(super::key_source::KeySource::new(&super::VfsKey::Raw(&raw)));
    let codec = FileCodec::new_unsettled(
        PageCodec::new(&raw, [4u8; 16], P).expect("codec"),
        Page1Layout::Sqlite3mc,
        key,
    );
    assert!(codec.is_unsettled());
    let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
    let two = plain_page(9);
    append_frames(&mut w, os, &codec, salts, &[(2, 2, &two)]);
    let page_at = frame_at(1) + WAL_FRAME_HEADER as i64;
    let mut out = vec![0u8; P];
    assert_eq!(
        w.read(os, &codec, &mut scratch, &mut out, page_at),
        ffi::SQLITE_OK
    );
    assert_eq!(out, two);
    assert_eq!(w.written_images_matched(), 0, "read with its HMAC checked");
}

#[test]
fn a_page_rewritten_in_place_is_encrypted_as_the_page_appended_not_an_edited_header() {
    // Found in review: the page was encrypted as the page number in the frame header on
    // disk, so an attacker who edited that header between SQLite's spill and its rewrite
    // got SQLite's content of page 2 MACed as page 7.
    let dir = TempDir::new("rewrite-pgno");
    let (mut file, mut w, salts) = wal_with_header(&dir.0, Default::default());
    let os = file.os();
    let codec = test_codec();
    let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
    let page_at = frame_at(1) + WAL_FRAME_HEADER as i64;
    // Frame 1: page 2, uncommitted (a cache spill).
    append_frames(&mut w, os, &codec, salts, &[(2, 0, &plain_page(9))]);
    // The attacker: frame 1's header now names page 7.
    assert_eq!(os.write(&7u32.to_be_bytes(), frame_at(1)), ffi::SQLITE_OK);
    // SQLite rewrites page 2 in place (its index still maps frame 1 to page 2).
    let rewritten = plain_page(21);
    assert_eq!(
        w.write(os, &codec, &mut scratch, &rewritten, page_at),
        ffi::SQLITE_OK
    );
    let mut image = bytes_at(os, page_at, P);
    assert!(!codec.decrypt(7, &mut image.clone()), "not MACed as page 7");
    assert!(codec.decrypt(2, &mut image), "MACed as page 2");
    assert_eq!(image, rewritten);
    // A page written in place to a frame this handle never appended: refused.
    let elsewhere = frame_at(5) + WAL_FRAME_HEADER as i64;
    assert_eq!(
        w.write(os, &codec, &mut scratch, &rewritten, elsewhere),
        ffi::SQLITE_IOERR_WRITE
    );
}

#[test]
fn a_page_rewritten_in_place_needs_a_frame_appended_in_this_write_lock_span_and_mapped_to_it() {
    // Found in review: with the wal-index's mxFrame lowered and page 2's hash chain pointed
    // at the committed frame of page 3, SQLite rewrote that frame in place with page 2's
    // content and the VFS MACed it as page 3. A rewrite is taken only where provable.
    let dir = TempDir::new("rewrite-span");
    let index = std::sync::Arc::new(WalIndex::default());
    let (mut file, mut w, salts) = wal_with_header(&dir.0, index.clone());
    let os = file.os();
    let codec = test_codec();
    let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
    // A mapped wal-index region 0 (aPgno after the 136-byte header).
    let mut region = vec![0u32; super::wal_index::REGION_SIZE / 4];
    index.mapped(0, region.as_mut_ptr().cast());
    let set_page = |region: &mut Vec<u32>, frame: usize, pgno: u32| region[34 + frame - 1] = pgno;
    // A committed transaction: frame 1 page 2, frame 2 page 3.
    index.write_lock_taken();
    append_frames(
        &mut w,
        os,
        &codec,
        salts,
        &[(2, 0, &plain_page(2)), (3, 3, &plain_page(3))],
    );
    set_page(&mut region, 1, 2);
    set_page(&mut region, 2, 3);
    index.write_lock_releasing();
    // The next transaction; SQLite, fooled, rewrites frame 2 (page 3's) as if it were its own.
    index.write_lock_taken();
    let committed = bytes_at(os, frame_at(2), FRAME as usize);
    let page_of_frame = |n| frame_at(n) + WAL_FRAME_HEADER as i64;
    assert_eq!(
        w.write(os, &codec, &mut scratch, &plain_page(22), page_of_frame(2)),
        ffi::SQLITE_IOERR_WRITE
    );
    assert!(
        bytes_at(os, frame_at(2), FRAME as usize) == committed,
        "nothing written"
    );
    // A frame of this span: rewritten as the page appended there.
    append_frames_from(&mut w, os, &codec, salts, 3, &[(2, 0, &plain_page(2))]);
    set_page(&mut region, 3, 2);
    assert_eq!(
        w.write(os, &codec, &mut scratch, &plain_page(23), page_of_frame(3)),
        ffi::SQLITE_OK
    );
    let mut image = bytes_at(os, page_of_frame(3), P);
    assert!(codec.decrypt(2, &mut image));
    assert_eq!(image, plain_page(23));
    // ... unless the wal-index now maps it to another page.
    set_page(&mut region, 3, 4);
    let before = bytes_at(os, frame_at(3), FRAME as usize);
    assert_eq!(
        w.write(os, &codec, &mut scratch, &plain_page(24), page_of_frame(3)),
        ffi::SQLITE_IOERR_WRITE
    );
    assert!(
        bytes_at(os, frame_at(3), FRAME as usize) == before,
        "nothing written"
    );
    index.unmapped();
}

#[test]
fn without_a_shared_wal_index_a_frame_is_authenticated_as_the_page_appended_there() {
    // Found in review: in exclusive locking mode (SQLite's wal-index in its heap) a frame
    // was authenticated as its header's page number, so a genuine image of page 3 copied
    // with its header into the frame SQLite knows as page 2 was handed over as page 2.
    let dir = TempDir::new("heap-pgno");
    let (mut file, mut w, salts) = wal_with_header(&dir.0, Default::default());
    let os = file.os();
    let codec = test_codec();
    let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
    let (two, three) = (plain_page(9), plain_page(13));
    append_frames(&mut w, os, &codec, salts, &[(2, 0, &two), (3, 3, &three)]);
    let frame2 = bytes_at(os, frame_at(2), FRAME as usize);
    let mut out = vec![0u8; P];
    let page_at = frame_at(1) + WAL_FRAME_HEADER as i64;
    assert_eq!(
        w.read(os, &codec, &mut scratch, &mut out, page_at),
        ffi::SQLITE_OK
    );
    assert_eq!(out, two);
    assert_eq!(os.write(&frame2, frame_at(1)), ffi::SQLITE_OK);
    assert_eq!(
        w.read(os, &codec, &mut scratch, &mut out, page_at),
        ffi::SQLITE_CORRUPT
    );
    assert!(out.iter().all(|&b| b == 0));
    // A frame this handle neither appended nor read in recovery: nothing to check against.
    let unknown = frame_at(3) + WAL_FRAME_HEADER as i64;
    assert_eq!(os.write(&frame2, frame_at(3)), ffi::SQLITE_OK);
    assert_eq!(
        w.read(os, &codec, &mut scratch, &mut out, unknown),
        ffi::SQLITE_CORRUPT
    );
}

/// The newest image of each page in the WAL beside `path` (every frame there committed).
fn newest_wal_images(path: &Path) -> std::collections::BTreeMap<u32, Vec<u8>> {
    let wal = std::fs::read(format!("{}-wal", path.display())).expect("wal");
    let mut newest = std::collections::BTreeMap::new();
    for frame in wal[WAL_HEADER..].chunks_exact(WAL_FRAME_HEADER + P) {
        newest.insert(be32(&frame[..4]), frame[WAL_FRAME_HEADER..].to_vec());
    }
    assert!(newest.len() > 3, "{} pages in the WAL", newest.len());
    newest
}

/// Every page but page 1 of `path` is the WAL's image, unchanged; page 1 is encrypted anew.
fn assert_checkpointed_as_copies(path: &Path, newest: &std::collections::BTreeMap<u32, Vec<u8>>) {
    let db = std::fs::read(path).expect("db");
    for (&pgno, image) in newest {
        let on_disk = &db[(pgno as usize - 1) * P..pgno as usize * P];
        if pgno == 1 {
            assert!(on_disk != &image[..], "page 1 is encrypted afresh");
        } else {
            assert!(
                on_disk == &image[..],
                "page {pgno}: the frame's image, unchanged"
            );
        }
    }
}

/// What `t` holds, in one line that any change to `b` moves.
const CONTENT: &str =
    "SELECT count(*) || ',' || sum(a) || ',' || sum(length(b)) || ',' || max(b) FROM t";

#[test]
fn a_checkpoint_writes_the_wal_frames_images_as_they_were_authenticated() {
    let dir = TempDir::new("ckptcopy");
    let vfs = KeyedVfsHandle::register(&[0x3c; 32], NewFileLayout::SqlCipher).expect("vfs");
    let path = dir.0.join("w.db");
    create(&path, &vfs, 50);
    let conn = open(&path, &vfs);
    exec(
        &conn,
        "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;",
    );
    exec(
        &conn,
        "UPDATE t SET b = 'changed-' || b WHERE a % 3 = 0; INSERT INTO t(b) VALUES ('new');",
    );
    let newest = newest_wal_images(&path);
    assert_eq!(query(&conn, "PRAGMA wal_checkpoint(PASSIVE)"), ["0"]);
    assert_checkpointed_as_copies(&path, &newest);
    let summary = query(&conn, CONTENT);

    // The checkpoint at close runs in exclusive mode (no xShmLock): copied all the same.
    exec(&conn, "UPDATE t SET b = 'again-' || b WHERE a % 5 = 0;");
    let newest = newest_wal_images(&path);
    let summary_after = query(&conn, CONTENT);
    drop(conn);
    assert!(
        !dir.0.join("w.db-wal").exists(),
        "checkpointed and removed at close"
    );
    assert_checkpointed_as_copies(&path, &newest);
    assert_ne!(summary, summary_after);
    assert_eq!(try_query(&path, &vfs, CONTENT), Ok(summary_after));
    assert_eq!(
        try_query(&path, &vfs, "PRAGMA integrity_check"),
        Ok(vec!["ok".to_string()])
    );
}

/// Reads page `pgno` through `main` into a fresh buffer: the return code and the bytes.
fn read_main(
    main: &mut super::main_db::MainDb,
    os: OsFile,
    codec: &FileCodec,
    pgno: u32,
) -> (c_int, Vec<u8>) {
    let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
    let mut out = vec![0u8; P];
    let rc = main.read(
        os,
        codec,
        &mut scratch,
        &mut out,
        (pgno as i64 - 1) * P as i64,
    );
    (rc, out)
}

/// Page `pgno` reads through `main` as `expected`.
fn assert_reads(
    main: &mut super::main_db::MainDb,
    os: OsFile,
    codec: &FileCodec,
    pgno: u32,
    expected: &[u8],
) {
    let (rc, out) = read_main(main, os, codec, pgno);
    assert_eq!(rc, ffi::SQLITE_OK, "page {pgno}");
    assert!(out == expected, "page {pgno}: other bytes");
}

#[test]
fn a_sequential_scan_reads_ahead_and_a_bad_page_fails_only_when_it_is_read() {
    let dir = TempDir::new("readahead");
    let mut file = RawFile::create(&dir.0.join("db.bin"));
    let os = file.os();
    let codec = test_codec();
    let index = std::sync::Arc::new(WalIndex::default());
    let mut main = super::main_db::MainDb::new(index.clone(), P);
    let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
    for pgno in 2..=16u32 {
        let page = plain_page(pgno as u8);
        let off = (pgno as i64 - 1) * P as i64;
        assert_eq!(
            main.write(os, &codec, &mut scratch, &page, off),
            ffi::SQLITE_OK
        );
    }
    // Page 5 damaged on disk before the scan.
    let mut five = bytes_at(os, 4 * P as i64, P);
    five[100] ^= 1;
    assert_eq!(os.write(&five, 4 * P as i64), ffi::SQLITE_OK);

    let ahead_supported = codec.authenticate_ahead(2, &vec![0u8; 4 * P]).is_some();
    // 2 then 3: sequential, so 3..=6 are read and checked at once; 4 and 6 are kept.
    for pgno in [2u32, 3, 4] {
        assert_reads(&mut main, os, &codec, pgno, &plain_page(pgno as u8));
    }
    // The damaged page fails when it is read, and only then.
    let (rc, out) = read_main(&mut main, os, &codec, 5);
    assert_eq!(rc, ffi::SQLITE_CORRUPT);
    assert!(out.iter().all(|&b| b == 0), "nothing of a refused page");
    assert_reads(&mut main, os, &codec, 6, &plain_page(6));

    // A kept page is dropped by a new lock epoch: the change on disk is seen.
    assert_eq!(read_main(&mut main, os, &codec, 7).0, ffi::SQLITE_OK); // reads 7..=10 ahead
    let mut nine = bytes_at(os, 8 * P as i64, P);
    nine[200] ^= 1;
    assert_eq!(os.write(&nine, 8 * P as i64), ffi::SQLITE_OK);
    index.locked();
    assert_eq!(read_main(&mut main, os, &codec, 8).0, ffi::SQLITE_OK);
    assert_eq!(
        read_main(&mut main, os, &codec, 9).0,
        ffi::SQLITE_CORRUPT,
        "not the kept image"
    );

    // And by this handle's own write.
    assert_eq!(read_main(&mut main, os, &codec, 10).0, ffi::SQLITE_OK);
    assert_eq!(read_main(&mut main, os, &codec, 11).0, ffi::SQLITE_OK); // reads 11..=14 ahead (12 kept)
    let new_twelve = plain_page(99);
    assert_eq!(
        main.write(os, &codec, &mut scratch, &new_twelve, 11 * P as i64),
        ffi::SQLITE_OK
    );
    assert_reads(&mut main, os, &codec, 12, &new_twelve);
    if !ahead_supported {
        eprintln!("this CPU checks pages one at a time: the read-ahead itself is not exercised");
    }
}

/// The frames of a transaction wait in memory for its commit frame (where the CPU makes
/// encrypting pages together pay) and then reach the disk together, chained over the
/// ciphertext and each authenticating as its page; any other call on the WAL (here a read,
/// as SQLite reading back a spilled page) writes the frames held first.
#[test]
fn a_transactions_frames_are_written_at_its_commit_chained_and_authentic() {
    let dir = TempDir::new("held-frames");
    let (mut file, mut w, salts) = wal_with_header(&dir.0, Default::default());
    let os = file.os();
    let codec = test_codec();
    let holds = cipherlite_codec::pages_at_once_pay_off(cipherlite_codec::PAGES_AT_ONCE);
    let file_size = |os: OsFile| os.size().expect("size");
    let pages: Vec<Vec<u8>> = (2..=7).map(plain_page).collect();
    // Frames 1-2 not commit frames, then frame 3 commits.
    append_frames(
        &mut w,
        os,
        &codec,
        salts,
        &[(2, 0, &pages[0]), (3, 0, &pages[1])],
    );
    let expected_before = if holds {
        WAL_HEADER as i64
    } else {
        frame_at(3)
    };
    assert_eq!(
        file_size(os),
        expected_before,
        "held until the commit frame"
    );
    append_frames_from(&mut w, os, &codec, salts, 3, &[(4, 4, &pages[2])]);
    assert_eq!(file_size(os), frame_at(4), "the commit writes every frame");
    // One more, not committed: a read of the WAL writes it first.
    append_frames_from(&mut w, os, &codec, salts, 4, &[(5, 0, &pages[3])]);
    let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
    let mut header = [0u8; WAL_HEADER];
    assert_eq!(
        w.read(os, &codec, &mut scratch, &mut header, 0),
        ffi::SQLITE_OK
    );
    assert_eq!(file_size(os), frame_at(5), "written before the read");
    let frames: Vec<(u32, &[u8])> = (2u32..).zip(pages[..4].iter().map(|p| &p[..])).collect();
    let _ = frames_from_the_start(os, &codec, &frames);
}

/// Checks that the WAL's first frames are `frames` (page number, plaintext): each frame's
/// checksum chained from the header's over the ciphertext, its header naming the page, its
/// image authentic as that page and decrypting to it. Returns the images.
fn frames_from_the_start(os: OsFile, codec: &FileCodec, frames: &[(u32, &[u8])]) -> Vec<Vec<u8>> {
    let wal_header = WalHeader::parse(&bytes_at(os, 0, WAL_HEADER), P).expect("header");
    let mut chain = wal_header.checksum;
    let mut images = Vec::new();
    for (n, &(pgno, plain)) in (1..).zip(frames) {
        let frame = bytes_at(os, frame_at(n), FRAME as usize);
        let (head, image) = frame.split_at(WAL_FRAME_HEADER);
        chain = wal_frame_checksum(wal_header.big_endian, chain, head, image);
        assert_eq!(
            (be32(&head[16..20]), be32(&head[20..24])),
            chain,
            "frame {n}"
        );
        assert_eq!(be32(&head[0..4]), pgno);
        let mut page = image.to_vec();
        assert!(codec.decrypt(pgno, &mut page), "frame {n} authentic");
        assert_eq!(page, plain, "frame {n} holds its page");
        images.push(image.to_vec());
    }
    images
}

/// SQLite's unix VFS moves at most 0x1ffff bytes a call (it masks the length; SQLite never
/// asks for more): longer buffers, such as four held frames of 64 KiB pages, go in pieces
/// both ways, and a read past the end zero-fills all of its tail.
#[test]
fn reads_and_writes_longer_than_the_unix_vfs_moves_at_once_go_in_pieces() {
    let dir = TempDir::new("long-io");
    let mut file = RawFile::create(&dir.0.join("long.bin"));
    let os = file.os();
    let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    assert_eq!(os.write(&data, 100), ffi::SQLITE_OK);
    assert_eq!(os.size().expect("size"), 300_100);
    let mut back = vec![0u8; data.len()];
    assert_eq!(os.read(&mut back, 100), ffi::SQLITE_OK);
    assert!(back == data);
    let mut past = vec![7u8; 400_000];
    assert_eq!(os.read(&mut past, 100), ffi::SQLITE_IOERR_SHORT_READ);
    assert!(past[..data.len()] == data[..], "what the file holds");
    assert!(
        past[data.len()..].iter().all(|&b| b == 0),
        "zeros past its end"
    );
}

/// Page 1 waits with the other frames of its transaction too (it goes through the cipher
/// alone, its region being shorter, but in the same write), comes out as page 1 of the
/// file's layout, and the chain runs through it.
#[test]
fn page1_waits_with_its_transactions_frames_and_stays_page1() {
    let dir = TempDir::new("held-page1");
    let (mut file, mut w, salts) = wal_with_header(&dir.0, Default::default());
    let os = file.os();
    let codec = test_codec();
    let holds = cipherlite_codec::pages_at_once_pay_off(cipherlite_codec::PAGES_AT_ONCE);
    let mut page1 = plain_page(1);
    page1[..16].copy_from_slice(b"SQLite format 3\0");
    page1[16..18].copy_from_slice(&(P as u16).to_be_bytes());
    page1[20] = cipherlite_codec::RESERVE as u8;
    let pages = [page1, plain_page(5), plain_page(9)];
    append_frames(
        &mut w,
        os,
        &codec,
        salts,
        &[(1, 0, &pages[0]), (5, 0, &pages[1])],
    );
    let expected = if holds {
        WAL_HEADER as i64
    } else {
        frame_at(3)
    };
    assert_eq!(os.size().expect("size"), expected, "page 1 held too");
    append_frames_from(&mut w, os, &codec, salts, 3, &[(9, 9, &pages[2])]);
    assert_eq!(
        os.size().expect("size"),
        frame_at(4),
        "the commit writes every frame"
    );

    let frames: Vec<(u32, &[u8])> = [1u32, 5, 9]
        .into_iter()
        .zip(pages.iter().map(|p| &p[..]))
        .collect();
    let images = frames_from_the_start(os, &codec, &frames);
    assert_eq!(images[0][..16], [4u8; 16], "the salt first");
    assert_eq!(
        images[0][16..24],
        pages[0][16..24],
        "Sqlite3mc: the header in clear"
    );
}

/// A transaction that spilled its cache to the WAL and rolled back may leave frames held
/// (see `wal::HeldFrames`). They are written before its write lock goes: never later, over
/// the frames another connection commits at the same offsets meanwhile (SQLite reads
/// the WAL again on the first connection's next statement, which would write them).
/// SQL inserting `rows` rows of about 900 bytes into `t(b)`, tagged `tag`.
fn insert_rows(rows: u32, tag: &str) -> String {
    format!(
        "INSERT INTO t(b) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s \
         WHERE i < {rows}) SELECT printf('{tag}-%d-%0900d', i, i) FROM s"
    )
}

#[test]
fn frames_held_by_a_rolled_back_transaction_never_overwrite_a_later_commit() {
    let key = sample_key();
    let vfs = KeyedVfsHandle::register(&key, NewFileLayout::SqlCipher).expect("vfs");
    for extra in 0..4 {
        let dir = TempDir::new("held-rollback");
        let path = dir.0.join("held.db");
        create(&path, &vfs, 10);
        let a = open(&path, &vfs);
        exec(
            &a,
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0",
        );
        exec(&a, "PRAGMA cache_size = 8");
        let b = open(&path, &vfs);
        exec(&b, "PRAGMA wal_autocheckpoint = 0");
        // Spills (the cache holds 8 pages), then rolls back.
        exec(
            &a,
            &format!("BEGIN; {}; ROLLBACK", insert_rows(300 + extra, "spilled")),
        );
        // Commits more frames than the spill wrote, over the same offsets.
        exec(
            &b,
            &format!("BEGIN; {}; COMMIT", insert_rows(600, "committed")),
        );
        // The first connection's next statement reads the WAL.
        assert_eq!(query(&a, "SELECT count(*) FROM t"), ["610"]);
        drop(a);
        for conn in [&b, &open(&path, &vfs)] {
            assert_eq!(
                query(conn, "PRAGMA integrity_check"),
                ["ok"],
                "extra {extra}"
            );
            assert_eq!(
                query(conn, "SELECT count(*) FROM t WHERE b LIKE 'committed-%'"),
                ["600"]
            );
        }
    }
}

/// Writes the wal-index header (both copies) into region 0 as SQLite does at a commit.
fn put_index_header(
    region: &mut [u32],
    last_frame: u32,
    sqlite_checksum: (u32, u32),
    salts: [u8; 8],
) {
    let mut copy = [0u8; 48];
    copy[12] = 1; // isInit
    copy[16..20].copy_from_slice(&last_frame.to_ne_bytes());
    copy[24..28].copy_from_slice(&sqlite_checksum.0.to_ne_bytes());
    copy[28..32].copy_from_slice(&sqlite_checksum.1.to_ne_bytes());
    copy[32..40].copy_from_slice(&salts);
    for (i, word) in copy.chunks_exact(4).enumerate() {
        let w = u32::from_ne_bytes([word[0], word[1], word[2], word[3]]);
        region[i] = w;
        region[12 + i] = w;
    }
}

#[test]
fn the_chain_continues_from_a_frame_this_handle_wrote_only_once_its_commit_is_known() {
    // Frame 1 is written (with the WAL write lock held, or in exclusive locking mode
    // without it), then write-lock spans end with the wal-index header saying this or that;
    // frame 2 is written in the next span. Frame 1's stored checksum on disk is made wrong
    // first, so frame 2's checksum shows where its chain continued from: this handle's
    // record of frame 1, or the disk.
    let codec = test_codec();
    let page = plain_page(3);
    let sqlite_checksum = (0x1234_5678, 0x9abc_def0);
    let ours = Some((1, sqlite_checksum));
    let not_committed = Some((0, (0, 0)));
    // (case, frame 1 written under the write lock, what the header says as each span
    // ends: the span frame 1 was written in (if any), then later spans; record used)
    type Case<'a> = (&'a str, bool, &'a [Option<(u32, (u32, u32))>], bool);
    let cases: [Case; 7] = [
        ("committed", true, &[ours], true),
        ("not committed", true, &[not_committed], false),
        (
            "another frame 1 committed",
            true,
            &[Some((1, (7, 7)))],
            false,
        ),
        ("no wal-index header", true, &[None], false),
        ("another span released since", true, &[ours, ours], false),
        // Another connection committed the same plaintext over it: the same SQLite
        // checksum, other ciphertext; a later span of this handle sees that commit.
        (
            "the same checksum committed later",
            true,
            &[not_committed, ours],
            false,
        ),
        // Exclusive locking mode: SQLite writes without the lock, then leaves that mode.
        ("written without the write lock", false, &[ours], false),
    ];
    for (name, locked, at_releases, uses_record) in cases {
        let dir = TempDir::new("chain-across");
        let index = std::sync::Arc::new(WalIndex::default());
        let (mut file, mut w, salts) = wal_with_header(&dir.0, index.clone());
        let mut region = vec![0u32; super::wal_index::REGION_SIZE / 4];
        region[136 / 4] = 2;
        region[136 / 4 + 1] = 2;
        index.mapped(0, region.as_mut_ptr().cast());
        let os = file.os();
        let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
        index.locked();
        if locked {
            index.write_lock_taken();
        }
        let mut head = frame_header(2, 2, salts);
        put_checksum(&mut head[16..], sqlite_checksum);
        assert_eq!(
            w.write(os, &codec, &mut scratch, &head, frame_at(1)),
            ffi::SQLITE_OK
        );
        let page_at = frame_at(1) + WAL_FRAME_HEADER as i64;
        assert_eq!(
            w.write(os, &codec, &mut scratch, &page, page_at),
            ffi::SQLITE_OK
        );
        let frame1 = bytes_at(os, frame_at(1), FRAME as usize);
        for (n, at_release) in at_releases.iter().enumerate() {
            match at_release {
                Some((last, checksum)) => put_index_header(&mut region, *last, *checksum, salts),
                None => region[..24].fill(0),
            }
            if n > 0 || !locked {
                index.locked();
                index.write_lock_taken();
            }
            index.locked();
            index.write_lock_releasing();
        }
        assert_eq!(os.write(&[0xee; 8], frame_at(1) + 16), ffi::SQLITE_OK);
        index.locked();
        index.write_lock_taken(); // the next write transaction
        append_frames_from(&mut w, os, &codec, salts, 2, &[(2, 2, &page)]);
        let frame2 = bytes_at(os, frame_at(2), FRAME as usize);
        let header = WalHeader::parse(&bytes_at(os, 0, WAL_HEADER), P).expect("header");
        let from = if uses_record {
            (be32(&frame1[16..20]), be32(&frame1[20..24]))
        } else {
            (0xeeee_eeee, 0xeeee_eeee)
        };
        let (head2, image2) = frame2.split_at(WAL_FRAME_HEADER);
        assert_eq!(
            (be32(&head2[16..20]), be32(&head2[20..24])),
            wal_frame_checksum(header.big_endian, from, head2, image2),
            "{name}"
        );
        index.unmapped();
    }
}

/// Opens a copy of the database at `path` with `wal` beside it (SQLite recovers from the
/// WAL alone, no `-shm`): (the copy's directory, kept while the connection is used; the
/// connection).
fn open_recovered_copy(path: &Path, wal: &[u8], vfs: &KeyedVfsHandle) -> (TempDir, Connection) {
    let copy = TempDir::new("recovered-copy");
    let db = copy.0.join("copy.db");
    std::fs::copy(path, &db).expect("copy db");
    std::fs::write(copy.0.join("copy.db-wal"), wal).expect("copy wal");
    let conn = open(&db, vfs);
    (copy, conn)
}

/// Checks that every frame of the WAL's current generation (the frames with its header's
/// salts, up to the first of an earlier one) chains over the ciphertext from its header;
/// returns how many frames that is.
fn assert_whole_wal_chained(wal: &[u8], context: &str) -> usize {
    let header = WalHeader::parse(&wal[..WAL_HEADER], P).expect("a valid WAL header");
    let mut chain = header.checksum;
    let mut frames = 0;
    for frame in wal[WAL_HEADER..].chunks_exact(WAL_FRAME_HEADER + P) {
        let (head, page) = frame.split_at(WAL_FRAME_HEADER);
        if head[8..16] != header.salts {
            break;
        }
        let expected = wal_frame_checksum(header.big_endian, chain, head, page);
        let stored = (be32(&head[16..]), be32(&head[20..]));
        assert_eq!(stored, expected, "{context}: frame {}", frames + 1);
        chain = stored;
        frames += 1;
    }
    frames
}

#[test]
fn the_chain_stays_whole_across_transactions_connections_rollbacks_and_restarts() {
    // Each connection continues the chain from the last frame it wrote when the wal-index
    // says that frame was committed (see `Wal::stored_checksum_before`). Interleave what can
    // make that record wrong: another connection's commits, a transaction that spilled and
    // rolled back, the same content committed by another connection over those frames, a
    // checkpoint that restarts the WAL. After each step the whole WAL must chain from its
    // header, and a copy of the files, recovered from the WAL alone, holds every row.
    let key = sample_key();
    let vfs = KeyedVfsHandle::register(&key, NewFileLayout::SqlCipher).expect("vfs");
    let dir = TempDir::new("chain-whole");
    let path = dir.0.join("chain.db");
    create(&path, &vfs, 10);
    let a = open(&path, &vfs);
    exec(
        &a,
        "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = 8",
    );
    let b = open(&path, &vfs);
    exec(&b, "PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = 8");
    let mut expected = 10;
    let steps: Vec<(&str, &Connection, String, u32)> = vec![
        ("a commits", &a, insert_rows(1, "a1"), 1),
        ("a commits again", &a, insert_rows(2, "a2"), 2),
        ("b commits after a", &b, insert_rows(1, "b1"), 1),
        ("a commits after b", &a, insert_rows(3, "a3"), 3),
        (
            "a spills and rolls back",
            &a,
            format!("BEGIN; {}; ROLLBACK", insert_rows(300, "same")),
            0,
        ),
        (
            "b commits what a rolled back",
            &b,
            format!("BEGIN; {}; COMMIT", insert_rows(300, "same")),
            300,
        ),
        ("a commits after that", &a, insert_rows(1, "a4"), 1),
        ("a commits again after that", &a, insert_rows(1, "a5"), 1),
        (
            "a restarts the WAL",
            &a,
            "PRAGMA wal_checkpoint(RESTART)".into(),
            0,
        ),
        (
            "b commits first in the new WAL",
            &b,
            insert_rows(2, "b2"),
            2,
        ),
        (
            "a commits after b in the new WAL",
            &a,
            insert_rows(1, "a6"),
            1,
        ),
        (
            "b truncates the WAL",
            &b,
            "PRAGMA wal_checkpoint(TRUNCATE)".into(),
            0,
        ),
        (
            "a commits first after the truncation",
            &a,
            insert_rows(1, "a7"),
            1,
        ),
        (
            "a commits again after the truncation",
            &a,
            insert_rows(2, "a8"),
            2,
        ),
    ];
    for (name, conn, sql, rows) in steps {
        exec(conn, &sql);
        expected += rows;
        let wal = std::fs::read(dir.0.join("chain.db-wal")).expect("wal");
        if wal.len() > WAL_HEADER {
            assert_whole_wal_chained(&wal, name);
        }
        let (_copy, recovered) = open_recovered_copy(&path, &wal, &vfs);
        assert_eq!(
            query(&recovered, "SELECT count(*) FROM t"),
            [expected.to_string()],
            "{name}"
        );
        assert_eq!(
            query(&recovered, "PRAGMA integrity_check"),
            ["ok"],
            "{name}"
        );
    }
}

#[test]
fn a_frame_a_rolled_back_transaction_left_and_another_connection_overwrote_is_not_chained_from() {
    // The connection's last frame is one of a transaction that spilled and rolled back;
    // another connection commits over those offsets, up to exactly that frame, with other
    // ciphertext. The first connection's next frame follows that frame's number and salts:
    // only the wal-index's word that the frame was committed tells the record from a stale
    // one, so its chain must continue from the disk.
    let key = sample_key();
    let vfs = KeyedVfsHandle::register(&key, NewFileLayout::SqlCipher).expect("vfs");
    let mut traps = 0;
    for spill in [40u32, 60, 80, 100, 120] {
        let dir = TempDir::new("chain-stale");
        let path = dir.0.join("stale.db");
        create(&path, &vfs, 10);
        let a = open(&path, &vfs);
        exec(
            &a,
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = 8",
        );
        let b = open(&path, &vfs);
        exec(&b, "PRAGMA wal_autocheckpoint = 0");
        exec(&a, "INSERT INTO t(b) VALUES ('before')");
        exec(
            &a,
            &format!(
                "BEGIN; INSERT INTO t(b) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 \
                 FROM s WHERE i < {spill}) SELECT printf('spilled-%d-%0900d', i, i) FROM s; ROLLBACK"
            ),
        );
        let wal_frames = |dir: &Path| {
            let len = std::fs::metadata(dir.join("stale.db-wal"))
                .expect("wal")
                .len() as usize;
            ((len - WAL_HEADER) / FRAME as usize) as u32
        };
        let last_frame_of_a = wal_frames(&dir.0);
        let committed = |dir: &Path| {
            // SQLite's wal-index, private to this user (see `private_wal_index`).
            let shm = std::fs::read(super::private_wal_index::private_shm_of(
                &dir.join("stale.db"),
            ))
            .expect("shm");
            u32::from_ne_bytes([shm[16], shm[17], shm[18], shm[19]])
        };
        let mut rows = 11;
        while committed(&dir.0) < last_frame_of_a {
            exec(&b, "INSERT INTO t(b) VALUES ('b')");
            rows += 1;
        }
        if committed(&dir.0) == last_frame_of_a {
            traps += 1;
        }
        exec(&a, "INSERT INTO t(b) VALUES ('after')");
        rows += 1;
        let wal = std::fs::read(dir.0.join("stale.db-wal")).expect("wal");
        assert_whole_wal_chained(&wal, &format!("spill {spill}"));
        drop((a, b));
        let (_copy, recovered) = open_recovered_copy(&path, &wal, &vfs);
        assert_eq!(
            query(&recovered, "SELECT count(*) FROM t"),
            [rows.to_string()],
            "spill {spill}"
        );
    }
    assert!(
        traps > 0,
        "no case ended the other connection's commits at the stale frame"
    );
}
