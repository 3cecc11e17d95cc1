//! `StatementCache`: statements that a connection's own callbacks (SQL functions,
//! virtual tables) prepare once and reuse, stepped re-entrantly on that connection.
//!
//! A callback that runs queries cannot prepare them when it is registered (the tables
//! may not exist yet) and should not prepare them on every call (preparing costs more
//! than a point lookup). A cache prepares statement `i` of its fixed list on first use,
//! with `SQLITE_PREPARE_PERSISTENT`, and hands it out as a [`CachedStatement`] that
//! resets it, unbinds the blobs it borrowed and puts it back when dropped: on success,
//! on error and on panic alike.
//!
//! It does not call `sqlite3_clear_bindings`: since SQLite 3.54 the planner marks the
//! parameters of most `column = ?` terms as plan-sensitive (it checks whether they hold
//! 0 or 1), and clearing the bindings of a statement with such a mark expires it, so the
//! next step would prepare it again. Rebinding NULL to one parameter does not.
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
//! use cipherlite::sqlite::{Connection, OpenFlags, StatementCache};
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
    marker::PhantomData,
    ops::{Deref, DerefMut},
    ptr::NonNull,
    rc::Rc,
};

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
    slots: RefCell<Vec<Option<Statement>>>,
    closed: Cell<bool>,
}

impl Inner {
    fn close(&self) {
        self.closed.set(true);
        let statements = std::mem::take(&mut *self.slots.borrow_mut());
        // Dropping a Statement finalizes it.
        drop(statements);
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
    ///
    /// Blobs bound with [`CachedStatement::bind_blob_ref`] borrow for `'b`.
    pub fn get<'b>(&self, index: usize) -> Result<CachedStatement<'_, 'b>> {
        let inner = &*self.inner;
        if inner.closed.get() {
            return Err(Error::new(
                ffi::SQLITE_MISUSE,
                "the connection of this statement cache is closed",
            ));
        }
        let cached = inner
            .slots
            .borrow_mut()
            .get_mut(index)
            .and_then(Option::take)
            .filter(Statement::is_alive);
        let stmt = match cached {
            Some(stmt) => stmt,
            None => {
                let sql = inner.sql.get(index).ok_or_else(|| {
                    Error::new(ffi::SQLITE_MISUSE, "no such statement in the cache")
                })?;
                // SAFETY: the handle is open: the cache is not closed, and it closes
                // just before the connection does.
                let (stmt, _) = unsafe { Statement::prepare_on(inner.db, sql, true) }?;
                stmt.ok_or_else(|| Error::new(ffi::SQLITE_MISUSE, "empty cached statement"))?
            }
        };
        Ok(CachedStatement {
            cache: inner,
            index,
            stmt: Some(stmt),
            borrowed: 0,
            _borrows: PhantomData,
        })
    }

    /// `sqlite3_changes64`: rows changed by the connection's most recent INSERT, UPDATE
    /// or DELETE to complete (a cached one, right after it ran).
    pub fn changes(&self) -> Result<i64> {
        self.check_open()?;
        // SAFETY: open handle (checked above).
        Ok(unsafe { ffi::sqlite3_changes64(self.inner.db.as_ptr()) })
    }

    fn check_open(&self) -> Result<()> {
        if self.inner.closed.get() {
            Err(Error::new(
                ffi::SQLITE_MISUSE,
                "the connection of this statement cache is closed",
            ))
        } else {
            Ok(())
        }
    }
}

/// A statement taken from a [`StatementCache`]; derefs to [`Statement`]. Dropping it
/// resets the statement, binds NULL to the parameters bound with
/// [`bind_blob_ref`](Self::bind_blob_ref) and returns it to the cache. Other bindings
/// stay until they are bound again.
pub struct CachedStatement<'c, 'b> {
    cache: &'c Inner,
    index: usize,
    /// Bit `i` set: parameter `i + 1` holds a borrowed blob (parameters above 64 are
    /// never borrowed: `bind_blob_ref` copies them).
    borrowed: u64,
    /// Always `Some` until dropped.
    stmt: Option<Statement>,
    /// Blobs bound without a copy borrow for `'b`, which outlives this value.
    _borrows: PhantomData<&'b [u8]>,
}

impl<'b> CachedStatement<'_, 'b> {
    /// Binds a BLOB without copying it (`SQLITE_STATIC`); an empty slice binds an empty
    /// BLOB, not NULL. Safe because `value` outlives this value, whose drop resets the
    /// statement and binds NULL in its place.
    pub fn bind_blob_ref(&mut self, index: c_int, value: &'b [u8]) -> Result<()> {
        let Some(bit) = u32::try_from(index - 1)
            .ok()
            .and_then(|i| 1u64.checked_shl(i))
        else {
            // Out of the mask's range (or not a parameter): copy instead.
            return self.deref_mut().bind_blob(index, value);
        };
        // SAFETY: `value` lives for 'b, which outlives self; self's drop resets the
        // statement and rebinds this parameter (its bit is set below, before the borrow
        // can be stepped) before 'b can end.
        unsafe { self.deref_mut().bind_blob_static(index, value) }?;
        self.borrowed |= bit;
        Ok(())
    }
}

impl Deref for CachedStatement<'_, '_> {
    type Target = Statement;
    fn deref(&self) -> &Statement {
        self.stmt.as_ref().expect("present until dropped")
    }
}

impl DerefMut for CachedStatement<'_, '_> {
    fn deref_mut(&mut self) -> &mut Statement {
        self.stmt.as_mut().expect("present until dropped")
    }
}

impl Drop for CachedStatement<'_, '_> {
    fn drop(&mut self) {
        let Some(mut stmt) = self.stmt.take() else {
            return;
        };
        if !stmt.is_alive() {
            return;
        }
        // The step's error, if any, was reported by step() already.
        let _ = stmt.reset();
        let mut borrowed = self.borrowed;
        while borrowed != 0 {
            let i = borrowed.trailing_zeros();
            borrowed &= borrowed - 1;
            // `i < 64`, so the parameter number fits; NULL never fails to bind to a
            // parameter that took a blob.
            if stmt.bind_null(i as c_int + 1).is_err() {
                return; // dropping it finalizes it: no borrowed pointer survives
            }
        }
        if self.cache.closed.get() {
            return; // dropping finalizes it
        }
        if let Ok(mut slots) = self.cache.slots.try_borrow_mut() {
            if let Some(slot @ None) = slots.get_mut(self.index) {
                *slot = Some(stmt);
            }
            // Otherwise a nested call refilled the slot: this copy is finalized.
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sqlite::OpenFlags;

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
        let mut stmt = cache.get(0).unwrap();
        // A borrowed blob is unbound on return: ?1 reads NULL.
        let owner = [9u8; 4];
        stmt.bind_blob_ref(1, &owner).unwrap();
        drop(stmt);
        let mut stmt = cache.get(0).unwrap();
        assert!(stmt.step().unwrap());
        assert_eq!(stmt.column_type(0), crate::sqlite::ColumnType::Null);
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
        outer.bind_blob_ref(1, &owner).unwrap();
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
