//! `Statement`: owns one `sqlite3_stmt*`; binding, stepping and reading columns.

use super::{error::Error, ffi, Result};
use std::{
    ffi::{c_char, c_int, CStr},
    ptr::{self, NonNull},
};

/// SQLite's fundamental datatypes, as `sqlite3_column_type` reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    Integer,
    Float,
    Text,
    Blob,
    Null,
}

/// One column of a result row as SQLite's column API gives it, filled by
/// `cipherlite_row_cells` (the C struct `CipherliteCell`, in
/// `vendor/libsqlite3-sys/sqlite3/cipherlite_amalgamation.c`). That function is compiled
/// in SQLite's own translation unit, where the compiler inlines the small API functions
/// into it: one call per row instead of three or four per cell, which took a quarter of
/// a 100-row `.all()`. Read through [`Statement::read_row`], which ties the values to the
/// statement's borrow.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct RowCell {
    bytes: *const u8,
    value: i64,
    length: c_int,
    kind: c_int,
}

impl Default for RowCell {
    fn default() -> Self {
        RowCell {
            bytes: ptr::null(),
            value: 0,
            length: 0,
            kind: ffi::SQLITE_NULL,
        }
    }
}

/// A column's value on the current row (see [`Statement::read_row`]). TEXT is UTF-8 as
/// stored, unvalidated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum CellValue<'a> {
    Null,
    Integer(i64),
    Float(f64),
    Text(&'a [u8]),
    Blob(&'a [u8]),
}

impl RowCell {
    /// Private: only `read_row` may give the bytes a lifetime, the statement's borrow.
    fn value<'a>(&self) -> CellValue<'a> {
        // SAFETY: SQLite's pointer to `length` bytes of the row's value (or null), valid
        // for 'a (read_row's borrow of the statement).
        let bytes = || unsafe { super::sqlite_bytes(self.bytes, self.length) };
        match self.kind {
            ffi::SQLITE_INTEGER => CellValue::Integer(self.value),
            ffi::SQLITE_FLOAT => CellValue::Float(f64::from_bits(self.value as u64)),
            ffi::SQLITE_TEXT => CellValue::Text(bytes()),
            ffi::SQLITE_BLOB => CellValue::Blob(bytes()),
            _ => CellValue::Null,
        }
    }
}

extern "C" {
    /// Fills `cells[0..count)` from the current row's first `count` columns.
    fn cipherlite_row_cells(stmt: *mut ffi::sqlite3_stmt, count: c_int, cells: *mut RowCell);
}

/// A prepared statement. `finalize` may be called early (when its connection closes);
/// afterwards [`Statement::is_alive`] is false and no other method may be called.
#[derive(Debug)]
pub struct Statement {
    handle: Option<NonNull<ffi::sqlite3_stmt>>,
    /// The TEXT bound by [`Statement::bind_text_scratch`], one buffer per parameter
    /// (index - 1): SQLite reads each value in place (`SQLITE_STATIC`) instead of
    /// allocating and copying it on every bind. A buffer leaves its slot only by the swap
    /// that rebinds its parameter, so SQLite never holds a pointer into memory that
    /// changed; the handle is finalized (Drop) before the buffers are freed.
    bound_text: Vec<Vec<u8>>,
    /// Where the next TEXT value is written ([`Statement::text_scratch`]); SQLite never
    /// points into it.
    scratch: Vec<u8>,
}

/// The pointer type of a NaN bound as a parameter (see [`Statement::bind_double`]).
pub const NAN_POINTER_TYPE: &CStr = c"cipherlite.nan";
/// The address a bound NaN's pointer value points to: non-null, never read.
static NAN_MARK: u8 = 0;

/// A scratch text buffer that grew past this is freed when the bindings are cleared,
/// rather than kept for the next value (`clear_bindings`).
const KEPT_TEXT_CAPACITY: usize = 64 * 1024;

/// A non-null address for empty BLOBs.
static EMPTY: [u8; 1] = [0];

/// `SQLITE_TRANSIENT`: SQLite copies bound text/blobs before the bind call returns.
fn transient() -> ffi::sqlite3_destructor_type {
    ffi::SQLITE_TRANSIENT()
}

impl Statement {
    /// Prepares on a connection known only by its handle (a statement cache's).
    ///
    /// # Safety
    /// `db` is an open connection handle.
    pub(crate) unsafe fn prepare_on(
        db: NonNull<ffi::sqlite3>,
        sql: &str,
        persistent: bool,
    ) -> Result<(Option<Statement>, usize)> {
        // SAFETY: per contract; the handle is valid for the error lookup too.
        unsafe {
            Self::prepare_raw(db.as_ptr(), sql, persistent, |rc| {
                Error::from_handle(db.as_ptr(), rc)
            })
        }
    }

    /// Prepares the first statement of `sql`, which must end with a NUL byte (and is
    /// passed to SQLite with that terminator counted in its length). Returns the
    /// statement and how many bytes of `sql` it consumed.
    ///
    /// This is what a loop over a script wants: given a length without a terminator
    /// right after it, SQLite copies the rest of the input on every call (quadratic in
    /// the script's length); given a terminated input it parses in place.
    ///
    /// # Safety
    /// `db` is an open connection handle.
    pub(crate) unsafe fn prepare_terminated(
        db: *mut ffi::sqlite3,
        sql: &[u8],
        persistent: bool,
        error: impl FnOnce(c_int) -> Error,
    ) -> Result<(Option<Statement>, usize)> {
        if sql.last() != Some(&0) {
            return Err(Error::new(
                ffi::SQLITE_MISUSE,
                "SQL text is not NUL-terminated",
            ));
        }
        // SAFETY: per contract; sql is valid for its length and NUL-terminated.
        unsafe { Self::prepare_bytes(db, sql, persistent, error) }
    }

    /// # Safety
    /// `db` is an open connection handle.
    pub(crate) unsafe fn prepare_raw(
        db: *mut ffi::sqlite3,
        sql: &str,
        persistent: bool,
        error: impl FnOnce(c_int) -> Error,
    ) -> Result<(Option<Statement>, usize)> {
        // SAFETY: per contract.
        unsafe { Self::prepare_bytes(db, sql.as_bytes(), persistent, error) }
    }

    /// # Safety
    /// `db` is an open connection handle.
    unsafe fn prepare_bytes(
        db: *mut ffi::sqlite3,
        sql: &[u8],
        persistent: bool,
        error: impl FnOnce(c_int) -> Error,
    ) -> Result<(Option<Statement>, usize)> {
        let mut handle: *mut ffi::sqlite3_stmt = ptr::null_mut();
        let mut tail: *const c_char = ptr::null();
        let len = c_int::try_from(sql.len())
            .map_err(|_| Error::new(ffi::SQLITE_TOOBIG, "string or blob too big"))?;
        let flags = if persistent {
            ffi::SQLITE_PREPARE_PERSISTENT
        } else {
            0
        };
        // SAFETY: sql points to `len` valid bytes (need not be NUL-terminated when the
        // length is given); handle/tail are out-parameters.
        let rc = unsafe {
            ffi::sqlite3_prepare_v3(db, sql.as_ptr().cast(), len, flags, &mut handle, &mut tail)
        };
        if rc != ffi::SQLITE_OK {
            return Err(error(rc));
        }
        let consumed = if tail.is_null() {
            sql.len()
        } else {
            // SAFETY: tail points into `sql` (or one past its end).
            (unsafe { tail.offset_from(sql.as_ptr().cast()) }) as usize
        };
        Ok((
            NonNull::new(handle).map(|h| Statement {
                handle: Some(h),
                bound_text: Vec::new(),
                scratch: Vec::new(),
            }),
            consumed.min(sql.len()),
        ))
    }

    fn raw(&self) -> *mut ffi::sqlite3_stmt {
        self.handle.map_or(ptr::null_mut(), NonNull::as_ptr)
    }

    pub fn is_alive(&self) -> bool {
        self.handle.is_some()
    }

    /// Finalizes the statement now (idempotent).
    pub fn finalize(&mut self) {
        if let Some(h) = self.handle.take() {
            // SAFETY: h is a live statement handle we own; it's never used again.
            unsafe { ffi::sqlite3_finalize(h.as_ptr()) };
        }
    }

    fn db(&self) -> *mut ffi::sqlite3 {
        // SAFETY: valid (or null, for which SQLite returns null) statement handle.
        unsafe { ffi::sqlite3_db_handle(self.raw()) }
    }

    fn error(&self, rc: c_int) -> Error {
        // SAFETY: the statement's connection is open while the statement is alive.
        unsafe { Error::from_handle(self.db(), rc) }
    }

    /// Advances to the next row: `Ok(true)` for a row, `Ok(false)` when done.
    pub fn step(&mut self) -> Result<bool> {
        // SAFETY: live statement handle.
        match unsafe { ffi::sqlite3_step(self.raw()) } {
            ffi::SQLITE_ROW => Ok(true),
            ffi::SQLITE_DONE => Ok(false),
            rc => Err(self.error(rc)),
        }
    }

    /// Resets the statement so it can run again (bindings are kept). Returns the error
    /// of the last step, if it failed.
    pub fn reset(&mut self) -> Result<()> {
        // SAFETY: live statement handle (or null, a harmless no-op).
        match unsafe { ffi::sqlite3_reset(self.raw()) } {
            ffi::SQLITE_OK => Ok(()),
            rc => Err(self.error(rc)),
        }
    }

    /// Sets every parameter to NULL and frees the parameters' text buffers, and the
    /// scratch buffer if it grew past [`KEPT_TEXT_CAPACITY`]. A statement still running is
    /// reset first: `sqlite3_clear_bindings` doesn't check, and a running program may hold
    /// copies of a parameter (its registers point at the bound bytes, `SQLITE_STATIC`) that
    /// only a reset lets go of.
    pub fn clear_bindings(&mut self) {
        if let Some(h) = self.handle {
            // SAFETY: live statement handle (sqlite3_clear_bindings does not accept NULL);
            // the reset's result is the last step's error, already reported.
            unsafe {
                if ffi::sqlite3_stmt_busy(h.as_ptr()) != 0 {
                    ffi::sqlite3_reset(h.as_ptr());
                }
                ffi::sqlite3_clear_bindings(h.as_ptr());
            }
        }
        self.bound_text = Vec::new();
        if self.scratch.capacity() > KEPT_TEXT_CAPACITY {
            self.scratch = Vec::new();
        }
    }

    fn bind_rc(&self, rc: c_int) -> Result<()> {
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(Error::from_code(rc))
        }
    }

    pub fn bind_null(&mut self, index: c_int) -> Result<()> {
        // SAFETY: live handle; out-of-range indexes return SQLITE_RANGE.
        self.bind_rc(unsafe { ffi::sqlite3_bind_null(self.raw(), index) })
    }

    pub fn bind_int64(&mut self, index: c_int, value: i64) -> Result<()> {
        // SAFETY: live handle.
        self.bind_rc(unsafe { ffi::sqlite3_bind_int64(self.raw(), index, value) })
    }

    /// Binds a REAL. A NaN becomes NULL, as `sqlite3_bind_double` makes it (and
    /// better-sqlite3 binds it), but a NULL that carries the pointer type `cipherlite.nan`:
    /// to SQL it is an ordinary NULL, while a function receiving the parameter directly
    /// can tell it from a NULL that was meant
    /// ([`ValueRef::is_nan`](super::function::ValueRef::is_nan)).
    pub fn bind_double(&mut self, index: c_int, value: f64) -> Result<()> {
        if value.is_nan() {
            // SAFETY: live handle; the pointer is a static that is never dereferenced
            // (only compared with null) and has no destructor; the type string is static.
            return self.bind_rc(unsafe {
                ffi::sqlite3_bind_pointer(
                    self.raw(),
                    index,
                    ptr::addr_of!(NAN_MARK).cast_mut().cast(),
                    NAN_POINTER_TYPE.as_ptr(),
                    None,
                )
            });
        }
        // SAFETY: live handle.
        self.bind_rc(unsafe { ffi::sqlite3_bind_double(self.raw(), index, value) })
    }

    /// Binds UTF-8 text (copied by SQLite).
    pub fn bind_text(&mut self, index: c_int, value: &[u8]) -> Result<()> {
        // SAFETY: live handle; value is valid for len bytes; SQLITE_TRANSIENT makes
        // SQLite copy it before returning.
        self.bind_rc(unsafe {
            ffi::sqlite3_bind_text64(
                self.raw(),
                index,
                value.as_ptr().cast(),
                value.len() as u64,
                transient(),
                ffi::SQLITE_UTF8 as u8,
            )
        })
    }

    /// The buffer to write a TEXT value into before [`Statement::bind_text_scratch`]
    /// binds it (its contents are whatever was there: clear it first). SQLite holds no
    /// pointer into it, so it may be changed freely.
    pub fn text_scratch(&mut self) -> &mut Vec<u8> {
        &mut self.scratch
    }

    /// Binds the UTF-8 text in [`Statement::text_scratch`] at `index` without SQLite
    /// copying it: the buffer becomes the parameter's own (SQLite reads it in place until
    /// the parameter is bound again or cleared) and the parameter's previous buffer
    /// becomes the scratch one. Returns the memory the value holds (the buffer's capacity),
    /// for a caller that clears large bindings after use.
    pub fn bind_text_scratch(&mut self, index: c_int) -> Result<usize> {
        let len = self.scratch.len();
        let held = self.scratch.capacity();
        let Some(slot) = usize::try_from(index)
            .ok()
            .filter(|&i| i >= 1 && i <= self.parameter_count().max(0) as usize)
        else {
            // No such parameter: SQLite refuses any value there (SQLITE_RANGE).
            return self.bind_null(index).map(|()| held);
        };
        if self.bound_text.len() < slot {
            self.bound_text.resize_with(slot, Vec::new);
        }
        std::mem::swap(&mut self.bound_text[slot - 1], &mut self.scratch);
        // An empty value gets a static address, as empty BLOBs do.
        let text = match &self.bound_text[slot - 1] {
            t if t.is_empty() => &EMPTY[..0],
            t => &t[..],
        };
        // SAFETY: live handle; `text` is valid for its length and, with SQLITE_STATIC,
        // must stay unchanged for as long as SQLite may read the parameter: it stays in its
        // slot, untouched, until this parameter is bound again (the swap above, which
        // happens only right before that bind) or the bindings are cleared, and it outlives
        // the handle (finalized first). The buffer swapped out was the parameter's previous
        // value, which the bind below replaces.
        let rc = unsafe {
            ffi::sqlite3_bind_text64(
                self.raw(),
                index,
                text.as_ptr().cast(),
                len as u64,
                ffi::SQLITE_STATIC(),
                ffi::SQLITE_UTF8 as u8,
            )
        };
        if rc != ffi::SQLITE_OK {
            // A refused bind may leave SQLite pointing at either buffer: at the previous
            // one when it refused before letting go of the old value (a running statement,
            // SQLITE_MISUSE), at the new one when it failed after taking it (out of memory
            // converting to a UTF-16 database's encoding). Binding NULL lets go of the new
            // one where SQLite can let go at all; where it can't, it still holds the old
            // value. Either way the previous buffer goes back to its slot.
            // SAFETY: live handle.
            unsafe { ffi::sqlite3_bind_null(self.raw(), index) };
            std::mem::swap(&mut self.bound_text[slot - 1], &mut self.scratch);
        }
        self.bind_rc(rc).map(|()| held)
    }

    /// Binds a BLOB (copied by SQLite). An empty slice binds an empty BLOB, not NULL.
    pub fn bind_blob(&mut self, index: c_int, value: &[u8]) -> Result<()> {
        // A non-null pointer with length 0 is an empty BLOB (a null one would be NULL);
        // `verbose` shows it as x'' as better-sqlite3 does.
        let ptr: *const u8 = if value.is_empty() {
            EMPTY.as_ptr()
        } else {
            value.as_ptr()
        };
        // SAFETY: as for bind_text; ptr is valid for value.len() bytes.
        self.bind_rc(unsafe {
            ffi::sqlite3_bind_blob64(
                self.raw(),
                index,
                ptr.cast(),
                value.len() as u64,
                transient(),
            )
        })
    }

    /// Binds a BLOB without copying it (`SQLITE_STATIC`). An empty slice binds an empty
    /// BLOB, not NULL.
    ///
    /// # Safety
    /// `value` must stay valid and unchanged until the statement is reset *and* this
    /// parameter is rebound or cleared (`clear_bindings`), or the statement finalized:
    /// SQLite reads it when the statement steps and when it expands its SQL.
    pub unsafe fn bind_blob_static(&mut self, index: c_int, value: &[u8]) -> Result<()> {
        let ptr: *const u8 = if value.is_empty() {
            EMPTY.as_ptr()
        } else {
            value.as_ptr()
        };
        // SAFETY: live handle; ptr is valid for value.len() bytes for as long as the
        // caller promises (SQLITE_STATIC: SQLite keeps the pointer, not a copy).
        self.bind_rc(unsafe {
            ffi::sqlite3_bind_blob64(
                self.raw(),
                index,
                ptr.cast(),
                value.len() as u64,
                ffi::SQLITE_STATIC(),
            )
        })
    }

    pub fn parameter_count(&self) -> c_int {
        // SAFETY: live handle.
        unsafe { ffi::sqlite3_bind_parameter_count(self.raw()) }
    }

    /// The parameter's name including its prefix (`@x`, `:x`, `$x`, `?NNN`), or `None`
    /// for an anonymous `?`.
    pub fn parameter_name(&self, index: c_int) -> Option<&str> {
        // SAFETY: live handle; the returned string lives as long as the statement.
        let p = unsafe { ffi::sqlite3_bind_parameter_name(self.raw(), index) };
        if p.is_null() {
            None
        } else {
            // SAFETY: non-null NUL-terminated UTF-8 from SQLite.
            unsafe { CStr::from_ptr(p) }.to_str().ok()
        }
    }

    pub fn column_count(&self) -> c_int {
        // SAFETY: live handle.
        unsafe { ffi::sqlite3_column_count(self.raw()) }
    }

    pub fn column_type(&self, i: c_int) -> ColumnType {
        // SAFETY: live handle, positioned on a row (callers only read after step() = true).
        match unsafe { ffi::sqlite3_column_type(self.raw(), i) } {
            ffi::SQLITE_INTEGER => ColumnType::Integer,
            ffi::SQLITE_FLOAT => ColumnType::Float,
            ffi::SQLITE_TEXT => ColumnType::Text,
            ffi::SQLITE_BLOB => ColumnType::Blob,
            _ => ColumnType::Null,
        }
    }

    /// The first `cells.len()` columns of the current row, read in one call (each
    /// `column_*` call looks its column up again, and calls into SQLite cost more than
    /// the reading: see [`RowCell`]). The values borrow the statement: they are valid
    /// until the next step or reset. `cells.len()` must be at most the column count.
    pub fn read_row<'a>(
        &'a self,
        cells: &'a mut [RowCell],
    ) -> impl ExactSizeIterator<Item = CellValue<'a>> + 'a {
        debug_assert!(cells.len() <= self.column_count() as usize);
        // SAFETY: live handle on a row; `cells` has room for `cells.len()` cells (a column
        // count fits c_int: SQLite's limit is 32,767). The row reader only calls SQLite's
        // column and value API (an index out of range reads a static NULL). The values
        // are "unprotected", which the sqlite3_value_* readers may take when no mutex is
        // in play: this build is SQLITE_THREADSAFE=2 and connections open with
        // SQLITE_OPEN_NOMUTEX.
        unsafe { cipherlite_row_cells(self.raw(), cells.len() as c_int, cells.as_mut_ptr()) };
        // The pointers in `cells` point into the statement's row, which stays put while
        // `self` is borrowed (moving it needs &mut self).
        cells.iter().map(RowCell::value)
    }

    pub fn column_int64(&self, i: c_int) -> i64 {
        // SAFETY: live handle on a row.
        unsafe { ffi::sqlite3_column_int64(self.raw(), i) }
    }

    pub fn column_double(&self, i: c_int) -> f64 {
        // SAFETY: live handle on a row.
        unsafe { ffi::sqlite3_column_double(self.raw(), i) }
    }

    /// The column's text as UTF-8 bytes (SQLite does not validate them), valid until the
    /// next step/reset — hence the borrow of `self`.
    pub fn column_text(&self, i: c_int) -> &[u8] {
        // SAFETY: live handle on a row; text() before bytes() as SQLite documents, and the
        // pointer stays valid until the statement moves, which needs &mut self.
        unsafe {
            let p = ffi::sqlite3_column_text(self.raw(), i);
            super::sqlite_bytes(p, ffi::sqlite3_column_bytes(self.raw(), i))
        }
    }

    /// The column's BLOB bytes, valid until the next step/reset.
    pub fn column_blob(&self, i: c_int) -> &[u8] {
        // SAFETY: as for column_text.
        unsafe {
            let p = ffi::sqlite3_column_blob(self.raw(), i);
            super::sqlite_bytes(p.cast::<u8>(), ffi::sqlite3_column_bytes(self.raw(), i))
        }
    }

    fn column_str(
        &self,
        f: unsafe extern "C" fn(*mut ffi::sqlite3_stmt, c_int) -> *const c_char,
        i: c_int,
    ) -> Option<&str> {
        // SAFETY: live handle; f is one of SQLite's column metadata getters, which return
        // NUL-terminated UTF-8 owned by the statement (or null).
        let p = unsafe { f(self.raw(), i) };
        if p.is_null() {
            None
        } else {
            // SAFETY: non-null NUL-terminated string from SQLite.
            Some(unsafe { CStr::from_ptr(p) }.to_str().unwrap_or(""))
        }
    }

    pub fn column_name(&self, i: c_int) -> Option<&str> {
        self.column_str(ffi::sqlite3_column_name, i)
    }
    pub fn column_origin_name(&self, i: c_int) -> Option<&str> {
        self.column_str(ffi::sqlite3_column_origin_name, i)
    }
    pub fn column_table_name(&self, i: c_int) -> Option<&str> {
        self.column_str(ffi::sqlite3_column_table_name, i)
    }
    pub fn column_database_name(&self, i: c_int) -> Option<&str> {
        self.column_str(ffi::sqlite3_column_database_name, i)
    }
    pub fn column_decltype(&self, i: c_int) -> Option<&str> {
        self.column_str(ffi::sqlite3_column_decltype, i)
    }

    /// True if the statement makes no direct change to the database file.
    pub fn readonly(&self) -> bool {
        // SAFETY: live handle.
        unsafe { ffi::sqlite3_stmt_readonly(self.raw()) != 0 }
    }

    /// How many times SQLite re-prepared this statement (its columns may have changed).
    pub fn reprepare_count(&self) -> i32 {
        if self.handle.is_none() {
            return 0; // sqlite3_stmt_status does not accept NULL
        }
        // SAFETY: live handle.
        unsafe { ffi::sqlite3_stmt_status(self.raw(), ffi::SQLITE_STMTSTATUS_REPREPARE, 0) }
    }

    /// The SQL text with bound parameters expanded (as `verbose` logs it).
    pub fn expanded_sql(&self) -> Option<String> {
        // SAFETY: live handle; the result is sqlite3_malloc'd and freed below.
        unsafe {
            let p = ffi::sqlite3_expanded_sql(self.raw());
            if p.is_null() {
                return None;
            }
            let s = CStr::from_ptr(p).to_string_lossy().into_owned();
            ffi::sqlite3_free(p.cast());
            Some(s)
        }
    }

    /// Takes `new`'s handle — the same SQL prepared on another connection, its values
    /// already bound ([`Statement::copy_bindings_to`]) — and finalizes this one's old
    /// handle with `new` ([`Connection::adopt`](crate::Connection::adopt) moves a
    /// statement so).
    pub(crate) fn take_handle_of(&mut self, mut new: Statement) {
        std::mem::swap(&mut self.handle, &mut new.handle);
        new.finalize();
    }

    /// Whether the statement was finalized (it has no handle any more).
    pub fn is_finalized(&self) -> bool {
        self.handle.is_none()
    }

    /// Binds to `to` — the same SQL prepared on another connection — the values bound to
    /// this statement, which keeps them.
    ///
    /// Not `sqlite3_transfer_bindings(self, to)`: that is for two statements of one
    /// connection. It moves SQLite's internal values whole, the connection they allocate
    /// from included, so across connections `to` would go on allocating from (and freeing
    /// into) this statement's connection, memory that is freed when that one closes: heap
    /// corruption at the next TEXT or BLOB bound after a rekey. Instead the values stay on
    /// this connection: they are moved (one connection, as that function allows) into
    /// `SELECT ?a, …, ?b WHERE ?n OR 1` statements that return them as columns, bound to
    /// `to` by value (which copies them into `to`'s connection), then moved back here.
    /// A bound NaN keeps its mark ([`Statement::bind_double`]).
    pub(crate) fn copy_bindings_to(&mut self, to: &mut Statement) -> Result<()> {
        let n = self.parameter_count();
        if n == 0 {
            return Ok(());
        }
        if to.parameter_count() != n {
            return Err(Error::new(
                ffi::SQLITE_ERROR,
                "the re-prepared statement has other parameters",
            ));
        }
        let db = NonNull::new(self.db())
            .ok_or_else(|| Error::new(ffi::SQLITE_MISUSE, "the statement is finalized"))?;
        // SAFETY: an open connection (it has a live statement); -1 only reads the limit.
        let max_columns = unsafe { ffi::sqlite3_limit(db.as_ptr(), ffi::SQLITE_LIMIT_COLUMN, -1) };
        // Values read per statement (one column each).
        let per_read = max_columns.clamp(1, 1000);
        // The statement holding the values now: `self` until the first move.
        let mut holder: Option<Statement> = None;
        let mut first = 1;
        let result = (|| -> Result<()> {
            while first <= n {
                let last = n.min(first + per_read - 1);
                // `?n` gives the reader n parameters, as transferring needs.
                let columns: Vec<String> = (first..=last).map(|i| format!("?{i}")).collect();
                let sql = format!("SELECT {} WHERE ?{n} OR 1", columns.join(", "));
                // SAFETY: `db` is open (see above).
                let (reader, _) = unsafe { Statement::prepare_on(db, &sql, false) }?;
                let reader = reader.ok_or_else(|| {
                    Error::new(ffi::SQLITE_ERROR, "cannot prepare to read the bound values")
                })?;
                let from = holder.as_ref().map_or(self.raw(), Statement::raw);
                // SAFETY: two live statements of one connection with n parameters each.
                let rc = unsafe { ffi::sqlite3_transfer_bindings(from, reader.raw()) };
                if rc != ffi::SQLITE_OK {
                    return Err(Error::from_code(rc));
                }
                // From here the values are in `reader`: it is the holder even if this
                // chunk fails, so that they are moved back to `self`.
                let reader = holder.insert(reader).raw();
                // SAFETY: a live statement of `db`.
                let rc = unsafe { ffi::sqlite3_step(reader) };
                if rc != ffi::SQLITE_ROW {
                    // SAFETY: `db` is open.
                    return Err(unsafe { Error::from_handle(db.as_ptr(), rc) });
                }
                for i in first..=last {
                    // SAFETY: column `i - first` of the row `reader` is on; the value
                    // lives until the reader is stepped, reset or finalized, and is only
                    // passed to sqlite3_value_pointer and sqlite3_bind_value (which
                    // accept unprotected values; the latter copies it into `to`).
                    unsafe {
                        let value = ffi::sqlite3_column_value(reader, i - first);
                        let nan = ffi::sqlite3_value_pointer(value, NAN_POINTER_TYPE.as_ptr());
                        if nan.is_null() {
                            to.bind_rc(ffi::sqlite3_bind_value(to.raw(), i, value))?;
                        } else {
                            to.bind_double(i, f64::NAN)?;
                        }
                    }
                }
                // SAFETY: a live statement; its values are kept (and its row released).
                unsafe { ffi::sqlite3_reset(reader) };
                first = last + 1;
            }
            Ok(())
        })();
        if let Some(holder) = holder {
            // SAFETY: two live statements of one connection with n parameters each (the
            // holder reset first: no row of it refers to its values any more).
            let rc = unsafe {
                ffi::sqlite3_reset(holder.raw());
                ffi::sqlite3_transfer_bindings(holder.raw(), self.raw())
            };
            if rc != ffi::SQLITE_OK && result.is_ok() {
                return Err(Error::from_code(rc));
            }
        }
        result
    }

    /// The SQL text as prepared.
    pub fn sql(&self) -> String {
        // SAFETY: live handle; the string is owned by the statement.
        unsafe {
            let p = ffi::sqlite3_sql(self.raw());
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        }
    }
}

