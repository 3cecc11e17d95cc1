//! I/O fault sweep: a workload (open, write, read, commit, rollback, checkpoint) runs on the
//! simulated disk of `common::sim_disk`, below the encrypting VFS (each journal mode, at
//! synchronous FULL and OFF), and each call into the disk (read, write, sync, truncate,
//! delete, file size, lock, shm map) fails in turn with an I/O error or `SQLITE_FULL`.
//! Each time: the failing step reports an error (none reports success for work that
//! isn't there), the connection is closed, and the database
//! reopens with `integrity_check` ok, exactly one of the states between steps, and every
//! step that reported success present. An I/O error while the key is checked at open is
//! reported as that I/O error, never as `SQLITE_NOTADB`.
//!
//! Configurations: each journal mode at synchronous FULL and OFF, encrypted in SQLCipher 4's
//! format (both page-1 layouts) and in SQLite3 Multiple Ciphers' AEGIS-256 format
//! (docs/aegis-format.md; its one layout), and plain.
//!
//! Size knob: `CIPHERLITE_FAULT_POINTS` (faults per configuration; default 150,
//! `npm run test:faults` runs them all); `CIPHERLITE_FAULT_FILTER` runs only the
//! configurations whose label (`("wal", "FULL") Some(Sqlite3mc) Aegis256`) contains it.
//! The total is printed.

mod common;

use cipherlite_codec::CipherScheme;
use cipherlite_sqlite::{ffi, Connection, OpenFlags};
use cipherlite_vfs::{KeyedVfsHandle, NewFileLayout, VfsKey};
use common::sim_disk::{Fault, SimDisk};
use common::sql::{content, exec, rows};

const DB: &str = "/sim/faults.db";

fn open(
    disk: &SimDisk,
    keyed: Option<&KeyedVfsHandle>,
    (journal_mode, synchronous): (&str, &str),
) -> cipherlite_sqlite::Result<Connection> {
    let vfs = keyed.map_or(disk.name(), |k| k.name());
    let conn = Connection::open(DB, OpenFlags::default(), Some(vfs))?;
    if let Some(keyed) = keyed {
        let mut reserve = keyed.scheme().reserve() as std::ffi::c_int;
        let _ = conn.file_control_int(c"main", ffi::SQLITE_FCNTL_RESERVE_BYTES, &mut reserve);
    }
    exec(&conn, &format!("PRAGMA journal_mode = {journal_mode}; PRAGMA synchronous = {synchronous}; PRAGMA cache_size = 12; PRAGMA wal_autocheckpoint = 0;"))?;
    Ok(conn)
}

const STEPS: &[&str] = &[
    "BEGIN; INSERT INTO t(b) SELECT printf('x-%04d-%0200d', a, a * 31) FROM t; COMMIT;",
    "BEGIN; UPDATE t SET b = 'u-' || b WHERE a % 3 = 0; ROLLBACK;",
    "BEGIN; DELETE FROM t WHERE a % 5 = 0; COMMIT;",
    "PRAGMA wal_checkpoint(TRUNCATE);",
    "INSERT INTO t(b) VALUES ('last');",
];

const BASE: &str = "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);
  INSERT INTO t(b) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 80)
  SELECT printf('base-%04d-%0200d', i, i * 7) FROM s;";

/// The errors injected, in turn.
const CODES: [std::ffi::c_int; 3] = [ffi::SQLITE_IOERR, ffi::SQLITE_FULL, ffi::SQLITE_IOERR_WRITE];

/// One configuration: journal mode and synchronous setting, the page-1 layout and page
/// format of an encrypted database (`None`: plain).
type Config = (
    (&'static str, &'static str),
    Option<(NewFileLayout, CipherScheme)>,
);

fn label((mode, keyed): Config) -> String {
    match keyed {
        Some((layout, scheme)) => format!("{mode:?} Some({layout:?}) {scheme:?}"),
        None => format!("{mode:?} None"),
    }
}

