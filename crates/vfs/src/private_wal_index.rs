//! The wal-index of an encrypted database, out of the attacker's reach
//! (docs/design.md §4.6; docs/sqlcipher4-format.md §11).
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
//! this OS user can enter ([`private_directory`]: `/dev/shm/cipherlite-<uid>`, in memory, gone
//! at reboot, unless another user took that name), named after the identity (device, inode)
//! of `<db>-shm`, as SQLite's own wal-index is that file whatever the database's name. Every
//! cipherlite process of this user that opens the database finds the same shadow, so WAL
//! concurrency between them is SQLite's, unchanged; processes that would not (another
//! `/dev/shm`) see each other's lock bytes and refuse.
//!
//! The real `<db>-shm` becomes a fence ([`Fence`]): while an encrypted connection has the
//! WAL open, it holds read locks (open-file-description locks on Linux) on the bytes of `<db>-shm` that other
//! SQLite libraries need exclusively to write, checkpoint or rebuild a wal-index (`WAL_WRITE`,
//! `WAL_CKPT`, `WAL_RECOVER`), and the dead-man-switch byte; the file holds no wal-index (the
//! first to open it empties it). Another engine (SQLCipher, SQLite3 Multiple Ciphers, a
//! key-less SQLite) opening the database meanwhile finds no valid wal-index and cannot build
//! one: it fails (`SQLITE_PROTOCOL` or busy) instead of using a wal-index that doesn't see
//! cipherlite's frames. The other way round, a valid wal-index in a `<db>-shm` someone holds
//! open means another engine is using the WAL: the encrypted connection refuses
//! (`SQLITE_BUSY_RECOVERY` after its busy handler). A cipherlite process of *another* OS user
//! would have a shadow of its own: each process also holds a read lock on byte
//! `UID_LOCKS + uid` of `<db>-shm`, and refuses while any other user's byte is locked (lock
//! state is the kernel's; no one can forge it by writing the file); likewise a byte per
//! shadow file. Before each write transaction or checkpoint the connection checks that
//! `<db>-shm` is still the file it fenced (removed or replaced, it refuses).

use super::shadow_file::ShadowFile;
use cipherlite_sys::ffi;
use std::{
    collections::HashMap,
    ffi::c_int,
    fs::{self, File, OpenOptions},
    io,
    os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt},
    os::unix::io::AsRawFd,
    path::{Path, PathBuf},
    sync::{Mutex, MutexGuard},
};

/// Byte offsets of SQLite's locks in a `-shm` file (os_unix.c: `UNIX_SHM_BASE` = 120, eight
/// lock bytes, then the dead-man switch `UNIX_SHM_DMS` = 128; wal.c: lock 0 is `WAL_WRITE`,
/// 1 `WAL_CKPT`, 2 `WAL_RECOVER`).
const SHM_LOCKS: i64 = 120;
const FENCED_LOCKS: i64 = 3;
const SHM_DMS: i64 = 128;
/// Where the per-user bytes start: far past any byte SQLite locks (POSIX locks may lie
/// beyond the end of a file).
const UID_LOCKS: i64 = 1 << 40;
/// How many bytes each range of marks (uids, shadows) spans.
const MARK_SPAN: i64 = 1 << 32;
/// And the bytes of the shadow files: a process holds a read lock on
/// `SHADOW_LOCKS + hash(shadow's device and inode) mod 2^32`, so two processes that would use
/// two wal-indexes for one WAL (another `/dev/shm`: another container or mount namespace)
/// see each other.
const SHADOW_LOCKS: i64 = 1 << 41;

/// Record-lock commands. On Linux, open-file-description locks: owned by the descriptor, so
/// closing another descriptor of the same file (another connection's, or one opened under
/// another name of the file) drops none of them. Elsewhere POSIX record locks, owned by the
/// process: one descriptor per file and process ([`FENCES`]).
#[cfg(target_os = "linux")]
const SET_LOCK: c_int = libc::F_OFD_SETLK;
#[cfg(target_os = "linux")]
const GET_LOCK: c_int = libc::F_OFD_GETLK;
#[cfg(not(target_os = "linux"))]
const SET_LOCK: c_int = libc::F_SETLK;
#[cfg(not(target_os = "linux"))]
const GET_LOCK: c_int = libc::F_GETLK;
/// The lock kinds, as one integer type everywhere (`short` on macOS, `int` on Linux).
const READ_LOCK: c_int = libc::F_RDLCK as c_int;
const WRITE_LOCK: c_int = libc::F_WRLCK as c_int;
const NO_LOCK: c_int = libc::F_UNLCK as c_int;
/// The wal-index header's `isInit` byte (wal.c `WalIndexHdr`): non-zero once a wal-index
/// has been built.
const HEADER_IS_INIT: usize = 12;
/// Its version word: 3007000 (`WALINDEX_MAX_VERSION`), native byte order.
const WALINDEX_VERSION: u32 = 3_007_000;

