//! [`CipherScheme`]: which page format a database file is in — SQLCipher 4's (the
//! default) or SQLite3 Multiple Ciphers' `aegis` scheme with one of its six algorithms
//! (docs/aegis-format.md). They differ in their reserve, their passphrase KDF and the page
//! cipher; they share the salt in bytes 0..16 of page 1.

use crate::aegis_page::AegisAlgorithm;
use crate::RESERVE;

/// A database file's page format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum CipherScheme {
    /// SQLCipher 4: AES-256-CBC + HMAC-SHA512, 80 reserved bytes, PBKDF2-HMAC-SHA512.
    #[default]
    SqlCipher4,
    /// SQLite3MC's `aegis` cipher, algorithm `aegis-256` (its default): 64 reserved bytes
    /// (tag and nonce), Argon2id for passphrases.
    Aegis256,
    /// `aegis` with algorithm `aegis-128l`: a 16-byte key, 48 reserved bytes.
    Aegis128L,
    /// `aegis` with algorithm `aegis-128x2`: a 16-byte key, 48 reserved bytes.
    Aegis128X2,
    /// `aegis` with algorithm `aegis-128x4`: a 16-byte key, 48 reserved bytes.
    Aegis128X4,
    /// `aegis` with algorithm `aegis-256x2`: 64 reserved bytes.
    Aegis256X2,
    /// `aegis` with algorithm `aegis-256x4`: 64 reserved bytes.
    Aegis256X4,
}

impl CipherScheme {
    /// Bytes reserved at the end of every page (the SQLite header's byte 20).
    pub const fn reserve(self) -> usize {
        match self.aegis_algorithm() {
            None => RESERVE,
            Some(algorithm) => algorithm.reserve(),
        }
    }

    /// The name users give its cipher (`cipher: 'sqlcipher'` / `'aegis'`).
    pub const fn name(self) -> &'static str {
        match self {
            CipherScheme::SqlCipher4 => "sqlcipher",
            _ => "aegis",
        }
    }

    /// Whether it is SQLite3MC's `aegis` cipher (any algorithm).
    pub const fn is_aegis(self) -> bool {
        self.aegis_algorithm().is_some()
    }

    /// The AEGIS algorithm, for the `aegis` cipher.
    pub const fn aegis_algorithm(self) -> Option<AegisAlgorithm> {
        match self {
            CipherScheme::SqlCipher4 => None,
            CipherScheme::Aegis256 => Some(AegisAlgorithm::Aegis256),
            CipherScheme::Aegis128L => Some(AegisAlgorithm::Aegis128L),
            CipherScheme::Aegis128X2 => Some(AegisAlgorithm::Aegis128X2),
            CipherScheme::Aegis128X4 => Some(AegisAlgorithm::Aegis128X4),
            CipherScheme::Aegis256X2 => Some(AegisAlgorithm::Aegis256X2),
            CipherScheme::Aegis256X4 => Some(AegisAlgorithm::Aegis256X4),
        }
    }

    /// The `aegis` cipher with `algorithm`.
    pub const fn aegis(algorithm: AegisAlgorithm) -> CipherScheme {
        match algorithm {
            AegisAlgorithm::Aegis256 => CipherScheme::Aegis256,
            AegisAlgorithm::Aegis128L => CipherScheme::Aegis128L,
            AegisAlgorithm::Aegis128X2 => CipherScheme::Aegis128X2,
            AegisAlgorithm::Aegis128X4 => CipherScheme::Aegis128X4,
            AegisAlgorithm::Aegis256X2 => CipherScheme::Aegis256X2,
            AegisAlgorithm::Aegis256X4 => CipherScheme::Aegis256X4,
        }
    }

    /// The length of its raw key: 32 bytes, or 16 for the AEGIS-128 algorithms. A raw key
    /// travels as 32 bytes everywhere ([`KEY_SIZE`](crate::KEY_SIZE)); a 16-byte one in
    /// the first half, the rest zero.
    pub const fn key_size(self) -> usize {
        match self.aegis_algorithm() {
            None => crate::KEY_SIZE,
            Some(algorithm) => algorithm.key_size(),
        }
    }

    /// How messages name it: `sqlcipher`, `aegis` (the default algorithm) or
    /// `aegis (algorithm 'aegis-128l')`.
    pub fn describe(self) -> String {
        match self.aegis_algorithm() {
            Some(algorithm) if algorithm != AegisAlgorithm::Aegis256 => {
                format!("aegis (algorithm '{}')", algorithm.name())
            }
            _ => self.name().to_string(),
        }
    }
}
