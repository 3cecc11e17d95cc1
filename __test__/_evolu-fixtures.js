'use strict';
// The Evolu fixtures (docs/evolu-storage.md §1.1's table and §8's vectors) from
// testdata/evolu/, where the Rust tests read them too (crates/storage/src/test_vectors.rs).
const fs = require('node:fs');
const path = require('node:path');

const DIR = path.join(__dirname, '..', 'testdata', 'evolu');
const read = (name) => fs.readFileSync(path.join(DIR, name), 'utf8');

/** `name → [values]` of vectors.txt (`name value…` lines, `#` comments). */
const VECTORS = new Map(
  read('vectors.txt')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => {
      const [name, ...values] = line.trim().split(/\s+/);
      return [name, values];
    }),
);

/** The values of `name`; a missing name is a bug in the test. */
function values(name) {
  const v = VECTORS.get(name);
  if (v === undefined) throw new Error(`testdata/evolu/vectors.txt has no ${name}`);
  return v;
}
const value = (name) => {
  const v = values(name);
  if (v.length !== 1) throw new Error(`testdata/evolu/vectors.txt: ${name} has ${v.length} values`);
  return v[0];
};

/** §1.1's DDL, as Evolu runs it. */
const SCHEMA = read('schema.sql');
/** V1's rows in §8's dump format (`t,l,h1,h2,c` lines). */
const V1_DUMP = read('v1-dump.txt');
const V1_OWNER = Buffer.from(value('v1.owner'), 'hex');
/** The node id of V1's timestamps, in hex. */
const V1_NODE = value('v1.node');
const V1_LEVELS = values('v1.levels').map(Number);
const V1_DIGEST = value('v1.digest');
/** V1's rows as `[t (hex), l, h1, h2, c]`. */
const V1_ROWS = V1_DUMP.trimEnd()
  .split('\n')
  .map((line) => {
    const [t, ...numbers] = line.split(',');
    return [t, ...numbers.map(Number)];
  });

module.exports = { SCHEMA, V1_DUMP, V1_OWNER, V1_NODE, V1_LEVELS, V1_DIGEST, V1_ROWS, values, value };
