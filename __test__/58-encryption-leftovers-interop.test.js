'use strict';
// cipherlite's crash leftovers (a hot journal, a WAL with committed and uncommitted
// frames) opened by the real engines, SQLCipher 4.12.0 and SQLite3 Multiple Ciphers 2.6.1
// (installed by scripts/setup-interop.sh, run by __test__/interop/engines.py). Journal and
// WAL checksums are over the ciphertext, as SQLCipher writes them; the table of who recovers
// what in docs/interop.md §1 is the one asserted here.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { newKey, tempDir, removeDir, crashChild, runInteropEngines, BASE_SQL } = require('./_helpers-encryption');

const key = newKey();
let dir;
before(() => {
  dir = tempDir('leftovers');
});
after(() => removeDir(dir));

const COMMITTED = [BASE_SQL, 'INSERT INTO t SELECT a + 1000, hex(randomblob(300)) FROM t'];
const UNCOMMITTED = [
  "UPDATE t SET b = 'CHANGED-' || a",
  "INSERT INTO t SELECT a + 2000, 'CHANGED-' || hex(randomblob(400)) FROM t",
  "INSERT INTO t SELECT a + 4000, 'CHANGED-' || hex(randomblob(400)) FROM t",
];
const QUERIES = {
  count: 'SELECT count(*) FROM t',
  changed: "SELECT count(*) FROM t WHERE b LIKE 'CHANGED%'",
  integrity: 'PRAGMA integrity_check',
};
/** What every engine must see once the leftovers are recovered: the committed rows only. */
const COMMITTED_VIEW = { count: [[200]], changed: [[0]], integrity: [['ok']] };

/** The engines that open each layout (SQLite3MC with legacy=4 for SQLCipher's page 1). */
const ENGINES_FOR = { sqlcipher: ['sqlcipher', 'mc4'], sqlite3mc: ['mc0'] };

async function leftover(label, layout, journalMode) {
  const file = path.join(dir, `${label}.db`);
  const { info } = await crashChild({ file, key, layout, journalMode, committed: COMMITTED, uncommitted: UNCOMMITTED });
  if (journalMode === 'wal') assert.ok(info.wal > 0, 'a WAL was left');
  else assert.ok(info.journal > 0, 'a hot journal was left');
  return file;
}

describe("the real engines recover cipherlite's crash leftovers", () => {
  for (const layout of ['sqlcipher', 'sqlite3mc']) {
    for (const engine of ENGINES_FOR[layout]) {
      it(`${engine} recovers a WAL cipherlite left (${layout} layout): every committed transaction, nothing else`, async () => {
        const file = await leftover(`wal-${layout}-${engine}`, layout, 'wal');
        const { results } = runInteropEngines(key, [{ id: 'r', engine, file, queries: QUERIES }]);
        assert.ok(results.r.ok, results.r.error);
        assert.deepEqual(results.r.rows, COMMITTED_VIEW);
      });
    }
  }

  it('SQLCipher rolls back a hot journal cipherlite left (sqlcipher layout) completely', async () => {
    const file = await leftover('hot-sqlcipher', 'sqlcipher', 'delete');
    const { results } = runInteropEngines(key, [{ id: 'r', engine: 'sqlcipher', file, queries: QUERIES }]);
    assert.ok(results.r.ok, results.r.error);
    assert.deepEqual(results.r.rows, COMMITTED_VIEW);
    assert.equal(fs.existsSync(`${file}-journal`), false, 'the journal was played back and deleted');
  });

  for (const [layout, engine] of [
    ['sqlcipher', 'mc4'],
    ['sqlite3mc', 'mc0'],
  ]) {
    it(`SQLite3MC (${engine}) cannot check cipherlite's journal checksums (${layout} layout): it stops the rollback short, as with SQLCipher's own journals`, async () => {
      // SQLite3MC encrypts below its pager, which checks journal checksums over the
      // plaintext; SQLCipher's and cipherlite's are over the ciphertext. docs/interop.md §1
      // says to recover hot journals with cipherlite (or SQLCipher) first.
      const file = await leftover(`hot-${layout}-${engine}`, layout, 'delete');
      const { results } = runInteropEngines(key, [{ id: 'r', engine, file, queries: QUERIES }]);
      assert.ok(
        !results.r.ok || results.r.rows.changed[0][0] > 0 || results.r.rows.integrity[0][0] !== 'ok',
        'SQLite3MC rolled the journal back completely: update docs/interop.md and this test',
      );
    });
  }
});
