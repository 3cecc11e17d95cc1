//! The [`SkiplistStore`] over SQLite: Evolu's `evolu_timestamp` table on the connection
//! that runs the `evolu_*` SQL functions.
//!
//! Each probe is one statement from a per-connection [`StatementCache`]: prepared on
//! first use (the table may not exist when the connection opens, and a missing table is
//! an error of that call only), kept across calls, stepped re-entrantly on the same
//! connection from inside the SQL function, and reset with its bindings cleared when the
//! probe ends, on error too. Owner ids and timestamps are bound without a copy
//! (`SQLITE_STATIC`); the open bounds are bound as Evolu's fences: −∞ as the empty BLOB
//! (non-null pointer, length 0: smaller than any 16-byte BLOB) and +∞ as `X'FF'` × 16.
//!
//! The range probes read `evolu_timestamp_index (ownerId, l, t, h1, h2, c)`, which covers
//! them; the point and neighbour probes read the primary key's index `(ownerId, t)`.
//!
//! # Atomic inserts
//!
//! An insert writes its new row and then changes up to ten existing rows. A level-1
//! append (three inserts in four) writes only the new row, with
//! `insert … on conflict do nothing`. Anything more is one multi-row upsert, after a
//! primary-key probe has made sure the new row is new: the new row goes in and the
//! existing rows take their new `h1, h2, c` from `excluded`, in place (rowids keep
//! Evolu's order). A `SAVEPOINT` could not be opened inside a statement that is itself
//! writing (`insert … select evolu_skiplist_insert(…)`); one statement is all or
//! nothing in every context:
//!
//! - a statement that may stop half-way (a user trigger's `RAISE`, a constraint that
//!   aborts) runs with a statement journal, which SQLite rolls back on failure;
//! - any other failure (I/O, out of memory, interrupt) rolls back the whole
//!   transaction, or the implicit one in autocommit mode.
//!
//! The upsert is `insert or ignore`: its NOT NULL checks (never failing, since no
//! NULL is bound) then cannot abort, so SQLite does not journal every page the
//! statement touches, a third of the cost of a prepend. Primary-key conflicts still go
//! to `do update`.

use super::{Node, OwnerId, SkiplistStore, Timestamp, INFINITE_TIMESTAMP, MAX_LEVEL};
use cipherlite_sqlite::{self as sqlite, ffi, CachedStatement, Connection, StatementCache};
use std::sync::LazyLock;

/// −∞: the empty BLOB sorts before every 16-byte timestamp.
const MINUS_INFINITY: &[u8] = &[];

// Statement numbers in the cache.
const MAX_LEVEL_SQL: usize = 0;
const SCAN_LEVEL_SQL: usize = 1;
const LAST_AT_LEVEL_SQL: usize = 2;
const NEXT_SQL: usize = 3;
const PREV_SQL: usize = 4;
const CONTAINS_SQL: usize = 5;
const INSERT_SQL: usize = 6;
const UPDATE_SQL: usize = 7;
/// `UPSERT_SQL + k - 1`: the new row plus `k` updated rows, k in 1..=10.
const UPSERT_SQL: usize = 8;
const MAX_UPDATES: usize = MAX_LEVEL as usize;
/// After the upserts: `evolu_relay_write`'s message insert.
const MESSAGE_SQL: usize = UPSERT_SQL + MAX_UPDATES;

