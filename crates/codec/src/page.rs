//! [`PageCodec`]: encrypts and decrypts whole page images for one database (one key, one
//! salt, one page size).
//!
//! The VFS calls it for every page-aligned read and write of the main database, of
//! rollback-journal records and of WAL frames: a page image is encrypted the same way
//! wherever it is stored, keyed by its page number. Offsets, for page size `P`
//! (docs/sqlcipher4-format.md §3, §4):
//!
//! ```text
//! page n > 1:          [0 .. P-80) ciphertext           | IV [P-80..P-64) | HMAC [P-64..P)
//! page 1, SqlCipher:   salt [0..16) | [16 .. P-80) CBC  | IV              | HMAC
//! page 1, Sqlite3mc:   salt [0..16) | header [16..24) in clear | [24 .. P-80) CBC-CTS | IV | HMAC
//! HMAC input:          [off .. P-64) (ciphertext then IV) || page number as LE32
//! ```
//!
//! What the HMAC does *not* cover on page 1: the salt (it is checked against the codec's
//! salt instead, and it feeds the HMAC key, so a file with a changed salt fails every page
//! once reopened) and, in the `Sqlite3mc` layout, header bytes 16..24. Of those, the page
//! size (16..18) and the reserve (20) are checked against the codec's configuration; the
//! format versions (18, 19) and payload fractions (21..24) are validated by SQLite itself,
//! as with SQLite3 Multiple Ciphers.

use core::fmt;
use core::sync::atomic::{AtomicU8, Ordering};

use subtle::ConstantTimeEq;

use crate::aegis256::AEGIS256_NONCE_SIZE;
use crate::aegis_page::AegisPageCipher;
use crate::backend::{pages_at_once_pay_off, PageCipher};
use crate::cbc::{cbc_decrypt_in_place, cts_decrypt_in_place};
use crate::error::CodecError;
use crate::scheme::CipherScheme;
use crate::{
    HMAC_SIZE, IV_SIZE, KEY_SIZE, MAX_PAGE_SIZE, MIN_PAGE_SIZE, RESERVE, SALT_SIZE,
    SQLITE_HEADER_MAGIC,
};

/// How page 1 is laid out on disk (§4). Pages other than 1 are the same in both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Page1Layout {
    /// SQLCipher 4, and SQLite3 Multiple Ciphers with `legacy = 4`: salt in bytes 0..16,
    /// everything from byte 16 encrypted (§4a). Opens with SQLCipher's tools.
    SqlCipher,
    /// SQLite3 Multiple Ciphers' default (`legacy = 0`): salt in bytes 0..16, SQLite header
    /// bytes 16..24 in clear, encrypted from byte 24 with ciphertext stealing (§4b).
    /// Evolu's choice for new databases; only SQLite3MC with `legacy = 0` opens it.
    Sqlite3mc,
}

impl Page1Layout {
    /// Where the encrypted (and authenticated) part of page 1 starts.
    pub const fn page1_offset(self) -> usize {
        match self {
            Page1Layout::SqlCipher => SALT_SIZE,
            Page1Layout::Sqlite3mc => SALT_SIZE + CLEAR_HEADER_LEN,
        }
    }

    fn to_hint(self) -> u8 {
        match self {
            Page1Layout::SqlCipher => 0,
            Page1Layout::Sqlite3mc => 1,
        }
    }

    fn from_hint(hint: u8) -> Self {
        if hint == 1 {
            Page1Layout::Sqlite3mc
        } else {
            Page1Layout::SqlCipher
        }
    }

    fn other(self) -> Self {
        match self {
            Page1Layout::SqlCipher => Page1Layout::Sqlite3mc,
            Page1Layout::Sqlite3mc => Page1Layout::SqlCipher,
        }
    }
}

/// Pages [`PageCodec::authenticate_pages`] checks at once.
pub const PAGES_AT_ONCE: usize = 4;

/// Bytes 16..24 of the SQLite header, kept in clear by the `Sqlite3mc` layout.
const CLEAR_HEADER_LEN: usize = 8;
/// Offset of the big-endian page size in the SQLite header (1 means 65536).
const HEADER_PAGE_SIZE_OFFSET: usize = 16;
/// Offset of the "reserved bytes per page" byte in the SQLite header.
const HEADER_RESERVE_OFFSET: usize = 20;

/// The page codec of one encrypted database: key material, salt and page size.
///
/// Cheap to share between threads (`Send + Sync`, all methods take `&self`). Key material
/// is boxed (see `backend`); `Debug` prints only the page size and the salt,
/// which are stored in clear in the file anyway.
pub struct PageCodec {
    keys: Keys,
    salt: [u8; SALT_SIZE],
    page_size: usize,
    /// The page-1 layout that matched last; tried first next time, so that a page-1 read
    /// costs one HMAC, not two, in the `Sqlite3mc` layout. Only an optimisation: both
    /// layouts are always tried before a page is rejected.
    page1_hint: AtomicU8,
}

/// The key material of one page format.
enum Keys {
    SqlCipher(Box<PageCipher>),
    /// SQLite3MC's `aegis` scheme (`aegis_page`): one page 1 layout (offset 24, like
    /// [`Page1Layout::Sqlite3mc`]), no multi-page pass.
    Aegis(Box<AegisPageCipher>),
}

