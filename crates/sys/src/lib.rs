//! The bottom of the crate graph: SQLite's C API as `libsqlite3-sys` builds it (with the
//! SQLite sources checked against the pinned digests by this crate's build script), and the
//! one rule every caller of the OS VFS's `xRead`/`xWrite` keeps ([`in_pieces`]), and the
//! one registrar of the VFSes written in Rust ([`shim`]). Both `cipherlite-sqlite` (safe
//! API) and `cipherlite-vfs` (the encrypting VFS) stand on it and not on each other.

pub use libsqlite3_sys as ffi;

pub mod shim;

use std::{ffi::c_int, ops::Range};

/// The most bytes one `xRead` or `xWrite` of the OS VFS is asked to move. SQLite's unix VFS
/// masks each length with `0x1ffff` (SQLite itself never reads or writes more than a
/// 64 KiB page and a WAL frame header at once) and reports a longer write as a full disk,
/// so a longer buffer goes in pieces. 124 KiB: under the mask, and a whole number of
/// 4 KiB blocks.
pub const MAX_IO_PIECE: usize = 0x1f000;

/// Moves a buffer of `len` bytes to or from file offset `offset` in pieces of at most
/// [`MAX_IO_PIECE`] bytes: calls `io(range, at)` for each piece (`range` within the
/// buffer, `at` the piece's file offset) until one returns anything but `SQLITE_OK` or
/// the last is done, and returns that code. One call when `len` fits in a piece (an empty
/// buffer included). Both the files opened here and the keyed VFS's calls to the OS VFS
/// (`cipherlite-vfs`'s `base_file.rs`) go through it, so the limit is kept in one place.
pub fn in_pieces(len: usize, offset: i64, mut io: impl FnMut(Range<usize>, i64) -> c_int) -> c_int {
    let mut start = 0;
    loop {
        let end = len.min(start + MAX_IO_PIECE);
        let rc = io(start..end, offset + start as i64);
        if rc != ffi::SQLITE_OK || end == len {
            return rc;
        }
        start = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_pieces_covers_the_buffer_once_in_order_and_stops_at_the_first_error() {
        let mut seen = Vec::new();
        let rc = in_pieces(2 * MAX_IO_PIECE + 5, 1000, |range, at| {
            seen.push((range.clone(), at));
            ffi::SQLITE_OK
        });
        assert_eq!(rc, ffi::SQLITE_OK);
        let p = MAX_IO_PIECE;
        assert_eq!(
            seen,
            [
                (0..p, 1000),
                (p..2 * p, 1000 + p as i64),
                (2 * p..2 * p + 5, 1000 + 2 * p as i64)
            ]
        );
        let mut calls = 0;
        assert_eq!(
            in_pieces(0, 0, |r, _| {
                calls += 1;
                assert!(r.is_empty());
                ffi::SQLITE_OK
            }),
            ffi::SQLITE_OK
        );
        assert_eq!(calls, 1, "an empty buffer is one call, as before");
        let mut calls = 0;
        let rc = in_pieces(3 * MAX_IO_PIECE, 0, |_, _| {
            calls += 1;
            if calls == 2 {
                ffi::SQLITE_FULL
            } else {
                ffi::SQLITE_OK
            }
        });
        assert_eq!((rc, calls), (ffi::SQLITE_FULL, 2));
    }
}
