//! The main database file: page `n` at `(n-1)·P`, each encrypted and authenticated whole.
//!
//! Geometry rules: SQLite writes whole pages at page offsets; it reads whole pages, or a
//! part of the 100-byte database header (the header at open, the change counter before
//! each read transaction), which comes from page 1 authenticated whole (or is zeros when
//! page 1 doesn't authenticate). Any other read or write is refused: it would reach SQLite
//! unauthenticated, or the disk unencrypted.

use super::{
    base_file::BaseFile, file_codec::FileCodec, journal_copy::KnownImages, wal_index::WalIndex,
};
use cipherlite_codec::PAGES_AT_ONCE;
use cipherlite_sys::ffi;
use std::{ffi::c_int, sync::Arc};
use zeroize::Zeroize;

/// The SQLite database header's size: the only part of a page SQLite reads on its own.
const DATABASE_HEADER: usize = 100;

pub(super) struct MainDb {
    /// Shared with the database's WAL handle (see `wal_index`).
    pub wal_index: Arc<WalIndex>,
    pub page_size: usize,
    /// Page 1 as last read or written: its image on disk and its plaintext. In rollback
    /// mode SQLite reads page 1's header (the change counter) at every read transaction;
    /// while the image on disk is byte for byte the one authenticated before, its
    /// plaintext is served again instead of verifying and decrypting the whole page.
    pub page1: Option<Page1Cache>,
    /// The page SQLite read last from the file (0: none), to see a sequential scan.
    last_read: u32,
    /// Pages read and authenticated ahead of a sequential scan (see [`ReadAhead`]).
    ahead: Option<ReadAhead>,
    /// What identifies each page image this handle last wrote, for the rollback journal to
    /// take those images as they are (see `journal_copy`).
    written: KnownImages,
    /// `wal_index.wal_page_reads()` when `written` was last brought up to date with it.
    wal_page_reads_seen: u64,
    /// Pages written in rollback-journal mode, not yet encrypted nor on disk (see
    /// [`HeldPages`]).
    held: HeldPages,
}

/// The pages of one commit (or one cache spill) on their way to the database file in
/// rollback-journal mode: SQLite writes them one `xWrite` at a time, in page order, and
/// here up to [`PAGES_AT_ONCE`] wait so that they go through the cipher together
/// (`FileCodec::encrypt_pages_in_place`), then are written.
///
/// Held only while a rollback journal of the database is open (SQLite holds the EXCLUSIVE
/// lock: no other connection reads the file), and never in WAL mode, where a checkpoint's
/// copies become visible to readers through the wal-index without any call here. Every
/// call of the connection's thread into the VFS that reads, sizes, truncates, syncs, locks,
/// unlocks or controls a file, writes another one, or opens, closes, deletes or checks for
/// one writes them first (`file::write_held_pages_before`): they reach the OS in SQLite's order,
/// only later, and always before its commit point, which is one of those calls — a journal
/// deleted (the VFS's `xDelete`), truncated or zeroed, a super-journal deleted; at
/// `synchronous = OFF` no sync comes before it, but `SQLITE_FCNTL_SYNC` does. A process
/// killed meanwhile loses them as if it had died before writing them: the journal is
/// still hot and rolls the file back.
///
/// One file per thread holds pages (`file::HOLDER`, a thread-local: a connection's files
/// are used on its thread), and a file about to hold pages first has another's written.
///
/// If they can't be written (no memory, an I/O error), they stay held — the plaintext
/// intact, encrypted again at the next try — and a call of their database that needed them
/// written (on its file or its journal, or a delete) fails, so the commit point is not
/// passed; other files' calls go on (the EXCLUSIVE lock keeps every other connection off
/// the file meanwhile). Only an unlock or a close gives them up (the transaction then
/// never committed: its journal is hot). A page whose own
/// `xWrite` filled the batch and failed so may still be written by a later try: harmless,
/// its journal record puts the page back if the transaction rolls back, and SQLite's
/// rollback reads the journal (a call that writes them first) before it plays it back.
#[derive(Default)]
struct HeldPages {
    /// Plaintext of the held pages, back to back (room for `PAGES_AT_ONCE`; allocated at
    /// the first page held, wiped once written or given up).
    plaintext: Vec<u8>,
    /// Where they are encrypted (so that a failed try leaves the plaintext whole).
    images: Vec<u8>,
    pgnos: [u32; PAGES_AT_ONCE],
    count: usize,
}

