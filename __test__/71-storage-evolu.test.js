'use strict';
// Evolu's real TypeScript storage (the `@evolu/common` devDependency, unchanged) against
// cipherlite's SQL functions: Evolu's createSqlite runs on cipherlite as its
// better-sqlite3 driver, its level draws are fed through its random source, and the rows
// it writes must equal, rowid for rowid, the rows `evolu_skiplist_insert` writes for the
// same (timestamp, level, strategy) calls. Its reads must agree with the functions' reads
// of the same rows. (Loading details for Node 20: benchmark/lib/evolu.js.)
const { describe, it, before } = require('node:test');
const assert = require('node:assert/strict');
const Database = require('..');
const { loadEvolu, openEvoluSqlite, levelsRandom } = require('../benchmark/lib/evolu');
// docs/evolu-storage.md §1.1's DDL (SCHEMA) and §8's V1 vectors: testdata/evolu/, shared with the Rust tests.
const { SCHEMA, V1_OWNER, V1_NODE, V1_LEVELS, V1_DIGEST } = require('./_evolu-fixtures');
const { seeded, shuffle, drawLevel } = require('./_random');

let evolu;
before(async () => {
  evolu = await loadEvolu();
});

/** `TimestampBytes`: 6-byte big-endian millis, 2-byte counter, 8-byte node id. */
function timestamp(millis, counter, node) {
  const t = Buffer.alloc(16);
  t.writeUIntBE(millis, 0, 6);
  t.writeUInt16BE(counter, 6);
  t.writeBigUInt64BE(node, 8);
  return new Uint8Array(t);
}

const ROWS = 'select rowid, ownerId, t, l, h1, h2, c from evolu_timestamp order by rowid';

/**
 * A sequence of insert calls for `owners`, as Evolu's relay makes them: per owner the
 * strategy comes from the running first/last bounds (getTimestampInsertStrategy, bounds
 * starting at the first timestamp); the owners' calls interleave. Every call has its
 * own level, duplicates included (Evolu draws one on every call).
 */
function makeCalls({ owners, n, order, seed, uniformLevels }) {
  const random = seeded(seed);
  const { getTimestampInsertStrategy } = evolu.localFirst;
  const perOwner = owners.map((owner) => {
    const keys = new Map();
    while (keys.size < n) {
      const t = timestamp(
        Math.floor(random() * 5 * n),
        Math.floor(random() * 4),
        BigInt(Math.floor(random() * 3)) * 0x0123456789abcdefn,
      );
      keys.set(Buffer.from(t).toString('hex'), t);
    }
    let ts = [...keys.values()].sort(Buffer.compare);
    if (order === 'descending') ts.reverse();
    if (order === 'shuffled') ts = shuffle(ts, random);
    const sequence = [];
    ts.forEach((t, i) => {
      sequence.push(t);
      if (i % 7 === 2) sequence.push(ts[Math.floor(random() * (i + 1))]); // a duplicate
    });
    let first = sequence[0];
    let last = sequence[0];
    return sequence.map((t) => {
      let strategy;
      [strategy, first, last] = getTimestampInsertStrategy(t, first, last);
      return { owner, t, strategy, level: drawLevel(random, uniformLevels) };
    });
  });
  const calls = [];
  const at = perOwner.map(() => 0);
  while (perOwner.some((s, o) => at[o] < s.length)) {
    const o = Math.floor(random() * owners.length);
    if (at[o] < perOwner[o].length) calls.push(perOwner[o][at[o]++]);
  }
  return calls;
}

/** Runs `calls` through Evolu's storage on cipherlite; returns the rows and results. */
async function throughEvolu(calls) {
  const random = levelsRandom(calls.map((c) => c.level));
  const e = await openEvoluSqlite(Database, { random });
  const { createBaseSqliteStorageTables, createBaseSqliteStorage } = evolu.localFirst;
  createBaseSqliteStorageTables({ sqlite: e.sqlite });
  const storage = createBaseSqliteStorage({ sqlite: e.sqlite, random });
  const results = [];
  e.sqlite.transaction(() => {
    for (const c of calls) results.push(storage.insertTimestamp(c.owner, c.t, c.strategy));
  });
  assert.ok(e.db instanceof Database, 'Evolu ran on cipherlite');
  return { e, storage, results, rows: e.db.prepare(ROWS).all() };
}

/** Runs the same calls through evolu_skiplist_insert on a fresh database. */
function throughFunctions(calls) {
  const db = new Database(':memory:');
  db.exec(SCHEMA);
  const stmt = db.prepare('select evolu_skiplist_insert(?, ?, ?, ?)').pluck();
  const results = db.transaction(() => calls.map((c) => stmt.get(c.owner, c.t, c.level, c.strategy) === 1))();
  return { db, results, rows: db.prepare(ROWS).all() };
}

