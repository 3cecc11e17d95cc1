//! Safe Rust over the SQLite C API. With the VFS, the only code that touches raw
//! `sqlite3*` / `sqlite3_stmt*` pointers: `connection` owns the connection handle,
//! `statement` owns statement handles, `function` bridges user-defined functions, `vtab`
//! virtual tables, and `cache` keeps statements that those callbacks run.
//!
//! ```
//! use cipherlite_sqlite::{Connection, OpenFlags};
//! let conn = Connection::open(":memory:", OpenFlags::default(), None).unwrap();
//! let (mut stmt, _) = conn.prepare("select 40 + 2", false).unwrap();
//! let stmt = stmt.as_mut().unwrap();
//! assert!(stmt.step().unwrap());
//! assert_eq!(stmt.column_int64(0), 42);
//! ```

pub use cipherlite_sys::ffi;

pub mod backup;
mod cache;
mod connection;
mod error;
pub mod function;
mod os_file;
mod statement;
pub mod vtab;

pub use cache::{CachedStatement, StatementCache};
pub use cipherlite_sys::{in_pieces, MAX_IO_PIECE};
pub use connection::{Connection, ExecAbort, OpenFlags};
pub use error::{code_name, errstr, set_error_detail, Error, ErrorDetail, Result};
pub use os_file::OsFile;
pub use statement::{is_blank_sql_tail, CellValue, ColumnType, RowCell, Statement};

/// The `n` bytes at `p` that SQLite handed out (a TEXT or BLOB value), as a slice: empty
/// when `p` is null (an empty value, or a failed conversion) or `n` is not positive.
///
/// # Safety
/// Unless null, `p` must point to `n` bytes that stay valid and unchanged for `'a`.
pub(crate) unsafe fn sqlite_bytes<'a>(p: *const u8, n: std::ffi::c_int) -> &'a [u8] {
    if p.is_null() || n <= 0 {
        &[]
    } else {
        // SAFETY: the caller's promise.
        unsafe { std::slice::from_raw_parts(p, n as usize) }
    }
}

/// The SQLite library version this crate was compiled with (`sqlite3_libversion`).
pub fn version() -> &'static str {
    // SAFETY: sqlite3_libversion returns a static NUL-terminated ASCII string.
    unsafe { std::ffi::CStr::from_ptr(ffi::sqlite3_libversion()) }
        .to_str()
        .unwrap_or("unknown")
}

/// The name of SQLite's default (OS) VFS, e.g. `unix`.
pub fn default_vfs_name() -> Option<String> {
    // SAFETY: sqlite3_vfs_find(NULL) returns the default VFS (or null), which lives
    // forever; its name is a static NUL-terminated string.
    unsafe {
        let vfs = ffi::sqlite3_vfs_find(std::ptr::null());
        if vfs.is_null() || (*vfs).zName.is_null() {
            return None;
        }
        Some(
            std::ffi::CStr::from_ptr((*vfs).zName)
                .to_string_lossy()
                .into_owned(),
        )
    }
}
