'use strict';
// Statement: the JS face of a prepared statement. Validation and the state machine are
// native (crates/node/src/statement.rs); this file turns the native column batches into rows.

const { kState, stopped } = require('./util');
// `L`: the result buffer's layout, read from the addon (lib/results.js `useLayout`).
const { rowBuilders, rowArray, publicArray, L } = require('./results');

const ReflectApply = Reflect.apply;

// StatementState and StatementIterator declare their fields, so each instance gets them
// as own properties by definition: a later assignment (some run between a batch and its
// rows) can't reach a setter user code put on Object.prototype.

/** Per-statement JS state, kept behind one symbol. */
class StatementState {
  native = null;
  reader = null;
  fast = null;
  id = 0;
  columnNamesOf = null;
  mode = L.MODE_FLAT;
  names = null;
  tables = null;
  builders = null;

  constructor(native, reader, fast) {
    this.native = native;
    this.reader = reader; // the database's BatchReader
    this.fast = fast; // the addon's raw entry points for the hot paths (crates/node/src/raw_entry_points.rs)
    this.id = native.id; // how those entry points find the native statement
    this.columnNamesOf = native.columnNames; // captured: it runs between a batch and its rows
    this.mode = L.MODE_FLAT;
    this.names = null;
    this.tables = null;
    this.builders = null;
  }
}

/** Brings the row builders up to date after a batch; returns the batch's flags. */
function beginBatch(state) {
  const flags = state.reader.begin();
  if (flags & L.FLAG_COLUMNS_CHANGED) {
    state.names = null;
    state.builders = null;
  }
  if (state.builders === null) refreshBuilders(state);
  return flags;
}

/** Stores the rows of the native batch `result` in `rows` (an array from `rowArray()`)
 * from index `count`; returns the new count (the batch's flags are `reader.flags`). */
function readBatch(state, result, rows, count) {
  const reader = state.reader;
  const text = reader.text(result);
  const flags = reader.begin();
  const n = reader.u32[L.ROWS];
  if (n !== 0) {
    if (flags & L.FLAG_COLUMNS_CHANGED) {
      state.names = null;
      state.builders = null;
    }
    if (state.builders === null) refreshBuilders(state);
    if (count === 0 && flags & L.FLAG_DONE) state.builders.whole(reader, text, n, rows);
    else state.builders.many(reader, text, n, rows, count);
  }
  reader.big = null;
  return count + n;
}

function refreshBuilders(state) {
  const expand = state.mode === L.MODE_EXPAND;
  if (state.names === null || (expand && state.tables === null)) {
    const info = ReflectApply(state.columnNamesOf, state.native, [expand]);
    if (expand) {
      const names = rowArray();
      const tables = rowArray();
      for (let i = 0; 2 * i < info.length; i++) {
        names[i] = info[2 * i];
        tables[i] = info[2 * i + 1];
      }
      state.names = names;
      state.tables = tables;
    } else {
      state.names = info;
      state.tables = null;
    }
  }
  state.builders = rowBuilders(state.mode, state.names, expand ? state.tables : null);
}

function setMode(stmt, mode, args) {
  const state = stmt[kState];
  let use = true;
  if (args.length !== 0) {
    use = args[0];
    if (typeof use !== 'boolean') throw new TypeError('Expected first argument to be a boolean');
  }
  const newMode = state.fast.setMode(state.id, mode, use);
  if (newMode !== state.mode) {
    state.mode = newMode;
    state.builders = null;
  }
  return stmt;
}

/** `run()`'s lastInsertRowid: a BigInt with safe integers, else a number, as a small
 * integer when it is one. The slot holds a double then, and a double read from the
 * Float64Array and stored in the result object would be boxed: a heap number allocated
 * per call, for the rowids every table has (no rowid is -0, so `| 0` loses nothing). */
function lastInsertRowid(R) {
  if (R.u32[L.FLAGS] & L.FLAG_SAFE_INTEGERS) return R.i64[L.LAST_INSERT_ROWID];
  const rowid = R.f64[L.LAST_INSERT_ROWID];
  return (rowid | 0) === rowid ? rowid | 0 : rowid;
}

// A plain function (not a class) so that calling it without `new` gives the same
// TypeError as with it.
function Statement() {
  throw new TypeError('Statements can only be constructed by the db.prepare() method');
}

