//! Tests of the skiplist algorithms against `docs/evolu-storage.md` §8's vectors, Evolu's own
//! test rows (§6.2), and a brute-force model of the §3.1 invariant.

use std::collections::BTreeMap;
use std::convert::Infallible;

use proptest::prelude::{any, prop_oneof, proptest, Just, ProptestConfig};
use proptest::strategy::Strategy as _;
use sha2::{Digest, Sha256};

use super::memory::{MemoryStore, Row};
use super::test_support::{
    hex, timestamp, to_hex, SplitMix, V1_DIGEST, V1_DUMP, V1_LEVELS, V1_NODE, V1_OWNER,
};
use super::*;

// ---------------------------------------------------------------------------------------
// Helpers

fn unwrap<T>(result: StorageResult<T, Infallible>) -> T {
    match result {
        Ok(value) => value,
        Err(error) => panic!("storage error: {error}"),
    }
}

fn put(store: &mut MemoryStore, owner: &OwnerId, t: &Timestamp, level: u8) -> bool {
    unwrap(insert(store, owner, t, level, None))
}

/// Inserts as Evolu's relay does: the strategy from the running first/last bounds, which
/// default to the first new timestamp (`getTimestampInsertStrategy`).
fn relay_insert(store: &mut MemoryStore, owner: &OwnerId, items: &[(Timestamp, u8)]) {
    let mut bounds: Option<(Timestamp, Timestamp)> = None;
    for &(t, level) in items {
        let (first, last) = bounds.unwrap_or((t, t));
        let (strategy, first, last) = if t > last {
            (Strategy::Append, first, t)
        } else if t < first {
            (Strategy::Prepend, t, last)
        } else {
            (Strategy::Insert, first, last)
        };
        unwrap(insert(store, owner, &t, level, Some(strategy)));
        bounds = Some((first, last));
    }
}

// ---------------------------------------------------------------------------------------
// The brute-force model of §3.1

/// The rows §3.1 defines for a set of (t, level), computed from the definition.
fn model_rows(set: &BTreeMap<Timestamp, u8>) -> Vec<(Timestamp, Row)> {
    let items: Vec<(Timestamp, u8)> = set.iter().map(|(&t, &l)| (t, l)).collect();
    // prefix[i] = XOR of the fingerprints of items 0..i.
    let mut prefix = vec![ZERO_FINGERPRINT];
    for (t, _) in &items {
        let last = prefix[prefix.len() - 1];
        prefix.push(xor_fingerprints(&last, &timestamp_fingerprint(t)));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, &(t, level))| {
            // The span (pred≥level(t), t]: items start..=i, where start follows the last
            // earlier item of level ≥ level.
            let start = items[..i]
                .iter()
                .rposition(|&(_, l)| l >= level)
                .map_or(0, |p| p + 1);
            let (h1, h2) = split_fingerprint(&xor_fingerprints(&prefix[start], &prefix[i + 1]));
            (
                t,
                Row {
                    level: i64::from(level),
                    h1,
                    h2,
                    c: (i + 1 - start) as i64,
                },
            )
        })
        .collect()
}

/// Brute-force reads over the sorted timestamps.
struct Sorted {
    ts: Vec<Timestamp>,
    /// prefix[i] = XOR of the fingerprints of ranks 0..i.
    prefix: Vec<Fingerprint>,
}

impl Sorted {
    fn new(set: &BTreeMap<Timestamp, u8>) -> Self {
        let ts: Vec<Timestamp> = set.keys().copied().collect();
        let mut prefix = vec![ZERO_FINGERPRINT];
        for t in &ts {
            let last = prefix[prefix.len() - 1];
            prefix.push(xor_fingerprints(&last, &timestamp_fingerprint(t)));
        }
        Self { ts, prefix }
    }

    fn fingerprint(&self, begin: usize, end: usize) -> Fingerprint {
        xor_fingerprints(&self.prefix[begin], &self.prefix[end])
    }

    fn lower_bound(&self, begin: u64, end: u64, bound: Option<&Timestamp>) -> u64 {
        match bound {
            _ if end == 0 || begin == end => end,
            None => end,
            Some(bound) => {
                let rank = self.ts.partition_point(|t| t < bound);
                if rank == self.ts.len() {
                    end
                } else {
                    rank as u64
                }
            }
        }
    }
}

