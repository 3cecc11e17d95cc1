//! The files the keyed VFS opens: how each kind maps SQLite's reads and writes onto
//! encrypted page images.

use super::{
    checksum::{be32, wal_frame_checksum},
    guard, KeyedVfs, PAGE_SIZE,
};
use crate::codec::{journal_checksum, Page1Layout, PageCodec, KEY_SIZE};
use crate::sqlite::ffi;
use std::{
    ffi::{c_int, c_void, CStr},
    ptr,
    sync::{
        atomic::{AtomicU8, Ordering},
        Arc, Mutex, RwLock,
    },
};
use zeroize::Zeroizing;

/// A database file's codec, shared by the database file and its journal and WAL (whose
/// page images are encrypted exactly like the database's, page 1 in the same layout).
pub struct FileCodec {
    codec: RwLock<PageCodec>,
    layout: AtomicU8,
    /// For a file that was empty when opened: the key, until page 1 is settled. Another
    /// connection may create the database first, with its own salt; the first page 1 read
    /// then adopts that salt (see `adopt_salt`). Wiped once page 1 is read or written.
    pending_key: Mutex<Option<Zeroizing<[u8; KEY_SIZE]>>>,
}

impl FileCodec {
    pub(super) fn new(codec: PageCodec, layout: Page1Layout) -> Self {
        FileCodec {
            codec: RwLock::new(codec),
            layout: AtomicU8::new(layout_to_u8(layout)),
            pending_key: Mutex::new(None),
        }
    }

    /// A codec for a new (empty) file: its salt is provisional until page 1 is settled.
    pub(super) fn new_unsettled(
        codec: PageCodec,
        layout: Page1Layout,
        key: &[u8; KEY_SIZE],
    ) -> Self {
        let file_codec = FileCodec::new(codec, layout);
        if let Ok(mut pending) = file_codec.pending_key.lock() {
            *pending = Some(Zeroizing::new(*key));
        }
        file_codec
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
        let Ok(salt) = crate::codec::read_salt(image) else {
            return;
        };
        let Ok(mut codec) = self.codec.write() else {
            return;
        };
        if codec.salt() != salt {
            if let Ok(adopted) = PageCodec::new(key, salt, P) {
                *codec = adopted;
            }
        }
    }

    fn is_unsettled(&self) -> bool {
        self.pending_key.lock().is_ok_and(|p| p.is_some())
    }

    fn settle(&self) {
        if let Ok(mut pending) = self.pending_key.lock() {
            pending.take();
        }
    }

    fn encrypt(&self, pgno: u32, plaintext: &[u8], out: &mut [u8]) -> c_int {
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

    /// Decrypts in place; on failure the buffer keeps the ciphertext (never plaintext).
    ///
    /// The reserved bytes (IV and HMAC on disk) are handed to SQLite as zeros. SQLite never
    /// writes them and zero-fills new pages, so every page it holds has a zero reserve: the
    /// WAL checksums it computes when writing a page equal the ones computed over the same
    /// page decrypted again during recovery.
    fn decrypt(&self, pgno: u32, page: &mut [u8]) -> bool {
        if self.is_unsettled() && crate::codec::is_all_zero(page) {
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
            let reserve_start = page.len() - crate::codec::RESERVE;
            page[reserve_start..].fill(0);
        }
        ok
    }
}

fn layout_to_u8(l: Page1Layout) -> u8 {
    match l {
        Page1Layout::SqlCipher => 1,
        Page1Layout::Sqlite3mc => 0,
    }
}

const P: usize = PAGE_SIZE;
const WAL_HEADER: usize = 32;
const WAL_FRAME_HEADER: usize = 24;
const JOURNAL_MAGIC: [u8; 8] = [0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7];

/// Rollback-journal bookkeeping: which page number a page image belongs to, and the
/// checksums needed to translate SQLCipher's (ciphertext) record checksums.
#[derive(Default)]
struct JournalTrack {
    last_u32_write: Option<(i64, u32)>,
    last_u32_read: Option<(i64, u32)>,
    header_offset: Option<i64>,
    nonce: u32,
    /// The last page image read: its offset, the checksum over what was on disk, the
    /// checksum over what SQLite got, and whether it decrypted.
    last_page_read: Option<(i64, u32, u32, bool)>,
}

/// WAL bookkeeping: the page number of the frame being written, and both checksum chains
/// while SQLite recovers the WAL (see `read_wal`).
#[derive(Default)]
struct WalTrack {
    last_frame_header_write: Option<(i64, u32)>,
    big_endian: bool,
    chain_plain: (u32, u32),
    chain_cipher: (u32, u32),
}

enum Kind {
    Main,
    Journal(JournalTrack),
    Wal(WalTrack),
}

struct FileState {
    kind: Kind,
    codec: Arc<FileCodec>,
    scratch: Vec<u8>,
}

/// The `sqlite3_file` SQLite allocates for us: our methods, then the OS file's own
/// structure at `inner` (the tail of the same allocation).
#[repr(C)]
struct CipherFile {
    base: ffi::sqlite3_file,
    inner: *mut ffi::sqlite3_file,
    state: *mut FileState,
}

const fn header_size() -> usize {
    std::mem::size_of::<CipherFile>().next_multiple_of(16)
}

/// `szOsFile` of the keyed VFS: our header plus the base VFS's file.
pub(super) fn file_size_with(base_size: c_int) -> c_int {
    header_size() as c_int + base_size
}

/// # Safety
/// `f` must be a file opened by `open` with our methods.
unsafe fn parts<'a>(f: *mut ffi::sqlite3_file) -> (*mut ffi::sqlite3_file, &'a mut FileState) {
    // SAFETY: per contract, f is a CipherFile with a live state box.
    unsafe {
        let cf = &*f.cast::<CipherFile>();
        (cf.inner, &mut *cf.state)
    }
}

