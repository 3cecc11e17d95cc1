//! `StatementCache`: statements that a connection's own callbacks (SQL functions,
//! virtual tables) prepare once and reuse, stepped re-entrantly on that connection.
//!
//! A callback that runs queries cannot prepare them when it is registered (the tables
//! may not exist yet) and should not prepare them on every call (preparing costs more
//! than a point lookup). A cache prepares statement `i` of its fixed list on first use,
//! with `SQLITE_PREPARE_PERSISTENT`, and hands it out as a [`CachedStatement`] that
//! resets it and puts it back when dropped: on success, on error and on panic alike.
//! Small blobs (owner ids, timestamps) are copied into the cache entry and bound from
//! there without another copy (`SQLITE_STATIC`), so they stay valid for as long as the
//! statement and need no unbinding.
//!
//! It never calls `sqlite3_clear_bindings`: since SQLite 3.54 the planner marks the
//! parameters of most `column = ?` terms as plan-sensitive (it checks whether they hold
//! 0 or 1), and clearing the bindings of a statement with such a mark expires it, so the
//! next step would prepare it again.
//!
//! A call nested inside another one (a trigger fired by a statement a callback runs may
//! call the same function again) finds the slot empty and prepares its own copy, which
//! is finalized when it is given back if the slot has been refilled meanwhile.
//!
//! SQLite refuses to close a connection while any statement is alive, and releases a
//! function's data only after the close; so a cache registers a
//! [`Connection::on_close`] hook that finalizes its statements, after which it refuses
//! to prepare (the handle it knows is about to be freed).
//!
//! ```
//! use cipherlite_sqlite::{Connection, OpenFlags, StatementCache};
//! let conn = Connection::open(":memory:", OpenFlags::default(), None).unwrap();
//! static SQL: &[&str] = &["select ?1 + 1"];
//! let cache = StatementCache::new(&conn, SQL);
//! for i in 0..3 {
//!     let mut stmt = cache.get(0).unwrap();
//!     stmt.bind_int64(1, i).unwrap();
//!     assert!(stmt.step().unwrap());
//!     assert_eq!(stmt.column_int64(0), i + 1);
//! } // reset and returned here
//! drop(conn); // finalizes the cached statement, then closes
//! assert!(cache.get(0).is_err());
//! ```

use super::{connection::Connection, error::Error, ffi, statement::Statement, Result};
use std::{
    cell::{Cell, RefCell},
    ffi::c_int,
    ops::Deref,
    ptr::NonNull,
    rc::Rc,
};

/// Blobs of up to this many bytes, bound to the first [`SCRATCH_PARAMS`] parameters, are
/// kept in the cache entry itself (owner ids and timestamps: 16 bytes).
pub const SCRATCH_LEN: usize = 16;
/// How many parameters (the first ones) can hold scratch bytes.
pub const SCRATCH_PARAMS: usize = 64;

/// Statements prepared once per connection; cheap to clone (all clones share them).
#[derive(Clone)]
pub struct StatementCache {
    inner: Rc<Inner>,
}

struct Inner {
    /// The connection's handle: valid until `closed` is set (just before it closes).
    db: NonNull<ffi::sqlite3>,
    sql: &'static [&'static str],
    /// `slots[i]`: statement `i` when it is prepared and not handed out.
    slots: RefCell<Vec<Option<Box<Entry>>>>,
    closed: Cell<bool>,
}

/// A prepared statement and the bytes its small blob parameters point to. Boxed, so the
/// bytes stay put while the entry moves between its slot and a [`CachedStatement`];
/// `stmt` is declared first, so it is finalized before the bytes are freed.
struct Entry {
    stmt: Statement,
    /// `scratch[i][..len[i]]` is bound to parameter `i + 1` when `len[i]` is `Some`; one
    /// slot per parameter, up to [`SCRATCH_PARAMS`]. Never resized, so never moved.
    scratch: Box<[[u8; SCRATCH_LEN]]>,
    len: Box<[Option<u8>]>,
}

