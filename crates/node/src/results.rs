//! Result sets cross into JS column by column in one buffer (docs/design.md §5.2).
//!
//! The native side steps the statement and encodes a batch of rows; the JS side
//! (`lib/results.js`) reads the batch through typed-array views over the same
//! `ArrayBuffer` (memory that V8 owns) and builds rows with a factory compiled once per
//! column set. The TEXT values of a batch travel as one JS string that JS slices: a
//! one-byte (Latin-1) string of the values whose characters are all U+0000–U+00FF, made
//! without decoding (V8 makes such values one-byte strings too), and — when some value
//! has other characters — a second string of those values, from UTF-8 (`TAG_WIDE_TEXT`
//! cells; V8's UTF-8 decoder then runs over them alone, not over the whole batch). A
//! value of `BIG_TEXT_BYTES` or more (or one that would take the batch's strings past
//! V8's maximum string length) gets a JS string of its own, and the batch then ends with
//! its row. With big or wide text the batch's result is an array: the one-byte string,
//! then the big values in order (`TAG_BIG_TEXT` cells hold their index in it), then the
//! wide string if there is one (always last).
//!
//! Layout of the scratch buffer (little-endian as the platform; offsets in bytes):
//!
//! ```text
//! 0   u32 rows          4   u32 columns      8  u32 flags      12 u32 blob region offset
//! 16  f64|i64 lastInsertRowid (run)          24 u32 changes (run)  28 u32 unused
//! 32  slots: rows*columns × 8 bytes, column-major (cell = column*rows + row):
//!       NULL: unused  REAL/INTEGER-as-number: f64  INTEGER-as-BigInt: i64
//!       INT32 (an INTEGER-as-number in i32 range): i32, u32 unused
//!       TEXT: u32 start, u32 end (offsets into the one-byte batch string)
//!       WIDE TEXT: u32 start, u32 end (UTF-16 offsets into the wide batch string)
//!       BIG TEXT: u32 index into the result array, u32 unused
//!       BLOB: u32 start, u32 length (bytes, relative to the blob region)
//! ..  tags: rows*columns bytes (TAG_*)
//! ..  blob region
//! ```
//! Those offsets, the tags, flags and row modes are the constants below, defined only
//! here: the addon exports them as `layout` (`LAYOUT`, installed by `raw_entry_points.rs`) and
//! `lib/results.js` reads every number it needs from that object when it first meets an
//! addon; `__test__/27b-result-layout.test.js` checks the two sides agree on real batches.

use cipherlite_sqlite::{CellValue, RowCell, Statement};
use std::{ffi::CStr, mem::ManuallyDrop};

/// Header field offsets, in bytes from the start of the scratch buffer.
pub const ROWS_AT: usize = 0;
pub const COLUMNS_AT: usize = 4;
pub const FLAGS_AT: usize = 8;
/// Where the u32 offset of the blob region is.
pub const BLOB_REGION_AT: usize = 12;
/// `run()`'s `lastInsertRowid`: an f64, or an i64 with `FLAG_SAFE_INTEGERS`.
pub const LAST_INSERT_ROWID_AT: usize = 16;
/// `run()`'s `changes`, a u32.
pub const CHANGES_AT: usize = 24;
/// The header's size; the slots start here.
pub const HEADER_BYTES: usize = 32;
/// Bytes per cell slot (a f64, an i64 or two u32).
pub const SLOT_BYTES: usize = 8;

pub const TAG_NULL: u8 = 0;
pub const TAG_NUMBER: u8 = 1;
pub const TAG_BIGINT: u8 = 2;
pub const TAG_TEXT: u8 = 3;
pub const TAG_BLOB: u8 = 4;
pub const TAG_BIG_TEXT: u8 = 5;
/// An INTEGER read as a number that fits an i32: JS reads it as an int32, which V8 keeps
/// as a small integer in the row object. Read as an f64, V8 stores a double, and then
/// every such field of every row is a separately allocated number (16 bytes each, and
/// work for the garbage collector) — better-sqlite3's rows hold small integers there.
pub const TAG_INT32: u8 = 6;
/// TEXT with a character past U+00FF: a slice of the wide batch string.
pub const TAG_WIDE_TEXT: u8 = 7;