/// # Safety
/// `inner` must be an open OS file.
unsafe fn methods<'a>(inner: *mut ffi::sqlite3_file) -> &'a ffi::sqlite3_io_methods {
    // SAFETY: an open file always has methods.
    unsafe { &*(*inner).pMethods }
}

/// # Safety
/// `inner` must be an open OS file; `buf` valid for `len` bytes.
unsafe fn inner_read(
    inner: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    len: c_int,
    off: i64,
) -> c_int {
    // SAFETY: per contract.
    unsafe {
        match methods(inner).xRead {
            Some(f) => f(inner, buf, len, off),
            None => ffi::SQLITE_IOERR_READ,
        }
    }
}

/// # Safety
/// As for `inner_read`.
unsafe fn inner_write(
    inner: *mut ffi::sqlite3_file,
    buf: *const c_void,
    len: c_int,
    off: i64,
) -> c_int {
    // SAFETY: per contract.
    unsafe {
        match methods(inner).xWrite {
            Some(f) => f(inner, buf, len, off),
            None => ffi::SQLITE_IOERR_WRITE,
        }
    }
}

/// Opens a file through the keyed VFS.
///
/// # Safety
/// Called from xOpen with its arguments: `out` has `szOsFile` bytes.
pub(super) unsafe fn open(
    vfs: &KeyedVfs,
    name: *const std::ffi::c_char,
    out: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let base = vfs.base();
    let Some(base_open) = base.xOpen else {
        return ffi::SQLITE_CANTOPEN;
    };
    let main = flags & ffi::SQLITE_OPEN_MAIN_DB != 0;
    let journal = flags & ffi::SQLITE_OPEN_MAIN_JOURNAL != 0;
    let wal = flags & ffi::SQLITE_OPEN_WAL != 0;
    let temporary = flags
        & (ffi::SQLITE_OPEN_TEMP_DB
            | ffi::SQLITE_OPEN_TEMP_JOURNAL
            | ffi::SQLITE_OPEN_SUBJOURNAL
            | ffi::SQLITE_OPEN_TRANSIENT_DB)
        != 0;
    // SAFETY: out is ours to initialise; a null pMethods tells SQLite nothing is open.
    unsafe { (*out).pMethods = ptr::null() };
    if !(main || journal || wal) {
        if temporary || name.is_null() {
            // Temporary files stay in memory (SQLITE_TEMP_STORE=3); one that would reach
            // the disk unencrypted is refused rather than written in clear.
            return ffi::SQLITE_CANTOPEN;
        }
        // Super-journals hold file names only: the OS file, untouched.
        // SAFETY: out has room for the base file.
        return unsafe { base_open(vfs.base, name, out, flags, out_flags) };
    }

    // SAFETY: the inner file lives in the tail of `out`'s allocation.
    let inner = unsafe {
        out.cast::<u8>()
            .add(header_size())
            .cast::<ffi::sqlite3_file>()
    };
    // SAFETY: opening the OS file into its part of the allocation.
    let rc = unsafe { base_open(vfs.base, name, inner, flags, out_flags) };
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    // SAFETY: inner is open; name (if any) is SQLite's NUL-terminated file name.
    let result = unsafe {
        if main {
            main_codec(vfs, inner, name).map(|c| (Kind::Main, c))
        } else {
            let kind = if journal {
                Kind::Journal(JournalTrack::default())
            } else {
                Kind::Wal(WalTrack::default())
            };
            database_codec(name).map(|c| (kind, c))
        }
    };
    match result {
        Ok((kind, codec)) => {
            let state = Box::into_raw(Box::new(FileState {
                kind,
                codec,
                scratch: vec![0; P + WAL_FRAME_HEADER],
            }));
            // SAFETY: out has room for a CipherFile header (szOsFile includes it).
            unsafe {
                out.cast::<CipherFile>().write(CipherFile {
                    base: ffi::sqlite3_file {
                        pMethods: &IO_METHODS,
                    },
                    inner,
                    state,
                });
            }
            ffi::SQLITE_OK
        }
        Err(rc) => {
            // SAFETY: inner was opened above and is closed once.
            unsafe {
                if let Some(close) = methods(inner).xClose {
                    close(inner);
                }
            }
            rc
        }
    }
}

