'use strict';
// cipherlite's iterate() fetches rows in small native batches when nothing can observe
// stepping ahead, and one row per next() otherwise (a writer, JS callbacks on the
// connection, unsafe mode) — counted here by wrapping the addon's raw `next` entry point.
const { describe, it, before, after } = require('node:test');
const assert = require('node:assert/strict');
const { Database, isCipherlite } = require('./_module');

describe('iterate() batching (cipherlite)', { skip: !isCipherlite && 'cipherlite internals' }, () => {
  let addon;
  let originalNext;
  let nativeNextCalls = 0;
  before(() => {
    addon = require(require('../lib/native-binding').nativeBindingPath());
    originalNext = addon.fast.next;
    addon.fast.next = (...args) => {
      nativeNextCalls += 1;
      return originalNext(...args);
    };
  });
  after(() => {
    addon.fast.next = originalNext;
  });

  function fresh() {
    const db = new Database(':memory:');
    db.exec('create table t(x integer primary key, y text)');
    const insert = db.prepare('insert into t (y) values (?)');
    db.transaction(() => {
      for (let i = 0; i < 300; i++) insert.run(`row ${i}`);
    })();
    return db;
  }

  function countNativeCalls(fn) {
    nativeNextCalls = 0;
    const result = fn();
    return { calls: nativeNextCalls, result };
  }

  it('a read-only statement on a connection without JS callbacks is fetched in batches', () => {
    const db = fresh();
    const { calls, result } = countNativeCalls(() => [...db.prepare('select x, y from t order by x').iterate()]);
    assert.equal(result.length, 300);
    assert.deepEqual(result[299], { x: 300, y: 'row 299' });
    assert.ok(calls <= 300 / 64 + 2, `expected a few batches, got ${calls} native calls`);
    db.close();
  });

  it('a statement that writes is stepped one row per next()', () => {
    const db = fresh();
    const { calls, result } = countNativeCalls(() => [
      ...db.prepare('update t set y = y || ? returning x').iterate('!'),
    ]);
    assert.equal(result.length, 300);
    assert.equal(calls, 301, 'one native step per row, plus the one that finds the end');
    db.close();
  });

  it('a connection with a JS function steps one row per next(), even for readers', () => {
    const db = fresh();
    db.function('twice', (v) => v * 2);
    const { calls, result } = countNativeCalls(() => [...db.prepare('select x from t').pluck().iterate()]);
    assert.equal(result.length, 300);
    assert.equal(calls, 301);
    db.close();
  });

  it('unsafe mode steps one row per next(), so writes made while iterating are seen as better-sqlite3 shows them', () => {
    const db = fresh();
    db.unsafeMode(true);
    const { calls } = countNativeCalls(() => [...db.prepare('select x from t').iterate()]);
    assert.equal(calls, 301);
    db.close();
  });

  it('breaking out of a batched iteration releases the statement and the connection', () => {
    const db = fresh();
    const stmt = db.prepare('select x from t order by x');
    for (const row of stmt.iterate()) if (row.x === 10) break;
    assert.equal(stmt.busy, false);
    assert.equal(db.prepare('delete from t').run().changes, 300, 'no iterator holds the connection');
    db.close();
  });
});

// better-sqlite3 frees an abandoned iterator only when V8 destroys its C++ wrapper, which
// two GC cycles don't guarantee; cipherlite ends the iteration from a FinalizationRegistry.
describe('abandoned iterators', { skip: !isCipherlite && 'cipherlite behaviour' }, () => {
  it('an iterator dropped unfinished stops holding the connection once collected', () => {
    const { spawnSync } = require('child_process');
    const path = require('path');
    const child = `
      const { Database } = require(${JSON.stringify(path.join(__dirname, '_module'))});
      const db = new Database(':memory:');
      db.exec('create table t(x); insert into t values (1),(2),(3)');
      (() => { const it = db.prepare('select x from t').iterate(); it.next(); })();
      let before;
      try { db.exec('insert into t values (4)'); before = 'free'; } catch (e) { before = e.constructor.name; }
      global.gc();
      setTimeout(() => {
        global.gc();
        setTimeout(() => {
          db.exec('insert into t values (4)');
          db.close();
          console.log(JSON.stringify({ before, after: 'free' }));
        }, 20);
      }, 20);
    `;
    const res = spawnSync(process.execPath, ['--expose-gc', '-e', child], { encoding: 'utf8', env: process.env });
    assert.equal(res.status, 0, res.stderr);
    assert.deepEqual(JSON.parse(res.stdout), { before: 'TypeError', after: 'free' });
  });
});
