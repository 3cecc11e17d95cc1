//! User-defined SQL functions: scalar functions and aggregate/window functions whose
//! implementations are Rust closures or trait objects. Every callback from SQLite catches
//! panics and turns them into SQL errors.
//!
//! ```
//! use cipherlite_sqlite::{Connection, OpenFlags, function::{self, FunctionFlags, Value}};
//! let conn = Connection::open(":memory:", OpenFlags::default(), None).unwrap();
//! function::create_scalar(&conn, "double_it", 1, FunctionFlags::default(), |ctx, args| {
//!     ctx.set_result(Value::Integer(args[0].int64() * 2));
//! }).unwrap();
//! let (mut stmt, _) = conn.prepare("select double_it(21)", false).unwrap();
//! let stmt = stmt.as_mut().unwrap();
//! assert!(stmt.step().unwrap());
//! assert_eq!(stmt.column_int64(0), 42);
//! ```

use super::{connection::Connection, error::Error, ffi, ColumnType, Result};
use std::{
    ffi::{c_int, c_void, CString},
    marker::PhantomData,
    panic::{catch_unwind, AssertUnwindSafe},
    ptr,
};

/// Registration flags.
#[derive(Debug, Clone, Copy, Default)]
pub struct FunctionFlags {
    pub deterministic: bool,
    /// `SQLITE_DIRECTONLY`: usable only from top-level SQL, not from triggers, views,
    /// CHECK constraints or other schema objects.
    pub direct_only: bool,
    /// `SQLITE_INNOCUOUS`: harmless even when a schema object of an untrusted database
    /// calls it (allowed there with `PRAGMA trusted_schema = OFF`).
    pub innocuous: bool,
}

impl FunctionFlags {
    fn bits(self) -> c_int {
        let mut bits = ffi::SQLITE_UTF8;
        if self.deterministic {
            bits |= ffi::SQLITE_DETERMINISTIC;
        }
        if self.direct_only {
            bits |= ffi::SQLITE_DIRECTONLY;
        }
        if self.innocuous {
            bits |= ffi::SQLITE_INNOCUOUS;
        }
        bits
    }
}

/// An owned SQL value, for results.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Integer(i64),
    Real(f64),
    Text(String),
    Blob(Vec<u8>),
}

/// A borrowed SQL argument (`sqlite3_value*`), valid during the callback.
#[derive(Clone, Copy)]
pub struct ValueRef<'a> {
    raw: *mut ffi::sqlite3_value,
    _life: PhantomData<&'a ()>,
}

impl<'a> ValueRef<'a> {
    pub fn value_type(&self) -> ColumnType {
        // SAFETY: raw is a live argument of the current callback.
        match unsafe { ffi::sqlite3_value_type(self.raw) } {
            ffi::SQLITE_INTEGER => ColumnType::Integer,
            ffi::SQLITE_FLOAT => ColumnType::Float,
            ffi::SQLITE_TEXT => ColumnType::Text,
            ffi::SQLITE_BLOB => ColumnType::Blob,
            _ => ColumnType::Null,
        }
    }
    /// Whether this is the NULL a bound NaN became ([`Statement::bind_double`]); only a
    /// parameter passed directly as the argument keeps the mark.
    ///
    /// [`Statement::bind_double`]: super::Statement::bind_double
    pub fn is_nan(&self) -> bool {
        // SAFETY: live argument; the type string is a static C string.
        !unsafe {
            ffi::sqlite3_value_pointer(self.raw, super::statement::NAN_POINTER_TYPE.as_ptr())
        }
        .is_null()
    }
    pub fn int64(&self) -> i64 {
        // SAFETY: live argument.
        unsafe { ffi::sqlite3_value_int64(self.raw) }
    }
    pub fn double(&self) -> f64 {
        // SAFETY: live argument.
        unsafe { ffi::sqlite3_value_double(self.raw) }
    }
    /// TEXT as UTF-8 bytes (unvalidated).
    pub fn text(&self) -> &'a [u8] {
        // SAFETY: live argument; text() then bytes() per SQLite's rules; the buffer lives
        // until the callback returns.
        unsafe {
            let p = ffi::sqlite3_value_text(self.raw);
            super::sqlite_bytes(p, ffi::sqlite3_value_bytes(self.raw))
        }
    }
    pub fn blob(&self) -> &'a [u8] {
        // SAFETY: as for text().
        unsafe {
            let p = ffi::sqlite3_value_blob(self.raw);
            super::sqlite_bytes(p.cast::<u8>(), ffi::sqlite3_value_bytes(self.raw))
        }
    }
}

/// The function call's context: where its result or error goes.
pub struct Context {
    raw: *mut ffi::sqlite3_context,
}

