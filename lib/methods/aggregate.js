'use strict';
const { getBooleanOption, kNative } = require('../util');
const { safeIntegersOption, MAX_ARGUMENTS } = require('./function');

function functionOption(options, key, required) {
  const value = key in options ? options[key] : null;
  if (typeof value === 'function') return value;
  if (value != null) throw new TypeError(`Expected the "${key}" option to be a function`);
  if (required) throw new TypeError(`Missing required option "${key}"`);
  return null;
}

function declaredLength(fn) {
  const { length } = fn;
  if (Number.isInteger(length) && length >= 0) return length;
  throw new TypeError('Expected function.length to be a positive integer');
}

/** db.aggregate(name, { start, step, inverse, result, ... }): a JS aggregate (and, with
 * `inverse`, window) function. */
module.exports = function defineAggregate(name, options) {
  if (typeof name !== 'string') throw new TypeError('Expected first argument to be a string');
  if (typeof options !== 'object' || options === null)
    throw new TypeError('Expected second argument to be an options object');
  if (!name) throw new TypeError('User-defined function name cannot be an empty string');

  const start = 'start' in options ? options.start : null;
  const step = functionOption(options, 'step', true);
  const inverse = functionOption(options, 'inverse', false);
  const result = functionOption(options, 'result', false);
  const safeIntegers = safeIntegersOption(options);
  const deterministic = getBooleanOption(options, 'deterministic');
  const directOnly = getBooleanOption(options, 'directOnly');
  const varargs = getBooleanOption(options, 'varargs');
  let argCount = -1;
  if (!varargs) {
    // The accumulator is the first parameter of step/inverse, not an SQL argument.
    argCount = Math.max(declaredLength(step), inverse ? declaredLength(inverse) : 0);
    if (argCount > 0) argCount -= 1;
    if (argCount > MAX_ARGUMENTS) throw new RangeError('User-defined functions cannot have more than 100 arguments');
  }
  this[kNative].aggregate(start, step, inverse, result, name, argCount, safeIntegers, deterministic, directOnly);
  return this;
};