/// Pages read ahead of a sequential scan: when SQLite reads page P right after P − 1, pages
/// P .. P + 4 are read in one call and authenticated at once (the vector unit computes
/// several HMACs together for little more than one; AEGIS pages are decrypted and checked
/// in the same pass as they are read); P is handed over, the
/// others kept for the next reads.
///
/// A kept image is valid only in the lock epoch it was read in (`WalIndex::epoch`, moved by
/// every xLock, xUnlock, xShmLock and xTruncate on this handle): while SQLite holds the
/// same locks no other connection writes a page this one reads from the file (in WAL mode a
/// checkpoint copies only frames every reader already sees, so never a page a reader takes
/// from the file), and this handle's own writes drop what is kept. A kept page that did
/// not authenticate is simply not kept: it fails when SQLite reads it, not before.
pub(super) struct ReadAhead {
    epoch: u64,
    first: u32,
    images: Vec<u8>,
    /// Which of the pages are kept (authenticated, not handed over yet).
    kept: [bool; PAGES_AT_ONCE],
    /// Whether the kept pages are held decrypted (the AEGIS format: one pass decrypts and
    /// checks a page, so they are decrypted when read ahead) rather than as authenticated
    /// images (SQLCipher's, decrypted when handed over). Decrypted pages are wiped when
    /// this is dropped.
    decrypted: bool,
    /// Whether `images` ever held decrypted pages (then it is wiped when dropped).
    held_plaintext: bool,
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        if self.held_plaintext {
            self.images.zeroize();
        }
    }
}

pub(super) struct Page1Cache {
    image: Vec<u8>,
    plaintext: Vec<u8>,
}

impl Drop for HeldPages {
    fn drop(&mut self) {
        self.plaintext.zeroize();
        self.images.zeroize();
    }
}

impl MainDb {
    pub fn new(wal_index: Arc<WalIndex>, page_size: usize) -> MainDb {
        MainDb {
            wal_index,
            page_size,
            page1: None,
            last_read: 0,
            ahead: None,
            written: KnownImages::default(),
            wal_page_reads_seen: 0,
            held: HeldPages::default(),
        }
    }

    /// Whether pages are held back (see [`HeldPages`]).
    pub fn holds_pages(&self) -> bool {
        self.held.count > 0
    }

    /// Holds page `pgno` (`data`, a whole page) back, replacing a held image of the same
    /// page; writes the held pages when that fills them. `None` when the page can't be
    /// held (no memory for the buffers): the caller writes it at once.
    fn hold(&mut self, os: BaseFile, codec: &FileCodec, pgno: u32, data: &[u8]) -> Option<c_int> {
        let size = self.page_size;
        let held_at = self.held.pgnos[..self.held.count]
            .iter()
            .position(|&p| p == pgno);
        if held_at.is_none() && self.held.count == PAGES_AT_ONCE {
            // Full since a write of them failed: they go first.
            let rc = self.write_held(os, codec);
            if rc != ffi::SQLITE_OK {
                return Some(rc);
            }
        }
        let held = &mut self.held;
        if held.images.len() != PAGES_AT_ONCE * size {
            // (None held: a page size never changes while pages are held.)
            held.plaintext = super::try_zeroed(PAGES_AT_ONCE * size).ok()?;
            held.images = super::try_zeroed(PAGES_AT_ONCE * size).ok()?;
        }
        let slot = match held_at {
            Some(slot) => slot,
            None => {
                held.pgnos[held.count] = pgno;
                held.count += 1;
                held.count - 1
            }
        };
        held.plaintext[slot * size..(slot + 1) * size].copy_from_slice(data);
        Some(if held.count == PAGES_AT_ONCE {
            self.write_held(os, codec)
        } else {
            ffi::SQLITE_OK
        })
    }

