//! SHA-512 compression of four independent messages at once, one per 64-bit lane of the
//! AVX2 registers: the page checks of a read-ahead (`PageCodec::authenticate_pages`).
//!
//! A page check is an HMAC-SHA512 over ~4 KiB, and SHA-512 on one message keeps the
//! integer ALUs busy (about 135 ns per block here); four pages in the vector unit cost
//! about as much as one and a half. Constant time: no data-dependent branch or index.

use core::arch::x86_64::{
    __m256i, _mm256_add_epi64, _mm256_and_si256, _mm256_andnot_si256, _mm256_loadu_si256,
    _mm256_or_si256, _mm256_permute2x128_si256, _mm256_set1_epi64x, _mm256_setr_epi8,
    _mm256_shuffle_epi8, _mm256_slli_epi64, _mm256_srli_epi64, _mm256_storeu_si256,
    _mm256_unpackhi_epi64, _mm256_unpacklo_epi64, _mm256_xor_si256,
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

/// Compresses one 128-byte block per lane, `blocks[l]` into lane `l`.
///
/// # Safety
/// The CPU has AVX2.
// The last round's `bc` is never read.
#[allow(unused_assignments)]
#[target_feature(enable = "avx2")]
pub(super) unsafe fn compress(states: &mut States, blocks: [&[u8; 128]; 4]) {
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

    macro_rules! ror {
        ($x:expr, $n:literal) => {
            _mm256_or_si256(
                _mm256_srli_epi64::<$n>($x),
                _mm256_slli_epi64::<{ 64 - $n }>($x),
            )
        };
    }
    macro_rules! xor3 {
        ($a:expr, $b:expr, $c:expr) => {
            _mm256_xor_si256(_mm256_xor_si256($a, $b), $c)
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
                let sigma1 = xor3!(ror!(w2, 19), ror!(w2, 61), _mm256_srli_epi64::<6>(w2));
                let sigma0 = xor3!(ror!(w15, 1), ror!(w15, 8), _mm256_srli_epi64::<7>(w15));
                w[i] = _mm256_add_epi64(
                    _mm256_add_epi64(w[i], sigma1),
                    _mm256_add_epi64(w[(i + 9) % 16], sigma0),
                );
            }
            let big_sigma1 = xor3!(ror!($e, 14), ror!($e, 18), ror!($e, 41));
            let ch = _mm256_xor_si256(_mm256_and_si256($e, $f), _mm256_andnot_si256($e, $g));
            // The cast keeps the bits: `set1` takes an i64.
            let wk = _mm256_add_epi64(w[$t % 16], _mm256_set1_epi64x(K[$t] as i64));
            let t1 = _mm256_add_epi64(_mm256_add_epi64($h, big_sigma1), _mm256_add_epi64(ch, wk));
            let big_sigma0 = xor3!(ror!($a, 28), ror!($a, 34), ror!($a, 39));
            // Maj(a, b, c) = ((a ^ b) & (b ^ c)) ^ b, b ^ c being the previous round's a ^ b.
            let ab = _mm256_xor_si256($a, $b);
            let maj = _mm256_xor_si256(_mm256_and_si256(ab, bc), $b);
            bc = ab;
            $d = _mm256_add_epi64($d, t1);
            $h = _mm256_add_epi64(t1, _mm256_add_epi64(big_sigma0, maj));
        };
    }
    macro_rules! eight_rounds {
        ($t:expr) => {
            round!(a, b, c, d, e, f, g, h, $t);
            round!(h, a, b, c, d, e, f, g, $t + 1);
            round!(g, h, a, b, c, d, e, f, $t + 2);
            round!(f, g, h, a, b, c, d, e, $t + 3);
            round!(e, f, g, h, a, b, c, d, $t + 4);
            round!(d, e, f, g, h, a, b, c, $t + 5);
            round!(c, d, e, f, g, h, a, b, $t + 6);
            round!(b, c, d, e, f, g, h, a, $t + 7);
        };
    }
    eight_rounds!(0);
    eight_rounds!(8);
    eight_rounds!(16);
    eight_rounds!(24);
    eight_rounds!(32);
    eight_rounds!(40);
    eight_rounds!(48);
    eight_rounds!(56);
    eight_rounds!(64);
    eight_rounds!(72);

    for (word, add) in states.iter_mut().zip([a, b, c, d, e, f, g, h]) {
        *word = _mm256_add_epi64(*word, add);
    }
    w = [_mm256_set1_epi64x(0); 16];
    core::hint::black_box(&w);
}
