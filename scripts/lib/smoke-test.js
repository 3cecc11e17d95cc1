'use strict';
// The smoke test of one target's build, run by scripts/test-targets.js with that target's
// Node (natively, under qemu-user or through musl's loader) from a folder laid out like an
// installed app: node_modules/cipherlite (the root package, no .node) and
// node_modules/cipherlite-<target>. So it also checks that the loader detects the target
// (libc included) and loads the package. Both page formats run on the target's AES (ARMv8
// AES on arm64): SQLCipher's and AEGIS' (cipher: 'aegis'), key and passphrase, rollback
// journal and WAL, files other engines wrote, and tampered pages refused. Prints one JSON
// line; exits non-zero on failure.
//   CIPHERLITE_EXPECT_TARGET   the target it must detect and load (required)
//   CIPHERLITE_SQLITE_VERSION  the SQLite version expected (default 3.54.1)
//   CIPHERLITE_TESTDATA        a copy of the repository's testdata/sqlcipher4 (required)

const assert = require('assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');

const expectTarget = process.env.CIPHERLITE_EXPECT_TARGET;
const expectSqlite = process.env.CIPHERLITE_SQLITE_VERSION || '3.54.1';
const testdata = process.env.CIPHERLITE_TESTDATA;
const notes = [];
const PAGE = 4096;
const AEGIS_RESERVE = 64; // 32-byte tag + 32-byte nonce (docs/aegis-format.md §2)

/** Runs `fn` and checks that it throws an SqliteError whose code matches `code`. */
function throwsCode(fn, code, what) {
  assert.throws(fn, (e) => e && e.name === 'SqliteError' && code.test(e.code), what);
}

/**
 * Writes a database of a few pages in `cipher`'s format with a raw key, in `journalMode`, and
 * reads it back: from a second connection while the writer is open (in WAL mode: from the
 * WAL), then after closing. Returns the file's bytes.
 */
function roundTrip(Database, file, options, journalMode) {
  const what = `${options.cipher} ${journalMode}`;
  const writer = new Database(file, options);
  assert.equal(writer.pragma(`journal_mode = ${journalMode}`, { simple: true }), journalMode, what);
  writer.exec('CREATE TABLE t (a INTEGER, b BLOB)');
  writer.exec(
    'INSERT INTO t WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 20) SELECT x, randomblob(1500) FROM s',
  );
  const expected = [[20, 210, 30000]];
  const query = 'SELECT count(*), sum(a), sum(length(b)) FROM t';
  const reader = new Database(file, { ...options, readonly: true });
  assert.deepEqual(reader.prepare(query).raw().all(), expected, `${what}: a second connection`);
  if (journalMode === 'wal') {
    assert.ok(fs.statSync(`${file}-wal`).size > PAGE, `${what}: the pages are in the WAL`);
  }
  reader.close();
  writer.close();
  const again = new Database(file, { ...options, fileMustExist: true });
  assert.deepEqual(again.prepare(query).raw().all(), expected, `${what}: reopened`);
  assert.equal(again.pragma('integrity_check', { simple: true }), 'ok', what);
  again.close();
  const bytes = fs.readFileSync(file);
  assert.notEqual(bytes.subarray(0, 16).toString('latin1'), 'SQLite format 3\0', `${what}: encrypted`);
  assert.ok(bytes.length >= 8 * PAGE, `${what}: pages`);
  return bytes;
}

/** A byte flipped in page 2 is SQLITE_CORRUPT when read; in page 1, NOTADB when opened. */
function tamperedPagesRefused(Database, dir, bytes, options) {
  const attempt = (name, at) => {
    const file = path.join(dir, name);
    const copy = Buffer.from(bytes);
    copy[at] ^= 0x10;
    fs.writeFileSync(file, copy);
    const db = new Database(file, { ...options, fileMustExist: true });
    try {
      return db.prepare('SELECT count(*), sum(length(b)) FROM t').raw().all();
    } finally {
      db.close();
    }
  };
  throwsCode(() => attempt(`${options.cipher}-flip2.db`, PAGE + 100), /^SQLITE_CORRUPT/, `${options.cipher}: page 2`);
  throwsCode(() => attempt(`${options.cipher}-flip1.db`, 500), /^SQLITE_NOTADB$/, `${options.cipher}: page 1`);
}

