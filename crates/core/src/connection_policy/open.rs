//! Opening a database: which VFS it goes through, the checks before SQLite touches a file,
//! and the set-up after (`setup.rs`).

use super::{code_error, setup, CipherLayout, Error, Result};
use cipherlite_codec::{AegisAlgorithm, Argon2Costs, PASSPHRASE_KDF_ITER, SQLITE_HEADER_MAGIC};
use cipherlite_sqlite::{self as sqlite, ffi, Connection, OpenFlags};
use cipherlite_vfs::{self as vfs, fd::FdVfsHandle, CipherScheme, KeyedVfsHandle, VfsKey};
use std::ffi::CStr;
use zeroize::Zeroizing;

/// Where the database's bytes are.
#[derive(Debug, Clone, Copy)]
pub enum Source {
    /// The file named by [`OpenRequest::filename`].
    Path,
    /// `new Database(fd, { journalFd })` (better-sqlite3 13.2): already open descriptors of
    /// the database and its rollback journal (`crates/vfs/src/fd/`).
    Descriptors { database: i32, journal: Option<i32> },
}

/// Everything `new Database(...)` asks for, already converted from JS.
pub struct OpenRequest<'a> {
    pub filename: &'a str,
    pub flags: OpenFlags,
    pub source: Source,
    /// A raw key: 32 bytes, or for an AEGIS-128 algorithm 16 bytes in the first half (the
    /// rest zero; the binding checks the length against `cipher`).
    pub key: Option<&'a [u8; 32]>,
    /// A passphrase's bytes (never empty: the binding refuses an empty one).
    pub passphrase: Option<&'a [u8]>,
    /// PBKDF2 iterations for the passphrase (SQLCipher 4's default when `None`).
    pub kdf_iterations: Option<u32>,
    /// Argon2id's costs for the passphrase of an AEGIS file (SQLite3MC's `tcost`, `mcost`,
    /// `pcost`; its defaults by default).
    pub argon2: Argon2Costs,
    /// The page size of an encrypted database (4096 when `None`).
    pub page_size: Option<u32>,
    /// The page 1 a new encrypted file gets.
    pub layout: CipherLayout,
    /// The page format of an encrypted file: SQLCipher 4 (the default) or SQLite3MC's
    /// AEGIS scheme with one of its algorithms (`cipher: 'aegis'`, `algorithm`,
    /// docs/aegis-format.md).
    pub cipher: CipherScheme,
    /// `timeout` in milliseconds.
    pub busy_timeout: u32,
    /// `acceptPlaintextJournalChecksums`: roll back a hot journal SQLite3 Multiple Ciphers
    /// left (its record checksums are over the plaintext; see
    /// `KeyedVfsHandle::accept_plaintext_journal_checksums`).
    pub plaintext_journal_checksums: bool,
}

/// The VFS a connection's files go through. It must outlive the connection: drop (or
/// [`release`](DatabaseVfs::release)) it only after the connection has closed.
pub enum DatabaseVfs {
    /// SQLite's default VFS: a plaintext database (or an in-memory one).
    Default,
    /// A VFS of this connection's own, holding its key (docs/design.md §4.2).
    Keyed(KeyedVfsHandle),
    /// The VFS over the two file descriptors of `new Database(fd, { journalFd })`.
    Descriptors(FdVfsHandle),
}

impl DatabaseVfs {
    /// True for an encrypted connection.
    pub fn is_keyed(&self) -> bool {
        matches!(self, DatabaseVfs::Keyed(_))
    }

    /// The keyed VFS's name: what databases ATTACHed to this connection and backups that
    /// keep its key go through. `None` for a plaintext connection.
    pub fn keyed_name(&self) -> Option<&CStr> {
        match self {
            DatabaseVfs::Keyed(vfs) => Some(vfs.name()),
            _ => None,
        }
    }

    /// An encrypted connection's keyed VFS: what a second connection on its files goes
    /// through (a backup that rebuilds the pages reads them so).
    pub fn keyed(&self) -> Option<&KeyedVfsHandle> {
        match self {
            DatabaseVfs::Keyed(vfs) => Some(vfs),
            _ => None,
        }
    }

    /// The page size an encrypted connection's pages have.
    pub fn encrypted_page_size(&self) -> Option<usize> {
        match self {
            DatabaseVfs::Keyed(vfs) => Some(vfs.page_size()),
            _ => None,
        }
    }

