//! Power-loss sweep: a workload of transactions runs on the simulated disk of
//! `common::sim_disk` (below the encrypting VFS, or alone for plain databases), and power is
//! lost before each of its writes, syncs, truncates and deletes in turn — keeping only what
//! was synced, or a random subset of the unsynced writes torn at the sector size — and the
//! process is killed there in turn (everything handed to the OS kept, nothing after). After
//! each loss the database is reopened: `integrity_check` is ok, every page of an encrypted
//! file authenticates, and the content is exactly one of the states between transactions,
//! never a half-applied one, and never older than the last transaction acknowledged while
//! SQLite promises durability (`synchronous = FULL`, or any setting when only the process
//! died).
//!
//! Configurations: journal modes DELETE, TRUNCATE, PERSIST and WAL (with a checkpoint and a
//! WAL restart in the workload), normal and EXCLUSIVE locking, synchronous FULL (and
//! NORMAL in WAL, where losing acknowledged commits is allowed), encrypted (both page-1
//! layouts) and plain, sectors of 512 and 4096 bytes, with and without powersafe overwrite.
//! Rollback-journal modes run with FULL only: SQLite itself promises nothing to NORMAL there.
//! And synchronous OFF in every journal mode, with killed processes only: the VFS may hold
//! a write back in memory, and must hand it over before SQLite's commit point (a journal
//! deleted, truncated or zeroed, a super-journal deleted), which no sync marks there.
//!
//! Size knob: `CIPHERLITE_CRASH_POINTS` (crash points per configuration and loss kind;
//! default 12, `npm run test:crash` runs all of them). The total is printed.

mod common;

use cipherlite_codec::{read_salt, CipherScheme, PageCodec};
use cipherlite_sqlite::{Connection, OpenFlags};
use cipherlite_vfs::{KeyedVfsHandle, NewFileLayout, VfsKey};
use common::sim_disk::{Loss, SimDisk};
use common::sql::{content, exec, rows};

const PAGE: usize = 4096;
const DB: &str = "/sim/test.db";

#[derive(Debug, Clone, Copy)]
struct Config {
    journal_mode: &'static str,
    exclusive: bool,
    synchronous: &'static str,
    layout: Option<NewFileLayout>,
    sector: i32,
    powersafe: bool,
    /// The encrypted database's page size.
    page_size: usize,
    /// The encrypted database's page format.
    scheme: CipherScheme,
}

/// The connection to the simulated disk, through the encrypting VFS when keyed.
struct Opened {
    conn: Connection,
}

fn open(disk: &SimDisk, keyed: Option<&KeyedVfsHandle>) -> cipherlite_sqlite::Result<Opened> {
    let vfs = keyed.map_or(disk.name(), |k| k.name());
    let conn = Connection::open(DB, OpenFlags::default(), Some(vfs))?;
    if let Some(keyed) = keyed {
        let mut reserve = keyed.scheme().reserve() as std::ffi::c_int;
        let _ = conn.file_control_int(
            c"main",
            cipherlite_sqlite::ffi::SQLITE_FCNTL_RESERVE_BYTES,
            &mut reserve,
        );
    }
    Ok(Opened { conn })
}

fn setup_sql(c: &Config) -> String {
    let mut sql = String::new();
    if c.exclusive {
        sql.push_str("PRAGMA locking_mode = EXCLUSIVE;");
    }
    sql.push_str(&format!(
        "PRAGMA page_size = {}; PRAGMA journal_mode = {}; PRAGMA synchronous = {}; PRAGMA cache_size = 12; PRAGMA wal_autocheckpoint = 0;",
        c.page_size, c.journal_mode, c.synchronous
    ));
    sql
}

/// The transactions of the workload (each one `exec`), after the setup.
fn workload(c: &Config) -> Vec<String> {
    let mut steps = vec![
        // Grows the database, and spills pages mid-transaction (cache of 12 pages).
        "BEGIN; INSERT INTO t(b) SELECT printf('two-%04d-%0290d', a, a * 7919) FROM t; UPDATE t SET b = 'upd-' || b WHERE a % 3 = 0; COMMIT;".to_owned(),
        // Shrinks it: deletes and an index drop free pages.
        "BEGIN; DELETE FROM t WHERE a % 4 = 1; DROP INDEX IF EXISTS tb; COMMIT;".to_owned(),
    ];
    if c.journal_mode == "wal" {
        // Copies the WAL into the database; the next write restarts the WAL.
        steps.push("PRAGMA wal_checkpoint(TRUNCATE);".to_owned());
        steps.push("BEGIN; INSERT INTO t(b) VALUES ('after-restart'); UPDATE t SET b = b || '+' WHERE a < 40; COMMIT;".to_owned());
    }
    steps
}

const BASE: &str = "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT); CREATE INDEX tb ON t(b);
  INSERT INTO t(b) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 120)
  SELECT printf('base-%04d-%0290d', i, i * 104729) FROM s;";

