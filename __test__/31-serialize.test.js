'use strict';
// docs/better-sqlite3-behaviour.md §4.6 Database#serialize({ attached }) and §2.4 new Database(buffer) — better-sqlite3 v12 behaviour.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Database, NOT_OPEN, BUSY, makeTempDir, removeDir, throwsType, throwsSqlite } = require('./_helpers-ext');

const SQLITE_HEADER = Buffer.from('SQLite format 3\0', 'latin1');

let dir;
before(() => {
  dir = makeTempDir();
});
after(() => {
  removeDir(dir);
});

function populated(file = ':memory:') {
  const db = new Database(file);
  db.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, data BLOB);
		INSERT INTO t (name, data) VALUES ('one', x'0102'), ('two', NULL), ('three', randomblob(10000));`);
  return db;
}

describe('4.6 Database#serialize()', () => {
  it('4.6 returns a Buffer holding the whole main database (page_count × page_size, SQLite header)', () => {
    const db = populated();
    const buf = db.serialize();
    assert.ok(Buffer.isBuffer(buf));
    const pages = db.pragma('page_count', { simple: true });
    const pageSize = db.pragma('page_size', { simple: true });
    assert.equal(pageSize, 4096);
    assert.equal(buf.length, pages * pageSize);
    assert.ok(buf.subarray(0, 16).equals(SQLITE_HEADER));
    assert.equal(buf.readUInt16BE(16), 4096); // page size field of the header
    assert.equal(buf.readUInt32BE(28), pages); // in-header database size
    db.close();
  });

  it('4.6 of an on-disk database equals the file bytes on disk', () => {
    const file = path.join(dir, 'disk.db');
    const db = populated(file);
    const buf = db.serialize();
    assert.ok(buf.equals(fs.readFileSync(file)));
    db.close();
  });

  it('4.6 an empty database serializes to at most 4096 bytes', () => {
    for (const name of [':memory:', '', path.join(dir, 'empty.db')]) {
      const db = new Database(name);
      const buf = db.serialize();
      assert.ok(Buffer.isBuffer(buf));
      assert.ok(buf.length <= 4096, `${JSON.stringify(name)} gave ${buf.length} bytes`);
      db.close();
    }
  });

  it('4.6 each call returns a new Buffer, a snapshot not tied to later changes', () => {
    const db = populated();
    const a = db.serialize();
    const b = db.serialize();
    assert.notEqual(a, b);
    assert.ok(a.equals(b));
    const copyOfA = Buffer.from(a);
    db.exec("INSERT INTO t (name) VALUES ('later'); CREATE TABLE grown (x);");
    assert.ok(a.equals(copyOfA), 'an earlier serialization must not change');
    const c = db.serialize();
    assert.ok(!c.equals(a));
    db.close();
  });

  it('4.6 { attached } serializes that schema', () => {
    const db = populated();
    db.prepare('ATTACH DATABASE ? AS other').run(path.join(dir, 'attached.db'));
    db.exec("CREATE TABLE other.only_here (z); INSERT INTO other.only_here VALUES ('other');");
    db.exec("CREATE TEMP TABLE tmp (w); INSERT INTO tmp VALUES ('temp');");
    const other = new Database(db.serialize({ attached: 'other' }));
    assert.deepEqual(other.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all(), ['only_here']);
    assert.deepEqual(other.prepare('SELECT z FROM only_here').pluck().all(), ['other']);
    other.close();
    const temp = new Database(db.serialize({ attached: 'temp' }));
    assert.deepEqual(temp.prepare('SELECT w FROM tmp').pluck().all(), ['temp']);
    temp.close();
    const main = new Database(db.serialize({ attached: 'main' }));
    assert.deepEqual(main.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all(), ['t']);
    main.close();
    db.close();
  });

  it('4.6 an unknown attached name throws (better-sqlite3: Error "Out of memory")', () => {
    const db = populated();
    assert.throws(() => db.serialize({ attached: 'nope' }), Error);
    db.close();
  });

  it('4.6 option errors → TypeError', () => {
    const db = populated();
    throwsType(() => db.serialize('main'), 'Expected first argument to be an options object');
    throwsType(() => db.serialize(1), 'Expected first argument to be an options object');
    throwsType(() => db.serialize(true), 'Expected first argument to be an options object');
    throwsType(() => db.serialize(() => {}), 'Expected first argument to be an options object');
    throwsType(() => db.serialize({ attached: 1 }), 'Expected the "attached" option to be a string');
    throwsType(() => db.serialize({ attached: undefined }), 'Expected the "attached" option to be a string');
    throwsType(() => db.serialize({ attached: null }), 'Expected the "attached" option to be a string');
    throwsType(() => db.serialize({ attached: new String('main') }), 'Expected the "attached" option to be a string');
    throwsType(() => db.serialize({ attached: '' }), 'The "attached" option cannot be an empty string');
    // null/undefined/{} mean the defaults
    const reference = db.serialize();
    assert.ok(db.serialize(null).equals(reference));
    assert.ok(db.serialize(undefined).equals(reference));
    assert.ok(db.serialize({}).equals(reference));
    db.close();
  });

  it('4.6 blocked while iterating, while busy, and when closed (TypeError)', () => {
    const db = populated();
    let iterated = 0;
    for (const row of db.prepare('SELECT id FROM t').pluck().iterate()) {
      iterated += row;
      throwsType(() => db.serialize(), BUSY);
    }
    assert.equal(iterated, 6);
    let ran = false;
    db.function('inside', () => {
      ran = true;
      throwsType(() => db.serialize(), BUSY);
      return 1;
    });
    assert.equal(db.prepare('SELECT inside()').pluck().get(), 1);
    assert.equal(ran, true);
    assert.ok(Buffer.isBuffer(db.serialize()));
    db.close();
    throwsType(() => db.serialize(), NOT_OPEN);
    // argument validation happens before the state check
    throwsType(() => db.serialize('x'), 'Expected first argument to be an options object');
  });
});

describe('2.4 new Database(buffer)', () => {
  it('2.4 round trip: the buffer reopens as an in-memory database with the same data', () => {
    const db = populated();
    const rows = db.prepare('SELECT * FROM t ORDER BY id').all();
    const buf = db.serialize();
    const copy = new Database(buf);
    assert.equal(copy.memory, true);
    assert.equal(copy.readonly, false);
    assert.equal(copy.name, ':memory:');
    assert.equal(copy.open, true);
    assert.deepEqual(copy.prepare('SELECT * FROM t ORDER BY id').all(), rows);
    assert.equal(copy.pragma('integrity_check', { simple: true }), 'ok');
    // the copy serializes back to the same bytes
    assert.ok(copy.serialize().equals(buf));
    copy.close();
    db.close();
  });

  it('2.4 the copy is writable and can grow (resizeable), independent of the buffer and of the source', () => {
    const db = populated();
    const buf = db.serialize();
    const pristine = Buffer.from(buf);
    const copy = new Database(buf);
    copy.exec("INSERT INTO t (name, data) VALUES ('four', randomblob(50000)); CREATE TABLE extra (x);");
    assert.equal(copy.prepare('SELECT count(*) FROM t').pluck().get(), 4);
    assert.ok(copy.serialize().length > buf.length);
    assert.ok(buf.equals(pristine), 'writing to the copy must not change the buffer');
    assert.equal(db.prepare('SELECT count(*) FROM t').pluck().get(), 3);
    copy.close();
    db.close();
  });

  it('2.4 the buffer is copied at open: mutating it afterwards does not affect the database', () => {
    const db = populated();
    const buf = db.serialize();
    const copy = new Database(buf);
    buf.fill(0);
    assert.deepEqual(copy.prepare('SELECT name FROM t ORDER BY id').pluck().all(), ['one', 'two', 'three']);
    copy.close();
    db.close();
  });

  it('2.4 { readonly: true } with a buffer: reads work, writes → SqliteError SQLITE_READONLY', () => {
    const db = populated();
    const copy = new Database(db.serialize(), { readonly: true });
    assert.equal(copy.readonly, true);
    assert.equal(copy.memory, true);
    assert.equal(copy.name, ':memory:');
    assert.deepEqual(copy.prepare('SELECT name FROM t ORDER BY id').pluck().all(), ['one', 'two', 'three']);
    throwsSqlite(
      () => copy.exec("INSERT INTO t (name) VALUES ('x')"),
      'SQLITE_READONLY',
      'attempt to write a readonly database',
    );
    assert.equal(copy.prepare('SELECT count(*) FROM t').pluck().get(), 3);
    copy.close();
    db.close();
  });

  it('2.4 an empty Buffer opens an empty, writable database', () => {
    const db = new Database(Buffer.alloc(0));
    assert.equal(db.memory, true);
    assert.deepEqual(db.prepare('SELECT name FROM sqlite_master').all(), []);
    db.exec('CREATE TABLE z (a); INSERT INTO z VALUES (1);');
    assert.equal(db.prepare('SELECT a FROM z').pluck().get(), 1);
    db.close();
  });

  it('2.4 bytes that are not a database → SqliteError SQLITE_NOTADB on first use', () => {
    const db = new Database(Buffer.alloc(4096, 'not a database '));
    throwsSqlite(() => db.prepare('SELECT * FROM sqlite_master').all(), 'SQLITE_NOTADB', 'file is not a database');
    db.close();
  });

  it('2.4 only a Buffer is accepted, not another typed array', () => {
    const buf = populated().serialize();
    throwsType(() => new Database(new Uint8Array(buf)), 'Expected first argument to be a string');
  });

  it('2.4 a serialized file database round-trips through the buffer, and can be backed up to disk', async () => {
    const file = path.join(dir, 'roundtrip.db');
    const db = populated(file);
    const copy = new Database(db.serialize());
    const out = path.join(dir, 'roundtrip-out.db');
    await copy.backup(out);
    const reopened = new Database(out);
    assert.deepEqual(reopened.prepare('SELECT name FROM t ORDER BY id').pluck().all(), ['one', 'two', 'three']);
    reopened.close();
    copy.close();
    db.close();
  });
});
