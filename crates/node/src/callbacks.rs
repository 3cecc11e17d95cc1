//! The plumbing every JS callback SQLite calls shares (user functions and aggregates,
//! virtual-table modules and cursors, the key lifecycle's progress callback): handle
//! scopes, references that keep JS values alive, calling a function, converting values
//! both ways, and the exception a callback threw, kept to be rethrown when the SQLite call
//! that ran it returns to JS (docs/better-sqlite3-behaviour.md §8.1.9).
//!
//! A JS exception thrown by user code is taken out of the engine
//! ([`CallbackShared::stash_pending_exception`]), SQLite is told the call failed, and the
//! exception is thrown again, unchanged, when the SQLite call returns to JS.

use super::js::{self, check, JsResult, NotSql, SqlValue, Thrown};
use cipherlite_sqlite::{
    function::{Context, ValueRef},
    ColumnType,
};
use napi::sys;
use std::{
    cell::Cell,
    ptr,
    rc::{Rc, Weak},
};

/// Whether the module instance's environment can still run JS: once it is stopping (a
/// worker being terminated, or exiting), nothing may do any more work for it.
pub(crate) struct Lifecycle {
    stopping: Cell<bool>,
}

impl Lifecycle {
    pub fn new() -> Rc<Lifecycle> {
        Rc::new(Lifecycle {
            stopping: Cell::new(false),
        })
    }

    pub fn is_stopping(&self) -> bool {
        self.stopping.get()
    }

    pub fn set_stopping(&self) {
        self.stopping.set(true);
    }
}

/// What a connection shares with the JS callbacks registered on it: the environment, the
/// instance's [`Lifecycle`], and the exception a callback threw while SQLite was running,
/// to be rethrown when the SQLite call returns (it fails with a generic error meanwhile).
pub(crate) struct CallbackShared {
    env: sys::napi_env,
    lifecycle: Rc<Lifecycle>,
    pending_exception: Cell<sys::napi_ref>,
}

impl CallbackShared {
    pub fn new(env: sys::napi_env, lifecycle: Rc<Lifecycle>) -> Rc<CallbackShared> {
        Rc::new(CallbackShared {
            env,
            lifecycle,
            pending_exception: Cell::new(ptr::null_mut()),
        })
    }

    /// Re-raises the saved JS exception (see `pending_exception`).
    pub fn rethrow_pending(&self) {
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
                self.lifecycle.set_stopping();
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
}

impl Drop for CallbackShared {
    fn drop(&mut self) {
        // SAFETY: a reference of self.env, which outlives its objects' finalizers;
        // deleted once.
        self.clear_stale_exception();
    }
}

/// What every JS callback needs: its env and its connection's [`CallbackShared`] (for
/// exception stashing); gone once the connection is.
#[derive(Clone)]
pub(crate) struct CallbackEnv {
    pub env: sys::napi_env,
    shared: Weak<CallbackShared>,
}

impl CallbackEnv {
    pub fn new(shared: &Rc<CallbackShared>) -> CallbackEnv {
        CallbackEnv {
            env: shared.env,
            shared: Rc::downgrade(shared),
        }
    }

    /// False once a callback of the current statement has thrown: SQLite is unwinding
    /// and no more user code may run.
    pub fn may_call_js(&self) -> bool {
        self.shared
            .upgrade()
            .is_some_and(|s| !s.has_stashed_exception() && !s.lifecycle.is_stopping())
    }

    /// Records the failure of a callback: a JS exception (pending now, or made from
    /// `err`) is stashed for rethrow, and the SQL call fails.
    pub fn fail(&self, ctx: &mut Context, err: Thrown) {
        self.stash(err);
        ctx.set_error("");
    }

