//! The encrypting VFS: a shim over the OS VFS that stores every page of a database file,
//! of its rollback journal and of its WAL in SQLCipher 4's page format (see `codec`).
//!
//! One [`KeyedVfs`] is registered per keyed connection (its name never reaches SQL, and
//! the key lives only in this instance and the codecs it makes). It sorts the files
//! SQLite opens by kind, each with its own geometry rules:
//!
//! * main database (`main_db`): pages at `(n-1)·P`, encrypted and authenticated whole;
//! * rollback journal (`journal`): records `pgno(BE32) ‖ page ‖ checksum`;
//! * WAL (`wal`): frames `header(24) ‖ page`, pages authenticated as the page the
//!   wal-index (`wal_index`, the `-shm`) maps the frame to;
//! * anything else (super-journals hold only file names) passes through. Temporary files
//!   never reach a VFS: SQLite is compiled with `SQLITE_TEMP_STORE=3`.
//!
//! The integrity rules (an attacker may write the files but has no key): every byte SQLite
//! reads from an encrypted database, journal or WAL is either a plaintext header field the
//! VFS parsed and validated (`format`) or part of a page authenticated against the page
//! number SQLite will use it as; any other read is an error before SQLite acts on it.
//! Nothing written is derived from the plaintext: journal and WAL checksums are computed
//! over the ciphertext (as SQLCipher does), so a key-less SQLite that recovers our
//! leftovers restores ciphertext, and SQLite is handed the plaintext-domain checksums it
//! expects on read (both domains accepted, frame by frame).

mod checkpoint_copy;
// Public for crates/tests/benches/codec.rs (SQLite's checksums; nothing in it holds state).
mod base_file;
#[doc(hidden)]
pub mod checksum;
#[cfg(unix)]
pub mod fd;
#[cfg(not(unix))]
#[path = "fd/unsupported.rs"]
pub mod fd;
// The registrar the keyed and descriptor VFSes stand on, for the test suites' simulated disk
// (crates/tests, fuzz), which reach cipherlite-sys only through this crate.
#[doc(hidden)]
pub use cipherlite_sys::shim;
mod file;
mod file_codec;
mod format;
mod journal;
mod journal_copy;
mod key_source;
mod main_db;
mod private_wal_index;
mod shadow_file;
#[cfg(test)]
mod test_support;
#[cfg(test)]
mod tests;
mod wal;
mod wal_index;
mod written_images;

use cipherlite_codec::{self as codec, Page1Layout, DEFAULT_PAGE_SIZE};
pub use cipherlite_codec::{AegisAlgorithm, Argon2Costs, CipherScheme};
use cipherlite_sys::ffi;
use shim::{Registered, VfsShim};
// Every callback from C, the files' included, runs inside it.
use shim::guard;
use std::{
    ffi::{c_char, c_int, c_void, CStr, CString},
    ptr,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc,
    },
};

use base_file::OwnedBaseFile;
pub use file_codec::FileCodec;
use key_source::KeySource;
pub use key_source::VfsKey;
pub use private_wal_index::{check_wal_index_available, WalIndexRefusal};
pub use wal::{committed_frames, CommittedFrame, WalFrames};

/// The page size of every encrypted database (SQLCipher 4's default;
/// docs/sqlcipher4-format.md §1).
pub const PAGE_SIZE: usize = DEFAULT_PAGE_SIZE;

/// A file-control opcode of the keyed VFS (outside SQLite's own numbers), for a main
/// database file through `sqlite3_file_control(db, "main", FCNTL_RELEASE_FILE, &mut n)`:
/// `n = 1` makes the connection let go of its file (the OS handle closed, every later read
/// or write failing; `SQLITE_BUSY` while it has a journal or WAL open), so that the file
/// can be replaced where an open file can't be (Windows: the key lifecycle's rename);
/// `n = 0` asks whether it has, and sets `n` to 1 if so.
pub const FCNTL_RELEASE_FILE: c_int = 0x4c43_0001;

/// Bytes SQLite must leave unused at the end of every page of an encrypted database (IV and
/// HMAC): what the binding sets with `SQLITE_FCNTL_RESERVE_BYTES` on a new file.
pub const RESERVE_BYTES: c_int = codec::RESERVE as c_int;

