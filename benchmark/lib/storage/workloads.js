'use strict';
// The workloads of the Evolu storage benchmark (run in a child process, one per round,
// workload and stack): see storage.js's header for what each measures.

const { openStack } = require('./stacks');
const { prng, shuffle, benchTimestamp, balancedBuckets, relayMessages, hex, OWNER, RELAY_OWNER } = require('./data');

const WORKLOADS = ['append', 'prepend', 'insert', 'at', 'ranges', 'relay'];
const FULL = { n: 50_000, transactions: 5, at: 1000, ranges: 250, messages: 50_000, batch: 500, relayRanges: 200, iterations: 5, reads: 10_000 };
const QUICK = { n: 5000, transactions: 5, at: 200, ranges: 50, messages: 5000, batch: 500, relayRanges: 40, iterations: 2, reads: 1000 };

function now() {
	return process.hrtime.bigint();
}
const ms = (start, end) => Number(end - start) / 1e6;
const gc = () => { if (global.gc) global.gc(); };

/** Level-independent values of a skiplist of the benchmark timestamps 0..n−1. */
function skiplistCheck(s, n) {
	return {
		size: s.size(OWNER),
		fingerprint: hex(s.fingerprint(OWNER, 0, n)),
		ranges: s.ranges(OWNER, balancedBuckets(n)).map(([upper, fp]) => [upper === null ? null : hex(upper), hex(fp)]),
	};
}

function appendAll(s, n) {
	s.transaction(() => {
		for (let i = 0; i < n; i++) s.insert(OWNER, benchTimestamp(i), 'append');
	});
}

async function runWorkload(stack, workload, size, seed, cipherlitePath) {
	const impl = await openStack(stack, cipherlitePath);
	impl.createTables();
	const times = {};
	let check;
	if (workload === 'append' || workload === 'prepend' || workload === 'insert') {
		const s = impl.storage();
		const order = Array.from({ length: size.n }, (_, i) => i);
		if (workload === 'prepend') order.reverse();
		if (workload === 'insert') shuffle(order, prng(seed));
		const ts = order.map(benchTimestamp);
		// A little untimed work first, on another owner, so V8 has compiled the paths.
		const warm = new Uint8Array(16).fill(0xee);
		s.transaction(() => { for (let i = 0; i < 200; i++) s.insert(warm, benchTimestamp(i), 'append'); });
		const per = size.n / size.transactions;
		let total = 0;
		for (let tx = 0; tx < size.transactions; tx++) {
			gc();
			const start = now();
			s.transaction(() => {
				for (let i = tx * per; i < (tx + 1) * per; i++) s.insert(OWNER, ts[i], workload);
			});
			total += ms(start, now());
		}
		times[`${workload} ${size.n}`] = total;
		check = skiplistCheck(s, size.n);
	} else if (workload === 'at') {
		const s = impl.storage();
		appendAll(s, size.n);
		const indexes = Array.from({ length: size.at }, (_, i) => Math.floor((i * (size.n - 1)) / (size.at - 1)));
		for (let i = 0; i < 50; i++) s.at(OWNER, indexes[i]);
		gc();
		const xor = Buffer.alloc(16);
		let last;
		const start = now();
		for (const index of indexes) last = s.at(OWNER, index);
		times[`at ×${size.at}`] = ms(start, now());
		for (const index of indexes.slice(0, 100)) {
			const t = s.at(OWNER, index);
			for (let k = 0; k < 16; k++) xor[k] ^= t[k];
		}
		check = { last: hex(last), expectedLast: hex(benchTimestamp(size.n - 1)), xorOfFirst100: hex(xor) };
	} else if (workload === 'ranges') {
		const s = impl.storage();
		appendAll(s, size.n);
		const buckets = balancedBuckets(size.n);
		for (let i = 0; i < 10; i++) s.ranges(OWNER, buckets);
		gc();
		let result;
		const start = now();
		for (let i = 0; i < size.ranges; i++) result = s.ranges(OWNER, buckets);
		times[`fingerprintRanges ×${size.ranges}`] = ms(start, now());
		check = { ranges: result.map(([upper, fp]) => [upper === null ? null : hex(upper), hex(fp)]) };
	} else if (workload === 'relay') {
		const r = impl.relay();
		const batches = relayMessages(size, seed);
		// Untimed warm-up on another owner: one batch.
		const warm = new Uint8Array(16).fill(0xee);
		await r.write(warm, batches[0].slice(0, 100));
		gc();
		let start = now();
		for (const batch of batches) await r.write(RELAY_OWNER, batch);
		times.writeMessages = ms(start, now());
		const n = r.size(RELAY_OWNER);
		const buckets = balancedBuckets(n);
		gc();
		let ranges;
		start = now();
		for (let i = 0; i < size.relayRanges; i++) ranges = r.ranges(RELAY_OWNER, buckets);
		times[`fingerprintRanges ×${size.relayRanges}`] = ms(start, now());
		gc();
		let seen = 0;
		const xor = Buffer.alloc(16);
		start = now();
		for (let k = 0; k < size.iterations; k++) {
			r.iterate(RELAY_OWNER, 0, n, (t) => {
				seen++;
				xor[seen & 15] ^= t[15];
				return true;
			});
		}
		times[`iterate ×${size.iterations}`] = ms(start, now());
		const all = [];
		r.iterate(RELAY_OWNER, 0, n, (t) => { all.push(t); return true; });
		const random = prng(seed + 1);
		const picks = Array.from({ length: size.reads }, () => all[Math.floor(random() * all.length)]);
		gc();
		let bytes = 0;
		start = now();
		for (const t of picks) bytes += r.readChange(RELAY_OWNER, t).length;
		times[`readDbChange ×${size.reads}`] = ms(start, now());
		times.total = Object.values(times).reduce((a, b) => a + b, 0);
		check = {
			size: n,
			storedBytes: r.storedBytes(RELAY_OWNER),
			fingerprint: hex(r.fingerprint(RELAY_OWNER, 0, n)),
			ranges: ranges.map(([upper, fp]) => [upper === null ? null : hex(upper), hex(fp)]),
			iterated: seen,
			iterateXor: hex(xor),
			readBytes: bytes,
		};
	} else {
		throw new Error(`unknown workload ${workload}`);
	}
	return { stack, workload, times, check, version: impl.version, node: process.version };
}

module.exports = { WORKLOADS, FULL, QUICK, runWorkload };
