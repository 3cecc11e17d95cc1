// Type definitions for cipherlite: better-sqlite3's API (v12 and v13) plus encryption
// options. The `Database` namespace has the names of @types/better-sqlite3 with the same
// meaning (`Database.Statement<{ id: number }, Row>`, `Database.Transaction` without a type
// argument, `Database.SqliteError` as the constructor's type), so code written against
// those types compiles unchanged. Checked by the TypeScript compiler in
// __test__/60-typescript.test.js.

/// <reference types="node" />

type VariableArgFunction = (...params: any[]) => unknown;

declare namespace Cipherlite {
  interface Statement<BindParameters extends unknown[] = unknown[], Result = unknown> {
    readonly database: Database.Database;
    readonly source: string;
    readonly reader: boolean;
    readonly readonly: boolean;
    readonly busy: boolean;

    run(...params: BindParameters): Database.RunResult;
    get(...params: BindParameters): Result | undefined;
    all(...params: BindParameters): Result[];
    iterate(...params: BindParameters): IterableIterator<Result>;
    pluck(toggleState?: boolean): this;
    expand(toggleState?: boolean): this;
    raw(toggleState?: boolean): this;
    bind(...params: BindParameters): this;
    columns(): Database.ColumnDefinition[];
    safeIntegers(toggleState?: boolean): this;
    /**
     * better-sqlite3 13: the source SQL, or the SQL with the values `bind()` bound expanded
     * (values passed to run/get/all/iterate don't count); the source again after close().
     */
    toString(): string;
  }

  interface Transaction<F extends VariableArgFunction> {
    (...params: Parameters<F>): ReturnType<F>;
    default(...params: Parameters<F>): ReturnType<F>;
    deferred(...params: Parameters<F>): ReturnType<F>;
    immediate(...params: Parameters<F>): ReturnType<F>;
    exclusive(...params: Parameters<F>): ReturnType<F>;
    readonly database: Database.Database;
  }

  /** A SqliteError instance (`Database.SqliteError` is the constructor's type, as in @types/better-sqlite3). */
  interface SqliteError extends Error {
    name: string;
    message: string;
    /** The extended result code name, e.g. `SQLITE_CONSTRAINT_UNIQUE`. */
    code: string;
  }

  interface SqliteErrorConstructor {
    new (message: string, code: string): SqliteError;
    /** better-sqlite3 12: callable without `new` too. */
    (message: string, code: string): SqliteError;
    readonly prototype: SqliteError;
  }
}

declare namespace Database {
  /** A 32-byte raw key (SQLCipher 4 / SQLite3 Multiple Ciphers `x'…'` raw-key format); 16 bytes for an AEGIS-128 `algorithm`. */
  type Key = Buffer | Uint8Array;

  /** SQLite3 Multiple Ciphers' AEGIS algorithms (its `PRAGMA algorithm`; docs/aegis-format.md §1). The AEGIS-128 ones take 16-byte keys. */
  type AegisAlgorithm = 'aegis-128l' | 'aegis-128x2' | 'aegis-128x4' | 'aegis-256' | 'aegis-256x2' | 'aegis-256x4';

  interface Options {
    readonly?: boolean | undefined;
    fileMustExist?: boolean | undefined;
    /** Busy timeout in milliseconds (default 5000). */
    timeout?: number | undefined;
    verbose?: ((message?: unknown, ...additionalArgs: unknown[]) => void) | null | undefined;
    /** Path to the native `.node` file, or the loaded addon object. */
    nativeBinding?: string | object | undefined;
    /**
     * Encrypt the database (and its journal and WAL) in SQLCipher 4's format with this
     * 32-byte key. Not allowed for in-memory or temporary databases.
     */
    key?: Key | undefined;
    /**
     * Page 1 layout of a newly created encrypted file: `'sqlite3mc'` (default; SQLite3
     * Multiple Ciphers `legacy=0`, as Evolu writes) or `'sqlcipher'` (SQLCipher's own, which
     * SQLCipher's tools open). Existing files keep theirs. Requires `key`.
     */
    cipherLayout?: 'sqlite3mc' | 'sqlcipher' | undefined;
    /**
     * Page format of the encrypted file: `'sqlcipher'` (default; SQLCipher 4, which
     * SQLCipher's tools and SQLite3 Multiple Ciphers open) or `'aegis'` (SQLite3 Multiple
     * Ciphers' `PRAGMA cipher='aegis'`, AEGIS-256 unless `algorithm` says otherwise: faster;
     * passphrases go through Argon2id). Existing files must be opened with the format they are in. Requires `key`
     * or `passphrase`.
     */
    cipher?: 'sqlcipher' | 'aegis' | undefined;
    /**
     * With `cipher: 'aegis'`: its AEGIS algorithm (SQLite3 Multiple Ciphers' `PRAGMA
     * algorithm`; default `'aegis-256'`). Not stored in the file: open it with the one it was
     * written with. The AEGIS-128 algorithms take a 16-byte `key`.
     */
    algorithm?: AegisAlgorithm | undefined;
    /**
     * With `cipher: 'aegis'` and a `passphrase`: Argon2id's iterations, memory in KiB and
     * parallelism (SQLite3 Multiple Ciphers' `PRAGMA tcost`, `mcost`, `pcost`; defaults 2,
     * 19456, 1). Open the file with the costs it was written with.
     */
    tcost?: number | undefined;
    mcost?: number | undefined;
    pcost?: number | undefined;
    /**
     * Also accept rollback-journal checksums computed over the plaintext, as SQLite3 Multiple
     * Ciphers writes them, to roll back a hot journal it left after a crash. Whether such a
     * checksum matches depends on the plaintext, so a journal planted by someone without the
     * key would learn whether a guess was right: open with it once, on files you trust, and
     * without it afterwards. Requires `key` or `passphrase`.
     */
    acceptPlaintextJournalChecksums?: boolean | undefined;
    /**
     * better-sqlite3 13.2: with a file descriptor as the first argument, the descriptor of
     * the database's rollback journal (`<database>-journal`). Not with `key`.
     */
    journalFd?: number | undefined;
  }