/// Every page of the encrypted database file authenticates.
fn check_pages(disk: &SimDisk, key: &[u8; 32], c: &Config) -> Result<(), String> {
    match disk.file(DB) {
        Some(file) if !file.is_empty() => {
            common::pages::authenticate_all_in(&file, key, c.scheme, c.page_size)
        }
        _ => Ok(()),
    }
}

struct Sweep {
    points: u64,
    per_config: u64,
}

fn run_config(c: Config, sweep: &mut Sweep) {
    let disk = SimDisk::new(c.sector, c.powersafe);
    let key = [0x42u8; 32];
    let keyed = c.layout.map(|layout| {
        KeyedVfsHandle::register_with_scheme(
            &VfsKey::Raw(&key),
            c.scheme,
            layout,
            c.page_size,
            Some(disk.name()),
        )
        .expect("keyed VFS")
    });
    // Set up and record the states between the workload's transactions.
    let steps = workload(&c);
    let mut states = Vec::new();
    {
        let db = open(&disk, keyed.as_ref()).expect("open");
        exec(&db.conn, &setup_sql(&c)).expect("setup");
        exec(&db.conn, BASE).unwrap_or_else(|e| panic!("{c:?}: base: {e}"));
        if c.journal_mode == "wal" {
            exec(&db.conn, "PRAGMA wal_checkpoint(TRUNCATE);").expect("checkpoint");
        }
        drop(db);
    }
    disk.sync_all();
    let start = disk.snapshot();
    // A reference run: the calls of each step, and the content after it.
    let mut calls = 0;
    {
        let db = open(&disk, keyed.as_ref()).expect("open");
        exec(&db.conn, &setup_sql(&c)).expect("setup");
        states.push(content(&db.conn).expect("content"));
        disk.reset_counters();
        for step in &steps {
            exec(&db.conn, step).unwrap_or_else(|e| panic!("{c:?}: step {step}: {e}"));
            states.push(content(&db.conn).expect("content"));
        }
        calls = calls.max(disk.ops());
        drop(db);
    }
    // Distinct states only count once (a checkpoint changes nothing).
    let total = calls;
    let stride = if sweep.per_config >= total {
        1
    } else {
        (total / sweep.per_config).max(1)
    };
    let label = format!("{c:?}");
    // At synchronous = OFF SQLite promises nothing against power loss, only against the
    // process dying.
    let loss_kinds: &[u64] = if c.synchronous == "OFF" {
        &[2]
    } else {
        &[0, 1, 2]
    };
    for &loss_kind in loss_kinds {
        let mut at = loss_kind % stride.max(1);
        while at < total {
            let loss = match loss_kind {
                0 => Loss::AllUnsynced,
                1 => Loss::RandomTorn {
                    seed: at * 7919 + 13,
                },
                _ => Loss::ProcessKilled,
            };
            disk.restore(&start);
            let mut acknowledged = 0usize;
            {
                let db = open(&disk, keyed.as_ref()).expect("open before the loss");
                exec(&db.conn, &setup_sql(&c)).expect("setup");
                disk.lose_power_at(at, loss);
                for step in &steps {
                    if exec(&db.conn, step).is_err() {
                        break;
                    }
                    acknowledged += 1;
                }
                drop(db);
            }
            if !disk.lost_power() {
                break; // past the workload's last call
            }
            disk.recover();
            // Reopen and check.
            let db = open(&disk, keyed.as_ref()).unwrap_or_else(|e| {
                let pages = check_pages(&disk, &key, &c);
                let sizes: Vec<(String, usize)> =
                    disk.file_names().into_iter().map(|n| { let l = disk.file(&n).map_or(0, |f| f.len()); (n, l) }).collect();
                let mut wal_info = Vec::new();
                if let Some(w) = disk.file(&format!("{DB}-wal")) {
                    for (i, fr) in w.get(32..).unwrap_or(&[]).chunks(24 + PAGE).enumerate() {
                        if fr.len() < 24 + PAGE { break; }
                        let pgno = u32::from_be_bytes([fr[0], fr[1], fr[2], fr[3]]);
                        if pgno == 1 {
                            let img = &fr[24..];
                            let ok = read_salt(img).ok().and_then(|salt| PageCodec::new(&key, salt, PAGE).ok()).map(|c| c.detect_page1_layout(img).is_ok());
                            wal_info.push((i + 1, ok, fr[8..16].to_vec()));
                        }
                    }
                    wal_info.push((0, None, w[16..24].to_vec()));
                }
                panic!("{label}: reopen after loss at {at} ({loss:?}): {e}; pages: {pages:?}; files: {sizes:?}; wal page-1 frames: {wal_info:?}")
            });
            exec(&db.conn, &setup_sql(&c))
                .unwrap_or_else(|e| panic!("{label}: setup after loss at {at}: {e}"));
            let integrity = rows(&db.conn, "PRAGMA integrity_check").unwrap_or_else(|e| {
                panic!("{label}: integrity_check after loss at {at} ({loss:?}): {e}")
            });
            assert_eq!(
                integrity, "ok|\n",
                "{label}: integrity after loss at {at} ({loss:?})"
            );
            let now = content(&db.conn)
                .unwrap_or_else(|e| panic!("{label}: read after loss at {at}: {e}"));
            let found = states.iter().position(|s| *s == now);
            let Some(state) = found else {
                panic!("{label}: after loss at {at} ({loss:?}) the content is none of the states between transactions");
            };
            // Durability: with synchronous=FULL, or when only the process died, nothing
            // acknowledged is lost (a state equal to a later one, as after a checkpoint,
            // counts as that one).
            let durable = c.synchronous == "FULL" || loss == Loss::ProcessKilled;
            let newest_equal = states.iter().rposition(|s| *s == now).unwrap_or(state);
            if durable {
                assert!(
                    newest_equal >= acknowledged,
                    "{label}: loss at {at} ({loss:?}) lost acknowledged transactions: state {newest_equal} < {acknowledged}"
                );
            }
            assert!(
                state <= acknowledged + 1,
                "{label}: a state from the future"
            );
            drop(db);
            if let Some(_k) = &keyed {
                check_pages(&disk, &key, &c)
                    .unwrap_or_else(|e| panic!("{label}: loss at {at} ({loss:?}): {e}"));
            }
            sweep.points += 1;
            at += stride;
        }
    }
    drop(keyed);
    drop(disk);
}

