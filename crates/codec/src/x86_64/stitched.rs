//! AES-256-CBC encryption and HMAC-SHA512 of a page in one pass ("stitched"), on x86-64
//! CPUs with AES-NI, AVX and BMI2: the x86-64 provider of the page passes, with the same
//! bytes as the portable path (`cbc`, then the `hmac` crate). Its SHA-512 (the message
//! schedule two words at a time in the vector unit, the rounds on the integer ALUs) also
//! checks pages on reads ([`StitchedKeys::mac`]), alone or four at a time in the AVX2 lanes
//! ([`StitchedKeys::mac4`]), and encrypts two to four pages at once
//! ([`StitchedKeys::encrypt_and_mac_lanes`], `lanes`).
//!
//! Why: writing a page costs a CBC encryption and an HMAC over its ciphertext. CBC
//! encryption is serial — each block waits for the previous one's 14 AES rounds, so the
//! AES unit is idle most of the time — and SHA-512 runs on the integer ALUs, which CBC
//! leaves idle. One after the other they take their sum; together, about the longer of
//! the two: a single pass over the page instead of two. While SHA-512 compresses 128-byte
//! chunk `k − 1`, which is ciphertext already, the same loop encrypts chunk `k`'s 8 AES
//! blocks, one AES round or two per SHA round (see `sha512::compress`). OpenSSL's TLS
//! ciphers (`aesni_cbc_sha256_enc`) do the same.
//!
//! Constant time: AES-NI and the SHA-512 rounds have no data-dependent branch or memory
//! index; the only branches and selects depend on the region's length, which is public.
//!
//! The HMAC is the textbook construction over precomputed pad states (`hmac::PadStates`).
//! Tests check every region length a page size or page-1 layout gives against the two-pass
//! path.
//!
//! Page 1 of SQLite3 Multiple Ciphers' layout ends in a partial block (CBC with ciphertext
//! stealing): the same pass, with the stolen block encrypted before the last chunk is
//! hashed, so that page too takes one pass, as any other does.

use core::arch::x86_64::{_mm_loadu_si128, _mm_setzero_si128, _mm_storeu_si128};

use zeroize::Zeroize;

use super::aesni::{expand_key, CbcChain, AES_BLOCK, ROUND_KEYS};
use super::hmac::{finish_mac, mac4_pass, mac_pass, PadStates};
use super::lanes::{encrypt_and_mac_pass, lane_region_blocks};
use super::sha512::{compress, load_words, BLOCKS_PER_CHUNK, SHA_BLOCK};
use super::sha512x4;
use crate::error::CodecError;
use crate::scrub::scrub_stack_after_page_pass;
use crate::{HMAC_SIZE, IV_SIZE, KEY_SIZE};

cpufeatures::new!(stitch_cpuid, "aes", "sse2", "ssse3", "avx", "bmi1", "bmi2");

/// Whether this CPU runs the stitched pass (AES-NI, AVX, BMI1 and BMI2).
pub(crate) fn available() -> bool {
    stitch_cpuid::get()
}

/// What the stitched pass keeps of the keys: the AES-256 round keys and the two HMAC pad
/// states. Wiped on drop. Built only when the CPU can run the pass.
pub(crate) struct StitchedKeys {
    round_keys: [[u8; AES_BLOCK]; ROUND_KEYS],
    pads: PadStates,
}

impl Drop for StitchedKeys {
    fn drop(&mut self) {
        self.round_keys.zeroize();
        // `pads` wipes itself.
    }
}

impl StitchedKeys {
    /// The keys for AES key `aes_key` and HMAC key `hmac_key` (at most 128 bytes), or
    /// `None` when this CPU lacks AES-NI, AVX or BMI2 (the two-pass path then runs).
    pub(crate) fn new(aes_key: &[u8; KEY_SIZE], hmac_key: &[u8]) -> Option<Self> {
        if !stitch_cpuid::get() || hmac_key.len() > SHA_BLOCK {
            return None;
        }
        let mut keys = StitchedKeys {
            round_keys: [[0; AES_BLOCK]; ROUND_KEYS],
            // SAFETY: stitch_cpuid::get() said the CPU has AES-NI, SSE2, AVX, BMI1 and BMI2.
            pads: unsafe { PadStates::new(hmac_key) },
        };
        // SAFETY: as above.
        let mut schedule = unsafe { expand_key(aes_key) };
        for (stored, key) in keys.round_keys.iter_mut().zip(&schedule) {
            // SAFETY: `stored` is 16 writable bytes; unaligned stores are allowed.
            unsafe { _mm_storeu_si128(stored.as_mut_ptr().cast(), *key) };
        }
        // SAFETY: as above (SSE2).
        schedule = [unsafe { _mm_setzero_si128() }; ROUND_KEYS];
        core::hint::black_box(&schedule);
        Some(keys)
    }

