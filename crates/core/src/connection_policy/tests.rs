//! The open and encryption decisions through real files: which VFS a request gets, what a
//! wrong key or a foreign hot journal changes (nothing), which pragmas and ATTACHes are
//! refused and with which message, the page-size check, and backup destinations.

use super::*;
use crate::test_support::Dir;
use cipherlite_sqlite::{ffi, Connection, OpenFlags};
use cipherlite_vfs::CipherScheme;

const KEY_A: [u8; 32] = [0xa1; 32];
const KEY_B: [u8; 32] = [0xb2; 32];

fn request<'a>(filename: &'a str, key: Option<&'a [u8; 32]>) -> OpenRequest<'a> {
    OpenRequest {
        filename,
        flags: OpenFlags::default(),
        source: Source::Path,
        key,
        passphrase: None,
        kdf_iterations: None,
        argon2: Default::default(),
        page_size: None,
        layout: CipherLayout::Sqlite3mc,
        cipher: cipherlite_vfs::CipherScheme::SqlCipher4,
        busy_timeout: 5000,
        plaintext_journal_checksums: false,
    }
}

fn opened(request: &OpenRequest<'_>) -> OpenedDatabase {
    match open(request) {
        Ok(o) => o,
        Err(e) => panic!("open failed: {e:?}"),
    }
}

fn sqlite_error(result: Result<OpenedDatabase>) -> cipherlite_sqlite::Error {
    match result {
        Err(Error::Sqlite(e)) => e,
        Err(Error::Usage(m)) => panic!("expected an SQLite error, got a usage error: {m}"),
        Ok(_) => panic!("expected an SQLite error, the open succeeded"),
    }
}

fn usage_error(result: Result<OpenedDatabase>) -> String {
    match result {
        Err(Error::Usage(m)) => m,
        Err(Error::Sqlite(e)) => panic!("expected a usage error, got {e:?}"),
        Ok(_) => panic!("expected a usage error, the open succeeded"),
    }
}

fn head(path: &str) -> [u8; 16] {
    let bytes = std::fs::read(path).expect("read");
    bytes[..16].try_into().expect("16 bytes")
}

fn write_rows(db: &OpenedDatabase) {
    db.conn
        .execute_batch("CREATE TABLE t(a, b); INSERT INTO t VALUES (1, 'one'), (2, 'two');")
        .expect("write");
}

fn read_rows(db: &OpenedDatabase) -> Option<String> {
    db.conn
        .query_text("SELECT group_concat(a || '=' || b, ',') FROM t")
        .expect("read")
}

/// The error preparing `sql` gives.
fn prepare_error(conn: &Connection, sql: &str) -> cipherlite_sqlite::Error {
    match conn.prepare(sql, false) {
        Err(e) => e,
        Ok(_) => panic!("{sql}: expected an error"),
    }
}

#[test]
fn plain_open_uses_the_default_vfs_and_writes_plaintext() {
    let dir = Dir::new("plain");
    let path = dir.file("p.db");
    let db = opened(&request(&path, None));
    assert!(!db.vfs.is_keyed());
    assert!(db.vfs.keyed_name().is_none());
    assert_eq!(db.vfs.encrypted_page_size(), None);
    write_rows(&db);
    drop(db);
    assert_eq!(head(&path), *b"SQLite format 3\0");
    let again = opened(&request(&path, None));
    assert_eq!(read_rows(&again).as_deref(), Some("1=one,2=two"));
}

#[test]
fn keyed_open_uses_a_keyed_vfs_and_reopens_with_the_key() {
    let dir = Dir::new("keyed");
    let path = dir.file("k.db");
    let db = opened(&request(&path, Some(&KEY_A)));
    assert!(db.vfs.is_keyed());
    let name = db.vfs.keyed_name().expect("a VFS name").to_string_lossy();
    assert!(name.starts_with("cipherlite-"), "{name}");
    assert_eq!(db.vfs.encrypted_page_size(), Some(4096));
    write_rows(&db);
    assert_eq!(
        db.vfs.key_for_database(&path).as_deref(),
        Some(&KEY_A),
        "a raw key is the file's key"
    );
    drop(db);
    assert_ne!(head(&path), *b"SQLite format 3\0");
    let again = opened(&request(&path, Some(&KEY_A)));
    assert_eq!(read_rows(&again).as_deref(), Some("1=one,2=two"));
}