    /// The page format of an encrypted connection; `None` for a plaintext one.
    pub fn scheme(&self) -> Option<CipherScheme> {
        match self {
            DatabaseVfs::Keyed(vfs) => Some(vfs.scheme()),
            _ => None,
        }
    }

    /// The reserved bytes per page of an encrypted connection's format.
    pub fn reserve_bytes(&self) -> Option<std::ffi::c_int> {
        match self {
            DatabaseVfs::Keyed(vfs) => Some(vfs.reserve_bytes()),
            _ => None,
        }
    }

    /// The AES key of the encrypted database file at `path` (a passphrase's is derived
    /// from the file's salt); `None` for a plaintext connection.
    pub fn key_for_database(&self, path: &str) -> Option<Zeroizing<[u8; 32]>> {
        match self {
            DatabaseVfs::Keyed(vfs) => vfs.key_for_database(path),
            _ => None,
        }
    }

    /// Unregisters the VFS once no file is open through it (the connection closed),
    /// wiping a keyed VFS's key and what closing left of it on the stack.
    pub fn release(self) {
        let keyed = self.is_keyed();
        drop(self);
        if keyed {
            vfs::scrub_key_residue();
        }
    }
}

/// An open, configured connection and the VFS under it. The fields drop in order: the
/// connection closes before its VFS is unregistered.
pub struct OpenedDatabase {
    pub conn: Connection,
    pub vfs: DatabaseVfs,
}

/// Opens the database `request` describes and configures the connection
/// ([`setup::configure`]). The checks come first, in this order: a key and a passphrase
/// together; then per source (descriptors, an encrypted path, a plaintext path) its own.
pub fn open(request: &OpenRequest<'_>) -> Result<OpenedDatabase> {
    // Errors a keyed VFS refused with carry its reason (once per process).
    sqlite::set_error_detail(vfs::refusal_message);
    if request.key.is_some() && request.passphrase.is_some() {
        return Err(Error::Usage(
            "The \"key\" and \"passphrase\" options cannot be used together".into(),
        ));
    }
    if request.passphrase.is_some() && request.cipher.is_aegis() {
        if let Err(cost) = request.argon2.check() {
            return Err(Error::Usage(argon2_cost_message(cost)));
        }
    }
    let page_size = request.page_size.map_or(vfs::PAGE_SIZE, |n| n as usize);
    let vfs_key = match (request.key, request.passphrase) {
        (Some(key), _) => Some(VfsKey::Raw(key)),
        (None, Some(passphrase)) => Some(VfsKey::Passphrase {
            passphrase,
            iterations: request.kdf_iterations.unwrap_or(PASSPHRASE_KDF_ITER),
            argon2: request.argon2,
        }),
        (None, None) => None,
    };
    if matches!(request.source, Source::Path) {
        refuse_reserved_name(request.filename)?;
    }
    let mut opened = match (request.source, &vfs_key) {
        (Source::Descriptors { database, journal }, _) => {
            let handle = descriptor_vfs(database, journal, request.flags, vfs_key.is_some())?;
            let conn = Connection::open(handle.main_name(), request.flags, Some(handle.name()))?;
            OpenedDatabase {
                conn,
                vfs: DatabaseVfs::Descriptors(handle),
            }
        }
        (Source::Path, Some(key)) => open_encrypted(request, key, page_size)?,
        (Source::Path, None) => {
            refuse_foreign_hot_database(request.filename)?;
            OpenedDatabase {
                conn: Connection::open(request.filename, request.flags, None)?,
                vfs: DatabaseVfs::Default,
            }
        }
    };
    setup::configure(
        &mut opened.conn,
        request.busy_timeout,
        opened.vfs.encrypted_page_size(),
    )?;
    Ok(opened)
}

/// The device name `path` ends in, if its last component is one Windows reserves
/// (`CON`, `PRN`, `AUX`, `NUL`, `COM0`–`COM9`, `LPT0`–`LPT9`, `CONIN$`, `CONOUT$`, in any
/// case and with any extension: `nul.db` is the NUL device too). Such a path opens the
/// device, not a file: a database "written" to `NUL` would be lost.
pub fn reserved_device_name(path: &str) -> Option<&str> {
    let last = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let stem = last
        .split('.')
        .next()
        .unwrap_or(last)
        .trim_end_matches([' ', '.']);
    let upper = stem.to_ascii_uppercase();
    let numbered = |prefix: &str| {
        upper
            .strip_prefix(prefix)
            .is_some_and(|n| n.len() == 1 && n.as_bytes()[0].is_ascii_digit())
    };
    let reserved = matches!(
        upper.as_str(),
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$"
    ) || numbered("COM")
        || numbered("LPT");
    reserved.then_some(stem)
}

