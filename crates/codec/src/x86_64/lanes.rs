//! Two to four pages encrypted and authenticated at once on x86-64 (the 4-lane driver of
//! `StitchedKeys::encrypt_and_mac_lanes`): the pages' CBC chains advance together, each
//! one chunk ahead of the block being hashed, their AES rounds spread among the rounds of
//! the four-lane SHA-512 compression (`sha512x4`). A CBC chain is a series of dependent AES
//! rounds that leaves the AES unit idle most of the time, and SHA-512's rounds are another
//! such series on other units.
//!
//! Constant time: no data-dependent branch or index; the only branches depend on the
//! regions' length, which is public.

use core::arch::x86_64::{_mm_loadu_si128, _mm_setzero_si128};

use super::aesni::{cbc_lanes, AES_BLOCK, ROUND_KEYS};
use super::hmac::{finish_mac4, PadStates};
use super::sha512::{BLOCKS_PER_CHUNK, SHA_BLOCK};
use super::sha512x4;
use crate::{HMAC_SIZE, IV_SIZE};

/// The number of AES blocks in each region of the messages of
/// `StitchedKeys::encrypt_and_mac_lanes`, if they are 2 to 4 of one length, each a
/// region of whole blocks and an IV, with a page number each, and the CPU has AVX2.
pub(super) fn lane_region_blocks(messages: &[&mut [u8]], pgnos: &[u32]) -> Option<usize> {
    let len = messages.first()?.len();
    let region = len.checked_sub(IV_SIZE)?;
    let fits = (2..=4).contains(&messages.len())
        && pgnos.len() == messages.len()
        && messages.iter().all(|m| m.len() == len)
        && region != 0
        && region.is_multiple_of(AES_BLOCK)
        && sha512x4::available();
    fits.then_some(region / AES_BLOCK)
}

/// The pass behind `StitchedKeys::encrypt_and_mac_lanes`, under `round_keys` and `pads`:
/// chunk 0 (8 blocks) of each region encrypted alone, then chunk k of each encrypted
/// during the compression of block k − 1 of the four lanes (lanes past `N` hash the first
/// message again), then the rest of the HMACs.
///
/// # Safety
/// The CPU has AES-NI and AVX2; each slice holds `blocks * 16` bytes of region then its
/// 16-byte IV.
#[target_feature(enable = "aes,sse2,avx2")]
pub(super) unsafe fn encrypt_and_mac_pass<const N: usize>(
    round_keys: &[[u8; AES_BLOCK]; ROUND_KEYS],
    pads: &PadStates,
    lanes: [&mut &mut [u8]; N],
    blocks: usize,
    pgnos: [u32; 4],
) -> [[u8; HMAC_SIZE]; 4] {
    let len = blocks * AES_BLOCK + IV_SIZE;
    let bases: [*mut u8; N] = lanes.map(|lane| lane.as_mut_ptr());
    let mut chains = sha512x4::CbcLanes {
        // SAFETY: each round key is 16 readable bytes; unaligned loads.
        round_keys: round_keys.map(|key| unsafe { _mm_loadu_si128(key.as_ptr().cast()) }),
        // SAFETY: the IV follows the region's `blocks` blocks (the caller's guarantee).
        previous: core::array::from_fn(|l| unsafe {
            _mm_loadu_si128(bases[l].add(blocks * AES_BLOCK).cast())
        }),
        at: bases,
        count: 0,
    };
    // SAFETY: blocks 0..min(8, blocks) lie in each region.
    unsafe {
        cbc_lanes(
            &chains.round_keys,
            bases,
            &mut chains.previous,
            0..blocks.min(BLOCKS_PER_CHUNK),
        )
    };
    // SAFETY: the caller's guarantee on CPU features (every sha512x4 call below).
    let mut states = unsafe { sha512x4::broadcast(&pads.inner) };
    let chunks = blocks.div_ceil(BLOCKS_PER_CHUNK);
    let lane_base = |l: usize| bases[if l < N { l } else { 0 }];
    for chunk in 1..chunks {
        // Block chunk − 1 of each message: whole, ciphertext already, and not among the
        // blocks encrypted during its compression (those of chunk `chunk`).
        // SAFETY: chunk − 1 < chunks − 1, so that chunk is whole and inside the region.
        let hashed: [&[u8; SHA_BLOCK]; 4] = core::array::from_fn(|l| unsafe {
            &*lane_base(l)
                .add((chunk - 1) * SHA_BLOCK)
                .cast::<[u8; SHA_BLOCK]>()
        });
        let first = chunk * BLOCKS_PER_CHUNK;
        // SAFETY: `first` < blocks: inside each region.
        chains.at = core::array::from_fn(|l| unsafe { bases[l].add(first * AES_BLOCK) });
        chains.count = (blocks - first).min(BLOCKS_PER_CHUNK);
        // SAFETY: blocks first..first + count lie in each region, after the hashed block.
        unsafe { sha512x4::compress_encrypting(&mut states, hashed, &mut chains) };
    }
    // `previous` may hold a spare block's encryption (see `sha512x4::compress_encrypting`).
    chains.round_keys = [_mm_setzero_si128(); ROUND_KEYS];
    chains.previous = [_mm_setzero_si128(); N];
    core::hint::black_box(&chains);
    // SAFETY: each message is `len` bytes (the caller's guarantee), all of it written.
    let messages: [&[u8]; 4] =
        core::array::from_fn(|l| unsafe { core::slice::from_raw_parts(lane_base(l), len) });
    // SAFETY: as above.
    let tags = unsafe { finish_mac4(pads, states, messages, (chunks - 1) * SHA_BLOCK, pgnos) };
    // The pages are encrypted by now: no `None` may follow (the caller would encrypt them
    // again). `finish_mac4` refuses only messages of unequal lengths, and these are equal.
    tags.expect("four messages of one length")
}
