//! AES-256 with AES-NI for the x86-64 page passes: the key schedule, one CBC chain advanced
//! a block at a time ([`CbcChain`], which the scalar SHA-512 compression advances between
//! its rounds), and `N` chains interleaved block by block ([`cbc_lanes`]). Encryption only:
//! pages are decrypted by the `aes` crate (`cbc`).
//!
//! Constant time: AES-NI has no data-dependent branch or memory index.

use core::arch::x86_64::{
    __m128i, _mm_aesenc_si128, _mm_aesenclast_si128, _mm_aeskeygenassist_si128, _mm_loadu_si128,
    _mm_setzero_si128, _mm_shuffle_epi32, _mm_slli_si128, _mm_storeu_si128, _mm_xor_si128,
};

use crate::KEY_SIZE;

/// Bytes in an AES block.
pub(super) const AES_BLOCK: usize = 16;
/// Round keys of AES-256: the whitening key and one per round.
pub(super) const ROUND_KEYS: usize = 15;

/// AES-256 key expansion with AES-NI (Intel's AES-NI white paper, figure 26).
///
/// # Safety
/// The CPU has AES-NI, SSE2 and AVX.
#[target_feature(enable = "aes,sse2,avx")]
pub(super) unsafe fn expand_key(key: &[u8; KEY_SIZE]) -> [__m128i; ROUND_KEYS] {
    #[inline(always)]
    fn spread(mut t: __m128i) -> __m128i {
        // SAFETY: SSE2 is in the target features of every caller (expand_key).
        unsafe {
            let mut s = _mm_slli_si128::<4>(t);
            t = _mm_xor_si128(t, s);
            s = _mm_slli_si128::<4>(s);
            t = _mm_xor_si128(t, s);
            s = _mm_slli_si128::<4>(s);
            _mm_xor_si128(t, s)
        }
    }
    let mut round_keys = [_mm_setzero_si128(); ROUND_KEYS];
    // SAFETY: `key` is 32 readable bytes; unaligned loads.
    let mut even = unsafe { _mm_loadu_si128(key.as_ptr().cast()) };
    // SAFETY: as above, bytes 16..32.
    let mut odd = unsafe { _mm_loadu_si128(key.as_ptr().add(16).cast()) };
    round_keys[0] = even;
    round_keys[1] = odd;
    macro_rules! step {
        (even $rcon:literal, $index:expr) => {
            let assist = _mm_shuffle_epi32::<0xff>(_mm_aeskeygenassist_si128::<$rcon>(odd));
            even = _mm_xor_si128(spread(even), assist);
            round_keys[$index] = even;
        };
        ($rcon:literal, $index:expr) => {
            step!(even $rcon, $index);
            let assist = _mm_shuffle_epi32::<0xaa>(_mm_aeskeygenassist_si128::<0>(even));
            odd = _mm_xor_si128(spread(odd), assist);
            round_keys[$index + 1] = odd;
        };
    }
    step!(0x01, 2);
    step!(0x02, 4);
    step!(0x04, 6);
    step!(0x08, 8);
    step!(0x10, 10);
    step!(0x20, 12);
    step!(even 0x40, 14);
    round_keys
}

/// The CBC chain between calls of `sha512::compress`: round keys and the last ciphertext block.
pub(super) struct CbcChain {
    pub(super) round_keys: [__m128i; ROUND_KEYS],
    pub(super) previous: __m128i,
}

impl CbcChain {
    /// A chain for a compression with no AES work.
    pub(super) fn idle() -> CbcChain {
        // SAFETY: SSE2 is part of x86-64.
        let zero = unsafe { _mm_setzero_si128() };
        CbcChain {
            round_keys: [zero; ROUND_KEYS],
            previous: zero,
        }
    }

    /// Encrypts the 16 bytes at `block` in place and chains them.
    ///
    /// # Safety
    /// The CPU has AES-NI and AVX; `block` points to 16 readable and writable bytes.
    #[inline]
    #[target_feature(enable = "aes,sse2,avx")]
    pub(super) unsafe fn encrypt(&mut self, block: *mut u8) {
        // SAFETY: the caller guarantees 16 valid bytes at `block`; loads are unaligned.
        let plain = unsafe { _mm_loadu_si128(block.cast::<__m128i>()) };
        let mut state = _mm_xor_si128(_mm_xor_si128(plain, self.previous), self.round_keys[0]);
        for key in &self.round_keys[1..ROUND_KEYS - 1] {
            state = _mm_aesenc_si128(state, *key);
        }
        state = _mm_aesenclast_si128(state, self.round_keys[ROUND_KEYS - 1]);
        // SAFETY: as above.
        unsafe { _mm_storeu_si128(block.cast::<__m128i>(), state) };
        self.previous = state;
    }
}

/// CBC encryption in place of blocks `range` of `N` chains at `bases`, interleaved block
/// by block, each chained from `previous[l]` (updated).
///
/// # Safety
/// The CPU has AES-NI; blocks `range` at each base are readable and writable.
#[target_feature(enable = "aes,sse2")]
pub(super) unsafe fn cbc_lanes<const N: usize>(
    keys: &[__m128i; ROUND_KEYS],
    bases: [*mut u8; N],
    previous: &mut [__m128i; N],
    range: core::ops::Range<usize>,
) {
    for block in range {
        let mut state: [__m128i; N] = core::array::from_fn(|l| {
            // SAFETY: `block` is in `range`: 16 bytes of lane l (the caller's guarantee).
            let plain = unsafe { _mm_loadu_si128(bases[l].add(block * AES_BLOCK).cast()) };
            _mm_xor_si128(_mm_xor_si128(plain, previous[l]), keys[0])
        });
        for key in &keys[1..ROUND_KEYS - 1] {
            for s in &mut state {
                *s = _mm_aesenc_si128(*s, *key);
            }
        }
        for (l, s) in state.iter_mut().enumerate() {
            *s = _mm_aesenclast_si128(*s, keys[ROUND_KEYS - 1]);
            // SAFETY: as for the load above.
            unsafe { _mm_storeu_si128(bases[l].add(block * AES_BLOCK).cast(), *s) };
            previous[l] = *s;
        }
    }
}
