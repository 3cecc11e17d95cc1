//! The rollback journal (`<db>-journal`): a header per sector-aligned segment, then records
//! `pgno (BE32) ‖ page image ‖ checksum (BE32)`.
//!
//! SQLite writes a record as three calls (page number, page, checksum) and reads it the same
//! way, so the page number of a page image is the 4-byte access just before it. Page images
//! are encrypted like the database page of that number — or are that page's image in the
//! database file, when it is the one the database handle wrote last (see `journal_copy`).
//!
//! Checksums on disk are over the ciphertext, as SQLCipher writes them: nothing on disk is
//! derived from the plaintext, and a key-less SQLite (or SQLCipher) rolling a hot journal
//! back checks and restores the ciphertext byte for byte. SQLite above this VFS checks the
//! checksum over the plaintext it is handed, so on read the VFS hands it that checksum when
//! the stored one is valid over the ciphertext, and one that can't match otherwise — which
//! ends the playback there, as a torn record does. SQLite3 Multiple Ciphers writes its
//! checksums over the plaintext; those are accepted only when the owner opens with
//! `acceptPlaintextJournalChecksums` (see `KeyedVfsHandle::accept_plaintext_journal_checksums`).
//!
//! Headers are plaintext by format; the VFS validates each one SQLite reads or writes: a
//! header for another page size (SQLite would switch to it and truncate the database to
//! the header's original size) is an error before SQLite acts on it.

use super::format::{
    HeaderError, JournalHeader, JOURNAL_HEADER_FIELDS, JOURNAL_MAGIC, JOURNAL_RECORD_OVERHEAD,
};
use super::main_db::{refuse, write_page, MainDb};
use super::{base_file::BaseFile, checksum::be32, file_codec::FileCodec};
use cipherlite_codec::journal_checksum;
use cipherlite_sys::ffi;
use std::ffi::c_int;

/// The longest other read SQLite makes of a journal: a super-journal's file name.
const MAX_NAME_READ: usize = 1024;

pub(super) struct Journal {
    /// The database's page size: the size of every record's page image.
    page_size: usize,
    /// The header the current records belong to (its nonce seeds their checksums).
    header: Option<JournalHeader>,
    /// The last 4-byte write that can be a record's page number: (offset, value).
    pgno_write: Option<(i64, u32)>,
    /// The last page image written: (offset, checksum over its ciphertext).
    page_write: Option<(i64, u32)>,
    pgno_read: Option<(i64, u32)>,
    page_read: Option<PageRead>,
    /// A page of scratch to check a copied record's plaintext in (allocated at the first
    /// copy; zero between uses).
    check: Vec<u8>,
    /// Record checksums over the plaintext are accepted too (the owner's choice, see
    /// `KeyedVfsHandle::accept_plaintext_journal_checksums`).
    plaintext_checksums: bool,
    /// The last header read was refused for [`PLAINTEXT_CHECKSUMS_REFUSAL`].
    pub refused_plaintext_checksums: bool,
}

/// Why a hot journal is not played back without `acceptPlaintextJournalChecksums`.
pub(super) const PLAINTEXT_CHECKSUMS_REFUSAL: &str = "the hot journal beside this database was not written by cipherlite or SQLCipher (its record checksums are not over the ciphertext: SQLite3 Multiple Ciphers writes them over the plaintext). Roll it back with SQLite3 Multiple Ciphers, or open the database once with the \"acceptPlaintextJournalChecksums\" option";

struct PageRead {
    off: i64,
    cipher_checksum: u32,
    plain_checksum: u32,
    authentic: bool,
}

impl Journal {
    pub fn new(page_size: usize, plaintext_checksums: bool) -> Journal {
        Journal {
            page_size,
            plaintext_checksums,
            refused_plaintext_checksums: false,
            header: None,
            pgno_write: None,
            page_write: None,
            pgno_read: None,
            page_read: None,
            check: Vec::new(),
        }
    }

