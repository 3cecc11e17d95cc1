'use strict';
// docs/better-sqlite3-behaviour.md §13: process and thread behaviour.
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { Worker } = require('node:worker_threads');
const { Database } = require('./_module');
const { tempDir, removeDir, listDir, throwsExactly } = require('./_helpers');

const { SqliteError } = Database;
const dir = tempDir();
after(() => removeDir(dir));

const MODULE = path.join(__dirname, '_module.js');
let counter = 0;
const nextDir = () => {
  const d = path.join(dir, `case-${++counter}`);
  fs.mkdirSync(d);
  return d;
};

function readValues(file) {
  // read-write on purpose: a read-only connection to a WAL database leaves -wal/-shm behind (SQLite)
  const db = new Database(file, { fileMustExist: true });
  try {
    return db.prepare('SELECT x FROM t ORDER BY rowid').pluck().all();
  } finally {
    db.close();
  }
}

/** Run `code` in a worker thread (CommonJS, `require` available); resolves with its messages once it exits with code 0. */
function runWorker(code, workerData, onMessage = () => {}) {
  return new Promise((resolve, reject) => {
    const messages = [];
    const worker = new Worker(code, { eval: true, workerData });
    worker.on('message', (m) => {
      messages.push(m);
      try {
        onMessage(m, worker);
      } catch (e) {
        reject(e);
        worker.terminate();
      }
    });
    worker.on('error', reject);
    worker.on('exit', (code) =>
      code === 0 ? resolve(messages) : reject(new Error(`worker exited with code ${code}`)),
    );
  });
}

