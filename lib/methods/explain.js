'use strict';
// db.explain(source, ...params) (better-sqlite3 13): the rows of `EXPLAIN <source>` — the
// bytecode program (addr, opcode, p1…p5, comment), or the query plan (id, parent,
// notused, detail) when `source` starts with `QUERY PLAN`. Nothing is executed, so
// parameters may stay unbound; values given after `source` (cipherlite's addition) are
// bound with the usual rules, for plans that depend on them.
const { kState } = require('../util');
const { prepareStatement } = require('../prepare');

module.exports = function explain(source, ...params) {
  if (typeof source !== 'string') throw new TypeError('Expected first argument to be a string');
  const stmt = prepareStatement(this, `EXPLAIN ${source}`, false);
  if (params.length === 0) stmt[kState].native.bindNone();
  return stmt.all(...params);
};
