'use strict';
// Crash safety of rekey and encrypt: a child process running the operation is SIGKILLed
// at every step (after the copy is written, after it is synced, after the rename, after
// the directory sync) and at random times. Whatever the moment, the file opens with
// exactly one of the two keys (for encrypt: plaintext or the key), holds every committed
// transaction — including ones still in a WAL left by a killed writer — and none of the
// uncommitted ones, and the next operation on it succeeds and cleans up.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { Database, newKey, tempDir, removeDir, crashChild } = require('./_helpers-encryption');

const CHILD = path.join(__dirname, '_key-lifecycle-crash-child.js');
const STEPS = ['copied', 'synced', 'renamed', 'dir-synced'];
// Which file is under the original name after a kill at each step.
const AFTER_STEP = { copied: 'old', synced: 'old', renamed: 'new', 'dir-synced': 'new' };

let root;
let n = 0;
const fresh = () => {
  const d = path.join(root, `k${++n}`);
  fs.mkdirSync(d);
  return path.join(d, 'crash.db');
};
before(() => {
  root = tempDir('keycrash');
});
after(() => {
  removeDir(root);
});

const COMMITTED = [
  `CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);
	 WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM s WHERE x < 1500)
	 INSERT INTO t SELECT x, randomblob(900) FROM s;`,
  "INSERT INTO t(id, v) VALUES (100000, 'last committed')",
];
const UNCOMMITTED = ['INSERT INTO t(id, v) SELECT id + 200000, v FROM t', 'DELETE FROM t WHERE id < 500'];
const EXPECTED = { n: 1501, s: (1500 * 1501) / 2 + 100000 };

/** Sets up `file`: committed content, plus (WAL) a writer killed mid-transaction, so the
 * committed transactions are still in its WAL with uncommitted frames after them. */
async function setUp(file, key, journalMode) {
  const { signal } = await crashChild({
    file,
    key: key || null,
    journalMode,
    committed: COMMITTED,
    uncommitted: UNCOMMITTED,
  });
  assert.equal(signal, 'SIGKILL');
  if (journalMode === 'wal') assert.ok(fs.statSync(`${file}-wal`).size > 4096, 'a WAL with frames is left');
}

/** The content if `file` opens with `key` (undefined: as plaintext), else null. */
function contentWith(file, key) {
  let db;
  try {
    db = new Database(file, key ? { key, fileMustExist: true } : { fileMustExist: true });
    const r = db.prepare('SELECT count(*) AS n, sum(id) AS s FROM t').get();
    assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    return r;
  } catch (err) {
    if (err.code === 'SQLITE_NOTADB') return null;
    throw err;
  } finally {
    if (db) db.close();
  }
}

function runChild(config, { pauseAt, killAfterMs } = {}) {
  const env = { ...process.env, CIPHERLITE_KEYS_CRASH_CONFIG: JSON.stringify(config) };
  delete env.CIPHERLITE_CRASH_TEST_PAUSE;
  if (pauseAt) env.CIPHERLITE_CRASH_TEST_PAUSE = pauseAt;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD], { stdio: ['ignore', 'pipe', 'pipe'], env });
    let stdout = '';
    let stderr = '';
    let paused = false;
    const guard = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`child hung: ${stderr}`));
    }, 60000);
    if (killAfterMs !== undefined) setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
      if (pauseAt && !paused && stderr.includes(`CIPHERLITE_PAUSED ${pauseAt}\n`)) {
        paused = true;
        child.kill('SIGKILL');
      }
    });
    child.on('exit', (code, signal) => {
      clearTimeout(guard);
      if (pauseAt && !paused) reject(new Error(`child never reached ${pauseAt} (exit ${code}): ${stderr}`));
      else resolve({ code, signal, done: stdout.includes('DONE'), stderr });
    });
  });
}

/** After any kill: exactly one of the two "keys" opens the file, with the committed content. */
function checkOneOf(file, oldKey, newKey) {
  const withOld = contentWith(file, oldKey);
  const withNew = contentWith(file, newKey);
  assert.ok(
    (withOld === null) !== (withNew === null),
    `exactly one key opens it (old: ${JSON.stringify(withOld)}, new: ${JSON.stringify(withNew)})`,
  );
  assert.deepEqual(withOld || withNew, EXPECTED, 'every committed transaction, no uncommitted one');
  return withOld ? 'old' : 'new';
}

/** The next operation succeeds and leaves only the database (and its WAL files). */
function finishAndCheckCleanUp(file, current, op, layout) {
  const k = newKey();
  if (op === 'encrypt' && !current) Database.encrypt(file, k, { cipherLayout: layout });
  else {
    const db = new Database(file, { key: current });
    db.rekey(k);
    db.close();
  }
  assert.deepEqual(contentWith(file, k), EXPECTED);
  const stray = fs.readdirSync(path.dirname(file)).filter((f) => f.includes('.cipherlite-'));
  assert.deepEqual(stray, [], 'leftover copies removed');
}

