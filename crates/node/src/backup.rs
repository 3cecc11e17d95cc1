//! `db.backup()`: the native side of the stepping loop in lib/methods/backup.js. Which
//! VFS (and key) the destination gets, and what an aborted backup leaves, is decided in
//! `connection_policy::backup`.

use super::{
    callbacks::{call, holder, holder_get, HandleScope, JsRef},
    database::Database,
    db_shared::DbShared,
    js::{self, check, JsAny, JsResult, Thrown},
};
use cipherlite_core::connection_policy::{
    self as policy, BackupDestination, BackupKey, RunningBackup,
};
use napi::sys;
use napi_derive::napi;
use std::{cell::RefCell, ops::ControlFlow, ptr, rc::Rc};

/// Pages between two progress reports of a rebuilt backup when nothing says otherwise
/// (lib/methods/backup.js's `DEFAULT_PAGES_PER_STEP`).
const DEFAULT_PAGES_PER_REPORT: u64 = 100;

/// Calls `f(total, remaining)` (lib/methods/backup.js's wrapper, which checks what
/// `progress` returned) and reads the pages to copy before the next call. An exception it
/// throws is cleared and kept (`Err(Some)`), to be thrown once the copy has stopped;
/// `Err(None)`: Node-API failed.
fn report_progress(
    env: sys::napi_env,
    f: sys::napi_value,
    total: u64,
    remaining: u64,
) -> Result<u64, Option<JsRef>> {
    let _scope = HandleScope::open(env);
    let mut args = [ptr::null_mut(); 2];
    // SAFETY: on the JS thread inside a handle scope; the values live in it.
    unsafe {
        check(sys::napi_create_double(env, total as f64, &mut args[0])).map_err(|_| None)?;
        check(sys::napi_create_double(env, remaining as f64, &mut args[1])).map_err(|_| None)?;
    }
    // SAFETY: on the JS thread, inside the handle scope opened above; f is a function
    // value of the call that is still running.
    match unsafe { call(env, f, &args) } {
        Ok(returned) => {
            let mut pages = 0f64;
            // SAFETY: on the JS thread; returned is a live value. A non-number leaves 0.
            unsafe { sys::napi_get_value_double(env, returned, &mut pages) };
            // The wrapper returns a whole number of pages, 0..=0x7fffffff.
            Ok(if pages.is_finite() && pages > 0.0 {
                pages as u64
            } else {
                0
            })
        }
        Err(_) => {
            let mut exc = ptr::null_mut();
            // SAFETY: on the JS thread; the callback's exception is pending.
            check(unsafe { sys::napi_get_and_clear_last_exception(env, &mut exc) })
                .map_err(|_| None)?;
            Err(holder(env, exc).ok())
        }
    }
}

#[napi(js_name = "NativeBackup")]
pub struct NativeBackup {
    db: Rc<DbShared>,
    slot: Rc<RefCell<RunningBackup>>,
}

#[napi]
impl NativeBackup {
    /// Copies up to `pages` pages; returns `[totalPages, remainingPages]`.
    #[napi(catch_unwind)]
    pub fn transfer(&self, pages: i32) -> napi::Result<Vec<i32>> {
        let run = || -> JsResult<Vec<i32>> {
            self.db.require_open()?;
            let progress = self.slot.borrow_mut().step(pages)?;
            Ok(vec![progress.total_pages, progress.remaining_pages])
        };
        run().map_err(|e| self.db.throw(e))
    }

    #[napi(catch_unwind)]
    pub fn close(&self) {
        self.slot.borrow_mut().close();
    }
}

