//! The file steps of "write a copy beside it, sync, rename over, sync the directory", on
//! a [`FileSystem`]. Only ever applied to files no connection has open (the temporary
//! copy, the directory).

use super::{
    fs::{shown, FileSystem},
    Error, Result,
};
use cipherlite_sqlite::OsFile;
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
    refuse_shared_directory(fs, &dir)?;
    let base = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "database".to_owned());
    for _ in 0..8 {
        let mut random = [0u8; RANDOM_HEX / 2];
        getrandom::fill(&mut random).map_err(|_| {
            Error::refused(cipherlite_sqlite::ffi::SQLITE_IOERR, "no random source")
        })?;
        let hex: String = random.iter().map(|b| format!("{b:02x}")).collect();
        let path = dir.join(format!("{base}{TEMP_INFIX}{op}-{hex}"));
        match fs.create_new(&path) {
            Ok(()) => return Ok(path),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(Error::io("write a copy in the directory", &shown(&dir), e)),
        }
    }
    Err(Error::refused(
        cipherlite_sqlite::ffi::SQLITE_CANTOPEN,
        "cannot pick a name for the temporary copy",
    ))
}

/// The bits of a directory's mode that let every user create, remove and rename its
/// entries (`o+w`), and the sticky bit that keeps them to their own entries.
const OTHERS_WRITE: u32 = 0o002;
const STICKY: u32 = 0o1000;

/// Refuses a directory every user may write without the sticky bit: there another user can
/// remove the copy and put a file of theirs at its name between two of the steps that
/// reopen it by name (SQLite writes the copy by name), and receive the plaintext
/// (`decrypt`) or a descriptor on the new database (`encrypt`, `rekey`). With the sticky bit
/// (`/tmp`'s 1777) others can't touch the copy. A directory writable by a group is the
/// group's members' to trust.
fn refuse_shared_directory(fs: &dyn FileSystem, dir: &Path) -> Result<()> {
    let Ok(Some(mode)) = fs.ownership(dir).map(|o| o.map(|o| o.mode)) else {
        return Ok(());
    };
    if mode & OTHERS_WRITE != 0 && mode & STICKY == 0 {
        return Err(Error::refused(
            cipherlite_sqlite::ffi::SQLITE_PERM,
            format!(
                "the directory {} is writable by every user and not sticky: another user could \
                 replace the temporary copy there by name (chmod +t it, or use a directory \
                 other users can't write)",
                shown(dir)
            ),
        ));
    }
    Ok(())
}

/// The operations that make copies, as their names carry them.
const OPS: [&str; 4] = ["encrypt", "rekey", "decrypt", "backup"];
/// Hex digits of the random part of a copy's name (8 random bytes).
const RANDOM_HEX: usize = 16;

/// The operation a file named `name` is a copy of, if the name is exactly one
/// [`create_temp_beside`] gives a copy of the file named `base`:
/// `<base>.cipherlite-<op>-<16 lowercase hex digits>`.
fn copy_op(name: &str, base: &str) -> Option<&'static str> {
    let rest = name.strip_prefix(base)?.strip_prefix(TEMP_INFIX)?;
    let (op, random) = rest.split_once('-')?;
    let op = OPS.into_iter().find(|o| *o == op)?;
    let hex = random.len() == RANDOM_HEX
        && random
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    hex.then_some(op)
}

/// Whether the file at `path`, named as a copy of `op`, holds what such a copy holds:
/// nothing yet, or whole pages (every copy is written in pages of at least 512 bytes)
/// beginning as that operation's output does (SQLite's header for `decrypt`'s plaintext;
/// anything else — ciphertext — for the others).
fn holds_a_copy(fs: &dyn FileSystem, path: &Path, op: &str) -> bool {
    let Ok(len) = fs.file_len(path) else {
        return false;
    };
    if len == 0 {
        return true;
    }
    if len % 512 != 0 {
        return false;
    }
    let mut head = [0u8; 16];
    let read = OsFile::open(fs.vfs(), &path.to_string_lossy(), false)
        .and_then(|mut f| f.read_at(&mut head, 0));
    read.is_ok() && (head == cipherlite_codec::SQLITE_HEADER_MAGIC) == (op == "decrypt")
}