/// Checks every row and every read of one owner against the model.
fn check_against_model(store: &mut MemoryStore, owner: &OwnerId, set: &BTreeMap<Timestamp, u8>) {
    assert_eq!(store.rows(owner), model_rows(set), "rows differ from §3.1");
    let sorted = Sorted::new(set);
    let n = sorted.ts.len();
    assert_eq!(unwrap(size(store, owner)), n as u64);
    // Every index of small sets, about 150 of larger ones (walks of an all-level-1 list
    // are linear).
    for (i, t) in sorted.ts.iter().enumerate() {
        if i % (n / 150).max(1) == 0 || i + 1 == n {
            assert_eq!(unwrap(at(store, owner, i as u64)), *t, "at({i})");
        }
    }
    assert_eq!(at(store, owner, n as u64), Err(Error::IndexOutOfRange));
    // Fingerprints over ranges of every length class.
    let step = (n / 11).max(1);
    for begin in (0..=n).step_by(step) {
        for end in (begin..=n).step_by((n / 7).max(1)) {
            assert_eq!(
                unwrap(fingerprint(store, owner, begin as u64, end as u64)),
                sorted.fingerprint(begin, end),
                "fingerprint({begin}, {end})"
            );
        }
        assert_eq!(
            unwrap(fingerprint(store, owner, begin as u64, n as u64)),
            sorted.fingerprint(begin, n)
        );
    }
    assert_eq!(
        fingerprint(store, owner, 0, n as u64 + 1),
        Err(Error::EndPastSize)
    );
    // Lower bounds at, just below and just above every stored timestamp, and beyond.
    let mut probes: Vec<Option<Timestamp>> = vec![None, Some([0; 16]), Some(INFINITE_TIMESTAMP)];
    for t in sorted.ts.iter().step_by((n / 60).max(1)) {
        probes.push(Some(*t));
        let mut above = *t;
        above[15] = above[15].wrapping_add(1);
        probes.push(Some(above));
        let mut below = *t;
        below[15] = below[15].wrapping_sub(1);
        probes.push(Some(below));
    }
    for (i, bound) in probes.iter().enumerate() {
        // The early returns need few bounds; the rank itself needs them all.
        let ranges: &[(u64, u64)] = if i < 12 {
            &[(0, n as u64), (0, 0), (1, 1), (0, 1), (2, n as u64 + 5)]
        } else {
            &[(0, n as u64)]
        };
        for &(begin, end) in ranges {
            assert_eq!(
                unwrap(lower_bound(store, owner, begin, end, bound.as_ref())),
                sorted.lower_bound(begin, end, bound.as_ref()),
                "lower_bound({begin}, {end}, {:?})",
                bound.map(|t| to_hex(&t))
            );
        }
        if let Some(bound) = bound {
            let below = sorted.ts.partition_point(|t| t < bound);
            assert_eq!(unwrap(rank(store, owner, bound)), (below as u64, below < n));
        }
    }
    // Balanced buckets (computeBalancedBuckets(n)) and a few uneven ones.
    let mut bucket_sets: Vec<Vec<u64>> = vec![vec![], vec![n as u64]];
    if n >= 32 {
        bucket_sets.push(balanced_buckets(n as u64));
    }
    if n >= 1 {
        for mut uneven in [
            vec![0, 1, (n / 2) as u64, n as u64 - 1],
            vec![(n / 3) as u64, (2 * n / 3) as u64 + 1],
        ] {
            uneven.sort_unstable();
            uneven.dedup();
            bucket_sets.push(uneven);
        }
    }
    for buckets in bucket_sets {
        let ranges = unwrap(fingerprint_ranges(store, owner, &buckets));
        assert_eq!(ranges.len(), buckets.len());
        let mut previous = 0;
        for (i, (&bucket, (upper, fp))) in buckets.iter().zip(&ranges).enumerate() {
            assert_eq!(
                *fp,
                sorted.fingerprint(previous, bucket as usize),
                "{buckets:?}"
            );
            if i + 1 == buckets.len() {
                assert_eq!(*upper, None);
            } else {
                assert_eq!(*upper, Some(sorted.ts[bucket as usize]), "{buckets:?}");
            }
            previous = bucket as usize;
        }
    }
}

