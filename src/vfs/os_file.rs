//! [`OsFile`]: the file of the VFS underneath (the OS's), with safe methods.

use crate::sqlite::ffi;
use std::ffi::{c_int, c_void};

/// An open file of the underlying VFS. Its methods are safe: the one unsafe step is
/// [`OsFile::new`], which promises the file is open for the value's lifetime.
#[derive(Clone, Copy)]
pub(super) struct OsFile(*mut ffi::sqlite3_file);

impl OsFile {
    /// # Safety
    /// `file` must be an open file of the underlying VFS, and stay open while this value
    /// (or a copy) is used.
    pub unsafe fn new(file: *mut ffi::sqlite3_file) -> OsFile {
        OsFile(file)
    }

    pub fn raw(self) -> *mut ffi::sqlite3_file {
        self.0
    }

    fn methods(self) -> &'static ffi::sqlite3_io_methods {
        // SAFETY: an open file always has its methods, which live as long as its VFS.
        unsafe { &*(*self.0).pMethods }
    }

    /// Reads `buf.len()` bytes at `off` (SQLite's contract: a short read zero-fills and
    /// returns `SQLITE_IOERR_SHORT_READ`).
    pub fn read(self, buf: &mut [u8], off: i64) -> c_int {
        let Ok(len) = c_int::try_from(buf.len()) else {
            return ffi::SQLITE_IOERR_READ;
        };
        match self.methods().xRead {
            // SAFETY: the file is open; buf has len writable bytes.
            Some(f) => unsafe { f(self.0, buf.as_mut_ptr().cast::<c_void>(), len, off) },
            None => ffi::SQLITE_IOERR_READ,
        }
    }

    pub fn write(self, buf: &[u8], off: i64) -> c_int {
        let Ok(len) = c_int::try_from(buf.len()) else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        match self.methods().xWrite {
            // SAFETY: the file is open; buf has len readable bytes.
            Some(f) => unsafe { f(self.0, buf.as_ptr().cast::<c_void>(), len, off) },
            None => ffi::SQLITE_IOERR_WRITE,
        }
    }

    pub fn size(self) -> Result<i64, c_int> {
        let mut size: ffi::sqlite3_int64 = 0;
        let rc = match self.methods().xFileSize {
            // SAFETY: the file is open; size is a valid out-pointer.
            Some(f) => unsafe { f(self.0, &mut size) },
            None => ffi::SQLITE_IOERR_FSTAT,
        };
        if rc == ffi::SQLITE_OK {
            Ok(size)
        } else {
            Err(rc)
        }
    }

    /// Closes the file; it must not be used afterwards.
    pub fn close(self) -> c_int {
        match self.methods().xClose {
            // SAFETY: the file is open and closed once (the caller's contract).
            Some(f) => unsafe { f(self.0) },
            None => ffi::SQLITE_OK,
        }
    }
}
