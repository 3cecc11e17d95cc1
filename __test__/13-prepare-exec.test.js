'use strict';
// docs/better-sqlite3-behaviour.md §4: 4.1 prepare(), 4.2 exec(), 4.4 transaction() entry checks
// (transaction semantics, §7, are tested elsewhere).
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const { Database } = require('./_module');
const { tempDir, removeDir, throwsExactly } = require('./_helpers');

const { SqliteError } = Database;
const dir = tempDir();
after(() => removeDir(dir));

const NOT_OPEN = 'The database connection is not open';
const BUSY = 'This database connection is busy executing a query';
const NOT_STRING = 'Expected first argument to be a string';
const NO_STATEMENTS = 'The supplied SQL string contains no statements';
const MANY_STATEMENTS = 'The supplied SQL string contains more than one statement';

function withDb(fn, options) {
  const db = new Database(':memory:', options);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

/** Run `probe` while the connection is busy (inside a user function that SQLite is running). */
function whileBusy(db, probe) {
  let result;
  db.function('busy_probe', () => {
    result = (() => {
      try {
        return { value: probe() };
      } catch (error) {
        return { error };
      }
    })();
    return 1;
  });
  assert.equal(db.prepare('SELECT busy_probe() AS x').get().x, 1);
  return result;
}

function expectBusyError(result) {
  assert.ok(result && result.error, 'expected the call to throw while busy');
  assert.ok(result.error instanceof TypeError);
  assert.equal(result.error.constructor, TypeError);
  assert.equal(result.error.message, BUSY);
}

describe('4.1 prepare(sql)', () => {
  it('4.1 returns a new Statement for each call', () =>
    withDb((db) => {
      const a = db.prepare('SELECT 1 AS x');
      const b = db.prepare('SELECT 1 AS x');
      assert.notEqual(a, b);
      assert.equal(a.constructor, b.constructor);
      assert.equal(a.constructor.name, 'Statement');
      assert.equal(a.source, 'SELECT 1 AS x');
      assert.equal(a.database, db);
      assert.deepEqual(a.get(), { x: 1 });
    }));

  it('4.1 non-string SQL (incl. new String) throws TypeError', () =>
    withDb((db) => {
      for (const sql of [
        undefined,
        null,
        1,
        0,
        true,
        {},
        ['SELECT 1'],
        new String('SELECT 1'),
        () => 'SELECT 1',
        Symbol('s'),
        Buffer.from('SELECT 1'),
      ]) {
        throwsExactly(() => db.prepare(sql), TypeError, NOT_STRING);
      }
      throwsExactly(() => db.prepare(), TypeError, NOT_STRING);
    }));

  it('4.1 syntax errors and unknown tables throw SqliteError SQLITE_ERROR', () =>
    withDb((db) => {
      throwsExactly(() => db.prepare('SELEC 1'), SqliteError, 'near "SELEC": syntax error', { code: 'SQLITE_ERROR' });
      throwsExactly(() => db.prepare('SELECT * FROM nope'), SqliteError, 'no such table: nope', {
        code: 'SQLITE_ERROR',
      });
      throwsExactly(() => db.prepare('SELECT nocol FROM sqlite_master'), SqliteError, 'no such column: nocol', {
        code: 'SQLITE_ERROR',
      });
      throwsExactly(() => db.prepare('SELECT (1'), SqliteError, 'incomplete input', { code: 'SQLITE_ERROR' });
    }));

  it('4.1 empty SQL, whitespace, bare ";" and comments only throw RangeError', () =>
    withDb((db) => {
      for (const sql of ['', ' ', '\n\t ', ';', ' ; ;\n', '-- just a comment', '/* block */', '/* a */ ; -- b\n;']) {
        throwsExactly(() => db.prepare(sql), RangeError, NO_STATEMENTS);
      }
    }));

  it('4.1 more than one statement throws RangeError', () =>
    withDb((db) => {
      for (const sql of [
        'SELECT 1; SELECT 2',
        'SELECT 1;SELECT 2;',
        'SELECT 1;\n-- c\nSELECT 2',
        'SELECT 1; /* c */ SELECT 2',
        'SELECT 1; - 2',
        'SELECT 1; /',
        'SELECT 1; x',
      ]) {
        throwsExactly(() => db.prepare(sql), RangeError, MANY_STATEMENTS);
      }
      // the second statement is never run
      db.exec('CREATE TABLE t(x)');
      throwsExactly(() => db.prepare('SELECT 1; INSERT INTO t VALUES (1)'), RangeError, MANY_STATEMENTS);
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 0);
      // only ASCII whitespace is skipped after the statement (U+00A0 is not)
      throwsExactly(() => db.prepare('SELECT 1;\u00a0'), RangeError, MANY_STATEMENTS);
    }));

  it('4.1 trailing whitespace, semicolons and comments after the statement are allowed', () =>
    withDb((db) => {
      for (const sql of [
        'SELECT 7 AS x;',
        'SELECT 7 AS x;;',
        'SELECT 7 AS x ; \n\t',
        'SELECT 7 AS x; -- trailing',
        'SELECT 7 AS x /* a */ ; /* b */ \n -- c',
        'SELECT 7 AS x; /* unterminated',
        '-- leading\nSELECT 7 AS x',
        'SELECT 7 AS x; -- c1\n-- c2\n',
      ]) {
        const stmt = db.prepare(sql);
        assert.equal(stmt.source, sql);
        assert.deepEqual(stmt.get(), { x: 7 });
      }
      // a NUL character ends the SQL text: whatever follows it is ignored
      const stmt = db.prepare('SELECT 7 AS x;\0SELECT 2');
      assert.deepEqual(stmt.get(), { x: 7 });
    }));

  it('4.1 allowed while an iterator is open', () =>
    withDb((db) => {
      db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1), (2)');
      const seen = [];
      for (const x of db.prepare('SELECT x FROM t ORDER BY x').pluck().iterate()) {
        const stmt = db.prepare('SELECT ? * 10 AS y');
        seen.push(stmt.get(x).y);
      }
      assert.deepEqual(seen, [10, 20]);
    }));

  it('4.1 blocked (TypeError) while the connection is busy', () =>
    withDb((db) => {
      expectBusyError(whileBusy(db, () => db.prepare('SELECT 1')));
    }));

  it('4.1 blocked (TypeError) once closed; argument type is checked first', () => {
    const db = new Database(':memory:');
    db.close();
    throwsExactly(() => db.prepare('SELECT 1'), TypeError, NOT_OPEN);
    throwsExactly(() => db.prepare(''), TypeError, NOT_OPEN);
    throwsExactly(() => db.prepare(1), TypeError, NOT_STRING);
  });
});

