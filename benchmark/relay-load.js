#!/usr/bin/env node
'use strict';
// cipherlite/relay under load: N relay processes on one database file, each writing
// batches of messages for M owners and answering a sync round (a 16-bucket
// fingerprintRanges) after each batch — how one file scales with processes, and when to
// shard owners across files.
//
//   npm run bench:relay                     # release build, then processes 1, 2, 4, 3 rounds
//   node benchmark/relay-load.js --quick    # smoke run (tiny sizes), report in results/tmp/
//   node benchmark/relay-load.js --procs 1,2,4,8 --owners 32 --stacks plain
//
// Every process opens the file itself (WAL, synchronous=NORMAL, busy timeout 30 s) and
// writes `batches` batches of `batchSize` messages (changes of 100–1,000 random bytes,
// Evolu Timestamp objects, each process its own node id), owner i mod M for batch i,
// started by its index so the processes spread over the owners. After each batch it
// takes the owner's size and the fingerprints of computeBalancedBuckets(size). The
// processes start together (each waits for 'go').
//
// Reported per (stack, process count): throughput (messages written per second of wall
// time, from 'go' to the last process done), write latency p50/p99 (one writeMessages)
// and sync latency p99 (getSize + fingerprintRanges), medians over the rounds; failed
// writes; and the check that every owner's evolu_usage equals the bytes evolu_message
// holds. Exit code 0: no failed write and every check held; 1: otherwise; 2: bad arguments.

const { fork } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { performance } = require('node:perf_hooks');
const { median } = require('./lib/stats');
const { machineInfo, loadAverage } = require('./lib/machine');
const { prng, balancedBuckets } = require('./lib/storage/data');
const { markdownTable, textTable } = require('./lib/table');

const ROOT = path.join(__dirname, '..');
const FULL = { procs: [1, 2, 4], owners: 16, batches: 150, batchSize: 50, rounds: 3, stacks: ['plain', 'encrypted'] };
const QUICK = { procs: [1, 2, 4], owners: 4, batches: 10, batchSize: 10, rounds: 1, stacks: ['plain', 'encrypted'] };

const USAGE = `usage: node benchmark/relay-load.js [options]

  --quick           smoke run: ${QUICK.batches} batches of ${QUICK.batchSize} per process, ${QUICK.owners} owners, 1 round, report in results/tmp/
  --procs a,b,...   process counts (default ${FULL.procs.join(',')})
  --owners M        owners (default ${FULL.owners})
  --batches N       batches per process (default ${FULL.batches})
  --batch-size N    messages per batch (default ${FULL.batchSize})
  --rounds N        rounds per configuration (default ${FULL.rounds})
  --stacks s[,s]    plain, encrypted (default both)
  --dir DIR         where the database files go (default the OS temp dir)
  --out DIR         report directory (default benchmark/results; --quick: benchmark/results/tmp)
  --help`;

const ownerBytes = (i) => {
  const owner = Buffer.alloc(16);
  owner.writeUInt32BE(0x5a5a0000 + i, 12);
  return owner;
};

const percentile = (sorted, p) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];

// ---------------------------------------------------------------------------------------
// A relay process

async function child(config) {
  const Database = require(ROOT);
  const { createRelayStorage } = require(path.join(ROOT, 'relay.js'));
  const options = { timeout: 30_000 };
  if (config.key) options.key = Buffer.from(config.key, 'hex');
  const db = new Database(config.file, options);
  db.pragma('synchronous = NORMAL');
  const storage = createRelayStorage(db, { isOwnerWithinQuota: () => true });
  const random = prng(config.worker * 7919 + config.round * 104_729 + 1);
  const nodeId = (0x1000 + config.worker).toString(16).padStart(16, '0');
  // Prepared before the start: the batches, so that the timed loop only stores.
  const batches = [];
  let millis = 1_767_225_600_000;
  for (let b = 0; b < config.batches; b++) {
    const messages = [];
    for (let i = 0; i < config.batchSize; i++) {
      millis += 1 + Math.floor(random() * 50);
      const change = crypto.randomBytes(100 + Math.floor(random() * 901));
      messages.push({ timestamp: { millis, counter: 0, nodeId }, change });
    }
    batches.push({ owner: ownerBytes((b + config.worker) % config.owners), messages });
  }
  await new Promise((resolve) => {
    process.on('message', (m) => {
      if (m === 'go') resolve();
    });
    process.send('ready');
  });
  const writes = new Float64Array(batches.length);
  const syncs = new Float64Array(batches.length);
  let failed = 0;
  let written = 0;
  const firstError = [];
  const start = performance.timeOrigin + performance.now();
  for (let b = 0; b < batches.length; b++) {
    const { owner, messages } = batches[b];
    let t0 = performance.now();
    try {
      const result = storage.writeMessages(owner, messages);
      if (result.ok) written += messages.length;
      else failed++;
    } catch (err) {
      failed++;
      if (firstError.length === 0) firstError.push(`${err.code ?? err.name}: ${err.message}`);
    }
    writes[b] = performance.now() - t0;
    t0 = performance.now();
    const buckets = balancedBuckets(storage.getSize(owner), { orNull: true });
    if (buckets) storage.fingerprintRanges(owner, buckets);
    syncs[b] = performance.now() - t0;
  }
  const end = performance.timeOrigin + performance.now();
  db.close();
  process.send(
    { done: true, start, end, written, failed, firstError: firstError[0], writes: [...writes], syncs: [...syncs] },
    () => process.disconnect(),
  );
}

