//! What a [`PageCodec`](crate::PageCodec) keeps of its key, and which pass runs its page
//! work: one provider chosen per key from the CPU, as SQLCipher chooses one crypto provider
//! (`sqlcipher_provider`). The portable pass, on every CPU, is RustCrypto's AES in
//! [`cbc`](crate::cbc), then the `hmac` crate; on x86-64 with AES-NI, AVX and BMI2 the
//! stitched pass runs instead (`x86_64::stitched`: CBC and HMAC in one pass, its own
//! SHA-512, several pages at once). Both give the same bytes. The codec calls
//! [`PageCipher`] and never asks which one runs.
//!
//! [`PageCipher`] holds the expanded AES key schedule (decryption, on every CPU, is the
//! `aes` crate's) and the HMAC state keyed with `hmac_key` (inner and outer pads already
//! absorbed, so a page HMAC needs no key setup). The raw key and the derived HMAC key are
//! not kept; temporaries holding them are wiped before the constructor returns. The key
//! schedule and the keyed HMAC state are wiped on drop when the RustCrypto crates'
//! `zeroize` features are on (`aes/zeroize`, `hmac/zeroize`, `sha2/zeroize`); without them
//! the allocation is freed without being overwritten. With the stitched pass it also holds
//! the same keys in that pass's form (`StitchedKeys`: round keys and the two pad states),
//! wiped on drop by its own `Drop`. The first two AES-256 round keys are the raw key
//! itself.

use aes::cipher::KeyInit;
use aes::Aes256;
use hmac::Mac;

use crate::cbc::{cbc_encrypt_in_place, cts_encrypt_in_place};
use crate::error::CodecError;
use crate::kdf::{derive_hmac_key, keyed_hmac, HmacSha512};
use crate::scrub::scrub_stack_after_portable_pass;
#[cfg(target_arch = "x86_64")]
use crate::x86_64::{sha512x4, stitched::StitchedKeys};
use crate::{HMAC_SIZE, IV_SIZE, KEY_SIZE, SALT_SIZE};

/// The key material of a [`PageCodec`](crate::PageCodec) and the pass its page writes and
/// HMACs take. Always boxed, so it stays in one place for its lifetime and moving the
/// codec does not copy it.
pub(crate) struct PageCipher {
    /// The AES-256 key schedule: page decryption, and encryption on the portable pass.
    pub(crate) cipher: Aes256,
    /// The keyed HMAC-SHA512 state of the portable pass.
    mac: HmacSha512,
    pass: Pass,
}

/// Which pass encrypts and authenticates pages.
// The stitched keys stay inline: the whole `PageCipher` is boxed already, and a box of
// their own would add a pointer to follow on every page.
#[allow(clippy::large_enum_variant)]
enum Pass {
    /// `cbc`, then the `hmac` crate: every CPU.
    Portable,
    /// CBC and HMAC in one pass, and pages four at a time (x86-64 with AES-NI, AVX and
    /// BMI2; the lanes also need AVX2).
    #[cfg(target_arch = "x86_64")]
    Stitched(StitchedKeys),
}

impl Pass {
    /// The fastest pass this CPU runs, for AES key `key` and HMAC key `hmac_key`.
    fn for_this_cpu(key: &[u8; KEY_SIZE], hmac_key: &[u8]) -> Pass {
        #[cfg(target_arch = "x86_64")]
        if let Some(stitched) = StitchedKeys::new(key, hmac_key) {
            return Pass::Stitched(stitched);
        }
        let _ = (key, hmac_key);
        Pass::Portable
    }
}

impl PageCipher {
    /// Expands `key` for AES-256 and keys the HMAC with the key derived from `key` and
    /// `salt`. The derived HMAC key is wiped before returning.
    pub(crate) fn new(key: &[u8; KEY_SIZE], salt: &[u8; SALT_SIZE]) -> Box<Self> {
        let hmac_key = derive_hmac_key(key, salt);
        Box::new(PageCipher {
            cipher: Aes256::new(key.into()),
            mac: keyed_hmac(&hmac_key[..]),
            pass: Pass::for_this_cpu(key, &hmac_key[..]),
        })
    }

    /// The same keys on the portable pass, for tests on CPUs that run another.
    #[cfg(test)]
    pub(crate) fn portable(key: &[u8; KEY_SIZE], salt: &[u8; SALT_SIZE]) -> Box<Self> {
        let mut material = Self::new(key, salt);
        material.pass = Pass::Portable;
        material
    }

    /// Whether page writes take the stitched pass.
    #[cfg(test)]
    pub(crate) fn is_stitched(&self) -> bool {
        !matches!(self.pass, Pass::Portable)
    }

    /// AES-256-CBC-encrypts `region` in place under `iv` and returns the page HMAC,
    /// HMAC-SHA512(ciphertext ‖ `iv` ‖ `pgno` as LE32). The same bytes on either pass.
    pub(crate) fn encrypt_and_mac(
        &self,
        iv: &[u8; IV_SIZE],
        region: &mut [u8],
        pgno: u32,
    ) -> Result<[u8; HMAC_SIZE], CodecError> {
        match &self.pass {
            Pass::Portable => {
                cbc_encrypt_in_place(&self.cipher, iv, region)?;
                Ok(self.portable_mac(&[region, iv], pgno))
            }
            #[cfg(target_arch = "x86_64")]
            Pass::Stitched(stitched) => stitched.encrypt_and_mac(iv, region, pgno),
        }
    }

