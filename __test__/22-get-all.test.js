'use strict';
// docs/better-sqlite3-behaviour.md §5.8 (get) and §5.9 (all).
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const { Database, memdb, throwsTypeError, throwsSqliteError, caught, MSG } = require('./_helpers-stmt');

describe('Statement#get() and Statement#all() (§5.8, §5.9)', () => {
  let db;
  beforeEach(() => {
    db = memdb();
    db.exec(`
			CREATE TABLE t (id INTEGER PRIMARY KEY, txt TEXT, num REAL, blb BLOB, nul);
			INSERT INTO t VALUES (1, 'one', 1.5, x'01ff', NULL);
			INSERT INTO t VALUES (2, 'two', -2.25, x'', NULL);
			INSERT INTO t VALUES (3, 'three', 0, x'00', NULL);
		`);
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  it('5.8 get() returns the first row as a plain object with every SQLite type mapped', () => {
    const row = db.prepare('SELECT * FROM t ORDER BY id').get();
    assert.deepStrictEqual(row, { id: 1, txt: 'one', num: 1.5, blb: Buffer.from([1, 255]), nul: null });
    assert.equal(Object.getPrototypeOf(row), Object.prototype);
    assert.ok(Buffer.isBuffer(row.blb));
  });

  it('5.8 get() returns undefined when there is no row', () => {
    assert.equal(db.prepare('SELECT * FROM t WHERE id > 100').get(), undefined);
    assert.equal(db.prepare('SELECT * FROM t WHERE id = ?').get(99), undefined);
  });

  it('5.8 get() resets the statement: repeated calls return the first row again', () => {
    const stmt = db.prepare('SELECT id FROM t ORDER BY id');
    assert.deepEqual(stmt.get(), { id: 1 });
    assert.deepEqual(stmt.get(), { id: 1 });
    assert.deepEqual(stmt.all(), [{ id: 1 }, { id: 2 }, { id: 3 }]);
    assert.deepEqual(stmt.get(), { id: 1 });
  });

  it('5.8 get() binds its arguments', () => {
    const stmt = db.prepare('SELECT txt FROM t WHERE id = ? OR txt = @t');
    assert.deepEqual(stmt.get(2, { t: 'nope' }), { txt: 'two' });
    assert.deepEqual(stmt.get(0, { t: 'three' }), { txt: 'three' });
  });

  it('5.8 get() on a non-reader → TypeError, nothing is executed', () => {
    const stmt = db.prepare("INSERT INTO t (txt) VALUES ('four')");
    throwsTypeError(() => stmt.get(), MSG.noData);
    throwsTypeError(() => db.prepare('DELETE FROM t').get(), MSG.noData);
    throwsTypeError(() => db.prepare('CREATE TABLE u (x)').get(), MSG.noData);
    assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 3);
  });

  it('5.8 get() on INSERT … RETURNING performs the whole write and returns the first returned row', () => {
    db.exec('CREATE TABLE r (x UNIQUE)');
    const row = db.prepare('INSERT INTO r VALUES (1), (2), (3) RETURNING x, x * 10 AS y').get();
    assert.deepStrictEqual(row, { x: 1, y: 10 });
    assert.equal(db.prepare('SELECT count(*) FROM r').pluck().get(), 3);
  });

  it('5.8 get() runtime failure → SqliteError; the statement stays usable', () => {
    const stmt = db.prepare('SELECT CASE WHEN ? THEN abs(-9223372036854775808) ELSE 7 END AS v');
    throwsSqliteError(() => stmt.get(1), 'SQLITE_ERROR', 'integer overflow');
    assert.deepEqual(stmt.get(0), { v: 7 });
  });

  it('5.8 get() with a failing write in RETURNING → SqliteError with the constraint code', () => {
    db.exec('CREATE TABLE r (x UNIQUE); INSERT INTO r VALUES (1)');
    throwsSqliteError(
      () => db.prepare('INSERT INTO r VALUES (2), (1) RETURNING x').get(),
      'SQLITE_CONSTRAINT_UNIQUE',
      'UNIQUE constraint failed: r.x',
    );
    assert.deepEqual(db.prepare('SELECT x FROM r').pluck().all(), [1]);
  });

  it('5.9 all() returns every row in order as a new array each call', () => {
    const stmt = db.prepare('SELECT id, txt FROM t ORDER BY id DESC');
    const a = stmt.all();
    assert.ok(Array.isArray(a));
    assert.deepStrictEqual(a, [
      { id: 3, txt: 'three' },
      { id: 2, txt: 'two' },
      { id: 1, txt: 'one' },
    ]);
    const b = stmt.all();
    assert.notEqual(a, b);
    assert.notEqual(a[0], b[0], 'rows are fresh objects');
    a[0].id = 99;
    a.push('junk');
    assert.deepStrictEqual(stmt.all(), [
      { id: 3, txt: 'three' },
      { id: 2, txt: 'two' },
      { id: 1, txt: 'one' },
    ]);
  });

  it('5.9 all() returns an empty array when there is no row', () => {
    const rows = db.prepare('SELECT * FROM t WHERE 0').all();
    assert.deepStrictEqual(rows, []);
    assert.ok(Array.isArray(rows));
  });

  it('5.9 all() maps every SQLite type in every row', () => {
    assert.deepStrictEqual(db.prepare('SELECT * FROM t ORDER BY id').all(), [
      { id: 1, txt: 'one', num: 1.5, blb: Buffer.from([1, 255]), nul: null },
      { id: 2, txt: 'two', num: -2.25, blb: Buffer.alloc(0), nul: null },
      { id: 3, txt: 'three', num: 0, blb: Buffer.from([0]), nul: null },
    ]);
  });

  it('5.9 all() handles a column whose type changes from row to row', () => {
    db.exec(`
			CREATE TABLE mixed (v);
			INSERT INTO mixed VALUES (1), ('text'), (2.5), (x'beef'), (NULL), (-7), (''), (x''), (9007199254740993), (3.0), (3), (-2147483649);
		`);
    const rows = db.prepare('SELECT v FROM mixed ORDER BY rowid').all();
    assert.deepStrictEqual(rows, [
      { v: 1 },
      { v: 'text' },
      { v: 2.5 },
      { v: Buffer.from([0xbe, 0xef]) },
      { v: null },
      { v: -7 },
      { v: '' },
      { v: Buffer.alloc(0) },
      { v: 9007199254740992 },
      { v: 3 },
      { v: 3 },
      { v: -2147483649 },
    ]);
    // with safeIntegers the INTEGER 3 becomes 3n but the REAL 3.0 in the same column stays 3
    const big = db.prepare('SELECT v FROM mixed ORDER BY rowid').safeIntegers().all();
    assert.deepStrictEqual(
      big.map((r) => r.v),
      [
        1n,
        'text',
        2.5,
        Buffer.from([0xbe, 0xef]),
        null,
        -7n,
        '',
        Buffer.alloc(0),
        9007199254740993n,
        3,
        3n,
        -2147483649n,
      ],
    );
    assert.deepStrictEqual(
      [...db.prepare('SELECT v FROM mixed ORDER BY rowid').pluck().safeIntegers().iterate()],
      big.map((r) => r.v),
    );
  });

  it('5.9 all() on a non-reader → TypeError, nothing is executed', () => {
    throwsTypeError(() => db.prepare("INSERT INTO t (txt) VALUES ('four')").all(), MSG.noData);
    throwsTypeError(() => db.prepare('UPDATE t SET txt = 1').all(), MSG.noData);
    assert.equal(db.prepare("SELECT count(*) FROM t WHERE txt = '1'").pluck().get(), 0);
  });

  it('5.9 all() on INSERT … RETURNING returns every inserted row', () => {
    db.exec('CREATE TABLE r (x)');
    assert.deepStrictEqual(db.prepare('INSERT INTO r VALUES (5), (6) RETURNING x, rowid AS id').all(), [
      { x: 5, id: 1 },
      { x: 6, id: 2 },
    ]);
  });

  it('5.9 all() failing mid-way throws SqliteError and returns no partial rows', () => {
    const stmt = db.prepare(
      'SELECT CASE WHEN id = ? THEN abs(-9223372036854775808) ELSE id END AS v FROM t ORDER BY id',
    );
    throwsSqliteError(() => stmt.all(3), 'SQLITE_ERROR', 'integer overflow');
    assert.deepEqual(stmt.all(0), [{ v: 1 }, { v: 2 }, { v: 3 }]);
  });

  it('5.9 a user function throwing on the third row: all() rethrows that very value, statement reusable', () => {
    const boom = new Error('row three');
    let calls = 0;
    db.function('check_row', (id) => {
      calls++;
      if (id === 3) throw boom;
      return id * 2;
    });
    const stmt = db.prepare('SELECT check_row(id) AS v FROM t ORDER BY id');
    const err = caught(() => stmt.all());
    assert.equal(err, boom);
    assert.equal(calls, 3);
    db.exec('DELETE FROM t WHERE id = 3');
    assert.deepEqual(stmt.all(), [{ v: 2 }, { v: 4 }]);
    // the JS error does not leak into the next unrelated SQLite error
    throwsSqliteError(() => db.prepare('SELECT abs(-9223372036854775808)').get(), 'SQLITE_ERROR', 'integer overflow');
  });

  it('5.8/5.9 non-Error values thrown by a user function propagate unchanged', () => {
    for (const value of ['a string', '', 0, null, { plain: true }]) {
      db.function('thrower', () => {
        throw value;
      });
      const err = caught(() => db.prepare('SELECT thrower()').get());
      assert.equal(err, value);
      const err2 = caught(() => db.prepare('SELECT thrower() FROM t').all());
      assert.equal(err2, value);
    }
  });

  it('5.9 all() of 10,000 generated rows', () => {
    const rows = db
      .prepare(
        `
			WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 10000)
			SELECT i, 'r' || i AS s, i * 0.5 AS h, CASE WHEN i % 3 = 0 THEN NULL ELSE x'ab' END AS b FROM c
		`,
      )
      .all();
    assert.equal(rows.length, 10000);
    assert.deepStrictEqual(rows[0], { i: 1, s: 'r1', h: 0.5, b: Buffer.from([0xab]) });
    assert.deepStrictEqual(rows[2], { i: 3, s: 'r3', h: 1.5, b: null });
    assert.deepStrictEqual(rows[9999], { i: 10000, s: 'r10000', h: 5000, b: Buffer.from([0xab]) });
    let sum = 0;
    for (let k = 0; k < rows.length; k++) {
      assert.equal(rows[k].i, k + 1);
      assert.equal(rows[k].s, `r${k + 1}`);
      sum += rows[k].h;
    }
    assert.equal(sum, (10000 * 10001) / 4);
    assert.equal(rows.filter((r) => r.b === null).length, 3333);
  });

  it('5.8/5.9 get()/all() of a SqliteError are instances of Database.SqliteError and Error', () => {
    const err = caught(() => db.prepare('SELECT abs(-9223372036854775808)').all());
    assert.ok(err instanceof Database.SqliteError);
    assert.ok(err instanceof Error);
    assert.ok(!(err instanceof TypeError));
    assert.equal(err.code, 'SQLITE_ERROR');
  });
});