/// The codec for the main database file just opened as `inner`.
///
/// # Safety
/// `inner` is open; `name` null or NUL-terminated.
unsafe fn main_codec(
    vfs: &KeyedVfs,
    inner: *mut ffi::sqlite3_file,
    name: *const std::ffi::c_char,
) -> Result<Arc<FileCodec>, c_int> {
    let mut size: ffi::sqlite3_int64 = 0;
    // SAFETY: inner is open.
    let rc = unsafe {
        match methods(inner).xFileSize {
            Some(f) => f(inner, &mut size),
            None => ffi::SQLITE_IOERR_FSTAT,
        }
    };
    if rc != ffi::SQLITE_OK {
        return Err(rc);
    }
    if size == 0 {
        return vfs.codec_for_new().map(Arc::new);
    }
    let mut page1 = vec![0u8; P];
    // SAFETY: page1 has P bytes.
    let rc = unsafe { inner_read(inner, page1.as_mut_ptr().cast(), P as c_int, 0) };
    if rc != ffi::SQLITE_OK {
        // Shorter than one page and not empty: not an encrypted database.
        return Err(ffi::SQLITE_NOTADB);
    }
    let db_path = if name.is_null() {
        None
    } else {
        // SAFETY: SQLite's file names are NUL-terminated.
        unsafe { CStr::from_ptr(name) }.to_str().ok()
    };
    vfs.codec_for_existing(&page1, db_path).map(Arc::new)
}

/// The codec of the database a journal or WAL named `name` belongs to.
///
/// # Safety
/// `name` must be the journal/WAL name SQLite passed to xOpen.
unsafe fn database_codec(name: *const std::ffi::c_char) -> Result<Arc<FileCodec>, c_int> {
    if name.is_null() {
        return Err(ffi::SQLITE_CANTOPEN);
    }
    // SAFETY: per contract, SQLite can map this name back to its database file.
    let db = unsafe { ffi::sqlite3_database_file_object(name) };
    // SAFETY: a non-null result is an open sqlite3_file; we only trust it as ours when
    // its methods are ours.
    unsafe {
        if db.is_null() || !ptr::eq((*db).pMethods, &IO_METHODS) {
            return Err(ffi::SQLITE_CANTOPEN);
        }
        let (_, state) = parts(db);
        Ok(state.codec.clone())
    }
}

/// Page 1's image as saved in the rollback journal at `path` (its first records), if any.
/// The database size in pages before the transaction a hot journal at `path` belongs to
/// (the header's "original size" field).
pub(super) fn journal_original_size(path: &str) -> Option<u32> {
    use std::io::Read;
    let mut header = [0u8; 28];
    std::fs::File::open(path)
        .ok()?
        .read_exact(&mut header)
        .ok()?;
    (header[..8] == JOURNAL_MAGIC).then(|| be32(&header[16..20]))
}

