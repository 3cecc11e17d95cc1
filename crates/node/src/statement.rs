//! The native `Statement`: binding, stepping, and the per-statement state rules of
//! better-sqlite3 (`docs/better-sqlite3-behaviour.md` §5, §12). Rows leave as column batches
//! (`results.rs`); JS builds them.

use super::{
    db_shared::DbShared,
    js::{self, type_error, JsAny, JsResult, Thrown},
    params::{Binder, NamedParams},
    registry::Registry,
    results::{
        BatchEncoder, FLAG_COLUMNS_CHANGED, FLAG_DONE, FLAG_SAFE_INTEGERS, MODE_EXPAND, MODE_FLAT,
        MODE_PLUCK, MODE_RAW,
    },
};
use cipherlite_core::connection_policy::state::{
    require_not_locked, require_reader, require_returns_data, statement_busy, StatementCursor,
};
use cipherlite_sqlite::Statement;
use napi::sys;
use napi_derive::napi;
use std::{
    cell::{Cell, RefCell},
    ptr,
    rc::Rc,
};

/// One-shot bindings with at least this many bytes of TEXT/BLOB are released after the
/// execution instead of being kept until the next one.
const LARGE_BINDING_BYTES: usize = 64 * 1024;

/// A digest of a statement's column names and origin tables (what row builders depend on).
fn columns_digest(stmt: &Statement) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    let n = stmt.column_count();
    n.hash(&mut hasher);
    for i in 0..n {
        stmt.column_name(i).hash(&mut hasher);
        stmt.column_table_name(i).hash(&mut hasher);
    }
    hasher.finish()
}

/// How many rows an iterator fetches per `next()` when nothing can observe the
/// difference (see `iterator_batch_size`).
const ITERATOR_BATCH_ROWS: usize = 64;

/// The native half of a JS `Statement`: a handle on a [`StatementCore`] plus its id in
/// the thread's registry, which the raw hot paths (`raw_entry_points.rs`) look it up by.
#[napi(js_name = "NativeStatement")]
pub struct NativeStatement {
    core: Rc<StatementCore>,
    id: u32,
    /// The module instance's statement registry, which the id is removed from on drop.
    registry: Rc<Registry<StatementCore>>,
}

impl NativeStatement {
    pub(crate) fn new(
        registry: &Rc<Registry<StatementCore>>,
        db: Rc<DbShared>,
        stmt: Statement,
        pragma: bool,
    ) -> Self {
        let core = Rc::new(StatementCore::new(db, stmt, pragma));
        let id = registry.register(&core);
        NativeStatement {
            core,
            id,
            registry: registry.clone(),
        }
    }
}

impl Drop for NativeStatement {
    fn drop(&mut self) {
        self.registry.remove(self.id);
    }
}

impl std::ops::Deref for NativeStatement {
    type Target = StatementCore;
    fn deref(&self) -> &StatementCore {
        &self.core
    }
}

/// A prepared statement and its better-sqlite3 state (bound, locked by an iterator,
/// row mode, safe integers).
pub struct StatementCore {
    db: Rc<DbShared>,
    stmt: Rc<RefCell<Statement>>,
    reader: bool,
    readonly: bool,
    /// Parameters bound for good by `bind()`.
    bound: Cell<bool>,
    /// Idle, draining an `all()`, or iterating (`connection_policy::state`).
    cursor: Cell<StatementCursor>,
    mode: Cell<u32>,
    safe_integers: Cell<bool>,
    named: RefCell<Option<NamedParams>>,
    /// An error an iterator's batch ran into after some rows: those rows are delivered
    /// first, the error on the next `next()` — as stepping one row at a time would.
    deferred_error: RefCell<Option<cipherlite_sqlite::Error>>,
    /// SQLITE_STMTSTATUS_REPREPARE when the column names were last checked.
    columns_seen_at: Cell<i64>,
    /// A digest of the column names (and tables) the JS side has: a re-prepare that keeps
    /// them (a new plan for new bound values) needs no new row builder.
    columns_digest: Cell<u64>,
    /// The one-shot bindings include a large TEXT/BLOB (see `finish`).
    holds_large_binding: Cell<bool>,
}

