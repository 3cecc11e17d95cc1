//! The journal takes the image the database handle wrote, and only while it is SQLite's
//! content.

use crate::base_file::BaseFile;
use crate::format::WAL_FRAME_HEADER;
use crate::journal::Journal;
use crate::test_support::{
    assert_reads, bytes_at, create, exec, journal_header, journal_records, open, plain_page, query,
    read_main, test_codec, try_query, RawFile, TempDir, CONTENT,
};
use crate::wal_index::WalIndex;
use crate::{KeyedVfsHandle, NewFileLayout, PAGE_SIZE as P};
use cipherlite_codec::journal_checksum;
use cipherlite_sys::ffi;
use std::path::Path;

use crate::journal_copy::*;

fn image(seed: u8) -> Vec<u8> {
    (0..4096u32)
        .map(|i| (i as u8).wrapping_mul(seed) ^ seed)
        .collect()
}

#[test]
fn only_the_reserve_written_last_for_a_page_matches() {
    let mut known = KnownImages::default();
    let (a, b) = (image(3), image(5));
    assert!(
        !known.may_know(7) && !known.reserve_matches(7, &a),
        "nothing noted"
    );
    known.note(7, &a);
    assert_eq!(known.slots.len(), SLOTS);
    assert!(known.may_know(7) && known.reserve_matches(7, &a));
    assert!(!known.reserve_matches(7, &b), "another image of the page");
    assert!(!known.reserve_matches(8, &a), "the image as another page");
    // The IV or the HMAC changed: not the reserve written. (A changed body is the
    // second check's: `PageCodec::image_holds`.)
    for at in [4096 - RESERVE, 4096 - 64, 4095] {
        let mut edited = a.clone();
        edited[at] ^= 1;
        assert!(!known.reserve_matches(7, &edited), "byte {at}");
    }
    assert!(
        !known.reserve_matches(7, &a[..40]),
        "too short for a reserve"
    );
    known.note(7, &b);
    assert!(
        !known.reserve_matches(7, &a) && known.reserve_matches(7, &b),
        "the newest only"
    );
    known.forget(7);
    assert!(
        !known.may_know(7) && !known.reserve_matches(7, &b),
        "forgotten"
    );
    known.forget(12345);

    // A page whose slot a later write took is not known; page 0 never is.
    known.note(3, &a);
    known.note(3 + SLOTS as u32, &b);
    assert!(!known.reserve_matches(3, &a) && known.reserve_matches(3 + SLOTS as u32, &b));
    assert!(
        !known.reserve_matches(3, &b),
        "the slot's image as another page"
    );
    known.note(0, &a);
    assert!(!known.may_know(0) && !known.reserve_matches(0, &a));
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
    let mut main = crate::main_db::MainDb::new(std::sync::Arc::new(WalIndex::default()), P);
    let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
    let mut out = vec![0u8; P];
    let mut work = vec![0u8; P];
    let page_at = |pgno: u32| (pgno as i64 - 1) * P as i64;
    // Whether the journal would take page `pgno`'s image for SQLite's content `plain`.
    let mut written = |main: &crate::main_db::MainDb, pgno: u32, plain: &[u8], out: &mut [u8]| {
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
                  database: Option<(BaseFile, &crate::main_db::MainDb)>,
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
