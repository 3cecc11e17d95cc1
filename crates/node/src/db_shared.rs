//! What every native `Database` shares with its statements, backups and callbacks: the
//! core's `Session` (the connection, its VFS, key, statements, backups and registrations,
//! and the state rules better-sqlite3 checks with its `REQUIRE_*` macros,
//! docs/better-sqlite3-behaviour.md §12) plus what only JS has: the env, the result
//! buffer, the `verbose` logger and the exception a callback threw. The fields are
//! private: other files go through these methods.

use super::{
    callbacks::{CallbackEnv, CallbackShared, Lifecycle},
    js::{self, arraybuffer_info, check, new_reference, JsResult, Thrown},
    results::{
        grown_scratch_len, shrunk_scratch_len, write_u32, BatchEncoder, CHANGES_AT, FLAGS_AT,
        FLAG_SAFE_INTEGERS, FLAG_SCRATCH_REPLACED, HEADER_BYTES, LAST_INSERT_ROWID_AT,
    },
};
use cipherlite_core::connection_policy::{
    BackupDestination, BackupKey, OpenedDatabase, RunningBackup,
};
use cipherlite_core::session::{self, Session};
use cipherlite_sqlite::{Connection, Statement};
use napi::sys;
use std::{
    cell::{Cell, RefCell},
    ptr,
    rc::{Rc, Weak},
};
use zeroize::Zeroizing;

/// The JS-owned buffer results are written into (see `results.rs`).
struct Scratch {
    reference: sys::napi_ref,
    data: *mut u8,
    len: usize,
}

/// State shared by a database and all its statements.
pub(crate) struct DbShared {
    env: sys::napi_env,
    /// Whether the module instance's environment is stopping (shared with the instance).
    /// Visible to the bridge (it never changes): the raw hot paths ask it.
    pub(crate) instance: Rc<Lifecycle>,
    /// The connection and everything that lives as long as it (cipherlite-core).
    session: Session<Thrown>,
    scratch: RefCell<Scratch>,
    /// The scratch buffer's size at open, which a shrink returns to.
    scratch_initial_len: usize,
    sqlite_error_class: sys::napi_ref,
    object_prototype: sys::napi_ref,
    verbose: Cell<sys::napi_ref>,
    /// What the JS callbacks registered on this connection share with it (the exception
    /// one of them threw, to be rethrown when the SQLite call returns).
    callbacks: Rc<CallbackShared>,
}

/// Registers one user function (or module, or extension) on a connection.
pub(crate) type Registration = session::Registration<Thrown>;

/// What a new [`DbShared`] is made of: the opened connection and the constructor's
/// converted arguments.
pub(crate) struct DbParts {
    pub env: sys::napi_env,
    /// The module instance's lifecycle.
    pub lifecycle: Rc<Lifecycle>,
    pub opened: OpenedDatabase,
    /// The raw key of an encrypted database (`None` for a passphrase or no key).
    pub key: Option<Zeroizing<[u8; 32]>>,
    /// The scratch ArrayBuffer: a reference to it, its memory and its length.
    pub scratch: (sys::napi_ref, *mut u8, usize),
    pub sqlite_error_class: sys::napi_ref,
    pub object_prototype: sys::napi_ref,
}

impl DbShared {
    /// A database's state right after it opened: idle, no iterator, no callbacks.
    pub fn new(parts: DbParts) -> Rc<DbShared> {
        let (reference, data, len) = parts.scratch;
        Rc::new(DbShared {
            env: parts.env,
            callbacks: CallbackShared::new(parts.env, parts.lifecycle.clone()),
            instance: parts.lifecycle,
            session: Session::new(parts.opened, parts.key),
            scratch: RefCell::new(Scratch {
                reference,
                data,
                len,
            }),
            scratch_initial_len: len,
            sqlite_error_class: parts.sqlite_error_class,
            object_prototype: parts.object_prototype,
            verbose: Cell::new(ptr::null_mut()),
        })
    }

