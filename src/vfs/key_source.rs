//! [`KeySource`]: what a keyed VFS encrypts with — a raw 32-byte key, or a passphrase whose
//! key SQLCipher 4 derives per file from the file's salt (PBKDF2-HMAC-SHA512, 256,000
//! iterations by default). Derived keys are cached by salt, so a passphrase costs one
//! derivation per database file, not per open of its journal or WAL. All copies are in
//! wiped heap allocations.

use crate::codec::{self, KEY_SIZE, SALT_SIZE};
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
    derived: Mutex<Vec<Derived>>,
}

impl KeySource {
    pub fn new(key: &VfsKey<'_>) -> KeySource {
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
            derived: Mutex::new(Vec::new()),
        }
    }

    /// The AES key for a file whose salt is `salt`.
    pub fn key_for(&self, salt: &[u8; SALT_SIZE]) -> Zeroizing<[u8; KEY_SIZE]> {
        match &self.kind {
            Kind::Raw(key) => key.clone(),
            Kind::Passphrase(passphrase, iterations) => {
                if let Ok(cache) = self.derived.lock() {
                    if let Some((_, key)) = cache.iter().find(|(s, _)| s == salt) {
                        return key.clone();
                    }
                }
                let key = codec::derive_passphrase_key(passphrase, salt, *iterations);
                if let Ok(mut cache) = self.derived.lock() {
                    cache.push((*salt, key.clone()));
                }
                key
            }
        }
    }
}