#[test]
fn wrong_key_is_notadb_and_changes_no_byte() {
    let dir = Dir::new("wrongkey");
    let path = dir.file("k.db");
    write_rows(&opened(&request(&path, Some(&KEY_A))));
    let before = std::fs::read(&path).expect("read");
    let err = sqlite_error(open(&request(&path, Some(&KEY_B))));
    assert_eq!(err.code, ffi::SQLITE_NOTADB);
    assert_eq!(err.message, "file is not a database");
    assert_eq!(std::fs::read(&path).expect("read"), before);
}

#[test]
fn passphrase_opens_what_it_created_and_a_wrong_one_is_notadb() {
    let dir = Dir::new("passphrase");
    let path = dir.file("p.db");
    let with = |passphrase: &'static [u8]| OpenRequest {
        passphrase: Some(passphrase),
        // Few iterations: the derivation is the codec's to test, not this layer's.
        kdf_iterations: Some(2),
        ..request(&path, None)
    };
    let db = opened(&with(b"correct horse"));
    assert!(db.vfs.is_keyed());
    write_rows(&db);
    assert!(db.vfs.key_for_database(&path).is_some());
    drop(db);
    assert_eq!(
        read_rows(&opened(&with(b"correct horse"))).as_deref(),
        Some("1=one,2=two")
    );
    assert_eq!(
        sqlite_error(open(&with(b"battery staple"))).code,
        ffi::SQLITE_NOTADB
    );
}

#[test]
fn key_and_passphrase_together_are_refused() {
    let dir = Dir::new("both");
    let path = dir.file("b.db");
    let message = usage_error(open(&OpenRequest {
        passphrase: Some(b"secret"),
        ..request(&path, Some(&KEY_A))
    }));
    assert_eq!(
        message,
        "The \"key\" and \"passphrase\" options cannot be used together"
    );
    assert!(!std::path::Path::new(&path).exists(), "no file created");
}

#[test]
fn descriptors_refuse_a_key_and_bad_numbers() {
    let dir = Dir::new("fds");
    let path = dir.file("f.db");
    let fds = |database, journal| OpenRequest {
        source: Source::Descriptors { database, journal },
        ..request(&path, None)
    };
    assert_eq!(
        usage_error(open(&OpenRequest {
            key: Some(&KEY_A),
            ..fds(3, Some(4))
        })),
        "The \"key\" option cannot be used when opening a database from a file descriptor"
    );
    for (database, journal) in [(-1, Some(4)), (3, Some(-2)), (3, None)] {
        assert_eq!(
            usage_error(open(&fds(database, journal))),
            "Expected file descriptors to be non-negative 32-bit integers"
        );
    }
}

#[test]
fn plaintext_open_of_an_encrypted_file_with_a_hot_journal_is_notadb_and_touches_nothing() {
    let dir = Dir::new("hot");
    let path = dir.file("k.db");
    write_rows(&opened(&request(&path, Some(&KEY_A))));
    let journal = format!("{path}-journal");
    std::fs::write(&journal, [0x5au8; 1024]).expect("journal");
    let before = (
        std::fs::read(&path).expect("db"),
        std::fs::read(&journal).expect("j"),
    );
    let err = sqlite_error(open(&request(&path, None)));
    assert_eq!(err.code, ffi::SQLITE_NOTADB);
    let after = (
        std::fs::read(&path).expect("db"),
        std::fs::read(&journal).expect("j"),
    );
    assert_eq!(after, before);
    // Without leftovers the open itself succeeds (the first query then fails).
    std::fs::remove_file(&journal).expect("rm");
    let db = opened(&request(&path, None));
    let err = prepare_error(&db.conn, "SELECT * FROM t");
    assert_eq!(err.code, ffi::SQLITE_NOTADB);
}

