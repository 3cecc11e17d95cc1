//! The key lifecycle through real files: plaintext → encrypt → rekey → decrypt, with the
//! content digest unchanged at every step, and the refusals that change nothing.

use super::*;
use crate::test_support::Dir;
use cipherlite_sqlite::{ffi, Connection, OpenFlags};
use cipherlite_vfs::{KeyedVfsHandle, NewFileLayout};
use std::path::Path;

const KEY_A: Key = [0xa1; 32];
const KEY_B: Key = [0xb2; 32];

const CONTENT: &str = "
    PRAGMA user_version = 7;
    CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c BLOB, d REAL);
    CREATE TABLE k(x TEXT PRIMARY KEY, y) WITHOUT ROWID;
    CREATE TABLE r(v);
    CREATE INDEX t_b ON t(b);
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
      INSERT INTO t SELECT i, 'row ' || i, randomblob(i % 300), i / 7.0 FROM n;
    INSERT INTO k SELECT b, a FROM t WHERE a % 3 = 0;
    INSERT INTO r SELECT a * 2 FROM t WHERE a % 5 = 0;
    DELETE FROM r WHERE v % 4 = 0;
";

fn plain(path: &str) -> Connection {
    Connection::open(path, OpenFlags::default(), None).expect("open plaintext")
}

/// A connection through a keyed VFS; the VFS must outlive it (returned first: dropped
/// last).
fn keyed(path: &str, key: &Key) -> (KeyedVfsHandle, Connection) {
    keyed_with(path, key, 4096)
}

/// [`keyed`] for a database of `page_size`-byte pages (SQLCipher's cipher_page_size).
fn keyed_with(path: &str, key: &Key, page_size: usize) -> (KeyedVfsHandle, Connection) {
    let vfs = KeyedVfsHandle::register_with(
        &cipherlite_vfs::VfsKey::Raw(key),
        NewFileLayout::Sqlite3mc,
        page_size,
        None,
    )
    .expect("vfs");
    let conn =
        crate::connection_policy::open_keyed(path, OpenFlags::default(), &vfs).expect("open");
    (vfs, conn)
}

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_text(sql)
        .expect("query")
        .and_then(|s| s.parse().ok())
        .expect("a number")
}

fn make_plain(path: &str, wal: bool) -> String {
    let c = plain(path);
    if wal {
        c.execute_batch("PRAGMA journal_mode = WAL").expect("wal");
    }
    c.execute_batch(CONTENT).expect("content");
    let d = content_digest(&c).expect("digest");
    drop(c);
    d
}

/// Opens `db` with `key` in pages of `page_size` bytes and checks what a finished operation
/// must leave: that page size, every page authenticated, the content digest `before`, and
/// the journal mode (WAL or DELETE) it had.
fn assert_verifies(db: &str, key: &Key, page_size: usize, before: &str, wal: bool) {
    let (vfs, conn) = keyed_with(db, key, page_size);
    assert_eq!(count(&conn, "PRAGMA page_size"), page_size as i64);
    let report = verify_connection(&conn, Some(key)).expect("verify");
    assert!(report.ok, "{page_size}: {report:?}");
    assert_eq!(report.content_digest.as_deref(), Some(before));
    assert_eq!(
        conn.query_text("PRAGMA journal_mode").unwrap().unwrap(),
        if wal { "wal" } else { "delete" }
    );
    drop(conn);
    drop(vfs);
}

fn no_progress() -> impl FnMut(u64, u64) {
    |_, _| {}
}

