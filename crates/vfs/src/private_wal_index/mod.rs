//! The wal-index of an encrypted database, out of the attacker's reach
//! (docs/design.md §4.6; docs/sqlcipher4-format.md §11). This module holds what Unix and
//! Windows share; the platform's primitives (locks, opening `<db>-shm`, file identity, the
//! private directory, this user's mark) are in `unix.rs` and `windows.rs`.
//!
//! SQLite trusts its wal-index: which frame holds page N (hash tables and `aPgno[]`), how
//! many frames are committed (`mxFrame`), and it keeps its running WAL checksum there —
//! computed over the plaintext the VFS hands it. Stock SQLite keeps it in `<db>-shm`, beside
//! the database, with the database's permissions: whoever may write the database's files
//! could steer SQLite to another page's frame (a rewrite in place then lands on the wrong
//! page; a read races the VFS's own look at `aPgno`), and whoever may read them reads a
//! checksum of the plaintext.
//!
//! So an encrypted database's wal-index is SQLite's own shared-memory implementation (the
//! OS VFS's `xShmMap` and friends, locks and all), run on a *shadow* file in a directory only
//! this OS user can enter (`private_directory`: on Unix `/dev/shm/cipherlite-<uid>`, in
//! memory, gone at reboot, unless another user took that name; on Windows
//! `%LOCALAPPDATA%\cipherlite\wal-index`), named after the identity of `<db>-shm` (device
//! and inode; volume serial number and file index), as SQLite's own wal-index is that file
//! whatever the database's name. Every cipherlite process of this user that opens the
//! database finds the same shadow, so WAL concurrency between them is SQLite's, unchanged;
//! processes that would not (another `/dev/shm`, another `%LOCALAPPDATA%`) see each other's
//! lock bytes and refuse.
//!
//! The real `<db>-shm` becomes a fence ([`Fence`]): while an encrypted connection has the
//! WAL open, it holds shared locks (open-file-description locks on Linux, `LockFileEx` on
//! Windows) on the bytes of `<db>-shm` that other SQLite libraries need exclusively to
//! write, checkpoint or rebuild a wal-index (`WAL_WRITE`, `WAL_CKPT`, `WAL_RECOVER`), and
//! the dead-man-switch byte; the file holds no wal-index (the first to open it empties it).
//! Another engine (SQLCipher, SQLite3 Multiple Ciphers, a key-less SQLite) opening the
//! database meanwhile finds no valid wal-index and cannot build one: it fails
//! (`SQLITE_PROTOCOL` or busy) instead of using a wal-index that doesn't see cipherlite's
//! frames. The other way round, a valid wal-index in a `<db>-shm` someone holds open means
//! another engine is using the WAL: the encrypted connection refuses
//! (`SQLITE_BUSY_RECOVERY` after its busy handler). A cipherlite process of *another* OS user
//! would have a shadow of its own: each process also holds a shared lock on byte
//! `USER_LOCKS + <this user's mark>` of `<db>-shm`, and refuses while any other user's byte
//! is locked (lock state is the kernel's; no one can forge it by writing the file);
//! likewise a byte per shadow file. Before each write transaction or checkpoint the
//! connection checks that `<db>-shm` is still the file it fenced (removed or replaced, it
//! refuses).

#[cfg(unix)]
mod unix;
#[cfg(unix)]
use unix as sys;
#[cfg(windows)]
mod windows;
#[cfg(windows)]
use windows as sys;

use super::shadow_file::ShadowFile;
use cipherlite_sys::ffi;
use std::{
    collections::HashMap,
    ffi::c_int,
    fs::File,
    io,
    path::{Path, PathBuf},
    sync::{Mutex, MutexGuard},
};

use sys::private_directory;

