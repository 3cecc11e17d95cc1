//! The files the keyed VFS opens, sorted by kind (`main_db`, `journal`, `wal`): the
//! `sqlite3_file` SQLite allocates for us and the io methods that dispatch to each kind.

use super::{
    base_file::BaseFile, file_codec::FileCodec, guard, journal::Journal, main_db::MainDb,
    private_wal_index::PrivateWalIndex, wal::Wal, wal_index::WalIndex, KeyedVfs,
};
use cipherlite_sys::ffi;
use std::{
    cell::Cell,
    ffi::{c_int, c_void, CStr},
    ptr,
    sync::Arc,
};

enum Kind {
    Main(MainDb),
    /// A rollback journal and its database file (one of ours, open as long as the journal
    /// is: SQLite closes a journal before its database).
    Journal(Journal, *mut ffi::sqlite3_file),
    /// A WAL and its database file (open as long as the WAL is: SQLite closes a WAL
    /// before its database).
    Wal(Box<Wal>, *mut ffi::sqlite3_file),
}

struct FileState {
    kind: Kind,
    codec: Arc<FileCodec>,
    /// One frame's worth of room for page images on their way to or from the disk.
    scratch: Vec<u8>,
    /// Of a main database file: its WAL while that is open (null otherwise), whose held
    /// frames are written before the connection lets go of a lock on the database (see
    /// [`write_held_wal_frames`]).
    open_wal: *mut ffi::sqlite3_file,
    /// Of a main database file: its rollback journal while that is open (null otherwise).
    /// Only then are its pages held back (see `main_db::HeldPages`).
    open_journal: *mut ffi::sqlite3_file,
    /// Of a main database file: SQLite's full path name for it (valid until `xClose`) and
    /// the OS VFS, to open its private wal-index at the first shared-memory call.
    shm_source: Option<(*const std::ffi::c_char, *mut ffi::sqlite3_vfs)>,
    /// Of a main database file: the wal-index SQLite maps, private to this OS user (see
    /// `private_wal_index`), while mapped.
    private_index: Option<PrivateWalIndex>,
    /// The VFS that opened the file (it outlives its files), told the reasons of refusals.
    vfs: *const KeyedVfs,
}

thread_local! {
    /// The main database file whose pages this thread holds back, or null (at most one:
    /// see `main_db::HeldPages`).
    static HOLDER: Cell<*mut ffi::sqlite3_file> = const { Cell::new(ptr::null_mut()) };
}

fn holder() -> *mut ffi::sqlite3_file {
    HOLDER.try_with(Cell::get).unwrap_or(ptr::null_mut())
}

fn set_holder(f: *mut ffi::sqlite3_file) {
    let _ = HOLDER.try_with(|h| h.set(f));
}

/// Writes the pages this thread holds back before a call on file `f` (null: a call on no
/// file, `xOpen` or `xAccess`), and returns what that call must return when they can't
/// be written: their failure if the call concerns their database (its file or its
/// journal), else `SQLITE_OK`. Which calls make this first, and why that keeps every
/// commit point behind the pages: `main_db::HeldPages`. (A write to the holding file
/// itself doesn't: it may join them.)
///
/// # Safety
/// On the thread whose files the VFS calls are for (see [`HOLDER`]); `f` null or one of
/// our open files; no call on the holding file running.
pub(super) unsafe fn write_held_pages_before(f: *mut ffi::sqlite3_file) -> c_int {
    // Taken first: a successful write clears it.
    let holder = holder();
    // SAFETY: per contract.
    let rc = unsafe { write_held_pages_or_fail() };
    if rc == ffi::SQLITE_OK {
        return rc;
    }
    // SAFETY: per contract; f is open.
    let concerns_holder = !f.is_null()
        && (f == holder
            || matches!(unsafe { &parts(f).1.kind }, Kind::Journal(_, db) if *db == holder));
    if concerns_holder {
        rc
    } else {
        ffi::SQLITE_OK
    }
}

/// Writes the pages this thread holds back, failing if they can't be: before the VFS
/// deletes a file (a journal or a super-journal deleted is SQLite's commit point in DELETE
/// mode).
///
/// # Safety
/// As [`write_held_pages_before`].
pub(super) unsafe fn write_held_pages_or_fail() -> c_int {
    let holder = holder();
    if holder.is_null() {
        return ffi::SQLITE_OK;
    }
    // SAFETY: per contract: the holder is an open main database file of this thread (its
    // close clears it), with no call on it running.
    let (os, state) = unsafe { parts(holder) };
    let rc = match &mut state.kind {
        Kind::Main(main) => main.write_held(os, &state.codec),
        _ => ffi::SQLITE_OK,
    };
    if rc == ffi::SQLITE_OK {
        set_holder(ptr::null_mut());
    }
    rc
}

