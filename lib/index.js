'use strict';
module.exports = require('./database');
module.exports.SqliteError = require('./sqlite-error');