/// On Windows, refuses a path naming a reserved device ([`reserved_device_name`]) with
/// `SQLITE_CANTOPEN`, saying why; elsewhere such names are ordinary files.
pub fn refuse_reserved_name(path: &str) -> Result<()> {
    if !cfg!(windows) || path.is_empty() || path == ":memory:" || path.starts_with("file:") {
        return Ok(());
    }
    match reserved_device_name(path) {
        Some(device) => Err(Error::Sqlite(cipherlite_sqlite::Error::new(
            cipherlite_sqlite::ffi::SQLITE_CANTOPEN,
            format!(
                "cannot open {path}: {device} is a reserved device name on Windows, not a file"
            ),
        ))),
        None => Ok(()),
    }
}

/// The connection `rekey()` reopens on the file it re-encrypted: a new keyed VFS for the
/// new key and the file's `page_size`, the file opened (it must exist) and configured as
/// at first open.
pub fn reopen_rekeyed(
    filename: &str,
    (key, scheme): (&[u8; 32], CipherScheme),
    layout: CipherLayout,
    page_size: usize,
    busy_timeout: u32,
) -> Result<OpenedDatabase> {
    let vfs =
        KeyedVfsHandle::register_with_scheme(&VfsKey::Raw(key), scheme, layout, page_size, None)
            .map_err(code_error)?;
    let flags = OpenFlags {
        must_exist: true,
        ..OpenFlags::default()
    };
    let conn = open_keyed(filename, flags, &vfs)?;
    let mut opened = OpenedDatabase {
        conn,
        vfs: DatabaseVfs::Keyed(vfs),
    };
    setup::configure(
        &mut opened.conn,
        busy_timeout,
        opened.vfs.encrypted_page_size(),
    )?;
    Ok(opened)
}

/// Loads `bytes` (`new Database(buffer)`) as the main database; SQLite's generic error
/// gets better-sqlite3's message.
pub fn deserialize(conn: &Connection, bytes: &[u8], readonly: bool) -> Result<()> {
    conn.deserialize_main(bytes, readonly).map_err(|e| {
        if e.code == ffi::SQLITE_ERROR {
            Error::Sqlite(sqlite::Error::new(e.code, "unable to deserialize database"))
        } else {
            Error::Sqlite(e)
        }
    })
}

/// Opens `filename` through a new keyed VFS. A new (empty) file gets SQLCipher's 80
/// reserved bytes per page, and the page size asked for, before SQLite writes anything.
/// A file the key doesn't open with this page size but does with another fails with a
/// message naming the `pageSize` option.
fn open_encrypted(
    request: &OpenRequest<'_>,
    key: &VfsKey<'_>,
    page_size: usize,
) -> Result<OpenedDatabase> {
    let (filename, flags) = (request.filename, request.flags);
    let vfs =
        KeyedVfsHandle::register_with_scheme(key, request.cipher, request.layout, page_size, None)
            .map_err(code_error)?;
    if request.plaintext_journal_checksums {
        vfs.accept_plaintext_journal_checksums();
    }
    let conn = match Connection::open(filename, flags, Some(vfs.name())) {
        Ok(conn) => conn,
        Err(e) if e.code == ffi::SQLITE_NOTADB => {
            let probe = vfs.probe_other_formats(filename);
            let raw = request.key.is_some();
            if let Some(message) = opens_in_other_format(request.cipher, probe) {
                return Err(Error::Sqlite(sqlite::Error::new(
                    ffi::SQLITE_NOTADB,
                    message,
                )));
            }
            if let Some(other) = vfs.page_size_that_opens(filename) {
                if other != page_size {
                    return Err(Error::Sqlite(sqlite::Error::new(
                        ffi::SQLITE_NOTADB,
                        format!("file is not a database with {page_size}-byte pages: the key opens it with {other}-byte pages (pass the \"pageSize\" option: {other})"),
                    )));
                }
            }
            return Err(Error::Sqlite(
                match aegis_reserve_refusal(request.cipher, probe, raw) {
                    Some(message) => sqlite::Error::new(ffi::SQLITE_NOTADB, message),
                    None => e,
                },
            ));
        }
        Err(e) => return Err(Error::Sqlite(e)),
    };
    refuse_wal_in_other_hands(filename)?;
    prepare_keyed(&conn, flags, &vfs)?;
    Ok(OpenedDatabase {
        conn,
        vfs: DatabaseVfs::Keyed(vfs),
    })
}

