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

use cipherlite_sys::ffi;
use std::{
    ffi::{c_char, c_int, c_void, CStr, CString},
    fs::File,
    os::unix::fs::{FileExt, MetadataExt},
    panic::{catch_unwind, AssertUnwindSafe},
    ptr,
    sync::atomic::{AtomicU64, Ordering},
};

/// The main database's file name inside SQLite (`db.name` is `fd:<n>` on the JS side).
const MAIN_NAME_PREFIX: &str = "fd:";
const O_ACCMODE: u32 = 0o3;
const O_WRONLY: u32 = 0o1;
const O_RDWR: u32 = 0o2;
const O_APPEND: u32 = 0o2000;
/// Linux's O_NOFOLLOW (arm64 has its own value).
#[cfg(target_arch = "aarch64")]
const O_NOFOLLOW: c_int = 0o100000;
#[cfg(not(target_arch = "aarch64"))]
const O_NOFOLLOW: c_int = 0o400000;
const PROC_FD_DIR: &[u8] = b"/proc/self/fd/";

/// The OS VFS opens every file with O_NOFOLLOW, which `/proc/self/fd/<n>` (a "magic"
/// link to the open file) can't be opened with. Its `open` system call is replaced, once,
/// by one that drops O_NOFOLLOW for paths under /proc/self/fd/ only and is the original
/// for every other path (any file that is not a magic link is opened exactly as before).
static ORIGINAL_OPEN: std::sync::OnceLock<OpenFn> = std::sync::OnceLock::new();
static OPEN_HOOK: std::sync::OnceLock<Result<(), c_int>> = std::sync::OnceLock::new();

type OpenFn = unsafe extern "C" fn(*const c_char, c_int, c_int) -> c_int;

unsafe extern "C" fn open_following_proc_fd(
    path: *const c_char,
    flags: c_int,
    mode: c_int,
) -> c_int {
    // Always set: the original is stored before the hook is installed.
    let Some(original) = ORIGINAL_OPEN.get() else {
        return -1;
    };
    let mut flags = flags;
    // SAFETY: the OS VFS passes a C string (or null, which the original gets unchanged).
    if !path.is_null()
        && unsafe { CStr::from_ptr(path) }
            .to_bytes()
            .starts_with(PROC_FD_DIR)
    {
        flags &= !O_NOFOLLOW;
    }
    // SAFETY: the original system call of the OS VFS, with its own signature.
    unsafe { original(path, flags, mode) }
}

/// Installs [`open_following_proc_fd`] in the OS VFS `base` (once per process).
fn install_open_hook(base: *mut ffi::sqlite3_vfs) -> Result<(), c_int> {
    let installed = OPEN_HOOK.get_or_init(|| {
        // SAFETY: base is the default VFS; its system-call table holds `open` as a
        // `int(*)(const char*, int, int)` stored under SQLite's generic pointer type, so
        // the casts between the two are exact. The replacement is set once per process
        // (OnceLock), before any file is opened through this module. SQLite documents
        // xSetSystemCall as not thread-safe: a worker thread opening a file at that very
        // moment reads either the old or the new pointer (one aligned word), and both
        // open its path the same way unless it is under /proc/self/fd/.
        unsafe {
            let (Some(get), Some(set)) = ((*base).xGetSystemCall, (*base).xSetSystemCall) else {
                return Err(ffi::SQLITE_CANTOPEN);
            };
            let Some(original) = get(base, c"open".as_ptr()) else {
                return Err(ffi::SQLITE_CANTOPEN);
            };
            let original: OpenFn = std::mem::transmute::<unsafe extern "C" fn(), OpenFn>(original);
            let hook =
                std::mem::transmute::<OpenFn, unsafe extern "C" fn()>(open_following_proc_fd);
            // Stored before the hook is installed, so the hook always finds it.
            let original = *ORIGINAL_OPEN.get_or_init(|| original);
            let rc = set(base, c"open".as_ptr(), Some(hook));
            if rc != ffi::SQLITE_OK {
                return Err(rc);
            }
            let _ = original;
            Ok(())
        }
    });
    *installed
}

