//! SQLite's rollback-journal and WAL file formats, as far as the VFS parses them: named
//! offsets and the header checks. The headers are plaintext by SQLite's design (they hold no
//! page content); the VFS validates every header field it lets SQLite act on.

use super::checksum::{be32, wal_checksum};

/// The 8 bytes a rollback-journal header starts with.
pub const JOURNAL_MAGIC: [u8; 8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];
/// Bytes of a journal header that carry fields (the rest, up to the sector size, is zero).
pub const JOURNAL_HEADER_FIELDS: usize = 28;
/// Offset of the record count in a journal header.
pub const JOURNAL_NREC_OFFSET: usize = 8;
/// Offset of the checksum nonce in a journal header.
pub const JOURNAL_NONCE_OFFSET: usize = 12;
/// Offset of the database size (in pages) before the transaction.
pub const JOURNAL_ORIGINAL_SIZE_OFFSET: usize = 16;
/// Offset of the sector size the journal was written with.
pub const JOURNAL_SECTOR_SIZE_OFFSET: usize = 20;
/// Offset of the page size the journal was written with.
pub const JOURNAL_PAGE_SIZE_OFFSET: usize = 24;
/// A record is `pgno (BE32) ‖ page image ‖ checksum (BE32)`.
pub const JOURNAL_RECORD_OVERHEAD: usize = 8;

/// The WAL header's size.
pub const WAL_HEADER: usize = 32;
/// A WAL frame header's size: pgno, commit size, salt-1, salt-2, checksum-1, checksum-2.
pub const WAL_FRAME_HEADER: usize = 24;
/// WAL magic numbers: the low bit says whether checksums read words big-endian.
pub const WAL_MAGIC_LE: u32 = 0x377f_0682;
pub const WAL_MAGIC_BE: u32 = 0x377f_0683;
/// The only WAL format version SQLite writes and reads.
pub const WAL_VERSION: u32 = 3_007_000;
/// Offset of the header checksum (two BE32) in the WAL header; it seeds the frame chain.
pub const WAL_HEADER_CHECKSUM_OFFSET: usize = 24;
/// Offset of the checksum pair in a frame header.
pub const WAL_FRAME_CHECKSUM_OFFSET: usize = 16;

/// A journal header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalHeader {
    pub nrec: u32,
    pub nonce: u32,
    pub original_size: u32,
    pub sector_size: u32,
    pub page_size: u32,
}

/// Why a header is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderError {
    /// Not a header at all (no magic, bad checksum): SQLite ignores such a file itself.
    NotAHeader,
    /// A well-formed header for another geometry than the database's: never let SQLite
    /// act on it (it would switch page size or truncate the database).
    WrongGeometry,
}

impl JournalHeader {
    /// Parses the first [`JOURNAL_HEADER_FIELDS`] bytes of a journal header.
    pub fn parse(bytes: &[u8]) -> Result<JournalHeader, HeaderError> {
        if bytes.len() < JOURNAL_HEADER_FIELDS || bytes[..8] != JOURNAL_MAGIC {
            return Err(HeaderError::NotAHeader);
        }
        Ok(JournalHeader {
            nrec: be32(&bytes[JOURNAL_NREC_OFFSET..]),
            nonce: be32(&bytes[JOURNAL_NONCE_OFFSET..]),
            original_size: be32(&bytes[JOURNAL_ORIGINAL_SIZE_OFFSET..]),
            sector_size: be32(&bytes[JOURNAL_SECTOR_SIZE_OFFSET..]),
            page_size: be32(&bytes[JOURNAL_PAGE_SIZE_OFFSET..]),
        })
    }

    /// Whether the header fits a database of `page_size`-byte pages: the same page size
    /// and a sector size SQLite accepts (a power of two, 32..=65536).
    pub fn check_geometry(&self, page_size: usize) -> Result<(), HeaderError> {
        let sector_ok =
            (32..=65536).contains(&self.sector_size) && self.sector_size.is_power_of_two();
        if self.page_size as usize != page_size || !sector_ok {
            return Err(HeaderError::WrongGeometry);
        }
        Ok(())
    }
}

/// A WAL header's fields, after its own checksum was verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalHeader {
    pub big_endian: bool,
    pub page_size: u32,
    pub salts: [u8; 8],
    /// The header checksum: the seed of the frames' checksum chain.
    pub checksum: (u32, u32),
}

impl WalHeader {
    /// Parses and checks a 32-byte WAL header. A header SQLite would ignore (bad magic or
    /// checksum) is `NotAHeader`; a valid one of another page size or version is
    /// `WrongGeometry` when `page_size` doesn't match.
    pub fn parse(bytes: &[u8], page_size: usize) -> Result<WalHeader, HeaderError> {
        if bytes.len() < WAL_HEADER {
            return Err(HeaderError::NotAHeader);
        }
        let magic = be32(&bytes[0..4]);
        if magic != WAL_MAGIC_LE && magic != WAL_MAGIC_BE {
            return Err(HeaderError::NotAHeader);
        }
        let big_endian = magic & 1 == 1;
        let checksum = (
            be32(&bytes[WAL_HEADER_CHECKSUM_OFFSET..]),
            be32(&bytes[WAL_HEADER_CHECKSUM_OFFSET + 4..]),
        );
        if wal_checksum(big_endian, (0, 0), &bytes[..WAL_HEADER_CHECKSUM_OFFSET]) != checksum {
            return Err(HeaderError::NotAHeader);
        }
        let header_page_size = be32(&bytes[8..12]);
        if be32(&bytes[4..8]) != WAL_VERSION || header_page_size as usize != page_size {
            return Err(HeaderError::WrongGeometry);
        }
        let mut salts = [0u8; 8];
        salts.copy_from_slice(&bytes[16..24]);
        Ok(WalHeader {
            big_endian,
            page_size: header_page_size,
            salts,
            checksum,
        })
    }
}

