'use strict';
// The addon from what `require()` of a per-platform package returned. Unbundled, that is
// the addon itself. A bundler may instead have emitted the .node file and handed back its
// path, relative to the bundle (esbuild's `--loader:.node=file`): that file is loaded
// then, with the real `require` (webpack's replacement can't load it).
const path = require('path');

function addonFromModule(value, dir) {
  if (typeof value !== 'string') return value;
  // eslint-disable-next-line no-undef
  const requireFunc = typeof __non_webpack_require__ === 'function' ? __non_webpack_require__ : require;
  return requireFunc(path.resolve(dir, value));
}

module.exports = { addonFromModule };