/// The most recent image of page 1 among the first frames of the WAL at `path`, if any.
pub(super) fn wal_page1_image(path: &str) -> Option<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    const MAX_FRAMES: u64 = 100_000;
    let mut file = std::fs::File::open(path).ok()?;
    let mut header = [0u8; WAL_HEADER];
    file.read_exact(&mut header).ok()?;
    let magic = be32(&header[0..4]);
    if (magic != 0x377f_0682 && magic != 0x377f_0683) || be32(&header[8..12]) as usize != P {
        return None;
    }
    let frame = (WAL_FRAME_HEADER + P) as u64;
    let frames = (file
        .metadata()
        .ok()?
        .len()
        .saturating_sub(WAL_HEADER as u64)
        / frame)
        .min(MAX_FRAMES);
    let mut page1_at = None;
    let mut pgno = [0u8; 4];
    for i in 0..frames {
        let at = WAL_HEADER as u64 + i * frame;
        file.seek(SeekFrom::Start(at)).ok()?;
        file.read_exact(&mut pgno).ok()?;
        if be32(&pgno) == 1 {
            page1_at = Some(at + WAL_FRAME_HEADER as u64);
        }
    }
    let mut image = vec![0u8; P];
    file.seek(SeekFrom::Start(page1_at?)).ok()?;
    file.read_exact(&mut image).ok()?;
    Some(image)
}

pub(super) fn journal_page1_image(path: &str) -> Option<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let mut header = [0u8; 28];
    file.read_exact(&mut header).ok()?;
    if header[..8] != JOURNAL_MAGIC || be32(&header[24..28]) as usize != P {
        return None;
    }
    // Records start after the header, padded to the sector size (a power of two, 32..64K).
    let sector = be32(&header[20..24]) as u64;
    if !(32..=65536).contains(&sector) || !sector.is_power_of_two() {
        return None;
    }
    let mut record = vec![0u8; 4 + P + 4];
    let mut at = sector;
    for _ in 0..64 {
        file.seek(SeekFrom::Start(at)).ok()?;
        file.read_exact(&mut record).ok()?;
        if be32(&record[..4]) == 1 {
            return Some(record[4..4 + P].to_vec());
        }
        at += record.len() as u64;
    }
    None
}

static IO_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: Some(x_fetch),
    xUnfetch: Some(x_unfetch),
};

unsafe extern "C" fn x_close(f: *mut ffi::sqlite3_file) -> c_int {
    guard(ffi::SQLITE_IOERR_CLOSE, || {
        // SAFETY: SQLite closes each file once; we free the state box exactly then (and
        // never twice: the pointer is nulled).
        unsafe {
            let cf = &mut *f.cast::<CipherFile>();
            if cf.state.is_null() {
                return ffi::SQLITE_OK;
            }
            let rc = match methods(cf.inner).xClose {
                Some(close) => close(cf.inner),
                None => ffi::SQLITE_OK,
            };
            drop(Box::from_raw(cf.state));
            cf.state = ptr::null_mut();
            rc
        }
    })
}

unsafe extern "C" fn x_read(
    f: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amt: c_int,
    off: i64,
) -> c_int {
    guard(ffi::SQLITE_IOERR_READ, || {
        // SAFETY: f is ours; buf has amt writable bytes.
        unsafe {
            let (inner, state) = parts(f);
            let out = std::slice::from_raw_parts_mut(buf.cast::<u8>(), amt.max(0) as usize);
            match &mut state.kind {
                Kind::Main => read_main(inner, &state.codec, &mut state.scratch, out, off),
                Kind::Journal(track) => read_journal(inner, &state.codec, track, out, off),
                Kind::Wal(track) => read_wal(inner, &state.codec, track, out, off),
            }
        }
    })
}

