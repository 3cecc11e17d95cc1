'use strict';
// The two stacks of the Evolu storage benchmark, behind one small interface:
//   before: Evolu's TypeScript storage (@evolu/common, its createSqlite over better-sqlite3)
//   after:  cipherlite's evolu_* SQL functions and cipherlite/relay

const crypto = require('node:crypto');
const path = require('node:path');

const ROOT = path.join(__dirname, '..', '..', '..');
const STACKS = {
	before: "Evolu's TypeScript storage (@evolu/common) on better-sqlite3",
	after: "cipherlite's evolu_* SQL functions (and cipherlite/relay)",
};

async function openBefore() {
	const BetterSqlite3 = require('better-sqlite3');
	const { loadEvolu, openEvoluSqlite } = require('../evolu');
	const { common, localFirst } = await loadEvolu();
	const e = await openEvoluSqlite(BetterSqlite3);
	const random = common.createRandom();
	const deps = { sqlite: e.sqlite, random };
	return {
		version: `better-sqlite3 ${require('better-sqlite3/package.json').version}, SQLite ${e.db.prepare('select sqlite_version()').pluck().get()}`,
		createTables() {
			localFirst.createBaseSqliteStorageTables(deps);
		},
		storage() {
			const storage = localFirst.createBaseSqliteStorage(deps);
			const byIndex = localFirst.getTimestampByIndex(deps);
			return {
				transaction: (fn) => e.sqlite.transaction(fn),
				insert: (owner, t, strategy) => storage.insertTimestamp(owner, t, strategy),
				at: (owner, index) => byIndex(owner, index),
				size: (owner) => storage.getSize(owner),
				fingerprint: (owner, begin, end) => storage.fingerprint(owner, begin, end),
				ranges: (owner, buckets) => storage.fingerprintRanges(owner, buckets)
					.map((r) => [typeof r.upperBound === 'symbol' ? null : r.upperBound, r.fingerprint]),
			};
		},
		relay() {
			localFirst.createRelayStorageTables(deps);
			const storage = localFirst.createRelaySqliteStorage({ ...deps, timingSafeEqual: crypto.timingSafeEqual })({
				isOwnerWithinQuota: () => true,
			});
			return {
				async write(owner, messages) {
					const result = await e.run(storage.writeMessages(owner, messages));
					if (!result.ok) throw new Error(`writeMessages failed: ${JSON.stringify(result.error)}`);
				},
				size: (owner) => storage.getSize(owner),
				fingerprint: (owner, begin, end) => storage.fingerprint(owner, begin, end),
				ranges: (owner, buckets) => storage.fingerprintRanges(owner, buckets)
					.map((r) => [typeof r.upperBound === 'symbol' ? null : r.upperBound, r.fingerprint]),
				iterate: (owner, begin, end, cb) => storage.iterate(owner, begin, end, cb),
				readChange: (owner, t) => storage.readDbChange(owner, t),
				storedBytes: (owner) => e.db.prepare('select storedBytes from evolu_usage where ownerId = ?').pluck().get(owner),
			};
		},
	};
}

async function openAfter(cipherlitePath) {
	const Database = require(cipherlitePath);
	const { createRelayStorage } = require(path.join(cipherlitePath, 'lib', 'relay.js'));
	const db = new Database(':memory:');
	let relay;
	return {
		version: `cipherlite (${path.relative(ROOT, cipherlitePath) || '.'}), SQLite ${db.prepare('select sqlite_version()').pluck().get()}`,
		createTables() {
			relay = createRelayStorage(db, { isOwnerWithinQuota: () => true });
			relay.createTables();
		},
		storage() {
			const insert = db.prepare('select evolu_skiplist_insert(?, ?, null, ?)').pluck();
			const at = db.prepare('select evolu_skiplist_at(?, ?)').pluck();
			const size = db.prepare('select evolu_skiplist_size(?)').pluck();
			const fingerprint = db.prepare('select evolu_skiplist_fingerprint(?, ?, ?)').pluck();
			const ranges = db.prepare('select upper_bound, fingerprint from evolu_fingerprint_ranges(?, ?)').raw();
			const begin = db.prepare('begin');
			const commit = db.prepare('commit');
			return {
				transaction(fn) {
					begin.run();
					try {
						fn();
						commit.run();
					} catch (error) {
						if (db.inTransaction) db.exec('rollback');
						throw error;
					}
				},
				insert: (owner, t, strategy) => insert.get(owner, t, strategy) === 1,
				at: (owner, index) => at.get(owner, index),
				size: (owner) => size.get(owner),
				fingerprint: (owner, b, e) => fingerprint.get(owner, b, e),
				ranges: (owner, buckets) => ranges.all(owner, JSON.stringify(buckets)),
			};
		},
		relay() {
			return {
				write(owner, messages) {
					const result = relay.writeMessages(owner, messages);
					if (!result.ok) throw new Error(`writeMessages failed: ${JSON.stringify(result.error)}`);
				},
				size: (owner) => relay.getSize(owner),
				fingerprint: (owner, b, e) => relay.fingerprint(owner, b, e),
				ranges: (owner, buckets) => relay.fingerprintRanges(owner, buckets).map((r) => [r.upperBound, r.fingerprint]),
				iterate: (owner, begin, end, cb) => relay.iterate(owner, begin, end, cb),
				readChange: (owner, t) => relay.readDbChange(owner, t),
				storedBytes: (owner) => db.prepare('select storedBytes from evolu_usage where ownerId = ?').pluck().get(owner),
			};
		},
	};
}


/** Opens `stack` ('before' or 'after'; cipherlite loaded from `cipherlitePath`). */
const openStack = (stack, cipherlitePath) => (stack === 'before' ? openBefore() : openAfter(cipherlitePath));

module.exports = { STACKS, openStack, ROOT };
