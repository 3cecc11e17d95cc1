//! `verify`: authenticates every page of a database file and every committed frame of
//! its WAL with the key, independently of the VFS (raw bytes, `codec::PageCodec`), then
//! runs `integrity_check` and computes the content digest through the connection.

use super::{digest, Key, Result};
use cipherlite_codec::{self as codec, CipherScheme, PageCodec};
use cipherlite_sqlite::{Connection, OsFile};
use std::path::Path;

/// SQLite's lock byte range starts here (1 GiB, `PENDING_BYTE`); the page holding it is
/// never used nor written, so in a file that large it is a hole of zeros.
const PENDING_BYTE: u64 = 0x4000_0000;

/// The page SQLite leaves unused because the lock bytes live in it, in a file of
/// `page_size`-byte pages.
pub(crate) fn is_lock_page(pgno: u64, page_size: usize) -> bool {
    pgno == PENDING_BYTE / page_size as u64 + 1
}

/// Pages read at a time (4 MiB, shared among the threads of `parallel`).
pub(crate) fn pages_per_read(page_size: usize) -> u64 {
    ((4 << 20) / page_size).max(1) as u64
}

/// The page size of database `main` of `conn` (for a keyed connection, the one its VFS
/// was registered with: SQLCipher's `cipher_page_size`).
pub(crate) fn page_size_of(conn: &Connection) -> Result<usize> {
    let size = conn
        .query_text("PRAGMA main.page_size")?
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|n| {
            (codec::MIN_PAGE_SIZE..=codec::MAX_PAGE_SIZE).contains(n) && n.is_power_of_two()
        });
    size.ok_or_else(|| {
        super::Error::refused(
            cipherlite_sqlite::ffi::SQLITE_CORRUPT,
            "the database reports no valid page size",
        )
    })
}

/// Authenticates one page image (HMAC only: nothing is decrypted), accepting the lock
/// page when it is the hole SQLite leaves there.
pub(crate) fn page_ok(codec: &PageCodec, pgno: u64, image: &[u8]) -> bool {
    if is_lock_page(pgno, codec.page_size()) && codec::is_all_zero(image) {
        return true;
    }
    u32::try_from(pgno).is_ok_and(|n| codec.authenticate_page(n, image).is_ok())
}

/// What `verify` found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Pages in the database file (all of them checked).
    pub pages: u64,
    /// Committed WAL frames checked.
    pub wal_frames: u64,
    /// The pages were authenticated (false: a plaintext database, nothing to check).
    pub encrypted: bool,
    /// Every page and frame authenticated and `integrity_check` said `ok`.
    pub ok: bool,
    /// The number of the first page whose image did not authenticate (a database page,
    /// or the page a WAL frame holds), if any.
    pub first_bad_page: Option<u64>,
    /// `integrity_check`'s findings, one per line (`ok` when there are none), or the
    /// error it failed with.
    pub integrity: String,
    /// BLAKE3 digest of the content (see [`digest`]); `None` when it could not be read.
    pub content_digest: Option<String>,
}

/// Verifies database `main` of `conn`. `key` is the key it is encrypted with, `None` for
/// a plaintext database, in SQLCipher 4's format ([`verify_connection_in`] for another).
/// Reads in one read transaction when none is open.
pub fn verify_connection(conn: &Connection, key: Option<&Key>) -> Result<VerifyReport> {
    verify_connection_in(conn, key, CipherScheme::SqlCipher4)
}

/// [`verify_connection`] of a file in the page format `scheme`.
pub fn verify_connection_in(
    conn: &Connection,
    key: Option<&Key>,
    scheme: CipherScheme,
) -> Result<VerifyReport> {
    let path = conn.db_filename(c"main").unwrap_or_default();
    if path.is_empty() {
        return Err(super::Error::refused(
            cipherlite_sqlite::ffi::SQLITE_MISUSE,
            "cannot verify an in-memory or temporary database",
        ));
    }
    refuse_if_replaced(conn, "verify")?;
    let began = conn.is_autocommit();
    if began {
        // A read transaction: a stable snapshot, and (rollback journal) no writer.
        conn.execute_batch("BEGIN; SELECT count(*) FROM main.sqlite_schema")?;
    }
    let result = verify_in_transaction(conn, &path, key, scheme);
    if began {
        let _ = conn.execute_batch("COMMIT");
    }
    result
}

