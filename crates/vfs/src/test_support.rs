//! Helpers the unit tests of several modules share: temporary directories, the sample
//! files of `testdata/sqlcipher4`, connections over the keyed VFS, raw files of the OS VFS
//! and the WAL and journal layouts written out by hand.

use crate::base_file::BaseFile;
use crate::checksum::{be32, wal_checksum};
use crate::file_codec::FileCodec;
use crate::format::{put_checksum, JOURNAL_MAGIC, WAL_FRAME_HEADER, WAL_HEADER};
use crate::wal::Wal;
use crate::wal_index::WalIndex;
use crate::{KeyedVfsHandle, PAGE_SIZE as P};
use cipherlite_codec::test_support::sample_file;
use cipherlite_codec::{Page1Layout, PageCodec};
use cipherlite_sqlite::{Connection, Error, OpenFlags};
use cipherlite_sys::ffi;
use std::ffi::{c_int, CString};
use std::path::{Path, PathBuf};

pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    pub(crate) fn new(tag: &str) -> TempDir {
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
pub(crate) fn copy_sample(name: &str, dir: &Path) -> PathBuf {
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

pub(crate) fn query(conn: &Connection, sql: &str) -> Vec<String> {
    let (stmt, _) = conn.prepare(sql, false).expect("prepare");
    let mut stmt = stmt.expect("statement");
    let mut out = Vec::new();
    while stmt.step().expect("step") {
        out.push(String::from_utf8_lossy(stmt.column_text(0)).into_owned());
    }
    out
}

pub(crate) fn open(path: &Path, vfs: &KeyedVfsHandle) -> Connection {
    Connection::open(
        path.to_str().expect("utf-8 path"),
        OpenFlags::default(),
        Some(vfs.name()),
    )
    .expect("open")
}

/// A record of a rollback journal as it is on disk.
pub(crate) struct JournalRecord {
    pub(crate) pgno: u32,
    pub(crate) image: Vec<u8>,
    pub(crate) checksum: u32,
    /// The nonce of the header of the record's segment.
    pub(crate) nonce: u32,
}

/// The records of a rollback journal of `P`-byte pages, segment by segment.
pub(crate) fn journal_records(journal: &[u8]) -> Vec<JournalRecord> {
    let mut nonce = be32(&journal[12..]);
    let sector = be32(&journal[20..]) as usize;
    let mut records = Vec::new();
    let mut at = sector;
    while at + 8 + P <= journal.len() {
        let is_header = journal[at..at + 8] == crate::format::JOURNAL_MAGIC
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

pub(crate) fn try_open(path: &Path, vfs: &KeyedVfsHandle) -> Result<Connection, Error> {
    Connection::open(
        path.to_str().expect("utf-8 path"),
        OpenFlags::default(),
        Some(vfs.name()),
    )
}

/// Opens and runs `sql`, returning its single column as text, or the error's code.
pub(crate) fn try_query(path: &Path, vfs: &KeyedVfsHandle, sql: &str) -> Result<Vec<String>, i32> {
    let conn = try_open(path, vfs).map_err(|e| e.code)?;
    let (stmt, _) = conn.prepare(sql, false).map_err(|e| e.code)?;
    let mut stmt = stmt.expect("statement");
    let mut out = Vec::new();
    while stmt.step().map_err(|e| e.code)? {
        out.push(String::from_utf8_lossy(stmt.column_text(0)).into_owned());
    }
    Ok(out)
}

pub(crate) fn exec(conn: &Connection, sql: &str) {
    conn.exec_each(sql, |_| Ok(()))
        .map_err(|_| ())
        .unwrap_or_else(|()| panic!("{sql}"));
}

/// A new encrypted database at `path` through `vfs`, of `page_size`-byte pages, holding
/// `t(a, b)` with `rows` rows.
pub(crate) fn create(path: &Path, vfs: &KeyedVfsHandle, rows: u32) {
    let conn = open(path, vfs);
    let mut reserve = crate::RESERVE_BYTES;
    let _ = conn.file_control_int(c"main", ffi::SQLITE_FCNTL_RESERVE_BYTES, &mut reserve);
    exec(&conn, &format!("PRAGMA page_size = {}", vfs.page_size()));
    exec(&conn, &format!("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT); INSERT INTO t(b) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {rows}) SELECT printf('row-%d-%0500d', i, i) FROM s;"));
    drop(conn);
}

pub(crate) const SUMMARY: &str = "SELECT count(*) || ',' || sum(a) FROM t";

/// A rollback-journal header: `nrec`, `nonce`, `original_size` (pages), `sector`, `page`,
/// padded with zeros to `sector` bytes.
pub(crate) fn journal_header(
    nrec: u32,
    nonce: u32,
    original_size: u32,
    sector: u32,
    page: u32,
) -> Vec<u8> {
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

pub(crate) fn reseal_wal_header(wal: &mut [u8]) {
    let big_endian = wal[3] & 1 == 1;
    let checksum = wal_checksum(big_endian, (0, 0), &wal[..24]);
    put_checksum(&mut wal[24..32], checksum);
}

/// A file of the default (OS) VFS, opened read-write and closed on drop.
pub(crate) struct RawFile {
    storage: Vec<u64>,
    _name: CString,
}

impl RawFile {
    pub(crate) fn create(path: &Path) -> RawFile {
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

    pub(crate) fn os(&mut self) -> BaseFile {
        // SAFETY: open until drop.
        unsafe { BaseFile::new(self.storage.as_mut_ptr().cast()) }
    }
}

impl Drop for RawFile {
    fn drop(&mut self) {
        self.os().close();
    }
}

pub(crate) fn test_codec() -> FileCodec {
    FileCodec::new(
        PageCodec::new(&[13u8; 32], [4u8; 16], P).expect("codec"),
        Page1Layout::Sqlite3mc,
    )
}

/// A page of plaintext as SQLite holds it (the reserve zero).
pub(crate) fn plain_page(seed: u8) -> Vec<u8> {
    let mut page: Vec<u8> = (0..P).map(|i| (i as u8).wrapping_mul(seed)).collect();
    page[P - cipherlite_codec::RESERVE..].fill(0);
    page
}

pub(crate) fn bytes_at(os: BaseFile, off: i64, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    assert_eq!(os.read(&mut out, off), ffi::SQLITE_OK);
    out
}

pub(crate) fn wal_header_bytes(page_size: u32, salts: [u8; 8]) -> [u8; WAL_HEADER] {
    let mut h = [0u8; WAL_HEADER];
    h[0..4].copy_from_slice(&crate::format::WAL_MAGIC_LE.to_be_bytes());
    h[4..8].copy_from_slice(&crate::format::WAL_VERSION.to_be_bytes());
    h[8..12].copy_from_slice(&page_size.to_be_bytes());
    h[16..24].copy_from_slice(&salts);
    reseal_wal_header(&mut h);
    h
}

pub(crate) fn frame_header(pgno: u32, commit: u32, salts: [u8; 8]) -> [u8; WAL_FRAME_HEADER] {
    let mut h = [0u8; WAL_FRAME_HEADER];
    h[0..4].copy_from_slice(&pgno.to_be_bytes());
    h[4..8].copy_from_slice(&commit.to_be_bytes());
    h[8..16].copy_from_slice(&salts);
    h
}

/// A WAL on a file of the OS VFS with its header written: (file, handle, salts).
pub(crate) fn wal_with_header(
    dir: &Path,
    index: std::sync::Arc<WalIndex>,
) -> (RawFile, Wal, [u8; 8]) {
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

pub(crate) const FRAME: i64 = (WAL_FRAME_HEADER + P) as i64;

pub(crate) fn frame_at(n: i64) -> i64 {
    WAL_HEADER as i64 + (n - 1) * FRAME
}

/// Appends frames 1, 2, … through `w` as SQLite does (header, then page): `(pgno, commit
/// size, page)` each.
pub(crate) fn append_frames(
    w: &mut Wal,
    os: BaseFile,
    codec: &FileCodec,
    salts: [u8; 8],
    frames: &[(u32, u32, &[u8])],
) {
    append_frames_from(w, os, codec, salts, 1, frames);
}

/// [`append_frames`] from frame `first` on.
pub(crate) fn append_frames_from(
    w: &mut Wal,
    os: BaseFile,
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

/// What `t` holds, in one line that any change to `b` moves.
pub(crate) const CONTENT: &str =
    "SELECT count(*) || ',' || sum(a) || ',' || sum(length(b)) || ',' || max(b) FROM t";

/// Reads page `pgno` through `main` into a fresh buffer: the return code and the bytes.
pub(crate) fn read_main(
    main: &mut crate::main_db::MainDb,
    os: BaseFile,
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
pub(crate) fn assert_reads(
    main: &mut crate::main_db::MainDb,
    os: BaseFile,
    codec: &FileCodec,
    pgno: u32,
    expected: &[u8],
) {
    let (rc, out) = read_main(main, os, codec, pgno);
    assert_eq!(rc, ffi::SQLITE_OK, "page {pgno}");
    assert!(out == expected, "page {pgno}: other bytes");
}