    /// Encrypts `region` in place with AES-256-CBC under `iv` and returns
    /// HMAC-SHA512(`region` ‖ `iv` ‖ `pgno` as LE32), `region` being ciphertext by then.
    /// `region.len()` must be a non-zero multiple of 16.
    pub(crate) fn encrypt_and_mac(
        &self,
        iv: &[u8; IV_SIZE],
        region: &mut [u8],
        pgno: u32,
    ) -> Result<[u8; HMAC_SIZE], CodecError> {
        if region.is_empty() || !region.len().is_multiple_of(AES_BLOCK) {
            return Err(CodecError::BadLength {
                expected: region.len() - region.len() % AES_BLOCK,
                actual: region.len(),
            });
        }
        Ok(self.pass(iv, region, pgno))
    }

    /// [`encrypt_and_mac`](Self::encrypt_and_mac) with ciphertext stealing for a region
    /// that ends in a partial block (page 1 of SQLite3 Multiple Ciphers' layout): the bytes
    /// of `cbc::cts_encrypt_in_place`, then the same HMAC. `region` must be at least 16
    /// bytes long.
    pub(crate) fn encrypt_cts_and_mac(
        &self,
        iv: &[u8; IV_SIZE],
        region: &mut [u8],
        pgno: u32,
    ) -> Result<[u8; HMAC_SIZE], CodecError> {
        if region.len() < AES_BLOCK {
            return Err(CodecError::BadLength {
                expected: AES_BLOCK,
                actual: region.len(),
            });
        }
        Ok(self.pass(iv, region, pgno))
    }

    /// [`stitched_pass`] over a region its callers checked is at least one whole block.
    fn pass(&self, iv: &[u8; IV_SIZE], region: &mut [u8], pgno: u32) -> [u8; HMAC_SIZE] {
        debug_assert!(region.len() >= AES_BLOCK);
        // SAFETY: a StitchedKeys exists only if the CPU has the features (see `new`); both
        // callers refuse regions shorter than a block.
        let tag = unsafe { stitched_pass(self, iv, region, pgno) };
        scrub_stack_after_page_pass();
        tag
    }
}

impl StitchedKeys {
    /// HMAC-SHA512(`data` ‖ `pgno` as LE32), as the `hmac` crate computes it; with the
    /// message schedule in the vector unit, faster than the `sha2` crate.
    pub(crate) fn mac(&self, data: &[u8], pgno: u32) -> [u8; HMAC_SIZE] {
        // SAFETY: a StitchedKeys exists only if the CPU has the features (see `new`).
        let tag = unsafe { mac_pass(&self.pads, data, pgno) };
        scrub_stack_after_page_pass();
        tag
    }
}

impl StitchedKeys {
    /// The tags HMAC-SHA512(`messages[l]` ‖ `pgnos[l]` as LE32) of four messages of one
    /// length at once, in the four lanes of the AVX2 registers (`sha512x4`); `None` when
    /// the lengths differ or the CPU lacks AVX2.
    pub(crate) fn mac4(
        &self,
        messages: [&[u8]; 4],
        pgnos: [u32; 4],
    ) -> Option<[[u8; HMAC_SIZE]; 4]> {
        let len = messages[0].len();
        if !sha512x4::available() || messages.iter().any(|m| m.len() != len) {
            return None;
        }
        // SAFETY: AVX2 was checked just above; the lengths are equal.
        let tags = unsafe { mac4_pass(&self.pads, messages, pgnos) };
        scrub_stack_after_page_pass();
        tags
    }
}

