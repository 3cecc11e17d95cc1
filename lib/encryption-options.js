'use strict';
// The constructor's encryption options (cipherlite's own, beside better-sqlite3's): each is
// checked before anything is opened or created, with a TypeError that names it. The key is
// never echoed in a message.

const { types } = require('util');
const util = require('./util');

// SQLite3 Multiple Ciphers' AEGIS algorithms (its `PRAGMA algorithm` values; docs/aegis-format.md §1).
const AEGIS_ALGORITHMS = ['aegis-128l', 'aegis-128x2', 'aegis-128x4', 'aegis-256', 'aegis-256x2', 'aegis-256x4'];
const ALGORITHM_LIST = AEGIS_ALGORITHMS.map((a) => `"${a}"`)
  .join(', ')
  .replace(/, ([^,]*)$/, ' or $1');
// Argon2id's costs for an AEGIS passphrase: SQLite3MC's `PRAGMA tcost`, `mcost` (KiB) and
// `pcost`, within its bounds (1 to 2^31-1) and Argon2's (at most 2^24-1 lanes, at least 8
// KiB of memory per lane). docs/aegis-format.md §4.
const ARGON2_COSTS = ['tcost', 'mcost', 'pcost'];
const COST_MAX = 0x7fffffff;
const PCOST_MAX = 0xffffff;

/** The length of a raw key for `cipher` and `algorithm`: 16 bytes for an AEGIS-128 algorithm, else 32. */
function keyLength(cipher, algorithm) {
  return cipher === 'aegis' && typeof algorithm === 'string' && algorithm.startsWith('aegis-128') ? 16 : 32;
}

/** "a 32-byte Buffer or Uint8Array", with the algorithm that takes 16-byte keys named. */
function keyBytesPhrase(cipher, algorithm) {
  const length = keyLength(cipher, algorithm);
  return length === 16
    ? `a 16-byte Buffer or Uint8Array (the AEGIS algorithm "${algorithm}" takes 128-bit keys)`
    : 'a 32-byte Buffer or Uint8Array';
}

/**
 * Throws a TypeError naming the option for an `algorithm` that is not one of SQLite3MC's
 * AEGIS algorithms, or given without `cipher: 'aegis'`. `of` names the call in the
 * message (e.g. ' of backup()').
 */
function checkAlgorithm(cipher, algorithm, of = '') {
  if (algorithm === undefined) return;
  if (!AEGIS_ALGORITHMS.includes(algorithm)) {
    throw new TypeError(`Expected the "algorithm" option${of} to be ${ALGORITHM_LIST}`);
  }
  if (cipher !== 'aegis') {
    throw new TypeError(`The "algorithm" option${of} requires the "cipher" option 'aegis'`);
  }
}

/**
 * Throws a TypeError naming the option for Argon2 costs (`tcost`, `mcost`, `pcost`) out of
 * bounds, or given without a passphrase and `cipher: 'aegis'`.
 */
function checkArgon2Costs(costs, { cipher, passphrase }) {
  for (const name of ARGON2_COSTS) {
    const value = costs[name];
    if (value === undefined) continue;
    const max = name === 'pcost' ? PCOST_MAX : COST_MAX;
    if (!Number.isInteger(value) || value < 1 || value > max) {
      throw new TypeError(`Expected the "${name}" option to be an integer from 1 to ${max}`);
    }
    if (passphrase === undefined) {
      throw new TypeError(`The "${name}" option requires the "passphrase" option (a raw key has no key derivation)`);
    }
    if (cipher !== 'aegis') {
      throw new TypeError(
        `The "${name}" option is an Argon2id cost of the "cipher" option 'aegis' (SQLCipher's key derivation takes "kdfIterations")`,
      );
    }
  }
  const mcost = costs.mcost ?? 19 * 1024;
  const pcost = costs.pcost ?? 1;
  if ((costs.mcost !== undefined || costs.pcost !== undefined) && mcost < 8 * pcost) {
    throw new TypeError(
      `Expected the "mcost" option to be at least 8 × "pcost" (${8 * pcost} KiB): Argon2 needs 8 KiB of memory per lane`,
    );
  }
}

/**
 * Throws a TypeError for encryption options that are malformed or don't go together.
 * `where.inMemory`: an in-memory, temporary or deserialized database; `where.fromDescriptor`:
 * `new Database(fd, { journalFd })`.
 */
