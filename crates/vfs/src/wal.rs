//! The WAL (`<db>-wal`): a 32-byte header, then frames `header(24) ‖ page image`.
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
//!
//! Checksums on disk are over the ciphertext, as SQLCipher and SQLite3 Multiple Ciphers
//! write them, chained frame to frame from the header's checksum. SQLite computes its chain
//! over the plaintext: the VFS replaces the checksum of every frame header written (the
//! header is held back until its page is encrypted), and during recovery hands SQLite the
//! plaintext chain for each frame whose stored checksum is valid over the ciphertext,
//! continuing from the previous frame's stored checksum, so WALs written by SQLCipher and
//! SQLite3MC recover. A chain over the plaintext is never followed: whether a planted frame
//! is kept would then depend on a guess of its page's plaintext (an oracle).

use super::checksum::wal_frame_checksum;
use super::format::{
    put_checksum, FrameHeader, HeaderError, WalGeometry, WalHeader, WAL_FRAME_CHECKSUM_OFFSET,
    WAL_FRAME_HEADER, WAL_HEADER, WAL_HEADER_CHECKSUM_OFFSET,
};
use super::main_db::refuse;
use super::wal_index::{FramePage, LastCommit, WalIndex};
use super::written_images::WrittenImages;
use super::{checksum::be32, file_codec::FileCodec, os_file::OsFile};
use cipherlite_codec::PAGES_AT_ONCE;
use cipherlite_sys::ffi;
use std::{ffi::c_int, sync::Arc};
use zeroize::Zeroize;

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

/// The frames SQLite appends: every frame goes through here, and the frames of one
/// transaction wait in memory until its commit frame (or until [`PAGES_AT_ONCE`] are
/// held) so their pages go through the cipher together
/// (`FileCodec::encrypt_pages_in_place`), then are written with one call. A frame past the
/// wal-index's last committed frame is invisible to every other connection, and SQLite
/// does not sync or read the WAL, nor let go of its write lock, before the held frames are
/// written: every other call on this WAL first writes them (`Wal::flush`), and so does
/// every unlock on its database file (`file::write_held_wal_frames`). A frame waits when
/// it is not a commit frame, the codec is settled and the CPU encrypts pages faster
/// together; otherwise it is written at once, with any held before it.
#[derive(Default)]
struct HeldFrames {
    /// Header ‖ plaintext page of each held frame, back to back (room for `PAGES_AT_ONCE`
    /// frames where frames wait, one elsewhere; allocated at first use); wiped when given
    /// up unwritten.
    bytes: Vec<u8>,
    first: u32,
    count: usize,
    /// Whether the codec was settled when each held frame arrived: only then are the
    /// images written remembered (see `written_images`).
    settled: bool,
}

impl HeldFrames {
    /// The frame after the held ones (none held: `None`).
    fn next(&self) -> Option<u32> {
        (self.count > 0).then(|| self.first + self.count as u32)
    }

