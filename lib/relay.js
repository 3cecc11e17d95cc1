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
// skiplist work runs in native code: one SQL call per timestamp instead of Evolu's
// recursive CTEs.
//
// Owner ids and timestamps are 16-byte Uint8Arrays (Buffers are Uint8Arrays); a message's
// timestamp may also be Evolu's `{ millis, counter, nodeId }` object.

const crypto = require('node:crypto');

const OWNER_ID_LENGTH = 16;
const TIMESTAMP_LENGTH = 16;
const INFINITE_UPPER_BOUND = null;

// §1.1 and §1.2, exactly as Evolu's createBaseSqliteStorageTables and
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

function checkOwnerId(ownerId) {
	if (!isBytes(ownerId, OWNER_ID_LENGTH)) throw new TypeError('Expected ownerId to be a 16-byte Uint8Array');
}

function checkTimestamp(t, name = 'timestamp') {
	if (!isBytes(t, TIMESTAMP_LENGTH)) throw new TypeError(`Expected ${name} to be a 16-byte Uint8Array`);
}

function checkRank(value, name) {
	if (!Number.isSafeInteger(value) || value < 0) throw new TypeError(`Expected ${name} to be a non-negative integer`);
}

/** Evolu's timestampToTimestampBytes: 6-byte millis, 2-byte counter, 8-byte node id. */
function timestampBytes(timestamp) {
	if (isBytes(timestamp, TIMESTAMP_LENGTH)) return timestamp;
	if (timestamp !== null && typeof timestamp === 'object'
		&& Number.isSafeInteger(timestamp.millis) && timestamp.millis >= 0 && timestamp.millis < 2 ** 48
		&& Number.isInteger(timestamp.counter) && timestamp.counter >= 0 && timestamp.counter <= 0xffff
		&& typeof timestamp.nodeId === 'string' && /^[0-9a-f]{16}$/.test(timestamp.nodeId)) {
		const bytes = Buffer.alloc(TIMESTAMP_LENGTH);
		bytes.writeUIntBE(timestamp.millis, 0, 6);
		bytes.writeUInt16BE(timestamp.counter, 6);
		bytes.write(timestamp.nodeId, 8, 'hex');
		return bytes;
	}
	throw new TypeError('Expected each message timestamp to be a 16-byte Uint8Array or an Evolu Timestamp');
}

