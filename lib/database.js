'use strict';
// Database: argument checks and messages of better-sqlite3's lib/database.js, then the
// native connection (crates/node/src/database.rs).

const fs = require('fs');
const path = require('path');
const util = require('./util');
const SqliteError = require('./sqlite-error');
const { BatchReader, useLayout } = require('./results');
const { prepareStatement } = require('./prepare');
const { checkEncryptionOptions } = require('./encryption-options');
const { kNative, kReader } = util;
/** On the native database: what the getters report that never changes (name, readonly,
 * memory) and its id for the addon's raw entry points. */
const kFacts = Symbol();

/** Initial size of the buffer result batches are written into; it grows on demand. */
const SCRATCH_BYTES = 64 * 1024;

/**
 * Makes the Database class of one entrypoint. `getAddon(nativeBinding)` returns the addon
 * (lib/index.js: the running platform's, found by lib/native-binding.js, or the one the
 * option names); an entrypoint bound statically to one platform package
 * (lib/platform/*.js) passes `allowNativeBinding = false`, and then the `nativeBinding`
 * option is refused. Every entrypoint's prototype has the same methods (below).
 */
function createDatabase(getAddon, allowNativeBinding) {
  function Database(filenameGiven, options) {
    if (new.target == null) {
      return new Database(filenameGiven, options);
    }
    openDatabase.call(this, getAddon, allowNativeBinding, filenameGiven, options);
  }
  const { constructor, ...methods } = Object.getOwnPropertyDescriptors(DatabaseMethods.prototype);
  Object.defineProperties(Database.prototype, methods);
  const addonFor = (options) => {
    const nativeBinding = options && options.nativeBinding;
    if (nativeBinding != null && !allowNativeBinding) {
      throw new TypeError('The "nativeBinding" option is only supported by the default cipherlite entrypoint');
    }
    return getAddon(nativeBinding);
  };
  /** Database.encrypt(path, key, { cipherLayout, progress, nativeBinding }). */
  Database.encrypt = function encrypt(file, key, options) {
    keys.encrypt(addonFor(options), file, key, options);
  };
  /** Database.decrypt(path, key, destination, { progress, nativeBinding }). */
  Database.decrypt = function decrypt(file, key, destination, options) {
    keys.decrypt(addonFor(options), file, key, destination, options);
  };
  return Database;
}

