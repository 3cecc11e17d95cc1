//! AES-256-CBC encryption and HMAC-SHA512 of a page in one pass ("stitched"), on x86-64
//! CPUs with AES-NI, AVX and BMI2. The same bytes as the two-pass path (`cbc`, then the
//! `hmac` crate), in 63% of its time: 5.2 against 8.2 µs per 4 KiB page on the benchmark
//! machine (`cargo bench --bench codec`). Its SHA-512 (the message schedule two words at a
//! time in the vector unit, the rounds on the integer ALUs) also checks pages on reads
//! ([`StitchedKeys::mac`]): 4.4 µs per page against the `sha2` crate's 4.6.
//!
//! Why: writing a page costs a CBC encryption and an HMAC over its ciphertext. CBC
//! encryption is serial — each block waits for the previous one's 14 AES rounds, so the
//! AES unit is idle most of the time — and SHA-512 runs on the integer ALUs, which CBC
//! leaves idle. One after the other they take their sum (3.5 + 4.9 µs); together, about
//! the longer of the two. While SHA-512 compresses 128-byte chunk `k − 1`, which is
//! ciphertext already, the same loop encrypts chunk `k`'s 8 AES blocks, one AES round or
//! two per SHA round (see [`compress`]). OpenSSL's TLS ciphers (`aesni_cbc_sha256_enc`)
//! do the same.
//!
//! Constant time: AES-NI and the SHA-512 rounds have no data-dependent branch or memory
//! index; the only branches and selects depend on the region's length, which is public.
//!
//! The HMAC is the textbook construction over precomputed pad states: `inner` and `outer`
//! are the SHA-512 states after compressing `key ^ ipad` and `key ^ opad`. Tests check
//! every region length a page size or page-1 layout gives against the two-pass path.
//!
//! Page 1 of SQLite3 Multiple Ciphers' layout ends in a partial block (CBC with ciphertext
//! stealing): the same pass, with the stolen block encrypted before the last chunk is
//! hashed: that page costs what any other does (`cargo bench`: 9.4 µs, 11.5 before).

use core::arch::x86_64::{
    __m128i, _mm_add_epi64, _mm_aesenc_si128, _mm_aesenclast_si128, _mm_aeskeygenassist_si128,
    _mm_alignr_epi8, _mm_loadu_si128, _mm_or_si128, _mm_setzero_si128, _mm_shuffle_epi32,
    _mm_slli_epi64, _mm_slli_si128, _mm_srli_epi64, _mm_storeu_si128, _mm_xor_si128,
};

use zeroize::Zeroize;

use super::{CodecError, HMAC_SIZE, IV_SIZE, KEY_SIZE};

pub(super) const AES_BLOCK: usize = 16;
const SHA_BLOCK: usize = 128;
/// AES blocks per SHA-512 block.
const BLOCKS_PER_CHUNK: usize = SHA_BLOCK / AES_BLOCK;
pub(super) const ROUND_KEYS: usize = 15;

cpufeatures::new!(stitch_cpuid, "aes", "sse2", "ssse3", "avx", "bmi1", "bmi2");

/// Whether this CPU runs the stitched pass (AES-NI, AVX, BMI1 and BMI2).
pub(super) fn available() -> bool {
    stitch_cpuid::get()
}

/// What the stitched pass keeps of the keys: the AES-256 round keys and the two HMAC pad
/// states. Wiped on drop. Built only when the CPU can run the pass.
pub(super) struct StitchedKeys {
    round_keys: [[u8; AES_BLOCK]; ROUND_KEYS],
    inner: [u64; 8],
    outer: [u64; 8],
}

impl Drop for StitchedKeys {
    fn drop(&mut self) {
        self.round_keys.zeroize();
        self.inner.zeroize();
        self.outer.zeroize();
    }
}