    /// The env this database lives in (its JS thread's).
    pub fn env(&self) -> sys::napi_env {
        self.env
    }

    /// The database's `defaultSafeIntegers()` setting, which new statements start with.
    pub fn default_safe_integers(&self) -> bool {
        self.session.state().default_safe_integers()
    }

    pub fn set_default_safe_integers(&self, on: bool) {
        self.session.state().set_default_safe_integers(on);
    }

    /// A `safeIntegers` option passed as 0/1, or 2 for "the database default now".
    pub fn safe_integers_option(&self, option: u32) -> bool {
        self.session.state().safe_integers_option(option)
    }

    /// `unsafeMode(on)`: also switches SQLite's defensive mode (off while unsafe).
    pub fn set_unsafe_mode(&self, on: bool) -> JsResult<()> {
        self.session.set_unsafe_mode(on)
    }

    /// A JS function, aggregate, table or logger was registered: user code may run while
    /// SQLite steps, so iterators must not read ahead from now on.
    pub fn note_js_callbacks(&self) {
        self.session.state().note_js_callbacks();
    }

    /// Whether an iterator over a statement (`statement_readonly`: it writes nothing) may
    /// fetch rows ahead of `next()` (see `ConnectionState::may_read_ahead`).
    pub fn may_read_ahead(&self, statement_readonly: bool) -> bool {
        self.session.state().may_read_ahead(statement_readonly)
    }

    /// Sets (or clears, when `logger` is not a function) the `verbose` logger.
    pub fn set_verbose(&self, logger: sys::napi_value) -> JsResult<()> {
        // SAFETY: logger is a value of the current call.
        let is_fn = unsafe { js::type_of(self.env, logger) } == sys::ValueType::napi_function;
        let old = self.verbose.replace(ptr::null_mut());
        if !old.is_null() {
            // SAFETY: a live reference of this env.
            unsafe { sys::napi_delete_reference(self.env, old) };
        }
        if is_fn {
            self.verbose.set(new_reference(self.env, logger)?);
            // The logger runs while SQLite works: iterators must not read ahead.
            self.note_js_callbacks();
        }
        Ok(())
    }

    pub fn throw(&self, err: Thrown) -> napi::Error {
        if self.instance.is_stopping() {
            // Nothing can be thrown any more (and V8 is unwinding anyway).
            return js::pending();
        }
        let err = match err {
            Thrown::Sqlite(_) | Thrown::Pending if self.has_stashed_exception() => {
                self.callbacks.rethrow_pending();
                Thrown::Pending
            }
            other => other,
        };
        js::throw(self.env, self.sqlite_error_class, err)
    }

    /// The env and exception slot a JS callback registered on this connection needs.
    pub fn callback_env(&self) -> CallbackEnv {
        CallbackEnv::new(&self.callbacks)
    }

    /// True while a JS exception from a callback waits to be rethrown.
    pub fn has_stashed_exception(&self) -> bool {
        self.callbacks.has_stashed_exception()
    }

    /// Forgets a stashed exception left by a statement that succeeded anyway.
    pub fn clear_stale_exception(&self) {
        self.callbacks.clear_stale_exception();
    }

    pub fn is_open(&self) -> bool {
        self.session.is_open()
    }

    /// After a statement ran: a database ATTACHed to an encrypted connection is
    /// encrypted with the same key, so a new (empty) one needs SQLCipher's 80 reserved
    /// bytes per page before anything is written to it.
    pub fn after_statement(&self) {
        self.session.after_statement();
    }

    pub fn in_transaction(&self) -> bool {
        self.session.in_transaction()
    }

    /// Runs `f` with the open connection, or fails with better-sqlite3's TypeError.
    pub fn with_conn<T>(&self, f: impl FnOnce(&Connection) -> JsResult<T>) -> JsResult<T> {
        self.session.with_conn(f)
    }

