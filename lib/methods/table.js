'use strict';
// db.table(name, definition | factory): virtual tables whose rows come from a JS
// generator (docs/better-sqlite3-behaviour.md §8.3). This file validates definitions and turns
// them into what crates/node/src/table.rs expects:
//   connect(module, database, table, ...moduleArgs) → {
//     sql,           CREATE TABLE statement for sqlite3_declare_vtab: the parameters as
//                    HIDDEN columns, then the columns
//     start,         start(...parameterValues) → next(); next() → the row array
//                    (parameter values, then columns) or undefined at the end
//     parameters,    the parameter names (for error messages)
//     safeIntegers,  0/1, or 2 for "the database default when the table is connected"
//     directOnly,
//   }
const { kNative } = require('../util');

const MAX_PARAMETERS = 32;
const GeneratorFunctionPrototype = Object.getPrototypeOf(function* () {});
const hasOwn = (object, key) => Object.prototype.hasOwnProperty.call(object, key);

module.exports = function defineTable(name, factory) {
  if (typeof name !== 'string') throw new TypeError('Expected first argument to be a string');
  if (!name) throw new TypeError('Virtual table module name cannot be an empty string');

  let connect;
  let eponymous = false;
  if (typeof factory === 'object' && factory !== null) {
    // A definition object: one eponymous table, validated now.
    const definition = parseDefinition(factory, 'used', name);
    connect = () => definition;
    eponymous = true;
  } else if (typeof factory === 'function') {
    // A factory: called by each CREATE VIRTUAL TABLE (and each later connect).
    connect = (module, database, table, ...args) => {
      const returned = Reflect.apply(factory, { module, database, table }, args);
      if (typeof returned !== 'object' || returned === null) {
        throw new TypeError(`Virtual table module "${module}" did not return a table definition object`);
      }
      return parseDefinition(returned, 'returned', module);
    };
  } else {
    throw new TypeError('Expected second argument to be a function or a table definition object');
  }

  this[kNative].table(connect, name, eponymous);
  return this;
};

/** Checks a table definition; `verb` ("used"/"returned") and `moduleName` go into the
 * messages. */
function parseDefinition(def, verb, moduleName) {
  const fail = (ErrorClass, what) => {
    throw new ErrorClass(`Virtual table module "${moduleName}" ${verb} a table definition ${what}`);
  };
  if (!hasOwn(def, 'rows')) fail(TypeError, 'without a "rows" property');
  if (!hasOwn(def, 'columns')) fail(TypeError, 'without a "columns" property');

  const { rows } = def;
  if (typeof rows !== 'function' || Object.getPrototypeOf(rows) !== GeneratorFunctionPrototype) {
    fail(TypeError, 'with an invalid "rows" property (should be a generator function)');
  }

  const columns = stringArray(def.columns);
  if (!columns) fail(TypeError, 'with an invalid "columns" property (should be an array of strings)');
  if (hasDuplicate(columns)) fail(TypeError, 'with duplicate column names');
  if (columns.length === 0) fail(RangeError, 'with zero columns');

  let parameters;
  if (hasOwn(def, 'parameters')) {
    parameters = stringArray(def.parameters);
    if (!parameters) fail(TypeError, 'with an invalid "parameters" property (should be an array of strings)');
  } else {
    parameters = defaultParameters(rows);
  }
  if (hasDuplicate(parameters)) fail(TypeError, 'with duplicate parameter names');
  if (parameters.length > MAX_PARAMETERS) {
    fail(RangeError, `with more than the maximum number of ${MAX_PARAMETERS} parameters`);
  }
  const columnSet = new Set();
  for (let i = 0; i < columns.length; ++i) columnSet.add(columns[i]);
  for (let i = 0; i < parameters.length; ++i) {
    if (columnSet.has(parameters[i])) {
      fail(TypeError, `with column "${parameters[i]}" which was ambiguously defined as both a column and parameter`);
    }
  }

  let safeIntegers = 2;
  if (hasOwn(def, 'safeIntegers')) {
    if (typeof def.safeIntegers !== 'boolean')
      fail(TypeError, 'with an invalid "safeIntegers" property (should be a boolean)');
    safeIntegers = Number(def.safeIntegers);
  }
  let directOnly = false;
  if (hasOwn(def, 'directOnly')) {
    if (typeof def.directOnly !== 'boolean')
      fail(TypeError, 'with an invalid "directOnly" property (should be a boolean)');
    directOnly = def.directOnly;
  }

  let declared = '';
  for (let i = 0; i < parameters.length; ++i) declared += `${quoteIdentifier(parameters[i])} HIDDEN, `;
  for (let i = 0; i < columns.length; ++i) declared += `${i === 0 ? '' : ', '}${quoteIdentifier(columns[i])}`;
  return {
    sql: `CREATE TABLE x(${declared});`,
    start: rowSource(rows, columns, parameters.length, moduleName),
    parameters,
    safeIntegers,
    directOnly,
  };
}