impl StitchedKeys {
    /// Encrypts two to four pages at once and returns their tags: each `messages[l]` is a
    /// region of whole AES blocks followed by its 16-byte IV (a page's authenticated
    /// bytes, the region still plaintext), encrypted in place with AES-256-CBC under that
    /// IV; tag `l` is HMAC-SHA512(`messages[l]` ‖ `pgnos[l]` as LE32), as
    /// [`encrypt_and_mac`](Self::encrypt_and_mac) gives page by page. The four HMACs run
    /// in the lanes of the vector unit (as in [`mac4`](Self::mac4)), and the CBC chains'
    /// AES rounds run spread among the rounds of those compressions, each chain one chunk
    /// ahead of the block being hashed: a CBC chain is a series of dependent AES rounds
    /// that leaves the AES unit idle most of the time, and SHA-512's rounds are another
    /// such series on other units. `None`, with nothing encrypted, when the CPU lacks AVX2
    /// or the messages are not 2 to 4 of one length.
    pub(crate) fn encrypt_and_mac_lanes(
        &self,
        messages: &mut [&mut [u8]],
        pgnos: &[u32],
    ) -> Option<[[u8; HMAC_SIZE]; 4]> {
        let blocks = lane_region_blocks(messages, pgnos)?;
        let pgnos: [u32; 4] = core::array::from_fn(|l| pgnos.get(l).copied().unwrap_or(pgnos[0]));
        // SAFETY (each arm): a StitchedKeys exists only with AES-NI (see `new`), and
        // `lane_region_blocks` checked AVX2; every message has `blocks` whole blocks
        // followed by 16 readable bytes of IV, and the messages are distinct `&mut`
        // slices, so the lanes don't overlap.
        let tags = unsafe {
            match messages {
                [a, b] => encrypt_and_mac_pass(&self.round_keys, &self.pads, [a, b], blocks, pgnos),
                [a, b, c] => {
                    encrypt_and_mac_pass(&self.round_keys, &self.pads, [a, b, c], blocks, pgnos)
                }
                [a, b, c, d] => {
                    encrypt_and_mac_pass(&self.round_keys, &self.pads, [a, b, c, d], blocks, pgnos)
                }
                _ => return None,
            }
        };
        scrub_stack_after_page_pass();
        Some(tags)
    }
}

