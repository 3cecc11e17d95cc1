//! SQLite's WAL frame checksum, which the VFS must recompute when it translates checksums
//! between the ciphertext domain (SQLCipher, SQLite3MC's WAL) and the plaintext domain
//! (what an unpatched SQLite computes). (The rollback journal's record checksum is
//! `codec::journal_checksum`.)

/// WAL frame checksums are a running pair `(s1, s2)` over 8-byte chunks of 32-bit words,
/// read big-endian when the WAL header's magic is odd, little-endian otherwise.
///
/// SQLite's loop is one chain of dependent additions (four a chunk), which the CPU can't
/// overlap.
/// The recurrence is linear, so whole blocks of [`BLOCK_CHUNKS`] chunks are taken at once
/// (see [`block_checksum`]); the same pair comes out.
pub fn wal_checksum(big_endian: bool, seed: (u32, u32), data: &[u8]) -> (u32, u32) {
    let (blocks, rest) = data.as_chunks::<BLOCK_BYTES>();
    let pair = blocks_checksum(big_endian, seed, blocks);
    serial_wal_checksum(big_endian, pair, rest)
}

/// SQLite's definition, chunk by chunk (`walChecksumBytes` in wal.c).
pub fn serial_wal_checksum(big_endian: bool, seed: (u32, u32), data: &[u8]) -> (u32, u32) {
    let (mut s1, mut s2) = seed;
    for chunk in data.chunks_exact(8) {
        s1 = s1
            .wrapping_add(word(big_endian, &chunk[0..4]))
            .wrapping_add(s2);
        s2 = s2
            .wrapping_add(word(big_endian, &chunk[4..8]))
            .wrapping_add(s1);
    }
    (s1, s2)
}

#[inline(always)]
fn word(big_endian: bool, b: &[u8]) -> u32 {
    let w = [b[0], b[1], b[2], b[3]];
    if big_endian {
        u32::from_be_bytes(w)
    } else {
        u32::from_le_bytes(w)
    }
}

/// Chunks a block holds: every page size (512 to 65536 bytes) is whole blocks.
const BLOCK_CHUNKS: usize = 64;
const BLOCK_BYTES: usize = 8 * BLOCK_CHUNKS;

/// One chunk `(a, b)` takes `v = (s1, s2)` to `M·v + (a, a + b)`, `M = [[1, 1], [1, 2]]`
/// (mod 2^32). Over a block of n chunks, then, `v_n = M^n·v_0 + Σ_k M^(n-k)·(a_k, a_k + b_k)`:
/// a matrix power applied to the seed, plus dot products of the block's words with fixed
/// coefficients, which the CPU computes in parallel instead of as one chain. `M^j` is
/// symmetric, `[[p, q], [q, r]]`.
#[derive(Clone, Copy)]
struct Power {
    p: u32,
    q: u32,
    r: u32,
}

impl Power {
    const IDENTITY: Power = Power { p: 1, q: 0, r: 1 };

    /// `self·M`.
    const fn next(self) -> Power {
        Power {
            p: self.p.wrapping_add(self.q),
            q: self.p.wrapping_add(self.q.wrapping_mul(2)),
            r: self.q.wrapping_add(self.r.wrapping_mul(2)),
        }
    }

    fn apply(self, (s1, s2): (u32, u32)) -> (u32, u32) {
        (
            self.p
                .wrapping_mul(s1)
                .wrapping_add(self.q.wrapping_mul(s2)),
            self.q
                .wrapping_mul(s1)
                .wrapping_add(self.r.wrapping_mul(s2)),
        )
    }
}

/// The coefficients of chunk `i` of a block (`M^(BLOCK_CHUNKS - 1 - i)`) on its words `a`
/// and `b`: `s1` gains `a·(p + q) + b·q`, `s2` gains `a·(q + r) + b·r`.
struct BlockCoefficients {
    s1_a: [u32; BLOCK_CHUNKS],
    s1_b: [u32; BLOCK_CHUNKS],
    s2_a: [u32; BLOCK_CHUNKS],
    s2_b: [u32; BLOCK_CHUNKS],
    /// `M^BLOCK_CHUNKS`, applied to the pair a block starts from.
    whole: Power,
}

const BLOCK: BlockCoefficients = {
    let mut c = BlockCoefficients {
        s1_a: [0; BLOCK_CHUNKS],
        s1_b: [0; BLOCK_CHUNKS],
        s2_a: [0; BLOCK_CHUNKS],
        s2_b: [0; BLOCK_CHUNKS],
        whole: Power::IDENTITY,
    };
    let mut power = Power::IDENTITY;
    let mut j = 0;
    while j < BLOCK_CHUNKS {
        let i = BLOCK_CHUNKS - 1 - j;
        c.s1_a[i] = power.p.wrapping_add(power.q);
        c.s1_b[i] = power.q;
        c.s2_a[i] = power.q.wrapping_add(power.r);
        c.s2_b[i] = power.r;
        power = power.next();
        j += 1;
    }
    c.whole = power;
    c
};

