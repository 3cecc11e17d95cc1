//! Key derivation and salt: the HMAC-key KDF, the passphrase KDF, and the salt helpers.
//!
//! With a raw 32-byte key SQLCipher runs no KDF on the key: those bytes are the AES-256 key.
//! Only the HMAC key is derived, from the key and the file's 16-byte salt
//! (docs/sqlcipher4-format.md §2):
//!
//! ```text
//! hmac_key = PBKDF2-HMAC-SHA512(password = key, salt = salt ^ 0x3a (each byte),
//!                               iterations = 2, length = 32)
//! ```
//!
//! What the codec keeps of the keys is `backend::PageCipher`'s.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha512;
use zeroize::Zeroizing;

use crate::error::CodecError;
use crate::{FAST_KDF_ITER, HMAC_KEY_SIZE, HMAC_SALT_MASK, HMAC_SIZE, KEY_SIZE, SALT_SIZE};

/// HMAC-SHA512, the PRF of both KDFs and the page HMAC of the portable pass.
pub(crate) type HmacSha512 = Hmac<Sha512>;

/// The HMAC key SQLCipher derives from a raw key and a salt (§2).
///
/// `PBKDF2-HMAC-SHA512(enc_key, salt XOR 0x3a, 2 iterations, 32 bytes)`. Public for
/// known-answer tests and the benchmark; the codec derives it itself in [`PageCodec::new`].
///
/// [`PageCodec::new`]: crate::PageCodec::new
pub fn derive_hmac_key(
    enc_key: &[u8; KEY_SIZE],
    salt: &[u8; SALT_SIZE],
) -> Zeroizing<[u8; HMAC_KEY_SIZE]> {
    let mut hmac_salt = [0u8; SALT_SIZE];
    for (masked, byte) in hmac_salt.iter_mut().zip(salt) {
        *masked = byte ^ HMAC_SALT_MASK;
    }
    let mut hmac_key = Zeroizing::new([0u8; HMAC_KEY_SIZE]);
    pbkdf2_hmac_sha512(enc_key, &hmac_salt, FAST_KDF_ITER, &mut hmac_key[..]);
    hmac_key
}

/// The key SQLCipher 4 derives from a passphrase (`PRAGMA key = 'secret'`):
/// `PBKDF2-HMAC-SHA512(passphrase, salt, iterations, 32)`, the salt being the file's first
/// 16 bytes (docs/sqlcipher4-format.md §8). Its HMAC key is then derived from it as for a
/// raw key. Constant time in the passphrase's content (its length is not secret here).
pub fn derive_passphrase_key(
    passphrase: &[u8],
    salt: &[u8; SALT_SIZE],
    iterations: u32,
) -> Zeroizing<[u8; KEY_SIZE]> {
    let mut key = Zeroizing::new([0u8; KEY_SIZE]);
    pbkdf2_hmac_sha512(passphrase, salt, iterations.max(1), &mut key[..]);
    key
}

/// Argon2id's time cost for an AEGIS passphrase (SQLite3MC's `AEGIS_TCOST_DEFAULT`,
/// `PRAGMA tcost`; docs/aegis-format.md §4).
pub const AEGIS_ARGON2_T_COST: u32 = 2;
/// Argon2id's memory cost in KiB (`AEGIS_MCOST_DEFAULT` = 19 MiB, `PRAGMA mcost`).
pub const AEGIS_ARGON2_M_COST: u32 = 19 * 1024;
/// Argon2id's parallelism (`AEGIS_PCOST_DEFAULT`, `PRAGMA pcost`).
pub const AEGIS_ARGON2_P_COST: u32 = 1;