    /// Writes the held pages (see [`HeldPages`]): encrypted together, each run of
    /// consecutive pages with one write. On failure they stay held.
    pub fn write_held(&mut self, os: BaseFile, codec: &FileCodec) -> c_int {
        let (size, count) = (self.page_size, self.held.count);
        if count == 0 {
            return ffi::SQLITE_OK;
        }
        let held = &mut self.held;
        held.images[..count * size].copy_from_slice(&held.plaintext[..count * size]);
        let mut pages: [(u32, &mut [u8]); PAGES_AT_ONCE] = Default::default();
        for ((page, image), &pgno) in pages
            .iter_mut()
            .zip(held.images[..count * size].chunks_exact_mut(size))
            .zip(&held.pgnos)
        {
            *page = (pgno, image);
        }
        let rc = codec.encrypt_pages_in_place(&mut pages[..count]);
        if rc != ffi::SQLITE_OK {
            // (Part of the copy may still be plaintext.)
            held.images[..count * size].zeroize();
            return rc;
        }
        // Runs of consecutive page numbers (SQLite writes in page order; a page written
        // again in place keeps its slot, so check rather than assume).
        let mut start = 0;
        while start < count {
            let mut end = start + 1;
            while end < count && held.pgnos[end] == held.pgnos[end - 1] + 1 {
                end += 1;
            }
            let off = (i64::from(held.pgnos[start]) - 1) * size as i64;
            let rc = os.write(&held.images[start * size..end * size], off);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            start = end;
        }
        for slot in 0..count {
            let pgno = self.held.pgnos[slot];
            let image = &self.held.images[slot * size..(slot + 1) * size];
            self.written.note(pgno, image);
            if pgno == 1 {
                self.page1 = page1_cache(
                    image,
                    &self.held.plaintext[slot * size..(slot + 1) * size],
                    codec.reserve(),
                );
            }
        }
        self.give_up_held();
        ffi::SQLITE_OK
    }

    /// Drops the held pages unwritten (or once written), wiping their plaintext.
    pub fn give_up_held(&mut self) {
        let held = &mut self.held;
        held.plaintext[..held.count * self.page_size].zeroize();
        held.count = 0;
    }

    /// Page `pgno` from the pages read ahead, if kept there in this lock epoch.
    fn read_kept(&mut self, codec: &FileCodec, pgno: u32, out: &mut [u8]) -> Option<c_int> {
        let epoch = self.wal_index.epoch();
        let ahead = self.ahead.as_mut()?;
        if ahead.epoch != epoch {
            ahead.kept = [false; PAGES_AT_ONCE];
            return None;
        }
        let index = pgno.checked_sub(ahead.first)? as usize;
        if index >= PAGES_AT_ONCE || !ahead.kept[index] {
            return None;
        }
        ahead.kept[index] = false;
        out.copy_from_slice(&ahead.images[index * self.page_size..(index + 1) * self.page_size]);
        let decrypted = ahead.decrypted;
        self.last_read = pgno;
        let authentic = self.decrypt_read(pgno, out, |_, page| {
            if decrypted {
                codec.hand_over_decrypted(page)
            } else {
                codec.decrypt_authenticated(pgno, page)
            }
        });
        Some(if authentic {
            ffi::SQLITE_OK
        } else {
            refuse(out, ffi::SQLITE_CORRUPT)
        })
    }

    /// Decrypts `page`, an image of page `pgno` read from the file for SQLite, in place with
    /// `decrypt`, and returns whether it was authentic. Unless it was, and ended in the
    /// reserve this handle wrote last (so is the image written: see `journal_copy`), the
    /// page's image is known no more: the journal copy needs SQLite's content of a known
    /// page to be the content this handle wrote.
    fn decrypt_read(
        &mut self,
        pgno: u32,
        page: &mut [u8],
        decrypt: impl FnOnce(&mut Self, &mut [u8]) -> bool,
    ) -> bool {
        let written = self.written.reserve_matches(pgno, page);
        let authentic = decrypt(self, page);
        if !(written && authentic) {
            self.written.forget(pgno);
        }
        authentic
    }

