//! Thin helpers over raw Node-API calls for the hot paths (argument conversion, result
//! strings, throwing the right error class). Everything here runs on the JS thread that
//! owns the `napi_env`.

use cipherlite_sqlite as sqlite;
use napi::{
    bindgen_prelude::{FromNapiValue, ToNapiValue, TypeName, ValidateNapiValue},
    sys, Status, ValueType,
};
use std::{ffi::c_char, ptr};

/// Any JS value, passed through untouched (the `#[napi]` layer does no conversion).
#[derive(Clone, Copy)]
pub struct JsAny(pub sys::napi_value);

impl TypeName for JsAny {
    fn type_name() -> &'static str {
        "unknown"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}
impl ValidateNapiValue for JsAny {}
impl FromNapiValue for JsAny {
    unsafe fn from_napi_value(_env: sys::napi_env, v: sys::napi_value) -> napi::Result<Self> {
        Ok(JsAny(v))
    }
}
impl ToNapiValue for JsAny {
    unsafe fn to_napi_value(_env: sys::napi_env, v: Self) -> napi::Result<sys::napi_value> {
        Ok(v.0)
    }
}

/// An error to be thrown into JS, in better-sqlite3's classes.
#[derive(Debug)]
pub enum Thrown {
    Type(String),
    Range(String),
    Sqlite(sqlite::Error),
    /// A plain `Error` (better-sqlite3 throws a few, e.g. "Out of memory").
    Error(String),
    /// A JS exception is already pending (thrown by user code); leave it as it is.
    Pending,
    /// The environment is stopping (its worker is being terminated): nothing can be
    /// thrown, the call returns without doing anything.
    Stopped,
}

pub type JsResult<T> = Result<T, Thrown>;

/// The message alone (what a rekey whose reopen failed quotes as the reason).
impl std::fmt::Display for Thrown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Thrown::Sqlite(e) => f.write_str(&e.message),
            Thrown::Type(m) | Thrown::Range(m) | Thrown::Error(m) => f.write_str(m),
            Thrown::Pending => f.write_str("an exception"),
            Thrown::Stopped => f.write_str("the worker is stopping"),
        }
    }
}

pub fn type_error<T>(msg: impl Into<String>) -> JsResult<T> {
    Err(Thrown::Type(msg.into()))
}
pub fn range_error<T>(msg: impl Into<String>) -> JsResult<T> {
    Err(Thrown::Range(msg.into()))
}

impl From<sqlite::Error> for Thrown {
    fn from(e: sqlite::Error) -> Self {
        Thrown::Sqlite(e)
    }
}

/// A call the connection's state refuses: better-sqlite3's TypeError (RangeError for too
/// many iterators) with its message.
impl From<cipherlite_core::connection_policy::state::Refusal> for Thrown {
    fn from(r: cipherlite_core::connection_policy::state::Refusal) -> Self {
        if r.is_range_error() {
            Thrown::Range(r.message())
        } else {
            Thrown::Type(r.message())
        }
    }
}

/// A refused open or set-up: a usage error is better-sqlite3's TypeError.
impl From<cipherlite_core::connection_policy::Error> for Thrown {
    fn from(e: cipherlite_core::connection_policy::Error) -> Self {
        match e {
            cipherlite_core::connection_policy::Error::Usage(message) => Thrown::Type(message),
            cipherlite_core::connection_policy::Error::Sqlite(e) => Thrown::Sqlite(e),
        }
    }
}

/// The error napi-rs gets back after we threw ourselves: it leaves a pending exception alone.
pub fn pending() -> napi::Error {
    napi::Error::new(Status::PendingException, String::new())
}

/// Throws `err` into `env` (SqliteError through the constructor the JS layer registered)
/// and returns the napi-rs error that tells the generated glue not to throw again.
// `env` and the reference are opaque Node-API handles that only Node-API dereferences.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn throw(env: sys::napi_env, sqlite_error_ctor: sys::napi_ref, err: Thrown) -> napi::Error {
    // SAFETY: env is the live env of the current call; every napi call below only reads
    // its arguments.
    unsafe {
        match err {
            Thrown::Pending | Thrown::Stopped => {}
            Thrown::Type(msg) => {
                let msg = cstring(&msg);
                sys::napi_throw_type_error(env, ptr::null(), msg.as_ptr());
            }
            Thrown::Range(msg) => {
                let msg = cstring(&msg);
                sys::napi_throw_range_error(env, ptr::null(), msg.as_ptr());
            }
            Thrown::Sqlite(e) => throw_sqlite(env, sqlite_error_ctor, &e),
            Thrown::Error(msg) => {
                let msg = cstring(&msg);
                sys::napi_throw_error(env, ptr::null(), msg.as_ptr());
            }
        }
    }
    pending()
}

