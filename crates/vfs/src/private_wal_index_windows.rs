//! The wal-index of an encrypted database on Windows, out of the attacker's reach
//! (docs/design.md §4.6, "Windows"; the Unix counterpart is `private_wal_index.rs`, whose
//! module doc gives the reasons, which are the same here).
//!
//! SQLite's win32 VFS keeps a WAL's wal-index in `<db>-shm` beside the database, where
//! anyone who may write the database's directory could steer SQLite to another page's frame
//! and read SQLite's checksum of the plaintext. So, as on Unix, an encrypted connection's
//! wal-index is SQLite's own shared memory (the win32 VFS's `xShmMap`/`xShmLock`: file
//! mappings and `LockFileEx`) on a *shadow* file (`shadow_file.rs`) in a directory of this
//! user's alone, `%LOCALAPPDATA%\cipherlite\wal-index` ([`private_directory`]), named after
//! the identity of `<db>-shm` (volume serial number and file index,
//! `GetFileInformationByHandle`): every cipherlite process of the user finds the same shadow,
//! with SQLite's WAL concurrency between them unchanged.
//!
//! The directory is private because of its DACL: it is made with a protected DACL that
//! grants this user alone (it inherits nothing from the profile), and at every open its
//! owner must be this user (or SYSTEM or the Administrators group, who own an elevated
//! process's files) and every access-allowed entry of its DACL must be for this user,
//! SYSTEM or Administrators (who can read any process's memory anyway), and it must not be
//! a reparse point; otherwise the next candidate (`%TEMP%\cipherlite-wal-index`) is tried,
//! and without one the connection refuses (`SQLITE_CANTOPEN`, saying so).
//!
//! The real `<db>-shm` is the fence ([`Fence`]), as on Unix: while an encrypted connection
//! has the WAL open, its process holds shared `LockFileEx` locks on the bytes the win32 VFS
//! locks exclusively to write, checkpoint or rebuild a wal-index (`WAL_WRITE`, `WAL_CKPT`,
//! `WAL_RECOVER`: bytes 120, 121 and 122, os_win.c's `WIN_SHM_BASE`), and on the dead-man
//! switch (byte 128, `WIN_SHM_DMS`); the first to open it empties it. Windows' byte-range
//! locks belong to the handle, as Linux's open-file-description locks belong to the
//! descriptor: one handle per name and process ([`FENCES`]) holds them. The handle is opened
//! without `FILE_SHARE_DELETE`, so while any process holds the fence, `<db>-shm` can be
//! neither deleted nor renamed (Windows refuses both while a handle without that sharing is
//! open); the identity check before each write transaction and checkpoint is kept all the
//! same. A held `<db>-shm` with a valid wal-index means another engine is using the WAL:
//! refused with `SQLITE_BUSY_RECOVERY` and the reason. Another OS user's cipherlite (its own
//! `%LOCALAPPDATA%`, so another wal-index) is seen by the per-user lock bytes
//! (`USER_LOCKS` + a hash of the user's SID), and a process of this user with another
//! private directory by the per-shadow bytes, as on Unix.
//!
//! Windows has no `F_GETLK`: whether someone else holds a byte of a range is found by
//! taking an exclusive lock on the range and letting go at once ([`others_hold`]). Two such
//! probes at once see each other; a probe that finds a lock is repeated a few times before
//! it counts, and a refusal is a busy code that the connection's busy handler retries.

