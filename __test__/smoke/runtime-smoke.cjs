'use strict';
// A smoke test of cipherlite that runs unchanged under Node.js, Bun and Deno
// (scripts/smoke-runtimes.js runs it under Bun and Deno; __test__/44 under Node): the core
// API, encryption, user functions and iterators. Prints one line per check and a closing
// "N passed, N failed" line; exits 1 when anything failed.
//   node|bun __test__/smoke/runtime-smoke.cjs
//   deno run -A __test__/smoke/runtime-smoke.cjs
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const Database = require('../..');

const runtime =
  typeof Bun !== 'undefined'
    ? `bun ${Bun.version}` // eslint-disable-line no-undef
    : typeof Deno !== 'undefined'
      ? `deno ${Deno.version.deno}` // eslint-disable-line no-undef
      : `node ${process.versions.node}`;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cipherlite-smoke-'));
const results = [];

function check(name, fn) {
  try {
    fn();
    results.push([name, null]);
  } catch (err) {
    results.push([name, err]);
  }
}

check('core API: prepare, run, get, all, pluck, raw, columns, pragma', () => {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, data BLOB, n REAL)');
  const insert = db.prepare('INSERT INTO t(name, data, n) VALUES (@name, @data, @n)');
  const info = insert.run({ name: 'a', data: Buffer.from([1, 2, 3]), n: 1.5 });
  assert.deepEqual(info, { changes: 1, lastInsertRowid: 1 });
  insert.run({ name: 'b', data: null, n: 2 });
  assert.deepEqual(db.prepare('SELECT id, name, n FROM t WHERE id = ?').get(1), { id: 1, name: 'a', n: 1.5 });
  const row = db.prepare('SELECT data FROM t WHERE id = 1').get();
  assert.ok(Buffer.isBuffer(row.data));
  assert.deepEqual([...row.data], [1, 2, 3]);
  assert.deepEqual(db.prepare('SELECT name FROM t ORDER BY id').pluck().all(), ['a', 'b']);
  assert.deepEqual(db.prepare('SELECT id, name FROM t ORDER BY id').raw().all(), [
    [1, 'a'],
    [2, 'b'],
  ]);
  assert.deepEqual(
    db
      .prepare('SELECT name FROM t')
      .columns()
      .map((c) => c.name),
    ['name'],
  );
  assert.equal(db.pragma('user_version', { simple: true }), 0);
  const big = db.prepare('SELECT 9007199254740993 AS x').safeIntegers().get();
  assert.equal(big.x, 9007199254740993n);
  db.close();
  assert.equal(db.open, false);
});

check('transactions: commit, rollback on throw, nesting', () => {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE t(x)');
  const insert = db.prepare('INSERT INTO t VALUES (?)');
  const many = db.transaction((xs) => {
    for (const x of xs) insert.run(x);
  });
  many([1, 2, 3]);
  assert.throws(
    () =>
      db.transaction(() => {
        insert.run(4);
        throw new Error('no');
      })(),
    /no/,
  );
  db.transaction(() => {
    many([5]);
    assert.equal(db.inTransaction, true);
  })();
  assert.deepEqual(db.prepare('SELECT x FROM t ORDER BY x').pluck().all(), [1, 2, 3, 5]);
  db.close();
});

check('errors: SqliteError with its code, TypeError/RangeError for misuse', () => {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE u(a UNIQUE); INSERT INTO u VALUES (1)');
  let err;
  try {
    db.exec('INSERT INTO u VALUES (1)');
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof Database.SqliteError);
  assert.equal(err.code, 'SQLITE_CONSTRAINT_UNIQUE');
  assert.throws(() => db.prepare('SELECT ?').get(), RangeError);
  assert.throws(() => db.prepare(1), TypeError);
  db.close();
});

