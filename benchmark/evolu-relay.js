#!/usr/bin/env node
'use strict';
// Evolu's relay logic on four storages: the same traffic through Evolu's own
// applyProtocolMessageAsRelay (@evolu/common) over Evolu's TypeScript storage on
// better-sqlite3 (`evolu`), and over cipherlite/evolu's createEvoluStorage on a plain
// (`plain`) cipherlite file and encrypted ones: SQLCipher 4's page format (`keyed`, the
// default) and AEGIS-256 (`aegis`, `cipher: 'aegis'`).
//
//   node benchmark/evolu-relay.js                   # 20,000 messages, 3 rounds
//   node benchmark/evolu-relay.js --quick           # smoke run: 2,000 messages, 1 round
//   node benchmark/evolu-relay.js --messages 5000 --rounds 2
//
// Workloads, timed on the relay's side only (the devices are Evolu's client logic over
// Evolu's storage, the same for every stack, and their time is not counted):
//   push        N messages for 4 owners in protocol messages of 100 (changes 100–1,000
//               bytes, each owner's timestamps ascending with some scattered below)
//   write       the same N messages straight into storage.writeMessages, batches of 100
//   download    an empty device syncs one owner's N/4 messages, round by round
//   reconcile   a device and the relay each hold N/4 messages of which 1% the other
//               lacks; sync rounds until both converge
// Every stack uses files in a temporary directory, WAL and synchronous=NORMAL (the
// recommended relay settings, README "Relay: several processes on one database"), and a
// seeded Evolu `random` for the skiplist levels. The relays' answers are compared: a stack
// whose answers differ from Evolu's storage fails the run (exit 1).
//
// Reported: messages per second (median over rounds) per stack, and the ratio of each
// cipherlite stack to Evolu's storage; targets ≥ 2× on push and reconcile, ≥ 1.2× on
// download. The machine this runs on is often shared: ratios from one run are indicative.

const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');
const { performance } = require('node:perf_hooks');
const { integerOption } = require('./lib/options');
const { median } = require('./lib/stats');
const { loadAverage } = require('./lib/machine');
const { seeded } = require('./lib/random');
const { loadEvolu } = require('./lib/evolu');
const { markdownTable } = require('./lib/table');

const ROOT = path.join(__dirname, '..');
const STACKS = ['evolu', 'plain', 'keyed', 'aegis'];
const WORKLOADS = ['push', 'write', 'download', 'reconcile'];
const TARGETS = { push: 2, reconcile: 2, download: 1.2 };
const OWNERS = 4;
const BATCH = 100;
const KEY = Buffer.alloc(32, 0x42);
/** The Database options of each cipherlite stack. */
const CIPHERLITE_OPTIONS = { plain: {}, keyed: { key: KEY }, aegis: { key: KEY, cipher: 'aegis' } };

const USAGE = `usage: node benchmark/evolu-relay.js [options]

  --quick           smoke run: 2,000 messages, 1 round
  --messages N      messages per round (default 20000; --quick 2000)
  --rounds N        rounds (default 3; --quick 1)
  --cipherlite P    load cipherlite from P instead of the repository root
  --help`;

/** A cipherlite or better-sqlite3 file with the relay settings, and Evolu's createSqlite-free storage over it. */
async function openStack(stack, file, evolu, cipherlite) {
  const { common, localFirst } = evolu;
  const random = common.testCreateRandom('relay');
  const config = { isOwnerWithinQuota: () => true };
  let storage;
  let db;
  if (stack === 'evolu') {
    const BetterSqlite3 = require('better-sqlite3');
    db = new BetterSqlite3(file);
    const sqlite = evoluSqlite(common, db);
    const deps = { sqlite, random, timingSafeEqual: crypto.timingSafeEqual };
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    localFirst.createBaseSqliteStorageTables(deps);
    localFirst.createRelayStorageTables(deps);
    storage = localFirst.createRelaySqliteStorage(deps)(config);
  } else {
    const Database = require(cipherlite);
    const { createEvoluStorage } = require(path.join(cipherlite, 'evolu.js'));
    db = new Database(file, CIPHERLITE_OPTIONS[stack]);
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    storage = createEvoluStorage({ db, random })(config);
  }
  return { storage, db, run: common.createRun({ storage }) };
}

