'use strict';
// The module under test. By default the package itself; set CIPHERLITE_TEST_AGAINST to a
// module path (e.g. better-sqlite3) to run the same tests against it and show that they
// describe better-sqlite3's real behaviour.
const target = process.env.CIPHERLITE_TEST_AGAINST;
const Database = target ? require(target) : require('..');
module.exports = { Database, isCipherlite: !target };