/// Argon2id's costs for an AEGIS passphrase: SQLite3MC's `PRAGMA tcost`, `mcost` and
/// `pcost` (docs/aegis-format.md §4). SQLite3MC's bounds are 1..=2^31-1 for each; Argon2
/// itself needs `mcost >= 8 pcost` and `pcost < 2^24` (where SQLite3MC's `argon2id_hash_raw`
/// fails, its error ignored, and the key left as it was: cipherlite refuses those costs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Argon2Costs {
    /// Iterations (`tcost`).
    pub t_cost: u32,
    /// Memory in KiB (`mcost`).
    pub m_cost: u32,
    /// Parallelism, the lanes (`pcost`; cipherlite computes them on one thread, as
    /// SQLite3MC's single-threaded build does: the output is the same).
    pub p_cost: u32,
}

impl Default for Argon2Costs {
    /// SQLite3MC's defaults: `t = 2`, `m = 19 MiB`, `p = 1`.
    fn default() -> Self {
        Argon2Costs {
            t_cost: AEGIS_ARGON2_T_COST,
            m_cost: AEGIS_ARGON2_M_COST,
            p_cost: AEGIS_ARGON2_P_COST,
        }
    }
}

impl Argon2Costs {
    /// The largest value of each cost SQLite3MC accepts (`mcAegisParams`).
    pub const MAX: u32 = 0x7fff_ffff;
    /// Argon2's largest parallelism (its lane count, `ARGON2_MAX_LANES`).
    pub const MAX_P_COST: u32 = 0x00ff_ffff;

    /// Which cost is out of bounds (its `PRAGMA` name), and the bounds, if one is.
    pub fn check(&self) -> Result<(), &'static str> {
        if !(1..=Self::MAX).contains(&self.t_cost) {
            return Err("tcost");
        }
        if !(1..=Self::MAX_P_COST).contains(&self.p_cost) {
            return Err("pcost");
        }
        if self.m_cost > Self::MAX || u64::from(self.m_cost) < 8 * u64::from(self.p_cost) {
            return Err("mcost");
        }
        Ok(())
    }
}

/// The AEGIS-256 key SQLite3MC's `aegis` cipher derives from a passphrase
/// (`GenerateKeyAegisCipher`) with the default costs: `Argon2id(passphrase, salt, t = 2, m =
/// 19 MiB, p = 1, 32 bytes)`, version 0x13, no secret or associated data. Argon2id's memory
/// accesses depend on the passphrase after its first half-pass, by design (see the
/// security notes).
pub fn derive_aegis_passphrase_key(
    passphrase: &[u8],
    salt: &[u8; SALT_SIZE],
) -> Result<Zeroizing<[u8; KEY_SIZE]>, CodecError> {
    derive_aegis_passphrase_key_with(passphrase, salt, Argon2Costs::default(), KEY_SIZE)
}

/// [`derive_aegis_passphrase_key`] with `costs` and a `key_len`-byte key (32 for the
/// AEGIS-256 algorithms, 16 for the AEGIS-128 ones: `m_keyLength`), returned in the first
/// `key_len` bytes (the rest zero). Fails for costs [`Argon2Costs::check`] refuses, a
/// passphrase of 4 GiB or more, or when the memory (`m_cost` KiB) can't be allocated
/// ([`CodecError::OutOfMemory`]).
pub fn derive_aegis_passphrase_key_with(
    passphrase: &[u8],
    salt: &[u8; SALT_SIZE],
    costs: Argon2Costs,
    key_len: usize,
) -> Result<Zeroizing<[u8; KEY_SIZE]>, CodecError> {
    use argon2::{Algorithm, Argon2, Params, Version};
    let refused = CodecError::BadLength {
        expected: key_len,
        actual: passphrase.len(),
    };
    if costs.check().is_err() || !(16..=KEY_SIZE).contains(&key_len) {
        return Err(refused);
    }
    let params = Params::new(costs.m_cost, costs.t_cost, costs.p_cost, Some(key_len))
        .map_err(|_| refused)?;
    let argon2 = Argon2::new(Algorithm::Argon2id, Version::V0x13, params);
    let mut key = Zeroizing::new([0u8; KEY_SIZE]);
    argon2
        .hash_password_into(passphrase, salt, &mut key[..key_len])
        .map_err(|e| match e {
            argon2::Error::OutOfMemory => CodecError::OutOfMemory,
            _ => refused,
        })?;
    Ok(key)
}

