//! [`WalIndex`]: what the VFS sees of the wal-index (the `-shm` file SQLite maps through the
//! database file's `xShmMap`), to learn which page SQLite will take a WAL frame for.
//!
//! SQLite finds the frame holding page N through the wal-index's hash tables and its
//! `aPgno[]` array, both in a shared file any process may write. The page read from that
//! frame must be authenticated as the page SQLite will use it as — `aPgno[frame]` — not only
//! as the page number in the frame's own header, or an edited `-shm` could substitute one
//! authentic page for another.
//!
//! Layout (SQLite's wal.c): 32 KiB regions; region 0 starts with a 136-byte header, then
//! `aPgno` for frames 1..=4062; region r > 0 holds `aPgno` for the next 4096 frames; the
//! hash tables follow in each region. Values are native-endian u32.
//!
//! The header (`WalIndexHdr`, two 48-byte copies a writer keeps equal) also says which frame
//! was committed last: `mxFrame` at 16, SQLite's checksum of that frame (`aFrameCksum`,
//! the chain over the plaintext it wrote) at 24, the WAL header's salts (as bytes) at 32.
//! The VFS reads it only as this handle releases the WAL write lock (see
//! [`WalIndex::write_lock_releasing`]), and uses it only for frames written while this
//! handle held that lock.

use std::{
    ffi::c_void,
    sync::{
        atomic::{AtomicU64, Ordering},
        Mutex,
    },
};

/// Bytes of the wal-index header at the start of region 0 (two copies of the 48-byte
/// header and the 40-byte checkpoint info).
const HEADER_BYTES: usize = 136;
/// Frames whose page numbers a region holds (region 0 fewer, after the header).
const FRAMES_PER_REGION: u32 = 4096;
const FRAMES_IN_REGION_ZERO: u32 = FRAMES_PER_REGION - (HEADER_BYTES / 4) as u32;
/// The region size SQLite maps.
pub const REGION_SIZE: usize = 32768;
/// Bytes of one copy of the wal-index header (`WalIndexHdr`).
const INDEX_HEADER_COPY: usize = 48;

/// The last committed frame, as the wal-index header says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastCommit {
    /// `mxFrame`: 0 when the WAL holds no committed frame.
    pub frame: u32,
    /// SQLite's checksum of that frame (`aFrameCksum`).
    pub sqlite_checksum: (u32, u32),
    /// The salts of the WAL generation (`aSalt`, the WAL header's bytes).
    pub salts: [u8; 8],
}

impl LastCommit {
    /// Reads one header copy (48 bytes, native-endian words); `None` unless initialised.
    fn parse(copy: &[u8]) -> Option<LastCommit> {
        let word =
            |at: usize| u32::from_ne_bytes([copy[at], copy[at + 1], copy[at + 2], copy[at + 3]]);
        if copy[12] == 0 {
            return None;
        }
        let mut salts = [0u8; 8];
        salts.copy_from_slice(&copy[32..40]);
        Some(LastCommit {
            frame: word(16),
            sqlite_checksum: (word(24), word(28)),
            salts,
        })
    }
}

/// What the wal-index says about a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FramePage {
    /// No region is mapped since the handle opened or last unmapped: SQLite keeps the
    /// wal-index in its own heap memory (exclusive locking mode), built from the frame
    /// headers it read.
    HeapMemory,
    /// The page number SQLite has for the frame.
    Page(u32),
    /// The region holding the frame isn't mapped here.
    Unmapped,
}

/// The wal-index regions mapped by one database file handle, and a counter of its lock
/// calls (`xShmLock`, `xLock`, `xUnlock`, and `xTruncate`): caches of WAL state and of
/// pages read ahead are valid only between two of them.
#[derive(Default)]
pub struct WalIndex {
    /// The page a checkpoint running on this handle read last (set by the WAL handle,
    /// used by the database handle, switched on and off by the checkpoint lock).
    pub checkpoint: super::checkpoint_copy::CheckpointCopy,
    regions: Mutex<Vec<usize>>,
    ever_mapped: std::sync::atomic::AtomicBool,
    lock_epoch: AtomicU64,
    /// Pages read from the WAL through this database's WAL handle, counted: SQLite's
    /// content of those pages came from the WAL, not from the database file (see
    /// `journal_copy`).
    wal_page_reads: AtomicU64,
    /// The WAL write lock as this handle takes and releases it.
    write_lock: Mutex<WriteLock>,
}

