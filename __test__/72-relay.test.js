'use strict';
// cipherlite/relay: an Evolu relay's storage on the evolu_* functions (docs/evolu-storage.md
// §5). Each method, the quota paths, storedBytes accounting, deleteOwner, its typings,
// and the rows it writes compared with Evolu's own createRelaySqliteStorage.
const { describe, it, beforeEach, afterEach, before } = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const Database = require('..');
// `require('cipherlite/relay')` resolves to the package root's relay.js (checked on the
// packed tarball in 40-packaging): the same file.
const { createRelayStorage, INFINITE_UPPER_BOUND } = require('../relay');
const { loadEvolu, openEvoluSqlite } = require('../benchmark/lib/evolu');

function timestamp(millis, counter = 0, node = 1n) {
	const t = Buffer.alloc(16);
	t.writeUIntBE(millis, 0, 6);
	t.writeUInt16BE(counter, 6);
	t.writeBigUInt64BE(node, 8);
	return t;
}

const OWNER = Buffer.alloc(16, 0x0a);
const OTHER = Buffer.alloc(16, 0x0b);
const message = (millis, change = `change ${millis}`) => ({ timestamp: timestamp(millis), change: Buffer.from(change) });
const count = (db, table, owner) => db.prepare(`select count(*) from ${table} where "ownerId" = ?`).pluck().get(owner);
const usage = (db, owner) => db.prepare('select "storedBytes", "firstTimestamp", "lastTimestamp" from evolu_usage where "ownerId" = ?').get(owner);

