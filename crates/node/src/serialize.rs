//! `db.serialize()`: a copy of a database's bytes as a Buffer (`new Database(buffer)`, the
//! other direction, is part of opening: `connection_policy::deserialize`).

use super::{
    database::Database,
    js::{self, JsAny, JsResult, Thrown},
};
use napi::sys;
use napi_derive::napi;
use std::ptr;

#[napi]
impl Database {
    /// The bytes of database `attached` as a Buffer.
    #[napi(catch_unwind)]
    pub fn serialize(&self, attached: String) -> napi::Result<JsAny> {
        let db = &self.shared;
        let run = || -> JsResult<JsAny> {
            db.require_idle()?;
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
                    db.env(),
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
}