describe('4.2 exec(sql)', () => {
  it('4.2 runs several ;-separated statements and returns this', () =>
    withDb((db) => {
      assert.equal(
        db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1); INSERT INTO t VALUES (2);\n INSERT INTO t VALUES (3)'),
        db,
      );
      assert.deepEqual(db.prepare('SELECT x FROM t ORDER BY rowid').pluck().all(), [1, 2, 3]);
      // statements returning rows are run to completion, results discarded
      assert.equal(db.exec('SELECT * FROM t; UPDATE t SET x = x * 2 WHERE x > 1'), db);
      assert.deepEqual(db.prepare('SELECT x FROM t ORDER BY rowid').pluck().all(), [1, 4, 6]);
      // nothing to run is fine
      for (const sql of ['', '   ', ';;', '-- comment only', '/* c */']) assert.equal(db.exec(sql), db);
    }));

  it('4.2 non-string SQL throws TypeError', () =>
    withDb((db) => {
      for (const sql of [undefined, null, 1, {}, ['SELECT 1'], new String('SELECT 1'), () => 'x']) {
        throwsExactly(() => db.exec(sql), TypeError, NOT_STRING);
      }
      throwsExactly(() => db.exec(), TypeError, NOT_STRING);
    }));

  it('4.2 an SQL error throws SqliteError; exec stops at the first error without rolling back', () =>
    withDb((db) => {
      db.exec('CREATE TABLE t(x)');
      throwsExactly(
        () => db.exec('INSERT INTO t VALUES (1); INSERT INTO nope VALUES (2); INSERT INTO t VALUES (3)'),
        SqliteError,
        'no such table: nope',
        { code: 'SQLITE_ERROR' },
      );
      assert.deepEqual(db.prepare('SELECT x FROM t').pluck().all(), [1]);

      throwsExactly(
        () => db.exec('BEGIN; INSERT INTO t VALUES (10); INSERT INTO t VALUES (oops syntax'),
        SqliteError,
        'near "syntax": syntax error',
        { code: 'SQLITE_ERROR' },
      );
      assert.equal(db.inTransaction, true); // the BEGIN stays in effect
      assert.deepEqual(db.prepare('SELECT x FROM t ORDER BY rowid').pluck().all(), [1, 10]);
      db.exec('ROLLBACK');
      assert.deepEqual(db.prepare('SELECT x FROM t').pluck().all(), [1]);

      db.exec('CREATE TABLE u(a UNIQUE)');
      throwsExactly(
        () => db.exec('INSERT INTO u VALUES (1); INSERT INTO u VALUES (1); INSERT INTO u VALUES (2)'),
        SqliteError,
        'UNIQUE constraint failed: u.a',
        { code: 'SQLITE_CONSTRAINT_UNIQUE' },
      );
      assert.deepEqual(db.prepare('SELECT a FROM u').pluck().all(), [1]);
    }));

  it('4.2 blocked (TypeError) while iterating, unless unsafe mode is on', () =>
    withDb((db) => {
      db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1), (2)');
      const it = db.prepare('SELECT x FROM t').pluck().iterate();
      assert.deepEqual(it.next(), { value: 1, done: false });
      throwsExactly(() => db.exec('INSERT INTO t VALUES (3)'), TypeError, BUSY);
      throwsExactly(() => db.exec('SELECT 1'), TypeError, BUSY);
      db.unsafeMode();
      assert.equal(db.exec('INSERT INTO t VALUES (4)'), db);
      db.unsafeMode(false);
      throwsExactly(() => db.exec('INSERT INTO t VALUES (5)'), TypeError, BUSY);
      it.return();
      assert.equal(db.exec('INSERT INTO t VALUES (6)'), db);
      assert.deepEqual(db.prepare('SELECT x FROM t ORDER BY rowid').pluck().all(), [1, 2, 4, 6]);
    }));

  it('4.2 blocked (TypeError) while busy and once closed', () => {
    withDb((db) => {
      db.exec('CREATE TABLE t(x)');
      expectBusyError(whileBusy(db, () => db.exec('INSERT INTO t VALUES (1)')));
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 0);
    });
    const db = new Database(':memory:');
    db.close();
    throwsExactly(() => db.exec('SELECT 1'), TypeError, NOT_OPEN);
    throwsExactly(() => db.exec(1), TypeError, NOT_STRING);
  });

  it('4.2 logs each statement to verbose (statement text up to and including its ";")', () => {
    const log = [];
    withDb(
      (db) => {
        db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1);  INSERT INTO t VALUES (2)');
        assert.deepEqual(log, ['CREATE TABLE t(x);', 'INSERT INTO t VALUES (1);', 'INSERT INTO t VALUES (2)']);
        log.length = 0;
        assert.throws(
          () => db.exec('INSERT INTO t VALUES (3); INSERT INTO nope VALUES (4); INSERT INTO t VALUES (5)'),
          SqliteError,
        );
        assert.deepEqual(log, ['INSERT INTO t VALUES (3);']);
      },
      { verbose: (sql) => log.push(sql) },
    );
  });
});

