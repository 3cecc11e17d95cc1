//! The key lifecycle's one error type. Messages name files and what went wrong, never a
//! key or anything derived from one.

use cipherlite_sqlite::{self as sqlite, ffi};
use std::{fmt, io};

#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// SQLite failed (its extended code and message).
    Sqlite(sqlite::Error),
    /// A file operation failed.
    Io {
        /// What was being done, e.g. "create the copy".
        action: &'static str,
        path: String,
        error: io::Error,
    },
    /// The operation was refused before anything changed: `code` is the SQLite result
    /// code it is reported as (`SQLITE_BUSY`, `SQLITE_NOTADB`, …).
    Refused { code: i32, message: String },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub(crate) fn refused(code: i32, message: impl Into<String>) -> Self {
        Error::Refused {
            code,
            message: message.into(),
        }
    }

    pub(crate) fn io(action: &'static str, path: &str, error: io::Error) -> Self {
        Error::Io {
            action,
            path: path.to_owned(),
            error,
        }
    }

    /// A VFS call on a file failed: SQLite's code, a message naming the action and file.
    pub(crate) fn in_file(action: &str, path: &str, error: sqlite::Error) -> Self {
        Error::Sqlite(sqlite::Error::new(
            error.code,
            format!("cannot {action} {path}: {}", error.message),
        ))
    }

    /// The SQLite result code this error is reported with.
    pub fn code(&self) -> i32 {
        match self {
            Error::Sqlite(e) => e.code,
            Error::Refused { code, .. } => *code,
            Error::Io { error, .. } => match error.kind() {
                io::ErrorKind::NotFound
                | io::ErrorKind::PermissionDenied
                | io::ErrorKind::AlreadyExists
                | io::ErrorKind::ReadOnlyFilesystem => ffi::SQLITE_CANTOPEN,
                io::ErrorKind::StorageFull => ffi::SQLITE_FULL,
                _ => ffi::SQLITE_IOERR,
            },
        }
    }

    /// As an SQLite error (what JS sees as a `SqliteError`).
    pub fn into_sqlite(self) -> sqlite::Error {
        let code = self.code();
        match self {
            Error::Sqlite(e) => e,
            other => sqlite::Error::new(code, other.to_string()),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Sqlite(e) => f.write_str(&e.message),
            Error::Refused { message, .. } => f.write_str(message),
            Error::Io {
                action,
                path,
                error,
            } => {
                let why = match error.kind() {
                    io::ErrorKind::NotFound => "no such file or directory".to_owned(),
                    io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
                    io::ErrorKind::ReadOnlyFilesystem => "read-only file system".to_owned(),
                    io::ErrorKind::AlreadyExists => "it already exists".to_owned(),
                    _ => error.to_string(),
                };
                write!(f, "cannot {action} {path}: {why}")
            }
        }
    }
}

impl std::error::Error for Error {}

impl From<crate::connection_policy::Error> for Error {
    fn from(e: crate::connection_policy::Error) -> Self {
        match e {
            crate::connection_policy::Error::Sqlite(e) => Error::Sqlite(e),
            crate::connection_policy::Error::Usage(message) => {
                Error::refused(ffi::SQLITE_MISUSE, message)
            }
        }
    }
}

impl From<sqlite::Error> for Error {
    fn from(e: sqlite::Error) -> Self {
        Error::Sqlite(e)
    }
}
