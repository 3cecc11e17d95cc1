//! SHA-512 compression of four independent messages at once, one per 64-bit lane of the
//! AVX2 registers: the page checks of a read-ahead (`PageCodec::authenticate_pages`).
//!
//! A page check is an HMAC-SHA512 over a whole page, and SHA-512 on one message keeps the
//! integer ALUs busy while the vector unit idles; in the vector unit's four lanes, four
//! pages cost little more than one. With `WITH_AES` the compression also advances up to
//! four AES-NI CBC chains (`lanes`, pages encrypted together). Constant time: no
//! data-dependent branch or index.

use core::arch::x86_64::{
    __m128i, __m256i, _mm256_add_epi64, _mm256_and_si256, _mm256_andnot_si256, _mm256_loadu_si256,
    _mm256_or_si256, _mm256_permute2x128_si256, _mm256_ror_epi64, _mm256_set1_epi64x,
    _mm256_setr_epi8, _mm256_shuffle_epi8, _mm256_slli_epi64, _mm256_srli_epi64,
    _mm256_storeu_si256, _mm256_ternarylogic_epi64, _mm256_unpackhi_epi64, _mm256_unpacklo_epi64,
    _mm256_xor_si256, _mm_aesenc_si128, _mm_aesenclast_si128, _mm_loadu_si128, _mm_setzero_si128,
    _mm_storeu_si128, _mm_xor_si128,
};

use super::aesni::{AES_BLOCK, ROUND_KEYS};
use super::sha512::K;

cpufeatures::new!(avx2_cpuid, "avx2");

/// Whether this CPU has AVX2.
pub(crate) fn available() -> bool {
    avx2_cpuid::get()
}

/// Four SHA-512 states, word `i` of lane `l` in `state[i]` lane `l`.
pub(super) type States = [__m256i; 8];

/// Four copies of one state.
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn broadcast(state: &[u64; 8]) -> States {
    // The cast keeps the bits: `set1` takes an i64.
    state.map(|word| _mm256_set1_epi64x(word as i64))
}

/// Lane `lane` of `states` as a plain state.
///
/// # Safety
/// The CPU has AVX2.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn lane(states: &States, lane: usize) -> [u64; 8] {
    core::array::from_fn(|i| {
        let mut words = [0u64; 4];
        // SAFETY: 32 writable bytes; unaligned store.
        unsafe { _mm256_storeu_si256(words.as_mut_ptr().cast(), states[i]) };
        words[lane % 4]
    })
}

/// `N` AES-256-CBC chains that a compression advances on the way (see
/// [`compress_encrypting`]): the next `count` (at most 8) blocks at `at[l]` of each chain
/// are encrypted in place, chained from `previous[l]`.
pub(super) struct CbcLanes<const N: usize> {
    pub round_keys: [__m128i; ROUND_KEYS],
    pub previous: [__m128i; N],
    pub at: [*mut u8; N],
    pub count: usize,
}

impl<const N: usize> CbcLanes<N> {
    /// Chains with no work, for a compression without AES.
    fn idle() -> CbcLanes<N> {
        // SAFETY: SSE2 is part of x86-64.
        let zero = unsafe { _mm_setzero_si128() };
        CbcLanes {
            round_keys: [zero; ROUND_KEYS],
            previous: [zero; N],
            at: [core::ptr::null_mut(); N],
            count: 0,
        }
    }
}