/// A WAL beside the file that another SQLite library, or another OS user's cipherlite, has
/// open: the keyed VFS would refuse its wal-index at the first read (see
/// `vfs::private_wal_index`); said here first, with the reason.
fn refuse_wal_in_other_hands(filename: &str) -> Result<()> {
    if std::path::Path::new(&format!("{filename}-wal")).exists() {
        if let Err(refusal) = vfs::check_wal_index_available(std::path::Path::new(filename)) {
            return Err(Error::Sqlite(sqlite::Error::new(
                refusal.code(),
                refusal.message(),
            )));
        }
    }
    Ok(())
}

/// What every connection through a keyed VFS needs before SQLite reads or writes a page:
/// its format's reserved bytes per page (SQLCipher's 80, AEGIS' 64) (for a database without a valid header yet:
/// new, or whose first transaction crashed; an existing database keeps its own), and the
/// page size when it is not the default — also on an existing database, whose header
/// SQLite may read from a torn page 1 that the VFS gives out as zeros while the WAL holds
/// a whole copy (a no-op otherwise).
pub fn prepare_keyed(conn: &Connection, flags: OpenFlags, vfs: &KeyedVfsHandle) -> Result<()> {
    let page_size = vfs.page_size();
    if !flags.readonly {
        let mut reserve = vfs.reserve_bytes();
        let _ = conn.file_control_int(c"main", ffi::SQLITE_FCNTL_RESERVE_BYTES, &mut reserve);
    }
    if page_size != vfs::PAGE_SIZE {
        // Before the pragma guard is installed.
        conn.exec_each(&format!("PRAGMA page_size = {page_size}"), |_| Ok(()))
            .map_err(|e| match e {
                sqlite::ExecAbort::Sqlite(e) => Error::Sqlite(e),
                // No caller callback runs (`|_| Ok(())` never aborts).
                sqlite::ExecAbort::Caller => {
                    Error::Sqlite(sqlite::Error::from_code(ffi::SQLITE_ABORT))
                }
            })?;
    }
    Ok(())
}

/// Opens `filename` through the keyed `vfs` and [`prepare_keyed`]s the connection; for
/// the key lifecycle's own connections (not configured for JS).
pub fn open_keyed(filename: &str, flags: OpenFlags, vfs: &KeyedVfsHandle) -> Result<Connection> {
    let conn = Connection::open(filename, flags, Some(vfs.name()))?;
    prepare_keyed(&conn, flags, vfs)?;
    Ok(conn)
}

/// The checks and the VFS of `new Database(fd, { journalFd })`. The descriptors' problems
/// are usage errors with better-sqlite3 13.2's messages; a key is refused (the keyed VFS
/// finds journals and WALs by path, which such a database lacks).
fn descriptor_vfs(
    database_fd: i32,
    journal_fd: Option<i32>,
    flags: OpenFlags,
    keyed: bool,
) -> Result<FdVfsHandle> {
    if keyed {
        return Err(Error::Usage(
            "The \"key\" option cannot be used when opening a database from a file descriptor"
                .into(),
        ));
    }
    const BAD_FDS: &str = "Expected file descriptors to be non-negative 32-bit integers";
    let Some(journal_fd) = journal_fd else {
        return Err(Error::Usage(BAD_FDS.into()));
    };
    if database_fd < 0 || journal_fd < 0 {
        return Err(Error::Usage(BAD_FDS.into()));
    }
    vfs::fd::validate(database_fd, journal_fd, flags.readonly).map_err(|e| Error::Usage(e.0))?;
    // As for a path (refuse_foreign_hot_database): no recovery of a hot journal into a
    // file that isn't a plaintext SQLite database.
    if vfs::fd::file_size(journal_fd).is_some_and(|n| n > 0)
        && vfs::fd::header_is_sqlite(database_fd) == Some(false)
    {
        return Err(code_error(ffi::SQLITE_NOTADB));
    }
    FdVfsHandle::register(database_fd, journal_fd, flags.readonly).map_err(code_error)
}