/// Every step of the lifecycle at the page sizes SQLCipher's `cipher_page_size` allows
/// besides 4096: the file keeps its page size throughout, `verify` counts and checks
/// pages of that size (a sound file is ok, a flipped bit names its page), and the
/// plaintext copy has pages of that size too.
#[test]
fn the_lifecycle_keeps_other_page_sizes() {
    for (page_size, wal) in [(1024usize, false), (8192, true), (65536, false)] {
        let dir = Dir::new("pagesize");
        let db = dir.file("app.db");
        let before = make_plain(&db, wal);
        encrypt_file(
            &db,
            &KEY_A,
            NewFileLayout::SqlCipher,
            page_size,
            &mut no_progress(),
        )
        .expect("encrypt");
        let size = std::fs::metadata(&db).unwrap().len();
        assert_eq!(size % page_size as u64, 0, "{page_size}");
        // The default page size doesn't open it: the pages are of the size asked for.
        let v = KeyedVfsHandle::register(&KEY_A, NewFileLayout::Sqlite3mc).expect("vfs");
        let err = Connection::open(&db, OpenFlags::default(), Some(v.name())).unwrap_err();
        assert_eq!(err.code, ffi::SQLITE_NOTADB, "{page_size}");
        drop(v);

        let (vfs, conn) = keyed_with(&db, &KEY_A, page_size);
        assert_eq!(count(&conn, "PRAGMA page_size"), page_size as i64);
        let report = verify_connection(&conn, Some(&KEY_A)).expect("verify");
        assert!(report.ok, "{page_size}: {report:?}");
        assert_eq!(report.pages, size / page_size as u64);
        assert_eq!(report.content_digest.as_deref(), Some(before.as_str()));
        rekey_connection(
            &conn,
            &KEY_A,
            &KEY_B,
            RekeyOptions::default(),
            &mut no_progress(),
        )
        .expect("rekey");
        drop(conn);
        drop(vfs);

        assert_verifies(&db, &KEY_B, page_size, &before, wal);

        // A flipped bit in page 3 is reported as page 3.
        let mut bytes = std::fs::read(&db).unwrap();
        bytes[2 * page_size + 40] ^= 1;
        std::fs::write(&db, &bytes).unwrap();
        let (vfs, conn) = keyed_with(&db, &KEY_B, page_size);
        let report = verify_connection(&conn, Some(&KEY_B)).expect("verify");
        assert_eq!(report.first_bad_page, Some(3), "{page_size}: {report:?}");
        assert!(!report.ok);
        drop(conn);
        drop(vfs);
        bytes[2 * page_size + 40] ^= 1;
        std::fs::write(&db, &bytes).unwrap();

        let out = dir.file("plain.db");
        decrypt_file(&db, &KEY_B, page_size, &out, &mut no_progress()).expect("decrypt");
        let c = plain(&out);
        assert_eq!(count(&c, "PRAGMA page_size"), page_size as i64);
        assert_eq!(content_digest(&c).unwrap(), before);
    }
}