/// The compression, for one set of target features and its rotate and three-way XOR;
/// with `WITH_AES`, the CBC chains' work is spread over its rounds.
macro_rules! define_compress {
    ($name:ident, $features:literal, $ror:ident, $xor3:ident) => {
/// Compresses one 128-byte block per lane, `blocks[l]` into lane `l`; with `WITH_AES`,
/// also encrypts the chains' next blocks (see [`CbcLanes`]).
///
/// # Safety
/// The CPU has the target features; with `WITH_AES`, each `at[l]` has `count` blocks,
/// readable and writable, that no block of `blocks` overlaps.
// The last round's `bc` and AES tie are never read.
#[allow(unused_assignments)]
#[target_feature(enable = $features)]
unsafe fn $name<const N: usize, const WITH_AES: bool>(
    states: &mut States,
    blocks: [&[u8; 128]; 4],
    lanes: &mut CbcLanes<N>,
) {
    // Big-endian words: reverse the bytes of each 64-bit word.
    let swap = _mm256_setr_epi8(
        7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13,
        12, 11, 10, 9, 8,
    );
    let mut w = [_mm256_set1_epi64x(0); 16];
    for group in 0..4 {
        // SAFETY: each block is 128 bytes; group * 32 + 32 <= 128; unaligned loads.
        let [r0, r1, r2, r3] = blocks
            .map(|block| unsafe { _mm256_loadu_si256(block.as_ptr().add(group * 32).cast()) });
        // A 4×4 transpose of 64-bit words: lane l of column k is word 4·group + k of block l.
        let t0 = _mm256_unpacklo_epi64(r0, r1);
        let t1 = _mm256_unpackhi_epi64(r0, r1);
        let t2 = _mm256_unpacklo_epi64(r2, r3);
        let t3 = _mm256_unpackhi_epi64(r2, r3);
        w[4 * group] = _mm256_shuffle_epi8(_mm256_permute2x128_si256::<0x20>(t0, t2), swap);
        w[4 * group + 1] = _mm256_shuffle_epi8(_mm256_permute2x128_si256::<0x20>(t1, t3), swap);
        w[4 * group + 2] = _mm256_shuffle_epi8(_mm256_permute2x128_si256::<0x31>(t0, t2), swap);
        w[4 * group + 3] = _mm256_shuffle_epi8(_mm256_permute2x128_si256::<0x31>(t1, t3), swap);
    }


    // The AES work of round `t`, as in `sha512::compress`: block t / 10 of each chain,
    // step t % 10 of its 15 operations, two then one alternately; blocks past `count` go
    // through `spare` and are thrown away, so no branch gathers the AES work in one place.
    // The empty `asm!` ties each chain's state to the SHA state at every round, so that
    // the compiler keeps the AES operations spread among the rounds.
    let round_keys = &lanes.round_keys;
    let mut previous = lanes.previous;
    let mut aes = [_mm_setzero_si128(); N];
    let mut spare = [[0u8; AES_BLOCK]; N];
    let spare_at: [*mut u8; N] = core::array::from_fn(|l| spare[l].as_mut_ptr());
    macro_rules! aes_rounds {
        ($t:expr, $tied:ident) => {
            let block: usize = $t / 10;
            let step: usize = $t % 10;
            for l in 0..N {
                let at = if block < lanes.count {
                    lanes.at[l].wrapping_add(block * AES_BLOCK)
                } else {
                    spare_at[l]
                }
                .cast::<__m128i>();
                for op in (3 * step).div_ceil(2)..(3 * step + 3).div_ceil(2) {
                    if op == 0 {
                        // SAFETY: `at` is a block of chain l (the caller's guarantee) or
                        // `spare`; unaligned load.
                        let plain = unsafe { _mm_loadu_si128(at) };
                        aes[l] = _mm_xor_si128(_mm_xor_si128(plain, previous[l]), round_keys[0]);
                    } else if op < ROUND_KEYS - 1 {
                        aes[l] = _mm_aesenc_si128(aes[l], round_keys[op]);
                    } else {
                        aes[l] = _mm_aesenclast_si128(aes[l], round_keys[op]);
                        // SAFETY: as above; unaligned store.
                        unsafe { _mm_storeu_si128(at, aes[l]) };
                        previous[l] = aes[l];
                    }
                }
                // SAFETY: an empty template: no instruction, no memory or flags touched.
                unsafe {
                    core::arch::asm!(
                        "/* {0} {1} */",
                        inout(xmm_reg) aes[l],
                        inout(ymm_reg) $tied,
                        options(pure, nomem, nostack, preserves_flags)
                    )
                };
            }
        };
    }

    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = *states;
    let mut bc = _mm256_xor_si256(b, c);
    macro_rules! round {
        ($a:ident, $b:ident, $c:ident, $d:ident, $e:ident, $f:ident, $g:ident, $h:ident, $t:expr) => {
            if $t >= 16 {
                let i = $t % 16;
                let w2 = w[(i + 14) % 16];
                let w15 = w[(i + 1) % 16];
                let sigma1 = $xor3!($ror!(w2, 19), $ror!(w2, 61), _mm256_srli_epi64::<6>(w2));
                let sigma0 = $xor3!($ror!(w15, 1), $ror!(w15, 8), _mm256_srli_epi64::<7>(w15));
                w[i] = _mm256_add_epi64(
                    _mm256_add_epi64(w[i], sigma1),
                    _mm256_add_epi64(w[(i + 9) % 16], sigma0),
                );
            }
            let big_sigma1 = $xor3!($ror!($e, 14), $ror!($e, 18), $ror!($e, 41));
            let ch = _mm256_xor_si256(_mm256_and_si256($e, $f), _mm256_andnot_si256($e, $g));
            // The cast keeps the bits: `set1` takes an i64.
            let wk = _mm256_add_epi64(w[$t % 16], _mm256_set1_epi64x(K[$t] as i64));
            let t1 = _mm256_add_epi64(_mm256_add_epi64($h, big_sigma1), _mm256_add_epi64(ch, wk));
            let big_sigma0 = $xor3!($ror!($a, 28), $ror!($a, 34), $ror!($a, 39));
            // Maj(a, b, c) = ((a ^ b) & (b ^ c)) ^ b, b ^ c being the previous round's a ^ b.
            let ab = _mm256_xor_si256($a, $b);
            let maj = _mm256_xor_si256(_mm256_and_si256(ab, bc), $b);
            bc = ab;
            $d = _mm256_add_epi64($d, t1);
            $h = _mm256_add_epi64(t1, _mm256_add_epi64(big_sigma0, maj));
            if WITH_AES {
                aes_rounds!($t, $d);
            }
        };
    }
    sha512_rounds!(round, a, b, c, d, e, f, g, h);

    for (word, add) in states.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *word = _mm256_add_epi64(*word, add);
    }
    lanes.previous = previous;
    w = [_mm256_set1_epi64x(0); 16];
    core::hint::black_box(&w);
    // The spare blocks, and after the last chunk `previous`, hold encryptions of values
    // that are not on disk (E_k(0) among them, a check value for the key).
    spare = [[0; AES_BLOCK]; N];
    core::hint::black_box(&spare);
    previous = [_mm_setzero_si128(); N];
    core::hint::black_box(&previous);
}
    };
}

