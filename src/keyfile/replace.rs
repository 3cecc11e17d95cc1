//! The file steps of "write a copy beside it, sync, rename over, sync the directory".
//! Only ever applied to files no connection has open (the temporary copy, the
//! directory): closing a descriptor of a file a connection has locked would drop the
//! connection's POSIX locks (see `sqlite::OsFile`).

use super::{Error, Result};
use std::{
    fs,
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
pub fn create_temp_beside(target: &Path, op: &str) -> Result<PathBuf> {
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
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(_) => return Ok(path),
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
pub fn remove_leftovers(target: &Path, ours: &Path) {
    let dir = parent_dir(target);
    let Some(base) = target.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let prefix = format!("{base}{TEMP_INFIX}");
    let Ok(entries) = fs::read_dir(&dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with(&prefix) && entry.path() != ours {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Deletes a temporary copy and whatever journal SQLite left beside it.
pub fn remove_temp(path: &Path) {
    let _ = fs::remove_file(path);
    for suffix in ["-journal", "-wal", "-shm"] {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = fs::remove_file(PathBuf::from(p));
    }
}

/// fsync of a file no connection has open.
pub fn sync_file(path: &Path) -> Result<()> {
    let f =
        fs::File::open(path).map_err(|e| Error::io("open the copy", &path.to_string_lossy(), e))?;
    f.sync_all()
        .map_err(|e| Error::io("sync the copy", &path.to_string_lossy(), e))
}

/// fsync of the directory holding `path`, so a rename in it survives a power loss.
pub fn sync_dir_of(path: &Path) -> Result<()> {
    let dir = parent_dir(path);
    let d = fs::File::open(&dir)
        .map_err(|e| Error::io("open the directory", &dir.to_string_lossy(), e))?;
    d.sync_all()
        .map_err(|e| Error::io("sync the directory", &dir.to_string_lossy(), e))
}

/// Atomically replaces `target` by `copy`.
pub fn rename_over(copy: &Path, target: &Path) -> Result<()> {
    fs::rename(copy, target)
        .map_err(|e| Error::io("rename the copy over", &target.to_string_lossy(), e))
}

/// Moves `copy` to `dest`, failing (and keeping `copy`) if `dest` exists: a hard link
/// is created exclusively, then the temporary name removed.
pub fn publish_new(copy: &Path, dest: &Path) -> Result<()> {
    match fs::hard_link(copy, dest) {
        Ok(()) => {
            let _ = fs::remove_file(copy);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(Error::io("write", &dest.to_string_lossy(), e))
        }
        // File systems without hard links: check, then rename (not atomic against a
        // concurrent creator of `dest`, which is the best they allow).
        Err(_) if !dest.exists() => rename_over(copy, dest),
        Err(e) => Err(Error::io("write", &dest.to_string_lossy(), e)),
    }
}

pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}
