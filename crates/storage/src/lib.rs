//! Evolu's sync storage: the timestamp skiplist and its range fingerprints, as algorithms
//! over a [`SkiplistStore`].
//!
//! Evolu keeps, per owner, the set of 16-byte timestamps it has stored in the table
//! `evolu_timestamp(ownerId, t, h1, h2, c, l)`. Each row is a skiplist node of level
//! `l` (1..=10) that summarises the span of timestamps it closes: `c` counts them and
//! `(h1, h2)` is the XOR of their fingerprints (`docs/evolu-storage.md` §3.1). This module
//! writes exactly the rows Evolu's TypeScript writes, for any insertion order, and
//! answers Evolu's reads (size, rank, timestamp by index, range fingerprints) by walking
//! down the levels instead of scanning.
//!
//! The algorithms know nothing of SQLite: every read and write goes through the
//! [`SkiplistStore`] trait, whose methods are each one indexed probe of Evolu's schema.
//! The SQL functions (`evolu_skiplist_*` and the `evolu_fingerprint_ranges` table,
//! [`register_sql_functions`]) implement the trait over cached prepared statements
//! (`sqlite_store`) and check their inputs with the argument helpers ([`owner_arg`],
//! [`level_arg`], [`parse_buckets`], ...).
//!
//! ```
//! use cipherlite_storage::{self as storage, SkiplistStore, Strategy};
//!
//! fn store_one<S: SkiplistStore>(store: &mut S) -> storage::StorageResult<u64, S::Error> {
//!     let owner = storage::owner_arg(&[0x11; 16])?;
//!     // millis 1, counter 0, node id 68a2a7bf3f85a096
//!     let t = storage::timestamp_arg(&[
//!         0, 0, 0, 0, 0, 1, 0, 0, 0x68, 0xa2, 0xa7, 0xbf, 0x3f, 0x85, 0xa0, 0x96,
//!     ])?;
//!     // Production draws the level from the OS RNG: `storage::random_level()`.
//!     let level = storage::draw_level(|| 0.9);
//!     storage::insert(store, &owner, &t, level, Some(Strategy::Append))?;
//!     storage::size(store, &owner)
//! }
//! ```

mod args;
mod batch;
mod error;
mod fingerprint;
mod level;
mod skiplist;
mod sql_functions;
mod sqlite_store;

#[cfg(test)]
mod memory;
// Shared with cipherlite-tests' storage_sql, which uses what the unit tests don't.
#[cfg(test)]
#[allow(dead_code)]
mod test_support;
#[cfg(test)]
mod tests;

pub use args::{
    level_arg, owner_arg, parse_buckets, rank_arg, strategy_arg, timestamp_arg, SqlNumber,
};
pub use error::{ArgumentError, Error, StorageResult};
pub use fingerprint::{
    join_fingerprint, split_fingerprint, timestamp_fingerprint, xor_fingerprints, ZERO_FINGERPRINT,
};
pub use level::{draw_level, draw_level_with, random_level, random_unit, LEVEL_PROBABILITY};
pub use skiplist::{
    at, fingerprint, fingerprint_ranges, insert, lower_bound, rank, size, FingerprintRange, Node,
    SkiplistStore, Strategy,
};
pub use sql_functions::register_sql_functions;

/// Length of a timestamp (`TimestampBytes`): 6-byte millis, 2-byte counter, 8-byte node id.
pub const TIMESTAMP_LEN: usize = 16;
/// Length of an owner id (`OwnerIdBytes`, the base64url-decoded 22-character `OwnerId`).
pub const OWNER_ID_LEN: usize = 16;
/// Length of a fingerprint: the first 12 bytes of SHA-256 (`fingerprintSize` in Storage.ts).
pub const FINGERPRINT_LEN: usize = 12;
/// Highest skiplist level Evolu writes (`skiplistMaxLevel`); its SQL breaks above it.
pub const MAX_LEVEL: u8 = 10;

/// A timestamp as stored in `evolu_timestamp.t`; compared as unsigned bytes, like SQLite's
/// BLOB comparison.
pub type Timestamp = [u8; TIMESTAMP_LEN];
/// An owner id as stored in `evolu_timestamp.ownerId`.
pub type OwnerId = [u8; OWNER_ID_LEN];
/// The fingerprint of one timestamp or the XOR of several.
pub type Fingerprint = [u8; FINGERPRINT_LEN];

/// `X'FFFFFFFFFFFFFFFFFFFFFFFFFFFFFFFF'`: no real timestamp has it (millis stop at
/// 2^48 − 2), and Evolu's SQL uses it as the exclusive "+∞" fence.
pub const INFINITE_TIMESTAMP: Timestamp = [0xFF; TIMESTAMP_LEN];

/// Whether `t`'s millis (its first 6 bytes) is 2^48 − 1, the value Evolu's `Millis`
/// reserves for "infinity" (`evolu-storage.md` §2.1): no real timestamp has it, so such a
/// timestamp is refused for insertion ([`INFINITE_TIMESTAMP`] is one of them). As a read
/// bound it is fine: it sorts after every real timestamp.
pub fn is_reserved_timestamp(t: &Timestamp) -> bool {
    t[..6] == [0xFF; 6]
}