/// Test hooks (feature `fault-injection`): page encryption fails as if the random source
/// or the cipher had failed; the VFS's buffer allocations fail as if memory ran out.
#[cfg(feature = "fault-injection")]
pub mod fault_injection {
    use std::sync::atomic::{AtomicI64, Ordering};

    static COUNTDOWN: AtomicI64 = AtomicI64::new(-1);

    /// The `n`-th page encryption from now on fails, and every one after it (negative:
    /// none), on every thread.
    pub fn fail_encryption_after(n: i64) {
        COUNTDOWN.store(n, Ordering::SeqCst);
    }

    pub(crate) fn encryption_fails() -> bool {
        counts_down(&COUNTDOWN)
    }

    static ALLOCATION_COUNTDOWN: AtomicI64 = AtomicI64::new(-1);
    static ALLOCATIONS: AtomicI64 = AtomicI64::new(0);

    /// The `n`-th of the VFS's fallible buffer allocations (page images, frame assembly,
    /// the key check's page 1 copies) from now on fails, and every one after it (negative:
    /// none), on every thread.
    pub fn fail_allocation_after(n: i64) {
        ALLOCATION_COUNTDOWN.store(n, Ordering::SeqCst);
    }

    /// How many fallible buffer allocations the VFS has attempted so far.
    pub fn allocations() -> i64 {
        ALLOCATIONS.load(Ordering::SeqCst)
    }

    pub(crate) fn allocation_fails() -> bool {
        ALLOCATIONS.fetch_add(1, Ordering::SeqCst);
        counts_down(&ALLOCATION_COUNTDOWN)
    }

    fn counts_down(countdown: &AtomicI64) -> bool {
        let left = countdown.load(Ordering::SeqCst);
        if left < 0 {
            return false;
        }
        if left > 0 {
            countdown.store(left - 1, Ordering::SeqCst);
            return false;
        }
        true
    }
}

/// A zeroed buffer of `len` bytes, or `SQLITE_NOMEM` when it can't be allocated: the VFS's
/// large buffers (page images and frames, up to 64 KiB each) fail the call that needs them
/// instead of aborting the process.
pub(crate) fn try_zeroed(len: usize) -> Result<Vec<u8>, c_int> {
    let mut buf = try_buffer(len)?;
    buf.resize(len, 0);
    Ok(buf)
}

/// A copy of `bytes` in a new buffer, or `SQLITE_NOMEM` (see [`try_zeroed`]).
pub(crate) fn try_copy(bytes: &[u8]) -> Result<Vec<u8>, c_int> {
    let mut buf = try_buffer(bytes.len())?;
    buf.extend_from_slice(bytes);
    Ok(buf)
}

fn try_buffer(capacity: usize) -> Result<Vec<u8>, c_int> {
    #[cfg(feature = "fault-injection")]
    if fault_injection::allocation_fails() {
        return Err(ffi::SQLITE_NOMEM);
    }
    let mut buf = Vec::new();
    buf.try_reserve_exact(capacity)
        .map_err(|_| ffi::SQLITE_NOMEM)?;
    Ok(buf)
}

/// Wipes what opening or closing an encrypted database left of its key on this thread's
/// stack (see [`codec::scrub_stack`]); the binding calls it after each.
pub fn scrub_key_residue() {
    codec::scrub_stack();
}

/// Which page 1 a newly created database gets (existing files keep theirs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NewFileLayout {
    /// SQLite3 Multiple Ciphers' `legacy=0` page 1 (Evolu's choice, the default).
    Sqlite3mc,
    /// SQLCipher's page 1, which SQLCipher's own tools open.
    SqlCipher,
}

impl From<NewFileLayout> for Page1Layout {
    fn from(l: NewFileLayout) -> Self {
        match l {
            NewFileLayout::Sqlite3mc => Page1Layout::Sqlite3mc,
            NewFileLayout::SqlCipher => Page1Layout::SqlCipher,
        }
    }
}

