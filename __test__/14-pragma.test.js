'use strict';
// docs/better-sqlite3-behaviour.md §4.3: pragma(source, { simple }?).
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Database } = require('./_module');
const { tempDir, removeDir, throwsExactly } = require('./_helpers');

const { SqliteError } = Database;
const dir = tempDir();
after(() => removeDir(dir));

const BUSY = 'This database connection is busy executing a query';

function withDb(fn, filename = ':memory:', options) {
  const db = new Database(filename, options);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

describe('4.3 pragma()', () => {
  it('4.3 returns all rows as objects; with simple:true the first column of the first row', () =>
    withDb((db) => {
      assert.deepEqual(db.pragma('cache_size'), [{ cache_size: -16000 }]);
      assert.equal(db.pragma('cache_size', { simple: true }), -16000);
      assert.deepEqual(db.pragma('cache_size', { simple: false }), [{ cache_size: -16000 }]);
      assert.deepEqual(db.pragma('cache_size', {}), [{ cache_size: -16000 }]);
      assert.deepEqual(db.pragma('cache_size', null), [{ cache_size: -16000 }]);
      assert.deepEqual(db.pragma('cache_size', undefined), [{ cache_size: -16000 }]);
      db.exec("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT NOT NULL DEFAULT 'x')");
      assert.deepEqual(db.pragma('table_info(t)'), [
        { cid: 0, name: 'a', type: 'INTEGER', notnull: 0, dflt_value: null, pk: 1 },
        { cid: 1, name: 'b', type: 'TEXT', notnull: 1, dflt_value: "'x'", pk: 0 },
      ]);
      assert.equal(db.pragma('table_info(t)', { simple: true }), 0); // first column (cid) of first row
      assert.equal(db.pragma('journal_mode', { simple: true }), 'memory');
      // each call returns a fresh array
      const a = db.pragma('cache_size');
      const b = db.pragma('cache_size');
      assert.notEqual(a, b);
      assert.deepEqual(a, b);
    }));

  it('4.3 no row: [] normally, undefined with simple:true', () =>
    withDb((db) => {
      assert.deepEqual(db.pragma('table_info(nope)'), []);
      assert.equal(db.pragma('table_info(nope)', { simple: true }), undefined);
      assert.deepEqual(db.pragma('no_such_pragma'), []);
      assert.equal(db.pragma('no_such_pragma', { simple: true }), undefined);
    }));

  it('4.3 prepends "PRAGMA " to the source; setting pragmas take effect', () => {
    const log = [];
    withDb(
      (db) => {
        assert.deepEqual(db.pragma('user_version = 7'), []);
        assert.equal(db.pragma('user_version', { simple: true }), 7);
        assert.deepEqual(db.pragma('cache_size = -8000'), []);
        assert.equal(db.pragma('cache_size', { simple: true }), -8000);
        assert.deepEqual(db.pragma('cache_size;'), [{ cache_size: -8000 }]); // trailing ";" allowed
        assert.deepEqual(log, [
          'PRAGMA user_version = 7',
          'PRAGMA user_version',
          'PRAGMA cache_size = -8000',
          'PRAGMA cache_size',
          'PRAGMA cache_size;',
        ]);
      },
      ':memory:',
      { verbose: (sql) => log.push(sql) },
    );
    // the setting reaches the file
    const file = path.join(dir, 'uv.db');
    withDb((db) => db.pragma('user_version = 1234'), file);
    assert.equal(fs.readFileSync(file).readUInt32BE(60), 1234);
    withDb((db) => assert.equal(db.pragma('user_version', { simple: true }), 1234), file);
  });

  it('4.3 non-string source throws TypeError', () =>
    withDb((db) => {
      for (const source of [undefined, null, 123, 0, true, {}, ['cache_size'], new String('cache_size')]) {
        throwsExactly(() => db.pragma(source), TypeError, 'Expected first argument to be a string');
      }
      throwsExactly(() => db.pragma(), TypeError, 'Expected first argument to be a string');
    }));

  it('4.3 options that are not an object throw TypeError', () =>
    withDb((db) => {
      for (const options of [true, false, 123, 0, () => {}, NaN, 'true', '', Symbol('o')]) {
        throwsExactly(
          () => db.pragma('cache_size', options),
          TypeError,
          'Expected second argument to be an options object',
        );
      }
    }));

  it('4.3 a non-boolean simple option throws TypeError', () =>
    withDb((db) => {
      for (const simple of [undefined, null, 1, 0, 'true', {}]) {
        throwsExactly(
          () => db.pragma('cache_size', { simple }),
          TypeError,
          'Expected the "simple" option to be a boolean',
        );
      }
    }));

  it('4.3 SQL errors: "PRAGMA x" and "" throw SqliteError SQLITE_ERROR', () =>
    withDb((db) => {
      throwsExactly(() => db.pragma('PRAGMA cache_size'), SqliteError, 'near "cache_size": syntax error', {
        code: 'SQLITE_ERROR',
      });
      throwsExactly(() => db.pragma(''), SqliteError, 'incomplete input', { code: 'SQLITE_ERROR' });
    }));

  it('4.3 two statements throw RangeError and run nothing', () =>
    withDb((db) => {
      throwsExactly(
        () => db.pragma('user_version = 3; PRAGMA cache_size = 10'),
        RangeError,
        'The supplied SQL string contains more than one statement',
      );
      assert.equal(db.pragma('user_version', { simple: true }), 0);
      assert.equal(db.pragma('cache_size', { simple: true }), -16000);
    }));

  it('4.3 blocked (TypeError) while iterating unless unsafe mode is on', () =>
    withDb((db) => {
      db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1), (2)');
      const it = db.prepare('SELECT x FROM t').iterate();
      it.next();
      throwsExactly(() => db.pragma('cache_size'), TypeError, BUSY);
      throwsExactly(() => db.pragma('user_version = 5'), TypeError, BUSY);
      throwsExactly(() => db.pragma('wal_checkpoint(RESTART)'), TypeError, BUSY);
      db.unsafeMode();
      assert.deepEqual(db.pragma('cache_size'), [{ cache_size: -16000 }]);
      assert.deepEqual(db.pragma('user_version = 5'), []);
      db.unsafeMode(false);
      throwsExactly(() => db.pragma('cache_size'), TypeError, BUSY);
      it.return();
      assert.equal(db.pragma('user_version', { simple: true }), 5);
    }));

  it('4.3 blocked (TypeError) while busy and once closed', () => {
    withDb((db) => {
      let caught;
      db.function('probe', () => {
        try {
          db.pragma('cache_size');
        } catch (e) {
          caught = e;
        }
        return 0;
      });
      db.prepare('SELECT probe()').get();
      assert.ok(caught instanceof TypeError);
      assert.equal(caught.message, BUSY);
    });
    const db = new Database(':memory:');
    db.close();
    throwsExactly(() => db.pragma('cache_size'), TypeError, 'The database connection is not open');
    throwsExactly(() => db.pragma('cache_size', { simple: true }), TypeError, 'The database connection is not open');
    throwsExactly(() => db.pragma(1), TypeError, 'Expected first argument to be a string');
    throwsExactly(
      () => db.pragma('cache_size', { simple: 1 }),
      TypeError,
      'Expected the "simple" option to be a boolean',
    );
  });

  it('4.3 readonly connection: writing pragmas throw SQLITE_READONLY, connection-level ones work', () => {
    const file = path.join(dir, 'ro.db');
    withDb((db) => db.exec('CREATE TABLE t(x)'), file);
    const before = fs.readFileSync(file);
    withDb(
      (db) => {
        throwsExactly(() => db.pragma('user_version = 5'), SqliteError, 'attempt to write a readonly database', {
          code: 'SQLITE_READONLY',
        });
        throwsExactly(() => db.pragma('journal_mode = WAL'), SqliteError, 'attempt to write a readonly database', {
          code: 'SQLITE_READONLY',
        });
        assert.equal(db.pragma('user_version', { simple: true }), 0);
        assert.equal(db.pragma('cache_size', { simple: true }), -16000);
        assert.deepEqual(db.pragma('cache_size = -8000'), []);
        assert.equal(db.pragma('cache_size', { simple: true }), -8000);
      },
      file,
      { readonly: true },
    );
    assert.deepEqual(fs.readFileSync(file), before);
    assert.equal(fs.existsSync(`${file}-wal`), false);
  });
});
