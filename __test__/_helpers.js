'use strict';
// The JS tests' generic helpers, the one home of each: temporary directories, and the
// checks of what a call throws (class, message, `code`). The area helpers
// (_helpers-stmt.js, _helpers-ext.js, _helpers-encryption.js, _helpers-install.js) hold
// only their area's fixtures and re-export these under the names their tests use.
// Seeded random numbers: _random.js; Evolu's fixtures: _evolu-fixtures.js.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const assert = require('node:assert/strict');

/** The module under test's SqliteError, looked up when first needed: requiring this file
 * loads nothing of the package (some tests check what loading it does). */
const SqliteErrorClass = () => require('./_module').Database.SqliteError;

// ---- temporary directories --------------------------------------------------------------

/** A fresh, empty temporary directory: `<tmpdir>/cipherlite-XXXXXX`, or with a tag
 * `<tmpdir>/cipherlite-<tag>-XXXXXX`. */
function tempDir(tag) {
  return fs.mkdtempSync(path.join(os.tmpdir(), tag ? `cipherlite-${tag}-` : 'cipherlite-'));
}

/** Removes a directory made by tempDir(), whatever it contains (nothing for a falsy `dir`).
 * On Windows a loaded addon, or a file some handle still has open, can't be removed before
 * the process ends: there the rest is left in the temporary folder. */
function removeDir(dir) {
  if (!dir) return;
  try {
    fs.rmSync(dir, { recursive: true, force: true });
  } catch (err) {
    if (process.platform !== 'win32' || !['EPERM', 'EBUSY'].includes(err.code)) throw err;
  }
}

/** A fresh temporary directory as `{ dir, file(name), cleanup() }`. */
function tempFiles(tag) {
  const dir = tempDir(tag);
  return { dir, file: (name) => path.join(dir, name), cleanup: () => removeDir(dir) };
}

/** Sorted names of the entries of a directory. */
function listDir(dir) {
  return fs.readdirSync(dir).sort();
}

// ---- what a call throws -------------------------------------------------------------------

const describeError = (err) => `${err && err.constructor && err.constructor.name}: ${err && err.message}`;

/** Escapes a string for use inside a RegExp. */
function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** An exact-message matcher for assert.throws / assert.rejects. */
function exact(text) {
  return new RegExp(`^${escapeRegExp(text)}$`);
}

/** `message` (a string: equal; a RegExp: matching; undefined: anything) against `actual`. */
function checkMessage(actual, message, label = '') {
  if (message instanceof RegExp) assert.match(actual, message, label || undefined);
  else if (message !== undefined) assert.equal(actual, message, label || undefined);
}

/**
 * Checks that `err` is exactly of class `Class` (instanceof and constructor identity, not a
 * subclass), named after it, with `message` (string: exact; RegExp: match). A misuse error
 * (any class but SqliteError) is not a SqliteError. `props` may give other own properties
 * to compare (e.g. `{ code: 'SQLITE_BUSY' }`); without `props.code` the error must have no
 * own `code` property (better-sqlite3's TypeError and RangeError carry none). Returns `err`.
 */
function checkErrorValue(err, Class, message, props) {
  assert.ok(err instanceof Class, `expected an instance of ${Class.name}, got ${describeError(err)}`);
  assert.equal(Object.getPrototypeOf(err).constructor, Class, `expected exactly ${Class.name}, not a subclass`);
  assert.equal(err.name, Class.name);
  if (Class !== SqliteErrorClass()) {
    assert.ok(!(err instanceof SqliteErrorClass()), 'a misuse error must not be a SqliteError');
  }
  checkMessage(err.message, message);
  if (props && Object.prototype.hasOwnProperty.call(props, 'code')) {
    assert.equal(err.code, props.code);
  } else {
    assert.equal(Object.prototype.hasOwnProperty.call(err, 'code'), false, `unexpected .code ${err.code}`);
  }
  for (const key of Object.keys(props || {})) {
    if (key !== 'code') assert.deepEqual(err[key], props[key], `property ${key}`);
  }
  return err;
}

