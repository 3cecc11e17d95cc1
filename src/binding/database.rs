//! The native `Database` class: owns the connection and the state machine shared with
//! its statements (open / busy / iterators / unsafe mode), as better-sqlite3's
//! `Database` does in C++.

use super::{
    js::{self, check, type_error, JsAny, JsResult, Thrown},
    registry::Instance,
    results::{
        write_u32, BatchEncoder, CHANGES_AT, FLAGS_AT, FLAG_SAFE_INTEGERS, FLAG_SCRATCH_REPLACED,
        HEADER_BYTES, LAST_INSERT_ROWID_AT, SCRATCH_KEEP_BYTES,
    },
    statement::NativeStatement,
};
use crate::sqlite::{self, ffi, Connection, OpenFlags, Statement};
use crate::vfs::{self, KeyedVfsHandle, NewFileLayout, VfsKey};
use napi::{sys, Env};
use napi_derive::napi;
use std::{
    cell::{Cell, RefCell},
    ptr,
    rc::{Rc, Weak},
};
use zeroize::Zeroizing;

/// V8's maximum string length on 64-bit platforms (`v8::String::kMaxLength`): the cap for
/// SQLite's length limits, so every TEXT value fits a JS string.
const MAX_STRING_LENGTH: i32 = (1 << 29) - 24;

pub(crate) const MSG_NOT_OPEN: &str = "The database connection is not open";
pub(crate) const MSG_DB_BUSY: &str = "This database connection is busy executing a query";
pub(crate) const MSG_STMT_BUSY: &str = "This statement is busy executing a query";

/// The JS-owned buffer results are written into (see `results.rs`).
struct Scratch {
    reference: sys::napi_ref,
    data: *mut u8,
    len: usize,
}

/// State shared by a database and all its statements.
pub(crate) struct DbShared {
    pub env: sys::napi_env,
    /// The module instance this database belongs to (its registries, its env's state).
    pub instance: Rc<Instance>,
    pub conn: RefCell<Option<Connection>>,
    /// Running SQL for a call from JS: user code that runs meanwhile may not re-enter.
    busy: Cell<bool>,
    /// Statements binding parameters right now: binding runs user code (getters,
    /// `valueOf`…), which may run other queries but not close the connection under them.
    binding: Cell<u32>,
    pub iterators: Cell<u32>,
    pub safe_integers: Cell<bool>,
    pub unsafe_mode: Cell<bool>,
    /// Set once a JS function/aggregate/table is registered: then iterators step one row
    /// per `next()`, since user code runs while SQLite steps.
    pub has_js_callbacks: Cell<bool>,
    statements: RefCell<Vec<Weak<RefCell<Statement>>>>,
    backups: super::backup::BackupRegistry,
    scratch: RefCell<Scratch>,
    /// The scratch buffer's size at open, which a shrink returns to.
    scratch_initial_len: usize,
    sqlite_error_class: sys::napi_ref,
    object_prototype: sys::napi_ref,
    verbose: Cell<sys::napi_ref>,
    /// A JS exception thrown by user code while SQLite was running, to be rethrown when
    /// the SQLite call returns (it fails with a generic error meanwhile).
    pending_exception: Cell<sys::napi_ref>,
    /// The keyed VFS of an encrypted database (unregistered after the connection closes).
    vfs: RefCell<Option<KeyedVfsHandle>>,
    /// The VFS of a database opened from file descriptors (unregistered on close).
    fd_vfs: RefCell<Option<vfs::fd::FdVfsHandle>>,
    vfs_name: RefCell<Option<std::ffi::CString>>,
    /// The key of an encrypted database, for `verify()` (which authenticates raw pages)
    /// and `rekey()`; wiped on drop. The VFS keeps its own copy.
    key: RefCell<Option<Zeroizing<[u8; 32]>>>,
    /// Every function, aggregate, virtual-table module and extension registered on the
    /// connection, to register again on the connection `rekey()` reopens.
    /// Keyed by what SQLite replaces on re-registration (a function's name and arity, a
    /// module's name), so registering again replaces instead of piling up.
    registrations: RefCell<Vec<(String, Registration)>>,
}

/// Registers one user function (or module, or extension) on a connection.
pub(crate) type Registration = Rc<dyn Fn(&Connection) -> JsResult<()>>;

impl DbShared {
    pub fn throw(&self, err: Thrown) -> napi::Error {
        if self.instance.is_stopping() {
            // Nothing can be thrown any more (and V8 is unwinding anyway).
            return js::pending();
        }
        let err = match err {
            Thrown::Sqlite(_) | Thrown::Pending if self.has_stashed_exception() => {
                self.rethrow_pending();
                Thrown::Pending
            }
            other => other,
        };
        js::throw(self.env, self.sqlite_error_class, err)
    }

