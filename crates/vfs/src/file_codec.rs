//! [`FileCodec`]: the page codec of one database file, shared by the database file and
//! its journal and WAL (whose page images are encrypted exactly like the database's, page 1
//! in the same layout).

use super::key_source::KeySource;
use cipherlite_codec::{Page1Layout, PageCodec};
use cipherlite_sys::ffi;
use std::{
    ffi::c_int,
    sync::{
        atomic::{AtomicU8, Ordering},
        Arc, Mutex, RwLock,
    },
};

/// A database file's codec, shared by the database file and its journal and WAL (whose
/// page images are encrypted exactly like the database's, page 1 in the same layout).
pub struct FileCodec {
    codec: RwLock<PageCodec>,
    layout: AtomicU8,
    /// For a file that was empty when opened: the key, until page 1 is settled. Another
    /// connection may create the database first, with its own salt; the first page 1 read
    /// then adopts that salt (see `adopt_salt`). Dropped once page 1 is read or written.
    pending_key: Mutex<Option<Arc<KeySource>>>,
    page_size: usize,
    /// Bytes reserved per page in this file's format (SQLCipher 4's 80, AEGIS' 64).
    reserve: usize,
}

impl FileCodec {
    pub(super) fn new(codec: PageCodec, layout: Page1Layout) -> Self {
        FileCodec {
            page_size: codec.page_size(),
            reserve: codec.reserve(),
            codec: RwLock::new(codec),
            layout: AtomicU8::new(layout_to_u8(layout)),
            pending_key: Mutex::new(None),
        }
    }

    /// A codec for a new (empty) file: its salt is provisional until page 1 is settled.
    pub(super) fn new_unsettled(
        codec: PageCodec,
        layout: Page1Layout,
        key: Arc<KeySource>,
    ) -> Self {
        let file_codec = FileCodec::new(codec, layout);
        if let Ok(mut pending) = file_codec.pending_key.lock() {
            *pending = Some(key);
        }
        file_codec
    }

    /// Bytes reserved at the end of every page (fixed for the file's lifetime).
    pub(super) fn reserve(&self) -> usize {
        self.reserve
    }

    /// The database's page size (fixed for the file's lifetime).
    pub(super) fn page_size(&self) -> usize {
        self.page_size
    }

    fn layout(&self) -> Page1Layout {
        if self.layout.load(Ordering::Relaxed) == 1 {
            Page1Layout::SqlCipher
        } else {
            Page1Layout::Sqlite3mc
        }
    }

    /// While page 1 is unsettled, a page 1 image found on disk (written by another
    /// connection) brings its own salt: rebuild the codec with it.
    fn adopt_salt(&self, image: &[u8]) {
        let Ok(pending) = self.pending_key.lock() else {
            return;
        };
        let Some(key) = pending.as_ref() else { return };
        let Ok(salt) = cipherlite_codec::read_salt(image) else {
            return;
        };
        let Ok(mut codec) = self.codec.write() else {
            return;
        };
        if codec.salt() != salt {
            if let Some(adopted) = key.codec_for(salt, self.page_size) {
                *codec = adopted;
            }
            cipherlite_codec::scrub_stack();
        }
    }

    pub(super) fn is_unsettled(&self) -> bool {
        self.pending_key.lock().is_ok_and(|p| p.is_some())
    }

    fn settle(&self) {
        if let Ok(mut pending) = self.pending_key.lock() {
            pending.take();
        }
    }

    pub(super) fn encrypt(&self, pgno: u32, plaintext: &[u8], out: &mut [u8]) -> c_int {
        #[cfg(feature = "fault-injection")]
        if super::fault_injection::encryption_fails() {
            return ffi::SQLITE_IOERR_WRITE;
        }
        let Ok(codec) = self.codec.read() else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        match codec.encrypt_page(pgno, self.layout(), plaintext, out) {
            Ok(()) => {
                drop(codec);
                if pgno == 1 {
                    self.settle();
                }
                ffi::SQLITE_OK
            }
            Err(_) => ffi::SQLITE_IOERR_WRITE,
        }
    }

    /// Encrypts up to `PAGES_AT_ONCE` plaintext pages in place, together where the CPU
    /// makes that pay: see [`PageCodec::encrypt_pages_in_place`]. Like [`Self::encrypt`],
    /// page 1 among them settles the key.
    pub(super) fn encrypt_pages_in_place(&self, pages: &mut [(u32, &mut [u8])]) -> c_int {
        #[cfg(feature = "fault-injection")]
        if super::fault_injection::encryption_fails() {
            return ffi::SQLITE_IOERR_WRITE;
        }
        let Ok(codec) = self.codec.read() else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        match codec.encrypt_pages_in_place(self.layout(), pages) {
            Ok(()) => {
                drop(codec);
                if pages.iter().any(|(pgno, _)| *pgno == 1) {
                    self.settle();
                }
                ffi::SQLITE_OK
            }
            Err(_) => ffi::SQLITE_IOERR_WRITE,
        }
    }

