//! The Node-API bridge, built as the addon (`cipherlite.node`): the only crate that knows
//! napi. It converts arguments and delegates; the decisions live below it, in
//! `cipherlite-core` (opening, encryption, set-up, the connection's life and the key
//! lifecycle) and `cipherlite-sqlite`. Files, bottom to top (no two import each other,
//! docs/design.md §5.3): `js`, `results`, `params`; `callbacks`; `db_shared`; `registry`;
//! `statement`; `instance`; `database` and the files adding `Database` methods;
//! `raw_entry_points`.

pub mod backup;
pub(crate) mod callbacks;
pub mod database;
pub(crate) mod db_shared;
pub mod extension;
pub mod functions;
pub(crate) mod instance;
pub mod js;
pub mod key_lifecycle;
pub mod params;
pub mod raw_entry_points;
pub(crate) mod registry;
pub mod results;
pub mod serialize;
pub mod statement;
pub mod table;

use napi_derive::napi;

/// The SQLite version compiled in (`sqlite3_libversion`).
#[napi]
pub fn sqlite_version() -> String {
    cipherlite_sqlite::version().to_string()
}