impl Drop for StatementCore {
    fn drop(&mut self) {
        // An iterator abandoned without finishing or return() must not keep the
        // connection "iterating" (busy for writes and close) forever.
        if self.end_cursor().is_locked() {
            self.db.iterator_closed();
        }
    }
}

impl StatementCore {
    fn new(db: Rc<DbShared>, stmt: Statement, pragma: bool) -> Self {
        let reader = stmt.column_count() >= 1 || pragma;
        let readonly = stmt.readonly();
        let stmt = Rc::new(RefCell::new(stmt));
        db.register_statement(&stmt);
        let safe = db.default_safe_integers();
        StatementCore {
            db,
            stmt,
            reader,
            readonly,
            bound: Cell::new(false),
            cursor: Cell::new(StatementCursor::Idle),
            mode: Cell::new(MODE_FLAT),
            safe_integers: Cell::new(safe),
            named: RefCell::new(None),
            deferred_error: RefCell::new(None),
            columns_seen_at: Cell::new(-1),
            columns_digest: Cell::new(0),
            holds_large_binding: Cell::new(false),
        }
    }

    /// Ends what the cursor had in progress; returns what it was.
    fn end_cursor(&self) -> StatementCursor {
        self.cursor.replace(StatementCursor::Idle)
    }

    /// Applies one of the cursor's transitions.
    fn update_cursor<T>(&self, step: impl FnOnce(&mut StatementCursor) -> T) -> T {
        let mut cursor = self.cursor.get();
        let out = step(&mut cursor);
        self.cursor.set(cursor);
        out
    }

    pub(crate) fn shared(&self) -> &DbShared {
        &self.db
    }