describe('§13 process and threads', () => {
  it('13.1 databases left open are closed when the process exits normally (WAL/SHM removed)', () => {
    const d = nextDir();
    const child = `
			const { Database } = require(${JSON.stringify(MODULE)});
			const fs = require('fs');
			const path = require('path');
			const d = process.env.CIPHERLITE_TEST_DIR;
			const open = (name) => {
				const db = new Database(path.join(d, name));
				if (db.pragma('journal_mode = WAL', { simple: true }) !== 'wal') throw new Error('no WAL');
				db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1), (2), (3)');
				return db;
			};
			open('a.db');
			const b = open('b.db');
			const it = b.prepare('SELECT x FROM t').iterate(); // left open, mid-iteration
			it.next();
			const c = open('c.db');
			c.exec('BEGIN; INSERT INTO t VALUES (4)'); // never committed
			b.prepare('INSERT INTO t VALUES (?)'); // a statement never run
			process.stdout.write(JSON.stringify(fs.readdirSync(d).sort()));
		`;
    const result = spawnSync(process.execPath, ['-e', child], {
      env: { ...process.env, CIPHERLITE_TEST_DIR: d },
      encoding: 'utf8',
      timeout: 30000,
    });
    assert.equal(result.status, 0, result.stderr);
    assert.equal(result.signal, null);
    // while running, the WAL and SHM files existed
    assert.deepEqual(JSON.parse(result.stdout), [
      'a.db',
      'a.db-shm',
      'a.db-wal',
      'b.db',
      'b.db-shm',
      'b.db-wal',
      'c.db',
      'c.db-shm',
      'c.db-wal',
    ]);
    // after a normal exit they are gone, committed data is in the main files
    assert.deepEqual(listDir(d), ['a.db', 'b.db', 'c.db']);
    assert.deepEqual(readValues(path.join(d, 'a.db')), [1, 2, 3]);
    assert.deepEqual(readValues(path.join(d, 'b.db')), [1, 2, 3]);
    assert.deepEqual(readValues(path.join(d, 'c.db')), [1, 2, 3]);
    assert.deepEqual(listDir(d), ['a.db', 'b.db', 'c.db']);
  });

  it('13.2 worker_threads: per-thread Statement class, results cross by structured clone, worker exit closes its DBs', async () => {
    const d = nextDir();
    const file = path.join(d, 'shared.db');
    const db = Database(file).defaultSafeIntegers();
    const Statement = db.prepare('SELECT 555').constructor;
    try {
      db.exec('CREATE TABLE data (a, b)');
      assert.equal(Statement.foo, undefined);
      Statement.foo = 5;
      assert.equal(db.prepare('SELECT 555').constructor.foo, 5);

      const code = `
				const { parentPort, workerData } = require('worker_threads');
				const path = require('path');
				const fs = require('fs');
				const { Database } = require(${JSON.stringify(MODULE)});
				const db = Database(workerData.file).defaultSafeIntegers();
				const S = db.prepare('SELECT 555').constructor;
				const fooBefore = S.foo;
				S.foo = 27;
				const info = db.prepare("INSERT INTO data VALUES (1, 2), ('foo', 5.5), (x'0102', NULL)").run();
				const data = db.prepare('SELECT * FROM data ORDER BY rowid').all();
				// a WAL database the worker never closes
				const wal = new Database(path.join(workerData.dir, 'worker-wal.db'));
				wal.pragma('journal_mode = WAL');
				wal.exec('CREATE TABLE t(x); INSERT INTO t VALUES (7)');
				parentPort.postMessage({
					fooBefore, fooAfter: db.prepare('SELECT 1').constructor.foo,
					info, data, files: fs.readdirSync(workerData.dir).sort(),
				});
			`;
      const [msg] = await runWorker(code, { file, dir: d });
      assert.equal(msg.fooBefore, undefined); // the main thread's property is invisible there
      assert.equal(msg.fooAfter, 27);
      assert.equal(Statement.foo, 5); // ...and the worker's is invisible here
      assert.equal(db.prepare('SELECT 555').constructor.foo, 5);
      assert.deepEqual(msg.info, { changes: 3, lastInsertRowid: 3n });
      assert.equal(typeof msg.info.lastInsertRowid, 'bigint');
      const expected = [
        { a: 1n, b: 2n },
        { a: 'foo', b: 5.5 },
        { a: Buffer.from([1, 2]), b: null },
      ];
      // structured clone turns Buffers into Uint8Arrays
      assert.deepEqual(
        msg.data.map((r) => ({ ...r, a: r.a instanceof Uint8Array ? Buffer.from(r.a) : r.a })),
        expected,
      );
      assert.deepEqual(db.prepare('SELECT * FROM data ORDER BY rowid').all(), expected);
      assert.deepEqual(msg.files, ['shared.db', 'worker-wal.db', 'worker-wal.db-shm', 'worker-wal.db-wal']);
      // the worker exited: its open database was closed, WAL/SHM removed
      assert.deepEqual(listDir(d), ['shared.db', 'worker-wal.db']);
      assert.deepEqual(readValues(path.join(d, 'worker-wal.db')), [7]);
    } finally {
      delete Statement.foo;
      db.close();
    }
  });

  it('13.3 busy timeout: a database locked past the timeout throws SQLITE_BUSY, and nothing changes', () => {
    const file = path.join(nextDir(), 'locked.db');
    const blocker = new Database(file, { timeout: 0 });
    blocker.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
    const waiting = new Database(file, { timeout: 200 });
    const immediate = new Database(file, { timeout: 0 });
    const read = waiting.prepare('SELECT x FROM t');
    try {
      blocker.exec('BEGIN EXCLUSIVE; INSERT INTO t VALUES (2)');
      // The blocker is on this thread, so nothing releases the lock while these wait: each
      // gives up. That the wait really happens is 13.3's next test (no timing asserted here).
      throwsExactly(() => waiting.exec('BEGIN EXCLUSIVE'), SqliteError, 'database is locked', { code: 'SQLITE_BUSY' });
      assert.equal(waiting.inTransaction, false);
      throwsExactly(() => read.all(), SqliteError, 'database is locked', { code: 'SQLITE_BUSY' });
      throwsExactly(() => immediate.exec('BEGIN IMMEDIATE'), SqliteError, 'database is locked', {
        code: 'SQLITE_BUSY',
      });

      blocker.exec('COMMIT');
      assert.deepEqual(read.pluck().all(), [1, 2]);
      waiting.exec('BEGIN EXCLUSIVE; INSERT INTO t VALUES (3); COMMIT');
      assert.deepEqual(readValues(file), [1, 2, 3]);
    } finally {
      blocker.close();
      waiting.close();
      immediate.close();
    }
  });

  it('13.3 busy timeout: a write whose first lock attempt failed succeeds by retrying once a reader leaves', async () => {
    // Proof without a clock. A worker holds a read transaction (SHARED). Our write needs
    // EXCLUSIVE: its first attempt takes PENDING and fails while the worker reads; SQLite
    // keeps PENDING while the busy handler retries. The worker sees PENDING as SQLITE_BUSY
    // on a fresh read (a probe with no timeout) and only then ends its read. So the write
    // can only succeed by retrying after a failed attempt — which is the busy timeout; with
    // `timeout: 0` it throws SQLITE_BUSY (and the worker stops waiting once we are done).
    const file = path.join(nextDir(), 'retried.db');
    const setup = new Database(file);
    setup.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
    setup.close();
    // [0]: rounds we have finished; [1]: rounds in which the worker saw our PENDING lock.
    const state = new Int32Array(new SharedArrayBuffer(8));
    const ops = [
      (db) => db.exec('BEGIN EXCLUSIVE; INSERT INTO t VALUES (2); COMMIT'),
      (db) => db.prepare('INSERT INTO t VALUES (3)').run(), // waits at its commit
    ];
    const code = `
				const { parentPort, workerData } = require('worker_threads');
				const { Database } = require(${JSON.stringify(MODULE)});
				const { file, state, rounds } = workerData;
				const reader = new Database(file, { timeout: 0 });
				const probe = new Database(file, { timeout: 0 });
				const count = reader.prepare('SELECT count(*) FROM t').pluck();
				const probeRead = probe.prepare('SELECT count(*) FROM t').pluck();
				for (let round = 1; round <= rounds; round++) {
					reader.exec('BEGIN');
					count.get(); // holds SHARED until COMMIT
					parentPort.postMessage(round);
					while (Atomics.load(state, 0) < round) {
						try {
							probeRead.get();
						} catch (e) {
							if (e.code !== 'SQLITE_BUSY') throw e;
							Atomics.store(state, 1, round);
							break;
						}
					}
					reader.exec('COMMIT');
					while (Atomics.load(state, 0) < round) Atomics.wait(state, 0, round - 1); // our write, done
				}
				reader.close();
				probe.close();
			`;
    const db = new Database(file, { timeout: 60000 });
    try {
      // Each round runs when the worker says it is reading; the write blocks this thread
      // while the worker, on its own thread, watches for our lock.
      await runWorker(code, { file, state, rounds: ops.length }, (round) => {
        let error = null;
        try {
          ops[round - 1](db);
        } catch (e) {
          error = e;
        }
        Atomics.store(state, 0, round); // the worker stops probing even if we failed
        Atomics.notify(state, 0);
        assert.equal(error, null, `round ${round}: ${error}`);
        assert.equal(Atomics.load(state, 1), round, 'the worker saw the write waiting with PENDING held');
      });
      assert.deepEqual(db.prepare('SELECT x FROM t ORDER BY rowid').pluck().all(), [1, 2, 3]);
    } finally {
      db.close();
    }
  });

  it('13.3 busy timeout: the waiting connection succeeds once another thread releases the lock', async () => {
    const file = path.join(nextDir(), 'released.db');
    const setup = new Database(file);
    setup.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1)');
    setup.close();
    const db = new Database(file, { timeout: 10000 });
    try {
      const code = `
				const { parentPort, workerData } = require('worker_threads');
				const { Database } = require(${JSON.stringify(MODULE)});
				const db = new Database(workerData.file);
				db.exec('BEGIN EXCLUSIVE; INSERT INTO t VALUES (2)');
				parentPort.postMessage('locked');
				setTimeout(() => { db.exec('COMMIT'); db.close(); }, 100);
			`;
      let values;
      await runWorker(code, { file }, (msg) => {
        assert.equal(msg, 'locked');
        // blocks in SQLite's busy handler until the worker commits (no SQLITE_BUSY)
        db.exec('BEGIN IMMEDIATE');
        db.exec('INSERT INTO t VALUES (3); COMMIT');
        values = db.prepare('SELECT x FROM t ORDER BY rowid').pluck().all();
      });
      // the worker's row (committed while we waited) comes before ours
      assert.deepEqual(values, [1, 2, 3]);
    } finally {
      db.close();
    }
  });

  it('13.4 sustained inserts: 1000 single-row inserts, 100 per transaction, WAL, read back in order', () => {
    const file = path.join(nextDir(), 'bulk.db');
    const db = new Database(file);
    try {
      assert.equal(db.pragma('journal_mode = WAL', { simple: true }), 'wal');
      db.exec('CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT NOT NULL)');
      const insert = db.prepare('INSERT INTO t(v) VALUES (?)');
      const batch = db.transaction((from) => {
        for (let i = from; i < from + 100; i++) {
          const info = insert.run(`row-${i}`);
          assert.deepEqual(info, { changes: 1, lastInsertRowid: i + 1 });
        }
      });
      for (let from = 0; from < 1000; from += 100) batch(from);
      assert.equal(db.inTransaction, false);
      const expected = Array.from({ length: 1000 }, (_, i) => ({ id: i + 1, v: `row-${i}` }));
      assert.deepEqual(db.prepare('SELECT id, v FROM t').all(), expected);
      // committed and visible to another connection
      const reader = new Database(file, { readonly: true });
      try {
        assert.deepEqual(reader.prepare('SELECT id, v FROM t ORDER BY id').all(), expected);
      } finally {
        reader.close();
      }
    } finally {
      db.close();
    }
    assert.equal(fs.existsSync(`${file}-wal`), false);
  });
});