unsafe extern "C" fn x_write(
    f: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amt: c_int,
    off: i64,
) -> c_int {
    guard(ffi::SQLITE_IOERR_WRITE, || {
        // SAFETY: f is ours; buf has amt readable bytes.
        unsafe {
            let (inner, state) = parts(f);
            let data = std::slice::from_raw_parts(buf.cast::<u8>(), amt.max(0) as usize);
            let FileState {
                kind,
                codec,
                scratch,
            } = state;
            match kind {
                Kind::Main => {
                    if data.len() != P || off % P as i64 != 0 {
                        // SQLite writes database pages whole; anything else would land
                        // in the file unencrypted.
                        return ffi::SQLITE_IOERR_WRITE;
                    }
                    write_page(inner, codec, scratch, page_number(off), data, off)
                }
                Kind::Journal(track) => {
                    if data.len() >= 16 && data[..8] == JOURNAL_MAGIC {
                        // A journal header: its checksum nonce applies to the records that
                        // follow (a live ROLLBACK may not read the header back).
                        track.header_offset = Some(off);
                        track.nonce = be32(&data[12..16]);
                    }
                    if data.len() == 4 {
                        track.last_u32_write = Some((off, be32(data)));
                    } else if data.len() == P {
                        match track.last_u32_write {
                            Some((o, pgno)) if o + 4 == off => {
                                return write_page(inner, codec, scratch, pgno, data, off)
                            }
                            _ => return ffi::SQLITE_IOERR_WRITE,
                        }
                    }
                    inner_write(inner, buf, amt, off)
                }
                Kind::Wal(track) => {
                    if data.len() == WAL_FRAME_HEADER {
                        track.last_frame_header_write = Some((off, be32(data)));
                    } else if data.len() == P {
                        let pgno = match track.last_frame_header_write {
                            Some((o, pgno)) if o + WAL_FRAME_HEADER as i64 == off => pgno,
                            // SQLite rewrites a frame of the current transaction in place
                            // (page only, walFrames' iReCksum path): its header is on disk.
                            _ if is_wal_page_offset(off) => {
                                match read_frame_page_number(inner, off) {
                                    Ok(pgno) => pgno,
                                    Err(rc) => return rc,
                                }
                            }
                            _ => return ffi::SQLITE_IOERR_WRITE,
                        };
                        return write_page(inner, codec, scratch, pgno, data, off);
                    } else if data.len() > WAL_HEADER {
                        return ffi::SQLITE_IOERR_WRITE;
                    }
                    inner_write(inner, buf, amt, off)
                }
            }
        }
    })
}

/// True if `off` is where a WAL frame's page starts (after the 32-byte header and the
/// frame's 24-byte header).
fn is_wal_page_offset(off: i64) -> bool {
    let first = (WAL_HEADER + WAL_FRAME_HEADER) as i64;
    off >= first && (off - first) % (WAL_FRAME_HEADER + P) as i64 == 0
}

/// The page number in the header of the WAL frame whose page starts at `page_off`.
///
/// # Safety
/// `inner` is open.
unsafe fn read_frame_page_number(
    inner: *mut ffi::sqlite3_file,
    page_off: i64,
) -> Result<u32, c_int> {
    let mut pgno = [0u8; 4];
    // SAFETY: reading 4 bytes into a 4-byte buffer.
    let rc = unsafe {
        inner_read(
            inner,
            pgno.as_mut_ptr().cast(),
            4,
            page_off - WAL_FRAME_HEADER as i64,
        )
    };
    if rc == ffi::SQLITE_OK {
        Ok(be32(&pgno))
    } else {
        Err(rc)
    }
}

fn page_number(off: i64) -> u32 {
    (off / P as i64 + 1) as u32
}

/// Encrypts `plaintext` as page `pgno` and writes the image at `off`.
///
/// # Safety
/// `inner` is open.
unsafe fn write_page(
    inner: *mut ffi::sqlite3_file,
    codec: &FileCodec,
    scratch: &mut [u8],
    pgno: u32,
    plaintext: &[u8],
    off: i64,
) -> c_int {
    let image = &mut scratch[..P];
    let rc = codec.encrypt(pgno, plaintext, image);
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    // SAFETY: image has P bytes.
    unsafe { inner_write(inner, image.as_ptr().cast(), P as c_int, off) }
}

/// Database reads: whole pages decrypt in place; smaller reads (the header at open, the
/// change counter) read their page into scratch and copy out the part asked for.
///
/// # Safety
/// `inner` is open.
unsafe fn read_main(
    inner: *mut ffi::sqlite3_file,
    codec: &FileCodec,
    scratch: &mut [u8],
    out: &mut [u8],
    off: i64,
) -> c_int {
    let p = P as i64;
    if out.len() == P && off % p == 0 {
        // SAFETY: out has P bytes.
        let rc = unsafe { inner_read(inner, out.as_mut_ptr().cast(), P as c_int, off) };
        if rc == ffi::SQLITE_IOERR_SHORT_READ && !crate::codec::is_all_zero(out) {
            // Part of a page (a truncated file): not a page SQLite may see as zero-padded.
            return corrupt(out);
        }
        if rc != ffi::SQLITE_OK {
            return rc; // a read wholly past the end: zero-filled by the OS VFS
        }
        return if codec.decrypt(page_number(off), out) {
            ffi::SQLITE_OK
        } else {
            corrupt(out)
        };
    }
    let page_start = off - off % p;
    if out.is_empty() || off + out.len() as i64 > page_start + p {
        return ffi::SQLITE_IOERR_READ;
    }
    let page = &mut scratch[..P];
    // SAFETY: page has P bytes.
    let rc = unsafe { inner_read(inner, page.as_mut_ptr().cast(), P as c_int, page_start) };
    if rc == ffi::SQLITE_IOERR_SHORT_READ {
        // No whole page there (a new, empty database): SQLite expects zeros.
        out.fill(0);
        return rc;
    }
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    if !codec.decrypt(page_number(page_start), page) {
        return corrupt(out);
    }
    let at = (off - page_start) as usize;
    out.copy_from_slice(&page[at..at + out.len()]);
    ffi::SQLITE_OK
}