use super::shadow_file::ShadowFile;
use cipherlite_sys::ffi;
use std::{
    collections::HashMap,
    ffi::c_int,
    fs::{self, File, OpenOptions},
    io,
    os::windows::{
        ffi::OsStrExt,
        fs::{FileExt, OpenOptionsExt},
        io::AsRawHandle,
    },
    path::{Path, PathBuf},
    ptr,
    sync::{Mutex, MutexGuard, OnceLock},
};
use windows_sys::Win32::{
    Foundation::{LocalFree, ERROR_ALREADY_EXISTS, ERROR_LOCK_VIOLATION, ERROR_SUCCESS, HANDLE},
    Security::{
        Authorization::{
            ConvertSidToStringSidW, ConvertStringSecurityDescriptorToSecurityDescriptorW,
            GetNamedSecurityInfoW, SDDL_REVISION_1, SE_FILE_OBJECT,
        },
        EqualSid, GetAce, GetLengthSid, GetTokenInformation, IsWellKnownSid, TokenUser,
        WinBuiltinAdministratorsSid, WinLocalSystemSid, ACCESS_ALLOWED_ACE, ACE_HEADER, ACL,
        DACL_SECURITY_INFORMATION, OWNER_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID,
        SECURITY_ATTRIBUTES, TOKEN_QUERY, TOKEN_USER,
    },
    Storage::FileSystem::{
        CreateDirectoryW, GetFileAttributesW, GetFileInformationByHandle, LockFileEx, UnlockFileEx,
        BY_HANDLE_FILE_INFORMATION, FILE_ATTRIBUTE_DIRECTORY, FILE_ATTRIBUTE_REPARSE_POINT,
        FILE_FLAG_BACKUP_SEMANTICS, FILE_FLAG_OPEN_REPARSE_POINT, FILE_SHARE_DELETE,
        FILE_SHARE_READ, FILE_SHARE_WRITE, INVALID_FILE_ATTRIBUTES, LOCKFILE_EXCLUSIVE_LOCK,
        LOCKFILE_FAIL_IMMEDIATELY,
    },
    System::{
        Threading::{GetCurrentProcess, OpenProcessToken},
        IO::OVERLAPPED,
    },
};

/// Byte offsets of SQLite's locks in a `-shm` file (os_win.c: `WIN_SHM_BASE` = (22 + 8) * 4
/// = 120, eight lock bytes, then the dead-man switch `WIN_SHM_DMS` = 128; wal.c: lock 0 is
/// `WAL_WRITE`, 1 `WAL_CKPT`, 2 `WAL_RECOVER`): the same bytes as os_unix.c's.
const SHM_LOCKS: u64 = 120;
const FENCED_LOCKS: u64 = 3;
const SHM_DMS: u64 = 128;
/// Where the per-user bytes start: far past any byte SQLite locks (`LockFileEx` may lock
/// beyond the end of a file).
const USER_LOCKS: u64 = 1 << 40;
/// How many bytes each range of marks (users, shadows) spans.
const MARK_SPAN: u64 = 1 << 32;
/// The bytes of the shadow files (as on Unix): `SHADOW_LOCKS + hash(shadow's identity) mod
/// 2^32`.
const SHADOW_LOCKS: u64 = 1 << 41;
/// The wal-index header's `isInit` byte (wal.c `WalIndexHdr`): non-zero once built.
const HEADER_IS_INIT: usize = 12;
/// Its version word: 3007000 (`WALINDEX_MAX_VERSION`), native byte order.
const WALINDEX_VERSION: u32 = 3_007_000;
/// ACE types (winnt.h): an access-allowed entry, an access-denied entry.
const ACCESS_ALLOWED_ACE_TYPE: u8 = 0;
const ACCESS_DENIED_ACE_TYPE: u8 = 1;
/// How often a probe that found someone else's lock is made again before it counts
/// (another process's probe of the same range lasts two system calls).
const PROBES: usize = 4;

/// Why an encrypted connection can't have its WAL's wal-index now (as on Unix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WalIndexRefusal {
    /// Another SQLite library (not cipherlite, or cipherlite without the key) has the WAL
    /// open through `<db>-shm`.
    OtherEngine,
    /// A cipherlite process of another OS user has the WAL open: its wal-index is private
    /// to it.
    OtherUser,
    /// The private directory is not this user's alone (owner or DACL), or can't be made.
    PrivateDirectory,
    /// Another process of this user has the WAL open with another wal-index (another
    /// private directory: `%LOCALAPPDATA%` set otherwise).
    OtherWalIndex,
    /// `<db>-shm` was replaced while the WAL is open.
    FenceGone,
}

impl WalIndexRefusal {
    /// The SQLite result code the VFS returns (busy codes: see the Unix module).
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
                "no private directory for an encrypted database's wal-index: \
                 %LOCALAPPDATA%\\cipherlite\\wal-index and %TEMP%\\cipherlite-wal-index are \
                 missing, not this user's alone (owner or access list), or can't be made"
            }
            WalIndexRefusal::OtherWalIndex => {
                "the database is open in WAL mode by a cipherlite process with another wal-index \
                 directory (%LOCALAPPDATA% set otherwise): processes sharing an encrypted WAL \
                 database must share it"
            }
            WalIndexRefusal::FenceGone => {
                "the database's -shm file was removed or replaced while its WAL is open: no more \
                 writes or checkpoints until the database is closed and opened again"
            }
        }
    }
}

