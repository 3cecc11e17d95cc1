//! The OS VFS's `open` system call, hooked to follow `/proc/self/fd/<n>` links.

use cipherlite_sys::ffi;
use std::ffi::{c_char, c_int, CStr};

/// Linux's O_NOFOLLOW (arm64 has its own value).
#[cfg(target_arch = "aarch64")]
const O_NOFOLLOW: c_int = 0o100000;
#[cfg(not(target_arch = "aarch64"))]
const O_NOFOLLOW: c_int = 0o400000;
const PROC_FD_DIR: &[u8] = b"/proc/self/fd/";

/// The OS VFS opens every file with O_NOFOLLOW, which `/proc/self/fd/<n>` (a "magic"
/// link to the open file) can't be opened with. Its `open` system call is replaced, once,
/// by one that drops O_NOFOLLOW for paths under /proc/self/fd/ only and is the original
/// for every other path (any file that is not a magic link is opened exactly as before).
static ORIGINAL_OPEN: std::sync::OnceLock<OpenFn> = std::sync::OnceLock::new();
static OPEN_HOOK: std::sync::OnceLock<Result<(), c_int>> = std::sync::OnceLock::new();

type OpenFn = unsafe extern "C" fn(*const c_char, c_int, c_int) -> c_int;

unsafe extern "C" fn open_following_proc_fd(
    path: *const c_char,
    flags: c_int,
    mode: c_int,
) -> c_int {
    // Always set: the original is stored before the hook is installed.
    let Some(original) = ORIGINAL_OPEN.get() else {
        return -1;
    };
    let mut flags = flags;
    // SAFETY: the OS VFS passes a C string (or null, which the original gets unchanged).
    if !path.is_null()
        && unsafe { CStr::from_ptr(path) }
            .to_bytes()
            .starts_with(PROC_FD_DIR)
    {
        flags &= !O_NOFOLLOW;
    }
    // SAFETY: the original system call of the OS VFS, with its own signature.
    unsafe { original(path, flags, mode) }
}

/// Installs [`open_following_proc_fd`] in the OS VFS `base` (once per process).
pub(super) fn install_open_hook(base: *mut ffi::sqlite3_vfs) -> Result<(), c_int> {
    let installed = OPEN_HOOK.get_or_init(|| {
        // SAFETY: base is the default VFS; its system-call table holds `open` as a
        // `int(*)(const char*, int, int)` stored under SQLite's generic pointer type, so
        // the casts between the two are exact. The replacement is set once per process
        // (OnceLock), before any file is opened through this module. SQLite documents
        // xSetSystemCall as not thread-safe: a worker thread opening a file at that very
        // moment reads either the old or the new pointer (one aligned word), and both
        // open its path the same way unless it is under /proc/self/fd/.
        unsafe {
            let (Some(get), Some(set)) = ((*base).xGetSystemCall, (*base).xSetSystemCall) else {
                return Err(ffi::SQLITE_CANTOPEN);
            };
            let Some(original) = get(base, c"open".as_ptr()) else {
                return Err(ffi::SQLITE_CANTOPEN);
            };
            let original: OpenFn = std::mem::transmute::<unsafe extern "C" fn(), OpenFn>(original);
            let hook =
                std::mem::transmute::<OpenFn, unsafe extern "C" fn()>(open_following_proc_fd);
            // Stored before the hook is installed, so the hook always finds it.
            let original = *ORIGINAL_OPEN.get_or_init(|| original);
            let rc = set(base, c"open".as_ptr(), Some(hook));
            if rc != ffi::SQLITE_OK {
                return Err(rc);
            }
            let _ = original;
            Ok(())
        }
    });
    *installed
}
