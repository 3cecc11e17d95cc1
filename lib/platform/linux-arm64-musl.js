'use strict';
// `cipherlite/linux-arm64-musl`: cipherlite bound to the addon of cipherlite-linux-arm64-musl by a static
// require, with no platform detection in its module graph (for bundlers that must know
// every file; see docs/packaging.md). The `nativeBinding` option is refused here.
const { addonFromModule } = require('../addon');

module.exports = require('../database')(
  () => addonFromModule(require('cipherlite-linux-arm64-musl'), __dirname),
  false,
);
module.exports.SqliteError = require('../sqlite-error');