    /// Re-raises the saved JS exception (see `pending_exception`).
    fn rethrow_pending(&self) {
        let r = self.pending_exception.replace(ptr::null_mut());
        if r.is_null() {
            return;
        }
        // SAFETY: r is a live reference created in this env; deleted right after use.
        unsafe {
            let mut holder = ptr::null_mut();
            sys::napi_get_reference_value(self.env, r, &mut holder);
            sys::napi_delete_reference(self.env, r);
            let mut exc = ptr::null_mut();
            if !holder.is_null()
                && sys::napi_get_named_property(self.env, holder, c"v".as_ptr(), &mut exc)
                    == sys::Status::napi_ok
            {
                sys::napi_throw(self.env, exc);
            }
        }
    }

    /// Takes the JS exception pending right now (thrown by a user callback) and keeps it
    /// to be rethrown when control returns to JS.
    pub fn stash_pending_exception(&self) {
        // SAFETY: on the JS thread of this env.
        unsafe {
            let mut exc = ptr::null_mut();
            if sys::napi_get_and_clear_last_exception(self.env, &mut exc) != sys::Status::napi_ok
                || exc.is_null()
            {
                return;
            }
            // A call into JS that failed because the environment is stopping (a worker
            // being terminated) leaves nothing to rethrow: the query must stop, and
            // nothing more may run for this environment.
            if !js::can_run_js(self.env) {
                self.instance.set_stopping();
                return;
            }
            if !self.pending_exception.get().is_null() {
                return; // the first exception wins
            }
            // References to primitives need napi 10: keep the value in a holder object
            // (defined, not assigned: no setter on Object.prototype runs).
            let mut holder = ptr::null_mut();
            sys::napi_create_object(self.env, &mut holder);
            js::define_value(self.env, holder, c"v", exc);
            let mut r = ptr::null_mut();
            sys::napi_create_reference(self.env, holder, 1, &mut r);
            self.pending_exception.set(r);
        }
    }

    /// True while a JS exception from a callback waits to be rethrown.
    pub fn has_stashed_exception(&self) -> bool {
        !self.pending_exception.get().is_null()
    }

    /// Forgets a stashed exception left by a statement that succeeded anyway.
    pub fn clear_stale_exception(&self) {
        let r = self.pending_exception.replace(ptr::null_mut());
        if !r.is_null() {
            // SAFETY: a live reference of this env.
            unsafe { sys::napi_delete_reference(self.env, r) };
        }
    }

    pub fn is_open(&self) -> bool {
        self.conn.borrow().is_some()
    }

    /// After a statement ran: a database ATTACHed to an encrypted connection is
    /// encrypted with the same key, so a new (empty) one needs SQLCipher's 80 reserved
    /// bytes per page before anything is written to it.
    pub fn after_statement(&self) {
        if self.vfs_name.borrow().is_none() {
            return;
        }
        let conn = self.conn.borrow();
        let Some(conn) = conn.as_ref() else { return };
        if !conn.take_attach_seen() {
            return;
        }
        for (schema, file) in conn.attached_databases() {
            if !file.is_empty() && std::fs::metadata(&file).map_or(true, |m| m.len() == 0) {
                let mut reserve = vfs::RESERVE_BYTES;
                let _ =
                    conn.file_control_int(&schema, ffi::SQLITE_FCNTL_RESERVE_BYTES, &mut reserve);
            }
        }
    }

    pub fn in_transaction(&self) -> bool {
        self.conn
            .borrow()
            .as_ref()
            .is_some_and(|c| !c.is_autocommit())
    }

    /// Runs `f` with the open connection, or fails with better-sqlite3's TypeError.
    pub fn with_conn<T>(&self, f: impl FnOnce(&Connection) -> JsResult<T>) -> JsResult<T> {
        let conn = self.conn.borrow();
        match conn.as_ref() {
            Some(c) => f(c),
            None => type_error(MSG_NOT_OPEN),
        }
    }

    pub fn require_open(&self) -> JsResult<()> {
        self.require_running()?;
        if self.is_open() {
            Ok(())
        } else {
            type_error(MSG_NOT_OPEN)
        }
    }

    /// Sets the busy state. (JS iterators may serve rows they already hold without asking:
    /// they only hold rows when no JS callback exists on the connection, and then no user
    /// code can run while the database is busy.)
    fn set_busy(&self, busy: bool) {
        self.busy.set(busy);
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
    pub fn busy_guard(&self) -> BusyGuard<'_> {
        let was = self.busy.replace(true);
        BusyGuard { db: self, was }
    }

