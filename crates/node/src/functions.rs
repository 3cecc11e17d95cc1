//! `db.function()` and `db.aggregate()`: JS functions called by SQLite. How their
//! exceptions travel, and the rest of the plumbing they share with virtual tables, is in
//! `callbacks.rs`.

use super::{
    callbacks::{
        call, holder, holder_get, holder_set, js_args, set_result_from_js, CallbackEnv,
        HandleScope, JsRef,
    },
    database::Database,
    js::{self, JsAny, JsResult},
};
use cipherlite_sqlite::function::{self, Aggregate, Context, FunctionFlags, ValueRef};
use cipherlite_sqlite::Connection;
use napi::sys::ValueType as T;
use napi_derive::napi;
use std::{ffi::c_int, rc::Rc};

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

/// Functions and aggregates share SQLite's namespace: a name (case-insensitive) and an
/// arity.
fn function_key(name: &str, arg_count: i32) -> String {
    format!("function {}/{arg_count}", name.to_lowercase())
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
            db.require_idle()?;
            let env = db.env();
            let cb = db.callback_env();
            let func = Rc::new(JsRef::new(env, f.0)?);
            let safe = db.safe_integers_option(safe_integers_option);
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
            db.note_js_callbacks();
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
            db.require_idle()?;
            let env = db.env();
            let is_fn = |v: JsAny| {
                // SAFETY: v is a value of this call.
                unsafe { js::type_of(env, v.0) == T::napi_function }
            };
            let start_is_function = is_fn(start);
            let cb = db.callback_env();
            let what = format!("User-defined function {name}() returned");
            let safe = db.safe_integers_option(safe_integers_option);
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
            db.note_js_callbacks();
            Ok(())
        };
        run().map_err(|e| db.throw(e))
    }
}
