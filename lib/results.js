'use strict';
// Reads the column batches the native side writes and builds rows with a function compiled
// once per column set and row shape. The batch layout (offsets, tags, flags, row modes) is
// defined only in crates/node/src/results.rs: the addon exports it as `layout`, and `useLayout`
// copies it into `L` before the first batch is read.
//
// No user code may run between a native batch and the rows built from it: another query
// would overwrite the shared scratch buffer under the rows being built. So nothing here
// calls a built-in through a property user code can replace (`text.slice`,
// `rows.push`, `Map.prototype.get`, `JSON.stringify`…): the built-ins are captured when
// this file loads and called directly; rows are collected in arrays without a prototype
// (an assignment then can't reach a setter on `Array.prototype` or `Object.prototype`),
// and rows themselves are object and array literals, which define their properties.

const { markAsUntransferable } = require('worker_threads');
const { Buffer } = require('buffer');

const FunctionPrototypeCall = Function.prototype.call;
const ReflectApply = Reflect.apply;
/** `fn` as a function taking its receiver first (`slice(text, a, b)`). */
const uncurryThis = (fn) => ReflectApply(Function.prototype.bind, FunctionPrototypeCall, [fn]);
const StringPrototypeSlice = uncurryThis(String.prototype.slice);
const TypedArrayPrototypeSet = uncurryThis(Object.getPrototypeOf(Uint8Array.prototype).set);
const ObjectSetPrototypeOf = Object.setPrototypeOf;
const ObjectCreate = Object.create;
const ArrayPrototype = Array.prototype;
const ArrayConstructor = Array;
const ArrayOf = Array.of;
const JSONStringify = JSON.stringify;
const FunctionConstructor = Function;
const BufferAllocUnsafeSlow = Buffer.allocUnsafeSlow;
const Uint8ArrayConstructor = Uint8Array;
const Uint32ArrayConstructor = Uint32Array;
const Float64ArrayConstructor = Float64Array;
const BigInt64ArrayConstructor = BigInt64Array;

/** The names `addon.layout` must have (crates/node/src/results.rs `LAYOUT`). */
const LAYOUT_NAMES = [
  'ROWS_AT',
  'COLUMNS_AT',
  'FLAGS_AT',
  'BLOB_REGION_AT',
  'LAST_INSERT_ROWID_AT',
  'CHANGES_AT',
  'HEADER_BYTES',
  'SLOT_BYTES',
  'TAG_NULL',
  'TAG_NUMBER',
  'TAG_BIGINT',
  'TAG_TEXT',
  'TAG_BLOB',
  'TAG_BIG_TEXT',
  'TAG_INT32',
  'TAG_WIDE_TEXT',
  'FLAG_DONE',
  'FLAG_COLUMNS_CHANGED',
  'FLAG_SCRATCH_REPLACED',
  'FLAG_SAFE_INTEGERS',
  'MODE_FLAT',
  'MODE_PLUCK',
  'MODE_EXPAND',
  'MODE_RAW',
  'SCRATCH_KEEP_BYTES',
];

/**
 * The layout in the form the readers use: the addon's values, plus header fields as
 * indices into the buffer's typed-array views (`ROWS`, `COLUMNS`, `FLAGS`, `BLOB_REGION`,
 * `CHANGES` into the Uint32Array; `LAST_INSERT_ROWID`, `SLOTS_64` into the 64-bit views;
 * `SLOTS_32` where the slots start in the Uint32Array). Filled once by `useLayout`, then
 * frozen.
 */
const L = {
  ROWS: 0,
  COLUMNS: 0,
  FLAGS: 0,
  BLOB_REGION: 0,
  CHANGES: 0,
  LAST_INSERT_ROWID: 0,
  SLOTS_32: 0,
  SLOTS_64: 0,
  HEADER_BYTES: 0,
  SLOT_BYTES: 0,
  TAG_NULL: -1,
  TAG_NUMBER: -1,
  TAG_BIGINT: -1,
  TAG_TEXT: -1,
  TAG_BLOB: -1,
  TAG_BIG_TEXT: -1,
  // An INTEGER in i32 range: read as an int32, a small integer to V8.
  TAG_INT32: -1,
  // TEXT with a character past U+00FF: in the batch's last string.
  TAG_WIDE_TEXT: -1,
  FLAG_DONE: 0,
  FLAG_COLUMNS_CHANGED: 0,
  FLAG_SCRATCH_REPLACED: 0,
  FLAG_SAFE_INTEGERS: 0,
  MODE_FLAT: -1,
  MODE_PLUCK: -1,
  MODE_EXPAND: -1,
  MODE_RAW: -1,
  SCRATCH_KEEP_BYTES: 0,
};
/** The addon layout object `L` was filled from (null before the first addon). */
let layoutSource = null;