describe('72 cipherlite/relay', () => {
	let db;
	let storage;
	let quotaCalls;
	beforeEach(() => {
		db = new Database(':memory:');
		quotaCalls = [];
		storage = createRelayStorage(db, {
			isOwnerWithinQuota: (ownerId, bytes) => { quotaCalls.push([Buffer.from(ownerId), bytes]); return true; },
		});
		storage.createTables();
	});
	afterEach(() => { if (db.open) db.close(); });

	describe('72.1 tables', () => {
		it('72.1.1 createTables runs Evolu’s DDL exactly (§1.1, §1.2)', async () => {
			const evolu = await loadEvolu();
			const e = await openEvoluSqlite(Database);
			try {
				evolu.localFirst.createBaseSqliteStorageTables({ sqlite: e.sqlite });
				evolu.localFirst.createRelayStorageTables({ sqlite: e.sqlite });
				const schema = (d) => d.prepare('select type, name, tbl_name, sql from sqlite_master order by name').all();
				assert.deepEqual(schema(db), schema(e.db));
				assert.deepEqual(schema(db).map((r) => r.name), [
					'evolu_message', 'evolu_timestamp', 'evolu_timestamp_index', 'evolu_usage', 'evolu_writeKey',
					'sqlite_autoindex_evolu_message_1', 'sqlite_autoindex_evolu_timestamp_1',
					'sqlite_autoindex_evolu_usage_1', 'sqlite_autoindex_evolu_writeKey_1',
				]);
			} finally {
				await e.dispose();
			}
		});

		it('72.1.2 the types of cipherlite/relay compile (and catch misuse) under --strict', () => {
			const tsc = require.resolve('typescript/bin/tsc');
			const usage = path.join(__dirname, 'types', 'relay-usage.ts');
			try {
				execFileSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2020', '--module', 'commonjs',
					'--moduleResolution', 'node', '--types', 'node', usage], { encoding: 'utf8', cwd: path.join(__dirname, '..') });
			} catch (err) {
				assert.fail(`tsc reported errors:\n${err.stdout}${err.stderr}`);
			}
		});
	});

	describe('72.2 writeMessages', () => {
		it('72.2.1 stores timestamps, changes and usage in one go', () => {
			const result = storage.writeMessages(OWNER, [message(3, 'ccc'), message(1, 'a'), message(2, 'bb')]);
			assert.deepEqual(result, { ok: true });
			assert.equal(storage.getSize(OWNER), 3);
			assert.equal(count(db, 'evolu_message', OWNER), 3);
			assert.deepEqual(usage(db, OWNER), { storedBytes: 6, firstTimestamp: timestamp(1), lastTimestamp: timestamp(3) });
			assert.deepEqual(quotaCalls, [[OWNER, 6]]);
			assert.deepEqual(storage.readDbChange(OWNER, timestamp(2)), Buffer.from('bb'));
		});

		it('72.2.2 duplicates within a batch count once (the first wins)', () => {
			storage.writeMessages(OWNER, [message(5, 'first'), message(5, 'second'), message(6, 'x')]);
			assert.equal(count(db, 'evolu_message', OWNER), 2);
			assert.deepEqual(storage.readDbChange(OWNER, timestamp(5)), Buffer.from('first'));
			assert.equal(usage(db, OWNER).storedBytes, 6);
		});

		it('72.2.3 re-sending stored messages writes nothing and does not grow storedBytes', () => {
			storage.writeMessages(OWNER, [message(1, 'abc')]);
			assert.equal(usage(db, OWNER).storedBytes, 3);
			const changes = db.prepare('select total_changes()').pluck();
			const before = changes.get();
			assert.deepEqual(storage.writeMessages(OWNER, [message(1, 'abc')]), { ok: true });
			assert.equal(changes.get(), before, 'no write at all');
			assert.equal(usage(db, OWNER).storedBytes, 3);
			assert.equal(quotaCalls.length, 1, 'no quota question for nothing new');
			storage.writeMessages(OWNER, [message(1, 'abc'), message(2, 'de')]);
			assert.equal(usage(db, OWNER).storedBytes, 5);
			assert.deepEqual(quotaCalls.at(-1), [OWNER, 5]);
		});

		it('72.2.4 bounds in evolu_usage follow appends, prepends and inserts', () => {
			storage.writeMessages(OWNER, [message(50)]);
			storage.writeMessages(OWNER, [message(70), message(10), message(60), message(5)]);
			assert.deepEqual(usage(db, OWNER), { storedBytes: 5 * 'change xx'.length - 1, firstTimestamp: timestamp(5), lastTimestamp: timestamp(70) });
			const ts = [];
			storage.iterate(OWNER, 0, storage.getSize(OWNER), (t) => { ts.push(t.readUIntBE(0, 6)); });
			assert.deepEqual(ts, [5, 10, 50, 60, 70]);
		});

		it('72.2.5 Evolu Timestamp objects are accepted as timestamps', () => {
			storage.writeMessages(OWNER, [{ timestamp: { millis: 258, counter: 3, nodeId: '0000000000000001' }, change: new Uint8Array([7]) }]);
			assert.deepEqual(storage.readDbChange(OWNER, timestamp(258, 3)), Buffer.from([7]));
		});

		it('72.2.6 bad input is a TypeError', () => {
			assert.throws(() => storage.writeMessages(Buffer.alloc(15), []), TypeError);
			assert.throws(() => storage.writeMessages(OWNER, [{ timestamp: Buffer.alloc(8), change: Buffer.alloc(1) }]), TypeError);
			assert.throws(() => storage.writeMessages(OWNER, [{ timestamp: timestamp(1), change: 'text' }]), TypeError);
			assert.throws(() => storage.writeMessages(OWNER, 'nope'), TypeError);
			assert.equal(count(db, 'evolu_message', OWNER), 0);
		});
	});

	describe('72.3 quota', () => {
		it('72.3.1 a refusal writes nothing, in any table', () => {
			storage.writeMessages(OWNER, [message(1, 'abc')]);
			const refusing = createRelayStorage(db, { isOwnerWithinQuota: (_, bytes) => bytes <= 5 });
			const snapshot = () => ['evolu_timestamp', 'evolu_message', 'evolu_usage']
				.map((table) => db.prepare(`select * from ${table} order by rowid`).all());
			const before = snapshot();
			assert.deepEqual(refusing.writeMessages(OWNER, [message(2, 'de'), message(3, 'f')]),
				{ ok: false, error: { type: 'StorageQuotaError', ownerId: OWNER } });
			assert.deepEqual(snapshot(), before);
			assert.deepEqual(refusing.writeMessages(OWNER, [message(2, 'de')]), { ok: true });
			assert.equal(usage(db, OWNER).storedBytes, 5);
		});

		it('72.3.2 an async quota makes writeMessages return a promise; a refusal writes nothing', async () => {
			const asyncStorage = createRelayStorage(db, { isOwnerWithinQuota: async (_, bytes) => bytes <= 4 });
			const accepted = asyncStorage.writeMessages(OWNER, [message(1, 'ab')]);
			assert.ok(accepted instanceof Promise);
			assert.equal(count(db, 'evolu_message', OWNER), 0, 'nothing before the quota answers');
			assert.deepEqual(await accepted, { ok: true });
			assert.equal(count(db, 'evolu_message', OWNER), 1);
			const refused = await asyncStorage.writeMessages(OWNER, [message(2, 'cde')]);
			assert.deepEqual(refused, { ok: false, error: { type: 'StorageQuotaError', ownerId: OWNER } });
			assert.equal(count(db, 'evolu_message', OWNER), 1);
			assert.equal(count(db, 'evolu_timestamp', OWNER), 1);
			assert.equal(usage(db, OWNER).storedBytes, 2);
		});

		it('72.3.3 writes of one owner wait for its pending async write (no double counting)', async () => {
			const answers = [];
			const slow = createRelayStorage(db, {
				isOwnerWithinQuota: (ownerId, bytes) => new Promise((resolve) => {
					answers.push(bytes);
					setTimeout(() => resolve(true), 5);
				}),
			});
			const a = slow.writeMessages(OWNER, [message(1, 'aaaa'), message(2, 'bb')]);
			const b = slow.writeMessages(OWNER, [message(2, 'bb'), message(3, 'c')]);
			const c = slow.writeMessages(OTHER, [message(1, 'zz')]);
			assert.deepEqual(await Promise.all([a, b, c]), [{ ok: true }, { ok: true }, { ok: true }]);
			assert.deepEqual(answers, [6, 2, 7], 'the second batch was prepared after the first was written');
			assert.equal(usage(db, OWNER).storedBytes, 7);
			assert.equal(storage.getSize(OWNER), 3);
			assert.equal(storage.getSize(OTHER), 1);
			// Once nothing is pending, a synchronous quota answers synchronously again.
			assert.deepEqual(storage.writeMessages(OWNER, [message(4, 'd')]), { ok: true });
		});
	});

	describe('72.4 reads', () => {
		beforeEach(() => {
			const messages = [];
			for (let i = 1; i <= 40; i++) messages.push(message(i * 10));
			storage.writeMessages(OWNER, shuffleDeterministic(messages));
		});

		it('72.4.1 readDbChange: the change, or an error for an unknown timestamp', () => {
			assert.deepEqual(storage.readDbChange(OWNER, timestamp(100)), Buffer.from('change 100'));
			assert.throws(() => storage.readDbChange(OWNER, timestamp(101)), { message: 'Every timestamp must have a change' });
			assert.throws(() => storage.readDbChange(OTHER, timestamp(100)), { message: 'Every timestamp must have a change' });
		});

		it('72.4.2 getSize, findLowerBound and fingerprint', () => {
			assert.equal(storage.getSize(OWNER), 40);
			assert.equal(storage.getSize(OTHER), 0);
			assert.equal(storage.findLowerBound(OWNER, 0, 40, timestamp(105)), 10);
			assert.equal(storage.findLowerBound(OWNER, 0, 40, timestamp(100)), 9);
			assert.equal(storage.findLowerBound(OWNER, 0, 40, timestamp(1000)), 40);
			assert.equal(storage.findLowerBound(OWNER, 0, 40, INFINITE_UPPER_BOUND), 40);
			assert.equal(storage.findLowerBound(OWNER, 7, 7, timestamp(1)), 7);
			const whole = storage.fingerprint(OWNER, 0, 40);
			const halves = xor(storage.fingerprint(OWNER, 0, 17), storage.fingerprint(OWNER, 17, 40));
			assert.deepEqual(whole, halves);
			assert.equal(whole.length, 12);
			assert.deepEqual(storage.fingerprint(OWNER, 9, 9), Buffer.alloc(12));
		});

		it('72.4.3 fingerprintRanges: upper bounds are the next timestamps, then the one given', () => {
			const ranges = storage.fingerprintRanges(OWNER, [10, 25, 40]);
			assert.deepEqual(ranges.map((r) => r.upperBound), [timestamp(110), timestamp(260), null]);
			assert.deepEqual(ranges[1].fingerprint, storage.fingerprint(OWNER, 10, 25));
			const bounded = storage.fingerprintRanges(OWNER, [10, 25], timestamp(999));
			assert.deepEqual(bounded.map((r) => r.upperBound), [timestamp(110), timestamp(999)]);
		});

		it('72.4.4 iterate: ranks begin..end−1 in order, stopping when told', () => {
			const seen = [];
			storage.iterate(OWNER, 5, 12, (t, i) => { seen.push([i, t.readUIntBE(0, 6)]); });
			assert.deepEqual(seen, [5, 6, 7, 8, 9, 10, 11].map((i) => [i, (i + 1) * 10]));
			const stopped = [];
			storage.iterate(OWNER, 0, 40, (t, i) => { stopped.push(i); return i < 2; });
			assert.deepEqual(stopped, [0, 1, 2]);
			let calls = 0;
			storage.iterate(OWNER, 3, 3, () => { calls++; });
			assert.equal(calls, 0);
		});

		it('72.4.5 write keys: the first is kept and later ones compared', () => {
			const key = Buffer.alloc(16, 1);
			assert.equal(storage.validateWriteKey(OWNER, key), true);
			assert.equal(storage.validateWriteKey(OWNER, key), true);
			assert.equal(storage.validateWriteKey(OWNER, Buffer.alloc(16, 2)), false);
			assert.equal(storage.validateWriteKey(OWNER, Buffer.alloc(15, 1)), false);
			storage.setWriteKey(OWNER, Buffer.alloc(16, 2));
			assert.equal(storage.validateWriteKey(OWNER, Buffer.alloc(16, 2)), true);
		});
	});

	describe('72.5 deleteOwner', () => {
		it('72.5.1 removes the owner from all four relay tables, and only that owner', () => {
			storage.validateWriteKey(OWNER, Buffer.alloc(16, 1));
			storage.validateWriteKey(OTHER, Buffer.alloc(16, 2));
			storage.writeMessages(OWNER, [message(1), message(2), message(3)]);
			storage.writeMessages(OTHER, [message(1), message(9)]);
			storage.deleteOwner(OWNER);
			for (const table of ['evolu_writeKey', 'evolu_message', 'evolu_usage', 'evolu_timestamp']) {
				assert.equal(count(db, table, OWNER), 0, table);
				assert.ok(count(db, table, OTHER) > 0, table);
			}
			assert.equal(storage.getSize(OWNER), 0);
			assert.equal(storage.getSize(OTHER), 2);
			// The owner can start over.
			assert.deepEqual(storage.writeMessages(OWNER, [message(7, 'x')]), { ok: true });
			assert.deepEqual(usage(db, OWNER), { storedBytes: 1, firstTimestamp: timestamp(7), lastTimestamp: timestamp(7) });
		});
	});

	describe('72.6 the same rows as Evolu’s createRelaySqliteStorage', () => {
		let evolu;
		before(async () => { evolu = await loadEvolu(); });

		it('72.6.1 batches with duplicates and re-sends: same messages, usage and fingerprints', async () => {
			const e = await openEvoluSqlite(Database);
			try {
				const { localFirst, common } = evolu;
				localFirst.createBaseSqliteStorageTables({ sqlite: e.sqlite });
				localFirst.createRelayStorageTables({ sqlite: e.sqlite });
				const theirs = localFirst.createRelaySqliteStorage({
					sqlite: e.sqlite, random: common.createRandom(), timingSafeEqual: require('node:crypto').timingSafeEqual,
				})({ isOwnerWithinQuota: () => true });
				const random = seeded(5);
				const owners = [OWNER, OTHER];
				const sent = [];
				for (let batch = 0; batch < 30; batch++) {
					const owner = owners[batch % 2];
					const messages = [];
					for (let i = 0; i < 40; i++) {
						const millis = Math.floor(random() * 2000);
						messages.push({
							timestamp: { millis, counter: Math.floor(random() * 3), nodeId: '00000000000000a1' },
							change: Buffer.alloc(1 + Math.floor(random() * 50), batch),
						});
					}
					if (sent.length > 0) messages.push(sent[Math.floor(random() * sent.length)]); // a re-send
					sent.push(...messages.map((m) => ({ ...m, owner })));
					const ours = storage.writeMessages(owner, messages);
					const result = await e.run(theirs.writeMessages(owner, messages));
					assert.deepEqual(ours, { ok: true });
					assert.equal(result.ok, true);
				}
				for (const owner of owners) {
					for (const sql of [
						'select "timestamp", "change" from evolu_message where "ownerId" = ? order by "timestamp"',
						'select "storedBytes", "firstTimestamp", "lastTimestamp" from evolu_usage where "ownerId" = ?',
						'select t from evolu_timestamp where "ownerId" = ? order by t',
					]) {
						assert.deepEqual(db.prepare(sql).all(owner), e.db.prepare(sql).all(owner), sql);
					}
					const size = theirs.getSize(owner);
					assert.equal(storage.getSize(owner), size);
					const buckets = common.computeBalancedBuckets(size).value;
					const ours = storage.fingerprintRanges(owner, buckets);
					const expected = theirs.fingerprintRanges(owner, buckets);
					assert.deepEqual(ours.map((r) => r.fingerprint), expected.map((r) => Buffer.from(r.fingerprint)));
					assert.deepEqual(ours.slice(0, -1).map((r) => r.upperBound), expected.slice(0, -1).map((r) => Buffer.from(r.upperBound)));
				}
			} finally {
				await e.dispose();
			}
		});
	});
});

function xor(a, b) {
	const out = Buffer.alloc(a.length);
	for (let i = 0; i < a.length; i++) out[i] = a[i] ^ b[i];
	return out;
}

function seeded(seed) {
	let a = seed >>> 0;
	return () => {
		a = (a + 0x6d2b79f5) >>> 0;
		let t = a;
		t = Math.imul(t ^ (t >>> 15), t | 1);
		t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
		return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
	};
}

function shuffleDeterministic(items) {
	const random = seeded(items.length);
	for (let i = items.length - 1; i > 0; i--) {
		const j = Math.floor(random() * (i + 1));
		[items[i], items[j]] = [items[j], items[i]];
	}
	return items;
}
