'use strict';
// Helpers shared by the 3x test files (backup, serialize, user functions, aggregates,
// virtual tables, extensions, verbose). They only build fixtures and check errors; every
// assertion about behaviour lives in the test files themselves.
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Database, isCipherlite } = require('./_module');

// Messages better-sqlite3 uses for the connection state checks (src/util/macros.cpp).
const NOT_OPEN = 'The database connection is not open';
const BUSY = 'This database connection is busy executing a query';

/** A fresh private directory under the OS temp dir; removed by `cleanup()`. */
function makeTempDir() {
	return fs.mkdtempSync(path.join(os.tmpdir(), 'cipherlite-'));
}

function removeDir(dir) {
	fs.rmSync(dir, { recursive: true, force: true });
}

/** Escapes a string for use inside a RegExp. */
function escapeRegExp(text) {
	return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** An exact-message matcher for assert.throws / assert.rejects. */
function exact(text) {
	return new RegExp(`^${escapeRegExp(text)}$`);
}

/** Asserts that fn throws TypeError with exactly `message`. */
function throwsType(fn, message) {
	assert.throws(fn, (err) => {
		assert.ok(err instanceof TypeError, `expected TypeError, got ${err && err.name}: ${err && err.message}`);
		assert.equal(err.constructor, TypeError);
		assert.equal(err.message, message);
		return true;
	});
}

/** Asserts that fn throws RangeError with exactly `message`. */
function throwsRange(fn, message) {
	assert.throws(fn, (err) => {
		assert.ok(err instanceof RangeError, `expected RangeError, got ${err && err.name}: ${err && err.message}`);
		assert.equal(err.constructor, RangeError);
		assert.equal(err.message, message);
		return true;
	});
}

/** Checks an error value is a SqliteError with the given code (and message, if given). */
function checkSqliteError(err, code, message) {
	assert.ok(err instanceof Database.SqliteError, `expected SqliteError, got ${err && err.name}: ${err && err.message}`);
	assert.ok(err instanceof Error);
	assert.equal(err.name, 'SqliteError');
	assert.equal(err.code, code);
	if (message instanceof RegExp) assert.match(err.message, message);
	else if (message !== undefined) assert.equal(err.message, message);
	return true;
}

/** Asserts that fn throws SqliteError with `code` (and `message`: string = exact, RegExp = match). */
function throwsSqlite(fn, code, message) {
	assert.throws(fn, (err) => checkSqliteError(err, code, message));
}

/** Asserts that fn throws exactly `value` (identity), whatever it is (even undefined/null). */
function throwsSame(fn, value) {
	let threw = false;
	let caught;
	try {
		fn();
	} catch (err) {
		threw = true;
		caught = err;
	}
	assert.ok(threw, 'expected the call to throw');
	assert.ok(Object.is(caught, value), `expected the very value thrown by the callback, got ${String(caught)}`);
}

/** Values a callback may throw; each must come back out unchanged (same identity). */
function thrownValues() {
	return [
		new Error('plain error'),
		new TypeError('a type error'),
		{ custom: 'object' },
		'a string',
		'',
		null,
		123.4,
		0,
		undefined,
	];
}

/**
 * Where the loadable test extension is. It must export the default entry point
 * `sqlite3_extension_init` and register `testExtensionFunction(...)`, a varargs SQL
 * function returning its argument count as a REAL (better-sqlite3's deps/test_extension.c).
 *
 * Returns `{ path }` or `{ skip: reason }`.
 * - cipherlite: `process.env.CIPHERLITE_TEST_EXTENSION` (required; skipped without it).
 * - better-sqlite3: the same variable if set, else its own build/Release/test_extension.node.
 */
function testExtension() {
	const fromEnv = process.env.CIPHERLITE_TEST_EXTENSION;
	if (fromEnv) {
		const resolved = path.resolve(fromEnv);
		if (!fs.existsSync(resolved)) {
			throw new Error(`CIPHERLITE_TEST_EXTENSION points to a missing file: ${resolved}`);
		}
		return { path: resolved };
	}
	if (isCipherlite) {
		return { skip: 'CIPHERLITE_TEST_EXTENSION is not set: no loadable test extension was built for cipherlite' };
	}
	const target = process.env.CIPHERLITE_TEST_AGAINST;
	const root = path.dirname(require.resolve(path.join(target, 'package.json')));
	for (const build of ['Release', 'Debug']) {
		const candidate = path.join(root, 'build', build, 'test_extension.node');
		if (fs.existsSync(candidate)) return { path: candidate };
	}
	throw new Error(`better-sqlite3 at ${root} has no build/*/test_extension.node`);
}

/** Creates an in-memory database holding `bytes` of random data, spread over many pages. */
function bigMemoryDb(bytes = 1000000) {
	const db = new Database(':memory:');
	db.exec(`CREATE TABLE big (id INTEGER PRIMARY KEY, data BLOB);
		INSERT INTO big (data) VALUES (randomblob(${bytes}));
		CREATE TABLE small (x);
		INSERT INTO small VALUES ('first'), ('second');`);
	return db;
}

module.exports = {
	Database,
	isCipherlite,
	NOT_OPEN,
	BUSY,
	makeTempDir,
	removeDir,
	exact,
	throwsType,
	throwsRange,
	throwsSqlite,
	checkSqliteError,
	throwsSame,
	thrownValues,
	testExtension,
	bigMemoryDb,
};