/// The statement reached its end (it has been reset).
pub const FLAG_DONE: u32 = 1;
/// The column names may have changed (first batch, or SQLite re-prepared the statement).
pub const FLAG_COLUMNS_CHANGED: u32 = 2;
/// The scratch buffer was replaced by a larger one: JS must fetch it again.
pub const FLAG_SCRATCH_REPLACED: u32 = 4;
/// INTEGER values in this batch are BigInts (`lastInsertRowid` too, for `run`).
pub const FLAG_SAFE_INTEGERS: u32 = 8;

/// Row shapes (docs/better-sqlite3-behaviour.md §6): `setMode`'s argument and result.
pub const MODE_FLAT: u32 = 0;
pub const MODE_PLUCK: u32 = 1;
pub const MODE_EXPAND: u32 = 2;
pub const MODE_RAW: u32 = 3;

/// A scratch buffer grown past this size (by a batch with large BLOBs, or a large row)
/// goes back to its initial size once JS has read the batch (JS asks with
/// `shrinkScratch`; the native side checks the size too).
pub const SCRATCH_KEEP_BYTES: usize = 1 << 20;

/// Everything of the layout JS needs, by name: the addon's `layout` object.
pub const LAYOUT: &[(&CStr, u32)] = &[
    (c"ROWS_AT", ROWS_AT as u32),
    (c"COLUMNS_AT", COLUMNS_AT as u32),
    (c"FLAGS_AT", FLAGS_AT as u32),
    (c"BLOB_REGION_AT", BLOB_REGION_AT as u32),
    (c"LAST_INSERT_ROWID_AT", LAST_INSERT_ROWID_AT as u32),
    (c"CHANGES_AT", CHANGES_AT as u32),
    (c"HEADER_BYTES", HEADER_BYTES as u32),
    (c"SLOT_BYTES", SLOT_BYTES as u32),
    (c"TAG_NULL", TAG_NULL as u32),
    (c"TAG_NUMBER", TAG_NUMBER as u32),
    (c"TAG_BIGINT", TAG_BIGINT as u32),
    (c"TAG_TEXT", TAG_TEXT as u32),
    (c"TAG_BLOB", TAG_BLOB as u32),
    (c"TAG_BIG_TEXT", TAG_BIG_TEXT as u32),
    (c"TAG_INT32", TAG_INT32 as u32),
    (c"TAG_WIDE_TEXT", TAG_WIDE_TEXT as u32),
    (c"FLAG_DONE", FLAG_DONE),
    (c"FLAG_COLUMNS_CHANGED", FLAG_COLUMNS_CHANGED),
    (c"FLAG_SCRATCH_REPLACED", FLAG_SCRATCH_REPLACED),
    (c"FLAG_SAFE_INTEGERS", FLAG_SAFE_INTEGERS),
    (c"MODE_FLAT", MODE_FLAT),
    (c"MODE_PLUCK", MODE_PLUCK),
    (c"MODE_EXPAND", MODE_EXPAND),
    (c"MODE_RAW", MODE_RAW),
    (c"SCRATCH_KEEP_BYTES", SCRATCH_KEEP_BYTES as u32),
];

/// Where a batch stops growing: past this much encoded data (or text), the rest of the
/// rows come in the next batch. Bounds the scratch buffer and what one retained sliced
/// string can keep alive. Both are sized for speed, measured on `.all()` of 10,000 rows:
/// - encoded data under the scratch buffer's keep size (`SCRATCH_KEEP_BYTES`, 1 MiB), so
///   a large read doesn't grow the buffer and shrink it again every time (a fresh,
///   zeroed ArrayBuffer is a page fault per 4 KiB touched);
/// - text small enough that the batch string is a regular V8 heap object even as a
///   two-byte string (under V8's 128 KiB `kMaxRegularHeapObjectSize`): larger strings go
///   to the large-object space, newly mapped memory on every batch. At 1 MiB of text,
///   page faults took a fifth of `.all()`'s time.
pub const BATCH_BYTES_SOFT_LIMIT: usize = 512 << 10;
pub const BATCH_TEXT_SOFT_LIMIT: usize = 48 << 10;

