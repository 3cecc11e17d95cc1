'use strict';
// docs/better-sqlite3-behaviour.md §12: concurrency and state rules (iterating / self-iterating / busy /
// closed) for every operation in the table, and the unsafe-mode rule (45).
// "busy" = called from inside a user function that SQLite is running.
const { describe, it, beforeEach, afterEach } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const {
  Database,
  memdb,
  tmpdir,
  throwsTypeError,
  throwsSqliteError,
  checkError,
  busyProbe,
  MSG,
} = require('./_helpers-stmt');

const tableDef = () => ({
  columns: ['x'],
  *rows() {
    yield [1];
  },
});
const aggDef = () => ({ step: (acc, x) => (acc || 0) + x });
const NO_EXT = '/nonexistent-dir-cipherlite/no-such-extension';

function setup() {
  const db = memdb();
  db.exec(`
		CREATE TABLE t (id INTEGER PRIMARY KEY, v);
		INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c');
	`);
  return db;
}

describe('State rules (§12)', () => {
  let db;
  let tmp;
  beforeEach(() => {
    db = setup();
    tmp = tmpdir();
  });
  afterEach(() => {
    if (db.open) {
      db.unsafeMode(false);
      db.close();
    }
    tmp.cleanup();
  });

  // ---- iterating: some (other) iterator is open on the connection ------------------------------------

  describe("iterating (another statement's iterator is open)", () => {
    let iter;
    beforeEach(() => {
      iter = db.prepare('SELECT id FROM t ORDER BY id').iterate();
      assert.deepStrictEqual(iter.next(), { value: { id: 1 }, done: false });
    });
    afterEach(() => {
      iter.return();
    });

    it('12 iterating: an iterator that was created but never stepped already counts', () => {
      iter.return();
      iter = db.prepare('SELECT 1').iterate();
      throwsTypeError(() => db.exec('SELECT 1'), MSG.dbBusy);
    });

    it('12 iterating: db.prepare ✓', () => {
      const stmt = db.prepare('SELECT v FROM t WHERE id = ?');
      assert.deepEqual(stmt.get(2), { v: 'b' });
    });

    it('12 iterating: db.exec ✗ (nothing is executed)', () => {
      throwsTypeError(() => db.exec("INSERT INTO t VALUES (9, 'z')"), MSG.dbBusy);
      throwsTypeError(() => db.exec('SELECT 1'), MSG.dbBusy);
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 3);
    });

    it('12 iterating: db.pragma ✗, incl. reading pragmas and wal_checkpoint(RESTART)', () => {
      throwsTypeError(() => db.pragma('cache_size'), MSG.dbBusy);
      throwsTypeError(() => db.pragma('cache_size', { simple: true }), MSG.dbBusy);
      throwsTypeError(() => db.pragma('user_version = 5'), MSG.dbBusy);
      throwsTypeError(() => db.pragma('wal_checkpoint(RESTART)'), MSG.dbBusy);
      assert.equal(db.prepare('PRAGMA user_version').pluck().get(), 0);
    });

    it('12 iterating: db.backup ✓ (resolves, copy is complete)', async () => {
      const file = tmp.file('iter-backup.db');
      const result = await db.backup(file);
      assert.equal(result.remainingPages, 0);
      assert.ok(Number.isInteger(result.totalPages) && result.totalPages > 0);
      assert.equal(db.prepare('SELECT 1').busy, false);
      assert.deepStrictEqual(iter.next(), { value: { id: 2 }, done: false }, 'the iterator survived');
      const copy = new Database(file, { readonly: true });
      try {
        assert.deepEqual(copy.prepare('SELECT v FROM t ORDER BY id').pluck().all(), ['a', 'b', 'c']);
      } finally {
        copy.close();
      }
    });

    it('12 iterating: db.function, db.aggregate, db.table, db.loadExtension ✗', () => {
      throwsTypeError(() => db.function('f_iter', () => 1), MSG.dbBusy);
      throwsTypeError(() => db.aggregate('a_iter', aggDef()), MSG.dbBusy);
      throwsTypeError(() => db.table('t_iter', tableDef()), MSG.dbBusy);
      throwsTypeError(() => db.loadExtension(NO_EXT), MSG.dbBusy);
      iter.return();
      // none of them got registered
      throwsSqliteError(() => db.prepare('SELECT f_iter()'), 'SQLITE_ERROR', 'no such function: f_iter');
      throwsSqliteError(() => db.prepare('SELECT a_iter(1)'), 'SQLITE_ERROR', 'no such function: a_iter');
      throwsSqliteError(() => db.prepare('SELECT * FROM t_iter'), 'SQLITE_ERROR', 'no such table: t_iter');
    });

    it('12 iterating: db.close ✗ (the database stays open)', () => {
      throwsTypeError(() => db.close(), MSG.dbBusy);
      assert.equal(db.open, true);
      assert.deepStrictEqual(iter.next(), { value: { id: 2 }, done: false });
    });

    it('12 iterating: db.defaultSafeIntegers, db.open, db.inTransaction ✓', () => {
      assert.equal(db.defaultSafeIntegers(), db);
      assert.equal(db.prepare('SELECT 1').pluck().get(), 1n);
      assert.equal(db.defaultSafeIntegers(false), db);
      assert.equal(db.open, true);
      assert.equal(db.inTransaction, false);
    });

    it('12 iterating: stmt.run ✗ (writers and readers alike)', () => {
      const ins = db.prepare("INSERT INTO t VALUES (9, 'z')");
      throwsTypeError(() => ins.run(), MSG.dbBusy);
      throwsTypeError(() => db.prepare('SELECT 1').run(), MSG.dbBusy);
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 3);
    });

    it("12 iterating: another statement's get, all, iterate, bind ✓", () => {
      const other = db.prepare('SELECT v FROM t WHERE id >= ? ORDER BY id');
      assert.deepEqual(other.get(2), { v: 'b' });
      assert.deepEqual(other.all(2), [{ v: 'b' }, { v: 'c' }]);
      const it2 = other.iterate(3);
      assert.deepStrictEqual(it2.next(), { value: { v: 'c' }, done: false });
      it2.return();
      assert.equal(other.bind(1), other);
      assert.equal(other.all().length, 3);
    });

    it("12 iterating: another statement's pluck, expand, raw, safeIntegers ✓", () => {
      const other = db.prepare('SELECT id, v FROM t WHERE id = 1');
      assert.equal(other.pluck(), other);
      assert.equal(other.get(), 1);
      assert.equal(other.expand(), other);
      assert.deepEqual(other.get(), { t: { id: 1, v: 'a' } });
      assert.equal(other.raw(), other);
      assert.deepEqual(other.get(), [1, 'a']);
      assert.equal(other.safeIntegers(), other);
      assert.deepEqual(other.get(), [1n, 'a']);
    });

    it("12 iterating: another statement's columns ✓", () => {
      assert.deepStrictEqual(db.prepare('SELECT v FROM t').columns(), [
        { name: 'v', column: 'v', table: 't', database: 'main', type: null },
      ]);
    });

    it("12 iterating: another iterator's next and return ✓", () => {
      const it2 = db.prepare('SELECT v FROM t ORDER BY id').pluck().iterate();
      assert.deepStrictEqual(it2.next(), { value: 'a', done: false });
      assert.deepStrictEqual(iter.next(), { value: { id: 2 }, done: false });
      assert.deepStrictEqual(it2.return(), { value: undefined, done: true });
      assert.deepStrictEqual(iter.next(), { value: { id: 3 }, done: false });
    });
  });

  // ---- self-iterating: the statement's own iterator is open --------------------------------------------

  describe("self-iterating (the statement's own iterator is open)", () => {
    let stmt;
    let iter;
    beforeEach(() => {
      stmt = db.prepare('SELECT id FROM t ORDER BY id');
      iter = stmt.iterate();
      assert.deepStrictEqual(iter.next(), { value: { id: 1 }, done: false });
    });
    afterEach(() => {
      iter.return();
    });

    it('12 self-iterating: stmt.get, all, iterate, bind ✗', () => {
      throwsTypeError(() => stmt.get(), MSG.stmtBusy);
      throwsTypeError(() => stmt.all(), MSG.stmtBusy);
      throwsTypeError(() => stmt.iterate(), MSG.stmtBusy);
      throwsTypeError(() => stmt.bind(), MSG.stmtBusy);
      assert.deepStrictEqual(iter.next(), { value: { id: 2 }, done: false });
    });

    it('12 self-iterating: stmt.run ✗ with the statement message', () => {
      throwsTypeError(() => stmt.run(), MSG.stmtBusy);
    });

    it('12 self-iterating: stmt.pluck, expand, raw, safeIntegers ✗', () => {
      throwsTypeError(() => stmt.pluck(), MSG.stmtBusy);
      throwsTypeError(() => stmt.expand(), MSG.stmtBusy);
      throwsTypeError(() => stmt.raw(), MSG.stmtBusy);
      throwsTypeError(() => stmt.safeIntegers(), MSG.stmtBusy);
      assert.deepStrictEqual(iter.next(), { value: { id: 2 }, done: false }, 'mode unchanged');
    });

    it('12 self-iterating: stmt.columns ✓', () => {
      assert.deepStrictEqual(stmt.columns(), [
        { name: 'id', column: 'id', table: 't', database: 'main', type: 'INTEGER' },
      ]);
    });

    it("12 self-iterating: its own iterator's next and return ✓", () => {
      assert.deepStrictEqual(iter.next(), { value: { id: 2 }, done: false });
      assert.deepStrictEqual(iter.return(), { value: undefined, done: true });
      assert.equal(stmt.busy, false);
    });
  });

  // ---- busy: from inside a user function that SQLite is running ------------------------------------------

  describe('busy (inside a user function)', () => {
    let busy;
    let stmt;
    let reader;
    let iter;
    beforeEach(() => {
      busy = busyProbe(db);
      stmt = db.prepare("INSERT INTO t VALUES (9, 'z')");
      reader = db.prepare('SELECT v FROM t WHERE id = ?');
      iter = db.prepare('SELECT id FROM t ORDER BY id').iterate();
    });
    afterEach(() => {
      iter.return();
    });
    const rejectsBusy = (op) => checkError(busy(op).error, TypeError, MSG.dbBusy);

    it('12 busy: db.prepare ✗', () => {
      rejectsBusy(() => db.prepare('SELECT 1'));
    });

    it('12 busy: db.exec, db.pragma ✗ (incl. wal_checkpoint(RESTART))', () => {
      rejectsBusy(() => db.exec("INSERT INTO t VALUES (8, 'y')"));
      rejectsBusy(() => db.pragma('cache_size'));
      rejectsBusy(() => db.pragma('wal_checkpoint(RESTART)'));
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 3);
    });

    it('12 busy: db.backup ✓ (the returned promise resolves)', async () => {
      iter.return();
      const file = tmp.file('busy-backup.db');
      const out = busy(() => db.backup(file));
      assert.ok(!out.error, out.error && out.error.message);
      assert.ok(out.value instanceof Promise);
      const result = await out.value;
      assert.equal(result.remainingPages, 0);
      const copy = new Database(file, { readonly: true });
      try {
        assert.equal(copy.prepare('SELECT count(*) FROM t').pluck().get(), 3);
      } finally {
        copy.close();
      }
    });

    it('12 busy: db.function, db.aggregate, db.table, db.loadExtension ✗', () => {
      rejectsBusy(() => db.function('f_busy', () => 1));
      rejectsBusy(() => db.aggregate('a_busy', aggDef()));
      rejectsBusy(() => db.table('t_busy', tableDef()));
      rejectsBusy(() => db.loadExtension(NO_EXT));
      iter.return();
      throwsSqliteError(() => db.prepare('SELECT f_busy()'), 'SQLITE_ERROR', 'no such function: f_busy');
    });

    it('12 busy: db.close ✗', () => {
      rejectsBusy(() => db.close());
      assert.equal(db.open, true);
    });

    it('12 busy: db.defaultSafeIntegers, db.open, db.inTransaction ✓', () => {
      assert.equal(busy(() => db.defaultSafeIntegers(true)).value, db);
      assert.equal(busy(() => db.open).value, true);
      assert.equal(busy(() => db.inTransaction).value, false);
      db.defaultSafeIntegers(false);
      iter.return();
      db.exec('BEGIN');
      assert.equal(busy(() => db.inTransaction).value, true);
      db.exec('COMMIT');
    });

    it('12 busy: stmt.run ✗', () => {
      rejectsBusy(() => stmt.run());
      assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 3);
    });

    it('12 busy: stmt.get, all, iterate, bind ✗', () => {
      rejectsBusy(() => reader.get(1));
      rejectsBusy(() => reader.all(1));
      rejectsBusy(() => reader.iterate(1));
      rejectsBusy(() => reader.bind(1));
      // the failed bind did not stick
      assert.deepEqual(reader.get(2), { v: 'b' });
    });

    it('12 busy: stmt.pluck, expand, raw, safeIntegers ✗', () => {
      rejectsBusy(() => reader.pluck());
      rejectsBusy(() => reader.expand());
      rejectsBusy(() => reader.raw());
      rejectsBusy(() => reader.safeIntegers());
      assert.deepEqual(reader.get(1), { v: 'a' }, 'mode unchanged');
    });

    it('12 busy: stmt.columns ✗', () => {
      rejectsBusy(() => reader.columns());
    });

    it('12 busy: iterator.next and iterator.return ✗ (the iterator is unharmed)', () => {
      rejectsBusy(() => iter.next());
      rejectsBusy(() => iter.return());
      assert.deepStrictEqual(iter.next(), { value: { id: 1 }, done: false });
      assert.deepStrictEqual(iter.next(), { value: { id: 2 }, done: false });
    });

    it('12 busy: unsafe mode does not lift any busy rule', () => {
      db.unsafeMode();
      rejectsBusy(() => stmt.run());
      rejectsBusy(() => db.exec('SELECT 1'));
      rejectsBusy(() => db.pragma('cache_size'));
      rejectsBusy(() => reader.get(1));
    });
  });

  // ---- closed ----------------------------------------------------------------------------------------------

  describe('closed', () => {
    let stmt;
    let reader;
    let doneIt;
    beforeEach(() => {
      stmt = db.prepare("INSERT INTO t VALUES (9, 'z')");
      reader = db.prepare('SELECT v FROM t WHERE id = ?');
      doneIt = db.prepare('SELECT id FROM t').iterate();
      doneIt.next();
      doneIt.return();
      db.close();
    });

    it('12 closed: db.prepare ✗', () => {
      throwsTypeError(() => db.prepare('SELECT 1'), MSG.notOpen);
    });

    it('12 closed: db.exec, db.pragma ✗', () => {
      throwsTypeError(() => db.exec('SELECT 1'), MSG.notOpen);
      throwsTypeError(() => db.pragma('cache_size'), MSG.notOpen);
      throwsTypeError(() => db.pragma('wal_checkpoint(RESTART)'), MSG.notOpen);
    });

    it('12 closed: db.backup ✗ as a promise rejection; no file is created', async () => {
      const file = tmp.file('closed-backup.db');
      const p = db.backup(file);
      assert.ok(p instanceof Promise, 'argument/state errors are rejections, not throws');
      await assert.rejects(p, (err) => checkError(err, TypeError, MSG.notOpen));
      assert.equal(fs.existsSync(file), false);
    });

    it('12 closed: db.function, db.aggregate, db.table, db.loadExtension ✗', () => {
      throwsTypeError(() => db.function('f', () => 1), MSG.notOpen);
      throwsTypeError(() => db.aggregate('a', aggDef()), MSG.notOpen);
      throwsTypeError(() => db.table('vt', tableDef()), MSG.notOpen);
      throwsTypeError(() => db.loadExtension(NO_EXT), MSG.notOpen);
    });

    it('12 closed: db.close ✓ (no-op, returns the database)', () => {
      assert.equal(db.close(), db);
      assert.equal(db.close(), db);
      assert.equal(db.open, false);
    });

    it('12 closed: db.defaultSafeIntegers, db.open, db.inTransaction ✓', () => {
      assert.equal(db.defaultSafeIntegers(), db);
      assert.equal(db.defaultSafeIntegers(false), db);
      assert.equal(db.open, false);
      assert.equal(db.inTransaction, false);
    });

    it('12 closed: stmt.run ✗', () => {
      throwsTypeError(() => stmt.run(), MSG.notOpen);
      throwsTypeError(() => reader.run(1), MSG.notOpen);
    });

    it('12 closed: stmt.get, all, iterate, bind ✗', () => {
      throwsTypeError(() => reader.get(1), MSG.notOpen);
      throwsTypeError(() => reader.all(1), MSG.notOpen);
      throwsTypeError(() => reader.iterate(1), MSG.notOpen);
      throwsTypeError(() => reader.bind(1), MSG.notOpen);
      assert.equal(reader.busy, false);
    });

    it('12 closed: stmt.pluck, expand, raw, safeIntegers ✓ (return the statement)', () => {
      assert.equal(reader.pluck(), reader);
      assert.equal(reader.expand(), reader);
      assert.equal(reader.raw(false), reader);
      assert.equal(reader.safeIntegers(), reader);
      assert.equal(stmt.safeIntegers(false), stmt);
      // argument and reader checks still apply
      throwsTypeError(() => reader.pluck('yes'), MSG.expectBool);
      throwsTypeError(() => stmt.pluck(), 'The pluck() method is only for statements that return data');
    });

    it('12 closed: stmt.columns ✗', () => {
      throwsTypeError(() => reader.columns(), MSG.notOpen);
    });

    it('12 closed: iterator.next and iterator.return ✓ after return (done records)', () => {
      assert.deepStrictEqual(doneIt.next(), { value: undefined, done: true });
      assert.deepStrictEqual(doneIt.return(), { value: undefined, done: true });
    });

    it('12 closed: a statement property read still works', () => {
      assert.equal(reader.source, 'SELECT v FROM t WHERE id = ?');
      assert.equal(reader.database, db);
      assert.equal(reader.reader, true);
    });
  });

  // ---- unsafe mode (45) --------------------------------------------------------------------------------------

  describe('unsafe mode (45)', () => {
    let fdb;
    beforeEach(() => {
      fdb = new Database(tmp.file('unsafe.db'));
      fdb.exec('CREATE TABLE foo (x)');
    });
    afterEach(() => {
      if (fdb.open) fdb.close();
    });

    it('45 by default run/exec/pragma are refused while iterating and the connection is defensive', () => {
      const read = fdb.prepare('SELECT 5');
      const write = fdb.prepare('INSERT INTO foo VALUES (0)');
      let hadRow = false;
      for (const row of read.iterate()) {
        void row;
        throwsTypeError(() => write.run(), MSG.dbBusy);
        throwsTypeError(() => fdb.exec('SELECT 5'), MSG.dbBusy);
        throwsTypeError(() => fdb.pragma('cache_size'), MSG.dbBusy);
        hadRow = true;
      }
      assert.equal(hadRow, true);
      assert.equal(fdb.prepare('SELECT count(*) FROM foo').pluck().get(), 0);
      fdb.pragma('journal_mode = OFF');
      fdb.pragma('writable_schema = ON');
      assert.equal(fdb.pragma('journal_mode', { simple: true }), 'delete');
      throwsSqliteError(
        () => fdb.exec("UPDATE sqlite_master SET name = 'bar' WHERE name = 'foo'"),
        'SQLITE_ERROR',
        'table sqlite_master may not be modified',
      );
    });

    it('45 unsafeMode() allows run/exec/pragma while iterating and lifts the defensive flag', () => {
      assert.equal(fdb.unsafeMode(), fdb);
      const read = fdb.prepare('SELECT 5');
      const write = fdb.prepare('INSERT INTO foo VALUES (0)');
      let hadRow = false;
      for (const row of read.iterate()) {
        void row;
        assert.deepStrictEqual(write.run(), { changes: 1, lastInsertRowid: 1 });
        assert.equal(fdb.exec('SELECT 5'), fdb);
        assert.deepStrictEqual(fdb.pragma('cache_size'), [{ cache_size: -16000 }]);
        hadRow = true;
      }
      assert.equal(hadRow, true);
      assert.equal(fdb.prepare('SELECT count(*) FROM foo').pluck().get(), 1);
      fdb.pragma('journal_mode = OFF');
      fdb.pragma('writable_schema = ON');
      assert.equal(fdb.pragma('journal_mode', { simple: true }), 'off');
      fdb.exec("UPDATE sqlite_master SET name = 'bar' WHERE name = 'foo'");
      assert.equal(fdb.unsafeMode(false), fdb);
      throwsSqliteError(
        () => fdb.exec("UPDATE sqlite_master SET name = 'foo' WHERE name = 'bar'"),
        'SQLITE_ERROR',
        'table sqlite_master may not be modified',
      );
      fdb.unsafeMode(true);
      fdb.exec("UPDATE sqlite_master SET name = 'foo' WHERE name = 'bar'");
    });

    it('45 unsafe mode keeps every other iterating rule', () => {
      fdb.exec('INSERT INTO foo VALUES (1), (2)');
      fdb.unsafeMode();
      const stmt = fdb.prepare('SELECT x FROM foo');
      const iter = stmt.iterate();
      iter.next();
      throwsTypeError(() => stmt.get(), MSG.stmtBusy);
      throwsTypeError(() => stmt.run(), MSG.stmtBusy);
      throwsTypeError(() => stmt.pluck(), MSG.stmtBusy);
      throwsTypeError(() => fdb.close(), MSG.dbBusy);
      throwsTypeError(() => fdb.function('f', () => 1), MSG.dbBusy);
      throwsTypeError(() => fdb.aggregate('a', aggDef()), MSG.dbBusy);
      throwsTypeError(() => fdb.table('vt', tableDef()), MSG.dbBusy);
      throwsTypeError(() => fdb.loadExtension(NO_EXT), MSG.dbBusy);
      iter.return();
    });

    it('45 unsafeMode() takes an optional boolean', () => {
      throwsTypeError(() => fdb.unsafeMode('yes'), MSG.expectBool);
      throwsTypeError(() => fdb.unsafeMode(undefined), MSG.expectBool);
    });
  });
});
