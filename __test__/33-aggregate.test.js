'use strict';
// docs/better-sqlite3-behaviour.md §4.8 / §8.2 Database#aggregate(name, options) — better-sqlite3 v12 behaviour.
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
const WINDOW = 'WINDOW win AS (ORDER BY rowid ROWS BETWEEN 1 PRECEDING AND 1 FOLLOWING)';

describe('8.2 Database#aggregate()', () => {
  let db;
  const get = (sql, ...args) =>
    db
      .prepare(`SELECT ${sql}`)
      .pluck()
      .get(...args);
  const windowed = (expr, ...args) =>
    db
      .prepare(`SELECT ${expr} OVER win FROM ints ${WINDOW} ORDER BY rowid`)
      .pluck()
      .all(...args);
  beforeEach(() => {
    db = new Database(':memory:');
    db.exec(`CREATE TABLE empty (_);
			CREATE TABLE ints (_); INSERT INTO ints VALUES (3), (5), (7), (11), (13), (17), (19);
			CREATE TABLE texts (_); INSERT INTO texts VALUES ('a'), ('b'), ('c');`);
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  describe('8.2.1 options', () => {
    it('8.2.1 name must be a non-empty primitive string; options a non-null object', () => {
      throwsType(() => db.aggregate(), 'Expected first argument to be a string');
      throwsType(() => db.aggregate(null, { step: () => 1 }), 'Expected first argument to be a string');
      throwsType(() => db.aggregate(new String('a'), { step: () => 1 }), 'Expected first argument to be a string');
      throwsType(() => db.aggregate({ step: () => 1 }), 'Expected first argument to be a string');
      throwsType(() => db.aggregate('a'), 'Expected second argument to be an options object');
      throwsType(() => db.aggregate('a', null), 'Expected second argument to be an options object');
      throwsType(() => db.aggregate('a', () => 1), 'Expected second argument to be an options object');
      throwsType(() => db.aggregate('a', 'step'), 'Expected second argument to be an options object');
      throwsType(() => db.aggregate('', { step: () => 1 }), 'User-defined function name cannot be an empty string');
    });

    it('8.2.1 step is required and must be a function', () => {
      throwsType(() => db.aggregate('a', {}), 'Missing required option "step"');
      throwsType(() => db.aggregate('a', { step: undefined }), 'Missing required option "step"');
      throwsType(() => db.aggregate('a', { step: null }), 'Missing required option "step"');
      throwsType(() => db.aggregate('a', { inverse: () => 1 }), 'Missing required option "step"');
      for (const bad of [false, true, 1, 'fn', {}, Object.create(Function.prototype)]) {
        throwsType(() => db.aggregate('a', { step: bad }), 'Expected the "step" option to be a function');
      }
    });

    it('8.2.1 inverse and result are optional functions (null/undefined = absent)', () => {
      for (const key of ['inverse', 'result']) {
        for (const bad of [false, true, 1, 'fn', {}, Object.create(Function.prototype)]) {
          throwsType(
            () => db.aggregate('a', { step: () => 1, [key]: bad }),
            `Expected the "${key}" option to be a function`,
          );
        }
      }
      assert.equal(db.aggregate('a', { step: () => 1, inverse: null, result: undefined }), db);
    });

    for (const option of ['varargs', 'deterministic', 'directOnly', 'safeIntegers']) {
      it(`8.2.1 "${option}" given as a non-boolean (even undefined) → TypeError`, () => {
        for (const value of [undefined, null, 1, 'true']) {
          throwsType(
            () => db.aggregate('a', { step: () => 1, [option]: value }),
            `Expected the "${option}" option to be a boolean`,
          );
        }
        assert.equal(db.aggregate('a', { step: () => 1, [option]: true }), db);
      });
    }

    it('8.2.1 returns the database; blocked while iterating and when closed', () => {
      assert.equal(db.aggregate('a', { step: () => 1 }), db);
      let ran = false;
      for (const x of db.prepare('SELECT 2').pluck().iterate()) {
        assert.equal(x, 2);
        throwsType(() => db.aggregate('b', { step: () => 1 }), BUSY);
        ran = true;
      }
      assert.ok(ran);
      db.close();
      throwsType(() => db.aggregate('c', { step: () => 1 }), NOT_OPEN);
    });
  });

  describe('8.2.2 arity', () => {
    it('8.2.2 step.length and inverse.length must be non-negative integers', () => {
      const msg = 'Expected function.length to be a positive integer';
      for (const bad of [undefined, null, '2', NaN, Infinity, 2.5, -1]) {
        throwsType(() => db.aggregate('a', { step: withLength(bad) }), msg);
        throwsType(() => db.aggregate('b', { step: () => 1, inverse: withLength(bad) }), msg);
      }
    });

    it('8.2.2 more than 100 SQL arguments (length > 101) → RangeError; 101 is accepted', () => {
      const msg = 'User-defined functions cannot have more than 100 arguments';
      throwsRange(() => db.aggregate('a', { step: withLength(102) }), msg);
      throwsRange(() => db.aggregate('b', { step: () => 1, inverse: withLength(102) }), msg);
      assert.equal(db.aggregate('c', { step: withLength(101) }), db);
    });

    it('8.2.2 arity is max(step.length, inverse.length) - 1 and strict', () => {
      db.aggregate('agg', { step: (acc, a, b) => (acc || 0) + a * b });
      throwsSqlite(() => get('agg()'), 'SQLITE_ERROR', 'wrong number of arguments to function agg()');
      throwsSqlite(() => get('agg(_) FROM ints'), 'SQLITE_ERROR', 'wrong number of arguments to function agg()');
      throwsSqlite(() => get('agg(_, 1, 2) FROM ints'), 'SQLITE_ERROR', 'wrong number of arguments to function agg()');
      assert.equal(get('agg(_, 2) FROM ints'), 150);
      db.aggregate('wide', { start: 0, step: (acc, a) => acc + a, inverse: (acc, a, b) => acc - a });
      throwsSqlite(() => get('wide(_) FROM ints'), 'SQLITE_ERROR', 'wrong number of arguments to function wide()');
      assert.equal(get('wide(_, 0) FROM ints'), 75);
      db.aggregate('none', { step: () => 44 });
      assert.equal(get('none() FROM ints'), 44);
      assert.equal(get('none(*) FROM ints'), 44);
    });

    it('8.2.2 varargs accepts any number of arguments', () => {
      const step = (acc, ...args) => acc + args.reduce((a, b) => a * b, 1);
      Object.defineProperty(step, 'length', { value: '-2' });
      db.aggregate('agg', { start: 0, varargs: true, step });
      assert.equal(get('agg()'), 1);
      assert.equal(get('agg(?)', 7), 7);
      assert.equal(get('agg(?, ?)', 4, 8), 32);
      assert.equal(get('agg(_, 2) FROM ints'), 150);
    });
  });

  describe('8.2.3 – 8.2.5 start, step, result', () => {
    it('8.2.3 without start the accumulator begins as null', () => {
      const seen = [];
      db.aggregate('agg', {
        step: (acc, x) => {
          seen.push(acc);
          return x;
        },
      });
      assert.equal(get('agg(_) FROM ints'), 19);
      assert.equal(seen[0], null);
      db.aggregate('concat', { step: (acc, x) => x + acc });
      assert.equal(get('concat(_) FROM texts'), 'cbanull');
    });

    it('8.2.3 a plain start value is used as-is, and the same object is reused across runs', () => {
      db.aggregate('num', { start: 10000, step: (acc, x) => acc + x });
      assert.equal(get('num(_) FROM ints'), 10075);
      assert.equal(get('num(_) FROM ints'), 10075);
      const start = { total: 0 };
      db.aggregate('obj', {
        start,
        step: (acc, x) => {
          acc.total += x;
        },
        result: (acc) => acc.total,
      });
      assert.equal(get('obj(_) FROM ints'), 75);
      assert.equal(get('obj(_) FROM ints'), 150);
      assert.equal(start.total, 150);
    });

    it('8.2.3 a start function is called once per group', () => {
      let calls = 0;
      db.aggregate('list', {
        start: () => {
          calls += 1;
          return [];
        },
        step: (acc, x) => {
          acc.push(x);
        },
        result: (acc) => acc.join(','),
      });
      assert.deepEqual(db.prepare('SELECT _ % 3 AS k, list(_) AS v FROM ints GROUP BY k ORDER BY k').all(), [
        { k: 0, v: '3' },
        { k: 1, v: '7,13,19' },
        { k: 2, v: '5,11,17' },
      ]);
      assert.equal(calls, 3);
      assert.equal(get('list(_) FROM ints'), '3,5,7,11,13,17,19');
      assert.equal(calls, 4);
    });

    it('8.2.3 start: undefined (value or function result) is kept as undefined', () => {
      const seen = [];
      db.aggregate('u', {
        start: undefined,
        step: (acc, x) => {
          seen.push(acc);
        },
        result: (acc) => typeof acc,
      });
      db.aggregate('uf', {
        start: () => undefined,
        step: (acc, x) => {
          seen.push(acc);
        },
        result: (acc) => typeof acc,
      });
      assert.equal(get('u(_) FROM texts'), 'undefined');
      assert.equal(get('uf(_) FROM texts'), 'undefined');
      assert.deepEqual(seen, Array(6).fill(undefined));
      db.aggregate('u_raw', { start: undefined, step: (acc, x) => {} });
      assert.equal(get('u_raw(_) FROM texts'), null);
    });

    it('8.2.4 the step return value becomes the accumulator; undefined keeps it; null replaces it', () => {
      db.aggregate('skip11', { start: 0, step: (acc, x) => (x === 11 ? undefined : acc + x) });
      assert.equal(get('skip11(_) FROM ints'), 64);
      db.aggregate('keep', { start: () => 1000, step: (acc, x) => {} });
      assert.equal(get('keep(_) FROM ints'), 1000);
      db.aggregate('nullify', { start: () => 1000, step: (acc, x) => null });
      assert.equal(get('nullify(_) FROM ints'), null);
    });

    it('8.2.4 step receives (accumulator, ...SQL arguments)', () => {
      const calls = [];
      db.aggregate('spy', {
        start: 'S',
        step(acc, a, b) {
          calls.push([...arguments]);
          return 'S';
        },
      });
      get("spy(_, 'x') FROM texts");
      assert.deepEqual(calls, [
        ['S', 'a', 'x'],
        ['S', 'b', 'x'],
        ['S', 'c', 'x'],
      ]);
    });

    it('8.2.5 result transforms the final value; undefined → NULL; without result the accumulator is returned', () => {
      db.aggregate('half', { start: 0, step: (acc, x) => acc + x, result: (acc) => acc / 2 });
      assert.equal(get('half(_) FROM ints'), 37.5);
      db.aggregate('to_null', { start: 0, step: (acc, x) => acc + x, result: () => undefined });
      assert.equal(get('to_null(_) FROM ints'), null);
      db.aggregate('raw', { start: 0, step: (acc, x) => acc + x });
      assert.equal(get('raw(_) FROM ints'), 75);
      db.aggregate('blob', { step: (acc, x) => Buffer.from(String(x)) });
      assert.ok(get('blob(_) FROM ints').equals(Buffer.from('19')));
      db.aggregate('bigint', { step: (acc, x) => 2n ** 62n });
      assert.equal(db.prepare('SELECT bigint(_) FROM ints').pluck().safeIntegers().get(), 2n ** 62n);
      assert.equal(get('typeof(bigint(_)) FROM ints'), 'integer');
      assert.equal(get('typeof(raw(_)) FROM ints'), 'real');
    });

    it('8.2.4 a Buffer argument arrives as a copy: returning it gives a new Buffer', () => {
      db.aggregate('last', { step: (acc, x) => x });
      const input = Buffer.alloc(8, 0xdd);
      const output = get('last(?)', input);
      assert.notEqual(output, input);
      assert.ok(output.equals(input));
    });
  });

  describe('8.2.6 window functions', () => {
    it('8.2.6 without inverse, use with OVER → SqliteError SQLITE_ERROR', () => {
      db.aggregate('agg', { start: () => 0, step: (acc, x) => acc + x });
      throwsSqlite(() => windowed('agg(_)'), 'SQLITE_ERROR', 'agg() may not be used as a window function');
    });

    it('8.2.6 with inverse it works as a window function over a sliding frame', () => {
      db.aggregate('wsum', { start: () => 0, step: (acc, x) => acc + x, inverse: (acc, x) => acc - x });
      assert.deepEqual(windowed('wsum(_)'), [8, 15, 23, 31, 41, 49, 36]);
      assert.deepEqual(
        db.prepare('SELECT wsum(_) OVER (ORDER BY rowid) FROM ints ORDER BY rowid').pluck().all(),
        [3, 8, 15, 26, 39, 56, 75],
      );
      // still usable as a plain aggregate
      assert.equal(get('wsum(_) FROM ints'), 75);
    });

    it('8.2.6 inverse returning undefined keeps the accumulator', () => {
      db.aggregate('w', {
        start: () => 0,
        step: (acc, x) => acc + x,
        inverse: (acc, x) => (x === 11 ? undefined : acc - x),
      });
      assert.deepEqual(windowed('w(_)'), [8, 15, 23, 31, 41, 60, 47]);
    });

    it('8.2.6 result may be called many times; start once per partition', () => {
      const counts = { start: 0, step: 0, inverse: 0, result: 0 };
      db.aggregate('wn', {
        start: () => {
          counts.start += 1;
          return { sum: 0, results: 0 };
        },
        step: (acc, x) => {
          counts.step += 1;
          acc.sum += x;
        },
        inverse: (acc, x) => {
          counts.inverse += 1;
          acc.sum -= x;
        },
        result: (acc) => {
          counts.result += 1;
          return acc.sum + acc.results++ * 1000;
        },
      });
      assert.deepEqual(windowed('wn(_)'), [8, 1015, 2023, 3031, 4041, 5049, 6036]);
      assert.deepEqual(counts, { start: 1, step: 7, inverse: 5, result: 7 });
      assert.deepEqual(windowed('wn(_)'), [8, 1015, 2023, 3031, 4041, 5049, 6036]);
      assert.deepEqual(counts, { start: 2, step: 14, inverse: 10, result: 14 });
      assert.deepEqual(db.prepare(`SELECT wn(_) OVER win FROM empty ${WINDOW}`).pluck().all(), []);
      assert.deepEqual(counts, { start: 2, step: 14, inverse: 10, result: 14 });
    });

    it('8.2.6 arity comes from the longer of step and inverse', () => {
      db.aggregate('a', { start: () => 0, step: (acc, x) => acc + x, inverse: (acc, x, y) => acc - x });
      assert.deepEqual(windowed('a(_, 0)'), [8, 15, 23, 31, 41, 49, 36]);
      throwsSqlite(() => windowed('a(_)'), 'SQLITE_ERROR', 'wrong number of arguments to function a()');
    });
  });

  describe('8.2.7 empty input', () => {
    it('8.2.7 zero rows → the start value (through result) or NULL', () => {
      db.aggregate('plain', { step: (acc, x) => 44 });
      assert.equal(get('plain(_) FROM empty'), null);
      db.aggregate('started', { start: 7, step: (acc, x) => 44 });
      assert.equal(get('started(_) FROM empty'), 7);
      db.aggregate('fn_started', {
        start: () => ({ n: 1000 }),
        step: (acc, x) => {
          acc.n += 1;
        },
        result: (acc) => acc.n,
      });
      assert.equal(get('fn_started(_) FROM empty'), 1000);
      db.aggregate('seen_null', { step: (acc, x) => 1, result: (acc) => (acc === null ? 'was null' : 'other') });
      assert.equal(get('seen_null(_) FROM empty'), 'was null');
    });
  });

  describe('8.2.8 errors', () => {
    const callbacks = ['start', 'step', 'inverse', 'result'];
    for (const where of callbacks) {
      it(`8.2.8 an exception thrown by ${where}() propagates as the same value`, () => {
        for (const value of thrownValues()) {
          const throwIf = (name) => {
            if (name === where) throw value;
          };
          db.aggregate('boom', {
            start: () => {
              throwIf('start');
              return 0;
            },
            step: (acc, x) => {
              throwIf('step');
              return acc + x;
            },
            inverse: (acc, x) => {
              throwIf('inverse');
              return acc - x;
            },
            result: (acc) => {
              throwIf('result');
              return acc;
            },
          });
          throwsSame(() => windowed('boom(_)'), value);
          if (where !== 'inverse') throwsSame(() => get('boom(_) FROM ints'), value);
        }
      });
    }

    it('8.2.8 a start() exception propagates even over zero rows', () => {
      const err = new Error('no start');
      db.aggregate('boom', {
        start: () => {
          throw err;
        },
        step: (acc, x) => 1,
      });
      throwsSame(() => get('boom(_) FROM empty'), err);
    });

    it('8.2.8 an invalid final value → TypeError / RangeError', () => {
      db.aggregate('bad', { step: (acc, x) => ({}) });
      throwsType(() => get('bad(_) FROM ints'), 'User-defined function bad() returned an invalid value');
      db.aggregate('badr', { step: (acc, x) => 1, result: () => Symbol('x') });
      throwsType(() => get('badr(_) FROM ints'), 'User-defined function badr() returned an invalid value');
      db.aggregate('badw', { step: (acc, x) => true, inverse: (acc, x) => true });
      throwsType(() => windowed('badw(_)'), 'User-defined function badw() returned an invalid value');
      db.aggregate('big', { step: (acc, x) => 2n ** 64n });
      throwsRange(() => get('big(_) FROM ints'), 'User-defined function big() returned a bigint that was too big');
    });

    it('8.2.8 a JS error from an aggregate does not leak into the next SQLite error', () => {
      db.exec('CREATE TABLE data (v)');
      const stale = db.prepare('SELECT v FROM data');
      db.exec('DROP TABLE data');
      const err = new Error('agg error');
      db.aggregate('fail', {
        step: (acc, x) => {
          throw err;
        },
      });
      throwsSame(() => get('fail(_) FROM ints'), err);
      throwsSqlite(() => stale.get(), 'SQLITE_ERROR', 'no such table: data');
    });
  });

  describe('8.2.9 busy', () => {
    it('8.2.9 the connection is busy during start, step, inverse and result', () => {
      const seen = { start: [], step: [], inverse: [], result: [] };
      const probe = (where) => {
        for (const attempt of [
          () => db.exec('SELECT 1'),
          () => db.prepare('SELECT 1'),
          () => db.pragma('cache_size'),
          () => db.function('x', () => 1),
        ]) {
          try {
            attempt();
            seen[where].push('no error');
          } catch (err) {
            seen[where].push(err instanceof TypeError && err.message === BUSY ? 'busy' : `other: ${err.message}`);
          }
        }
      };
      db.aggregate('busy', {
        start: () => {
          probe('start');
          return 0;
        },
        step: (acc, x) => {
          probe('step');
          return acc + x;
        },
        inverse: (acc, x) => {
          probe('inverse');
          return acc - x;
        },
        result: (acc) => {
          probe('result');
          return acc;
        },
      });
      assert.deepEqual(windowed('busy(_)'), [8, 15, 23, 31, 41, 49, 36]);
      for (const where of Object.keys(seen)) {
        assert.ok(seen[where].length > 0, `${where}() should have been called`);
        assert.ok(
          seen[where].every((s) => s === 'busy'),
          `${where}: ${seen[where].join(', ')}`,
        );
      }
      assert.equal(db.exec('SELECT 1'), db);
    });
  });

  describe('8.2 safeIntegers, deterministic, directOnly', () => {
    it('8.2.1 safeIntegers: INTEGER arguments arrive as BigInt; default = db default at registration', () => {
      db.aggregate('kind', { step: (acc, x) => typeof x });
      db.aggregate('kind_on', { safeIntegers: true, step: (acc, x) => typeof x });
      db.defaultSafeIntegers(true);
      db.aggregate('kind_default_on', { step: (acc, x) => typeof x });
      db.aggregate('kind_off', { safeIntegers: false, step: (acc, x) => typeof x });
      db.defaultSafeIntegers(false);
      assert.deepEqual(
        db.prepare('SELECT kind(_), kind_on(_), kind_default_on(_), kind_off(_) FROM ints').raw().get(),
        ['number', 'bigint', 'bigint', 'number'],
      );
      db.aggregate('exact', { safeIntegers: true, step: (acc, x) => x });
      assert.equal(db.prepare('SELECT exact(9007199254740993)').pluck().safeIntegers().get(), 9007199254740993n);
    });

    it('8.2.1 directOnly: not usable from a view', () => {
      db.aggregate('direct', { directOnly: true, start: 0, step: (acc, x) => acc + x });
      db.exec('CREATE VIEW v AS SELECT direct(_) AS s FROM ints');
      assert.equal(get('direct(_) FROM ints'), 75);
      throwsSqlite(() => db.prepare('SELECT s FROM v').get(), 'SQLITE_ERROR', 'unsafe use of direct()');
    });

    it('8.2.1 deterministic flag is accepted and the aggregate still computes', () => {
      db.aggregate('det', { deterministic: true, start: 0, step: (acc, x) => acc + x });
      assert.equal(get('det(_) FROM ints'), 75);
    });
  });
});
