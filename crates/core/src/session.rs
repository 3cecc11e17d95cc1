//! A connection's life after it opened, with no napi: the [`Session`] owns the SQLite
//! connection, the VFS its files go through, the key, the statements and backups made from
//! it and the functions registered on it, and decides what happens to all of them on
//! `close()` and `rekey()`. The Node bridge holds one per `Database` and converts
//! arguments; everything it would otherwise decide is here, tested in Rust.

use crate::connection_policy::{
    self as policy,
    state::{statement_busy, ConnectionState, Refusal},
    BackupDestination, BackupKey, CipherLayout, DatabaseVfs, OpenedDatabase, RunningBackup,
};
use crate::key_lifecycle::{self, Progress, RekeyOptions};
use cipherlite_codec::CipherScheme;
use cipherlite_sqlite::{self as sqlite, Connection, Statement};
use std::{
    cell::RefCell,
    fmt::Display,
    rc::{Rc, Weak},
};
use zeroize::Zeroizing;

/// Connection settings a reopened connection gets back (all are per connection, not
/// stored in the file). `journal_mode` and `locking_mode` come first: the rest may
/// depend on them.
pub const CARRIED_PRAGMAS: &[&str] = &[
    "main.journal_mode",
    "main.locking_mode",
    "main.synchronous",
    "main.cache_size",
    "main.journal_size_limit",
    "main.mmap_size",
    "main.secure_delete",
    "foreign_keys",
    "recursive_triggers",
    "automatic_index",
    "cell_size_check",
    "query_only",
    "trusted_schema",
    "wal_autocheckpoint",
    "cache_spill",
    "ignore_check_constraints",
    "reverse_unordered_selects",
    "legacy_alter_table",
    "checkpoint_fullfsync",
    "fullfsync",
    "analysis_limit",
    "threads",
];

/// The busy timeout a reopened connection gets when the old one's can't be read:
/// better-sqlite3's default `timeout` option (lib/database.js sets it on every open).
pub const DEFAULT_BUSY_TIMEOUT_MS: u32 = 5000;

/// Registers one user function (or virtual-table module, or extension) on a connection;
/// `E` is the caller's error type (a JS exception for the bridge).
pub type Registration<E> = Rc<dyn Fn(&Connection) -> Result<(), E>>;

/// What the connection a rekey replaces had that the new one must have too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReopenPlan {
    /// The main database's file name.
    pub filename: String,
    /// The page size (the rekeyed copy has the same).
    pub page_size: usize,
    /// `PRAGMA busy_timeout`, in milliseconds.
    pub busy_timeout: u32,
    /// Each carried pragma that has a value, with it ([`CARRIED_PRAGMAS`] order).
    pub settings: Vec<(String, String)>,
}

impl ReopenPlan {
    /// Reads the plan from `conn`, or refuses (a usage error naming what would be lost)
    /// when the connection has state a reopen cannot carry: attached databases, or
    /// temporary tables, views or triggers.
    pub fn read(conn: &Connection) -> policy::Result<ReopenPlan> {
        if !conn.attached_databases().is_empty() {
            return Err(policy::Error::Usage(
                "Cannot rekey while other databases are attached (DETACH them first)".into(),
            ));
        }
        let temp = conn
            .query_text("SELECT count(*) FROM temp.sqlite_schema")?
            .unwrap_or_default();
        if temp != "0" {
            return Err(policy::Error::Usage(
                "Cannot rekey while temporary tables, views or triggers exist (they would be lost)"
                    .into(),
            ));
        }
        let busy_timeout = conn
            .query_text("PRAGMA busy_timeout")?
            .and_then(|t| t.parse::<i64>().ok())
            .map_or(DEFAULT_BUSY_TIMEOUT_MS, |t| {
                t.clamp(0, u32::MAX.into()) as u32
            });
        let page_size = conn
            .query_text("PRAGMA main.page_size")?
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(policy::DEFAULT_PAGE_SIZE);
        let settings = CARRIED_PRAGMAS
            .iter()
            .filter_map(|name| {
                let value = conn.query_text(&format!("PRAGMA {name}")).ok()??;
                // Values are numbers or single words; anything else is not carried.
                value
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-')
                    .then(|| (name.to_string(), value))
            })
            .collect();
        Ok(ReopenPlan {
            filename: conn.db_filename(c"main").unwrap_or_default(),
            page_size,
            busy_timeout,
            settings,
        })
    }
}

