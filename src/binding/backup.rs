//! `db.backup()` (the stepping loop is in lib/methods/backup.js), `db.serialize()` and
//! `db.loadExtension()`.

use super::{
    database::{Database, DbShared},
    js::{self, JsAny, JsResult, Thrown},
};
use crate::connection_policy::{BackupDestination, BackupKey};
use crate::sqlite::backup::Backup;
use napi::sys;
use napi_derive::napi;
use std::{
    cell::RefCell,
    ptr,
    rc::{Rc, Weak},
};

/// A running backup and whether its destination file is ours to delete if it is aborted.
pub(crate) struct BackupSlot {
    backup: Backup,
    /// The destination did not exist before: an aborted backup removes it.
    unlink: bool,
    /// The VFS the destination is written through (one of its own, for a key of its own,
    /// is unregistered once the backup's destination connection is closed).
    destination: Option<BackupDestination>,
}

impl BackupSlot {
    /// Finishes the backup; an unfinished one into a new file deletes that file.
    pub fn close(&mut self) {
        let filename = if self.unlink {
            self.backup.dest_filename()
        } else {
            None
        };
        self.backup.close();
        drop(self.destination.take());
        if let Some(f) = filename {
            let _ = std::fs::remove_file(&f);
        }
        self.unlink = false;
    }
}

#[napi(js_name = "NativeBackup")]
pub struct NativeBackup {
    db: Rc<DbShared>,
    slot: Rc<RefCell<BackupSlot>>,
}

#[napi]
impl NativeBackup {
    /// Copies up to `pages` pages; returns `[totalPages, remainingPages]`.
    #[napi(catch_unwind)]
    pub fn transfer(&self, pages: i32) -> napi::Result<Vec<i32>> {
        let run = || -> JsResult<Vec<i32>> {
            self.db.require_open()?;
            let mut slot = self.slot.borrow_mut();
            let progress = slot.backup.step(pages)?;
            if progress.done {
                slot.unlink = false;
            }
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
                        db.env,
                        key.0,
                        "Expected the \"key\" option of backup() to be a 32-byte Buffer or Uint8Array, or null",
                    )?;
                    db.backup_destination(BackupKey::Own(&own_key))?
                }
            };
            let backup = db.with_conn(|conn| Ok(dest.start(conn, &attached, &destination)?))?;
            let slot = Rc::new(RefCell::new(BackupSlot {
                backup,
                unlink,
                destination: Some(dest),
            }));
            db.register_backup(Rc::downgrade(&slot));
            Ok(NativeBackup {
                db: db.clone(),
                slot,
            })
        };
        run().map_err(|e| db.throw(e))
    }

    /// The bytes of database `attached` as a Buffer.
    #[napi(catch_unwind)]
    pub fn serialize(&self, attached: String) -> napi::Result<JsAny> {
        let db = &self.shared;
        let run = || -> JsResult<JsAny> {
            db.require_open()?;
            db.require_not_busy()?;
            db.require_no_iterators()?;
            let bytes = db.with_conn(|conn| Ok(conn.serialize(&attached)?))?;
            let Some(bytes) = bytes else {
                // better-sqlite3 reports an unknown schema this way.
                return Err(Thrown::Error("Out of memory".into()));
            };
            let mut out = ptr::null_mut();
            let mut data = ptr::null_mut();
            // SAFETY: on the JS thread; napi copies the bytes into a new Buffer.
            js::check(unsafe {
                sys::napi_create_buffer_copy(
                    db.env,
                    bytes.len(),
                    bytes.as_ptr().cast(),
                    &mut data,
                    &mut out,
                )
            })?;
            Ok(JsAny(out))
        };
        run().map_err(|e| db.throw(e))
    }

    #[napi(catch_unwind)]
    pub fn load_extension(&self, path: String, entry_point: Option<String>) -> napi::Result<()> {
        let db = &self.shared;
        let run = || -> JsResult<()> {
            db.require_open()?;
            db.require_not_busy()?;
            db.require_no_iterators()?;
            let registration_key = format!("extension {path}\0{entry_point:?}");
            let register = move |conn: &crate::sqlite::Connection| -> JsResult<()> {
                Ok(conn.load_extension(&path, entry_point.as_deref())?)
            };
            db.with_conn(|conn| register(conn))?;
            // Loaded again on the connection a rekey reopens.
            db.remember_registration(registration_key, Rc::new(register));
            Ok(())
        };
        run().map_err(|e| db.throw(e))
    }
}

impl DbShared {
    pub fn require_no_iterators(&self) -> JsResult<()> {
        if self.iterators.get() > 0 {
            js::type_error(super::database::MSG_DB_BUSY)
        } else {
            Ok(())
        }
    }
}

pub(crate) type BackupRegistry = RefCell<Vec<Weak<RefCell<BackupSlot>>>>;

/// Aborts every backup still running (the database is closing).
pub(crate) fn abort_backups(registry: &BackupRegistry) {
    for slot in registry.borrow_mut().drain(..) {
        if let Some(slot) = slot.upgrade() {
            if let Ok(mut s) = slot.try_borrow_mut() {
                s.close();
            }
        }
    }
}
