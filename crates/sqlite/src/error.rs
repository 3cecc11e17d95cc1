//! The `sqlite` layer's error type: SQLite's extended result code plus its message.

use super::ffi;
use std::{borrow::Cow, ffi::CStr, fmt};

/// An error reported by SQLite (or by this layer on SQLite's behalf), carrying the
/// **extended** result code so that `SQLITE_CONSTRAINT_UNIQUE` reaches JS intact.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Error {
    pub code: i32,
    pub message: String,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where a connection's error may find the reason a VFS refused (see
/// [`set_error_detail`]): given the connection and the error's code, the message to use.
/// Called only with an open connection handle.
pub type ErrorDetail = unsafe fn(*mut ffi::sqlite3, i32) -> Option<&'static str>;

static ERROR_DETAIL: std::sync::OnceLock<ErrorDetail> = std::sync::OnceLock::new();

/// Installs the one source of error details (the connection policy hands it the keyed
/// VFS's refusals); later calls change nothing.
pub fn set_error_detail(detail: ErrorDetail) {
    let _ = ERROR_DETAIL.set(detail);
}

impl Error {
    pub fn new(code: i32, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
        }
    }

    /// The error SQLite describes for `code` alone (`sqlite3_errstr`).
    pub fn from_code(code: i32) -> Self {
        Error {
            code,
            message: errstr(code),
        }
    }

    /// The connection's most recent error (`sqlite3_extended_errcode` + `sqlite3_errmsg`).
    ///
    /// # Safety
    /// `db` must be a valid, open connection handle.
    pub(crate) unsafe fn from_handle(db: *mut ffi::sqlite3, fallback_code: i32) -> Self {
        if db.is_null() {
            return Error::from_code(fallback_code);
        }
        // SAFETY: the caller guarantees `db` is valid; errmsg returns a NUL-terminated
        // string owned by SQLite, valid until the next API call, and we copy it now.
        unsafe {
            let code = ffi::sqlite3_extended_errcode(db);
            let msg = ffi::sqlite3_errmsg(db);
            let message = if msg.is_null() {
                errstr(code)
            } else {
                CStr::from_ptr(msg).to_string_lossy().into_owned()
            };
            let code = if code == 0 { fallback_code } else { code };
            // A refusal the VFS underneath gave a reason for (the bare code's message would
            // not say what to do).
            let message = match ERROR_DETAIL.get() {
                Some(detail) => detail(db, code).map_or(message, str::to_owned),
                None => message,
            };
            Error { code, message }
        }
    }

    /// The name JS sees in `SqliteError.code`.
    pub fn code_name(&self) -> Cow<'static, str> {
        code_name(self.code)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// SQLite's English description of a result code.
pub fn errstr(code: i32) -> String {
    // SAFETY: sqlite3_errstr returns a pointer to a static NUL-terminated string.
    unsafe {
        let p = ffi::sqlite3_errstr(code);
        if p.is_null() {
            return format!("SQLite error {code}");
        }
        CStr::from_ptr(p).to_string_lossy().into_owned()
    }
}

/// The symbolic name of a (possibly extended) result code, as better-sqlite3 names it;
/// codes it doesn't know become `UNKNOWN_SQLITE_ERROR_<n>`.
pub fn code_name(code: i32) -> Cow<'static, str> {
    match CODE_NAMES.iter().find(|(c, _)| *c == code) {
        Some((_, name)) => Cow::Borrowed(name),
        None => Cow::Owned(format!("UNKNOWN_SQLITE_ERROR_{code}")),
    }
}

const fn ext(primary: i32, n: i32) -> i32 {
    primary | (n << 8)
}