#[test]
fn encrypt_rekey_decrypt_keep_the_content_digest() {
    for wal in [false, true] {
        let dir = Dir::new("cycle");
        let db = dir.file("app.db");
        let before = make_plain(&db, wal);

        let mut seen = Vec::new();
        let mut progress = |done, total| seen.push((done, total));
        encrypt_file(&db, &KEY_A, NewFileLayout::Sqlite3mc, 4096, &mut progress).expect("encrypt");
        assert!(
            seen.last().is_some_and(|&(d, t)| d == t && t > 10),
            "{seen:?}"
        );
        let bytes = std::fs::read(&db).expect("read");
        assert_ne!(&bytes[..16], b"SQLite format 3\0", "no longer plaintext");
        assert_eq!(dir.names(), vec!["app.db".to_string()], "no leftovers");

        let (vfs, conn) = keyed(&db, &KEY_A);
        let report = verify_connection(&conn, Some(&KEY_A)).expect("verify");
        assert!(report.ok, "{report:?}");
        assert_eq!(report.first_bad_page, None);
        assert_eq!(report.integrity, "ok");
        assert_eq!(report.content_digest.as_deref(), Some(before.as_str()));
        assert_eq!(
            conn.query_text("PRAGMA journal_mode").unwrap().unwrap(),
            if wal { "wal" } else { "delete" }
        );

        rekey_connection(
            &conn,
            &KEY_A,
            &KEY_B,
            RekeyOptions::default(),
            &mut no_progress(),
        )
        .expect("rekey");
        drop(conn);
        drop(vfs);
        // The old key no longer opens it; the new one does, with the same content.
        let v = KeyedVfsHandle::register(&KEY_A, NewFileLayout::Sqlite3mc).expect("vfs");
        let err = Connection::open(&db, OpenFlags::default(), Some(v.name())).unwrap_err();
        assert_eq!(err.code, ffi::SQLITE_NOTADB);
        drop(v);
        let (v, conn) = keyed(&db, &KEY_B);
        let report = verify_connection(&conn, Some(&KEY_B)).expect("verify");
        assert!(report.ok, "{report:?}");
        assert_eq!(report.content_digest.as_deref(), Some(before.as_str()));
        drop(conn);
        drop(v);

        let out = dir.file("plain.db");
        decrypt_file(&db, &KEY_B, 4096, &out, &mut no_progress()).expect("decrypt");
        let c = plain(&out);
        assert_eq!(content_digest(&c).unwrap(), before);
        assert_eq!(count(&c, "SELECT count(*) FROM t"), 3000);
        // A plaintext better-sqlite3-style file: no reserved bytes.
        let head = std::fs::read(&out).unwrap();
        assert_eq!(&head[..16], b"SQLite format 3\0");
        assert_eq!(head[20], 0, "reserve byte");
        let r = verify_connection(&c, None).unwrap();
        assert!(r.ok && !r.encrypted, "{r:?}");
    }
}

#[test]
fn the_digest_sees_any_change_of_content() {
    let dir = Dir::new("digest");
    let db = dir.file("d.db");
    let before = make_plain(&db, false);
    let c = plain(&db);
    assert_eq!(content_digest(&c).unwrap(), before, "stable");
    c.execute_batch("UPDATE t SET d = d + 1e-9 WHERE a = 1234")
        .unwrap();
    let changed = content_digest(&c).unwrap();
    assert_ne!(changed, before);
    c.execute_batch("UPDATE t SET d = d - 1e-9 WHERE a = 1234")
        .unwrap();
    // Floating point may not round-trip; restore exactly instead.
    c.execute_batch("UPDATE t SET d = 1234 / 7.0 WHERE a = 1234")
        .unwrap();
    assert_eq!(
        content_digest(&c).unwrap(),
        before,
        "back to the same content"
    );
    c.execute_batch("PRAGMA user_version = 8").unwrap();
    assert_ne!(content_digest(&c).unwrap(), before, "header values count");
    c.execute_batch("PRAGMA user_version = 7").unwrap();
    // VACUUM INTO (what encrypt and decrypt run) keeps every rowid.
    let copy = dir.file("copy.db");
    c.execute_batch(&format!("VACUUM INTO '{copy}'")).unwrap();
    assert_eq!(
        content_digest(&plain(&copy)).unwrap(),
        before,
        "VACUUM INTO keeps the content"
    );
    // Plain VACUUM renumbers the rowids of a table without INTEGER PRIMARY KEY or index
    // (SQLite documents it): the rows are not the same, and the digest says so.
    c.execute_batch("VACUUM").unwrap();
    assert_ne!(
        content_digest(&c).unwrap(),
        before,
        "rowids of r were renumbered"
    );
}

