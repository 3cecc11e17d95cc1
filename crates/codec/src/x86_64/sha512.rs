//! SHA-512 for the x86-64 page passes: the constants, the block helpers, and the scalar
//! compression, whose message schedule runs two words at a time in the vector unit and
//! whose rounds run on the integer ALUs, with room between the rounds for an AES-NI CBC
//! chain ([`compress`]'s `WITH_AES`: the stitched pass). The four-lane compression
//! (`sha512x4`) shares the constants and the round macro.
//!
//! Constant time: integer and vector arithmetic only, no data-dependent branch or index.

use core::arch::x86_64::{
    __m128i, _mm_add_epi64, _mm_aesenc_si128, _mm_aesenclast_si128, _mm_alignr_epi8,
    _mm_loadu_si128, _mm_or_si128, _mm_setzero_si128, _mm_slli_epi64, _mm_srli_epi64,
    _mm_storeu_si128, _mm_xor_si128,
};

use zeroize::Zeroize;

use super::aesni::{CbcChain, AES_BLOCK, ROUND_KEYS};

/// SHA-512's 80 rounds as `$round!(a, b, c, d, e, f, g, h, t)` for t = 0..80, the eight
/// working variables (the caller's, named in order) moving one place a round and back in
/// place after eight: shared by the scalar compression ([`compress`]) and the four-lane one
/// (`sha512x4`), each with its own `round!`.
macro_rules! sha512_rounds {
    ($round:ident, $a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident) => {
        sha512_rounds!(@eight $round, [$a, $b, $c, $d, $e, $f, $g, $h], 0, 8, 16, 24, 32, 40, 48, 56, 64, 72);
    };
    (@eight $round:ident, [$a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident], $($t:expr),*) => {
        $(
            $round!($a, $b, $c, $d, $e, $f, $g, $h, $t);
            $round!($h, $a, $b, $c, $d, $e, $f, $g, $t + 1);
            $round!($g, $h, $a, $b, $c, $d, $e, $f, $t + 2);
            $round!($f, $g, $h, $a, $b, $c, $d, $e, $t + 3);
            $round!($e, $f, $g, $h, $a, $b, $c, $d, $t + 4);
            $round!($d, $e, $f, $g, $h, $a, $b, $c, $t + 5);
            $round!($c, $d, $e, $f, $g, $h, $a, $b, $t + 6);
            $round!($b, $c, $d, $e, $f, $g, $h, $a, $t + 7);
        )*
    };
}

/// Bytes in a SHA-512 block.
pub(super) const SHA_BLOCK: usize = 128;
/// AES blocks per SHA-512 block: the most CBC blocks a compression carries.
pub(super) const BLOCKS_PER_CHUNK: usize = SHA_BLOCK / AES_BLOCK;

/// Pads a message whose last `len` bytes begin `buf` (zero after them): 0x80, then, at the
/// end of the block they need (one, or two when fewer than 17 bytes are left in the
/// first), the bit length of the `hashed_len` bytes hashed in all (the HMAC key block
/// included). Returns the length of the blocks to compress.
pub(super) fn pad_last_blocks(buf: &mut [u8], len: usize, hashed_len: usize) -> usize {
    buf[len] = 0x80;
    let blocks_len = if len + 17 <= SHA_BLOCK {
        SHA_BLOCK
    } else {
        2 * SHA_BLOCK
    };
    buf[blocks_len - 16..blocks_len].copy_from_slice(&((hashed_len as u128) * 8).to_be_bytes());
    blocks_len
}

/// A SHA-512 state (or digest) as its 64 big-endian bytes, into the start of `out`.
pub(super) fn store_be_words(out: &mut [u8], words: &[u64; 8]) {
    for (bytes, word) in out.chunks_exact_mut(8).zip(words) {
        bytes.copy_from_slice(&word.to_be_bytes());
    }
}

/// The 16 big-endian message words of a SHA-512 block (`block` is 128 bytes).
#[inline(always)]
pub(super) fn load_words(block: &[u8]) -> [u64; 16] {
    core::array::from_fn(|i| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&block[i * 8..i * 8 + 8]);
        u64::from_be_bytes(word)
    })
}