fn configs() -> Vec<Config> {
    let mut out = Vec::new();
    for journal_mode in ["delete", "truncate", "persist", "wal"] {
        for exclusive in [false, true] {
            let syncs: &[&str] = if journal_mode == "wal" {
                &["FULL", "NORMAL", "OFF"]
            } else {
                &["FULL", "OFF"]
            };
            for &synchronous in syncs {
                if synchronous == "OFF" {
                    // Only killed processes (nothing torn): one device, each layout.
                    for layout in [
                        Some(NewFileLayout::Sqlite3mc),
                        Some(NewFileLayout::SqlCipher),
                        None,
                    ] {
                        out.push(Config {
                            journal_mode,
                            exclusive,
                            synchronous,
                            layout,
                            sector: 4096,
                            powersafe: true,
                            page_size: PAGE,
                            scheme: CipherScheme::SqlCipher4,
                        });
                    }
                    continue;
                }
                for layout in [
                    Some(NewFileLayout::Sqlite3mc),
                    Some(NewFileLayout::SqlCipher),
                    None,
                ] {
                    for (sector, powersafe) in
                        [(512, true), (4096, false), (4096, true), (512, false)]
                    {
                        out.push(Config {
                            journal_mode,
                            exclusive,
                            synchronous,
                            layout,
                            sector,
                            powersafe,
                            page_size: PAGE,
                            scheme: CipherScheme::SqlCipher4,
                        });
                    }
                    // Other page sizes (SQLCipher's cipher_page_size): the geometry rules
                    // per size, on the common device.
                    if layout == Some(NewFileLayout::Sqlite3mc) && !exclusive {
                        for page_size in [1024, 65536] {
                            out.push(Config {
                                journal_mode,
                                exclusive,
                                synchronous,
                                layout,
                                sector: 512,
                                powersafe: true,
                                page_size,
                                scheme: CipherScheme::SqlCipher4,
                            });
                        }
                    }
                }
            }
        }
    }
    // SQLite3 Multiple Ciphers' AEGIS-256 format (`cipher: 'aegis'`): each journal mode with
    // full syncs, on a device that tears sectors and on the common one.
    for journal_mode in ["delete", "truncate", "persist", "wal"] {
        for (sector, powersafe) in [(4096, false), (512, true)] {
            out.push(Config {
                journal_mode,
                exclusive: false,
                synchronous: "FULL",
                layout: Some(NewFileLayout::Sqlite3mc),
                sector,
                powersafe,
                page_size: PAGE,
                scheme: CipherScheme::Aegis256,
            });
        }
    }
    out
}

#[test]
fn power_loss_at_every_write_and_sync_keeps_the_database_whole() {
    let per_config = std::env::var("CIPHERLITE_CRASH_POINTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12u64);
    let mut sweep = Sweep {
        points: 0,
        per_config,
    };
    let all = configs();
    let filter = std::env::var("CIPHERLITE_CRASH_FILTER").unwrap_or_default();
    for c in all.iter().filter(|c| format!("{c:?}").contains(&filter)) {
        run_config(*c, &mut sweep);
    }
    eprintln!(
        "power-loss sweep: {} crash points over {} configurations",
        sweep.points,
        all.len()
    );
    assert!(sweep.points > 0);
}
