//! SQLite's rollback-journal record checksum and WAL frame checksum, which the VFS must
//! recompute when it translates checksums between the ciphertext domain (SQLCipher,
//! SQLite3MC's WAL) and the plaintext domain (what an unpatched SQLite computes).

/// WAL frame checksums are a running pair `(s1, s2)` over 8-byte chunks of 32-bit words,
/// read big-endian when the WAL header's magic is odd, little-endian otherwise.
pub fn wal_checksum(big_endian: bool, seed: (u32, u32), data: &[u8]) -> (u32, u32) {
    let (mut s1, mut s2) = seed;
    let word = |b: &[u8]| {
        let w = [b[0], b[1], b[2], b[3]];
        if big_endian {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        }
    };
    for chunk in data.chunks_exact(8) {
        s1 = s1.wrapping_add(word(&chunk[0..4])).wrapping_add(s2);
        s2 = s2.wrapping_add(word(&chunk[4..8])).wrapping_add(s1);
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
