//! SQLite3 Multiple Ciphers' `aegis` page scheme with its default algorithm, AEGIS-256
//! (docs/aegis-format.md §2, from `EncryptPageAegisCipher`/`DecryptPageAegisCipher` in
//! SQLite3MC's `src/cipher_aegis.c`). For page size `P` and `n = P - 64`:
//!
//! ```text
//! page k > 1:  [0 .. n) AEGIS-256 ciphertext | tag [n .. n+32) | nonce [n+32 .. P)
//! page 1:      salt [0..16) | header [16..24) in clear | [24 .. n) ciphertext | tag | nonce
//! ```
//!
//! The nonce is 32 random bytes per write. Each page is encrypted under a one-time key and
//! nonce: the first 64 bytes of the AEGIS-256 key stream of (database key, page nonce),
//! bytes 0..32 the key and 32..64 the nonce, with its last four bytes replaced by the page
//! number (big-endian). So the page number is authenticated through the key, not as
//! associated data (there is none): a page moved to another number fails its tag.

use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::aegis256::{Aegis256, AEGIS256_KEY_SIZE, AEGIS256_NONCE_SIZE, AEGIS256_TAG_SIZE};
use crate::error::CodecError;

/// Bytes reserved at the end of each page: the 32-byte tag, then the 32-byte nonce
/// (`GetReservedAegisCipher`: nonce length + `PAGE_TAG_LEN_AEGIS`).
pub const AEGIS_RESERVE: usize = AEGIS256_TAG_SIZE + AEGIS256_NONCE_SIZE;
/// Where page 1's ciphertext starts (`CIPHER_PAGE1_OFFSET`): the salt, then the SQLite
/// header bytes 16..24 in clear.
pub const AEGIS_PAGE1_OFFSET: usize = 24;

/// The database key of an AEGIS-256 file (raw, or derived from a passphrase by Argon2id).
pub(crate) struct AegisPageCipher {
    key: Zeroizing<[u8; AEGIS256_KEY_SIZE]>,
}

/// Where a page's encrypted region, tag and nonce are.
struct Regions {
    offset: usize,
    tag_at: usize,
    nonce_at: usize,
}

fn regions(pgno: u32, page_len: usize) -> Regions {
    let tag_at = page_len - AEGIS_RESERVE;
    Regions {
        offset: if pgno == 1 { AEGIS_PAGE1_OFFSET } else { 0 },
        tag_at,
        nonce_at: tag_at + AEGIS256_TAG_SIZE,
    }
}

impl AegisPageCipher {
    pub(crate) fn new(key: &[u8; AEGIS256_KEY_SIZE]) -> Box<Self> {
        let mut copy = Zeroizing::new([0u8; AEGIS256_KEY_SIZE]);
        copy.copy_from_slice(key);
        Box::new(AegisPageCipher { key: copy })
    }

    /// The AEGIS state for page `pgno` whose stored nonce is `nonce` (`AegisGenOtk`).
    fn page_state(&self, pgno: u32, nonce: &[u8]) -> Aegis256 {
        let mut page_nonce = Zeroizing::new([0u8; AEGIS256_NONCE_SIZE]);
        page_nonce.copy_from_slice(nonce);
        let mut otk = Zeroizing::new([0u8; AEGIS256_KEY_SIZE + AEGIS256_NONCE_SIZE]);
        Aegis256::new(&self.key, &page_nonce).stream(&mut otk[..]);
        otk[AEGIS256_KEY_SIZE + AEGIS256_NONCE_SIZE - 4..].copy_from_slice(&pgno.to_be_bytes());
        let mut key = Zeroizing::new([0u8; AEGIS256_KEY_SIZE]);
        key.copy_from_slice(&otk[..AEGIS256_KEY_SIZE]);
        let mut nonce = Zeroizing::new([0u8; AEGIS256_NONCE_SIZE]);
        nonce.copy_from_slice(&otk[AEGIS256_KEY_SIZE..]);
        Aegis256::new(&key, &nonce)
    }

