'use strict';
// docs/better-sqlite3-behaviour.md §9 verbose logging (the `verbose` constructor option) — better-sqlite3 v12 behaviour.
const { describe, it, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const { Database, throwsSame } = require('./_helpers-ext');

describe('9 verbose logging', () => {
  let db;
  let calls;
  let failWhen;
  /** Opens a database whose logger records [this, ...args] and throws when failWhen(sql) says so. */
  function open() {
    calls = [];
    failWhen = null;
    db = new Database(':memory:', {
      verbose: function (...args) {
        calls.push([this, ...args]);
        if (failWhen) {
          const thrown = failWhen(args[0]);
          if (thrown !== undefined) throw thrown;
        }
      },
    });
    return db;
  }
  const logged = () => calls.splice(0).map((c) => c[1]);
  afterEach(() => {
    if (db && db.open) db.close();
  });

  describe('9.1 once per execution, expanded SQL, this === undefined', () => {
    it('9.1 the logger gets exactly one argument, the SQL text, with this === undefined', () => {
      open();
      db.exec('SELECT 5');
      db.prepare('CREATE TABLE data (x)').run();
      assert.deepEqual(calls, [
        [undefined, 'SELECT 5'],
        [undefined, 'CREATE TABLE data (x)'],
      ]);
    });

    it('9.1 prepare() alone logs nothing; each run/get/all logs once, however many rows', () => {
      open();
      db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1), (2), (3);');
      logged();
      const select = db.prepare('SELECT x FROM t');
      const insert = db.prepare('INSERT INTO t VALUES (4)');
      assert.deepEqual(logged(), []);
      assert.deepEqual(select.pluck().all(), [1, 2, 3]);
      assert.equal(select.get(), 1);
      insert.run();
      insert.run();
      assert.deepEqual(logged(), [
        'SELECT x FROM t',
        'SELECT x FROM t',
        'INSERT INTO t VALUES (4)',
        'INSERT INTO t VALUES (4)',
      ]);
    });

    it("9.1 bound values are inlined: numbers as REAL, BigInt as integer, strings quoted, blobs as x'..', NULL", () => {
      open();
      const stmt = db.prepare('SELECT ?, @n, :m, $o');
      stmt.all(1, { n: 'x', m: null, o: Buffer.from('ab') });
      stmt.get(10n, { n: 2.5, m: -5, o: undefined });
      stmt.get(-9007199254740993n, { n: "it's", m: '', o: Buffer.alloc(0) });
      db.prepare('SELECT ?, ?').get(0, -0);
      db.prepare("SELECT '?' || ?").get("a'b");
      db.prepare('SELECT ?').get('line\nbreak');
      assert.deepEqual(logged(), [
        "SELECT 1.0, 'x', NULL, x'6162'",
        'SELECT 10, 2.5, -5.0, NULL',
        "SELECT -9007199254740993, 'it''s', '', x''",
        'SELECT 0.0, 0.0',
        "SELECT '?' || 'a''b'",
        "SELECT 'line\nbreak'",
      ]);
    });

    it('9.1 a statement with bind() logs its bound values on every execution', () => {
      open();
      const stmt = db.prepare('SELECT ?').bind(7);
      stmt.get();
      stmt.all();
      assert.deepEqual(logged(), ['SELECT 7.0', 'SELECT 7.0']);
    });

    it('9.1 the SQL is the statement text as SQLite holds it (trailing text after ";" dropped)', () => {
      open();
      db.prepare('SELECT 1;  ').get();
      db.prepare('SELECT 2 -- trailing comment').get();
      db.prepare('SELECT 3 /* c */ ; -- after').get();
      assert.deepEqual(logged(), ['SELECT 1;', 'SELECT 2 -- trailing comment', 'SELECT 3 /* c */ ;']);
    });

    it('9.1 user functions running inside a query do not cause extra log calls', () => {
      open();
      db.function('f', (x) => x * 2);
      assert.equal(db.prepare('SELECT f(?)').pluck().get(21n), 42);
      assert.deepEqual(logged(), ['SELECT f(21)']);
    });

    it('9.1 null and undefined disable logging', () => {
      for (const verbose of [null, undefined]) {
        const quiet = new Database(':memory:', { verbose });
        assert.equal(quiet.prepare('SELECT 1').pluck().get(), 1);
        quiet.close();
      }
    });
  });

  describe('9.2 exec, pragma, iterate, transactions', () => {
    it('9.2 exec logs each statement separately, as SQLite splits them', () => {
      open();
      db.exec('  CREATE TABLE t (a, b);\n INSERT INTO t VALUES (1, 2) ;  SELECT 3 -- c\n; ;SELECT 4;');
      assert.deepEqual(logged(), [
        'CREATE TABLE t (a, b);',
        'INSERT INTO t VALUES (1, 2) ;',
        'SELECT 3 -- c\n;',
        'SELECT 4;',
      ]);
      db.exec('');
      db.exec('  ;; ');
      db.exec('-- only a comment');
      assert.deepEqual(logged(), []);
    });

    it('9.2 pragma(x) logs "PRAGMA x" with x exactly as given', () => {
      open();
      db.pragma('cache_size');
      db.pragma('user_version = 3');
      assert.equal(db.pragma('  user_version  ', { simple: true }), 3);
      assert.deepEqual(logged(), ['PRAGMA cache_size', 'PRAGMA user_version = 3', 'PRAGMA   user_version  ']);
    });

    it('9.2 an iterator logs on its first next(), once; one returned before stepping logs nothing', () => {
      open();
      db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1), (2), (3);');
      logged();
      const stmt = db.prepare('SELECT x FROM t WHERE x > ?').pluck();
      const iterator = stmt.iterate(0);
      assert.deepEqual(logged(), []);
      assert.deepEqual(iterator.next(), { value: 1, done: false });
      assert.deepEqual(logged(), ['SELECT x FROM t WHERE x > 0.0']);
      assert.deepEqual([...iterator], [2, 3]);
      assert.deepEqual(logged(), []);
      stmt.iterate(1).return();
      assert.deepEqual(logged(), []);
      assert.deepEqual([...stmt.iterate(2n)], [3]);
      assert.deepEqual(logged(), ['SELECT x FROM t WHERE x > 2']);
    });

    it("9.2 the reference sequence of better-sqlite3's own test", () => {
      open();
      const stmt = db.prepare('select ?');
      db.exec('select 5');
      db.prepare('create table data (x)').run();
      stmt.get(BigInt(10));
      stmt.all(BigInt(15));
      stmt.iterate(BigInt(20)).return();
      for (const _row of stmt.iterate(BigInt(25)));
      db.pragma('cache_size');
      db.prepare("insert into data values ('hi')").run();
      db.prepare("insert into data values ('bye')").run();
      assert.deepEqual([...db.prepare('select x from data order by rowid').pluck().iterate()], ['hi', 'bye']);
      assert.deepEqual(calls, [
        [undefined, 'select 5'],
        [undefined, 'create table data (x)'],
        [undefined, 'select 10'],
        [undefined, 'select 15'],
        [undefined, 'select 25'],
        [undefined, 'PRAGMA cache_size'],
        [undefined, "insert into data values ('hi')"],
        [undefined, "insert into data values ('bye')"],
        [undefined, 'select x from data order by rowid'],
      ]);
    });

    it('9.2 transaction wrappers log their BEGIN / COMMIT / ROLLBACK statements', () => {
      open();
      const trx = db.transaction(() => db.prepare('SELECT 1').get());
      logged();
      trx();
      assert.deepEqual(logged(), ['BEGIN', 'SELECT 1', 'COMMIT']);
      trx.immediate();
      trx.exclusive();
      trx.deferred();
      assert.deepEqual(logged(), [
        'BEGIN IMMEDIATE',
        'SELECT 1',
        'COMMIT',
        'BEGIN EXCLUSIVE',
        'SELECT 1',
        'COMMIT',
        'BEGIN DEFERRED',
        'SELECT 1',
        'COMMIT',
      ]);
      const failing = db.transaction(() => {
        throw new Error('no');
      });
      assert.throws(() => failing(), { message: 'no' });
      assert.deepEqual(logged(), ['BEGIN', 'ROLLBACK']);
      const outer = db.transaction(() => db.transaction(() => {})());
      outer();
      const nested = logged();
      assert.equal(nested.length, 4);
      assert.equal(nested[0], 'BEGIN');
      assert.equal(nested[3], 'COMMIT');
      const savepoint = /^SAVEPOINT (.+)$/.exec(nested[1]);
      assert.ok(savepoint, nested[1]);
      assert.equal(nested[2], `RELEASE ${savepoint[1]}`);
    });
  });

  describe('9.3 truncation of long bound values', () => {
    it("9.3 strings longer than 32 bytes are cut after 32 bytes, followed by '/*+N bytes*/", () => {
      open();
      db.prepare('SELECT ?').get('this is a fairly short parameter');
      db.prepare('SELECT ?').get('this is a slightly longer parameter');
      db.prepare('SELECT ?').get(
        'this is surely a very long bound parameter value that doesnt need to be logged in its entirety',
      );
      db.prepare('SELECT ?, ?').get('a'.repeat(32), 'b'.repeat(33));
      assert.deepEqual(logged(), [
        "SELECT 'this is a fairly short parameter'",
        "SELECT 'this is a slightly longer parame'/*+3 bytes*/",
        "SELECT 'this is surely a very long bound'/*+62 bytes*/",
        `SELECT '${'a'.repeat(32)}', '${'b'.repeat(32)}'/*+1 bytes*/`,
      ]);
    });

    it('9.3 the limit counts UTF-8 bytes, not characters', () => {
      open();
      db.prepare('SELECT ?').get('é'.repeat(20)); // 40 bytes
      db.prepare('SELECT ?').get('é'.repeat(16)); // exactly 32 bytes
      assert.deepEqual(logged(), [`SELECT '${'é'.repeat(16)}'/*+8 bytes*/`, `SELECT '${'é'.repeat(16)}'`]);
    });

    it('9.3 blobs are cut after 32 bytes the same way', () => {
      open();
      db.prepare('SELECT ?').get(Buffer.alloc(40, 1));
      db.prepare('SELECT ?').get(Buffer.alloc(32, 0xab));
      assert.deepEqual(logged(), [`SELECT x'${'01'.repeat(32)}'/*+8 bytes*/`, `SELECT x'${'ab'.repeat(32)}'`]);
    });

    it('9.3 the stored value is not truncated', () => {
      open();
      const long = 'z'.repeat(100);
      db.exec('CREATE TABLE t (v)');
      db.prepare('INSERT INTO t VALUES (?)').run(long);
      assert.equal(db.prepare('SELECT v FROM t').pluck().get(), long);
      assert.deepEqual(logged(), [
        'CREATE TABLE t (v)',
        `INSERT INTO t VALUES ('${'z'.repeat(32)}'/*+68 bytes*/)`,
        'SELECT v FROM t',
      ]);
    });
  });

  describe('9.4 a throwing logger prevents execution', () => {
    it('9.4 run/get/all/iterate/exec: the same error propagates and the statement does not run', () => {
      open();
      db.exec('CREATE TABLE data (x)');
      let fnCalls = 0;
      db.function('fn', (value) => {
        fnCalls += 1;
        return value;
      });
      const err = new Error('logger failed');
      const attempts = [
        () => db.exec('INSERT INTO data VALUES (fn(1))'),
        () => db.prepare('INSERT INTO data VALUES (fn(2))').run(),
        () => db.prepare('INSERT INTO data VALUES (fn(?))').run(3),
        () => db.prepare('SELECT fn(?)').get(4),
        () => db.prepare('SELECT fn(?)').all(5),
        () => [...db.prepare('SELECT fn(?)').iterate(6)],
      ];
      for (const attempt of attempts) {
        failWhen = () => err;
        throwsSame(attempt, err);
        failWhen = null;
      }
      assert.equal(fnCalls, 0);
      assert.equal(db.prepare('SELECT count(*) FROM data').pluck().get(), 0);
      // and the statements work once the logger stops throwing
      for (const attempt of attempts) attempt();
      assert.equal(fnCalls, 6);
      assert.equal(db.prepare('SELECT count(*) FROM data').pluck().get(), 3);
    });

    it('9.4 any thrown value propagates unchanged', () => {
      open();
      for (const value of ['a string', '', { an: 'object' }, null, 0, new TypeError('typed')]) {
        failWhen = () => value; // anything but undefined is thrown by the logger
        throwsSame(() => db.prepare('SELECT 1').get(), value);
      }
    });

    it('9.4 exec: earlier statements ran, the one whose log threw and all later ones did not', () => {
      open();
      db.exec('CREATE TABLE t (x)');
      const err = new Error('stop at 2');
      failWhen = (sql) => (sql.startsWith('INSERT INTO t VALUES (2)') ? err : undefined);
      throwsSame(() => db.exec('INSERT INTO t VALUES (1); INSERT INTO t VALUES (2); INSERT INTO t VALUES (3);'), err);
      failWhen = null;
      assert.deepEqual(db.prepare('SELECT x FROM t').pluck().all(), [1]);
    });

    it('9.4 pragma: a throwing logger means the pragma is not applied', () => {
      open();
      const err = new Error('no pragma');
      failWhen = (sql) => (sql.startsWith('PRAGMA') ? err : undefined);
      throwsSame(() => db.pragma('user_version = 5'), err);
      failWhen = null;
      assert.equal(db.pragma('user_version', { simple: true }), 0);
    });

    it('9.4 iterator: the error comes from the first next() and closes the iterator', () => {
      open();
      db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1);');
      const err = new Error('no iteration');
      const iterator = db.prepare('SELECT x FROM t').iterate();
      failWhen = () => err;
      throwsSame(() => iterator.next(), err);
      failWhen = null;
      assert.deepEqual(iterator.next(), { value: undefined, done: true });
      // the connection is no longer iterating
      assert.equal(db.exec('SELECT 1'), db);
    });

    it('9.4 transactions: a throwing logger on BEGIN skips the function; on COMMIT the work is rolled back', () => {
      open();
      db.exec('CREATE TABLE t (x)');
      const err = new Error('log failure');
      let ran = false;
      failWhen = (sql) => (sql === 'BEGIN' ? err : undefined);
      throwsSame(
        () =>
          db.transaction(() => {
            ran = true;
          })(),
        err,
      );
      assert.equal(ran, false);
      assert.equal(db.inTransaction, false);
      failWhen = (sql) => (sql === 'COMMIT' ? err : undefined);
      throwsSame(
        () =>
          db.transaction(() => {
            db.prepare('INSERT INTO t VALUES (9)').run();
          })(),
        err,
      );
      failWhen = null;
      assert.equal(db.inTransaction, false);
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 0);
    });
  });
});