/// Byte offsets of SQLite's locks in a `-shm` file (os_unix.c: `UNIX_SHM_BASE` = 120;
/// os_win.c: `WIN_SHM_BASE` = (22 + 8) * 4 = 120: eight lock bytes, then the dead-man switch
/// `UNIX_SHM_DMS` / `WIN_SHM_DMS` = 128; wal.c: lock 0 is `WAL_WRITE`, 1 `WAL_CKPT`, 2
/// `WAL_RECOVER`).
const SHM_LOCKS: u64 = 120;
const FENCED_LOCKS: u64 = 3;
const SHM_DMS: u64 = 128;
/// Where the per-user bytes start: far past any byte SQLite locks (POSIX locks and
/// `LockFileEx` may lie beyond the end of a file).
const USER_LOCKS: u64 = 1 << 40;
/// How many bytes each range of marks (users, shadows) spans.
const MARK_SPAN: u64 = 1 << 32;
/// And the bytes of the shadow files: a process holds a shared lock on
/// `SHADOW_LOCKS + hash(shadow's identity) mod 2^32`, so two processes that would use two
/// wal-indexes for one WAL (another private directory: another `/dev/shm`, another
/// container or mount namespace, `%LOCALAPPDATA%` set otherwise) see each other.
const SHADOW_LOCKS: u64 = 1 << 41;
/// The wal-index header's `isInit` byte (wal.c `WalIndexHdr`): non-zero once a wal-index
/// has been built.
const HEADER_IS_INIT: usize = 12;
/// Its version word: 3007000 (`WALINDEX_MAX_VERSION`), native byte order.
const WALINDEX_VERSION: u32 = 3_007_000;

/// A file's identity: device and inode on Unix, volume serial number and file index on
/// Windows.
type Identity = (u64, u64);

/// Why an encrypted connection can't have its WAL's wal-index now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalIndexRefusal {
    /// Another SQLite library (not cipherlite, or cipherlite without the key) has the WAL
    /// open through `<db>-shm`.
    OtherEngine,
    /// A cipherlite process of another OS user has the WAL open: its wal-index is private
    /// to it.
    OtherUser,
    /// The private directory is not this user's alone (owner and mode on Unix, owner and
    /// DACL on Windows), or can't be made.
    PrivateDirectory,
    /// Another process of this user has the WAL open with another wal-index (another
    /// private directory: its own `/dev/shm`, another container or mount namespace; on
    /// Windows `%LOCALAPPDATA%` set otherwise).
    OtherWalIndex,
    /// `<db>-shm` was removed or replaced while the WAL is open: the fence no longer keeps
    /// other engines off the file.
    FenceGone,
}

impl WalIndexRefusal {
    /// The SQLite result code the VFS returns: a busy code SQLite's WAL code does not retry
    /// by itself (a plain `SQLITE_BUSY` from `xShmMap` would spin for ten seconds and end in
    /// `SQLITE_PROTOCOL`), so the connection's busy handler waits for the other process to
    /// let go. `SQLITE_BUSY_RECOVERY`, because better-sqlite3's code names (which cipherlite
    /// keeps) have no `SQLITE_BUSY_TIMEOUT`.
    pub fn code(self) -> c_int {
        match self {
            WalIndexRefusal::OtherEngine
            | WalIndexRefusal::OtherUser
            | WalIndexRefusal::OtherWalIndex
            | WalIndexRefusal::FenceGone => ffi::SQLITE_BUSY_RECOVERY,
            WalIndexRefusal::PrivateDirectory => ffi::SQLITE_CANTOPEN,
        }
    }

    /// What the user is told (no path: the caller names the database). The two that name
    /// the private directory are the platform's.
    pub fn message(self) -> &'static str {
        match self {
            WalIndexRefusal::OtherEngine => {
                "the database is open in WAL mode in another SQLite library (not cipherlite with \
                 the key): close it there first"
            }
            WalIndexRefusal::OtherUser => {
                "the database is open in WAL mode by another OS user's cipherlite process: an \
                 encrypted database's wal-index is private to one user"
            }
            WalIndexRefusal::PrivateDirectory => sys::PRIVATE_DIRECTORY_MESSAGE,
            WalIndexRefusal::OtherWalIndex => sys::OTHER_WAL_INDEX_MESSAGE,
            WalIndexRefusal::FenceGone => {
                "the database's -shm file was removed or replaced while its WAL is open: no more \
                 writes or checkpoints until the database is closed and opened again"
            }
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// Another process is between two steps of opening: try again.
    Busy,
    Refused(WalIndexRefusal),
}

impl Refusal {
    fn code(self) -> c_int {
        match self {
            Refusal::Busy => ffi::SQLITE_BUSY_RECOVERY,
            Refusal::Refused(r) => r.code(),
        }
    }