/**
 * Evolu's Sqlite (exec + transaction) over an open better-sqlite3 connection, as
 * createSqlite builds it over @evolu/nodejs's driver (without its debug logging).
 */
function evoluSqlite(common, db) {
  const cache = new Map();
  const exec = (query) => {
    let stmt = cache.get(query.sql);
    if (stmt === undefined) cache.set(query.sql, (stmt = db.prepare(query.sql)));
    if (stmt.reader) return { rows: stmt.all(query.parameters), changes: 0 };
    return { rows: [], changes: stmt.run(query.parameters).changes };
  };
  return {
    exec,
    transaction(callback) {
      exec(common.sql`begin;`);
      let committed = false;
      try {
        const result = callback();
        if (result != null && !result.ok) return result;
        exec(common.sql`commit;`);
        committed = true;
        return result;
      } finally {
        if (!committed) exec(common.sql`rollback;`);
      }
    },
    export: () => new Uint8Array(db.serialize()),
  };
}

/** A device: Evolu's client protocol over Evolu's storage in memory (untimed). */
function openDevice(evolu, owner) {
  const { common, localFirst } = evolu;
  const BetterSqlite3 = require('better-sqlite3');
  const sqlite = evoluSqlite(common, new BetterSqlite3(':memory:'));
  const deps = { sqlite, random: common.testCreateRandom('device'), timingSafeEqual: crypto.timingSafeEqual };
  localFirst.createBaseSqliteStorageTables(deps);
  localFirst.createRelayStorageTables(deps);
  const storage = localFirst.createRelaySqliteStorage(deps)({ isOwnerWithinQuota: () => true });
  const run = common.createRun({ storage });
  return {
    storage,
    async store(messages) {
      for (let i = 0; i < messages.length; i += 1000) {
        const result = await run(storage.writeMessages(owner.bytes, messages.slice(i, i + 1000)));
        if (!result.ok) throw new Error('device write failed');
      }
    },
    syncRequest: () => localFirst.createProtocolMessageForSync({ storage })(owner.id),
    apply: (message) => run(localFirst.applyProtocolMessageAsClient(message, { writeKey: owner.writeKey })),
  };
}

/** The round's data: owners and their messages (the same for every stack). */
function makeData(evolu, messages, seed) {
  const random = seeded(seed);
  const owners = Array.from({ length: OWNERS }, (_, i) => {
    const bytes = new Uint8Array(16).map(() => Math.floor(random() * 256));
    const writeKey = new Uint8Array(16).map(() => Math.floor(random() * 256));
    return { bytes, id: evolu.localFirst.ownerIdBytesToOwnerId(bytes), writeKey, index: i };
  });
  const perOwner = Math.floor(messages / OWNERS);
  const make = (owner, count, node, start) =>
    Array.from({ length: count }, (_, i) => {
      // Mostly ascending, every tenth scattered below: appends with inserts.
      const millis = i % 10 === 9 ? start + Math.floor(random() * i * 10) : start + i * 10;
      const change = crypto.randomBytes(100 + Math.floor(random() * 901));
      return { timestamp: { millis, counter: i % 7, nodeId: node }, change };
    });
  const T = 1_767_225_600_000;
  const pushes = owners.map((o) => make(o, perOwner, `00000000000000${(o.index + 16).toString(16)}`, T));
  const writes = owners.map((o) => make(o, perOwner, `00000000000001${(o.index + 16).toString(16)}`, T + 1));
  // Reconcile: a shared set, plus 1% only the relay has and 1% only the device has.
  const shared = make(owners[0], perOwner, 'aaaaaaaaaaaaaaaa', T + 3);
  const relayOnly = make(owners[0], Math.max(1, Math.floor(perOwner / 100)), 'bbbbbbbbbbbbbbbb', T + 5);
  const deviceOnly = make(owners[0], Math.max(1, Math.floor(perOwner / 100)), 'cccccccccccccccc', T + 7);
  return { owners, perOwner, pushes, writes, shared, relayOnly, deviceOnly };
}