check('encryption: key, reopen, wrong key, no key, ciphertext on disk', () => {
  const file = path.join(dir, 'enc.db');
  const key = Buffer.alloc(32, 0x5a);
  const db = new Database(file, { key });
  db.exec("CREATE TABLE secret(v TEXT); INSERT INTO secret VALUES ('the plaintext marker')");
  db.pragma('journal_mode = WAL');
  db.exec("INSERT INTO secret VALUES ('in the wal')");
  db.close();
  const bytes = fs.readFileSync(file);
  assert.notEqual(bytes.subarray(0, 15).toString('latin1'), 'SQLite format 3');
  assert.equal(bytes.includes(Buffer.from('the plaintext marker')), false);
  const again = new Database(file, { key });
  assert.deepEqual(again.prepare('SELECT v FROM secret ORDER BY rowid').pluck().all(), [
    'the plaintext marker',
    'in the wal',
  ]);
  again.close();
  for (const options of [{ key: Buffer.alloc(32, 1) }, {}]) {
    let code;
    try {
      const wrong = new Database(file, options);
      try {
        wrong.prepare('SELECT * FROM secret').all();
      } finally {
        wrong.close();
      }
    } catch (e) {
      code = e.code;
    }
    assert.equal(code, 'SQLITE_NOTADB');
  }
  assert.throws(() => new Database(file, { key: 'not bytes' }), TypeError);
});

check('user functions: scalar, varargs, aggregate, window, virtual table', () => {
  const db = new Database(':memory:');
  db.function('twice', { deterministic: true }, (x) => x * 2);
  db.function('joined', { varargs: true }, (...xs) => xs.join('-'));
  db.aggregate('product', { start: 1, step: (acc, x) => acc * x });
  db.aggregate('running', { start: 0, step: (a, x) => a + x, inverse: (a, x) => a - x });
  db.table('numbers', {
    columns: ['n'],
    parameters: ['upto'],
    *rows(upto) {
      for (let i = 1; i <= upto; ++i) yield [i];
    },
  });
  assert.equal(db.prepare('SELECT twice(21) AS v').get().v, 42);
  assert.equal(db.prepare("SELECT joined('a', 'b', 3) AS v").get().v, 'a-b-3');
  assert.equal(db.prepare('SELECT product(n) AS v FROM numbers(5)').get().v, 120);
  assert.deepEqual(
    db.prepare('SELECT running(n) OVER (ORDER BY n ROWS 1 PRECEDING) AS v FROM numbers(4)').pluck().all(),
    [1, 3, 5, 7],
  );
  db.function('fails', () => {
    throw new Error('from js');
  });
  assert.throws(() => db.prepare('SELECT fails()').get(), /from js/);
  db.close();
});

check('iterators: iterate, early break, busy while iterating, return()', () => {
  const db = new Database(':memory:');
  db.exec(
    'CREATE TABLE t(x); WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1000) INSERT INTO t SELECT i FROM c',
  );
  let sum = 0;
  for (const row of db.prepare('SELECT x FROM t').iterate()) sum += row.x;
  assert.equal(sum, 500500);
  const seen = [];
  for (const x of db.prepare('SELECT x FROM t ORDER BY x').pluck().iterate()) {
    seen.push(x);
    if (seen.length === 3) break;
  }
  assert.deepEqual(seen, [1, 2, 3]);
  const it = db.prepare('SELECT x FROM t').iterate();
  it.next();
  assert.throws(() => db.exec('DELETE FROM t'), TypeError);
  assert.deepEqual(it.return(), { value: undefined, done: true });
  db.exec('DELETE FROM t WHERE x > 10');
  assert.equal(db.prepare('SELECT count(*) AS n FROM t').get().n, 10);
  db.close();
});

check('better-sqlite3 13: explain, toString; serialize', () => {
  const db = new Database(':memory:');
  db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
  assert.ok(db.explain('SELECT * FROM t WHERE x = ?').some((r) => r.opcode === 'Halt'));
  const stmt = db.prepare('SELECT * FROM t WHERE x = ?').bind(1);
  assert.equal(String(stmt), 'SELECT * FROM t WHERE x = 1.0');
  const copy = new Database(db.serialize());
  assert.equal(copy.prepare('SELECT x FROM t').pluck().get(), 1);
  copy.close();
  db.close();
});

fs.rmSync(dir, { recursive: true, force: true });
let failed = 0;
for (const [name, err] of results) {
  if (err) failed += 1;
  console.log(
    `${err ? 'not ok' : 'ok'} - ${runtime}: ${name}${
      err
        ? `\n  ${String((err && err.stack) || err)
            .split('\n')
            .join('\n  ')}`
        : ''
    }`,
  );
}
console.log(`${results.length - failed} passed, ${failed} failed`);
if (failed) process.exitCode = 1;