/// Opening an encrypted database without its key is an error at the first query; but
/// when it has a hot journal or WAL, SQLite would first try to recover it — changing the
/// files with the wrong (no) key. Refuse before SQLite touches anything.
fn refuse_foreign_hot_database(filename: &str) -> Result<()> {
    let has_leftovers = ["-journal", "-wal"]
        .iter()
        .any(|s| std::fs::metadata(format!("{filename}{s}")).is_ok_and(|m| m.len() > 0));
    if !has_leftovers {
        return Ok(());
    }
    let mut head = [0u8; 16];
    let readable = std::fs::File::open(filename)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head));
    if readable.is_ok() && head != SQLITE_HEADER_MAGIC {
        return Err(code_error(ffi::SQLITE_NOTADB));
    }
    Ok(())
}

/// The page format a `cipher` option names (`'sqlcipher'` or `'aegis'`, AEGIS-256).
pub fn cipher_named(name: Option<&str>) -> Option<CipherScheme> {
    match name? {
        "sqlcipher" => Some(CipherScheme::SqlCipher4),
        "aegis" => Some(CipherScheme::Aegis256),
        _ => None,
    }
}

/// The page format the `cipher` and `algorithm` options name together: [`cipher_named`],
/// the AEGIS algorithm `algorithm` names (SQLite3MC's `PRAGMA algorithm` values, e.g.
/// `'aegis-128l'`) for `'aegis'`. `None` for no `cipher`, an unknown name, or an algorithm
/// with another cipher than `'aegis'` (the JS layer refuses those first).
pub fn scheme_named(cipher: Option<&str>, algorithm: Option<&str>) -> Option<CipherScheme> {
    match (cipher_named(cipher)?, algorithm) {
        (scheme, None) => Some(scheme),
        (CipherScheme::SqlCipher4, Some(_)) => None,
        (_, Some(name)) => AegisAlgorithm::named(name).map(CipherScheme::aegis),
    }
}

/// The usage error for an Argon2 cost out of bounds (`which`: its option's name).
fn argon2_cost_message(which: &str) -> String {
    match which {
        "mcost" => format!(
            "Expected the \"mcost\" option to be an integer from 8 × \"pcost\" to {} (KiB)",
            Argon2Costs::MAX
        ),
        "pcost" => format!(
            "Expected the \"pcost\" option to be an integer from 1 to {}",
            Argon2Costs::MAX_P_COST
        ),
        _ => format!(
            "Expected the \"{which}\" option to be an integer from 1 to {}",
            Argon2Costs::MAX
        ),
    }
}

/// How an error names a format: `the sqlcipher format`, `the aegis format`, `the aegis
/// format with algorithm 'aegis-128l'`.
fn format_name(scheme: CipherScheme) -> String {
    match scheme.aegis_algorithm() {
        Some(a) if a != AegisAlgorithm::Aegis256 => {
            format!("the aegis format with algorithm '{}'", a.name())
        }
        _ => format!("the {} format", scheme.name()),
    }
}

/// The options to pass for `scheme`: `the "cipher" option: 'aegis'`, and the algorithm's
/// when it is not the default.
fn options_for(scheme: CipherScheme) -> String {
    match scheme.aegis_algorithm() {
        Some(a) if a != AegisAlgorithm::Aegis256 => format!(
            "the \"cipher\" option: 'aegis' and the \"algorithm\" option: '{}'",
            a.name()
        ),
        _ => format!("the \"cipher\" option: '{}'", scheme.name()),
    }
}