// ---- this user and the private directory -------------------------------------------------

/// This process's user SID, as bytes (a SID is a self-contained value: the bytes are one).
fn user_sid() -> Option<&'static [u8]> {
    static SID: OnceLock<Option<Vec<u8>>> = OnceLock::new();
    SID.get_or_init(query_user_sid).as_deref()
}

fn query_user_sid() -> Option<Vec<u8>> {
    let mut token: HANDLE = ptr::null_mut();
    // SAFETY: the pseudo-handle of this process; token receives a handle we close below.
    if unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut token) } == 0 {
        return None;
    }
    let token = OwnedHandle(token);
    let mut needed = 0u32;
    // SAFETY: a size query (no buffer); it fails with the size needed.
    unsafe { GetTokenInformation(token.0, TokenUser, ptr::null_mut(), 0, &mut needed) };
    // In u64s: TOKEN_USER holds a pointer, and the SID follows it in the same buffer.
    let mut buffer = vec![0u64; (needed as usize).div_ceil(8).max(1)];
    let size = u32::try_from(buffer.len() * 8).ok()?;
    // SAFETY: buffer has `size` bytes, aligned for TOKEN_USER.
    let ok = unsafe {
        GetTokenInformation(
            token.0,
            TokenUser,
            buffer.as_mut_ptr().cast(),
            size,
            &mut needed,
        )
    };
    if ok == 0 {
        return None;
    }
    // SAFETY: filled in as a TOKEN_USER; its SID points into the buffer, alive here.
    unsafe {
        let user = &*buffer.as_ptr().cast::<TOKEN_USER>();
        let sid = user.User.Sid;
        let len = GetLengthSid(sid) as usize;
        Some(std::slice::from_raw_parts(sid.cast::<u8>(), len).to_vec())
    }
}

/// A handle closed when dropped.
struct OwnedHandle(HANDLE);

impl Drop for OwnedHandle {
    fn drop(&mut self) {
        // SAFETY: a handle this value owns, closed once.
        unsafe { windows_sys::Win32::Foundation::CloseHandle(self.0) };
    }
}

/// This user's lock byte among the user marks (below 2^32): a hash of the SID.
fn user_byte() -> u64 {
    u64::from(hash32(user_sid().unwrap_or_default()))
}

fn hash32(bytes: &[u8]) -> u32 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(bytes);
    u32::from_le_bytes([digest[0], digest[1], digest[2], digest[3]])
}

/// A path as a NUL-terminated UTF-16 string.
fn wide(path: &Path) -> Vec<u16> {
    path.as_os_str().encode_wide().chain(Some(0)).collect()
}

/// The directory of this user's shadow files: `%LOCALAPPDATA%\cipherlite\wal-index`, else
/// `%TEMP%\cipherlite-wal-index`, the first that is, or can be made, this user's alone.
pub fn private_directory() -> Result<PathBuf, WalIndexRefusal> {
    let sid = user_sid().ok_or(WalIndexRefusal::PrivateDirectory)?;
    let mut candidates = Vec::new();
    if let Some(local) = std::env::var_os("LOCALAPPDATA").filter(|d| !d.is_empty()) {
        candidates.push(PathBuf::from(local).join("cipherlite").join("wal-index"));
    }
    candidates.push(std::env::temp_dir().join("cipherlite-wal-index"));
    candidates
        .into_iter()
        .filter(|dir| dir.is_absolute())
        .find(|dir| is_private_directory(dir, sid))
        .ok_or(WalIndexRefusal::PrivateDirectory)
}

/// Makes `dir` (with a DACL for this user alone) if missing; whether it is a directory, not a
/// reparse point, owned by this user (or SYSTEM, or Administrators) whose DACL allows no one
/// else.
fn is_private_directory(dir: &Path, sid: &[u8]) -> bool {
    if let Some(parent) = dir.parent() {
        // %LOCALAPPDATA%\cipherlite may not exist yet: it inherits the profile's access list.
        let _ = fs::create_dir_all(parent);
    }
    if make_private_directory(dir, sid).is_err() {
        return false;
    }
    let name = wide(dir);
    // SAFETY: name is NUL-terminated.
    let attributes = unsafe { GetFileAttributesW(name.as_ptr()) };
    if attributes == INVALID_FILE_ATTRIBUTES
        || attributes & FILE_ATTRIBUTE_DIRECTORY == 0
        || attributes & FILE_ATTRIBUTE_REPARSE_POINT != 0
    {
        return false;
    }
    only_for(&name, sid)
}