/** One round on one stack: messages per second per workload, and every answer's digest. */
async function round(evolu, stack, data, dir, cipherlite) {
  const { localFirst } = evolu;
  const file = path.join(dir, `${stack}-${process.hrtime.bigint()}.db`);
  const relay = await openStack(stack, file, evolu, cipherlite);
  const answers = crypto.createHash('sha256');
  let relayTime = 0;
  const answer = async (message) => {
    const start = performance.now();
    const result = await relay.run(localFirst.applyProtocolMessageAsRelay(message));
    relayTime += performance.now() - start;
    if (!result.ok) throw new Error(`${stack}: the relay failed: ${result.error.type}`);
    answers.update(result.value.message);
    return result.value.message;
  };
  const sync = async (device) => {
    let request = device.syncRequest();
    for (let i = 0; i < 1000; i++) {
      const result = await device.apply(await answer(request));
      if (!result.ok) throw new Error(`${stack}: the device refused an answer: ${result.error.type}`);
      if (result.value.type !== 'Response') return;
      request = result.value.message;
    }
    throw new Error(`${stack}: no convergence`);
  };
  const perSecond = (count, ms) => (count * 1000) / ms;
  const out = {};

  // push
  relayTime = 0;
  for (let i = 0; i < data.perOwner; i += BATCH) {
    for (const owner of data.owners) {
      const buffer = localFirst.createProtocolMessageBuffer(owner.id, {
        messageType: localFirst.MessageType.Request,
        writeKey: owner.writeKey,
      });
      // In timestamp order, as Evolu's clients send them (the encoding stores millis deltas).
      const batch = data.pushes[owner.index].slice(i, i + BATCH);
      for (const m of batch.sort((a, b) => a.timestamp.millis - b.timestamp.millis)) buffer.addMessage(m);
      await answer(buffer.unwrap());
    }
  }
  out.push = perSecond(data.perOwner * OWNERS, relayTime);

  // write (straight into the storage)
  const start = performance.now();
  for (let i = 0; i < data.perOwner; i += BATCH) {
    for (const owner of data.owners) {
      const result = await relay.run(
        relay.storage.writeMessages(owner.bytes, data.writes[owner.index].slice(i, i + BATCH)),
      );
      if (!result.ok) throw new Error(`${stack}: writeMessages failed`);
    }
  }
  out.write = perSecond(data.perOwner * OWNERS, performance.now() - start);

  // download: owner 1's pushed messages into an empty device
  const downloader = openDevice(evolu, data.owners[1]);
  relayTime = 0;
  await sync(downloader);
  if (downloader.storage.getSize(data.owners[1].bytes) !== relay.storage.getSize(data.owners[1].bytes))
    throw new Error(`${stack}: the download is incomplete`);
  out.download = perSecond(relay.storage.getSize(data.owners[1].bytes), relayTime);

  // reconcile: owner 0 (its pushes are deleted first, so the sets are the shared ones)
  const owner = data.owners[0];
  relay.storage.deleteOwner(owner.bytes);
  for (const part of [data.shared, data.relayOnly]) {
    for (let i = 0; i < part.length; i += 1000) {
      const result = await relay.run(relay.storage.writeMessages(owner.bytes, part.slice(i, i + 1000)));
      if (!result.ok) throw new Error(`${stack}: writeMessages failed`);
    }
  }
  const device = openDevice(evolu, owner);
  await device.store([...data.shared, ...data.deviceOnly]);
  relayTime = 0;
  await sync(device);
  const size = relay.storage.getSize(owner.bytes);
  const distinct = new Set(
    [...data.shared, ...data.relayOnly, ...data.deviceOnly].map(
      ({ timestamp: t }) => `${t.millis}:${t.counter}:${t.nodeId}`,
    ),
  ).size;
  if (size !== distinct || device.storage.getSize(owner.bytes) !== size)
    throw new Error(
      `${stack}: reconciliation did not converge (${size}, ${device.storage.getSize(owner.bytes)}, ${distinct})`,
    );
  out.reconcile = perSecond(size, relayTime);

  relay.db.close();
  for (const suffix of ['', '-wal', '-shm']) fs.rmSync(`${file}${suffix}`, { force: true });
  return { perSecond: out, digest: answers.digest('hex') };
}

