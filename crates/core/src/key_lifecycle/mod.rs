//! The key lifecycle of a database file: encrypt a plaintext file in place, change the
//! key of an encrypted one (rekey), take a plaintext copy (decrypt), and verify a file
//! (authenticate every page, `integrity_check`, a digest of its content).
//!
//! Below the bridge and free of napi: `binding` converts arguments and calls these; the
//! Rust tests here drive them through real files.
//!
//! ## Crash safety
//!
//! A file is never rewritten in place. Every change is "write a complete copy beside the
//! file, make it durable, rename it over the original, make the rename durable"
//! ([`replace`]):
//!
//! 1. exclusive access: the WAL (if any) is checkpointed and the file switched to a
//!    rollback journal (`journal_mode=DELETE`, which SQLite refuses while any other
//!    connection has the file open in WAL mode), then the connection takes and keeps an
//!    EXCLUSIVE lock (`locking_mode=EXCLUSIVE` + `BEGIN EXCLUSIVE; COMMIT`), which SQLite
//!    refuses while any other connection reads or writes;
//! 2. the copy is written under the new key into `<file>.cipherlite-<op>-<random>` in the
//!    same directory (re-encrypted page by page for a rekey, or `VACUUM INTO` when pages
//!    must be rebuilt with another reserve), given the original's journal mode, fsynced,
//!    and every page of it authenticated with the new key;
//! 3. `rename(2)` over the original (atomic), then the directory is fsynced, then the
//!    replaced file's header is overwritten (`replace::retire`) so that any other
//!    connection still holding it fails at its next statement instead of committing
//!    into a file no name leads to.
//!
//! Where an open file can't be renamed over (Windows), step 3 comes after the connection
//! has closed every handle it has on the file (and with them its lock): `encrypt` closes
//! its connection, `rekey` makes the keyed VFS close the connection's file
//! (`cipherlite_vfs::FCNTL_RELEASE_FILE`); the file is then renamed over only if no other
//! process has it open and its first 100 bytes are what they were under the lock
//! (`FileSystem::replace_released`). A rekey that fails after that point leaves the file
//! unchanged and the caller opens it again with the old key.
//!
//! The copy is created `O_EXCL`, mode 0600, and given the original's owner, group and
//! mode; a file with other names (hard links) is refused.
//!
//! Until step 3 the original is untouched and holds every committed transaction (the
//! exclusive lock keeps new ones out); after it the copy does. A crash at any point
//! leaves one of the two whole files under the original name, plus at most a stray
//! temporary copy (encrypted with the new key; deleted by the next operation on the
//! file). `CIPHERLITE_CRASH_TEST_PAUSE=<step>` makes the process stop at a step so a test
//! can kill it there ([`pause_point`]).

mod backup;
mod digest;
mod error;
pub mod fs;
mod ops;
mod parallel;
mod replace;
#[cfg(test)]
mod tests;
mod verify;

pub use backup::{backup_encrypted, BackupProgress, RebuiltCopy, SourceVfs};
pub use cipherlite_codec::CipherScheme;
pub use digest::content_digest;
pub use error::{Error, Result};
pub use ops::{
    connection_released, decrypt_file, decrypt_file_in, encrypt_file, encrypt_file_in,
    encrypt_file_on, rekey_connection, rekey_connection_on, RekeyOptions,
};
pub use replace::pause_point;
pub use verify::{refuse_if_replaced, verify_connection, verify_connection_in, VerifyReport};

use cipherlite_codec::KEY_SIZE;

/// A raw 32-byte key.
pub type Key = [u8; KEY_SIZE];

/// Called with `(pages done, pages in total)` while a file is copied. An estimate while
/// `VACUUM INTO` rebuilds pages (from the size written so far).
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);
