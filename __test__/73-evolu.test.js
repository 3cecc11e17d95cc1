'use strict';
// cipherlite/evolu against Evolu itself (the `@evolu/common` devDependency, unchanged):
// Evolu's relay logic (applyProtocolMessageAsRelay) over three storages fed the same
// seeded traffic — Evolu's TypeScript storage (createRelaySqliteStorage) on better-sqlite3,
// and createEvoluStorage on a plain and on a keyed cipherlite database. Devices are
// Evolu's own client logic (createProtocolMessageForSync, applyProtocolMessageAsClient)
// over Evolu's storage. Every relay answer must be byte-identical, every quota question
// the same, and with the same seeded `random` every row of the four evolu_* tables
// (docs/evolu-storage.md §1.1, §1.2) identical, rowids included. Then Evolu's own
// createSqlite over createEvoluSqliteDriver: plain, keyed, a missing or wrong key at start,
// and a plain relay file migrated with Database.encrypt.
// (Loading @evolu/common on Node 20: benchmark/lib/evolu.js.)
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const Database = require('..');
// better-sqlite3 where its native build loads (the Node it was built for: CI's Node 20);
// on Node 22 and 24 Evolu's storage and the devices run on cipherlite without a key, so
// the reference there is Evolu's TypeScript SQL on cipherlite's SQLite (said once on stderr).
const { betterSqlite3OrPlain } = require('./_helpers-encryption');
const { createEvoluStorage, createEvoluSqliteDriver } = require('../evolu');
const { loadEvolu, openEvoluSqlite } = require('../benchmark/lib/evolu');
const { seeded } = require('./_random');
const { tempDir, removeDir } = require('./_helpers');

const TABLES = ['evolu_timestamp', 'evolu_usage', 'evolu_writeKey', 'evolu_message'];
const KEY = Buffer.alloc(32, 0x5c);
const SQLITE_HEADER = Buffer.from('SQLite format 3\0');
const QUOTA_Q = 5000; // bytes, answered synchronously
const QUOTA_R = 20000; // bytes, answered with a promise

let evolu;
let dir;
let BetterSqlite3;
before(async () => {
  BetterSqlite3 = betterSqlite3OrPlain().Plain;
  evolu = await loadEvolu();
  dir = tempDir('evolu');
});
after(() => removeDir(dir));

/** An owner as Evolu's protocol sees it: the OwnerId string, its bytes, a write key. */
function makeOwner(random, label) {
  const bytes = new Uint8Array(16).map(() => Math.floor(random() * 256));
  const writeKey = new Uint8Array(16).map(() => Math.floor(random() * 256));
  return { label, bytes, id: evolu.localFirst.ownerIdBytesToOwnerId(bytes), writeKey };
}

/**
 * A relay: Evolu's storage on better-sqlite3 ('evolu'), or createEvoluStorage on cipherlite
 * ('plain', 'keyed'), each with its own testCreateRandom('relay') and a quota that records
 * what it is asked.
 */
async function openRelay(kind, owners) {
  const { common, localFirst } = evolu;
  const random = common.testCreateRandom('relay');
  const quotaCalls = [];
  const config = {
    isOwnerWithinQuota: (ownerId, requiredBytes) => {
      quotaCalls.push([ownerId, requiredBytes]);
      if (ownerId === owners.Q.id) return requiredBytes <= QUOTA_Q;
      if (ownerId === owners.R.id)
        return new Promise((resolve) => setImmediate(() => resolve(requiredBytes <= QUOTA_R)));
      return true;
    },
  };
  let storage;
  let db;
  let dispose;
  if (kind === 'evolu') {
    const e = await openEvoluSqlite(BetterSqlite3);
    const deps = { sqlite: e.sqlite, random, timingSafeEqual: crypto.timingSafeEqual };
    localFirst.createBaseSqliteStorageTables(deps);
    localFirst.createRelayStorageTables(deps);
    storage = localFirst.createRelaySqliteStorage(deps)(config);
    db = e.db;
    dispose = () => e.dispose();
  } else {
    db =
      kind === 'keyed'
        ? new Database(path.join(dir, `relay-${process.hrtime.bigint()}.db`), { key: KEY })
        : new Database(':memory:');
    storage = createEvoluStorage({ db, random })(config);
    dispose = () => db.close();
  }
  const run = common.createRun({ storage });
  const broadcasts = [];
  return {
    kind,
    storage,
    db,
    quotaCalls,
    async answer(message, options = {}) {
      const result = await run(
        localFirst.applyProtocolMessageAsRelay(message, {
          ...options,
          broadcast: (ownerId, bytes) => broadcasts.push([ownerId, Buffer.from(bytes).toString('hex')]),
        }),
      );
      assert.ok(result.ok, `${kind}: applyProtocolMessageAsRelay failed: ${result.error?.type} ${result.error?.error}`);
      return result.value;
    },
    broadcasts,
    rows: () =>
      Object.fromEntries(TABLES.map((t) => [t, db.prepare(`select rowid, * from ${t} order by rowid`).all()])),
    dispose,
  };
}