/// Writes the pages main database file `f` holds back, or gives them up: before it lets go
/// of its lock or closes. Its transaction has ended then; if its pages could not be
/// written, it did not commit (every commit point writes them first), and its journal,
/// still hot, rolls the file back.
///
/// # Safety
/// `f` is one of our open files, on its thread, with no other call on it running.
unsafe fn settle_held_pages(f: *mut ffi::sqlite3_file) {
    // SAFETY: per contract.
    let (os, state) = unsafe { parts(f) };
    if let Kind::Main(main) = &mut state.kind {
        if main.write_held(os, &state.codec) != ffi::SQLITE_OK {
            main.give_up_held();
        }
    }
    if holder() == f {
        set_holder(ptr::null_mut());
    }
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
/// `f` must be a file opened by `open` with our methods and not yet closed.
unsafe fn parts<'a>(f: *mut ffi::sqlite3_file) -> (BaseFile, &'a mut FileState) {
    // SAFETY: per contract, f is a CipherFile with a live state box and an open inner file.
    unsafe {
        let cf = &*f.cast::<CipherFile>();
        (BaseFile::new(cf.inner), &mut *cf.state)
    }
}

/// # Safety
/// `f` must be one of our open files.
unsafe fn inner_of(f: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    // SAFETY: per contract.
    unsafe { (*f.cast::<CipherFile>()).inner }
}