  interface SerializeOptions {
    attached?: string;
  }

  interface PragmaOptions {
    simple?: boolean;
  }

  interface RegistrationOptions {
    varargs?: boolean | undefined;
    deterministic?: boolean | undefined;
    safeIntegers?: boolean | undefined;
    directOnly?: boolean | undefined;
  }

  interface AggregateOptions<T = unknown> extends RegistrationOptions {
    start?: T | (() => T);
    step: (total: T, next: any, ...more: any[]) => T | void;
    inverse?: ((total: T, dropped: any, ...more: any[]) => T) | undefined;
    result?: ((total: T) => unknown) | undefined;
  }

  interface VirtualTableOptions {
    rows: (...params: any[]) => Generator;
    columns: string[];
    parameters?: string[] | undefined;
    safeIntegers?: boolean | undefined;
    directOnly?: boolean | undefined;
  }

  interface BackupMetadata {
    totalPages: number;
    remainingPages: number;
  }

  interface BackupOptions {
    attached?: string;
    progress?: (info: BackupMetadata) => number | undefined | void;
    /**
     * The copy's key: a 32-byte key to encrypt it with, or `null` for a plaintext copy
     * (only when asked for). Without it the copy has the source's key (or none).
     */
    key?: Buffer | Uint8Array | null;
    /**
     * The copy's page format with a `key` of its own (docs/aegis-format.md): `'sqlcipher'`
     * or `'aegis'`. Without it the copy keeps the source's (SQLCipher 4 for a plaintext source).
     */
    cipher?: 'sqlcipher' | 'aegis';
    /** With `cipher: 'aegis'`: the copy's AEGIS algorithm (default 'aegis-256'; a 16-byte `key` for the AEGIS-128 ones). */
    algorithm?: AegisAlgorithm;
  }

  interface RekeyOptions {
    /** Page format of the rekeyed file; the current one is kept by default. Another format is a logical copy (VACUUM INTO), read from the file by a second connection under the same key. */
    cipher?: 'sqlcipher' | 'aegis';
    /** With `cipher: 'aegis'`: the rekeyed file's AEGIS algorithm (default 'aegis-256'; a 16-byte new key for the AEGIS-128 ones). */
    algorithm?: AegisAlgorithm;
    /** Page-1 layout of the rekeyed file; the current one is kept by default. */
    cipherLayout?: 'sqlite3mc' | 'sqlcipher';
    /** Called with pages copied so far and the total. */
    progress?: (done: number, total: number) => void;
  }

  interface EncryptOptions {
    /** Page format of the encrypted file (default 'sqlcipher'; 'aegis' takes no cipherLayout). */
    cipher?: 'sqlcipher' | 'aegis';
    /** With `cipher: 'aegis'`: its AEGIS algorithm (default 'aegis-256'; a 16-byte key for the AEGIS-128 ones). */
    algorithm?: AegisAlgorithm;
    /** Page-1 layout of the encrypted file (default 'sqlite3mc'). */
    cipherLayout?: 'sqlite3mc' | 'sqlcipher';
    /** Page size of the encrypted file (SQLCipher's cipher_page_size, default 4096): open it with the same `pageSize`. */
    pageSize?: number;
    progress?: (done: number, total: number) => void;
    nativeBinding?: string | object;
  }

  interface DecryptOptions {
    /** Page format the encrypted file is in (default 'sqlcipher'). */
    cipher?: 'sqlcipher' | 'aegis';
    /** With `cipher: 'aegis'`: the AEGIS algorithm it is in (default 'aegis-256'). */
    algorithm?: AegisAlgorithm;
    /** Page size the encrypted file was written with (as when opening it; default 4096). */
    pageSize?: number;
    progress?: (done: number, total: number) => void;
    nativeBinding?: string | object;
  }

