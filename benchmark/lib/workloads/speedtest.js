'use strict';
// SQLite's classic speed comparison, in the 16 workloads that wa-sqlite's benchmark runs
// ("Test 1" … "Test 16"), written from that public description: tables
// t(a INTEGER, b INTEGER, c VARCHAR(100)) whose c is b written out in English words.
//
// Run through the driver: each statement is prepared once per test and run with bound
// parameters (the original feeds literal SQL text; binding is what a Node application
// does, and it keeps SQL parsing out of the comparison). Every test is timed whole,
// including its CREATE/BEGIN/COMMIT, as the original does. File database, rollback
// journal (journal_mode=DELETE) with synchronous=OFF — the original's "nosync" column:
// fsync() costs the same on every stack and here (a VM disk) would drown the rest.
//
// After each test (untimed) the tables' row counts and column totals are read, and the
// SELECT tests keep their results: these must be the same on every stack.

const { intPrng, numberName } = require('../data');
const { pragmaSettings, openDatabase, timeNs } = require('./common');

// Full sizes are the original's; --quick scales the row counts down.
const SIZES = {
  full: { t1: 1000, t2: 25000, t3: 25000, t7: 5000, t8: 1000, t9: 25000, t10: 25000, t13: 20000, t15: 12000 },
  quick: { t1: 100, t2: 2500, t3: 2500, t7: 500, t8: 100, t9: 2500, t10: 2500, t13: 2000, t15: 1200 },
};

/** `count` rows (a = 1..count, b random below `max`, c = b in words), from `seed`. */
function numberRows(count, max, seed) {
  const rnd = intPrng(seed);
  const rows = new Array(count);
  for (let i = 0; i < count; i++) {
    const b = rnd(max);
    rows[i] = [i + 1, b, numberName(b)];
  }
  return rows;
}

/** All the data of the 16 tests, made before anything is timed (exec.js uses it too). */
function testData(n, seed) {
  return {
    t1: numberRows(n.t1, 100000, seed + 1),
    t2: numberRows(n.t2, 100000, seed + 2),
    t3: numberRows(n.t3, 100000, seed + 3),
    t9: numberRows(n.t9, 500000, seed + 9),
    t10: numberRows(n.t10, 500000, seed + 10),
    t15: numberRows(n.t15, 100000, seed + 15),
  };
}

/** Row count and column totals of each table that exists, read (untimed) after a test. */
function tableTotals(db) {
  const tables = db
    .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name")
    .all()
    .map((r) => r.name);
  const out = {};
  for (const t of tables) {
    const r = db.prepare(`SELECT count(*) AS n, total(a) AS a, total(b) AS b, total(length(c)) AS c FROM ${t}`).get();
    out[t] = `${r.n}:${r.a}:${r.b}:${r.c}`;
  }
  return out;
}

