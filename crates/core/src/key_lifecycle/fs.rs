//! The file system the key lifecycle works on: namespace operations (create, remove,
//! rename, directory sync, listing) here, file contents through a SQLite VFS
//! (`sqlite::OsFile` and connections). [`OsFileSystem`] is the real one; the power-loss
//! sweep (`tests/key_lifecycle_power_loss.rs`) puts a simulated disk in its place, which can
//! lose power at any write, sync, rename or directory sync of an operation.

use std::{
    ffi::CStr,
    io,
    path::{Path, PathBuf},
};

/// What the key lifecycle needs of a file system. Contents are read and written through
/// the VFS named by [`vfs`](Self::vfs), so every write and sync of the copy — and of
/// SQLite's own files — reaches the same disk as the namespace operations.
pub trait FileSystem {
    /// The SQLite VFS holding the files (the default VFS when `None`).
    fn vfs(&self) -> Option<&CStr>;
    /// Creates an empty file; fails with `AlreadyExists` if `path` exists.
    fn create_new(&self, path: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// `rename(2)`: atomically makes `to` name the file `from` named.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Makes the namespace changes in `dir` (creations, renames) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// The files in `dir`.
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>>;
    /// The length of the regular file at `path`; an error when it is missing or not a file.
    fn file_len(&self, path: &Path) -> io::Result<u64>;
    /// `path` with symbolic links resolved (the file a rename must replace).
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;
    /// Creates `to` as a second name of `from`; fails with `AlreadyExists` if `to` exists.
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// The owner, group and permission bits of the file at `path`; `None` on a file
    /// system without them (Windows, the simulated disk).
    fn ownership(&self, _path: &Path) -> io::Result<Option<Ownership>> {
        Ok(None)
    }
    /// The number of names (hard links) of the file at `path`; `None` where the file
    /// system doesn't count them (the simulated disk).
    fn link_count(&self, _path: &Path) -> io::Result<Option<u64>> {
        Ok(None)
    }
    /// Makes `uid`/`gid` the owner and group of the file at `path`.
    fn set_owner(&self, _path: &Path, _uid: u32, _gid: u32) -> io::Result<()> {
        Ok(())
    }
    /// Sets the permission bits (`mode & 0o7777`) of the file at `path`.
    fn set_mode(&self, _path: &Path, _mode: u32) -> io::Result<()> {
        Ok(())
    }
    /// Gives the file at `to` (a copy this process just created, still empty) the owner,
    /// group and DACL of the file at `from`: Windows' counterpart of
    /// [`set_owner`](Self::set_owner) and [`set_mode`](Self::set_mode). Nothing elsewhere.
    fn copy_security(&self, _from: &Path, _to: &Path) -> io::Result<()> {
        Ok(())
    }
    /// Whether a file opened through [`vfs`](Self::vfs) goes on naming the same file
    /// after a rename over its path (for `replace::retire`): true for the operating
    /// system's; false by default (the simulated disk names files by path).
    fn handles_follow_renames(&self) -> bool {
        false
    }
    /// Whether a file can be renamed over while a connection has it open (what `rekey` and
    /// `encrypt` do on Linux): not on Windows, whose SQLite handles don't share delete
    /// access. Where it can't, the connection lets go of the file (closes every handle it
    /// has on it) once the copy is durable, and [`replace_released`](Self::replace_released)
    /// renames.
    fn renames_over_open_files(&self) -> bool {
        true
    }
    /// The rename of a file system where [`renames_over_open_files`](Self::renames_over_open_files)
    /// is false, made once this process has closed every handle on `to`: refused with
    /// [`ErrorKind::ResourceBusy`](io::ErrorKind::ResourceBusy) while another process has
    /// `to` open, and with [`ErrorKind::InvalidData`](io::ErrorKind::InvalidData) when `to`'s
    /// first 100 bytes are not `head` any more (someone wrote into it after this process let
    /// go of its lock). `to` is unchanged then. By default a plain [`rename`](Self::rename).
    fn replace_released(
        &self,
        from: &Path,
        to: &Path,
        _head: Option<&[u8; 100]>,
    ) -> io::Result<()> {
        self.rename(from, to)
    }
}

/// How a message shows `path`: without the `\\?\` prefix Windows' canonical paths carry
/// (`\\?\C:\db` shown `C:\db`, `\\?\UNC\host\share\db` shown `\\host\share\db`),
/// so that the user sees the path as they would write it.
pub fn shown(path: &Path) -> String {
    let s = path.to_string_lossy();
    if let Some(unc) = s.strip_prefix(r"\\?\UNC\") {
        return format!(r"\\{unc}");
    }
    match s.strip_prefix(r"\\?\") {
        // Only a drive path: `\\?\` before anything else (a volume GUID) is its name.
        Some(rest) if rest.as_bytes().get(1) == Some(&b':') => rest.to_owned(),
        _ => s.into_owned(),
    }
}

/// Who a file belongs to and who may read it: what the file that replaces it must keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ownership {
    pub uid: u32,
    pub gid: u32,
    /// The permission bits (`st_mode & 0o7777`).
    pub mode: u32,
}