/// TEXT values this long (in UTF-8 bytes) get a JS string of their own.
pub const BIG_TEXT_BYTES: usize = 256 << 10;

/// V8's maximum string length (`connection_policy::MAX_JS_STRING_LENGTH`): text of at most
/// this many UTF-8 bytes always fits one JS string.
pub use cipherlite_core::connection_policy::MAX_JS_STRING_LENGTH as V8_MAX_STRING_LENGTH;

/// One column's encoded cells.
#[derive(Default)]
struct ColumnCells {
    slots: Vec<u64>,
    tags: Vec<u8>,
}

/// Accumulates rows of one batch.
///
/// Its buffers are recycled: dropping an encoder parks them in a per-thread spare (while
/// small, see `SPARE_KEEP_BYTES`), and the next `BatchEncoder::new` on that thread takes
/// them back, emptied but with their capacity. A `get()` otherwise pays two allocations
/// and two frees per column, more than encoding its row costs.
pub struct BatchEncoder {
    /// The row buffers, boxed so that taking them from the spare and returning them
    /// moves one pointer (`Drop` returns them).
    buffers: ManuallyDrop<Box<Buffers>>,
    /// Only the first `encoded_columns` are encoded (pluck mode encodes one).
    encoded_columns: usize,
    safe_integers: bool,
    rows: usize,
    /// The wide batch string's length in UTF-16 code units.
    wide_utf16_len: usize,
}

/// An encoder's buffers; empty, with their capacity, while parked in the spare.
#[derive(Default)]
struct Buffers {
    columns: Vec<ColumnCells>,
    /// The one-byte batch string, Latin-1.
    text: Vec<u8>,
    /// The wide batch string, UTF-8.
    wide: Vec<u8>,
    blobs: Vec<u8>,
    /// Columns of the last row whose TEXT goes in a JS string of its own (the batch
    /// ends with that row, so the statement is still on it when the batch is written).
    big_text_columns: Vec<i32>,
    /// Where the statement's row is read into (one cell per encoded column).
    cells: Vec<RowCell>,
}

/// Buffers larger than this (in total capacity) are freed instead of kept for the next
/// batch, so one large `all()` doesn't hold its memory for the thread's lifetime.
const SPARE_KEEP_BYTES: usize = 1 << 20;

thread_local! {
    /// The buffers of the last encoder dropped on this thread. One set is enough: an
    /// encoder made while another is alive (a user function running a query while its
    /// own query steps) just allocates.
    static SPARE: std::cell::Cell<Option<Box<Buffers>>> = const { std::cell::Cell::new(None) };
}

impl Buffers {
    fn capacity_bytes(&self) -> usize {
        let cells: usize = self
            .columns
            .iter()
            .map(|c| c.slots.capacity() * 8 + c.tags.capacity())
            .sum();
        cells
            + self.columns.capacity() * std::mem::size_of::<ColumnCells>()
            + self.text.capacity()
            + self.wide.capacity()
            + self.blobs.capacity()
            + self.big_text_columns.capacity() * 4
            + self.cells.capacity() * std::mem::size_of::<RowCell>()
    }
}