/// # Safety
/// `inner` must be an open OS file.
unsafe fn methods<'a>(inner: *mut ffi::sqlite3_file) -> &'a ffi::sqlite3_io_methods {
    // SAFETY: an open file always has methods.
    unsafe { &*(*inner).pMethods }
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
    let base = vfs.base_vfs();
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
    // SAFETY: inner was just opened.
    let os = unsafe { BaseFile::new(inner) };
    // SAFETY: name (if any) is SQLite's NUL-terminated file name.
    let result = unsafe {
        if main {
            let codec = main_codec(vfs, os, name);
            // Key schedules were built below this frame (ATTACH opens files mid-statement).
            cipherlite_codec::scrub_stack();
            codec.map(|c| {
                let kind = Kind::Main(MainDb::new(Arc::new(WalIndex::default()), c.page_size()));
                (kind, c)
            })
        } else {
            database_of(name).map(|(codec, index, database)| {
                let kind = if journal {
                    Kind::Journal(
                        Journal::new(codec.page_size(), vfs.accepts_plaintext_journal_checksums()),
                        database,
                    )
                } else {
                    Kind::Wal(Box::new(Wal::new(index, codec.page_size())), database)
                };
                (kind, codec)
            })
        }
    };
    let result = result.and_then(|(kind, codec)| {
        let scratch = super::try_zeroed(codec.page_size() + super::format::WAL_FRAME_HEADER)?;
        Ok((kind, codec, scratch))
    });
    match result {
        Ok((kind, codec, scratch)) => {
            let (wal_of, journal_of) = match &kind {
                Kind::Wal(_, database) => (*database, ptr::null_mut()),
                Kind::Journal(_, database) => (ptr::null_mut(), *database),
                Kind::Main(_) => (ptr::null_mut(), ptr::null_mut()),
            };
            let shm_source = (main && !name.is_null()).then_some((name, vfs.base));
            let state = Box::into_raw(Box::new(FileState {
                kind,
                codec,
                scratch,
                open_wal: ptr::null_mut(),
                open_journal: ptr::null_mut(),
                shm_source,
                private_index: None,
                vfs,
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
                if !wal_of.is_null() {
                    // SAFETY: database_of gave the WAL's open database file, idle now.
                    parts(wal_of).1.open_wal = out;
                }
                if !journal_of.is_null() {
                    // SAFETY: database_of gave the journal's open database file, idle now.
                    parts(journal_of).1.open_journal = out;
                }
            }
            ffi::SQLITE_OK
        }
        Err(rc) => {
            os.close();
            rc
        }
    }
}

/// The codec for the main database file just opened as `os`: the key is checked against
/// page 1 (or its copy in a hot journal or WAL) before SQLite reads anything.
///
/// # Safety
/// `name` null or NUL-terminated.
unsafe fn main_codec(
    vfs: &KeyedVfs,
    os: BaseFile,
    name: *const std::ffi::c_char,
) -> Result<Arc<FileCodec>, c_int> {
    let size = os.size()?;
    if size == 0 {
        return vfs.codec_for_new().map(Arc::new);
    }
    let mut page1 = super::try_zeroed(vfs.page_size())?;
    let rc = os.read(&mut page1, 0);
    if rc == ffi::SQLITE_IOERR_SHORT_READ {
        // Shorter than one page and not empty: not an encrypted database.
        return Err(ffi::SQLITE_NOTADB);
    }
    if rc != ffi::SQLITE_OK {
        // An I/O error is what it is, not a wrong key.
        return Err(rc);
    }
    let db_path = if name.is_null() {
        None
    } else {
        // SAFETY: SQLite's file names are NUL-terminated.
        unsafe { CStr::from_ptr(name) }.to_str().ok()
    };
    vfs.codec_for_existing(&page1, db_path).map(Arc::new)
}

/// The codec and wal-index view of the database a journal or WAL named `name` belongs to.
///
/// # Safety
/// `name` must be the journal/WAL name SQLite passed to xOpen.
unsafe fn database_of(
    name: *const std::ffi::c_char,
) -> Result<(Arc<FileCodec>, Arc<WalIndex>, *mut ffi::sqlite3_file), c_int> {
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
        match &state.kind {
            Kind::Main(main) => Ok((state.codec.clone(), main.wal_index.clone(), db)),
            _ => Err(ffi::SQLITE_CANTOPEN),
        }
    }
}

/// The OS file and state of a journal's database file, for the journal to take page
/// images from (see `journal_copy`).
///
/// # Safety
/// `db` is the database file [`database_of`] gave for the journal, still open (SQLite
/// closes a journal before its database), with no call on it running (the VFS's calls
/// don't nest): the state is only read, on the connection's thread.
unsafe fn database_state<'a>(db: *mut ffi::sqlite3_file) -> Option<(BaseFile, &'a MainDb)> {
    if db.is_null() {
        return None;
    }
    // SAFETY: per contract.
    let (os, state) = unsafe { parts(db) };
    match &state.kind {
        Kind::Main(main) => Some((os, main)),
        _ => None,
    }
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

/// Writes a WAL frame header SQLite wrote alone (see `Wal::flush`) before another call
/// looks at the file.
fn flush_pending(os: BaseFile, state: &mut FileState) -> c_int {
    match &mut state.kind {
        Kind::Wal(wal, _) => wal.flush(os, &state.codec, &mut state.scratch),
        _ => ffi::SQLITE_OK,
    }
}

/// Before a main database file `f` lets go of a lock (`xUnlock`, or an `xShmLock` unlock:
/// the WAL write lock among them), writes the frames its WAL holds (see `wal::held_frames::HeldFrames`).
/// They are past the last committed frame, as SQLite wrote them, and left behind by a
/// transaction that rolled back after spilling its cache: once another connection may
/// append at those offsets, writing them later would overwrite its frames. An error is
/// not the unlock's: the frames are given up (they were never committed).
///
/// # Safety
/// `f` must be one of our open files, with no call on its WAL running (the VFS's calls
/// don't nest; a connection's files are used on one thread at a time).
unsafe fn write_held_wal_frames(f: *mut ffi::sqlite3_file) {
    // SAFETY: per contract; `open_wal` is the open WAL of this database file (cleared
    // when the WAL closes), a distinct allocation from `f`'s.
    unsafe {
        let (_, state) = parts(f);
        let wal_file = state.open_wal;
        if wal_file.is_null() {
            return;
        }
        let (os, wal_state) = parts(wal_file);
        if let Kind::Wal(wal, _) = &mut wal_state.kind {
            wal.write_held(os, &wal_state.codec);
        }
    }
}

unsafe extern "C" fn x_close(f: *mut ffi::sqlite3_file) -> c_int {
    guard(ffi::SQLITE_IOERR_CLOSE, || {
        // SAFETY: SQLite closes each file once; we free the state box exactly then (and
        // never twice: the pointer is nulled).
        unsafe {
            if (*f.cast::<CipherFile>()).state.is_null() {
                return ffi::SQLITE_OK;
            }
            // First of all, so that no panic below leaves the thread a dangling holder.
            if holder() == f {
                set_holder(ptr::null_mut());
            }
            // Another file's held pages (a journal closes before SQLite deletes it: its
            // database's pages must be on disk by then); a database file's own are written
            // or given up.
            let held = write_held_pages_before(f);
            settle_held_pages(f);
            let cf = &mut *f.cast::<CipherFile>();
            let os = BaseFile::new(cf.inner);
            let flushed = flush_pending(os, &mut *cf.state);
            match (*cf.state).kind {
                // SAFETY: a WAL's or journal's database file is open as long as it is.
                Kind::Wal(_, database) => parts(database).1.open_wal = ptr::null_mut(),
                Kind::Journal(_, database) => parts(database).1.open_journal = ptr::null_mut(),
                Kind::Main(_) => {}
            }
            let rc = os.close();
            drop(Box::from_raw(cf.state));
            cf.state = ptr::null_mut();
            [held, flushed, rc]
                .into_iter()
                .find(|&rc| rc != ffi::SQLITE_OK)
                .unwrap_or(ffi::SQLITE_OK)
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
            let out = std::slice::from_raw_parts_mut(buf.cast::<u8>(), amt.max(0) as usize);
            let rc = write_held_pages_before(f);
            if rc != ffi::SQLITE_OK {
                return super::main_db::refuse(out, rc);
            }
            let (os, state) = parts(f);
            let FileState {
                kind,
                codec,
                scratch,
                vfs,
                ..
            } = state;
            match kind {
                Kind::Main(main) => main.read(os, codec, scratch, out, off),
                Kind::Journal(journal, _) => {
                    let rc = journal.read(os, codec, out, off);
                    if std::mem::take(&mut journal.refused_plaintext_checksums) {
                        // SAFETY: a VFS outlives the files it opened.
                        (**vfs).refused(rc, super::journal::PLAINTEXT_CHECKSUMS_REFUSAL);
                    }
                    rc
                }
                Kind::Wal(wal, _) => wal.read(os, codec, scratch, out, off),
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
            let data = std::slice::from_raw_parts(buf.cast::<u8>(), amt.max(0) as usize);
            // Pages of this file held back stay held: this write may join them.
            if holder() != f {
                let rc = write_held_pages_before(f);
                if rc != ffi::SQLITE_OK {
                    return rc;
                }
            }
            let (os, state) = parts(f);
            let FileState {
                kind,
                codec,
                scratch,
                open_wal,
                open_journal,
                ..
            } = state;
            match kind {
                Kind::Main(main) => {
                    let may_hold = !open_journal.is_null() && open_wal.is_null();
                    let rc = main.write_or_hold(os, codec, scratch, data, off, may_hold);
                    if main.holds_pages() {
                        set_holder(f);
                    } else if holder() == f {
                        set_holder(ptr::null_mut());
                    }
                    rc
                }
                Kind::Journal(journal, database) => {
                    let database = database_state(*database);
                    journal.write(os, codec, scratch, data, off, database)
                }
                Kind::Wal(wal, _) => wal.write(os, codec, scratch, data, off),
            }
        }
    })
}

/// Forwards an io method to the OS file, after writing any held-back WAL frame header;
/// with `new_epoch`, first moves the wal-index lock epoch of a main database file (caches
/// of file contents are valid only within one epoch).
macro_rules! forward_flushed {
    (@forward $name:ident, $method:ident, $err:expr, ($($arg:ident: $ty:ty),*), $new_epoch:expr) => {
        unsafe extern "C" fn $name(f: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            guard($err, || {
                // SAFETY: f is one of our open files; the OS file gets the same arguments.
                unsafe {
                    if $new_epoch {
                        if let Some(index) = wal_index_of(f) {
                            index.locked();
                        }
                    }
                    let rc = write_held_pages_before(f);
                    if rc != ffi::SQLITE_OK {
                        return rc;
                    }
                    let (os, state) = parts(f);
                    let rc = flush_pending(os, state);
                    if rc != ffi::SQLITE_OK {
                        return rc;
                    }
                    match methods(os.raw()).$method {
                        Some(m) => m(os.raw() $(, $arg)*),
                        None => $err,
                    }
                }
            })
        }
    };
    ($name:ident, $method:ident, $err:expr, ($($arg:ident: $ty:ty),*), new_epoch) => {
        forward_flushed!(@forward $name, $method, $err, ($($arg: $ty),*), true);
    };
    ($name:ident, $method:ident, $err:expr, ($($arg:ident: $ty:ty),*)) => {
        forward_flushed!(@forward $name, $method, $err, ($($arg: $ty),*), false);
    };
}

macro_rules! forward {
    ($name:ident, $method:ident, $err:expr, ($($arg:ident: $ty:ty),*)) => {
        unsafe extern "C" fn $name(f: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> c_int {
            guard($err, || {
                // SAFETY: f is one of our files; the OS file gets the same arguments.
                unsafe {
                    let inner = inner_of(f);
                    match methods(inner).$method {
                        Some(m) => m(inner $(, $arg)*),
                        None => $err,
                    }
                }
            })
        }
    };
}

forward_flushed!(x_truncate, xTruncate, ffi::SQLITE_IOERR_TRUNCATE, (size: i64), new_epoch);
forward_flushed!(x_lock_os, xLock, ffi::SQLITE_IOERR_LOCK, (level: c_int), new_epoch);

unsafe extern "C" fn x_lock(f: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_LOCK, || {
        // SAFETY: f is one of our open files.
        unsafe {
            // SQLite's checkpoint at close (and any exclusive use of the file) takes the
            // EXCLUSIVE lock and no wal-index lock: only while the fence still stands.
            if level == ffi::SQLITE_LOCK_EXCLUSIVE {
                if let Err(rc) = fence_stands(f) {
                    return rc;
                }
            }
            x_lock_os(f, level)
        }
    })
}

/// `Err` (and the reason told to the VFS) when main database file `f` has its WAL's private
/// wal-index open and `<db>-shm` is no longer the file fenced: another engine could be using
/// a new one beside it, so nothing may be written or checkpointed.
///
/// # Safety
/// `f` must be one of our open files, with no other call on it running.
unsafe fn fence_stands(f: *mut ffi::sqlite3_file) -> Result<(), c_int> {
    // SAFETY: per contract.
    let (_, state) = unsafe { parts(f) };
    match &state.private_index {
        Some(index) if !index.fence_intact() => {
            let refusal = super::WalIndexRefusal::FenceGone;
            // SAFETY: a VFS outlives the files it opened.
            unsafe { (*state.vfs).refused(refusal.code(), refusal.message()) };
            Err(refusal.code())
        }
        _ => Ok(()),
    }
}
forward_flushed!(x_unlock_os, xUnlock, ffi::SQLITE_IOERR_UNLOCK, (level: c_int), new_epoch);
forward_flushed!(x_sync, xSync, ffi::SQLITE_IOERR_FSYNC, (flags: c_int));
forward_flushed!(x_file_size, xFileSize, ffi::SQLITE_IOERR_FSTAT, (size: *mut i64));
forward!(x_check_reserved_lock, xCheckReservedLock, ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, (out: *mut c_int));
unsafe extern "C" fn x_unlock(f: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_UNLOCK, || {
        // SAFETY: f is one of our open files.
        unsafe {
            // A database file's own held pages are written, or given up: see
            // `settle_held_pages`. (Another file's are written by x_unlock_os first.)
            settle_held_pages(f);
            write_held_wal_frames(f);
            x_unlock_os(f, level)
        }
    })
}

/// Forwarded to the OS file, after noting a checkpoint's start and end on a main database
/// file: SQLite brackets the loop that copies WAL frames into the database with
/// `SQLITE_FCNTL_CKPT_START` and `SQLITE_FCNTL_CKPT_DONE` in every locking mode (the
/// checkpoint at close runs in exclusive mode, without `xShmLock`); see `checkpoint_copy`.
unsafe extern "C" fn x_file_control(
    f: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    guard(ffi::SQLITE_NOTFOUND, || {
        // SAFETY: f is one of our files; the OS file gets the same arguments.
        unsafe {
            // (SQLite sends some, SQLITE_FCNTL_SYNC among them, as a step of a commit.)
            let rc = write_held_pages_before(f);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
            if op == crate::FCNTL_RELEASE_FILE {
                return release_file(f, arg.cast::<c_int>());
            }
            if op == ffi::SQLITE_FCNTL_CKPT_START || op == ffi::SQLITE_FCNTL_CKPT_DONE {
                if let Some(index) = wal_index_of(f) {
                    index
                        .checkpoint
                        .set_checkpointing(op == ffi::SQLITE_FCNTL_CKPT_START);
                }
            }
            let inner = inner_of(f);
            match methods(inner).xFileControl {
                Some(m) => m(inner, op, arg),
                None => ffi::SQLITE_NOTFOUND,
            }
        }
    })
}

/// [`crate::FCNTL_RELEASE_FILE`] on `f`: `*arg` 1 closes the OS file of a main database
/// file and puts [`RELEASED`] in its place (every later call on it fails, or does nothing
/// for an unlock or close); 0 asks whether it was, answered in `*arg`. Refused
/// (`SQLITE_BUSY`) while the file has a journal, WAL or wal-index open or pages held back:
/// only a connection between transactions lets go of its file.
///
/// # Safety
/// `f` must be one of our open files, `arg` SQLite's pointer to an int (or null).
unsafe fn release_file(f: *mut ffi::sqlite3_file, arg: *mut c_int) -> c_int {
    if arg.is_null() {
        return ffi::SQLITE_MISUSE;
    }
    // SAFETY: per contract.
    let ((_, state), inner) = unsafe { (parts(f), inner_of(f)) };
    // SAFETY: the inner file is open (its methods are the OS VFS's or RELEASED).
    let released = std::ptr::eq(unsafe { (*inner).pMethods }, &RELEASED);
    // SAFETY: arg points to an int (per contract).
    if unsafe { *arg } == 0 {
        // SAFETY: as above.
        unsafe { *arg = c_int::from(released) };
        return ffi::SQLITE_OK;
    }
    if released {
        return ffi::SQLITE_OK;
    }
    let idle = matches!(state.kind, Kind::Main(_))
        && state.open_journal.is_null()
        && state.open_wal.is_null()
        && state.private_index.is_none()
        && holder() != f;
    if !idle {
        return ffi::SQLITE_BUSY;
    }
    // SAFETY: the inner file is open and closed once here; from now on its methods are
    // RELEASED's, which touch nothing, so SQLite's later xClose closes nothing twice.
    unsafe {
        let rc = methods(inner).xClose.map_or(ffi::SQLITE_OK, |m| m(inner));
        (*inner).pMethods = &RELEASED;
        rc
    }
}

/// The methods of an OS file closed by [`release_file`]: its connection has let go of the
/// file (so that the file can be replaced on Windows); reads and writes fail, unlocking and
/// closing succeed (there is nothing to unlock or close).
static RELEASED: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(released_ok),
    xRead: Some(released_read),
    xWrite: Some(released_write),
    xTruncate: Some(released_truncate),
    xSync: Some(released_sync),
    xFileSize: Some(released_size),
    xLock: Some(released_lock),
    xUnlock: Some(released_unlock),
    xCheckReservedLock: Some(released_reserved),
    xFileControl: Some(released_control),
    xSectorSize: Some(released_sector),
    xDeviceCharacteristics: Some(released_sector_none),
    xShmMap: Some(released_shm_map),
    xShmLock: Some(released_shm_lock),
    xShmBarrier: Some(released_barrier),
    xShmUnmap: Some(released_unlock),
    xFetch: Some(released_fetch),
    xUnfetch: Some(released_unfetch),
};