/// PBKDF2 (RFC 8018 §5.2) with HMAC-SHA512 as the PRF, filling `out`.
///
/// `T_i = U_1 ^ … ^ U_c` with `U_1 = PRF(P, S || INT_BE(i))`, `U_j = PRF(P, U_{j-1})`.
/// Every intermediate lives in a `Zeroizing` buffer. No branch depends on the password.
fn pbkdf2_hmac_sha512(password: &[u8], salt: &[u8], iterations: u32, out: &mut [u8]) {
    let prf = keyed_hmac(password);
    let mut block_index: u32 = 0;
    for chunk in out.chunks_mut(HMAC_SIZE) {
        block_index = block_index.wrapping_add(1);
        let mut u = Zeroizing::new([0u8; HMAC_SIZE]);
        let mut mac = prf.clone();
        mac.update(salt);
        mac.update(&block_index.to_be_bytes());
        u.copy_from_slice(&mac.finalize().into_bytes());
        let mut t = u.clone();
        for _ in 1..iterations {
            let mut mac = prf.clone();
            mac.update(&u[..]);
            u.copy_from_slice(&mac.finalize().into_bytes());
            for (t_byte, u_byte) in t.iter_mut().zip(u.iter()) {
                *t_byte ^= u_byte;
            }
        }
        chunk.copy_from_slice(&t[..chunk.len()]);
    }
}

/// An HMAC-SHA512 state keyed with `key` (any length is valid for HMAC).
pub(crate) fn keyed_hmac(key: &[u8]) -> HmacSha512 {
    HmacSha512::new_from_slice(key).expect("HMAC accepts keys of any length")
}

/// 16 fresh random bytes from the operating system, the salt of a new database (§5).
pub fn random_salt() -> Result<[u8; SALT_SIZE], CodecError> {
    let mut salt = [0u8; SALT_SIZE];
    getrandom::fill(&mut salt)?;
    Ok(salt)
}

