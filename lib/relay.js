'use strict';
// cipherlite/relay: the storage of an Evolu sync relay (docs/evolu-storage.md §1, §3.4, §5),
// on top of the evolu_* SQL functions that every cipherlite connection has.
//
//   const Database = require('cipherlite');
//   const { createRelayStorage } = require('cipherlite/relay');
//   const db = new Database('evolu-relay.db');
//   const storage = createRelayStorage(db, {
//     isOwnerWithinQuota: (ownerId, requiredBytes) => requiredBytes <= 1024 * 1024,
//   });
//   storage.createTables(); // once, for a new file
//   storage.writeMessages(ownerId, [{ timestamp, change }]); // → { ok: true }
//
// It writes the rows Evolu's createRelaySqliteStorage writes (tables evolu_timestamp,
// evolu_usage, evolu_writeKey, evolu_message) and reads them the same way, but the
// skiplist work runs in native code: a batch's duplicate check and its writes are one SQL
// call each (evolu_skiplist_stored, evolu_relay_write) instead of Evolu's recursive CTEs
// per message.
//
// Owner ids, timestamps and write keys are 16-byte Uint8Arrays (Buffers are Uint8Arrays);
// a message's timestamp may also be Evolu's `{ millis, counter, nodeId }` object.
// Timestamps whose millis is 2^48 − 1 (Evolu's reserved "infinity") are refused.
//
// Several processes (or storage objects) may share one database file (docs/relay.md §2):
// every write takes the write lock when its transaction begins
// (BEGIN IMMEDIATE), so it waits for other writers with the connection's busy timeout,
// and everything that decides a write (duplicates, stored bytes, the quota) is read in
// that same transaction. The evolu_* tables are this storage's own: triggers or other
// writers that change their rows (a RAISE(IGNORE) trigger, say) are not supported.

const crypto = require('node:crypto');

const OWNER_ID_LENGTH = 16;
const TIMESTAMP_LENGTH = 16;
const WRITE_KEY_LENGTH = 16;
/** Evolu's Millis stop at 2^48 − 2: 2^48 − 1 is reserved for "infinity". */
const RESERVED_MILLIS = 2 ** 48 - 1;
const INFINITE_UPPER_BOUND = null;
// evolu_relay_write's encoding of a message (crates/storage/src/batch.rs): timestamp,
// level, strategy hint, change length, then the change.
const MESSAGE_HEADER_LENGTH = TIMESTAMP_LENGTH + 1 + 1 + 4;
const STRATEGY_APPEND = 1;
const STRATEGY_PREPEND = 2;
const STRATEGY_INSERT = 3;
// iterate reads the range in chunks of FIRST_CHUNK rows, doubling up to MAX_CHUNK: a
// callback that stops early costs a few rows, a long range at most MAX_CHUNK at a time.
const FIRST_CHUNK = 32;
const MAX_CHUNK = 1024;

// docs/evolu-storage.md §1.1 and §1.2, exactly as Evolu's createBaseSqliteStorageTables and
// createRelayStorageTables run them.
const TABLES = [
  `
      create table evolu_timestamp (
        "ownerId" blob not null,
        "t" blob not null,
        "h1" integer,
        "h2" integer,
        "c" integer,
        "l" integer not null,
        primary key ("ownerId", "t")
      )
      strict;
    `,
  `
      create index evolu_timestamp_index on evolu_timestamp (
        "ownerId",
        "l",
        "t",
        "h1",
        "h2",
        "c"
      );
    `,
  `
      create table evolu_usage (
        "ownerId" blob primary key,
        "storedBytes" integer not null,
        "firstTimestamp" blob,
        "lastTimestamp" blob
      )
      strict;
    `,
  `
      create table evolu_writeKey (
        "ownerId" blob not null,
        "writeKey" blob not null,
        primary key ("ownerId")
      )
      strict;
    `,
  `
      create table evolu_message (
        "ownerId" blob not null,
        "timestamp" blob not null,
        "change" blob not null,
        primary key ("ownerId", "timestamp")
      )
      strict;
    `,
];

