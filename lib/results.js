'use strict';
// Reads the column batches the native side writes (src/binding/results.rs documents the
// layout; keep the two in sync) and builds rows with a function compiled once per
// column set and row shape.

const { markAsUntransferable } = require('worker_threads');

const HEADER_WORDS_64 = 4; // 32-byte header = four 8-byte slots
const FLAG_DONE = 1;
const FLAG_COLUMNS_CHANGED = 2;
const FLAG_SCRATCH_REPLACED = 4;
const FLAG_SAFE_INTEGERS = 8;

const MODE_FLAT = 0;
const MODE_PLUCK = 1;
const MODE_EXPAND = 2;
const MODE_RAW = 3;

/** Typed-array views over a database's scratch buffer. */
class BatchReader {
  /** `database` is the native database that owns the buffer. */
  constructor(database, buffer) {
    this.database = database;
    this.fast = null; // set by the Database: the addon's raw entry points
    this.setBuffer(buffer);
  }

  setBuffer(buffer) {
    // The native side writes into this buffer: it must never be transferred (detached).
    markAsUntransferable(buffer);
    this.u8 = new Uint8Array(buffer);
    this.u32 = new Uint32Array(buffer);
    this.f64 = new Float64Array(buffer);
    this.i64 = new BigInt64Array(buffer);
    this.tagBase = 0;
  }

  /** Call after each native batch: follows a replaced buffer, returns the flags. */
  begin() {
    let flags = this.u32[2];
    if (flags & FLAG_SCRATCH_REPLACED) {
      this.setBuffer(this.database.scratch());
      flags = this.u32[2];
    }
    this.tagBase = 32 + 8 * this.u32[0] * this.u32[1];
    return flags;
  }

  blob(i) {
    const start = this.u32[3] + this.u32[8 + 2 * i];
    const length = this.u32[9 + 2 * i];
    // Every BLOB is a Buffer with its own ArrayBuffer (not a slice of a shared pool).
    const blob = Buffer.allocUnsafeSlow(length);
    blob.set(this.u8.subarray(start, start + length));
    return blob;
  }
}

/** The value of cell `i` (column-major index) of the current batch. */
function cellValue(R, text, i) {
  switch (R.u8[R.tagBase + i]) {
    case 1: return R.f64[HEADER_WORDS_64 + i];
    case 3: return text.slice(R.u32[8 + 2 * i], R.u32[9 + 2 * i]);
    case 0: return null;
    case 2: return R.i64[HEADER_WORDS_64 + i];
    default: return R.blob(i);
  }
}

/** An object-literal key for a column name; `__proto__` must be a computed key so it
 * becomes an own property instead of setting the prototype. */
function literalKey(name) {
  return name === '__proto__' ? '["__proto__"]' : JSON.stringify(name);
}

function objectLiteral(entries) {
  return `{${entries.map(([key, expr]) => `${literalKey(key)}: ${expr}`).join(', ')}}`;
}

/** Source of one row's expression for cell expressions `cell(c)`. */
function rowExpression(mode, names, tables, cell) {
  if (mode === MODE_PLUCK) return cell(0);
  if (mode === MODE_RAW) return `[${names.map((_, c) => cell(c)).join(', ')}]`;
  if (mode === MODE_EXPAND) {
    const groups = new Map();
    names.forEach((name, c) => {
      const table = tables[c] == null ? '$' : tables[c];
      if (!groups.has(table)) groups.set(table, []);
      groups.get(table).push([name, cell(c)]);
    });
    return objectLiteral([...groups].map(([table, entries]) => [table, objectLiteral(entries)]));
  }
  return objectLiteral(names.map((name, c) => [name, cell(c)]));
}

const builderCache = new Map();
const BUILDER_CACHE_LIMIT = 1000;

/**
 * Row builders for one shape: `one(R, text)` builds the single row of a one-row batch,
 * `many(R, text, n, rows)` appends the `n` rows of a batch to `rows`.
 */
function rowBuilders(mode, names, tables) {
  const key = `${mode}\0${names.join('\0')}\0${tables ? tables.join('\0') : ''}`;
  let builders = builderCache.get(key);
  if (builders === undefined) {
    const one = rowExpression(mode, names, tables, (c) => `V(R, text, ${c})`);
    const many = rowExpression(mode, names, tables, (c) => `V(R, text, ${c} * n + r)`);
    // eslint-disable-next-line no-new-func
    builders = new Function('V', `
      return {
        one: function buildRow(R, text) { return ${one}; },
        many: function buildRows(R, text, n, rows) {
          for (let r = 0; r < n; r++) rows.push(${many});
        },
      };`)(cellValue);
    if (builderCache.size >= BUILDER_CACHE_LIMIT) builderCache.clear();
    builderCache.set(key, builders);
  }
  return builders;
}

module.exports = {
  BatchReader,
  rowBuilders,
  FLAG_DONE,
  FLAG_COLUMNS_CHANGED,
  FLAG_SAFE_INTEGERS,
  MODE_FLAT,
  MODE_PLUCK,
  MODE_EXPAND,
  MODE_RAW,
};
