'use strict';
const { kNative, kReader } = require('./util');
const { createStatement } = require('./statement');

/** Prepares `source` on `db` and wraps it as a Statement. `pragma` statements are always
 * readers, are not cached by SQLite (not persistent) and are refused while iterating. */
function prepareStatement(db, source, pragma) {
  if (typeof source !== 'string') throw new TypeError('Expected first argument to be a string');
  const dbNative = db[kNative];
  const native = dbNative.prepare(source, pragma);
  const reader = dbNative[kReader];
  return createStatement(db, native, reader, reader.fast, source);
}

module.exports = { prepareStatement };