impl Drop for BatchEncoder {
    fn drop(&mut self) {
        // SAFETY: `buffers` is taken once, here, and not used after.
        let mut spare = unsafe { ManuallyDrop::take(&mut self.buffers) };
        if spare.capacity_bytes() > SPARE_KEEP_BYTES {
            return;
        }
        // Only the first `encoded_columns` can hold cells: the others were emptied when
        // their own batch ended.
        for column in &mut spare.columns[..self.encoded_columns] {
            column.slots.clear();
            column.tags.clear();
        }
        spare.text.clear();
        spare.wide.clear();
        spare.blobs.clear();
        spare.big_text_columns.clear();
        // `try_with`: during thread teardown the spare may already be gone; the buffers
        // are then simply freed.
        let _ = SPARE.try_with(|s| s.set(Some(spare)));
    }
}

impl BatchEncoder {
    pub fn new(encoded_columns: usize, safe_integers: bool) -> Self {
        let mut buffers = SPARE
            .try_with(|s| s.take())
            .ok()
            .flatten()
            .unwrap_or_default();
        // Spare columns are empty; only the first `encoded_columns` are used, the others
        // keep their capacity for a wider batch later.
        if buffers.columns.len() < encoded_columns {
            buffers
                .columns
                .resize_with(encoded_columns, ColumnCells::default);
        }
        if buffers.cells.len() < encoded_columns {
            buffers.cells.resize(encoded_columns, RowCell::default());
        }
        BatchEncoder {
            buffers: ManuallyDrop::new(buffers),
            encoded_columns,
            safe_integers,
            rows: 0,
            wide_utf16_len: 0,
        }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    pub fn safe_integers(&self) -> bool {
        self.safe_integers
    }

    /// True once the batch is big enough that the next row should go in a new batch.
    pub fn is_full(&self) -> bool {
        self.buffers.text.len() + self.buffers.wide.len() >= BATCH_TEXT_SOFT_LIMIT
            || self.encoded_len() >= BATCH_BYTES_SOFT_LIMIT
            || !self.buffers.big_text_columns.is_empty()
    }

    /// The columns of the batch's last row whose TEXT needs a JS string of its own, in
    /// the order of their indices (1, 2, …) in the result array.
    pub fn big_text_columns(&self) -> &[i32] {
        &self.buffers.big_text_columns
    }

    /// Encodes the row the statement is positioned on.
    pub fn push_row(&mut self, stmt: &Statement) {
        let b: &mut Buffers = &mut self.buffers;
        let columns = &mut b.columns[..self.encoded_columns];
        for (i, (column, value)) in columns
            .iter_mut()
            .zip(stmt.read_row(&mut b.cells[..self.encoded_columns]))
            .enumerate()
        {
            let (tag, slot) = match value {
                CellValue::Null => (TAG_NULL, 0u64),
                CellValue::Float(v) => (TAG_NUMBER, v.to_bits()),
                CellValue::Integer(v) => {
                    if self.safe_integers {
                        (TAG_BIGINT, v as u64)
                    } else if let Ok(small) = i32::try_from(v) {
                        (TAG_INT32, pack(small as u32 as usize, 0))
                    } else {
                        (TAG_NUMBER, (v as f64).to_bits())
                    }
                }
                CellValue::Text(bytes) => {
                    // Each batch string is at most its bytes long (in code units).
                    if bytes.len() >= BIG_TEXT_BYTES
                        || b.text.len().max(b.wide.len()) + bytes.len() > V8_MAX_STRING_LENGTH
                    {
                        b.big_text_columns.push(i as i32);
                        column.tags.push(TAG_BIG_TEXT);
                        column.slots.push(pack(b.big_text_columns.len(), 0));
                        continue;
                    }
                    let start = b.text.len();
                    if append_latin1(&mut b.text, bytes) {
                        (TAG_TEXT, pack(start, b.text.len()))
                    } else {
                        let start = self.wide_utf16_len;
                        append_utf8(&mut b.wide, &mut self.wide_utf16_len, bytes);
                        (TAG_WIDE_TEXT, pack(start, self.wide_utf16_len))
                    }
                }
                CellValue::Blob(bytes) => {
                    let start = b.blobs.len();
                    b.blobs.extend_from_slice(bytes);
                    (TAG_BLOB, pack(start, bytes.len()))
                }
            };
            column.tags.push(tag);
            column.slots.push(slot);
        }
        self.rows += 1;
    }

    /// Bytes needed to write this batch into a scratch buffer.
    pub fn encoded_len(&self) -> usize {
        let cells = self.rows * self.encoded_columns;
        HEADER_BYTES + cells * (SLOT_BYTES + 1) + self.buffers.blobs.len()
    }

    /// Writes the batch (header fields `rows`, `columns`, blob offset, slots, tags,
    /// blobs) into `out`, which must be at least `encoded_len()` bytes and 8-aligned.
    /// `flags` is written as given.
    pub fn write_into(&self, out: &mut [u8], flags: u32) {
        let cells = self.rows * self.encoded_columns;
        let slots_at = HEADER_BYTES;
        let tags_at = slots_at + cells * SLOT_BYTES;
        let blobs_at = tags_at + cells;
        write_u32(out, ROWS_AT, self.rows as u32);
        write_u32(out, COLUMNS_AT, self.encoded_columns as u32);
        write_u32(out, FLAGS_AT, flags);
        write_u32(out, BLOB_REGION_AT, blobs_at as u32);
        let mut slot = slots_at;
        let mut tag = tags_at;
        for column in &self.buffers.columns[..self.encoded_columns] {
            let end = slot + SLOT_BYTES * column.slots.len();
            for (dst, s) in out[slot..end]
                .chunks_exact_mut(SLOT_BYTES)
                .zip(&column.slots)
            {
                dst.copy_from_slice(&s.to_ne_bytes());
            }
            slot = end;
            out[tag..tag + column.tags.len()].copy_from_slice(&column.tags);
            tag += column.tags.len();
        }
        out[blobs_at..blobs_at + self.buffers.blobs.len()].copy_from_slice(&self.buffers.blobs);
    }

    /// The one-byte batch string's Latin-1 bytes.
    pub fn text(&self) -> &[u8] {
        &self.buffers.text
    }

    /// The wide batch string's UTF-8, when some TEXT of the batch has a character past
    /// U+00FF (it goes last in the result array).
    pub fn wide_text(&self) -> Option<&[u8]> {
        (!self.buffers.wide.is_empty()).then_some(&self.buffers.wide[..])
    }
}

/// Packs two u32 offsets into one slot the way JS reads it through a `Uint32Array`
/// (first word at the lower address).
fn pack(a: usize, b: usize) -> u64 {
    let mut bytes = [0u8; 8];
    bytes[..4].copy_from_slice(&(a as u32).to_ne_bytes());
    bytes[4..].copy_from_slice(&(b as u32).to_ne_bytes());
    u64::from_ne_bytes(bytes)
}

pub fn write_u32(out: &mut [u8], at: usize, v: u32) {
    out[at..at + 4].copy_from_slice(&v.to_ne_bytes());
}

/// Appends SQLite TEXT (UTF-8, unchecked) to the one-byte batch string as Latin-1, if
/// every character is U+0000–U+00FF (ASCII is copied as is); returns false, leaving
/// `text` as it was, otherwise (or if the bytes are not valid UTF-8).
fn append_latin1(text: &mut Vec<u8>, bytes: &[u8]) -> bool {
    if bytes.is_ascii() {
        text.extend_from_slice(bytes);
        return true;
    }
    let Ok(s) = std::str::from_utf8(bytes) else {
        return false;
    };
    let before = text.len();
    for c in s.chars() {
        match u8::try_from(c) {
            Ok(b) => text.push(b),
            Err(_) => {
                text.truncate(before);
                return false;
            }
        }
    }
    true
}

/// Appends SQLite TEXT (UTF-8, unchecked) to the wide batch string, tracking its length in
/// UTF-16 code units — the unit JS's `String.prototype.slice` counts in. Invalid UTF-8 is
/// replaced by U+FFFD, as V8 would when creating the string from these bytes.
fn append_utf8(text: &mut Vec<u8>, utf16_len: &mut usize, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(s) => {
            text.extend_from_slice(bytes);
            *utf16_len += s.encode_utf16().count();
        }
        Err(_) => {
            let s = String::from_utf8_lossy(bytes);
            text.extend_from_slice(s.as_bytes());
            *utf16_len += s.encode_utf16().count();
        }
    }
}

