//! SHA-512 compression of four independent messages at once, one per 64-bit lane of the
//! AVX2 registers: the page checks of a read-ahead (`PageCodec::authenticate_pages`).
//!
//! A page check is an HMAC-SHA512 over ~4 KiB, and SHA-512 on one message keeps the
//! integer ALUs busy (about 135 ns per block here); four pages in the vector unit cost
//! about as much as one and a half. Constant time: no data-dependent branch or index.

use core::arch::x86_64::{
    __m256i, _mm256_add_epi64, _mm256_and_si256, _mm256_andnot_si256, _mm256_loadu_si256,
    _mm256_or_si256, _mm256_permute2x128_si256, _mm256_ror_epi64, _mm256_set1_epi64x,
    _mm256_setr_epi8, _mm256_shuffle_epi8, _mm256_slli_epi64, _mm256_srli_epi64,
    _mm256_storeu_si256, _mm256_ternarylogic_epi64, _mm256_unpackhi_epi64, _mm256_unpacklo_epi64,
    _mm256_xor_si256,
};

use super::stitched::K;

cpufeatures::new!(avx2_cpuid, "avx2");

/// Whether this CPU has AVX2.
pub(super) fn available() -> bool {
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

/// The compression, for one set of target features and its rotate and three-way XOR.
macro_rules! define_compress {
    ($name:ident, $features:literal, $ror:ident, $xor3:ident) => {
/// Compresses one 128-byte block per lane, `blocks[l]` into lane `l`.
///
/// # Safety
/// The CPU has the target features.
// The last round's `bc` is never read.
#[allow(unused_assignments)]
#[target_feature(enable = $features)]
unsafe fn $name(states: &mut States, blocks: [&[u8; 128]; 4]) {
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
        };
    }
    sha512_rounds!(round, a, b, c, d, e, f, g, h);

    for (word, add) in states.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *word = _mm256_add_epi64(*word, add);
    }
    w = [_mm256_set1_epi64x(0); 16];
    core::hint::black_box(&w);
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

define_compress!(compress_avx2, "avx2", ror_avx2, xor3_avx2);
define_compress!(
    compress_avx512,
    "avx2,avx512f,avx512vl",
    ror_avx512,
    xor3_avx512
);

cpufeatures::new!(avx512vl_cpuid, "avx2", "avx512f", "avx512vl");

/// Whether the compression runs on AVX-512VL (its rotates and three-way XOR): four lanes
/// then cost little more than one message on the integer ALUs.
pub(super) fn has_avx512vl() -> bool {
    avx512vl_cpuid::get()
}

/// Compresses one 128-byte block per lane, `blocks[l]` into lane `l`: with AVX-512VL's
/// rotates where the CPU has them (a third fewer instructions), else AVX2's.
///
/// # Safety
/// The CPU has AVX2.
pub(super) unsafe fn compress(states: &mut States, blocks: [&[u8; 128]; 4]) {
    if avx512vl_cpuid::get() {
        // SAFETY: just checked.
        unsafe { compress_avx512(states, blocks) }
    } else {
        // SAFETY: the caller's guarantee.
        unsafe { compress_avx2(states, blocks) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both builds of the compression give the same states (the one this CPU runs is also
    /// checked against the `hmac` crate by `stitched::tests`).
    #[test]
    fn the_avx2_and_avx512_builds_agree() {
        if !avx512vl_cpuid::get() {
            eprintln!("this CPU lacks AVX-512VL: only the AVX2 build runs here");
            return;
        }
        let blocks: Vec<[u8; 128]> = (0..4u8)
            .map(|lane| core::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(lane)))
            .collect();
        let start: [u64; 8] =
            core::array::from_fn(|i| 0x0123_4567_89ab_cdef_u64.rotate_left(i as u32 * 7));
        // SAFETY: AVX-512VL (and so AVX2) was checked above.
        unsafe {
            let mut one = broadcast(&start);
            let mut other = one;
            for _ in 0..3 {
                compress_avx2(&mut one, [&blocks[0], &blocks[1], &blocks[2], &blocks[3]]);
                compress_avx512(&mut other, [&blocks[0], &blocks[1], &blocks[2], &blocks[3]]);
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
}
