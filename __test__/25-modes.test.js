'use strict';
// docs/better-sqlite3-behaviour.md §5.12–5.15 (pluck, expand, raw, safeIntegers) and §6 (modes summary).
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const { memdb, throwsTypeError, MSG } = require('./_helpers-stmt');

describe('Statement modes (§5.12–5.15, §6)', () => {
  let db;
  beforeEach(() => {
    db = memdb();
    db.exec(`
			CREATE TABLE a (id INTEGER PRIMARY KEY, name TEXT);
			CREATE TABLE b (id INTEGER PRIMARY KEY, a_id INTEGER, score REAL);
			INSERT INTO a VALUES (1, 'x'), (2, 'y');
			INSERT INTO b VALUES (10, 1, 0.5), (20, 2, 1.5);
		`);
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  const SQL =
    'SELECT a.id, a.name, b.score, b.id AS bid, a.id * 100 AS calc FROM a JOIN b ON b.a_id = a.id ORDER BY a.id';

  it('6 flat is the default mode: { column: value }', () => {
    const stmt = db.prepare(SQL);
    assert.deepStrictEqual(stmt.get(), { id: 1, name: 'x', score: 0.5, bid: 10, calc: 100 });
  });

  it('5.12 pluck() returns the statement and makes get/all/iterate return the first column only', () => {
    const stmt = db.prepare(SQL);
    assert.equal(stmt.pluck(), stmt);
    assert.equal(stmt.get(), 1);
    assert.deepStrictEqual(stmt.all(), [1, 2]);
    assert.deepStrictEqual([...stmt.iterate()], [1, 2]);
    assert.equal(db.prepare("SELECT NULL, 'second'").pluck().get(), null);
    assert.equal(db.prepare('SELECT 1 WHERE 0').pluck().get(), undefined);
  });

  it('5.12 pluck(true) turns it on, pluck(false) turns it off', () => {
    const stmt = db.prepare(SQL);
    assert.equal(stmt.pluck(true), stmt);
    assert.equal(stmt.get(), 1);
    assert.equal(stmt.pluck(false), stmt);
    assert.deepStrictEqual(stmt.get(), { id: 1, name: 'x', score: 0.5, bid: 10, calc: 100 });
  });

  it('5.12 pluck on a non-reader → TypeError', () => {
    const stmt = db.prepare('DELETE FROM a');
    throwsTypeError(() => stmt.pluck(), 'The pluck() method is only for statements that return data');
    throwsTypeError(() => stmt.pluck(false), 'The pluck() method is only for statements that return data');
  });

  it('5.12–5.15 a non-boolean argument (even undefined) → TypeError', () => {
    const stmt = db.prepare(SQL);
    for (const method of ['pluck', 'expand', 'raw', 'safeIntegers']) {
      for (const arg of [undefined, null, 1, 0, 'true', {}, new Boolean(true)]) {
        throwsTypeError(() => stmt[method](arg), MSG.expectBool);
      }
    }
    // nothing changed
    assert.deepStrictEqual(stmt.get(), { id: 1, name: 'x', score: 0.5, bid: 10, calc: 100 });
  });

  it('5.13 expand() nests columns under their table; expressions go under $', () => {
    const stmt = db.prepare(SQL);
    assert.equal(stmt.expand(), stmt);
    assert.deepStrictEqual(stmt.get(), { a: { id: 1, name: 'x' }, b: { score: 0.5, bid: 10 }, $: { calc: 100 } });
    assert.deepStrictEqual(stmt.all(), [
      { a: { id: 1, name: 'x' }, b: { score: 0.5, bid: 10 }, $: { calc: 100 } },
      { a: { id: 2, name: 'y' }, b: { score: 1.5, bid: 20 }, $: { calc: 200 } },
    ]);
    assert.deepStrictEqual([...stmt.iterate()][1], {
      a: { id: 2, name: 'y' },
      b: { score: 1.5, bid: 20 },
      $: { calc: 200 },
    });
  });

  it('5.13 expand() uses the real table name (not the alias) and the column name as shown', () => {
    const row = db
      .prepare('SELECT x.id, y.id AS other_id, x.name AS label FROM a AS x, a AS y WHERE x.id = 1 AND y.id = 2')
      .expand()
      .get();
    assert.deepStrictEqual(row, { a: { id: 1, other_id: 2, label: 'x' } });
    // same name from an aliased self-join: the later column wins inside the table object
    assert.deepStrictEqual(
      db.prepare('SELECT x.id, y.id FROM a AS x, a AS y WHERE x.id = 1 AND y.id = 2').expand().get(),
      { a: { id: 2 } },
    );
  });

  it('5.13 expand() groups view and subquery columns under their origin table', () => {
    db.exec("CREATE VIEW v AS SELECT id AS vid, name || '!' AS shout FROM a");
    assert.deepStrictEqual(db.prepare('SELECT vid, shout FROM v ORDER BY vid').expand().get(), {
      a: { vid: 1 },
      $: { shout: 'x!' },
    });
    assert.deepStrictEqual(db.prepare('SELECT s.n FROM (SELECT name AS n FROM a) AS s ORDER BY n').expand().get(), {
      a: { n: 'x' },
    });
  });

  it('5.13 expand() with only expressions gives { $: {...} }', () => {
    assert.deepStrictEqual(db.prepare('SELECT 1 AS one, NULL AS nil').expand().get(), { $: { one: 1, nil: null } });
  });

  it('5.13 expand() on a non-reader → TypeError; expand(false) only clears expand', () => {
    throwsTypeError(
      () => db.prepare('DELETE FROM a').expand(),
      'The expand() method is only for statements that return data',
    );
    const stmt = db.prepare(SQL).expand();
    assert.equal(stmt.expand(false), stmt);
    assert.deepStrictEqual(stmt.get(), { id: 1, name: 'x', score: 0.5, bid: 10, calc: 100 });
  });

  it('5.14 raw() returns rows as arrays (duplicate names kept)', () => {
    const stmt = db.prepare(SQL);
    assert.equal(stmt.raw(), stmt);
    assert.deepStrictEqual(stmt.get(), [1, 'x', 0.5, 10, 100]);
    assert.deepStrictEqual(stmt.all(), [
      [1, 'x', 0.5, 10, 100],
      [2, 'y', 1.5, 20, 200],
    ]);
    assert.deepStrictEqual(
      [...stmt.iterate()],
      [
        [1, 'x', 0.5, 10, 100],
        [2, 'y', 1.5, 20, 200],
      ],
    );
    assert.deepStrictEqual(db.prepare('SELECT 1 AS d, 2 AS d, 3 AS d').raw().get(), [1, 2, 3]);
    assert.ok(Array.isArray(stmt.get()));
  });

  it('5.14 raw() on a non-reader → TypeError; raw(false) only clears raw', () => {
    throwsTypeError(
      () => db.prepare('DELETE FROM a').raw(),
      'The raw() method is only for statements that return data',
    );
    const stmt = db.prepare(SQL).raw();
    assert.equal(stmt.raw(false), stmt);
    assert.deepStrictEqual(stmt.get(), { id: 1, name: 'x', score: 0.5, bid: 10, calc: 100 });
  });

  it('6 pluck, expand and raw are mutually exclusive: the last one turned on wins', () => {
    const stmt = db.prepare(SQL);
    stmt.raw().pluck();
    assert.equal(stmt.get(), 1);
    stmt.pluck().expand();
    assert.deepStrictEqual(stmt.get(), { a: { id: 1, name: 'x' }, b: { score: 0.5, bid: 10 }, $: { calc: 100 } });
    stmt.expand().raw();
    assert.deepStrictEqual(stmt.get(), [1, 'x', 0.5, 10, 100]);
    stmt.raw().pluck().raw();
    assert.deepStrictEqual(stmt.get(), [1, 'x', 0.5, 10, 100]);
  });

  it('6 turning off a mode that is not the current one changes nothing', () => {
    const stmt = db.prepare(SQL);
    stmt.raw().pluck(false);
    assert.deepStrictEqual(stmt.get(), [1, 'x', 0.5, 10, 100], 'pluck(false) keeps raw');
    stmt.expand(false);
    assert.deepStrictEqual(stmt.get(), [1, 'x', 0.5, 10, 100], 'expand(false) keeps raw');
    stmt.pluck().raw(false);
    assert.equal(stmt.get(), 1, 'raw(false) keeps pluck');
    stmt.expand(false);
    assert.equal(stmt.get(), 1, 'expand(false) keeps pluck');
    stmt.expand().pluck(false).raw(false);
    assert.deepStrictEqual(stmt.get(), { a: { id: 1, name: 'x' }, b: { score: 0.5, bid: 10 }, $: { calc: 100 } });
    // turning off the current mode goes back to flat
    stmt.expand(false);
    assert.deepStrictEqual(stmt.get(), { id: 1, name: 'x', score: 0.5, bid: 10, calc: 100 });
  });

  it('6 modes are per statement', () => {
    const p = db.prepare(SQL).pluck();
    const f = db.prepare(SQL);
    assert.equal(p.get(), 1);
    assert.deepStrictEqual(f.get(), { id: 1, name: 'x', score: 0.5, bid: 10, calc: 100 });
  });

  it('5.15 safeIntegers() makes INTEGER values BigInt; REAL stays number, TEXT stays string', () => {
    const stmt = db.prepare(
      "SELECT 1 AS i, 9007199254740993 AS big, -9223372036854775808 AS min, 2.0 AS r, 0.5 AS h, '123' AS t, NULL AS n, x'01' AS b",
    );
    assert.equal(stmt.safeIntegers(), stmt);
    assert.deepStrictEqual(stmt.get(), {
      i: 1n,
      big: 9007199254740993n,
      min: -9223372036854775808n,
      r: 2,
      h: 0.5,
      t: '123',
      n: null,
      b: Buffer.from([1]),
    });
    assert.equal(stmt.safeIntegers(false), stmt);
    assert.deepStrictEqual(stmt.get(), {
      i: 1,
      big: 9007199254740992,
      min: -9223372036854775808,
      r: 2,
      h: 0.5,
      t: '123',
      n: null,
      b: Buffer.from([1]),
    });
    stmt.safeIntegers(true);
    assert.equal(stmt.get().i, 1n);
  });

  it('5.15 safeIntegers is orthogonal to pluck / raw / expand', () => {
    const stmt = db.prepare(SQL).safeIntegers();
    assert.equal(stmt.pluck().get(), 1n);
    assert.deepStrictEqual(stmt.all(), [1n, 2n]);
    assert.deepStrictEqual(stmt.raw().get(), [1n, 'x', 0.5, 10n, 100n]);
    assert.deepStrictEqual(stmt.expand().get(), {
      a: { id: 1n, name: 'x' },
      b: { score: 0.5, bid: 10n },
      $: { calc: 100n },
    });
    assert.deepStrictEqual([...stmt.raw().iterate()][1], [2n, 'y', 1.5, 20n, 200n]);
    // switching modes keeps safeIntegers
    stmt.raw(false);
    assert.deepStrictEqual(stmt.get(), { id: 1n, name: 'x', score: 0.5, bid: 10n, calc: 100n });
  });

  it('5.15 safeIntegers() is allowed on non-readers and affects lastInsertRowid', () => {
    const ins = db.prepare("INSERT INTO a (name) VALUES ('z')");
    assert.equal(ins.safeIntegers(), ins);
    assert.deepStrictEqual(ins.run(), { changes: 1, lastInsertRowid: 3n });
    assert.deepStrictEqual(ins.safeIntegers(false).run(), { changes: 1, lastInsertRowid: 4 });
  });

  it('6 safeIntegers defaults to db.defaultSafeIntegers at prepare time; later changes do not affect it', () => {
    const before = db.prepare('SELECT id FROM a ORDER BY id').pluck();
    assert.equal(db.defaultSafeIntegers(), db);
    const during = db.prepare('SELECT id FROM a ORDER BY id').pluck();
    db.defaultSafeIntegers(false);
    const after = db.prepare('SELECT id FROM a ORDER BY id').pluck();
    assert.deepStrictEqual(before.all(), [1, 2]);
    assert.deepStrictEqual(during.all(), [1n, 2n]);
    assert.deepStrictEqual(after.all(), [1, 2]);
    db.defaultSafeIntegers(true);
    assert.deepStrictEqual(before.all(), [1, 2]);
    assert.deepStrictEqual(during.safeIntegers(false).all(), [1, 2]);
  });

  it('5.12–5.15 mode methods chain and apply to get, all and iterate alike', () => {
    const stmt = db.prepare('SELECT id, name FROM a WHERE id = ?').raw().safeIntegers();
    assert.deepStrictEqual(stmt.get(2), [2n, 'y']);
    assert.deepStrictEqual(stmt.all(2), [[2n, 'y']]);
    assert.deepStrictEqual([...stmt.iterate(2)], [[2n, 'y']]);
  });
});