/// `computeBalancedBuckets(n, 16, 2)` (Number.ts): 16 cumulative boundaries.
fn balanced_buckets(n: u64) -> Vec<u64> {
    let (q, r) = (n / 16, n % 16);
    let mut end = 0;
    (0..16)
        .map(|i| {
            end += q + u64::from(i < r);
            end
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// §8 V1: 16 timestamps with explicit levels

// The owner, node, levels, rows (V1_DUMP) and digest: testdata/evolu/ (test_support.rs).

fn v1_items() -> Vec<(Timestamp, u8)> {
    (1..=16u64)
        .map(|millis| {
            (
                timestamp(millis, 0, *V1_NODE),
                V1_LEVELS[millis as usize - 1],
            )
        })
        .collect()
}

fn assert_v1_rows(store: &MemoryStore, how: &str) {
    let dump = store.dump(&V1_OWNER);
    assert_eq!(dump, V1_DUMP, "{how}");
    assert_eq!(
        to_hex(&Sha256::digest(dump.as_bytes())),
        *V1_DIGEST,
        "{how}"
    );
}

fn v1_store() -> MemoryStore {
    let mut store = MemoryStore::new();
    for (t, level) in v1_items() {
        assert!(unwrap(insert(
            &mut store,
            &V1_OWNER,
            &t,
            level,
            Some(Strategy::Append)
        )));
    }
    store
}

#[test]
fn v1_dump_has_the_documented_digest() {
    assert_eq!(to_hex(&Sha256::digest(V1_DUMP.as_bytes())), *V1_DIGEST);
}

#[test]
fn v1_rows_are_the_same_for_every_insertion_order() {
    let items = v1_items();

    assert_v1_rows(&v1_store(), "append");

    let mut store = MemoryStore::new();
    for &(t, level) in items.iter().rev() {
        assert!(unwrap(insert(
            &mut store,
            &V1_OWNER,
            &t,
            level,
            Some(Strategy::Prepend)
        )));
    }
    assert_v1_rows(&store, "prepend");

    for seed in 0..50 {
        let mut shuffled = items.clone();
        SplitMix(seed).shuffle(&mut shuffled);
        let hint = [None, Some(Strategy::Insert)][seed as usize % 2];
        let mut store = MemoryStore::new();
        for &(t, level) in &shuffled {
            assert!(unwrap(insert(&mut store, &V1_OWNER, &t, level, hint)));
        }
        assert_v1_rows(&store, &format!("shuffled, seed {seed}"));

        let mut store = MemoryStore::new();
        relay_insert(&mut store, &V1_OWNER, &shuffled);
        assert_v1_rows(&store, &format!("relay-style, seed {seed}"));
    }
}

#[test]
fn v1_duplicates_change_nothing() {
    let mut store = v1_store();
    for (i, (t, level)) in v1_items().into_iter().enumerate() {
        for (other, hint) in [
            (level % 10 + 1, None),
            (10, Some(Strategy::Append)),
            (1, Some(Strategy::Prepend)),
            (level, Some(Strategy::Insert)),
        ] {
            let writes = store.writes;
            assert!(
                !unwrap(insert(&mut store, &V1_OWNER, &t, other, hint)),
                "timestamp {i}"
            );
            assert!(store.writes - writes <= 1, "a duplicate updates no row");
        }
    }
    assert_v1_rows(&store, "after re-inserting every timestamp at other levels");
}

#[test]
fn v1_reads() {
    let mut store = v1_store();
    let owner = &V1_OWNER;
    let items = v1_items();
    assert_eq!(unwrap(size(&mut store, owner)), 16);
    assert_eq!(
        unwrap(fingerprint(&mut store, owner, 0, 16)),
        hex("08ae59dd63487817506bee46")
    );
    assert_eq!(
        unwrap(fingerprint(&mut store, owner, 3, 11)),
        hex("0edec352a35475dc56e9460c")
    );
    assert_eq!(
        unwrap(fingerprint(&mut store, owner, 5, 5)),
        ZERO_FINGERPRINT
    );

    let ranges = unwrap(fingerprint_ranges(&mut store, owner, &[4, 8, 12, 16]));
    let expected = [
        (
            Some(hex("000000000005000068a2a7bf3f85a096")),
            hex("4e81acff0bb8f5cbf8bd0eaa"),
        ),
        (
            Some(hex("000000000009000068a2a7bf3f85a096")),
            hex("f0718c348b7a8436f46cdc86"),
        ),
        (
            Some(hex("00000000000d000068a2a7bf3f85a096")),
            hex("42e0237298754f7bd6b6fb74"),
        ),
        (None, hex("f4be5a647bff46918a0cc71e")),
    ];
    assert_eq!(ranges, expected);

    let lb =
        |store: &mut MemoryStore, t: &Timestamp| unwrap(lower_bound(store, owner, 0, 16, Some(t)));
    assert_eq!(lb(&mut store, &timestamp(5, 1, 0)), 5);
    assert_eq!(lb(&mut store, &items[6].0), 6);
    assert_eq!(lb(&mut store, &timestamp(100, 0, 0)), 16);
    assert_eq!(unwrap(lower_bound(&mut store, owner, 0, 16, None)), 16);

    assert_eq!(
        unwrap(at(&mut store, owner, 10)),
        hex::<16>("00000000000b000068a2a7bf3f85a096")
    );

    let per_timestamp = [
        "a440694f7370072133b33758",
        "4f306c0806d7aeb1be7d4096",
        "d9d99f726e3c433abbf4a0e3",
        "7c2836ca10231f61ce87d987",
        "1661c7a0d3ce4402d03d7cd1",
        "2e110f7b99b76159ecb61360",
        "59c1e6bfcd112d6ebb017daa",
        "91c0a2500c128c0373e6ce9d",
        "def1aebd76fd3bc6a0ee719a",
        "3ba1a0969e73d800d0184a08",
        "67d77787d0830d4d1cf4789f",
        "c0675adea078a1f0bab4b879",
        "9450a6c7aad1714b290a8e28",
        "f5eeb1f2d20b3e277f70d636",
        "c44ee0fe597e8c2eda8a1d20",
        "514eadaf5a5b85d306fc8220",
    ];
    for (i, ((t, _), expected)) in items.iter().zip(per_timestamp).enumerate() {
        assert_eq!(timestamp_fingerprint(t), hex(expected), "millis {}", i + 1);
        assert_eq!(
            unwrap(fingerprint(&mut store, owner, i as u64, i as u64 + 1)),
            hex(expected)
        );
    }

    let set: BTreeMap<Timestamp, u8> = items.into_iter().collect();
    check_against_model(&mut store, owner, &set);
}

// ---------------------------------------------------------------------------------------
// §6.2: Evolu's own test rows

#[test]
fn query_plan_test_rows() {
    // Random values [0.9, 0.9, 0.9, 0.9, 0.1, 0.9]: levels 1, 1, 1, 1, 2.
    let draws = [0.9, 0.9, 0.9, 0.9, 0.1, 0.9];
    let mut next = draws.iter();
    let mut level = || draw_level(|| *next.next().expect("enough draws"));
    let owner = [0; 16];
    let mut store = MemoryStore::new();
    for (millis, strategy) in [
        (100, Strategy::Append),
        (200, Strategy::Append),
        (0, Strategy::Prepend),
        (150, Strategy::Insert),
        (175, Strategy::Insert),
    ] {
        let l = level();
        assert!(unwrap(insert(
            &mut store,
            &owner,
            &timestamp(millis, 0, 0),
            l,
            Some(strategy)
        )));
    }
    assert_eq!(
        store.dump(&owner),
        "\
00000000000000000000000000000000,1,60778233198449,173540697360501,1
00000000006400000000000000000000,1,68734738020290,125285876891988,1
00000000009600000000000000000000,1,271028093699891,183458815227606,1
0000000000af00000000000000000000,2,113758119536027,169755519201020,4
0000000000c800000000000000000000,1,25529402045606,158974823800068,1
"
    );
}

#[test]
fn append_plan_test_rows() {
    // Random values [0.9, 0.1, 0.9]: 100 at level 1, 200 at level 2.
    let draws = [0.9, 0.1, 0.9];
    let mut next = draws.iter();
    let mut level = || draw_level(|| *next.next().expect("enough draws"));
    let owner = [0; 16];
    let mut store = MemoryStore::new();
    for millis in [100, 200] {
        let l = level();
        assert!(unwrap(insert(
            &mut store,
            &owner,
            &timestamp(millis, 0, 0),
            l,
            Some(Strategy::Append)
        )));
    }
    assert_eq!(
        store.dump(&owner),
        "\
00000000006400000000000000000000,1,68734738020290,125285876891988,1
0000000000c800000000000000000000,2,45885473162084,247820985998416,2
"
    );
}

#[test]
fn empty_owner_reads() {
    let mut store = v1_store();
    let owner = [0x22; 16];
    assert_eq!(unwrap(size(&mut store, &owner)), 0);
    assert_eq!(
        unwrap(fingerprint(&mut store, &owner, 0, 0)),
        ZERO_FINGERPRINT
    );
    let t = timestamp(5, 0, 0);
    assert_eq!(unwrap(lower_bound(&mut store, &owner, 0, 0, Some(&t))), 0);
    assert_eq!(unwrap(rank(&mut store, &owner, &t)), (0, false));
    assert_eq!(at(&mut store, &owner, 0), Err(Error::IndexOutOfRange));
    assert_eq!(
        fingerprint(&mut store, &owner, 0, 1),
        Err(Error::EndPastSize)
    );
    assert_eq!(
        unwrap(fingerprint_ranges(&mut store, &owner, &[0])),
        [(None, ZERO_FINGERPRINT)]
    );
    assert_eq!(
        fingerprint_ranges(&mut store, &owner, &[1]),
        Err(Error::BucketPastSize)
    );
}

#[test]
fn find_lower_bound_on_millis_1_to_10() {
    // Storage.test.ts L362.
    let owner = [3; 16];
    let node = 0xc52b_c79b_9539_0c57;
    let ts: Vec<Timestamp> = (1..=10).map(|m| timestamp(m, 0, node)).collect();
    let mut store = MemoryStore::new();
    relay_insert(
        &mut store,
        &owner,
        &ts.iter().map(|&t| (t, 1)).collect::<Vec<_>>(),
    );
    let mut lb = |t: Option<&Timestamp>| unwrap(lower_bound(&mut store, &owner, 0, 10, t));
    assert_eq!(lb(Some(&timestamp(0, 0, 0))), 0);
    assert_eq!(lb(Some(&timestamp(11, 0, node))), 10);
    assert_eq!(lb(None), 10);
    assert_eq!(lb(Some(&ts[0])), 0);
    assert_eq!(lb(Some(&ts[1])), 1);
    assert_eq!(lb(Some(&timestamp(2, 1, node))), 2);
    // The early returns, and no clamping to [begin, end].
    assert_eq!(
        unwrap(lower_bound(&mut store, &owner, 3, 3, Some(&ts[9]))),
        3
    );
    assert_eq!(
        unwrap(lower_bound(&mut store, &owner, 0, 0, Some(&ts[9]))),
        0
    );
    assert_eq!(
        unwrap(lower_bound(&mut store, &owner, 5, 8, Some(&ts[1]))),
        1
    );
    assert_eq!(
        unwrap(lower_bound(&mut store, &owner, 0, 4, Some(&ts[9]))),
        9
    );
    assert_eq!(
        unwrap(lower_bound(
            &mut store,
            &owner,
            0,
            4,
            Some(&timestamp(99, 0, 0))
        )),
        4
    );
}

// ---------------------------------------------------------------------------------------
// §8 V2: 50,000 timestamps, level-independent values

#[test]
fn v2_fifty_thousand_timestamps() {
    let owner = [0; 16];
    let mut random = SplitMix(0x5eed);
    let items: Vec<(Timestamp, u8)> = (0..50_000)
        .map(|millis| (timestamp(millis, 0, 0), draw_level(|| random.unit())))
        .collect();
    let mut store = MemoryStore::new();
    for &(t, level) in &items {
        assert!(unwrap(insert(
            &mut store,
            &owner,
            &t,
            level,
            Some(Strategy::Append)
        )));
    }
    let inserted = store.probes;

    assert_eq!(unwrap(size(&mut store, &owner)), 50_000);
    assert_eq!(
        unwrap(fingerprint(&mut store, &owner, 0, 50_000)),
        hex(test_support::value("v2.fingerprint.0.50000"))
    );
    assert_eq!(
        unwrap(fingerprint(&mut store, &owner, 12345, 23456)),
        hex(test_support::value("v2.fingerprint.12345.23456"))
    );
    let expected = test_support::values("v2.buckets");
    assert_eq!(expected.len(), 16);
    let buckets = balanced_buckets(50_000);
    assert_eq!(buckets[0], 3125);
    let work = |store: &MemoryStore| store.probes + store.rows_read;
    let before = work(&store);
    let ranges = unwrap(fingerprint_ranges(&mut store, &owner, &buckets));
    let range_work = work(&store) - before;
    for (i, ((upper, fp), expected)) in ranges.iter().zip(expected).enumerate() {
        assert_eq!(*fp, hex(expected), "bucket {i}");
        let want = (i < 15).then(|| timestamp(buckets[i], 0, 0));
        assert_eq!(*upper, want, "bucket {i}");
    }

    // The walks share their tops: less work (seeks + rows) than 16 walks from the root.
    let before = work(&store);
    for &bucket in &buckets {
        unwrap(fingerprint(&mut store, &owner, 0, bucket));
    }
    let separate_work = work(&store) - before;
    assert!(
        range_work * 5 < separate_work * 4,
        "{range_work} vs {separate_work}"
    );
    // Appends with a true hint: about 2 probes per level-1 timestamp.
    assert!(
        inserted < 50_000 * 6,
        "{inserted} probes for 50,000 appends"
    );

    let set: BTreeMap<Timestamp, u8> = items.iter().copied().collect();
    assert_eq!(store.rows(&owner), model_rows(&set));
}

#[test]
fn v2_shuffled_without_hints_gives_the_same_rows() {
    let owner = [0; 16];
    let mut random = SplitMix(7);
    let mut items: Vec<(Timestamp, u8)> = (0..20_000)
        .map(|millis| (timestamp(millis, 0, 0), draw_level(|| random.unit())))
        .collect();
    let set: BTreeMap<Timestamp, u8> = items.iter().copied().collect();
    random.shuffle(&mut items);
    let mut store = MemoryStore::new();
    for &(t, level) in &items {
        assert!(put(&mut store, &owner, &t, level));
    }
    let per_insert = store.probes as f64 / items.len() as f64;
    assert!(per_insert < 30.0, "{per_insert} probes per shuffled insert");
    assert_eq!(store.rows(&owner), model_rows(&set));
    assert_eq!(
        unwrap(fingerprint(&mut store, &owner, 0, 20_000)),
        Sorted::new(&set).fingerprint(0, 20_000)
    );
}

// ---------------------------------------------------------------------------------------
// Probe counts

#[test]
fn probes_per_operation_stay_logarithmic() {
    let owner = [9; 16];
    let mut random = SplitMix(99);
    let mut store = MemoryStore::new();
    for millis in 1..=20_000 {
        let level = draw_level(|| random.unit());
        put(&mut store, &owner, &timestamp(millis, 0, 0), level);
    }
    let top = 10; // an upper bound of the top level

    // A level-1 append with a true hint: max_level + next_timestamp, then one write.
    let (probes, writes) = (store.probes, store.writes);
    assert!(unwrap(insert(
        &mut store,
        &owner,
        &timestamp(30_000, 0, 0),
        1,
        Some(Strategy::Append)
    )));
    assert_eq!((store.probes - probes, store.writes - writes), (2, 1));

    // A level-1 prepend with a true hint: max_level + prev_timestamp + one probe per level
    // above 1.
    let probes = store.probes;
    assert!(unwrap(insert(
        &mut store,
        &owner,
        &[0; 16],
        1,
        Some(Strategy::Prepend)
    )));
    assert!(store.probes - probes <= 2 + top);

    // Reads.
    for index in [0, 1, 9_999, 20_001] {
        let probes = store.probes;
        unwrap(at(&mut store, &owner, index));
        assert!(store.probes - probes <= 6 * top, "at({index})");
    }
    let probes = store.probes;
    unwrap(size(&mut store, &owner));
    assert!(store.probes - probes <= 6 * top);
    let probes = store.probes;
    unwrap(lower_bound(
        &mut store,
        &owner,
        0,
        20_002,
        Some(&timestamp(12_345, 0, 1)),
    ));
    assert!(store.probes - probes <= 6 * top);
}

// ---------------------------------------------------------------------------------------
// Errors

#[test]
fn out_of_range_arguments_are_errors() {
    let mut store = v1_store();
    let owner = &V1_OWNER;
    assert_eq!(at(&mut store, owner, 16), Err(Error::IndexOutOfRange));
    assert_eq!(at(&mut store, owner, u64::MAX), Err(Error::IndexOutOfRange));
    assert_eq!(
        fingerprint_ranges(&mut store, owner, &[4, 17]),
        Err(Error::BucketPastSize)
    );
    assert_eq!(
        fingerprint_ranges(&mut store, owner, &[u64::MAX]),
        Err(Error::BucketPastSize)
    );
    assert_eq!(
        fingerprint_ranges(&mut store, owner, &[16, 17]),
        Err(Error::BucketPastSize)
    );
    assert_eq!(
        fingerprint_ranges(&mut store, owner, &[0, 17]),
        Err(Error::BucketPastSize)
    );
    assert_eq!(
        fingerprint_ranges(&mut store, owner, &[4, 4]),
        Err(Error::BucketsNotAscending)
    );
    assert_eq!(
        fingerprint_ranges(&mut store, owner, &[8, 4, 12]),
        Err(Error::BucketsNotAscending)
    );
    assert_eq!(
        fingerprint(&mut store, owner, 5, 4),
        Err(Error::BeginAfterEnd)
    );
    assert_eq!(
        fingerprint(&mut store, owner, 0, 17),
        Err(Error::EndPastSize)
    );
    assert_eq!(
        fingerprint(&mut store, owner, 17, 17),
        Err(Error::EndPastSize)
    );
    assert_eq!(
        lower_bound(&mut store, owner, 5, 4, None),
        Err(Error::BeginAfterEnd)
    );
    let t = timestamp(100, 0, 0);
    for level in [0, 11, 255] {
        assert_eq!(
            insert(&mut store, owner, &t, level, None),
            Err(Error::Argument(ArgumentError::Level))
        );
    }
    assert_eq!(level_arg(SqlNumber::Real(2.5)), Err(ArgumentError::Level));
    assert_eq!(
        insert(&mut store, owner, &INFINITE_TIMESTAMP, 1, None),
        Err(Error::Argument(ArgumentError::ReservedTimestamp))
    );
    // Any timestamp with millis 2^48 − 1 is reserved, not only the all-0xFF one.
    let mut reserved = [0u8; 16];
    reserved[..6].fill(0xFF);
    assert_eq!(
        insert(&mut store, owner, &reserved, 1, None),
        Err(Error::Argument(ArgumentError::ReservedTimestamp))
    );
    assert!(is_reserved_timestamp(&reserved));
    let mut largest = [0xFF; 16];
    largest[5] = 0xFE;
    assert!(!is_reserved_timestamp(&largest));
    assert_eq!(owner_arg(&[0; 15]), Err(ArgumentError::OwnerId));
    assert_eq!(timestamp_arg(&[0; 17]), Err(ArgumentError::Timestamp));
    // Nothing above changed a row.
    assert_v1_rows(&store, "after refused calls");
    // Edge buckets: empty list, a zero boundary.
    assert_eq!(unwrap(fingerprint_ranges(&mut store, owner, &[])), []);
    let ranges = unwrap(fingerprint_ranges(&mut store, owner, &[0, 16]));
    assert_eq!(ranges[0], (Some(v1_items()[0].0), ZERO_FINGERPRINT));
    assert_eq!(ranges[1], (None, hex("08ae59dd63487817506bee46")));
}

#[test]
fn error_messages_carry_no_values() {
    let errors: Vec<Error<Infallible>> = vec![
        Error::IndexOutOfRange,
        Error::BeginAfterEnd,
        Error::EndPastSize,
        Error::BucketsNotAscending,
        Error::BucketPastSize,
        Error::Corrupt("c below 1 (or NULL)"),
        Error::Argument(ArgumentError::Level),
        Error::Argument(ArgumentError::BucketsJson),
    ];
    for error in errors {
        let message = error.to_string();
        assert!(!message.is_empty());
        assert!(
            !message
                .chars()
                .any(|c| c.is_ascii_digit() && c != '0' && c != '1'),
            "{message}"
        );
    }
}

/// A store whose level probes ignore `after`: a walk trusting it would never end.
struct IgnoresAfter(MemoryStore);

impl SkiplistStore for IgnoresAfter {
    type Error = Infallible;
    fn max_level(&mut self, owner: &OwnerId) -> Result<Option<i64>, Infallible> {
        self.0.max_level(owner)
    }
    fn scan_level(
        &mut self,
        owner: &OwnerId,
        level: u8,
        _after: Option<&Timestamp>,
        before: Option<&Timestamp>,
        visit: &mut dyn FnMut(&Node) -> bool,
    ) -> Result<(), Infallible> {
        self.0.scan_level(owner, level, None, before, visit)
    }
    fn last_at_level(
        &mut self,
        owner: &OwnerId,
        level: u8,
        _after: Option<&Timestamp>,
        before: &Timestamp,
    ) -> Result<Option<Node>, Infallible> {
        self.0.last_at_level(owner, level, None, before)
    }
    fn next_timestamp(
        &mut self,
        owner: &OwnerId,
        _after: Option<&Timestamp>,
    ) -> Result<Option<Timestamp>, Infallible> {
        self.0.next_timestamp(owner, None)
    }
    fn prev_timestamp(
        &mut self,
        owner: &OwnerId,
        before: &Timestamp,
    ) -> Result<Option<Timestamp>, Infallible> {
        self.0.prev_timestamp(owner, before)
    }
    fn contains(&mut self, owner: &OwnerId, t: &Timestamp) -> Result<bool, Infallible> {
        self.0.contains(owner, t)
    }
    fn insert(&mut self, owner: &OwnerId, level: u8, node: &Node) -> Result<bool, Infallible> {
        self.0.insert(owner, level, node)
    }
    fn update(&mut self, owner: &OwnerId, node: &Node) -> Result<(), Infallible> {
        self.0.update(owner, node)
    }
}

#[test]
fn a_misbehaving_store_is_reported_not_looped_on() {
    let mut store = IgnoresAfter(v1_store());
    let owner = &V1_OWNER;
    let corrupt = Err(Error::Corrupt(
        "the store returned a row outside the requested range",
    ));
    assert_eq!(at(&mut store, owner, 12).map(|_| ()), corrupt);
    assert_eq!(size(&mut store, owner).map(|_| ()), corrupt);
    assert_eq!(
        rank(&mut store, owner, &timestamp(9, 0, 0)).map(|_| ()),
        corrupt
    );
    assert_eq!(
        fingerprint_ranges(&mut store, owner, &[4, 8]).map(|_| ()),
        corrupt
    );
    assert_eq!(
        insert(&mut store, owner, &timestamp(9, 1, 0), 1, None).map(|_| ()),
        corrupt
    );
    assert_v1_rows(&store.0, "a refused insert writes nothing");
}

#[test]
fn corrupt_rows_are_reported() {
    let owner = &V1_OWNER;
    let row = |level, c| Row {
        level,
        h1: 0,
        h2: 0,
        c,
    };

    let mut store = v1_store();
    store.put_raw(owner, &timestamp(99, 0, 0), row(11, 1));
    assert!(matches!(size(&mut store, owner), Err(Error::Corrupt(_))));
    assert!(matches!(
        insert(&mut store, owner, &timestamp(100, 0, 0), 1, None),
        Err(Error::Corrupt(_))
    ));

    let mut store = v1_store();
    // A NULL c reads as 0.
    store.put_raw(owner, &timestamp(3, 0, *V1_NODE), row(1, 0));
    assert!(matches!(at(&mut store, owner, 2), Err(Error::Corrupt(_))));

    let mut store = v1_store();
    let bad_hash = Row {
        level: 1,
        h1: 1 << 48,
        h2: 0,
        c: 1,
    };
    store.put_raw(owner, &timestamp(3, 0, *V1_NODE), bad_hash);
    assert!(matches!(
        fingerprint(&mut store, owner, 0, 3),
        Err(Error::Corrupt(_))
    ));

    // A span that counts fewer rows than the insert must take out of it.
    let mut store = v1_store();
    store.put_raw(owner, &timestamp(5, 0, *V1_NODE), row(3, 2));
    let before = store.dump(owner);
    assert!(matches!(
        insert(&mut store, owner, &timestamp(4, 1, 0), 3, None),
        Err(Error::Corrupt(_))
    ));
    assert_eq!(
        store.dump(owner),
        before,
        "nothing is written on a corrupt table"
    );
}

// ---------------------------------------------------------------------------------------
// Property test against the model

/// One insert call: owner 0..3, a key into a small space (so duplicates happen), a level
/// source, and a hint choice.
type Op = (u8, u32, u32, u8);

fn key_timestamp(key: u32, key_space: u32) -> Timestamp {
    match key {
        0 => [0; 16],
        // The largest real timestamp: millis 2^48 − 2, counter 65535, node ffff….
        k if k + 1 == key_space => {
            let mut t = [0xFF; 16];
            t[5] = 0xFE;
            t
        }
        // Spread keys over the bytes so that comparisons look past the first bytes.
        k => timestamp(
            u64::from(k / 7),
            (k % 7) as u16,
            u64::from(k).wrapping_mul(0x9E37_79B9),
        ),
    }
}

fn level_of(mode: u8, raw: u32) -> u8 {
    match mode {
        // Uniform over 1..=10: tall towers everywhere.
        0 => (raw % 10) as u8 + 1,
        // Evolu's distribution.
        1 => 1 + (raw.trailing_zeros() / 2).min(9) as u8,
        // Only level 1.
        2 => 1,
        // 1 and 2.
        3 => 1 + (raw % 2) as u8,
        // Few, far apart levels.
        _ => [1, 5, 10][(raw % 3) as usize],
    }
}

fn run_ops(ops: &[Op], key_space: u32, mode: u8, check_midway: bool) {
    let owners: [OwnerId; 3] = [[0; 16], [0x80; 16], [0xFF; 16]];
    let mut store = MemoryStore::new();
    let mut model: [BTreeMap<Timestamp, u8>; 3] = Default::default();
    let mut bounds: [Option<(Timestamp, Timestamp)>; 3] = [None; 3];
    for (i, &(owner, key, raw, hint)) in ops.iter().enumerate() {
        let o = usize::from(owner % 3);
        let t = key_timestamp(key % key_space, key_space);
        let level = level_of(mode, raw);
        // Hints: none, always-claimed append/prepend/insert (often wrong), or the relay's.
        let (first, last) = bounds[o].unwrap_or((t, t));
        let relay = if t > last {
            Strategy::Append
        } else if t < first {
            Strategy::Prepend
        } else {
            Strategy::Insert
        };
        bounds[o] = Some((first.min(t), last.max(t)));
        let hint = match hint % 5 {
            0 => None,
            1 => Some(Strategy::Append),
            2 => Some(Strategy::Prepend),
            3 => Some(Strategy::Insert),
            _ => Some(relay),
        };
        let new = !model[o].contains_key(&t);
        let inserted = unwrap(insert(&mut store, &owners[o], &t, level, hint));
        assert_eq!(inserted, new, "insert #{i} reported the wrong outcome");
        model[o].entry(t).or_insert(level);
        if check_midway && i == ops.len() / 2 {
            for (owner, set) in owners.iter().zip(&model) {
                assert_eq!(store.rows(owner), model_rows(set), "midway, after #{i}");
            }
        }
    }
    for (owner, set) in owners.iter().zip(&model) {
        check_against_model(&mut store, owner, set);
    }
}

fn ops_strategy() -> impl proptest::strategy::Strategy<Value = (Vec<Op>, u32, u8)> {
    let len = prop_oneof![0usize..40, 0usize..400, 0usize..3000];
    (len, 1u32..5000, 0u8..5).prop_flat_map(|(len, key_space, mode)| {
        (
            proptest::collection::vec((0u8..3, any::<u32>(), any::<u32>(), 0u8..5), len),
            Just(key_space),
            Just(mode),
        )
    })
}

/// 40 cases by default; `PROPTEST_CASES=1000` for a longer run.
fn proptest_cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(40)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases()))]

    #[test]
    fn rows_and_reads_match_the_model((ops, key_space, mode) in ops_strategy()) {
        run_ops(&ops, key_space, mode, true);
    }
}