/// Refuses `op` on `conn` when the file at its path is no longer the one it has open
/// (another connection's `encrypt` or `rekey`, or a rename, replaced it): checking the
/// path would check the new file with this connection's key (and its page 1 would not
/// authenticate, which reads as damage or a wrong key). SQLite's own test, through the
/// VFS: `SQLITE_FCNTL_HAS_MOVED`.
pub fn refuse_if_replaced(conn: &Connection, op: &str) -> Result<()> {
    let path = conn.db_filename(c"main").unwrap_or_default();
    if path.is_empty() {
        return Ok(());
    }
    let mut moved = 0;
    let asked = conn.file_control_int(
        c"main",
        cipherlite_sqlite::ffi::SQLITE_FCNTL_HAS_MOVED,
        &mut moved,
    );
    if asked.is_ok() && moved != 0 {
        return Err(super::Error::refused(
            cipherlite_sqlite::ffi::SQLITE_READONLY_DBMOVED,
            format!("cannot {op} {path}: the file {path} was replaced (encrypted, rekeyed or renamed over by another connection) since this connection opened it; open it again"),
        ));
    }
    Ok(())
}

fn verify_in_transaction(
    conn: &Connection,
    path: &str,
    key: Option<&Key>,
    scheme: CipherScheme,
) -> Result<VerifyReport> {
    let mut report = VerifyReport {
        pages: 0,
        wal_frames: 0,
        encrypted: key.is_some(),
        ok: false,
        first_bad_page: None,
        integrity: String::new(),
        content_digest: None,
    };
    let page_size = page_size_of(conn)?;
    match key {
        Some(key) => authenticate_file(path, key, scheme, page_size, &mut report)?,
        None => {
            let mut file = OsFile::open_main_db_readonly(path)?;
            report.pages = file.size()?.div_ceil(page_size as u64);
        }
    }
    report.integrity = match integrity_check(conn) {
        Ok(text) => text,
        Err(e) => e.message,
    };
    report.content_digest = digest::content_digest(conn).ok();
    report.ok = report.first_bad_page.is_none() && report.integrity == "ok";
    Ok(report)
}

fn integrity_check(conn: &Connection) -> Result<String, cipherlite_sqlite::Error> {
    let (stmt, _) = conn.prepare("PRAGMA main.integrity_check", false)?;
    let mut lines = Vec::new();
    if let Some(mut stmt) = stmt {
        while stmt.step()? {
            lines.push(String::from_utf8_lossy(stmt.column_text(0)).into_owned());
        }
    }
    Ok(lines.join("\n"))
}

/// Authenticates every page of the file (of `page_size`-byte pages) and every committed
/// frame of its WAL.
fn authenticate_file(
    path: &str,
    key: &Key,
    scheme: CipherScheme,
    page_size: usize,
    report: &mut VerifyReport,
) -> Result<()> {
    let mut file = OsFile::open_main_db_readonly(path)?;
    let size = file.size()?;
    report.pages = size.div_ceil(page_size as u64);
    let mut image = vec![0u8; page_size];
    // The salt is page 1's first 16 bytes (in clear); without a readable page 1 every
    // page fails.
    let codec = if size >= page_size as u64 {
        file.read_at(&mut image, 0)?;
        codec::read_salt(&image)
            .ok()
            .and_then(|salt| PageCodec::with_scheme(scheme, key, salt, page_size).ok())
    } else {
        None
    };
    let Some(codec) = codec else {
        if report.pages > 0 {
            report.first_bad_page = Some(1);
        }
        return Ok(());
    };
    // 4 MiB at a time, spread over the cores; stops at the first bad page.
    let per_read = pages_per_read(page_size);
    let whole_pages = size / page_size as u64;
    let mut chunk = vec![0u8; page_size * per_read as usize];
    let check = |pgno: u64, image: &mut [u8]| -> Result<(), ()> {
        if page_ok(&codec, pgno, image) {
            Ok(())
        } else {
            Err(())
        }
    };
    let mut first = 1u64;
    while first <= whole_pages && report.first_bad_page.is_none() {
        let count = per_read.min(whole_pages - first + 1);
        let bytes = &mut chunk[..(count * page_size as u64) as usize];
        if file.read_at(bytes, (first - 1) * page_size as u64).is_err() {
            report.first_bad_page = Some(first);
            break;
        }
        if let Err((pgno, ())) = super::parallel::each_page(first, bytes, page_size, &check) {
            report.first_bad_page = Some(pgno);
        }
        first += count;
    }
    if report.first_bad_page.is_none() && report.pages > whole_pages {
        report.first_bad_page = Some(report.pages); // a torn last page
    }
    authenticate_wal(&format!("{path}-wal"), &codec, report)
}