impl Context {
    /// Wraps the context SQLite passed to a callback (`xFunc`, `xColumn`, …).
    ///
    /// # Safety
    /// `raw` must be the live context of the callback being run, and the `Context` must
    /// not outlive it.
    pub(super) unsafe fn from_raw(raw: *mut ffi::sqlite3_context) -> Context {
        Context { raw }
    }

    pub fn set_result(&mut self, value: Value) {
        match value {
            Value::Null => self.set_null(),
            Value::Integer(i) => self.set_int64(i),
            Value::Real(f) => self.set_double(f),
            Value::Text(s) => self.set_text(s.as_bytes()),
            Value::Blob(b) => self.set_blob(&b),
        }
    }
    pub fn set_null(&mut self) {
        // SAFETY: live context of the current callback.
        unsafe { ffi::sqlite3_result_null(self.raw) }
    }
    pub fn set_int64(&mut self, v: i64) {
        // SAFETY: live context.
        unsafe { ffi::sqlite3_result_int64(self.raw, v) }
    }
    pub fn set_double(&mut self, v: f64) {
        // SAFETY: live context.
        unsafe { ffi::sqlite3_result_double(self.raw, v) }
    }
    pub fn set_text(&mut self, v: &[u8]) {
        // SAFETY: live context; SQLITE_TRANSIENT makes SQLite copy the bytes.
        unsafe {
            ffi::sqlite3_result_text64(
                self.raw,
                v.as_ptr().cast(),
                v.len() as u64,
                ffi::SQLITE_TRANSIENT(),
                ffi::SQLITE_UTF8 as u8,
            )
        }
    }
    pub fn set_blob(&mut self, v: &[u8]) {
        // SAFETY: live context; copied by SQLite. An empty slice gives an empty BLOB.
        unsafe {
            if v.is_empty() {
                ffi::sqlite3_result_zeroblob(self.raw, 0)
            } else {
                ffi::sqlite3_result_blob64(
                    self.raw,
                    v.as_ptr().cast(),
                    v.len() as u64,
                    ffi::SQLITE_TRANSIENT(),
                )
            }
        }
    }
    /// Fails the call with `message` (SQLITE_ERROR).
    pub fn set_error(&mut self, message: &str) {
        // SAFETY: live context; the message is copied by SQLite.
        unsafe {
            ffi::sqlite3_result_error(self.raw, message.as_ptr().cast(), message.len() as c_int)
        }
    }
    /// Fails the call with an SQLite error code (and SQLite's message for it).
    pub fn set_error_code(&mut self, code: c_int) {
        // SAFETY: live context.
        unsafe { ffi::sqlite3_result_error_code(self.raw, code) }
    }
    /// The connection that runs this function (re-entrant queries use it).
    pub fn db_handle(&self) -> *mut ffi::sqlite3 {
        // SAFETY: live context.
        unsafe { ffi::sqlite3_context_db_handle(self.raw) }
    }
}

/// The arguments SQLite passed to a callback, as `ValueRef`s valid during it.
pub(super) fn args<'a>(argc: c_int, argv: *mut *mut ffi::sqlite3_value) -> Vec<ValueRef<'a>> {
    if argv.is_null() || argc <= 0 {
        return Vec::new();
    }
    // SAFETY: SQLite passes argc valid value pointers.
    unsafe { std::slice::from_raw_parts(argv, argc as usize) }
        .iter()
        .map(|&raw| ValueRef {
            raw,
            _life: PhantomData,
        })
        .collect()
}

fn c_name(name: &str) -> Result<CString> {
    CString::new(name)
        .map_err(|_| Error::new(ffi::SQLITE_ERROR, "function name contains a NUL character"))
}

const PANIC_MESSAGE: &str = "a user-defined function panicked";

/// Registers a scalar function (replacing one with the same name and arity).
pub fn create_scalar<F>(
    conn: &Connection,
    name: &str,
    n_args: c_int,
    flags: FunctionFlags,
    f: F,
) -> Result<()>
where
    F: FnMut(&mut Context, &[ValueRef<'_>]) + 'static,
{
    unsafe extern "C" fn x_func<F: FnMut(&mut Context, &[ValueRef<'_>]) + 'static>(
        ctx: *mut ffi::sqlite3_context,
        argc: c_int,
        argv: *mut *mut ffi::sqlite3_value,
    ) {
        let mut context = Context { raw: ctx };
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: user data is the Box<F> registered below, alive until xDestroy.
            let f = unsafe { &mut *ffi::sqlite3_user_data(ctx).cast::<F>() };
            f(&mut context, &args(argc, argv));
        }));
        if outcome.is_err() {
            context.set_error(PANIC_MESSAGE);
        }
    }
    unsafe extern "C" fn destroy<T>(p: *mut c_void) {
        // SAFETY: p is the Box<T> leaked at registration; SQLite calls this once.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            drop(unsafe { Box::from_raw(p.cast::<T>()) })
        }));
    }
    let name = c_name(name)?;
    let data = Box::into_raw(Box::new(f));
    // SAFETY: valid connection; on failure SQLite calls xDestroy itself.
    let rc = unsafe {
        ffi::sqlite3_create_function_v2(
            conn.raw(),
            name.as_ptr(),
            n_args,
            flags.bits(),
            data.cast(),
            Some(x_func::<F>),
            None,
            None,
            Some(destroy::<F>),
        )
    };
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(conn.last_error(rc))
    }
}