/// The state behind one registered VFS (registered by [`shim::register`]).
pub(crate) struct KeyedVfs {
    base: *mut ffi::sqlite3_vfs,
    key: Arc<KeySource>,
    new_layout: NewFileLayout,
    /// The page size of every database this VFS encrypts (SQLCipher can't tell it from
    /// an encrypted file; the owner gives it).
    page_size: usize,
    /// Whether rollback journals' record checksums over the plaintext are accepted (see
    /// `journal`): only when the owner asks, to roll back a hot journal SQLite3 Multiple
    /// Ciphers left.
    plaintext_journal_checksums: std::sync::atomic::AtomicBool,
    /// The last refusal of this VFS's files with a reason SQLite's message for the code
    /// would not give (see [`refusal_message`]), taken by the error it caused.
    refusal: std::sync::Mutex<Option<(c_int, &'static str)>>,
}

/// What [`KeyedVfsHandle::probe_other_formats`] found out about a database the VFS's key
/// doesn't open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FormatProbe {
    /// The format (cipher and AEGIS algorithm) the same key opens it in.
    pub opens: Option<CipherScheme>,
    /// The reserve SQLite3MC's AEGIS page 1 gives in clear (48 for the AEGIS-128
    /// algorithms, 64 for the AEGIS-256 ones), if page 1 reads like one.
    pub aegis_reserve: Option<usize>,
}

/// Page size and reserve of page 1's header bytes 16..24 if they read like SQLite3MC's
/// AEGIS page 1 in clear: a valid page size, file format versions 1 or 2, the reserve of an
/// AEGIS algorithm (48 or 64) and the payload fractions SQLite always writes (64, 32, 32).
/// A SQLCipher page 1 has random bytes there, or the same header with 80 reserved bytes.
pub(crate) fn aegis_clear_header(page: &[u8]) -> Option<(usize, usize)> {
    let header = page.get(16..24)?;
    let page_size = match u16::from_be_bytes([header[0], header[1]]) {
        1 => codec::MAX_PAGE_SIZE,
        n if usize::from(n).is_power_of_two() && usize::from(n) >= codec::MIN_PAGE_SIZE => {
            usize::from(n)
        }
        _ => return None,
    };
    let versions = (1..=2).contains(&header[2]) && (1..=2).contains(&header[3]);
    let reserve = usize::from(header[4]);
    let aegis = codec::AegisAlgorithm::ALL
        .iter()
        .any(|a| a.reserve() == reserve);
    (versions && aegis && header[5..8] == [64, 32, 32]).then_some((page_size, reserve))
}

/// A registered keyed VFS. Dropping it unregisters the VFS and wipes the key; every
/// connection using it must be closed first.
pub struct KeyedVfsHandle {
    registered: Registered<KeyedVfs>,
}

static NEXT_VFS_ID: AtomicU64 = AtomicU64::new(1);

impl KeyedVfsHandle {
    /// Registers a new VFS that encrypts with `key` (copied; the caller wipes its copy),
    /// over the default VFS.
    pub fn register(
        key: &[u8; codec::KEY_SIZE],
        new_layout: NewFileLayout,
    ) -> Result<KeyedVfsHandle, c_int> {
        Self::register_over(key, new_layout, None)
    }

    /// [`register`](Self::register) over the VFS named `base` (the default when `None`),
    /// which must stay registered while this one is: the test suites put a simulated
    /// disk (power loss, injected faults) underneath.
    pub fn register_over(
        key: &[u8; codec::KEY_SIZE],
        new_layout: NewFileLayout,
        base: Option<&CStr>,
    ) -> Result<KeyedVfsHandle, c_int> {
        Self::register_with(&VfsKey::Raw(key), new_layout, PAGE_SIZE, base)
    }

    /// A VFS for `key` (raw or passphrase) and databases of `page_size`-byte pages (a power
    /// of two, 512..=65536), over the VFS named `base` (the default when `None`).
    pub fn register_with(
        key: &VfsKey<'_>,
        new_layout: NewFileLayout,
        page_size: usize,
        base: Option<&CStr>,
    ) -> Result<KeyedVfsHandle, c_int> {
        Self::register_with_scheme(key, CipherScheme::SqlCipher4, new_layout, page_size, base)
    }

