//! The WAL (`<db>-wal`): a 32-byte header, then frames `header(24) ‖ page image`. This
//! module is the WAL kind's geometry and the dispatch of SQLite's calls; each optimisation
//! and rule it applies has a module of its own:
//! - [`chain`]: the checksum chain, stored over the ciphertext and handed to SQLite over the
//!   plaintext, and recovery;
//! - [`held_frames`]: a transaction's frames held in memory until its commit;
//! - [`pieces`]: a frame SQLite writes in pieces;
//! - [`frames`]: the one reader of the frames in order, with the rule of recovery, that the
//!   VFS and the offline checks (`committed_frames`, `wal_page1_images`) share.
//!
//! Geometry rules, checked on every call: SQLite reads the header (32 bytes at 0), whole
//! frames (recovery, and rewriting checksums), a frame's page, or a frame's checksum pair
//! (8 bytes, as the seed for rewriting checksums); it writes the header, a frame header
//! followed by its page, a page in place, or a frame header alone (rewriting checksums).
//! Anything else is refused. A header for another page size or version is an error before
//! SQLite acts on it (it would switch the connection to that page size).
//!
//! Page numbers: a frame's page is authenticated as the page SQLite will use it as — the
//! wal-index's entry for that frame (see `wal_index`) — and must match the frame header's
//! page number and the WAL header's salts.

mod chain;
mod frames;
mod held_frames;
mod pieces;

use super::format::{
    FrameHeader, WalGeometry, WalHeader, WAL_FRAME_HEADER, WAL_HEADER, WAL_HEADER_CHECKSUM_OFFSET,
};
use super::main_db::refuse;
use super::wal_index::{FramePage, WalIndex};
use super::written_images::WrittenImages;
use super::{base_file::BaseFile, file_codec::FileCodec};
use chain::{Recovery, WrittenFrame};
use cipherlite_sys::ffi;
pub(super) use frames::wal_page1_images;
pub use frames::{committed_frames, CommittedFrame, WalFrames};
use held_frames::HeldFrames;
use pieces::Assembly;
use std::{ffi::c_int, sync::Arc};

pub(super) struct Wal {
    index: Arc<WalIndex>,
    geometry: WalGeometry,
    /// The WAL header as last read or written, and the wal-index lock epoch it is valid in.
    header: Option<(WalHeader, u64)>,
    /// While SQLite recovers (reads frames in order after the header): the next frame and
    /// both chains after the previous one.
    recovery: Option<Recovery>,
    /// A frame header SQLite wrote, held until its page arrives (or written alone, with its
    /// checksum recomputed, when SQLite rewrites checksums).
    pending_header: Option<(u32, [u8; WAL_FRAME_HEADER])>,
    /// The frame this handle wrote last: its stored checksum continues the chain without
    /// reading it back, within its write transaction and after (see
    /// [`Wal::stored_checksum_before`]).
    last_written: Option<WrittenFrame>,
    /// While SQLite rewrites a page in place in its write transaction, it appends frames
    /// with the salts and checksum zeroed (filled in at commit): the first such frame this
    /// handle wrote, and the epoch. Only these frames may be read without the salts.
    unsalted_from: Option<(u32, u64)>,
    /// The span of the WAL write lock this handle appended frames in last, and the first
    /// frame it appended in it: the only frames SQLite may rewrite in place (see
    /// [`Wal::rewrite_page`]).
    appended_in_span: Option<(u64, u32)>,
    /// The frame SQLite last read whole: a header written to it next is SQLite rewriting
    /// that frame's checksum (header only), not the start of a new frame.
    frame_read_whole: Option<u32>,
    /// A frame SQLite writes in pieces (see [`Assembly`]).
    assembling: Option<Assembly>,
    /// The page images this handle wrote: read back unchanged, they need no HMAC check.
    written: WrittenImages,
    /// The page each frame holds, as this handle appended it or recovery read it.
    frame_pages: FramePages,
    /// Frames SQLite appended that are not yet on disk (see [`HeldFrames`]).
    held: HeldFrames,
}

