//! rekey, encrypt and decrypt: the copy-sync-rename sequences (see the module docs).

use super::{
    digest::quote_literal,
    fs::{shown, FileSystem, OsFileSystem, Ownership},
    replace::{self, pause_point},
    verify::{authenticate_closed_file, CopyCheckError},
    Error, Key, Progress, Result,
};
use cipherlite_codec::{self as codec, CipherScheme, PageCodec};
use cipherlite_sqlite::{self as sqlite, ffi, Connection, OpenFlags, OsFile};
use cipherlite_vfs::{KeyedVfsHandle, NewFileLayout, VfsKey};
use std::path::{Path, PathBuf};

/// Virtual-machine instructions between progress checks during `VACUUM INTO` (which
/// copies a table of large rows in few: a handful per row).
const PROGRESS_EVERY: i32 = 1_000;

/// The page cache (`PRAGMA cache_size`, KiB when negative) of a connection that runs
/// `VACUUM INTO`, which gives the copy a cache of the same size: the copy's pages are
/// written out once it is full, so a small one lets the copy (and its progress) grow as
/// the pages are made, and bounds what the copy holds in memory.
const VACUUM_CACHE_KIB: i32 = -2048;

/// Options of [`rekey_connection`].
#[derive(Debug, Clone, Copy, Default)]
pub struct RekeyOptions {
    /// The page-1 layout of the new file; `None` keeps the current one.
    pub layout: Option<NewFileLayout>,
    /// The page format the file is in now.
    pub scheme: CipherScheme,
    /// The page format of the new file; `None` keeps the current one. Another format has
    /// another reserve, so the new file is a logical copy (`VACUUM INTO`), not the same
    /// pages re-encrypted.
    pub new_scheme: Option<CipherScheme>,
}

fn busy(e: &sqlite::Error) -> bool {
    matches!(e.code & 0xff, ffi::SQLITE_BUSY | ffi::SQLITE_LOCKED)
}

fn in_use(path: &str, op: &str) -> Error {
    Error::refused(
        ffi::SQLITE_BUSY,
        format!(
            "cannot {op} {path}: another connection has the database open (close every other connection first)"
        ),
    )
}

/// The exclusive access of step 1, and how to give it back if the operation fails
/// before the rename.
struct Exclusive<'a> {
    conn: &'a Connection,
    journal_mode: String,
    locking_mode: String,
    /// The file's first 100 bytes once the lock is held: what the handle `retire`
    /// writes through must show (see [`Exclusive::hold_for_retire`]).
    head: Option<[u8; 100]>,
}

