'use strict';
// docs/better-sqlite3-behaviour.md §4.12 defaultSafeIntegers(), §4.13 unsafeMode().
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Database } = require('./_module');
const { tempDir, removeDir, throwsExactly } = require('./_helpers');

const { SqliteError } = Database;
const dir = tempDir();
after(() => removeDir(dir));

const BUSY = 'This database connection is busy executing a query';
const NOT_BOOLEAN = 'Expected first argument to be a boolean';

function withDb(fn, filename = ':memory:') {
  const db = new Database(filename);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

describe('4.12 defaultSafeIntegers()', () => {
  it('4.12 returns this; no argument means true; a non-boolean throws TypeError', () =>
    withDb((db) => {
      const q = () => db.prepare('SELECT 42 AS x').get().x;
      assert.equal(q(), 42);
      assert.equal(db.defaultSafeIntegers(), db);
      assert.equal(q(), 42n);
      assert.equal(db.defaultSafeIntegers(false), db);
      assert.equal(q(), 42);
      assert.equal(db.defaultSafeIntegers(true), db);
      assert.equal(q(), 42n);
      for (const value of [undefined, null, 1, 0, 'true', {}]) {
        throwsExactly(() => db.defaultSafeIntegers(value), TypeError, NOT_BOOLEAN);
      }
      assert.equal(q(), 42n); // a rejected call changed nothing
    }));

  it('4.12 applies to statements prepared later only (values and lastInsertRowid)', () =>
    withDb((db) => {
      db.exec("CREATE TABLE t(i INTEGER, r REAL, s TEXT); INSERT INTO t VALUES (9007199254740993, 1.5, 'txt')");
      const before = db.prepare('SELECT i, r, s FROM t');
      const insertBefore = db.prepare('INSERT INTO t(i) VALUES (1)');
      db.defaultSafeIntegers();
      const afterOn = db.prepare('SELECT i, r, s FROM t');
      const insertAfter = db.prepare('INSERT INTO t(i) VALUES (2)');
      assert.deepEqual(before.get(), { i: 9007199254740992, r: 1.5, s: 'txt' }); // precision lost as a number
      assert.deepEqual(afterOn.get(), { i: 9007199254740993n, r: 1.5, s: 'txt' });
      assert.deepEqual(insertBefore.run(), { changes: 1, lastInsertRowid: 2 });
      assert.deepEqual(insertAfter.run(), { changes: 1, lastInsertRowid: 3n });
      assert.equal(db.pragma('user_version', { simple: true }), 0n); // pragma() prepares at call time
      db.defaultSafeIntegers(false);
      const afterOff = db.prepare('SELECT i FROM t WHERE rowid = 1').pluck();
      assert.equal(afterOff.get(), 9007199254740992);
      assert.deepEqual(afterOn.get(), { i: 9007199254740993n, r: 1.5, s: 'txt' }); // unchanged
      assert.deepEqual(insertAfter.run(), { changes: 1, lastInsertRowid: 4n });
      // a statement's own setting overrides the default
      db.defaultSafeIntegers(true);
      assert.equal(db.prepare('SELECT 5').pluck().safeIntegers(false).get(), 5);
    }));

  it('4.12 applies to functions and aggregates registered later without an explicit safeIntegers', () =>
    withDb((db) => {
      db.exec('CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1), (2)');
      db.function('fBefore', (x) => typeof x);
      db.aggregate('aBefore', { start: '', step: (acc, x) => acc + (typeof x)[0] });
      db.defaultSafeIntegers();
      db.function('fAfter', (x) => typeof x);
      db.function('fAfterExplicit', { safeIntegers: false }, (x) => typeof x);
      db.aggregate('aAfter', { start: '', step: (acc, x) => acc + (typeof x)[0] });
      db.defaultSafeIntegers(false);
      // the default at registration time counts, not the one at call time
      assert.deepEqual(db.prepare('SELECT fBefore(5) AS b, fAfter(5) AS a, fAfterExplicit(5) AS e').get(), {
        b: 'number',
        a: 'bigint',
        e: 'number',
      });
      assert.deepEqual(db.prepare('SELECT aBefore(x) AS b, aAfter(x) AS a FROM t').get(), { b: 'nn', a: 'bb' });
    }));

  it('4.12 applies to virtual tables registered later', () =>
    withDb((db) => {
      const def = () => ({
        columns: ['kind'],
        *rows(n) {
          yield [typeof n];
        },
      });
      db.table('tBefore', def());
      assert.equal(db.prepare('SELECT kind FROM tBefore(5)').pluck().get(), 'number');
      db.defaultSafeIntegers();
      db.table('tAfter', def());
      assert.equal(db.prepare('SELECT kind FROM tAfter(5)').pluck().safeIntegers(false).get(), 'bigint');
      assert.equal(db.prepare('SELECT kind FROM tBefore(5)').pluck().get(), 'number');
    }));

  it('4.12 allowed any time: while iterating, while busy, and when closed', () => {
    withDb((db) => {
      db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1), (2)');
      const it = db.prepare('SELECT x FROM t').pluck().iterate();
      assert.deepEqual(it.next(), { value: 1, done: false });
      assert.equal(db.defaultSafeIntegers(true), db);
      assert.deepEqual(it.next(), { value: 2, done: false }); // the running statement is unaffected
      it.return();
      assert.equal(db.prepare('SELECT x FROM t').pluck().get(), 1n);
      let inner;
      db.function('probe', () => {
        inner = db.defaultSafeIntegers(false);
        return 0;
      });
      db.prepare('SELECT probe()').get();
      assert.equal(inner, db);
      assert.equal(db.prepare('SELECT x FROM t').pluck().get(), 1);
    });
    const db = new Database(':memory:');
    db.close();
    assert.equal(db.defaultSafeIntegers(), db);
    assert.equal(db.defaultSafeIntegers(false), db);
    throwsExactly(() => db.defaultSafeIntegers('yes'), TypeError, NOT_BOOLEAN);
  });
});