/// A page that fails authentication: the caller gets no bytes of it.
fn corrupt(out: &mut [u8]) -> c_int {
    out.fill(0);
    ffi::SQLITE_CORRUPT
}

/// Journal reads. The pager reads a record as `pgno` (4 bytes), the page, then its
/// checksum (4 bytes); a header starts with the 8-byte magic and has the checksum nonce at
/// +12. A record that doesn't decrypt (torn, or past the valid records) is handed over as
/// zeros with a checksum that can't match, which ends playback there, as a torn record
/// would.
///
/// # Safety
/// `inner` is open.
unsafe fn read_journal(
    inner: *mut ffi::sqlite3_file,
    codec: &FileCodec,
    track: &mut JournalTrack,
    out: &mut [u8],
    off: i64,
) -> c_int {
    // SAFETY: out has its length in bytes.
    let rc = unsafe { inner_read(inner, out.as_mut_ptr().cast(), out.len() as c_int, off) };
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    match out.len() {
        8 if out[..] == JOURNAL_MAGIC => track.header_offset = Some(off),
        4 => {
            let value = be32(out);
            if track.header_offset.is_some_and(|h| off == h + 12) {
                track.nonce = value;
            }
            if let Some((page_off, cipher_ck, plain_ck, ok)) = track.last_page_read {
                if off == page_off + P as i64 {
                    track.last_page_read = None;
                    let translated = if !ok {
                        plain_ck.wrapping_add(1)
                    } else if value == cipher_ck {
                        // SQLCipher checksums the ciphertext; SQLite checks the plaintext.
                        plain_ck
                    } else {
                        value
                    };
                    out.copy_from_slice(&translated.to_be_bytes());
                }
            }
            track.last_u32_read = Some((off, value));
        }
        n if n == P => {
            if let Some((o, pgno)) = track.last_u32_read {
                if o + 4 == off {
                    let cipher_ck = journal_checksum(track.nonce, out);
                    let ok = codec.decrypt(pgno, out);
                    if !ok {
                        out.fill(0);
                    }
                    let plain_ck = journal_checksum(track.nonce, out);
                    track.last_page_read = Some((off, cipher_ck, plain_ck, ok));
                }
            }
        }
        _ => {}
    }
    ffi::SQLITE_OK
}

