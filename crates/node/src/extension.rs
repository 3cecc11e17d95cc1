//! `db.loadExtension()`: loads a SQLite extension into the connection, and again into the
//! connection a rekey reopens.

use super::{database::Database, js::JsResult};
use napi_derive::napi;
use std::rc::Rc;

#[napi]
impl Database {
    #[napi(catch_unwind)]
    pub fn load_extension(&self, path: String, entry_point: Option<String>) -> napi::Result<()> {
        let db = &self.shared;
        let run = || -> JsResult<()> {
            db.require_idle()?;
            let registration_key = format!("extension {path}\0{entry_point:?}");
            let register = move |conn: &cipherlite_sqlite::Connection| -> JsResult<()> {
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
