'use strict';
// Evolu's own TypeScript storage from the `@evolu/common` devDependency, run unchanged on
// any better-sqlite3-compatible driver class (better-sqlite3 itself, or cipherlite): the
// "before" of benchmark/storage.js and the reference of __test__/71-storage-evolu.test.js.
//
// @evolu/common is ESM only (`"type": "module"`), so it is loaded with import(). It targets
// Node 22+: on Node 20 a few globals it touches while loading, or in the storage code
// paths, are missing, and this file fills them in first (never replacing a native one):
//   - `WebSocket` (Node 22): its module reads the ready-state constants at import time;
//     the storage code never opens a socket, so only the constants are provided.
//   - `Set.prototype.difference/union/intersection` (Node 22): used by its schema module
//     while loading.
//   - `Promise.withResolvers`, `Array.fromAsync` (Node 22): used by its task runner.
// Evolu's own `installPolyfills()` adds `DisposableStack` and `Map#getOrInsert*`.
//
// The SQLite layer is Evolu's: `createSqlite` (exec + transaction) from @evolu/common over
// a driver that is @evolu/nodejs's `createBetterSqliteDriver` (packages/nodejs/src/Sqlite.ts)
// with the `better-sqlite3` import replaced by the class given: every query is prepared
// once and cached by its SQL, readers run with .all(), writers with .run().

function installNode20Shims() {
  if (typeof globalThis.WebSocket !== 'function') {
    globalThis.WebSocket = class WebSocket {
      static CONNECTING = 0;
      static OPEN = 1;
      static CLOSING = 2;
      static CLOSED = 3;
      constructor() {
        throw new Error('no WebSocket in this Node.js');
      }
    };
  }
  const define = (target, name, value) => {
    if (typeof target[name] !== 'function') {
      Object.defineProperty(target, name, { value, writable: true, configurable: true });
    }
  };
  define(Set.prototype, 'difference', function difference(other) {
    const out = new Set(this);
    for (const v of other.keys()) out.delete(v);
    return out;
  });
  define(Set.prototype, 'union', function union(other) {
    const out = new Set(this);
    for (const v of other.keys()) out.add(v);
    return out;
  });
  define(Set.prototype, 'intersection', function intersection(other) {
    const out = new Set();
    for (const v of this) if (other.has(v)) out.add(v);
    return out;
  });
  define(Promise, 'withResolvers', function withResolvers() {
    let resolve;
    let reject;
    const promise = new this((res, rej) => {
      resolve = res;
      reject = rej;
    });
    return { promise, resolve, reject };
  });
  define(Array, 'fromAsync', async function fromAsync(items, map) {
    const out = [];
    for await (const item of items) out.push(map ? await map(item, out.length) : item);
    return out;
  });
}

let loaded;

/** `{ common, localFirst }`: the modules `@evolu/common` and `@evolu/common/local-first`. */
function loadEvolu() {
  loaded ??= (async () => {
    installNode20Shims();
    (await import('@evolu/common/polyfills')).installPolyfills();
    const common = await import('@evolu/common');
    const localFirst = await import('@evolu/common/local-first');
    return { common, localFirst };
  })();
  return loaded;
}

/** @evolu/nodejs's createBetterSqliteDriver, over `Database` (a better-sqlite3-like class). */
function createDriverFactory(common, Database, openOptions) {
  return (name, options) => () => {
    const filename = options?.mode === 'memory' ? ':memory:' : `${name}.db`;
    const db = new Database(filename, openOptions);
    const cache = common.createPreparedStatementsCache(
      (sql) => db.prepare(sql),
      () => {},
    ); // statements need no disposal
    return common.ok({
      exec: (query) => {
        // Always prepare is recommended for better-sqlite3.
        const prepared = cache.get(query, true);
        if (prepared.reader) {
          return { rows: prepared.all(query.parameters), changes: 0 };
        }
        return { rows: [], changes: prepared.run(query.parameters).changes };
      },
      export: () => new Uint8Array(db.serialize()),
      deleteDatabase: () => {
        cache[Symbol.dispose]();
        db.close();
      },
      [Symbol.dispose]: () => {
        cache[Symbol.dispose]();
        db.close();
      },
      db,
    });
  };
}

/**
 * A random source for Evolu's level draws that yields `levels` in order: level L is
 * L − 1 draws ≤ 0.25 and one above (randomSkiplistLevel draws before it checks the cap,
 * so level 10 takes ten draws too).
 */
function levelsRandom(levels) {
  const draws = [];
  let i = 0;
  return {
    next() {
      if (i === draws.length) {
        draws.length = 0;
        i = 0;
        if (levels.length === 0) throw new Error('levelsRandom: no level left to draw');
        const level = levels.shift();
        for (let k = 1; k < level; k++) draws.push(0.125);
        draws.push(0.75);
      }
      return draws[i++];
    },
  };
}

/**
 * Opens Evolu's Sqlite (its createSqlite over the driver) on a fresh in-memory database
 * of `Database`. Returns `{ run, sqlite, db, dispose }`; `db` is the driver's own
 * connection, for reading the rows Evolu wrote.
 */
async function openEvoluSqlite(Database, { random, openOptions } = {}) {
  const { common } = await loadEvolu();
  let driverDb;
  const factory = createDriverFactory(common, Database, openOptions);
  const createSqliteDriver = (name, options) => (run) => {
    const result = factory(name, options)(run);
    driverDb = result.value.db;
    return result;
  };
  const deps = { createSqliteDriver };
  if (random) deps.random = random;
  const run = common.createRun(deps);
  const result = await run(common.createSqlite(common.Name.orThrow('Storage'), { mode: 'memory' }));
  if (!result.ok) throw new Error(`createSqlite failed: ${JSON.stringify(result.error)}`);
  const sqlite = result.value;
  return {
    run,
    sqlite,
    db: driverDb,
    async dispose() {
      await sqlite[Symbol.asyncDispose]();
      await run[Symbol.asyncDispose]?.();
    },
  };
}

module.exports = { loadEvolu, openEvoluSqlite, levelsRandom };