/// The pass behind [`StitchedKeys::encrypt_and_mac`] and, when `region` ends in a partial
/// block, [`StitchedKeys::encrypt_cts_and_mac`].
///
/// # Safety
/// The CPU has AES-NI, SSE2, AVX, BMI1 and BMI2; `region` is at least 16 bytes long.
#[target_feature(enable = "aes,sse2,ssse3,avx,bmi1,bmi2")]
unsafe fn stitched_pass(
    keys: &StitchedKeys,
    iv: &[u8; IV_SIZE],
    region: &mut [u8],
    pgno: u32,
) -> [u8; HMAC_SIZE] {
    let partial = region.len() % AES_BLOCK;
    let full_len = region.len() - partial;
    let blocks = full_len / AES_BLOCK;
    let chunks = blocks.div_ceil(BLOCKS_PER_CHUNK);
    let mut chain = CbcChain {
        // SAFETY: each stored round key is 16 readable bytes.
        round_keys: keys
            .round_keys
            .map(|key| unsafe { _mm_loadu_si128(key.as_ptr().cast()) }),
        // SAFETY: the IV is 16 readable bytes.
        previous: unsafe { _mm_loadu_si128(iv.as_ptr().cast()) },
    };
    let base = region.as_mut_ptr();

    // Chunk 0 alone: there is no ciphertext to hash yet.
    for block in 0..blocks.min(BLOCKS_PER_CHUNK) {
        // SAFETY: block < blocks, so its 16 bytes lie inside `region`.
        unsafe { chain.encrypt(base.add(block * AES_BLOCK)) };
    }
    // Chunk k encrypted while chunk k − 1 (ciphertext now) is hashed.
    let mut state = keys.pads.inner;
    for chunk in 1..chunks {
        // SAFETY: chunk − 1 < chunks − 1, so that chunk is whole and inside `region`.
        let hashed = unsafe { &*base.add((chunk - 1) * SHA_BLOCK).cast::<[u8; SHA_BLOCK]>() };
        let words = load_words(hashed);
        let first = chunk * BLOCKS_PER_CHUNK;
        let count = (blocks - first).min(BLOCKS_PER_CHUNK);
        // SAFETY: blocks first..first + count lie inside `region`, after the hashed chunk
        // (whose words were copied out above).
        unsafe {
            compress::<true, false>(
                &mut state,
                &words,
                &mut chain,
                base.add(first * AES_BLOCK),
                count,
            )
        };
    }

    // Ciphertext stealing (as `cbc::cts_encrypt_in_place`): C_n = AES((P_n zero-padded) ⊕
    // C_{n−1}) takes the last whole block's place and C_{n−1}'s first bytes become the
    // tail. Both lie in the last chunk, which is hashed only below.
    if partial != 0 {
        let mut last = [0u8; AES_BLOCK];
        last[..partial].copy_from_slice(&region[full_len..]);
        let mut stolen = [0u8; AES_BLOCK];
        stolen.copy_from_slice(&region[full_len - AES_BLOCK..full_len]);
        // The chain's own `previous` is not C_{n−1} after a short last chunk (`compress`
        // runs its spare blocks through it): chain from the stored block.
        // SAFETY: `stolen` and `last` are 16 bytes of this frame; unaligned load.
        unsafe {
            chain.previous = _mm_loadu_si128(stolen.as_ptr().cast());
            chain.encrypt(last.as_mut_ptr());
        }
        region[full_len - AES_BLOCK..full_len].copy_from_slice(&last);
        region[full_len..].copy_from_slice(&stolen[..partial]);
        last.zeroize();
        stolen.zeroize();
    }

    // The rest: the last chunk's ciphertext (and a stolen tail), then the IV and the page
    // number.
    let rest = &region[(chunks - 1) * SHA_BLOCK..];
    // `previous` may hold a spare block's encryption (see `sha512::compress`).
    chain.round_keys = [_mm_setzero_si128(); ROUND_KEYS];
    chain.previous = _mm_setzero_si128();
    core::hint::black_box(&chain);
    // SAFETY: the caller's guarantee on CPU features.
    unsafe {
        finish_mac(
            &keys.pads,
            &mut state,
            [rest, iv, &pgno.to_le_bytes()],
            region.len() + IV_SIZE + 4,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::sha512::K;
    use super::*;
    use crate::cbc::{cbc_encrypt_in_place, cts_encrypt_in_place};
    use crate::stack_probe::{holds, stack_left_by};
    use aes::cipher::KeyInit;
    use aes::Aes256;
    use hmac::{Hmac, Mac};
    use proptest::prelude::*;
    use sha2::Sha512;

    /// The two-pass reference: the `aes` crate's CBC, then the `hmac` crate.
    fn two_pass(
        key: &[u8; 32],
        hmac_key: &[u8],
        iv: &[u8; 16],
        region: &mut [u8],
        pgno: u32,
    ) -> [u8; 64] {
        cbc_encrypt_in_place(&Aes256::new(key.into()), iv, region).expect("whole blocks");
        reference_mac(hmac_key, region, iv, pgno)
    }

    /// The two-pass reference with ciphertext stealing: `cbc::cts_encrypt_in_place`, then
    /// the `hmac` crate.
    fn two_pass_cts(
        key: &[u8; 32],
        hmac_key: &[u8],
        iv: &[u8; 16],
        region: &mut [u8],
        pgno: u32,
    ) -> [u8; 64] {
        cts_encrypt_in_place(&Aes256::new(key.into()), iv, region).expect("a whole block");
        reference_mac(hmac_key, region, iv, pgno)
    }

    /// HMAC-SHA512(`ciphertext` ‖ `iv` ‖ `pgno` as LE32) by the `hmac` crate.
    fn reference_mac(hmac_key: &[u8], ciphertext: &[u8], iv: &[u8; 16], pgno: u32) -> [u8; 64] {
        let mut mac = <Hmac<Sha512> as KeyInit>::new_from_slice(hmac_key).expect("any length");
        mac.update(ciphertext);
        mac.update(iv);
        mac.update(&pgno.to_le_bytes());
        mac.finalize().into_bytes().into()
    }

    fn keys(key: &[u8; 32], hmac_key: &[u8]) -> Option<StitchedKeys> {
        let keys = StitchedKeys::new(key, hmac_key);
        if keys.is_none() {
            eprintln!("this CPU lacks AES-NI, AVX or BMI2: the stitched pass is not tested here");
        }
        keys
    }

    /// The 8-byte halves of the round keys and of E_k(0), and the words of the HMAC pad
    /// states, found in the stack `call` used (see [`stack_left_by`]).
    fn key_material_left_by(keys: &StitchedKeys, call: impl FnOnce()) -> Vec<String> {
        let stack = stack_left_by(call);
        let mut found = Vec::new();
        for (r, round_key) in keys.round_keys.iter().enumerate() {
            for (half, bytes) in round_key.chunks(8).enumerate() {
                if holds(&stack, bytes) {
                    found.push(format!("round key {r}, half {half}"));
                }
            }
        }
        // E_k(0), which the spare blocks of a last chunk shorter than 8 blocks compute (the
        // first two round keys of AES-256 are its key).
        let mut key = [0u8; 32];
        key[..16].copy_from_slice(&keys.round_keys[0]);
        key[16..].copy_from_slice(&keys.round_keys[1]);
        let mut check_value = [0u8; 16];
        cbc_encrypt_in_place(&Aes256::new((&key).into()), &[0; 16], &mut check_value)
            .expect("one block");
        for (half, bytes) in check_value.chunks(8).enumerate() {
            if holds(&stack, bytes) {
                found.push(format!("E_k(0), half {half}"));
            }
        }
        for (name, state) in [("inner", &keys.pads.inner), ("outer", &keys.pads.outer)] {
            for (i, word) in state.iter().enumerate() {
                if holds(&stack, &word.to_le_bytes()) {
                    found.push(format!("HMAC {name} state, word {i}"));
                }
            }
        }
        found
    }

    /// Pages encrypted or authenticated together leave no copy of the key schedule (whose
    /// first two round keys are the key) or of the HMAC state on the stack: the optimised
    /// passes spill them, and they would stay there for the connection's lifetime.
    #[test]
    #[cfg_attr(
        cipherlite_asan,
        ignore = "AddressSanitizer lays frames out its own way (redzones, a fake stack)"
    )]
    fn pages_at_once_leave_no_key_material_on_the_stack() {
        let key: [u8; 32] = core::array::from_fn(|i| (i as u8).wrapping_mul(73).wrapping_add(0x91));
        let Some(keys) = keys(&key, &[0x5a; 32]) else {
            return;
        };
        if !sha512x4::available() {
            return;
        }
        for (count, len) in [(2, 4032), (3, 4032), (4, 4032), (4, 80)] {
            let found = key_material_left_by(&keys, || {
                let mut messages: Vec<Vec<u8>> =
                    (0..count).map(|l| vec![l as u8 + 1; len]).collect();
                let mut slices: Vec<&mut [u8]> = messages.iter_mut().map(|m| &mut m[..]).collect();
                let pgnos = [2, 3, 4, 5];
                core::hint::black_box(keys.encrypt_and_mac_lanes(&mut slices, &pgnos[..count]));
            });
            assert!(
                found.is_empty(),
                "{count} pages of {len} bytes encrypted: {found:?}"
            );
        }
        let found = key_material_left_by(&keys, || {
            let message = vec![9u8; 4032];
            core::hint::black_box(keys.mac4([&message[..]; 4], [2, 3, 4, 5]));
        });
        assert!(found.is_empty(), "four pages authenticated: {found:?}");
    }

    /// The one-page passes wipe only the schedules of secret words (`compress`'s
    /// `SECRET_WORDS`): the key setup's pad blocks and the outer hash's inner digest. This
    /// checks that a page's public words skipping the wipe leaves no key material either,
    /// and that the setup's schedule of `hmac_key ^ ipad` is gone. (The keys the setup
    /// returns by value are moved through the stack; `scrub_stack` after an open wipes
    /// those copies.)
    #[test]
    #[cfg_attr(
        cipherlite_asan,
        ignore = "AddressSanitizer lays frames out its own way (redzones, a fake stack)"
    )]
    fn one_page_passes_and_key_setup_leave_no_key_material_on_the_stack() {
        let key: [u8; 32] = core::array::from_fn(|i| (i as u8).wrapping_mul(29).wrapping_add(0x47));
        let hmac_key: [u8; 32] = core::array::from_fn(|i| (i as u8).wrapping_mul(151) ^ 0xa3);
        let Some(keys) = keys(&key, &hmac_key) else {
            return;
        };
        for len in [4032, 4016, 80] {
            let found = key_material_left_by(&keys, || {
                let mut region = vec![7u8; len];
                core::hint::black_box(keys.encrypt_and_mac(&[3; 16], &mut region, 2).ok());
            });
            assert!(
                found.is_empty(),
                "one page of {len} bytes encrypted: {found:?}"
            );
            let found = key_material_left_by(&keys, || {
                let data = vec![7u8; len + 16];
                core::hint::black_box(keys.mac(&data, 2));
            });
            assert!(
                found.is_empty(),
                "one page of {len} bytes authenticated: {found:?}"
            );
        }

        // The setup's first message words are the HMAC key XOR the pads: in memory as
        // bytes (the pad block), as native-endian words, or as W[t] + K[t] (`compress`'s
        // schedule).
        let padded: Vec<[u8; 8]> = [0x36u8, 0x5c]
            .iter()
            .flat_map(|&pad| {
                hmac_key.chunks(8).enumerate().flat_map(move |(t, word)| {
                    let bytes: [u8; 8] = core::array::from_fn(|i| word[i] ^ pad);
                    let word = u64::from_be_bytes(bytes);
                    [
                        bytes,
                        word.to_ne_bytes(),
                        word.wrapping_add(K[t]).to_ne_bytes(),
                    ]
                })
            })
            .collect();
        let stack = stack_left_by(|| {
            core::hint::black_box(StitchedKeys::new(&key, &hmac_key));
        });
        let left: Vec<usize> = padded
            .iter()
            .enumerate()
            .filter(|(_, word)| holds(&stack, &word[..]))
            .map(|(i, _)| i)
            .collect();
        assert!(
            left.is_empty(),
            "pad-block words left by the key setup: {left:?}"
        );
    }

    /// Every region length the page sizes and page-1 layouts give (P − 80 and P − 96 for
    /// P = 512 … 65536), plus lengths around the 128-byte chunk and tail boundaries.
    #[test]
    fn same_bytes_as_the_two_pass_path_for_every_region_length() {
        let key = [0x2f; 32];
        let hmac_key = [0x5a; 32];
        let Some(stitched) = keys(&key, &hmac_key) else {
            return;
        };
        let mut lengths: Vec<usize> = (9..=16)
            .flat_map(|shift| [(1usize << shift) - 80, (1usize << shift) - 96])
            .collect();
        lengths.extend((1..=40).map(|blocks| blocks * 16));
        for len in lengths {
            let plain: Vec<u8> = (0..len).map(|i| (i * 131 % 251) as u8).collect();
            let iv: [u8; 16] = core::array::from_fn(|i| (len + i) as u8);
            let mut expected = plain.clone();
            let expected_tag = two_pass(&key, &hmac_key, &iv, &mut expected, 77);
            let mut actual = plain.clone();
            let tag = stitched
                .encrypt_and_mac(&iv, &mut actual, 77)
                .expect("whole blocks");
            assert_eq!(actual, expected, "ciphertext, {len} bytes");
            assert_eq!(tag, expected_tag, "tag, {len} bytes");
        }
    }

    /// Ciphertext stealing: every length from one block to past three chunks, and page 1's
    /// region of SQLite3 Multiple Ciphers' layout (P − 80 − 24) for every page size.
    #[test]
    fn stolen_tails_are_the_two_pass_paths_bytes_for_every_region_length() {
        let key = [0x61; 32];
        let hmac_key = [0x0c; 32];
        let Some(stitched) = keys(&key, &hmac_key) else {
            return;
        };
        let mut lengths: Vec<usize> = (16..=400).collect();
        lengths.extend((9..=16).map(|shift| (1usize << shift) - 80 - 24));
        for len in lengths {
            let plain: Vec<u8> = (0..len).map(|i| (i * 89 % 241) as u8).collect();
            let iv: [u8; 16] = core::array::from_fn(|i| (3 * len + i) as u8);
            let mut expected = plain.clone();
            let expected_tag = two_pass_cts(&key, &hmac_key, &iv, &mut expected, 1);
            let mut actual = plain.clone();
            let tag = stitched
                .encrypt_cts_and_mac(&iv, &mut actual, 1)
                .expect("a whole block");
            assert_eq!(actual, expected, "ciphertext, {len} bytes");
            assert_eq!(tag, expected_tag, "tag, {len} bytes");
        }
        for len in [0usize, 1, 15] {
            let mut data = vec![7u8; len];
            assert!(matches!(
                stitched.encrypt_cts_and_mac(&[0; 16], &mut data, 1),
                Err(CodecError::BadLength { actual, .. }) if actual == len
            ));
            assert!(data.iter().all(|&b| b == 7));
        }
    }

    /// The MAC-only path (page reads) against the `hmac` crate, for every message length
    /// around one and two blocks and for every page's authenticated region.
    #[test]
    fn the_read_mac_is_the_hmac_crates() {
        let hmac_key = [0x77; 32];
        let Some(stitched) = keys(&[1; 32], &hmac_key) else {
            return;
        };
        let mut lengths: Vec<usize> = (0..=300).collect();
        lengths.extend((9..=16).flat_map(|shift| [(1usize << shift) - 64, (1usize << shift) - 80]));
        for len in lengths {
            let data: Vec<u8> = (0..len).map(|i| (i * 29 % 253) as u8).collect();
            let mut mac = <Hmac<Sha512> as KeyInit>::new_from_slice(&hmac_key).expect("any length");
            mac.update(&data);
            mac.update(&9u32.to_le_bytes());
            let expected: [u8; 64] = mac.finalize().into_bytes().into();
            assert_eq!(stitched.mac(&data, 9), expected, "{len} bytes");
        }
    }

    /// Four messages at once, against the `hmac` crate one by one.
    #[test]
    fn four_macs_at_once_are_the_hmac_crates() {
        let hmac_key = [0x19; 32];
        let Some(stitched) = keys(&[1; 32], &hmac_key) else {
            return;
        };
        let mut lengths: Vec<usize> = (0..=300).collect();
        lengths.extend((9..=16).map(|shift| (1usize << shift) - 64));
        for len in lengths {
            let messages: Vec<Vec<u8>> = (0..4)
                .map(|lane| (0..len).map(|i| (i * 31 + lane * 101) as u8).collect())
                .collect();
            let pgnos = [2, 3, 4, 0xdead_beef];
            let Some(tags) = stitched.mac4(
                [&messages[0], &messages[1], &messages[2], &messages[3]],
                pgnos,
            ) else {
                eprintln!("this CPU lacks AVX2: four-lane MACs not tested here");
                return;
            };
            for lane in 0..4 {
                let mut mac =
                    <Hmac<Sha512> as KeyInit>::new_from_slice(&hmac_key).expect("any length");
                mac.update(&messages[lane]);
                mac.update(&pgnos[lane].to_le_bytes());
                let expected: [u8; 64] = mac.finalize().into_bytes().into();
                assert_eq!(tags[lane], expected, "{len} bytes, lane {lane}");
            }
        }
        let short = [0u8; 10];
        let long = [0u8; 11];
        assert!(stitched
            .mac4([&short, &short, &long, &short], [2; 4])
            .is_none());
    }

    /// Two, three and four pages at once, against the two-pass path page by page, for
    /// every page size's region and lengths around the chunk boundaries; and what the
    /// lanes refuse, untouched.
    #[test]
    fn pages_at_once_are_the_two_pass_paths_bytes() {
        let key = [0x3c; 32];
        let hmac_key = [0x44; 32];
        let Some(stitched) = keys(&key, &hmac_key) else {
            return;
        };
        if !sha512x4::available() {
            eprintln!("this CPU lacks AVX2: pages at once not tested here");
            return;
        }
        let mut lengths: Vec<usize> = (9..=16).map(|shift| (1usize << shift) - 80).collect();
        lengths.extend((1..=20).map(|blocks| blocks * 16));
        for len in lengths {
            for count in 2..=4usize {
                let plains: Vec<Vec<u8>> = (0..count)
                    .map(|lane| (0..len).map(|i| (i * 7 + lane * 53) as u8).collect())
                    .collect();
                let ivs: Vec<[u8; 16]> = (0..count)
                    .map(|lane| core::array::from_fn(|i| (len + 17 * lane + i) as u8))
                    .collect();
                let pgnos: Vec<u32> = (0..count as u32).map(|lane| 2 + lane * 1000).collect();
                let mut messages: Vec<Vec<u8>> = plains
                    .iter()
                    .zip(&ivs)
                    .map(|(plain, iv)| [&plain[..], &iv[..]].concat())
                    .collect();
                let mut slices: Vec<&mut [u8]> = messages.iter_mut().map(|m| &mut m[..]).collect();
                let tags = stitched
                    .encrypt_and_mac_lanes(&mut slices, &pgnos)
                    .expect("2 to 4 messages of one length");
                for lane in 0..count {
                    let mut expected = plains[lane].clone();
                    let tag = two_pass(&key, &hmac_key, &ivs[lane], &mut expected, pgnos[lane]);
                    assert_eq!(
                        &messages[lane][..len],
                        &expected[..],
                        "{len} bytes, lane {lane}"
                    );
                    assert_eq!(&messages[lane][len..], &ivs[lane][..], "the IV stays");
                    assert_eq!(
                        tags[lane], tag,
                        "tag, {len} bytes, {count} pages, lane {lane}"
                    );
                }
            }
        }
        // One message, five, unequal lengths, or a region of partial blocks: refused.
        let mut a = vec![1u8; 48];
        let mut b = vec![1u8; 48];
        let mut short = vec![1u8; 32];
        let mut odd = vec![1u8; 40];
        let mut odd2 = vec![1u8; 40];
        assert!(stitched
            .encrypt_and_mac_lanes(&mut [&mut a[..]], &[2])
            .is_none());
        assert!(stitched
            .encrypt_and_mac_lanes(&mut [&mut a[..], &mut short[..]], &[2, 3])
            .is_none());
        assert!(stitched
            .encrypt_and_mac_lanes(&mut [&mut odd[..], &mut odd2[..]], &[2, 3])
            .is_none());
        assert!(stitched
            .encrypt_and_mac_lanes(&mut [&mut a[..], &mut b[..]], &[2])
            .is_none());
        assert!([&a, &b, &short].iter().all(|m| m.iter().all(|&x| x == 1)));
        assert!([&odd, &odd2].iter().all(|m| m.iter().all(|&x| x == 1)));
    }

    #[test]
    fn partial_blocks_are_refused_untouched() {
        let Some(stitched) = keys(&[1; 32], &[2; 32]) else {
            return;
        };
        for len in [0usize, 15, 17, 4015] {
            let mut data = vec![7u8; len];
            assert!(matches!(
                stitched.encrypt_and_mac(&[0; 16], &mut data, 2),
                Err(CodecError::BadLength { actual, .. }) if actual == len
            ));
            assert!(data.iter().all(|&b| b == 7));
        }
    }

    #[test]
    fn round_keys_are_wiped_on_drop() {
        let Some(stitched) = keys(&[3; 32], &[4; 32]) else {
            return;
        };
        let mut stitched = core::mem::ManuallyDrop::new(stitched);
        // SAFETY: dropped once, in place; the fields are plain arrays, read afterwards.
        unsafe { core::ptr::drop_in_place(&mut *stitched) };
        assert!(stitched.round_keys.iter().flatten().all(|&b| b == 0));
        assert!(stitched
            .pads
            .inner
            .iter()
            .chain(&stitched.pads.outer)
            .all(|&w| w == 0));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn random_keys_ivs_and_pages_match_the_two_pass_path(
            key in prop::array::uniform32(any::<u8>()),
            hmac_key in prop::collection::vec(any::<u8>(), 0..=128),
            iv in prop::array::uniform16(any::<u8>()),
            blocks in 1usize..300,
            pgno in any::<u32>(),
            seed in any::<u8>(),
        ) {
            let Some(stitched) = StitchedKeys::new(&key, &hmac_key) else { return Ok(()) };
            let plain: Vec<u8> = (0..blocks * 16).map(|i| (i as u8).wrapping_mul(seed | 1)).collect();
            let mut expected = plain.clone();
            let expected_tag = two_pass(&key, &hmac_key, &iv, &mut expected, pgno);
            let mut actual = plain;
            let tag = stitched.encrypt_and_mac(&iv, &mut actual, pgno).expect("whole blocks");
            prop_assert_eq!(actual, expected);
            prop_assert_eq!(tag.to_vec(), expected_tag.to_vec());
        }

        #[test]
        fn random_stolen_tails_match_the_two_pass_path(
            key in prop::array::uniform32(any::<u8>()),
            hmac_key in prop::collection::vec(any::<u8>(), 0..=128),
            iv in prop::array::uniform16(any::<u8>()),
            len in 16usize..4800,
            pgno in any::<u32>(),
            seed in any::<u8>(),
        ) {
            let Some(stitched) = StitchedKeys::new(&key, &hmac_key) else { return Ok(()) };
            let plain: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(seed | 1)).collect();
            let mut expected = plain.clone();
            let expected_tag = two_pass_cts(&key, &hmac_key, &iv, &mut expected, pgno);
            let mut actual = plain;
            let tag = stitched.encrypt_cts_and_mac(&iv, &mut actual, pgno).expect("a whole block");
            prop_assert_eq!(actual, expected);
            prop_assert_eq!(tag.to_vec(), expected_tag.to_vec());
        }
    }
}