/// Why an encrypted connection can't have its WAL's wal-index now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalIndexRefusal {
    /// Another SQLite library (not cipherlite, or cipherlite without the key) has the WAL
    /// open through `<db>-shm`.
    OtherEngine,
    /// A cipherlite process of another OS user has the WAL open: its wal-index is private
    /// to it.
    OtherUser,
    /// The private directory is not this user's alone (owner or mode), or can't be made.
    PrivateDirectory,
    /// Another process of this user has the WAL open with another wal-index (its own
    /// `/dev/shm`: another container or mount namespace).
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

    /// What the user is told (no path: the caller names the database).
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
            WalIndexRefusal::PrivateDirectory => {
                "no private directory for an encrypted database's wal-index: /dev/shm/cipherlite-<uid>, \
                 $XDG_RUNTIME_DIR/cipherlite and ~/.cache/cipherlite-wal-index are missing, not \
                 this user's alone, or can't be made"
            }
            WalIndexRefusal::OtherWalIndex => {
                "the database is open in WAL mode by a cipherlite process with another wal-index \
                 directory (another /dev/shm: another container or mount namespace): processes \
                 sharing an encrypted WAL database must share /dev/shm"
            }
            WalIndexRefusal::FenceGone => {
                "the database's -shm file was removed or replaced while its WAL is open: no more \
                 writes or checkpoints until the database is closed and opened again"
            }
        }
    }
}

/// This process's effective user id.
fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// The directory of this user's shadow files: the first of `/dev/shm/cipherlite-<uid>`
/// (memory), `$XDG_RUNTIME_DIR/cipherlite` and `~/.cache/cipherlite-wal-index` that is, or can
/// be made, a directory (not a link) owned by this user and closed to everyone else. Every
/// process of the user finds the same one unless another user took a name first (the
/// shadow-identity lock bytes catch processes that disagree: they refuse, never diverge).
pub fn private_directory() -> Result<PathBuf, WalIndexRefusal> {
    let uid = euid();
    let mut candidates = Vec::new();
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        candidates.push(shm.join(format!("cipherlite-{uid}")));
    }
    if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
        candidates.push(PathBuf::from(runtime).join("cipherlite"));
    }
    if let Some(home) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        candidates.push(
            PathBuf::from(home)
                .join(".cache")
                .join("cipherlite-wal-index"),
        );
    }
    candidates.push(std::env::temp_dir().join(format!("cipherlite-{uid}")));
    first_private_directory(candidates, uid)
}

/// The first of `candidates` that is, or can be made, private to `uid`.
fn first_private_directory(candidates: Vec<PathBuf>, uid: u32) -> Result<PathBuf, WalIndexRefusal> {
    candidates
        .into_iter()
        .find(|dir| is_private_directory(dir, uid))
        .ok_or(WalIndexRefusal::PrivateDirectory)
}

/// Makes `dir` (mode 0700) if missing; whether it is a directory of `uid`'s, closed to others.
fn is_private_directory(dir: &Path, uid: u32) -> bool {
    if let Some(parent) = dir.parent() {
        // ~/.cache may not exist yet: made as the user's own.
        let _ = fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent);
    }
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(_) => return false,
    }
    fs::symlink_metadata(dir).is_ok_and(|meta| {
        meta.file_type().is_dir() && meta.uid() == uid && meta.mode() & 0o077 == 0
    })
}

/// The shadow file's name for a database: after the identity (device and inode) of its
/// `<db>-shm` — what every process that opens the database opens, whatever name it uses for
/// it (SQLite too identifies a wal-index by its `-shm` file) — or, where there is none, of
/// the database file.
fn shadow_name(kind: &str, (dev, ino): (u64, u64)) -> String {
    format!("{kind}-{dev:x}-{ino:x}.db")
}