/// The spans during which this handle held the WAL write lock (`WAL_WRITE_LOCK`, taken
/// through `xShmLock`; in exclusive locking mode SQLite takes no lock at all).
#[derive(Default)]
struct WriteLock {
    /// Spans begun so far; the one going on, if the lock is held.
    spans: u64,
    held: Option<u64>,
    /// The span released last, and the last commit the wal-index header named as it was
    /// released (still held).
    last_released: Option<(u64, Option<LastCommit>)>,
}

impl WalIndex {
    /// Records that region `region` is mapped at `ptr` (null: not mapped).
    pub fn mapped(&self, region: usize, ptr: *mut c_void) {
        if ptr.is_null() {
            return;
        }
        if let Ok(mut regions) = self.regions.lock() {
            if regions.len() <= region {
                regions.resize(region + 1, 0);
            }
            regions[region] = ptr as usize;
            self.ever_mapped.store(true, Ordering::Release);
        }
    }

    /// The mapping is gone (`xShmUnmap`). A WAL SQLite opens on this handle next may keep
    /// its wal-index in heap memory (`journal_mode=DELETE`, `locking_mode=EXCLUSIVE`, then
    /// WAL again): until a region is mapped again, that is what the VFS assumes.
    pub fn unmapped(&self) {
        if let Ok(mut regions) = self.regions.lock() {
            regions.clear();
            self.ever_mapped.store(false, Ordering::Release);
        }
    }

    /// A lock call (or a truncation) on the database handle: a new epoch.
    pub fn locked(&self) {
        self.lock_epoch.fetch_add(1, Ordering::AcqRel);
    }

    pub fn epoch(&self) -> u64 {
        self.lock_epoch.load(Ordering::Acquire)
    }

    /// This handle took the WAL write lock: a new span begins.
    pub fn write_lock_taken(&self) {
        if let Ok(mut lock) = self.write_lock.lock() {
            lock.spans += 1;
            lock.held = Some(lock.spans);
        }
    }

    /// This handle is about to release the WAL write lock (it still holds it): the span
    /// ends, and what the wal-index header names as committed last is kept with it. While
    /// the lock was held no other connection could write the WAL or that header, so if it
    /// names a frame written in the span, that frame's transaction committed it. (The
    /// header may as well name another connection's commit: when SQLite took the lock only
    /// to find its snapshot stale, to read the header, or to checkpoint.)
    pub fn write_lock_releasing(&self) {
        let last_commit = self.last_commit();
        if let Ok(mut lock) = self.write_lock.lock() {
            lock.last_released = lock.held.take().map(|span| (span, last_commit));
        }
    }

    /// The span of the WAL write lock going on, if this handle holds it.
    pub fn write_span(&self) -> Option<u64> {
        self.write_lock.lock().ok()?.held
    }

    /// The last commit the wal-index header named as span `span` ended, if it is the span
    /// released last.
    pub fn last_commit_of_span(&self, span: u64) -> Option<LastCommit> {
        match self.write_lock.lock().ok()?.last_released {
            Some((released, last_commit)) if released == span => last_commit,
            _ => None,
        }
    }

    /// The wal-index header's last commit: `None` if region 0 isn't mapped, the header is
    /// not initialised, or its two copies differ (a writer is changing it).
    fn last_commit(&self) -> Option<LastCommit> {
        let regions = self.regions.lock().ok()?;
        let base = *regions.first().filter(|&&base| base != 0)?;
        let mut copies = [0u8; 2 * INDEX_HEADER_COPY];
        for (i, byte) in copies.iter_mut().enumerate() {
            // SAFETY: region 0 is mapped at base, REGION_SIZE bytes, until xShmUnmap,
            // which clears `regions` under the lock held here; i < 96 <= REGION_SIZE.
            // Another process may write it: volatile reads take what is there.
            *byte = unsafe { std::ptr::read_volatile((base + i) as *const u8) };
        }
        let (first, second) = copies.split_at(INDEX_HEADER_COPY);
        if first != second {
            return None;
        }
        LastCommit::parse(first)
    }

