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
// Method: every (round, workload, stack) runs in a fresh child process (storage-child.js),
// started with --expose-gc; stacks alternate order each round; one discarded
// warm-up round. Reported: medians over the measured rounds and the per-round paired
// speed-up (before ÷ after), median (min–max). Levels are random on both sides (Evolu's
// Math.random, cipherlite's OS RNG), so the skiplists differ between runs: results are
// checked with level-independent values (sizes, fingerprints, upper bounds, timestamps,
// changes), which must be equal for both stacks in every round (and, at full size, equal
// §8 V2's published values). Exit code 0: all checks passed; 1: a check failed; 2: bad
// arguments.
//
// This process only orchestrates. The pieces: lib/storage/data.js (timestamps, buckets,
// messages, §8 V2), lib/storage/stacks.js (before and after), lib/storage/workloads.js (run
// in the child), lib/storage/report.js (checks, table, report).

const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { loadAverage } = require('./lib/machine');
const { nameList, integerOption } = require('./lib/options');
const { ROOT } = require('./lib/storage/stacks');
const { WORKLOADS, FULL, QUICK } = require('./lib/storage/workloads');
const { checkResults, tableRows, render, fmtMs } = require('./lib/storage/report');

const CHILD = path.join(__dirname, 'storage-child.js');

const USAGE = `usage: node benchmark/storage.js [options]

  --quick           smoke run: 5,000 timestamps/messages, 0 warm-up + 2 rounds, report in results/tmp/
  --rounds N        measured rounds (default 5; --quick: 2)
  --warmup N        discarded warm-up rounds (default 1; --quick: 0)
  --only w[,w]      workloads: ${WORKLOADS.join(', ')} (default: all)
  --seed N          seed of the shuffles and the relay data (default 20261129)
  --out DIR         report directory (default benchmark/results; --quick: benchmark/results/tmp)
  --cipherlite P    load cipherlite from P instead of the repository root
  --help`;

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
      help: { type: 'boolean', default: false },
    },
  });
  const only = values.only ? nameList(values.only, WORKLOADS, 'workload') : WORKLOADS;
  return {
    help: values.help,
    quick: values.quick,
    rounds: integerOption('rounds', values.rounds, values.quick ? 2 : 5, 0),
    warmup: integerOption('warmup', values.warmup, values.quick ? 0 : 1, 0),
    only,
    seed: integerOption('seed', values.seed, 20261129, 0),
    out: values.out ? path.resolve(values.out) : path.join(__dirname, 'results', values.quick ? 'tmp' : ''),
    cipherlite: values.cipherlite ? path.resolve(values.cipherlite) : ROOT,
  };
}

/** One measurement in a fresh process: its result, or { error }. */
function runChild(options, stack, workload) {
  const job = { stack, workload, seed: options.seed, quick: options.quick, cipherlite: options.cipherlite };
  const result = spawnSync(process.execPath, ['--expose-gc', CHILD, JSON.stringify(job)], {
    encoding: 'utf8',
    maxBuffer: 64 * 2 ** 20,
  });
  if (result.status !== 0) {
    return {
      error: `exit ${result.status}${result.signal ? ` (${result.signal})` : ''}: ${(result.stderr || '').trim().split('\n').slice(-5).join(' | ')}`,
    };
  }
  const line = result.stdout.trim().split('\n').pop();
  return JSON.parse(line);
}

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

  const failures = checkResults(results, options);
  const rows = tableRows(results, options);
  const { text, md, date } = render({
    rows,
    failures,
    options,
    size,
    versions,
    started,
    loadBefore,
    argv: process.argv.slice(2),
  });
  console.log(text);
  fs.mkdirSync(options.out, { recursive: true });
  const file = path.join(options.out, `${date}-storage.md`);
  fs.writeFileSync(file, md);
  console.log(`\nReport: ${path.relative(process.cwd(), file)}`);
  process.exitCode = failures.length ? 1 : 0;
}

main();
