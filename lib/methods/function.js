'use strict';
const { getBooleanOption, kNative } = require('../util');

const MAX_ARGUMENTS = 100;

/** `safeIntegers` as the native side takes it: 0/1, or 2 for "the database default". */
function safeIntegersOption(options) {
  return 'safeIntegers' in options ? Number(getBooleanOption(options, 'safeIntegers')) : 2;
}

/** db.function(name, [options], fn): registers a JS scalar function. */
function defineFunction(name, options, fn) {
  if (options == null) options = {};
  if (typeof options === 'function') {
    fn = options;
    options = {};
  }
  if (typeof name !== 'string') throw new TypeError('Expected first argument to be a string');
  if (typeof fn !== 'function') throw new TypeError('Expected last argument to be a function');
  if (typeof options !== 'object') throw new TypeError('Expected second argument to be an options object');
  if (!name) throw new TypeError('User-defined function name cannot be an empty string');

  const safeIntegers = safeIntegersOption(options);
  const deterministic = getBooleanOption(options, 'deterministic');
  const directOnly = getBooleanOption(options, 'directOnly');
  const varargs = getBooleanOption(options, 'varargs');
  let argCount = -1;
  if (!varargs) {
    argCount = fn.length;
    if (!Number.isInteger(argCount) || argCount < 0)
      throw new TypeError('Expected function.length to be a positive integer');
    if (argCount > MAX_ARGUMENTS) throw new RangeError('User-defined functions cannot have more than 100 arguments');
  }
  this[kNative].function(fn, name, argCount, safeIntegers, deterministic, directOnly);
  return this;
}

module.exports = defineFunction;
module.exports.safeIntegersOption = safeIntegersOption;
module.exports.MAX_ARGUMENTS = MAX_ARGUMENTS;