    /// Stashes the JS exception of a failed callback (pending now, or made from `err`)
    /// for rethrow; the caller then fails the SQLite call its own way.
    pub fn stash(&self, err: Thrown) {
        if let Some(shared) = self.shared.upgrade() {
            match err {
                Thrown::Pending => {}
                other => {
                    let _ = js::throw(self.env, ptr::null_mut(), other);
                }
            }
            shared.stash_pending_exception();
        }
    }
}

/// Converts a function argument to JS: better-sqlite3's type mapping.
///
/// # Safety
/// On the JS thread of `env`, inside a handle scope.
pub(crate) unsafe fn value_to_js(
    env: sys::napi_env,
    v: &ValueRef<'_>,
    safe_integers: bool,
) -> JsResult<sys::napi_value> {
    let mut out = ptr::null_mut();
    // SAFETY: per contract.
    unsafe {
        match v.value_type() {
            ColumnType::Integer => {
                if safe_integers {
                    check(sys::napi_create_bigint_int64(env, v.int64(), &mut out))?;
                } else {
                    check(sys::napi_create_double(env, v.int64() as f64, &mut out))?;
                }
            }
            ColumnType::Float => check(sys::napi_create_double(env, v.double(), &mut out))?,
            ColumnType::Text => {
                let text = String::from_utf8_lossy(v.text());
                out = js::string(env, &text);
            }
            ColumnType::Blob => {
                let bytes = v.blob();
                let mut data = ptr::null_mut();
                check(sys::napi_create_buffer_copy(
                    env,
                    bytes.len(),
                    bytes.as_ptr().cast(),
                    &mut data,
                    &mut out,
                ))?;
            }
            ColumnType::Null => out = js::null(env),
        }
    }
    Ok(out)
}

/// Sets the SQL result from a JS value returned by user code; `what` starts the error
/// message (`User-defined function f() returned` + ` an invalid value`).
///
/// # Safety
/// On the JS thread of `env`; `v` a value of the current scope.
pub(crate) unsafe fn set_result_from_js(
    env: sys::napi_env,
    ctx: &mut Context,
    v: sys::napi_value,
    what: &str,
) -> JsResult<()> {
    let mut text = Vec::new();
    // SAFETY: per contract.
    match unsafe { js::sql_value(env, v, &mut text)? } {
        Ok(SqlValue::Real(d)) => ctx.set_double(d),
        Ok(SqlValue::Integer(i)) => ctx.set_int64(i),
        Ok(SqlValue::Text) => ctx.set_text(&text),
        Ok(SqlValue::Blob(bytes)) => ctx.set_blob(bytes),
        Ok(SqlValue::Null) => ctx.set_null(),
        Err(NotSql::BigIntTooBig) => {
            return js::range_error(format!("{what} a bigint that was too big"))
        }
        Err(NotSql::WrongType) => return js::type_error(format!("{what} an invalid value")),
    }
    Ok(())
}

/// A handle scope for the duration of one callback, so that values made per row don't
/// pile up until the statement finishes.
pub(crate) struct HandleScope {
    env: sys::napi_env,
    scope: sys::napi_handle_scope,
}

impl HandleScope {
    pub fn open(env: sys::napi_env) -> Self {
        let mut scope = ptr::null_mut();
        // SAFETY: on the JS thread.
        unsafe { sys::napi_open_handle_scope(env, &mut scope) };
        HandleScope { env, scope }
    }
}

impl Drop for HandleScope {
    fn drop(&mut self) {
        if !self.scope.is_null() {
            // SAFETY: the scope opened in `open`, closed once, in LIFO order.
            unsafe { sys::napi_close_handle_scope(self.env, self.scope) };
        }
    }
}

/// A strong reference to a JS value, released on drop.
pub(crate) struct JsRef {
    env: sys::napi_env,
    reference: sys::napi_ref,
}

impl JsRef {
    pub fn new(env: sys::napi_env, v: sys::napi_value) -> JsResult<JsRef> {
        let mut reference = ptr::null_mut();
        // SAFETY: on the JS thread; v is a live value.
        check(unsafe { sys::napi_create_reference(env, v, 1, &mut reference) })?;
        Ok(JsRef { env, reference })
    }

    pub fn get(&self) -> sys::napi_value {
        let mut v = ptr::null_mut();
        // SAFETY: live reference of this env.
        unsafe { sys::napi_get_reference_value(self.env, self.reference, &mut v) };
        v
    }
}

impl Drop for JsRef {
    fn drop(&mut self) {
        // SAFETY: created in this env, deleted once.
        unsafe { sys::napi_delete_reference(self.env, self.reference) };
    }
}

/// Calls `f` with `this === undefined`.
///
/// # Safety
/// On the JS thread, inside a handle scope.
pub(crate) unsafe fn call(
    env: sys::napi_env,
    f: sys::napi_value,
    args: &[sys::napi_value],
) -> JsResult<sys::napi_value> {
    let mut out = ptr::null_mut();
    // SAFETY: per contract.
    unsafe {
        check(sys::napi_call_function(
            env,
            js::undefined(env),
            f,
            args.len(),
            args.as_ptr(),
            &mut out,
        ))?
    };
    Ok(out)
}

/// One holder object per value we must keep (values of any type, references only to
/// objects). The value is defined, not assigned: no setter on `Object.prototype` runs.
pub(crate) fn holder(env: sys::napi_env, v: sys::napi_value) -> JsResult<JsRef> {
    // SAFETY: on the JS thread.
    unsafe {
        let mut obj = ptr::null_mut();
        check(sys::napi_create_object(env, &mut obj))?;
        check(js::define_value(env, obj, c"v", v))?;
        JsRef::new(env, obj)
    }
}

pub(crate) fn holder_get(r: &JsRef) -> JsResult<sys::napi_value> {
    let mut v = ptr::null_mut();
    // SAFETY: on the JS thread; r holds an object.
    check(unsafe { sys::napi_get_named_property(r.env, r.get(), c"v".as_ptr(), &mut v) })?;
    Ok(v)
}

pub(crate) fn holder_set(r: &JsRef, v: sys::napi_value) -> JsResult<()> {
    // SAFETY: on the JS thread; r holds an object.
    check(unsafe { sys::napi_set_named_property(r.env, r.get(), c"v".as_ptr(), v) })
}

pub(crate) fn js_args(
    env: sys::napi_env,
    first: Option<sys::napi_value>,
    args: &[ValueRef<'_>],
    safe: bool,
) -> JsResult<Vec<sys::napi_value>> {
    let mut out = Vec::with_capacity(args.len() + 1);
    out.extend(first);
    for a in args {
        // SAFETY: on the JS thread inside the callback's handle scope.
        out.push(unsafe { value_to_js(env, a, safe)? });
    }
    Ok(out)
}