#[test]
fn verify_finds_the_first_tampered_page_and_wal_frame() {
    let dir = Dir::new("tamper");
    let db = dir.file("t.db");
    make_plain(&db, false);
    encrypt_file(
        &db,
        &KEY_A,
        NewFileLayout::SqlCipher,
        4096,
        &mut no_progress(),
    )
    .unwrap();
    let mut bytes = std::fs::read(&db).unwrap();
    let pages = bytes.len() / 4096;
    bytes[4096 * 6 + 100] ^= 1; // page 7
    std::fs::write(&db, &bytes).unwrap();
    let (v, conn) = keyed(&db, &KEY_A);
    let r = verify_connection(&conn, Some(&KEY_A)).unwrap();
    assert!(!r.ok);
    assert_eq!(r.first_bad_page, Some(7));
    assert_eq!(r.pages, pages as u64);
    drop(conn);
    drop(v);

    bytes[4096 * 6 + 100] ^= 1;
    std::fs::write(&db, &bytes).unwrap();
    let (v, conn) = keyed(&db, &KEY_A);
    conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; UPDATE t SET b = 'x' WHERE a < 50")
        .unwrap();
    let r = verify_connection(&conn, Some(&KEY_A)).unwrap();
    assert!(r.ok, "{r:?}");
    assert!(r.wal_frames > 0);
    // Flip a byte in the first frame's page image.
    let wal = format!("{db}-wal");
    let mut w = std::fs::read(&wal).unwrap();
    let pgno = u32::from_be_bytes([w[32], w[33], w[34], w[35]]);
    w[32 + 24 + 200] ^= 1;
    std::fs::write(&wal, &w).unwrap();
    let r = verify_connection(&conn, Some(&KEY_A)).unwrap();
    assert!(!r.ok);
    assert_eq!(r.first_bad_page, Some(u64::from(pgno)));
    drop(conn);
    drop(v);
}

#[test]
fn refusals_change_nothing() {
    let dir = Dir::new("refuse");
    let db = dir.file("r.db");
    make_plain(&db, true);
    let original = std::fs::read(&db).unwrap();

    // Another connection has it open in WAL mode.
    let other = plain(&db);
    other.execute_batch("SELECT count(*) FROM t").unwrap();
    let err = encrypt_file(
        &db,
        &KEY_A,
        NewFileLayout::Sqlite3mc,
        4096,
        &mut no_progress(),
    )
    .unwrap_err();
    assert_eq!(err.code(), ffi::SQLITE_BUSY, "{err}");
    assert!(err.to_string().contains("another connection"), "{err}");
    drop(other);
    assert_eq!(std::fs::read(&db).unwrap(), original);

    // Missing file.
    let err = encrypt_file(
        &dir.file("none.db"),
        &KEY_A,
        NewFileLayout::Sqlite3mc,
        4096,
        &mut no_progress(),
    )
    .unwrap_err();
    assert_eq!(err.code(), ffi::SQLITE_CANTOPEN);
    assert!(err.to_string().contains("none.db"), "{err}");

    encrypt_file(
        &db,
        &KEY_A,
        NewFileLayout::Sqlite3mc,
        4096,
        &mut no_progress(),
    )
    .unwrap();
    let encrypted = std::fs::read(&db).unwrap();
    // Already encrypted.
    let err = encrypt_file(
        &db,
        &KEY_B,
        NewFileLayout::Sqlite3mc,
        4096,
        &mut no_progress(),
    )
    .unwrap_err();
    assert_eq!(err.code(), ffi::SQLITE_NOTADB);
    assert!(err.to_string().contains("encrypted already"), "{err}");
    // Wrong key for decrypt.
    let out = dir.file("out.db");
    let err = decrypt_file(&db, &KEY_B, 4096, &out, &mut no_progress()).unwrap_err();
    assert_eq!(err.code(), ffi::SQLITE_NOTADB, "{err}");
    assert!(!Path::new(&out).exists());
    // Decrypt never overwrites.
    std::fs::write(&out, b"precious").unwrap();
    let err = decrypt_file(&db, &KEY_A, 4096, &out, &mut no_progress()).unwrap_err();
    assert_eq!(err.code(), ffi::SQLITE_CANTOPEN);
    assert_eq!(std::fs::read(&out).unwrap(), b"precious");
    let err = decrypt_file(&db, &KEY_A, 4096, &db, &mut no_progress()).unwrap_err();
    assert_eq!(err.code(), ffi::SQLITE_MISUSE);
    assert_eq!(std::fs::read(&db).unwrap(), encrypted);

    // Rekey inside a transaction, or with another reader.
    let (v, conn) = keyed(&db, &KEY_A);
    conn.execute_batch("BEGIN; SELECT 1 FROM t").unwrap();
    let err = rekey_connection(
        &conn,
        &KEY_A,
        &KEY_B,
        RekeyOptions::default(),
        &mut no_progress(),
    )
    .unwrap_err();
    assert_eq!(err.code(), ffi::SQLITE_MISUSE);
    conn.execute_batch("COMMIT").unwrap();
    let (v2, reader) = keyed(&db, &KEY_A);
    reader.execute_batch("SELECT count(*) FROM t").unwrap();
    let err = rekey_connection(
        &conn,
        &KEY_A,
        &KEY_B,
        RekeyOptions::default(),
        &mut no_progress(),
    )
    .unwrap_err();
    assert_eq!(err.code(), ffi::SQLITE_BUSY, "{err}");
    drop(reader);
    drop(v2);
    // conn still works, in WAL mode again.
    assert_eq!(count(&conn, "SELECT count(*) FROM t"), 3000);
    assert_eq!(
        conn.query_text("PRAGMA journal_mode").unwrap().unwrap(),
        "wal"
    );
    conn.execute_batch("INSERT INTO r VALUES (1)").unwrap();
    drop(conn);
    drop(v);
    assert_eq!(dir.names(), vec!["out.db".to_string(), "r.db".to_string()]);
}