unsafe extern "C" fn released_ok(_f: *mut ffi::sqlite3_file) -> c_int {
    ffi::SQLITE_OK
}
unsafe extern "C" fn released_read(
    _f: *mut ffi::sqlite3_file,
    _buf: *mut c_void,
    _n: c_int,
    _off: ffi::sqlite3_int64,
) -> c_int {
    ffi::SQLITE_IOERR_READ
}
unsafe extern "C" fn released_write(
    _f: *mut ffi::sqlite3_file,
    _buf: *const c_void,
    _n: c_int,
    _off: ffi::sqlite3_int64,
) -> c_int {
    ffi::SQLITE_IOERR_WRITE
}
unsafe extern "C" fn released_truncate(
    _f: *mut ffi::sqlite3_file,
    _size: ffi::sqlite3_int64,
) -> c_int {
    ffi::SQLITE_IOERR_TRUNCATE
}
unsafe extern "C" fn released_sync(_f: *mut ffi::sqlite3_file, _flags: c_int) -> c_int {
    ffi::SQLITE_IOERR_FSYNC
}
unsafe extern "C" fn released_size(
    _f: *mut ffi::sqlite3_file,
    _size: *mut ffi::sqlite3_int64,
) -> c_int {
    ffi::SQLITE_IOERR_FSTAT
}
unsafe extern "C" fn released_lock(_f: *mut ffi::sqlite3_file, _level: c_int) -> c_int {
    ffi::SQLITE_IOERR_LOCK
}
unsafe extern "C" fn released_unlock(_f: *mut ffi::sqlite3_file, _level: c_int) -> c_int {
    ffi::SQLITE_OK
}
unsafe extern "C" fn released_reserved(_f: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    if !out.is_null() {
        // SAFETY: SQLite's out-pointer.
        unsafe { *out = 0 };
    }
    ffi::SQLITE_OK
}
unsafe extern "C" fn released_control(
    _f: *mut ffi::sqlite3_file,
    _op: c_int,
    _arg: *mut c_void,
) -> c_int {
    ffi::SQLITE_NOTFOUND
}
unsafe extern "C" fn released_sector(_f: *mut ffi::sqlite3_file) -> c_int {
    4096
}
unsafe extern "C" fn released_sector_none(_f: *mut ffi::sqlite3_file) -> c_int {
    0
}
unsafe extern "C" fn released_shm_map(
    _f: *mut ffi::sqlite3_file,
    _region: c_int,
    _size: c_int,
    _extend: c_int,
    pp: *mut *mut c_void,
) -> c_int {
    if !pp.is_null() {
        // SAFETY: SQLite's out-pointer.
        unsafe { *pp = ptr::null_mut() };
    }
    ffi::SQLITE_IOERR_SHMMAP
}
unsafe extern "C" fn released_shm_lock(
    _f: *mut ffi::sqlite3_file,
    _offset: c_int,
    _n: c_int,
    _flags: c_int,
) -> c_int {
    ffi::SQLITE_IOERR_SHMLOCK
}
unsafe extern "C" fn released_barrier(_f: *mut ffi::sqlite3_file) {}
unsafe extern "C" fn released_fetch(
    _f: *mut ffi::sqlite3_file,
    _off: ffi::sqlite3_int64,
    _amt: c_int,
    pp: *mut *mut c_void,
) -> c_int {
    if !pp.is_null() {
        // SAFETY: SQLite's out-pointer.
        unsafe { *pp = ptr::null_mut() };
    }
    ffi::SQLITE_OK
}
unsafe extern "C" fn released_unfetch(
    _f: *mut ffi::sqlite3_file,
    _off: ffi::sqlite3_int64,
    _p: *mut c_void,
) -> c_int {
    ffi::SQLITE_OK
}

