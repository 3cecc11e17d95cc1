'use strict';
// `require('cipherlite/evolu')`: Evolu's relay Storage and SqliteDriver over cipherlite
// (lib/evolu.js). A file at the package root, like relay.js, so that deep requires work
// as they do without an "exports" map.
module.exports = require('./lib/evolu');