    /// Counts a statement as binding parameters until the guard is dropped.
    pub fn binding_guard(&self) -> BindingGuard<'_> {
        self.binding.set(self.binding.get() + 1);
        BindingGuard { db: self }
    }

    /// Refuses (better-sqlite3's busy TypeError) to close while anything uses the
    /// connection: a query running, parameters being bound, or a statement borrowed by
    /// a call in progress. Checked before anything is torn down, so a refused close
    /// leaves the database open and usable, and an accepted one finalizes everything.
    pub fn require_closable(&self) -> JsResult<()> {
        self.require_not_busy()?;
        if self.iterators.get() > 0 || self.binding.get() > 0 {
            return type_error(MSG_DB_BUSY);
        }
        let in_use = self
            .statements
            .borrow()
            .iter()
            .filter_map(Weak::upgrade)
            .any(|s| s.try_borrow_mut().is_err());
        if in_use {
            return type_error(MSG_DB_BUSY);
        }
        Ok(())
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
        if self.busy.get() {
            type_error(MSG_DB_BUSY)
        } else {
            Ok(())
        }
    }

    pub fn require_no_iterators_unless_unsafe(&self) -> JsResult<()> {
        if self.iterators.get() > 0 && !self.unsafe_mode.get() {
            type_error(MSG_DB_BUSY)
        } else {
            Ok(())
        }
    }

    pub fn register_statement(&self, stmt: &Rc<RefCell<Statement>>) {
        let mut list = self.statements.borrow_mut();
        if list.len() >= 64 && list.len().is_power_of_two() {
            list.retain(|w| w.strong_count() > 0);
        }
        list.push(Rc::downgrade(stmt));
    }

    pub fn register_backup(&self, slot: Weak<RefCell<super::backup::BackupSlot>>) {
        let mut list = self.backups.borrow_mut();
        list.retain(|w| w.strong_count() > 0);
        list.push(slot);
    }

    /// The VFS this database's files go through (`None`: SQLite's default). Backups of
    /// an encrypted database go through it too, so they are encrypted with the same key.
    pub fn vfs_name(&self) -> Option<std::ffi::CString> {
        self.vfs_name.borrow().clone()
    }

    /// The AES key of an encrypted database's file (a copy, wiped when dropped): the raw
    /// key, or the key a passphrase derives for this file's salt.
    pub fn key(&self) -> Option<Zeroizing<[u8; 32]>> {
        if let Some(key) = self.key.borrow().clone() {
            return Some(key);
        }
        let vfs = self.vfs.borrow();
        let vfs = vfs.as_ref()?;
        let path = self.conn.borrow().as_ref()?.db_filename(c"main")?;
        vfs.key_for_database(&path)
    }

    pub fn remember_registration(&self, key: String, r: Registration) {
        let mut list = self.registrations.borrow_mut();
        list.retain(|(k, _)| *k != key);
        list.push((key, r));
    }

    /// Replaces the connection by `conn` (the same database file, opened again through
    /// `vfs` after a rekey): configures it as the old one was, registers every function
    /// and module again, moves every live statement over (with its bindings), then closes
    /// the old connection and unregisters the old VFS. On error the old connection stays.
    pub fn reopen(
        &self,
        mut conn: Connection,
        vfs: KeyedVfsHandle,
        key: Zeroizing<[u8; 32]>,
        settings: &[(String, String)],
        timeout: i32,
    ) -> JsResult<()> {
        configure_connection(&mut conn, timeout.max(0) as u32, Some(vfs.page_size()))?;
        if self.unsafe_mode.get() {
            conn.set_db_config_flag(ffi::SQLITE_DBCONFIG_DEFENSIVE, false)?;
        }
        for (name, value) in settings {
            conn.execute_batch(&format!("PRAGMA {name} = {value}"))?;
        }
        for (_, register) in self.registrations.borrow().iter() {
            register(&conn)?;
        }
        let statements: Vec<_> = {
            let mut list = self.statements.borrow_mut();
            list.retain(|w| w.strong_count() > 0);
            list.iter().filter_map(Weak::upgrade).collect()
        };
        for stmt in &statements {
            let mut stmt = stmt
                .try_borrow_mut()
                .or_else(|_| type_error(MSG_STMT_BUSY))?;
            stmt.move_to(&conn)?;
        }
        let old = self.conn.borrow_mut().replace(conn);
        if let Some(old) = old {
            // Its statements were finalized by move_to; a failure here leaves a handle
            // on the old, unlinked file, which Drop closes.
            drop(old.close());
        }
        *self.vfs_name.borrow_mut() = Some(vfs.name().to_owned());
        let old_vfs = self.vfs.borrow_mut().replace(vfs);
        drop(old_vfs);
        *self.key.borrow_mut() = Some(key);
        Ok(())
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
    /// needed) and returns the batch's text as one JS string — or, when some of its TEXT
    /// values travel alone (see `results.rs`), an array of the batch string and those.
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
        let (text, ascii) = batch.text();
        let text = js::text(self.env, text, ascii)?;
        let big = batch.big_text_columns();
        if big.is_empty() {
            return Ok(text);
        }
        let Some(stmt) = stmt else {
            return Err(Thrown::Error(
                "cipherlite: internal error (a batch lost its statement)".into(),
            ));
        };
        let mut values = Vec::with_capacity(big.len() + 1);
        values.push(text);
        for &column in big {
            let bytes = stmt.column_text(column);
            values.push(js::text(self.env, bytes, bytes.is_ascii())?);
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
        let len = needed
            .max(self.scratch.borrow().len * 2)
            .next_multiple_of(4096);
        self.replace_scratch(len)
    }

    /// After JS has read a batch: a scratch buffer grown past `SCRATCH_KEEP_BYTES` is
    /// replaced by one of the initial size, so one large read doesn't keep its memory
    /// for the connection's lifetime. Not while a query runs (JS then reads nothing).
    fn shrink_scratch(&self) -> JsResult<()> {
        if self.busy.get() || self.scratch.borrow().len <= SCRATCH_KEEP_BYTES {
            return Ok(());
        }
        self.replace_scratch(self.scratch_initial_len)
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

    fn scratch_value(&self) -> sys::napi_value {
        let mut v = ptr::null_mut();
        // SAFETY: live reference.
        unsafe { sys::napi_get_reference_value(self.env, self.scratch.borrow().reference, &mut v) };
        v
    }

    /// Finalizes every statement and closes the connection (idempotent).
    pub fn close(&self) -> JsResult<()> {
        let Some(conn) = self.conn.borrow_mut().take() else {
            return Ok(());
        };
        super::backup::abort_backups(&self.backups);
        for stmt in self.statements.borrow_mut().drain(..) {
            if let Some(stmt) = stmt.upgrade() {
                if let Ok(mut s) = stmt.try_borrow_mut() {
                    s.finalize();
                }
            }
        }
        self.iterators.set(0);
        *self.key.borrow_mut() = None;
        self.registrations.borrow_mut().clear();
        let closed = conn.close();
        if closed.is_ok() {
            // No file is open through the VFS any more: unregister it, wiping the key.
            if self.vfs.borrow_mut().take().is_some() {
                vfs::scrub_key_residue();
            }
            self.fd_vfs.borrow_mut().take();
        }
        closed.map_err(|(conn, err)| {
            // Should not happen (every statement is finalized); the handle is leaked
            // rather than closed under SQLite's feet, and the VFS stays registered.
            std::mem::forget(conn);
            std::mem::forget(self.vfs.borrow_mut().take());
            std::mem::forget(self.fd_vfs.borrow_mut().take());
            Thrown::Sqlite(err)
        })
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
                self.pending_exception.get(),
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
        self.db.set_busy(self.was);
    }
}

/// See [`DbShared::binding_guard`].
pub(crate) struct BindingGuard<'a> {
    db: &'a DbShared,
}