/// The page each frame of this WAL generation holds, as this handle appended it or read
/// it in recovery (4 bytes a frame; 0: not known). Two uses: a page SQLite rewrites in
/// place belongs to a frame this handle appended in the current transaction, and is
/// encrypted as the page appended there, not as whatever page the frame's header on disk
/// names now; and without a shared wal-index (exclusive locking mode) SQLite takes a frame
/// as the page it learned in recovery or appended, so that is the page it is
/// authenticated as. Cleared when this handle starts the WAL over.
#[derive(Default)]
struct FramePages(Vec<u32>);

impl FramePages {
    /// Room to record `frame`: `SQLITE_NOMEM` without memory for it.
    fn make_room(&mut self, frame: u32) -> Result<(), c_int> {
        let needed = frame as usize;
        if needed > self.0.len() {
            let more = needed.max(2 * self.0.len()).max(64) - self.0.len();
            self.0.try_reserve(more).map_err(|_| ffi::SQLITE_NOMEM)?;
            self.0.resize(self.0.len() + more, 0);
        }
        Ok(())
    }

    /// Records that `frame` holds `pgno` (0: not known); room made first.
    fn set(&mut self, frame: u32, pgno: u32) {
        if let Some(slot) = (frame as usize)
            .checked_sub(1)
            .and_then(|i| self.0.get_mut(i))
        {
            *slot = pgno;
        }
    }

    fn get(&self, frame: u32) -> Option<u32> {
        let i = (frame as usize).checked_sub(1)?;
        self.0.get(i).copied().filter(|&pgno| pgno != 0)
    }

    fn clear(&mut self) {
        self.0 = Vec::new();
    }
}

impl Wal {
    pub fn new(index: Arc<WalIndex>, page_size: usize) -> Wal {
        Wal {
            index,
            geometry: WalGeometry { page_size },
            header: None,
            recovery: None,
            pending_header: None,
            last_written: None,
            unsalted_from: None,
            appended_in_span: None,
            frame_read_whole: None,
            assembling: None,
            written: WrittenImages::default(),
            frame_pages: FramePages::default(),
            held: HeldFrames::default(),
        }
    }

    pub fn read(
        &mut self,
        os: BaseFile,
        codec: &FileCodec,
        scratch: &mut [u8],
        out: &mut [u8],
        off: i64,
    ) -> c_int {
        let rc = self.flush(os, codec, scratch);
        if rc != ffi::SQLITE_OK {
            return refuse(out, rc);
        }
        self.frame_read_whole = None;
        let g = self.geometry;
        if out.len() == WAL_HEADER && off == 0 {
            return self.read_header(os, out);
        }
        if out.len() == g.frame_size() as usize {
            if let Some(frame) = g.frame_at(off) {
                let rc = self.read_frame(os, codec, frame, out);
                if rc == ffi::SQLITE_OK {
                    self.frame_read_whole = Some(frame);
                }
                return rc;
            }
        }
        if out.len() == self.geometry.page_size {
            if let Some(frame) = g.frame_of_page_at(off) {
                return self.read_page(os, codec, scratch, frame, out);
            }
        }
        if out.len() == 8
            && (off == WAL_HEADER_CHECKSUM_OFFSET as i64 || g.frame_of_checksum_at(off).is_some())
        {
            // The seed for rewriting checksums: a plaintext header field. (SQLite's values
            // don't matter: the VFS recomputes every checksum it writes.)
            return os.read(out, off);
        }
        refuse(out, ffi::SQLITE_CORRUPT)
    }

