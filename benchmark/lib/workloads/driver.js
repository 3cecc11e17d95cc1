'use strict';
// Driver workload: what a driver adds on top of SQLite — binding parameters, stepping,
// building rows — on a small realistic table
// users(id INTEGER PRIMARY KEY, name TEXT, email TEXT, score REAL, created INTEGER).
//
// Each operation is first run untimed a little (so the JIT has compiled the driver's JS
// before it is timed, on every stack alike), then timed as one block.

const { userRows, shuffledIds, intPrng, checksum } = require('../data');
const { pragmaSettings, openDatabase, timeNs, perOp, tableState } = require('./common');

const SIZES = {
  full: { rows: 10_000, passes: 10, smallReads: 1_000, warm: 1_000 },
  quick: { rows: 2_000, passes: 3, smallReads: 200, warm: 200 },
};

const CREATE = `CREATE TABLE users (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL,
  email TEXT NOT NULL,
  score REAL NOT NULL,
  created INTEGER NOT NULL
)`;
const INSERT = 'INSERT INTO users (id, name, email, score, created) VALUES (?, ?, ?, ?, ?)';
const SELECT_ALL = 'SELECT id, name, email, score, created FROM users';

function run(ctx) {
  const size = SIZES[ctx.quick ? 'quick' : 'full'];
  const seed = ctx.seed;
  const rows = userRows(size.rows, seed);
  const { db, file, pragmas } = openDatabase(ctx, 'driver.db', pragmaSettings('WAL', 'NORMAL'));
  const metrics = {};
  const checks = {};
  // What the stack's API has no way to do (@signalapp/sqlcipher: .iterate(), array rows):
  // not measured, with the reason, instead of measured some other way.
  const lacks = ctx.stack.lacks || {};
  const notMeasured = {};

  db.exec(CREATE);
  db.exec(CREATE.replace('users', 'warm'));

  // 1. Single-row inserts through one prepared statement, in one transaction. The warm-up
  //    inserts go to another table and are rolled back, so the file doesn't change.
  {
    const warm = db.prepare(INSERT.replace('users', 'warm'));
    db.exec('BEGIN');
    for (let i = 0; i < size.warm; i++) {
      const r = rows[i];
      warm.run(r[0], r[1], r[2], r[3], r[4]);
    }
    db.exec('ROLLBACK');
    const insert = db.prepare(INSERT);
    db.exec('BEGIN');
    const ns = timeNs(ctx, () => {
      for (let i = 0; i < rows.length; i++) {
        const r = rows[i];
        insert.run(r[0], r[1], r[2], r[3], r[4]);
      }
    });
    db.exec('COMMIT'); // not timed
    metrics.insert = perOp(`insert 1 row (prepared, in a transaction) ×${rows.length}`, ns, rows.length, 'µs');
    const table = tableState(db, 'users', 'id');
    checks.insert = { rows: table.length, checksum: checksum(table) };
  }

  // 2. Point selects by primary key, in a seeded random order.
  {
    const select = db.prepare(`${SELECT_ALL} WHERE id = ?`);
    const ids = shuffledIds(rows.length, seed + 1);
    const out = new Array(ids.length);
    for (let i = 0; i < size.warm; i++) out[i] = select.get(ids[i]);
    const ns = timeNs(ctx, () => {
      for (let i = 0; i < ids.length; i++) out[i] = select.get(ids[i]);
    });
    metrics.get = perOp(`select 1 row by primary key, .get() ×${ids.length}`, ns, ids.length, 'µs');
    checks.get = { rows: out.filter((r) => r !== undefined).length, checksum: checksum(out) };
  }

  // 3. All rows with .all().
  {
    const all = db.prepare(SELECT_ALL);
    let last = all.all();
    const ns = timeNs(ctx, () => {
      for (let p = 0; p < size.passes; p++) last = all.all();
    });
    metrics.all = perOp(`read all ${rows.length} rows, .all() ×${size.passes}`, ns, size.passes, 'ms');
    checks.all = { rows: last.length, checksum: checksum(last) };
  }

  // 4. All rows with .iterate(), touching every column of every row.
  if (lacks.iterate) notMeasured.iterate = lacks.iterate;
  else {
    const iter = db.prepare(SELECT_ALL);
    const walk = () => {
      let n = 0;
      let ids = 0;
      let chars = 0;
      let score = 0;
      let created = 0;
      for (const row of iter.iterate()) {
        n++;
        ids += row.id;
        chars += row.name.length + row.email.length;
        score += row.score;
        created += row.created;
      }
      return `${n}:${ids}:${chars}:${score.toPrecision(12)}:${created}`;
    };
    let last = walk();
    const ns = timeNs(ctx, () => {
      for (let p = 0; p < size.passes; p++) last = walk();
    });
    metrics.iterate = perOp(`read all ${rows.length} rows, .iterate() ×${size.passes}`, ns, size.passes, 'ms');
    checks.iterate = { rows: Number(last.split(':')[0]), checksum: last };
  }

  // 5. All rows as arrays: .raw().all() (node:sqlite: setReturnArrays(true)).
  if (lacks.raw) notMeasured.raw = lacks.raw;
  else {
    const raw = ctx.stack.raw(db.prepare(SELECT_ALL));
    let last = raw.all();
    const ns = timeNs(ctx, () => {
      for (let p = 0; p < size.passes; p++) last = raw.all();
    });
    metrics.raw = perOp(`read all ${rows.length} rows, .raw().all() ×${size.passes}`, ns, size.passes, 'ms');
    checks.raw = { rows: last.length, checksum: checksum(last) };
  }

  // 6. 100-row pages with .all(), from seeded random starting points.
  {
    const page = db.prepare(`${SELECT_ALL} WHERE id > ? ORDER BY id LIMIT 100`);
    const rnd = intPrng(seed + 2);
    const starts = Array.from({ length: size.smallReads }, () => rnd(rows.length - 100));
    let total = 0;
    let last;
    for (let i = 0; i < Math.min(size.warm, starts.length); i++) page.all(starts[i]);
    const ns = timeNs(ctx, () => {
      for (let i = 0; i < starts.length; i++) {
        last = page.all(starts[i]);
        total += last.length;
      }
    });
    metrics.all100 = perOp(`read 100 rows, .all() ×${starts.length}`, ns, starts.length, 'µs');
    checks.all100 = { rows: total, checksum: checksum(last) };
  }

  db.close();
  return { metrics, checks, pragmas, files: [file], notMeasured };
}

module.exports = { name: 'driver', title: 'Driver workload', run };
