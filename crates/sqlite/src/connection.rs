//! `Connection`: owns one `sqlite3*` and closes it.

use super::{error::Error, ffi, statement::Statement, Result};
use std::{
    ffi::{c_int, CStr, CString},
    ptr::{self, NonNull},
};

/// How to open a database file.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenFlags {
    pub readonly: bool,
    /// Fail with `SQLITE_CANTOPEN` instead of creating a missing file.
    pub must_exist: bool,
    /// Interpret `file:` names as URIs.
    pub uri: bool,
}

impl OpenFlags {
    fn bits(self) -> c_int {
        let mut bits = if self.readonly {
            ffi::SQLITE_OPEN_READONLY
        } else if self.must_exist {
            ffi::SQLITE_OPEN_READWRITE
        } else {
            ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE
        };
        if self.uri {
            bits |= ffi::SQLITE_OPEN_URI;
        }
        // Each connection is used by one thread at a time (the JS thread that owns it).
        bits | ffi::SQLITE_OPEN_NOMUTEX
    }
}

/// An open database connection. Dropping it closes the connection; statements must be
/// finalized first (the binding layer finalizes every statement it handed out before
/// calling [`Connection::close`]).
pub struct Connection {
    handle: NonNull<ffi::sqlite3>,
    /// The pragma-denying authorizer's state, if one is installed (see `deny_pragmas`).
    pragma_denial: Option<Box<PragmaDenial>>,
    /// Run just before the connection closes: where statement caches kept by this
    /// connection's callbacks finalize their statements (see [`Connection::on_close`]).
    close_hooks: std::cell::RefCell<Vec<Box<dyn FnOnce()>>>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("handle", &self.handle)
            .finish()
    }
}

/// Decides which `PRAGMA name [= argument]` a connection refuses, and with what message.
pub type PragmaRefusal = Box<dyn Fn(&str, Option<&str>) -> Option<&'static str>>;

/// Pragmas an authorizer refuses, and the message their error carries instead of SQLite's
/// generic "not authorized".
struct PragmaDenial {
    /// The message refusing `PRAGMA name [= argument]`, or `None` to allow it.
    refusal: PragmaRefusal,
    denied: std::cell::Cell<Option<&'static str>>,
    /// An ATTACH was prepared since `take_attach_seen` last looked.
    attach_seen: std::cell::Cell<bool>,
    /// An ATTACH was seen by the prepare running now (see `Connection::prepare`).
    attach_in_prepare: std::cell::Cell<bool>,
}

/// The error for `ATTACH … KEY …`, which SQLite parses but (without a codec) ignores.
pub const ATTACH_KEY_MESSAGE: &str = "ATTACH ... KEY is not supported: an attached database is opened with the connection's own key (or none); give the key only as new Database(path, { key })";

impl Connection {
    /// Opens `filename` through the VFS named `vfs` (the default VFS when `None`).
    pub fn open(filename: &str, flags: OpenFlags, vfs: Option<&CStr>) -> Result<Connection> {
        let c_name = CString::new(filename)
            .map_err(|_| Error::new(ffi::SQLITE_CANTOPEN, "filename contains a NUL character"))?;
        let mut db: *mut ffi::sqlite3 = ptr::null_mut();
        // SAFETY: c_name is NUL-terminated; db receives a handle (possibly non-null even on
        // failure, in which case it must still be closed).
        let rc = unsafe {
            ffi::sqlite3_open_v2(
                c_name.as_ptr(),
                &mut db,
                flags.bits(),
                vfs.map_or(ptr::null(), CStr::as_ptr),
            )
        };
        if rc != ffi::SQLITE_OK {
            // SAFETY: db is either null or a handle SQLite allocated for this attempt.
            let err = unsafe { Error::from_handle(db, rc) };
            // SAFETY: closing the failed handle (null is a no-op).
            unsafe { ffi::sqlite3_close(db) };
            return Err(err);
        }
        let handle = NonNull::new(db).ok_or_else(|| Error::from_code(ffi::SQLITE_NOMEM))?;
        let conn = Connection {
            handle,
            pragma_denial: None,
            close_hooks: std::cell::RefCell::new(Vec::new()),
        };
        // SAFETY: valid handle.
        unsafe { ffi::sqlite3_extended_result_codes(conn.raw(), 1) };
        Ok(conn)
    }