#[test]
fn the_unused_lock_page_of_a_file_over_1_gib_is_not_a_bad_page() {
    // Zeros are accepted on the lock page only (262145 with 4096-byte pages): a file
    // grown with zeros up to and including it fails at its first zero page, not there.
    let dir = Dir::new("lockpage");
    let db = dir.file("big.db");
    make_plain(&db, false);
    encrypt_file(
        &db,
        &KEY_A,
        NewFileLayout::Sqlite3mc,
        4096,
        &mut no_progress(),
    )
    .unwrap();
    let pages = std::fs::metadata(&db).unwrap().len() / 4096;
    let lock_page = 0x4000_0000u64 / 4096 + 1;
    assert!(super::verify::is_lock_page(lock_page, 4096));
    assert!(!super::verify::is_lock_page(lock_page - 1, 4096));
    let f = std::fs::OpenOptions::new().write(true).open(&db).unwrap();
    f.set_len(lock_page * 4096).unwrap();
    drop(f);
    let err = super::verify::authenticate_closed_file(
        &super::fs::OsFileSystem,
        Path::new(&db),
        &KEY_A,
        CipherScheme::SqlCipher4,
        4096,
    )
    .unwrap_err();
    assert!(
        matches!(err, super::verify::CopyCheckError::BadPage(p) if p == pages + 1),
        "the first zero page that is not the lock page: {err:?}"
    );
    // The rule itself, page by page: zeros pass on the lock page only; a real image
    // for that page number passes too.
    let codec = cipherlite_codec::PageCodec::new(&KEY_A, [9; 16], 4096).unwrap();
    let zeros = vec![0u8; 4096];
    assert!(super::verify::page_ok(&codec, lock_page, &zeros));
    assert!(!super::verify::page_ok(&codec, lock_page + 1, &zeros));
    let mut image = vec![0u8; 4096];
    let content = vec![0x5a; 4096];
    codec
        .encrypt_page(
            lock_page as u32,
            cipherlite_codec::Page1Layout::Sqlite3mc,
            &content,
            &mut image,
        )
        .unwrap();
    assert!(super::verify::page_ok(&codec, lock_page, &image));
    assert!(!super::verify::page_ok(&codec, lock_page + 1, &image));
}

