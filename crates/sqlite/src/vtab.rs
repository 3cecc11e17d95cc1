//! Virtual tables: modules registered with `sqlite3_create_module_v2`, implemented by
//! Rust types. A [`Module`] makes tables (xCreate/xConnect), a [`VTab`] plans queries
//! (xBestIndex) and opens cursors, a [`VTabCursor`] scans rows (xFilter/xNext/xEof/
//! xColumn/xRowid). Tables are read-only (no xUpdate) and keep no transaction state.
//!
//! A module is either *eponymous-only* ([`ModuleKind::EponymousOnly`]: xCreate is NULL,
//! the table exists under the module's name and is used as `FROM name` or, with HIDDEN
//! columns, as a table-valued function `FROM name(arg, …)`), or made per
//! `CREATE VIRTUAL TABLE t USING name(arg, …)` ([`ModuleKind::CreateVirtualTable`]: the
//! module's name alone is not a table).
//!
//! Every callback from SQLite catches panics and turns them, like `Err`s, into an SQLite
//! error whose message goes through `zErrMsg` (or xConnect's `pzErr`).
//!
//! A table-valued function `series(start, stop)`:
//!
//! ```
//! use cipherlite_sqlite::{
//!     function::{Context, ValueRef},
//!     vtab::{self, ConstraintOp, IndexInfo, Module, ModuleArgs, ModuleKind, VTab,
//!            VTabConnection, VTabCursor},
//!     ffi, Connection, Error, OpenFlags, Result,
//! };
//!
//! struct Series;
//! struct SeriesTable;
//! #[derive(Default)]
//! struct SeriesCursor { start: i64, stop: i64, value: i64 }
//!
//! // Column numbers in the declared schema.
//! const VALUE: i32 = 0;
//! const START: i32 = 1;
//! const STOP: i32 = 2;
//!
//! impl Module for Series {
//!     type Table = SeriesTable;
//!     fn connect(&self, db: &mut VTabConnection<'_>, _: &ModuleArgs) -> Result<SeriesTable> {
//!         db.declare("CREATE TABLE x(value, start HIDDEN, stop HIDDEN)")?;
//!         Ok(SeriesTable)
//!     }
//! }
//!
//! impl VTab for SeriesTable {
//!     type Cursor = SeriesCursor;
//!     fn best_index(&self, info: &mut IndexInfo<'_>) -> Result<()> {
//!         // Hand `start = ?` to xFilter as argv[0] and `stop = ?` as argv[1].
//!         let mut wanted = [None, None];
//!         for (i, c) in info.constraints().enumerate() {
//!             if c.op == ConstraintOp::Eq && (c.column == START || c.column == STOP) {
//!                 if !c.usable {
//!                     return Err(vtab::unusable_plan()); // needs a value not known yet
//!                 }
//!                 wanted[(c.column - START) as usize] = Some(i);
//!             }
//!         }
//!         let [Some(start), Some(stop)] = wanted else {
//!             return Err(Error::new(ffi::SQLITE_ERROR, "series() takes start and stop"));
//!         };
//!         info.set_argv_index(start, 1);
//!         info.set_omit(start, true);
//!         info.set_argv_index(stop, 2);
//!         info.set_omit(stop, true);
//!         info.set_estimated_cost(10.0);
//!         Ok(())
//!     }
//!     fn open(&self) -> Result<SeriesCursor> {
//!         Ok(SeriesCursor::default())
//!     }
//! }
//!
//! impl VTabCursor for SeriesCursor {
//!     fn filter(&mut self, _: i32, _: Option<&str>, args: &[ValueRef<'_>]) -> Result<()> {
//!         let [start, stop] = args else {
//!             return Err(Error::new(ffi::SQLITE_ERROR, "series(): missing arguments"));
//!         };
//!         (self.start, self.stop) = (start.int64(), stop.int64());
//!         self.value = self.start;
//!         Ok(())
//!     }
//!     fn next(&mut self) -> Result<()> {
//!         self.value += 1;
//!         Ok(())
//!     }
//!     fn eof(&self) -> bool {
//!         self.value > self.stop
//!     }
//!     fn column(&self, ctx: &mut Context, column: i32) -> Result<()> {
//!         match column {
//!             VALUE => ctx.set_int64(self.value),
//!             START => ctx.set_int64(self.start),
//!             _ => ctx.set_int64(self.stop),
//!         }
//!         Ok(())
//!     }
//!     fn rowid(&self) -> Result<i64> {
//!         Ok(self.value - self.start + 1)
//!     }
//! }
//!
//! let conn = Connection::open(":memory:", OpenFlags::default(), None)?;
//! vtab::create_module(&conn, "series", ModuleKind::EponymousOnly, Series)?;
//! let (stmt, _) = conn.prepare("SELECT sum(value) FROM series(1, 10)", false)?;
//! let mut stmt = stmt.expect("a statement");
//! assert!(stmt.step()?);
//! assert_eq!(stmt.column_int64(0), 55);
//! # Ok::<(), Error>(())
//! ```

use super::{
    connection::Connection,
    error::Error,
    ffi,
    function::{self, Context, ValueRef},
    Result,
};
use std::{
    ffi::{c_char, c_int, c_void, CStr, CString},
    marker::PhantomData,
    panic::{catch_unwind, AssertUnwindSafe},
    ptr,
};

/// The message of the SQLite error a panicking callback turns into.
pub const PANIC_MESSAGE: &str = "a virtual table panicked";

/// Whether a module's tables are made by `CREATE VIRTUAL TABLE` or exist on their own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModuleKind {
    /// One table named like the module, always there (xCreate = NULL): `FROM name`,
    /// `FROM name(args…)`. `CREATE VIRTUAL TABLE … USING name` fails ("no such module").
    EponymousOnly,
    /// Tables made by `CREATE VIRTUAL TABLE t USING name(args…)` (and connected again
    /// from the schema later). `FROM name` alone is "no such table".
    CreateVirtualTable,
}

/// What SQLite passes to xCreate / xConnect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleArgs {
    /// The module name as used in the statement.
    pub module: String,
    /// The schema the table lives in (`main`, `temp`, an attached name).
    pub database: String,
    /// The table's name (for an eponymous table, the module's name).
    pub table: String,
    /// The arguments of `USING name(arg, …)`, as SQLite splits them: each is the text
    /// between the commas, trimmed, quotes kept.
    pub args: Vec<String>,
    /// True for xCreate (a `CREATE VIRTUAL TABLE` running now), false for xConnect (an
    /// existing table, or the eponymous one, being connected).
    pub create: bool,
}

/// The connection as seen from inside xCreate/xConnect: where a new table declares its
/// schema and configures itself.
pub struct VTabConnection<'a> {
    db: *mut ffi::sqlite3,
    _callback: PhantomData<&'a ()>,
}