/// Makes `dir` with a protected DACL that grants this user (`sid`) full control and no one
/// else anything; an existing one is left as it is (and checked by the caller).
fn make_private_directory(dir: &Path, sid: &[u8]) -> io::Result<()> {
    let mut sid_text: *mut u16 = ptr::null_mut();
    let mut sid_bytes = sid.to_vec();
    // SAFETY: sid_bytes is a valid SID (the token's, copied); the string is LocalFree'd.
    if unsafe { ConvertSidToStringSidW(sid_bytes.as_mut_ptr().cast(), &mut sid_text) } == 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a NUL-terminated string the call above allocated.
    let sid_string = unsafe {
        let len = (0..).take_while(|&i| *sid_text.add(i) != 0).count();
        let text = String::from_utf16_lossy(std::slice::from_raw_parts(sid_text, len));
        LocalFree(sid_text.cast());
        text
    };
    // P: protected (nothing inherited); OICI: files and directories made in it inherit the
    // entry; FA: full access.
    let sddl: Vec<u16> = format!("D:P(A;OICI;FA;;;{sid_string})")
        .encode_utf16()
        .chain(Some(0))
        .collect();
    let mut descriptor: PSECURITY_DESCRIPTOR = ptr::null_mut();
    // SAFETY: sddl is NUL-terminated; descriptor receives a LocalAlloc'd descriptor.
    let ok = unsafe {
        ConvertStringSecurityDescriptorToSecurityDescriptorW(
            sddl.as_ptr(),
            SDDL_REVISION_1,
            &mut descriptor,
            ptr::null_mut(),
        )
    };
    if ok == 0 {
        return Err(io::Error::last_os_error());
    }
    let attributes = SECURITY_ATTRIBUTES {
        nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
        lpSecurityDescriptor: descriptor,
        bInheritHandle: 0,
    };
    let name = wide(dir);
    // SAFETY: name is NUL-terminated; attributes points to the live descriptor.
    let made = unsafe { CreateDirectoryW(name.as_ptr(), &attributes) };
    let error = io::Error::last_os_error();
    // SAFETY: allocated by the conversion above, freed once.
    unsafe { LocalFree(descriptor) };
    if made != 0 || error.raw_os_error() == Some(ERROR_ALREADY_EXISTS as i32) {
        Ok(())
    } else {
        Err(error)
    }
}

/// Whether the file named `name` (NUL-terminated) is owned by this user (`sid`), SYSTEM or
/// Administrators, and its DACL allows no one else: every access-allowed entry is for one of
/// them (entries that deny are fine; a missing DACL, which allows everyone, is not).
fn only_for(name: &[u16], sid: &[u8]) -> bool {
    let mut owner: PSID = ptr::null_mut();
    let mut dacl: *mut ACL = ptr::null_mut();
    let mut descriptor: PSECURITY_DESCRIPTOR = ptr::null_mut();
    // SAFETY: name is NUL-terminated; the out pointers point into `descriptor`, freed below.
    let rc = unsafe {
        GetNamedSecurityInfoW(
            name.as_ptr(),
            SE_FILE_OBJECT,
            OWNER_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION,
            &mut owner,
            ptr::null_mut(),
            &mut dacl,
            ptr::null_mut(),
            &mut descriptor,
        )
    };
    if rc != ERROR_SUCCESS {
        return false;
    }
    let mut user_copy = sid.to_vec();
    let user: PSID = user_copy.as_mut_ptr().cast();
    // SAFETY: SIDs from the descriptor (alive until freed) or the token's copy.
    let trusted = |who: PSID| unsafe {
        !who.is_null()
            && (EqualSid(who, user) != 0
                || IsWellKnownSid(who, WinLocalSystemSid) != 0
                || IsWellKnownSid(who, WinBuiltinAdministratorsSid) != 0)
    };
    let mut private = trusted(owner) && !dacl.is_null();
    if private {
        // SAFETY: a DACL of the descriptor.
        let count = unsafe { (*dacl).AceCount };
        for index in 0..u32::from(count) {
            let mut ace: *mut std::ffi::c_void = ptr::null_mut();
            // SAFETY: index is below the DACL's count; ace points into the DACL.
            if unsafe { GetAce(dacl, index, &mut ace) } == 0 {
                private = false;
                break;
            }
            // SAFETY: every ACE starts with its header.
            let kind = unsafe { (*ace.cast::<ACE_HEADER>()).AceType };
            let allowed_to_trusted = kind == ACCESS_ALLOWED_ACE_TYPE && {
                // SAFETY: an access-allowed ACE: its SID starts at SidStart.
                let who =
                    unsafe { ptr::addr_of_mut!((*ace.cast::<ACCESS_ALLOWED_ACE>()).SidStart) };
                trusted(who.cast())
            };
            if !(allowed_to_trusted || kind == ACCESS_DENIED_ACE_TYPE) {
                private = false;
                break;
            }
        }
    }
    // SAFETY: LocalAlloc'd by GetNamedSecurityInfoW, freed once.
    unsafe { LocalFree(descriptor) };
    private
}

