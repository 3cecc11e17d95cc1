//! The one reader of a WAL's frames: [`WalReader`] reads its header and then frame after
//! frame through the layout of `format` (over a file of the base VFS, or over `std::fs`
//! for the offline checks), and [`judge_frame`] is the rule of recovery that decides which
//! of them belong to the chain. The VFS's recovery ([`super::chain`]), the page-1 copies
//! at open ([`wal_page1_images`]) and the key lifecycle's verify ([`committed_frames`]) all
//! read a WAL through these, so there is no second copy of its layout.

use crate::base_file::BaseFile;
use crate::checksum::wal_frame_checksum;
use crate::format::{
    FrameHeader, HeaderError, WalGeometry, WalHeader, WAL_FRAME_HEADER, WAL_HEADER,
};
use cipherlite_sys::ffi;
use std::ffi::c_int;
use std::io::{BufReader, Read};

/// Where a WAL's bytes are read from.
pub(super) trait WalSource {
    /// Fills `buf` from offset `off`; false when that many bytes are not there or can't be
    /// read.
    fn read_at(&mut self, buf: &mut [u8], off: i64) -> bool;
}

impl WalSource for BaseFile {
    fn read_at(&mut self, buf: &mut [u8], off: i64) -> bool {
        self.read(buf, off) == ffi::SQLITE_OK
    }
}

/// A WAL read with `std::fs`, front to back: buffered, and seeking only when a read does
/// not start where the one before ended.
struct FsSource {
    reader: BufReader<std::fs::File>,
    /// The offset of the next byte `reader` gives; `None` after a failed read.
    at: Option<i64>,
}

impl WalSource for FsSource {
    fn read_at(&mut self, buf: &mut [u8], off: i64) -> bool {
        let Some(at) = self.at else {
            return false;
        };
        if off != at && self.reader.seek_relative(off - at).is_err() {
            self.at = None;
            return false;
        }
        if self.reader.read_exact(buf).is_err() {
            self.at = None;
            return false;
        }
        self.at = Some(off + buf.len() as i64);
        true
    }
}

/// A WAL whose header is one of the expected page size, read frame by frame.
pub(super) struct WalReader<S> {
    source: S,
    header: WalHeader,
    geometry: WalGeometry,
}

impl<S: WalSource> WalReader<S> {
    /// The WAL in `source`, of `page_size`-byte pages: `Ok(None)` when it has no valid
    /// header (shorter than one, or not one: SQLite ignores it), `Err` for a header of
    /// another page size or version.
    pub fn open(mut source: S, page_size: usize) -> Result<Option<Self>, HeaderError> {
        let mut bytes = [0u8; WAL_HEADER];
        if !source.read_at(&mut bytes, 0) {
            return Ok(None);
        }
        match WalHeader::parse(&bytes, page_size) {
            Ok(header) => Ok(Some(WalReader {
                source,
                header,
                geometry: WalGeometry { page_size },
            })),
            Err(HeaderError::NotAHeader) => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn header(&self) -> &WalHeader {
        &self.header
    }

    pub fn geometry(&self) -> WalGeometry {
        self.geometry
    }

    /// Reads frame `frame` (from 1) whole, header ‖ page, into `buf` (one frame long);
    /// false when it is not all there.
    pub fn frame(&mut self, frame: u32, buf: &mut [u8]) -> bool {
        debug_assert_eq!(buf.len() as i64, self.geometry.frame_size());
        self.source.read_at(buf, self.geometry.frame_offset(frame))
    }

    /// The header of frame `frame`; `None` when it is not there.
    pub fn frame_header(&mut self, frame: u32) -> Option<FrameHeader> {
        let mut head = [0u8; WAL_FRAME_HEADER];
        self.source
            .read_at(&mut head, self.geometry.frame_offset(frame))
            .then(|| FrameHeader::parse(&head))
    }

    /// Reads the page of frame `frame` into `buf`; false when it is not all there.
    pub fn page(&mut self, frame: u32, buf: &mut [u8]) -> bool {
        let off = self.geometry.frame_offset(frame) + WAL_FRAME_HEADER as i64;
        self.source.read_at(buf, off)
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
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(WalFrames::default()),
        Err(e) => return Err(e),
    };
    let source = FsSource {
        reader: BufReader::with_capacity(1 << 20, file),
        at: Some(0),
    };
    let mut wal = match WalReader::open(source, page_size) {
        Ok(Some(wal)) => wal,
        Ok(None) => return Ok(WalFrames::default()),
        Err(_) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("the WAL header is not one of {page_size}-byte pages"),
            ))
        }
    };
    let wal_header = *wal.header();
    // Plaintext passes through this buffer: wiped when dropped.
    let mut frame = zeroize::Zeroizing::new(vec![0u8; WAL_FRAME_HEADER + page_size]);
    let mut chain = wal_header.checksum;
    let mut out = WalFrames::default();
    let mut frames = Vec::new();
    let mut committed = 0;
    let mut broken_at = None;
    for n in 1.. {
        if !wal.frame(n, &mut frame) {
            break;
        }
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
pub(crate) fn wal_page1_images(
    file: BaseFile,
    page_size: usize,
    limit: usize,
) -> Result<Vec<Vec<u8>>, c_int> {
    const MAX_FRAMES: i64 = 1_000_000;
    let Ok(Some(mut wal)) = WalReader::open(file, page_size) else {
        return Ok(Vec::new());
    };
    let Ok(size) = file.size() else {
        return Ok(Vec::new());
    };
    let g = wal.geometry();
    let frames = ((size - WAL_HEADER as i64).max(0) / g.frame_size()).min(MAX_FRAMES) as u32;
    let mut at = Vec::new();
    for frame in 1..=frames {
        let Some(fh) = wal.frame_header(frame) else {
            break;
        };
        if fh.pgno == 1 {
            at.push(frame);
        }
    }
    let mut images = Vec::new();
    for &frame in at.iter().rev().take(limit) {
        let mut image = crate::try_zeroed(page_size)?;
        if wal.page(frame, &mut image) {
            images.push(image);
        }
    }
    Ok(images)
}