const isBytes = (value, length) => value instanceof Uint8Array && (length === undefined || value.length === length);
/** Bytes 0–5 of a timestamp are its millis: all 0xFF is the reserved value. */
const isReservedAt = (t, o) =>
  t[o] === 0xff &&
  t[o + 1] === 0xff &&
  t[o + 2] === 0xff &&
  t[o + 3] === 0xff &&
  t[o + 4] === 0xff &&
  t[o + 5] === 0xff;
const isReserved = (t) => isReservedAt(t, 0);

/** A drawn level goes into one byte: only 1..10 may (0 would mean "draw one"). */
function checkedLevel(level) {
  if (!Number.isInteger(level) || level < 1 || level > 10) {
    throw new RangeError('Expected drawLevel to return an integer from 1 to 10');
  }
  return level;
}

function checkOwnerId(ownerId) {
  if (!isBytes(ownerId, OWNER_ID_LENGTH)) throw new TypeError('Expected ownerId to be a 16-byte Uint8Array');
}

function checkTimestamp(t, name = 'timestamp') {
  if (!isBytes(t, TIMESTAMP_LENGTH)) throw new TypeError(`Expected ${name} to be a 16-byte Uint8Array`);
  if (isReserved(t)) throw new TypeError(`Expected ${name} to have millis below 2^48 - 1 (the reserved value)`);
}

function checkUpperBound(upperBound) {
  if (upperBound !== INFINITE_UPPER_BOUND) checkTimestamp(upperBound, 'upperBound');
}

function checkWriteKey(writeKey) {
  if (!isBytes(writeKey, WRITE_KEY_LENGTH)) throw new TypeError('Expected writeKey to be a 16-byte Uint8Array');
}

function checkRank(value, name) {
  if (!Number.isSafeInteger(value) || value < 0) throw new TypeError(`Expected ${name} to be a non-negative integer`);
}

const BAD_TIMESTAMP = 'Expected each message timestamp to be a 16-byte Uint8Array or an Evolu Timestamp';

/** Writes 16 lowercase hex digits as 8 bytes at `offset`; false if `hex` is not that. */
function writeHex(hex, out, offset) {
  if (hex.length !== 16) return false;
  for (let i = 0; i < 8; i++) {
    const high = hexDigit(hex.charCodeAt(2 * i));
    const low = hexDigit(hex.charCodeAt(2 * i + 1));
    if (high < 0 || low < 0) return false;
    out[offset + i] = (high << 4) | low;
  }
  return true;
}

/** 0–15 for '0'–'9' and 'a'–'f', −1 for anything else. */
const hexDigit = (code) => (code >= 48 && code <= 57 ? code - 48 : code >= 97 && code <= 102 ? code - 87 : -1);

/**
 * Evolu's timestampToTimestampBytes (6-byte millis, 2-byte counter, 8-byte node id),
 * written at `offset` of `out`: a copy, so what is checked is what is written, even if
 * the caller changes its array later.
 */
function writeTimestamp(timestamp, out, offset) {
  if (isBytes(timestamp)) {
    if (timestamp.length !== TIMESTAMP_LENGTH) throw new TypeError(BAD_TIMESTAMP);
    for (let i = 0; i < TIMESTAMP_LENGTH; i++) out[offset + i] = timestamp[i];
    if (isReservedAt(out, offset))
      throw new TypeError('Expected each message timestamp to have millis below 2^48 - 1 (the reserved value)');
    return;
  }
  if (timestamp === null || typeof timestamp !== 'object') throw new TypeError(BAD_TIMESTAMP);
  // Each property read once: a getter can't pass the check with one value and write another.
  const { millis, counter, nodeId } = timestamp;
  if (
    Number.isSafeInteger(millis) &&
    millis >= 0 &&
    millis < RESERVED_MILLIS &&
    Number.isInteger(counter) &&
    counter >= 0 &&
    counter <= 0xffff &&
    typeof nodeId === 'string' &&
    writeHex(nodeId, out, offset + 8)
  ) {
    const high = Math.floor(millis / 2 ** 32); // the top 16 bits of 48
    const low = millis % 2 ** 32;
    out[offset] = high >>> 8;
    out[offset + 1] = high & 0xff;
    out[offset + 2] = low >>> 24;
    out[offset + 3] = (low >>> 16) & 0xff;
    out[offset + 4] = (low >>> 8) & 0xff;
    out[offset + 5] = low & 0xff;
    out[offset + 6] = counter >>> 8;
    out[offset + 7] = counter & 0xff;
    return;
  }
  throw new TypeError(BAD_TIMESTAMP);
}

