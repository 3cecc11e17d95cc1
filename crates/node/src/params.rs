//! Binding JS values to a statement's parameters, with better-sqlite3's rules
//! (`docs/better-sqlite3-behaviour.md` §10) and messages.

use super::js::{self, check, range_error, type_error, JsResult, NotSql, SqlValue, Thrown};
use cipherlite_sqlite::{ffi, Statement};
use napi::sys::{self, ValueType as T};
use std::{ffi::c_int, ptr};

/// A statement's named parameters: name without its prefix, and its index.
pub struct NamedParams {
    pairs: Vec<(String, c_int)>,
}

impl NamedParams {
    pub fn of(stmt: &Statement) -> NamedParams {
        let pairs = (1..=stmt.parameter_count())
            .filter_map(|i| stmt.parameter_name(i).map(|n| (n[1..].to_string(), i)))
            .collect();
        NamedParams { pairs }
    }

    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }
}

/// Binds `args` (the JS array of a call's arguments) to `stmt`. On error nothing is
/// guaranteed about the bindings; the caller clears them.
pub struct Binder<'a> {
    pub env: sys::napi_env,
    pub stmt: &'a mut Statement,
    pub named: &'a NamedParams,
    /// `Object.prototype` of the main realm, to recognise plain objects (looked up only
    /// when an object argument needs it).
    pub object_prototype: sys::napi_ref,
    anon_index: c_int,
    /// Bytes of TEXT/BLOB bound (TEXT counted by the buffer that holds it): large
    /// values are released after the execution.
    pub bound_bytes: usize,
}

impl<'a> Binder<'a> {
    pub fn new(
        env: sys::napi_env,
        stmt: &'a mut Statement,
        named: &'a NamedParams,
        object_prototype: sys::napi_ref,
    ) -> Self {
        Binder {
            env,
            stmt,
            named,
            object_prototype,
            anon_index: 0,
            bound_bytes: 0,
        }
    }

    /// Binds the call's arguments `args` (values of the current call).
    ///
    /// # Safety
    /// `args` must be live values of the current call.
    pub unsafe fn bind_all(&mut self, args: &[sys::napi_value]) -> JsResult<()> {
        let env = self.env;
        let mut count: c_int = 0;
        let mut bound_object = false;
        // SAFETY: per contract; every napi call takes values of this call.
        unsafe {
            for &arg in args {
                let t = js::type_of(env, arg);
                if t == T::napi_object && is_array(env, arg) {
                    let n = array_length(env, arg)?;
                    for j in 0..n {
                        let v = element(env, arg, j)?;
                        let index = self.next_anon_index();
                        self.bind_value(v, index)?;
                    }
                    count += n as c_int;
                    continue;
                }
                if (t == T::napi_object || t == T::napi_function)
                    && js::array_buffer_view(env, arg).is_none()
                {
                    if t == T::napi_object && self.is_plain_object(arg)? {
                        if bound_object {
                            return type_error(
                                "You cannot specify named parameters in two different objects",
                            );
                        }
                        bound_object = true;
                        count += self.bind_object(arg)?;
                        continue;
                    } else if !self.named.is_empty() {
                        return type_error(
                            "Named parameters can only be passed within plain objects",
                        );
                    }
                }
                let index = self.next_anon_index();
                self.bind_typed_value(arg, t, index)?;
                count += 1;
            }
        }
        let expected = self.stmt.parameter_count();
        if count < expected {
            if !bound_object && !self.named.is_empty() {
                return type_error("Missing named parameters");
            }
            return range_error("Too few parameter values were provided");
        }
        if count > expected {
            return range_error("Too many parameter values were provided");
        }
        Ok(())
    }

    /// The next index that belongs to an anonymous `?` (named ones are skipped).
    fn next_anon_index(&mut self) -> c_int {
        if self.named.is_empty() {
            // No parameter has a name: each index is the next one.
            self.anon_index += 1;
            return self.anon_index;
        }
        loop {
            self.anon_index += 1;
            if self.anon_index > self.stmt.parameter_count() {
                return self.anon_index;
            }
            // Like better-sqlite3, every parameter with a name (`?NNN` included) is named.
            if self.stmt.parameter_name(self.anon_index).is_none() {
                return self.anon_index;
            }
        }
    }

    /// Whether `obj` is a plain object: its prototype is null or some realm's
    /// `Object.prototype` (better-sqlite3 13: plain objects made in a `vm` context count).
    /// A top-level prototype is recognised by its own prototype being null, so
    /// `Object.create(null)` objects and `{…}` literals of any realm pass, while class
    /// instances, `Date`s, boxed primitives and arrays of any realm do not.
    unsafe fn is_plain_object(&self, obj: sys::napi_value) -> JsResult<bool> {
        // SAFETY: obj is an object of this call; a prototype is an object or null.
        unsafe {
            let proto = prototype_of(self.env, obj)?;
            if js::type_of(self.env, proto) == T::napi_null {
                return Ok(true);
            }
            // The common case, this realm's Object.prototype, needs no second look-up.
            let mut object_prototype = ptr::null_mut();
            sys::napi_get_reference_value(self.env, self.object_prototype, &mut object_prototype);
            let mut same = false;
            sys::napi_strict_equals(self.env, proto, object_prototype, &mut same);
            if same {
                return Ok(true);
            }
            let grand = prototype_of(self.env, proto)?;
            Ok(js::type_of(self.env, grand) == T::napi_null)
        }
    }

