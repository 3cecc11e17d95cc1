//! SQL helpers of the storage sweeps (power loss, faults, out of memory, codec failures).

#![allow(dead_code)]

use cipherlite_sqlite::{Connection, Error, ExecAbort, Result};
use sha2::{Digest, Sha256};

/// Runs every statement of `sql`, stopping at the first error.
pub fn exec(conn: &Connection, sql: &str) -> Result<()> {
    conn.exec_each(sql, |_| Ok(())).map_err(|e| match e {
        ExecAbort::Sqlite(e) => e,
        ExecAbort::Caller => Error::new(1, "stopped"),
    })
}

/// The rows of `sql` as text: columns ended by `|`, rows by a newline.
pub fn rows(conn: &Connection, sql: &str) -> Result<String> {
    let (stmt, _) = conn.prepare(sql, false)?;
    let mut stmt = stmt.expect("a statement");
    let mut out = String::new();
    while stmt.step()? {
        for i in 0..stmt.column_count() {
            out.push_str(&String::from_utf8_lossy(stmt.column_text(i)));
            out.push('|');
        }
        out.push('\n');
    }
    Ok(out)
}

/// A digest of what table `t(a, b)` holds.
pub fn content(conn: &Connection) -> Result<String> {
    let text = rows(conn, "SELECT a, b FROM t ORDER BY a")?;
    Ok(Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}
