'use strict';
// The key lifecycle (crates/core/src/key_lifecycle via crates/node/src/key_lifecycle.rs): db.rekey(), db.verify(),
// Database.encrypt(), Database.decrypt(). Keys are checked here and never appear in a
// message.

const { kNative, isKeyBytes, getPageSizeOption } = require('../util');
const SqliteError = require('../sqlite-error');
const { checkAlgorithm, keyLength, keyBytesPhrase } = require('../encryption-options');

/** Throws unless `key` is a real Uint8Array of the length the format's keys have (32
 * bytes; 16 for an AEGIS-128 algorithm). `what` names it in the message. */
function checkKey(key, what, cipher, algorithm) {
  if (!isKeyBytes(key, keyLength(cipher, algorithm))) {
    throw new TypeError(`Expected ${what} to be ${keyBytesPhrase(cipher, algorithm)}`);
  }
}

function checkOptions(options, position) {
  if (options == null) return {};
  if (typeof options !== 'object') throw new TypeError(`Expected ${position} argument to be an options object`);
  return options;
}

function layoutOption(options) {
  const layout = 'cipherLayout' in options ? options.cipherLayout : undefined;
  if (layout !== undefined && layout !== 'sqlite3mc' && layout !== 'sqlcipher') {
    throw new TypeError('Expected the "cipherLayout" option to be "sqlite3mc" or "sqlcipher"');
  }
  return layout === undefined ? null : layout;
}

/** The `cipher` option: 'sqlcipher' or 'aegis' (null: the default, or the file's own). */
function cipherOption(options) {
  const cipher = 'cipher' in options ? options.cipher : undefined;
  if (cipher !== undefined && cipher !== 'sqlcipher' && cipher !== 'aegis') {
    throw new TypeError('Expected the "cipher" option to be "sqlcipher" or "aegis"');
  }
  if (cipher === 'aegis' && options.cipherLayout !== undefined) {
    throw new TypeError('The "cipherLayout" option cannot be used with the "cipher" option \'aegis\'');
  }
  return cipher === undefined ? null : cipher;
}

/** The `algorithm` option: an AEGIS algorithm, with `cipher: 'aegis'` only (null: the default). */
function algorithmOption(options, cipher) {
  const algorithm = 'algorithm' in options ? options.algorithm : undefined;
  checkAlgorithm(cipher ?? undefined, algorithm);
  return algorithm === undefined ? null : algorithm;
}

function progressOption(options) {
  const progress = 'progress' in options ? options.progress : undefined;
  if (progress != null && typeof progress !== 'function') {
    throw new TypeError('Expected the "progress" option to be a function');
  }
  return progress == null ? undefined : progress;
}

function checkPath(path, what) {
  if (typeof path !== 'string') throw new TypeError(`Expected ${what} to be a string`);
  if (!path.trim() || path.trim() === ':memory:') throw new TypeError(`Expected ${what} to name a database file`);
}

/**
 * db.rekey(newKey, { cipher, algorithm, cipherLayout, progress }): the file is encrypted
 * with `newKey` afterwards (a new copy renamed over it: a crash leaves it under exactly one
 * of the two keys), in the page format `cipher` ('sqlcipher' or 'aegis', with its
 * `algorithm`; the current one by default), and this Database keeps working on it
 * (statements, functions and settings carry over). Refused while a transaction is open or
 * another connection has the file open.
 */
function rekey(newKey, options) {
  options = checkOptions(options, 'second');
  const native = this[kNative];
  const cipher = cipherOption(options);
  const algorithm = algorithmOption(options, cipher);
  // The key's length is the target format's: the one named, else the current one.
  const target = cipher === null && native.open ? [native.cipher, native.algorithm] : [cipher, algorithm];
  checkKey(newKey, 'the new key', target[0] ?? undefined, target[1] ?? undefined);
  const layout = layoutOption(options);
  const progress = progressOption(options);
  native.rekey(newKey, layout, cipher, algorithm, progress);
  return this;
}

/**
 * db.verify(): authenticates every page of the file and every committed WAL frame with
 * the key, runs integrity_check and digests the content.
 * @returns {{ pages: number, walFrames: number, encrypted: boolean, ok: boolean,
 *   firstBadPage: number | null, integrity: string, contentDigest: string | null }}
 */
function verify() {
  const r = this[kNative].verify();
  return {
    pages: r.pages,
    walFrames: r.walFrames,
    encrypted: r.encrypted,
    ok: r.ok,
    firstBadPage: r.firstBadPage == null ? null : r.firstBadPage,
    integrity: r.integrity,
    contentDigest: r.contentDigest == null ? null : r.contentDigest,
  };
}

/** Database.encrypt(path, key, { cipher, algorithm, cipherLayout, pageSize, progress }): a
 * plaintext database file becomes encrypted in place (copy, sync, rename over, sync the
 * directory), in the page format `cipher` ('sqlcipher' by default, or 'aegis' with its
 * `algorithm`), in pages of `pageSize` bytes (SQLCipher's cipher_page_size; 4096 by default). */
function encrypt(addon, path, key, options) {
  checkPath(path, 'the database path');
  options = checkOptions(options, 'third');
  const cipher = cipherOption(options);
  const algorithm = algorithmOption(options, cipher);
  checkKey(key, 'the key', cipher ?? undefined, algorithm ?? undefined);
  const layout = layoutOption(options);
  const pageSize = getPageSizeOption(options);
  const progress = progressOption(options);
  addon.encryptDatabase(path.trim(), key, layout, cipher, algorithm, pageSize ?? null, progress, SqliteError);
}

/** Database.decrypt(path, key, destination, { cipher, algorithm, pageSize, progress }):
 * writes a plaintext copy of an encrypted database (in the page format `cipher`,
 * 'sqlcipher' by default, of `pageSize`-byte pages, 4096 by default, as when opening it)
 * to `destination`, which must not exist. */
function decrypt(addon, path, key, destination, options) {
  checkPath(path, 'the database path');
  options = checkOptions(options, 'fourth');
  const cipher = cipherOption(options);
  const algorithm = algorithmOption(options, cipher);
  checkKey(key, 'the key', cipher ?? undefined, algorithm ?? undefined);
  checkPath(destination, 'the destination');
  const pageSize = getPageSizeOption(options);
  const progress = progressOption(options);
  addon.decryptDatabase(
    path.trim(),
    key,
    destination.trim(),
    cipher,
    algorithm,
    pageSize ?? null,
    progress,
    SqliteError,
  );
}

module.exports = { rekey, verify, encrypt, decrypt, checkKey };