    unsafe fn bind_object(&mut self, obj: sys::napi_value) -> JsResult<c_int> {
        let env = self.env;
        let named = self.named;
        for (name, index) in &named.pairs {
            // SAFETY: obj is an object of this call; key is a fresh string.
            unsafe {
                let key = js::string(env, name);
                let mut has = false;
                check(sys::napi_has_own_property(env, obj, key, &mut has))?;
                if !has {
                    return range_error(format!("Missing named parameter \"{name}\""));
                }
                let mut v = ptr::null_mut();
                check(sys::napi_get_property(env, obj, key, &mut v))?;
                self.bind_value(v, *index)?;
            }
        }
        Ok(named.pairs.len() as c_int)
    }

    /// Binds one JS value at `index` (better-sqlite3's type mapping).
    unsafe fn bind_value(&mut self, v: sys::napi_value, index: c_int) -> JsResult<()> {
        // SAFETY: v is a value of this call.
        unsafe { self.bind_typed_value(v, js::type_of(self.env, v), index) }
    }

    /// [`Self::bind_value`] for a value whose type the caller already looked up.
    unsafe fn bind_typed_value(
        &mut self,
        v: sys::napi_value,
        t: sys::napi_valuetype,
        index: c_int,
    ) -> JsResult<()> {
        // SAFETY: v is a value of this call and `t` its type.
        // Text is read into the statement's scratch buffer, which then becomes the
        // parameter's own: SQLite reads it there instead of copying it.
        let value = unsafe { js::sql_value_of_type(self.env, v, t, self.stmt.text_scratch())? };
        let result = match value {
            Ok(SqlValue::Real(d)) => self.stmt.bind_double(index, d),
            Ok(SqlValue::Integer(i)) => self.stmt.bind_int64(index, i),
            Ok(SqlValue::Text) => self
                .stmt
                .bind_text_scratch(index)
                .map(|held| self.bound_bytes += held),
            Ok(SqlValue::Blob(bytes)) => {
                self.bound_bytes += bytes.len();
                self.stmt.bind_blob(index, bytes)
            }
            Ok(SqlValue::Null) => self.stmt.bind_null(index),
            Err(NotSql::BigIntTooBig) => {
                return range_error("The bound string, buffer, or bigint is too big")
            }
            Err(NotSql::WrongType) => {
                return type_error(
                    "SQLite3 can only bind numbers, strings, bigints, buffers, and null",
                )
            }
        };
        result.map_err(|e| match e.code {
            ffi::SQLITE_TOOBIG => {
                Thrown::Range("The bound string, buffer, or bigint is too big".into())
            }
            ffi::SQLITE_RANGE => Thrown::Range("Too many parameter values were provided".into()),
            ffi::SQLITE_NOMEM => Thrown::Sqlite(e),
            _ => Thrown::Sqlite(e),
        })
    }
}

/// The prototype of `obj` (an object or null). A Proxy whose `getPrototypeOf` trap
/// throws leaves its exception pending, and binding fails with it.
///
/// # Safety
/// On the JS thread; `obj` an object of the current call.
unsafe fn prototype_of(env: sys::napi_env, obj: sys::napi_value) -> JsResult<sys::napi_value> {
    let mut proto = ptr::null_mut();
    // SAFETY: per contract.
    check(unsafe { sys::napi_get_prototype(env, obj, &mut proto) })?;
    Ok(proto)
}

unsafe fn is_array(env: sys::napi_env, v: sys::napi_value) -> bool {
    let mut is = false;
    // SAFETY: v is a value of this call.
    unsafe { sys::napi_is_array(env, v, &mut is) };
    is
}

unsafe fn array_length(env: sys::napi_env, v: sys::napi_value) -> JsResult<u32> {
    let mut n = 0u32;
    // SAFETY: v is an array of this call.
    check(unsafe { sys::napi_get_array_length(env, v, &mut n) })?;
    if n > c_int::MAX as u32 {
        return range_error("Too many parameter values were provided");
    }
    Ok(n)
}

/// The elements of a JS array (a call's arguments passed as one array).
///
/// # Safety
/// On the JS thread; `arr` a value of the current call.
pub unsafe fn array_elements(
    env: sys::napi_env,
    arr: sys::napi_value,
) -> JsResult<Vec<sys::napi_value>> {
    // SAFETY: per contract.
    unsafe {
        let n = array_length(env, arr)?;
        (0..n).map(|i| element(env, arr, i)).collect()
    }
}

unsafe fn element(env: sys::napi_env, arr: sys::napi_value, i: u32) -> JsResult<sys::napi_value> {
    let mut v = ptr::null_mut();
    // SAFETY: arr is an array of this call; a throwing getter leaves an exception pending.
    check(unsafe { sys::napi_get_element(env, arr, i, &mut v) })?;
    Ok(v)
}
