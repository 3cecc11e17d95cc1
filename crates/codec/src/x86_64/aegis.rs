//! AEGIS-256 pages (docs/aegis-format.md §2) with AES-NI: the one-time key derivation and
//! the page's AEAD pass in one function, the six state blocks in vector registers; and
//! AEGIS-128L pages the same way ([`page_pass_128l`], eight state blocks), whose portable
//! state (`crate::aegisx`) goes through the `aes` crate's round call too. The
//! portable `crate::aegis256` state gives the same bytes on every CPU; this pass replaces
//! it where the CPU has AES-NI (`crate::aegis_page` chooses once per key), because that one
//! moves the state through the `aes` crate's eight-block round call, with a feature check
//! and copies on every 16-byte update.
//!
//! Two pages can go through at once ([`page_pass2`]): an update's six AES rounds depend on
//! the previous update's, so one page waits on the round latency; a second page's
//! independent rounds fill the wait. Encryption uses it (a commit's pages); decryption,
//! whose chain per update is longer, does not: twelve state blocks and their temporaries
//! spill out of x86-64's sixteen vector registers, and one page at a time measured faster.
//!
//! Constant time: AES-NI has no data-dependent branch or memory index, and nothing here
//! branches on or indexes by the key, the nonce or the data.

use core::arch::x86_64::{
    __m128i, _mm_aesenc_si128, _mm_and_si128, _mm_loadu_si128, _mm_or_si128, _mm_set_epi32,
    _mm_set_epi64x, _mm_setzero_si128, _mm_storeu_si128, _mm_xor_si128,
};

use crate::aegis256::{Mode, Region, AEGIS256_KEY_SIZE, AEGIS256_NONCE_SIZE, AEGIS256_TAG_SIZE};

cpufeatures::new!(aegis_cpuid, "aes", "sse2");

/// Whether this CPU runs the AES-NI pass.
pub(crate) fn available() -> bool {
    aegis_cpuid::get()
}

type State = [__m128i; 6];

/// AEGIS-256's constant `C0` (the Fibonacci bytes mod 256), as a little-endian load.
const C0: [u8; 16] = [
    0x00, 0x01, 0x01, 0x02, 0x03, 0x05, 0x08, 0x0d, 0x15, 0x22, 0x37, 0x59, 0x90, 0xe9, 0x79, 0x62,
];
/// AEGIS-256's constant `C1`.
const C1: [u8; 16] = [
    0xdb, 0x3d, 0x18, 0x55, 0x6d, 0xc2, 0x2f, 0xf1, 0x20, 0x11, 0x31, 0x42, 0x73, 0xb5, 0x28, 0xdd,
];

#[target_feature(enable = "aes,sse2")]
#[inline]
fn load(bytes: &[u8; 16]) -> __m128i {
    // SAFETY: `bytes` is 16 readable bytes; the load is unaligned.
    unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
}

#[target_feature(enable = "aes,sse2")]
#[inline]
fn store(bytes: &mut [u8; 16], block: __m128i) {
    // SAFETY: `bytes` is 16 writable bytes; the store is unaligned.
    unsafe { _mm_storeu_si128(bytes.as_mut_ptr().cast(), block) }
}

/// `Update(M)`: `S'0 = AESRound(S5, S0 ^ M)`, `S'i = AESRound(S(i-1), Si)`.
#[target_feature(enable = "aes,sse2")]
#[inline]
fn update(s: &mut State, m: __m128i) {
    update_with_round_key(s, _mm_xor_si128(s[0], m));
}

/// [`update`] given `S0 ^ M`, the round key of the new `S0`: decryption computes it with
/// a shorter dependency chain than `S0 ^ (C ^ keystream)`.
#[target_feature(enable = "aes,sse2")]
#[inline]
fn update_with_round_key(s: &mut State, s0_m: __m128i) {
    let s5 = s[5];
    s[5] = _mm_aesenc_si128(s[4], s[5]);
    s[4] = _mm_aesenc_si128(s[3], s[4]);
    s[3] = _mm_aesenc_si128(s[2], s[3]);
    s[2] = _mm_aesenc_si128(s[1], s[2]);
    s[1] = _mm_aesenc_si128(s[0], s[1]);
    s[0] = _mm_aesenc_si128(s5, s0_m);
}