/** Both page formats written and read here, and the files SQLCipher and SQLite3MC wrote. */
function encryptedFormats(Database, dir) {
  const key = Buffer.alloc(32, 7);
  for (const cipher of ['sqlcipher', 'aegis']) {
    const options = { key, cipher };
    const bytes = roundTrip(Database, path.join(dir, `${cipher}-delete.db`), options, 'delete');
    if (cipher === 'aegis') {
      assert.equal(bytes[20], AEGIS_RESERVE, 'aegis: the reserved bytes in the clear header');
      throwsCode(
        () => new Database(path.join(dir, 'aegis-delete.db'), { key }),
        /^SQLITE_NOTADB$/,
        'an AEGIS file opened as SQLCipher',
      );
    }
    roundTrip(Database, path.join(dir, `${cipher}-wal.db`), options, 'wal');
    tamperedPagesRefused(Database, dir, bytes, options);
  }
  const passFile = path.join(dir, 'aegis-pass.db');
  let db = new Database(passFile, { passphrase: 'smoke', cipher: 'aegis' });
  db.exec("CREATE TABLE s (v); INSERT INTO s VALUES ('argon2id')");
  db.close();
  db = new Database(passFile, { passphrase: 'smoke', cipher: 'aegis', fileMustExist: true });
  assert.equal(db.prepare('SELECT v FROM s').pluck().get(), 'argon2id');
  db.close();
  throwsCode(
    () => new Database(passFile, { passphrase: 'wrong', cipher: 'aegis' }),
    /^SQLITE_NOTADB$/,
    'a wrong passphrase',
  );

  // The committed samples (testdata/sqlcipher4/README.md), each copied with its -journal or -wal.
  assert.ok(testdata && fs.existsSync(path.join(testdata, 'KEY.hex')), 'CIPHERLITE_TESTDATA is not set to the samples');
  const sampleKey = Buffer.from(fs.readFileSync(path.join(testdata, 'KEY.hex'), 'utf8').trim(), 'hex');
  const sample = (name) => {
    for (const suffix of ['', '-journal', '-wal']) {
      const from = path.join(testdata, name + suffix);
      if (fs.existsSync(from)) fs.copyFileSync(from, path.join(dir, name + suffix));
    }
    return path.join(dir, name);
  };
  const read = (name, options, sql) => {
    const sdb = new Database(sample(name), { ...options, fileMustExist: true });
    try {
      assert.equal(sdb.pragma('integrity_check', { simple: true }), 'ok', name);
      return sdb.prepare(sql).raw().all();
    } finally {
      sdb.close();
    }
  };
  const BASE_QUERY = "SELECT count(*), sum(a), min(b = 'row-' || a) FROM t";
  for (const name of ['sqlcipher-4.9.0-cli.sqlite', 'sqlite3mc-2.6.1-legacy0.sqlite', 'hot-sqlcipher-4.12.0.sqlite']) {
    assert.deepEqual(read(name, { key: sampleKey }, BASE_QUERY), [[100, 5050, 1]], name);
  }
  assert.equal(
    fs.existsSync(path.join(dir, 'hot-sqlcipher-4.12.0.sqlite-journal')),
    false,
    'the hot journal rolled back',
  );
  assert.deepEqual(
    read('wal-sqlcipher-4.12.0.sqlite', { key: sampleKey }, 'SELECT count(*), sum(a), (SELECT x FROM w) FROM t'),
    [[110, 6105, 'hello-wal']],
  );
  assert.deepEqual(read('aegis256-sqlite3mc-2.6.1.sqlite', { key: sampleKey, cipher: 'aegis' }, 'SELECT a, b FROM t'), [
    [1, 'hello aegis'],
  ]);
  assert.deepEqual(
    read('aegis256-passphrase-sqlite3mc-2.6.1.sqlite', { passphrase: 'secret', cipher: 'aegis' }, 'SELECT a, b FROM t'),
    [[2, 'pass aegis']],
  );
  notes.push('SQLCipher and AEGIS formats ok');
}

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

    encryptedFormats(Database, dir);
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
