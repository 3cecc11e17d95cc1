//! Result sets cross into JS column by column in one buffer (docs/design.md §5.2).
//!
//! The native side steps the statement and encodes a batch of rows; the JS side
//! (`lib/results.js`) reads the batch through typed-array views over the same
//! `ArrayBuffer` (memory that V8 owns) and builds rows with a factory compiled once per
//! column set. The TEXT values of a batch travel as one JS string that JS slices, except
//! large ones: a value of `BIG_TEXT_BYTES` or more (or one that would take the batch's
//! string past V8's maximum string length) gets a JS string of its own, and the batch
//! then ends with its row. The batch's result is then an array: the batch string, then
//! those strings in order (`TAG_BIG_TEXT` cells hold their index in it).
//!
//! Layout of the scratch buffer (little-endian as the platform; offsets in bytes):
//!
//! ```text
//! 0   u32 rows          4   u32 columns      8  u32 flags      12 u32 blob region offset
//! 16  f64|i64 lastInsertRowid (run)          24 u32 changes (run)  28 u32 unused
//! 32  slots: rows*columns × 8 bytes, column-major (cell = column*rows + row):
//!       NULL: unused  REAL/INTEGER-as-number: f64  INTEGER-as-BigInt: i64
//!       TEXT: u32 start, u32 end (UTF-16 offsets into the batch string)
//!       BIG TEXT: u32 index into the result array, u32 unused
//!       BLOB: u32 start, u32 length (bytes, relative to the blob region)
//! ..  tags: rows*columns bytes (TAG_*)
//! ..  blob region
//! ```
//! Those offsets, the tags, flags and row modes are the constants below, defined only
//! here: the addon exports them as `layout` (`LAYOUT`, installed by `fast.rs`) and
//! `lib/results.js` reads every number it needs from that object when it first meets an
//! addon; `__test__/27b-result-layout.test.js` checks the two sides agree on real batches.

use crate::sqlite::{ColumnType, Statement};
use std::ffi::CStr;

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
/// string can keep alive.
pub const BATCH_BYTES_SOFT_LIMIT: usize = 4 << 20;
pub const BATCH_TEXT_SOFT_LIMIT: usize = 1 << 20;

/// TEXT values this long (in UTF-8 bytes) get a JS string of their own.
pub const BIG_TEXT_BYTES: usize = 256 << 10;

/// V8's maximum string length on 64-bit platforms (`v8::String::kMaxLength`, the same
/// in Node 20 to 24), in UTF-16 code units. A string's UTF-8 is at least as many bytes as
/// it has code units, so text of at most this many bytes always fits one JS string.
pub const V8_MAX_STRING_LENGTH: usize = (1 << 29) - 24;

/// One column's encoded cells.
#[derive(Default)]
struct ColumnCells {
    slots: Vec<u64>,
    tags: Vec<u8>,
}

/// Accumulates rows of one batch.
pub struct BatchEncoder {
    columns: Vec<ColumnCells>,
    /// Only the first `encoded_columns` are encoded (pluck mode encodes one).
    encoded_columns: usize,
    safe_integers: bool,
    rows: usize,
    text: Vec<u8>,
    text_utf16_len: usize,
    text_is_ascii: bool,
    blobs: Vec<u8>,
    /// Columns of the last row whose TEXT goes in a JS string of its own (the batch
    /// ends with that row, so the statement is still on it when the batch is written).
    big_text_columns: Vec<i32>,
}