impl<'a> Exclusive<'a> {
    /// `file` is the database's path, `path` how messages show it.
    /// Checkpoints and leaves WAL mode (SQLite refuses while another connection has the
    /// file open in WAL mode: each holds a shared lock on the database file for as long
    /// as it is open), then takes an EXCLUSIVE lock and keeps it (refused while another
    /// connection reads or writes). Connections that are open in rollback-journal mode
    /// but idle hold no lock and cannot be seen (what they see afterwards: `retire_old`).
    ///
    /// PERSIST and TRUNCATE leave a `-journal` beside the file between transactions
    /// (PERSIST: the page images of the last one, under the old key or in plaintext);
    /// they are switched to DELETE like WAL, and a journal still there once the lock is
    /// held is removed: it cannot be hot then (SQLite rolls a hot journal back before it
    /// grants the lock), and after the rename it would sit beside the new file.
    fn take(
        fs: &dyn FileSystem,
        conn: &'a Connection,
        (file, path): (&Path, &str),
        op: &str,
    ) -> Result<Exclusive<'a>> {
        let journal_mode = conn
            .query_text("PRAGMA main.journal_mode")?
            .unwrap_or_else(|| "delete".into())
            .to_ascii_lowercase();
        let locking_mode = conn
            .query_text("PRAGMA main.locking_mode")?
            .unwrap_or_else(|| "normal".into())
            .to_ascii_lowercase();
        let mut ex = Exclusive {
            conn,
            journal_mode,
            locking_mode,
            head: None,
        };
        if ex.leaves_journal_mode() {
            match conn.query_text("PRAGMA main.journal_mode = DELETE") {
                Ok(Some(mode)) if mode.eq_ignore_ascii_case("delete") => {}
                Ok(_) => return Err(in_use(path, op)),
                Err(e) if busy(&e) => return Err(in_use(path, op)),
                Err(e) => return Err(e.into()),
            }
            // SQLite ignores a failure to delete the WAL file after the checkpoint, and
            // then reopens that WAL at once (it does so whenever it finds one); the
            // connection must not be renamed over in that state (it would go on using
            // the WAL and -shm by name, beside the copy).
            if ex.was_wal() && wal_beside(fs, file) {
                return Err(ex.failed(Error::refused(
                    ffi::SQLITE_IOERR_DELETE,
                    format!("cannot {op} {path}: its WAL file could not be removed after the checkpoint; {path} is unchanged"),
                )));
            }
        }
        let locked = conn
            .execute_batch("PRAGMA main.locking_mode = EXCLUSIVE")
            .and_then(|()| conn.execute_batch("BEGIN EXCLUSIVE; COMMIT"));
        match locked {
            Ok(()) => {
                // The file must not be renamed over while this connection is in WAL
                // mode (it would go on using the WAL and -shm by name, beside the copy).
                let mode = conn.query_text("PRAGMA main.journal_mode");
                if !matches!(&mode, Ok(Some(m)) if !m.eq_ignore_ascii_case("wal")) {
                    return Err(ex.failed(Error::refused(
                        ffi::SQLITE_BUSY,
                        format!("cannot {op} {path}: the database went back to WAL mode"),
                    )));
                }
                let journal = beside(file, "-journal");
                if fs.file_len(&journal).is_ok() {
                    if let Err(e) = fs.remove(&journal) {
                        let e = Error::io("remove the old journal of", path, e);
                        return Err(ex.failed(e));
                    }
                }
                ex.head = ex.head_at(fs, file);
                Ok(ex)
            }
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                Err(ex.failed(if busy(&e) { in_use(path, op) } else { e.into() }))
            }
        }
    }

    fn was_wal(&self) -> bool {
        self.journal_mode == "wal"
    }

    /// Whether the file at `path` is still the one this connection has open (SQLite's
    /// own test, `SQLITE_FCNTL_HAS_MOVED`).
    fn still_at_path(&self) -> bool {
        let mut moved = 0;
        self.conn
            .file_control_int(c"main", ffi::SQLITE_FCNTL_HAS_MOVED, &mut moved)
            .is_ok()
            && moved == 0
    }

    /// The first 100 bytes of the file at `file`, when it is this connection's.
    fn head_at(&self, fs: &dyn FileSystem, file: &Path) -> Option<[u8; 100]> {
        let mut head = [0u8; 100];
        let mut f = OsFile::open(fs.vfs(), &file.to_string_lossy(), false).ok()?;
        f.read_at(&mut head, 0).ok()?;
        self.still_at_path().then_some(head)
    }

    /// A handle on the file at `file` for `replace::retire`, opened through the VFS
    /// (which shares its POSIX locks with the connection's handle and keeps them when
    /// this one is closed; closing a plain descriptor would drop them). Only when the
    /// path still leads to this connection's file before and after the open, and the
    /// handle shows the header seen when the lock was taken: retire must never write
    /// into another file that someone swapped in under the name (a symbolic link to a
    /// file of another user, say). `None` otherwise: nothing is retired.
    fn hold_for_retire(&self, fs: &dyn FileSystem, file: &Path) -> Option<OsFile> {
        let expected = self.head?;
        if !fs.handles_follow_renames() || !self.still_at_path() {
            return None;
        }
        let mut held = OsFile::open(fs.vfs(), &file.to_string_lossy(), true).ok()?;
        let mut head = [0u8; 100];
        held.read_at(&mut head, 0).ok()?;
        (head == expected && self.still_at_path()).then_some(held)
    }

    /// True for the journal modes that keep a file beside the database between
    /// transactions (left for DELETE during the operation).
    fn leaves_journal_mode(&self) -> bool {
        matches!(self.journal_mode.as_str(), "wal" | "persist" | "truncate")
    }

    /// Gives the lock back and restores the journal mode (the operation failed). The
    /// lock is released at the next access in NORMAL mode. An error says the journal
    /// mode could not be restored (a full disk can refuse the switch back to WAL).
    fn restore(&self) -> std::result::Result<(), sqlite::Error> {
        let c = self.conn;
        let _ = c.execute_batch(&format!("PRAGMA main.locking_mode = {}", self.locking_mode));
        let _ = c.execute_batch("SELECT count(*) FROM main.sqlite_schema");
        if !self.leaves_journal_mode() {
            return Ok(());
        }
        let mode = c.query_text(&format!("PRAGMA main.journal_mode = {}", self.journal_mode))?;
        if mode.is_some_and(|m| m.eq_ignore_ascii_case(&self.journal_mode)) {
            Ok(())
        } else {
            Err(sqlite::Error::new(
                ffi::SQLITE_BUSY,
                "SQLite kept another journal mode".to_owned(),
            ))
        }
    }

    /// `e`, after restoring the lock and journal mode; when the journal mode could not
    /// be restored, the message says so (the file itself is consistent: only the mode
    /// differs).
    fn failed(&self, e: Error) -> Error {
        match self.restore() {
            Ok(()) => e,
            Err(why) => {
                let code = e.code();
                Error::Sqlite(sqlite::Error::new(
                    code,
                    format!(
                        "{e}; and the journal mode could not be set back to {} ({}): the database is consistent, in journal mode DELETE",
                        self.journal_mode.to_ascii_uppercase(),
                        why.message
                    ),
                ))
            }
        }
    }
}

/// Deletes the temporary copy unless the operation got as far as renaming it.
pub(super) struct TempCopy<'a> {
    pub(super) fs: &'a dyn FileSystem,
    pub(super) path: PathBuf,
    pub(super) keep: bool,
}

impl TempCopy<'_> {
    fn str(&self) -> Result<&str> {
        self.path
            .to_str()
            .ok_or_else(|| Error::refused(ffi::SQLITE_CANTOPEN, "the file name is not valid UTF-8"))
    }
}

impl TempCopy<'_> {
    /// Deletes the copy now (the operation failed): before the journal mode is restored,
    /// which on a full disk needs the room the copy took.
    fn discard(&mut self) {
        if !self.keep {
            replace::remove_temp(self.fs, &self.path);
            self.keep = true;
        }
    }
}

impl Drop for TempCopy<'_> {
    fn drop(&mut self) {
        self.discard();
    }
}

/// A VFS for files under `key` of `page_size`-byte pages, over the file system's VFS.
pub(super) fn vfs_for(
    fs: &dyn FileSystem,
    key: &Key,
    scheme: CipherScheme,
    layout: NewFileLayout,
    page_size: usize,
) -> Result<KeyedVfsHandle> {
    KeyedVfsHandle::register_with_scheme(&VfsKey::Raw(key), scheme, layout, page_size, fs.vfs())
        .map_err(|rc| Error::Sqlite(sqlite::Error::from_code(rc)))
}

