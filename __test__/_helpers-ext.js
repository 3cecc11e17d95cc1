'use strict';
// Helpers of the 3x test files (backup, serialize, user functions, aggregates, virtual
// tables, extensions, verbose): fixtures only; the error checks and temp dirs are
// _helpers.js's, re-exported under the names these tests use. Every assertion about
// behaviour lives in the test files themselves.
const fs = require('node:fs');
const path = require('node:path');
const { Database, isCipherlite } = require('./_module');
const {
  tempDir,
  removeDir,
  exact,
  throwsType,
  throwsRange,
  throwsSqlite,
  checkSqliteError,
  throwsSame,
} = require('./_helpers');

// Messages better-sqlite3 uses for the connection state checks (src/util/macros.cpp).
const NOT_OPEN = 'The database connection is not open';
const BUSY = 'This database connection is busy executing a query';

/** Values a callback may throw; each must come back out unchanged (same identity). */
function thrownValues() {
  return [
    new Error('plain error'),
    new TypeError('a type error'),
    { custom: 'object' },
    'a string',
    '',
    null,
    123.4,
    0,
    undefined,
  ];
}

/**
 * Where the loadable test extension is. It must export the default entry point
 * `sqlite3_extension_init` and register `testExtensionFunction(...)`, a varargs SQL
 * function returning its argument count as a REAL (better-sqlite3's deps/test_extension.c).
 *
 * Returns `{ path }` or `{ skip: reason }`.
 * - cipherlite: `process.env.CIPHERLITE_TEST_EXTENSION` (required; skipped without it).
 * - better-sqlite3: the same variable if set, else its own build/Release/test_extension.node.
 */
function testExtension() {
  const fromEnv = process.env.CIPHERLITE_TEST_EXTENSION;
  if (fromEnv) {
    const resolved = path.resolve(fromEnv);
    if (!fs.existsSync(resolved)) {
      throw new Error(`CIPHERLITE_TEST_EXTENSION points to a missing file: ${resolved}`);
    }
    return { path: resolved };
  }
  if (isCipherlite) {
    return { skip: 'CIPHERLITE_TEST_EXTENSION is not set: no loadable test extension was built for cipherlite' };
  }
  const target = process.env.CIPHERLITE_TEST_AGAINST;
  const root = path.dirname(require.resolve(path.join(target, 'package.json')));
  for (const build of ['Release', 'Debug']) {
    const candidate = path.join(root, 'build', build, 'test_extension.node');
    if (fs.existsSync(candidate)) return { path: candidate };
  }
  throw new Error(`better-sqlite3 at ${root} has no build/*/test_extension.node`);
}

/** Creates an in-memory database holding `bytes` of random data, spread over many pages. */
function bigMemoryDb(bytes = 1000000) {
  const db = new Database(':memory:');
  db.exec(`CREATE TABLE big (id INTEGER PRIMARY KEY, data BLOB);
		INSERT INTO big (data) VALUES (randomblob(${bytes}));
		CREATE TABLE small (x);
		INSERT INTO small VALUES ('first'), ('second');`);
  return db;
}

module.exports = {
  Database,
  isCipherlite,
  NOT_OPEN,
  BUSY,
  makeTempDir: () => tempDir(),
  removeDir,
  exact,
  throwsType,
  throwsRange,
  throwsSqlite,
  checkSqliteError,
  throwsSame,
  thrownValues,
  testExtension,
  bigMemoryDb,
};