    /// Adds frame `frame` (`head` ‖ `page`), which arrived with the codec `settled` or
    /// not, to a buffer with room for `room` frames (at most `PAGES_AT_ONCE`; fewer are
    /// held); `SQLITE_NOMEM` if the room can't be had.
    fn push(
        &mut self,
        frame: u32,
        head: &[u8],
        page: &[u8],
        settled: bool,
        room: usize,
    ) -> Result<(), c_int> {
        let frame_size = head.len() + page.len();
        if self.bytes.len() != room * frame_size {
            if self.count != 0 {
                // Frames of another size held: impossible, as every other call on the WAL
                // writes them first; refused rather than dropped.
                return Err(ffi::SQLITE_MISUSE);
            }
            self.bytes = super::try_zeroed(room * frame_size)?;
        }
        debug_assert!(
            self.count < room,
            "append_frame writes the held frames when full"
        );
        if self.count == 0 {
            self.first = frame;
            self.settled = true;
        }
        self.settled &= settled;
        let slot = &mut self.bytes[self.count * frame_size..(self.count + 1) * frame_size];
        slot[..head.len()].copy_from_slice(head);
        slot[head.len()..].copy_from_slice(page);
        self.count += 1;
        Ok(())
    }
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

/// A frame written in pieces: on a device without powersafe overwrite, SQLite pads a
/// commit to the sector boundary with copies of the commit frame, and splits the copy that
/// crosses the boundary into two writes with a sync between them. The part before the sync
/// must be final when the sync returns (the sector also holds the commit frame's tail), yet
/// the page can't be encrypted before all of it has arrived. A padding frame duplicates the
/// previous frame, so as soon as its first bytes match that frame's header, the whole frame
/// is written at once from the previous frame's authenticated ciphertext; the later pieces
/// are checked against that frame's plaintext (and, should they differ, the frame is
/// encrypted from what SQLite wrote and written again).
struct Assembly {
    frame: u32,
    bytes: Vec<u8>,
    filled: usize,
    /// The previous frame's page plaintext, once the frame was written speculatively.
    speculated: Option<Vec<u8>>,
}

/// A frame this handle wrote.
#[derive(Clone, Copy)]
struct WrittenFrame {
    frame: u32,
    salts: [u8; 8],
    /// The checksum stored in its header (over the ciphertext).
    stored_checksum: (u32, u32),
    /// The checksum SQLite gave it (over the plaintext; `None`: not known), which the
    /// wal-index header holds once it is committed.
    sqlite_checksum: Option<(u32, u32)>,
    /// The wal-index lock epoch it was written in.
    epoch: u64,
    /// The span of the WAL write lock it was written in (`None`: written without it, in
    /// exclusive locking mode).
    write_span: Option<u64>,
}

#[derive(Clone, Copy)]
struct Recovery {
    next_frame: u32,
    header: WalHeader,
    /// SQLite's chain (over the plaintext it was handed).
    sqlite_chain: (u32, u32),
    /// The stored checksum of the previous frame (or the header's).
    disk_chain: (u32, u32),
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

    // ---- reads ---------------------------------------------------------------------------