#[test]
fn key_pragmas_are_refused_on_every_connection() {
    let dir = Dir::new("pragmas");
    for key in [None, Some(&KEY_A)] {
        let path = dir.file(if key.is_some() { "k.db" } else { "p.db" });
        let db = opened(&request(&path, key));
        for sql in [
            "PRAGMA key = 'x'",
            "PRAGMA rekey = 'x'",
            "PRAGMA hexkey = '00'",
            "PRAGMA cipher_page_size = 4096",
        ] {
            let err = prepare_error(&db.conn, sql);
            assert_eq!(err.code, ffi::SQLITE_AUTH, "{sql}");
            assert_eq!(err.message, pragmas::KEY_PRAGMA_MESSAGE, "{sql}");
        }
    }
}

#[test]
fn page_size_pragma_is_refused_only_when_it_would_change_an_encrypted_page_size() {
    let dir = Dir::new("pagesize");
    let plain_path = dir.file("p.db");
    let plain = opened(&request(&plain_path, None));
    plain
        .conn
        .execute_batch("PRAGMA page_size = 8192")
        .expect("a plaintext database may choose its page size");
    let path = dir.file("k.db");
    let db = opened(&request(&path, Some(&KEY_A)));
    let err = prepare_error(&db.conn, "PRAGMA page_size = 8192");
    assert_eq!(err.code, ffi::SQLITE_AUTH);
    assert_eq!(err.message, pragmas::PAGE_SIZE_PRAGMA_MESSAGE);
    db.conn
        .execute_batch("PRAGMA page_size = 4096")
        .expect("its own page size is allowed");
    assert_eq!(
        db.conn
            .query_text("PRAGMA page_size")
            .expect("read")
            .as_deref(),
        Some("4096")
    );
}

#[test]
fn attach_with_a_key_is_refused_on_every_connection() {
    let dir = Dir::new("attachkey");
    for key in [None, Some(&KEY_A)] {
        let path = dir.file(if key.is_some() { "k.db" } else { "p.db" });
        let other = dir.file("other.db");
        let db = opened(&request(&path, key));
        let err = prepare_error(&db.conn, &format!("ATTACH '{other}' AS o KEY 'secret'"));
        assert_eq!(err.code, ffi::SQLITE_ERROR);
        assert_eq!(
            err.message,
            "ATTACH ... KEY is not supported: an attached database is opened with the connection's own key (or none); give the key only as new Database(path, { key })"
        );
        assert!(!std::path::Path::new(&other).exists());
    }
}

#[test]
fn a_new_database_attached_to_an_encrypted_connection_is_encrypted_with_its_key() {
    let dir = Dir::new("attached");
    let path = dir.file("k.db");
    let other = dir.file("other.db");
    let db = opened(&request(&path, Some(&KEY_A)));
    db.conn
        .exec_each_then(
            &format!("ATTACH '{other}' AS o; CREATE TABLE o.t(a, b); INSERT INTO o.t VALUES (3, 'three');"),
            |_| Ok(()),
            || reserve_new_attached_databases(&db.conn, cipherlite_vfs::RESERVE_BYTES),
        )
        .map_err(|_| "exec failed")
        .expect("attach and write");
    drop(db);
    assert_ne!(head(&other), *b"SQLite format 3\0");
    let again = opened(&request(&other, Some(&KEY_A)));
    assert_eq!(read_rows(&again).as_deref(), Some("3=three"));
}

