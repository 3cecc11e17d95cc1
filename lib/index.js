'use strict';
// The default entrypoint (`require('cipherlite')`): the addon of the running platform,
// found by lib/native-binding.js, or the one the `nativeBinding` option names. The
// per-platform entrypoints (`cipherlite/linux-x64`, ... in lib/platform/) skip the
// detection and load their package with a static require, for bundlers.
const path = require('path');
const createDatabase = require('./database');

let defaultAddon;

function getAddon(nativeBinding) {
  if (nativeBinding == null) {
    return defaultAddon || (defaultAddon = require('./native-binding').loadNativeBinding());
  }
  if (typeof nativeBinding === 'string') {
    // Bundlers (webpack) replace `require`; the real one loads .node files.
    // eslint-disable-next-line no-undef
    const requireFunc = typeof __non_webpack_require__ === 'function' ? __non_webpack_require__ : require;
    return requireFunc(path.resolve(nativeBinding).replace(/(\.node)?$/, '.node'));
  }
  return nativeBinding;
}

const Database = createDatabase(getAddon, true);

// Where the default addon lives (tests load a copy of it through `nativeBinding`).
Object.defineProperty(Database, '__nativePath', {
  get() {
    return require('./native-binding').nativeBindingPath();
  },
});

module.exports = Database;
module.exports.SqliteError = require('./sqlite-error');
