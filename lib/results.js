'use strict';
// Reads the column batches the native side writes (src/binding/results.rs documents the
// layout; keep the two in sync) and builds rows with a function compiled once per
// column set and row shape.
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
const JSONStringify = JSON.stringify;
const FunctionConstructor = Function;
const BufferAllocUnsafeSlow = Buffer.allocUnsafeSlow;
const Uint8ArrayConstructor = Uint8Array;
const Uint32ArrayConstructor = Uint32Array;
const Float64ArrayConstructor = Float64Array;
const BigInt64ArrayConstructor = BigInt64Array;

const HEADER_WORDS_64 = 4; // 32-byte header = four 8-byte slots
const HEADER_WORDS_32 = 8; // = eight 4-byte words
const TAG_NUMBER = 1;
const TAG_TEXT = 3;
const TAG_INT32 = 6; // an INTEGER in i32 range: read as an int32, a small integer to V8
const TAG_WIDE_TEXT = 7; // TEXT with a character past U+00FF: in the batch's last string
const FLAG_DONE = 1;
const FLAG_COLUMNS_CHANGED = 2;
const FLAG_SCRATCH_REPLACED = 4;
const FLAG_SAFE_INTEGERS = 8;

const MODE_FLAT = 0;
const MODE_PLUCK = 1;
const MODE_EXPAND = 2;
const MODE_RAW = 3;

/** Past this size the scratch buffer goes back to its initial size once a read is done
 * (the native side checks it too: SCRATCH_KEEP_BYTES in src/binding/database.rs). */
const SCRATCH_KEEP_BYTES = 1 << 20;

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
    let flags = this.u32[2];
    if (flags & FLAG_SCRATCH_REPLACED) {
      this.setBuffer(ReflectApply(this.scratchOf, this.database, []));
      flags = this.u32[2];
    }
    this.tagBase = 32 + 8 * this.u32[0] * this.u32[1];
    this.flags = flags;
    return flags;
  }

  /** The one-byte batch string of a native result: a string, or (when some TEXT values
   * travel alone, or have characters past U+00FF) an array of the batch string, those
   * values, and last the wide batch string (src/binding/results.rs). */
  text(result) {
    if (typeof result === 'string') return result;
    this.big = result;
    return result[0];
  }

  /** Call once a read's rows are built: drops the batch's separate TEXT values, and
   * gives back the memory of a scratch buffer that a large batch grew. */
  finish() {
    this.big = null;
    if (this.u8.length > SCRATCH_KEEP_BYTES) {
      this.setBuffer(ReflectApply(this.shrinkScratchOf, this.database, []));
    }
  }

  blob(i) {
    const start = this.u32[3] + this.u32[8 + 2 * i];
    const length = this.u32[9 + 2 * i];
    // Every BLOB is a Buffer with its own ArrayBuffer (not a slice of a shared pool).
    const blob = BufferAllocUnsafeSlow(length);
    TypedArrayPrototypeSet(blob, new Uint8ArrayConstructor(this.buffer, start, length));
    return blob;
  }
}

/** The value of cell `i` (column-major index) of the current batch. */
function cellValue(R, text, i) {
  switch (R.u8[R.tagBase + i]) {
    case TAG_INT32: return R.u32[HEADER_WORDS_32 + 2 * i] | 0;
    case TAG_NUMBER: return R.f64[HEADER_WORDS_64 + i];
    case TAG_TEXT: return StringPrototypeSlice(text, R.u32[HEADER_WORDS_32 + 2 * i], R.u32[HEADER_WORDS_32 + 1 + 2 * i]);
    case 0: return null;
    case 2: return R.i64[HEADER_WORDS_64 + i];
    case 5: return R.big[R.u32[8 + 2 * i]];
    case TAG_WIDE_TEXT: {
      const strings = R.big;
      return StringPrototypeSlice(strings[strings.length - 1], R.u32[HEADER_WORDS_32 + 2 * i], R.u32[HEADER_WORDS_32 + 1 + 2 * i]);
    }
    default: return R.blob(i);
  }
}

/** Source of the value of cell `i` (a JS expression of the column-major index) inside
 * a row builder: what `cellValue` computes, with small integers, TEXT and other numbers
 * inline. */
function cellExpression(i) {
  return `((t = u8[tags + ${i}]) === ${TAG_INT32} ? (u32[${HEADER_WORDS_32} + 2 * (${i})] | 0)`
    + ` : t === ${TAG_TEXT} ? S(text, u32[${HEADER_WORDS_32} + 2 * (${i})], u32[${HEADER_WORDS_32 + 1} + 2 * (${i})])`
    + ` : t === ${TAG_NUMBER} ? f64[${HEADER_WORDS_64} + ${i}]`
    + ` : V(R, text, ${i}))`;
}

/** An array without a prototype, to collect rows in: assigning its elements runs no
 * inherited setter. `publicArray` gives it `Array.prototype` once it is filled. */
function rowArray() {
  const rows = [];
  ObjectSetPrototypeOf(rows, null);
  return rows;
}

function publicArray(rows) {
  ObjectSetPrototypeOf(rows, ArrayPrototype);
  return rows;
}

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
  if (mode === MODE_PLUCK) return cell(0);
  if (mode === MODE_RAW) {
    let source = '[';
    for (let c = 0; c < names.length; c++) source += (c === 0 ? '' : ', ') + cell(c);
    return `${source}]`;
  }
  if (mode === MODE_EXPAND) {
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
 * `many(R, text, n, rows, k)` stores the `n` rows of a batch in `rows` from index `k`.
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
    builders = FunctionConstructor('V', 'S', `
      return {
        one: function buildRow(R, text) { ${views} return ${one}; },
        many: function buildRows(R, text, n, rows, k) {
          ${views}
          for (let r = 0; r < n; r++) rows[k + r] = ${many};
        },
      };`)(cellValue, StringPrototypeSlice);
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
  rowBuilders,
  rowArray,
  publicArray,
  FLAG_DONE,
  FLAG_COLUMNS_CHANGED,
  FLAG_SAFE_INTEGERS,
  MODE_FLAT,
  MODE_PLUCK,
  MODE_EXPAND,
  MODE_RAW,
};