/// The salt stored in clear in bytes 0..16 of an encrypted page-1 image (§5). Only the
/// first 16 bytes are needed, so a 16-byte read of the file's start is enough.
///
/// The salt is not checked here (there is nothing to check it against without the key);
/// a wrong salt shows up as [`CodecError::HmacMismatch`] on every page.
pub fn read_salt(page1_image: &[u8]) -> Result<[u8; SALT_SIZE], CodecError> {
    match page1_image.get(..SALT_SIZE) {
        Some(bytes) => {
            let mut salt = [0u8; SALT_SIZE];
            salt.copy_from_slice(bytes);
            Ok(salt)
        }
        None => Err(CodecError::BadLength {
            expected: SALT_SIZE,
            actual: page1_image.len(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{hex, sample_file, sample_key};

    #[test]
    fn pbkdf2_matches_published_sha512_vectors() {
        // PBKDF2-HMAC-SHA512 vectors for P = "password", S = "salt" (the RFC 6070 inputs),
        // as published for SHA-512 and reproduced with Python's hashlib.pbkdf2_hmac.
        let mut out = [0u8; 64];
        pbkdf2_hmac_sha512(b"password", b"salt", 1, &mut out);
        assert_eq!(
            out.to_vec(),
            hex(
                "867f70cf1ade02cff3752599a3a53dc4af34c7a669815ae5d513554e1c8cf252\
                 c02d470a285a0501bad999bfe943c08f050235d7d68b1da55e63f73b60a57fce"
            )
        );
        pbkdf2_hmac_sha512(b"password", b"salt", 2, &mut out);
        assert_eq!(
            out.to_vec(),
            hex(
                "e1d9c16aa681708a45f5c7c4e215ceb66e011a2e9f0040713f18aefdb866d53c\
                 f76cab2868a39b9f7840edce4fef5a82be67335c77a6068e04112754f27ccf4e"
            )
        );
    }

    #[test]
    fn passphrase_key_is_pbkdf2_sha512_over_the_salt() {
        // hashlib.pbkdf2_hmac('sha512', b'testkey', bytes(range(16)), 1000, 32)
        let salt: [u8; 16] = core::array::from_fn(|i| i as u8);
        let key = derive_passphrase_key(b"testkey", &salt, 1000);
        assert_eq!(
            key.to_vec(),
            hex("b6ffad073841c8ec66f8773a8767b46d803c6a4fede1900fb244d02e54782929")
        );
    }

    #[test]
    fn pbkdf2_longer_output_uses_the_block_counter() {
        // hashlib.pbkdf2_hmac('sha512', b'password', b'salt', 2, 80): block 1 then the first
        // 16 bytes of block 2 (INT_BE(2)).
        let mut out = [0u8; 80];
        pbkdf2_hmac_sha512(b"password", b"salt", 2, &mut out);
        assert_eq!(
            out.to_vec(),
            hex(
                "e1d9c16aa681708a45f5c7c4e215ceb66e011a2e9f0040713f18aefdb866d53c\
                 f76cab2868a39b9f7840edce4fef5a82be67335c77a6068e04112754f27ccf4e\
                 473e311ad827b68945f4e2dddb204c78"
            )
        );
        // 4096 iterations exercise the U_j chain.
        let mut out = [0u8; 64];
        pbkdf2_hmac_sha512(b"password", b"salt", 4096, &mut out);
        assert_eq!(
            out.to_vec(),
            hex(
                "d197b1b33db0143e018b12f3d1d1479e6cdebdcc97c5c0f87f6902e072f457b5\
                 143f30602641b3d55cd335988cb36b84376060ecd532e039b742a239434af2d5"
            )
        );
    }

    /// The table in docs/sqlcipher4-format.md §2 (derived independently with Python's hashlib).
    const KNOWN_HMAC_KEYS: [(&str, &str, &str); 3] = [
        (
            "sqlcipher-4.9.0-cli.sqlite",
            "256f66da28387632b26787b139aa7368",
            "4cb50959768a4b595a7ed949ab89c35d03c05e45758c086a37fd3bb5cde37a1a",
        ),
        (
            "sqlite3mc-2.6.1-legacy0.sqlite",
            "2165706a4c040899bee7b9e08d2e20f3",
            "e1914c7aa07d038762269c5090c68f1742fb7ecca8138461f4e853f14a98469f",
        ),
        (
            "sqlite3mc-2.6.1-legacy4.sqlite",
            "974bb0a5bc737773b0e6f15a8d36d7f6",
            "2a719e6a1e68b2d10c8423db832c12db47b81a4d7739c8326b149cad3800be80",
        ),
    ];

    #[test]
    fn derived_hmac_keys_match_the_format_table() {
        let key = sample_key();
        for (file, salt_hex, hmac_key_hex) in KNOWN_HMAC_KEYS {
            let image = sample_file(file);
            let salt = read_salt(&image).expect("sample file has a salt");
            assert_eq!(salt.to_vec(), hex(salt_hex), "salt of {file}");
            let hmac_key = derive_hmac_key(&key, &salt);
            assert_eq!(hmac_key.to_vec(), hex(hmac_key_hex), "hmac key of {file}");
        }
    }

    #[test]
    fn read_salt_needs_sixteen_bytes() {
        assert_eq!(
            read_salt(&[1u8; 15]),
            Err(CodecError::BadLength {
                expected: 16,
                actual: 15
            })
        );
        let mut bytes = [0u8; 20];
        bytes[..16].copy_from_slice(b"0123456789abcdef");
        assert_eq!(read_salt(&bytes), Ok(*b"0123456789abcdef"));
    }

    #[test]
    fn random_salts_differ() {
        let a = random_salt().expect("OS random source");
        let b = random_salt().expect("OS random source");
        assert_ne!(a, b);
    }
}