/// Why the descriptors can't be used (a TypeError on the JS side, as in 13.2).
#[derive(Debug, PartialEq, Eq)]
pub struct FdRefused(pub String);

/// Checks the descriptors as better-sqlite3 13.2 does, with its messages.
pub fn validate(fd: i32, journal_fd: i32, readonly: bool) -> Result<(), FdRefused> {
    if !cfg!(target_os = "linux") {
        return Err(FdRefused(
            "Opening a database from a file descriptor is only supported on Linux by cipherlite"
                .into(),
        ));
    }
    let mut inodes = [(0u64, 0u64); 2];
    for (i, (what, fd)) in [("database", fd), ("journal", journal_fd)]
        .into_iter()
        .enumerate()
    {
        let refuse = |why: &str| {
            Err(FdRefused(format!(
                "Cannot open database because the {what} {why}"
            )))
        };
        let Some(flags) = descriptor_flags(fd) else {
            return refuse("file descriptor is not open");
        };
        let meta = match std::fs::metadata(proc_path(fd)) {
            Ok(m) if m.file_type().is_file() => m,
            _ => return refuse("file descriptor does not refer to a regular file"),
        };
        if flags & O_ACCMODE == O_WRONLY {
            return refuse("file descriptor was not opened for reading");
        }
        if !readonly && flags & O_ACCMODE != O_RDWR {
            return refuse(
                "file descriptor was not opened for writing (use the \"readonly\" option)",
            );
        }
        if flags & O_APPEND != 0 {
            return refuse("file descriptor was opened in append mode");
        }
        if meta.nlink() == 0 {
            return refuse("file has been deleted");
        }
        inodes[i] = (meta.dev(), meta.ino());
    }
    if inodes[0] == inodes[1] {
        return Err(FdRefused(
            "Cannot open database because the database and journal file descriptors refer to the same file".into(),
        ));
    }
    // Connections that open the database by path look for its hot journal at
    // `<database>-journal`: any other file would hide a crash's journal from them. (The
    // kernel names the open files; no directory is searched.)
    if let (Ok(main), Ok(journal)) = (
        std::fs::read_link(proc_path(fd)),
        std::fs::read_link(proc_path(journal_fd)),
    ) {
        let mut expected = main.into_os_string();
        expected.push("-journal");
        if journal.into_os_string() != expected {
            return Err(FdRefused(
                "Cannot open database because the journal file descriptor does not refer to the database's \"-journal\" file".into(),
            ));
        }
    }
    // Bytes 18 and 19 of the header (write and read versions) are both 2 in WAL mode.
    let mut version = [0u8; 2];
    if let Ok(file) = File::open(proc_path(fd)) {
        if file.read_exact_at(&mut version, 18).is_ok() && version == [2, 2] {
            return Err(FdRefused(
                "Cannot open database from a file descriptor because it is in WAL mode".into(),
            ));
        }
    }
    Ok(())
}

/// Whether the database behind `fd` looks like a plaintext SQLite database (its first 16
/// bytes), for the refusal of foreign hot journals; None when it can't be read or is
/// shorter.
pub fn header_is_sqlite(fd: i32) -> Option<bool> {
    let file = File::open(proc_path(fd)).ok()?;
    let mut head = [0u8; 16];
    file.read_exact_at(&mut head, 0).ok()?;
    Some(head == cipherlite_codec::SQLITE_HEADER_MAGIC)
}

/// The size of the file behind `fd`, if it can be asked.
pub fn file_size(fd: i32) -> Option<u64> {
    std::fs::metadata(proc_path(fd)).ok().map(|m| m.len())
}

fn proc_path(fd: i32) -> String {
    format!("/proc/self/fd/{fd}")
}

