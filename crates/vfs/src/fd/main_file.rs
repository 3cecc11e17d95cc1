//! The main database file: the OS VFS's, opened through `/proc/self/fd/<n>`, behind
//! methods that refuse WAL mode and report a file that lost its name as moved.

use super::FdVfs;
use cipherlite_sys::ffi;
use cipherlite_sys::shim::guard;
use std::ffi::{c_char, c_int, c_void, CStr};

/// The main database: the OS VFS's file (right after this header, in the same buffer),
/// behind methods of version 1 — no shared memory, so SQLite never takes it to WAL mode,
/// and no memory mapping — that pass everything on but two file controls.
#[repr(C)]
pub(super) struct MainFile {
    base: ffi::sqlite3_file,
    pub(super) vfs: *const FdVfs,
}

/// Where the OS VFS's file starts in our file buffer (8-byte aligned).
pub(super) const MAIN_HEADER: usize = std::mem::size_of::<MainFile>().next_multiple_of(8);

/// # Safety
/// `f` a file buffer of our VFS's szOsFile bytes.
pub(super) unsafe fn main_inner(f: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
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

pub(super) static MAIN_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
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
