//! Raw Node-API entry points for the per-row hot paths (`run`, `get`, `all`, `next`, …).
//!
//! napi-rs's generated method glue costs more per call than better-sqlite3 pays (it tracks
//! borrowed values per call for async safety; docs/benchmark.md has the figures). The
//! calls on these paths are synchronous and borrow nothing past their return, so they are
//! plain C callbacks here: `fast.run(statementId, params)` and so on, on an object the
//! module exports as `fast`. They find their object by id in the thread's registry
//! (`registry.rs`) instead of unwrapping a JS object.

use super::{
    instance::Instance,
    js::{self, JsResult},
    results::LAYOUT,
    statement::StatementCore,
};
use napi::{bindgen_prelude::Object, sys, Env, JsValue};
use napi_derive::napi;
use std::{
    ffi::c_char,
    panic::{catch_unwind, AssertUnwindSafe},
    ptr,
};

/// The id (a small integer) a JS caller passed.
///
/// # Safety
/// On the JS thread of `env`.
unsafe fn id(env: sys::napi_env, value: sys::napi_value) -> Option<u32> {
    let mut id = 0u32;
    // SAFETY: per contract; a non-number fails with a status, leaving no exception.
    (unsafe { sys::napi_get_value_uint32(env, value, &mut id) } == sys::Status::napi_ok)
        .then_some(id)
}

/// The callback's arguments (missing ones are `undefined`).
///
/// # Safety
/// Inside a Node-API callback.
unsafe fn args<const N: usize>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> ([sys::napi_value; N], *mut std::ffi::c_void) {
    let mut argv = [ptr::null_mut(); N];
    let mut argc = N;
    let mut data = ptr::null_mut();
    // SAFETY: per contract; argv has room for N values.
    unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut argc,
            argv.as_mut_ptr(),
            ptr::null_mut(),
            &mut data,
        );
        let undefined = js::undefined(env);
        for v in argv.iter_mut().skip(argc) {
            *v = undefined;
        }
    }
    (argv, data)
}

/// The module instance a raw entry point was created for (its callback data).
///
/// # Safety
/// `data` is the callback data of a function made by `install_fast_paths`: a pointer to
/// the instance, alive as long as the env that can call the function.
unsafe fn instance<'a>(data: *mut std::ffi::c_void) -> Option<&'a Instance> {
    // SAFETY: per contract.
    unsafe { data.cast::<Instance>().cast_const().as_ref() }
}

/// How many arguments a call takes without a heap allocation.
const INLINE_ARGS: usize = 16;

/// A callback's arguments: inline up to `INLINE_ARGS`, on the heap beyond (a statement
/// call with many parameters).
struct Args {
    inline: [sys::napi_value; INLINE_ARGS],
    /// How many of `inline` are arguments (when `heap` is not used).
    len: usize,
    /// All the arguments, when there are more than `INLINE_ARGS`.
    heap: Option<Vec<sys::napi_value>>,
}

impl Args {
    fn as_slice(&self) -> &[sys::napi_value] {
        match &self.heap {
            Some(all) => all,
            None => &self.inline[..self.len.min(INLINE_ARGS)],
        }
    }
}

