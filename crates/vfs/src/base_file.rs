//! [`BaseFile`]: the file of the VFS underneath (the OS's), with safe methods.

use cipherlite_sys::{ffi, in_pieces};
use std::ffi::{c_int, c_void};

/// An open file of the underlying VFS. Its methods are safe: the one unsafe step is
/// [`BaseFile::new`], which promises the file is open for the value's lifetime.
#[derive(Clone, Copy)]
pub(super) struct BaseFile(*mut ffi::sqlite3_file);

impl BaseFile {
    /// # Safety
    /// `file` must be an open file of the underlying VFS, and stay open while this value
    /// (or a copy) is used.
    pub unsafe fn new(file: *mut ffi::sqlite3_file) -> BaseFile {
        BaseFile(file)
    }

    pub fn raw(self) -> *mut ffi::sqlite3_file {
        self.0
    }

    fn methods(self) -> &'static ffi::sqlite3_io_methods {
        // SAFETY: an open file always has its methods, which live as long as its VFS.
        unsafe { &*(*self.0).pMethods }
    }

    /// Reads `buf.len()` bytes at `off` (SQLite's contract: a short read zero-fills and
    /// returns `SQLITE_IOERR_SHORT_READ`), in pieces the OS VFS takes
    /// ([`cipherlite_sqlite::in_pieces`]).
    pub fn read(self, buf: &mut [u8], off: i64) -> c_int {
        let Some(f) = self.methods().xRead else {
            return ffi::SQLITE_IOERR_READ;
        };
        in_pieces(buf.len(), off, |range, at| {
            let piece = &mut buf[range.clone()];
            // SAFETY: the file is open; the piece is valid for its length (at most
            // MAX_IO_PIECE, so it fits a c_int).
            let rc = unsafe {
                f(
                    self.0,
                    piece.as_mut_ptr().cast::<c_void>(),
                    piece.len() as c_int,
                    at,
                )
            };
            if rc == ffi::SQLITE_IOERR_SHORT_READ {
                // The end of the file: the pieces after this one are past it too.
                buf[range.end..].fill(0);
            }
            rc
        })
    }

    /// Writes `buf` at `off`, in pieces the OS VFS takes ([`cipherlite_sqlite::in_pieces`]).
    pub fn write(self, buf: &[u8], off: i64) -> c_int {
        let Some(f) = self.methods().xWrite else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        in_pieces(buf.len(), off, |range, at| {
            let piece = &buf[range];
            // SAFETY: the file is open; the piece is valid for its length (at most
            // MAX_IO_PIECE, so it fits a c_int) and only read.
            unsafe {
                f(
                    self.0,
                    piece.as_ptr().cast::<c_void>(),
                    piece.len() as c_int,
                    at,
                )
            }
        })
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
pub(super) struct OwnedBaseFile {
    /// The `sqlite3_file` of `szOsFile` bytes, 8-byte aligned.
    storage: Vec<u64>,
    open: bool,
}

impl OwnedBaseFile {
    /// Opens `path` read-only through `base` as a file of kind `kind_flag`
    /// (`SQLITE_OPEN_MAIN_JOURNAL` or `SQLITE_OPEN_WAL`), if it exists.
    pub fn open_existing(
        base: *mut ffi::sqlite3_vfs,
        path: &str,
        kind_flag: c_int,
    ) -> Option<OwnedBaseFile> {
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
        let mut file = OwnedBaseFile {
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

    pub fn file(&mut self) -> BaseFile {
        // SAFETY: open until drop.
        unsafe { BaseFile::new(self.storage.as_mut_ptr().cast()) }
    }
}

impl Drop for OwnedBaseFile {
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

#[cfg(test)]
mod tests {
    use crate::test_support::{RawFile, TempDir};
    use cipherlite_sys::ffi;

    /// SQLite's unix VFS moves at most 0x1ffff bytes a call (it masks the length; SQLite never
    /// asks for more): longer buffers, such as four held frames of 64 KiB pages, go in pieces
    /// both ways, and a read past the end zero-fills all of its tail.
    #[test]
    fn reads_and_writes_longer_than_the_unix_vfs_moves_at_once_go_in_pieces() {
        let dir = TempDir::new("long-io");
        let mut file = RawFile::create(&dir.0.join("long.bin"));
        let os = file.os();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(os.write(&data, 100), ffi::SQLITE_OK);
        assert_eq!(os.size().expect("size"), 300_100);
        let mut back = vec![0u8; data.len()];
        assert_eq!(os.read(&mut back, 100), ffi::SQLITE_OK);
        assert!(back == data);
        let mut past = vec![7u8; 400_000];
        assert_eq!(os.read(&mut past, 100), ffi::SQLITE_IOERR_SHORT_READ);
        assert!(past[..data.len()] == data[..], "what the file holds");
        assert!(
            past[data.len()..].iter().all(|&b| b == 0),
            "zeros past its end"
        );
    }
}