impl PageCodec {
    /// A codec for `page_size`-byte pages (a power of two, 512..=65536), keyed with the raw
    /// 32-byte `key` (the AES-256 key) and the database's `salt` (bytes 0..16 of the file,
    /// see [`read_salt`](super::read_salt); [`random_salt`](super::random_salt) for a new
    /// database). Derives the HMAC key (PBKDF2 of 2 iterations, unlike a passphrase's).
    pub fn new(
        key: &[u8; KEY_SIZE],
        salt: [u8; SALT_SIZE],
        page_size: usize,
    ) -> Result<Self, CodecError> {
        if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page_size) || !page_size.is_power_of_two() {
            return Err(CodecError::BadPageSize(page_size));
        }
        Self::with_scheme(CipherScheme::SqlCipher4, key, salt, page_size)
    }

    /// [`new`](Self::new) for either page format: `scheme` decides the cipher, the
    /// reserve and page 1's layout (an AEGIS file has one: offset 24, header bytes 16..24
    /// in clear, reported as [`Page1Layout::Sqlite3mc`]; the `layout` arguments of the
    /// encrypting methods are ignored). For AEGIS the raw key is the AEGIS key: all 32
    /// bytes for the AEGIS-256 algorithms, the first 16 for the AEGIS-128 ones.
    pub fn with_scheme(
        scheme: CipherScheme,
        key: &[u8; KEY_SIZE],
        salt: [u8; SALT_SIZE],
        page_size: usize,
    ) -> Result<Self, CodecError> {
        if !(MIN_PAGE_SIZE..=MAX_PAGE_SIZE).contains(&page_size) || !page_size.is_power_of_two() {
            return Err(CodecError::BadPageSize(page_size));
        }
        let keys = match scheme {
            CipherScheme::SqlCipher4 => Keys::SqlCipher(PageCipher::new(key, &salt)),
            aegis => match aegis.aegis_algorithm() {
                Some(algorithm) => Keys::Aegis(AegisPageCipher::new(algorithm, key)),
                None => return Err(CodecError::WrongScheme),
            },
        };
        Ok(PageCodec {
            keys,
            salt,
            page_size,
            page1_hint: AtomicU8::new(Page1Layout::SqlCipher.to_hint()),
        })
    }

    /// The page size this codec was built for.
    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// The salt written to bytes 0..16 of page 1.
    pub fn salt(&self) -> [u8; SALT_SIZE] {
        self.salt
    }

    /// Bytes of each page SQLite may use: the page size minus the reserve.
    pub fn usable_size(&self) -> usize {
        self.page_size - self.reserve()
    }

    /// The page format this codec reads and writes.
    pub fn scheme(&self) -> CipherScheme {
        match &self.keys {
            Keys::SqlCipher(_) => CipherScheme::SqlCipher4,
            Keys::Aegis(aegis) => CipherScheme::aegis(aegis.algorithm()),
        }
    }

    /// Bytes reserved at the end of every page: [`RESERVE`] for SQLCipher 4, 64 for AEGIS
    /// (48 for its AEGIS-128 algorithms).
    pub fn reserve(&self) -> usize {
        self.scheme().reserve()
    }

    /// The SQLCipher keys, or `WrongScheme` for an AEGIS codec (whose public methods
    /// branch off before reaching a SQLCipher-only path).
    fn sqlcipher_keys(&self) -> Result<&PageCipher, CodecError> {
        match &self.keys {
            Keys::SqlCipher(keys) => Ok(keys),
            Keys::Aegis(_) => Err(CodecError::WrongScheme),
        }
    }

    /// AEGIS: encrypts the plaintext `page` in place with a fresh random nonce and writes
    /// the salt into page 1.
    fn aegis_encrypt(
        &self,
        aegis: &AegisPageCipher,
        pgno: u32,
        page: &mut [u8],
    ) -> Result<(), CodecError> {
        let mut nonce = [0u8; AEGIS256_NONCE_SIZE];
        getrandom::fill(&mut nonce)?;
        aegis.encrypt_in_place(pgno, page, &nonce);
        if pgno == 1 {
            page[..SALT_SIZE].copy_from_slice(&self.salt);
        }
        Ok(())
    }

    /// Encrypts the plaintext page `pgno` into `out`, the full file image (both buffers are
    /// exactly one page). Draws a fresh random IV. For page 1, `layout` decides the layout
    /// and the plaintext must be a SQLite header for this page size with 80 reserved bytes
    /// (else [`CodecError::HeaderMismatch`]); the plaintext's bytes 0..16 are replaced by
    /// the salt. For other pages `layout` is ignored. The plaintext's last [`RESERVE`]
    /// bytes are ignored (they become IV and HMAC).
    ///
    /// On error `out` is left untouched.
    pub fn encrypt_page(
        &self,
        pgno: u32,
        layout: Page1Layout,
        plaintext: &[u8],
        out: &mut [u8],
    ) -> Result<(), CodecError> {
        self.check_page(pgno, plaintext)?;
        self.check_page(pgno, out)?;
        if pgno == 1 {
            self.check_header(plaintext)?;
        }
        if let Keys::Aegis(aegis) = &self.keys {
            // The nonce draw is the one step that can fail: before `out` is written.
            let mut nonce = [0u8; AEGIS256_NONCE_SIZE];
            getrandom::fill(&mut nonce)?;
            out.copy_from_slice(plaintext);
            aegis.encrypt_in_place(pgno, out, &nonce);
            if pgno == 1 {
                out[..SALT_SIZE].copy_from_slice(&self.salt);
            }
            return Ok(());
        }
        let iv = random_iv()?;
        out.copy_from_slice(plaintext);
        self.encrypt_with_iv(pgno, layout, out, &iv)
    }

    /// [`encrypt_page`](Self::encrypt_page) in place: `page` holds the plaintext on entry
    /// and the file image on success. On error it is left untouched.
    pub fn encrypt_page_in_place(
        &self,
        pgno: u32,
        layout: Page1Layout,
        page: &mut [u8],
    ) -> Result<(), CodecError> {
        self.check_page(pgno, page)?;
        if pgno == 1 {
            self.check_header(page)?;
        }
        if let Keys::Aegis(aegis) = &self.keys {
            return self.aegis_encrypt(aegis, pgno, page);
        }
        let iv = random_iv()?;
        self.encrypt_with_iv(pgno, layout, page, &iv)
    }

    /// Authenticates the file image of page `pgno` and decrypts it into `out` (both buffers
    /// exactly one page). Returns the detected layout for page 1, `None` for other pages.
    ///
    /// The HMAC is checked (in constant time) before anything is decrypted; on any error
    /// `out` is left untouched. On success `out[..usable_size]` is the plaintext, with
    /// `SQLite format 3\0` in bytes 0..16 of page 1; the last [`RESERVE`] bytes are the
    /// image's IV and HMAC, which SQLite ignores.
    pub fn decrypt_page(
        &self,
        pgno: u32,
        image: &[u8],
        out: &mut [u8],
    ) -> Result<Option<Page1Layout>, CodecError> {
        self.check_page(pgno, out)?;
        let layout = self.authenticate_page(pgno, image)?;
        out.copy_from_slice(image);
        if let Keys::Aegis(aegis) = &self.keys {
            // Authenticated above: decrypting again checks nothing new.
            aegis.decrypt_unchecked(pgno, out);
            if pgno == 1 {
                out[..SALT_SIZE].copy_from_slice(&SQLITE_HEADER_MAGIC);
            }
            return Ok(layout);
        }
        self.decrypt_authenticated(pgno, layout, out)?;
        Ok(layout)
    }

    /// [`decrypt_page`](Self::decrypt_page) in place, for decrypting straight into
    /// SQLite's read buffer: `page` holds the file image on entry and the plaintext on
    /// success. On error it is left untouched (still the image as read from the file).
    pub fn decrypt_page_in_place(
        &self,
        pgno: u32,
        page: &mut [u8],
    ) -> Result<Option<Page1Layout>, CodecError> {
        if let Keys::Aegis(aegis) = &self.keys {
            self.check_page(pgno, page)?;
            if pgno == 1 {
                self.check_aegis_page1_clear_bytes(page)?;
            }
            // The tag is checked before this returns; on a mismatch the image is restored.
            aegis.decrypt_in_place(pgno, page)?;
            if pgno == 1 {
                page[..SALT_SIZE].copy_from_slice(&SQLITE_HEADER_MAGIC);
                return Ok(Some(Page1Layout::Sqlite3mc));
            }
            return Ok(None);
        }
        let layout = self.authenticate_page(pgno, page)?;
        self.decrypt_authenticated(pgno, layout, page)?;
        Ok(layout)
    }

    /// Which layout an encrypted page-1 image has, by which HMAC matches (§4c), after
    /// checking it completely (HMAC, salt, and for `Sqlite3mc` the header bytes in clear):
    /// `Ok` means [`decrypt_page`](Self::decrypt_page) would succeed on it. Decrypts
    /// nothing. A wrong key, or a wrong page size, gives [`CodecError::HmacMismatch`].
    pub fn detect_page1_layout(&self, image: &[u8]) -> Result<Page1Layout, CodecError> {
        self.check_page(1, image)?;
        if let Keys::Aegis(aegis) = &self.keys {
            if !aegis.authenticates(1, image) {
                return Err(CodecError::HmacMismatch { pgno: 1 });
            }
            self.check_aegis_page1_clear_bytes(image)?;
            return Ok(Page1Layout::Sqlite3mc);
        }
        let first = Page1Layout::from_hint(self.page1_hint.load(Ordering::Relaxed));
        let layout = if self.hmac_matches(1, first.page1_offset(), image) {
            first
        } else if self.hmac_matches(1, first.other().page1_offset(), image) {
            first.other()
        } else {
            return Err(CodecError::HmacMismatch { pgno: 1 });
        };
        self.page1_hint.store(layout.to_hint(), Ordering::Relaxed);

        if image[..SALT_SIZE] != self.salt {
            return Err(CodecError::SaltMismatch);
        }
        if layout == Page1Layout::Sqlite3mc {
            self.check_header(image)?;
        }
        Ok(layout)
    }

    /// Authenticates the file image of page `pgno` without decrypting it: the HMAC (in
    /// constant time) and, for page 1, the salt and the header bytes in clear. `Ok` means
    /// [`decrypt_page`](Self::decrypt_page) would succeed; returns the detected layout for
    /// page 1, `None` for other pages. For checking a file (verify) with no plaintext in
    /// memory at all.
    pub fn authenticate_page(
        &self,
        pgno: u32,
        image: &[u8],
    ) -> Result<Option<Page1Layout>, CodecError> {
        self.check_page(pgno, image)?;
        if pgno == 1 {
            return self.detect_page1_layout(image).map(Some);
        }
        let matches = match &self.keys {
            Keys::Aegis(aegis) => aegis.authenticates(pgno, image),
            Keys::SqlCipher(_) => self.hmac_matches(pgno, 0, image),
        };
        if matches {
            Ok(None)
        } else {
            Err(CodecError::HmacMismatch { pgno })
        }
    }

    /// Authenticates the images of pages `first .. first + 4` (`images`: four whole pages,
    /// none of them page 1) in one pass: four HMACs in the vector unit cost little more than
    /// one. Returns which of the four authenticated, or `None` where the CPU can't check
    /// them at once (then check page by page). For reading ahead of a sequential scan; an
    /// accepted image is decrypted with
    /// [`decrypt_authenticated_page`](Self::decrypt_authenticated_page).
    pub fn authenticate_pages(&self, first: u32, images: &[u8]) -> Option<[bool; PAGES_AT_ONCE]> {
        let size = self.page_size;
        let Keys::SqlCipher(keys) = &self.keys else {
            return None;
        };
        if first < 2
            || first.checked_add(PAGES_AT_ONCE as u32).is_none()
            || images.len() != PAGES_AT_ONCE * size
        {
            return None;
        }
        let page = |i: usize| &images[i * size..(i + 1) * size];
        let authenticated = |i: usize| &page(i)[..size - HMAC_SIZE];
        let tags = keys.page_mac4(
            [
                authenticated(0),
                authenticated(1),
                authenticated(2),
                authenticated(3),
            ],
            core::array::from_fn(|i| first + i as u32),
        )?;
        Some(core::array::from_fn(|i| {
            bool::from(tags[i].ct_eq(&page(i)[size - HMAC_SIZE..]))
        }))
    }

    /// Decrypts in place the images of pages `first .. first + 4` read ahead (`images`:
    /// four whole pages, none of them page 1), each only if its own tag matches: a refused
    /// image is left as read, byte for byte. Returns which were decrypted (their reserve
    /// still the image's), or `None`, with nothing changed, for a codec that checks
    /// read-ahead pages with [`authenticate_pages`](Self::authenticate_pages) instead
    /// (SQLCipher's, whose four HMACs share the vector unit; AEGIS would pay two passes per
    /// page that way). One page at a time: two pages' AEGIS-256 states interleaved need
    /// more vector registers than x86-64 has, and the spills cost more than the overlap
    /// gains (`cargo bench --bench codec -- read-ahead`).
    pub fn decrypt_pages_ahead(
        &self,
        first: u32,
        images: &mut [u8],
    ) -> Option<[bool; PAGES_AT_ONCE]> {
        let size = self.page_size;
        let Keys::Aegis(aegis) = &self.keys else {
            return None;
        };
        if first < 2
            || first.checked_add(PAGES_AT_ONCE as u32).is_none()
            || images.len() != PAGES_AT_ONCE * size
        {
            return None;
        }
        let mut decrypted = [false; PAGES_AT_ONCE];
        for (i, (page, decrypted)) in images
            .chunks_exact_mut(size)
            .zip(&mut decrypted)
            .enumerate()
        {
            *decrypted = aegis.decrypt_in_place(first + i as u32, page).is_ok();
        }
        Some(decrypted)
    }

    /// Encrypts the plaintext pages `pages` (page number, page; at most
    /// [`PAGES_AT_ONCE`]) in place, each as
    /// [`encrypt_page_in_place`](Self::encrypt_page_in_place) would with `layout`: a fresh
    /// IV each, and for those IVs the same bytes. Where the CPU makes it pay
    /// ([`pages_at_once_pay_off`]), the pages other than page
    /// 1 go through the cipher together: their CBC chains interleaved, their HMACs in the
    /// four lanes of the vector unit. Page 1, whose encrypted region is shorter (its salt or
    /// clear header comes first), goes alone. Pages that fail the checks (more than
    /// [`PAGES_AT_ONCE`], a wrong size, page 1 without this codec's header fields) are
    /// refused with every page untouched.
    pub fn encrypt_pages_in_place(
        &self,
        layout: Page1Layout,
        pages: &mut [(u32, &mut [u8])],
    ) -> Result<(), CodecError> {
        if pages.len() > PAGES_AT_ONCE {
            return Err(CodecError::BadLength {
                expected: PAGES_AT_ONCE,
                actual: pages.len(),
            });
        }
        for (pgno, page) in pages.iter() {
            self.check_page(*pgno, page)?;
            if *pgno == 1 {
                self.check_header(page)?;
            }
        }
        if let Keys::Aegis(aegis) = &self.keys {
            // One draw for every page's nonce; pages two at a time, their AES rounds
            // interleaved (the AES-NI pass; the same bytes as one by one).
            let mut nonces = [[0u8; AEGIS256_NONCE_SIZE]; PAGES_AT_ONCE];
            getrandom::fill(nonces.as_flattened_mut())?;
            for (pair, nonces) in pages.chunks_mut(2).zip(nonces.chunks(2)) {
                match (pair, nonces) {
                    ([(pgno_a, a), (pgno_b, b)], [nonce_a, nonce_b]) => {
                        aegis.encrypt_two_in_place([(*pgno_a, a, nonce_a), (*pgno_b, b, nonce_b)]);
                    }
                    (pages, nonces) => {
                        for ((pgno, page), nonce) in pages.iter_mut().zip(nonces) {
                            aegis.encrypt_in_place(*pgno, page, nonce);
                        }
                    }
                }
            }
            for (pgno, page) in pages.iter_mut() {
                if *pgno == 1 {
                    page[..SALT_SIZE].copy_from_slice(&self.salt);
                }
            }
            return Ok(());
        }
        let keys = self.sqlcipher_keys()?;
        let mut ivs = [[0u8; IV_SIZE]; PAGES_AT_ONCE];
        random_ivs(&mut ivs[..pages.len()])?;
        let iv_start = self.page_size - RESERVE;
        let hmac_start = self.page_size - HMAC_SIZE;
        let together = pages.iter().filter(|(pgno, _)| *pgno != 1).count();
        let mut done = [false; PAGES_AT_ONCE];
        if pages_at_once_pay_off(together) {
            let mut pgnos = [0u32; PAGES_AT_ONCE];
            let mut messages: [&mut [u8]; PAGES_AT_ONCE] = [&mut [], &mut [], &mut [], &mut []];
            let mut lanes = messages.iter_mut().zip(&mut pgnos);
            for ((pgno, page), iv) in pages.iter_mut().zip(&ivs) {
                if *pgno == 1 {
                    continue;
                }
                let Some((message, lane_pgno)) = lanes.next() else {
                    break;
                };
                page[iv_start..hmac_start].copy_from_slice(iv);
                *message = &mut page[..hmac_start];
                *lane_pgno = *pgno;
            }
            let tags = keys.encrypt_and_mac_lanes(&mut messages[..together], &pgnos[..together]);
            if let Some(tags) = tags {
                let lanes = pages.iter_mut().zip(&mut done);
                for (((_, page), done), tag) in lanes.filter(|((pgno, _), _)| *pgno != 1).zip(&tags)
                {
                    page[hmac_start..].copy_from_slice(tag);
                    *done = true;
                }
            }
        }
        // One at a time: page 1, and every page if the lanes declined (their regions are
        // still plaintext then).
        for (((pgno, page), iv), done) in pages.iter_mut().zip(&ivs).zip(done) {
            if !done {
                self.encrypt_with_iv(*pgno, layout, page, iv)?;
            }
        }
        Ok(())
    }

    /// Decrypts in place the image of page `pgno` (not page 1) that
    /// [`authenticate_pages`](Self::authenticate_pages) accepted and that has not changed
    /// since: it is not checked again. Like [`decrypt_page_in_place`](Self::decrypt_page_in_place)
    /// otherwise.
    pub fn decrypt_authenticated_page(&self, pgno: u32, page: &mut [u8]) -> Result<(), CodecError> {
        self.check_page(pgno, page)?;
        if pgno == 1 {
            return Err(CodecError::BadPageNumber);
        }
        if let Keys::Aegis(aegis) = &self.keys {
            aegis.decrypt_unchecked(pgno, page);
            return Ok(());
        }
        self.decrypt_authenticated(pgno, None, page)
    }

    /// Whether `image`, decrypted as page `pgno` (with `layout` if it is page 1) into
    /// `work` without being authenticated, equals `plaintext` outside the reserve (page 1:
    /// from byte 16, past the salt, which must be this codec's). Compares in constant time;
    /// `work` (one page) is zeroed again after. False on any length error. What this
    /// proves depends on what the caller knows of the image: the rollback journal's copy
    /// (`vfs::journal_copy`) knows its reserve is one this codec wrote and that SQLite's
    /// content of the page is the content written.
    pub fn image_holds(
        &self,
        pgno: u32,
        layout: Page1Layout,
        image: &[u8],
        plaintext: &[u8],
        work: &mut [u8],
    ) -> bool {
        if [image, plaintext, &work[..]]
            .iter()
            .any(|b| self.check_page(pgno, b).is_err())
        {
            return false;
        }
        work.copy_from_slice(image);
        let decrypted = match &self.keys {
            Keys::Aegis(aegis) => {
                aegis.decrypt_unchecked(pgno, work);
                true
            }
            Keys::SqlCipher(_) => self
                .decrypt_authenticated(pgno, (pgno == 1).then_some(layout), work)
                .is_ok(),
        };
        let from = if pgno == 1 { SALT_SIZE } else { 0 };
        let end = self.page_size - self.reserve();
        // Page 1's salt is outside its HMAC: the image must carry this codec's.
        let salt_ok = pgno != 1 || image[..SALT_SIZE] == self.salt;
        let same =
            decrypted && salt_ok && equal_in_constant_time(&work[from..end], &plaintext[from..end]);
        // A memset the optimiser must keep (`zeroize`'s byte-wise volatile stores cost more
        // than the decryption here).
        work.fill(0);
        core::hint::black_box(&work);
        same
    }

    /// Decrypts an image [`authenticate_page`](Self::authenticate_page) accepted, in place.
    fn decrypt_authenticated(
        &self,
        pgno: u32,
        layout: Option<Page1Layout>,
        page: &mut [u8],
    ) -> Result<(), CodecError> {
        let iv_start = self.page_size - RESERVE;
        let mut iv = [0u8; IV_SIZE];
        iv.copy_from_slice(&page[iv_start..iv_start + IV_SIZE]);
        let cipher = &self.sqlcipher_keys()?.cipher;
        match layout {
            None => cbc_decrypt_in_place(cipher, &iv, &mut page[..iv_start])?,
            Some(layout @ Page1Layout::SqlCipher) => {
                cbc_decrypt_in_place(cipher, &iv, &mut page[layout.page1_offset()..iv_start])?;
            }
            Some(layout @ Page1Layout::Sqlite3mc) => {
                cts_decrypt_in_place(cipher, &iv, &mut page[layout.page1_offset()..iv_start])?;
            }
        }
        if pgno == 1 {
            page[..SALT_SIZE].copy_from_slice(&SQLITE_HEADER_MAGIC);
        }
        Ok(())
    }

    /// Encrypts `page` (plaintext, already length-checked) in place with the given IV,
    /// writes salt, IV and HMAC.
    fn encrypt_with_iv(
        &self,
        pgno: u32,
        layout: Page1Layout,
        page: &mut [u8],
        iv: &[u8; IV_SIZE],
    ) -> Result<(), CodecError> {
        let iv_start = self.page_size - RESERVE;
        let offset = if pgno == 1 { layout.page1_offset() } else { 0 };
        let region = &mut page[offset..iv_start];
        let tag = if pgno == 1 && layout == Page1Layout::Sqlite3mc {
            // Bytes 16..24 stay as they are: the header in clear.
            self.sqlcipher_keys()?
                .encrypt_cts_and_mac(iv, region, pgno)?
        } else {
            self.sqlcipher_keys()?.encrypt_and_mac(iv, region, pgno)?
        };
        page[iv_start..iv_start + IV_SIZE].copy_from_slice(iv);
        if pgno == 1 {
            page[..SALT_SIZE].copy_from_slice(&self.salt);
        }
        page[self.page_size - HMAC_SIZE..].copy_from_slice(&tag);
        Ok(())
    }

    /// HMAC-SHA512 over `authenticated` (ciphertext then IV) and the page number as LE32.
    fn page_hmac(&self, pgno: u32, authenticated: &[u8]) -> Option<[u8; HMAC_SIZE]> {
        Some(self.sqlcipher_keys().ok()?.page_mac(&[authenticated], pgno))
    }

    /// Whether the HMAC stored in `image` matches, with the authenticated region starting
    /// at `offset`. Compares in constant time.
    fn hmac_matches(&self, pgno: u32, offset: usize, image: &[u8]) -> bool {
        let hmac_start = self.page_size - HMAC_SIZE;
        self.page_hmac(pgno, &image[offset..hmac_start])
            .is_some_and(|tag| tag.ct_eq(&image[hmac_start..]).into())
    }

    fn check_page(&self, pgno: u32, buffer: &[u8]) -> Result<(), CodecError> {
        if pgno == 0 {
            return Err(CodecError::BadPageNumber);
        }
        if buffer.len() != self.page_size {
            return Err(CodecError::BadLength {
                expected: self.page_size,
                actual: buffer.len(),
            });
        }
        Ok(())
    }

    /// AEGIS page 1's bytes outside the tag (SQLite3MC's layout): the salt must be this
    /// codec's, and the header bytes 16..24 in clear must give its page size and reserve.
    fn check_aegis_page1_clear_bytes(&self, image: &[u8]) -> Result<(), CodecError> {
        if image[..SALT_SIZE] != self.salt {
            return Err(CodecError::SaltMismatch);
        }
        self.check_header(image)
    }

    /// Checks that page-1 bytes 16..18 and 20 of the SQLite header (plaintext, or the
    /// clear bytes of a `Sqlite3mc` image) give this codec's page size and 80 reserved
    /// bytes. Neither value is secret (SQLite3MC stores both in clear).
    fn check_header(&self, page: &[u8]) -> Result<(), CodecError> {
        let stored = u16::from_be_bytes([
            page[HEADER_PAGE_SIZE_OFFSET],
            page[HEADER_PAGE_SIZE_OFFSET + 1],
        ]);
        let page_size = if stored == 1 {
            MAX_PAGE_SIZE
        } else {
            usize::from(stored)
        };
        let reserve = page[HEADER_RESERVE_OFFSET];
        if page_size == self.page_size && usize::from(reserve) == self.reserve() {
            Ok(())
        } else {
            Err(CodecError::HeaderMismatch {
                page_size,
                reserve,
                expected_page_size: self.page_size,
            })
        }
    }
}