/// The operating system's file system, and SQLite's default VFS over it.
pub struct OsFileSystem;

impl FileSystem for OsFileSystem {
    fn vfs(&self) -> Option<&CStr> {
        None
    }
    /// `O_CREAT | O_EXCL`, mode 0600: a file that will hold a database (plaintext for
    /// `decrypt`) is readable by its creator alone until it is given the mode it is to
    /// have.
    fn create_new(&self, path: &Path) -> io::Result<()> {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options.open(path).map(drop)
    }
    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        #[cfg(windows)]
        return windows::move_replacing_write_through(from, to);
        #[cfg(not(windows))]
        std::fs::rename(from, to)
    }
    /// On Windows there is no directory to sync: a directory can't be opened as a file to
    /// flush, and the rename itself was made durable (`MOVEFILE_WRITE_THROUGH`: the call
    /// returns once NTFS has committed the change to its log). Creations are made durable
    /// by that same rename (docs/design.md §4.5, "Windows").
    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        #[cfg(windows)]
        {
            let _ = dir;
            Ok(())
        }
        #[cfg(not(windows))]
        std::fs::File::open(dir)?.sync_all()
    }
    fn list_dir(&self, dir: &Path) -> io::Result<Vec<PathBuf>> {
        Ok(std::fs::read_dir(dir)?
            .flatten()
            .map(|e| e.path())
            .collect())
    }
    fn file_len(&self, path: &Path) -> io::Result<u64> {
        let m = std::fs::metadata(path)?;
        if m.is_file() {
            Ok(m.len())
        } else {
            Err(io::Error::new(io::ErrorKind::InvalidInput, "not a file"))
        }
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }
    fn hard_link(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::hard_link(from, to)
    }
    #[cfg(unix)]
    fn ownership(&self, path: &Path) -> io::Result<Option<Ownership>> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path)?;
        Ok(Some(Ownership {
            uid: m.uid(),
            gid: m.gid(),
            mode: m.mode() & 0o7777,
        }))
    }
    #[cfg(unix)]
    fn link_count(&self, path: &Path) -> io::Result<Option<u64>> {
        use std::os::unix::fs::MetadataExt;
        Ok(Some(std::fs::metadata(path)?.nlink()))
    }
    #[cfg(windows)]
    fn link_count(&self, path: &Path) -> io::Result<Option<u64>> {
        windows::link_count(path).map(Some)
    }
    #[cfg(unix)]
    fn set_owner(&self, path: &Path, uid: u32, gid: u32) -> io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let file = open_created_file(path)?;
        let m = file.metadata()?;
        if (m.uid(), m.gid()) == (uid, gid) {
            return Ok(());
        }
        std::os::unix::fs::fchown(&file, Some(uid), Some(gid))
    }
    fn handles_follow_renames(&self) -> bool {
        true
    }
    fn renames_over_open_files(&self) -> bool {
        cfg!(not(windows))
    }
    #[cfg(windows)]
    fn copy_security(&self, from: &Path, to: &Path) -> io::Result<()> {
        windows::copy_security(from, to)
    }
    #[cfg(windows)]
    fn replace_released(&self, from: &Path, to: &Path, head: Option<&[u8; 100]>) -> io::Result<()> {
        windows::replace_released(from, to, head)
    }
    #[cfg(unix)]
    fn set_mode(&self, path: &Path, mode: u32) -> io::Result<()> {
        use std::os::unix::fs::PermissionsExt;
        open_created_file(path)?.set_permissions(std::fs::Permissions::from_mode(mode & 0o7777))
    }
}