impl VTabConnection<'_> {
    /// Declares the table's columns (`sqlite3_declare_vtab`) with a statement of the form
    /// `CREATE TABLE x(col, hidden_col HIDDEN, …)`. Must be called once by
    /// [`Module::connect`].
    pub fn declare(&mut self, sql: &str) -> Result<()> {
        let sql = CString::new(sql)
            .map_err(|_| Error::new(ffi::SQLITE_ERROR, "table declaration contains NUL"))?;
        // SAFETY: db is the connection running this xCreate/xConnect, as SQLite requires.
        let rc = unsafe { ffi::sqlite3_declare_vtab(self.db, sql.as_ptr()) };
        self.check(rc)
    }

    /// `SQLITE_VTAB_DIRECTONLY`: the table may not be used from triggers and views.
    pub fn set_direct_only(&mut self) -> Result<()> {
        // SAFETY: called from xConnect/xCreate on its connection; this option takes no
        // further argument.
        let rc = unsafe { ffi::sqlite3_vtab_config(self.db, ffi::SQLITE_VTAB_DIRECTONLY) };
        self.check(rc)
    }

    /// `SQLITE_VTAB_INNOCUOUS`: the table is safe to use from triggers and views even
    /// with `trusted_schema` off.
    pub fn set_innocuous(&mut self) -> Result<()> {
        // SAFETY: as for set_direct_only.
        let rc = unsafe { ffi::sqlite3_vtab_config(self.db, ffi::SQLITE_VTAB_INNOCUOUS) };
        self.check(rc)
    }

    fn check(&self, rc: c_int) -> Result<()> {
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            // SAFETY: db is a valid connection for the duration of the callback.
            Err(unsafe { Error::from_handle(self.db, rc) })
        }
    }
}

/// A virtual-table module: makes tables.
pub trait Module: 'static {
    type Table: VTab;
    /// xCreate / xConnect: declares the schema on `db` (see [`VTabConnection::declare`])
    /// and returns the table. SQLite may connect the same module many times (one per
    /// table, again after a schema change), and may do so while another of its tables
    /// is running, so this takes `&self`.
    fn connect(&self, db: &mut VTabConnection<'_>, args: &ModuleArgs) -> Result<Self::Table>;
}

/// One connected virtual table.
pub trait VTab: 'static {
    type Cursor: VTabCursor;
    /// xBestIndex: chooses how constraints reach xFilter. Return
    /// `Err(`[`unusable_plan()`]`)` to reject this plan (SQLite tries another one); any
    /// other error fails the statement being prepared with its message.
    fn best_index(&self, info: &mut IndexInfo<'_>) -> Result<()>;
    /// xOpen: a new cursor. It must not borrow the table: give it what it needs (an
    /// `Rc` of shared data, copies).
    fn open(&self) -> Result<Self::Cursor>;
}

/// A scan over a virtual table.
pub trait VTabCursor: 'static {
    /// xFilter: starts a scan with the plan chosen by [`VTab::best_index`]: its `idx_num`,
    /// `idx_str`, and the constraint values in `argv_index` order. Positions the cursor
    /// on the first row (or at the end).
    fn filter(
        &mut self,
        idx_num: c_int,
        idx_str: Option<&str>,
        args: &[ValueRef<'_>],
    ) -> Result<()>;
    /// xNext: moves to the next row.
    fn next(&mut self) -> Result<()>;
    /// Whether the scan has ended. Asked right after each successful `filter`/`next` (so
    /// a panic here fails that call); SQLite's xEof returns the answer kept then.
    fn eof(&self) -> bool;
    /// xColumn: the current row's value of column `column` (in declaration order,
    /// HIDDEN columns included), set on `ctx`.
    fn column(&self, ctx: &mut Context, column: c_int) -> Result<()>;
    /// xRowid: the current row's rowid.
    fn rowid(&self) -> Result<i64>;
}

/// The error [`VTab::best_index`] returns to reject a plan (`SQLITE_CONSTRAINT`, for
/// example because a constraint it needs is not usable in it).
pub fn unusable_plan() -> Error {
    Error::new(ffi::SQLITE_CONSTRAINT, "")
}

/// A constraint's operator (`SQLITE_INDEX_CONSTRAINT_*`). `x IN (…)` arrives as `Eq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConstraintOp {
    Eq,
    Gt,
    Le,
    Lt,
    Ge,
    Match,
    Like,
    Glob,
    Regexp,
    Ne,
    IsNot,
    IsNotNull,
    IsNull,
    Is,
    /// `LIMIT n` (its `column` is meaningless).
    Limit,
    /// `OFFSET n` (its `column` is meaningless).
    Offset,
    /// An overloaded function (xFindFunction), with the code it returned (≥ 150).
    Function(u8),
    /// An operator this SQLite version doesn't have yet.
    Other(u8),
}

impl ConstraintOp {
    fn from_raw(op: u8) -> ConstraintOp {
        match c_int::from(op) {
            ffi::SQLITE_INDEX_CONSTRAINT_EQ => ConstraintOp::Eq,
            ffi::SQLITE_INDEX_CONSTRAINT_GT => ConstraintOp::Gt,
            ffi::SQLITE_INDEX_CONSTRAINT_LE => ConstraintOp::Le,
            ffi::SQLITE_INDEX_CONSTRAINT_LT => ConstraintOp::Lt,
            ffi::SQLITE_INDEX_CONSTRAINT_GE => ConstraintOp::Ge,
            ffi::SQLITE_INDEX_CONSTRAINT_MATCH => ConstraintOp::Match,
            ffi::SQLITE_INDEX_CONSTRAINT_LIKE => ConstraintOp::Like,
            ffi::SQLITE_INDEX_CONSTRAINT_GLOB => ConstraintOp::Glob,
            ffi::SQLITE_INDEX_CONSTRAINT_REGEXP => ConstraintOp::Regexp,
            ffi::SQLITE_INDEX_CONSTRAINT_NE => ConstraintOp::Ne,
            ffi::SQLITE_INDEX_CONSTRAINT_ISNOT => ConstraintOp::IsNot,
            ffi::SQLITE_INDEX_CONSTRAINT_ISNOTNULL => ConstraintOp::IsNotNull,
            ffi::SQLITE_INDEX_CONSTRAINT_ISNULL => ConstraintOp::IsNull,
            ffi::SQLITE_INDEX_CONSTRAINT_IS => ConstraintOp::Is,
            ffi::SQLITE_INDEX_CONSTRAINT_LIMIT => ConstraintOp::Limit,
            ffi::SQLITE_INDEX_CONSTRAINT_OFFSET => ConstraintOp::Offset,
            n if n >= ffi::SQLITE_INDEX_CONSTRAINT_FUNCTION => ConstraintOp::Function(op),
            _ => ConstraintOp::Other(op),
        }
    }
}

/// One `WHERE` term SQLite offers to the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexConstraint {
    /// The constrained column (declaration order, HIDDEN included; -1 for the rowid).
    pub column: c_int,
    pub op: ConstraintOp,
    /// False when the term's value is not available in this plan (e.g. it comes from a
    /// table joined later).
    pub usable: bool,
}

/// The plan of a table-valued function whose first columns are its parameters (HIDDEN
/// columns, `parameter_names`, at most 32): which constraint values reach xFilter, and the
/// idxNum that tells xFilter which parameters they are ([`parameter_passed`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ParameterPlan {
    /// Bit `p` set when parameter `p` is passed.
    pub idx_num: c_int,
    /// For each passed parameter, in parameter order: its constraint's index among
    /// [`IndexInfo::constraints`], and its 1-based place among xFilter's arguments.
    pub arguments: Vec<(usize, c_int)>,
    /// Estimated cost and rows: high, falling with each parameter passed, so that SQLite
    /// avoids running the function inside a loop when it can (better-sqlite3's figure).
    pub estimate: i64,
}