/// `S1 ^ S4 ^ S5 ^ (S2 & S3)`.
#[target_feature(enable = "aes,sse2")]
#[inline]
fn keystream(s: &State) -> __m128i {
    _mm_xor_si128(
        _mm_xor_si128(s[1], s[4]),
        _mm_xor_si128(s[5], _mm_and_si128(s[2], s[3])),
    )
}

/// The state after `Init(key, nonce)`, key and nonce as their two halves.
#[target_feature(enable = "aes,sse2")]
#[inline]
fn init(k0: __m128i, k1: __m128i, n0: __m128i, n1: __m128i) -> State {
    let (c0, c1) = (load(&C0), load(&C1));
    let (k0n0, k1n1) = (_mm_xor_si128(k0, n0), _mm_xor_si128(k1, n1));
    let mut s = [
        k0n0,
        k1n1,
        c1,
        c0,
        _mm_xor_si128(k0, c0),
        _mm_xor_si128(k1, c1),
    ];
    for _ in 0..4 {
        update(&mut s, k0);
        update(&mut s, k1);
        update(&mut s, k0n0);
        update(&mut s, k1n1);
    }
    s
}

/// `AegisGenOtk` then `Init`: the state page `pgno` is encrypted under, from the database
/// key and the page's stored nonce (the first 64 bytes of AEGIS-256's key stream for
/// them, the last four replaced by the page number, big-endian).
#[target_feature(enable = "aes,sse2")]
#[inline]
fn page_state(
    key: &[u8; AEGIS256_KEY_SIZE],
    nonce: &[u8; AEGIS256_NONCE_SIZE],
    pgno: u32,
) -> State {
    let half = |bytes: &[u8; 32], which: usize| -> [u8; 16] {
        core::array::from_fn(|i| bytes[which * 16 + i])
    };
    let mut s = init(
        load(&half(key, 0)),
        load(&half(key, 1)),
        load(&half(nonce, 0)),
        load(&half(nonce, 1)),
    );
    let zero = _mm_setzero_si128();
    let mut otk = [zero; 4];
    for block in &mut otk {
        // The stream encrypts zeros: the output is the key stream, the absorbed block zero.
        *block = keystream(&s);
        update(&mut s, zero);
    }
    // Bytes 12..16 of the last block (the one-time nonce's last four) become the page
    // number, big-endian: as a little-endian lane that is the byte-swapped number.
    let keep = _mm_set_epi32(0, -1, -1, -1);
    let number = _mm_set_epi32(pgno.swap_bytes() as i32, 0, 0, 0);
    otk[3] = _mm_or_si128(_mm_and_si128(otk[3], keep), number);
    init(otk[0], otk[1], otk[2], otk[3])
}

/// One 16-byte block of `mode` on state `s`: returns what goes back into the region
/// (ciphertext, plaintext, or the input for `Absorb`).
#[target_feature(enable = "aes,sse2")]
#[inline]
fn block(s: &mut State, mode: Mode, input: __m128i) -> __m128i {
    let z = keystream(s);
    let out = _mm_xor_si128(input, z);
    match mode {
        Mode::Encrypt => {
            update(s, input);
            out
        }
        Mode::Decrypt | Mode::Absorb => {
            // `S0 ^ M` with `M = C ^ S1 ^ S4 ^ S5 ^ (S2 & S3)`, grouped so that the AES
            // round waits on three operations after the state, not on the whole key
            // stream and then two more: a decrypted page's updates are one chain.
            let s0_m = _mm_xor_si128(
                _mm_xor_si128(_mm_xor_si128(s[0], input), _mm_xor_si128(s[1], s[4])),
                _mm_xor_si128(s[5], _mm_and_si128(s[2], s[3])),
            );
            update_with_round_key(s, s0_m);
            if mode == Mode::Decrypt {
                out
            } else {
                input
            }
        }
    }
}

/// The partial last block of `mode` (`tail` shorter than 16 bytes, zero-padded): the
/// padding absorbed as zeros, the output truncated by the caller, as the draft specifies.
#[target_feature(enable = "aes,sse2")]
#[inline]
fn tail_block(s: &mut State, mode: Mode, tail: &[u8]) -> [u8; 16] {
    let mut padded = [0u8; 16];
    padded[..tail.len()].copy_from_slice(tail);
    let input = load(&padded);
    let mut out = [0u8; 16];
    store(&mut out, _mm_xor_si128(input, keystream(s)));
    if mode == Mode::Encrypt {
        update(s, input);
    } else {
        // The key stream past the tail is not plaintext: absorbed as zeros.
        out[tail.len()..].fill(0);
        update(s, load(&out));
    }
    zeroize::Zeroize::zeroize(&mut padded);
    out
}

