//! The key lifecycle's entry points: `db.rekey()`, `db.verify()`, `Database.encrypt()`,
//! `Database.decrypt()` (lib/methods/key-lifecycle.js checks the arguments). They convert and
//! delegate: `rekey` to the core's `Session`, the others to `key_lifecycle`.

use super::{
    callbacks::{call, holder, holder_get, HandleScope, JsRef},
    database::{required_key, Database},
    js::{self, check, JsAny, JsResult, Thrown},
};
use cipherlite_core::connection_policy::{self as policy, CipherLayout};
use cipherlite_core::key_lifecycle;
use napi::{sys, Env};
use napi_derive::napi;
use std::{cell::RefCell, ptr};
use zeroize::Zeroizing;

fn key_lifecycle_error(e: key_lifecycle::Error) -> Thrown {
    Thrown::Sqlite(e.into_sqlite())
}

fn key_argument(
    env: sys::napi_env,
    key: JsAny,
    scheme: key_lifecycle::CipherScheme,
) -> JsResult<Zeroizing<[u8; 32]>> {
    required_key(
        env,
        key.0,
        "Expected the key to be a 32-byte Buffer or Uint8Array",
        scheme,
    )
}

/// A JS `progress(done, total)` callback (or none). An exception it throws is kept and
/// rethrown once the operation is over (a half-done copy is not abandoned for it).
struct JsProgress {
    env: sys::napi_env,
    callback: Option<JsRef>,
    thrown: RefCell<Option<JsRef>>,
    last_percent: i64,
}

impl JsProgress {
    fn new(env: sys::napi_env, f: JsAny) -> JsResult<JsProgress> {
        // SAFETY: f is a value of the current call.
        let is_fn = unsafe { js::type_of(env, f.0) } == sys::ValueType::napi_function;
        Ok(JsProgress {
            env,
            callback: if is_fn {
                Some(JsRef::new(env, f.0)?)
            } else {
                None
            },
            thrown: RefCell::new(None),
            last_percent: -1,
        })
    }

    /// Calls the callback when the percentage changed (and at the end).
    fn report(&mut self, done: u64, total: u64) {
        let Some(cb) = &self.callback else { return };
        if self.thrown.borrow().is_some() {
            return;
        }
        let percent = (done * 100).checked_div(total).unwrap_or(100) as i64;
        if percent == self.last_percent && done != total {
            return;
        }
        self.last_percent = percent;
        let env = self.env;
        let _scope = HandleScope::open(env);
        let reported = (|| -> JsResult<()> {
            let mut args = [ptr::null_mut(); 2];
            // SAFETY: on the JS thread inside a handle scope; the values live in it.
            unsafe {
                check(sys::napi_create_double(env, done as f64, &mut args[0]))?;
                check(sys::napi_create_double(env, total as f64, &mut args[1]))?;
            }
            // SAFETY: on the JS thread, inside the handle scope opened above.
            if unsafe { call(env, cb.get(), &args) }.is_err() {
                let mut exc = ptr::null_mut();
                // SAFETY: on the JS thread; the callback's exception is pending.
                check(unsafe { sys::napi_get_and_clear_last_exception(env, &mut exc) })?;
                *self.thrown.borrow_mut() = Some(holder(env, exc)?);
            }
            Ok(())
        })();
        // Progress is advisory: a report that could not be made is not the operation's
        // failure (what the callback threw is kept above and rethrown by `finish`).
        drop(reported);
    }

    /// Rethrows what the callback threw, if anything.
    fn finish(self) -> JsResult<()> {
        let Some(thrown) = self.thrown.into_inner() else {
            return Ok(());
        };
        let exc = holder_get(&thrown)?;
        // SAFETY: on the JS thread; exc is the value the callback threw.
        unsafe { sys::napi_throw(self.env, exc) };
        Err(Thrown::Pending)
    }
}

/// What `db.verify()` returns (lib/methods/key-lifecycle.js turns missing values into null).
#[napi(object)]
pub struct NativeVerifyReport {
    pub pages: f64,
    pub wal_frames: f64,
    pub encrypted: bool,
    pub ok: bool,
    pub first_bad_page: Option<f64>,
    pub integrity: String,
    pub content_digest: Option<String>,
}

impl From<key_lifecycle::VerifyReport> for NativeVerifyReport {
    fn from(r: key_lifecycle::VerifyReport) -> Self {
        NativeVerifyReport {
            pages: r.pages as f64,
            wal_frames: r.wal_frames as f64,
            encrypted: r.encrypted,
            ok: r.ok,
            first_bad_page: r.first_bad_page.map(|p| p as f64),
            integrity: r.integrity,
            content_digest: r.content_digest,
        }
    }
}