#[cfg(unix)]
#[test]
fn encrypt_through_a_symlink_replaces_the_file_it_points_to() {
    let dir = Dir::new("symlink");
    std::fs::create_dir(dir.0.join("data")).unwrap();
    let real = dir.file("data/real.db");
    let digest = make_plain(&real, false);
    let link = dir.file("link.db");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    encrypt_file(
        &link,
        &KEY_A,
        NewFileLayout::Sqlite3mc,
        4096,
        &mut no_progress(),
    )
    .unwrap();
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let bytes = std::fs::read(&real).unwrap();
    assert_ne!(
        &bytes[..16],
        b"SQLite format 3\0",
        "the real file is encrypted"
    );
    let (v, conn) = keyed(&link, &KEY_A);
    assert_eq!(content_digest(&conn).unwrap(), digest);
    drop(conn);
    drop(v);
}

/// After a crash the WAL may end in a torn frame: recovery drops it (its checksum fails),
/// so it is no damage to report. A torn frame before a later commit frame of the same WAL
/// is: recovery would drop a committed transaction with it.
#[test]
fn verify_follows_recovery_over_a_torn_wal_tail() {
    let dir = Dir::new("torn-tail");
    let db = dir.file("w.db");
    make_plain(&db, false);
    encrypt_file(
        &db,
        &KEY_A,
        NewFileLayout::Sqlite3mc,
        4096,
        &mut no_progress(),
    )
    .unwrap();
    let (v, conn) = keyed(&db, &KEY_A);
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
         UPDATE t SET b = 'first' WHERE a < 20; UPDATE t SET b = 'second' WHERE a < 10",
    )
    .unwrap();
    // The files as a crash would leave them: copied while the connection is open.
    let crashed = dir.file("crashed.db");
    std::fs::copy(&db, &crashed).unwrap();
    let wal = std::fs::read(format!("{db}-wal")).unwrap();
    drop(conn);
    drop(v);
    let frame = 24 + 4096;
    let frames = (wal.len() - 32) / frame;
    assert!(frames >= 2, "{frames}");
    let is_commit = |w: &[u8], i: usize| w[32 + i * frame + 4..32 + i * frame + 8] != [0; 4];
    assert!(is_commit(&wal, frames - 1));

    // The last frame cut short (a crash while appending it): recovery keeps the first
    // transaction; verify is ok.
    let torn_tail = &wal[..wal.len() - 1000];
    std::fs::write(format!("{crashed}-wal"), torn_tail).unwrap();
    let (v, conn) = keyed(&crashed, &KEY_A);
    let r = verify_connection(&conn, Some(&KEY_A)).unwrap();
    assert!(r.ok, "{r:?}");
    assert!(r.wal_frames < frames as u64, "{r:?}");
    assert_eq!(count(&conn, "SELECT count(*) FROM t WHERE b = 'second'"), 0);
    drop(conn);
    drop(v);

    // The data of the last transaction's commit frame damaged, the frame whole: recovery
    // would drop a committed transaction; reported as that frame's page.
    std::fs::copy(&db, &crashed).unwrap();
    let mut damaged_last = wal.clone();
    let last = 32 + (frames - 1) * frame;
    damaged_last[last + 24 + 300] ^= 0x40;
    let last_pgno = u32::from_be_bytes([wal[last], wal[last + 1], wal[last + 2], wal[last + 3]]);
    std::fs::write(format!("{crashed}-wal"), &damaged_last).unwrap();
    let (v, conn) = keyed(&crashed, &KEY_A);
    let r = verify_connection(&conn, Some(&KEY_A)).unwrap();
    assert!(!r.ok, "{r:?}");
    assert_eq!(r.first_bad_page, Some(u64::from(last_pgno)), "{r:?}");
    drop(conn);
    drop(v);

    // The first frame torn, a commit frame after it: reported as that frame's page.
    std::fs::copy(&db, &crashed).unwrap();
    let mut torn_first = wal.clone();
    torn_first[32 + 24 + 300] ^= 0x40;
    let pgno = u32::from_be_bytes([wal[32], wal[33], wal[34], wal[35]]);
    std::fs::write(format!("{crashed}-wal"), &torn_first).unwrap();
    let (v, conn) = keyed(&crashed, &KEY_A);
    let r = verify_connection(&conn, Some(&KEY_A)).unwrap();
    assert!(!r.ok, "{r:?}");
    assert_eq!(r.first_bad_page, Some(u64::from(pgno)));
    drop(conn);
    drop(v);
}