    /// A frame's page, for a read transaction or a checkpoint.
    fn read_page(
        &mut self,
        os: BaseFile,
        codec: &FileCodec,
        scratch: &mut [u8],
        frame: u32,
        out: &mut [u8],
    ) -> c_int {
        self.index.wal_page_read();
        // Whatever a checkpoint kept belongs to the page read before (see `checkpoint_copy`).
        let checkpointing = self.index.checkpoint.begin_read();
        let header = match self.current_header(os) {
            Ok(h) => h,
            Err(rc) => return refuse(out, rc),
        };
        let buf = &mut scratch[..WAL_FRAME_HEADER + self.geometry.page_size];
        let rc = os.read(buf, self.geometry.frame_offset(frame));
        if rc != ffi::SQLITE_OK {
            return refuse(out, rc);
        }
        let fh = FrameHeader::parse(&buf[..WAL_FRAME_HEADER]);
        let pgno = match self.index.frame_page(frame) {
            // SQLite's own index: the page recovery read or this handle appended there.
            FramePage::HeapMemory => match self.frame_pages.get(frame) {
                Some(pgno) => pgno,
                None => return refuse(out, ffi::SQLITE_CORRUPT),
            },
            FramePage::Page(pgno) => pgno,
            FramePage::Unmapped => return refuse(out, ffi::SQLITE_CORRUPT),
        };
        let salts_ok = fh.salts == header.salts
            || (fh.salts == [0; 8]
                && self
                    .unsalted_from
                    .is_some_and(|(first, epoch)| frame >= first && epoch == self.index.epoch()));
        if pgno == 0 || pgno != fh.pgno || !salts_ok {
            return refuse(out, ffi::SQLITE_CORRUPT);
        }
        let page = &mut buf[WAL_FRAME_HEADER..];
        // A checkpoint writes this page to the database next: keep its image (see
        // `checkpoint_copy`), in `out` until the page is decrypted (a settled codec only:
        // an unsettled one may still change its salt).
        let keep = checkpointing && pgno != 1 && !codec.is_unsettled();
        if keep {
            out.copy_from_slice(page);
        }
        // An image this handle wrote as this page, unchanged, is authentic as it.
        let authentic = if self.written.holds(pgno, page) {
            codec.decrypt_authenticated(pgno, page)
        } else {
            codec.decrypt(pgno, page)
        };
        if !authentic {
            return refuse(out, ffi::SQLITE_CORRUPT);
        }
        if keep {
            self.index.checkpoint.keep(pgno, out, page);
        }
        out.copy_from_slice(page);
        ffi::SQLITE_OK
    }

    /// The WAL header on disk (cached while the wal-index lock state is unchanged).
    fn current_header(&mut self, os: BaseFile) -> Result<WalHeader, c_int> {
        let epoch = self.index.epoch();
        if let Some((h, e)) = self.header {
            if e == epoch {
                return Ok(h);
            }
        }
        let mut bytes = [0u8; WAL_HEADER];
        let rc = os.read(&mut bytes, 0);
        if rc != ffi::SQLITE_OK {
            return Err(if rc == ffi::SQLITE_IOERR_SHORT_READ {
                ffi::SQLITE_CORRUPT
            } else {
                rc
            });
        }
        let h =
            WalHeader::parse(&bytes, self.geometry.page_size).map_err(|_| ffi::SQLITE_CORRUPT)?;
        self.header = Some((h, epoch));
        Ok(h)
    }

    /// The WAL header on disk as far as frames SQLite writes with `salts` use it (their
    /// byte order; frame 1's seed comes from the header this handle wrote just before it):
    /// the cached one if it has those salts, whatever lock calls came since. SQLite copies
    /// the salts into each frame from the header of the WAL it appends to, and a WAL that
    /// starts over gets new ones (salt-1 incremented and salt-2 drawn, or both drawn); a
    /// header written again with the same salts (after a restart that rolled back, by a
    /// connection with another checkpoint count) differs in its sequence and checksum only,
    /// and in its byte order only if the cached one came from another machine: SQLite
    /// writes its own, so only a native-order header is taken from the cache. Zero salts
    /// (frames SQLite fills in at commit) prove nothing.
    fn header_for_salts(&mut self, os: BaseFile, salts: [u8; 8]) -> Result<WalHeader, c_int> {
        match self.header {
            Some((h, _))
                if h.salts == salts
                    && salts != [0; 8]
                    && h.big_endian == cfg!(target_endian = "big") =>
            {
                Ok(h)
            }
            _ => self.current_header(os),
        }
    }