/// The error a rekey ends with when the file was rekeyed but the connection could not be
/// opened on it again (`why`): the connection is closed, the data is safe under the new key.
pub fn reopen_failed(why: &str) -> sqlite::Error {
    sqlite::Error::new(
        sqlite::ffi::SQLITE_CANTOPEN,
        format!("the database was rekeyed, but reopening it failed ({why}); the connection is closed: open it again with the new key"),
    )
}

/// An open (or closed) database connection and everything that lives as long as it.
pub struct Session<E> {
    conn: RefCell<Option<Connection>>,
    /// Busy, binding, iterators, unsafe mode, the safe-integers default, JS callbacks:
    /// the state its rules are checked on (`connection_policy::state`).
    state: ConnectionState,
    statements: RefCell<Vec<Weak<RefCell<Statement>>>>,
    /// Backups still running, aborted when the connection closes.
    backups: RefCell<Vec<Weak<RefCell<RunningBackup>>>>,
    /// The VFS the connection's files go through (unregistered after it closes).
    vfs: RefCell<DatabaseVfs>,
    /// The key of an encrypted database, for `verify()` (which authenticates raw pages)
    /// and `rekey()`; wiped on drop. The VFS keeps its own copy.
    key: RefCell<Option<Zeroizing<[u8; 32]>>>,
    /// Every function, aggregate, virtual-table module and extension registered on the
    /// connection, to register again on the connection `rekey()` reopens. Keyed by what
    /// SQLite replaces on re-registration (a function's name and arity, a module's name),
    /// so registering again replaces instead of piling up.
    registrations: RefCell<Vec<(String, Registration<E>)>>,
}

