//! The WAL: recovery of the sample WALs, frames held to the commit, authenticated as the
//! page the wal-index maps them to, chained over the ciphertext, refusals outside its
//! geometry.

use crate::base_file::BaseFile;
use crate::checksum::{be32, wal_frame_checksum};
use crate::file_codec::FileCodec;
use crate::format::{put_checksum, WalHeader, WAL_FRAME_HEADER, WAL_HEADER};
use crate::test_support::{
    append_frames, append_frames_from, bytes_at, copy_sample, create, exec, frame_at, frame_header,
    open, plain_page, query, reseal_wal_header, test_codec, try_query, wal_header_bytes,
    wal_with_header, RawFile, TempDir, FRAME, SUMMARY,
};
use crate::wal::Wal;
use crate::wal_index::WalIndex;
use crate::{KeyedVfsHandle, NewFileLayout, PAGE_SIZE as P};
use cipherlite_codec::test_support::sample_key;
use cipherlite_sqlite::Connection;
use cipherlite_sys::ffi;
use std::path::{Path, PathBuf};

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
fn the_wal_cipherlite_writes_chains_over_the_ciphertext() {
    let dir = TempDir::new("walw");
    let path = dir.0.join("w.db");
    let vfs = KeyedVfsHandle::register(&[9u8; 32], NewFileLayout::Sqlite3mc).expect("vfs");
    let conn = open(&path, &vfs);
    let mut reserve = crate::RESERVE_BYTES;
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
    let mut region = vec![0u32; crate::wal_index::REGION_SIZE / 4];
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
    let mut region = vec![0u32; crate::wal_index::REGION_SIZE / 4];
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
    let file_size = |os: BaseFile| os.size().expect("size");
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
fn frames_from_the_start(os: BaseFile, codec: &FileCodec, frames: &[(u32, &[u8])]) -> Vec<Vec<u8>> {
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
/// (see `wal::held_frames::HeldFrames`). They are written before its write lock goes: never later, over
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
        let mut region = vec![0u32; crate::wal_index::REGION_SIZE / 4];
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
            let shm = std::fs::read(crate::private_wal_index::private_shm_of(
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
