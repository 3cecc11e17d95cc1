#!/usr/bin/env node
'use strict';
// Evolu's sync storage, before and after: Evolu's own TypeScript SQL (@evolu/common, its
// createSqlite over better-sqlite3) against cipherlite's native evolu_* functions (and
// cipherlite/relay for the relay workload), side by side in one run.
//
//   npm run bench:storage                 # release build, then 1 warm-up + 5 measured rounds
//   node benchmark/storage.js --quick     # smoke run (5,000 timestamps), report in results/tmp/
//   node benchmark/storage.js --only append,relay --rounds 3
//
// Workloads (docs/evolu-storage.md §6.1, Evolu's bench/storage/benchmark.mts, and our relay one):
//   append / prepend / insert  50,000 timestamps (millis 0..49,999, owner 16 zero bytes) in
//                              ascending / descending / seeded-shuffled order, as 5
//                              transactions of 10,000 inserts with that strategy
//   at                         1,000 getTimestampByIndex at floor(i × 49,999 / 999), on a
//                              50,000 appended skiplist
//   ranges                     250 fingerprintRanges of computeBalancedBuckets(50,000)
//                              (16 buckets) on a 50,000 appended skiplist
//   relay                      50,000 messages of 100–1,000 bytes written in batches of 500
//                              (writeMessages, each batch shuffled), 200 fingerprintRanges
//                              of 16 buckets, iterate over every timestamp 5 times, 10,000
//                              readDbChange of random stored timestamps
//
// Method: every (round, workload, stack) runs in a fresh child process (this file with
// --child), started with --expose-gc; stacks alternate order each round; one discarded
// warm-up round. Reported: medians over the measured rounds and the per-round paired
// speed-up (before ÷ after), median (min–max). Levels are random on both sides (Evolu's
// Math.random, cipherlite's OS RNG), so the skiplists differ between runs: results are
// checked with level-independent values (sizes, fingerprints, upper bounds, timestamps,
// changes), which must be equal for both stacks in every round (and, at full size, equal
// §8 V2's published values). Exit code 0: all checks passed; 1: a check failed; 2: bad
// arguments.

const { spawnSync } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { median, pairedRatios, summarize } = require('./lib/stats');
const { machineInfo, loadAverage } = require('./lib/machine');
const { seeded, shuffle } = require('./lib/random');

const ROOT = path.join(__dirname, '..');
const STACKS = {
  before: "Evolu's TypeScript storage (@evolu/common) on better-sqlite3",
  after: "cipherlite's evolu_* SQL functions (and cipherlite/relay)",
};
const WORKLOADS = ['append', 'prepend', 'insert', 'at', 'ranges', 'relay'];
// Evolu's reported speed-ups for its native version (before ÷ after), and the relay's
// bound on after ÷ before.
const TARGETS = { append: 1.5, prepend: 1.9, insert: 2.4, at: 5.5, ranges: 11 };
const RELAY_TARGET = 0.63;

const FULL = {
  n: 50_000,
  transactions: 5,
  at: 1000,
  ranges: 250,
  messages: 50_000,
  batch: 500,
  relayRanges: 200,
  iterations: 5,
  reads: 10_000,
};
const QUICK = {
  n: 5000,
  transactions: 5,
  at: 200,
  ranges: 50,
  messages: 5000,
  batch: 500,
  relayRanges: 40,
  iterations: 2,
  reads: 1000,
};

// §8 V2: level-independent values of the 50,000 benchmark timestamps.
const V2 = {
  size: 50_000,
  fingerprint: 'fff4dfb2f7b0537011a29518',
  ranges: [
    '9fc67b8974435368acb7f935',
    '0a49161f8ba68f6bd3cf1d25',
    '3d161eefcc0671eae60eeddb',
    '5fbaeabca156d5e7a9ac2eee',
    '0caefd953c7da9cdb6077a0c',
    '4e82e2512b5b71a77a1b40ea',
    '2f427b83d14dfd30c8eb8b18',
    'ea7511eff0c324896411dfeb',
    '055eb333e35342f996bb8692',
    '67714471d82b0c77a5922485',
    '5f4c90472492a917aa4b2ffe',
    '9faef1644903d18d06d0512d',
    '87b61e674a0c9d5882f41e50',
    'bce1251d5b7d67c2435e5d98',
    '369cb74135005054fa718b30',
    '20ca29852135b677e5f7c814',
  ],
};