/** checkErrorValue as a validation function for assert.throws / assert.rejects (returns true). */
function checkError(err, Class, message, props) {
  checkErrorValue(err, Class, message, props);
  return true;
}

/** What fn() throws; fails the test if it returns. */
function caught(fn) {
  try {
    fn();
  } catch (err) {
    return err;
  }
  assert.fail('expected the function to throw');
}

/**
 * Asserts that fn() throws an error of exactly class `Class` (see checkErrorValue: message,
 * no `code` unless `props.code` gives it). Returns the error.
 */
function throwsExactly(fn, Class, message, props) {
  let threw = false;
  let err;
  try {
    fn();
  } catch (e) {
    threw = true;
    err = e;
  }
  assert.ok(threw, `expected ${Class.name}(${message}) but nothing was thrown`);
  return checkErrorValue(err, Class, message, props);
}

/** Same as throwsExactly for a promise (or a function returning one) that must reject. */
async function rejectsExactly(promiseOrFn, Class, message, props) {
  let rejected = false;
  let err;
  try {
    await (typeof promiseOrFn === 'function' ? promiseOrFn() : promiseOrFn);
  } catch (e) {
    rejected = true;
    err = e;
  }
  assert.ok(rejected, `expected a rejection with ${Class.name}(${message}) but it resolved`);
  return checkErrorValue(err, Class, message, props);
}

/** Asserts that fn() throws exactly a TypeError with `message` (string: exact; RegExp:
 * match), which is not a SqliteError. Returns the error. */
function throwsType(fn, message) {
  return checkMisuse(caught(fn), TypeError, message);
}

/** Same as throwsType for RangeError. */
function throwsRange(fn, message) {
  return checkMisuse(caught(fn), RangeError, message);
}

/** The class and message checks of checkErrorValue without its `code` rule (a Node.js
 * TypeError may carry a code). */
function checkMisuse(err, Class, message) {
  assert.ok(err instanceof Class, `expected ${Class.name}, got ${describeError(err)}`);
  assert.equal(err.constructor, Class, `expected exactly ${Class.name}, not a subclass`);
  assert.equal(err.name, Class.name);
  assert.ok(!(err instanceof SqliteErrorClass()), 'a misuse error must not be a SqliteError');
  checkMessage(err.message, message);
  return err;
}

/**
 * Checks that `err` is a SqliteError with extended code `code` (string: equal; RegExp:
 * match) and `message` (string: exact; RegExp: match; undefined: any); `label` names the
 * case in failures. Returns true (usable with assert.throws).
 */
function checkSqliteError(err, code, message, label = '') {
  const at = label ? ` [${label}]` : '';
  assert.ok(err instanceof SqliteErrorClass(), `expected a SqliteError, got ${describeError(err)}${at}`);
  assert.ok(err instanceof Error);
  assert.equal(err.name, 'SqliteError');
  if (code instanceof RegExp) assert.match(err.code, code);
  else assert.equal(err.code, code, `code (message: ${err.message})${at}`);
  checkMessage(err.message, message, at);
  return true;
}

/** Asserts that fn() throws a SqliteError with `code` (and `message`); returns the error. */
function throwsSqlite(fn, code, message, label = '') {
  let threw = false;
  let err;
  try {
    fn();
  } catch (e) {
    threw = true;
    err = e;
  }
  assert.ok(threw, `expected SqliteError ${code}, nothing was thrown${label ? ` [${label}]` : ''}`);
  checkSqliteError(err, code, message, label);
  return err;
}

/** Asserts that fn() throws exactly `value` (identity), whatever it is (even undefined or null). */
function throwsSame(fn, value) {
  let threw = false;
  let err;
  try {
    fn();
  } catch (e) {
    threw = true;
    err = e;
  }
  assert.ok(threw, 'expected the call to throw');
  assert.ok(Object.is(err, value), `expected the very value thrown by the callback, got ${String(err)}`);
}

module.exports = {
  tempDir,
  removeDir,
  tempFiles,
  listDir,
  escapeRegExp,
  exact,
  checkError,
  caught,
  throwsExactly,
  rejectsExactly,
  throwsType,
  throwsRange,
  checkSqliteError,
  throwsSqlite,
  throwsSame,
};