/** A device: Evolu's client protocol over Evolu's storage (opaque encrypted changes). */
async function openDevice(owner, nodeId) {
  const { common, localFirst } = evolu;
  const e = await openEvoluSqlite(BetterSqlite3);
  const deps = { sqlite: e.sqlite, random: common.testCreateRandom(nodeId), timingSafeEqual: crypto.timingSafeEqual };
  localFirst.createBaseSqliteStorageTables(deps);
  localFirst.createRelayStorageTables(deps);
  const storage = localFirst.createRelaySqliteStorage(deps)({ isOwnerWithinQuota: () => true });
  const run = common.createRun({ storage });
  return {
    owner,
    nodeId,
    storage,
    async store(messages) {
      const result = await run(storage.writeMessages(owner.bytes, messages));
      assert.ok(result.ok);
    },
    syncRequest: () => localFirst.createProtocolMessageForSync({ storage })(owner.id),
    apply: (message) => run(localFirst.applyProtocolMessageAsClient(message, { writeKey: owner.writeKey })),
    dispose: () => e.dispose(),
  };
}

/**
 * The seeded traffic, against one relay; returns the log: every answer's bytes and what
 * the device made of it. Devices and data are rebuilt from the same seed for each relay.
 */
async function traffic(kind) {
  const { localFirst } = evolu;
  const random = seeded(7301);
  const owners = {
    A: makeOwner(random, 'A'),
    B: makeOwner(random, 'B'),
    Q: makeOwner(random, 'Q'),
    R: makeOwner(random, 'R'),
  };
  const relay = await openRelay(kind, owners);
  const devices = {};
  for (const [name, owner, node] of [
    ['A1', owners.A, 'a1a1a1a1a1a1a1a1'],
    ['A2', owners.A, 'a2a2a2a2a2a2a2a2'],
    ['B1', owners.B, 'b1b1b1b1b1b1b1b1'],
    ['B2', owners.B, 'b2b2b2b2b2b2b2b2'],
    ['Q1', owners.Q, '0f0f0f0f0f0f0f0f'],
    ['R1', owners.R, '0e0e0e0e0e0e0e0e'],
  ]) {
    devices[name] = await openDevice(owner, node);
  }
  const log = [];
  const record = async (step, device, answer) => {
    const bytes = Buffer.from(answer.message).toString('hex');
    const result = await device.apply(answer.message);
    const seen = result.ok ? result.value.type : result.error.type;
    log.push([step, answer.type, bytes, seen]);
    return result;
  };
  // Messages of a device: millis from `at` (ascending, or scattered below it), random changes.
  const make = (device, count, { at, spread = 0, size = [50, 400] }) => {
    const messages = [];
    for (let i = 0; i < count; i++) {
      const millis = spread ? at - Math.floor(random() * spread) : at + i * 7;
      const length = size[0] + Math.floor(random() * (size[1] - size[0] + 1));
      const change = new Uint8Array(length).map(() => Math.floor(random() * 256));
      messages.push({ timestamp: { millis, counter: Math.floor(random() * 3), nodeId: device.nodeId }, change });
    }
    return messages;
  };
  const push = async (
    step,
    device,
    messages,
    { writeKey = device.owner.writeKey, store = true, relayOptions } = {},
  ) => {
    if (store) await device.store(messages);
    const buffer = localFirst.createProtocolMessageBuffer(device.owner.id, {
      messageType: localFirst.MessageType.Request,
      writeKey,
      totalMaxSize: 4_000_000,
    });
    // Evolu's clients send a batch in timestamp order (the encoding stores millis deltas).
    const sorted = [...messages].sort((a, b) => a.timestamp.millis - b.timestamp.millis);
    for (const message of sorted) buffer.addMessage(message);
    return record(step, device, await relay.answer(buffer.unwrap(), relayOptions));
  };
  const sync = async (step, device) => {
    let request = device.syncRequest();
    for (let round = 0; round < 40; round++) {
      const result = await record(`${step}.${round}`, device, await relay.answer(request));
      if (!result.ok || result.value.type !== 'Response') return round + 1;
      request = result.value.message;
    }
    throw new Error(`${step}: no convergence in 40 rounds`);
  };

  const T = 1_767_225_600_000;
  const { A1, A2, B1, B2, Q1, R1 } = devices;
  // Appends from one device, a second device downloads them.
  const first = make(A1, 40, { at: T });
  await push('A1 push 1', A1, first);
  await push('A1 push 2', A1, make(A1, 40, { at: T + 1000 }));
  await push('A1 push 3', A1, make(A1, 40, { at: T + 2000 }));
  await sync('A2 download', A2);
  // Inserts between stored timestamps and prepends before all of them.
  await push('A2 inserts', A2, make(A2, 30, { at: T + 2000, spread: 2000 }));
  await push('A2 prepends', A2, make(A2, 5, { at: T - 10, spread: 5000 }));
  // Offline edits on both devices, reconciled.
  await A1.store(make(A1, 60, { at: T + 1500, spread: 3000 }));
  await A2.store(make(A2, 40, { at: T + 5000 }));
  await sync('A1 reconcile', A1);
  await sync('A2 reconcile', A2);
  await sync('A1 reconcile again', A1);
  // A push over 1 MB (to a relay that allows 4 MB messages, as a relay may), and its
  // download in messages of at most 1 MB.
  await push('B1 push 1.2 MB', B1, make(B1, 40, { at: T, size: [30_000, 30_000] }), {
    relayOptions: { totalMaxSize: 4_000_000 },
  });
  await sync('B2 download', B2);
  // Duplicates: a batch pushed again, and a batch repeating its own messages.
  await push('A1 duplicates', A1, first, { store: false });
  const fresh = make(A1, 10, { at: T + 9000 });
  await push('A1 batch with repeats', A1, [...fresh, ...fresh.slice(0, 5)]);
  // Quotas: synchronous (Q) and asynchronous (R), batches until refused.
  for (let i = 0; i < 10; i++) await push(`Q1 push ${i}`, Q1, make(Q1, 5, { at: T + i * 100, size: [400, 400] }));
  for (let i = 0; i < 12; i++) await push(`R1 push ${i}`, R1, make(R1, 5, { at: T + i * 100, size: [400, 400] }));
  // A wrong write key is refused.
  await push('B1 wrong write key', B1, make(B1, 3, { at: T + 50_000 }), {
    writeKey: new Uint8Array(16).fill(7),
    store: false,
  });
  // deleteOwner, then both devices upload again.
  relay.storage.deleteOwner(owners.A.bytes);
  await sync('A1 re-upload', A1);
  await sync('A2 after re-upload', A2);
  await sync('A1 converged', A1);

  const sizes = Object.fromEntries(
    Object.entries(devices).map(([name, d]) => [name, d.storage.getSize(d.owner.bytes)]),
  );
  const relaySizes = Object.fromEntries(Object.values(owners).map((o) => [o.label, relay.storage.getSize(o.bytes)]));
  for (const device of Object.values(devices)) await device.dispose();
  return { relay, owners, log, sizes, relaySizes };
}