impl ParameterPlan {
    /// Plans for `constraints`: parameters take `=` only (another operator is an error
    /// naming the parameter) and must all be usable (else the plan is rejected,
    /// [`unusable_plan`]: a plan that leaves an argument out would call the function
    /// without it). A parameter constrained twice is passed once; constraints on the real
    /// columns are left to SQLite.
    pub fn choose(parameter_names: &[String], constraints: &[IndexConstraint]) -> Result<Self> {
        let mut passed: Vec<(usize, usize)> = Vec::new(); // (parameter, constraint)
        for (i, c) in constraints.iter().enumerate() {
            if matches!(c.op, ConstraintOp::Limit | ConstraintOp::Offset) {
                continue; // no column: nothing to do with parameters
            }
            let Some(name) = usize::try_from(c.column)
                .ok()
                .and_then(|p| parameter_names.get(p))
            else {
                continue;
            };
            if c.op != ConstraintOp::Eq {
                return Err(Error::new(
                    ffi::SQLITE_ERROR,
                    format!(
                        "virtual table parameter \"{name}\" can only be constrained by the '=' operator"
                    ),
                ));
            }
            if !c.usable {
                return Err(unusable_plan());
            }
            passed.push((c.column as usize, i));
        }
        passed.sort_unstable();
        let mut idx_num = 0u32;
        let mut arguments = Vec::new();
        for (parameter, constraint) in passed {
            let bit = 1u32.checked_shl(parameter as u32).unwrap_or(0);
            if bit != 0 && idx_num & bit == 0 {
                idx_num |= bit;
                arguments.push((constraint, arguments.len() as c_int + 1));
            }
        }
        Ok(ParameterPlan {
            idx_num: idx_num as c_int,
            estimate: 1_000_000_000 / (arguments.len() as i64 + 1),
            arguments,
        })
    }

    /// Writes the plan into xBestIndex's outputs.
    pub fn apply(&self, info: &mut IndexInfo<'_>) {
        for &(constraint, argv_index) in &self.arguments {
            info.set_argv_index(constraint, argv_index);
            info.set_omit(constraint, true);
        }
        info.set_idx_num(self.idx_num);
        info.set_estimated_cost(self.estimate as f64);
        info.set_estimated_rows(self.estimate);
    }
}

/// Whether a [`ParameterPlan`] with this idxNum passes `parameter` to xFilter.
pub fn parameter_passed(idx_num: c_int, parameter: usize) -> bool {
    idx_num as u32 & 1u32.checked_shl(parameter as u32).unwrap_or(0) != 0
}

/// One `ORDER BY` term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderBy {
    pub column: c_int,
    pub desc: bool,
}

/// xBestIndex's inputs (constraints, ORDER BY) and outputs (which constraint values
/// reach xFilter, the plan's number/string, its cost).
pub struct IndexInfo<'a> {
    raw: &'a mut ffi::sqlite3_index_info,
}

impl IndexInfo<'_> {
    fn raw_constraints(&self) -> &[ffi::sqlite3_index_constraint] {
        let n = usize::try_from(self.raw.nConstraint).unwrap_or(0);
        if self.raw.aConstraint.is_null() || n == 0 {
            return &[];
        }
        // SAFETY: SQLite provides nConstraint entries, valid during xBestIndex.
        unsafe { std::slice::from_raw_parts(self.raw.aConstraint, n) }
    }

    fn raw_usage(&mut self) -> &mut [ffi::sqlite3_index_constraint_usage] {
        let n = usize::try_from(self.raw.nConstraint).unwrap_or(0);
        if self.raw.aConstraintUsage.is_null() || n == 0 {
            return &mut [];
        }
        // SAFETY: one usage entry per constraint, writable during xBestIndex; no other
        // reference to them exists (self is borrowed mutably).
        unsafe { std::slice::from_raw_parts_mut(self.raw.aConstraintUsage, n) }
    }

    /// The constraints, in SQLite's order (the index used by the setters below).
    pub fn constraints(&self) -> impl ExactSizeIterator<Item = IndexConstraint> + '_ {
        self.raw_constraints().iter().map(|c| IndexConstraint {
            column: c.iColumn,
            op: ConstraintOp::from_raw(c.op),
            usable: c.usable != 0,
        })
    }

    /// Passes constraint `constraint`'s value to xFilter as `args[argv_index - 1]`
    /// (`argv_index` ≥ 1; 0 = not passed). Panics (caught: the statement fails) when
    /// `constraint` is out of range.
    pub fn set_argv_index(&mut self, constraint: usize, argv_index: c_int) {
        self.raw_usage()[constraint].argvIndex = argv_index;
    }

    /// Tells SQLite it need not check constraint `constraint` again itself.
    pub fn set_omit(&mut self, constraint: usize, omit: bool) {
        self.raw_usage()[constraint].omit = u8::from(omit);
    }

    pub fn order_by(&self) -> impl ExactSizeIterator<Item = OrderBy> + '_ {
        let n = usize::try_from(self.raw.nOrderBy).unwrap_or(0);
        let terms = if self.raw.aOrderBy.is_null() || n == 0 {
            &[][..]
        } else {
            // SAFETY: SQLite provides nOrderBy entries, valid during xBestIndex.
            unsafe { std::slice::from_raw_parts(self.raw.aOrderBy, n) }
        };
        terms.iter().map(|o| OrderBy {
            column: o.iColumn,
            desc: o.desc != 0,
        })
    }

    /// The rows will come out in the `ORDER BY` order: SQLite need not sort them.
    pub fn set_order_by_consumed(&mut self, consumed: bool) {
        self.raw.orderByConsumed = c_int::from(consumed);
    }

    pub fn idx_num(&self) -> c_int {
        self.raw.idxNum
    }

    /// The number xFilter receives as `idx_num`.
    pub fn set_idx_num(&mut self, idx_num: c_int) {
        self.raw.idxNum = idx_num;
    }

    /// The string xFilter receives as `idx_str` (copied; SQLite frees it).
    pub fn set_idx_str(&mut self, idx_str: &str) -> Result<()> {
        let copy = sqlite_string(idx_str);
        if copy.is_null() {
            return Err(Error::from_code(ffi::SQLITE_NOMEM));
        }
        if self.raw.needToFreeIdxStr != 0 {
            // SAFETY: a string we allocated with sqlite3_mprintf earlier in this call.
            unsafe { ffi::sqlite3_free(self.raw.idxStr.cast()) };
        }
        self.raw.idxStr = copy;
        self.raw.needToFreeIdxStr = 1;
        Ok(())
    }

    pub fn set_estimated_cost(&mut self, cost: f64) {
        self.raw.estimatedCost = cost;
    }

    pub fn set_estimated_rows(&mut self, rows: i64) {
        self.raw.estimatedRows = rows;
    }

    /// The plan returns at most one row (`SQLITE_INDEX_SCAN_UNIQUE`).
    pub fn set_unique(&mut self, unique: bool) {
        if unique {
            self.raw.idxFlags |= ffi::SQLITE_INDEX_SCAN_UNIQUE;
        } else {
            self.raw.idxFlags &= !ffi::SQLITE_INDEX_SCAN_UNIQUE;
        }
    }

    /// Bit `i` set: column `i` is read by the statement (bit 63: a column ≥ 63).
    pub fn columns_used(&self) -> u64 {
        self.raw.colUsed
    }
}

