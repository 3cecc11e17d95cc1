//! `db.backup(dest, { key, cipher })` when the pages cannot be copied as they are: a
//! plaintext database under a key, or an encrypted one into the other page format
//! (docs/aegis-format.md §7). The copy is made without writing the plaintext to any new
//! file.
//!
//! SQLite's backup API copies pages as they are, and a plaintext page has no room for
//! SQLCipher's IV and HMAC (nor an AEGIS page for SQLCipher's larger reserve), so the
//! pages must be rebuilt: `VACUUM INTO` a file opened through a keyed VFS, as `encrypt`
//! does. The user's connection was not opened with `SQLITE_OPEN_URI` and so cannot name
//! that VFS in `VACUUM INTO`; the copy of a plaintext file is made from a second,
//! read-only connection on the source file, or (an in-memory database, or a source that
//! connection cannot read, e.g. one held in `locking_mode=EXCLUSIVE`) from an in-memory
//! image of the database. An encrypted source is always copied from that image (as the
//! cross-format rekey is): a key-less second connection must not open its files. Either
//! way the copy sees the committed content.

use super::{
    fs::{FileSystem, OsFileSystem},
    ops::{absolute, check_copy, file_uri, memory_copy, vacuum_into, vfs_for, TempCopy},
    replace, Error, Key, Progress, Result,
};
use cipherlite_codec::CipherScheme;
use cipherlite_sqlite::{ffi, Connection, OpenFlags};
use cipherlite_vfs::NewFileLayout;
use std::ffi::CString;

/// Writes an encrypted copy of database `schema` of the connection `conn` (plaintext, or
/// encrypted when `source_keyed`) to `destination` under `key`, in the page format
/// `scheme`: pages of `page_size` bytes, sqlite3mc's page-1 layout. The
/// copy is made beside `destination` (created `O_EXCL`, mode 0600, a random name; it only
/// ever holds ciphertext), every page of it authenticated, synced, given the source
/// file's read permissions at most, and renamed over `destination` (which it replaces,
/// as `backup()` does). Returns the number of pages written.
pub fn backup_encrypted(
    conn: &Connection,
    schema: &str,
    destination: &str,
    (key, scheme): (&Key, CipherScheme),
    (page_size, source_keyed): (usize, bool),
    progress: Progress<'_>,
) -> Result<u64> {
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
    let (source, size) = if source_keyed {
        memory_copy(conn, schema)?
    } else {
        let size = if source_file.is_empty() {
            0
        } else {
            fs.file_len(std::path::Path::new(&source_file)).unwrap_or(0)
        };
        (open_source(conn, schema, &source_file)?, size)
    };
    let vfs = vfs_for(fs, key, scheme, NewFileLayout::Sqlite3mc, page_size)?;
    let vfs_name = vfs.name().to_string_lossy().into_owned();
    // VACUUM INTO makes pages of the size asked for here (the VFS's).
    source.execute_batch(&format!("PRAGMA main.page_size = {page_size}"))?;
    let uri = file_uri(
        &copy.path,
        &format!("vfs={vfs_name}&reserve={}", scheme.reserve()),
    )?;
    vacuum_into(fs, &source, &uri, &copy.path, (size, page_size), progress)?;
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
    Ok(pages)
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
/// `SQLITE_OPEN_URI` (see the module docs).
fn open_source(conn: &Connection, schema: &str, source_file: &str) -> Result<Connection> {
    let flags = OpenFlags {
        readonly: true,
        must_exist: true,
        uri: true,
    };
    if !source_file.is_empty() {
        // An absolute path never starts with "file:", so it is not taken for a URI.
        let second = Connection::open(source_file, flags, None).and_then(|c| {
            c.busy_timeout(5000)?;
            c.execute_batch("SELECT count(*) FROM main.sqlite_schema")?;
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

    #[test]
    fn a_file_and_an_in_memory_database_are_copied_encrypted_and_nothing_else_is_left() {
        let dir = std::env::temp_dir().join(format!(
            "cipherlite-backup-encrypted-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let key = [7u8; 32];
        let src = dir.join("src.db");
        let file_conn = plaintext_db(&src.to_string_lossy());
        let memory_conn = plaintext_db(":memory:");
        for (name, conn) in [
            ("from-file.db", &file_conn),
            ("from-memory.db", &memory_conn),
        ] {
            let dest = dir.join(name);
            let pages = backup_encrypted(
                conn,
                "main",
                &dest.to_string_lossy(),
                (&key, CipherScheme::SqlCipher4),
                (4096, false),
                &mut |_, _| {},
            )
            .expect("backup");
            assert!(pages >= 2);
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
            (4096, false),
            &mut |_, _| {},
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
        let dir = std::env::temp_dir().join(format!(
            "cipherlite-backup-other-format-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
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
            let before = std::fs::read(&src).expect("read source");
            let dest = dir.join(format!("copy-{copy_scheme:?}.db"));
            backup_encrypted(
                &conn,
                "main",
                &dest.to_string_lossy(),
                (&copy_key, copy_scheme),
                (4096, true),
                &mut |_, _| {},
            )
            .expect("backup");
            drop(conn);
            drop(vfs);
            assert_eq!(std::fs::read(&src).expect("read source"), before);
            assert_eq!(
                rows_in(&dest.to_string_lossy(), &copy_key, copy_scheme),
                "a secret row"
            );
            let bytes = std::fs::read(&dest).expect("read copy");
            assert_eq!(usize::from(bytes[20]), copy_scheme.reserve());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
