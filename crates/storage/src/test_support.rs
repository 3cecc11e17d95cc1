//! What the storage tests share: the Evolu fixtures (`docs/evolu-storage.md` §1.1's table
//! and §8's vectors, read from `testdata/evolu/`, where the JS tests
//! (`__test__/_evolu-fixtures.js`) read them too), hex, timestamps and a seeded generator.
//! Compiled into the unit tests (`lib.rs`) and included by `cipherlite-tests`'
//! `tests/storage_sql.rs` with `#[path]`, so both kinds of Rust test share one copy.

use std::sync::LazyLock;

/// §1.1's DDL, as Evolu runs it.
pub const SCHEMA: &str = include_str!("../../../testdata/evolu/schema.sql");
/// V1's rows in §8's dump format.
pub const V1_DUMP: &str = include_str!("../../../testdata/evolu/v1-dump.txt");
const VECTORS: &str = include_str!("../../../testdata/evolu/vectors.txt");

/// The values of `name` in `vectors.txt` (a test fixture: a missing name is a bug in the
/// test, so it panics naming it).
pub fn values(name: &str) -> Vec<&'static str> {
    VECTORS
        .lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let mut words = line.split_whitespace();
            (words.next() == Some(name)).then(|| words.collect())
        })
        .unwrap_or_else(|| panic!("testdata/evolu/vectors.txt has no {name}"))
}

/// The single value of `name`.
pub fn value(name: &str) -> &'static str {
    match values(name)[..] {
        [v] => v,
        ref other => panic!(
            "testdata/evolu/vectors.txt: {name} has {} values",
            other.len()
        ),
    }
}

fn hex_array<const N: usize>(name: &str) -> [u8; N] {
    let s = value(name);
    assert_eq!(s.len(), 2 * N, "{name}: {N} bytes of hex");
    std::array::from_fn(|i| {
        u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap_or_else(|e| panic!("{name}: {e}"))
    })
}

pub static V1_OWNER: LazyLock<[u8; 16]> = LazyLock::new(|| hex_array("v1.owner"));
pub static V1_NODE: LazyLock<u64> = LazyLock::new(|| u64::from_be_bytes(hex_array("v1.node")));
pub static V1_LEVELS: LazyLock<[u8; 16]> = LazyLock::new(|| {
    let levels: Vec<u8> = values("v1.levels")
        .iter()
        .map(|l| l.parse().unwrap_or_else(|e| panic!("v1.levels: {e}")))
        .collect();
    levels.try_into().expect("v1.levels: 16 levels")
});
pub static V1_DIGEST: LazyLock<&str> = LazyLock::new(|| value("v1.digest"));

/// Decodes `2N` hex digits.
pub fn hex<const N: usize>(s: &str) -> [u8; N] {
    assert_eq!(s.len(), 2 * N, "{s}");
    let mut out = [0; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).expect("hex");
    }
    out
}

pub fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `TimestampBytes`: 6-byte big-endian millis, 2-byte counter, 8-byte node id.
pub fn timestamp(millis: u64, counter: u16, node: u64) -> [u8; 16] {
    let mut t = [0; 16];
    t[..6].copy_from_slice(&millis.to_be_bytes()[2..]);
    t[6..8].copy_from_slice(&counter.to_be_bytes());
    t[8..].copy_from_slice(&node.to_be_bytes());
    t
}

/// SplitMix64: a tiny seeded generator for levels and shuffles.
pub struct SplitMix(pub u64);

impl SplitMix {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A draw in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            items.swap(i, self.below(i + 1));
        }
    }

    /// Evolu's level rule with this generator's draws.
    pub fn level(&mut self) -> i64 {
        let mut level = 1;
        while self.unit() <= 0.25 && level < 10 {
            level += 1;
        }
        level
    }
}