/// An aggregate (and, with `inverse`/`value`, window) function.
pub trait Aggregate: 'static {
    /// One group's running state.
    type State;
    /// A new group's state; `None` when the call failed (an error is set on `ctx`).
    fn start(&mut self, ctx: &mut Context) -> Option<Self::State>;
    fn step(&mut self, ctx: &mut Context, state: &mut Self::State, args: &[ValueRef<'_>]);
    fn inverse(&mut self, ctx: &mut Context, state: &mut Self::State, args: &[ValueRef<'_>]);
    /// The current value of a window (xValue).
    fn value(&mut self, ctx: &mut Context, state: &mut Self::State);
    /// The final value (xFinal); `state` is `None` when the group had no rows.
    fn finish(&mut self, ctx: &mut Context, state: Option<Self::State>);
}

/// The aggregate context slot holding a group's boxed state.
type Slot<S> = *mut S;

/// # Safety
/// `ctx` must be the live context of an aggregate callback.
unsafe fn slot<S>(ctx: *mut ffi::sqlite3_context, allocate: bool) -> *mut Slot<S> {
    let size = if allocate {
        std::mem::size_of::<Slot<S>>() as c_int
    } else {
        0
    };
    // SAFETY: per contract; SQLite zero-fills the slot on first allocation.
    unsafe { ffi::sqlite3_aggregate_context(ctx, size).cast::<Slot<S>>() }
}

/// Registers an aggregate function; with `window` true also as a window function
/// (xInverse/xValue).
pub fn create_aggregate<A: Aggregate>(
    conn: &Connection,
    name: &str,
    n_args: c_int,
    flags: FunctionFlags,
    aggregate: A,
    window: bool,
) -> Result<()> {
    /// The group's state, created on its first row.
    unsafe fn state<'s, A: Aggregate>(
        agg: &mut A,
        ctx: *mut ffi::sqlite3_context,
    ) -> Option<&'s mut A::State> {
        // SAFETY: live aggregate context.
        let slot = unsafe { slot::<A::State>(ctx, true) };
        if slot.is_null() {
            // SAFETY: live context.
            unsafe { ffi::sqlite3_result_error_nomem(ctx) };
            return None;
        }
        // SAFETY: slot points to our zero-initialised pointer-sized cell.
        unsafe {
            if (*slot).is_null() {
                let s = agg.start(&mut Context { raw: ctx })?;
                *slot = Box::into_raw(Box::new(s));
            }
            Some(&mut **slot)
        }
    }
    unsafe fn user<'u, A>(ctx: *mut ffi::sqlite3_context) -> &'u mut A {
        // SAFETY: user data is the Box<A> registered below, alive until xDestroy.
        unsafe { &mut *ffi::sqlite3_user_data(ctx).cast::<A>() }
    }
    unsafe extern "C" fn x_step<A: Aggregate>(
        ctx: *mut ffi::sqlite3_context,
        argc: c_int,
        argv: *mut *mut ffi::sqlite3_value,
    ) {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: callback contract.
            let agg = unsafe { user::<A>(ctx) };
            // SAFETY: callback contract.
            if let Some(s) = unsafe { state::<A>(agg, ctx) } {
                agg.step(&mut Context { raw: ctx }, s, &args(argc, argv));
            }
        }));
        if outcome.is_err() {
            Context { raw: ctx }.set_error(PANIC_MESSAGE);
        }
    }
    unsafe extern "C" fn x_inverse<A: Aggregate>(
        ctx: *mut ffi::sqlite3_context,
        argc: c_int,
        argv: *mut *mut ffi::sqlite3_value,
    ) {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: callback contract.
            let agg = unsafe { user::<A>(ctx) };
            // SAFETY: callback contract.
            if let Some(s) = unsafe { state::<A>(agg, ctx) } {
                agg.inverse(&mut Context { raw: ctx }, s, &args(argc, argv));
            }
        }));
        if outcome.is_err() {
            Context { raw: ctx }.set_error(PANIC_MESSAGE);
        }
    }
    unsafe extern "C" fn x_value<A: Aggregate>(ctx: *mut ffi::sqlite3_context) {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: callback contract.
            let agg = unsafe { user::<A>(ctx) };
            // SAFETY: callback contract.
            if let Some(s) = unsafe { state::<A>(agg, ctx) } {
                agg.value(&mut Context { raw: ctx }, s);
            }
        }));
        if outcome.is_err() {
            Context { raw: ctx }.set_error(PANIC_MESSAGE);
        }
    }
    unsafe extern "C" fn x_final<A: Aggregate>(ctx: *mut ffi::sqlite3_context) {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            // SAFETY: callback contract.
            let agg = unsafe { user::<A>(ctx) };
            // SAFETY: no allocation: null when the group never had a row.
            let slot = unsafe { slot::<A::State>(ctx, false) };
            let state = if slot.is_null() {
                None
            } else {
                // SAFETY: our slot; taken exactly once here, then nulled.
                unsafe {
                    let p = std::mem::replace(&mut *slot, ptr::null_mut());
                    if p.is_null() {
                        None
                    } else {
                        Some(*Box::from_raw(p))
                    }
                }
            };
            agg.finish(&mut Context { raw: ctx }, state);
        }));
        if outcome.is_err() {
            Context { raw: ctx }.set_error(PANIC_MESSAGE);
        }
    }
    unsafe extern "C" fn destroy<T>(p: *mut c_void) {
        // SAFETY: p is the Box<T> leaked at registration; SQLite calls this once.
        let _ = catch_unwind(AssertUnwindSafe(|| {
            drop(unsafe { Box::from_raw(p.cast::<T>()) })
        }));
    }
    let name = c_name(name)?;
    let data = Box::into_raw(Box::new(aggregate));
    // SAFETY: valid connection; on failure SQLite calls xDestroy itself.
    let rc = unsafe {
        ffi::sqlite3_create_window_function(
            conn.raw(),
            name.as_ptr(),
            n_args,
            flags.bits(),
            data.cast(),
            Some(x_step::<A>),
            Some(x_final::<A>),
            if window { Some(x_value::<A>) } else { None },
            if window { Some(x_inverse::<A>) } else { None },
            Some(destroy::<A>),
        )
    };
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(conn.last_error(rc))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::OpenFlags;

    fn memory() -> Connection {
        Connection::open(":memory:", OpenFlags::default(), None).expect("open")
    }

    fn query_i64(conn: &Connection, sql: &str) -> Result<i64> {
        let (stmt, _) = conn.prepare(sql, false)?;
        let mut stmt = stmt.expect("statement");
        assert!(stmt.step()?);
        Ok(stmt.column_int64(0))
    }

    #[test]
    fn a_panicking_function_becomes_an_sql_error() {
        let conn = memory();
        create_scalar(&conn, "boom", 0, FunctionFlags::default(), |_, _| {
            panic!("boom")
        })
        .unwrap();
        let err = query_i64(&conn, "select boom()").unwrap_err();
        assert_eq!(err.message, PANIC_MESSAGE);
    }

    struct Sum;
    impl Aggregate for Sum {
        type State = i64;
        fn start(&mut self, _: &mut Context) -> Option<i64> {
            Some(0)
        }
        fn step(&mut self, _: &mut Context, s: &mut i64, a: &[ValueRef<'_>]) {
            *s += a[0].int64();
        }
        fn inverse(&mut self, _: &mut Context, s: &mut i64, a: &[ValueRef<'_>]) {
            *s -= a[0].int64();
        }
        fn value(&mut self, ctx: &mut Context, s: &mut i64) {
            ctx.set_int64(*s);
        }
        fn finish(&mut self, ctx: &mut Context, s: Option<i64>) {
            ctx.set_int64(s.unwrap_or(-1));
        }
    }

    #[test]
    fn aggregates_and_windows() {
        let conn = memory();
        create_aggregate(&conn, "mysum", 1, FunctionFlags::default(), Sum, true).unwrap();
        conn.exec_each(
            "create table t(x); insert into t values (1),(2),(3)",
            |_| Ok(()),
        )
        .unwrap();
        assert_eq!(query_i64(&conn, "select mysum(x) from t").unwrap(), 6);
        assert_eq!(
            query_i64(&conn, "select mysum(x) from t where x > 5").unwrap(),
            -1,
            "no rows"
        );
        let (stmt, _) = conn
            .prepare(
                "select mysum(x) over (order by x rows between 1 preceding and current row) from t",
                false,
            )
            .unwrap();
        let mut stmt = stmt.unwrap();
        let mut got = vec![];
        while stmt.step().unwrap() {
            got.push(stmt.column_int64(0));
        }
        assert_eq!(got, vec![1, 3, 5]);
    }
}