fn cstring(s: &str) -> std::ffi::CString {
    std::ffi::CString::new(s.replace('\0', "\\0")).unwrap_or_default()
}

/// # Safety
/// `env` must be the current call's env; `ctor` a reference to the SqliteError class or null.
unsafe fn throw_sqlite(env: sys::napi_env, ctor: sys::napi_ref, e: &sqlite::Error) {
    // SAFETY: per the function contract.
    unsafe {
        let mut class = ptr::null_mut();
        if ctor.is_null()
            || sys::napi_get_reference_value(env, ctor, &mut class) != sys::Status::napi_ok
            || class.is_null()
        {
            let msg = cstring(&e.message);
            sys::napi_throw_error(env, ptr::null(), msg.as_ptr());
            return;
        }
        let args = [string(env, &e.message), string(env, &e.code_name())];
        let mut instance = ptr::null_mut();
        if sys::napi_new_instance(env, class, 2, args.as_ptr(), &mut instance)
            == sys::Status::napi_ok
        {
            sys::napi_throw(env, instance);
        }
    }
}

/// Creates a JS string from UTF-8 (invalid sequences become U+FFFD).
///
/// # Safety
/// `env` must be the current call's env.
pub unsafe fn string(env: sys::napi_env, s: &str) -> sys::napi_value {
    let mut out = ptr::null_mut();
    // SAFETY: s is valid for len bytes.
    unsafe {
        sys::napi_create_string_utf8(env, s.as_ptr().cast::<c_char>(), s.len() as isize, &mut out)
    };
    out
}

/// A JS string of TEXT from SQLite or a batch: from Latin-1 bytes when `ascii` (ASCII,
/// or a batch's one-byte string, which is Latin-1: no decoding), else from UTF-8 (invalid
/// sequences become U+FFFD). Text longer than V8's maximum string length fails with a
/// RangeError that says so.
// `env` is an opaque Node-API handle that only Node-API dereferences.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn text(env: sys::napi_env, bytes: &[u8], ascii: bool) -> JsResult<sys::napi_value> {
    let mut s = ptr::null_mut();
    let Ok(len) = isize::try_from(bytes.len()) else {
        return Err(too_long_text(bytes.len()));
    };
    // SAFETY: bytes is valid for len bytes; ASCII is valid Latin-1.
    let status = unsafe {
        if ascii {
            sys::napi_create_string_latin1(env, bytes.as_ptr().cast(), len, &mut s)
        } else {
            sys::napi_create_string_utf8(env, bytes.as_ptr().cast(), len, &mut s)
        }
    };
    if status == sys::Status::napi_ok {
        return Ok(s);
    }
    if bytes.len() > super::results::V8_MAX_STRING_LENGTH {
        // V8 refused the length (and may have thrown its own "Invalid string length").
        // SAFETY: on the JS thread of `env`.
        unsafe {
            let mut pending = false;
            sys::napi_is_exception_pending(env, &mut pending);
            if pending {
                let mut exc = ptr::null_mut();
                sys::napi_get_and_clear_last_exception(env, &mut exc);
            }
        }
        return Err(too_long_text(bytes.len()));
    }
    check(status)?;
    Ok(s)
}

fn too_long_text(bytes: usize) -> Thrown {
    Thrown::Range(format!(
        "Invalid string length: a TEXT value of {bytes} bytes is longer than the longest \
         string V8 can create ({} characters)",
        super::results::V8_MAX_STRING_LENGTH
    ))
}

/// A JS array of `values`, made with defined (not assigned) elements: no setter on
/// `Array.prototype` or `Object.prototype` runs.
// `env` is an opaque Node-API handle that only Node-API dereferences.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn array_of(env: sys::napi_env, values: &[sys::napi_value]) -> JsResult<sys::napi_value> {
    let names: Vec<std::ffi::CString> = (0..values.len())
        .map(|i| std::ffi::CString::new(i.to_string()).unwrap_or_default())
        .collect();
    let descriptors: Vec<sys::napi_property_descriptor> = names
        .iter()
        .zip(values)
        .map(|(name, &value)| sys::napi_property_descriptor {
            utf8name: name.as_ptr(),
            name: ptr::null_mut(),
            method: None,
            getter: None,
            setter: None,
            value,
            attributes: sys::PropertyAttributes::writable
                | sys::PropertyAttributes::enumerable
                | sys::PropertyAttributes::configurable,
            data: ptr::null_mut(),
        })
        .collect();
    let mut out = ptr::null_mut();
    // SAFETY: on the JS thread; the descriptors and their names live across the call.
    unsafe {
        check(sys::napi_create_array_with_length(
            env,
            values.len(),
            &mut out,
        ))?;
        check(sys::napi_define_properties(
            env,
            out,
            descriptors.len(),
            descriptors.as_ptr(),
        ))?;
    }
    Ok(out)
}

