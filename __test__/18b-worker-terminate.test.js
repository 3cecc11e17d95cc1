'use strict';
// worker.terminate() while a query runs a user function (issue 10 item 8): the query
// must not return to the worker's code as if it had finished (better-sqlite3 stops
// there), and no native call after it may run. Once the worker is gone the database
// holds only what committed before.
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { Worker } = require('node:worker_threads');
const { Database, isCipherlite } = require('./_module');
const { tempDir, removeDir } = require('./_helpers');

const dir = tempDir();
after(() => removeDir(dir));

// The query calls f() once per row of a long series: most of the time is spent in native
// code between calls, which is when a termination request lands unnoticed by V8 until JS
// runs again.
const SERIES = 'WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 50000000)';
const QUERIES = {
  'get()': `db.prepare("${SERIES} SELECT count(f(i)) AS n FROM c").get()`,
  'all()': `db.prepare("${SERIES} SELECT count(f(i)) AS n FROM c").all()`,
  'pluck().all() of many rows': `db.prepare("${SERIES} SELECT f(i) FROM c").pluck().all()`,
  'iterate()': `db.prepare("${SERIES} SELECT count(f(i)) AS n FROM c").iterate().next()`,
  'run()': `db.prepare("${SERIES} INSERT INTO log SELECT 'row ' || i FROM c WHERE f(i) < 0").run()`,
  'exec()': `db.exec("${SERIES} SELECT count(f(i)) FROM c")`,
  'an aggregate': `db.prepare("${SERIES} SELECT jsum(i) AS n FROM c").get()`,
  'a virtual table': 'db.prepare("SELECT count(*) AS n FROM jseries").get()',
};

function runWorker(file, query, catching = false) {
  // [0]: 1 once the query returned, [1]: 1 if it returned undefined, [2]: calls of f,
  // [3]: 1 if the worker's code caught an error from the query.
  const progress = new Int32Array(new SharedArrayBuffer(16));
  const worker = new Worker(
    `
		const { parentPort, workerData } = require('node:worker_threads');
		const Database = require(workerData.module);
		const progress = workerData.progress;
		const db = new Database(workerData.file);
		const after = db.prepare("INSERT INTO log VALUES ('a native call after the query ran')");
		const started = () => {
			if (Atomics.add(progress, 2, 1) === 0) parentPort.postMessage('started');
		};
		db.function('f', (x) => {
			started();
			return x;
		});
		db.aggregate('jsum', { start: 0, step: (total, x) => { started(); return total + x; } });
		db.table('jseries', {
			columns: ['v'],
			*rows() {
				for (let i = 0; i < 50_000_000; i++) {
					started();
					yield [i];
				}
			},
		});
		${
      catching
        ? `try {
			${query};
			progress[0] = 1;
		} catch (e) {
			progress[3] = 1;
			// The worker's code goes on after the error: no native call may run now.
			try { after.run(); } catch {}
			try { db.exec("INSERT INTO log VALUES ('exec ran after the query')"); } catch {}
			try { db.prepare("INSERT INTO log VALUES ('prepare ran')").run(); } catch {}
		}`
        : `const result = ${query};
		progress[0] = 1;
		progress[1] = result === undefined ? 1 : 0;
		after.run();`
    }
		parentPort.postMessage('finished');
	`,
    { eval: true, workerData: { module: path.join(__dirname, '..'), file, progress } },
  );
  const messages = [];
  return new Promise((resolve, reject) => {
    worker.on('message', (m) => {
      messages.push(m);
      if (m === 'started') setTimeout(() => worker.terminate(), 100);
    });
    worker.on('error', reject);
    worker.on('exit', (code) => resolve({ code, messages, progress: Array.from(progress) }));
  });
}

describe('worker.terminate() while a user function runs', { skip: !isCipherlite }, () => {
  for (const [name, query] of Object.entries(QUERIES)) {
    it(`${name}: the query does not return and nothing after it runs`, async () => {
      const file = path.join(dir, `${name.replace(/\W+/g, '-')}.db`);
      const db = new Database(file);
      db.pragma('journal_mode = WAL');
      db.exec("CREATE TABLE log(x); INSERT INTO log VALUES ('before')");
      db.close();
      for (let attempt = 0; attempt < 2; attempt++) {
        const { code, messages, progress } = await runWorker(file, query);
        assert.equal(code, 1, 'terminated');
        assert.deepEqual(messages, ['started']);
        assert.ok(progress[2] >= 1, 'f ran');
        assert.equal(
          progress[0],
          0,
          `the worker's code after the query ran (the query returned ${progress[1] ? 'undefined' : 'a value'})`,
        );
      }
      const check = new Database(file);
      assert.equal(check.pragma('integrity_check', { simple: true }), 'ok');
      assert.deepEqual(check.prepare('SELECT x FROM log').pluck().all(), ['before']);
      check.close();
    });
  }

  it('code that catches the error still cannot run SQL afterwards', async () => {
    const file = path.join(dir, 'catching.db');
    const db = new Database(file);
    db.exec("CREATE TABLE log(x); INSERT INTO log VALUES ('before')");
    db.close();
    for (const query of [QUERIES['get()'], QUERIES['exec()']]) {
      const { code, progress } = await runWorker(file, query, true);
      assert.equal(code, 1, 'terminated');
      assert.equal(progress[0], 0, 'the query did not return');
    }
    const check = new Database(file);
    assert.deepEqual(
      check.prepare('SELECT x FROM log').pluck().all(),
      ['before'],
      'no native call after the query ran',
    );
    check.close();
  });
});