/// better-sqlite3's table of code names (src/util/constants.cpp), same set and spelling.
static CODE_NAMES: &[(i32, &str)] = &[
    (0, "SQLITE_OK"),
    (1, "SQLITE_ERROR"),
    (2, "SQLITE_INTERNAL"),
    (3, "SQLITE_PERM"),
    (4, "SQLITE_ABORT"),
    (5, "SQLITE_BUSY"),
    (6, "SQLITE_LOCKED"),
    (7, "SQLITE_NOMEM"),
    (8, "SQLITE_READONLY"),
    (9, "SQLITE_INTERRUPT"),
    (10, "SQLITE_IOERR"),
    (11, "SQLITE_CORRUPT"),
    (12, "SQLITE_NOTFOUND"),
    (13, "SQLITE_FULL"),
    (14, "SQLITE_CANTOPEN"),
    (15, "SQLITE_PROTOCOL"),
    (16, "SQLITE_EMPTY"),
    (17, "SQLITE_SCHEMA"),
    (18, "SQLITE_TOOBIG"),
    (19, "SQLITE_CONSTRAINT"),
    (20, "SQLITE_MISMATCH"),
    (21, "SQLITE_MISUSE"),
    (22, "SQLITE_NOLFS"),
    (23, "SQLITE_AUTH"),
    (24, "SQLITE_FORMAT"),
    (25, "SQLITE_RANGE"),
    (26, "SQLITE_NOTADB"),
    (27, "SQLITE_NOTICE"),
    (28, "SQLITE_WARNING"),
    (100, "SQLITE_ROW"),
    (101, "SQLITE_DONE"),
    (ext(1, 1), "SQLITE_ERROR_MISSING_COLLSEQ"),
    (ext(1, 2), "SQLITE_ERROR_RETRY"),
    (ext(1, 3), "SQLITE_ERROR_SNAPSHOT"),
    (ext(10, 1), "SQLITE_IOERR_READ"),
    (ext(10, 2), "SQLITE_IOERR_SHORT_READ"),
    (ext(10, 3), "SQLITE_IOERR_WRITE"),
    (ext(10, 4), "SQLITE_IOERR_FSYNC"),
    (ext(10, 5), "SQLITE_IOERR_DIR_FSYNC"),
    (ext(10, 6), "SQLITE_IOERR_TRUNCATE"),
    (ext(10, 7), "SQLITE_IOERR_FSTAT"),
    (ext(10, 8), "SQLITE_IOERR_UNLOCK"),
    (ext(10, 9), "SQLITE_IOERR_RDLOCK"),
    (ext(10, 10), "SQLITE_IOERR_DELETE"),
    (ext(10, 11), "SQLITE_IOERR_BLOCKED"),
    (ext(10, 12), "SQLITE_IOERR_NOMEM"),
    (ext(10, 13), "SQLITE_IOERR_ACCESS"),
    (ext(10, 14), "SQLITE_IOERR_CHECKRESERVEDLOCK"),
    (ext(10, 15), "SQLITE_IOERR_LOCK"),
    (ext(10, 16), "SQLITE_IOERR_CLOSE"),
    (ext(10, 17), "SQLITE_IOERR_DIR_CLOSE"),
    (ext(10, 18), "SQLITE_IOERR_SHMOPEN"),
    (ext(10, 19), "SQLITE_IOERR_SHMSIZE"),
    (ext(10, 20), "SQLITE_IOERR_SHMLOCK"),
    (ext(10, 21), "SQLITE_IOERR_SHMMAP"),
    (ext(10, 22), "SQLITE_IOERR_SEEK"),
    (ext(10, 23), "SQLITE_IOERR_DELETE_NOENT"),
    (ext(10, 24), "SQLITE_IOERR_MMAP"),
    (ext(10, 25), "SQLITE_IOERR_GETTEMPPATH"),
    (ext(10, 26), "SQLITE_IOERR_CONVPATH"),
    (ext(10, 27), "SQLITE_IOERR_VNODE"),
    (ext(10, 28), "SQLITE_IOERR_AUTH"),
    (ext(10, 29), "SQLITE_IOERR_BEGIN_ATOMIC"),
    (ext(10, 30), "SQLITE_IOERR_COMMIT_ATOMIC"),
    (ext(10, 31), "SQLITE_IOERR_ROLLBACK_ATOMIC"),
    (ext(10, 32), "SQLITE_IOERR_DATA"),
    (ext(10, 33), "SQLITE_IOERR_CORRUPTFS"),
    (ext(10, 34), "SQLITE_IOERR_IN_PAGE"),
    (ext(6, 1), "SQLITE_LOCKED_SHAREDCACHE"),
    (ext(6, 2), "SQLITE_LOCKED_VTAB"),
    (ext(5, 1), "SQLITE_BUSY_RECOVERY"),
    (ext(5, 2), "SQLITE_BUSY_SNAPSHOT"),
    (ext(14, 1), "SQLITE_CANTOPEN_NOTEMPDIR"),
    (ext(14, 2), "SQLITE_CANTOPEN_ISDIR"),
    (ext(14, 3), "SQLITE_CANTOPEN_FULLPATH"),
    (ext(14, 4), "SQLITE_CANTOPEN_CONVPATH"),
    (ext(14, 5), "SQLITE_CANTOPEN_DIRTYWAL"),
    (ext(14, 6), "SQLITE_CANTOPEN_SYMLINK"),
    (ext(11, 1), "SQLITE_CORRUPT_VTAB"),
    (ext(11, 2), "SQLITE_CORRUPT_SEQUENCE"),
    (ext(11, 3), "SQLITE_CORRUPT_INDEX"),
    (ext(8, 1), "SQLITE_READONLY_RECOVERY"),
    (ext(8, 2), "SQLITE_READONLY_CANTLOCK"),
    (ext(8, 3), "SQLITE_READONLY_ROLLBACK"),
    (ext(8, 4), "SQLITE_READONLY_DBMOVED"),
    (ext(8, 5), "SQLITE_READONLY_CANTINIT"),
    (ext(8, 6), "SQLITE_READONLY_DIRECTORY"),
    (ext(4, 2), "SQLITE_ABORT_ROLLBACK"),
    (ext(19, 1), "SQLITE_CONSTRAINT_CHECK"),
    (ext(19, 2), "SQLITE_CONSTRAINT_COMMITHOOK"),
    (ext(19, 3), "SQLITE_CONSTRAINT_FOREIGNKEY"),
    (ext(19, 4), "SQLITE_CONSTRAINT_FUNCTION"),
    (ext(19, 5), "SQLITE_CONSTRAINT_NOTNULL"),
    (ext(19, 6), "SQLITE_CONSTRAINT_PRIMARYKEY"),
    (ext(19, 7), "SQLITE_CONSTRAINT_TRIGGER"),
    (ext(19, 8), "SQLITE_CONSTRAINT_UNIQUE"),
    (ext(19, 9), "SQLITE_CONSTRAINT_VTAB"),
    (ext(19, 10), "SQLITE_CONSTRAINT_ROWID"),
    (ext(19, 11), "SQLITE_CONSTRAINT_PINNED"),
    (ext(19, 12), "SQLITE_CONSTRAINT_DATATYPE"),
    (ext(27, 1), "SQLITE_NOTICE_RECOVER_WAL"),
    (ext(27, 2), "SQLITE_NOTICE_RECOVER_ROLLBACK"),
    (ext(27, 3), "SQLITE_NOTICE_RBU"),
    (ext(28, 1), "SQLITE_WARNING_AUTOINDEX"),
    (ext(23, 1), "SQLITE_AUTH_USER"),
    (ext(0, 1), "SQLITE_OK_LOAD_PERMANENTLY"),
    (ext(0, 2), "SQLITE_OK_SYMLINK"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extended_codes_match_sqlite_constants() {
        assert_eq!(
            code_name(ffi::SQLITE_CONSTRAINT_UNIQUE),
            "SQLITE_CONSTRAINT_UNIQUE"
        );
        assert_eq!(
            code_name(ffi::SQLITE_CONSTRAINT_FOREIGNKEY),
            "SQLITE_CONSTRAINT_FOREIGNKEY"
        );
        assert_eq!(
            code_name(ffi::SQLITE_CONSTRAINT_NOTNULL),
            "SQLITE_CONSTRAINT_NOTNULL"
        );
        assert_eq!(
            code_name(ffi::SQLITE_IOERR_SHORT_READ),
            "SQLITE_IOERR_SHORT_READ"
        );
        assert_eq!(
            code_name(ffi::SQLITE_IOERR_DELETE_NOENT),
            "SQLITE_IOERR_DELETE_NOENT"
        );
        assert_eq!(
            code_name(ffi::SQLITE_READONLY_DIRECTORY),
            "SQLITE_READONLY_DIRECTORY"
        );
        assert_eq!(code_name(ffi::SQLITE_NOTADB), "SQLITE_NOTADB");
    }

    #[test]
    fn unknown_codes_are_named_by_number() {
        assert_eq!(
            code_name(ffi::SQLITE_BUSY_TIMEOUT),
            "UNKNOWN_SQLITE_ERROR_773"
        );
    }
}
