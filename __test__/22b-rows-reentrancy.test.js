'use strict';
// Rows come back right even when user code has replaced the built-ins a row builder
// might use, with replacements that run another query on the same database (issue 10
// item 9): the rows of a batch are built without calling anything user code can
// replace, so no query can overwrite the shared result buffer under them.
// (Run against better-sqlite3 12, some of these abort the process: cipherlite only.)
const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { Database, isCipherlite } = require('./_module');

const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype);

function setup() {
  const db = new Database(':memory:');
  db.exec(`CREATE TABLE t(a INTEGER, b TEXT, c BLOB, d REAL);
		INSERT INTO t VALUES (1, 'one', x'01', 1.5), (2, 'two', x'0202', NULL), (3, 'three – é😀', x'030303', -2.25)`);
  // What a replaced built-in runs: a query with other values and a BLOB large enough to
  // make the native side replace its result buffer.
  const other = db.prepare("SELECT 99 AS a, 'zzzzzzzzzzzzzzzzzzzzzzzz' AS b, zeroblob(200000) AS c, 9.75 AS d");
  return { db, other };
}

let unique = 0;

/** Every way of reading rows, each on a fresh statement (a new column set: the row
 * builder is compiled under the replaced built-ins too). */
function reads(db) {
  const k = ++unique;
  const sql = `SELECT a AS a${k}, b AS "b ${k}", c AS "c${k}", d AS "${k}" FROM t ORDER BY a`;
  return {
    'get()': () => db.prepare(sql).get(),
    'all()': () => db.prepare(sql).all(),
    'raw().all()': () => db.prepare(sql).raw().all(),
    'pluck().all()': () => db.prepare(sql).pluck().all(),
    'expand().all()': () => db.prepare(sql).expand().all(),
    'iterate()': () => Array.from(db.prepare(sql).iterate()),
  };
}

/** The rows each read gives without any replaced built-in, in comparable form. */
function plain(value) {
  return JSON.parse(JSON.stringify(value, (key, v) => (typeof v === 'bigint' ? `${v}n` : v)));
}

/** Replaces `obj[key]` by a function or accessor (from `make(original, reenter)`)
 * while `fn` runs; `reenter()` runs the other query once (not recursively). */
function withReplaced(obj, key, make, other, fn) {
  const saved = Object.getOwnPropertyDescriptor(obj, key);
  const original = obj[key];
  let inside = false;
  let calls = 0;
  const reenter = () => {
    calls++;
    if (inside) return;
    inside = true;
    try {
      other.get();
      other.all();
    } finally {
      inside = false;
    }
  };
  Object.defineProperty(obj, key, { configurable: true, ...make(original, reenter) });
  try {
    fn();
  } finally {
    if (saved) Object.defineProperty(obj, key, saved);
    else delete obj[key];
  }
  return calls;
}

const method = (original, reenter) => ({
  writable: true,
  value: function replaced(...args) {
    reenter();
    return Reflect.apply(original, this, args);
  },
});