/// Removes the copies (and their journals) that an operation on `target` killed
/// midway left behind, except `ours`: only files cipherlite provably made — named
/// exactly as [`create_temp_beside`] names them and holding what such a copy holds — so
/// a user's own `<file>.cipherlite-notes` stays. For `encrypt`/`rekey` only called while
/// holding the exclusive lock on `target`, so no other operation on it is running; for
/// `decrypt` (`target` its destination) a concurrent `decrypt` to the same destination
/// may lose its copy and then fails.
pub fn remove_leftovers(fs: &dyn FileSystem, target: &Path, ours: &Path) {
    let dir = parent_dir(target);
    let Some(base) = target.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return;
    };
    let Ok(entries) = fs.list_dir(&dir) else {
        return;
    };
    for path in entries {
        if path == ours {
            continue;
        }
        let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
            continue;
        };
        if let Some(op) = copy_op(&name, &base) {
            if holds_a_copy(fs, &path, op) {
                remove_temp(fs, &path);
            }
            continue;
        }
        // SQLite's own file beside a copy that is gone (a power loss can keep the
        // journal and lose the copy); with the copy still there, it goes with the copy.
        for suffix in SQLITE_SUFFIXES {
            let Some(copy_name) = name.strip_suffix(suffix) else {
                continue;
            };
            if copy_op(copy_name, &base).is_some() && fs.file_len(&dir.join(copy_name)).is_err() {
                let _ = fs.remove(&path);
            }
        }
    }
}

/// The files SQLite keeps beside a database: `<name>-journal`, `-wal`, `-shm`.
const SQLITE_SUFFIXES: [&str; 3] = ["-journal", "-wal", "-shm"];

/// Deletes a temporary copy and whatever journal SQLite left beside it.
pub fn remove_temp(fs: &dyn FileSystem, path: &Path) {
    let _ = fs.remove(path);
    for suffix in SQLITE_SUFFIXES {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        let _ = fs.remove(&PathBuf::from(p));
    }
}

/// fsync of a file no connection has open, through the file system's VFS.
pub fn sync_file(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    OsFile::open(fs.vfs(), &path.to_string_lossy(), true)
        .and_then(|mut f| f.sync())
        .map_err(|e| Error::in_file("sync the copy", &shown(path), e))
}

/// fsync of the directory holding `path`, so a rename in it survives a power loss.
pub fn sync_dir_of(fs: &dyn FileSystem, path: &Path) -> Result<()> {
    let dir = parent_dir(path);
    fs.sync_dir(&dir)
        .map_err(|e| Error::io("sync the directory", &shown(&dir), e))
}

/// Atomically replaces `target` by `copy`.
pub fn rename_over(fs: &dyn FileSystem, copy: &Path, target: &Path) -> Result<()> {
    fs.rename(copy, target)
        .map_err(|e| Error::io("rename the copy over", &shown(target), e))
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
            Err(Error::io("write", &shown(dest), e))
        }
        // File systems without hard links: check, then rename (not atomic against a
        // concurrent creator of `dest`, which is the best they allow).
        Err(_) if fs.file_len(dest).is_err() => rename_over(fs, copy, dest),
        Err(e) => Err(Error::io("write", &shown(dest), e)),
    }
}

pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

#[cfg(test)]
mod tests {
    use super::copy_op;

    #[test]
    fn only_the_exact_names_of_copies_are_taken_for_copies() {
        let base = "app.db";
        assert_eq!(
            copy_op("app.db.cipherlite-rekey-0123456789abcdef", base),
            Some("rekey")
        );
        assert_eq!(
            copy_op("app.db.cipherlite-decrypt-fedcba9876543210", base),
            Some("decrypt")
        );
        for not_ours in [
            "app.db.cipherlite-notes.txt",
            "app.db.cipherlite-encrypt-mine",
            "app.db.cipherlite-rekey-0123",
            "app.db.cipherlite-rekey-0123456789ABCDEF",
            "app.db.cipherlite-rekey-0123456789abcdef-journal",
            "app.db.cipherlite-vacuum-0123456789abcdef",
            "other.db.cipherlite-rekey-0123456789abcdef",
        ] {
            assert_eq!(copy_op(not_ours, base), None, "{not_ours}");
        }
    }
}