describe('73 Evolu’s relay logic on createEvoluStorage vs Evolu’s own storage', () => {
  const runs = {};
  before(async () => {
    for (const kind of ['evolu', 'plain', 'keyed']) runs[kind] = await traffic(kind);
  });
  after(async () => {
    for (const r of Object.values(runs)) await r.relay.dispose();
  });

  it('73.1.1 the traffic did what it says on Evolu’s own storage (pushes, downloads, quotas, write key, re-upload)', () => {
    const { log, sizes, relaySizes, relay, owners } = runs.evolu;
    const seen = (prefix) => log.filter(([step]) => step.startsWith(prefix)).map(([, , , s]) => s);
    assert.equal(sizes.A1, sizes.A2, 'both A devices converged');
    assert.equal(relaySizes.A, sizes.A1, 'the relay holds what the A devices hold');
    assert.equal(sizes.A1, 120 + 35 + 60 + 40 + 10);
    assert.equal(sizes.B2, 40, 'the 1.2 MB push was downloaded');
    assert.equal(seen('B2 download').length, 2, 'the 1.2 MB download took two answers of at most 1 MB');
    assert.ok(seen('Q1 push').includes('ProtocolQuotaError'), 'Q was refused');
    assert.ok(seen('R1 push').includes('ProtocolQuotaError'), 'R was refused');
    assert.deepEqual(seen('B1 wrong write key'), ['ProtocolWriteKeyError']);
    const stored = (o) =>
      relay.db.prepare('select storedBytes from evolu_usage where ownerId = ?').pluck().get(o.bytes);
    assert.ok(stored(owners.Q) <= QUOTA_Q && stored(owners.Q) > QUOTA_Q - 2000, `Q stored ${stored(owners.Q)}`);
    assert.ok(stored(owners.R) <= QUOTA_R && stored(owners.R) > QUOTA_R - 2000, `R stored ${stored(owners.R)}`);
    assert.ok(relay.quotaCalls.every(([id]) => typeof id === 'string' && id.length === 22));
  });

  for (const kind of ['plain', 'keyed']) {
    it(`73.1.2 ${kind}: every answer byte-identical to Evolu's storage, and what the devices made of them`, () => {
      const theirs = runs.evolu.log;
      const ours = runs[kind].log;
      assert.equal(ours.length, theirs.length);
      ours.forEach((entry, i) => assert.deepEqual(entry, theirs[i], `answer ${i} (${theirs[i][0]})`));
      assert.deepEqual(runs[kind].relay.broadcasts, runs.evolu.relay.broadcasts);
      assert.deepEqual(runs[kind].sizes, runs.evolu.sizes);
    });

    it(`73.1.3 ${kind}: the quota is asked the same questions, with the OwnerId string`, () => {
      assert.ok(runs.evolu.relay.quotaCalls.length > 20);
      assert.deepEqual(runs[kind].relay.quotaCalls, runs.evolu.relay.quotaCalls);
    });

    it(`73.1.4 ${kind}: with the same seeded random, every row of the four evolu_* tables identical`, () => {
      const theirs = runs.evolu.relay.rows();
      const ours = runs[kind].relay.rows();
      for (const table of TABLES) {
        assert.ok(theirs[table].length > 0, `${table} has rows`);
        assert.equal(ours[table].length, theirs[table].length, table);
        ours[table].forEach((row, i) => assert.deepEqual(row, theirs[table][i], `${table} row ${i}`));
      }
      const levels = new Set(theirs.evolu_timestamp.map((r) => r.l));
      assert.ok(levels.size >= 3, 'several skiplist levels were drawn');
    });
  }

  it('73.1.5 keyed: the relay file is encrypted', () => {
    const file = runs.keyed.relay.db.name;
    const head = Buffer.alloc(16);
    const fd = fs.openSync(file, 'r');
    fs.readSync(fd, head, 0, 16, 0);
    fs.closeSync(fd);
    assert.notDeepEqual(head, SQLITE_HEADER);
  });
});

