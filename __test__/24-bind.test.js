'use strict';
// docs/better-sqlite3-behaviour.md §5.11 (bind) and §10 (binding parameters and type mapping).
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const { memdb, throwsTypeError, throwsRangeError, caught, MSG } = require('./_helpers-stmt');

describe('Binding (§5.11, §10)', () => {
  let db;
  let q; // run a one-row query in raw mode
  beforeEach(() => {
    db = memdb();
    q = (sql, ...args) =>
      db
        .prepare(sql)
        .raw()
        .get(...args);
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  // ---- 10.1 anonymous parameters --------------------------------------------------------

  it('10.1 anonymous ? parameters take positional arguments', () => {
    assert.deepStrictEqual(q('SELECT ?, ?, ?', 1, 'two', null), [1, 'two', null]);
  });

  it('10.1 arrays are flattened one level: run(a, b) ≡ run([a, b]) ≡ run([a], [b])', () => {
    db.exec('CREATE TABLE t (a, b)');
    const ins = db.prepare('INSERT INTO t VALUES (?, ?)');
    ins.run('a', 'b');
    ins.run(['c', 'd']);
    ins.run(['e'], ['f']);
    ins.run([], 'g', ['h'], []);
    assert.deepStrictEqual(db.prepare('SELECT a, b FROM t ORDER BY rowid').raw().all(), [
      ['a', 'b'],
      ['c', 'd'],
      ['e', 'f'],
      ['g', 'h'],
    ]);
    assert.deepStrictEqual(q('SELECT ?, ?, ?', ['a'], 'b', ['c']), ['a', 'b', 'c']);
  });

  it('10.1 a hole in an array binds NULL', () => {
    assert.deepStrictEqual(q('SELECT ?, ?, typeof(?)', [, 'b', undefined]), [null, 'b', 'null']);
    assert.deepStrictEqual(q('SELECT typeof(?), ?', [, 5]), ['null', 5]);
  });

  it('10.1 an array nested in an array → TypeError', () => {
    throwsTypeError(() => q('SELECT ?, ?', [['a'], 'b']), MSG.badBind);
    throwsTypeError(() => q('SELECT ?', [[]]), MSG.badBind);
  });

  it('10.1 ?NNN parameters are named ("1", "2", …): bound from an object, not positionally', () => {
    assert.deepStrictEqual(q('SELECT ?2, ?1', { 1: 'one', 2: 'two' }), ['two', 'one']);
    throwsRangeError(() => q('SELECT ?1', 5), MSG.tooMany);
    throwsRangeError(() => q('SELECT ?, ?1', 5), MSG.tooMany);
  });

  // ---- 10.2 named parameters -------------------------------------------------------------

  it('10.2 @x, :x and $x can be mixed and take one object; keys are looked up without the prefix', () => {
    assert.deepStrictEqual(q('SELECT @a, :b, $c', { a: 1, b: 2, c: 3 }), [1, 2, 3]);
    assert.deepStrictEqual(q('SELECT $c, @a, :b', { c: 'c', b: 'b', a: 'a' }), ['c', 'a', 'b']);
    throwsRangeError(() => q('SELECT @a', { '@a': 1 }), 'Missing named parameter "a"');
    throwsRangeError(() => q('SELECT :a', { ':a': 1 }), 'Missing named parameter "a"');
  });

  it('10.2 the same name with different prefixes binds the one value to all of them', () => {
    assert.deepStrictEqual(q('SELECT @a, @a, :a, $a', { a: 7 }), [7, 7, 7, 7]);
  });

  it('10.2 an object with a null prototype is accepted', () => {
    const o = Object.create(null);
    o.a = 1;
    o.b = 'x';
    assert.deepStrictEqual(q('SELECT @a, @b', o), [1, 'x']);
  });

  it('10.2 extra keys are ignored', () => {
    assert.deepStrictEqual(q('SELECT @a', { a: 1, b: 2, c: Symbol('not bound') }), [1]);
  });

  it('10.2 a key present with value undefined binds NULL', () => {
    assert.deepStrictEqual(q('SELECT @a, typeof(@a)', { a: undefined }), [null, 'null']);
  });

  it('10.2 a missing key → RangeError naming the parameter', () => {
    throwsRangeError(() => q('SELECT @a, @bb', { a: 1 }), 'Missing named parameter "bb"');
    throwsRangeError(() => q('SELECT :first', {}), 'Missing named parameter "first"');
    throwsRangeError(() => q('SELECT $ünï', {}), 'Missing named parameter "ünï"');
  });

  it('10.2 getters on the object are read; inherited properties only count through a plain object', () => {
    assert.deepStrictEqual(
      q('SELECT @a', {
        get a() {
          return 9;
        },
      }),
      [9],
    );
    // an object whose prototype holds the key is not a plain object at all
    throwsTypeError(
      () => q('SELECT @a', Object.create({ a: 1 })),
      'Named parameters can only be passed within plain objects',
    );
  });

  it('10.2 a statement with named parameters and no object → TypeError "Missing named parameters"', () => {
    throwsTypeError(() => q('SELECT @a'), 'Missing named parameters');
    throwsTypeError(() => q('SELECT ?, @a', 1), 'Missing named parameters');
  });

  // ---- 10.3 mixing ---------------------------------------------------------------------------

  it('10.3 anonymous values and one named object combine in a single call, in any order', () => {
    assert.deepStrictEqual(q('SELECT ?, @a, ?', 1, { a: 2 }, 3), [1, 2, 3]);
    assert.deepStrictEqual(q('SELECT ?, @a, ?', { a: 2 }, 1, 3), [1, 2, 3]);
    assert.deepStrictEqual(q('SELECT ?, @a, ?', [1, 3], { a: 2 }), [1, 2, 3]);
  });

  it('10.3 a named object given to a statement without named parameters is ignored', () => {
    assert.deepStrictEqual(q('SELECT ?', 1, { x: 5 }), [1]);
    assert.deepStrictEqual(q('SELECT 1', {}), [1]);
    assert.deepStrictEqual(q('SELECT 2', { a: 1 }), [2]);
  });

  it('10.3 two named objects → TypeError', () => {
    throwsTypeError(
      () => q('SELECT @a', { a: 1 }, { a: 2 }),
      'You cannot specify named parameters in two different objects',
    );
    throwsTypeError(() => q('SELECT 1', {}, {}), 'You cannot specify named parameters in two different objects');
  });

  // ---- 10.4 counts and object kinds -------------------------------------------------------------

  it('10.4 too few values → RangeError', () => {
    throwsRangeError(() => q('SELECT ?, ?', 1), MSG.tooFew);
    throwsRangeError(() => q('SELECT ?'), MSG.tooFew);
    throwsRangeError(() => q('SELECT ?, ?', [1]), MSG.tooFew);
  });

  it('10.4 too many values → RangeError', () => {
    throwsRangeError(() => q('SELECT ?', 1, 2), MSG.tooMany);
    throwsRangeError(() => q('SELECT 1', 1), MSG.tooMany);
    throwsRangeError(() => q('SELECT @a', { a: 1 }, 2), MSG.tooMany);
    throwsRangeError(() => q('SELECT ?', [1, 2]), MSG.tooMany);
  });

  it('10.4 an array-like object is a named-parameter object → RangeError', () => {
    throwsRangeError(() => q('SELECT @a', { length: 1, 0: 5 }), 'Missing named parameter "a"');
    throwsRangeError(() => q('SELECT ?', { length: 1, 0: 5 }), MSG.tooFew);
    throwsRangeError(() => q('SELECT ?, ?, ?, ?', { length: 4, 0: 1, 1: 2, 2: 3, 3: 4 }), MSG.tooFew);
  });

  it('10.4 a {low, high} object is a named-parameter object → RangeError', () => {
    throwsRangeError(() => q('SELECT ?', { low: 1, high: 0 }), MSG.tooFew);
    throwsRangeError(() => q('SELECT @x', { low: 1, high: 0 }), 'Missing named parameter "x"');
  });

  it('10.4 class instances (non-plain objects) → TypeError', () => {
    class Params {
      constructor() {
        this.a = 1;
      }
    }
    throwsTypeError(() => q('SELECT @a', new Params()), 'Named parameters can only be passed within plain objects');
    throwsTypeError(
      () => q('SELECT @a', new Map([['a', 1]])),
      'Named parameters can only be passed within plain objects',
    );
    throwsTypeError(() => q('SELECT ?', new Params()), MSG.badBind);
    throwsTypeError(() => q('SELECT ?', new Map()), MSG.badBind);
  });

  // ---- 10.5 type mapping -------------------------------------------------------------------------

  it('10.5 a number always binds as REAL (even an integer-valued one)', () => {
    assert.deepStrictEqual(q('SELECT typeof(?), typeof(?), typeof(?)', 1, 1.5, -0), ['real', 'real', 'real']);
    db.exec('CREATE TABLE n (i INTEGER, any_)');
    db.prepare('INSERT INTO n VALUES (?, ?)').run(5, 5);
    assert.deepStrictEqual(q('SELECT typeof(i), typeof(any_), i, any_ FROM n'), ['integer', 'real', 5, 5]);
    // a large integer-valued number is a REAL too
    assert.deepStrictEqual(q('SELECT typeof(?), ?', 2 ** 60, 2 ** 60), ['real', 2 ** 60]);
  });

  it('10.5 BigInt binds as INTEGER; outside int64 → RangeError', () => {
    assert.deepStrictEqual(q('SELECT typeof(?), ?', 5n, 5n), ['integer', 5]);
    assert.deepStrictEqual(
      db
        .prepare('SELECT ?, ?')
        .raw()
        .safeIntegers()
        .get(2n ** 63n - 1n, -(2n ** 63n)),
      [2n ** 63n - 1n, -(2n ** 63n)],
    );
    throwsRangeError(() => q('SELECT ?', 2n ** 63n), 'The bound string, buffer, or bigint is too big');
    throwsRangeError(() => q('SELECT ?', -(2n ** 63n) - 1n), 'The bound string, buffer, or bigint is too big');
    throwsRangeError(() => q('SELECT @a', { a: 2n ** 64n }), 'The bound string, buffer, or bigint is too big');
  });

  it('10.5 string binds as TEXT, Buffer as BLOB, null/undefined as NULL', () => {
    assert.deepStrictEqual(
      q('SELECT typeof(?), typeof(?), typeof(?), typeof(?)', 'x', Buffer.from('x'), null, undefined),
      ['text', 'blob', 'null', 'null'],
    );
    assert.deepStrictEqual(q('SELECT ?, ?, ?', 'x', Buffer.from('x'), undefined), ['x', Buffer.from('x'), null]);
  });

  it('10.5 any TypedArray or DataView binds as a BLOB of exactly its viewed bytes', () => {
    const u8 = q('SELECT ?, typeof(?)', new Uint8Array([1, 2]), new Uint8Array([1]));
    assert.ok(Buffer.isBuffer(u8[0]));
    assert.deepStrictEqual([...u8[0]], [1, 2]);
    assert.equal(u8[1], 'blob');
    const u16 = new Uint16Array([0x0102, 0x0304]);
    assert.deepStrictEqual(q('SELECT ?', u16)[0], Buffer.from(u16.buffer));
    const view = new Uint8Array([7, 8, 9, 10]).subarray(1, 3);
    assert.deepStrictEqual([...q('SELECT ?', view)[0]], [8, 9]);
    const dv = new DataView(new Uint8Array([7, 8, 9]).buffer, 1, 2);
    assert.deepStrictEqual([...q('SELECT ?', dv)[0]], [8, 9]);
    const sliced = Buffer.from('hello world').subarray(6);
    assert.deepStrictEqual(q('SELECT ?', sliced)[0], Buffer.from('world'));
  });

  it('10.5 booleans, boxed primitives, Dates, symbols, functions, ArrayBuffers → TypeError', () => {
    const bad = [
      true,
      false,
      new Number(1),
      new String('a'),
      new Boolean(true),
      new Date(0),
      Symbol('s'),
      () => 1,
      new ArrayBuffer(2),
      /re/,
    ];
    for (const value of bad) {
      throwsTypeError(() => q('SELECT ?', value), MSG.badBind);
      throwsTypeError(() => q('SELECT ?', [value]), MSG.badBind);
      throwsTypeError(() => q('SELECT @a', { a: value }), MSG.badBind);
    }
  });

  it('10.5 NaN binds as NULL; ±Infinity and -0 bind as REAL', () => {
    assert.deepStrictEqual(q('SELECT ?, typeof(?)', NaN, NaN), [null, 'null']);
    assert.deepStrictEqual(q('SELECT ?, ?, typeof(?)', Infinity, -Infinity, Infinity), [Infinity, -Infinity, 'real']);
    assert.ok(Object.is(q('SELECT ?', -0)[0], -0));
  });

  it('10.5 a failed bind leaves nothing half-bound: the next call binds afresh', () => {
    const stmt = db.prepare('SELECT ?, ?');
    throwsTypeError(() => stmt.raw().get(1, true), MSG.badBind);
    throwsRangeError(() => stmt.get(1), MSG.tooFew);
    assert.deepStrictEqual(stmt.get(3, 4), [3, 4]);
  });

  // ---- 10.6 throwing getters ------------------------------------------------------------------------

  it('10.6 a getter throwing while reading an array element propagates the same error', () => {
    const boom = new Error('array getter');
    const arr = [1];
    Object.defineProperty(arr, 0, {
      get() {
        throw boom;
      },
    });
    assert.equal(
      caught(() => q('SELECT ?', arr)),
      boom,
    );
    const arr2 = ['ok', 'ok'];
    Object.defineProperty(arr2, 1, {
      get() {
        throw boom;
      },
    });
    assert.equal(
      caught(() => q('SELECT ?, ?', arr2)),
      boom,
    );
  });

  it('10.6 a getter throwing while reading an object member propagates the same error', () => {
    const boom = { thrown: 'value' };
    const obj = {};
    Object.defineProperty(obj, 'a', {
      get() {
        throw boom;
      },
      enumerable: true,
    });
    assert.equal(
      caught(() => q('SELECT @a', obj)),
      boom,
    );
  });

  it('10.6 a Proxy trap throwing during the own-property lookup propagates the same error', () => {
    const boom = new Error('trap');
    const obj = new Proxy(
      { a: 1 },
      {
        getOwnPropertyDescriptor() {
          throw boom;
        },
      },
    );
    assert.equal(
      caught(() => q('SELECT @a', obj)),
      boom,
    );
  });

  // ---- 10.7 empties ------------------------------------------------------------------------------

  it('10.7 an empty Buffer binds as an empty BLOB (read back as a zero-length Buffer); empty string stays ""', () => {
    const row = q(
      'SELECT ?, typeof(?), length(?), ?, typeof(?)',
      Buffer.alloc(0),
      Buffer.alloc(0),
      Buffer.alloc(0),
      '',
      '',
    );
    assert.ok(Buffer.isBuffer(row[0]));
    assert.equal(row[0].length, 0);
    assert.deepStrictEqual(row.slice(1), ['blob', 0, '', 'text']);
    assert.deepStrictEqual(q('SELECT typeof(?)', new Uint8Array(0)), ['blob']);
    db.exec('CREATE TABLE e (b, s)');
    db.prepare('INSERT INTO e VALUES (?, ?)').run(Buffer.alloc(0), '');
    assert.deepStrictEqual(q('SELECT typeof(b), typeof(s), b IS NULL, s IS NULL FROM e'), ['blob', 'text', 0, 0]);
    const back = db.prepare('SELECT b, s FROM e').get();
    assert.deepStrictEqual(back, { b: Buffer.alloc(0), s: '' });
  });

  // ---- 10.8 results -----------------------------------------------------------------------------

  it('10.8 results: NULL → null, REAL → number, INTEGER → number, TEXT → string, BLOB → Buffer', () => {
    const row = db.prepare("SELECT NULL AS n, 1.25 AS r, 42 AS i, 'txt' AS t, x'c0ffee' AS b").get();
    assert.deepStrictEqual(row, { n: null, r: 1.25, i: 42, t: 'txt', b: Buffer.from([0xc0, 0xff, 0xee]) });
    assert.ok(Buffer.isBuffer(row.b));
    assert.equal(typeof row.i, 'number');
  });

  it('10.8 results: INTEGER → BigInt with safeIntegers; REAL stays number, TEXT stays string', () => {
    const row = db.prepare("SELECT 42 AS i, 2.0 AS r, '12' AS t, NULL AS n").safeIntegers().get();
    assert.deepStrictEqual(row, { i: 42n, r: 2, t: '12', n: null });
  });

  it("10.8 a BLOB read back is a new Buffer, never the caller's bound object", () => {
    const input = Buffer.from([1, 2, 3]);
    const out = db.prepare('SELECT ? AS b').pluck().get(input);
    assert.deepStrictEqual(out, input);
    assert.notEqual(out, input);
    out[0] = 99;
    assert.equal(input[0], 1);
    input[1] = 77;
    assert.equal(out[1], 2);
  });

  // ---- 5.11 bind() -----------------------------------------------------------------------------

  it('5.11 bind() returns the statement and binds permanently', () => {
    const stmt = db.prepare('SELECT ? AS x, @y AS y');
    assert.equal(stmt.bind(1, { y: 'why' }), stmt);
    assert.deepStrictEqual(stmt.get(), { x: 1, y: 'why' });
    assert.deepStrictEqual(stmt.all(), [{ x: 1, y: 'why' }]);
    assert.deepStrictEqual([...stmt.iterate()], [{ x: 1, y: 'why' }]);
    assert.deepStrictEqual(stmt.get(), { x: 1, y: 'why' });
  });

  it('5.11 bound run() keeps its values across executions', () => {
    db.exec('CREATE TABLE t (v)');
    const ins = db.prepare('INSERT INTO t VALUES (?)').bind('same');
    ins.run();
    ins.run();
    assert.deepStrictEqual(db.prepare('SELECT v FROM t').pluck().all(), ['same', 'same']);
  });

  it('5.11 bound values are copied: mutating the Buffer afterwards has no effect', () => {
    const buf = Buffer.from([1, 2, 3]);
    const stmt = db.prepare('SELECT ? AS b').bind(buf);
    buf[0] = 9;
    buf.fill(0);
    assert.deepStrictEqual(stmt.get(), { b: Buffer.from([1, 2, 3]) });
    const u8 = new Uint8Array([4, 5]);
    const s2 = db.prepare('SELECT ? AS b').bind(u8);
    u8[0] = 0;
    assert.deepStrictEqual(s2.get(), { b: Buffer.from([4, 5]) });
  });

  it('5.11 a second bind() → TypeError', () => {
    const stmt = db.prepare('SELECT ? AS x').bind(1);
    throwsTypeError(() => stmt.bind(2), MSG.bindOnce);
    throwsTypeError(() => stmt.bind(), MSG.bindOnce);
    assert.deepStrictEqual(stmt.get(), { x: 1 });
  });

  it('5.11 after bind(), passing parameters to run/get/all/iterate → TypeError', () => {
    const stmt = db.prepare('SELECT ? AS x').bind(1);
    throwsTypeError(() => stmt.get(2), MSG.alreadyBound);
    throwsTypeError(() => stmt.all(2), MSG.alreadyBound);
    throwsTypeError(() => stmt.iterate(2), MSG.alreadyBound);
    throwsTypeError(() => stmt.run(2), MSG.alreadyBound);
    // even undefined counts as a parameter
    throwsTypeError(() => stmt.get(undefined), MSG.alreadyBound);
    assert.equal(stmt.busy, false);
    assert.deepStrictEqual(stmt.get(), { x: 1 });
  });

  it('5.11 bind() with no arguments on a parameterless statement locks it against later parameters', () => {
    const stmt = db.prepare('SELECT 1 AS x').bind();
    assert.deepStrictEqual(stmt.get(), { x: 1 });
    throwsTypeError(() => stmt.get(1), MSG.alreadyBound);
    throwsTypeError(() => stmt.bind(), MSG.bindOnce);
  });

  it('5.11 bind() errors are those of §10, and a failed bind() can be retried', () => {
    const stmt = db.prepare('SELECT ? AS x');
    throwsRangeError(() => stmt.bind(), MSG.tooFew);
    throwsRangeError(() => stmt.bind(1, 2), MSG.tooMany);
    throwsTypeError(() => stmt.bind(true), MSG.badBind);
    throwsRangeError(() => stmt.bind(2n ** 63n), 'The bound string, buffer, or bigint is too big');
    const named = db.prepare('SELECT @a AS x');
    throwsRangeError(() => named.bind({}), 'Missing named parameter "a"');
    throwsTypeError(
      () => named.bind({ a: 1 }, { a: 2 }),
      'You cannot specify named parameters in two different objects',
    );
    throwsTypeError(() => named.bind(), 'Missing named parameters');
    // not bound yet: parameters may still be passed per call
    assert.deepStrictEqual(stmt.get(5), { x: 5 });
    assert.equal(stmt.bind(4), stmt);
    assert.deepStrictEqual(stmt.get(), { x: 4 });
  });

  it('5.11 without bind(), parameters do not carry over from one call to the next', () => {
    const stmt = db.prepare('SELECT ? AS x');
    assert.deepStrictEqual(stmt.get(1), { x: 1 });
    throwsRangeError(() => stmt.get(), MSG.tooFew);
    assert.deepStrictEqual(stmt.get(2), { x: 2 });
  });

  // Text parameters are bound without SQLite copying them: each parameter's text stays
  // in a buffer of the statement until the parameter is bound again. Values of every
  // size, rebound call after call, a failed call in between and values over the 64 KiB
  // that are released after use must each read back as bound, never as another call's.
  it('10.2 text read back exactly after many rebinds of varying sizes, failures and large values', () => {
    db.exec('CREATE TABLE t (a TEXT, b TEXT, c TEXT)');
    const ins = db.prepare('INSERT INTO t VALUES (?, ?, ?)');
    const sel = db.prepare('SELECT ? AS a, ? AS b, ? AS c');
    const expected = [];
    const value = (i, k) =>
      i % 7 === 0 ? '' : `${k}${i}é€😀`.repeat(i % 11 === 0 ? 30_000 : (i * 37 + k.length) % 200);
    for (let i = 0; i < 120; i++) {
      const row = [value(i, 'a'), value(i + 1, 'bb'), value(i + 2, 'ccc')];
      if (i % 10 === 5) {
        // A call that fails while binding its last value: the next call is unaffected.
        throwsTypeError(() => ins.run(row[0], row[1], () => row[2]), MSG.badBind);
        throwsTypeError(() => sel.get(row[0], row[1], Symbol('x')), MSG.badBind);
      }
      ins.run(...row);
      expected.push(row);
      const got = sel.get(...row);
      assert.deepStrictEqual(got, { a: row[0], b: row[1], c: row[2] }, `call ${i}`);
    }
    assert.deepStrictEqual(db.prepare('SELECT a, b, c FROM t ORDER BY rowid').raw().all(), expected);
  });

  it('10.2 bind() keeps its text while other statements rebind theirs', () => {
    const bound = db.prepare('SELECT ? AS x, ? AS y').bind('kept', 'é'.repeat(1000));
    const short = db.prepare('SELECT ? AS x').bind('kept too');
    const other = db.prepare('SELECT ? AS x, ? AS y');
    for (let i = 0; i < 50; i++) other.get(`other ${i}`, 'x'.repeat(i * 50));
    assert.deepStrictEqual(bound.get(), { x: 'kept', y: 'é'.repeat(1000) });
    assert.deepStrictEqual(short.get(), { x: 'kept too' });
  });
});
