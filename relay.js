'use strict';
// `require('cipherlite/relay')`: the Evolu relay's storage (lib/relay.js). A file at the
// package root rather than an "exports" map, so that deep requires keep working as they
// do with better-sqlite3 (which has no "exports").
module.exports = require('./lib/relay');
