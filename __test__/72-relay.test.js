'use strict';
// cipherlite/relay: an Evolu relay's storage on the evolu_* functions (docs/evolu-storage.md
// §5). Each method, the quota paths, storedBytes accounting, deleteOwner, its typings,
// the rows it writes compared with Evolu's own createRelaySqliteStorage; several writer
// processes and storage objects on one WAL file (busy timeout, exact usage and quota),
// iterate's bounded reads, and untrusted input at its boundary.
const { describe, it, beforeEach, afterEach, before } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const path = require('node:path');
const { execFileSync, fork } = require('node:child_process');
const Database = require('..');
// `require('cipherlite/relay')` resolves to the package root's relay.js (checked on the
// packed tarball in 40-packaging): the same file.
const { createRelayStorage, INFINITE_UPPER_BOUND } = require('../relay');
const { loadEvolu, openEvoluSqlite } = require('../benchmark/lib/evolu');
const { tempDir, removeDir, throwsExactly } = require('./_helpers');
const { seeded, shuffle } = require('./_random');
const { batchMessages } = require('./_relay-child');

const CHILD = path.join(__dirname, '_relay-child.js');

function timestamp(millis, counter = 0, node = 1n) {
  const t = Buffer.alloc(16);
  t.writeUIntBE(millis, 0, 6);
  t.writeUInt16BE(counter, 6);
  t.writeBigUInt64BE(node, 8);
  return t;
}

const OWNER = Buffer.alloc(16, 0x0a);
const OTHER = Buffer.alloc(16, 0x0b);
const message = (millis, change = `change ${millis}`) => ({
  timestamp: timestamp(millis),
  change: Buffer.from(change),
});
const count = (db, table, owner) => db.prepare(`select count(*) from ${table} where "ownerId" = ?`).pluck().get(owner);
const usage = (db, owner) =>
  db.prepare('select "storedBytes", "firstTimestamp", "lastTimestamp" from evolu_usage where "ownerId" = ?').get(owner);