    /// The raw handle, for the layers that must call SQLite directly (VFS file control,
    /// function registration).
    pub fn raw(&self) -> *mut ffi::sqlite3 {
        self.handle.as_ptr()
    }

    /// The connection's last error as an [`Error`].
    pub fn last_error(&self, fallback_code: i32) -> Error {
        // SAFETY: valid handle.
        let err = unsafe { Error::from_handle(self.raw(), fallback_code) };
        match &self.pragma_denial {
            Some(d) if err.code == ffi::SQLITE_AUTH => match d.denied.replace(None) {
                Some(message) => Error::new(err.code, message),
                None => err,
            },
            _ => err,
        }
    }

    /// Makes every `PRAGMA name [= argument]` for which `refusal` gives a message fail at
    /// prepare time with that message (code `SQLITE_AUTH`), instead of being run or
    /// silently ignored.
    pub fn deny_pragmas(&mut self, refusal: PragmaRefusal) -> Result<()> {
        unsafe extern "C" fn authorize(
            data: *mut std::ffi::c_void,
            action: c_int,
            arg1: *const std::ffi::c_char,
            arg2: *const std::ffi::c_char,
            _db: *const std::ffi::c_char,
            _trigger: *const std::ffi::c_char,
        ) -> c_int {
            std::panic::catch_unwind(|| {
                // SAFETY: data is the PragmaDenial box owned by the connection.
                let state = unsafe { &*data.cast::<PragmaDenial>() };
                if action == ffi::SQLITE_ATTACH {
                    state.attach_seen.set(true);
                    state.attach_in_prepare.set(true);
                }
                if action != ffi::SQLITE_PRAGMA || arg1.is_null() {
                    return ffi::SQLITE_OK;
                }
                // SAFETY: arg1 is the pragma name and arg2 its argument (or null), both
                // NUL-terminated.
                let (name, argument) = unsafe {
                    (
                        CStr::from_ptr(arg1).to_string_lossy(),
                        (!arg2.is_null()).then(|| CStr::from_ptr(arg2).to_string_lossy()),
                    )
                };
                match (state.refusal)(&name, argument.as_deref()) {
                    Some(message) => {
                        state.denied.set(Some(message));
                        ffi::SQLITE_DENY
                    }
                    None => ffi::SQLITE_OK,
                }
            })
            .unwrap_or(ffi::SQLITE_DENY)
        }
        let denial = Box::new(PragmaDenial {
            refusal,
            denied: std::cell::Cell::new(None),
            attach_seen: std::cell::Cell::new(false),
            attach_in_prepare: std::cell::Cell::new(false),
        });
        let data = (&*denial as *const PragmaDenial).cast_mut().cast();
        // SAFETY: valid handle; the box outlives the registration (it lives in self and
        // the authorizer is replaced/removed only by dropping the connection).
        let rc = unsafe { ffi::sqlite3_set_authorizer(self.raw(), Some(authorize), data) };
        self.pragma_denial = Some(denial);
        self.check(rc)
    }

    /// True (once) if an ATTACH was prepared since the last call; needs `deny_pragmas`'
    /// authorizer installed.
    pub fn take_attach_seen(&self) -> bool {
        self.pragma_denial
            .as_ref()
            .is_some_and(|d| d.attach_seen.replace(false))
    }