describe('4.13 unsafeMode()', () => {
  it('4.13 returns this; no argument means true; a non-boolean throws TypeError', () =>
    withDb((db) => {
      assert.equal(db.unsafeMode(), db);
      assert.equal(db.unsafeMode(false), db);
      assert.equal(db.unsafeMode(true), db);
      for (const value of [undefined, null, 1, 'true', {}]) {
        throwsExactly(() => db.unsafeMode(value), TypeError, NOT_BOOLEAN);
      }
    }));

  it('4.13 off by default: run/exec/pragma throw TypeError while an iterator is open', () =>
    withDb((db) => {
      db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1), (2)');
      const write = db.prepare('INSERT INTO t VALUES (99)');
      let rows = 0;
      for (const _ of db.prepare('SELECT x FROM t').iterate()) {
        rows += 1;
        throwsExactly(() => write.run(), TypeError, BUSY);
        throwsExactly(() => db.exec('SELECT 5'), TypeError, BUSY);
        throwsExactly(() => db.pragma('cache_size'), TypeError, BUSY);
      }
      assert.equal(rows, 2);
      assert.deepEqual(db.prepare('SELECT x FROM t ORDER BY rowid').pluck().all(), [1, 2]);
    }));

  it('4.13 on: run/exec/pragma are allowed while an iterator is open; off again restores the checks', () =>
    withDb((db) => {
      db.exec('CREATE TABLE t(x); CREATE TABLE log(y); INSERT INTO t VALUES (1), (2)');
      const write = db.prepare('INSERT INTO log VALUES (?)');
      db.unsafeMode();
      const seen = [];
      for (const x of db.prepare('SELECT x FROM t ORDER BY rowid').pluck().iterate()) {
        seen.push(x);
        assert.deepEqual(write.run(x * 10), { changes: 1, lastInsertRowid: 2 * x - 1 });
        assert.equal(db.exec(`INSERT INTO log VALUES (${x * 100})`), db);
        assert.deepEqual(db.pragma('cache_size'), [{ cache_size: -16000 }]);
      }
      assert.deepEqual(seen, [1, 2]);
      assert.deepEqual(db.prepare('SELECT y FROM log ORDER BY rowid').pluck().all(), [10, 100, 20, 200]);
      db.unsafeMode(false);
      const it = db.prepare('SELECT x FROM t').iterate();
      it.next();
      throwsExactly(() => write.run(0), TypeError, BUSY);
      throwsExactly(() => db.exec('SELECT 1'), TypeError, BUSY);
      throwsExactly(() => db.pragma('cache_size'), TypeError, BUSY);
      it.return();
    }));

  it('4.13 toggles SQLITE_DBCONFIG_DEFENSIVE: sqlite_master writes and journal_mode=OFF', () =>
    withDb(
      (db) => {
        db.exec('CREATE TABLE foo(x)');
        const rename = (from, to) => db.exec(`UPDATE sqlite_master SET name = '${to}' WHERE name = '${from}'`);
        const names = () => db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all();

        // defensive (default)
        db.pragma('journal_mode = OFF');
        assert.equal(db.pragma('journal_mode', { simple: true }), 'delete');
        db.pragma('writable_schema = ON');
        assert.equal(db.pragma('writable_schema', { simple: true }), 0);
        throwsExactly(() => rename('foo', 'bar'), SqliteError, 'table sqlite_master may not be modified', {
          code: 'SQLITE_ERROR',
        });

        // unsafe
        db.unsafeMode();
        assert.equal(db.pragma('journal_mode = OFF', { simple: true }), 'off');
        assert.equal(db.pragma('journal_mode', { simple: true }), 'off');
        db.pragma('writable_schema = ON');
        assert.equal(db.pragma('writable_schema', { simple: true }), 1);
        rename('foo', 'bar');
        assert.deepEqual(names(), ['bar']);

        // defensive again
        db.unsafeMode(false);
        throwsExactly(() => rename('bar', 'foo'), SqliteError, 'table sqlite_master may not be modified', {
          code: 'SQLITE_ERROR',
        });
        assert.equal(db.pragma('journal_mode = DELETE', { simple: true }), 'delete');
        assert.equal(db.pragma('journal_mode = OFF', { simple: true }), 'delete');

        // and unsafe again
        db.unsafeMode(true);
        rename('bar', 'foo');
        assert.deepEqual(names(), ['foo']);
      },
      path.join(dir, 'defensive.db'),
    ));
});