    pub fn read(
        &mut self,
        os: OsFile,
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

    fn read_header(&mut self, os: OsFile, out: &mut [u8]) -> c_int {
        self.recovery = None;
        let rc = os.read(out, 0);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        match WalHeader::parse(out, self.geometry.page_size) {
            Ok(header) => {
                self.header = Some((header, self.index.epoch()));
                self.recovery = Some(Recovery {
                    next_frame: 1,
                    header,
                    sqlite_chain: header.checksum,
                    disk_chain: header.checksum,
                });
                ffi::SQLITE_OK
            }
            // SQLite ignores a WAL without a valid header itself.
            Err(HeaderError::NotAHeader) => ffi::SQLITE_OK,
            Err(HeaderError::WrongGeometry) => refuse(out, ffi::SQLITE_CORRUPT),
        }
    }

    /// A whole frame: recovery (in order after the header), or the frames SQLite rewrites
    /// the checksums of.
    fn read_frame(&mut self, os: OsFile, codec: &FileCodec, frame: u32, out: &mut [u8]) -> c_int {
        self.index.wal_page_read();
        let rc = os.read(out, self.geometry.frame_offset(frame));
        if rc != ffi::SQLITE_OK {
            self.recovery = None;
            return refuse(out, rc);
        }
        let recovery = self.recovery.filter(|r| r.next_frame == frame);
        self.recovery = None;
        let (wal_header, prev_disk) = match recovery {
            Some(r) => (r.header, r.disk_chain),
            None => match self.current_header(os) {
                Ok(h) => match self.stored_checksum_before(os, &h, frame) {
                    Ok(prev) => (h, prev),
                    Err(rc) => return refuse(out, rc),
                },
                Err(rc) => return refuse(out, rc),
            },
        };
        let (
            fh,
            FrameVerdict {
                stored_valid,
                authentic,
            },
        ) = judge_frame(&wal_header, prev_disk, out, |pgno, page| {
            codec.decrypt(pgno, page)
        });
        let be = wal_header.big_endian;
        let (head, page) = out.split_at_mut(WAL_FRAME_HEADER);
        if stored_valid && !authentic {
            // A frame of this WAL that is whole (its checksum holds) but not authentic:
            // forged or damaged, not torn. SQLite must not skip it silently.
            return refuse(out, ffi::SQLITE_CORRUPT);
        }
        let handed = match recovery {
            Some(r) => {
                let sqlite_chain = wal_frame_checksum(be, r.sqlite_chain, head, page);
                if stored_valid {
                    if let Err(rc) = self.frame_pages.make_room(frame) {
                        return refuse(out, rc);
                    }
                    self.frame_pages.set(frame, fh.pgno);
                    self.recovery = Some(Recovery {
                        next_frame: frame + 1,
                        header: r.header,
                        sqlite_chain,
                        disk_chain: fh.checksum,
                    });
                    sqlite_chain
                } else {
                    (sqlite_chain.0.wrapping_add(1), sqlite_chain.1)
                }
            }
            // Out of order: SQLite rewrites checksums (and ignores these) or checks for
            // frames appended since its snapshot; without the chain before, none matches.
            None => (fh.checksum.0, fh.checksum.1.wrapping_add(1)),
        };
        put_checksum(&mut head[WAL_FRAME_CHECKSUM_OFFSET..], handed);
        ffi::SQLITE_OK
    }

    /// A frame's page, for a read transaction or a checkpoint.
    fn read_page(
        &mut self,
        os: OsFile,
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
    fn current_header(&mut self, os: OsFile) -> Result<WalHeader, c_int> {
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
    fn header_for_salts(&mut self, os: OsFile, salts: [u8; 8]) -> Result<WalHeader, c_int> {
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

    /// The stored checksum the chain of `frame` continues from. The last frame this handle
    /// wrote is its own record of it, read back from disk otherwise, when it is the frame
    /// before, in the same WAL generation (`header`'s salts), and either
    /// - no lock call came since (the same write transaction), or
    /// - it was written while this handle held the WAL write lock, that span of the lock is
    ///   the one released last, and as it was released the wal-index header named the
    ///   frame as the last committed one (SQLite's own checksum of it included): the
    ///   transaction that wrote it committed it. A committed frame is never rewritten in its
    ///   WAL generation, so it is still what this handle wrote. A frame of a transaction
    ///   that did not commit may since have been overwritten by another connection, even
    ///   with the same plaintext (so the same SQLite checksum) and another ciphertext; in
    ///   exclusive locking mode SQLite writes frames without taking the lock.
    fn stored_checksum_before(
        &self,
        os: OsFile,
        header: &WalHeader,
        frame: u32,
    ) -> Result<(u32, u32), c_int> {
        if frame <= 1 {
            return Ok(header.checksum);
        }
        if let Some(w) = self.last_written {
            if w.frame == frame - 1 && w.salts == header.salts {
                let committed = || {
                    let last = self.index.last_commit_of_span(w.write_span?)?;
                    let ours = LastCommit {
                        frame: w.frame,
                        sqlite_checksum: w.sqlite_checksum?,
                        salts: w.salts,
                    };
                    Some(last == ours)
                };
                if w.epoch == self.index.epoch() || committed() == Some(true) {
                    return Ok(w.stored_checksum);
                }
            }
        }
        let mut pair = [0u8; 8];
        let off = self.geometry.frame_offset(frame - 1) + WAL_FRAME_CHECKSUM_OFFSET as i64;
        let rc = os.read(&mut pair, off);
        if rc != ffi::SQLITE_OK {
            return Err(rc);
        }
        Ok((be32(&pair[0..4]), be32(&pair[4..8])))
    }

    // ---- writes --------------------------------------------------------------------------

    pub fn write(
        &mut self,
        os: OsFile,
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

    /// A piece of a frame written in parts (see [`Assembly`]); `None` when `data` is not
    /// one (a whole header or page, or not within a frame).
    fn write_piece(
        &mut self,
        os: OsFile,
        codec: &FileCodec,
        scratch: &mut [u8],
        data: &[u8],
        off: i64,
    ) -> Option<c_int> {
        let g = self.geometry;
        let frame_size = g.frame_size() as usize;
        let continues = self.assembling.as_ref().filter(|a| {
            g.frame_offset(a.frame) + a.filled as i64 == off && a.filled + data.len() <= frame_size
        });
        if continues.is_none() {
            // A new piecewise frame starts with part of a header, or with part of a page
            // after its whole header.
            let page_piece = match (g.frame_of_page_at(off), self.pending_header) {
                (Some(f), Some((pf, head))) if f == pf && data.len() < self.geometry.page_size => {
                    Some((f, head.to_vec()))
                }
                _ => None,
            };
            let start = page_piece.or_else(|| {
                (data.len() < WAL_FRAME_HEADER)
                    .then(|| g.frame_at(off).map(|f| (f, Vec::new())))
                    .flatten()
            });
            let (frame, head) = start?;
            let mut bytes = match super::try_zeroed(frame_size) {
                Ok(bytes) => bytes,
                Err(rc) => return Some(rc),
            };
            self.pending_header = None;
            bytes[..head.len()].copy_from_slice(&head);
            self.assembling = Some(Assembly {
                frame,
                bytes,
                filled: head.len(),
                speculated: None,
            });
        }
        let mut a = self.assembling.take()?;
        a.bytes[a.filled..a.filled + data.len()].copy_from_slice(data);
        a.filled += data.len();
        if a.speculated.is_none() {
            match self.speculate(os, codec, scratch, &a) {
                Ok(Some(prev_plain)) => a.speculated = Some(prev_plain),
                Ok(None) => {}
                Err(rc) => return Some(rc),
            }
        }
        if a.filled < frame_size {
            self.assembling = Some(a);
            return Some(ffi::SQLITE_OK);
        }
        // Complete: done if it was the duplicate written already, else write it now.
        let (head_bytes, page) = a.bytes.split_at(WAL_FRAME_HEADER);
        if a.speculated.as_deref() == Some(page) {
            return Some(ffi::SQLITE_OK);
        }
        let mut head = [0u8; WAL_FRAME_HEADER];
        head.copy_from_slice(head_bytes);
        Some(self.append_frame(os, codec, a.frame, head, page))
    }

    /// Writes frame `a.frame` whole as a copy of the previous frame, if what SQLite wrote
    /// of it so far matches that frame's header. Returns the previous page's plaintext.
    fn speculate(
        &mut self,
        os: OsFile,
        codec: &FileCodec,
        scratch: &mut [u8],
        a: &Assembly,
    ) -> Result<Option<Vec<u8>>, c_int> {
        if a.frame < 2 || a.filled == 0 {
            return Ok(None);
        }
        let g = self.geometry;
        let buf = &mut scratch[..WAL_FRAME_HEADER + self.geometry.page_size];
        let rc = os.read(buf, g.frame_offset(a.frame - 1));
        if rc != ffi::SQLITE_OK {
            return Ok(None);
        }
        // pgno, commit size and salts: what a padding copy repeats.
        let known = a.filled.min(16);
        if buf[..known] != a.bytes[..known] {
            return Ok(None);
        }
        let prev = FrameHeader::parse(&buf[..WAL_FRAME_HEADER]);
        let mut plain = super::try_copy(&buf[WAL_FRAME_HEADER..])?;
        if !codec.decrypt(prev.pgno, &mut plain) {
            return Ok(None);
        }
        let header = self.current_header(os)?;
        let mut head = [0u8; WAL_FRAME_HEADER];
        head[..16].copy_from_slice(&buf[..16]);
        let checksum = wal_frame_checksum(
            header.big_endian,
            prev.checksum,
            &head,
            &buf[WAL_FRAME_HEADER..],
        );
        put_checksum(&mut head[WAL_FRAME_CHECKSUM_OFFSET..], checksum);
        buf[..WAL_FRAME_HEADER].copy_from_slice(&head);
        self.frame_pages.make_room(a.frame)?;
        self.frame_pages.set(a.frame, 0);
        let rc = os.write(buf, g.frame_offset(a.frame));
        if rc != ffi::SQLITE_OK {
            return Err(rc);
        }
        self.frame_pages.set(a.frame, prev.pgno);
        // SQLite's checksum of this frame is not known yet.
        self.last_written = Some(self.written_frame(a.frame, prev.salts, checksum, None));
        Ok(Some(plain))
    }

    /// A new frame: it joins the held frames (see [`HeldFrames`]), which are written now
    /// unless it can wait for the frames after it.
    fn append_frame(
        &mut self,
        os: OsFile,
        codec: &FileCodec,
        frame: u32,
        head: [u8; WAL_FRAME_HEADER],
        page: &[u8],
    ) -> c_int {
        if self.held.next().is_some_and(|next| next != frame) {
            let rc = self.write_held(os, codec);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
        }
        // Settled before encrypting: the key can't change after (see `written_images`).
        let settled = !codec.is_unsettled();
        // Frames wait for the ones after them only where that pays; elsewhere one is held
        // at a time, just long enough to be encrypted and written.
        let room = if cipherlite_codec::pages_at_once_pay_off(PAGES_AT_ONCE) {
            PAGES_AT_ONCE
        } else {
            1
        };
        if let Err(rc) = self.held.push(frame, &head, page, settled, room) {
            return rc;
        }
        let waits = settled && FrameHeader::parse(&head).commit_size == 0 && self.held.count < room;
        if waits {
            return ffi::SQLITE_OK;
        }
        self.write_held(os, codec)
    }

    /// This handle's record of frame `frame`, written now.
    fn written_frame(
        &self,
        frame: u32,
        salts: [u8; 8],
        stored_checksum: (u32, u32),
        sqlite_checksum: Option<(u32, u32)>,
    ) -> WrittenFrame {
        WrittenFrame {
            frame,
            salts,
            stored_checksum,
            sqlite_checksum,
            epoch: self.index.epoch(),
            write_span: self.index.write_span(),
        }
    }

    /// Notes frame `frame` (header `fh` as SQLite wrote it, stored checksum `checksum`) as
    /// appended.
    fn appended(&mut self, frame: u32, fh: &FrameHeader, checksum: (u32, u32)) {
        if fh.salts == [0; 8] {
            let epoch = self.index.epoch();
            let first = match self.unsalted_from {
                Some((f, e)) if e == epoch => f.min(frame),
                _ => frame,
            };
            self.unsalted_from = Some((first, epoch));
        }
        if let Some(span) = self.index.write_span() {
            self.appended_in_span = match self.appended_in_span {
                Some((s, first)) if s == span => Some((s, first.min(frame))),
                _ => Some((span, frame)),
            };
        }
        self.last_written = Some(self.written_frame(frame, fh.salts, checksum, Some(fh.checksum)));
    }

    /// Writes the held frames (see [`HeldFrames`]): their pages encrypted (together where
    /// that pays), each header's checksum continued over the ciphertext from the previous
    /// frame's stored checksum, all with one write. Whatever happens, none is held after.
    pub fn write_held(&mut self, os: OsFile, codec: &FileCodec) -> c_int {
        let rc = self.try_write_held(os, codec);
        if rc != ffi::SQLITE_OK {
            // Plaintext given up unwritten (frames written are ciphertext).
            self.held.bytes.zeroize();
        }
        self.held.count = 0;
        rc
    }

    fn try_write_held(&mut self, os: OsFile, codec: &FileCodec) -> c_int {
        let (first, count) = (self.held.first, self.held.count);
        if count == 0 {
            return ffi::SQLITE_OK;
        }
        let last = first + count as u32 - 1;
        let salts = FrameHeader::parse(&self.held.bytes[..WAL_FRAME_HEADER]).salts;
        let header = match self.header_for_salts(os, salts) {
            Ok(h) => h,
            Err(rc) => return rc,
        };
        let mut chain = match self.stored_checksum_before(os, &header, first) {
            Ok(p) => p,
            Err(rc) => return rc,
        };
        if let Err(rc) = self.frame_pages.make_room(last) {
            return rc;
        }
        for frame in first..=last {
            // Not known while the frames are being written (a failed write tears them).
            self.frame_pages.set(frame, 0);
        }
        let frame_size = self.geometry.frame_size() as usize;
        let bytes = &mut self.held.bytes[..count * frame_size];
        let mut heads = [FrameHeader::parse(&[0; WAL_FRAME_HEADER]); PAGES_AT_ONCE];
        let mut pages: [(u32, &mut [u8]); PAGES_AT_ONCE] = Default::default();
        for ((slot, fh), page) in bytes
            .chunks_exact_mut(frame_size)
            .zip(&mut heads)
            .zip(&mut pages)
        {
            let (head, plain) = slot.split_at_mut(WAL_FRAME_HEADER);
            *fh = FrameHeader::parse(head);
            *page = (fh.pgno, plain);
        }
        let rc = codec.encrypt_pages_in_place(&mut pages[..count]);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let mut checksums = [(0, 0); PAGES_AT_ONCE];
        for (slot, checksum) in bytes.chunks_exact_mut(frame_size).zip(&mut checksums) {
            let (head, image) = slot.split_at_mut(WAL_FRAME_HEADER);
            chain = wal_frame_checksum(header.big_endian, chain, head, image);
            put_checksum(&mut head[WAL_FRAME_CHECKSUM_OFFSET..], chain);
            *checksum = chain;
        }
        let rc = os.write(bytes, self.geometry.frame_offset(first));
        if rc != ffi::SQLITE_OK {
            self.last_written = None;
            return rc;
        }
        for (i, slot) in self.held.bytes[..count * frame_size]
            .chunks_exact(frame_size)
            .enumerate()
        {
            let frame = first + i as u32;
            self.frame_pages.set(frame, heads[i].pgno);
            if self.held.settled {
                self.written
                    .remember(heads[i].pgno, &slot[WAL_FRAME_HEADER..]);
            }
        }
        for (i, fh) in heads.iter().take(count).enumerate() {
            self.appended(first + i as u32, fh, checksums[i]);
        }
        ffi::SQLITE_OK
    }

    /// A page of the current transaction written again in place (its header is on disk;
    /// SQLite rewrites the checksums from this frame on before it commits).
    fn rewrite_page(
        &mut self,
        os: OsFile,
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
    pub fn flush(&mut self, os: OsFile, codec: &FileCodec, scratch: &mut [u8]) -> c_int {
        let rc = self.write_held(os, codec);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        self.flush_header(os, scratch)
    }

    /// Writes a held-back frame header alone (SQLite rewriting checksums): its checksum
    /// recomputed over the ciphertext on disk.
    fn flush_header(&mut self, os: OsFile, scratch: &mut [u8]) -> c_int {
        let Some((frame, mut head)) = self.pending_header.take() else {
            return ffi::SQLITE_OK;
        };
        let header = match self.current_header(os) {
            Ok(h) => h,
            Err(rc) => return rc,
        };
        let prev = match self.stored_checksum_before(os, &header, frame) {
            Ok(p) => p,
            Err(rc) => return rc,
        };
        let page = &mut scratch[..self.geometry.page_size];
        let off = self.geometry.frame_offset(frame);
        let rc = os.read(page, off + WAL_FRAME_HEADER as i64);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let sqlite_header = FrameHeader::parse(&head);
        let checksum = wal_frame_checksum(header.big_endian, prev, &head, page);
        put_checksum(&mut head[WAL_FRAME_CHECKSUM_OFFSET..], checksum);
        let rc = os.write(&head, off);
        self.last_written = (rc == ffi::SQLITE_OK).then(|| {
            self.written_frame(
                frame,
                sqlite_header.salts,
                checksum,
                Some(sqlite_header.checksum),
            )
        });
        rc
    }
}

/// How WAL recovery judges a frame (header ‖ page), continuing the checksum chain from
/// `prev_disk` (the previous frame's stored checksum, or the WAL header's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FrameVerdict {
    /// The frame belongs to the chain: the WAL header's salts, and a stored checksum valid
    /// over the ciphertext (as SQLCipher, SQLite3MC and cipherlite write it; never over the
    /// plaintext, docs/sqlcipher4-format.md §11). Recovery stops at the first frame for
    /// which this is false.
    pub stored_valid: bool,
    /// Its page authenticated as the page its header names.
    pub authentic: bool,
}

/// Judges `frame` (header ‖ page) by the rule of recovery; afterwards its page holds the
/// plaintext (zeros when it did not authenticate). `decrypt(pgno, page)` authenticates and
/// decrypts a page in place.
pub(super) fn judge_frame(
    wal_header: &WalHeader,
    prev_disk: (u32, u32),
    frame: &mut [u8],
    decrypt: impl FnOnce(u32, &mut [u8]) -> bool,
) -> (FrameHeader, FrameVerdict) {
    let (head, page) = frame.split_at_mut(WAL_FRAME_HEADER);
    let fh = FrameHeader::parse(head);
    let be = wal_header.big_endian;
    let cipher = wal_frame_checksum(be, prev_disk, head, page);
    let authentic = fh.pgno != 0 && decrypt(fh.pgno, page);
    if !authentic {
        page.fill(0);
    }
    // Over the ciphertext only: a chain accepted over the plaintext would tell whoever
    // planted the frame, through what recovery keeps, whether a guess of a page was right.
    let salts_ok = fh.salts == wal_header.salts;
    let stored_valid = salts_ok && fh.checksum == cipher;
    (
        fh,
        FrameVerdict {
            stored_valid,
            authentic,
        },
    )
}

/// A committed frame of a WAL: the page it holds, and whether that page authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommittedFrame {
    pub pgno: u32,
    pub authentic: bool,
}

/// What a WAL holds, by the rule of recovery.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WalFrames {
    /// The frames SQLite's recovery keeps: the chain of [`judge_frame`] from the header,
    /// up to its last commit frame.
    pub committed: Vec<CommittedFrame>,
    /// The page of the frame where the chain breaks, when that frame, or one after it, is a
    /// whole commit frame of the same WAL (the header's salts): recovery would drop that
    /// transaction as torn, so the break is damage (or a crash before that commit was
    /// acknowledged), not a tail.
    pub break_before_commit: Option<u32>,
}

/// The frames of the WAL at `path` (of `page_size`-byte pages), as recovery sees them
/// (see [`WalFrames`]), each with whether its page authenticates (`decrypt(pgno, page)`,
/// in place). Read with `std::fs` from start to end: SQLite takes no POSIX lock on a WAL
/// file, so closing this descriptor drops nobody's lock. A missing WAL, or one without a
/// valid header, has none; a header of another page size is an error, as for the VFS.
pub fn committed_frames(
    path: &std::path::Path,
    page_size: usize,
    mut decrypt: impl FnMut(u32, &mut [u8]) -> bool,
) -> std::io::Result<WalFrames> {
    use std::io::Read;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(WalFrames::default()),
        Err(e) => return Err(e),
    };
    let mut reader = std::io::BufReader::with_capacity(1 << 20, file);
    let mut header = [0u8; WAL_HEADER];
    if reader.read_exact(&mut header).is_err() {
        return Ok(WalFrames::default()); // shorter than a header: SQLite ignores it
    }
    let wal_header = match WalHeader::parse(&header, page_size) {
        Ok(h) => h,
        Err(HeaderError::NotAHeader) => return Ok(WalFrames::default()),
        Err(HeaderError::WrongGeometry) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("the WAL header is not one of {page_size}-byte pages"),
            ))
        }
    };
    // Plaintext passes through this buffer: wiped when dropped.
    let mut frame = zeroize::Zeroizing::new(vec![0u8; WAL_FRAME_HEADER + page_size]);
    let mut chain = wal_header.checksum;
    let mut out = WalFrames::default();
    let mut frames = Vec::new();
    let mut committed = 0;
    let mut broken_at = None;
    while reader.read_exact(&mut frame).is_ok() {
        if let Some(pgno) = broken_at {
            // Past the break: only whether a commit frame of this WAL follows.
            let fh = FrameHeader::parse(&frame[..WAL_FRAME_HEADER]);
            if fh.salts == wal_header.salts && fh.commit_size != 0 {
                out.break_before_commit = Some(pgno);
                break;
            }
            continue;
        }
        let (fh, verdict) = judge_frame(&wal_header, chain, &mut frame, &mut decrypt);
        if !verdict.stored_valid {
            if fh.salts == wal_header.salts && fh.commit_size != 0 {
                // The break is itself a commit frame of this WAL (the last transaction's,
                // damaged): recovery would drop that transaction.
                out.break_before_commit = Some(fh.pgno);
                break;
            }
            broken_at = Some(fh.pgno);
            continue;
        }
        chain = fh.checksum;
        frames.push(CommittedFrame {
            pgno: fh.pgno,
            authentic: verdict.authentic,
        });
        if fh.commit_size != 0 {
            committed = frames.len();
        }
    }
    frames.truncate(committed);
    out.committed = frames;
    Ok(out)
}