    /// [`register_with`](Self::register_with) for files in `scheme`'s page format (an
    /// AEGIS file's page 1 has one layout: `new_layout` is ignored for it).
    pub fn register_with_scheme(
        key: &VfsKey<'_>,
        scheme: CipherScheme,
        new_layout: NewFileLayout,
        page_size: usize,
        base: Option<&CStr>,
    ) -> Result<KeyedVfsHandle, c_int> {
        if !(codec::MIN_ENCRYPTED_PAGE_SIZE..=codec::MAX_PAGE_SIZE).contains(&page_size)
            || !page_size.is_power_of_two()
        {
            return Err(ffi::SQLITE_MISUSE);
        }
        // Argon2id takes passphrases shorter than 4 GiB and costs within its bounds
        // (`KeySource::key_for` relies on it).
        if let VfsKey::Passphrase {
            passphrase, argon2, ..
        } = key
        {
            if u32::try_from(passphrase.len()).is_err() {
                return Err(ffi::SQLITE_TOOBIG);
            }
            if scheme.is_aegis() && argon2.check().is_err() {
                return Err(ffi::SQLITE_MISUSE);
            }
        }
        let base_name = base.map_or(ptr::null(), CStr::as_ptr);
        // SAFETY: sqlite3_vfs_find takes a NUL-terminated name or NULL (the default VFS);
        // the VFS it returns stays registered per this function's contract.
        let base = unsafe { ffi::sqlite3_vfs_find(base_name) };
        if base.is_null() {
            return Err(ffi::SQLITE_ERROR);
        }
        let id = NEXT_VFS_ID.fetch_add(1, Ordering::Relaxed);
        let name = CString::new(format!("cipherlite-{id}")).map_err(|_| ffi::SQLITE_ERROR)?;
        let registered = shim::register(
            name,
            KeyedVfs {
                base,
                key: Arc::new(KeySource::with_scheme(key, scheme)),
                new_layout,
                page_size,
                plaintext_journal_checksums: std::sync::atomic::AtomicBool::new(false),
                refusal: std::sync::Mutex::new(None),
            },
        )?;
        LIVE_KEYED_VFS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(registered.vfs() as usize);
        Ok(KeyedVfsHandle { registered })
    }

    /// How many keys this VFS derived from its passphrase so far.
    #[cfg(test)]
    pub(crate) fn key_derivations(&self) -> usize {
        self.registered.state().key.derivations()
    }

    /// The page size this VFS encrypts with.
    pub fn page_size(&self) -> usize {
        self.registered.state().page_size
    }

    /// The page format this VFS reads and writes.
    pub fn scheme(&self) -> CipherScheme {
        self.registered.state().key.scheme()
    }

    /// Bytes reserved per page in this VFS's format: what the owner sets with
    /// `SQLITE_FCNTL_RESERVE_BYTES` on a new file.
    pub fn reserve_bytes(&self) -> c_int {
        self.scheme().reserve() as c_int
    }

