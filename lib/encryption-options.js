'use strict';
// The constructor's encryption options (cipherlite's own, beside better-sqlite3's): each is
// checked before anything is opened or created, with a TypeError that names it. The key is
// never echoed in a message.

const { types } = require('util');
const util = require('./util');

/**
 * Throws a TypeError for encryption options that are malformed or don't go together.
 * `where.inMemory`: an in-memory, temporary or deserialized database; `where.fromDescriptor`:
 * `new Database(fd, { journalFd })`.
 */
function checkEncryptionOptions(
  { key, passphrase, kdfIterations, pageSize, cipherLayout, cipher, acceptPlaintextJournalChecksums },
  { inMemory, fromDescriptor },
) {
  if (key !== undefined) {
    // A real Uint8Array (or Buffer): not an object that merely has its prototype, nor a
    // Proxy of one. The native side checks again and never reads an unusable key as none.
    if (!util.isKeyBytes(key, 32)) {
      throw new TypeError('Expected the "key" option to be a 32-byte Buffer or Uint8Array');
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
    // docs/aegis-format.md: SQLite3 Multiple Ciphers' AEGIS-256 scheme beside SQLCipher 4.
    if (cipher !== 'sqlcipher' && cipher !== 'aegis') {
      throw new TypeError('Expected the "cipher" option to be "sqlcipher" or "aegis"');
    }
    if (!encrypted) throw new TypeError('The "cipher" option requires the "key" or "passphrase" option');
    if (cipher === 'aegis' && kdfIterations !== undefined) {
      throw new TypeError('The "kdfIterations" option is SQLCipher\'s: "aegis" derives keys with Argon2id');
    }
    if (cipher === 'aegis' && cipherLayout !== undefined) {
      throw new TypeError('The "cipherLayout" option is SQLCipher\'s: "aegis" has one page 1 layout');
    }
  }
  if (acceptPlaintextJournalChecksums && !encrypted) {
    throw new TypeError('The "acceptPlaintextJournalChecksums" option requires the "key" or "passphrase" option');
  }
}

module.exports = { checkEncryptionOptions };
