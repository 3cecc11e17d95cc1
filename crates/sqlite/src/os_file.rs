//! `OsFile`: a database file opened through a SQLite VFS (the default, OS one unless
//! named), for code that must read a database's raw bytes while a connection in this
//! process has it open, or write a file the way SQLite would (so a test VFS below sees
//! every write and sync).
//!
//! Why not `std::fs::File`: POSIX advisory locks belong to the process, and closing *any*
//! descriptor of a file drops all of the process's locks on it — including the locks a
//! connection holds. SQLite's unix VFS knows this: it shares one lock record per inode
//! between all the files it opened, and defers closing a descriptor while locks are held
//! on its inode. Opening through it keeps a connection's locks intact.

use super::{error::Error, ffi, Result};
use cipherlite_sys::in_pieces;
use std::{
    ffi::{c_int, c_void, CStr, CString},
    ptr,
};

/// A file opened through a VFS; closed on drop.
pub struct OsFile {
    vfs: *mut ffi::sqlite3_vfs,
    /// `szOsFile` bytes, 8-aligned, holding the VFS's `sqlite3_file` subclass.
    storage: Vec<u64>,
    /// The name handed to xOpen: the unix VFS keeps a pointer to it while open. It ends
    /// in several NULs, as the names SQLite itself passes do (URI parameters follow the
    /// first NUL; an empty list is an empty string).
    _name: Vec<u8>,
    open: bool,
}

impl OsFile {
    /// Opens `path` read-only as a main database file (`SQLITE_OPEN_MAIN_DB`), the kind
    /// whose descriptors the unix VFS shares and defers closing.
    pub fn open_main_db_readonly(path: &str) -> Result<OsFile> {
        Self::open(None, path, false)
    }

    /// Opens the existing file `path` as a main database file through the VFS named
    /// `vfs` (the default when `None`, which must stay registered while the file is
    /// open), read-only or for reading and writing.
    pub fn open(vfs: Option<&CStr>, path: &str, writable: bool) -> Result<OsFile> {
        let c_path = CString::new(path)
            .map_err(|_| Error::new(ffi::SQLITE_CANTOPEN, "file name contains a NUL character"))?;
        let mut name = c_path.into_bytes_with_nul();
        name.extend_from_slice(&[0, 0, 0]);
        // SAFETY: sqlite3_vfs_find takes a NUL-terminated name or NULL (the default VFS);
        // the VFS it returns stays registered per this function's contract.
        let vfs = unsafe { ffi::sqlite3_vfs_find(vfs.map_or(ptr::null(), CStr::as_ptr)) };
        if vfs.is_null() {
            return Err(Error::from_code(ffi::SQLITE_ERROR));
        }
        // SAFETY: vfs is a registered VFS.
        let (size, x_open) = unsafe { ((*vfs).szOsFile, (*vfs).xOpen) };
        let Some(x_open) = x_open else {
            return Err(Error::from_code(ffi::SQLITE_CANTOPEN));
        };
        let words = (size.max(0) as usize).div_ceil(8).max(1);
        let mut file = OsFile {
            vfs,
            storage: vec![0u64; words],
            _name: name,
            open: false,
        };
        let access = if writable {
            ffi::SQLITE_OPEN_READWRITE
        } else {
            ffi::SQLITE_OPEN_READONLY
        };
        let flags = access | ffi::SQLITE_OPEN_MAIN_DB;
        let mut out_flags: c_int = 0;
        // SAFETY: storage has szOsFile zeroed, 8-aligned bytes; the name outlives the open
        // file (it lives in `file`); out_flags is a valid out-parameter.
        let rc = unsafe {
            x_open(
                vfs,
                file._name.as_ptr().cast(),
                file.raw(),
                flags,
                &mut out_flags,
            )
        };
        // SAFETY: raw() points at the sqlite3_file xOpen filled in.
        let has_methods = unsafe { !(*file.raw()).pMethods.is_null() };
        // Per the VFS contract, a failed xOpen with pMethods set must still be closed.
        file.open = has_methods;
        if rc != ffi::SQLITE_OK {
            return Err(Error::new(rc, format!("unable to open {path}")));
        }
        Ok(file)
    }

    fn raw(&mut self) -> *mut ffi::sqlite3_file {
        self.storage.as_mut_ptr().cast()
    }

    fn methods(&mut self) -> Result<&ffi::sqlite3_io_methods> {
        if !self.open {
            return Err(Error::from_code(ffi::SQLITE_MISUSE));
        }
        // SAFETY: an open file has pMethods set by xOpen, valid until xClose.
        Ok(unsafe { &*(*self.raw()).pMethods })
    }

    /// The file's size in bytes.
    pub fn size(&mut self) -> Result<u64> {
        let f = self.raw();
        let Some(x_file_size) = self.methods()?.xFileSize else {
            return Err(Error::from_code(ffi::SQLITE_IOERR_FSTAT));
        };
        let mut size: ffi::sqlite3_int64 = 0;
        // SAFETY: f is the open file; size is a valid out-parameter.
        let rc = unsafe { x_file_size(f, &mut size) };
        if rc != ffi::SQLITE_OK {
            return Err(Error::from_code(rc));
        }
        Ok(size.max(0) as u64)
    }

