//! `db.function()` and `db.aggregate()`: JS functions called by SQLite.
//!
//! A JS exception thrown by user code is taken out of the engine (`DbShared::
//! stash_pending_exception`), SQLite is told the call failed, and the exception is thrown
//! again, unchanged, when the SQLite call that ran the function returns to JS.

use super::{
    database::{Database, DbShared},
    js::{self, check, JsAny, JsResult, NotSql, SqlValue, Thrown},
};
use crate::sqlite::Connection;
use crate::sqlite::{
    function::{self, Aggregate, Context, FunctionFlags, ValueRef},
    ColumnType,
};
use napi::sys::{self, ValueType as T};
use napi_derive::napi;
use std::{
    ffi::c_int,
    ptr,
    rc::{Rc, Weak},
};

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

/// What every JS callback needs: its env and the database (for exception stashing).
#[derive(Clone)]
pub(crate) struct CallbackEnv {
    pub env: sys::napi_env,
    pub db: Weak<DbShared>,
}

impl CallbackEnv {
    /// False once a callback of the current statement has thrown: SQLite is unwinding
    /// and no more user code may run.
    pub fn may_call_js(&self) -> bool {
        self.db
            .upgrade()
            .is_some_and(|db| !db.has_stashed_exception() && !db.instance.is_stopping())
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
        if let Some(db) = self.db.upgrade() {
            match err {
                Thrown::Pending => {}
                other => {
                    let _ = js::throw(self.env, ptr::null_mut(), other);
                }
            }
            db.stash_pending_exception();
        }
    }
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

/// One holder object per value we must keep (values of any type, references only to objects).
fn holder(env: sys::napi_env, v: sys::napi_value) -> JsResult<JsRef> {
    // SAFETY: on the JS thread.
    unsafe {
        let mut obj = ptr::null_mut();
        check(sys::napi_create_object(env, &mut obj))?;
        check(sys::napi_set_named_property(env, obj, c"v".as_ptr(), v))?;
        JsRef::new(env, obj)
    }
}

fn holder_get(r: &JsRef) -> JsResult<sys::napi_value> {
    let mut v = ptr::null_mut();
    // SAFETY: on the JS thread; r holds an object.
    check(unsafe { sys::napi_get_named_property(r.env, r.get(), c"v".as_ptr(), &mut v) })?;
    Ok(v)
}

fn holder_set(r: &JsRef, v: sys::napi_value) -> JsResult<()> {
    // SAFETY: on the JS thread; r holds an object.
    check(unsafe { sys::napi_set_named_property(r.env, r.get(), c"v".as_ptr(), v) })
}

fn js_args(
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

struct JsAggregate {
    cb: CallbackEnv,
    what: String,
    safe_integers: bool,
    /// The `start` option: a function to call per group, or a value (in a holder).
    start: Rc<JsRef>,
    start_is_function: bool,
    step: Rc<JsRef>,
    inverse: Option<Rc<JsRef>>,
    result: Option<Rc<JsRef>>,
}

struct Accumulator {
    value: JsRef,
    is_window: bool,
}

impl JsAggregate {
    fn call_step(
        &mut self,
        ctx: &mut Context,
        acc: &mut Accumulator,
        f: &JsRef,
        args: &[ValueRef<'_>],
    ) {
        if !self.cb.may_call_js() {
            ctx.set_error("");
            return;
        }
        let env = self.cb.env;
        let _scope = HandleScope::open(env);
        let run = || -> JsResult<()> {
            let current = holder_get(&acc.value)?;
            let argv = js_args(env, Some(current), args, self.safe_integers)?;
            // SAFETY: inside the scope.
            let ret = unsafe { call(env, f.get(), &argv)? };
            // SAFETY: ret is a live value.
            if unsafe { js::type_of(env, ret) } != T::napi_undefined {
                holder_set(&acc.value, ret)?;
            }
            Ok(())
        };
        if let Err(e) = run() {
            self.cb.fail(ctx, e);
        }
    }

    fn produce(&mut self, ctx: &mut Context, acc: &Accumulator) {
        if !self.cb.may_call_js() {
            ctx.set_error("");
            return;
        }
        let env = self.cb.env;
        let _scope = HandleScope::open(env);
        let outcome = (|| -> JsResult<()> {
            let mut value = holder_get(&acc.value)?;
            if let Some(result) = &self.result {
                // SAFETY: inside the scope.
                value = unsafe { call(env, result.get(), &[value])? };
            }
            // SAFETY: value is live in this scope.
            unsafe { set_result_from_js(env, ctx, value, &self.what) }
        })();
        if let Err(e) = outcome {
            self.cb.fail(ctx, e);
        }
    }
}

impl Aggregate for JsAggregate {
    type State = Accumulator;

    fn start(&mut self, ctx: &mut Context) -> Option<Accumulator> {
        if !self.cb.may_call_js() {
            ctx.set_error("");
            return None;
        }
        let env = self.cb.env;
        let _scope = HandleScope::open(env);
        let run = || -> JsResult<Accumulator> {
            let initial = if self.start_is_function {
                // SAFETY: inside the scope.
                unsafe { call(env, self.start.get(), &[])? }
            } else {
                holder_get(&self.start)?
            };
            Ok(Accumulator {
                value: holder(env, initial)?,
                is_window: false,
            })
        };
        match run() {
            Ok(acc) => Some(acc),
            Err(e) => {
                self.cb.fail(ctx, e);
                None
            }
        }
    }

    fn step(&mut self, ctx: &mut Context, acc: &mut Accumulator, args: &[ValueRef<'_>]) {
        // The step function outlives the call; clone its handle out of self.
        let step = JsRef::new(self.cb.env, self.step.get());
        match step {
            Ok(f) => self.call_step(ctx, acc, &f, args),
            Err(e) => self.cb.fail(ctx, e),
        }
    }

    fn inverse(&mut self, ctx: &mut Context, acc: &mut Accumulator, args: &[ValueRef<'_>]) {
        let Some(inverse) = self
            .inverse
            .as_ref()
            .map(|f| JsRef::new(self.cb.env, f.get()))
        else {
            return;
        };
        match inverse {
            Ok(f) => self.call_step(ctx, acc, &f, args),
            Err(e) => self.cb.fail(ctx, e),
        }
    }

    fn value(&mut self, ctx: &mut Context, acc: &mut Accumulator) {
        acc.is_window = true;
        self.produce(ctx, acc);
    }

    fn finish(&mut self, ctx: &mut Context, acc: Option<Accumulator>) {
        let acc = match acc {
            Some(acc) => acc,
            // No row in this group: better-sqlite3 still starts an accumulator.
            None => match self.start(ctx) {
                Some(acc) => acc,
                None => return,
            },
        };
        if !acc.is_window {
            self.produce(ctx, &acc);
        }
    }
}

impl DbShared {
    /// better-sqlite3's checks before registering a function, aggregate or table: open,
    /// not busy, no iterator running.
    pub(crate) fn require_can_register(&self) -> JsResult<()> {
        self.require_open()?;
        self.require_not_busy()?;
        if self.iterators.get() > 0 {
            return js::type_error(super::database::MSG_DB_BUSY);
        }
        Ok(())
    }
}

/// Functions and aggregates share SQLite's namespace: a name (case-insensitive) and an
/// arity.
fn function_key(name: &str, arg_count: i32) -> String {
    format!("function {}/{arg_count}", name.to_lowercase())
}

pub(crate) fn safe_integers(db: &DbShared, option: u32) -> bool {
    if option < 2 {
        option == 1
    } else {
        db.safe_integers.get()
    }
}

#[napi]
impl Database {
    /// `db.function(name, options, fn)` after lib/methods/function.js validated it.
    /// `safe_integers` is 0/1, or 2 for "the database default now".
    #[napi(catch_unwind)]
    pub fn function(
        &self,
        f: JsAny,
        name: String,
        arg_count: i32,
        safe_integers_option: u32,
        deterministic: bool,
        direct_only: bool,
    ) -> napi::Result<()> {
        let db = &self.shared;
        let run = || -> JsResult<()> {
            db.require_can_register()?;
            let env = db.env;
            let cb = CallbackEnv {
                env,
                db: std::rc::Rc::downgrade(db),
            };
            let func = Rc::new(JsRef::new(env, f.0)?);
            let safe = safe_integers(db, safe_integers_option);
            let what = format!("User-defined function {name}() returned");
            let flags = FunctionFlags {
                deterministic,
                direct_only,
                ..FunctionFlags::default()
            };
            // Kept to register it again if the connection is reopened (after a rekey).
            let registration_key = function_key(&name, arg_count);
            let register = move |conn: &Connection| -> JsResult<()> {
                let (cb, func, what) = (cb.clone(), func.clone(), what.clone());
                function::create_scalar(
                    conn,
                    &name,
                    arg_count as c_int,
                    flags,
                    move |ctx, args| {
                        if !cb.may_call_js() {
                            ctx.set_error("");
                            return;
                        }
                        let _scope = HandleScope::open(env);
                        let outcome = (|| -> JsResult<()> {
                            let argv = js_args(env, None, args, safe)?;
                            // SAFETY: inside the scope.
                            let ret = unsafe { call(env, func.get(), &argv)? };
                            // SAFETY: ret is live in this scope.
                            unsafe { set_result_from_js(env, ctx, ret, &what) }
                        })();
                        if let Err(e) = outcome {
                            cb.fail(ctx, e);
                        }
                    },
                )?;
                Ok(())
            };
            db.with_conn(|conn| register(conn))?;
            db.remember_registration(registration_key, Rc::new(register));
            db.has_js_callbacks.set(true);
            Ok(())
        };
        run().map_err(|e| db.throw(e))
    }

    /// `db.aggregate(name, options)` after lib/methods/aggregate.js validated it.
    #[napi(catch_unwind)]
    #[allow(clippy::too_many_arguments)]
    pub fn aggregate(
        &self,
        start: JsAny,
        step: JsAny,
        inverse: JsAny,
        result: JsAny,
        name: String,
        arg_count: i32,
        safe_integers_option: u32,
        deterministic: bool,
        direct_only: bool,
    ) -> napi::Result<()> {
        let db = &self.shared;
        let run = || -> JsResult<()> {
            db.require_can_register()?;
            let env = db.env;
            let is_fn = |v: JsAny| {
                // SAFETY: v is a value of this call.
                unsafe { js::type_of(env, v.0) == T::napi_function }
            };
            let start_is_function = is_fn(start);
            let cb = CallbackEnv {
                env,
                db: std::rc::Rc::downgrade(db),
            };
            let what = format!("User-defined function {name}() returned");
            let safe = safe_integers(db, safe_integers_option);
            let start = Rc::new(if start_is_function {
                JsRef::new(env, start.0)?
            } else {
                holder(env, start.0)?
            });
            let step = Rc::new(JsRef::new(env, step.0)?);
            let inverse = if is_fn(inverse) {
                Some(Rc::new(JsRef::new(env, inverse.0)?))
            } else {
                None
            };
            let result = if is_fn(result) {
                Some(Rc::new(JsRef::new(env, result.0)?))
            } else {
                None
            };
            let window = inverse.is_some();
            let flags = FunctionFlags {
                deterministic,
                direct_only,
                ..FunctionFlags::default()
            };
            // Kept to register it again if the connection is reopened (after a rekey).
            let registration_key = function_key(&name, arg_count);
            let register = move |conn: &Connection| -> JsResult<()> {
                let aggregate = JsAggregate {
                    cb: cb.clone(),
                    what: what.clone(),
                    safe_integers: safe,
                    start: start.clone(),
                    start_is_function,
                    step: step.clone(),
                    inverse: inverse.clone(),
                    result: result.clone(),
                };
                Ok(function::create_aggregate(
                    conn,
                    &name,
                    arg_count as c_int,
                    flags,
                    aggregate,
                    window,
                )?)
            };
            db.with_conn(|conn| register(conn))?;
            db.remember_registration(registration_key, Rc::new(register));
            db.has_js_callbacks.set(true);
            Ok(())
        };
        run().map_err(|e| db.throw(e))
    }
}