const REPLACEMENTS = [
  ['Array.prototype.push', Array.prototype, 'push', method],
  ['String.prototype.slice', String.prototype, 'slice', method],
  ['String.prototype.substring', String.prototype, 'substring', method],
  ['Uint8Array.prototype.subarray', Uint8Array.prototype, 'subarray', method],
  ['TypedArray.prototype.subarray', TypedArrayPrototype, 'subarray', method],
  ['TypedArray.prototype.set', TypedArrayPrototype, 'set', method],
  ['Map.prototype.get', Map.prototype, 'get', method],
  ['Map.prototype.has', Map.prototype, 'has', method],
  ['Map.prototype.set', Map.prototype, 'set', method],
  ['JSON.stringify', JSON, 'stringify', method],
  ['Array.prototype.map', Array.prototype, 'map', method],
  ['Array.prototype.join', Array.prototype, 'join', method],
  ['Array.prototype.filter', Array.prototype, 'filter', method],
  ['Array.prototype.forEach', Array.prototype, 'forEach', method],
  ['Function.prototype.call', Function.prototype, 'call', method],
  ['Function.prototype.apply', Function.prototype, 'apply', method],
  [
    'Reflect.apply',
    Reflect,
    'apply',
    (original, reenter) => ({
      writable: true,
      value: function replaced(...args) {
        reenter();
        return original(...args);
      },
    }),
  ],
  [
    'Object.setPrototypeOf',
    Object,
    'setPrototypeOf',
    (original, reenter) => ({
      writable: true,
      value: function replaced(...args) {
        reenter();
        return original(...args);
      },
    }),
  ],
  [
    'Buffer.allocUnsafeSlow',
    Buffer,
    'allocUnsafeSlow',
    (original, reenter) => ({
      writable: true,
      value: function replaced(...args) {
        reenter();
        return original(...args);
      },
    }),
  ],
  // Setters for indexes: a row builder that assigns into an array (or the addon building
  // arrays by assignment) would run them.
  ...[0, 1, 2, 3].map((i) => [
    `an Array.prototype[${i}] setter`,
    Array.prototype,
    i,
    (original, reenter) => ({
      set(v) {
        reenter();
        Object.defineProperty(this, i, { value: v, writable: true, enumerable: true, configurable: true });
      },
    }),
  ]),
  [
    'an Object.prototype[0] setter',
    Object.prototype,
    0,
    (original, reenter) => ({
      set(v) {
        reenter();
        Object.defineProperty(this, 0, { value: v, writable: true, enumerable: true, configurable: true });
      },
    }),
  ],
];

describe('rows built while user code has replaced built-ins', { skip: !isCipherlite }, () => {
  for (const [name, obj, key, make] of REPLACEMENTS) {
    it(`${name} that runs another query: every read returns the right rows`, () => {
      const { db, other } = setup();
      const expectedOther = plain(other.all());
      const expected = {};
      for (const [read, fn] of Object.entries(reads(db))) expected[read] = plain(fn());
      // Same SQL shape again, fresh statements, under the replacement.
      const got = {};
      withReplaced(obj, key, make, other, () => {
        for (const [read, fn] of Object.entries(reads(db))) {
          got[read] = fn();
        }
      });
      for (const read of Object.keys(expected)) {
        // Column names differ per statement (they are unique): compare values.
        const normalise = (v) => {
          const p = plain(v);
          return Array.isArray(p) ? p.map(stripNames) : stripNames(p);
        };
        assert.deepEqual(normalise(got[read]), normalise(expected[read]), `${read} under ${name}`);
      }
      // The other query still works and gives its own values.
      assert.deepEqual(plain(other.all()), expectedOther);
      db.close();
    });
  }
});

/** A row's values without the per-statement column names (nested for expand()). */
function stripNames(row) {
  if (row === null || typeof row !== 'object' || Array.isArray(row)) return row;
  if (row.type === 'Buffer') return row;
  return Object.values(row).map(stripNames);
}

describe("rows built while Object.prototype has setters for the reader's own fields", { skip: !isCipherlite }, () => {
  it('setters named like internal fields never run, and rows stay right', () => {
    // Installed before the database and its statements exist: their fields are defined,
    // not assigned, so these setters are not reached even when the buffer is replaced.
    const names = [
      'u8',
      'u32',
      'f64',
      'i64',
      'buffer',
      'tagBase',
      'flags',
      'big',
      'rows',
      'index',
      'names',
      'tables',
      'builders',
      'mode',
      'exhausted',
      'closed',
    ];
    let ran = 0;
    for (const name of names) {
      Object.defineProperty(Object.prototype, name, {
        configurable: true,
        set() {
          ran++;
        },
        get: undefined,
      });
    }
    try {
      const { db, other } = setup();
      const expected = [
        [1, 'one'],
        [2, 'two'],
        [3, 'three – é😀'],
      ];
      assert.deepEqual(db.prepare('SELECT a, b FROM t ORDER BY a').raw().all(), expected);
      assert.deepEqual(Array.from(db.prepare('SELECT a, b FROM t ORDER BY a').raw().iterate()), expected);
      assert.equal(other.get().c.length, 200000, 'a batch that replaces the buffer');
      assert.deepEqual(db.prepare('SELECT a, b FROM t ORDER BY a').expand().get(), { t: { a: 1, b: 'one' } });
      db.close();
    } finally {
      for (const name of names) delete Object.prototype[name];
    }
    assert.equal(ran, 0);
  });
});