/// All of the callback's arguments.
///
/// Inlined so the arguments are read into the caller's frame instead of copied out of
/// this one (~15 ns of every `run`/`get`).
///
/// # Safety
/// Inside a Node-API callback.
#[inline(always)]
unsafe fn all_args(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> (Args, *mut std::ffi::c_void) {
    let mut args = Args {
        inline: [ptr::null_mut(); INLINE_ARGS],
        len: INLINE_ARGS,
        heap: None,
    };
    let mut data = ptr::null_mut();
    // SAFETY: per contract; `inline` has room for INLINE_ARGS values, `len` gets the
    // real count.
    unsafe {
        sys::napi_get_cb_info(
            env,
            info,
            &mut args.len,
            args.inline.as_mut_ptr(),
            ptr::null_mut(),
            &mut data,
        );
        if args.len > INLINE_ARGS {
            let mut all = vec![ptr::null_mut(); args.len];
            let mut n = args.len;
            sys::napi_get_cb_info(
                env,
                info,
                &mut n,
                all.as_mut_ptr(),
                ptr::null_mut(),
                ptr::null_mut(),
            );
            all.truncate(n.min(args.len));
            args.heap = Some(all);
        }
    }
    (args, data)
}

/// Runs `f` on the statement whose id is the first argument, with the other arguments
/// (the statement's parameters), turning errors into JS exceptions. A panic anywhere in
/// it, the argument and registry look-ups included, becomes an exception too: nothing
/// unwinds into Node.
///
/// # Safety
/// Inside a Node-API callback.
unsafe fn with_statement_params(
    env: sys::napi_env,
    info: sys::napi_callback_info,
    f: impl FnOnce(&StatementCore, &[sys::napi_value]) -> JsResult<sys::napi_value>,
) -> sys::napi_value {
    let illegal_invocation = || {
        let _ = js::throw(
            env,
            ptr::null_mut(),
            js::Thrown::Type("Illegal invocation".into()),
        );
        ptr::null_mut()
    };
    guarded(env, || {
        // SAFETY: per contract.
        let (args, data) = unsafe { all_args(env, info) };
        let Some((&receiver, params)) = args.as_slice().split_first() else {
            return illegal_invocation();
        };
        // SAFETY: per contract.
        let stmt = unsafe { instance(data) }
            .zip(unsafe { id(env, receiver) })
            .and_then(|(instance, id)| instance.statements.get(id));
        let Some(stmt) = stmt else {
            return illegal_invocation();
        };
        match f(&stmt, params) {
            Ok(v) => v,
            // The environment stopped (a worker terminated while a user function ran):
            // nothing can be thrown; `null`, which no entry point returns otherwise, tells
            // the JS layer to stop.
            // SAFETY: on the JS thread.
            Err(_) if stmt.shared().instance.is_stopping() => unsafe { js::null(env) },
            Err(e) => {
                let _ = stmt.shared().throw(e);
                ptr::null_mut()
            }
        }
    })
}

/// Runs `f` on the statement whose id is the first argument, with the second argument
/// (or `undefined`).
///
/// # Safety
/// Inside a Node-API callback.
unsafe fn with_statement(
    env: sys::napi_env,
    info: sys::napi_callback_info,
    f: impl FnOnce(&StatementCore, sys::napi_value) -> JsResult<sys::napi_value>,
) -> sys::napi_value {
    // SAFETY: per contract.
    unsafe {
        with_statement_params(env, info, |s, params| {
            let arg = params
                .first()
                .copied()
                .unwrap_or_else(|| js::undefined(env));
            f(s, arg)
        })
    }
}

unsafe extern "C" fn statement_run(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: a Node-API callback.
    unsafe {
        with_statement_params(env, info, |s, params| {
            s.run_impl(params)?;
            Ok(js::undefined(env))
        })
    }
}

unsafe extern "C" fn statement_get(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: a Node-API callback.
    unsafe { with_statement_params(env, info, |s, params| s.get_impl(params)) }
}

unsafe extern "C" fn statement_all(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: a Node-API callback.
    unsafe { with_statement_params(env, info, |s, params| s.all_impl(params)) }
}

unsafe extern "C" fn statement_iterate(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: a Node-API callback.
    unsafe {
        with_statement_params(env, info, |s, params| {
            s.iterate_impl(params)?;
            Ok(js::undefined(env))
        })
    }
}

unsafe extern "C" fn statement_more(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: a Node-API callback.
    unsafe { with_statement(env, info, |s, _| s.more_impl()) }
}

unsafe extern "C" fn statement_next(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: a Node-API callback.
    unsafe { with_statement(env, info, |s, _| s.next_impl()) }
}

/// `fast.setMode(id, mode, on)`: pluck/expand/raw; returns the resulting mode.
unsafe extern "C" fn statement_set_mode(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    // SAFETY: a Node-API callback.
    unsafe {
        with_statement_params(env, info, |s, args| {
            let (mut mode, mut on) = (0u32, false);
            if let [m, o, ..] = args {
                js::check(sys::napi_get_value_uint32(env, *m, &mut mode))?;
                js::check(sys::napi_get_value_bool(env, *o, &mut on))?;
            }
            let mode = s.set_mode_checked(mode, on)?;
            let mut out = ptr::null_mut();
            js::check(sys::napi_create_uint32(env, mode, &mut out))?;
            Ok(out)
        })
    }
}

unsafe extern "C" fn database_in_transaction(
    env: sys::napi_env,
    info: sys::napi_callback_info,
) -> sys::napi_value {
    guarded(env, || {
        // SAFETY: a Node-API callback.
        unsafe {
            let ([receiver], data) = args::<1>(env, info);
            let db = instance(data)
                .zip(id(env, receiver))
                .and_then(|(instance, id)| instance.databases.get(id));
            js::boolean(env, db.is_some_and(|db| db.in_transaction()))
        }
    })
}

/// Runs the body of a raw entry point, turning a panic into a JS exception: a panic must
/// never unwind into Node (that aborts the process). Every `extern "C"` function here
/// runs its whole body inside this.
fn guarded(env: sys::napi_env, body: impl FnOnce() -> sys::napi_value) -> sys::napi_value {
    catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|_| {
        let _ = js::throw(
            env,
            ptr::null_mut(),
            js::Thrown::Error("cipherlite: internal error (panic)".into()),
        );
        ptr::null_mut()
    })
}

