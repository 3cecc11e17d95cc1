//! [`KeySource`]: what a keyed VFS encrypts with — a raw 32-byte key, or a passphrase whose
//! key SQLCipher 4 derives per file from the file's salt (PBKDF2-HMAC-SHA512, 256,000
//! iterations by default). Derived keys are cached by salt, so a passphrase costs one
//! derivation per database file, not per open of its journal or WAL. All copies are in
//! wiped heap allocations. For SQLite3 Multiple Ciphers' AEGIS scheme a passphrase's key is
//! Argon2id's instead (docs/aegis-format.md §4: its costs given, its length the algorithm's),
//! and a raw key is the AEGIS key (an AEGIS-128 algorithm's 16 bytes in the first half of
//! the 32, the rest zero).

use cipherlite_codec::{
    self as codec, Argon2Costs, CipherScheme, CodecError, PageCodec, KEY_SIZE, SALT_SIZE,
};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use zeroize::Zeroizing;

/// The key a database is opened with, as the binding hands it over.
pub enum VfsKey<'a> {
    /// The raw AES-256 key (SQLCipher's `x'…'` form).
    Raw(&'a [u8; KEY_SIZE]),
    /// A passphrase (SQLCipher's `PRAGMA key = '…'` form), its PBKDF2 iterations (the
    /// SQLCipher format's) and its Argon2id costs (the AEGIS format's).
    Passphrase {
        passphrase: &'a [u8],
        iterations: u32,
        argon2: Argon2Costs,
    },
}

enum Kind {
    Raw(Zeroizing<[u8; KEY_SIZE]>),
    Passphrase(Zeroizing<Vec<u8>>, u32, Argon2Costs),
}

/// A key derived from the passphrase for one salt.
type Derived = ([u8; SALT_SIZE], Zeroizing<[u8; KEY_SIZE]>);

pub struct KeySource {
    kind: Kind,
    scheme: CipherScheme,
    derived: Mutex<Vec<Derived>>,
    /// A derivation could not allocate Argon2id's memory (the `mcost` asked for).
    out_of_memory: AtomicBool,
}

impl KeySource {
    #[cfg(test)]
    pub fn new(key: &VfsKey<'_>) -> KeySource {
        Self::with_scheme(key, CipherScheme::SqlCipher4)
    }

    /// A key for files in `scheme`'s page format.
    pub fn with_scheme(key: &VfsKey<'_>, scheme: CipherScheme) -> KeySource {
        let kind = match key {
            VfsKey::Raw(raw) => {
                let mut copy = Zeroizing::new([0u8; KEY_SIZE]);
                copy.copy_from_slice(&raw[..]);
                Kind::Raw(copy)
            }
            VfsKey::Passphrase {
                passphrase,
                iterations,
                argon2,
            } => {
                let mut copy = Zeroizing::new(Vec::with_capacity(passphrase.len()));
                copy.extend_from_slice(passphrase);
                Kind::Passphrase(copy, *iterations, *argon2)
            }
        };
        KeySource {
            kind,
            scheme,
            derived: Mutex::new(Vec::new()),
            out_of_memory: AtomicBool::new(false),
        }
    }

    /// Whether a key derivation failed for want of memory (Argon2id's `mcost`).
    pub fn ran_out_of_memory(&self) -> bool {
        self.out_of_memory.load(Ordering::Relaxed)
    }

    /// The page format this key's files are in.
    pub fn scheme(&self) -> CipherScheme {
        self.scheme
    }

    /// The page codec of a file whose salt is `salt`, for `page_size`-byte pages.
    pub fn codec_for(&self, salt: [u8; SALT_SIZE], page_size: usize) -> Option<PageCodec> {
        let key = self.key_for(&salt).ok()?;
        PageCodec::with_scheme(self.scheme, &key, salt, page_size).ok()
    }

    /// The AES (or AEGIS) key for a file whose salt is `salt`. Fails only when a
    /// passphrase's derivation does: Argon2id out of memory (then
    /// [`ran_out_of_memory`](Self::ran_out_of_memory) says so).
    pub fn key_for(&self, salt: &[u8; SALT_SIZE]) -> Result<Zeroizing<[u8; KEY_SIZE]>, CodecError> {
        if let Kind::Raw(key) = &self.kind {
            return Ok(key.clone());
        }
        if let Ok(cache) = self.derived.lock() {
            if let Some((_, key)) = cache.iter().find(|(s, _)| s == salt) {
                return Ok(key.clone());
            }
        }
        let key = self.derive(self.scheme, salt)?;
        if let Ok(mut cache) = self.derived.lock() {
            cache.push((*salt, key.clone()));
        }
        Ok(key)
    }

    /// The key this source's key (raw, or the passphrase derived anew, not cached) is for
    /// a file in `scheme`'s format whose salt is `salt`: to try a file in another format.
    /// A raw key is the key of every format whose key has its length.
    pub fn key_in(
        &self,
        scheme: CipherScheme,
        salt: &[u8; SALT_SIZE],
    ) -> Result<Zeroizing<[u8; KEY_SIZE]>, CodecError> {
        match &self.kind {
            Kind::Raw(key) if scheme.key_size() == self.scheme.key_size() => Ok(key.clone()),
            Kind::Raw(_) => Err(CodecError::BadLength {
                expected: scheme.key_size(),
                actual: self.scheme.key_size(),
            }),
            Kind::Passphrase(..) => self.derive(scheme, salt),
        }
    }