    /// Forgets every image written once a page was read from the WAL since the last call:
    /// SQLite's content of that page is the WAL's (see `journal_copy`).
    fn follow_wal_reads(&mut self) {
        let reads = self.wal_index.wal_page_reads();
        if reads != self.wal_page_reads_seen {
            self.written.clear();
            self.wal_page_reads_seen = reads;
        }
    }

    /// Reads pages `pgno ..` ahead (see [`ReadAhead`]) and hands page `pgno` over; `None`
    /// when that can't be done here (the end of the file, an I/O error, no memory, a CPU
    /// that checks pages one at a time, or page `pgno` not authentic): the caller then reads
    /// the one page as usual, and meets the error, if any, itself.
    fn read_ahead(
        &mut self,
        os: BaseFile,
        codec: &FileCodec,
        pgno: u32,
        out: &mut [u8],
        off: i64,
    ) -> Option<c_int> {
        let size = self.page_size;
        let mut ahead = match self.ahead.take() {
            Some(ahead) => ahead,
            None => ReadAhead {
                epoch: 0,
                first: 0,
                // Without memory for it, pages are read one at a time. (Not one of the
                // allocations the fault sweep fails in turn: it fails nothing by design.)
                images: {
                    let mut images = Vec::new();
                    images.try_reserve_exact(PAGES_AT_ONCE * size).ok()?;
                    images.resize(PAGES_AT_ONCE * size, 0);
                    images
                },
                kept: [false; PAGES_AT_ONCE],
                decrypted: false,
                held_plaintext: false,
            },
        };
        ahead.kept = [false; PAGES_AT_ONCE];
        // Whatever the buffer held is overwritten by the read below (or left unkept).
        let verdicts = if os.read(&mut ahead.images, off) == ffi::SQLITE_OK {
            let decrypted = codec.decrypt_ahead(pgno, &mut ahead.images);
            ahead.decrypted = decrypted.is_some();
            ahead.held_plaintext |= ahead.decrypted;
            decrypted.or_else(|| codec.authenticate_ahead(pgno, &ahead.images))
        } else {
            None
        };
        let decrypted = ahead.decrypted;
        let result = match verdicts {
            Some(verdicts) if verdicts[0] => {
                out.copy_from_slice(&ahead.images[..size]);
                let handed_over = self.decrypt_read(pgno, out, |_, page| {
                    if decrypted {
                        codec.hand_over_decrypted(page)
                    } else {
                        codec.decrypt_authenticated(pgno, page)
                    }
                });
                if handed_over {
                    ahead.epoch = self.wal_index.epoch();
                    ahead.first = pgno;
                    ahead.kept = verdicts;
                    ahead.kept[0] = false;
                    Some(ffi::SQLITE_OK)
                } else {
                    Some(refuse(out, ffi::SQLITE_CORRUPT))
                }
            }
            _ => None,
        };
        self.ahead = Some(ahead);
        result
    }

    /// Decrypts page 1's `image` in place, from the cache when the image is the cached
    /// one. Returns whether it authenticated.
    fn decrypt_page1(&mut self, codec: &FileCodec, image: &mut [u8]) -> bool {
        if let Some(cache) = &self.page1 {
            if cache.image == image {
                image.copy_from_slice(&cache.plaintext);
                return true;
            }
        }
        // The cache is an optimisation: without memory for it, page 1 is verified each time.
        let disk = super::try_copy(image).ok();
        if !codec.decrypt(1, image) {
            self.page1 = None;
            return false;
        }
        self.page1 = disk.and_then(|image_on_disk| {
            Some(Page1Cache {
                image: image_on_disk,
                plaintext: super::try_copy(image).ok()?,
            })
        });
        true
    }
}

fn page_number(off: i64, page_size: usize) -> u32 {
    (off / page_size as i64 + 1) as u32
}

