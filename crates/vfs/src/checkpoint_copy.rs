//! [`CheckpointCopy`]: a checkpoint moves WAL frames into the database file without
//! encrypting their pages again.
//!
//! A checkpoint copies each page's newest WAL frame into the database file: SQLite reads
//! the page from the WAL (the VFS authenticates and decrypts it) and writes the same bytes
//! to the database file (where the VFS would encrypt them again: a second CBC pass, HMAC
//! and IV draw per page, the checkpoint's whole cost in CPU). But the frame's image is
//! already a valid database page for that page number: its HMAC covers the ciphertext, the
//! IV and the page number, nothing of where the image lies. So the WAL handle keeps the
//! image it authenticated and the plaintext it handed over, and when the database handle
//! is asked to write exactly that plaintext as that page, it writes the image as it was
//! read — the bytes the writer encrypted, under this file's key (docs/design.md §4.3).
//!
//! Kept only while a checkpoint runs on this handle (between SQLite's
//! `SQLITE_FCNTL_CKPT_START` and `SQLITE_FCNTL_CKPT_DONE`, in every locking mode), only for
//! pages other than 1 (page 1 carries the salt, the page-1 layout and the database
//! handle's page-1 cache), and only the page of the WAL read last (every WAL page read
//! drops what was kept first); a write of any other content or page takes the ordinary
//! path. The plaintext is compared in constant time and wiped when the copy is dropped.

use std::sync::Mutex;

use zeroize::Zeroize;

/// The WAL page a checkpoint read last, for the database handle to write unchanged.
#[derive(Default)]
pub struct CheckpointCopy {
    state: Mutex<Kept>,
}

#[derive(Default)]
struct Kept {
    checkpointing: bool,
    /// The page whose image and plaintext are complete; 0 while none is.
    pgno: u32,
    image: Vec<u8>,
    plaintext: Vec<u8>,
}

impl Kept {
    fn forget(&mut self) {
        self.pgno = 0;
        self.plaintext.zeroize();
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        self.plaintext.zeroize();
    }
}

impl CheckpointCopy {
    /// The connection took (`true`) or released (`false`) the checkpoint lock.
    pub fn set_checkpointing(&self, checkpointing: bool) {
        if let Ok(mut kept) = self.state.lock() {
            kept.checkpointing = checkpointing;
            kept.forget();
        }
    }

    /// Called as a WAL page read begins: drops what is kept (it belonged to the page read
    /// before) and says whether the page read now may be kept (a checkpoint is running
    /// here). One lock for both, since every WAL page read asks.
    pub fn begin_read(&self) -> bool {
        self.state.lock().is_ok_and(|mut kept| {
            kept.forget();
            kept.checkpointing
        })
    }

    /// Keeps `image`, the page `pgno` just read from the WAL and authenticated, with
    /// `plaintext`, what it decrypted to (as handed to SQLite). Keeps nothing for page 1,
    /// outside a checkpoint, or without memory for the copies.
    pub fn keep(&self, pgno: u32, image: &[u8], plaintext: &[u8]) {
        let Ok(mut kept) = self.state.lock() else {
            return;
        };
        kept.forget();
        if !kept.checkpointing || pgno == 1 || image.len() != plaintext.len() {
            return;
        }
        if copy_into(&mut kept.image, image).is_err()
            || copy_into(&mut kept.plaintext, plaintext).is_err()
        {
            return;
        }
        kept.pgno = pgno;
    }

    /// If `plaintext` is exactly what the kept page `pgno` decrypted to, hands its image
    /// to `write` and returns the result; else `None`, and the caller encrypts as usual.
    /// Either way nothing stays kept.
    pub fn write_kept<R>(
        &self,
        pgno: u32,
        plaintext: &[u8],
        write: impl FnOnce(&[u8]) -> R,
    ) -> Option<R> {
        let mut kept = self.state.lock().ok()?;
        let same =
            kept.pgno != 0 && kept.pgno == pgno && constant_time_eq(&kept.plaintext, plaintext);
        let result = same.then(|| write(&kept.image));
        kept.forget();
        result
    }
}

/// `dst` = `src`, reusing `dst`'s allocation; fails (leaving `dst` empty) without memory.
fn copy_into(dst: &mut Vec<u8>, src: &[u8]) -> Result<(), std::collections::TryReserveError> {
    dst.clear();
    dst.try_reserve_exact(src.len())?;
    dst.extend_from_slice(src);
    Ok(())
}

