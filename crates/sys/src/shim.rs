//! One registrar for the VFSes written in Rust (the keyed VFS, the descriptor VFS and the
//! test suites' simulated disk), in the manner of `cipherlite_sqlite::vtab::create_module`:
//! a [`VfsShim`] says what its VFS does, and [`register`] builds the `sqlite3_vfs` for it,
//! forwards what it leaves out (the dynamic-library calls, randomness, sleep, time, the
//! last error) to the VFS beneath, catches every panic at the C boundary ([`guard`]) and
//! unregisters the VFS when the [`Registered`] handle is dropped. Each shim keeps its own
//! `sqlite3_io_methods`: what its files do has nothing in common with the others'.

use crate::ffi;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

/// Runs a callback from C, turning a panic into `err`: nothing unwinds into SQLite. Every
/// callback of every shim (its VFS's and its files') runs inside one.
pub fn guard<T>(err: T, f: impl FnOnce() -> T) -> T {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(err)
}

/// What a VFS written in Rust does. [`register`] calls these from SQLite, inside
/// [`guard`], on the state it was given; what a shim does not override goes to the VFS
/// beneath ([`base`](Self::base)) through the functions of [`forward`].
pub trait VfsShim: Sized + 'static {
    /// The highest `sqlite3_vfs` version this shim implements (lowered to the base VFS's).
    const VERSION: c_int;

    /// The VFS beneath, which stays registered while this one is (null: none; the
    /// pass-throughs then report failure, or nothing).
    fn base(&self) -> *mut ffi::sqlite3_vfs;

    /// The size of this VFS's `sqlite3_file` (`szOsFile`).
    fn file_size(&self) -> c_int;

    /// `mxPathname`: the base VFS's, 512 without one.
    fn max_pathname(&self) -> c_int {
        // SAFETY: the base VFS is null or registered (the trait's contract).
        unsafe { self.base().as_ref() }.map_or(512, |b| b.mxPathname)
    }

    /// # Safety
    /// SQLite's `xOpen`: `file` has [`file_size`](Self::file_size) bytes, `name` is null or
    /// a C string that outlives the file, `out_flags` is null or writable.
    unsafe fn open(
        &self,
        name: *const c_char,
        file: *mut ffi::sqlite3_file,
        flags: c_int,
        out_flags: *mut c_int,
    ) -> c_int;

    /// # Safety
    /// SQLite's `xDelete`: `name` is a C string.
    unsafe fn delete(&self, name: *const c_char, sync_dir: c_int) -> c_int {
        // SAFETY: the caller's contract is the base VFS's.
        unsafe { forward::delete(self.base(), name, sync_dir) }
    }

    /// # Safety
    /// SQLite's `xAccess`: `name` is a C string, `out` writable.
    unsafe fn access(&self, name: *const c_char, flags: c_int, out: *mut c_int) -> c_int {
        // SAFETY: the caller's contract is the base VFS's.
        unsafe { forward::access(self.base(), name, flags, out) }
    }

    /// # Safety
    /// SQLite's `xFullPathname`: `name` is a C string, `out` has `n` bytes.
    unsafe fn full_pathname(&self, name: *const c_char, n: c_int, out: *mut c_char) -> c_int {
        // SAFETY: the caller's contract is the base VFS's.
        unsafe { forward::full_pathname(self.base(), name, n, out) }
    }

    /// # Safety
    /// SQLite's `xRandomness`: `out` has `n` bytes.
    unsafe fn randomness(&self, n: c_int, out: *mut c_char) -> c_int {
        // SAFETY: the caller's contract is the base VFS's.
        unsafe { forward::randomness(self.base(), n, out) }
    }

    fn sleep(&self, micros: c_int) -> c_int {
        // SAFETY: the base VFS is null or registered.
        unsafe { forward::sleep(self.base(), micros) }
    }

    /// # Safety
    /// SQLite's `xCurrentTime`: `out` is writable.
    unsafe fn current_time(&self, out: *mut f64) -> c_int {
        // SAFETY: the caller's contract is the base VFS's.
        unsafe { forward::current_time(self.base(), out) }
    }
}

