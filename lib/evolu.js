'use strict';
// cipherlite/evolu: Evolu's relay on cipherlite. Two pieces, both shaped like Evolu's own
// so that they drop into its code (`@evolu/common` 8.x, `@evolu/nodejs` 3.x):
//
//   createEvoluStorage({ db, random })(config)   Evolu's `Storage` (what its
//       createRelaySqliteStorage returns), on cipherlite's native skiplist (lib/relay.js
//       over the evolu_* SQL functions, docs/evolu-storage.md §5, §7): the same answers
//       and, with the same `random`, the same rows as Evolu's TypeScript storage.
//   createEvoluSqliteDriver({ key, ... })        Evolu's `CreateSqliteDriver` (what
//       @evolu/nodejs's createBetterSqliteDriver is) opening `${name}.db` with cipherlite
//       and the options given, for startRelay's or Evolu's Node client's
//       `createSqliteDriver` dependency.
//
// Nothing here imports @evolu/common: its shapes are met by duck typing (a Task is a
// function of a Run, a Result `{ ok, value | error }`, the infinite upper bound any
// symbol, Evolu's InfiniteUpperBound being one), so the package keeps no runtime
// dependency and works with whichever copy of @evolu/common the application has.

const fs = require('node:fs');
const { createRelayStorage } = require('./relay');

/** Evolu's randomSkiplistLevel (Storage.ts, docs/evolu-storage.md §3.2). */
const SKIPLIST_PROBABILITY = 0.25;
const SKIPLIST_MAX_LEVEL = 10;

/** The open options that belong to an encrypted file, left out for `:memory:`. */
const KEY_OPTIONS = [
  'key',
  'passphrase',
  'pageSize',
  'kdfIterations',
  'cipherLayout',
  'cipher',
  'algorithm',
  'tcost',
  'mcost',
  'pcost',
];

const RELAY_TABLES = ['evolu_timestamp', 'evolu_usage', 'evolu_writeKey', 'evolu_message'];

/** Evolu's ok(): the one shape its `ok()` returns for no value. */
const OK = Object.freeze({ ok: true, value: undefined });

const isThenable = (value) =>
  value !== null && (typeof value === 'object' || typeof value === 'function') && typeof value.then === 'function';

/** Evolu's ownerIdBytesToOwnerId: the 16 bytes as unpadded base64url (22 characters). */
const ownerIdOf = (ownerIdBytes) =>
  Buffer.from(ownerIdBytes.buffer, ownerIdBytes.byteOffset, ownerIdBytes.byteLength).toString('base64url');

/**
 * Creates Evolu's relay tables (docs/evolu-storage.md §1.1, §1.2) in a database that has
 * none of them; leaves a database that has all four alone; refuses one that has some.
 */
function ensureTables(db, relay) {
  const present = db
    .prepare(
      `select name from sqlite_master where type = 'table' and name in (${RELAY_TABLES.map(() => '?').join(', ')})`,
    )
    .pluck()
    .all(...RELAY_TABLES);
  if (present.length === RELAY_TABLES.length) return;
  if (present.length === 0) {
    relay.createTables();
    return;
  }
  const missing = RELAY_TABLES.filter((name) => !present.includes(name));
  throw new Error(
    `The database has some of Evolu's relay tables but not ${missing.join(', ')}: is it an Evolu client's database?`,
  );
}

/**
 * Evolu's relay `Storage` on cipherlite's native storage, curried like Evolu's
 * createRelaySqliteStorage: `createEvoluStorage(deps)(config)`.
 *
 * @param {{ db: import('..'), random: { next(): number }, InfiniteUpperBound?: symbol }} deps
 *   `db` an open cipherlite Database (its tables are created if it has none); `random`
 *   Evolu's `Random`, from which each new timestamp's level is drawn exactly as Evolu's
 *   storage draws it; `InfiniteUpperBound` Evolu's symbol, needed only to call
 *   `fingerprintRanges` without an upper bound (Evolu's protocol always passes one).
 * @param {{ isOwnerWithinQuota: (ownerId: string, requiredBytes: number) => boolean | PromiseLike<boolean> }} config
 *   Evolu's StorageConfig: asked with the `OwnerId` string.
 */
