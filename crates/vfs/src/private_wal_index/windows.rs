//! The Windows primitives of the private wal-index (docs/design.md §4.6, "Windows"; what
//! both platforms share, and the reasons, are in `mod.rs`; the Unix counterpart is
//! `unix.rs`).
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
//! The real `<db>-shm` is the fence ([`super::Fence`]), as on Unix: while an encrypted connection
//! has the WAL open, its process holds shared `LockFileEx` locks on the bytes the win32 VFS
//! locks exclusively to write, checkpoint or rebuild a wal-index (`WAL_WRITE`, `WAL_CKPT`,
//! `WAL_RECOVER`: bytes 120, 121 and 122, os_win.c's `WIN_SHM_BASE`), and on the dead-man
//! switch (byte 128, `WIN_SHM_DMS`); the first to open it empties it. Windows' byte-range
//! locks belong to the handle, as Linux's open-file-description locks belong to the
//! descriptor: one handle per name and process ([`super::FENCES`]) holds them. The handle is opened
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

use super::{
    hash32, holds_wal_index, Identity, Refusal, WalIndexRefusal, FENCED_LOCKS, SHM_DMS, SHM_LOCKS,
};
use std::{
    fs::{self, File, OpenOptions},
    io,
    os::windows::{
        ffi::OsStrExt,
        fs::{FileExt, OpenOptionsExt},
        io::AsRawHandle,
    },
    path::{Path, PathBuf},
    ptr,
    sync::OnceLock,
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

/// ACE types (winnt.h): an access-allowed entry, an access-denied entry.
const ACCESS_ALLOWED_ACE_TYPE: u8 = 0;
const ACCESS_DENIED_ACE_TYPE: u8 = 1;
/// How often a probe that found someone else's lock is made again before it counts
/// (another process's probe of the same range lasts two system calls).
const PROBES: usize = 4;

/// Windows stacks a handle's shared locks on one byte: a process opening connection after
/// connection would pile them up until the last one closes, so the fence locks each shadow
/// byte once per handle.
pub(super) const SHARED_LOCKS_STACK: bool = true;

pub(super) const PRIVATE_DIRECTORY_MESSAGE: &str =
    "no private directory for an encrypted database's wal-index: \
     %LOCALAPPDATA%\\cipherlite\\wal-index and %TEMP%\\cipherlite-wal-index are \
     missing, not this user's alone (owner or access list), or can't be made";
pub(super) const OTHER_WAL_INDEX_MESSAGE: &str =
    "the database is open in WAL mode by a cipherlite process with another wal-index \
     directory (%LOCALAPPDATA% set otherwise): processes sharing an encrypted WAL \
     database must share it";

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
pub(super) fn user_byte() -> u64 {
    u64::from(hash32(user_sid().unwrap_or_default()))
}

/// A path as a NUL-terminated UTF-16 string.
fn wide(path: &Path) -> Vec<u16> {
    path.as_os_str().encode_wide().chain(Some(0)).collect()
}

/// The directory of this user's shadow files: `%LOCALAPPDATA%\cipherlite\wal-index`, else
/// `%TEMP%\cipherlite-wal-index`, the first that is, or can be made, this user's alone.
pub(super) fn private_directory() -> Result<PathBuf, WalIndexRefusal> {
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

/// An open file's identity: its volume's serial number and its file index.
pub(super) fn identity_of(file: &File) -> io::Result<Identity> {
    // SAFETY: a zeroed BY_HANDLE_FILE_INFORMATION is a valid value of the plain C struct.
    let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: an open handle; info is written by the call.
    if unsafe { GetFileInformationByHandle(file.as_raw_handle() as HANDLE, &mut info) } == 0 {
        return Err(io::Error::last_os_error());
    }
    let index = (u64::from(info.nFileIndexHigh) << 32) | u64::from(info.nFileIndexLow);
    Ok((u64::from(info.dwVolumeSerialNumber), index))
}

/// The identity of the file `path` names (what a link leads to), opened for reading.
pub(super) fn file_identity(path: &Path) -> io::Result<Identity> {
    File::open(path).and_then(|f| identity_of(&f))
}

/// The identity of the database's `-shm`, for the tests' `private_shm_of`.
#[cfg(test)]
pub(super) fn test_identity(path: &Path) -> io::Result<Identity> {
    identity_at(path)
}

/// The identity of the file named `path` (the name itself, not what a link leads to),
/// opened without access to its contents.
fn identity_at(path: &Path) -> io::Result<Identity> {
    let file = OpenOptions::new()
        .access_mode(0)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT | FILE_FLAG_BACKUP_SEMANTICS)
        .open(path)?;
    identity_of(&file)
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

/// A shared lock on `len` bytes of `file` at `start`, never waiting.
pub(super) fn lock_shared(file: &File, start: u64, len: u64) -> io::Result<()> {
    lock(file, false, start, len)
}

fn is_lock_violation(e: &io::Error) -> bool {
    e.raw_os_error() == Some(ERROR_LOCK_VIOLATION as i32)
}

/// Whether another handle holds a lock on any of `len` bytes at `start` (none of them this
/// handle's): an exclusive lock taken and let go at once, made again up to [`PROBES`] times
/// while it finds one (another process's probe lasts as long as ours). `len` is not 0
/// (`mark_alone` asks about no empty range).
pub(super) fn others_hold(file: &File, start: u64, len: u64) -> io::Result<bool> {
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

/// Opens `<db>-shm` for the fence: read-write with `write` (made, with `create`), else
/// read-only. Shared for reading and writing, as SQLite opens it, and not for deleting: no
/// one can remove or rename it while it is held.
pub(super) fn open_shm(
    shm_path: &Path,
    _db_path: &Path,
    write: bool,
    create: bool,
) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(write)
        .create(write && create)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
        .custom_flags(FILE_FLAG_OPEN_REPARSE_POINT)
        .open(shm_path)
}

/// Whether opening `<db>-shm` read-write failed for want of the right to write (then it is
/// opened read-only).
pub(super) fn denied(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::PermissionDenied
}

/// Takes the fence's locks on a freshly opened `<db>-shm`, this user's mark taken (see the
/// module doc). On error every lock taken is let go by the caller closing the handle.
pub(super) fn hold_shm_locks(file: &File, writable: bool) -> Result<(), Refusal> {
    let busy = |_| Refusal::Busy;
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

/// The first 16 bytes of `file` (a wal-index header), if one read gives them.
pub(super) fn read_header(file: &File) -> Option<[u8; 16]> {
    let mut header = [0u8; 16];
    match file.seek_read(&mut header, 0) {
        Ok(n) if n == header.len() => Some(header),
        _ => None,
    }
}

/// Whether the name `shm_path` is still the fence's file, `held` as its identity (see the
/// module doc: it can't be removed or renamed while held; checked all the same).
pub(super) fn still_fenced(_file: &File, shm_path: &Path, held: Identity) -> bool {
    identity_at(shm_path).is_ok_and(|now| now == held)
}

/// Closes the fence's `file` (its locks go with it), then, with `delete`, removes
/// `<db>-shm`: closed first, as the handle does not share deletion (and Windows refuses
/// while another process has it open).
pub(super) fn close_fence(file: Option<File>, shm_path: &Path, delete: bool) {
    let had_file = file.is_some();
    drop(file);
    if delete && had_file {
        let _ = fs::remove_file(shm_path);
    }
}