    /// Decrypts in place; on failure the buffer keeps the ciphertext (never plaintext).
    ///
    /// The reserved bytes (IV and HMAC on disk) are handed to SQLite as zeros. SQLite never
    /// writes them and zero-fills new pages, so every page it holds has a zero reserve: the
    /// WAL checksums it computes when writing a page equal the ones computed over the same
    /// page decrypted again during recovery.
    pub(super) fn decrypt(&self, pgno: u32, page: &mut [u8]) -> bool {
        if self.is_unsettled() && cipherlite_codec::is_all_zero(page) {
            // A new file's page never written (a crash during its first transaction left
            // it zero; the hot journal truncates it away): zeros carry no data to trust.
            return true;
        }
        if pgno == 1 {
            self.adopt_salt(page);
        }
        let Ok(codec) = self.codec.read() else {
            return false;
        };
        let ok = match codec.decrypt_page_in_place(pgno, page) {
            Ok(Some(layout)) => {
                self.layout.store(layout_to_u8(layout), Ordering::Relaxed);
                true
            }
            Ok(None) => true,
            Err(_) => false,
        };
        drop(codec);
        if ok {
            if pgno == 1 {
                self.settle();
            }
            let reserve_start = page.len() - self.reserve;
            page[reserve_start..].fill(0);
        }
        ok
    }
}

impl FileCodec {
    /// Whether `image`, decrypted as page `pgno` without being authenticated, equals
    /// `plaintext` (outside the reserve); `work` is a page of scratch, zeroed after. What
    /// that proves is the caller's to know (see `PageCodec::image_holds`).
    pub(super) fn image_holds(
        &self,
        pgno: u32,
        image: &[u8],
        plaintext: &[u8],
        work: &mut [u8],
    ) -> bool {
        let Ok(codec) = self.codec.read() else {
            return false;
        };
        codec.image_holds(pgno, self.layout(), image, plaintext, work)
    }

    /// Checks four consecutive page images read ahead (pages `first ..`, not page 1) at once;
    /// `None` when that isn't possible here (an unsettled codec, or a CPU that checks one
    /// page at a time): the caller then reads page by page.
    pub(super) fn authenticate_ahead(
        &self,
        first: u32,
        images: &[u8],
    ) -> Option<[bool; cipherlite_codec::PAGES_AT_ONCE]> {
        if self.is_unsettled() {
            return None;
        }
        self.codec.read().ok()?.authenticate_pages(first, images)
    }

    /// Decrypts in place four consecutive page images read ahead (pages `first ..`, not
    /// page 1), each only if authentic (a refused one stays as read); `None`, with nothing
    /// changed, when that isn't done here (an unsettled codec, or a format whose read-ahead
    /// pages are checked with [`authenticate_ahead`](Self::authenticate_ahead)).
    pub(super) fn decrypt_ahead(
        &self,
        first: u32,
        images: &mut [u8],
    ) -> Option<[bool; cipherlite_codec::PAGES_AT_ONCE]> {
        if self.is_unsettled() {
            return None;
        }
        self.codec.read().ok()?.decrypt_pages_ahead(first, images)
    }

    /// A page [`decrypt_ahead`](Self::decrypt_ahead) decrypted, handed to SQLite: its
    /// reserve (the image's tag and nonce) reaches SQLite as zeros, as in
    /// [`decrypt`](Self::decrypt).
    pub(super) fn hand_over_decrypted(&self, page: &mut [u8]) -> bool {
        let reserve_start = page.len() - self.reserve;
        page[reserve_start..].fill(0);
        true
    }

    /// Decrypts in place, without checking its HMAC, an image known to be authentic as page
    /// `pgno` (not page 1): one [`authenticate_ahead`](Self::authenticate_ahead) accepted,
    /// unchanged since, or one this file's handles encrypted (see `written_images`). The
    /// reserve reaches SQLite as zeros, as in [`decrypt`](Self::decrypt). False leaves the
    /// image in the buffer.
    pub(super) fn decrypt_authenticated(&self, pgno: u32, page: &mut [u8]) -> bool {
        let Ok(codec) = self.codec.read() else {
            return false;
        };
        if codec.decrypt_authenticated_page(pgno, page).is_err() {
            return false;
        }
        let reserve_start = page.len() - self.reserve;
        page[reserve_start..].fill(0);
        true
    }
}

fn layout_to_u8(l: Page1Layout) -> u8 {
    match l {
        Page1Layout::SqlCipher => 1,
        Page1Layout::Sqlite3mc => 0,
    }
}
