//! HMAC-SHA512 for the x86-64 page passes, the textbook construction over precomputed pad
//! states ([`PadStates`]: the SHA-512 states after compressing `key ^ ipad` and
//! `key ^ opad`, so that a page's HMAC costs no key setup): the end of an HMAC once the
//! message's whole blocks are compressed (its tail, page number, padding and the outer
//! hash), for one message on the integer ALUs and for four in the AVX2 lanes.
//!
//! Constant time: no data-dependent branch or index; the only branches depend on message
//! lengths, which are public.

use zeroize::Zeroize;

use super::aesni::CbcChain;
use super::sha512::{compress, load_words, pad_last_blocks, store_be_words, H0, SHA_BLOCK};
use super::sha512x4;
use crate::HMAC_SIZE;

/// The two HMAC pad states of a key: SHA-512 after compressing `key ^ ipad` (`inner`) and
/// `key ^ opad` (`outer`), each a block padded with the pad byte. Wiped on drop.
pub(super) struct PadStates {
    pub(super) inner: [u64; 8],
    pub(super) outer: [u64; 8],
}

impl Drop for PadStates {
    fn drop(&mut self) {
        self.inner.zeroize();
        self.outer.zeroize();
    }
}

impl PadStates {
    /// The pad states of `hmac_key` (at most 128 bytes).
    ///
    /// # Safety
    /// As for [`compress`] without AES work.
    pub(super) unsafe fn new(hmac_key: &[u8]) -> PadStates {
        let mut pads = PadStates {
            inner: H0,
            outer: H0,
        };
        // SAFETY: the caller's guarantee.
        unsafe {
            pads.inner = pad_state(hmac_key, 0x36);
            pads.outer = pad_state(hmac_key, 0x5c);
        }
        pads
    }
}

/// HMAC-SHA512 of `data` ‖ `pgno` as LE32 (no AES work): the page check of a read
/// (`StitchedKeys::mac`).
///
/// # Safety
/// The CPU has the features `stitched::available` checks.
#[target_feature(enable = "aes,sse2,ssse3,avx,bmi1,bmi2")]
pub(super) unsafe fn mac_pass(pads: &PadStates, data: &[u8], pgno: u32) -> [u8; HMAC_SIZE] {
    let mut state = pads.inner;
    let whole = data.len() / SHA_BLOCK * SHA_BLOCK;
    for block in data[..whole].chunks_exact(SHA_BLOCK) {
        let words = load_words(block);
        // SAFETY: the caller's guarantee; no AES work.
        unsafe {
            compress::<false, false>(
                &mut state,
                &words,
                &mut CbcChain::idle(),
                core::ptr::null_mut(),
                0,
            )
        };
    }
    // SAFETY: as above.
    unsafe {
        finish_mac(
            pads,
            &mut state,
            [&data[whole..], &[], &pgno.to_le_bytes()],
            data.len() + 4,
        )
    }
}

/// Ends an HMAC whose inner state has absorbed all but `parts` (together less than two
/// blocks minus the padding's 17 bytes) of a `message_len`-byte message: pads, runs the
/// outer hash, wipes the states — the caller's `state` too, which for a message shorter
/// than a block is still the key's inner pad state.
///
/// # Safety
/// The CPU has the features `stitched::available` checks.
#[target_feature(enable = "aes,sse2,ssse3,avx,bmi1,bmi2")]
pub(super) unsafe fn finish_mac(
    pads: &PadStates,
    state: &mut [u64; 8],
    parts: [&[u8]; 3],
    message_len: usize,
) -> [u8; HMAC_SIZE] {
    let mut idle = CbcChain::idle();
    let mut tail = [0u8; 2 * SHA_BLOCK];
    let mut len = 0;
    for part in parts {
        tail[len..len + part.len()].copy_from_slice(part);
        len += part.len();
    }
    let tail_len = pad_last_blocks(&mut tail, len, SHA_BLOCK + message_len);
    for block in tail[..tail_len].chunks_exact(SHA_BLOCK) {
        let words = load_words(block);
        // SAFETY: the caller's guarantee; no AES work.
        unsafe { compress::<false, false>(state, &words, &mut idle, core::ptr::null_mut(), 0) };
    }

    // Outer hash over the inner digest.
    let mut outer_block = [0u8; SHA_BLOCK];
    store_be_words(&mut outer_block, state);
    pad_last_blocks(&mut outer_block, HMAC_SIZE, SHA_BLOCK + HMAC_SIZE);
    let mut outer = pads.outer;
    let mut words = load_words(&outer_block);
    // SAFETY: as above.
    unsafe { compress::<false, true>(&mut outer, &words, &mut idle, core::ptr::null_mut(), 0) };

    let mut tag = [0u8; HMAC_SIZE];
    store_be_words(&mut tag, &outer);
    state.zeroize();
    outer.zeroize();
    outer_block.zeroize();
    words.zeroize();
    tag
}

