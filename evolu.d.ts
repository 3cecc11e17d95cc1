// Type definitions for cipherlite/evolu (lib/evolu.js): Evolu's relay `Storage` on
// cipherlite's native storage, and Evolu's `CreateSqliteDriver` over cipherlite. The
// types are Evolu's own, imported from @evolu/common (an optional peer dependency: only
// the types need it, the code does not); checked by __test__/60-typescript.test.js and
// __test__/73-evolu.test.js.

/// <reference types="node" />

import type Database = require('./index');
import type { CreateSqliteDriver, Random } from '@evolu/common';
import type { Storage, StorageConfig } from '@evolu/common/local-first';

/** What createEvoluStorage needs: Evolu's createRelaySqliteStorage deps, with a cipherlite `db` for its `sqlite`. */
export interface EvoluStorageDeps {
  /** An open cipherlite Database; Evolu's relay tables are created in it if it has none. */
  readonly db: Database.Database;
  /**
   * Evolu's `Random`: each new timestamp's skiplist level is drawn from it exactly as
   * Evolu's storage draws it (one more level while `next() <= 0.25`, at most 10), so the
   * same `random` gives the same `evolu_timestamp` rows.
   */
  readonly random: Random;
  /**
   * Evolu's `InfiniteUpperBound`, returned by `fingerprintRanges` when it is called
   * without an upper bound (Evolu's protocol always passes one). Any symbol given as an
   * upper bound is taken as the infinite one.
   */
  readonly InfiniteUpperBound?: symbol | undefined;
}

/**
 * Evolu's relay `Storage` on cipherlite's native skiplist, shaped like Evolu's
 * `createRelaySqliteStorage(deps)(config)`: `writeMessages` returns a Task, ranges carry
 * `type: RangeType.Fingerprint` and Evolu's upper bounds, the quota callback gets the
 * `OwnerId` string and a refusal is a `StorageQuotaError` with it.
 */
export declare function createEvoluStorage(deps: EvoluStorageDeps): (config: StorageConfig) => Storage;

/** Options given to every `new Database` the driver opens (an in-memory one gets them without the key settings). */
export interface EvoluSqliteDriverOptions extends Database.Options {
  /** A passphrase instead of a raw key (SQLCipher's PBKDF2 key derivation). */
  passphrase?: string | Buffer | Uint8Array | undefined;
  /** The encrypted file's page size (SQLCipher's cipher_page_size, default 4096). */
  pageSize?: number | undefined;
  /** PBKDF2 iterations for `passphrase` (SQLCipher 4's default 256,000). */
  kdfIterations?: number | undefined;
  /** The page format: SQLCipher 4 (`'sqlcipher'`, the default) or SQLite3 Multiple Ciphers' AEGIS scheme (`'aegis'`, with its `algorithm`). */
  cipher?: 'sqlcipher' | 'aegis' | undefined;
}

/**
 * Evolu's `CreateSqliteDriver` over cipherlite (`${name}.db` in the working directory,
 * as @evolu/nodejs's better-sqlite3 driver), for `startRelay`'s or Evolu's Node client's
 * `createSqliteDriver` dependency. A file the options cannot open (a missing or wrong
 * key) fails when the driver is created, with an error that says so.
 */
export declare function createEvoluSqliteDriver(options?: EvoluSqliteDriverOptions): CreateSqliteDriver;