/// The wal-index view of a main database file, if `f` is one.
///
/// # Safety
/// `f` must be one of our open files.
unsafe fn wal_index_of<'a>(f: *mut ffi::sqlite3_file) -> Option<&'a WalIndex> {
    // SAFETY: per contract.
    let (_, state) = unsafe { parts(f) };
    match &state.kind {
        Kind::Main(main) => Some(&main.wal_index),
        _ => None,
    }
}

/// The file whose shared memory is the wal-index of main database file `f`: its private
/// wal-index (see `private_wal_index`), opened at the first call.
///
/// # Safety
/// `f` must be one of our open files, with no other call on it running.
unsafe fn shm_file(f: *mut ffi::sqlite3_file) -> Result<*mut ffi::sqlite3_file, c_int> {
    // SAFETY: per contract.
    let (_, state) = unsafe { parts(f) };
    if let Some(index) = state.private_index.as_mut() {
        return Ok(index.file());
    }
    let Some((name, base)) = state.shm_source else {
        // Not a main database file: SQLite maps shared memory only through those.
        return Err(ffi::SQLITE_IOERR_SHMOPEN);
    };
    // SAFETY: SQLite's file name for an open file is NUL-terminated and lives until xClose.
    let path = unsafe { CStr::from_ptr(name) }
        .to_str()
        .map_err(|_| ffi::SQLITE_CANTOPEN)?;
    // SAFETY: the OS VFS is registered for the process's lifetime.
    match unsafe { PrivateWalIndex::open(base, path) } {
        Ok(index) => Ok(state.private_index.insert(index).file()),
        Err((rc, reason)) => {
            if let Some(reason) = reason {
                // SAFETY: a VFS outlives the files it opened.
                unsafe { (*state.vfs).refused(rc, reason) };
            }
            Err(rc)
        }
    }
}

