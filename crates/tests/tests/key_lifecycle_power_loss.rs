//! Power-loss sweep of the key lifecycle: `rekey` and `encrypt` run on the simulated disk
//! of `common::sim_disk` (as a `key_lifecycle::fs::FileSystem`: the copy's writes and sync,
//! SQLite's own checkpoint and journal-mode change, the rename and the directory sync all
//! reach it), and power is lost before each of those calls in turn — keeping only what was
//! synced (and no unsynced rename), or a random subset of the unsynced writes torn at the
//! sector size and a random prefix of the unsynced renames. After each loss:
//! - the database file opens with exactly one of the two keys (for `encrypt`: as
//!   plaintext or with the key), `integrity_check` is ok, every page authenticates, and
//!   the content is all of it (nothing committed before the operation is lost);
//! - the operation run again from there succeeds (a stray copy left by the loss is no
//!   obstacle) and leaves no stray file beside the database.
//!
//! A second sweep fails each call of the operation in turn (an I/O error or a full disk,
//! reads included): the operation reports the error with its code (never success), and the
//! database opens with the old key (plaintext, for encrypt), whole, with no stray file —
//! or, when the operation reported success, with the new key.
//!
//! Configurations: the original in rollback-journal and WAL mode (with committed frames
//! not yet checkpointed), 4096- and 8192-byte pages, sectors of 512 (powersafe) and 4096
//! bytes, both page-1 layouts; and in rollback-journal mode, Windows' order (the
//! connection lets go of the file before the rename: `closes_before_rename`); and a rekey
//! from SQLCipher 4's format into AEGIS' (`to`: a logical copy). Size knob:
//! `CIPHERLITE_CRASH_POINTS` (crash points per
//! configuration and loss kind; default 12, `npm run test:crash` runs all of them).

mod common;

use cipherlite_core::key_lifecycle::{self, CipherScheme, RekeyOptions};
use cipherlite_sqlite::{ffi, Connection, OpenFlags};
use cipherlite_vfs::{KeyedVfsHandle, NewFileLayout, VfsKey};
use common::sim_disk::{Fault, Loss, SimDisk};
use common::sql::{content, exec, rows};

const DIR: &str = "/sim";
const DB: &str = "/sim/app.db";
const OLD_KEY: [u8; 32] = [0x11; 32];
const NEW_KEY: [u8; 32] = [0x22; 32];
const THIRD_KEY: [u8; 32] = [0x33; 32];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operation {
    Rekey,
    Encrypt,
}

#[derive(Debug, Clone, Copy)]
struct Config {
    op: Operation,
    wal: bool,
    page_size: usize,
    layout: NewFileLayout,
    sector: i32,
    powersafe: bool,
    /// Windows' order: the connection lets go of the file, then the rename.
    closes_before_rename: bool,
    /// The page format a rekey writes (the original is in SQLCipher 4's): AEGIS makes it a
    /// logical copy (`VACUUM INTO`) read from the file by a second, keyed connection.
    to: CipherScheme,
}

const CONTENT: &str = "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT); CREATE INDEX tb ON t(b);
  INSERT INTO t(b) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 90)
  SELECT printf('row-%04d-%0290d', i, i * 104729) FROM s;";
/// Committed after the rest; in WAL mode it stays in the WAL (no checkpoint).
const LAST: &str = "UPDATE t SET b = 'last-' || b WHERE a % 7 = 0; DELETE FROM t WHERE a % 11 = 0;";

/// The keyed VFSs of a configuration, over the simulated disk.
struct Vfss {
    old: KeyedVfsHandle,
    new: KeyedVfsHandle,
    third: KeyedVfsHandle,
}

/// The page format of the database under `key`: the original's (SQLCipher 4) under the
/// old key, the rekey's under the others.
fn scheme_of(key: &[u8; 32], c: &Config) -> CipherScheme {
    if *key == OLD_KEY {
        CipherScheme::SqlCipher4
    } else {
        c.to
    }
}

