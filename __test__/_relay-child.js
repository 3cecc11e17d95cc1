'use strict';
// Child process of the relay tests (72) and the relay load benchmark's workload shape:
// run with `fork(__filename, [JSON config])`. Modes:
//   writer  opens the database with a busy timeout, sends 'ready', waits for 'go', then
//           writes `batches` batches through cipherlite/relay (owners in turn) and sends
//           { done, results } — each batch's outcome: 'ok', 'refused' or the error.
//   hold    takes the write lock (BEGIN IMMEDIATE, one row written), sends 'locked',
//           keeps it `holdMs` milliseconds, commits and exits.
// `batchMessages` is also exported: the parent regenerates what a writer sent from the
// same (worker, batch) numbers.
const path = require('node:path');
// The same numbers in the parent and in the child.
const { seeded } = require('./_random');

function timestamp(millis, counter, node) {
  const t = Buffer.alloc(16);
  t.writeUIntBE(millis, 0, 6);
  t.writeUInt16BE(counter, 6);
  t.writeBigUInt64BE(BigInt(node), 8);
  return t;
}

/**
 * The owner and messages of batch `batch` of worker `worker`. One message in four has a
 * timestamp (and change) every worker sends in its batch of that number — duplicates
 * across processes; the others are the worker's own (node id worker + 1).
 */
function batchMessages(config, worker, batch) {
  // Every worker's batch n goes to the same owner: the workers contend for it.
  const owner = Buffer.alloc(16, 0x40 + (batch % config.owners));
  const random = seeded(worker * 100_003 + batch * 7 + 1);
  const messages = [];
  for (let i = 0; i < config.batchSize; i++) {
    const shared = i % 4 === 0;
    const millis = 1_000_000 + batch * 1000 + Math.floor(random() * 1000);
    const size = shared ? 20 + ((batch * 31 + i) % 80) : 20 + Math.floor(random() * 100);
    messages.push({
      timestamp: timestamp(
        shared ? 1_000_000 + batch * 1000 + i : millis,
        shared ? 0 : i,
        shared ? 0xaaaa : worker + 1,
      ),
      change: Buffer.alloc(size, shared ? batch & 0xff : (worker * 16 + i) & 0xff),
    });
  }
  return { owner, messages };
}

async function writer(config) {
  const Database = require(path.join(__dirname, '..'));
  const { createRelayStorage } = require(path.join(__dirname, '..', 'relay'));
  const options = { timeout: config.timeout };
  if (config.key) options.key = Buffer.from(config.key, 'hex');
  const db = new Database(config.file, options);
  const quota = config.quota ?? Infinity;
  // Odd workers answer the quota asynchronously: their batches are decided again after it.
  const isOwnerWithinQuota =
    config.worker % 2 === 1
      ? (ownerId, bytes) => new Promise((resolve) => setImmediate(() => resolve(bytes <= quota)))
      : (ownerId, bytes) => bytes <= quota;
  const storage = createRelayStorage(db, { isOwnerWithinQuota });
  await new Promise((resolve) => {
    process.on('message', (m) => {
      if (m === 'go') resolve();
    });
    process.send('ready');
  });
  const results = [];
  for (let batch = 0; batch < config.batches; batch++) {
    const { owner, messages } = batchMessages(config, config.worker, batch);
    try {
      const result = await storage.writeMessages(owner, messages);
      results.push(result.ok ? 'ok' : 'refused');
      // A sync round as a relay answers one: fingerprints of 16 buckets.
      const size = storage.getSize(owner);
      if (size >= 16)
        storage.fingerprintRanges(
          owner,
          Array.from({ length: 16 }, (_, i) => Math.floor(((i + 1) * size) / 16)),
        );
    } catch (err) {
      results.push(`${err.code ?? err.name}: ${err.message}`);
    }
  }
  db.close();
  process.send({ done: true, results }, () => process.disconnect());
}

function hold(config) {
  const Database = require(path.join(__dirname, '..'));
  const db = new Database(config.file, { timeout: config.timeout });
  db.exec('BEGIN IMMEDIATE');
  db.exec('create table if not exists lock_holder (x)');
  db.prepare('insert into lock_holder values (?)').run(1);
  // Hold the lock once the parent has been told (the callback runs after the send).
  process.send('locked', () => {
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, config.holdMs);
    db.exec('COMMIT');
    db.close();
    process.send('released', () => process.exit(0));
  });
}

if (require.main === module) {
  const config = JSON.parse(process.argv[2]);
  if (config.mode === 'hold') hold(config);
  else
    writer(config).catch((err) => {
      process.send({ done: true, results: [`crashed: ${err.stack}`] }, () => process.disconnect());
    });
}

module.exports = { batchMessages, seeded, timestamp };