impl fmt::Debug for PageCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PageCodec")
            .field("page_size", &self.page_size)
            .field("salt", &HexBytes(&self.salt))
            .field("keys", &"<redacted>")
            .finish()
    }
}

struct HexBytes<'a>(&'a [u8]);

impl fmt::Debug for HexBytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

fn random_iv() -> Result<[u8; IV_SIZE], CodecError> {
    let mut iv = [[0u8; IV_SIZE]];
    random_ivs(&mut iv)?;
    Ok(iv[0])
}

/// Fresh IVs from the OS's generator, all in one call (a call costs more than its bytes:
/// pages encrypted together draw theirs at once).
fn random_ivs(ivs: &mut [[u8; IV_SIZE]]) -> Result<(), CodecError> {
    getrandom::fill(ivs.as_flattened_mut())?;
    Ok(())
}

/// Whether `a` and `b` (of one length) are equal, in time that depends only on their
/// length: the differences of 8-byte words OR-ed together, then one constant-time test
/// (`subtle`'s slice comparison goes byte by byte, slow over a whole page).
fn equal_in_constant_time(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut diff = 0u64;
    let (a_words, a_rest) = a.as_chunks::<8>();
    let (b_words, b_rest) = b.as_chunks::<8>();
    for (x, y) in a_words.iter().zip(b_words) {
        diff |= u64::from_ne_bytes(*x) ^ u64::from_ne_bytes(*y);
    }
    for (x, y) in a_rest.iter().zip(b_rest) {
        diff |= u64::from(x ^ y);
    }
    core::hint::black_box(diff).ct_eq(&0).into()
}

/// Whether a file image is all zeros: a page that was never written (a file extended by a
/// later page, or a crash before the write), which no key authenticates. File contents are
/// not secret, so this may stop at the first non-zero byte.
pub fn is_all_zero(image: &[u8]) -> bool {
    image.iter().all(|&byte| byte == 0)
}