    fn derive(
        &self,
        scheme: CipherScheme,
        salt: &[u8; SALT_SIZE],
    ) -> Result<Zeroizing<[u8; KEY_SIZE]>, CodecError> {
        let Kind::Passphrase(passphrase, iterations, argon2) = &self.kind else {
            return Err(CodecError::WrongScheme);
        };
        if scheme.is_aegis() {
            let derived = codec::derive_aegis_passphrase_key_with(
                passphrase,
                salt,
                *argon2,
                scheme.key_size(),
            );
            if derived == Err(CodecError::OutOfMemory) {
                self.out_of_memory.store(true, Ordering::Relaxed);
            }
            // Registration refused costs Argon2 refuses and passphrases of 4 GiB or more.
            derived
        } else {
            Ok(codec::derive_passphrase_key(passphrase, salt, *iterations))
        }
    }
}

#[cfg(test)]
impl KeySource {
    /// How many keys were derived from the passphrase (one per distinct salt).
    pub fn derivations(&self) -> usize {
        self.derived.lock().map_or(0, |cache| cache.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_key_is_the_key_of_every_salt() {
        let raw = [0x42u8; KEY_SIZE];
        let source = KeySource::new(&VfsKey::Raw(&raw));
        assert_eq!(*source.key_for(&[1; SALT_SIZE]).expect("raw"), raw);
        assert_eq!(*source.key_for(&[2; SALT_SIZE]).expect("raw"), raw);
        // Nothing is derived or cached for a raw key.
        assert!(source.derived.lock().expect("cache").is_empty());
    }

    #[test]
    fn a_passphrase_key_is_derived_once_per_salt() {
        let passphrase = b"correct horse battery staple";
        let source = KeySource::new(&VfsKey::Passphrase {
            passphrase,
            iterations: 3,
            argon2: Argon2Costs::default(),
        });
        let (a, b) = ([7u8; SALT_SIZE], [8u8; SALT_SIZE]);
        let key_a = source.key_for(&a).expect("derived");
        assert_eq!(*key_a, *codec::derive_passphrase_key(passphrase, &a, 3));
        let key_b = source.key_for(&b).expect("derived");
        assert_eq!(*key_b, *codec::derive_passphrase_key(passphrase, &b, 3));
        assert_ne!(*key_a, *key_b, "each salt has its own key");
        // Asked again: the cached key, the same bytes, no new cache entry.
        assert_eq!(*source.key_for(&a).expect("cached"), *key_a);
        let cache = source.derived.lock().expect("cache");
        let salts: Vec<_> = cache.iter().map(|(s, _)| *s).collect();
        assert_eq!(salts, [a, b]);
    }

    #[test]
    fn the_iteration_count_and_passphrase_are_part_of_the_key() {
        let salt = [9u8; SALT_SIZE];
        let key = |passphrase: &[u8], iterations| {
            KeySource::new(&VfsKey::Passphrase {
                passphrase,
                iterations,
                argon2: Argon2Costs::default(),
            })
            .key_for(&salt)
            .expect("derived")
        };
        assert_ne!(*key(b"secret", 2), *key(b"secret", 3));
        assert_ne!(*key(b"secret", 2), *key(b"Secret", 2));
        // The source keeps its own copy: the caller's buffer may be wiped after new().
        let mut caller = b"secret".to_vec();
        let source = KeySource::new(&VfsKey::Passphrase {
            passphrase: &caller,
            iterations: 2,
            argon2: Argon2Costs::default(),
        });
        caller.fill(0);
        assert_eq!(*source.key_for(&salt).expect("derived"), *key(b"secret", 2));
    }

    /// An AEGIS passphrase's key: Argon2id with the source's costs, the algorithm's key
    /// length (16 bytes for AEGIS-128, the rest zero), and the costs part of the key.
    #[test]
    fn an_aegis_passphrase_key_has_the_costs_and_the_algorithms_length() {
        let salt = [3u8; SALT_SIZE];
        let cheap = Argon2Costs {
            t_cost: 1,
            m_cost: 64,
            p_cost: 1,
        };
        let key = |scheme, argon2| {
            KeySource::with_scheme(
                &VfsKey::Passphrase {
                    passphrase: b"secret",
                    iterations: 2,
                    argon2,
                },
                scheme,
            )
            .key_for(&salt)
            .expect("derived")
        };
        let k128 = key(CipherScheme::Aegis128L, cheap);
        assert_eq!(
            *k128,
            *codec::derive_aegis_passphrase_key_with(b"secret", &salt, cheap, 16).expect("argon2")
        );
        assert_eq!(k128[16..], [0u8; 16]);
        let k256 = key(CipherScheme::Aegis256X2, cheap);
        assert_ne!(k256[16..], [0u8; 16]);
        assert_eq!(
            *k256,
            *key(CipherScheme::Aegis256, cheap),
            "one key for the family"
        );
        assert_ne!(
            *k256,
            *key(CipherScheme::Aegis256, Argon2Costs { t_cost: 2, ..cheap })
        );
        // A source's key in another format: derived anew for a passphrase; a raw key only
        // for formats whose key has its length.
        let source = KeySource::with_scheme(
            &VfsKey::Passphrase {
                passphrase: b"secret",
                iterations: 2,
                argon2: cheap,
            },
            CipherScheme::Aegis256,
        );
        assert_eq!(
            *source
                .key_in(CipherScheme::Aegis128X4, &salt)
                .expect("derived"),
            *k128
        );
        let raw = KeySource::with_scheme(&VfsKey::Raw(&[7u8; KEY_SIZE]), CipherScheme::Aegis256);
        assert!(raw.key_in(CipherScheme::SqlCipher4, &salt).is_ok());
        assert!(raw.key_in(CipherScheme::Aegis128L, &salt).is_err());
    }
}