    /// The statement, mutably; a re-entrant call (from a getter or callback run while this
    /// statement is in use) is refused as better-sqlite3 refuses a busy statement.
    fn statement_mut(&self) -> JsResult<std::cell::RefMut<'_, Statement>> {
        self.stmt
            .try_borrow_mut()
            .map_err(|_| statement_busy().into())
    }

    fn statement(&self) -> JsResult<std::cell::Ref<'_, Statement>> {
        self.stmt.try_borrow().map_err(|_| statement_busy().into())
    }

    fn require_reader(&self) -> JsResult<()> {
        Ok(require_reader(self.reader)?)
    }

    fn require_not_locked(&self) -> JsResult<()> {
        Ok(require_not_locked(self.cursor.get().is_locked())?)
    }

    /// The common start of run/get/all/iterate: state checks, then binding.
    fn start(&self, args: &[sys::napi_value], mutates: bool) -> JsResult<()> {
        let db = &self.db;
        db.require_open()?;
        db.require_not_busy()?;
        self.require_not_locked()?;
        if mutates {
            db.require_no_iterators_unless_unsafe()?;
        }
        db.clear_stale_exception();
        self.settle_draining()?;
        if self.bound.get() {
            if !args.is_empty() {
                return type_error("This statement already has bound parameters");
            }
            return Ok(());
        }
        self.bind_args(args)
    }

    /// An all() whose remaining batches were never asked for (its JS side threw) left
    /// the statement running: reset it, so that what follows (an execution, or `bind()`)
    /// starts over rather than continuing or rebinding the old cursor.
    fn settle_draining(&self) -> JsResult<()> {
        if self.cursor.get().is_draining() {
            self.end_cursor();
            let mut stmt = self.statement_mut()?;
            let _ = stmt.reset();
            self.finish(&mut stmt);
        }
        Ok(())
    }

    fn bind_args(&self, args: &[sys::napi_value]) -> JsResult<()> {
        // Getters and `valueOf` run while binding: they may not close the connection.
        let _binding = self.db.binding_guard();
        let mut stmt = self.statement_mut()?;
        let mut named = self.named.borrow_mut();
        let named = named.get_or_insert_with(|| NamedParams::of(&stmt));
        let proto = self.db.object_prototype();
        let mut binder = Binder::new(self.db.env(), &mut stmt, named, proto);
        // SAFETY: args is the JS array of this call's arguments.
        let result = unsafe { binder.bind_all(args) };
        let large = binder.bound_bytes >= LARGE_BINDING_BYTES;
        if result.is_err() {
            stmt.clear_bindings();
        } else {
            self.holds_large_binding.set(large);
        }
        result
    }

    /// After an execution: one-shot bindings are not cleared (every call binds every
    /// parameter again, and `sqlite3_clear_bindings` makes SQLite 3.54 re-prepare any
    /// statement whose plan depends on a bound value) unless they hold large values,
    /// which are released rather than kept until the next call.
    fn finish(&self, stmt: &mut Statement) {
        if !self.bound.get() && self.holds_large_binding.replace(false) {
            stmt.clear_bindings();
        }
    }

    /// Flags for a batch: whether the column names must be fetched again.
    fn columns_flag(&self, stmt: &Statement) -> u32 {
        let count = i64::from(stmt.reprepare_count());
        if self.columns_seen_at.get() == count {
            return 0;
        }
        self.columns_seen_at.set(count);
        let digest = columns_digest(stmt);
        if self.columns_digest.replace(digest) == digest && count > 0 {
            0
        } else {
            FLAG_COLUMNS_CHANGED
        }
    }

    fn encoder(&self, stmt: &Statement, safe_integers: bool) -> BatchEncoder {
        let columns = if self.mode.get() == MODE_PLUCK {
            1
        } else {
            stmt.column_count().max(0) as usize
        };
        BatchEncoder::new(columns, safe_integers)
    }

    fn batch_flags(&self, batch: &BatchEncoder) -> u32 {
        if batch.safe_integers() {
            FLAG_SAFE_INTEGERS
        } else {
            0
        }
    }

    pub(crate) fn run_impl(&self, args: &[sys::napi_value]) -> JsResult<()> {
        self.start(args, true)?;
        let db = &self.db;
        let busy = db.busy_guard();
        let mut stmt = self.statement_mut()?;
        let result = (|| {
            db.log(&stmt)?;
            db.with_conn(|conn| {
                let before = conn.total_changes();
                let stepped = stmt.step();
                let reset = stmt.reset();
                stepped?;
                reset?;
                let changes = if conn.total_changes() == before {
                    0
                } else {
                    conn.changes()
                };
                db.write_run_result(changes, conn.last_insert_rowid(), self.safe_integers.get())
            })
        })();
        self.finish(&mut stmt);
        drop(busy);
        db.after_statement();
        result
    }

    pub(crate) fn get_impl(&self, args: &[sys::napi_value]) -> JsResult<sys::napi_value> {
        self.require_reader()?;
        self.start(args, false)?;
        let db = &self.db;
        let busy = db.busy_guard();
        let mut stmt = self.statement_mut()?;
        let result = (|| {
            db.log(&stmt)?;
            let has_row = match stmt.step() {
                Ok(r) => r,
                Err(e) => {
                    let _ = stmt.reset();
                    return Err(e.into());
                }
            };
            if !has_row {
                stmt.reset()?;
                // SAFETY: on the JS thread.
                return Ok(unsafe { js::undefined(db.env()) });
            }
            let mut batch = self.encoder(&stmt, self.safe_integers.get());
            batch.push_row(&stmt);
            let flags = self.columns_flag(&stmt) | self.batch_flags(&batch) | FLAG_DONE;
            // Written while the statement is still on the row (large TEXT values are made
            // into JS strings straight from SQLite's memory), then reset.
            let written = db.write_batch(&batch, flags, Some(&stmt));
            let reset = stmt.reset();
            let written = written?;
            reset?;
            Ok(written)
        })();
        self.finish(&mut stmt);
        drop(busy);
        result
    }

    /// Steps up to `max_rows` rows (unbounded: until the batch is full) into a batch.
    /// On the end (or an error) the statement is reset.
    fn step_batch(
        &self,
        stmt: &mut Statement,
        max_rows: usize,
        defer_errors: bool,
    ) -> JsResult<(sys::napi_value, bool)> {
        let db = &self.db;
        let mut batch: Option<BatchEncoder> = None;
        let mut flags = 0;
        loop {
            match stmt.step() {
                Ok(true) => {
                    let b = match &mut batch {
                        Some(b) => b,
                        None => {
                            flags |= self.columns_flag(stmt);
                            batch.insert(self.encoder(stmt, self.safe_integers.get()))
                        }
                    };
                    b.push_row(stmt);
                    if b.rows() >= max_rows || b.is_full() {
                        break;
                    }
                }
                Ok(false) => {
                    stmt.reset()?;
                    flags |= FLAG_DONE;
                    break;
                }
                Err(e) => {
                    let _ = stmt.reset();
                    match &batch {
                        Some(b) if defer_errors && b.rows() > 0 => {
                            *self.deferred_error.borrow_mut() = Some(e);
                            break;
                        }
                        _ => return Err(e.into()),
                    }
                }
            }
        }
        let batch = batch.unwrap_or_else(|| BatchEncoder::new(0, self.safe_integers.get()));
        flags |= self.batch_flags(&batch);
        // A batch with large TEXT values ends with their row, before the next step: the
        // statement is still on it.
        Ok((
            db.write_batch(&batch, flags, Some(stmt))?,
            flags & FLAG_DONE != 0,
        ))
    }

    pub(crate) fn all_impl(&self, args: &[sys::napi_value]) -> JsResult<sys::napi_value> {
        self.require_reader()?;
        self.start(args, false)?;
        let db = &self.db;
        let busy = db.busy_guard();
        let mut stmt = self.statement_mut()?;
        let result = (|| {
            db.log(&stmt)?;
            self.step_batch(&mut stmt, usize::MAX, false)
        })();
        if matches!(result, Ok((_, false))) {
            self.cursor.set(StatementCursor::Draining);
        } else {
            self.finish(&mut stmt);
        }
        drop(busy);
        result.map(|(v, _)| v)
    }

    pub(crate) fn more_impl(&self) -> JsResult<sys::napi_value> {
        if !self.cursor.get().is_draining() {
            return type_error("no batch in progress");
        }
        let db = &self.db;
        db.require_open()?;
        // Reachable from user code through the addon's raw entry points: it must not
        // step anything while another query runs.
        db.require_not_busy()?;
        let busy = db.busy_guard();
        let mut stmt = self.statement_mut()?;
        let result = self.step_batch(&mut stmt, usize::MAX, false);
        if !matches!(result, Ok((_, false))) {
            self.end_cursor();
            self.finish(&mut stmt);
        }
        drop(busy);
        result.map(|(v, _)| v)
    }

    /// Rows per `next()`: one when user code could observe stepping ahead (a writer, JS
    /// callbacks on the connection, unsafe mode), else a small batch.
    fn iterator_batch_size(&self) -> usize {
        if self.db.may_read_ahead(self.readonly) {
            ITERATOR_BATCH_ROWS
        } else {
            1
        }
    }

    pub(crate) fn iterate_impl(&self, args: &[sys::napi_value]) -> JsResult<()> {
        self.require_reader()?;
        self.start(args, false)?;
        let db = &self.db;
        if let Err(e) = db.require_iterator_slot() {
            if !self.bound.get() {
                self.statement_mut()?.clear_bindings();
            }
            return Err(e);
        }
        self.cursor.set(StatementCursor::Iterating {
            logged: false,
            exhausted: false,
        });
        db.iterator_opened();
        Ok(())
    }

    fn end_iteration(&self, stmt: &mut Statement) {
        if self.end_cursor().is_locked() {
            self.db.iterator_closed();
            self.finish(stmt);
        }
    }

    pub(crate) fn next_impl(&self) -> JsResult<sys::napi_value> {
        let db = &self.db;
        db.require_not_busy()?;
        if !self.cursor.get().has_rows_to_step() {
            // Nothing left to step: an empty, finished batch.
            return db.write_batch(&BatchEncoder::new(0, false), FLAG_DONE, None);
        }
        if let Some(e) = self.deferred_error.borrow_mut().take() {
            self.end_iteration(&mut *self.statement_mut()?);
            return Err(e.into());
        }
        let busy = db.busy_guard();
        let mut stmt = self.statement_mut()?;
        let result = (|| {
            if self.update_cursor(StatementCursor::take_first_step) {
                db.log(&stmt)?;
            }
            self.step_batch(&mut stmt, self.iterator_batch_size(), true)
        })();
        match result {
            Ok((_, true)) => self.update_cursor(StatementCursor::exhausted),
            Ok((_, false)) => {}
            Err(_) => self.end_iteration(&mut stmt),
        }
        drop(busy);
        result.map(|(v, _)| v)
    }

    fn return_impl(&self) -> JsResult<()> {
        if !self.cursor.get().is_locked() {
            return Ok(());
        }
        self.db.require_not_busy()?;
        self.deferred_error.borrow_mut().take();
        let mut stmt = self.statement_mut()?;
        if stmt.is_alive() && self.cursor.get().has_rows_to_step() {
            let _ = stmt.reset();
        }
        self.end_iteration(&mut stmt);
        Ok(())
    }

    /// `pluck()`/`expand()`/`raw()` with their checks; returns the mode now in force.
    pub(crate) fn set_mode_checked(&self, mode: u32, on: bool) -> JsResult<u32> {
        let method = match mode {
            MODE_PLUCK => "pluck",
            MODE_EXPAND => "expand",
            MODE_RAW => "raw",
            _ => return js::range_error("unknown row mode"),
        };
        self.set_mode_impl(mode, on, method)?;
        Ok(self.mode.get())
    }

    fn set_mode_impl(&self, mode: u32, on: bool, method: &'static str) -> JsResult<()> {
        require_returns_data(self.reader, method)?;
        self.db.require_not_busy()?;
        self.require_not_locked()?;
        if on {
            self.mode.set(mode);
        } else if self.mode.get() == mode {
            self.mode.set(MODE_FLAT);
        }
        Ok(())
    }

    fn columns_impl(&self) -> JsResult<sys::napi_value> {
        require_returns_data(self.reader, "columns")?;
        let db = &self.db;
        db.require_open()?;
        db.require_not_busy()?;
        let stmt = self.statement()?;
        let env = db.env();
        let n = stmt.column_count().max(0);
        // SAFETY: on the JS thread; the array and strings are fresh values.
        unsafe {
            let mut out = ptr::null_mut();
            js::check(sys::napi_create_array_with_length(
                env,
                (n * 5) as usize,
                &mut out,
            ))?;
            let str_or_null = |s: Option<&str>| match s {
                Some(s) => js::string(env, s),
                None => js::null(env),
            };
            for i in 0..n {
                let values = [
                    str_or_null(stmt.column_name(i)),
                    str_or_null(stmt.column_origin_name(i)),
                    str_or_null(stmt.column_table_name(i)),
                    str_or_null(stmt.column_database_name(i)),
                    str_or_null(stmt.column_decltype(i)),
                ];
                for (k, v) in values.into_iter().enumerate() {
                    js::check(sys::napi_set_element(
                        env,
                        out,
                        (i * 5) as u32 + k as u32,
                        v,
                    ))?;
                }
            }
            Ok(out)
        }
    }

    /// Column names (and, for `expand()`, table names) for the JS row factory, as an
    /// array made of defined elements (no inherited setter runs while it is built: the
    /// JS side asks for it between a batch and its rows).
    fn column_names_impl(&self, with_tables: bool) -> JsResult<sys::napi_value> {
        let db = &self.db;
        db.require_open()?;
        let stmt = self.statement()?;
        let env = db.env();
        let n = stmt.column_count().max(0);
        let mut values = Vec::with_capacity(n as usize * if with_tables { 2 } else { 1 });
        // SAFETY: on the JS thread.
        unsafe {
            for i in 0..n {
                values.push(js::string(env, stmt.column_name(i).unwrap_or("")));
                if with_tables {
                    values.push(match stmt.column_table_name(i) {
                        Some(t) => js::string(env, t),
                        None => js::null(env),
                    });
                }
            }
        }
        js::array_of(env, &values)
    }
}

