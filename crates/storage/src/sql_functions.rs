//! Evolu's storage as SQL functions, registered on every connection:
//!
//! | SQL | returns |
//! |---|---|
//! | `evolu_skiplist_insert(ownerId, t [, level [, strategy]])` | 1 inserted, 0 already stored |
//! | `evolu_skiplist_size(ownerId)` | the owner's number of timestamps |
//! | `evolu_skiplist_at(ownerId, index)` | the 16-byte timestamp of 0-based rank `index` |
//! | `evolu_skiplist_lower_bound(ownerId, begin, end, t)` | Evolu's `findLowerBound` (`t` NULL: +∞) |
//! | `evolu_skiplist_fingerprint(ownerId, begin, end)` | the 12-byte fingerprint of ranks `begin..end` |
//! | `evolu_fingerprint_ranges(ownerId, bucketsJson)` | table: `upper_bound, fingerprint` per bucket |
//! | `evolu_skiplist_stored(ownerId, timestamps)` | one byte per 16-byte timestamp of `timestamps`: 1 stored, 0 not |
//! | `evolu_relay_write(ownerId, messages)` | the bytes of the changes it wrote into `evolu_message` |
//!
//! The last two are a relay's batch in one call each (`batch.rs`, which describes the
//! encoding of `messages`): `evolu_relay_write` inserts each message's timestamp as
//! `evolu_skiplist_insert` does, then its change into Evolu's `evolu_message` (`on conflict
//! do nothing`), in order. Its writes are many statements: run it inside a transaction,
//! and roll that back if it fails (outside one, SQLite rolls the implicit transaction
//! back).
//!
//! `level` NULL or omitted draws one by Evolu's rule from the OS random generator;
//! `strategy` ('append', 'prepend', 'insert' or NULL) is only a hint. Numbers may come as
//! INTEGER or as integral REAL (JavaScript numbers bind as REAL). A JavaScript `NaN`
//! reaches SQL as NULL; bound directly as an argument it is refused, not taken for a NULL
//! (which would draw a random level or mean the infinite bound). Bucket boundaries are
//! read from the JSON text by their exact decimal value. A timestamp to insert whose
//! millis is 2^48 − 1 (reserved by Evolu for "infinity") is refused. Every failure is an
//! SQLite error whose message names the function and, for a bad argument, the argument,
//! but never an owner id, timestamp or other value; a failing store statement keeps its
//! own (extended) result code.
//!
//! The `evolu_timestamp` rows are the functions' own: a trigger that changes or drops
//! their writes (a `RAISE(IGNORE)` trigger would leave a half-applied insert reported as
//! success) or another writer of the table is not supported.
//!
//! # Flags
//!
//! None is `SQLITE_DETERMINISTIC`: their results depend on the table, not only on their
//! arguments, so SQLite must not factor calls out of a query or use them in indexes.
//! The readers are `SQLITE_INNOCUOUS`: they read only the `evolu_timestamp` table, which
//! any view could read directly, so a schema object may use them even with
//! `trusted_schema` off. `evolu_skiplist_insert` writes, so it is `SQLITE_DIRECTONLY`:
//! a view, trigger or CHECK constraint of a database file cannot make reading it write
//! skiplist rows; applications call it from their own top-level SQL.
//! The `evolu_fingerprint_ranges` table is innocuous for the same reason as the readers.

use super::sqlite_store::{statement_cache, SqliteStore};
use super::{
    args, batch, fingerprint_ranges, random_level, ArgumentError, Error, OwnerId, SqlNumber,
    Strategy, Timestamp,
};
use cipherlite_sqlite::{
    self as sqlite, ffi,
    function::{self, Context, FunctionFlags, ValueRef},
    vtab::{self, ConstraintOp, IndexInfo, Module, ModuleArgs, ModuleKind, VTab, VTabConnection},
    ColumnType, Connection, StatementCache,
};

const INSERT: &str = "evolu_skiplist_insert";
const SIZE: &str = "evolu_skiplist_size";
const AT: &str = "evolu_skiplist_at";
const LOWER_BOUND: &str = "evolu_skiplist_lower_bound";
const FINGERPRINT: &str = "evolu_skiplist_fingerprint";
const RANGES: &str = "evolu_fingerprint_ranges";
const STORED: &str = "evolu_skiplist_stored";
const RELAY_WRITE: &str = "evolu_relay_write";