// ---------------------------------------------------------------------------------------
// The parent

function runProcess(config) {
  const proc = fork(__filename, ['--child', JSON.stringify(config)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const message = (test) =>
    new Promise((resolve, reject) => {
      proc.on('message', (m) => {
        if (test(m)) resolve(m);
      });
      proc.once('exit', (code) => reject(new Error(`relay process ${config.worker} exited (${code})`)));
    });
  return {
    proc,
    ready: message((m) => m === 'ready'),
    done: message((m) => m && m.done),
    exited: new Promise((r) => proc.on('exit', r)),
  };
}

/** One round: `procs` processes on a fresh file; returns the round's figures and checks. */
async function round(options, stack, procs, roundNo) {
  const dir = fs.mkdtempSync(path.join(options.dir, 'cipherlite-relay-load-'));
  try {
    const file = path.join(dir, 'relay.db');
    const key = stack === 'encrypted' ? crypto.randomBytes(32) : undefined;
    const Database = require(ROOT);
    const { createRelayStorage } = require(path.join(ROOT, 'relay.js'));
    const setup = new Database(file, key ? { key } : {});
    setup.pragma('journal_mode = wal');
    createRelayStorage(setup).createTables();
    setup.close();
    const base = {
      file,
      key: key?.toString('hex'),
      owners: options.owners,
      batches: options.batches,
      batchSize: options.batchSize,
      round: roundNo,
    };
    const children = [];
    for (let worker = 0; worker < procs; worker++) children.push(runProcess({ ...base, worker }));
    await Promise.all(children.map((c) => c.ready));
    for (const c of children) c.proc.send('go');
    const results = await Promise.all(children.map((c) => c.done));
    await Promise.all(children.map((c) => c.exited));
    const wall = Math.max(...results.map((r) => r.end)) - Math.min(...results.map((r) => r.start));
    const writes = results.flatMap((r) => r.writes).sort((a, b) => a - b);
    const syncs = results.flatMap((r) => r.syncs).sort((a, b) => a - b);
    // Checks: every message stored, and usage equal to what is stored, per owner.
    const db = new Database(file, key ? { key } : {});
    const problems = [];
    const stored = db.prepare('select count(*) from evolu_message').pluck().get();
    const written = results.reduce((n, r) => n + r.written, 0);
    if (stored !== written) problems.push(`${written} messages written, ${stored} stored`);
    const wrong = db
      .prepare(
        `select count(*) from evolu_usage u where "storedBytes" !=
			(select sum(length("change")) from evolu_message m where m."ownerId" = u."ownerId")`,
      )
      .pluck()
      .get();
    if (wrong > 0) problems.push(`${wrong} owners whose storedBytes is not what evolu_message holds`);
    db.close();
    const failed = results.reduce((n, r) => n + r.failed, 0);
    const firstError = results.find((r) => r.firstError)?.firstError;
    if (failed > 0) problems.push(`${failed} failed writes (${firstError})`);
    return {
      throughput: written / (wall / 1000),
      writeP50: percentile(writes, 0.5),
      writeP99: percentile(writes, 0.99),
      syncP99: percentile(syncs, 0.99),
      failed,
      problems,
    };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function parseOptions() {
  let args;
  try {
    args = parseArgs({
      options: {
        quick: { type: 'boolean' },
        procs: { type: 'string' },
        owners: { type: 'string' },
        batches: { type: 'string' },
        'batch-size': { type: 'string' },
        rounds: { type: 'string' },
        stacks: { type: 'string' },
        dir: { type: 'string' },
        out: { type: 'string' },
        help: { type: 'boolean' },
      },
    }).values;
  } catch (err) {
    console.error(`${err.message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (args.help) {
    console.log(USAGE);
    process.exit(0);
  }
  const defaults = args.quick ? QUICK : FULL;
  const count = (name, value, fallback) => {
    if (value === undefined) return fallback;
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < 1) {
      console.error(`--${name} must be a positive integer\n\n${USAGE}`);
      process.exit(2);
    }
    return n;
  };
  const procs = args.procs === undefined ? defaults.procs : args.procs.split(',').map((p) => count('procs', p));
  const stacks = args.stacks === undefined ? defaults.stacks : args.stacks.split(',');
  if (stacks.some((s) => s !== 'plain' && s !== 'encrypted')) {
    console.error(`--stacks takes plain and/or encrypted\n\n${USAGE}`);
    process.exit(2);
  }
  return {
    quick: Boolean(args.quick),
    procs,
    stacks,
    owners: count('owners', args.owners, defaults.owners),
    batches: count('batches', args.batches, defaults.batches),
    batchSize: count('batch-size', args['batch-size'], defaults.batchSize),
    rounds: count('rounds', args.rounds, defaults.rounds),
    dir: path.resolve(args.dir ?? os.tmpdir()),
    out: path.resolve(args.out ?? path.join(__dirname, 'results', args.quick ? 'tmp' : '')),
  };
}

async function main() {
  const options = parseOptions();
  const started = new Date();
  const loadBefore = loadAverage();
  const header = [
    'stack',
    'processes',
    'messages/s',
    'vs 1 process',
    'write p50 ms',
    'write p99 ms',
    'sync p99 ms',
    'failed writes',
  ];
  const lines = [];
  const problems = [];
  for (const stack of options.stacks) {
    let single;
    for (const procs of options.procs) {
      const rounds = [];
      for (let r = 0; r < options.rounds; r++) {
        const result = await round(options, stack, procs, r);
        rounds.push(result);
        problems.push(...result.problems.map((p) => `${stack}, ${procs} processes, round ${r + 1}: ${p}`));
      }
      const m = (key) => median(rounds.map((x) => x[key]));
      const throughput = m('throughput');
      if (procs === options.procs[0]) single = throughput;
      lines.push([
        stack,
        procs,
        Math.round(throughput).toLocaleString('en-US'),
        procs === options.procs[0] ? '1.00' : (throughput / single).toFixed(2),
        m('writeP50').toFixed(2),
        m('writeP99').toFixed(2),
        m('syncP99').toFixed(2),
        rounds.reduce((n, x) => n + x.failed, 0),
      ]);
      console.error(`  ${stack}, ${procs} process(es): ${Math.round(throughput)} messages/s`);
    }
  }
  const table = textTable(header, lines);
  const sizes = `${options.owners} owners, ${options.batches} batches of ${options.batchSize} messages per process, ${options.rounds} round(s)`;
  console.log(`\ncipherlite/relay under load: N processes on one WAL file (${sizes})\n`);
  console.log(table);
  console.log(
    problems.length
      ? `\nCHECKS FAILED:\n  ${problems.join('\n  ')}`
      : "\nChecks: no failed write; every message stored; every owner's storedBytes equals the bytes evolu_message holds.",
  );

  const machine = machineInfo(options.dir);
  const date = started.toISOString().slice(0, 10);
  const md = [
    `# Relay load benchmark, ${date}${options.quick ? ' (quick)' : ''}`,
    '',
    'Printed by `' +
      ['node benchmark/relay-load.js', ...process.argv.slice(2)].join(' ') +
      '`' +
      (options.quick ? '' : ' (`npm run bench:relay` builds the release addon first)') +
      '.',
    '',
    `- N relay processes on one database file (WAL, synchronous=NORMAL, busy timeout 30 s), ${sizes}; after each batch a sync round (getSize + 16-bucket fingerprintRanges).`,
    `- Node ${process.version}; ${machine.cpu.model}, ${machine.cpu.logicalCores} logical cores, ${machine.memoryGiB} GiB; ${machine.os}; ${machine.kernel}; files on ${machine.dbFilesystem ? `${machine.dbFilesystem.type} (${machine.dbFilesystem.mount})` : machine.dbDir}.`,
    `- Load average at start ${loadBefore.join(', ')}, at end ${loadAverage().join(', ')}.`,
    '- Throughput: messages written per second of wall time (all processes). Latencies: per call, pooled over the processes; medians over the rounds.',
    '',
    markdownTable(header, lines),
    '',
    problems.length
      ? `**Checks failed:** ${problems.join('; ')}`
      : "Checks: no failed write; every message stored; every owner's storedBytes equals the bytes evolu_message holds.",
    '',
  ].join('\n');
  fs.mkdirSync(options.out, { recursive: true });
  const file = path.join(options.out, `${date}-relay-load.md`);
  fs.writeFileSync(file, md);
  console.log(`\nReport: ${path.relative(process.cwd(), file)}`);
  process.exitCode = problems.length ? 1 : 0;
}

if (process.argv[2] === '--child') {
  child(JSON.parse(process.argv[3])).catch((err) => {
    console.error(err);
    process.exit(1);
  });
} else {
  main().catch((err) => {
    console.error(err);
    process.exitCode = 1;
  });
}