    /// A page (or a whole frame) is about to be read from the WAL.
    pub fn wal_page_read(&self) {
        self.wal_page_reads.fetch_add(1, Ordering::AcqRel);
    }

    /// How many pages were read from the WAL so far.
    pub fn wal_page_reads(&self) -> u64 {
        self.wal_page_reads.load(Ordering::Acquire)
    }

    /// The page number the wal-index holds for `frame` (1-based).
    pub fn frame_page(&self, frame: u32) -> FramePage {
        if frame == 0 {
            return FramePage::Unmapped;
        }
        if !self.ever_mapped.load(Ordering::Acquire) {
            return FramePage::HeapMemory;
        }
        let (region, byte_offset) = if frame <= FRAMES_IN_REGION_ZERO {
            (0usize, HEADER_BYTES + (frame as usize - 1) * 4)
        } else {
            let rest = frame - FRAMES_IN_REGION_ZERO - 1;
            (
                1 + (rest / FRAMES_PER_REGION) as usize,
                (rest % FRAMES_PER_REGION) as usize * 4,
            )
        };
        let Ok(regions) = self.regions.lock() else {
            return FramePage::Unmapped;
        };
        match regions.get(region) {
            Some(&base) if base != 0 => {
                // SAFETY: SQLite mapped REGION_SIZE bytes at base (4-byte aligned) and keeps
                // the mapping until xShmUnmap, which clears `regions` under this lock;
                // byte_offset + 4 <= REGION_SIZE. Other processes may write the word
                // concurrently: a volatile read takes whatever value is there.
                let value = unsafe { std::ptr::read_volatile((base + byte_offset) as *const u32) };
                FramePage::Page(value)
            }
            _ => FramePage::Unmapped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{create, exec, open, query, TempDir};
    use crate::{KeyedVfsHandle, NewFileLayout};
    use cipherlite_sqlite::{Connection, OpenFlags};
    use std::path::PathBuf;

    #[test]
    fn frame_page_reads_apgno_of_the_right_region() {
        let mut region0 = vec![0u32; REGION_SIZE / 4];
        let mut region1 = vec![0u32; REGION_SIZE / 4];
        region0[HEADER_BYTES / 4] = 7; // frame 1
        region0[HEADER_BYTES / 4 + 4061] = 9; // frame 4062
        region1[0] = 11; // frame 4063
        let index = WalIndex::default();
        assert_eq!(index.frame_page(1), FramePage::HeapMemory);
        index.mapped(0, region0.as_mut_ptr().cast());
        assert_eq!(index.frame_page(1), FramePage::Page(7));
        assert_eq!(index.frame_page(4062), FramePage::Page(9));
        assert_eq!(index.frame_page(4063), FramePage::Unmapped);
        index.mapped(1, region1.as_mut_ptr().cast());
        assert_eq!(index.frame_page(4063), FramePage::Page(11));
        index.unmapped();
        assert_eq!(index.frame_page(1), FramePage::HeapMemory);
    }

    /// The key of the read-only `-shm` test's database (the writer runs in another process).
    const READ_ONLY_SHM_KEY: [u8; 32] = [21u8; 32];

    #[test]
    fn a_reader_on_a_read_only_wal_index_reads_the_wal() {
        // Found in review: SQLite maps a read-only -shm that a live writer (in another process)
        // keeps current: xShmMap returns SQLITE_READONLY with the mapping. The VFS recorded no
        // mapping, took SQLite's wal-index for its own heap copy and refused every WAL page.
        let dir = TempDir::new("ro-shm");
        let path = dir.0.join("r.db");
        let vfs =
            KeyedVfsHandle::register(&READ_ONLY_SHM_KEY, NewFileLayout::Sqlite3mc).expect("vfs");
        create(&path, &vfs, 20);
        let ready = dir.0.join("ready");
        let done = dir.0.join("done");
        let mut writer = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "--exact",
                "wal_index::tests::wal_writer_for_the_read_only_shm_test",
                "--ignored",
                "--test-threads=1",
            ])
            .env("CIPHERLITE_TEST_WAL_WRITER", &path)
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("writer process");
        let started = std::time::Instant::now();
        while !ready.exists() {
            assert!(
                started.elapsed().as_secs() < 60,
                "the writer never got ready"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let uri = format!("file:{}?readonly_shm=1", path.display());
        let flags = OpenFlags {
            readonly: true,
            uri: true,
            ..OpenFlags::default()
        };
        // The writer is told to stop whatever the reader saw (a failure here must not leave it
        // waiting).
        let seen = std::panic::catch_unwind(|| {
            let reader = Connection::open(&uri, flags, Some(vfs.name())).expect("open");
            query(&reader, "SELECT count(*) FROM t WHERE b = 'in the wal'")
        });
        std::fs::write(&done, b"").expect("done");
        assert!(writer.wait().expect("writer").success());
        assert_eq!(seen.expect("the reader read the WAL"), ["10"]);
    }

    /// The other process of [`a_reader_on_a_read_only_wal_index_reads_the_wal`]: keeps a WAL
    /// database open with committed frames until told to stop. Does nothing when run alone.
    #[test]
    #[ignore = "run by a_reader_on_a_read_only_wal_index_reads_the_wal in a process of its own"]
    fn wal_writer_for_the_read_only_shm_test() {
        let Some(path) = std::env::var_os("CIPHERLITE_TEST_WAL_WRITER") else {
            return;
        };
        let path = PathBuf::from(path);
        let vfs =
            KeyedVfsHandle::register(&READ_ONLY_SHM_KEY, NewFileLayout::Sqlite3mc).expect("vfs");
        let conn = open(&path, &vfs);
        exec(
            &conn,
            "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0",
        );
        exec(&conn, "UPDATE t SET b = 'in the wal' WHERE a <= 10");
        let dir = path.parent().expect("dir");
        std::fs::write(dir.join("ready"), b"").expect("ready");
        let started = std::time::Instant::now();
        while !dir.join("done").exists() && started.elapsed().as_secs() < 60 {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        drop(conn);
    }

    #[test]
    fn a_heap_memory_wal_after_leaving_wal_mode_on_the_same_handle_works() {
        // Found in review: after journal_mode=DELETE (the -shm unmapped), locking_mode=EXCLUSIVE
        // and journal_mode=WAL open a WAL whose wal-index SQLite keeps in heap memory; the VFS
        // still took every frame for a -shm region no longer mapped.
        let dir = TempDir::new("heap-again");
        let path = dir.0.join("h.db");
        let vfs = KeyedVfsHandle::register(&[22u8; 32], NewFileLayout::Sqlite3mc).expect("vfs");
        create(&path, &vfs, 20);
        let conn = open(&path, &vfs);
        exec(
            &conn,
            "PRAGMA journal_mode = WAL; UPDATE t SET b = 'shared' WHERE a = 1",
        );
        exec(&conn, "PRAGMA journal_mode = DELETE");
        exec(
            &conn,
            "PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL",
        );
        exec(
            &conn,
            "PRAGMA wal_autocheckpoint = 0; PRAGMA cache_size = 2",
        );
        exec(&conn, "UPDATE t SET b = 'heap' WHERE a > 10");
        assert_eq!(
            query(&conn, "SELECT count(*) FROM t WHERE b = 'heap'"),
            ["10"]
        );
        assert_eq!(query(&conn, "SELECT b FROM t WHERE a = 1"), ["shared"]);
        assert_eq!(query(&conn, "PRAGMA integrity_check"), ["ok"]);
    }
}
