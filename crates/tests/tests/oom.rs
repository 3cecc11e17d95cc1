//! Out-of-memory sweep: SQLite's allocator is replaced (`SQLITE_CONFIG_MALLOC`) by one that
//! fails the N-th allocation from a point on, for each N in turn, while an encrypted
//! database is opened and written through the keyed VFS on the simulated disk. Each time
//! the caller sees an error (`SQLITE_NOMEM` where the allocation failed; never success
//! for work that isn't there), the process survives, and after the allocator is healthy
//! again the database reopens with `integrity_check` ok, one of the states between steps,
//! and nothing acknowledged lost.
//!
//! Configurations: DELETE and WAL journal modes; SQLCipher 4's format in both page-1
//! layouts, and SQLite3 Multiple Ciphers' AEGIS-256 format (docs/aegis-format.md).
//!
//! Size knob: `CIPHERLITE_OOM_POINTS` (allocations failed per configuration; default 150);
//! `CIPHERLITE_OOM_FILTER` runs only the configurations whose label (`wal Sqlite3mc
//! Aegis256`) contains it. This binary holds one test: SQLite's allocator is global to
//! the process.

mod common;

use cipherlite_codec::CipherScheme;
use cipherlite_sqlite::{ffi, Connection, OpenFlags};
use cipherlite_vfs::{KeyedVfsHandle, NewFileLayout, VfsKey};
use common::sim_disk::SimDisk;
use common::sql::exec;
use sha2::{Digest, Sha256};
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

static mut DEFAULT: ffi::sqlite3_mem_methods = ffi::sqlite3_mem_methods {
    xMalloc: None,
    xFree: None,
    xRealloc: None,
    xSize: None,
    xRoundup: None,
    xInit: None,
    xShutdown: None,
    pAppData: std::ptr::null_mut(),
};
/// Allocations left before one fails (negative: never).
static COUNTDOWN: AtomicI64 = AtomicI64::new(-1);
static FAILED: AtomicBool = AtomicBool::new(false);

fn should_fail() -> bool {
    let left = COUNTDOWN.load(Ordering::SeqCst);
    if left < 0 {
        return false;
    }
    if left == 0 {
        // Fail this one and every one after it, until disarmed (a persistent OOM).
        FAILED.store(true, Ordering::SeqCst);
        return true;
    }
    COUNTDOWN.store(left - 1, Ordering::SeqCst);
    false
}

fn defaults() -> &'static ffi::sqlite3_mem_methods {
    // SAFETY: written once in main before any allocation goes through the wrappers.
    unsafe { &*std::ptr::addr_of!(DEFAULT) }
}

unsafe extern "C" fn x_malloc(n: c_int) -> *mut c_void {
    if should_fail() {
        return std::ptr::null_mut();
    }
    // SAFETY: forwarding to SQLite's own allocator.
    unsafe { defaults().xMalloc.expect("malloc")(n) }
}
unsafe extern "C" fn x_free(p: *mut c_void) {
    // SAFETY: forwarding.
    unsafe { defaults().xFree.expect("free")(p) }
}
unsafe extern "C" fn x_realloc(p: *mut c_void, n: c_int) -> *mut c_void {
    if should_fail() {
        return std::ptr::null_mut();
    }
    // SAFETY: forwarding.
    unsafe { defaults().xRealloc.expect("realloc")(p, n) }
}
unsafe extern "C" fn x_size(p: *mut c_void) -> c_int {
    // SAFETY: forwarding.
    unsafe { defaults().xSize.expect("size")(p) }
}
unsafe extern "C" fn x_roundup(n: c_int) -> c_int {
    // SAFETY: forwarding.
    unsafe { defaults().xRoundup.expect("roundup")(n) }
}
unsafe extern "C" fn x_init(p: *mut c_void) -> c_int {
    // SAFETY: forwarding.
    unsafe { defaults().xInit.map_or(ffi::SQLITE_OK, |f| f(p)) }
}
unsafe extern "C" fn x_shutdown(p: *mut c_void) {
    // SAFETY: forwarding.
    unsafe {
        if let Some(f) = defaults().xShutdown {
            f(p)
        }
    }
}

fn install_failing_allocator() {
    // SAFETY: before any other SQLite use in this binary (one test); shutdown first in case
    // something initialised it; the statics are written before the wrappers run.
    unsafe {
        ffi::sqlite3_shutdown();
        let rc = ffi::sqlite3_config(
            ffi::SQLITE_CONFIG_GETMALLOC,
            std::ptr::addr_of_mut!(DEFAULT),
        );
        assert_eq!(rc, ffi::SQLITE_OK);
        let wrapped = ffi::sqlite3_mem_methods {
            xMalloc: Some(x_malloc),
            xFree: Some(x_free),
            xRealloc: Some(x_realloc),
            xSize: Some(x_size),
            xRoundup: Some(x_roundup),
            xInit: Some(x_init),
            xShutdown: Some(x_shutdown),
            pAppData: defaults().pAppData,
        };
        let rc = ffi::sqlite3_config(
            ffi::SQLITE_CONFIG_MALLOC,
            &wrapped as *const ffi::sqlite3_mem_methods,
        );
        assert_eq!(rc, ffi::SQLITE_OK);
        assert_eq!(ffi::sqlite3_initialize(), ffi::SQLITE_OK);
    }
}

const DB: &str = "/sim/oom.db";