/**
 * Takes the result layout from an addon (`addon.layout`). The first call fills `L`; later
 * ones (another instance of the addon) must bring the same values, since rows of every
 * database are read by the same code.
 */
function useLayout(layout) {
  if (layout === layoutSource) return;
  if (layout === null || typeof layout !== 'object') {
    throw new TypeError('cipherlite: the native addon exports no result layout (an addon of another version?)');
  }
  for (const name of LAYOUT_NAMES) {
    if (!Number.isInteger(layout[name]) || layout[name] < 0) {
      throw new TypeError(`cipherlite: the native addon's result layout has no valid ${name}`);
    }
  }
  if (layoutSource !== null) {
    for (const name of LAYOUT_NAMES) {
      if (layout[name] !== layoutSource[name]) {
        throw new TypeError(`cipherlite: this native addon's result layout differs from the one in use (${name})`);
      }
    }
    layoutSource = layout;
    return;
  }
  if (layout.SLOT_BYTES !== 8 || layout.HEADER_BYTES % 8 !== 0 || layout.LAST_INSERT_ROWID_AT % 8 !== 0) {
    throw new TypeError("cipherlite: the native addon's result layout is not one this file can read");
  }
  for (const name of LAYOUT_NAMES) if (name in L) L[name] = layout[name];
  L.ROWS = layout.ROWS_AT / 4;
  L.COLUMNS = layout.COLUMNS_AT / 4;
  L.FLAGS = layout.FLAGS_AT / 4;
  L.BLOB_REGION = layout.BLOB_REGION_AT / 4;
  L.CHANGES = layout.CHANGES_AT / 4;
  L.LAST_INSERT_ROWID = layout.LAST_INSERT_ROWID_AT / 8;
  L.SLOTS_32 = layout.HEADER_BYTES / 4;
  L.SLOTS_64 = layout.HEADER_BYTES / 8;
  // Fixed from now on: user code reaching this module can't change how batches are read.
  Object.freeze(L);
  layoutSource = layout;
}

/** Typed-array views over a database's scratch buffer. */
class BatchReader {
  // Declared fields: own properties by definition, so the assignments made between a
  // batch and its rows can't reach a setter user code put on Object.prototype.
  database = null;
  scratchOf = null;
  shrinkScratchOf = null;
  fast = null;
  buffer = null;
  u8 = null;
  u32 = null;
  f64 = null;
  i64 = null;
  tagBase = 0;
  flags = 0;
  big = null;

  /** `database` is the native database that owns the buffer. */
  constructor(database, buffer) {
    this.database = database;
    // The native methods, captured: they run between a batch and its rows.
    this.scratchOf = database.scratch;
    this.shrinkScratchOf = database.shrinkScratch;
    // `fast` is set by the Database: the addon's raw entry points. `big` holds the
    // batch's separate TEXT values (see `text()`) while its rows are built.
    this.setBuffer(buffer);
  }

  setBuffer(buffer) {
    // The native side writes into this buffer: it must never be transferred (detached).
    markAsUntransferable(buffer);
    this.buffer = buffer;
    this.u8 = new Uint8ArrayConstructor(buffer);
    this.u32 = new Uint32ArrayConstructor(buffer);
    this.f64 = new Float64ArrayConstructor(buffer);
    this.i64 = new BigInt64ArrayConstructor(buffer);
    this.tagBase = 0;
  }

  /** Call after each native batch: follows a replaced buffer, returns the flags. */
  begin() {
    let flags = this.u32[L.FLAGS];
    if (flags & L.FLAG_SCRATCH_REPLACED) {
      this.setBuffer(ReflectApply(this.scratchOf, this.database, []));
      flags = this.u32[L.FLAGS];
    }
    this.tagBase = L.HEADER_BYTES + L.SLOT_BYTES * this.u32[L.ROWS] * this.u32[L.COLUMNS];
    this.flags = flags;
    return flags;
  }

  /** The one-byte batch string of a native result: a string, or (when some TEXT values
   * travel alone, or have characters past U+00FF) an array of the batch string, those
   * values, and last the wide batch string (crates/node/src/results.rs). */
  text(result) {
    if (typeof result === 'string') return result;
    this.big = result;
    return result[0];
  }

  /** Call once a read's rows are built: drops the batch's separate TEXT values, and
   * gives back the memory of a scratch buffer that a large batch grew. */
  finish() {
    this.big = null;
    if (this.u8.length > L.SCRATCH_KEEP_BYTES) {
      this.setBuffer(ReflectApply(this.shrinkScratchOf, this.database, []));
    }
  }

