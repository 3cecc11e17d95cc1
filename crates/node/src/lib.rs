//! The Node-API bridge: the only Rust that knows napi. It converts and delegates; the
//! decisions live below it, in `connection_policy` (opening, encryption, set-up) and
//! `sqlite`. Files, bottom to top (no two import each other, docs/design.md §5.3): `js`,
//! `results`, `params`; `callbacks`; `state`; `registry`; `statement`; `instance`;
//! `database` and the files adding `Database` methods; `fast`.

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
    cipherlite_sqlite::version().to_string()
}