/// # Safety
/// `env` must be the current call's env.
pub unsafe fn type_of(env: sys::napi_env, v: sys::napi_value) -> sys::napi_valuetype {
    let mut t = 0;
    // SAFETY: per contract.
    unsafe { sys::napi_typeof(env, v, &mut t) };
    t
}

/// Wraps a raw napi status: a pending JS exception stays pending; a failure that left
/// none (V8 refusing a string longer than its maximum, say) becomes an Error that says so,
/// rather than a silent `undefined`.
pub fn check(status: sys::napi_status) -> JsResult<()> {
    if status == sys::Status::napi_ok {
        return Ok(());
    }
    if status == sys::Status::napi_pending_exception {
        return Err(Thrown::Pending);
    }
    Err(Thrown::Error(format!(
        "cipherlite: a Node-API call failed (status {status}); a value may exceed V8's limits"
    )))
}

/// Whether the environment can still run JS. Asked right after a call into JS failed
/// and its exception was taken: a Node-API call that may run JS (here an own-property
/// check on a fresh object, which runs none) is refused only when the environment can't
/// call into JS any more — a worker being terminated or exiting. Then the user code did
/// not finish (or never started), and nothing may carry on as if it had.
// `env` is an opaque Node-API handle that only Node-API dereferences.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn can_run_js(env: sys::napi_env) -> bool {
    // SAFETY: on the JS thread of `env`; the object and key are fresh values, and the
    // check runs no user code.
    unsafe {
        let mut obj = ptr::null_mut();
        if sys::napi_create_object(env, &mut obj) != sys::Status::napi_ok {
            return false;
        }
        let key = string(env, "k");
        let mut has = false;
        sys::napi_has_own_property(env, obj, key, &mut has) == sys::Status::napi_ok
    }
}

/// After a call into JS failed (with its exception still pending, if it threw): whether
/// it failed because the environment is stopping. A thrown exception is left pending.
// `env` is an opaque Node-API handle that only Node-API dereferences.
#[allow(clippy::not_unsafe_ptr_arg_deref)]
pub fn stopping_after_failed_call(env: sys::napi_env) -> bool {
    // SAFETY: on the JS thread of `env`.
    unsafe {
        let mut pending = false;
        sys::napi_is_exception_pending(env, &mut pending);
        let mut exc = ptr::null_mut();
        if pending && sys::napi_get_and_clear_last_exception(env, &mut exc) != sys::Status::napi_ok
        {
            return false;
        }
        if can_run_js(env) {
            if pending && !exc.is_null() {
                // An ordinary exception: pending again, as it was.
                sys::napi_throw(env, exc);
            }
            return false;
        }
        true
    }
}

/// Defines an own data property (writable, enumerable, configurable) on `obj`: unlike
/// assignment, it runs no setter inherited from a prototype.
///
/// # Safety
/// `env` must be the current call's env; `obj` an object and `value` a value of it.
pub unsafe fn define_value(
    env: sys::napi_env,
    obj: sys::napi_value,
    name: &std::ffi::CStr,
    value: sys::napi_value,
) -> sys::napi_status {
    let descriptor = sys::napi_property_descriptor {
        utf8name: name.as_ptr(),
        name: ptr::null_mut(),
        method: None,
        getter: None,
        setter: None,
        value,
        attributes: sys::PropertyAttributes::writable
            | sys::PropertyAttributes::enumerable
            | sys::PropertyAttributes::configurable,
        data: ptr::null_mut(),
    };
    // SAFETY: per contract; one descriptor.
    unsafe { sys::napi_define_properties(env, obj, 1, &descriptor) }
}

/// # Safety
/// `env` must be the current call's env.
pub unsafe fn undefined(env: sys::napi_env) -> sys::napi_value {
    let mut out = ptr::null_mut();
    // SAFETY: per contract.
    unsafe { sys::napi_get_undefined(env, &mut out) };
    out
}

/// # Safety
/// `env` must be the current call's env.
pub unsafe fn null(env: sys::napi_env) -> sys::napi_value {
    let mut out = ptr::null_mut();
    // SAFETY: per contract.
    unsafe { sys::napi_get_null(env, &mut out) };
    out
}