/** The constructor's body (`this` is the new Database). */
function openDatabase(getAddon, allowNativeBinding, filenameGiven, options) {
  let buffer;
  let fd;
  if (Buffer.isBuffer(filenameGiven)) {
    buffer = filenameGiven;
    filenameGiven = ':memory:';
  } else if (typeof filenameGiven === 'number') {
    // better-sqlite3 13.2: open from a file descriptor (and the journal's, `journalFd`).
    if (!Number.isInteger(filenameGiven) || filenameGiven < 0 || filenameGiven > 0x7fffffff) {
      throw new TypeError('Expected the file descriptor to be a non-negative 32-bit integer');
    }
    fd = filenameGiven;
    filenameGiven = `fd:${fd}`;
  }
  if (filenameGiven == null) filenameGiven = '';
  if (options == null) options = {};

  if (typeof filenameGiven !== 'string') throw new TypeError('Expected first argument to be a string');
  if (typeof options !== 'object') throw new TypeError('Expected second argument to be an options object');
  if ('readOnly' in options) throw new TypeError('Misspelled option "readOnly" should be "readonly"');
  if ('memory' in options)
    throw new TypeError('Option "memory" was removed in v7.0.0 (use ":memory:" filename instead)');

  const filename = filenameGiven.trim();
  const anonymous = filename === '' || filename === ':memory:';
  const readonly = util.getBooleanOption(options, 'readonly');
  const fileMustExist = util.getBooleanOption(options, 'fileMustExist');
  const timeout = 'timeout' in options ? options.timeout : 5000;
  const verbose = 'verbose' in options ? options.verbose : null;
  const nativeBinding = 'nativeBinding' in options ? options.nativeBinding : null;
  const key = 'key' in options ? options.key : undefined;
  const cipherLayout = 'cipherLayout' in options ? options.cipherLayout : undefined;
  const cipher = 'cipher' in options ? options.cipher : undefined;
  const algorithm = 'algorithm' in options ? options.algorithm : undefined;
  const tcost = 'tcost' in options ? options.tcost : undefined;
  const mcost = 'mcost' in options ? options.mcost : undefined;
  const pcost = 'pcost' in options ? options.pcost : undefined;
  const passphrase = 'passphrase' in options ? options.passphrase : undefined;
  const kdfIterations = 'kdfIterations' in options ? options.kdfIterations : undefined;
  const pageSize = util.getPageSizeOption(options);
  const journalFd = 'journalFd' in options ? options.journalFd : undefined;
  const acceptPlaintextJournalChecksums = util.getBooleanOption(options, 'acceptPlaintextJournalChecksums');

  if (readonly && anonymous && !buffer) throw new TypeError('In-memory/temporary databases cannot be readonly');
  if (!Number.isInteger(timeout) || timeout < 0)
    throw new TypeError('Expected the "timeout" option to be a positive integer');
  if (timeout > 0x7fffffff) throw new RangeError('Option "timeout" cannot be greater than 2147483647');
  if (verbose != null && typeof verbose !== 'function')
    throw new TypeError('Expected the "verbose" option to be a function');
  if (fd !== undefined && journalFd === undefined)
    throw new TypeError('The "journalFd" option is required when opening a database from a file descriptor');
  if (fd === undefined && journalFd !== undefined)
    throw new TypeError('The "journalFd" option can only be used when opening a database from a file descriptor');
  if (journalFd !== undefined && !(Number.isInteger(journalFd) && journalFd >= 0 && journalFd <= 0x7fffffff)) {
    throw new TypeError('Expected the "journalFd" option to be a non-negative 32-bit integer');
  }
  if (!allowNativeBinding && 'nativeBinding' in options) {
    throw new TypeError('The "nativeBinding" option is only supported by the default cipherlite entrypoint');
  }
  if (nativeBinding != null && typeof nativeBinding !== 'string' && typeof nativeBinding !== 'object') {
    throw new TypeError('Expected the "nativeBinding" option to be a string or addon object');
  }

  // Encryption options (cipherlite's own), before anything is opened or created.
  checkEncryptionOptions(
    {
      key,
      passphrase,
      kdfIterations,
      pageSize,
      cipherLayout,
      cipher,
      algorithm,
      tcost,
      mcost,
      pcost,
      acceptPlaintextJournalChecksums,
    },
    { inMemory: Boolean(anonymous || buffer), fromDescriptor: fd !== undefined },
  );

  const addon = getAddon(nativeBinding);
  useLayout(addon.layout);

  if (fd === undefined && !anonymous && !filename.startsWith('file:') && !fs.existsSync(path.dirname(filename))) {
    throw new TypeError('Cannot open database because the directory does not exist');
  }

  const scratch = new ArrayBuffer(SCRATCH_BYTES);
  // A string passphrase crosses as UTF-8 bytes in a buffer of our own, wiped right after.
  const passphraseBytes = typeof passphrase === 'string' ? Buffer.from(passphrase, 'utf8') : passphrase;
  let native;
  try {
    native = new addon.Database(
      {
        filename,
        readonly,
        fileMustExist,
        timeout,
        cipherLayout,
        cipher,
        algorithm,
        tcost,
        mcost,
        pcost,
        databaseFd: fd,
        journalFd,
        pageSize,
        kdfIterations,
        acceptPlaintextJournalChecksums,
      },
      SqliteError,
      scratch,
      buffer || null,
      key === undefined ? null : key,
      passphraseBytes === undefined ? null : passphraseBytes,
    );
  } finally {
    if (typeof passphrase === 'string') passphraseBytes.fill(0);
  }
  if (verbose != null) native.setVerbose(verbose);
  const nativeId = native.id;
  const reader = new BatchReader(native, scratch);
  reader.fast = addon.fast;
  native[kReader] = reader;
  native[util.kAddon] = addon;

  native[kFacts] = Object.freeze({
    name: filenameGiven,
    readonly,
    memory: anonymous || buffer !== undefined,
    id: nativeId,
  });
  Object.defineProperty(this, kNative, { value: native });
  Object.defineProperties(this, DATABASE_GETTERS);
}