impl Inner {
    fn close(&self) {
        self.closed.set(true);
        let entries = std::mem::take(&mut *self.slots.borrow_mut());
        // Dropping an entry finalizes its statement.
        drop(entries);
    }
}

impl StatementCache {
    /// A cache of the statements in `sql` (statement `i` is `sql[i]`) on `conn`.
    /// Nothing is prepared yet; the statements are finalized when `conn` closes.
    pub fn new(conn: &Connection, sql: &'static [&'static str]) -> StatementCache {
        let db = NonNull::new(conn.raw()).expect("an open connection has a handle");
        let inner = Rc::new(Inner {
            db,
            sql,
            slots: RefCell::new(sql.iter().map(|_| None).collect()),
            closed: Cell::new(false),
        });
        let weak = Rc::downgrade(&inner);
        conn.on_close(move || {
            if let Some(inner) = weak.upgrade() {
                inner.close();
            }
        });
        StatementCache { inner }
    }

    /// Statement `index`, prepared now if it is not yet (or is handed out already).
    /// Fails with the preparation error (a missing table, say: it is tried again on the
    /// next call), or `SQLITE_MISUSE` once the connection has closed.
    pub fn get(&self, index: usize) -> Result<CachedStatement<'_>> {
        let inner = &*self.inner;
        if inner.closed.get() {
            return Err(closed());
        }
        let cached = inner
            .slots
            .borrow_mut()
            .get_mut(index)
            .and_then(Option::take)
            .filter(|entry| entry.stmt.is_alive());
        let entry = match cached {
            Some(entry) => entry,
            None => {
                let sql = inner.sql.get(index).ok_or_else(|| {
                    Error::new(ffi::SQLITE_MISUSE, "no such statement in the cache")
                })?;
                // SAFETY: the handle is open: the cache is not closed, and it closes
                // just before the connection does.
                let (stmt, _) = unsafe { Statement::prepare_on(inner.db, sql, true) }?;
                let stmt =
                    stmt.ok_or_else(|| Error::new(ffi::SQLITE_MISUSE, "empty cached statement"))?;
                let params = usize::try_from(stmt.parameter_count())
                    .unwrap_or(0)
                    .min(SCRATCH_PARAMS);
                Box::new(Entry {
                    stmt,
                    scratch: vec![[0; SCRATCH_LEN]; params].into_boxed_slice(),
                    len: vec![None; params].into_boxed_slice(),
                })
            }
        };
        Ok(CachedStatement {
            cache: inner,
            index,
            entry: Some(entry),
        })
    }

    /// `sqlite3_changes64`: rows changed by the connection's most recent INSERT, UPDATE
    /// or DELETE to complete (a cached one, right after it ran).
    pub fn changes(&self) -> Result<i64> {
        if self.inner.closed.get() {
            return Err(closed());
        }
        // SAFETY: open handle (checked above).
        Ok(unsafe { ffi::sqlite3_changes64(self.inner.db.as_ptr()) })
    }
}

fn closed() -> Error {
    Error::new(
        ffi::SQLITE_MISUSE,
        "the connection of this statement cache is closed",
    )
}

/// A statement taken from a [`StatementCache`]: it binds, steps and (through `Deref`)
/// reads columns. Dropping it resets the statement and returns it to the cache; its
/// bindings stay, so a parameter that takes the same small blob again is not bound
/// again.
pub struct CachedStatement<'c> {
    cache: &'c Inner,
    index: usize,
    /// Always `Some` until dropped.
    entry: Option<Box<Entry>>,
}

