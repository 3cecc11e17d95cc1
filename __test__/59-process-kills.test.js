'use strict';
// Real processes, really killed: a child commits numbered transactions into an encrypted
// database and reports each acknowledged commit on a pipe while the parent SIGKILLs it at
// random moments, many times, in every journal mode; several processes write one
// encrypted WAL database with a busy timeout; worker.terminate() and process.exit() in the
// middle of work. Every acknowledged commit is there afterwards, none is partial.
// Size knob: CIPHERLITE_KILL_ROUNDS (kills per journal mode; default 6).
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { Worker } = require('node:worker_threads');
const { Database, newKey, tempDir, removeDir, integrity } = require('./_helpers-encryption');

const CHILD = path.join(__dirname, '_commit-child.js');
const ROUNDS = Number(process.env.CIPHERLITE_KILL_ROUNDS || 6);

/** Starts a committing child; resolves with the numbers it acknowledged before `killAfterMs`. */
function commitUntilKilled(config, killAfterMs) {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, CIPHERLITE_COMMIT_CONFIG: JSON.stringify(config) },
    });
    let out = '';
    let err = '';
    let started = false;
    child.stdout.on('data', (d) => {
      out += d;
      if (!started) {
        started = true;
        setTimeout(() => child.kill('SIGKILL'), killAfterMs);
      }
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (signal !== 'SIGKILL' && code !== 0) return reject(new Error(`child failed (${code}): ${err}`));
      const lines = out.split('\n');
      lines.pop(); // a line cut short by the kill is not an acknowledgement
      resolve(lines.filter(Boolean).map(Number));
    });
  });
}

/** Checks the database: integrity, both tables equal (no half transaction), every acknowledged number present. */
function checkAll(file, key, acknowledged) {
  const db = new Database(file, { key });
  try {
    assert.equal(integrity(db), 'ok');
    const n1 = db.prepare('SELECT n FROM t1 ORDER BY n').pluck().all();
    const n2 = db.prepare('SELECT n FROM t2 ORDER BY n').pluck().all();
    assert.deepEqual(n1, n2, 'a transaction was applied in part');
    const have = new Set(n1);
    const missing = acknowledged.filter((n) => !have.has(n));
    assert.deepEqual(missing, [], 'acknowledged commits missing');
    assert.equal(
      db.prepare("SELECT count(*) FROM t1 WHERE pad <> n || '-' || substr(pad, length(n || '-') + 1)").pluck().get(),
      0,
    );
    return n1.length;
  } finally {
    db.close();
  }
}