    /// For a database this VFS's key doesn't open: the format (cipher and AEGIS algorithm)
    /// the same key opens it in, if any, and the reserve page 1's header in clear gives if
    /// it reads like SQLite3MC's AEGIS page 1 (to name the `cipher` and `algorithm` options
    /// in the error). Tries the formats that can be this file's: SQLCipher 4 (whose page 1
    /// has no clear header, or one with 80 reserved bytes) from an AEGIS VFS; the AEGIS
    /// algorithms whose reserve the clear header gives (48: the AEGIS-128 ones, 64: the
    /// AEGIS-256 ones); not those a raw key of another length can't be the key of. Reads
    /// page 1 through the VFS underneath and writes nothing; costs a key derivation per
    /// key length tried for a passphrase.
    pub fn probe_other_formats(&self, path: &str) -> FormatProbe {
        let none = FormatProbe::default();
        let vfs = self.registered.state();
        let Some(mut file) = OwnedBaseFile::open_existing(vfs.base, path, ffi::SQLITE_OPEN_MAIN_DB)
        else {
            return none;
        };
        let Ok(size) = file.file().size() else {
            return none;
        };
        let have = (size.max(0) as usize).min(codec::MAX_PAGE_SIZE);
        if have < codec::MIN_PAGE_SIZE {
            return none;
        }
        let Ok(mut page) = try_zeroed(have) else {
            return none;
        };
        if file.file().read(&mut page, 0) != ffi::SQLITE_OK {
            return none;
        }
        let own = vfs.key.scheme();
        let aegis_reserve = aegis_clear_header(&page).map(|(_, reserve)| reserve);
        let page_size = aegis_clear_header(&page).map_or(vfs.page_size, |(size, _)| size);
        let mut candidates: Vec<CipherScheme> = Vec::new();
        if own.is_aegis() {
            candidates.push(CipherScheme::SqlCipher4);
        }
        if let Some(reserve) = aegis_reserve {
            candidates.extend(
                codec::AegisAlgorithm::ALL
                    .into_iter()
                    .map(CipherScheme::aegis)
                    .filter(|scheme| scheme.reserve() == reserve),
            );
        }
        candidates.retain(|&scheme| scheme != own);
        let Some(page1) = page.get(..page_size) else {
            return FormatProbe {
                opens: None,
                aegis_reserve,
            };
        };
        let Ok(salt) = codec::read_salt(page1) else {
            return none;
        };
        // One key per key length and KDF: the AEGIS-256 algorithms share a passphrase's
        // key, as the AEGIS-128 ones do.
        type KeyOf = ((bool, usize), zeroize::Zeroizing<[u8; codec::KEY_SIZE]>);
        let mut keys: Vec<KeyOf> = Vec::new();
        for scheme in candidates {
            let kind = (scheme.is_aegis(), scheme.key_size());
            let key = match keys.iter().find(|(k, _)| *k == kind) {
                Some((_, key)) => key.clone(),
                None => {
                    let derived = if kind == (own.is_aegis(), own.key_size()) {
                        vfs.key.key_for(&salt)
                    } else {
                        vfs.key.key_in(scheme, &salt)
                    };
                    let Ok(key) = derived else { continue };
                    keys.push((kind, key.clone()));
                    key
                }
            };
            let opens = codec::PageCodec::with_scheme(scheme, &key, salt, page_size)
                .is_ok_and(|c| c.detect_page1_layout(page1).is_ok());
            if opens {
                return FormatProbe {
                    opens: Some(scheme),
                    aegis_reserve,
                };
            }
        }
        FormatProbe {
            opens: None,
            aegis_reserve,
        }
    }

    /// For a database this VFS's key doesn't open: the page size the key opens its page 1
    /// with, if any (to name the `pageSize` option in the error). Reads the file through the
    /// VFS underneath.
    pub fn page_size_that_opens(&self, path: &str) -> Option<usize> {
        let vfs = self.registered.state();
        let mut file = OwnedBaseFile::open_existing(vfs.base, path, ffi::SQLITE_OPEN_MAIN_DB)?;
        let size = file.file().size().ok()?;
        let have = (size.max(0) as usize).min(codec::MAX_PAGE_SIZE);
        let mut page = try_zeroed(have).ok()?;
        if have < codec::MIN_PAGE_SIZE || file.file().read(&mut page, 0) != ffi::SQLITE_OK {
            return None;
        }
        let salt = codec::read_salt(&page).ok()?;
        let mut page_size = codec::MIN_PAGE_SIZE;
        while page_size <= have {
            let opens = vfs
                .key
                .codec_for(salt, page_size)
                .is_some_and(|c| c.detect_page1_layout(&page[..page_size]).is_ok());
            if opens {
                return Some(page_size);
            }
            page_size *= 2;
        }
        None
    }

    /// The AES key of the database file at `path` (a passphrase's is derived from the
    /// file's salt), for the key lifecycle's raw page reads.
    pub fn key_for_database(
        &self,
        path: &str,
    ) -> Option<zeroize::Zeroizing<[u8; codec::KEY_SIZE]>> {
        let vfs = self.registered.state();
        let mut file = OwnedBaseFile::open_existing(vfs.base, path, ffi::SQLITE_OPEN_MAIN_DB)?;
        let mut salt = [0u8; codec::SALT_SIZE];
        if file.file().read(&mut salt, 0) != ffi::SQLITE_OK {
            return None;
        }
        vfs.key.key_for(&salt).ok()
    }

    /// The name to pass to `sqlite3_open_v2`.
    pub fn name(&self) -> &CStr {
        self.registered.name()
    }