/// The file this process created at `path` (a copy: regular, one name, no connection
/// has it open), opened so that its owner and mode are changed through the descriptor:
/// refused when the name is a symbolic link, or led to another file when it was opened.
/// Someone who can write the directory could otherwise swap a link to another file in
/// under the copy's name and have, say, root give that file away.
#[cfg(unix)]
fn open_created_file(path: &Path) -> io::Result<std::fs::File> {
    use std::os::unix::fs::MetadataExt;
    let named = std::fs::symlink_metadata(path)?;
    let file = std::fs::File::open(path)?;
    let opened = file.metadata()?;
    let same = named.file_type().is_file()
        && (named.dev(), named.ino()) == (opened.dev(), opened.ino())
        && opened.nlink() == 1;
    if same {
        Ok(file)
    } else {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "the copy's name no longer leads to the copy",
        ))
    }
}

/// Windows error codes that say a file system (or a Windows older than 10 1709, or Wine)
/// has no POSIX-semantics rename by handle (`FileRenameInfoEx` with
/// `FILE_RENAME_FLAG_POSIX_SEMANTICS`): `ERROR_INVALID_FUNCTION`, `ERROR_NOT_SUPPORTED`,
/// `ERROR_INVALID_PARAMETER` (an unknown information class, or a flag FAT refuses),
/// `ERROR_CALL_NOT_IMPLEMENTED`. Then the replacement falls back to `MoveFileExW`, with its
/// window (docs/key-lifecycle.md §6). Any other error is the rename's own.
#[cfg(any(windows, test))]
fn posix_rename_unsupported(raw_os_error: Option<i32>) -> bool {
    matches!(raw_os_error, Some(1 | 50 | 87 | 120))
}

/// Windows' replacing rename (docs/design.md §4.5, "Windows").
#[cfg(windows)]
mod windows {
    use std::{io, os::windows::ffi::OsStrExt, path::Path};
    use windows_sys::Win32::Storage::FileSystem::{
        MoveFileExW, MOVEFILE_REPLACE_EXISTING, MOVEFILE_WRITE_THROUGH,
    };