unsafe extern "C" fn x_shm_map(
    f: *mut ffi::sqlite3_file,
    region: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
    guard(ffi::SQLITE_IOERR_SHMMAP, || {
        // SAFETY: f is one of ours; the shared-memory file gets the same arguments; out is
        // SQLite's.
        unsafe {
            let shm = match shm_file(f) {
                Ok(file) => file,
                Err(rc) => return rc,
            };
            let Some(map) = methods(shm).xShmMap else {
                return ffi::SQLITE_IOERR_SHMMAP;
            };
            let rc = map(shm, region, size, extend, out);
            let mapped = rc == ffi::SQLITE_OK || (rc & 0xff) == ffi::SQLITE_READONLY;
            if mapped && size as usize == super::wal_index::REGION_SIZE {
                if let Some(index) = wal_index_of(f) {
                    index.mapped(region.max(0) as usize, *out);
                }
            }
            rc
        }
    })
}

/// The wal-index lock a writer holds exclusively (`WAL_WRITE_LOCK` in SQLite's wal.c).
const WRITE_LOCK: c_int = 0;
/// The wal-index lock a checkpoint holds exclusively (`WAL_CKPT_LOCK` in SQLite's wal.c).
const CHECKPOINT_LOCK: c_int = 1;

unsafe extern "C" fn x_shm_lock(
    f: *mut ffi::sqlite3_file,
    offset: c_int,
    n: c_int,
    flags: c_int,
) -> c_int {
    guard(ffi::SQLITE_IOERR_SHMLOCK, || {
        // SAFETY: f is one of ours; the OS file gets the same arguments.
        unsafe {
            if flags & ffi::SQLITE_SHM_UNLOCK != 0 {
                write_held_wal_frames(f);
            }
            let index = wal_index_of(f);
            let write_lock = offset == WRITE_LOCK && n >= 1;
            let exclusive = |op: c_int| {
                let bits = op | ffi::SQLITE_SHM_EXCLUSIVE;
                flags & bits == bits
            };
            // A write transaction or a checkpoint only while the fence still stands.
            let checkpoint_lock = offset <= CHECKPOINT_LOCK && offset + n > CHECKPOINT_LOCK;
            if (write_lock || checkpoint_lock) && exclusive(ffi::SQLITE_SHM_LOCK) {
                if let Err(rc) = fence_stands(f) {
                    return rc;
                }
            }
            if let Some(index) = index {
                index.locked();
                if write_lock && exclusive(ffi::SQLITE_SHM_UNLOCK) {
                    // Read while still held (see `WalIndex::write_lock_releasing`).
                    index.write_lock_releasing();
                }
            }
            let shm = match shm_file(f) {
                Ok(file) => file,
                Err(rc) => return rc,
            };
            let rc = match methods(shm).xShmLock {
                Some(m) => m(shm, offset, n, flags),
                None => ffi::SQLITE_IOERR_SHMLOCK,
            };
            if let Some(index) = index.filter(|_| rc == ffi::SQLITE_OK) {
                if write_lock && exclusive(ffi::SQLITE_SHM_LOCK) {
                    index.write_lock_taken();
                }
            }
            // A backstop: the checkpoint ends (SQLITE_FCNTL_CKPT_DONE) before this.
            if let Some(index) = index.filter(|_| offset == CHECKPOINT_LOCK && n == 1) {
                if flags & ffi::SQLITE_SHM_UNLOCK != 0 {
                    index.checkpoint.set_checkpointing(false);
                }
            }
            rc
        }
    })
}

