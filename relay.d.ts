// Type definitions for cipherlite/relay: an Evolu sync relay's storage on the evolu_*
// SQL functions (lib/relay.js). Checked by the TypeScript compiler in
// __test__/72-relay.test.js.

/// <reference types="node" />

import Database = require('./index');

declare namespace Relay {
  /** A 16-byte owner id (`OwnerIdBytes`). */
  type OwnerIdBytes = Uint8Array;
  /**
   * A 16-byte timestamp (`TimestampBytes`): 6-byte millis, 2-byte counter, 8-byte node id.
   * Millis 2^48 − 1 is reserved (Evolu's "infinity") and refused.
   */
  type TimestampBytes = Uint8Array;
  /** A 16-byte write key (`WriteKey`); other lengths are a TypeError. */
  type WriteKey = Uint8Array;
  /** A 12-byte fingerprint: the XOR of SHA-256[0..12] of the timestamps of a range. */
  type Fingerprint = Buffer;

  /** Evolu's `Timestamp`: integer `millis` below 2^48 − 1, integer `counter` 0..65535, `nodeId` 16 lowercase hex digits. */
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
     * false refuses the whole batch (nothing is written). May be async. Called inside the
     * batch's write transaction (the write lock held): it must not write to the same file
     * through another connection. An approval of n bytes covers any smaller total; after
     * an async approval the batch is decided again and the question asked again if the
     * owner now needs more.
     */
    isOwnerWithinQuota?: ((ownerId: OwnerIdBytes, requiredBytes: number) => boolean | PromiseLike<boolean>) | undefined;
    /**
     * The skiplist level (an integer 1..10) of each new timestamp, called once per new
     * timestamp in arrival order inside the write transaction. Without it cipherlite draws
     * the level from the operating system's generator (docs/evolu-storage.md §3.2).
     */
    drawLevel?: (() => number) | undefined;
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
     * Stores new messages in one BEGIN IMMEDIATE transaction (§5), which waits for other
     * writers with the connection's busy timeout; duplicates, stored bytes and the quota
     * are decided inside it. A promise when the quota callback is async or another async
     * write of the same owner on this connection is pending.
     */
    writeMessages(ownerId: OwnerIdBytes, messages: readonly Message[]): WriteResult | Promise<WriteResult>;
    /** The stored change of a timestamp; throws if there is none. */
    readDbChange(ownerId: OwnerIdBytes, timestamp: TimestampBytes): Buffer;
    getSize(ownerId: OwnerIdBytes): number;
    /** Evolu's findLowerBound; `upperBound` null is the infinite upper bound. */
    findLowerBound(ownerId: OwnerIdBytes, begin: number, end: number, upperBound: TimestampBytes | null): number;
    fingerprint(ownerId: OwnerIdBytes, begin: number, end: number): Fingerprint;
    fingerprintRanges(ownerId: OwnerIdBytes, buckets: readonly number[], upperBound?: TimestampBytes | null): FingerprintRange[];
    /**
     * Calls `callback` for ranks begin..end−1 in order until it returns false; reads the
     * range in chunks of at most 1,024 rows (one snapshot) and stops when the callback does.
     */
    iterate(ownerId: OwnerIdBytes, begin: number, end: number, callback: (timestamp: Buffer, index: number) => boolean | void): void;
    validateWriteKey(ownerId: OwnerIdBytes, writeKey: WriteKey): boolean;
    setWriteKey(ownerId: OwnerIdBytes, writeKey: WriteKey): void;
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
