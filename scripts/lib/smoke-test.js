'use strict';
// The smoke test of one target's build, run by scripts/test-targets.js with that target's
// Node (natively, under qemu-user or through musl's loader) from a folder laid out like an
// installed app: node_modules/cipherlite (the root package, no .node) and
// node_modules/cipherlite-<target>. So it also checks that the loader detects the target
// (libc included) and loads the package. Prints one JSON line; exits non-zero on failure.
//   CIPHERLITE_EXPECT_TARGET   the target it must detect and load (required)
//   CIPHERLITE_SQLITE_VERSION  the SQLite version expected (default 3.54.1)

const assert = require('assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');

const expectTarget = process.env.CIPHERLITE_EXPECT_TARGET;
const expectSqlite = process.env.CIPHERLITE_SQLITE_VERSION || '3.54.1';
const notes = [];

function main() {
  assert.ok(expectTarget, 'CIPHERLITE_EXPECT_TARGET is not set');
  const nativeBinding = require('cipherlite/lib/native-binding');
  assert.equal(nativeBinding.targetName(), expectTarget, 'the target the loader detects');
  const loadedFrom = nativeBinding.nativeBindingPath();
  assert.equal(
    path.relative(process.cwd(), loadedFrom).split(path.sep).join('/'),
    `node_modules/cipherlite-${expectTarget}/cipherlite.${expectTarget}.node`,
    'the addon is loaded from the per-target package',
  );

  const Database = require('cipherlite');
  const db = new Database(':memory:');
  assert.equal(db.prepare('SELECT sqlite_version() AS v').get().v, expectSqlite);
  assert.ok(db.pragma('compile_options', { simple: false }).some((r) => r.compile_options === 'THREADSAFE=2'));

  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL, data BLOB)');
  const insert = db.prepare('INSERT INTO t (name, score, data) VALUES (?, ?, ?)');
  const insertAll = db.transaction((rows) => {
    for (const r of rows) insert.run(r.name, r.score, r.data);
  });
  insertAll([
    { name: 'ä€😀', score: 1.5, data: Buffer.from([0, 1, 2, 255]) },
    { name: 'b', score: null, data: null },
    { name: 'c', score: -(2 ** 53) + 1, data: Buffer.alloc(0) },
  ]);
  const rows = db.prepare('SELECT * FROM t ORDER BY id').all();
  assert.deepEqual(
    rows.map((r) => [r.id, r.name, r.score]),
    [
      [1, 'ä€😀', 1.5],
      [2, 'b', null],
      [3, 'c', -(2 ** 53) + 1],
    ],
  );
  assert.deepEqual([...rows[0].data], [0, 1, 2, 255]);
  assert.equal(rows[1].data, null);
  const big = db.prepare('SELECT 9007199254740993 AS n').safeIntegers().get().n;
  assert.equal(big, 9007199254740993n);
  db.function('twice', (x) => x * 2);
  assert.equal(db.prepare('SELECT twice(21) AS v').get().v, 42);
  assert.throws(
    () => insert.run(null, 0, null),
    (e) => e.code === 'SQLITE_CONSTRAINT_NOTNULL',
  );
  assert.equal(db.prepare("SELECT json_extract('{\"a\":[1,2]}', '$.a[1]') AS v").get().v, 2);
  db.close();

  // A file database (WAL), closed and opened again.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cipherlite-smoke-'));
  try {
    const file = path.join(dir, 'smoke.db');
    let fdb = new Database(file);
    fdb.pragma('journal_mode = WAL');
    fdb.exec("CREATE TABLE kv (k TEXT PRIMARY KEY, v) ; INSERT INTO kv VALUES ('x', 1), ('y', 2)");
    fdb.close();
    fdb = new Database(file, { readonly: true });
    assert.deepEqual(fdb.prepare('SELECT k, v FROM kv ORDER BY k').raw().all(), [
      ['x', 1],
      ['y', 2],
    ]);
    fdb.close();

    // Encryption, where this build has it: the file must not be plain SQLite afterwards.
    const encFile = path.join(dir, 'enc.db');
    const key = Buffer.alloc(32, 7);
    let edb = new Database(encFile, { key });
    edb.exec("CREATE TABLE s (v); INSERT INTO s VALUES ('secret')");
    edb.close();
    if (fs.readFileSync(encFile).subarray(0, 16).toString('latin1') === 'SQLite format 3\0') {
      notes.push('encryption not checked: this build writes a plain database when given a key');
    } else {
      edb = new Database(encFile, { key });
      assert.equal(edb.prepare('SELECT v FROM s').get().v, 'secret');
      edb.close();
      notes.push('encrypted round trip ok');
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }

  return {
    target: expectTarget,
    node: process.version,
    arch: process.arch,
    libc: nativeBinding.isMusl() ? 'musl' : 'glibc',
    sqlite: expectSqlite,
    notes,
  };
}

try {
  console.log(JSON.stringify({ ok: true, ...main() }));
} catch (err) {
  console.log(JSON.stringify({ ok: false, target: expectTarget, error: String((err && err.stack) || err) }));
  process.exitCode = 1;
}
