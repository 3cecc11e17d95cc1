//! Out of memory in the VFS itself: each of the encrypting VFS's fallible buffer
//! allocations (the per-file scratch page, page 1 read at open and its copies in a hot
//! journal or WAL, the frame assembled from pieces on a device without powersafe
//! overwrite, the speculative padding frame, the page 1 cache) fails in turn — and every
//! one after it, as memory stays exhausted — while a workload opens, writes, reads,
//! commits, rolls back and checkpoints an encrypted database on the simulated disk. Each
//! time: a step that fails reports `SQLITE_NOMEM` (never another error, and never "not a
//! database" at open), the process survives, and once memory is back the database reopens
//! with `integrity_check` ok, holding exactly one of the states between steps and every
//! step that reported success. Needs `--features fault-injection`; the total is printed.
//! One test in this binary: the allocation hook is global to the process.

mod common;

use cipherlite_sqlite::{ffi, Connection, OpenFlags};
use cipherlite_vfs::{fault_injection, KeyedVfsHandle, NewFileLayout};
use common::sim_disk::SimDisk;
use common::sql::{content, exec, rows};
use std::collections::HashMap;

const DB: &str = "/sim/alloc.db";
const P: usize = cipherlite_vfs::PAGE_SIZE;

fn open(keyed: &KeyedVfsHandle, journal_mode: &str) -> cipherlite_sqlite::Result<Connection> {
    let conn = Connection::open(DB, OpenFlags::default(), Some(keyed.name()))?;
    let mut reserve = cipherlite_vfs::RESERVE_BYTES;
    let _ = conn.file_control_int(c"main", ffi::SQLITE_FCNTL_RESERVE_BYTES, &mut reserve);
    exec(
        &conn,
        &format!(
            "PRAGMA journal_mode = {journal_mode}; PRAGMA synchronous = FULL; PRAGMA cache_size = 8; PRAGMA wal_autocheckpoint = 0;"
        ),
    )?;
    Ok(conn)
}

const BASE: &str = "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);
  INSERT INTO t(b) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 60)
  SELECT printf('base-%04d-%0200d', i, i * 7) FROM s;";

const STEPS: &[&str] = &[
    "SELECT count(*) FROM t;",
    "BEGIN; INSERT INTO t(b) SELECT printf('x-%04d-%0200d', a, a * 31) FROM t; COMMIT;",
    "BEGIN; UPDATE t SET b = 'u-' || b WHERE a % 3 = 0; ROLLBACK;",
    "BEGIN; DELETE FROM t WHERE a % 5 = 0; COMMIT;",
    "PRAGMA wal_checkpoint(TRUNCATE);",
    "INSERT INTO t(b) VALUES ('last');",
];

/// How the disk looks when the workload starts.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Start {
    /// The base data, committed and synced.
    Clean,
    /// A transaction was cut off with its journal (or WAL) on disk and page 1 of the
    /// database torn: opening checks the key against page 1's copy there.
    TornPage1,
}

struct Config {
    journal_mode: &'static str,
    sector: i32,
    powersafe: bool,
    start: Start,
}

fn tear_page1(files: &mut HashMap<String, Vec<u8>>) {
    let db = files
        .iter_mut()
        .find(|(name, _)| name.ends_with("alloc.db"))
        .expect("the database file")
        .1;
    for (i, b) in db[..P].iter_mut().enumerate() {
        *b ^= (i as u8) | 1;
    }
}

/// The disk to start from, and the connection-free state it opens to.
fn prepare(disk: &SimDisk, keyed: &KeyedVfsHandle, config: &Config) -> HashMap<String, Vec<u8>> {
    {
        let conn = open(keyed, config.journal_mode).expect("open");
        exec(&conn, BASE).expect("base");
        exec(&conn, "PRAGMA wal_checkpoint(TRUNCATE);").expect("checkpoint");
        conn.close().map_err(|(_, e)| e).expect("close");
    }
    disk.sync_all();
    if config.start == Start::Clean {
        return disk.snapshot();
    }
    let conn = open(keyed, config.journal_mode).expect("open");
    if config.journal_mode == "wal" {
        // Committed to the WAL only (a schema change: page 1 among its frames), not
        // checkpointed.
        exec(
            &conn,
            "CREATE TABLE u(x); UPDATE t SET b = 'wal-' || b WHERE a % 2 = 0;",
        )
        .expect("update");
    } else {
        // A spilling transaction that changes the schema (so page 1 is journaled): the
        // journal and some pages on disk.
        exec(
            &conn,
            "PRAGMA cache_size = 1; BEGIN; CREATE TABLE u(x); UPDATE t SET b = 'hot-' || b;",
        )
        .expect("spill");
    }
    let mut files = disk.snapshot();
    drop(conn);
    tear_page1(&mut files);
    files
}

