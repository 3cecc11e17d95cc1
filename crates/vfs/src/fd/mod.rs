//! Opening a database from file descriptors (better-sqlite3 13.2's
//! `new Database(fd, { journalFd })`): a process that was handed open descriptors of a
//! database file and of its rollback journal `<database>-journal` (by a parent, over a
//! socket) uses the database with its full guarantees without permission to open files
//! in the database's directory.
//!
//! One [`FdVfs`] is registered per such connection (like the keyed VFS), over the OS VFS:
//!
//! * the main database is opened by the OS VFS through `/proc/self/fd/<fd>` (a new open
//!   file description of the same file, reached without searching any directory; the
//!   OS VFS's `open` is hooked to allow that one magic link, see `install_open_hook`).
//!   So locking is the OS VFS's own: connections that open the file by path, in this
//!   process or others, coordinate with this one. The OS VFS checks the file through
//!   that path, so the caller's descriptor must stay open (closed, writes fail closed
//!   with SQLITE_READONLY_DBMOVED). Its methods are wrapped at version 1: no shared
//!   memory (so no WAL) and no memory mapping;
//! * the rollback journal is the descriptor given, reopened once through `/proc/self/fd`
//!   into a descriptor of our own (the caller may close theirs). Since it can't be
//!   created again without directory permission, it is never deleted: "deleting" it
//!   truncates it to zero bytes, which SQLite (here and in every other connection) takes
//!   for no journal. Other connections must not delete it either (journal_mode TRUNCATE
//!   or PERSIST there). If either file loses its name (deleted, or replaced by a
//!   rename), a crash could no longer be recovered by the connections that use the path,
//!   so the journal is no longer opened (SQLITE_CANTOPEN) and writes fail closed;
//! * WAL mode (`PRAGMA journal_mode=WAL` fails with a message) and transactions over
//!   several databases (super-journals) are refused; anything else (ATTACHed databases)
//!   goes to the OS VFS unchanged.
//!
//! Linux only (it needs `/proc/self/fd`). Encryption is not offered here: the keyed VFS
//! finds a database's journal and WAL by path, which a descriptor-opened database lacks.
//!
//! The parts: [`checks`] (the descriptors, before anything is opened), [`hook`] (the OS
//! VFS's `open` following `/proc/self/fd`), this module (the VFS, on
//! `cipherlite_sys::shim`, sorting SQLite's file names), [`main_file`] and [`journal`].

mod checks;
mod hook;
mod journal;
mod main_file;

pub use checks::{file_size, header_is_sqlite, validate, FdRefused};

use checks::proc_path;
use cipherlite_sys::ffi;
use cipherlite_sys::shim::{self, Registered, VfsShim};
use journal::{JournalFile, JOURNAL_METHODS};
use main_file::{main_inner, MainFile, MAIN_HEADER, MAIN_METHODS};
use std::{
    ffi::{c_char, c_int, CStr, CString},
    fs::File,
    os::unix::fs::MetadataExt,
    ptr,
    sync::atomic::{AtomicU64, Ordering},
};

/// The main database's file name inside SQLite (`db.name` is `fd:<n>` on the JS side).
const MAIN_NAME_PREFIX: &str = "fd:";

/// The state behind one registered VFS (registered by [`shim::register`]).
struct FdVfs {
    base: *mut ffi::sqlite3_vfs,
    /// The main database's name inside SQLite, `fd:<n>`.
    main_name: CString,
    /// `/proc/self/fd/<n>`, ended by NULs as SQLite's own file names are (a name is
    /// followed by its URI parameters and an empty string): the OS VFS keeps this
    /// pointer as the file's path and may look past the name.
    main_path: Vec<u8>,
    /// Our own descriptor of the journal (opened through /proc from the caller's).
    journal: File,
    main_dev_ino: (u64, u64),
    journal_dev_ino: (u64, u64),
}

/// A registered descriptor VFS. Dropping it unregisters the VFS and closes our journal
/// descriptor; the connection using it must be closed first (so no `JournalFile` still
/// points into it).
pub struct FdVfsHandle {
    registered: Registered<FdVfs>,
}

static NEXT_FD_VFS_ID: AtomicU64 = AtomicU64::new(1);

