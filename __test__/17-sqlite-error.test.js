'use strict';
// docs/better-sqlite3-behaviour.md §11: SqliteError.
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Database, isCipherlite } = require('./_module');
// better-sqlite3 12 (and older) answered `new Subclass()` with a plain SqliteError.
const SUBCLASS_QUIRK =
  !isCipherlite && Number(require(`${process.env.CIPHERLITE_TEST_AGAINST}/package.json`).version.split('.')[0]) < 13;
const { tempDir, removeDir, throwsExactly } = require('./_helpers');

const { SqliteError } = Database;
const dir = tempDir();
after(() => removeDir(dir));

function withDb(fn, filename = ':memory:', options) {
  const db = new Database(filename, options);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

describe('§11 SqliteError', () => {
  it('11.1 is a function, a subclass of Error, not Error itself', () => {
    assert.equal(typeof SqliteError, 'function');
    assert.equal(SqliteError.name, 'SqliteError');
    assert.notEqual(SqliteError, Error);
    assert.ok(SqliteError.prototype instanceof Error);
    assert.equal(Object.getPrototypeOf(SqliteError.prototype), Error.prototype);
    assert.equal(Object.getPrototypeOf(SqliteError), Error);
    assert.equal(SqliteError.prototype.constructor, SqliteError);
    assert.equal(new Error('x') instanceof SqliteError, false);
  });

  it('11.2 prototype.name is "SqliteError" (non-enumerable); instances have no own name', () => {
    assert.equal(SqliteError.prototype.name, 'SqliteError');
    const desc = Object.getOwnPropertyDescriptor(SqliteError.prototype, 'name');
    assert.deepEqual(desc, { value: 'SqliteError', writable: true, enumerable: false, configurable: true });
    const err = new SqliteError('boom', 'SQLITE_ERROR');
    assert.equal(err.name, 'SqliteError');
    assert.equal(Object.prototype.hasOwnProperty.call(err, 'name'), false);
    assert.equal(String(err), 'SqliteError: boom');
  });

  it('11.3 constructed with or without new; message coerced to string; own props message/stack/code', () => {
    for (const err of [new SqliteError('first', 'CODE_A'), SqliteError('first', 'CODE_A')]) {
      assert.ok(err instanceof SqliteError);
      assert.ok(err instanceof Error);
      assert.equal(Object.getPrototypeOf(err), SqliteError.prototype);
      assert.equal(err.message, 'first');
      assert.equal(err.code, 'CODE_A');
      assert.deepEqual(Object.keys(err), ['code']);
      assert.deepEqual(Object.getOwnPropertyDescriptor(err, 'message'), {
        value: 'first',
        writable: true,
        enumerable: false,
        configurable: true,
      });
      assert.equal(typeof err.stack, 'string');
      assert.ok(err.stack.startsWith('SqliteError: first\n'), err.stack);
    }
    assert.equal(new SqliteError(123, 'X').message, '123');
    assert.equal(new SqliteError(undefined, 'X').message, 'undefined');
    assert.equal(new SqliteError(null, 'X').message, 'null');
    assert.equal(new SqliteError({ toString: () => 'custom' }, 'X').message, 'custom');
    assert.equal(new SqliteError('', 'X').message, '');
  });

  it('11.3 a non-string code throws TypeError', () => {
    for (const code of [undefined, null, 1, {}, new String('SQLITE_ERROR'), Symbol('c')]) {
      throwsExactly(() => new SqliteError('m', code), TypeError, 'Expected second argument to be a string');
      throwsExactly(() => SqliteError('m', code), TypeError, 'Expected second argument to be a string');
    }
    throwsExactly(() => new SqliteError('m'), TypeError, 'Expected second argument to be a string');
  });

  it('11.3 a subclass constructor produces an instance of the subclass (better-sqlite3 13)', () => {
    // better-sqlite3 12's constructor did `if (new.target !== SqliteError) return new
    // SqliteError(...)`, so `new MyError()` was a plain SqliteError; 13's `class extends
    // Error` makes a MyError. cipherlite follows 13 here (and stays callable without new).
    class MyError extends SqliteError {}
    const err = new MyError('m', 'C');
    assert.equal(err instanceof MyError, !SUBCLASS_QUIRK);
    assert.ok(err instanceof SqliteError);
    assert.equal(err.code, 'C');
  });

  it('11.3 errors thrown by the library look the same: stack, own keys, message', () =>
    withDb((db) => {
      const err = throwsExactly(() => db.exec('THIS IS NOT SQL'), SqliteError, 'near "THIS": syntax error', {
        code: 'SQLITE_ERROR',
      });
      assert.deepEqual(Object.keys(err), ['code']);
      assert.equal(Object.getOwnPropertyDescriptor(err, 'message').enumerable, false);
      assert.ok(err.stack.startsWith('SqliteError: near "THIS": syntax error\n'), err.stack);
      assert.equal(String(err), 'SqliteError: near "THIS": syntax error');
    }));

  it('11.4 .code is the extended result code name', () => {
    withDb((db) => {
      db.exec(`
				CREATE TABLE u(a UNIQUE, b NOT NULL DEFAULT 1, c CHECK (c > 0));
				CREATE TABLE k(id INTEGER PRIMARY KEY);
				CREATE TABLE p(id INTEGER PRIMARY KEY);
				CREATE TABLE ch(pid INTEGER REFERENCES p(id));
				CREATE TABLE s(n INTEGER) STRICT;
				CREATE TABLE trg(x);
				CREATE TRIGGER no_insert BEFORE INSERT ON trg BEGIN SELECT RAISE(ABORT, 'insert refused'); END;
				INSERT INTO u(a, c) VALUES (1, 1);
				INSERT INTO k VALUES (1);
			`);
      const cases = [
        ['INSERT INTO u(a, c) VALUES (1, 1)', 'SQLITE_CONSTRAINT_UNIQUE', 'UNIQUE constraint failed: u.a'],
        ['INSERT INTO u(a, b, c) VALUES (2, NULL, 1)', 'SQLITE_CONSTRAINT_NOTNULL', 'NOT NULL constraint failed: u.b'],
        ['INSERT INTO u(a, c) VALUES (3, 0)', 'SQLITE_CONSTRAINT_CHECK', 'CHECK constraint failed: c > 0'],
        ['INSERT INTO k VALUES (1)', 'SQLITE_CONSTRAINT_PRIMARYKEY', 'UNIQUE constraint failed: k.id'],
        ['INSERT INTO ch VALUES (42)', 'SQLITE_CONSTRAINT_FOREIGNKEY', 'FOREIGN KEY constraint failed'],
        ["INSERT INTO s VALUES ('abc')", 'SQLITE_CONSTRAINT_DATATYPE', 'cannot store TEXT value in INTEGER column s.n'],
        ['INSERT INTO trg VALUES (1)', 'SQLITE_CONSTRAINT_TRIGGER', 'insert refused'],
        ["INSERT INTO k VALUES ('abc')", 'SQLITE_MISMATCH', 'datatype mismatch'],
        [
          'SELECT 1 ORDER BY 1 COLLATE no_such_collation',
          'SQLITE_ERROR_MISSING_COLLSEQ',
          'no such collation sequence: no_such_collation',
        ],
        ['SELECT * FROM nope', 'SQLITE_ERROR', 'no such table: nope'],
        ['SELECT length(zeroblob(2147483647))', 'SQLITE_TOOBIG', 'string or blob too big'],
      ];
      for (const [sql, code, message] of cases) {
        throwsExactly(() => db.exec(sql), SqliteError, message, { code });
      }
    });

    const missing = path.join(dir, 'missing.db');
    throwsExactly(() => new Database(missing, { fileMustExist: true }), SqliteError, 'unable to open database file', {
      code: 'SQLITE_CANTOPEN',
    });

    const file = path.join(dir, 'codes.db');
    withDb((db) => db.exec('CREATE TABLE t(x)'), file);
    withDb(
      (db) => {
        throwsExactly(() => db.exec('INSERT INTO t VALUES (1)'), SqliteError, 'attempt to write a readonly database', {
          code: 'SQLITE_READONLY',
        });
      },
      file,
      { readonly: true },
    );
    withDb((blocker) => {
      blocker.exec('BEGIN EXCLUSIVE');
      withDb(
        (db) => {
          throwsExactly(() => db.exec('BEGIN EXCLUSIVE'), SqliteError, 'database is locked', { code: 'SQLITE_BUSY' });
        },
        file,
        { timeout: 0 },
      );
      blocker.exec('COMMIT');
    }, file);

    const notDb = path.join(dir, 'not-a-db.db');
    fs.writeFileSync(notDb, Buffer.alloc(4096, 'x'));
    withDb((db) => {
      throwsExactly(() => db.prepare('SELECT * FROM sqlite_master'), SqliteError, 'file is not a database', {
        code: 'SQLITE_NOTADB',
      });
    }, notDb);
    // (unknown codes become "UNKNOWN_SQLITE_ERROR_<n>": not reachable from SQL, not tested)
  });

  it('11.5 misuse errors are TypeError/RangeError, never SqliteError; callback errors are rethrown unchanged', () =>
    withDb((db) => {
      const misuse = [
        [() => db.prepare(1), TypeError],
        [() => db.prepare(''), RangeError],
        [() => db.prepare('SELECT 1; SELECT 2'), RangeError],
        [() => db.pragma('cache_size', 1), TypeError],
        [() => new Database(':memory:', { timeout: 0x80000000 }), RangeError],
        [() => db.prepare('SELECT ?').get(), RangeError],
        [() => db.prepare('SELECT ?').get(true), TypeError],
        [() => db.prepare('CREATE TABLE t(x)').get(), TypeError],
      ];
      for (const [fn, Class] of misuse) {
        let err;
        try {
          fn();
        } catch (e) {
          err = e;
        }
        assert.ok(err instanceof Class, String(fn));
        assert.equal(err.constructor, Class, String(fn));
        assert.equal(err instanceof SqliteError, false, String(fn));
      }
      const thrown = new Error('from the callback');
      db.function('throws_it', () => {
        throw thrown;
      });
      let caught;
      try {
        db.prepare('SELECT throws_it()').get();
      } catch (e) {
        caught = e;
      }
      assert.equal(caught, thrown);
      // ...and the next SQLite failure is a fresh SqliteError
      throwsExactly(() => db.exec('SELECT * FROM nope'), SqliteError, 'no such table: nope', { code: 'SQLITE_ERROR' });
      const logged = new RangeError('from verbose');
      const vdb = new Database(':memory:', {
        verbose: () => {
          throw logged;
        },
      });
      try {
        let e2;
        try {
          vdb.exec('CREATE TABLE t(x)');
        } catch (e) {
          e2 = e;
        }
        assert.equal(e2, logged);
      } finally {
        vdb.close();
      }
    }));
});