const keyOf = (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
const isThenable = (value) => value !== null && (typeof value === 'object' || typeof value === 'function')
	&& typeof value.then === 'function';

/**
 * Creates the relay storage over `db`, an open cipherlite Database.
 *
 * @param {import('..')} db
 * @param {{ isOwnerWithinQuota?: (ownerId: Uint8Array, requiredBytes: number) => boolean | PromiseLike<boolean> }} [config]
 *   `isOwnerWithinQuota` is asked before a batch is written, with the owner's stored bytes
 *   after it; false refuses the whole batch. Without it every batch is accepted.
 */
function createRelayStorage(db, config = {}) {
	if (db === null || typeof db !== 'object' || typeof db.prepare !== 'function') {
		throw new TypeError('Expected a cipherlite Database');
	}
	const isOwnerWithinQuota = config.isOwnerWithinQuota ?? (() => true);
	if (typeof isOwnerWithinQuota !== 'function') throw new TypeError('Expected isOwnerWithinQuota to be a function');

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
		exists: 'select 1 from evolu_timestamp where "ownerId" = +? and "t" = +?',
		usage: 'select "storedBytes", "firstTimestamp", "lastTimestamp" from evolu_usage where "ownerId" = +?',
		// Two statements, as Evolu runs them: one statement doing both (an INSERT … SELECT
		// calling the function) would make SQLite journal every page it writes, since a
		// statement that calls a function may stop half-way; that costs more than the
		// second call.
		insertTimestamp: 'select evolu_skiplist_insert(?, ?, null, ?)',
		insertMessage: 'insert into evolu_message ("ownerId", "timestamp", "change") values (?, ?, ?) '
			+ 'on conflict do nothing',
		updateUsage: 'insert into evolu_usage ("ownerId", "storedBytes", "firstTimestamp", "lastTimestamp") '
			+ 'values (?, ?, ?, ?) on conflict ("ownerId") do update set "storedBytes" = excluded."storedBytes", '
			+ '"firstTimestamp" = excluded."firstTimestamp", "lastTimestamp" = excluded."lastTimestamp"',
		readChange: 'select "change" from evolu_message where "ownerId" = +? and "timestamp" = +?',
		size: 'select evolu_skiplist_size(?)',
		at: 'select evolu_skiplist_at(?, ?)',
		after: 'select t from evolu_timestamp where "ownerId" = +? and t > +? order by t limit ?',
		lowerBound: 'select evolu_skiplist_lower_bound(?, ?, ?, ?)',
		fingerprint: 'select evolu_skiplist_fingerprint(?, ?, ?)',
		ranges: 'select upper_bound, fingerprint from evolu_fingerprint_ranges(?, ?)',
		writeKey: 'select "writeKey" from evolu_writeKey where "ownerId" = +?',
		insertWriteKey: 'insert into evolu_writeKey ("ownerId", "writeKey") values (?, ?)',
		setWriteKey: 'insert into evolu_writeKey ("ownerId", "writeKey") values (?, ?) '
			+ 'on conflict ("ownerId") do update set "writeKey" = excluded."writeKey"',
	};

	const writeBatch = db.transaction((ownerId, batch) => {
		let { firstTimestamp, lastTimestamp } = batch;
		const insertTimestamp = statement(SQL.insertTimestamp, 'pluck');
		const insertMessage = statement(SQL.insertMessage);
		for (const { timestamp, change } of batch.messages) {
			// Evolu's getTimestampInsertStrategy: a hint for the native insert.
			let strategy = 'insert';
			if (Buffer.compare(timestamp, lastTimestamp) > 0) {
				strategy = 'append';
				lastTimestamp = timestamp;
			} else if (Buffer.compare(timestamp, firstTimestamp) < 0) {
				strategy = 'prepend';
				firstTimestamp = timestamp;
			}
			insertTimestamp.get(ownerId, timestamp, strategy);
			insertMessage.run(ownerId, timestamp, change);
		}
		statement(SQL.updateUsage).run(ownerId, batch.storedBytes, firstTimestamp, lastTimestamp);
	});

	const QUOTA_REFUSED = (ownerId) => ({ ok: false, error: { type: 'StorageQuotaError', ownerId } });
	const OK = Object.freeze({ ok: true });

	/** The part of writeMessages before the quota callback: what is new, and its bytes. */
	function prepareBatch(ownerId, messages) {
		// Dedupe within the batch (the first message of a timestamp wins).
		const unique = new Map();
		for (const message of messages) {
			if (message === null || typeof message !== 'object') throw new TypeError('Expected each message to be an object');
			const timestamp = timestampBytes(message.timestamp);
			if (!isBytes(message.change)) throw new TypeError('Expected each message change to be a Uint8Array');
			const key = keyOf(timestamp);
			if (!unique.has(key)) unique.set(key, { timestamp, change: message.change });
		}
		const exists = statement(SQL.exists, 'pluck');
		const fresh = [];
		let incomingBytes = 0;
		for (const message of unique.values()) {
			if (exists.get(ownerId, message.timestamp) === undefined) {
				fresh.push(message);
				incomingBytes += message.change.length;
			}
		}
		if (fresh.length === 0) return null;
		const usage = statement(SQL.usage).get(ownerId);
		return {
			messages: fresh,
			storedBytes: (usage ? usage.storedBytes : 0) + incomingBytes,
			// Without a usage row both bounds start at the first new timestamp.
			firstTimestamp: usage?.firstTimestamp ?? fresh[0].timestamp,
			lastTimestamp: usage?.lastTimestamp ?? fresh[0].timestamp,
		};
	}

	function attemptWrite(ownerId, messages) {
		const batch = prepareBatch(ownerId, messages);
		if (batch === null) return OK;
		const withinQuota = isOwnerWithinQuota(ownerId, batch.storedBytes);
		const finish = (allowed) => {
			if (!allowed) return QUOTA_REFUSED(ownerId);
			writeBatch(ownerId, batch);
			return OK;
		};
		return isThenable(withinQuota) ? Promise.resolve(withinQuota).then(finish) : finish(withinQuota);
	}

	// Per owner, the last asynchronous write still running (Evolu's mutex by owner id):
	// a write for that owner waits for it, since its reads would be stale.
	const pendingByOwner = new Map();
	function track(key, promise) {
		const settled = promise.then(() => {}, () => {});
		pendingByOwner.set(key, settled);
		settled.then(() => {
			if (pendingByOwner.get(key) === settled) pendingByOwner.delete(key);
		});
		return promise;
	}

	return {
		/** Creates Evolu's base and relay tables (§1.1, §1.2). Run once on a new database. */
		createTables() {
			db.transaction(() => {
				for (const sql of TABLES) db.exec(sql);
			})();
		},

		/**
		 * Stores a batch of messages for an owner (§5): duplicates within the batch and
		 * timestamps already stored are dropped; the owner's quota is asked with the stored
		 * bytes after the batch; then, in one transaction, every new timestamp goes into the
		 * skiplist and its change into evolu_message, and evolu_usage is updated.
		 *
		 * Returns `{ ok: true }`, or `{ ok: false, error: { type: 'StorageQuotaError', ownerId } }`
		 * (nothing written). When `isOwnerWithinQuota` returns a promise, or another such
		 * write for the same owner is still waiting, the result is a promise.
		 */
		writeMessages(ownerId, messages) {
			checkOwnerId(ownerId);
			if (!Array.isArray(messages)) throw new TypeError('Expected messages to be an array');
			const key = keyOf(ownerId);
			const pending = pendingByOwner.get(key);
			if (pending !== undefined) return track(key, pending.then(() => attemptWrite(ownerId, messages)));
			const result = attemptWrite(ownerId, messages);
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
			if (upperBound !== INFINITE_UPPER_BOUND) checkTimestamp(upperBound, 'upperBound');
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
			buckets.forEach((b) => checkRank(b, 'every bucket'));
			if (upperBound !== INFINITE_UPPER_BOUND) checkTimestamp(upperBound, 'upperBound');
			const rows = statement(SQL.ranges).all(ownerId, JSON.stringify(buckets));
			if (rows.length > 0) rows[rows.length - 1].upper_bound = upperBound;
			return rows.map((row) => ({ upperBound: row.upper_bound, fingerprint: row.fingerprint }));
		},

		/**
		 * Calls `callback(timestamp, index)` for ranks begin..end−1 in order, until it
		 * returns false (Evolu's iterate).
		 */
		iterate(ownerId, begin, end, callback) {
			checkOwnerId(ownerId);
			checkRank(begin, 'begin');
			checkRank(end, 'end');
			if (begin > end) throw new RangeError('Expected begin <= end');
			if (typeof callback !== 'function') throw new TypeError('Expected callback to be a function');
			if (begin === end) return;
			const first = statement(SQL.at, 'pluck').get(ownerId, begin);
			if (callback(first, begin) === false || end - begin === 1) return;
			const rest = statement(SQL.after, 'pluck').all(ownerId, first, end - begin - 1);
			for (let i = 0; i < rest.length; i++) {
				if (callback(rest[i], begin + 1 + i) === false) return;
			}
		},

		/**
		 * Evolu's validateWriteKey: the first key an owner presents is stored; later keys
		 * must equal it (compared in constant time).
		 */
		validateWriteKey(ownerId, writeKey) {
			checkOwnerId(ownerId);
			if (!isBytes(writeKey)) throw new TypeError('Expected writeKey to be a Uint8Array');
			const stored = statement(SQL.writeKey, 'pluck').get(ownerId);
			if (stored === undefined) {
				statement(SQL.insertWriteKey).run(ownerId, writeKey);
				return true;
			}
			return stored.length === writeKey.length && crypto.timingSafeEqual(stored, writeKey);
		},

		/** Stores (or replaces) the owner's write key. */
		setWriteKey(ownerId, writeKey) {
			checkOwnerId(ownerId);
			if (!isBytes(writeKey)) throw new TypeError('Expected writeKey to be a Uint8Array');
			statement(SQL.setWriteKey).run(ownerId, writeKey);
		},

		/** Deletes everything of an owner from the four relay tables, in one transaction. */
		deleteOwner(ownerId) {
			checkOwnerId(ownerId);
			db.transaction(() => {
				for (const table of ['evolu_writeKey', 'evolu_message', 'evolu_usage', 'evolu_timestamp']) {
					statement(`delete from ${table} where "ownerId" = +?`).run(ownerId);
				}
			})();
		},
	};
}

module.exports = { createRelayStorage, INFINITE_UPPER_BOUND };
