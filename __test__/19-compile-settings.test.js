'use strict';
// docs/better-sqlite3-behaviour.md §14: settings that drop-in behaviour depends on (observable effects).
// TRACE_SIZE_LIMIT (§9), COLUMN_METADATA (§5.16),
// backup stepping (§4.5), worker classes and the exit hook (18-process-threads) live elsewhere.
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Database } = require('./_module');
const { tempDir, removeDir, listDir, throwsExactly } = require('./_helpers');

const { SqliteError } = Database;
const dir = tempDir();
after(() => removeDir(dir));

let counter = 0;
const nextFile = () => path.join(dir, `settings-${++counter}.db`);

function withDb(fn, filename = ':memory:', options) {
  const db = new Database(filename, options);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

describe('§14 settings', () => {
  it('14 SQLITE_DEFAULT_CACHE_SIZE=-16000: every new connection reads cache_size -16000', () => {
    const file = nextFile();
    withDb((db) => {
      assert.deepEqual(db.pragma('cache_size'), [{ cache_size: -16000 }]);
      db.pragma('cache_size = -2000'); // per connection, not persisted
    }, file);
    for (const [name, options] of [[':memory:'], [''], [file], [file, { readonly: true }], [Buffer.alloc(0)]]) {
      withDb((db) => assert.equal(db.pragma('cache_size', { simple: true }), -16000), name, options);
    }
    withDb((db) => assert.equal(db.prepare('SELECT cache_size FROM pragma_cache_size').pluck().get(), -16000));
  });

  it('14 SQLITE_DEFAULT_FOREIGN_KEYS=1: foreign keys are enforced on every new connection', () => {
    const file = nextFile();
    withDb((db) => {
      assert.equal(db.pragma('foreign_keys', { simple: true }), 1);
      db.exec(`
				CREATE TABLE parent(id INTEGER PRIMARY KEY);
				CREATE TABLE child(pid INTEGER REFERENCES parent(id) ON DELETE CASCADE);
				CREATE TABLE strict_child(pid INTEGER REFERENCES parent(id));
				INSERT INTO parent VALUES (1), (2), (3);
				INSERT INTO child VALUES (1), (1), (2);
				INSERT INTO strict_child VALUES (3);
			`);
      throwsExactly(
        () => db.prepare('INSERT INTO child VALUES (99)').run(),
        SqliteError,
        'FOREIGN KEY constraint failed',
        { code: 'SQLITE_CONSTRAINT_FOREIGNKEY' },
      );
      throwsExactly(
        () => db.prepare('DELETE FROM parent WHERE id = 3').run(),
        SqliteError,
        'FOREIGN KEY constraint failed',
        { code: 'SQLITE_CONSTRAINT_FOREIGNKEY' },
      );
      // ON DELETE CASCADE runs; run().changes counts the direct change only
      assert.equal(db.prepare('DELETE FROM parent WHERE id = 1').run().changes, 1);
      assert.deepEqual(db.prepare('SELECT pid FROM child ORDER BY rowid').pluck().all(), [2]);
      assert.deepEqual(db.prepare('SELECT id FROM parent ORDER BY id').pluck().all(), [2, 3]);
      db.pragma('foreign_keys = OFF'); // per connection
      assert.deepEqual(db.prepare('INSERT INTO child VALUES (99)').run(), { changes: 1, lastInsertRowid: 4 });
    }, file);
    withDb((db) => {
      assert.equal(db.pragma('foreign_keys', { simple: true }), 1);
      throwsExactly(
        () => db.prepare('INSERT INTO child VALUES (98)').run(),
        SqliteError,
        'FOREIGN KEY constraint failed',
        { code: 'SQLITE_CONSTRAINT_FOREIGNKEY' },
      );
    }, file);
  });

  it('14 SQLITE_DQS=0: double-quoted strings are identifiers only, in DML and DDL', () =>
    withDb((db) => {
      db.exec("CREATE TABLE t(a); INSERT INTO t VALUES ('x')");
      throwsExactly(() => db.prepare('SELECT "nope" FROM t'), SqliteError, /^no such column: "nope"/, {
        code: 'SQLITE_ERROR',
      });
      throwsExactly(() => db.prepare('SELECT a FROM t WHERE a = "x"'), SqliteError, /^no such column: "x"/, {
        code: 'SQLITE_ERROR',
      });
      throwsExactly(() => db.exec('INSERT INTO t VALUES ("y")'), SqliteError, /^no such column: "y"/, {
        code: 'SQLITE_ERROR',
      });
      throwsExactly(() => db.exec('CREATE INDEX i ON t("nocol")'), SqliteError, /^no such column: "nocol"/, {
        code: 'SQLITE_ERROR',
      });
      throwsExactly(() => db.exec('CREATE TABLE c(a CHECK (a != "x"))'), SqliteError, /^no such column: "x"/, {
        code: 'SQLITE_ERROR',
      });
      assert.deepEqual(db.prepare('SELECT "a" FROM t WHERE a = \'x\'').all(), [{ a: 'x' }]);
      assert.deepEqual(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all(), ['t']);
    }));

  it('14 SQLITE_DBCONFIG_DEFENSIVE: journal_mode=OFF and sqlite_master writes refused unless unsafeMode()', () =>
    withDb((db) => {
      db.exec('CREATE TABLE t(x)');
      assert.deepEqual(db.pragma('journal_mode = OFF'), [{ journal_mode: 'delete' }]);
      assert.equal(db.pragma('journal_mode', { simple: true }), 'delete');
      db.pragma('writable_schema = ON');
      for (const sql of [
        "UPDATE sqlite_master SET sql = 'CREATE TABLE t(x, y)' WHERE name = 't'",
        "INSERT INTO sqlite_master VALUES ('table', 'u', 'u', 0, 'CREATE TABLE u(z)')",
        'DELETE FROM sqlite_master',
        "UPDATE sqlite_schema SET name = 'v' WHERE name = 't'",
      ]) {
        throwsExactly(() => db.exec(sql), SqliteError, 'table sqlite_master may not be modified', {
          code: 'SQLITE_ERROR',
        });
      }
      assert.deepEqual(db.prepare('SELECT name, sql FROM sqlite_master').all(), [
        { name: 't', sql: 'CREATE TABLE t(x)' },
      ]);
      db.unsafeMode();
      assert.equal(db.pragma('journal_mode = OFF', { simple: true }), 'off');
      db.pragma('writable_schema = ON');
      db.exec("UPDATE sqlite_master SET sql = 'CREATE TABLE t(x, y)' WHERE name = 't'");
      assert.deepEqual(db.prepare('SELECT name, sql FROM sqlite_master').all(), [
        { name: 't', sql: 'CREATE TABLE t(x, y)' },
      ]);
    }, nextFile()));

  it('14 extended result codes are on: SqliteError.code names the extended code', () =>
    withDb((db) => {
      db.exec(
        'CREATE TABLE t(id INTEGER PRIMARY KEY, u UNIQUE, n NOT NULL DEFAULT 0, c CHECK (c >= 0)); INSERT INTO t(id, u) VALUES (1, 1)',
      );
      throwsExactly(() => db.exec('INSERT INTO t(id, u) VALUES (2, 1)'), SqliteError, 'UNIQUE constraint failed: t.u', {
        code: 'SQLITE_CONSTRAINT_UNIQUE',
      });
      throwsExactly(() => db.exec('INSERT INTO t(id) VALUES (1)'), SqliteError, 'UNIQUE constraint failed: t.id', {
        code: 'SQLITE_CONSTRAINT_PRIMARYKEY',
      });
      throwsExactly(
        () => db.exec('INSERT INTO t(id, n) VALUES (3, NULL)'),
        SqliteError,
        'NOT NULL constraint failed: t.n',
        { code: 'SQLITE_CONSTRAINT_NOTNULL' },
      );
      throwsExactly(
        () => db.exec('INSERT INTO t(id, c) VALUES (4, -1)'),
        SqliteError,
        'CHECK constraint failed: c >= 0',
        { code: 'SQLITE_CONSTRAINT_CHECK' },
      );
    }));

  it('14 default page size 4096: pragma and bytes on disk', () => {
    const file = nextFile();
    withDb((db) => {
      assert.equal(db.pragma('page_size', { simple: true }), 4096);
      db.exec('CREATE TABLE t(x)');
    }, file);
    const bytes = fs.readFileSync(file);
    assert.equal(bytes.length, 8192); // page 1 (schema) + page 2 (table t)
    assert.equal(bytes.subarray(0, 16).toString('latin1'), 'SQLite format 3\0');
    assert.equal(bytes.readUInt16BE(16), 4096); // page size in the header
    for (const name of [':memory:', ''])
      withDb((db) => assert.equal(db.pragma('page_size', { simple: true }), 4096), name);
  });
});

describe('§14 extra: other better-sqlite3 build options a program can notice (not listed in docs/better-sqlite3-behaviour.md §14)', () => {
  it(
    '14.extra SQLITE_USE_URI=0: "file:" names are plain file names, URI parameters are not interpreted',
    { skip: process.platform === 'win32' && "Windows: ':' and '?' can't be in a file name" },
    () => {
      const cwd = fs.mkdtempSync(path.join(dir, 'cwd-'));
      const script = `
			const { Database } = require(${JSON.stringify(path.join(__dirname, '_module.js'))});
			const db = new Database('file:uri.db?mode=ro');
			db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
			db.close();
		`;
      const result = spawnSync(process.execPath, ['-e', script], {
        cwd,
        env: process.env,
        encoding: 'utf8',
        timeout: 30000,
      });
      assert.equal(result.status, 0, result.stderr);
      assert.deepEqual(listDir(cwd), ['file:uri.db?mode=ro']);
    },
  );

  it('14 SQLITE_ENABLE_UPDATE_DELETE_LIMIT: DELETE and UPDATE take ORDER BY, LIMIT and OFFSET', () =>
    withDb((db) => {
      db.exec(
        "CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT); INSERT INTO t(b) VALUES ('v1'), ('v2'), ('v3'), ('v4'), ('v5'), ('v6')",
      );
      assert.deepEqual(db.prepare('DELETE FROM t ORDER BY a DESC LIMIT 2').run(), { changes: 2, lastInsertRowid: 6 });
      assert.deepEqual(db.prepare("UPDATE t SET b = 'x' ORDER BY a LIMIT ? OFFSET 1").run(2), {
        changes: 2,
        lastInsertRowid: 6,
      });
      assert.deepEqual(db.prepare('DELETE FROM t WHERE b = ? LIMIT 1').run('x'), { changes: 1, lastInsertRowid: 6 });
      assert.deepEqual(db.prepare('SELECT a, b FROM t').raw().all(), [
        [1, 'v1'],
        [3, 'x'],
        [4, 'v4'],
      ]);
      // RETURNING comes before ORDER BY; ORDER BY alone is refused, as SQLite documents.
      assert.deepEqual(db.prepare('DELETE FROM t RETURNING a ORDER BY a LIMIT 1').all(), [{ a: 1 }]);
      assert.throws(() => db.prepare('DELETE FROM t ORDER BY a'), {
        name: 'SqliteError',
        code: 'SQLITE_ERROR',
        message: /ORDER BY without LIMIT on DELETE/,
      });
    }));

  it('14.extra SQLITE_LIKE_DOESNT_MATCH_BLOBS: LIKE/GLOB never match a BLOB', () =>
    withDb((db) => {
      assert.deepEqual(
        db.prepare("SELECT x'616263' LIKE 'abc' AS l, x'616263' GLOB 'abc' AS g, 'abc' LIKE 'abc' AS t").get(),
        { l: 0, g: 0, t: 1 },
      );
    }));

  it('14.extra SQLITE_SOUNDEX and SQLITE_ENABLE_PERCENTILE functions exist', () =>
    withDb((db) => {
      assert.equal(db.prepare("SELECT soundex('Robert')").pluck().get(), 'R163');
      assert.deepEqual(
        db.prepare("SELECT median(value) AS m, percentile(value, 25) AS p FROM json_each('[1,2,3,4]')").get(),
        { m: 2.5, p: 1.75 },
      );
    }));

  it('14.extra FTS3/FTS4, FTS5, RTREE, GEOPOLY, DBSTAT, JSON and math functions are compiled in', () =>
    withDb((db) => {
      db.exec(`
			CREATE VIRTUAL TABLE f3 USING fts3(body);
			CREATE VIRTUAL TABLE f4 USING fts4(body);
			CREATE VIRTUAL TABLE f5 USING fts5(body);
			CREATE VIRTUAL TABLE r USING rtree(id, x0, x1);
			CREATE VIRTUAL TABLE g USING geopoly();
			INSERT INTO f3 VALUES ('hello world'); INSERT INTO f4 VALUES ('hello world'); INSERT INTO f5 VALUES ('hello world');
			INSERT INTO r VALUES (1, 0, 10);
		`);
      for (const t of ['f3', 'f4', 'f5']) {
        assert.equal(db.prepare(`SELECT body FROM ${t} WHERE ${t} MATCH 'hello'`).pluck().get(), 'hello world');
      }
      assert.equal(db.prepare('SELECT id FROM r WHERE x0 <= 5 AND x1 >= 5').pluck().get(), 1);
      assert.equal(db.prepare("SELECT json_extract('{\"a\":[1,2]}', '$.a[1]') + sqrt(16)").pluck().get(), 6);
      assert.ok(db.prepare("SELECT count(*) FROM dbstat WHERE name = 'sqlite_schema'").pluck().get() >= 1);
    }));
});
