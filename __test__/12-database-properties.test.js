'use strict';
// docs/better-sqlite3-behaviour.md §3: database properties.
const { describe, it, after } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { Database } = require('./_module');
const { tempDir, removeDir } = require('./_helpers');

const dir = tempDir();
after(() => removeDir(dir));

const GETTERS = ['name', 'open', 'inTransaction', 'readonly', 'memory'];
const snapshot = (db) => ({
  name: db.name,
  open: db.open,
  inTransaction: db.inTransaction,
  readonly: db.readonly,
  memory: db.memory,
});

describe('§3 database properties', () => {
  it('3.0 the five properties are enumerable read-only getters, visible to Object.keys / spread / JSON', () => {
    const db = new Database(':memory:');
    try {
      // better-sqlite3 defines them on each instance (Object.defineProperties(this, ...)),
      // so they show up in Object.keys, {...db} and JSON.stringify(db).
      assert.deepEqual(Object.keys(db), GETTERS);
      assert.deepEqual(
        { ...db },
        { name: ':memory:', open: true, inTransaction: false, readonly: false, memory: true },
      );
      assert.equal(
        JSON.stringify(db),
        '{"name":":memory:","open":true,"inTransaction":false,"readonly":false,"memory":true}',
      );
      for (const key of GETTERS) {
        const desc = Object.getOwnPropertyDescriptor(db, key);
        assert.equal(typeof desc.get, 'function', key);
        assert.equal(desc.set, undefined, key);
        assert.equal(desc.enumerable, true, key);
        assert.equal(desc.configurable, false, key);
      }
      // strict-mode assignment fails and changes nothing
      const before = snapshot(db);
      for (const key of GETTERS) {
        assert.throws(
          () => {
            db[key] = 'changed';
          },
          (err) => err instanceof TypeError && /only a getter/.test(err.message),
        );
      }
      assert.deepEqual(snapshot(db), before);
      assert.throws(() => {
        delete db.open;
      }, TypeError);
      assert.equal(db.open, true);
    } finally {
      db.close();
    }
  });

  it('3.1 .open is true until close(), then false', () => {
    const db = new Database(':memory:');
    assert.equal(db.open, true);
    db.exec('CREATE TABLE t(x)');
    assert.equal(db.open, true);
    db.close();
    assert.equal(db.open, false);
    db.close();
    assert.equal(db.open, false);
  });

  it('3.2 .inTransaction follows autocommit and is false once closed', () => {
    const file = path.join(dir, 'tx.db');
    const db = new Database(file);
    assert.equal(db.inTransaction, false);
    db.exec('CREATE TABLE t(x)');
    assert.equal(db.inTransaction, false);
    db.exec('BEGIN');
    assert.equal(db.inTransaction, true);
    db.exec('INSERT INTO t VALUES (1)');
    assert.equal(db.inTransaction, true);
    db.exec('COMMIT');
    assert.equal(db.inTransaction, false);
    db.prepare('BEGIN IMMEDIATE').run();
    assert.equal(db.inTransaction, true);
    db.prepare('ROLLBACK').run();
    assert.equal(db.inTransaction, false);
    db.exec('SAVEPOINT s1');
    assert.equal(db.inTransaction, true);
    db.exec('RELEASE s1');
    assert.equal(db.inTransaction, false);
    // a transaction wrapper is inside a transaction while its function runs
    let inside;
    db.transaction(() => {
      inside = db.inTransaction;
    })();
    assert.equal(inside, true);
    assert.equal(db.inTransaction, false);
    // closing with an open transaction: false afterwards
    db.exec('BEGIN; INSERT INTO t VALUES (2)');
    assert.equal(db.inTransaction, true);
    db.close();
    assert.equal(db.inTransaction, false);
    const again = new Database(file);
    try {
      // the open transaction was discarded by close()
      assert.deepEqual(again.prepare('SELECT x FROM t').pluck().all(), [1]);
      assert.equal(again.inTransaction, false);
    } finally {
      again.close();
    }
  });

  it('3.3 .name is the filename exactly as passed', () => {
    const file = path.join(dir, 'name.db');
    const cases = [
      [[], ''],
      [[''], ''],
      [[null], ''],
      [[undefined], ''],
      [[':memory:'], ':memory:'],
      [[file], file],
      [[` ${file}\t`], ` ${file}\t`],
      [[Buffer.alloc(0)], ':memory:'],
    ];
    for (const [args, expected] of cases) {
      const db = new Database(...args);
      try {
        assert.equal(db.name, expected);
      } finally {
        db.close();
      }
      assert.equal(db.name, expected); // still readable after close
    }
    assert.equal(fs.existsSync(file), true);
  });

  it('3.4 .memory is true for "", ":memory:" and buffer-opened databases, false for files', () => {
    const file = path.join(dir, 'memory.db');
    const cases = [
      [[''], true],
      [[':memory:'], true],
      [[], true],
      [[Buffer.alloc(0)], true],
      [[file], false],
    ];
    for (const [args, expected] of cases) {
      const db = new Database(...args);
      try {
        assert.equal(db.memory, expected);
      } finally {
        db.close();
      }
      assert.equal(db.memory, expected);
    }
    const ro = new Database(file, { readonly: true });
    try {
      assert.equal(ro.memory, false);
    } finally {
      ro.close();
    }
  });

  it('3.5 .readonly reflects the readonly option', () => {
    const file = path.join(dir, 'ro.db');
    new Database(file).close();
    const cases = [
      [[file], false],
      [[file, { readonly: false }], false],
      [[file, { readonly: true }], true],
      [[':memory:'], false],
      [[Buffer.alloc(0), { readonly: true }], true],
    ];
    for (const [args, expected] of cases) {
      const db = new Database(...args);
      try {
        assert.equal(db.readonly, expected);
      } finally {
        db.close();
      }
      assert.equal(db.readonly, expected);
    }
  });
});