/// The size of the scratch buffer that replaces one of `current` bytes when a batch needs
/// `needed`: at least double (so a growing result set is copied a logarithmic number of
/// times), in whole 4 KiB pages.
pub fn grown_scratch_len(current: usize, needed: usize) -> usize {
    needed.max(current.saturating_mul(2)).next_multiple_of(4096)
}

/// After JS has read a batch: the size to go back to (`initial`) when the buffer has grown
/// past [`SCRATCH_KEEP_BYTES`], so one large read doesn't keep its memory for the
/// connection's lifetime; `None` to keep it.
pub fn shrunk_scratch_len(current: usize, initial: usize) -> Option<usize> {
    (current > SCRATCH_KEEP_BYTES).then_some(initial)
}

#[cfg(test)]
mod tests {
    use super::*;
    use cipherlite_sqlite::{Connection, OpenFlags};

    #[test]
    fn the_scratch_buffer_grows_at_least_twofold_in_pages_and_shrinks_only_past_the_keep_size() {
        assert_eq!(grown_scratch_len(64 << 10, 70 << 10), 128 << 10);
        assert_eq!(
            grown_scratch_len(64 << 10, 300_001),
            300_001usize.next_multiple_of(4096)
        );
        assert_eq!(grown_scratch_len(64 << 10, 300_001) % 4096, 0);
        assert_eq!(shrunk_scratch_len(SCRATCH_KEEP_BYTES, 64 << 10), None);
        assert_eq!(
            shrunk_scratch_len(SCRATCH_KEEP_BYTES + 1, 64 << 10),
            Some(64 << 10)
        );
    }

