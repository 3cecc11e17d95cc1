'use strict';
// Our own hot journals and WALs recover. A child process commits, starts a big
// transaction with a 2-page cache (dirty pages spill to the database file / the WAL) and is
// SIGKILLed in the middle; reopening shows exactly the committed content.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {
  Database,
  PAGE,
  BASE_SQL,
  BASE_CONTENT,
  MC_CLEAR_HEADER,
  MC_CLEAR_HEADER_WAL,
  newKey,
  tempDir,
  removeDir,
  contentOf,
  integrity,
  crashChild,
  pageHmacOk,
} = require('./_helpers-encryption');

const LAYOUTS = ['sqlite3mc', 'sqlcipher'];
const UNCOMMITTED = [
  "UPDATE t SET b = 'CHANGED-' || a",
  'DELETE FROM t WHERE a > 50',
  'CREATE TABLE t2(x BLOB)',
  'INSERT INTO t2 SELECT randomblob(1500) FROM t LIMIT 30',
];

let root;
let n = 0;
const scenario = () => {
  const d = path.join(root, `k${++n}`);
  fs.mkdirSync(d);
  return path.join(d, 'crash.db');
};
before(() => {
  root = tempDir('crash');
});
after(() => {
  removeDir(root);
});

function checkLayout(f, key, layout, wal) {
  const bytes = fs.readFileSync(f);
  assert.ok(pageHmacOk(bytes, 1, key, layout === 'sqlcipher' ? 16 : 24), 'page 1 keeps its layout');
  if (layout === 'sqlite3mc') assert.deepEqual(bytes.subarray(16, 24), wal ? MC_CLEAR_HEADER_WAL : MC_CLEAR_HEADER);
}

describe('rollback journal: killed mid-transaction', () => {
  for (const layout of LAYOUTS) {
    it(`${layout}: the hot journal rolls back to exactly the committed content`, async () => {
      const f = scenario();
      const key = newKey();
      const { info, signal } = await crashChild({
        file: f,
        key,
        layout,
        journalMode: 'delete',
        committed: [BASE_SQL],
        uncommitted: UNCOMMITTED,
      });
      assert.equal(signal, 'SIGKILL');
      // The crash left what it should: a hot journal and spilled pages in the file.
      assert.ok(info.journal > 0, 'the child had a journal open');
      assert.ok(fs.statSync(`${f}-journal`).size > 512, 'a hot journal is on disk');
      assert.ok(fs.statSync(f).size > 2 * PAGE, 'uncommitted pages spilled into the database file');

      const db = new Database(f, { key });
      assert.deepEqual(contentOf(db), BASE_CONTENT);
      assert.equal(db.prepare("SELECT count(*) FROM t WHERE b LIKE 'CHANGED-%'").pluck().get(), 0);
      assert.equal(integrity(db), 'ok');
      assert.ok(!fs.existsSync(`${f}-journal`), 'journal gone');
      assert.equal(fs.statSync(f).size, 2 * PAGE, 'file truncated to the committed size');
      // And it is a normal database again.
      db.exec("INSERT INTO t VALUES (101, 'after-crash')");
      db.close();
      checkLayout(f, key, layout, false);
      const again = new Database(f, { key });
      assert.equal(again.prepare('SELECT count(*) FROM t').pluck().get(), 101);
      again.close();
    });
  }
});

describe('WAL: killed mid-transaction', () => {
  for (const layout of LAYOUTS) {
    for (const keepShm of [true, false]) {
      it(`${layout}, -shm ${keepShm ? 'kept' : 'deleted (full WAL recovery)'}: committed transactions survive, the uncommitted one does not`, async () => {
        const f = scenario();
        const key = newKey();
        await crashChild({
          file: f,
          key,
          layout,
          journalMode: 'wal',
          committed: [
            BASE_SQL,
            "UPDATE t SET b = 'committed-' || a WHERE a <= 5",
            "CREATE TABLE w(x); INSERT INTO w VALUES ('in-wal')",
          ],
          uncommitted: UNCOMMITTED,
        });
        const walSize = fs.statSync(`${f}-wal`).size;
        assert.ok(walSize > 32 + 3 * (24 + PAGE), 'the commits (and spilled frames) are in the WAL');
        assert.equal(fs.statSync(f).size, PAGE, 'nothing was checkpointed into the database file');
        if (!keepShm) fs.rmSync(`${f}-shm`);

        const db = new Database(f, { key });
        assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
        assert.deepEqual(contentOf(db), { tables: ['t', 'w'], count: 100, sum: 5050, wrong: 5 });
        assert.deepEqual(db.prepare('SELECT b FROM t WHERE a <= 6 ORDER BY a').pluck().all(), [
          'committed-1',
          'committed-2',
          'committed-3',
          'committed-4',
          'committed-5',
          'row-6',
        ]);
        assert.equal(db.prepare('SELECT x FROM w').pluck().get(), 'in-wal');
        assert.equal(integrity(db), 'ok');
        db.close();
        assert.ok(!fs.existsSync(`${f}-wal`), 'checkpointed on close');
        checkLayout(f, key, layout, true);
        const again = new Database(f, { key });
        assert.deepEqual(contentOf(again), { tables: ['t', 'w'], count: 100, sum: 5050, wrong: 5 });
        again.close();
      });
    }
  }
});