/// The registration: SQLite's table first (SQLite hands back `*mut sqlite3_vfs`), the name
/// it points into, then the shim's state.
#[repr(C)]
struct Shim<T> {
    vfs: ffi::sqlite3_vfs,
    name: CString,
    state: T,
}

/// A registered shim; dropping it unregisters the VFS and drops its state. Every
/// connection using the VFS must be closed first.
pub struct Registered<T: VfsShim> {
    shim: *mut Shim<T>,
}

/// Registers `state` as the VFS named `name` (not the default VFS).
pub fn register<T: VfsShim>(name: CString, state: T) -> Result<Registered<T>, c_int> {
    let base = state.base();
    // SAFETY: the base VFS is null or registered (the trait's contract).
    let base_ref = unsafe { base.as_ref() };
    let version = base_ref.map_or(T::VERSION, |b| b.iVersion.min(T::VERSION));
    let vfs = ffi::sqlite3_vfs {
        iVersion: version,
        szOsFile: state.file_size(),
        mxPathname: state.max_pathname(),
        pNext: ptr::null_mut(),
        zName: ptr::null(),
        pAppData: ptr::null_mut(),
        // The pass-throughs are there whatever the base VFS has (SQLite calls some without
        // looking): each reports failure, or nothing, where the base lacks it.
        xOpen: Some(x_open::<T>),
        xDelete: Some(x_delete::<T>),
        xAccess: Some(x_access::<T>),
        xFullPathname: Some(x_full_pathname::<T>),
        xDlOpen: Some(x_dl_open::<T>),
        xDlError: Some(x_dl_error::<T>),
        xDlSym: Some(x_dl_sym::<T>),
        xDlClose: Some(x_dl_close::<T>),
        xRandomness: Some(x_randomness::<T>),
        xSleep: Some(x_sleep::<T>),
        xCurrentTime: Some(x_current_time::<T>),
        xGetLastError: Some(x_get_last_error::<T>),
        xCurrentTimeInt64: (version >= 2
            && base_ref.is_some_and(|b| b.xCurrentTimeInt64.is_some()))
        .then_some(x_current_time_int64::<T> as _),
        xSetSystemCall: None,
        xGetSystemCall: None,
        xNextSystemCall: None,
    };
    let shim = Box::into_raw(Box::new(Shim { vfs, name, state }));
    // SAFETY: shim is a fresh, leaked allocation that outlives the registration (freed
    // only in Drop after unregistering, or here if registering fails); zName points into
    // it.
    unsafe {
        (*shim).vfs.zName = (*shim).name.as_ptr();
        (*shim).vfs.pAppData = shim.cast();
        let rc = ffi::sqlite3_vfs_register(ptr::addr_of_mut!((*shim).vfs), 0);
        if rc != ffi::SQLITE_OK {
            drop(Box::from_raw(shim));
            return Err(rc);
        }
    }
    Ok(Registered { shim })
}

impl<T: VfsShim> Registered<T> {
    pub fn state(&self) -> &T {
        // SAFETY: the shim lives as long as self.
        unsafe { &(*self.shim).state }
    }

    /// The name to pass to `sqlite3_open_v2`.
    pub fn name(&self) -> &CStr {
        // SAFETY: the shim lives as long as self.
        unsafe { &(*self.shim).name }
    }

    /// The registered `sqlite3_vfs` (what `SQLITE_FCNTL_VFS_POINTER` reports).
    pub fn vfs(&self) -> *mut ffi::sqlite3_vfs {
        // SAFETY: the shim lives as long as self; no reference is made.
        unsafe { ptr::addr_of_mut!((*self.shim).vfs) }
    }
}

impl<T: VfsShim> Drop for Registered<T> {
    fn drop(&mut self) {
        // SAFETY: registered in `register`; after unregistering no new file can be opened
        // through it, and the owner closed every connection using it.
        unsafe {
            ffi::sqlite3_vfs_unregister(ptr::addr_of_mut!((*self.shim).vfs));
            drop(Box::from_raw(self.shim));
        }
    }
}

/// The state of the shim whose VFS is `vfs`.
///
/// # Safety
/// `vfs` was registered by [`register::<T>`](register) and is still registered.
pub unsafe fn state_of<'a, T: VfsShim>(vfs: *mut ffi::sqlite3_vfs) -> &'a T {
    // SAFETY: pAppData is the Shim<T> (set in `register`), alive while registered.
    unsafe { &(*(*vfs).pAppData.cast::<Shim<T>>()).state }
}