    fn memory() -> Connection {
        Connection::open(":memory:", OpenFlags::default(), None).expect("open")
    }

    /// Steps `sql` to its end, encoding every row into a fresh encoder.
    fn encode(conn: &Connection, sql: &str, safe_integers: bool) -> BatchEncoder {
        let (stmt, _) = conn.prepare(sql, false).expect("prepare");
        let mut stmt = stmt.expect("a statement");
        let mut batch = BatchEncoder::new(stmt.column_count() as usize, safe_integers);
        while stmt.step().expect("step") {
            batch.push_row(&stmt);
        }
        batch
    }

    /// A written batch read back as JS reads it: (rows, columns, cells column-major as
    /// (tag, slot), blob region).
    fn written(batch: &BatchEncoder) -> (u32, u32, Vec<(u8, u64)>, Vec<u8>) {
        let mut out = vec![0u8; batch.encoded_len()];
        batch.write_into(&mut out, 0);
        let word = |at: usize| u32::from_ne_bytes(out[at..at + 4].try_into().expect("4 bytes"));
        let (rows, columns) = (word(0), word(4));
        let cells = (rows * columns) as usize;
        let tags_at = HEADER_BYTES + 8 * cells;
        let cells = (0..cells)
            .map(|i| {
                let at = HEADER_BYTES + 8 * i;
                let slot = u64::from_ne_bytes(out[at..at + 8].try_into().expect("8 bytes"));
                (out[tags_at + i], slot)
            })
            .collect();
        assert_eq!(word(12) as usize, tags_at + (rows * columns) as usize);
        (rows, columns, cells, out[word(12) as usize..].to_vec())
    }

