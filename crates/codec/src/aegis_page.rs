//! SQLite3 Multiple Ciphers' `aegis` page scheme (docs/aegis-format.md §2, from
//! `EncryptPageAegisCipher`/`DecryptPageAegisCipher` in SQLite3MC's `src/cipher_aegis.c`),
//! with any of its six algorithms ([`AegisAlgorithm`]). For page size `P`, the algorithm's
//! nonce length `N` (32 for the AEGIS-256 family, 16 for the AEGIS-128 family) and
//! `n = P - 32 - N`:
//!
//! ```text
//! page k > 1:  [0 .. n) ciphertext | tag [n .. n+32) | nonce [n+32 .. P)
//! page 1:      salt [0..16) | header [16..24) in clear | [24 .. n) ciphertext | tag | nonce
//! ```
//!
//! The nonce is `N` random bytes per write. Each page is encrypted under a one-time key and
//! nonce: the first `K + N` bytes (`K` the algorithm's key length) of the same algorithm's
//! key stream of (database key, page nonce), bytes `0..K` the key and `K..K+N` the nonce,
//! with its last four bytes replaced by the page number (big-endian). So the page number
//! is authenticated through the key, not as associated data (there is none): a page moved
//! to another number fails its tag. The tag is the algorithm's 256-bit tag.

use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use crate::aegis256::{Aegis256, Mode, Region, AEGIS256_NONCE_SIZE, AEGIS256_TAG_SIZE};
use crate::aegisx::{Aegis128L, Aegis128X, Aegis256X, PageAead};
use crate::error::CodecError;
#[cfg(target_arch = "x86_64")]
use crate::scrub::scrub_stack_after_aegis_pass;
use crate::scrub::scrub_stack_after_portable_pass;
#[cfg(target_arch = "x86_64")]
use crate::x86_64::aegis;

/// Bytes reserved at the end of each page of the default algorithm, AEGIS-256: the 32-byte
/// tag, then the 32-byte nonce (`GetReservedAegisCipher`: nonce length +
/// `PAGE_TAG_LEN_AEGIS`).
pub const AEGIS_RESERVE: usize = AEGIS256_TAG_SIZE + AEGIS256_NONCE_SIZE;
/// Where page 1's ciphertext starts (`CIPHER_PAGE1_OFFSET`): the salt, then the SQLite
/// header bytes 16..24 in clear.
pub const AEGIS_PAGE1_OFFSET: usize = 24;
/// The tag length of every algorithm (`PAGE_TAG_LEN_AEGIS`: the 256-bit tag).
const TAG: usize = AEGIS256_TAG_SIZE;
/// The longest nonce (the AEGIS-256 family's).
pub(crate) const MAX_NONCE: usize = AEGIS256_NONCE_SIZE;

/// The AEGIS algorithm of a file (SQLite3MC's `PRAGMA algorithm`, `AEGIS_ALGORITHM_*`). It
/// is not stored in the file: the reader names it, as it names the cipher.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AegisAlgorithm {
    /// `aegis-128l` (id 1): 16-byte key and nonce, 48 reserved bytes.
    Aegis128L,
    /// `aegis-128x2` (id 2): AEGIS-128L in two lanes.
    Aegis128X2,
    /// `aegis-128x4` (id 3): AEGIS-128L in four lanes.
    Aegis128X4,
    /// `aegis-256` (id 4, SQLite3MC's default): 32-byte key and nonce, 64 reserved bytes.
    Aegis256,
    /// `aegis-256x2` (id 5): AEGIS-256 in two lanes.
    Aegis256X2,
    /// `aegis-256x4` (id 6): AEGIS-256 in four lanes.
    Aegis256X4,
}

impl AegisAlgorithm {
    /// All six, in SQLite3MC's order (its ids 1 to 6).
    pub const ALL: [AegisAlgorithm; 6] = [
        AegisAlgorithm::Aegis128L,
        AegisAlgorithm::Aegis128X2,
        AegisAlgorithm::Aegis128X4,
        AegisAlgorithm::Aegis256,
        AegisAlgorithm::Aegis256X2,
        AegisAlgorithm::Aegis256X4,
    ];