impl Drop for Statement {
    fn drop(&mut self) {
        self.finalize();
    }
}

/// True when what follows a prepared statement is only whitespace, `-- …` line comments
/// and `/* … */` block comments — the tail better-sqlite3 accepts after one statement.
impl Statement {
    /// Whether this statement is an `ATTACH … KEY …`: the key expression of SQLite's
    /// attach call is code other than a NULL (SQLite parses the clause and, without a
    /// codec, ignores the key). Read from the statement's bytecode (`sqlite3_stmt_explain`),
    /// then the statement is put back as it was.
    pub fn attach_has_key(&self) -> bool {
        let stmt = self.raw();
        if stmt.is_null() {
            return false;
        }
        let text = |i: c_int| -> String {
            // SAFETY: stmt is valid and positioned on a row; the text is copied at once.
            unsafe {
                let p = ffi::sqlite3_column_text(stmt, i);
                if p.is_null() {
                    String::new()
                } else {
                    std::ffi::CStr::from_ptr(p.cast())
                        .to_string_lossy()
                        .into_owned()
                }
            }
        };
        // (opcode, p1, p2, p3, p4) of every instruction.
        let mut program = Vec::new();
        // SAFETY: stmt is a valid, not running statement (just prepared).
        unsafe {
            if ffi::sqlite3_stmt_explain(stmt, 1) != ffi::SQLITE_OK {
                return false;
            }
            while ffi::sqlite3_step(stmt) == ffi::SQLITE_ROW {
                program.push((
                    text(1),
                    ffi::sqlite3_column_int64(stmt, 2),
                    ffi::sqlite3_column_int64(stmt, 3),
                    ffi::sqlite3_column_int64(stmt, 4),
                    text(5),
                ));
            }
            ffi::sqlite3_reset(stmt);
            ffi::sqlite3_stmt_explain(stmt, 0);
        }
        let Some(&(_, _, args, _, _)) = program.iter().find(|(op, _, _, _, p4)| {
            op.starts_with("Function") && p4.starts_with("sqlite_attach")
        }) else {
            return false;
        };
        let key_register = args + 2;
        let key_is_null = program.iter().any(|(op, _, p2, p3, _)| {
            op == "Null" && *p2 <= key_register && key_register <= (*p3).max(*p2)
        });
        !key_is_null
    }
}