describe('72 cipherlite/relay', () => {
  let db;
  let storage;
  let quotaCalls;
  beforeEach(() => {
    db = new Database(':memory:');
    quotaCalls = [];
    storage = createRelayStorage(db, {
      isOwnerWithinQuota: (ownerId, bytes) => {
        quotaCalls.push([Buffer.from(ownerId), bytes]);
        return true;
      },
    });
    storage.createTables();
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  describe('72.1 tables', () => {
    it('72.1.1 createTables runs Evolu’s DDL exactly (§1.1, §1.2)', async () => {
      const evolu = await loadEvolu();
      const e = await openEvoluSqlite(Database);
      try {
        evolu.localFirst.createBaseSqliteStorageTables({ sqlite: e.sqlite });
        evolu.localFirst.createRelayStorageTables({ sqlite: e.sqlite });
        const schema = (d) => d.prepare('select type, name, tbl_name, sql from sqlite_master order by name').all();
        assert.deepEqual(schema(db), schema(e.db));
        assert.deepEqual(
          schema(db).map((r) => r.name),
          [
            'evolu_message',
            'evolu_timestamp',
            'evolu_timestamp_index',
            'evolu_usage',
            'evolu_writeKey',
            'sqlite_autoindex_evolu_message_1',
            'sqlite_autoindex_evolu_timestamp_1',
            'sqlite_autoindex_evolu_usage_1',
            'sqlite_autoindex_evolu_writeKey_1',
          ],
        );
      } finally {
        await e.dispose();
      }
    });

    it('72.1.2 the types of cipherlite/relay compile (and catch misuse) under --strict', () => {
      const tsc = require.resolve('typescript/bin/tsc');
      const usage = path.join(__dirname, 'types', 'relay-usage.ts');
      try {
        execFileSync(
          process.execPath,
          [
            tsc,
            '--noEmit',
            '--strict',
            '--target',
            'es2020',
            '--module',
            'commonjs',
            '--moduleResolution',
            'node',
            '--types',
            'node',
            usage,
          ],
          { encoding: 'utf8', cwd: path.join(__dirname, '..') },
        );
      } catch (err) {
        assert.fail(`tsc reported errors:\n${err.stdout}${err.stderr}`);
      }
    });
  });

  describe('72.2 writeMessages', () => {
    it('72.2.1 stores timestamps, changes and usage in one go', () => {
      const result = storage.writeMessages(OWNER, [message(3, 'ccc'), message(1, 'a'), message(2, 'bb')]);
      assert.deepEqual(result, { ok: true });
      assert.equal(storage.getSize(OWNER), 3);
      assert.equal(count(db, 'evolu_message', OWNER), 3);
      assert.deepEqual(usage(db, OWNER), { storedBytes: 6, firstTimestamp: timestamp(1), lastTimestamp: timestamp(3) });
      assert.deepEqual(quotaCalls, [[OWNER, 6]]);
      assert.deepEqual(storage.readDbChange(OWNER, timestamp(2)), Buffer.from('bb'));
    });

    it('72.2.2 duplicates within a batch count once (the first wins)', () => {
      storage.writeMessages(OWNER, [message(5, 'first'), message(5, 'second'), message(6, 'x')]);
      assert.equal(count(db, 'evolu_message', OWNER), 2);
      assert.deepEqual(storage.readDbChange(OWNER, timestamp(5)), Buffer.from('first'));
      assert.equal(usage(db, OWNER).storedBytes, 6);
    });

    it('72.2.3 re-sending stored messages writes nothing and does not grow storedBytes', () => {
      storage.writeMessages(OWNER, [message(1, 'abc')]);
      assert.equal(usage(db, OWNER).storedBytes, 3);
      const changes = db.prepare('select total_changes()').pluck();
      const before = changes.get();
      assert.deepEqual(storage.writeMessages(OWNER, [message(1, 'abc')]), { ok: true });
      assert.equal(changes.get(), before, 'no write at all');
      assert.equal(usage(db, OWNER).storedBytes, 3);
      assert.equal(quotaCalls.length, 1, 'no quota question for nothing new');
      storage.writeMessages(OWNER, [message(1, 'abc'), message(2, 'de')]);
      assert.equal(usage(db, OWNER).storedBytes, 5);
      assert.deepEqual(quotaCalls.at(-1), [OWNER, 5]);
    });

    it('72.2.4 bounds in evolu_usage follow appends, prepends and inserts', () => {
      storage.writeMessages(OWNER, [message(50)]);
      storage.writeMessages(OWNER, [message(70), message(10), message(60), message(5)]);
      assert.deepEqual(usage(db, OWNER), {
        storedBytes: 5 * 'change xx'.length - 1,
        firstTimestamp: timestamp(5),
        lastTimestamp: timestamp(70),
      });
      const ts = [];
      storage.iterate(OWNER, 0, storage.getSize(OWNER), (t) => {
        ts.push(t.readUIntBE(0, 6));
      });
      assert.deepEqual(ts, [5, 10, 50, 60, 70]);
    });

    it('72.2.5 Evolu Timestamp objects are accepted as timestamps', () => {
      storage.writeMessages(OWNER, [
        { timestamp: { millis: 258, counter: 3, nodeId: '0000000000000001' }, change: new Uint8Array([7]) },
      ]);
      assert.deepEqual(storage.readDbChange(OWNER, timestamp(258, 3)), Buffer.from([7]));
    });

    it('72.2.7 Evolu Timestamps are encoded as Evolu encodes them; node ids are 16 lowercase hex digits', () => {
      const objects = [
        { millis: 2 ** 48 - 2, counter: 0xffff, nodeId: '0123456789abcdef' },
        { millis: 2 ** 32 + 5, counter: 256, nodeId: 'fedcba9876543210' },
        { millis: 2 ** 32 - 1, counter: 1, nodeId: 'a0b1c2d3e4f50617' },
        { millis: 0, counter: 0, nodeId: '0000000000000000' },
      ];
      // Evolu's timestampToTimestampBytes, with Buffer's own writers.
      const expected = objects.map(({ millis, counter, nodeId }) => {
        const bytes = Buffer.alloc(16);
        bytes.writeUIntBE(millis, 0, 6);
        bytes.writeUInt16BE(counter, 6);
        bytes.write(nodeId, 8, 'hex');
        return bytes;
      });
      // Out of order and with a duplicate: the first message of a timestamp wins.
      storage.writeMessages(OWNER, [
        { timestamp: objects[0], change: Buffer.from('a') },
        { timestamp: objects[1], change: Buffer.from('b') },
        { timestamp: expected[0], change: Buffer.from('again') },
        { timestamp: objects[2], change: Buffer.from('c') },
        { timestamp: objects[3], change: Buffer.from('d') },
      ]);
      const stored = db
        .prepare('select timestamp, change from evolu_message where ownerId = ? order by rowid')
        .all(OWNER);
      assert.deepEqual(
        stored.map((row) => [row.timestamp, row.change.toString()]),
        expected.map((t, i) => [t, 'abcd'[i]]),
      );
      assert.deepEqual(usage(db, OWNER), { storedBytes: 4, firstTimestamp: expected[3], lastTimestamp: expected[0] });
      for (const nodeId of [
        '0123456789ABCDEF',
        '0123456789abcde',
        '0123456789abcdef0',
        '0123456789abcdeg',
        '01234567 9abcdef',
      ]) {
        throwsExactly(
          () =>
            storage.writeMessages(OWNER, [{ timestamp: { millis: 1, counter: 0, nodeId }, change: Buffer.from('x') }]),
          TypeError,
          'Expected each message timestamp to be a 16-byte Uint8Array or an Evolu Timestamp',
        );
      }
      assert.equal(count(db, 'evolu_message', OWNER), 4);
    });

    it('72.2.6 bad input is a TypeError', () => {
      assert.throws(() => storage.writeMessages(Buffer.alloc(15), []), TypeError);
      assert.throws(
        () => storage.writeMessages(OWNER, [{ timestamp: Buffer.alloc(8), change: Buffer.alloc(1) }]),
        TypeError,
      );
      assert.throws(() => storage.writeMessages(OWNER, [{ timestamp: timestamp(1), change: 'text' }]), TypeError);
      assert.throws(() => storage.writeMessages(OWNER, 'nope'), TypeError);
      assert.equal(count(db, 'evolu_message', OWNER), 0);
    });
  });

  describe('72.3 quota', () => {
    it('72.3.1 a refusal writes nothing, in any table', () => {
      storage.writeMessages(OWNER, [message(1, 'abc')]);
      const refusing = createRelayStorage(db, { isOwnerWithinQuota: (_, bytes) => bytes <= 5 });
      const snapshot = () =>
        ['evolu_timestamp', 'evolu_message', 'evolu_usage'].map((table) =>
          db.prepare(`select * from ${table} order by rowid`).all(),
        );
      const before = snapshot();
      assert.deepEqual(refusing.writeMessages(OWNER, [message(2, 'de'), message(3, 'f')]), {
        ok: false,
        error: { type: 'StorageQuotaError', ownerId: OWNER },
      });
      assert.deepEqual(snapshot(), before);
      assert.deepEqual(refusing.writeMessages(OWNER, [message(2, 'de')]), { ok: true });
      assert.equal(usage(db, OWNER).storedBytes, 5);
    });

    it('72.3.2 an async quota makes writeMessages return a promise; a refusal writes nothing', async () => {
      const asyncStorage = createRelayStorage(db, { isOwnerWithinQuota: async (_, bytes) => bytes <= 4 });
      const accepted = asyncStorage.writeMessages(OWNER, [message(1, 'ab')]);
      assert.ok(accepted instanceof Promise);
      assert.equal(count(db, 'evolu_message', OWNER), 0, 'nothing before the quota answers');
      assert.deepEqual(await accepted, { ok: true });
      assert.equal(count(db, 'evolu_message', OWNER), 1);
      const refused = await asyncStorage.writeMessages(OWNER, [message(2, 'cde')]);
      assert.deepEqual(refused, { ok: false, error: { type: 'StorageQuotaError', ownerId: OWNER } });
      assert.equal(count(db, 'evolu_message', OWNER), 1);
      assert.equal(count(db, 'evolu_timestamp', OWNER), 1);
      assert.equal(usage(db, OWNER).storedBytes, 2);
    });

    it('72.3.3 writes of one owner wait for its pending async write (no double counting)', async () => {
      const answers = [];
      const slow = createRelayStorage(db, {
        isOwnerWithinQuota: (ownerId, bytes) =>
          new Promise((resolve) => {
            answers.push(bytes);
            setTimeout(() => resolve(true), 5);
          }),
      });
      const a = slow.writeMessages(OWNER, [message(1, 'aaaa'), message(2, 'bb')]);
      const b = slow.writeMessages(OWNER, [message(2, 'bb'), message(3, 'c')]);
      const c = slow.writeMessages(OTHER, [message(1, 'zz')]);
      assert.deepEqual(await Promise.all([a, b, c]), [{ ok: true }, { ok: true }, { ok: true }]);
      assert.deepEqual(answers, [6, 2, 7], 'the second batch was prepared after the first was written');
      assert.equal(usage(db, OWNER).storedBytes, 7);
      assert.equal(storage.getSize(OWNER), 3);
      assert.equal(storage.getSize(OTHER), 1);
      // Once nothing is pending, a synchronous quota answers synchronously again.
      assert.deepEqual(storage.writeMessages(OWNER, [message(4, 'd')]), { ok: true });
    });
  });

  describe('72.4 reads', () => {
    beforeEach(() => {
      const messages = [];
      for (let i = 1; i <= 40; i++) messages.push(message(i * 10));
      storage.writeMessages(OWNER, shuffleDeterministic(messages));
    });

    it('72.4.1 readDbChange: the change, or an error for an unknown timestamp', () => {
      assert.deepEqual(storage.readDbChange(OWNER, timestamp(100)), Buffer.from('change 100'));
      assert.throws(() => storage.readDbChange(OWNER, timestamp(101)), {
        message: 'Every timestamp must have a change',
      });
      assert.throws(() => storage.readDbChange(OTHER, timestamp(100)), {
        message: 'Every timestamp must have a change',
      });
    });

    it('72.4.2 getSize, findLowerBound and fingerprint', () => {
      assert.equal(storage.getSize(OWNER), 40);
      assert.equal(storage.getSize(OTHER), 0);
      assert.equal(storage.findLowerBound(OWNER, 0, 40, timestamp(105)), 10);
      assert.equal(storage.findLowerBound(OWNER, 0, 40, timestamp(100)), 9);
      assert.equal(storage.findLowerBound(OWNER, 0, 40, timestamp(1000)), 40);
      assert.equal(storage.findLowerBound(OWNER, 0, 40, INFINITE_UPPER_BOUND), 40);
      assert.equal(storage.findLowerBound(OWNER, 7, 7, timestamp(1)), 7);
      const whole = storage.fingerprint(OWNER, 0, 40);
      const halves = xor(storage.fingerprint(OWNER, 0, 17), storage.fingerprint(OWNER, 17, 40));
      assert.deepEqual(whole, halves);
      assert.equal(whole.length, 12);
      assert.deepEqual(storage.fingerprint(OWNER, 9, 9), Buffer.alloc(12));
    });

    it('72.4.3 fingerprintRanges: upper bounds are the next timestamps, then the one given', () => {
      const ranges = storage.fingerprintRanges(OWNER, [10, 25, 40]);
      assert.deepEqual(
        ranges.map((r) => r.upperBound),
        [timestamp(110), timestamp(260), null],
      );
      assert.deepEqual(ranges[1].fingerprint, storage.fingerprint(OWNER, 10, 25));
      const bounded = storage.fingerprintRanges(OWNER, [10, 25], timestamp(999));
      assert.deepEqual(
        bounded.map((r) => r.upperBound),
        [timestamp(110), timestamp(999)],
      );
    });

    it('72.4.4 iterate: ranks begin..end−1 in order, stopping when told', () => {
      const seen = [];
      storage.iterate(OWNER, 5, 12, (t, i) => {
        seen.push([i, t.readUIntBE(0, 6)]);
      });
      assert.deepEqual(
        seen,
        [5, 6, 7, 8, 9, 10, 11].map((i) => [i, (i + 1) * 10]),
      );
      const stopped = [];
      storage.iterate(OWNER, 0, 40, (t, i) => {
        stopped.push(i);
        return i < 2;
      });
      assert.deepEqual(stopped, [0, 1, 2]);
      let calls = 0;
      storage.iterate(OWNER, 3, 3, () => {
        calls++;
      });
      assert.equal(calls, 0);
    });

    it('72.4.5 write keys: the first is kept and later ones compared', () => {
      const key = Buffer.alloc(16, 1);
      assert.equal(storage.validateWriteKey(OWNER, key), true);
      assert.equal(storage.validateWriteKey(OWNER, key), true);
      assert.equal(storage.validateWriteKey(OWNER, Buffer.alloc(16, 2)), false);
      storage.setWriteKey(OWNER, Buffer.alloc(16, 2));
      assert.equal(storage.validateWriteKey(OWNER, Buffer.alloc(16, 2)), true);
    });
  });

  describe('72.5 deleteOwner', () => {
    it('72.5.1 removes the owner from all four relay tables, and only that owner', () => {
      storage.validateWriteKey(OWNER, Buffer.alloc(16, 1));
      storage.validateWriteKey(OTHER, Buffer.alloc(16, 2));
      storage.writeMessages(OWNER, [message(1), message(2), message(3)]);
      storage.writeMessages(OTHER, [message(1), message(9)]);
      storage.deleteOwner(OWNER);
      for (const table of ['evolu_writeKey', 'evolu_message', 'evolu_usage', 'evolu_timestamp']) {
        assert.equal(count(db, table, OWNER), 0, table);
        assert.ok(count(db, table, OTHER) > 0, table);
      }
      assert.equal(storage.getSize(OWNER), 0);
      assert.equal(storage.getSize(OTHER), 2);
      // The owner can start over.
      assert.deepEqual(storage.writeMessages(OWNER, [message(7, 'x')]), { ok: true });
      assert.deepEqual(usage(db, OWNER), { storedBytes: 1, firstTimestamp: timestamp(7), lastTimestamp: timestamp(7) });
    });
  });

  describe('72.6 the same rows as Evolu’s createRelaySqliteStorage', () => {
    let evolu;
    before(async () => {
      evolu = await loadEvolu();
    });

    it('72.6.1 batches with duplicates and re-sends: same messages, usage and fingerprints', async () => {
      const e = await openEvoluSqlite(Database);
      try {
        const { localFirst, common } = evolu;
        localFirst.createBaseSqliteStorageTables({ sqlite: e.sqlite });
        localFirst.createRelayStorageTables({ sqlite: e.sqlite });
        const theirs = localFirst.createRelaySqliteStorage({
          sqlite: e.sqlite,
          random: common.createRandom(),
          timingSafeEqual: require('node:crypto').timingSafeEqual,
        })({ isOwnerWithinQuota: () => true });
        const random = seeded(5);
        const owners = [OWNER, OTHER];
        const sent = [];
        for (let batch = 0; batch < 30; batch++) {
          const owner = owners[batch % 2];
          const messages = [];
          for (let i = 0; i < 40; i++) {
            const millis = Math.floor(random() * 2000);
            messages.push({
              timestamp: { millis, counter: Math.floor(random() * 3), nodeId: '00000000000000a1' },
              change: Buffer.alloc(1 + Math.floor(random() * 50), batch),
            });
          }
          if (sent.length > 0) messages.push(sent[Math.floor(random() * sent.length)]); // a re-send
          sent.push(...messages.map((m) => ({ ...m, owner })));
          const ours = storage.writeMessages(owner, messages);
          const result = await e.run(theirs.writeMessages(owner, messages));
          assert.deepEqual(ours, { ok: true });
          assert.equal(result.ok, true);
        }
        for (const owner of owners) {
          for (const sql of [
            'select "timestamp", "change" from evolu_message where "ownerId" = ? order by "timestamp"',
            'select "storedBytes", "firstTimestamp", "lastTimestamp" from evolu_usage where "ownerId" = ?',
            'select t from evolu_timestamp where "ownerId" = ? order by t',
          ]) {
            assert.deepEqual(db.prepare(sql).all(owner), e.db.prepare(sql).all(owner), sql);
          }
          const size = theirs.getSize(owner);
          assert.equal(storage.getSize(owner), size);
          const buckets = common.computeBalancedBuckets(size).value;
          const ours = storage.fingerprintRanges(owner, buckets);
          const expected = theirs.fingerprintRanges(owner, buckets);
          assert.deepEqual(
            ours.map((r) => r.fingerprint),
            expected.map((r) => Buffer.from(r.fingerprint)),
          );
          assert.deepEqual(
            ours.slice(0, -1).map((r) => r.upperBound),
            expected.slice(0, -1).map((r) => Buffer.from(r.upperBound)),
          );
        }
      } finally {
        await e.dispose();
      }
    });
  });
  describe('72.7 several writers on one WAL database with a busy timeout', () => {
    let dir;
    beforeEach(() => {
      dir = tempDir();
    });
    afterEach(() => removeDir(dir));

    /** A WAL file with the relay tables; `options` as for new Database. */
    function createFile(options = {}) {
      const file = path.join(dir, 'relay.db');
      const setup = new Database(file, options);
      setup.pragma('journal_mode = wal');
      createRelayStorage(setup).createTables();
      setup.close();
      return file;
    }

    function start(config) {
      const child = fork(CHILD, [JSON.stringify(config)], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
      const exited = new Promise((resolve) => child.on('exit', resolve));
      return { child, exited };
    }
    const nextMessage = (child, test = () => true) =>
      new Promise((resolve, reject) => {
        const onMessage = (m) => {
          if (test(m)) {
            child.off('message', onMessage);
            resolve(m);
          }
        };
        child.on('message', onMessage);
        child.once('exit', (code) => reject(new Error(`child exited (${code}) before the message`)));
      });

    it('72.7.1 every write path waits for another process’s write lock instead of failing with SQLITE_BUSY', async () => {
      const file = createFile();
      const db = new Database(file, { timeout: 20_000 });
      try {
        const relay = createRelayStorage(db, { isOwnerWithinQuota: () => true });
        const paths = [
          [
            'writeMessages',
            () => assert.deepEqual(relay.writeMessages(OWNER, [message(1, 'abc'), message(2, 'de')]), { ok: true }),
          ],
          ['validateWriteKey', () => assert.equal(relay.validateWriteKey(OWNER, Buffer.alloc(16, 1)), true)],
          ['setWriteKey', () => relay.setWriteKey(OTHER, Buffer.alloc(16, 2))],
          [
            'writeMessages again',
            () => assert.deepEqual(relay.writeMessages(OWNER, [message(2, 'de'), message(3, 'f')]), { ok: true }),
          ],
          ['deleteOwner', () => relay.deleteOwner(OTHER)],
        ];
        for (const [name, write] of paths) {
          const { child, exited } = start({ mode: 'hold', file, timeout: 20_000, holdMs: 300 });
          await nextMessage(child, (m) => m === 'locked');
          try {
            write(); // blocks in the busy handler until the other process commits
          } catch (err) {
            assert.fail(`${name} failed while another process held the write lock: ${err.code} ${err.message}`);
          }
          assert.equal(await exited, 0);
        }
        assert.deepEqual(usage(db, OWNER), {
          storedBytes: 6,
          firstTimestamp: timestamp(1),
          lastTimestamp: timestamp(3),
        });
        assert.equal(count(db, 'evolu_writeKey', OWNER), 1);
        assert.equal(count(db, 'evolu_message', OTHER), 0);
        assert.equal(count(db, 'evolu_writeKey', OTHER), 0);
      } finally {
        db.close();
      }
    });

    /** Runs `workers` writer processes to the end; returns each one's batch outcomes. */
    async function runWriters(workers, config) {
      const children = [];
      for (let worker = 0; worker < workers; worker++) children.push(start({ ...config, mode: 'writer', worker }));
      const ready = children.map(({ child }) => nextMessage(child, (m) => m === 'ready'));
      const done = children.map(({ child }) => nextMessage(child, (m) => m && m.done));
      await Promise.all(ready);
      for (const { child } of children) child.send('go'); // all start together
      const results = (await Promise.all(done)).map((m) => m.results);
      assert.deepEqual(
        await Promise.all(children.map((c) => c.exited)),
        children.map(() => 0),
      );
      return results;
    }

    /** What the file must hold after `results`: exact usage, the quota, every accepted message. */
    function checkFile(file, options, config, results) {
      const failures = results
        .flatMap((r, worker) => r.map((outcome, batch) => ({ worker, batch, outcome })))
        .filter(({ outcome }) => outcome !== 'ok' && outcome !== 'refused');
      assert.deepEqual(failures, [], 'no failed write');
      const db = new Database(file, options);
      try {
        const relay = createRelayStorage(db);
        for (let o = 0; o < config.owners; o++) {
          const owner = Buffer.alloc(16, 0x40 + o);
          const rows = db
            .prepare('select "timestamp", "change" from evolu_message where "ownerId" = ? order by "timestamp"')
            .raw()
            .all(owner);
          const stored = rows.reduce((sum, [, change]) => sum + change.length, 0);
          const u = usage(db, owner);
          assert.equal(u.storedBytes, stored, `owner ${o}: storedBytes is what evolu_message holds`);
          if (config.quota !== undefined)
            assert.ok(stored <= config.quota, `owner ${o}: ${stored} bytes > quota ${config.quota}`);
          const ts = db.prepare('select t from evolu_timestamp where "ownerId" = ? order by t').pluck().all(owner);
          assert.deepEqual(
            ts,
            rows.map(([t]) => t),
            `owner ${o}: one timestamp per message`,
          );
          assert.equal(relay.getSize(owner), rows.length);
          assert.deepEqual([u.firstTimestamp, u.lastTimestamp], [rows[0][0], rows.at(-1)[0]]);
          assert.deepEqual(
            relay.fingerprint(owner, 0, rows.length),
            xorOfHashes(ts),
            `owner ${o}: skiplist fingerprint`,
          );
        }
        const change = db.prepare('select "change" from evolu_message where "ownerId" = ? and "timestamp" = ?').pluck();
        results.forEach((outcomes, worker) =>
          outcomes.forEach((outcome, batch) => {
            if (outcome !== 'ok') return;
            const { owner, messages } = batchMessages(config, worker, batch);
            for (const m of messages)
              assert.deepEqual(change.get(owner, m.timestamp), m.change, `worker ${worker} batch ${batch}`);
          }),
        );
      } finally {
        db.close();
      }
    }

    it('72.7.2 two writer processes: zero failed writes, exact usage, quota held', async () => {
      const config = { file: createFile(), timeout: 30_000, owners: 2, batches: 40, batchSize: 12, quota: 20_000 };
      const results = await runWriters(2, config);
      checkFile(config.file, {}, config, results);
      assert.ok(results.flat().includes('ok'));
    });

    it('72.7.3 four writer processes on an encrypted file: zero failed writes, exact usage, quota held', async () => {
      const key = crypto.randomBytes(32);
      const config = {
        file: createFile({ key }),
        key: key.toString('hex'),
        timeout: 30_000,
        owners: 2,
        batches: 30,
        batchSize: 12,
        quota: 25_000,
      };
      const results = await runWriters(4, config);
      checkFile(config.file, { key }, config, results);
      assert.ok(results.flat().includes('refused'), 'the quota was reached');
    });

    it('72.7.4 two storage objects on one connection, async quotas interleaved: exact usage, quota held', async () => {
      const db = new Database(path.join(dir, 'one.db'), { timeout: 5000 });
      try {
        db.pragma('journal_mode = wal');
        const QUOTA = 3000;
        const asked = [];
        const quota = (ownerId, bytes) =>
          new Promise((resolve) => {
            asked.push(bytes);
            setTimeout(() => resolve(bytes <= QUOTA), 1);
          });
        const a = createRelayStorage(db, { isOwnerWithinQuota: quota });
        const b = createRelayStorage(db, { isOwnerWithinQuota: quota });
        a.createTables();
        const writes = [];
        for (let i = 0; i < 40; i++) {
          writes.push(
            (i % 2 ? b : a).writeMessages(OWNER, [message(i * 2, 'x'.repeat(50)), message(i * 2 + 1, 'y'.repeat(30))]),
          );
        }
        const outcomes = await Promise.all(writes);
        const stored = db
          .prepare('select sum(length("change")) from evolu_message where "ownerId" = ?')
          .pluck()
          .get(OWNER);
        assert.equal(usage(db, OWNER).storedBytes, stored);
        assert.ok(stored <= QUOTA && stored > QUOTA - 80, `${stored} bytes`);
        assert.equal(outcomes.filter((r) => r.ok).length, Math.floor(QUOTA / 80));
        // Each batch was asked with what the batches before it stored: 80 bytes more each
        // time, until the quota refused (then the same total again).
        assert.deepEqual(
          asked,
          Array.from({ length: 40 }, (_, i) => Math.min(i + 1, 38) * 80),
        );
      } finally {
        db.close();
      }
    });

    it('72.7.5 deleteOwner while an async quota answer is pending: the batch is written after it, usage exact', async () => {
      let release;
      const gate = new Promise((resolve) => {
        release = resolve;
      });
      const slow = createRelayStorage(db, { isOwnerWithinQuota: () => gate.then(() => true) });
      storage.writeMessages(OWNER, [message(1, 'aaaa'), message(2, 'bbbb')]);
      const pending = slow.writeMessages(OWNER, [message(2, 'bbbb'), message(3, 'cc')]);
      storage.deleteOwner(OWNER);
      release();
      assert.deepEqual(await pending, { ok: true });
      const rows = db
        .prepare('select "timestamp", "change" from evolu_message where "ownerId" = ? order by "timestamp"')
        .raw()
        .all(OWNER);
      assert.deepEqual(rows, [
        [timestamp(2), Buffer.from('bbbb')],
        [timestamp(3), Buffer.from('cc')],
      ]);
      assert.deepEqual(usage(db, OWNER), { storedBytes: 6, firstTimestamp: timestamp(2), lastTimestamp: timestamp(3) });
      assert.equal(storage.getSize(OWNER), 2);
    });

    it('72.7.6 another connection writes while an async quota answer is pending: the batch is decided again', async () => {
      const file = createFile();
      const one = new Database(file, { timeout: 5000 });
      const two = new Database(file, { timeout: 5000 });
      try {
        let release;
        const gate = new Promise((resolve) => {
          release = resolve;
        });
        const asked = [];
        const slow = createRelayStorage(one, {
          isOwnerWithinQuota: (ownerId, bytes) => {
            asked.push(bytes);
            return gate.then(() => bytes <= 10);
          },
        });
        const pending = slow.writeMessages(OWNER, [message(1, 'aaaa'), message(2, 'bbbb')]);
        assert.deepEqual(createRelayStorage(two).writeMessages(OWNER, [message(3, 'ccccc')]), { ok: true });
        release();
        assert.deepEqual(await pending, { ok: false, error: { type: 'StorageQuotaError', ownerId: OWNER } });
        assert.deepEqual(asked, [8, 13], 'asked again with the bytes stored meanwhile');
        assert.deepEqual(usage(one, OWNER), {
          storedBytes: 5,
          firstTimestamp: timestamp(3),
          lastTimestamp: timestamp(3),
        });
        assert.equal(count(one, 'evolu_message', OWNER), 1);
      } finally {
        one.close();
        two.close();
      }
    });
  });

  describe('72.8 iterate streams', () => {
    const BIG = Buffer.alloc(16, 0x0c);
    const N = 20_000;

    /** `db` whose statements count the rows they hand to JavaScript. */
    function counting(real) {
      const stats = { rows: 0, largest: 0 };
      const note = (n) => {
        stats.rows += n;
        stats.largest = Math.max(stats.largest, n);
      };
      const wrap = (stmt) =>
        new Proxy(stmt, {
          get(target, prop) {
            const value = Reflect.get(target, prop, target);
            if (prop === 'all')
              return (...args) => {
                const rows = target.all(...args);
                note(rows.length);
                return rows;
              };
            if (prop === 'get')
              return (...args) => {
                const row = target.get(...args);
                note(row === undefined ? 0 : 1);
                return row;
              };
            if (prop === 'iterate')
              return (...args) => {
                const it = target.iterate(...args);
                return (function* count() {
                  for (const row of it) {
                    note(1);
                    yield row;
                  }
                })();
              };
            return typeof value === 'function' ? value.bind(target) : value;
          },
        });
      const db = new Proxy(real, {
        get(target, prop) {
          if (prop === 'prepare') return (sql) => wrap(target.prepare(sql));
          const value = Reflect.get(target, prop, target);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      return {
        db,
        stats,
        reset() {
          stats.rows = 0;
          stats.largest = 0;
        },
      };
    }

    function fill() {
      db.prepare(
        `with recursive n(i) as (select 0 union all select i + 1 from n where i < ${N - 1})
				select count(evolu_skiplist_insert(?, unhex(printf('%012X0000%016X', 1000 + i, 1)), null, 'append')) from n`,
      )
        .pluck()
        .get(BIG);
      assert.equal(storage.getSize(BIG), N);
    }
    const millisOf = (t) => t.readUIntBE(0, 6);

    it('72.8.1 a callback that stops after two timestamps costs a few rows, not the range', () => {
      fill();
      const counted = counting(db);
      const relay = createRelayStorage(counted.db);
      const seen = [];
      relay.iterate(BIG, 0, N, (t, i) => {
        seen.push([i, millisOf(t)]);
        return i < 1;
      });
      assert.deepEqual(seen, [
        [0, 1000],
        [1, 1001],
      ]);
      assert.ok(counted.stats.rows <= 64, `${counted.stats.rows} rows read for 2`);
      counted.reset();
      relay.iterate(BIG, 12_345, N, () => false);
      assert.ok(counted.stats.rows <= 1, `${counted.stats.rows} rows read for 1`);
    });

    it('72.8.2 the whole range: every timestamp once, in order, at most 1,024 rows at a time', () => {
      fill();
      const counted = counting(db);
      const relay = createRelayStorage(counted.db);
      let next = 0;
      relay.iterate(BIG, 0, N, (t, i) => {
        assert.equal(i, next);
        assert.equal(millisOf(t), 1000 + i);
        next++;
      });
      assert.equal(next, N);
      assert.equal(counted.stats.rows, N, 'each row read once');
      assert.ok(counted.stats.largest <= 1024, `largest read: ${counted.stats.largest} rows`);
      counted.reset();
      const middle = [];
      relay.iterate(BIG, 10_000, 10_100, (t, i) => {
        middle.push(i);
      });
      assert.deepEqual(
        middle,
        Array.from({ length: 100 }, (_, k) => 10_000 + k),
      );
      assert.equal(counted.stats.rows, 100);
    });
  });

  describe('72.9 untrusted input at the boundary', () => {
    it('72.9.1 write keys are 16 bytes: 0, 15, 17 bytes and 16 MiB are refused and nothing is stored', () => {
      for (const key of [
        Buffer.alloc(0),
        Buffer.alloc(15, 1),
        Buffer.alloc(17, 1),
        Buffer.alloc(16 * 1024 * 1024, 1),
        'a'.repeat(16),
        null,
      ]) {
        throwsExactly(
          () => storage.validateWriteKey(OWNER, key),
          TypeError,
          'Expected writeKey to be a 16-byte Uint8Array',
        );
        throwsExactly(() => storage.setWriteKey(OWNER, key), TypeError, 'Expected writeKey to be a 16-byte Uint8Array');
      }
      assert.equal(count(db, 'evolu_writeKey', OWNER), 0);
      assert.equal(storage.validateWriteKey(OWNER, new Uint8Array(16)), true);
    });

    it('72.9.2 timestamps with the reserved millis 2^48 − 1 are refused everywhere', () => {
      const reserved = Buffer.concat([Buffer.alloc(6, 0xff), Buffer.alloc(10)]);
      const infinite = Buffer.alloc(16, 0xff);
      const largest = Buffer.concat([Buffer.alloc(5, 0xff), Buffer.from([0xfe]), Buffer.alloc(10, 0xff)]);
      const refused =
        /^Expected (each message timestamp|timestamp|upperBound) to have millis below 2\^48 - 1 \(the reserved value\)$/;
      for (const t of [reserved, infinite]) {
        throwsExactly(
          () => storage.writeMessages(OWNER, [message(1), { timestamp: t, change: Buffer.from('x') }]),
          TypeError,
          refused,
        );
        throwsExactly(() => storage.readDbChange(OWNER, t), TypeError, refused);
        throwsExactly(() => storage.findLowerBound(OWNER, 0, 0, t), TypeError, refused);
        throwsExactly(() => storage.fingerprintRanges(OWNER, [], t), TypeError, refused);
      }
      throwsExactly(
        () =>
          storage.writeMessages(OWNER, [
            { timestamp: { millis: 2 ** 48 - 1, counter: 0, nodeId: '0000000000000001' }, change: Buffer.from('x') },
          ]),
        TypeError,
        'Expected each message timestamp to be a 16-byte Uint8Array or an Evolu Timestamp',
      );
      assert.equal(count(db, 'evolu_message', OWNER), 0);
      assert.equal(count(db, 'evolu_timestamp', OWNER), 0);
      assert.deepEqual(
        storage.writeMessages(OWNER, [
          { timestamp: largest, change: Buffer.from('y') },
          { timestamp: { millis: 2 ** 48 - 2, counter: 1, nodeId: '0000000000000001' }, change: Buffer.from('z') },
        ]),
        { ok: true },
      );
      assert.equal(storage.getSize(OWNER), 2);
    });

    it('72.9.3 numbers must be integers: NaN, fractions, infinities, strings and unsafe integers are refused', () => {
      storage.writeMessages(OWNER, [message(1), message(2), message(3)]);
      for (const bad of [NaN, 1.5, -1, Infinity, -Infinity, '1', 2 ** 53, 1n, null, undefined]) {
        throwsExactly(
          () => storage.fingerprint(OWNER, bad, 3),
          TypeError,
          'Expected begin to be a non-negative integer',
        );
        throwsExactly(() => storage.fingerprint(OWNER, 0, bad), TypeError, 'Expected end to be a non-negative integer');
        throwsExactly(
          () => storage.findLowerBound(OWNER, bad, 3, null),
          TypeError,
          'Expected begin to be a non-negative integer',
        );
        throwsExactly(
          () => storage.iterate(OWNER, 0, bad, () => {}),
          TypeError,
          'Expected end to be a non-negative integer',
        );
        throwsExactly(
          () => storage.fingerprintRanges(OWNER, [1, bad]),
          TypeError,
          'Expected every bucket to be a non-negative integer',
        );
        for (const timestamp of [
          { millis: bad, counter: 0, nodeId: '0000000000000001' },
          { millis: 5, counter: bad, nodeId: '0000000000000001' },
        ]) {
          throwsExactly(
            () => storage.writeMessages(OWNER, [{ timestamp, change: Buffer.from('x') }]),
            TypeError,
            'Expected each message timestamp to be a 16-byte Uint8Array or an Evolu Timestamp',
          );
        }
      }
      assert.equal(count(db, 'evolu_message', OWNER), 3);
    });

    it('72.9.4 buckets are checked and sent as given: no toJSON, getter or hole sends others', () => {
      for (let i = 1; i <= 40; i++) storage.writeMessages(OWNER, [message(i * 10)]);
      const expected = storage.fingerprintRanges(OWNER, [10, 40]);
      const withToJSON = [10, 40];
      withToJSON.toJSON = () => [1, 2, 3, 40];
      assert.deepEqual(storage.fingerprintRanges(OWNER, withToJSON), expected);
      let reads = 0;
      const changing = new Proxy([10, 40], {
        get: (target, prop) => (prop === '0' ? (reads++ === 0 ? 10 : 39) : Reflect.get(target, prop)),
      });
      assert.deepEqual(storage.fingerprintRanges(OWNER, changing), expected);
      assert.equal(reads, 1, 'each bucket read once');
      throwsExactly(
        () => storage.fingerprintRanges(OWNER, [10, , 40]),
        TypeError,
        'Expected every bucket to be a non-negative integer',
      );
    });

    it('72.9.5 a message is read once: a getter can’t pass the checks with one value and store another', () => {
      let changeReads = 0;
      let millisReads = 0;
      const tricky = {
        get timestamp() {
          return {
            get millis() {
              return millisReads++ === 0 ? 5 : 2 ** 48 - 1;
            },
            counter: 0,
            nodeId: '0000000000000001',
          };
        },
        get change() {
          return changeReads++ === 0 ? Buffer.from('bytes') : 'not bytes';
        },
      };
      assert.deepEqual(storage.writeMessages(OWNER, [tricky]), { ok: true });
      assert.deepEqual(storage.readDbChange(OWNER, timestamp(5)), Buffer.from('bytes'));
      assert.equal(usage(db, OWNER).storedBytes, 5);
      assert.deepEqual([changeReads, millisReads], [1, 1]);
      // The timestamp bytes are copied: changing the caller's array after the call changes nothing.
      const t = timestamp(9);
      const pending = createRelayStorage(db, { isOwnerWithinQuota: async () => true }).writeMessages(OWNER, [
        { timestamp: t, change: Buffer.from('q') },
      ]);
      t.fill(0xff);
      return pending.then((result) => {
        assert.deepEqual(result, { ok: true });
        assert.deepEqual(storage.readDbChange(OWNER, timestamp(9)), Buffer.from('q'));
      });
    });
  });

  describe('72.10 drawLevel', () => {
    it('72.10.1 called once per new timestamp, in arrival order, and its level is the one stored', async () => {
      const levels = [3, 1, 10, 2];
      const drawn = [];
      const leveled = createRelayStorage(db, {
        isOwnerWithinQuota: async () => true,
        drawLevel: () => {
          drawn.push(drawn.length);
          return levels[drawn.length - 1];
        },
      });
      // 30 is stored already, 20 comes twice: three new timestamps in the first batch.
      assert.deepEqual(storage.writeMessages(OWNER, [message(30)]), { ok: true });
      const batch = [message(20), message(30), message(10), message(20, 'again'), message(40)];
      assert.deepEqual(await leveled.writeMessages(OWNER, batch), { ok: true });
      assert.deepEqual(await leveled.writeMessages(OWNER, [message(5)]), { ok: true });
      assert.equal(drawn.length, 4, 'no level for duplicates, nor for the first (async) quota pass');
      const stored = db.prepare('select t, l from evolu_timestamp where "ownerId" = ? order by rowid').all(OWNER);
      assert.deepEqual(
        stored.slice(1).map((r) => [r.t.readUIntBE(0, 6), r.l]),
        [
          [20, 3],
          [10, 1],
          [40, 10],
          [5, 2],
        ],
      );
      throwsExactly(() => createRelayStorage(db, { drawLevel: 3 }), TypeError, 'Expected drawLevel to be a function');
    });
  });
});

/** XOR of SHA-256[0..12] of each timestamp: the fingerprint of the whole set (§2.3). */
function xorOfHashes(timestamps) {
  const out = Buffer.alloc(12);
  for (const t of timestamps) {
    const h = crypto.createHash('sha256').update(t).digest();
    for (let i = 0; i < 12; i++) out[i] ^= h[i];
  }
  return out;
}

function xor(a, b) {
  const out = Buffer.alloc(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i] ^ b[i];
  return out;
}

/** A shuffle that is the same on every run (seeded by the length). */
const shuffleDeterministic = (items) => shuffle(items, seeded(items.length));