    /// Its `PRAGMA algorithm` name (`mcAegisAlgorithmNames`).
    pub const fn name(self) -> &'static str {
        match self {
            AegisAlgorithm::Aegis128L => "aegis-128l",
            AegisAlgorithm::Aegis128X2 => "aegis-128x2",
            AegisAlgorithm::Aegis128X4 => "aegis-128x4",
            AegisAlgorithm::Aegis256 => "aegis-256",
            AegisAlgorithm::Aegis256X2 => "aegis-256x2",
            AegisAlgorithm::Aegis256X4 => "aegis-256x4",
        }
    }

    /// The algorithm a `PRAGMA algorithm` name names (case-insensitively, as
    /// `sqlite3mcAegisAlgorithmToIndex` compares).
    pub fn named(name: &str) -> Option<AegisAlgorithm> {
        Self::ALL
            .into_iter()
            .find(|a| a.name().eq_ignore_ascii_case(name))
    }

    /// Whether it is one of the AEGIS-128 family (16-byte key and nonce).
    pub const fn is_128(self) -> bool {
        matches!(
            self,
            AegisAlgorithm::Aegis128L | AegisAlgorithm::Aegis128X2 | AegisAlgorithm::Aegis128X4
        )
    }

    /// The key length (`KEYLENGTH_AEGIS_128`/`_256`): of a raw key, and of a passphrase's
    /// Argon2id output.
    pub const fn key_size(self) -> usize {
        if self.is_128() {
            16
        } else {
            32
        }
    }

    /// The page nonce's length (`PAGE_NONCE_LEN_AEGIS_128`/`_256`).
    pub const fn nonce_size(self) -> usize {
        if self.is_128() {
            16
        } else {
            32
        }
    }

    /// Bytes reserved at the end of each page: tag and nonce (48 or 64).
    pub const fn reserve(self) -> usize {
        TAG + self.nonce_size()
    }
}

/// The database key of an AEGIS file (raw, or derived from a passphrase by Argon2id; for
/// the AEGIS-128 family its first 16 bytes) and its algorithm, and which pass runs the
/// pages: for AEGIS-256 and AEGIS-128L, x86-64's AES-NI passes (`x86_64::aegis`) where the
/// CPU has it, chosen once per key; else the portable states (`aegis256`, `aegisx`). Both
/// give the same bytes.
pub(crate) struct AegisPageCipher {
    key: Zeroizing<[u8; 32]>,
    algorithm: AegisAlgorithm,
    #[cfg(target_arch = "x86_64")]
    aesni: bool,
}

/// Where a page's encrypted region, tag and nonce are.
struct Regions {
    offset: usize,
    tag_at: usize,
    nonce_at: usize,
}

impl AegisPageCipher {
    pub(crate) fn new(algorithm: AegisAlgorithm, key: &[u8; 32]) -> Box<Self> {
        let mut copy = Zeroizing::new([0u8; 32]);
        copy.copy_from_slice(key);
        Box::new(AegisPageCipher {
            key: copy,
            algorithm,
            #[cfg(target_arch = "x86_64")]
            aesni: matches!(
                algorithm,
                AegisAlgorithm::Aegis256 | AegisAlgorithm::Aegis128L
            ) && aegis::available(),
        })
    }

    /// The same key on the portable pass, for tests on CPUs that run another.
    #[cfg(test)]
    pub(crate) fn portable(algorithm: AegisAlgorithm, key: &[u8; 32]) -> Box<Self> {
        #[cfg_attr(not(target_arch = "x86_64"), allow(unused_mut))]
        let mut cipher = Self::new(algorithm, key);
        #[cfg(target_arch = "x86_64")]
        {
            cipher.aesni = false;
        }
        cipher
    }

    pub(crate) fn algorithm(&self) -> AegisAlgorithm {
        self.algorithm
    }

    /// Bytes reserved at the end of each page.
    pub(crate) fn reserve(&self) -> usize {
        self.algorithm.reserve()
    }

    /// The page nonce's length.
    pub(crate) fn nonce_size(&self) -> usize {
        self.algorithm.nonce_size()
    }

    fn regions(&self, pgno: u32, page_len: usize) -> Regions {
        let tag_at = page_len - self.reserve();
        Regions {
            offset: if pgno == 1 { AEGIS_PAGE1_OFFSET } else { 0 },
            tag_at,
            nonce_at: tag_at + TAG,
        }
    }

    /// The nonce stored in an image's reserve (`nonce_at ..`), in the first
    /// [`nonce_size`](Self::nonce_size) bytes.
    fn stored_nonce(&self, image: &[u8], r: &Regions) -> [u8; MAX_NONCE] {
        let mut nonce = [0u8; MAX_NONCE];
        let n = self.nonce_size();
        nonce[..n].copy_from_slice(&image[r.nonce_at..r.nonce_at + n]);
        nonce
    }

