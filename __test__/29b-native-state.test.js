'use strict';
// The native side keeps its own state rules whatever JS does (issue 10 item 9):
// - a parameter getter that calls db.close() is refused (busy), leaving the database open
//   and closable, with no file descriptor left behind;
// - the addon's raw entry points (`addon.fast`, reachable by anyone who loads the binding)
//   check busy themselves, so user code can't make a running statement look idle;
// - two instances of the addon in one process (process.dlopen of the same file) keep
//   separate statement registries.
// cipherlite-only: these reach into the addon, and better-sqlite3 crashes in some of them.
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Database, isCipherlite } = require('./_module');
const { tempDir, removeDir, throwsExactly } = require('./_helpers');

const BUSY = 'This database connection is busy executing a query';
const dir = tempDir();
after(() => removeDir(dir));

const openFds = () => fs.readdirSync('/proc/self/fd').length;
const stateOf = (stmt) => stmt[Object.getOwnPropertySymbols(stmt)[0]];
const skip = !isCipherlite || process.platform !== 'linux';

/** The addon instance the default `Database` uses (same module, same registries). */
function defaultAddon() {
  return require(Database.__nativePath);
}

/** A fresh instance of the addon: the same file (or a copy of it), loaded again into
 * this environment. */
function dlopenAddon(file = Database.__nativePath) {
  const m = { exports: {} };
  process.dlopen(m, file);
  return m.exports;
}

describe('db.close() while parameters are being bound', { skip }, () => {
  const closers = {
    'an array element getter': (db) => {
      const arg = [];
      Object.defineProperty(arg, 0, {
        get() {
          db.close();
          return 1;
        },
        enumerable: true,
      });
      return [arg];
    },
    'a named parameter getter': (db) => [
      {
        get x() {
          db.close();
          return 1;
        },
      },
    ],
  };
  for (const [name, makeArgs] of Object.entries(closers)) {
    it(`${name} calling close() gets the busy TypeError; the database stays open and closes cleanly`, () => {
      const file = path.join(dir, `bind-close-${name.replace(/\W+/g, '-')}.db`);
      const key = Buffer.alloc(32, 7);
      new Database(file, { key }).exec('CREATE TABLE t(x)').close();
      const before = openFds();
      for (let i = 0; i < 20; i++) {
        const db = new Database(file, { key });
        const sql = name.startsWith('a named') ? 'SELECT :x AS v' : 'SELECT ? AS v';
        const stmt = db.prepare(sql);
        // close() throws inside the getter, so binding fails with that error.
        throwsExactly(() => stmt.get(...makeArgs(db)), TypeError, BUSY);
        assert.equal(db.open, true, 'a refused close() leaves the database open');
        assert.deepEqual(db.prepare('SELECT count(*) AS n FROM t').get(), { n: 0 }, 'and usable');
        db.close();
        assert.equal(db.open, false);
      }
      assert.equal(openFds(), before, 'every connection was really closed (no file descriptor leaked)');
    });
  }

  it('a getter that catches the refusal lets the statement run with its value', () => {
    const db = new Database(':memory:');
    const arg = [];
    let message;
    Object.defineProperty(arg, 0, {
      get() {
        try {
          db.close();
        } catch (e) {
          message = e.message;
        }
        return 42;
      },
    });
    assert.deepEqual(db.prepare('SELECT ? AS v').get(arg), { v: 42 });
    assert.equal(message, BUSY);
    assert.equal(db.open, true);
    db.close();
  });

  it('stmt.bind() and run() refuse the same way', () => {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t(x)');
    const closing = {
      get x() {
        db.close();
        return 1;
      },
    };
    throwsExactly(() => db.prepare('INSERT INTO t VALUES (:x)').run(closing), TypeError, BUSY);
    throwsExactly(() => db.prepare('SELECT :x').bind(closing), TypeError, BUSY);
    assert.equal(db.open, true);
    db.close();
  });
});

