//! Timestamp fingerprints and their `(h1, h2)` form (`docs/evolu-storage.md` §2.3).
//!
//! A timestamp's fingerprint is SHA-256 of its 16 bytes, truncated to 12 bytes; a set's
//! fingerprint is the XOR of its members' (zero for the empty set). The table stores a
//! fingerprint as two 48-bit big-endian halves, `h1` (bytes 0..6) and `h2` (bytes 6..12),
//! so that SQL can XOR them as integers.

use sha2::{Digest, Sha256};

use super::{Fingerprint, Timestamp, FINGERPRINT_LEN};

/// The fingerprint of the empty set (`zeroFingerprint`).
pub const ZERO_FINGERPRINT: Fingerprint = [0; FINGERPRINT_LEN];

/// Bytes per half of a fingerprint.
const HALF_LEN: usize = FINGERPRINT_LEN / 2;
/// Every half is below 2^48: 6 bytes.
const HALF_LIMIT: i64 = 1 << (8 * HALF_LEN);

/// SHA-256(t)[0..12] (`timestampBytesToFingerprint`).
pub fn timestamp_fingerprint(t: &Timestamp) -> Fingerprint {
    let digest = Sha256::digest(t);
    let mut fingerprint = ZERO_FINGERPRINT;
    fingerprint.copy_from_slice(&digest[..FINGERPRINT_LEN]);
    fingerprint
}

/// `(h1, h2)`: bytes 0..6 and 6..12 as unsigned big-endian integers, each below 2^48
/// (`fingerprintToSqliteFingerprint`).
pub fn split_fingerprint(fingerprint: &Fingerprint) -> (i64, i64) {
    let half = |bytes: &[u8]| bytes.iter().fold(0i64, |v, &b| (v << 8) | i64::from(b));
    (
        half(&fingerprint[..HALF_LEN]),
        half(&fingerprint[HALF_LEN..]),
    )
}

/// The inverse of [`split_fingerprint`]; `None` unless both halves are in 0..2^48.
pub fn join_fingerprint(h1: i64, h2: i64) -> Option<Fingerprint> {
    if !(0..HALF_LIMIT).contains(&h1) || !(0..HALF_LIMIT).contains(&h2) {
        return None;
    }
    let mut fingerprint = ZERO_FINGERPRINT;
    fingerprint[..HALF_LEN].copy_from_slice(&h1.to_be_bytes()[8 - HALF_LEN..]);
    fingerprint[HALF_LEN..].copy_from_slice(&h2.to_be_bytes()[8 - HALF_LEN..]);
    Some(fingerprint)
}

/// Bytewise XOR: the fingerprint of the union of two disjoint sets.
pub fn xor_fingerprints(a: &Fingerprint, b: &Fingerprint) -> Fingerprint {
    let mut out = *a;
    for (o, x) in out.iter_mut().zip(b) {
        *o ^= x;
    }
    out
}

#[cfg(test)]
mod test {
    use super::*;

    fn hex<const N: usize>(s: &str) -> [u8; N] {
        let mut out = [0; N];
        assert_eq!(s.len(), 2 * N, "{s}");
        for (i, o) in out.iter_mut().enumerate() {
            *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex");
        }
        out
    }

    /// §2.3: the snapshots of Evolu's tests (all rows with c = 1).
    #[test]
    fn split_matches_evolu_snapshots() {
        let table = [
            (
                "0000000000010000c52bc79b95390c57",
                "d9940707aacfbbc66595f6c1",
                239229796330191,
                206460782245569,
            ),
            (
                "0000000000000001c52bc79b95390c57",
                "a90608ba93e37d69e904acba",
                185843381343203,
                137893834435770,
            ),
            (
                "0000000000000002c52bc79b95390c57",
                "9a237db365aade86e321ea94",
                169477223441834,
                244670917634708,
            ),
            (
                "00000000000100000000000000000000",
                "d4b3cfe2735979a3a4c020b8",
                233868751958873,
                133743750684856,
            ),
            (
                "00000000000000010a6bf215c2c69a4c",
                "b92323ea2996b6325f70b5ff",
                203560577542550,
                200327465842175,
            ),
            (
                "000000000001000080ebbce6ff52c923",
                "75ca88735ed3f33ae370da97",
                129512733105875,
                267434249476759,
            ),
        ];
        for (t, fingerprint, h1, h2) in table {
            let fp = timestamp_fingerprint(&hex::<16>(t));
            assert_eq!(fp, hex::<12>(fingerprint), "{t}");
            assert_eq!(split_fingerprint(&fp), (h1, h2), "{t}");
            assert_eq!(join_fingerprint(h1, h2), Some(fp), "{t}");
        }
    }

    #[test]
    fn halves_are_48_bit_big_endian() {
        let all_ones = [0xFF; 12];
        assert_eq!(
            split_fingerprint(&all_ones),
            (HALF_LIMIT - 1, HALF_LIMIT - 1)
        );
        assert_eq!(
            join_fingerprint(HALF_LIMIT - 1, HALF_LIMIT - 1),
            Some(all_ones)
        );
        assert_eq!(split_fingerprint(&ZERO_FINGERPRINT), (0, 0));
        let fp = hex::<12>("0102030405060708090a0b0c");
        assert_eq!(split_fingerprint(&fp), (0x0102_0304_0506, 0x0708_090a_0b0c));
    }

    #[test]
    fn join_refuses_values_outside_48_bits() {
        assert_eq!(join_fingerprint(-1, 0), None);
        assert_eq!(join_fingerprint(0, -1), None);
        assert_eq!(join_fingerprint(HALF_LIMIT, 0), None);
        assert_eq!(join_fingerprint(0, HALF_LIMIT), None);
        assert_eq!(join_fingerprint(i64::MAX, i64::MIN), None);
    }

    #[test]
    fn xor_is_the_set_union_of_disjoint_sets() {
        let a = timestamp_fingerprint(&[1; 16]);
        let b = timestamp_fingerprint(&[2; 16]);
        let ab = xor_fingerprints(&a, &b);
        assert_eq!(xor_fingerprints(&ab, &b), a);
        assert_eq!(xor_fingerprints(&a, &a), ZERO_FINGERPRINT);
        assert_eq!(xor_fingerprints(&a, &ZERO_FINGERPRINT), a);
        // XOR of the halves equals the halves of the XOR.
        let (a1, a2) = split_fingerprint(&a);
        let (b1, b2) = split_fingerprint(&b);
        assert_eq!(split_fingerprint(&ab), (a1 ^ b1, a2 ^ b2));
    }
}
