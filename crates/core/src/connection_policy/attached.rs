//! Databases ATTACHed to an encrypted connection go through its keyed VFS and so are
//! encrypted with its key (docs/design.md §4.2); `ATTACH … KEY` itself is refused when it
//! is prepared (`setup.rs`).

use cipherlite_sqlite::{ffi, Connection};

/// After a statement ran on an encrypted connection: a database it ATTACHed that is new
/// (an empty or missing file) needs the connection's format's `reserve` bytes per page
/// (SQLCipher's 80, AEGIS' 64) before
/// anything is written to it. Does nothing when no ATTACH was prepared since the last
/// call (the authorizer `setup::configure` installs notices them).
pub fn reserve_new_attached_databases(conn: &Connection, reserve: std::ffi::c_int) {
    if !conn.take_attach_seen() {
        return;
    }
    for (schema, file) in conn.attached_databases() {
        if !file.is_empty() && std::fs::metadata(&file).map_or(true, |m| m.len() == 0) {
            let mut reserve = reserve;
            let _ = conn.file_control_int(&schema, ffi::SQLITE_FCNTL_RESERVE_BYTES, &mut reserve);
        }
    }
}