impl FdVfsHandle {
    /// Registers a VFS for database descriptor `fd` and journal descriptor `journal_fd`
    /// (checked by [`validate`] first).
    pub fn register(fd: i32, journal_fd: i32, readonly: bool) -> Result<FdVfsHandle, c_int> {
        // SAFETY: sqlite3_vfs_find(NULL) returns the default VFS, which lives forever.
        let base = unsafe { ffi::sqlite3_vfs_find(ptr::null()) };
        if base.is_null() {
            return Err(ffi::SQLITE_ERROR);
        }
        hook::install_open_hook(base)?;
        let journal = std::fs::OpenOptions::new()
            .read(true)
            .write(!readonly)
            .open(proc_path(journal_fd))
            .map_err(|_| ffi::SQLITE_CANTOPEN)?;
        let journal_meta = journal.metadata().map_err(|_| ffi::SQLITE_CANTOPEN)?;
        let main_meta = std::fs::metadata(proc_path(fd)).map_err(|_| ffi::SQLITE_CANTOPEN)?;
        let id = NEXT_FD_VFS_ID.fetch_add(1, Ordering::Relaxed);
        let cstring = |s: String| CString::new(s).map_err(|_| ffi::SQLITE_ERROR);
        let registered = shim::register(
            cstring(format!("cipherlite-fd-{id}"))?,
            FdVfs {
                base,
                main_name: cstring(format!("{MAIN_NAME_PREFIX}{fd}"))?,
                main_path: [proc_path(fd).as_bytes(), &[0u8; 4]].concat(),
                journal,
                main_dev_ino: (main_meta.dev(), main_meta.ino()),
                journal_dev_ino: (journal_meta.dev(), journal_meta.ino()),
            },
        )?;
        Ok(FdVfsHandle { registered })
    }

    /// The VFS name to pass to `sqlite3_open_v2`.
    pub fn name(&self) -> &CStr {
        self.registered.name()
    }

    /// The file name to pass to `sqlite3_open_v2` (`fd:<n>`).
    pub fn main_name(&self) -> &str {
        // The name is ASCII.
        self.registered
            .state()
            .main_name
            .to_str()
            .unwrap_or_default()
    }
}

/// What a file name SQLite asks for is, for this connection.
#[derive(PartialEq, Eq)]
enum Kind {
    Main,
    Journal,
    /// `-wal`, `-shm` or a super-journal `-mj…`: refused.
    Refused,
    Other,
}

impl FdVfs {
    /// # Safety
    /// `name` null or a C string.
    unsafe fn kind(&self, name: *const c_char) -> Kind {
        if name.is_null() {
            return Kind::Other;
        }
        // SAFETY: per contract.
        let name = unsafe { CStr::from_ptr(name) }.to_bytes();
        let main = self.main_name.as_bytes();
        match name.strip_prefix(main) {
            Some(b"") => Kind::Main,
            Some(b"-journal") => Kind::Journal,
            Some(rest) if rest.starts_with(b"-") => Kind::Refused,
            _ => Kind::Other,
        }
    }

    /// Both files still have their names: crash recovery by path still finds them. (The
    /// database is looked at through the caller's descriptor, which must stay open.)
    fn still_linked(&self) -> bool {
        let same = |path: &[u8], want: (u64, u64)| {
            std::str::from_utf8(path.split(|&b| b == 0).next().unwrap_or_default())
                .ok()
                .and_then(|p| std::fs::metadata(p).ok())
                .is_some_and(|m| m.nlink() > 0 && (m.dev(), m.ino()) == want)
        };
        let journal_ok = self
            .journal
            .metadata()
            .is_ok_and(|m| m.nlink() > 0 && (m.dev(), m.ino()) == self.journal_dev_ino);
        journal_ok && same(&self.main_path, self.main_dev_ino)
    }
}

impl VfsShim for FdVfs {
    // Version 2 at most: no system calls of its own to hand out.
    const VERSION: c_int = 2;

    fn base(&self) -> *mut ffi::sqlite3_vfs {
        self.base
    }

    fn file_size(&self) -> c_int {
        // SAFETY: the default VFS outlives every registration.
        let base = unsafe { &*self.base };
        // The main file is our header followed by the OS VFS's file (see `main_inner`).
        (MAIN_HEADER as c_int + base.szOsFile).max(std::mem::size_of::<JournalFile>() as c_int)
    }