/// `fast.panicForTesting()`, in debug builds only: panics inside `guarded`, so a test can
/// see that a panic in a raw entry point becomes an exception and leaves the process
/// running (__test__/29b-native-state.test.js).
#[cfg(debug_assertions)]
unsafe extern "C" fn panic_for_testing(
    env: sys::napi_env,
    _info: sys::napi_callback_info,
) -> sys::napi_value {
    guarded(env, || panic!("fast.panicForTesting"))
}

type RawCallback = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;

/// Exports `fast = { run, get, all, iterate, more, next, setMode, inTransaction }` and the
/// result buffer's `layout`.
#[napi(module_exports)]
pub fn install_fast_paths(exports: Object<'_>, env: Env) -> napi::Result<()> {
    let env = env.raw();
    let (_, instance) = Instance::install(env).map_err(|_| js::pending())?;
    let functions: &[(&std::ffi::CStr, RawCallback)] = &[
        (c"iterate", statement_iterate),
        (c"setMode", statement_set_mode),
        (c"run", statement_run),
        (c"get", statement_get),
        (c"all", statement_all),
        (c"more", statement_more),
        (c"next", statement_next),
        (c"inTransaction", database_in_transaction),
        #[cfg(debug_assertions)]
        (c"panicForTesting", panic_for_testing),
    ];
    // SAFETY: module initialisation, on the JS thread of `env`.
    unsafe {
        let mut fast = ptr::null_mut();
        js::check(sys::napi_create_object(env, &mut fast)).map_err(|_| js::pending())?;
        for &(name, callback) in functions {
            let mut f = ptr::null_mut();
            js::check(sys::napi_create_function(
                env,
                name.as_ptr().cast::<c_char>(),
                -1,
                Some(callback),
                instance.cast_mut().cast(),
                &mut f,
            ))
            .map_err(|_| js::pending())?;
            js::check(sys::napi_set_named_property(env, fast, name.as_ptr(), f))
                .map_err(|_| js::pending())?;
        }
        js::check(sys::napi_set_named_property(
            env,
            exports.raw(),
            c"fast".as_ptr(),
            fast,
        ))
        .map_err(|_| js::pending())?;

        // The result buffer's layout (results.rs), frozen: lib/results.js reads it.
        let mut layout = ptr::null_mut();
        js::check(sys::napi_create_object(env, &mut layout)).map_err(|_| js::pending())?;
        for &(name, value) in LAYOUT {
            let mut v = ptr::null_mut();
            js::check(sys::napi_create_uint32(env, value, &mut v)).map_err(|_| js::pending())?;
            js::check(sys::napi_set_named_property(env, layout, name.as_ptr(), v))
                .map_err(|_| js::pending())?;
        }
        js::check(sys::napi_object_freeze(env, layout)).map_err(|_| js::pending())?;
        js::check(sys::napi_set_named_property(
            env,
            exports.raw(),
            c"layout".as_ptr(),
            layout,
        ))
        .map_err(|_| js::pending())?;
    }
    Ok(())
}