/// One SHA-512 compression of `words` into `state`, CBC-encrypting `count` (at most 8)
/// blocks at `blocks` on the way.
///
/// `SECRET_WORDS`: whether the message words are secret (the HMAC key's pad block, an
/// inner digest), so that their schedule is wiped from the stack after. A page's words are
/// its ciphertext, IV and page number, which are on disk anyway, and wiping 80 words after
/// each of a page's compressions would add a store for every word the schedule computes.
///
/// Block `j` is encrypted during rounds `10j .. 10j + 10`, one or two AES rounds per SHA
/// round, so that the AES chain's instructions sit among the SHA rounds' in program order
/// and the out-of-order core runs both at once. (A whole block between SHA rounds, or two
/// AES rounds in every SHA round, lets the chain fall behind; it then blocks retirement
/// and costs its full latency: measured, no faster than the two passes.)
///
/// # Safety
/// The CPU has AES-NI, SSE2, AVX, BMI1 and BMI2; `count` blocks at `blocks` are valid.
// The last round's tie hands back an AES state nothing reads.
#[allow(unused_assignments)]
#[target_feature(enable = "aes,sse2,ssse3,avx,bmi1,bmi2")]
pub(super) unsafe fn compress<const WITH_AES: bool, const SECRET_WORDS: bool>(
    state: &mut [u64; 8],
    words: &[u64; 16],
    chain: &mut CbcChain,
    blocks: *mut u8,
    count: usize,
) {
    // By reference: a copy would leave the key schedule on the stack unwiped.
    let round_keys = &chain.round_keys;
    let mut previous = chain.previous;
    let mut aes = _mm_setzero_si128();

    // The AES work of SHA round `t`: block t / 10, step t % 10 of its 15 operations
    // (the whitening XOR, 13 `aesenc`, `aesenclast`), two then one alternately. Blocks
    // past `count` are encrypted into `spare` and thrown away, so the code has no branch
    // the compiler could use to gather the AES work in one place. The empty `asm!` ties
    // the AES state to the SHA state at every round: without it LLVM hoists all eight
    // blocks to the start, the chain's latency is exposed, and nothing is saved.
    let mut spare = [0u8; AES_BLOCK];
    let spare_at = spare.as_mut_ptr();
    macro_rules! aes_rounds {
        ($t:expr, $tied:ident) => {
            let block: usize = $t / 10;
            let step: usize = $t % 10;
            let at = if block < count {
                blocks.wrapping_add(block * AES_BLOCK)
            } else {
                spare_at
            }
            .cast::<__m128i>();
            // (Blocks past `count` chain `previous` on through `spare`; nothing uses it after.)
            for op in (3 * step).div_ceil(2)..(3 * step + 3).div_ceil(2) {
                if op == 0 {
                    // SAFETY: `at` is a valid block (block < count, the caller's guarantee)
                    // or `spare`; unaligned load.
                    let plain = unsafe { _mm_loadu_si128(at) };
                    aes = _mm_xor_si128(_mm_xor_si128(plain, previous), round_keys[0]);
                } else if op < ROUND_KEYS - 1 {
                    aes = _mm_aesenc_si128(aes, round_keys[op]);
                } else {
                    aes = _mm_aesenclast_si128(aes, round_keys[op]);
                    // SAFETY: as above; unaligned store.
                    unsafe { _mm_storeu_si128(at, aes) };
                    previous = aes;
                }
            }
            // SAFETY: an empty template: no instruction, no memory or flags touched.
            unsafe {
                core::arch::asm!(
                    "/* {0} {1} */",
                    inout(xmm_reg) aes,
                    inout(reg) $tied,
                    options(pure, nomem, nostack, preserves_flags)
                )
            };
        };
    }

    // The message schedule, two words at a time in the vector unit, interleaved with the
    // rounds (words t+16, t+17 during round t): W[t] + K[t] lands in `wk` for round t.
    // `ring` holds the last 16 words as 8 pairs. This takes a third of the work off the
    // integer ALUs, which the rounds keep busy.
    let mut wk = [0u64; 80];
    let wk_at = wk.as_mut_ptr();
    // SAFETY: `words` is 16 u64 = 8 pairs; unaligned loads.
    let mut ring: [__m128i; 8] =
        core::array::from_fn(|p| unsafe { _mm_loadu_si128(words.as_ptr().add(2 * p).cast()) });
    for (p, pair) in ring.iter().enumerate() {
        // SAFETY: K has 80 words and wk 80 slots; 2p + 1 < 16.
        unsafe {
            let k = _mm_loadu_si128(K.as_ptr().add(2 * p).cast());
            _mm_storeu_si128(wk_at.add(2 * p).cast(), _mm_add_epi64(*pair, k));
        }
    }
    macro_rules! ror2 {
        ($x:expr, $n:literal) => {
            _mm_or_si128(_mm_srli_epi64::<$n>($x), _mm_slli_epi64::<{ 64 - $n }>($x))
        };
    }
    macro_rules! schedule_pair {
        ($t:expr, $tied:ident) => {
            if $t % 2 == 0 && (16..80).contains(&$t) {
                let slot = ($t / 2) % 8;
                let a = ring[($t / 2 + 7) % 8]; // W[t-2], W[t-1]
                let b = _mm_alignr_epi8::<8>(ring[($t / 2 + 5) % 8], ring[($t / 2 + 4) % 8]); // W[t-7], W[t-6]
                let c = _mm_alignr_epi8::<8>(ring[($t / 2 + 1) % 8], ring[slot]); // W[t-15], W[t-14]
                let sigma1 = _mm_xor_si128(_mm_xor_si128(ror2!(a, 19), ror2!(a, 61)), _mm_srli_epi64::<6>(a));
                let sigma0 = _mm_xor_si128(_mm_xor_si128(ror2!(c, 1), ror2!(c, 8)), _mm_srli_epi64::<7>(c));
                let mut pair = _mm_add_epi64(_mm_add_epi64(sigma1, b), _mm_add_epi64(sigma0, ring[slot]));
                // SAFETY: an empty template, as in `aes_rounds`.
                unsafe {
                    core::arch::asm!(
                        "/* {0} {1} */",
                        inout(xmm_reg) pair,
                        inout(reg) $tied,
                        options(pure, nomem, nostack, preserves_flags)
                    )
                };
                ring[slot] = pair;
                // SAFETY: $t + 1 < 80: inside K and wk.
                unsafe {
                    let k = _mm_loadu_si128(K.as_ptr().add($t).cast());
                    _mm_storeu_si128(wk_at.add($t).cast(), _mm_add_epi64(pair, k));
                }
            }
        };
    }

    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *state;
    let mut bc = b ^ c;

    macro_rules! round {
        ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $t:expr) => {
            let t1 = $h
                .wrapping_add($e.rotate_right(14) ^ $e.rotate_right(18) ^ $e.rotate_right(41))
                .wrapping_add(($e & $f) ^ (!$e & $g))
                // SAFETY: $t < 80; written above (t < 16) or by schedule_pair!(t - 16).
                .wrapping_add(unsafe { wk_at.add($t).read() });
            // Maj(a, b, c) = ((a ^ b) & (b ^ c)) ^ b, where b ^ c is the previous round's
            // a ^ b: three operations instead of four or five.
            let ab = $a ^ $b;
            let t2 = ($a.rotate_right(28) ^ $a.rotate_right(34) ^ $a.rotate_right(39))
                .wrapping_add((ab & bc) ^ $b);
            bc = ab;
            $d = $d.wrapping_add(t1);
            $h = t1.wrapping_add(t2);
            if WITH_AES {
                aes_rounds!($t, $d);
            }
            schedule_pair!($t + 16, $h);
        };
    }
    sha512_rounds!(round, a, b, c, d, e, f, g, h);

    for (word, add) in state.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *word = word.wrapping_add(add);
    }
    chain.previous = previous;
    if SECRET_WORDS {
        wk.zeroize();
        ring = [_mm_setzero_si128(); 8];
        core::hint::black_box(&ring);
    }
    if WITH_AES {
        // The spare blocks are encryptions of values that are not on disk: the last
        // block's ciphertext, then zero (E_k(0), a check value for the key).
        spare.zeroize();
    }
}