/// `Finalize` with no associated data and `msg_len` bytes of message: the 256-bit tag.
#[target_feature(enable = "aes,sse2")]
#[inline]
fn finalize(s: &mut State, msg_len: usize) -> [u8; AEGIS256_TAG_SIZE] {
    let lengths = _mm_set_epi64x(((msg_len as u64) << 3) as i64, 0);
    let t = _mm_xor_si128(s[3], lengths);
    for _ in 0..7 {
        update(s, t);
    }
    let mut halves = [[0u8; 16]; 2];
    store(
        &mut halves[0],
        _mm_xor_si128(_mm_xor_si128(s[0], s[1]), s[2]),
    );
    store(
        &mut halves[1],
        _mm_xor_si128(_mm_xor_si128(s[3], s[4]), s[5]),
    );
    let mut tag = [0u8; AEGIS256_TAG_SIZE];
    tag[..16].copy_from_slice(&halves[0]);
    tag[16..].copy_from_slice(&halves[1]);
    tag
}

/// Block `i` of `region` (the caller keeps `i < len / 16`).
#[target_feature(enable = "aes,sse2")]
#[inline]
fn read(region: &Region<'_>, i: usize) -> __m128i {
    let bytes = region.bytes();
    assert!(i * 16 + 16 <= bytes.len());
    // SAFETY: bytes `16 i .. 16 i + 16` are inside `bytes` (checked above, and the check
    // folds away in the callers' loops); unaligned load.
    unsafe { _mm_loadu_si128(bytes.as_ptr().add(i * 16).cast()) }
}

/// Writes block `i` of `region` where the region is written.
#[target_feature(enable = "aes,sse2")]
#[inline]
fn write(region: &mut Region<'_>, i: usize, block: __m128i) {
    if let Region::InPlace(bytes) = region {
        assert!(i * 16 + 16 <= bytes.len());
        // SAFETY: as in `read`, writable; unaligned store.
        unsafe { _mm_storeu_si128(bytes.as_mut_ptr().add(i * 16).cast(), block) }
    }
}

/// Runs `mode` over the blocks `from ..` of `region`, the partial last block included.
#[target_feature(enable = "aes,sse2")]
#[inline]
fn run_from(region: &mut Region<'_>, s: &mut State, mode: Mode, from: usize) {
    let blocks = region.len() / 16;
    for i in from..blocks {
        let out = block(s, mode, read(region, i));
        write(region, i, out);
    }
    let whole = blocks * 16;
    if region.len() > whole {
        let mut out = tail_block(s, mode, &region.bytes()[whole..]);
        if let Region::InPlace(bytes) = region {
            let tail = &mut bytes[whole..];
            let n = tail.len();
            tail.copy_from_slice(&out[..n]);
        }
        zeroize::Zeroize::zeroize(&mut out);
    }
}

/// One page: derives page `pgno`'s one-time key and nonce from `key` and the page's
/// stored `nonce`, runs `mode` over `region` and returns the tag.
///
/// # Safety
/// The CPU has AES-NI and SSE2 ([`available`]).
#[target_feature(enable = "aes,sse2")]
pub(crate) unsafe fn page_pass(
    key: &[u8; AEGIS256_KEY_SIZE],
    pgno: u32,
    nonce: &[u8; AEGIS256_NONCE_SIZE],
    mut region: Region<'_>,
    mode: Mode,
) -> [u8; AEGIS256_TAG_SIZE] {
    let mut s = page_state(key, nonce, pgno);
    run_from(&mut region, &mut s, mode, 0);
    let tag = finalize(&mut s, region.len());
    s = [_mm_setzero_si128(); 6];
    core::hint::black_box(&s);
    tag
}

