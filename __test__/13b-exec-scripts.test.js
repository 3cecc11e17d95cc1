'use strict';
// exec() over long, multi-statement scripts (issue 13 item 1): every statement runs in
// order, whatever whitespace, comments and `;` separate them or trail the last one; an
// error stops the script there with the earlier statements applied (better-sqlite3).
// exec() hands SQLite one NUL-terminated copy of the script, parsed in place; the speed
// of that is measured in the benchmark, not here.
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { Database } = require('./_module');

const { SqliteError } = Database;

function withDb(fn) {
  const db = new Database(':memory:');
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

function count(db, table = 't') {
  return db.prepare(`SELECT count(*) AS n FROM ${table}`).get().n;
}

function insertScript(n, separator = '\n') {
  const parts = [];
  for (let i = 0; i < n; i++) parts.push(`INSERT INTO t VALUES (${i}, 'row ${i}');`);
  return parts.join(separator);
}

describe('exec() scripts', () => {
  it('runs every statement of a 20,000-statement script inside BEGIN/COMMIT', () =>
    withDb((db) => {
      db.exec('CREATE TABLE t(a INTEGER, b TEXT)');
      assert.equal(db.exec(`BEGIN;\n${insertScript(20000)}\nCOMMIT;`), db);
      assert.equal(db.inTransaction, false);
      assert.equal(count(db), 20000);
      assert.deepEqual(db.prepare('SELECT min(a) AS lo, max(a) AS hi, sum(a) AS s FROM t').get(), {
        lo: 0,
        hi: 19999,
        s: (19999 * 20000) / 2,
      });
      assert.equal(db.prepare('SELECT b FROM t WHERE a = 12345').pluck().get(), 'row 12345');
    }));

  it('accepts whitespace, comments and empty statements between and after statements', () =>
    withDb((db) => {
      db.exec('CREATE TABLE t(a, b)');
      const script = [
        '  \t\n-- leading comment\n',
        "INSERT INTO t VALUES (1, 'a');;;",
        "/* block */ INSERT INTO t VALUES (2, 'b') ; \r\n",
        "\f\vINSERT INTO t VALUES (3, 'c;d') -- trailing comment; not a statement\n",
        ";INSERT INTO t VALUES (4, '/* not a comment */');",
        '  -- the last line is a comment without newline',
      ].join('');
      db.exec(script);
      assert.deepEqual(db.prepare('SELECT a, b FROM t ORDER BY a').raw().all(), [
        [1, 'a'],
        [2, 'b'],
        [3, 'c;d'],
        [4, '/* not a comment */'],
      ]);
      for (const tail of ['', ' ', ';', ' ; ; ', '\n\n', '-- c', '/* c */', ';/* c */;-- c\n']) {
        db.exec(`INSERT INTO t VALUES (5, 'tail'); ${tail}`);
      }
      assert.equal(db.prepare("SELECT count(*) FROM t WHERE b = 'tail'").pluck().get(), 8);
    }));

  it('keeps non-ASCII text of a long script intact, statement by statement', () =>
    withDb((db) => {
      db.exec('CREATE TABLE t(a, b)');
      const parts = [];
      for (let i = 0; i < 3000; i++) parts.push(`INSERT INTO t VALUES (${i}, 'é😀${i}');`);
      db.exec(parts.join(' '));
      assert.equal(count(db), 3000);
      assert.equal(db.prepare('SELECT b FROM t WHERE a = 2999').pluck().get(), 'é😀2999');
    }));

  it('an error in the middle of a long script stops there; earlier statements stay applied', () =>
    withDb((db) => {
      db.exec('CREATE TABLE t(a UNIQUE, b)');
      const script = `${insertScript(5000)}\nINSERT INTO t VALUES (17, 'duplicate');\n${insertScript(10).replace(/VALUES \(/g, 'VALUES (1000000 + ')}`;
      let error;
      try {
        db.exec(script);
      } catch (e) {
        error = e;
      }
      assert.ok(error instanceof SqliteError, `expected a SqliteError, got ${error}`);
      assert.equal(error.code, 'SQLITE_CONSTRAINT_UNIQUE');
      assert.equal(count(db), 5000, 'the 5000 statements before the error are applied, none after it');
      assert.equal(db.prepare('SELECT count(*) FROM t WHERE a >= 1000000').pluck().get(), 0);
    }));

  it('a syntax error in the middle stops there, inside an open transaction', () =>
    withDb((db) => {
      db.exec('CREATE TABLE t(a, b)');
      assert.throws(
        () => db.exec(`BEGIN; ${insertScript(300)} INSERT INTO t VALUES (oops; ${insertScript(3)} COMMIT;`),
        (e) => {
          assert.ok(e instanceof SqliteError);
          assert.equal(e.code, 'SQLITE_ERROR');
          assert.match(e.message, /syntax error/);
          return true;
        },
      );
      assert.equal(db.inTransaction, true, 'COMMIT after the error did not run');
      assert.equal(count(db), 300);
      db.exec('ROLLBACK');
      assert.equal(count(db), 0);
    }));

  it('statements after an embedded NUL character are not run (the script ends there)', () =>
    withDb((db) => {
      db.exec('CREATE TABLE t(a, b)');
      db.exec("INSERT INTO t VALUES (1, 'x');\0INSERT INTO t VALUES (2, 'y');");
      assert.equal(count(db), 1);
    }));

  it('logs each statement of a script to verbose, starting at its first token', () => {
    const logged = [];
    const db = new Database(':memory:', { verbose: (sql) => logged.push(sql) });
    try {
      db.exec('CREATE TABLE t(a, b);\n\n  INSERT INTO t VALUES (1, 2);  ;; INSERT INTO t VALUES (3, 4)  ');
      assert.deepEqual(logged, [
        'CREATE TABLE t(a, b);',
        'INSERT INTO t VALUES (1, 2);',
        'INSERT INTO t VALUES (3, 4)  ',
      ]);
    } finally {
      db.close();
    }
  });
});