impl Drop for BindingGuard<'_> {
    fn drop(&mut self) {
        self.db.binding.set(self.db.binding.get().saturating_sub(1));
    }
}

#[napi]
pub struct Database {
    pub(crate) shared: Rc<DbShared>,
    /// Id in the thread's registry, for the raw hot paths (`fast.rs`).
    id: u32,
}

impl Drop for Database {
    fn drop(&mut self) {
        self.shared.instance.databases.remove(self.id);
    }
}

fn new_reference(env: sys::napi_env, v: sys::napi_value) -> JsResult<sys::napi_ref> {
    let mut r = ptr::null_mut();
    // SAFETY: on the JS thread; v is a value of this call.
    check(unsafe { sys::napi_create_reference(env, v, 1, &mut r) })?;
    Ok(r)
}

/// The options the JS layer has already validated.
#[napi(object)]
pub struct OpenOptions {
    pub filename: String,
    pub readonly: bool,
    pub file_must_exist: bool,
    pub timeout: u32,
    /// `'sqlite3mc'` (default) or `'sqlcipher'`: the page 1 a new encrypted file gets.
    pub cipher_layout: Option<String>,
    /// `new Database(fd, { journalFd })` (better-sqlite3 13.2): open from these
    /// descriptors instead of `filename` (`src/vfs/fd.rs`).
    pub database_fd: Option<i32>,
    pub journal_fd: Option<i32>,
    /// The page size of an encrypted database (SQLCipher's `cipher_page_size`); 4096 when
    /// not given.
    pub page_size: Option<u32>,
    /// PBKDF2 iterations of a passphrase's key derivation (SQLCipher's `kdf_iter`).
    pub kdf_iterations: Option<u32>,
}

