//! The shadow file of an encrypted database's private wal-index (docs/design.md §4.6): an
//! empty database file of the OS VFS in the user's private directory, opened only for its
//! shared memory, which SQLite's own `xShmMap`/`xShmLock` code (unix or win32) then runs on.
//! Opened by `private_wal_index/mod.rs`, whose platform files (`unix.rs`, `windows.rs`) say
//! where the directory is and how the `-shm` fence is held; this does not differ.

use cipherlite_sys::ffi;
use std::{
    ffi::{c_char, c_int, CString},
    fs,
    path::{Path, PathBuf},
    ptr,
};

/// An open shadow file: the OS VFS's file structure and the name it was opened by.
pub(super) struct ShadowFile {
    /// The OS VFS's file structure (`szOsFile` bytes, 16-aligned).
    file: Box<[u128]>,
    /// The shadow's name as SQLite's VFS expects a file name (`sqlite3_create_filename`:
    /// `xOpen` keeps the pointer), freed after the file is closed.
    name: *const c_char,
    path: PathBuf,
}

impl ShadowFile {
    /// Opens (making it if missing) the shadow file at `path` through the OS VFS `base`.
    ///
    /// # Safety
    /// `base` is a registered VFS that outlives the returned value.
    pub unsafe fn open(base: *mut ffi::sqlite3_vfs, path: &Path) -> Result<Self, c_int> {
        let c_path = CString::new(path.as_os_str().as_encoded_bytes().to_vec())
            .map_err(|_| ffi::SQLITE_CANTOPEN)?;
        // SAFETY: per contract base is a live VFS.
        let (size, open) = unsafe { ((*base).szOsFile, (*base).xOpen) };
        let open = open.ok_or(ffi::SQLITE_CANTOPEN)?;
        let words = (size.max(0) as usize).div_ceil(16).max(1);
        let mut file = vec![0u128; words].into_boxed_slice();
        // SAFETY: c_path is NUL-terminated; no journal, WAL or parameters.
        let name = unsafe {
            ffi::sqlite3_create_filename(
                c_path.as_ptr(),
                c"".as_ptr(),
                c"".as_ptr(),
                0,
                ptr::null_mut(),
            )
        };
        if name.is_null() {
            return Err(ffi::SQLITE_NOMEM);
        }
        let os_file = file.as_mut_ptr().cast::<ffi::sqlite3_file>();
        let flags = ffi::SQLITE_OPEN_MAIN_DB | ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE;
        let mut out_flags = 0;
        // SAFETY: os_file has szOsFile bytes, aligned; name stays alive until freed after
        // close (see Drop).
        let rc = unsafe { open(base, name, os_file, flags, &mut out_flags) };
        if rc != ffi::SQLITE_OK {
            // SAFETY: a failed xOpen leaves pMethods null or a file to close.
            unsafe {
                if !(*os_file).pMethods.is_null() {
                    if let Some(close) = (*(*os_file).pMethods).xClose {
                        close(os_file);
                    }
                }
                ffi::sqlite3_free_filename(name);
            }
            return Err(rc);
        }
        Ok(ShadowFile {
            file,
            name,
            path: path.to_path_buf(),
        })
    }

    /// The shadow file, for SQLite's shared-memory calls.
    pub fn file(&mut self) -> *mut ffi::sqlite3_file {
        self.file.as_mut_ptr().cast()
    }

    /// Where it is.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Unmaps the wal-index (`xShmUnmap` with SQLite's `delete`) and closes the shadow,
    /// removing it with `delete`: the unmap's result, or `None` if an earlier call closed it.
    pub fn shut(&mut self, delete: bool) -> Option<c_int> {
        let file = self.file();
        // SAFETY: the shadow is open unless an earlier call closed it and nulled pMethods.
        let rc = unsafe {
            if (*file).pMethods.is_null() {
                return None;
            }
            let methods = &*(*file).pMethods;
            let rc = match methods.xShmUnmap {
                Some(unmap) => unmap(file, c_int::from(delete)),
                None => ffi::SQLITE_OK,
            };
            if let Some(close) = methods.xClose {
                close(file);
            }
            (*file).pMethods = ptr::null();
            rc
        };
        if delete {
            let _ = fs::remove_file(&self.path);
        }
        Some(rc)
    }
}

impl Drop for ShadowFile {
    fn drop(&mut self) {
        // Without an explicit `shut(true)`, SQLite did not ask for the wal-index to go: kept.
        self.shut(false);
        // SAFETY: the shadow is closed: the name xOpen kept is no longer used.
        unsafe { ffi::sqlite3_free_filename(self.name) };
    }
}