/// Where frames sit in a WAL of `page_size`-byte pages.
#[derive(Debug, Clone, Copy)]
pub struct WalGeometry {
    pub page_size: usize,
}

impl WalGeometry {
    pub fn frame_size(self) -> i64 {
        (WAL_FRAME_HEADER + self.page_size) as i64
    }

    /// The offset of frame `frame` (1-based).
    pub fn frame_offset(self, frame: u32) -> i64 {
        WAL_HEADER as i64 + (i64::from(frame) - 1) * self.frame_size()
    }

    /// The frame (1-based) whose header starts at `off`, if `off` is a frame start.
    pub fn frame_at(self, off: i64) -> Option<u32> {
        let rel = off.checked_sub(WAL_HEADER as i64)?;
        if rel < 0 || rel % self.frame_size() != 0 {
            return None;
        }
        u32::try_from(rel / self.frame_size() + 1).ok()
    }

    /// The frame whose page starts at `off`, if `off` is where a frame's page starts.
    pub fn frame_of_page_at(self, off: i64) -> Option<u32> {
        self.frame_at(off.checked_sub(WAL_FRAME_HEADER as i64)?)
    }

    /// The frame whose checksum field starts at `off`.
    pub fn frame_of_checksum_at(self, off: i64) -> Option<u32> {
        self.frame_at(off.checked_sub(WAL_FRAME_CHECKSUM_OFFSET as i64)?)
    }
}

/// A frame header's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHeader {
    pub pgno: u32,
    pub commit_size: u32,
    pub salts: [u8; 8],
    pub checksum: (u32, u32),
}

impl FrameHeader {
    pub fn parse(bytes: &[u8]) -> FrameHeader {
        let mut salts = [0u8; 8];
        salts.copy_from_slice(&bytes[8..16]);
        FrameHeader {
            pgno: be32(&bytes[0..4]),
            commit_size: be32(&bytes[4..8]),
            salts,
            checksum: (
                be32(&bytes[WAL_FRAME_CHECKSUM_OFFSET..]),
                be32(&bytes[WAL_FRAME_CHECKSUM_OFFSET + 4..]),
            ),
        }
    }
}

/// Writes a checksum pair big-endian into `out[0..8]`.
pub fn put_checksum(out: &mut [u8], checksum: (u32, u32)) {
    out[0..4].copy_from_slice(&checksum.0.to_be_bytes());
    out[4..8].copy_from_slice(&checksum.1.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wal_header(page_size: u32, version: u32) -> [u8; 32] {
        let mut h = [0u8; 32];
        h[0..4].copy_from_slice(&WAL_MAGIC_BE.to_be_bytes());
        h[4..8].copy_from_slice(&version.to_be_bytes());
        h[8..12].copy_from_slice(&page_size.to_be_bytes());
        h[16..24].copy_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        let ck = wal_checksum(true, (0, 0), &h[..24]);
        put_checksum(&mut h[24..32], ck);
        h
    }

    #[test]
    fn wal_header_checks_geometry_and_checksum() {
        let good = wal_header(4096, WAL_VERSION);
        let parsed = WalHeader::parse(&good, 4096).expect("valid");
        assert!(parsed.big_endian);
        assert_eq!(parsed.salts, [1, 2, 3, 4, 5, 6, 7, 8]);
        assert_eq!(
            WalHeader::parse(&wal_header(1024, WAL_VERSION), 4096),
            Err(HeaderError::WrongGeometry)
        );
        assert_eq!(
            WalHeader::parse(&wal_header(4096, 1), 4096),
            Err(HeaderError::WrongGeometry)
        );
        let mut torn = good;
        torn[20] ^= 1;
        assert_eq!(WalHeader::parse(&torn, 4096), Err(HeaderError::NotAHeader));
        assert_eq!(
            WalHeader::parse(&[0u8; 32], 4096),
            Err(HeaderError::NotAHeader)
        );
    }

    #[test]
    fn journal_header_checks_page_and_sector_size() {
        let mut h = [0u8; 28];
        h[..8].copy_from_slice(&JOURNAL_MAGIC);
        h[12..16].copy_from_slice(&7u32.to_be_bytes());
        h[20..24].copy_from_slice(&512u32.to_be_bytes());
        h[24..28].copy_from_slice(&4096u32.to_be_bytes());
        let parsed = JournalHeader::parse(&h).expect("header");
        assert_eq!(parsed.nonce, 7);
        assert_eq!(parsed.check_geometry(4096), Ok(()));
        assert_eq!(parsed.check_geometry(1024), Err(HeaderError::WrongGeometry));
        h[20..24].copy_from_slice(&500u32.to_be_bytes());
        let odd_sector = JournalHeader::parse(&h).expect("header");
        assert_eq!(
            odd_sector.check_geometry(4096),
            Err(HeaderError::WrongGeometry)
        );
        assert_eq!(JournalHeader::parse(&h[..20]), Err(HeaderError::NotAHeader));
    }

    #[test]
    fn wal_geometry_maps_offsets_to_frames() {
        let g = WalGeometry { page_size: 4096 };
        assert_eq!(g.frame_offset(1), 32);
        assert_eq!(g.frame_at(32), Some(1));
        assert_eq!(g.frame_at(32 + 4120), Some(2));
        assert_eq!(g.frame_at(33), None);
        assert_eq!(g.frame_at(0), None);
        assert_eq!(g.frame_of_page_at(56), Some(1));
        assert_eq!(g.frame_of_checksum_at(32 + 16), Some(1));
    }
}
