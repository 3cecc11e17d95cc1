'use strict';
const { types } = require('util');

/** TypedArray.prototype.byteLength's own getter (a subclass can't change what it reports). */
const typedArrayByteLength = Function.prototype.call.bind(
  Object.getOwnPropertyDescriptor(Object.getPrototypeOf(Uint8Array.prototype), 'byteLength').get,
);
exports.typedArrayByteLength = typedArrayByteLength;

/**
 * True for a real Uint8Array (or Buffer) of `length` bytes: not an object that merely has
 * its prototype, nor a Proxy of one, whatever its `length` property says. Keys are checked
 * with this everywhere; the native side checks again.
 */
/** Reads the "pageSize" option (SQLCipher's cipher_page_size): undefined when absent. */
exports.getPageSizeOption = (options) => {
  const pageSize = 'pageSize' in options ? options.pageSize : undefined;
  if (
    pageSize !== undefined &&
    !(Number.isInteger(pageSize) && pageSize >= 1024 && pageSize <= 65536 && (pageSize & (pageSize - 1)) === 0)
  ) {
    throw new TypeError(
      'Expected the "pageSize" option to be a power of two from 1024 to 65536 (512-byte pages leave 432 usable bytes after the 80 reserved ones; SQLite needs 480)',
    );
  }
  return pageSize;
};

exports.isKeyBytes = (value, length) => types.isUint8Array(value) && typedArrayByteLength(value) === length;

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
