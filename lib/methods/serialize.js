'use strict';
const { kNative } = require('../util');

/** db.serialize({ attached }): the database's bytes as a Buffer (`new Database(buf)`
 * reopens them). */
module.exports = function serialize(options) {
  if (options == null) options = {};
  if (typeof options !== 'object') throw new TypeError('Expected first argument to be an options object');
  const attached = 'attached' in options ? options.attached : 'main';
  if (typeof attached !== 'string') throw new TypeError('Expected the "attached" option to be a string');
  if (!attached) throw new TypeError('The "attached" option cannot be an empty string');
  return this[kNative].serialize(attached);
};
