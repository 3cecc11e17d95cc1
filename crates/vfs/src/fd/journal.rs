//! The rollback journal: the caller's descriptor, reopened once into one of our own, over
//! `std::fs`.

use super::FdVfs;
use cipherlite_sys::ffi;
use cipherlite_sys::shim::guard;
use std::{
    ffi::{c_int, c_void},
    fs::File,
    os::unix::fs::FileExt,
};

/// The rollback journal: reads and writes go to our descriptor. It takes no locks (the
/// database file's locks guard it, as with the OS VFS).
#[repr(C)]
pub(super) struct JournalFile {
    pub(super) base: ffi::sqlite3_file,
    pub(super) vfs: *const FdVfs,
}

/// # Safety
/// `f` must be a JournalFile opened by `x_open`, whose VFS is still registered.
unsafe fn journal<'a>(f: *mut ffi::sqlite3_file) -> &'a File {
    // SAFETY: per contract (JournalFile is repr(C) with the sqlite3_file first).
    unsafe { &(*(*f.cast::<JournalFile>()).vfs).journal }
}

pub(super) static JOURNAL_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
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