fn keyed(disk: &SimDisk, key: &[u8; 32], c: &Config) -> KeyedVfsHandle {
    KeyedVfsHandle::register_with_scheme(
        &VfsKey::Raw(key),
        scheme_of(key, c),
        c.layout,
        c.page_size,
        Some(disk.name()),
    )
    .expect("keyed VFS")
}

fn open(vfs: &std::ffi::CStr, keyed: bool, c: &Config) -> cipherlite_sqlite::Result<Connection> {
    let conn = Connection::open(DB, OpenFlags::default(), Some(vfs))?;
    if keyed {
        let mut reserve = cipherlite_vfs::RESERVE_BYTES;
        let _ = conn.file_control_int(
            c"main",
            cipherlite_sqlite::ffi::SQLITE_FCNTL_RESERVE_BYTES,
            &mut reserve,
        );
    }
    if keyed {
        // As `new Database(path, { key, pageSize })` does: the page size is known before
        // SQLite reads a header (page 1 on disk may be torn while its WAL copy is whole).
        exec(&conn, &format!("PRAGMA page_size = {}", c.page_size))?;
    }
    exec(
        &conn,
        "PRAGMA cache_size = 12; PRAGMA wal_autocheckpoint = 0",
    )?;
    Ok(conn)
}

/// Every page of the database file authenticates under `key`.
fn check_pages(disk: &SimDisk, key: &[u8; 32], c: &Config) -> Result<(), String> {
    let file = disk.file(DB).ok_or("no database file")?;
    if file.is_empty() {
        return Err("database size 0 is not a whole number of pages".into());
    }
    common::pages::authenticate_all_in(&file, key, scheme_of(key, c), c.page_size)
}

/// Which of `candidates` (a key and its VFS, or none and the plain VFS) the database
/// opens with, after checking that it is whole: integrity ok, the expected content, every
/// page authenticated. `Err` says why it opens with none (or with two).
fn opens_with(
    disk: &SimDisk,
    candidates: &[(Option<[u8; 32]>, &std::ffi::CStr)],
    c: &Config,
    expected: &str,
) -> Result<Option<[u8; 32]>, String> {
    let mut why = Vec::new();
    let mut found = None;
    for &(key, vfs) in candidates {
        let attempt = (|| -> Result<(), String> {
            let conn = open(vfs, key.is_some(), c).map_err(|e| e.to_string())?;
            let integrity = rows(&conn, "PRAGMA integrity_check").map_err(|e| e.to_string())?;
            if integrity != "ok|\n" {
                return Err(format!("integrity: {integrity}"));
            }
            let now = content(&conn).map_err(|e| e.to_string())?;
            if now != expected {
                return Err("content differs: something committed was lost".into());
            }
            drop(conn);
            if let Some(k) = &key {
                check_pages(disk, k, c)?;
            }
            Ok(())
        })();
        match attempt {
            Ok(()) if found.is_some() => return Err("opens with both keys".into()),
            Ok(()) => found = Some(key),
            Err(e) => why.push(format!(
                "{}: {e}",
                if key.is_some() { "keyed" } else { "plain" }
            )),
        }
    }
    found.ok_or_else(|| why.join("; "))
}

/// Runs the configuration's operation from the current disk state; `Err` when it failed
/// (as it does when power is lost midway).
fn run_op(
    disk: &SimDisk,
    vfss: &Vfss,
    c: &Config,
    from: Option<[u8; 32]>,
    to: &[u8; 32],
) -> Result<(), String> {
    match (c.op, from) {
        (Operation::Encrypt, None) => key_lifecycle::encrypt_file_on(
            disk,
            DB,
            (to, key_lifecycle::CipherScheme::SqlCipher4),
            c.layout,
            c.page_size,
            &mut |_, _| {},
        )
        .map_err(|e| e.to_string()),
        (_, Some(key)) => {
            let vfs = if key == OLD_KEY {
                &vfss.old
            } else if key == NEW_KEY {
                &vfss.new
            } else {
                &vfss.third
            };
            let conn = open(vfs.name(), true, c).map_err(|e| e.to_string())?;
            let options = RekeyOptions {
                layout: Some(c.layout),
                scheme: scheme_of(&key, c),
                new_scheme: Some(scheme_of(to, c)),
            };
            let result =
                key_lifecycle::rekey_connection_on(disk, &conn, &key, to, options, &mut |_, _| {})
                    .map_err(|e| e.to_string());
            drop(conn);
            result
        }
        (Operation::Rekey, None) => Err("a rekey needs a key".into()),
    }
}