describe('73.2 createEvoluStorage has Evolu’s shapes', () => {
  it('73.2.1 writeMessages returns a Task: nothing is written before Evolu runs it; then Evolu’s ok()', async () => {
    const { common } = evolu;
    const db = new Database(':memory:');
    const storage = createEvoluStorage({ db, random: common.testCreateRandom('x') })({
      isOwnerWithinQuota: () => true,
    });
    const owner = new Uint8Array(16).fill(1);
    const task = storage.writeMessages(owner, [
      { timestamp: { millis: 5, counter: 0, nodeId: '0000000000000001' }, change: new Uint8Array([1, 2]) },
    ]);
    assert.equal(typeof task, 'function');
    assert.equal(storage.getSize(owner), 0);
    const result = await common.createRun({ storage })(task);
    assert.deepEqual(result, common.ok());
    assert.equal(storage.getSize(owner), 1);
    db.close();
  });

  it('73.2.2 ranges carry RangeType.Fingerprint and Evolu’s InfiniteUpperBound; findLowerBound and iterate take Evolu’s conventions', async () => {
    const { common, localFirst } = evolu;
    const db = new Database(':memory:');
    const storage = createEvoluStorage({ db, random: common.testCreateRandom('y') })({
      isOwnerWithinQuota: () => true,
    });
    const owner = new Uint8Array(16).fill(2);
    const messages = Array.from({ length: 40 }, (_, i) => ({
      timestamp: { millis: 100 + i, counter: 0, nodeId: '0000000000000002' },
      change: new Uint8Array([i]),
    }));
    assert.ok((await common.createRun({ storage })(storage.writeMessages(owner, messages))).ok);
    const ranges = storage.fingerprintRanges(owner, [10, 20, 40], localFirst.InfiniteUpperBound);
    assert.deepEqual(
      ranges.map((r) => r.type),
      [localFirst.RangeType.Fingerprint, localFirst.RangeType.Fingerprint, localFirst.RangeType.Fingerprint],
    );
    assert.equal(ranges[2].upperBound, localFirst.InfiniteUpperBound);
    assert.equal(storage.findLowerBound(owner, 0, 40, localFirst.InfiniteUpperBound), 40);
    assert.throws(() => storage.fingerprintRanges(owner, [40]), /Expected an upperBound/);
    const withDefault = createEvoluStorage({
      db,
      random: common.testCreateRandom('y'),
      InfiniteUpperBound: localFirst.InfiniteUpperBound,
    })({
      isOwnerWithinQuota: () => true,
    });
    assert.equal(withDefault.fingerprintRanges(owner, [40])[0].upperBound, localFirst.InfiniteUpperBound);
    const seen = [];
    storage.iterate(owner, 0, 40, (t, i) => {
      seen.push(i);
      return i < 2 ? true : undefined; // Evolu stops at any falsy answer
    });
    assert.deepEqual(seen, [0, 1, 2]);
    db.close();
  });

  it('73.2.3 a refused batch is Evolu’s StorageQuotaError with the OwnerId string, and writes nothing', async () => {
    const { common, localFirst } = evolu;
    const db = new Database(':memory:');
    const asked = [];
    const storage = createEvoluStorage({ db, random: common.testCreateRandom('z') })({
      isOwnerWithinQuota: async (ownerId, bytes) => {
        asked.push([ownerId, bytes]);
        return bytes <= 3;
      },
    });
    const owner = new Uint8Array(16).fill(3);
    const message = { timestamp: { millis: 1, counter: 0, nodeId: '0000000000000003' }, change: new Uint8Array(4) };
    const result = await common.createRun({ storage })(storage.writeMessages(owner, [message]));
    const ownerId = localFirst.ownerIdBytesToOwnerId(owner);
    assert.deepEqual(result, common.err({ type: 'StorageQuotaError', ownerId }));
    assert.deepEqual(asked, [[ownerId, 4]]);
    assert.equal(storage.getSize(owner), 0);
    assert.equal(db.prepare('select count(*) from evolu_message').pluck().get(), 0);
    db.close();
  });

  it('73.2.4 tables: created in an empty database, kept in a relay database, refused in one with only some', () => {
    const { common } = evolu;
    const random = common.testCreateRandom('t');
    const db = new Database(':memory:');
    createEvoluStorage({ db, random })({ isOwnerWithinQuota: () => true });
    const names = () =>
      db.prepare("select name from sqlite_master where name like 'evolu_%' order by name").pluck().all();
    assert.deepEqual(names(), [
      'evolu_message',
      'evolu_timestamp',
      'evolu_timestamp_index',
      'evolu_usage',
      'evolu_writeKey',
    ]);
    createEvoluStorage({ db, random })({ isOwnerWithinQuota: () => true });
    assert.equal(names().length, 5);
    db.close();
    const client = new Database(':memory:');
    client.exec(require('./_evolu-fixtures').SCHEMA);
    assert.throws(
      () => createEvoluStorage({ db: client, random })({ isOwnerWithinQuota: () => true }),
      /some of Evolu's relay tables but not evolu_usage, evolu_writeKey, evolu_message/,
    );
    client.close();
  });
});