    /// The schema names of the attached databases (not `main`/`temp`) with their file
    /// names (empty for in-memory ones).
    pub fn attached_databases(&self) -> Vec<(CString, String)> {
        let mut out = Vec::new();
        for i in 2.. {
            // SAFETY: valid handle; names are owned by SQLite until the schema changes,
            // and are copied before any other call.
            unsafe {
                let name = ffi::sqlite3_db_name(self.raw(), i);
                if name.is_null() {
                    break;
                }
                let file = ffi::sqlite3_db_filename(self.raw(), name);
                let file = if file.is_null() {
                    String::new()
                } else {
                    CStr::from_ptr(file).to_string_lossy().into_owned()
                };
                out.push((CStr::from_ptr(name).to_owned(), file));
            }
        }
        out
    }

    /// `sqlite3_file_control` with an `int` argument on database `schema`.
    pub fn file_control_int(&self, schema: &CStr, op: c_int, value: &mut c_int) -> Result<()> {
        // SAFETY: valid handle; the int outlives the call.
        let rc = unsafe {
            ffi::sqlite3_file_control(
                self.raw(),
                schema.as_ptr(),
                op,
                (value as *mut c_int).cast(),
            )
        };
        self.check(rc)
    }

    /// The file name of database `schema` (`None` for an unknown schema; empty for an
    /// in-memory or temporary database).
    pub fn db_filename(&self, schema: &CStr) -> Option<String> {
        // SAFETY: valid handle; the name is owned by SQLite and copied at once.
        unsafe {
            let p = ffi::sqlite3_db_filename(self.raw(), schema.as_ptr());
            if p.is_null() {
                None
            } else {
                Some(CStr::from_ptr(p).to_string_lossy().into_owned())
            }
        }
    }

    /// True if database `schema` is open read-only (false for an unknown schema).
    pub fn is_readonly(&self, schema: &CStr) -> bool {
        // SAFETY: valid handle, NUL-terminated name.
        unsafe { ffi::sqlite3_db_readonly(self.raw(), schema.as_ptr()) == 1 }
    }