    /// Runs `mode` over `region` as page `pgno` with stored nonce `nonce` (its first
    /// [`nonce_size`](Self::nonce_size) bytes) and returns the tag: the one place that
    /// picks the pass.
    fn pass(
        &self,
        pgno: u32,
        nonce: &[u8; MAX_NONCE],
        region: Region<'_>,
        mode: Mode,
    ) -> [u8; TAG] {
        let n = self.nonce_size();
        let (key, page_nonce) = (&self.key[..], &nonce[..n]);
        let tag = match self.algorithm {
            AegisAlgorithm::Aegis256 => {
                #[cfg(target_arch = "x86_64")]
                if self.aesni {
                    // SAFETY: `aesni` is set only where `aegis::available()` found AES-NI
                    // and SSE2.
                    let tag = unsafe { aegis::page_pass(&self.key, pgno, nonce, region, mode) };
                    scrub_stack_after_aegis_pass();
                    return tag;
                }
                portable_pass::<Aegis256>(key, pgno, page_nonce, region, mode)
            }
            AegisAlgorithm::Aegis128L => {
                #[cfg(target_arch = "x86_64")]
                if self.aesni {
                    // SAFETY: `aesni` is set only where `aegis::available()` found AES-NI
                    // and SSE2.
                    let tag =
                        unsafe { aegis::page_pass_128l(&self.key, pgno, nonce, region, mode) };
                    scrub_stack_after_aegis_pass();
                    return tag;
                }
                portable_pass::<Aegis128L>(key, pgno, page_nonce, region, mode)
            }
            AegisAlgorithm::Aegis128X2 => {
                portable_pass::<Aegis128X<2>>(key, pgno, page_nonce, region, mode)
            }
            AegisAlgorithm::Aegis128X4 => {
                portable_pass::<Aegis128X<4>>(key, pgno, page_nonce, region, mode)
            }
            AegisAlgorithm::Aegis256X2 => {
                portable_pass::<Aegis256X<2>>(key, pgno, page_nonce, region, mode)
            }
            AegisAlgorithm::Aegis256X4 => {
                portable_pass::<Aegis256X<4>>(key, pgno, page_nonce, region, mode)
            }
        };
        scrub_stack_after_portable_pass();
        tag
    }

    /// Encrypts the plaintext `page` of `pgno` in place with the given `nonce` (its first
    /// [`nonce_size`](Self::nonce_size) bytes), writing tag and nonce into its reserve.
    /// Page 1's bytes 0..24 are left as they are (the caller writes the salt).
    pub(crate) fn encrypt_in_place(&self, pgno: u32, page: &mut [u8], nonce: &[u8; MAX_NONCE]) {
        let r = self.regions(pgno, page.len());
        let region = Region::InPlace(&mut page[r.offset..r.tag_at]);
        let tag = self.pass(pgno, nonce, region, Mode::Encrypt);
        page[r.tag_at..r.nonce_at].copy_from_slice(&tag);
        let n = self.nonce_size();
        page[r.nonce_at..].copy_from_slice(&nonce[..n]);
    }

    /// [`encrypt_in_place`](Self::encrypt_in_place) of two pages at once (their AES rounds
    /// interleaved where the AES-NI pass runs): the same bytes as two calls.
    pub(crate) fn encrypt_two_in_place(&self, pages: [(u32, &mut [u8], &[u8; MAX_NONCE]); 2]) {
        #[cfg(target_arch = "x86_64")]
        if self.aesni && self.algorithm == AegisAlgorithm::Aegis256 {
            let [(pgno_a, a, nonce_a), (pgno_b, b, nonce_b)] = pages;
            let (ra, rb) = (self.regions(pgno_a, a.len()), self.regions(pgno_b, b.len()));
            let (region_a, reserve_a) = a.split_at_mut(ra.tag_at);
            let (region_b, reserve_b) = b.split_at_mut(rb.tag_at);
            let inputs = [
                (pgno_a, nonce_a, Region::InPlace(&mut region_a[ra.offset..])),
                (pgno_b, nonce_b, Region::InPlace(&mut region_b[rb.offset..])),
            ];
            // SAFETY: `aesni` is set only where `aegis::available()` found AES-NI and SSE2.
            let tags = unsafe { aegis::page_pass2(&self.key, inputs, Mode::Encrypt) };
            scrub_stack_after_aegis_pass();
            for ((reserve, tag), nonce) in [reserve_a, reserve_b]
                .into_iter()
                .zip(&tags)
                .zip([nonce_a, nonce_b])
            {
                reserve[..TAG].copy_from_slice(tag);
                reserve[TAG..].copy_from_slice(nonce);
            }
            return;
        }
        for (pgno, page, nonce) in pages {
            self.encrypt_in_place(pgno, page, nonce);
        }
    }

