//! How a cipherlite connection is opened and what it refuses, below the bridge (no napi):
//! which VFS a database goes through (SQLite's default, a keyed VFS, or the VFS over file
//! descriptors), the checks on the key, passphrase and page size, the refusal to let SQLite
//! recover a hot journal into a file it can't read, the set-up every connection gets
//! (refused pragmas, `ATTACH … KEY`, busy timeout, limits, the storage functions), what an
//! encrypted connection does for a database ATTACHed to it, and which VFS a backup's
//! destination goes through (docs/design.md §3.2, §4.1, §4.2); and, in `state`, the
//! rules on which calls a connection's state allows (docs/design.md §5.3).
//!
//! `binding` converts JS values into an [`OpenRequest`] and calls [`open`]; it keeps the
//! [`DatabaseVfs`] it gets back for as long as the connection lives. Built on `sqlite`,
//! `vfs` and `storage`; it knows nothing of JS.

mod attached;
mod backup;
mod open;
pub mod pragmas;
mod setup;
pub mod state;

#[cfg(test)]
mod tests;

pub use attached::reserve_new_attached_databases;
pub use backup::{BackupDestination, BackupKey, RunningBackup};
pub use open::{
    cipher_named, deserialize, layout_named, open, open_keyed, prepare_keyed, refuse_reserved_name,
    reopen_rekeyed, scheme_named, DatabaseVfs, OpenRequest, OpenedDatabase, Source,
};
pub use setup::{configure, set_unsafe_mode, MAX_JS_STRING_LENGTH};

/// Which page 1 a new encrypted file gets (existing files keep theirs).
pub use cipherlite_vfs::NewFileLayout as CipherLayout;

/// Argon2id's costs for an AEGIS passphrase (SQLite3MC's `tcost`, `mcost`, `pcost`).
pub use cipherlite_codec::Argon2Costs;

/// The page size of an encrypted database when none is given (SQLCipher 4's default).
pub const DEFAULT_PAGE_SIZE: usize = cipherlite_vfs::PAGE_SIZE;

/// Wipes what opening or closing an encrypted database left of its key on this thread's
/// stack; the binding calls it after each (its own callees copied the key too).
pub fn scrub_key_residue() {
    cipherlite_vfs::scrub_key_residue();
}

/// Why a connection could not be opened or set up.
#[derive(Debug)]
pub enum Error {
    /// A request the options make impossible (a key with file descriptors, a key and a
    /// passphrase, bad descriptors): a `TypeError` in JS, with this message.
    Usage(String),
    /// SQLite's (or the VFS's) error, with its code.
    Sqlite(cipherlite_sqlite::Error),
}

impl From<cipherlite_sqlite::Error> for Error {
    fn from(e: cipherlite_sqlite::Error) -> Self {
        Error::Sqlite(e)
    }
}

pub type Result<T> = std::result::Result<T, Error>;

/// An SQLite error from a bare result code (the VFS's registration failures).
fn code_error(rc: std::ffi::c_int) -> Error {
    Error::Sqlite(cipherlite_sqlite::Error::from_code(rc))
}