Object.assign(Statement.prototype, {
  run(...params) {
    const state = this[kState];
    if (state.fast.run(state.id, ...params) === null) throw stopped();
    const R = state.reader;
    return { changes: R.u32[L.CHANGES], lastInsertRowid: lastInsertRowid(R) };
  },

  get(...params) {
    const state = this[kState];
    const result = state.fast.get(state.id, ...params);
    if (result === undefined) return undefined;
    if (result === null) throw stopped();
    const reader = state.reader;
    const text = reader.text(result);
    beginBatch(state);
    const row = state.builders.one(reader, text);
    reader.finish();
    return row;
  },

  all(...params) {
    const state = this[kState];
    let result = state.fast.all(state.id, ...params);
    const rows = rowArray();
    let count = 0;
    for (;;) {
      if (result === null) throw stopped();
      count = readBatch(state, result, rows, count);
      if (state.reader.flags & L.FLAG_DONE) break;
      result = state.fast.more(state.id);
    }
    state.reader.finish();
    return publicArray(rows);
  },

  iterate(...params) {
    const state = this[kState];
    if (state.fast.iterate(state.id, ...params) === null) throw stopped();
    return new StatementIterator(iteratorToken, state);
  },

  bind(...params) {
    this[kState].native.bind(params);
    return this;
  },

  pluck(...args) {
    return setMode(this, L.MODE_PLUCK, args);
  },

  expand(...args) {
    return setMode(this, L.MODE_EXPAND, args);
  },

  raw(...args) {
    return setMode(this, L.MODE_RAW, args);
  },

  safeIntegers(...args) {
    let use = true;
    if (args.length !== 0) {
      use = args[0];
      if (typeof use !== 'boolean') throw new TypeError('Expected first argument to be a boolean');
    }
    this[kState].native.safeIntegers(use);
    return this;
  },

  /** better-sqlite3 13: the source SQL, or once `bind()` bound values, the SQL with them
   * expanded (as SQLite's sqlite3_expanded_sql writes them). Values passed to one call of
   * run/get/all/iterate don't count; after close() it is the source again. */
  toString() {
    const expanded = this[kState].native.expandedSource();
    return expanded == null ? this.source : expanded;
  },

  columns() {
    const flat = this[kState].native.columns();
    const columns = [];
    for (let i = 0; i < flat.length; i += 5) {
      columns.push({
        name: flat[i],
        column: flat[i + 1],
        table: flat[i + 2],
        database: flat[i + 3],
        type: flat[i + 4],
      });
    }
    return columns;
  },
});

/** The iterator `stmt.iterate()` returns: rows arrive in small native batches when no
 * user code can observe stepping ahead, one per `next()` otherwise. */
const iteratorToken = Symbol('StatementIterator');

// An iterator dropped without being finished or returned ends its iteration when it is
// collected (as better-sqlite3's does), so the connection doesn't stay "iterating".
const abandonedIterators = new FinalizationRegistry((native) => {
  try {
    native.return();
  } catch {
    /* the database may be busy or closed by then */
  }
});

class StatementIterator {
  state = null;
  rows = [];
  index = 0;
  exhausted = false;
  closed = false;

  constructor(token, state) {
    if (token !== iteratorToken) throw new TypeError('Disabled constructor');
    this.state = state;
    abandonedIterators.register(this, state.native, this);
    this.rows = [];
    this.index = 0;
    this.exhausted = false; // the native statement reached its end
    this.closed = false; // the iteration is over (native side unlocked)
  }

  next() {
    if (this.index < this.rows.length) {
      // Rows are only fetched ahead when no JS callback exists on the connection, so no
      // user code can run here while SQLite is busy.
      return { value: this.rows[this.index++], done: false };
    }
    if (this.closed) return { value: undefined, done: true };
    if (!this.exhausted) {
      this.fetch();
      if (this.index < this.rows.length) {
        return { value: this.rows[this.index++], done: false };
      }
    }
    // The statement ended and every row was delivered: now the iteration closes.
    this.return();
    return { value: undefined, done: true };
  }

  /** Fetches the next native batch into `rows`. */
  fetch() {
    const state = this.state;
    let result;
    try {
      result = state.fast.next(state.id);
    } catch (err) {
      // An SQLite error ends the iteration natively; a refusal (busy) leaves it open.
      if (!state.native.busy) {
        this.closed = true;
        abandonedIterators.unregister(this);
      }
      throw err;
    }
    if (result === null) throw stopped();
    // Rows of a batch are kept here until next() hands them out: an array without a
    // prototype, filled without running user code (see lib/results.js).
    this.rows = rowArray();
    this.index = 0;
    readBatch(state, result, this.rows, 0);
    if (state.reader.flags & L.FLAG_DONE) this.exhausted = true;
    state.reader.finish();
  }

  return() {
    if (!this.closed) {
      this.state.native.return();
      abandonedIterators.unregister(this);
      this.closed = true;
      this.rows = [];
      this.index = 0;
    }
    return { value: undefined, done: true };
  }

  [Symbol.iterator]() {
    return this;
  }
}

/** `busy`, one getter for every statement: a closure per statement would give each its
 * own map, and `this[kState]` in run/get/all would become a megamorphic look-up in a
 * program with a few statements. */
const STATEMENT_BUSY = {
  get: function busy() {
    const state = this == null ? undefined : this[kState];
    if (state === undefined) throw new TypeError('Illegal invocation');
    return state.native.busy;
  },
  enumerable: true,
};

/** Wraps a native statement in a `Statement` with better-sqlite3's frozen own properties. */
function createStatement(database, native, reader, fast, source) {
  const stmt = Object.create(Statement.prototype);
  Object.defineProperty(stmt, kState, { value: new StatementState(native, reader, fast) });
  Object.defineProperties(stmt, {
    busy: STATEMENT_BUSY,
    reader: { value: native.reader, enumerable: true },
    readonly: { value: native.readonly, enumerable: true },
    source: { value: source, enumerable: true },
    database: { value: database, enumerable: true },
  });
  return stmt;
}

module.exports = { Statement, StatementIterator, createStatement };
