'use strict';
// docs/better-sqlite3-behaviour.md §5.1–5.6: Statement construction, source, database, reader, readonly, busy.
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const { memdb, throwsTypeError, checkSqliteError, MSG } = require('./_helpers-stmt');
const { isCipherlite } = require('./_module');

describe('Statement basics (§5.1–5.6)', () => {
  let db;
  beforeEach(() => {
    db = memdb();
    db.exec('CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT)');
    db.exec("INSERT INTO t (b) VALUES ('x'), ('y'), ('z')");
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  it('5.1 new stmt.constructor() → TypeError, only prepare() makes statements', () => {
    const stmt = db.prepare('SELECT 1');
    throwsTypeError(
      () => new stmt.constructor('SELECT 1'),
      'Statements can only be constructed by the db.prepare() method',
    );
    throwsTypeError(() => new stmt.constructor(), 'Statements can only be constructed by the db.prepare() method');
  });

  it('5.1 calling the Statement class without new → TypeError', () => {
    const stmt = db.prepare('SELECT 1');
    throwsTypeError(
      () => stmt.constructor('SELECT 1'),
      'Statements can only be constructed by the db.prepare() method',
    );
  });

  it('5.1 stmt.constructor.name is "Statement"; every statement is an instance of one shared class', () => {
    const a = db.prepare('SELECT 1');
    const b = db.prepare('INSERT INTO t (b) VALUES (?)');
    assert.equal(typeof a.constructor, 'function');
    assert.equal(a.constructor.name, 'Statement');
    assert.equal(a.constructor, b.constructor);
    assert.ok(a instanceof a.constructor);
    assert.equal(Object.getPrototypeOf(a), Object.getPrototypeOf(b));
    // methods are shared prototype functions, not per-instance closures
    for (const m of ['run', 'get', 'all', 'iterate', 'bind', 'pluck', 'expand', 'raw', 'safeIntegers', 'columns']) {
      assert.equal(typeof a[m], 'function', m);
      assert.equal(a[m], b[m], m);
      assert.ok(!Object.prototype.hasOwnProperty.call(a, m), `${m} must live on the prototype`);
    }
  });

  it('5.1 each prepare() returns a new, independent object (even for identical SQL)', () => {
    const a = db.prepare('SELECT b FROM t ORDER BY a');
    const b = db.prepare('SELECT b FROM t ORDER BY a');
    assert.notEqual(a, b);
    a.pluck();
    assert.deepEqual(a.get(), 'x');
    assert.deepEqual(b.get(), { b: 'x' });
    // one is busy iterating, the other is not
    const it = a.iterate();
    assert.equal(a.busy, true);
    assert.equal(b.busy, false);
    assert.deepEqual(b.all(), [{ b: 'x' }, { b: 'y' }, { b: 'z' }]);
    it.return();
  });

  it("5.1 a statement's own enumerable keys are busy, reader, readonly, source, database", () => {
    const stmt = db.prepare('SELECT 1');
    assert.deepEqual(Object.keys(stmt), ['busy', 'reader', 'readonly', 'source', 'database']);
  });

  it('5.2 source is the SQL string exactly as given (whitespace and trailing comments kept)', () => {
    const sqls = [
      'SELECT 1',
      '  SELECT 1  ',
      'SELECT 1;',
      'SELECT 1; -- trailing comment\n',
      'SELECT 1 /* block */ ;  /* another */ \n\t',
      '\n-- leading comment\nSELECT b FROM t',
      "SELECT 'ünïcødé 😀' AS s",
    ];
    for (const sql of sqls) {
      const stmt = db.prepare(sql);
      assert.equal(stmt.source, sql);
      assert.equal(typeof stmt.source, 'string');
    }
    assert.deepEqual(db.prepare("SELECT 'ünïcødé 😀' AS s").get(), { s: 'ünïcødé 😀' });
  });

  it('5.2–5.5 source, database, reader and readonly are read-only, non-configurable, enumerable own properties', () => {
    const stmt = db.prepare('SELECT 1');
    for (const key of ['source', 'database', 'reader', 'readonly']) {
      const d = Object.getOwnPropertyDescriptor(stmt, key);
      assert.ok(d, key);
      assert.equal(d.writable, false, key);
      assert.equal(d.configurable, false, key);
      assert.equal(d.enumerable, true, key);
    }
    assert.throws(() => {
      stmt.source = 'SELECT 2';
    }, TypeError);
    assert.throws(() => {
      stmt.reader = false;
    }, TypeError);
    assert.throws(() => {
      delete stmt.readonly;
    }, TypeError);
    assert.equal(stmt.source, 'SELECT 1');
    assert.equal(stmt.reader, true);
    assert.equal(stmt.readonly, true);
  });

  it('5.3 database is the Database instance that prepared the statement', () => {
    const other = memdb();
    try {
      const a = db.prepare('SELECT 1');
      const b = other.prepare('SELECT 1');
      assert.equal(a.database, db);
      assert.equal(b.database, other);
      assert.notEqual(a.database, b.database);
    } finally {
      other.close();
    }
  });

  it('5.4 reader is true exactly for statements that return columns', () => {
    db.exec('CREATE TABLE r (x)');
    const cases = [
      ['SELECT 1', true],
      ['SELECT * FROM t', true],
      ['INSERT INTO t (b) VALUES (1)', false],
      ['INSERT INTO t (b) VALUES (1) RETURNING a', true],
      ['UPDATE t SET b = 1 RETURNING *', true],
      ['DELETE FROM t RETURNING a', true],
      ['UPDATE t SET b = 1', false],
      ['DELETE FROM t', false],
      ['CREATE TABLE u (x)', false],
      ['BEGIN', false],
      ['PRAGMA cache_size', true],
      ['PRAGMA cache_size = 10', false],
      ['PRAGMA journal_mode', true],
      ['EXPLAIN SELECT 1', true],
      ['EXPLAIN INSERT INTO t (b) VALUES (1)', true],
      ["VALUES (1, 'a')", true],
    ];
    for (const [sql, reader] of cases) {
      assert.equal(db.prepare(sql).reader, reader, sql);
    }
  });

  it('5.4 every pragma() statement counts as a reader; a prepared non-returning PRAGMA does not', () => {
    // db.pragma() reads through a reader statement even if SQLite returns no columns
    assert.deepEqual(db.pragma('cache_size = 10'), []);
    assert.equal(db.pragma('cache_size', { simple: true }), 10);
    // the same PRAGMA prepared by hand is not a reader
    const stmt = db.prepare('PRAGMA cache_size = 20');
    assert.equal(stmt.reader, false);
    throwsTypeError(() => stmt.get(), MSG.noData);
    assert.deepEqual(stmt.run(), { changes: 0, lastInsertRowid: 3 });
    assert.equal(db.pragma('cache_size', { simple: true }), 20);
  });

  it('5.5 readonly follows sqlite3_stmt_readonly', () => {
    db.exec('CREATE TABLE r (x)');
    const cases = [
      ['SELECT 1', true],
      ['SELECT * FROM t', true],
      ['BEGIN', true],
      ['BEGIN DEFERRED', true],
      ['BEGIN IMMEDIATE', false],
      ['BEGIN EXCLUSIVE', false],
      ['COMMIT', true],
      ['ROLLBACK', true],
      ['SAVEPOINT s', true],
      ['RELEASE s', true],
      ['DELETE FROM t RETURNING *', false],
      ['INSERT INTO t (b) VALUES (2)', false],
      ['UPDATE t SET b = 1', false],
      ['CREATE TABLE u (x)', false],
      ['PRAGMA cache_size', true],
      ['PRAGMA cache_size = 10', true],
      ['PRAGMA user_version = 3', false],
      ['PRAGMA journal_mode', false],
      ['EXPLAIN INSERT INTO t (b) VALUES (1)', false],
      ["ATTACH ':memory:' AS x", true],
      ['VACUUM', false],
    ];
    for (const [sql, readonly] of cases) {
      assert.equal(db.prepare(sql).readonly, readonly, sql);
    }
  });

  it('5.6 busy is true exactly while an iterator of this statement is open', () => {
    const stmt = db.prepare('SELECT b FROM t ORDER BY a');
    assert.equal(stmt.busy, false);
    const it = stmt.iterate();
    assert.equal(stmt.busy, true, 'busy as soon as the iterator exists, before next()');
    assert.deepEqual(it.next(), { value: { b: 'x' }, done: false });
    assert.equal(stmt.busy, true);
    it.next();
    it.next();
    assert.equal(stmt.busy, true, 'still busy on the last row');
    assert.deepEqual(it.next(), { value: undefined, done: true });
    assert.equal(stmt.busy, false, 'not busy once exhausted');

    // get/all never leave it busy
    stmt.get();
    assert.equal(stmt.busy, false);
    stmt.all();
    assert.equal(stmt.busy, false);
  });

  it('5.6 busy turns false after return(), break and a throw inside for..of', () => {
    const stmt = db.prepare('SELECT b FROM t ORDER BY a');
    const it = stmt.iterate();
    it.next();
    it.return();
    assert.equal(stmt.busy, false);

    for (const row of stmt.iterate()) {
      assert.equal(stmt.busy, true);
      assert.deepEqual(row, { b: 'x' });
      break;
    }
    assert.equal(stmt.busy, false);

    const boom = new Error('boom');
    assert.throws(
      () => {
        for (const row of stmt.iterate()) {
          void row;
          throw boom;
        }
      },
      (e) => e === boom,
    );
    assert.equal(stmt.busy, false);
  });

  it('5.6 busy turns false when the iterated query fails', () => {
    const stmt = db.prepare('SELECT CASE WHEN a = 2 THEN abs(-9223372036854775808) ELSE a END AS v FROM t ORDER BY a');
    const it = stmt.iterate();
    assert.deepEqual(it.next(), { value: { v: 1 }, done: false });
    assert.throws(
      () => it.next(),
      (e) => checkSqliteError(e, 'SQLITE_ERROR', 'integer overflow'),
    );
    assert.equal(stmt.busy, false);
    assert.deepEqual(it.next(), { value: undefined, done: true });
  });

  it('5.6 busy is false on a non-reader statement and is not a method', () => {
    const stmt = db.prepare("INSERT INTO t (b) VALUES ('w')");
    assert.equal(stmt.busy, false);
    assert.equal(typeof stmt.busy, 'boolean');
    stmt.run();
    assert.equal(stmt.busy, false);
  });

  it(
    '5.7 every statement and every database shares one map, whatever it was made from',
    { skip: !isCipherlite },
    () => {
      // A getter closure per instance gave each its own map: the \`this[kState]\` and
      // \`this[kNative]\` look-ups of run/get/all/exec then went megamorphic in a program with
      // a few statements (~10% of a small query's time). V8's own predicate, in a child
      // process (natives syntax).
      const { spawnSync } = require('node:child_process');
      const script = `
      const Database = require(${JSON.stringify(require.resolve('..'))});
      const a = new Database(':memory:'), b = new Database(':memory:', { readonly: false });
      const s = a.prepare('SELECT 1'), t = b.prepare('SELECT ?');
      const it = s.iterate();
      const getter = (o, k) => Object.getOwnPropertyDescriptor(o, k).get;
      const out = {
        statements: %HaveSameMap(s, t),
        databases: %HaveSameMap(a, b),
        busyGetter: getter(s, 'busy') === getter(t, 'busy'),
        dbGetters: ['name', 'open', 'inTransaction', 'readonly', 'memory'].every((k) => getter(a, k) === getter(b, k)),
        values: [s.busy, a.prepare('SELECT 3').busy, a.name, b.open, a.inTransaction, b.readonly, a.memory],
      };
      it.return();
      let foreign = [];
      for (const [o, k] of [[s, 'busy'], [a, 'name'], [a, 'inTransaction']]) {
        try { getter(o, k).call({}); foreign.push('no throw'); } catch (e) { foreign.push(e.constructor.name + ': ' + e.message); }
      }
      out.foreign = foreign;
      process.stdout.write(JSON.stringify(out));
    `;
      const res = spawnSync(process.execPath, ['--allow-natives-syntax', '-e', script], { encoding: 'utf8' });
      assert.equal(res.status, 0, res.stderr);
      assert.deepEqual(JSON.parse(res.stdout), {
        statements: true,
        databases: true,
        busyGetter: true,
        dbGetters: true,
        values: [true, false, ':memory:', true, false, false, true],
        foreign: ['TypeError: Illegal invocation', 'TypeError: Illegal invocation', 'TypeError: Illegal invocation'],
      });
    },
  );
});