    /// Encrypts the plaintext `page` of `pgno` in place with the given `nonce`, writing
    /// tag and nonce into its reserve. Page 1's bytes 0..24 are left as they are (the
    /// caller writes the salt).
    pub(crate) fn encrypt_in_place(
        &self,
        pgno: u32,
        page: &mut [u8],
        nonce: &[u8; AEGIS256_NONCE_SIZE],
    ) {
        let r = regions(pgno, page.len());
        let mut state = self.page_state(pgno, nonce);
        state.encrypt_in_place(&mut page[r.offset..r.tag_at]);
        let tag = state.finalize(0, r.tag_at - r.offset);
        page[r.tag_at..r.nonce_at].copy_from_slice(&tag);
        page[r.nonce_at..].copy_from_slice(nonce);
    }

    /// Whether the tag stored in `image` matches its ciphertext as page `pgno`. Compares
    /// in constant time; keeps no plaintext.
    pub(crate) fn authenticates(&self, pgno: u32, image: &[u8]) -> bool {
        let r = regions(pgno, image.len());
        let mut state = self.page_state(pgno, &image[r.nonce_at..]);
        state.absorb_ciphertext(&image[r.offset..r.tag_at]);
        let tag = state.finalize(0, r.tag_at - r.offset);
        tag.ct_eq(&image[r.tag_at..r.nonce_at]).into()
    }

    /// Decrypts the image of page `pgno` in place if its tag matches; otherwise restores
    /// the image exactly (re-encrypting with the same one-time key and nonce gives the
    /// same bytes) and fails. Page 1's first 24 bytes are left as they are.
    pub(crate) fn decrypt_in_place(&self, pgno: u32, page: &mut [u8]) -> Result<(), CodecError> {
        let r = regions(pgno, page.len());
        let nonce = &page[r.nonce_at..];
        let (mut state, mut again) = (self.page_state(pgno, nonce), self.page_state(pgno, nonce));
        state.decrypt_in_place(&mut page[r.offset..r.tag_at]);
        let tag = state.finalize(0, r.tag_at - r.offset);
        if bool::from(tag.ct_eq(&page[r.tag_at..r.nonce_at])) {
            Ok(())
        } else {
            again.encrypt_in_place(&mut page[r.offset..r.tag_at]);
            Err(CodecError::HmacMismatch { pgno })
        }
    }

    /// Decrypts page `pgno` in place without checking its tag: for an image known to be
    /// one this codec wrote (see `PageCodec::image_holds`).
    pub(crate) fn decrypt_unchecked(&self, pgno: u32, page: &mut [u8]) {
        let r = regions(pgno, page.len());
        let mut state = self.page_state(pgno, &page[r.nonce_at..]);
        state.decrypt_in_place(&mut page[r.offset..r.tag_at]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(fill: u8) -> Vec<u8> {
        vec![fill; 4096]
    }

    #[test]
    fn a_page_round_trips_and_is_bound_to_its_number() {
        let cipher = AegisPageCipher::new(&[9u8; 32]);
        let plaintext = page(0x5a);
        let mut image = plaintext.clone();
        cipher.encrypt_in_place(7, &mut image, &[3u8; 32]);
        assert_ne!(image[..4032], plaintext[..4032]);
        assert_eq!(image[4064..], [3u8; 32]);
        assert!(cipher.authenticates(7, &image));
        assert!(!cipher.authenticates(8, &image));

        let written = image.clone();
        assert_eq!(
            cipher.decrypt_in_place(8, &mut image),
            Err(CodecError::HmacMismatch { pgno: 8 })
        );
        assert_eq!(image, written, "a refused image is left as it was");
        cipher.decrypt_in_place(7, &mut image).expect("decrypts");
        assert_eq!(image[..4032], plaintext[..4032]);
    }

    #[test]
    fn every_byte_of_ciphertext_tag_and_nonce_is_authenticated() {
        let cipher = AegisPageCipher::new(&[1u8; 32]);
        let mut image = page(0x11);
        cipher.encrypt_in_place(1, &mut image, &[4u8; 32]);
        for at in [24, 100, 4031, 4032, 4063, 4064, 4095] {
            let mut flipped = image.clone();
            flipped[at] ^= 1;
            assert!(!cipher.authenticates(1, &flipped), "byte {at}");
        }
        // Page 1's bytes 0..24 are outside the tag (salt and clear header; SQLite3MC's
        // layout): PageCodec checks them against its own salt and configuration.
        let mut header = image.clone();
        header[3] ^= 1;
        assert!(cipher.authenticates(1, &header));
    }
}
