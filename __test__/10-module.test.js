'use strict';
// docs/better-sqlite3-behaviour.md §1: module shape.
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const util = require('node:util');
const { Database } = require('./_module');
const { tempDir, removeDir } = require('./_helpers');

const dir = tempDir();
after(() => removeDir(dir));

const METHODS = [
  'prepare',
  'transaction',
  'pragma',
  'backup',
  'serialize',
  'function',
  'aggregate',
  'table',
  'loadExtension',
  'exec',
  'close',
  'defaultSafeIntegers',
  'unsafeMode',
];

describe('§1 module shape', () => {
  it('1.1 the module export is the Database constructor itself', () => {
    assert.equal(typeof Database, 'function');
    assert.equal(Database.name, 'Database');
    assert.equal(Database.prototype.constructor, Database);
    const db = new Database(':memory:');
    try {
      assert.ok(db instanceof Database);
      assert.equal(db.constructor, Database);
      assert.equal(db.prepare('SELECT 40 + 2 AS x').get().x, 42);
    } finally {
      db.close();
    }
  });

  it('1.2 Database.SqliteError is the error class thrown for SQLite failures', () => {
    const { SqliteError } = Database;
    assert.equal(typeof SqliteError, 'function');
    assert.equal(SqliteError.name, 'SqliteError');
    assert.notEqual(SqliteError, Error);
    const db = new Database(':memory:');
    try {
      let err;
      try {
        db.exec('THIS IS NOT SQL');
      } catch (e) {
        err = e;
      }
      assert.ok(err instanceof SqliteError);
      assert.equal(err.constructor, SqliteError);
      assert.equal(err.code, 'SQLITE_ERROR');
      assert.equal(err.message, 'near "THIS": syntax error');
    } finally {
      db.close();
    }
  });

  it('1.3 Database(...) without new returns a real instance', () => {
    const mem = Database(':memory:');
    try {
      assert.ok(mem instanceof Database);
      assert.equal(Object.getPrototypeOf(mem), Database.prototype);
      assert.equal(mem.name, ':memory:');
      assert.equal(mem.memory, true);
      assert.equal(mem.prepare('SELECT 7 AS x').get().x, 7);
    } finally {
      mem.close();
    }
    const file = path.join(dir, 'no-new.db');
    assert.equal(fs.existsSync(file), false);
    const disk = Database(file, { timeout: 100 });
    try {
      assert.ok(disk instanceof Database);
      assert.equal(disk.name, file);
      assert.equal(disk.memory, false);
      assert.equal(fs.existsSync(file), true);
    } finally {
      disk.close();
    }
    const anon = Database();
    try {
      assert.ok(anon instanceof Database);
      assert.equal(anon.name, '');
    } finally {
      anon.close();
    }
  });

  it('1.4 subclassing works and methods are shared prototype functions', () => {
    class MyDatabase extends Database {
      answer() {
        return this.prepare('SELECT 42 AS a').get().a;
      }
    }
    const db = new MyDatabase(':memory:');
    try {
      assert.ok(db instanceof MyDatabase);
      assert.ok(db instanceof Database);
      assert.equal(db.constructor, MyDatabase);
      assert.equal(Object.getPrototypeOf(db), MyDatabase.prototype);
      assert.equal(Object.getPrototypeOf(MyDatabase.prototype), Database.prototype);
      assert.equal(db.answer(), 42);
      assert.equal(db.name, ':memory:');
      assert.equal(db.open, true);
      assert.equal(MyDatabase.SqliteError, Database.SqliteError);
      assert.equal(db.close(), db);
      assert.equal(db.open, false);
    } finally {
      db.close();
    }
    const plain = new Database(':memory:');
    try {
      for (const name of METHODS) {
        assert.equal(typeof Database.prototype[name], 'function', name);
        assert.equal(plain[name], Database.prototype[name], name);
        assert.equal(Object.prototype.hasOwnProperty.call(plain, name), false, name);
      }
      assert.equal(Database.prototype.close, plain.close);
    } finally {
      plain.close();
    }
  });

  it('1.5 the native handle lives on the instance under one private Symbol() key', () => {
    const db = new Database(':memory:');
    try {
      const symbols = Object.getOwnPropertySymbols(db);
      assert.equal(symbols.length, 1);
      const [sym] = symbols;
      assert.equal(sym.description, undefined);
      assert.equal(Symbol.keyFor(sym), undefined);
      const desc = Object.getOwnPropertyDescriptor(db, sym);
      assert.equal(desc.enumerable, false);
      assert.equal(typeof desc.value, 'object');
      assert.notEqual(desc.value, null);
      // Each instance gets its own handle under the same key.
      const other = new Database(':memory:');
      try {
        assert.deepEqual(Object.getOwnPropertySymbols(other), [sym]);
        assert.notEqual(other[sym], db[sym]);
        assert.equal(other[sym].constructor, db[sym].constructor);
      } finally {
        other.close();
      }
    } finally {
      db.close();
    }
    // (two copies of the addon give two native classes: see 11-constructor.test.js, 1.5/2.14)
  });

  it('1.6 util.inspect(db) shows a plain object named Database with the getters', () => {
    const db = new Database(':memory:');
    try {
      assert.equal(
        util.inspect(db),
        "Database {\n  name: ':memory:',\n  open: true,\n  inTransaction: false,\n  readonly: false,\n  memory: true\n}",
      );
      db.exec('BEGIN');
      assert.equal(
        util.inspect(db),
        "Database {\n  name: ':memory:',\n  open: true,\n  inTransaction: true,\n  readonly: false,\n  memory: true\n}",
      );
    } finally {
      db.close();
    }
    assert.equal(
      util.inspect(db),
      "Database {\n  name: ':memory:',\n  open: false,\n  inTransaction: false,\n  readonly: false,\n  memory: true\n}",
    );
    const file = path.join(dir, 'inspect.db');
    const disk = new Database(file);
    disk.close();
    const ro = new Database(file, { readonly: true });
    try {
      assert.equal(
        util.inspect(ro, { breakLength: Infinity }),
        `Database { name: ${util.inspect(file)}, open: true, inTransaction: false, readonly: true, memory: false }`,
      );
    } finally {
      ro.close();
    }
  });
});