/// Registers `module` under `name` (replacing a module of that name).
pub fn create_module<M: Module>(
    conn: &Connection,
    name: &str,
    kind: ModuleKind,
    module: M,
) -> Result<()> {
    let c_name = CString::new(name)
        .map_err(|_| Error::new(ffi::SQLITE_ERROR, "module name contains a NUL character"))?;
    let data = Box::into_raw(Box::new(ModuleData {
        methods: methods::<M>(kind),
        module,
    }));
    // SAFETY: valid connection. `methods` lives inside the module data, which SQLite
    // keeps until it calls `destroy_module` (also on failure), after the last table of
    // the module is disconnected.
    let rc = unsafe {
        ffi::sqlite3_create_module_v2(
            conn.raw(),
            c_name.as_ptr(),
            ptr::addr_of!((*data).methods),
            data.cast(),
            Some(destroy_module::<M>),
        )
    };
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(conn.last_error(rc))
    }
}

/// The module's client data: its method table (which SQLite points to, so it must stay
/// put) and the user's module.
struct ModuleData<M> {
    methods: ffi::sqlite3_module,
    module: M,
}

/// `sqlite3_vtab` followed by the table (SQLite only sees the first field).
#[repr(C)]
struct TableHandle<T> {
    base: ffi::sqlite3_vtab,
    table: T,
}

/// `sqlite3_vtab_cursor` followed by the cursor.
#[repr(C)]
struct CursorHandle<C> {
    base: ffi::sqlite3_vtab_cursor,
    /// The answer of `C::eof` after the last filter/next.
    eof: bool,
    cursor: C,
}

fn methods<M: Module>(kind: ModuleKind) -> ffi::sqlite3_module {
    ffi::sqlite3_module {
        iVersion: 1,
        // NULL makes the module eponymous-only. xCreate must be a different function
        // from xConnect otherwise: the same pointer would make `FROM name` work too.
        xCreate: match kind {
            ModuleKind::EponymousOnly => None,
            ModuleKind::CreateVirtualTable => Some(x_create::<M>),
        },
        xConnect: Some(x_connect::<M>),
        xBestIndex: Some(x_best_index::<M::Table>),
        xDisconnect: Some(x_disconnect::<M::Table>),
        xDestroy: Some(x_disconnect::<M::Table>),
        xOpen: Some(x_open::<M::Table>),
        xClose: Some(x_close::<M::Table>),
        xFilter: Some(x_filter::<M::Table>),
        xNext: Some(x_next::<M::Table>),
        xEof: Some(x_eof::<M::Table>),
        xColumn: Some(x_column::<M::Table>),
        xRowid: Some(x_rowid::<M::Table>),
        xUpdate: None,
        xBegin: None,
        xSync: None,
        xCommit: None,
        xRollback: None,
        xFindFunction: None,
        xRename: None,
        xSavepoint: None,
        xRelease: None,
        xRollbackTo: None,
        xShadowName: None,
        xIntegrity: None,
    }
}

/// A copy of `s` in memory from `sqlite3_malloc` (what `zErrMsg`, `pzErr` and `idxStr`
/// must hold); null when out of memory. NUL characters become spaces.
fn sqlite_string(s: &str) -> *mut c_char {
    let Ok(c) = CString::new(s.replace('\0', " ")) else {
        return ptr::null_mut();
    };
    // SAFETY: "%s" with one NUL-terminated string argument; the result belongs to the
    // caller (freed by SQLite or with sqlite3_free).
    unsafe { ffi::sqlite3_mprintf(c"%s".as_ptr(), c.as_ptr()) }
}

/// Stores `err`'s message in an SQLite error-message slot (`zErrMsg`, `*pzErr`),
/// freeing what was there; an empty message leaves the slot alone (SQLite then uses
/// the code's generic text). Returns the code to give SQLite.
///
/// # Safety
/// `slot` is null or points to a `char*` that is null or owned by `sqlite3_malloc`.
unsafe fn report(slot: *mut *mut c_char, err: &Error) -> c_int {
    if !slot.is_null() && !err.message.is_empty() {
        // SAFETY: per contract; sqlite3_free(NULL) is a no-op.
        unsafe {
            ffi::sqlite3_free((*slot).cast());
            *slot = sqlite_string(&err.message);
        }
    }
    if err.code == ffi::SQLITE_OK {
        ffi::SQLITE_ERROR
    } else {
        err.code
    }
}

/// The outcome of a callback: its result, or the panic it was stopped by.
type Outcome<T> = std::thread::Result<Result<T>>;

fn flatten<T>(outcome: Outcome<T>) -> Result<T> {
    outcome.unwrap_or_else(|_| Err(Error::new(ffi::SQLITE_ERROR, PANIC_MESSAGE)))
}

/// Finishes a table-level callback: errors go to the table's `zErrMsg`.
///
/// # Safety
/// `vtab` is a live table of ours (or null).
unsafe fn finish(vtab: *mut ffi::sqlite3_vtab, outcome: Outcome<()>) -> c_int {
    match flatten(outcome) {
        Ok(()) => ffi::SQLITE_OK,
        // SAFETY: a null slot is allowed.
        Err(e) if vtab.is_null() => unsafe { report(ptr::null_mut(), &e) },
        // SAFETY: zErrMsg of a live table, owned by sqlite3_malloc or null.
        Err(e) => unsafe { report(ptr::addr_of_mut!((*vtab).zErrMsg), &e) },
    }
}

/// # Safety
/// `argv` holds `argc` NUL-terminated strings (SQLite's xCreate/xConnect arguments).
unsafe fn module_args(argc: c_int, argv: *const *const c_char, create: bool) -> ModuleArgs {
    let n = usize::try_from(argc).unwrap_or(0);
    let raw: &[*const c_char] = if argv.is_null() || n == 0 {
        &[]
    } else {
        // SAFETY: per contract.
        unsafe { std::slice::from_raw_parts(argv, n) }
    };
    let text = |i: usize| -> String {
        match raw.get(i) {
            Some(p) if !p.is_null() => {
                // SAFETY: per contract, a NUL-terminated string.
                unsafe { CStr::from_ptr(*p) }.to_string_lossy().into_owned()
            }
            _ => String::new(),
        }
    };
    ModuleArgs {
        module: text(0),
        database: text(1),
        table: text(2),
        args: (3..raw.len()).map(text).collect(),
        create,
    }
}

