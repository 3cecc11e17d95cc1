'use strict';
// Helpers of the statement / binding / transaction / state-rule tests (20–29): a memory
// database, the busy probe and better-sqlite3's messages. The error checks are
// _helpers.js's, under the names these tests use.
const assert = require('node:assert/strict');
const { Database } = require('./_module');
const {
  tempFiles,
  checkError,
  throwsType,
  throwsRange,
  checkSqliteError,
  throwsSqlite,
  caught,
} = require('./_helpers');

/** A fresh in-memory database. */
function memdb(options) {
  return new Database(':memory:', options);
}

let probeCounter = 0;
/**
 * Registers a user function on db and returns `busy(op)`, which runs op() from inside
 * that function while SQLite executes it (the connection is "busy"), and returns
 * `{ value }` or `{ error }`. Register it before opening iterators (registration is
 * refused while iterating); `busy(op)` itself may be called while iterating.
 */
function busyProbe(db) {
  let op = null;
  let out;
  const name = `probe_${++probeCounter}`;
  db.function(name, () => {
    try {
      out = { value: op() };
    } catch (error) {
      out = { error };
    }
    return 1;
  });
  const stmt = db.prepare(`SELECT ${name}() AS r`);
  return (fn) => {
    op = fn;
    out = undefined;
    assert.deepEqual(stmt.get(), { r: 1 });
    assert.ok(out, 'the probe function was not called');
    return out;
  };
}

const MSG = {
  notOpen: 'The database connection is not open',
  dbBusy: 'This database connection is busy executing a query',
  stmtBusy: 'This statement is busy executing a query',
  noData: 'This statement does not return data. Use run() instead',
  badBind: 'SQLite3 can only bind numbers, strings, bigints, buffers, and null',
  tooFew: 'Too few parameter values were provided',
  tooMany: 'Too many parameter values were provided',
  alreadyBound: 'This statement already has bound parameters',
  bindOnce: 'The bind() method can only be invoked once per statement object',
  expectBool: 'Expected first argument to be a boolean',
};

module.exports = {
  Database,
  memdb,
  tmpdir: tempFiles,
  throwsTypeError: throwsType,
  throwsRangeError: throwsRange,
  throwsSqliteError: throwsSqlite,
  checkSqliteError,
  checkError,
  caught,
  busyProbe,
  MSG,
};