  blob(i) {
    const start = this.u32[L.BLOB_REGION] + this.u32[L.SLOTS_32 + 2 * i];
    const length = this.u32[L.SLOTS_32 + 1 + 2 * i];
    // Every BLOB is a Buffer with its own ArrayBuffer (not a slice of a shared pool).
    const blob = BufferAllocUnsafeSlow(length);
    TypedArrayPrototypeSet(blob, new Uint8ArrayConstructor(this.buffer, start, length));
    return blob;
  }
}

/** The value of cell `i` (column-major index) of the current batch. */
function cellValue(R, text, i) {
  switch (R.u8[R.tagBase + i]) {
    case L.TAG_INT32:
      return R.u32[L.SLOTS_32 + 2 * i] | 0;
    case L.TAG_NUMBER:
      return R.f64[L.SLOTS_64 + i];
    case L.TAG_TEXT:
      return StringPrototypeSlice(text, R.u32[L.SLOTS_32 + 2 * i], R.u32[L.SLOTS_32 + 1 + 2 * i]);
    case L.TAG_NULL:
      return null;
    case L.TAG_BIGINT:
      return R.i64[L.SLOTS_64 + i];
    case L.TAG_BIG_TEXT:
      return R.big[R.u32[L.SLOTS_32 + 2 * i]];
    case L.TAG_WIDE_TEXT: {
      const strings = R.big;
      return StringPrototypeSlice(
        strings[strings.length - 1],
        R.u32[L.SLOTS_32 + 2 * i],
        R.u32[L.SLOTS_32 + 1 + 2 * i],
      );
    }
    default:
      return R.blob(i);
  }
}

/** Source of the value of cell `i` (a JS expression of the column-major index) inside
 * a row builder: what `cellValue` computes, with small integers, TEXT and other numbers
 * inline. The layout's values are written into the source as numbers (`L` is frozen
 * before the first builder is made). */
function cellExpression(i) {
  return (
    `((t = u8[tags + ${i}]) === ${L.TAG_INT32} ? (u32[${L.SLOTS_32} + 2 * (${i})] | 0)` +
    ` : t === ${L.TAG_TEXT} ? S(text, u32[${L.SLOTS_32} + 2 * (${i})], u32[${L.SLOTS_32 + 1} + 2 * (${i})])` +
    ` : t === ${L.TAG_NUMBER} ? f64[${L.SLOTS_64} + ${i}]` +
    ` : V(R, text, ${i}))`
  );
}

/** An empty array without a prototype, to collect rows in: assigning its elements runs
 * no inherited setter. `publicArray` gives it `Array.prototype` once it is filled.
 *
 * Made by `Array.of` (called directly, not through a property user code can change) from
 * one element, then cut to length 0: it has no allocation site, whose tenuring V8 would
 * decide (after a few large results held for a while, V8 allocated every later rows array
 * of a literal in the old generation, small results' too, where each row stored goes
 * through the write barrier: 2 µs of a 100-row `.all()` of 22 µs); and it is
 * PACKED_ELEMENTS from the start, so the first row stored changes no map (an empty array
 * made otherwise is HOLEY_SMI_ELEMENTS, and that first store deoptimised the row builders
 * at the start of each result), and users get packed arrays, as better-sqlite3's are. */
function rowArray() {
  const rows = ReflectApply(ArrayOf, ArrayConstructor, [ArrayPrototype]);
  rows.length = 0;
  ObjectSetPrototypeOf(rows, null);
  return rows;
}

/** One rows array kept for good in the state builders see (no prototype). Every other
 * one leaves that state when it is returned, and V8 holds a map only through the objects
 * that have it: at a full GC with no result being built the map died, and with it the row
 * builders' optimised code ("embedded weak objects cleared"), so each block of queries
 * after a GC began again in the interpreter (a 100-row `.all()` 0.74 of better-sqlite3
 * 13's time in the driver benchmark, 0.63 with this; __test__/27b-result-layout.test.js
 * 27b.8). Exported, so that the module's exports hold it. */
const ROWS_MAP_HOLDER = rowArray();

function publicArray(rows) {
  ObjectSetPrototypeOf(rows, ArrayPrototype);
  return rows;
}

/**
 * A raw row: an array of the values, made as a rest parameter rather than by an array
 * literal. A literal has an allocation site, and once a block of large raw results was
 * held while the young generation was at its largest, V8 tenured that site: every later
 * raw row was allocated in the old generation, each dead one then kept its young strings
 * alive through scavenges (33 MB of them survived one in the driver benchmark), the
 * young generation grew, and the next queries of any shape paid page faults on its fresh
 * pages (a 100-row `.all()` 24 µs instead of 21.6). A rest array has no site, so it is
 * always allocated young, as better-sqlite3's rows are; it is a packed array of the
 * current realm, made without running user code, at a literal's speed once optimised.
 */
