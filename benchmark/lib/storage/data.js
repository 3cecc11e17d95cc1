'use strict';
// The data of the Evolu storage benchmarks (storage.js, relay-load.js): the benchmark's
// timestamps, Evolu's balanced buckets, the relay's messages, and docs/evolu-storage.md §8 V2's published values.

const { prng } = require('../data');

/** Shuffles `items` in place with `random` (Fisher–Yates). */
function shuffle(items, random) {
	for (let i = items.length - 1; i > 0; i--) {
		const j = Math.floor(random() * (i + 1));
		[items[i], items[j]] = [items[j], items[i]];
	}
	return items;
}

/** The benchmark's timestamp i: 6-byte big-endian millis i, then 10 zero bytes. */
function benchTimestamp(i) {
	const t = new Uint8Array(16);
	Buffer.from(t.buffer).writeUIntBE(i, 0, 6);
	return t;
}

/**
 * computeBalancedBuckets(n, 16, 2) (Number.ts): 16 bucket ends over n timestamps; null
 * below 32 timestamps, as Evolu's, when `orNull` is set.
 */
function balancedBuckets(n, { orNull = false } = {}) {
	if (orNull && n < 32) return null;
	const q = Math.floor(n / 16);
	const r = n % 16;
	const out = [];
	let end = 0;
	for (let i = 0; i < 16; i++) {
		end += q + (i < r ? 1 : 0);
		out.push(end);
	}
	return out;
}

/** The relay's messages: Evolu Timestamp objects, mostly ascending, each batch shuffled. */
function relayMessages(size, seed) {
	const random = prng(seed);
	const nodes = ['1f2e3d4c5b6a7988', 'a1b2c3d4e5f60718', '0123456789abcdef'];
	const messages = [];
	for (let i = 0; i < size.messages; i++) {
		const length = 100 + Math.floor(random() * 901);
		const change = Buffer.allocUnsafe(length);
		for (let k = 0; k < length; k += 4) change.writeUInt32LE((random() * 2 ** 32) >>> 0, Math.min(k, length - 4));
		messages.push({
			timestamp: { millis: 1_767_225_600_000 + i * 37, counter: i % 3, nodeId: nodes[i % nodes.length] },
			change,
		});
	}
	const batches = [];
	for (let i = 0; i < messages.length; i += size.batch) batches.push(shuffle(messages.slice(i, i + size.batch), random));
	return batches;
}

const hex = (bytes) => Buffer.from(bytes).toString('hex');
const OWNER = new Uint8Array(16);
const RELAY_OWNER = new Uint8Array(16).fill(0x5a);

// §8 V2: level-independent values of the 50,000 benchmark timestamps.
const V2 = {
	size: 50_000,
	fingerprint: 'fff4dfb2f7b0537011a29518',
	ranges: ['9fc67b8974435368acb7f935', '0a49161f8ba68f6bd3cf1d25', '3d161eefcc0671eae60eeddb', '5fbaeabca156d5e7a9ac2eee',
		'0caefd953c7da9cdb6077a0c', '4e82e2512b5b71a77a1b40ea', '2f427b83d14dfd30c8eb8b18', 'ea7511eff0c324896411dfeb',
		'055eb333e35342f996bb8692', '67714471d82b0c77a5922485', '5f4c90472492a917aa4b2ffe', '9faef1644903d18d06d0512d',
		'87b61e674a0c9d5882f41e50', 'bce1251d5b7d67c2435e5d98', '369cb74135005054fa718b30', '20ca29852135b677e5f7c814'],
};


module.exports = { prng, shuffle, benchTimestamp, balancedBuckets, relayMessages, hex, OWNER, RELAY_OWNER, V2 };