unsafe extern "C" fn x_shm_unmap(f: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    guard(ffi::SQLITE_OK, || {
        // SAFETY: f is one of ours; the OS file gets the same arguments.
        unsafe {
            write_held_wal_frames(f);
            if let Some(index) = wal_index_of(f) {
                index.unmapped();
            }
            let (_, state) = parts(f);
            match state.private_index.take() {
                Some(index) => index.close(delete != 0),
                None => ffi::SQLITE_OK,
            }
        }
    })
}

unsafe extern "C" fn x_sector_size(f: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: forwarding to the OS file.
    guard(512, || unsafe {
        let inner = inner_of(f);
        methods(inner).xSectorSize.map_or(512, |m| m(inner))
    })
}

/// `SQLITE_IOCAP_SUBPAGE_READ` (not in the bindings of this libsqlite3-sys): reads of part
/// of a page are fine. Never for an encrypted file: SQLite would read overflow pages'
/// content straight from the file (direct overflow read), and a page can only be
/// authenticated whole.
const IOCAP_SUBPAGE_READ: c_int = 0x0000_8000;

unsafe extern "C" fn x_device_characteristics(f: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: forwarding to the OS file.
    guard(0, || unsafe {
        let inner = inner_of(f);
        let characteristics = methods(inner)
            .xDeviceCharacteristics
            .map_or(0, |m| m(inner));
        characteristics & !IOCAP_SUBPAGE_READ
    })
}