function createEvoluStorage(deps) {
  if (deps === null || typeof deps !== 'object') throw new TypeError('Expected deps to be an object');
  const { db, random } = deps;
  if (db === null || typeof db !== 'object' || typeof db.prepare !== 'function') {
    throw new TypeError('Expected deps.db to be a cipherlite Database');
  }
  if (random === null || typeof random !== 'object' || typeof random.next !== 'function') {
    throw new TypeError("Expected deps.random to be Evolu's Random (an object with next())");
  }
  const defaultUpperBound = deps.InfiniteUpperBound;
  if (defaultUpperBound !== undefined && typeof defaultUpperBound !== 'symbol') {
    throw new TypeError("Expected deps.InfiniteUpperBound to be Evolu's InfiniteUpperBound symbol");
  }

  // Evolu's randomSkiplistLevel, draw for draw: the same `random` gives the same levels.
  const drawLevel = () => {
    let level = 1;
    while (random.next() <= SKIPLIST_PROBABILITY && level < SKIPLIST_MAX_LEVEL) level += 1;
    return level;
  };

  return (config) => {
    if (config === null || typeof config !== 'object' || typeof config.isOwnerWithinQuota !== 'function') {
      throw new TypeError("Expected config to be Evolu's StorageConfig (with isOwnerWithinQuota)");
    }
    const { isOwnerWithinQuota } = config;
    const relay = createRelayStorage(db, {
      isOwnerWithinQuota: (ownerIdBytes, requiredBytes) => isOwnerWithinQuota(ownerIdOf(ownerIdBytes), requiredBytes),
      drawLevel,
    });
    ensureTables(db, relay);

    const toResult = (ownerIdBytes, result) =>
      result.ok ? OK : { ok: false, error: { type: 'StorageQuotaError', ownerId: ownerIdOf(ownerIdBytes) } };

    return {
      getSize: (ownerId) => relay.getSize(ownerId),

      fingerprint: (ownerId, begin, end) => relay.fingerprint(ownerId, begin, end),

      fingerprintRanges: (ownerId, buckets, upperBound = defaultUpperBound) => {
        if (upperBound === undefined) {
          throw new TypeError(
            "Expected an upperBound: pass one, or give createEvoluStorage Evolu's InfiniteUpperBound in deps",
          );
        }
        const infinite = typeof upperBound === 'symbol';
        const ranges = relay.fingerprintRanges(ownerId, buckets, infinite ? null : upperBound);
        const last = ranges.length - 1;
        return ranges.map((range, i) => ({
          type: 1, // Evolu's RangeType.Fingerprint
          upperBound: i === last ? upperBound : range.upperBound,
          fingerprint: range.fingerprint,
        }));
      },

      findLowerBound: (ownerId, begin, end, upperBound) =>
        relay.findLowerBound(ownerId, begin, end, typeof upperBound === 'symbol' ? null : upperBound),

      // Evolu stops at any falsy answer; cipherlite/relay at `false` only.
      iterate: (ownerId, begin, end, callback) => {
        if (typeof callback !== 'function') throw new TypeError('Expected callback to be a function');
        relay.iterate(ownerId, begin, end, (timestamp, index) => Boolean(callback(timestamp, index)));
      },

      validateWriteKey: (ownerId, writeKey) => relay.validateWriteKey(ownerId, writeKey),

      setWriteKey: (ownerId, writeKey) => relay.setWriteKey(ownerId, writeKey),

      // A Task, as Evolu's: nothing happens until Evolu runs it. The write itself is one
      // write transaction (lib/relay.js); the result is synchronous unless the quota
      // answers with a promise or another async write of the owner is pending.
      writeMessages: (ownerIdBytes, messages) => () => {
        const result = relay.writeMessages(ownerIdBytes, messages);
        return isThenable(result)
          ? result.then((settled) => toResult(ownerIdBytes, settled))
          : toResult(ownerIdBytes, result);
      },

      readDbChange: (ownerId, timestamp) => relay.readDbChange(ownerId, timestamp),

      deleteOwner: (ownerId) => relay.deleteOwner(ownerId),
    };
  };
}

