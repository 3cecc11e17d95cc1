//! Opening a database from file descriptors, where it can't be done: Windows has no
//! `/proc/self/fd` to reach a file by its descriptor without a path (and Node's descriptors
//! there are the C runtime's, not handles SQLite's win32 VFS could lock). Every entry point
//! refuses with one message, which the binding throws as a `TypeError`
//! (docs/packaging.md "Windows").

use std::ffi::{c_int, CStr};

/// What the user is told.
pub const UNSUPPORTED: &str =
    "Opening a database from file descriptors is not supported on this platform (Windows): open it by path";

/// Why the descriptors can't be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FdRefused(pub String);

/// Always refuses (see the module doc).
pub fn validate(_fd: i32, _journal_fd: i32, _readonly: bool) -> Result<(), FdRefused> {
    Err(FdRefused(UNSUPPORTED.into()))
}

/// Nothing is known about a descriptor here.
pub fn header_is_sqlite(_fd: i32) -> Option<bool> {
    None
}

/// Nothing is known about a descriptor here.
pub fn file_size(_fd: i32) -> Option<u64> {
    None
}

/// Never made: [`FdVfsHandle::register`] refuses.
pub struct FdVfsHandle {
    never: std::convert::Infallible,
}

impl FdVfsHandle {
    /// Refuses (`SQLITE_CANTOPEN`): [`validate`] has already said why.
    pub fn register(_fd: i32, _journal_fd: i32, _readonly: bool) -> Result<FdVfsHandle, c_int> {
        Err(cipherlite_sys::ffi::SQLITE_CANTOPEN)
    }

    pub fn name(&self) -> &CStr {
        match self.never {}
    }

    pub fn main_name(&self) -> &str {
        match self.never {}
    }
}