/// xCreate and xConnect.
///
/// # Safety
/// SQLite's xCreate/xConnect contract, with `aux` the `ModuleData<M>` of `create_module`.
unsafe fn connect<M: Module>(
    db: *mut ffi::sqlite3,
    aux: *mut c_void,
    argc: c_int,
    argv: *const *const c_char,
    pp_vtab: *mut *mut ffi::sqlite3_vtab,
    pz_err: *mut *mut c_char,
    create: bool,
) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: aux is our ModuleData<M>, alive while the module is registered; only
        // shared references to it are made.
        let data = unsafe { &*aux.cast::<ModuleData<M>>() };
        // SAFETY: per contract.
        let args = unsafe { module_args(argc, argv, create) };
        let mut conn = VTabConnection {
            db,
            _callback: PhantomData,
        };
        data.module.connect(&mut conn, &args)
    }));
    match flatten(outcome) {
        Ok(table) => {
            let handle = Box::new(TableHandle {
                // SAFETY: an all-zero sqlite3_vtab (null pointers, 0) is what SQLite
                // expects from a new table; it fills the fields in itself.
                base: unsafe { std::mem::zeroed::<ffi::sqlite3_vtab>() },
                table,
            });
            // SAFETY: pp_vtab is SQLite's out-parameter; SQLite hands the pointer back to
            // the other callbacks and to xDisconnect/xDestroy, which frees it.
            unsafe { *pp_vtab = Box::into_raw(handle).cast() };
            ffi::SQLITE_OK
        }
        // SAFETY: pz_err is SQLite's out-parameter for an sqlite3_malloc'd message.
        Err(e) => unsafe { report(pz_err, &e) },
    }
}

unsafe extern "C" fn x_create<M: Module>(
    db: *mut ffi::sqlite3,
    aux: *mut c_void,
    argc: c_int,
    argv: *const *const c_char,
    pp_vtab: *mut *mut ffi::sqlite3_vtab,
    pz_err: *mut *mut c_char,
) -> c_int {
    // SAFETY: SQLite's xCreate contract is connect's.
    unsafe { connect::<M>(db, aux, argc, argv, pp_vtab, pz_err, true) }
}

unsafe extern "C" fn x_connect<M: Module>(
    db: *mut ffi::sqlite3,
    aux: *mut c_void,
    argc: c_int,
    argv: *const *const c_char,
    pp_vtab: *mut *mut ffi::sqlite3_vtab,
    pz_err: *mut *mut c_char,
) -> c_int {
    // SAFETY: SQLite's xConnect contract is connect's.
    unsafe { connect::<M>(db, aux, argc, argv, pp_vtab, pz_err, false) }
}

/// xDisconnect and xDestroy: frees the table.
unsafe extern "C" fn x_disconnect<T: VTab>(vtab: *mut ffi::sqlite3_vtab) -> c_int {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: vtab is the TableHandle<T> boxed in connect; SQLite disconnects it once
        // and uses it no more. A message SQLite didn't collect is freed with it.
        unsafe {
            let handle = Box::from_raw(vtab.cast::<TableHandle<T>>());
            ffi::sqlite3_free(handle.base.zErrMsg.cast());
            drop(handle);
        }
    }));
    ffi::SQLITE_OK
}

unsafe extern "C" fn destroy_module<M>(aux: *mut c_void) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: aux is the Box<ModuleData<M>> leaked in create_module; SQLite calls this
        // once, after the last use of the module.
        drop(unsafe { Box::from_raw(aux.cast::<ModuleData<M>>()) })
    }));
}

unsafe extern "C" fn x_best_index<T: VTab>(
    vtab: *mut ffi::sqlite3_vtab,
    info: *mut ffi::sqlite3_index_info,
) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: vtab is our live TableHandle<T>; only the `table` field is borrowed.
        let table = unsafe { &(*vtab.cast::<TableHandle<T>>()).table };
        // SAFETY: info is SQLite's index info, exclusively ours during this call.
        let mut info = IndexInfo {
            raw: unsafe { &mut *info },
        };
        table.best_index(&mut info)
    }));
    // SAFETY: vtab is our live table.
    unsafe { finish(vtab, outcome) }
}

unsafe extern "C" fn x_open<T: VTab>(
    vtab: *mut ffi::sqlite3_vtab,
    pp_cursor: *mut *mut ffi::sqlite3_vtab_cursor,
) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: vtab is our live TableHandle<T>; only the `table` field is borrowed.
        let table = unsafe { &(*vtab.cast::<TableHandle<T>>()).table };
        let cursor = table.open()?;
        let handle = Box::new(CursorHandle {
            base: ffi::sqlite3_vtab_cursor {
                pVtab: ptr::null_mut(), // set by SQLite
            },
            eof: true,
            cursor,
        });
        // SAFETY: SQLite's out-parameter; the cursor is freed by xClose.
        unsafe { *pp_cursor = Box::into_raw(handle).cast() };
        Ok(())
    }));
    // SAFETY: vtab is our live table.
    unsafe { finish(vtab, outcome) }
}

unsafe extern "C" fn x_close<T: VTab>(cursor: *mut ffi::sqlite3_vtab_cursor) -> c_int {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: cursor is the CursorHandle boxed in x_open; SQLite closes it once.
        drop(unsafe { Box::from_raw(cursor.cast::<CursorHandle<T::Cursor>>()) })
    }));
    ffi::SQLITE_OK
}

/// Runs `f` on a cursor and reports its error on the cursor's table.
///
/// # Safety
/// `cursor` is a live CursorHandle<C> of ours, not borrowed elsewhere.
unsafe fn with_cursor<C: VTabCursor>(
    cursor: *mut ffi::sqlite3_vtab_cursor,
    f: impl FnOnce(&mut CursorHandle<C>) -> Result<()>,
) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: per contract.
        f(unsafe { &mut *cursor.cast::<CursorHandle<C>>() })
    }));
    // SAFETY: per contract; pVtab was set by SQLite after xOpen.
    unsafe { finish((*cursor).pVtab, outcome) }
}

unsafe extern "C" fn x_filter<T: VTab>(
    cursor: *mut ffi::sqlite3_vtab_cursor,
    idx_num: c_int,
    idx_str: *const c_char,
    argc: c_int,
    argv: *mut *mut ffi::sqlite3_value,
) -> c_int {
    let idx_str = if idx_str.is_null() {
        None
    } else {
        // SAFETY: the NUL-terminated idxStr chosen by xBestIndex, alive during the call.
        unsafe { CStr::from_ptr(idx_str) }.to_str().ok()
    };
    // SAFETY: a live cursor of ours.
    unsafe {
        with_cursor::<T::Cursor>(cursor, |c| {
            c.eof = true;
            c.cursor
                .filter(idx_num, idx_str, &function::args(argc, argv))?;
            c.eof = c.cursor.eof();
            Ok(())
        })
    }
}

unsafe extern "C" fn x_next<T: VTab>(cursor: *mut ffi::sqlite3_vtab_cursor) -> c_int {
    // SAFETY: a live cursor of ours.
    unsafe {
        with_cursor::<T::Cursor>(cursor, |c| {
            c.eof = true;
            c.cursor.next()?;
            c.eof = c.cursor.eof();
            Ok(())
        })
    }
}

unsafe extern "C" fn x_eof<T: VTab>(cursor: *mut ffi::sqlite3_vtab_cursor) -> c_int {
    // Cannot panic: reads the flag kept by x_filter/x_next.
    // SAFETY: a live cursor of ours.
    c_int::from(unsafe { (*cursor.cast::<CursorHandle<T::Cursor>>()).eof })
}

unsafe extern "C" fn x_column<T: VTab>(
    cursor: *mut ffi::sqlite3_vtab_cursor,
    ctx: *mut ffi::sqlite3_context,
    column: c_int,
) -> c_int {
    // SAFETY: a live cursor of ours; ctx is the live result context of this call.
    unsafe {
        with_cursor::<T::Cursor>(cursor, |c| {
            c.cursor.column(&mut Context::from_raw(ctx), column)
        })
    }
}