    /// Reads `buf.len()` bytes at `offset`. A read past the end fails with
    /// `SQLITE_IOERR_SHORT_READ`, the missing part zero-filled (as the VFS does).
    pub fn read_at(&mut self, buf: &mut [u8], offset: u64) -> Result<()> {
        let f = self.raw();
        let Some(x_read) = self.methods()?.xRead else {
            return Err(Error::from_code(ffi::SQLITE_IOERR_READ));
        };
        let offset = i64::try_from(offset)
            .map_err(|_| Error::new(ffi::SQLITE_IOERR_READ, "read offset too large"))?;
        let rc = in_pieces(buf.len(), offset, |range, at| {
            let piece = &mut buf[range.clone()];
            // SAFETY: f is the open file; the piece is valid for its length (at most
            // MAX_IO_PIECE, so it fits a c_int).
            let rc = unsafe {
                x_read(
                    f,
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
        });
        if rc != ffi::SQLITE_OK {
            return Err(Error::from_code(rc));
        }
        Ok(())
    }
}

impl OsFile {
    /// Writes `buf` at `offset` (a file opened writable), in pieces the OS VFS takes.
    pub fn write_at(&mut self, buf: &[u8], offset: u64) -> Result<()> {
        let f = self.raw();
        let Some(x_write) = self.methods()?.xWrite else {
            return Err(Error::from_code(ffi::SQLITE_IOERR_WRITE));
        };
        let offset = i64::try_from(offset)
            .map_err(|_| Error::new(ffi::SQLITE_IOERR_WRITE, "write offset too large"))?;
        let rc = in_pieces(buf.len(), offset, |range, at| {
            let piece = &buf[range];
            // SAFETY: f is the open file; the piece is valid for its length (at most
            // MAX_IO_PIECE, so it fits a c_int) and only read.
            unsafe { x_write(f, piece.as_ptr().cast::<c_void>(), piece.len() as c_int, at) }
        });
        if rc != ffi::SQLITE_OK {
            return Err(Error::from_code(rc));
        }
        Ok(())
    }

    /// Makes everything written durable (`SQLITE_SYNC_FULL`: fsync, F_FULLFSYNC on macOS).
    pub fn sync(&mut self) -> Result<()> {
        let f = self.raw();
        let Some(x_sync) = self.methods()?.xSync else {
            return Err(Error::from_code(ffi::SQLITE_IOERR_FSYNC));
        };
        // SAFETY: f is the open file.
        let rc = unsafe { x_sync(f, ffi::SQLITE_SYNC_FULL) };
        if rc != ffi::SQLITE_OK {
            return Err(Error::from_code(rc));
        }
        Ok(())
    }
}

impl Drop for OsFile {
    fn drop(&mut self) {
        if !self.open {
            return;
        }
        self.open = false;
        let f = self.raw();
        // SAFETY: the file is open (pMethods valid); closed exactly once.
        unsafe {
            if let Some(x_close) = (*(*f).pMethods).xClose {
                x_close(f);
            }
        }
        let _ = self.vfs;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Connection, OpenFlags};

    #[test]
    fn reads_a_file_a_connection_holds_locked_without_dropping_its_lock() {
        let dir = std::env::temp_dir().join(format!("cipherlite-osfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("locked.db");
        let path = path.to_str().unwrap();
        let _ = std::fs::remove_file(path);
        let a = Connection::open(path, OpenFlags::default(), None).unwrap();
        a.exec_each(
            "pragma locking_mode=exclusive; create table t(x); insert into t values (1); begin exclusive; commit",
            |_| Ok(()),
        )
        .unwrap();
        {
            let mut f = OsFile::open_main_db_readonly(path).unwrap();
            assert_eq!(f.size().unwrap(), 8192);
            let mut head = [0u8; 16];
            f.read_at(&mut head, 0).unwrap();
            assert_eq!(&head, b"SQLite format 3\0");
            let mut past = [0u8; 16];
            assert_eq!(
                f.read_at(&mut past, 1 << 20).unwrap_err().code,
                ffi::SQLITE_IOERR_SHORT_READ
            );
        }
        // Connection `a` still holds its exclusive lock: another one cannot read.
        let b = Connection::open(path, OpenFlags::default(), None).unwrap();
        let err = b.prepare("select * from t", false).map(|_| ()).unwrap_err();
        assert_eq!(err.code & 0xff, ffi::SQLITE_BUSY, "{err:?}");
        drop(b);
        drop(a);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// The unix VFS writes at most `0x1ffff` bytes a call and reports a longer write as a
    /// full disk: a long buffer goes in pieces, and a read past the end zero-fills every
    /// piece after it.
    #[test]
    fn long_writes_and_reads_go_in_pieces_the_os_vfs_takes() {
        let dir =
            std::env::temp_dir().join(format!("cipherlite-osfile-long-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("long.bin");
        std::fs::write(&path, b"").unwrap();
        let path = path.to_str().unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        {
            let mut f = OsFile::open(None, path, true).unwrap();
            f.write_at(&data, 100).unwrap();
            assert_eq!(f.size().unwrap(), 300_100);
            let mut back = vec![0u8; data.len()];
            f.read_at(&mut back, 100).unwrap();
            assert!(back == data);
            let mut past = vec![7u8; 400_000];
            assert_eq!(
                f.read_at(&mut past, 100).unwrap_err().code,
                ffi::SQLITE_IOERR_SHORT_READ
            );
            assert!(past[..data.len()] == data[..], "what the file holds");
            assert!(
                past[data.len()..].iter().all(|&b| b == 0),
                "zeros past its end"
            );
        }
        assert_eq!(std::fs::read(path).unwrap()[100..], data[..]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn missing_file_is_cantopen() {
        let err = OsFile::open_main_db_readonly("/nonexistent-cipherlite/x.db")
            .map(|_| ())
            .unwrap_err();
        assert_eq!(err.code & 0xff, ffi::SQLITE_CANTOPEN);
    }
}