/// WAL reads. Recovery reads the 32-byte header, then every frame whole (header + page);
/// normal reads fetch one page at `frame + 24`. Frame checksums chain over the frames; a
/// WAL written by SQLCipher or SQLite3MC checksums the ciphertext, so both chains are
/// followed and SQLite is given the plaintext chain it expects.
///
/// # Safety
/// `inner` is open.
unsafe fn read_wal(
    inner: *mut ffi::sqlite3_file,
    codec: &FileCodec,
    track: &mut WalTrack,
    out: &mut [u8],
    off: i64,
) -> c_int {
    // SAFETY: out has its length in bytes.
    let rc = unsafe { inner_read(inner, out.as_mut_ptr().cast(), out.len() as c_int, off) };
    if rc != ffi::SQLITE_OK {
        return rc;
    }
    let frame_size = (WAL_FRAME_HEADER + P) as i64;
    if off == 0 && out.len() == WAL_HEADER {
        track.big_endian = be32(&out[0..4]) & 1 == 1;
        let seed = (be32(&out[24..28]), be32(&out[28..32]));
        track.chain_plain = seed;
        track.chain_cipher = seed;
    } else if out.len() == WAL_FRAME_HEADER + P
        && off >= WAL_HEADER as i64
        && (off - WAL_HEADER as i64) % frame_size == 0
    {
        let (header, page) = out.split_at_mut(WAL_FRAME_HEADER);
        let pgno = be32(&header[0..4]);
        let stored = (be32(&header[16..20]), be32(&header[20..24]));
        let cipher = wal_frame_checksum(track.big_endian, track.chain_cipher, header, page);
        let ok = codec.decrypt(pgno, page);
        if !ok {
            page.fill(0);
        }
        let plain = wal_frame_checksum(track.big_endian, track.chain_plain, header, page);
        let handed = if !ok {
            (plain.0.wrapping_add(1), plain.1)
        } else if stored == cipher {
            plain
        } else {
            stored
        };
        header[16..20].copy_from_slice(&handed.0.to_be_bytes());
        header[20..24].copy_from_slice(&handed.1.to_be_bytes());
        track.chain_cipher = cipher;
        track.chain_plain = plain;
    } else if out.len() == P && is_wal_page_offset(off) {
        // SAFETY: inner is open.
        let pgno = match unsafe { read_frame_page_number(inner, off) } {
            Ok(pgno) => pgno,
            Err(rc) => return rc,
        };
        if !codec.decrypt(pgno, out) {
            return corrupt(out);
        }
    }
    ffi::SQLITE_OK
}

macro_rules! forward {
    ($name:ident, $method:ident, $err:expr, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(f: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            guard($err, || {
                // SAFETY: f is one of our files; the OS file gets the same arguments.
                unsafe {
                    let inner = (*f.cast::<CipherFile>()).inner;
                    match methods(inner).$method {
                        Some(m) => m(inner $(, $arg)*),
                        None => $err,
                    }
                }
            })
        }
    };
}

forward!(x_truncate, xTruncate, ffi::SQLITE_IOERR_TRUNCATE, (size: i64));
forward!(x_sync, xSync, ffi::SQLITE_IOERR_FSYNC, (flags: c_int));
forward!(x_file_size, xFileSize, ffi::SQLITE_IOERR_FSTAT, (size: *mut i64));
forward!(x_lock, xLock, ffi::SQLITE_IOERR_LOCK, (level: c_int));
forward!(x_unlock, xUnlock, ffi::SQLITE_IOERR_UNLOCK, (level: c_int));
forward!(x_check_reserved_lock, xCheckReservedLock, ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, (out: *mut c_int));
forward!(x_file_control, xFileControl, ffi::SQLITE_NOTFOUND, (op: c_int, arg: *mut c_void));
forward!(x_shm_map, xShmMap, ffi::SQLITE_IOERR_SHMMAP, (region: c_int, size: c_int, extend: c_int, out: *mut *mut c_void));
forward!(x_shm_lock, xShmLock, ffi::SQLITE_IOERR_SHMLOCK, (offset: c_int, n: c_int, flags: c_int));
forward!(x_shm_unmap, xShmUnmap, ffi::SQLITE_OK, (delete: c_int));

unsafe extern "C" fn x_sector_size(f: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: forwarding to the OS file.
    guard(512, || unsafe {
        let inner = (*f.cast::<CipherFile>()).inner;
        methods(inner).xSectorSize.map_or(512, |m| m(inner))
    })
}

unsafe extern "C" fn x_device_characteristics(f: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: forwarding to the OS file.
    guard(0, || unsafe {
        let inner = (*f.cast::<CipherFile>()).inner;
        methods(inner)
            .xDeviceCharacteristics
            .map_or(0, |m| m(inner))
    })
}

unsafe extern "C" fn x_shm_barrier(f: *mut ffi::sqlite3_file) {
    // SAFETY: forwarding to the OS file.
    guard((), || unsafe {
        let inner = (*f.cast::<CipherFile>()).inner;
        if let Some(m) = methods(inner).xShmBarrier {
            m(inner)
        }
    })
}

/// Memory-mapped pages would be ciphertext: never hand out a mapping, so SQLite reads
/// through xRead.
unsafe extern "C" fn x_fetch(
    _f: *mut ffi::sqlite3_file,
    _off: i64,
    _amt: c_int,
    pp: *mut *mut c_void,
) -> c_int {
    // SAFETY: pp is SQLite's out-pointer.
    unsafe { *pp = ptr::null_mut() };
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_unfetch(_f: *mut ffi::sqlite3_file, _off: i64, _p: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}