impl CachedStatement<'_> {
    fn entry(&mut self) -> &mut Entry {
        self.entry.as_mut().expect("present until dropped")
    }

    /// Binds a BLOB (an empty slice: an empty BLOB, not NULL). Blobs of up to 16 bytes
    /// (for the first 64 parameters) are copied into the entry and bound without another
    /// copy (`SQLITE_STATIC`), and not bound at all when the parameter holds those bytes
    /// already; other blobs are copied by SQLite.
    pub fn bind_blob(&mut self, index: c_int, value: &[u8]) -> Result<()> {
        let entry = self.entry();
        let slot = usize::try_from(index)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .filter(|&i| i < entry.scratch.len() && value.len() <= SCRATCH_LEN);
        let Some(i) = slot else {
            // The parameter no longer holds the scratch bytes: the same small blob bound
            // next must be bound again.
            self.forget(index);
            return self.entry().stmt.bind_blob(index, value);
        };
        let len = value.len() as u8; // ≤ SCRATCH_LEN
        if entry.len[i] == Some(len) && entry.scratch[i][..value.len()] == *value {
            return Ok(());
        }
        entry.len[i] = None;
        entry.scratch[i][..value.len()].copy_from_slice(value);
        let bytes = &entry.scratch[i][..value.len()];
        // SAFETY: `bytes` is in the boxed entry, which owns the statement and outlives
        // it (the statement is finalized first); the bytes change only here, after
        // their old binding is replaced below or, on failure, left unrecorded.
        unsafe { entry.stmt.bind_blob_static(index, bytes) }?;
        entry.len[i] = Some(len);
        Ok(())
    }

    pub fn bind_int64(&mut self, index: c_int, value: i64) -> Result<()> {
        self.forget(index);
        self.entry().stmt.bind_int64(index, value)
    }

    pub fn bind_null(&mut self, index: c_int) -> Result<()> {
        self.forget(index);
        self.entry().stmt.bind_null(index)
    }

    /// Parameter `index` no longer holds scratch bytes.
    fn forget(&mut self, index: c_int) {
        let entry = self.entry();
        if let Some(len) = usize::try_from(index)
            .ok()
            .and_then(|i| i.checked_sub(1))
            .and_then(|i| entry.len.get_mut(i))
        {
            *len = None;
        }
    }

    /// `Statement::step`.
    pub fn step(&mut self) -> Result<bool> {
        self.entry().stmt.step()
    }
}

impl Deref for CachedStatement<'_> {
    type Target = Statement;
    fn deref(&self) -> &Statement {
        &self.entry.as_ref().expect("present until dropped").stmt
    }
}