impl BatchEncoder {
    pub fn new(encoded_columns: usize, safe_integers: bool) -> Self {
        BatchEncoder {
            columns: (0..encoded_columns)
                .map(|_| ColumnCells::default())
                .collect(),
            encoded_columns,
            safe_integers,
            rows: 0,
            text: Vec::new(),
            text_utf16_len: 0,
            text_is_ascii: true,
            blobs: Vec::new(),
            big_text_columns: Vec::new(),
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
        self.text.len() >= BATCH_TEXT_SOFT_LIMIT
            || self.encoded_len() >= BATCH_BYTES_SOFT_LIMIT
            || !self.big_text_columns.is_empty()
    }

    /// The columns of the batch's last row whose TEXT needs a JS string of its own, in
    /// the order of their indices (1, 2, …) in the result array.
    pub fn big_text_columns(&self) -> &[i32] {
        &self.big_text_columns
    }

    /// Encodes the row the statement is positioned on.
    pub fn push_row(&mut self, stmt: &Statement) {
        for (i, column) in self.columns.iter_mut().enumerate() {
            let i = i as i32;
            let (tag, slot) = match stmt.column_type(i) {
                ColumnType::Null => (TAG_NULL, 0u64),
                ColumnType::Float => (TAG_NUMBER, stmt.column_double(i).to_bits()),
                ColumnType::Integer => {
                    let v = stmt.column_int64(i);
                    if self.safe_integers {
                        (TAG_BIGINT, v as u64)
                    } else {
                        (TAG_NUMBER, (v as f64).to_bits())
                    }
                }
                ColumnType::Text => {
                    let bytes = stmt.column_text(i);
                    if bytes.len() >= BIG_TEXT_BYTES
                        || self.text.len() + bytes.len() > V8_MAX_STRING_LENGTH
                    {
                        self.big_text_columns.push(i);
                        column.tags.push(TAG_BIG_TEXT);
                        column.slots.push(pack(self.big_text_columns.len(), 0));
                        continue;
                    }
                    let start = self.text_utf16_len;
                    append_text(
                        &mut self.text,
                        &mut self.text_utf16_len,
                        &mut self.text_is_ascii,
                        bytes,
                    );
                    (TAG_TEXT, pack(start, self.text_utf16_len))
                }
                ColumnType::Blob => {
                    let bytes = stmt.column_blob(i);
                    let start = self.blobs.len();
                    self.blobs.extend_from_slice(bytes);
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
        HEADER_BYTES + cells * (SLOT_BYTES + 1) + self.blobs.len()
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
        for column in &self.columns {
            for &s in &column.slots {
                out[slot..slot + SLOT_BYTES].copy_from_slice(&s.to_ne_bytes());
                slot += SLOT_BYTES;
            }
            out[tag..tag + column.tags.len()].copy_from_slice(&column.tags);
            tag += column.tags.len();
        }
        out[blobs_at..blobs_at + self.blobs.len()].copy_from_slice(&self.blobs);
    }

    /// The batch's text, and whether it is pure ASCII (then it can be created as a
    /// Latin-1 string without decoding).
    pub fn text(&self) -> (&[u8], bool) {
        (&self.text, self.text_is_ascii)
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

/// Appends SQLite TEXT (UTF-8, unchecked) to the batch text, tracking its length in
/// UTF-16 code units — the unit JS's `String.prototype.slice` counts in. Invalid UTF-8 is
/// replaced by U+FFFD, as V8 would when creating the string from these bytes.
fn append_text(text: &mut Vec<u8>, utf16_len: &mut usize, ascii: &mut bool, bytes: &[u8]) {
    if bytes.is_ascii() {
        text.extend_from_slice(bytes);
        *utf16_len += bytes.len();
        return;
    }
    *ascii = false;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_lengths_count_surrogate_pairs_and_replacements() {
        let (mut text, mut len, mut ascii) = (Vec::new(), 0, true);
        append_text(&mut text, &mut len, &mut ascii, b"abc");
        assert_eq!((len, ascii), (3, true));
        append_text(&mut text, &mut len, &mut ascii, "é😀".as_bytes());
        assert_eq!((len, ascii), (6, false), "é is 1 unit, the emoji 2");
        append_text(&mut text, &mut len, &mut ascii, b"\xff\xfe");
        assert_eq!(len, 8, "two invalid bytes, two U+FFFD");
        assert_eq!(String::from_utf8(text).unwrap(), "abcé😀\u{fffd}\u{fffd}");
    }

    #[test]
    fn pack_puts_the_first_word_first() {
        let p = pack(7, 9).to_ne_bytes();
        assert_eq!(u32::from_ne_bytes([p[0], p[1], p[2], p[3]]), 7);
        assert_eq!(u32::from_ne_bytes([p[4], p[5], p[6], p[7]]), 9);
    }
}