/// The `flags:` line of `/proc/self/fdinfo/<fd>` (the open flags, in octal), or None when
/// the descriptor is not open.
fn descriptor_flags(fd: i32) -> Option<u32> {
    if fd < 0 {
        return None;
    }
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
    let line = info.lines().find_map(|l| l.strip_prefix("flags:"))?;
    u32::from_str_radix(line.trim(), 8).ok()
}

/// The state behind one registered VFS; `vfs` first (SQLite hands back `*mut sqlite3_vfs`).
#[repr(C)]
struct FdVfs {
    vfs: ffi::sqlite3_vfs,
    base: *mut ffi::sqlite3_vfs,
    name: CString,
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
/// descriptor; the connection using it must be closed first.
pub struct FdVfsHandle {
    inner: *mut FdVfs,
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
        install_open_hook(base)?;
        let journal = std::fs::OpenOptions::new()
            .read(true)
            .write(!readonly)
            .open(proc_path(journal_fd))
            .map_err(|_| ffi::SQLITE_CANTOPEN)?;
        let journal_meta = journal.metadata().map_err(|_| ffi::SQLITE_CANTOPEN)?;
        let main_meta = std::fs::metadata(proc_path(fd)).map_err(|_| ffi::SQLITE_CANTOPEN)?;
        let id = NEXT_FD_VFS_ID.fetch_add(1, Ordering::Relaxed);
        let cstring = |s: String| CString::new(s).map_err(|_| ffi::SQLITE_ERROR);
        // SAFETY: base is valid; we copy its description and override what we wrap.
        let base_ref = unsafe { &*base };
        let vfs = ffi::sqlite3_vfs {
            iVersion: base_ref.iVersion.min(2),
            szOsFile: base_ref
                .szOsFile
                .max(std::mem::size_of::<JournalFile>() as c_int),
            mxPathname: base_ref.mxPathname,
            pNext: ptr::null_mut(),
            zName: ptr::null(),
            pAppData: ptr::null_mut(),
            xOpen: Some(x_open),
            xDelete: Some(x_delete),
            xAccess: Some(x_access),
            xFullPathname: Some(x_full_pathname),
            // Neither these nor the time and randomness functions of the OS VFS use their
            // VFS argument: they can be its own.
            xDlOpen: base_ref.xDlOpen,
            xDlError: base_ref.xDlError,
            xDlSym: base_ref.xDlSym,
            xDlClose: base_ref.xDlClose,
            xRandomness: base_ref.xRandomness,
            xSleep: base_ref.xSleep,
            xCurrentTime: base_ref.xCurrentTime,
            xGetLastError: base_ref.xGetLastError,
            xCurrentTimeInt64: base_ref.xCurrentTimeInt64,
            xSetSystemCall: None,
            xGetSystemCall: None,
            xNextSystemCall: None,
        };
        let inner = Box::into_raw(Box::new(FdVfs {
            vfs,
            base,
            name: cstring(format!("cipherlite-fd-{id}"))?,
            main_name: cstring(format!("{MAIN_NAME_PREFIX}{fd}"))?,
            main_path: [proc_path(fd).as_bytes(), &[0u8; 4]].concat(),
            journal,
            main_dev_ino: (main_meta.dev(), main_meta.ino()),
            journal_dev_ino: (journal_meta.dev(), journal_meta.ino()),
        }));
        // SAFETY: inner is a fresh, leaked allocation that outlives the registration
        // (freed only in Drop after unregistering); zName points into it.
        unsafe {
            (*inner).vfs.zName = (*inner).name.as_ptr();
            (*inner).vfs.pAppData = inner.cast();
            let rc = ffi::sqlite3_vfs_register(ptr::addr_of_mut!((*inner).vfs), 0);
            if rc != ffi::SQLITE_OK {
                drop(Box::from_raw(inner));
                return Err(rc);
            }
        }
        Ok(FdVfsHandle { inner })
    }