/// Registers the `evolu_*` functions and the `evolu_fingerprint_ranges` table on `conn`.
/// They share one statement cache, prepared lazily and finalized when `conn` closes.
pub fn register_sql_functions(conn: &Connection) -> sqlite::Result<()> {
    let cache = statement_cache(conn);
    let reader = FunctionFlags {
        innocuous: true,
        ..FunctionFlags::default()
    };
    let writer = FunctionFlags {
        direct_only: true,
        ..FunctionFlags::default()
    };
    for n_args in 2..=4 {
        scalar(conn, &cache, INSERT, n_args, writer, insert)?;
    }
    scalar(conn, &cache, SIZE, 1, reader, size)?;
    scalar(conn, &cache, AT, 2, reader, at)?;
    scalar(conn, &cache, LOWER_BOUND, 4, reader, lower_bound)?;
    scalar(conn, &cache, FINGERPRINT, 3, reader, fingerprint)?;
    scalar(conn, &cache, STORED, 2, reader, stored)?;
    scalar(conn, &cache, RELAY_WRITE, 2, writer, relay_write)?;
    vtab::create_module(
        conn,
        RANGES,
        ModuleKind::EponymousOnly,
        RangesModule { cache },
    )
}

/// What a function returns.
enum Output {
    Integer(i64),
    Blob(Vec<u8>),
}

