'use strict';

/** Reads a boolean option; absent means false, any non-boolean value is a TypeError. */
exports.getBooleanOption = (options, key) => {
  let value = false;
  if (key in options && typeof (value = options[key]) !== 'boolean') {
    throw new TypeError(`Expected the "${key}" option to be a boolean`);
  }
  return value;
};

// Where a Database / Statement keeps its native handle and state: symbols, so they stay
// out of the way of user code and of `util.inspect`.
// A Database has exactly one own symbol (as in better-sqlite3): kNative.
exports.kNative = Symbol();
exports.kState = Symbol();
exports.kReader = Symbol();
// On the native object: the addon it came from (for static calls made on its behalf).
exports.kAddon = Symbol();
exports.inspect = Symbol.for('nodejs.util.inspect.custom');
