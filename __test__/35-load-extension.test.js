'use strict';
// docs/better-sqlite3-behaviour.md §4.10 Database#loadExtension(path, entryPoint?) — better-sqlite3 v12 behaviour.
//
// The extension comes from testExtension() in _helpers-ext.js: better-sqlite3's own
// build/Release/test_extension.node, or for cipherlite the file named by
// CIPHERLITE_TEST_EXTENSION. It must export `sqlite3_extension_init` and register
// testExtensionFunction(...), a varargs function returning its argument count as a REAL.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {
  Database,
  NOT_OPEN,
  BUSY,
  makeTempDir,
  removeDir,
  throwsType,
  throwsSqlite,
  checkSqliteError,
  testExtension,
} = require('./_helpers-ext');

const extension = testExtension();
const skip = extension.skip || false;

describe('4.10 Database#loadExtension()', { skip }, () => {
  let dir;
  let extPath;
  before(() => {
    // Load a private copy, so the test never depends on where the build put the file.
    dir = makeTempDir();
    extPath = path.join(dir, 'test_extension.node');
    fs.copyFileSync(extension.path, extPath);
  });
  after(() => {
    removeDir(dir);
  });

  it('4.10 loads the extension and returns the database; its function works on that connection only', () => {
    const db = new Database(':memory:');
    const other = new Database(':memory:');
    throwsSqlite(
      () => db.prepare('SELECT testExtensionFunction()'),
      'SQLITE_ERROR',
      'no such function: testExtensionFunction',
    );
    assert.equal(db.loadExtension(extPath), db);
    assert.equal(db.prepare('SELECT testExtensionFunction(NULL, 123, 99, 2)').pluck().get(), 4);
    assert.equal(db.prepare('SELECT testExtensionFunction(NULL, 2)').pluck().get(), 2);
    assert.deepEqual(db.prepare('SELECT typeof(testExtensionFunction()), testExtensionFunction()').raw().get(), [
      'real',
      0,
    ]);
    throwsSqlite(
      () => other.prepare('SELECT testExtensionFunction()'),
      'SQLITE_ERROR',
      'no such function: testExtensionFunction',
    );
    other.close();
    db.close();
  });

  it('4.10 an explicit entry point is used; an unknown one → SqliteError SQLITE_ERROR', () => {
    const db = new Database(':memory:');
    assert.throws(
      () => db.loadExtension(extPath, 'no_such_entry_point'),
      (err) => {
        checkSqliteError(err, 'SQLITE_ERROR');
        assert.match(err.message, /no_such_entry_point/);
        return true;
      },
    );
    throwsSqlite(
      () => db.prepare('SELECT testExtensionFunction()'),
      'SQLITE_ERROR',
      'no such function: testExtensionFunction',
    );
    assert.equal(db.loadExtension(extPath, 'sqlite3_extension_init'), db);
    assert.equal(db.prepare('SELECT testExtensionFunction(1, 2, 3)').pluck().get(), 3);
    db.close();
  });

  it('4.10 a missing file → SqliteError SQLITE_ERROR with a real message naming the file', () => {
    const db = new Database(':memory:');
    const missing = path.join(dir, 'missing_extension');
    assert.throws(
      () => db.loadExtension(missing),
      (err) => {
        checkSqliteError(err, 'SQLITE_ERROR');
        assert.equal(typeof err.message, 'string');
        assert.ok(err.message.length > 0);
        assert.notEqual(err.message, 'not an error');
        assert.ok(err.message.includes(missing), `message should name the file: ${err.message}`);
        return true;
      },
    );
    assert.equal(db.open, true);
    db.close();
  });

  it('4.10 path must be a primitive string; entry point, when given, must be a string', () => {
    const db = new Database(':memory:');
    for (const bad of [undefined, null, 123, new String(extPath), [extPath], Buffer.from(extPath)]) {
      throwsType(() => db.loadExtension(bad), 'Expected first argument to be a string');
    }
    throwsType(() => db.loadExtension(), 'Expected first argument to be a string');
    for (const bad of [undefined, null, 123, new String('sqlite3_extension_init')]) {
      throwsType(() => db.loadExtension(extPath, bad), 'Expected second argument to be a string');
    }
    throwsSqlite(
      () => db.prepare('SELECT testExtensionFunction()'),
      'SQLITE_ERROR',
      'no such function: testExtensionFunction',
    );
    db.close();
  });

  it('4.10 blocked while iterating, while busy, and when closed (TypeError)', () => {
    const db = new Database(':memory:');
    let iterated = false;
    for (const value of db.prepare('SELECT 555').pluck().iterate()) {
      assert.equal(value, 555);
      throwsType(() => db.loadExtension(extPath), BUSY);
      iterated = true;
    }
    assert.ok(iterated);
    let ran = false;
    db.function('inside', () => {
      ran = true;
      throwsType(() => db.loadExtension(extPath), BUSY);
      return 1;
    });
    db.prepare('SELECT inside()').get();
    assert.ok(ran);
    throwsSqlite(
      () => db.prepare('SELECT testExtensionFunction()'),
      'SQLITE_ERROR',
      'no such function: testExtensionFunction',
    );
    db.close();
    throwsType(() => db.loadExtension(extPath), NOT_OPEN);
  });

  it('4.10 SQL load_extension() stays disabled before and after loadExtension() (SqliteError)', () => {
    const db = new Database(':memory:');
    throwsSqlite(() => db.prepare('SELECT load_extension(?)').get(extPath), 'SQLITE_ERROR', 'not authorized');
    assert.equal(db.loadExtension(extPath), db);
    throwsSqlite(() => db.prepare('SELECT load_extension(?)').get(extPath), 'SQLITE_ERROR', 'not authorized');
    throwsSqlite(
      () => db.prepare('SELECT load_extension(?, ?)').get(extPath, 'sqlite3_extension_init'),
      'SQLITE_ERROR',
      'not authorized',
    );
    db.close();
    const failed = new Database(':memory:');
    assert.throws(() => failed.loadExtension(path.join(dir, 'missing_extension')), Database.SqliteError);
    throwsSqlite(() => failed.prepare('SELECT load_extension(?)').get(extPath), 'SQLITE_ERROR', 'not authorized');
    throwsSqlite(
      () => failed.prepare('SELECT testExtensionFunction()'),
      'SQLITE_ERROR',
      'no such function: testExtensionFunction',
    );
    failed.close();
  });
});