/// Where a file's contents are read and written: through a keyed VFS, or the file
/// system's own (plaintext).
enum Through<'a> {
    Keyed(&'a KeyedVfsHandle),
    Plain(&'a dyn FileSystem),
}

/// Opens `path` with `flags` through `through`; a keyed connection as
/// `connection_policy::open_keyed` prepares every one (its page size told to SQLite
/// before anything is read).
fn open_through(path: &str, flags: OpenFlags, through: &Through<'_>) -> Result<Connection> {
    match through {
        Through::Plain(fs) => Ok(Connection::open(path, flags, fs.vfs())?),
        Through::Keyed(vfs) => Ok(crate::connection_policy::open_keyed(path, flags, vfs)?),
    }
}

/// Gives a closed copy the WAL journal mode (it was made in rollback mode).
fn make_wal(path: &str, through: &Through<'_>) -> Result<()> {
    let flags = OpenFlags {
        must_exist: true,
        ..OpenFlags::default()
    };
    let conn = open_through(path, flags, through)?;
    let mode = conn.query_text("PRAGMA main.journal_mode = WAL")?;
    if !mode.is_some_and(|m| m.eq_ignore_ascii_case("wal")) {
        return Err(Error::refused(
            ffi::SQLITE_ERROR,
            "cannot set the copy's journal mode to WAL",
        ));
    }
    conn.close().map_err(|(_, e)| e)?;
    Ok(())
}

/// Checks the copy before it replaces anything: every page authenticates with the key
/// it was written under.
pub(super) fn check_copy(
    fs: &dyn FileSystem,
    copy: &Path,
    (key, scheme): (&Key, CipherScheme),
    page_size: usize,
    target: &str,
) -> Result<u64> {
    authenticate_closed_file(fs, copy, key, scheme, page_size).map_err(|e| match e {
        CopyCheckError::Read(e) => Error::in_file("read back the new copy of", target, e),
        CopyCheckError::BadPage(pgno) => Error::refused(
            ffi::SQLITE_CORRUPT,
            format!("the new copy of {target} failed verification at page {pgno}; {target} is unchanged"),
        ),
    })
}

/// `<target><suffix>`: the name of one of SQLite's files beside it.
fn beside(target: &Path, suffix: &str) -> PathBuf {
    let mut name = target.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// Whether a WAL file is beside `target`.
fn wal_beside(fs: &dyn FileSystem, target: &Path) -> bool {
    fs.file_len(&beside(target, "-wal")).is_ok()
}

/// What the file that replaces `target` must keep: its owner, group and mode. Refuses a
/// file with other names (hard links): a rename replaces one name, and the others would
/// keep the old content (plaintext, or the old key).
fn ownership_to_keep(
    fs: &dyn FileSystem,
    target: &Path,
    shown: &str,
    op: &str,
) -> Result<Option<Ownership>> {
    let links = fs
        .link_count(target)
        .map_err(|e| Error::io("open", shown, e))?;
    if let Some(links) = links.filter(|&n| n > 1) {
        return Err(Error::refused(
            ffi::SQLITE_CANTOPEN,
            format!(
                "cannot {op} {shown}: the file has {links} names (hard links), and the others would keep the old content; remove the other names first"
            ),
        ));
    }
    fs.ownership(target)
        .map_err(|e| Error::io("open", shown, e))
}

/// Gives the (still empty) copy the original's owner and group, before anything is
/// written into it; refused when this process may not (another user's file, a group it
/// is not in): the replacement would otherwise change hands.
///
/// On Windows, where `own` is `None`, the copy gets the original's owner, group and DACL
/// instead ([`FileSystem::copy_security`]), refused the same way.
pub(super) fn adopt_owner(
    fs: &dyn FileSystem,
    (original, copy): (&Path, &Path),
    own: Option<Ownership>,
    shown: &str,
    op: &str,
) -> Result<()> {
    fs.copy_security(original, copy).map_err(|e| {
        Error::refused(
            ffi::SQLITE_PERM,
            format!(
                "cannot {op} {shown}: the new file cannot be given the owner, group and access control list of the old one ({e}); {shown} is unchanged"
            ),
        )
    })?;
    let Some(o) = own else { return Ok(()) };
    fs.set_owner(copy, o.uid, o.gid).map_err(|e| {
        Error::refused(
            ffi::SQLITE_PERM,
            format!(
                "cannot {op} {shown}: the new file cannot be given the owner and group of the old one (uid {}, gid {}: {}); {shown} is unchanged",
                o.uid,
                o.gid,
                std::io::Error::from(e.kind())
            ),
        )
    })
}

/// Refuses to rename over `target` while a WAL file is beside it (nothing should have
/// made one since step 1; after the rename it would be taken for the copy's).
fn no_wal_beside(fs: &dyn FileSystem, target: &Path) -> Result<()> {
    if wal_beside(fs, target) {
        let shown = shown(target);
        return Err(Error::refused(
            ffi::SQLITE_BUSY,
            format!("cannot replace {shown}: a WAL file is beside it; {shown} is unchanged"),
        ));
    }
    Ok(())
}

/// Step 2b: gives the copy the original's mode (it was made 0600) and syncs it.
fn finish_copy(copy: &TempCopy<'_>, target: &Path, own: Option<Ownership>, op: &str) -> Result<()> {
    let fs = copy.fs;
    if let Some(o) = own {
        fs.set_mode(&copy.path, o.mode)
            .map_err(|e| Error::io("give the copy the mode of", &shown(target), e))?;
    }
    replace::sync_file(fs, &copy.path)?;
    pause_point(op, "synced");
    Ok(())
}

/// Steps 2b-3 where a file can be renamed over while open: [`finish_copy`], rename it
/// over `target`, sync the directory, retire the old file.
fn commit_copy(
    copy: &mut TempCopy<'_>,
    target: &Path,
    (own, ex): (Option<Ownership>, &Exclusive<'_>),
    op: &str,
) -> Result<()> {
    let fs = copy.fs;
    finish_copy(copy, target, own, op)?;
    // The file being replaced, for `retire` once it has no name any more.
    let old = ex.hold_for_retire(fs, target);
    replace::rename_over(fs, &copy.path, target)?;
    copy.keep = true;
    pause_point(op, "renamed");
    // The rename has happened: the file is the new one whatever follows. A directory
    // that cannot be synced (some network file systems) leaves the rename to the OS's
    // own write-back; that is no reason to report the operation as failed, but then the
    // old file is not retired (a power loss could still bring it back).
    let synced = replace::sync_dir_of(fs, target).is_ok();
    pause_point(op, "dir-synced");
    if let (true, Some(old)) = (synced, old) {
        replace::retire(old);
    }
    Ok(())
}

/// Step 3 where an open file can't be renamed over (Windows), once the copy is durable
/// ([`finish_copy`]) and the operation's connection has closed every handle it had on
/// `target`: [`FileSystem::replace_released`] (refused, `target` unchanged, while another
/// process has it open or when it was written since `head` was read under the lock), then
/// the directory synced. Nothing is left to retire: no handle has the old file open.
fn replace_released(
    copy: &mut TempCopy<'_>,
    target: &Path,
    head: Option<&[u8; 100]>,
    (op, path): (&str, &str),
) -> Result<()> {
    let fs = copy.fs;
    pause_point(op, "released");
    match fs.replace_released(&copy.path, target, head) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ResourceBusy => {
            return Err(Error::refused(
                ffi::SQLITE_BUSY,
                format!(
                    "cannot {op} {path}: the file is open elsewhere (another connection or process: close it first); {path} is unchanged"
                ),
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(Error::refused(
                ffi::SQLITE_BUSY,
                format!(
                    "cannot {op} {path}: another process wrote into it while it was being replaced; {path} is unchanged"
                ),
            ))
        }
        Err(e) => return Err(Error::io("rename the copy over", path, e)),
    }
    copy.keep = true;
    pause_point(op, "renamed");
    // As in commit_copy: the file is the new one whatever follows.
    let _ = replace::sync_dir_of(fs, target);
    pause_point(op, "dir-synced");
    Ok(())
}

/// Whether `conn`'s main database file was let go of by [`release_main_file`] (the
/// connection can only be closed then: a rekey that failed after it opens the file again).
pub fn connection_released(conn: &Connection) -> bool {
    let mut asked = 0;
    conn.file_control_int(c"main", cipherlite_vfs::FCNTL_RELEASE_FILE, &mut asked)
        .is_ok()
        && asked == 1
}

/// Makes `conn` (through a keyed VFS, between transactions) close its handle on its main
/// database file and its EXCLUSIVE lock with it, so that Windows lets the file be renamed
/// over; every later read or write of the connection fails.
fn release_main_file(conn: &Connection, path: &str) -> Result<()> {
    let mut release = 1;
    conn.file_control_int(c"main", cipherlite_vfs::FCNTL_RELEASE_FILE, &mut release)
        .map_err(|e| {
            Error::refused(
                e.code,
                format!("cannot rekey {path}: the connection could not let go of the file ({}); {path} is unchanged", e.message),
            )
        })
}

/// The file's page 1 layout, by which one authenticates under `key`.
fn current_layout(
    fs: &dyn FileSystem,
    path: &str,
    key: &Key,
    page_size: usize,
) -> Result<NewFileLayout> {
    let mut file = OsFile::open(fs.vfs(), path, false)?;
    let mut page1 = vec![0u8; page_size];
    file.read_at(&mut page1, 0)?;
    let layout = codec::read_salt(&page1)
        .ok()
        .and_then(|salt| PageCodec::new(key, salt, page_size).ok())
        .and_then(|c| c.detect_page1_layout(&page1).ok());
    match layout {
        Some(codec::Page1Layout::SqlCipher) => Ok(NewFileLayout::SqlCipher),
        Some(codec::Page1Layout::Sqlite3mc) => Ok(NewFileLayout::Sqlite3mc),
        None => Err(Error::Sqlite(sqlite::Error::from_code(ffi::SQLITE_NOTADB))),
    }
}

/// Re-encrypts database `main` of `conn` (open through a keyed VFS with `old_key`)
/// under `new_key`: page by page ([`reencrypt_pages`]), then sync/rename/sync (module
/// docs). On success the file at its path is the new one and
/// `conn` still has the old, unlinked file open: the caller closes it and opens the
/// path with the new key. On error nothing changed and `conn` works as before.
pub fn rekey_connection(
    conn: &Connection,
    old_key: &Key,
    new_key: &Key,
    options: RekeyOptions,
    progress: Progress<'_>,
) -> Result<()> {
    rekey_connection_on(&OsFileSystem, conn, old_key, new_key, options, progress)
}

/// [`rekey_connection`] on the file system `fs` (the one `conn`'s VFS stands on).
pub fn rekey_connection_on(
    fs: &dyn FileSystem,
    conn: &Connection,
    old_key: &Key,
    new_key: &Key,
    options: RekeyOptions,
    progress: Progress<'_>,
) -> Result<()> {
    const OP: &str = "rekey";
    if !conn.is_autocommit() {
        return Err(Error::refused(
            ffi::SQLITE_MISUSE,
            "cannot rekey a database while a transaction is open",
        ));
    }
    let path = conn.db_filename(c"main").unwrap_or_default();
    if path.is_empty() {
        return Err(Error::refused(
            ffi::SQLITE_MISUSE,
            "cannot rekey an in-memory or temporary database",
        ));
    }
    if conn.is_readonly(c"main") {
        return Err(Error::refused(
            ffi::SQLITE_READONLY,
            format!("cannot rekey {path}: the database is open read-only"),
        ));
    }
    super::verify::refuse_if_replaced(conn, OP)?;
    // The copy keeps the page size (SQLCipher's cipher_page_size): the key alone opens it
    // with the same options as before.
    let page_size = super::verify::page_size_of(conn)?;
    let new_scheme = options.new_scheme.unwrap_or(options.scheme);
    let layout = match options.layout {
        Some(l) => l,
        // AEGIS files have one page-1 layout (SQLite3 Multiple Ciphers').
        None if options.scheme.is_aegis() => NewFileLayout::Sqlite3mc,
        None => current_layout(fs, &path, old_key, page_size)?,
    };
    let target = PathBuf::from(&path);
    let own = ownership_to_keep(fs, &target, &path, OP)?;
    // First, so that a directory we cannot write in is reported as such, before anything
    // (the journal mode) is touched.
    let mut copy = TempCopy {
        fs,
        path: replace::create_temp_beside(fs, &target, OP)?,
        keep: false,
    };
    adopt_owner(fs, (&target, &copy.path), own, &path, OP)?;
    let ex = Exclusive::take(fs, conn, (&target, &path), OP)?;
    let result = (|| -> Result<()> {
        replace::remove_leftovers(fs, &target, &copy.path);
        let vfs = vfs_for(fs, new_key, new_scheme, layout, page_size)?;
        let pages = if new_scheme == options.scheme {
            Some(reencrypt_pages(
                fs,
                &path,
                (old_key, options.scheme),
                &copy.path,
                new_key,
                layout,
                page_size,
                progress,
            )?)
        } else {
            // Another reserve: SQLite rebuilds every page for it, with VACUUM INTO the new
            // format's VFS. The connection (opened without URIs, as every connection is)
            // cannot name that VFS: the copy is read by a second connection through a
            // keyed VFS of the old key and format, streamed from the file under our
            // exclusive lock ([`LockedReader`]); only where that connection cannot read the
            // file, from the database's image in memory, wiped when dropped.
            let reader =
                LockedReader::open(fs, &target, (old_key, options.scheme), layout, page_size);
            let image;
            let source = match &reader {
                Some(r) => &r.conn,
                None => {
                    image = memory_copy(conn, "main")?.0;
                    &image
                }
            };
            let (source_pages, source_page_size) = page_geometry(source)?;
            source.execute_batch(&format!("PRAGMA main.page_size = {page_size}"))?;
            let uri = file_uri(
                &copy.path,
                &format!(
                    "vfs={}&reserve={}",
                    vfs.name().to_string_lossy(),
                    new_scheme.reserve()
                ),
            )?;
            let geometry = (source_pages * source_page_size as u64, page_size);
            vacuum_into_reporting(fs, source, (&uri, &copy.path), geometry, progress)?;
            None
        };
        pause_point(OP, "copied");
        if ex.was_wal() {
            make_wal(copy.str()?, &Through::Keyed(&vfs))?;
        }
        let checked = check_copy(fs, &copy.path, (new_key, new_scheme), page_size, &path)?;
        if let Some(pages) = pages.filter(|&p| p != checked) {
            return Err(Error::refused(
                ffi::SQLITE_CORRUPT,
                format!("the new copy of {path} has {checked} pages instead of {pages}; {path} is unchanged"),
            ));
        }
        no_wal_beside(fs, &target)?;
        if fs.renames_over_open_files() {
            return commit_copy(&mut copy, &target, (own, &ex), OP);
        }
        finish_copy(&copy, &target, own, OP)?;
        release_main_file(conn, &path)?;
        replace_released(&mut copy, &target, ex.head.as_ref(), (OP, &path))
    })();
    result.map_err(|e| {
        copy.discard();
        // A connection that let go of its file can't be given its modes back: the caller
        // opens the file again (see `connection_released`).
        if connection_released(conn) {
            e
        } else {
            ex.failed(e)
        }
    })
}

/// Writes into `dest` (an empty file) every page of the encrypted database file `source`,
/// authenticated and decrypted with `old_key` and encrypted again with `new_key` under a
/// new salt, page 1 in `layout`, pages of `page_size` bytes. Nothing may change `source` meanwhile: the caller holds
/// the EXCLUSIVE lock, and the file has no WAL (checkpointed) and no hot journal (rolled
/// back by the lock), so its pages are exactly the committed database. Two passes of the
/// codec, spread over the cores, and no SQLite in between. Returns the number of pages.
#[allow(clippy::too_many_arguments)] // one call site; the names say what each is
fn reencrypt_pages(
    fs: &dyn FileSystem,
    source: &str,
    (old_key, scheme): (&Key, CipherScheme),
    dest: &Path,
    new_key: &Key,
    layout: NewFileLayout,
    page_size: usize,
    progress: Progress<'_>,
) -> Result<u64> {
    let page = page_size as u64;
    let per_read = super::verify::pages_per_read(page_size);
    let corrupt = |what: String| {
        Error::refused(
            ffi::SQLITE_CORRUPT,
            format!("{what}; {source} is unchanged"),
        )
    };
    let mut src = OsFile::open(fs.vfs(), source, false)?;
    let size = src.size()?;
    if size == 0 || size % page != 0 {
        return Err(corrupt(format!(
            "{source} is not a whole number of {page_size}-byte pages"
        )));
    }
    let pages = size / page;
    // Plaintext passes through these: wiped when dropped.
    let mut chunk = zeroize::Zeroizing::new(vec![0u8; page_size * per_read as usize]);
    src.read_at(&mut chunk[..page_size], 0)?;
    let old = codec::read_salt(&chunk)
        .and_then(|salt| PageCodec::with_scheme(scheme, old_key, salt, page_size))
        .map_err(|e| corrupt(format!("page 1 of {source}: {e}")))?;
    let new = codec::random_salt()
        .and_then(|salt| PageCodec::with_scheme(scheme, new_key, salt, page_size))
        .map_err(|e| Error::refused(ffi::SQLITE_IOERR, e.to_string()))?;
    let dest_name = dest.to_string_lossy();
    // Written through the file system's VFS, as SQLite writes its own files.
    let mut out = OsFile::open(fs.vfs(), &dest_name, true)
        .map_err(|e| Error::in_file("write the copy", &dest_name, e))?;
    // Why a page could not be carried over.
    enum PageError {
        Authentication(codec::CodecError),
        Encryption(codec::CodecError),
        TooLarge,
    }
    let reencrypt = |pgno: u64, image: &mut [u8]| -> Result<(), PageError> {
        if super::verify::is_lock_page(pgno, page_size) && codec::is_all_zero(image) {
            return Ok(()); // the hole SQLite leaves for its lock bytes, copied as is
        }
        let n = u32::try_from(pgno).map_err(|_| PageError::TooLarge)?;
        // Plaintext passes through this buffer: wiped when dropped.
        let mut plain = zeroize::Zeroizing::new(vec![0u8; page_size]);
        old.decrypt_page(n, image, &mut plain)
            .map_err(PageError::Authentication)?;
        new.encrypt_page(n, layout.into(), &plain, image)
            .map_err(PageError::Encryption)
    };
    let mut first = 1u64;
    while first <= pages {
        let count = per_read.min(pages - first + 1);
        let bytes = &mut chunk[..(count * page) as usize];
        src.read_at(bytes, (first - 1) * page)?;
        super::parallel::each_page(first, bytes, page_size, &reencrypt).map_err(
            |(pgno, e)| match e {
                PageError::Authentication(e) => corrupt(format!(
                    "page {pgno} of {source} does not authenticate ({e})"
                )),
                PageError::Encryption(e) => {
                    Error::refused(ffi::SQLITE_IOERR, format!("page {pgno}: {e}"))
                }
                PageError::TooLarge => corrupt(format!("{source} is too large")),
            },
        )?;
        out.write_at(bytes, (first - 1) * page)
            .map_err(|e| Error::in_file("write the copy", &dest_name, e))?;
        first += count;
        progress(first - 1, pages);
    }
    Ok(pages)
}

/// `file:` URI for `path` (absolute) with query parameters.
pub(super) fn file_uri(path: &Path, params: &str) -> Result<String> {
    let s = path
        .to_str()
        .ok_or_else(|| Error::refused(ffi::SQLITE_CANTOPEN, "the file name is not valid UTF-8"))?;
    let mut uri = String::from("file:");
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri.push('?');
    uri.push_str(params);
    Ok(uri)
}

pub(super) fn absolute(path: &str) -> Result<PathBuf> {
    crate::connection_policy::refuse_reserved_name(path)?;
    std::path::absolute(path).map_err(|e| Error::io("resolve", path, e))
}

fn require_file(fs: &dyn FileSystem, path: &Path, shown: &str) -> Result<u64> {
    match fs.file_len(path) {
        Ok(len) => Ok(len),
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => Err(Error::refused(
            ffi::SQLITE_CANTOPEN,
            format!("cannot open {shown}: not a file"),
        )),
        Err(e) => Err(Error::io("open", shown, e)),
    }
}

#[cfg(test)]
thread_local! {
    /// Bytes of database images [`memory_copy`] made on this thread: what the tests read to
    /// tell a copy streamed from the file from one made from an image held in memory.
    pub(super) static IMAGE_BYTES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// A connection (one that takes URIs, so that `VACUUM INTO` can name a keyed VFS) on an
/// in-memory copy of database `schema` of `conn`, and the copy's size in bytes. The image
/// is plaintext in memory only, wiped when dropped.
pub(super) fn memory_copy(conn: &Connection, schema: &str) -> Result<(Connection, u64)> {
    let mut image = zeroize::Zeroizing::new(conn.serialize(schema)?.unwrap_or_default());
    #[cfg(test)]
    IMAGE_BYTES.with(|n| n.set(n.get() + image.len() as u64));
    // A WAL database's header says so (bytes 18 and 19 = 2), and SQLite cannot open an
    // in-memory image in WAL mode (SQLITE_CANTOPEN): the image is the committed content
    // already, so it is marked as a rollback-journal database (1).
    if let Some(versions) = image.get_mut(18..20) {
        if versions == [2, 2] {
            versions.copy_from_slice(&[1, 1]);
        }
    }
    let memory = Connection::open(
        ":memory:",
        OpenFlags {
            uri: true,
            ..OpenFlags::default()
        },
        None,
    )?;
    if !image.is_empty() {
        memory.deserialize_main(&image, false)?;
    }
    Ok((memory, image.len() as u64))
}

/// Runs `VACUUM INTO uri` on `conn`, reporting progress in `page_size`-byte pages from
/// the size of `copy` so far against `total_bytes`: `(0, total)` first, then at every
/// check of SQLite's progress handler, `(total, total)` at the end. A report that returns
/// `false` stops the copy (`SQLITE_INTERRUPT`).
pub(super) fn vacuum_into(
    fs: &dyn FileSystem,
    conn: &Connection,
    uri: &str,
    copy: &Path,
    (total_bytes, page_size): (u64, usize),
    report: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<()> {
    let page = page_size as u64;
    let total = total_bytes.div_ceil(page).max(1);
    if !report(0, total) {
        return Err(Error::Sqlite(sqlite::Error::from_code(
            ffi::SQLITE_INTERRUPT,
        )));
    }
    let mut on_progress = || {
        let done = fs.file_len(copy).unwrap_or(0) / page;
        report(done.min(total), total)
    };
    // Every caller's `conn` is a connection of its own.
    conn.execute_batch(&format!("PRAGMA main.cache_size = {VACUUM_CACHE_KIB}"))?;
    conn.with_progress_handler(PROGRESS_EVERY, &mut on_progress, || {
        conn.execute_batch(&format!("VACUUM main INTO {}", quote_literal(uri)))
    })?;
    report(total, total);
    Ok(())
}

/// [`vacuum_into`] reporting to a key-lifecycle [`Progress`] (which cannot stop it).
fn vacuum_into_reporting(
    fs: &dyn FileSystem,
    conn: &Connection,
    (uri, copy): (&str, &Path),
    geometry: (u64, usize),
    progress: Progress<'_>,
) -> Result<()> {
    vacuum_into(fs, conn, uri, copy, geometry, &mut |done, total| {
        progress(done, total);
        true
    })
}

/// A second, read-only connection on the database file at `path` (absolute) through a
/// keyed VFS of its own for `key` in `scheme` — never a key-less one — for `VACUUM INTO`
/// another format's VFS while `conn` holds the file's EXCLUSIVE lock (a rekey, step 1).
/// It reads without locking (`nolock=1`): the lock keeps every other writer out, and the
/// file has no WAL and no journal then, so its pages are the committed database. `None`
/// when it cannot read the file; the caller copies from an image in memory instead.
pub(super) struct LockedReader {
    // Declared first: the connection closes before its VFS is unregistered.
    pub(super) conn: Connection,
    _vfs: KeyedVfsHandle,
}

impl LockedReader {
    fn open(
        fs: &dyn FileSystem,
        path: &Path,
        (key, scheme): (&Key, CipherScheme),
        layout: NewFileLayout,
        page_size: usize,
    ) -> Option<LockedReader> {
        let vfs = vfs_for(fs, key, scheme, layout, page_size).ok()?;
        let uri = file_uri(path, "nolock=1").ok()?;
        let flags = OpenFlags {
            readonly: true,
            must_exist: true,
            uri: true,
        };
        let conn = crate::connection_policy::open_keyed(&uri, flags, &vfs).ok()?;
        conn.execute_batch("SELECT count(*) FROM main.sqlite_schema")
            .ok()?;
        Some(LockedReader { conn, _vfs: vfs })
    }
}

/// The number of pages of database `main` of `conn` and their size: what a copy of it is
/// measured against.
pub(super) fn page_geometry(conn: &Connection) -> Result<(u64, usize)> {
    let page_size = super::verify::page_size_of(conn)?;
    let pages = conn
        .query_text("PRAGMA main.page_count")?
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(0);
    Ok((pages, page_size))
}

/// Encrypts the plaintext database file at `path` in place under `key`, with a new
/// page 1 in `layout` and pages of `page_size` bytes (SQLCipher's `cipher_page_size`:
/// the size the file must be opened with afterwards). The pages are rebuilt
/// (`VACUUM INTO` a file opened through a VFS with the key, 80 reserved bytes per page),
/// then sync/rename/sync.
/// Refused while any other connection uses the file, and for a file that is not a
/// plaintext SQLite database (an encrypted one included).
pub fn encrypt_file(
    path: &str,
    key: &Key,
    layout: NewFileLayout,
    page_size: usize,
    progress: Progress<'_>,
) -> Result<()> {
    encrypt_file_in(
        path,
        key,
        CipherScheme::SqlCipher4,
        layout,
        page_size,
        progress,
    )
}

/// [`encrypt_file`] into the page format `scheme`.
pub fn encrypt_file_in(
    path: &str,
    key: &Key,
    scheme: CipherScheme,
    layout: NewFileLayout,
    page_size: usize,
    progress: Progress<'_>,
) -> Result<()> {
    encrypt_file_on(
        &OsFileSystem,
        path,
        (key, scheme),
        layout,
        page_size,
        progress,
    )
}

/// [`encrypt_file`] on the file system `fs`.
pub fn encrypt_file_on(
    fs: &dyn FileSystem,
    path: &str,
    (key, scheme): (&Key, CipherScheme),
    layout: NewFileLayout,
    page_size: usize,
    progress: Progress<'_>,
) -> Result<()> {
    const OP: &str = "encrypt";
    // Symbolic links resolved: the file itself is replaced, not a link to it (which would
    // leave the plaintext where the link pointed).
    let size = require_file(fs, &absolute(path)?, path)?;
    let target = fs
        .canonicalize(Path::new(path))
        .map_err(|e| Error::io("open", path, e))?;
    let abs = target
        .to_str()
        .ok_or_else(|| Error::refused(ffi::SQLITE_CANTOPEN, "the file name is not valid UTF-8"))?;
    let mut head = [0u8; 16];
    let plaintext = size >= 512
        && OsFile::open(fs.vfs(), abs, false)
            .and_then(|mut f| f.read_at(&mut head, 0))
            .is_ok()
        && head == codec::SQLITE_HEADER_MAGIC;
    if !plaintext {
        return Err(Error::refused(
            ffi::SQLITE_NOTADB,
            format!("cannot encrypt {path}: it is not a plaintext SQLite database (is it encrypted already?)"),
        ));
    }
    let flags = OpenFlags {
        must_exist: true,
        uri: true,
        ..OpenFlags::default()
    };
    let own = ownership_to_keep(fs, &target, path, OP)?;
    // An absolute path never starts with "file:", so it is not taken for a URI.
    // First, so that a directory we cannot write in is reported as such.
    let mut copy = TempCopy {
        fs,
        path: replace::create_temp_beside(fs, &target, OP)?,
        keep: false,
    };
    adopt_owner(fs, (&target, &copy.path), own, path, OP)?;
    let conn = Connection::open(abs, flags, fs.vfs())?;
    conn.busy_timeout(0)?;
    conn.execute_batch("SELECT count(*) FROM main.sqlite_schema")?;
    let ex = Exclusive::take(fs, &conn, (&target, path), OP)?;
    let result = (|| -> Result<()> {
        replace::remove_leftovers(fs, &target, &copy.path);
        let vfs = vfs_for(fs, key, scheme, layout, page_size)?;
        let vfs_name = vfs.name().to_string_lossy().into_owned();
        // VACUUM INTO makes pages of the size asked for here (the VFS's).
        conn.execute_batch(&format!("PRAGMA main.page_size = {page_size}"))?;
        let uri = file_uri(
            &copy.path,
            &format!("vfs={vfs_name}&reserve={}", scheme.reserve()),
        )?;
        vacuum_into_reporting(fs, &conn, (&uri, &copy.path), (size, page_size), progress)?;
        pause_point(OP, "copied");
        if ex.was_wal() {
            make_wal(copy.str()?, &Through::Keyed(&vfs))?;
        }
        check_copy(fs, &copy.path, (key, scheme), page_size, path)?;
        no_wal_beside(fs, &target)?;
        if fs.renames_over_open_files() {
            commit_copy(&mut copy, &target, (own, &ex), OP)
        } else {
            finish_copy(&copy, &target, own, OP)
        }
    })();
    let result = result.map_err(|e| {
        copy.discard();
        ex.failed(e)
    });
    let head = ex.head;
    drop(ex);
    if result.is_err() || fs.renames_over_open_files() {
        drop(conn);
        return result;
    }
    // Where an open file can't be renamed over: the connection closes (every handle it
    // had on the file: it wrote nothing, so no journal is open), then the rename.
    if let Err((conn, e)) = conn.close() {
        drop(conn);
        copy.discard();
        return Err(e.into());
    }
    replace_released(&mut copy, &target, head.as_ref(), (OP, path))
}

/// Writes a plaintext copy of the encrypted database at `path` (of `page_size`-byte
/// pages) to `destination`, which must not exist (never in place). Pages are rebuilt
/// without reserved bytes, as a plaintext better-sqlite3 file has them, of the same
/// size; the journal mode is kept.
pub fn decrypt_file(
    path: &str,
    key: &Key,
    page_size: usize,
    destination: &str,
    progress: Progress<'_>,
) -> Result<()> {
    decrypt_file_in(
        path,
        (key, CipherScheme::SqlCipher4),
        page_size,
        destination,
        progress,
    )
}

/// [`decrypt_file`] of a file in the page format `scheme`.
pub fn decrypt_file_in(
    path: &str,
    (key, scheme): (&Key, CipherScheme),
    page_size: usize,
    destination: &str,
    progress: Progress<'_>,
) -> Result<()> {
    let fs: &dyn FileSystem = &OsFileSystem;
    const OP: &str = "decrypt";
    let source = absolute(path)?;
    let dest = absolute(destination)?;
    if source == dest {
        return Err(Error::refused(
            ffi::SQLITE_MISUSE,
            "decrypt writes a plaintext copy: the destination must be another file",
        ));
    }
    let size = require_file(fs, &source, path)?;
    if fs.file_len(&dest).is_ok() || dest.exists() {
        return Err(Error::io(
            "write the plaintext copy to",
            destination,
            std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        ));
    }
    let abs = source
        .to_str()
        .ok_or_else(|| Error::refused(ffi::SQLITE_CANTOPEN, "the file name is not valid UTF-8"))?;
    let vfs = vfs_for(fs, key, scheme, NewFileLayout::Sqlite3mc, page_size)?;
    let mut flags = OpenFlags {
        must_exist: true,
        uri: true,
        ..OpenFlags::default()
    };
    let keyed = Through::Keyed(&vfs);
    let conn = match open_through(abs, flags, &keyed) {
        Ok(c) => c,
        Err(e) if matches!(e.code() & 0xff, ffi::SQLITE_CANTOPEN | ffi::SQLITE_READONLY) => {
            flags.readonly = true;
            open_through(abs, flags, &keyed)?
        }
        Err(e) => return Err(e),
    };
    conn.busy_timeout(5000)?;
    conn.execute_batch("SELECT count(*) FROM main.sqlite_schema")?;
    let wal = conn
        .query_text("PRAGMA main.journal_mode")?
        .is_some_and(|m| m.eq_ignore_ascii_case("wal"));
    let mut copy = TempCopy {
        fs,
        path: replace::create_temp_beside(fs, &dest, OP)?,
        keep: false,
    };
    let plain_vfs = match fs.vfs() {
        Some(name) => name.to_string_lossy().into_owned(),
        None => sqlite::default_vfs_name()
            .ok_or_else(|| Error::refused(ffi::SQLITE_ERROR, "no default VFS"))?,
    };
    // Windows: the source's owner, group and DACL (who may read the plaintext is who
    // could read the database); elsewhere the mode below.
    fs.copy_security(&source, &copy.path).map_err(|e| {
        Error::refused(
            ffi::SQLITE_PERM,
            format!("cannot decrypt {path}: the plaintext copy cannot be given the owner, group and access control list of {path} ({e})"),
        )
    })?;
    // Partial plaintext copies a killed decrypt to this destination left.
    replace::remove_leftovers(fs, &dest, &copy.path);
    let uri = file_uri(&copy.path, &format!("vfs={plain_vfs}&reserve=0"))?;
    vacuum_into_reporting(fs, &conn, (&uri, &copy.path), (size, page_size), progress)?;
    drop(conn);
    drop(vfs);
    pause_point(OP, "copied");
    if wal {
        make_wal(copy.str()?, &Through::Plain(fs))?;
    }
    // Made 0600; now the source's read bits at most (its group's only when the copy
    // belongs to the same group), never execute or special bits.
    if let (Some(src), Some(mine)) = (
        fs.ownership(&source).ok().flatten(),
        fs.ownership(&copy.path).ok().flatten(),
    ) {
        let group = if src.gid == mine.gid { 0o060 } else { 0 };
        fs.set_mode(&copy.path, src.mode & (0o606 | group))
            .map_err(|e| Error::io("set the mode of", destination, e))?;
    }
    replace::sync_file(fs, &copy.path)?;
    pause_point(OP, "synced");
    replace::publish_new(fs, &copy.path, &dest)?;
    copy.keep = true;
    let _ = replace::sync_dir_of(fs, &dest);
    Ok(())
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn retire_never_writes_into_a_file_swapped_in_under_the_name() {
        let dir =
            std::env::temp_dir().join(format!("cipherlite-retire-swap-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let db = dir.join("app.db");
        let victim = dir.join("victim.db");
        // Two databases made alike: their headers may well be equal byte for byte.
        for p in [&db, &victim] {
            let c =
                Connection::open(&p.to_string_lossy(), OpenFlags::default(), None).expect("create");
            c.execute_batch("CREATE TABLE t(x); INSERT INTO t VALUES (1)")
                .expect("fill");
        }
        let conn =
            Connection::open(&db.to_string_lossy(), OpenFlags::default(), None).expect("open");
        conn.execute_batch("SELECT count(*) FROM t").expect("read");
        let fs = &OsFileSystem;
        let ex = Exclusive::take(fs, &conn, (&db, "app.db"), "encrypt").expect("lock");
        assert!(ex.hold_for_retire(fs, &db).is_some(), "its own file");
        // The name now leads elsewhere: a symbolic link to another database.
        std::fs::rename(&db, dir.join("moved.db")).expect("rename");
        std::os::unix::fs::symlink(&victim, &db).expect("symlink");
        assert!(ex.hold_for_retire(fs, &db).is_none(), "another file");
        ex.restore().expect("restore");
        drop(conn);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