    /// Whether the tag stored in `image` matches its ciphertext as page `pgno`. Compares
    /// in constant time; keeps no plaintext.
    pub(crate) fn authenticates(&self, pgno: u32, image: &[u8]) -> bool {
        let r = self.regions(pgno, image.len());
        let nonce = self.stored_nonce(image, &r);
        let region = Region::ReadOnly(&image[r.offset..r.tag_at]);
        let tag = self.pass(pgno, &nonce, region, Mode::Absorb);
        tag.ct_eq(&image[r.tag_at..r.nonce_at]).into()
    }

    /// Decrypts the image of page `pgno` in place if its tag matches; otherwise restores
    /// the image exactly (re-encrypting with the same one-time key and nonce gives the
    /// same bytes) and fails. Page 1's first 24 bytes are left as they are.
    pub(crate) fn decrypt_in_place(&self, pgno: u32, page: &mut [u8]) -> Result<(), CodecError> {
        let r = self.regions(pgno, page.len());
        let nonce = self.stored_nonce(page, &r);
        let (region, reserve) = page.split_at_mut(r.tag_at);
        let tag = self.pass(
            pgno,
            &nonce,
            Region::InPlace(&mut region[r.offset..]),
            Mode::Decrypt,
        );
        if bool::from(tag.ct_eq(&reserve[..TAG])) {
            Ok(())
        } else {
            // Only a refused image pays for the second pass; that the tag did not match is
            // what the caller is told anyway.
            let _ = self.pass(
                pgno,
                &nonce,
                Region::InPlace(&mut region[r.offset..]),
                Mode::Encrypt,
            );
            Err(CodecError::HmacMismatch { pgno })
        }
    }

    /// Decrypts page `pgno` in place without checking its tag: for an image known to be
    /// one this codec wrote (see `PageCodec::image_holds`).
    pub(crate) fn decrypt_unchecked(&self, pgno: u32, page: &mut [u8]) {
        let r = self.regions(pgno, page.len());
        let nonce = self.stored_nonce(page, &r);
        let region = Region::InPlace(&mut page[r.offset..r.tag_at]);
        let _ = self.pass(pgno, &nonce, region, Mode::Decrypt);
    }
}