    /// The code and the reason, for the error the user sees.
    fn reported(self) -> (c_int, Option<&'static str>) {
        match self {
            Refusal::Busy => (self.code(), None),
            Refusal::Refused(r) => (r.code(), Some(r.message())),
        }
    }
}

/// The shadow file's name for a database: after the identity of its `<db>-shm` — what
/// every process that opens the database opens, whatever name it uses for it (SQLite too
/// identifies a wal-index by its `-shm` file) — or, where there is none, of the database
/// file.
fn shadow_name(kind: &str, (dev, ino): Identity) -> String {
    format!("{kind}-{dev:x}-{ino:x}.db")
}

/// A stand-in identity for a database that is not on this file system: from its name.
fn path_identity(db_path: &str) -> Identity {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(db_path.as_bytes());
    let word = |at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&digest[at..at + 8]);
        u64::from_le_bytes(bytes)
    };
    (word(0), word(8))
}

/// The first four bytes of the SHA-256 of `bytes`, little-endian.
fn hash32(bytes: &[u8]) -> u32 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(bytes);
    u32::from_le_bytes([digest[0], digest[1], digest[2], digest[3]])
}

/// The lock byte of a shadow file (below 2^32).
fn shadow_byte((dev, ino): Identity) -> u64 {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&dev.to_le_bytes());
    bytes[8..].copy_from_slice(&ino.to_le_bytes());
    u64::from(hash32(&bytes))
}

// ---- the fence on the real -shm ---------------------------------------------------------

/// One process's hold on a database's real `<db>-shm`, shared by all its connections to that
/// database through one name: one descriptor (handle) per name, closed with the last user
/// (the locks are the descriptor's or the handle's; where they are POSIX's, the process's,
/// closing any descriptor of the file would drop them all).
struct Fence {
    /// `None` where `<db>-shm` can neither be opened nor made (a read-only directory where
    /// it doesn't exist: no other engine can make one either).
    file: Option<File>,
    /// The file's identity, as opened.
    identity: Option<Identity>,
    /// The shadow bytes this handle has locked, where a handle's shared locks on one byte
    /// stack ([`sys::SHARED_LOCKS_STACK`]): each is locked once.
    shadow_marks: Vec<u64>,
    users: usize,
}

static FENCES: Mutex<Option<HashMap<PathBuf, Fence>>> = Mutex::new(None);

fn fences() -> MutexGuard<'static, Option<HashMap<PathBuf, Fence>>> {
    // A panic while holding it leaves the map as it was between two whole operations.
    FENCES.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether `file` starts with an initialised wal-index header.
fn holds_wal_index(file: &File) -> bool {
    let Some(header) = sys::read_header(file) else {
        return false;
    };
    let version = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]);
    version == WALINDEX_VERSION && header[HEADER_IS_INIT] != 0
}

