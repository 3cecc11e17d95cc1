'use strict';
// The tests' seeded random source (the same numbers on every run, in the parent and in
// child processes), with the shuffle and Evolu's level draw: the benchmark's
// (benchmark/lib/random.js), so that the project has one.

module.exports = require('../benchmark/lib/random');