/// A page that fails authentication (or a refused read): the caller gets no bytes of it.
pub(super) fn refuse(out: &mut [u8], rc: c_int) -> c_int {
    out.fill(0);
    rc
}

impl MainDb {
    pub fn read(
        &mut self,
        os: BaseFile,
        codec: &FileCodec,
        scratch: &mut [u8],
        out: &mut [u8],
        off: i64,
    ) -> c_int {
        self.follow_wal_reads();
        let page_size = self.page_size;
        let p = page_size as i64;
        if out.len() == page_size && off % p == 0 {
            let pgno = page_number(off, page_size);
            if let Some(rc) = self.read_kept(codec, pgno, out) {
                return rc;
            }
            let sequential = pgno >= 2 && pgno == self.last_read.wrapping_add(1);
            self.last_read = pgno;
            if sequential {
                if let Some(rc) = self.read_ahead(os, codec, pgno, out, off) {
                    return rc;
                }
            }
            let rc = os.read(out, off);
            if rc == ffi::SQLITE_IOERR_SHORT_READ && !cipherlite_codec::is_all_zero(out) {
                // Part of a page (a truncated file): not a page SQLite may see as zeros.
                return refuse(out, ffi::SQLITE_CORRUPT);
            }
            if rc != ffi::SQLITE_OK {
                return rc; // wholly past the end: zero-filled by the OS VFS
            }
            let authentic = self.decrypt_read(pgno, out, |db, page| {
                if pgno == 1 {
                    db.decrypt_page1(codec, page)
                } else {
                    codec.decrypt(pgno, page)
                }
            });
            return if authentic {
                ffi::SQLITE_OK
            } else {
                refuse(out, ffi::SQLITE_CORRUPT)
            };
        }
        if out.is_empty() || off < 0 || off as usize + out.len() > DATABASE_HEADER {
            return refuse(out, ffi::SQLITE_CORRUPT);
        }
        let page = &mut scratch[..page_size];
        let rc = os.read(page, 0);
        if rc == ffi::SQLITE_IOERR_SHORT_READ {
            // No whole page 1 (a new, empty database): SQLite expects zeros.
            if !cipherlite_codec::is_all_zero(page) {
                return refuse(out, ffi::SQLITE_CORRUPT);
            }
            out.fill(0);
            return rc;
        }
        if rc != ffi::SQLITE_OK {
            return refuse(out, rc);
        }
        if !self.decrypt_page1(codec, page) {
            // Page 1 in the file doesn't authenticate: torn by a crash whose WAL or hot
            // journal holds the good copy (the key was proven against it at open), or
            // tampered. SQLite reads the header at open only to learn the page size, and the
            // change counter only to see whether its cache is stale: zeros tell it nothing
            // untrue, and the whole page 1 it reads next comes from the WAL or, after the
            // rollback, from the file — authenticated, or an error.
            out.fill(0);
            return ffi::SQLITE_OK;
        }
        let at = off as usize;
        out.copy_from_slice(&page[at..at + out.len()]);
        ffi::SQLITE_OK
    }

    /// Writes a page SQLite wrote, at once.
    #[cfg(test)]
    pub fn write(
        &mut self,
        os: BaseFile,
        codec: &FileCodec,
        scratch: &mut [u8],
        data: &[u8],
        off: i64,
    ) -> c_int {
        self.write_or_hold(os, codec, scratch, data, off, false)
    }

