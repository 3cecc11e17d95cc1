'use strict';
// docs/better-sqlite3-behaviour.md §5.7: Statement#run().
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const { memdb, throwsTypeError, throwsSqliteError, MSG } = require('./_helpers-stmt');

describe('Statement#run() (§5.7)', () => {
  let db;
  beforeEach(() => {
    db = memdb();
    db.exec('CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT UNIQUE)');
  });
  afterEach(() => {
    if (db.open) db.close();
  });

  it('5.7 returns a plain { changes, lastInsertRowid } object', () => {
    const info = db.prepare("INSERT INTO t (b) VALUES ('x')").run();
    assert.deepStrictEqual(info, { changes: 1, lastInsertRowid: 1 });
    assert.equal(Object.getPrototypeOf(info), Object.prototype);
    assert.deepEqual(Object.keys(info), ['changes', 'lastInsertRowid']);
    assert.equal(typeof info.changes, 'number');
    assert.equal(typeof info.lastInsertRowid, 'number');
  });

  it('5.7 changes counts the rows a multi-row INSERT/UPDATE/DELETE touched', () => {
    assert.deepStrictEqual(db.prepare("INSERT INTO t (b) VALUES ('a'), ('b'), ('c')").run(), {
      changes: 3,
      lastInsertRowid: 3,
    });
    assert.deepStrictEqual(db.prepare("UPDATE t SET b = b || '!' WHERE a >= 2").run(), {
      changes: 2,
      lastInsertRowid: 3,
    });
    assert.deepStrictEqual(db.prepare('UPDATE t SET b = 1 WHERE 0').run(), { changes: 0, lastInsertRowid: 3 });
    assert.deepStrictEqual(db.prepare('DELETE FROM t').run(), { changes: 3, lastInsertRowid: 3 });
  });

  it('5.7 changes is 0 for DDL and SELECT even right after a write (total changes did not move)', () => {
    db.prepare("INSERT INTO t (b) VALUES ('a'), ('b'), ('c'), ('d'), ('e')").run();
    // sqlite3_changes() would still say 5 here; run() must report 0
    assert.deepStrictEqual(db.prepare('CREATE TABLE u (x)').run(), { changes: 0, lastInsertRowid: 5 });
    db.prepare("INSERT INTO t (b) VALUES ('f'), ('g')").run();
    assert.deepStrictEqual(db.prepare('SELECT * FROM t').run(), { changes: 0, lastInsertRowid: 7 });
    assert.deepStrictEqual(db.prepare('DROP TABLE u').run(), { changes: 0, lastInsertRowid: 7 });
  });

  it("5.7 run() works on reader statements (SELECT) and returns the connection's lastInsertRowid", () => {
    assert.deepStrictEqual(db.prepare('SELECT 1').run(), { changes: 0, lastInsertRowid: 0 });
    db.prepare("INSERT INTO t VALUES (42, 'x')").run();
    assert.deepStrictEqual(db.prepare('SELECT * FROM t').run(), { changes: 0, lastInsertRowid: 42 });
  });

  it('5.7 run() on INSERT … RETURNING performs the write and reports it', () => {
    assert.deepStrictEqual(db.prepare("INSERT INTO t (b) VALUES ('p'), ('q') RETURNING a").run(), {
      changes: 2,
      lastInsertRowid: 2,
    });
    assert.deepEqual(db.prepare('SELECT b FROM t ORDER BY a').pluck().all(), ['p', 'q']);
  });

  it('5.7 changes counts direct changes only: trigger writes and FK cascades are not counted', () => {
    db.exec(`
			CREATE TABLE log (x);
			CREATE TRIGGER tr AFTER INSERT ON t BEGIN
				INSERT INTO log VALUES (new.b); INSERT INTO log VALUES (new.b);
			END;
		`);
    assert.deepStrictEqual(db.prepare("INSERT INTO t (b) VALUES ('a'), ('b')").run(), {
      changes: 2,
      lastInsertRowid: 2,
    });
    assert.equal(db.prepare('SELECT count(*) FROM log').pluck().get(), 4);

    db.exec(`
			CREATE TABLE p (id INTEGER PRIMARY KEY);
			CREATE TABLE c (id INTEGER PRIMARY KEY, pid REFERENCES p(id) ON DELETE CASCADE);
			INSERT INTO p VALUES (1), (2);
			INSERT INTO c VALUES (1, 1), (2, 1), (3, 2);
		`);
    const info = db.prepare('DELETE FROM p WHERE id = 1').run();
    assert.equal(info.changes, 1);
    assert.equal(
      db.prepare('SELECT count(*) FROM c').pluck().get(),
      1,
      'cascade happened (foreign keys on by default)',
    );
  });

  it('5.7 dropping a parent table with foreign keys counts the implicit deletes', () => {
    db.exec(`
			CREATE TABLE p (id INTEGER PRIMARY KEY);
			CREATE TABLE c (pid REFERENCES p(id) ON DELETE CASCADE);
			INSERT INTO p VALUES (1), (2), (3);
			INSERT INTO c VALUES (1), (1), (2);
		`);
    const info = db.prepare('DROP TABLE p').run();
    assert.equal(info.changes, 3);
    assert.equal(db.prepare('SELECT count(*) FROM c').pluck().get(), 0);
  });

  it('5.7 lastInsertRowid is a number by default (precision lost above 2^53)', () => {
    const info = db.prepare("INSERT INTO t VALUES (9007199254740993, 'big')").run();
    assert.equal(typeof info.lastInsertRowid, 'number');
    assert.equal(info.lastInsertRowid, 9007199254740992);
    const neg = db.prepare("INSERT INTO t VALUES (-5, 'neg')").run();
    assert.equal(neg.lastInsertRowid, -5);
  });

  it('5.7 lastInsertRowid is exact on both sides of the 32-bit boundary (read as a small integer when it is one)', () => {
    for (const id of [2 ** 31 - 1, 2 ** 31, 2 ** 32, 2 ** 32 + 1, -(2 ** 31), -(2 ** 31) - 1, 0]) {
      const info = db.prepare('INSERT INTO t VALUES (?, ?)').run(id, `edge ${id}`);
      assert.strictEqual(info.lastInsertRowid, id, `rowid ${id}`);
      assert.ok(!Object.is(info.lastInsertRowid, -0));
    }
  });

  it("5.7 lastInsertRowid is a BigInt when the statement's safeIntegers is on (exact above 2^53)", () => {
    const info = db.prepare("INSERT INTO t VALUES (9007199254740995, 'big')").safeIntegers().run();
    assert.deepStrictEqual(info, { changes: 1, lastInsertRowid: 9007199254740995n });
    assert.deepStrictEqual(db.prepare("INSERT INTO t VALUES (9223372036854775807, 'max')").safeIntegers(true).run(), {
      changes: 1,
      lastInsertRowid: 9223372036854775807n,
    });
    // changes stays a number
    assert.equal(typeof info.changes, 'number');
    // safeIntegers(false) goes back to numbers
    assert.deepStrictEqual(db.prepare("INSERT INTO t VALUES (7, 'seven')").safeIntegers(false).run(), {
      changes: 1,
      lastInsertRowid: 7,
    });
  });

  it('5.7 lastInsertRowid follows db.defaultSafeIntegers at prepare time', () => {
    db.defaultSafeIntegers(true);
    const a = db.prepare("INSERT INTO t (b) VALUES ('a')");
    db.defaultSafeIntegers(false);
    const b = db.prepare("INSERT INTO t (b) VALUES ('b')");
    assert.deepStrictEqual(a.run(), { changes: 1, lastInsertRowid: 1n });
    assert.deepStrictEqual(b.run(), { changes: 1, lastInsertRowid: 2 });
  });

  it('5.7 constraint failures throw SqliteError with the extended code; the statement stays usable', () => {
    const ins = db.prepare('INSERT INTO t VALUES (?, ?)');
    ins.run(1, 'x');
    throwsSqliteError(() => ins.run(2, 'x'), 'SQLITE_CONSTRAINT_UNIQUE', 'UNIQUE constraint failed: t.b');
    throwsSqliteError(() => ins.run(1, 'y'), 'SQLITE_CONSTRAINT_PRIMARYKEY', 'UNIQUE constraint failed: t.a');
    db.exec('CREATE TABLE nn (x NOT NULL, y CHECK (y > 0))');
    throwsSqliteError(
      () => db.prepare('INSERT INTO nn VALUES (NULL, 1)').run(),
      'SQLITE_CONSTRAINT_NOTNULL',
      'NOT NULL constraint failed: nn.x',
    );
    throwsSqliteError(
      () => db.prepare('INSERT INTO nn VALUES (1, -1)').run(),
      'SQLITE_CONSTRAINT_CHECK',
      'CHECK constraint failed: y > 0',
    );
    db.exec('CREATE TABLE child (p REFERENCES t(a))');
    throwsSqliteError(
      () => db.prepare('INSERT INTO child VALUES (99)').run(),
      'SQLITE_CONSTRAINT_FOREIGNKEY',
      'FOREIGN KEY constraint failed',
    );
    assert.deepStrictEqual(ins.run(2, 'y'), { changes: 1, lastInsertRowid: 2 });
    assert.deepEqual(db.prepare('SELECT a, b FROM t ORDER BY a').raw().all(), [
      [1, 'x'],
      [2, 'y'],
    ]);
  });

  it('5.7 a runtime error in a SELECT run() throws SqliteError', () => {
    throwsSqliteError(() => db.prepare('SELECT abs(-9223372036854775808)').run(), 'SQLITE_ERROR', 'integer overflow');
  });

  it('5.7 run() passes its arguments as bound parameters', () => {
    const ins = db.prepare('INSERT INTO t VALUES (?, ?)');
    assert.deepStrictEqual(ins.run(10, 'ten'), { changes: 1, lastInsertRowid: 10 });
    assert.deepStrictEqual(ins.run([11, 'eleven']), { changes: 1, lastInsertRowid: 11 });
    const named = db.prepare('INSERT INTO t VALUES (@a, :b)');
    assert.deepStrictEqual(named.run({ a: 12, b: 'twelve' }), { changes: 1, lastInsertRowid: 12 });
    assert.deepEqual(db.prepare('SELECT * FROM t ORDER BY a').all(), [
      { a: 10, b: 'ten' },
      { a: 11, b: 'eleven' },
      { a: 12, b: 'twelve' },
    ]);
  });

  it('5.7 run() is blocked while any iterator is open (TypeError), allowed in unsafe mode', () => {
    db.exec("INSERT INTO t (b) VALUES ('a'), ('b')");
    const ins = db.prepare("INSERT INTO t (b) VALUES ('c')");
    const sel = db.prepare('SELECT 1');
    const it = db.prepare('SELECT * FROM t').iterate();
    it.next();
    throwsTypeError(() => ins.run(), MSG.dbBusy);
    // even a reader's run() counts as a write here
    throwsTypeError(() => sel.run(), MSG.dbBusy);
    assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 2);
    db.unsafeMode();
    assert.deepStrictEqual(ins.run(), { changes: 1, lastInsertRowid: 3 });
    it.return();
    db.unsafeMode(false);
    assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 3);
  });

  it('5.7 run() works on statements with no columns nor parameters, repeatedly', () => {
    const ins = db.prepare('INSERT INTO t (b) VALUES (NULL)');
    for (let i = 1; i <= 5; i++) assert.deepStrictEqual(ins.run(), { changes: 1, lastInsertRowid: i });
    assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 5);
  });
});