fn strays(disk: &SimDisk) -> Vec<String> {
    disk.file_names()
        .into_iter()
        .filter(|n| {
            n.starts_with(DIR) && n.as_str() != DB && !n.ends_with("-wal") && !n.ends_with("-shm")
        })
        .collect()
}

/// A configuration's disk with the original database on it (synced), and what the
/// database holds.
struct Setup {
    disk: Box<SimDisk>,
    vfss: Vfss,
    start: std::collections::HashMap<String, Vec<u8>>,
    expected: String,
    source_key: Option<[u8; 32]>,
    label: String,
}

fn setup(c: &Config) -> Setup {
    let disk = SimDisk::new(c.sector, c.powersafe);
    disk.closes_before_rename
        .store(c.closes_before_rename, std::sync::atomic::Ordering::Relaxed);
    let vfss = Vfss {
        old: keyed(&disk, &OLD_KEY, c),
        new: keyed(&disk, &NEW_KEY, c),
        third: keyed(&disk, &THIRD_KEY, c),
    };
    let label = format!("{c:?}");
    // The original: plaintext for encrypt, under the old key for rekey; in WAL mode its
    // last transaction stays in the WAL.
    let source_key = (c.op == Operation::Rekey).then_some(OLD_KEY);
    let source_vfs = |vfss: &Vfss, disk: &SimDisk| -> std::ffi::CString {
        if source_key.is_some() {
            vfss.old.name().to_owned()
        } else {
            disk.name().to_owned()
        }
    };
    let start = {
        let conn = open(&source_vfs(&vfss, &disk), source_key.is_some(), c).expect("create");
        exec(&conn, &format!("PRAGMA page_size = {}", c.page_size)).expect("page size");
        exec(
            &conn,
            &format!(
                "PRAGMA journal_mode = {}",
                if c.wal { "WAL" } else { "DELETE" }
            ),
        )
        .expect("journal mode");
        exec(&conn, CONTENT).unwrap_or_else(|e| panic!("{label}: content: {e}"));
        exec(&conn, LAST).expect("last");
        // A WAL survives only if the close cannot checkpoint: the disk is captured while
        // the connection is open.
        disk.sync_all();
        let start = disk.snapshot();
        drop(conn);
        start
    };
    disk.restore(&start);
    let expected = {
        let conn = open(&source_vfs(&vfss, &disk), source_key.is_some(), c).expect("reopen");
        let e = content(&conn).expect("content");
        drop(conn);
        disk.restore(&start);
        e
    };
    if c.wal {
        assert!(
            disk.file(&format!("{DB}-wal"))
                .is_some_and(|w| w.len() > 32),
            "{label}: the original has committed frames in its WAL"
        );
    }
    Setup {
        disk,
        vfss,
        start,
        expected,
        source_key,
        label,
    }
}