#[test]
fn model_agrees_with_v1() {
    let set: BTreeMap<Timestamp, u8> = v1_items().into_iter().collect();
    let mut store = MemoryStore::new();
    for (t, row) in model_rows(&set) {
        store.put_raw(&V1_OWNER, &t, row);
    }
    assert_v1_rows(&store, "the brute-force model");
}

#[test]
fn dense_keys_with_every_level_mode() {
    // Deterministic large runs on top of the random ones: every level mode, 3 owners.
    for mode in 0..5 {
        let mut random = SplitMix(u64::from(mode) + 1);
        let ops: Vec<Op> = (0..2500)
            .map(|_| {
                (
                    random.below(3) as u8,
                    random.next_u64() as u32,
                    random.next_u64() as u32,
                    random.below(5) as u8,
                )
            })
            .collect();
        run_ops(&ops, 1500, mode, false);
    }
}

/// The work each operation does on 50,000 timestamps with Evolu's level distribution
/// (seeded, so the counts are exact): seeks and scanned rows per call stay within the
/// skiplist's logarithmic bounds, and an append hint saves seeks. The counts are printed
/// with `--nocapture`.
#[test]
fn work_per_operation_stays_logarithmic() {
    let owner = [0; 16];
    let n = 50_000u64;
    let log_n = (n as f64).log2();
    let mut append_seeks = [0.0; 2];
    let mut random = SplitMix(2024);
    let ascending: Vec<(Timestamp, u8)> = (0..n)
        .map(|millis| (timestamp(millis, 0, 0), draw_level(|| random.unit())))
        .collect();
    let mut descending = ascending.clone();
    descending.reverse();
    let mut shuffled = ascending.clone();
    random.shuffle(&mut shuffled);
    let orders = [
        ("append", &ascending, Some(Strategy::Append)),
        ("append, no hint", &ascending, None),
        ("prepend", &descending, Some(Strategy::Prepend)),
        ("prepend, no hint", &descending, None),
        ("shuffled, no hint", &shuffled, None),
    ];
    for (name, items, hint) in orders {
        let mut store = MemoryStore::new();
        for (t, level) in items.iter() {
            unwrap(insert(&mut store, &owner, t, *level, hint));
        }
        let seeks = store.probes as f64 / n as f64;
        let rows = store.rows_read as f64 / n as f64;
        let writes = store.writes as f64 / n as f64;
        eprintln!(
            "{name:>18}: {seeks:.2} seeks, {rows:.2} scanned rows, {writes:.2} writes per insert"
        );
        assert!(seeks <= log_n, "{name}: {seeks:.2} seeks per insert");
        assert!(
            rows <= 8.0 && writes <= 8.0,
            "{name}: {rows:.2} rows, {writes:.2} writes"
        );
        match name {
            "append" => append_seeks[0] = seeks,
            "append, no hint" => append_seeks[1] = seeks,
            _ => {}
        }
    }
    assert!(
        append_seeks[0] * 2.0 < append_seeks[1],
        "the append hint saves seeks: {append_seeks:?}"
    );
    let mut store = MemoryStore::new();
    relay_insert(&mut store, &owner, &shuffled);
    eprintln!(
        "{:>18}: {:.2} seeks, {:.2} scanned rows, {:.2} writes per insert",
        "shuffled, relay",
        store.probes as f64 / n as f64,
        store.rows_read as f64 / n as f64,
        store.writes as f64 / n as f64
    );
    let buckets = balanced_buckets(n);
    type Read<'a> = &'a dyn Fn(&mut MemoryStore);
    let reads: [(&str, u64, Read); 4] = [
        ("at", 1000, &|store| {
            for i in 0..1000 {
                unwrap(at(store, &owner, i * (n - 1) / 999));
            }
        }),
        ("size", 1, &|store| {
            unwrap(size(store, &owner));
        }),
        ("fingerprint_ranges (16 buckets)", 1, &|store| {
            unwrap(fingerprint_ranges(store, &owner, &buckets));
        }),
        ("lower_bound", 1000, &|store| {
            for i in 0..1000 {
                let bound = timestamp(i * 50 + 7, 1, 0);
                unwrap(lower_bound(store, &owner, 0, n, Some(&bound)));
            }
        }),
    ];
    for (name, calls, run) in reads {
        let (probes, rows) = (store.probes, store.rows_read);
        run(&mut store);
        let seeks = (store.probes - probes) as f64 / calls as f64;
        let rows = (store.rows_read - rows) as f64 / calls as f64;
        eprintln!("{name}: {seeks:.1} seeks, {rows:.1} scanned rows per call");
        // fingerprint_ranges walks each of its 16 buckets' bounds.
        let walks = if name.starts_with("fingerprint") {
            16.0
        } else {
            1.0
        };
        assert!(seeks <= walks * log_n, "{name}: {seeks:.1} seeks per call");
        assert!(
            rows <= walks * 2.0 * log_n,
            "{name}: {rows:.1} rows per call"
        );
    }
}