/** Evolu's reads and the functions' reads of the same rows (Evolu's database). */
function compareReads(storage, db, owner) {
  const { computeBalancedBuckets } = evolu.common;
  const { InfiniteUpperBound } = evolu.localFirst;
  const get = (sql, ...args) =>
    db
      .prepare(`select ${sql}`)
      .pluck()
      .get(...args);
  const size = storage.getSize(owner);
  assert.equal(get('evolu_skiplist_size(?)', owner), size);
  const buckets = computeBalancedBuckets(size);
  if (buckets.ok) {
    const theirs = storage.fingerprintRanges(owner, buckets.value);
    const ours = db
      .prepare('select upper_bound, fingerprint from evolu_fingerprint_ranges(?, ?)')
      .all(owner, JSON.stringify(buckets.value));
    assert.equal(ours.length, theirs.length);
    theirs.forEach((range, i) => {
      assert.deepEqual(ours[i].fingerprint, Buffer.from(range.fingerprint), `bucket ${i}`);
      if (range.upperBound === InfiniteUpperBound) assert.equal(ours[i].upper_bound, null);
      else assert.deepEqual(ours[i].upper_bound, Buffer.from(range.upperBound), `bucket ${i}`);
    });
  }
  const random = seeded(size);
  for (let k = 0; k < 25; k++) {
    const a = Math.floor(random() * (size + 1));
    const b = Math.floor(random() * (size + 1));
    const [begin, end] = a <= b ? [a, b] : [b, a];
    assert.deepEqual(
      get('evolu_skiplist_fingerprint(?, ?, ?)', owner, begin, end),
      Buffer.from(storage.fingerprint(owner, begin, end)),
      `fingerprint(${begin}, ${end})`,
    );
    if (begin < size) {
      let first;
      storage.iterate(owner, begin, begin + 1, (t) => {
        first = t;
        return false;
      });
      const t = get('evolu_skiplist_at(?, ?)', owner, begin);
      assert.deepEqual(t, Buffer.from(first), `at(${begin})`);
      const probe = new Uint8Array(t);
      probe[15] ^= 1; // just above or below t
      assert.equal(
        get('evolu_skiplist_lower_bound(?, ?, ?, ?)', owner, begin, end, probe),
        storage.findLowerBound(owner, begin, end, probe),
        `findLowerBound(${begin}, ${end})`,
      );
    }
    assert.equal(
      get('evolu_skiplist_lower_bound(?, ?, ?, ?)', owner, begin, end, null),
      storage.findLowerBound(owner, begin, end, InfiniteUpperBound),
    );
  }
}

describe('71 Evolu’s TypeScript storage on cipherlite vs evolu_skiplist_insert', () => {
  it('71.1 @evolu/common is the pinned version and exposes the storage', () => {
    // Its "exports" hide package.json from require(): read the installed file.
    const pkg = JSON.parse(
      require('node:fs').readFileSync(
        require('node:path').join(__dirname, '..', 'node_modules', '@evolu', 'common', 'package.json'),
        'utf8',
      ),
    );
    assert.equal(pkg.version, require('../package.json').devDependencies['@evolu/common']);
    for (const name of [
      'createBaseSqliteStorage',
      'createBaseSqliteStorageTables',
      'createRelaySqliteStorage',
      'createRelayStorageTables',
      'getTimestampInsertStrategy',
    ]) {
      assert.equal(typeof evolu.localFirst[name], 'function', name);
    }
  });

  it('71.2 V1 (docs/evolu-storage.md §8): Evolu writes the documented rows on cipherlite, and so do the functions', async () => {
    const owner = new Uint8Array(V1_OWNER);
    const calls = V1_LEVELS.map((level, i) => ({
      owner,
      t: timestamp(i + 1, 0, BigInt(`0x${V1_NODE}`)),
      strategy: i === 0 ? 'insert' : 'append',
      level,
    }));
    const theirs = await throughEvolu(calls);
    const ours = throughFunctions(calls);
    try {
      assert.deepEqual(ours.rows, theirs.rows);
      const dump = theirs.rows
        .map((r) => `${Buffer.from(r.t).toString('hex')},${r.l},${r.h1},${r.h2},${r.c}\n`)
        .join('');
      assert.equal(require('node:crypto').createHash('sha256').update(dump).digest('hex'), V1_DIGEST);
      compareReads(theirs.storage, theirs.e.db, owner);
    } finally {
      ours.db.close();
      await theirs.e.dispose();
    }
  });

  const cases = [];
  for (const order of ['ascending', 'descending', 'shuffled']) {
    for (const uniformLevels of [false, true]) cases.push({ order, uniformLevels });
  }
  cases.forEach(({ order, uniformLevels }, i) => {
    const n = uniformLevels ? 300 : 1500;
    it(`71.3.${i + 1} ${n} timestamps × 2 owners, ${order}, ${uniformLevels ? 'uniform levels 1–10' : "Evolu's level rule"}, with duplicates: same rows, rowids and reads`, async () => {
      const owners = [new Uint8Array(16).fill(0xa1), new Uint8Array(16).fill(0xb2)];
      const calls = makeCalls({ owners, n, order, seed: 100 + i, uniformLevels });
      const theirs = await throughEvolu(calls);
      const ours = throughFunctions(calls);
      try {
        assert.equal(theirs.rows.length, 2 * n);
        assert.deepEqual(ours.results, theirs.results, 'the same calls inserted (true) or found a duplicate');
        assert.deepEqual(ours.rows, theirs.rows);
        for (const owner of owners) compareReads(theirs.storage, theirs.e.db, owner);
      } finally {
        ours.db.close();
        await theirs.e.dispose();
      }
    });
  });
});