/// The AEGIS algorithms whose pages reserve `reserve` bytes, quoted: `'aegis-128l',
/// 'aegis-128x2' or 'aegis-128x4'`.
fn algorithms_with_reserve(reserve: usize) -> String {
    let names: Vec<String> = AegisAlgorithm::ALL
        .into_iter()
        .filter(|a| a.reserve() == reserve)
        .map(|a| format!("'{}'", a.name()))
        .collect();
    match names.split_last() {
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The error for a file the connection's key opens in another format than `own`: naming
/// the `cipher` option (another cipher) or the `algorithm` option (another AEGIS
/// algorithm, with both reserves).
pub fn opens_in_other_format(own: CipherScheme, probe: vfs::FormatProbe) -> Option<String> {
    let other = probe.opens?;
    Some(if other.name() != own.name() {
        format!(
            "file is not a database in {}: the key opens it in {} (pass {})",
            format_name(own),
            format_name(other),
            options_for(other)
        )
    } else {
        let name = |s: CipherScheme| s.aegis_algorithm().map_or("", |a| a.name());
        format!(
            "file is not a database with the AEGIS algorithm '{}' ({} reserved bytes a page): the key opens it with '{}' ({} reserved bytes; pass the \"algorithm\" option: '{}')",
            name(own),
            own.reserve(),
            name(other),
            other.reserve(),
            name(other)
        )
    })
}

/// The error for a file no format tried opens whose page 1 reads like an AEGIS one: with
/// another reserve than an AEGIS connection's algorithm, naming the `algorithm` option and
/// the reserve; otherwise that the key, the cipher or the algorithm is wrong (AEGIS
/// algorithms of one reserve tell each other apart only by the tag). `raw`: the key is
/// raw, so it can't be an algorithm's whose key has another length.
pub fn aegis_reserve_refusal(
    own: CipherScheme,
    probe: vfs::FormatProbe,
    raw: bool,
) -> Option<String> {
    let reserve = probe.aegis_reserve?;
    let family = algorithms_with_reserve(reserve);
    let key_len = if reserve == AegisAlgorithm::Aegis128L.reserve() {
        16
    } else {
        32
    };
    let key_note = if raw && key_len != own.key_size() {
        format!(", with a {key_len}-byte key")
    } else {
        String::new()
    };
    let family_name = if key_len == 16 {
        "AEGIS-128"
    } else {
        "AEGIS-256"
    };
    let wrong = if raw {
        "the key"
    } else {
        "the passphrase (or its Argon2 costs: the \"tcost\", \"mcost\" and \"pcost\" options)"
    };
    Some(match own.aegis_algorithm() {
        Some(algorithm) if algorithm.reserve() != reserve => format!(
            "file is not a database with the AEGIS algorithm '{}' ({} reserved bytes a page): its page 1 says {reserve} reserved bytes, as the {family_name} algorithms have (pass the \"algorithm\" option: {family}{key_note})",
            algorithm.name(),
            algorithm.reserve(),
        ),
        _ => format!(
            "file is not a database: {wrong}, the cipher or the algorithm is wrong (its page 1 says the aegis format with {reserve} reserved bytes a page: the {family_name} algorithms {family}{key_note})"
        ),
    })
}

/// The layout a `cipherLayout` option names (`'sqlite3mc'` or `'sqlcipher'`).
pub fn layout_named(name: Option<&str>) -> Option<CipherLayout> {
    match name {
        Some("sqlcipher") => Some(CipherLayout::SqlCipher),
        Some("sqlite3mc") => Some(CipherLayout::Sqlite3mc),
        _ => None,
    }
}

#[cfg(test)]
mod scheme_name_tests {
    use super::*;

    #[test]
    fn cipher_and_algorithm_name_a_format_together() {
        assert_eq!(scheme_named(None, None), None);
        assert_eq!(
            scheme_named(Some("aegis"), None),
            Some(CipherScheme::Aegis256)
        );
        assert_eq!(
            scheme_named(Some("aegis"), Some("aegis-128x2")),
            Some(CipherScheme::Aegis128X2)
        );
        assert_eq!(
            scheme_named(Some("aegis"), Some("AEGIS-256X4")),
            Some(CipherScheme::Aegis256X4),
            "SQLite3MC compares the names without case"
        );
        assert_eq!(scheme_named(Some("aegis"), Some("aegis-512")), None);
        assert_eq!(scheme_named(Some("sqlcipher"), Some("aegis-256")), None);
        assert_eq!(scheme_named(None, Some("aegis-256")), None);
        for algorithm in AegisAlgorithm::ALL {
            let scheme = CipherScheme::aegis(algorithm);
            assert_eq!(
                scheme_named(Some("aegis"), Some(algorithm.name())),
                Some(scheme)
            );
            assert_eq!(scheme.reserve(), algorithm.reserve());
            assert_eq!(scheme.key_size(), algorithm.key_size());
        }
    }
}

#[cfg(test)]
mod reserved_name_tests {
    use super::reserved_device_name;

    #[test]
    fn windows_device_names_are_found_in_any_case_and_with_an_extension() {
        for (path, device) in [
            ("NUL", "NUL"),
            ("C:\\data\\nul.db", "nul"),
            ("dir/Con.sqlite", "Con"),
            ("COM1", "COM1"),
            ("lpt9.x.y", "lpt9"),
            ("CONOUT$", "CONOUT$"),
            ("aux .db", "aux"),
        ] {
            assert_eq!(reserved_device_name(path), Some(device), "{path}");
        }
        for path in [
            "null.db",
            "console",
            "COM10",
            "LPT",
            "com",
            "app.db",
            "nul\\app.db",
            "",
        ] {
            assert_eq!(reserved_device_name(path), None, "{path}");
        }
    }
}