#[test]
fn another_page_size_is_named_in_the_error() {
    let dir = Dir::new("mismatch");
    let path = dir.file("k.db");
    let big = OpenRequest {
        page_size: Some(8192),
        ..request(&path, Some(&KEY_A))
    };
    let db = opened(&big);
    assert_eq!(db.vfs.encrypted_page_size(), Some(8192));
    write_rows(&db);
    drop(db);
    let before = std::fs::read(&path).expect("read");
    let err = sqlite_error(open(&request(&path, Some(&KEY_A))));
    assert_eq!(err.code, ffi::SQLITE_NOTADB);
    assert_eq!(
        err.message,
        "file is not a database with 4096-byte pages: the key opens it with 8192-byte pages (pass the \"pageSize\" option: 8192)"
    );
    assert_eq!(std::fs::read(&path).expect("read"), before);
    // A wrong key opens it with no page size: SQLite's own message.
    let err = sqlite_error(open(&request(&path, Some(&KEY_B))));
    assert_eq!(err.message, "file is not a database");
    assert_eq!(read_rows(&opened(&big)).as_deref(), Some("1=one,2=two"));
}

#[test]
fn every_connection_gets_the_busy_timeout_and_the_storage_functions() {
    let dir = Dir::new("setup");
    let path = dir.file("p.db");
    let db = opened(&OpenRequest {
        busy_timeout: 1234,
        ..request(&path, None)
    });
    assert_eq!(
        db.conn
            .query_text("PRAGMA busy_timeout")
            .expect("read")
            .as_deref(),
        Some("1234")
    );
    let evolu = db
        .conn
        .query_text("SELECT count(*) > 0 FROM pragma_function_list WHERE name LIKE 'evolu_%'")
        .expect("read");
    assert_eq!(evolu.as_deref(), Some("1"));
    // Defensive mode is on: the schema can't be written directly.
    let defended = db.conn.execute_batch(
        "PRAGMA writable_schema = ON; CREATE TABLE x(a); UPDATE sqlite_schema SET sql = 'junk'",
    );
    assert!(
        defended.is_err(),
        "defensive mode refuses writing sqlite_schema"
    );
    set_unsafe_mode(&db.conn, true).expect("unsafe mode");
    db.conn
        .execute_batch(
            "PRAGMA writable_schema = ON; UPDATE sqlite_schema SET sql = sql WHERE name = 'x'",
        )
        .expect("unsafe mode allows it");
}

#[test]
fn rekeyed_reopen_needs_the_file() {
    let dir = Dir::new("reopen");
    let path = dir.file("missing.db");
    let err = sqlite_error(reopen_rekeyed(
        &path,
        (&KEY_A, CipherScheme::SqlCipher4),
        CipherLayout::Sqlite3mc,
        4096,
        5000,
    ));
    assert_eq!(err.code, ffi::SQLITE_CANTOPEN);
    assert!(!std::path::Path::new(&path).exists());
    let existing = dir.file("k.db");
    write_rows(&opened(&request(&existing, Some(&KEY_A))));
    let db = reopen_rekeyed(
        &existing,
        (&KEY_A, CipherScheme::SqlCipher4),
        CipherLayout::Sqlite3mc,
        4096,
        5000,
    )
    .expect("reopen");
    assert!(db.vfs.is_keyed());
    assert_eq!(read_rows(&db).as_deref(), Some("1=one,2=two"));
    drop(db);
    // A database of another page size is reopened with its own.
    let big = dir.file("big.db");
    write_rows(&opened(&OpenRequest {
        page_size: Some(8192),
        ..request(&big, Some(&KEY_A))
    }));
    let db = reopen_rekeyed(
        &big,
        (&KEY_A, CipherScheme::SqlCipher4),
        CipherLayout::Sqlite3mc,
        8192,
        5000,
    )
    .expect("reopen");
    assert_eq!(db.vfs.encrypted_page_size(), Some(8192));
    assert_eq!(read_rows(&db).as_deref(), Some("1=one,2=two"));
    drop(db);
    assert_eq!(
        sqlite_error(reopen_rekeyed(
            &big,
            (&KEY_A, CipherScheme::SqlCipher4),
            CipherLayout::Sqlite3mc,
            4096,
            5000
        ))
        .code,
        ffi::SQLITE_NOTADB
    );
}