    /// Whether the page of scratch for checking a copied record is there (allocated now
    /// if not; without memory for it, records are encrypted afresh).
    fn check_buffer(&mut self) -> bool {
        if self.check.len() != self.page_size {
            // (Not one of the allocations the fault sweep fails in turn: failing it fails
            // nothing, by design.)
            if self.check.try_reserve_exact(self.page_size).is_err() {
                return false;
            }
            self.check.resize(self.page_size, 0);
        }
        true
    }

    fn nonce(&self) -> u32 {
        self.header.map_or(0, |h| h.nonce)
    }

    /// A write SQLite makes to the journal; `database` is the database file's OS file and
    /// state (none in tests of the journal alone).
    pub fn write(
        &mut self,
        os: BaseFile,
        codec: &FileCodec,
        scratch: &mut [u8],
        data: &[u8],
        off: i64,
        database: Option<(BaseFile, &MainDb)>,
    ) -> c_int {
        let p = self.page_size;
        if data.len() == 4 {
            if let Some((page_off, cipher_checksum)) = self.page_write {
                if off == page_off + p as i64 {
                    // The record's checksum: SQLite's is over the plaintext; store the one
                    // over the ciphertext written.
                    self.page_write = None;
                    return os.write(&cipher_checksum.to_be_bytes(), off);
                }
            }
            self.pgno_write = Some((off, be32(data)));
            return os.write(data, off);
        }
        if data.len() == p {
            if let Some((pgno_off, pgno)) = self.pgno_write {
                if pgno_off + 4 == off {
                    self.pgno_write = None;
                    // The page's image in the database file when it is the one the
                    // database handle wrote last and it holds what SQLite journals (see
                    // `journal_copy`); else the content encrypted afresh. (Not while the
                    // codec is unsettled: a new file's salt may still change.)
                    let copied = !codec.is_unsettled()
                        && database.is_some_and(|(db, main)| {
                            self.check_buffer()
                                && main.written_image(
                                    db,
                                    codec,
                                    pgno,
                                    data,
                                    &mut scratch[..p],
                                    &mut self.check,
                                )
                        });
                    let rc = if copied {
                        os.write(&scratch[..p], off)
                    } else {
                        write_page(os, codec, scratch, pgno, data, off)
                    };
                    if rc == ffi::SQLITE_OK {
                        let image = &scratch[..p];
                        self.page_write = Some((off, journal_checksum(self.nonce(), image)));
                    }
                    return rc;
                }
            }
        }
        self.pgno_write = None;
        if data.len() >= JOURNAL_HEADER_FIELDS
            && (data[..8] == JOURNAL_MAGIC || data[..12] == [0u8; 12])
            && !cipherlite_codec::is_all_zero(&data[..JOURNAL_HEADER_FIELDS])
        {
            // A header (padded to the sector size, possibly in page-sized pieces). SQLite
            // writes it with the magic and record count zeroed when it syncs the journal,
            // and fills them in after the records are synced.
            let mut fields = [0u8; JOURNAL_HEADER_FIELDS];
            fields.copy_from_slice(&data[..JOURNAL_HEADER_FIELDS]);
            fields[..8].copy_from_slice(&JOURNAL_MAGIC);
            return match JournalHeader::parse(&fields) {
                Ok(h) if h.check_geometry(p).is_ok() => {
                    self.header = Some(h);
                    os.write(data, off)
                }
                _ => ffi::SQLITE_IOERR_WRITE,
            };
        }
        if data.len() >= p {
            // Not a header, not a record's page: page-sized data would land in clear.
            return ffi::SQLITE_IOERR_WRITE;
        }
        // Header field updates (record count, magic), zeroed headers, a super-journal
        // name: plaintext by format.
        os.write(data, off)
    }

