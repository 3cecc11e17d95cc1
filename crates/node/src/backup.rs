//! `db.backup()`: the native side of the stepping loop in lib/methods/backup.js. Which
//! VFS (and key) the destination gets, and what an aborted backup leaves, is decided in
//! `connection_policy::backup`.

use super::{
    database::Database,
    db_shared::DbShared,
    js::{JsAny, JsResult},
};
use cipherlite_core::connection_policy::{
    self as policy, BackupDestination, BackupKey, RunningBackup,
};
use cipherlite_core::key_lifecycle;
use napi_derive::napi;
use std::{cell::RefCell, rc::Rc};

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
    /// source). The
    /// copy is rebuilt (`key_lifecycle::backup_encrypted`), in the source's page size
    /// (4096 for a plaintext source); returns the pages written.
    #[napi(catch_unwind)]
    pub fn backup_encrypted(
        &self,
        attached: String,
        destination: String,
        key: JsAny,
        cipher: Option<String>,
        algorithm: Option<String>,
    ) -> napi::Result<f64> {
        let db = &self.shared;
        let run = || -> JsResult<f64> {
            db.require_open()?;
            db.require_not_busy()?;
            let named = policy::scheme_named(cipher.as_deref(), algorithm.as_deref());
            let (scheme, page_size, source_keyed) = match db.session().format() {
                Some((source_scheme, page_size)) => {
                    (named.unwrap_or(source_scheme), page_size, true)
                }
                None => (named.unwrap_or_default(), policy::DEFAULT_PAGE_SIZE, false),
            };
            let key = super::database::required_key(
                db.env(),
                key.0,
                "Expected the \"key\" option of backup() to be a 32-byte Buffer or Uint8Array, or null",
                scheme,
            )?;
            let _busy = db.busy_guard();
            db.with_conn(|conn| {
                key_lifecycle::backup_encrypted(
                    conn,
                    &attached,
                    &destination,
                    (&key, scheme),
                    (page_size, source_keyed),
                    &mut |_, _| {},
                )
                .map(|pages| pages as f64)
                .map_err(|e| e.into_sqlite().into())
            })
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