    #[test]
    fn recycled_buffers_start_empty_whatever_the_last_batch_held() {
        let conn = memory();
        // A wide batch with every kind of cell, Latin-1 and wide text and a BLOB...
        let wide = encode(
            &conn,
            "SELECT 1, 'é', 2.5, x'0102', NULL UNION ALL SELECT 7, 'b', -1.0, x'', 'ā😀'",
            true,
        );
        let (rows, columns, cells, blobs) = written(&wide);
        assert_eq!((rows, columns), (2, 5));
        assert_eq!(
            cells,
            vec![
                (TAG_BIGINT, 1),
                (TAG_BIGINT, 7),
                (TAG_TEXT, pack(0, 1)),
                (TAG_TEXT, pack(1, 2)),
                (TAG_NUMBER, 2.5f64.to_bits()),
                (TAG_NUMBER, (-1.0f64).to_bits()),
                (TAG_BLOB, pack(0, 2)),
                (TAG_BLOB, pack(2, 0)),
                (TAG_NULL, 0),
                (TAG_WIDE_TEXT, pack(0, 3)),
            ]
        );
        assert_eq!(blobs, [1, 2]);
        assert_eq!(wide.text(), b"\xe9b", "é as Latin-1");
        assert_eq!(wide.wide_text(), Some("ā😀".as_bytes()));
        drop(wide);
        // ...leaves nothing behind in the next, narrower one (which reuses its buffers).
        let narrow = encode(&conn, "SELECT 'x' UNION ALL SELECT 3", false);
        let (rows, columns, cells, blobs) = written(&narrow);
        assert_eq!((rows, columns), (2, 1));
        assert_eq!(cells, vec![(TAG_TEXT, pack(0, 1)), (TAG_INT32, pack(3, 0))]);
        assert!(blobs.is_empty());
        assert_eq!(narrow.text(), b"x", "from offset 0");
        assert_eq!(narrow.wide_text(), None, "no wide string left over");
        drop(narrow);
        // A wider batch again gets back the columns the narrow one did not use, emptied.
        let wide = encode(&conn, "SELECT 1, 2, 3, 4, 5, 6", false);
        let (rows, columns, cells, _) = written(&wide);
        assert_eq!((rows, columns), (1, 6));
        let numbers: Vec<_> = (1..=6).map(|v| (TAG_INT32, pack(v, 0))).collect();
        assert_eq!(cells, numbers);
    }

    #[test]
    fn integers_travel_as_int32_when_they_fit_and_as_doubles_or_bigints_otherwise() {
        let conn = memory();
        let sql = "SELECT 0, -1, 2147483647, -2147483648, 2147483648, -2147483649, \
                   9007199254740993, 3.0";
        let (_, _, cells, _) = written(&encode(&conn, sql, false));
        assert_eq!(
            cells,
            vec![
                (TAG_INT32, pack(0, 0)),
                (TAG_INT32, pack(u32::MAX as usize, 0)),
                (TAG_INT32, pack(i32::MAX as usize, 0)),
                (TAG_INT32, pack(i32::MIN as u32 as usize, 0)),
                (TAG_NUMBER, 2147483648f64.to_bits()),
                (TAG_NUMBER, (-2147483649f64).to_bits()),
                (TAG_NUMBER, 9007199254740992f64.to_bits()),
                (TAG_NUMBER, 3f64.to_bits()),
            ]
        );
        let (_, _, cells, _) = written(&encode(&conn, "SELECT 5, 2147483648", true));
        assert_eq!(cells, vec![(TAG_BIGINT, 5), (TAG_BIGINT, 2147483648)]);
    }

    #[test]
    fn an_encoder_made_while_another_is_alive_has_its_own_buffers() {
        let conn = memory();
        let (stmt, _) = conn
            .prepare("SELECT 'outer', 1 UNION ALL SELECT 'outer2', 2", false)
            .expect("prepare");
        let mut stmt = stmt.expect("a statement");
        let mut outer = BatchEncoder::new(2, false);
        assert!(stmt.step().expect("step"));
        outer.push_row(&stmt);
        // As when a user function runs a query on another connection mid-batch.
        let inner = encode(&conn, "SELECT 'inner', 9", false);
        assert_eq!(inner.text(), b"inner");
        drop(inner);
        assert!(stmt.step().expect("step"));
        outer.push_row(&stmt);
        assert_eq!(outer.text(), b"outerouter2");
        let (rows, _, cells, _) = written(&outer);
        assert_eq!(rows, 2);
        assert_eq!(cells[0], (TAG_TEXT, pack(0, 5)));
        assert_eq!(cells[1], (TAG_TEXT, pack(5, 11)));
    }