fn run_config(c: Config, per_config: u64) -> u64 {
    let Setup {
        disk,
        vfss,
        start,
        expected,
        source_key,
        label,
    } = setup(&c);
    // A reference run: how many counted calls the operation makes.
    disk.reset_counters();
    run_op(&disk, &vfss, &c, source_key, &NEW_KEY).unwrap_or_else(|e| panic!("{label}: {e}"));
    let total = disk.ops();
    let before = if c.op == Operation::Encrypt {
        (None, disk.name())
    } else {
        (Some(OLD_KEY), vfss.old.name())
    };
    let either = [before, (Some(NEW_KEY), vfss.new.name())];
    assert_eq!(
        opens_with(&disk, &either, &c, &expected),
        Ok(Some(NEW_KEY)),
        "{label}"
    );
    assert_eq!(
        strays(&disk),
        Vec::<String>::new(),
        "{label}: no stray file"
    );

    let stride = (total / per_config.max(1)).max(1);
    let mut points = 0;
    for loss_kind in 0..2u64 {
        let mut at = loss_kind % stride;
        while at < total {
            let loss = if loss_kind == 0 {
                Loss::AllUnsynced
            } else {
                Loss::RandomTorn {
                    seed: at * 7919 + 13,
                }
            };
            disk.restore(&start);
            disk.lose_power_at(at, loss);
            let result = run_op(&disk, &vfss, &c, source_key, &NEW_KEY);
            if !disk.lost_power() {
                result.unwrap_or_else(|e| panic!("{label}: no loss at {at}, yet {e}"));
                break;
            }
            disk.recover();
            let key = opens_with(&disk, &either, &c, &expected).unwrap_or_else(|why| {
                panic!("{label}: after a power loss at call {at} of {total} ({loss:?}) the database opens with no key: {why}; files {:?}", disk.file_names())
            });
            // The operation again, from there (to a third key, or encrypting a
            // plaintext that survived): it succeeds and cleans up.
            let next = if key.is_none() { NEW_KEY } else { THIRD_KEY };
            run_op(
                &disk,
                &vfss,
                &Config {
                    op: if key.is_none() {
                        Operation::Encrypt
                    } else {
                        Operation::Rekey
                    },
                    ..c
                },
                key,
                &next,
            )
            .unwrap_or_else(|e| {
                panic!("{label}: the operation after a loss at {at} ({loss:?}): {e}")
            });
            let next_vfs = if next == NEW_KEY {
                &vfss.new
            } else {
                &vfss.third
            };
            let reopened = opens_with(&disk, &[(Some(next), next_vfs.name())], &c, &expected);
            assert_eq!(
                reopened,
                Ok(Some(next)),
                "{label}: after the repeat following a loss at {at}"
            );
            assert_eq!(
                strays(&disk),
                Vec::<String>::new(),
                "{label}: strays after the repeat (loss at {at})"
            );
            points += 1;
            at += stride;
        }
    }
    drop(vfss);
    drop(disk);
    points
}

fn configs() -> Vec<Config> {
    let mut out = Vec::new();
    for op in [Operation::Rekey, Operation::Encrypt] {
        for wal in [false, true] {
            for (page_size, layout) in [
                (4096, NewFileLayout::Sqlite3mc),
                (8192, NewFileLayout::SqlCipher),
            ] {
                for (sector, powersafe) in [(512, true), (4096, false)] {
                    out.push(Config {
                        op,
                        wal,
                        page_size,
                        layout,
                        sector,
                        powersafe,
                        closes_before_rename: false,
                        to: CipherScheme::SqlCipher4,
                    });
                }
            }
        }
        // Windows' order (the connection closes its handles, then the rename), in the
        // rollback-journal mode encrypted databases have there.
        for (sector, powersafe) in [(512, true), (4096, false)] {
            out.push(Config {
                op,
                wal: false,
                page_size: 4096,
                layout: NewFileLayout::Sqlite3mc,
                sector,
                powersafe,
                closes_before_rename: true,
                to: CipherScheme::SqlCipher4,
            });
        }
    }
    // A rekey into AEGIS' format: the copy streamed from the file by a second connection.
    for wal in [false, true] {
        for (sector, powersafe) in [(512, true), (4096, false)] {
            out.push(Config {
                op: Operation::Rekey,
                wal,
                page_size: 4096,
                layout: NewFileLayout::Sqlite3mc,
                sector,
                powersafe,
                closes_before_rename: false,
                to: CipherScheme::Aegis256,
            });
        }
    }
    out
}

