'use strict';
// Evolu's sync storage as SQL functions (docs/evolu-storage.md): the rows they write and the
// values they read, called from JS as an application calls them (numbers bind as REAL),
// checked against §8's vectors and against an independent JS model of §3.1.
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const Database = require('..');

// §1.1's DDL (SCHEMA) and §8's V1 vectors: testdata/evolu/, shared with the Rust tests.
const { SCHEMA, V1_OWNER, V1_NODE, V1_LEVELS, V1_ROWS, V1_DIGEST } = require('./_evolu-fixtures');
const { seeded, shuffle, drawLevel } = require('./_random');

/** `TimestampBytes`: 6-byte big-endian millis, 2-byte counter, 8-byte node id (hex). */
function timestamp(millis, counter = 0, node = '0000000000000000') {
  const t = Buffer.alloc(16);
  t.writeUIntBE(millis, 0, 6);
  t.writeUInt16BE(counter, 6);
  Buffer.from(node, 'hex').copy(t, 8);
  return t;
}

const hex = (bytes) => Buffer.from(bytes).toString('hex');

function openDb() {
  const db = new Database(':memory:');
  db.exec(SCHEMA);
  return db;
}

/** §8's canonical dump: `<t hex>,<l>,<h1>,<h2>,<c>\n` per row in order of t. */
function dump(db, owner) {
  return db
    .prepare('select t, l, h1, h2, c from evolu_timestamp where ownerId = ? order by t')
    .all(owner)
    .map((r) => `${hex(r.t)},${r.l},${r.h1},${r.h2},${r.c}\n`)
    .join('');
}

const sha256 = (text) => crypto.createHash('sha256').update(text).digest('hex');

// ---------------------------------------------------------------------------------------
// §8 V1

const v1t = (millis) => timestamp(millis, 0, V1_NODE);

function assertV1(db, owner = V1_OWNER) {
  const rows = db
    .prepare('select ownerId, t, l, h1, h2, c from evolu_timestamp where ownerId = ? order by t')
    .all(owner);
  assert.deepEqual(
    rows,
    V1_ROWS.map(([t, l, h1, h2, c]) => ({
      ownerId: Buffer.from(owner),
      t: Buffer.from(t, 'hex'),
      l,
      h1,
      h2,
      c,
    })),
  );
  assert.equal(sha256(dump(db, owner)), V1_DIGEST);
}

/** Evolu's relay strategy for a sequence of timestamps (running first/last bounds). */
function relayStrategies(ts) {
  let first = ts[0];
  let last = ts[0];
  return ts.map((t) => {
    if (Buffer.compare(t, last) > 0) {
      last = t;
      return 'append';
    }
    if (Buffer.compare(t, first) < 0) {
      first = t;
      return 'prepend';
    }
    return 'insert';
  });
}