impl StitchedKeys {
    /// The keys for AES key `aes_key` and HMAC key `hmac_key` (at most 128 bytes), or
    /// `None` when this CPU lacks AES-NI, AVX or BMI2 (the two-pass path then runs).
    pub(super) fn new(aes_key: &[u8; KEY_SIZE], hmac_key: &[u8]) -> Option<Self> {
        if !stitch_cpuid::get() || hmac_key.len() > SHA_BLOCK {
            return None;
        }
        let mut keys = StitchedKeys {
            round_keys: [[0; AES_BLOCK]; ROUND_KEYS],
            inner: H0,
            outer: H0,
        };
        // SAFETY: stitch_cpuid::get() said the CPU has AES-NI, SSE2, AVX, BMI1 and BMI2.
        unsafe {
            keys.inner = pad_state(hmac_key, 0x36);
            keys.outer = pad_state(hmac_key, 0x5c);
        }
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
    pub(super) fn encrypt_and_mac(
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
    pub(super) fn encrypt_cts_and_mac(
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
        super::keys::scrub_stack_after_page_pass();
        tag
    }
}

impl StitchedKeys {
    /// HMAC-SHA512(`data` ‖ `pgno` as LE32), as the `hmac` crate computes it; with the
    /// message schedule in the vector unit, a fifth faster than the `sha2` crate here.
    pub(super) fn mac(&self, data: &[u8], pgno: u32) -> [u8; HMAC_SIZE] {
        // SAFETY: a StitchedKeys exists only if the CPU has the features (see `new`).
        let tag = unsafe { mac_pass(self, data, pgno) };
        super::keys::scrub_stack_after_page_pass();
        tag
    }
}

impl StitchedKeys {
    /// The tags HMAC-SHA512(`messages[l]` ‖ `pgnos[l]` as LE32) of four messages of one
    /// length at once, in the four lanes of the AVX2 registers (`sha512x4`); `None` when
    /// the lengths differ or the CPU lacks AVX2.
    pub(super) fn mac4(
        &self,
        messages: [&[u8]; 4],
        pgnos: [u32; 4],
    ) -> Option<[[u8; HMAC_SIZE]; 4]> {
        let len = messages[0].len();
        if !super::sha512x4::available() || messages.iter().any(|m| m.len() != len) {
            return None;
        }
        // SAFETY: AVX2 was checked just above; the lengths are equal.
        let tags = unsafe { mac4_pass(self, messages, pgnos) };
        super::keys::scrub_stack_after_page_pass();
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
    pub(super) fn encrypt_and_mac_lanes(
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
                [a, b] => encrypt_and_mac_pass(self, [a, b], blocks, pgnos),
                [a, b, c] => encrypt_and_mac_pass(self, [a, b, c], blocks, pgnos),
                [a, b, c, d] => encrypt_and_mac_pass(self, [a, b, c, d], blocks, pgnos),
                _ => return None,
            }
        };
        super::keys::scrub_stack_after_page_pass();
        Some(tags)
    }
}

/// The number of AES blocks in each region of the messages of
/// [`StitchedKeys::encrypt_and_mac_lanes`], if they are 2 to 4 of one length, each a
/// region of whole blocks and an IV, with a page number each, and the CPU has AVX2.
fn lane_region_blocks(messages: &[&mut [u8]], pgnos: &[u32]) -> Option<usize> {
    let len = messages.first()?.len();
    let region = len.checked_sub(IV_SIZE)?;
    let fits = (2..=4).contains(&messages.len())
        && pgnos.len() == messages.len()
        && messages.iter().all(|m| m.len() == len)
        && region != 0
        && region.is_multiple_of(AES_BLOCK)
        && super::sha512x4::available();
    fits.then_some(region / AES_BLOCK)
}

/// The pass behind [`StitchedKeys::encrypt_and_mac_lanes`]: chunk 0 (8 blocks) of each
/// region encrypted alone, then chunk k of each encrypted during the compression of
/// block k − 1 of the four lanes (lanes past `N` hash the first message again), then the
/// rest of the HMACs.
///
/// # Safety
/// The CPU has AES-NI and AVX2; each slice holds `blocks * 16` bytes of region then its
/// 16-byte IV.
#[target_feature(enable = "aes,sse2,avx2")]
unsafe fn encrypt_and_mac_pass<const N: usize>(
    keys: &StitchedKeys,
    lanes: [&mut &mut [u8]; N],
    blocks: usize,
    pgnos: [u32; 4],
) -> [[u8; HMAC_SIZE]; 4] {
    use super::sha512x4;
    let len = blocks * AES_BLOCK + IV_SIZE;
    let bases: [*mut u8; N] = lanes.map(|lane| lane.as_mut_ptr());
    let mut chains = sha512x4::CbcLanes {
        // SAFETY: each round key is 16 readable bytes; unaligned loads.
        round_keys: keys
            .round_keys
            .map(|key| unsafe { _mm_loadu_si128(key.as_ptr().cast()) }),
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
    let mut states = unsafe { sha512x4::broadcast(&keys.inner) };
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
    let tags = unsafe { finish_mac4(keys, states, messages, (chunks - 1) * SHA_BLOCK, pgnos) };
    // The pages are encrypted by now: no `None` may follow (the caller would encrypt them
    // again). `finish_mac4` refuses only messages of unequal lengths, and these are equal.
    tags.expect("four messages of one length")
}

/// CBC encryption in place of blocks `range` of `N` chains at `bases`, interleaved block
/// by block, each chained from `previous[l]` (updated).
///
/// # Safety
/// The CPU has AES-NI; blocks `range` at each base are readable and writable.
#[target_feature(enable = "aes,sse2")]
unsafe fn cbc_lanes<const N: usize>(
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

/// The pass behind [`StitchedKeys::mac4`].
///
/// # Safety
/// The CPU has AVX2 and AES-NI; the four messages have one length.
#[target_feature(enable = "avx2")]
unsafe fn mac4_pass(
    keys: &StitchedKeys,
    messages: [&[u8]; 4],
    pgnos: [u32; 4],
) -> Option<[[u8; HMAC_SIZE]; 4]> {
    // SAFETY (both calls): the caller's guarantee.
    let states = unsafe { super::sha512x4::broadcast(&keys.inner) };
    unsafe { finish_mac4(keys, states, messages, 0, pgnos) }
}

/// The four HMACs of `messages` (of one length) ‖ `pgnos`, whose inner hashes in `states`
/// have absorbed the first `hashed` bytes (whole blocks): the rest of the inner hashes,
/// the outer ones; the states are wiped.
///
/// # Safety
/// The CPU has AVX2 and AES-NI.
#[target_feature(enable = "avx2")]
unsafe fn finish_mac4(
    keys: &StitchedKeys,
    mut states: super::sha512x4::States,
    messages: [&[u8]; 4],
    hashed: usize,
    pgnos: [u32; 4],
) -> Option<[[u8; HMAC_SIZE]; 4]> {
    use super::sha512x4;
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
    let mut outer = unsafe { sha512x4::broadcast(&keys.outer) };
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

/// The CBC chain between calls of [`compress`]: round keys and the last ciphertext block.
struct CbcChain {
    round_keys: [__m128i; ROUND_KEYS],
    previous: __m128i,
}

impl CbcChain {
    /// A chain for a compression with no AES work.
    fn idle() -> CbcChain {
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
    unsafe fn encrypt(&mut self, block: *mut u8) {
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
    let mut state = keys.inner;
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
    // `previous` may hold a spare block's encryption (see `compress`).
    chain.round_keys = [_mm_setzero_si128(); ROUND_KEYS];
    chain.previous = _mm_setzero_si128();
    core::hint::black_box(&chain);
    // SAFETY: the caller's guarantee on CPU features.
    unsafe {
        finish_mac(
            keys,
            &mut state,
            [rest, iv, &pgno.to_le_bytes()],
            region.len() + IV_SIZE + 4,
        )
    }
}

/// HMAC-SHA512 of `data` ‖ `pgno` as LE32 (no AES work): the page check of a read.
///
/// # Safety
/// The CPU has the features `stitch_cpuid` checks.
#[target_feature(enable = "aes,sse2,ssse3,avx,bmi1,bmi2")]
unsafe fn mac_pass(keys: &StitchedKeys, data: &[u8], pgno: u32) -> [u8; HMAC_SIZE] {
    let mut state = keys.inner;
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
            keys,
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
/// The CPU has the features `stitch_cpuid` checks.
#[target_feature(enable = "aes,sse2,ssse3,avx,bmi1,bmi2")]
unsafe fn finish_mac(
    keys: &StitchedKeys,
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
    let mut outer = keys.outer;
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

/// Pads a message whose last `len` bytes begin `buf` (zero after them): 0x80, then, at the
/// end of the block they need (one, or two when fewer than 17 bytes are left in the
/// first), the bit length of the `hashed_len` bytes hashed in all (the HMAC key block
/// included). Returns the length of the blocks to compress.
fn pad_last_blocks(buf: &mut [u8], len: usize, hashed_len: usize) -> usize {
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
fn store_be_words(out: &mut [u8], words: &[u64; 8]) {
    for (bytes, word) in out.chunks_exact_mut(8).zip(words) {
        bytes.copy_from_slice(&word.to_be_bytes());
    }
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

/// The 16 big-endian message words of a SHA-512 block (`block` is 128 bytes).
#[inline(always)]
fn load_words(block: &[u8]) -> [u64; 16] {
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
/// its ciphertext, IV and page number, which are on disk anyway: wiping 80 words after
/// each of a page's 33 compressions cost 13% of the hash on an AMD EPYC (Zen 2).
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
unsafe fn compress<const WITH_AES: bool, const SECRET_WORDS: bool>(
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

/// AES-256 key expansion with AES-NI (Intel's AES-NI white paper, figure 26).
///
/// # Safety
/// The CPU has AES-NI, SSE2 and AVX.
#[target_feature(enable = "aes,sse2,avx")]
unsafe fn expand_key(key: &[u8; KEY_SIZE]) -> [__m128i; ROUND_KEYS] {
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

const H0: [u64; 8] = [
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

#[cfg(test)]
mod tests {
    use super::super::cbc::{cbc_encrypt_in_place, cts_encrypt_in_place};
    use super::*;
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

    /// Copies the `out.len()` bytes below this function's stack pointer, where the frames
    /// of the caller's previous call lived, into `out`.
    #[inline(never)]
    fn stack_below(out: &mut [u8]) {
        // SAFETY: a test thread's stack is mapped well below the current frame (the scrub
        // before the probed call touched 128 KiB of it); reads only, into `out`.
        unsafe {
            core::arch::asm!(
                "mov rsi, rsp",
                "sub rsi, rcx",
                "rep movsb",
                inout("rdi") out.as_mut_ptr() => _,
                inout("rcx") out.len() => _,
                out("rsi") _,
            );
        }
    }

    /// The 32 KiB of stack below this frame after `call` returned, scrubbed before it ran.
    /// Meaningful in release builds (`cargo test --release … on_the_stack`, run by CI): in
    /// debug builds the page passes scrub half a megabyte of stack after themselves,
    /// whatever they left.
    #[inline(never)]
    fn stack_left_by(call: impl FnOnce()) -> Vec<u8> {
        crate::scrub_stack();
        let mut stack = vec![0u8; 32 * 1024];
        call();
        stack_below(&mut stack);
        stack
    }

    /// Whether the 8 bytes `word` lie anywhere in `stack`.
    fn holds(stack: &[u8], word: &[u8]) -> bool {
        stack.windows(8).any(|w| w == word)
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
        for (name, state) in [("inner", &keys.inner), ("outer", &keys.outer)] {
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
        if !super::super::sha512x4::available() {
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
        if !super::super::sha512x4::available() {
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
            .inner
            .iter()
            .chain(&stitched.outer)
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
