'use strict';
// Shared helpers for the statement / binding / transaction / state-rule tests (20–29).
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Database } = require('./_module');

/** A fresh in-memory database. */
function memdb(options) {
	return new Database(':memory:', options);
}

/** A fresh temporary directory; `cleanup()` removes it. */
function tmpdir() {
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cipherlite-'));
	return {
		dir,
		file: (name) => path.join(dir, name),
		cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
	};
}

function checkError(err, Class, message) {
	assert.ok(err instanceof Class, `expected a ${Class.name}, got ${err && err.constructor && err.constructor.name}: ${err && err.message}`);
	assert.equal(err.name, Class.name);
	assert.ok(!(err instanceof Database.SqliteError), 'a misuse error must not be a SqliteError');
	if (message instanceof RegExp) assert.match(err.message, message);
	else assert.equal(err.message, message);
	return true;
}

/** fn() must throw a TypeError with exactly this message (or matching this RegExp). */
function throwsTypeError(fn, message) {
	assert.throws(fn, (err) => checkError(err, TypeError, message));
}

/** fn() must throw a RangeError with exactly this message (or matching this RegExp). */
function throwsRangeError(fn, message) {
	assert.throws(fn, (err) => checkError(err, RangeError, message));
}

/** Checks that err is a SqliteError with this extended code (and message, if given). */
function checkSqliteError(err, code, message) {
	assert.ok(err instanceof Database.SqliteError, `expected a SqliteError, got ${err && err.constructor && err.constructor.name}: ${err && err.message}`);
	assert.ok(err instanceof Error);
	assert.equal(err.name, 'SqliteError');
	assert.equal(err.code, code);
	if (message instanceof RegExp) assert.match(err.message, message);
	else if (message !== undefined) assert.equal(err.message, message);
	return true;
}

/** fn() must throw a SqliteError with this extended code (and message, if given). */
function throwsSqliteError(fn, code, message) {
	assert.throws(fn, (err) => checkSqliteError(err, code, message));
}

/** Returns what fn throws (fails if it does not throw). */
function caught(fn) {
	try {
		fn();
	} catch (err) {
		return err;
	}
	assert.fail('expected the function to throw');
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
	tmpdir,
	throwsTypeError,
	throwsRangeError,
	throwsSqliteError,
	checkSqliteError,
	checkError,
	caught,
	busyProbe,
	MSG,
};