for (const op of ['rekey', 'encrypt']) {
  describe(`${op}: killed at every step`, () => {
    for (const journalMode of ['delete', 'wal']) {
      for (const step of STEPS) {
        it(`${journalMode} mode, killed after "${step}"`, async () => {
          const file = fresh();
          const oldKey = op === 'rekey' ? newKey() : undefined;
          const key = newKey();
          await setUp(file, oldKey, journalMode);
          const r = await runChild(
            { op, file, key: oldKey && oldKey.toString('hex'), newKey: key.toString('hex') },
            { pauseAt: step },
          );
          assert.equal(r.signal, 'SIGKILL');
          assert.equal(r.done, false);
          const which = checkOneOf(file, oldKey, key);
          assert.equal(which, AFTER_STEP[step], `after "${step}" the ${AFTER_STEP[step]} file is in place`);
          finishAndCheckCleanUp(file, which === 'old' ? oldKey : key, op);
        });
      }
    }
  });

  describe(`${op}: killed at random times`, () => {
    it('always leaves one whole database', async () => {
      // How long the operation takes here, to spread the kills over it.
      const probe = fresh();
      const probeOld = op === 'rekey' ? newKey() : undefined;
      await setUp(probe, probeOld, 'wal');
      const started = Date.now();
      const full = await runChild({
        op,
        file: probe,
        key: probeOld && probeOld.toString('hex'),
        newKey: newKey().toString('hex'),
      });
      assert.equal(full.done, true, full.stderr);
      const duration = Math.max(50, Date.now() - started);
      const seen = { old: 0, new: 0 };
      for (let i = 0; i < 8; i++) {
        const file = fresh();
        const oldKey = op === 'rekey' ? newKey() : undefined;
        const key = newKey();
        await setUp(file, oldKey, i % 2 ? 'wal' : 'delete');
        await runChild(
          { op, file, key: oldKey && oldKey.toString('hex'), newKey: key.toString('hex') },
          { killAfterMs: Math.floor(Math.random() * duration * 1.2) },
        );
        seen[checkOneOf(file, oldKey, key)]++;
      }
      assert.equal(seen.old + seen.new, 8);
    });
  });
}

// What makes the steps above survive a power loss and not just a kill: the order in which
// the data reaches the disk. Traced with strace(1): every write of the copy comes before
// its fsync, the fsync before the rename, the rename before the directory's fsync — and
// (rollback-journal mode) the original file is never written at all.
describe('durability order (strace)', () => {
  const hasStrace = require('node:child_process').spawnSync('strace', ['-V']).status === 0;

  function traced(config) {
    const { spawnSync } = require('node:child_process');
    const out = path.join(path.dirname(config.file), 'trace.txt');
    const r = spawnSync(
      'strace',
      [
        '-f',
        '-y',
        '-e',
        'trace=openat,rename,renameat,renameat2,fsync,fdatasync,pwrite64,write',
        '-o',
        out,
        process.execPath,
        CHILD,
      ],
      {
        env: { ...process.env, CIPHERLITE_KEYS_CRASH_CONFIG: JSON.stringify(config) },
        encoding: 'utf8',
      },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /DONE/);
    const lines = fs.readFileSync(out, 'utf8').split('\n');
    fs.rmSync(out);
    return lines;
  }

  for (const op of ['rekey', 'encrypt']) {
    it(`${op}: writes, fsync, rename, directory fsync — in that order; the original untouched`, async () => {
      assert.ok(hasStrace, 'strace(1) is needed for this test');
      const file = fresh();
      const dir = path.dirname(file);
      const oldKey = op === 'rekey' ? newKey() : undefined;
      const key = newKey();
      await setUp(file, oldKey, 'delete');
      // Roll the hot journal back first: that write to the original is recovery, not us.
      assert.deepEqual(contentWith(file, oldKey), EXPECTED);
      const lines = traced({ op, file, key: oldKey && oldKey.toString('hex'), newKey: key.toString('hex') });
      const copyRe = new RegExp(
        `<${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/crash\\.db\\.cipherlite-${op}-[0-9a-f]+>`,
      );
      const at = (pred) => lines.findIndex(pred);
      const lastAt = (pred) => lines.length - 1 - [...lines].reverse().findIndex(pred);
      const isWrite = (l) => /\b(pwrite64|write)\(/.test(l);
      const rename = at((l) => /\brename(at2?)?\(.*crash\.db\.cipherlite-.*"[^"]*\/crash\.db"/.test(l));
      assert.ok(rename > 0, 'the copy is renamed over the database');
      const lastCopyWrite = lastAt((l) => isWrite(l) && copyRe.test(l));
      const copySync = lastAt((l) => /\bf(data)?sync\(/.test(l) && copyRe.test(l));
      const dirSync = at(
        (l, i) => i > rename && new RegExp(`\\bfsync\\(\\d+<${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}>\\)`).test(l),
      );
      assert.ok(lastCopyWrite > 0 && lastCopyWrite < copySync, 'every write of the copy before its fsync');
      assert.ok(copySync < rename, 'fsync of the copy before the rename');
      assert.ok(dirSync > rename, 'the directory is fsynced after the rename');
      const original = new RegExp(`<${dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/crash\\.db>`);
      assert.ok(
        lines.some((l) => /openat\(/.test(l) && original.test(l)),
        'the trace shows the original file (the check below can see it)',
      );
      const originalWrites = lines.filter((l, i) => i < rename && isWrite(l) && original.test(l));
      assert.deepEqual(originalWrites, [], 'the original file is never written');
      assert.deepEqual(contentWith(file, key), EXPECTED);
    });
  }
});

describe('after a writer was killed', () => {
  for (const journalMode of ['delete', 'wal']) {
    it(`${journalMode}: decrypt and verify see exactly the committed content`, async () => {
      const file = fresh();
      const key = newKey();
      await setUp(file, key, journalMode);
      const out = path.join(path.dirname(file), 'plain.db');
      Database.decrypt(file, key, out);
      assert.deepEqual(contentWith(out, undefined), EXPECTED);
      const db = new Database(file, { key });
      const report = db.verify();
      db.close();
      assert.equal(report.ok, true, JSON.stringify(report));
      const plain = new Database(out);
      assert.equal(plain.verify().contentDigest, report.contentDigest);
      plain.close();
    });
  }
});
