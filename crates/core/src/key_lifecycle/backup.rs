//! `db.backup(dest, { key, cipher })` when the pages cannot be copied as they are: a
//! plaintext database under a key, or an encrypted one into the other page format
//! (docs/aegis-format.md §7). The copy is made without writing the plaintext to any new
//! file.
//!
//! SQLite's backup API copies pages as they are, and a plaintext page has no room for
//! SQLCipher's IV and HMAC (nor an AEGIS page for SQLCipher's larger reserve), so the
//! pages must be rebuilt: `VACUUM INTO` a file opened through a keyed VFS, as `encrypt`
//! does. The user's connection was not opened with `SQLITE_OPEN_URI` and so cannot name
//! that VFS in `VACUUM INTO`; the copy is streamed from a second, read-only connection on
//! the source file — through the source connection's own keyed VFS (its key, its format)
//! for an encrypted source, never a key-less one. It sees the committed content, and
//! reads through SQLite's locks and the WAL as any reader does. Only where that connection
//! cannot read the file — an in-memory or temporary database, a source held in
//! `locking_mode=EXCLUSIVE` — is the copy made from an in-memory image of the database
//! (plaintext in memory only, wiped when dropped).

use super::{
    fs::{FileSystem, OsFileSystem},
    ops::{
        absolute, check_copy, file_uri, memory_copy, page_geometry, vacuum_into, vfs_for, TempCopy,
    },
    replace, Error, Key, Result,
};
use cipherlite_codec::CipherScheme;
use cipherlite_sqlite::{ffi, Connection, OpenFlags};
use cipherlite_vfs::{KeyedVfsHandle, NewFileLayout};
use std::ffi::CString;
use std::ops::ControlFlow;

/// Called as better-sqlite3's backup calls `progress`, with `(totalPages, remainingPages)`:
/// the source's page count, and how many of them are still to be copied (an estimate from
/// the size of the copy so far: the rebuilt copy leaves free pages out, and its pages
/// hold another reserve). Returns how many more pages to copy before the next call, or
/// `Break` to stop the copy (nothing is left of it).
pub type BackupProgress<'a> = &'a mut dyn FnMut(u64, u64) -> ControlFlow<(), u64>;

/// What [`backup_encrypted`] copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RebuiltCopy {
    /// The source database's pages (of its own page size).
    pub source_pages: u64,
    /// The pages of the copy, every one authenticated.
    pub pages_written: u64,
}

/// The database a copy is read from: the source connection's keyed VFS for an encrypted
/// one, `None` for a plaintext one.
pub type SourceVfs<'a> = Option<&'a KeyedVfsHandle>;