describe('the raw entry points check busy natively', { skip }, () => {
  function setup() {
    const addon = defaultAddon();
    const db = new Database(':memory:');
    db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1); BEGIN; INSERT INTO t VALUES (2)');
    // A statement left mid-way through its batches (what all() continues with more()).
    const big = db.prepare(`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100000)
			SELECT i, '${'x'.repeat(1000)}' FROM c`); // long rows: a partial first batch that fits the initial buffer
    addon.fast.all(stateOf(big).id);
    return { addon, db, big };
  }

  it('fast.more() from inside a user function is refused and leaves the database busy', () => {
    const { addon, db, big } = setup();
    const seen = [];
    db.function('evil', () => {
      for (const attempt of [
        () => addon.fast.more(stateOf(big).id),
        () => addon.fast.next(stateOf(big).id),
        () => addon.fast.run(stateOf(big).id),
        () => addon.fast.get(stateOf(big).id),
        () => addon.fast.iterate(stateOf(big).id),
        () => addon.fast.setMode(stateOf(big).id, 3, true),
        () => db.exec('ROLLBACK'),
        () => db.close(),
      ]) {
        try {
          attempt();
          seen.push('ran');
        } catch (e) {
          seen.push(`${e.constructor.name}: ${e.message}`);
        }
      }
      return 3;
    });
    assert.deepEqual(db.prepare('INSERT INTO t SELECT evil()').run().changes, 1);
    assert.deepEqual(seen, Array(8).fill(`TypeError: ${BUSY}`));
    assert.equal(db.inTransaction, true, 'ROLLBACK did not run under the statement');
    assert.deepEqual(db.prepare('SELECT x FROM t ORDER BY x').pluck().all(), [1, 2, 3]);
    assert.equal(db.open, true);
    db.exec('ROLLBACK');
    db.close();
    assert.equal(db.open, false);
  });

  it('the draining statement still delivers every row afterwards', () => {
    const { db, big } = setup();
    db.function('noop', () => 0);
    db.prepare('SELECT noop()').get();
    assert.equal(big.all().length, 100000);
    db.exec('ROLLBACK');
    db.close();
  });

  // A running program holds copies of its parameters that point at the bound bytes (a
  // constant factored out of the loop, here): bind() on a statement left mid-way must not
  // free them under it. It starts the statement over instead, so fast.more() has no batch
  // to continue, and the statement runs with the value bind() gave it. Found in review:
  // bind() cleared the bindings of the running statement and more() then compared every
  // row against freed memory (a segfault with a 2 MB value).
  it('bind() on a statement left mid-way starts it over instead of freeing what it reads', () => {
    const addon = defaultAddon();
    const db = new Database(':memory:');
    const N = 100_000;
    const stmt = db.prepare(`WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3000)
			SELECT i, '${'x'.repeat(1000)}' AS pad FROM c WHERE ? = (printf('%.*c', ${N}, 'A') || substr(i, 1, 0))`);
    const first = addon.fast.all(stateOf(stmt).id, 'A'.repeat(N));
    assert.notEqual(first, null, 'a partial first batch');
    stmt.bind('B'.repeat(N)); // neither refused nor freeing the running program's copy
    for (let k = 0; k < 50; k++) Buffer.alloc(N, 0x41); // reuse whatever was freed
    throwsExactly(() => addon.fast.more(stateOf(stmt).id), TypeError, 'no batch in progress');
    assert.deepEqual(stmt.all(), []);
    db.close();
  });
});

describe('two instances of the addon in one process', { skip }, () => {
  it("keep their own statement ids: one instance cannot reach the other's statements", () => {
    const A = dlopenAddon();
    const B = dlopenAddon();
    assert.notEqual(A.fast, B.fast);
    const dbA = new Database(':memory:', { nativeBinding: A });
    const dbB = new Database(':memory:', { nativeBinding: B });
    const a = dbA.prepare("SELECT 'from A' AS v");
    const b1 = dbB.prepare("SELECT 'from B1' AS v");
    const b2 = dbB.prepare("SELECT 'from B2' AS v");
    assert.deepEqual([a.get(), b1.get(), b2.get()], [{ v: 'from A' }, { v: 'from B1' }, { v: 'from B2' }]);
    // An id only B knows finds nothing in A (an id both know finds A's own statement).
    const onlyInB = Math.max(stateOf(b1).id, stateOf(b2).id);
    assert.ok(onlyInB > stateOf(a).id);
    throwsExactly(() => A.fast.get(onlyInB), TypeError, 'Illegal invocation');
    throwsExactly(() => A.fast.run(onlyInB), TypeError, 'Illegal invocation');
    assert.equal(A.fast.inTransaction(stateOf(b2).id), false);
    dbB.exec('BEGIN');
    assert.equal(dbB.inTransaction, true);
    assert.equal(dbA.inTransaction, false);
    dbA.close();
    assert.deepEqual(b2.get(), { v: 'from B2' }, 'closing A leaves B alone');
    dbB.close();
  });

  it('a copy of the addon file loaded next to the original works on its own', () => {
    const copy = path.join(dir, 'copy-of-addon.node');
    fs.copyFileSync(Database.__nativePath, copy);
    const C = dlopenAddon(copy);
    const dbC = new Database(':memory:', { nativeBinding: C });
    const dbD = new Database(':memory:');
    const c = dbC.prepare("SELECT 'from the copy' AS v");
    const d1 = dbD.prepare("SELECT 'default 1' AS v");
    const d2 = dbD.prepare("SELECT 'default 2' AS v");
    assert.deepEqual([c.get(), d1.get(), d2.get()], [{ v: 'from the copy' }, { v: 'default 1' }, { v: 'default 2' }]);
    throwsExactly(() => C.fast.get(Math.max(stateOf(d1).id, stateOf(d2).id) + 1000), TypeError, 'Illegal invocation');
    dbC.close();
    assert.deepEqual(d2.get(), { v: 'default 2' });
    dbD.close();
  });
});

describe('a panic in a raw entry point', { skip }, () => {
  // Debug builds (what `npm test` builds) export fast.panicForTesting, which panics inside
  // the guard every raw entry point runs in (crates/node/src/raw_entry_points.rs `guarded`).
  const addon = skip ? null : defaultAddon();
  const debugBuild = !skip && typeof addon.fast.panicForTesting === 'function';

  it(
    'becomes an Error and leaves the process and its databases working',
    { skip: !debugBuild && 'a release build has no panicForTesting' },
    () => {
      const db = new Database(':memory:');
      const stmt = db.prepare('SELECT 1 AS one');
      throwsExactly(() => addon.fast.panicForTesting(), Error, 'cipherlite: internal error (panic)');
      throwsExactly(() => addon.fast.panicForTesting(), Error, 'cipherlite: internal error (panic)');
      assert.deepEqual(stmt.get(), { one: 1 });
      assert.equal(db.inTransaction, false);
      db.close();
    },
  );
});