/** The native database behind a Database (a getter's receiver). */
function nativeOf(db) {
  const native = db == null ? undefined : db[kNative];
  if (native === undefined) throw new TypeError('Illegal invocation');
  return native;
}

// Every Database gets the same getter functions (as better-sqlite3's, which are shared
// too): own properties with per-instance closures would give every instance a map of its
// own, and each `this[kNative]` in the methods below would become a megamorphic look-up
// once a program has a few databases.
const DATABASE_GETTERS = {
  name: {
    get: function name() {
      return nativeOf(this)[kFacts].name;
    },
    enumerable: true,
  },
  open: {
    get: function open() {
      return nativeOf(this).open;
    },
    enumerable: true,
  },
  inTransaction: {
    get: function inTransaction() {
      const native = nativeOf(this);
      return native[util.kAddon].fast.inTransaction(native[kFacts].id);
    },
    enumerable: true,
  },
  readonly: {
    get: function readonly() {
      return nativeOf(this)[kFacts].readonly;
    },
    enumerable: true,
  },
  memory: {
    get: function memory() {
      return nativeOf(this)[kFacts].memory;
    },
    enumerable: true,
  },
};

// The methods of every entrypoint's Database, copied onto each one's prototype by
// createDatabase. `Database` names this template here, so the assignments read as usual.
function DatabaseMethods() {}
const Database = DatabaseMethods;

Database.prototype.prepare = function prepare(source) {
  return prepareStatement(this, source, false);
};

Database.prototype.exec = function exec(source) {
  if (typeof source !== 'string') throw new TypeError('Expected first argument to be a string');
  if (this[kNative].exec(source) === null) throw util.stopped();
  return this;
};

Database.prototype.close = function close() {
  this[kNative].close();
  return this;
};

Database.prototype.defaultSafeIntegers = function defaultSafeIntegers(...args) {
  this[kNative].defaultSafeIntegers(booleanArgument(args));
  return this;
};

Database.prototype.unsafeMode = function unsafeMode(...args) {
  this[kNative].unsafeMode(booleanArgument(args));
  return this;
};

Database.prototype.loadExtension = function loadExtension(...args) {
  const [file, entryPoint] = args;
  if (typeof file !== 'string') throw new TypeError('Expected first argument to be a string');
  if (args.length > 1 && typeof entryPoint !== 'string') throw new TypeError('Expected second argument to be a string');
  this[kNative].loadExtension(file, args.length > 1 ? entryPoint : null);
  return this;
};

Database.prototype.transaction = require('./methods/transaction');
Database.prototype.backup = require('./methods/backup');
Database.prototype.serialize = require('./methods/serialize');
Database.prototype.pragma = require('./methods/pragma');
Database.prototype.explain = require('./methods/explain');
Database.prototype.function = require('./methods/function');
Database.prototype.aggregate = require('./methods/aggregate');
Database.prototype.table = require('./methods/table');
Database.prototype[util.inspect] = require('./methods/inspect');

const keys = require('./methods/key-lifecycle');
Database.prototype.rekey = keys.rekey;
Database.prototype.verify = keys.verify;

/** No argument means true; otherwise it must be a boolean. */
function booleanArgument(args) {
  if (args.length === 0) return true;
  if (typeof args[0] !== 'boolean') throw new TypeError('Expected first argument to be a boolean');
  return args[0];
}

module.exports = createDatabase;