/// The statements, numbered as above.
///
/// Every parameter of a WHERE term is written `+?N`: the unary plus changes no value
/// (no affinity applies to a blob compared with a blob column, nor to a level compared
/// with an integer one) and keeps the index usable, but it hides the parameter from the
/// planner's value checks. Without it SQLite 3.54 marks `l = ?2` as plan-sensitive (it
/// tests whether the value is 0 or 1), so binding level 1 after level 2 would prepare
/// the statement again on its next step, and with `sqlite_stat4` present (after
/// `ANALYZE`) every new `t` bound would.
static SQL: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let mut sql = vec![
        // max_level: the last entry of the owner's part of the covering index.
        "select l from evolu_timestamp where ownerId = +?1 order by l desc limit 1",
        // scan_level
        "select t, h1, h2, c from evolu_timestamp \
         where ownerId = +?1 and l = +?2 and t > +?3 and t < +?4 order by t",
        // last_at_level
        "select t, h1, h2, c from evolu_timestamp \
         where ownerId = +?1 and l = +?2 and t > +?3 and t < +?4 order by t desc limit 1",
        // next_timestamp
        "select t from evolu_timestamp where ownerId = +?1 and t > +?2 order by t limit 1",
        // prev_timestamp
        "select t from evolu_timestamp where ownerId = +?1 and t < +?2 order by t desc limit 1",
        // contains
        "select 1 from evolu_timestamp where ownerId = +?1 and t = +?2",
        // insert
        "insert into evolu_timestamp (ownerId, t, l, h1, h2, c) \
         values (?1, ?2, ?3, ?4, ?5, ?6) on conflict do nothing",
        // update
        "update evolu_timestamp set h1 = ?3, h2 = ?4, c = ?5 where ownerId = +?1 and t = +?2",
    ];
    for updates in 1..=MAX_UPDATES {
        let rows = (0..=updates)
            .map(|row| {
                let p = 2 + 5 * row;
                format!("(?1, ?{p}, ?{}, ?{}, ?{}, ?{})", p + 1, p + 2, p + 3, p + 4)
            })
            .collect::<Vec<_>>()
            .join(", ");
        let upsert = format!(
            "insert or ignore into evolu_timestamp (ownerId, t, l, h1, h2, c) values {rows} \
             on conflict (ownerId, t) do update \
             set h1 = excluded.h1, h2 = excluded.h2, c = excluded.c"
        );
        // Built once per process and kept for its lifetime, as a literal would be.
        sql.push(upsert.leak());
    }
    // message: Evolu's relay insert (Relay.ts), for evolu_relay_write.
    sql.push(
        "insert into evolu_message (\"ownerId\", \"timestamp\", \"change\") \
         values (?1, ?2, ?3) on conflict do nothing",
    );
    sql
});

/// The statement cache the store runs on, made once per connection.
pub(crate) fn statement_cache(conn: &Connection) -> StatementCache {
    StatementCache::new(conn, SQL.as_slice())
}

/// The store over one connection's cache, for the length of one SQL-function call.
pub(crate) struct SqliteStore<'c> {
    cache: &'c StatementCache,
}

impl<'c> SqliteStore<'c> {
    pub(crate) fn new(cache: &'c StatementCache) -> Self {
        Self { cache }
    }

    fn statement(&self, index: usize) -> sqlite::Result<CachedStatement<'c>> {
        self.cache.get(index)
    }

    /// Inserts a relay's message into `evolu_message` unless `(owner, t)` is there;
    /// returns whether it inserted.
    pub(crate) fn insert_message(
        &mut self,
        owner: &OwnerId,
        t: &Timestamp,
        change: &[u8],
    ) -> sqlite::Result<bool> {
        let mut stmt = self.statement(MESSAGE_SQL)?;
        stmt.bind_blob(1, owner)?;
        stmt.bind_blob(2, t)?;
        stmt.bind_blob(3, change)?;
        run(&mut stmt)?;
        // The insert has completed (SQLITE_DONE), so changes() is its own count.
        Ok(self.cache.changes()? > 0)
    }
}

fn corrupt(what: &str) -> sqlite::Error {
    sqlite::Error::new(
        ffi::SQLITE_ERROR,
        format!("evolu_timestamp is inconsistent: {what}"),
    )
}

/// Column `i` as a timestamp: a 16-byte BLOB, or the table is not Evolu's.
fn timestamp_column(stmt: &CachedStatement<'_>, i: i32) -> sqlite::Result<Timestamp> {
    stmt.column_blob(i)
        .try_into()
        .map_err(|_| corrupt("t is not a 16-byte blob"))
}

/// `t, h1, h2, c` (NULL metadata reads as 0, which the algorithms refuse).
fn node_columns(stmt: &CachedStatement<'_>) -> sqlite::Result<Node> {
    Ok(Node {
        t: timestamp_column(stmt, 0)?,
        h1: stmt.column_int64(1),
        h2: stmt.column_int64(2),
        c: stmt.column_int64(3),
    })
}

/// Binds the metadata of `node` as `h1, h2, c` at `first..first + 3`.
fn bind_metadata(stmt: &mut CachedStatement<'_>, first: i32, node: &Node) -> sqlite::Result<()> {
    stmt.bind_int64(first, node.h1)?;
    stmt.bind_int64(first + 1, node.h2)?;
    stmt.bind_int64(first + 2, node.c)
}

/// Steps a statement that returns no rows to its end.
fn run(stmt: &mut CachedStatement<'_>) -> sqlite::Result<()> {
    while stmt.step()? {}
    Ok(())
}

