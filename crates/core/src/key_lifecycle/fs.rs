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
    /// The owner, group, permission bits and number of names of the file at `path`;
    /// `None` on a file system without them (the simulated disk).
    fn ownership(&self, _path: &Path) -> io::Result<Option<Ownership>> {
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
    /// Whether a file opened through [`vfs`](Self::vfs) goes on naming the same file
    /// after a rename over its path (for `replace::retire`): true for the operating
    /// system's; false by default (the simulated disk names files by path).
    fn handles_follow_renames(&self) -> bool {
        false
    }
    /// Whether a file can be renamed over while a connection has it open (what `rekey` and
    /// `encrypt` do): not on Windows, whose SQLite handles don't share delete access.
    fn renames_over_open_files(&self) -> bool {
        true
    }
}

/// The refusal of an operation that renames a copy over a file its own connection has
/// open, where the file system can't (Windows): said before any work is done.
pub fn refuse_rename_over_open_file(
    fs: &dyn FileSystem,
    op: &str,
    path: &str,
) -> super::Result<()> {
    if fs.renames_over_open_files() {
        return Ok(());
    }
    Err(super::Error::refused(
        cipherlite_sqlite::ffi::SQLITE_CANTOPEN,
        format!(
            "cannot {op} {path} on Windows: the file would be replaced by a re-encrypted copy, and \
             Windows does not rename over a file that is open (not supported yet; \
             Database.decrypt, backup with a key and verify work)"
        ),
    ))
}

/// Who a file belongs to and who may read it: what the file that replaces it must keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ownership {
    pub uid: u32,
    pub gid: u32,
    /// The permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    /// Its number of names (`st_nlink`): more than one means hard links.
    pub links: u64,
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
            links: m.nlink(),
        }))
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