    pub fn require_open(&self) -> JsResult<()> {
        self.require_running()?;
        Ok(self.session.state().require_open(self.is_open())?)
    }

    /// Checks that the scratch ArrayBuffer is still the memory we write into. It is kept
    /// alive by a reference and marked untransferable by the JS layer, but code that digs
    /// out the internals could still detach it (`ArrayBuffer.prototype.transfer` on Node
    /// 22): then fail instead of writing into freed memory.
    fn validate_scratch(&self) -> JsResult<()> {
        let scratch = self.scratch.borrow();
        let mut value = ptr::null_mut();
        // SAFETY: a live reference of this env.
        check(unsafe { sys::napi_get_reference_value(self.env, scratch.reference, &mut value) })?;
        let (data, len) = arraybuffer_info(self.env, value)?;
        if data != scratch.data || len != scratch.len {
            return Err(Thrown::Error(
                "cipherlite: the internal result buffer was detached".into(),
            ));
        }
        Ok(())
    }

    /// Marks the database busy until the guard is dropped (also when unwinding); then
    /// the state is what it was before, so an entry point reached from user code while
    /// the database is busy can never make it look idle.
    /// (JS iterators may serve rows they already hold without asking: they only hold rows
    /// when no JS callback exists on the connection, and then no user code can run while
    /// the database is busy.)
    pub fn busy_guard(&self) -> BusyGuard<'_> {
        let was = self.session.state().enter_busy();
        BusyGuard { db: self, was }
    }

    /// Counts a statement as binding parameters until the guard is dropped.
    pub fn binding_guard(&self) -> BindingGuard<'_> {
        self.session.state().binding_started();
        BindingGuard { db: self }
    }

    /// Refuses (better-sqlite3's busy TypeError) to close while anything uses the
    /// connection: a query running, parameters being bound, or a statement borrowed by
    /// a call in progress. Checked before anything is torn down, so a refused close
    /// leaves the database open and usable, and an accepted one finalizes everything.
    pub fn require_closable(&self) -> JsResult<()> {
        self.require_running()?;
        self.session.require_closable()
    }

    /// Fails once the environment is stopping: no more SQL runs for it.
    pub fn require_running(&self) -> JsResult<()> {
        if self.instance.is_stopping() {
            Err(Thrown::Stopped)
        } else {
            Ok(())
        }
    }

    pub fn require_not_busy(&self) -> JsResult<()> {
        self.require_running()?;
        Ok(self.session.state().require_not_busy()?)
    }

    pub fn require_no_iterators_unless_unsafe(&self) -> JsResult<()> {
        Ok(self.session.state().require_no_iterators_unless_unsafe()?)
    }

    /// Open, not busy, no iterator running: what `function()`, `aggregate()`, `table()`,
    /// `loadExtension()`, `serialize()` and `verify()` need.
    pub fn require_idle(&self) -> JsResult<()> {
        self.require_running()?;
        Ok(self.session.state().require_idle(self.is_open())?)
    }

    /// Room for one more iterator (better-sqlite3 allows 65535 at once).
    pub fn require_iterator_slot(&self) -> JsResult<()> {
        Ok(self.session.state().require_iterator_slot()?)
    }

    /// An iterator of this connection opened.
    pub fn iterator_opened(&self) {
        self.session.state().iterator_opened();
    }

    /// An iterator of this connection ended (or was dropped unfinished).
    pub fn iterator_closed(&self) {
        self.session.state().iterator_closed();
    }

    pub fn register_statement(&self, stmt: &Rc<RefCell<Statement>>) {
        self.session.register_statement(stmt);
    }

    pub fn register_backup(&self, slot: Weak<RefCell<RunningBackup>>) {
        self.session.register_backup(slot);
    }

    /// Where a backup of this database is written, for the key it is to have.
    pub fn backup_destination(&self, key: BackupKey<'_>) -> JsResult<BackupDestination> {
        self.session.backup_destination(key)
    }

    /// The AES key of an encrypted database's file (a copy, wiped when dropped): the raw
    /// key, or the key a passphrase derives for this file's salt.
    pub fn key(&self) -> Option<Zeroizing<[u8; 32]>> {
        self.session.key()
    }

    pub fn remember_registration(&self, key: String, r: Registration) {
        self.session.remember_registration(key, r);
    }

    /// The connection's life after opening: close, rekey and reopen (cipherlite-core).
    pub fn session(&self) -> &Session<Thrown> {
        &self.session
    }

    /// A reference to `Object.prototype`, to recognise plain objects.
    pub fn object_prototype(&self) -> sys::napi_ref {
        self.object_prototype
    }

    /// Calls the `verbose` logger with the statement's expanded SQL, if there is one.
    /// A throwing logger leaves its exception pending.
    pub fn log(&self, stmt: &Statement) -> JsResult<()> {
        let r = self.verbose.get();
        if r.is_null() {
            return Ok(());
        }
        let sql = stmt.expanded_sql().unwrap_or_else(|| stmt.sql());
        // SAFETY: on the JS thread; r is a live reference to a function.
        unsafe {
            let mut f = ptr::null_mut();
            check(sys::napi_get_reference_value(self.env, r, &mut f))?;
            let arg = js::string(self.env, &sql);
            let mut out = ptr::null_mut();
            let status =
                sys::napi_call_function(self.env, js::undefined(self.env), f, 1, &arg, &mut out);
            if status != sys::Status::napi_ok && js::stopping_after_failed_call(self.env) {
                self.instance.set_stopping();
                return Err(Thrown::Stopped);
            }
            check(status)
        }
    }

    /// Writes an encoded batch into the scratch buffer (replacing it by a larger one when
    /// needed) and returns the batch's text as one JS (one-byte) string — or, when some of
    /// its TEXT values travel alone or it holds text beyond Latin-1 (see `results.rs`), an
    /// array of the batch string, those values, and the wide string last.
    /// `stmt` is the statement the batch came from, still on the batch's last row.
    pub fn write_batch(
        &self,
        batch: &BatchEncoder,
        mut flags: u32,
        stmt: Option<&Statement>,
    ) -> JsResult<sys::napi_value> {
        self.validate_scratch()?;
        let needed = batch.encoded_len();
        if needed > self.scratch.borrow().len {
            self.grow_scratch(needed)?;
            flags |= FLAG_SCRATCH_REPLACED;
        }
        {
            let scratch = self.scratch.borrow();
            // SAFETY: data/len describe the live ArrayBuffer we hold a reference to; no JS
            // runs while this slice exists.
            let out = unsafe { std::slice::from_raw_parts_mut(scratch.data, scratch.len) };
            batch.write_into(out, flags);
        }
        // The one-byte batch string is Latin-1; the wide one (if any) goes last.
        let text = js::text(self.env, batch.text(), true)?;
        let big = batch.big_text_columns();
        let wide = batch.wide_text();
        if big.is_empty() && wide.is_none() {
            return Ok(text);
        }
        let mut values = Vec::with_capacity(big.len() + 2);
        values.push(text);
        if !big.is_empty() {
            let Some(stmt) = stmt else {
                return Err(Thrown::Error(
                    "cipherlite: internal error (a batch lost its statement)".into(),
                ));
            };
            for &column in big {
                let bytes = stmt.column_text(column);
                values.push(js::text(self.env, bytes, bytes.is_ascii())?);
            }
        }
        if let Some(wide) = wide {
            values.push(js::text(self.env, wide, false)?);
        }
        js::array_of(self.env, &values)
    }

    /// Writes `run()`'s result into the scratch header.
    pub fn write_run_result(&self, changes: i64, rowid: i64, safe_integers: bool) -> JsResult<()> {
        self.validate_scratch()?;
        let scratch = self.scratch.borrow();
        // SAFETY: the scratch buffer is at least HEADER_BYTES long (checked on creation).
        let out = unsafe { std::slice::from_raw_parts_mut(scratch.data, HEADER_BYTES) };
        let flags = if safe_integers { FLAG_SAFE_INTEGERS } else { 0 };
        write_u32(out, FLAGS_AT, flags);
        let rowid_bits = if safe_integers {
            rowid as u64
        } else {
            (rowid as f64).to_bits()
        };
        out[LAST_INSERT_ROWID_AT..LAST_INSERT_ROWID_AT + 8]
            .copy_from_slice(&rowid_bits.to_ne_bytes());
        write_u32(out, CHANGES_AT, changes.clamp(0, u32::MAX as i64) as u32);
        Ok(())
    }

    fn grow_scratch(&self, needed: usize) -> JsResult<()> {
        {
            let scratch = self.scratch.borrow();
            // JS reads the flags from the buffer it knows: tell it to fetch the new one.
            // SAFETY: the old buffer is still alive (we hold its reference) and has a header.
            let old = unsafe { std::slice::from_raw_parts_mut(scratch.data, HEADER_BYTES) };
            write_u32(old, FLAGS_AT, FLAG_SCRATCH_REPLACED);
        }
        let len = grown_scratch_len(self.scratch.borrow().len, needed);
        self.replace_scratch(len)
    }

    /// After JS has read a batch: a grown scratch buffer goes back to its initial size
    /// (`shrunk_scratch_len`). Not while a query runs (JS then reads nothing).
    pub(crate) fn shrink_scratch(&self) -> JsResult<()> {
        if self.session.state().is_busy() {
            return Ok(());
        }
        let current = self.scratch.borrow().len;
        match shrunk_scratch_len(current, self.scratch_initial_len) {
            Some(len) => self.replace_scratch(len),
            None => Ok(()),
        }
    }

    fn replace_scratch(&self, len: usize) -> JsResult<()> {
        let mut scratch = self.scratch.borrow_mut();
        // SAFETY: on the JS thread; the new ArrayBuffer is V8-owned memory (no external
        // buffers, as Electron requires); the old reference is released.
        unsafe {
            let mut data = ptr::null_mut();
            let mut ab = ptr::null_mut();
            check(sys::napi_create_arraybuffer(
                self.env, len, &mut data, &mut ab,
            ))?;
            let mut r = ptr::null_mut();
            check(sys::napi_create_reference(self.env, ab, 1, &mut r))?;
            sys::napi_delete_reference(self.env, scratch.reference);
            *scratch = Scratch {
                reference: r,
                data: data.cast(),
                len,
            };
        }
        Ok(())
    }

    pub(crate) fn scratch_value(&self) -> sys::napi_value {
        let mut v = ptr::null_mut();
        // SAFETY: live reference.
        unsafe { sys::napi_get_reference_value(self.env, self.scratch.borrow().reference, &mut v) };
        v
    }

    /// Aborts the backups, finalizes every statement and closes the connection
    /// (idempotent; `Session::close`).
    pub fn close(&self) -> JsResult<()> {
        self.session.close()
    }
}

impl Drop for DbShared {
    fn drop(&mut self) {
        let _ = self.close();
        // SAFETY: these references belong to self.env, which outlives its objects'
        // finalizers; each is deleted once.
        unsafe {
            for r in [
                self.scratch.get_mut().reference,
                self.sqlite_error_class,
                self.object_prototype,
                self.verbose.get(),
            ] {
                if !r.is_null() {
                    sys::napi_delete_reference(self.env, r);
                }
            }
        }
    }
}

/// See [`DbShared::busy_guard`].
pub(crate) struct BusyGuard<'a> {
    db: &'a DbShared,
    was: bool,
}

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        self.db.session.state().restore_busy(self.was);
    }
}

/// See [`DbShared::binding_guard`].
pub(crate) struct BindingGuard<'a> {
    db: &'a DbShared,
}

impl Drop for BindingGuard<'_> {
    fn drop(&mut self) {
        self.db.session.state().binding_ended();
    }
}
