//! The state rules of better-sqlite3's API on one connection (docs/better-sqlite3-behaviour.md
//! §12): which calls a connection refuses while a query runs, while iterators are open,
//! while parameters are being bound, or once it is closed — the checks better-sqlite3
//! makes with its `REQUIRE_*` macros, each with its message. The bridge keeps one
//! [`ConnectionState`] per database (`binding/state.rs`) and asks it before every call;
//! no JS is needed to test the rules.

use std::cell::Cell;

/// Why a call is refused. Each is a `TypeError` in JS with [`message`](Refusal::message),
/// except [`TooManyIterators`](Refusal::TooManyIterators), a `RangeError`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The connection is closed.
    NotOpen,
    /// A query is running (the call comes from user code SQLite is running), an iterator
    /// is open where none may be, or parameters are being bound.
    DatabaseBusy,
    /// The statement is in use by a call in progress, or locked by its own iterator.
    StatementBusy,
    /// better-sqlite3's limit of open iterators per connection.
    TooManyIterators,
    /// `get`/`all`/`iterate` of a statement that returns no data.
    NoData,
    /// A method (`pluck`, `expand`, `raw`, `columns`) only for statements that return data.
    OnlyForData(&'static str),
    /// An operation (`rekey`) that needs no transaction open.
    InTransaction(&'static str),
    /// An operation (`rekey`) that replaces the connection (and the VFS its files go
    /// through) while a backup still reads from it through SQLite's backup object.
    BackupRunning(&'static str),
}

impl Refusal {
    pub fn message(&self) -> String {
        match self {
            Refusal::NotOpen => "The database connection is not open".into(),
            Refusal::DatabaseBusy => "This database connection is busy executing a query".into(),
            Refusal::StatementBusy => "This statement is busy executing a query".into(),
            Refusal::TooManyIterators => "Too many active database iterators".into(),
            Refusal::NoData => "This statement does not return data. Use run() instead".into(),
            Refusal::OnlyForData(method) => {
                format!("The {method}() method is only for statements that return data")
            }
            Refusal::InTransaction(what) => {
                format!("Cannot {what} a database while a transaction is open")
            }
            Refusal::BackupRunning(what) => {
                format!("Cannot {what} a database while a backup of it is running (await the backup first)")
            }
        }
    }

    /// True for the one refusal that is a `RangeError` (the rest are `TypeError`s).
    pub fn is_range_error(&self) -> bool {
        matches!(self, Refusal::TooManyIterators)
    }
}

pub type Checked = Result<(), Refusal>;

/// better-sqlite3's limit of iterators open at once on one connection.
const MAX_ITERATORS: u32 = u16::MAX as u32;

/// One connection's state, as its calls change it. Single-threaded (the JS thread that
/// owns the connection), so plain cells.
#[derive(Debug, Default)]
pub struct ConnectionState {
    /// Running SQL for a call from JS: user code that runs meanwhile may not re-enter.
    busy: Cell<bool>,
    /// Statements binding parameters right now: binding runs user code (getters,
    /// `valueOf`…), which may run other queries but not close the connection under them.
    binding: Cell<u32>,
    /// Iterators open on the connection.
    iterators: Cell<u32>,
    unsafe_mode: Cell<bool>,
    /// `defaultSafeIntegers()`: what new statements start with.
    default_safe_integers: Cell<bool>,
    /// Set once a JS function, aggregate, table or logger is registered: user code may
    /// then run while SQLite steps.
    js_callbacks: Cell<bool>,
}

impl ConnectionState {
    /// `open`: whether the connection is open (the bridge owns the connection).
    pub fn require_open(&self, open: bool) -> Checked {
        if open {
            Ok(())
        } else {
            Err(Refusal::NotOpen)
        }
    }

    pub fn require_not_busy(&self) -> Checked {
        if self.busy.get() {
            Err(Refusal::DatabaseBusy)
        } else {
            Ok(())
        }
    }

    pub fn require_no_iterators(&self) -> Checked {
        if self.iterators.get() > 0 {
            Err(Refusal::DatabaseBusy)
        } else {
            Ok(())
        }
    }

    /// `exec`, `pragma` and a writing `run` while iterating: allowed in unsafe mode only.
    pub fn require_no_iterators_unless_unsafe(&self) -> Checked {
        if self.unsafe_mode.get() {
            Ok(())
        } else {
            self.require_no_iterators()
        }
    }

    /// Open, not busy, no iterator open: what `function()`, `aggregate()`, `table()`,
    /// `loadExtension()`, `serialize()` and `verify()` need.
    pub fn require_idle(&self, open: bool) -> Checked {
        self.require_open(open)?;
        self.require_not_busy()?;
        self.require_no_iterators()
    }

    /// [`require_idle`](Self::require_idle) and no transaction open (`what`: the
    /// operation, named in the message).
    pub fn require_idle_for(
        &self,
        open: bool,
        in_transaction: bool,
        what: &'static str,
    ) -> Checked {
        self.require_idle(open)?;
        if in_transaction {
            Err(Refusal::InTransaction(what))
        } else {
            Ok(())
        }
    }

    /// What an operation that replaces the connection and its VFS (`rekey`) needs:
    /// [`require_idle_for`](Self::require_idle_for), and no backup running from it
    /// (`backup_running`). A running backup's SQLite object reads through the old
    /// connection and, for a copy under the same key, writes through the old VFS: it
    /// must be over before either is closed. Refused rather than aborted: the backup is
    /// the user's, and waiting for it is one `await`.
    pub fn require_replaceable(
        &self,
        open: bool,
        in_transaction: bool,
        backup_running: bool,
        what: &'static str,
    ) -> Checked {
        self.require_idle_for(open, in_transaction, what)?;
        if backup_running {
            Err(Refusal::BackupRunning(what))
        } else {
            Ok(())
        }
    }

    /// `close()`: refused while anything uses the connection — a query running,
    /// parameters being bound, an iterator open, or (asked last, only if all else is
    /// idle) a statement borrowed by a call in progress.
    pub fn require_closable(&self, statement_in_use: impl FnOnce() -> bool) -> Checked {
        self.require_not_busy()?;
        if self.iterators.get() > 0 || self.binding.get() > 0 || statement_in_use() {
            return Err(Refusal::DatabaseBusy);
        }
        Ok(())
    }

    /// Room for one more iterator.
    pub fn require_iterator_slot(&self) -> Checked {
        if self.iterators.get() >= MAX_ITERATORS {
            Err(Refusal::TooManyIterators)
        } else {
            Ok(())
        }
    }

    pub fn iterator_opened(&self) {
        self.iterators.set(self.iterators.get() + 1);
    }

    /// An iterator ended (or was dropped unfinished).
    pub fn iterator_closed(&self) {
        self.iterators.set(self.iterators.get().saturating_sub(1));
    }

    /// Marks the connection busy; returns what it was, for [`restore_busy`]
    /// (Self::restore_busy): a call reached from user code while busy must leave it busy.
    pub fn enter_busy(&self) -> bool {
        self.busy.replace(true)
    }

    pub fn restore_busy(&self, was: bool) {
        self.busy.set(was);
    }

    pub fn is_busy(&self) -> bool {
        self.busy.get()
    }

    pub fn binding_started(&self) {
        self.binding.set(self.binding.get() + 1);
    }

    pub fn binding_ended(&self) {
        self.binding.set(self.binding.get().saturating_sub(1));
    }

    /// The connection closed: no iterator of it is open any more.
    pub fn closed(&self) {
        self.iterators.set(0);
    }

    pub fn set_unsafe_mode(&self, on: bool) {
        self.unsafe_mode.set(on);
    }

    pub fn unsafe_mode(&self) -> bool {
        self.unsafe_mode.get()
    }

    /// A JS function, aggregate, table or logger was registered.
    pub fn note_js_callbacks(&self) {
        self.js_callbacks.set(true);
    }

    /// Whether an iterator may fetch rows ahead of `next()`: only when no user code could
    /// observe it — a read-only statement, no JS callback on the connection, no unsafe
    /// mode (docs/better-sqlite3-behaviour.md §5.10).
    pub fn may_read_ahead(&self, statement_readonly: bool) -> bool {
        statement_readonly && !self.js_callbacks.get() && !self.unsafe_mode.get()
    }

    pub fn default_safe_integers(&self) -> bool {
        self.default_safe_integers.get()
    }

    pub fn set_default_safe_integers(&self, on: bool) {
        self.default_safe_integers.set(on);
    }

    /// A `safeIntegers` option passed as 0/1, or 2 for "the database default now".
    pub fn safe_integers_option(&self, option: u32) -> bool {
        if option < 2 {
            option == 1
        } else {
            self.default_safe_integers.get()
        }
    }
}

/// A statement in use by a call in progress (re-entered from a getter or a callback).
pub fn statement_busy() -> Refusal {
    Refusal::StatementBusy
}

/// A statement whose own iterator is open may not run, bind or change mode.
pub fn require_not_locked(locked: bool) -> Checked {
    if locked {
        Err(Refusal::StatementBusy)
    } else {
        Ok(())
    }
}

/// `get()`, `all()`, `iterate()` need a statement that returns data.
pub fn require_reader(reader: bool) -> Checked {
    if reader {
        Ok(())
    } else {
        Err(Refusal::NoData)
    }
}

/// `pluck()`, `expand()`, `raw()` and `columns()` (`method`) need a statement that
/// returns data.
pub fn require_returns_data(reader: bool, method: &'static str) -> Checked {
    if reader {
        Ok(())
    } else {
        Err(Refusal::OnlyForData(method))
    }
}

/// Where a statement's cursor is, between calls: better-sqlite3's "busy" (locked by its
/// own iterator) and the two ways a call leaves rows for later. The phases exclude each
/// other: `iterate()` and `all()` start only on an idle statement (`start` settles a
/// draining one first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StatementCursor {
    /// Nothing in progress.
    #[default]
    Idle,
    /// An `all()` returned a partial batch; `more()` continues it.
    Draining,
    /// An iterator is open (the statement is locked by it). `logged`: its first `next()`
    /// has run (and logged the SQL to `verbose`). `exhausted`: the statement reached its
    /// end (and was reset), but JS may still hold rows of the last batch, so the iteration
    /// stays open until JS calls `return()`.
    Iterating { logged: bool, exhausted: bool },
}

impl StatementCursor {
    /// Locked by its own open iterator (better-sqlite3's `statement.busy`).
    pub fn is_locked(self) -> bool {
        matches!(self, StatementCursor::Iterating { .. })
    }

    pub fn is_draining(self) -> bool {
        self == StatementCursor::Draining
    }

    /// An open iterator with rows still to step.
    pub fn has_rows_to_step(self) -> bool {
        matches!(
            self,
            StatementCursor::Iterating {
                exhausted: false,
                ..
            }
        )
    }

    /// The first `next()` of an iterator: true once, when the SQL is to be logged.
    pub fn take_first_step(&mut self) -> bool {
        match self {
            StatementCursor::Iterating { logged, .. } if !*logged => {
                *logged = true;
                true
            }
            _ => false,
        }
    }

    /// The iterator's statement reached its end.
    pub fn exhausted(&mut self) {
        if let StatementCursor::Iterating { exhausted, .. } = self {
            *exhausted = true;
        }
    }

    /// Ends whatever is in progress; returns what it was.
    pub fn end(&mut self) -> StatementCursor {
        std::mem::take(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: bool = true;
    const CLOSED: bool = false;

    #[test]
    fn a_statement_cursor_goes_idle_iterating_exhausted_idle_and_logs_once() {
        let mut c = StatementCursor::default();
        assert!(!c.is_locked() && !c.is_draining() && !c.has_rows_to_step());
        assert!(!c.take_first_step(), "no iterator, nothing to log");
        c = StatementCursor::Iterating {
            logged: false,
            exhausted: false,
        };
        assert!(c.is_locked() && c.has_rows_to_step());
        assert!(c.take_first_step(), "the first next() logs");
        assert!(!c.take_first_step(), "the second does not");
        c.exhausted();
        assert!(
            c.is_locked(),
            "an exhausted iterator stays open until return()"
        );
        assert!(!c.has_rows_to_step());
        assert_eq!(
            c.end(),
            StatementCursor::Iterating {
                logged: true,
                exhausted: true
            }
        );
        assert_eq!(c, StatementCursor::Idle);
        assert_eq!(c.end(), StatementCursor::Idle, "ending twice ends nothing");
    }

    #[test]
    fn a_draining_statement_is_not_locked_and_ends_idle() {
        let mut c = StatementCursor::Draining;
        assert!(c.is_draining() && !c.is_locked() && !c.has_rows_to_step());
        c.exhausted();
        assert_eq!(
            c,
            StatementCursor::Draining,
            "only an iterator is exhausted"
        );
        assert!(c.end().is_draining());
        assert!(!c.is_draining());
    }

    #[test]
    fn messages_are_better_sqlite3s() {
        let cases = [
            (Refusal::NotOpen, "The database connection is not open"),
            (
                Refusal::DatabaseBusy,
                "This database connection is busy executing a query",
            ),
            (
                Refusal::StatementBusy,
                "This statement is busy executing a query",
            ),
            (
                Refusal::TooManyIterators,
                "Too many active database iterators",
            ),
            (
                Refusal::NoData,
                "This statement does not return data. Use run() instead",
            ),
            (
                Refusal::OnlyForData("pluck"),
                "The pluck() method is only for statements that return data",
            ),
            (
                Refusal::InTransaction("rekey"),
                "Cannot rekey a database while a transaction is open",
            ),
        ];
        for (refusal, message) in cases {
            assert_eq!(refusal.message(), message);
            assert_eq!(
                refusal.is_range_error(),
                refusal == Refusal::TooManyIterators
            );
        }
    }

    #[test]
    fn a_fresh_connection_allows_everything_and_a_closed_one_nothing_that_needs_it() {
        let s = ConnectionState::default();
        assert_eq!(s.require_open(OPEN), Ok(()));
        assert_eq!(s.require_idle(OPEN), Ok(()));
        assert_eq!(s.require_no_iterators_unless_unsafe(), Ok(()));
        assert_eq!(s.require_closable(|| false), Ok(()));
        assert_eq!(s.require_open(CLOSED), Err(Refusal::NotOpen));
        assert_eq!(s.require_idle(CLOSED), Err(Refusal::NotOpen));
        assert_eq!(
            s.require_idle_for(CLOSED, false, "rekey"),
            Err(Refusal::NotOpen)
        );
    }

    #[test]
    fn busy_refuses_reentry_and_is_restored_not_cleared() {
        let s = ConnectionState::default();
        let outer = s.enter_busy();
        assert!(!outer);
        assert_eq!(s.require_not_busy(), Err(Refusal::DatabaseBusy));
        assert_eq!(s.require_idle(OPEN), Err(Refusal::DatabaseBusy));
        assert_eq!(s.require_closable(|| false), Err(Refusal::DatabaseBusy));
        // A nested call (from user code) ends: the outer query still runs.
        let inner = s.enter_busy();
        s.restore_busy(inner);
        assert!(s.is_busy());
        s.restore_busy(outer);
        assert!(!s.is_busy());
        assert_eq!(s.require_not_busy(), Ok(()));
    }

    #[test]
    fn iterating_refuses_writes_unless_unsafe_and_registrations_always() {
        let s = ConnectionState::default();
        s.iterator_opened();
        assert_eq!(s.require_not_busy(), Ok(()), "prepare and reads go on");
        assert_eq!(
            s.require_no_iterators_unless_unsafe(),
            Err(Refusal::DatabaseBusy)
        );
        assert_eq!(s.require_idle(OPEN), Err(Refusal::DatabaseBusy));
        assert_eq!(s.require_closable(|| false), Err(Refusal::DatabaseBusy));
        s.set_unsafe_mode(true);
        assert_eq!(s.require_no_iterators_unless_unsafe(), Ok(()));
        assert_eq!(
            s.require_idle(OPEN),
            Err(Refusal::DatabaseBusy),
            "unsafe mode or not"
        );
        s.iterator_closed();
        s.iterator_closed(); // one too many: never below zero
        assert_eq!(s.require_idle(OPEN), Ok(()));
        s.iterator_opened();
        assert_eq!(s.require_idle(OPEN), Err(Refusal::DatabaseBusy));
    }

    #[test]
    fn closing_waits_for_binding_and_for_statements_in_use_and_resets_iterators() {
        let s = ConnectionState::default();
        s.binding_started();
        assert_eq!(s.require_closable(|| false), Err(Refusal::DatabaseBusy));
        s.binding_ended();
        assert_eq!(s.require_closable(|| true), Err(Refusal::DatabaseBusy));
        let mut asked = false;
        s.iterator_opened();
        assert_eq!(
            s.require_closable(|| {
                asked = true;
                false
            }),
            Err(Refusal::DatabaseBusy)
        );
        assert!(
            !asked,
            "statements are only looked at when all else is idle"
        );
        s.closed();
        assert_eq!(s.require_closable(|| false), Ok(()));
    }

    #[test]
    fn a_running_backup_refuses_rekey_after_the_other_rules() {
        let s = ConnectionState::default();
        assert_eq!(
            s.require_replaceable(OPEN, false, true, "rekey"),
            Err(Refusal::BackupRunning("rekey"))
        );
        assert_eq!(
            Refusal::BackupRunning("rekey").message(),
            "Cannot rekey a database while a backup of it is running (await the backup first)"
        );
        assert!(!Refusal::BackupRunning("rekey").is_range_error());
        assert_eq!(
            s.require_replaceable(OPEN, true, true, "rekey"),
            Err(Refusal::InTransaction("rekey"))
        );
        assert_eq!(
            s.require_replaceable(CLOSED, false, true, "rekey"),
            Err(Refusal::NotOpen)
        );
        assert_eq!(s.require_replaceable(OPEN, false, false, "rekey"), Ok(()));
    }

    #[test]
    fn a_transaction_refuses_rekey_only() {
        let s = ConnectionState::default();
        assert_eq!(s.require_idle(OPEN), Ok(()));
        assert_eq!(
            s.require_idle_for(OPEN, true, "rekey"),
            Err(Refusal::InTransaction("rekey"))
        );
        assert_eq!(s.require_idle_for(OPEN, false, "rekey"), Ok(()));
    }

    #[test]
    fn at_most_65535_iterators() {
        let s = ConnectionState::default();
        for _ in 0..u16::MAX {
            assert_eq!(s.require_iterator_slot(), Ok(()));
            s.iterator_opened();
        }
        assert_eq!(s.require_iterator_slot(), Err(Refusal::TooManyIterators));
        s.iterator_closed();
        assert_eq!(s.require_iterator_slot(), Ok(()));
    }

    #[test]
    fn read_ahead_only_when_no_user_code_can_see_it() {
        let s = ConnectionState::default();
        assert!(s.may_read_ahead(true));
        assert!(!s.may_read_ahead(false), "a writing statement");
        s.set_unsafe_mode(true);
        assert!(!s.may_read_ahead(true), "unsafe mode");
        s.set_unsafe_mode(false);
        assert!(s.may_read_ahead(true));
        s.note_js_callbacks();
        assert!(!s.may_read_ahead(true), "a JS callback registered");
    }

    #[test]
    fn safe_integers_options_and_the_default() {
        let s = ConnectionState::default();
        assert!(!s.default_safe_integers());
        assert!(s.safe_integers_option(1));
        assert!(!s.safe_integers_option(0));
        assert!(!s.safe_integers_option(2));
        s.set_default_safe_integers(true);
        assert!(s.safe_integers_option(2));
        assert!(!s.safe_integers_option(0));
    }

    #[test]
    fn statement_rules() {
        assert_eq!(require_not_locked(true), Err(Refusal::StatementBusy));
        assert_eq!(require_not_locked(false), Ok(()));
        assert_eq!(require_reader(false), Err(Refusal::NoData));
        assert_eq!(require_reader(true), Ok(()));
        assert_eq!(
            require_returns_data(false, "columns"),
            Err(Refusal::OnlyForData("columns"))
        );
        assert_eq!(require_returns_data(true, "columns"), Ok(()));
        assert_eq!(statement_busy(), Refusal::StatementBusy);
    }
}
