//! [`CipherScheme`]: which page format a database file is in — SQLCipher 4's (the
//! default) or SQLite3 Multiple Ciphers' `aegis` scheme with AEGIS-256
//! (docs/aegis-format.md). The two differ in their reserve, their passphrase KDF and the
//! page cipher; they share the salt in bytes 0..16 of page 1.

use crate::aegis_page::AEGIS_RESERVE;
use crate::RESERVE;

/// A database file's page format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CipherScheme {
    /// SQLCipher 4: AES-256-CBC + HMAC-SHA512, 80 reserved bytes, PBKDF2-HMAC-SHA512.
    #[default]
    SqlCipher4,
    /// SQLite3MC's `aegis` cipher, algorithm `aegis-256`: 64 reserved bytes (tag and
    /// nonce), Argon2id for passphrases.
    Aegis256,
}

impl CipherScheme {
    /// Bytes reserved at the end of every page (the SQLite header's byte 20).
    pub const fn reserve(self) -> usize {
        match self {
            CipherScheme::SqlCipher4 => RESERVE,
            CipherScheme::Aegis256 => AEGIS_RESERVE,
        }
    }

    /// The name users give it (`cipher: 'sqlcipher'` / `'aegis'`).
    pub const fn name(self) -> &'static str {
        match self {
            CipherScheme::SqlCipher4 => "sqlcipher",
            CipherScheme::Aegis256 => "aegis",
        }
    }
}