/**
 * Evolu's `CreateSqliteDriver` over cipherlite: `(name, options) => Task<SqliteDriver>`,
 * as @evolu/nodejs's createBetterSqliteDriver (`${name}.db` in the working directory,
 * `:memory:` for `{ mode: 'memory' }`, every statement prepared once and cached by its
 * SQL, readers run with all(), writers with run()), with `openOptions` given to every
 * `new Database` (a file's `key`, `passphrase`, `pageSize`, `timeout`, …; an in-memory
 * database gets them without the key settings, which it cannot have).
 *
 * The file is read when the driver is created, so a missing or wrong key fails there
 * (when Evolu's relay or client starts) with an error saying so, not at the first query.
 */
function createEvoluSqliteDriver(openOptions = {}) {
  if (openOptions === null || typeof openOptions !== 'object') throw new TypeError('Expected options to be an object');
  // Required here, not at the top: `require('cipherlite/evolu')` alone loads no addon.
  const Database = require('./index');
  const keyed = openOptions.key !== undefined || openOptions.passphrase !== undefined;
  const plainOptions = { ...openOptions };
  for (const name of KEY_OPTIONS) delete plainOptions[name];

  return (name, options) => () => {
    const memory = options?.mode === 'memory';
    const filename = memory ? ':memory:' : `${name}.db`;
    let db;
    try {
      db = new Database(filename, memory ? plainOptions : openOptions);
      // Page 1 is read (and decrypted) here: a wrong, missing or extra key shows now.
      db.prepare('select count(*) from sqlite_master').pluck().get();
    } catch (error) {
      if (db?.open) db.close();
      // Only "not a database" means a key problem; other errors (a key of the wrong length,
      // a missing directory, …) stay as they are.
      if (error?.code !== 'SQLITE_NOTADB') throw error;
      const reason = keyed
        ? 'the key does not open it (a wrong key, or a plaintext file: encrypt it with Database.encrypt first)'
        : 'it is encrypted or not an SQLite database (give createEvoluSqliteDriver its key)';
      throw new Error(`Cannot open the Evolu database ${filename}: ${reason}`, { cause: error });
    }

    const statements = new Map();
    const prepare = (sql) => {
      let statement = statements.get(sql);
      if (statement === undefined) {
        statement = db.prepare(sql);
        statements.set(sql, statement);
      }
      return statement;
    };
    const close = () => {
      statements.clear();
      if (db.open) db.close();
    };

    return {
      ok: true,
      value: {
        exec: (query) => {
          const statement = prepare(query.sql);
          if (statement.reader) return { rows: statement.all(query.parameters), changes: 0 };
          return { rows: [], changes: statement.run(query.parameters).changes };
        },
        export: () => {
          const file = db.serialize();
          // Evolu transfers it between workers: it needs an ArrayBuffer of its own.
          return file.byteOffset === 0 && file.byteLength === file.buffer.byteLength
            ? new Uint8Array(file.buffer)
            : new Uint8Array(file);
        },
        deleteDatabase: () => {
          close();
          if (memory) return;
          for (const suffix of ['', '-shm', '-wal', '-journal']) fs.rmSync(`${filename}${suffix}`, { force: true });
        },
        [Symbol.dispose]: close,
      },
    };
  };
}

module.exports = { createEvoluStorage, createEvoluSqliteDriver };
