'use strict';
// Generic helpers shared by the JS tests. Nothing area-specific lives here.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const assert = require('node:assert/strict');

/** A fresh, empty temporary directory (`<tmpdir>/cipherlite-XXXXXX`). */
function tempDir() {
	return fs.mkdtempSync(path.join(os.tmpdir(), 'cipherlite-'));
}

/** Remove a directory made by tempDir(), whatever it contains. */
function removeDir(dir) {
	fs.rmSync(dir, { recursive: true, force: true });
}

/** Sorted names of the entries of a directory. */
function listDir(dir) {
	return fs.readdirSync(dir).sort();
}

function checkError(err, Class, message, props) {
	assert.ok(err instanceof Class, `expected an instance of ${Class.name}, got ${err && err.constructor && err.constructor.name}: ${err && err.message}`);
	assert.equal(Object.getPrototypeOf(err).constructor, Class, `expected exactly ${Class.name}, not a subclass`);
	if (message instanceof RegExp) assert.match(err.message, message);
	else assert.equal(err.message, message);
	if (props && Object.prototype.hasOwnProperty.call(props, 'code')) {
		assert.equal(err.code, props.code);
	} else {
		// TypeError / RangeError from better-sqlite3 carry no `code` property at all.
		assert.equal(Object.prototype.hasOwnProperty.call(err, 'code'), false, `unexpected .code ${err.code}`);
	}
	for (const key of Object.keys(props || {})) {
		if (key !== 'code') assert.deepEqual(err[key], props[key], `property ${key}`);
	}
	return err;
}

/**
 * Assert that fn() throws an error of exactly class `Class` (not a subclass, checked with
 * instanceof AND constructor identity), whose message equals `message` (string) or matches it
 * (RegExp). `props` may give other own properties to compare (e.g. `{ code: 'SQLITE_BUSY' }`);
 * when `props.code` is not given the error must have no own `code` property.
 * Returns the error.
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
	return checkError(err, Class, message, props);
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
	return checkError(err, Class, message, props);
}

module.exports = { tempDir, removeDir, listDir, throwsExactly, rejectsExactly };