/** The installed @evolu/common's version (its "exports" hide package.json from require). */
function evoluVersion() {
  const file = path.join(ROOT, 'node_modules', '@evolu', 'common', 'package.json');
  return JSON.parse(fs.readFileSync(file, 'utf8')).version;
}

async function main() {
  let options;
  try {
    const { values } = parseArgs({
      args: process.argv.slice(2),
      options: {
        quick: { type: 'boolean', default: false },
        messages: { type: 'string' },
        rounds: { type: 'string' },
        cipherlite: { type: 'string' },
        help: { type: 'boolean', default: false },
      },
    });
    options = {
      help: values.help,
      messages: integerOption('messages', values.messages, values.quick ? 2000 : 20000, 400),
      rounds: integerOption('rounds', values.rounds, values.quick ? 1 : 3, 1),
      cipherlite: values.cipherlite ? path.resolve(values.cipherlite) : ROOT,
    };
  } catch (error) {
    console.error(`${error.message}\n\n${USAGE}`);
    process.exit(2);
  }
  if (options.help) {
    console.log(USAGE);
    return;
  }
  const evolu = await loadEvolu();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cipherlite-evolu-relay-'));
  const load = loadAverage();
  const results = Object.fromEntries(STACKS.map((s) => [s, []]));
  const failures = [];
  try {
    // A discarded warm-up of every stack on a small data set: the first stack measured
    // would otherwise pay for compiling Evolu's protocol code.
    const warmup = makeData(evolu, 800, 1);
    for (const stack of STACKS) await round(evolu, stack, warmup, dir, options.cipherlite);
    for (let r = 0; r < options.rounds; r++) {
      const data = makeData(evolu, options.messages, 4242 + r);
      const order = r % 2 === 0 ? STACKS : [...STACKS].reverse();
      const digests = {};
      for (const stack of order) {
        process.stderr.write(`round ${r + 1}/${options.rounds}: ${stack} … `);
        const result = await round(evolu, stack, data, dir, options.cipherlite);
        digests[stack] = result.digest;
        results[stack].push(result.perSecond);
        process.stderr.write(
          `${WORKLOADS.map((w) => `${w} ${Math.round(result.perSecond[w]).toLocaleString('en-US')}/s`).join(', ')}\n`,
        );
      }
      for (const stack of Object.keys(CIPHERLITE_OPTIONS)) {
        if (digests[stack] !== digests.evolu)
          failures.push(`round ${r + 1}: ${stack}'s answers differ from Evolu's storage`);
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }

  const med = (stack, w) => median(results[stack].map((x) => x[w]));
  const fmt = (v) => Math.round(v).toLocaleString('en-US');
  const rows = WORKLOADS.map((w) => {
    const e = med('evolu', w);
    const ours = Object.keys(CIPHERLITE_OPTIONS).map((stack) => med(stack, w));
    return [
      w,
      fmt(e),
      ...ours.map(fmt),
      ...ours.map((v) => `${(v / e).toFixed(2)}×`),
      TARGETS[w] ? `≥ ${TARGETS[w]}×` : '—',
    ];
  });
  const lines = [
    `Evolu relay (applyProtocolMessageAsRelay, @evolu/common ${evoluVersion()}) — ${options.messages.toLocaleString('en-US')} messages, ${options.rounds} round(s), Node ${process.version}, load ${load}`,
    '',
    markdownTable(
      [
        'workload',
        'Evolu storage (better-sqlite3) msg/s',
        'createEvoluStorage plain msg/s',
        'keyed (SQLCipher) msg/s',
        'keyed (AEGIS) msg/s',
        'plain ÷ Evolu',
        'SQLCipher ÷ Evolu',
        'AEGIS ÷ Evolu',
        'target',
      ],
      rows,
    ),
  ];
  lines.push(
    '',
    failures.length ? `FAILED: ${failures.join('; ')}` : "Answers: byte-identical to Evolu's storage in every round.",
  );
  console.log(lines.join('\n'));
  process.exitCode = failures.length ? 1 : 0;
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
