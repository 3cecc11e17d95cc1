'use strict';
// `cipherlite/win32-arm64`: cipherlite bound to the addon of cipherlite-win32-arm64 by a static
// require, with no platform detection in its module graph (for bundlers that must know
// every file; see docs/packaging.md). The `nativeBinding` option is refused here.
const { addonFromModule } = require('../addon');

module.exports = require('../database')(() => addonFromModule(require('cipherlite-win32-arm64'), __dirname), false);
module.exports.SqliteError = require('../sqlite-error');