impl<E> Session<E>
where
    E: From<sqlite::Error> + From<Refusal> + From<policy::Error> + Display,
{
    /// A session on a connection that just opened: idle, no statement, no registration.
    /// `key` is the raw key of an encrypted database (`None` for a passphrase or no key).
    pub fn new(opened: OpenedDatabase, key: Option<Zeroizing<[u8; 32]>>) -> Session<E> {
        Session {
            conn: RefCell::new(Some(opened.conn)),
            state: ConnectionState::default(),
            statements: RefCell::new(Vec::new()),
            backups: RefCell::new(Vec::new()),
            vfs: RefCell::new(opened.vfs),
            key: RefCell::new(key),
            registrations: RefCell::new(Vec::new()),
        }
    }

    /// The connection's state and its rules.
    pub fn state(&self) -> &ConnectionState {
        &self.state
    }

    pub fn is_open(&self) -> bool {
        self.conn.borrow().is_some()
    }

    pub fn in_transaction(&self) -> bool {
        self.conn
            .borrow()
            .as_ref()
            .is_some_and(|c| !c.is_autocommit())
    }

    /// Runs `f` with the open connection, or fails with better-sqlite3's TypeError.
    pub fn with_conn<T>(&self, f: impl FnOnce(&Connection) -> Result<T, E>) -> Result<T, E> {
        let conn = self.conn.borrow();
        match conn.as_ref() {
            Some(c) => f(c),
            None => Err(Refusal::NotOpen.into()),
        }
    }

    /// `unsafeMode(on)`: also switches SQLite's defensive mode (off while unsafe).
    pub fn set_unsafe_mode(&self, on: bool) -> Result<(), E> {
        self.state.set_unsafe_mode(on);
        if let Some(c) = self.conn.borrow().as_ref() {
            policy::set_unsafe_mode(c, on)?;
        }
        Ok(())
    }

    /// After a statement ran: a database ATTACHed to an encrypted connection is
    /// encrypted with the same key, so a new (empty) one needs SQLCipher's 80 reserved
    /// bytes per page before anything is written to it.
    pub fn after_statement(&self) {
        let Some(reserve) = self.vfs.borrow().reserve_bytes() else {
            return;
        };
        if let Some(conn) = self.conn.borrow().as_ref() {
            policy::reserve_new_attached_databases(conn, reserve);
        }
    }

    pub fn register_statement(&self, stmt: &Rc<RefCell<Statement>>) {
        let mut list = self.statements.borrow_mut();
        if list.len() >= 64 && list.len().is_power_of_two() {
            list.retain(|w| w.strong_count() > 0);
        }
        list.push(Rc::downgrade(stmt));
    }

    pub fn register_backup(&self, slot: Weak<RefCell<RunningBackup>>) {
        let mut list = self.backups.borrow_mut();
        list.retain(|w| w.strong_count() > 0);
        list.push(slot);
    }

    pub fn remember_registration(&self, key: String, r: Registration<E>) {
        let mut list = self.registrations.borrow_mut();
        list.retain(|(k, _)| *k != key);
        list.push((key, r));
    }

    /// An encrypted connection's page format and page size; `None` for a plaintext one.
    pub fn format(&self) -> Option<(CipherScheme, usize)> {
        let vfs = self.vfs.borrow();
        Some((vfs.scheme()?, vfs.encrypted_page_size()?))
    }

    /// Where a backup of this database is written, for the key it is to have.
    pub fn backup_destination(&self, key: BackupKey<'_>) -> Result<BackupDestination, E> {
        Ok(BackupDestination::choose(&self.vfs.borrow(), key)?)
    }

    /// The AES key of an encrypted database's file (a copy, wiped when dropped): the raw
    /// key, or the key a passphrase derives for this file's salt.
    pub fn key(&self) -> Option<Zeroizing<[u8; 32]>> {
        if let Some(key) = self.key.borrow().clone() {
            return Some(key);
        }
        let path = self.conn.borrow().as_ref()?.db_filename(c"main")?;
        self.vfs.borrow().key_for_database(&path)
    }

    /// Refuses (better-sqlite3's busy TypeError) to close while anything uses the
    /// connection: a query running, parameters being bound, or a statement borrowed by
    /// a call in progress. Checked before anything is torn down, so a refused close
    /// leaves the database open and usable, and an accepted one finalizes everything.
    pub fn require_closable(&self) -> Result<(), E> {
        let statement_in_use = || {
            self.statements
                .borrow()
                .iter()
                .filter_map(Weak::upgrade)
                .any(|s| s.try_borrow_mut().is_err())
        };
        Ok(self.state.require_closable(statement_in_use)?)
    }

    /// What replacing the connection's file needs (`what` names the call in the message):
    /// idle, no transaction open, no backup of this connection running.
    pub fn require_replaceable(&self, what: &'static str) -> Result<(), E> {
        let backup_running = self
            .backups
            .borrow()
            .iter()
            .filter_map(Weak::upgrade)
            .any(|slot| slot.try_borrow().map_or(true, |b| b.is_running()));
        Ok(self.state.require_replaceable(
            self.is_open(),
            self.in_transaction(),
            backup_running,
            what,
        )?)
    }

    /// The checks `rekey()` makes before it looks at its arguments: the connection may be
    /// replaced and is encrypted. Returns the key the file has now.
    pub fn require_rekeyable(&self) -> Result<Zeroizing<[u8; 32]>, E> {
        self.require_replaceable("rekey")?;
        self.key().ok_or_else(|| {
            policy::Error::Usage(
                "Cannot rekey a database that is not encrypted (use Database.encrypt() on its file)"
                    .into(),
            )
            .into()
        })
    }

    /// `rekey()`: re-encrypts the database file under `new_key` (crash-safe, in
    /// `key_lifecycle`), then opens the connection again on it with every setting,
    /// registration and statement carried over. Should the reopen fail, the rekey itself
    /// stands (it is durable) and the connection is closed: [`reopen_failed`].
    pub fn rekey(
        &self,
        old_key: &[u8; 32],
        new_key: Zeroizing<[u8; 32]>,
        (layout, new_scheme): (Option<CipherLayout>, Option<CipherScheme>),
        progress: Progress<'_>,
    ) -> Result<(), E> {
        let scheme = self.vfs.borrow().scheme().unwrap_or_default();
        let plan = self.with_conn(|conn| {
            key_lifecycle::refuse_if_replaced(conn, "rekey").map_err(|e| e.into_sqlite())?;
            Ok(ReopenPlan::read(conn)?)
        })?;
        let options = RekeyOptions {
            layout,
            scheme,
            new_scheme,
        };
        let was_busy = self.state.enter_busy();
        let result = self.with_conn(|conn| {
            Ok(
                key_lifecycle::rekey_connection(conn, old_key, &new_key, options, progress)
                    .map_err(|e| (e.into_sqlite(), key_lifecycle::connection_released(conn))),
            )
        });
        self.state.restore_busy(was_busy);
        match result? {
            Ok(()) => {}
            // Windows: the connection let go of its file for the rename, which was then
            // refused; the file is unchanged, and opened again with the old key.
            Err((e, true)) => return Err(self.reopen_unchanged(&plan, old_key, scheme, e)),
            Err((e, false)) => return Err(e.into()),
        }
        let reopened = policy::reopen_rekeyed(
            &plan.filename,
            (&new_key, new_scheme.unwrap_or(scheme)),
            layout.unwrap_or(CipherLayout::Sqlite3mc),
            plan.page_size,
            plan.busy_timeout,
        )
        .map_err(E::from)
        .and_then(|opened| self.reopen(opened, new_key, &plan.settings));
        if let Err(e) = reopened {
            let _ = self.close();
            return Err(reopen_failed(&e.to_string()).into());
        }
        Ok(())
    }

    /// After a rekey refused once the connection had let go of its file (Windows: another
    /// process had it open): opens the unchanged file again with `old_key`, everything
    /// carried over as after a rekey, and returns `why`; should that fail, the connection
    /// is closed and the error says so.
    fn reopen_unchanged(
        &self,
        plan: &ReopenPlan,
        old_key: &[u8; 32],
        scheme: CipherScheme,
        why: sqlite::Error,
    ) -> E {
        let reopened = policy::reopen_rekeyed(
            &plan.filename,
            (old_key, scheme),
            CipherLayout::Sqlite3mc,
            plan.page_size,
            plan.busy_timeout,
        )
        .map_err(E::from)
        .and_then(|opened| self.reopen(opened, Zeroizing::new(*old_key), &plan.settings));
        match reopened {
            Ok(()) => why.into(),
            Err(e) => {
                let _ = self.close();
                sqlite::Error::new(
                    why.code,
                    format!("{}; and opening it again failed ({e}); the connection is closed: open it again with the old key", why.message),
                )
                .into()
            }
        }
    }

    /// `backup(destination, { key, cipher })` when the pages are rebuilt: a plaintext
    /// database under a key, or an encrypted one into the other page format (`cipher`;
    /// `None` keeps the source's, SQLCipher 4 for a plaintext source). The copy is made in
    /// the source's page size (4096 for a plaintext source), read from the file through
    /// this connection's own VFS ([`key_lifecycle::backup_encrypted`]).
    /// The page format and page size of a rebuilt backup (`backup_rebuilt`) into the format
    /// `cipher` names: the source's when `None`, SQLCipher 4 for a plaintext source; the
    /// source's page size (4096 for a plaintext source).
    pub fn rebuilt_backup_format(&self, cipher: Option<CipherScheme>) -> (CipherScheme, usize) {
        match self.format() {
            Some((source_scheme, page_size)) => (cipher.unwrap_or(source_scheme), page_size),
            None => (cipher.unwrap_or_default(), policy::DEFAULT_PAGE_SIZE),
        }
    }

    pub fn backup_rebuilt(
        &self,
        (schema, destination): (&str, &str),
        (key, cipher): (&[u8; 32], Option<CipherScheme>),
        progress: key_lifecycle::BackupProgress<'_>,
    ) -> Result<key_lifecycle::RebuiltCopy, E> {
        let vfs = self.vfs.borrow();
        let (scheme, page_size) = self.rebuilt_backup_format(cipher);
        self.with_conn(|conn| {
            key_lifecycle::backup_encrypted(
                conn,
                schema,
                destination,
                (key, scheme),
                (page_size, vfs.keyed()),
                progress,
            )
            .map_err(|e| E::from(e.into_sqlite()))
        })
    }

    /// `verify()`: authenticates every page and committed WAL frame of the main database
    /// with its key, in its file's page format, and runs `integrity_check`.
    pub fn verify(&self) -> Result<key_lifecycle::VerifyReport, E> {
        let key = self.key();
        let scheme = self.vfs.borrow().scheme().unwrap_or_default();
        self.with_conn(|conn| {
            key_lifecycle::verify_connection_in(conn, key.as_deref(), scheme)
                .map_err(|e| E::from(e.into_sqlite()))
        })
    }

    /// Replaces the connection by `opened` (the same database file, opened again through
    /// a new keyed VFS after a rekey, and configured): sets it up as the old one was,
    /// registers every function and module again, moves every live statement over (with
    /// its bindings), then closes the old connection and unregisters the old VFS. On error
    /// the old connection stays.
    pub fn reopen(
        &self,
        opened: OpenedDatabase,
        key: Zeroizing<[u8; 32]>,
        settings: &[(String, String)],
    ) -> Result<(), E> {
        let conn = &opened.conn;
        if self.state.unsafe_mode() {
            policy::set_unsafe_mode(conn, true)?;
        }
        for (name, value) in settings {
            conn.execute_batch(&format!("PRAGMA {name} = {value}"))?;
        }
        for (_, register) in self.registrations.borrow().iter() {
            register(conn)?;
        }
        let statements: Vec<_> = {
            let mut list = self.statements.borrow_mut();
            list.retain(|w| w.strong_count() > 0);
            list.iter().filter_map(Weak::upgrade).collect()
        };
        for stmt in &statements {
            let mut stmt = stmt.try_borrow_mut().map_err(|_| statement_busy())?;
            conn.adopt(&mut stmt)?;
        }
        let old = self.conn.borrow_mut().replace(opened.conn);
        let old_vfs = std::mem::replace(&mut *self.vfs.borrow_mut(), opened.vfs);
        // Its statements were finalized by adopt, and no backup reads from it (rekey
        // is refused while one runs), so it closes. Should it not, the handle and the
        // VFS it still uses are leaked together rather than the VFS freed under it.
        match old.map(Connection::close) {
            Some(Err((conn, _))) => {
                std::mem::forget(conn);
                std::mem::forget(old_vfs);
            }
            _ => drop(old_vfs),
        }
        *self.key.borrow_mut() = Some(key);
        Ok(())
    }

    /// Aborts every running backup, finalizes every statement, forgets the key and the
    /// registrations, closes the connection and unregisters its VFS (idempotent).
    pub fn close(&self) -> Result<(), E> {
        Ok(self.close_connection()?)
    }
}

