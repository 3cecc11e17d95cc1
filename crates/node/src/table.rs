//! `db.table()`: virtual tables whose rows come from JS generators.
//!
//! lib/methods/table.js validates the definition and hands us a `connect` function:
//! SQLite's xCreate/xConnect call it with `(module, database, table, ...moduleArgs)` and
//! it returns `{ sql, start, parameters, safeIntegers, directOnly }`, where `sql`
//! declares the parameters as HIDDEN columns followed by the columns, and
//! `start(...parameterValues)` starts the user's generator and returns a `next()` that
//! gives one row array per call (parameter values first, then the columns) or
//! `undefined` at the end. A cursor pulls one row per xNext.
//!
//! JS exceptions (from the factory, the generator, or a row that doesn't validate) are
//! stashed (`CallbackEnv::stash`) and the SQLite call fails; the statement's caller then
//! rethrows the same value.

use super::{
    callbacks::{call, set_result_from_js, value_to_js, CallbackEnv, HandleScope, JsRef},
    database::Database,
    db_shared::DbShared,
    js::{self, check, JsAny, JsResult},
};
use cipherlite_sqlite::{
    ffi,
    function::{Context, ValueRef},
    vtab::{self, IndexInfo, Module, ModuleArgs, ModuleKind, VTab, VTabConnection, VTabCursor},
    ColumnType, Error, Result,
};
use napi::sys::{self, ValueType as T};
use napi_derive::napi;
use std::{
    ffi::c_int,
    ptr,
    rc::{Rc, Weak},
};

/// The SQLite error a failed JS callback gives (its exception is stashed): no message,
/// so nothing of it reaches the user but the JS exception itself.
fn js_failed() -> Error {
    Error::new(ffi::SQLITE_ERROR, "")
}

/// A module registered by `db.table()`.
struct JsModule {
    cb: CallbackEnv,
    /// The connection (for its default of safe integers when a table connects).
    db: Weak<DbShared>,
    /// The name it was registered under (used in "yielded …" messages).
    name: String,
    connect: Rc<JsRef>,
}

/// What the JS `connect` returned, read into Rust.
struct Definition {
    sql: String,
    start: JsRef,
    parameters: Vec<String>,
    /// 0/1, or 2 for "the database default now".
    safe_integers: u32,
    direct_only: bool,
}

/// # Safety
/// On the JS thread of `env`, inside a handle scope; `obj` an object of that scope.
unsafe fn property(
    env: sys::napi_env,
    obj: sys::napi_value,
    name: &std::ffi::CStr,
) -> JsResult<sys::napi_value> {
    let mut v = ptr::null_mut();
    // SAFETY: per contract.
    check(unsafe { sys::napi_get_named_property(env, obj, name.as_ptr(), &mut v) })?;
    Ok(v)
}

/// # Safety
/// As for `property`.
unsafe fn read_definition(env: sys::napi_env, def: sys::napi_value) -> JsResult<Definition> {
    // SAFETY: per contract; the shape was made by lib/methods/table.js, and every napi
    // call checks the types it reads.
    unsafe {
        let sql = property(env, def, c"sql")?;
        let start = property(env, def, c"start")?;
        let parameters = property(env, def, c"parameters")?;
        let mut count = 0u32;
        check(sys::napi_get_array_length(env, parameters, &mut count))?;
        let mut names = Vec::with_capacity(count as usize);
        for i in 0..count {
            let mut name = ptr::null_mut();
            check(sys::napi_get_element(env, parameters, i, &mut name))?;
            names.push(js::read_string(env, name)?);
        }
        let mut safe_integers = 2u32;
        check(sys::napi_get_value_uint32(
            env,
            property(env, def, c"safeIntegers")?,
            &mut safe_integers,
        ))?;
        let mut direct_only = false;
        check(sys::napi_get_value_bool(
            env,
            property(env, def, c"directOnly")?,
            &mut direct_only,
        ))?;
        Ok(Definition {
            sql: js::read_string(env, sql)?,
            start: JsRef::new(env, start)?,
            parameters: names,
            safe_integers,
            direct_only,
        })
    }
}

impl Module for JsModule {
    type Table = JsTable;