unsafe extern "C" fn x_rowid<T: VTab>(
    cursor: *mut ffi::sqlite3_vtab_cursor,
    p_rowid: *mut ffi::sqlite3_int64,
) -> c_int {
    // SAFETY: a live cursor of ours; p_rowid is SQLite's out-parameter.
    unsafe {
        with_cursor::<T::Cursor>(cursor, |c| {
            let rowid = c.cursor.rowid()?;
            *p_rowid = rowid;
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eq(column: c_int) -> IndexConstraint {
        IndexConstraint {
            column,
            op: ConstraintOp::Eq,
            usable: true,
        }
    }

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("p{i}")).collect()
    }

    #[test]
    fn a_parameter_plan_passes_each_parameter_once_in_column_order() {
        // Parameters 0..3, then a real column 3 (left to SQLite).
        let constraints = [
            eq(2),
            eq(3),
            eq(0),
            eq(2),
            IndexConstraint {
                column: 1,
                op: ConstraintOp::Limit,
                usable: true,
            },
        ];
        let plan = ParameterPlan::choose(&names(3), &constraints).expect("plan");
        assert_eq!(plan.idx_num, 0b101);
        assert_eq!(
            plan.arguments,
            [(2, 1), (0, 2)],
            "parameter 0 first, then 2 (once)"
        );
        assert!(parameter_passed(plan.idx_num, 0) && parameter_passed(plan.idx_num, 2));
        assert!(!parameter_passed(plan.idx_num, 1) && !parameter_passed(plan.idx_num, 40));
        let none = ParameterPlan::choose(&names(3), &[eq(5)]).expect("plan");
        assert_eq!((none.idx_num, none.arguments.len()), (0, 0));
        assert!(
            none.estimate > plan.estimate,
            "passing parameters makes a plan cheaper"
        );
    }

    #[test]
    fn a_parameter_plan_refuses_other_operators_and_unusable_parameters() {
        let gt = IndexConstraint {
            column: 1,
            op: ConstraintOp::Gt,
            usable: true,
        };
        let err = ParameterPlan::choose(&names(2), &[gt]).expect_err("> on a parameter");
        assert_eq!(err.code, ffi::SQLITE_ERROR);
        assert!(err
            .message
            .contains("parameter \"p1\" can only be constrained by the '=' operator"));
        let later = IndexConstraint {
            column: 0,
            op: ConstraintOp::Eq,
            usable: false,
        };
        let err = ParameterPlan::choose(&names(2), &[later]).expect_err("unusable");
        assert_eq!(err.code, ffi::SQLITE_CONSTRAINT);
        // On a real column both are SQLite's business.
        assert!(ParameterPlan::choose(
            &names(1),
            &[
                gt,
                IndexConstraint {
                    usable: false,
                    ..eq(1)
                }
            ]
        )
        .is_ok());
    }
    use crate::{ColumnType, OpenFlags, Statement};
    use std::{cell::RefCell, rc::Rc};

    fn memory() -> Connection {
        Connection::open(":memory:", OpenFlags::default(), None).expect("open")
    }

    fn exec(conn: &Connection, sql: &str) -> Result<()> {
        conn.exec_each(sql, |_| Ok(())).map_err(|e| match e {
            crate::ExecAbort::Sqlite(e) => e,
            crate::ExecAbort::Caller => Error::new(ffi::SQLITE_ERROR, "aborted"),
        })
    }

    fn prepare(conn: &Connection, sql: &str) -> Result<Statement> {
        let (stmt, _) = conn.prepare(sql, false)?;
        Ok(stmt.expect("a statement"))
    }

    /// Every row's columns rendered as text (NULL as "NULL").
    fn rows(conn: &Connection, sql: &str) -> Result<Vec<Vec<String>>> {
        let mut stmt = prepare(conn, sql)?;
        let mut out = Vec::new();
        while stmt.step()? {
            out.push(
                (0..stmt.column_count())
                    .map(|i| match stmt.column_type(i) {
                        ColumnType::Null => "NULL".to_string(),
                        _ => String::from_utf8_lossy(stmt.column_text(i)).into_owned(),
                    })
                    .collect(),
            );
        }
        Ok(out)
    }

    fn ints(conn: &Connection, sql: &str) -> Result<Vec<i64>> {
        let mut stmt = prepare(conn, sql)?;
        let mut out = Vec::new();
        while stmt.step()? {
            out.push(stmt.column_int64(0));
        }
        Ok(out)
    }

    // --- series(start, stop): an eponymous table-valued function --------------------

    /// What the planner asked of the series table, for the tests to look at.
    #[derive(Default)]
    struct Seen {
        plans: Vec<Vec<IndexConstraint>>,
        filters: Vec<(c_int, Option<String>, Vec<i64>)>,
    }

    struct Series {
        seen: Rc<RefCell<Seen>>,
    }
    struct SeriesTable {
        seen: Rc<RefCell<Seen>>,
    }
    struct SeriesCursor {
        seen: Rc<RefCell<Seen>>,
        start: i64,
        stop: i64,
        value: i64,
    }

    const VALUE: c_int = 0;
    const START: c_int = 1;
    const STOP: c_int = 2;

    impl Module for Series {
        type Table = SeriesTable;
        fn connect(&self, db: &mut VTabConnection<'_>, args: &ModuleArgs) -> Result<SeriesTable> {
            assert!(
                !args.create,
                "an eponymous table is connected, never created"
            );
            db.declare("CREATE TABLE x(value, start HIDDEN, stop HIDDEN)")?;
            Ok(SeriesTable {
                seen: self.seen.clone(),
            })
        }
    }

    impl VTab for SeriesTable {
        type Cursor = SeriesCursor;
        /// `start` and `stop` are routed to argv 1 and 2 whatever order SQLite lists
        /// them in; idxNum has bit 1 for start, bit 2 for stop; a missing one defaults.
        fn best_index(&self, info: &mut IndexInfo<'_>) -> Result<()> {
            self.seen
                .borrow_mut()
                .plans
                .push(info.constraints().collect());
            let mut slots = [None, None];
            let constraints: Vec<_> = info.constraints().collect();
            for (i, c) in constraints.iter().enumerate() {
                if c.column != START && c.column != STOP {
                    continue;
                }
                if c.op != ConstraintOp::Eq {
                    return Err(Error::new(ffi::SQLITE_ERROR, "series bounds take '=' only"));
                }
                if !c.usable {
                    return Err(unusable_plan());
                }
                slots[(c.column - START) as usize].get_or_insert(i);
            }
            let mut argc = 0;
            let mut idx_num = 0;
            for (bit, slot) in slots.iter().enumerate() {
                if let Some(i) = *slot {
                    argc += 1;
                    idx_num |= 1 << bit;
                    info.set_argv_index(i, argc);
                    info.set_omit(i, true);
                }
            }
            info.set_idx_num(idx_num);
            info.set_idx_str(&format!("args={argc}"))?;
            info.set_estimated_cost(1000.0 / f64::from(argc + 1));
            info.set_estimated_rows(100);
            Ok(())
        }
        fn open(&self) -> Result<SeriesCursor> {
            Ok(SeriesCursor {
                seen: self.seen.clone(),
                start: 0,
                stop: 0,
                value: 0,
            })
        }
    }

    impl VTabCursor for SeriesCursor {
        fn filter(
            &mut self,
            idx_num: c_int,
            idx_str: Option<&str>,
            args: &[ValueRef<'_>],
        ) -> Result<()> {
            let values: Vec<i64> = args.iter().map(ValueRef::int64).collect();
            self.seen.borrow_mut().filters.push((
                idx_num,
                idx_str.map(str::to_owned),
                values.clone(),
            ));
            let mut values = values.into_iter();
            self.start = if idx_num & 1 != 0 {
                values.next().unwrap_or(0)
            } else {
                1
            };
            self.stop = if idx_num & 2 != 0 {
                values.next().unwrap_or(0)
            } else {
                3
            };
            self.value = self.start;
            Ok(())
        }
        fn next(&mut self) -> Result<()> {
            self.value += 1;
            Ok(())
        }
        fn eof(&self) -> bool {
            self.value > self.stop
        }
        fn column(&self, ctx: &mut Context, column: c_int) -> Result<()> {
            ctx.set_int64(match column {
                VALUE => self.value,
                START => self.start,
                _ => self.stop,
            });
            Ok(())
        }
        fn rowid(&self) -> Result<i64> {
            Ok(self.value - self.start + 1)
        }
    }

    fn series(conn: &Connection) -> Rc<RefCell<Seen>> {
        let seen = Rc::new(RefCell::new(Seen::default()));
        create_module(
            conn,
            "series",
            ModuleKind::EponymousOnly,
            Series { seen: seen.clone() },
        )
        .expect("register series");
        seen
    }

    #[test]
    fn an_eponymous_table_valued_function() {
        let conn = memory();
        let seen = series(&conn);
        assert_eq!(
            ints(&conn, "SELECT value FROM series(4, 6)").unwrap(),
            [4, 5, 6]
        );
        assert_eq!(ints(&conn, "SELECT value FROM series").unwrap(), [1, 2, 3]);
        assert_eq!(ints(&conn, "SELECT value FROM series(2)").unwrap(), [2, 3]);
        assert_eq!(
            ints(&conn, "SELECT rowid FROM series(10, 12) WHERE value > 10").unwrap(),
            [2, 3]
        );
        assert_eq!(
            rows(&conn, "SELECT start, stop, value FROM series(7, 7)").unwrap(),
            [["7", "7", "7"]]
        );
        let last = seen.borrow().filters.last().cloned();
        assert_eq!(last, Some((3, Some("args=2".to_string()), vec![7, 7])));
        // Only the eponymous table exists: the module can't make others.
        let err = exec(&conn, "CREATE VIRTUAL TABLE s USING series").unwrap_err();
        assert_eq!(err.message, "no such module: series");
    }

    #[test]
    fn best_index_routes_constraints_in_any_order() {
        let conn = memory();
        let seen = series(&conn);
        // stop is listed first by SQLite here; it still arrives as argv[1].
        assert_eq!(
            ints(
                &conn,
                "SELECT value FROM series WHERE stop = 5 AND start = 3"
            )
            .unwrap(),
            [3, 4, 5]
        );
        let cols: Vec<c_int> = seen
            .borrow()
            .plans
            .last()
            .unwrap()
            .iter()
            .map(|c| c.column)
            .collect();
        assert_eq!(cols, [STOP, START]);
        assert_eq!(seen.borrow().filters.last().unwrap().2, [3, 5]);
        // An operator the table refuses fails the prepare with the table's message.
        let err = prepare(&conn, "SELECT value FROM series WHERE start > 1").unwrap_err();
        assert_eq!(err.message, "series bounds take '=' only");
        // Bounds that come from another table: SQLite must find the plan where they are
        // usable (the unusable one is rejected with SQLITE_CONSTRAINT).
        exec(
            &conn,
            "CREATE TABLE b(lo, hi); INSERT INTO b VALUES (1, 2), (10, 11)",
        )
        .unwrap();
        assert_eq!(
            ints(
                &conn,
                "SELECT value FROM b, series WHERE start = b.lo AND stop = b.hi ORDER BY value"
            )
            .unwrap(),
            [1, 2, 10, 11]
        );
        let unusable = seen
            .borrow()
            .plans
            .iter()
            .any(|p| p.iter().any(|c| c.column == START && !c.usable));
        assert!(
            unusable,
            "the planner also tried the plan without b's values"
        );
        // LIMIT and OFFSET are offered as constraints too (and handled by SQLite).
        assert_eq!(
            ints(&conn, "SELECT value FROM series(1, 100) LIMIT 2 OFFSET 5").unwrap(),
            [6, 7]
        );
    }

    // --- a module for CREATE VIRTUAL TABLE ------------------------------------------

    /// `CREATE VIRTUAL TABLE t USING echo(a, b, …)`: one column `arg`, one row per module
    /// argument; records every connect.
    struct Echo {
        connects: Rc<RefCell<Vec<ModuleArgs>>>,
    }
    struct EchoTable {
        args: Rc<Vec<String>>,
    }
    struct EchoCursor {
        args: Rc<Vec<String>>,
        at: usize,
    }

    impl Module for Echo {
        type Table = EchoTable;
        fn connect(&self, db: &mut VTabConnection<'_>, args: &ModuleArgs) -> Result<EchoTable> {
            self.connects.borrow_mut().push(args.clone());
            if args.args.first().map(String::as_str) == Some("fail") {
                return Err(Error::new(ffi::SQLITE_ERROR, "echo refuses to fail"));
            }
            db.declare("CREATE TABLE x(arg TEXT)")?;
            Ok(EchoTable {
                args: Rc::new(args.args.clone()),
            })
        }
    }

    impl VTab for EchoTable {
        type Cursor = EchoCursor;
        fn best_index(&self, info: &mut IndexInfo<'_>) -> Result<()> {
            info.set_estimated_cost(self.args.len() as f64);
            Ok(())
        }
        fn open(&self) -> Result<EchoCursor> {
            Ok(EchoCursor {
                args: self.args.clone(),
                at: 0,
            })
        }
    }

    impl VTabCursor for EchoCursor {
        fn filter(&mut self, _: c_int, _: Option<&str>, _: &[ValueRef<'_>]) -> Result<()> {
            self.at = 0;
            Ok(())
        }
        fn next(&mut self) -> Result<()> {
            self.at += 1;
            Ok(())
        }
        fn eof(&self) -> bool {
            self.at >= self.args.len()
        }
        fn column(&self, ctx: &mut Context, _: c_int) -> Result<()> {
            match self.args.get(self.at) {
                Some(a) => ctx.set_text(a.as_bytes()),
                None => ctx.set_null(),
            }
            Ok(())
        }
        fn rowid(&self) -> Result<i64> {
            Ok(self.at as i64 + 1)
        }
    }

    #[test]
    fn a_module_for_create_virtual_table() {
        let conn = memory();
        let connects = Rc::new(RefCell::new(Vec::new()));
        create_module(
            &conn,
            "echo",
            ModuleKind::CreateVirtualTable,
            Echo {
                connects: connects.clone(),
            },
        )
        .unwrap();
        assert!(connects.borrow().is_empty(), "nothing connects before use");
        exec(
            &conn,
            "CREATE VIRTUAL TABLE t USING echo(hello world, 'q', 2)",
        )
        .unwrap();
        exec(&conn, "CREATE VIRTUAL TABLE temp.u USING echo").unwrap();
        assert_eq!(
            *connects.borrow(),
            [
                ModuleArgs {
                    module: "echo".into(),
                    database: "main".into(),
                    table: "t".into(),
                    args: vec!["hello world".into(), "'q'".into(), "2".into()],
                    create: true,
                },
                ModuleArgs {
                    module: "echo".into(),
                    database: "temp".into(),
                    table: "u".into(),
                    args: vec![],
                    create: true,
                },
            ]
        );
        assert_eq!(
            rows(&conn, "SELECT rowid, arg FROM t").unwrap(),
            [["1", "hello world"], ["2", "'q'"], ["3", "2"]]
        );
        assert!(rows(&conn, "SELECT arg FROM u").unwrap().is_empty());
        // The module's name is not a table.
        let err = prepare(&conn, "SELECT * FROM echo").unwrap_err();
        assert_eq!(err.message, "no such table: echo");
        // A failing connect fails the CREATE with its message, and makes no table.
        let err = exec(&conn, "CREATE VIRTUAL TABLE v USING echo(fail)").unwrap_err();
        assert_eq!(err.message, "echo refuses to fail");
        assert_eq!(
            prepare(&conn, "SELECT * FROM v").unwrap_err().message,
            "no such table: v"
        );
        // DROP TABLE destroys it.
        exec(&conn, "DROP TABLE t").unwrap();
        assert!(prepare(&conn, "SELECT * FROM t").is_err());
    }

    #[test]
    fn the_module_is_dropped_when_replaced_or_closed() {
        struct Flag(Rc<RefCell<u32>>);
        impl Drop for Flag {
            fn drop(&mut self) {
                *self.0.borrow_mut() += 1;
            }
        }
        struct Dropping {
            _flag: Flag,
            inner: Series,
        }
        impl Module for Dropping {
            type Table = SeriesTable;
            fn connect(&self, db: &mut VTabConnection<'_>, a: &ModuleArgs) -> Result<SeriesTable> {
                self.inner.connect(db, a)
            }
        }
        let drops = Rc::new(RefCell::new(0));
        let conn = memory();
        let make = || Dropping {
            _flag: Flag(drops.clone()),
            inner: Series {
                seen: Rc::default(),
            },
        };
        create_module(&conn, "s", ModuleKind::EponymousOnly, make()).unwrap();
        assert_eq!(ints(&conn, "SELECT value FROM s(1, 1)").unwrap(), [1]);
        create_module(&conn, "s", ModuleKind::EponymousOnly, make()).unwrap();
        // SQLite disconnects the old eponymous table at its next opportunity (the next
        // statement), and the old module goes with it.
        assert_eq!(ints(&conn, "SELECT value FROM s(2, 2)").unwrap(), [2]);
        assert_eq!(*drops.borrow(), 1, "the replaced module was dropped");
        drop(conn);
        assert_eq!(
            *drops.borrow(),
            2,
            "closing the connection drops the module"
        );
    }

    // --- panics and errors ----------------------------------------------------------

    /// A one-column table whose cursor panics (or fails) in the callback named by the
    /// module argument.
    struct Faulty;
    struct FaultyTable {
        fault: String,
    }
    struct FaultyCursor {
        fault: String,
        row: i64,
    }

    impl Module for Faulty {
        type Table = FaultyTable;
        fn connect(&self, db: &mut VTabConnection<'_>, args: &ModuleArgs) -> Result<FaultyTable> {
            let fault = args.args.first().cloned().unwrap_or_default();
            if fault == "connect" {
                panic!("connect");
            }
            db.declare("CREATE TABLE x(v)")?;
            Ok(FaultyTable { fault })
        }
    }

    impl VTab for FaultyTable {
        type Cursor = FaultyCursor;
        fn best_index(&self, _: &mut IndexInfo<'_>) -> Result<()> {
            if self.fault == "best_index" {
                panic!("best_index");
            }
            Ok(())
        }
        fn open(&self) -> Result<FaultyCursor> {
            if self.fault == "open" {
                panic!("open");
            }
            Ok(FaultyCursor {
                fault: self.fault.clone(),
                row: 0,
            })
        }
    }

    impl VTabCursor for FaultyCursor {
        fn filter(&mut self, _: c_int, _: Option<&str>, _: &[ValueRef<'_>]) -> Result<()> {
            if self.fault == "filter" {
                panic!("filter");
            }
            self.row = 1;
            Ok(())
        }
        fn next(&mut self) -> Result<()> {
            match self.fault.as_str() {
                "next" => panic!("next"),
                "next_error" => Err(Error::new(ffi::SQLITE_ABORT, "stopped at row 1")),
                _ => {
                    self.row += 1;
                    Ok(())
                }
            }
        }
        fn eof(&self) -> bool {
            if self.fault == "eof" {
                panic!("eof");
            }
            self.row > 2
        }
        fn column(&self, ctx: &mut Context, _: c_int) -> Result<()> {
            if self.fault == "column" {
                panic!("column");
            }
            ctx.set_int64(self.row);
            Ok(())
        }
        fn rowid(&self) -> Result<i64> {
            if self.fault == "rowid" {
                panic!("rowid");
            }
            Ok(self.row)
        }
    }

    #[test]
    fn a_panicking_callback_is_an_sql_error_not_an_abort() {
        let conn = memory();
        create_module(&conn, "faulty", ModuleKind::CreateVirtualTable, Faulty).unwrap();
        let err = exec(
            &conn,
            "CREATE VIRTUAL TABLE t_connect USING faulty(connect)",
        )
        .unwrap_err();
        assert_eq!(err.message, PANIC_MESSAGE);
        for fault in [
            "best_index",
            "open",
            "filter",
            "next",
            "eof",
            "column",
            "rowid",
        ] {
            exec(
                &conn,
                &format!("CREATE VIRTUAL TABLE t_{fault} USING faulty({fault})"),
            )
            .unwrap();
            let err = rows(&conn, &format!("SELECT rowid, v FROM t_{fault}")).unwrap_err();
            assert_eq!(err.message, PANIC_MESSAGE, "{fault}");
            assert_eq!(err.code, ffi::SQLITE_ERROR, "{fault}");
        }
        exec(&conn, "CREATE VIRTUAL TABLE ok USING faulty(none)").unwrap();
        assert_eq!(
            ints(&conn, "SELECT v FROM ok").unwrap(),
            [1, 2],
            "still usable"
        );
    }

    #[test]
    fn an_error_keeps_its_code_and_message() {
        let conn = memory();
        create_module(&conn, "faulty", ModuleKind::CreateVirtualTable, Faulty).unwrap();
        exec(&conn, "CREATE VIRTUAL TABLE t USING faulty(next_error)").unwrap();
        let err = ints(&conn, "SELECT v FROM t").unwrap_err();
        assert_eq!(err.code, ffi::SQLITE_ABORT);
        assert_eq!(err.message, "stopped at row 1");
    }

    #[test]
    fn constraint_ops_are_decoded() {
        assert_eq!(ConstraintOp::from_raw(2), ConstraintOp::Eq);
        assert_eq!(ConstraintOp::from_raw(73), ConstraintOp::Limit);
        assert_eq!(ConstraintOp::from_raw(151), ConstraintOp::Function(151));
        assert_eq!(ConstraintOp::from_raw(99), ConstraintOp::Other(99));
    }
}