/// [`page_pass`] over two pages at once, their updates interleaved (see the module doc);
/// the same bytes and tags as two calls. The regions may differ in length (page 1's is
/// shorter).
///
/// # Safety
/// The CPU has AES-NI and SSE2 ([`available`]).
#[target_feature(enable = "aes,sse2")]
pub(crate) unsafe fn page_pass2(
    key: &[u8; AEGIS256_KEY_SIZE],
    pages: [(u32, &[u8; AEGIS256_NONCE_SIZE], Region<'_>); 2],
    mode: Mode,
) -> [[u8; AEGIS256_TAG_SIZE]; 2] {
    let [(pgno_a, nonce_a, mut a), (pgno_b, nonce_b, mut b)] = pages;
    let mut sa = page_state(key, nonce_a, pgno_a);
    let mut sb = page_state(key, nonce_b, pgno_b);
    let both = (a.len() / 16).min(b.len() / 16);
    for i in 0..both {
        let out_a = block(&mut sa, mode, read(&a, i));
        let out_b = block(&mut sb, mode, read(&b, i));
        write(&mut a, i, out_a);
        write(&mut b, i, out_b);
    }
    run_from(&mut a, &mut sa, mode, both);
    run_from(&mut b, &mut sb, mode, both);
    let tags = [finalize(&mut sa, a.len()), finalize(&mut sb, b.len())];
    sa = [_mm_setzero_si128(); 6];
    sb = sa;
    core::hint::black_box((&sa, &sb));
    tags
}

/// AEGIS-128L's eight state blocks.
type State128L = [__m128i; 8];

/// AEGIS-128L's `Update(M0, M1)`: `S'0 = AESRound(S7, S0 ^ M0)`, `S'4 = AESRound(S3, S4 ^
/// M1)`, `S'i = AESRound(S(i-1), Si)` otherwise.
#[target_feature(enable = "aes,sse2")]
#[inline]
fn update_128l(s: &mut State128L, m0: __m128i, m1: __m128i) {
    let s7 = s[7];
    s[7] = _mm_aesenc_si128(s[6], s[7]);
    s[6] = _mm_aesenc_si128(s[5], s[6]);
    s[5] = _mm_aesenc_si128(s[4], s[5]);
    s[4] = _mm_aesenc_si128(s[3], _mm_xor_si128(s[4], m1));
    s[3] = _mm_aesenc_si128(s[2], s[3]);
    s[2] = _mm_aesenc_si128(s[1], s[2]);
    s[1] = _mm_aesenc_si128(s[0], s[1]);
    s[0] = _mm_aesenc_si128(s7, _mm_xor_si128(s[0], m0));
}

/// The two key-stream blocks of a 32-byte message block: `S6 ^ S1 ^ (S2 & S3)` and `S2 ^ S5 ^
/// (S6 & S7)`.
#[target_feature(enable = "aes,sse2")]
#[inline]
fn keystream_128l(s: &State128L) -> (__m128i, __m128i) {
    (
        _mm_xor_si128(_mm_xor_si128(s[6], s[1]), _mm_and_si128(s[2], s[3])),
        _mm_xor_si128(_mm_xor_si128(s[2], s[5]), _mm_and_si128(s[6], s[7])),
    )
}

/// The AEGIS-128L state after `Init(key, nonce)`.
#[target_feature(enable = "aes,sse2")]
#[inline]
fn init_128l(k: __m128i, n: __m128i) -> State128L {
    let (c0, c1) = (load(&C0), load(&C1));
    let kn = _mm_xor_si128(k, n);
    let mut s = [
        kn,
        c1,
        c0,
        c1,
        kn,
        _mm_xor_si128(k, c0),
        _mm_xor_si128(k, c1),
        _mm_xor_si128(k, c0),
    ];
    for _ in 0..10 {
        update_128l(&mut s, n, k);
    }
    s
}

/// `AegisGenOtk` then `Init` for AEGIS-128L: the first 32 bytes of its key stream for the
/// database key and the page's stored nonce (16 bytes each), the last four replaced by the
/// page number (big-endian), are the page's key and nonce.
#[target_feature(enable = "aes,sse2")]
#[inline]
fn page_state_128l(key: &[u8; 32], nonce: &[u8; 32], pgno: u32) -> State128L {
    // SAFETY: both are 32 readable bytes; the loads (unaligned) read their first 16, the
    // key and nonce of AEGIS-128L, with no copy of the key on the stack.
    let (k, n) = unsafe {
        (
            _mm_loadu_si128(key.as_ptr().cast()),
            _mm_loadu_si128(nonce.as_ptr().cast()),
        )
    };
    let mut s = init_128l(k, n);
    // The stream encrypts zeros: one message block's key stream is the 32 bytes.
    let (k, n) = keystream_128l(&s);
    let keep = _mm_set_epi32(0, -1, -1, -1);
    let number = _mm_set_epi32(pgno.swap_bytes() as i32, 0, 0, 0);
    let n = _mm_or_si128(_mm_and_si128(n, keep), number);
    s = [_mm_setzero_si128(); 8];
    core::hint::black_box(&s);
    init_128l(k, n)
}

/// One 32-byte block of `mode` at block pair `i` of `region`.
#[target_feature(enable = "aes,sse2")]
#[inline]
fn block_128l(region: &mut Region<'_>, s: &mut State128L, mode: Mode, i: usize) {
    let (in0, in1) = (read(region, 2 * i), read(region, 2 * i + 1));
    let (z0, z1) = keystream_128l(s);
    let (out0, out1) = (_mm_xor_si128(in0, z0), _mm_xor_si128(in1, z1));
    match mode {
        Mode::Encrypt => update_128l(s, in0, in1),
        Mode::Decrypt | Mode::Absorb => update_128l(s, out0, out1),
    }
    if mode != Mode::Absorb {
        write(region, 2 * i, out0);
        write(region, 2 * i + 1, out1);
    }
}

/// The partial last block (`tail` shorter than 32 bytes, zero-padded; its padding absorbed as
/// zeros, as the draft specifies): returns what goes back into the region.
#[target_feature(enable = "aes,sse2")]
#[inline]
fn tail_128l(s: &mut State128L, mode: Mode, tail: &[u8]) -> [u8; 32] {
    let mut padded = [[0u8; 16]; 2];
    padded.as_flattened_mut()[..tail.len()].copy_from_slice(tail);
    let (in0, in1) = (load(&padded[0]), load(&padded[1]));
    let (z0, z1) = keystream_128l(s);
    let mut out = [[0u8; 16]; 2];
    store(&mut out[0], _mm_xor_si128(in0, z0));
    store(&mut out[1], _mm_xor_si128(in1, z1));
    if mode == Mode::Encrypt {
        update_128l(s, in0, in1);
    } else {
        out.as_flattened_mut()[tail.len()..].fill(0);
        update_128l(s, load(&out[0]), load(&out[1]));
    }
    zeroize::Zeroize::zeroize(&mut padded);
    let mut bytes = [0u8; 32];
    bytes.copy_from_slice(out.as_flattened());
    zeroize::Zeroize::zeroize(&mut out);
    bytes
}

/// AEGIS-128L's `Finalize` with no associated data: the 256-bit tag.
#[target_feature(enable = "aes,sse2")]
#[inline]
fn finalize_128l(s: &mut State128L, msg_len: usize) -> [u8; 32] {
    let lengths = _mm_set_epi64x(((msg_len as u64) << 3) as i64, 0);
    let t = _mm_xor_si128(s[2], lengths);
    for _ in 0..7 {
        update_128l(s, t, t);
    }
    let mut halves = [[0u8; 16]; 2];
    store(
        &mut halves[0],
        _mm_xor_si128(_mm_xor_si128(s[0], s[1]), _mm_xor_si128(s[2], s[3])),
    );
    store(
        &mut halves[1],
        _mm_xor_si128(_mm_xor_si128(s[4], s[5]), _mm_xor_si128(s[6], s[7])),
    );
    let mut tag = [0u8; 32];
    tag.copy_from_slice(halves.as_flattened());
    tag
}

/// [`page_pass`] for AEGIS-128L: the 16-byte database key and page nonce in the first
/// halves of `key` and `nonce`, the eight state blocks in vector registers.
///
/// # Safety
/// The CPU has AES-NI and SSE2 ([`available`]).
#[target_feature(enable = "aes,sse2")]
pub(crate) unsafe fn page_pass_128l(
    key: &[u8; 32],
    pgno: u32,
    nonce: &[u8; 32],
    mut region: Region<'_>,
    mode: Mode,
) -> [u8; AEGIS256_TAG_SIZE] {
    let mut s = page_state_128l(key, nonce, pgno);
    let pairs = region.len() / 32;
    for i in 0..pairs {
        block_128l(&mut region, &mut s, mode, i);
    }
    let whole = pairs * 32;
    if region.len() > whole {
        let mut out = tail_128l(&mut s, mode, &region.bytes()[whole..]);
        if let Region::InPlace(bytes) = &mut region {
            let tail = &mut bytes[whole..];
            let n = tail.len();
            tail.copy_from_slice(&out[..n]);
        }
        zeroize::Zeroize::zeroize(&mut out);
    }
    let tag = finalize_128l(&mut s, region.len());
    s = [_mm_setzero_si128(); 8];
    core::hint::black_box(&s);
    tag
}