#[napi]
impl Database {
    /// `db.rekey(newKey, layout, cipher, algorithm, progress)`: `cipher` (and `algorithm`
    /// with it) the format to move to, the current one when null.
    #[napi(catch_unwind)]
    pub fn rekey(
        &self,
        new_key: JsAny,
        layout: Option<String>,
        cipher: Option<String>,
        algorithm: Option<String>,
        progress: JsAny,
    ) -> napi::Result<()> {
        let db = &self.shared;
        let run = || -> JsResult<()> {
            db.require_running()?;
            let old_key = db.session().require_rekeyable()?;
            let cipher = policy::scheme_named(cipher.as_deref(), algorithm.as_deref());
            let current = db.session().format().map(|(scheme, _)| scheme);
            let target = cipher.or(current).unwrap_or_default();
            let new_key = key_argument(db.env(), new_key, target)?;
            let mut progress = JsProgress::new(db.env(), progress)?;
            let layout = policy::layout_named(layout.as_deref());
            db.session()
                .rekey(&old_key, new_key, (layout, cipher), &mut |d, t| {
                    progress.report(d, t)
                })?;
            progress.finish()
        };
        run().map_err(|e| db.throw(e))
    }

    /// `db.verify()`.
    #[napi(catch_unwind)]
    pub fn verify(&self) -> napi::Result<NativeVerifyReport> {
        let db = &self.shared;
        let run = || -> JsResult<NativeVerifyReport> {
            db.require_idle()?;
            let _busy = db.busy_guard();
            db.session().verify().map(Into::into)
        };
        run().map_err(|e| db.throw(e))
    }

    /// True when the database is encrypted (opened with a key).
    #[napi(getter, catch_unwind)]
    pub fn encrypted(&self) -> bool {
        self.shared.key().is_some()
    }

    /// The page format of an encrypted database (`'sqlcipher'` or `'aegis'`), or null.
    #[napi(getter, catch_unwind)]
    pub fn cipher(&self) -> Option<&'static str> {
        self.shared
            .session()
            .format()
            .map(|(scheme, _)| scheme.name())
    }

    /// The AEGIS algorithm of an encrypted database in the `aegis` format
    /// (`'aegis-256'`, `'aegis-128l'`, ...), or null.
    #[napi(getter, catch_unwind)]
    pub fn algorithm(&self) -> Option<&'static str> {
        let (scheme, _) = self.shared.session().format()?;
        scheme.aegis_algorithm().map(|a| a.name())
    }
}

/// Runs `f`, throwing its error as a SqliteError of `error_class`.
fn with_error_class<T>(
    env: &Env,
    error_class: JsAny,
    f: impl FnOnce() -> JsResult<T>,
) -> napi::Result<T> {
    let raw = env.raw();
    let mut class_ref = ptr::null_mut();
    // SAFETY: error_class is a value of the current call; the reference is deleted below.
    unsafe { sys::napi_create_reference(raw, error_class.0, 1, &mut class_ref) };
    let result = f().map_err(|e| js::throw(raw, class_ref, e));
    if !class_ref.is_null() {
        // SAFETY: created above, deleted once.
        unsafe { sys::napi_delete_reference(raw, class_ref) };
    }
    result
}

/// The `pageSize` option of encrypt/decrypt (checked in JS; checked again by the VFS).
fn page_size_option(page_size: Option<u32>) -> usize {
    page_size.map_or(policy::DEFAULT_PAGE_SIZE, |n| n as usize)
}

/// `Database.encrypt(path, key, { cipherLayout, pageSize, progress })`.
#[napi(catch_unwind)]
// The JS call's arguments, each converted here (lib/methods/key-lifecycle.js checks them).
#[allow(clippy::too_many_arguments)]
pub fn encrypt_database(
    env: Env,
    path: String,
    key: JsAny,
    layout: Option<String>,
    cipher: Option<String>,
    algorithm: Option<String>,
    page_size: Option<u32>,
    progress: JsAny,
    error_class: JsAny,
) -> napi::Result<()> {
    with_error_class(&env, error_class, || {
        let scheme =
            policy::scheme_named(cipher.as_deref(), algorithm.as_deref()).unwrap_or_default();
        let key = key_argument(env.raw(), key, scheme)?;
        let mut progress = JsProgress::new(env.raw(), progress)?;
        let layout = policy::layout_named(layout.as_deref()).unwrap_or(CipherLayout::Sqlite3mc);
        let page_size = page_size_option(page_size);
        key_lifecycle::encrypt_file_in(&path, &key, scheme, layout, page_size, &mut |d, t| {
            progress.report(d, t)
        })
        .map_err(key_lifecycle_error)?;
        progress.finish()
    })
}

/// `Database.decrypt(path, key, destination, { pageSize, progress })`.
#[napi(catch_unwind)]
// The JS call's arguments, each converted here (lib/methods/key-lifecycle.js checks them).
#[allow(clippy::too_many_arguments)]
pub fn decrypt_database(
    env: Env,
    path: String,
    key: JsAny,
    destination: String,
    cipher: Option<String>,
    algorithm: Option<String>,
    page_size: Option<u32>,
    progress: JsAny,
    error_class: JsAny,
) -> napi::Result<()> {
    with_error_class(&env, error_class, || {
        let scheme =
            policy::scheme_named(cipher.as_deref(), algorithm.as_deref()).unwrap_or_default();
        let key = key_argument(env.raw(), key, scheme)?;
        let mut progress = JsProgress::new(env.raw(), progress)?;
        let page_size = page_size_option(page_size);
        key_lifecycle::decrypt_file_in(
            &path,
            (&key, scheme),
            page_size,
            &destination,
            &mut |d, t| progress.report(d, t),
        )
        .map_err(key_lifecycle_error)?;
        progress.finish()
    })
}