    /// Writes a page SQLite wrote, or with `may_hold` (a rollback journal of the database
    /// is open: see [`HeldPages`]) holds it back when encrypting pages together pays.
    pub fn write_or_hold(
        &mut self,
        os: BaseFile,
        codec: &FileCodec,
        scratch: &mut [u8],
        data: &[u8],
        off: i64,
        may_hold: bool,
    ) -> c_int {
        let page_size = self.page_size;
        if data.len() != page_size || off < 0 || off % page_size as i64 != 0 {
            // SQLite writes database pages whole; anything else would land unencrypted.
            return ffi::SQLITE_IOERR_WRITE;
        }
        let pgno = page_number(off, page_size);
        self.follow_wal_reads();
        if pgno == 1 {
            self.page1 = None;
        }
        // What was read ahead may be this page's old image.
        self.ahead = None;
        self.last_read = 0;
        // The image on disk changes: only an image written below is kept for the journal
        // (a checkpoint's copy is not: in WAL mode no rollback journal wants it).
        self.written.forget(pgno);
        // A checkpoint writing the page it just read from the WAL: that image, as it was
        // authenticated (see `checkpoint_copy`).
        if let Some(rc) = self
            .wal_index
            .checkpoint
            .write_kept(pgno, data, |image| os.write(image, off))
        {
            return rc;
        }
        // Settled before encrypting: the key can't change after (see `written_images`).
        if may_hold
            && !codec.is_unsettled()
            && cipherlite_codec::pages_at_once_pay_off(PAGES_AT_ONCE)
        {
            if let Some(rc) = self.hold(os, codec, pgno, data) {
                return rc;
            }
        }
        let rc = self.write_held(os, codec);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let rc = write_page(os, codec, scratch, pgno, data, off);
        if rc == ffi::SQLITE_OK {
            self.written.note(pgno, &scratch[..page_size]);
        }
        if pgno == 1 && rc == ffi::SQLITE_OK {
            self.page1 = page1_cache(&scratch[..page_size], data, codec.reserve());
        }
        rc
    }
}

/// The page-1 cache entry for `image`, just written with SQLite's content `plaintext`: what
/// a read of that image gives, the reserve (IV and HMAC on disk) as zeros, as
/// `FileCodec::decrypt` hands it. (None without memory for it: nothing is cached.)
fn page1_cache(image: &[u8], plaintext: &[u8], reserve: usize) -> Option<Page1Cache> {
    let mut plaintext = super::try_copy(plaintext).ok()?;
    let reserve_at = plaintext.len() - reserve;
    plaintext[reserve_at..].fill(0);
    Some(Page1Cache {
        image: super::try_copy(image).ok()?,
        plaintext,
    })
}

impl MainDb {
    /// Reads page `pgno`'s image from the file into `out` when it is the one this handle
    /// last wrote as that page and it holds `plaintext`, SQLite's content of the page: what
    /// a rollback journal record of that content can hold as it is (see `journal_copy`).
    /// `work` is a page of scratch (zeroed after). False otherwise, or on any error (the
    /// journal then encrypts the content itself).
    pub fn written_image(
        &self,
        os: BaseFile,
        codec: &FileCodec,
        pgno: u32,
        plaintext: &[u8],
        out: &mut [u8],
        work: &mut [u8],
    ) -> bool {
        // (After a page read from the WAL, nothing is known until this handle's next read or
        // write brings `written` up to date.)
        if out.len() != self.page_size
            || self.wal_index.wal_page_reads() != self.wal_page_reads_seen
            || !self.written.may_know(pgno)
        {
            return false;
        }
        let off = (i64::from(pgno) - 1) * self.page_size as i64;
        os.read(out, off) == ffi::SQLITE_OK
            && self.written.reserve_matches(pgno, out)
            && codec.image_holds(pgno, out, plaintext, work)
    }
}

/// Encrypts `plaintext` as page `pgno` into `scratch` and writes the image at `off`.
pub(super) fn write_page(
    os: BaseFile,
    codec: &FileCodec,
    scratch: &mut [u8],
    pgno: u32,
    plaintext: &[u8],
    off: i64,
) -> c_int {
    let image = &mut scratch[..plaintext.len()];
    let rc = codec.encrypt(pgno, plaintext, image);
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    os.write(image, off)
}

#[cfg(test)]
mod tests {
    use crate::format::WAL_FRAME_HEADER;
    use crate::test_support::{
        assert_reads, bytes_at, plain_page, read_main, test_codec, RawFile, TempDir,
    };
    use crate::wal_index::WalIndex;
    use crate::PAGE_SIZE as P;
    use cipherlite_sys::ffi;

