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
//   node benchmark/micro.js --against /some/checkout --file       # this build ÷ another one
//
// --file: a WAL database in the temp dir with the workloads' PRAGMAs (default: :memory:,
// which leaves out the two fcntl calls per read transaction that both drivers pay).
// --against DIR: the baseline is cipherlite as built in DIR (a checkout with its addon
// built, or a copy of lib/, index.js, package.json and the .node), to weigh a change by
// itself: the same ratio of a build against itself (--against .) shows the noise.
// --heap: for the many-row reads (all100, all10k, raw10k), also the JS heap bytes one
// call allocates and its result keeps alive, per side, measured between forced
// collections: what the young-generation collections copy (see README.md's misses).
// `insertFresh` inserts freshly generated rows, one pass each (as the driver workload
// does): V8 flattens their concatenated strings on the first read, in both drivers;
// `insert` binds constant strings.
// The full, reported comparison is run.js; this is for finding where time goes.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { loadStack, loadCipherliteAt } = require('./lib/stacks');
const { userRows } = require('./lib/data');
const { pragmaSettings } = require('./lib/workloads/common');
const { nameList, integerOption } = require('./lib/options');

const { values: opts } = parseArgs({
  options: {
    only: { type: 'string' },
    rounds: { type: 'string' },
    file: { type: 'boolean', default: false },
    heap: { type: 'boolean', default: false },
    baseline: { type: 'string' },
    against: { type: 'string' },
  },
});
/** A bad option value: its message, exit status 2. */
function refuse(parse) {
  try {
    return parse();
  } catch (e) {
    console.error(`micro.js: ${e.message}`);
    process.exit(2);
  }
}
const rounds = refuse(() => integerOption('rounds', opts.rounds, 15, 1));
const major = Number(process.versions.node.split('.')[0]);
const baselineName = opts.against
  ? `cipherlite at ${opts.against}`
  : opts.baseline || (major >= 22 ? 'better-sqlite3-13' : 'better-sqlite3');

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
    fresh: null,
  };
}

// A case is [calls per round, the call, optionally what runs untimed before each round].
// The generated rows of `insertFresh` differ per round (the seed), so each round reads
// strings no call has read before.
let freshSeed = 1;
const freshRows = (s, n) => {
  s.fresh = userRows(n, freshSeed++);
};

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
    insertFresh: [
      10000,
      (s, i) => {
        const r = s.fresh[i];
        s.insert.run(null, r[1], r[2], r[3], r[4]);
      },
      freshRows,
    ],
    // Not a case: lets go of the last result before a heap measurement.
    clearSink: () => {
      _sink = undefined;
    },
  };
}
// Compiled from its source, so `freshRows` comes in as a parameter.
const makeCases = () => new Function('freshRows', `return (${casesSource})()`)(freshRows);

const sides = [
  { name: 'cipherlite', stack: loadStack('cipherlite') },
  { name: baselineName, stack: opts.against ? loadCipherliteAt(opts.against) : loadStack(baselineName) },
];
for (const side of sides) {
  side.s = setup(side.stack, side.name);
  side.cases = makeCases();
}
const median = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1];
const caseNames = Object.keys(sides[0].cases).filter((name) => name !== 'clearSink');
const only = opts.only ? refuse(() => nameList(opts.only, caseNames, 'case')) : null;
// A forced full collection, for --heap (without --expose-gc, through V8's flag).
let collect = globalThis.gc;
if (opts.heap && typeof collect !== 'function') {
  require('node:v8').setFlagsFromString('--expose-gc');
  collect = require('node:vm').runInNewContext('gc');
}

/** The cases whose result is large enough for `heapOfOneCall` to measure: the heap's
 * used size moves by kilobytes on its own, so a call of a few hundred bytes reads as noise. */
const HEAP_CASES = new Set(['all100', 'all10k', 'raw10k']);

/** Heap bytes one call of `name` allocates (one call, so that no collection runs in it),
 * and how much its result keeps reachable (the heap with `_sink` holding it, less the
 * heap without). */
function heapOfOneCall(side, name) {
  const [n, f] = side.cases[name];
  side.cases.clearSink();
  // Twice: a single full collection can leave garbage of the previous case behind.
  collect();
  collect();
  const start = process.memoryUsage().heapUsed;
  f(side.s, n - 1);
  const allocated = process.memoryUsage().heapUsed - start;
  collect();
  collect();
  const withResult = process.memoryUsage().heapUsed;
  side.cases.clearSink();
  collect();
  collect();
  return { allocated, kept: withResult - process.memoryUsage().heapUsed };
}
console.log(
  `Node ${process.version}, ${opts.file ? 'WAL file' : ':memory:'}, ${rounds} rounds; ratio = cipherlite / ${baselineName}`,
);
for (const name of caseNames) {
  if (only && !only.includes(name)) continue;
  const n = sides[0].cases[name][0];
  const writes = name.startsWith('insert');
  for (const side of sides) {
    side.t = [];
    if (writes) side.s.db.exec('BEGIN');
    const [, f, before] = side.cases[name];
    for (let w = 0; w < 3; w++) {
      if (before) before(side.s, n);
      for (let i = 0; i < n; i++) f(side.s, i); // warm-up
    }
  }
  for (let r = 0; r < rounds; r++) {
    for (const side of r & 1 ? [sides[1], sides[0]] : sides) {
      const [, f, before] = side.cases[name];
      if (before) before(side.s, n);
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) f(side.s, i);
      side.t.push(Number(process.hrtime.bigint() - t0) / n);
    }
  }
  const heap = opts.heap && HEAP_CASES.has(name) ? sides.map((side) => heapOfOneCall(side, name)) : null;
  for (const side of sides) if (writes) side.s.db.exec('COMMIT');
  const ratio = median(sides[0].t.map((t, i) => t / sides[1].t[i]));
  const ms = n <= 5;
  const show = (t) => (ms ? `${(t / 1e6).toFixed(2)} ms` : `${t.toFixed(0)} ns`);
  console.log(
    `${name.padEnd(11)} ratio ${ratio.toFixed(2)}   ${sides.map((s) => `${s.name} ${show(median(s.t))} (min ${show(Math.min(...s.t))})`).join('   ')}`,
  );
  if (heap) {
    const bytes = (b) => `${Math.round(b)} B`;
    console.log(
      `${''.padEnd(11)} heap, one call: ${sides.map((s, i) => `${s.name} ${bytes(heap[i].allocated)} allocated, ${bytes(heap[i].kept)} kept by the result`).join('   ')}`,
    );
  }
}
for (const side of sides) side.s.db.close();