    pub fn read(&mut self, os: BaseFile, codec: &FileCodec, out: &mut [u8], off: i64) -> c_int {
        let p = self.page_size;
        match out.len() {
            1 => os.read(out, off), // "is the journal's first byte non-zero?"
            8 => self.read_magic(os, codec, out, off),
            4 => {
                let rc = os.read(out, off);
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
                let value = be32(out);
                if let Some(page) = self.page_read.take() {
                    if off == page.off + p as i64 {
                        // Over the ciphertext; over the plaintext only when the owner asked:
                        // otherwise whether playback goes on would tell whoever planted
                        // the record whether a guess of its plaintext was right.
                        let valid = page.authentic
                            && (value == page.cipher_checksum
                                || (self.plaintext_checksums && value == page.plain_checksum));
                        let handed = if valid {
                            page.plain_checksum
                        } else {
                            page.plain_checksum.wrapping_add(1)
                        };
                        out.copy_from_slice(&handed.to_be_bytes());
                        return ffi::SQLITE_OK;
                    }
                }
                self.pgno_read = Some((off, value));
                ffi::SQLITE_OK
            }
            n if n == p => {
                let Some((pgno_off, pgno)) = self.pgno_read.take() else {
                    return refuse(out, ffi::SQLITE_CORRUPT);
                };
                if pgno_off + 4 != off {
                    return refuse(out, ffi::SQLITE_CORRUPT);
                }
                let rc = os.read(out, off);
                if rc != ffi::SQLITE_OK {
                    return refuse(out, rc);
                }
                let cipher_checksum = journal_checksum(self.nonce(), out);
                let authentic = codec.decrypt(pgno, out);
                if !authentic {
                    // Torn, or not ours: no byte of it reaches SQLite, and the checksum
                    // handed next can't match.
                    out.fill(0);
                }
                let plain_checksum = journal_checksum(self.nonce(), out);
                self.page_read = Some(PageRead {
                    off,
                    cipher_checksum,
                    plain_checksum,
                    authentic,
                });
                ffi::SQLITE_OK
            }
            n if n <= MAX_NAME_READ => os.read(out, off), // a super-journal's name
            _ => refuse(out, ffi::SQLITE_CORRUPT),
        }
    }

    /// SQLite reads 8 bytes to look for a header's magic (or a super-journal pointer's, at
    /// the end). A header found is validated whole before SQLite reads its fields.
    fn read_magic(&mut self, os: BaseFile, codec: &FileCodec, out: &mut [u8], off: i64) -> c_int {
        let p = self.page_size;
        let rc = os.read(out, off);
        if rc != ffi::SQLITE_OK || out[..] != JOURNAL_MAGIC {
            return rc;
        }
        let mut fields = [0u8; JOURNAL_HEADER_FIELDS];
        if os.read(&mut fields, off) != ffi::SQLITE_OK {
            // Fewer than 28 bytes from here: a super-journal pointer's magic, not a header.
            return ffi::SQLITE_OK;
        }
        match JournalHeader::parse(&fields).map(|h| (h, h.check_geometry(p))) {
            Ok((h, Ok(()))) => {
                if !self.plaintext_checksums {
                    match self.first_record_checksummed_over_plaintext(os, codec, off, &h) {
                        Ok(false) => {}
                        Ok(true) => {
                            self.refused_plaintext_checksums = true;
                            return refuse(out, ffi::SQLITE_CORRUPT);
                        }
                        Err(rc) => return refuse(out, rc),
                    }
                }
                self.header = Some(h);
                ffi::SQLITE_OK
            }
            Ok((_, Err(_))) | Err(HeaderError::WrongGeometry) => refuse(out, ffi::SQLITE_CORRUPT),
            Err(HeaderError::NotAHeader) => ffi::SQLITE_OK,
        }
    }
}