unsafe extern "C" fn x_shm_barrier(f: *mut ffi::sqlite3_file) {
    // SAFETY: forwarding to the shared-memory file, if open.
    guard((), || unsafe {
        if let Some(index) = parts(f).1.private_index.as_mut() {
            let shm = index.file();
            if let Some(m) = methods(shm).xShmBarrier {
                m(shm)
            }
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

#[cfg(test)]
mod tests {
    use crate::test_support::{create, exec, open, query, TempDir, SUMMARY};
    use crate::{KeyedVfsHandle, NewFileLayout};

    #[test]
    fn memory_mapping_never_hands_out_ciphertext() {
        let dir = TempDir::new("mmap");
        let path = dir.0.join("m.db");
        let vfs = KeyedVfsHandle::register(&[16u8; 32], NewFileLayout::Sqlite3mc).expect("vfs");
        create(&path, &vfs, 50);
        let conn = open(&path, &vfs);
        exec(&conn, "PRAGMA mmap_size = 268435456");
        assert_eq!(query(&conn, SUMMARY), ["50,1275"]);
        assert_eq!(
            query(&conn, "SELECT b FROM t WHERE a = 50"),
            [format!("row-50-{:0500}", 50)]
        );
        exec(&conn, "UPDATE t SET b = 'mapped' WHERE a = 1");
        assert_eq!(query(&conn, "SELECT b FROM t WHERE a = 1"), ["mapped"]);
        assert_eq!(query(&conn, "PRAGMA integrity_check"), ["ok"]);
    }
}