/// A stand-in identity for a database that is not on this file system: from its name.
fn path_identity(db_path: &str) -> (u64, u64) {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(db_path.as_bytes());
    let word = |at: usize| {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&digest[at..at + 8]);
        u64::from_le_bytes(bytes)
    };
    (word(0), word(8))
}

/// A file's device and inode.
fn identity_of(meta: &fs::Metadata) -> (u64, u64) {
    (meta.dev(), meta.ino())
}

// ---- the fence on the real -shm ---------------------------------------------------------

/// One process's hold on a database's real `<db>-shm`, shared by all its connections to that
/// database through one name: one descriptor per name, closed with the last user (where the
/// locks are POSIX's, closing any descriptor of the file would drop them all).
struct Fence {
    /// `None` where `<db>-shm` can neither be opened nor made (a read-only directory where
    /// it doesn't exist: no other engine can make one either).
    file: Option<File>,
    /// The file's device and inode, as opened.
    identity: Option<(u64, u64)>,
    users: usize,
}

static FENCES: Mutex<Option<HashMap<PathBuf, Fence>>> = Mutex::new(None);

fn fences() -> MutexGuard<'static, Option<HashMap<PathBuf, Fence>>> {
    // A panic while holding it leaves the map as it was between two whole operations.
    FENCES.lock().unwrap_or_else(|e| e.into_inner())
}