type Body = fn(&StatementCache, &[ValueRef<'_>]) -> sqlite::Result<Output>;

fn scalar(
    conn: &Connection,
    cache: &StatementCache,
    name: &'static str,
    n_args: i32,
    flags: FunctionFlags,
    body: Body,
) -> sqlite::Result<()> {
    let cache = cache.clone();
    function::create_scalar(conn, name, n_args, flags, move |ctx, args| {
        set_result(ctx, body(&cache, args));
    })
}

fn set_result(ctx: &mut Context, result: sqlite::Result<Output>) {
    match result {
        Ok(Output::Integer(v)) => ctx.set_int64(v),
        Ok(Output::Blob(v)) => ctx.set_blob(&v),
        Err(e) => {
            ctx.set_error(&e.message);
            // After the message: the code keeps it and replaces SQLITE_ERROR.
            ctx.set_error_code(e.code);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Arguments

/// The error for argument `position` (1-based) of `func`, named `name`.
fn bad_argument(func: &str, position: usize, name: &str, error: ArgumentError) -> sqlite::Error {
    let must = match error {
        ArgumentError::OwnerId | ArgumentError::Timestamp => "a 16-byte blob",
        ArgumentError::ReservedTimestamp => {
            "a timestamp whose millis is below 2^48 - 1 (the reserved value)"
        }
        ArgumentError::Level => "an integer from 1 to 10, or NULL to draw one",
        ArgumentError::Rank => "a non-negative integer",
        ArgumentError::Strategy => "'append', 'prepend', 'insert' or NULL",
        ArgumentError::BucketsJson => "a JSON array of non-negative integers",
        ArgumentError::Timestamps => "a blob of 16-byte timestamps end to end",
        ArgumentError::Messages => "a blob of encoded messages",
    };
    sqlite::Error::new(
        ffi::SQLITE_ERROR,
        format!("{func}: argument {position} ({name}) must be {must}"),
    )
}

/// One function call's arguments, checked by position.
struct Args<'a, 'v> {
    func: &'static str,
    values: &'a [ValueRef<'v>],
}

impl<'v> Args<'_, 'v> {
    fn value(&self, position: usize) -> Option<&ValueRef<'v>> {
        self.values.get(position - 1)
    }

    fn fail(&self, position: usize, name: &str, error: ArgumentError) -> sqlite::Error {
        bad_argument(self.func, position, name, error)
    }

    /// Whether the argument is NULL (or missing), refusing the NULL a bound NaN became:
    /// where NULL means something, a NaN must not silently mean it too.
    fn is_null(&self, position: usize, name: &str, error: ArgumentError) -> sqlite::Result<bool> {
        match self.value(position) {
            None => Ok(true),
            Some(v) if v.value_type() != ColumnType::Null => Ok(false),
            Some(v) if v.is_nan() => {
                let e = self.fail(position, name, error);
                Err(sqlite::Error::new(
                    e.code,
                    format!("{}, not NaN", e.message),
                ))
            }
            Some(_) => Ok(true),
        }
    }

    /// A BLOB (only a BLOB: TEXT of the right length is refused too).
    fn blob(&self, position: usize, name: &str, error: ArgumentError) -> sqlite::Result<&'v [u8]> {
        match self.value(position) {
            Some(v) if v.value_type() == ColumnType::Blob => Ok(v.blob()),
            _ => Err(self.fail(position, name, error)),
        }
    }

    fn owner(&self, position: usize) -> sqlite::Result<OwnerId> {
        let bytes = self.blob(position, "ownerId", ArgumentError::OwnerId)?;
        args::owner_arg(bytes).map_err(|e| self.fail(position, "ownerId", e))
    }

    fn timestamp(&self, position: usize) -> sqlite::Result<Timestamp> {
        let bytes = self.blob(position, "t", ArgumentError::Timestamp)?;
        args::timestamp_arg(bytes).map_err(|e| self.fail(position, "t", e))
    }

    /// An INTEGER or REAL; `None` for NULL or a missing argument.
    fn number(
        &self,
        position: usize,
        name: &str,
        error: ArgumentError,
    ) -> sqlite::Result<Option<SqlNumber>> {
        if self.is_null(position, name, error)? {
            return Ok(None);
        }
        let Some(v) = self.value(position) else {
            return Ok(None);
        };
        match v.value_type() {
            ColumnType::Null => Ok(None),
            ColumnType::Integer => Ok(Some(SqlNumber::Integer(v.int64()))),
            ColumnType::Float => Ok(Some(SqlNumber::Real(v.double()))),
            ColumnType::Text | ColumnType::Blob => Err(self.fail(position, name, error)),
        }
    }

    fn rank(&self, position: usize, name: &str) -> sqlite::Result<u64> {
        self.number(position, name, ArgumentError::Rank)?
            .ok_or_else(|| self.fail(position, name, ArgumentError::Rank))
            .and_then(|n| args::rank_arg(n).map_err(|e| self.fail(position, name, e)))
    }
}

/// A storage error as an SQLite error of `func`. A failing store statement keeps its
/// code; everything else is `SQLITE_ERROR`.
fn storage_error(func: &str, error: Error<sqlite::Error>) -> sqlite::Error {
    match error {
        Error::Store(e) => sqlite::Error::new(e.code, format!("{func}: {}", e.message)),
        other => sqlite::Error::new(ffi::SQLITE_ERROR, format!("{func}: {other}")),
    }
}

fn count(func: &str, value: u64) -> sqlite::Result<Output> {
    i64::try_from(value)
        .map(Output::Integer)
        .map_err(|_| sqlite::Error::new(ffi::SQLITE_ERROR, format!("{func}: result too large")))
}

// ---------------------------------------------------------------------------------------
// The functions

fn insert(cache: &StatementCache, values: &[ValueRef<'_>]) -> sqlite::Result<Output> {
    let args = Args {
        func: INSERT,
        values,
    };
    let owner = args.owner(1)?;
    let t = args.timestamp(2)?;
    if super::is_reserved_timestamp(&t) {
        return Err(args.fail(2, "t", ArgumentError::ReservedTimestamp));
    }
    let level = match args.number(3, "level", ArgumentError::Level)? {
        Some(n) => args::level_arg(n).map_err(|e| args.fail(3, "level", e))?,
        None => random_level().map_err(|_| {
            sqlite::Error::new(
                ffi::SQLITE_ERROR,
                format!("{INSERT}: the operating system's random generator failed"),
            )
        })?,
    };
    let strategy: Option<Strategy> = match args.value(4) {
        None => None,
        Some(_) if args.is_null(4, "strategy", ArgumentError::Strategy)? => None,
        Some(v) => match v.value_type() {
            ColumnType::Null => None,
            ColumnType::Text => Some(
                std::str::from_utf8(v.text())
                    .map_err(|_| ArgumentError::Strategy)
                    .and_then(args::strategy_arg)
                    .map_err(|e| args.fail(4, "strategy", e))?,
            ),
            _ => return Err(args.fail(4, "strategy", ArgumentError::Strategy)),
        },
    };
    let mut store = SqliteStore::new(cache);
    let inserted = super::insert(&mut store, &owner, &t, level, strategy)
        .map_err(|e| storage_error(INSERT, e))?;
    Ok(Output::Integer(i64::from(inserted)))
}

fn size(cache: &StatementCache, values: &[ValueRef<'_>]) -> sqlite::Result<Output> {
    let args = Args { func: SIZE, values };
    let owner = args.owner(1)?;
    let size =
        super::size(&mut SqliteStore::new(cache), &owner).map_err(|e| storage_error(SIZE, e))?;
    count(SIZE, size)
}

fn at(cache: &StatementCache, values: &[ValueRef<'_>]) -> sqlite::Result<Output> {
    let args = Args { func: AT, values };
    let owner = args.owner(1)?;
    let index = args.rank(2, "index")?;
    let t =
        super::at(&mut SqliteStore::new(cache), &owner, index).map_err(|e| storage_error(AT, e))?;
    Ok(Output::Blob(t.to_vec()))
}

fn lower_bound(cache: &StatementCache, values: &[ValueRef<'_>]) -> sqlite::Result<Output> {
    let args = Args {
        func: LOWER_BOUND,
        values,
    };
    let owner = args.owner(1)?;
    let begin = args.rank(2, "begin")?;
    let end = args.rank(3, "end")?;
    // NULL is the infinite upper bound (so is the all-0xFF timestamp); a NaN is neither.
    let bound = if args.is_null(4, "t", ArgumentError::Timestamp)? {
        None
    } else {
        Some(args.timestamp(4)?)
    };
    let rank = super::lower_bound(
        &mut SqliteStore::new(cache),
        &owner,
        begin,
        end,
        bound.as_ref(),
    )
    .map_err(|e| storage_error(LOWER_BOUND, e))?;
    count(LOWER_BOUND, rank)
}

fn fingerprint(cache: &StatementCache, values: &[ValueRef<'_>]) -> sqlite::Result<Output> {
    let args = Args {
        func: FINGERPRINT,
        values,
    };
    let owner = args.owner(1)?;
    let begin = args.rank(2, "begin")?;
    let end = args.rank(3, "end")?;
    let fingerprint = super::fingerprint(&mut SqliteStore::new(cache), &owner, begin, end)
        .map_err(|e| storage_error(FINGERPRINT, e))?;
    Ok(Output::Blob(fingerprint.to_vec()))
}

fn stored(cache: &StatementCache, values: &[ValueRef<'_>]) -> sqlite::Result<Output> {
    let args = Args {
        func: STORED,
        values,
    };
    let owner = args.owner(1)?;
    let bytes = args.blob(2, "timestamps", ArgumentError::Timestamps)?;
    let timestamps = batch::decode_timestamps(bytes).map_err(|e| args.fail(2, "timestamps", e))?;
    let stored = batch::stored(&mut SqliteStore::new(cache), &owner, &timestamps)
        .map_err(|e| storage_error(STORED, Error::Store(e)))?;
    Ok(Output::Blob(stored))
}

fn relay_write(cache: &StatementCache, values: &[ValueRef<'_>]) -> sqlite::Result<Output> {
    let args = Args {
        func: RELAY_WRITE,
        values,
    };
    let owner = args.owner(1)?;
    let bytes = args.blob(2, "messages", ArgumentError::Messages)?;
    let messages = batch::decode_messages(bytes).map_err(|e| args.fail(2, "messages", e))?;
    if messages.iter().any(|m| super::is_reserved_timestamp(&m.t)) {
        return Err(args.fail(2, "messages", ArgumentError::ReservedTimestamp));
    }
    let mut sqlite_store = SqliteStore::new(cache);
    let mut store = batch::BatchStore::new(&mut sqlite_store, owner);
    let mut written: u64 = 0;
    for message in &messages {
        let level = match message.level {
            Some(level) => level,
            None => random_level().map_err(|_| {
                sqlite::Error::new(
                    ffi::SQLITE_ERROR,
                    format!("{RELAY_WRITE}: the operating system's random generator failed"),
                )
            })?,
        };
        super::insert(&mut store, &owner, &message.t, level, message.strategy)
            .map_err(|e| storage_error(RELAY_WRITE, e))?;
        let inserted = store
            .inner()
            .insert_message(&owner, &message.t, message.change)
            .map_err(|e| storage_error(RELAY_WRITE, Error::Store(e)))?;
        if inserted {
            // A change is at most 4 GiB (its length is a u32): no sum of them overflows.
            written += message.change.len() as u64;
        }
    }
    count(RELAY_WRITE, written)
}

// ---------------------------------------------------------------------------------------
// evolu_fingerprint_ranges(ownerId, bucketsJson)

// Columns in declaration order.
const UPPER_BOUND_COLUMN: i32 = 0;
const FINGERPRINT_COLUMN: i32 = 1;
const OWNER_COLUMN: i32 = 2;
const BUCKETS_COLUMN: i32 = 3;

struct RangesModule {
    cache: StatementCache,
}

struct RangesTable {
    cache: StatementCache,
}

struct RangesCursor {
    cache: StatementCache,
    owner: OwnerId,
    buckets: String,
    rows: Vec<super::FingerprintRange>,
    at: usize,
}

impl Module for RangesModule {
    type Table = RangesTable;

    fn connect(&self, db: &mut VTabConnection<'_>, _: &ModuleArgs) -> sqlite::Result<RangesTable> {
        db.declare(
            "CREATE TABLE x(upper_bound BLOB, fingerprint BLOB, ownerId HIDDEN, buckets HIDDEN)",
        )?;
        db.set_innocuous()?;
        Ok(RangesTable {
            cache: self.cache.clone(),
        })
    }
}

impl VTab for RangesTable {
    type Cursor = RangesCursor;

    fn best_index(&self, info: &mut IndexInfo<'_>) -> sqlite::Result<()> {
        // argv[0] = ownerId, argv[1] = buckets.
        let mut wanted = [None, None];
        for (i, c) in info.constraints().enumerate() {
            let slot = match c.column {
                OWNER_COLUMN => 0,
                BUCKETS_COLUMN => 1,
                _ => continue,
            };
            if c.op != ConstraintOp::Eq {
                continue;
            }
            if !c.usable {
                // Its value comes from a table joined later: try another order.
                return Err(vtab::unusable_plan());
            }
            wanted[slot] = Some(i);
        }
        let [Some(owner), Some(buckets)] = wanted else {
            return Err(sqlite::Error::new(
                ffi::SQLITE_ERROR,
                format!("{RANGES}(ownerId, buckets) needs both arguments"),
            ));
        };
        info.set_argv_index(owner, 1);
        info.set_omit(owner, true);
        info.set_argv_index(buckets, 2);
        info.set_omit(buckets, true);
        info.set_estimated_cost(100.0);
        info.set_estimated_rows(16);
        Ok(())
    }

    fn open(&self) -> sqlite::Result<RangesCursor> {
        Ok(RangesCursor {
            cache: self.cache.clone(),
            owner: [0; 16],
            buckets: String::new(),
            rows: Vec::new(),
            at: 0,
        })
    }
}

impl vtab::VTabCursor for RangesCursor {
    fn filter(&mut self, _: i32, _: Option<&str>, values: &[ValueRef<'_>]) -> sqlite::Result<()> {
        let args = Args {
            func: RANGES,
            values,
        };
        self.rows.clear();
        self.at = 0;
        self.owner = args.owner(1)?;
        let not_json = || args.fail(2, "buckets", ArgumentError::BucketsJson);
        let text = match args.value(2) {
            Some(v) if v.value_type() == ColumnType::Text => v.text(),
            _ => return Err(not_json()),
        };
        self.buckets = std::str::from_utf8(text)
            .map_err(|_| not_json())?
            .to_owned();
        let buckets = args::parse_buckets(&self.buckets).map_err(|e| args.fail(2, "buckets", e))?;
        self.rows = fingerprint_ranges(&mut SqliteStore::new(&self.cache), &self.owner, &buckets)
            .map_err(|e| storage_error(RANGES, e))?;
        Ok(())
    }

    fn next(&mut self) -> sqlite::Result<()> {
        self.at += 1;
        Ok(())
    }

    fn eof(&self) -> bool {
        self.at >= self.rows.len()
    }

    fn column(&self, ctx: &mut Context, column: i32) -> sqlite::Result<()> {
        let (upper_bound, fingerprint) = self
            .rows
            .get(self.at)
            .ok_or_else(|| sqlite::Error::new(ffi::SQLITE_MISUSE, "no current row"))?;
        match column {
            UPPER_BOUND_COLUMN => match upper_bound {
                Some(t) => ctx.set_blob(t),
                None => ctx.set_null(),
            },
            FINGERPRINT_COLUMN => ctx.set_blob(fingerprint),
            OWNER_COLUMN => ctx.set_blob(&self.owner),
            BUCKETS_COLUMN => ctx.set_text(self.buckets.as_bytes()),
            _ => ctx.set_null(),
        }
        Ok(())
    }

    fn rowid(&self) -> sqlite::Result<i64> {
        i64::try_from(self.at + 1).map_err(|_| sqlite::Error::from_code(ffi::SQLITE_RANGE))
    }
}