describe('real processes killed while committing', () => {
  let dir;
  beforeEach(() => {
    dir = tempDir('kills');
  });
  afterEach(() => removeDir(dir));

  for (const journalMode of ['delete', 'truncate', 'persist', 'wal']) {
    it(`SIGKILL at random moments (${journalMode}): every acknowledged commit present, none partial`, async () => {
      const key = newKey();
      const file = path.join(dir, `${journalMode}.db`);
      const acknowledged = [];
      let next = 1;
      for (let round = 0; round < ROUNDS; round++) {
        const got = await commitUntilKilled(
          { file, key: key.toString('hex'), journalMode, start: next },
          20 + Math.floor(Math.random() * 120),
        );
        acknowledged.push(...got);
        next += 100000;
        checkAll(file, key, acknowledged);
      }
      assert.ok(acknowledged.length > ROUNDS, `${acknowledged.length} commits acknowledged`);
    });
  }

  it('four processes writing one encrypted WAL database with a busy timeout: no lost or failed commit', async () => {
    const key = newKey();
    const file = path.join(dir, 'shared.db');
    const setup = new Database(file, { key });
    setup.pragma('journal_mode = WAL');
    setup.exec(
      'CREATE TABLE t1(n INTEGER PRIMARY KEY, w INTEGER, pad TEXT); CREATE TABLE t2(n INTEGER PRIMARY KEY, w INTEGER, pad TEXT)',
    );
    setup.close();
    const runs = [0, 1, 2, 3].map(
      (w) =>
        new Promise((resolve, reject) => {
          const r = spawn(process.execPath, [CHILD], {
            stdio: ['ignore', 'pipe', 'pipe'],
            env: {
              ...process.env,
              CIPHERLITE_COMMIT_CONFIG: JSON.stringify({
                file,
                key: key.toString('hex'),
                start: w + 1,
                stride: 4,
                count: 60,
                writer: w,
                busyTimeout: 20000,
              }),
            },
          });
          let out = '';
          let err = '';
          r.stdout.on('data', (d) => {
            out += d;
          });
          r.stderr.on('data', (d) => {
            err += d;
          });
          r.on('exit', (code) =>
            code === 0
              ? resolve(out.split('\n').filter(Boolean).map(Number))
              : reject(new Error(`writer ${w} failed: ${err}`)),
          );
        }),
    );
    const acknowledged = (await Promise.all(runs)).flat();
    assert.equal(acknowledged.length, 240);
    assert.equal(checkAll(file, key, acknowledged), 240);
  });

  it('process.exit() in the middle of a transaction: rolled back, nothing partial', () => {
    const key = newKey();
    const file = path.join(dir, 'exit.db');
    const script = `
      const Database = require(${JSON.stringify(path.join(__dirname, '..'))});
      const db = new Database(${JSON.stringify(file)}, { key: Buffer.from('${key.toString('hex')}', 'hex') });
      db.exec('CREATE TABLE t1(n INTEGER PRIMARY KEY, w, pad); CREATE TABLE t2(n INTEGER PRIMARY KEY, w, pad)');
      db.prepare('INSERT INTO t1 VALUES (1, 0, ?)').run('1-'.repeat(300));
      db.prepare('INSERT INTO t2 VALUES (1, 0, ?)').run('1-'.repeat(300));
      db.pragma('cache_size = 2');
      db.exec('BEGIN');
      db.exec("INSERT INTO t1 SELECT n + 1000, w, hex(randomblob(3000)) FROM t1; INSERT INTO t1 SELECT n + 2000, w, pad FROM t1;");
      process.exit(0);`;
    const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(checkAll(file, key, [1]), 1);
  });

  for (const where of ['query', 'function', 'aggregate', 'iterator', 'transaction']) {
    it(`worker.terminate() during a ${where}: the database stays whole and usable`, async () => {
      const key = newKey();
      const file = path.join(dir, `worker-${where}.db`);
      const db = new Database(file, { key });
      db.exec('CREATE TABLE t1(n INTEGER PRIMARY KEY, w, pad); CREATE TABLE t2(n INTEGER PRIMARY KEY, w, pad)');
      db.prepare(
        "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 2000) INSERT INTO t1 SELECT i, 0, i || '-' FROM s",
      ).run();
      db.prepare('INSERT INTO t2 SELECT * FROM t1').run();
      db.close();
      const code = `
        const { parentPort } = require('node:worker_threads');
        const Database = require(${JSON.stringify(path.join(__dirname, '..'))});
        const db = new Database(${JSON.stringify(file)}, { key: Buffer.from('${key.toString('hex')}', 'hex') });
        db.function('spin', (x) => { parentPort.postMessage('busy'); for (;;) {} });
        db.aggregate('spinagg', { start: 0, step: (a, x) => { parentPort.postMessage('busy'); for (;;) {} } });
        parentPort.postMessage('ready');
        const where = ${JSON.stringify(where)};
        if (where === 'query') { parentPort.postMessage('busy'); for (;;) db.prepare('SELECT count(*) FROM t1 a, t1 b WHERE a.n % 7 = b.n % 11').get(); }
        if (where === 'function') db.prepare('SELECT spin(n) FROM t1').all();
        if (where === 'aggregate') db.prepare('SELECT spinagg(n) FROM t1').get();
        if (where === 'iterator') { for (const row of db.prepare('SELECT * FROM t1').iterate()) { parentPort.postMessage('busy'); for (;;) {} } }
        if (where === 'transaction') db.transaction(() => {
          db.prepare("UPDATE t1 SET pad = 'half'").run();
          parentPort.postMessage('busy');
          for (;;) {}
        })();`;
      const worker = new Worker(code, { eval: true });
      await new Promise((resolve, reject) => {
        worker.on('message', (m) => {
          if (m === 'busy') setTimeout(resolve, 30);
        });
        worker.on('error', reject);
      });
      await worker.terminate();
      const after = new Database(file, { key });
      assert.equal(integrity(after), 'ok');
      assert.equal(
        after.prepare("SELECT count(*) FROM t1 WHERE pad = 'half'").pluck().get(),
        0,
        'the open transaction was rolled back',
      );
      assert.equal(after.prepare('SELECT count(*) FROM t1').pluck().get(), 2000);
      after.prepare('INSERT INTO t1 VALUES (5000, 1, 1)').run();
      after.close();
    });
  }
});
