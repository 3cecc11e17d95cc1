//! The checksum chain of the WAL, and recovery.
//!
//! Checksums on disk are over the ciphertext, as SQLCipher and SQLite3 Multiple Ciphers
//! write them, chained frame to frame from the header's checksum. SQLite computes its chain
//! over the plaintext: the VFS replaces the checksum of every frame header written (the
//! header is held back until its page is encrypted), and during recovery hands SQLite the
//! plaintext chain for each frame whose stored checksum is valid over the ciphertext,
//! continuing from the previous frame's stored checksum, so WALs written by SQLCipher and
//! SQLite3MC recover. A chain over the plaintext is never followed: whether a planted frame
//! is kept would then depend on a guess of its page's plaintext (an oracle).

use super::frames::{judge_frame, FrameVerdict};
use super::Wal;
use crate::base_file::BaseFile;
use crate::checksum::{be32, wal_frame_checksum};
use crate::file_codec::FileCodec;
use crate::format::{
    put_checksum, FrameHeader, HeaderError, WalHeader, WAL_FRAME_CHECKSUM_OFFSET, WAL_FRAME_HEADER,
};
use crate::main_db::refuse;
use crate::wal_index::LastCommit;
use cipherlite_sys::ffi;
use std::ffi::c_int;

/// A frame this handle wrote.
#[derive(Clone, Copy)]
pub(super) struct WrittenFrame {
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
pub(super) struct Recovery {
    next_frame: u32,
    header: WalHeader,
    /// SQLite's chain (over the plaintext it was handed).
    sqlite_chain: (u32, u32),
    /// The stored checksum of the previous frame (or the header's).
    disk_chain: (u32, u32),
}

impl Wal {
    pub(super) fn read_header(&mut self, os: BaseFile, out: &mut [u8]) -> c_int {
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
    pub(super) fn read_frame(
        &mut self,
        os: BaseFile,
        codec: &FileCodec,
        frame: u32,
        out: &mut [u8],
    ) -> c_int {
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
    pub(super) fn stored_checksum_before(
        &self,
        os: BaseFile,
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

    /// This handle's record of frame `frame`, written now.
    pub(super) fn written_frame(
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
    pub(super) fn appended(&mut self, frame: u32, fh: &FrameHeader, checksum: (u32, u32)) {
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

    /// Writes a held-back frame header alone (SQLite rewriting checksums): its checksum
    /// recomputed over the ciphertext on disk.
    pub(super) fn flush_header(&mut self, os: BaseFile, scratch: &mut [u8]) -> c_int {
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