/// A page pass on the portable state of algorithm `A`: `AegisGenOtk` (the first `K + N`
/// bytes of `A`'s key stream for the database key and the page's nonce, the last four
/// replaced by the page number, big-endian), then `mode` over `region` under that one-time
/// key and nonce; returns the 256-bit tag. Never inlined, so that the states it spills lie
/// in frames below its caller's, which [`scrub_stack_after_portable_pass`] wipes.
#[inline(never)]
fn portable_pass<A: PageAead>(
    key: &[u8],
    pgno: u32,
    nonce: &[u8],
    region: Region<'_>,
    mode: Mode,
) -> [u8; TAG] {
    let mut otk = Zeroizing::new([0u8; 2 * MAX_NONCE]);
    let otk = &mut otk[..A::KEY_SIZE + A::NONCE_SIZE];
    A::init(&key[..A::KEY_SIZE], nonce).stream(otk);
    let end = otk.len();
    otk[end - 4..].copy_from_slice(&pgno.to_be_bytes());
    let mut state = A::init(&otk[..A::KEY_SIZE], &otk[A::KEY_SIZE..]);
    let len = match (region, mode) {
        (Region::InPlace(bytes), Mode::Encrypt) => {
            state.encrypt_in_place(bytes);
            bytes.len()
        }
        (Region::InPlace(bytes), Mode::Decrypt) => {
            state.decrypt_in_place(bytes);
            bytes.len()
        }
        (Region::InPlace(bytes), Mode::Absorb) => {
            state.absorb_ciphertext(bytes);
            bytes.len()
        }
        (Region::ReadOnly(bytes), _) => {
            state.absorb_ciphertext(bytes);
            bytes.len()
        }
    };
    state.tag(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(fill: u8) -> Vec<u8> {
        vec![fill; 4096]
    }

    #[test]
    fn a_page_round_trips_and_is_bound_to_its_number() {
        let cipher = AegisPageCipher::new(AegisAlgorithm::Aegis256, &[9u8; 32]);
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

    /// Every algorithm: its reserve, a round trip on page 1 and page n with regions ending
    /// in partial rate blocks, a page bound to its number and to the algorithm, every byte
    /// of ciphertext, tag and nonce authenticated, a refused image restored.
    #[test]
    fn every_algorithm_round_trips_and_authenticates_its_pages() {
        let key: [u8; 32] = core::array::from_fn(|i| (i as u8).wrapping_mul(29) ^ 0x5c);
        for algorithm in AegisAlgorithm::ALL {
            assert_eq!(AegisAlgorithm::named(algorithm.name()), Some(algorithm));
            let cipher = AegisPageCipher::new(algorithm, &key);
            let reserve = algorithm.reserve();
            assert_eq!(reserve, if algorithm.is_128() { 48 } else { 64 });
            for (pgno, page_size) in [(1u32, 4096usize), (2, 1024), (77, 65536), (3, 512)] {
                let plaintext: Vec<u8> = (0..page_size).map(|i| (i * 11 + 5) as u8).collect();
                let nonce: [u8; MAX_NONCE] = core::array::from_fn(|i| (i as u8) ^ 0xa7);
                let mut image = plaintext.clone();
                cipher.encrypt_in_place(pgno, &mut image, &nonce);
                let end = page_size - reserve;
                let from = if pgno == 1 { AEGIS_PAGE1_OFFSET } else { 0 };
                assert_ne!(image[from..end], plaintext[from..end], "{algorithm:?}");
                assert_eq!(image[end + 32..], nonce[..reserve - 32], "{algorithm:?}");
                assert!(cipher.authenticates(pgno, &image), "{algorithm:?}");
                assert!(!cipher.authenticates(pgno + 1, &image), "{algorithm:?}");
                for other in AegisAlgorithm::ALL {
                    if other != algorithm {
                        let other = AegisPageCipher::new(other, &key);
                        assert!(!other.authenticates(pgno, &image), "{algorithm:?}");
                    }
                }
                for at in [
                    from,
                    from + 1,
                    end - 1,
                    end,
                    end + 31,
                    end + 32,
                    page_size - 1,
                ] {
                    let mut flipped = image.clone();
                    flipped[at] ^= 0x10;
                    assert!(!cipher.authenticates(pgno, &flipped), "{algorithm:?} {at}");
                    let before = flipped.clone();
                    assert!(cipher.decrypt_in_place(pgno, &mut flipped).is_err());
                    assert_eq!(
                        flipped, before,
                        "{algorithm:?}: a refused image is restored"
                    );
                }
                let mut decrypted = image.clone();
                cipher
                    .decrypt_in_place(pgno, &mut decrypted)
                    .expect("authentic");
                assert_eq!(decrypted[from..end], plaintext[from..end], "{algorithm:?}");
                let mut unchecked = image.clone();
                cipher.decrypt_unchecked(pgno, &mut unchecked);
                assert_eq!(unchecked[..end], decrypted[..end]);
                let (mut a, mut b) = (plaintext.clone(), plaintext.clone());
                let nonce_b = [0x33u8; MAX_NONCE];
                cipher.encrypt_two_in_place([(pgno, &mut a, &nonce), (9, &mut b, &nonce_b)]);
                assert_eq!(a, image, "{algorithm:?}: two at once, the same bytes");
                assert!(cipher.authenticates(9, &b));
            }
        }
    }

    /// The one-time key is the algorithm's own key stream (`AegisGenOtk`), computed here
    /// from the draft's primitives and compared with a page SQLite3MC's layout describes:
    /// page 5 of a 1024-byte page size, known key and nonce.
    #[test]
    fn the_one_time_key_is_the_algorithms_key_stream_with_the_page_number() {
        let key: [u8; 32] = core::array::from_fn(|i| i as u8);
        let nonce: [u8; MAX_NONCE] = core::array::from_fn(|i| 0xf0 ^ i as u8);
        let plaintext = vec![0x42u8; 1024];
        let mut image = plaintext.clone();
        let cipher = AegisPageCipher::new(AegisAlgorithm::Aegis128L, &key);
        cipher.encrypt_in_place(5, &mut image, &nonce);
        // By hand: 32 bytes of AEGIS-128L's stream, the last four the page number.
        let mut otk = [0u8; 32];
        Aegis128L::init(&key[..16], &nonce[..16]).stream(&mut otk);
        otk[28..].copy_from_slice(&5u32.to_be_bytes());
        let mut state = Aegis128L::init(&otk[..16], &otk[16..]);
        let mut expected = plaintext[..1024 - 48].to_vec();
        state.encrypt_in_place(&mut expected);
        assert_eq!(image[..1024 - 48], expected[..]);
        assert_eq!(image[1024 - 48..1024 - 16], state.tag(1024 - 48));
        assert_eq!(image[1024 - 16..], nonce[..16]);
    }

    #[test]
    fn every_byte_of_ciphertext_tag_and_nonce_is_authenticated() {
        let cipher = AegisPageCipher::new(AegisAlgorithm::Aegis256, &[1u8; 32]);
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

    /// The AES-NI passes (AEGIS-256's and AEGIS-128L's, where this CPU runs them) and the
    /// portable states give the same images, tags and plaintext: pages 1 (a region ending
    /// in a partial block) and n, several page sizes, one and two pages at once, refusals
    /// restored byte for byte.
    #[test]
    fn every_pass_gives_the_same_bytes() {
        for algorithm in [AegisAlgorithm::Aegis256, AegisAlgorithm::Aegis128L] {
            same_bytes_on_every_pass(algorithm);
        }
    }

    fn same_bytes_on_every_pass(algorithm: AegisAlgorithm) {
        let key: [u8; 32] = core::array::from_fn(|i| 0x6b ^ (i as u8));
        let (fast, portable) = (
            AegisPageCipher::new(algorithm, &key),
            AegisPageCipher::portable(algorithm, &key),
        );
        #[cfg(target_arch = "x86_64")]
        if !fast.aesni {
            eprintln!("this CPU lacks AES-NI: only the portable {algorithm:?} pass is tested here");
        }
        for page_size in [512usize, 1024, 4096, 65536] {
            for pgno in [1u32, 2, 0x0102_0304] {
                let plaintext: Vec<u8> = (0..page_size).map(|i| (i * 7 + 3) as u8).collect();
                let nonce: [u8; 32] = core::array::from_fn(|i| (i as u8) ^ (pgno as u8));
                let (mut a, mut b) = (plaintext.clone(), plaintext.clone());
                fast.encrypt_in_place(pgno, &mut a, &nonce);
                portable.encrypt_in_place(pgno, &mut b, &nonce);
                assert_eq!(a, b, "{algorithm:?}, page size {page_size}, page {pgno}");
                for cipher in [&fast, &portable] {
                    assert!(cipher.authenticates(pgno, &a));
                    assert!(!cipher.authenticates(pgno ^ 1, &a));
                    let mut refused = a.clone();
                    assert!(cipher.decrypt_in_place(pgno ^ 1, &mut refused).is_err());
                    assert_eq!(refused, a, "a refused image is restored");
                    let mut decrypted = a.clone();
                    cipher
                        .decrypt_in_place(pgno, &mut decrypted)
                        .expect("authentic");
                    let end = page_size - algorithm.reserve();
                    let from = if pgno == 1 { AEGIS_PAGE1_OFFSET } else { 0 };
                    assert_eq!(decrypted[from..end], plaintext[from..end]);
                    let mut unchecked = a.clone();
                    cipher.decrypt_unchecked(pgno, &mut unchecked);
                    assert_eq!(unchecked[from..end], plaintext[from..end]);
                }
                // Two at once: page 1 beside page n, the same bytes as one by one.
                for cipher in [&fast, &portable] {
                    let other: Vec<u8> = plaintext.iter().map(|b| b ^ 0x55).collect();
                    let other_nonce = [0xeeu8; 32];
                    let (mut x, mut y) = (plaintext.clone(), other.clone());
                    cipher
                        .encrypt_two_in_place([(pgno, &mut x, &nonce), (9, &mut y, &other_nonce)]);
                    assert_eq!(x, a);
                    let mut z = other.clone();
                    portable.encrypt_in_place(9, &mut z, &other_nonce);
                    assert_eq!(y, z);
                }
            }
        }
    }

    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    use crate::stack_probe::{add_words, secrets_left, stack_left_by};

    /// The database key of `algorithm` (its first [`key_size`](AegisAlgorithm::key_size)
    /// bytes), key XOR nonce, and page `pgno`'s one-time key and nonce and their XOR, as
    /// 8-byte words to look for on the stack: AEGIS' update is invertible, so any of them
    /// gives the key back.
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn key_material(
        algorithm: AegisAlgorithm,
        key: &[u8; 32],
        pgno: u32,
        nonce: &[u8; MAX_NONCE],
    ) -> Vec<(String, Vec<u8>)> {
        let (k, n) = (algorithm.key_size(), algorithm.nonce_size());
        let mut secrets = Vec::new();
        add_words(&mut secrets, "the key", &key[..k]);
        let xored: Vec<u8> = key[..k]
            .iter()
            .zip(&nonce[..n])
            .map(|(a, b)| a ^ b)
            .collect();
        add_words(&mut secrets, "key ^ nonce", &xored);
        let mut otk = [0u8; 2 * MAX_NONCE];
        let otk = &mut otk[..k + n];
        match algorithm {
            AegisAlgorithm::Aegis128L => Aegis128L::init(&key[..k], &nonce[..n]).stream(otk),
            AegisAlgorithm::Aegis128X2 => Aegis128X::<2>::init(&key[..k], &nonce[..n]).stream(otk),
            AegisAlgorithm::Aegis128X4 => Aegis128X::<4>::init(&key[..k], &nonce[..n]).stream(otk),
            AegisAlgorithm::Aegis256 => Aegis256::init(&key[..k], &nonce[..n]).stream(otk),
            AegisAlgorithm::Aegis256X2 => Aegis256X::<2>::init(&key[..k], &nonce[..n]).stream(otk),
            AegisAlgorithm::Aegis256X4 => Aegis256X::<4>::init(&key[..k], &nonce[..n]).stream(otk),
        }
        let end = otk.len();
        otk[end - 4..].copy_from_slice(&pgno.to_be_bytes());
        add_words(
            &mut secrets,
            &format!("one-time key and nonce of page {pgno}"),
            otk,
        );
        let xored: Vec<u8> = otk[..k].iter().zip(&otk[k..]).map(|(a, b)| a ^ b).collect();
        add_words(
            &mut secrets,
            &format!("one-time key ^ nonce of page {pgno}"),
            &xored,
        );
        secrets
    }

    /// The portable passes (the only ones on aarch64, whose `aes` crate runs the ARMv8 AES
    /// instructions) leave none of [`key_material`] on the stack either: AEGIS-256, one of
    /// its X variants, and AEGIS-128L, each encrypting, decrypting, and refusing a page.
    /// (Release builds only show what the optimiser spills: CI runs `cargo test --release
    /// --lib on_the_stack`, on aarch64 under qemu too.)
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    #[cfg_attr(
        cipherlite_asan,
        ignore = "AddressSanitizer lays frames out its own way (redzones, a fake stack)"
    )]
    fn portable_aegis_passes_leave_no_key_material_on_the_stack() {
        let key: [u8; 32] = core::array::from_fn(|i| (i as u8).wrapping_mul(53).wrapping_add(0x1d));
        let nonce = [0x6bu8; MAX_NONCE];
        for algorithm in [
            AegisAlgorithm::Aegis256,
            AegisAlgorithm::Aegis256X2,
            AegisAlgorithm::Aegis128L,
        ] {
            let cipher = AegisPageCipher::portable(algorithm, &key);
            let secrets = key_material(algorithm, &key, 7, &nonce);
            let left = |stack: &[u8]| secrets_left(&secrets, stack);
            let mut image = page(0x11);
            let stack = stack_left_by(|| {
                cipher.encrypt_in_place(7, &mut image, &nonce);
                core::hint::black_box(&image);
            });
            assert_eq!(
                left(&stack),
                Vec::<String>::new(),
                "{algorithm:?}: one page encrypted"
            );
            let mut copy = image.clone();
            let stack = stack_left_by(|| {
                core::hint::black_box(cipher.decrypt_in_place(7, &mut copy).is_ok());
            });
            assert_eq!(
                left(&stack),
                Vec::<String>::new(),
                "{algorithm:?}: one page decrypted"
            );
            let stack = stack_left_by(|| {
                core::hint::black_box(cipher.authenticates(7, &image));
            });
            assert_eq!(
                left(&stack),
                Vec::<String>::new(),
                "{algorithm:?}: one page authenticated"
            );
            image[100] ^= 1;
            let stack = stack_left_by(|| {
                core::hint::black_box(cipher.decrypt_in_place(7, &mut image).is_ok());
            });
            assert_eq!(
                left(&stack),
                Vec::<String>::new(),
                "{algorithm:?}: one page refused"
            );
        }
    }

    /// The AES-NI passes leave no copy of the database key, of the page's one-time key and
    /// nonce, or of the first state blocks derived from either (key XOR nonce) on the
    /// stack: AEGIS' update is invertible, so any of them gives the key back, and the stack
    /// outlives the call. (Release builds only show what the optimiser spills: CI runs
    /// `cargo test --release --lib on_the_stack`.)
    #[cfg(target_arch = "x86_64")]
    #[test]
    #[cfg_attr(
        cipherlite_asan,
        ignore = "AddressSanitizer lays frames out its own way (redzones, a fake stack)"
    )]
    fn aegis_page_passes_leave_no_key_material_on_the_stack() {
        let key: [u8; 32] = core::array::from_fn(|i| (i as u8).wrapping_mul(53).wrapping_add(0x1d));
        let cipher = AegisPageCipher::new(AegisAlgorithm::Aegis256, &key);
        if !cipher.aesni {
            eprintln!("this CPU lacks AES-NI: the AES-NI AEGIS pass is not tested here");
            return;
        }
        let nonces = [[0x6bu8; 32], [0x2cu8; 32]];
        let mut secrets: Vec<(String, Vec<u8>)> = Vec::new();
        let mut add = |name: String, bytes: &[u8]| add_words(&mut secrets, &name, bytes);
        add("the key".into(), &key);
        for (n, (pgno, nonce)) in [(7u32, &nonces[0]), (8, &nonces[1])]
            .into_iter()
            .enumerate()
        {
            let xored: Vec<u8> = key.iter().zip(nonce).map(|(k, n)| k ^ n).collect();
            add(format!("key ^ nonce {n}"), &xored);
            let mut otk = [0u8; 64];
            Aegis256::new(&key, nonce).stream(&mut otk);
            otk[60..].copy_from_slice(&pgno.to_be_bytes());
            add(format!("one-time key and nonce of page {pgno}"), &otk);
            let xored: Vec<u8> = otk[..32]
                .iter()
                .zip(&otk[32..])
                .map(|(k, n)| k ^ n)
                .collect();
            add(format!("one-time key ^ nonce of page {pgno}"), &xored);
        }
        let left = |stack: &[u8]| secrets_left(&secrets, stack);

        let mut image = page(0x11);
        let stack = stack_left_by(|| {
            cipher.encrypt_in_place(7, &mut image, &nonces[0]);
            core::hint::black_box(&image);
        });
        assert_eq!(left(&stack), Vec::<String>::new(), "one page encrypted");
        let stack = stack_left_by(|| {
            core::hint::black_box(cipher.decrypt_in_place(7, &mut image).is_ok());
        });
        assert_eq!(left(&stack), Vec::<String>::new(), "one page decrypted");
        let (mut a, mut b) = (page(0x22), page(0x33));
        let stack = stack_left_by(|| {
            cipher.encrypt_two_in_place([(7, &mut a, &nonces[0]), (8, &mut b, &nonces[1])]);
            core::hint::black_box((&a, &b));
        });
        assert_eq!(left(&stack), Vec::<String>::new(), "two pages encrypted");
    }

    /// The same for AEGIS-128L's AES-NI pass: its 16-byte key, key XOR nonce, and the
    /// page's 32-byte one-time key and nonce (and their XOR).
    #[cfg(target_arch = "x86_64")]
    #[test]
    #[cfg_attr(
        cipherlite_asan,
        ignore = "AddressSanitizer lays frames out its own way (redzones, a fake stack)"
    )]
    fn aegis128l_page_passes_leave_no_key_material_on_the_stack() {
        let mut key = [0u8; 32];
        for (i, byte) in key[..16].iter_mut().enumerate() {
            *byte = (i as u8).wrapping_mul(37).wrapping_add(0x51);
        }
        let cipher = AegisPageCipher::new(AegisAlgorithm::Aegis128L, &key);
        if !cipher.aesni {
            eprintln!("this CPU lacks AES-NI: the AES-NI AEGIS-128L pass is not tested here");
            return;
        }
        let nonce = [0x4eu8; MAX_NONCE];
        let mut secrets: Vec<(String, Vec<u8>)> = Vec::new();
        let mut add = |name: &str, bytes: &[u8]| add_words(&mut secrets, name, bytes);
        add("the key", &key[..16]);
        let xored: Vec<u8> = key[..16]
            .iter()
            .zip(&nonce[..16])
            .map(|(k, n)| k ^ n)
            .collect();
        add("key ^ nonce", &xored);
        let mut otk = [0u8; 32];
        Aegis128L::init(&key[..16], &nonce[..16]).stream(&mut otk);
        otk[28..].copy_from_slice(&7u32.to_be_bytes());
        add("one-time key and nonce", &otk);
        let xored: Vec<u8> = otk[..16]
            .iter()
            .zip(&otk[16..])
            .map(|(k, n)| k ^ n)
            .collect();
        add("one-time key ^ nonce", &xored);
        let left = |stack: &[u8]| secrets_left(&secrets, stack);
        let mut image = page(0x11);
        let stack = stack_left_by(|| {
            cipher.encrypt_in_place(7, &mut image, &nonce);
            core::hint::black_box(&image);
        });
        assert_eq!(left(&stack), Vec::<String>::new(), "one page encrypted");
        let stack = stack_left_by(|| {
            core::hint::black_box(cipher.decrypt_in_place(7, &mut image).is_ok());
        });
        assert_eq!(left(&stack), Vec::<String>::new(), "one page decrypted");
    }
}