function checkEncryptionOptions(
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
  { inMemory, fromDescriptor },
) {
  if (cipher !== undefined && cipher !== 'sqlcipher' && cipher !== 'aegis') {
    throw new TypeError('Expected the "cipher" option to be "sqlcipher" or "aegis"');
  }
  checkAlgorithm(cipher, algorithm);
  if (key !== undefined) {
    // A real Uint8Array (or Buffer): not an object that merely has its prototype, nor a
    // Proxy of one. The native side checks again and never reads an unusable key as none.
    if (!util.isKeyBytes(key, keyLength(cipher, algorithm))) {
      throw new TypeError(`Expected the "key" option to be ${keyBytesPhrase(cipher, algorithm)}`);
    }
    if (inMemory) {
      throw new TypeError(
        'The "key" option cannot be used with in-memory or temporary databases (they never reach the disk)',
      );
    }
    if (fromDescriptor) {
      // The keyed VFS finds a database's journal and WAL by path; one opened from
      // descriptors has none, so encryption there could not recover after a crash.
      throw new TypeError('The "key" option cannot be used when opening a database from a file descriptor');
    }
  }
  if (passphrase !== undefined) {
    if (key !== undefined) throw new TypeError('The "key" and "passphrase" options cannot be used together');
    const isBytes = types.isUint8Array(passphrase);
    if (
      !(typeof passphrase === 'string' || isBytes) ||
      (isBytes ? util.typedArrayByteLength(passphrase) : passphrase.length) === 0
    ) {
      throw new TypeError('Expected the "passphrase" option to be a non-empty string, Buffer or Uint8Array');
    }
    if (inMemory) {
      throw new TypeError(
        'The "passphrase" option cannot be used with in-memory or temporary databases (they never reach the disk)',
      );
    }
    if (fromDescriptor) {
      throw new TypeError('The "passphrase" option cannot be used when opening a database from a file descriptor');
    }
  }
  const encrypted = key !== undefined || passphrase !== undefined;
  if (kdfIterations !== undefined) {
    if (!Number.isInteger(kdfIterations) || kdfIterations < 1 || kdfIterations > 0x7fffffff) {
      throw new TypeError('Expected the "kdfIterations" option to be a positive 32-bit integer');
    }
    if (passphrase === undefined)
      throw new TypeError(
        'The "kdfIterations" option requires the "passphrase" option (a raw key has no key derivation)',
      );
  }
  if (pageSize !== undefined) {
    if (!encrypted)
      throw new TypeError(
        'The "pageSize" option requires the "key" or "passphrase" option (use PRAGMA page_size for a plain database)',
      );
  }
  if (cipherLayout !== undefined) {
    if (cipherLayout !== 'sqlite3mc' && cipherLayout !== 'sqlcipher') {
      throw new TypeError('Expected the "cipherLayout" option to be "sqlite3mc" or "sqlcipher"');
    }
    if (!encrypted) throw new TypeError('The "cipherLayout" option requires the "key" or "passphrase" option');
  }
  if (cipher !== undefined) {
    // docs/aegis-format.md: SQLite3 Multiple Ciphers' AEGIS scheme beside SQLCipher 4.
    if (!encrypted) throw new TypeError('The "cipher" option requires the "key" or "passphrase" option');
    if (cipher === 'aegis' && kdfIterations !== undefined) {
      throw new TypeError('The "kdfIterations" option is SQLCipher\'s: "aegis" derives keys with Argon2id');
    }
    if (cipher === 'aegis' && cipherLayout !== undefined) {
      throw new TypeError('The "cipherLayout" option is SQLCipher\'s: "aegis" has one page 1 layout');
    }
  }
  checkArgon2Costs({ tcost, mcost, pcost }, { cipher, passphrase });
  if (acceptPlaintextJournalChecksums && !encrypted) {
    throw new TypeError('The "acceptPlaintextJournalChecksums" option requires the "key" or "passphrase" option');
  }
}

module.exports = {
  checkEncryptionOptions,
  checkAlgorithm,
  checkArgon2Costs,
  keyLength,
  keyBytesPhrase,
  AEGIS_ALGORITHMS,
  ARGON2_COSTS,
};