#[cfg(test)]
mod tests {
    use super::super::derive_hmac_key;
    use super::super::read_salt;
    use super::super::test_support::{page_of, sample_file, sample_key};
    use super::super::DEFAULT_PAGE_SIZE;
    use super::*;
    use hmac::{Hmac, KeyInit, Mac};
    use proptest::prelude::*;
    use sha2::Sha512;

    const P: usize = DEFAULT_PAGE_SIZE;

    /// The three BASE sample files and the page-1 layout each was written with.
    const SAMPLES: [(&str, Page1Layout); 3] = [
        ("sqlcipher-4.9.0-cli.sqlite", Page1Layout::SqlCipher),
        ("sqlite3mc-2.6.1-legacy4.sqlite", Page1Layout::SqlCipher),
        ("sqlite3mc-2.6.1-legacy0.sqlite", Page1Layout::Sqlite3mc),
    ];

    fn sample_codec(file: &[u8]) -> PageCodec {
        let salt = read_salt(file).expect("sample has a salt");
        PageCodec::new(&sample_key(), salt, P).expect("4096 is a valid page size")
    }

    fn contains(haystack: &[u8], needle: &[u8]) -> bool {
        haystack
            .windows(needle.len())
            .any(|window| window == needle)
    }

    /// Writes a valid SQLite header for `page_size` with 80 reserved bytes into bytes
    /// 16..24 of a plaintext page 1.
    fn set_header(page: &mut [u8], page_size: usize) {
        let stored = if page_size == MAX_PAGE_SIZE {
            1
        } else {
            page_size as u16
        };
        page[16..18].copy_from_slice(&stored.to_be_bytes());
        page[18..24].copy_from_slice(&[1, 1, RESERVE as u8, 64, 32, 32]);
    }

    #[test]
    fn sample_page1_hmacs_verify_over_the_documented_region() {
        // Independent of PageCodec: HMAC-SHA512(derived key, image[off..4032) || 01 00 00 00).
        let key = sample_key();
        for (name, layout) in SAMPLES {
            let file = sample_file(name);
            let salt = read_salt(&file).expect("salt");
            let hmac_key = derive_hmac_key(&key, &salt);
            let mut mac = <Hmac<Sha512> as KeyInit>::new_from_slice(&hmac_key[..]).expect("key");
            mac.update(&file[layout.page1_offset()..P - HMAC_SIZE]);
            mac.update(&1u32.to_le_bytes());
            let tag = mac.finalize().into_bytes();
            assert_eq!(tag[..], file[P - HMAC_SIZE..P], "{name}");
        }
    }

    #[test]
    fn sample_pages_decrypt_and_the_layout_is_detected() {
        for (name, layout) in SAMPLES {
            let file = sample_file(name);
            assert_eq!(file.len(), 2 * P, "{name} has 2 pages");
            let codec = sample_codec(&file);
            let image1 = page_of(&file, 1, P);
            assert_eq!(codec.detect_page1_layout(&image1), Ok(layout), "{name}");

            let mut page1 = vec![0u8; P];
            assert_eq!(codec.decrypt_page(1, &image1, &mut page1), Ok(Some(layout)));
            assert_eq!(page1[..16], SQLITE_HEADER_MAGIC, "{name}");
            assert_eq!(page1[16..18], [0x10, 0x00], "{name}: page size 4096");
            assert_eq!(page1[20], 80, "{name}: reserve");
            assert_eq!(page1[21..24], [64, 32, 32], "{name}: payload fractions");
            assert!(
                contains(&page1, b"CREATE TABLE t(a INTEGER, b TEXT)"),
                "{name}"
            );

            let image2 = page_of(&file, 2, P);
            let mut page2 = vec![0u8; P];
            assert_eq!(codec.decrypt_page(2, &image2, &mut page2), Ok(None));
            assert_eq!(page2[0], 0x0d, "{name}: table leaf b-tree page");
            assert!(contains(&page2, b"row-1"), "{name}");
            assert!(contains(&page2, b"row-100"), "{name}");

            // In place gives the same plaintext.
            let mut in_place = image2.clone();
            assert_eq!(codec.decrypt_page_in_place(2, &mut in_place), Ok(None));
            assert_eq!(in_place, page2);
            let mut in_place = image1.clone();
            assert_eq!(
                codec.decrypt_page_in_place(1, &mut in_place),
                Ok(Some(layout))
            );
            assert_eq!(in_place, page1);
        }
    }

    #[test]
    fn sqlite3mc_page1_keeps_header_bytes_in_clear() {
        let file = sample_file("sqlite3mc-2.6.1-legacy0.sqlite");
        assert_eq!(
            file[16..24],
            [0x10, 0x00, 0x01, 0x01, 0x50, 0x40, 0x20, 0x20]
        );
        let codec = sample_codec(&file);
        let mut page1 = page_of(&file, 1, P);
        codec
            .decrypt_page_in_place(1, &mut page1)
            .expect("valid page 1");
        assert_eq!(page1[16..24], file[16..24]);
    }

