'use strict';
// docs/better-sqlite3-behaviour.md §7: db.transaction(fn).
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const {
  Database,
  memdb,
  tmpdir,
  throwsTypeError,
  throwsSqliteError,
  checkSqliteError,
  checkError,
  caught,
  busyProbe,
  MSG,
} = require('./_helpers-stmt');

const SP = '`\t_bs3.\t`'; // better-sqlite3's fixed savepoint name, as it appears in SQL

describe('Transactions (§7)', () => {
  let db;
  let log;
  let rows;
  let ins;
  beforeEach(() => {
    log = [];
    db = memdb({ verbose: (sql) => log.push(sql) });
    db.exec('CREATE TABLE t (x UNIQUE)');
    ins = db.prepare('INSERT INTO t VALUES (?)');
    const sel = db.prepare('SELECT x FROM t ORDER BY rowid').pluck();
    rows = () => sel.all();
    log.length = 0;
  });
  afterEach(() => {
    if (db.open) db.close();
  });
  // the verbose log without the test's own SELECTs
  const trace = () => log.filter((s) => !s.startsWith('SELECT x FROM t'));

  // ---- 7.1 / 7.2 shape -------------------------------------------------------------------------

  it('7.1 returns a new function each time; trx.default === trx', () => {
    const fn = () => 1;
    const a = db.transaction(fn);
    const b = db.transaction(fn);
    assert.equal(typeof a, 'function');
    assert.notEqual(a, b);
    assert.equal(a.default, a);
    assert.notEqual(a, fn);
  });

  it('7.1 a non-function argument → TypeError', () => {
    for (const v of [undefined, null, 1, 'fn', {}, [], Symbol('s')]) {
      throwsTypeError(() => db.transaction(v), 'Expected first argument to be a function');
    }
    throwsTypeError(() => db.transaction(), 'Expected first argument to be a function');
  });

  it('7.2 deferred/immediate/exclusive variants all carry the same four properties and .database', () => {
    const trx = db.transaction(() => 1);
    const variants = [trx, trx.deferred, trx.immediate, trx.exclusive];
    assert.equal(new Set(variants).size, 4);
    for (const v of variants) {
      assert.equal(typeof v, 'function');
      assert.equal(v.default, trx);
      assert.equal(v.deferred, trx.deferred);
      assert.equal(v.immediate, trx.immediate);
      assert.equal(v.exclusive, trx.exclusive);
      assert.equal(v.database, db);
      for (const p of ['run', 'get', 'all', 'source', 'reader', 'busy']) assert.equal(v[p], undefined, p);
      assert.deepEqual(Object.keys(v), ['database']);
      for (const p of ['default', 'deferred', 'immediate', 'exclusive', 'database']) {
        const d = Object.getOwnPropertyDescriptor(v, p);
        assert.equal(d.writable, false, p);
        assert.equal(d.configurable, false, p);
        assert.equal(d.enumerable, p === 'database', p);
      }
    }
  });

  it('7.2 the variants run BEGIN / BEGIN DEFERRED / BEGIN IMMEDIATE / BEGIN EXCLUSIVE, then COMMIT', () => {
    const trx = db.transaction(() => 1);
    trx();
    trx.deferred();
    trx.immediate();
    trx.exclusive();
    assert.deepEqual(trace(), [
      'BEGIN',
      'COMMIT',
      'BEGIN DEFERRED',
      'COMMIT',
      'BEGIN IMMEDIATE',
      'COMMIT',
      'BEGIN EXCLUSIVE',
      'COMMIT',
    ]);
  });

  it('7.2 the variants take the locks their BEGIN implies (seen from a second connection)', () => {
    const tmp = tmpdir();
    try {
      const file = tmp.file('locks.db');
      const a = new Database(file);
      const b = new Database(file, { timeout: 0 });
      try {
        a.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)');
        const seenBy = () => ({
          read: (() => {
            try {
              return b.prepare('SELECT count(*) FROM t').pluck().get();
            } catch (e) {
              return e.code;
            }
          })(),
          write: (() => {
            try {
              b.exec('BEGIN IMMEDIATE');
              b.exec('ROLLBACK');
              return 'ok';
            } catch (e) {
              return e.code;
            }
          })(),
        });
        let seen;
        a.transaction(() => {
          seen = seenBy();
        })();
        assert.deepEqual(seen, { read: 1, write: 'ok' }, 'BEGIN takes no lock by itself');
        a.transaction(() => {
          seen = seenBy();
        }).deferred();
        assert.deepEqual(seen, { read: 1, write: 'ok' }, 'BEGIN DEFERRED takes no lock by itself');
        a.transaction(() => {
          seen = seenBy();
        }).immediate();
        assert.deepEqual(seen, { read: 1, write: 'SQLITE_BUSY' }, 'BEGIN IMMEDIATE blocks other writers');
        a.transaction(() => {
          seen = seenBy();
        }).exclusive();
        assert.deepEqual(
          seen,
          { read: 'SQLITE_BUSY', write: 'SQLITE_BUSY' },
          'BEGIN EXCLUSIVE blocks other readers too',
        );
        const err = caught(() => a.transaction(() => b.exec('BEGIN IMMEDIATE')).immediate());
        checkSqliteError(err, 'SQLITE_BUSY', 'database is locked');
        assert.equal(b.inTransaction, false);
      } finally {
        a.close();
        b.close();
      }
    } finally {
      tmp.cleanup();
    }
  });

  // ---- 7.3 calling ------------------------------------------------------------------------------

  it("7.3 forwards this and all arguments, returns fn's result and commits", () => {
    let seenThis;
    let seenArgs;
    let inside;
    const trx = db.transaction(function (...args) {
      seenThis = this;
      seenArgs = args;
      inside = db.inTransaction;
      for (const a of args) ins.run(a);
      return { result: args.length };
    });
    const self = { me: true };
    const ret = trx.call(self, 'a', 'b', undefined);
    assert.deepStrictEqual(ret, { result: 3 });
    assert.equal(seenThis, self);
    assert.deepStrictEqual(seenArgs, ['a', 'b', undefined]);
    assert.equal(inside, true);
    assert.equal(db.inTransaction, false);
    assert.deepEqual(rows(), ['a', 'b', null]);
    const obj = { trx, n: 7 };
    let thisSeen;
    obj.run = db.transaction(function () {
      thisSeen = this;
      return this.n;
    });
    assert.equal(obj.run(), 7);
    assert.equal(thisSeen, obj);
    // every variant forwards too
    assert.equal(
      db
        .transaction(function (x) {
          return [this, x];
        })
        .immediate.call(self, 5)[0],
      self,
    );
  });

  it('7.3 the same wrapper can be called many times', () => {
    const add = db.transaction((v) => ins.run(v).changes);
    assert.equal(add('a'), 1);
    assert.equal(add('b'), 1);
    assert.equal(add.exclusive('c'), 1);
    assert.deepEqual(rows(), ['a', 'b', 'c']);
    assert.deepEqual(
      trace().filter((s) => !s.startsWith('INSERT')),
      ['BEGIN', 'COMMIT', 'BEGIN', 'COMMIT', 'BEGIN EXCLUSIVE', 'COMMIT'],
    );
  });

  // ---- 7.4 errors ----------------------------------------------------------------------------------

  it('7.4 a throw rolls back and rethrows the very same value', () => {
    for (const thrown of [new Error('boom'), new TypeError('t'), 'str', 0, null, undefined, { o: 1 }]) {
      log.length = 0;
      const trx = db.transaction(() => {
        ins.run('x');
        throw thrown;
      });
      let got = 'nothing thrown';
      try {
        trx();
      } catch (e) {
        got = e;
      }
      assert.equal(got, thrown);
      assert.equal(db.inTransaction, false);
      assert.deepEqual(rows(), []);
      assert.deepEqual(trace(), ['BEGIN', "INSERT INTO t VALUES ('x')", 'ROLLBACK']);
    }
  });

  it('7.4 a SqliteError inside rolls back the earlier writes and propagates', () => {
    ins.run('dup');
    const trx = db.transaction(() => {
      ins.run('new');
      ins.run('dup');
    });
    throwsSqliteError(() => trx(), 'SQLITE_CONSTRAINT_UNIQUE', 'UNIQUE constraint failed: t.x');
    assert.deepEqual(rows(), ['dup']);
    assert.equal(db.inTransaction, false);
  });

  it('7.4 returning a promise → TypeError after rolling back', () => {
    const trx = db.transaction(() => {
      ins.run('p');
      return Promise.resolve(1);
    });
    throwsTypeError(() => trx(), 'Transaction function cannot return a promise');
    assert.deepEqual(rows(), []);
    assert.equal(db.inTransaction, false);
    assert.deepEqual(trace(), ['BEGIN', "INSERT INTO t VALUES ('p')", 'ROLLBACK']);
  });

  it('7.4 an async function → TypeError; its synchronous part is rolled back', async () => {
    let after = false;
    const trx = db.transaction(async () => {
      ins.run('sync part');
      await null;
      after = true;
    });
    throwsTypeError(() => trx(), 'Transaction function cannot return a promise');
    assert.deepEqual(rows(), []);
    assert.equal(db.inTransaction, false);
    await new Promise((r) => setImmediate(r));
    assert.equal(after, true, 'the async body still finishes on its own');
  });

  it('7.4 any thenable counts as a promise; an object with a non-function then does not', () => {
    throwsTypeError(
      () =>
        db.transaction(() => {
          ins.run('a');
          return { then() {} };
        })(),
      'Transaction function cannot return a promise',
    );
    assert.deepEqual(rows(), []);
    const notThenable = { then: 5 };
    assert.equal(
      db.transaction(() => {
        ins.run('b');
        return notThenable;
      })(),
      notThenable,
    );
    assert.deepEqual(rows(), ['b']);
    const fnWithThen = () => {};
    fnWithThen.then = () => {};
    throwsTypeError(() => db.transaction(() => fnWithThen)(), 'Transaction function cannot return a promise');
  });

  // ---- 7.5 nesting ------------------------------------------------------------------------------------

  it('7.5 nested wrappers use a savepoint; an inner failure rolls back only the inner part', () => {
    const inner = db.transaction((v) => {
      ins.run(v);
      if (v === 'bad') throw new Error('inner');
    });
    const outer = db.transaction(() => {
      ins.run('a');
      assert.throws(() => inner('bad'), { message: 'inner' });
      assert.equal(db.inTransaction, true, 'outer transaction still open');
      inner('b');
    });
    outer();
    assert.deepEqual(rows(), ['a', 'b']);
    assert.deepEqual(trace(), [
      'BEGIN',
      "INSERT INTO t VALUES ('a')",
      `SAVEPOINT ${SP}`,
      "INSERT INTO t VALUES ('bad')",
      `ROLLBACK TO ${SP}`,
      `RELEASE ${SP}`,
      `SAVEPOINT ${SP}`,
      "INSERT INTO t VALUES ('b')",
      `RELEASE ${SP}`,
      'COMMIT',
    ]);
  });

  it('7.5 an outer failure after a successful inner one rolls back everything', () => {
    const inner = db.transaction(() => ins.run('inner'));
    const outer = db.transaction(() => {
      ins.run('outer');
      inner();
      throw new Error('late');
    });
    assert.throws(() => outer(), { message: 'late' });
    assert.deepEqual(rows(), []);
    assert.equal(db.inTransaction, false);
  });

  it('7.5 three levels deep; a variant called inside a transaction also uses the savepoint', () => {
    const l3 = db.transaction(() => {
      ins.run('l3');
      throw new Error('l3');
    });
    const l2 = db.transaction(() => {
      ins.run('l2');
      try {
        l3.exclusive();
      } catch (e) {
        void e;
      }
    });
    const l1 = db.transaction(() => {
      ins.run('l1');
      l2.immediate();
    });
    l1.deferred();
    assert.deepEqual(rows(), ['l1', 'l2']);
    assert.deepEqual(trace(), [
      'BEGIN DEFERRED',
      "INSERT INTO t VALUES ('l1')",
      `SAVEPOINT ${SP}`,
      "INSERT INTO t VALUES ('l2')",
      `SAVEPOINT ${SP}`,
      "INSERT INTO t VALUES ('l3')",
      `ROLLBACK TO ${SP}`,
      `RELEASE ${SP}`,
      `RELEASE ${SP}`,
      'COMMIT',
    ]);
  });

  it('7.5 inside a manually begun transaction the wrapper uses a savepoint and leaves it open', () => {
    db.exec('BEGIN');
    db.transaction(() => ins.run('k'))();
    assert.equal(db.inTransaction, true);
    assert.throws(
      () =>
        db.transaction(() => {
          ins.run('gone');
          throw new Error('x');
        })(),
      { message: 'x' },
    );
    assert.equal(db.inTransaction, true);
    db.exec('ROLLBACK');
    assert.deepEqual(rows(), []);
    assert.deepEqual(trace(), [
      'BEGIN',
      `SAVEPOINT ${SP}`,
      "INSERT INTO t VALUES ('k')",
      `RELEASE ${SP}`,
      `SAVEPOINT ${SP}`,
      "INSERT INTO t VALUES ('gone')",
      `ROLLBACK TO ${SP}`,
      `RELEASE ${SP}`,
      'ROLLBACK',
    ]);
  });

  // ---- 7.6 SQLite or fn ends the transaction itself ------------------------------------------------

  it('7.6 INSERT OR ROLLBACK ends the transaction: the SqliteError propagates, no second rollback', () => {
    ins.run('a');
    log.length = 0;
    const trx = db.transaction(() => {
      ins.run('g');
      db.prepare("INSERT OR ROLLBACK INTO t VALUES ('a')").run();
    });
    throwsSqliteError(() => trx(), 'SQLITE_CONSTRAINT_UNIQUE', 'UNIQUE constraint failed: t.x');
    assert.equal(db.inTransaction, false);
    assert.deepEqual(rows(), ['a']);
    assert.deepEqual(trace(), ['BEGIN', "INSERT INTO t VALUES ('g')", "INSERT OR ROLLBACK INTO t VALUES ('a')"]);
  });

  it('7.6 INSERT OR ROLLBACK inside a nested wrapper ends the whole transaction; the same error reaches the caller', () => {
    ins.run('a');
    log.length = 0;
    let innerErr;
    const inner = db.transaction(() => db.prepare("INSERT OR ROLLBACK INTO t VALUES ('a')").run());
    const outer = db.transaction(() => {
      ins.run('h');
      try {
        inner();
      } catch (e) {
        innerErr = e;
        throw e;
      }
    });
    const err = caught(() => outer());
    assert.equal(err, innerErr);
    checkSqliteError(err, 'SQLITE_CONSTRAINT_UNIQUE', 'UNIQUE constraint failed: t.x');
    assert.equal(db.inTransaction, false);
    assert.deepEqual(rows(), ['a']);
    assert.deepEqual(trace(), [
      'BEGIN',
      "INSERT INTO t VALUES ('h')",
      `SAVEPOINT ${SP}`,
      "INSERT OR ROLLBACK INTO t VALUES ('a')",
    ]);
  });

  it("7.6 fn commits by itself: its writes stay, then the wrapper's COMMIT fails with SqliteError", () => {
    const trx = db.transaction(() => {
      ins.run('c');
      db.exec('COMMIT');
      return 'unreached result';
    });
    throwsSqliteError(() => trx(), 'SQLITE_ERROR', 'cannot commit - no transaction is active');
    assert.equal(db.inTransaction, false);
    assert.deepEqual(rows(), ['c']);
    assert.deepEqual(trace(), ['BEGIN', "INSERT INTO t VALUES ('c')", 'COMMIT', 'COMMIT']);
  });

  it("7.6 fn rolls back by itself: its writes are gone, then the wrapper's COMMIT fails with SqliteError", () => {
    const trx = db.transaction(() => {
      ins.run('d');
      db.exec('ROLLBACK');
    });
    throwsSqliteError(() => trx(), 'SQLITE_ERROR', 'cannot commit - no transaction is active');
    assert.equal(db.inTransaction, false);
    assert.deepEqual(rows(), []);
    assert.deepEqual(trace(), ['BEGIN', "INSERT INTO t VALUES ('d')", 'ROLLBACK', 'COMMIT']);
  });

  it('7.6 fn rolls back and then throws: its own error propagates (no rollback is attempted)', () => {
    const boom = new Error('after rollback');
    const trx = db.transaction(() => {
      ins.run('d');
      db.exec('ROLLBACK');
      throw boom;
    });
    assert.equal(
      caught(() => trx()),
      boom,
    );
    assert.deepEqual(trace(), ['BEGIN', "INSERT INTO t VALUES ('d')", 'ROLLBACK']);
    assert.equal(db.inTransaction, false);
  });

  it('7.6 a nested fn that rolls back everything: the inner RELEASE fails with "no such savepoint"', () => {
    const inner = db.transaction(() => {
      ins.run('f');
      db.exec('ROLLBACK');
    });
    const outer = db.transaction(() => {
      ins.run('e');
      inner();
    });
    throwsSqliteError(() => outer(), 'SQLITE_ERROR', 'no such savepoint: \t_bs3.\t');
    assert.equal(db.inTransaction, false);
    assert.deepEqual(rows(), []);
    assert.deepEqual(trace(), [
      'BEGIN',
      "INSERT INTO t VALUES ('e')",
      `SAVEPOINT ${SP}`,
      "INSERT INTO t VALUES ('f')",
      'ROLLBACK',
      `RELEASE ${SP}`,
    ]);
  });

  it('7.6 fn that commits and begins again: the wrapper commits the new transaction', () => {
    db.transaction(() => {
      ins.run('one');
      db.exec('COMMIT; BEGIN');
      ins.run('two');
    })();
    assert.equal(db.inTransaction, false);
    assert.deepEqual(rows(), ['one', 'two']);
  });

  it('7.6 BEGIN inside fn fails with SqliteError and everything is rolled back', () => {
    const trx = db.transaction(() => {
      ins.run('i');
      db.exec('BEGIN');
    });
    throwsSqliteError(() => trx(), 'SQLITE_ERROR', 'cannot start a transaction within a transaction');
    assert.deepEqual(rows(), []);
    assert.equal(db.inTransaction, false);
    assert.deepEqual(trace(), ['BEGIN', "INSERT INTO t VALUES ('i')", 'BEGIN', 'ROLLBACK']);
  });

  it('7.6 a failing COMMIT (deferred foreign key) rolls back and throws the SqliteError', () => {
    db.exec(
      'CREATE TABLE p (id INTEGER PRIMARY KEY); CREATE TABLE c (pid REFERENCES p(id) DEFERRABLE INITIALLY DEFERRED)',
    );
    log.length = 0;
    const trx = db.transaction(() => {
      db.prepare('INSERT INTO c VALUES (5)').run();
      ins.run('z');
      return 'ret';
    });
    throwsSqliteError(() => trx(), 'SQLITE_CONSTRAINT_FOREIGNKEY', 'FOREIGN KEY constraint failed');
    assert.equal(db.inTransaction, false);
    assert.deepEqual(rows(), []);
    assert.equal(db.prepare('SELECT count(*) FROM c').pluck().get(), 0);
    assert.deepEqual(
      trace().filter((s) => !s.startsWith('SELECT')),
      ['BEGIN', 'INSERT INTO c VALUES (5)', "INSERT INTO t VALUES ('z')", 'COMMIT', 'ROLLBACK'],
    );
  });

  // ---- 7.7 isolation / inTransaction -----------------------------------------------------------------

  it('7.7 uncommitted rows are invisible to a second connection until the wrapper returns', () => {
    const tmp = tmpdir();
    try {
      const file = tmp.file('iso.db');
      const a = new Database(file);
      a.pragma('journal_mode = WAL');
      a.exec('CREATE TABLE t (x)');
      const b = new Database(file);
      try {
        const count = b.prepare('SELECT count(*) FROM t').pluck();
        let insideA;
        let insideB;
        a.transaction(() => {
          a.prepare('INSERT INTO t VALUES (1), (2), (3)').run();
          insideA = a.prepare('SELECT count(*) FROM t').pluck().get();
          insideB = count.get();
        })();
        assert.equal(insideA, 3);
        assert.equal(insideB, 0);
        assert.equal(count.get(), 3);
        assert.throws(
          () =>
            a.transaction(() => {
              a.prepare('INSERT INTO t VALUES (4)').run();
              throw new Error('no');
            })(),
          { message: 'no' },
        );
        assert.equal(count.get(), 3);
      } finally {
        b.close();
        a.close();
      }
    } finally {
      tmp.cleanup();
    }
  });

  it('7 inTransaction: false before, true inside, false after commit and after rollback, false once closed', () => {
    assert.equal(db.inTransaction, false);
    const states = [];
    db.transaction(() => states.push(db.inTransaction))();
    assert.throws(() =>
      db.transaction(() => {
        states.push(db.inTransaction);
        throw new Error('x');
      })(),
    );
    assert.deepEqual(states, [true, true]);
    assert.equal(db.inTransaction, false);
    db.exec('BEGIN');
    assert.equal(db.inTransaction, true);
    db.close();
    assert.equal(db.inTransaction, false);
  });

  // ---- state rules as they apply to transactions ------------------------------------------------------

  it('7 closed database: transaction() → TypeError; an existing wrapper → TypeError without calling fn', () => {
    let called = false;
    const trx = db.transaction(() => {
      called = true;
    });
    db.close();
    throwsTypeError(() => trx(), MSG.notOpen);
    throwsTypeError(() => trx.immediate(), MSG.notOpen);
    assert.equal(called, false);
    const fresh = memdb();
    fresh.close();
    throwsTypeError(() => fresh.transaction(() => 1), MSG.notOpen);
  });

  it('7 while an iterator is open the wrapper → TypeError (fn not called); allowed in unsafe mode', () => {
    ins.run('r');
    let calls = 0;
    const trx = db.transaction(() => {
      calls++;
      ins.run(`w${calls}`);
    });
    const it = db.prepare('SELECT x FROM t').iterate();
    it.next();
    throwsTypeError(() => trx(), MSG.dbBusy);
    assert.equal(calls, 0);
    assert.equal(db.inTransaction, false);
    db.unsafeMode();
    trx();
    assert.equal(calls, 1);
    it.return();
    db.unsafeMode(false);
    assert.deepEqual(rows(), ['r', 'w1']);
  });

  it('7 from inside a user function (busy) the wrapper → TypeError', () => {
    let called = false;
    const trx = db.transaction(() => {
      called = true;
    });
    const busy = busyProbe(db);
    const out = busy(() => trx());
    checkError(out.error, TypeError, MSG.dbBusy);
    assert.equal(called, false);
    assert.equal(db.inTransaction, false);
  });
});