/// The images of page 1 among the frames of the WAL `file`, newest first (at most
/// `limit`): copies that prove the key when page 1 in the database is torn. The newest may
/// be torn too (a crash while it was written), so the caller tries them in turn.
/// `SQLITE_NOMEM` when a copy can't be allocated.
pub(super) fn wal_page1_images(
    file: OsFile,
    page_size: usize,
    limit: usize,
) -> Result<Vec<Vec<u8>>, c_int> {
    const MAX_FRAMES: i64 = 1_000_000;
    let mut header = [0u8; WAL_HEADER];
    if file.read(&mut header, 0) != ffi::SQLITE_OK || WalHeader::parse(&header, page_size).is_err()
    {
        return Ok(Vec::new());
    }
    let g = WalGeometry { page_size };
    let Ok(size) = file.size() else {
        return Ok(Vec::new());
    };
    let frames = ((size - WAL_HEADER as i64).max(0) / g.frame_size()).min(MAX_FRAMES) as u32;
    let mut at = Vec::new();
    let mut pgno = [0u8; 4];
    for frame in 1..=frames {
        let off = g.frame_offset(frame);
        if file.read(&mut pgno, off) != ffi::SQLITE_OK {
            break;
        }
        if be32(&pgno) == 1 {
            at.push(off + WAL_FRAME_HEADER as i64);
        }
    }
    let mut images = Vec::new();
    for &off in at.iter().rev().take(limit) {
        let mut image = super::try_zeroed(page_size)?;
        if file.read(&mut image, off) == ffi::SQLITE_OK {
            images.push(image);
        }
    }
    Ok(images)
}