/// Equality of two byte strings in time that depends only on their lengths: every byte is
/// compared, with no early exit (the OR of the XORs, eight bytes at a time, which the
/// compiler vectorises; `subtle`'s byte-at-a-time loop cost a microsecond per page).
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let word = |bytes: &[u8]| {
        let mut w = [0u8; 8];
        w.copy_from_slice(bytes);
        u64::from_ne_bytes(w)
    };
    let (a_words, b_words) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail = a_words
        .remainder()
        .iter()
        .zip(b_words.remainder())
        .fold(0u64, |acc, (x, y)| acc | u64::from(x ^ y));
    let differences = a_words
        .zip(b_words)
        .fold(tail, |acc, (x, y)| acc | (word(x) ^ word(y)));
    core::hint::black_box(differences) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::be32;
    use crate::format::{WAL_FRAME_HEADER, WAL_HEADER};
    use crate::test_support::{create, exec, open, query, try_query, TempDir, CONTENT};
    use crate::{KeyedVfsHandle, NewFileLayout, PAGE_SIZE as P};
    use std::path::Path;

    fn written(copy: &CheckpointCopy, pgno: u32, plaintext: &[u8]) -> Option<Vec<u8>> {
        copy.write_kept(pgno, plaintext, |image| image.to_vec())
    }

    #[test]
    fn only_the_page_read_last_in_a_checkpoint_is_written_as_kept() {
        let copy = CheckpointCopy::default();
        copy.keep(5, b"image-5", b"plain-5");
        assert_eq!(written(&copy, 5, b"plain-5"), None, "outside a checkpoint");

        copy.set_checkpointing(true);
        copy.keep(5, b"image-5", b"plain-5");
        assert_eq!(written(&copy, 5, b"plain-5"), Some(b"image-5".to_vec()));
        assert_eq!(written(&copy, 5, b"plain-5"), None, "used once");

        copy.keep(5, b"image-5", b"plain-5");
        assert_eq!(written(&copy, 6, b"plain-5"), None, "another page");
        copy.keep(5, b"image-5", b"plain-5");
        assert_eq!(written(&copy, 5, b"plain-X"), None, "other content");
        copy.keep(5, b"image-5", b"plain-5");
        copy.keep(6, b"image-6", b"plain-6");
        assert_eq!(
            written(&copy, 5, b"plain-5"),
            None,
            "not the page read last"
        );

        copy.keep(1, b"image-1", b"plain-1");
        assert_eq!(written(&copy, 1, b"plain-1"), None, "never page 1");

        copy.keep(7, b"image-7", b"plain-7");
        assert!(copy.begin_read(), "in a checkpoint");
        assert_eq!(
            written(&copy, 7, b"plain-7"),
            None,
            "forgotten by the next read"
        );

        copy.keep(7, b"image-7", b"plain-7");
        copy.set_checkpointing(false);
        assert_eq!(written(&copy, 7, b"plain-7"), None, "checkpoint over");
        assert!(!copy.begin_read(), "outside a checkpoint");
    }

    #[test]
    fn equality_looks_at_every_byte() {
        let page: Vec<u8> = (0..4096u32).map(|i| (i * 7) as u8).collect();
        assert!(constant_time_eq(&page, &page.clone()));
        for at in [0, 7, 8, 4095] {
            let mut other = page.clone();
            other[at] ^= 0x10;
            assert!(!constant_time_eq(&page, &other), "byte {at}");
        }
        assert!(!constant_time_eq(&page, &page[..4095]));
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
    }

    /// The newest image of each page in the WAL beside `path` (every frame there committed).
    fn newest_wal_images(path: &Path) -> std::collections::BTreeMap<u32, Vec<u8>> {
        let wal = std::fs::read(format!("{}-wal", path.display())).expect("wal");
        let mut newest = std::collections::BTreeMap::new();
        for frame in wal[WAL_HEADER..].chunks_exact(WAL_FRAME_HEADER + P) {
            newest.insert(be32(&frame[..4]), frame[WAL_FRAME_HEADER..].to_vec());
        }
        assert!(newest.len() > 3, "{} pages in the WAL", newest.len());
        newest
    }

    /// Every page but page 1 of `path` is the WAL's image, unchanged; page 1 is encrypted anew.
    fn assert_checkpointed_as_copies(
        path: &Path,
        newest: &std::collections::BTreeMap<u32, Vec<u8>>,
    ) {
        let db = std::fs::read(path).expect("db");
        for (&pgno, image) in newest {
            let on_disk = &db[(pgno as usize - 1) * P..pgno as usize * P];
            if pgno == 1 {
                assert!(on_disk != &image[..], "page 1 is encrypted afresh");
            } else {
                assert!(
                    on_disk == &image[..],
                    "page {pgno}: the frame's image, unchanged"
                );
            }
        }
    }

    #[test]
    fn a_checkpoint_writes_the_wal_frames_images_as_they_were_authenticated() {
        let dir = TempDir::new("ckptcopy");
        let vfs = KeyedVfsHandle::register(&[0x3c; 32], NewFileLayout::SqlCipher).expect("vfs");
        let path = dir.0.join("w.db");
        create(&path, &vfs, 50);
        let conn = open(&path, &vfs);
        exec(
            &conn,
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;",
        );
        exec(
            &conn,
            "UPDATE t SET b = 'changed-' || b WHERE a % 3 = 0; INSERT INTO t(b) VALUES ('new');",
        );
        let newest = newest_wal_images(&path);
        assert_eq!(query(&conn, "PRAGMA wal_checkpoint(PASSIVE)"), ["0"]);
        assert_checkpointed_as_copies(&path, &newest);
        let summary = query(&conn, CONTENT);

        // The checkpoint at close runs in exclusive mode (no xShmLock): copied all the same.
        exec(&conn, "UPDATE t SET b = 'again-' || b WHERE a % 5 = 0;");
        let newest = newest_wal_images(&path);
        let summary_after = query(&conn, CONTENT);
        drop(conn);
        assert!(
            !dir.0.join("w.db-wal").exists(),
            "checkpointed and removed at close"
        );
        assert_checkpointed_as_copies(&path, &newest);
        assert_ne!(summary, summary_after);
        assert_eq!(try_query(&path, &vfs, CONTENT), Ok(summary_after));
        assert_eq!(
            try_query(&path, &vfs, "PRAGMA integrity_check"),
            Ok(vec!["ok".to_string()])
        );
    }
}