// The checks below use plain loops, not Array.prototype methods or array iterators: a
// program may have replaced those (better-sqlite3 13 guards against the same), and a
// definition must not pass validation because `every` or `[Symbol.iterator]` lies.

/** A copy of `value` if it is a real array of primitive strings (holes count as
 * `undefined`), else null. */
function stringArray(value) {
  if (!Array.isArray(value)) return null;
  const { length } = value;
  const copy = new Array(length);
  for (let i = 0; i < length; ++i) {
    const item = value[i];
    if (typeof item !== 'string') return null;
    copy[i] = item;
  }
  return copy;
}

function hasDuplicate(strings) {
  const seen = new Set();
  for (let i = 0; i < strings.length; ++i) {
    if (seen.has(strings[i])) return true;
    seen.add(strings[i]);
  }
  return false;
}

/** `$1`, `$2`, … one per declared parameter of the generator (`rows.length`). */
function defaultParameters({ length }) {
  if (!Number.isInteger(length) || length < 0) {
    throw new TypeError('Expected function.length to be a positive integer');
  }
  const names = new Array(length);
  for (let i = 0; i < length; ++i) names[i] = `$${i + 1}`;
  return names;
}

function quoteIdentifier(name) {
  return `"${name.replace(/"/g, '""')}"`;
}

/** The `start` function the native cursor calls for each scan (see the top). The row
 * array is reused from one row to the next. */
function rowSource(rows, columns, parameterCount, moduleName) {
  const width = parameterCount + columns.length;
  const indexOf = new Map();
  for (let i = 0; i < columns.length; ++i) indexOf.set(columns[i], parameterCount + i);
  const invalid = (what) => new TypeError(`Virtual table module "${moduleName}" yielded ${what}`);

  function fillRow(row, yielded) {
    if (Array.isArray(yielded)) {
      if (yielded.length !== columns.length) throw invalid('a row with an incorrect number of columns');
      for (let i = 0; i < columns.length; ++i) row[parameterCount + i] = yielded[i];
    } else if (typeof yielded === 'object' && yielded !== null) {
      let seen = 0;
      for (const key of Object.keys(yielded)) {
        const index = indexOf.get(key);
        if (index === undefined) throw invalid(`a row with an undeclared column "${key}"`);
        row[index] = yielded[key];
        seen += 1;
      }
      if (seen !== columns.length) throw invalid('a row with missing columns');
    } else {
      throw invalid("something that isn't a valid row object");
    }
  }

  return function start(...args) {
    const row = new Array(width).fill(null);
    // The hidden columns read back the arguments: keep private copies of Buffers, which
    // the generator could otherwise change under SQLite.
    for (let i = 0; i < parameterCount; ++i) {
      const arg = args[i];
      row[i] = Buffer.isBuffer(arg) ? Buffer.from(arg) : arg;
    }
    const iterator = rows(...args);
    return function next() {
      const step = iterator.next();
      if (step.done) return undefined;
      try {
        fillRow(row, step.value);
      } catch (err) {
        // Like leaving a for…of loop by an exception: the generator gets to clean up.
        try {
          if (typeof iterator.return === 'function') iterator.return();
        } catch (ignored) {
          /* the validation error wins */
        }
        throw err;
      }
      return row;
    };
  };
}