/// The shadow file's name for a database: after the identity (volume serial number, file
/// index) of its `<db>-shm`, or where there is none, of the database file.
fn shadow_name(kind: &str, (volume, index): (u64, u64)) -> String {
    format!("{kind}-{volume:x}-{index:x}.db")
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

/// An open file's identity: its volume's serial number and its file index.
fn identity_of(file: &File) -> io::Result<(u64, u64)> {
    // SAFETY: a zeroed BY_HANDLE_FILE_INFORMATION is a valid value of the plain C struct.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: an open handle; info is written by the call.
    if unsafe { GetFileInformationByHandle(file.as_raw_handle() as HANDLE, &mut info) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let index = (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow);
    Ok((u64::from(info.dwVolumeSerialNumber), index))
}

/// The identity of the file named `path` (the name itself, not what a link leads to),
/// opened without access to its contents.
fn identity_at(path: &Path) -> io::Result<(u64, u64)> {
    let file = OpenOptions::new()
        .access_mode(0)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)?;
    identity_of(&file)
}

// ---- the fence on the real -shm ---------------------------------------------------------

/// One process's hold on a database's real `<db>-shm`, shared by all its connections to it
/// through one name (one handle per name: the locks are the handle's).
struct Fence {
    /// `None` where `<db>-shm` can neither be opened nor made.
    file: Option<File>,
    /// The file's identity, as opened.
    identity: Option<(u64, u64)>,
    /// The shadow bytes this handle has locked (each once: Windows stacks a handle's shared
    /// locks on one byte, and a process opening connection after connection would pile
    /// them up until the last one closes).
    shadow_marks: Vec<u64>,
    users: usize,
}

static FENCES: Mutex<Option<HashMap<PathBuf, Fence>>> = Mutex::new(None);

fn fences() -> MutexGuard<'static, Option<HashMap<PathBuf, Fence>>> {
    // A panic while holding it leaves the map as it was between two whole operations.
    FENCES.lock().unwrap_or_else(|e| e.into_inner())
}

/// `OVERLAPPED` naming the offset `start` (the handle is synchronous: only the offset is
/// read).
fn at(start: u64) -> OVERLAPPED {
    // SAFETY: a zeroed OVERLAPPED is a valid value of the plain C struct.
    let mut overlapped: OVERLAPPED = unsafe { std::mem::zeroed() };
    overlapped.Anonymous.Anonymous.Offset = start as u32;
    overlapped.Anonymous.Anonymous.OffsetHigh = (start >> 32) as u32;
    overlapped
}