    fn connect(&self, db: &mut VTabConnection<'_>, args: &ModuleArgs) -> Result<JsTable> {
        let Some(shared) = self.db.upgrade() else {
            return Err(js_failed());
        };
        if !self.cb.may_call_js() {
            return Err(js_failed());
        }
        let env = self.cb.env;
        let _scope = HandleScope::open(env);
        let definition = (|| -> JsResult<Definition> {
            let names = [&args.module, &args.database, &args.table];
            let argv: Vec<sys::napi_value> = names
                .into_iter()
                .chain(&args.args)
                // SAFETY: on the JS thread, inside the scope.
                .map(|s| unsafe { js::string(env, s) })
                .collect();
            // SAFETY: inside the scope.
            let def = unsafe { call(env, self.connect.get(), &argv)? };
            // SAFETY: def is a value of this scope.
            unsafe { read_definition(env, def) }
        })();
        let definition = definition.map_err(|e| {
            self.cb.stash(e);
            js_failed()
        })?;
        db.declare(&definition.sql).map_err(|_| {
            Error::new(
                ffi::SQLITE_ERROR,
                format!("failed to declare virtual table \"{}\"", args.table),
            )
        })?;
        if definition.direct_only {
            db.set_direct_only().map_err(|_| {
                Error::new(
                    ffi::SQLITE_ERROR,
                    format!("failed to configure virtual table \"{}\"", args.table),
                )
            })?;
        }
        Ok(JsTable {
            shared: Rc::new(TableShared {
                cb: self.cb.clone(),
                yielded: format!("Virtual table module \"{}\" yielded", self.name),
                start: definition.start,
                parameters: definition.parameters,
                // better-sqlite3 resolves the default here, when SQLite connects the table.
                safe_integers: shared.safe_integers_option(definition.safe_integers),
            }),
        })
    }
}

/// What a table and its cursors share.
struct TableShared {
    cb: CallbackEnv,
    /// The start of "… yielded an invalid value".
    yielded: String,
    start: JsRef,
    /// The HIDDEN columns, numbered from 0, before the declared columns.
    parameters: Vec<String>,
    safe_integers: bool,
}

struct JsTable {
    shared: Rc<TableShared>,
}

impl VTab for JsTable {
    type Cursor = JsCursor;

    /// The parameters (HIDDEN columns) are the generator's arguments:
    /// `vtab::ParameterPlan` decides which constraints pass them.
    fn best_index(&self, info: &mut IndexInfo<'_>) -> Result<()> {
        let constraints: Vec<_> = info.constraints().collect();
        vtab::ParameterPlan::choose(&self.shared.parameters, &constraints)?.apply(info);
        Ok(())
    }

    fn open(&self) -> Result<JsCursor> {
        Ok(JsCursor {
            shared: self.shared.clone(),
            next: None,
            row: None,
            rowid: 0,
        })
    }
}

struct JsCursor {
    shared: Rc<TableShared>,
    /// The running scan's `next()`.
    next: Option<JsRef>,
    /// The current row (parameter values, then columns); `None` at the end.
    row: Option<JsRef>,
    rowid: i64,
}

impl JsCursor {
    /// Pulls the next row from the generator.
    fn advance(&mut self) -> Result<()> {
        self.row = None;
        let Some(next) = &self.next else {
            return Ok(());
        };
        let cb = &self.shared.cb;
        if !cb.may_call_js() {
            return Err(js_failed());
        }
        let env = cb.env;
        let _scope = HandleScope::open(env);
        let pulled = (|| -> JsResult<Option<JsRef>> {
            // SAFETY: inside the scope.
            let row = unsafe { call(env, next.get(), &[])? };
            // SAFETY: row is a value of this scope.
            if unsafe { js::type_of(env, row) } == T::napi_undefined {
                Ok(None)
            } else {
                JsRef::new(env, row).map(Some)
            }
        })();
        match pulled {
            Ok(row) => {
                self.row = row;
                self.rowid += 1;
                Ok(())
            }
            Err(e) => {
                cb.stash(e);
                Err(js_failed())
            }
        }
    }
}

