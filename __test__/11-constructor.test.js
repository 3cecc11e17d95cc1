'use strict';
// docs/better-sqlite3-behaviour.md §2: constructor `new Database(filename?, options?)` and every option.
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { constants: bufferConstants } = require('node:buffer');
const { Database, isCipherlite } = require('./_module');
// better-sqlite3 before 13.2 took no file descriptor.
const BEFORE_13_2 =
  !isCipherlite && !/^(1[4-9]|13\.[2-9])/.test(require(`${process.env.CIPHERLITE_TEST_AGAINST}/package.json`).version);
const { tempDir, removeDir, listDir, throwsExactly } = require('./_helpers');

const { SqliteError } = Database;
const dir = tempDir();
after(() => removeDir(dir));

let counter = 0;
const nextFile = (ext = '.db') => path.join(dir, `db-${++counter}${ext}`);

// THE ONLY place where the tests treat cipherlite and better-sqlite3 differently: where the
// native `.node` file of the module under test is. cipherlite exposes it as
// `Database.__nativePath`; better-sqlite3 keeps it in build/Release.
function nativePath() {
  const p = isCipherlite
    ? Database.__nativePath
    : path.join(
        path.dirname(require.resolve(process.env.CIPHERLITE_TEST_AGAINST)),
        '..',
        'build',
        'Release',
        'better_sqlite3.node',
      );
  assert.equal(typeof p, 'string', 'Database.__nativePath must be the absolute path of the addon .node file');
  assert.ok(path.isAbsolute(p) && p.endsWith('.node') && fs.existsSync(p), `native addon not found at ${p}`);
  return p;
}

const handleOf = (db) => db[Object.getOwnPropertySymbols(db)[0]];

/** Create a small database file with one table `t(x)` holding 1, 2, 3. */
function makeDbFile(file = nextFile()) {
  const db = new Database(file);
  db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1), (2), (3)');
  db.close();
  return file;
}

const values = (db) => db.prepare('SELECT x FROM t ORDER BY rowid').pluck().all();

// Names that a wrong implementation could create in the working directory. Other test files may
// create unrelated files there concurrently, so only these names are watched.
const STRAY_NAMES = [
  '',
  ':memory:',
  ' :memory: ',
  'null',
  'undefined',
  '[object Object]',
  '0',
  '123',
  'true',
  '12',
  'Symbol(x)',
  'file:',
];
const strayFiles = () => STRAY_NAMES.filter((name) => name !== '' && fs.existsSync(path.join(process.cwd(), name)));