fn run(config: Config, per_config: u64, total: &mut u64, failing: &mut u64) {
    let (mode, format) = config;
    let disk = SimDisk::new(512, true);
    let key = [0x24u8; 32];
    let keyed = format.map(|(layout, scheme)| {
        KeyedVfsHandle::register_with_scheme(
            &VfsKey::Raw(&key),
            scheme,
            layout,
            cipherlite_vfs::PAGE_SIZE,
            Some(disk.name()),
        )
        .expect("keyed VFS")
    });
    {
        let conn = open(&disk, keyed.as_ref(), mode).expect("open");
        exec(&conn, BASE).expect("base");
        exec(&conn, "PRAGMA wal_checkpoint(TRUNCATE);").expect("checkpoint");
        conn.close().map_err(|(_, e)| e).expect("close");
    }
    disk.sync_all();
    let start = disk.snapshot();
    // Reference run: the states, and how many calls the workload makes.
    let mut states = Vec::new();
    disk.inject(Some(Fault {
        at: u64::MAX,
        code: ffi::SQLITE_IOERR,
        include_reads: true,
    }));
    {
        let conn = open(&disk, keyed.as_ref(), mode).expect("open");
        states.push(content(&conn).expect("content"));
        for step in STEPS {
            exec(&conn, step).expect("step");
            states.push(content(&conn).expect("content"));
        }
        conn.close().map_err(|(_, e)| e).expect("close");
    }
    let calls = disk.fault_ops();
    disk.inject(None);
    let stride = (calls / per_config.max(1)).max(1);
    let label = label(config);
    let mut at = 0;
    while at < calls {
        let code = CODES[(at / stride) as usize % CODES.len()];
        disk.restore(&start);
        disk.inject(Some(Fault {
            at,
            code,
            include_reads: true,
        }));
        let mut acknowledged = 0usize;
        let mut failed = false;
        match open(&disk, keyed.as_ref(), mode) {
            Err(e) => {
                // A fault while opening is an I/O error (or disk full), never "not a
                // database": the key check must not mistake a failed read for a wrong key.
                assert_ne!(
                    e.code & 0xff,
                    ffi::SQLITE_NOTADB,
                    "{label}: fault {at} at open gave NOTADB: {e}"
                );
                failed = true;
            }
            Ok(conn) => {
                for step in STEPS {
                    match exec(&conn, step) {
                        Ok(()) => acknowledged += 1,
                        Err(e) => {
                            assert_ne!(
                                e.code & 0xff,
                                ffi::SQLITE_NOTADB,
                                "{label}: fault {at}: {e}"
                            );
                            failed = true;
                            break;
                        }
                    }
                }
                // Close whatever state the connection is in (it may roll back).
                if let Err((conn, _)) = conn.close() {
                    drop(conn);
                }
            }
        }
        let injected = disk.faults_injected() > 0;
        disk.inject(None);
        // Reopen: consistent, one of the states, nothing acknowledged lost.
        let conn = open(&disk, keyed.as_ref(), mode)
            .unwrap_or_else(|e| panic!("{label}: reopen after fault {at} ({code}): {e}"));
        let integrity = rows(&conn, "PRAGMA integrity_check")
            .unwrap_or_else(|e| panic!("{label}: integrity after fault {at}: {e}"));
        assert_eq!(
            integrity, "ok|\n",
            "{label}: integrity after fault {at} ({code})"
        );
        let now = content(&conn).unwrap_or_else(|e| panic!("{label}: read after fault {at}: {e}"));
        // Exactly what was acknowledged, or (the failing step's commit may have reached
        // the disk before the error) the step after it: never less, never half of one.
        let acknowledged_state = &states[acknowledged.min(states.len() - 1)];
        assert!(
            *acknowledged_state == now || states.get(acknowledged + 1) == Some(&now),
            "{label}: fault {at} ({code}): {acknowledged} steps acknowledged, content is another state (failed: {failed}, injected: {injected})"
        );
        conn.close().map_err(|(_, e)| e).expect("close");
        assert!(injected, "{label}: fault {at} was never reached");
        *total += 1;
        *failing += u64::from(failed);
        at += stride;
    }
    drop(keyed);
}

#[test]
fn every_io_call_failing_in_turn_loses_nothing() {
    let per_config = std::env::var("CIPHERLITE_FAULT_POINTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150u64);
    let mut total = 0;
    let mut failing = 0;
    // synchronous OFF too: no sync then marks a commit's end, and the pages the VFS holds
    // back in rollback-journal mode must fail the step that needed them written.
    let filter = std::env::var("CIPHERLITE_FAULT_FILTER").unwrap_or_default();
    let mut configs: Vec<Config> = Vec::new();
    for journal_mode in ["delete", "truncate", "persist", "wal"] {
        for synchronous in ["FULL", "OFF"] {
            for format in [
                Some((NewFileLayout::Sqlite3mc, CipherScheme::SqlCipher4)),
                Some((NewFileLayout::SqlCipher, CipherScheme::SqlCipher4)),
                // AEGIS files have one page-1 layout (SQLite3 Multiple Ciphers').
                Some((NewFileLayout::Sqlite3mc, CipherScheme::Aegis256)),
                None,
            ] {
                configs.push(((journal_mode, synchronous), format));
            }
        }
    }
    let mut ran = 0;
    for config in configs.into_iter().filter(|c| label(*c).contains(&filter)) {
        run(config, per_config, &mut total, &mut failing);
        ran += 1;
    }
    eprintln!("fault sweep: {total} injected faults over {ran} configurations, {failing} of them made a step fail");
    assert!(total > 0 && failing > 0);
}

#[test]
fn a_read_error_while_the_key_is_checked_is_an_io_error() {
    for scheme in [CipherScheme::SqlCipher4, CipherScheme::Aegis256] {
        let disk = SimDisk::new(512, true);
        let key = [0x11u8; 32];
        let keyed = KeyedVfsHandle::register_with_scheme(
            &VfsKey::Raw(&key),
            scheme,
            NewFileLayout::Sqlite3mc,
            cipherlite_vfs::PAGE_SIZE,
            Some(disk.name()),
        )
        .expect("vfs");
        {
            let conn = open(&disk, Some(&keyed), ("delete", "FULL")).expect("open");
            exec(&conn, BASE).expect("base");
            conn.close().map_err(|(_, e)| e).expect("close");
        }
        // The first read at open is page 1, for the key check (after xOpen's own lookups).
        for at in 0..4 {
            disk.inject(Some(Fault {
                at,
                code: ffi::SQLITE_IOERR_READ,
                include_reads: true,
            }));
            let r = Connection::open(DB, OpenFlags::default(), Some(keyed.name()))
                .and_then(|c| rows(&c, "SELECT count(*) FROM t").map(|_| ()));
            if let Err(e) = r {
                assert_ne!(
                    e.code & 0xff,
                    ffi::SQLITE_NOTADB,
                    "{scheme:?}: fault {at}: {e}"
                );
            }
            disk.inject(None);
        }
    }
}