/// # Safety
/// `env` must be the current call's env.
pub unsafe fn boolean(env: sys::napi_env, b: bool) -> sys::napi_value {
    let mut out = ptr::null_mut();
    // SAFETY: per contract.
    unsafe { sys::napi_get_boolean(env, b, &mut out) };
    out
}

/// Reads a JS string into `buf` as UTF-8 (reusing its allocation).
///
/// # Safety
/// `env` must be the current call's env and `v` a string.
pub unsafe fn read_string_into(
    env: sys::napi_env,
    v: sys::napi_value,
    buf: &mut Vec<u8>,
) -> JsResult<()> {
    // Most strings fit the buffer's capacity: one call. A result too close to the
    // capacity may have been cut (at a character boundary), so then ask for the length.
    if buf.capacity() < 256 {
        buf.reserve(256 - buf.len());
    }
    let cap = buf.capacity();
    let mut copied = 0usize;
    // SAFETY: buf has `cap` writable bytes; napi writes at most cap-1 bytes + NUL.
    unsafe {
        check(sys::napi_get_value_string_utf8(
            env,
            v,
            buf.as_mut_ptr().cast(),
            cap,
            &mut copied,
        ))?;
        if copied + 5 <= cap {
            buf.set_len(copied);
            return Ok(());
        }
        let mut len = 0usize;
        check(sys::napi_get_value_string_utf8(
            env,
            v,
            ptr::null_mut(),
            0,
            &mut len,
        ))?;
        buf.clear();
        buf.reserve(len + 1);
        check(sys::napi_get_value_string_utf8(
            env,
            v,
            buf.as_mut_ptr().cast(),
            len + 1,
            &mut copied,
        ))?;
        buf.set_len(copied);
    }
    Ok(())
}

/// Reads a JS string as a Rust `String`.
///
/// # Safety
/// `env` must be the current call's env and `v` a string.
pub unsafe fn read_string(env: sys::napi_env, v: sys::napi_value) -> JsResult<String> {
    let mut buf = Vec::new();
    // SAFETY: per contract.
    unsafe { read_string_into(env, v, &mut buf)? };
    // napi produces valid UTF-8 (lone surrogates become U+FFFD).
    Ok(String::from_utf8(buf)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
}

/// The bytes viewed by a Buffer / TypedArray / DataView, or `None` for anything else.
///
/// # Safety
/// `env` must be the current call's env. The slice is valid while `v` is alive and its
/// buffer is not detached, i.e. for the duration of the current native call.
pub unsafe fn array_buffer_view<'a>(env: sys::napi_env, v: sys::napi_value) -> Option<&'a [u8]> {
    // SAFETY: per contract; the info calls only read.
    unsafe {
        let mut is = false;
        sys::napi_is_typedarray(env, v, &mut is);
        if is {
            let mut kind = 0;
            let mut length = 0usize;
            let mut data = ptr::null_mut();
            let mut ab = ptr::null_mut();
            let mut offset = 0usize;
            sys::napi_get_typedarray_info(
                env,
                v,
                &mut kind,
                &mut length,
                &mut data,
                &mut ab,
                &mut offset,
            );
            let size = typedarray_element_size(kind);
            return Some(if data.is_null() || length == 0 {
                &[]
            } else {
                std::slice::from_raw_parts(data.cast::<u8>(), length * size)
            });
        }
        sys::napi_is_dataview(env, v, &mut is);
        if is {
            let mut length = 0usize;
            let mut data = ptr::null_mut();
            let mut ab = ptr::null_mut();
            let mut offset = 0usize;
            sys::napi_get_dataview_info(env, v, &mut length, &mut data, &mut ab, &mut offset);
            return Some(if data.is_null() || length == 0 {
                &[]
            } else {
                std::slice::from_raw_parts(data.cast::<u8>(), length)
            });
        }
        None
    }
}

/// The bytes of `v` if it is a real `Uint8Array` (a Buffer is one), else `None`.
///
/// # Safety
/// `v` must be a value of the current call; the slice is valid while it is.
pub unsafe fn uint8_array_bytes<'a>(env: sys::napi_env, v: sys::napi_value) -> Option<&'a [u8]> {
    // SAFETY: per contract; the info calls only read.
    unsafe {
        let mut is = false;
        if sys::napi_is_typedarray(env, v, &mut is) != sys::Status::napi_ok || !is {
            return None;
        }
        let mut kind = 0;
        let mut length = 0usize;
        let mut data = ptr::null_mut();
        let mut ab = ptr::null_mut();
        let mut offset = 0usize;
        let status = sys::napi_get_typedarray_info(
            env,
            v,
            &mut kind,
            &mut length,
            &mut data,
            &mut ab,
            &mut offset,
        );
        if status != sys::Status::napi_ok || kind != sys::TypedarrayType::uint8_array {
            return None;
        }
        Some(if data.is_null() || length == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(data.cast::<u8>(), length)
        })
    }
}