/// The frames of the WAL that SQLite's recovery keeps (the VFS's rule:
/// `vfs::committed_frames`), each authenticated as the page its frame header names; and a
/// break in the checksum chain before a later commit frame, which would drop committed
/// transactions at the next recovery, is reported as the broken frame's page.
fn authenticate_wal(wal_path: &str, codec: &PageCodec, report: &mut VerifyReport) -> Result<()> {
    let page_size = codec.page_size();
    let mut plain = zeroize::Zeroizing::new(vec![0u8; page_size]);
    let frames = cipherlite_vfs::committed_frames(Path::new(wal_path), page_size, |pgno, page| {
        let ok = codec.decrypt_page(pgno, page, &mut plain).is_ok();
        if ok {
            page.copy_from_slice(&plain);
        }
        ok
    })
    .map_err(|e| super::Error::io("read", wal_path, e))?;
    for frame in &frames.committed {
        report.wal_frames += 1;
        if !frame.authentic && report.first_bad_page.is_none() {
            report.first_bad_page = Some(u64::from(frame.pgno));
        }
    }
    // A damaged frame at or before a commit frame: recovery would drop committed work.
    if let (None, Some(pgno)) = (report.first_bad_page, frames.break_before_commit) {
        report.first_bad_page = Some(u64::from(pgno));
    }
    Ok(())
}

/// Why [`authenticate_closed_file`] failed.
#[derive(Debug)]
pub(crate) enum CopyCheckError {
    /// Reading the file failed (SQLite's code and message).
    Read(cipherlite_sqlite::Error),
    /// The file is not whole pages, or this page does not authenticate.
    BadPage(u64),
}

/// Authenticates every page of a file no connection has open (a fresh copy, of
/// `page_size`-byte pages) with `key`, 4 MiB at a time spread over the cores: `Ok(pages)`,
/// the read that failed, or the number of the first page that does not authenticate.
pub(crate) fn authenticate_closed_file(
    fs: &dyn super::fs::FileSystem,
    path: &std::path::Path,
    key: &Key,
    scheme: CipherScheme,
    page_size: usize,
) -> Result<u64, CopyCheckError> {
    use CopyCheckError::{BadPage, Read};
    let per_read = pages_per_read(page_size);
    let mut file = OsFile::open(fs.vfs(), &path.to_string_lossy(), false).map_err(Read)?;
    let size = file.size().map_err(Read)?;
    if size < page_size as u64 || size % page_size as u64 != 0 {
        return Err(BadPage(1));
    }
    let pages = size / page_size as u64;
    // Holds ciphertext only: pages are authenticated, not decrypted.
    let mut chunk = vec![0u8; page_size * per_read as usize];
    file.read_at(&mut chunk[..page_size], 0).map_err(Read)?;
    let salt = codec::read_salt(&chunk).map_err(|_| BadPage(1))?;
    let codec = PageCodec::with_scheme(scheme, key, salt, page_size).map_err(|_| BadPage(1))?;
    let check = |pgno: u64, image: &mut [u8]| -> Result<(), ()> {
        if page_ok(&codec, pgno, image) {
            Ok(())
        } else {
            Err(())
        }
    };
    let mut first = 1u64;
    let mut have_first = true; // page 1 is already in the buffer
    while first <= pages {
        let count = per_read.min(pages - first + 1);
        let bytes = &mut chunk[..(count * page_size as u64) as usize];
        let skip = if have_first { page_size } else { 0 };
        have_first = false;
        let offset = (first - 1) * page_size as u64 + skip as u64;
        if skip < bytes.len() {
            file.read_at(&mut bytes[skip..], offset).map_err(Read)?;
        }
        super::parallel::each_page(first, bytes, page_size, &check)
            .map_err(|(pgno, ())| BadPage(pgno))?;
        first += count;
    }
    Ok(pages)
}
