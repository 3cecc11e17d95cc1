//! The codec's one error type.
//!
//! No variant carries key material, plaintext or anything derived from them: the only
//! values shown are sizes, page numbers and the OS error code of the random source. The
//! VFS maps [`CodecError::HmacMismatch`] to `SQLITE_NOTADB` on page 1 and to
//! `SQLITE_CORRUPT`/`SQLITE_IOERR` elsewhere, the rest to `SQLITE_IOERR`/`SQLITE_MISUSE`.

use core::fmt;

/// Why a page could not be encrypted or decrypted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum CodecError {
    /// The page size is not a power of two in `512..=65536`.
    BadPageSize(usize),
    /// A buffer does not have the length the operation needs (usually the page size).
    BadLength {
        /// The length the operation needs.
        expected: usize,
        /// The length it was given.
        actual: usize,
    },
    /// Page number 0: SQLite numbers pages from 1.
    BadPageNumber,
    /// The stored HMAC does not match the page: wrong key, wrong page number, wrong page
    /// size, a torn or never-written page, or tampering. Nothing was decrypted.
    HmacMismatch {
        /// The page number the caller said the image belongs to.
        pgno: u32,
    },
    /// Page 1's HMAC matches but its bytes 0..16 are not this codec's salt. Reopening the
    /// file would derive a different HMAC key from them and fail every page.
    SaltMismatch,
    /// Page 1's SQLite header (the plaintext being written, or the bytes a `Sqlite3mc`
    /// image keeps in clear) does not give this codec's page size and 80 reserved bytes.
    /// Writing it would make a file that cannot be read back (SQLite would use the bytes
    /// the codec overwrites with IV and HMAC).
    HeaderMismatch {
        /// Page size in the header (bytes 16..18; `00 01` means 65536).
        page_size: usize,
        /// Reserved bytes per page in the header (byte 20).
        reserve: u8,
        /// The codec's page size.
        expected_page_size: usize,
    },
    /// The operating system's random source failed (no IV or salt could be drawn).
    Random(getrandom::Error),
    /// A SQLCipher-only operation on an AEGIS codec (a bug in the caller).
    WrongScheme,
    /// A key derivation could not allocate its memory (Argon2id's `mcost`).
    OutOfMemory,
}

impl fmt::Display for CodecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecError::BadPageSize(size) => write!(
                f,
                "invalid page size {size}: must be a power of two from 512 to 65536"
            ),
            CodecError::BadLength { expected, actual } => {
                write!(f, "buffer is {actual} bytes, expected {expected}")
            }
            CodecError::BadPageNumber => f.write_str("page number 0 is not a valid page"),
            CodecError::HmacMismatch { pgno } => write!(
                f,
                "HMAC check failed for page {pgno} (wrong key, or the page is corrupt)"
            ),
            CodecError::SaltMismatch => {
                f.write_str("page 1 does not start with this database's salt")
            }
            CodecError::HeaderMismatch {
                page_size,
                reserve,
                expected_page_size,
            } => write!(
                f,
                "page 1 header says page size {page_size} with {reserve} reserved bytes; \
                 the codec needs page size {expected_page_size} with 80 reserved bytes"
            ),
            CodecError::Random(err) => write!(f, "random number source failed: {err}"),
            CodecError::WrongScheme => {
                f.write_str("a SQLCipher-only operation was asked of an AEGIS codec")
            }
            CodecError::OutOfMemory => {
                f.write_str("the key derivation could not allocate its memory")
            }
        }
    }
}

impl std::error::Error for CodecError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            CodecError::Random(err) => Some(err),
            _ => None,
        }
    }
}

impl From<getrandom::Error> for CodecError {
    fn from(err: getrandom::Error) -> Self {
        CodecError::Random(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_the_problem() {
        assert_eq!(
            CodecError::BadPageSize(1000).to_string(),
            "invalid page size 1000: must be a power of two from 512 to 65536"
        );
        assert_eq!(
            CodecError::BadLength {
                expected: 4096,
                actual: 12
            }
            .to_string(),
            "buffer is 12 bytes, expected 4096"
        );
        assert_eq!(
            CodecError::HmacMismatch { pgno: 7 }.to_string(),
            "HMAC check failed for page 7 (wrong key, or the page is corrupt)"
        );
        assert_eq!(
            CodecError::BadPageNumber.to_string(),
            "page number 0 is not a valid page"
        );
        assert_eq!(
            CodecError::HeaderMismatch {
                page_size: 1024,
                reserve: 0,
                expected_page_size: 4096
            }
            .to_string(),
            "page 1 header says page size 1024 with 0 reserved bytes; \
             the codec needs page size 4096 with 80 reserved bytes"
        );
        assert_eq!(
            CodecError::SaltMismatch.to_string(),
            "page 1 does not start with this database's salt"
        );
    }

    #[test]
    fn a_random_source_failure_keeps_the_os_error_as_its_source() {
        use std::error::Error as _;
        let os = getrandom::Error::new_custom(7);
        let err = CodecError::from(os);
        assert_eq!(err, CodecError::Random(os));
        assert_eq!(
            err.to_string(),
            format!("random number source failed: {os}")
        );
        let source = err.source().expect("the random source's error");
        assert_eq!(source.to_string(), os.to_string());
        assert!(CodecError::BadPageNumber.source().is_none());
        assert!(CodecError::HmacMismatch { pgno: 2 }.source().is_none());
    }
}