const rawRow = (...values) => values;

/** An object-literal key for a column name; `__proto__` must be a computed key so it
 * becomes an own property instead of setting the prototype. */
function literalKey(name) {
  return name === '__proto__' ? '["__proto__"]' : JSONStringify(name);
}

/** `{key: expr, ...}` for parallel arrays of keys and expressions. */
function objectLiteral(keys, exprs) {
  let source = '{';
  for (let i = 0; i < keys.length; i++) {
    if (i !== 0) source += ', ';
    source += `${literalKey(keys[i])}: ${exprs[i]}`;
  }
  return `${source}}`;
}

/** Source of one row's expression for cell expressions `cell(c)`. */
function rowExpression(mode, names, tables, cell) {
  if (mode === L.MODE_PLUCK) return cell(0);
  if (mode === L.MODE_RAW) {
    let source = 'A(';
    for (let c = 0; c < names.length; c++) source += (c === 0 ? '' : ', ') + cell(c);
    return `${source})`;
  }
  if (mode === L.MODE_EXPAND) {
    // One nested object per table, in the order tables first appear.
    const groupIndex = ObjectCreate(null);
    const groupNames = rowArray();
    const groupKeys = rowArray();
    const groupExprs = rowArray();
    for (let c = 0; c < names.length; c++) {
      const table = tables[c] == null ? '$' : tables[c];
      let g = groupIndex[table];
      if (g === undefined) {
        g = groupIndex[table] = groupNames.length;
        groupNames[g] = table;
        groupKeys[g] = rowArray();
        groupExprs[g] = rowArray();
      }
      groupKeys[g][groupKeys[g].length] = names[c];
      groupExprs[g][groupExprs[g].length] = cell(c);
    }
    const nested = rowArray();
    for (let g = 0; g < groupNames.length; g++) nested[g] = objectLiteral(groupKeys[g], groupExprs[g]);
    return objectLiteral(groupNames, nested);
  }
  const exprs = rowArray();
  for (let c = 0; c < names.length; c++) exprs[c] = cell(c);
  return objectLiteral(names, exprs);
}

let builderCache = ObjectCreate(null);
let builderCacheSize = 0;
const BUILDER_CACHE_LIMIT = 1000;

/**
 * Row builders for one shape: `one(R, text)` builds the single row of a one-row batch,
 * `many(R, text, n, rows, k)` stores the `n` rows of a batch in `rows` from index `k`,
 * and `whole(R, text, n, rows)` the rows of a result that is one batch.
 *
 * `whole` is `many` with an object literal of its own, so V8 decides apart where each
 * allocates its rows: results of several batches (thousands of rows) tend to be held, and
 * V8 then allocates that literal's rows in the old generation; small results, usually
 * dropped soon, would pay for that too if they shared the literal.
 */
function rowBuilders(mode, names, tables) {
  let key = `${mode}`;
  for (let c = 0; c < names.length; c++) {
    const table = tables ? tables[c] : null;
    key += `\0${names[c]}\0${table === null ? 'N' : `T${table}`}`;
  }
  let builders = builderCache[key];
  if (builders === undefined) {
    const one = rowExpression(mode, names, tables, (c) => cellExpression(`${c}`));
    const many = rowExpression(mode, names, tables, (c) => cellExpression(`${c} * n + r`));
    // The views are read once per batch (no user code runs while rows are built, so
    // they can't change); REAL/INTEGER numbers and TEXT, the common cells, are decoded
    // inline, the others by `cellValue`.
    const views = 'const u8 = R.u8, u32 = R.u32, f64 = R.f64, tags = R.tagBase; let t = 0;';
    builders = FunctionConstructor(
      'V',
      'S',
      'A',
      `
      return {
        one: function buildRow(R, text) { ${views} return ${one}; },
        many: function buildRows(R, text, n, rows, k) {
          ${views}
          for (let r = 0; r < n; r++) rows[k + r] = ${many};
        },
        whole: function buildResult(R, text, n, rows) {
          ${views}
          for (let r = 0; r < n; r++) rows[r] = ${many};
        },
      };`,
    )(cellValue, StringPrototypeSlice, rawRow);
    if (builderCacheSize >= BUILDER_CACHE_LIMIT) {
      builderCache = ObjectCreate(null);
      builderCacheSize = 0;
    }
    builderCache[key] = builders;
    builderCacheSize++;
  }
  return builders;
}

module.exports = {
  BatchReader,
  ROWS_MAP_HOLDER,
  rowBuilders,
  rowArray,
  publicArray,
  L,
  LAYOUT_NAMES,
  useLayout,
};