#[cfg(test)]
mod held_frames_tests {
    use super::*;

    const HEAD: [u8; WAL_FRAME_HEADER] = [0; WAL_FRAME_HEADER];

    #[test]
    fn the_buffer_has_room_for_the_frames_that_may_wait_and_no_more() {
        let page = [7u8; 4096];
        let frame_size = WAL_FRAME_HEADER + page.len();
        let mut one = HeldFrames::default();
        one.push(3, &HEAD, &page, true, 1).expect("push");
        assert_eq!(
            one.bytes.len(),
            frame_size,
            "one frame where frames don't wait"
        );
        assert_eq!((one.first, one.count, one.next()), (3, 1, Some(4)));
        let mut four = HeldFrames::default();
        for frame in 3..6 {
            four.push(frame, &HEAD, &page, true, PAGES_AT_ONCE)
                .expect("push");
        }
        assert_eq!(four.bytes.len(), PAGES_AT_ONCE * frame_size);
        assert_eq!(four.count, 3);
        assert!(
            four.bytes[2 * frame_size + WAL_FRAME_HEADER..3 * frame_size]
                .iter()
                .all(|&b| b == 7)
        );
        // Frames of another size while some are held: refused, nothing dropped.
        let small = [1u8; 1024];
        assert_eq!(
            four.push(6, &HEAD, &small, true, PAGES_AT_ONCE),
            Err(ffi::SQLITE_MISUSE)
        );
        assert_eq!(four.count, 3);
    }
}

#[cfg(test)]
mod tests;