impl<E> Session<E> {
    /// [`Session::close`]'s work, which `Drop` does too (without the bounds on `E`).
    fn close_connection(&self) -> Result<(), sqlite::Error> {
        let Some(conn) = self.conn.borrow_mut().take() else {
            return Ok(());
        };
        for slot in self.backups.borrow_mut().drain(..) {
            if let Some(slot) = slot.upgrade() {
                if let Ok(mut s) = slot.try_borrow_mut() {
                    s.close();
                }
            }
        }
        for stmt in self.statements.borrow_mut().drain(..) {
            if let Some(stmt) = stmt.upgrade() {
                if let Ok(mut s) = stmt.try_borrow_mut() {
                    s.finalize();
                }
            }
        }
        self.state.closed();
        *self.key.borrow_mut() = None;
        self.registrations.borrow_mut().clear();
        let closed = conn.close();
        let vfs = std::mem::replace(&mut *self.vfs.borrow_mut(), DatabaseVfs::Default);
        match closed {
            // No file is open through the VFS any more: unregister it, wiping the key.
            Ok(()) => {
                vfs.release();
                Ok(())
            }
            Err((conn, err)) => {
                // Should not happen (every statement is finalized); the handle is leaked
                // rather than closed under SQLite's feet, and the VFS stays registered.
                std::mem::forget(conn);
                std::mem::forget(vfs);
                Err(err)
            }
        }
    }
}