    pub fn write(
        &mut self,
        os: BaseFile,
        codec: &FileCodec,
        scratch: &mut [u8],
        data: &[u8],
        off: i64,
    ) -> c_int {
        let g = self.geometry;
        if let Some(next) = self.held.next() {
            // Only the next frame's header, then its page, keep the held frames waiting.
            let continues = (data.len() == WAL_FRAME_HEADER && g.frame_at(off) == Some(next))
                || (data.len() == g.page_size
                    && g.frame_of_page_at(off) == Some(next)
                    && matches!(self.pending_header, Some((f, _)) if f == next));
            if !continues {
                let rc = self.write_held(os, codec);
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
            }
        }
        if let Some(rc) = self.write_piece(os, codec, scratch, data, off) {
            return rc;
        }
        if data.len() != WAL_FRAME_HEADER {
            self.frame_read_whole = None;
        }
        if data.len() == WAL_FRAME_HEADER {
            if let Some(frame) = g.frame_at(off) {
                let rc = self.flush_header(os, scratch);
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
                let mut head = [0u8; WAL_FRAME_HEADER];
                head.copy_from_slice(data);
                self.pending_header = Some((frame, head));
                if self.frame_read_whole.take() == Some(frame) {
                    // Rewriting the checksum of a frame SQLite just read: no page follows.
                    return self.flush_header(os, scratch);
                }
                return ffi::SQLITE_OK;
            }
        }
        if data.len() == self.geometry.page_size {
            if let Some(frame) = g.frame_of_page_at(off) {
                return match self.pending_header.take() {
                    Some((f, head)) if f == frame => {
                        self.append_frame(os, codec, frame, head, data)
                    }
                    other => {
                        self.pending_header = other;
                        let rc = self.flush(os, codec, scratch);
                        if rc != ffi::SQLITE_OK {
                            return rc;
                        }
                        self.rewrite_page(os, codec, scratch, frame, data)
                    }
                };
            }
        }
        let rc = self.flush(os, codec, scratch);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        if data.len() == WAL_HEADER && off == 0 {
            return match WalHeader::parse(data, self.geometry.page_size) {
                Ok(h) => {
                    self.last_written = None;
                    self.written.clear();
                    self.frame_pages.clear();
                    let rc = os.write(data, 0);
                    if rc == ffi::SQLITE_OK {
                        self.header = Some((h, self.index.epoch()));
                    }
                    rc
                }
                Err(_) => ffi::SQLITE_IOERR_WRITE,
            };
        }
        // Any other write would put page data on disk unencrypted, or a header SQLite
        // can't have meant.
        ffi::SQLITE_IOERR_WRITE
    }

    /// A page of the current transaction written again in place (its header is on disk;
    /// SQLite rewrites the checksums from this frame on before it commits).
    fn rewrite_page(
        &mut self,
        os: BaseFile,
        codec: &FileCodec,
        scratch: &mut [u8],
        frame: u32,
        page: &[u8],
    ) -> c_int {
        self.last_written = None;
        // SQLite rewrites only frames of its current transaction, which this handle
        // appended: encrypted as the page appended there, whatever the header on disk says
        // now (an edited one would otherwise get SQLite's content MACed as another page).
        let Some(pgno) = self.frame_pages.get(frame) else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        // And only where that is provable: the wal-index still maps the frame to that page
        // and, while this handle holds the write lock, it appended the frame in this span
        // of the lock; in exclusive locking mode (no lock calls: nobody else has the file)
        // the wal-index's word, or SQLite's own index in its heap, built from this handle's
        // appends and its recovery. Anything else writes nothing.
        let provable = match self.index.frame_page(frame) {
            FramePage::HeapMemory => true,
            FramePage::Page(mapped) => {
                mapped == pgno
                    && match self.index.write_span() {
                        Some(span) => matches!(
                            self.appended_in_span,
                            Some((s, first)) if s == span && frame >= first
                        ),
                        None => true,
                    }
            }
            FramePage::Unmapped => false,
        };
        if !provable {
            return ffi::SQLITE_IOERR_WRITE;
        }
        let image = &mut scratch[..self.geometry.page_size];
        let settled = !codec.is_unsettled();
        let rc = codec.encrypt(pgno, page, image);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let rc = os.write(
            image,
            self.geometry.frame_offset(frame) + WAL_FRAME_HEADER as i64,
        );
        if rc == ffi::SQLITE_OK && settled {
            self.written.remember(pgno, image);
        }
        rc
    }

    /// How many WAL page reads were of an image this handle wrote, unchanged.
    #[cfg(test)]
    pub fn written_images_matched(&self) -> u64 {
        self.written.matched()
    }

    /// Writes what this handle holds back before another call looks at the file: the held
    /// frames, then a frame header written alone.
    pub fn flush(&mut self, os: BaseFile, codec: &FileCodec, scratch: &mut [u8]) -> c_int {
        let rc = self.write_held(os, codec);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        self.flush_header(os, scratch)
    }
}

#[cfg(test)]
mod tests;
