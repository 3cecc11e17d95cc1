'use strict';
const { getBooleanOption } = require('../util');
const { prepareStatement } = require('../prepare');

/** db.pragma(source, { simple }): runs `PRAGMA <source>`; `simple` returns the first
 * column of the first row. */
module.exports = function pragma(source, options) {
  if (options == null) options = {};
  if (typeof source !== 'string') throw new TypeError('Expected first argument to be a string');
  if (typeof options !== 'object') throw new TypeError('Expected second argument to be an options object');
  const simple = getBooleanOption(options, 'simple');
  const stmt = prepareStatement(this, `PRAGMA ${source}`, true);
  return simple ? stmt.pluck().get() : stmt.all();
};
