//! The storage layer's errors.
//!
//! Messages never contain argument values (owner ids, timestamps, ranks): they end up in
//! JS exceptions and logs, and a relay's logs must carry no user data.

use std::fmt;

/// A SQL-function argument that Evolu's types would never produce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ArgumentError {
    /// An owner id that is not a 16-byte BLOB.
    OwnerId,
    /// A timestamp that is not a 16-byte BLOB.
    Timestamp,
    /// A timestamp to insert whose millis is 2^48 − 1, the value Evolu reserves for
    /// "infinity" (the all-`0xFF` "+∞" fence is one).
    ReservedTimestamp,
    /// A level that is not an integer in 1..=10 (integral REALs such as 3.0 are accepted).
    Level,
    /// An index, rank or bucket boundary that is not a non-negative integer below 2^63.
    Rank,
    /// A strategy other than "append", "prepend" or "insert".
    Strategy,
    /// Bucket boundaries that are not a JSON array of non-negative integers (by their
    /// exact decimal value).
    BucketsJson,
    /// A list of timestamps that is not a BLOB of 16-byte timestamps end to end.
    Timestamps,
    /// A batch of messages that is not a BLOB of encoded messages (`batch.rs`).
    Messages,
}

impl fmt::Display for ArgumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::OwnerId => "the owner id must be a 16-byte blob",
            Self::Timestamp => "the timestamp must be a 16-byte blob",
            Self::ReservedTimestamp => {
                "timestamps with millis 2^48 - 1 are reserved (infinity) and cannot be stored"
            }
            Self::Level => "the level must be an integer from 1 to 10",
            Self::Rank => "indexes, ranks and bucket boundaries must be non-negative integers",
            Self::Strategy => "the strategy must be 'append', 'prepend' or 'insert'",
            Self::BucketsJson => "the buckets must be a JSON array of non-negative integers",
            Self::Timestamps => "the timestamps must be 16-byte timestamps end to end",
            Self::Messages => "the messages must be encoded as evolu_relay_write reads them",
        })
    }
}

impl std::error::Error for ArgumentError {}

/// An error of the storage algorithms; `E` is the store's own error (SQLite's, for the
/// SQL functions), passed through unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error<E> {
    /// The store failed; the SQLite error, extended code included.
    Store(E),
    /// An argument that fails the helpers' checks.
    Argument(ArgumentError),
    /// `at(index)` with index ≥ size (Evolu's SQL would recurse forever).
    IndexOutOfRange,
    /// A range whose begin is after its end (Evolu asserts `begin <= end`).
    BeginAfterEnd,
    /// A range end past the size of the skiplist.
    EndPastSize,
    /// Bucket boundaries that are not strictly ascending.
    BucketsNotAscending,
    /// A bucket boundary past the size of the skiplist (Evolu's SQL would recurse forever).
    BucketPastSize,
    /// Rows that break the skiplist invariant, or a store that answered outside the
    /// requested range. The text says which check failed; it holds no data.
    Corrupt(&'static str),
}

/// The result of a storage algorithm over a store whose error type is `E`.
pub type StorageResult<T, E> = Result<T, Error<E>>;

impl<E> From<ArgumentError> for Error<E> {
    fn from(error: ArgumentError) -> Self {
        Self::Argument(error)
    }
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Store(error) => error.fmt(f),
            Self::Argument(error) => error.fmt(f),
            Self::IndexOutOfRange => f.write_str("the index is out of range (index >= size)"),
            Self::BeginAfterEnd => f.write_str("the range begin is after its end"),
            Self::EndPastSize => f.write_str("the range end is past the size of the skiplist"),
            Self::BucketsNotAscending => {
                f.write_str("the bucket boundaries must be strictly ascending")
            }
            Self::BucketPastSize => {
                f.write_str("a bucket boundary is past the size of the skiplist")
            }
            Self::Corrupt(what) => write!(f, "evolu_timestamp is inconsistent: {what}"),
        }
    }
}

impl<E: std::error::Error + 'static> std::error::Error for Error<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Store(error) => Some(error),
            Self::Argument(error) => Some(error),
            _ => None,
        }
    }
}