/// Rotate right and three-way XOR with AVX2 alone: two shifts and an OR; two XORs.
macro_rules! ror_avx2 {
    ($x:expr, $n:literal) => {
        _mm256_or_si256(
            _mm256_srli_epi64::<$n>($x),
            _mm256_slli_epi64::<{ 64 - $n }>($x),
        )
    };
}
macro_rules! xor3_avx2 {
    ($a:expr, $b:expr, $c:expr) => {
        _mm256_xor_si256(_mm256_xor_si256($a, $b), $c)
    };
}
/// The same with AVX-512VL: one rotate; one ternary-logic instruction (0x96: a ^ b ^ c).
macro_rules! ror_avx512 {
    ($x:expr, $n:literal) => {
        _mm256_ror_epi64::<$n>($x)
    };
}
macro_rules! xor3_avx512 {
    ($a:expr, $b:expr, $c:expr) => {
        _mm256_ternarylogic_epi64::<0x96>($a, $b, $c)
    };
}

// With AES-NI in both: every call starts in a method of `stitched::StitchedKeys`, which exists
// only on a CPU that has it.
define_compress!(compress_avx2, "avx2,aes", ror_avx2, xor3_avx2);
define_compress!(
    compress_avx512,
    "avx2,avx512f,avx512vl,aes",
    ror_avx512,
    xor3_avx512
);

cpufeatures::new!(avx512vl_cpuid, "avx2", "avx512f", "avx512vl");

/// Whether the compression runs on AVX-512VL (its rotates and three-way XOR): four lanes
/// then cost little more than one message on the integer ALUs.
pub(crate) fn has_avx512vl() -> bool {
    avx512vl_cpuid::get()
}

/// Compresses one 128-byte block per lane, `blocks[l]` into lane `l`: with AVX-512VL's
/// rotates where the CPU has them (a third fewer instructions), else AVX2's.
///
/// # Safety
/// The CPU has AVX2 and AES-NI.
pub(super) unsafe fn compress(states: &mut States, blocks: [&[u8; 128]; 4]) {
    let idle = &mut CbcLanes::<1>::idle();
    if avx512vl_cpuid::get() {
        // SAFETY: just checked, and the caller's guarantee.
        unsafe { compress_avx512::<1, false>(states, blocks, idle) }
    } else {
        // SAFETY: the caller's guarantee.
        unsafe { compress_avx2::<1, false>(states, blocks, idle) }
    }
}

