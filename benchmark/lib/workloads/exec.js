'use strict';
// SQLite's speed test as wa-sqlite runs it: each of the 16 tests is one SQL script of
// literal statements (`INSERT INTO t1 VALUES(1,13153,'thirteen thousand ...');` …),
// handed to the driver in ONE `db.exec()` call per test — what migrations, seeds and
// wa-sqlite's benchmark do. So this measures the driver's exec() and SQLite's parser as
// well as the engine; speedtest.js runs the same tests through prepared statements.
//
// Same data, sizes, tables, PRAGMAs (journal_mode=DELETE, synchronous=OFF) and untimed
// checks after every test as speedtest.js, so both workloads end in the same state.
// The scripts are built before anything is timed; only the exec() call is.

const { numberName } = require('../data');
const { pragmaSettings, openDatabase, timeNs } = require('./common');
const { SIZES, testData, tableTotals } = require('./speedtest');

const TABLE = '(a INTEGER, b INTEGER, c VARCHAR(100))';

/** The 16 tests as [key, label, script], with the same rows as speedtest.js. */
function scripts(n, data) {
  const lines = (count, f) => Array.from({ length: count }, (_, i) => f(i)).join('\n');
  const inserts = (table, rows) =>
    rows.map((r) => `INSERT INTO ${table} VALUES(${r[0]},${r[1]},'${r[2]}');`).join('\n');
  return [
    ['test1', `Test 1: ${n.t1} INSERTs`, `CREATE TABLE t1${TABLE};\n${inserts('t1', data.t1)}`],
    [
      'test2',
      `Test 2: ${n.t2} INSERTs in a transaction`,
      `BEGIN;\nCREATE TABLE t2${TABLE};\n${inserts('t2', data.t2)}\nCOMMIT;`,
    ],
    [
      'test3',
      `Test 3: ${n.t3} INSERTs into an indexed table`,
      `BEGIN;\nCREATE TABLE t3${TABLE};\nCREATE INDEX i3 ON t3(c);\n${inserts('t3', data.t3)}\nCOMMIT;`,
    ],
    [
      'test4',
      'Test 4: 100 SELECTs without an index',
      `BEGIN;\n${lines(100, (i) => `SELECT count(*), avg(b) FROM t2 WHERE b>=${i * 100} AND b<${i * 100 + 1000};`)}\nCOMMIT;`,
    ],
    [
      'test5',
      'Test 5: 100 SELECTs on a string comparison',
      `BEGIN;\n${lines(100, (i) => `SELECT count(*), avg(b) FROM t2 WHERE c LIKE '%${numberName(i + 1)}%';`)}\nCOMMIT;`,
    ],
    ['test6', 'Test 6: Creating an index', 'CREATE INDEX i2a ON t2(a);\nCREATE INDEX i2b ON t2(b);'],
    [
      'test7',
      `Test 7: ${n.t7} SELECTs with an index`,
      lines(n.t7, (i) => `SELECT count(*), avg(b) FROM t2 WHERE b>=${i * 100} AND b<${i * 100 + 100};`),
    ],
    [
      'test8',
      `Test 8: ${n.t8} UPDATEs without an index`,
      `BEGIN;\n${lines(n.t8, (i) => `UPDATE t1 SET b=b*2 WHERE a>=${i * 10} AND a<${i * 10 + 10};`)}\nCOMMIT;`,
    ],
    [
      'test9',
      `Test 9: ${n.t9} UPDATEs with an index`,
      `BEGIN;\n${data.t9.map((r) => `UPDATE t2 SET b=${r[1]} WHERE a=${r[0]};`).join('\n')}\nCOMMIT;`,
    ],
    [
      'test10',
      `Test 10: ${n.t10} text UPDATEs with an index`,
      `BEGIN;\n${data.t10.map((r) => `UPDATE t2 SET c='${r[2]}' WHERE a=${r[0]};`).join('\n')}\nCOMMIT;`,
    ],
    [
      'test11',
      'Test 11: INSERTs from a SELECT',
      'BEGIN;\nINSERT INTO t1 SELECT b,a,c FROM t2;\nINSERT INTO t2 SELECT b,a,c FROM t1;\nCOMMIT;',
    ],
    ['test12', 'Test 12: DELETE without an index', "DELETE FROM t2 WHERE c LIKE '%fifty%';"],
    ['test13', 'Test 13: DELETE with an index', `DELETE FROM t2 WHERE a>10 AND a<${n.t13};`],
    ['test14', 'Test 14: A big INSERT after a big DELETE', 'INSERT INTO t2 SELECT * FROM t1;'],
    [
      'test15',
      `Test 15: A big DELETE followed by ${n.t15} small INSERTs`,
      `BEGIN;\nDELETE FROM t1;\n${inserts('t1', data.t15)}\nCOMMIT;`,
    ],
    ['test16', 'Test 16: DROP TABLE', 'DROP TABLE t1;\nDROP TABLE t2;\nDROP TABLE t3;'],
  ];
}

function run(ctx) {
  const n = SIZES[ctx.quick ? 'quick' : 'full'];
  const all = scripts(n, testData(n, ctx.seed));
  const { db, file, pragmas } = openDatabase(ctx, 'exec.db', pragmaSettings('DELETE', 'OFF'));
  const metrics = {};
  const checks = {};
  let total = 0;
  for (const [key, label, sql] of all) {
    const ns = timeNs(ctx, () => db.exec(sql));
    metrics[key] = { label, value: ns / 1e6, unit: 'ms', ops: 1 };
    total += ns;
    checks[key] = { state: tableTotals(db) };
  }
  metrics.total = { label: 'Total of tests 1–16', value: total / 1e6, unit: 'ms', ops: 1 };
  checks.scriptBytes = all.reduce((sum, [, , sql]) => sum + Buffer.byteLength(sql), 0);
  db.close();
  return { metrics, checks, pragmas, files: [file] };
}

module.exports = { name: 'exec', title: "SQLite's speed test (wa-sqlite's Tests 1–16), one db.exec() per test", run };