    /// Runs `f` with `handler` installed as SQLite's progress handler, called about every
    /// `every` virtual-machine instructions; returning `false` interrupts the statement
    /// (`SQLITE_INTERRUPT`). The previous handler (there is none in this project) is
    /// removed afterwards.
    pub fn with_progress_handler<T>(
        &self,
        every: c_int,
        handler: &mut dyn FnMut() -> bool,
        f: impl FnOnce() -> T,
    ) -> T {
        unsafe extern "C" fn call(data: *mut std::ffi::c_void) -> c_int {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                // SAFETY: data is the `&mut &mut dyn FnMut` below, alive while installed.
                let handler = unsafe { &mut *data.cast::<&mut dyn FnMut() -> bool>() };
                c_int::from(!handler())
            }))
            .unwrap_or(1)
        }
        let mut handler: &mut dyn FnMut() -> bool = handler;
        let data: *mut &mut dyn FnMut() -> bool = &mut handler;
        // SAFETY: valid handle; `data` outlives the installation (removed below, before
        // this frame returns).
        unsafe { ffi::sqlite3_progress_handler(self.raw(), every, Some(call), data.cast()) };
        struct Remove<'a>(&'a Connection);
        impl Drop for Remove<'_> {
            fn drop(&mut self) {
                // SAFETY: valid handle; removing the handler.
                unsafe { ffi::sqlite3_progress_handler(self.0.raw(), 0, None, ptr::null_mut()) };
            }
        }
        let _remove = Remove(self);
        f()
    }

    /// Runs every statement of `sql` (no logging, no callbacks).
    pub fn execute_batch(&self, sql: &str) -> Result<()> {
        self.exec_each(sql, |_| Ok(())).map_err(|e| match e {
            ExecAbort::Sqlite(e) => e,
            ExecAbort::Caller => Error::from_code(ffi::SQLITE_ABORT),
        })
    }

    /// The first column of the first row of `sql` as text (`None`: no row, or NULL).
    pub fn query_text(&self, sql: &str) -> Result<Option<String>> {
        let (stmt, _) = self.prepare(sql, false)?;
        let Some(mut stmt) = stmt else {
            return Ok(None);
        };
        if !stmt.step()? {
            return Ok(None);
        }
        if stmt.column_type(0) == super::ColumnType::Null {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(stmt.column_text(0)).into_owned();
        while stmt.step()? {}
        Ok(Some(text))
    }

    fn check(&self, rc: c_int) -> Result<()> {
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(self.last_error(rc))
        }
    }

    /// Moves `stmt` (prepared on another connection of the same database) to this one:
    /// prepares the same SQL here, carries the bound values over and finalizes the old
    /// handle. Used when a connection is reopened (after a rekey). A finalized statement
    /// stays finalized. On error the old handle is kept, with its values.
    pub fn adopt(&self, stmt: &mut Statement) -> Result<()> {
        if stmt.is_finalized() {
            return Ok(());
        }
        let (new, _) = self.prepare(&stmt.sql(), true)?;
        let Some(mut new) = new else {
            return Err(Error::new(
                ffi::SQLITE_ERROR,
                "statement could not be re-prepared",
            ));
        };
        stmt.copy_bindings_to(&mut new)?;
        stmt.take_handle_of(new);
        Ok(())
    }

    /// Prepares the first statement of `sql`; returns it (`None` when `sql` holds only
    /// whitespace/comments) and the byte offset where the unused tail starts.
    pub fn prepare(&self, sql: &str, persistent: bool) -> Result<(Option<Statement>, usize)> {
        self.attach_watch_begin();
        // SAFETY: this connection's handle is open for as long as it lives.
        let prepared = unsafe {
            Statement::prepare_raw(self.raw(), sql, persistent, |rc| self.last_error(rc))
        }?;
        self.refuse_attach_key(prepared.0.as_ref())?;
        Ok(prepared)
    }

    /// Before a prepare: forget any ATTACH the authorizer saw before.
    fn attach_watch_begin(&self) {
        if let Some(d) = &self.pragma_denial {
            d.attach_in_prepare.set(false);
        }
    }

    /// After a prepare: `ATTACH … KEY …` is an error (SQLite would ignore the key), on
    /// every path that prepares SQL (`prepare`, `exec`).
    fn refuse_attach_key(&self, prepared: Option<&Statement>) -> Result<()> {
        let attached = self
            .pragma_denial
            .as_ref()
            .is_some_and(|d| d.attach_in_prepare.replace(false));
        if attached && prepared.is_some_and(Statement::attach_has_key) {
            return Err(Error::new(ffi::SQLITE_ERROR, ATTACH_KEY_MESSAGE));
        }
        Ok(())
    }

    /// Runs every statement of `sql` in turn, calling `before_each` with each prepared
    /// statement before it runs (better-sqlite3 logs each one to `verbose` there).
    /// Stops at the first error.
    pub fn exec_each(
        &self,
        sql: &str,
        before_each: impl FnMut(&Statement) -> std::result::Result<(), ExecAbort>,
    ) -> std::result::Result<(), ExecAbort> {
        self.exec_each_then(sql, before_each, || {})
    }

    /// [`Connection::exec_each`], also calling `after_each` once each statement has run.
    pub fn exec_each_then(
        &self,
        sql: &str,
        mut before_each: impl FnMut(&Statement) -> std::result::Result<(), ExecAbort>,
        mut after_each: impl FnMut(),
    ) -> std::result::Result<(), ExecAbort> {
        // One NUL-terminated copy of the script, parsed in place: handing SQLite each
        // remainder with a length but no terminator makes it copy the remainder on every
        // statement, which is quadratic in the script's length.
        let mut script = Vec::with_capacity(sql.len() + 1);
        script.extend_from_slice(sql.as_bytes());
        script.push(0);
        let mut rest: &[u8] = &script;
        loop {
            // Like better-sqlite3, skip the whitespace and `;` between statements, so each
            // statement's text (as logged) starts at its first token.
            let skip = rest
                .iter()
                .take_while(|&&c| c == b';' || c == b' ' || (b'\t'..=b'\r').contains(&c))
                .count();
            rest = &rest[skip..];
            self.attach_watch_begin();
            let (stmt, tail) =
                // SAFETY: this connection's handle is open for as long as it lives.
                unsafe {
                    Statement::prepare_terminated(self.raw(), rest, false, |rc| self.last_error(rc))
                }
                .map_err(ExecAbort::Sqlite)?;
            self.refuse_attach_key(stmt.as_ref())
                .map_err(ExecAbort::Sqlite)?;
            let Some(mut stmt) = stmt else { return Ok(()) };
            before_each(&stmt)?;
            while stmt.step().map_err(ExecAbort::Sqlite)? {}
            stmt.finalize();
            after_each();
            rest = &rest[tail..];
        }
    }

    pub fn changes(&self) -> i64 {
        // SAFETY: valid handle.
        unsafe { ffi::sqlite3_changes64(self.raw()) }
    }

    pub fn total_changes(&self) -> i64 {
        // SAFETY: valid handle.
        unsafe { ffi::sqlite3_total_changes64(self.raw()) }
    }

    pub fn last_insert_rowid(&self) -> i64 {
        // SAFETY: valid handle.
        unsafe { ffi::sqlite3_last_insert_rowid(self.raw()) }
    }

    /// True while no transaction is open.
    pub fn is_autocommit(&self) -> bool {
        // SAFETY: valid handle.
        unsafe { ffi::sqlite3_get_autocommit(self.raw()) != 0 }
    }

    pub fn busy_timeout(&self, ms: i32) -> Result<()> {
        // SAFETY: valid handle.
        self.check(unsafe { ffi::sqlite3_busy_timeout(self.raw(), ms) })
    }

    pub fn set_limit(&self, id: c_int, value: c_int) {
        // SAFETY: valid handle; out-of-range ids are ignored by SQLite.
        unsafe { ffi::sqlite3_limit(self.raw(), id, value) };
    }

    /// `sqlite3_db_config` for the boolean options (`SQLITE_DBCONFIG_DEFENSIVE`, …).
    pub fn set_db_config_flag(&self, op: c_int, on: bool) -> Result<()> {
        let mut out: c_int = 0;
        // SAFETY: valid handle; boolean db_config ops take (int, int*).
        let rc = unsafe {
            ffi::sqlite3_db_config(self.raw(), op, c_int::from(on), &mut out as *mut c_int)
        };
        self.check(rc)
    }

    /// Interrupts any running statement (used when a JS callback threw).
    pub fn interrupt(&self) {
        // SAFETY: valid handle.
        unsafe { ffi::sqlite3_interrupt(self.raw()) };
    }

    /// Replaces the `main` database with an in-memory copy of a serialized database
    /// (`sqlite3_deserialize`, resizeable; read-only when asked).
    pub fn deserialize_main(&self, bytes: &[u8], readonly: bool) -> Result<()> {
        let len = bytes.len();
        // SAFETY: we hand SQLite a buffer it allocated (sqlite3_malloc64) and owns from
        // then on (FREEONCLOSE), filled with a copy of `bytes`.
        unsafe {
            let buf = ffi::sqlite3_malloc64(len.max(1) as u64).cast::<u8>();
            if buf.is_null() {
                return Err(Error::from_code(ffi::SQLITE_NOMEM));
            }
            ptr::copy_nonoverlapping(bytes.as_ptr(), buf, len);
            let mut flags =
                ffi::SQLITE_DESERIALIZE_FREEONCLOSE | ffi::SQLITE_DESERIALIZE_RESIZEABLE;
            if readonly {
                flags |= ffi::SQLITE_DESERIALIZE_READONLY;
            }
            let rc = ffi::sqlite3_deserialize(
                self.raw(),
                c"main".as_ptr(),
                buf,
                len as i64,
                len as i64,
                flags,
            );
            if rc != ffi::SQLITE_OK {
                return Err(Error::from_code(rc));
            }
        }
        Ok(())
    }

    /// A copy of database `schema` (`main`, or an attached name) as bytes
    /// (`sqlite3_serialize`). `None` for an unknown schema name.
    pub fn serialize(&self, schema: &str) -> Result<Option<Vec<u8>>> {
        let name = CString::new(schema)
            .map_err(|_| Error::new(ffi::SQLITE_ERROR, "invalid database name"))?;
        let mut size: ffi::sqlite3_int64 = -1;
        // SAFETY: valid handle; the result is sqlite3_malloc'd (freed below) or null.
        unsafe {
            let data = ffi::sqlite3_serialize(self.raw(), name.as_ptr(), &mut size, 0);
            if data.is_null() {
                return if size > 0 {
                    Err(Error::from_code(ffi::SQLITE_NOMEM))
                } else {
                    Ok(None)
                };
            }
            let bytes = std::slice::from_raw_parts(data, size.max(0) as usize).to_vec();
            ffi::sqlite3_free(data.cast());
            Ok(Some(bytes))
        }
    }

    /// Loads an SQLite extension through the C API (SQL's `load_extension()` stays off).
    pub fn load_extension(&self, path: &str, entry_point: Option<&str>) -> Result<()> {
        let path = CString::new(path)
            .map_err(|_| Error::new(ffi::SQLITE_ERROR, "invalid extension path"))?;
        let entry = entry_point
            .map(CString::new)
            .transpose()
            .map_err(|_| Error::new(ffi::SQLITE_ERROR, "invalid entry point"))?;
        let mut message: *mut std::ffi::c_char = ptr::null_mut();
        // SAFETY: valid handle; strings are NUL-terminated; message is freed below.
        unsafe {
            let rc = ffi::sqlite3_load_extension(
                self.raw(),
                path.as_ptr(),
                entry.as_ref().map_or(ptr::null(), |e| e.as_ptr()),
                &mut message,
            );
            let text = if message.is_null() {
                None
            } else {
                let t = CStr::from_ptr(message).to_string_lossy().into_owned();
                ffi::sqlite3_free(message.cast());
                Some(t)
            };
            if rc != ffi::SQLITE_OK {
                return Err(match text {
                    Some(t) => Error::new(rc, t),
                    None => Error::from_code(rc),
                });
            }
        }
        Ok(())
    }

    /// Calls `hook` just before the connection closes (by [`close`](Self::close) or by
    /// dropping it), once, in registration order.
    ///
    /// SQLite refuses to close a connection while any of its statements is alive, and a
    /// function's or virtual table's own data is only released after the close: code
    /// that keeps prepared statements for its callbacks (a [`StatementCache`]) finalizes
    /// them here.
    ///
    /// [`StatementCache`]: super::cache::StatementCache
    pub fn on_close(&self, hook: impl FnOnce() + 'static) {
        self.close_hooks.borrow_mut().push(Box::new(hook));
    }

    fn run_close_hooks(&self) {
        // Taken out first: a hook may register another one (run at the next close).
        let hooks = std::mem::take(&mut *self.close_hooks.borrow_mut());
        for hook in hooks {
            // A panicking hook must not keep the others from running or unwind into
            // Drop; the statement it should have finalized then makes the close fail.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(hook));
        }
    }

    /// Closes the connection. Fails (and keeps it open) while statements remain.
    pub fn close(mut self) -> std::result::Result<(), (Connection, Error)> {
        self.run_close_hooks();
        // SAFETY: valid handle; on success SQLite frees it, so we forget self.
        let rc = unsafe { ffi::sqlite3_close(self.raw()) };
        if rc == ffi::SQLITE_OK {
            let denial = self.pragma_denial.take();
            std::mem::forget(self);
            drop(denial);
            Ok(())
        } else {
            let err = self.last_error(rc);
            Err((self, err))
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.run_close_hooks();
        // SAFETY: valid handle. The binding finalizes every statement before it lets a
        // connection go, so this close succeeds; if it didn't, the handle would leak
        // rather than dangle.
        unsafe { ffi::sqlite3_close(self.raw()) };
    }
}