describe('70 storage SQL functions', () => {
  let db;
  beforeEach(() => {
    db = openDb();
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  const insert = (owner, t, level, strategy) => {
    // Omitted arguments are left out of the call (level before strategy).
    const args = [owner, t];
    if (level !== undefined || strategy !== undefined) args.push(level === undefined ? null : level);
    if (strategy !== undefined) args.push(strategy);
    const params = args.map(() => '?').join(', ');
    return db
      .prepare(`select evolu_skiplist_insert(${params})`)
      .pluck()
      .get(...args);
  };
  const insertV1 = (order, strategies) => {
    const stmt = db.prepare('select evolu_skiplist_insert(?, ?, ?, ?)').pluck();
    order.forEach((millis, i) => {
      assert.equal(stmt.get(V1_OWNER, v1t(millis), V1_LEVELS[millis - 1], strategies ? strategies[i] : null), 1);
    });
  };
  const ascending = V1_LEVELS.map((_, i) => i + 1);

  describe('70.1 V1 rows', () => {
    it('70.1.1 appended with the append hint: the exact rows and digest', () => {
      insertV1(
        ascending,
        ascending.map(() => 'append'),
      );
      assertV1(db);
    });

    it('70.1.2 prepended, shuffled, relay-style and without hints: the same rows', () => {
      const descending = [...ascending].reverse();
      insertV1(
        descending,
        descending.map(() => 'prepend'),
      );
      assertV1(db);
      for (let round = 0; round < 10; round++) {
        db.exec('delete from evolu_timestamp');
        const order = shuffle([...ascending], seeded(round + 1));
        insertV1(order, round % 2 ? null : relayStrategies(order.map(v1t)));
        assertV1(db);
      }
    });

    it('70.1.3 JS numbers (REAL), BigInts and Uint8Arrays are accepted', () => {
      const stmt = db.prepare('select evolu_skiplist_insert(?, ?, ?)').pluck();
      ascending.forEach((millis) => {
        const level = millis % 2 ? V1_LEVELS[millis - 1] : BigInt(V1_LEVELS[millis - 1]);
        assert.equal(stmt.get(new Uint8Array(V1_OWNER), new Uint8Array(v1t(millis)), level), 1);
      });
      assertV1(db);
      assert.equal(db.prepare('select typeof(?) as t').pluck().get(3), 'real', 'numbers really bind as REAL');
    });
  });

  describe('70.2 reads', () => {
    beforeEach(() => insertV1(ascending, null));

    it('70.2.1 size, at, fingerprint and lower bound give §8 V1 values', () => {
      const get = (sql, ...args) =>
        db
          .prepare(`select ${sql}`)
          .pluck()
          .get(...args);
      assert.equal(get('evolu_skiplist_size(?)', V1_OWNER), 16);
      assert.equal(get('evolu_skiplist_size(?)', Buffer.alloc(16)), 0);
      assert.equal(hex(get('evolu_skiplist_fingerprint(?, ?, ?)', V1_OWNER, 0, 16)), '08ae59dd63487817506bee46');
      assert.equal(hex(get('evolu_skiplist_fingerprint(?, ?, ?)', V1_OWNER, 3, 11)), '0edec352a35475dc56e9460c');
      assert.equal(hex(get('evolu_skiplist_fingerprint(?, ?, ?)', V1_OWNER, 5, 5)), '000000000000000000000000');
      const lowerBound = (t) => get('evolu_skiplist_lower_bound(?, ?, ?, ?)', V1_OWNER, 0, 16, t);
      assert.equal(lowerBound(timestamp(5, 1)), 5);
      assert.equal(lowerBound(v1t(7)), 6);
      assert.equal(lowerBound(timestamp(100)), 16);
      assert.equal(lowerBound(null), 16);
      for (let i = 0; i < 16; i++) {
        assert.deepEqual(get('evolu_skiplist_at(?, ?)', V1_OWNER, i), v1t(i + 1));
      }
      assert.equal(hex(get('evolu_skiplist_at(?, ?)', V1_OWNER, 10)), '00000000000b000068a2a7bf3f85a096');
    });

    it('70.2.2 evolu_fingerprint_ranges: one row per bucket, NULL upper bound last', () => {
      const rows = db
        .prepare('select upper_bound, fingerprint from evolu_fingerprint_ranges(?, ?)')
        .all(V1_OWNER, JSON.stringify([4, 8, 12, 16]));
      assert.deepEqual(rows, [
        { upper_bound: v1t(5), fingerprint: Buffer.from('4e81acff0bb8f5cbf8bd0eaa', 'hex') },
        { upper_bound: v1t(9), fingerprint: Buffer.from('f0718c348b7a8436f46cdc86', 'hex') },
        { upper_bound: v1t(13), fingerprint: Buffer.from('42e0237298754f7bd6b6fb74', 'hex') },
        { upper_bound: null, fingerprint: Buffer.from('f4be5a647bff46918a0cc71e', 'hex') },
      ]);
      assert.deepEqual(db.prepare('select * from evolu_fingerprint_ranges(?, ?)').all(V1_OWNER, '[]'), []);
    });
  });

  describe('70.3 errors are SqliteErrors', () => {
    beforeEach(() => insertV1(ascending, null));
    const throwsSqlite = (fn, code, message) =>
      assert.throws(fn, (err) => {
        assert.ok(err instanceof Database.SqliteError, `${err && err.name}: ${err && err.message}`);
        assert.equal(err.code, code);
        assert.equal(err.message, message);
        return true;
      });
    const get =
      (sql, ...args) =>
      () =>
        db
          .prepare(`select ${sql}`)
          .pluck()
          .get(...args);

    it('70.3.1 bad arguments name the argument, never its value', () => {
      throwsSqlite(
        get('evolu_skiplist_insert(?, ?, ?)', V1_OWNER, v1t(1), 3.5),
        'SQLITE_ERROR',
        'evolu_skiplist_insert: argument 3 (level) must be an integer from 1 to 10, or NULL to draw one',
      );
      throwsSqlite(
        get('evolu_skiplist_insert(?, ?, ?)', V1_OWNER, v1t(1), 11),
        'SQLITE_ERROR',
        'evolu_skiplist_insert: argument 3 (level) must be an integer from 1 to 10, or NULL to draw one',
      );
      throwsSqlite(
        get('evolu_skiplist_insert(?, ?)', Buffer.alloc(15), v1t(1)),
        'SQLITE_ERROR',
        'evolu_skiplist_insert: argument 1 (ownerId) must be a 16-byte blob',
      );
      throwsSqlite(
        get('evolu_skiplist_insert(?, ?)', V1_OWNER, hex(v1t(1))),
        'SQLITE_ERROR',
        'evolu_skiplist_insert: argument 2 (t) must be a 16-byte blob',
      );
      throwsSqlite(
        get('evolu_skiplist_insert(?, ?, ?, ?)', V1_OWNER, v1t(1), 1, 'sideways'),
        'SQLITE_ERROR',
        "evolu_skiplist_insert: argument 4 (strategy) must be 'append', 'prepend', 'insert' or NULL",
      );
      throwsSqlite(
        get('evolu_skiplist_at(?, ?)', V1_OWNER, 1.5),
        'SQLITE_ERROR',
        'evolu_skiplist_at: argument 2 (index) must be a non-negative integer',
      );
      throwsSqlite(
        get('evolu_skiplist_fingerprint(?, ?, ?)', V1_OWNER, -1, 3),
        'SQLITE_ERROR',
        'evolu_skiplist_fingerprint: argument 2 (begin) must be a non-negative integer',
      );
      throwsSqlite(
        () => db.prepare('select * from evolu_fingerprint_ranges(?, ?)').all(V1_OWNER, '[4, 8.5]'),
        'SQLITE_ERROR',
        'evolu_fingerprint_ranges: argument 2 (buckets) must be a JSON array of non-negative integers',
      );
    });

    it('70.3.2 out-of-range reads fail instead of hanging', () => {
      throwsSqlite(
        get('evolu_skiplist_at(?, ?)', V1_OWNER, 16),
        'SQLITE_ERROR',
        'evolu_skiplist_at: the index is out of range (index >= size)',
      );
      throwsSqlite(
        get('evolu_skiplist_fingerprint(?, ?, ?)', V1_OWNER, 0, 17),
        'SQLITE_ERROR',
        'evolu_skiplist_fingerprint: the range end is past the size of the skiplist',
      );
      throwsSqlite(
        get('evolu_skiplist_fingerprint(?, ?, ?)', V1_OWNER, 9, 8),
        'SQLITE_ERROR',
        'evolu_skiplist_fingerprint: the range begin is after its end',
      );
      throwsSqlite(
        () => db.prepare('select * from evolu_fingerprint_ranges(?, ?)').all(V1_OWNER, '[8, 32]'),
        'SQLITE_ERROR',
        'evolu_fingerprint_ranges: a bucket boundary is past the size of the skiplist',
      );
    });

    it('70.3.3 a missing table, a read-only connection', () => {
      const bare = new Database(':memory:');
      try {
        throwsSqlite(
          () => bare.prepare('select evolu_skiplist_size(?)').get(V1_OWNER),
          'SQLITE_ERROR',
          'evolu_skiplist_size: no such table: evolu_timestamp',
        );
      } finally {
        bare.close();
      }
      db.pragma('query_only = 1');
      throwsSqlite(
        get('evolu_skiplist_insert(?, ?, 1)', V1_OWNER, timestamp(99)),
        'SQLITE_READONLY',
        'evolu_skiplist_insert: attempt to write a readonly database',
      );
    });
  });

  describe('70.6 untrusted arguments: NaN, exact bucket values, the reserved millis', () => {
    const throwsSqlite = (fn, message) =>
      assert.throws(fn, (err) => {
        assert.ok(err instanceof Database.SqliteError, `${err && err.name}: ${err && err.message}`);
        assert.equal(err.code, 'SQLITE_ERROR');
        assert.equal(err.message, message);
        return true;
      });
    const get =
      (sql, ...args) =>
      () =>
        db
          .prepare(`select ${sql}`)
          .pluck()
          .get(...args);
    const rows = () => db.prepare('select count(*) from evolu_timestamp').pluck().get();

    it('70.6.1 a NaN level is refused, not taken for NULL (which draws a random level)', () => {
      throwsSqlite(
        get('evolu_skiplist_insert(?, ?, ?)', V1_OWNER, v1t(1), NaN),
        'evolu_skiplist_insert: argument 3 (level) must be an integer from 1 to 10, or NULL to draw one, not NaN',
      );
      throwsSqlite(
        get('evolu_skiplist_insert(?, ?, ?, ?)', V1_OWNER, v1t(1), NaN, 'append'),
        'evolu_skiplist_insert: argument 3 (level) must be an integer from 1 to 10, or NULL to draw one, not NaN',
      );
      throwsSqlite(
        get('evolu_skiplist_insert(?, ?, ?, ?)', V1_OWNER, v1t(1), 1, NaN),
        "evolu_skiplist_insert: argument 4 (strategy) must be 'append', 'prepend', 'insert' or NULL, not NaN",
      );
      assert.equal(rows(), 0, 'nothing written');
      // NULL itself still draws a level, and a NaN is still NULL to the rest of SQL.
      assert.equal(get('evolu_skiplist_insert(?, ?, ?, ?)', V1_OWNER, v1t(1), null, null)(), 1);
      assert.deepEqual(db.prepare('select ?, typeof(?), ? is null, coalesce(?, 7)').raw().get(NaN, NaN, NaN, NaN), [
        null,
        'null',
        1,
        7,
      ]);
    });

    it('70.6.2 a NaN bound is refused, not taken for NULL (the infinite bound); NaN ranks are refused', () => {
      insertV1(ascending, null);
      throwsSqlite(
        get('evolu_skiplist_lower_bound(?, ?, ?, ?)', V1_OWNER, 0, 16, NaN),
        'evolu_skiplist_lower_bound: argument 4 (t) must be a 16-byte blob, not NaN',
      );
      assert.equal(get('evolu_skiplist_lower_bound(?, ?, ?, ?)', V1_OWNER, 0, 16, null)(), 16);
      assert.equal(get('evolu_skiplist_lower_bound(?, ?, ?, ?)', V1_OWNER, 0, 16, Buffer.alloc(16, 0xff))(), 16);
      throwsSqlite(
        get('evolu_skiplist_at(?, ?)', V1_OWNER, NaN),
        'evolu_skiplist_at: argument 2 (index) must be a non-negative integer, not NaN',
      );
      throwsSqlite(
        get('evolu_skiplist_fingerprint(?, ?, ?)', V1_OWNER, 0, NaN),
        'evolu_skiplist_fingerprint: argument 3 (end) must be a non-negative integer, not NaN',
      );
    });

    it('70.6.3 bucket JSON is read by its exact decimal value, not rounded through a float', () => {
      insertV1(ascending, null);
      const ranges = (json) =>
        db.prepare('select fingerprint from evolu_fingerprint_ranges(?, ?)').pluck().all(V1_OWNER, json);
      const refused = 'evolu_fingerprint_ranges: argument 2 (buckets) must be a JSON array of non-negative integers';
      for (const json of [
        '[1.0000000000000001, 16]',
        '[1e-400, 16]',
        '[4, 16.000000000000001]',
        '[4, 15.9999999999999999]',
        '[0.1e1, 1e-400]',
      ]) {
        throwsSqlite(() => ranges(json), refused);
      }
      assert.deepEqual(ranges('[4, 8.0, 1.2e1, 1600e-2]'), ranges('[4, 8, 12, 16]'));
      assert.deepEqual(ranges('[0e-400, 16]'), ranges('[0, 16]'));
    });

    it('70.6.4 timestamps with millis 2^48 − 1 (reserved) are not stored; the largest real one is', () => {
      const reserved =
        'evolu_skiplist_insert: argument 2 (t) must be a timestamp whose millis is below 2^48 - 1 (the reserved value)';
      for (const t of [
        Buffer.alloc(16, 0xff),
        Buffer.concat([Buffer.alloc(6, 0xff), Buffer.alloc(10)]),
        timestamp(2 ** 48 - 1, 5, V1_NODE),
      ]) {
        throwsSqlite(get('evolu_skiplist_insert(?, ?, ?)', V1_OWNER, t, 1), reserved);
      }
      assert.equal(rows(), 0);
      assert.equal(
        get('evolu_skiplist_insert(?, ?, ?)', V1_OWNER, timestamp(2 ** 48 - 2, 0xffff, 'ffffffffffffffff'), 1)(),
        1,
      );
    });
  });

  describe('70.4 duplicates and owners', () => {
    it('70.4.1 a duplicate returns 0 and changes nothing, whatever its level', () => {
      insertV1(ascending, null);
      for (const millis of ascending) {
        for (const level of [1, 10, null]) {
          assert.equal(insert(V1_OWNER, v1t(millis), level, 'insert'), 0);
        }
        assert.equal(insert(V1_OWNER, v1t(millis)), 0);
      }
      assertV1(db);
    });

    it('70.4.2 several owners interleaved keep separate skiplists', () => {
      const owners = [Buffer.alloc(16, 1), Buffer.alloc(16, 2), Buffer.alloc(16, 3)];
      const items = owners.flatMap((owner) => ascending.map((millis) => [owner, millis]));
      shuffle(items, seeded(42));
      for (const [owner, millis] of items) insert(owner, v1t(millis), V1_LEVELS[millis - 1]);
      for (const owner of owners) {
        assertV1(db, owner);
        assert.equal(db.prepare('select evolu_skiplist_size(?)').pluck().get(owner), 16);
      }
    });

    it('70.4.3 drawn levels (level omitted or NULL) follow Evolu rule and cap', () => {
      const owner = Buffer.alloc(16, 7);
      const stmt = db.prepare('select evolu_skiplist_insert(?, ?)').pluck();
      db.transaction(() => {
        for (let i = 0; i < 4000; i++) assert.equal(stmt.get(owner, timestamp(i)), 1);
      })();
      const counts = db.prepare('select l, count(*) n from evolu_timestamp group by l order by l').all();
      const byLevel = Object.fromEntries(counts.map((r) => [r.l, r.n]));
      assert.ok(byLevel[1] > 2800 && byLevel[1] < 3200, JSON.stringify(byLevel));
      assert.ok(counts.every((r) => r.l >= 1 && r.l <= 10));
      checkAgainstModel(
        db,
        owner,
        new Map(
          db
            .prepare('select t, l from evolu_timestamp')
            .raw()
            .all()
            .map(([t, l]) => [hex(t), l]),
        ),
      );
    });
  });

  describe('70.5 property: rows equal an independent model of §3.1', () => {
    const HINTS = ['append', 'prepend', 'insert', null, 'relay'];
    const ORDERS = ['ascending', 'descending', 'shuffled'];
    let caseNo = 0;
    for (const order of ORDERS) {
      for (const hints of HINTS) {
        const n = [1, 2, 17, 300, 2500][caseNo % 5];
        const seed = ++caseNo;
        it(`70.5.${seed} ${n} timestamps, ${order}, hints ${hints}, duplicates, two owners`, () => {
          runPropertyCase(db, { n, order, hints, seed });
        });
      }
    }
  });
});

// ---------------------------------------------------------------------------------------
// The property test and its model

/**
 * §3.1 from first principles: sort the set of (t, level); the row of the i-th timestamp
 * covers the timestamps after the last earlier one of level ≥ its own, up to itself.
 * Returns the dump (§8's format).
 */
function modelDump(set) {
  const items = [...set.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  // prefix[i]: XOR of the fingerprints of items[0..i).
  const prefix = [Buffer.alloc(12)];
  for (const [t] of items) {
    const fp = crypto.createHash('sha256').update(Buffer.from(t, 'hex')).digest().subarray(0, 12);
    const next = Buffer.from(prefix[prefix.length - 1]);
    for (let k = 0; k < 12; k++) next[k] ^= fp[k];
    prefix.push(next);
  }
  // lastAtLeast[k]: index of the last item so far with level ≥ k (−1: none).
  const lastAtLeast = new Array(11).fill(-1);
  let out = '';
  items.forEach(([t, level], i) => {
    const start = lastAtLeast[level] + 1;
    const span = Buffer.alloc(12);
    for (let k = 0; k < 12; k++) span[k] = prefix[i + 1][k] ^ prefix[start][k];
    out += `${t},${level},${span.readUIntBE(0, 6)},${span.readUIntBE(6, 6)},${i + 1 - start}\n`;
    for (let k = 1; k <= level; k++) lastAtLeast[k] = i;
  });
  return out;
}

function checkAgainstModel(db, owner, set) {
  assert.equal(dump(db, owner), modelDump(set));
}

function runPropertyCase(db, { n, order, hints, seed }) {
  const random = seeded(seed * 7919);
  const owners = [Buffer.alloc(16, 0xa0), Buffer.alloc(16, 0xb0)];
  // Distinct timestamps with random millis, counters and node ids; levels by Evolu's
  // rule, or uniform in 1..10 for every third case (high levels stress the updates).
  const perOwner = owners.map(() => {
    const set = new Map();
    while (set.size < n) {
      const t = timestamp(
        Math.floor(random() * 4 * n),
        Math.floor(random() * 3),
        random() < 0.5 ? '0000000000000001' : 'ffffffffffffffff',
      );
      const level = drawLevel(random, seed % 3 === 0);
      if (!set.has(hex(t))) set.set(hex(t), level);
    }
    return set;
  });
  const sequences = perOwner.map((set) => {
    let keys = [...set.keys()].sort();
    if (order === 'descending') keys.reverse();
    if (order === 'shuffled') keys = shuffle(keys, random);
    // Every tenth timestamp comes again later, with another level: a duplicate.
    const withDuplicates = [];
    keys.forEach((key, i) => {
      withDuplicates.push([key, set.get(key), false]);
      if (i % 10 === 3)
        withDuplicates.push([keys[Math.floor(random() * (i + 1))], 1 + Math.floor(random() * 10), true]);
    });
    const ts = withDuplicates.map(([key]) => Buffer.from(key, 'hex'));
    const relay = relayStrategies(ts);
    return withDuplicates.map(([key, level, duplicate], i) => ({
      t: ts[i],
      level,
      duplicate,
      hint: hints === 'relay' ? relay[i] : hints,
    }));
  });
  // Interleave the owners' sequences.
  const calls = [];
  const cursors = [0, 0];
  while (cursors[0] < sequences[0].length || cursors[1] < sequences[1].length) {
    const o = cursors[1] >= sequences[1].length || (cursors[0] < sequences[0].length && random() < 0.5) ? 0 : 1;
    calls.push([o, sequences[o][cursors[o]++]]);
  }
  const stmt = db.prepare('select evolu_skiplist_insert(?, ?, ?, ?)').pluck();
  db.transaction(() => {
    for (const [o, call] of calls) {
      const inserted = stmt.get(owners[o], call.t, call.level, call.hint);
      assert.equal(inserted, call.duplicate ? 0 : 1);
    }
  })();
  owners.forEach((owner, o) => {
    checkAgainstModel(db, owner, perOwner[o]);
    assert.equal(db.prepare('select evolu_skiplist_size(?)').pluck().get(owner), n);
  });
}