/** Compares the 16 bytes at `aOffset` of `a` with those at `bOffset` of `b`, as SQLite compares BLOBs. */
function compareTimestamps(a, aOffset, b, bOffset) {
  for (let i = 0; i < TIMESTAMP_LENGTH; i++) {
    const d = a[aOffset + i] - b[bOffset + i];
    if (d !== 0) return d;
  }
  return 0;
}

const keyOf = (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
const isThenable = (value) =>
  value !== null && (typeof value === 'object' || typeof value === 'function') && typeof value.then === 'function';

// Per connection and owner, the last asynchronous write still running (Evolu's mutex by
// owner id): a later write of that owner through any storage object on the connection
// waits for it. Other processes are kept in order by the write transactions themselves.
const pendingByDatabase = new WeakMap();

/**
 * Creates the relay storage over `db`, an open cipherlite Database.
 *
 * @param {import('..')} db
 * @param {{ isOwnerWithinQuota?: (ownerId: Uint8Array, requiredBytes: number) => boolean | PromiseLike<boolean>, drawLevel?: () => number }} [config]
 *   `isOwnerWithinQuota` is asked before a batch is written, with the owner's stored bytes
 *   after it; false refuses the whole batch. Without it every batch is accepted. It is
 *   called inside the batch's write transaction (holding the database's write lock), so it
 *   must not write to the same database through another connection. An approval of n
 *   bytes is taken to cover any smaller total.
 *   `drawLevel`, if given, is called once for each new timestamp, in arrival order inside
 *   the write transaction, for its skiplist level (an integer 1..10; docs/evolu-storage.md
 *   §3.2); without it the level is drawn natively.
 */
function createRelayStorage(db, config = {}) {
  if (db === null || typeof db !== 'object' || typeof db.prepare !== 'function') {
    throw new TypeError('Expected a cipherlite Database');
  }
  const isOwnerWithinQuota = config.isOwnerWithinQuota ?? (() => true);
  if (typeof isOwnerWithinQuota !== 'function') throw new TypeError('Expected isOwnerWithinQuota to be a function');
  const drawLevel = config.drawLevel ?? null;
  if (drawLevel !== null && typeof drawLevel !== 'function') throw new TypeError('Expected drawLevel to be a function');

  let pendingByOwner = pendingByDatabase.get(db);
  if (pendingByOwner === undefined) {
    pendingByOwner = new Map();
    pendingByDatabase.set(db, pendingByOwner);
  }

  // Statements are prepared on first use: the tables may not exist yet.
  const cache = new Map();
  const statement = (sql, shape) => {
    let stmt = cache.get(sql);
    if (stmt === undefined) {
      stmt = db.prepare(sql);
      if (shape === 'pluck') stmt.pluck();
      if (shape === 'raw') stmt.raw();
      cache.set(sql, stmt);
    }
    return stmt;
  };

  // Parameters of WHERE terms are written `+?`: the same values, but hidden from the
  // planner's value checks. SQLite 3.54 marks most `column = ?` parameters as
  // plan-sensitive, and a statement so marked is prepared again after its bindings
  // are cleared, which the driver does after every execution (as better-sqlite3 does).
  const SQL = {
    // One call per batch each (docs/evolu-storage.md §7): which timestamps are stored
    // (one byte each), and the new messages written, every timestamp into the skiplist
    // and its change into evolu_message, in order; it returns the bytes written.
    stored: 'select evolu_skiplist_stored(?, ?)',
    usage: 'select "storedBytes", "firstTimestamp", "lastTimestamp" from evolu_usage where "ownerId" = +?',
    writeMessages: 'select evolu_relay_write(?, ?)',
    // Relative to what is stored: the bytes this batch added.
    addUsage:
      'insert into evolu_usage ("ownerId", "storedBytes", "firstTimestamp", "lastTimestamp") ' +
      'values (?, ?, ?, ?) on conflict ("ownerId") do update set ' +
      '"storedBytes" = evolu_usage."storedBytes" + excluded."storedBytes", ' +
      '"firstTimestamp" = excluded."firstTimestamp", "lastTimestamp" = excluded."lastTimestamp"',
    readChange: 'select "change" from evolu_message where "ownerId" = +? and "timestamp" = +?',
    size: 'select evolu_skiplist_size(?)',
    at: 'select evolu_skiplist_at(?, ?)',
    after: 'select t from evolu_timestamp where "ownerId" = +? and t > +? order by t limit ?',
    lowerBound: 'select evolu_skiplist_lower_bound(?, ?, ?, ?)',
    fingerprint: 'select evolu_skiplist_fingerprint(?, ?, ?)',
    ranges: 'select upper_bound, fingerprint from evolu_fingerprint_ranges(?, ?)',
    writeKey: 'select "writeKey" from evolu_writeKey where "ownerId" = +?',
    insertWriteKey: 'insert into evolu_writeKey ("ownerId", "writeKey") values (?, ?)',
    setWriteKey:
      'insert into evolu_writeKey ("ownerId", "writeKey") values (?, ?) ' +
      'on conflict ("ownerId") do update set "writeKey" = excluded."writeKey"',
  };

  // Every write path runs in one of these: BEGIN IMMEDIATE takes the write lock first,
  // waiting for other writers with the busy timeout (a deferred transaction that reads
  // first would have to upgrade its lock, which SQLite does not retry), and nothing it
  // reads can change before it commits. Inside an open transaction it is a savepoint.
  const writeTransaction = (fn) => db.transaction(fn).immediate;
  // A read that takes several statements (iterate) sees one snapshot.
  const readTransaction = db.transaction((fn) => fn()).deferred;

  const QUOTA_REFUSED = (ownerId) => ({ ok: false, error: { type: 'StorageQuotaError', ownerId } });
  const OK = Object.freeze({ ok: true });

  /**
   * Checks a batch and drops duplicates within it (the first message of a timestamp
   * wins): `{ timestamps, changes }`, the timestamps end to end in one buffer (the
   * encoding evolu_skiplist_stored reads) and the changes in the same order.
   */
  function uniqueMessages(messages) {
    if (!Array.isArray(messages)) throw new TypeError('Expected messages to be an array');
    const length = messages.length;
    const timestamps = Buffer.allocUnsafe(length * TIMESTAMP_LENGTH);
    const changes = new Array(length);
    // Evolu's clients send a batch in timestamp order: strictly ascending has no duplicates.
    let ascending = true;
    for (let i = 0; i < length; i++) {
      const message = messages[i];
      if (message === null || typeof message !== 'object') throw new TypeError('Expected each message to be an object');
      const { timestamp, change } = message; // read once each
      const offset = i * TIMESTAMP_LENGTH;
      writeTimestamp(timestamp, timestamps, offset);
      if (!isBytes(change)) throw new TypeError('Expected each message change to be a Uint8Array');
      changes[i] = change;
      if (ascending && i > 0)
        ascending = compareTimestamps(timestamps, offset - TIMESTAMP_LENGTH, timestamps, offset) < 0;
    }
    if (ascending) return { timestamps, changes };
    const seen = new Set();
    let unique = 0;
    for (let i = 0; i < length; i++) {
      const offset = i * TIMESTAMP_LENGTH;
      const key = timestamps.toString('latin1', offset, offset + TIMESTAMP_LENGTH);
      if (seen.has(key)) continue;
      seen.add(key);
      timestamps.copyWithin(unique * TIMESTAMP_LENGTH, offset, offset + TIMESTAMP_LENGTH);
      changes[unique++] = changes[i];
    }
    changes.length = unique;
    return { timestamps: timestamps.subarray(0, unique * TIMESTAMP_LENGTH), changes };
  }

  /**
   * One write transaction for a batch: what is new and the owner's stored bytes are read
   * under the write lock; the quota is asked unless `approvedBytes` (an earlier
   * asynchronous approval) covers the total; then the batch is written. Returns
   * `{ result }`, or `{ answer, requiredBytes }` when the quota answered with a promise
   * (nothing written: the lock is not held while it is awaited).
   */
  const writeBatch = writeTransaction((owner, ownerId, { timestamps, changes }, approvedBytes) => {
    const count = changes.length;
    const stored = statement(SQL.stored, 'pluck').get(owner, timestamps);
    const fresh = []; // the indexes of the new messages
    let incomingBytes = 0;
    for (let i = 0; i < count; i++) {
      if (stored[i] === 0) {
        fresh.push(i);
        incomingBytes += changes[i].length;
      }
    }
    if (fresh.length === 0) return { result: OK };
    const usage = statement(SQL.usage).get(owner);
    const requiredBytes = (usage ? usage.storedBytes : 0) + incomingBytes;
    if (!(requiredBytes <= approvedBytes)) {
      const answer = isOwnerWithinQuota(ownerId, requiredBytes);
      if (isThenable(answer)) return { answer, requiredBytes };
      if (!answer) return { result: QUOTA_REFUSED(ownerId) };
    }
    // Without a usage row both bounds start at the first new timestamp. A bound is a
    // buffer and the offset of its 16 bytes.
    let first = usage?.firstTimestamp ?? timestamps;
    let firstOffset = usage?.firstTimestamp ? 0 : fresh[0] * TIMESTAMP_LENGTH;
    let last = usage?.lastTimestamp ?? timestamps;
    let lastOffset = usage?.lastTimestamp ? 0 : fresh[0] * TIMESTAMP_LENGTH;
    // The batch as evolu_relay_write reads it (crates/storage/src/batch.rs): per message
    // the timestamp, its level (0: the function draws it), the strategy hint, the
    // change's length (u32, big-endian) and the change. The bytes written are those of
    // the changes copied here.
    const batch = Buffer.allocUnsafe(fresh.length * MESSAGE_HEADER_LENGTH + incomingBytes);
    let offset = 0;
    for (let f = 0; f < fresh.length; f++) {
      const i = fresh[f];
      const at = i * TIMESTAMP_LENGTH;
      const change = changes[i];
      // Evolu's getTimestampInsertStrategy: a hint for the native insert.
      let strategy = STRATEGY_INSERT;
      if (compareTimestamps(timestamps, at, last, lastOffset) > 0) {
        strategy = STRATEGY_APPEND;
        last = timestamps;
        lastOffset = at;
      } else if (compareTimestamps(timestamps, at, first, firstOffset) < 0) {
        strategy = STRATEGY_PREPEND;
        first = timestamps;
        firstOffset = at;
      }
      for (let b = 0; b < TIMESTAMP_LENGTH; b++) batch[offset + b] = timestamps[at + b];
      // One level per new timestamp, in arrival order, as Evolu draws them.
      batch[offset + TIMESTAMP_LENGTH] = drawLevel === null ? 0 : checkedLevel(drawLevel());
      batch[offset + TIMESTAMP_LENGTH + 1] = strategy;
      batch.writeUInt32BE(change.length, offset + TIMESTAMP_LENGTH + 2);
      batch.set(change, offset + MESSAGE_HEADER_LENGTH);
      offset += MESSAGE_HEADER_LENGTH + change.length;
    }
    const addedBytes = statement(SQL.writeMessages, 'pluck').get(owner, batch);
    const bound = (bytes, at) => (bytes === timestamps ? bytes.subarray(at, at + TIMESTAMP_LENGTH) : bytes);
    statement(SQL.addUsage).run(owner, addedBytes, bound(first, firstOffset), bound(last, lastOffset));
    return { result: OK };
  });

  /**
   * Writes a batch; a promise when the quota answers with one. After an asynchronous
   * approval the batch is decided again in a new write transaction (another process, a
   * deleteOwner or another storage object may have written meanwhile): it is written if
   * the approval covers the bytes the owner now needs, or the quota is asked again.
   */
  function attemptWrite(owner, ownerId, messages, approvedBytes = -1) {
    const outcome = writeBatch(owner, ownerId, messages, approvedBytes);
    if (outcome.answer === undefined) return outcome.result;
    const { requiredBytes } = outcome;
    return Promise.resolve(outcome.answer).then((allowed) =>
      allowed ? attemptWrite(owner, ownerId, messages, requiredBytes) : QUOTA_REFUSED(ownerId),
    );
  }

  function track(key, promise) {
    const settled = promise.then(
      () => {},
      () => {},
    );
    pendingByOwner.set(key, settled);
    settled.then(() => {
      if (pendingByOwner.get(key) === settled) pendingByOwner.delete(key);
    });
    return promise;
  }

  const insertWriteKeyIfNone = writeTransaction((ownerId, writeKey) => {
    const stored = statement(SQL.writeKey, 'pluck').get(ownerId);
    if (stored !== undefined) return stored;
    statement(SQL.insertWriteKey).run(ownerId, writeKey);
    return undefined;
  });

  const upsertWriteKey = writeTransaction((ownerId, writeKey) => {
    statement(SQL.setWriteKey).run(ownerId, writeKey);
  });

  const deleteAll = writeTransaction((ownerId) => {
    for (const table of ['evolu_writeKey', 'evolu_message', 'evolu_usage', 'evolu_timestamp']) {
      statement(`delete from ${table} where "ownerId" = +?`).run(ownerId);
    }
  });

  return {
    /** Creates Evolu's base and relay tables (§1.1, §1.2). Run once on a new database. */
    createTables() {
      writeTransaction(() => {
        for (const sql of TABLES) db.exec(sql);
      })();
    },

    /**
     * Stores a batch of messages for an owner (§5): duplicates within the batch and
     * timestamps already stored are dropped; the owner's quota is asked with the stored
     * bytes after the batch; then every new timestamp goes into the skiplist and its
     * change into evolu_message, and evolu_usage grows by the bytes written — all in one
     * write transaction, so the usage stays exact with any number of writers.
     *
     * Returns `{ ok: true }`, or `{ ok: false, error: { type: 'StorageQuotaError', ownerId } }`
     * (nothing written). When `isOwnerWithinQuota` returns a promise, or another such
     * write for the same owner on this connection is still waiting, the result is a
     * promise.
     */
    writeMessages(ownerId, messages) {
      checkOwnerId(ownerId);
      const owner = Buffer.from(ownerId);
      const unique = uniqueMessages(messages);
      const key = keyOf(owner);
      const pending = pendingByOwner.get(key);
      if (pending !== undefined)
        return track(
          key,
          pending.then(() => attemptWrite(owner, ownerId, unique)),
        );
      const result = attemptWrite(owner, ownerId, unique);
      return isThenable(result) ? track(key, result) : result;
    },

    /** The stored change of a timestamp (Evolu's readDbChange); throws if there is none. */
    readDbChange(ownerId, timestamp) {
      checkOwnerId(ownerId);
      checkTimestamp(timestamp);
      const change = statement(SQL.readChange, 'pluck').get(ownerId, timestamp);
      if (change === undefined) throw new Error('Every timestamp must have a change');
      return change;
    },

    /** The number of the owner's timestamps. */
    getSize(ownerId) {
      checkOwnerId(ownerId);
      return statement(SQL.size, 'pluck').get(ownerId);
    },

    /**
     * Evolu's findLowerBound: `end` if `begin === end` or `upperBound` is null (infinite);
     * otherwise the rank of the first timestamp ≥ upperBound, or `end` if there is none.
     */
    findLowerBound(ownerId, begin, end, upperBound) {
      checkOwnerId(ownerId);
      checkRank(begin, 'begin');
      checkRank(end, 'end');
      checkUpperBound(upperBound);
      return statement(SQL.lowerBound, 'pluck').get(ownerId, begin, end, upperBound);
    },

    /** The 12-byte fingerprint (XOR of SHA-256[0..12]) of ranks begin..end. */
    fingerprint(ownerId, begin, end) {
      checkOwnerId(ownerId);
      checkRank(begin, 'begin');
      checkRank(end, 'end');
      return statement(SQL.fingerprint, 'pluck').get(ownerId, begin, end);
    },

    /**
     * For ascending cumulative bucket ends, each bucket's fingerprint and upper bound:
     * the first timestamp after it, or `upperBound` (default null, infinite) for the last.
     */
    fingerprintRanges(ownerId, buckets, upperBound = INFINITE_UPPER_BOUND) {
      checkOwnerId(ownerId);
      if (!Array.isArray(buckets)) throw new TypeError('Expected buckets to be an array');
      checkUpperBound(upperBound);
      // Each element read once, checked, and written as JSON by us: what is checked
      // is what is sent (no toJSON, getter or proxy can send something else).
      const length = buckets.length;
      const values = new Array(length);
      for (let i = 0; i < length; i++) {
        const bucket = buckets[i];
        checkRank(bucket, 'every bucket');
        values[i] = bucket;
      }
      const rows = statement(SQL.ranges).all(ownerId, `[${values.join(',')}]`);
      if (rows.length > 0) rows[rows.length - 1].upper_bound = upperBound;
      return rows.map((row) => ({ upperBound: row.upper_bound, fingerprint: row.fingerprint }));
    },

    /**
     * Calls `callback(timestamp, index)` for ranks begin..end−1 in order, until it
     * returns false (Evolu's iterate). The range is read in bounded chunks, in one read
     * transaction, and reading stops when the callback does; the callback may read the
     * storage (readDbChange) but should not write.
     */
    iterate(ownerId, begin, end, callback) {
      checkOwnerId(ownerId);
      checkRank(begin, 'begin');
      checkRank(end, 'end');
      if (begin > end) throw new RangeError('Expected begin <= end');
      if (typeof callback !== 'function') throw new TypeError('Expected callback to be a function');
      if (begin === end) return;
      const at = statement(SQL.at, 'pluck');
      if (end - begin === 1) {
        callback(at.get(ownerId, begin), begin);
        return;
      }
      readTransaction(() => {
        let last = at.get(ownerId, begin);
        if (callback(last, begin) === false) return;
        const after = statement(SQL.after, 'pluck');
        let index = begin + 1;
        let chunk = FIRST_CHUNK;
        while (index < end) {
          const limit = Math.min(chunk, end - index);
          const rows = after.all(ownerId, last, limit);
          for (let i = 0; i < rows.length; i++) {
            if (callback(rows[i], index++) === false) return;
          }
          if (rows.length < limit) return; // the owner has fewer timestamps than `end`
          last = rows[rows.length - 1];
          chunk = Math.min(chunk * 2, MAX_CHUNK);
        }
      });
    },

    /**
     * Evolu's validateWriteKey: the first key an owner presents is stored; later keys
     * must equal it (compared in constant time). Keys are 16 bytes.
     */
    validateWriteKey(ownerId, writeKey) {
      checkOwnerId(ownerId);
      checkWriteKey(writeKey);
      // A stored key is read without the write lock (it only ever changes through
      // setWriteKey, which a concurrent validation may see or not, as with Evolu's);
      // only an owner's first key takes a write transaction.
      let stored = statement(SQL.writeKey, 'pluck').get(ownerId);
      if (stored === undefined) stored = insertWriteKeyIfNone(ownerId, writeKey);
      if (stored === undefined) return true;
      return stored.length === writeKey.length && crypto.timingSafeEqual(stored, writeKey);
    },

    /** Stores (or replaces) the owner's 16-byte write key. */
    setWriteKey(ownerId, writeKey) {
      checkOwnerId(ownerId);
      checkWriteKey(writeKey);
      upsertWriteKey(ownerId, writeKey);
    },

    /** Deletes everything of an owner from the four relay tables, in one transaction. */
    deleteOwner(ownerId) {
      checkOwnerId(ownerId);
      deleteAll(ownerId);
    },
  };
}

module.exports = { createRelayStorage, INFINITE_UPPER_BOUND };