    #[test]
    fn only_small_buffers_are_kept_for_the_next_batch() {
        let conn = memory();
        let take = || SPARE.with(|s| s.take());
        drop(take());
        drop(encode(&conn, "SELECT 'a', 1", false));
        let kept = take().expect("a small batch's buffers are kept");
        assert!(kept.columns.len() >= 2);
        assert!(kept.text.is_empty() && kept.text.capacity() > 0);
        // Over SPARE_KEEP_BYTES of text (in values under BIG_TEXT_BYTES): freed, not kept.
        let large = encode(
            &conn,
            "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5) \
             SELECT printf('%.*c', 250000, 'x') FROM c",
            false,
        );
        assert!(large.text().len() > SPARE_KEEP_BYTES);
        drop(large);
        assert!(take().is_none(), "a large batch's buffers are freed");
    }

    #[test]
    fn a_batch_is_full_once_its_text_reaches_the_soft_limit() {
        let conn = memory();
        let (stmt, _) = conn
            .prepare(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200) \
                 SELECT printf('%.*c', 1000, 'y') FROM c",
                false,
            )
            .expect("prepare");
        let mut stmt = stmt.expect("a statement");
        let mut batch = BatchEncoder::new(1, false);
        while !batch.is_full() {
            assert!(
                stmt.step().expect("step"),
                "the batch fills before the rows end"
            );
            batch.push_row(&stmt);
        }
        let text = batch.text().len();
        assert!((BATCH_TEXT_SOFT_LIMIT..BATCH_TEXT_SOFT_LIMIT + 1000).contains(&text));
        assert_eq!(batch.rows(), text / 1000);
    }

    #[test]
    fn utf16_lengths_count_surrogate_pairs_and_replacements() {
        let (mut text, mut len) = (Vec::new(), 0);
        append_utf8(&mut text, &mut len, b"abc");
        assert_eq!(len, 3);
        append_utf8(&mut text, &mut len, "é😀".as_bytes());
        assert_eq!(len, 6, "é is 1 unit, the emoji 2");
        append_utf8(&mut text, &mut len, b"\xff\xfe");
        assert_eq!(len, 8, "two invalid bytes, two U+FFFD");
        assert_eq!(String::from_utf8(text).unwrap(), "abcé😀\u{fffd}\u{fffd}");
    }

    #[test]
    fn latin1_takes_text_up_to_u00ff_and_leaves_the_rest_untouched() {
        let mut text = b"x".to_vec();
        assert!(append_latin1(&mut text, b"abc"));
        assert!(append_latin1(&mut text, "Zoë Müller ÿ\u{80}".as_bytes()));
        assert_eq!(text, b"xabcZo\xeb M\xfcller \xff\x80");
        let before = text.clone();
        assert!(
            !append_latin1(&mut text, "Søren Ł".as_bytes()),
            "U+0141 is past U+00FF"
        );
        assert!(!append_latin1(&mut text, "😀".as_bytes()));
        assert!(
            !append_latin1(&mut text, b"ok\xe9"),
            "invalid UTF-8 goes the wide way"
        );
        assert_eq!(text, before, "a refused value leaves nothing behind");
    }

    #[test]
    fn pack_puts_the_first_word_first() {
        let p = pack(7, 9).to_ne_bytes();
        assert_eq!(u32::from_ne_bytes([p[0], p[1], p[2], p[3]]), 7);
        assert_eq!(u32::from_ne_bytes([p[4], p[5], p[6], p[7]]), 9);
    }
}