fn run(config: &Config, total: &mut u64, failing: &mut u64) {
    let disk = SimDisk::new(config.sector, config.powersafe);
    let keyed =
        KeyedVfsHandle::register_over(&[0x5au8; 32], NewFileLayout::Sqlite3mc, Some(disk.name()))
            .expect("keyed VFS");
    let start = prepare(&disk, &keyed, config);
    let label = format!(
        "{} sector {} powersafe {} {:?}",
        config.journal_mode, config.sector, config.powersafe, config.start
    );

    // Reference run: the states between steps, and how many allocations the workload makes.
    disk.restore(&start);
    let first = fault_injection::allocations();
    let mut states = Vec::new();
    {
        let conn =
            open(&keyed, config.journal_mode).unwrap_or_else(|e| panic!("{label}: open: {e}"));
        states.push(content(&conn).expect("content"));
        for step in STEPS {
            exec(&conn, step).unwrap_or_else(|e| panic!("{label}: {step}: {e}"));
            states.push(content(&conn).expect("content"));
        }
        conn.close().map_err(|(_, e)| e).expect("close");
    }
    let allocations = fault_injection::allocations() - first;
    assert!(allocations > 0, "{label}: the workload allocated nothing");

    for n in 0..allocations {
        disk.restore(&start);
        fault_injection::fail_allocation_after(n);
        let mut acknowledged = 0usize;
        let mut failed = false;
        let before = fault_injection::allocations();
        match open(&keyed, config.journal_mode) {
            Err(e) => {
                assert_eq!(
                    e.code & 0xff,
                    ffi::SQLITE_NOMEM,
                    "{label}: allocation {n} failing at open: {e}"
                );
                failed = true;
            }
            Ok(conn) => {
                for step in STEPS {
                    match exec(&conn, step) {
                        Ok(()) => acknowledged += 1,
                        Err(e) => {
                            assert_eq!(
                                e.code & 0xff,
                                ffi::SQLITE_NOMEM,
                                "{label}: allocation {n} failing in {step}: {e}"
                            );
                            failed = true;
                            break;
                        }
                    }
                }
                if let Err((conn, _)) = conn.close() {
                    drop(conn);
                }
            }
        }
        let reached = fault_injection::allocations() - before > n;
        fault_injection::fail_allocation_after(-1);
        assert!(reached, "{label}: allocation {n} was never reached");

        let conn = open(&keyed, config.journal_mode)
            .unwrap_or_else(|e| panic!("{label}: reopen after allocation {n} failed: {e}"));
        assert_eq!(
            rows(&conn, "PRAGMA integrity_check").expect("integrity_check"),
            "ok|\n",
            "{label}: integrity after allocation {n} failed"
        );
        let now = content(&conn).expect("content");
        let acknowledged_state = &states[acknowledged.min(states.len() - 1)];
        assert!(
            *acknowledged_state == now || states.get(acknowledged + 1) == Some(&now),
            "{label}: allocation {n}: {acknowledged} steps acknowledged, content is another state (failed: {failed})"
        );
        conn.close().map_err(|(_, e)| e).expect("close");
        *total += 1;
        *failing += u64::from(failed);
    }
    drop(keyed);
}

#[test]
fn every_vfs_allocation_failing_in_turn_loses_nothing() {
    let configs = [
        Config {
            journal_mode: "delete",
            sector: 512,
            powersafe: true,
            start: Start::Clean,
        },
        Config {
            journal_mode: "wal",
            sector: 4096,
            powersafe: false,
            start: Start::Clean,
        },
        Config {
            journal_mode: "truncate",
            sector: 4096,
            powersafe: false,
            start: Start::Clean,
        },
        Config {
            journal_mode: "delete",
            sector: 512,
            powersafe: true,
            start: Start::TornPage1,
        },
        Config {
            journal_mode: "wal",
            sector: 512,
            powersafe: true,
            start: Start::TornPage1,
        },
    ];
    let mut total = 0;
    let mut failing = 0;
    for config in &configs {
        run(config, &mut total, &mut failing);
    }
    eprintln!("VFS allocation sweep: {total} failed allocations, {failing} of them made a step fail with SQLITE_NOMEM");
    // Some allocations are only a cache (the workload goes on without it); most are not.
    assert!(failing > 0 && failing <= total);
}
