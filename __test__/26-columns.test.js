'use strict';
// docs/better-sqlite3-behaviour.md §5.16: Statement#columns().
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const { memdb, throwsTypeError, busyProbe, checkError, MSG } = require('./_helpers-stmt');

const col = (name, column, table, database, type) => ({ name, column, table, database, type });
const expr = (name) => col(name, null, null, null, null);

describe('Statement#columns() (§5.16)', () => {
  let db;
  beforeEach(() => {
    db = memdb();
    db.exec(`
			CREATE TABLE ct (a INTEGER, b VARCHAR(10), c, "d e" blob);
			INSERT INTO ct VALUES (1, 'b', 'c', x'00');
		`);
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  it('5.16 returns { name, column, table, database, type } per column, in that key order', () => {
    const cols = db.prepare('SELECT a, b AS bb, c, "d e" FROM ct').columns();
    assert.ok(Array.isArray(cols));
    assert.deepStrictEqual(cols, [
      col('a', 'a', 'ct', 'main', 'INTEGER'),
      col('bb', 'b', 'ct', 'main', 'VARCHAR(10)'),
      col('c', 'c', 'ct', 'main', null),
      col('d e', 'd e', 'ct', 'main', 'BLOB'),
    ]);
    for (const c of cols) {
      assert.deepEqual(Object.keys(c), ['name', 'column', 'table', 'database', 'type']);
      assert.equal(Object.getPrototypeOf(c), Object.prototype);
    }
  });

  it('5.16 expressions have null origin fields and null type', () => {
    assert.deepStrictEqual(db.prepare("SELECT 1 + 1, a + 0 AS e, 'lit' AS s, NULL, count(*) AS n FROM ct").columns(), [
      expr('1 + 1'),
      expr('e'),
      expr('s'),
      expr('NULL'),
      expr('n'),
    ]);
  });

  it('5.16 rowid columns report the table and INTEGER', () => {
    assert.deepStrictEqual(db.prepare('SELECT ct.rowid FROM ct').columns(), [
      col('rowid', 'rowid', 'ct', 'main', 'INTEGER'),
    ]);
  });

  it('5.16 views and subqueries report the origin table column', () => {
    db.exec("CREATE VIEW cv AS SELECT a AS va, b || 'x' AS vb FROM ct");
    assert.deepStrictEqual(db.prepare('SELECT va, vb FROM cv').columns(), [
      col('va', 'a', 'ct', 'main', 'INTEGER'),
      expr('vb'),
    ]);
    assert.deepStrictEqual(db.prepare('SELECT x FROM (SELECT a AS x FROM ct)').columns(), [
      col('x', 'a', 'ct', 'main', 'INTEGER'),
    ]);
  });

  it('5.16 database is the schema name: main, temp or an attached name', () => {
    db.exec("ATTACH ':memory:' AS other; CREATE TABLE other.ot (z REAL); CREATE TEMP TABLE tt (y text)");
    assert.deepStrictEqual(db.prepare('SELECT z, y FROM other.ot, tt').columns(), [
      col('z', 'z', 'ot', 'other', 'REAL'),
      col('y', 'y', 'tt', 'temp', 'TEXT'),
    ]);
  });

  it('5.16 works for RETURNING and reader PRAGMAs', () => {
    assert.deepStrictEqual(db.prepare('INSERT INTO ct (a) VALUES (1) RETURNING a, b AS q, 7 AS k').columns(), [
      col('a', 'a', 'ct', 'main', 'INTEGER'),
      col('q', 'b', 'ct', 'main', 'VARCHAR(10)'),
      expr('k'),
    ]);
    assert.deepStrictEqual(
      db.prepare('PRAGMA table_info(ct)').columns(),
      ['cid', 'name', 'type', 'notnull', 'dflt_value', 'pk'].map(expr),
    );
  });

  it('5.16 duplicate names are all listed', () => {
    assert.deepStrictEqual(db.prepare('SELECT 1 AS a, 2 AS a, a FROM ct').columns(), [
      expr('a'),
      expr('a'),
      col('a', 'a', 'ct', 'main', 'INTEGER'),
    ]);
  });

  it('5.16 is independent of the statement mode and returns fresh objects each call', () => {
    const stmt = db.prepare('SELECT a FROM ct');
    const first = stmt.columns();
    first[0].name = 'changed';
    first.push('junk');
    stmt.pluck().safeIntegers();
    const second = stmt.columns();
    assert.notEqual(first, second);
    assert.deepStrictEqual(second, [col('a', 'a', 'ct', 'main', 'INTEGER')]);
    stmt.raw();
    assert.deepStrictEqual(stmt.columns(), [col('a', 'a', 'ct', 'main', 'INTEGER')]);
  });

  it('5.16 columns() on a non-reader → TypeError', () => {
    throwsTypeError(
      () => db.prepare('INSERT INTO ct (a) VALUES (1)').columns(),
      'The columns() method is only for statements that return data',
    );
    throwsTypeError(
      () => db.prepare('CREATE TABLE z (x)').columns(),
      'The columns() method is only for statements that return data',
    );
  });

  it('5.16 after ALTER TABLE ADD COLUMN, columns() shows the new column once the statement ran again', () => {
    db.exec('CREATE TABLE s (a, b); INSERT INTO s VALUES (1, 2)');
    const stmt = db.prepare('SELECT * FROM s');
    assert.deepStrictEqual(stmt.all(), [{ a: 1, b: 2 }]);
    db.exec('ALTER TABLE s ADD COLUMN c TEXT DEFAULT 7');
    assert.deepStrictEqual(stmt.get(), { a: 1, b: 2, c: '7' });
    assert.deepStrictEqual(stmt.columns(), [
      col('a', 'a', 's', 'main', null),
      col('b', 'b', 's', 'main', null),
      col('c', 'c', 's', 'main', 'TEXT'),
    ]);
  });

  it('5.16 after DROP and CREATE with other columns, columns() shows the new ones once the statement ran again', () => {
    db.exec('CREATE TABLE s (a, b); INSERT INTO s VALUES (1, 2)');
    const stmt = db.prepare('SELECT * FROM s');
    stmt.all();
    db.exec("DROP TABLE s; CREATE TABLE s (p TEXT, q INT); INSERT INTO s VALUES ('x', 9)");
    assert.deepStrictEqual(stmt.all(), [{ p: 'x', q: 9 }]);
    assert.deepStrictEqual(stmt.columns(), [col('p', 'p', 's', 'main', 'TEXT'), col('q', 'q', 's', 'main', 'INT')]);
  });

  it('5.16 columns() works while the statement itself iterates', () => {
    const stmt = db.prepare('SELECT a, b FROM ct');
    const it = stmt.iterate();
    it.next();
    assert.deepStrictEqual(stmt.columns(), [
      col('a', 'a', 'ct', 'main', 'INTEGER'),
      col('b', 'b', 'ct', 'main', 'VARCHAR(10)'),
    ]);
    it.return();
  });

  it('5.16 columns() from inside a user function (busy) → TypeError', () => {
    const stmt = db.prepare('SELECT a FROM ct');
    const busy = busyProbe(db);
    const out = busy(() => stmt.columns());
    checkError(out.error, TypeError, MSG.dbBusy);
  });

  it('5.16 columns() after close() → TypeError', () => {
    const stmt = db.prepare('SELECT a FROM ct');
    db.close();
    throwsTypeError(() => stmt.columns(), MSG.notOpen);
  });

  it('5.16 columns() of a statement whose columns come from a join list each origin table', () => {
    db.exec('CREATE TABLE other (id INTEGER PRIMARY KEY, v DOUBLE)');
    assert.deepStrictEqual(
      db.prepare('SELECT ct.a, other.id, other.v FROM ct LEFT JOIN other ON other.id = ct.a').columns(),
      [
        col('a', 'a', 'ct', 'main', 'INTEGER'),
        col('id', 'id', 'other', 'main', 'INTEGER'),
        col('v', 'v', 'other', 'main', 'DOUBLE'),
      ],
    );
  });
});