#[napi]
impl Database {
    /// `new Database(options, sqliteErrorClass, scratchArrayBuffer, serializedBuffer | null)`.
    #[napi(constructor, catch_unwind)]
    pub fn new(
        env: Env,
        options: OpenOptions,
        sqlite_error_class: JsAny,
        scratch: JsAny,
        serialized: JsAny,
        key: JsAny,
        passphrase: JsAny,
    ) -> napi::Result<Self> {
        let raw_env = env.raw();
        let error_class = new_reference(raw_env, sqlite_error_class.0)
            .map_err(|e| js::throw(raw_env, ptr::null_mut(), e))?;
        let fail = |e: Thrown| js::throw(raw_env, error_class, e);
        let open = || -> JsResult<Rc<DbShared>> {
            let instance = Instance::of(raw_env)
                .ok_or_else(|| Thrown::Error("cipherlite: the addon was not initialised".into()))?;
            let (data, len) = arraybuffer_info(raw_env, scratch.0)?;
            if len < HEADER_BYTES || !(data as usize).is_multiple_of(8) {
                return type_error("invalid scratch buffer");
            }
            let flags = OpenFlags {
                readonly: options.readonly,
                must_exist: options.file_must_exist,
                uri: false,
            };
            let key = read_key(raw_env, key.0)?;
            let passphrase = read_passphrase(raw_env, passphrase.0)?;
            if key.is_some() && passphrase.is_some() {
                return type_error(
                    "The \"key\" and \"passphrase\" options cannot be used together",
                );
            }
            let page_size = options.page_size.map_or(vfs::PAGE_SIZE, |n| n as usize);
            let vfs_key = match (&key, &passphrase) {
                (Some(k), _) => Some(VfsKey::Raw(k)),
                (None, Some(p)) => Some(VfsKey::Passphrase {
                    passphrase: p,
                    iterations: options
                        .kdf_iterations
                        .unwrap_or(crate::codec::PASSPHRASE_KDF_ITER),
                }),
                (None, None) => None,
            };
            // Declared first, dropped last: after the connection that uses it.
            let mut fd_vfs = None;
            let (opened, keyed_vfs) = match &vfs_key {
                _ if options.database_fd.is_some() => {
                    let handle = open_fd_vfs(&options, vfs_key.is_some())?;
                    let conn = Connection::open(handle.main_name(), flags, Some(handle.name()))?;
                    fd_vfs = Some(handle);
                    (conn, None)
                }
                Some(vfs_key) => {
                    let layout = match options.cipher_layout.as_deref() {
                        Some("sqlcipher") => NewFileLayout::SqlCipher,
                        _ => NewFileLayout::Sqlite3mc,
                    };
                    open_encrypted(&options.filename, flags, vfs_key, layout, page_size)?
                }
                None => {
                    refuse_foreign_hot_database(&options.filename)?;
                    (Connection::open(&options.filename, flags, None)?, None)
                }
            };
            // Declared in this order so that on an error below the connection is closed
            // before its VFS is unregistered (locals drop in reverse order).
            let keyed_vfs = keyed_vfs;
            let mut conn = opened;
            configure_connection(
                &mut conn,
                options.timeout,
                keyed_vfs.as_ref().map(|_| page_size),
            )?;
            // SAFETY: serialized is a value of this call.
            if let Some(bytes) = unsafe { js::array_buffer_view(raw_env, serialized.0) } {
                deserialize(&conn, bytes, options.readonly)?;
            }
            // References last: nothing can fail after them (no leak on a failed open).
            let object_prototype = object_prototype(raw_env)?;
            let scratch_ref = match new_reference(raw_env, scratch.0) {
                Ok(r) => r,
                Err(e) => {
                    // SAFETY: created just above, deleted once.
                    unsafe { sys::napi_delete_reference(raw_env, object_prototype) };
                    return Err(e);
                }
            };
            Ok(Rc::new(DbShared {
                env: raw_env,
                instance,
                conn: RefCell::new(Some(conn)),
                busy: Cell::new(false),
                binding: Cell::new(0),
                iterators: Cell::new(0),
                safe_integers: Cell::new(false),
                unsafe_mode: Cell::new(false),
                has_js_callbacks: Cell::new(false),
                statements: RefCell::new(Vec::new()),
                backups: RefCell::new(Vec::new()),
                scratch: RefCell::new(Scratch {
                    reference: scratch_ref,
                    data,
                    len,
                }),
                scratch_initial_len: len,
                sqlite_error_class: error_class,
                object_prototype,
                verbose: Cell::new(ptr::null_mut()),
                pending_exception: Cell::new(ptr::null_mut()),
                vfs_name: RefCell::new(keyed_vfs.as_ref().map(|v| v.name().to_owned())),
                vfs: RefCell::new(keyed_vfs),
                fd_vfs: RefCell::new(fd_vfs),
                key: RefCell::new(key),
                registrations: RefCell::new(Vec::new()),
            }))
        };
        let opened = open();
        // The key passed through this call's callees (the JS bytes' copy, the VFS box, the
        // codec's key schedule): wipe what they left on the stack.
        vfs::scrub_key_residue();
        match opened {
            Ok(shared) => {
                shared.instance.track_open_database(&shared);
                let id = shared.instance.databases.register(&shared);
                Ok(Database { shared, id })
            }
            Err(e) => {
                let err = fail(e);
                // SAFETY: the reference was created above and is not used again.
                unsafe { sys::napi_delete_reference(raw_env, error_class) };
                Err(err)
            }
        }
    }

