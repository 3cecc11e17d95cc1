'use strict';
// docs/better-sqlite3-behaviour.md §5.10 (iterate), §5.17 (changes while this statement iterates),
// §5.18 (iterator snapshot); lazy row-by-row stepping as observed through user functions and
// through writes made by the iterating connection in unsafe mode.
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const { memdb, throwsTypeError, checkSqliteError, caught, MSG } = require('./_helpers-stmt');

describe('Statement#iterate() (§5.10, §5.17, §5.18)', () => {
  let db;
  beforeEach(() => {
    db = memdb();
    db.exec(`
			CREATE TABLE t (id INTEGER PRIMARY KEY, v);
			INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'), (5, 'e');
		`);
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  it('5.10 the iterator has next(), return() and [Symbol.iterator]() returning itself, and no throw()', () => {
    const it = db.prepare('SELECT id FROM t').iterate();
    assert.equal(typeof it.next, 'function');
    assert.equal(typeof it.return, 'function');
    assert.equal(typeof it[Symbol.iterator], 'function');
    assert.equal(it[Symbol.iterator](), it);
    assert.equal(it.throw, undefined);
    assert.ok(!('throw' in it));
    it.return();
  });

  it('5.10 iterator objects cannot be constructed directly', () => {
    const it = db.prepare('SELECT id FROM t').iterate();
    throwsTypeError(() => new it.constructor(), 'Disabled constructor');
    it.return();
  });

  it('5.10 next() yields { value: row, done: false } records, then { value: undefined, done: true } forever', () => {
    const it = db.prepare('SELECT id, v FROM t WHERE id <= 2 ORDER BY id').iterate();
    const first = it.next();
    assert.deepStrictEqual(first, { value: { id: 1, v: 'a' }, done: false });
    assert.deepEqual(Object.keys(first), ['value', 'done']);
    assert.deepStrictEqual(it.next(), { value: { id: 2, v: 'b' }, done: false });
    const end = it.next();
    assert.deepStrictEqual(end, { value: undefined, done: true });
    assert.deepEqual(Object.keys(end), ['value', 'done']);
    assert.deepStrictEqual(it.next(), { value: undefined, done: true });
    assert.deepStrictEqual(it.next(), { value: undefined, done: true });
  });

  it('5.10 return() closes the iterator and ignores its argument', () => {
    const stmt = db.prepare('SELECT id FROM t ORDER BY id');
    const it = stmt.iterate();
    assert.deepStrictEqual(it.next(), { value: { id: 1 }, done: false });
    assert.deepStrictEqual(it.return(7), { value: undefined, done: true });
    assert.deepStrictEqual(it.next(), { value: undefined, done: true });
    assert.deepStrictEqual(it.return(), { value: undefined, done: true });
    assert.equal(stmt.busy, false);
  });

  it('5.10 for..of yields every row in order; iterate() with no row yields nothing', () => {
    const rows = [];
    for (const row of db.prepare('SELECT id, v FROM t ORDER BY id DESC').iterate()) rows.push(row);
    assert.deepStrictEqual(rows, [
      { id: 5, v: 'e' },
      { id: 4, v: 'd' },
      { id: 3, v: 'c' },
      { id: 2, v: 'b' },
      { id: 1, v: 'a' },
    ]);
    assert.deepStrictEqual([...db.prepare('SELECT * FROM t WHERE 0').iterate()], []);
    const it = db.prepare('SELECT * FROM t WHERE 0').iterate();
    assert.deepStrictEqual(it.next(), { value: undefined, done: true });
  });

  it('5.10 iterate() binds its arguments', () => {
    const stmt = db.prepare('SELECT v FROM t WHERE id > ? AND id < @hi ORDER BY id');
    assert.deepEqual([...stmt.iterate(1, { hi: 4 })], [{ v: 'b' }, { v: 'c' }]);
    assert.deepEqual([...stmt.iterate([3], { hi: 9 })], [{ v: 'd' }, { v: 'e' }]);
  });

  it('5.10 iterate() on a non-reader → TypeError', () => {
    throwsTypeError(() => db.prepare("INSERT INTO t (v) VALUES ('x')").iterate(), MSG.noData);
    assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 5);
  });

  it('5.10 break inside for..of closes the iterator; the statement can be reused from the start', () => {
    const stmt = db.prepare('SELECT id FROM t ORDER BY id');
    const seen = [];
    for (const row of stmt.iterate()) {
      seen.push(row.id);
      if (row.id === 2) break;
    }
    assert.deepEqual(seen, [1, 2]);
    assert.equal(stmt.busy, false);
    // reuse: every way of running it starts from the first row again
    assert.deepEqual(stmt.get(), { id: 1 });
    assert.deepEqual(
      stmt.all().map((r) => r.id),
      [1, 2, 3, 4, 5],
    );
    assert.deepEqual(
      [...stmt.iterate()].map((r) => r.id),
      [1, 2, 3, 4, 5],
    );
    // and writes are allowed again (no iterator left open)
    db.exec("INSERT INTO t VALUES (6, 'f')");
    assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 6);
  });

  it('5.10 a throw inside for..of closes the iterator and propagates unchanged', () => {
    const stmt = db.prepare('SELECT id FROM t ORDER BY id');
    const boom = { not: 'an Error' };
    const err = caught(() => {
      for (const row of stmt.iterate()) if (row.id === 3) throw boom;
    });
    assert.equal(err, boom);
    assert.equal(stmt.busy, false);
    db.exec('DELETE FROM t WHERE id = 5'); // not blocked: no iterator open
    assert.deepEqual([...stmt.iterate()].length, 4);
  });

  it('5.10 a user function throwing during next() closes the iterator and rethrows the same value', () => {
    const boom = new Error('fn failed');
    db.function('f', (id) => {
      if (id === 2) throw boom;
      return id;
    });
    const stmt = db.prepare('SELECT f(id) AS r FROM t ORDER BY id');
    const it = stmt.iterate();
    assert.deepStrictEqual(it.next(), { value: { r: 1 }, done: false });
    assert.equal(
      caught(() => it.next()),
      boom,
    );
    assert.equal(stmt.busy, false);
    assert.deepStrictEqual(it.next(), { value: undefined, done: true });
    db.exec("INSERT INTO t VALUES (10, 'z')"); // writes allowed: the iterator is gone
  });

  it('5.10 a SQLite error during next() throws SqliteError and closes the iterator', () => {
    const stmt = db.prepare(
      'SELECT CASE WHEN id = 3 THEN abs(-9223372036854775808) ELSE id END AS r FROM t ORDER BY id',
    );
    const it = stmt.iterate();
    it.next();
    it.next();
    assert.throws(
      () => it.next(),
      (e) => checkSqliteError(e, 'SQLITE_ERROR', 'integer overflow'),
    );
    assert.equal(stmt.busy, false);
    assert.deepStrictEqual(it.next(), { value: undefined, done: true });
  });

  it('5.10 rows are read lazily, one per next(): a user function runs exactly once per row fetched', () => {
    let calls = 0;
    db.function('count_call', (x) => {
      calls++;
      return x;
    });
    db.exec('INSERT INTO t (v) SELECT v FROM t; INSERT INTO t (v) SELECT v FROM t'); // 20 rows
    const it = db.prepare('SELECT count_call(id) AS r FROM t ORDER BY id').iterate();
    assert.equal(calls, 0, 'nothing runs before the first next()');
    assert.deepStrictEqual(it.next(), { value: { r: 1 }, done: false });
    assert.equal(calls, 1);
    it.next();
    assert.equal(calls, 2);
    it.next();
    assert.equal(calls, 3);
    it.return();
    assert.equal(calls, 3, 'return() does not fetch further rows');

    calls = 0;
    for (const row of db.prepare('SELECT count_call(id) AS r FROM t ORDER BY id').iterate()) {
      assert.equal(calls, row.r, 'the function has run for this row and no further one');
      if (row.r === 7) break;
    }
    assert.equal(calls, 7);
  });

  it('5.10 unsafe mode: rows appended by the iterating connection during iteration are seen (row-by-row stepping)', () => {
    db.exec('DELETE FROM t; INSERT INTO t (v) VALUES (1), (2), (3)');
    db.unsafeMode();
    const ins = db.prepare('INSERT INTO t (v) VALUES (?)');
    const seen = [];
    for (const row of db.prepare('SELECT id, v FROM t').iterate()) {
      seen.push(row.v);
      if (row.v < 10) ins.run(row.v + 10);
    }
    assert.deepEqual(seen, [1, 2, 3, 11, 12, 13]);
  });

  it('5.10 unsafe mode: an UPDATE of the next row made during iteration is visible when that row is reached', () => {
    db.exec('DELETE FROM t; INSERT INTO t (id, v) VALUES (1, 0), (2, 0), (3, 0), (4, 0), (5, 0)');
    db.unsafeMode();
    const up = db.prepare('UPDATE t SET v = 100 WHERE id = ?');
    const seen = [];
    for (const row of db.prepare('SELECT id, v FROM t').iterate()) {
      seen.push([row.id, row.v]);
      up.run(row.id + 1);
    }
    assert.deepEqual(seen, [
      [1, 0],
      [2, 100],
      [3, 100],
      [4, 100],
      [5, 100],
    ]);
  });

  it('5.10 unsafe mode: a row deleted ahead of the cursor during iteration is never returned', () => {
    db.exec('DELETE FROM t; INSERT INTO t (id, v) VALUES (1, 0), (2, 0), (3, 0), (4, 0), (5, 0), (6, 0)');
    db.unsafeMode();
    const del = db.prepare('DELETE FROM t WHERE id = ?');
    const seen = [];
    for (const row of db.prepare('SELECT id FROM t').iterate()) {
      seen.push(row.id);
      del.run(row.id + 1);
    }
    assert.deepEqual(seen, [1, 3, 5]);
    assert.deepEqual(db.prepare('SELECT id FROM t').pluck().all(), [1, 3, 5]);
  });

  it('5.10 unsafe mode: exec() of an UPDATE during iteration shows up in the rows still to come', () => {
    db.exec('DELETE FROM t; INSERT INTO t (id, v) VALUES (1, 0), (2, 0), (3, 0)');
    db.unsafeMode();
    const seen = [];
    for (const row of db.prepare('SELECT id, v FROM t ORDER BY id').iterate()) {
      seen.push([row.id, row.v]);
      db.exec('UPDATE t SET v = v + 1');
    }
    assert.deepEqual(seen, [
      [1, 0],
      [2, 1],
      [3, 2],
    ]);
    assert.deepEqual(db.prepare('SELECT v FROM t ORDER BY id').pluck().all(), [3, 3, 3]);
  });

  it('5.10 several iterators of different statements can be open and interleaved', () => {
    const a = db.prepare('SELECT id FROM t ORDER BY id').pluck().iterate();
    const b = db.prepare('SELECT v FROM t ORDER BY id DESC').pluck().iterate();
    const out = [];
    for (let k = 0; k < 5; k++) out.push(a.next().value, b.next().value);
    assert.deepEqual(out, [1, 'e', 2, 'd', 3, 'c', 4, 'b', 5, 'a']);
    assert.equal(a.next().done, true);
    assert.equal(b.next().done, true);
  });

  it('5.10 an iterator left open blocks writes and close() until it is returned', () => {
    const it = db.prepare('SELECT id FROM t').iterate();
    throwsTypeError(() => db.exec('DELETE FROM t'), MSG.dbBusy);
    throwsTypeError(() => db.close(), MSG.dbBusy);
    assert.equal(db.open, true);
    it.return();
    db.exec('DELETE FROM t');
    db.close();
    assert.equal(db.open, false);
  });

  it('5.10 iterate() over 10,000 rows', () => {
    let n = 0;
    let sum = 0;
    for (const row of db
      .prepare('WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 10000) SELECT i FROM c')
      .iterate()) {
      n++;
      sum += row.i;
      assert.equal(row.i, n);
    }
    assert.equal(n, 10000);
    assert.equal(sum, 50005000);
  });

  it('5.17 while a statement iterates, its get/all/iterate/bind/run/pluck/expand/raw/safeIntegers → TypeError', () => {
    const stmt = db.prepare('SELECT id FROM t ORDER BY id');
    const it = stmt.iterate();
    assert.deepStrictEqual(it.next(), { value: { id: 1 }, done: false });
    throwsTypeError(() => stmt.get(), MSG.stmtBusy);
    throwsTypeError(() => stmt.all(), MSG.stmtBusy);
    throwsTypeError(() => stmt.iterate(), MSG.stmtBusy);
    throwsTypeError(() => stmt.bind(), MSG.stmtBusy);
    throwsTypeError(() => stmt.run(), MSG.stmtBusy);
    throwsTypeError(() => stmt.pluck(), MSG.stmtBusy);
    throwsTypeError(() => stmt.pluck(false), MSG.stmtBusy);
    throwsTypeError(() => stmt.expand(), MSG.stmtBusy);
    throwsTypeError(() => stmt.raw(), MSG.stmtBusy);
    throwsTypeError(() => stmt.raw(false), MSG.stmtBusy);
    throwsTypeError(() => stmt.safeIntegers(), MSG.stmtBusy);
    throwsTypeError(() => stmt.safeIntegers(false), MSG.stmtBusy);
    // the iterator is unharmed and keeps going
    assert.deepStrictEqual(it.next(), { value: { id: 2 }, done: false });
    it.return();
    // afterwards everything works again
    assert.deepEqual(stmt.get(), { id: 1 });
    assert.equal(stmt.pluck(), stmt);
    assert.deepEqual(stmt.all(), [1, 2, 3, 4, 5]);
  });

  it('5.17 while a statement iterates, its columns() still works', () => {
    const stmt = db.prepare('SELECT id, v AS value FROM t');
    const it = stmt.iterate();
    it.next();
    assert.deepStrictEqual(stmt.columns(), [
      { name: 'id', column: 'id', table: 't', database: 'main', type: 'INTEGER' },
      { name: 'value', column: 'v', table: 't', database: 'main', type: null },
    ]);
    it.return();
  });

  it('5.17 other statements keep working (get/all/iterate) while one iterates', () => {
    const it = db.prepare('SELECT id FROM t ORDER BY id').iterate();
    it.next();
    const other = db.prepare('SELECT v FROM t WHERE id = ?');
    assert.deepEqual(other.get(3), { v: 'c' });
    assert.deepEqual(other.all(4), [{ v: 'd' }]);
    assert.deepEqual([...other.iterate(5)], [{ v: 'e' }]);
    assert.deepEqual(other.bind(1).get(), { v: 'a' });
    assert.deepStrictEqual(it.next(), { value: { id: 2 }, done: false });
    it.return();
  });

  it('5.18 an iterator keeps the mode and safeIntegers it was created with', () => {
    db.exec("INSERT INTO t VALUES (9007199254740993, 'big')");
    const stmt = db.prepare('SELECT id, v FROM t WHERE id IN (1, 9007199254740993) ORDER BY id').pluck().safeIntegers();
    const it = stmt.iterate();
    assert.deepStrictEqual(it.next(), { value: 1n, done: false });
    // attempts to change the statement fail and change nothing for the running iterator
    throwsTypeError(() => stmt.raw(), MSG.stmtBusy);
    throwsTypeError(() => stmt.safeIntegers(false), MSG.stmtBusy);
    throwsTypeError(() => stmt.pluck(false), MSG.stmtBusy);
    assert.deepStrictEqual(it.next(), { value: 9007199254740993n, done: false });
    assert.deepStrictEqual(it.next(), { value: undefined, done: true });
    // a new iterator takes the statement's new settings
    stmt.raw().safeIntegers(false);
    assert.deepStrictEqual(
      [...stmt.iterate()],
      [
        [1, 'a'],
        [9007199254740992, 'big'],
      ],
    );
  });

  it('5.18 an iterator created before db.defaultSafeIntegers() changes is unaffected, as is its statement', () => {
    const stmt = db.prepare('SELECT id FROM t WHERE id <= 2 ORDER BY id').pluck();
    const it = stmt.iterate();
    db.defaultSafeIntegers(true);
    assert.deepStrictEqual([...it], [1, 2]);
    assert.deepStrictEqual(stmt.all(), [1, 2]);
    assert.deepStrictEqual(db.prepare('SELECT id FROM t WHERE id <= 2 ORDER BY id').pluck().all(), [1n, 2n]);
  });
});