fn content(conn: &Connection) -> cipherlite_sqlite::Result<String> {
    let (stmt, _) = conn.prepare("SELECT a, b FROM t ORDER BY a", false)?;
    let mut stmt = stmt.expect("a statement");
    let mut h = Sha256::new();
    while stmt.step()? {
        h.update(stmt.column_int64(0).to_le_bytes());
        h.update(stmt.column_text(1));
    }
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

fn integrity(conn: &Connection) -> cipherlite_sqlite::Result<String> {
    let (stmt, _) = conn.prepare("PRAGMA integrity_check", false)?;
    let mut stmt = stmt.expect("a statement");
    stmt.step()?;
    Ok(String::from_utf8_lossy(stmt.column_text(0)).into_owned())
}

fn open(
    disk: &SimDisk,
    keyed: &KeyedVfsHandle,
    mode: &str,
) -> cipherlite_sqlite::Result<Connection> {
    let conn = Connection::open(DB, OpenFlags::default(), Some(keyed.name()))?;
    let mut reserve = keyed.scheme().reserve() as c_int;
    let _ = conn.file_control_int(c"main", ffi::SQLITE_FCNTL_RESERVE_BYTES, &mut reserve);
    let _ = disk;
    exec(
        &conn,
        &format!(
            "PRAGMA journal_mode = {mode}; PRAGMA cache_size = 10; PRAGMA wal_autocheckpoint = 0;"
        ),
    )?;
    Ok(conn)
}

const STEPS: &[&str] = &[
    "BEGIN; INSERT INTO t(b) SELECT printf('x-%04d-%0200d', a, a * 3) FROM t; COMMIT;",
    "BEGIN; UPDATE t SET b = 'u' || b WHERE a % 2 = 0; ROLLBACK;",
    "DELETE FROM t WHERE a % 7 = 0;",
    "PRAGMA wal_checkpoint(TRUNCATE);",
];

#[test]
fn every_allocation_failing_in_turn_loses_nothing() {
    install_failing_allocator();
    let per_config = std::env::var("CIPHERLITE_OOM_POINTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150i64);
    let mut total = 0;
    let mut nomem = 0;
    let filter = std::env::var("CIPHERLITE_OOM_FILTER").unwrap_or_default();
    for mode in ["delete", "wal"] {
        for (layout, scheme) in [
            (NewFileLayout::Sqlite3mc, CipherScheme::SqlCipher4),
            (NewFileLayout::SqlCipher, CipherScheme::SqlCipher4),
            // AEGIS files have one page-1 layout (SQLite3 Multiple Ciphers').
            (NewFileLayout::Sqlite3mc, CipherScheme::Aegis256),
        ] {
            let label = format!("{mode} {layout:?} {scheme:?}");
            if !label.contains(&filter) {
                continue;
            }
            let disk = SimDisk::new(512, true);
            let key = [0x77u8; 32];
            let keyed = KeyedVfsHandle::register_with_scheme(
                &VfsKey::Raw(&key),
                scheme,
                layout,
                cipherlite_vfs::PAGE_SIZE,
                Some(disk.name()),
            )
            .expect("vfs");
            {
                let conn = open(&disk, &keyed, mode).expect("open");
                exec(&conn, "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT); INSERT INTO t(b) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 60) SELECT printf('b-%0200d', i) FROM s; PRAGMA wal_checkpoint(TRUNCATE);").expect("base");
                conn.close().map_err(|(_, e)| e).expect("close");
            }
            disk.sync_all();
            let start = disk.snapshot();
            // Reference: states, and the number of allocations of the workload.
            let mut states = Vec::new();
            COUNTDOWN.store(i64::MAX, Ordering::SeqCst);
            {
                let conn = open(&disk, &keyed, mode).expect("open");
                states.push(content(&conn).expect("content"));
                for step in STEPS {
                    exec(&conn, step).expect("step");
                    states.push(content(&conn).expect("content"));
                }
                conn.close().map_err(|(_, e)| e).expect("close");
            }
            let allocations = i64::MAX - COUNTDOWN.swap(-1, Ordering::SeqCst);
            let stride = (allocations / per_config).max(1);
            let mut n = 0;
            while n < allocations {
                disk.restore(&start);
                FAILED.store(false, Ordering::SeqCst);
                COUNTDOWN.store(n, Ordering::SeqCst);
                let mut acknowledged = 0;
                let mut saw_nomem = false;
                match open(&disk, &keyed, mode) {
                    Ok(conn) => {
                        for step in STEPS {
                            match exec(&conn, step) {
                                Ok(()) => acknowledged += 1,
                                Err(e) => {
                                    saw_nomem |= e.code == ffi::SQLITE_NOMEM;
                                    break;
                                }
                            }
                        }
                        COUNTDOWN.store(-1, Ordering::SeqCst);
                        if let Err((conn, _)) = conn.close() {
                            drop(conn);
                        }
                    }
                    Err(e) => saw_nomem |= e.code == ffi::SQLITE_NOMEM,
                }
                COUNTDOWN.store(-1, Ordering::SeqCst);
                let conn = open(&disk, &keyed, mode)
                    .unwrap_or_else(|e| panic!("{label}: reopen after allocation {n} failed: {e}"));
                assert_eq!(
                    integrity(&conn).expect("integrity"),
                    "ok",
                    "{label}: allocation {n}"
                );
                let now = content(&conn).expect("content");
                assert!(
                    states[acknowledged.min(states.len() - 1)] == now || states.get(acknowledged + 1) == Some(&now),
                    "{label}: allocation {n}: {acknowledged} steps acknowledged, content is another state"
                );
                conn.close().map_err(|(_, e)| e).expect("close");
                total += 1;
                nomem += u64::from(saw_nomem && FAILED.load(Ordering::SeqCst));
                n += stride;
            }
        }
    }
    eprintln!("out-of-memory sweep: {total} failed allocations, {nomem} reported SQLITE_NOMEM");
    assert!(nomem > 0);
}