function run(ctx) {
  const n = SIZES[ctx.quick ? 'quick' : 'full'];
  const seed = ctx.seed;
  const data = testData(n, seed);
  const { db, file, pragmas } = openDatabase(ctx, 'speedtest.db', pragmaSettings('DELETE', 'OFF'));
  const metrics = {};
  const checks = {};
  let total = 0;
  const state = () => tableTotals(db);

  const test = (key, label, fn) => {
    let result;
    const ns = timeNs(ctx, () => {
      result = fn();
    });
    metrics[key] = { label, value: ns / 1e6, unit: 'ms', ops: 1 };
    total += ns;
    checks[key] = { state: state(), ...(result === undefined ? {} : { result }) };
  };

  // A SELECT test's result: how many statements returned rows, and their sums.
  const selectSummary = (results) => {
    let count = 0;
    let avg = 0;
    for (const r of results) {
      count += r.n;
      avg += r.m ?? 0;
    }
    return `${results.length}:${count}:${avg.toPrecision(12)}`;
  };

  test('test1', `Test 1: ${n.t1} INSERTs`, () => {
    db.exec('CREATE TABLE t1(a INTEGER, b INTEGER, c VARCHAR(100))');
    const ins = db.prepare('INSERT INTO t1 VALUES(?, ?, ?)');
    for (const r of data.t1) ins.run(r[0], r[1], r[2]);
  });

  test('test2', `Test 2: ${n.t2} INSERTs in a transaction`, () => {
    db.exec('BEGIN');
    db.exec('CREATE TABLE t2(a INTEGER, b INTEGER, c VARCHAR(100))');
    const ins = db.prepare('INSERT INTO t2 VALUES(?, ?, ?)');
    for (const r of data.t2) ins.run(r[0], r[1], r[2]);
    db.exec('COMMIT');
  });

  test('test3', `Test 3: ${n.t3} INSERTs into an indexed table`, () => {
    db.exec('BEGIN');
    db.exec('CREATE TABLE t3(a INTEGER, b INTEGER, c VARCHAR(100))');
    db.exec('CREATE INDEX i3 ON t3(c)');
    const ins = db.prepare('INSERT INTO t3 VALUES(?, ?, ?)');
    for (const r of data.t3) ins.run(r[0], r[1], r[2]);
    db.exec('COMMIT');
  });

  test('test4', 'Test 4: 100 SELECTs without an index', () => {
    db.exec('BEGIN');
    const sel = db.prepare('SELECT count(*) AS n, avg(b) AS m FROM t2 WHERE b >= ? AND b < ?');
    const out = [];
    for (let i = 0; i < 100; i++) out.push(sel.get(i * 100, i * 100 + 1000));
    db.exec('COMMIT');
    return selectSummary(out);
  });

  test('test5', 'Test 5: 100 SELECTs on a string comparison', () => {
    db.exec('BEGIN');
    const sel = db.prepare('SELECT count(*) AS n, avg(b) AS m FROM t2 WHERE c LIKE ?');
    const out = [];
    for (let i = 1; i <= 100; i++) out.push(sel.get(`%${numberName(i)}%`));
    db.exec('COMMIT');
    return selectSummary(out);
  });

  test('test6', 'Test 6: Creating an index', () => {
    db.exec('CREATE INDEX i2a ON t2(a)');
    db.exec('CREATE INDEX i2b ON t2(b)');
  });

  test('test7', `Test 7: ${n.t7} SELECTs with an index`, () => {
    const sel = db.prepare('SELECT count(*) AS n, avg(b) AS m FROM t2 WHERE b >= ? AND b < ?');
    const out = [];
    for (let i = 0; i < n.t7; i++) out.push(sel.get(i * 100, i * 100 + 100));
    return selectSummary(out);
  });

  test('test8', `Test 8: ${n.t8} UPDATEs without an index`, () => {
    db.exec('BEGIN');
    const upd = db.prepare('UPDATE t1 SET b = b * 2 WHERE a >= ? AND a < ?');
    for (let i = 0; i < n.t8; i++) upd.run(i * 10, i * 10 + 10);
    db.exec('COMMIT');
  });

  test('test9', `Test 9: ${n.t9} UPDATEs with an index`, () => {
    db.exec('BEGIN');
    const upd = db.prepare('UPDATE t2 SET b = ? WHERE a = ?');
    for (const r of data.t9) upd.run(r[1], r[0]);
    db.exec('COMMIT');
  });

  test('test10', `Test 10: ${n.t10} text UPDATEs with an index`, () => {
    db.exec('BEGIN');
    const upd = db.prepare('UPDATE t2 SET c = ? WHERE a = ?');
    for (const r of data.t10) upd.run(r[2], r[0]);
    db.exec('COMMIT');
  });

  test('test11', 'Test 11: INSERTs from a SELECT', () => {
    db.exec('BEGIN');
    db.exec('INSERT INTO t1 SELECT b, a, c FROM t2');
    db.exec('INSERT INTO t2 SELECT b, a, c FROM t1');
    db.exec('COMMIT');
  });

  test('test12', 'Test 12: DELETE without an index', () => {
    db.prepare("DELETE FROM t2 WHERE c LIKE '%fifty%'").run();
  });

  test('test13', 'Test 13: DELETE with an index', () => {
    db.prepare('DELETE FROM t2 WHERE a > 10 AND a < ?').run(n.t13);
  });

  test('test14', 'Test 14: A big INSERT after a big DELETE', () => {
    db.prepare('INSERT INTO t2 SELECT * FROM t1').run();
  });

  test('test15', `Test 15: A big DELETE followed by ${n.t15} small INSERTs`, () => {
    db.exec('BEGIN');
    db.exec('DELETE FROM t1');
    const ins = db.prepare('INSERT INTO t1 VALUES(?, ?, ?)');
    for (const r of data.t15) ins.run(r[0], r[1], r[2]);
    db.exec('COMMIT');
  });

  test('test16', 'Test 16: DROP TABLE', () => {
    db.exec('DROP TABLE t1');
    db.exec('DROP TABLE t2');
    db.exec('DROP TABLE t3');
  });

  metrics.total = { label: 'Total of tests 1–16', value: total / 1e6, unit: 'ms', ops: 1 };
  db.close();
  return { metrics, checks, pragmas, files: [file] };
}

module.exports = {
  name: 'speedtest',
  title: "SQLite's speed test (wa-sqlite's Tests 1–16), prepared statements",
  run,
  SIZES,
  testData,
  tableTotals,
};
