//! [`KeySource`]: what a keyed VFS encrypts with — a raw 32-byte key, or a passphrase whose
//! key SQLCipher 4 derives per file from the file's salt (PBKDF2-HMAC-SHA512, 256,000
//! iterations by default). Derived keys are cached by salt, so a passphrase costs one
//! derivation per database file, not per open of its journal or WAL. All copies are in
//! wiped heap allocations. For SQLite3 Multiple Ciphers' AEGIS scheme a passphrase's key is
//! Argon2id's instead (docs/aegis-format.md §4), and a raw key is the AEGIS-256 key.

use cipherlite_codec::{self as codec, CipherScheme, PageCodec, KEY_SIZE, SALT_SIZE};
use std::sync::Mutex;
use zeroize::Zeroizing;

/// The key a database is opened with, as the binding hands it over.
pub enum VfsKey<'a> {
    /// The raw AES-256 key (SQLCipher's `x'…'` form).
    Raw(&'a [u8; KEY_SIZE]),
    /// A passphrase (SQLCipher's `PRAGMA key = '…'` form) and its KDF iterations.
    Passphrase {
        passphrase: &'a [u8],
        iterations: u32,
    },
}

enum Kind {
    Raw(Zeroizing<[u8; KEY_SIZE]>),
    Passphrase(Zeroizing<Vec<u8>>, u32),
}

/// A key derived from the passphrase for one salt.
type Derived = ([u8; SALT_SIZE], Zeroizing<[u8; KEY_SIZE]>);

pub struct KeySource {
    kind: Kind,
    scheme: CipherScheme,
    derived: Mutex<Vec<Derived>>,
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
            } => {
                let mut copy = Zeroizing::new(Vec::with_capacity(passphrase.len()));
                copy.extend_from_slice(passphrase);
                Kind::Passphrase(copy, *iterations)
            }
        };
        KeySource {
            kind,
            scheme,
            derived: Mutex::new(Vec::new()),
        }
    }

    /// This key as the binding handed it over (to make a source for another format).
    pub fn as_vfs_key(&self) -> VfsKey<'_> {
        match &self.kind {
            Kind::Raw(key) => VfsKey::Raw(key),
            Kind::Passphrase(passphrase, iterations) => VfsKey::Passphrase {
                passphrase,
                iterations: *iterations,
            },
        }
    }

    /// The page format this key's files are in.
    pub fn scheme(&self) -> CipherScheme {
        self.scheme
    }

    /// The page codec of a file whose salt is `salt`, for `page_size`-byte pages.
    pub fn codec_for(&self, salt: [u8; SALT_SIZE], page_size: usize) -> Option<PageCodec> {
        PageCodec::with_scheme(self.scheme, &self.key_for(&salt), salt, page_size).ok()
    }

    /// The AES (or AEGIS) key for a file whose salt is `salt`.
    pub fn key_for(&self, salt: &[u8; SALT_SIZE]) -> Zeroizing<[u8; KEY_SIZE]> {
        match &self.kind {
            Kind::Raw(key) => key.clone(),
            Kind::Passphrase(passphrase, iterations) => {
                if let Ok(cache) = self.derived.lock() {
                    if let Some((_, key)) = cache.iter().find(|(s, _)| s == salt) {
                        return key.clone();
                    }
                }
                let key = match self.scheme {
                    CipherScheme::SqlCipher4 => {
                        codec::derive_passphrase_key(passphrase, salt, *iterations)
                    }
                    CipherScheme::Aegis256 => codec::derive_aegis_passphrase_key(passphrase, salt)
                        .expect("Argon2id fails only for passphrases of 4 GiB or more, which registration refuses"),
                };
                if let Ok(mut cache) = self.derived.lock() {
                    cache.push((*salt, key.clone()));
                }
                key
            }
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
        assert_eq!(*source.key_for(&[1; SALT_SIZE]), raw);
        assert_eq!(*source.key_for(&[2; SALT_SIZE]), raw);
        // Nothing is derived or cached for a raw key.
        assert!(source.derived.lock().expect("cache").is_empty());
    }

    #[test]
    fn a_passphrase_key_is_derived_once_per_salt() {
        let passphrase = b"correct horse battery staple";
        let source = KeySource::new(&VfsKey::Passphrase {
            passphrase,
            iterations: 3,
        });
        let (a, b) = ([7u8; SALT_SIZE], [8u8; SALT_SIZE]);
        let key_a = source.key_for(&a);
        assert_eq!(*key_a, *codec::derive_passphrase_key(passphrase, &a, 3));
        let key_b = source.key_for(&b);
        assert_eq!(*key_b, *codec::derive_passphrase_key(passphrase, &b, 3));
        assert_ne!(*key_a, *key_b, "each salt has its own key");
        // Asked again: the cached key, the same bytes, no new cache entry.
        assert_eq!(*source.key_for(&a), *key_a);
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
            })
            .key_for(&salt)
        };
        assert_ne!(*key(b"secret", 2), *key(b"secret", 3));
        assert_ne!(*key(b"secret", 2), *key(b"Secret", 2));
        // The source keeps its own copy: the caller's buffer may be wiped after new().
        let mut caller = b"secret".to_vec();
        let source = KeySource::new(&VfsKey::Passphrase {
            passphrase: &caller,
            iterations: 2,
        });
        caller.fill(0);
        assert_eq!(*source.key_for(&salt), *key(b"secret", 2));
    }
}