const USAGE = `usage: node benchmark/storage.js [options]

  --quick           smoke run: 5,000 timestamps/messages, 0 warm-up + 2 rounds, report in results/tmp/
  --rounds N        measured rounds (default 5; --quick: 2)
  --warmup N        discarded warm-up rounds (default 1; --quick: 0)
  --only w[,w]      workloads: ${WORKLOADS.join(', ')} (default: all)
  --seed N          seed of the shuffles and the relay data (default 20261129)
  --out DIR         report directory (default benchmark/results; --quick: benchmark/results/tmp)
  --cipherlite P    load cipherlite from P instead of the repository root
  --help`;

// ---------------------------------------------------------------------------------------
// Data (the same in both stacks' processes)

/** The benchmark's timestamp i: 6-byte big-endian millis i, then 10 zero bytes. */
function benchTimestamp(i) {
  const t = new Uint8Array(16);
  Buffer.from(t.buffer).writeUIntBE(i, 0, 6);
  return t;
}

/** computeBalancedBuckets(n, 16, 2) (Number.ts). */
function balancedBuckets(n) {
  const q = Math.floor(n / 16);
  const r = n % 16;
  const out = [];
  let end = 0;
  for (let i = 0; i < 16; i++) {
    end += q + (i < r ? 1 : 0);
    out.push(end);
  }
  return out;
}

/** The relay's messages: Evolu Timestamp objects, mostly ascending, each batch shuffled. */
function relayMessages(size, seed) {
  const random = seeded(seed);
  const nodes = ['1f2e3d4c5b6a7988', 'a1b2c3d4e5f60718', '0123456789abcdef'];
  const messages = [];
  for (let i = 0; i < size.messages; i++) {
    const length = 100 + Math.floor(random() * 901);
    const change = Buffer.allocUnsafe(length);
    for (let k = 0; k < length; k += 4) change.writeUInt32LE((random() * 2 ** 32) >>> 0, Math.min(k, length - 4));
    messages.push({
      timestamp: { millis: 1_767_225_600_000 + i * 37, counter: i % 3, nodeId: nodes[i % nodes.length] },
      change,
    });
  }
  const batches = [];
  for (let i = 0; i < messages.length; i += size.batch)
    batches.push(shuffle(messages.slice(i, i + size.batch), random));
  return batches;
}

const hex = (bytes) => Buffer.from(bytes).toString('hex');
const OWNER = new Uint8Array(16);
const RELAY_OWNER = new Uint8Array(16).fill(0x5a);

// ---------------------------------------------------------------------------------------
// The two stacks, behind one small interface

