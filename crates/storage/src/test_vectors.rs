//! The Evolu fixtures of the tests: `docs/evolu-storage.md` §1.1's table and §8's vectors,
//! read from `testdata/evolu/`, where the JS tests (`__test__/_evolu-fixtures.js`) read
//! them too. Compiled into the unit tests (`storage/mod.rs`) and included by
//! `cipherlite-tests`' `crates/tests/tests/storage_sql.rs` with `#[path]`, so both kinds of Rust test share this one loader.

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
