//! The Unix primitives of the private wal-index (see `mod.rs`): POSIX record locks
//! (open-file-description locks on Linux), `<db>-shm` opened with `O_NOFOLLOW`, a file's
//! identity as its device and inode, and the private directory, `/dev/shm/cipherlite-<uid>`
//! or the next that is this user's alone (owner and mode). The user mark is the byte of the
//! effective uid.

use super::{
    holds_wal_index, Identity, Refusal, WalIndexRefusal, FENCED_LOCKS, SHM_DMS, SHM_LOCKS,
};
use std::{
    ffi::c_int,
    fs::{self, File, OpenOptions},
    io,
    os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt},
    os::unix::io::AsRawFd,
    path::{Path, PathBuf},
};

/// Record-lock commands. On Linux, open-file-description locks: owned by the descriptor, so
/// closing another descriptor of the same file (another connection's, or one opened under
/// another name of the file) drops none of them. Elsewhere POSIX record locks, owned by the
/// process: one descriptor per file and process ([`super::FENCES`]).
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

/// POSIX and open-file-description locks don't stack: locking a byte the descriptor holds
/// already changes nothing, so every claim of a shadow locks its byte.
pub(super) const SHARED_LOCKS_STACK: bool = false;

pub(super) const PRIVATE_DIRECTORY_MESSAGE: &str =
    "no private directory for an encrypted database's wal-index: /dev/shm/cipherlite-<uid>, \
     $XDG_RUNTIME_DIR/cipherlite and ~/.cache/cipherlite-wal-index are missing, not \
     this user's alone, or can't be made";
pub(super) const OTHER_WAL_INDEX_MESSAGE: &str =
    "the database is open in WAL mode by a cipherlite process with another wal-index \
     directory (another /dev/shm: another container or mount namespace): processes \
     sharing an encrypted WAL database must share /dev/shm";

/// This user's lock byte among the user marks: the effective uid.
pub(super) fn user_byte() -> u64 {
    u64::from(euid())
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
pub(super) fn private_directory() -> Result<PathBuf, WalIndexRefusal> {
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

/// A file's device and inode.
pub(super) fn identity_of(file: &File) -> io::Result<Identity> {
    file.metadata().map(|meta| identity_in(&meta))
}

/// The device and inode of the file `path` names (what a link leads to).
pub(super) fn file_identity(path: &Path) -> io::Result<Identity> {
    fs::metadata(path).map(|meta| identity_in(&meta))
}

/// The identity of the database's `-shm`, for the tests' `private_shm_of`.
#[cfg(test)]
pub(super) fn test_identity(path: &Path) -> io::Result<Identity> {
    file_identity(path)
}

fn identity_in(meta: &fs::Metadata) -> Identity {
    (meta.dev(), meta.ino())
}

/// A record lock command on `file` ([`SET_LOCK`]) with `kind` ([`READ_LOCK`], [`WRITE_LOCK`],
/// [`NO_LOCK`]) over `len` bytes at `start`, never waiting.
fn set_lock(file: &File, kind: c_int, start: u64, len: u64) -> io::Result<()> {
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
fn other_lock(file: &File, start: u64, len: u64) -> io::Result<Option<c_int>> {
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

/// A read lock on `len` bytes of `file` at `start`, never waiting.
pub(super) fn lock_shared(file: &File, start: u64, len: u64) -> io::Result<()> {
    set_lock(file, READ_LOCK, start, len)
}

/// Whether another holder has a lock on any of `len` bytes at `start` ([`other_lock`]).
/// `len` is not 0 (`mark_alone` asks about no empty range): to `F_GETLK` that would be
/// every byte from `start` on.
pub(super) fn others_hold(file: &File, start: u64, len: u64) -> io::Result<bool> {
    other_lock(file, start, len).map(|kind| kind.is_some())
}

/// The first 16 bytes of `file` (a wal-index header), if it has them.
pub(super) fn read_header(file: &File) -> Option<[u8; 16]> {
    use std::os::unix::fs::FileExt;
    let mut header = [0u8; 16];
    file.read_exact_at(&mut header, 0).ok()?;
    Some(header)
}

/// Whether the fence's `file`, `held` as its identity, is still linked and still the file
/// named `shm_path` (the name itself, not what a link leads to).
pub(super) fn still_fenced(file: &File, shm_path: &Path, held: Identity) -> bool {
    let linked = file.metadata().is_ok_and(|m| m.nlink() > 0);
    let named = fs::symlink_metadata(shm_path).is_ok_and(|m| identity_in(&m) == held);
    linked && named
}

/// Closes the fence's `file` (its locks go with it), removing `<db>-shm` first with
/// `delete`.
pub(super) fn close_fence(file: Option<File>, shm_path: &Path, delete: bool) {
    if delete && file.is_some() {
        let _ = fs::remove_file(shm_path);
    }
    drop(file);
}

/// Opens `<db>-shm` for the fence, not following a link: read-write with `write` (made,
/// with `create`, with the database's mode, as SQLite makes it), else read-only.
pub(super) fn open_shm(
    shm_path: &Path,
    db_path: &Path,
    write: bool,
    create: bool,
) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).custom_flags(libc::O_NOFOLLOW);
    if write {
        let mode = fs::metadata(db_path)
            .map(|m| m.mode() & 0o777)
            .unwrap_or(0o600);
        options.write(true).create(create).mode(mode);
    }
    options.open(shm_path)
}

/// Whether opening `<db>-shm` read-write failed for want of the right to write (then it is
/// opened read-only).
pub(super) fn denied(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EACCES | libc::EROFS | libc::EPERM)
    )
}

/// Takes the fence's locks on a freshly opened `<db>-shm`, this user's mark taken (see the
/// module doc). On error every lock taken is let go by the caller closing the file (no other
/// descriptor of it is open in this process: [`super::FENCES`]).
pub(super) fn hold_shm_locks(file: &File, writable: bool) -> Result<(), Refusal> {
    let busy = |_| Refusal::Busy;
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

#[cfg(test)]
mod tests {
    use super::*;

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