impl VTabCursor for JsCursor {
    /// Calls `start` with one value per parameter: the constrained ones in column order
    /// (idxNum bits), `undefined` for the others. Any NULL means no rows, and then the
    /// generator is not called at all.
    fn filter(&mut self, idx_num: c_int, _: Option<&str>, args: &[ValueRef<'_>]) -> Result<()> {
        self.next = None;
        self.row = None;
        self.rowid = 0;
        if args.iter().any(|a| a.value_type() == ColumnType::Null) {
            return Ok(());
        }
        let shared = self.shared.clone();
        let cb = &shared.cb;
        if !cb.may_call_js() {
            return Err(js_failed());
        }
        let env = cb.env;
        let _scope = HandleScope::open(env);
        let started = (|| -> JsResult<JsRef> {
            let mut given = args.iter();
            let mut argv = Vec::with_capacity(shared.parameters.len());
            for i in 0..shared.parameters.len() {
                let value = if vtab::parameter_passed(idx_num, i) {
                    match given.next() {
                        // SAFETY: on the JS thread, inside the scope.
                        Some(v) => unsafe { value_to_js(env, v, shared.safe_integers)? },
                        None => return js::type_error("virtual table argument missing"),
                    }
                } else {
                    // SAFETY: on the JS thread.
                    unsafe { js::undefined(env) }
                };
                argv.push(value);
            }
            // SAFETY: inside the scope.
            let next = unsafe { call(env, shared.start.get(), &argv)? };
            JsRef::new(env, next)
        })();
        match started {
            Ok(next) => self.next = Some(next),
            Err(e) => {
                cb.stash(e);
                return Err(js_failed());
            }
        }
        self.advance()
    }

    fn next(&mut self) -> Result<()> {
        self.advance()
    }

    fn eof(&self) -> bool {
        self.row.is_none()
    }

    fn column(&self, ctx: &mut Context, column: c_int) -> Result<()> {
        let (Some(row), Ok(index)) = (&self.row, u32::try_from(column)) else {
            ctx.set_null();
            return Ok(());
        };
        let cb = &self.shared.cb;
        if !cb.may_call_js() {
            return Err(js_failed());
        }
        let env = cb.env;
        let _scope = HandleScope::open(env);
        let outcome = (|| -> JsResult<()> {
            let mut value = ptr::null_mut();
            // SAFETY: inside the scope; row holds an array.
            check(unsafe { sys::napi_get_element(env, row.get(), index, &mut value) })?;
            // SAFETY: value is a value of this scope.
            unsafe { set_result_from_js(env, ctx, value, &self.shared.yielded) }
        })();
        outcome.map_err(|e| {
            cb.stash(e);
            js_failed()
        })
    }

    fn rowid(&self) -> Result<i64> {
        Ok(self.rowid)
    }
}

#[napi]
impl Database {
    /// `db.table(name, definition | factory)` after lib/methods/table.js validated it:
    /// `connect` is called by SQLite's xCreate/xConnect (see the module docs);
    /// `eponymous` registers an eponymous-only module (a definition object), else one
    /// for `CREATE VIRTUAL TABLE` (a factory).
    #[napi(catch_unwind)]
    pub fn table(&self, connect: JsAny, name: String, eponymous: bool) -> napi::Result<()> {
        let db = &self.shared;
        let run = || -> JsResult<()> {
            db.require_idle()?;
            let env = db.env();
            let cb = db.callback_env();
            let weak_db = Rc::downgrade(db);
            let connect = Rc::new(JsRef::new(env, connect.0)?);
            let kind = if eponymous {
                ModuleKind::EponymousOnly
            } else {
                ModuleKind::CreateVirtualTable
            };
            // Kept to register it again if the connection is reopened (after a rekey).
            let registration_key = format!("module {}", name.to_lowercase());
            let register = move |conn: &cipherlite_sqlite::Connection| -> JsResult<()> {
                let module = JsModule {
                    cb: cb.clone(),
                    db: weak_db.clone(),
                    name: name.clone(),
                    connect: connect.clone(),
                };
                Ok(vtab::create_module(conn, &name, kind, module)?)
            };
            db.with_conn(|conn| register(conn))?;
            db.remember_registration(registration_key, Rc::new(register));
            db.note_js_callbacks();
            Ok(())
        };
        run().map_err(|e| db.throw(e))
    }
}
