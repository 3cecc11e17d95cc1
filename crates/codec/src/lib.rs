//! The SQLCipher 4 page codec: AES-256-CBC + HMAC-SHA512 over fixed-size pages, with a
//! raw 32-byte key. No I/O, and nothing of SQLite's API: the VFS hands it page images and
//! page numbers (`docs/sqlcipher4-format.md` is the specification; section numbers
//! below refer to it).
//!
//! Every page `n` of a database file (and every page image in its rollback journal or
//! WAL, which is encrypted exactly like the database page with the same number) is
//!
//! ```text
//! [off .. P-80)      AES-256-CBC(enc_key, IV, plaintext[off .. P-80))
//! [P-80 .. P-64)     IV, 16 random bytes drawn for every write
//! [P-64 .. P)        HMAC-SHA512(hmac_key, image[off .. P-64) || n as LE32)
//! ```
//!
//! with `off = 0` except on page 1, which starts with the 16-byte salt in clear and has two
//! layouts ([`Page1Layout`]): SQLCipher's (`off = 16`) and SQLite3 Multiple Ciphers'
//! `legacy = 0` (`off = 24`, header bytes 16..24 in clear, ciphertext stealing). The raw key
//! *is* the AES key; the HMAC key is `PBKDF2-HMAC-SHA512(key, salt ^ 0x3a, 2, 32)`.
//!
//! ```
//! # use cipherlite_codec::*;
//! # fn main() -> Result<(), CodecError> {
//! let key = [7u8; KEY_SIZE];
//! let codec = PageCodec::new(&key, random_salt()?, DEFAULT_PAGE_SIZE)?;
//!
//! // What SQLite hands to xWrite for page 5 (its last RESERVE bytes are unused).
//! let plaintext = vec![0x0d; DEFAULT_PAGE_SIZE];
//! let mut image = vec![0; DEFAULT_PAGE_SIZE];
//! codec.encrypt_page(5, Page1Layout::Sqlite3mc, &plaintext, &mut image)?;
//!
//! // What xRead does with the bytes it read from the file: decrypt in place.
//! assert_eq!(codec.decrypt_page_in_place(5, &mut image)?, None);
//! assert_eq!(image[..DEFAULT_PAGE_SIZE - RESERVE], plaintext[..DEFAULT_PAGE_SIZE - RESERVE]);
//!
//! // Same image, wrong page number: rejected, nothing decrypted.
//! codec.encrypt_page(5, Page1Layout::Sqlite3mc, &plaintext, &mut image)?;
//! assert_eq!(
//!     codec.decrypt_page_in_place(6, &mut image),
//!     Err(CodecError::HmacMismatch { pgno: 6 })
//! );
//! # Ok(())
//! # }
//! ```
//!
//! Constant time: AES is RustCrypto's (AES-NI/VAES or ARMv8 AES when the CPU has them,
//! otherwise a bitsliced software implementation without tables), or AES-NI directly in the
//! x86-64 page-write pass (`x86_64::aesni`); SHA-512 is the `sha2` crate's or, on x86-64
//! with AVX and BMI2, this crate's own (`x86_64::sha512`, `x86_64::sha512x4`: integer and
//! vector arithmetic only); the HMAC is compared with `subtle`; CBC, ciphertext stealing
//! and the key derivation have no branch or index that depends on key or plaintext bytes.
//! Key material lives in one heap allocation owned by the [`PageCodec`] (`backend`, which
//! also picks the pass for the CPU) and never appears in `Debug` output or errors.
//!
//! Beside it, SQLite3 Multiple Ciphers' `aegis` scheme (docs/aegis-format.md) with its six
//! algorithms ([`AegisAlgorithm`]): `aegis256` the AEGIS-256 AEAD on the `aes` crate's round
//! function, `aegisx` AEGIS-128L and the multi-lane AEGIS-128X2/X4 and AEGIS-256X2/X4 on the
//! same round, `aegis_page` the page layout, `scheme` the choice between the formats
//! ([`CipherScheme`], [`PageCodec::with_scheme`]).
//!
//! The files from the bottom up, each importing only files before it in this list:
//! `error`; `scrub`, `stack_probe` (tests); `aegis256`, `aegisx`, `aegis_page`, `cbc`, `kdf`; `scheme`; `x86_64/` (`aesni`, `sha512`, `sha512x4`, `hmac`,
//! `lanes`, `stitched`); `backend`; `page`; `journal`, `cpu` (`tests/file_imports.rs`
//! checks that no circle forms).

