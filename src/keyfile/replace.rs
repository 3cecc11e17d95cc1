//! The file steps of "write a copy beside it, sync, rename over, sync the directory", on
//! a [`FileSystem`]. Only ever applied to files no connection has open (the temporary
//! copy, the directory).

use super::{fs::FileSystem, Error, Result};
use crate::sqlite::OsFile;
use std::{
    io::Write,
    path::{Path, PathBuf},
};

/// The infix of every temporary copy: `<file>.cipherlite-<op>-<random>`.
const TEMP_INFIX: &str = ".cipherlite-";

/// Test hook: when the environment variable `CIPHERLITE_CRASH_TEST_PAUSE` names `step`
/// (`copied`, `synced`, `renamed`, `dir-synced`, in the order an operation reaches them)
/// (or `step:<op>`), writes `CIPHERLITE_PAUSED <step>` to stderr and sleeps until the
/// process is killed. The crash tests SIGKILL it there. Costs one environment lookup.
pub fn pause_point(op: &str, step: &str) {
    let Some(wanted) = std::env::var_os("CIPHERLITE_CRASH_TEST_PAUSE") else {
        return;
    };
    let wanted = wanted.to_string_lossy();
    let matches = wanted == step || wanted == format!("{step}:{op}");
    if !matches {
        return;
    }
    let mut err = std::io::stderr();
    let _ = writeln!(err, "CIPHERLITE_PAUSED {step}");
    let _ = err.flush();
    loop {
        std::thread::sleep(std::time::Duration::from_secs(3600));
    }
}

/// A new, empty file beside `target` for the copy, created exclusively (never an
/// existing file). Its name ends in random hex; an error names the directory.
pub fn create_temp_beside(fs: &dyn FileSystem, target: &Path, op: &str) -> Result<PathBuf> {
    let dir = parent_dir(target);
    let base = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "database".to_owned());
    for _ in 0..8 {
        let mut random = [0u8; 8];
        getrandom::fill(&mut random)
            .map_err(|_| Error::refused(crate::sqlite::ffi::SQLITE_IOERR, "no random source"))?;
        let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let path = dir.join(format!("{base}{TEMP_INFIX}{op}-{hex}"));
        match fs.create_new(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(Error::io(
                    "write a copy in the directory",
                    &dir.to_string_lossy(),
                    e,
                ))
            }
        }
    }
    Err(Error::refused(
        crate::sqlite::ffi::SQLITE_CANTOPEN,
        "cannot pick a name for the temporary copy",
    ))
}

/// Removes the copies (and their journals) that an operation on `target` killed
/// midway left behind, except `ours`. Only called while holding the exclusive lock on
/// `target`, so no other operation on it is running.
pub fn remove_leftovers(fs: &dyn FileSystem, target: &Path, ours: &Path) {
    let dir = parent_dir(target);
    let Some(base) = target.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let prefix = format!("{base}{TEMP_INFIX}");
    let Ok(entries) = fs.list_dir(&dir) else {
        return;
    };
    for path in entries {
        let ours_or_other = path == ours
            || !path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(&prefix));
        if !ours_or_other {
            let _ = fs.remove(&path);
        }
    }
}

/// Deletes a temporary copy and whatever journal SQLite left beside it.
pub fn remove_temp(fs: &dyn FileSystem, path: &Path) {
    let _ = fs.remove(path);
    for suffix in ["-journal", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = fs.remove(&PathBuf::from(p));
    }
}

/// fsync of a file no connection has open, through the file system's VFS.
pub fn sync_file(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    let shown = path.to_string_lossy();
    OsFile::open(fs.vfs(), &shown, true)
        .and_then(|mut f| f.sync())
        .map_err(|e| Error::in_file("sync the copy", &shown, e))
}

/// fsync of the directory holding `path`, so a rename in it survives a power loss.
pub fn sync_dir_of(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    let dir = parent_dir(path);
    fs.sync_dir(&dir)
        .map_err(|e| Error::io("sync the directory", &dir.to_string_lossy(), e))
}

/// Atomically replaces `target` by `copy`.
pub fn rename_over(fs: &dyn FileSystem, copy: &Path, target: &Path) -> Result<()> {
    fs.rename(copy, target)
        .map_err(|e| Error::io("rename the copy over", &target.to_string_lossy(), e))
}

/// What a replaced file's first bytes become, so that another connection that still has
/// it open (one in rollback-journal mode holds no lock while idle and so cannot be seen)
/// fails instead of committing into a file no name leads to any more.
const RETIRED: &[u8] =
    b"cipherlite: this database file was replaced by encrypt or rekey; open it again by name\n";

/// Overwrites the first 100 bytes (SQLite's header; for an encrypted file the salt and
/// the start of page 1) of the replaced file `old` so that every byte differs: the file
/// is no SQLite database any more and its page 1 authenticates under no key, and the
/// change counter at offset 24 differs, which makes every other connection reread page
/// 1 at its next transaction (read or write) and fail with `SQLITE_NOTADB`.
///
/// Only called once the rename over its name is durable (the directory synced): before
/// that a power loss could bring the old name back with its header overwritten. Errors
/// are ignored: the operation itself is done.
pub fn retire(mut old: OsFile) {
    let mut header = [0u8; 100];
    if old.read_at(&mut header, 0).is_err() {
        return;
    }
    let mut mark = [b' '; 100];
    mark[..RETIRED.len()].copy_from_slice(RETIRED);
    for (m, h) in mark.iter_mut().zip(header) {
        if *m == h {
            *m = !h;
        }
    }
    let _ = old.write_at(&mark, 0);
}

/// Moves `copy` to `dest`, failing (and keeping `copy`) if `dest` exists: a hard link
/// is created exclusively, then the temporary name removed.
pub fn publish_new(fs: &dyn FileSystem, copy: &Path, dest: &Path) -> Result<()> {
    match fs.hard_link(copy, dest) {
        Ok(()) => {
            let _ = fs.remove(copy);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(Error::io("write", &dest.to_string_lossy(), e))
        }
        // File systems without hard links: check, then rename (not atomic against a
        // concurrent creator of `dest`, which is the best they allow).
        Err(_) if fs.file_len(dest).is_err() => rename_over(fs, copy, dest),
        Err(e) => Err(Error::io("write", &dest.to_string_lossy(), e)),
    }
}

pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