#[test]
fn backup_destinations_follow_the_key_asked_for() {
    let dir = Dir::new("backup");
    let plain = opened(&request(&dir.file("p.db"), None));
    let keyed = opened(&request(&dir.file("k.db"), Some(&KEY_A)));
    let choose = |db: &OpenedDatabase, key| match BackupDestination::choose(&db.vfs, key) {
        Ok(d) => Ok(d.is_encrypted()),
        Err(Error::Usage(m)) => Err(m),
        Err(Error::Sqlite(e)) => panic!("{e:?}"),
    };
    assert_eq!(choose(&plain, BackupKey::SameAsSource), Ok(false));
    assert_eq!(choose(&keyed, BackupKey::SameAsSource), Ok(true));
    assert_eq!(choose(&keyed, BackupKey::Plaintext), Ok(false));
    assert_eq!(choose(&keyed, BackupKey::Own(&KEY_B)), Ok(true));
    let refusal = "A plaintext database cannot be backed up page by page under a key";
    assert_eq!(choose(&plain, BackupKey::Own(&KEY_B)), Err(refusal.into()));
    assert!(matches!(
        BackupDestination::allow_own_key(false),
        Err(Error::Usage(m)) if m == refusal
    ));
    // A copy under a key of its own opens with that key only.
    write_rows(&keyed);
    let copy = dir.file("copy.db");
    let dest = BackupDestination::choose(&keyed.vfs, BackupKey::Own(&KEY_B)).expect("dest");
    let mut backup = dest.start(&keyed.conn, "main", &copy).expect("start");
    assert!(backup.step(-1).expect("step").done);
    backup.close();
    drop(dest);
    assert_eq!(
        read_rows(&opened(&request(&copy, Some(&KEY_B)))).as_deref(),
        Some("1=one,2=two")
    );
    assert_eq!(
        sqlite_error(open(&request(&copy, Some(&KEY_A)))).code,
        ffi::SQLITE_NOTADB
    );
}

#[test]
fn layout_names_name_the_page_1_layouts() {
    assert_eq!(
        layout_named(Some("sqlcipher")),
        Some(CipherLayout::SqlCipher)
    );
    assert_eq!(
        layout_named(Some("sqlite3mc")),
        Some(CipherLayout::Sqlite3mc)
    );
    assert_eq!(layout_named(Some("other")), None);
    assert_eq!(layout_named(None), None);
}

#[test]
fn an_aborted_backup_deletes_the_file_it_created_and_a_finished_one_keeps_it() {
    let dir = Dir::new("abort");
    let source = opened(&request(&dir.file("k.db"), Some(&KEY_A)));
    source
        .conn
        .execute_batch(
            "CREATE TABLE t(a, b); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 200) INSERT INTO t SELECT i, randomblob(500) FROM n;",
        )
        .expect("write");
    let start = |path: &str| {
        let dest = BackupDestination::choose(&source.vfs, BackupKey::SameAsSource).expect("dest");
        RunningBackup::start(&source.conn, "main", path, dest, true).expect("start")
    };
    let aborted = dir.file("aborted.db");
    let mut backup = start(&aborted);
    let progress = backup.step(1).expect("step");
    assert!(!progress.done && progress.remaining_pages > 0);
    assert!(std::path::Path::new(&aborted).exists());
    backup.close();
    assert!(!std::path::Path::new(&aborted).exists(), "removed");
    let finished = dir.file("finished.db");
    let mut backup = start(&finished);
    assert!(backup.step(-1).expect("step").done);
    backup.close();
    let copy = opened(&request(&finished, Some(&KEY_A)));
    assert_eq!(
        copy.conn
            .query_text("SELECT count(*) FROM t")
            .expect("read")
            .as_deref(),
        Some("200")
    );
}
