//! The set-up every connection gets once open (docs/design.md §3.2): better-sqlite3's
//! (docs/better-sqlite3-behaviour.md §2.16) and ours — the key pragmas (and, encrypted,
//! other page sizes) fail instead of being ignored, and with them `ATTACH … KEY`.

use super::pragmas;
use cipherlite_sqlite::{ffi, Connection, Result};

/// V8's maximum string length on 64-bit platforms (`v8::String::kMaxLength`, the same in
/// Node 20 to 26), in UTF-16 code units: the cap for SQLite's length limits, so every TEXT
/// value fits a JS string (a string's UTF-8 is at least as many bytes as it has code
/// units). The bridge sizes its result batches by it too.
pub const MAX_JS_STRING_LENGTH: usize = (1 << 29) - 24;

/// Configures a freshly opened connection: the authorizer refusing the pragmas
/// `pragmas::refused_pragma_plain`/`refused_pragma_encrypted` name (which also refuses
/// `ATTACH … KEY` at prepare time, see `Connection::prepare`), the busy timeout,
/// better-sqlite3's length limits, extension loading for the C API, defensive mode, and
/// the `evolu_*` storage functions. `encrypted_page_size` is the page size of an
/// encrypted connection, `None` for a plaintext one.
pub fn configure(
    conn: &mut Connection,
    busy_timeout: u32,
    encrypted_page_size: Option<usize>,
) -> Result<()> {
    match encrypted_page_size {
        Some(page_size) => {
            conn.deny_pragmas(Box::new(move |name: &str, argument: Option<&str>| {
                pragmas::refused_pragma_encrypted(name, argument, page_size)
            }))?
        }
        None => conn.deny_pragmas(Box::new(pragmas::refused_pragma_plain))?,
    }
    conn.busy_timeout(busy_timeout.min(i32::MAX as u32) as i32)?;
    conn.set_limit(ffi::SQLITE_LIMIT_LENGTH, MAX_JS_STRING_LENGTH as i32);
    conn.set_limit(ffi::SQLITE_LIMIT_SQL_LENGTH, MAX_JS_STRING_LENGTH as i32);
    conn.set_db_config_flag(ffi::SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, true)?;
    conn.set_db_config_flag(ffi::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    cipherlite_storage::register_sql_functions(conn)?;
    Ok(())
}

/// `unsafeMode(on)`: defensive mode is off exactly while unsafe mode is on.
pub fn set_unsafe_mode(conn: &Connection, on: bool) -> Result<()> {
    conn.set_db_config_flag(ffi::SQLITE_DBCONFIG_DEFENSIVE, !on)
}