    /// The portable pass (CBC on the `aes` crate, then the `hmac` crate: every CPU's but
    /// x86-64 with AES-NI and AVX's, and on aarch64 the ARMv8 AES instructions) leaves no
    /// word of the key (the first two AES-256 round keys), of the derived HMAC key or of
    /// that key XOR the HMAC pads on the stack, writing, reading or refusing a page in
    /// either page-1 layout. (Release builds only show what the optimiser spills: CI runs
    /// `cargo test --release --lib on_the_stack`, on aarch64 under qemu too.)
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    #[test]
    #[cfg_attr(
        cipherlite_asan,
        ignore = "AddressSanitizer lays frames out its own way (redzones, a fake stack)"
    )]
    fn portable_page_passes_leave_no_key_material_on_the_stack() {
        use crate::stack_probe::{add_words, secrets_left, stack_left_by};
        let key: [u8; KEY_SIZE] =
            core::array::from_fn(|i| (i as u8).wrapping_mul(71).wrapping_add(0x3b));
        let salt = [0x2a; SALT_SIZE];
        let mut codec = PageCodec::new(&key, salt, P).expect("codec");
        codec.keys = Keys::SqlCipher(PageCipher::portable(&key, &salt));
        let mut secrets = Vec::new();
        add_words(&mut secrets, "the key", &key);
        let hmac_key = derive_hmac_key(&key, &salt);
        add_words(&mut secrets, "the HMAC key", &hmac_key[..]);
        for pad in [0x36u8, 0x5c] {
            let padded: Vec<u8> = hmac_key.iter().map(|b| b ^ pad).collect();
            add_words(&mut secrets, &format!("HMAC key ^ {pad:#04x}"), &padded);
        }
        let left = |stack: &[u8]| secrets_left(&secrets, stack);
        for (pgno, layout) in [
            (2u32, Page1Layout::SqlCipher),
            (1, Page1Layout::SqlCipher),
            (1, Page1Layout::Sqlite3mc),
        ] {
            let mut page: Vec<u8> = (0..P).map(|i| (i * 5 + 1) as u8).collect();
            if pgno == 1 {
                set_header(&mut page, P);
            }
            let stack = stack_left_by(|| {
                core::hint::black_box(codec.encrypt_page_in_place(pgno, layout, &mut page).is_ok());
            });
            assert_eq!(
                left(&stack),
                Vec::<String>::new(),
                "page {pgno}, {layout:?}: encrypted"
            );
            let mut copy = page.clone();
            let stack = stack_left_by(|| {
                core::hint::black_box(codec.decrypt_page_in_place(pgno, &mut copy).is_ok());
            });
            assert_eq!(
                left(&stack),
                Vec::<String>::new(),
                "page {pgno}, {layout:?}: decrypted"
            );
            page[100] ^= 1;
            let stack = stack_left_by(|| {
                core::hint::black_box(codec.decrypt_page_in_place(pgno, &mut page).is_ok());
            });
            assert_eq!(
                left(&stack),
                Vec::<String>::new(),
                "page {pgno}, {layout:?}: refused"
            );
        }
    }

    /// Re-encrypting a sample page with the IV stored in it reproduces the file's bytes
    /// exactly: a known answer for the encryption side, salt prefix and clear header
    /// included.
    /// The stitched pass runs wherever the CPU has what it needs, and the two-pass path it
    /// replaces (still the path elsewhere) writes and reads the same bytes.
    #[test]
    fn the_stitched_and_two_pass_paths_write_the_same_bytes() {
        let key = [0x4d; KEY_SIZE];
        let salt = [0x2a; SALT_SIZE];
        let stitched = PageCodec::new(&key, salt, P).expect("codec");
        #[cfg(target_arch = "x86_64")]
        {
            let cpu_has = std::is_x86_feature_detected!("aes")
                && std::is_x86_feature_detected!("ssse3")
                && std::is_x86_feature_detected!("avx")
                && std::is_x86_feature_detected!("bmi1")
                && std::is_x86_feature_detected!("bmi2");
            assert_eq!(crate::x86_64::stitched::available(), cpu_has);
            assert_eq!(
                stitched.sqlcipher_keys().expect("keys").is_stitched(),
                cpu_has
            );
        }
        let mut two_pass = PageCodec::new(&key, salt, P).expect("codec");
        two_pass.keys = Keys::SqlCipher(PageCipher::portable(&key, &salt));
        assert!(!two_pass.sqlcipher_keys().expect("keys").is_stitched());
        for (pgno, layout) in [
            (1u32, Page1Layout::SqlCipher),
            (1, Page1Layout::Sqlite3mc),
            (2, Page1Layout::SqlCipher),
            (777, Page1Layout::SqlCipher),
        ] {
            let mut plain: Vec<u8> = (0..P).map(|i| (i * 3 + pgno as usize) as u8).collect();
            if pgno == 1 {
                set_header(&mut plain, P);
            }
            let iv = [pgno as u8; IV_SIZE];
            let mut one = plain.clone();
            stitched
                .encrypt_with_iv(pgno, layout, &mut one, &iv)
                .expect("encrypt");
            let mut other = plain.clone();
            two_pass
                .encrypt_with_iv(pgno, layout, &mut other, &iv)
                .expect("encrypt");
            assert!(one == other, "page {pgno} {layout:?}");
            for (reader, writer) in [(&stitched, &two_pass), (&two_pass, &stitched)] {
                let mut image = vec![0u8; P];
                writer
                    .encrypt_page(pgno, layout, &plain, &mut image)
                    .expect("encrypt");
                let mut out = vec![0u8; P];
                reader
                    .decrypt_page(pgno, &image, &mut out)
                    .expect("decrypt");
                assert_eq!(out[SALT_SIZE..P - RESERVE], plain[SALT_SIZE..P - RESERVE]);
                image[40] ^= 1;
                assert!(reader.decrypt_page(pgno, &image, &mut out).is_err());
            }
        }
    }

    #[test]
    fn reencrypting_with_the_stored_iv_reproduces_the_sample_bytes() {
        for (name, layout) in SAMPLES {
            let file = sample_file(name);
            let codec = sample_codec(&file);
            for pgno in 1..=2u32 {
                let image = page_of(&file, pgno as usize, P);
                let mut iv = [0u8; IV_SIZE];
                iv.copy_from_slice(&image[P - RESERVE..P - HMAC_SIZE]);
                let mut page = image.clone();
                codec
                    .decrypt_page_in_place(pgno, &mut page)
                    .expect("valid page");
                codec
                    .encrypt_with_iv(pgno, layout, &mut page, &iv)
                    .expect("valid page");
                assert!(page == image, "{name} page {pgno}");
            }
        }
    }

    #[test]
    fn reencrypted_page1_round_trips_with_salt_prefix_and_clear_header() {
        for (name, layout) in SAMPLES {
            let file = sample_file(name);
            let codec = sample_codec(&file);
            let mut plain = vec![0u8; P];
            codec
                .decrypt_page(1, &page_of(&file, 1, P), &mut plain)
                .expect("valid page 1");

            let mut image = vec![0u8; P];
            codec
                .encrypt_page(1, layout, &plain, &mut image)
                .expect("encrypt");
            assert_eq!(image[..16], file[..16], "{name}: salt prefix");
            if layout == Page1Layout::Sqlite3mc {
                assert_eq!(image[16..24], plain[16..24], "{name}: header in clear");
            } else {
                assert_ne!(image[16..24], plain[16..24], "{name}: header encrypted");
            }
            assert_ne!(
                image[P - RESERVE..],
                file[P - RESERVE..P],
                "{name}: fresh IV"
            );

            let mut again = vec![0u8; P];
            assert_eq!(codec.decrypt_page(1, &image, &mut again), Ok(Some(layout)));
            assert_eq!(again[..P - RESERVE], plain[..P - RESERVE], "{name}");
        }
    }

    /// Page 1 in a batch, first, between or last, in either layout: it goes alone (its
    /// region is shorter) and comes out as `encrypt_page` writes it — the salt prefix, the
    /// layout's clear bytes, authentic as page 1 — while the other pages still go together.
    #[test]
    fn page1_encrypted_in_a_batch_is_page1_of_its_layout() {
        for (name, layout) in SAMPLES {
            let file = sample_file(name);
            let codec = sample_codec(&file);
            let mut plain1 = vec![0u8; P];
            codec
                .decrypt_page(1, &page_of(&file, 1, P), &mut plain1)
                .expect("valid page 1");
            let plain_n: Vec<u8> = (0..P).map(|b| (b * 7 + 1) as u8).collect();
            for (order, at) in [[1u32, 2, 3], [2, 1, 3], [2, 3, 1]].iter().zip([0, 1, 2]) {
                let mut pages: Vec<Vec<u8>> = order
                    .iter()
                    .map(|&pgno| {
                        if pgno == 1 {
                            plain1.clone()
                        } else {
                            plain_n.clone()
                        }
                    })
                    .collect();
                let mut batch: Vec<(u32, &mut [u8])> = order
                    .iter()
                    .copied()
                    .zip(pages.iter_mut().map(|p| &mut p[..]))
                    .collect();
                codec
                    .encrypt_pages_in_place(layout, &mut batch)
                    .expect("encrypt");
                let image1 = &pages[at];
                assert_eq!(image1[..16], file[..16], "{name}: salt prefix");
                assert_eq!(
                    image1[16..24] == plain1[16..24],
                    layout == Page1Layout::Sqlite3mc,
                    "{name}: header bytes in clear only in the Sqlite3mc layout"
                );
                for (&pgno, image) in order.iter().zip(&pages) {
                    let mut out = vec![0u8; P];
                    let detected = codec
                        .decrypt_page(pgno, image, &mut out)
                        .expect("authentic");
                    let expected = if pgno == 1 { &plain1 } else { &plain_n };
                    assert_eq!(out[..P - RESERVE], expected[..P - RESERVE], "{name} {pgno}");
                    assert_eq!(detected, (pgno == 1).then_some(layout), "{name} {pgno}");
                }
            }
        }
    }

    #[test]
    fn wrong_key_is_rejected_and_nothing_is_written() {
        for (name, _) in SAMPLES {
            let file = sample_file(name);
            let mut key = sample_key();
            key[31] ^= 1;
            let codec = PageCodec::new(&key, read_salt(&file).expect("salt"), P).expect("codec");
            for pgno in 1..=2u32 {
                let image = page_of(&file, pgno as usize, P);
                let mut out = vec![0xeeu8; P];
                assert_eq!(
                    codec.decrypt_page(pgno, &image, &mut out),
                    Err(CodecError::HmacMismatch { pgno }),
                    "{name}"
                );
                assert!(
                    out.iter().all(|&byte| byte == 0xee),
                    "{name}: out untouched"
                );
                let mut in_place = image.clone();
                assert!(codec.decrypt_page_in_place(pgno, &mut in_place).is_err());
                assert!(in_place == image, "{name}: buffer untouched");
            }
            assert_eq!(
                codec.detect_page1_layout(&page_of(&file, 1, P)),
                Err(CodecError::HmacMismatch { pgno: 1 })
            );
        }
    }

    /// authenticate_page accepts exactly the images decrypt_page decrypts: every page of
    /// the engines' samples, and none after a flipped bit or under another page number.
    /// Four pages at once give the single-page verdicts, page by page, and an accepted image
    /// decrypts to what `decrypt_page` gives; tampered, swapped or page-1 inputs are caught.
    #[test]
    fn four_pages_at_once_agree_with_one_at_a_time() {
        for size in [512usize, 4096, 65536] {
            let codec = PageCodec::new(&[0x61; 32], [0x17; 16], size).expect("codec");
            let mut images = vec![0u8; PAGES_AT_ONCE * size];
            for (i, image) in images.chunks_exact_mut(size).enumerate() {
                let plain: Vec<u8> = (0..size).map(|b| (b * 13 + i * 7) as u8).collect();
                codec
                    .encrypt_page(10 + i as u32, Page1Layout::SqlCipher, &plain, image)
                    .expect("encrypt");
            }
            let Some(verdicts) = codec.authenticate_pages(10, &images) else {
                eprintln!("this CPU checks pages one at a time: not tested here");
                return;
            };
            assert_eq!(verdicts, [true; PAGES_AT_ONCE], "{size}");
            for (i, image) in images.chunks_exact(size).enumerate() {
                let pgno = 10 + i as u32;
                let mut expected = vec![0u8; size];
                codec
                    .decrypt_page(pgno, image, &mut expected)
                    .expect("decrypt");
                let mut page = image.to_vec();
                codec
                    .decrypt_authenticated_page(pgno, &mut page)
                    .expect("decrypt");
                assert_eq!(page, expected, "{size} page {pgno}");
            }
            let mut tampered = images.clone();
            tampered[2 * size + 100] ^= 1;
            assert_eq!(
                codec.authenticate_pages(10, &tampered),
                Some([true, true, false, true])
            );
            assert_eq!(
                codec.authenticate_pages(11, &images),
                Some([false; PAGES_AT_ONCE]),
                "one page off"
            );
            let mut swapped = images.clone();
            swapped[..size].copy_from_slice(&images[size..2 * size]);
            assert_eq!(
                codec.authenticate_pages(10, &swapped),
                Some([false, true, true, true])
            );
            assert_eq!(codec.authenticate_pages(1, &images), None, "never page 1");
            assert_eq!(
                codec.authenticate_pages(10, &images[size..]),
                None,
                "three pages"
            );
            let mut page = images[..size].to_vec();
            assert_eq!(
                codec.decrypt_authenticated_page(1, &mut page),
                Err(CodecError::BadPageNumber)
            );
        }
    }

    #[test]
    fn authenticate_page_agrees_with_decrypt_page() {
        for (name, layout) in SAMPLES {
            let file = sample_file(name);
            let codec = sample_codec(&file);
            let mut out = vec![0u8; P];
            for n in 1..=file.len() / P {
                let pgno = n as u32;
                let image = page_of(&file, n, P);
                let expected = codec.decrypt_page(pgno, &image, &mut out);
                assert_eq!(
                    codec.authenticate_page(pgno, &image),
                    expected,
                    "{name} {pgno}"
                );
                assert!(expected.is_ok(), "{name} {pgno}");
                if pgno == 1 {
                    assert_eq!(codec.authenticate_page(1, &image), Ok(Some(layout)));
                }
                let mut flipped = image.clone();
                flipped[P / 2] ^= 0x10;
                assert!(
                    codec.authenticate_page(pgno, &flipped).is_err(),
                    "{name} {pgno}"
                );
                assert!(
                    codec.authenticate_page(pgno + 1, &image).is_err(),
                    "{name} {pgno}"
                );
            }
        }
    }

    #[test]
    fn wrong_page_size_is_rejected() {
        let file = sample_file("sqlcipher-4.9.0-cli.sqlite");
        let salt = read_salt(&file).expect("salt");
        for page_size in [1024, 2048] {
            let codec = PageCodec::new(&sample_key(), salt, page_size).expect("codec");
            assert_eq!(
                codec.detect_page1_layout(&file[..page_size]),
                Err(CodecError::HmacMismatch { pgno: 1 })
            );
        }
        let codec = PageCodec::new(&sample_key(), salt, 8192).expect("codec");
        assert_eq!(
            codec.detect_page1_layout(&file[..8192]),
            Err(CodecError::HmacMismatch { pgno: 1 })
        );
    }

    /// The hot-journal samples: every written page verifies; page 3 was never written
    /// (all zeros) and is rejected, not passed through.
    #[test]
    fn hot_database_pages_verify_except_the_unwritten_one() {
        for (name, layout) in [
            ("hot-sqlcipher-4.12.0.sqlite", Page1Layout::SqlCipher),
            ("hot-sqlite3mc-2.6.1-legacy4.sqlite", Page1Layout::SqlCipher),
            ("hot-sqlite3mc-2.6.1-legacy0.sqlite", Page1Layout::Sqlite3mc),
        ] {
            let file = sample_file(name);
            assert_eq!(file.len(), 7 * P);
            let codec = sample_codec(&file);
            for pgno in 1..=7u32 {
                let mut page = page_of(&file, pgno as usize, P);
                let result = codec.decrypt_page_in_place(pgno, &mut page);
                if pgno == 3 {
                    assert!(is_all_zero(&page), "{name}: page 3 is zeros");
                    assert_eq!(result, Err(CodecError::HmacMismatch { pgno: 3 }), "{name}");
                } else {
                    assert!(!is_all_zero(&page));
                    let expected = (pgno == 1).then_some(layout);
                    assert_eq!(result, Ok(expected), "{name} page {pgno}");
                }
            }
        }
    }

    /// WAL frames carry page images encrypted like the database pages (§7).
    #[test]
    fn wal_frames_decrypt_with_their_page_numbers() {
        for (name, layout, clear_header) in [
            ("wal-sqlcipher-4.12.0.sqlite", Page1Layout::SqlCipher, None),
            (
                "wal-sqlite3mc-2.6.1-legacy0.sqlite",
                Page1Layout::Sqlite3mc,
                Some([0x10, 0x00, 0x02, 0x02, 0x50, 0x40, 0x20, 0x20]),
            ),
        ] {
            let file = sample_file(name);
            let codec = sample_codec(&file);
            let wal = sample_file(&format!("{name}-wal"));
            const WAL_HEADER: usize = 32;
            const FRAME_HEADER: usize = 24;
            let frames: Vec<&[u8]> = wal[WAL_HEADER..].chunks(FRAME_HEADER + P).collect();
            assert_eq!(frames.len(), 3, "{name}");
            let mut found_hello = false;
            for (index, frame) in frames.iter().enumerate() {
                let pgno = u32::from_be_bytes(frame[..4].try_into().expect("4 bytes"));
                assert_eq!(pgno as usize, index + 1);
                let mut page = frame[FRAME_HEADER..].to_vec();
                if let (1, Some(header)) = (pgno, clear_header) {
                    assert_eq!(page[16..24], header);
                }
                let expected = (pgno == 1).then_some(layout);
                assert_eq!(codec.decrypt_page_in_place(pgno, &mut page), Ok(expected));
                found_hello |= contains(&page, b"hello-wal");
                if pgno == 1 {
                    assert_eq!(page[18..20], [2, 2], "{name}: WAL mode header");
                }
            }
            assert!(found_hello, "{name}");
        }
    }

    #[test]
    fn page_sizes_must_be_powers_of_two_from_512_to_65536() {
        let key = [1u8; KEY_SIZE];
        for size in [0, 1, 256, 511, 1000, 4095, 4097, 131072, usize::MAX] {
            assert_eq!(
                PageCodec::new(&key, [0; 16], size).err(),
                Some(CodecError::BadPageSize(size))
            );
        }
        for shift in 9..=16 {
            let codec = PageCodec::new(&key, [0; 16], 1 << shift).expect("valid size");
            assert_eq!(codec.page_size(), 1 << shift);
            assert_eq!(codec.usable_size(), (1 << shift) - 80);
        }
    }

    #[test]
    fn bad_lengths_and_page_zero_are_rejected() {
        let codec = PageCodec::new(&[1; KEY_SIZE], [2; 16], 1024).expect("codec");
        let mut page = vec![0u8; 1024];
        set_header(&mut page, 1024);
        let mut short = vec![0u8; 1000];
        let bad = Err(CodecError::BadLength {
            expected: 1024,
            actual: 1000,
        });
        assert_eq!(
            codec.encrypt_page(2, Page1Layout::SqlCipher, &page, &mut short),
            bad
        );
        assert_eq!(
            codec.encrypt_page(2, Page1Layout::SqlCipher, &short, &mut page),
            bad
        );
        assert_eq!(
            codec.decrypt_page_in_place(2, &mut short),
            bad.map(|()| None)
        );
        assert_eq!(
            codec.detect_page1_layout(&short),
            bad.map(|()| Page1Layout::SqlCipher)
        );
        let mut out = vec![0u8; 1024];
        assert_eq!(
            codec.encrypt_page(0, Page1Layout::SqlCipher, &page, &mut out),
            Err(CodecError::BadPageNumber)
        );
        assert_eq!(
            codec.decrypt_page(0, &out, &mut page),
            Err(CodecError::BadPageNumber)
        );
        assert!(out.iter().all(|&byte| byte == 0), "out untouched");
    }

    #[test]
    fn page1_with_a_foreign_header_is_not_written() {
        let codec = PageCodec::new(&[1; KEY_SIZE], [2; 16], 4096).expect("codec");
        let mut plain = vec![0u8; 4096];
        set_header(&mut plain, 4096);
        plain[20] = 0; // SQLite would use the bytes the codec overwrites
        let mut out = vec![0u8; 4096];
        let expected = Err(CodecError::HeaderMismatch {
            page_size: 4096,
            reserve: 0,
            expected_page_size: 4096,
        });
        for layout in [Page1Layout::SqlCipher, Page1Layout::Sqlite3mc] {
            assert_eq!(codec.encrypt_page(1, layout, &plain, &mut out), expected);
            assert!(is_all_zero(&out), "out untouched");
            let mut in_place = plain.clone();
            assert_eq!(
                codec.encrypt_page_in_place(1, layout, &mut in_place),
                expected
            );
            assert_eq!(in_place, plain);
        }
        set_header(&mut plain, 1024);
        assert_eq!(
            codec.encrypt_page(1, Page1Layout::SqlCipher, &plain, &mut out),
            Err(CodecError::HeaderMismatch {
                page_size: 1024,
                reserve: 80,
                expected_page_size: 4096
            })
        );
        // Other pages carry no header: any content is fine.
        assert_eq!(
            codec.encrypt_page(2, Page1Layout::SqlCipher, &plain, &mut out),
            Ok(())
        );
    }

    #[test]
    fn page1_from_another_database_is_rejected() {
        // Same key, different salt: different HMAC key.
        let key = [3u8; KEY_SIZE];
        let ours = PageCodec::new(&key, [4; 16], 4096).expect("codec");
        let theirs = PageCodec::new(&key, [5; 16], 4096).expect("codec");
        let mut plain = vec![0u8; 4096];
        set_header(&mut plain, 4096);
        let mut image = vec![0u8; 4096];
        theirs
            .encrypt_page(1, Page1Layout::Sqlite3mc, &plain, &mut image)
            .expect("encrypt");
        assert_eq!(
            ours.detect_page1_layout(&image),
            Err(CodecError::HmacMismatch { pgno: 1 })
        );
        theirs
            .encrypt_page(2, Page1Layout::Sqlite3mc, &plain, &mut image)
            .expect("encrypt");
        assert_eq!(
            ours.decrypt_page_in_place(2, &mut image),
            Err(CodecError::HmacMismatch { pgno: 2 })
        );
    }

    /// Pages encrypted together decrypt and authenticate page by page as what they were,
    /// for every count and several page sizes, each under its own fresh IV; more than four
    /// pages, or a page of the wrong size, are refused with every page untouched.
    #[test]
    fn pages_encrypted_at_once_decrypt_one_at_a_time() {
        for size in [512usize, 4096, 65536] {
            let codec = PageCodec::new(&[0x21; KEY_SIZE], [0x12; SALT_SIZE], size).expect("codec");
            for count in 1..=PAGES_AT_ONCE {
                let plains: Vec<Vec<u8>> = (0..count)
                    .map(|i| (0..size).map(|b| (b * 13 + i * 7) as u8).collect())
                    .collect();
                let mut pages = plains.clone();
                let mut batch: Vec<(u32, &mut [u8])> = pages
                    .iter_mut()
                    .enumerate()
                    .map(|(i, p)| (2 + 3 * i as u32, &mut p[..]))
                    .collect();
                codec
                    .encrypt_pages_in_place(Page1Layout::SqlCipher, &mut batch)
                    .expect("encrypt");
                let ivs: Vec<&[u8]> = pages
                    .iter()
                    .map(|p| &p[size - RESERVE..size - HMAC_SIZE])
                    .collect();
                for (i, iv) in ivs.iter().enumerate() {
                    assert!(ivs[..i].iter().all(|other| other != iv), "a fresh IV each");
                }
                for (i, (image, plain)) in pages.iter().zip(&plains).enumerate() {
                    let pgno = 2 + 3 * i as u32;
                    assert_ne!(&image[..64], &plain[..64], "encrypted");
                    let mut out = vec![0u8; size];
                    codec
                        .decrypt_page(pgno, image, &mut out)
                        .expect("authentic");
                    assert_eq!(&out[..size - RESERVE], &plain[..size - RESERVE]);
                    assert_eq!(
                        codec.decrypt_page(pgno + 1, image, &mut out),
                        Err(CodecError::HmacMismatch { pgno: pgno + 1 }),
                        "bound to its page number"
                    );
                }
            }
            let plain = vec![9u8; size];
            let mut a = plain.clone();
            let mut b = plain.clone();
            let layout = Page1Layout::SqlCipher;
            assert_eq!(
                codec.encrypt_pages_in_place(layout, &mut [(2, &mut a[..]), (1, &mut b[..])]),
                Err(CodecError::HeaderMismatch {
                    page_size: 0x0909,
                    reserve: 9,
                    expected_page_size: size
                }),
                "page 1 without this codec's header fields"
            );
            let mut pages: Vec<Vec<u8>> = vec![plain.clone(); 5];
            let mut five: Vec<(u32, &mut [u8])> =
                pages.iter_mut().map(|p| (2, &mut p[..])).collect();
            assert!(codec.encrypt_pages_in_place(layout, &mut five).is_err());
            let mut short = vec![9u8; size - 16];
            assert!(codec
                .encrypt_pages_in_place(layout, &mut [(2, &mut a[..]), (3, &mut short[..])])
                .is_err());
            assert!(a == plain && b == plain && pages.iter().all(|p| *p == plain));
            assert!(short.iter().all(|&x| x == 9));
        }
    }

    /// The journal copy's check: an image holds the plaintext it was encrypted from (the
    /// reserve aside, and page 1's salt bytes) and nothing else differing in any byte.
    #[test]
    fn an_image_holds_exactly_its_plaintext() {
        let codec = PageCodec::new(&[0x33; KEY_SIZE], [0x44; SALT_SIZE], P).expect("codec");
        let mut work = vec![0u8; P];
        for (pgno, layout) in [
            (1u32, Page1Layout::SqlCipher),
            (1, Page1Layout::Sqlite3mc),
            (9, Page1Layout::SqlCipher),
        ] {
            let mut plain: Vec<u8> = (0..P).map(|i| (i * 7 + 1) as u8).collect();
            if pgno == 1 {
                set_header(&mut plain, P);
            }
            let mut image = vec![0u8; P];
            codec
                .encrypt_page(pgno, layout, &plain, &mut image)
                .expect("encrypt");
            assert!(codec.image_holds(pgno, layout, &image, &plain, &mut work));
            assert!(work.iter().all(|&b| b == 0), "scratch zeroed");
            let mut reserve_differs = plain.clone();
            reserve_differs[P - 1] ^= 1;
            assert!(codec.image_holds(pgno, layout, &image, &reserve_differs, &mut work));
            let first = if pgno == 1 { SALT_SIZE } else { 0 };
            for at in [first, first + 9, P / 2, P - RESERVE - 1] {
                let mut other = plain.clone();
                other[at] ^= 0x80;
                assert!(
                    !codec.image_holds(pgno, layout, &image, &other, &mut work),
                    "page {pgno} {layout:?}, byte {at}"
                );
            }
            if pgno == 1 {
                let wrong = match layout {
                    Page1Layout::SqlCipher => Page1Layout::Sqlite3mc,
                    Page1Layout::Sqlite3mc => Page1Layout::SqlCipher,
                };
                assert!(!codec.image_holds(1, wrong, &image, &plain, &mut work));
            }
            assert!(!codec.image_holds(pgno, layout, &image, &plain[..P - 1], &mut work));
            if pgno == 1 {
                let mut other_salt = image.clone();
                other_salt[3] ^= 1;
                assert!(!codec.image_holds(1, layout, &other_salt, &plain, &mut work));
            }
        }
        assert!(equal_in_constant_time(b"abcdefghijk", b"abcdefghijk"));
        assert!(!equal_in_constant_time(b"abcdefghijk", b"abcdefghijK"));
        assert!(!equal_in_constant_time(b"Abcdefghijk", b"abcdefghijk"));
        assert!(!equal_in_constant_time(b"abc", b"abcd"));
    }

    #[test]
    fn every_write_draws_a_fresh_iv() {
        let codec = PageCodec::new(&[1; KEY_SIZE], [2; 16], 512).expect("codec");
        let plain = vec![0u8; 512];
        let mut first = vec![0u8; 512];
        let mut second = vec![0u8; 512];
        codec
            .encrypt_page(9, Page1Layout::SqlCipher, &plain, &mut first)
            .expect("encrypt");
        codec
            .encrypt_page(9, Page1Layout::SqlCipher, &plain, &mut second)
            .expect("encrypt");
        assert_ne!(first[432..448], second[432..448], "IVs");
        assert_ne!(first[..432], second[..432], "ciphertexts");
    }

    #[test]
    fn layout_detection_follows_each_image() {
        // The hint must never decide: alternate layouts through one codec.
        let codec = PageCodec::new(&[7; KEY_SIZE], [8; 16], 4096).expect("codec");
        let mut plain = vec![0x33u8; 4096];
        set_header(&mut plain, 4096);
        let mut image = vec![0u8; 4096];
        for layout in [
            Page1Layout::Sqlite3mc,
            Page1Layout::Sqlite3mc,
            Page1Layout::SqlCipher,
            Page1Layout::Sqlite3mc,
            Page1Layout::SqlCipher,
            Page1Layout::SqlCipher,
        ] {
            codec
                .encrypt_page(1, layout, &plain, &mut image)
                .expect("encrypt");
            assert_eq!(codec.detect_page1_layout(&image), Ok(layout));
            assert_eq!(codec.decrypt_page_in_place(1, &mut image), Ok(Some(layout)));
        }
    }

    #[test]
    fn debug_output_never_shows_key_material() {
        let key = sample_key();
        let salt = [0x11u8; 16];
        let codec = PageCodec::new(&key, salt, 4096).expect("codec");
        let text = format!("{codec:?} {codec:#?}");
        assert!(text.contains("<redacted>"), "{text}");
        assert!(
            text.contains("11111111111111111111111111111111"),
            "salt shown: {text}"
        );
        let key_hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
        let hmac_key_hex: String = derive_hmac_key(&key, &salt)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        for secret in [&key_hex, &hmac_key_hex] {
            assert!(!text.contains(&secret[..8]), "{text}");
        }
        assert!(!text.contains(&format!("{:?}", &key[..4])), "{text}");
    }

    /// Every single-bit flip of a 512-byte image, for page 2 and page 1 in both layouts:
    /// what the HMAC covers, what is checked besides it, and the five clear header bytes
    /// of the `Sqlite3mc` layout that only SQLite validates.
    #[test]
    fn exhaustive_bit_flips_on_small_pages() {
        let codec = codec_for(512);
        let mut plain: Vec<u8> = (0..512).map(|i| (i * 7) as u8).collect();
        set_header(&mut plain, 512);
        for (pgno, layout) in [
            (2, Page1Layout::SqlCipher),
            (1, Page1Layout::SqlCipher),
            (1, Page1Layout::Sqlite3mc),
        ] {
            let mut image = vec![0u8; 512];
            codec
                .encrypt_page(pgno, layout, &plain, &mut image)
                .expect("encrypt");
            let mut unauthenticated = Vec::new();
            for bit in 0..512 * 8 {
                let mut flipped = image.clone();
                flipped[bit / 8] ^= 1 << (bit % 8);
                match codec.decrypt_page_in_place(pgno, &mut flipped) {
                    Err(CodecError::HmacMismatch { .. }) => {
                        assert!(pgno != 1 || bit / 8 >= layout.page1_offset(), "bit {bit}");
                    }
                    Err(CodecError::SaltMismatch) => assert!(pgno == 1 && bit / 8 < 16),
                    Err(CodecError::HeaderMismatch { .. }) => {
                        assert_eq!(layout, Page1Layout::Sqlite3mc);
                        assert!([16, 17, 20].contains(&(bit / 8)), "bit {bit}");
                    }
                    Ok(_) => unauthenticated.push(bit / 8),
                    Err(other) => panic!("bit {bit}: {other:?}"),
                }
            }
            unauthenticated.dedup();
            let expected: &[usize] = match (pgno, layout) {
                (1, Page1Layout::Sqlite3mc) => &[18, 19, 21, 22, 23],
                _ => &[],
            };
            assert_eq!(unauthenticated, expected, "page {pgno} {layout:?}");
        }
    }

    #[test]
    fn codec_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<PageCodec>();
    }

    // ---- properties -------------------------------------------------------------------

    fn layouts() -> impl Strategy<Value = Page1Layout> {
        prop_oneof![Just(Page1Layout::SqlCipher), Just(Page1Layout::Sqlite3mc)]
    }

    fn page_numbers() -> impl Strategy<Value = u32> {
        prop_oneof![Just(1u32), Just(2u32), 1u32..=u32::MAX]
    }

    /// (page size, page number, layout, plaintext page with a valid header on page 1).
    fn pages() -> impl Strategy<Value = (usize, u32, Page1Layout, Vec<u8>)> {
        let sizes = prop_oneof![
            Just(512usize),
            Just(1024usize),
            Just(4096usize),
            Just(8192usize),
            Just(65536usize)
        ];
        (sizes, page_numbers(), layouts()).prop_flat_map(|(size, pgno, layout)| {
            prop::collection::vec(any::<u8>(), size).prop_map(move |mut plain| {
                if pgno == 1 {
                    set_header(&mut plain, size);
                }
                (size, pgno, layout, plain)
            })
        })
    }

    fn codec_for(size: usize) -> PageCodec {
        PageCodec::new(&[0x5c; KEY_SIZE], [0xc5; SALT_SIZE], size).expect("valid size")
    }

    /// The plaintext SQLite gets back: the page with the magic in bytes 0..16 of page 1.
    fn expected_plaintext(pgno: u32, plain: &[u8]) -> Vec<u8> {
        let mut expected = plain[..plain.len() - RESERVE].to_vec();
        if pgno == 1 {
            expected[..16].copy_from_slice(&SQLITE_HEADER_MAGIC);
        }
        expected
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn encrypt_then_decrypt_round_trips((size, pgno, layout, plain) in pages()) {
            let codec = codec_for(size);
            let mut image = vec![0u8; size];
            codec.encrypt_page(pgno, layout, &plain, &mut image).expect("encrypt");
            if pgno == 1 {
                prop_assert_eq!(&image[..16], &codec.salt()[..]);
            }
            let expected_layout = (pgno == 1).then_some(layout);

            let mut out = vec![0u8; size];
            prop_assert_eq!(codec.decrypt_page(pgno, &image, &mut out), Ok(expected_layout));
            prop_assert_eq!(&out[..size - RESERVE], &expected_plaintext(pgno, &plain)[..]);
            prop_assert_eq!(&out[size - RESERVE..], &image[size - RESERVE..]);

            let mut in_place = plain.clone();
            codec.encrypt_page_in_place(pgno, layout, &mut in_place).expect("encrypt");
            prop_assert_eq!(codec.decrypt_page_in_place(pgno, &mut in_place), Ok(expected_layout));
            prop_assert_eq!(&in_place[..size - RESERVE], &expected_plaintext(pgno, &plain)[..]);
        }

        /// Every bit of the image is either authenticated by the HMAC, or (page 1) checked
        /// against the codec, or one of the five SQLite3MC header bytes SQLite validates.
        #[test]
        fn single_bit_flips_are_rejected(
            (size, pgno, layout, plain) in pages(),
            bit in any::<prop::sample::Index>(),
        ) {
            let codec = codec_for(size);
            let mut image = vec![0u8; size];
            codec.encrypt_page(pgno, layout, &plain, &mut image).expect("encrypt");
            let bit = bit.index(size * 8);
            let byte = bit / 8;
            image[byte] ^= 1 << (bit % 8);

            let mut out = vec![0xa5u8; size];
            let result = codec.decrypt_page(pgno, &image, &mut out);
            let mut in_place = image.clone();
            let in_place_result = codec.decrypt_page_in_place(pgno, &mut in_place);
            prop_assert_eq!(result, in_place_result);

            let page1_mc = pgno == 1 && layout == Page1Layout::Sqlite3mc;
            if pgno == 1 && byte < SALT_SIZE {
                prop_assert_eq!(result, Err(CodecError::SaltMismatch));
                // Reopened from the changed file, the salt gives another HMAC key.
                let reopened = PageCodec::new(&[0x5c; KEY_SIZE], read_salt(&image).expect("salt"), size)
                    .expect("codec");
                prop_assert_eq!(
                    reopened.detect_page1_layout(&image),
                    Err(CodecError::HmacMismatch { pgno: 1 })
                );
            } else if page1_mc && ((16..18).contains(&byte) || byte == 20) {
                let header_rejected = matches!(result, Err(CodecError::HeaderMismatch { .. }));
                prop_assert!(header_rejected, "expected HeaderMismatch, got {:?}", result);
            } else if page1_mc && (16..24).contains(&byte) {
                // Format versions and payload fractions: not authenticated in this layout
                // (as in SQLite3MC); SQLite itself rejects values other than 1/2 and 64/32/32.
                prop_assert_eq!(result, Ok(Some(layout)));
                let mut expected = expected_plaintext(1, &plain);
                expected[byte] ^= 1 << (bit % 8);
                prop_assert_eq!(&out[..size - RESERVE], &expected[..]);
                return Ok(());
            } else {
                prop_assert_eq!(result, Err(CodecError::HmacMismatch { pgno }));
            }
            prop_assert!(out.iter().all(|&b| b == 0xa5), "out untouched on error");
            prop_assert!(in_place == image, "buffer untouched on error");
        }

        #[test]
        fn wrong_page_number_is_rejected(
            (size, pgno, layout, plain) in pages(),
            other in page_numbers(),
        ) {
            prop_assume!(other != pgno);
            let codec = codec_for(size);
            let mut image = vec![0u8; size];
            codec.encrypt_page(pgno, layout, &plain, &mut image).expect("encrypt");
            let mut out = vec![0u8; size];
            prop_assert_eq!(
                codec.decrypt_page(other, &image, &mut out),
                Err(CodecError::HmacMismatch { pgno: other })
            );
        }

        #[test]
        fn wrong_key_is_rejected(
            (size, pgno, layout, plain) in pages(),
            key in prop::array::uniform32(any::<u8>()),
            other_key in prop::array::uniform32(any::<u8>()),
        ) {
            prop_assume!(key != other_key);
            let codec = PageCodec::new(&key, [1; SALT_SIZE], size).expect("codec");
            let other = PageCodec::new(&other_key, [1; SALT_SIZE], size).expect("codec");
            let mut image = vec![0u8; size];
            codec.encrypt_page(pgno, layout, &plain, &mut image).expect("encrypt");
            let mut in_place = image.clone();
            prop_assert_eq!(
                other.decrypt_page_in_place(pgno, &mut in_place),
                Err(CodecError::HmacMismatch { pgno })
            );
            prop_assert!(in_place == image);
        }

        /// Two valid pages of one database swapped on disk: each fails at the other's place.
        #[test]
        fn swapped_pages_are_rejected(
            (size, pgno, layout, plain) in pages(),
            other in page_numbers(),
            other_fill in any::<u8>(),
        ) {
            prop_assume!(other != pgno);
            let codec = codec_for(size);
            let mut other_plain = vec![other_fill; size];
            if other == 1 {
                set_header(&mut other_plain, size);
            }
            let mut image = vec![0u8; size];
            let mut other_image = vec![0u8; size];
            codec.encrypt_page(pgno, layout, &plain, &mut image).expect("encrypt");
            codec.encrypt_page(other, layout, &other_plain, &mut other_image).expect("encrypt");
            prop_assert_eq!(
                codec.decrypt_page_in_place(pgno, &mut other_image.clone()),
                Err(CodecError::HmacMismatch { pgno })
            );
            prop_assert_eq!(
                codec.decrypt_page_in_place(other, &mut image.clone()),
                Err(CodecError::HmacMismatch { pgno: other })
            );
        }
    }

    /// SQLite3MC 2.6.1's `PRAGMA cipher='aegis'` files (docs/aegis-format.md): page 1
    /// and page 2 decrypt with the raw key, and with the key Argon2id derives from the
    /// passphrase `secret`; the page number and the salt are bound.
    #[test]
    fn sqlite3mc_aegis256_sample_files_decrypt() {
        let raw = sample_file("aegis256-sqlite3mc-2.6.1.sqlite");
        let pass = sample_file("aegis256-passphrase-sqlite3mc-2.6.1.sqlite");
        let raw_key = sample_key();
        for (file, key) in [
            (&raw, raw_key),
            (&pass, {
                let salt = read_salt(&pass).expect("salt");
                *crate::derive_aegis_passphrase_key(b"secret", &salt).expect("argon2")
            }),
        ] {
            let salt = read_salt(file).expect("salt");
            let codec =
                PageCodec::with_scheme(CipherScheme::Aegis256, &key, salt, P).expect("codec");
            assert_eq!(codec.reserve(), 64);
            let page1 = page_of(file, 1, P);
            assert_eq!(
                codec.detect_page1_layout(&page1),
                Ok(Page1Layout::Sqlite3mc)
            );
            let mut out = vec![0u8; P];
            assert_eq!(
                codec.decrypt_page(1, &page1, &mut out),
                Ok(Some(Page1Layout::Sqlite3mc))
            );
            assert_eq!(out[..16], SQLITE_HEADER_MAGIC);
            assert_eq!(out[20], 64, "64 reserved bytes");
            let page2 = page_of(file, 2, P);
            codec.decrypt_page(2, &page2, &mut out).expect("page 2");
            assert_eq!(out[0], 0x0d, "a table leaf page");
            assert_eq!(
                codec.decrypt_page(3, &page2, &mut out),
                Err(CodecError::HmacMismatch { pgno: 3 })
            );
            // Written again by this codec, read back by it (SQLite3MC reads these in
            // __test__/88-aegis.test.js).
            let mut plain = vec![0u8; P];
            codec.decrypt_page(1, &page1, &mut plain).expect("page 1");
            let mut again = vec![0u8; P];
            codec
                .encrypt_page(1, Page1Layout::SqlCipher, &plain, &mut again)
                .expect("encrypt");
            assert_eq!(
                again[..24],
                page1[..24],
                "salt and clear header as SQLite3MC's"
            );
            assert_ne!(again[P - 32..], page1[P - 32..], "a fresh nonce");
            codec
                .decrypt_page(1, &again, &mut out)
                .expect("reads its own");
            assert_eq!(out[..P - 64], plain[..P - 64]);
        }
        // The SQLCipher codec does not open them (nor the AEGIS codec a SQLCipher file).
        let salt = read_salt(&raw).expect("salt");
        let sqlcipher = PageCodec::new(&raw_key, salt, P).expect("codec");
        assert!(sqlcipher.detect_page1_layout(&page_of(&raw, 1, P)).is_err());
        let legacy0 = sample_file("sqlite3mc-2.6.1-legacy0.sqlite");
        let aegis = PageCodec::with_scheme(
            CipherScheme::Aegis256,
            &raw_key,
            read_salt(&legacy0).expect("salt"),
            P,
        )
        .expect("codec");
        assert!(aegis.detect_page1_layout(&page_of(&legacy0, 1, P)).is_err());
    }

    /// SQLite3MC 2.6.1's files of the other five algorithms (`PRAGMA algorithm`,
    /// docs/aegis-format.md §1; testdata/sqlcipher4/README.md): raw keys (16 bytes for the
    /// AEGIS-128 family, the first half of `KEY.hex`), a passphrase with non-default Argon2
    /// costs and one with the defaults, a 1024-byte page size. Each opens with its own
    /// algorithm only, pages bound to their numbers; the row SQLite3MC wrote is there.
    #[test]
    fn sqlite3mc_aegis_variant_sample_files_decrypt() {
        use crate::{derive_aegis_passphrase_key_with, AegisAlgorithm, Argon2Costs};
        let raw = sample_key();
        let mut raw16 = [0u8; 32];
        raw16[..16].copy_from_slice(&raw[..16]);
        let costs = Argon2Costs {
            t_cost: 3,
            m_cost: 8192,
            p_cost: 2,
        };
        let cases: [(&str, AegisAlgorithm, usize, Option<Argon2Costs>, &str); 7] = [
            (
                "aegis128l-sqlite3mc-2.6.1.sqlite",
                AegisAlgorithm::Aegis128L,
                P,
                None,
                "hello aegis-128l",
            ),
            (
                "aegis128x2-sqlite3mc-2.6.1-1024.sqlite",
                AegisAlgorithm::Aegis128X2,
                1024,
                None,
                "hello aegis-128x2",
            ),
            (
                "aegis128x4-sqlite3mc-2.6.1.sqlite",
                AegisAlgorithm::Aegis128X4,
                P,
                None,
                "hello aegis-128x4",
            ),
            (
                "aegis256x2-sqlite3mc-2.6.1.sqlite",
                AegisAlgorithm::Aegis256X2,
                P,
                None,
                "hello aegis-256x2",
            ),
            (
                "aegis256x4-sqlite3mc-2.6.1.sqlite",
                AegisAlgorithm::Aegis256X4,
                P,
                None,
                "hello aegis-256x4",
            ),
            (
                "aegis128l-passphrase-t3-m8192-p2-sqlite3mc-2.6.1.sqlite",
                AegisAlgorithm::Aegis128L,
                P,
                Some(costs),
                "pass aegis-128l",
            ),
            (
                "aegis256x4-passphrase-sqlite3mc-2.6.1.sqlite",
                AegisAlgorithm::Aegis256X4,
                P,
                Some(Argon2Costs::default()),
                "pass aegis-256x4",
            ),
        ];
        for (name, algorithm, page_size, passphrase_costs, row) in cases {
            let file = sample_file(name);
            let salt = read_salt(&file).expect("salt");
            let key = match passphrase_costs {
                None if algorithm.is_128() => raw16,
                None => raw,
                Some(costs) => {
                    *derive_aegis_passphrase_key_with(b"secret", &salt, costs, algorithm.key_size())
                        .expect("argon2")
                }
            };
            let scheme = CipherScheme::aegis(algorithm);
            let codec = PageCodec::with_scheme(scheme, &key, salt, page_size).expect("codec");
            assert_eq!(codec.scheme(), scheme);
            let reserve = algorithm.reserve();
            assert_eq!(codec.reserve(), reserve, "{name}");
            let page1 = page_of(&file, 1, page_size);
            assert_eq!(
                usize::from(page1[20]),
                reserve,
                "{name}: the reserve in clear"
            );
            assert_eq!(
                codec.detect_page1_layout(&page1),
                Ok(Page1Layout::Sqlite3mc),
                "{name}"
            );
            let mut out = vec![0u8; page_size];
            codec.decrypt_page(1, &page1, &mut out).expect(name);
            assert_eq!(out[..16], SQLITE_HEADER_MAGIC);
            let page2 = page_of(&file, 2, page_size);
            codec.decrypt_page(2, &page2, &mut out).expect(name);
            assert_eq!(out[0], 0x0d, "{name}: a table leaf page");
            assert!(
                out.windows(row.len()).any(|w| w == row.as_bytes()),
                "{name}: the row SQLite3MC wrote"
            );
            assert_eq!(
                codec.decrypt_page(3, &page2, &mut out),
                Err(CodecError::HmacMismatch { pgno: 3 })
            );
            // Written again by this codec, read back.
            let mut plain = vec![0u8; page_size];
            codec.decrypt_page(2, &page2, &mut plain).expect(name);
            let mut again = vec![0u8; page_size];
            codec
                .encrypt_page(2, Page1Layout::Sqlite3mc, &plain, &mut again)
                .expect(name);
            codec.decrypt_page(2, &again, &mut out).expect(name);
            assert_eq!(out[..page_size - reserve], plain[..page_size - reserve]);
            // No other algorithm opens it with the same key (nor SQLCipher 4).
            for other in AegisAlgorithm::ALL.into_iter().filter(|a| *a != algorithm) {
                let codec =
                    PageCodec::with_scheme(CipherScheme::aegis(other), &key, salt, page_size)
                        .expect("codec");
                assert!(
                    codec.detect_page1_layout(&page1).is_err(),
                    "{name} as {other:?}"
                );
            }
            let sqlcipher = PageCodec::new(&key, salt, page_size).expect("codec");
            assert!(sqlcipher.detect_page1_layout(&page1).is_err(), "{name}");
        }
    }
}
