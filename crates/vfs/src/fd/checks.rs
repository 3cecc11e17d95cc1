//! The descriptors' checks, with better-sqlite3 13.2's messages, and what the binding asks
//! of them before opening.

use std::{
    fs::File,
    os::unix::fs::{FileExt, MetadataExt},
};

const O_ACCMODE: u32 = 0o3;
const O_WRONLY: u32 = 0o1;
const O_RDWR: u32 = 0o2;
const O_APPEND: u32 = 0o2000;

/// Why the descriptors can't be used (a TypeError on the JS side, as in 13.2).
#[derive(Debug, PartialEq, Eq)]
pub struct FdRefused(pub String);

/// Checks the descriptors as better-sqlite3 13.2 does, with its messages.
pub fn validate(fd: i32, journal_fd: i32, readonly: bool) -> Result<(), FdRefused> {
    if !cfg!(target_os = "linux") {
        return Err(FdRefused(
            "Opening a database from a file descriptor is only supported on Linux by cipherlite"
                .into(),
        ));
    }
    let mut inodes = [(0u64, 0u64); 2];
    for (i, (what, fd)) in [("database", fd), ("journal", journal_fd)]
        .into_iter()
        .enumerate()
    {
        let refuse = |why: &str| {
            Err(FdRefused(format!(
                "Cannot open database because the {what} {why}"
            )))
        };
        let Some(flags) = descriptor_flags(fd) else {
            return refuse("file descriptor is not open");
        };
        let meta = match std::fs::metadata(proc_path(fd)) {
            Ok(m) if m.file_type().is_file() => m,
            _ => return refuse("file descriptor does not refer to a regular file"),
        };
        if flags & O_ACCMODE == O_WRONLY {
            return refuse("file descriptor was not opened for reading");
        }
        if !readonly && flags & O_ACCMODE != O_RDWR {
            return refuse(
                "file descriptor was not opened for writing (use the \"readonly\" option)",
            );
        }
        if flags & O_APPEND != 0 {
            return refuse("file descriptor was opened in append mode");
        }
        if meta.nlink() == 0 {
            return refuse("file has been deleted");
        }
        inodes[i] = (meta.dev(), meta.ino());
    }
    if inodes[0] == inodes[1] {
        return Err(FdRefused(
            "Cannot open database because the database and journal file descriptors refer to the same file".into(),
        ));
    }
    // Connections that open the database by path look for its hot journal at
    // `<database>-journal`: any other file would hide a crash's journal from them. (The
    // kernel names the open files; no directory is searched.)
    if let (Ok(main), Ok(journal)) = (
        std::fs::read_link(proc_path(fd)),
        std::fs::read_link(proc_path(journal_fd)),
    ) {
        let mut expected = main.into_os_string();
        expected.push("-journal");
        if journal.into_os_string() != expected {
            return Err(FdRefused(
                "Cannot open database because the journal file descriptor does not refer to the database's \"-journal\" file".into(),
            ));
        }
    }
    // Bytes 18 and 19 of the header (write and read versions) are both 2 in WAL mode.
    let mut version = [0u8; 2];
    if let Ok(file) = File::open(proc_path(fd)) {
        if file.read_exact_at(&mut version, 18).is_ok() && version == [2, 2] {
            return Err(FdRefused(
                "Cannot open database from a file descriptor because it is in WAL mode".into(),
            ));
        }
    }
    Ok(())
}

/// Whether the database behind `fd` looks like a plaintext SQLite database (its first 16
/// bytes), for the refusal of foreign hot journals; None when it can't be read or is
/// shorter.
pub fn header_is_sqlite(fd: i32) -> Option<bool> {
    let file = File::open(proc_path(fd)).ok()?;
    let mut head = [0u8; 16];
    file.read_exact_at(&mut head, 0).ok()?;
    Some(head == cipherlite_codec::SQLITE_HEADER_MAGIC)
}

/// The size of the file behind `fd`, if it can be asked.
pub fn file_size(fd: i32) -> Option<u64> {
    std::fs::metadata(proc_path(fd)).ok().map(|m| m.len())
}

pub(super) fn proc_path(fd: i32) -> String {
    format!("/proc/self/fd/{fd}")
}

/// The `flags:` line of `/proc/self/fdinfo/<fd>` (the open flags, in octal), or None when
/// the descriptor is not open.
fn descriptor_flags(fd: i32) -> Option<u32> {
    if fd < 0 {
        return None;
    }
    let info = std::fs::read_to_string(format!("/proc/self/fdinfo/{fd}")).ok()?;
    let line = info.lines().find_map(|l| l.strip_prefix("flags:"))?;
    u32::from_str_radix(line.trim(), 8).ok()
}
