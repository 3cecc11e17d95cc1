//! The wal-index of an encrypted database on Windows: none shared (docs/design.md §4.6,
//! "Windows").
//!
//! On Unix an encrypted connection's wal-index is SQLite's shared memory on a shadow file in
//! a directory only its OS user can enter (`private_wal_index.rs`). SQLite's win32 VFS maps
//! `<db>-shm` beside the database instead, where anyone who may write the database's
//! directory could steer SQLite to another page's frame, and anyone who may read it reads
//! SQLite's checksum of the plaintext. Until a per-user shadow (under `%LOCALAPPDATA%`) is
//! built and its locking checked, an encrypted connection on Windows has no shared
//! wal-index: every `xShmMap` is refused with [`WalIndexRefusal::NoSharedWalIndex`], and the
//! connection policy refuses `PRAGMA journal_mode=WAL` on encrypted connections up front.
//! (A connection in `locking_mode=EXCLUSIVE` before it opens a WAL never calls `xShmMap`:
//! SQLite keeps that wal-index in the connection's heap. That would be a safe way to offer
//! WAL to a single connection; it is not offered yet.) Plaintext connections use SQLite's
//! own win32 VFS unchanged.

use cipherlite_sys::ffi;
use std::{ffi::c_int, path::Path};

/// Why an encrypted connection can't have its WAL's wal-index now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalIndexRefusal {
    /// No private shared wal-index on this platform (the module doc).
    NoSharedWalIndex,
    /// Kept for the callers shared with Unix; never made here (there is no fence).
    FenceGone,
}

/// What the user is told when an encrypted database is used in WAL mode on Windows.
pub const NO_SHARED_WAL_INDEX: &str =
    "an encrypted database cannot use WAL mode on Windows (its wal-index would be the -shm file \
     beside the database, readable and writable by anyone who may write the directory): use \
     journal_mode DELETE, TRUNCATE or PERSIST";

impl WalIndexRefusal {
    /// The SQLite result code the VFS returns.
    pub fn code(self) -> c_int {
        match self {
            WalIndexRefusal::NoSharedWalIndex => ffi::SQLITE_CANTOPEN,
            WalIndexRefusal::FenceGone => ffi::SQLITE_BUSY_RECOVERY,
        }
    }

    /// What the user is told (no path: the caller names the database).
    pub fn message(self) -> &'static str {
        match self {
            WalIndexRefusal::NoSharedWalIndex => NO_SHARED_WAL_INDEX,
            WalIndexRefusal::FenceGone => {
                "the database's -shm file was removed or replaced while its WAL is open"
            }
        }
    }
}

/// Never opened on Windows: [`PrivateWalIndex::open`] refuses.
pub(super) struct PrivateWalIndex {
    never: std::convert::Infallible,
}

impl PrivateWalIndex {
    /// Refuses, with the reason to tell the user.
    ///
    /// # Safety
    /// None needed; `unsafe` to match the Unix signature.
    pub unsafe fn open(
        _base: *mut ffi::sqlite3_vfs,
        _db_path: &str,
    ) -> Result<Self, (c_int, Option<&'static str>)> {
        let refusal = WalIndexRefusal::NoSharedWalIndex;
        Err((refusal.code(), Some(refusal.message())))
    }

    pub fn fence_intact(&self) -> bool {
        match self.never {}
    }

    pub fn file(&mut self) -> *mut ffi::sqlite3_file {
        match self.never {}
    }

    pub fn close(self, _delete: bool) -> c_int {
        match self.never {}
    }
}

/// Whether an encrypted connection could have the wal-index of the database at `db_path`:
/// the same refusal as `xShmMap` (said at open when a WAL is beside the file).
pub fn check_wal_index_available(_db_path: &Path) -> Result<(), WalIndexRefusal> {
    Err(WalIndexRefusal::NoSharedWalIndex)
}