/// A call's arguments, passed by the JS layer as one array.
fn arguments(db: &DbShared, args: JsAny) -> JsResult<Vec<sys::napi_value>> {
    // SAFETY: args is a value of this call.
    unsafe { super::params::array_elements(db.env(), args.0) }
}

#[napi]
impl NativeStatement {
    /// This statement's id for the raw hot paths (`fast.run(id, params)`).
    #[napi(getter, catch_unwind)]
    pub fn id(&self) -> u32 {
        self.id
    }

    #[napi(getter, catch_unwind)]
    pub fn reader(&self) -> bool {
        self.reader
    }

    #[napi(getter, catch_unwind)]
    pub fn readonly(&self) -> bool {
        self.readonly
    }

    #[napi(getter, catch_unwind)]
    pub fn busy(&self) -> bool {
        self.cursor.get().is_locked() && self.stmt.try_borrow().map_or(true, |s| s.is_alive())
    }

    #[napi(js_name = "return", catch_unwind)]
    pub fn return_(&self) -> napi::Result<()> {
        self.return_impl().map_err(|e| self.db.throw(e))
    }

    #[napi(catch_unwind)]
    pub fn bind(&self, args: JsAny) -> napi::Result<()> {
        let run = || -> JsResult<()> {
            if self.bound.get() {
                return type_error(
                    "The bind() method can only be invoked once per statement object",
                );
            }
            self.db.require_open()?;
            self.db.require_not_busy()?;
            self.require_not_locked()?;
            self.settle_draining()?;
            self.bind_args(&arguments(&self.db, args)?)?;
            self.bound.set(true);
            Ok(())
        };
        run().map_err(|e| self.db.throw(e))
    }