impl Journal {
    /// Whether the first record after header `h` (at `header_at`) has a page authentic as
    /// its page number but a checksum not over the ciphertext: SQLite3 Multiple Ciphers'
    /// journal, or a forged one. Looked at when SQLite reads the header, before it acts on
    /// it (it truncates the database to the header's size before reading any record), and
    /// decided without the plaintext: only when the header counts its records (SQLite
    /// synced them before it wrote the count; a count of `0xffffffff` means records up to
    /// the end, where a torn or stale record is expected and ends the playback as usual).
    fn first_record_checksummed_over_plaintext(
        &mut self,
        os: BaseFile,
        codec: &FileCodec,
        header_at: i64,
        h: &JournalHeader,
    ) -> Result<bool, c_int> {
        if h.nrec == 0 || h.nrec == u32::MAX {
            return Ok(false);
        }
        let p = self.page_size;
        let at = header_at + i64::from(h.sector_size);
        let mut record = zeroize::Zeroizing::new(super::try_zeroed(p + JOURNAL_RECORD_OVERHEAD)?);
        if os.read(&mut record, at) != ffi::SQLITE_OK {
            // Not all there: SQLite's own read of it will tell.
            return Ok(false);
        }
        let pgno = be32(&record[..4]);
        let stored = be32(&record[4 + p..]);
        let page = &mut record[4..4 + p];
        let cipher_checksum = journal_checksum(h.nonce, page);
        if stored == cipher_checksum || pgno == 0 {
            return Ok(false);
        }
        Ok(codec.decrypt(pgno, page))
    }
}

/// The header of the hot journal `file`, if it has one for this page size.
fn read_header(file: BaseFile, p: usize) -> Option<JournalHeader> {
    let mut fields = [0u8; JOURNAL_HEADER_FIELDS];
    if file.read(&mut fields, 0) != ffi::SQLITE_OK {
        return None;
    }
    let header = JournalHeader::parse(&fields).ok()?;
    header.check_geometry(p).ok()?;
    Some(header)
}

/// The database size in pages before the transaction the hot journal `file` belongs to.
pub(super) fn journal_original_size(file: BaseFile, p: usize) -> Option<u32> {
    read_header(file, p).map(|h| h.original_size)
}

/// The images of page 1 saved in the hot journal `file`, in every segment (SQLite syncs a
/// journal in segments, each with its own header at a sector boundary; the last one's magic
/// may still be zero): copies that prove the key when page 1 in the database is torn.
/// `SQLITE_NOMEM` when a copy can't be allocated (never mistaken for "no copy").
pub(super) fn journal_page1_images(file: BaseFile, p: usize) -> Result<Vec<Vec<u8>>, c_int> {
    const MAX_RECORDS: u64 = 1_000_000;
    let mut images = Vec::new();
    let Ok(size) = file.size() else {
        return Ok(images);
    };
    let record_size = (JOURNAL_RECORD_OVERHEAD + p) as i64;
    let mut header_at = 0i64;
    let mut sector = 0i64;
    let mut records_seen = 0u64;
    while header_at + JOURNAL_HEADER_FIELDS as i64 <= size && records_seen < MAX_RECORDS {
        let mut fields = [0u8; JOURNAL_HEADER_FIELDS];
        if file.read(&mut fields, header_at) != ffi::SQLITE_OK {
            break;
        }
        if fields[..12] == [0u8; 12] {
            // Magic and record count not yet written (the segment wasn't synced).
            fields[..8].copy_from_slice(&JOURNAL_MAGIC);
        }
        let Some(header) = JournalHeader::parse(&fields)
            .ok()
            .filter(|h| h.check_geometry(p).is_ok())
        else {
            break;
        };
        if sector == 0 {
            sector = i64::from(header.sector_size);
        }
        let start = header_at + sector;
        let available = ((size - start).max(0) / record_size) as u64;
        let records = match header.nrec {
            0 | 0xffff_ffff => available,
            n => u64::from(n).min(available),
        };
        let mut pgno = [0u8; 4];
        for i in 0..records {
            let at = start + i as i64 * record_size;
            if file.read(&mut pgno, at) != ffi::SQLITE_OK {
                break;
            }
            if be32(&pgno) == 1 && images.len() < 16 {
                let mut image = super::try_zeroed(p)?;
                if file.read(&mut image, at + 4) == ffi::SQLITE_OK {
                    images.push(image);
                }
            }
        }
        records_seen += records.max(1);
        let end = start + records as i64 * record_size;
        // The next segment's header is at the next sector boundary.
        header_at = (end + sector - 1) / sector * sector;
        if records == 0 {
            break;
        }
    }
    Ok(images)
}

#[cfg(test)]
mod tests;