    fn wide(path: &Path) -> io::Result<Vec<u16>> {
        let mut w: Vec<u16> = path.as_os_str().encode_wide().collect();
        if w.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a NUL in a path",
            ));
        }
        w.push(0);
        Ok(w)
    }

    /// `ERROR_SHARING_VIOLATION`, `ERROR_LOCK_VIOLATION`: another handle keeps us out.
    const SHARING_VIOLATION: i32 = 32;
    const LOCK_VIOLATION: i32 = 33;
    /// `ERROR_ACCESS_DENIED`: what `MoveFileExW` says when the file it replaces is open.
    const ACCESS_DENIED: i32 = 5;

    /// Renames `from` over `to` once this process has no handle on `to`:
    /// 1. opens `to` for reading, sharing delete access only (`FILE_SHARE_DELETE`):
    ///    refused by Windows while any other handle has it open for reading or writing, as
    ///    every SQLite connection does, whether it holds a lock or sits idle; and while this
    ///    handle is open, no one else can open it for either;
    /// 2. compares its first 100 bytes (the change counter among them) with `head`, what
    ///    they were under the EXCLUSIVE lock this process held until it let go;
    /// 3. still holding it, renames `from` over `to` by handle with POSIX semantics
    ///    ([`rename_over_held`]): no one can have opened `to` since 1, so no one's
    ///    transaction can be replaced;
    /// 4. where the file system has no such rename ([`super::posix_rename_unsupported`]:
    ///    FAT, a Windows older than 10 1709, Wine), closes that handle and `MoveFileExW`s
    ///    instead: a process that opened `to` in between makes the rename fail (access
    ///    denied), which is reported as the file being in use.
    ///
    /// The window between 4's close and rename is the one the check can't cover there: a
    /// process that opened, locked, wrote and closed the file within it would see its
    /// transaction replaced (docs/key-lifecycle.md §6).
    pub fn replace_released(from: &Path, to: &Path, head: Option<&[u8; 100]>) -> io::Result<()> {
        use std::{io::Read, os::windows::fs::OpenOptionsExt};
        use windows_sys::Win32::Storage::FileSystem::FILE_SHARE_DELETE;
        let busy = |e: io::Error| match e.raw_os_error() {
            Some(SHARING_VIOLATION | LOCK_VIOLATION | ACCESS_DENIED) => {
                io::Error::new(io::ErrorKind::ResourceBusy, e)
            }
            _ => e,
        };
        let mut guard = std::fs::OpenOptions::new()
            .read(true)
            .share_mode(FILE_SHARE_DELETE)
            .open(to)
            .map_err(busy)?;
        if let Some(expected) = head {
            let mut now = [0u8; 100];
            guard.read_exact(&mut now)?;
            if &now != expected {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "the file was written after it was let go of",
                ));
            }
        }
        match rename_over_held(from, to) {
            Ok(()) => return Ok(()),
            Err(e) if !super::posix_rename_unsupported(e.raw_os_error()) => return Err(busy(e)),
            Err(_) => {}
        }
        drop(guard);
        move_replacing_write_through(from, to).map_err(busy)
    }

    /// `FILE_RENAME_INFO`'s flags (ntifs.h), which windows-sys' `Storage::FileSystem` lacks.
    const FILE_RENAME_FLAG_REPLACE_IF_EXISTS: u32 = 0x1;
    const FILE_RENAME_FLAG_POSIX_SEMANTICS: u32 = 0x2;

    /// Renames `from` over `to` by handle (`SetFileInformationByHandle(FileRenameInfoEx,
    /// FILE_RENAME_FLAG_REPLACE_IF_EXISTS | FILE_RENAME_FLAG_POSIX_SEMANTICS)`, Windows 10
    /// 1709 and later, NTFS): with POSIX semantics the replaced file may still be open
    /// (by handles that share delete access, as the caller's check handle does), and leaves
    /// the name at once. The copy is opened write-through and flushed once renamed: its
    /// data was flushed before, and a flush makes NTFS write its log, the rename's
    /// transaction in it. Fails with one of [`super::posix_rename_unsupported`]'s codes
    /// where the file system has no such rename.
    fn rename_over_held(from: &Path, to: &Path) -> io::Result<()> {
        use std::os::windows::{fs::OpenOptionsExt, io::AsRawHandle};
        use windows_sys::Win32::{
            Foundation::{GENERIC_WRITE, HANDLE},
            Storage::FileSystem::{
                FileRenameInfoEx, FlushFileBuffers, SetFileInformationByHandle, DELETE,
                FILE_FLAG_WRITE_THROUGH, FILE_RENAME_INFO, FILE_SHARE_READ,
            },
        };
        let copy = std::fs::OpenOptions::new()
            .access_mode(DELETE | GENERIC_WRITE)
            .share_mode(FILE_SHARE_READ)
            .custom_flags(FILE_FLAG_WRITE_THROUGH)
            .open(from)?;
        // The new name without its NUL: FileNameLength counts bytes, not the terminator.
        let name = wide(to)?;
        let name = &name[..name.len() - 1];
        let name_bytes = std::mem::size_of_val(name);
        let name_at = std::mem::offset_of!(FILE_RENAME_INFO, FileName);
        let size = name_at + name_bytes + std::mem::size_of::<u16>();
        let too_long =
            || io::Error::new(io::ErrorKind::InvalidInput, "a path too long to rename to");
        let name_len = u32::try_from(name_bytes).map_err(|_| too_long())?;
        let size_u32 = u32::try_from(size).map_err(|_| too_long())?;
        // u64s: a buffer aligned for FILE_RENAME_INFO (a HANDLE and a u32 before the name).
        let mut buffer = vec![0u64; size.div_ceil(8)];
        let info = buffer.as_mut_ptr().cast::<FILE_RENAME_INFO>();
        // SAFETY: `buffer` holds `size` bytes (rounded up), aligned to 8, which covers
        // FILE_RENAME_INFO's fields and `name` plus a NUL after `FileName`'s offset; the
        // fields are written through raw pointers into that zeroed memory (the NUL stays).
        unsafe {
            (*info).Anonymous.Flags =
                FILE_RENAME_FLAG_REPLACE_IF_EXISTS | FILE_RENAME_FLAG_POSIX_SEMANTICS;
            (*info).RootDirectory = std::ptr::null_mut();
            (*info).FileNameLength = name_len;
            std::ptr::copy_nonoverlapping(
                name.as_ptr(),
                std::ptr::addr_of_mut!((*info).FileName).cast::<u16>(),
                name.len(),
            );
        }
        let handle = copy.as_raw_handle() as HANDLE;
        // SAFETY: a handle opened with DELETE access, live for the call; `info` points at
        // `size_u32` bytes laid out as FILE_RENAME_INFO with the name after it.
        let ok =
            unsafe { SetFileInformationByHandle(handle, FileRenameInfoEx, info.cast(), size_u32) };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        // Renamed: from here the file is replaced, and an error would tell the caller it is
        // unchanged (it would remove the "copy" and reopen with the old key). A flush that
        // fails leaves the rename to NTFS's own log flush, as it would any metadata change.
        // SAFETY: as above, opened with GENERIC_WRITE, as FlushFileBuffers requires.
        let _ = unsafe { FlushFileBuffers(handle) };
        Ok(())
    }

    /// Owner, group and DACL of `from` given to `to`, both through handles
    /// (`GetSecurityInfo`, `SetSecurityInfo`): the DACL stays protected from inheritance if
    /// it was, and otherwise gets the directory's inherited entries as the original had
    /// (both are in one directory). Setting an owner other than the caller needs
    /// `SeRestorePrivilege`: without it, an error (the caller refuses with `SQLITE_PERM`).
    /// The file's number of names (`nNumberOfLinks`), from a handle that asks only to read
    /// attributes and shares everything, so that it opens whoever else holds the file.
    pub fn link_count(path: &Path) -> io::Result<u64> {
        use std::os::windows::{fs::OpenOptionsExt, io::AsRawHandle};
        use windows_sys::Win32::Storage::FileSystem::{
            GetFileInformationByHandle, BY_HANDLE_FILE_INFORMATION, FILE_READ_ATTRIBUTES,
            FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE,
        };
        let file = std::fs::OpenOptions::new()
            .access_mode(FILE_READ_ATTRIBUTES)
            .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE)
            .open(path)?;
        // SAFETY: all-zero is a valid BY_HANDLE_FILE_INFORMATION (plain integers).
        let mut info: BY_HANDLE_FILE_INFORMATION = unsafe { std::mem::zeroed() };
        // SAFETY: `file` is an open handle for the whole call, and `info` is a writable
        // structure of the type the call fills.
        if unsafe { GetFileInformationByHandle(file.as_raw_handle() as _, &mut info) } == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(u64::from(info.nNumberOfLinks))
    }

    pub fn copy_security(from: &Path, to: &Path) -> io::Result<()> {
        use std::os::windows::{fs::OpenOptionsExt, io::AsRawHandle};
        use windows_sys::Win32::{
            Foundation::LocalFree,
            Security::{
                Authorization::{GetSecurityInfo, SetSecurityInfo, SE_FILE_OBJECT},
                GetSecurityDescriptorControl, ACL, DACL_SECURITY_INFORMATION,
                GROUP_SECURITY_INFORMATION, OWNER_SECURITY_INFORMATION,
                PROTECTED_DACL_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR, PSID, SE_DACL_PROTECTED,
                UNPROTECTED_DACL_SECURITY_INFORMATION,
            },
            Storage::FileSystem::{
                FILE_SHARE_DELETE, FILE_SHARE_READ, FILE_SHARE_WRITE, READ_CONTROL, WRITE_DAC,
                WRITE_OWNER,
            },
        };
        let share = FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE;
        let source = std::fs::OpenOptions::new()
            .access_mode(READ_CONTROL)
            .share_mode(share)
            .open(from)?;
        let copy = std::fs::OpenOptions::new()
            .access_mode(READ_CONTROL | WRITE_DAC | WRITE_OWNER)
            .share_mode(share)
            .open(to)?;
        let what =
            OWNER_SECURITY_INFORMATION | GROUP_SECURITY_INFORMATION | DACL_SECURITY_INFORMATION;
        let (mut owner, mut group): (PSID, PSID) = (std::ptr::null_mut(), std::ptr::null_mut());
        let mut dacl: *mut ACL = std::ptr::null_mut();
        let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
        // SAFETY: a handle opened with READ_CONTROL, live for the call; the out-pointers
        // are valid. On success `sd` is one LocalAlloc'd block the other three point into.
        let rc = unsafe {
            GetSecurityInfo(
                source.as_raw_handle(),
                SE_FILE_OBJECT,
                what,
                &mut owner,
                &mut group,
                &mut dacl,
                std::ptr::null_mut(),
                &mut sd,
            )
        };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc as i32));
        }
        let (mut control, mut revision) = (0u16, 0u32);
        // SAFETY: `sd` is the descriptor GetSecurityInfo returned, live until LocalFree.
        let protected = unsafe { GetSecurityDescriptorControl(sd, &mut control, &mut revision) }
            != 0
            && control & SE_DACL_PROTECTED != 0;
        let inheritance = if protected {
            PROTECTED_DACL_SECURITY_INFORMATION
        } else {
            UNPROTECTED_DACL_SECURITY_INFORMATION
        };
        // SAFETY: a handle opened with WRITE_DAC | WRITE_OWNER, live for the call; owner,
        // group and dacl point into `sd`, still allocated.
        let rc = unsafe {
            SetSecurityInfo(
                copy.as_raw_handle(),
                SE_FILE_OBJECT,
                what | inheritance,
                owner,
                group,
                dacl,
                std::ptr::null(),
            )
        };
        // SAFETY: `sd` was allocated by GetSecurityInfo with LocalAlloc and is freed once.
        unsafe { LocalFree(sd) };
        if rc != 0 {
            return Err(io::Error::from_raw_os_error(rc as i32));
        }
        Ok(())
    }

    /// `MoveFileExW(from, to, MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH)`: `to`
    /// names the copy afterwards, atomically on NTFS (one metadata transaction in its log),
    /// and the call returns only once that is on disk. It fails (access denied, sharing
    /// violation) while any handle of `to` lacks `FILE_SHARE_DELETE`, as SQLite's own do:
    /// the caller has closed its connection's handles first.
    pub fn move_replacing_write_through(from: &Path, to: &Path) -> io::Result<()> {
        let (from, to) = (wide(from)?, wide(to)?);
        // SAFETY: both are NUL-terminated UTF-16 strings that outlive the call.
        let ok = unsafe {
            MoveFileExW(
                from.as_ptr(),
                to.as_ptr(),
                MOVEFILE_REPLACE_EXISTING | MOVEFILE_WRITE_THROUGH,
            )
        };
        if ok == 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod selection_tests {
    use super::posix_rename_unsupported;

    #[test]
    fn only_a_missing_posix_rename_falls_back_to_move_file() {
        // ERROR_INVALID_FUNCTION, ERROR_NOT_SUPPORTED, ERROR_INVALID_PARAMETER,
        // ERROR_CALL_NOT_IMPLEMENTED: the file system (or Windows, or Wine) has none.
        for code in [1, 50, 87, 120] {
            assert!(posix_rename_unsupported(Some(code)), "{code}");
        }
        // ERROR_ACCESS_DENIED, ERROR_SHARING_VIOLATION, ERROR_LOCK_VIOLATION: someone holds
        // the file (busy, never a fallback that would reopen the window); a full disk, a
        // missing file, an error without a code: the rename's own.
        for code in [
            Some(5),
            Some(32),
            Some(33),
            Some(112),
            Some(2),
            Some(3),
            None,
        ] {
            assert!(!posix_rename_unsupported(code), "{code:?}");
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn owner_and_mode_are_never_changed_through_a_symbolic_link() {
        let dir =
            std::env::temp_dir().join(format!("cipherlite-fs-symlink-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let victim = dir.join("victim");
        std::fs::write(&victim, b"someone else's").expect("victim");
        std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o600)).expect("0600");
        let copy = dir.join("app.db.cipherlite-encrypt-0123456789abcdef");
        OsFileSystem.create_new(&copy).expect("create");
        OsFileSystem.set_mode(&copy, 0o640).expect("its own copy");
        let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode(&copy), 0o640);
        // The copy's name swapped for a link to another file.
        std::fs::remove_file(&copy).expect("remove");
        std::os::unix::fs::symlink(&victim, &copy).expect("symlink");
        let e = OsFileSystem.set_mode(&copy, 0o666).expect_err("refused");
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        let e = OsFileSystem
            .set_owner(&copy, 65534, 65534)
            .expect_err("refused");
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(mode(&victim), 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
