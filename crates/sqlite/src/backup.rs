//! Online backup (`sqlite3_backup_*`) into a destination connection this type owns.

use super::{connection::Connection, error::Error, ffi, OpenFlags, Result};
use std::{
    ffi::{c_int, CStr, CString},
    ptr::NonNull,
};

/// A backup in progress from one of `source`'s databases into `main` of a destination
/// connection. Closing (or dropping) finishes it; the destination file stays as far as
/// the backup got (the caller deletes a file it created when the backup was aborted).
pub struct Backup {
    handle: Option<NonNull<ffi::sqlite3_backup>>,
    dest: Option<Connection>,
}

/// Progress after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BackupProgress {
    pub total_pages: i32,
    pub remaining_pages: i32,
    pub done: bool,
}

impl Backup {
    /// Starts a backup of database `source_name` of `source` into the file `dest_path`,
    /// opened (created if needed) through the VFS `dest_vfs`.
    pub fn start(
        source: &Connection,
        source_name: &str,
        dest_path: &str,
        dest_vfs: Option<&CStr>,
        dest_reserve: Option<c_int>,
    ) -> Result<Backup> {
        let dest = Connection::open(dest_path, OpenFlags::default(), dest_vfs)?;
        dest.set_limit(ffi::SQLITE_LIMIT_LENGTH, c_int::MAX);
        if let Some(mut reserve) = dest_reserve {
            // An empty source gives the copy a new page 1, made with the destination's
            // reserve: the VFS's codec needs its reserved bytes there.
            let _ = dest.file_control_int(c"main", ffi::SQLITE_FCNTL_RESERVE_BYTES, &mut reserve);
        }
        let name = CString::new(source_name)
            .map_err(|_| Error::new(ffi::SQLITE_ERROR, "invalid database name"))?;
        // SAFETY: both connections are open; names are NUL-terminated.
        let handle = unsafe {
            ffi::sqlite3_backup_init(dest.raw(), c"main".as_ptr(), source.raw(), name.as_ptr())
        };
        match NonNull::new(handle) {
            Some(h) => Ok(Backup {
                handle: Some(h),
                dest: Some(dest),
            }),
            None => Err(dest.last_error(ffi::SQLITE_ERROR)),
        }
    }

    /// Copies up to `pages` pages (negative: all). SQLITE_BUSY/LOCKED are not errors: the
    /// caller simply tries again later.
    pub fn step(&mut self, pages: c_int) -> Result<BackupProgress> {
        let Some(h) = self.handle else {
            return Err(Error::new(ffi::SQLITE_MISUSE, "backup already finished"));
        };
        // SAFETY: live backup handle.
        let rc = unsafe { ffi::sqlite3_backup_step(h.as_ptr(), pages) };
        let primary = rc & 0xff;
        if primary == ffi::SQLITE_OK
            || primary == ffi::SQLITE_DONE
            || primary == ffi::SQLITE_BUSY
            || primary == ffi::SQLITE_LOCKED
        {
            // SAFETY: live backup handle.
            let (total_pages, remaining_pages) = unsafe {
                (
                    ffi::sqlite3_backup_pagecount(h.as_ptr()),
                    ffi::sqlite3_backup_remaining(h.as_ptr()),
                )
            };
            Ok(BackupProgress {
                total_pages,
                remaining_pages,
                done: primary == ffi::SQLITE_DONE,
            })
        } else {
            Err(Error::from_code(rc))
        }
    }

    /// The destination's file name (for deleting an aborted new file).
    pub fn dest_filename(&self) -> Option<String> {
        let dest = self.dest.as_ref()?;
        // SAFETY: open connection; the returned name lives as long as the connection.
        let p = unsafe { ffi::sqlite3_db_filename(dest.raw(), c"main".as_ptr()) };
        if p.is_null() {
            None
        } else {
            // SAFETY: NUL-terminated string owned by SQLite.
            Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        }
    }

    /// Finishes the backup and closes the destination (idempotent).
    pub fn close(&mut self) {
        if let Some(h) = self.handle.take() {
            // SAFETY: live backup handle, finished once.
            unsafe { ffi::sqlite3_backup_finish(h.as_ptr()) };
        }
        if let Some(dest) = self.dest.take() {
            drop(dest.close());
        }
    }

    pub fn is_open(&self) -> bool {
        self.handle.is_some()
    }
}

impl Drop for Backup {
    fn drop(&mut self) {
        self.close();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backs_up_in_steps() {
        let dir = std::env::temp_dir().join(format!("cipherlite-backup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let dest = dir.join("copy.db");
        let src = Connection::open(":memory:", OpenFlags::default(), None).unwrap();
        src.exec_each(
            "create table t(x); with recursive c(n) as (select 1 union all select n+1 from c where n < 2000) insert into t select n from c",
            |_| Ok(()),
        )
        .unwrap();
        let mut b = Backup::start(&src, "main", dest.to_str().unwrap(), None, None).unwrap();
        let first = b.step(0).unwrap();
        assert!(!first.done);
        assert_eq!(first.remaining_pages, first.total_pages);
        let last = b.step(-1).unwrap();
        assert!(last.done);
        assert_eq!(last.remaining_pages, 0);
        b.close();
        let copy = Connection::open(dest.to_str().unwrap(), OpenFlags::default(), None).unwrap();
        let (stmt, _) = copy.prepare("select count(*) from t", false).unwrap();
        let mut stmt = stmt.unwrap();
        assert!(stmt.step().unwrap());
        assert_eq!(stmt.column_int64(0), 2000);
        drop(stmt);
        drop(copy);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