impl Drop for CachedStatement<'_> {
    fn drop(&mut self) {
        let Some(mut entry) = self.entry.take() else {
            return;
        };
        if !entry.stmt.is_alive() {
            return;
        }
        // The step's error, if any, was reported by step() already.
        let _ = entry.stmt.reset();
        if self.cache.closed.get() {
            return; // dropping finalizes it
        }
        if let Ok(mut slots) = self.cache.slots.try_borrow_mut() {
            if let Some(slot @ None) = slots.get_mut(self.index) {
                *slot = Some(entry);
            }
            // Otherwise a nested call refilled the slot: this copy is finalized.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OpenFlags;

    static SQL: &[&str] = &[
        "select ?1",
        "select count(*) from t",
        "insert into t values (?1)",
    ];

    fn memory() -> Connection {
        Connection::open(":memory:", OpenFlags::default(), None).expect("open")
    }

    #[test]
    fn statements_are_prepared_once_and_reused() {
        let conn = memory();
        let cache = StatementCache::new(&conn, SQL);
        let first = {
            let stmt = cache.get(0).unwrap();
            stmt.sql()
        };
        assert_eq!(first, "select ?1");
        // Small blobs are bound from the entry and stay bound across uses; binding the
        // same bytes again is skipped, other values replace them.
        let read = |bind: &dyn Fn(&mut CachedStatement<'_>)| {
            let mut stmt = cache.get(0).unwrap();
            bind(&mut stmt);
            assert!(stmt.step().unwrap());
            match stmt.column_type(0) {
                crate::ColumnType::Blob => format!("{:?}", stmt.column_blob(0)),
                _ => format!("{}", stmt.column_int64(0)),
            }
        };
        assert_eq!(read(&|s| s.bind_blob(1, &[9; 4]).unwrap()), "[9, 9, 9, 9]");
        assert_eq!(read(&|_| {}), "[9, 9, 9, 9]");
        assert_eq!(read(&|s| s.bind_blob(1, &[9; 4]).unwrap()), "[9, 9, 9, 9]");
        assert_eq!(read(&|s| s.bind_int64(1, 5).unwrap()), "5");
        assert_eq!(read(&|s| s.bind_blob(1, &[9; 4]).unwrap()), "[9, 9, 9, 9]");
        assert_eq!(read(&|s| s.bind_blob(1, &[]).unwrap()), "[]");
        assert_eq!(
            read(&|s| s.bind_blob(1, &[7; 40]).unwrap()),
            format!("{:?}", [7; 40])
        );
        assert_eq!(read(&|s| s.bind_blob(1, &[9; 4]).unwrap()), "[9, 9, 9, 9]");
    }

    /// A blob too large for the scratch bytes replaces the small one bound before it, and
    /// that small one, bound again after it, replaces it in turn.
    #[test]
    fn a_small_blob_bound_again_after_a_large_one_is_bound() {
        let conn = memory();
        let cache = StatementCache::new(&conn, SQL);
        let read = |value: &[u8]| {
            let mut stmt = cache.get(0).unwrap();
            stmt.bind_blob(1, value).unwrap();
            assert!(stmt.step().unwrap());
            stmt.column_blob(0).to_vec()
        };
        assert_eq!(read(&[9; 4]), [9; 4]);
        assert_eq!(read(&[7; 40]), [7; 40]);
        assert_eq!(read(&[9; 4]), [9; 4]);
        assert_eq!(read(&[9; 17]), [9; 17]);
        assert_eq!(read(&[9; 4]), [9; 4]);
    }

    #[test]
    fn a_missing_table_fails_until_it_exists() {
        let conn = memory();
        let cache = StatementCache::new(&conn, SQL);
        let err = cache.get(1).map(|_| ()).unwrap_err();
        assert!(err.message.contains("no such table: t"), "{}", err.message);
        conn.exec_each("create table t(x)", |_| Ok(())).unwrap();
        let mut stmt = cache.get(1).unwrap();
        assert!(stmt.step().unwrap());
        assert_eq!(stmt.column_int64(0), 0);
    }

    #[test]
    fn nested_use_prepares_a_second_copy() {
        let conn = memory();
        conn.exec_each("create table t(x)", |_| Ok(())).unwrap();
        let cache = StatementCache::new(&conn, SQL);
        let owner = [1u8, 2, 3];
        let mut outer = cache.get(0).unwrap();
        outer.bind_blob(1, &owner).unwrap();
        {
            let mut inner = cache.get(0).unwrap();
            inner.bind_int64(1, 7).unwrap();
            assert!(inner.step().unwrap());
            assert_eq!(inner.column_int64(0), 7);
        }
        assert!(outer.step().unwrap());
        assert_eq!(outer.column_blob(0), &owner);
    }

    #[test]
    fn errors_leave_the_statement_reset() {
        let conn = memory();
        conn.exec_each("create table t(x unique)", |_| Ok(()))
            .unwrap();
        let cache = StatementCache::new(&conn, SQL);
        for expect_ok in [true, false] {
            let mut stmt = cache.get(2).unwrap();
            stmt.bind_int64(1, 1).unwrap();
            assert_eq!(stmt.step().is_ok(), expect_ok);
        }
        // The failed insert is not left running: the connection closes.
        drop(cache);
        assert!(conn.close().is_ok());
    }

    #[test]
    fn close_finalizes_cached_statements() {
        let conn = memory();
        let cache = StatementCache::new(&conn, SQL);
        drop(cache.get(0).unwrap());
        // Without the hook, sqlite3_close would fail with SQLITE_BUSY.
        assert!(conn.close().is_ok());
        let err = cache.get(0).map(|_| ()).unwrap_err();
        assert_eq!(err.code, ffi::SQLITE_MISUSE);
    }
}