    /// `db.explain()` without values: marks the statement bound while leaving every
    /// parameter unbound (NULL), so its program can be read; the same checks as `bind()`.
    #[napi(catch_unwind)]
    pub fn bind_none(&self) -> napi::Result<()> {
        let run = || -> JsResult<()> {
            if self.bound.get() {
                return type_error(
                    "The bind() method can only be invoked once per statement object",
                );
            }
            self.db.require_open()?;
            self.db.require_not_busy()?;
            self.require_not_locked()?;
            self.bound.set(true);
            Ok(())
        };
        run().map_err(|e| self.db.throw(e))
    }

    /// `toString()`'s expanded SQL: the source with the parameters `bind()` bound
    /// substituted, or null when there is none to give (never bound — one-shot values of
    /// run/get/all/iterate don't count —, finalized by close(), or in use right now), in
    /// which case the JS side returns `source`.
    #[napi(catch_unwind)]
    pub fn expanded_source(&self) -> Option<String> {
        if !self.bound.get() {
            return None;
        }
        let stmt = self.stmt.try_borrow().ok()?;
        if !stmt.is_alive() {
            return None;
        }
        stmt.expanded_sql()
    }

    #[napi(catch_unwind)]
    pub fn safe_integers(&self, on: bool) -> napi::Result<()> {
        let run = || -> JsResult<()> {
            self.db.require_not_busy()?;
            self.require_not_locked()?;
            self.safe_integers.set(on);
            Ok(())
        };
        run().map_err(|e| self.db.throw(e))
    }

    /// `columns()` as a flat array: name, column, table, database, type per column.
    #[napi(catch_unwind)]
    pub fn columns(&self) -> napi::Result<JsAny> {
        self.columns_impl().map(JsAny).map_err(|e| self.db.throw(e))
    }

    #[napi(catch_unwind)]
    pub fn column_names(&self, with_tables: bool) -> napi::Result<JsAny> {
        self.column_names_impl(with_tables)
            .map(JsAny)
            .map_err(|e| self.db.throw(e))
    }
}

impl From<Thrown> for napi::Error {
    fn from(_: Thrown) -> Self {
        js::pending()
    }
}
