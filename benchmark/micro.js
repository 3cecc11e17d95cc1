#!/usr/bin/env node
'use strict';
// Per-call micro-benchmark of the driver's hot paths, for profiling (not a report): both
// drivers in ONE process on the driver workload's table, measured rounds alternating
// between them, each case compiled separately per driver (so no call site sees both).
// Prints the median of the per-round ratios and each side's median and minimum.
//
//   node benchmark/micro.js                       # cipherlite vs better-sqlite3 13 (Node >= 22) or 12
//   node benchmark/micro.js --only get,all100 --rounds 31 --file
//   CIPHERLITE_PATH=/some/checkout node benchmark/micro.js     # another build of cipherlite
//
// --file: a WAL database in the temp dir with the workloads' PRAGMAs (default: :memory:,
// which leaves out the two fcntl calls per read transaction that both drivers pay).
// The full, reported comparison is run.js; this is for finding where time goes.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { loadStack } = require('./lib/stacks');
const { userRows } = require('./lib/data');
const { pragmaSettings } = require('./lib/workloads/common');

const { values: opts } = parseArgs({
  options: {
    only: { type: 'string' },
    rounds: { type: 'string', default: '15' },
    file: { type: 'boolean', default: false },
    baseline: { type: 'string' },
  },
});
const rounds = Number(opts.rounds);
const major = Number(process.versions.node.split('.')[0]);
const baselineName = opts.baseline || (major >= 22 ? 'better-sqlite3-13' : 'better-sqlite3');

const SELECT = 'SELECT id, name, email, score, created FROM users';
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cipherlite-micro-'));
process.on('exit', () => fs.rmSync(dir, { recursive: true, force: true }));

function setup(stack, name) {
  const db = stack.open(opts.file ? path.join(dir, `${name}.db`) : ':memory:');
  if (opts.file) for (const [key, value] of pragmaSettings('WAL', 'NORMAL')) db.exec(`PRAGMA ${key} = ${value}`);
  db.exec(
    'CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, email TEXT NOT NULL, score REAL NOT NULL, created INTEGER NOT NULL)',
  );
  db.exec('CREATE TABLE t2 (id INTEGER PRIMARY KEY, name TEXT, email TEXT, score REAL, created INTEGER)');
  const insert = db.prepare('INSERT INTO users VALUES (?, ?, ?, ?, ?)');
  db.exec('BEGIN');
  for (const r of userRows(10_000, 20261129)) insert.run(r[0], r[1], r[2], r[3], r[4]);
  db.exec('COMMIT');
  return {
    db,
    get: db.prepare(`${SELECT} WHERE id = ?`),
    all: db.prepare(SELECT),
    raw: stack.raw(db.prepare(SELECT)),
    page: db.prepare(`${SELECT} WHERE id > ? ORDER BY id LIMIT 100`),
    nop: db.prepare('SELECT 1'),
    insert: db.prepare('INSERT INTO t2 VALUES (?, ?, ?, ?, ?)'),
  };
}

// Compiled once per driver (new Function), so each driver's calls have their own feedback.
function casesSource() {
  // Results are kept in `_sink` so the calls cannot be optimised away.
  let _sink;
  return {
    nop: [
      20000,
      (s) => {
        _sink = s.nop.get();
      },
    ],
    get: [
      20000,
      (s, i) => {
        _sink = s.get.get(((i * 7919) % 10000) + 1);
      },
    ],
    all100: [
      500,
      (s, i) => {
        _sink = s.page.all((i * 31) % 9800);
      },
    ],
    all10k: [
      5,
      (s) => {
        _sink = s.all.all();
      },
    ],
    raw10k: [
      5,
      (s) => {
        _sink = s.raw.all();
      },
    ],
    iterate: [
      5,
      (s) => {
        let n = 0;
        for (const r of s.all.iterate()) n += r.id + r.name.length;
        _sink = n;
      },
    ],
    insert: [
      10000,
      (s, i) => {
        s.insert.run(null, 'name', 'e@example.com', 1.5, i);
      },
    ],
  };
}
const makeCases = () => new Function(`return (${casesSource})()`)();

const sides = [
  { name: 'cipherlite', stack: loadStack('cipherlite') },
  { name: baselineName, stack: loadStack(baselineName) },
];
for (const side of sides) {
  side.s = setup(side.stack, side.name);
  side.cases = makeCases();
}
const median = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1];
const only = opts.only ? opts.only.split(',') : null;
console.log(
  `Node ${process.version}, ${opts.file ? 'WAL file' : ':memory:'}, ${rounds} rounds; ratio = cipherlite / ${baselineName}`,
);
for (const name of Object.keys(sides[0].cases)) {
  if (only && !only.includes(name)) continue;
  const n = sides[0].cases[name][0];
  for (const side of sides) {
    side.t = [];
    if (name === 'insert') side.s.db.exec('BEGIN');
    for (let i = 0; i < n * 3; i++) side.cases[name][1](side.s, i); // warm-up
  }
  for (let r = 0; r < rounds; r++) {
    for (const side of r & 1 ? [sides[1], sides[0]] : sides) {
      const f = side.cases[name][1];
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) f(side.s, i);
      side.t.push(Number(process.hrtime.bigint() - t0) / n);
    }
  }
  for (const side of sides) if (name === 'insert') side.s.db.exec('COMMIT');
  const ratio = median(sides[0].t.map((t, i) => t / sides[1].t[i]));
  const ms = n <= 5;
  const show = (t) => (ms ? `${(t / 1e6).toFixed(2)} ms` : `${t.toFixed(0)} ns`);
  console.log(
    `${name.padEnd(8)} ratio ${ratio.toFixed(2)}   ${sides.map((s) => `${s.name} ${show(median(s.t))} (min ${show(Math.min(...s.t))})`).join('   ')}`,
  );
}
for (const side of sides) side.s.db.close();