unsafe extern "C" fn x_open<T: VfsShim>(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite calls with the VFS registered as T and keeps xOpen's contract.
    guard(ffi::SQLITE_CANTOPEN, || unsafe {
        state_of::<T>(vfs).open(name, file, flags, out_flags)
    })
}

unsafe extern "C" fn x_delete<T: VfsShim>(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    sync_dir: c_int,
) -> c_int {
    // SAFETY: as x_open, for xDelete.
    guard(ffi::SQLITE_IOERR_DELETE, || unsafe {
        state_of::<T>(vfs).delete(name, sync_dir)
    })
}

unsafe extern "C" fn x_access<T: VfsShim>(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    flags: c_int,
    out: *mut c_int,
) -> c_int {
    // SAFETY: as x_open, for xAccess.
    guard(ffi::SQLITE_IOERR_ACCESS, || unsafe {
        state_of::<T>(vfs).access(name, flags, out)
    })
}

unsafe extern "C" fn x_full_pathname<T: VfsShim>(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    n: c_int,
    out: *mut c_char,
) -> c_int {
    // SAFETY: as x_open, for xFullPathname.
    guard(ffi::SQLITE_CANTOPEN, || unsafe {
        state_of::<T>(vfs).full_pathname(name, n, out)
    })
}

unsafe extern "C" fn x_randomness<T: VfsShim>(
    vfs: *mut ffi::sqlite3_vfs,
    n: c_int,
    out: *mut c_char,
) -> c_int {
    // SAFETY: as x_open, for xRandomness.
    guard(0, || unsafe { state_of::<T>(vfs).randomness(n, out) })
}

unsafe extern "C" fn x_sleep<T: VfsShim>(vfs: *mut ffi::sqlite3_vfs, micros: c_int) -> c_int {
    // SAFETY: SQLite calls with the VFS registered as T.
    guard(0, || unsafe { state_of::<T>(vfs) }.sleep(micros))
}

unsafe extern "C" fn x_current_time<T: VfsShim>(
    vfs: *mut ffi::sqlite3_vfs,
    out: *mut f64,
) -> c_int {
    // SAFETY: as x_open, for xCurrentTime.
    guard(ffi::SQLITE_ERROR, || unsafe {
        state_of::<T>(vfs).current_time(out)
    })
}

unsafe extern "C" fn x_dl_open<T: VfsShim>(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
) -> *mut c_void {
    // SAFETY: SQLite calls with the VFS registered as T; forwarded with the base's own
    // pointer and SQLite's arguments.
    guard(ptr::null_mut(), || unsafe {
        let base = state_of::<T>(vfs).base();
        match base.as_ref().and_then(|b| b.xDlOpen) {
            Some(f) => f(base, name),
            None => ptr::null_mut(),
        }
    })
}

unsafe extern "C" fn x_dl_error<T: VfsShim>(
    vfs: *mut ffi::sqlite3_vfs,
    n: c_int,
    out: *mut c_char,
) {
    // SAFETY: as x_dl_open.
    guard((), || unsafe {
        let base = state_of::<T>(vfs).base();
        if let Some(f) = base.as_ref().and_then(|b| b.xDlError) {
            f(base, n, out)
        }
    })
}

type DlSym = Option<unsafe extern "C" fn(*mut ffi::sqlite3_vfs, *mut c_void, *const c_char)>;

unsafe extern "C" fn x_dl_sym<T: VfsShim>(
    vfs: *mut ffi::sqlite3_vfs,
    handle: *mut c_void,
    symbol: *const c_char,
) -> DlSym {
    // SAFETY: as x_dl_open.
    guard(None, || unsafe {
        let base = state_of::<T>(vfs).base();
        match base.as_ref().and_then(|b| b.xDlSym) {
            Some(f) => f(base, handle, symbol),
            None => None,
        }
    })
}

unsafe extern "C" fn x_dl_close<T: VfsShim>(vfs: *mut ffi::sqlite3_vfs, handle: *mut c_void) {
    // SAFETY: as x_dl_open.
    guard((), || unsafe {
        let base = state_of::<T>(vfs).base();
        if let Some(f) = base.as_ref().and_then(|b| b.xDlClose) {
            f(base, handle)
        }
    })
}