describe('73.3 createEvoluSqliteDriver under Evolu’s createSqlite (as startRelay opens its database)', () => {
  const cwd = process.cwd();
  let work;
  before(() => {
    work = fs.mkdtempSync(path.join(dir, 'driver-'));
    process.chdir(work);
  });
  after(() => process.chdir(cwd));

  /** Evolu's createSqlite over the driver, then what startRelay does on a new file, and one push. */
  async function openRelayDb(driverOptions, name) {
    const { common } = evolu;
    const run = common.createRun({ createSqliteDriver: createEvoluSqliteDriver(driverOptions) });
    const result = await run(common.createSqlite(common.Name.orThrow(name)));
    return { run, sqlite: result.value };
  }

  async function writeThroughEvolu(sqlite, owner) {
    const { common, localFirst } = evolu;
    const deps = { sqlite, random: common.testCreateRandom('d'), timingSafeEqual: crypto.timingSafeEqual };
    const storage = localFirst.createRelaySqliteStorage(deps)({ isOwnerWithinQuota: () => true });
    const messages = Array.from({ length: 50 }, (_, i) => ({
      timestamp: { millis: 1000 + i, counter: 0, nodeId: '00000000000000aa' },
      change: new Uint8Array([i, i]),
    }));
    assert.ok((await common.createRun({ storage })(storage.writeMessages(owner, messages))).ok);
    return storage;
  }

  const head = (file) => fs.readFileSync(file).subarray(0, 16);
  const owner = new Uint8Array(16).fill(9);

  it('73.3.1 with a key: Evolu writes an encrypted relay file that opens again with the key', async () => {
    const { localFirst } = evolu;
    const first = await openRelayDb({ key: KEY }, 'keyed-relay');
    localFirst.createBaseSqliteStorageTables({ sqlite: first.sqlite });
    localFirst.createRelayStorageTables({ sqlite: first.sqlite });
    await writeThroughEvolu(first.sqlite, owner);
    await first.sqlite[Symbol.asyncDispose]();
    assert.notDeepEqual(head('keyed-relay.db'), SQLITE_HEADER);
    const again = await openRelayDb({ key: KEY }, 'keyed-relay');
    const db = new Database('keyed-relay.db', { key: KEY });
    const storage = createEvoluStorage({ db, random: evolu.common.testCreateRandom('e') })({
      isOwnerWithinQuota: () => true,
    });
    assert.equal(storage.getSize(owner), 50);
    db.close();
    await again.sqlite[Symbol.asyncDispose]();
  });

  it('73.3.2 without its key, or with another, the relay fails at start with an error that says so', async () => {
    const { common } = evolu;
    for (const [options, pattern] of [
      [
        {},
        /Cannot open the Evolu database keyed-relay\.db: it is encrypted or not an SQLite database \(give createEvoluSqliteDriver its key\)/,
      ],
      [{ key: Buffer.alloc(32, 1) }, /Cannot open the Evolu database keyed-relay\.db: the key does not open it/],
    ]) {
      const driver = createEvoluSqliteDriver(options)(common.Name.orThrow('keyed-relay'));
      assert.throws(() => driver({}), pattern);
      // Through Evolu's createSqlite, as startRelay opens its database: Evolu's Run
      // panics there with our error as the defect (reported, and the Task rejects).
      const reported = [];
      const run = common.createRun({
        createSqliteDriver: createEvoluSqliteDriver(options),
        reportDefect: (defect) => reported.push(defect),
      });
      await assert.rejects(
        run(common.createSqlite(common.Name.orThrow('keyed-relay'))),
        (error) => error.type === 'AbortError' && pattern.test(error.reason.defect.message),
      );
      assert.equal(reported.length, 1);
      assert.match(reported[0].reason.defect.message, pattern);
    }
    // A plaintext file opened with a key: the same clear refusal.
    const plainFile = new Database('plain-first.db');
    plainFile.exec('create table t (x)');
    plainFile.close();
    assert.throws(
      () => createEvoluSqliteDriver({ key: KEY })(common.Name.orThrow('plain-first'))({}),
      /Cannot open the Evolu database plain-first\.db: the key does not open it \(a wrong key, or a plaintext file: encrypt it with Database\.encrypt first\)/,
    );
    // Other errors are not relabelled.
    assert.throws(
      () => createEvoluSqliteDriver({ key: Buffer.alloc(8) })(common.Name.orThrow('short-key'))({}),
      TypeError,
    );
  });

  it(
    '73.3.3 without a key: a plain relay file better-sqlite3 reads; Database.encrypt migrates it, and the keyed driver serves it',
    { skip: process.platform === 'win32' && 'Windows: Database.encrypt of a WAL database (docs/design.md §4.5, §4.6)' },
    async () => {
      const { localFirst } = evolu;
      const plain = await openRelayDb({}, 'plain-relay');
      localFirst.createBaseSqliteStorageTables({ sqlite: plain.sqlite });
      localFirst.createRelayStorageTables({ sqlite: plain.sqlite });
      await writeThroughEvolu(plain.sqlite, owner);
      await plain.sqlite[Symbol.asyncDispose]();
      assert.deepEqual(head('plain-relay.db'), SQLITE_HEADER);
      const bs3 = new BetterSqlite3('plain-relay.db', { readonly: true });
      const before = bs3.prepare('select rowid, * from evolu_timestamp order by rowid').all();
      bs3.close();
      assert.equal(before.length, 50);

      Database.encrypt(path.join(work, 'plain-relay.db'), KEY);
      assert.notDeepEqual(head('plain-relay.db'), SQLITE_HEADER);
      const driver = createEvoluSqliteDriver({})(evolu.common.Name.orThrow('plain-relay'));
      assert.throws(
        () => driver({}),
        (error) =>
          error.message ===
            'Cannot open the Evolu database plain-relay.db: it is encrypted or not an SQLite database (give createEvoluSqliteDriver its key)' &&
          error.cause.code === 'SQLITE_NOTADB',
      );
      const migrated = await openRelayDb({ key: KEY }, 'plain-relay');
      const rows = migrated.sqlite.exec({
        sql: 'select rowid, * from evolu_timestamp order by rowid',
        parameters: [],
      }).rows;
      assert.deepEqual(rows, before);
      await migrated.sqlite[Symbol.asyncDispose]();
    },
  );

  it('73.3.4 { mode: "memory" } opens :memory: even with a key configured', async () => {
    const { common } = evolu;
    const run = common.createRun({ createSqliteDriver: createEvoluSqliteDriver({ key: KEY }) });
    const result = await run(common.createSqlite(common.Name.orThrow('mem'), { mode: 'memory' }));
    assert.ok(result.ok);
    const rows = result.value.exec({ sql: "select 'x' as v", parameters: [] }).rows;
    assert.deepEqual(rows, [{ v: 'x' }]);
    assert.equal(fs.existsSync('mem.db'), false);
    await result.value[Symbol.asyncDispose]();
  });

  it('73.3.5 { key, cipher: "aegis" }: the relay file is in the AEGIS format, which cipherlite/relay reads; memory mode drops "cipher" with the key', async () => {
    const { localFirst, common } = evolu;
    const options = { key: KEY, cipher: 'aegis' };
    const first = await openRelayDb(options, 'aegis-relay');
    localFirst.createBaseSqliteStorageTables({ sqlite: first.sqlite });
    localFirst.createRelayStorageTables({ sqlite: first.sqlite });
    await writeThroughEvolu(first.sqlite, owner);
    await first.sqlite[Symbol.asyncDispose]();
    const bytes = fs.readFileSync('aegis-relay.db');
    assert.notDeepEqual(bytes.subarray(0, 16), SQLITE_HEADER);
    assert.equal(bytes[20], 64, "AEGIS-256's reserve (docs/aegis-format.md §2), not SQLCipher's 80");
    const db = new Database('aegis-relay.db', options);
    const storage = createEvoluStorage({ db, random: common.testCreateRandom('e') })({
      isOwnerWithinQuota: () => true,
    });
    assert.equal(storage.getSize(owner), 50);
    db.close();
    // Without "cipher" the key does not open it, and the cause names the option.
    assert.throws(
      () => createEvoluSqliteDriver({ key: KEY })(common.Name.orThrow('aegis-relay'))({}),
      (error) =>
        /the key does not open it/.test(error.message) &&
        error.cause?.code === 'SQLITE_NOTADB' &&
        /"cipher"/.test(error.cause.message),
    );
    const run = common.createRun({ createSqliteDriver: createEvoluSqliteDriver(options) });
    const memory = await run(common.createSqlite(common.Name.orThrow('aegis-mem'), { mode: 'memory' }));
    assert.ok(memory.ok);
    await memory.value[Symbol.asyncDispose]();
    assert.equal(fs.existsSync('aegis-mem.db'), false);
  });

  it('73.3.6 { passphrase, cipher: "aegis", algorithm, tcost, mcost, pcost }: the options reach the file; memory mode drops them', async () => {
    const { localFirst, common } = evolu;
    const options = {
      passphrase: 'relay pass',
      cipher: 'aegis',
      algorithm: 'aegis-128l',
      tcost: 1,
      mcost: 1024,
      pcost: 2,
    };
    const first = await openRelayDb(options, 'aegis128-relay');
    localFirst.createBaseSqliteStorageTables({ sqlite: first.sqlite });
    localFirst.createRelayStorageTables({ sqlite: first.sqlite });
    await writeThroughEvolu(first.sqlite, owner);
    await first.sqlite[Symbol.asyncDispose]();
    assert.equal(fs.readFileSync('aegis128-relay.db')[20], 48, "AEGIS-128L's reserve (docs/aegis-format.md §2)");
    const db = new Database('aegis128-relay.db', options);
    const storage = createEvoluStorage({ db, random: common.testCreateRandom('e') })({
      isOwnerWithinQuota: () => true,
    });
    assert.equal(storage.getSize(owner), 50);
    db.close();
    // Without "algorithm" the passphrase does not open it, and the cause names the option.
    const { algorithm, ...withoutAlgorithm } = options;
    assert.throws(
      () => createEvoluSqliteDriver(withoutAlgorithm)(common.Name.orThrow('aegis128-relay'))({}),
      (error) =>
        error.cause?.code === 'SQLITE_NOTADB' &&
        error.cause.message.includes(`pass the "algorithm" option: '${algorithm}'`),
    );
    const run = common.createRun({ createSqliteDriver: createEvoluSqliteDriver(options) });
    const memory = await run(common.createSqlite(common.Name.orThrow('aegis128-mem'), { mode: 'memory' }));
    assert.ok(memory.ok);
    await memory.value[Symbol.asyncDispose]();
    assert.equal(fs.existsSync('aegis128-mem.db'), false);
  });
});