    /// Accept rollback-journal record checksums over the plaintext too (as SQLite3
    /// Multiple Ciphers writes them), for journals opened from now on: the owner's explicit
    /// choice, to roll back a hot journal SQLite3MC left. Whether such a checksum matches
    /// depends on the plaintext, so a planted journal learns whether a guess was right: never
    /// the default (docs/sqlcipher4-format.md §11).
    pub fn accept_plaintext_journal_checksums(&self) {
        self.registered
            .state()
            .plaintext_journal_checksums
            .store(true, Ordering::Release);
    }
}

impl Drop for KeyedVfsHandle {
    fn drop(&mut self) {
        // No longer a keyed VFS for `refusal_message` (before `registered` unregisters it
        // and drops the state).
        let mut live = LIVE_KEYED_VFS.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|&v| v != self.registered.vfs() as usize);
    }
}

impl KeyedVfs {
    fn base_vfs(&self) -> &ffi::sqlite3_vfs {
        // SAFETY: the default VFS outlives every registration.
        unsafe { &*self.base }
    }

    /// The codec for an existing database file whose first page is `page1` (and whose
    /// hot journal, if any, is at `journal_path`), or `SQLITE_NOTADB` when the key opens
    /// neither — before SQLite reads or writes anything.
    fn codec_for_existing(&self, page1: &[u8], db_path: Option<&str>) -> Result<FileCodec, c_int> {
        if let Some(codec) = self.try_page1(page1) {
            return Ok(codec);
        }
        let open = |suffix: &str, kind: c_int| {
            db_path.and_then(|p| {
                OwnedBaseFile::open_existing(self.base, &format!("{p}{suffix}"), kind)
            })
        };
        let mut journal = open("-journal", ffi::SQLITE_OPEN_MAIN_JOURNAL);
        let mut wal = open("-wal", ffi::SQLITE_OPEN_WAL);
        // Page 1 may be torn by the crash that left a hot journal or a WAL: a copy there
        // proves the key (read through the VFS underneath, like every other byte).
        let mut copies: Vec<Vec<u8>> = Vec::new();
        if let Some(j) = journal.as_mut() {
            copies.extend(journal::journal_page1_images(j.file(), self.page_size)?);
        }
        if let Some(w) = wal.as_mut() {
            copies.extend(wal::wal_page1_images(w.file(), self.page_size, 16)?);
        }
        // Every copy of an intact file's page 1 has its salt. A key derivation per distinct
        // salt would let planted copies make one open derive a passphrase's key (PBKDF2,
        // 256,000 iterations) again and again: page 1's own salt and one other, no more.
        let own_salt = codec::read_salt(page1).ok();
        let mut other_salt = None;
        for image in &copies {
            let Some(salt) = image
                .get(..self.page_size)
                .and_then(|i| codec::read_salt(i).ok())
            else {
                continue;
            };
            if Some(salt) != own_salt {
                match other_salt {
                    None => other_salt = Some(salt),
                    Some(other) if other != salt => continue,
                    Some(_) => {}
                }
            }
            if let Some(codec) = self.try_page1(image) {
                return Ok(codec);
            }
        }
        // A crash during the very first transaction: page 1 never reached the file (it
        // stays zero), and the hot journal says the database was empty. Rolling back
        // truncates it to nothing, so it is a new database.
        if codec::is_all_zero(page1)
            && journal
                .as_mut()
                .and_then(|j| journal::journal_original_size(j.file(), self.page_size))
                == Some(0)
        {
            return self.codec_for_new();
        }
        Err(self.derivation_refusal().unwrap_or(ffi::SQLITE_NOTADB))
    }

    /// `SQLITE_NOMEM`, with its reason, when the key could not be derived for want of
    /// memory (Argon2id's `mcost`): not a wrong key.
    fn derivation_refusal(&self) -> Option<c_int> {
        self.key.ran_out_of_memory().then(|| {
            self.refused(
                ffi::SQLITE_NOMEM,
                "out of memory deriving the key: Argon2id could not allocate the memory the \"mcost\" option asks for",
            );
            ffi::SQLITE_NOMEM
        })
    }

    fn try_page1(&self, image: &[u8]) -> Option<FileCodec> {
        let image = image.get(..self.page_size)?;
        let salt = codec::read_salt(image).ok()?;
        let page_codec = self.key.codec_for(salt, self.page_size)?;
        let layout = page_codec.detect_page1_layout(image).ok()?;
        Some(FileCodec::new(page_codec, layout))
    }