async function openBefore() {
  const BetterSqlite3 = require('better-sqlite3');
  const { loadEvolu, openEvoluSqlite } = require('./lib/evolu');
  const { common, localFirst } = await loadEvolu();
  const e = await openEvoluSqlite(BetterSqlite3);
  const random = common.createRandom();
  const deps = { sqlite: e.sqlite, random };
  return {
    version: `better-sqlite3 ${require('better-sqlite3/package.json').version}, SQLite ${e.db.prepare('select sqlite_version()').pluck().get()}`,
    createTables() {
      localFirst.createBaseSqliteStorageTables(deps);
    },
    storage() {
      const storage = localFirst.createBaseSqliteStorage(deps);
      const byIndex = localFirst.getTimestampByIndex(deps);
      return {
        transaction: (fn) => e.sqlite.transaction(fn),
        insert: (owner, t, strategy) => storage.insertTimestamp(owner, t, strategy),
        at: (owner, index) => byIndex(owner, index),
        size: (owner) => storage.getSize(owner),
        fingerprint: (owner, begin, end) => storage.fingerprint(owner, begin, end),
        ranges: (owner, buckets) =>
          storage
            .fingerprintRanges(owner, buckets)
            .map((r) => [typeof r.upperBound === 'symbol' ? null : r.upperBound, r.fingerprint]),
      };
    },
    relay() {
      localFirst.createRelayStorageTables(deps);
      const storage = localFirst.createRelaySqliteStorage({ ...deps, timingSafeEqual: crypto.timingSafeEqual })({
        isOwnerWithinQuota: () => true,
      });
      return {
        async write(owner, messages) {
          const result = await e.run(storage.writeMessages(owner, messages));
          if (!result.ok) throw new Error(`writeMessages failed: ${JSON.stringify(result.error)}`);
        },
        size: (owner) => storage.getSize(owner),
        fingerprint: (owner, begin, end) => storage.fingerprint(owner, begin, end),
        ranges: (owner, buckets) =>
          storage
            .fingerprintRanges(owner, buckets)
            .map((r) => [typeof r.upperBound === 'symbol' ? null : r.upperBound, r.fingerprint]),
        iterate: (owner, begin, end, cb) => storage.iterate(owner, begin, end, cb),
        readChange: (owner, t) => storage.readDbChange(owner, t),
        storedBytes: (owner) =>
          e.db.prepare('select storedBytes from evolu_usage where ownerId = ?').pluck().get(owner),
      };
    },
  };
}

async function openAfter(cipherlitePath) {
  const Database = require(cipherlitePath);
  const { createRelayStorage } = require(path.join(cipherlitePath, 'lib', 'relay.js'));
  const db = new Database(':memory:');
  let relay;
  return {
    version: `cipherlite (${path.relative(ROOT, cipherlitePath) || '.'}), SQLite ${db.prepare('select sqlite_version()').pluck().get()}`,
    createTables() {
      relay = createRelayStorage(db, { isOwnerWithinQuota: () => true });
      relay.createTables();
    },
    storage() {
      const insert = db.prepare('select evolu_skiplist_insert(?, ?, null, ?)').pluck();
      const at = db.prepare('select evolu_skiplist_at(?, ?)').pluck();
      const size = db.prepare('select evolu_skiplist_size(?)').pluck();
      const fingerprint = db.prepare('select evolu_skiplist_fingerprint(?, ?, ?)').pluck();
      const ranges = db.prepare('select upper_bound, fingerprint from evolu_fingerprint_ranges(?, ?)').raw();
      const begin = db.prepare('begin');
      const commit = db.prepare('commit');
      return {
        transaction(fn) {
          begin.run();
          try {
            fn();
            commit.run();
          } catch (error) {
            if (db.inTransaction) db.exec('rollback');
            throw error;
          }
        },
        insert: (owner, t, strategy) => insert.get(owner, t, strategy) === 1,
        at: (owner, index) => at.get(owner, index),
        size: (owner) => size.get(owner),
        fingerprint: (owner, b, e) => fingerprint.get(owner, b, e),
        ranges: (owner, buckets) => ranges.all(owner, JSON.stringify(buckets)),
      };
    },
    relay() {
      return {
        write(owner, messages) {
          const result = relay.writeMessages(owner, messages);
          if (!result.ok) throw new Error(`writeMessages failed: ${JSON.stringify(result.error)}`);
        },
        size: (owner) => relay.getSize(owner),
        fingerprint: (owner, b, e) => relay.fingerprint(owner, b, e),
        ranges: (owner, buckets) => relay.fingerprintRanges(owner, buckets).map((r) => [r.upperBound, r.fingerprint]),
        iterate: (owner, begin, end, cb) => relay.iterate(owner, begin, end, cb),
        readChange: (owner, t) => relay.readDbChange(owner, t),
        storedBytes: (owner) => db.prepare('select storedBytes from evolu_usage where ownerId = ?').pluck().get(owner),
      };
    },
  };
}

