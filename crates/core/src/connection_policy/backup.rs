//! Which VFS a backup's destination goes through, and so which key it gets (pages are
//! copied as they are, so the destination has the source's page format), and a running
//! backup: what an aborted one leaves behind (nothing, in a file it created).

use super::{code_error, DatabaseVfs, Error, Result};
use cipherlite_sqlite::{
    backup::{Backup, BackupProgress},
    Connection,
};
use cipherlite_vfs::{self as vfs, KeyedVfsHandle, NewFileLayout, VfsKey};
use std::ffi::CString;

/// The key a backup's destination is to have.
pub enum BackupKey<'a> {
    /// The source's: through the source connection's keyed VFS, or none for a plaintext
    /// source.
    SameAsSource,
    /// None: a plaintext copy through SQLite's default VFS.
    Plaintext,
    /// A key of its own, through a new keyed VFS (an encrypted source only: see
    /// [`BackupDestination::allow_own_key`]).
    Own(&'a [u8; 32]),
}

/// The destination side of a backup: the VFS it is written through (owned here when it
/// is one of its own, unregistered on drop, after the backup has closed).
pub struct BackupDestination {
    vfs_name: Option<CString>,
    /// Held for its lifetime only: dropping it unregisters the VFS.
    _own_vfs: Option<KeyedVfsHandle>,
    /// The reserved bytes per page a new encrypted destination gets (its format's).
    reserve: Option<std::ffi::c_int>,
}

impl BackupDestination {
    /// A key of its own needs an encrypted source (80 reserved bytes per page, which a
    /// page-by-page copy keeps); `source_has_key` says whether the source is encrypted.
    /// The JS layer takes the other way (copy, then encrypt) for a plaintext source.
    pub fn allow_own_key(source_has_key: bool) -> Result<()> {
        if source_has_key {
            Ok(())
        } else {
            Err(Error::Usage(
                "A plaintext database cannot be backed up page by page under a key".into(),
            ))
        }
    }

    /// The destination for a backup of a connection whose files go through `source`.
    pub fn choose(source: &DatabaseVfs, key: BackupKey<'_>) -> Result<BackupDestination> {
        Ok(match key {
            BackupKey::SameAsSource => BackupDestination {
                vfs_name: source.keyed_name().map(ToOwned::to_owned),
                reserve: source.reserve_bytes(),
                _own_vfs: None,
            },
            BackupKey::Plaintext => BackupDestination {
                vfs_name: None,
                reserve: None,
                _own_vfs: None,
            },
            BackupKey::Own(key) => {
                Self::allow_own_key(source.is_keyed())?;
                // The copy keeps the source's reserve: the destination is in its format.
                let scheme = source.scheme().unwrap_or_default();
                let vfs = KeyedVfsHandle::register_with_scheme(
                    &VfsKey::Raw(key),
                    scheme,
                    NewFileLayout::Sqlite3mc,
                    vfs::PAGE_SIZE,
                    None,
                )
                .map_err(code_error)?;
                BackupDestination {
                    vfs_name: Some(vfs.name().to_owned()),
                    reserve: Some(vfs.reserve_bytes()),
                    _own_vfs: Some(vfs),
                }
            }
        })
    }

    /// True when the destination is encrypted.
    pub fn is_encrypted(&self) -> bool {
        self.vfs_name.is_some()
    }

    /// Starts copying database `source_name` of `source` into `path`. An encrypted
    /// destination gets SQLCipher's reserved bytes on a new page 1.
    pub fn start(
        &self,
        source: &Connection,
        source_name: &str,
        path: &str,
    ) -> cipherlite_sqlite::Result<Backup> {
        let reserve = self.vfs_name.as_ref().and(self.reserve);
        Backup::start(source, source_name, path, self.vfs_name.as_deref(), reserve)
    }
}

/// A running backup and whether its destination file is ours to delete if it is aborted.
pub struct RunningBackup {
    backup: Backup,
    /// The destination did not exist before: an aborted backup removes it.
    unlink: bool,
    /// The VFS the destination is written through (one of its own, for a key of its own,
    /// is unregistered once the backup's destination connection is closed).
    destination: Option<BackupDestination>,
}

impl RunningBackup {
    /// Starts copying database `source_name` of `source` into `path` through
    /// `destination`; `created` says that `path` did not exist before (so an unfinished
    /// backup deletes it).
    pub fn start(
        source: &Connection,
        source_name: &str,
        path: &str,
        destination: BackupDestination,
        created: bool,
    ) -> cipherlite_sqlite::Result<RunningBackup> {
        let backup = destination.start(source, source_name, path)?;
        Ok(RunningBackup {
            backup,
            unlink: created,
            destination: Some(destination),
        })
    }

    /// Copies up to `pages` pages (negative: all); once done, the file is the user's.
    pub fn step(&mut self, pages: i32) -> cipherlite_sqlite::Result<BackupProgress> {
        let progress = self.backup.step(pages)?;
        if progress.done {
            self.unlink = false;
        }
        Ok(progress)
    }

    /// True until [`close`](Self::close): SQLite's backup object still holds the source
    /// connection (and the destination's VFS).
    pub fn is_running(&self) -> bool {
        self.backup.is_open()
    }

    /// Finishes the backup; an unfinished one into a new file deletes that file.
    pub fn close(&mut self) {
        let filename = if self.unlink {
            self.backup.dest_filename()
        } else {
            None
        };
        self.backup.close();
        drop(self.destination.take());
        if let Some(f) = filename {
            let _ = std::fs::remove_file(&f);
        }
        self.unlink = false;
    }
}