    unsafe fn open(
        &self,
        name: *const c_char,
        out: *mut ffi::sqlite3_file,
        flags: c_int,
        out_flags: *mut c_int,
    ) -> c_int {
        // SAFETY: SQLite's xOpen contract (a file buffer of szOsFile bytes and a name
        // that is null or a C string).
        unsafe {
            let v = self;
            let Some(base_open) = (*v.base).xOpen else {
                return ffi::SQLITE_CANTOPEN;
            };
            match v.kind(name) {
                Kind::Main => {
                    (*out).pMethods = ptr::null();
                    let inner = main_inner(out);
                    (*inner).pMethods = ptr::null();
                    let rc =
                        base_open(v.base, v.main_path.as_ptr().cast(), inner, flags, out_flags);
                    if rc != ffi::SQLITE_OK {
                        if let Some(close) = (*inner).pMethods.as_ref().and_then(|m| m.xClose) {
                            close(inner);
                        }
                        return rc;
                    }
                    (*out.cast::<MainFile>()).vfs = v;
                    (*out).pMethods = &MAIN_METHODS;
                    ffi::SQLITE_OK
                }
                Kind::Journal => {
                    (*out).pMethods = ptr::null();
                    if !v.still_linked() {
                        return ffi::SQLITE_CANTOPEN;
                    }
                    let file = out.cast::<JournalFile>();
                    ptr::write(
                        file,
                        JournalFile {
                            base: ffi::sqlite3_file {
                                pMethods: &JOURNAL_METHODS,
                            },
                            vfs: v,
                        },
                    );
                    if !out_flags.is_null() {
                        *out_flags = flags;
                    }
                    ffi::SQLITE_OK
                }
                Kind::Refused => {
                    (*out).pMethods = ptr::null();
                    ffi::SQLITE_CANTOPEN
                }
                Kind::Other => base_open(v.base, name, out, flags, out_flags),
            }
        }
    }

    unsafe fn delete(&self, name: *const c_char, sync_dir: c_int) -> c_int {
        // SAFETY: name is a C string (SQLite's xDelete contract).
        match unsafe { self.kind(name) } {
            // The journal can't be made again: empty it instead (what SQLite's
            // journal_mode=TRUNCATE does), which every connection reads as no journal.
            Kind::Journal => match self
                .journal
                .set_len(0)
                .and_then(|()| self.journal.sync_all())
            {
                Ok(()) => ffi::SQLITE_OK,
                Err(_) => ffi::SQLITE_IOERR_DELETE,
            },
            Kind::Main | Kind::Refused => ffi::SQLITE_OK,
            // SAFETY: forwarding SQLite's arguments to the base VFS.
            Kind::Other => unsafe { shim::forward::delete(self.base, name, sync_dir) },
        }
    }

    unsafe fn access(&self, name: *const c_char, flags: c_int, out: *mut c_int) -> c_int {
        // SAFETY: name is a C string; out is writable (SQLite's xAccess contract).
        unsafe {
            match self.kind(name) {
                Kind::Journal => {
                    *out = match self.journal.metadata() {
                        Ok(m) => c_int::from(m.len() > 0),
                        Err(_) => return ffi::SQLITE_IOERR_ACCESS,
                    };
                    ffi::SQLITE_OK
                }
                Kind::Main => {
                    *out = 1;
                    ffi::SQLITE_OK
                }
                Kind::Refused => {
                    *out = 0;
                    ffi::SQLITE_OK
                }
                Kind::Other => shim::forward::access(self.base, name, flags, out),
            }
        }
    }

    unsafe fn full_pathname(&self, name: *const c_char, n: c_int, out: *mut c_char) -> c_int {
        // SAFETY: name is a C string; out has n bytes (SQLite's xFullPathname contract).
        unsafe {
            if self.kind(name) == Kind::Other {
                return shim::forward::full_pathname(self.base, name, n, out);
            }
            // Our own names stay as they are (they are not paths).
            let bytes = CStr::from_ptr(name).to_bytes_with_nul();
            if bytes.len() > usize::try_from(n).unwrap_or(0) {
                return ffi::SQLITE_CANTOPEN;
            }
            ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), out, bytes.len());
            ffi::SQLITE_OK
        }
    }
}