    fn codec_for_new(&self) -> Result<FileCodec, c_int> {
        let salt = codec::random_salt().map_err(|_| ffi::SQLITE_IOERR)?;
        let page_codec = self
            .key
            .codec_for(salt, self.page_size)
            .ok_or_else(|| self.derivation_refusal().unwrap_or(ffi::SQLITE_IOERR))?;
        Ok(FileCodec::new_unsettled(
            page_codec,
            self.new_layout.into(),
            self.key.clone(),
        ))
    }

    pub(crate) fn page_size(&self) -> usize {
        self.page_size
    }

    pub(crate) fn accepts_plaintext_journal_checksums(&self) -> bool {
        self.plaintext_journal_checksums.load(Ordering::Acquire)
    }

    /// Notes why a file of this VFS refused with `code`, for the error SQLite reports next.
    pub(crate) fn refused(&self, code: c_int, reason: &'static str) {
        if let Ok(mut slot) = self.refusal.lock() {
            *slot = Some((code, reason));
        }
    }

    fn take_refusal(&self, code: c_int) -> Option<&'static str> {
        let mut slot = self.refusal.lock().ok()?;
        match *slot {
            Some((c, reason)) if c == code => {
                *slot = None;
                Some(reason)
            }
            _ => None,
        }
    }
}

impl VfsShim for KeyedVfs {
    const VERSION: c_int = 3;

    fn base(&self) -> *mut ffi::sqlite3_vfs {
        self.base
    }

    fn file_size(&self) -> c_int {
        file::file_size_with(self.base_vfs().szOsFile)
    }

    unsafe fn open(
        &self,
        name: *const c_char,
        out: *mut ffi::sqlite3_file,
        flags: c_int,
        out_flags: *mut c_int,
    ) -> c_int {
        // SAFETY: SQLite's xOpen contract (this trait method's); on the connection's thread.
        unsafe {
            // (Only tried: a failure fails the holding database's own calls, not this.)
            let _ = file::write_held_pages_before(ptr::null_mut());
            file::open(self, name, out, flags, out_flags)
        }
    }

    unsafe fn delete(&self, name: *const c_char, sync_dir: c_int) -> c_int {
        // Deleting a journal or a super-journal is SQLite's commit point in DELETE mode:
        // the database pages held back must be on disk first, or the delete must not be.
        // SAFETY: forwarding SQLite's arguments to the base VFS; on the connection's thread.
        unsafe {
            let rc = file::write_held_pages_or_fail();
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            shim::forward::delete(self.base, name, sync_dir)
        }
    }

    unsafe fn access(&self, name: *const c_char, flags: c_int, out: *mut c_int) -> c_int {
        // SAFETY: forwarding SQLite's arguments to the base VFS; on the connection's thread.
        unsafe {
            let _ = file::write_held_pages_before(ptr::null_mut());
            shim::forward::access(self.base, name, flags, out)
        }
    }
}

/// The reason a keyed VFS gave for refusing with `code` on connection `db`'s main database
/// (for [`cipherlite_sqlite::set_error_detail`]): `None` for another VFS, or another error.
///
/// # Safety
/// `db` is an open connection handle.
pub unsafe fn refusal_message(db: *mut ffi::sqlite3, code: c_int) -> Option<&'static str> {
    let mut vfs: *mut ffi::sqlite3_vfs = ptr::null_mut();
    // SAFETY: db is an open connection (the caller's contract); the op writes the main
    // database's VFS pointer into vfs.
    let rc = unsafe {
        ffi::sqlite3_file_control(
            db,
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_VFS_POINTER,
            ptr::addr_of_mut!(vfs).cast::<c_void>(),
        )
    };
    if rc != ffi::SQLITE_OK || vfs.is_null() {
        return None;
    }
    let live = LIVE_KEYED_VFS.lock().ok()?;
    if !live.contains(&(vfs as usize)) {
        return None;
    }
    // SAFETY: a registered KeyedVfs (in the list from registration until it is dropped,
    // which takes the same lock).
    unsafe { shim::state_of::<KeyedVfs>(vfs) }.take_refusal(code)
}

/// The addresses of the registered keyed VFSes, to tell one from another VFS.
static LIVE_KEYED_VFS: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());
