//! The rollback journal: hot journals of either checksum domain roll back, the checksums
//! cipherlite writes are over the ciphertext, and records that do not authenticate, of
//! another geometry or that would land in clear are refused.

use crate::checksum::be32;
use crate::format::{JOURNAL_MAGIC, WAL_FRAME_HEADER};
use crate::journal::Journal;
use crate::test_support::{
    bytes_at, copy_sample, create, journal_header, journal_records, open, plain_page, query,
    test_codec, try_query, RawFile, TempDir, SUMMARY,
};
use crate::{KeyedVfsHandle, NewFileLayout, PAGE_SIZE as P};
use cipherlite_codec::journal_checksum;
use cipherlite_codec::test_support::sample_key;
use cipherlite_sys::ffi;

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
fn the_journal_cipherlite_writes_checksums_the_ciphertext() {
    let dir = TempDir::new("journal");
    let path = dir.0.join("j.db");
    let vfs = KeyedVfsHandle::register(&[7u8; 32], NewFileLayout::SqlCipher).expect("vfs");
    let conn = open(&path, &vfs);
    let mut reserve = crate::RESERVE_BYTES;
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
