//! A transaction's frames held in memory until its commit frame, to be encrypted together.

use super::Wal;
use crate::base_file::BaseFile;
use crate::checksum::wal_frame_checksum;
use crate::file_codec::FileCodec;
use crate::format::{put_checksum, FrameHeader, WAL_FRAME_CHECKSUM_OFFSET, WAL_FRAME_HEADER};
use cipherlite_codec::PAGES_AT_ONCE;
use cipherlite_sys::ffi;
use std::ffi::c_int;
use zeroize::Zeroize;

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
pub(super) struct HeldFrames {
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
    pub(super) fn next(&self) -> Option<u32> {
        (self.count > 0).then(|| self.first + self.count as u32)
    }

    /// Adds frame `frame` (`head` ‖ `page`), which arrived with the codec `settled` or
    /// not, to a buffer with room for `room` frames (at most `PAGES_AT_ONCE`; fewer are
    /// held); `SQLITE_NOMEM` if the room can't be had.
    pub(super) fn push(
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
            self.bytes = crate::try_zeroed(room * frame_size)?;
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

impl Wal {
    /// A new frame: it joins the held frames (see [`HeldFrames`]), which are written now
    /// unless it can wait for the frames after it.
    pub(super) fn append_frame(
        &mut self,
        os: BaseFile,
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

    /// Writes the held frames (see [`HeldFrames`]): their pages encrypted (together where
    /// that pays), each header's checksum continued over the ciphertext from the previous
    /// frame's stored checksum, all with one write. Whatever happens, none is held after.
    pub fn write_held(&mut self, os: BaseFile, codec: &FileCodec) -> c_int {
        let rc = self.try_write_held(os, codec);
        if rc != ffi::SQLITE_OK {
            // Plaintext given up unwritten (frames written are ciphertext).
            self.held.bytes.zeroize();
        }
        self.held.count = 0;
        rc
    }

    pub(super) fn try_write_held(&mut self, os: BaseFile, codec: &FileCodec) -> c_int {
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
}

#[cfg(test)]
mod tests {
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
