//! [`OsFile`]: the file of the VFS underneath (the OS's), with safe methods.

use crate::sqlite::ffi;
use std::ffi::{c_int, c_void};

/// The most bytes one `xRead` or `xWrite` of the underlying VFS is asked to move: SQLite's
/// unix VFS masks the length with `0x1ffff` (SQLite itself never reads or writes more than
/// a 64 KiB page and a WAL frame header at once), so a longer buffer — four held WAL
/// frames or a read-ahead of 32 or 64 KiB pages — goes in pieces. 124 KiB: under the
/// mask, and a whole number of 4 KiB blocks.
pub(super) const MAX_PIECE: usize = 0x1f000;

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
    /// returns `SQLITE_IOERR_SHORT_READ`), in pieces of at most [`MAX_PIECE`] bytes.
    pub fn read(self, buf: &mut [u8], off: i64) -> c_int {
        let Some(f) = self.methods().xRead else {
            return ffi::SQLITE_IOERR_READ;
        };
        let mut at = off;
        let mut rest = buf;
        loop {
            let len = rest.len().min(MAX_PIECE);
            // SAFETY: the file is open; `rest` has at least `len` writable bytes.
            let rc = unsafe { f(self.0, rest.as_mut_ptr().cast::<c_void>(), len as c_int, at) };
            if rc == ffi::SQLITE_IOERR_SHORT_READ {
                // The end of the file: the pieces after this one are past it too.
                rest[len..].fill(0);
            }
            if rc != ffi::SQLITE_OK || len == rest.len() {
                return rc;
            }
            rest = &mut rest[len..];
            at += len as i64;
        }
    }

    /// Writes `buf` at `off`, in pieces of at most [`MAX_PIECE`] bytes.
    pub fn write(self, buf: &[u8], off: i64) -> c_int {
        let Some(f) = self.methods().xWrite else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        let mut at = off;
        let mut rest = buf;
        loop {
            let len = rest.len().min(MAX_PIECE);
            // SAFETY: the file is open; `rest` has at least `len` readable bytes.
            let rc = unsafe { f(self.0, rest.as_ptr().cast::<c_void>(), len as c_int, at) };
            if rc != ffi::SQLITE_OK || len == rest.len() {
                return rc;
            }
            rest = &rest[len..];
            at += len as i64;
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

/// A file opened read-only through the underlying VFS by the keyed VFS itself (to look at
/// a hot journal or WAL before SQLite does); closed on drop.
pub(super) struct OwnedOsFile {
    /// The `sqlite3_file` of `szOsFile` bytes, 8-byte aligned.
    storage: Vec<u64>,
    open: bool,
}

impl OwnedOsFile {
    /// Opens `path` read-only through `base` as a file of kind `kind_flag`
    /// (`SQLITE_OPEN_MAIN_JOURNAL` or `SQLITE_OPEN_WAL`), if it exists.
    pub fn open_existing(
        base: *mut ffi::sqlite3_vfs,
        path: &str,
        kind_flag: c_int,
    ) -> Option<OwnedOsFile> {
        let c_path = std::ffi::CString::new(path).ok()?;
        // SAFETY: base is a registered VFS (the keyed VFS's base, which outlives it).
        let vfs = unsafe { &*base };
        let mut exists: c_int = 0;
        // SAFETY: xAccess with a NUL-terminated name and an out-pointer.
        let rc = unsafe {
            vfs.xAccess?(
                base,
                c_path.as_ptr(),
                ffi::SQLITE_ACCESS_EXISTS,
                &mut exists,
            )
        };
        if rc != ffi::SQLITE_OK || exists == 0 {
            return None;
        }
        let words = (vfs.szOsFile.max(0) as usize).div_ceil(8).max(1);
        let mut file = OwnedOsFile {
            storage: vec![0u64; words],
            open: false,
        };
        let raw = file.storage.as_mut_ptr().cast::<ffi::sqlite3_file>();
        let mut out_flags: c_int = 0;
        // SAFETY: raw has szOsFile bytes; the name outlives the call (SQLite's VFSes may
        // keep the pointer: c_path lives until this function returns, and the file is only
        // read here and closed by the caller soon after, but to be safe we leak nothing and
        // keep the name alive through the file's life by storing it in a static below).
        let rc = unsafe {
            vfs.xOpen?(
                base,
                leak_name(c_path),
                raw,
                ffi::SQLITE_OPEN_READONLY | kind_flag,
                &mut out_flags,
            )
        };
        // SAFETY: pMethods is set by xOpen (null when nothing is open).
        if rc != ffi::SQLITE_OK || unsafe { (*raw).pMethods.is_null() } {
            return None;
        }
        file.open = true;
        Some(file)
    }

    pub fn file(&mut self) -> OsFile {
        // SAFETY: open until drop.
        unsafe { OsFile::new(self.storage.as_mut_ptr().cast()) }
    }
}

impl Drop for OwnedOsFile {
    fn drop(&mut self) {
        if self.open {
            self.file().close();
        }
    }
}

/// SQLite's VFSes may keep the file name pointer for the file's lifetime (the unix VFS
/// does, for journals and WALs): the names of the files we open ourselves are kept here,
/// one per distinct path.
fn leak_name(name: std::ffi::CString) -> *const std::ffi::c_char {
    use std::sync::Mutex;
    static NAMES: Mutex<Vec<std::ffi::CString>> = Mutex::new(Vec::new());
    let Ok(mut names) = NAMES.lock() else {
        return Box::leak(name.into_boxed_c_str()).as_ptr();
    };
    if let Some(existing) = names.iter().find(|n| **n == name) {
        return existing.as_ptr();
    }
    let ptr = name.as_ptr();
    names.push(name);
    ptr
}