impl<E> Drop for Session<E> {
    fn drop(&mut self) {
        // The bridge closes first, to report an error; a session dropped open closes the
        // same way.
        let _ = self.close_connection();
    }
}

#[cfg(test)]
mod tests {
    //! The connection's life without Node: close in order, rekey's refusals and what a
    //! rekeyed connection keeps (settings, registrations, statements with their bindings).

    use super::*;
    use crate::connection_policy::{open, OpenRequest, Source};
    use crate::test_support::Dir;
    use cipherlite_sqlite::{
        ffi,
        function::{self as function, FunctionFlags, Value},
        OpenFlags,
    };

    /// The error a test session reports: what the bridge's JS exception carries.
    #[derive(Debug)]
    enum TestError {
        Usage(String),
        Sqlite(sqlite::Error),
        Refused(String),
    }
    impl From<sqlite::Error> for TestError {
        fn from(e: sqlite::Error) -> Self {
            TestError::Sqlite(e)
        }
    }
    impl From<Refusal> for TestError {
        fn from(r: Refusal) -> Self {
            TestError::Refused(r.message())
        }
    }
    impl From<policy::Error> for TestError {
        fn from(e: policy::Error) -> Self {
            match e {
                policy::Error::Usage(m) => TestError::Usage(m),
                policy::Error::Sqlite(e) => TestError::Sqlite(e),
            }
        }
    }
    impl Display for TestError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            match self {
                TestError::Usage(m) | TestError::Refused(m) => f.write_str(m),
                TestError::Sqlite(e) => f.write_str(&e.message),
            }
        }
    }

    const KEY_A: [u8; 32] = [0x5a; 32];
    const KEY_B: [u8; 32] = [0xb5; 32];

    fn session(path: &str, key: Option<&[u8; 32]>) -> Session<TestError> {
        let request = OpenRequest {
            filename: path,
            flags: OpenFlags::default(),
            source: Source::Path,
            key,
            passphrase: None,
            kdf_iterations: None,
            argon2: Default::default(),
            page_size: None,
            layout: CipherLayout::Sqlite3mc,
            cipher: cipherlite_vfs::CipherScheme::SqlCipher4,
            busy_timeout: 5000,
            plaintext_journal_checksums: false,
        };
        let opened = open(&request).unwrap_or_else(|e| panic!("open failed: {e:?}"));
        Session::new(opened, key.map(|k| Zeroizing::new(*k)))
    }

    fn text(s: &Session<TestError>, sql: &str) -> String {
        s.with_conn(|c| Ok(c.query_text(sql)?))
            .expect("query")
            .unwrap_or_default()
    }

    fn exec(s: &Session<TestError>, sql: &str) {
        s.with_conn(|c| Ok(c.execute_batch(sql)?)).expect(sql);
    }

    fn prepare(s: &Session<TestError>, sql: &str) -> Rc<RefCell<Statement>> {
        let stmt = s
            .with_conn(|c| Ok(c.prepare(sql, true)?.0))
            .expect("prepare")
            .expect("a statement");
        let stmt = Rc::new(RefCell::new(stmt));
        s.register_statement(&stmt);
        stmt
    }

    fn usage_message(r: Result<(), TestError>) -> String {
        match r {
            Err(TestError::Usage(m)) => m,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn close_finalizes_every_statement_forgets_the_key_and_is_idempotent() {
        let dir = Dir::new("session-close");
        let s = session(&dir.file("c.db"), Some(&KEY_A));
        exec(&s, "CREATE TABLE t(x); INSERT INTO t VALUES (1)");
        let stmt = prepare(&s, "SELECT x FROM t");
        assert!(s.key().is_some());
        s.close().expect("close");
        assert!(!s.is_open());
        assert!(s.key().is_none(), "the key is forgotten on close");
        assert!(
            stmt.borrow_mut().step().is_err(),
            "a statement of a closed connection is finalized"
        );
        s.close().expect("a second close does nothing");
        assert!(matches!(
            s.with_conn(|_| Ok(())),
            Err(TestError::Refused(m)) if m == "The database connection is not open"
        ));
    }

    #[test]
    fn close_is_refused_while_a_statement_is_borrowed_and_leaves_the_connection_usable() {
        let dir = Dir::new("session-busy");
        let s = session(&dir.file("b.db"), None);
        let stmt = prepare(&s, "SELECT 1");
        let borrowed = stmt.borrow_mut();
        assert!(matches!(s.require_closable(), Err(TestError::Refused(_))));
        drop(borrowed);
        s.require_closable()
            .expect("closable once the statement is free");
        assert_eq!(text(&s, "SELECT 2"), "2");
    }

    #[test]
    fn rekey_is_refused_on_a_plaintext_database_and_with_temporary_or_attached_state() {
        let dir = Dir::new("session-refused");
        let plain = session(&dir.file("p.db"), None);
        assert!(usage_message(plain.require_rekeyable().map(drop)).contains("not encrypted"));

        let s = session(&dir.file("k.db"), Some(&KEY_A));
        exec(&s, "CREATE TABLE t(x); INSERT INTO t VALUES (1)");
        exec(&s, "CREATE TEMP TABLE scratch(y)");
        let old = s
            .require_rekeyable()
            .expect("an encrypted, idle connection");
        let m = usage_message(s.rekey(&old, Zeroizing::new(KEY_B), (None, None), &mut |_, _| {}));
        assert!(m.contains("temporary tables"), "{m}");
        exec(&s, "DROP TABLE temp.scratch");
        exec(&s, &format!("ATTACH '{}' AS other", dir.file("o.db")));
        let m = usage_message(s.rekey(&old, Zeroizing::new(KEY_B), (None, None), &mut |_, _| {}));
        assert!(m.contains("attached"), "{m}");
        exec(&s, "DETACH other");
        // Refused means untouched: the file still opens with the old key.
        assert_eq!(s.key().as_deref(), Some(&KEY_A));
        assert_eq!(text(&s, "SELECT x FROM t"), "1");

        exec(&s, "BEGIN");
        assert!(matches!(
            s.require_rekeyable(),
            Err(TestError::Refused(m)) if m.contains("transaction")
        ));
    }

    #[test]
    fn a_rekeyed_connection_keeps_its_settings_functions_and_statements() {
        let dir = Dir::new("session-rekey");
        let path = dir.file("r.db");
        let s = session(&path, Some(&KEY_A));
        exec(
            &s,
            "PRAGMA journal_mode = WAL; PRAGMA cache_size = -1234; PRAGMA busy_timeout = 777",
        );
        exec(&s, "CREATE TABLE t(x); INSERT INTO t VALUES (1), (2), (3)");
        let register: Registration<TestError> = Rc::new(|c: &Connection| {
            Ok(function::create_scalar(
                c,
                "twice",
                1,
                FunctionFlags::default(),
                |ctx, args| ctx.set_result(Value::Integer(args[0].int64() * 2)),
            )?)
        });
        s.with_conn(|c| register(c)).expect("register");
        s.remember_registration("twice/1".into(), register);
        let stmt = prepare(&s, "SELECT twice(x) FROM t WHERE x = ?");
        stmt.borrow_mut().bind_int64(1, 3).expect("bind");

        let old = s.require_rekeyable().expect("rekeyable");
        let mut reports = 0;
        s.rekey(&old, Zeroizing::new(KEY_B), (None, None), &mut |_, _| {
            reports += 1
        })
        .expect("rekey");
        assert!(reports > 0, "progress is reported");
        assert_eq!(s.key().as_deref(), Some(&KEY_B));
        assert_eq!(text(&s, "PRAGMA journal_mode"), "wal");
        assert_eq!(text(&s, "PRAGMA cache_size"), "-1234");
        assert_eq!(text(&s, "PRAGMA busy_timeout"), "777");
        assert_eq!(
            text(&s, "SELECT twice(21)"),
            "42",
            "functions are registered again"
        );
        let mut stmt = stmt.borrow_mut();
        assert!(
            stmt.step().expect("step"),
            "the statement moved with its binding"
        );
        assert_eq!(stmt.column_int64(0), 6);
        drop(stmt);
        s.close().expect("close");

        // The file now opens with the new key only.
        let again = session(&path, Some(&KEY_B));
        assert_eq!(text(&again, "SELECT count(*) FROM t"), "3");
        let request = OpenRequest {
            filename: &path,
            flags: OpenFlags::default(),
            source: Source::Path,
            key: Some(&KEY_A),
            passphrase: None,
            kdf_iterations: None,
            argon2: Default::default(),
            page_size: None,
            layout: CipherLayout::Sqlite3mc,
            cipher: cipherlite_vfs::CipherScheme::SqlCipher4,
            busy_timeout: 0,
            plaintext_journal_checksums: false,
        };
        match open(&request) {
            Err(policy::Error::Sqlite(e)) => assert_eq!(e.code & 0xff, ffi::SQLITE_NOTADB),
            Err(e) => panic!("expected SQLITE_NOTADB, got {e:?}"),
            Ok(_) => panic!("the old key still opens the rekeyed file"),
        }
    }

    #[test]
    fn a_failed_reopen_closes_the_connection_and_says_the_rekey_stands() {
        let dir = Dir::new("session-reopen-fails");
        let path = dir.file("f.db");
        let s = session(&path, Some(&KEY_A));
        exec(&s, "CREATE TABLE t(x); INSERT INTO t VALUES (1)");
        let failing: Registration<TestError> = Rc::new(|_: &Connection| {
            Err(TestError::Usage("the function would not register".into()))
        });
        s.remember_registration("f/0".into(), failing);
        let old = s.require_rekeyable().expect("rekeyable");
        match s.rekey(&old, Zeroizing::new(KEY_B), (None, None), &mut |_, _| {}) {
            Err(TestError::Sqlite(e)) => {
                assert_eq!(e.code, ffi::SQLITE_CANTOPEN);
                assert!(
                    e.message.contains("the function would not register"),
                    "{}",
                    e.message
                );
                assert!(
                    e.message.contains("open it again with the new key"),
                    "{}",
                    e.message
                );
            }
            other => panic!("expected SQLITE_CANTOPEN, got {other:?}"),
        }
        assert!(!s.is_open(), "the connection is closed");
        let again = session(&path, Some(&KEY_B));
        assert_eq!(text(&again, "SELECT x FROM t"), "1", "the rekey stands");
    }

    #[test]
    fn the_reopen_plan_reads_the_carried_settings_in_order() {
        let dir = Dir::new("session-plan");
        let s = session(&dir.file("plan.db"), Some(&KEY_A));
        exec(&s, "PRAGMA foreign_keys = OFF; PRAGMA busy_timeout = 0");
        let plan = s.with_conn(|c| Ok(ReopenPlan::read(c)?)).expect("plan");
        assert_eq!(plan.busy_timeout, 0);
        assert_eq!(plan.page_size, policy::DEFAULT_PAGE_SIZE);
        assert!(plan.filename.ends_with("plan.db"));
        let names: Vec<&str> = plan.settings.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(&names[..2], ["main.journal_mode", "main.locking_mode"]);
        assert!(plan.settings.contains(&("foreign_keys".into(), "0".into())));
        assert!(names.iter().all(|n| CARRIED_PRAGMAS.contains(n)));
    }
}