/// The operating system's file system as Windows behaves for the key lifecycle: a file
/// can't be renamed over while open, so the operation's connection lets go of it first.
/// `peer` plays another process holding the file open; `replace_released` checks the
/// head as Windows' does.
struct ClosesBeforeRename {
    peer: std::cell::Cell<bool>,
}

impl fs::FileSystem for ClosesBeforeRename {
    fn vfs(&self) -> Option<&std::ffi::CStr> {
        None
    }
    fn create_new(&self, path: &Path) -> std::io::Result<()> {
        fs::OsFileSystem.create_new(path)
    }
    fn remove(&self, path: &Path) -> std::io::Result<()> {
        fs::OsFileSystem.remove(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        fs::OsFileSystem.rename(from, to)
    }
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        fs::OsFileSystem.sync_dir(dir)
    }
    fn list_dir(&self, dir: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
        fs::OsFileSystem.list_dir(dir)
    }
    fn file_len(&self, path: &Path) -> std::io::Result<u64> {
        fs::OsFileSystem.file_len(path)
    }
    fn canonicalize(&self, path: &Path) -> std::io::Result<std::path::PathBuf> {
        fs::OsFileSystem.canonicalize(path)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        fs::OsFileSystem.hard_link(from, to)
    }
    fn renames_over_open_files(&self) -> bool {
        false
    }
    fn replace_released(
        &self,
        from: &Path,
        to: &Path,
        head: Option<&[u8; 100]>,
    ) -> std::io::Result<()> {
        if self.peer.get() {
            return Err(std::io::ErrorKind::ResourceBusy.into());
        }
        let now = std::fs::read(to)?;
        if head.is_some_and(|h| now.get(..100) != Some(&h[..])) {
            return Err(std::io::ErrorKind::InvalidData.into());
        }
        self.rename(from, to)
    }
}

/// The Windows sequence (the connection closes its handles, then the rename): encrypt and
/// rekey give the same files; the rekeyed connection has let go of its file; a peer
/// holding the file open refuses the rename and changes nothing.
#[test]
fn closing_before_the_rename_encrypts_and_rekeys_and_a_peer_changes_nothing() {
    let dir = Dir::new("close-before-rename");
    let db = dir.file("app.db");
    let before = make_plain(&db, false);
    let fs = ClosesBeforeRename {
        peer: std::cell::Cell::new(false),
    };
    encrypt_file_on(
        &fs,
        &db,
        (&KEY_A, CipherScheme::SqlCipher4),
        NewFileLayout::Sqlite3mc,
        4096,
        &mut no_progress(),
    )
    .expect("encrypt");
    assert_eq!(dir.names(), vec!["app.db".to_string()], "no leftovers");

    // A peer has the file open: refused after the connection let go of it.
    let (vfs, conn) = keyed(&db, &KEY_A);
    assert_eq!(count(&conn, "SELECT count(*) FROM t"), 3000);
    fs.peer.set(true);
    let e = rekey_connection_on(
        &fs,
        &conn,
        &KEY_A,
        &KEY_B,
        RekeyOptions::default(),
        &mut no_progress(),
    )
    .expect_err("a peer has it open");
    assert_eq!(e.code(), ffi::SQLITE_BUSY);
    assert!(e.to_string().contains("the file is open elsewhere"), "{e}");
    assert!(e.to_string().contains("is unchanged"), "{e}");
    assert!(connection_released(&conn), "it let go of the file");
    drop(conn);
    drop(vfs);
    assert_eq!(dir.names(), vec!["app.db".to_string()], "no leftovers");

    // The file unchanged, under KEY_A; the rekey without the peer.
    fs.peer.set(false);
    let (vfs, conn) = keyed(&db, &KEY_A);
    assert_eq!(content_digest(&conn).expect("digest"), before);
    rekey_connection_on(
        &fs,
        &conn,
        &KEY_A,
        &KEY_B,
        RekeyOptions::default(),
        &mut no_progress(),
    )
    .expect("rekey");
    assert!(connection_released(&conn));
    drop(conn);
    drop(vfs);
    assert_eq!(dir.names(), vec!["app.db".to_string()], "no leftovers");
    let (v, conn) = keyed(&db, &KEY_B);
    let report = verify_connection(&conn, Some(&KEY_B)).expect("verify");
    assert!(report.ok, "{report:?}");
    assert_eq!(report.content_digest.as_deref(), Some(before.as_str()));
    drop(conn);
    drop(v);
}

