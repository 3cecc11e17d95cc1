'use strict';
// docs/better-sqlite3-behaviour.md §4.7 / §8.1 Database#function(name, [options], fn) — better-sqlite3 v12 behaviour.
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const {
  Database,
  NOT_OPEN,
  BUSY,
  throwsType,
  throwsRange,
  throwsSqlite,
  throwsSame,
  thrownValues,
} = require('./_helpers-ext');

const withLength = (length, fn = () => {}) => Object.defineProperty(fn, 'length', { value: length });

describe('8.1 Database#function()', () => {
  let db;
  const get = (sql, ...args) =>
    db
      .prepare(`SELECT ${sql}`)
      .pluck()
      .get(...args);
  beforeEach(() => {
    db = new Database(':memory:');
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  describe('8.1.1 arguments', () => {
    it('8.1.1 name must be a primitive string → TypeError', () => {
      const msg = 'Expected first argument to be a string';
      throwsType(() => db.function(), msg);
      throwsType(() => db.function(null, () => 1), msg);
      throwsType(() => db.function(123, () => 1), msg);
      throwsType(() => db.function(new String('f'), () => 1), msg);
      throwsType(() => db.function({ name: 'g' }, () => 1), msg);
      throwsType(() => db.function(() => 1), msg);
    });

    it('8.1.1 fn must be a real function → TypeError', () => {
      const msg = 'Expected last argument to be a function';
      throwsType(() => db.function('a'), msg);
      throwsType(() => db.function('a', {}), msg);
      throwsType(() => db.function('a', null), msg);
      throwsType(() => db.function('a', {}, 'fn'), msg);
      throwsType(() => db.function('a', { fn: () => 1 }), msg);
      throwsType(() => db.function('a', Object.create(Function.prototype)), msg);
      throwsType(() => db.function('a', {}, Object.create(Function.prototype)), msg);
    });

    it('8.1.1 empty name → TypeError', () => {
      throwsType(() => db.function('', () => 1), 'User-defined function name cannot be an empty string');
      throwsType(
        () =>
          db.function('', {}, function named() {
            return 1;
          }),
        'User-defined function name cannot be an empty string',
      );
    });

    it('8.1.1 options that are not an object → TypeError', () => {
      const msg = 'Expected second argument to be an options object';
      throwsType(() => db.function('a', 'opts', () => 1), msg);
      throwsType(() => db.function('a', 123, () => 1), msg);
      throwsType(() => db.function('a', true, () => 1), msg);
    });

    it('8.1.1 options are optional (omitted, null, undefined, {}) and the call returns the database', () => {
      assert.equal(
        db.function('a', () => 'a'),
        db,
      );
      assert.equal(
        db.function('b', null, () => 'b'),
        db,
      );
      assert.equal(
        db.function('c', undefined, () => 'c'),
        db,
      );
      assert.equal(
        db.function('d', {}, () => 'd'),
        db,
      );
      assert.deepEqual(db.prepare('SELECT a(), b(), c(), d()').raw().get(), ['a', 'b', 'c', 'd']);
    });

    it('4.7 blocked while iterating (TypeError busy) and when closed (TypeError not open)', () => {
      let ran = false;
      for (const x of db.prepare('SELECT 2').pluck().iterate()) {
        assert.equal(x, 2);
        throwsType(() => db.function('fn', () => 1), BUSY);
        ran = true;
      }
      assert.ok(ran);
      db.function('fn', () => 1);
      assert.equal(get('fn()'), 1);
      db.close();
      throwsType(() => db.function('fn2', () => 1), NOT_OPEN);
      // argument validation comes first
      throwsType(() => db.function('', () => 1), 'User-defined function name cannot be an empty string');
    });
  });

  describe('8.1.2 arity', () => {
    it('8.1.2 fn.length must be an integer 0..100 (TypeError / RangeError)', () => {
      const msg = 'Expected function.length to be a positive integer';
      for (const bad of [undefined, null, '2', NaN, Infinity, 2.000001, -0.5, -1]) {
        throwsType(() => db.function('f', withLength(bad)), msg);
      }
      throwsRange(
        () => db.function('f', withLength(101)),
        'User-defined functions cannot have more than 100 arguments',
      );
      throwsRange(
        () => db.function('f', withLength(1000)),
        'User-defined functions cannot have more than 100 arguments',
      );
      assert.equal(
        db.function(
          'f100',
          withLength(100, (...args) => args.length),
        ),
        db,
      );
      const placeholders = Array(100).fill('?').join(', ');
      assert.equal(db.prepare(`SELECT f100(${placeholders})`).pluck().get(Array(100).fill(1)), 100);
    });

    it('8.1.2 the argument count is strict: wrong count → SqliteError SQLITE_ERROR', () => {
      db.function('fn', (a, b) => a + b);
      throwsSqlite(() => get('fn()'), 'SQLITE_ERROR', 'wrong number of arguments to function fn()');
      throwsSqlite(() => get('fn(?)', 4), 'SQLITE_ERROR', 'wrong number of arguments to function fn()');
      throwsSqlite(() => get('fn(?, ?, ?)', 4, 8, 3), 'SQLITE_ERROR', 'wrong number of arguments to function fn()');
      assert.equal(get('fn(?, ?)', 4, 8), 12);
    });

    it('8.1.2 registrations with different arities coexist; the same arity replaces', () => {
      db.function('fn', () => 0);
      db.function('fn', (a) => 1);
      db.function('fn', (a, b) => 2);
      db.function('fn', (a, b, c) => 3);
      assert.deepEqual(db.prepare('SELECT fn(), fn(1), fn(1, 1), fn(1, 1, 1)').raw().get(), [0, 1, 2, 3]);
      db.function('fn', (x, y) => 'replaced');
      assert.deepEqual(db.prepare('SELECT fn(), fn(1), fn(1, 1), fn(1, 1, 1)').raw().get(), [0, 1, 'replaced', 3]);
    });

    it('8.1.2 a user function can replace a built-in of the same arity', () => {
      db.function('upper', (s) => `custom:${s}`);
      assert.equal(get("upper('abc')"), 'custom:abc');
    });
  });

  describe('8.1.3 varargs', () => {
    it('8.1.3 any number of arguments; fn.length is ignored (even when invalid)', () => {
      const fn = (...args) => args.reduce((a, b) => a * b, 1);
      Object.defineProperty(fn, 'length', { value: '-2' });
      db.function('prod', { varargs: true }, fn);
      assert.equal(get('prod()'), 1);
      assert.equal(get('prod(?)', 7), 7);
      assert.equal(get('prod(?, ?)', 4, 8), 32);
      assert.equal(get('prod(?, ?, ?, ?, ?, ?)', 2, 3, 4, 5, 6, 7), 5040);
      db.function(
        'count_args',
        { varargs: true },
        withLength(101, (...args) => args.length),
      );
      assert.equal(get('count_args(1, 2, 3)'), 3);
    });

    it('8.1.3 an exact-arity registration is preferred over a varargs one', () => {
      db.function('v', { varargs: true }, () => 'any');
      db.function('v', (x) => 'one');
      assert.deepEqual(db.prepare('SELECT v(), v(1), v(1, 2)').raw().get(), ['any', 'one', 'any']);
      db.function('v', { varargs: true }, () => 'any2');
      assert.deepEqual(db.prepare('SELECT v(), v(1), v(1, 2)').raw().get(), ['any2', 'one', 'any2']);
    });
  });

  describe('8.1.4 / 8.1.5 deterministic and directOnly', () => {
    it('8.1.4 only a deterministic function may be used in an index expression', () => {
      db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1), (2);');
      db.function('plain', (x) => x * 10);
      db.function('det', { deterministic: true }, (x) => x * 10);
      throwsSqlite(
        () => db.exec('CREATE INDEX i1 ON t (plain(x))'),
        'SQLITE_ERROR',
        'non-deterministic functions prohibited in index expressions',
      );
      db.exec('CREATE INDEX i2 ON t (det(x))');
      assert.deepEqual(db.prepare('SELECT x FROM t WHERE det(x) = 20').pluck().all(), [2]);
      assert.deepEqual(db.prepare("SELECT name FROM sqlite_master WHERE type = 'index'").pluck().all(), ['i2']);
    });

    it('8.1.5 a directOnly function cannot run from a view or a trigger, only directly', () => {
      db.function('direct', { directOnly: true }, () => 'd');
      db.function('anywhere', () => 'a');
      db.exec(`CREATE VIEW v_direct AS SELECT direct() AS r;
				CREATE VIEW v_anywhere AS SELECT anywhere() AS r;
				CREATE TABLE t (x); CREATE TABLE log (y);
				CREATE TRIGGER tr AFTER INSERT ON t BEGIN INSERT INTO log VALUES (direct()); END;`);
      assert.equal(get('direct()'), 'd');
      assert.equal(db.prepare('SELECT r FROM v_anywhere').pluck().get(), 'a');
      throwsSqlite(() => db.prepare('SELECT r FROM v_direct').get(), 'SQLITE_ERROR', 'unsafe use of direct()');
      throwsSqlite(() => db.prepare('INSERT INTO t VALUES (1)').run(), 'SQLITE_ERROR', 'unsafe use of direct()');
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 0);
      assert.equal(db.prepare('SELECT count(*) FROM log').pluck().get(), 0);
    });
  });

  describe('8.1.6 safeIntegers', () => {
    it('8.1.6 safeIntegers: true → INTEGER arguments arrive as BigInt (REAL stays number)', () => {
      const seen = [];
      db.function('probe', { safeIntegers: true }, (x) => {
        seen.push(x);
        return 0;
      });
      get('probe(9007199254740993)');
      get('probe(1.5)');
      get("probe('7')");
      assert.deepEqual(seen, [9007199254740993n, 1.5, '7']);
      db.function('echo', { safeIntegers: true }, (x) => x);
      assert.equal(db.prepare('SELECT echo(9007199254740993)').pluck().safeIntegers().get(), 9007199254740993n);
    });

    it('8.1.6 without safeIntegers INTEGER arguments arrive as (lossy) numbers', () => {
      const seen = [];
      db.function('probe', (x) => {
        seen.push(x);
        return 0;
      });
      db.function('probe_off', { safeIntegers: false }, (x) => {
        seen.push(x);
        return 0;
      });
      get('probe(9007199254740993)');
      get('probe_off(5)');
      assert.deepEqual(seen, [9007199254740992, 5]);
    });

    it('8.1.6 the default is the database default at registration time', () => {
      const kind = [];
      db.function('before_default', (x) => typeof x);
      db.defaultSafeIntegers(true);
      db.function('after_default', (x) => typeof x);
      db.function('explicit_off', { safeIntegers: false }, (x) => typeof x);
      db.defaultSafeIntegers(false);
      db.function('explicit_on', { safeIntegers: true }, (x) => typeof x);
      kind.push(
        ...db.prepare('SELECT before_default(1), after_default(1), explicit_off(1), explicit_on(1)').raw().get(),
      );
      assert.deepEqual(kind, ['number', 'bigint', 'number', 'bigint']);
    });
  });

  describe('8.1.7 option types', () => {
    for (const option of ['varargs', 'deterministic', 'directOnly', 'safeIntegers']) {
      it(`8.1.7 "${option}" given as a non-boolean (even undefined) → TypeError`, () => {
        for (const value of [undefined, null, 1, 0, 'true', {}]) {
          throwsType(
            () => db.function('f', { [option]: value }, () => 1),
            `Expected the "${option}" option to be a boolean`,
          );
        }
        assert.equal(
          db.function('f', { [option]: false }, () => 1),
          db,
        );
      });
    }
  });

  describe('8.1.8 values in and out', () => {
    it('8.1.8 arguments: INTEGER/REAL → number, TEXT → string, BLOB → Buffer, NULL → null', () => {
      let args;
      db.function('capture', { varargs: true }, (...a) => {
        args = a;
        return 0;
      });
      get("capture(42, 1.5, 'text', x'00ff', NULL)");
      assert.equal(args.length, 5);
      assert.equal(args[0], 42);
      assert.equal(args[1], 1.5);
      assert.equal(args[2], 'text');
      assert.ok(Buffer.isBuffer(args[3]));
      assert.ok(args[3].equals(Buffer.from([0x00, 0xff])));
      assert.equal(args[4], null);
    });

    it('8.1.8 return values: number → REAL, BigInt → INTEGER, string → TEXT, Buffer/Uint8Array → BLOB, null/undefined → NULL', () => {
      const values = {
        int: 5,
        real: 2.5,
        big: 5n,
        minBig: -(2n ** 63n),
        maxBig: 2n ** 63n - 1n,
        str: 'text',
        empty: '',
        buf: Buffer.from('ab'),
        u8: new Uint8Array([1, 2]),
        nil: null,
        undef: undefined,
      };
      db.function('rv', (k) => values[k]);
      const stmt = db.prepare('SELECT typeof(rv(?)) AS type, rv(?) AS value').safeIntegers();
      const check = (key) => stmt.get(key, key);
      assert.deepEqual(check('int'), { type: 'real', value: 5 });
      assert.deepEqual(check('real'), { type: 'real', value: 2.5 });
      assert.deepEqual(check('big'), { type: 'integer', value: 5n });
      assert.deepEqual(check('minBig'), { type: 'integer', value: -(2n ** 63n) });
      assert.deepEqual(check('maxBig'), { type: 'integer', value: 2n ** 63n - 1n });
      assert.deepEqual(check('str'), { type: 'text', value: 'text' });
      assert.deepEqual(check('empty'), { type: 'text', value: '' });
      assert.deepEqual(check('buf'), { type: 'blob', value: Buffer.from('ab') });
      assert.deepEqual(check('u8'), { type: 'blob', value: Buffer.from([1, 2]) });
      assert.deepEqual(check('nil'), { type: 'null', value: null });
      assert.deepEqual(check('undef'), { type: 'null', value: null });
    });

    it('8.1.8 a returned Buffer is copied: the result is a new Buffer with the same bytes', () => {
      db.function('same', (x) => x);
      const input = Buffer.alloc(8, 0xdd);
      const output = get('same(?)', input);
      assert.notEqual(output, input);
      assert.ok(output.equals(Buffer.alloc(8, 0xdd)));
    });

    it('8.1.8 any other return value → TypeError thrown from the query', () => {
      const invalid = {
        object: {},
        array: [],
        bool: true,
        boxed: new Number(1),
        date: new Date(0),
        symbol: Symbol('s'),
        arrayBuffer: new ArrayBuffer(2),
        fn: () => 1,
      };
      db.function('bad', (k) => invalid[k]);
      for (const key of Object.keys(invalid)) {
        throwsType(() => get('bad(?)', key), 'User-defined function bad() returned an invalid value');
      }
    });

    it('8.1.8 a BigInt outside int64 → RangeError', () => {
      db.function('huge', (sign) => (sign > 0 ? 2n ** 63n : -(2n ** 63n) - 1n));
      throwsRange(() => get('huge(1)'), 'User-defined function huge() returned a bigint that was too big');
      throwsRange(() => get('huge(-1)'), 'User-defined function huge() returned a bigint that was too big');
    });
  });

  describe('8.1.9 exceptions', () => {
    it('8.1.9 whatever fn throws comes out of get/all/run/iterate as the same value', () => {
      db.exec('CREATE TABLE sink (x)');
      for (const value of thrownValues()) {
        db.function('boom', () => {
          throw value;
        });
        throwsSame(() => db.prepare('SELECT boom()').get(), value);
        throwsSame(() => db.prepare('SELECT boom()').all(), value);
        throwsSame(() => db.prepare('INSERT INTO sink VALUES (boom())').run(), value);
        throwsSame(() => db.prepare('SELECT boom()').iterate().next(), value);
        throwsSame(() => db.exec('SELECT boom()'), value);
      }
      assert.equal(db.prepare('SELECT count(*) FROM sink').pluck().get(), 0);
    });

    it('8.1.9 a throwing function closes the iterator that called it', () => {
      db.exec('CREATE TABLE nums (v); INSERT INTO nums VALUES (1), (2), (4), (8), (16), (32);');
      let calls = 0;
      const err = new Error('fifth call');
      db.function('fn', (x) => {
        if (++calls >= 5) throw err;
        return x;
      });
      const iterator = db.prepare('SELECT fn(v) FROM nums ORDER BY rowid').pluck().iterate();
      let total = 0;
      assert.throws(
        () => {
          for (const value of iterator) {
            total += value;
            throwsType(() => db.exec('SELECT 1'), BUSY);
          }
        },
        (e) => e === err,
      );
      assert.equal(total, 1 + 2 + 4 + 8);
      assert.deepEqual(iterator.next(), { value: undefined, done: true });
      // the connection is usable again: no iterator left open
      assert.equal(db.exec('SELECT 1'), db);
      calls = 0;
      assert.deepEqual(db.prepare('SELECT fn(v) FROM nums ORDER BY rowid LIMIT 4').pluck().all(), [1, 2, 4, 8]);
    });
  });

  describe('8.1.10 busy while the function runs', () => {
    it('8.1.10 exec, prepare, pragma, function, aggregate, table, loadExtension, other statements and close → TypeError', () => {
      const other = db.prepare('SELECT 1');
      db.function('noop', () => 1);
      const checks = [];
      db.function('reenter', () => {
        const attempts = {
          exec: () => db.exec('SELECT noop()'),
          prepare: () => db.prepare('SELECT 555'),
          pragma: () => db.pragma('cache_size'),
          function: () => db.function('z', () => 1),
          aggregate: () => db.aggregate('z', { step: () => 1 }),
          table: () => db.table('z', { columns: ['x'], *rows() {} }),
          loadExtension: () => db.loadExtension('/no/such/extension'),
          statementGet: () => other.get(),
          statementAll: () => other.all(),
          statementIterate: () => other.iterate(),
          close: () => db.close(),
        };
        for (const [name, attempt] of Object.entries(attempts)) {
          try {
            attempt();
            checks.push([name, 'no error']);
          } catch (err) {
            checks.push([name, err.constructor.name, err.message]);
          }
        }
        return 'done';
      });
      assert.equal(db.prepare('SELECT reenter()').pluck().get(), 'done');
      assert.deepEqual(checks, [
        ['exec', 'TypeError', BUSY],
        ['prepare', 'TypeError', BUSY],
        ['pragma', 'TypeError', BUSY],
        ['function', 'TypeError', BUSY],
        ['aggregate', 'TypeError', BUSY],
        ['table', 'TypeError', BUSY],
        ['loadExtension', 'TypeError', BUSY],
        ['statementGet', 'TypeError', BUSY],
        ['statementAll', 'TypeError', BUSY],
        ['statementIterate', 'TypeError', BUSY],
        ['close', 'TypeError', BUSY],
      ]);
      assert.equal(db.open, true);
      // busy also applies when the function runs from exec()
      checks.length = 0;
      assert.equal(db.exec('SELECT reenter()'), db);
      assert.equal(checks.length, 11);
      assert.ok(checks.every((c) => c[2] === BUSY));
      // and everything works again afterwards
      assert.equal(db.exec('SELECT noop()'), db);
      assert.equal(db.prepare('SELECT 555').pluck().get(), 555);
      assert.equal(typeof db.pragma('cache_size', { simple: true }), 'number');
      assert.equal(
        db.function('zz', () => 1),
        db,
      );
      assert.equal(other.pluck().get(), 1);
    });

    it('8.1.10 the busy state ends with the query, also while an iterator is open', () => {
      db.function('double', (x) => {
        throwsType(() => db.prepare('SELECT 1'), BUSY);
        return x * 2;
      });
      let ran = false;
      for (const x of db.prepare('SELECT double(555)').pluck().iterate()) {
        ran = true;
        assert.equal(x, 1110);
        // iterating, not busy: prepare is allowed, exec is not
        assert.equal(db.prepare('SELECT 1').pluck().get(), 1);
        throwsType(() => db.exec('SELECT 1'), BUSY);
      }
      assert.ok(ran);
    });
  });

  describe('8.1.11 – 8.1.13', () => {
    it('8.1.11 registration is by name, never by fn.name; SQL names are case-insensitive', () => {
      db.function('Registered', function foo(x) {
        return x;
      });
      assert.equal(get('registered(3)'), 3);
      assert.equal(get('REGISTERED(4)'), 4);
      throwsSqlite(() => get('foo(1)'), 'SQLITE_ERROR', 'no such function: foo');
    });

    it('8.1.12 mutating a bound Buffer inside the function does not change the query values', () => {
      const input = Buffer.alloc(8192, 0xbb);
      let ran = false;
      db.function('mutate', () => {
        ran = true;
        input[0] = 2;
        return null;
      });
      const [out] = db.prepare('SELECT ?, mutate()').raw().get(input);
      assert.ok(ran);
      assert.ok(out.equals(Buffer.alloc(8192, 0xbb)));
    });

    it('8.1.12 mutating a Buffer argument inside the function does not change the stored value', () => {
      db.exec("CREATE TABLE b (v BLOB); INSERT INTO b VALUES (x'0102');");
      db.function('scribble', (buf) => {
        buf[0] = 0xff;
        return buf.length;
      });
      assert.equal(db.prepare('SELECT scribble(v) FROM b').pluck().get(), 2);
      assert.ok(
        db
          .prepare('SELECT v FROM b')
          .pluck()
          .get()
          .equals(Buffer.from([1, 2])),
      );
    });

    it('8.1.13 a JS error from a function does not leak into the next SQLite error', () => {
      db.exec('CREATE TABLE data (value INTEGER)');
      const stale = db.prepare('SELECT value FROM data');
      db.exec('DROP TABLE data');
      const err = new Error('from the function');
      db.function('fail', () => {
        throw err;
      });
      throwsSame(() => db.prepare('SELECT fail()').get(), err);
      assert.throws(
        () => stale.get(),
        (e) => {
          assert.notEqual(e, err);
          assert.notEqual(e.message, err.message);
          return e instanceof Database.SqliteError && e.code === 'SQLITE_ERROR' && e.message === 'no such table: data';
        },
      );
    });
  });
});