    /// [`encrypt_and_mac`](Self::encrypt_and_mac) for a region that may end in a partial
    /// block, which CBC with ciphertext stealing encrypts (page 1 of SQLite3 Multiple
    /// Ciphers' layout); `region` must be at least 16 bytes long.
    pub(crate) fn encrypt_cts_and_mac(
        &self,
        iv: &[u8; IV_SIZE],
        region: &mut [u8],
        pgno: u32,
    ) -> Result<[u8; HMAC_SIZE], CodecError> {
        match &self.pass {
            Pass::Portable => {
                cts_encrypt_in_place(&self.cipher, iv, region)?;
                Ok(self.portable_mac(&[region, iv], pgno))
            }
            #[cfg(target_arch = "x86_64")]
            Pass::Stitched(stitched) => stitched.encrypt_cts_and_mac(iv, region, pgno),
        }
    }

    /// HMAC-SHA512(`parts` concatenated ‖ `pgno` as LE32): a page's tag. The stitched
    /// pass's own SHA-512 computes the tag of one part (the same tag, faster).
    pub(crate) fn page_mac(&self, parts: &[&[u8]], pgno: u32) -> [u8; HMAC_SIZE] {
        match (&self.pass, parts) {
            #[cfg(target_arch = "x86_64")]
            (Pass::Stitched(stitched), [data]) => stitched.mac(data, pgno),
            _ => self.portable_mac(parts, pgno),
        }
    }

    /// Four page tags at once ([`page_mac`](Self::page_mac) of each), where the pass can
    /// (the stitched one, with AVX2); `None` elsewhere.
    pub(crate) fn page_mac4(
        &self,
        messages: [&[u8]; 4],
        pgnos: [u32; 4],
    ) -> Option<[[u8; HMAC_SIZE]; 4]> {
        match &self.pass {
            Pass::Portable => {
                let _ = (messages, pgnos);
                None
            }
            #[cfg(target_arch = "x86_64")]
            Pass::Stitched(stitched) => stitched.mac4(messages, pgnos),
        }
    }

    /// Encrypts two to four pages at once and returns their tags (see
    /// `StitchedKeys::encrypt_and_mac_lanes`: each message is a region then its IV, the
    /// region encrypted in place); `None`, with nothing encrypted, where the pass can't.
    pub(crate) fn encrypt_and_mac_lanes(
        &self,
        messages: &mut [&mut [u8]],
        pgnos: &[u32],
    ) -> Option<[[u8; HMAC_SIZE]; 4]> {
        match &self.pass {
            Pass::Portable => {
                let _ = (messages, pgnos);
                None
            }
            #[cfg(target_arch = "x86_64")]
            Pass::Stitched(stitched) => stitched.encrypt_and_mac_lanes(messages, pgnos),
        }
    }

    /// The `hmac` crate's HMAC-SHA512(`parts` concatenated ‖ `pgno` as LE32), then the
    /// stack it used wiped: the copy of the keyed state and the SHA-512 rounds' spills.
    fn portable_mac(&self, parts: &[&[u8]], pgno: u32) -> [u8; HMAC_SIZE] {
        let tag = self.portable_mac_pass(parts, pgno);
        scrub_stack_after_portable_pass();
        tag
    }

    /// [`portable_mac`](Self::portable_mac) before the wipe: never inlined, so that its
    /// frames lie below the caller's.
    #[inline(never)]
    fn portable_mac_pass(&self, parts: &[&[u8]], pgno: u32) -> [u8; HMAC_SIZE] {
        let mut mac = self.mac.clone();
        for part in parts {
            mac.update(part);
        }
        mac.update(&pgno.to_le_bytes());
        mac.finalize().into_bytes().into()
    }
}

impl core::fmt::Debug for PageCipher {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("PageCipher { <redacted> }")
    }
}

/// Whether [`PageCodec::encrypt_pages_in_place`](crate::PageCodec::encrypt_pages_in_place)
/// of `count` pages is faster together than one at a time on this CPU (a property of the
/// CPU alone). The pages' CBC chains interleave in the AES unit, and their HMACs share the
/// four lanes of the vector unit: with AVX-512VL's rotates and three-way XOR the lanes pay
/// off from two pages, with AVX2 alone (more instructions a round) from three. The
/// thresholds come from `cargo bench --bench codec` ("encrypt N pages at once").
pub fn pages_at_once_pay_off(count: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        let from = if sha512x4::has_avx512vl() { 2 } else { 3 };
        count >= from && sha512x4::available()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = count;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_material_debug_is_redacted() {
        let key = [0xa5u8; KEY_SIZE];
        let material = PageCipher::new(&key, &[0u8; SALT_SIZE]);
        let text = format!("{material:?}");
        assert_eq!(text, "PageCipher { <redacted> }");
    }
}
