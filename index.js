'use strict';
// cipherlite: an encrypted SQLite for Node.js, a drop-in replacement for better-sqlite3.
module.exports = require('./lib');