/// A rekey into the other page format streams the database from the file (a second,
/// keyed connection reading under the rekey's exclusive lock): no image of it is made in
/// memory, at any page size, in either direction, from a WAL database too. Progress goes
/// from 0 to the whole; the digest is kept.
#[test]
fn a_rekey_into_the_other_format_streams_from_the_file() {
    for (page_size, wal) in [(4096usize, true), (1024, false)] {
        let dir = Dir::new("rekey-stream");
        let db = dir.file("app.db");
        let before = make_plain(&db, wal);
        encrypt_file(
            &db,
            &KEY_A,
            NewFileLayout::Sqlite3mc,
            page_size,
            &mut no_progress(),
        )
        .expect("encrypt");
        let (vfs, conn) = keyed_with(&db, &KEY_A, page_size);
        let images = ops::IMAGE_BYTES.with(|n| n.get());
        let mut reports = Vec::new();
        rekey_connection(
            &conn,
            &KEY_A,
            &KEY_B,
            RekeyOptions {
                new_scheme: Some(CipherScheme::Aegis256),
                ..RekeyOptions::default()
            },
            &mut |done, total| reports.push((done, total)),
        )
        .expect("rekey");
        assert_eq!(
            ops::IMAGE_BYTES.with(|n| n.get()),
            images,
            "{page_size}: no image in memory"
        );
        drop(conn);
        drop(vfs);
        let total = reports.last().expect("reports").1;
        assert!(total > 1, "{reports:?}");
        assert_eq!(reports.first(), Some(&(0, total)));
        assert_eq!(reports.last(), Some(&(total, total)));
        assert!(reports.windows(2).all(|w| w[0].0 <= w[1].0), "{reports:?}");

        let aegis = ops::vfs_for(
            &fs::OsFileSystem,
            &KEY_B,
            CipherScheme::Aegis256,
            NewFileLayout::Sqlite3mc,
            page_size,
        )
        .expect("vfs");
        let conn =
            crate::connection_policy::open_keyed(&db, OpenFlags::default(), &aegis).expect("open");
        let report =
            verify_connection_in(&conn, Some(&KEY_B), CipherScheme::Aegis256).expect("verify");
        assert!(report.ok, "{page_size}: {report:?}");
        assert_eq!(report.content_digest.as_deref(), Some(before.as_str()));
        // And back, from the AEGIS file.
        let images = ops::IMAGE_BYTES.with(|n| n.get());
        rekey_connection(
            &conn,
            &KEY_B,
            &KEY_A,
            RekeyOptions {
                scheme: CipherScheme::Aegis256,
                new_scheme: Some(CipherScheme::SqlCipher4),
                ..RekeyOptions::default()
            },
            &mut no_progress(),
        )
        .expect("rekey back");
        assert_eq!(ops::IMAGE_BYTES.with(|n| n.get()), images);
        drop(conn);
        drop(aegis);
        assert_verifies(&db, &KEY_A, page_size, &before, wal);
    }
}