  interface VerifyReport {
    /** Pages in the database file, every one checked. */
    pages: number;
    /** Committed WAL frames checked. */
    walFrames: number;
    /** Whether pages were authenticated (false for a plaintext database). */
    encrypted: boolean;
    /** Every page and frame authenticated and integrity_check said ok. */
    ok: boolean;
    /** The first page whose image does not authenticate, or null. */
    firstBadPage: number | null;
    /** integrity_check's findings, one per line; 'ok' when there are none. */
    integrity: string;
    /** BLAKE3 digest (64 hex digits) of the logical content: schema, header values, rows. */
    contentDigest: string | null;
  }

  interface RunResult {
    changes: number;
    lastInsertRowid: number | bigint;
  }

  interface ColumnDefinition {
    name: string;
    column: string | null;
    table: string | null;
    database: string | null;
    type: string | null;
  }

  type VariableArgFunction = (...params: any[]) => unknown;

  /**
   * A prepared statement. Object bind parameters may be given as the type itself
   * (`Statement<{ id: number }, Row>`), as with @types/better-sqlite3.
   */
  type Statement<BindParameters extends unknown[] | {} = unknown[], Result = unknown> = BindParameters extends unknown[]
    ? Cipherlite.Statement<BindParameters, Result>
    : Cipherlite.Statement<[BindParameters], Result>;

  type Transaction<F extends VariableArgFunction = VariableArgFunction> = Cipherlite.Transaction<F>;

  /** The SqliteError constructor's type, as in @types/better-sqlite3 (`InstanceType<Database.SqliteError>` or `Database.SqliteErrorInstance` for an instance). */
  type SqliteError = Cipherlite.SqliteErrorConstructor;

  /** A SqliteError instance. */
  type SqliteErrorInstance = Cipherlite.SqliteError;

  /** @deprecated the constructor's type is `Database.SqliteError`. */
  type SqliteErrorConstructor = Cipherlite.SqliteErrorConstructor;

  interface Database {
    readonly memory: boolean;
    readonly readonly: boolean;
    readonly name: string;
    readonly open: boolean;
    readonly inTransaction: boolean;

    prepare<BindParameters extends unknown[] | {} = unknown[], Result = unknown>(
      source: string,
    ): Statement<BindParameters, Result>;
    transaction<F extends VariableArgFunction>(fn: F): Transaction<F>;
    exec(source: string): this;
    pragma(source: string, options?: PragmaOptions): unknown;
    /**
     * better-sqlite3 13: the rows of `EXPLAIN <source>` (the bytecode program), or of
     * `EXPLAIN QUERY PLAN …` when `source` starts with `QUERY PLAN`. Parameters may stay
     * unbound; values given after `source` are bound (cipherlite).
     */
    explain(source: string, ...params: unknown[]): unknown[];
    function(name: string, cb: (...params: any[]) => unknown): this;
    function(name: string, options: RegistrationOptions, cb: (...params: any[]) => unknown): this;
    aggregate<T>(name: string, options: AggregateOptions<T>): this;
    table(
      name: string,
      options:
        | VirtualTableOptions
        | ((this: { module: string; database: string; table: string }, ...args: string[]) => VirtualTableOptions),
    ): this;
    loadExtension(path: string, entryPoint?: string): this;
    close(): this;
    defaultSafeIntegers(toggleState?: boolean): this;
    backup(destinationFile: string, options?: BackupOptions): Promise<BackupMetadata>;
    serialize(options?: SerializeOptions): Buffer;
    unsafeMode(unsafe?: boolean): this;
    /** Re-encrypts the file under `newKey` (crash-safe copy and rename); the connection keeps working. */
    rekey(newKey: Buffer | Uint8Array, options?: RekeyOptions): this;
    /** Authenticates every page and WAL frame, runs integrity_check, digests the content. */
    verify(): VerifyReport;
  }
}

interface DatabaseConstructor {
  new (filename?: string | Buffer | null, options?: Database.Options): Database.Database;
  (filename?: string | Buffer | null, options?: Database.Options): Database.Database;
  /** better-sqlite3 13.2: open from a file descriptor; `options.journalFd` is required (Linux). */
  new (fd: number, options: Database.Options & { journalFd: number }): Database.Database;
  (fd: number, options: Database.Options & { journalFd: number }): Database.Database;
  readonly prototype: Database.Database;
  readonly SqliteError: Database.SqliteError;
  /** Encrypts a plaintext database file in place (crash-safe copy and rename). */
  encrypt(path: string, key: Buffer | Uint8Array, options?: Database.EncryptOptions): void;
  /** Writes a plaintext copy of an encrypted database to `destination`, which must not exist. */
  decrypt(path: string, key: Buffer | Uint8Array, destination: string, options?: Database.DecryptOptions): void;
}

declare const Database: DatabaseConstructor;
type Database = Database.Database;

export = Database;