/// Locks `len` bytes of `file` at `start`, shared or `exclusive`, never waiting
/// (`ERROR_LOCK_VIOLATION` when another handle holds a conflicting lock).
fn lock(file: &File, exclusive: bool, start: u64, len: u64) -> io::Result<()> {
    let mut overlapped = at(start);
    let flags = LOCKFILE_FAIL_IMMEDIATELY
        | if exclusive {
            LOCKFILE_EXCLUSIVE_LOCK
        } else {
            0
        };
    // SAFETY: an open synchronous handle; overlapped lives across the call.
    let ok = unsafe {
        LockFileEx(
            file.as_raw_handle() as HANDLE,
            flags,
            0,
            len as u32,
            (len >> 32) as u32,
            &mut overlapped,
        )
    };
    if ok != 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Lets go of the lock on exactly `len` bytes at `start`.
fn unlock(file: &File, start: u64, len: u64) -> io::Result<()> {
    let mut overlapped = at(start);
    // SAFETY: as in lock.
    let ok = unsafe {
        UnlockFileEx(
            file.as_raw_handle() as HANDLE,
            0,
            len as u32,
            (len >> 32) as u32,
            &mut overlapped,
        )
    };
    if ok != 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn is_lock_violation(e: &io::Error) -> bool {
    e.raw_os_error() == Some(ERROR_LOCK_VIOLATION as i32)
}

/// Whether another handle holds a lock on any of `len` bytes at `start` (none of them this
/// handle's): an exclusive lock taken and let go at once, made again up to [`PROBES`] times
/// while it finds one (another process's probe lasts as long as ours).
fn others_hold(file: &File, start: u64, len: u64) -> io::Result<bool> {
    for attempt in 0..PROBES {
        match lock(file, true, start, len) {
            Ok(()) => {
                unlock(file, start, len)?;
                return Ok(false);
            }
            Err(e) if is_lock_violation(&e) => {
                if attempt + 1 < PROBES {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Opens `<db>-shm` for the fence: read-write (made, if `create`), else read-only, else none
/// if it doesn't exist and can't (or needn't) be made. Shared for reading and writing, as
/// SQLite opens it, and not for deleting: no one can remove or rename it while it is held.
fn open_shm(shm_path: &Path, create: bool) -> io::Result<Option<(File, bool)>> {
    let options = |write: bool| {
        let mut options = OpenOptions::new();
        options
            .read(true)
            .write(write)
            .create(write && create)
            .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
            .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT);
        options
    };
    match options(true).open(shm_path) {
        Ok(f) => Ok(Some((f, true))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            match options(false).open(shm_path) {
                Ok(f) => Ok(Some((f, false))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Takes the fence on a freshly opened `<db>-shm` (see the module doc). On error every lock
/// taken is let go by the caller closing the handle.
fn raise_fence(file: &File, writable: bool) -> Result<(), Refusal> {
    let busy = |_| Refusal::Busy;
    mark_alone(
        file,
        USER_LOCKS,
        user_byte(),
        false,
        WalIndexRefusal::OtherUser,
    )?;
    // Another engine writing, checkpointing or rebuilding its wal-index holds one of these
    // exclusively: then it is using the WAL.
    lock(file, false, SHM_LOCKS, FENCED_LOCKS).map_err(|e| {
        if is_lock_violation(&e) {
            Refusal::Refused(WalIndexRefusal::OtherEngine)
        } else {
            Refusal::Busy
        }
    })?;
    match lock(file, true, SHM_DMS, 1) {
        Ok(()) => {
            // The first to open it: whatever wal-index it holds is a dead process's.
            let emptied = if writable { empty(file) } else { Ok(()) };
            unlock(file, SHM_DMS, 1).map_err(busy)?;
            emptied.map_err(busy)?;
        }
        Err(e) if is_lock_violation(&e) => {
            // Held: shared by a process that has it open (a cipherlite process: the file
            // empty or zeros; another engine: a wal-index in it), or exclusively by one
            // between two steps of opening (then the shared lock below fails: busy).
            lock(file, false, SHM_DMS, 1).map_err(busy)?;
            if holds_wal_index(file) {
                return Err(Refusal::Refused(WalIndexRefusal::OtherEngine));
            }
            return Ok(());
        }
        Err(_) => return Err(Refusal::Busy),
    }
    lock(file, false, SHM_DMS, 1).map_err(busy)
}

/// Empties `<db>-shm`; where that fails (another process maps it), zeros its header, as
/// SQLite's win32 VFS does.
fn empty(file: &File) -> io::Result<()> {
    if file.set_len(0).is_ok() {
        return Ok(());
    }
    let zeros = [0u8; 16];
    let written = file.seek_write(&zeros, 0)?;
    if written == zeros.len() {
        Ok(())
    } else {
        Err(io::Error::from(io::ErrorKind::WriteZero))
    }
}

/// Whether `file` starts with an initialised wal-index header.
fn holds_wal_index(file: &File) -> bool {
    let mut header = [0u8; 16];
    match file.seek_read(&mut header, 0) {
        Ok(n) if n == header.len() => {}
        _ => return false,
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
    // One handle per name however the database was named.
    let db_path = fs::canonicalize(db_path).unwrap_or_else(|_| db_path.to_path_buf());
    let mut shm = db_path.into_os_string();
    shm.push("-shm");
    let shm_path = PathBuf::from(shm);
    let mut guard = fences();
    let map = guard.get_or_insert_with(HashMap::new);
    if let Some(fence) = map.get_mut(&shm_path) {
        fence.users += 1;
        return Ok((shm_path, fence.identity));
    }
    let opened = open_shm(&shm_path, create).map_err(|_| Refusal::Busy)?;
    let mut identity = None;
    let file = match opened {
        Some((f, writable)) => {
            // On error the handle is closed here, letting go of what was taken.
            raise_fence(&f, writable)?;
            identity = identity_of(&f).ok();
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
fn claim_shadow(shm_path: &Path, shadow: (u64, u64)) -> Result<(), Refusal> {
    let mut guard = fences();
    let Some(fence) = guard.as_mut().and_then(|map| map.get_mut(shm_path)) else {
        return Ok(());
    };
    let Some(file) = fence.file.as_ref() else {
        return Ok(());
    };
    let own = shadow_byte(shadow);
    let held = fence.shadow_marks.contains(&own);
    let marked = mark_alone(
        file,
        SHADOW_LOCKS,
        own,
        held,
        WalIndexRefusal::OtherWalIndex,
    );
    // Refused, the byte was locked all the same (only `Busy` may mean it was not).
    if !held && marked != Err(Refusal::Busy) {
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
        lock(file, false, base + own, 1).map_err(busy)?;
    }
    let before = own > 0 && others_hold(file, base, own).map_err(busy)?;
    let after = own + 1 < MARK_SPAN
        && others_hold(file, base + own + 1, MARK_SPAN - own - 1).map_err(busy)?;
    if before || after {
        return Err(Refusal::Refused(refusal));
    }
    Ok(())
}

/// The lock byte of a shadow file (below 2^32).
fn shadow_byte((volume, index): (u64, u64)) -> u64 {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&volume.to_le_bytes());
    bytes[8..].copy_from_slice(&index.to_le_bytes());
    u64::from(hash32(&bytes))
}

/// Whether `<db>-shm` at `shm_path` is still the file the fence holds (see the module doc:
/// it can't be removed or renamed while held; checked all the same).
fn fence_intact(shm_path: &Path) -> bool {
    let guard = fences();
    let Some(fence) = guard.as_ref().and_then(|map| map.get(shm_path)) else {
        return true;
    };
    let (Some(_), Some(held)) = (&fence.file, fence.identity) else {
        return true;
    };
    identity_at(shm_path).is_ok_and(|now| now == held)
}

/// Leaves this process's fence on `shm_path`; the last user closes it (and, with `delete`,
/// removes `<db>-shm`, as SQLite would: Windows refuses while another process has it open).
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
            let had_file = fence.file.is_some();
            // Closed first: the handle does not share deletion.
            drop(fence);
            if delete && had_file {
                let _ = fs::remove_file(shm_path);
            }
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
            None => match File::open(db_path).and_then(|f| identity_of(&f)) {
                Ok(id) => shadow_name("db", id),
                // Not a file of this file system: its name is all there is.
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
        // (On error, dropping `index` closes the shadow and leaves the fence.)
        if let Ok(id) = File::open(index.shadow.path()).and_then(|f| identity_of(&f)) {
            claim_shadow(&index.shm_path, id).map_err(Refusal::reported)?;
        }
        Ok(index)
    }

    /// Whether `<db>-shm` is still the file fenced when the wal-index was opened.
    pub fn fence_intact(&self) -> bool {
        fence_intact(&self.shm_path)
    }

    /// The shadow file, for SQLite's shared-memory calls.
    pub fn file(&mut self) -> *mut ffi::sqlite3_file {
        self.shadow.file()
    }

    /// Unmaps the wal-index (`xShmUnmap` with SQLite's `delete`), closes the shadow and
    /// leaves the fence; with `delete` (SQLite holds the database's EXCLUSIVE lock: no one
    /// else has the WAL open) the shadow and `<db>-shm` go too.
    pub fn close(mut self, delete: bool) -> c_int {
        self.shut(delete)
    }

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
/// at open. `Ok` where nothing is known.
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

/// The file holding the private wal-index of the database at `db_path`, for tests that read
/// what SQLite keeps there.
#[cfg(test)]
pub(super) fn private_shm_of(db_path: &Path) -> PathBuf {
    let dir = private_directory().expect("private directory");
    let mut shm = db_path.as_os_str().to_owned();
    shm.push("-shm");
    let id = identity_at(Path::new(&shm)).expect("the database's -shm");
    dir.join(format!("{}-shm", shadow_name("shm", id)))
}
