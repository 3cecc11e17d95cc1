//! The Node-API bridge: the only Rust that knows napi. It converts and delegates; the
//! logic lives in `sqlite`, `vfs`, `codec` and `storage`.

pub mod backup;
pub(crate) mod callbacks;
pub mod database;
pub mod extension;
pub mod fast;
pub mod functions;
pub(crate) mod instance;
pub mod js;
pub mod keys;
pub mod params;
pub(crate) mod registry;
pub mod results;
pub mod serialize;
pub(crate) mod state;
pub mod statement;
pub mod table;

use napi_derive::napi;

/// The SQLite version compiled in (`sqlite3_libversion`).
#[napi]
pub fn sqlite_version() -> String {
    crate::sqlite::version().to_string()
}