/// [`wal_checksum`] over whole blocks, on the CPU's widest multiplies.
fn blocks_checksum(big_endian: bool, seed: (u32, u32), blocks: &[[u8; BLOCK_BYTES]]) -> (u32, u32) {
    #[cfg(target_arch = "x86_64")]
    {
        if !blocks.is_empty() && std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked just above).
            return unsafe { blocks_checksum_avx2(big_endian, seed, blocks) };
        }
    }
    blocks_checksum_portable(big_endian, seed, blocks)
}

/// The same code compiled for AVX2, where the compiler multiplies eight words at once.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn blocks_checksum_avx2(
    big_endian: bool,
    seed: (u32, u32),
    blocks: &[[u8; BLOCK_BYTES]],
) -> (u32, u32) {
    blocks_checksum_portable(big_endian, seed, blocks)
}

#[inline(always)]
fn blocks_checksum_portable(
    big_endian: bool,
    seed: (u32, u32),
    blocks: &[[u8; BLOCK_BYTES]],
) -> (u32, u32) {
    blocks
        .iter()
        .fold(seed, |pair, block| block_checksum(big_endian, pair, block))
}

/// [`wal_checksum`] over one block.
#[inline(always)]
fn block_checksum(big_endian: bool, seed: (u32, u32), block: &[u8; BLOCK_BYTES]) -> (u32, u32) {
    let (mut s1, mut s2) = BLOCK.whole.apply(seed);
    for i in 0..BLOCK_CHUNKS {
        let a = word(big_endian, &block[8 * i..8 * i + 4]);
        let b = word(big_endian, &block[8 * i + 4..8 * i + 8]);
        s1 = s1
            .wrapping_add(BLOCK.s1_a[i].wrapping_mul(a))
            .wrapping_add(BLOCK.s1_b[i].wrapping_mul(b));
        s2 = s2
            .wrapping_add(BLOCK.s2_a[i].wrapping_mul(a))
            .wrapping_add(BLOCK.s2_b[i].wrapping_mul(b));
    }
    (s1, s2)
}

/// The checksum of one WAL frame: over the first 8 bytes of its header, then the page.
pub fn wal_frame_checksum(
    big_endian: bool,
    seed: (u32, u32),
    frame_header: &[u8],
    page: &[u8],
) -> (u32, u32) {
    let partial = wal_checksum(big_endian, seed, &frame_header[..8]);
    wal_checksum(big_endian, partial, page)
}

pub fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_at_once_give_sqlites_pair() {
        // Random data of every length in chunks up to three blocks and a bit, both word
        // orders, random seeds: the block path and SQLite's loop agree.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let data: Vec<u8> = (0..3 * BLOCK_BYTES + 64).map(|_| next() as u8).collect();
        for chunks in 0..=data.len() / 8 {
            for big_endian in [false, true] {
                let seed = (next() as u32, next() as u32);
                let bytes = &data[..8 * chunks];
                assert_eq!(
                    wal_checksum(big_endian, seed, bytes),
                    serial_wal_checksum(big_endian, seed, bytes),
                    "{chunks} chunks, big-endian {big_endian}"
                );
            }
        }
        // Every page size, and words at the extremes.
        for page_size in [512usize, 1024, 4096, 65536] {
            for fill in [0x00u8, 0xff, 0x80] {
                let page = vec![fill; page_size];
                for big_endian in [false, true] {
                    assert_eq!(
                        wal_checksum(big_endian, (u32::MAX, 1), &page),
                        serial_wal_checksum(big_endian, (u32::MAX, 1), &page)
                    );
                }
            }
        }
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            let bytes = &data[..2 * BLOCK_BYTES];
            let (blocks, _) = bytes.as_chunks::<BLOCK_BYTES>();
            for big_endian in [false, true] {
                // SAFETY: the CPU has AVX2.
                let wide = unsafe { blocks_checksum_avx2(big_endian, (3, 4), blocks) };
                assert_eq!(wide, blocks_checksum_portable(big_endian, (3, 4), blocks));
                assert_eq!(wide, serial_wal_checksum(big_endian, (3, 4), bytes));
            }
        }
    }

    #[test]
    fn wal_checksum_matches_sqlite_definition() {
        // s1 += w0 + s2; s2 += w1 + s1, per 8 bytes.
        let data = [1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4, 0, 0, 0];
        let (s1, s2) = wal_checksum(false, (0, 0), &data);
        // chunk 1: s1 = 1, s2 = 2 + 1 = 3; chunk 2: s1 = 1 + 3 + 3 = 7, s2 = 3 + 4 + 7 = 14
        assert_eq!((s1, s2), (7, 14));
        let (b1, _) = wal_checksum(true, (0, 0), &data);
        assert_eq!(
            b1,
            0x0100_0000 + 0x0300_0000 + wal_checksum(true, (0, 0), &data[..8]).1
        );
    }
}