    #[napi(catch_unwind)]
    pub fn prepare(&self, sql: String, pragma: bool) -> napi::Result<NativeStatement> {
        let db = &self.shared;
        let run = || -> JsResult<NativeStatement> {
            db.require_open()?;
            db.require_not_busy()?;
            if pragma {
                db.require_no_iterators_unless_unsafe()?;
            }
            // Preparing can run user code (a virtual table's factory on connect): busy.
            let busy = db.busy_guard();
            let prepared = db.with_conn(|c| Ok(c.prepare(&sql, !pragma)?));
            drop(busy);
            let (stmt, tail) = prepared?;
            let Some(mut stmt) = stmt else {
                return js::range_error("The supplied SQL string contains no statements");
            };
            if !sqlite::is_blank_sql_tail(&sql.as_bytes()[tail..]) {
                stmt.finalize();
                return js::range_error("The supplied SQL string contains more than one statement");
            }
            Ok(NativeStatement::new(db.clone(), stmt, pragma))
        };
        run().map_err(|e| db.throw(e))
    }

    /// Returns `undefined`, or `null` when the environment stopped (a worker terminated
    /// while a user function ran): then nothing can be thrown, and the JS layer throws.
    #[napi(catch_unwind)]
    pub fn exec(&self, sql: String) -> napi::Result<JsAny> {
        let db = &self.shared;
        let run = || -> JsResult<()> {
            db.require_open()?;
            db.require_not_busy()?;
            db.require_no_iterators_unless_unsafe()?;
            db.clear_stale_exception();
            let busy = db.busy_guard();
            let result = db.with_conn(|c| {
                c.exec_each_then(
                    &sql,
                    |stmt| db.log(stmt).map_err(|_| sqlite::ExecAbort::Caller),
                    || db.after_statement(),
                )
                .map_err(|e| match e {
                    sqlite::ExecAbort::Sqlite(e) => Thrown::Sqlite(e),
                    sqlite::ExecAbort::Caller => Thrown::Pending,
                })
            });
            drop(busy);
            db.after_statement();
            result
        };
        match run() {
            // SAFETY: on the JS thread.
            Ok(()) => Ok(JsAny(unsafe { js::undefined(db.env) })),
            // SAFETY: on the JS thread.
            Err(_) if db.instance.is_stopping() => Ok(JsAny(unsafe { js::null(db.env) })),
            Err(e) => Err(db.throw(e)),
        }
    }

    #[napi(catch_unwind)]
    pub fn close(&self) -> napi::Result<()> {
        let db = &self.shared;
        let run = || -> JsResult<()> {
            if !db.is_open() {
                return Ok(());
            }
            db.require_closable()?;
            db.close()
        };
        run().map_err(|e| db.throw(e))
    }

    /// This database's id for the raw hot paths (`fast.inTransaction(id)`).
    #[napi(getter, catch_unwind)]
    pub fn id(&self) -> u32 {
        self.id
    }

    #[napi(getter, catch_unwind)]
    pub fn open(&self) -> bool {
        self.shared.is_open()
    }

    #[napi(catch_unwind)]
    pub fn default_safe_integers(&self, on: bool) {
        self.shared.safe_integers.set(on);
    }

    #[napi(catch_unwind)]
    pub fn unsafe_mode(&self, on: bool) -> napi::Result<()> {
        let db = &self.shared;
        db.unsafe_mode.set(on);
        if let Some(c) = db.conn.borrow().as_ref() {
            c.set_db_config_flag(ffi::SQLITE_DBCONFIG_DEFENSIVE, !on)
                .map_err(|e| db.throw(e.into()))?;
        }
        Ok(())
    }

    /// Sets (or clears, with null) the `verbose` logger.
    #[napi(catch_unwind)]
    pub fn set_verbose(&self, logger: JsAny) -> napi::Result<()> {
        let db = &self.shared;
        // SAFETY: logger is a value of this call.
        let is_fn = unsafe { js::type_of(db.env, logger.0) } == sys::ValueType::napi_function;
        let old = db.verbose.replace(ptr::null_mut());
        if !old.is_null() {
            // SAFETY: a live reference of this env.
            unsafe { sys::napi_delete_reference(db.env, old) };
        }
        if is_fn {
            db.verbose
                .set(new_reference(db.env, logger.0).map_err(|e| db.throw(e))?);
            // The logger runs while SQLite works: iterators must not read ahead.
            db.has_js_callbacks.set(true);
        }
        Ok(())
    }

    /// The current scratch buffer (after a batch reported `FLAG_SCRATCH_REPLACED`).
    #[napi(catch_unwind)]
    pub fn scratch(&self) -> JsAny {
        JsAny(self.shared.scratch_value())
    }

    /// Shrinks a scratch buffer that a large batch grew (see `DbShared::shrink_scratch`)
    /// and returns the current one.
    #[napi(catch_unwind)]
    pub fn shrink_scratch(&self) -> napi::Result<JsAny> {
        let db = &self.shared;
        db.shrink_scratch().map_err(|e| db.throw(e))?;
        Ok(JsAny(db.scratch_value()))
    }
}

