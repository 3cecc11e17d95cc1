//! Codec failures: the page encryption of the VFS fails (as if the random source or the
//! cipher failed) at each page of a transaction in turn, in DELETE mode (synchronous FULL
//! and OFF) and WAL mode. The transaction reports an error, and after reopening the
//! database holds exactly the data from before it, intact. Needs
//! `--features fault-injection`.

mod common;

use cipherlite_sqlite::{Connection, OpenFlags};
use cipherlite_vfs::{fault_injection, KeyedVfsHandle, NewFileLayout};
use common::sim_disk::SimDisk;
use common::sql::exec;
use sha2::{Digest, Sha256};

const DB: &str = "/sim/codec.db";

fn scalar(conn: &Connection, sql: &str) -> String {
    let (stmt, _) = conn.prepare(sql, false).expect("prepare");
    let mut stmt = stmt.expect("a statement");
    let mut h = Sha256::new();
    while stmt.step().expect("step") {
        for i in 0..stmt.column_count() {
            h.update(stmt.column_text(i));
            h.update(b"|");
        }
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn open(keyed: &KeyedVfsHandle, mode: (&str, &str)) -> Connection {
    open_at(keyed, DB, mode)
}

/// The database at `path` through `keyed`, in journal mode `mode` at synchronous
/// `synchronous`.
fn open_at(keyed: &KeyedVfsHandle, path: &str, (mode, synchronous): (&str, &str)) -> Connection {
    let conn = Connection::open(path, OpenFlags::default(), Some(keyed.name())).expect("open");
    let mut reserve = cipherlite_vfs::RESERVE_BYTES;
    let _ = conn.file_control_int(
        c"main",
        cipherlite_sqlite::ffi::SQLITE_FCNTL_RESERVE_BYTES,
        &mut reserve,
    );
    exec(
        &conn,
        &format!(
            "PRAGMA journal_mode = {mode}; PRAGMA synchronous = {synchronous}; PRAGMA cache_size = 10; PRAGMA wal_autocheckpoint = 0;"
        ),
    )
    .expect("pragmas");
    conn
}

/// The tests here share the process-wide fault switch: one at a time.
static SWITCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn a_failed_page_encryption_leaves_the_old_data_intact() {
    let _switch = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    let mut points = 0;
    // At synchronous = OFF no sync follows the pages of a rollback-mode commit, which the
    // VFS encrypts together once SQLite's next call comes (see `main_db::HeldPages`).
    for mode in [("delete", "FULL"), ("delete", "OFF"), ("wal", "FULL")] {
        let disk = SimDisk::new(512, true);
        let keyed =
            KeyedVfsHandle::register_over(&[9u8; 32], NewFileLayout::Sqlite3mc, Some(disk.name()))
                .expect("vfs");
        {
            let conn = open(&keyed, mode);
            exec(&conn, "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT); INSERT INTO t(b) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 100) SELECT printf('%0300d', i) FROM s; PRAGMA wal_checkpoint(TRUNCATE);").expect("base");
            conn.close().map_err(|(_, e)| e).expect("close");
        }
        disk.sync_all();
        let start = disk.snapshot();
        let before = {
            let conn = open(&keyed, mode);
            scalar(&conn, "SELECT * FROM t ORDER BY a")
        };
        let tx = "BEGIN; UPDATE t SET b = 'new-' || b; INSERT INTO t(b) SELECT b FROM t; COMMIT;";
        // How many pages the transaction encrypts: fail each in turn.
        for n in 0..400 {
            disk.restore(&start);
            let conn = open(&keyed, mode);
            fault_injection::fail_encryption_after(n);
            let result = exec(&conn, tx);
            fault_injection::fail_encryption_after(-1);
            if result.is_ok() {
                break; // n is past the transaction's last page
            }
            if let Err((conn, _)) = conn.close() {
                drop(conn);
            }
            let conn = open(&keyed, mode);
            assert_eq!(
                scalar(&conn, "PRAGMA integrity_check"),
                scalar(&conn, "SELECT 'ok'"),
                "{mode:?}: failure at page {n}"
            );
            assert_eq!(
                scalar(&conn, "SELECT * FROM t ORDER BY a"),
                before,
                "{mode:?}: failure at page {n} changed the data"
            );
            conn.close().map_err(|(_, e)| e).expect("close");
            points += 1;
        }
    }
    eprintln!("codec failure sweep: {points} failed page encryptions");
    assert!(points > 20);
}

/// Pages a rollback-mode commit held back that can't be encrypted stay held (in exclusive
/// locking mode nothing gives them up until the connection closes): that fails the calls of
/// their own database, not another database's on the same thread, which goes on reading.
/// The failed transaction is gone once the fault is over and the database reopened.
#[test]
fn pages_held_back_that_cannot_be_written_fail_only_their_own_database() {
    let _switch = SWITCH.lock().unwrap_or_else(|e| e.into_inner());
    let disk = SimDisk::new(512, true);
    let keyed =
        KeyedVfsHandle::register_over(&[7u8; 32], NewFileLayout::SqlCipher, Some(disk.name()))
            .expect("vfs");
    let open_at = |path: &str| open_at(&keyed, path, ("delete", "OFF"));
    let base = "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT); INSERT INTO t(b) WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 100) SELECT printf('%0300d', i) FROM s;";
    let other = open_at("/sim/other.db");
    exec(&other, base).expect("other base");
    let held = open_at(DB);
    exec(&held, base).expect("base");
    exec(&held, "PRAGMA locking_mode = EXCLUSIVE;").expect("exclusive");
    let before = scalar(&held, "SELECT * FROM t ORDER BY a");
    let other_rows = scalar(&other, "SELECT * FROM t ORDER BY a");

    fault_injection::fail_encryption_after(0);
    let failed = exec(&held, "BEGIN; UPDATE t SET b = 'new-' || b; COMMIT;");
    assert!(
        failed.is_err(),
        "the commit whose pages can't be encrypted fails"
    );
    // The same thread's other database: reads (and its locks) go on.
    let (stmt, _) = other
        .prepare("SELECT * FROM t ORDER BY a", false)
        .expect("another database's statement prepares");
    let mut stmt = stmt.expect("a statement");
    let mut n = 0;
    while stmt.step().expect("another database reads on") {
        n += 1;
    }
    assert_eq!(n, 100);
    drop(stmt);
    fault_injection::fail_encryption_after(-1);

    if let Err((conn, _)) = held.close() {
        drop(conn);
    }
    let held = open_at(DB);
    assert_eq!(
        scalar(&held, "PRAGMA integrity_check"),
        scalar(&held, "SELECT 'ok'")
    );
    assert_eq!(
        scalar(&held, "SELECT * FROM t ORDER BY a"),
        before,
        "the failed commit is gone"
    );
    assert_eq!(scalar(&other, "SELECT * FROM t ORDER BY a"), other_rows);
}