    /// The VFS name to pass to `sqlite3_open_v2`.
    pub fn name(&self) -> &CStr {
        // SAFETY: inner lives as long as self.
        unsafe { &(*self.inner).name }
    }

    /// The file name to pass to `sqlite3_open_v2` (`fd:<n>`).
    pub fn main_name(&self) -> &str {
        // SAFETY: inner lives as long as self; the name is ASCII.
        unsafe { (*self.inner).main_name.to_str().unwrap_or_default() }
    }
}

impl Drop for FdVfsHandle {
    fn drop(&mut self) {
        // SAFETY: registered in `register`; after unregistering no new file can be
        // opened through it, and the owner closed the connection using it (so no
        // JournalFile still points into it).
        unsafe {
            ffi::sqlite3_vfs_unregister(ptr::addr_of_mut!((*self.inner).vfs));
            drop(Box::from_raw(self.inner));
        }
    }
}

/// # Safety
/// `vfs` must be an `FdVfs` registered by this module.
unsafe fn fd_vfs<'a>(vfs: *mut ffi::sqlite3_vfs) -> &'a FdVfs {
    // SAFETY: FdVfs is repr(C) with `vfs` first.
    unsafe { &*vfs.cast::<FdVfs>() }
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
    fn base(&self) -> &ffi::sqlite3_vfs {
        // SAFETY: the default VFS outlives every registration.
        unsafe { &*self.base }
    }

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

/// Runs a VFS callback, turning a panic into `err`.
fn guard<T>(err: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(err)
}

unsafe extern "C" fn x_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    out: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    guard(ffi::SQLITE_CANTOPEN, || {
        // SAFETY: SQLite calls xOpen with our registered vfs, a file buffer of szOsFile
        // bytes and a name that is null or a C string.
        unsafe {
            let v = fd_vfs(vfs);
            let Some(base_open) = v.base().xOpen else {
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
    })
}

unsafe extern "C" fn x_delete(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    sync_dir: c_int,
) -> c_int {
    guard(ffi::SQLITE_IOERR_DELETE, || {
        // SAFETY: our registered vfs; name is a C string.
        unsafe {
            let v = fd_vfs(vfs);
            match v.kind(name) {
                // The journal can't be made again: empty it instead (what SQLite's
                // journal_mode=TRUNCATE does), which every connection reads as no journal.
                Kind::Journal => match v.journal.set_len(0).and_then(|()| v.journal.sync_all()) {
                    Ok(()) => ffi::SQLITE_OK,
                    Err(_) => ffi::SQLITE_IOERR_DELETE,
                },
                Kind::Main | Kind::Refused => ffi::SQLITE_OK,
                Kind::Other => match v.base().xDelete {
                    Some(f) => f(v.base, name, sync_dir),
                    None => ffi::SQLITE_IOERR_DELETE,
                },
            }
        }
    })
}

unsafe extern "C" fn x_access(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    flags: c_int,
    out: *mut c_int,
) -> c_int {
    guard(ffi::SQLITE_IOERR_ACCESS, || {
        // SAFETY: our registered vfs; name is a C string; out is writable.
        unsafe {
            let v = fd_vfs(vfs);
            match v.kind(name) {
                Kind::Journal => {
                    *out = match v.journal.metadata() {
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
                Kind::Other => match v.base().xAccess {
                    Some(f) => f(v.base, name, flags, out),
                    None => ffi::SQLITE_IOERR_ACCESS,
                },
            }
        }
    })
}

unsafe extern "C" fn x_full_pathname(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    n: c_int,
    out: *mut c_char,
) -> c_int {
    guard(ffi::SQLITE_CANTOPEN, || {
        // SAFETY: our registered vfs; name is a C string; out has n bytes.
        unsafe {
            let v = fd_vfs(vfs);
            if v.kind(name) == Kind::Other {
                return match v.base().xFullPathname {
                    Some(f) => f(v.base, name, n, out),
                    None => ffi::SQLITE_CANTOPEN,
                };
            }
            // Our own names stay as they are (they are not paths).
            let bytes = CStr::from_ptr(name).to_bytes_with_nul();
            if bytes.len() > usize::try_from(n).unwrap_or(0) {
                return ffi::SQLITE_CANTOPEN;
            }
            ptr::copy_nonoverlapping(bytes.as_ptr().cast::<c_char>(), out, bytes.len());
            ffi::SQLITE_OK
        }
    })
}

/// The main database: the OS VFS's file (right after this header, in the same buffer),
/// behind methods of version 1 — no shared memory, so SQLite never takes it to WAL mode,
/// and no memory mapping — that pass everything on but two file controls.
#[repr(C)]
struct MainFile {
    base: ffi::sqlite3_file,
    vfs: *const FdVfs,
}

/// Where the OS VFS's file starts in our file buffer (8-byte aligned).
const MAIN_HEADER: usize = std::mem::size_of::<MainFile>().next_multiple_of(8);

/// # Safety
/// `f` a file buffer of our VFS's szOsFile bytes.
unsafe fn main_inner(f: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    // SAFETY: per contract, the buffer holds MAIN_HEADER + the OS VFS's szOsFile bytes.
    unsafe { f.cast::<u8>().add(MAIN_HEADER).cast() }
}

/// The OS VFS's methods of a MainFile opened by `x_open`.
///
/// # Safety
/// `f` a MainFile whose inner file is open.
unsafe fn inner_methods<'a>(
    f: *mut ffi::sqlite3_file,
) -> (*mut ffi::sqlite3_file, &'a ffi::sqlite3_io_methods) {
    // SAFETY: per contract, the inner file is open, so it has methods.
    unsafe {
        let inner = main_inner(f);
        (inner, &*(*inner).pMethods)
    }
}

static MAIN_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(m_close),
    xRead: Some(m_read),
    xWrite: Some(m_write),
    xTruncate: Some(m_truncate),
    xSync: Some(m_sync),
    xFileSize: Some(m_file_size),
    xLock: Some(m_lock),
    xUnlock: Some(m_unlock),
    xCheckReservedLock: Some(m_check_reserved_lock),
    xFileControl: Some(m_file_control),
    xSectorSize: Some(m_sector_size),
    xDeviceCharacteristics: Some(m_device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

/// Forwards one call to the OS VFS's file: `forward!(f, xMethod, err, args...)`.
macro_rules! forward {
    ($f:expr, $method:ident, $err:expr $(, $arg:expr)*) => {
        guard($err, || {
            // SAFETY: SQLite calls our methods only on a MainFile x_open opened.
            unsafe {
                let (inner, methods) = inner_methods($f);
                match methods.$method {
                    Some(m) => m(inner $(, $arg)*),
                    None => $err,
                }
            }
        })
    };
}

unsafe extern "C" fn m_close(f: *mut ffi::sqlite3_file) -> c_int {
    forward!(f, xClose, ffi::SQLITE_IOERR_CLOSE)
}
unsafe extern "C" fn m_read(
    f: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    n: c_int,
    off: ffi::sqlite3_int64,
) -> c_int {
    forward!(f, xRead, ffi::SQLITE_IOERR_READ, buf, n, off)
}
unsafe extern "C" fn m_write(
    f: *mut ffi::sqlite3_file,
    buf: *const c_void,
    n: c_int,
    off: ffi::sqlite3_int64,
) -> c_int {
    forward!(f, xWrite, ffi::SQLITE_IOERR_WRITE, buf, n, off)
}
unsafe extern "C" fn m_truncate(f: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    forward!(f, xTruncate, ffi::SQLITE_IOERR_TRUNCATE, size)
}
unsafe extern "C" fn m_sync(f: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    forward!(f, xSync, ffi::SQLITE_IOERR_FSYNC, flags)
}
unsafe extern "C" fn m_file_size(f: *mut ffi::sqlite3_file, out: *mut ffi::sqlite3_int64) -> c_int {
    forward!(f, xFileSize, ffi::SQLITE_IOERR_FSTAT, out)
}
unsafe extern "C" fn m_lock(f: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    forward!(f, xLock, ffi::SQLITE_IOERR_LOCK, level)
}
unsafe extern "C" fn m_unlock(f: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    forward!(f, xUnlock, ffi::SQLITE_IOERR_UNLOCK, level)
}
unsafe extern "C" fn m_check_reserved_lock(f: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    forward!(
        f,
        xCheckReservedLock,
        ffi::SQLITE_IOERR_CHECKRESERVEDLOCK,
        out
    )
}
unsafe extern "C" fn m_sector_size(f: *mut ffi::sqlite3_file) -> c_int {
    forward!(f, xSectorSize, 4096)
}
unsafe extern "C" fn m_device_characteristics(f: *mut ffi::sqlite3_file) -> c_int {
    forward!(f, xDeviceCharacteristics, 0)
}

const WAL_REFUSED: &CStr =
    c"journal_mode WAL is not supported for databases opened from file descriptors";

unsafe extern "C" fn m_file_control(
    f: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    guard(ffi::SQLITE_ERROR, || {
        // SAFETY: a MainFile x_open opened; `arg` is what SQLite documents for `op`
        // (for SQLITE_FCNTL_PRAGMA: char*[3] of error slot, name and value or null; for
        // SQLITE_FCNTL_HAS_MOVED: an int to set).
        unsafe {
            if op == ffi::SQLITE_FCNTL_PRAGMA {
                let args = arg.cast::<*mut c_char>();
                let (name, value) = (*args.add(1), *args.add(2));
                if !name.is_null()
                    && !value.is_null()
                    && CStr::from_ptr(name)
                        .to_bytes()
                        .eq_ignore_ascii_case(b"journal_mode")
                    && CStr::from_ptr(value)
                        .to_bytes()
                        .eq_ignore_ascii_case(b"wal")
                {
                    *args = ffi::sqlite3_mprintf(c"%s".as_ptr(), WAL_REFUSED.as_ptr());
                    return ffi::SQLITE_ERROR;
                }
            }
            let (inner, methods) = inner_methods(f);
            let Some(control) = methods.xFileControl else {
                return ffi::SQLITE_NOTFOUND;
            };
            let rc = control(inner, op, arg);
            if op == ffi::SQLITE_FCNTL_HAS_MOVED && rc == ffi::SQLITE_OK {
                // Deleted files count as moved too: crash recovery could not find them.
                let v = &*(*f.cast::<MainFile>()).vfs;
                if !v.still_linked() {
                    *arg.cast::<c_int>() = 1;
                }
            }
            rc
        }
    })
}

/// The rollback journal: reads and writes go to our descriptor. It takes no locks (the
/// database file's locks guard it, as with the OS VFS).
#[repr(C)]
struct JournalFile {
    base: ffi::sqlite3_file,
    vfs: *const FdVfs,
}

/// # Safety
/// `f` must be a JournalFile opened by `x_open`, whose VFS is still registered.
unsafe fn journal<'a>(f: *mut ffi::sqlite3_file) -> &'a File {
    // SAFETY: per contract (JournalFile is repr(C) with the sqlite3_file first).
    unsafe { &(*(*f.cast::<JournalFile>()).vfs).journal }
}

static JOURNAL_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 1,
    xClose: Some(j_close),
    xRead: Some(j_read),
    xWrite: Some(j_write),
    xTruncate: Some(j_truncate),
    xSync: Some(j_sync),
    xFileSize: Some(j_file_size),
    xLock: Some(j_lock),
    xUnlock: Some(j_lock),
    xCheckReservedLock: Some(j_check_reserved_lock),
    xFileControl: Some(j_file_control),
    xSectorSize: Some(j_sector_size),
    xDeviceCharacteristics: Some(j_device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

unsafe extern "C" fn j_close(_f: *mut ffi::sqlite3_file) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn j_read(
    f: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    guard(ffi::SQLITE_IOERR_READ, || {
        let (Ok(len), Ok(offset)) = (usize::try_from(amount), u64::try_from(offset)) else {
            return ffi::SQLITE_IOERR_READ;
        };
        // SAFETY: SQLite passes a buffer of `amount` bytes and a journal file of ours.
        let (out, file) = unsafe {
            (
                std::slice::from_raw_parts_mut(buf.cast::<u8>(), len),
                journal(f),
            )
        };
        let mut done = 0;
        while done < len {
            match file.read_at(&mut out[done..], offset + done as u64) {
                Ok(0) => {
                    // SQLite wants the unread rest zeroed.
                    out[done..].fill(0);
                    return ffi::SQLITE_IOERR_SHORT_READ;
                }
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return ffi::SQLITE_IOERR_READ,
            }
        }
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn j_write(
    f: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: ffi::sqlite3_int64,
) -> c_int {
    guard(ffi::SQLITE_IOERR_WRITE, || {
        let (Ok(len), Ok(offset)) = (usize::try_from(amount), u64::try_from(offset)) else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        // SAFETY: SQLite passes `amount` readable bytes and a journal file of ours.
        let (data, file) = unsafe {
            (
                std::slice::from_raw_parts(buf.cast::<u8>(), len),
                journal(f),
            )
        };
        match file.write_all_at(data, offset) {
            Ok(()) => ffi::SQLITE_OK,
            Err(e) if e.raw_os_error() == Some(28) => ffi::SQLITE_FULL, // ENOSPC
            Err(_) => ffi::SQLITE_IOERR_WRITE,
        }
    })
}

unsafe extern "C" fn j_truncate(f: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    guard(ffi::SQLITE_IOERR_TRUNCATE, || {
        let Ok(size) = u64::try_from(size) else {
            return ffi::SQLITE_IOERR_TRUNCATE;
        };
        // SAFETY: a journal file of ours.
        match unsafe { journal(f) }.set_len(size) {
            Ok(()) => ffi::SQLITE_OK,
            Err(_) => ffi::SQLITE_IOERR_TRUNCATE,
        }
    })
}

unsafe extern "C" fn j_sync(f: *mut ffi::sqlite3_file, _flags: c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_FSYNC, || {
        // SAFETY: a journal file of ours.
        match unsafe { journal(f) }.sync_data() {
            Ok(()) => ffi::SQLITE_OK,
            Err(_) => ffi::SQLITE_IOERR_FSYNC,
        }
    })
}

unsafe extern "C" fn j_file_size(f: *mut ffi::sqlite3_file, out: *mut ffi::sqlite3_int64) -> c_int {
    guard(ffi::SQLITE_IOERR_FSTAT, || {
        // SAFETY: a journal file of ours; out is writable.
        unsafe {
            match journal(f).metadata() {
                Ok(m) => {
                    *out = i64::try_from(m.len()).unwrap_or(i64::MAX);
                    ffi::SQLITE_OK
                }
                Err(_) => ffi::SQLITE_IOERR_FSTAT,
            }
        }
    })
}

unsafe extern "C" fn j_lock(_f: *mut ffi::sqlite3_file, _level: c_int) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn j_check_reserved_lock(_f: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    // SAFETY: out is writable.
    unsafe { *out = 0 };
    ffi::SQLITE_OK
}

unsafe extern "C" fn j_file_control(
    _f: *mut ffi::sqlite3_file,
    _op: c_int,
    _arg: *mut c_void,
) -> c_int {
    ffi::SQLITE_NOTFOUND
}

unsafe extern "C" fn j_sector_size(_f: *mut ffi::sqlite3_file) -> c_int {
    4096
}

unsafe extern "C" fn j_device_characteristics(_f: *mut ffi::sqlite3_file) -> c_int {
    0
}