/// A record lock command on `file` ([`SET_LOCK`]) with `kind` ([`READ_LOCK`], [`WRITE_LOCK`],
/// [`NO_LOCK`]) over `len` bytes at `start`, never waiting.
fn set_lock(file: &File, kind: c_int, start: i64, len: i64) -> io::Result<()> {
    // SAFETY: a zeroed flock is a valid value of the plain C struct.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = kind as _;
    lock.l_whence = libc::SEEK_SET as _;
    lock.l_start = start as _;
    lock.l_len = len as _;
    // SAFETY: the descriptor is open; lock is a valid flock.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), SET_LOCK, &lock) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Whether another holder (another process; on Linux, another descriptor) has a lock that
/// conflicts with a write lock over `len` bytes at `start`: `Some(kind)` of the first found.
fn other_lock(file: &File, start: i64, len: i64) -> io::Result<Option<c_int>> {
    // SAFETY: as in set_lock.
    let mut lock: libc::flock = unsafe { std::mem::zeroed() };
    lock.l_type = WRITE_LOCK as _;
    lock.l_whence = libc::SEEK_SET as _;
    lock.l_start = start as _;
    lock.l_len = len as _;
    // SAFETY: the descriptor is open; lock is a valid flock, which the kernel fills in.
    let rc = unsafe { libc::fcntl(file.as_raw_fd(), GET_LOCK, &mut lock) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let kind = lock.l_type as c_int;
    Ok((kind != NO_LOCK).then_some(kind))
}

/// Opens `<db>-shm` for the fence: read-write (made, if `create`, with the database's
/// mode, as SQLite makes it), else read-only, else none if it doesn't exist and can't (or
/// needn't) be made.
fn open_shm(shm_path: &Path, db_path: &Path, create: bool) -> io::Result<Option<File>> {
    let mode = fs::metadata(db_path)
        .map(|m| m.mode() & 0o777)
        .unwrap_or(0o600);
    let rw = OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW)
        .open(shm_path);
    match rw {
        Ok(f) => Ok(Some(f)),
        // Not there and not to be made, or no such directory on this file system (a VFS
        // underneath that keeps its files elsewhere): no other engine has it either.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EACCES | libc::EROFS | libc::EPERM)
            ) =>
        {
            match OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW)
                .open(shm_path)
            {
                Ok(f) => Ok(Some(f)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Takes the fence on a freshly opened `<db>-shm` (see the module doc). On error every
/// lock taken is let go by the caller closing the file (no other descriptor of it is open
/// in this process: [`FENCES`]).
fn raise_fence(file: &File, writable: bool) -> Result<(), Refusal> {
    let busy = |_| Refusal::Busy;
    mark_alone(
        file,
        UID_LOCKS,
        i64::from(euid()),
        WalIndexRefusal::OtherUser,
    )?;
    // Another engine writing, checkpointing or rebuilding its wal-index holds one of these
    // exclusively: then it is using the WAL.
    set_lock(file, READ_LOCK, SHM_LOCKS, FENCED_LOCKS)
        .map_err(|_| Refusal::Refused(WalIndexRefusal::OtherEngine))?;
    match other_lock(file, SHM_DMS, 1).map_err(busy)? {
        None => {
            // The first to open it: whatever wal-index it holds is a dead process's.
            if writable {
                set_lock(file, WRITE_LOCK, SHM_DMS, 1).map_err(busy)?;
                file.set_len(0).map_err(busy)?;
            }
        }
        Some(kind) if kind == WRITE_LOCK => return Err(Refusal::Busy),
        Some(_) => {
            // Held open by someone: a cipherlite process (the file empty or zeros) or
            // another engine (a wal-index in it).
            if holds_wal_index(file) {
                return Err(Refusal::Refused(WalIndexRefusal::OtherEngine));
            }
        }
    }
    set_lock(file, READ_LOCK, SHM_DMS, 1).map_err(busy)
}

/// Whether `file` starts with an initialised wal-index header.
fn holds_wal_index(file: &File) -> bool {
    use std::os::unix::fs::FileExt;
    let mut header = [0u8; 16];
    if file.read_exact_at(&mut header, 0).is_err() {
        return false;
    }
    let version = u32::from_ne_bytes([header[0], header[1], header[2], header[3]]);
    version == WALINDEX_VERSION && header[HEADER_IS_INIT] != 0
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

/// Joins (or raises) this process's fence on `<db>-shm` (made if missing, with `create`):
/// its path and, where it exists, its identity.
fn join_fence(db_path: &Path, create: bool) -> Result<(PathBuf, Option<(u64, u64)>), Refusal> {
    // One descriptor per name however the database was named (SQLite's full path name, or
    // the name the user gave).
    let db_path = fs::canonicalize(db_path).unwrap_or_else(|_| db_path.to_path_buf());
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
    let file = open_shm(&shm_path, db_path, create).map_err(|_| Refusal::Busy)?;
    let mut identity = None;
    if let Some(f) = &file {
        let writable = opened_for_writing(f);
        // On error the file is closed here, letting go of what was taken.
        raise_fence(f, writable)?;
        identity = f.metadata().ok().map(|m| identity_of(&m));
    }
    map.insert(
        shm_path.clone(),
        Fence {
            file,
            identity,
            users: 1,
        },
    );
    Ok((shm_path, identity))
}

/// Marks the shadow `shadow` (its identity) as the wal-index this process uses for the WAL
/// fenced at `shm_path`, and refuses if another holder marked another one.
fn claim_shadow(shm_path: &Path, shadow: (u64, u64)) -> Result<(), Refusal> {
    let guard = fences();
    let Some(Some(file)) = guard
        .as_ref()
        .and_then(|map| map.get(shm_path))
        .map(|fence| fence.file.as_ref())
    else {
        return Ok(());
    };
    mark_alone(
        file,
        SHADOW_LOCKS,
        shadow_byte(shadow),
        WalIndexRefusal::OtherWalIndex,
    )
}

/// Takes a read lock on byte `base + own` of `file` (`own` below 2^32), then refuses with
/// `refusal` if another holder has any other byte of `base .. base + 2^32` locked. Own byte
/// first, then the others: of two holders marking at once, the later to look sees the
/// earlier.
fn mark_alone(file: &File, base: i64, own: i64, refusal: WalIndexRefusal) -> Result<(), Refusal> {
    let busy = |_| Refusal::Busy;
    set_lock(file, READ_LOCK, base + own, 1).map_err(busy)?;
    // (A length of 0 would mean "to the end of all offsets": nothing before byte 0.)
    let before = match own {
        0 => None,
        _ => other_lock(file, base, own).map_err(busy)?,
    };
    let after = other_lock(file, base + own + 1, MARK_SPAN - own - 1).map_err(busy)?;
    if before.is_some() || after.is_some() {
        return Err(Refusal::Refused(refusal));
    }
    Ok(())
}

/// The lock byte of a shadow file (below 2^32).
fn shadow_byte((dev, ino): (u64, u64)) -> i64 {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    hasher.update(dev.to_le_bytes());
    hasher.update(ino.to_le_bytes());
    let digest = hasher.finalize();
    i64::from(u32::from_le_bytes([
        digest[0], digest[1], digest[2], digest[3],
    ]))
}

/// Whether `<db>-shm` at `shm_path` is still the file the fence holds: the same device and
/// inode under that name, not removed.
fn fence_intact(shm_path: &Path) -> bool {
    let guard = fences();
    let Some(fence) = guard.as_ref().and_then(|map| map.get(shm_path)) else {
        return true;
    };
    let (Some(file), Some(held)) = (&fence.file, fence.identity) else {
        return true;
    };
    let linked = file.metadata().is_ok_and(|m| m.nlink() > 0);
    let named = fs::symlink_metadata(shm_path).is_ok_and(|m| identity_of(&m) == held);
    linked && named
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
            if delete && fence.file.is_some() {
                let _ = fs::remove_file(shm_path);
            }
            drop(fence);
        }
    }
}

/// Whether `file` was opened for writing (`O_RDWR`).
fn opened_for_writing(file: &File) -> bool {
    // SAFETY: F_GETFL on an open descriptor.
    let flags = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_GETFL) };
    flags >= 0 && flags & libc::O_ACCMODE == libc::O_RDWR
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
            None => match fs::metadata(db_path) {
                Ok(meta) => shadow_name("db", identity_of(&meta)),
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
        if let Ok(meta) = fs::metadata(index.shadow.path()) {
            claim_shadow(&index.shm_path, identity_of(&meta)).map_err(Refusal::reported)?;
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
    let meta = fs::metadata(PathBuf::from(shm)).expect("the database's -shm");
    dir.join(format!("{}-shm", shadow_name("shm", identity_of(&meta))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shadow_name_is_the_files_identity_and_its_lock_byte_is_below_2_to_the_32() {
        assert_eq!(shadow_name("shm", (0x803, 0x1f)), "shm-803-1f.db");
        assert_ne!(shadow_byte((1, 2)), shadow_byte((1, 3)));
        assert!((0..MARK_SPAN).contains(&shadow_byte((u64::MAX, u64::MAX))));
    }

    #[test]
    fn a_directory_name_another_user_took_first_is_passed_over() {
        // Found in review: another local user who made /dev/shm/cipherlite-<uid> first (a
        // sticky directory: the victim can't remove it) disabled encrypted WAL until reboot.
        let base = std::env::temp_dir().join(format!("cipherlite-dirs-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(&base).expect("base");
        let uid = euid();
        let open_to_all = base.join("open-to-all");
        fs::DirBuilder::new()
            .mode(0o777)
            .create(&open_to_all)
            .expect("dir");
        fs::set_permissions(
            &open_to_all,
            std::os::unix::fs::PermissionsExt::from_mode(0o777),
        )
        .expect("chmod");
        let link = base.join("link");
        std::os::unix::fs::symlink(&open_to_all, &link).expect("symlink");
        let theirs = base.join("theirs");
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&theirs)
            .expect("dir");
        let taken_by_other_user =
            uid == 0 && std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).is_ok();
        let mine = base.join("mine");
        let chosen = first_private_directory(
            vec![open_to_all.clone(), link, theirs.clone(), mine.clone()],
            uid,
        );
        if taken_by_other_user {
            assert_eq!(chosen, Ok(mine.clone()));
        } else {
            assert!(chosen == Ok(theirs) || chosen == Ok(mine.clone()));
        }
        let meta = fs::symlink_metadata(&mine).expect("made");
        assert!(taken_by_other_user || meta.is_dir());
        assert_eq!(
            first_private_directory(vec![open_to_all], uid),
            Err(WalIndexRefusal::PrivateDirectory)
        );
        let _ = fs::remove_dir_all(&base);
    }

    #[test]
    fn the_private_directory_is_this_users_alone() {
        let dir = private_directory().expect("private directory");
        let meta = fs::symlink_metadata(&dir).expect("metadata");
        assert!(meta.is_dir());
        assert_eq!(meta.uid(), euid());
        assert_eq!(meta.mode() & 0o777, 0o700);
    }
}
