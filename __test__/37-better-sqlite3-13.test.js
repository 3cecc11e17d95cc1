'use strict';
// What better-sqlite3 13 added to the API (as its API documentation and tests describe it): Database#explain(),
// Statement#toString(), plain objects of other realms as named parameters, Database#table()
// validation that no replaced Array.prototype method can fool, and SqliteError as a real
// Error (Error.isError, other realms).
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const util = require('node:util');
const vm = require('node:vm');
const { Database, isCipherlite } = require('./_module');
// Where cipherlite goes further than better-sqlite3 13 (run with CIPHERLITE_TEST_AGAINST
// to see the rest hold for it too).
const CIPHERLITE_ONLY = !isCipherlite && 'cipherlite goes further here';
const { throwsExactly } = require('./_helpers');

const { SqliteError } = Database;

describe('better-sqlite3 13: Database#explain()', () => {
  let db;
  beforeEach(() => {
    db = new Database(':memory:');
    db.exec('CREATE TABLE entries (a TEXT, b INTEGER)');
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  it('is a shared prototype method', () => {
    assert.equal(typeof Database.prototype.explain, 'function');
    assert.equal(db.explain, Database.prototype.explain);
    assert.equal(Object.prototype.hasOwnProperty.call(db, 'explain'), false);
  });

  it('takes a primitive string only', () => {
    for (const bad of [123, 0, null, undefined, new String('SELECT * FROM entries'), {}]) {
      throwsExactly(() => db.explain(bad), TypeError, 'Expected first argument to be a string');
    }
    throwsExactly(() => db.explain(), TypeError, 'Expected first argument to be a string');
  });

  it('invalid SQL throws SqliteError with its code', () => {
    throwsExactly(() => db.explain('SELECT * FROM nonexistent'), SqliteError, 'no such table: nonexistent', {
      code: 'SQLITE_ERROR',
    });
    throwsExactly(() => db.explain('CREATE TABLE entries (a TEXT'), SqliteError, 'table entries already exists', {
      code: 'SQLITE_ERROR',
    });
    throwsExactly(() => db.explain('CREATE TABLE other (a TEXT'), SqliteError, 'incomplete input', {
      code: 'SQLITE_ERROR',
    });
  });

  it('returns the bytecode program, one row per instruction', () => {
    const program = db.explain('SELECT * FROM entries');
    assert.ok(Array.isArray(program) && program.length > 0);
    program.forEach((row, i) => {
      assert.deepEqual(Object.keys(row), ['addr', 'opcode', 'p1', 'p2', 'p3', 'p4', 'p5', 'comment']);
      assert.equal(row.addr, i);
      assert.equal(typeof row.opcode, 'string');
    });
    assert.equal(program[0].opcode, 'Init');
    assert.ok(program.some((row) => row.opcode === 'Halt'));
    assert.ok(program.some((row) => row.opcode === 'OpenRead'));
    // Only inspected: nothing ran
    assert.equal(
      db.explain('INSERT INTO entries VALUES (1, 2)').some((row) => row.opcode === 'Insert'),
      true,
    );
    assert.equal(db.prepare('SELECT count(*) FROM entries').pluck().get(), 0);
  });

  it('allows unbound parameters, anonymous and named', () => {
    throwsExactly(
      () => db.prepare('SELECT * FROM entries WHERE a = ?').all(),
      RangeError,
      'Too few parameter values were provided',
    );
    const one = db.explain('SELECT * FROM entries WHERE a = ?');
    assert.ok(
      one.length > 0 && one.some((row) => row.opcode === 'Variable' || row.opcode === 'Ne' || row.opcode === 'Eq'),
    );
    const two = db.explain('SELECT * FROM entries WHERE a = ? AND b = @b AND a <> :c AND b <> $d');
    assert.ok(two.length > one.length);
  });

  it('binds values given after the SQL (cipherlite), with the usual rules', { skip: CIPHERLITE_ONLY }, () => {
    const plan = db.explain('QUERY PLAN SELECT * FROM entries WHERE a = ? AND b = @b', 'x', { b: 1 });
    assert.ok(plan.length > 0);
    throwsExactly(
      () => db.explain('SELECT * FROM entries WHERE a = ?', 'x', 'y'),
      RangeError,
      'Too many parameter values were provided',
    );
    throwsExactly(
      () => db.explain('SELECT * FROM entries WHERE a = ?', true),
      TypeError,
      'SQLite3 can only bind numbers, strings, bigints, buffers, and null',
    );
  });

  it('QUERY PLAN gives the query plan rows', () => {
    db.exec('CREATE INDEX entries_b ON entries(b)');
    const plan = db.explain('QUERY PLAN SELECT * FROM entries');
    assert.ok(plan.length > 0);
    for (const row of plan) {
      assert.deepEqual(Object.keys(row), ['id', 'parent', 'notused', 'detail']);
      assert.equal(typeof row.detail, 'string');
    }
    assert.deepEqual(
      plan.map((r) => r.detail),
      ['SCAN entries'],
    );
    const indexed = db.explain('QUERY PLAN SELECT * FROM entries WHERE b = ?');
    assert.deepEqual(
      indexed.map((r) => r.detail),
      ['SEARCH entries USING INDEX entries_b (b=?)'],
    );
  });

  it('logs to verbose, refuses a closed database like prepare()', () => {
    const logged = [];
    const vdb = new Database(':memory:', { verbose: (sql) => logged.push(sql) });
    try {
      vdb.explain('SELECT 1');
      assert.deepEqual(logged, ['EXPLAIN SELECT 1']);
    } finally {
      vdb.close();
    }
    db.close();
    throwsExactly(() => db.explain('SELECT 1'), TypeError, 'The database connection is not open');
  });
});

describe('better-sqlite3 13: Statement#toString()', () => {
  let db;
  beforeEach(() => {
    db = new Database(':memory:');
    db.exec('CREATE TABLE entries (a TEXT, b INTEGER, c BLOB)');
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  it('is the source SQL before any bind()', () => {
    for (const source of [
      'SELECT * FROM entries',
      'SELECT * FROM entries WHERE a = ? AND b = ?',
      'SELECT @x, :y, $z',
    ]) {
      const stmt = db.prepare(source);
      assert.equal(stmt.toString(), source);
      assert.equal(stmt.toString(), stmt.source);
    }
  });

  it('ignores the one-shot values of run/get/all/iterate', () => {
    db.exec("INSERT INTO entries (a, b) VALUES ('foobar', 1), ('foobar', 2)");
    const source = 'SELECT b FROM entries WHERE a = ?';
    const stmt = db.prepare(source);
    const seen = [];
    for (const { b } of stmt.iterate('foobar')) {
      seen.push(b);
      assert.equal(stmt.toString(), source);
    }
    assert.deepEqual(seen, [1, 2]);
    assert.equal(stmt.get('foobar').b, 1);
    assert.equal(stmt.all('foobar').length, 2);
    assert.equal(stmt.toString(), source);
    const insert = db.prepare('INSERT INTO entries (a) VALUES (?)');
    insert.run('x');
    assert.equal(insert.toString(), 'INSERT INTO entries (a) VALUES (?)');
  });

  it('is the expanded SQL once bind() bound values', () => {
    const stmt = db.prepare('SELECT * FROM entries WHERE a = ? AND b = ?');
    stmt.bind('foo', 25);
    assert.equal(stmt.toString(), "SELECT * FROM entries WHERE a = 'foo' AND b = 25.0");
    const insert = db.prepare('INSERT INTO entries VALUES (?, ?, ?)');
    insert.bind(null, 25, Buffer.from([0xde, 0xad]));
    assert.equal(insert.toString(), "INSERT INTO entries VALUES (NULL, 25.0, x'dead')");
    const named = db.prepare('SELECT @a, :b, $c');
    named.bind({ a: "it's", b: 7n, c: 1.5 });
    assert.equal(named.toString(), "SELECT 'it''s', 7, 1.5");
    // running it does not change what it says
    named.get();
    assert.equal(named.toString(), "SELECT 'it''s', 7, 1.5");
  });

  it('bind() with no parameters keeps the source', () => {
    const stmt = db.prepare('SELECT 555');
    stmt.bind();
    assert.equal(stmt.toString(), 'SELECT 555');
  });

  it('a failed bind() leaves the source', () => {
    const stmt = db.prepare('SELECT ?, ?');
    throwsExactly(() => stmt.bind('a'), RangeError, 'Too few parameter values were provided');
    assert.equal(stmt.toString(), 'SELECT ?, ?');
  });

  it('is the source again after close()', () => {
    const source = 'SELECT * FROM entries WHERE a = ?';
    const stmt = db.prepare(source);
    stmt.bind('foobar');
    assert.equal(stmt.toString(), "SELECT * FROM entries WHERE a = 'foobar'");
    db.close();
    assert.equal(stmt.toString(), source);
    assert.equal(stmt.toString(), stmt.source);
  });

  it('is what coercion to a string uses', () => {
    const stmt = db.prepare('SELECT * FROM entries WHERE a = ? AND b = ?');
    assert.equal(String(stmt), 'SELECT * FROM entries WHERE a = ? AND b = ?');
    assert.equal(`${stmt}`, 'SELECT * FROM entries WHERE a = ? AND b = ?');
    stmt.bind('foo', 25);
    assert.equal('' + stmt, "SELECT * FROM entries WHERE a = 'foo' AND b = 25.0");
    assert.equal(stmt.toString, Database.prototype.prepare.call(db, 'SELECT 1').toString);
  });
});

describe('better-sqlite3 13: plain objects from other realms bind named parameters', () => {
  let db;
  beforeEach(() => {
    db = new Database(':memory:');
    db.exec('CREATE TABLE entries (a TEXT, b INTEGER, c TEXT)');
  });
  afterEach(() => db.close());

  const NOT_PLAIN = 'Named parameters can only be passed within plain objects';

  it('an object literal and an Object.create(null) object of a vm context', () => {
    const context = vm.createContext({});
    const literal = vm.runInContext('({ a: "123", b: null })', context);
    assert.notEqual(Object.getPrototypeOf(literal), Object.prototype);
    const insert = db.prepare('INSERT INTO entries VALUES (@a, @a, ?)');
    insert.bind(literal, null);
    insert.run();
    const nullProto = vm.runInContext('Object.assign(Object.create(null), { a: "456" })', context);
    db.prepare('INSERT INTO entries VALUES (@a, @a, ?)').run(nullProto, 'x');
    db.prepare('INSERT INTO entries VALUES (@a, 9, $c)').run(vm.runInContext('({ a: "789", c: "z" })', context));
    assert.deepEqual(db.prepare('SELECT * FROM entries ORDER BY rowid').all(), [
      { a: '123', b: 123, c: null },
      { a: '456', b: 456, c: 'x' },
      { a: '789', b: 9, c: 'z' },
    ]);
  });

  it('class instances, Dates, boxed primitives and functions of any realm are not plain', () => {
    const context = vm.createContext({});
    const stmt = () => db.prepare('INSERT INTO entries VALUES (@a, @a, ?)');
    const notPlain = [
      new (class {
        get a() {
          return '123';
        }
      })(),
      Object.assign(new Date(), { a: 123 }),
      Object.assign(new Number(123), { a: 123 }),
      Object.assign(Object.create({ inherited: true }), { a: 1 }),
      vm.runInContext('new (class { get a() { return "123"; } })()', context),
      vm.runInContext('Object.assign(new Date(), { a: 1 })', context),
      vm.runInContext('Object.assign(new Map(), { a: 1 })', context),
    ];
    for (const value of notPlain) {
      throwsExactly(() => stmt().bind(value, null), TypeError, NOT_PLAIN);
      throwsExactly(() => stmt().run(value, null), TypeError, NOT_PLAIN);
    }
    throwsExactly(
      () =>
        stmt().run(
          Object.assign(() => {}, { a: 123 }),
          null,
        ),
      TypeError,
      NOT_PLAIN,
    );
    assert.equal(db.prepare('SELECT count(*) FROM entries').pluck().get(), 0);
  });

  it('a Proxy of a plain object binds like it; an exception from its traps comes through', () => {
    db.prepare('INSERT INTO entries VALUES (@a, @a, ?)').run(new Proxy({ a: '1' }, {}), null);
    assert.deepEqual(db.prepare('SELECT a, b FROM entries').get(), { a: '1', b: 1 });
    const thrown = new Error('trap');
    const proxy = new Proxy(
      { a: 1 },
      {
        get() {
          throw thrown;
        },
      },
    );
    let caught;
    try {
      db.prepare('INSERT INTO entries VALUES (@a, @a, ?)').run(proxy, null);
    } catch (e) {
      caught = e;
    }
    assert.equal(caught, thrown);
    // the connection carries on
    assert.equal(db.prepare('SELECT count(*) AS n FROM entries').get().n, 1);
  });
});

describe('better-sqlite3 13: Database#table() validation ignores replaced Array.prototype methods', () => {
  let db;
  beforeEach(() => {
    db = new Database(':memory:');
  });
  afterEach(() => db.close());

  function withReplaced(name, replacement, fn) {
    const original = Array.prototype[name];
    Array.prototype[name] = replacement;
    try {
      return fn();
    } finally {
      Array.prototype[name] = original;
    }
  }

  it('a non-string parameter or column is refused whatever every/map/includes/iterator say', () => {
    const rows = function* () {};
    const cases = [
      [
        { parameters: [new String('x')], columns: ['foo'], rows },
        'with an invalid "parameters" property (should be an array of strings)',
      ],
      [{ columns: ['foo', 1], rows }, 'with an invalid "columns" property (should be an array of strings)'],
    ];
    // better-sqlite3 13 guards against a replaced `every`; cipherlite against the others too.
    for (const name of isCipherlite ? ['every', 'some', 'map', 'includes', 'find', Symbol.iterator] : ['every']) {
      for (const [definition, what] of cases) {
        let err;
        withReplaced(
          name,
          function () {
            return name === Symbol.iterator ? ['ok'][Symbol.iterator]() : true;
          },
          () => {
            try {
              db.table('t', definition);
            } catch (e) {
              err = e;
            }
          },
        );
        assert.ok(err instanceof TypeError, `${String(name)}: ${err}`);
        assert.equal(err.message, `Virtual table module "t" used a table definition ${what}`);
      }
    }
  });

  it('a column named like a parameter is still caught with includes/find replaced', { skip: CIPHERLITE_ONLY }, () => {
    for (const name of ['includes', 'find', 'indexOf']) {
      let err;
      withReplaced(
        name,
        () => (name === 'find' ? undefined : name === 'indexOf' ? -1 : false),
        () => {
          try {
            db.table('t', { parameters: ['x'], columns: ['x'], rows: function* () {} });
          } catch (e) {
            err = e;
          }
        },
      );
      assert.ok(err instanceof TypeError, String(err));
      assert.equal(
        err.message,
        'Virtual table module "t" used a table definition with column "x" which was ambiguously defined as both a column and parameter',
      );
    }
  });

  it('a valid definition still works while map/join are replaced', { skip: CIPHERLITE_ONLY }, () => {
    withReplaced(
      'map',
      () => ['garbage'],
      () =>
        withReplaced(
          'join',
          () => 'garbage',
          () => {
            db.table('numbers', {
              columns: ['n'],
              parameters: ['upto'],
              *rows(upto) {
                for (let i = 1; i <= upto; ++i) yield [i];
              },
            });
          },
        ),
    );
    assert.deepEqual(db.prepare('SELECT n FROM numbers(3)').pluck().all(), [1, 2, 3]);
  });
});

describe('better-sqlite3 13: SqliteError is a real Error, in any realm', () => {
  it('thrown errors and constructed ones are native errors', () => {
    const db = new Database(':memory:');
    let thrown;
    try {
      db.exec('NOT SQL');
    } catch (e) {
      thrown = e;
    }
    db.close();
    // Callable without new as in better-sqlite3 12 (13's class needs new).
    for (const err of [thrown, new SqliteError('m', 'C'), ...(isCipherlite ? [SqliteError('m', 'C')] : [])]) {
      assert.ok(err instanceof SqliteError);
      assert.equal(util.types.isNativeError(err), true);
      assert.equal(Object.prototype.toString.call(err), '[object Error]');
      if (typeof Error.isError === 'function') assert.equal(Error.isError(err), true);
    }
  });

  it(
    'Error.isError says so where Node has it',
    { skip: typeof Error.isError !== 'function' && `Error.isError is not in Node ${process.version}` },
    () => {
      assert.equal(Error.isError(new SqliteError('m', 'C')), true);
      assert.equal(Error.isError(Object.create(SqliteError.prototype)), false);
    },
  );

  it('another realm recognises it as an error; structuredClone keeps message and name', () => {
    const err = new SqliteError('boom', 'SQLITE_BUSY');
    const context = vm.createContext({ err });
    assert.equal(vm.runInContext('err instanceof Error', context), false); // another realm's Error
    assert.equal(vm.runInContext('Object.prototype.toString.call(err)', context), '[object Error]');
    if (vm.runInContext('typeof Error.isError', context) === 'function') {
      assert.equal(vm.runInContext('Error.isError(err)', context), true);
    }
    const clone = structuredClone(err);
    assert.equal(util.types.isNativeError(clone), true);
    assert.equal(clone.message, 'boom');
  });

  it("subclasses work as they do with 13's class", () => {
    class MyError extends SqliteError {}
    const err = new MyError('m', 'C');
    assert.ok(err instanceof MyError);
    assert.ok(err instanceof SqliteError);
    assert.equal(err.code, 'C');
    assert.equal(err.message, 'm');
    assert.equal(util.types.isNativeError(err), true);
    throwsExactly(() => new MyError('m'), TypeError, 'Expected second argument to be a string');
  });
});