impl SkiplistStore for SqliteStore<'_> {
    type Error = sqlite::Error;

    fn max_level(&mut self, owner: &OwnerId) -> sqlite::Result<Option<i64>> {
        let mut stmt = self.statement(MAX_LEVEL_SQL)?;
        stmt.bind_blob(1, owner)?;
        Ok(if stmt.step()? {
            Some(stmt.column_int64(0))
        } else {
            None
        })
    }

    fn scan_level(
        &mut self,
        owner: &OwnerId,
        level: u8,
        after: Option<&Timestamp>,
        before: Option<&Timestamp>,
        visit: &mut dyn FnMut(&Node) -> bool,
    ) -> sqlite::Result<()> {
        let mut stmt = self.statement(SCAN_LEVEL_SQL)?;
        stmt.bind_blob(1, owner)?;
        stmt.bind_int64(2, level.into())?;
        stmt.bind_blob(3, after.map_or(MINUS_INFINITY, |t| t.as_slice()))?;
        stmt.bind_blob(4, before.unwrap_or(&INFINITE_TIMESTAMP))?;
        while stmt.step()? {
            if !visit(&node_columns(&stmt)?) {
                break;
            }
        }
        Ok(())
    }

    fn last_at_level(
        &mut self,
        owner: &OwnerId,
        level: u8,
        after: Option<&Timestamp>,
        before: &Timestamp,
    ) -> sqlite::Result<Option<Node>> {
        let mut stmt = self.statement(LAST_AT_LEVEL_SQL)?;
        stmt.bind_blob(1, owner)?;
        stmt.bind_int64(2, level.into())?;
        stmt.bind_blob(3, after.map_or(MINUS_INFINITY, |t| t.as_slice()))?;
        stmt.bind_blob(4, before)?;
        if stmt.step()? {
            node_columns(&stmt).map(Some)
        } else {
            Ok(None)
        }
    }

    fn next_timestamp(
        &mut self,
        owner: &OwnerId,
        after: Option<&Timestamp>,
    ) -> sqlite::Result<Option<Timestamp>> {
        let mut stmt = self.statement(NEXT_SQL)?;
        stmt.bind_blob(1, owner)?;
        stmt.bind_blob(2, after.map_or(MINUS_INFINITY, |t| t.as_slice()))?;
        if stmt.step()? {
            timestamp_column(&stmt, 0).map(Some)
        } else {
            Ok(None)
        }
    }

    fn prev_timestamp(
        &mut self,
        owner: &OwnerId,
        before: &Timestamp,
    ) -> sqlite::Result<Option<Timestamp>> {
        let mut stmt = self.statement(PREV_SQL)?;
        stmt.bind_blob(1, owner)?;
        stmt.bind_blob(2, before)?;
        if stmt.step()? {
            timestamp_column(&stmt, 0).map(Some)
        } else {
            Ok(None)
        }
    }

    fn contains(&mut self, owner: &OwnerId, t: &Timestamp) -> sqlite::Result<bool> {
        let mut stmt = self.statement(CONTAINS_SQL)?;
        stmt.bind_blob(1, owner)?;
        stmt.bind_blob(2, t)?;
        stmt.step()
    }

    fn insert(&mut self, owner: &OwnerId, level: u8, node: &Node) -> sqlite::Result<bool> {
        let mut stmt = self.statement(INSERT_SQL)?;
        stmt.bind_blob(1, owner)?;
        stmt.bind_blob(2, &node.t)?;
        stmt.bind_int64(3, level.into())?;
        bind_metadata(&mut stmt, 4, node)?;
        run(&mut stmt)?;
        // The insert has completed (SQLITE_DONE), so changes() is its own count.
        Ok(self.cache.changes()? > 0)
    }

    fn update(&mut self, owner: &OwnerId, node: &Node) -> sqlite::Result<()> {
        let mut stmt = self.statement(UPDATE_SQL)?;
        stmt.bind_blob(1, owner)?;
        stmt.bind_blob(2, &node.t)?;
        bind_metadata(&mut stmt, 3, node)?;
        run(&mut stmt)
    }

    fn insert_with_updates(
        &mut self,
        owner: &OwnerId,
        level: u8,
        node: &Node,
        updates: &[(u8, Node)],
    ) -> sqlite::Result<bool> {
        if updates.is_empty() {
            return self.insert(owner, level, node);
        }
        if updates.len() > MAX_UPDATES {
            return Err(corrupt("more updates than levels"));
        }
        // The upsert would update an existing row instead of skipping it.
        if self.contains(owner, &node.t)? {
            return Ok(false);
        }
        let mut stmt = self.statement(UPSERT_SQL + updates.len() - 1)?;
        stmt.bind_blob(1, owner)?;
        let rows = std::iter::once((level, node)).chain(updates.iter().map(|(l, n)| (*l, n)));
        for (row, (level, node)) in (0i32..).zip(rows) {
            let p = 2 + 5 * row;
            stmt.bind_blob(p, &node.t)?;
            stmt.bind_int64(p + 1, level.into())?;
            bind_metadata(&mut stmt, p + 2, node)?;
        }
        run(&mut stmt)?;
        Ok(true)
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::test_support::SCHEMA;
    use cipherlite_sqlite::OpenFlags;

    /// Every probe is an index seek, never a scan of the table or a sort.
    #[test]
    fn every_statement_seeks_an_index() {
        let conn = Connection::open(":memory:", OpenFlags::default(), None).expect("open");
        conn.exec_each(SCHEMA, |_| Ok(())).expect("schema");
        let expected = [
            "SEARCH evolu_timestamp USING COVERING INDEX evolu_timestamp_index (ownerId=?)",
            "SEARCH evolu_timestamp USING COVERING INDEX evolu_timestamp_index (ownerId=? AND l=? AND t>? AND t<?)",
            "SEARCH evolu_timestamp USING COVERING INDEX evolu_timestamp_index (ownerId=? AND l=? AND t>? AND t<?)",
            "SEARCH evolu_timestamp USING COVERING INDEX sqlite_autoindex_evolu_timestamp_1 (ownerId=? AND t>?)",
            "SEARCH evolu_timestamp USING COVERING INDEX sqlite_autoindex_evolu_timestamp_1 (ownerId=? AND t<?)",
            "SEARCH evolu_timestamp USING COVERING INDEX sqlite_autoindex_evolu_timestamp_1 (ownerId=? AND t=?)",
            "",
            "SEARCH evolu_timestamp USING INDEX sqlite_autoindex_evolu_timestamp_1 (ownerId=? AND t=?)",
        ];
        for (sql, expected) in SQL.iter().zip(expected) {
            let (stmt, _) = conn
                .prepare(&format!("explain query plan {sql}"), false)
                .expect("explain");
            let mut stmt = stmt.expect("statement");
            let mut plan = Vec::new();
            while stmt.step().expect("step") {
                plan.push(String::from_utf8_lossy(stmt.column_text(3)).into_owned());
            }
            let plan = plan.join("; ");
            if expected.is_empty() {
                assert!(!plan.contains("SCAN"), "{sql}: {plan}");
            } else {
                assert_eq!(plan, expected, "{sql}");
            }
        }
        // The upserts insert from their VALUES and look the conflicts up by key.
        for sql in &SQL[UPSERT_SQL..MESSAGE_SQL] {
            let (stmt, _) = conn.prepare(sql, false).expect("prepare");
            assert!(stmt.is_some());
        }
    }

    /// Rebinding the probes with new owners, levels and bounds never makes SQLite
    /// prepare them again (it would cost more than the probe).
    #[test]
    fn cached_statements_are_never_reprepared() {
        let conn = Connection::open(":memory:", OpenFlags::default(), None).expect("open");
        conn.exec_each(SCHEMA, |_| Ok(())).expect("schema");
        conn.exec_each("create table evolu_other (x); analyze;", |_| Ok(()))
            .expect("schema");
        let cache = statement_cache(&conn);
        let mut seed = 7u64;
        for i in 0..3000u64 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let owner = [(seed >> 60) as u8; 16];
            let mut t = [0u8; 16];
            t[..8].copy_from_slice(&(seed >> 8).to_be_bytes());
            let level = 1 + (i % 10) as u8;
            let strategy = [None, Some(super::super::Strategy::Insert)][(i % 2) as usize];
            super::super::insert(&mut SqliteStore::new(&cache), &owner, &t, level, strategy)
                .expect("insert");
            super::super::size(&mut SqliteStore::new(&cache), &owner).expect("size");
            if i == 1000 {
                // Statistics appear mid-way (stat4 samples of the index).
                conn.exec_each("analyze", |_| Ok(())).expect("analyze");
            }
        }
        for index in 0..SQL.len() {
            let Ok(stmt) = cache.get(index) else { continue };
            // The ANALYZE in the middle changes the schema once: one re-prepare at most.
            assert!(
                stmt.reprepare_count() <= 1,
                "{}: {}",
                SQL[index],
                stmt.reprepare_count()
            );
        }
    }
}