/// Why [`Connection::exec_each`] stopped early.
#[derive(Debug)]
pub enum ExecAbort {
    Sqlite(Error),
    /// The caller's `before_each` asked to stop (its own error is pending elsewhere).
    Caller,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory() -> Connection {
        Connection::open(":memory:", OpenFlags::default(), None).expect("open :memory:")
    }

    #[test]
    fn exec_each_runs_every_statement_and_reports_errors() {
        let conn = memory();
        let mut seen = Vec::new();
        conn.exec_each(
            "create table t(a); insert into t values (1); insert into t values (2);",
            |s| {
                seen.push(s.sql());
                Ok(())
            },
        )
        .expect("exec");
        assert_eq!(seen.len(), 3);
        assert_eq!(conn.total_changes(), 2);
        let err = match conn.exec_each("insert into nope values (1)", |_| Ok(())) {
            Err(ExecAbort::Sqlite(e)) => e,
            other => panic!("expected an SQLite error, got {other:?}"),
        };
        assert_eq!(err.code, ffi::SQLITE_ERROR);
        assert!(
            err.message.contains("no such table: nope"),
            "{}",
            err.message
        );
    }

    #[test]
    fn exec_parses_a_script_longer_than_the_sql_length_limit_in_place() {
        // Each statement is short; the script is 100 times the limit. Handed to SQLite
        // with a length and no terminator, every remainder would be copied first (and
        // refused as too big); the NUL-terminated script is parsed in place, statement by
        // statement, as better-sqlite3 does.
        let conn = memory();
        conn.exec_each("create table t(a)", |_| Ok(()))
            .expect("create");
        conn.set_limit(ffi::SQLITE_LIMIT_SQL_LENGTH, 1000);
        let script: String = (0..4000)
            .map(|i| format!("insert into t values ({i});\n"))
            .collect();
        assert!(script.len() > 100 * 1000);
        let mut statements = 0;
        conn.exec_each(&script, |_| {
            statements += 1;
            Ok(())
        })
        .expect("a long script of short statements runs");
        assert_eq!(statements, 4000);
        assert_eq!(conn.total_changes(), 4000);
        // A single statement over the limit is still refused.
        let long = format!("select '{}'", "x".repeat(2000));
        match conn.exec_each(&long, |_| Ok(())) {
            Err(ExecAbort::Sqlite(e)) => assert_eq!(e.code, ffi::SQLITE_TOOBIG),
            other => panic!("expected SQLITE_TOOBIG, got {other:?}"),
        }
    }

    #[test]
    fn constraint_errors_keep_their_extended_code() {
        let conn = memory();
        conn.exec_each("create table t(a unique); insert into t values (1)", |_| {
            Ok(())
        })
        .expect("setup");
        match conn.exec_each("insert into t values (1)", |_| Ok(())) {
            Err(ExecAbort::Sqlite(e)) => assert_eq!(e.code_name(), "SQLITE_CONSTRAINT_UNIQUE"),
            other => panic!("expected a constraint error, got {other:?}"),
        }
    }

    #[test]
    fn missing_file_with_must_exist_is_cantopen() {
        let flags = OpenFlags {
            must_exist: true,
            ..OpenFlags::default()
        };
        let err =
            Connection::open("/nonexistent-dir-for-cipherlite/x.db", flags, None).unwrap_err();
        assert_eq!(err.code & 0xff, ffi::SQLITE_CANTOPEN);
    }

    #[test]
    fn autocommit_tracks_transactions() {
        let conn = memory();
        assert!(conn.is_autocommit());
        conn.exec_each("begin", |_| Ok(())).expect("begin");
        assert!(!conn.is_autocommit());
        conn.exec_each("rollback", |_| Ok(())).expect("rollback");
        assert!(conn.is_autocommit());
    }
}
