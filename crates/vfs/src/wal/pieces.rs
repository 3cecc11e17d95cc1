//! A frame SQLite writes in pieces (see [`Assembly`]).

use super::Wal;
use crate::base_file::BaseFile;
use crate::checksum::wal_frame_checksum;
use crate::file_codec::FileCodec;
use crate::format::{put_checksum, FrameHeader, WAL_FRAME_CHECKSUM_OFFSET, WAL_FRAME_HEADER};
use cipherlite_sys::ffi;
use std::ffi::c_int;

/// A frame written in pieces: on a device without powersafe overwrite, SQLite pads a
/// commit to the sector boundary with copies of the commit frame, and splits the copy that
/// crosses the boundary into two writes with a sync between them. The part before the sync
/// must be final when the sync returns (the sector also holds the commit frame's tail), yet
/// the page can't be encrypted before all of it has arrived. A padding frame duplicates the
/// previous frame, so as soon as its first bytes match that frame's header, the whole frame
/// is written at once from the previous frame's authenticated ciphertext; the later pieces
/// are checked against that frame's plaintext (and, should they differ, the frame is
/// encrypted from what SQLite wrote and written again).
pub(super) struct Assembly {
    frame: u32,
    bytes: Vec<u8>,
    filled: usize,
    /// The previous frame's page plaintext, once the frame was written speculatively.
    speculated: Option<Vec<u8>>,
}

impl Wal {
    /// A piece of a frame written in parts (see [`Assembly`]); `None` when `data` is not
    /// one (a whole header or page, or not within a frame).
    pub(super) fn write_piece(
        &mut self,
        os: BaseFile,
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
            let mut bytes = match crate::try_zeroed(frame_size) {
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
    pub(super) fn speculate(
        &mut self,
        os: BaseFile,
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
        let mut plain = crate::try_copy(&buf[WAL_FRAME_HEADER..])?;
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
}