fn typedarray_element_size(kind: sys::napi_typedarray_type) -> usize {
    use sys::TypedarrayType as T;
    match kind {
        T::int8_array | T::uint8_array | T::uint8_clamped_array => 1,
        T::int16_array | T::uint16_array => 2,
        T::int32_array | T::uint32_array | T::float32_array => 4,
        _ => 8,
    }
}

/// A JS value as one of SQLite's types, by better-sqlite3's mapping: number → REAL
/// (always a double), BigInt → INTEGER, string → TEXT, any ArrayBufferView → BLOB,
/// null/undefined → NULL. Shared by parameter binding and function results.
pub enum SqlValue<'a> {
    Null,
    Real(f64),
    Integer(i64),
    /// The UTF-8 is in the caller's text buffer.
    Text,
    Blob(&'a [u8]),
}

/// Why a JS value has no SQL equivalent.
pub enum NotSql {
    /// Booleans, symbols, functions, plain objects, boxed primitives, ...
    WrongType,
    /// A BigInt outside the 64-bit signed range.
    BigIntTooBig,
}

/// Converts `v` (TEXT goes into `text`).
///
/// # Safety
/// On the JS thread of `env`; `v` a live value. A BLOB slice is valid while `v` is alive
/// and its buffer not detached (the current native call).
pub unsafe fn sql_value<'a>(
    env: sys::napi_env,
    v: sys::napi_value,
    text: &mut Vec<u8>,
) -> JsResult<Result<SqlValue<'a>, NotSql>> {
    // SAFETY: per contract.
    unsafe { sql_value_of_type(env, v, type_of(env, v), text) }
}

/// [`sql_value`] for a value whose type (`napi_typeof`) the caller already has.
///
/// # Safety
/// As for [`sql_value`]; `t` must be the type of `v`.
pub unsafe fn sql_value_of_type<'a>(
    env: sys::napi_env,
    v: sys::napi_value,
    t: sys::napi_valuetype,
    text: &mut Vec<u8>,
) -> JsResult<Result<SqlValue<'a>, NotSql>> {
    // SAFETY: per contract.
    unsafe {
        Ok(match t {
            sys::ValueType::napi_number => {
                let mut d = 0.0;
                check(sys::napi_get_value_double(env, v, &mut d))?;
                Ok(SqlValue::Real(d))
            }
            sys::ValueType::napi_string => {
                read_string_into(env, v, text)?;
                Ok(SqlValue::Text)
            }
            sys::ValueType::napi_bigint => {
                let mut i = 0i64;
                let mut lossless = false;
                check(sys::napi_get_value_bigint_int64(
                    env,
                    v,
                    &mut i,
                    &mut lossless,
                ))?;
                if lossless {
                    Ok(SqlValue::Integer(i))
                } else {
                    Err(NotSql::BigIntTooBig)
                }
            }
            sys::ValueType::napi_null | sys::ValueType::napi_undefined => Ok(SqlValue::Null),
            sys::ValueType::napi_object => match array_buffer_view(env, v) {
                Some(bytes) => Ok(SqlValue::Blob(bytes)),
                None => Err(NotSql::WrongType),
            },
            _ => Err(NotSql::WrongType),
        })
    }
}

/// A strong reference to `v` (the caller deletes it).
pub(crate) fn new_reference(env: sys::napi_env, v: sys::napi_value) -> JsResult<sys::napi_ref> {
    let mut r = ptr::null_mut();
    // SAFETY: on the JS thread; v is a value of this call.
    check(unsafe { sys::napi_create_reference(env, v, 1, &mut r) })?;
    Ok(r)
}

/// The data pointer and length of the ArrayBuffer `v`.
pub(crate) fn arraybuffer_info(
    env: sys::napi_env,
    v: sys::napi_value,
) -> JsResult<(*mut u8, usize)> {
    let mut data = ptr::null_mut();
    let mut len = 0usize;
    // SAFETY: v is a value of this call; fails (pending error) if it isn't an ArrayBuffer.
    check(unsafe { sys::napi_get_arraybuffer_info(env, v, &mut data, &mut len) })?;
    Ok((data.cast(), len))
}