const MSG_BAD_KEY: &str = "Expected the \"key\" option to be a 32-byte Buffer or Uint8Array";

/// The `key` argument: `null`/`undefined` is no key; anything else must be a real
/// Uint8Array of exactly 32 bytes, or a TypeError — a key given but unreadable is never
/// taken as "no key" (that would write the database in plaintext).
fn read_key(env: sys::napi_env, value: sys::napi_value) -> JsResult<Option<Zeroizing<[u8; 32]>>> {
    // SAFETY: value is a value of this call.
    let kind = unsafe { js::type_of(env, value) };
    if kind == sys::ValueType::napi_null || kind == sys::ValueType::napi_undefined {
        return Ok(None);
    }
    // SAFETY: value is a value of this call; the info calls only read.
    let bytes = unsafe { js::uint8_array_bytes(env, value) };
    match bytes {
        Some(bytes) if bytes.len() == 32 => {
            let mut key = Zeroizing::new([0u8; 32]);
            key.copy_from_slice(bytes);
            Ok(Some(key))
        }
        _ => type_error(MSG_BAD_KEY),
    }
}

/// A required key argument (rekey, backup under a key): a real 32-byte Uint8Array, or a
/// TypeError naming `what`.
pub(crate) fn required_key(
    env: sys::napi_env,
    value: sys::napi_value,
    what: &'static str,
) -> JsResult<Zeroizing<[u8; 32]>> {
    match read_key(env, value) {
        Ok(Some(key)) => Ok(key),
        _ => type_error(what),
    }
}

/// Opens `filename` through a new keyed VFS. A new (empty) file gets SQLCipher's 80
/// reserved bytes per page, and the page size asked for, before SQLite writes anything.
/// A file the key doesn't open with this page size but does with another fails with a
/// message naming the `pageSize` option.
pub(crate) fn open_encrypted(
    filename: &str,
    flags: OpenFlags,
    key: &VfsKey<'_>,
    layout: NewFileLayout,
    page_size: usize,
) -> JsResult<(Connection, Option<KeyedVfsHandle>)> {
    let vfs = KeyedVfsHandle::register_with(key, layout, page_size, None)
        .map_err(|rc| Thrown::Sqlite(sqlite::Error::from_code(rc)))?;
    let conn = match Connection::open(filename, flags, Some(vfs.name())) {
        Ok(conn) => conn,
        Err(e) if e.code == ffi::SQLITE_NOTADB => {
            return Err(match vfs.page_size_that_opens(filename) {
                Some(other) if other != page_size => Thrown::Sqlite(sqlite::Error::new(
                    ffi::SQLITE_NOTADB,
                    format!("file is not a database with {page_size}-byte pages: the key opens it with {other}-byte pages (pass the \"pageSize\" option: {other})"),
                )),
                _ => Thrown::Sqlite(e),
            });
        }
        Err(e) => return Err(Thrown::Sqlite(e)),
    };
    if !flags.readonly {
        // Takes effect on a database without a valid header (new, or whose first
        // transaction crashed); an existing database keeps its own (SQLite refuses the
        // change, which is fine).
        let mut reserve = vfs::RESERVE_BYTES;
        let _ = conn.file_control_int(c"main", ffi::SQLITE_FCNTL_RESERVE_BYTES, &mut reserve);
        if page_size != vfs::PAGE_SIZE {
            // Before the pragma guard is installed; a no-op on an existing database.
            conn.exec_each(&format!("PRAGMA page_size = {page_size}"), |_| Ok(()))
                .map_err(|e| match e {
                    sqlite::ExecAbort::Sqlite(e) => Thrown::Sqlite(e),
                    sqlite::ExecAbort::Caller => Thrown::Pending,
                })?;
        }
    }
    Ok((conn, Some(vfs)))
}

/// The `passphrase` argument: null for none, else the bytes of a real Uint8Array (JS
/// passes a string as a buffer of its own, which it wipes afterwards), copied into a wiped
/// allocation.
fn read_passphrase(
    env: sys::napi_env,
    value: sys::napi_value,
) -> JsResult<Option<Zeroizing<Vec<u8>>>> {
    // SAFETY: value is a value of this call.
    let kind = unsafe { js::type_of(env, value) };
    if kind == sys::ValueType::napi_null || kind == sys::ValueType::napi_undefined {
        return Ok(None);
    }
    // SAFETY: value is a value of this call; the info calls only read.
    match unsafe { js::uint8_array_bytes(env, value) } {
        Some(bytes) if !bytes.is_empty() => {
            let mut copy = Zeroizing::new(Vec::with_capacity(bytes.len()));
            copy.extend_from_slice(bytes);
            Ok(Some(copy))
        }
        _ => type_error(
            "Expected the \"passphrase\" option to be a non-empty string, Buffer or Uint8Array",
        ),
    }
}