/// The four HMACs of `messages` (of one length) ‖ `pgnos`, all in the four lanes: the
/// page checks of a read-ahead (`StitchedKeys::mac4`).
///
/// # Safety
/// The CPU has AVX2 and AES-NI; the four messages have one length.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn mac4_pass(
    pads: &PadStates,
    messages: [&[u8]; 4],
    pgnos: [u32; 4],
) -> Option<[[u8; HMAC_SIZE]; 4]> {
    // SAFETY (both calls): the caller's guarantee.
    let states = unsafe { sha512x4::broadcast(&pads.inner) };
    unsafe { finish_mac4(pads, states, messages, 0, pgnos) }
}

/// The four HMACs of `messages` (of one length) ‖ `pgnos`, whose inner hashes in `states`
/// have absorbed the first `hashed` bytes (whole blocks): the rest of the inner hashes,
/// the outer ones; the states are wiped.
///
/// # Safety
/// The CPU has AVX2 and AES-NI.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn finish_mac4(
    pads: &PadStates,
    mut states: sha512x4::States,
    messages: [&[u8]; 4],
    hashed: usize,
    pgnos: [u32; 4],
) -> Option<[[u8; HMAC_SIZE]; 4]> {
    let len = messages[0].len();
    let whole = len / SHA_BLOCK * SHA_BLOCK;
    // SAFETY (every sha512x4 call below): the caller's guarantee.
    for offset in (hashed..whole).step_by(SHA_BLOCK) {
        unsafe { sha512x4::compress(&mut states, lane_blocks(messages, offset)?) };
    }
    // The rest of each message, its page number and the padding: one or two blocks.
    let rest = len - whole;
    let mut tails = [[0u8; 2 * SHA_BLOCK]; 4];
    let mut tail_len = 0;
    for ((tail, message), pgno) in tails.iter_mut().zip(messages).zip(pgnos) {
        tail[..rest].copy_from_slice(&message[whole..]);
        tail[rest..rest + 4].copy_from_slice(&pgno.to_le_bytes());
        tail_len = pad_last_blocks(tail, rest + 4, SHA_BLOCK + len + 4);
    }
    for offset in (0..tail_len).step_by(SHA_BLOCK) {
        let tails = tails.each_ref().map(|tail| &tail[..]);
        unsafe { sha512x4::compress(&mut states, lane_blocks(tails, offset)?) };
    }
    // Outer hashes over the inner digests.
    let mut outer_blocks = [[0u8; SHA_BLOCK]; 4];
    for (lane, block) in outer_blocks.iter_mut().enumerate() {
        let mut inner = unsafe { sha512x4::lane(&states, lane) };
        store_be_words(block, &inner);
        inner.zeroize();
        pad_last_blocks(block, HMAC_SIZE, SHA_BLOCK + HMAC_SIZE);
    }
    let mut outer = unsafe { sha512x4::broadcast(&pads.outer) };
    unsafe { sha512x4::compress(&mut outer, outer_blocks.each_ref()) };
    let mut tags = [[0u8; HMAC_SIZE]; 4];
    for (lane, tag) in tags.iter_mut().enumerate() {
        store_be_words(tag, &unsafe { sha512x4::lane(&outer, lane) });
    }
    outer_blocks.zeroize();
    states = unsafe { sha512x4::broadcast(&[0; 8]) };
    outer = states;
    core::hint::black_box((&states, &outer));
    Some(tags)
}

/// The 128-byte block at `offset` of each of four messages (`None` past one's end).
fn lane_blocks(messages: [&[u8]; 4], offset: usize) -> Option<[&[u8; SHA_BLOCK]; 4]> {
    Some([
        messages[0].get(offset..)?.first_chunk()?,
        messages[1].get(offset..)?.first_chunk()?,
        messages[2].get(offset..)?.first_chunk()?,
        messages[3].get(offset..)?.first_chunk()?,
    ])
}

/// The SHA-512 state after compressing the HMAC key XOR `pad_byte`, padded to a block.
///
/// # Safety
/// As for [`compress`] without AES work.
#[target_feature(enable = "aes,sse2,ssse3,avx,bmi1,bmi2")]
unsafe fn pad_state(hmac_key: &[u8], pad_byte: u8) -> [u64; 8] {
    let mut pad = [pad_byte; SHA_BLOCK];
    for (p, k) in pad.iter_mut().zip(hmac_key) {
        *p ^= k;
    }
    let mut words = load_words(&pad);
    let mut state = H0;
    // SAFETY: the caller's guarantee; no AES work.
    unsafe {
        compress::<false, true>(
            &mut state,
            &words,
            &mut CbcChain::idle(),
            core::ptr::null_mut(),
            0,
        )
    };
    words.zeroize();
    pad.zeroize();
    state
}
