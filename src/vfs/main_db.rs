//! The main database file: page `n` at `(n-1)·P`, each encrypted and authenticated whole.
//!
//! Geometry rules: SQLite writes whole pages at page offsets; it reads whole pages, or a
//! part of the 100-byte database header (the header at open, the change counter before
//! each read transaction), which comes from page 1 authenticated whole (or is zeros when
//! page 1 doesn't authenticate). Any other read or write is refused: it would reach SQLite
//! unauthenticated, or the disk unencrypted.

use super::{
    file_codec::FileCodec, journal_copy::KnownImages, os_file::OsFile, wal_index::WalIndex,
};
use crate::codec::PAGES_AT_ONCE;
use crate::sqlite::ffi;
use std::{ffi::c_int, sync::Arc};

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
}

/// Pages read ahead of a sequential scan: when SQLite reads page P right after P − 1, pages
/// P .. P + 4 are read in one call and authenticated at once (four HMACs in the vector unit
/// cost about one and a half); P is handed over, the others kept for the next reads.
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
}

pub(super) struct Page1Cache {
    image: Vec<u8>,
    plaintext: Vec<u8>,
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
        }
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
        self.last_read = pgno;
        let authentic =
            self.decrypt_read(pgno, out, |_, page| codec.decrypt_authenticated(pgno, page));
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
        os: OsFile,
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
            },
        };
        ahead.kept = [false; PAGES_AT_ONCE];
        let verdicts = if os.read(&mut ahead.images, off) == ffi::SQLITE_OK {
            codec.authenticate_ahead(pgno, &ahead.images)
        } else {
            None
        };
        let result = match verdicts {
            Some(verdicts) if verdicts[0] => {
                out.copy_from_slice(&ahead.images[..size]);
                if self.decrypt_read(pgno, out, |_, page| codec.decrypt_authenticated(pgno, page)) {
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
        os: OsFile,
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
            if rc == ffi::SQLITE_IOERR_SHORT_READ && !crate::codec::is_all_zero(out) {
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
            if !crate::codec::is_all_zero(page) {
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

    pub fn write(
        &mut self,
        os: OsFile,
        codec: &FileCodec,
        scratch: &mut [u8],
        data: &[u8],
        off: i64,
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
        let rc = write_page(os, codec, scratch, pgno, data, off);
        if rc == ffi::SQLITE_OK {
            self.written.note(pgno, &scratch[..page_size]);
        }
        if pgno == 1 && rc == ffi::SQLITE_OK {
            // What a read of this image would give: the reserve (IV and HMAC on disk) as
            // zeros, as FileCodec::decrypt hands it. (Not cached without memory for it.)
            self.page1 = super::try_copy(data).ok().and_then(|mut plaintext| {
                plaintext[page_size - crate::codec::RESERVE..].fill(0);
                Some(Page1Cache {
                    image: super::try_copy(&scratch[..page_size]).ok()?,
                    plaintext,
                })
            });
        }
        rc
    }
}

impl MainDb {
    /// Reads page `pgno`'s image from the file into `out` when it is the one this handle
    /// last wrote as that page and it holds `plaintext`, SQLite's content of the page: what
    /// a rollback journal record of that content can hold as it is (see `journal_copy`).
    /// `work` is a page of scratch (zeroed after). False otherwise, or on any error (the
    /// journal then encrypts the content itself).
    pub fn written_image(
        &self,
        os: OsFile,
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
    os: OsFile,
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
