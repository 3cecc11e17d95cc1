// Type definitions for cipherlite/relay: an Evolu sync relay's storage on the evolu_*
// SQL functions (lib/relay.js). Checked by the TypeScript compiler in
// __test__/72-relay.test.js.

/// <reference types="node" />

import Database = require('./index');

declare namespace Relay {
  /** A 16-byte owner id (`OwnerIdBytes`). */
  type OwnerIdBytes = Uint8Array;
  /** A 16-byte timestamp (`TimestampBytes`): 6-byte millis, 2-byte counter, 8-byte node id. */
  type TimestampBytes = Uint8Array;
  /** A 12-byte fingerprint: the XOR of SHA-256[0..12] of the timestamps of a range. */
  type Fingerprint = Buffer;

  /** Evolu's `Timestamp`; `nodeId` is 16 lowercase hex digits. */
  interface Timestamp {
    readonly millis: number;
    readonly counter: number;
    readonly nodeId: string;
  }

  /** An encrypted CRDT message as a relay receives it. */
  interface Message {
    readonly timestamp: TimestampBytes | Timestamp;
    readonly change: Uint8Array;
  }

  interface StorageQuotaError {
    readonly type: 'StorageQuotaError';
    readonly ownerId: OwnerIdBytes;
  }

  type WriteResult = { readonly ok: true } | { readonly ok: false; readonly error: StorageQuotaError };

  interface Config {
    /**
     * Asked before a batch is written, with the bytes the owner would store after it;
     * false refuses the whole batch (nothing is written). May be async.
     */
    isOwnerWithinQuota?: ((ownerId: OwnerIdBytes, requiredBytes: number) => boolean | PromiseLike<boolean>) | undefined;
  }

  interface FingerprintRange {
    /** The first timestamp after the bucket; for the last bucket, the `upperBound` given (null: infinite). */
    readonly upperBound: Buffer | TimestampBytes | null;
    readonly fingerprint: Fingerprint;
  }

  interface RelayStorage {
    /** Creates Evolu's base and relay tables (docs/evolu-storage.md §1.1, §1.2). */
    createTables(): void;
    /**
     * Stores new messages in one transaction (§5). A promise when the quota callback is
     * async or another async write of the same owner is pending.
     */
    writeMessages(ownerId: OwnerIdBytes, messages: readonly Message[]): WriteResult | Promise<WriteResult>;
    /** The stored change of a timestamp; throws if there is none. */
    readDbChange(ownerId: OwnerIdBytes, timestamp: TimestampBytes): Buffer;
    getSize(ownerId: OwnerIdBytes): number;
    /** Evolu's findLowerBound; `upperBound` null is the infinite upper bound. */
    findLowerBound(ownerId: OwnerIdBytes, begin: number, end: number, upperBound: TimestampBytes | null): number;
    fingerprint(ownerId: OwnerIdBytes, begin: number, end: number): Fingerprint;
    fingerprintRanges(ownerId: OwnerIdBytes, buckets: readonly number[], upperBound?: TimestampBytes | null): FingerprintRange[];
    /** Calls `callback` for ranks begin..end−1 in order until it returns false. */
    iterate(ownerId: OwnerIdBytes, begin: number, end: number, callback: (timestamp: Buffer, index: number) => boolean | void): void;
    validateWriteKey(ownerId: OwnerIdBytes, writeKey: Uint8Array): boolean;
    setWriteKey(ownerId: OwnerIdBytes, writeKey: Uint8Array): void;
    /** Deletes the owner from evolu_writeKey, evolu_message, evolu_usage and evolu_timestamp. */
    deleteOwner(ownerId: OwnerIdBytes): void;
  }
}

declare const Relay: {
  createRelayStorage(db: Database.Database, config?: Relay.Config): Relay.RelayStorage;
  /** The infinite upper bound: `null`. */
  readonly INFINITE_UPPER_BOUND: null;
};

export = Relay;