// ---------------------------------------------------------------------------------------
// Workloads (run in a child)

function now() {
  return process.hrtime.bigint();
}
const ms = (start, end) => Number(end - start) / 1e6;
const gc = () => {
  if (global.gc) global.gc();
};

/** Level-independent values of a skiplist of the benchmark timestamps 0..n−1. */
function skiplistCheck(s, n) {
  return {
    size: s.size(OWNER),
    fingerprint: hex(s.fingerprint(OWNER, 0, n)),
    ranges: s.ranges(OWNER, balancedBuckets(n)).map(([upper, fp]) => [upper === null ? null : hex(upper), hex(fp)]),
  };
}

function appendAll(s, n) {
  s.transaction(() => {
    for (let i = 0; i < n; i++) s.insert(OWNER, benchTimestamp(i), 'append');
  });
}

async function runWorkload(stack, workload, size, seed, cipherlitePath) {
  const impl = stack === 'before' ? await openBefore() : await openAfter(cipherlitePath);
  impl.createTables();
  const times = {};
  let check;
  if (workload === 'append' || workload === 'prepend' || workload === 'insert') {
    const s = impl.storage();
    const order = Array.from({ length: size.n }, (_, i) => i);
    if (workload === 'prepend') order.reverse();
    if (workload === 'insert') shuffle(order, seeded(seed));
    const ts = order.map(benchTimestamp);
    // A little untimed work first, on another owner, so V8 has compiled the paths.
    const warm = new Uint8Array(16).fill(0xee);
    s.transaction(() => {
      for (let i = 0; i < 200; i++) s.insert(warm, benchTimestamp(i), 'append');
    });
    const per = size.n / size.transactions;
    let total = 0;
    for (let tx = 0; tx < size.transactions; tx++) {
      gc();
      const start = now();
      s.transaction(() => {
        for (let i = tx * per; i < (tx + 1) * per; i++) s.insert(OWNER, ts[i], workload);
      });
      total += ms(start, now());
    }
    times[`${workload} ${size.n}`] = total;
    check = skiplistCheck(s, size.n);
  } else if (workload === 'at') {
    const s = impl.storage();
    appendAll(s, size.n);
    const indexes = Array.from({ length: size.at }, (_, i) => Math.floor((i * (size.n - 1)) / (size.at - 1)));
    for (let i = 0; i < 50; i++) s.at(OWNER, indexes[i]);
    gc();
    const xor = Buffer.alloc(16);
    let last;
    const start = now();
    for (const index of indexes) last = s.at(OWNER, index);
    times[`at ×${size.at}`] = ms(start, now());
    for (const index of indexes.slice(0, 100)) {
      const t = s.at(OWNER, index);
      for (let k = 0; k < 16; k++) xor[k] ^= t[k];
    }
    check = { last: hex(last), expectedLast: hex(benchTimestamp(size.n - 1)), xorOfFirst100: hex(xor) };
  } else if (workload === 'ranges') {
    const s = impl.storage();
    appendAll(s, size.n);
    const buckets = balancedBuckets(size.n);
    for (let i = 0; i < 10; i++) s.ranges(OWNER, buckets);
    gc();
    let result;
    const start = now();
    for (let i = 0; i < size.ranges; i++) result = s.ranges(OWNER, buckets);
    times[`fingerprintRanges ×${size.ranges}`] = ms(start, now());
    check = { ranges: result.map(([upper, fp]) => [upper === null ? null : hex(upper), hex(fp)]) };
  } else if (workload === 'relay') {
    const r = impl.relay();
    const batches = relayMessages(size, seed);
    // Untimed warm-up on another owner: one batch.
    const warm = new Uint8Array(16).fill(0xee);
    await r.write(warm, batches[0].slice(0, 100));
    gc();
    let start = now();
    for (const batch of batches) await r.write(RELAY_OWNER, batch);
    times.writeMessages = ms(start, now());
    const n = r.size(RELAY_OWNER);
    const buckets = balancedBuckets(n);
    gc();
    let ranges;
    start = now();
    for (let i = 0; i < size.relayRanges; i++) ranges = r.ranges(RELAY_OWNER, buckets);
    times[`fingerprintRanges ×${size.relayRanges}`] = ms(start, now());
    gc();
    let seen = 0;
    const xor = Buffer.alloc(16);
    start = now();
    for (let k = 0; k < size.iterations; k++) {
      r.iterate(RELAY_OWNER, 0, n, (t) => {
        seen++;
        xor[seen & 15] ^= t[15];
        return true;
      });
    }
    times[`iterate ×${size.iterations}`] = ms(start, now());
    const all = [];
    r.iterate(RELAY_OWNER, 0, n, (t) => {
      all.push(t);
      return true;
    });
    const random = seeded(seed + 1);
    const picks = Array.from({ length: size.reads }, () => all[Math.floor(random() * all.length)]);
    gc();
    let bytes = 0;
    start = now();
    for (const t of picks) bytes += r.readChange(RELAY_OWNER, t).length;
    times[`readDbChange ×${size.reads}`] = ms(start, now());
    times.total = Object.values(times).reduce((a, b) => a + b, 0);
    check = {
      size: n,
      storedBytes: r.storedBytes(RELAY_OWNER),
      fingerprint: hex(r.fingerprint(RELAY_OWNER, 0, n)),
      ranges: ranges.map(([upper, fp]) => [upper === null ? null : hex(upper), hex(fp)]),
      iterated: seen,
      iterateXor: hex(xor),
      readBytes: bytes,
    };
  } else {
    throw new Error(`unknown workload ${workload}`);
  }
  return { stack, workload, times, check, version: impl.version, node: process.version };
}