unsafe extern "C" fn x_get_last_error<T: VfsShim>(
    vfs: *mut ffi::sqlite3_vfs,
    n: c_int,
    out: *mut c_char,
) -> c_int {
    // SAFETY: as x_dl_open.
    guard(0, || unsafe {
        let base = state_of::<T>(vfs).base();
        match base.as_ref().and_then(|b| b.xGetLastError) {
            Some(f) => f(base, n, out),
            None => 0,
        }
    })
}

unsafe extern "C" fn x_current_time_int64<T: VfsShim>(
    vfs: *mut ffi::sqlite3_vfs,
    out: *mut ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: as x_dl_open (installed only when the base VFS has it).
    guard(ffi::SQLITE_ERROR, || unsafe {
        let base = state_of::<T>(vfs).base();
        match base.as_ref().and_then(|b| b.xCurrentTimeInt64) {
            Some(f) => f(base, out),
            None => ffi::SQLITE_ERROR,
        }
    })
}

/// The calls of the VFS beneath a shim, for the methods a shim overrides and still passes
/// on in part. Each reports the failure SQLite expects when `base` is null or lacks it.
pub mod forward {
    use super::*;

    /// # Safety
    /// `base` null or registered; SQLite's `xDelete` contract.
    pub unsafe fn delete(
        base: *mut ffi::sqlite3_vfs,
        name: *const c_char,
        sync_dir: c_int,
    ) -> c_int {
        // SAFETY: base is null or registered and the arguments are SQLite's (the
        // caller's contract).
        unsafe {
            match base.as_ref().and_then(|b| b.xDelete) {
                Some(f) => f(base, name, sync_dir),
                None => ffi::SQLITE_IOERR_DELETE,
            }
        }
    }

    /// # Safety
    /// `base` null or registered; SQLite's `xAccess` contract.
    pub unsafe fn access(
        base: *mut ffi::sqlite3_vfs,
        name: *const c_char,
        flags: c_int,
        out: *mut c_int,
    ) -> c_int {
        // SAFETY: base is null or registered and the arguments are SQLite's (the
        // caller's contract).
        unsafe {
            match base.as_ref().and_then(|b| b.xAccess) {
                Some(f) => f(base, name, flags, out),
                None => ffi::SQLITE_IOERR_ACCESS,
            }
        }
    }

    /// # Safety
    /// `base` null or registered; SQLite's `xFullPathname` contract.
    pub unsafe fn full_pathname(
        base: *mut ffi::sqlite3_vfs,
        name: *const c_char,
        n: c_int,
        out: *mut c_char,
    ) -> c_int {
        // SAFETY: base is null or registered and the arguments are SQLite's (the
        // caller's contract).
        unsafe {
            match base.as_ref().and_then(|b| b.xFullPathname) {
                Some(f) => f(base, name, n, out),
                None => ffi::SQLITE_CANTOPEN,
            }
        }
    }

    /// # Safety
    /// `base` null or registered; `out` has `n` bytes.
    pub unsafe fn randomness(base: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
        // SAFETY: base is null or registered and the arguments are SQLite's (the
        // caller's contract).
        unsafe {
            match base.as_ref().and_then(|b| b.xRandomness) {
                Some(f) => f(base, n, out),
                None => 0,
            }
        }
    }

    /// # Safety
    /// `base` null or registered.
    pub unsafe fn sleep(base: *mut ffi::sqlite3_vfs, micros: c_int) -> c_int {
        // SAFETY: base is null or registered and the arguments are SQLite's (the
        // caller's contract).
        unsafe {
            match base.as_ref().and_then(|b| b.xSleep) {
                Some(f) => f(base, micros),
                None => 0,
            }
        }
    }

    /// # Safety
    /// `base` null or registered; `out` writable.
    pub unsafe fn current_time(base: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
        // SAFETY: base is null or registered and the arguments are SQLite's (the
        // caller's contract).
        unsafe {
            match base.as_ref().and_then(|b| b.xCurrentTime) {
                Some(f) => f(base, out),
                None => ffi::SQLITE_ERROR,
            }
        }
    }
}