/// Writes an encrypted copy of database `schema` of the connection `conn` (plaintext, or
/// encrypted through `source_vfs`) to `destination` under `key`, in the page format
/// `scheme`: pages of `page_size` bytes, sqlite3mc's page-1 layout. The
/// copy is made beside `destination` (created `O_EXCL`, mode 0600, a random name; it only
/// ever holds ciphertext), every page of it authenticated, synced, given the source
/// file's read permissions at most, and renamed over `destination` (which it replaces,
/// as `backup()` does). `progress` is called before the copy starts and while it is made
/// (see [`BackupProgress`]).
pub fn backup_encrypted(
    conn: &Connection,
    schema: &str,
    destination: &str,
    (key, scheme): (&Key, CipherScheme),
    (page_size, source_vfs): (usize, SourceVfs<'_>),
    progress: BackupProgress<'_>,
) -> Result<RebuiltCopy> {
    let fs: &dyn FileSystem = &OsFileSystem;
    const OP: &str = "backup";
    let dest = absolute(destination)?;
    let schema_c = CString::new(schema)
        .map_err(|_| Error::refused(ffi::SQLITE_ERROR, "invalid database name"))?;
    let Some(source_file) = conn.db_filename(&schema_c) else {
        return Err(Error::refused(
            ffi::SQLITE_ERROR,
            format!("unknown database {schema}"),
        ));
    };
    if !source_file.is_empty() && same_file(std::path::Path::new(&source_file), &dest) {
        return Err(Error::refused(
            ffi::SQLITE_MISUSE,
            "backup() writes a copy: the destination must be another file than the database",
        ));
    }
    let mut copy = TempCopy {
        fs,
        path: replace::create_temp_beside(fs, &dest, OP)?,
        keep: false,
    };
    // Windows: the source file's owner, group and DACL (elsewhere its read bits, below).
    if !source_file.is_empty() {
        fs.copy_security(std::path::Path::new(&source_file), &copy.path)
            .map_err(|e| {
                Error::refused(
                    ffi::SQLITE_PERM,
                    format!("cannot back up to {destination}: the copy cannot be given the owner, group and access control list of the database ({e})"),
                )
            })?;
    }
    let source = open_source(conn, schema, &source_file, source_vfs)?;
    let (source_pages, source_page_size) = page_geometry(&source)?;
    let vfs = vfs_for(fs, key, scheme, NewFileLayout::Sqlite3mc, page_size)?;
    let vfs_name = vfs.name().to_string_lossy().into_owned();
    // VACUUM INTO makes pages of the size asked for here (the VFS's).
    source.execute_batch(&format!("PRAGMA main.page_size = {page_size}"))?;
    let uri = file_uri(
        &copy.path,
        &format!("vfs={vfs_name}&reserve={}", scheme.reserve()),
    )?;
    // Measured in the source's pages: the copy's bytes so far against the source's.
    let geometry = (source_pages * source_page_size as u64, source_page_size);
    let mut next_report = 0;
    let mut report = |done: u64, total: u64| {
        // The end is the caller's to report (better-sqlite3 resolves without a call).
        if done >= total || done < next_report || source_pages == 0 {
            return true;
        }
        let remaining = source_pages - done.min(source_pages);
        match progress(source_pages, remaining) {
            // A page-copy backup copies nothing in a step of 0 pages; a VACUUM INTO can't
            // wait: the next report comes after the next page.
            ControlFlow::Continue(pages) => {
                next_report = done.saturating_add(pages.max(1));
                true
            }
            ControlFlow::Break(()) => false,
        }
    };
    vacuum_into(fs, &source, &uri, &copy.path, geometry, &mut report)?;
    drop(source);
    drop(vfs);
    let pages = check_copy(fs, &copy.path, (key, scheme), page_size, destination)?;
    // Made 0600; a file source's read bits at most (its group's only when the copy
    // belongs to the same group).
    if let (Some(src), Some(mine)) = (
        fs.ownership(std::path::Path::new(&source_file))
            .ok()
            .flatten(),
        fs.ownership(&copy.path).ok().flatten(),
    ) {
        let group = if src.gid == mine.gid { 0o060 } else { 0 };
        fs.set_mode(&copy.path, src.mode & (0o606 | group))
            .map_err(|e| Error::io("set the mode of", destination, e))?;
    }
    replace::sync_file(fs, &copy.path)?;
    replace::rename_over(fs, &copy.path, &dest)?;
    copy.keep = true;
    let _ = replace::sync_dir_of(fs, &dest);
    Ok(RebuiltCopy {
        source_pages,
        pages_written: pages,
    })
}

/// Whether `dest` names the file `source` (renaming a copy over it would pull the
/// database from under its own connection).
fn same_file(source: &std::path::Path, dest: &std::path::Path) -> bool {
    match (std::fs::canonicalize(source), std::fs::canonicalize(dest)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// A connection of our own holding the source's committed content, opened with
/// `SQLITE_OPEN_URI` (see the module docs): on the file, through `source_vfs` when the
/// source is encrypted; else on an image of it in memory.
fn open_source(
    conn: &Connection,
    schema: &str,
    source_file: &str,
    source_vfs: SourceVfs<'_>,
) -> Result<Connection> {
    let flags = OpenFlags {
        readonly: true,
        must_exist: true,
        uri: true,
    };
    if !source_file.is_empty() {
        // An absolute path never starts with "file:", so it is not taken for a URI.
        let second = match source_vfs {
            Some(vfs) => {
                crate::connection_policy::open_keyed(source_file, flags, vfs).map_err(|_| ())
            }
            None => Connection::open(source_file, flags, None).map_err(|_| ()),
        }
        .and_then(|c| {
            c.busy_timeout(5000).map_err(|_| ())?;
            c.execute_batch("SELECT count(*) FROM main.sqlite_schema")
                .map_err(|_| ())?;
            Ok(c)
        });
        if let Ok(c) = second {
            return Ok(c);
        }
    }
    Ok(memory_copy(conn, schema)?.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key_lifecycle::ops::IMAGE_BYTES;

    fn images() -> u64 {
        IMAGE_BYTES.with(|n| n.get())
    }

    fn every_100(_: u64, _: u64) -> ControlFlow<(), u64> {
        ControlFlow::Continue(100)
    }

    fn plaintext_db(path: &str) -> Connection {
        let conn = Connection::open(path, OpenFlags::default(), None).expect("open");
        conn.execute_batch(
            "CREATE TABLE t(v TEXT); INSERT INTO t VALUES ('a secret row'), ('another');",
        )
        .expect("fill");
        conn
    }

    fn rows_under(path: &str, key: &Key) -> String {
        rows_in(path, key, CipherScheme::SqlCipher4)
    }

    fn rows_in(path: &str, key: &Key, scheme: CipherScheme) -> String {
        let vfs = vfs_for(&OsFileSystem, key, scheme, NewFileLayout::Sqlite3mc, 4096).expect("vfs");
        let conn =
            crate::connection_policy::open_keyed(path, OpenFlags::default(), &vfs).expect("open");
        let rows = conn
            .query_text("SELECT group_concat(v, ',') FROM t")
            .expect("read")
            .unwrap_or_default();
        drop(conn);
        rows
    }

    /// An empty directory of this process for the test `name`.
    fn fresh_dir(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("cipherlite-backup-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        dir
    }

    #[test]
    fn a_file_and_an_in_memory_database_are_copied_encrypted_and_nothing_else_is_left() {
        let dir = fresh_dir("encrypted");
        let key = [7u8; 32];
        let src = dir.join("src.db");
        let file_conn = plaintext_db(&src.to_string_lossy());
        let memory_conn = plaintext_db(":memory:");
        for (name, conn, from_image) in [
            ("from-file.db", &file_conn, false),
            ("from-memory.db", &memory_conn, true),
        ] {
            let dest = dir.join(name);
            let before = images();
            let copied = backup_encrypted(
                conn,
                "main",
                &dest.to_string_lossy(),
                (&key, CipherScheme::SqlCipher4),
                (4096, None),
                &mut every_100,
            )
            .expect("backup");
            assert!(copied.pages_written >= 2);
            // A file is streamed; only an in-memory database is copied from an image.
            assert_eq!(images() > before, from_image, "{name}");
            let bytes = std::fs::read(&dest).expect("read");
            assert!(!bytes.windows(12).any(|w| w == b"a secret row"));
            assert_eq!(
                rows_under(&dest.to_string_lossy(), &key),
                "a secret row,another"
            );
        }
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .expect("list")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["from-file.db", "from-memory.db", "src.db"]);
        // Never over the database itself.
        let e = backup_encrypted(
            &file_conn,
            "main",
            &src.to_string_lossy(),
            (&key, CipherScheme::SqlCipher4),
            (4096, None),
            &mut every_100,
        )
        .expect_err("refused");
        assert_eq!(e.code(), ffi::SQLITE_MISUSE);
        assert_eq!(
            file_conn
                .query_text("SELECT group_concat(v, ',') FROM t")
                .expect("still plaintext")
                .as_deref(),
            Some("a secret row,another")
        );
        drop(file_conn);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_encrypted_database_is_copied_into_the_other_format_under_its_own_key() {
        let dir = fresh_dir("other-format");
        let (source_key, copy_key) = ([3u8; 32], [9u8; 32]);
        for (source_scheme, copy_scheme) in [
            (CipherScheme::SqlCipher4, CipherScheme::Aegis256),
            (CipherScheme::Aegis256, CipherScheme::SqlCipher4),
        ] {
            let src = dir.join(format!("src-{source_scheme:?}.db"));
            let vfs = vfs_for(
                &OsFileSystem,
                &source_key,
                source_scheme,
                NewFileLayout::Sqlite3mc,
                4096,
            )
            .expect("vfs");
            let conn = crate::connection_policy::open_keyed(
                &src.to_string_lossy(),
                OpenFlags::default(),
                &vfs,
            )
            .expect("open");
            conn.execute_batch("CREATE TABLE t(v TEXT); INSERT INTO t VALUES ('a secret row');")
                .expect("fill");
            // A WAL source too: the committed rows still in the WAL are copied.
            let wal = source_scheme == CipherScheme::SqlCipher4;
            if wal {
                conn.execute_batch(
                    "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; \
                     INSERT INTO t VALUES ('in the WAL');",
                )
                .expect("wal");
            }
            let before = std::fs::read(&src).expect("read source");
            let dest = dir.join(format!("copy-{copy_scheme:?}.db"));
            let before_images = images();
            backup_encrypted(
                &conn,
                "main",
                &dest.to_string_lossy(),
                (&copy_key, copy_scheme),
                (4096, Some(&vfs)),
                &mut every_100,
            )
            .expect("backup");
            // Read from the file through the source's own keyed VFS, not from an image.
            assert_eq!(images(), before_images, "{source_scheme:?}");
            // Unchanged (read before the last connection closes: a WAL is checkpointed then).
            assert_eq!(std::fs::read(&src).expect("read source"), before);
            drop(conn);
            drop(vfs);
            assert_eq!(
                rows_in(&dest.to_string_lossy(), &copy_key, copy_scheme),
                if wal {
                    "a secret row,in the WAL"
                } else {
                    "a secret row"
                }
            );
            let bytes = std::fs::read(&dest).expect("read copy");
            assert_eq!(usize::from(bytes[20]), copy_scheme.reserve());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// `progress` as better-sqlite3 calls it: first with every page remaining, then as
    /// pages are written, `remainingPages` decreasing, each call after at least the pages
    /// the last one asked for; never with 0 remaining (the end is the caller's). Breaking
    /// off stops the copy, and nothing is left of it.
    #[test]
    fn progress_counts_down_the_source_pages_and_can_stop_the_copy() {
        let dir = fresh_dir("progress");
        let src = dir.join("src.db");
        let conn =
            Connection::open(&src.to_string_lossy(), OpenFlags::default(), None).expect("open");
        conn.execute_batch(
            "CREATE TABLE t(v BLOB);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
               INSERT INTO t SELECT randomblob(300) FROM n;",
        )
        .expect("fill");
        let source_pages = conn
            .query_text("PRAGMA page_count")
            .expect("count")
            .and_then(|s| s.parse::<u64>().ok())
            .expect("a number");
        let key = [5u8; 32];
        for hint in [1u64, 200] {
            let mut calls = Vec::new();
            let dest = dir.join(format!("copy-{hint}.db"));
            let copied = backup_encrypted(
                &conn,
                "main",
                &dest.to_string_lossy(),
                (&key, CipherScheme::Aegis256),
                (4096, None),
                &mut |total, remaining| {
                    calls.push((total, remaining));
                    ControlFlow::Continue(hint)
                },
            )
            .expect("backup");
            assert_eq!(copied.source_pages, source_pages);
            assert_eq!(calls.first(), Some(&(source_pages, source_pages)), "{hint}");
            assert!(calls.len() > 2, "{hint}: {calls:?}");
            assert!(calls.iter().all(|&(t, r)| t == source_pages && r > 0));
            for w in calls.windows(2) {
                assert!(w[0].1 - w[1].1 >= hint, "{hint}: {calls:?}");
            }
        }
        // Fewer reports when more pages are asked for between them.
        let mut calls = 0;
        let dest = dir.join("copy-all.db");
        backup_encrypted(
            &conn,
            "main",
            &dest.to_string_lossy(),
            (&key, CipherScheme::Aegis256),
            (4096, None),
            &mut |_, _| {
                calls += 1;
                ControlFlow::Continue(u64::from(u32::MAX))
            },
        )
        .expect("backup");
        assert_eq!(calls, 1);
        // Stopped at the third report: an error, and no file is left of the copy.
        let mut calls = 0;
        let stopped = dir.join("stopped.db");
        let e = backup_encrypted(
            &conn,
            "main",
            &stopped.to_string_lossy(),
            (&key, CipherScheme::Aegis256),
            (4096, None),
            &mut |_, _| {
                calls += 1;
                if calls == 3 {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(1)
                }
            },
        )
        .expect_err("stopped");
        assert_eq!(e.code(), ffi::SQLITE_INTERRUPT);
        assert_eq!(calls, 3);
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .expect("list")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names, ["copy-1.db", "copy-200.db", "copy-all.db", "src.db"]);
        drop(conn);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A source its own connection holds in `locking_mode=EXCLUSIVE` can't be read by a
    /// second connection: the copy is made from an image in memory (the fallback), and it
    /// holds the committed content.
    #[test]
    fn a_source_held_exclusively_is_copied_from_its_image() {
        let dir = fresh_dir("exclusive");
        let src = dir.join("src.db");
        let conn = plaintext_db(&src.to_string_lossy());
        conn.execute_batch("PRAGMA locking_mode = EXCLUSIVE; INSERT INTO t VALUES ('locked');")
            .expect("hold the lock");
        let key = [6u8; 32];
        let dest = dir.join("copy.db");
        let before = images();
        backup_encrypted(
            &conn,
            "main",
            &dest.to_string_lossy(),
            (&key, CipherScheme::SqlCipher4),
            (4096, None),
            &mut every_100,
        )
        .expect("backup");
        assert!(images() > before, "copied from an image");
        assert_eq!(
            rows_under(&dest.to_string_lossy(), &key),
            "a secret row,another,locked"
        );
        drop(conn);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