// ---------------------------------------------------------------------------------------
// Orchestration

function parseOptions(argv) {
  const { values } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean', default: false },
      rounds: { type: 'string' },
      warmup: { type: 'string' },
      only: { type: 'string' },
      seed: { type: 'string' },
      out: { type: 'string' },
      cipherlite: { type: 'string' },
      child: { type: 'string' },
      workload: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  const int = (value, fallback, name) => {
    if (value === undefined) return fallback;
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a non-negative integer`);
    return n;
  };
  const only = values.only ? values.only.split(',').map((w) => w.trim()) : WORKLOADS;
  for (const w of only) if (!WORKLOADS.includes(w)) throw new Error(`unknown workload ${w}`);
  return {
    help: values.help,
    quick: values.quick,
    rounds: int(values.rounds, values.quick ? 2 : 5, 'rounds'),
    warmup: int(values.warmup, values.quick ? 0 : 1, 'warmup'),
    only,
    seed: int(values.seed, 20261129, 'seed'),
    out: values.out ? path.resolve(values.out) : path.join(__dirname, 'results', values.quick ? 'tmp' : ''),
    cipherlite: values.cipherlite ? path.resolve(values.cipherlite) : ROOT,
    child: values.child,
    workload: values.workload,
  };
}

function runChild(options, stack, workload) {
  const args = [
    '--expose-gc',
    __filename,
    '--child',
    stack,
    '--workload',
    workload,
    '--seed',
    String(options.seed),
    '--cipherlite',
    options.cipherlite,
  ];
  if (options.quick) args.push('--quick');
  const result = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  if (result.status !== 0) {
    return {
      error: `exit ${result.status}${result.signal ? ` (${result.signal})` : ''}: ${(result.stderr || '').trim().split('\n').slice(-5).join(' | ')}`,
    };
  }
  const line = result.stdout.trim().split('\n').pop();
  return JSON.parse(line);
}

const fmtMs = (v) => (Number.isFinite(v) ? (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2)) : '—');
const fmtX = (v) => (Number.isFinite(v) ? `${v >= 10 ? v.toFixed(1) : v.toFixed(2)}×` : '—');

function main() {
  let options;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (error) {
    console.error(`${error.message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (options.help) {
    console.log(USAGE);
    return;
  }
  const size = options.quick ? QUICK : FULL;
  if (options.child) {
    runWorkload(options.child, options.workload, size, options.seed, options.cipherlite)
      .then((result) => process.stdout.write(`${JSON.stringify(result)}\n`))
      .catch((error) => {
        console.error(error && error.stack ? error.stack : error);
        process.exit(1);
      });
    return;
  }

  const started = new Date();
  const loadBefore = loadAverage();
  const totalRounds = options.warmup + options.rounds;
  // results[workload][stack] = per measured round: { times, check } or { error }
  const results = {};
  for (const workload of options.only) results[workload] = { before: [], after: [] };
  const versions = {};
  for (let round = 0; round < totalRounds; round++) {
    const measured = round >= options.warmup;
    const label = measured
      ? `round ${round - options.warmup + 1}/${options.rounds}`
      : `warm-up ${round + 1}/${options.warmup}`;
    for (const workload of options.only) {
      const order = (round + options.only.indexOf(workload)) % 2 === 0 ? ['before', 'after'] : ['after', 'before'];
      for (const stack of order) {
        process.stderr.write(`${label}: ${workload} ${stack} … `);
        const result = runChild(options, stack, workload);
        process.stderr.write(
          result.error
            ? `FAILED ${result.error}\n`
            : `${Object.entries(result.times)
                .map(([k, v]) => `${k} ${fmtMs(v)} ms`)
                .join(', ')}\n`,
        );
        if (result.version) versions[stack] = result.version;
        if (measured) results[workload][stack].push(result);
      }
    }
  }

  // Checks: every round's level-independent results equal across stacks and rounds, and
  // (full size) §8 V2's values.
  const failures = [];
  for (const workload of options.only) {
    const all = [...results[workload].before, ...results[workload].after];
    const errors = all.filter((r) => r.error);
    for (const r of errors) failures.push(`${workload}: a run failed: ${r.error}`);
    const checks = all.filter((r) => !r.error).map((r) => JSON.stringify(r.check));
    if (new Set(checks).size > 1) failures.push(`${workload}: the stacks' level-independent results differ`);
    const first = all.find((r) => !r.error);
    if (first && !options.quick && ['append', 'prepend', 'insert'].includes(workload)) {
      const c = first.check;
      if (
        c.size !== V2.size ||
        c.fingerprint !== V2.fingerprint ||
        JSON.stringify(c.ranges.map((r) => r[1])) !== JSON.stringify(V2.ranges)
      ) {
        failures.push(`${workload}: results differ from §8 V2`);
      }
    }
    if (first && workload === 'at' && first.check.last !== first.check.expectedLast)
      failures.push('at: the last lookup is not the last timestamp');
  }

  // Table rows: one per timed value.
  const rows = [];
  for (const workload of options.only) {
    const before = results[workload].before.filter((r) => !r.error);
    const after = results[workload].after.filter((r) => !r.error);
    const names = Object.keys((before[0] || after[0] || { times: {} }).times);
    for (const name of names) {
      const b = before.map((r) => r.times[name]);
      const a = after.map((r) => r.times[name]);
      const perRound = results[workload].before.map((r, i) => [
        r.times?.[name],
        results[workload].after[i]?.times?.[name],
      ]);
      const speedups = pairedRatios(
        perRound.map(([x]) => x),
        perRound.map(([, y]) => y),
      );
      let target = '';
      let met = '';
      const s = summarize(speedups);
      if (workload === 'relay' && name === 'total') {
        const ratio = summarize(
          pairedRatios(
            perRound.map(([, y]) => y),
            perRound.map(([x]) => x),
          ),
        );
        target = `after ≤ ${RELAY_TARGET}× before`;
        met = ratio ? `${ratio.median.toFixed(2)}× ${ratio.median <= RELAY_TARGET ? 'met' : 'NOT met'}` : '';
      } else if (workload in TARGETS) {
        target = `${TARGETS[workload]}×`;
        met = s ? (s.median >= TARGETS[workload] ? 'met' : 'NOT met') : '';
      }
      rows.push({
        workload,
        name,
        before: median(b),
        after: median(a),
        speedup: s,
        target,
        met,
      });
    }
  }

  const header = [
    'Workload',
    'Measure',
    'Before ms',
    'After ms',
    'Speed-up (before ÷ after), median (min–max)',
    'Target',
    '',
  ];
  const lines = rows.map((r) => [
    r.workload,
    r.name,
    fmtMs(r.before),
    fmtMs(r.after),
    r.speedup ? `${fmtX(r.speedup.median)} (${fmtX(r.speedup.min)}–${fmtX(r.speedup.max)})` : '—',
    r.target,
    r.met,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => String(l[i]).length)));
  const text = [header, widths.map((w) => '-'.repeat(w)), ...lines]
    .map((l) => l.map((c, i) => String(c).padEnd(widths[i])).join('  '))
    .join('\n');
  console.log(`\nEvolu storage: before = ${STACKS.before}\n               after  = ${STACKS.after}\n`);
  console.log(text);
  console.log(`\n${options.rounds} measured round(s) after ${options.warmup} warm-up; sizes: ${JSON.stringify(size)}`);
  if (failures.length) console.log(`\nCHECKS FAILED:\n  ${failures.join('\n  ')}`);
  else
    console.log(
      '\nChecks: both stacks returned the same level-independent results in every round' +
        (options.quick ? '.' : ', equal to §8 V2.'),
    );

  // The report.
  const machine = machineInfo(os.tmpdir());
  const date = started.toISOString().slice(0, 10);
  const md = [
    `# Evolu storage benchmark, ${date}${options.quick ? ' (quick)' : ''}`,
    '',
    'Printed by `' +
      ['node benchmark/storage.js', ...process.argv.slice(2)].join(' ') +
      '`' +
      (options.quick ? '' : ' (`npm run bench:storage` builds the release addon first)') +
      '.',
    '',
    `- **Before**: ${STACKS.before} — ${versions.before || '?'}; Evolu's own \`createSqlite\` over @evolu/nodejs's better-sqlite3 driver (benchmark/lib/evolu.js), in memory.`,
    `- **After**: ${STACKS.after} — ${versions.after || '?'}, in memory.`,
    `- Node ${process.version}; ${machine.cpu.model}, ${machine.cpu.logicalCores} logical cores, ${machine.memoryGiB} GiB; ${machine.os}; ${machine.kernel}.`,
    `- Load average at start ${loadBefore.join(', ')}, at end ${loadAverage().join(', ')}.`,
    `- ${options.rounds} measured round(s) after ${options.warmup} warm-up; a fresh process per stack, workload and round; stacks alternate order. Medians; speed-up is paired per round.`,
    `- Sizes: ${Object.entries(size)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}.`,
    '',
    '| ' + header.join(' | ') + ' |',
    '| ' + header.map(() => '---').join(' | ') + ' |',
    ...lines.map((l) => '| ' + l.join(' | ') + ' |'),
    '',
    failures.length
      ? `**Checks failed:** ${failures.join('; ')}`
      : `Checks: both stacks returned the same level-independent results (sizes, fingerprints, upper bounds, timestamps, changes, stored bytes) in every round${options.quick ? '' : ', and the insert workloads equal §8 V2'}.`,
    '',
    "Targets are the speed-ups Evolu reported for its native version (relay: after's total at most 0.63× before's).",
    '',
  ].join('\n');
  fs.mkdirSync(options.out, { recursive: true });
  const file = path.join(options.out, `${date}-storage.md`);
  fs.writeFileSync(file, md);
  console.log(`\nReport: ${path.relative(process.cwd(), file)}`);
  process.exitCode = failures.length ? 1 : 0;
}

main();
