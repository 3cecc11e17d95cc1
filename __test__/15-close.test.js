'use strict';
// docs/better-sqlite3-behaviour.md §4.11: close().
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Database } = require('./_module');
const { tempDir, removeDir, listDir, throwsExactly, rejectsExactly } = require('./_helpers');

const { SqliteError } = Database;
const dir = tempDir();
after(() => removeDir(dir));

const NOT_OPEN = 'The database connection is not open';
const BUSY = 'This database connection is busy executing a query';
let counter = 0;
const nextFile = () => path.join(dir, `close-${++counter}.db`);

describe('4.11 close()', () => {
  it('4.11 returns this, sets open to false, and is idempotent', () => {
    const db = new Database(nextFile());
    assert.equal(db.open, true);
    assert.equal(db.close(), db);
    assert.equal(db.open, false);
    assert.equal(db.close(), db);
    assert.equal(db.close(), db);
    assert.equal(db.open, false);
    assert.equal(db.inTransaction, false);
  });

  it('4.11 afterwards every database method throws TypeError (backup rejects)', async () => {
    const file = nextFile();
    const db = new Database(file);
    db.exec('CREATE TABLE t(x)');
    db.close();
    throwsExactly(() => db.prepare('SELECT 1'), TypeError, NOT_OPEN);
    throwsExactly(() => db.exec('CREATE TABLE u(y)'), TypeError, NOT_OPEN);
    throwsExactly(() => db.pragma('cache_size'), TypeError, NOT_OPEN);
    throwsExactly(() => db.transaction(() => {}), TypeError, NOT_OPEN);
    throwsExactly(() => db.function('f', () => 1), TypeError, NOT_OPEN);
    throwsExactly(() => db.aggregate('a', { step: () => {} }), TypeError, NOT_OPEN);
    throwsExactly(() => db.table('vt', () => ({ columns: ['x'], *rows() {} })), TypeError, NOT_OPEN);
    throwsExactly(() => db.loadExtension(path.join(dir, 'no-extension')), TypeError, NOT_OPEN);
    throwsExactly(() => db.serialize(), TypeError, NOT_OPEN);
    const dest = path.join(dir, 'backup-after-close.db');
    await rejectsExactly(db.backup(dest), TypeError, NOT_OPEN);
    assert.equal(fs.existsSync(dest), false);
    // still allowed
    assert.equal(db.defaultSafeIntegers(true), db);
    assert.equal(db.close(), db);
    assert.deepEqual(
      { name: db.name, open: db.open, inTransaction: db.inTransaction, readonly: db.readonly, memory: db.memory },
      { name: file, open: false, inTransaction: false, readonly: false, memory: false },
    );
    // the schema change before close() is on disk
    const again = new Database(file);
    try {
      assert.deepEqual(again.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all(), ['t']);
    } finally {
      again.close();
    }
  });

  it('4.11 afterwards existing statements throw TypeError from run/get/all/iterate/bind/columns', () => {
    const db = new Database(nextFile());
    db.exec('CREATE TABLE people (name TEXT)');
    const reader = db.prepare('SELECT * FROM people');
    const writer = db.prepare("INSERT INTO people VALUES ('foobar')");
    const bound = db.prepare('SELECT * FROM people WHERE name = ?').bind('x');
    // they all worked before
    assert.deepEqual(writer.run(), { changes: 1, lastInsertRowid: 1 });
    assert.deepEqual(reader.all(), [{ name: 'foobar' }]);
    const it = reader.iterate();
    it.return();
    db.close();
    throwsExactly(() => writer.run(), TypeError, NOT_OPEN);
    throwsExactly(() => reader.run(), TypeError, NOT_OPEN);
    throwsExactly(() => reader.get(), TypeError, NOT_OPEN);
    throwsExactly(() => reader.all(), TypeError, NOT_OPEN);
    throwsExactly(() => reader.iterate(), TypeError, NOT_OPEN);
    throwsExactly(() => reader.bind(), TypeError, NOT_OPEN);
    throwsExactly(() => writer.bind(), TypeError, NOT_OPEN);
    throwsExactly(() => reader.columns(), TypeError, NOT_OPEN);
    throwsExactly(() => bound.get(), TypeError, NOT_OPEN);
    // the returned iterator stays finished
    assert.deepEqual(it.next(), { value: undefined, done: true });
  });

  it('4.11 WAL and SHM files are removed, the data stays in the main file', () => {
    const file = nextFile();
    const db = new Database(file);
    assert.equal(db.pragma('journal_mode = WAL', { simple: true }), 'wal');
    db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1), (2), (3)');
    assert.equal(fs.existsSync(`${file}-wal`), true);
    assert.equal(fs.existsSync(`${file}-shm`), true);
    db.close();
    assert.deepEqual(
      listDir(dir).filter((n) => n.startsWith(path.basename(file))),
      [path.basename(file)],
    );
    const again = new Database(file, { readonly: true });
    try {
      assert.deepEqual(again.prepare('SELECT x FROM t').pluck().all(), [1, 2, 3]);
      assert.equal(again.pragma('journal_mode', { simple: true }), 'wal');
    } finally {
      again.close();
    }
  });

  it('4.11 an open transaction is discarded and its locks released', () => {
    const file = nextFile();
    const db = new Database(file);
    db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
    db.exec('BEGIN EXCLUSIVE; INSERT INTO t VALUES (2)');
    const other = new Database(file, { timeout: 0 });
    try {
      throwsExactly(() => other.exec('BEGIN IMMEDIATE'), SqliteError, 'database is locked', { code: 'SQLITE_BUSY' });
      db.close();
      other.exec('BEGIN IMMEDIATE; INSERT INTO t VALUES (3); COMMIT');
      assert.deepEqual(other.prepare('SELECT x FROM t ORDER BY x').pluck().all(), [1, 3]);
    } finally {
      other.close();
    }
  });

  it('4.11 blocked (TypeError) while an iterator is open; the connection stays usable', () => {
    const db = new Database(nextFile());
    try {
      db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1), (2)');
      const it = db.prepare('SELECT x FROM t ORDER BY x').pluck().iterate();
      assert.deepEqual(it.next(), { value: 1, done: false });
      throwsExactly(() => db.close(), TypeError, BUSY);
      assert.equal(db.open, true);
      db.unsafeMode(); // unsafe mode does not allow it either
      throwsExactly(() => db.close(), TypeError, BUSY);
      db.unsafeMode(false);
      assert.deepEqual(it.next(), { value: 2, done: false });
      assert.deepEqual(it.next(), { value: undefined, done: true });
      assert.equal(db.close(), db); // fine once the iterator finished
      assert.equal(db.open, false);
    } finally {
      db.close();
    }
  });

  it('4.11 blocked (TypeError) while busy', () => {
    const db = new Database(':memory:');
    try {
      let caught;
      db.function('probe', () => {
        try {
          db.close();
        } catch (e) {
          caught = e;
        }
        return 1;
      });
      assert.equal(db.prepare('SELECT probe() AS x').get().x, 1);
      assert.ok(caught instanceof TypeError);
      assert.equal(caught.constructor, TypeError);
      assert.equal(caught.message, BUSY);
      assert.equal(db.open, true);
    } finally {
      db.close();
    }
  });
});
