'use strict';
// Child process for 57's key-residue test: opens an encrypted database with the key given
// (hex) in the environment, works with it, and scans this thread's stack ([stack] in
// /proc/self/maps) for either half of the key (the first two AES-256 round keys are the key
// itself) twice: while the connection is open, after its last statement (what the page
// passes left: their own wipe must have removed it, the one at close has not run yet), and
// after close() and wiping the key's JS copy. Prints how many places held them each time.
const fs = require('node:fs');
const path = require('node:path');
const Database = require(path.join(__dirname, '..'));

const hex = process.env.CIPHERLITE_RESIDUE_KEY;
const file = process.env.CIPHERLITE_RESIDUE_FILE;
let key = Buffer.from(hex, 'hex');
// CIPHERLITE_RESIDUE_CIPHER: the page format ('sqlcipher' by default, or 'aegis').
const cipher = process.env.CIPHERLITE_RESIDUE_CIPHER || undefined;
const db = new Database(file, { key, cipher });
db.pragma('journal_mode = WAL');
db.exec('CREATE TABLE t(x); INSERT INTO t VALUES (1), (2), (3)');
// A commit of many pages: they go through the cipher together (four at a time).
db.exec(
  'WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 12) INSERT INTO t SELECT randomblob(3000) FROM s',
);
db.exec(`ATTACH '${file}-attached' AS a; CREATE TABLE a.u(y); INSERT INTO a.u VALUES (1); DETACH a`);
db.prepare('SELECT count(*) FROM t').pluck().get();
const needle = Buffer.from(hex, 'hex');
const hitsOpen = stackHits().hits;
db.close();
key.fill(0);
key = null; // eslint-disable-line no-useless-assignment -- drops the last reference before the scan
const { hits, scanned } = stackHits();
process.stdout.write(`${JSON.stringify({ hits, hitsOpen, scanned })}\n`);

/** Places on this thread's stack that hold either half of the key, and the bytes scanned. */
function stackHits() {
  const maps = fs.readFileSync('/proc/self/maps', 'utf8').split('\n');
  const stack = maps.find((l) => l.endsWith('[stack]'));
  const [start, end] = stack
    .split(' ')[0]
    .split('-')
    .map((x) => parseInt(x, 16));
  const fd = fs.openSync('/proc/self/mem', 'r');
  const buf = Buffer.alloc(end - start);
  fs.readSync(fd, buf, 0, buf.length, start);
  fs.closeSync(fd);
  // Both halves: AES-256's first round key is key bytes 0..16, its second bytes 16..32.
  let found = 0;
  for (const half of [needle.subarray(0, 16), needle.subarray(16, 32)]) {
    for (let at = buf.indexOf(half); at !== -1; at = buf.indexOf(half, at + 1)) found++;
  }
  return { hits: found, scanned: buf.length };
}
