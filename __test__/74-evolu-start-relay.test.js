'use strict';
// Evolu's own relay server — `startRelay` of @evolu/nodejs, unchanged — on cipherlite: its
// `createSqliteDriver` dependency is `createEvoluSqliteDriver` of `cipherlite/evolu`, plain
// and with a key. Evolu's client code builds each push (an encrypted CRDT message in a
// protocol message) and sends it over a real WebSocket; the relay answers and stores it,
// and with a key nothing of it is readable without the key.
//
// @evolu/nodejs 3.0.0-next.3 imports from @evolu/common 8.0.0-next.5, which needs Node 24
// (its engines field; its task runner calls Promise.try): both come from
// __test__/evolu-relay/package-lock.json (scripts/setup-evolu-relay.js, run by
// scripts/run-tests.js). The relay *logic* on cipherlite's own storage is 73's subject.

const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const Database = require('..');
const { createEvoluSqliteDriver } = require('../evolu');
const { evoluRelayDir } = require('../scripts/setup-evolu-relay');
const { tempDir, removeDir } = require('./_helpers');

const major = Number(process.versions.node.split('.')[0]);
const installed = fs.existsSync(path.join(evoluRelayDir, 'node_modules', '@evolu', 'nodejs', 'package.json'));
const skip =
  major < 24
    ? `Evolu's relay (@evolu/common 8.0.0-next.5) needs Node 24 or later; this is ${process.version}`
    : !installed
      ? 'Evolu relay packages not installed: run node scripts/setup-evolu-relay.js'
      : false;

const KEY = Buffer.alloc(32, 0x4e);

/** An ES module of the fixture's install, by its path (bare imports resolve from there). */
const importFixture = (relative) => import(pathToFileURL(path.join(evoluRelayDir, 'node_modules', relative)).href);

describe('74 Evolu relay server (startRelay) on cipherlite', { skip }, () => {
  let evolu;
  let dir;
  const started = [];

  before(async () => {
    evolu = {
      common: await importFixture('@evolu/common/dist/src/index.js'),
      localFirst: await importFixture('@evolu/common/dist/src/local-first/index.js'),
      nodejs: await importFixture('@evolu/nodejs/dist/src/index.js'),
      WebSocket: require(path.join(evoluRelayDir, 'node_modules', 'ws')).WebSocket,
    };
    dir = tempDir('evolu-start-relay');
  });

  after(async () => {
    // The relay (its HTTP and WebSocket servers, its database), then the task runner.
    for (const { relay, run } of started.reverse()) {
      if (relay) await relay[Symbol.asyncDispose]();
      await run[Symbol.asyncDispose]();
    }
    if (dir) removeDir(dir);
  });

  /** Starts Evolu's relay in `where` (it opens `${name}.db` in the working directory). */
  async function startRelay(where, driverOptions) {
    const { common, nodejs } = evolu;
    fs.mkdirSync(where, { recursive: true });
    const cwd = process.cwd();
    process.chdir(where);
    try {
      const run = nodejs.createRun({
        ...nodejs.createRelayDeps(),
        createSqliteDriver: createEvoluSqliteDriver(driverOptions),
        console: common.createConsole({ level: 'warn' }),
      });
      const entry = { run, relay: null };
      started.push(entry);
      const port = 20000 + Math.floor(Math.random() * 20000);
      const result = await run(
        nodejs.startRelay({ port, name: common.Name.orThrow('relay'), isOwnerWithinQuota: () => true }),
      );
      if (result.ok) entry.relay = result.value;
      return { result, port };
    } finally {
      process.chdir(cwd);
    }
  }

  /** Pushes `names` as new rows of Evolu's test owner and returns the relay's answer. */
  async function push(port, names) {
    const { common, localFirst, WebSocket } = evolu;
    const owner = localFirst.testAppOwner;
    const createId = common.testCreateId();
    const messages = names.map((name, i) => localFirst.testCreateCrdtMessage(createId(), 1_000 + i, name));
    const request = localFirst.createProtocolMessageFromCrdtMessages({ randomBytes: common.createRandomBytes() })(
      owner,
      messages,
    );
    const ws = new WebSocket(`ws://127.0.0.1:${port}?ownerId=${owner.id}`);
    ws.binaryType = 'arraybuffer';
    try {
      return await new Promise((resolve, reject) => {
        ws.on('open', () => ws.send(request));
        ws.on('message', (data) => resolve(new Uint8Array(data)));
        ws.on('error', reject);
        setTimeout(() => reject(new Error('no answer from the relay')), 10_000).unref();
      });
    } finally {
      ws.close();
    }
  }

  function storedMessages(file, options) {
    const db = new Database(file, options);
    try {
      return db.prepare('select count(*) from evolu_message').pluck().get();
    } finally {
      db.close();
    }
  }

  it('74.1 a plain relay starts, answers a push and stores it', async () => {
    const where = path.join(dir, 'plain');
    const { result, port } = await startRelay(where, {});
    assert.equal(result.ok, true);
    const answer = await push(port, ['one', 'two']);
    assert.ok(answer.length > 0, 'the relay answers');
    const file = path.join(where, 'relay.db');
    assert.equal(fs.readFileSync(file).subarray(0, 16).toString('latin1'), 'SQLite format 3\0');
    assert.equal(storedMessages(file), 2);
  });

  it('74.2 a relay given a key keeps everything encrypted, and its file needs the key', async () => {
    const where = path.join(dir, 'keyed');
    const { result, port } = await startRelay(where, { key: KEY });
    assert.equal(result.ok, true);
    await push(port, ['secret-1', 'secret-2', 'secret-3']);
    const file = path.join(where, 'relay.db');
    const bytes = fs.readFileSync(file);
    assert.notEqual(bytes.subarray(0, 16).toString('latin1'), 'SQLite format 3\0');
    for (const name of ['evolu_message', 'evolu_timestamp', 'ownerId']) {
      assert.equal(bytes.includes(Buffer.from(name)), false, `${name} is not in the file`);
    }
    assert.equal(storedMessages(file, { key: KEY }), 3);
    assert.throws(() => storedMessages(file), { code: 'SQLITE_NOTADB' });
  });

  it('74.3 a relay whose driver has the wrong key fails at start, naming the problem', async () => {
    const where = path.join(dir, 'keyed');
    await assert.rejects(
      startRelay(where, { key: Buffer.alloc(32, 0x11) }),
      /Cannot open the Evolu database relay\.db: the key does not open it/,
    );
  });
});
