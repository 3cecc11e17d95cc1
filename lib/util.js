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

// What a query throws when its thread is being terminated (worker.terminate(), or the
// worker exiting) while it runs user code: the addon cannot throw any more and returns
// `null`, which no entry point returns otherwise. V8 is unwinding at that point; this
// makes sure nothing after the query runs even before it gets there.
const ErrorCtor = Error;
exports.stopped = () => new ErrorCtor('cipherlite: the query was stopped because its thread is terminating');
