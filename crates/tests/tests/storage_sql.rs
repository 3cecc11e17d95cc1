//! The `evolu_*` SQL functions over a real SQLite connection: `docs/evolu-storage.md` §8's
//! vectors through SQL (exact rows, digests, reads), level-independent V2 values, and
//! the errors, atomicity and connection life cycle of the functions.

use cipherlite_sqlite::{self as sqlite, ffi, ColumnType, Connection, OpenFlags};
use cipherlite_storage::register_sql_functions;
use sha2::{Digest, Sha256};

// §1.1's DDL (SCHEMA) and §8's vectors, from testdata/evolu/ (shared with the unit tests
// and the JS tests).
// The helpers are the storage crate's unit tests' too; not all are used here.
#[allow(dead_code)]
#[path = "../../storage/src/test_support.rs"]
mod test_support;
use test_support::{
    hex, timestamp, to_hex, SplitMix, SCHEMA, V1_DIGEST, V1_DUMP, V1_LEVELS, V1_NODE, V1_OWNER,
};

// ---------------------------------------------------------------------------------------
// Helpers

/// A parameter or a column value.
#[derive(Clone, Debug, PartialEq)]
enum V {
    Null,
    Int(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

fn blob(bytes: &[u8]) -> V {
    V::Blob(bytes.to_vec())
}

fn open_bare() -> Connection {
    let conn = Connection::open(":memory:", OpenFlags::default(), None).expect("open");
    register_sql_functions(&conn).expect("register");
    conn
}

fn open() -> Connection {
    let conn = open_bare();
    exec(&conn, SCHEMA);
    conn
}

fn exec(conn: &Connection, sql: &str) {
    conn.exec_each(sql, |_| Ok(()))
        .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
}

fn query(conn: &Connection, sql: &str, params: &[V]) -> sqlite::Result<Vec<Vec<V>>> {
    let (stmt, _) = conn.prepare(sql, false)?;
    let mut stmt = stmt.expect("a statement");
    for (i, p) in (1..).zip(params) {
        match p {
            V::Null => stmt.bind_null(i)?,
            V::Int(v) => stmt.bind_int64(i, *v)?,
            V::Real(v) => stmt.bind_double(i, *v)?,
            V::Text(v) => stmt.bind_text(i, v.as_bytes())?,
            V::Blob(v) => stmt.bind_blob(i, v)?,
        }
    }
    let mut rows = Vec::new();
    while stmt.step()? {
        rows.push(
            (0..stmt.column_count())
                .map(|c| match stmt.column_type(c) {
                    ColumnType::Null => V::Null,
                    ColumnType::Integer => V::Int(stmt.column_int64(c)),
                    ColumnType::Float => V::Real(stmt.column_double(c)),
                    ColumnType::Text => {
                        V::Text(String::from_utf8_lossy(stmt.column_text(c)).into_owned())
                    }
                    ColumnType::Blob => V::Blob(stmt.column_blob(c).to_vec()),
                })
                .collect(),
        );
    }
    Ok(rows)
}

/// The single value of a one-row, one-column query.
fn value(conn: &Connection, sql: &str, params: &[V]) -> sqlite::Result<V> {
    let mut rows = query(conn, sql, params)?;
    assert_eq!(rows.len(), 1, "{sql}");
    Ok(rows.remove(0).remove(0))
}

fn int(conn: &Connection, sql: &str, params: &[V]) -> i64 {
    match value(conn, sql, params) {
        Ok(V::Int(v)) => v,
        other => panic!("{sql}: {other:?}"),
    }
}

fn bytes(conn: &Connection, sql: &str, params: &[V]) -> Vec<u8> {
    match value(conn, sql, params) {
        Ok(V::Blob(v)) => v,
        other => panic!("{sql}: {other:?}"),
    }
}

fn error(conn: &Connection, sql: &str, params: &[V]) -> sqlite::Error {
    match query(conn, sql, params) {
        Err(e) => e,
        Ok(rows) => panic!("{sql}: expected an error, got {rows:?}"),
    }
}

/// §8's canonical dump of one owner's rows.
fn dump(conn: &Connection, owner: &[u8]) -> String {
    let rows = query(
        conn,
        "select t, l, h1, h2, c from evolu_timestamp where ownerId = ? order by t",
        &[blob(owner)],
    )
    .expect("dump");
    rows.iter()
        .map(|row| match row.as_slice() {
            [V::Blob(t), V::Int(l), V::Int(h1), V::Int(h2), V::Int(c)] => {
                format!("{},{l},{h1},{h2},{c}\n", to_hex(t))
            }
            other => panic!("a row of unexpected types: {other:?}"),
        })
        .collect()
}

fn insert_sql(conn: &Connection, owner: &[u8], t: &[u8], level: V, strategy: V) -> i64 {
    int(
        conn,
        "select evolu_skiplist_insert(?, ?, ?, ?)",
        &[blob(owner), blob(t), level, strategy],
    )
}

// ---------------------------------------------------------------------------------------
// §8 V1

fn v1_t(millis: u64) -> [u8; 16] {
    timestamp(millis, 0, *V1_NODE)
}

fn assert_v1(conn: &Connection, how: &str) {
    let dump = dump(conn, &V1_OWNER[..]);
    assert_eq!(dump, V1_DUMP, "{how}");
    assert_eq!(
        to_hex(&Sha256::digest(dump.as_bytes())),
        *V1_DIGEST,
        "{how}"
    );
}

/// The V1 skiplist, appended in order with the `append` hint and REAL levels (as JS
/// binds them).
fn v1_conn() -> Connection {
    let conn = open();
    for millis in 1..=16u64 {
        let level = V::Real(f64::from(V1_LEVELS[millis as usize - 1]));
        let strategy = V::Text("append".into());
        assert_eq!(
            insert_sql(&conn, &V1_OWNER[..], &v1_t(millis), level, strategy),
            1
        );
    }
    conn
}

#[test]
fn v1_rows_for_every_insertion_order_and_hint() {
    assert_v1(&v1_conn(), "append");

    let conn = open();
    for millis in (1..=16u64).rev() {
        let level = V::Int(i64::from(V1_LEVELS[millis as usize - 1]));
        let inserted = insert_sql(
            &conn,
            &V1_OWNER[..],
            &v1_t(millis),
            level,
            V::Text("prepend".into()),
        );
        assert_eq!(inserted, 1);
    }
    assert_v1(&conn, "prepend");

    let mut random = SplitMix(7);
    for round in 0..20 {
        let mut order: Vec<u64> = (1..=16).collect();
        random.shuffle(&mut order);
        let conn = open();
        // Evolu's relay strategy: from the running bounds, which start at the first
        // timestamp (so the first insert is an `insert` into an empty skiplist).
        let mut bounds = (order[0], order[0]);
        for &millis in &order {
            let strategy = if millis > bounds.1 {
                bounds.1 = millis;
                "append"
            } else if millis < bounds.0 {
                bounds.0 = millis;
                "prepend"
            } else {
                "insert"
            };
            let strategy = if round % 2 == 0 {
                V::Text(strategy.into())
            } else {
                V::Null
            };
            let level = V::Int(i64::from(V1_LEVELS[millis as usize - 1]));
            assert_eq!(
                insert_sql(&conn, &V1_OWNER[..], &v1_t(millis), level, strategy),
                1
            );
        }
        assert_v1(&conn, &format!("shuffled round {round}"));
    }
}

#[test]
fn v1_reads_through_sql() {
    let conn = v1_conn();
    let owner = || blob(&V1_OWNER[..]);
    assert_eq!(int(&conn, "select evolu_skiplist_size(?)", &[owner()]), 16);

    let fingerprint = |begin: V, end: V| {
        bytes(
            &conn,
            "select evolu_skiplist_fingerprint(?, ?, ?)",
            &[owner(), begin, end],
        )
    };
    assert_eq!(
        fingerprint(V::Int(0), V::Int(16)),
        hex::<12>("08ae59dd63487817506bee46")
    );
    assert_eq!(
        fingerprint(V::Real(3.0), V::Real(11.0)),
        hex::<12>("0edec352a35475dc56e9460c")
    );
    assert_eq!(fingerprint(V::Int(5), V::Int(5)), [0; 12]);

    let ranges = query(
        &conn,
        "select upper_bound, fingerprint from evolu_fingerprint_ranges(?, ?)",
        &[owner(), V::Text("[4,8,12,16]".into())],
    )
    .expect("ranges");
    let expected = [
        (Some(v1_t(5)), "4e81acff0bb8f5cbf8bd0eaa"),
        (Some(v1_t(9)), "f0718c348b7a8436f46cdc86"),
        (Some(v1_t(13)), "42e0237298754f7bd6b6fb74"),
        (None, "f4be5a647bff46918a0cc71e"),
    ];
    assert_eq!(ranges.len(), expected.len());
    for (row, (upper, fp)) in ranges.iter().zip(expected) {
        let upper = upper.map_or(V::Null, |t| blob(&t));
        assert_eq!(row, &vec![upper, blob(&hex::<12>(fp))]);
    }
    // JSON numbers written as reals are integral too.
    let same = query(
        &conn,
        "select upper_bound, fingerprint from evolu_fingerprint_ranges(?, ?)",
        &[owner(), V::Text("[4.0, 8, 1.2e1, 16]".into())],
    )
    .expect("ranges");
    assert_eq!(same, ranges);

    let lower_bound = |t: V| {
        int(
            &conn,
            "select evolu_skiplist_lower_bound(?, 0, 16.0, ?)",
            &[owner(), t],
        )
    };
    assert_eq!(lower_bound(blob(&timestamp(5, 1, 0))), 5);
    assert_eq!(lower_bound(blob(&v1_t(7))), 6);
    assert_eq!(lower_bound(blob(&timestamp(100, 0, 0))), 16);
    assert_eq!(lower_bound(V::Null), 16, "NULL is the infinite upper bound");

    assert_eq!(
        bytes(
            &conn,
            "select evolu_skiplist_at(?, ?)",
            &[owner(), V::Int(10)]
        ),
        hex::<16>("00000000000b000068a2a7bf3f85a096")
    );
    for index in 0..16u64 {
        let t = bytes(
            &conn,
            "select evolu_skiplist_at(?, ?)",
            &[owner(), V::Real(index as f64)],
        );
        assert_eq!(t, v1_t(index + 1), "index {index}");
    }
}

#[test]
fn evolus_plan_test_rows() {
    // Storage.test.ts L220–288: levels 1, 1, 1, 1, 2 for millis 100, 200, 0, 150, 175.
    let conn = open();
    let owner = [0; 16];
    for (millis, level, strategy) in [
        (100, 1, "append"),
        (200, 1, "append"),
        (0, 1, "prepend"),
        (150, 1, "insert"),
        (175, 2, "insert"),
    ] {
        let t = timestamp(millis, 0, 0);
        let inserted = insert_sql(&conn, &owner, &t, V::Int(level), V::Text(strategy.into()));
        assert_eq!(inserted, 1);
    }
    assert_eq!(
        dump(&conn, &owner),
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
fn duplicates_return_0_and_change_nothing() {
    let conn = v1_conn();
    let rowids = query(&conn, "select rowid, t from evolu_timestamp", &[]).expect("rowids");
    for millis in 1..=16u64 {
        for level in [V::Int(1), V::Int(10), V::Null] {
            for strategy in ["append", "prepend", "insert"] {
                let inserted = insert_sql(
                    &conn,
                    &V1_OWNER[..],
                    &v1_t(millis),
                    level.clone(),
                    V::Text(strategy.into()),
                );
                assert_eq!(inserted, 0, "millis {millis}");
            }
        }
        assert_eq!(
            int(
                &conn,
                "select evolu_skiplist_insert(?, ?)",
                &[blob(&V1_OWNER[..]), blob(&v1_t(millis))]
            ),
            0
        );
    }
    assert_v1(&conn, "after duplicates");
    let after = query(&conn, "select rowid, t from evolu_timestamp", &[]).expect("rowids");
    assert_eq!(
        rowids, after,
        "rows are updated in place, never re-inserted"
    );
}

#[test]
fn rowids_follow_first_insertion_order() {
    let conn = open();
    let order = [9u64, 3, 14, 1, 16, 7, 11, 2, 5, 12, 4, 15, 8, 6, 10, 13];
    for &millis in &order {
        let level = V::Int(i64::from(V1_LEVELS[millis as usize - 1]));
        insert_sql(&conn, &V1_OWNER[..], &v1_t(millis), level, V::Null);
    }
    assert_v1(&conn, "scattered");
    let rows = query(&conn, "select t from evolu_timestamp order by rowid", &[]).expect("rows");
    let expected: Vec<Vec<V>> = order.iter().map(|&m| vec![blob(&v1_t(m))]).collect();
    assert_eq!(rows, expected);
}

#[test]
fn owners_are_independent() {
    let conn = open();
    let owners = [[1u8; 16], [2; 16], [3; 16]];
    let mut random = SplitMix(99);
    let mut items: Vec<(usize, u64, i64)> = (0..3)
        .flat_map(|o| (1..=16u64).map(move |m| (o, m, i64::from(V1_LEVELS[m as usize - 1]))))
        .collect();
    random.shuffle(&mut items);
    for &(o, millis, level) in &items {
        insert_sql(&conn, &owners[o], &v1_t(millis), V::Int(level), V::Null);
    }
    let expected = V1_DUMP.to_string();
    for owner in &owners {
        assert_eq!(dump(&conn, owner), expected);
        assert_eq!(
            int(&conn, "select evolu_skiplist_size(?)", &[blob(owner)]),
            16
        );
    }
    assert_eq!(
        int(&conn, "select evolu_skiplist_size(?)", &[blob(&[4; 16])]),
        0
    );
}

#[test]
fn an_empty_owner() {
    let conn = open();
    let owner = || blob(&[9; 16]);
    assert_eq!(int(&conn, "select evolu_skiplist_size(?)", &[owner()]), 0);
    assert_eq!(
        bytes(
            &conn,
            "select evolu_skiplist_fingerprint(?, 0, 0)",
            &[owner()]
        ),
        [0; 12]
    );
    assert_eq!(
        int(
            &conn,
            "select evolu_skiplist_lower_bound(?, 0, 0, ?)",
            &[owner(), blob(&[5; 16])]
        ),
        0
    );
    assert!(query(
        &conn,
        "select * from evolu_fingerprint_ranges(?, '[]')",
        &[owner()]
    )
    .expect("no buckets")
    .is_empty());
}

/// Level-independent V2 values, for an appended and a shuffled skiplist.
#[test]
fn v2_fifty_thousand_timestamps() {
    let expected_buckets = test_support::values("v2.buckets");
    assert_eq!(expected_buckets.len(), 16);
    let owner = [0u8; 16];
    let mut random = SplitMix(0x5eed);
    let mut shuffled: Vec<u64> = (0..50_000).collect();
    random.shuffle(&mut shuffled);
    let appended: Vec<u64> = (0..50_000).collect();
    for (how, order, level) in [
        ("append", appended, V::Null),
        ("shuffled", shuffled, V::Null),
    ] {
        let conn = open();
        exec(&conn, "begin");
        let (stmt, _) = conn
            .prepare("select evolu_skiplist_insert(?, ?, ?)", false)
            .expect("prepare");
        let mut stmt = stmt.expect("statement");
        for &millis in &order {
            stmt.bind_blob(1, &owner).expect("bind");
            stmt.bind_blob(2, &timestamp(millis, 0, 0)).expect("bind");
            stmt.bind_null(3).expect("bind");
            assert!(stmt.step().expect("insert"));
            assert_eq!(stmt.column_int64(0), 1);
            stmt.reset().expect("reset");
        }
        drop(stmt);
        exec(&conn, "commit");
        let _ = level;

        let o = || blob(&owner);
        assert_eq!(
            int(&conn, "select evolu_skiplist_size(?)", &[o()]),
            50_000,
            "{how}"
        );
        assert_eq!(
            int(&conn, "select count(*) from evolu_timestamp", &[]),
            50_000
        );
        assert_eq!(
            bytes(
                &conn,
                "select evolu_skiplist_fingerprint(?, 0, 50000)",
                &[o()]
            ),
            hex::<12>(test_support::value("v2.fingerprint.0.50000")),
            "{how}"
        );
        assert_eq!(
            bytes(
                &conn,
                "select evolu_skiplist_fingerprint(?, 12345, 23456)",
                &[o()]
            ),
            hex::<12>(test_support::value("v2.fingerprint.12345.23456")),
            "{how}"
        );
        let buckets: Vec<String> = (1..=16).map(|i| (i * 3125).to_string()).collect();
        let json = format!("[{}]", buckets.join(","));
        let ranges = query(
            &conn,
            "select upper_bound, fingerprint from evolu_fingerprint_ranges(?, ?)",
            &[o(), V::Text(json)],
        )
        .expect("ranges");
        assert_eq!(ranges.len(), 16);
        for (i, (row, fp)) in ranges.iter().zip(&expected_buckets).enumerate() {
            let upper = if i < 15 {
                blob(&timestamp((i as u64 + 1) * 3125, 0, 0))
            } else {
                V::Null
            };
            assert_eq!(row, &vec![upper, blob(&hex::<12>(fp))], "{how} bucket {i}");
        }
        for index in [0u64, 1, 3125, 12345, 49_999] {
            assert_eq!(
                bytes(
                    &conn,
                    "select evolu_skiplist_at(?, ?)",
                    &[o(), V::Int(index as i64)]
                ),
                timestamp(index, 0, 0),
                "{how}"
            );
        }
        // Levels were drawn by Evolu's rule: all in 1..=10, about 3 in 4 at level 1.
        let level_1 = int(
            &conn,
            "select count(*) from evolu_timestamp where l = 1",
            &[],
        );
        assert!((36_000..39_000).contains(&level_1), "{how}: {level_1}");
        assert_eq!(
            int(
                &conn,
                "select count(*) from evolu_timestamp where l not between 1 and 10",
                &[]
            ),
            0
        );
    }
}

#[test]
fn seeded_random_sets_match_an_independent_model() {
    // A brute-force model of §3.1 (not the crate's algorithms): c and h of every row
    // from the sorted set of (t, level).
    fn model(set: &std::collections::BTreeMap<[u8; 16], i64>) -> String {
        let items: Vec<(&[u8; 16], i64)> = set.iter().map(|(t, l)| (t, *l)).collect();
        let mut out = String::new();
        for (i, (t, l)) in items.iter().enumerate() {
            let start = items[..i]
                .iter()
                .rposition(|(_, pl)| *pl >= *l)
                .map_or(0, |p| p + 1);
            let mut fp = [0u8; 12];
            for (x, _) in &items[start..=i] {
                let digest = Sha256::digest(x);
                for (f, d) in fp.iter_mut().zip(digest.iter()) {
                    *f ^= d;
                }
            }
            let half = |b: &[u8]| b.iter().fold(0u64, |v, &x| (v << 8) | u64::from(x));
            out.push_str(&format!(
                "{},{l},{},{},{}\n",
                to_hex(*t),
                half(&fp[..6]),
                half(&fp[6..]),
                i + 1 - start
            ));
        }
        out
    }

    let mut random = SplitMix(2024);
    for round in 0..12 {
        let conn = open();
        exec(&conn, "begin");
        let owners = [[0xA0u8; 16], [0xB0; 16]];
        let mut sets = [
            std::collections::BTreeMap::new(),
            std::collections::BTreeMap::new(),
        ];
        let n = 1 + random.below(600);
        for _ in 0..n {
            let o = random.below(2);
            let t = timestamp(random.below(400) as u64, random.below(3) as u16, 7);
            let level = if round % 3 == 2 {
                1 + random.below(10) as i64
            } else {
                random.level()
            };
            let hint = ["append", "prepend", "insert"][random.below(3)];
            let inserted = insert_sql(&conn, &owners[o], &t, V::Int(level), V::Text(hint.into()));
            let new = !sets[o].contains_key(&t);
            assert_eq!(inserted, i64::from(new));
            sets[o].entry(t).or_insert(level);
        }
        exec(&conn, "commit");
        for (owner, set) in owners.iter().zip(&sets) {
            assert_eq!(dump(&conn, owner), model(set), "round {round}");
        }
    }
}

// ---------------------------------------------------------------------------------------
// Errors

fn assert_error(conn: &Connection, sql: &str, params: &[V], message: &str) {
    let e = error(conn, sql, params);
    assert_eq!(e.message, message, "{sql}");
    assert_eq!(e.code, ffi::SQLITE_ERROR, "{sql}");
}

#[test]
fn bad_arguments_are_errors_that_name_the_argument() {
    let conn = v1_conn();
    let owner = || blob(&V1_OWNER[..]);
    let t = || blob(&v1_t(3));
    let insert = "select evolu_skiplist_insert(?, ?, ?, ?)";
    let owner_msg = "evolu_skiplist_insert: argument 1 (ownerId) must be a 16-byte blob";
    for bad in [
        blob(&[1; 15]),
        blob(&[1; 17]),
        blob(&[]),
        V::Text("0123456789abcdef".into()),
        V::Int(1),
        V::Null,
    ] {
        assert_error(&conn, insert, &[bad, t(), V::Null, V::Null], owner_msg);
    }
    for bad in [blob(&[1; 12]), V::Text("x".into()), V::Null] {
        assert_error(
            &conn,
            insert,
            &[owner(), bad, V::Null, V::Null],
            "evolu_skiplist_insert: argument 2 (t) must be a 16-byte blob",
        );
    }
    let mut reserved_millis = [0u8; 16];
    reserved_millis[..6].fill(0xFF);
    for reserved in [[0xFF; 16], reserved_millis] {
        assert_error(
            &conn,
            insert,
            &[owner(), blob(&reserved), V::Null, V::Null],
            "evolu_skiplist_insert: argument 2 (t) must be a timestamp whose millis is below 2^48 - 1 (the reserved value)",
        );
    }
    // A bound NaN is NULL to SQL, but not taken for the NULL that draws a level (or means
    // no hint, or the infinite bound).
    assert_error(
        &conn,
        insert,
        &[owner(), t(), V::Real(f64::NAN), V::Null],
        "evolu_skiplist_insert: argument 3 (level) must be an integer from 1 to 10, or NULL to draw one, not NaN",
    );
    assert_error(
        &conn,
        insert,
        &[owner(), t(), V::Int(1), V::Real(f64::NAN)],
        "evolu_skiplist_insert: argument 4 (strategy) must be 'append', 'prepend', 'insert' or NULL, not NaN",
    );
    assert_error(
        &conn,
        "select evolu_skiplist_lower_bound(?, 0, 1, ?)",
        &[owner(), V::Real(f64::NAN)],
        "evolu_skiplist_lower_bound: argument 4 (t) must be a 16-byte blob, not NaN",
    );
    for bad in [
        V::Int(0),
        V::Int(11),
        V::Int(-1),
        V::Real(2.5),
        V::Real(f64::INFINITY),
        V::Real(1e300),
        V::Text("3".into()),
        blob(&[3]),
    ] {
        assert_error(
            &conn,
            insert,
            &[owner(), t(), bad, V::Null],
            "evolu_skiplist_insert: argument 3 (level) must be an integer from 1 to 10, or NULL to draw one",
        );
    }
    for bad in [
        V::Text("Append".into()),
        V::Text("".into()),
        V::Int(1),
        blob(b"append"),
    ] {
        assert_error(
            &conn,
            insert,
            &[owner(), t(), V::Int(1), bad],
            "evolu_skiplist_insert: argument 4 (strategy) must be 'append', 'prepend', 'insert' or NULL",
        );
    }
    for (bad, name) in [
        (V::Int(-1), "index"),
        (V::Real(1.5), "index"),
        (V::Null, "index"),
    ] {
        assert_error(
            &conn,
            "select evolu_skiplist_at(?, ?)",
            &[owner(), bad],
            &format!("evolu_skiplist_at: argument 2 ({name}) must be a non-negative integer"),
        );
    }
    assert_error(
        &conn,
        "select evolu_skiplist_fingerprint(?, 0, -2.0)",
        &[owner()],
        "evolu_skiplist_fingerprint: argument 3 (end) must be a non-negative integer",
    );
    assert_error(
        &conn,
        "select evolu_skiplist_lower_bound(?, 'a', 1, null)",
        &[owner()],
        "evolu_skiplist_lower_bound: argument 2 (begin) must be a non-negative integer",
    );
    assert_error(
        &conn,
        "select evolu_skiplist_lower_bound(?, 0, 1, x'00')",
        &[owner()],
        "evolu_skiplist_lower_bound: argument 4 (t) must be a 16-byte blob",
    );
    for bad in ["[1,", "[-1]", "[1.5]", "{}", ""] {
        assert_error(
            &conn,
            "select * from evolu_fingerprint_ranges(?, ?)",
            &[owner(), V::Text(bad.into())],
            "evolu_fingerprint_ranges: argument 2 (buckets) must be a JSON array of non-negative integers",
        );
    }
    assert_error(
        &conn,
        "select * from evolu_fingerprint_ranges(?, 16)",
        &[owner()],
        "evolu_fingerprint_ranges: argument 2 (buckets) must be a JSON array of non-negative integers",
    );
    assert_error(
        &conn,
        "select * from evolu_fingerprint_ranges(x'0011', '[1]')",
        &[],
        "evolu_fingerprint_ranges: argument 1 (ownerId) must be a 16-byte blob",
    );
}

#[test]
fn out_of_range_reads_are_errors_not_hangs() {
    let conn = v1_conn();
    let owner = || blob(&V1_OWNER[..]);
    assert_error(
        &conn,
        "select evolu_skiplist_at(?, 16)",
        &[owner()],
        "evolu_skiplist_at: the index is out of range (index >= size)",
    );
    assert_error(
        &conn,
        "select evolu_skiplist_at(?, 0)",
        &[blob(&[0; 16])],
        "evolu_skiplist_at: the index is out of range (index >= size)",
    );
    assert_error(
        &conn,
        "select evolu_skiplist_fingerprint(?, 5, 4)",
        &[owner()],
        "evolu_skiplist_fingerprint: the range begin is after its end",
    );
    assert_error(
        &conn,
        "select evolu_skiplist_fingerprint(?, 0, 17)",
        &[owner()],
        "evolu_skiplist_fingerprint: the range end is past the size of the skiplist",
    );
    assert_error(
        &conn,
        "select evolu_skiplist_lower_bound(?, 5, 4, null)",
        &[owner()],
        "evolu_skiplist_lower_bound: the range begin is after its end",
    );
    assert_error(
        &conn,
        "select * from evolu_fingerprint_ranges(?, '[4,4]')",
        &[owner()],
        "evolu_fingerprint_ranges: the bucket boundaries must be strictly ascending",
    );
    assert_error(
        &conn,
        "select * from evolu_fingerprint_ranges(?, '[4,17]')",
        &[owner()],
        "evolu_fingerprint_ranges: a bucket boundary is past the size of the skiplist",
    );
    // The functions' arity is checked when the statement is prepared.
    let e = error(&conn, "select evolu_skiplist_insert(?)", &[owner()]);
    assert!(
        e.message.contains("wrong number of arguments"),
        "{}",
        e.message
    );
    let e = error(
        &conn,
        "select * from evolu_fingerprint_ranges(?)",
        &[owner()],
    );
    assert_eq!(
        e.message,
        "evolu_fingerprint_ranges(ownerId, buckets) needs both arguments"
    );
}

#[test]
fn messages_never_carry_argument_values() {
    let conn = v1_conn();
    let owner_hex = to_hex(&V1_OWNER[..]);
    let secret = [0xAB; 16];
    let cases: Vec<(&str, Vec<V>)> = vec![
        ("select evolu_skiplist_at(?, 99)", vec![blob(&V1_OWNER[..])]),
        ("select evolu_skiplist_at(?, 99)", vec![blob(&secret[..15])]),
        (
            "select evolu_skiplist_fingerprint(?, 77, 88)",
            vec![blob(&V1_OWNER[..])],
        ),
        (
            "select evolu_skiplist_insert(?, ?, 77)",
            vec![blob(&V1_OWNER[..]), blob(&secret)],
        ),
        (
            "select * from evolu_fingerprint_ranges(?, '[77,88]')",
            vec![blob(&V1_OWNER[..])],
        ),
    ];
    for (sql, params) in cases {
        let message = error(&conn, sql, &params).message.to_lowercase();
        for needle in [owner_hex.as_str(), "abab", "77", "88", "99"] {
            assert!(!message.contains(needle), "{sql}: {message}");
        }
    }
}

#[test]
fn a_missing_table_is_an_error_until_it_exists() {
    let conn = open_bare();
    let e = error(&conn, "select evolu_skiplist_size(?)", &[blob(&[0; 16])]);
    assert_eq!(
        e.message,
        "evolu_skiplist_size: no such table: evolu_timestamp"
    );
    exec(&conn, SCHEMA);
    assert_eq!(
        int(&conn, "select evolu_skiplist_size(?)", &[blob(&[0; 16])]),
        0
    );
}

#[test]
fn store_errors_keep_their_code() {
    let conn = v1_conn();
    exec(&conn, "pragma query_only = 1");
    let e = error(
        &conn,
        "select evolu_skiplist_insert(?, ?, 1)",
        &[blob(&V1_OWNER[..]), blob(&v1_t(100))],
    );
    assert_eq!(e.code, ffi::SQLITE_READONLY, "{}", e.message);
    assert!(
        e.message.starts_with("evolu_skiplist_insert: "),
        "{}",
        e.message
    );
    exec(&conn, "pragma query_only = 0");
    assert_v1(&conn, "nothing written");
}

// ---------------------------------------------------------------------------------------
// Atomicity, nesting and the connection's life

/// A trigger that fails the update of one row, so an insert that must update it fails
/// after its new row went in.
fn fail_updates_of(conn: &Connection, t: &[u8; 16]) {
    exec(
        conn,
        &format!(
            "create trigger fail_update before update on evolu_timestamp \
             when old.t = x'{}' begin select raise(abort, 'update refused'); end",
            to_hex(t)
        ),
    );
}

#[test]
fn a_failing_write_leaves_no_partial_rows() {
    for in_transaction in [false, true] {
        let conn = v1_conn();
        // Inserting millis 10.5 (between 10 and 11) at level 1 must update node 11
        // (level 4) among others.
        fail_updates_of(&conn, &v1_t(11));
        if in_transaction {
            exec(&conn, "begin");
        }
        let t = timestamp(10, 1, 0);
        for level in [V::Int(1), V::Int(2), V::Int(4), V::Int(6)] {
            let e = error(
                &conn,
                "select evolu_skiplist_insert(?, ?, ?)",
                &[blob(&V1_OWNER[..]), blob(&t), level],
            );
            assert_eq!(e.message, "evolu_skiplist_insert: update refused");
            assert_eq!(e.code, ffi::SQLITE_CONSTRAINT_TRIGGER);
            assert_v1(&conn, "after a failed insert");
        }
        if in_transaction {
            assert!(!conn.is_autocommit(), "the transaction goes on");
            exec(&conn, "commit");
        }
        exec(&conn, "drop trigger fail_update");
        assert_eq!(
            insert_sql(&conn, &V1_OWNER[..], &t, V::Int(2), V::Null),
            1,
            "the same insert works once the trigger is gone"
        );
    }
}

#[test]
fn inserting_from_a_writing_statement() {
    // A statement that writes itself: a SAVEPOINT could not be opened inside it.
    let conn = open();
    exec(&conn, "create table log(t blob, inserted integer)");
    exec(&conn, "begin");
    for millis in [5u64, 1, 3, 16, 2, 11, 4, 14, 6, 7, 8, 9, 10, 12, 13, 15] {
        let t = v1_t(millis);
        let level = i64::from(V1_LEVELS[millis as usize - 1]);
        query(
            &conn,
            "insert into log select ?2, evolu_skiplist_insert(?1, ?2, ?3)",
            &[blob(&V1_OWNER[..]), blob(&t), V::Int(level)],
        )
        .expect("insert … select");
    }
    exec(&conn, "commit");
    assert_v1(&conn, "from insert … select");
    assert_eq!(int(&conn, "select sum(inserted) from log", &[]), 16);
}

#[test]
fn readers_may_run_inside_triggers_of_the_writes() {
    let conn = v1_conn();
    let other = [0x22u8; 16];
    for millis in 1..=5 {
        insert_sql(&conn, &other, &v1_t(millis), V::Int(millis as i64), V::Null);
    }
    // The trigger runs in the middle of the insert's upsert (the rows of the owner being
    // written are not consistent yet), so it reads another owner: the nested call
    // prepares its own copies of the statements the outer call holds.
    exec(
        &conn,
        &format!(
            "create table sizes(size integer);
             create trigger log_size after insert on evolu_timestamp
             begin insert into sizes values (evolu_skiplist_size(x'{}')); end",
            to_hex(&other)
        ),
    );
    let t = timestamp(10, 1, 0);
    assert_eq!(insert_sql(&conn, &V1_OWNER[..], &t, V::Int(2), V::Null), 1);
    assert_eq!(int(&conn, "select size from sizes", &[]), 5);
    assert_eq!(
        int(
            &conn,
            "select evolu_skiplist_size(?)",
            &[blob(&V1_OWNER[..])]
        ),
        17
    );
}

#[test]
fn insert_is_direct_only() {
    let conn = open();
    exec(
        &conn,
        "create table inbox(ownerId blob, t blob);
         create trigger store after insert on inbox
         begin select evolu_skiplist_insert(new.ownerId, new.t, 1); end",
    );
    let e = error(
        &conn,
        "insert into inbox values (?, ?)",
        &[blob(&V1_OWNER[..]), blob(&v1_t(1))],
    );
    assert!(
        e.message.contains("unsafe use of evolu_skiplist_insert()"),
        "{}",
        e.message
    );
    // Readers are innocuous: allowed in schema objects even with trusted_schema off.
    exec(
        &conn,
        "pragma trusted_schema = off;
         create view sizes as select evolu_skiplist_size(x'11111111111111111111111111111111') as n",
    );
    assert_eq!(int(&conn, "select n from sizes", &[]), 0);
}

#[test]
fn the_ranges_table_joins_like_a_function() {
    let conn = v1_conn();
    exec(
        &conn,
        &format!(
            "create table owners(id blob); insert into owners values (x'{}'), (x'{}')",
            to_hex(&V1_OWNER[..]),
            to_hex(&V1_OWNER[..])
        ),
    );
    let rows = query(
        &conn,
        "select r.rowid, r.fingerprint from owners o, evolu_fingerprint_ranges(o.id, '[16]') r",
        &[],
    )
    .expect("join");
    let whole = blob(&hex::<12>("08ae59dd63487817506bee46"));
    assert_eq!(
        rows,
        vec![vec![V::Int(1), whole.clone()], vec![V::Int(1), whole]]
    );
    let hidden = query(
        &conn,
        "select buckets, length(ownerId) from evolu_fingerprint_ranges(?, '[8, 16]')",
        &[blob(&V1_OWNER[..])],
    )
    .expect("hidden columns");
    assert_eq!(hidden.len(), 2);
    assert_eq!(hidden[0], vec![V::Text("[8, 16]".into()), V::Int(16)]);
}

#[test]
fn connections_with_cached_statements_close() {
    let conn = v1_conn();
    // Every cached statement has been prepared by now; close must still succeed.
    assert!(
        int(
            &conn,
            "select evolu_skiplist_size(?)",
            &[blob(&V1_OWNER[..])]
        ) == 16
    );
    match conn.close() {
        Ok(()) => {}
        Err((_, e)) => panic!("close failed: {e:?}"),
    }
}

#[test]
fn schema_changes_reprepare_cached_statements() {
    let conn = v1_conn();
    exec(&conn, "drop table evolu_timestamp");
    let e = error(
        &conn,
        "select evolu_skiplist_size(?)",
        &[blob(&V1_OWNER[..])],
    );
    assert!(e.message.contains("no such table"), "{}", e.message);
    exec(&conn, SCHEMA);
    assert_eq!(
        int(
            &conn,
            "select evolu_skiplist_size(?)",
            &[blob(&V1_OWNER[..])]
        ),
        0
    );
    insert_sql(&conn, &V1_OWNER[..], &v1_t(1), V::Int(1), V::Null);
    assert_eq!(
        int(
            &conn,
            "select evolu_skiplist_size(?)",
            &[blob(&V1_OWNER[..])]
        ),
        1
    );
}

// ---------------------------------------------------------------------------------------
// A relay's batch: evolu_skiplist_stored and evolu_relay_write

/// `evolu_relay_write`'s encoding of one message (crates/storage/src/batch.rs).
fn relay_message(t: &[u8; 16], level: u8, strategy: u8, change: &[u8]) -> Vec<u8> {
    let mut out = t.to_vec();
    out.push(level);
    out.push(strategy);
    out.extend_from_slice(&u32::try_from(change.len()).expect("small").to_be_bytes());
    out.extend_from_slice(change);
    out
}

/// Evolu's relay table (docs/evolu-storage.md §1.2), which evolu_relay_write writes.
const MESSAGE_TABLE: &str = "create table evolu_message (\"ownerId\" blob not null, \
     \"timestamp\" blob not null, \"change\" blob not null, \
     primary key (\"ownerId\", \"timestamp\")) strict;";

#[test]
fn relay_batches_write_the_v1_rows_and_the_messages() {
    // In order with append hints, shuffled without hints, and with wrong hints: §8.1's rows.
    let mut random = SplitMix(7);
    for how in ["append", "shuffled", "wrong hints"] {
        let conn = open();
        exec(&conn, MESSAGE_TABLE);
        let mut order: Vec<u64> = (1..=16).collect();
        if how != "append" {
            random.shuffle(&mut order);
        }
        let change = |millis: u64| vec![u8::try_from(millis).expect("small"); millis as usize];
        let encode = |millis: u64| {
            let strategy = match how {
                "append" => 1,
                "shuffled" => 0,
                _ => 2,
            };
            relay_message(
                &v1_t(millis),
                V1_LEVELS[millis as usize - 1],
                strategy,
                &change(millis),
            )
        };
        // Two batches: the second repeats three of the first, which change nothing.
        let (first, second) = order.split_at(9);
        let batch: Vec<u8> = first.iter().flat_map(|&m| encode(m)).collect();
        let written = int(
            &conn,
            "select evolu_relay_write(?, ?)",
            &[blob(&V1_OWNER[..]), blob(&batch)],
        );
        assert_eq!(written, first.iter().sum::<u64>() as i64, "{how}");
        let asked: Vec<u8> = order.iter().flat_map(|&m| v1_t(m)).collect();
        let stored = bytes(
            &conn,
            "select evolu_skiplist_stored(?, ?)",
            &[blob(&V1_OWNER[..]), blob(&asked)],
        );
        let expected: Vec<u8> = order.iter().map(|m| u8::from(first.contains(m))).collect();
        assert_eq!(stored, expected, "{how}");
        let batch: Vec<u8> = second
            .iter()
            .chain(&first[..3])
            .flat_map(|&m| encode(m))
            .collect();
        let written = int(
            &conn,
            "select evolu_relay_write(?, ?)",
            &[blob(&V1_OWNER[..]), blob(&batch)],
        );
        assert_eq!(written, second.iter().sum::<u64>() as i64, "{how}");
        assert_v1(&conn, how);
        let messages = query(
            &conn,
            "select \"timestamp\", \"change\" from evolu_message order by rowid",
            &[],
        )
        .expect("messages");
        let expected: Vec<Vec<V>> = order
            .iter()
            .map(|&m| vec![blob(&v1_t(m)), blob(&change(m))])
            .collect();
        assert_eq!(messages, expected, "{how}: in the order written");
        // Another owner asked about the same timestamps has none of them.
        let none = bytes(
            &conn,
            "select evolu_skiplist_stored(?, ?)",
            &[blob(&[9; 16]), blob(&asked)],
        );
        assert_eq!(none, vec![0; 16]);
    }
}

#[test]
fn relay_batch_arguments_are_checked_before_anything_is_written() {
    let conn = open();
    exec(&conn, MESSAGE_TABLE);
    let good = relay_message(&v1_t(1), 1, 1, b"abc");
    let write = "select evolu_relay_write(?, ?)";
    let messages = "evolu_relay_write: argument 2 (messages) must be";
    for (batch, must) in [
        (
            [good.clone(), good[..10].to_vec()].concat(),
            "a blob of encoded messages",
        ),
        (
            relay_message(&v1_t(2), 11, 0, b""),
            "an integer from 1 to 10, or NULL to draw one",
        ),
        (
            relay_message(&v1_t(2), 1, 4, b""),
            "'append', 'prepend', 'insert' or NULL",
        ),
        (
            [good.clone(), relay_message(&[0xFF; 16], 1, 0, b"")].concat(),
            "a timestamp whose millis is below 2^48 - 1 (the reserved value)",
        ),
    ] {
        let e = error(&conn, write, &[blob(&V1_OWNER[..]), blob(&batch)]);
        assert_eq!(e.message, format!("{messages} {must}"));
    }
    let e = error(&conn, write, &[blob(&[1; 15]), blob(&good)]);
    assert_eq!(
        e.message,
        "evolu_relay_write: argument 1 (ownerId) must be a 16-byte blob"
    );
    let e = error(
        &conn,
        "select evolu_skiplist_stored(?, ?)",
        &[blob(&V1_OWNER[..]), blob(&[0; 17])],
    );
    assert_eq!(
        e.message,
        "evolu_skiplist_stored: argument 2 (timestamps) must be a blob of 16-byte timestamps end to end"
    );
    assert_eq!(int(&conn, "select count(*) from evolu_timestamp", &[]), 0);
    assert_eq!(int(&conn, "select count(*) from evolu_message", &[]), 0);
    // A level of 0 draws one.
    let drawn = relay_message(&v1_t(3), 0, 0, b"x");
    assert_eq!(int(&conn, write, &[blob(&V1_OWNER[..]), blob(&drawn)]), 1);
    let level = int(&conn, "select l from evolu_timestamp", &[]);
    assert!((1..=10).contains(&level));
}