mod aegis256;
mod aegis_page;
mod aegisx;
mod backend;
pub mod cbc;
mod cpu;
mod error;
pub mod journal;
mod kdf;
mod page;
mod scheme;
mod scrub;
#[cfg(all(test, any(target_arch = "x86_64", target_arch = "aarch64")))]
mod stack_probe;
/// Sample-file helpers for this crate's tests and, with the `test-support` feature, for the
/// tests of the crates above it.
#[cfg(any(test, feature = "test-support"))]
#[doc(hidden)]
pub mod test_support;
#[cfg(target_arch = "x86_64")]
mod x86_64;

pub use aegis_page::{AegisAlgorithm, AEGIS_PAGE1_OFFSET, AEGIS_RESERVE};
pub use backend::pages_at_once_pay_off;
pub use cpu::cpu_features;
pub use error::CodecError;
pub use journal::journal_checksum;
pub use kdf::{
    derive_aegis_passphrase_key, derive_aegis_passphrase_key_with, derive_hmac_key,
    derive_passphrase_key, random_salt, read_salt, Argon2Costs, AEGIS_ARGON2_M_COST,
    AEGIS_ARGON2_P_COST, AEGIS_ARGON2_T_COST,
};
pub use page::{is_all_zero, Page1Layout, PageCodec, PAGES_AT_ONCE};
pub use scheme::CipherScheme;
pub use scrub::scrub_stack;

/// Key derivation, salt and stack scrubbing under their former module path.
pub mod keys {
    pub use super::kdf::{derive_hmac_key, derive_passphrase_key, random_salt, read_salt};
    pub use super::scrub::{scrub_stack, STACK_SCRUB_BYTES};
}

/// Size of the raw key, which is the AES-256 key itself (no KDF runs on it, §2).
pub const KEY_SIZE: usize = 32;
/// Size of the KDF salt stored in clear in bytes 0..16 of page 1 (§1, §5).
pub const SALT_SIZE: usize = 16;
/// Size of the per-page IV: one AES block (§1).
pub const IV_SIZE: usize = 16;
/// Size of the per-page HMAC-SHA512 tag (§1).
pub const HMAC_SIZE: usize = 64;
/// Size of the derived HMAC key (PBKDF2 output length, §2).
pub const HMAC_KEY_SIZE: usize = 32;
/// Bytes reserved at the end of every page: 16-byte IV + 64-byte HMAC-SHA512, already a
/// multiple of the AES block size (§1). The SQLite header must say so (byte 20 = 80).
pub const RESERVE: usize = IV_SIZE + HMAC_SIZE;
/// SQLCipher 4's page size, and this project's default (§1).
pub const DEFAULT_PAGE_SIZE: usize = 4096;
/// Smallest page size SQLite supports.
pub const MIN_PAGE_SIZE: usize = 512;
/// Smallest page size of an encrypted database: SQLite needs at least 480 usable bytes a
/// page, and a 512-byte page leaves 432 after the 80 reserved bytes.
pub const MIN_ENCRYPTED_PAGE_SIZE: usize = 1024;
/// Largest page size SQLite supports (stored as `00 01` in the header).
pub const MAX_PAGE_SIZE: usize = 65536;
/// What bytes 0..16 of a plaintext page 1 hold; on disk the salt replaces them (§4).
pub const SQLITE_HEADER_MAGIC: [u8; 16] = *b"SQLite format 3\0";
/// Each salt byte is XORed with this before it salts the HMAC-key KDF ("hmac_salt_mask", §2).
pub const HMAC_SALT_MASK: u8 = 0x3a;
/// PBKDF2 iterations of the HMAC-key KDF ("fast_kdf_iter", §2).
pub const FAST_KDF_ITER: u32 = 2;
/// PBKDF2-HMAC-SHA512 iterations SQLCipher 4 derives a passphrase's key with (`kdf_iter`).
pub const PASSPHRASE_KDF_ITER: u32 = 256_000;