/// [`compress`], encrypting on the way the next blocks of `N` CBC chains (see
/// [`CbcLanes`]): their AES work runs in the gaps of the SHA rounds' dependency chains.
///
/// # Safety
/// The CPU has AVX2 and AES-NI; each `lanes.at[l]` has `lanes.count` (at most 8) blocks,
/// readable and writable, that no block of `blocks` overlaps.
pub(super) unsafe fn compress_encrypting<const N: usize>(
    states: &mut States,
    blocks: [&[u8; 128]; 4],
    lanes: &mut CbcLanes<N>,
) {
    if avx512vl_cpuid::get() {
        // SAFETY: just checked, and the caller's guarantee.
        unsafe { compress_avx512::<N, true>(states, blocks, lanes) }
    } else {
        // SAFETY: the caller's guarantee.
        unsafe { compress_avx2::<N, true>(states, blocks, lanes) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both builds of the compression give the same states (the one this CPU runs is also
    /// checked against the `hmac` crate by `stitched::tests`).
    #[test]
    fn the_avx2_and_avx512_builds_agree() {
        // Both builds enable AES-NI too (their callers are `StitchedKeys` methods).
        if !avx512vl_cpuid::get() || !std::arch::is_x86_feature_detected!("aes") {
            eprintln!("this CPU lacks AVX-512VL or AES-NI: only one build runs here");
            return;
        }
        let blocks: Vec<[u8; 128]> = (0..4u8)
            .map(|lane| core::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(lane)))
            .collect();
        let start: [u64; 8] =
            core::array::from_fn(|i| 0x0123_4567_89ab_cdef_u64.rotate_left(i as u32 * 7));
        // SAFETY: AVX-512VL (and so AVX2) and AES-NI were checked above.
        unsafe {
            let mut one = broadcast(&start);
            let mut other = one;
            for _ in 0..3 {
                let four = [&blocks[0], &blocks[1], &blocks[2], &blocks[3]];
                compress_avx2::<1, false>(&mut one, four, &mut CbcLanes::idle());
                compress_avx512::<1, false>(&mut other, four, &mut CbcLanes::idle());
            }
            for lane_index in 0..4 {
                assert_eq!(
                    lane(&one, lane_index),
                    lane(&other, lane_index),
                    "lane {lane_index}"
                );
            }
            assert_ne!(lane(&one, 0), lane(&one, 1), "the lanes are independent");
        }
    }

    /// The same with CBC chains encrypted on the way: both builds leave the same states
    /// and the same ciphertext, for a whole chunk and a short one (the AES work itself is
    /// checked against the `aes` and `hmac` crates by `stitched::tests`).
    #[test]
    fn the_avx2_and_avx512_builds_agree_while_encrypting() {
        if !avx512vl_cpuid::get() || !std::arch::is_x86_feature_detected!("aes") {
            eprintln!("this CPU lacks AVX-512VL or AES-NI: only one build runs here");
            return;
        }
        let blocks: Vec<[u8; 128]> = (0..4u8)
            .map(|lane| core::array::from_fn(|i| (i as u8).wrapping_mul(11).wrapping_add(lane)))
            .collect();
        let four = [&blocks[0], &blocks[1], &blocks[2], &blocks[3]];
        for count in [8usize, 3] {
            let plain: Vec<u8> = (0..2 * 128).map(|i| (i * 29 + count) as u8).collect();
            let mut outputs = Vec::new();
            for avx512 in [false, true] {
                let mut regions = plain.clone();
                let (first, second) = regions.split_at_mut(128);
                // SAFETY: AES-NI and AVX-512VL were checked above; each chain has 8 blocks
                // (at least `count`), apart from the hashed blocks.
                unsafe {
                    let key = _mm_setzero_si128();
                    let mut lanes = CbcLanes::<2> {
                        round_keys: core::array::from_fn(|r| {
                            _mm_xor_si128(key, _mm_loadu_si128([r as u8 + 1; 16].as_ptr().cast()))
                        }),
                        previous: [_mm_loadu_si128([7u8; 16].as_ptr().cast()); 2],
                        at: [first.as_mut_ptr(), second.as_mut_ptr()],
                        count,
                    };
                    let mut states = broadcast(&[0x6a09_e667_f3bc_c908; 8]);
                    if avx512 {
                        compress_avx512::<2, true>(&mut states, four, &mut lanes);
                    } else {
                        compress_avx2::<2, true>(&mut states, four, &mut lanes);
                    }
                    outputs.push((
                        regions.clone(),
                        (0..4).map(|l| lane(&states, l)).collect::<Vec<_>>(),
                    ));
                }
            }
            assert_eq!(outputs[0], outputs[1], "{count} blocks");
            let (ciphertext, _) = &outputs[0];
            assert_ne!(ciphertext[..16 * count], plain[..16 * count], "encrypted");
            assert_eq!(
                ciphertext[16 * count..128],
                plain[16 * count..128],
                "only `count` blocks"
            );
        }
    }
}
