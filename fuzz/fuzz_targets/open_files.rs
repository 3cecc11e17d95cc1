//! Arbitrary files (a database, its rollback journal and its WAL) opened as an encrypted
//! database through the keyed VFS, on the simulated disk of the integration tests: never a
//! panic, a hang or an out-of-bounds access (run under AddressSanitizer) in the VFS's
//! header parsing, geometry checks, recovery and key check. The corpus under
//! fuzz/corpus/open_files holds real encrypted files (key [0x5a; 32], made by
//! scripts/make-fuzz-corpus.js) for the fuzzer to mutate.
#![no_main]

#[path = "../../crates/tests/tests/common/sim_disk.rs"]
mod sim_disk;

use cipherlite_sqlite::{Connection, OpenFlags};
use cipherlite_vfs::{KeyedVfsHandle, NewFileLayout};
use libfuzzer_sys::fuzz_target;
use std::collections::HashMap;

const KEY: [u8; 32] = [0x5a; 32];
const DB: &str = "/fuzz/x.db";

/// Input: three files, each as a 4-byte little-endian length then its bytes.
fn split(data: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut rest = data;
    for _ in 0..3 {
        if rest.len() < 4 {
            out.push(Vec::new());
            continue;
        }
        let n = (u32::from_le_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize).min(rest.len() - 4);
        out.push(rest[4..4 + n].to_vec());
        rest = &rest[4 + n..];
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let parts = split(data);
    let disk = SimDiskHolder::get();
    let mut files = HashMap::new();
    for (suffix, bytes) in ["", "-journal", "-wal"].iter().zip(parts) {
        if !bytes.is_empty() || suffix.is_empty() {
            files.insert(format!("{DB}{suffix}"), bytes);
        }
    }
    disk.0.restore(&files);
    let Ok(conn) = Connection::open(DB, OpenFlags::default(), Some(disk.1.name())) else { return };
    for sql in ["PRAGMA integrity_check", "SELECT name, sql FROM sqlite_master", "PRAGMA journal_mode"] {
        if let Ok((Some(mut stmt), _)) = conn.prepare(sql, false) {
            while let Ok(true) = stmt.step() {}
        }
    }
    drop(conn);
});

/// One disk and keyed VFS for the whole run (registering per input would be slow).
struct SimDiskHolder(Box<sim_disk::SimDisk>, KeyedVfsHandle);

impl SimDiskHolder {
    fn get() -> &'static SimDiskHolder {
        use std::sync::OnceLock;
        static HOLDER: OnceLock<SimDiskHolder> = OnceLock::new();
        HOLDER.get_or_init(|| {
            let disk = sim_disk::SimDisk::new(512, true);
            let vfs = KeyedVfsHandle::register_over(&KEY, NewFileLayout::Sqlite3mc, Some(disk.name())).expect("vfs");
            SimDiskHolder(disk, vfs)
        })
    }
}

// SAFETY: SimDisk and KeyedVfsHandle hold raw pointers to their own registered VFS
// structs, which stay valid for the process; libFuzzer runs inputs on one thread.
unsafe impl Sync for SimDiskHolder {}
// SAFETY: as above.
unsafe impl Send for SimDiskHolder {}
