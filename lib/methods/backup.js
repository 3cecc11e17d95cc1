'use strict';
// db.backup(filename, { attached, progress, key, cipher }): copies a database to a file in
// steps, one step per event-loop turn, so the application keeps running meanwhile.
//
// The copy's key: without a "key" option, the source's (an encrypted database's backup
// is encrypted with the same key; a plaintext one's is plaintext, as in better-sqlite3);
// `key: <32 bytes>` encrypts it with that key; `key: null` makes a plaintext copy, only
// when asked for explicitly. Anything else is a TypeError: a typo never yields plaintext.
// The copy's page format (docs/aegis-format.md): the source's, or with a key of its own
// the one `cipher` names ('sqlcipher' or 'aegis', with its `algorithm`: 'aegis-256' by
// default); a plaintext source's copy under a key is SQLCipher 4 unless `cipher` says 'aegis'.

const fs = require('fs');
const path = require('path');
const { kNative } = require('../util');
const { checkKey } = require('./key-lifecycle');
const { checkAlgorithm } = require('../encryption-options');

/** A format's name in messages and comparisons: 'sqlcipher', 'aegis', 'aegis (aegis-128l)'. */
const formatName = (cipher, algorithm) =>
  cipher === 'aegis' && algorithm != null && algorithm !== 'aegis-256' ? `aegis (${algorithm})` : cipher;

const DEFAULT_PAGES_PER_STEP = 100;
const MAX_PAGES_PER_STEP = 0x7fffffff;

const exists = (file) =>
  fs.promises.access(file).then(
    () => true,
    () => false,
  );

module.exports = async function backup(filename, options) {
  if (options == null) options = {};
  if (typeof filename !== 'string') throw new TypeError('Expected first argument to be a string');
  if (typeof options !== 'object') throw new TypeError('Expected second argument to be an options object');

  filename = filename.trim();
  const attached = 'attached' in options ? options.attached : 'main';
  const progress = 'progress' in options ? options.progress : null;

  if (!filename) throw new TypeError('Backup filename cannot be an empty string');
  if (filename === ':memory:') throw new TypeError('Invalid backup filename ":memory:"');
  if (typeof attached !== 'string') throw new TypeError('Expected the "attached" option to be a string');
  if (!attached) throw new TypeError('The "attached" option cannot be an empty string');
  if (progress != null && typeof progress !== 'function')
    throw new TypeError('Expected the "progress" option to be a function');

  const cipher = 'cipher' in options ? options.cipher : undefined;
  if (cipher !== undefined && cipher !== 'sqlcipher' && cipher !== 'aegis') {
    throw new TypeError('Expected the "cipher" option of backup() to be "sqlcipher" or "aegis"');
  }
  const algorithm = 'algorithm' in options ? options.algorithm : undefined;
  checkAlgorithm(cipher, algorithm, ' of backup()');
  const native = this[kNative];
  const sourceCipher = native.open ? native.cipher : undefined;
  const sourceAlgorithm = native.open ? native.algorithm : undefined;

  // 0: the source's key; 1: plaintext; 2: this key.
  let keyMode = 0;
  let key = null;
  if ('key' in options) {
    key = options.key;
    if (key === null) {
      keyMode = 1;
    } else {
      // Its length is the copy's format's: the one named, else the source's.
      const [keyCipher, keyAlgorithm] = cipher !== undefined ? [cipher, algorithm] : [sourceCipher, sourceAlgorithm];
      checkKey(
        key,
        'the "key" option (or null for a plaintext copy)',
        keyCipher ?? undefined,
        keyAlgorithm ?? undefined,
      );
      keyMode = 2;
    }
  }

  if (cipher !== undefined && keyMode === 1) {
    throw new TypeError('The "cipher" option of backup() cannot be used with "key: null" (a plaintext copy)');
  }
  const format = cipher === undefined ? undefined : formatName(cipher, algorithm);
  // null for a plaintext source, undefined for a closed one (refused by the native side).
  const sourceFormat = sourceCipher == null ? sourceCipher : formatName(sourceCipher, sourceAlgorithm);
  if (keyMode === 0 && format !== undefined && sourceFormat !== undefined && format !== sourceFormat) {
    // The source's key is a raw key or a passphrase's derived key; neither opens a copy in
    // another format the way the source opens: the copy's key must be given.
    throw new TypeError(
      `The "cipher" option of backup() needs the "key" option to write a copy in another format than the database's (${sourceFormat ?? 'plaintext'})`,
    );
  }

  if (!(await exists(path.dirname(filename)))) {
    throw new TypeError('Cannot save backup because the directory does not exist');
  }
  if (keyMode === 2 && (!native.encrypted || (format !== undefined && format !== sourceFormat))) {
    // A plaintext source's pages have no room for IV and HMAC, nor one format's pages for
    // the other's reserve: they are rebuilt into an encrypted copy in one call
    // (crates/core/src/key_lifecycle/backup.rs), which never writes the plaintext to a
    // file. `progress` is called while the copy is made (the database is busy meanwhile),
    // first with every page remaining; what it returns is how many pages to copy before
    // the next call, and what it throws stops the copy.
    const report = progress
      ? (totalPages, remainingPages) => pagesPerStep(progress({ totalPages, remainingPages }))
      : null;
    const totalPages = native.backupEncrypted(attached, filename, key, cipher ?? null, algorithm ?? null, report);
    return { totalPages, remainingPages: 0 };
  }
  const isNewFile = !(await exists(filename));
  return stepBackup(native.backup(attached, filename, isNewFile, keyMode, key), progress);
};

/** The pages of the next step: what `progress` returned (`returned`), or `pages` when it
 * returned undefined. */
function pagesPerStep(returned, pages = DEFAULT_PAGES_PER_STEP) {
  if (returned === undefined) return pages;
  if (typeof returned !== 'number' || Number.isNaN(returned)) {
    throw new TypeError('Expected progress callback to return a number or undefined');
  }
  return Math.max(0, Math.min(MAX_PAGES_PER_STEP, Math.round(returned)));
}

/** Runs the backup: the first step copies nothing (it reports the size), then
 * DEFAULT_PAGES_PER_STEP pages per step unless `progress` returns another count. */
function stepBackup(native, progress) {
  let pages = 0;
  let firstStep = true;
  return new Promise((resolve, reject) => {
    const step = () => {
      try {
        const [totalPages, remainingPages] = native.transfer(pages);
        const report = { totalPages, remainingPages };
        if (!remainingPages) {
          native.close();
          resolve(report);
          return;
        }
        if (firstStep) {
          firstStep = false;
          pages = DEFAULT_PAGES_PER_STEP;
        }
        if (progress) pages = pagesPerStep(progress(report), pages);
        setImmediate(step);
      } catch (err) {
        native.close();
        reject(err);
      }
    };
    setImmediate(step);
  });
}
