// Type definitions for cipherlite: better-sqlite3's API (v12) plus encryption options.
// Checked by the TypeScript compiler in __test__/60-typescript.test.js.

/// <reference types="node" />

declare namespace Database {
  /** A 32-byte raw key (SQLCipher 4 / SQLite3 Multiple Ciphers `x'…'` raw-key format). */
  type Key = Buffer | Uint8Array;

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
  }

  interface RekeyOptions {
    /** Page-1 layout of the rekeyed file; the current one is kept by default. */
    cipherLayout?: 'sqlite3mc' | 'sqlcipher';
    /** Called with pages copied so far and the total. */
    progress?: (done: number, total: number) => void;
  }

  interface EncryptOptions {
    /** Page-1 layout of the encrypted file (default 'sqlite3mc'). */
    cipherLayout?: 'sqlite3mc' | 'sqlcipher';
    progress?: (done: number, total: number) => void;
    nativeBinding?: string | object;
  }

  interface DecryptOptions {
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

  interface Transaction<F extends VariableArgFunction> {
    (...params: Parameters<F>): ReturnType<F>;
    default(...params: Parameters<F>): ReturnType<F>;
    deferred(...params: Parameters<F>): ReturnType<F>;
    immediate(...params: Parameters<F>): ReturnType<F>;
    exclusive(...params: Parameters<F>): ReturnType<F>;
    readonly database: Database;
  }

  interface Statement<BindParameters extends unknown[] = unknown[], Result = unknown> {
    readonly database: Database;
    readonly source: string;
    readonly reader: boolean;
    readonly readonly: boolean;
    readonly busy: boolean;

    run(...params: BindParameters): RunResult;
    get(...params: BindParameters): Result | undefined;
    all(...params: BindParameters): Result[];
    iterate(...params: BindParameters): IterableIterator<Result>;
    pluck(toggleState?: boolean): this;
    expand(toggleState?: boolean): this;
    raw(toggleState?: boolean): this;
    bind(...params: BindParameters): this;
    columns(): ColumnDefinition[];
    safeIntegers(toggleState?: boolean): this;
  }

  interface Database {
    readonly memory: boolean;
    readonly readonly: boolean;
    readonly name: string;
    readonly open: boolean;
    readonly inTransaction: boolean;

    prepare<BindParameters extends unknown[] | {} = unknown[], Result = unknown>(
      source: string,
    ): BindParameters extends unknown[] ? Statement<BindParameters, Result> : Statement<[BindParameters], Result>;
    transaction<F extends VariableArgFunction>(fn: F): Transaction<F>;
    exec(source: string): this;
    pragma(source: string, options?: PragmaOptions): unknown;
    function(name: string, cb: (...params: any[]) => unknown): this;
    function(name: string, options: RegistrationOptions, cb: (...params: any[]) => unknown): this;
    aggregate<T>(name: string, options: AggregateOptions<T>): this;
    table(name: string, options: VirtualTableOptions | ((this: { module: string; database: string; table: string }, ...args: string[]) => VirtualTableOptions)): this;
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

  interface SqliteError extends Error {
    name: 'SqliteError';
    /** The extended result code name, e.g. `SQLITE_CONSTRAINT_UNIQUE`. */
    code: string;
  }

  interface SqliteErrorConstructor {
    new (message: string, code: string): SqliteError;
    (message: string, code: string): SqliteError;
    readonly prototype: SqliteError;
  }
}

interface DatabaseConstructor {
  new (filename?: string | Buffer | null, options?: Database.Options): Database.Database;
  (filename?: string | Buffer | null, options?: Database.Options): Database.Database;
  readonly prototype: Database.Database;
  readonly SqliteError: Database.SqliteErrorConstructor;
  /** Encrypts a plaintext database file in place (crash-safe copy and rename). */
  encrypt(path: string, key: Buffer | Uint8Array, options?: Database.EncryptOptions): void;
  /** Writes a plaintext copy of an encrypted database to `destination`, which must not exist. */
  decrypt(path: string, key: Buffer | Uint8Array, destination: string, options?: Database.DecryptOptions): void;
}

declare const Database: DatabaseConstructor;
type Database = Database.Database;

export = Database;