pub(super) const H0: [u64; 8] = [
    0x6a09e667f3bcc908,
    0xbb67ae8584caa73b,
    0x3c6ef372fe94f82b,
    0xa54ff53a5f1d36f1,
    0x510e527fade682d1,
    0x9b05688c2b3e6c1f,
    0x1f83d9abfb41bd6b,
    0x5be0cd19137e2179,
];

/// SHA-512's round constants (FIPS 180-4, section 4.2.3).
pub(super) const K: [u64; 80] = [
    0x428a2f98d728ae22,
    0x7137449123ef65cd,
    0xb5c0fbcfec4d3b2f,
    0xe9b5dba58189dbbc,
    0x3956c25bf348b538,
    0x59f111f1b605d019,
    0x923f82a4af194f9b,
    0xab1c5ed5da6d8118,
    0xd807aa98a3030242,
    0x12835b0145706fbe,
    0x243185be4ee4b28c,
    0x550c7dc3d5ffb4e2,
    0x72be5d74f27b896f,
    0x80deb1fe3b1696b1,
    0x9bdc06a725c71235,
    0xc19bf174cf692694,
    0xe49b69c19ef14ad2,
    0xefbe4786384f25e3,
    0x0fc19dc68b8cd5b5,
    0x240ca1cc77ac9c65,
    0x2de92c6f592b0275,
    0x4a7484aa6ea6e483,
    0x5cb0a9dcbd41fbd4,
    0x76f988da831153b5,
    0x983e5152ee66dfab,
    0xa831c66d2db43210,
    0xb00327c898fb213f,
    0xbf597fc7beef0ee4,
    0xc6e00bf33da88fc2,
    0xd5a79147930aa725,
    0x06ca6351e003826f,
    0x142929670a0e6e70,
    0x27b70a8546d22ffc,
    0x2e1b21385c26c926,
    0x4d2c6dfc5ac42aed,
    0x53380d139d95b3df,
    0x650a73548baf63de,
    0x766a0abb3c77b2a8,
    0x81c2c92e47edaee6,
    0x92722c851482353b,
    0xa2bfe8a14cf10364,
    0xa81a664bbc423001,
    0xc24b8b70d0f89791,
    0xc76c51a30654be30,
    0xd192e819d6ef5218,
    0xd69906245565a910,
    0xf40e35855771202a,
    0x106aa07032bbd1b8,
    0x19a4c116b8d2d0c8,
    0x1e376c085141ab53,
    0x2748774cdf8eeb99,
    0x34b0bcb5e19b48a8,
    0x391c0cb3c5c95a63,
    0x4ed8aa4ae3418acb,
    0x5b9cca4f7763e373,
    0x682e6ff3d6b2b8a3,
    0x748f82ee5defb2fc,
    0x78a5636f43172f60,
    0x84c87814a1f0ab72,
    0x8cc702081a6439ec,
    0x90befffa23631e28,
    0xa4506cebde82bde9,
    0xbef9a3f7b2c67915,
    0xc67178f2e372532b,
    0xca273eceea26619c,
    0xd186b8c721c0c207,
    0xeada7dd6cde0eb1e,
    0xf57d4f7fee6ed178,
    0x06f067aa72176fba,
    0x0a637dc5a2c898a6,
    0x113f9804bef90dae,
    0x1b710b35131c471b,
    0x28db77f523047d84,
    0x32caab7b40c72493,
    0x3c9ebe0a15c9bebc,
    0x431d67c49c100d4c,
    0x4cc5d4becb3e42b6,
    0x597f299cfc657e2a,
    0x5fcb6fab3ad6faec,
    0x6c44198c4a475817,
];