/// Each call of the operation fails in turn; returns the number of faults injected.
fn fault_config(c: Config, per_config: u64) -> u64 {
    let Setup {
        disk,
        vfss,
        start,
        expected,
        source_key,
        label,
    } = setup(&c);
    let before = if c.op == Operation::Encrypt {
        (None, disk.name())
    } else {
        (Some(OLD_KEY), vfss.old.name())
    };
    let either = [before, (Some(NEW_KEY), vfss.new.name())];
    // Count the calls (reads included) with a fault that never fires.
    let never = Fault {
        at: u64::MAX,
        code: ffi::SQLITE_IOERR,
        include_reads: true,
    };
    disk.inject(Some(never));
    run_op(&disk, &vfss, &c, source_key, &NEW_KEY).unwrap_or_else(|e| panic!("{label}: {e}"));
    let total = disk.fault_ops();
    disk.inject(None);
    let stride = (total / per_config.max(1)).max(1);
    let mut faults = 0;
    for (k, code) in [ffi::SQLITE_IOERR, ffi::SQLITE_FULL]
        .into_iter()
        .enumerate()
    {
        let mut at = k as u64 % stride;
        while at < total {
            disk.restore(&start);
            disk.inject(Some(Fault {
                at,
                code,
                include_reads: true,
            }));
            let result = run_op(&disk, &vfss, &c, source_key, &NEW_KEY);
            let injected = disk.faults_injected() > 0;
            disk.inject(None);
            let files = disk.file_names();
            let opened = opens_with(&disk, &either, &c, &expected).unwrap_or_else(|why| {
                panic!("{label}: after a fault at call {at} ({code}) the database opens with no key: {why}; the operation said {result:?}; files {files:?}")
            });
            match result {
                Ok(()) => assert_eq!(
                    opened,
                    Some(NEW_KEY),
                    "{label}: fault at {at}: success reported, yet the database is not under the new key"
                ),
                Err(e) => {
                    assert!(injected, "{label}: failed without a fault at {at}: {e}");
                    assert_eq!(
                        opened, before.0,
                        "{label}: fault at {at} ({e}): an operation that failed changed the key"
                    );
                    // SQLite's VACUUM INTO words a failed size check of its (empty)
                    // target as "output file already exists": SQLite's message, kept.
                    let named = ["I/O", "disk", "full", "cannot", "unable", "output file already exists"]
                        .iter()
                        .any(|w| e.contains(w));
                    assert!(named, "{label}: fault at {at}: the error names no I/O problem: {e}");
                    // A failed operation gives the file its journal mode back, or says
                    // that it could not.
                    if c.wal {
                        let conn = open(before.1, before.0.is_some(), &c)
                            .unwrap_or_else(|why| panic!("{label}: fault at {at}: reopen: {why}"));
                        let mode = rows(&conn, "PRAGMA journal_mode").unwrap_or_default();
                        drop(conn);
                        assert!(
                            mode == "wal|\n" || e.contains("the journal mode could not be set back"),
                            "{label}: fault at {at} ({e}): left in journal mode {mode:?} without a word"
                        );
                    }
                }
            }
            assert_eq!(
                strays(&disk),
                Vec::<String>::new(),
                "{label}: strays after a fault at {at}"
            );
            faults += 1;
            at += stride;
        }
    }
    faults
}

/// Runs `run(config, points per configuration)` over every configuration whose `Debug`
/// text contains `CIPHERLITE_CRASH_FILTER`, with the points from the environment variable
/// `knob` (default 12); returns the points run in all and the number of configurations.
fn sweep(knob: &str, run: fn(Config, u64) -> u64) -> (u64, usize) {
    let per_config = std::env::var(knob)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12u64);
    let filter = std::env::var("CIPHERLITE_CRASH_FILTER").unwrap_or_default();
    let all = configs();
    let points = all
        .iter()
        .filter(|c| format!("{c:?}").contains(&filter))
        .map(|c| run(*c, per_config))
        .sum();
    (points, all.len())
}

#[test]
fn io_errors_during_rekey_and_encrypt_change_nothing_or_complete() {
    let (faults, configs) = sweep("CIPHERLITE_FAULT_POINTS", fault_config);
    eprintln!("key-lifecycle fault sweep: {faults} faults over {configs} configurations");
    assert!(faults > 0);
}

#[test]
fn power_loss_during_rekey_and_encrypt_leaves_one_whole_database() {
    let (points, configs) = sweep("CIPHERLITE_CRASH_POINTS", run_config);
    eprintln!(
        "key-lifecycle power-loss sweep: {points} crash points over {configs} configurations"
    );
    assert!(points > 0);
}