pub fn is_blank_sql_tail(tail: &[u8]) -> bool {
    let mut i = 0;
    while i < tail.len() {
        match tail[i] {
            // SQLite reads SQL text up to a NUL, as better-sqlite3 passes it.
            b'\0' => return true,
            b' ' | b'\t' | b'\n' | b'\x0b' | b'\r' | b'\x0c' | b';' => i += 1,
            b'/' if tail.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < tail.len() && !(tail[i] == b'*' && tail.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i = (i + 2).min(tail.len());
            }
            b'-' if tail.get(i + 1) == Some(&b'-') => {
                while i < tail.len() && tail[i] != b'\n' {
                    i += 1;
                }
            }
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        function::{create_scalar, FunctionFlags},
        Connection, OpenFlags,
    };

    fn memory() -> Connection {
        Connection::open(":memory:", OpenFlags::default(), None).expect("open")
    }

    /// Binds `text` at `index` the way the binding layer does: written into the scratch
    /// buffer, then bound in place.
    fn bind_via_scratch(stmt: &mut Statement, index: c_int, text: &[u8]) -> Result<usize> {
        let scratch = stmt.text_scratch();
        scratch.clear();
        scratch.extend_from_slice(text);
        stmt.bind_text_scratch(index)
    }

    #[test]
    fn text_bound_in_place_reads_back_after_every_rebind() {
        let c = memory();
        let (stmt, _) = c.prepare("select ?1, ?2, ?3, length(?2)", false).unwrap();
        let mut stmt = stmt.expect("a statement");
        // Values of every size, rebound many times: each rebind swaps a parameter's buffer
        // with the scratch one, so a stale pointer would show another call's text.
        let texts: Vec<Vec<u8>> = (0..40)
            .map(|i| format!("value {i} ").repeat(i * 37 % 300).into_bytes())
            .collect();
        for (round, window) in texts.windows(3).enumerate() {
            for (i, text) in window.iter().enumerate() {
                bind_via_scratch(&mut stmt, i as c_int + 1, text).expect("bind");
            }
            // The scratch buffer is free to change: SQLite must not read it.
            stmt.text_scratch().clear();
            stmt.text_scratch().extend_from_slice(b"scribbled over");
            assert!(stmt.step().expect("step"), "round {round}");
            for (i, text) in window.iter().enumerate() {
                assert_eq!(
                    stmt.column_text(i as c_int),
                    &text[..],
                    "round {round}, ?{}",
                    i + 1
                );
            }
            assert_eq!(stmt.column_int64(3), window[1].len() as i64);
            stmt.reset().expect("reset");
        }
        // An empty value is an empty TEXT, not NULL.
        bind_via_scratch(&mut stmt, 1, b"").expect("bind");
        assert!(stmt.step().expect("step"));
        assert_eq!(stmt.column_type(0), ColumnType::Text);
        assert_eq!(stmt.column_text(0), b"");
        stmt.reset().expect("reset");
        // A parameter that doesn't exist is SQLite's SQLITE_RANGE, and the others keep
        // their values.
        for index in [0, 4, -1] {
            let err = bind_via_scratch(&mut stmt, index, b"nowhere").expect_err("range");
            assert_eq!(err.code, ffi::SQLITE_RANGE);
        }
        assert!(stmt.step().expect("step"));
        assert_eq!(stmt.column_text(1), &texts[38][..]);
        stmt.reset().expect("reset");
        // Cleared, every parameter is NULL and no buffer is kept for them.
        stmt.clear_bindings();
        assert!(stmt.bound_text.is_empty());
        assert!(stmt.step().expect("step"));
        assert_eq!(stmt.column_type(1), ColumnType::Null);
    }

    #[test]
    fn a_refused_text_bind_keeps_the_value_sqlite_still_reads() {
        let c = memory();
        let (stmt, _) = c.prepare("select ?1", false).unwrap();
        let mut stmt = stmt.expect("a statement");
        bind_via_scratch(&mut stmt, 1, b"the value being read").expect("bind");
        assert!(
            stmt.step().expect("step"),
            "a row: the statement is now running"
        );
        // Binding a running statement is refused (SQLITE_MISUSE) before SQLite lets go
        // of the value it is reading: that buffer must stay where it is.
        let err = bind_via_scratch(&mut stmt, 1, b"too late").expect_err("busy");
        assert_eq!(err.code, ffi::SQLITE_MISUSE);
        stmt.text_scratch().clear();
        stmt.text_scratch()
            .extend_from_slice(b"scribbled over the scratch buffer");
        assert_eq!(stmt.column_text(0), b"the value being read");
        stmt.reset().expect("reset");
        assert!(stmt.step().expect("step"));
        assert_eq!(stmt.column_text(0), b"the value being read");
    }

    #[test]
    fn clearing_the_bindings_of_a_running_statement_resets_it_first() {
        let c = memory();
        // `printf(...)` is a constant SQLite computes once into a register, which then
        // points at the bound bytes for the rest of the run.
        let (stmt, _) = c
            .prepare(
                "with recursive c(i) as (select 1 union all select i + 1 from c where i < 50) \
                 select i from c where ? = (printf('%.*c', 5000, 'A') || substr(i, 1, 0))",
                false,
            )
            .unwrap();
        let mut stmt = stmt.expect("a statement");
        let value = vec![b'A'; 5000];
        bind_via_scratch(&mut stmt, 1, &value).expect("bind");
        assert!(stmt.step().expect("step"), "running, on its first row");
        // The buffers SQLite's registers point at are freed here: the statement must not
        // go on running with them.
        stmt.clear_bindings();
        bind_via_scratch(&mut stmt, 1, &value).expect("ready to bind: it was reset");
        let mut rows = 0;
        while stmt.step().expect("step") {
            rows += 1;
        }
        assert_eq!(rows, 50, "it starts over with the new value");
    }

    #[test]
    fn a_statement_moved_with_text_bound_in_place_keeps_it() {
        let a = memory();
        let b = memory();
        let (stmt, _) = a.prepare("select ?1 || ?2", false).unwrap();
        let mut stmt = stmt.expect("a statement");
        bind_via_scratch(&mut stmt, 1, b"bound in ").unwrap();
        bind_via_scratch(&mut stmt, 2, b"place").unwrap();
        b.adopt(&mut stmt).expect("move");
        drop(a);
        stmt.text_scratch().clear();
        stmt.text_scratch().extend_from_slice(b"scribbled over");
        assert!(stmt.step().expect("step"));
        assert_eq!(stmt.column_text(0), b"bound in place");
    }

    #[test]
    fn move_to_keeps_the_sql_and_the_bound_values() {
        let a = memory();
        let b = memory();
        for c in [&a, &b] {
            c.execute_batch("create table t(x); insert into t values (1), (2), (3)")
                .expect("setup");
        }
        b.execute_batch("insert into t values (4)")
            .expect("b differs");
        let (stmt, _) = a
            .prepare("select count(*) from t where x >= ?", false)
            .expect("prepare");
        let mut stmt = stmt.expect("a statement");
        stmt.bind_int64(1, 2).expect("bind");
        b.adopt(&mut stmt).expect("move");
        assert!(stmt.step().expect("step"));
        assert_eq!(
            stmt.column_int64(0),
            3,
            "runs on b (2, 3, 4) with the bound 2"
        );
        drop(stmt);
        // The old handle was finalized: `a` closes cleanly.
        a.close().map_err(|(_, e)| e).expect("a closes");
    }

    /// Lookaside slots in use on `conn`: memory SQLite took from that connection's own
    /// allocator (statement values among them).
    fn lookaside_used(conn: &Connection) -> c_int {
        let (mut current, mut high) = (0, 0);
        // SAFETY: an open connection; the out-parameters are locals.
        let rc = unsafe {
            ffi::sqlite3_db_status(
                conn.raw(),
                ffi::SQLITE_DBSTATUS_LOOKASIDE_USED,
                &mut current,
                &mut high,
                0,
            )
        };
        assert_eq!(rc, ffi::SQLITE_OK);
        current
    }

    #[test]
    fn a_moved_statement_allocates_nothing_from_the_old_connection() {
        // Regression: adopt carried the values over with sqlite3_transfer_bindings,
        // which is for two statements of one connection: the moved statement's parameter
        // values went on allocating from (and freeing into) the old connection, memory
        // that is freed when it closes — heap corruption after db.rekey()
        // (__test__/80-key-lifecycle.test.js, "rekey ... binds text after the rekey").
        let a = memory();
        let b = memory();
        let (stmt, _) = a.prepare("select ?1, ?2, ?3", false).expect("prepare");
        let mut stmt = stmt.expect("a statement");
        stmt.bind_text(1, b"bound before the move").expect("bind");
        b.adopt(&mut stmt).expect("move");
        let before = lookaside_used(&a);
        stmt.bind_text(2, b"bound after the move").expect("bind");
        stmt.bind_text(3, b"and another one").expect("bind");
        assert_eq!(
            lookaside_used(&a),
            before,
            "binding took memory of the old connection"
        );
        assert!(stmt.step().expect("step"));
        assert_eq!(stmt.column_text(0), b"bound before the move");
        assert_eq!(stmt.column_text(1), b"bound after the move");
        assert_eq!(stmt.column_text(2), b"and another one");
        drop(stmt);
        assert_eq!(
            lookaside_used(&a),
            before,
            "the moved statement freed into the old connection"
        );
        a.close().map_err(|(_, e)| e).expect("a closes");
    }

    #[test]
    fn move_to_carries_every_kind_of_bound_value() {
        let a = memory();
        let b = memory();
        for c in [&a, &b] {
            // Whether its argument is the NULL a bound NaN became.
            create_scalar(c, "nan_mark", 1, FunctionFlags::default(), |ctx, args| {
                ctx.set_int64(i64::from(args[0].is_nan()));
            })
            .expect("function");
        }
        let (stmt, _) = a
            .prepare(
                "select ?1, ?2, ?3, ?4, ?5, typeof(?6), ?7, ?8, ?9, ?2500, :named, \
                 nan_mark(?7), nan_mark(?6)",
                false,
            )
            .expect("prepare");
        let mut stmt = stmt.expect("a statement");
        assert_eq!(stmt.parameter_count(), 2501);
        stmt.bind_int64(1, i64::MIN).unwrap();
        stmt.bind_double(2, -0.5).unwrap();
        stmt.bind_text(3, "héllo\0wörld".as_bytes()).unwrap();
        stmt.bind_blob(4, &[0, 1, 2, 255]).unwrap();
        stmt.bind_blob(5, &[]).unwrap();
        stmt.bind_null(6).unwrap();
        stmt.bind_double(7, f64::NAN).unwrap();
        // 8 stays unbound.
        stmt.bind_text(9, &vec![b'x'; 100_000]).unwrap();
        stmt.bind_int64(2500, 2500).unwrap();
        stmt.bind_text(2501, b"by name").unwrap();
        b.adopt(&mut stmt).expect("move");
        drop(a);
        assert!(stmt.step().expect("step"));
        assert_eq!(stmt.column_int64(0), i64::MIN);
        assert_eq!(stmt.column_double(1), -0.5);
        assert_eq!(stmt.column_text(2), "héllo\0wörld".as_bytes());
        assert_eq!(stmt.column_blob(3), &[0, 1, 2, 255]);
        assert_eq!(
            stmt.column_type(4),
            ColumnType::Blob,
            "an empty BLOB stays a BLOB"
        );
        assert_eq!(stmt.column_blob(4), b"");
        assert_eq!(stmt.column_text(5), b"null");
        assert_eq!(
            stmt.column_type(6),
            ColumnType::Null,
            "a NaN is NULL to SQL"
        );
        assert_eq!(stmt.column_type(7), ColumnType::Null, "unbound");
        assert_eq!(stmt.column_text(8), &vec![b'x'; 100_000][..]);
        assert_eq!(stmt.column_int64(9), 2500);
        assert_eq!(stmt.column_text(10), b"by name");
        assert_eq!(stmt.column_int64(11), 1, "the NaN keeps its mark");
        assert_eq!(stmt.column_int64(12), 0, "a NULL is no NaN");
    }

    #[test]
    fn move_to_reads_many_values_in_several_statements() {
        let a = memory();
        let b = memory();
        let (stmt, _) = a.prepare("select ?1 || ?2 || ?3 || ?4", false).unwrap();
        let mut stmt = stmt.expect("a statement");
        // One value per reading statement (SQLITE_LIMIT_COLUMN 1, set once the schema,
        // which has more columns, is loaded): a chain of four.
        // SAFETY: an open connection.
        unsafe { ffi::sqlite3_limit(a.raw(), ffi::SQLITE_LIMIT_COLUMN, 1) };
        for (i, text) in ["one ", "two ", "three ", "four"].iter().enumerate() {
            stmt.bind_text(i as c_int + 1, text.as_bytes()).unwrap();
        }
        b.adopt(&mut stmt).expect("move");
        assert!(stmt.step().expect("step"));
        assert_eq!(stmt.column_text(0), b"one two three four");
    }

    #[test]
    fn binds_and_reads_every_type() {
        let conn = memory();
        let (stmt, _) = conn
            .prepare("select ?, ?, ?, ?, ?, ?", false)
            .expect("prepare");
        let mut stmt = stmt.expect("a statement");
        stmt.bind_int64(1, i64::MAX).unwrap();
        stmt.bind_double(2, -0.5).unwrap();
        stmt.bind_text(3, "héllo".as_bytes()).unwrap();
        stmt.bind_blob(4, &[1, 2, 3]).unwrap();
        stmt.bind_blob(5, &[]).unwrap();
        assert!(stmt.step().unwrap());
        assert_eq!(stmt.column_type(0), ColumnType::Integer);
        assert_eq!(stmt.column_int64(0), i64::MAX);
        assert_eq!(stmt.column_double(1), -0.5);
        assert_eq!(stmt.column_text(2), "héllo".as_bytes());
        assert_eq!(stmt.column_blob(3), &[1, 2, 3]);
        assert_eq!(
            stmt.column_type(4),
            ColumnType::Blob,
            "empty blob stays a blob"
        );
        assert_eq!(stmt.column_type(5), ColumnType::Null, "unbound is NULL");
        assert!(!stmt.step().unwrap());
    }

    #[test]
    fn read_row_gives_each_column_as_the_column_api_does() {
        let conn = memory();
        let (stmt, _) = conn
            .prepare("select ?, ?, ?, ?, ?, ?, '', 7.0, x'00ff', 'tail'", false)
            .expect("prepare");
        let mut stmt = stmt.expect("a statement");
        stmt.bind_int64(1, i64::MIN).unwrap();
        stmt.bind_double(2, -0.5).unwrap();
        stmt.bind_text(3, "héllo".as_bytes()).unwrap();
        stmt.bind_blob(4, &[1, 2, 3]).unwrap();
        stmt.bind_blob(5, &[]).unwrap();
        assert!(stmt.step().unwrap());
        let mut cells = vec![RowCell::default(); 10];
        let row: Vec<CellValue<'_>> = stmt.read_row(&mut cells).collect();
        assert_eq!(
            row,
            [
                CellValue::Integer(i64::MIN),
                CellValue::Float(-0.5),
                CellValue::Text("héllo".as_bytes()),
                CellValue::Blob(&[1, 2, 3]),
                CellValue::Blob(&[]),
                CellValue::Null,
                CellValue::Text(b""),
                CellValue::Float(7.0),
                CellValue::Blob(&[0, 0xff]),
                CellValue::Text(b"tail"),
            ]
        );
        // Fewer cells than columns read the first ones only.
        let mut two = [RowCell::default(); 2];
        let first: Vec<CellValue<'_>> = stmt.read_row(&mut two).collect();
        assert_eq!(first, row[..2]);
        assert!(!stmt.step().unwrap());
    }

    #[test]
    fn a_bound_nan_is_null_to_sql() {
        let conn = memory();
        let (stmt, _) = conn
            .prepare("select ?, typeof(?), ? is null", false)
            .expect("prepare");
        let mut stmt = stmt.expect("a statement");
        for index in 1..=3 {
            stmt.bind_double(index, f64::NAN).unwrap();
        }
        assert!(stmt.step().unwrap());
        assert_eq!(stmt.column_type(0), ColumnType::Null);
        assert_eq!(stmt.column_text(1), b"null");
        assert_eq!(stmt.column_int64(2), 1);
    }

    #[test]
    fn tail_offset_and_blank_tails() {
        let conn = memory();
        let sql = "select 1; -- trailing\n /* c */ ";
        let (stmt, tail) = conn.prepare(sql, false).unwrap();
        assert!(stmt.is_some());
        assert!(is_blank_sql_tail(&sql.as_bytes()[tail..]));
        assert!(!is_blank_sql_tail(b" select 2"));
        let (none, _) = conn.prepare(" -- only a comment", false).unwrap();
        assert!(none.is_none());
    }

    #[test]
    fn parameter_names_keep_their_prefix() {
        let conn = memory();
        let (stmt, _) = conn.prepare("select @a, :b, $c, ?", false).unwrap();
        let stmt = stmt.unwrap();
        assert_eq!(stmt.parameter_count(), 4);
        assert_eq!(stmt.parameter_name(1), Some("@a"));
        assert_eq!(stmt.parameter_name(3), Some("$c"));
        assert_eq!(stmt.parameter_name(4), None);
    }

    #[test]
    fn step_error_carries_the_message() {
        let conn = memory();
        let (stmt, _) = conn
            .prepare("select abs(-9223372036854775808)", false)
            .unwrap();
        let err = stmt.unwrap().step().unwrap_err();
        assert_eq!(err.code, ffi::SQLITE_ERROR);
        assert_eq!(err.message, "integer overflow");
    }
}
