'use strict';
// The key lifecycle against the real engines (SQLCipher 4.12.0, SQLite3MC 2.6.1, run by
// __test__/interop/engines.py as in 55-encryption-interop): files cipherlite rekeys or
// encrypts open in the engine their page-1 layout is for, with the new key, holding the
// same rows; a SQLCipher-written file rekeyed and decrypted by cipherlite keeps its rows.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Database, SQLITE_MAGIC, newKey, tempDir, removeDir, copySample, sampleKey } = require('./_helpers-encryption');

const ROOT = path.join(__dirname, '..');
const PYTHON = process.env.CIPHERLITE_INTEROP_PYTHON || path.join(ROOT, '.venv-interop', 'bin', 'python');
const ENGINES_PY = path.join(__dirname, 'interop', 'engines.py');
const SETUP_HINT =
  'run `bash scripts/setup-interop.sh` (needs PyPI) to install SQLCipher and SQLite3MC into .venv-interop/';

let dir;
before(() => {
  dir = tempDir('keys-interop');
});
after(() => {
  removeDir(dir);
});

/** Runs engines.py jobs with `key`; returns the results by id. */
function engines(key, jobs) {
  assert.ok(fs.existsSync(PYTHON), `interop Python not found at ${PYTHON}: ${SETUP_HINT}`);
  const r = spawnSync(PYTHON, [ENGINES_PY], {
    input: JSON.stringify({ key: key.toString('hex'), jobs }),
    encoding: 'utf8',
    timeout: 60000,
  });
  assert.equal(r.status, 0, `engines.py failed (${SETUP_HINT}):\n${r.stderr}`);
  return JSON.parse(r.stdout).results;
}

const COUNT = 'SELECT count(*), sum(a) FROM t';

describe('key lifecycle with SQLCipher and SQLite3MC', () => {
  it('a SQLCipher file rekeyed by cipherlite opens in SQLCipher with the new key only', () => {
    const f = copySample('sqlcipher-4.9.0-cli.sqlite', dir);
    const db = new Database(f, { key: sampleKey() });
    const before = db.prepare(COUNT).raw().get();
    assert.deepEqual(before, [100, 5050], 'the sample holds BASE');
    const digest = db.verify().contentDigest;
    const k = newKey();
    db.rekey(k);
    assert.equal(db.verify().contentDigest, digest);
    db.close();
    const r = engines(k, [
      {
        id: 'sqlcipher',
        engine: 'sqlcipher',
        file: f,
        queries: { count: COUNT, check: 'PRAGMA cipher_integrity_check' },
      },
      { id: 'mc4', engine: 'mc4', file: f, queries: { count: COUNT } },
    ]);
    assert.equal(r.sqlcipher.ok, true, JSON.stringify(r.sqlcipher));
    assert.deepEqual(r.sqlcipher.rows.count, [before]);
    assert.deepEqual(r.sqlcipher.rows.check, [], 'SQLCipher finds every page authentic');
    assert.deepEqual(r.mc4.rows.count, [before]);
    const old = engines(sampleKey(), [{ id: 'old', engine: 'sqlcipher', file: f, queries: { count: COUNT } }]);
    assert.equal(old.old.ok, false, 'the old key no longer opens it');
  });

  it('a plaintext file encrypted by cipherlite opens in the engine of its layout', () => {
    const rows = [];
    for (const layout of ['sqlcipher', 'sqlite3mc']) {
      const f = path.join(dir, `plain-${layout}.db`);
      const db = new Database(f);
      db.pragma('journal_mode = wal');
      db.exec(
        "CREATE TABLE t(a INTEGER, b TEXT); INSERT INTO t SELECT value, 'v' || value FROM json_each('[1,2,3,4,5,6,7,8,9,10]')",
      );
      db.close();
      const k = newKey();
      Database.encrypt(f, k, { cipherLayout: layout });
      const engine = layout === 'sqlcipher' ? 'sqlcipher' : 'mc0';
      const r = engines(k, [{ id: 'x', engine, file: f, queries: { count: COUNT, mode: 'PRAGMA journal_mode' } }]);
      assert.equal(r.x.ok, true, `${layout}: ${JSON.stringify(r.x)}`);
      assert.deepEqual(r.x.rows.count, [[10, 55]]);
      assert.deepEqual(r.x.rows.mode, [['wal']]);
      rows.push(layout);
    }
    assert.deepEqual(rows, ['sqlcipher', 'sqlite3mc']);
  });

  it('a SQLite3MC file decrypted by cipherlite is an ordinary SQLite file', () => {
    const f = copySample('sqlite3mc-2.6.1-legacy0.sqlite', dir);
    const out = path.join(dir, 'mc-plain.db');
    const src = new Database(f, { key: sampleKey() });
    const before = src.prepare(COUNT).raw().get();
    assert.deepEqual(before, [100, 5050], 'the sample holds BASE');
    const digest = src.verify().contentDigest;
    src.close();
    Database.decrypt(f, sampleKey(), out);
    assert.deepEqual(fs.readFileSync(out).subarray(0, 16), SQLITE_MAGIC);
    const plain = new Database(out);
    assert.deepEqual(plain.prepare(COUNT).raw().get(), before);
    assert.equal(plain.verify().contentDigest, digest);
    plain.close();
  });
});