/// The checks and the VFS of `new Database(fd, { journalFd })`. The descriptors' problems
/// are TypeErrors with better-sqlite3 13.2's messages; a key is refused (the keyed VFS
/// finds journals and WALs by path, which such a database lacks).
fn open_fd_vfs(options: &OpenOptions, keyed: bool) -> JsResult<vfs::fd::FdVfsHandle> {
    if keyed {
        return type_error(
            "The \"key\" option cannot be used when opening a database from a file descriptor",
        );
    }
    let (Some(fd), Some(journal_fd)) = (options.database_fd, options.journal_fd) else {
        return type_error("Expected file descriptors to be non-negative 32-bit integers");
    };
    if fd < 0 || journal_fd < 0 {
        return type_error("Expected file descriptors to be non-negative 32-bit integers");
    }
    vfs::fd::validate(fd, journal_fd, options.readonly).map_err(|e| Thrown::Type(e.0))?;
    // As for a path (refuse_foreign_hot_database): no recovery of a hot journal into a
    // file that isn't a plaintext SQLite database.
    if vfs::fd::file_size(journal_fd).is_some_and(|n| n > 0)
        && vfs::fd::header_is_sqlite(fd) == Some(false)
    {
        return Err(Thrown::Sqlite(sqlite::Error::from_code(ffi::SQLITE_NOTADB)));
    }
    vfs::fd::FdVfsHandle::register(fd, journal_fd, options.readonly)
        .map_err(|rc| Thrown::Sqlite(sqlite::Error::from_code(rc)))
}

/// Opening an encrypted database without its key is an error at the first query; but
/// when it has a hot journal or WAL, SQLite would first try to recover it — changing the
/// files with the wrong (no) key. Refuse before SQLite touches anything.
fn refuse_foreign_hot_database(filename: &str) -> JsResult<()> {
    let has_leftovers = ["-journal", "-wal"]
        .iter()
        .any(|s| std::fs::metadata(format!("{filename}{s}")).is_ok_and(|m| m.len() > 0));
    if !has_leftovers {
        return Ok(());
    }
    let mut head = [0u8; 16];
    let readable = std::fs::File::open(filename)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head));
    if readable.is_ok() && head != crate::codec::SQLITE_HEADER_MAGIC {
        return Err(Thrown::Sqlite(sqlite::Error::from_code(ffi::SQLITE_NOTADB)));
    }
    Ok(())
}

/// The connection set-up better-sqlite3 does on open (`docs/better-sqlite3-behaviour.md`
/// §2.16), and ours: key pragmas (and, encrypted, other page sizes) fail instead of being
/// ignored.
pub(crate) fn configure_connection(
    conn: &mut Connection,
    timeout: u32,
    encrypted_page_size: Option<usize>,
) -> JsResult<()> {
    match encrypted_page_size {
        Some(page_size) => {
            conn.deny_pragmas(Box::new(move |name: &str, argument: Option<&str>| {
                vfs::refused_pragma_encrypted(name, argument, page_size)
            }))?
        }
        None => conn.deny_pragmas(Box::new(vfs::refused_pragma_plain))?,
    }
    conn.busy_timeout(timeout.min(i32::MAX as u32) as i32)?;
    conn.set_limit(ffi::SQLITE_LIMIT_LENGTH, MAX_STRING_LENGTH);
    conn.set_limit(ffi::SQLITE_LIMIT_SQL_LENGTH, MAX_STRING_LENGTH);
    conn.set_db_config_flag(ffi::SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, true)?;
    conn.set_db_config_flag(ffi::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    crate::storage::register_sql_functions(conn)?;
    Ok(())
}

fn deserialize(conn: &Connection, bytes: &[u8], readonly: bool) -> JsResult<()> {
    conn.deserialize_main(bytes, readonly).map_err(|e| {
        if e.code == ffi::SQLITE_ERROR {
            Thrown::Sqlite(sqlite::Error::new(e.code, "unable to deserialize database"))
        } else {
            Thrown::Sqlite(e)
        }
    })
}

fn arraybuffer_info(env: sys::napi_env, v: sys::napi_value) -> JsResult<(*mut u8, usize)> {
    let mut data = ptr::null_mut();
    let mut len = 0usize;
    // SAFETY: v is a value of this call; fails (pending error) if it isn't an ArrayBuffer.
    check(unsafe { sys::napi_get_arraybuffer_info(env, v, &mut data, &mut len) })?;
    Ok((data.cast(), len))
}

fn object_prototype(env: sys::napi_env) -> JsResult<sys::napi_ref> {
    // SAFETY: on the JS thread; {} is created in the current realm.
    unsafe {
        let mut obj = ptr::null_mut();
        check(sys::napi_create_object(env, &mut obj))?;
        let mut proto = ptr::null_mut();
        check(sys::napi_get_prototype(env, obj, &mut proto))?;
        new_reference(env, proto)
    }
}
