// Compiled (not run) by 72-relay.test.js. A user writes `require('cipherlite/relay')`,
// which resolves to the package root's relay.js / relay.d.ts, imported here by path.
import Database = require('../..');
import relay = require('../../relay');

const db = new Database(':memory:');
const storage: relay.RelayStorage = relay.createRelayStorage(db, {
  isOwnerWithinQuota: async (ownerId: Uint8Array, requiredBytes: number) => ownerId.length === 16 && requiredBytes < 1e6,
});
storage.createTables();
const owner = new Uint8Array(16);
const t = new Uint8Array(16);
const written: relay.WriteResult | Promise<relay.WriteResult> = storage.writeMessages(owner, [
  { timestamp: t, change: new Uint8Array([1, 2, 3]) },
  { timestamp: { millis: 1, counter: 0, nodeId: '0000000000000001' }, change: Buffer.from('x') },
]);
void written;
const size: number = storage.getSize(owner);
const rank: number = storage.findLowerBound(owner, 0, size, null);
const fp: Buffer = storage.fingerprint(owner, 0, rank);
const ranges: relay.FingerprintRange[] = storage.fingerprintRanges(owner, [1, 2], t);
storage.iterate(owner, 0, size, (timestamp: Buffer, index: number) => index < 10 && timestamp.length === 16);
const change: Buffer = storage.readDbChange(owner, t);
const valid: boolean = storage.validateWriteKey(owner, new Uint8Array(16));
storage.setWriteKey(owner, new Uint8Array(16));
storage.deleteOwner(owner);
const infinite: null = relay.INFINITE_UPPER_BOUND;
void fp; void ranges; void change; void valid; void infinite;

// Misuse must not compile:
// @ts-expect-error owner ids are bytes, not strings
storage.getSize('owner');
// @ts-expect-error a message needs a change
storage.writeMessages(owner, [{ timestamp: t }]);
// @ts-expect-error the quota callback answers a boolean
relay.createRelayStorage(db, { isOwnerWithinQuota: () => 'yes' });