    #[test]
    fn a_sequential_scan_reads_ahead_and_a_bad_page_fails_only_when_it_is_read() {
        sequential_scan_case(test_codec());
    }

    /// The same in the AEGIS format, whose pages read ahead are held decrypted.
    #[test]
    fn an_aegis_scan_reads_ahead_and_a_bad_page_fails_only_when_it_is_read() {
        let codec = cipherlite_codec::PageCodec::with_scheme(
            cipherlite_codec::CipherScheme::Aegis256,
            &[13u8; 32],
            [4u8; 16],
            P,
        )
        .expect("codec");
        let codec =
            crate::file_codec::FileCodec::new(codec, cipherlite_codec::Page1Layout::Sqlite3mc);
        assert!(codec.decrypt_ahead(2, &mut vec![0u8; 4 * P]).is_some());
        sequential_scan_case(codec);
    }

    fn sequential_scan_case(codec: crate::file_codec::FileCodec) {
        let dir = TempDir::new("readahead");
        let mut file = RawFile::create(&dir.0.join("db.bin"));
        let os = file.os();
        let index = std::sync::Arc::new(WalIndex::default());
        let mut main = crate::main_db::MainDb::new(index.clone(), P);
        let mut scratch = vec![0u8; P + WAL_FRAME_HEADER];
        for pgno in 2..=16u32 {
            let page = plain_page(pgno as u8);
            let off = (pgno as i64 - 1) * P as i64;
            assert_eq!(
                main.write(os, &codec, &mut scratch, &page, off),
                ffi::SQLITE_OK
            );
        }
        // Page 5 damaged on disk before the scan.
        let mut five = bytes_at(os, 4 * P as i64, P);
        five[100] ^= 1;
        assert_eq!(os.write(&five, 4 * P as i64), ffi::SQLITE_OK);

        let ahead_supported = codec.authenticate_ahead(2, &vec![0u8; 4 * P]).is_some()
            || codec.decrypt_ahead(2, &mut vec![0u8; 4 * P]).is_some();
        // 2 then 3: sequential, so 3..=6 are read and checked at once; 4 and 6 are kept.
        for pgno in [2u32, 3, 4] {
            assert_reads(&mut main, os, &codec, pgno, &plain_page(pgno as u8));
        }
        // The damaged page fails when it is read, and only then.
        let (rc, out) = read_main(&mut main, os, &codec, 5);
        assert_eq!(rc, ffi::SQLITE_CORRUPT);
        assert!(out.iter().all(|&b| b == 0), "nothing of a refused page");
        assert_reads(&mut main, os, &codec, 6, &plain_page(6));

        // A kept page is dropped by a new lock epoch: the change on disk is seen.
        assert_eq!(read_main(&mut main, os, &codec, 7).0, ffi::SQLITE_OK); // reads 7..=10 ahead
        let mut nine = bytes_at(os, 8 * P as i64, P);
        nine[200] ^= 1;
        assert_eq!(os.write(&nine, 8 * P as i64), ffi::SQLITE_OK);
        index.locked();
        assert_eq!(read_main(&mut main, os, &codec, 8).0, ffi::SQLITE_OK);
        assert_eq!(
            read_main(&mut main, os, &codec, 9).0,
            ffi::SQLITE_CORRUPT,
            "not the kept image"
        );

        // And by this handle's own write.
        assert_eq!(read_main(&mut main, os, &codec, 10).0, ffi::SQLITE_OK);
        assert_eq!(read_main(&mut main, os, &codec, 11).0, ffi::SQLITE_OK); // reads 11..=14 ahead (12 kept)
        let new_twelve = plain_page(99);
        assert_eq!(
            main.write(os, &codec, &mut scratch, &new_twelve, 11 * P as i64),
            ffi::SQLITE_OK
        );
        assert_reads(&mut main, os, &codec, 12, &new_twelve);
        if !ahead_supported {
            eprintln!(
                "this CPU checks pages one at a time: the read-ahead itself is not exercised"
            );
        }
    }
}