describe('§2 constructor', () => {
  it('2.1 filename omitted / "" / null / undefined opens a private anonymous database', () => {
    const cwdBefore = strayFiles();
    const dirBefore = listDir(dir);
    for (const args of [[], [''], [null], [undefined], ['', { timeout: 2000 }], [null, null], [undefined, undefined]]) {
      const db = new Database(...args);
      try {
        assert.equal(db.name, '');
        assert.equal(db.memory, true);
        assert.equal(db.readonly, false);
        assert.equal(db.open, true);
        assert.equal(db.inTransaction, false);
        db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1), (2)');
        assert.deepEqual(values(db), [1, 2]);
        // private: a second anonymous database does not see this one's table
        const other = new Database('');
        try {
          throwsExactly(() => other.prepare('SELECT * FROM t'), SqliteError, 'no such table: t', {
            code: 'SQLITE_ERROR',
          });
        } finally {
          other.close();
        }
      } finally {
        db.close();
      }
    }
    assert.deepEqual(strayFiles(), cwdBefore);
    assert.deepEqual(listDir(dir), dirBefore);
  });

  it('2.2 ":memory:" opens an in-memory database and creates no file', () => {
    const cwdBefore = strayFiles();
    const db = new Database(':memory:');
    try {
      assert.equal(db.name, ':memory:');
      assert.equal(db.memory, true);
      assert.equal(db.readonly, false);
      assert.equal(db.open, true);
      db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (5)');
      assert.deepEqual(values(db), [5]);
      const other = new Database(':memory:');
      try {
        throwsExactly(() => other.prepare('SELECT * FROM t'), SqliteError, 'no such table: t', {
          code: 'SQLITE_ERROR',
        });
      } finally {
        other.close();
      }
    } finally {
      db.close();
    }
    // the trimmed name is what counts: " :memory: " is in memory too, name kept as given
    const spaced = new Database(' :memory: ');
    try {
      assert.equal(spaced.name, ' :memory: ');
      assert.equal(spaced.memory, true);
    } finally {
      spaced.close();
    }
    assert.deepEqual(strayFiles(), cwdBefore);
  });

  it('2.3 a path opens (and creates) a disk database; name is the string as given, trimmed value opened', () => {
    const file = nextFile();
    assert.equal(fs.existsSync(file), false);
    const db = new Database(file);
    try {
      assert.equal(db.name, file);
      assert.equal(db.memory, false);
      assert.equal(db.readonly, false);
      assert.equal(db.open, true);
      assert.equal(fs.existsSync(file), true);
      db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (9)');
    } finally {
      db.close();
    }
    const again = new Database(file);
    try {
      assert.deepEqual(values(again), [9]);
    } finally {
      again.close();
    }
    assert.equal(fs.readFileSync(file).subarray(0, 16).toString('latin1'), 'SQLite format 3\0');

    // relative paths are relative to the working directory; name stays relative
    const relFile = nextFile();
    const rel = path.relative(process.cwd(), relFile);
    const relDb = new Database(rel);
    try {
      assert.equal(relDb.name, rel);
      assert.equal(fs.existsSync(relFile), true);
    } finally {
      relDb.close();
    }

    // surrounding whitespace: name keeps it, the trimmed path is what is opened
    const trimmedFile = nextFile();
    const given = `  ${trimmedFile} \n`;
    const before = listDir(dir);
    const spaced = new Database(given);
    try {
      assert.equal(spaced.name, given);
      assert.equal(spaced.memory, false);
    } finally {
      spaced.close();
    }
    assert.deepEqual(listDir(dir), [...before, path.basename(trimmedFile)].sort());
  });

  it('2.4 a Buffer opens an in-memory copy of a serialized database (resizeable; readonly allowed)', () => {
    const file = makeDbFile();
    const bytes = fs.readFileSync(file);
    const original = Buffer.from(bytes);
    const db = new Database(bytes);
    try {
      assert.equal(db.name, ':memory:');
      assert.equal(db.memory, true);
      assert.equal(db.readonly, false);
      assert.deepEqual(values(db), [1, 2, 3]);
      // writable and resizeable well beyond the original size
      db.exec(
        'WITH RECURSIVE c(i) AS (SELECT 4 UNION ALL SELECT i + 1 FROM c WHERE i < 3000) INSERT INTO t SELECT i FROM c',
      );
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 3000);
      assert.equal(db.prepare('SELECT sum(x) FROM t').pluck().get(), (3000 * 3001) / 2);
    } finally {
      db.close();
    }
    // neither the caller's buffer nor the file changed
    assert.deepEqual(bytes, original);
    assert.deepEqual(fs.readFileSync(file), original);

    const ro = new Database(bytes, { readonly: true });
    try {
      assert.equal(ro.name, ':memory:');
      assert.equal(ro.memory, true);
      assert.equal(ro.readonly, true);
      assert.deepEqual(values(ro), [1, 2, 3]);
      throwsExactly(() => ro.exec('INSERT INTO t VALUES (4)'), SqliteError, 'attempt to write a readonly database', {
        code: 'SQLITE_READONLY',
      });
      assert.deepEqual(values(ro), [1, 2, 3]);
    } finally {
      ro.close();
    }

    // an empty buffer is an empty database
    const empty = new Database(Buffer.alloc(0));
    try {
      assert.equal(empty.prepare('SELECT count(*) FROM sqlite_master').pluck().get(), 0);
      empty.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
      assert.deepEqual(values(empty), [1]);
    } finally {
      empty.close();
    }

    // bytes that are not a database: the error comes at first use
    const garbage = new Database(Buffer.from('this is not a database file. '.repeat(20)));
    try {
      throwsExactly(() => garbage.prepare('SELECT * FROM sqlite_master'), SqliteError, 'file is not a database', {
        code: 'SQLITE_NOTADB',
      });
    } finally {
      garbage.close();
    }

    // only a real Buffer counts: a plain Uint8Array is "not a string"
    throwsExactly(() => new Database(new Uint8Array(bytes)), TypeError, 'Expected first argument to be a string');
  });

  it('2.5 a non-string filename throws TypeError and creates nothing', () => {
    const cwdBefore = strayFiles();
    const dirBefore = listDir(dir);
    for (const filename of [{}, new String(nextFile()), [nextFile()], () => nextFile(), true, Symbol('x'), 12n]) {
      throwsExactly(() => new Database(filename), TypeError, 'Expected first argument to be a string');
      throwsExactly(() => Database(filename), TypeError, 'Expected first argument to be a string');
    }
    // A number is a file descriptor since better-sqlite3 13.2 (12 said "Expected first
    // argument to be a string"): still a TypeError without its journalFd.
    if (!BEFORE_13_2) {
      for (const filename of [0, 123]) {
        throwsExactly(
          () => new Database(filename),
          TypeError,
          'The "journalFd" option is required when opening a database from a file descriptor',
        );
      }
      throwsExactly(
        () => new Database(1.5),
        TypeError,
        'Expected the file descriptor to be a non-negative 32-bit integer',
      );
    }
    throwsExactly(() => new Database({}, {}), TypeError, 'Expected first argument to be a string');
    throwsExactly(() => new Database({}, ''), TypeError, 'Expected first argument to be a string');
    assert.deepEqual(strayFiles(), cwdBefore);
    assert.deepEqual(listDir(dir), dirBefore);
  });

  it('2.6 options that are not an object throw TypeError', () => {
    const file = nextFile();
    for (const options of ['', 'readonly', 1, true, () => ({}), Symbol('o'), 5n]) {
      throwsExactly(() => new Database(file, options), TypeError, 'Expected second argument to be an options object');
    }
    assert.equal(fs.existsSync(file), false);
    // null / undefined mean "no options"
    for (const options of [null, undefined]) {
      const db = new Database(':memory:', options);
      assert.equal(db.open, true);
      db.close();
    }
  });

  it('2.7 readonly: opens read-only; missing file → SQLITE_CANTOPEN; in-memory/temporary → TypeError', () => {
    const missing = nextFile();
    throwsExactly(() => new Database(missing, { readonly: true }), SqliteError, 'unable to open database file', {
      code: 'SQLITE_CANTOPEN',
    });
    assert.equal(fs.existsSync(missing), false);

    const file = makeDbFile();
    const before = fs.readFileSync(file);
    const db = new Database(file, { readonly: true });
    try {
      assert.equal(db.readonly, true);
      assert.equal(db.memory, false);
      assert.equal(db.name, file);
      assert.deepEqual(values(db), [1, 2, 3]);
      throwsExactly(() => db.exec('INSERT INTO t VALUES (4)'), SqliteError, 'attempt to write a readonly database', {
        code: 'SQLITE_READONLY',
      });
      const insert = db.prepare('INSERT INTO t VALUES (5)'); // preparing a write is fine
      throwsExactly(() => insert.run(), SqliteError, 'attempt to write a readonly database', {
        code: 'SQLITE_READONLY',
      });
      throwsExactly(() => db.exec('CREATE TABLE u(y)'), SqliteError, 'attempt to write a readonly database', {
        code: 'SQLITE_READONLY',
      });
    } finally {
      db.close();
    }
    assert.deepEqual(fs.readFileSync(file), before);

    const rw = new Database(file, { readonly: false });
    try {
      assert.equal(rw.readonly, false);
      rw.exec('INSERT INTO t VALUES (4)');
      assert.deepEqual(values(rw), [1, 2, 3, 4]);
    } finally {
      rw.close();
    }

    for (const name of ['', ':memory:', ' :memory: ', '  ']) {
      throwsExactly(
        () => new Database(name, { readonly: true }),
        TypeError,
        'In-memory/temporary databases cannot be readonly',
      );
    }
    throwsExactly(
      () => new Database(undefined, { readonly: true }),
      TypeError,
      'In-memory/temporary databases cannot be readonly',
    );
  });

  it('2.8 fileMustExist: missing file → SQLITE_CANTOPEN and nothing created; existing file opens', () => {
    const missing = nextFile();
    throwsExactly(() => new Database(missing, { fileMustExist: true }), SqliteError, 'unable to open database file', {
      code: 'SQLITE_CANTOPEN',
    });
    assert.equal(fs.existsSync(missing), false);

    const file = makeDbFile();
    const db = new Database(file, { fileMustExist: true });
    try {
      assert.equal(db.readonly, false);
      assert.equal(db.memory, false);
      assert.equal(db.name, file);
      db.exec('INSERT INTO t VALUES (4)'); // read-write
      assert.deepEqual(values(db), [1, 2, 3, 4]);
    } finally {
      db.close();
    }

    const both = new Database(file, { fileMustExist: true, readonly: true });
    try {
      assert.equal(both.readonly, true);
    } finally {
      both.close();
    }

    const optional = nextFile();
    const created = new Database(optional, { fileMustExist: false });
    created.close();
    assert.equal(fs.existsSync(optional), true);

    // anonymous databases ignore it
    for (const name of [':memory:', '']) {
      const mem = new Database(name, { fileMustExist: true });
      assert.equal(mem.name, name);
      assert.equal(mem.memory, true);
      mem.close();
    }
  });

  it('2.9 boolean options given as non-booleans (even undefined) throw TypeError', () => {
    const file = nextFile();
    for (const value of [undefined, null, 1, 0, 'true', {}, []]) {
      throwsExactly(
        () => new Database(file, { readonly: value }),
        TypeError,
        'Expected the "readonly" option to be a boolean',
      );
      throwsExactly(
        () => new Database(file, { fileMustExist: value }),
        TypeError,
        'Expected the "fileMustExist" option to be a boolean',
      );
    }
    // inherited properties count too ('in' check)
    throwsExactly(
      () => new Database(file, Object.create({ readonly: 'yes' })),
      TypeError,
      'Expected the "readonly" option to be a boolean',
    );
    assert.equal(fs.existsSync(file), false);
  });

  it('2.10 the misspelt "readOnly" option throws TypeError whatever its value', () => {
    const file = nextFile();
    for (const value of [true, false, undefined]) {
      throwsExactly(
        () => new Database(file, { readOnly: value }),
        TypeError,
        'Misspelled option "readOnly" should be "readonly"',
      );
    }
    assert.equal(fs.existsSync(file), false);
  });

  it('2.11 the removed "memory" option throws TypeError whatever its value', () => {
    for (const value of [true, false, undefined]) {
      throwsExactly(
        () => new Database(':memory:', { memory: value }),
        TypeError,
        'Option "memory" was removed in v7.0.0 (use ":memory:" filename instead)',
      );
    }
  });

  it('2.12 timeout: integer ≥ 0 (TypeError otherwise), ≤ 2147483647 (RangeError), sets the busy timeout', () => {
    const file = nextFile();
    for (const timeout of [undefined, null, NaN, '75', -1, 75.01, Infinity, -Infinity, 10n, {}, true]) {
      throwsExactly(
        () => new Database(file, { timeout }),
        TypeError,
        'Expected the "timeout" option to be a positive integer',
      );
    }
    for (const timeout of [0x80000000, 2 ** 53]) {
      throwsExactly(
        () => new Database(file, { timeout }),
        RangeError,
        'Option "timeout" cannot be greater than 2147483647',
      );
    }
    assert.equal(fs.existsSync(file), false);

    const check = (options, expected) => {
      const db = new Database(':memory:', options);
      try {
        assert.deepEqual(db.pragma('busy_timeout'), [{ timeout: expected }]);
      } finally {
        db.close();
      }
    };
    check(undefined, 5000); // default
    check({}, 5000);
    check({ timeout: 0 }, 0);
    check({ timeout: 250 }, 250);
    check({ timeout: 75.0 }, 75);
    check({ timeout: 0x7fffffff }, 0x7fffffff);
    // the waiting itself (SQLITE_BUSY after roughly the timeout) is tested in 18-process-threads.test.js (13.3)
  });

  it('2.13 verbose: a function receives each executed SQL text; null/undefined allowed; other types → TypeError', () => {
    for (const verbose of [1, 'console.log', {}, true, [], Symbol('v')]) {
      throwsExactly(
        () => new Database(':memory:', { verbose }),
        TypeError,
        'Expected the "verbose" option to be a function',
      );
    }
    for (const verbose of [null, undefined]) {
      const db = new Database(':memory:', { verbose });
      assert.equal(db.prepare('SELECT 1 AS x').get().x, 1);
      db.close();
    }
    const log = [];
    const db = new Database(':memory:', { verbose: (sql) => log.push(sql) });
    try {
      assert.deepEqual(log, []); // opening logs nothing
      db.prepare('CREATE TABLE t(x)').run();
      db.prepare("INSERT INTO t VALUES ('a')").run();
      db.prepare('SELECT x FROM t').all();
      assert.deepEqual(log, ['CREATE TABLE t(x)', "INSERT INTO t VALUES ('a')", 'SELECT x FROM t']);
      const stmt = db.prepare('SELECT count(*) FROM t');
      assert.equal(log.length, 3); // preparing logs nothing
      stmt.get();
      stmt.get();
      assert.deepEqual(log.slice(3), ['SELECT count(*) FROM t', 'SELECT count(*) FROM t']);
    } finally {
      db.close();
    }
  });

  describe('2.14 nativeBinding', () => {
    it('2.14 a string path to the .node file is loaded (resolved against cwd, ".node" appended if missing)', () => {
      const native = nativePath();
      const byPath = new Database(':memory:', { nativeBinding: native });
      const noExt = new Database(':memory:', { nativeBinding: native.replace(/\.node$/, '') });
      const relative = new Database(':memory:', { nativeBinding: path.relative(process.cwd(), native) });
      try {
        for (const db of [byPath, noExt, relative]) {
          assert.ok(db instanceof Database);
          assert.equal(db.prepare('SELECT 6 * 7 AS x').get().x, 42);
          throwsExactly(() => db.exec('NOT SQL'), SqliteError, 'near "NOT": syntax error', { code: 'SQLITE_ERROR' });
        }
        // the same file is the same addon (require's cache)
        assert.equal(handleOf(noExt).constructor, handleOf(byPath).constructor);
        assert.equal(handleOf(relative).constructor, handleOf(byPath).constructor);
      } finally {
        byPath.close();
        noExt.close();
        relative.close();
      }
    });

    it('2.14 a missing path fails like require() of "<resolved path>.node"', () => {
      const missing = path.join(dir, 'no-such-addon');
      let err;
      try {
        new Database(':memory:', { nativeBinding: path.relative(process.cwd(), missing) });
      } catch (e) {
        err = e;
      }
      assert.ok(err instanceof Error);
      assert.equal(err.code, 'MODULE_NOT_FOUND');
      assert.ok(err.message.startsWith(`Cannot find module '${missing}.node'`), err.message);
    });

    it('2.14 an addon object is used as the addon', () => {
      const native = nativePath();
      const addon = require(native);
      const db = new Database(':memory:', { nativeBinding: addon });
      const byPath = new Database(':memory:', { nativeBinding: native });
      try {
        assert.equal(db.prepare('SELECT 5 AS x').get().x, 5);
        assert.equal(handleOf(db).constructor, handleOf(byPath).constructor);
        throwsExactly(() => db.exec('NOT SQL'), SqliteError, 'near "NOT": syntax error', { code: 'SQLITE_ERROR' });
      } finally {
        db.close();
        byPath.close();
      }
    });

    it('2.14 null/undefined mean the default addon; other types throw TypeError', () => {
      for (const nativeBinding of [null, undefined]) {
        const db = new Database(':memory:', { nativeBinding });
        assert.equal(db.prepare('SELECT 1 AS x').get().x, 1);
        db.close();
      }
      for (const nativeBinding of [1, true, () => ({}), Symbol('n'), 3n]) {
        throwsExactly(
          () => new Database(':memory:', { nativeBinding }),
          TypeError,
          'Expected the "nativeBinding" option to be a string or addon object',
        );
      }
    });

    it('1.5/2.14 two copies of the addon file give two different native classes', () => {
      const native = nativePath();
      const copy1 = path.join(dir, 'copy1.node');
      const copy2 = path.join(dir, 'copy2.node');
      fs.copyFileSync(native, copy1);
      fs.copyFileSync(native, copy2);
      const d0 = new Database(':memory:');
      const d1 = new Database(':memory:', { nativeBinding: copy1 });
      const d2 = new Database(':memory:', { nativeBinding: copy2 });
      try {
        assert.notEqual(handleOf(d1).constructor, handleOf(d2).constructor);
        assert.notEqual(handleOf(d1).constructor, handleOf(d0).constructor);
        assert.notEqual(handleOf(d2).constructor, handleOf(d0).constructor);
        for (const db of [d1, d2]) {
          assert.ok(db instanceof Database);
          assert.equal(Object.getPrototypeOf(db), Database.prototype);
          db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1), (2), (3)');
          assert.deepEqual(values(db), [1, 2, 3]);
          // every copy reports SQLite errors with the one shared SqliteError class
          throwsExactly(() => db.exec('INSERT INTO nope VALUES (1)'), SqliteError, 'no such table: nope', {
            code: 'SQLITE_ERROR',
          });
        }
      } finally {
        d0.close();
        d1.close();
        d2.close();
      }
    });
  });

  it('2.15 a missing parent directory throws TypeError and creates nothing (not checked for file: names)', () => {
    const missingDir = path.join(dir, 'missing-dir');
    const file = path.join(missingDir, 'x.db');
    const before = listDir(dir);
    throwsExactly(() => new Database(file), TypeError, 'Cannot open database because the directory does not exist');
    throwsExactly(
      () => new Database(file, { readonly: true }),
      TypeError,
      'Cannot open database because the directory does not exist',
    );
    throwsExactly(
      () => new Database(file, { fileMustExist: true }),
      TypeError,
      'Cannot open database because the directory does not exist',
    );
    throwsExactly(
      () => new Database(path.join(dir, 'a', 'b', 'c', 'x.db')),
      TypeError,
      'Cannot open database because the directory does not exist',
    );
    assert.equal(fs.existsSync(missingDir), false);
    assert.deepEqual(listDir(dir), before);

    // option errors come first
    throwsExactly(
      () => new Database(file, { timeout: -1 }),
      TypeError,
      'Expected the "timeout" option to be a positive integer',
    );

    // a "file:" name skips the directory check: SQLite itself fails to open it
    const cwdBefore = strayFiles();
    throwsExactly(() => new Database(`file:${file}`), SqliteError, 'unable to open database file', {
      code: 'SQLITE_CANTOPEN',
    });
    assert.equal(fs.existsSync(missingDir), false);
    assert.deepEqual(listDir(dir), before);
    assert.deepEqual(strayFiles(), cwdBefore);
  });

  it('2.16 connection set-up: extended codes, busy timeout, length limit, C-only extension loading, defensive', () => {
    const db = new Database(':memory:');
    try {
      // extended result codes
      db.exec('CREATE TABLE u(a UNIQUE); INSERT INTO u VALUES (1)');
      throwsExactly(() => db.exec('INSERT INTO u VALUES (1)'), SqliteError, 'UNIQUE constraint failed: u.a', {
        code: 'SQLITE_CONSTRAINT_UNIQUE',
      });
      // busy timeout installed (5000 by default)
      assert.equal(db.pragma('busy_timeout', { simple: true }), 5000);
      // SQLITE_LIMIT_LENGTH capped to what both V8 strings and Buffers can hold
      const limit = Math.min(bufferConstants.MAX_LENGTH, bufferConstants.MAX_STRING_LENGTH, 0x7fffffff);
      assert.equal(db.prepare('SELECT length(zeroblob(?)) AS n').get(limit).n, limit);
      throwsExactly(
        () => db.prepare('SELECT length(zeroblob(?)) AS n').get(limit + 1),
        SqliteError,
        'string or blob too big',
        { code: 'SQLITE_TOOBIG' },
      );
      // SQL load_extension() stays disabled (only the C API / db.loadExtension may load)
      throwsExactly(() => db.prepare("SELECT load_extension('nope')").get(), SqliteError, 'not authorized', {
        code: 'SQLITE_ERROR',
      });
      // SQLITE_DBCONFIG_DEFENSIVE: sqlite_master cannot be written even with writable_schema
      db.pragma('writable_schema = ON');
      assert.equal(db.pragma('writable_schema', { simple: true }), 0);
      throwsExactly(
        () => db.exec("UPDATE sqlite_master SET name = 'v' WHERE name = 'u'"),
        SqliteError,
        'table sqlite_master may not be modified',
        { code: 'SQLITE_ERROR' },
      );
    } finally {
      db.close();
    }
  });
});
