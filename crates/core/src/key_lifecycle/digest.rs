//! `contentDigest`: a BLAKE3 digest of a database's logical content, equal for two
//! databases exactly when they hold the same schema and the same rows.
//!
//! Why not the page images: encrypting changes them all. An encrypted page keeps 80
//! bytes for IV and HMAC (header byte 20), a plaintext better-sqlite3 file none, so
//! `encrypt` and `decrypt` rebuild the b-trees (`VACUUM INTO`) and pages split
//! differently; even a page-for-page copy changes header counters. What a user wants
//! proved is "nothing in my data changed", so the digest covers, in this order:
//!
//! 1. the domain tag `cipherlite content digest v1`;
//! 2. the header values SQL can see: `user_version`, `application_id`, text encoding;
//! 3. every row of `sqlite_schema` (type, name, tbl_name, sql — not rootpage, a page
//!    number) ordered by type and name;
//! 4. for every table (`PRAGMA table_list`: ordinary, shadow and `sqlite_*` tables, not
//!    views or virtual tables, whose content lives in shadow tables), ordered by name:
//!    its name, then each row as `rowid` (rowid tables, in rowid order) and every
//!    column value (WITHOUT ROWID tables: in primary-key order). SQL reaches the rowid
//!    only by the names `rowid`, `oid` and `_rowid_`: a table with columns of all three
//!    names (and no `INTEGER PRIMARY KEY`) hides it, and its rows are hashed without
//!    rowids, in SQLite's scan order — two such tables that differ only in rowids have
//!    the same digest.
//!
//! Values are encoded without ambiguity: a type tag, then an 8-byte little-endian
//! integer, the IEEE-754 bits of a real, or a length-prefixed byte string. Indexes are
//! not hashed: they are derived from the rows, and `integrity_check` verifies they match.
//! Free pages, page layout, journal mode, page size and the file change counter are not
//! content and are not hashed.

use cipherlite_sqlite::{ColumnType, Connection, Error as SqlError, Statement};
use std::fmt::Write as _;

const TAG_NULL: u8 = 0;
const TAG_INTEGER: u8 = 1;
const TAG_REAL: u8 = 2;
const TAG_TEXT: u8 = 3;
const TAG_BLOB: u8 = 4;
const ROW: u8 = 0x52; // 'R'
const END: u8 = 0x45; // 'E'

/// The digest of `main` on `conn`, as 64 lowercase hex digits. Runs in one read
/// transaction when none is open (so it sees one snapshot).
pub fn content_digest(conn: &Connection) -> Result<String, SqlError> {
    let began = conn.is_autocommit();
    if began {
        conn.execute_batch("BEGIN")?;
    }
    let result = digest_main(conn);
    if began {
        let _ = conn.execute_batch("COMMIT");
    }
    let hash = result?;
    let mut hex = String::with_capacity(64);
    for b in hash.as_bytes() {
        let _ = write!(hex, "{b:02x}");
    }
    Ok(hex)
}

fn digest_main(conn: &Connection) -> Result<blake3::Hash, SqlError> {
    let mut h = blake3::Hasher::new();
    h.update(b"cipherlite content digest v1\0");
    for pragma in ["user_version", "application_id", "encoding"] {
        hash_rows(conn, &format!("PRAGMA main.{pragma}"), &mut h)?;
    }
    hash_rows(
        conn,
        "SELECT type, name, tbl_name, sql FROM main.sqlite_schema ORDER BY type, name",
        &mut h,
    )?;
    for (name, without_rowid) in tables(conn)? {
        hash_bytes(&mut h, TAG_TEXT, name.as_bytes());
        let quoted = quote_ident(&name);
        let sql = if without_rowid {
            format!("SELECT * FROM main.{quoted}")
        } else {
            match rowid_alias(conn, &name)? {
                Some(alias) => format!("SELECT {alias}, * FROM main.{quoted} ORDER BY {alias}"),
                None => format!("SELECT * FROM main.{quoted}"),
            }
        };
        hash_rows(conn, &sql, &mut h)?;
    }
    Ok(h.finalize())
}

/// The tables whose rows are content: `(name, is WITHOUT ROWID)`, ordered by name.
fn tables(conn: &Connection) -> Result<Vec<(String, bool)>, SqlError> {
    let mut out = Vec::new();
    let (stmt, _) = conn.prepare(
        "SELECT name, wr FROM pragma_table_list WHERE schema = 'main' \
         AND type IN ('table', 'shadow') AND name <> 'sqlite_schema' ORDER BY name",
        false,
    )?;
    let Some(mut stmt) = stmt else {
        return Ok(out);
    };
    while stmt.step()? {
        let name = String::from_utf8_lossy(stmt.column_text(0)).into_owned();
        out.push((name, stmt.column_int64(1) != 0));
    }
    Ok(out)
}

/// A name for the rowid that no column of `table` shadows.
fn rowid_alias(conn: &Connection, table: &str) -> Result<Option<&'static str>, SqlError> {
    let sql = format!(
        "SELECT lower(name) FROM pragma_table_xinfo({}, 'main')",
        quote_literal(table)
    );
    let (stmt, _) = conn.prepare(&sql, false)?;
    let mut columns = Vec::new();
    if let Some(mut stmt) = stmt {
        while stmt.step()? {
            columns.push(String::from_utf8_lossy(stmt.column_text(0)).into_owned());
        }
    }
    Ok(["_rowid_", "rowid", "oid"]
        .into_iter()
        .find(|alias| !columns.iter().any(|c| c == alias)))
}

fn hash_rows(conn: &Connection, sql: &str, h: &mut blake3::Hasher) -> Result<(), SqlError> {
    let (stmt, _) = conn.prepare(sql, false)?;
    if let Some(mut stmt) = stmt {
        while stmt.step()? {
            h.update(&[ROW]);
            hash_row(&stmt, h);
        }
    }
    h.update(&[END]);
    Ok(())
}

fn hash_row(stmt: &Statement, h: &mut blake3::Hasher) {
    let n = stmt.column_count();
    h.update(&(n as u32).to_le_bytes());
    for i in 0..n {
        match stmt.column_type(i) {
            ColumnType::Null => {
                h.update(&[TAG_NULL]);
            }
            ColumnType::Integer => {
                h.update(&[TAG_INTEGER]);
                h.update(&stmt.column_int64(i).to_le_bytes());
            }
            ColumnType::Float => {
                h.update(&[TAG_REAL]);
                h.update(&stmt.column_double(i).to_bits().to_le_bytes());
            }
            ColumnType::Text => hash_bytes(h, TAG_TEXT, stmt.column_text(i)),
            ColumnType::Blob => hash_bytes(h, TAG_BLOB, stmt.column_blob(i)),
        }
    }
}

fn hash_bytes(h: &mut blake3::Hasher, tag: u8, bytes: &[u8]) {
    h.update(&[tag]);
    h.update(&(bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

pub(crate) fn quote_literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}