/// Opens `<db>-shm` for the fence: read-write (made, if `create`), else read-only where
/// writing is denied, else none if it doesn't exist and can't (or needn't) be made; with
/// whether it was opened for writing.
fn open_shm(shm_path: &Path, db_path: &Path, create: bool) -> io::Result<Option<(File, bool)>> {
    match sys::open_shm(shm_path, db_path, true, create) {
        Ok(f) => Ok(Some((f, true))),
        // Not there and not to be made, or no such directory on this file system (a VFS
        // underneath that keeps its files elsewhere): no other engine has it either.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) if sys::denied(&e) => match sys::open_shm(shm_path, db_path, false, false) {
            Ok(f) => Ok(Some((f, false))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    }
}

/// Takes the fence on a freshly opened `<db>-shm` (see the module doc): this user's mark,
/// then the platform's locks on SQLite's bytes. On error every lock taken is let go by the
/// caller closing the file.
fn raise_fence(file: &File, writable: bool) -> Result<(), Refusal> {
    mark_alone(
        file,
        USER_LOCKS,
        sys::user_byte(),
        false,
        WalIndexRefusal::OtherUser,
    )?;
    sys::hold_shm_locks(file, writable)
}

/// Joins (or raises) this process's fence on `<db>-shm` (made if missing, with `create`):
/// its path and, where it exists, its identity.
fn join_fence(db_path: &Path, create: bool) -> Result<(PathBuf, Option<Identity>), Refusal> {
    // One descriptor per name however the database was named (SQLite's full path name, or
    // the name the user gave).
    let db_path = std::fs::canonicalize(db_path).unwrap_or_else(|_| db_path.to_path_buf());
    let db_path = db_path.as_path();
    let mut shm = db_path.as_os_str().to_owned();
    shm.push("-shm");
    let shm_path = PathBuf::from(shm);
    let mut guard = fences();
    let map = guard.get_or_insert_with(HashMap::new);
    if let Some(fence) = map.get_mut(&shm_path) {
        fence.users += 1;
        return Ok((shm_path, fence.identity));
    }
    let opened = open_shm(&shm_path, db_path, create).map_err(|_| Refusal::Busy)?;
    let mut identity = None;
    let file = match opened {
        Some((f, writable)) => {
            // On error the file is closed here, letting go of what was taken (no other
            // descriptor of it is open in this process: [`FENCES`]).
            raise_fence(&f, writable)?;
            identity = sys::identity_of(&f).ok();
            Some(f)
        }
        None => None,
    };
    map.insert(
        shm_path.clone(),
        Fence {
            file,
            identity,
            shadow_marks: Vec::new(),
            users: 1,
        },
    );
    Ok((shm_path, identity))
}

/// Marks the shadow `shadow` (its identity) as the wal-index this process uses for the WAL
/// fenced at `shm_path`, and refuses if another holder marked another one.
fn claim_shadow(shm_path: &Path, shadow: Identity) -> Result<(), Refusal> {
    let mut guard = fences();
    let Some(fence) = guard.as_mut().and_then(|map| map.get_mut(shm_path)) else {
        return Ok(());
    };
    let Some(file) = fence.file.as_ref() else {
        return Ok(());
    };
    let own = shadow_byte(shadow);
    let held = sys::SHARED_LOCKS_STACK && fence.shadow_marks.contains(&own);
    let marked = mark_alone(
        file,
        SHADOW_LOCKS,
        own,
        held,
        WalIndexRefusal::OtherWalIndex,
    );
    // Refused, the byte was locked all the same (only `Busy` may mean it was not).
    if sys::SHARED_LOCKS_STACK && !held && marked != Err(Refusal::Busy) {
        fence.shadow_marks.push(own);
    }
    marked
}

/// Takes a shared lock on byte `base + own` of `file` (`own` below 2^32) unless this handle
/// `held` it already, then refuses with `refusal` if another holder has any other byte of
/// `base .. base + 2^32` locked. Own byte first, then the others: of two holders marking at
/// once, the later to look sees the earlier.
fn mark_alone(
    file: &File,
    base: u64,
    own: u64,
    held: bool,
    refusal: WalIndexRefusal,
) -> Result<(), Refusal> {
    let busy = |_| Refusal::Busy;
    if !held {
        sys::lock_shared(file, base + own, 1).map_err(busy)?;
    }
    // Nothing before the span's first byte, nothing after its last: neither range is
    // asked about then, for a length of 0 is, to `F_GETLK`, every byte from the start on
    // (past the span: the shadow bytes after the user marks, which another process of this
    // very user may hold).
    let before = own > 0 && sys::others_hold(file, base, own).map_err(busy)?;
    let after_len = MARK_SPAN - own - 1;
    let after = after_len > 0 && sys::others_hold(file, base + own + 1, after_len).map_err(busy)?;
    if before || after {
        return Err(Refusal::Refused(refusal));
    }
    Ok(())
}

/// Whether `<db>-shm` at `shm_path` is still the file the fence holds: the same identity
/// under that name, not removed.
fn fence_intact(shm_path: &Path) -> bool {
    let guard = fences();
    let Some(fence) = guard.as_ref().and_then(|map| map.get(shm_path)) else {
        return true;
    };
    let (Some(file), Some(held)) = (&fence.file, fence.identity) else {
        return true;
    };
    sys::still_fenced(file, shm_path, held)
}

/// Leaves this process's fence on `shm_path`; the last user closes it (and, with `delete`
/// — SQLite deleting its wal-index under an EXCLUSIVE lock on the database, so no one else
/// has the WAL open — removes `<db>-shm`, as SQLite would).
fn leave_fence(shm_path: &Path, delete: bool) {
    let mut guard = fences();
    let Some(map) = guard.as_mut() else { return };
    let last = match map.get_mut(shm_path) {
        Some(fence) => {
            fence.users -= 1;
            fence.users == 0
        }
        None => false,
    };
    if last {
        if let Some(fence) = map.remove(shm_path) {
            sys::close_fence(fence.file, shm_path, delete);
        }
    }
}

// ---- the shadow file ---------------------------------------------------------------------

/// A database file's private wal-index: the shadow file (`shadow_file.rs`) and this
/// connection's part of the fence.
pub(super) struct PrivateWalIndex {
    shadow: ShadowFile,
    shm_path: PathBuf,
}

impl PrivateWalIndex {
    /// Opens the private wal-index of the database SQLite opened as `db_path` (its full
    /// path name) through the OS VFS `base`.
    ///
    /// # Safety
    /// `base` is a registered VFS that outlives the returned value.
    /// On error, the code and the reason to tell the user.
    pub unsafe fn open(
        base: *mut ffi::sqlite3_vfs,
        db_path: &str,
    ) -> Result<Self, (c_int, Option<&'static str>)> {
        let dir = private_directory().map_err(|r| Refusal::Refused(r).reported())?;
        let (shm_path, shm_identity) =
            join_fence(Path::new(db_path), true).map_err(Refusal::reported)?;
        let name = match shm_identity {
            Some(id) => shadow_name("shm", id),
            None => match sys::file_identity(Path::new(db_path)) {
                Ok(id) => shadow_name("db", id),
                // Not a file of this file system (a VFS underneath that keeps its files
                // elsewhere, as the test suites' simulated disks): its name is all there is.
                Err(_) => shadow_name("path", path_identity(db_path)),
            },
        };
        // SAFETY: per contract.
        let index = match unsafe { ShadowFile::open(base, &dir.join(name)) } {
            Ok(shadow) => PrivateWalIndex { shadow, shm_path },
            Err(rc) => {
                leave_fence(&shm_path, false);
                return Err((rc, None));
            }
        };
        // (On error, dropping `index` closes the shadow and leaves the fence.) A shadow that
        // is not a file of this file system (a VFS underneath that keeps its files
        // elsewhere) has no fence to mark either.
        if let Ok(id) = sys::file_identity(index.shadow.path()) {
            claim_shadow(&index.shm_path, id).map_err(Refusal::reported)?;
        }
        Ok(index)
    }

    /// Whether `<db>-shm` is still the file fenced when the wal-index was opened (see
    /// [`fence_intact`]).
    pub fn fence_intact(&self) -> bool {
        fence_intact(&self.shm_path)
    }

    /// The shadow file, for SQLite's shared-memory calls.
    pub fn file(&mut self) -> *mut ffi::sqlite3_file {
        self.shadow.file()
    }

    /// Unmaps the wal-index (`xShmUnmap` with SQLite's `delete`), closes the shadow and
    /// leaves the fence. With `delete` SQLite holds the database's EXCLUSIVE lock (it has
    /// checkpointed and is deleting the WAL): no connection anywhere has this WAL open, so
    /// the shadow file and `<db>-shm` go too.
    pub fn close(mut self, delete: bool) -> c_int {
        self.shut(delete)
    }

    /// Unmaps and closes the shadow (once: later calls do nothing), removes it and
    /// `<db>-shm` with `delete`, and leaves the fence.
    fn shut(&mut self, delete: bool) -> c_int {
        let Some(rc) = self.shadow.shut(delete) else {
            return ffi::SQLITE_OK;
        };
        leave_fence(&self.shm_path, delete);
        rc
    }
}

impl Drop for PrivateWalIndex {
    fn drop(&mut self) {
        // Without `close`, SQLite did not ask for the wal-index to go: kept.
        self.shut(false);
    }
}

/// Whether an encrypted connection could have the wal-index of the database at `db_path`
/// now (the fence test, without keeping the fence or making `<db>-shm`): for a clear error
/// when a database is opened while another engine or user has its WAL open. `Ok` where
/// nothing is known.
pub fn check_wal_index_available(db_path: &Path) -> Result<(), WalIndexRefusal> {
    private_directory()?;
    match join_fence(db_path, false) {
        Ok((shm_path, _)) => {
            leave_fence(&shm_path, false);
            Ok(())
        }
        Err(Refusal::Refused(r)) => Err(r),
        Err(Refusal::Busy) => Ok(()),
    }
}

/// The file holding the private wal-index of the database at `db_path` (SQLite's full path
/// name for it), for tests that read what SQLite keeps there.
#[cfg(test)]
pub(super) fn private_shm_of(db_path: &Path) -> PathBuf {
    let dir = private_directory().expect("private directory");
    let mut shm = db_path.as_os_str().to_owned();
    shm.push("-shm");
    let id = sys::test_identity(Path::new(&shm)).expect("the database's -shm");
    dir.join(format!("{}-shm", shadow_name("shm", id)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A second holder of the file in this process: another descriptor (open-file-description
    /// locks on Linux) or handle (`LockFileEx` on Windows) is another lock owner. Elsewhere
    /// POSIX locks are the process's, and a second holder would have to be a process.
    #[cfg(any(target_os = "linux", windows))]
    #[test]
    fn the_last_mark_of_a_span_sees_no_lock_past_the_span() {
        let path = std::env::temp_dir().join(format!("cipherlite-marks-{}", std::process::id()));
        let open = || {
            File::options()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&path)
                .expect("open")
        };
        let (mine, theirs) = (open(), open());
        let last = MARK_SPAN - 1;
        // The last shadow byte: the range after it is empty, and a lock past the shadows'
        // span is no other wal-index.
        sys::lock_shared(&theirs, SHADOW_LOCKS + MARK_SPAN + 9, 1).expect("past the span");
        let other_index = WalIndexRefusal::OtherWalIndex;
        assert_eq!(
            mark_alone(&mine, SHADOW_LOCKS, last, false, other_index),
            Ok(())
        );
        // Another process of this user marked its shadow (a byte past the user marks): the
        // last user byte (uid 4294967295) is alone all the same.
        sys::lock_shared(&theirs, SHADOW_LOCKS + 5, 1).expect("shadow mark");
        let user = WalIndexRefusal::OtherUser;
        assert_eq!(mark_alone(&mine, USER_LOCKS, last, false, user), Ok(()));
        // Another user's byte inside the span is still seen from the last byte.
        sys::lock_shared(&theirs, USER_LOCKS + 7, 1).expect("another user");
        assert_eq!(
            mark_alone(&mine, USER_LOCKS, last, true, user),
            Err(Refusal::Refused(user))
        );
        drop((mine, theirs));
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn the_shadow_name_is_the_files_identity_and_its_lock_byte_is_below_2_to_the_32() {
        assert_eq!(shadow_name("shm", (0x803, 0x1f)), "shm-803-1f.db");
        assert_ne!(shadow_byte((1, 2)), shadow_byte((1, 3)));
        assert!((0..MARK_SPAN).contains(&shadow_byte((u64::MAX, u64::MAX))));
    }
}