#[napi]
impl Database {
    /// `db.backup(dest, { key, cipher, algorithm })` when pages cannot be copied as they
    /// are: a plaintext database under a key, or an encrypted one into another page format
    /// (`cipher` and `algorithm`; `None` keeps the source's, SQLCipher 4 for a plaintext
    /// source). The copy is rebuilt (`Session::backup_rebuilt`); `report(totalPages,
    /// remainingPages)` (lib/methods/backup.js's wrapper of the `progress` option, or not a
    /// function) returns the pages to copy before the next call, and what it throws stops
    /// the copy and is rethrown. Returns the source's page count.
    #[napi(catch_unwind)]
    pub fn backup_encrypted(
        &self,
        attached: String,
        destination: String,
        key: JsAny,
        cipher: Option<String>,
        algorithm: Option<String>,
        report: JsAny,
    ) -> napi::Result<f64> {
        let db = &self.shared;
        let run = || -> JsResult<f64> {
            db.require_open()?;
            db.require_not_busy()?;
            let named = policy::scheme_named(cipher.as_deref(), algorithm.as_deref());
            let key = super::database::required_key(
                db.env(),
                key.0,
                "Expected the \"key\" option of backup() to be a 32-byte Buffer or Uint8Array, or null",
                db.session().rebuilt_backup_format(named).0,
            )?;
            let env = db.env();
            // SAFETY: report is a value of the current call.
            let report_fn = (unsafe { js::type_of(env, report.0) }
                == sys::ValueType::napi_function)
                .then_some(report.0);
            let mut thrown = None;
            let mut progress = |total: u64, remaining: u64| match report_fn {
                None => ControlFlow::Continue(DEFAULT_PAGES_PER_REPORT),
                Some(f) => match report_progress(env, f, total, remaining) {
                    Ok(pages) => ControlFlow::Continue(pages),
                    Err(caught) => {
                        thrown = Some(caught);
                        ControlFlow::Break(())
                    }
                },
            };
            let _busy = db.busy_guard();
            let copied = db.session().backup_rebuilt(
                (&attached, &destination),
                (&key, named),
                &mut progress,
            );
            // What the callback threw is what stopped the copy.
            if let Some(caught) = thrown {
                let Some(exc) = caught else {
                    return Err(Thrown::Pending);
                };
                let exc = holder_get(&exc)?;
                // SAFETY: on the JS thread; exc is the value the callback threw.
                unsafe { sys::napi_throw(env, exc) };
                return Err(Thrown::Pending);
            }
            Ok(copied?.source_pages as f64)
        };
        run().map_err(|e| db.throw(e))
    }

    #[napi(catch_unwind)]
    /// `key_mode`: 0 = the destination gets the source's key (or none), 1 = plaintext,
    /// 2 = encrypted with `key`. Pages are copied as they are, so a key of its own needs
    /// an encrypted source (80 reserved bytes per page); lib/methods/backup.js takes the
    /// other way (copy, then encrypt) for a plaintext source.
    pub fn backup(
        &self,
        attached: String,
        destination: String,
        unlink: bool,
        key_mode: u32,
        key: JsAny,
    ) -> napi::Result<NativeBackup> {
        let db = &self.shared;
        let run = || -> JsResult<NativeBackup> {
            db.require_open()?;
            db.require_not_busy()?;
            let own_key;
            let dest = match key_mode {
                0 => db.backup_destination(BackupKey::SameAsSource)?,
                1 => db.backup_destination(BackupKey::Plaintext)?,
                _ => {
                    BackupDestination::allow_own_key(db.key().is_some())?;
                    own_key = super::database::required_key(
                        db.env(),
                        key.0,
                        "Expected the \"key\" option of backup() to be a 32-byte Buffer or Uint8Array, or null",
                        db.session().format().map(|(s, _)| s).unwrap_or_default(),
                    )?;
                    db.backup_destination(BackupKey::Own(&own_key))?
                }
            };
            let backup = db.with_conn(|conn| {
                Ok(RunningBackup::start(
                    conn,
                    &attached,
                    &destination,
                    dest,
                    unlink,
                )?)
            })?;
            let slot = Rc::new(RefCell::new(backup));
            db.register_backup(Rc::downgrade(&slot));
            Ok(NativeBackup {
                db: db.clone(),
                slot,
            })
        };
        run().map_err(|e| db.throw(e))
    }
}