describe('4.4 transaction(fn) entry checks', () => {
  it('4.4 returns a function when given a function', () =>
    withDb((db) => {
      const fn = () => 5;
      const trx = db.transaction(fn);
      assert.equal(typeof trx, 'function');
      assert.notEqual(trx, fn);
      assert.equal(trx(), 5);
      // a class or bound function is a function too
      assert.equal(typeof db.transaction(fn.bind(null)), 'function');
    }));

  it('4.4 a non-function throws TypeError', () =>
    withDb((db) => {
      for (const value of [undefined, null, 'fn', 1, {}, [], Object.create(Function.prototype), Symbol('f')]) {
        throwsExactly(() => db.transaction(value), TypeError, 'Expected first argument to be a function');
      }
      throwsExactly(() => db.transaction(), TypeError, 'Expected first argument to be a function');
    }));

  it('4.4 blocked (TypeError) on a closed database; argument type is checked first', () => {
    const db = new Database(':memory:');
    db.close();
    throwsExactly(() => db.transaction(() => {}), TypeError, NOT_OPEN);
    throwsExactly(() => db.transaction('x'), TypeError, 'Expected first argument to be a function');
  });

  it('4.4 a wrapper made before close() throws TypeError when called after it', () => {
    const db = new Database(':memory:');
    let ran = false;
    const trx = db.transaction(() => {
      ran = true;
    });
    db.close();
    throwsExactly(() => trx(), TypeError, NOT_OPEN);
    throwsExactly(() => trx.immediate(), TypeError, NOT_OPEN);
    assert.equal(ran, false);
  });

  it('4.4 quirk: once transaction() was used on a connection, transaction() still returns a wrapper after close()', () => {
    // better-sqlite3 caches the BEGIN/COMMIT/... statements per connection on first use, and only
    // that first preparation checks that the connection is open.
    const db = new Database(':memory:');
    db.transaction(() => {});
    db.close();
    const trx = db.transaction(() => 1);
    assert.equal(typeof trx, 'function');
    throwsExactly(() => trx(), TypeError, NOT_OPEN);
  });

  it('4.4 allowed while iterating; blocked (TypeError) while busy on first use', () => {
    withDb((db) => {
      db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
      const it = db.prepare('SELECT x FROM t').iterate();
      it.next();
      assert.equal(typeof db.transaction(() => {}), 'function');
      it.return();
    });
    withDb((db) => {
      expectBusyError(whileBusy(db, () => db.transaction(() => {})));
    });
  });
});
