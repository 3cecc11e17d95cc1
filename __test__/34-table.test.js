'use strict';
// docs/better-sqlite3-behaviour.md §4.9 / §8.3 Database#table(name, definition | factory) — better-sqlite3 v12 behaviour.
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

const withLength = (length) => Object.defineProperty(function* () {}, 'length', { value: length });
const def = (extra) => ({
  columns: ['x'],
  *rows() {
    yield [1];
  },
  ...extra,
});

describe('8.3 Database#table()', () => {
  let db;
  beforeEach(() => {
    db = new Database(':memory:');
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  describe('4.9 arguments and state', () => {
    it('4.9 name must be a non-empty primitive string', () => {
      throwsType(() => db.table(), 'Expected first argument to be a string');
      throwsType(() => db.table(null, def()), 'Expected first argument to be a string');
      throwsType(() => db.table(new String('t'), def()), 'Expected first argument to be a string');
      throwsType(() => db.table(def()), 'Expected first argument to be a string');
      throwsType(() => db.table(() => def()), 'Expected first argument to be a string');
      throwsType(() => db.table('', def()), 'Virtual table module name cannot be an empty string');
      throwsType(() => db.table('', () => def()), 'Virtual table module name cannot be an empty string');
    });

    it('4.9 the second argument must be a function or a definition object', () => {
      const msg = 'Expected second argument to be a function or a table definition object';
      throwsType(() => db.table('t'), msg);
      throwsType(() => db.table('t', null), msg);
      throwsType(() => db.table('t', 'def'), msg);
      throwsType(() => db.table('t', 42), msg);
      // an object that merely inherits from Function.prototype is a (bad) definition object
      throwsType(
        () => db.table('t', Object.create(Function.prototype)),
        'Virtual table module "t" used a table definition without a "rows" property',
      );
    });

    it('4.9 returns the database; blocked while iterating and when closed', () => {
      assert.equal(db.table('a', def()), db);
      assert.equal(
        db.table('b', () => def()),
        db,
      );
      let ran = false;
      for (const x of db.prepare('SELECT 2').pluck().iterate()) {
        assert.equal(x, 2);
        throwsType(() => db.table('c', def()), BUSY);
        ran = true;
      }
      assert.ok(ran);
      assert.equal(db.table('c', def()), db);
      db.close();
      throwsType(() => db.table('d', def()), NOT_OPEN);
    });
  });

  describe('8.3.1 eponymous form', () => {
    it('8.3.1 a definition object registers a table usable at once, plain and as FROM name(args)', () => {
      db.table('seq', {
        columns: ['value'],
        *rows(from, to) {
          for (let i = from ?? 1; i <= (to ?? 3); i++) yield [i];
        },
      });
      assert.deepEqual(db.prepare('SELECT value FROM seq').pluck().all(), [1, 2, 3]);
      assert.deepEqual(db.prepare('SELECT value FROM seq(?, ?)').pluck().all(4, 6), [4, 5, 6]);
      assert.deepEqual(db.prepare('SELECT value FROM seq(2)').pluck().all(), [2, 3]);
    });

    it('8.3.1 values of every type come out as SQLite values', () => {
      const rows = [
        { a: null, b: 123, c: 456.789, d: 'foo', e: Buffer.from('bar') },
        { a: null, b: 987, c: 654.321, d: 'oof', e: Buffer.from('rab') },
      ];
      db.table('vtab', {
        columns: ['a', 'b', 'c', 'd', 'e'],
        *rows() {
          for (const r of rows) yield Object.values(r);
        },
      });
      assert.deepEqual(db.prepare('SELECT * FROM vtab').all(), rows);
      assert.deepEqual(db.prepare('SELECT * FROM vtab WHERE b < 500').all(), rows.slice(0, 1));
      assert.deepEqual(db.prepare('SELECT * FROM vtab ORDER BY d DESC').all(), rows.slice().reverse());
      db.table('types', {
        columns: ['v'],
        *rows() {
          yield [1];
          yield [1.5];
          yield [2n];
          yield ['s'];
          yield [Buffer.from('b')];
          yield [null];
          yield [undefined];
        },
      });
      assert.deepEqual(db.prepare('SELECT typeof(v) FROM types').pluck().all(), [
        'real',
        'real',
        'integer',
        'text',
        'blob',
        'null',
        'null',
      ]);
    });

    it('8.3.1 CREATE VIRTUAL TABLE with an eponymous-only module → SqliteError', () => {
      db.table('epo', def());
      throwsSqlite(() => db.exec('CREATE VIRTUAL TABLE a USING epo'), 'SQLITE_ERROR', 'no such module: epo');
      throwsSqlite(() => db.exec('CREATE VIRTUAL TABLE b USING epo(foo)'), 'SQLITE_ERROR', 'no such module: epo');
    });

    it('8.3.1 definition errors are thrown by table() itself, with "used" in the message', () => {
      throwsType(
        () => db.table('m', { columns: ['x'] }),
        'Virtual table module "m" used a table definition without a "rows" property',
      );
    });
  });

  describe('8.3.2 factory form', () => {
    it('8.3.2 called per CREATE VIRTUAL TABLE with this = {module, database, table} and the raw module arguments', () => {
      const calls = [];
      db.table('mod', function (...args) {
        calls.push({ self: this, args });
        return {
          columns: ['x'],
          *rows() {
            for (const a of args) yield [a];
          },
        };
      });
      assert.deepEqual(calls, []);
      db.exec('CREATE VIRTUAL TABLE foo USING mod(hello world, how are you?)');
      db.exec(`CREATE VIRTUAL TABLE bar USING mod('quoted', 2, "dq", [b])`);
      db.exec('CREATE VIRTUAL TABLE temp.baz USING mod');
      assert.deepEqual(calls, [
        { self: { module: 'mod', database: 'main', table: 'foo' }, args: ['hello world', 'how are you?'] },
        { self: { module: 'mod', database: 'main', table: 'bar' }, args: ["'quoted'", '2', '"dq"', '[b]'] },
        { self: { module: 'mod', database: 'temp', table: 'baz' }, args: [] },
      ]);
      assert.deepEqual(db.prepare('SELECT x FROM foo').pluck().all(), ['hello world', 'how are you?']);
      assert.deepEqual(db.prepare('SELECT x FROM bar').pluck().all(), ["'quoted'", '2', '"dq"', '[b]']);
      assert.deepEqual(db.prepare('SELECT x FROM baz').pluck().all(), []);
    });

    it('8.3.2 the module name itself is not a table → SqliteError', () => {
      db.table('mod', () => def());
      throwsSqlite(() => db.prepare('SELECT * FROM mod'), 'SQLITE_ERROR', 'no such table: mod');
      db.exec('CREATE VIRTUAL TABLE t1 USING mod()');
      throwsSqlite(() => db.prepare('SELECT * FROM mod'), 'SQLITE_ERROR', 'no such table: mod');
      assert.deepEqual(db.prepare('SELECT x FROM t1').pluck().all(), [1]);
    });

    it('8.3.2 a factory that does not return an object → TypeError from CREATE VIRTUAL TABLE', () => {
      for (const [i, value] of [42, null, undefined, 'def', () => def()].entries()) {
        db.table(`bad${i}`, () => value);
        throwsType(
          () => db.exec(`CREATE VIRTUAL TABLE v${i} USING bad${i}()`),
          `Virtual table module "bad${i}" did not return a table definition object`,
        );
        throwsSqlite(() => db.prepare(`SELECT * FROM v${i}`), 'SQLITE_ERROR', `no such table: v${i}`);
      }
    });

    it('8.3.2 an invalid returned definition → error from CREATE VIRTUAL TABLE, with "returned" in the message', () => {
      const cases = [
        [
          { columns: ['a'] },
          TypeError,
          'Virtual table module "f0" returned a table definition without a "rows" property',
        ],
        [
          { *rows() {} },
          TypeError,
          'Virtual table module "f1" returned a table definition without a "columns" property',
        ],
        [
          { columns: ['a'], rows() {} },
          TypeError,
          'Virtual table module "f2" returned a table definition with an invalid "rows" property (should be a generator function)',
        ],
        [
          { columns: [], *rows() {} },
          RangeError,
          'Virtual table module "f3" returned a table definition with zero columns',
        ],
        [
          { columns: ['a'], parameters: ['a'], *rows() {} },
          TypeError,
          'Virtual table module "f4" returned a table definition with column "a" which was ambiguously defined as both a column and parameter',
        ],
      ];
      for (const [i, [definition, cls, message]] of cases.entries()) {
        db.table(`f${i}`, () => definition);
        assert.throws(
          () => db.exec(`CREATE VIRTUAL TABLE v${i} USING f${i}()`),
          (err) => err instanceof cls && err.message === message,
        );
      }
    });

    it('8.3.11 an exception thrown by the factory propagates as the same value; no table is created', () => {
      for (const [i, value] of thrownValues().entries()) {
        const calls = [];
        db.table(`mod${i}`, () => {
          calls.push('factory');
          throw value;
        });
        throwsSame(() => db.exec(`CREATE VIRTUAL TABLE vt${i} USING mod${i}()`), value);
        assert.deepEqual(calls, ['factory']);
        throwsSqlite(() => db.prepare(`SELECT * FROM vt${i}`), 'SQLITE_ERROR', `no such table: vt${i}`);
        assert.deepEqual(calls, ['factory']);
      }
    });
  });

  describe('8.3.3 columns', () => {
    it('8.3.3 required array of unique strings', () => {
      const t = (name, columns) => () => db.table(name, { columns, *rows() {} });
      throwsType(
        () => db.table('a', { *rows() {} }),
        'Virtual table module "a" used a table definition without a "columns" property',
      );
      const invalid = (name) =>
        `Virtual table module "${name}" used a table definition with an invalid "columns" property (should be an array of strings)`;
      throwsType(t('b', undefined), invalid('b'));
      throwsType(t('c', 'x'), invalid('c'));
      throwsType(t('d', { length: 1, 0: 'x', [Symbol.iterator]: () => ['x'].values() }), invalid('d'));
      throwsType(t('e', ['x', , 'y']), invalid('e'));
      throwsType(t('f', ['x', new String('y')]), invalid('f'));
      throwsType(t('g', ['x', 1]), invalid('g'));
      throwsType(t('h', ['x', 'x']), 'Virtual table module "h" used a table definition with duplicate column names');
      throwsRange(t('i', []), 'Virtual table module "i" used a table definition with zero columns');
    });

    it('8.3.3 the properties must be own properties', () => {
      const inherited = Object.create({ columns: ['x'], *rows() {} });
      throwsType(
        () => db.table('a', inherited),
        'Virtual table module "a" used a table definition without a "rows" property',
      );
    });
  });

  describe('8.3.4 rows', () => {
    it('8.3.4 must be a generator function', () => {
      const msg = (n) =>
        `Virtual table module "${n}" used a table definition with an invalid "rows" property (should be a generator function)`;
      const GeneratorFunctionPrototype = Object.getPrototypeOf(function* () {});
      throwsType(
        () => db.table('a', { columns: ['x'] }),
        'Virtual table module "a" used a table definition without a "rows" property',
      );
      throwsType(() => db.table('b', { columns: ['x'], rows: undefined }), msg('b'));
      throwsType(() => db.table('c', { columns: ['x'], rows: {} }), msg('c'));
      throwsType(() => db.table('d', { columns: ['x'], rows: () => [] }), msg('d'));
      throwsType(() => db.table('e', { columns: ['x'], rows: function () {} }), msg('e'));
      throwsType(() => db.table('f', { columns: ['x'], rows: Object.create(Function.prototype) }), msg('f'));
      throwsType(() => db.table('g', { columns: ['x'], rows: Object.create(GeneratorFunctionPrototype) }), msg('g'));
      throwsType(
        () =>
          db.table('h', {
            columns: ['x'],
            rows: Object.setPrototypeOf(() => {}, Object.create(GeneratorFunctionPrototype)),
          }),
        msg('h'),
      );
      throwsType(() => db.table('i', { columns: ['x'], async *rows() {} }), msg('i'));
    });

    it('8.3.4 rows may be arrays (exact length) or objects (exactly the declared keys)', () => {
      db.table('arr', {
        columns: ['a', 'b'],
        *rows() {
          yield [1, 'x'];
          yield [2, 'y'];
        },
      });
      db.table('obj', {
        columns: ['a', 'b'],
        *rows() {
          yield { b: 'x', a: 1 };
          yield { a: 2, b: 'y' };
        },
      });
      assert.deepEqual(db.prepare('SELECT * FROM arr').all(), [
        { a: 1, b: 'x' },
        { a: 2, b: 'y' },
      ]);
      assert.deepEqual(db.prepare('SELECT * FROM obj').all(), [
        { a: 1, b: 'x' },
        { a: 2, b: 'y' },
      ]);
    });

    it('8.3.4 an invalid array row → TypeError', () => {
      const tests = [
        [1, 2, 3],
        [1, 2, 3, 4],
        [1, 2],
        [],
        [1, 2, new Number(3)],
        [1, 2, [3]],
        [1, 2, new Date(0)],
        [1, 2, {}],
      ];
      db.table('vtab', {
        columns: ['a', 'b', 'c'],
        *rows(n) {
          yield tests[n];
        },
      });
      assert.deepEqual(db.prepare('SELECT * FROM vtab(?)').raw().all(0), [[1, 2, 3]]);
      const lengthMsg = 'Virtual table module "vtab" yielded a row with an incorrect number of columns';
      const valueMsg = 'Virtual table module "vtab" yielded an invalid value';
      throwsType(() => db.prepare('SELECT * FROM vtab(?)').all(1), lengthMsg);
      throwsType(() => db.prepare('SELECT * FROM vtab(?)').all(2), lengthMsg);
      throwsType(() => db.prepare('SELECT * FROM vtab(?)').all(3), lengthMsg);
      for (const n of [4, 5, 6, 7]) throwsType(() => db.prepare('SELECT * FROM vtab(?)').all(n), valueMsg);
    });

    it('8.3.4 an invalid object row → TypeError', () => {
      const tests = [{ a: 1, b: 2 }, { a: 1, b: 2, c: 3 }, { a: 1 }, {}, Object.create({ a: 1, b: 2 })];
      db.table('vtab', {
        columns: ['a', 'b'],
        *rows(n) {
          yield tests[n];
        },
      });
      assert.deepEqual(db.prepare('SELECT * FROM vtab(?)').all(0), [{ a: 1, b: 2 }]);
      throwsType(
        () => db.prepare('SELECT * FROM vtab(?)').all(1),
        'Virtual table module "vtab" yielded a row with an undeclared column "c"',
      );
      throwsType(
        () => db.prepare('SELECT * FROM vtab(?)').all(2),
        'Virtual table module "vtab" yielded a row with missing columns',
      );
      throwsType(
        () => db.prepare('SELECT * FROM vtab(?)').all(3),
        'Virtual table module "vtab" yielded a row with missing columns',
      );
      throwsType(
        () => db.prepare('SELECT * FROM vtab(?)').all(4),
        'Virtual table module "vtab" yielded a row with missing columns',
      );
    });

    it('8.3.4 yielding anything but an array or object → TypeError; a BigInt outside int64 → RangeError', () => {
      const msg = (n) => `Virtual table module "${n}" yielded something that isn't a valid row object`;
      db.table('num', {
        columns: ['x'],
        *rows() {
          yield 42;
        },
      });
      db.table('yields_undefined', {
        columns: ['x'],
        *rows() {
          yield;
        },
      });
      db.table('nul', {
        columns: ['x'],
        *rows() {
          yield null;
        },
      });
      db.table('str', {
        columns: ['x'],
        *rows() {
          yield 'x';
        },
      });
      throwsType(() => db.prepare('SELECT * FROM num').get(), msg('num'));
      throwsType(() => db.prepare('SELECT * FROM yields_undefined').get(), msg('yields_undefined'));
      throwsType(() => db.prepare('SELECT * FROM nul').get(), msg('nul'));
      throwsType(() => db.prepare('SELECT * FROM str').get(), msg('str'));
      db.table('big', {
        columns: ['x'],
        *rows() {
          yield [2n ** 64n];
        },
      });
      throwsRange(
        () => db.prepare('SELECT x FROM big').get(),
        'Virtual table module "big" yielded a bigint that was too big',
      );
    });

    it('8.3.4 yielded rows are not modified', () => {
      const rows = [{ x: 5 }, { x: 10 }];
      const arrays = [[5], [10]];
      db.table('o', {
        columns: ['x'],
        *rows() {
          yield* rows;
        },
      });
      db.table('a', {
        columns: ['x'],
        *rows() {
          yield* arrays;
        },
      });
      assert.deepEqual(db.prepare('SELECT rowid, x FROM o').raw().all(), [
        [1, 5],
        [2, 10],
      ]);
      assert.deepEqual(db.prepare('SELECT rowid, x FROM a').raw().all(), [
        [1, 5],
        [2, 10],
      ]);
      assert.deepEqual(rows, [{ x: 5 }, { x: 10 }]);
      assert.deepEqual(arrays, [[5], [10]]);
    });
  });

  describe('8.3.5 parameters', () => {
    it('8.3.5 validation of an explicit "parameters" array', () => {
      const t = (name, parameters) => () => db.table(name, { parameters, columns: ['foo'], *rows() {} });
      const invalid = (name) =>
        `Virtual table module "${name}" used a table definition with an invalid "parameters" property (should be an array of strings)`;
      throwsType(t('a', undefined), invalid('a'));
      throwsType(t('b', 'x'), invalid('b'));
      throwsType(t('c', { length: 1, 0: 'x', [Symbol.iterator]: () => ['x'].values() }), invalid('c'));
      throwsType(t('d', ['x', , 'y']), invalid('d'));
      throwsType(t('e', ['x', new String('y')]), invalid('e'));
      throwsType(t('f', ['x', 'x']), 'Virtual table module "f" used a table definition with duplicate parameter names');
      throwsType(
        t('g', ['foo']),
        'Virtual table module "g" used a table definition with column "foo" which was ambiguously defined as both a column and parameter',
      );
      throwsRange(
        t(
          'h',
          Array.from({ length: 33 }, (_, i) => `p${i}`),
        ),
        'Virtual table module "h" used a table definition with more than the maximum number of 32 parameters',
      );
      assert.equal(
        db.table('i', { parameters: Array.from({ length: 32 }, (_, i) => `p${i}`), columns: ['foo'], *rows() {} }),
        db,
      );
      assert.equal(
        db.table('j', {
          parameters: [],
          columns: ['foo'],
          *rows(a, b) {
            yield [1];
          },
        }),
        db,
      );
    });

    it('8.3.5 without "parameters", rows.length gives $1..$n; it must be an integer ≤ 32', () => {
      const msg = 'Expected function.length to be a positive integer';
      for (const bad of [undefined, null, '1', NaN, Infinity, 1.5, -1]) {
        throwsType(() => db.table('t', { columns: ['x'], rows: withLength(bad) }), msg);
      }
      throwsRange(
        () => db.table('t', { columns: ['x'], rows: withLength(33) }),
        'Virtual table module "t" used a table definition with more than the maximum number of 32 parameters',
      );
      assert.equal(db.table('t32', { columns: ['x'], rows: withLength(32) }), db);
      throwsType(
        () => db.table('t', { columns: ['$1'], *rows(a) {} }),
        'Virtual table module "t" used a table definition with column "$1" which was ambiguously defined as both a column and parameter',
      );
    });

    it('8.3.5 inferred parameters are hidden columns named "$1", "$2", …', () => {
      db.table('vtab', {
        columns: ['a', 'b'],
        *rows(x, y) {
          yield [x, y];
          yield [x * 2, y * 3];
        },
      });
      const expected = [
        { a: 2, b: 3 },
        { a: 4, b: 9 },
      ];
      assert.deepEqual(db.prepare('SELECT * FROM vtab(?, ?)').all(2, 3), expected);
      assert.deepEqual(db.prepare('SELECT * FROM vtab WHERE "$1" = ? AND "$2" = ?').all(2, 3), expected);
      assert.deepEqual(db.prepare('SELECT "$1", "$2", a FROM vtab(?, ?)').raw().all(2, 3), [
        [2, 3, 2],
        [2, 3, 4],
      ]);
      assert.deepEqual(
        db
          .prepare('SELECT a FROM vtab(?, ?)')
          .columns()
          .map((c) => c.name),
        ['a'],
      );
      assert.deepEqual(
        db
          .prepare('SELECT * FROM vtab(?, ?)')
          .columns()
          .map((c) => c.name),
        ['a', 'b'],
      );
      throwsSqlite(
        () => db.prepare('SELECT * FROM vtab(?, ?, ?)'),
        'SQLITE_ERROR',
        'too many arguments on vtab() - max 2',
      );
      throwsSqlite(() => db.prepare('SELECT * FROM vtab WHERE "$3" = ?'), 'SQLITE_ERROR', /^no such column: "?\$3/);
    });

    it('8.3.5 explicit parameters: generator receives exactly the declared count', () => {
      let received;
      db.table('vtab', {
        columns: ['a', 'b'],
        parameters: ['x', 'y', 'z'],
        *rows() {
          received = [...arguments];
          yield [arguments[0], arguments[1] + arguments[2]];
        },
      });
      assert.deepEqual(db.prepare('SELECT * FROM vtab(?, ?, ?)').all(2, 3, 4), [{ a: 2, b: 7 }]);
      assert.deepEqual(received, [2, 3, 4]);
      assert.deepEqual(db.prepare('SELECT * FROM vtab WHERE x = ? AND y = ? AND z = ?').all(2, 3, 4), [{ a: 2, b: 7 }]);
      assert.deepEqual(db.prepare('SELECT x, y, z FROM vtab(1, 2, 3)').raw().all(), [[1, 2, 3]]);
      throwsSqlite(
        () => db.prepare('SELECT * FROM vtab(?, ?, ?, ?)'),
        'SQLITE_ERROR',
        'too many arguments on vtab() - max 3',
      );
    });

    it('8.3.5 parameters accept only "=" (and IN); other operators → SqliteError at prepare', () => {
      db.table('vtab', {
        columns: ['a'],
        parameters: ['x', 'y'],
        *rows(x, y) {
          yield [`${x}/${y}`];
        },
      });
      const msg = (p) => `virtual table parameter "${p}" can only be constrained by the '=' operator`;
      for (const sql of [
        'x > 1',
        'x < 1',
        'x >= 1',
        'x <= 1',
        'x != 1',
        'x IS 1',
        'x IS NOT 1',
        'x LIKE 1',
        'x GLOB 1',
        'x IS NULL',
      ]) {
        throwsSqlite(() => db.prepare(`SELECT * FROM vtab WHERE ${sql}`), 'SQLITE_ERROR', msg('x'));
      }
      throwsSqlite(() => db.prepare('SELECT * FROM vtab WHERE x = 1 AND y > 1'), 'SQLITE_ERROR', msg('y'));
      // regular columns can be filtered with anything
      assert.deepEqual(db.prepare("SELECT a FROM vtab(1, 2) WHERE a > '0'").pluck().all(), ['1/2']);
      // IN on a parameter runs the generator once per value
      assert.deepEqual(db.prepare('SELECT a FROM vtab WHERE x IN (1, 2) AND y = 9').pluck().all(), ['1/9', '2/9']);
    });
  });

  describe('8.3.6 safeIntegers and directOnly', () => {
    it('8.3.6 must be booleans', () => {
      for (const value of [undefined, null, 1, 'true']) {
        throwsType(
          () => db.table('a', def({ safeIntegers: value })),
          'Virtual table module "a" used a table definition with an invalid "safeIntegers" property (should be a boolean)',
        );
        throwsType(
          () => db.table('b', def({ directOnly: value })),
          'Virtual table module "b" used a table definition with an invalid "directOnly" property (should be a boolean)',
        );
      }
      assert.equal(db.table('c', def({ safeIntegers: false, directOnly: false })), db);
    });

    it('8.3.6 safeIntegers: INTEGER arguments arrive as BigInt (REAL stays number)', () => {
      db.table('si_on', {
        columns: ['t'],
        safeIntegers: true,
        *rows(a) {
          yield [typeof a];
        },
      });
      db.table('si_off', {
        columns: ['t'],
        safeIntegers: false,
        *rows(a) {
          yield [typeof a];
        },
      });
      db.table('dflt', {
        columns: ['t'],
        *rows(a) {
          yield [typeof a];
        },
      });
      assert.deepEqual(
        db
          .prepare(
            'SELECT (SELECT t FROM si_on(5)), (SELECT t FROM si_on(5.5)), (SELECT t FROM si_off(5)), (SELECT t FROM dflt(5))',
          )
          .raw()
          .get(),
        ['bigint', 'number', 'number', 'number'],
      );
      db.table('exact', {
        columns: ['v'],
        safeIntegers: true,
        *rows(a) {
          yield [a];
        },
      });
      assert.equal(db.prepare('SELECT v FROM exact(9007199254740993)').pluck().safeIntegers().get(), 9007199254740993n);
    });

    it('8.3.6 without the option, the database default applies when the table is first used', () => {
      db.defaultSafeIntegers(true);
      db.table('now', {
        columns: ['t'],
        *rows(a) {
          yield [typeof a];
        },
      });
      db.table('forced_off', {
        columns: ['t'],
        safeIntegers: false,
        *rows(a) {
          yield [typeof a];
        },
      });
      assert.deepEqual(db.prepare('SELECT (SELECT t FROM now(1)), (SELECT t FROM forced_off(1))').raw().get(), [
        'bigint',
        'number',
      ]);
      db.defaultSafeIntegers(false);
      db.table('later', {
        columns: ['t'],
        *rows(a) {
          yield [typeof a];
        },
      });
      db.defaultSafeIntegers(true);
      // better-sqlite3 resolves the default when SQLite connects the table (first use), not at registration
      assert.equal(db.prepare('SELECT t FROM later(1)').pluck().get(), 'bigint');
      db.defaultSafeIntegers(false);
    });

    it('8.3.6 directOnly: usable directly but not from a view', () => {
      db.table('direct', def({ directOnly: true }));
      db.table('anywhere', def());
      db.exec('CREATE VIEW v_direct AS SELECT * FROM direct; CREATE VIEW v_anywhere AS SELECT * FROM anywhere;');
      assert.deepEqual(db.prepare('SELECT x FROM direct').pluck().all(), [1]);
      assert.deepEqual(db.prepare('SELECT x FROM v_anywhere').pluck().all(), [1]);
      throwsSqlite(
        () => db.prepare('SELECT x FROM v_direct').all(),
        'SQLITE_ERROR',
        'unsafe use of virtual table "direct"',
      );
    });
  });

  describe('8.3.7 argument semantics', () => {
    it('8.3.7 omitted parameters arrive as undefined, in any order', () => {
      db.table('vtab', {
        columns: ['value'],
        parameters: ['x', 'y', 'z'],
        *rows(x = 100, y = 10, z = 1) {
          assert.equal(arguments.length, 3);
          yield [x + y + z];
        },
      });
      const v = (sql, ...args) =>
        db
          .prepare(sql)
          .pluck()
          .get(...args);
      assert.equal(v('SELECT * FROM vtab(?, ?, ?)', 2, 3, 4), 9);
      assert.equal(v('SELECT * FROM vtab(?, ?)', 2, 3), 6);
      assert.equal(v('SELECT * FROM vtab(?)', 2), 13);
      assert.equal(v('SELECT * FROM vtab'), 111);
      assert.equal(v('SELECT * FROM vtab WHERE x = ? AND z = ?', 2, 3), 15);
      assert.equal(v('SELECT * FROM vtab WHERE y = ? AND z = ?', 2, 3), 105);
      assert.equal(v('SELECT * FROM vtab WHERE z = ? AND x = ?', 3, 2), 15);
      assert.equal(v('SELECT * FROM vtab WHERE z = ?', 2), 112);
      assert.equal(v('SELECT * FROM vtab WHERE y = ?', 2), 103);
    });

    it('8.3.7 omitted hidden columns read back as NULL', () => {
      db.table('vtab', {
        columns: ['v'],
        parameters: ['p', 'q'],
        *rows(p, q) {
          yield [1];
        },
      });
      assert.deepEqual(db.prepare('SELECT p, q, v FROM vtab(5)').raw().all(), [[5, null, 1]]);
    });

    it('8.3.7 any NULL argument ⇒ the generator is not called and there are no rows', () => {
      let calls = 0;
      db.table('vtab', {
        columns: ['val'],
        parameters: ['x', 'y', 'z'],
        *rows(x = 0, y = 0, z = 0) {
          calls += 1;
          yield [x + y + z];
        },
      });
      const all = (sql, ...args) =>
        db
          .prepare(sql)
          .pluck()
          .all(...args);
      assert.deepEqual(all('SELECT val FROM vtab(?, ?, ?)', 1, 10, 100), [111]);
      assert.deepEqual(all('SELECT val FROM vtab(?, ?)', 1, 10), [11]);
      assert.deepEqual(all('SELECT val FROM vtab(?, ?, ?)', 1, 10, null), []);
      assert.deepEqual(all('SELECT val FROM vtab(?, ?, ?)', 1, null, 100), []);
      assert.deepEqual(all('SELECT val FROM vtab(?, ?, ?)', null, 10, 100), []);
      assert.deepEqual(all('SELECT val FROM vtab(?, ?)', 1, undefined), []);
      assert.deepEqual(all('SELECT val FROM vtab WHERE y = NULL'), []);
      assert.equal(calls, 2);
    });

    it('8.3.7 duplicated constraints: equal values give rows, conflicting values give none', () => {
      db.table('vtab', {
        columns: ['v'],
        parameters: ['p', 'q'],
        *rows(p, q) {
          yield [`${p}|${q}`];
        },
      });
      assert.deepEqual(db.prepare('SELECT v FROM vtab WHERE p = 1 AND p = 1').pluck().all(), ['1|undefined']);
      assert.deepEqual(db.prepare('SELECT v FROM vtab WHERE p = 1 AND p = 2').pluck().all(), []);
      assert.deepEqual(db.prepare('SELECT v FROM vtab WHERE q = 2 AND p = 1').pluck().all(), ['1|2']);
    });

    it('8.3.7 chained constraints ("q" = "p" AND "p" = ?) are resolved', () => {
      db.table('vtab', {
        columns: ['v'],
        parameters: ['p', 'q'],
        *rows(p, q) {
          yield [`${p}|${q}`];
        },
      });
      assert.deepEqual(db.prepare('SELECT v FROM vtab WHERE q = p AND p = 5').pluck().all(), ['5|5']);
      assert.deepEqual(db.prepare('SELECT v FROM vtab WHERE p = 5 AND q = p').pluck().all(), ['5|5']);
      db.table('inferred', {
        columns: ['v'],
        *rows(a, b) {
          yield [`${a}|${b}`];
        },
      });
      assert.deepEqual(db.prepare('SELECT v FROM inferred WHERE "$2" = "$1" AND "$1" = ?').pluck().all(7), ['7|7']);
    });

    it('8.3.7 parameters can come from another table in a join (generator called per outer row)', () => {
      db.exec('CREATE TABLE outer_t (k); INSERT INTO outer_t VALUES (1), (2), (3);');
      let calls = 0;
      db.table('mul', {
        columns: ['r'],
        *rows(k) {
          calls += 1;
          yield [k * 10];
          yield [k * 100];
        },
      });
      const expected = [
        [1, 10],
        [1, 100],
        [2, 20],
        [2, 200],
        [3, 30],
        [3, 300],
      ];
      assert.deepEqual(
        db.prepare('SELECT k, r FROM outer_t JOIN mul ON mul."$1" = outer_t.k ORDER BY k, r').raw().all(),
        expected,
      );
      assert.equal(calls, 3);
      calls = 0;
      assert.deepEqual(db.prepare('SELECT k, r FROM outer_t, mul(outer_t.k) ORDER BY k, r').raw().all(), expected);
      assert.equal(calls, 3);
    });

    it('8.3.7 a Buffer argument is a private copy: mutating it does not change the query values', () => {
      const input = Buffer.alloc(8192, 0xbb);
      let called = false;
      db.table('vtab', {
        columns: ['x'],
        *rows(arg) {
          called = true;
          input[0] = 2;
          arg[0] = 2;
          yield [123];
        },
      });
      const [output, arg, num] = db.prepare('SELECT :input, "$1", x FROM vtab(:input)').raw().get({ input });
      assert.ok(called);
      assert.ok(output.equals(Buffer.alloc(8192, 0xbb)));
      assert.ok(arg.equals(Buffer.alloc(8192, 0xbb)));
      assert.equal(num, 123);
    });
  });

  describe('8.3.8 rowid', () => {
    it('8.3.8 rowids are assigned 1, 2, … per scan', () => {
      db.table('t', {
        columns: ['x'],
        *rows() {
          yield [5];
          yield [10];
          yield [15];
        },
      });
      assert.deepEqual(db.prepare('SELECT rowid, x FROM t').raw().all(), [
        [1, 5],
        [2, 10],
        [3, 15],
      ]);
      assert.deepEqual(db.prepare('SELECT rowid, x FROM t WHERE x > 5').raw().all(), [
        [2, 10],
        [3, 15],
      ]);
      assert.deepEqual(db.prepare('SELECT rowid, x FROM t WHERE rowid = 2').raw().all(), [[2, 10]]);
      assert.deepEqual(db.prepare('SELECT rowid, x FROM t').raw().all(), [
        [1, 5],
        [2, 10],
        [3, 15],
      ]);
    });

    it('8.3.8 a column named "rowid" is separate from the real rowid (oid, _rowid_)', () => {
      db.table('b', {
        columns: ['rowid'],
        *rows() {
          yield { rowid: 50 };
          yield { rowid: 60 };
        },
      });
      assert.deepEqual(db.prepare('SELECT oid AS oid, * FROM b').all(), [
        { oid: 1, rowid: 50 },
        { oid: 2, rowid: 60 },
      ]);
      assert.deepEqual(db.prepare('SELECT rowid, _rowid_ FROM b').raw().all(), [
        [50, 1],
        [60, 2],
      ]);
    });
  });

  describe('8.3.9 / 8.3.10 laziness, LIMIT/OFFSET, escaping', () => {
    it('8.3.9 rows are pulled one at a time by iterate()', () => {
      let state = 0;
      db.table('vtab', {
        columns: ['x'],
        *rows() {
          state += 1;
          yield ['foo'];
          state += 1;
          yield ['bar'];
          state += 1;
          yield ['baz'];
          state += 1;
          yield ['qux'];
          state += 1;
        },
      });
      const iterator = db.prepare('SELECT * FROM vtab').pluck().iterate();
      assert.equal(state, 0);
      assert.deepEqual(iterator.next(), { value: 'foo', done: false });
      assert.equal(state, 1);
      assert.deepEqual(iterator.next(), { value: 'bar', done: false });
      assert.equal(state, 2);
      const values = ['foo', 'bar'];
      for (const value of iterator) {
        values.push(value);
        if (value === 'baz') break;
      }
      assert.deepEqual(values, ['foo', 'bar', 'baz']);
      assert.equal(state, 3);
    });

    it('8.3.10 LIMIT and OFFSET return the right rows without draining the generator', () => {
      let pulled = 0;
      db.table('nums', {
        columns: ['n'],
        *rows() {
          for (let i = 1; i <= 10; i++) {
            pulled += 1;
            yield [i];
          }
        },
      });
      assert.deepEqual(db.prepare('SELECT n FROM nums LIMIT 2').pluck().all(), [1, 2]);
      assert.equal(pulled, 2);
      pulled = 0;
      assert.deepEqual(db.prepare('SELECT n FROM nums LIMIT 2 OFFSET 3').pluck().all(), [4, 5]);
      assert.equal(pulled, 5);
      pulled = 0;
      assert.deepEqual(db.prepare('SELECT n FROM nums LIMIT ? OFFSET ?').pluck().all(3, 8), [9, 10]);
      assert.equal(pulled, 10);
      assert.deepEqual(db.prepare('SELECT n FROM nums ORDER BY n DESC LIMIT 2').pluck().all(), [10, 9]);
    });

    it('8.3.10 column and parameter names with quotes and semicolons are escaped', () => {
      db.table('vtab', {
        columns: ['foo);'],
        parameters: ['x"); SELECT "y', 'y'],
        *rows(x, y) {
          yield [x];
          yield [y];
          yield [x + y];
        },
      });
      assert.deepEqual(db.prepare('SELECT "foo);" FROM vtab WHERE "x""); SELECT ""y" = ? AND y = ?').all(5, 10), [
        { 'foo);': 5 },
        { 'foo);': 10 },
        { 'foo);': 15 },
      ]);
      assert.deepEqual(
        db
          .prepare('SELECT * FROM vtab(1, 2)')
          .columns()
          .map((c) => c.name),
        ['foo);'],
      );
    });
  });

  describe('8.3.11 errors and busy', () => {
    it('8.3.11 an exception thrown by the generator propagates as the same value', () => {
      for (const [i, value] of thrownValues().entries()) {
        const calls = [];
        db.table(`mod${i}`, () => ({
          columns: ['x'],
          *rows() {
            calls.push('b');
            yield [42];
            calls.push('c');
            throw value;
          },
        }));
        db.exec(`CREATE VIRTUAL TABLE vt${i} USING mod${i}()`);
        assert.equal(db.prepare(`SELECT * FROM vt${i}`).pluck().get(), 42);
        assert.deepEqual(calls.splice(0), ['b']);
        throwsSame(() => db.prepare(`SELECT * FROM vt${i}`).pluck().all(), value);
        assert.deepEqual(calls.splice(0), ['b', 'c']);
      }
      const err = new Error('eponymous');
      db.table('epo', {
        columns: ['x'],
        *rows() {
          throw err;
        },
      });
      throwsSame(() => db.prepare('SELECT * FROM epo').get(), err);
    });

    it('8.3.11 a throwing generator closes the iterator that drove it', () => {
      db.exec('CREATE TABLE iterable (x INTEGER); INSERT INTO iterable VALUES (1), (2), (4), (8), (16), (32);');
      let i = 0;
      const err = new Error('fifth');
      db.table('vtab', {
        columns: ['value'],
        parameters: ['x'],
        *rows(x) {
          if (++i >= 5) throw err;
          yield [x];
        },
      });
      const iterator = db
        .prepare('SELECT value FROM iterable JOIN vtab USING (x) ORDER BY iterable.rowid')
        .pluck()
        .iterate();
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
      i = 0;
      assert.equal(db.exec('SELECT value FROM iterable JOIN vtab USING (x) LIMIT 4'), db);
      assert.equal(i, 4);
    });

    it('8.3.11 the connection is busy while the generator runs', () => {
      const seen = [];
      db.table('a', def());
      db.table('b', {
        columns: ['x'],
        *rows() {
          for (let i = 0; i < 3; ++i) {
            for (const attempt of [
              () => db.exec('SELECT * FROM a'),
              () => db.prepare('SELECT 555'),
              () => db.pragma('cache_size'),
              () => db.function('f', () => 1),
              () => db.aggregate('g', { step: () => 1 }),
              () => db.table('y', def()),
            ]) {
              try {
                attempt();
                seen.push('no error');
              } catch (e) {
                seen.push(e instanceof TypeError && e.message === BUSY ? 'busy' : e.message);
              }
            }
            yield [i];
          }
        },
      });
      assert.deepEqual(db.prepare('SELECT * FROM b').pluck().all(), [0, 1, 2]);
      assert.deepEqual(seen, Array(18).fill('busy'));
      assert.equal(db.exec('SELECT * FROM a'), db);
      assert.equal(db.prepare('SELECT 555').pluck().get(), 555);
      assert.equal(db.table('yy', def()), db);
    });

    it('8.3.11 the factory runs while the connection is busy (inside CREATE VIRTUAL TABLE)', () => {
      let seen;
      db.table('mod', () => {
        try {
          db.prepare('SELECT 1');
          seen = 'no error';
        } catch (e) {
          seen = e instanceof TypeError ? e.message : String(e);
        }
        return def();
      });
      db.exec('CREATE VIRTUAL TABLE vt USING mod()');
      assert.equal(seen, BUSY);
    });

    it('8.3.11 a JS error from a virtual table does not leak into the next SQLite error', () => {
      db.exec('CREATE TABLE data (value INTEGER)');
      const stale = db.prepare('SELECT value FROM data');
      db.exec('DROP TABLE data');
      const err = new Error('foo');
      db.table('vtab', {
        columns: ['x'],
        *rows() {
          throw err;
        },
      });
      throwsSame(() => db.prepare('SELECT * FROM vtab').get(), err);
      throwsSqlite(() => stale.get(), 'SQLITE_ERROR', 'no such table: data');
    });
  });
});
